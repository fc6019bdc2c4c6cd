/* kern_x86_ew.c - the engine's element-wise steps vectorized for AVX-512
 * and for AVX2 (softmax and SwiGLU: llm_kernels.softmax and .swiglu),
 * each compiled for its instruction set with a target attribute like
 * kern_x86.c and only called where synor__llm_kernels found the CPU has
 * it. */
#if defined(__x86_64__)
#include <math.h>

#include "llm/kern_x86.h"
#include "llm/llm_internal.h"

/* e^x for 16 floats: x = n ln 2 + r (|r| <= ln 2 / 2, ln 2 in two parts),
 * e^r by Cephes' expf polynomial (within 1-2 ulp of expf), times 2^n by
 * vscalefps (which gives inf and 0 past the range). NaN stays NaN: vminps
 * and vmaxps return their second operand when one is NaN. */
T5 static inline __m512 a5_exp(__m512 x)
{
    x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
    x = _mm512_max_ps(_mm512_set1_ps(-150.0f), x);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

/* As synor__llm_softmax, 16 at a time: the sum in 16 lanes (a different
 * order of the same additions), each value divided by it. */
T5 void synor__llm_a5_softmax(float *x, int n)
{
    __m512 mx = _mm512_set1_ps(-INFINITY);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        mx = _mm512_max_ps(mx, _mm512_loadu_ps(x + i));
    __mmask16 tail = (__mmask16)((1u << (n - i)) - 1);
    mx = _mm512_mask_max_ps(mx, tail, mx, _mm512_maskz_loadu_ps(tail, x + i));
    __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
    for (i = 0; i + 16 <= n; i += 16) {
        __m512 e = a5_exp(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
        _mm512_storeu_ps(x + i, e);
        sum = _mm512_add_ps(sum, e);
    }
    if (i < n) {
        __m512 e = a5_exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + i), m));
        _mm512_mask_storeu_ps(x + i, tail, e);
        sum = _mm512_mask_add_ps(sum, tail, sum, e);
    }
    __m512 s = _mm512_set1_ps(_mm512_reduce_add_ps(sum));
    for (i = 0; i + 16 <= n; i += 16)
        _mm512_storeu_ps(x + i, _mm512_div_ps(_mm512_loadu_ps(x + i), s));
    if (i < n)
        _mm512_mask_storeu_ps(x + i, tail, _mm512_div_ps(_mm512_maskz_loadu_ps(tail, x + i), s));
}

T5 static inline __m512 a5_swiglu16(__m512 v, __m512 h3)
{
    __m512 e = a5_exp(_mm512_sub_ps(_mm512_setzero_ps(), v));
    return _mm512_mul_ps(_mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), h3);
}

T5 void synor__llm_a5_swiglu(float *h1, const float *h3, int n)
{
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(h1 + i, a5_swiglu16(_mm512_loadu_ps(h1 + i), _mm512_loadu_ps(h3 + i)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(
            h1 + i, m,
            a5_swiglu16(_mm512_maskz_loadu_ps(m, h1 + i), _mm512_maskz_loadu_ps(m, h3 + i)));
    }
}

/* ---------------------------------------------------------------- AVX2
 * The same in 8 lanes. AVX2 has no vscalefps: 2^n (n in [-150, 128]) is
 * applied as two powers of two built in the exponent bits, 2^(n >> 1) and
 * 2^(n - (n >> 1)), each a normal float, so the product still overflows
 * to inf and underflows gradually as expf does. */
T2 static inline __m256 a2_exp(__m256 x)
{
    x = _mm256_min_ps(_mm256_set1_ps(88.8f), x);
    x = _mm256_max_ps(_mm256_set1_ps(-150.0f), x);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1);
    __m256i n2 = _mm256_sub_epi32(ni, n1), bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* The lanes below `left` (1..7). */
T2 static inline __m256i a2_lanes(int left)
{
    static const int32_t m[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(const void *)(m + 8 - left));
}

T2 void synor__llm_a2_softmax(float *x, int n)
{
    __m256 mx = _mm256_set1_ps(-INFINITY);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        mx = _mm256_max_ps(mx, _mm256_loadu_ps(x + i));
    __m256i tail = a2_lanes(n - i > 0 ? n - i : 8);
    if (i < n)
        mx = _mm256_max_ps(mx, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY),
                                                _mm256_maskload_ps(x + i, tail),
                                                _mm256_castsi256_ps(tail)));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    __m256 m = _mm256_set1_ps(_mm_cvtss_f32(h)), sum = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 e = a2_exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(x + i, e);
        sum = _mm256_add_ps(sum, e);
    }
    if (i < n) {
        __m256 e = _mm256_and_ps(a2_exp(_mm256_sub_ps(_mm256_maskload_ps(x + i, tail), m)),
                                 _mm256_castsi256_ps(tail));
        _mm256_maskstore_ps(x + i, tail, e);
        sum = _mm256_add_ps(sum, e);
    }
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
    t = _mm_add_ps(t, _mm_movehl_ps(t, t));
    t = _mm_add_ss(t, _mm_movehdup_ps(t));
    __m256 s = _mm256_set1_ps(_mm_cvtss_f32(t));
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_div_ps(_mm256_loadu_ps(x + i), s));
    if (i < n)
        _mm256_maskstore_ps(x + i, tail, _mm256_div_ps(_mm256_maskload_ps(x + i, tail), s));
}

