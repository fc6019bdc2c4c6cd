/* kern.c - the engine's matrix kernels: the portable ones, the choice of
 * the vectorized ones for this CPU, and the matrix-times-rows driver.
 *
 * Every product is a sum of dot products of a weight row with an
 * activation row. Float weights (F32, F16, BF16) meet fp32 activations;
 * quantized weights (Q8_0, Q4_0, llama2.c's Q8 groups) meet activations
 * quantized the same way, so the inner loop is integer multiply-adds and
 * each block's sum is scaled once (llama.cpp's and runq.c's scheme). */
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "common/blas_api.h"
#include "common/common.h"
#include "llm/llm_internal.h"
#include "synor/model.h"

static float gen_dot_f32(const float *w, const float *x, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++)
        s += w[i] * x[i];
    return s;
}

static float gen_dot_f16(const uint16_t *w, const float *x, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++)
        s += synor_f16_to_f32(w[i]) * x[i];
    return s;
}

static float gen_dot_bf16(const uint16_t *w, const float *x, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++)
        s += synor_bf16_to_f32(w[i]) * x[i];
    return s;
}

static float block_scale(const uint8_t *b)
{
    uint16_t h;
    memcpy(&h, b, 2);
    return synor_f16_to_f32(h);
}

static float gen_dot_q8_0(const uint8_t *w, const int8_t *xq, const float *xd, int nb)
{
    float s = 0;
    for (int b = 0; b < nb; b++, w += 34) {
        const int8_t *q = (const int8_t *)(w + 2);
        int acc = 0;
        for (int j = 0; j < SYNOR_QK; j++)
            acc += q[j] * xq[b * SYNOR_QK + j];
        s += (float)acc * block_scale(w) * xd[b];
    }
    return s;
}

static float gen_dot_q4_0(const uint8_t *w, const int8_t *xq, const float *xd, const float *c8,
                          int nb)
{
    (void)c8;
    float s = 0;
    for (int b = 0; b < nb; b++, w += 18) {
        const uint8_t *q = w + 2;
        const int8_t *x = xq + b * SYNOR_QK;
        int acc = 0;
        for (int j = 0; j < SYNOR_QK / 2; j++) {
            acc += ((q[j] & 0x0F) - 8) * x[j];
            acc += ((q[j] >> 4) - 8) * x[j + SYNOR_QK / 2];
        }
        s += (float)acc * block_scale(w) * xd[b];
    }
    return s;
}

static float gen_dot_q8g(const int8_t *wq, const float *ws, const int8_t *xq, const float *xd,
                         int n, int gs)
{
    float s = 0;
    for (int g = 0; g < n / gs; g++) {
        int acc = 0;
        for (int j = 0; j < gs; j++)
            acc += wq[g * gs + j] * xq[g * gs + j];
        s += (float)acc * ws[g] * xd[g];
    }
    return s;
}

/* block 32 (Q8_0/Q4_0 activations): as llama.cpp quantizes them on x86 -
 * x * (127 / amax) rounded to nearest even, the scale rounded through F16
 * as its blocks store it - so products agree with llama.cpp's. Other
 * blocks (llama2.c's Q8 groups): as runq.c - x / (amax / 127) rounded half
 * away from zero, an fp32 scale. */
static void gen_quantize_row(const float *x, int8_t *q, float *d, int n, int block)
{
    for (int b = 0; b < n / block; b++) {
        const float *xb = x + b * block;
        float amax = 0;
        for (int j = 0; j < block; j++)
            amax = fmaxf(amax, fabsf(xb[j]));
        float s = amax / 127.0f;
        if (block == SYNOR_QK) {
            float id = amax != 0 ? 127.0f / amax : 0.0f;
            for (int j = 0; j < block; j++)
                q[b * block + j] = (int8_t)nearbyintf(xb[j] * id);
            d[b] = synor_f16_to_f32(synor_f32_to_f16(s));
        } else {
            for (int j = 0; j < block; j++)
                q[b * block + j] = (int8_t)(s != 0 ? roundf(xb[j] / s) : 0.0f);
            d[b] = s;
        }
    }
}

