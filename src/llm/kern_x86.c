/* kern_x86.c - the engine's vectorized dot products for x86-64: AVX2 + FMA
 * + F16C, and AVX-512 (F, BW, VL, VNNI). Each function is compiled for
 * its instruction set with a target attribute and only called when
 * synor__llm_kernels found the CPU supports it, so the library itself is
 * built for the baseline x86-64.
 *
 * Integer dot products of signed int8 rows use the unsigned x signed
 * instructions (vpmaddubsw, vpdpbusd) on |w| and x * sign(w), which gives
 * w * x exactly for |w| <= 127 (quantized weights never hold -128). */
#if defined(__x86_64__)
#include <string.h>

#include "llm/kern_x86.h"
#include "llm/llm_internal.h"
#include "synor/model.h"

T2 static inline float scale_of(const uint8_t *b)
{
    uint16_t h;
    memcpy(&h, b, 2);
    return _cvtsh_ss(h);
}

/* ---------------------------------------------------------------- AVX2 */

T2 static float a2_dot_f32(const float *w, const float *x, int n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
    float s = x86_hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++)
        s += w[i] * x[i];
    return s;
}

T2 static float a2_dot_f16(const uint16_t *w, const float *x, int n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(w + i)));
        __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(w + i + 8)));
        a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + i + 8), a1);
    }
    float s = x86_hsum8(_mm256_add_ps(a0, a1));
    for (; i < n; i++)
        s += _cvtsh_ss(w[i]) * x[i];
    return s;
}

T2 static float a2_dot_bf16(const uint16_t *w, const float *x, int n)
{
    __m256 a0 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(w + i)));
        a0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v, 16)), _mm256_loadu_ps(x + i),
                             a0);
    }
    float s = x86_hsum8(a0);
    for (; i < n; i++)
        s += synor_bf16_to_f32(w[i]) * x[i];
    return s;
}

/* Sum of the 32 products w[j] * x[j], as 8 int32 lanes turned into floats. */
T2 static inline __m256 a2_mul_sum_i8(__m256i w, __m256i x)
{
    __m256i ax = _mm256_sign_epi8(w, w);
    __m256i sy = _mm256_sign_epi8(x, w);
    __m256i p16 = _mm256_maddubs_epi16(ax, sy);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

T2 static inline __m256i unpack_q4(const uint8_t *qs)
{
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)qs);
    __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
    return _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(8));
}

/* Q8_0 x Q8_0 activations, two blocks per iteration; one copy per
 * instruction set, MULSUM the 32-product sum of that set. One-row products
 * (decode steps, a speculative draft's steps) read the file's rows, which
 * follow each other in memory: with AHEAD, each pair of blocks asks for
 * the bytes AHEAD on (into L1), past the row's end into the next rows (the
 * hardware prefetcher restarts at each task's range; measured on
 * 110M-shaped Q8_0 decode steps, 2 KiB ahead 4-9% faster than none, 1 and
 * 4 KiB no better on the Zen 5 VM (AVX-512), 18-20% on the Zen 3 one
 * (AVX2; docs/BENCHMARKS.md). */
#define Q8_0_AHEAD 2048
#define DOT_Q8_0(NAME, TARGET, MULSUM, AHEAD)                                                      \
    TARGET static float NAME(const uint8_t *w, const int8_t *xq, const float *xd, int nb)          \
    {                                                                                              \
        __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;                                            \
        int b = 0;                                                                                 \
        for (; b + 2 <= nb; b += 2, w += 68) {                                                     \
            if (AHEAD) { /* the two lines holding the pair of blocks AHEAD bytes on */            \
                _mm_prefetch((const char *)w + (AHEAD), _MM_HINT_T0);                              \
                _mm_prefetch((const char *)w + (AHEAD) + 67, _MM_HINT_T0);                         \
            }                                                                                      \
            __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)(w + 2));               \
            __m256i w1 = _mm256_loadu_si256((const __m256i *)(const void *)(w + 36));              \
            __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(xq + b * 32));         \
            __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(xq + b * 32 + 32));    \
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(scale_of(w) * xd[b]), MULSUM(w0, x0), acc0);     \
            acc1 = _mm256_fmadd_ps(_mm256_set1_ps(scale_of(w + 34) * xd[b + 1]), MULSUM(w1, x1),   \
                                   acc1);                                                          \
        }                                                                                          \
        for (; b < nb; b++, w += 34) {                                                             \
            __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)(w + 2));               \
            __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(xq + b * 32));         \
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(scale_of(w) * xd[b]), MULSUM(w0, x0), acc0);     \
        }                                                                                          \
        return x86_hsum8(_mm256_add_ps(acc0, acc1));                                                 \
    }
