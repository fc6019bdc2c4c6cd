/* kern_p_avx2.c - the avx2 table's product on packed weights (tile_p): a
 * group of 8 Q8_0 or Q4_0 weight rows interleaved 4 bytes at a time
 * (pack.c has the layout) times T activation rows. As kern_x86.c,
 * compiled for AVX2 + FMA + F16C with a target attribute and only reached
 * through the kernel table synor__llm_kernels chose for this CPU.
 *
 * Each 32-byte chunk of a packed block holds 4 values of each of the 8
 * rows, so vpmaddubsw against 4 activation bytes broadcast makes one lane
 * pair per row, and the block's sums land one row per int32 lane: one
 * conversion and one multiply-add scale a block for all 8 rows, with no
 * horizontal work. Q4_0: the stored nibbles (q + 8, unsigned) against the
 * signed activations q as they are; a lane pair sums 2 products under
 * 2 * 15 * 127, so a block's 8 chunk products (4 chunks, low and high
 * nibbles) add up in int16 (under 2^15) before a single vpmaddwd, and
 * the + 8 comes out per block as dw * (sum * dx - c8). Q8_0: the sign
 * trick (|w| once per chunk for the T rows, x * sign(w) per row), each
 * chunk's pair sums widened by vpmaddwd (2 * 127 * 127 leaves no room to
 * add two in int16). The activations are qx[t].q (not .u: no shift, so
 * the packed -128 * sum(w) of the avx512 tile is unused).
 *
 * Activation rows go 4 at a time (4 int16 or int32 block sums and 4
 * accumulators besides the chunk's registers: no spill), each row in its
 * own lanes through the same operations in the same order, so a row's
 * result is bitwise the same in a pass of any size. */
#if defined(__x86_64__)
#include <string.h>

#include "llm/kern_x86.h"
#include "llm/llm_internal.h"

#define INL __attribute__((always_inline)) inline

/* 4 bytes of an activation row in every 32-bit lane. */
T2 static INL __m256i bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* The 8 weight rows' sums s[t] of each activation row t into y (added
 * to it with acc). */
T2 static INL void a2p_store(const __m256 *s, const int T, float *y, size_t ldy, int acc)
{
    for (int t = 0; t < T; t++) {
        float *out = y + (size_t)t * ldy;
        _mm256_storeu_ps(out, acc ? _mm256_add_ps(_mm256_loadu_ps(out), s[t]) : s[t]);
    }
}

/* The packed Q4_0 group times T (1..4, a constant) activation rows. */
T2 static INL void a2p_q4(const uint8_t *pk, const llm_qrow *qx, const int T, int nb, float *y,
                          size_t ldy, int acc)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    const uint8_t *vals = pk + synor__llm_pack_scales_q4(nb);
    __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
    for (int b = 0; b < nb; b++) {
        const uint8_t *v = vals + (size_t)b * LLM_PACK_BLOCK_Q4;
        const int o = b * SYNOR_QK;
        __m256i p[4];
        /* chunk by chunk: unrolled, GCC hoists all the chunks' loads and
         * products ahead and spills them */
#pragma GCC unroll 1
        for (int k = 0; k < 4; k++) {
            __m256i raw = _mm256_loadu_si256((const __m256i *)(const void *)(v + 32 * k));
            __m256i lo = _mm256_and_si256(raw, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
            for (int t = 0; t < T; t++) {
                const int8_t *x = qx[t].q + o + 4 * k;
                __m256i pk2 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast4(x)),
                                               _mm256_maddubs_epi16(hi, bcast4(x + 16)));
                p[t] = k ? _mm256_add_epi16(p[t], pk2) : pk2;
            }
        }
        __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(pk + 16 * b)));
        for (int t = 0; t < T; t++) {
            __m256 f = _mm256_cvtepi32_ps(_mm256_madd_epi16(p[t], ones));
            s[t] = _mm256_fmadd_ps(
                _mm256_fmsub_ps(f, _mm256_set1_ps(qx[t].d[b]), _mm256_set1_ps(qx[t].c8[b])), dw,
                s[t]);
        }
    }
    a2p_store(s, T, y, ldy, acc);
}

/* The packed Q8_0 group times T (1..4, a constant) activation rows. */
T2 static INL void a2p_q8(const uint8_t *pk, const llm_qrow *qx, const int T, int nb, float *y,
                          size_t ldy, int acc)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = pk + (size_t)b * LLM_PACK_BLOCK_Q8;
        const int o = b * SYNOR_QK;
        __m256i p[4];
#pragma GCC unroll 1
        for (int k = 0; k < 8; k++) {
            __m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 64 + 32 * k));
            __m256i aw = _mm256_sign_epi8(w, w);
            for (int t = 0; t < T; t++) {
                __m256i sx = _mm256_sign_epi8(bcast4(qx[t].q + o + 4 * k), w);
                __m256i pk4 = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), ones);
                p[t] = k ? _mm256_add_epi32(p[t], pk4) : pk4;
            }
        }
        __m256 dw = _mm256_loadu_ps((const float *)(const void *)blk);
        for (int t = 0; t < T; t++)
            s[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[t]),
                                   _mm256_mul_ps(dw, _mm256_set1_ps(qx[t].d[b])), s[t]);
    }
    a2p_store(s, T, y, ldy, acc);
}

/* One copy per (T, weight type), the constants folded in. */
#define A2P_COPY(T)                                                                                \
    T2 __attribute__((noinline)) static void a2p_q4_##T(const uint8_t *pk, const llm_qrow *qx,     \
                                                        int nb, float *y, size_t ldy, int acc)     \
    {                                                                                              \
        a2p_q4(pk, qx, T, nb, y, ldy, acc);                                                        \
    }                                                                                              \
    T2 __attribute__((noinline)) static void a2p_q8_##T(const uint8_t *pk, const llm_qrow *qx,     \
                                                        int nb, float *y, size_t ldy, int acc)     \
    {                                                                                              \
        a2p_q8(pk, qx, T, nb, y, ldy, acc);                                                        \
    }
A2P_COPY(1)
A2P_COPY(2)
A2P_COPY(3)
A2P_COPY(4)

void synor__llm_a2_tile_p(const uint8_t *pk, const llm_qrow *qx, int T, int nb, int q4, float *y,
                          size_t ldy, int acc)
{
    typedef void (*group_fn)(const uint8_t *, const llm_qrow *, int, float *, size_t, int);
    static const group_fn fns[2][4] = {
        {a2p_q8_1, a2p_q8_2, a2p_q8_3, a2p_q8_4},
        {a2p_q4_1, a2p_q4_2, a2p_q4_3, a2p_q4_4},
    };
    for (int t = 0; t < T; t += 4) {
        int n = T - t < 4 ? T - t : 4;
        fns[q4 != 0][n - 1](pk, qx + t, nb, y + (size_t)t * ldy, ldy, acc);
    }
}
#else
typedef int synor__llm_kern_p_avx2_empty;
#endif