static void gen_axpy(float a, const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* run.c's softmax: the max taken out, expf, a sequential sum, a division
 * (not a reciprocal). */
void synor__llm_softmax(float *x, int n)
{
    float mx = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    for (int i = 0; i < n; i++)
        x[i] /= sum;
}

void synor__llm_swiglu(float *h1, const float *h3, int n)
{
    for (int i = 0; i < n; i++) {
        float v = h1[i];
        v *= 1.0f / (1.0f + expf(-v));
        h1[i] = v * h3[i];
    }
}

/* Attention over an F16 cache: the F32 loops of ctx.c, each element
 * converted on the way. */
static void gen_att_scores_f16(const float *q, const uint16_t *k, size_t ks, int np, int hs,
                               float scale, float *out)
{
    for (int p = 0; p < np; p++)
        out[p] = gen_dot_f16(k + (size_t)p * ks, q, hs) * scale;
}

static void gen_att_mix_f16(const float *a, const uint16_t *v, size_t vs, int np, int hs,
                            float *o)
{
    for (int p = 0; p < np; p++)
        for (int i = 0; i < hs; i++)
            o[i] += a[p] * synor_f16_to_f32(v[(size_t)p * vs + i]);
}

static void gen_to_f16(const float *x, uint16_t *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = synor_f32_to_f16(x[i]);
}

const llm_kernels synor__llm_kernels_generic = {
    .isa = "generic",
    .dot_f32 = gen_dot_f32,
    .dot_f16 = gen_dot_f16,
    .dot_bf16 = gen_dot_bf16,
    .dot_q8_0 = gen_dot_q8_0,
    .dot_q4_0 = gen_dot_q4_0,
    .dot_q8g = gen_dot_q8g,
    .quantize_row = gen_quantize_row,
    .axpy = gen_axpy,
    .att_scores_f16 = gen_att_scores_f16,
    .att_mix_f16 = gen_att_mix_f16,
    .to_f16 = gen_to_f16,
};

#if defined(__x86_64__)
/* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does
 * not know the name. */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1u);
}
#endif

static const llm_kernels *choose(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
        has_f16c() && __builtin_cpu_supports("fma"))
        return &synor__llm_kernels_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c())
        return &synor__llm_kernels_avx2;
#endif
    return &synor__llm_kernels_generic;
}

/* Chosen once: CPUID (has_f16c) traps to the hypervisor in a VM, a few
 * microseconds, and the sampler asks at every draw. Threads racing on the
 * first call store the same table. */
const llm_kernels *synor__llm_kernels(void)
{
    static _Atomic(const llm_kernels *) chosen;
    const llm_kernels *k = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (!k) {
        k = choose();
        atomic_store_explicit(&chosen, k, memory_order_relaxed);
    }
    return k;
}

const char *synor_llm_isa(void) { return synor__llm_kernels()->isa; }

void synor__llm_block_c8(const int8_t *q, const float *d, int nb, float *c8)
{
    for (int b = 0; b < nb; b++) {
        int sum = 0;
        for (int j = 0; j < SYNOR_QK; j++)
            sum += q[b * SYNOR_QK + j];
        c8[b] = 8.0f * d[b] * (float)sum;
    }
}

int synor__llm_act_block(const llm_mat *w)
{
    switch (w->type) {
    case SYNOR_TTYPE_Q8_0:
    case SYNOR_TTYPE_Q4_0:
        return SYNOR_QK;
    case LLM_TTYPE_Q8G:
        return w->group;
    default:
        return 0;
    }
}

static float row_dot(const llm_kernels *k, const llm_mat *w, int r, const float *x,
                     const llm_qrow *qx)
{
    const uint8_t *row = w->data + (size_t)r * w->row_bytes;
    switch (w->type) {
    case SYNOR_TTYPE_F32:
        return k->dot_f32((const float *)(const void *)row, x, w->cols);
    case SYNOR_TTYPE_F16:
        return k->dot_f16((const uint16_t *)(const void *)row, x, w->cols);
    case SYNOR_TTYPE_BF16:
        return k->dot_bf16((const uint16_t *)(const void *)row, x, w->cols);
    case SYNOR_TTYPE_Q8_0:
        return k->dot_q8_0(row, qx->q, qx->d, w->cols / SYNOR_QK);
    case SYNOR_TTYPE_Q4_0:
        return k->dot_q4_0(row, qx->q, qx->d, qx->c8, w->cols / SYNOR_QK);
    case LLM_TTYPE_Q8G:
        return k->dot_q8g((const int8_t *)row, w->gscale + (size_t)r * (w->cols / w->group), qx->q,
                          qx->d, w->cols, w->group);
    default:
        return 0;
    }
}