DOT_Q8_0(a2_dot_q8_0, T2, a2_mul_sum_i8, Q8_0_AHEAD)

/* Q4_0: the stored nibbles (q + 8, unsigned) times x directly, and
 * 8 * sum(x) taken out per block (c8, computed once per activation row). */
T2 static inline __m256i nibbles(const uint8_t *qs)
{
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)qs);
    __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
    return _mm256_set_m128i(hi, lo);
}

T2 static float a2_dot_q4_0(const uint8_t *w, const int8_t *xq, const float *xd, const float *c8,
                            int nb)
{
    __m256 acc = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    float corr = 0;
    for (int b = 0; b < nb; b++, w += 18) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(xq + b * 32));
        __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(nibbles(w + 2), x), ones);
        float dw = scale_of(w);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dw * xd[b]), _mm256_cvtepi32_ps(p), acc);
        corr += dw * c8[b];
    }
    return x86_hsum8(acc) - corr;
}

/* Q8 groups: gs a multiple of 32 (llama2.c exports use 64). */
T2 static float a2_dot_q8g(const int8_t *wq, const float *ws, const int8_t *xq, const float *xd,
                           int n, int gs)
{
    if (gs % 32)
        return synor__llm_kernels_generic.dot_q8g(wq, ws, xq, xd, n, gs);
    __m256 acc = _mm256_setzero_ps();
    for (int g = 0; g < n / gs; g++) {
        __m256 sum = _mm256_setzero_ps();
        for (int j = g * gs; j < (g + 1) * gs; j += 32)
            sum = _mm256_add_ps(
                sum, a2_mul_sum_i8(_mm256_loadu_si256((const __m256i *)(const void *)(wq + j)),
                                   _mm256_loadu_si256((const __m256i *)(const void *)(xq + j))));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(ws[g] * xd[g]), sum, acc);
    }
    return x86_hsum8(acc);
}

/* As the portable kernel: block 32 vectorized (llama.cpp's rounding),
 * other blocks (runq.c's) by it. */
T2 static void a2_quantize_row(const float *x, int8_t *q, float *d, int n, int block)
{
    if (block != SYNOR_QK) {
        synor__llm_kernels_generic.quantize_row(x, q, d, n, block);
        return;
    }
    const __m256 signmask = _mm256_set1_ps(-0.0f);
    for (int b = 0; b < n / SYNOR_QK; b++) {
        const float *xb = x + b * SYNOR_QK;
        __m256 v[4];
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < 4; j++) {
            v[j] = _mm256_loadu_ps(xb + 8 * j);
            m = _mm256_max_ps(m, _mm256_andnot_ps(signmask, v[j]));
        }
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        float amax = _mm_cvtss_f32(h);
        __m256 id = _mm256_set1_ps(amax != 0 ? 127.0f / amax : 0.0f);
        __m256i i[4];
        for (int j = 0; j < 4; j++)
            i[j] = _mm256_cvtps_epi32(_mm256_round_ps(
                _mm256_mul_ps(v[j], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        /* pack 32 int32 to 32 int8, then undo the lane interleave of the
         * packs */
        __m256i p16a = _mm256_packs_epi32(i[0], i[1]), p16b = _mm256_packs_epi32(i[2], i[3]);
        __m256i p8 = _mm256_packs_epi16(p16a, p16b);
        p8 = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(void *)(q + b * SYNOR_QK), p8);
        d[b] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, 0));
    }
}

T2 static void a2_axpy(float a, const float *x, float *y, int n)
{
    __m256 av = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i,
                         _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] += a * x[i];
}

