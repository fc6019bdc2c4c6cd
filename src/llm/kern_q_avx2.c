/* kern_q_avx2.c - the avx2 table's tile of quantized weights (tile_q): 4
 * Q8_0 or Q4_0 weight rows in the file's layout times T = 1..4 activation
 * rows (Q8_0 blocks of 32). As kern_x86.c, compiled for AVX2 + FMA + F16C
 * with a target attribute and only reached through the kernel table
 * synor__llm_kernels chose for this CPU.
 *
 * AVX2 has no vpdpbusd: vpmaddubsw (unsigned x signed, pairs summed to
 * int16) then vpmaddwd by ones gives 8 int32 sums of 4 products. The
 * tile loads a weight block (and unpacks a Q4_0 block, or takes |w| of a
 * Q8_0 one) once for the T rows, and an activation block once for the 4
 * weight rows. A dot product of one row converts and scales its 8 int32
 * lanes per block; here the T rows' sums of a weight row are folded
 * together first, with horizontal adds, into one vector whose lane t
 * (and t + 4) is row t's: one conversion and one multiply-add per weight
 * row and block instead of one per row, and one accumulator per weight
 * row (4 in all), which leaves the registers to the blocks. The integer
 * sums are exact whatever the order, and lane t only ever holds row t's
 * values, so an activation row's result is bitwise the same whatever T
 * and its place in the tile: a batch (a speculative check, a serving
 * step) changes no row's result.
 *
 * Q8_0: the sign trick of kern_x86.c, |w| once per weight block and
 * x * sign(w) per pair (both <= 127, so a pair's sum fits int16). Q4_0:
 * the stored nibbles (q + 8, unsigned) times x directly, whose pair sums
 * stay under 2 * 15 * 127, so the T rows are folded with 16-bit horizontal
 * adds (sums of 8 products, under 2^15) before a single vpmaddwd; 8 * d *
 * sum(x) per block (c8) is taken out before the weight's scale is
 * applied: dw * (sum * dx - c8), two multiply-adds.
 *
 * Measured on the Zen 3 VM (256 x 768 weights, the kernel alone): 4 rows
 * 0.9 ns per (weight block, activation block), against 1.8 (Q8_0) and
 * 2.2 (Q4_0) for the dot products; vpunpck and vpaddd in place of
 * vphaddd no faster. */
#if defined(__x86_64__)
#include <string.h>

#include "llm/kern_x86.h"
#include "llm/llm_internal.h"

#define INL __attribute__((always_inline)) inline

/* A block's fp16 scale in all 8 lanes. */
T2 static INL __m256 scale8(const uint8_t *b)
{
    int16_t h;
    memcpy(&h, b, 2);
    return _mm256_cvtph_ps(_mm_set1_epi16(h));
}

/* The 32 stored nibbles of a Q4_0 block (q + 8, 0..15): the low ones
 * first, as the file orders the values. */
T2 static INL __m256i nibbles32(const uint8_t *qs)
{
    /* the 16 bytes in both halves, the upper half shifted by 4: a
     * broadcast load, a shift and an and */
    __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)qs));
    return _mm256_and_si256(_mm256_srlv_epi32(b, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
                            _mm256_set1_epi8(0x0F));
}

/* Lanes t and t + 4 per 128-bit half: 4 vectors of 8 int32 (or 16 int16)
 * sums folded, row t's lanes summed into lane t of each half. */
T2 static INL __m256i fold32(__m256i a, __m256i b, __m256i c, __m256i d)
{
    return _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
}

T2 static INL __m256i fold16(__m256i a, __m256i b, __m256i c, __m256i d)
{
    return _mm256_hadd_epi16(_mm256_hadd_epi16(a, b), _mm256_hadd_epi16(c, d));
}

/* A Q8_0 block's 32 products with x as 8 int32 sums: aw = |w|. */
T2 static INL __m256i q8_sums(__m256i aw, __m256i w, __m256i x)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, w)),
                             _mm256_set1_epi16(1));
}

/* The tile for a constant T and weight type (inlined into one copy each,
 * so the absent rows' work folds away: their lanes stay zero). s[r]: row
 * r's accumulator, lane t and t + 4 activation row t. */