/* Whether OpenBLAS's SGEMM gives a block of m activation rows the same
 * bits in one call with the block after it as in a call of its own - so
 * that blocks next to each other may share a call, which is faster (one
 * call of 512 rows ran 10-15% faster than eight of 64 on a Zen 3 VM). Its
 * AVX2 kernels sum rows in panels of 12 (a row's sums depend on whether
 * its panel is whole), so for blocks of a multiple of 12 they do; found
 * once per process (random rows, five shapes; a GEMM's order of the sums
 * depends on the shapes, not on the values), else every block its call.
 * Found as OpenBLAS runs then: single-threaded under a runtime (runtime.c;
 * a call split over threads splits its rows otherwise). */
static int merge_found = -1;

static int sgemm_merges_once(const synor__blas_api *blas, int m)
{
    /* columns, weight rows: small and stories110M-sized products (a
     * library may take another path for small ones) */
    static const int shape[][2] = {{64, 32}, {96, 48}, {200, 72}, {768, 128}, {2048, 128}};
    int same = 1;
    for (size_t s = 0; s < sizeof shape / sizeof shape[0] && same; s++) {
        int K = shape[s][0], N = shape[s][1];
        size_t nx = (size_t)2 * m * K, nw = (size_t)N * K, ny = (size_t)2 * m * N;
        float *x = synor__malloc((nx + nw + 2 * ny) * sizeof *x);
        if (!x)
            return 0;
        float *w = x + nx, *one = w + nw, *two = one + ny;
        uint32_t r = 12345;
        for (size_t i = 0; i < nx + nw; i++) {
            r = r * 1664525u + 1013904223u;
            x[i] = (float)(r >> 8) * (1.0f / 16777216.0f) - 0.5f;
        }
        blas->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 2 * m, N, K, 1.0f, x, K, w, K, 0.0f,
                    one, N);
        for (int b = 0; b < 2; b++)
            blas->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, N, K, 1.0f,
                        x + (size_t)b * m * K, K, w, K, 0.0f, two + (size_t)b * m * N, N);
        same = memcmp(one, two, ny * sizeof *one) == 0;
        synor__free(x);
    }
    return same;
}

static int sgemm_merges(const synor__blas_api *blas, int m)
{
    int f = __atomic_load_n(&merge_found, __ATOMIC_ACQUIRE);
    if (f < 0) { /* racing threads find the same */
        f = sgemm_merges_once(blas, m);
        __atomic_store_n(&merge_found, f, __ATOMIC_RELEASE);
    }
    return f;
}

int synor__llm_sgemm_merges(const llm_kernels *k)
{
    const synor__blas_api *blas = synor__blas();
    return k->gemm_block > 0 && blas && sgemm_merges(blas, k->gemm_block);
}

#define LLM_SGEMM_SLICE 128

/* SGEMM of `rows` weight rows (wr, ldw floats apart) against nb blocks of
 * m activation rows each (block i at row start[i]; start NULL: one block
 * at row 0): one call per run of blocks next to each other where merge,
 * else one per block. */
static void sgemm_runs(const synor__blas_api *blas, const int *start, int nb, int m, int merge,
                       int rows, int cols, const float *wr, size_t ldw, const float *x,
                       size_t ldx, float *y, size_t ldy, float beta)
{
    for (int i = 0; i < nb;) {
        int j = i + 1;
        while (merge && start && j < nb && start[j] == start[j - 1] + m)
            j++;
        size_t t = start ? (size_t)start[i] : 0;
        blas->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (j - i) * m, rows, cols, 1.0f,
                    x + t * ldx, (blasint)ldx, wr, (blasint)ldw, beta, y + t * ldy,
                    (blasint)ldy);
        i = j;
    }
}

