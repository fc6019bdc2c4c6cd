/* blas_cpu.c - CPU kernels of the dense linear algebra tasks, through
 * OpenBLAS (cblas, and LAPACK's potrf through its Fortran symbol, which
 * OpenBLAS exports).
 *
 * Each kernel reads the data type from its handles (fp64 or fp32) and the
 * tile shapes and column strides from the handles too, so one kernel serves
 * both precisions and edge tiles of any size. The runtime runs one kernel
 * per worker thread: OpenBLAS is limited to one thread of its own (the
 * runtime does it when it starts), or its threads would fight the workers
 * for the cores. */
#include <limits.h>

#include "common/blas_api.h"
#include "common/common.h"
#include "kernels/kernels.h"

/* OpenBLAS, loaded on first use (common/blas_api.h): a kernel without it
 * fails, naming why. LAPACK's potrf is called by its Fortran symbol (the
 * hidden string lengths are not read by OpenBLAS's potrf). */
#define BLAS_OR_FAIL(b)                         \
    const synor__blas_api *b = synor__blas();   \
    if (!b)                                     \
        return SYNOR_ENOTSUP

static int dims_ok(const synor_task_ctx *c, const char *who)
{
    for (unsigned i = 0; i < c->ndata; i++) {
        const synor_handle *d = c->data[i];
        if (synor_handle_ndim(d) != 2 || synor_handle_dim(d, 0) > INT_MAX ||
            synor_handle_dim(d, 1) > INT_MAX || synor_handle_ld(d) > INT_MAX)
            return synor__error(SYNOR_EINVAL, "%s: data %u is not a 2-D matrix of int-sized dims",
                                who, i);
        if (synor_handle_dtype(d) != synor_handle_dtype(c->data[0]))
            return synor__error(SYNOR_EINVAL, "%s: data types differ", who);
    }
    synor_dtype t = synor_handle_dtype(c->data[0]);
    if (t != SYNOR_DTYPE_FP64 && t != SYNOR_DTYPE_FP32)
        return synor__error(SYNOR_ENOTSUP, "%s: data type %s (fp64 and fp32 only)", who,
                            synor_dtype_name(t));
    return 0;
}

#define ROWS(c, i) ((blasint)synor_handle_dim((c)->data[i], 0))
#define COLS(c, i) ((blasint)synor_handle_dim((c)->data[i], 1))
#define LD(c, i) ((blasint)(c)->ld[i])
#define IS_F64(c) (synor_handle_dtype((c)->data[0]) == SYNOR_DTYPE_FP64)

/* data: A (R), B (R), C (RW or W). C = alpha op(A) op(B) + beta C. */
static int gemm_cpu(const synor_task_ctx *c)
{
    BLAS_OR_FAIL(b);
    const synor__gemm_args *a = c->args;
    int rc = dims_ok(c, "gemm");
    if (rc < 0)
        return rc;
    blasint m = ROWS(c, 2), n = COLS(c, 2);
    blasint k = a->trans_a ? ROWS(c, 0) : COLS(c, 0);
    enum CBLAS_TRANSPOSE ta = a->trans_a ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = a->trans_b ? CblasTrans : CblasNoTrans;
    if (IS_F64(c))
        b->dgemm(CblasColMajor, ta, tb, m, n, k, a->alpha, c->buffers[0], LD(c, 0),
                    c->buffers[1], LD(c, 1), a->beta, c->buffers[2], LD(c, 2));
    else
        b->sgemm(CblasColMajor, ta, tb, m, n, k, (float)a->alpha, c->buffers[0], LD(c, 0),
                    c->buffers[1], LD(c, 1), (float)a->beta, c->buffers[2], LD(c, 2));
    return 0;
}

/* data: A (R), B (R), C (W), contiguous, dims from the arguments. */
static int gemm_dims_cpu(const synor_task_ctx *c)
{
    BLAS_OR_FAIL(b);
    const synor__gemm_dims_args *a = c->args;
    synor_dtype t = synor_handle_dtype(c->data[0]);
    if (t == SYNOR_DTYPE_FP64)
        b->dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, a->m, a->n, a->k, 1.0,
                    c->buffers[0], a->m, c->buffers[1], a->k, 0.0, c->buffers[2], a->m);
    else if (t == SYNOR_DTYPE_FP32)
        b->sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, a->m, a->n, a->k, 1.0f,
                    c->buffers[0], a->m, c->buffers[1], a->k, 0.0f, c->buffers[2], a->m);
    else
        return synor__error(SYNOR_ENOTSUP, "matmul: data type %s (fp32 and fp64 only)",
                            synor_dtype_name(t));
    return 0;
}

