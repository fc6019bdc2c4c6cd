/* cpu_ops.c - row-wise CPU kernels on contiguous row-major fp32 data
 * (issue 4 point 6): softmax, layer norm, RMS norm, reductions along rows
 * and over a whole tensor, transpose, embedding gather. Attention is in
 * cpu_attention.c; the shared row softmax is here.
 *
 * Vectorization: the loops are written for the auto-vectorizer (restrict
 * pointers, unit stride, no calls). Floating-point sums and maxima are not
 * reassociated by the compiler without -ffast-math, so they keep LANES
 * independent accumulators (lane j takes elements j, j + LANES, ...) that
 * become one or two vector registers; the build's -O2 uses gcc's
 * "very-cheap" vectorizer cost model, which refuses loops that need a scalar
 * tail, so this file asks for the dynamic model. Sums and sums of squares
 * accumulate in double. expf (libm) is a call, so the exponential pass of
 * softmax stays scalar; the passes around it are vector loops. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/common.h"
#include "kernels/kernels.h"

#define LANES 8
#define TILE 32              /* transpose tiles: 2 x 4 KB, in L1 */
#define PAIRWISE_BLOCK 4096  /* whole-tensor sum: blocks summed then paired */

/* ------------------------------------------------------------ row helpers */

static double sum_f64(const float *restrict x, size_t n)
{
    double acc[LANES] = {0};
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (unsigned j = 0; j < LANES; j++)
            acc[j] += (double)x[i + j];
    double s = 0;
    for (; i < n; i++)
        s += (double)x[i];
    for (unsigned j = 0; j < LANES; j++)
        s += acc[j];
    return s;
}

/* sum of (x - mu)^2 in double */
static double sqdev_f64(const float *restrict x, size_t n, double mu)
{
    double acc[LANES] = {0};
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (unsigned j = 0; j < LANES; j++) {
            double d = (double)x[i + j] - mu;
            acc[j] += d * d;
        }
    double s = 0;
    for (; i < n; i++) {
        double d = (double)x[i] - mu;
        s += d * d;
    }
    for (unsigned j = 0; j < LANES; j++)
        s += acc[j];
    return s;
}

/* n >= 1 */
static float max_f32(const float *restrict x, size_t n)
{
    float acc[LANES];
    for (unsigned j = 0; j < LANES; j++)
        acc[j] = x[0];
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (unsigned j = 0; j < LANES; j++)
            acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    float m = x[0];
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    for (unsigned j = 0; j < LANES; j++)
        m = acc[j] > m ? acc[j] : m;
    return m;
}

static void scale_f32(float *restrict y, size_t n, float f)
{
    for (size_t i = 0; i < n; i++)
        y[i] *= f;
}

void synor__softmax_row(float *y, const float *x, size_t n)
{
    float mx = max_f32(x, n);
    double s = 0;
    for (size_t i = 0; i < n; i++) { /* expf: a call, scalar */
        float e = expf(x[i] - mx);
        y[i] = e;
        s += (double)e;
    }
    scale_f32(y, n, (float)(1.0 / s)); /* s >= 1: the max gives exp(0) */
}

/* --------------------------------------------------------------- checking */

/* ndata operands, each of a 32-bit type (fp32 for float data). */
static int check_ops(const synor_task_ctx *c, const char *who, unsigned ndata, unsigned int_op)
{
    if (c->ndata != ndata || !c->args)
        return synor__error(SYNOR_EINVAL, "%s: needs %u data and its arguments", who, ndata);
    for (unsigned i = 0; i < ndata; i++) {
        synor_dtype t = synor_handle_dtype(c->data[i]);
        if (i + 1 == int_op ? synor_dtype_bits(t) != 32 : t != SYNOR_DTYPE_FP32)
            return synor__error(SYNOR_EINVAL, "%s: data %u is %s; it must be %s", who, i,
                                synor_dtype_name(t), i + 1 == int_op ? "int32 (in a 32-bit type)"
                                                                     : "fp32");
    }
    return 0;
}

/* Data i must hold exactly elems 32-bit elements. */
static int check_size(const synor_task_ctx *c, const char *who, unsigned i, const char *what,
                      uint64_t elems)
{
    uint64_t have = synor_handle_bytes(c->data[i]) / 4;
    if (have != elems || synor_handle_bytes(c->data[i]) % 4 != 0)
        return synor__error(SYNOR_EINVAL, "%s: operand %s has %llu elements; the arguments need %llu",
                            who, what, (unsigned long long)have, (unsigned long long)elems);
    return 0;
}

static int check_rows(const synor_task_ctx *c, const char *who, unsigned ndata,
                      const synor__rows_args **out)
{
    int rc = check_ops(c, who, ndata, 0);
    if (rc < 0)
        return rc;
    const synor__rows_args *a = c->args;
    if (a->rows < 1 || a->cols < 1 || (uint64_t)a->rows > UINT64_MAX / 4 / (uint64_t)a->cols ||
        !(a->eps >= 0) || !isfinite(a->eps))
        return synor__error(SYNOR_EINVAL, "%s: bad arguments (rows %lld, cols %lld, eps %g)", who,
                            (long long)a->rows, (long long)a->cols, (double)a->eps);
    if ((rc = check_size(c, who, 0, "X", (uint64_t)a->rows * (uint64_t)a->cols)) < 0)
        return rc;
    *out = a;
    return 0;
}