const llm_kernels synor__llm_kernels_avx2 = {
    .isa = "avx2",
    .dot_f32 = a2_dot_f32,
    .dot_f16 = a2_dot_f16,
    .dot_bf16 = a2_dot_bf16,
    .dot_q8_0 = a2_dot_q8_0,
    .dot_q4_0 = a2_dot_q4_0,
    .dot_q8g = a2_dot_q8g,
    .quantize_row = a2_quantize_row,
    .axpy = a2_axpy,
    .tile_q = synor__llm_a2_tile_q,
    .tile_p = synor__llm_a2_tile_p,
    .tile_f32 = synor__llm_a2_tile_f32,
    .tile_f32w = synor__llm_a2_tile_f32w,
    .tile_f32p = synor__llm_a2_tile_f32p,
    .gemm_block = 48, /* a multiple of OpenBLAS's AVX2 SGEMM panels (12 rows) */
    .att_scores = synor__llm_a2_att_scores,
    .att_mix = synor__llm_a2_att_mix,
    .softmax = synor__llm_a2_softmax,
    .gumbel_argmax = synor__llm_a2_gumbel_argmax,
    .swiglu = synor__llm_a2_swiglu,
    .att_scores_f16 = synor__llm_a2_att_scores_f16,
    .att_mix_f16 = synor__llm_a2_att_mix_f16,
    .to_f16 = synor__llm_a2_to_f16,
};

/* ------------------------------------------------------------- AVX-512 */

T5 static float a5_dot_f32(const float *w, const float *x, int n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 32), _mm512_loadu_ps(x + i + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 48), _mm512_loadu_ps(x + i + 48), a3);
    }
    for (; i + 16 <= n; i += 16)
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w + i), _mm512_maskz_loadu_ps(m, x + i), a1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

T5 static float a5_dot_f16(const uint16_t *w, const float *x, int n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 w0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(w + i)));
        __m512 w1 =
            _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(w + i + 16)));
        a0 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + i), a0);
        a1 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + i + 16), a1);
    }
    float s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    for (; i < n; i++)
        s += _cvtsh_ss(w[i]) * x[i];
    return s;
}

T5 static float a5_dot_bf16(const uint16_t *w, const float *x, int n)
{
    __m512 a0 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i v =
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(w + i)));
        a0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), _mm512_loadu_ps(x + i),
                             a0);
    }
    float s = _mm512_reduce_add_ps(a0);
    for (; i < n; i++)
        s += synor_bf16_to_f32(w[i]) * x[i];
    return s;
}

T5 static inline __m256 a5_mul_sum_i8(__m256i w, __m256i x)
{
    __m256i ax = _mm256_sign_epi8(w, w);
    __m256i sy = _mm256_sign_epi8(x, w);
    return _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ax, sy));
}

DOT_Q8_0(a5_dot_q8_0, T5, a5_mul_sum_i8, Q8_0_AHEAD)

T5 static float a5_dot_q4_0(const uint8_t *w, const int8_t *xq, const float *xd, const float *c8,
                            int nb)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    float corr = 0;
    int b = 0;
    for (; b + 2 <= nb; b += 2, w += 36) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(xq + b * 32));
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(xq + b * 32 + 32));
        __m256i p0 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), nibbles(w + 2), x0);
        __m256i p1 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), nibbles(w + 20), x1);
        float d0 = scale_of(w), d1 = scale_of(w + 18);
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d0 * xd[b]), _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(d1 * xd[b + 1]), _mm256_cvtepi32_ps(p1), acc1);
        corr += d0 * c8[b] + d1 * c8[b + 1];
    }
    for (; b < nb; b++, w += 18) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(xq + b * 32));
        __m256i p0 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), nibbles(w + 2), x0);
        float d0 = scale_of(w);
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d0 * xd[b]), _mm256_cvtepi32_ps(p0), acc0);
        corr += d0 * c8[b];
    }
    return x86_hsum8(_mm256_add_ps(acc0, acc1)) - corr;
}

T5 static float a5_dot_q8g(const int8_t *wq, const float *ws, const int8_t *xq, const float *xd,
                           int n, int gs)
{
    if (gs % 32)
        return synor__llm_kernels_generic.dot_q8g(wq, ws, xq, xd, n, gs);
    __m256 acc = _mm256_setzero_ps();
    for (int g = 0; g < n / gs; g++) {
        __m256i sum = _mm256_setzero_si256();
        for (int j = g * gs; j < (g + 1) * gs; j += 32) {
            __m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(wq + j));
            __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(xq + j));
            sum = _mm256_dpbusd_epi32(sum, _mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(ws[g] * xd[g]), _mm256_cvtepi32_ps(sum), acc);
    }
    return x86_hsum8(acc);
}