/* sgemm_runs over weight rows [r0, r1) of w: rows [r0, p1) (p1 <= r1,
 * groups of 4) from its packed F32 copy pk, in slices of at most
 * LLM_SGEMM_SLICE rows unpacked into buf (LLM_SGEMM_SLICE x cols floats,
 * in L2; the copy is read once for all the blocks); the rest, or all
 * where buf is NULL, from the file's rows. */
static void sgemm_rows(const synor__blas_api *blas, const llm_mat *w, const float *pk,
                       float *buf, int r0, int p1, int r1, const int *start, int nb, int m,
                       int merge, const float *x, size_t ldx, float *y, size_t ldy,
                       int accumulate)
{
    float beta = accumulate ? 1.0f : 0.0f;
    for (int a = r0; buf && pk && a < p1; a += LLM_SGEMM_SLICE) {
        int b = p1 - a < LLM_SGEMM_SLICE ? p1 : a + LLM_SGEMM_SLICE;
        synor__llm_unpack_f32(w, pk, a, b, buf, (size_t)w->cols);
        sgemm_runs(blas, start, nb, m, merge, b - a, w->cols, buf, (size_t)w->cols, x, ldx,
                   y + a, ldy, beta);
    }
    if (buf && pk)
        r0 = p1;
    if (r0 < r1)
        sgemm_runs(blas, start, nb, m, merge, r1 - r0, w->cols,
                   (const float *)(const void *)(w->data + (size_t)r0 * w->row_bytes),
                   w->row_bytes / sizeof(float), x, ldx, y + r0, ldy, beta);
}

/* A buffer for sgemm_rows' slices of w, or NULL (no memory: the file's
 * rows are read then). */
static float *slice_buffer(const llm_mat *w)
{
    return synor__malloc((size_t)LLM_SGEMM_SLICE * (size_t)w->cols * sizeof(float));
}

/* w's packed F32 copy, which holds rows [r0, *p1) of [r0, r1) (its whole
 * groups of 4; groups: only where r0 starts one), or NULL (none). */
static const float *f32_pack(const llm_mat *w, int r0, int r1, int groups, int *p1)
{
    const float *pk = (const float *)(const void *)__atomic_load_n(&w->pack, __ATOMIC_ACQUIRE);
    int e = r1 < w->rows / 4 * 4 ? r1 : w->rows / 4 * 4;
    *p1 = pk && (!groups || r0 % 4 == 0) && r0 < e ? e : r0;
    return *p1 > r0 ? pk : NULL;
}