static float eps_of(const synor__rows_args *a) { return a->eps > 0 ? a->eps : 1e-5f; }

/* ---------------------------------------------------------------- kernels */

static int softmax_cpu(const synor_task_ctx *c)
{
    const synor__rows_args *a = NULL;
    int rc = check_rows(c, "softmax", 2, &a);
    if (rc < 0 || (rc = check_size(c, "softmax", 1, "Y", (uint64_t)(a->rows * a->cols))) < 0)
        return rc;
    const float *x = c->buffers[0];
    float *y = c->buffers[1];
    size_t n = (size_t)a->cols;
    for (size_t r = 0; r < (size_t)a->rows; r++)
        synor__softmax_row(y + r * n, x + r * n, n);
    return 0;
}

static void layer_norm_row(float *restrict y, const float *restrict x, const float *restrict g,
                           const float *restrict b, size_t n, float eps)
{
    double mean = sum_f64(x, n) / (double)n;
    double var = sqdev_f64(x, n, mean) / (double)n;
    float mu = (float)mean, r = (float)(1.0 / sqrt(var + eps));
    for (size_t i = 0; i < n; i++)
        y[i] = (x[i] - mu) * r * g[i] + b[i];
}

static int layer_norm_cpu(const synor_task_ctx *c)
{
    const synor__rows_args *a = NULL;
    int rc = check_rows(c, "layer_norm", 4, &a);
    if (rc < 0 || (rc = check_size(c, "layer_norm", 1, "gamma", (uint64_t)a->cols)) < 0 ||
        (rc = check_size(c, "layer_norm", 2, "beta", (uint64_t)a->cols)) < 0 ||
        (rc = check_size(c, "layer_norm", 3, "Y", (uint64_t)(a->rows * a->cols))) < 0)
        return rc;
    const float *x = c->buffers[0], *g = c->buffers[1], *b = c->buffers[2];
    float *y = c->buffers[3];
    size_t n = (size_t)a->cols;
    for (size_t r = 0; r < (size_t)a->rows; r++)
        layer_norm_row(y + r * n, x + r * n, g, b, n, eps_of(a));
    return 0;
}

static void rms_norm_row(float *restrict y, const float *restrict x, const float *restrict g,
                         size_t n, float eps)
{
    double acc[LANES] = {0}, ss = 0;
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (unsigned j = 0; j < LANES; j++)
            acc[j] += (double)x[i + j] * (double)x[i + j];
    for (; i < n; i++)
        ss += (double)x[i] * (double)x[i];
    for (unsigned j = 0; j < LANES; j++)
        ss += acc[j];
    float r = (float)(1.0 / sqrt(ss / (double)n + eps));
    for (i = 0; i < n; i++)
        y[i] = x[i] * r * g[i];
}

static int rms_norm_cpu(const synor_task_ctx *c)
{
    const synor__rows_args *a = NULL;
    int rc = check_rows(c, "rms_norm", 3, &a);
    if (rc < 0 || (rc = check_size(c, "rms_norm", 1, "gamma", (uint64_t)a->cols)) < 0 ||
        (rc = check_size(c, "rms_norm", 2, "Y", (uint64_t)(a->rows * a->cols))) < 0)
        return rc;
    const float *x = c->buffers[0], *g = c->buffers[1];
    float *y = c->buffers[2];
    size_t n = (size_t)a->cols;
    for (size_t r = 0; r < (size_t)a->rows; r++)
        rms_norm_row(y + r * n, x + r * n, g, n, eps_of(a));
    return 0;
}

typedef enum { RED_SUM, RED_MAX, RED_MEAN } red_kind;

static int reduce_rows(const synor_task_ctx *c, red_kind k)
{
    static const char *const names[] = {"sum", "max", "mean"};
    const synor__rows_args *a = NULL;
    int rc = check_rows(c, names[k], 2, &a);
    if (rc < 0 || (rc = check_size(c, names[k], 1, "Y (rows)", (uint64_t)a->rows)) < 0)
        return rc;
    const float *x = c->buffers[0];
    float *y = c->buffers[1];
    size_t n = (size_t)a->cols;
    for (size_t r = 0; r < (size_t)a->rows; r++) {
        const float *row = x + r * n;
        y[r] = k == RED_MAX ? max_f32(row, n)
               : k == RED_SUM ? (float)sum_f64(row, n)
                              : (float)(sum_f64(row, n) / (double)n);
    }
    return 0;
}

static int row_sum_cpu(const synor_task_ctx *c) { return reduce_rows(c, RED_SUM); }
static int row_max_cpu(const synor_task_ctx *c) { return reduce_rows(c, RED_MAX); }
static int row_mean_cpu(const synor_task_ctx *c) { return reduce_rows(c, RED_MEAN); }