/* 4 weight rows x 4 activation rows of Q8_0 / Q4_0 blocks, for batches
 * (decode rows go through the dot products). The products use vpdpbusd
 * (unsigned x signed) on the activations shifted to unsigned, x + 128 (a
 * xor of the sign bit), and start each block's accumulator at -128 *
 * sum(w) to take the shift back out: one instruction per 32 products
 * instead of the sign trick's three, and a weight block unpacked once for
 * 4 activation rows. The 16 accumulators are named, not an array, so they
 * stay in registers. */
/* clang-format off */
/* Row r of the tile against the 4 activation rows: its weight block (a
 * Q4_0 block unpacked) and -128 * sum(w) in registers, the activations
 * (already shifted to unsigned, qx[t].u) and their scales read from memory
 * by the instructions, so only the 16 sums stay in registers. */
#define A5_ROW(r, Q4)                                                                       \
    {                                                                                       \
        const uint8_t *p = w + (size_t)(r) * ws + (size_t)b * (Q4 ? 18 : 34);               \
        __m256 dw = _mm256_set1_ps(scale_of(p));                                            \
        __m256i wv = Q4 ? unpack_q4(p + 2)                                                  \
                        : _mm256_loadu_si256((const __m256i *)(const void *)(p + 2));       \
        __m256i cv = _mm256_sub_epi32(_mm256_setzero_si256(),                               \
                                      _mm256_dpbusd_epi32(_mm256_setzero_si256(), k80, wv));\
        A5_ACC(r, 0) A5_ACC(r, 1) A5_ACC(r, 2) A5_ACC(r, 3)                                 \
    }
#define A5_ACC(r, t)                                                                        \
    s##r##t = _mm256_fmadd_ps(                                                              \
        _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(                                             \
            cv, _mm256_loadu_si256((const __m256i *)(const void *)(qx[t].u + b * SYNOR_QK)), \
            wv)),                                                                           \
        _mm256_mul_ps(dw, _mm256_set1_ps(qx[t].d[b])), s##r##t);
#define A5_OUT(r, t)                                                                        \
    {                                                                                       \
        float v = x86_hsum8(s##r##t), *o = y + (size_t)(t) * ldy + (r);                       \
        *o = acc ? *o + v : v;                                                              \
    }
#define A5_TILE(NAME, Q4)                                                                   \
    T5 __attribute__((noinline)) static void NAME(const uint8_t *w, size_t ws,              \
                                                  const llm_qrow *qx, int nb, float *y,     \
                                                  size_t ldy, int acc)                      \
    {                                                                                       \
        const __m256i k80 = _mm256_set1_epi8((char)0x80);                                   \
        __m256 s00 = _mm256_setzero_ps(), s01 = s00, s02 = s00, s03 = s00, s10 = s00,      \
               s11 = s00, s12 = s00, s13 = s00, s20 = s00, s21 = s00, s22 = s00, s23 = s00,\
               s30 = s00, s31 = s00, s32 = s00, s33 = s00;                                 \
        for (int b = 0; b < nb; b++) {                                                      \
            A5_ROW(0, Q4) A5_ROW(1, Q4) A5_ROW(2, Q4) A5_ROW(3, Q4)                         \
        }                                                                                   \
        A5_OUT(0, 0) A5_OUT(0, 1) A5_OUT(0, 2) A5_OUT(0, 3)                                 \
        A5_OUT(1, 0) A5_OUT(1, 1) A5_OUT(1, 2) A5_OUT(1, 3)                                 \
        A5_OUT(2, 0) A5_OUT(2, 1) A5_OUT(2, 2) A5_OUT(2, 3)                                 \
        A5_OUT(3, 0) A5_OUT(3, 1) A5_OUT(3, 2) A5_OUT(3, 3)                                 \
    }
/* clang-format on */

/* Two copies, so the weight type is a constant inside each. */
A5_TILE(a5_tile_q8_4x4, 0)
A5_TILE(a5_tile_q4_4x4, 1)

T5 static void a5_tile_q(const uint8_t *w, size_t ws, const llm_qrow *qx, int T, int nb, int q4,
                         float *y, size_t ldy, int acc)
{
    if (T == 4) {
        if (q4)
            a5_tile_q4_4x4(w, ws, qx, nb, y, ldy, acc);
        else
            a5_tile_q8_4x4(w, ws, qx, nb, y, ldy, acc);
        return;
    }
    for (int r = 0; r < 4; r++)
        for (int t = 0; t < T; t++) {
            const uint8_t *row = w + (size_t)r * ws;
            float v = q4 ? a5_dot_q4_0(row, qx[t].q, qx[t].d, qx[t].c8, nb)
                         : a5_dot_q8_0(row, qx[t].q, qx[t].d, nb);
            float *o = y + (size_t)t * ldy + r;
            *o = acc ? *o + v : v;
        }
}

/* One packed group of 8 weight rows (pack.c), or two adjacent ones (the
 * second gb bytes after the first: 16 rows), times T activation rows (T a
 * constant where it is inlined, so the 2T accumulators are registers):
 * per block and 4 bytes of it, one weight load per group and per
 * activation row a broadcast and one 512-bit vpdpbusd for all the rows;
 * per block and row one conversion and one multiply-add (Q4_0: and the c8
 * term). A row's lane does the same operations whether its group runs
 * alone or paired, so its sum is bitwise the same; a CPU with a full
 * 512-bit datapath runs a pair at the cost of one group. */
static inline __attribute__((always_inline)) T5 __m512i a5_pair_i(const uint8_t *a,
                                                                  const uint8_t *b)
{
    __m512i lo = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)a));
    return b ? _mm512_inserti64x4(lo, _mm256_loadu_si256((const __m256i *)(const void *)b), 1)
             : lo;
}

