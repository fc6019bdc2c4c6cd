/* cuda_ops.c - the library's CUDA kernels: GEMM through cuBLAS (fp32,
 * fp64) and ReLU, GeLU, SiLU from the PTX of cuda_ops.cu. Always compiled
 * (the CUDA API is loaded at run time); the element-wise kernels exist when
 * nvcc was found at build time, else they fail over to other devices. Each
 * kernel enqueues on the device's stream and waits for it. */
#include <limits.h>

#include "kernels/kernels.h"
#include "runtime/cuda_internal.h"

#if !SYNOR_HAVE_CUDA_PTX
const char synor__cuda_ptx[] = "";
#endif

static int cu_gemm(const synor_task_ctx *c, synor_dtype t, int m, int n, int k, double alpha,
                   int lda, int ta, int ldb, int tb, double beta, int ldc)
{
    synor__cu_dev *cd = c->backend;
    const synor__cu_api *a = cd->api;
    if (!cd->blas)
        return synor__error(SYNOR_ENOTSUP, "gemm (CUDA, %s): cuBLAS could not be loaded",
                            cd->product);
    CUdeviceptr A = (CUdeviceptr)(uintptr_t)c->buffers[0], B = (CUdeviceptr)(uintptr_t)c->buffers[1],
                C = (CUdeviceptr)(uintptr_t)c->buffers[2];
    cublasStatus_t s;
    if (t == SYNOR_DTYPE_FP64) {
        s = a->cublasDgemm(cd->blas, ta, tb, m, n, k, &alpha, (const double *)(uintptr_t)A, lda,
                           (const double *)(uintptr_t)B, ldb, &beta, (double *)(uintptr_t)C, ldc);
    } else if (t == SYNOR_DTYPE_FP32) {
        float al = (float)alpha, be = (float)beta;
        s = a->cublasSgemm(cd->blas, ta, tb, m, n, k, &al, (const float *)(uintptr_t)A, lda,
                           (const float *)(uintptr_t)B, ldb, &be, (float *)(uintptr_t)C, ldc);
    } else {
        return synor__error(SYNOR_ENOTSUP, "gemm (CUDA): data type %s (fp32 and fp64 only)",
                            synor_dtype_name(t));
    }
    if (s != 0)
        return synor__error(SYNOR_EIO, "gemm (CUDA, %s): cuBLAS status %d", cd->product, (int)s);
    CUresult e = a->cuStreamSynchronize(c->queue);
    return e == 0 ? 0 : synor__cu_fail(cd, "gemm", e);
}

/* data: A (R), B (R), C (RW or W): C = alpha op(A) op(B) + beta C. */
int synor__gemm_cuda(const synor_task_ctx *c)
{
    const synor__gemm_args *g = c->args;
    synor_dtype t = synor_handle_dtype(c->data[0]);
    for (unsigned i = 0; i < 3; i++)
        if (synor_handle_ndim(c->data[i]) != 2 || synor_handle_dtype(c->data[i]) != t ||
            synor_handle_dim(c->data[i], 0) > INT_MAX || synor_handle_dim(c->data[i], 1) > INT_MAX)
            return synor__error(SYNOR_EINVAL, "gemm (CUDA): data %u is not a 2-D %s matrix", i,
                                synor_dtype_name(t));
    int m = (int)synor_handle_dim(c->data[2], 0), n = (int)synor_handle_dim(c->data[2], 1);
    int k = (int)(g->trans_a ? synor_handle_dim(c->data[0], 0) : synor_handle_dim(c->data[0], 1));
    return cu_gemm(c, t, m, n, k, g->alpha, (int)c->ld[0], g->trans_a, (int)c->ld[1], g->trans_b,
                   g->beta, (int)c->ld[2]);
}

/* data: A (R), B (R), C (W), contiguous, dims from the arguments. */
int synor__gemm_dims_cuda(const synor_task_ctx *c)
{
    const synor__gemm_dims_args *g = c->args;
    return cu_gemm(c, synor_handle_dtype(c->data[0]), g->m, g->n, g->k, 1.0, g->m, 0, g->k, 0,
                   0.0, g->m);
}

static int eltwise(const synor_task_ctx *c, int which, const char *name)
{
    synor__cu_dev *cd = c->backend;
    if (c->ndata != 2 || synor_handle_dtype(c->data[0]) != SYNOR_DTYPE_FP32 ||
        synor_handle_dtype(c->data[1]) != SYNOR_DTYPE_FP32 || c->data[0]->bytes != c->data[1]->bytes)
        return synor__error(SYNOR_EINVAL, "%s (CUDA): needs X and Y, fp32, of equal size", name);
    if (!cd->k[which])
        return synor__error(SYNOR_ENOTSUP,
                            "%s (CUDA, %s): the element-wise kernels were not built (no nvcc "
                            "when the library was built)",
                            name, cd->product);
    CUdeviceptr x = (CUdeviceptr)(uintptr_t)c->buffers[0], y = (CUdeviceptr)(uintptr_t)c->buffers[1];
    long long n = (long long)(c->data[0]->bytes / sizeof(float));
    void *params[] = {&x, &y, &n};
    long long blocks = (n + 255) / 256;
    if (blocks > 65535)
        blocks = 65535; /* grid-stride loops cover the rest */
    CUresult e = cd->api->cuLaunchKernel(cd->k[which], (unsigned)(blocks ? blocks : 1), 1, 1, 256,
                                         1, 1, 0, c->queue, params, NULL);
    if (e == 0)
        e = cd->api->cuStreamSynchronize(c->queue);
    return e == 0 ? 0 : synor__cu_fail(cd, name, e);
}

int synor__relu_cuda(const synor_task_ctx *c) { return eltwise(c, SYNOR__CUK_RELU, "relu"); }
int synor__gelu_cuda(const synor_task_ctx *c) { return eltwise(c, SYNOR__CUK_GELU, "gelu"); }
int synor__silu_cuda(const synor_task_ctx *c) { return eltwise(c, SYNOR__CUK_SILU, "silu"); }
