/* test_runtime_llm_kernels.c - the engine's matrix and element-wise
 * kernels (src/llm/kern*.c, pack.c) against the portable ones, on every
 * vectorized kernel table this CPU runs (an AVX-512 machine checks the
 * AVX2 table too): dot products, the F32 tiles and their packed layout,
 * the quantized tiles and packed products, attention, softmax and SwiGLU;
 * and a row's result in a batch bitwise what it gets alone, which a
 * speculative check and a serving step rely on. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/blas_api.h"
#include "llm/llm_internal.h"
#include "synor/error.h"
#include "synor/model.h"
#include "test.h"

/* v[0..n): deterministic values in (-1000 / div, 1000 / div), drawn from
 * the generator state *st (a 64-bit LCG). */
static void fill(float *v, int n, uint64_t *st, float div)
{
    for (int i = 0; i < n; i++) {
        *st = *st * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((int)(*st >> 40) % 2001 - 1000) / div;
    }
}

/* The vectorized kernel tables this CPU runs (AVX2 where it has it, and
 * AVX-512 where that is the table in use), so that a machine with AVX-512
 * tests the AVX2 kernels too; returns how many. */
static int vector_tables(const llm_kernels *t[2])
{
    int n = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        (synor__llm_kernels() == &synor__llm_kernels_avx2 ||
         synor__llm_kernels() == &synor__llm_kernels_avx512))
        t[n++] = &synor__llm_kernels_avx2;
    if (synor__llm_kernels() == &synor__llm_kernels_avx512)
        t[n++] = &synor__llm_kernels_avx512;
#else
    (void)t;
#endif
    return n;
}

/* T activation rows of C floats (x, row t at x + t * C) quantized as the
 * engine quantizes them for Q8_0 / Q4_0 products (blocks of 32, by the
 * portable kernel), with the c8 and the q + 128 rows the products read. */
static void quantize_rows(const float *x, int T, int C, int8_t *q, uint8_t *u, float *d,
                          float *c8, llm_qrow *qx)
{
    const llm_kernels *g = &synor__llm_kernels_generic;
    int NB = C / 32;
    for (int t = 0; t < T; t++) {
        g->quantize_row(x + t * C, q + t * C, d + t * NB, C, 32);
        synor__llm_block_c8(q + t * C, d + t * NB, NB, c8 + t * NB);
        for (int i = 0; i < C; i++)
            u[t * C + i] = (uint8_t)(q[t * C + i] ^ 0x80);
        qx[t] = (llm_qrow){.q = q + t * C, .d = d + t * NB, .u = u + t * C, .c8 = c8 + t * NB};
    }
}

/* check(k) on every vectorized table of this CPU that has the kernel
 * (has(k)), naming each; a message naming `what` when none has it. */
static void on_vector_tables(int (*has)(const llm_kernels *), void (*check)(const llm_kernels *),
                             const char *what)
{
    const llm_kernels *t[2];
    int n = vector_tables(t), ran = 0;
    for (int i = 0; i < n; i++)
        if (has(t[i])) {
            check(t[i]);
            fprintf(stderr, "  %s: checked\n", t[i]->isa);
            ran++;
        }
    if (!ran)
        fprintf(stderr, "  skipped: no kernel table here has %s\n", what);
}

static int has_tile_f32w(const llm_kernels *k) { return k->tile_f32w != NULL; }
static int has_tile_f32p(const llm_kernels *k) { return k->tile_f32p != NULL; }
static int has_tile_q(const llm_kernels *k) { return k->tile_q != NULL; }
static int has_attention(const llm_kernels *k) { return k->att_scores && k->att_mix; }
static int has_elementwise(const llm_kernels *k) { return k->softmax && k->swiglu; }

/* Every vectorized kernel this CPU runs agrees with the portable one. */
TEST(kernels_agree_with_portable)
{
    const llm_kernels *k = synor__llm_kernels(), *g = &synor__llm_kernels_generic;
    fprintf(stderr, "  kernels in use: %s\n", k->isa);
    enum { N = 288 };
    float w[N], x[N];
    uint64_t st = 7;
    for (int i = 0; i < N; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        w[i] = (float)((int)(st >> 40) % 2001 - 1000) / 700.0f;
        x[i] = (float)((int)(st >> 20) % 2001 - 1000) / 900.0f;
    }
    for (int n = 1; n <= N; n += 37)
        ASSERT_NEAR(k->dot_f32(w, x, n), g->dot_f32(w, x, n), 1e-5);
    int8_t q1[N], q2[N];
    float d1[N / 32], d2[N / 32];
    k->quantize_row(x, q1, d1, N, 32);
    g->quantize_row(x, q2, d2, N, 32);
    ASSERT(memcmp(q1, q2, N) == 0 && memcmp(d1, d2, sizeof d1) == 0);
    uint8_t b8[N / 32 * 34], b4[N / 32 * 18];
    uint16_t h[N], bf[N];
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q8_0, w, b8, N));
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q4_0, w, b4, N));
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_F16, w, h, N));
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_BF16, w, bf, N));
    ASSERT_NEAR(k->dot_q8_0(b8, q1, d1, N / 32), g->dot_q8_0(b8, q1, d1, N / 32), 1e-5);
    float c8[N / 32];
    synor__llm_block_c8(q1, d1, N / 32, c8);
    ASSERT_NEAR(k->dot_q4_0(b4, q1, d1, c8, N / 32), g->dot_q4_0(b4, q1, d1, c8, N / 32), 1e-5);
    ASSERT_NEAR(k->dot_f16(h, x, N), g->dot_f16(h, x, N), 1e-5);
    ASSERT_NEAR(k->dot_bf16(bf, x, N), g->dot_bf16(bf, x, N), 1e-5);
    float s64[N / 64];
    int8_t qg[N];
    g->quantize_row(w, qg, s64, N / 64 * 64, 64);
    int8_t xq[N];
    float xs[N / 64];
    g->quantize_row(x, xq, xs, N / 64 * 64, 64);
    ASSERT_NEAR(k->dot_q8g(qg, s64, xq, xs, N / 64 * 64, 64),
                g->dot_q8g(qg, s64, xq, xs, N / 64 * 64, 64), 1e-5);
}

