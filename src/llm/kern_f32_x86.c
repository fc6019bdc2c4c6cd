/* kern_f32_x86.c - the AVX-512 tiles of F32 weights (the avx512 table's
 * tile_f32 and tile_f32w): 4 weight rows times T activation rows. As
 * kern_x86.c, each function is compiled for its instruction set with a
 * target attribute and only reached through the kernel table
 * synor__llm_kernels chose for this CPU.
 *
 * Every (weight row, activation row) sum is made in one order, whatever
 * the tile: one 16-lane accumulator over the columns, 16 at a time, the
 * masked tail last, then _mm512_reduce_add_ps's tree (lanes j + j+8, then
 * + j+4, + j+2, + j+1; the tiles of several rows make 16 such trees at
 * once, a5_hsum16). So a row's result is bitwise the one it gets alone,
 * in any batch (a speculative check, a serving step) and any tile.
 *
 * The weights stream from memory (110M-shaped F32: 440 MB a step); a tile
 * of T rows adds T multiply-adds per weight vector, which the core only
 * hides behind the stream when the stream does not wait on them: the
 * pass over a block of 4 weight rows also prefetches (into L1) the block
 * its caller names, two blocks on (kern.c: LLM_F32W_AHEAD); a block of
 * more than 6 rows, in several passes, shares that prefetch over all of
 * them, one block on (LLM_F32W_AHEAD_PASSES). Measured on the development
 * VM (docs/BENCHMARKS.md, "F32 steps of a few rows" and "the weights'
 * stream through all the passes"): against one block on into L2 (and none
 * for one row), one row 5-16% faster, 2-6 rows 6-36%; 4-6 rows still cost
 * 1.2-1.4 one-row steps. */
#if defined(__x86_64__)
#include "llm/kern_x86.h"
#include "llm/llm_internal.h"

/* 4 rows of F32 weights times one activation row: 5 loads for 4
 * multiply-adds, the rows read from memory once per row (a decode step),
 * from L1 for the next rows of a tile. next: 4 rows (ws apart) to
 * prefetch along, or NULL. */
T5 static void a5_f32_4x1(const float *w, size_t ws, const float *x, int n, float *y, int acc,
                          const float *next)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    const float *w0 = w, *w1 = w + ws, *w2 = w + 2 * ws, *w3 = w + 3 * ws;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        if (next)
            for (int r = 0; r < 4; r++)
                _mm_prefetch((const char *)(next + (size_t)r * ws + i), _MM_HINT_T0);
        __m512 xv = _mm512_loadu_ps(x + i);
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + i), xv, s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + i), xv, s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(w2 + i), xv, s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(w3 + i), xv, s3);
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w0 + i), xv, s0);
        s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w1 + i), xv, s1);
        s2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w2 + i), xv, s2);
        s3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w3 + i), xv, s3);
    }
    float v[4] = {_mm512_reduce_add_ps(s0), _mm512_reduce_add_ps(s1), _mm512_reduce_add_ps(s2),
                  _mm512_reduce_add_ps(s3)};
    for (int r = 0; r < 4; r++)
        y[r] = acc ? y[r] + v[r] : v[r];
}

/* The 16 sums of a[0..15], a[k]'s at lane (k % 4) * 4 + k / 4, each in
 * _mm512_reduce_add_ps's order: the same additions, made for 16 vectors
 * at once - each level pairs two vectors' halves with one shuffle per
 * half, so 15 additions and 30 shuffles where 16 reductions take ~128
 * instructions (a 16-row step's tile ~4% faster on the development VM,
 * docs/BENCHMARKS.md, session 21). IEEE addition commutes, so a + b
 * here and b + a there give the same bits. */