T5 static inline __attribute__((always_inline)) void a5_pgroup(const uint8_t *pk, size_t gb,
                                                                const int two,
                                                                const llm_qrow *qx, const int T,
                                                                int nb, const int q4, float *y,
                                                                size_t ldy, int acc)
{
    __m512 f[8];
    __m512i a[8];
    const uint8_t *u[8];
    for (int t = 0; t < T; t++) {
        f[t] = _mm512_setzero_ps();
        /* Q4_0: the nibbles are the unsigned operand, the activations
         * signed as they are; Q8_0: the activations shifted (pack.c) */
        u[t] = q4 ? (const uint8_t *)qx[t].q : qx[t].u;
    }
    /* per block: bytes of values (v), of scales and corrections (sc) */
    const size_t bv = q4 ? LLM_PACK_BLOCK_Q4 : LLM_PACK_BLOCK_Q8, bs = q4 ? 16 : bv;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const uint8_t *sc = pk, *v = q4 ? pk + synor__llm_pack_scales_q4(nb) : pk + 64;
    const uint8_t *sc1 = two ? sc + gb : NULL, *v1 = two ? v + gb : NULL;
    /* blocks ahead to prefetch: one activation row (a decode step) has
     * nothing to compute while the weights come in, and 4 blocks (0.8 KB
     * of Q4_0) was too short a distance to hide the memory's latency
     * (measured, 110M Q4_0 decode: 4 blocks ~360 tokens/s, 32-64 ~450) */
    const size_t PFD = T <= 3 ? 48 : 4;
    for (int b = 0; b < nb; b++) {
        /* the weights stream from memory once per batch: ask for the
         * blocks ahead (the pass for the next 8 activation rows finds the
         * group in L1/L2) */
        for (size_t l = 0; l < bv; l += 64) {
            _mm_prefetch((const char *)v + PFD * bv + l, _MM_HINT_T0);
            if (two)
                _mm_prefetch((const char *)v1 + PFD * bv + l, _MM_HINT_T0);
        }
        __m512 dw;
        if (q4) {
            if (b % 4 == 0) {
                _mm_prefetch((const char *)sc + PFD * bs, _MM_HINT_T0);
                if (two)
                    _mm_prefetch((const char *)sc1 + PFD * bs, _MM_HINT_T0);
            }
            __m256i h = _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)sc));
            if (two)
                h = _mm256_inserti128_si256(h, _mm_loadu_si128((const __m128i *)(const void *)sc1),
                                            1);
            dw = _mm512_cvtph_ps(h);
            for (int t = 0; t < T; t++)
                a[t] = _mm512_setzero_si512();
            for (int k = 0; k < 4; k++) {
                __m512i raw = a5_pair_i(v + k * 32, two ? v1 + k * 32 : NULL);
                __m512i lo = _mm512_and_si512(raw, m4);
                __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
                for (int t = 0; t < T; t++) {
                    int32_t x0, x1;
                    memcpy(&x0, u[t] + b * SYNOR_QK + 4 * k, 4);
                    memcpy(&x1, u[t] + b * SYNOR_QK + 16 + 4 * k, 4);
                    a[t] = _mm512_dpbusd_epi32(a[t], lo, _mm512_set1_epi32(x0));
                    a[t] = _mm512_dpbusd_epi32(a[t], hi, _mm512_set1_epi32(x1));
                }
            }
        } else {
            dw = _mm512_castsi512_ps(a5_pair_i(sc, sc1));
            __m512i corr = a5_pair_i(sc + 32, two ? sc1 + 32 : NULL);
            for (int t = 0; t < T; t++)
                a[t] = corr;
            for (int k = 0; k < 8; k++) {
                __m512i wv = a5_pair_i(v + k * 32, two ? v1 + k * 32 : NULL);
                for (int t = 0; t < T; t++) {
                    int32_t x0;
                    memcpy(&x0, u[t] + b * SYNOR_QK + 4 * k, 4);
                    a[t] = _mm512_dpbusd_epi32(a[t], _mm512_set1_epi32(x0), wv);
                }
            }
        }
        for (int t = 0; t < T; t++) {
            __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(qx[t].d[b]));
            f[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a[t]), s, f[t]);
            if (q4)
                f[t] = _mm512_fnmadd_ps(dw, _mm512_set1_ps(qx[t].c8[b]), f[t]);
        }
        sc += bs;
        v += bv;
        if (two) {
            sc1 += bs;
            v1 += bv;
        }
    }
    const __mmask16 m = two ? 0xFFFF : 0x00FF;
    for (int t = 0; t < T; t++) {
        float *o = y + (size_t)t * ldy;
        __m512 r = acc ? _mm512_add_ps(_mm512_maskz_loadu_ps(m, o), f[t]) : f[t];
        _mm512_mask_storeu_ps(o, m, r);
    }
}