/* The packed weights of batches (pack.c): the portable product on a
 * packed group and a table's (where it has one) against the file
 * layout's dot products, for Q8_0 and Q4_0, 1..11 activation rows, each
 * row bitwise what it gets alone; and
 * synor__llm_matmul over a row range that cuts groups (rows around the
 * whole groups go the file's way) against the same range unpacked. */
static void packed_products_agree_on(const llm_kernels *k)
{
    enum { R = 29, C = 96, NB = C / 32, TMAX = 11 };
    const llm_kernels *g = &synor__llm_kernels_generic;
    static float w[R * C], x[TMAX * C];
    uint64_t st = 11;
    fill(w, R * C, &st, 700.0f);
    fill(x, TMAX * C, &st, 900.0f);
    static int8_t q[TMAX * C];
    static uint8_t u[TMAX * C];
    static float d[TMAX * NB], c8[TMAX * NB];
    llm_qrow qx[TMAX];
    quantize_rows(x, TMAX, C, q, u, d, c8, qx);
    for (int q4 = 0; q4 < 2; q4++) {
        synor_ttype ty = q4 ? SYNOR_TTYPE_Q4_0 : SYNOR_TTYPE_Q8_0;
        size_t rb = (size_t)NB * (q4 ? 18 : 34);
        static uint8_t data[R * C * 2];
        for (int r = 0; r < R; r++)
            ASSERT_OK(synor_ttype_quantize(ty, w + r * C, data + r * rb, C));
        llm_mat m = {.type = ty, .rows = R, .cols = C, .data = data, .row_bytes = rb};
        ASSERT(synor__llm_packable(&m));
        uint8_t *pk = malloc(synor__llm_pack_size(&m));
        ASSERT(pk);
        synor__llm_pack(&m, pk);
        ASSERT(m.pack == pk);
        size_t gb = synor__llm_pack_size(&m) / (R / 8);
        /* Q4_0 packed as small as the file's rows: 18 bytes a row and
         * block (16 of values, 2 of fp16 scale), the scales padded to 64 */
        if (q4)
            ASSERT_EQ(gb, (size_t)(NB * 16 + 63) / 64 * 64 + (size_t)NB * 8 * 16);
        for (int T = 1; T <= TMAX; T++)
            for (int grp = 0; grp < R / 8; grp++) {
                float yr[TMAX * 8], yk[TMAX * 8];
                for (int i = 0; i < T * 8; i++)
                    yr[i] = yk[i] = 0.5f;
                synor__llm_tile_p_ref(pk + grp * gb, qx, T, NB, q4, yr, 8, 1);
                if (k->tile_p)
                    k->tile_p(pk + grp * gb, qx, T, NB, q4, yk, 8, 1);
                for (int t = 0; t < T; t++)
                    for (int j = 0; j < 8; j++) {
                        const uint8_t *row = data + (size_t)(grp * 8 + j) * rb;
                        float want = q4 ? g->dot_q4_0(row, qx[t].q, qx[t].d, qx[t].c8, NB)
                                        : g->dot_q8_0(row, qx[t].q, qx[t].d, NB);
                        float tol = 1e-4f * (1 + fabsf(want));
                        ASSERT(fabsf(yr[t * 8 + j] - (0.5f + want)) <= tol);
                        if (k->tile_p)
                            ASSERT(fabsf(yk[t * 8 + j] - (0.5f + want)) <= tol);
                    }
            }
        /* a row's sums are bitwise the same in a pass of any size (8, 4,
         * 3, 2 or 1 rows: a draft's catch-up of 2 rows, a check of 3-11)
         * as alone, one group and two */
        if (k->tile_p)
            for (int two = 0; two < 2 && (!two || k->tile_p2); two++)
                for (int T = 2; T <= TMAX; T++) {
                    float yb[TMAX * 16], y1[16];
                    for (int i = 0; i < T * 16; i++)
                        yb[i] = 0.25f * (float)(i % 5);
                    if (two)
                        k->tile_p2(pk, gb, qx, T, NB, q4, yb, 16, 1);
                    else
                        k->tile_p(pk, qx, T, NB, q4, yb, 16, 1);
                    for (int t = 0; t < T; t++) {
                        for (int i = 0; i < 16; i++)
                            y1[i] = 0.25f * (float)((t * 16 + i) % 5);
                        if (two)
                            k->tile_p2(pk, gb, qx + t, 1, NB, q4, y1, 16, 1);
                        else
                            k->tile_p(pk, qx + t, 1, NB, q4, y1, 16, 1);
                        ASSERT(memcmp(y1, yb + t * 16, (two ? 16 : 8) * sizeof(float)) == 0);
                    }
                }
        /* two groups at once: bitwise the two groups one at a time */
        if (k->tile_p2)
            for (int T = 1; T <= TMAX; T++) {
                float y1[TMAX * 16], y2[TMAX * 16];
                for (int i = 0; i < T * 16; i++)
                    y1[i] = y2[i] = 0.25f * (float)(i % 7);
                k->tile_p(pk, qx, T, NB, q4, y1, 16, 1);
                k->tile_p(pk + gb, qx, T, NB, q4, y1 + 8, 16, 1);
                k->tile_p2(pk, gb, qx, T, NB, q4, y2, 16, 1);
                ASSERT(memcmp(y1, y2, (size_t)T * 16 * sizeof(float)) == 0);
            }
        /* rows 3..26 of 29: a partial group on each side of two whole ones */
        static float yp[TMAX * R], yu[TMAX * R];
        llm_mat plain = m;
        plain.pack = NULL;
        for (int T = 1; T <= TMAX; T += 5) {
            synor__llm_matmul(k, &m, 3, 27, T, NULL, 0, qx, yp, R, 0, NULL);
            synor__llm_matmul(k, &plain, 3, 27, T, NULL, 0, qx, yu, R, 0, NULL);
            for (int t = 0; t < T; t++)
                for (int r = 3; r < 27; r++)
                    ASSERT(fabsf(yp[t * R + r] - yu[t * R + r]) <=
                           1e-4f * (1 + fabsf(yu[t * R + r])));
        }
        free(pk);
    }
}