T5 static inline __m512 a5_hsum16(const __m512 *a)
{
    __m512 l1[8], l2[4], l3[2];
    for (int k = 0; k < 8; k++) /* lanes j + j+8: [a(2k) | a(2k+1)] */
        l1[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0x44),
                              _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0xEE));
    for (int k = 0; k < 4; k++) /* + j+4: a quad each of a(4k) .. a(4k+3) */
        l2[k] = _mm512_add_ps(_mm512_shuffle_f32x4(l1[2 * k], l1[2 * k + 1], 0x88),
                              _mm512_shuffle_f32x4(l1[2 * k], l1[2 * k + 1], 0xDD));
    for (int k = 0; k < 2; k++) { /* + j+2 */
        __m512d x = _mm512_castps_pd(l2[2 * k]), y = _mm512_castps_pd(l2[2 * k + 1]);
        l3[k] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                              _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    return _mm512_add_ps(_mm512_shuffle_ps(l3[0], l3[1], 0x88), /* + j+1 */
                         _mm512_shuffle_ps(l3[0], l3[1], 0xDD));
}

/* 4 rows of F32 weights times T activation rows in registers (4T
 * accumulators): per 16 columns 4 + T loads for 4T multiply-adds, where
 * the 4x1 tile makes 5 loads for 4. spread (a constant): this is pass p
 * of np over the block, which prefetches every np-th 16 columns of next
 * from the p-th; else it prefetches all of next. The next columns to
 * prefetch are kept as an index (pf; n: none left), so that a step of the
 * loop tests one register against another where it kept a pass counter
 * (turn == p, ++turn == np, a conditional move) and tested next: on one
 * core, 16 rows against a 110M-shaped classifier streamed from memory,
 * 4-7% less time (docs/BENCHMARKS.md, session 21). */
T5 static inline __attribute__((always_inline)) void a5_f32_4xT(const float *w, size_t ws,
                                                                 const float *x, size_t ldx,
                                                                 const int T, int n, float *y,
                                                                 size_t ldy, int acc,
                                                                 const float *next,
                                                                 const int spread, int p, int np)
{
    __m512 s[4][6];
    for (int r = 0; r < 4; r++)
        for (int t = 0; t < T; t++)
            s[r][t] = _mm512_setzero_ps();
    int i = 0, pf = !next ? n : spread ? 16 * p : 0, step = spread ? 16 * np : 16;
    for (; i + 16 <= n; i += 16) {
        __m512 wv[4];
        if (i == pf) {
            for (int r = 0; r < 4; r++)
                _mm_prefetch((const char *)(next + (size_t)r * ws + i), _MM_HINT_T0);
            pf += step;
        }
        for (int r = 0; r < 4; r++)
            wv[r] = _mm512_loadu_ps(w + (size_t)r * ws + i);
        for (int t = 0; t < T; t++) {
            __m512 xv = _mm512_loadu_ps(x + (size_t)t * ldx + i);
            for (int r = 0; r < 4; r++)
                s[r][t] = _mm512_fmadd_ps(wv[r], xv, s[r][t]);
        }
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 wv[4];
        for (int r = 0; r < 4; r++)
            wv[r] = _mm512_maskz_loadu_ps(m, w + (size_t)r * ws + i);
        for (int t = 0; t < T; t++) {
            __m512 xv = _mm512_maskz_loadu_ps(m, x + (size_t)t * ldx + i);
            for (int r = 0; r < 4; r++)
                s[r][t] = _mm512_fmadd_ps(wv[r], xv, s[r][t]);
        }
    }
    /* 4 activation rows' 16 sums at a time (zeros past T) */
    for (int t0 = 0; t0 < T; t0 += 4) {
        __m512 a[16];
        float v[16];
        for (int k = 0; k < 16; k++)
            a[k] = t0 + k / 4 < T ? s[k % 4][t0 + k / 4] : _mm512_setzero_ps();
        _mm512_storeu_ps(v, a5_hsum16(a));
        for (int t = t0; t < T && t < t0 + 4; t++)
            for (int r = 0; r < 4; r++) {
                float *o = y + (size_t)t * ldy + r;
                *o = acc ? *o + v[r * 4 + t - t0] : v[r * 4 + t - t0];
            }
    }
}