#define A5_PGROUP(NAME, TWO, T, Q4)                                                              \
    T5 __attribute__((noinline)) static void NAME(const uint8_t *pk, size_t gb,                 \
                                                  const llm_qrow *qx, int nb, float *y,         \
                                                  size_t ldy, int acc)                          \
    {                                                                                            \
        a5_pgroup(pk, gb, TWO, qx, T, nb, Q4, y, ldy, acc);                                      \
    }
A5_PGROUP(a5_p8_q8, 0, 8, 0)
A5_PGROUP(a5_p4_q8, 0, 4, 0)
A5_PGROUP(a5_p3_q8, 0, 3, 0)
A5_PGROUP(a5_p2_q8, 0, 2, 0)
A5_PGROUP(a5_p1_q8, 0, 1, 0)
A5_PGROUP(a5_p8_q4, 0, 8, 1)
A5_PGROUP(a5_p4_q4, 0, 4, 1)
A5_PGROUP(a5_p3_q4, 0, 3, 1)
A5_PGROUP(a5_p2_q4, 0, 2, 1)
A5_PGROUP(a5_p1_q4, 0, 1, 1)
A5_PGROUP(a5_p28_q8, 1, 8, 0)
A5_PGROUP(a5_p24_q8, 1, 4, 0)
A5_PGROUP(a5_p23_q8, 1, 3, 0)
A5_PGROUP(a5_p22_q8, 1, 2, 0)
A5_PGROUP(a5_p21_q8, 1, 1, 0)
A5_PGROUP(a5_p28_q4, 1, 8, 1)
A5_PGROUP(a5_p24_q4, 1, 4, 1)
A5_PGROUP(a5_p23_q4, 1, 3, 1)
A5_PGROUP(a5_p22_q4, 1, 2, 1)
A5_PGROUP(a5_p21_q4, 1, 1, 1)

/* T activation rows against one group (two: 0) or two adjacent ones: 8
 * or 4 rows a pass, and the last 1-3 rows in one pass (a speculative
 * draft's catch-up of 2 rows, a check of 2-3: the weights read once, not
 * once per row). Each row's sums are the same operations in any pass. */