void synor__llm_matmul(const llm_kernels *k, const llm_mat *w, int r0, int r1, int n,
                       const float *x, size_t ldx, const llm_qrow *qx, float *y, size_t ldy,
                       int accumulate, const llm_gemm_blocks *blocks)
{
    const synor__blas_api *blas = NULL;
    /* F32 prompt rows in blocks (tables with gemm_block): OpenBLAS's SGEMM,
     * faster than the tile for prompts on the avx2 table's CPUs
     * (docs/BENCHMARKS.md); the rows around the blocks as below. A block's
     * sums are in OpenBLAS's order, which depends on the call's rows
     * (docs/LLM.md): so the blocks are fixed by position, and share a call
     * only where sgemm_merges found that changes no bit. */
    if (w->type == SYNOR_TTYPE_F32 && blocks && blocks->n > 0 && k->gemm_block &&
        (blas = synor__blas()) != NULL) {
        int m = k->gemm_block, nb = blocks->n, merge = sgemm_merges(blas, m);
        const int *start = blocks->start;
        /* a slice of weight rows at a time: the tile's rows read it just
         * after SGEMM did (from the caches, not memory again) */
        float *buf = slice_buffer(w);
        for (int a = r0; a < r1; a += LLM_SGEMM_SLICE) {
            int b = r1 - a < LLM_SGEMM_SLICE ? r1 : a + LLM_SGEMM_SLICE, p1, t = 0;
            const float *pk = f32_pack(w, a, b, 0, &p1);
            sgemm_rows(blas, w, pk, buf, a, p1, b, start, nb, m, merge, x, ldx, y, ldy,
                       accumulate);
            for (int i = 0; i <= nb; i++) {
                int e = i < nb ? start[i] : n;
                if (e > t)
                    synor__llm_matmul(k, w, a, b, e - t, x + (size_t)t * ldx, ldx, NULL,
                                      y + (size_t)t * ldy, ldy, accumulate, NULL);
                t = e + m;
            }
        }
        synor__free(buf);
        return;
    }
    /* F32 weights, where the table has the register tile (AVX-512, AVX2): 4
     * weight rows at a time against the activation rows, these taken
     * LLM_F32W_BLOCK at a time so that they stay in L2 while every weight
     * row passes; each block prefetches the one LLM_F32W_AHEAD rows on.
     * On the Zen 5 development VM the AVX-512 tile beats Debian's OpenBLAS
     * (whose dynamic arch runs its Haswell kernel on that CPU) by 10-32% on
     * prefill, and the prefetch made decode steps 5-16% faster; on a Zen 3
     * VM the AVX2 tile made 16-row steps 1.44x faster than OpenBLAS's
     * SGEMM; from 64 rows OpenBLAS's packed SGEMM is faster there, so the
     * avx2 table sends prompt rows in blocks of 64 to it (above). Every
     * row that takes the tile is summed in the same order: its result is
     * bitwise what it gets alone, in any batch. */
    if (w->type == SYNOR_TTYPE_F32 && n >= LLM_F32W_MIN_ROWS && k->tile_f32w) {
        const float *wf = (const float *)(const void *)w->data;
        size_t ws = w->row_bytes / sizeof(float);
        /* packed groups of 4 rows (pack.c), where the range starts on one */
        int pr1;
        const float *pk = k->tile_f32p ? f32_pack(w, r0, r1, 1, &pr1) : NULL;
        if (!pk)
            pr1 = r0;
        size_t gf = synor__llm_pack_group_f32(w->cols);
        for (int t0 = 0; t0 < n; t0 += LLM_F32W_BLOCK) {
            int tn = n - t0 < LLM_F32W_BLOCK ? n - t0 : LLM_F32W_BLOCK, r = r0;
            int ahead = tn > 6 ? LLM_F32W_AHEAD_PASSES : LLM_F32W_AHEAD;
            const float *xt = x + (size_t)t0 * ldx;
            float *yt = y + (size_t)t0 * ldy;
            for (; r + 4 <= pr1; r += 4)
                k->tile_f32p(pk + (size_t)(r / 4) * gf, xt, ldx, tn, w->cols, yt + r, ldy,
                             accumulate,
                             r + ahead + 4 <= pr1 ? pk + (size_t)((r + ahead) / 4) * gf : NULL);
            for (; r + 4 <= r1; r += 4)
                k->tile_f32w(wf + (size_t)r * ws, ws, xt, ldx, tn, w->cols, yt + r, ldy,
                             accumulate,
                             r + ahead + 4 <= r1 ? wf + (size_t)(r + ahead) * ws : NULL);
            for (; r < r1; r++)
                for (int t = 0; t < tn; t++) {
                    float v = k->dot_f32(wf + (size_t)r * ws, xt + (size_t)t * ldx, w->cols);
                    float *o = yt + (size_t)t * ldy + r;
                    *o = accumulate ? *o + v : v;
                }
        }
        return;
    }
    /* Otherwise (tables without the tile) OpenBLAS's SGEMM (Y = X W^T),
     * which blocks for the caches and the registers as no dot loop can;
     * rows packed (pack.c, whose file pages are let go) from slices
     * unpacked from the copy. */
    if (w->type == SYNOR_TTYPE_F32 && n >= 16 && (blas = synor__blas()) != NULL) {
        int p1;
        const float *pk = f32_pack(w, r0, r1, 0, &p1);
        float *buf = pk ? slice_buffer(w) : NULL;
        sgemm_rows(blas, w, pk, buf, r0, p1, r1, NULL, 1, n, 0, x, ldx, y, ldy, accumulate);
        synor__free(buf);
        return;
    }
    int q4 = w->type == SYNOR_TTYPE_Q4_0;
    /* Several rows and packed weights (pack.c): the whole groups of 8 in
     * [r0, r1) in one pass over each group for all the rows; the rows
     * around them as below. */
    const uint8_t *pk = __atomic_load_n(&w->pack, __ATOMIC_ACQUIRE);
    if (pk && k->tile_p && n >= synor__llm_pack_min_rows(w) && qx && (qx[0].u || !k->tiles_u)) {
        int g0 = (r0 + 7) / 8, g1 = r1 / 8, nb = w->cols / SYNOR_QK;
        if (g1 > w->rows / 8)
            g1 = w->rows / 8;
        if (g0 < g1) {
            size_t gb = synor__llm_pack_group_bytes(q4, nb);
            int g = g0;
            if (k->tile_p2)
                for (; g + 2 <= g1; g += 2)
                    k->tile_p2(pk + (size_t)g * gb, gb, qx, n, nb, q4, y + (size_t)g * 8, ldy,
                               accumulate);
            for (; g < g1; g++)
                k->tile_p(pk + (size_t)g * gb, qx, n, nb, q4, y + (size_t)g * 8, ldy, accumulate);
            if (r0 < g0 * 8)
                synor__llm_matmul(k, w, r0, g0 * 8, n, x, ldx, qx, y, ldy, accumulate, NULL);
            if (g1 * 8 < r1)
                synor__llm_matmul(k, w, g1 * 8, r1, n, x, ldx, qx, y, ldy, accumulate, NULL);
            return;
        }
    }
    /* Tiles of 4 weight rows x up to 4 activation rows where the CPU has
     * them: each weight block is loaded (and a Q4_0 block unpacked) once
     * for 4 activation rows, each activation block once for 4 weight rows
     * (from LLM_TILE_Q_MIN_ROWS rows: a speculative draft's catch-up of 2
     * rows too). */
    if (k->tile_q && n >= LLM_TILE_Q_MIN_ROWS && (q4 || w->type == SYNOR_TTYPE_Q8_0)) {
        int nb = w->cols / SYNOR_QK;
        for (; r0 + 4 <= r1; r0 += 4)
            for (int t = 0; t < n; t += 4)
                k->tile_q(w->data + (size_t)r0 * w->row_bytes, w->row_bytes, qx + t,
                          n - t < 4 ? n - t : 4, nb, q4, y + (size_t)t * ldy + r0, ldy, accumulate);
    } else if (k->tile_f32 && w->type == SYNOR_TTYPE_F32) {
        for (; r0 + 4 <= r1; r0 += 4)
            for (int t = 0; t < n; t += 4)
                k->tile_f32((const float *)(const void *)(w->data + (size_t)r0 * w->row_bytes),
                            w->row_bytes / sizeof(float), x + (size_t)t * ldx, ldx,
                            n - t < 4 ? n - t : 4, w->cols, y + (size_t)t * ldy + r0, ldy,
                            accumulate);
    }
    /* Weight row outside, activation rows inside: a weight row is read
     * from memory once per batch and stays in L1 across the rows. */
    for (int r = r0; r < r1; r++) {
        for (int t = 0; t < n; t++) {
            float v = row_dot(k, w, r, x + (size_t)t * ldx, qx ? &qx[t] : NULL);
            float *o = y + (size_t)t * ldy + r;
            *o = accumulate ? *o + v : v;
        }
    }
}

void synor__llm_mat_row(const llm_mat *w, int row, float *out)
{
    const float *pk = w->type == SYNOR_TTYPE_F32 ? (const float *)(const void *)__atomic_load_n(
                                                       &w->pack, __ATOMIC_ACQUIRE)
                                                 : NULL;
    if (pk && row < w->rows / 4 * 4) { /* the file's pages may be let go (pack.c) */
        synor__llm_unpack_f32(w, pk, row, row + 1, out, (size_t)w->cols);
        return;
    }
    const uint8_t *p = w->data + (size_t)row * w->row_bytes;
    if (w->type == LLM_TTYPE_Q8G) {
        const int8_t *q = (const int8_t *)p;
        const float *s = w->gscale + (size_t)row * (w->cols / w->group);
        for (int i = 0; i < w->cols; i++)
            out[i] = q[i] * s[i / w->group];
        return;
    }
    synor_ttype_dequantize(w->type, p, out, (size_t)w->cols);
}