/* data: A (RW), lower Cholesky factor in place. */
static int potrf_cpu(const synor_task_ctx *c)
{
    BLAS_OR_FAIL(b);
    const synor__tile_args *a = c->args;
    int rc = dims_ok(c, "potrf");
    if (rc < 0)
        return rc;
    blasint n = ROWS(c, 0), ld = LD(c, 0), info = 0;
    if (IS_F64(c))
        b->dpotrf("L", &n, c->buffers[0], &ld, &info);
    else
        b->spotrf("L", &n, c->buffers[0], &ld, &info);
    if (info > 0)
        return synor__error(SYNOR_ERANGE,
                            "potrf: diagonal tile (%d,%d) is not positive definite (leading minor "
                            "%d of %d): the matrix is not SPD",
                            a->i, a->j, (int)info, (int)n);
    if (info < 0)
        return synor__error(SYNOR_EINVAL, "potrf: argument %d is invalid", (int)-info);
    return 0;
}

/* data: L (R, lower triangular), B (RW). B = B L^-T. */
static int trsm_cpu(const synor_task_ctx *c)
{
    BLAS_OR_FAIL(b);
    int rc = dims_ok(c, "trsm");
    if (rc < 0)
        return rc;
    blasint m = ROWS(c, 1), n = COLS(c, 1);
    if (IS_F64(c))
        b->dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, m, n, 1.0,
                    c->buffers[0], LD(c, 0), c->buffers[1], LD(c, 1));
    else
        b->strsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, m, n, 1.0f,
                    c->buffers[0], LD(c, 0), c->buffers[1], LD(c, 1));
    return 0;
}

/* data: A (R), C (RW, lower). C = C - A A^T. */
static int syrk_cpu(const synor_task_ctx *c)
{
    BLAS_OR_FAIL(b);
    int rc = dims_ok(c, "syrk");
    if (rc < 0)
        return rc;
    blasint n = ROWS(c, 1), k = COLS(c, 0);
    if (IS_F64(c))
        b->dsyrk(CblasColMajor, CblasLower, CblasNoTrans, n, k, -1.0, c->buffers[0], LD(c, 0),
                    1.0, c->buffers[1], LD(c, 1));
    else
        b->ssyrk(CblasColMajor, CblasLower, CblasNoTrans, n, k, -1.0f, c->buffers[0], LD(c, 0),
                    1.0f, c->buffers[1], LD(c, 1));
    return 0;
}

/* gemm, trsm and syrk fail only on their argument checks, before the BLAS
 * call (which does not fail): no copy of C or B is kept for a retry, which
 * would cost a tile copy per task. The OpenCL and CUDA versions can fail
 * after writing only on an error of the device while the kernel runs, which
 * (lost device, illegal address) stops the device and loses its memory
 * anyway. potrf is not marked: LAPACK reports a matrix that is not positive
 * definite after factoring part of the tile. */
const synor_kernel synor__kernel_gemm = {
    .name = "gemm",
    .op = SYNOR_OP_MATMUL,
    .fn = {[SYNOR_KIND_CPU] = gemm_cpu},
    .opencl = SYNOR__OPENCL_IMPL(synor__gemm_opencl),
    .cuda = synor__gemm_cuda,
    .flags = SYNOR_KERNEL_FAILS_BEFORE_WRITING,
    .library = &synor__kernels_library};
const synor_kernel synor__kernel_gemm_dims = {
    .name = "matmul",
    .op = SYNOR_OP_MATMUL,
    .fn = {[SYNOR_KIND_CPU] = gemm_dims_cpu},
    .opencl = SYNOR__OPENCL_IMPL(synor__gemm_dims_opencl),
    .cuda = synor__gemm_dims_cuda,
    .library = &synor__kernels_library};
const synor_kernel synor__kernel_potrf = {
    .name = "potrf", .op = SYNOR_OP_MATMUL, .fn = {[SYNOR_KIND_CPU] = potrf_cpu}};
const synor_kernel synor__kernel_trsm = {.name = "trsm",
                                         .op = SYNOR_OP_MATMUL,
                                         .fn = {[SYNOR_KIND_CPU] = trsm_cpu},
                                         .flags = SYNOR_KERNEL_FAILS_BEFORE_WRITING};
const synor_kernel synor__kernel_syrk = {.name = "syrk",
                                         .op = SYNOR_OP_MATMUL,
                                         .fn = {[SYNOR_KIND_CPU] = syrk_cpu},
                                         .flags = SYNOR_KERNEL_FAILS_BEFORE_WRITING};