T2 static INL void a2q_tile(const uint8_t *w, size_t ws, const llm_qrow *qx, const int T, int nb,
                            const int q4, float *y, size_t ldy, int acc)
{
    const __m256i ones = _mm256_set1_epi16(1), zero = _mm256_setzero_si256();
    const size_t bs = q4 ? 18 : 34;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (int b = 0; b < nb; b++) {
        const int o = b * SYNOR_QK;
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(qx[0].q + o));
        __m256i x1 =
            T > 1 ? _mm256_loadu_si256((const __m256i *)(const void *)(qx[1].q + o)) : zero;
        __m256i x2 =
            T > 2 ? _mm256_loadu_si256((const __m256i *)(const void *)(qx[2].q + o)) : zero;
        __m256i x3 =
            T > 3 ? _mm256_loadu_si256((const __m256i *)(const void *)(qx[3].q + o)) : zero;
        __m128 d4 = _mm_setr_ps(qx[0].d[b], T > 1 ? qx[1].d[b] : 0, T > 2 ? qx[2].d[b] : 0,
                                T > 3 ? qx[3].d[b] : 0);
        __m256 dx = _mm256_set_m128(d4, d4);
        __m256 cx = _mm256_setzero_ps();
        if (q4)
            cx = _mm256_set_m128(_mm_setzero_ps(),
                                 _mm_setr_ps(qx[0].c8[b], T > 1 ? qx[1].c8[b] : 0,
                                             T > 2 ? qx[2].c8[b] : 0, T > 3 ? qx[3].c8[b] : 0));
        const uint8_t *p = w + (size_t)b * bs;
#define A2Q_ROW(r)                                                                                 \
    {                                                                                              \
        const uint8_t *pr = p + (size_t)(r) * ws;                                                  \
        __m256 dw = scale8(pr);                                                                    \
        __m256i h;                                                                                 \
        if (q4) {                                                                                  \
            __m256i wv = nibbles32(pr + 2);                                                        \
            h = _mm256_madd_epi16(fold16(_mm256_maddubs_epi16(wv, x0),                             \
                                         T > 1 ? _mm256_maddubs_epi16(wv, x1) : zero,              \
                                         T > 2 ? _mm256_maddubs_epi16(wv, x2) : zero,              \
                                         T > 3 ? _mm256_maddubs_epi16(wv, x3) : zero),             \
                                  ones);                                                           \
        } else {                                                                                   \
            __m256i wv = _mm256_loadu_si256((const __m256i *)(const void *)(pr + 2));              \
            __m256i aw = _mm256_sign_epi8(wv, wv);                                                 \
            h = fold32(q8_sums(aw, wv, x0), T > 1 ? q8_sums(aw, wv, x1) : zero,                    \
                       T > 2 ? q8_sums(aw, wv, x2) : zero, T > 3 ? q8_sums(aw, wv, x3) : zero);    \
        }                                                                                          \
        if (q4) /* dw * (sum * dx - c8): c8 in the lower half only */                              \
            s##r = _mm256_fmadd_ps(_mm256_fmsub_ps(_mm256_cvtepi32_ps(h), dx, cx), dw, s##r);      \
        else                                                                                       \
            s##r = _mm256_fmadd_ps(_mm256_cvtepi32_ps(h), _mm256_mul_ps(dw, dx), s##r);            \
    }
        A2Q_ROW(0) A2Q_ROW(1) A2Q_ROW(2) A2Q_ROW(3)
#undef A2Q_ROW
    }
    /* per weight row, lanes t and t + 4 summed: [row t = 0..3]; then
     * transposed to one vector of the 4 weight rows per activation row */
    __m128 r0 = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
    __m128 r1 = _mm_add_ps(_mm256_castps256_ps128(s1), _mm256_extractf128_ps(s1, 1));
    __m128 r2 = _mm_add_ps(_mm256_castps256_ps128(s2), _mm256_extractf128_ps(s2, 1));
    __m128 r3 = _mm_add_ps(_mm256_castps256_ps128(s3), _mm256_extractf128_ps(s3, 1));
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    __m128 v[4] = {r0, r1, r2, r3};
    for (int t = 0; t < T; t++) {
        float *o = y + (size_t)t * ldy;
        _mm_storeu_ps(o, acc ? _mm_add_ps(_mm_loadu_ps(o), v[t]) : v[t]);
    }
}

/* One copy per (T, weight type), the constants folded in. */
#define A2Q_COPY(T, Q4)                                                                            \
    T2 __attribute__((noinline)) static void a2q_tile_##T##_##Q4(                                  \
        const uint8_t *w, size_t ws, const llm_qrow *qx, int nb, float *y, size_t ldy, int acc)    \
    {                                                                                              \
        a2q_tile(w, ws, qx, T, nb, Q4, y, ldy, acc);                                               \
    }
A2Q_COPY(1, 0)
A2Q_COPY(2, 0)
A2Q_COPY(3, 0)
A2Q_COPY(4, 0)
A2Q_COPY(1, 1)
A2Q_COPY(2, 1)
A2Q_COPY(3, 1)
A2Q_COPY(4, 1)

void synor__llm_a2_tile_q(const uint8_t *w, size_t ws, const llm_qrow *qx, int T, int nb, int q4,
                          float *y, size_t ldy, int acc)
{
    typedef void (*tile_fn)(const uint8_t *, size_t, const llm_qrow *, int, float *, size_t, int);
    static const tile_fn fns[2][4] = {
        {a2q_tile_1_0, a2q_tile_2_0, a2q_tile_3_0, a2q_tile_4_0},
        {a2q_tile_1_1, a2q_tile_2_1, a2q_tile_3_1, a2q_tile_4_1},
    };
    fns[q4 != 0][T - 1](w, ws, qx, nb, y, ldy, acc);
}
#else
typedef int synor__llm_kern_q_avx2_empty;
#endif