T2 static inline __m256 a2_swiglu8(__m256 v, __m256 h3)
{
    __m256 e = a2_exp(_mm256_sub_ps(_mm256_setzero_ps(), v));
    return _mm256_mul_ps(_mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), h3);
}

T2 void synor__llm_a2_swiglu(float *h1, const float *h3, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(h1 + i, a2_swiglu8(_mm256_loadu_ps(h1 + i), _mm256_loadu_ps(h3 + i)));
    if (i < n) {
        __m256i m = a2_lanes(n - i);
        _mm256_maskstore_ps(h1 + i, m,
                            a2_swiglu8(_mm256_maskload_ps(h1 + i, m), _mm256_maskload_ps(h3 + i, m)));
    }
}

T2 static inline __m256i a2_mix32(__m256i h)
{
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
    h = _mm256_mullo_epi32(h, _mm256_set1_epi32((int)LLM_MIX_M1));
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 15));
    h = _mm256_mullo_epi32(h, _mm256_set1_epi32((int)LLM_MIX_M2));
    return _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
}

/* llm_ln of 8 positive normal floats, operation for operation. */
T2 static inline __m256 a2_ln(__m256 y)
{
    __m256i b = _mm256_castps_si256(y);
    __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(b, 23), _mm256_set1_epi32(127));
    __m256 m = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi32(0x7fffff)),
                                                   _mm256_set1_epi32(0x3f800000)));
    __m256 big = _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356f), _CMP_GT_OQ);
    m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), big);
    e = _mm256_sub_epi32(e, _mm256_castps_si256(big)); /* big lanes are -1 */
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 z = _mm256_div_ps(_mm256_sub_ps(m, one), _mm256_add_ps(m, one));
    __m256 z2 = _mm256_mul_ps(z, z);
    __m256 p = _mm256_fmadd_ps(z2, _mm256_set1_ps(2.0f / 9.0f), _mm256_set1_ps(2.0f / 7.0f));
    p = _mm256_fmadd_ps(p, z2, _mm256_set1_ps(2.0f / 5.0f));
    p = _mm256_fmadd_ps(p, z2, _mm256_set1_ps(2.0f / 3.0f));
    __m256 r = _mm256_fmadd_ps(_mm256_mul_ps(z, z2), p, _mm256_add_ps(z, z));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(e), _mm256_set1_ps(0.693147181f), r);
}

/* The sampler's draw over a row, 8 tokens at a time: each lane keeps its
 * largest key and the first token with it; then the lanes' largest, the
 * lowest token on ties; the tail through llm_gumbel. */
T2 int32_t synor__llm_a2_gumbel_argmax(const float *l, int n, float inv_t, uint64_t x)
{
    __m256i lo = _mm256_set1_epi32((int)(uint32_t)x), hi = _mm256_set1_epi32((int)(x >> 32));
    __m256i t = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), eight = _mm256_set1_epi32(8);
    __m256 it = _mm256_set1_ps(inv_t), best = _mm256_set1_ps(-INFINITY);
    __m256i bi = _mm256_set1_epi32(INT32_MAX);
    int i = 0;
    for (; i + 8 <= n; i += 8, t = _mm256_add_epi32(t, eight)) {
        __m256i h = a2_mix32(_mm256_xor_si256(a2_mix32(_mm256_add_epi32(t, lo)), hi));
        h = _mm256_or_si256(_mm256_slli_epi32(_mm256_srli_epi32(h, 9), 1), _mm256_set1_epi32(1));
        __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(h), _mm256_set1_ps(0x1p-24f));
        __m256 neg = _mm256_set1_ps(-0.0f);
        __m256 g = _mm256_xor_ps(a2_ln(_mm256_xor_ps(a2_ln(u), neg)), neg);
        __m256 k = _mm256_fmadd_ps(_mm256_loadu_ps(l + i), it, g);
        __m256 gt = _mm256_cmp_ps(k, best, _CMP_GT_OQ);
        best = _mm256_blendv_ps(best, k, gt);
        bi = _mm256_blendv_epi8(bi, t, _mm256_castps_si256(gt));
    }
    float bk[8];
    int32_t bt[8];
    _mm256_storeu_ps(bk, best);
    _mm256_storeu_si256((__m256i *)(void *)bt, bi);
    float kb = -INFINITY;
    int32_t tb = 0;
    for (int j = 0; j < 8; j++)
        if (bk[j] > kb || (bk[j] == kb && bt[j] < tb)) {
            kb = bk[j];
            tb = bt[j];
        }
    for (; i < n; i++) {
        float k = fmaf(l[i], inv_t, llm_gumbel(x, i));
        if (k > kb) {
            kb = k;
            tb = i;
        }
    }
    return tb;
}
#else
typedef int synor__llm_kern_x86_ew_empty;
#endif
