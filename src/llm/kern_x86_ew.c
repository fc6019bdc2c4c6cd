/* kern_x86_ew.c - the engine's element-wise steps vectorized for AVX-512
 * (softmax and SwiGLU: llm_kernels.softmax and .swiglu), compiled for it
 * with a target attribute like kern_x86.c and only called where
 * synor__llm_kernels found the CPU has it. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>

#include "llm/llm_internal.h"

#define T5 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

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
#else
typedef int synor__llm_kern_x86_ew_empty;
#endif