static double sum_pairwise(const float *x, size_t n)
{
    if (n <= PAIRWISE_BLOCK)
        return sum_f64(x, n);
    size_t h = (n / 2 + LANES - 1) / LANES * LANES;
    return sum_pairwise(x, h) + sum_pairwise(x + h, n - h);
}

static int sum_all_cpu(const synor_task_ctx *c)
{
    const synor__rows_args *a = NULL;
    int rc = check_rows(c, "sum", 2, &a);
    if (rc < 0 || (rc = check_size(c, "sum", 1, "Y (1 element)", 1)) < 0)
        return rc;
    *(float *)c->buffers[1] = (float)sum_pairwise(c->buffers[0], (size_t)(a->rows * a->cols));
    return 0;
}

static int transpose_cpu(const synor_task_ctx *c)
{
    const synor__rows_args *a = NULL;
    int rc = check_rows(c, "transpose", 2, &a);
    if (rc < 0 || (rc = check_size(c, "transpose", 1, "Y", (uint64_t)(a->rows * a->cols))) < 0)
        return rc;
    const float *restrict x = c->buffers[0];
    float *restrict y = c->buffers[1];
    size_t rows = (size_t)a->rows, cols = (size_t)a->cols;
    for (size_t i0 = 0; i0 < rows; i0 += TILE) {
        size_t i1 = i0 + TILE < rows ? i0 + TILE : rows;
        for (size_t j0 = 0; j0 < cols; j0 += TILE) {
            size_t j1 = j0 + TILE < cols ? j0 + TILE : cols;
            for (size_t j = j0; j < j1; j++) /* writes along a row of Y */
                for (size_t i = i0; i < i1; i++)
                    y[j * rows + i] = x[i * cols + j];
        }
    }
    return 0;
}

static int embedding_cpu(const synor_task_ctx *c)
{
    int rc = check_ops(c, "embedding", 3, 2);
    if (rc < 0)
        return rc;
    const synor__embedding_args *a = c->args;
    if (a->n < 1 || a->vocab < 1 || a->dim < 1 || a->vocab > INT32_MAX ||
        (uint64_t)a->n > UINT64_MAX / 4 / (uint64_t)a->dim ||
        (uint64_t)a->vocab > UINT64_MAX / 4 / (uint64_t)a->dim)
        return synor__error(SYNOR_EINVAL, "embedding: bad arguments (n %lld, vocab %lld, dim %lld)",
                            (long long)a->n, (long long)a->vocab, (long long)a->dim);
    if ((rc = check_size(c, "embedding", 0, "table (vocab x dim)",
                         (uint64_t)(a->vocab * a->dim))) < 0 ||
        (rc = check_size(c, "embedding", 1, "ids", (uint64_t)a->n)) < 0 ||
        (rc = check_size(c, "embedding", 2, "Y (n x dim)", (uint64_t)(a->n * a->dim))) < 0)
        return rc;
    const float *table = c->buffers[0];
    const int32_t *ids = c->buffers[1];
    float *y = c->buffers[2];
    size_t dim = (size_t)a->dim;
    for (size_t i = 0; i < (size_t)a->n; i++)
        if (ids[i] < 0 || ids[i] >= a->vocab)
            return synor__error(SYNOR_ERANGE,
                                "embedding: token id %d (position %zu) is outside the vocabulary "
                                "[0, %lld)",
                                (int)ids[i], i, (long long)a->vocab);
    for (size_t i = 0; i < (size_t)a->n; i++)
        memcpy(y + i * dim, table + (size_t)ids[i] * dim, dim * sizeof(float));
    return 0;
}

#define CPU_KERNEL(var, nm, opt, f) \
    const synor_kernel var = {.name = nm, .op = opt, .fn = {[SYNOR_KIND_CPU] = f}}

CPU_KERNEL(synor__kernel_softmax, "softmax", SYNOR_OP_SOFTMAX, softmax_cpu);
CPU_KERNEL(synor__kernel_layer_norm, "layer_norm", SYNOR_OP_LAYER_NORM, layer_norm_cpu);
CPU_KERNEL(synor__kernel_rms_norm, "rms_norm", SYNOR_OP_RMS_NORM, rms_norm_cpu);
CPU_KERNEL(synor__kernel_row_sum, "row_sum", SYNOR_OP_SUM, row_sum_cpu);
CPU_KERNEL(synor__kernel_row_max, "row_max", SYNOR_OP_MAX, row_max_cpu);
CPU_KERNEL(synor__kernel_row_mean, "row_mean", SYNOR_OP_MEAN, row_mean_cpu);
CPU_KERNEL(synor__kernel_sum_all, "sum_all", SYNOR_OP_SUM, sum_all_cpu);
CPU_KERNEL(synor__kernel_transpose, "transpose", SYNOR_OP_TRANSPOSE, transpose_cpu);
CPU_KERNEL(synor__kernel_embedding, "embedding", SYNOR_OP_EMBEDDING, embedding_cpu);