T5 static void a5_tile_pn(const uint8_t *pk, size_t gb, int two, const llm_qrow *qx, int T,
                          int nb, int q4, float *y, size_t ldy, int acc)
{
    typedef void (*fn)(const uint8_t *, size_t, const llm_qrow *, int, float *, size_t, int);
    /* by [two][q4][pass]: passes of 8, 4, 3, 2 and 1 rows */
    static const fn by[2][2][5] = {
        {{a5_p8_q8, a5_p4_q8, a5_p3_q8, a5_p2_q8, a5_p1_q8},
         {a5_p8_q4, a5_p4_q4, a5_p3_q4, a5_p2_q4, a5_p1_q4}},
        {{a5_p28_q8, a5_p24_q8, a5_p23_q8, a5_p22_q8, a5_p21_q8},
         {a5_p28_q4, a5_p24_q4, a5_p23_q4, a5_p22_q4, a5_p21_q4}}};
    const fn *f = by[two != 0][q4 != 0];
    int t = 0;
    for (; t + 8 <= T; t += 8)
        f[0](pk, gb, qx + t, nb, y + (size_t)t * ldy, ldy, acc);
    for (; t + 4 <= T; t += 4)
        f[1](pk, gb, qx + t, nb, y + (size_t)t * ldy, ldy, acc);
    if (t < T)
        f[5 - (T - t)](pk, gb, qx + t, nb, y + (size_t)t * ldy, ldy, acc);
}

T5 static void a5_tile_p2(const uint8_t *pk, size_t gb, const llm_qrow *qx, int T, int nb,
                          int q4, float *y, size_t ldy, int acc)
{
    a5_tile_pn(pk, gb, 1, qx, T, nb, q4, y, ldy, acc);
}

T5 static void a5_tile_p(const uint8_t *pk, const llm_qrow *qx, int T, int nb, int q4, float *y,
                         size_t ldy, int acc)
{
    a5_tile_pn(pk, 0, 0, qx, T, nb, q4, y, ldy, acc);
}

/* Attention of one head over positions whose vectors are ks floats apart
 * (a KV block): whole vectors in registers, no call per position. Heads of
 * a multiple of 16 floats; others through the portable loops. */
T5 static void a5_att_scores(const float *q, const float *k, size_t ks, int np, int hs,
                             float scale, float *out)
{
    if (hs % 16) {
        for (int p = 0; p < np; p++)
            out[p] = a5_dot_f32(q, k + (size_t)p * ks, hs) * scale;
        return;
    }
    for (int p = 0; p < np; p++) {
        const float *kp = k + (size_t)p * ks;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0;
        int i = 0;
        for (; i + 32 <= hs; i += 32) {
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), _mm512_loadu_ps(kp + i), a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16), _mm512_loadu_ps(kp + i + 16), a1);
        }
        if (i < hs)
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), _mm512_loadu_ps(kp + i), a0);
        out[p] = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1)) * scale;
    }
}

T5 static void a5_att_mix(const float *a, const float *v, size_t vs, int np, int hs, float *o)
{
    if (hs % 16) {
        for (int p = 0; p < np; p++)
            a2_axpy(a[p], v + (size_t)p * vs, o, hs);
        return;
    }
    for (int i = 0; i < hs; i += 16) {
        __m512 acc = _mm512_loadu_ps(o + i);
        for (int p = 0; p < np; p++)
            acc = _mm512_fmadd_ps(_mm512_set1_ps(a[p]), _mm512_loadu_ps(v + (size_t)p * vs + i),
                                  acc);
        _mm512_storeu_ps(o + i, acc);
    }
}

const llm_kernels synor__llm_kernels_avx512 = {
    .isa = "avx512",
    .dot_f32 = a5_dot_f32,
    .dot_f16 = a5_dot_f16,
    .dot_bf16 = a5_dot_bf16,
    .dot_q8_0 = a5_dot_q8_0,
    .dot_q4_0 = a5_dot_q4_0,
    .dot_q8g = a5_dot_q8g,
    .quantize_row = a2_quantize_row,
    .axpy = a2_axpy,
    .tile_q = a5_tile_q,
    .tile_f32 = synor__llm_a5_tile_f32,
    .tile_p = a5_tile_p,
    .tile_p2 = a5_tile_p2,
    .tiles_u = 1,
    .tile_f32w = synor__llm_a5_tile_f32w,
    .att_scores = a5_att_scores,
    .att_mix = a5_att_mix,
    .softmax = synor__llm_a5_softmax,
    .gumbel_argmax = synor__llm_a2_gumbel_argmax,
    .swiglu = synor__llm_a5_swiglu,
    .att_scores_f16 = synor__llm_a5_att_scores_f16,
    .att_mix_f16 = synor__llm_a5_att_mix_f16,
    .to_f16 = synor__llm_a5_to_f16,
};
#else
typedef int synor__llm_kern_x86_empty;
#endif