/* On the kernel table in use (the portable product alone where it has no
 * tile_p), and on every other vectorized table this CPU runs that has one
 * (an AVX-512 machine checks the avx2 tile_p too). */
TEST(packed_products_agree)
{
    const llm_kernels *t[2];
    packed_products_agree_on(synor__llm_kernels());
    int n = vector_tables(t);
    for (int i = 0; i < n; i++)
        if (t[i]->tile_p) {
            if (t[i] != synor__llm_kernels())
                packed_products_agree_on(t[i]);
            fprintf(stderr, "  %s: checked\n", t[i]->isa);
        }
}

/* The F32 batch tile (where the CPU has it) against the portable dot
 * products: 1..13 activation rows, lengths with and without a tail. */
static void f32_batch_tile_agrees_on(const llm_kernels *k)
{
    const llm_kernels *g = &synor__llm_kernels_generic;
    enum { N = 100, TMAX = 13 };
    static float w[4 * N], x[TMAX * N], y[TMAX * 4];
    uint64_t st = 5;
    fill(w, 4 * N, &st, 700.0f);
    fill(x, TMAX * N, &st, 900.0f);
    for (int n = 96; n <= N; n += 4)
        for (int T = 1; T <= TMAX; T++)
            for (int acc = 0; acc < 2; acc++) {
                for (int i = 0; i < TMAX * 4; i++)
                    y[i] = 0.25f;
                k->tile_f32w(w, N, x, N, T, n, y, 4, acc, NULL);
                for (int t = 0; t < T; t++)
                    for (int r = 0; r < 4; r++) {
                        float want = g->dot_f32(w + r * N, x + t * N, n) + (acc ? 0.25f : 0);
                        ASSERT(fabsf(y[t * 4 + r] - want) <= 1e-4f * (1 + fabsf(want)));
                    }
                /* and bitwise what each row gets alone (the one-row tile):
                 * a batch (a speculative check) changes no row's result */
                if (k->tile_f32)
                    for (int t = 0; t < T; t++) {
                        float one[4] = {0.25f, 0.25f, 0.25f, 0.25f};
                        k->tile_f32(w, N, x + t * N, N, 1, n, one, 4, acc);
                        ASSERT(memcmp(one, y + t * 4, sizeof one) == 0);
                    }
            }
}

TEST(f32_batch_tile_agrees)
{
    on_vector_tables(has_tile_f32w, f32_batch_tile_agrees_on, "an F32 batch tile");
}

/* The quantized tile (tile_q, where a table has it) against the portable
 * dot products: 4 Q8_0 / Q4_0 weight rows in the file's layout times
 * T = 1..4 activation rows, with and without accumulating; one weight row
 * of constant values (every Q8_0 value 127: pair sums at the int16 limit
 * of vpmaddubsw). On the avx2 table each row's sums are bitwise what it
 * gets alone (T = 1) in any place of the tile. And synor__llm_matmul
 * (tiles and the rows around them) over rows [1, 14) of 15 for 1..9 rows. */