#define A5_F32W(NAME, T, SPREAD)                                                                \
    T5 __attribute__((noinline)) static void NAME(const float *w, size_t ws, const float *x,    \
                                                  size_t ldx, int n, float *y, size_t ldy,      \
                                                  int acc, const float *next, int p, int np)    \
    {                                                                                           \
        a5_f32_4xT(w, ws, x, ldx, T, n, y, ldy, acc, next, SPREAD, p, np);                      \
    }
A5_F32W(a5_f32_4x6, 6, 0)
A5_F32W(a5_f32_4x5, 5, 0)
A5_F32W(a5_f32_4x4, 4, 0)
A5_F32W(a5_f32_4x3, 3, 0)
A5_F32W(a5_f32_4x2, 2, 0)
A5_F32W(a5_f32_4x6s, 6, 1)
A5_F32W(a5_f32_4x5s, 5, 1)
A5_F32W(a5_f32_4x4s, 4, 1)
A5_F32W(a5_f32_4x3s, 3, 1)
A5_F32W(a5_f32_4x2s, 2, 1)
A5_F32W(a5_f32_4x1s, 1, 1)

typedef void f32_pass(const float *w, size_t ws, const float *x, size_t ldx, int n, float *y,
                         size_t ldy, int acc, const float *next, int p, int np);

/* Up to 6 activation rows: one pass, one tile, which prefetches next (the
 * weights of a later call; NULL: none) into L1 as it goes. More: passes
 * of 6 rows, then one tile of the 1..5 left; every weight row comes from
 * memory once, in the first pass, the others read the block from L1 or
 * L2, and all the passes share next's prefetch, each taking every np-th
 * 16 columns, so that the stream runs all through the block's
 * multiply-adds and not only in its first pass (kern.c names the block
 * 4 rows on there, 8 rows on for one pass). Measured against the
 * first pass alone prefetching 8 rows on (docs/BENCHMARKS.md, "the
 * weights' stream through all the passes"): 8 rows 7-19% more tokens/s
 * (the median pair in the host's slow / fast minutes), 16 rows the same.
 * (The passes' counter in the one-pass tiles made the one-row step ~8%
 * slower: those have none.) */
T5 void synor__llm_a5_tile_f32w(const float *w, size_t ws, const float *x, size_t ldx, int T,
                                int n, float *y, size_t ldy, int acc, const float *next)
{
    static f32_pass *const one[6] = {NULL, NULL, a5_f32_4x2, a5_f32_4x3, a5_f32_4x4,
                                        a5_f32_4x5},
                              *const shared[7] = {NULL,        a5_f32_4x1s, a5_f32_4x2s,
                                                  a5_f32_4x3s, a5_f32_4x4s, a5_f32_4x5s,
                                                  a5_f32_4x6s};
    if (T == 1) {
        a5_f32_4x1(w, ws, x, n, y, acc, next);
        return;
    }
    if (T <= 6) {
        (T == 6 ? a5_f32_4x6 : one[T])(w, ws, x, ldx, n, y, ldy, acc, next, 0, 1);
        return;
    }
    int t = 0, p = 0, np = (T + 5) / 6;
    for (; t + 6 <= T; t += 6, p++)
        a5_f32_4x6s(w, ws, x + (size_t)t * ldx, ldx, n, y + (size_t)t * ldy, ldy, acc, next, p, np);
    if (t < T)
        shared[T - t](w, ws, x + (size_t)t * ldx, ldx, n, y + (size_t)t * ldy, ldy, acc, next, p,
                      np);
}

/* One activation row at a time (the reference order of the tiles). */
T5 void synor__llm_a5_tile_f32(const float *w, size_t ws, const float *x, size_t ldx, int T, int n,
                               float *y, size_t ldy, int acc)
{
    for (int t = 0; t < T; t++)
        a5_f32_4x1(w, ws, x + (size_t)t * ldx, n, y + (size_t)t * ldy, acc, NULL);
}