static void quantized_tile_agrees_on(const llm_kernels *k)
{
    enum { R = 15, C = 160, NB = C / 32, TMAX = 9 };
    const llm_kernels *g = &synor__llm_kernels_generic;
    static float w[R * C], x[TMAX * C];
    uint64_t st = 29;
    fill(w, R * C, &st, 700.0f);
    fill(x, TMAX * C, &st, 900.0f);
    for (int i = 0; i < C; i++)
        w[2 * C + i] = 0.75f;
    for (int i = 0; i < 32; i++)
        x[C + i] = -1.25f; /* row 1's first block all -127 */
    static int8_t q[TMAX * C];
    static uint8_t u[TMAX * C];
    static float d[TMAX * NB], c8[TMAX * NB];
    llm_qrow qx[TMAX];
    quantize_rows(x, TMAX, C, q, u, d, c8, qx);
    int alone = strcmp(k->isa, "avx2") == 0;
    for (int q4 = 0; q4 < 2; q4++) {
        synor_ttype ty = q4 ? SYNOR_TTYPE_Q4_0 : SYNOR_TTYPE_Q8_0;
        size_t rb = (size_t)NB * (q4 ? 18 : 34);
        static uint8_t data[R * C * 2];
        for (int r = 0; r < R; r++)
            ASSERT_OK(synor_ttype_quantize(ty, w + r * C, data + r * rb, C));
        for (int T = 1; T <= 4; T++)
            for (int acc = 0; acc < 2; acc++)
                for (int t0 = 0; t0 + T <= TMAX; t0 += 3) {
                    float y[4 * 5];
                    for (int i = 0; i < 4 * 5; i++)
                        y[i] = 0.25f * (float)(i % 3);
                    k->tile_q(data, rb, qx + t0, T, NB, q4, y, 5, acc);
                    for (int t = 0; t < 4; t++)
                        for (int r = 0; r < 5; r++) {
                            float got = y[t * 5 + r], base = 0.25f * (float)((t * 5 + r) % 3);
                            if (t >= T || r >= 4) { /* outside the tile: untouched */
                                ASSERT(got == base);
                                continue;
                            }
                            const uint8_t *row = data + (size_t)r * rb;
                            const llm_qrow *a = &qx[t0 + t];
                            float want = (q4 ? g->dot_q4_0(row, a->q, a->d, a->c8, NB)
                                             : g->dot_q8_0(row, a->q, a->d, NB)) +
                                         (acc ? base : 0);
                            ASSERT(fabsf(got - want) <= 1e-4f * (1 + fabsf(want)));
                            if (alone) {
                                float one[4] = {base, base, base, base};
                                k->tile_q(data, rb, a, 1, NB, q4, one, 4, acc);
                                ASSERT(memcmp(&one[r], &got, sizeof got) == 0);
                            }
                        }
                }
        llm_mat m = {.type = ty, .rows = R, .cols = C, .data = data, .row_bytes = rb};
        for (int T = 1; T <= TMAX; T++)
            for (int acc = 0; acc < 2; acc++) {
                static float y[TMAX * R];
                for (int i = 0; i < TMAX * R; i++)
                    y[i] = 0.25f;
                synor__llm_matmul(k, &m, 1, R - 1, T, NULL, 0, qx, y, R, acc, NULL);
                for (int t = 0; t < T; t++)
                    for (int r = 0; r < R; r++) {
                        float got = y[t * R + r];
                        if (r < 1 || r >= R - 1) {
                            ASSERT(got == 0.25f);
                            continue;
                        }
                        const uint8_t *row = data + (size_t)r * rb;
                        float want = (q4 ? g->dot_q4_0(row, qx[t].q, qx[t].d, qx[t].c8, NB)
                                         : g->dot_q8_0(row, qx[t].q, qx[t].d, NB)) +
                                     (acc ? 0.25f : 0);
                        ASSERT(fabsf(got - want) <= 1e-4f * (1 + fabsf(want)));
                    }
            }
    }
}

TEST(quantized_tile_agrees)
{
    on_vector_tables(has_tile_q, quantized_tile_agrees_on, "a quantized tile");
}

/* synor__llm_matmul on F32 weights for batches of every size the engine
 * uses (a decode row, serving steps, prefills longer than one block of
 * LLM_F32W_BLOCK rows) over a row range not a multiple of 4, with and
 * without accumulating, against the portable dot products. */
TEST(f32_batches_of_any_size_agree)
{
    enum { R = 23, C = 72, TMAX = 2 * LLM_F32W_BLOCK + 9 };
    const llm_kernels *k = synor__llm_kernels(), *g = &synor__llm_kernels_generic;
    static float w[R * C], x[TMAX * C], y[TMAX * R];
    uint64_t st = 17;
    fill(w, R * C, &st, 700.0f);
    fill(x, TMAX * C, &st, 900.0f);
    llm_mat m = {.type = SYNOR_TTYPE_F32, .rows = R, .cols = C, .data = (const uint8_t *)w,
                 .row_bytes = C * sizeof(float)};
    const int sizes[] = {1, 5, LLM_F32W_MIN_ROWS, 16, LLM_F32W_BLOCK, LLM_F32W_BLOCK + 1, TMAX};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int acc = 0; acc < 2; acc++) {
            int T = sizes[s];
            for (int i = 0; i < TMAX * R; i++)
                y[i] = 0.25f;
            synor__llm_matmul(k, &m, 2, 21, T, x, C, NULL, y, R, acc, NULL);
            for (int t = 0; t < T; t++)
                for (int r = 0; r < R; r++) {
                    float got = y[t * R + r];
                    if (r < 2 || r >= 21) { /* outside the range: untouched */
                        ASSERT(got == 0.25f);
                        continue;
                    }
                    float want = g->dot_f32(w + r * C, x + t * C, C) + (acc ? 0.25f : 0);
                    ASSERT(fabsf(got - want) <= 1e-4f * (1 + fabsf(want)));
                }
        }
}

/* A row's F32 product in a batch of T = 2..19 rows is bitwise what it gets
 * alone (T = 1), whatever tile or pass the batch takes and whatever the
 * weights prefetch (up to 6 rows the first pass prefetches 8 rows on,
 * beyond that every pass a share of the block 4 rows on: 19 rows are 4
 * passes, the last one a single row), for every kernel table this CPU
 * runs (portable, AVX2, AVX-512; the portable one up to 15 rows, below
 * OpenBLAS's threshold): a
 * speculative check (k + 1 rows) or a serving step changes no row's logits. Rows [1, 36) of 37 (a range not a multiple of 4, long
 * enough for the prefetch of LLM_F32W_AHEAD rows on), 200 columns (a
 * tail of 8), with and without accumulating. */
TEST(f32_rows_in_a_batch_are_bitwise_alone)
{
    enum { R = 37, C = 200, TMAX = 19 };
    const llm_kernels *tables[3] = {&synor__llm_kernels_generic, NULL, NULL};
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        tables[1] = &synor__llm_kernels_avx2;
    if (synor__llm_kernels() == &synor__llm_kernels_avx512)
        tables[2] = &synor__llm_kernels_avx512;
#endif
    static float w[R * C], x[TMAX * C], y[TMAX * R], one[R];
    uint64_t st = 23;
    fill(w, R * C, &st, 700.0f);
    fill(x, TMAX * C, &st, 900.0f);
    llm_mat m = {.type = SYNOR_TTYPE_F32, .rows = R, .cols = C, .data = (const uint8_t *)w,
                 .row_bytes = C * sizeof(float)};
    int ran = 0;
    for (int k = 0; k < 3; k++) {
        if (!tables[k])
            continue;
        ran++;
        /* without the F32 tile, 16 rows or more may go to OpenBLAS's SGEMM
         * (its own order): the portable table up to 15 */
        int tmax = tables[k]->tile_f32w ? TMAX : 15;
        for (int T = 2; T <= tmax; T++)
            for (int acc = 0; acc < 2; acc++) {
                for (int i = 0; i < TMAX * R; i++)
                    y[i] = 0.5f + (float)(i % 7);
                synor__llm_matmul(tables[k], &m, 1, R - 1, T, x, C, NULL, y, R, acc, NULL);
                for (int t = 0; t < T; t++) {
                    for (int r = 0; r < R; r++)
                        one[r] = 0.5f + (float)((t * R + r) % 7);
                    synor__llm_matmul(tables[k], &m, 1, R - 1, 1, x + t * C, C, NULL, one, R, acc,
                                      NULL);
                    ASSERT(memcmp(one, y + t * R, sizeof one) == 0);
                }
            }
    }
    fprintf(stderr, "  %d kernel table(s) checked\n", ran);
}

/* F32 weights packed in groups of 4 rows (pack.c), where the kernels
 * have tile_f32p: synor__llm_matmul gives bitwise what it gives on the
 * file's layout, for batches of 1..19 rows (one pass, several passes, the
 * prefetch of the next group), over ranges that start on a group (the
 * packed path), inside one (the file's layout) and end past the last
 * whole group; 203 columns (a tail of 3, zero-padded in the packing). */