/* ---------------------------------------------------------------- AVX2
 * The same tiles in 8 lanes for CPUs without AVX-512 (AMD Zen 2 / Zen 3,
 * Intel's client cores). Before these the avx2 table had no F32 tile: a
 * batch of 2..15 rows ran one activation row at a time against each
 * weight row (from L1) and 16 or more went to OpenBLAS's SGEMM, which
 * packs the weights first; on a Zen 3 VM a 5-row step cost 2.2 one-row
 * steps and a 16-row step 3.7 (docs/BENCHMARKS.md). Order of every sum:
 * one 8-lane accumulator over the columns, 8 at a time, the masked tail
 * last, then x86_hsum8 - so, as above, a row's result is bitwise the one it
 * gets alone. 16 ymm registers hold 4T accumulators, the T activation
 * vectors and a weight vector: T <= 3 a pass. */
/* The lanes below `left` (1..7) of an 8-float load. */
T2 static inline __m256i a2_tail_mask(int left)
{
    static const int32_t m[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(const void *)(m + 8 - left));
}

/* 4 rows of F32 weights times T (1..3) activation rows in registers.
 * packed (a constant): w is a group of 4 rows in pack.c's F32 layout
 * (8 columns of each row in turn, the last 8 zero-padded), read as one
 * sequential stream; else row r at w + r * ws (4 streams, which Zen 3's
 * prefetchers follow less well: one row 10-25% slower on short rows,
 * docs/BENCHMARKS.md). Either way the same operations on the same
 * values, so the same bits: the tail's weight lanes past n are 0 in both
 * (masked load, or padding) and its activation lanes are masked. The
 * prefetch of next goes 16 columns (4 lines) at a time; spread: this is
 * pass p of np over the block, which prefetches every np-th 16 columns of
 * next from the p-th, else all of next (as a5_f32_4xT). */
T2 static inline __attribute__((always_inline)) void
a2_f32_4xT(const float *w, size_t ws, const float *x, size_t ldx, const int T, int n, float *y,
           size_t ldy, int acc, const float *next, const int spread, int p, int np,
           const int packed)
{
    __m256 s[4][3];
    int turn = 0;
    for (int r = 0; r < 4; r++)
        for (int t = 0; t < T; t++)
            s[r][t] = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        if (next && !(i & 15)) {
            if (!spread || turn == p)
                for (int r = 0; r < 4; r++)
                    _mm_prefetch((const char *)(packed ? next + (size_t)i * 4 + (size_t)r * 16
                                                       : next + (size_t)r * ws + i),
                                 _MM_HINT_T0);
            if (spread && ++turn == np)
                turn = 0;
        }
        __m256 xv[3];
        for (int t = 0; t < T; t++)
            xv[t] = _mm256_loadu_ps(x + (size_t)t * ldx + i);
        for (int r = 0; r < 4; r++) {
            __m256 wv = _mm256_loadu_ps(packed ? w + (size_t)i * 4 + (size_t)r * 8
                                               : w + (size_t)r * ws + i);
            for (int t = 0; t < T; t++)
                s[r][t] = _mm256_fmadd_ps(wv, xv[t], s[r][t]);
        }
    }
    if (i < n) {
        __m256i m = a2_tail_mask(n - i);
        __m256 xv[3];
        for (int t = 0; t < T; t++)
            xv[t] = _mm256_maskload_ps(x + (size_t)t * ldx + i, m);
        for (int r = 0; r < 4; r++) {
            __m256 wv = packed ? _mm256_loadu_ps(w + (size_t)i * 4 + (size_t)r * 8)
                               : _mm256_maskload_ps(w + (size_t)r * ws + i, m);
            for (int t = 0; t < T; t++)
                s[r][t] = _mm256_fmadd_ps(wv, xv[t], s[r][t]);
        }
    }
    for (int t = 0; t < T; t++)
        for (int r = 0; r < 4; r++) {
            float v = x86_hsum8(s[r][t]), *o = y + (size_t)t * ldy + r;
            *o = acc ? *o + v : v;
        }
}