static void f32_packed_is_bitwise_unpacked_on(const llm_kernels *k)
{
    enum { R = 38, C = 203, TMAX = 19 };
    static float w[R * C], x[TMAX * C], yp[TMAX * R], yu[TMAX * R];
    uint64_t st = 29;
    fill(w, R * C, &st, 700.0f);
    fill(x, TMAX * C, &st, 900.0f);
    llm_mat m = {.type = SYNOR_TTYPE_F32, .rows = R, .cols = C, .data = (const uint8_t *)w,
                 .row_bytes = C * sizeof(float)};
    ASSERT(synor__llm_packable(&m));
    ASSERT_EQ(synor__llm_pack_size(&m), (size_t)(R / 4) * 4 * 208 * sizeof(float));
    uint8_t *pk = malloc(synor__llm_pack_size(&m));
    ASSERT(pk != NULL);
    llm_mat plain = m;
    synor__llm_pack(&m, pk);
    ASSERT(m.pack == pk);
    /* the layout: row j of group g, column c at g * 4 * 208 + (c / 8) * 32 + j * 8 + c % 8 */
    const float *pf = (const float *)(const void *)pk;
    ASSERT(pf[1 * 832 + (200 / 8) * 32 + 2 * 8 + 1] == w[(4 + 2) * C + 201]);
    ASSERT(pf[1 * 832 + (200 / 8) * 32 + 2 * 8 + 5] == 0.0f);
    static const int ranges[][2] = {{0, R}, {4, 36}, {1, 35}, {16, 38}};
    for (int T = 1; T <= TMAX; T++)
        for (int g = 0; g < 4; g++)
            for (int acc = 0; acc < 2; acc++) {
                for (int i = 0; i < TMAX * R; i++)
                    yp[i] = yu[i] = 0.5f + (float)(i % 7);
                synor__llm_matmul(k, &m, ranges[g][0], ranges[g][1], T, x, C, NULL, yp, R, acc,
                                  NULL);
                synor__llm_matmul(k, &plain, ranges[g][0], ranges[g][1], T, x, C, NULL, yu, R,
                                  acc, NULL);
                ASSERT(memcmp(yp, yu, sizeof yp) == 0);
            }
    free(pk);
}

TEST(f32_packed_is_bitwise_unpacked)
{
    on_vector_tables(has_tile_f32p, f32_packed_is_bitwise_unpacked_on, "packed F32 weights");
}

/* A packed F32 product no longer reads the packed rows of the file
 * (pack.c lets go of their pages): SGEMM's batches (where OpenBLAS is
 * loaded: the portable table from 16 rows, the avx2 table its blocks of
 * gemm_block rows: here one at row 0 of as many rows, and one at row 8, the
 * 8 rows before it through the tile, which reads the copy too) unpack slices
 * of the copy, and
 * synor__llm_mat_row reads a row from it. The file's packed rows are poisoned with NaN here (the
 * tail rows past the last whole group stay readable): the products and
 * rows must still be those of the plain matrix. 300 rows: slices of 128,
 * 128 and 40 packed rows, then the tail of 0 (300 = 75 groups); 298 rows:
 * a tail of 2. */
static void f32_sgemm_reads_the_copy_on(const llm_kernels *k, int rows, int T,
                                        const llm_gemm_blocks *blocks)
{
    enum { C = 203, RMAX = 300, TMAX = 72 };
    static float w[RMAX * C], poison[RMAX * C], x[TMAX * C], yp[TMAX * RMAX], yu[TMAX * RMAX];
    static float row[C];
    uint64_t st = 31;
    fill(w, rows * C, &st, 700.0f);
    fill(x, TMAX * C, &st, 900.0f);
    llm_mat m = {.type = SYNOR_TTYPE_F32, .rows = rows, .cols = C, .data = (const uint8_t *)w,
                 .row_bytes = C * sizeof(float)};
    llm_mat plain = m;
    uint8_t *pk = malloc(synor__llm_pack_size(&m));
    ASSERT(pk != NULL);
    synor__llm_pack(&m, pk);
    int whole = rows / 4 * 4;
    for (int i = 0; i < rows * C; i++)
        poison[i] = i < whole * C ? NAN : w[i];
    m.data = (const uint8_t *)poison;
    static const int ranges[][2] = {{0, RMAX}, {16, 288}, {3, 131}};
    /* rows through the tile read the copy from a range's first whole
     * group only (the engine's ranges start on one): not from row 3 */
    int nranges = blocks && blocks->start[0] > 0 ? 2 : 3;
    for (int g = 0; g < nranges; g++)
        for (int acc = 0; acc < 2; acc++) {
            int r0 = ranges[g][0], r1 = ranges[g][1] < rows ? ranges[g][1] : rows;
            for (int i = 0; i < TMAX * RMAX; i++)
                yp[i] = yu[i] = 0.25f + (float)(i % 5);
            synor__llm_matmul(k, &m, r0, r1, T, x, C, NULL, yp, RMAX, acc, blocks);
            synor__llm_matmul(k, &plain, r0, r1, T, x, C, NULL, yu, RMAX, acc, blocks);
            for (int t = 0; t < T; t++)
                for (int r = r0; r < r1; r++) {
                    float a = yp[t * RMAX + r], b = yu[t * RMAX + r];
                    ASSERT(isfinite(a));
                    ASSERT(fabsf(a - b) <= 1e-5f * (1 + fabsf(b)));
                }
        }
    for (int r = 0; r < rows; r += 37) {
        synor__llm_mat_row(&m, r, row);
        ASSERT(memcmp(row, w + (size_t)r * C, sizeof row) == 0);
    }
    free(pk);
}

TEST(f32_sgemm_reads_the_packed_copy)
{
    if (!synor__blas()) {
        fprintf(stderr, "  skipped: OpenBLAS is not loaded here\n");
        return;
    }
    synor__blas_set_threads(1); /* as a runtime runs it (runtime.c) */
    f32_sgemm_reads_the_copy_on(&synor__llm_kernels_generic, 300, 16, NULL);
    f32_sgemm_reads_the_copy_on(&synor__llm_kernels_generic, 298, 40, NULL);
    const llm_kernels *t[2];
    int n = vector_tables(t);
    static const int at0[] = {0}, at8[] = {8};
    const llm_gemm_blocks one = {at0, 1}, late = {at8, 1};
    for (int i = 0; i < n; i++)
        if (t[i]->gemm_block > 0 && t[i]->gemm_block <= 64) {
            f32_sgemm_reads_the_copy_on(t[i], 300, t[i]->gemm_block, &one);
            f32_sgemm_reads_the_copy_on(t[i], 298, t[i]->gemm_block + 8, &late);
            fprintf(stderr, "  %s: checked\n", t[i]->isa);
        }
}

/* SGEMM blocks (the avx2 table, where OpenBLAS is loaded): in a batch of
 * 5 + 3m + 17 rows (m = gemm_block) with blocks at rows 5, 5 + m (next to
 * each other: one call where synor__llm_sgemm_merges) and 5 + 2m + 11,
 * every row outside them is bitwise what it gets alone, and every row
 * inside them bitwise what its block gives alone - whatever else the batch
 * carries, and whether or not neighbouring blocks share a call.
 * Batch-sized SGEMM (all the rows in one call) fails the first half:
 * OpenBLAS's order of the sums differs from the tile's, and with the
 * call's rows. */
TEST(f32_rows_outside_sgemm_blocks_are_bitwise_alone)
{
    enum { R = 72, C = 200 };
    if (!synor__blas()) {
        fprintf(stderr, "  skipped: OpenBLAS is not loaded here\n");
        return;
    }
    synor__blas_set_threads(1); /* as a runtime runs it (runtime.c) */
    const llm_kernels *t[2];
    int nt = vector_tables(t), ran = 0;
    for (int i = 0; i < nt; i++) {
        const llm_kernels *k = t[i];
        int m = k->gemm_block;
        if (m <= 0)
            continue;
        ran++;
        int T = 5 + 3 * m + 17, at[3] = {5, 5 + m, 5 + 2 * m + 11}, at0[1] = {0};
        const llm_gemm_blocks blocks = {at, 3}, alone = {at0, 1};
        float *w = malloc(sizeof(float) * R * C), *x = malloc(sizeof(float) * (size_t)T * C);
        float *y = malloc(sizeof(float) * (size_t)T * R), *one = malloc(sizeof(float) * m * R);
        ASSERT(w && x && y && one);
        uint64_t st = 41;
        fill(w, R * C, &st, 700.0f);
        fill(x, T * C, &st, 900.0f);
        llm_mat mat = {.type = SYNOR_TTYPE_F32, .rows = R, .cols = C,
                       .data = (const uint8_t *)w, .row_bytes = C * sizeof(float)};
        for (int acc = 0; acc < 2; acc++) {
            for (int j = 0; j < T * R; j++)
                y[j] = 0.5f + (float)(j % 7);
            synor__llm_matmul(k, &mat, 0, R, T, x, C, NULL, y, R, acc, &blocks);
            for (int r = 0; r < T; r++) {
                int b = -1;
                for (int j = 0; j < 3; j++)
                    if (r >= at[j] && r < at[j] + m)
                        b = at[j];
                if (b < 0) {
                    for (int j = 0; j < R; j++)
                        one[j] = 0.5f + (float)((r * R + j) % 7);
                    synor__llm_matmul(k, &mat, 0, R, 1, x + r * C, C, NULL, one, R, acc, NULL);
                    ASSERT(memcmp(one, y + r * R, R * sizeof(float)) == 0);
                } else if (r == b) {
                    for (int j = 0; j < m * R; j++)
                        one[j] = 0.5f + (float)(((r + j / R) * R + j % R) % 7);
                    synor__llm_matmul(k, &mat, 0, R, m, x + r * C, C, NULL, one, R, acc, &alone);
                    ASSERT(memcmp(one, y + r * R, (size_t)m * R * sizeof(float)) == 0);
                }
            }
        }
        fprintf(stderr, "  %s: blocks of %d rows, neighbours %s\n", k->isa, m,
                synor__llm_sgemm_merges(k) ? "in one call" : "a call each");
        free(w), free(x), free(y), free(one);
    }
    if (!ran)
        fprintf(stderr, "  skipped: no kernel table here sends blocks to SGEMM (avx2)\n");
}

/* The attention kernels (where the CPU has them) against the portable
 * loops: heads of 16, 64 and 20 floats (no vector path), 1..16 positions
 * a stride apart. */