#define A2_F32W(NAME, T, SPREAD, PACKED)                                                        \
    T2 __attribute__((noinline)) static void NAME(const float *w, size_t ws, const float *x,    \
                                                  size_t ldx, int n, float *y, size_t ldy,      \
                                                  int acc, const float *next, int p, int np)    \
    {                                                                                           \
        a2_f32_4xT(w, ws, x, ldx, T, n, y, ldy, acc, next, SPREAD, p, np, PACKED);              \
    }
A2_F32W(a2_f32_4x1, 1, 0, 0)
A2_F32W(a2_f32_4x2, 2, 0, 0)
A2_F32W(a2_f32_4x3, 3, 0, 0)
A2_F32W(a2_f32_4x1s, 1, 1, 0)
A2_F32W(a2_f32_4x2s, 2, 1, 0)
A2_F32W(a2_f32_4x3s, 3, 1, 0)
A2_F32W(a2_f32p_4x1, 1, 0, 1)
A2_F32W(a2_f32p_4x2, 2, 0, 1)
A2_F32W(a2_f32p_4x3, 3, 0, 1)
A2_F32W(a2_f32p_4x1s, 1, 1, 1)
A2_F32W(a2_f32p_4x2s, 2, 1, 1)
A2_F32W(a2_f32p_4x3s, 3, 1, 1)

/* Up to 3 rows: one pass, which prefetches next as it goes. More: passes
 * of 2 or 3 rows as even as can be (4 = 2 + 2: eight accumulators a pass
 * keep both FMA pipes busy where 3 + 1 leaves the last pass four
 * dependency chains), all sharing next's prefetch. One row prefetches
 * nothing: on Zen 3 the hardware prefetchers alone stream 4-7% faster
 * there (14.7 against 15.8 GB/s on one core), where 2-5 rows gain 10-30%
 * from it. one / shared: the passes of the layout. */
T2 static inline __attribute__((always_inline)) void
a2_tile(f32_pass *const *one, f32_pass *const *shared, const float *w, size_t ws, const float *x,
        size_t ldx, int T, int n, float *y, size_t ldy, int acc, const float *next)
{
    if (T <= 3) {
        one[T](w, ws, x, ldx, n, y, ldy, acc, T == 1 ? NULL : next, 0, 1);
        return;
    }
    int np = (T + 2) / 3, t = 0;
    for (int p = 0; p < np; p++) {
        int rows = (T - t) / (np - p) + ((T - t) % (np - p) != 0);
        shared[rows](w, ws, x + (size_t)t * ldx, ldx, n, y + (size_t)t * ldy, ldy, acc, next, p,
                     np);
        t += rows;
    }
}

T2 void synor__llm_a2_tile_f32w(const float *w, size_t ws, const float *x, size_t ldx, int T,
                                int n, float *y, size_t ldy, int acc, const float *next)
{
    static f32_pass *const one[4] = {NULL, a2_f32_4x1, a2_f32_4x2, a2_f32_4x3},
                           *const shared[4] = {NULL, a2_f32_4x1s, a2_f32_4x2s, a2_f32_4x3s};
    a2_tile(one, shared, w, ws, x, ldx, T, n, y, ldy, acc, next);
}

T2 void synor__llm_a2_tile_f32p(const float *pk, const float *x, size_t ldx, int T, int n,
                                float *y, size_t ldy, int acc, const float *next)
{
    static f32_pass *const one[4] = {NULL, a2_f32p_4x1, a2_f32p_4x2, a2_f32p_4x3},
                           *const shared[4] = {NULL, a2_f32p_4x1s, a2_f32p_4x2s, a2_f32p_4x3s};
    a2_tile(one, shared, pk, 0, x, ldx, T, n, y, ldy, acc, next);
}

/* One activation row at a time (the reference order of the tiles). */
T2 void synor__llm_a2_tile_f32(const float *w, size_t ws, const float *x, size_t ldx, int T, int n,
                               float *y, size_t ldy, int acc)
{
    for (int t = 0; t < T; t++)
        a2_f32_4x1(w, ws, x + (size_t)t * ldx, 0, n, y + (size_t)t * ldy, 0, acc, NULL, 0, 1);
}
#else
typedef int synor__llm_kern_f32_x86_empty;
#endif