static void attention_kernels_agree_on(const llm_kernels *k)
{
    const llm_kernels *g = &synor__llm_kernels_generic;
    enum { HS = 64, KS = 72, NPOS = 16 };
    static float q[HS], kv[NPOS * KS], a[NPOS], s1[NPOS], o1[HS], o2[HS];
    uint64_t st = 9;
    for (int i = 0; i < NPOS * KS; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        kv[i] = (float)((int)(st >> 40) % 2001 - 1000) / 700.0f;
        if (i < HS)
            q[i] = kv[i] * 0.3f;
        if (i < NPOS)
            a[i] = (float)((int)(st >> 20) % 1000) / 1000.0f;
    }
    static const int heads[] = {16, 64, 20};
    for (int h = 0; h < 3; h++)
        for (int np = 1; np <= NPOS; np++) {
            int hs = heads[h];
            k->att_scores(q, kv, KS, np, hs, 0.125f, s1);
            for (int p = 0; p < np; p++) {
                float want = g->dot_f32(q, kv + p * KS, hs) * 0.125f;
                ASSERT(fabsf(s1[p] - want) <= 1e-5f * (1 + fabsf(want)));
            }
            for (int i = 0; i < hs; i++)
                o1[i] = o2[i] = 0.5f;
            k->att_mix(a, kv, KS, np, hs, o1);
            for (int p = 0; p < np; p++)
                g->axpy(a[p], kv + p * KS, o2, hs);
            for (int i = 0; i < hs; i++)
                ASSERT(fabsf(o1[i] - o2[i]) <= 1e-5f * (1 + fabsf(o2[i])));
        }
}

TEST(attention_kernels_agree)
{
    on_vector_tables(has_attention, attention_kernels_agree_on, "attention kernels");
}

/* The vectorized softmax and SwiGLU against the portable loops (expf):
 * within 1e-6 relative on values from the tiny to the saturating, every
 * length around the vector width, exp's range ends (0, inf) kept, and an
 * element's result the same wherever it sits in the row. */
static void elementwise_kernels_agree_on(const llm_kernels *k)
{
    enum { N = 70 };
    static float x[N], a[N], b[N], h3[N];
    uint64_t st = 5;
    for (int i = 0; i < N; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((int)(st >> 40) % 20001 - 10000) / 500.0f; /* -20 .. 20 */
        h3[i] = (float)((int)(st >> 20) % 2001 - 1000) / 300.0f;
    }
    x[3] = 95.0f;   /* e^-95 underflows in SiLU's denominator: silu(x) = x */
    x[4] = -95.0f;  /* e^95 overflows: silu = -0 */
    x[5] = 0.0f;
    for (int n = 1; n <= N; n++) {
        memcpy(a, x, sizeof x);
        memcpy(b, x, sizeof x);
        k->softmax(a, n);
        synor__llm_softmax(b, n);
        for (int i = 0; i < n; i++)
            ASSERT(fabsf(a[i] - b[i]) <= 1e-6f * fabsf(b[i]) + 1e-30f);
        memcpy(a, x, sizeof x);
        memcpy(b, x, sizeof x);
        k->swiglu(a, h3, n);
        synor__llm_swiglu(b, h3, n);
        for (int i = 0; i < n; i++)
            ASSERT(fabsf(a[i] - b[i]) <= 1e-6f * fabsf(b[i]) + 1e-30f);
    }
    /* element-wise: the same value at another place gives the same bits */
    memcpy(a, x, sizeof x);
    k->swiglu(a, h3, N);
    for (int i = 0; i < N; i++) {
        float one = x[i];
        k->swiglu(&one, &h3[i], 1);
        ASSERT(memcmp(&one, &a[i], sizeof one) == 0);
    }
}

TEST(elementwise_kernels_agree)
{
    on_vector_tables(has_elementwise, elementwise_kernels_agree_on, "element-wise kernels");
}

/* The vectorized sampler draw against the portable loop: the same token,
 * bit for bit, for rows of every length around the vector width and many
 * draws, ties included (a row of equal logits). */
static int has_gumbel(const llm_kernels *k) { return k->gumbel_argmax != NULL; }

static void gumbel_agrees_on(const llm_kernels *k)
{
    enum { N = 70 };
    static float l[N], flat[N];
    uint64_t st = 11;
    for (int i = 0; i < N; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        l[i] = (float)((int)(st >> 40) % 2001 - 1000) / 250.0f;
        flat[i] = 1.5f;
    }
    for (int n = 1; n <= N; n++)
        for (int d = 0; d < 200; d++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            float it = d % 3 == 0 ? 1.0f : d % 3 == 1 ? 1.25f : 3.0f;
            ASSERT_EQ(k->gumbel_argmax(l, n, it, st), synor__llm_gumbel_argmax(l, n, it, st));
            ASSERT_EQ(k->gumbel_argmax(flat, n, it, st), synor__llm_gumbel_argmax(flat, n, it, st));
        }
}

TEST(gumbel_draw_agrees)
{
    on_vector_tables(has_gumbel, gumbel_agrees_on, "the sampler's draw");
}

TEST_MAIN(kernels_agree_with_portable, packed_products_agree, quantized_tile_agrees, f32_batch_tile_agrees, f32_batches_of_any_size_agree, f32_rows_in_a_batch_are_bitwise_alone, f32_packed_is_bitwise_unpacked, f32_sgemm_reads_the_packed_copy, f32_rows_outside_sgemm_blocks_are_bitwise_alone, attention_kernels_agree, elementwise_kernels_agree, gumbel_draw_agrees)
