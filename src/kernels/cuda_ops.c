/* cuda_ops.c - the library's CUDA kernels: GEMM through cuBLAS (fp32,
 * fp64) and ReLU, GeLU, SiLU from the PTX of cuda_ops.cu. Always compiled
 * (the CUDA API is loaded at run time); the element-wise kernels exist when
 * nvcc was found at build time, else they fail over to other devices. Each
 * kernel enqueues on the device's stream and waits for it.
 *
 * Per device, when the library is added to a runtime (synor__cu_lib_init):
 * the driver API and cuBLAS loaded (dlopen counts references, so this is
 * the runtime's library again), a cuBLAS handle bound to the device's
 * stream (none when cuBLAS cannot be loaded: GEMM then fails over), and the
 * module of the element-wise kernels JIT-compiled by the driver for the GPU
 * present. */
#include <limits.h>
#include <string.h>

#include "common/common.h"
#include "common/cuda_api.h"
#include "kernels/kernels.h"

/* nvcc's PTX of cuda_ops.cu (generated/cuda_ptx.c), "" without nvcc. */
extern const char synor__cuda_ptx[];
#if !SYNOR_HAVE_CUDA_PTX
const char synor__cuda_ptx[] = "";
#endif

enum { CUK_RELU, CUK_GELU, CUK_SILU, CUK_COUNT };

typedef struct cu_lib {
    synor__cu_api api;
    const synor_device_native *dev;
    cublasHandle_t blas;
    CUmodule module;
    CUfunction k[CUK_COUNT];
} cu_lib;

/* A CUDA call failed: the error for the task; after a sticky error the
 * context is unusable, so the device stops and its tasks move. */
static int cu_fail(const cu_lib *cd, const char *what, CUresult e)
{
    if (synor__cuda_error_is_sticky(e))
        (void)synor_runtime_device_stop(cd->dev->runtime, cd->dev->index);
    return synor__error(e == 2 ? SYNOR_ENOMEM : SYNOR_EIO, "CUDA device %s (%s): %s: %s (%d)",
                        cd->dev->name, cd->dev->product, what, synor__cuda_error_name(&cd->api, e),
                        (int)e);
}

void synor__cu_lib_fini(void *state)
{
    cu_lib *cd = state;
    if (!cd)
        return;
    const synor__cu_api *a = &cd->api;
    CUcontext prev = NULL;
    if (a->cuCtxGetCurrent(&prev) == 0 && a->cuCtxSetCurrent(cd->dev->cu_context) == 0) {
        if (cd->blas)
            (void)a->cublasDestroy(cd->blas);
        if (cd->module)
            (void)a->cuModuleUnload(cd->module);
        (void)a->cuCtxSetCurrent(prev);
    }
    synor__cuda_api_unload(&cd->api);
    synor__free(cd);
}

int synor__cu_lib_init(const synor_device_native *dev, void **state)
{
    cu_lib *cd = synor__calloc(1, sizeof *cd);
    if (!cd)
        return synor__error(SYNOR_ENOMEM, "CUDA device %s: out of memory", dev->name);
    cd->dev = dev;
    const synor__cu_api *a = &cd->api;
    CUcontext prev = NULL;
    if (synor__cuda_api_load(&cd->api, 1) < 0) {
        synor__free(cd);
        return synor__error(SYNOR_EIO, "CUDA device %s: the driver API cannot be loaded",
                            dev->name);
    }
    CUresult e = a->cuCtxGetCurrent(&prev);
    if (e == 0)
        e = a->cuCtxSetCurrent(dev->cu_context);
    if (e != 0) {
        int rc = cu_fail(cd, "cuCtxSetCurrent", e);
        synor__cuda_api_unload(&cd->api);
        synor__free(cd);
        return rc;
    }
    if (a->blas &&
        (a->cublasCreate(&cd->blas) != 0 || a->cublasSetStream(cd->blas, dev->cu_stream) != 0))
        cd->blas = NULL;
    if (synor__cuda_ptx[0] && a->cuModuleLoadData(&cd->module, synor__cuda_ptx) == 0) {
        static const char *const names[CUK_COUNT] = {"synor_relu", "synor_gelu", "synor_silu"};
        for (int i = 0; i < CUK_COUNT; i++)
            if (a->cuModuleGetFunction(&cd->k[i], cd->module, names[i]) != 0)
                cd->k[i] = NULL;
    }
    (void)a->cuCtxSetCurrent(prev);
    *state = cd;
    return 0;
}

static int cu_gemm(const synor_task_ctx *c, synor_dtype t, int m, int n, int k, double alpha,
                   int lda, int ta, int ldb, int tb, double beta, int ldc)
{
    const cu_lib *cd = c->state;
    const synor__cu_api *a = &cd->api;
    if (!cd->blas)
        return synor__error(SYNOR_ENOTSUP, "gemm (CUDA, %s): cuBLAS could not be loaded",
                            cd->dev->product);
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
        return synor__error(SYNOR_EIO, "gemm (CUDA, %s): cuBLAS status %d", cd->dev->product,
                            (int)s);
    CUresult e = a->cuStreamSynchronize(c->queue);
    return e == 0 ? 0 : cu_fail(cd, "gemm", e);
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
    const cu_lib *cd = c->state;
    if (c->ndata != 2 || synor_handle_dtype(c->data[0]) != SYNOR_DTYPE_FP32 ||
        synor_handle_dtype(c->data[1]) != SYNOR_DTYPE_FP32 ||
        synor_handle_bytes(c->data[0]) != synor_handle_bytes(c->data[1]))
        return synor__error(SYNOR_EINVAL, "%s (CUDA): needs X and Y, fp32, of equal size", name);
    if (!cd->k[which])
        return synor__error(SYNOR_ENOTSUP,
                            "%s (CUDA, %s): the element-wise kernels were not built (no nvcc "
                            "when the library was built)",
                            name, cd->dev->product);
    CUdeviceptr x = (CUdeviceptr)(uintptr_t)c->buffers[0], y = (CUdeviceptr)(uintptr_t)c->buffers[1];
    long long n = (long long)(synor_handle_bytes(c->data[0]) / sizeof(float));
    void *params[] = {&x, &y, &n};
    long long blocks = (n + 255) / 256;
    if (blocks > 65535)
        blocks = 65535; /* grid-stride loops cover the rest */
    CUresult e = cd->api.cuLaunchKernel(cd->k[which], (unsigned)(blocks ? blocks : 1), 1, 1, 256,
                                         1, 1, 0, c->queue, params, NULL);
    if (e == 0)
        e = cd->api.cuStreamSynchronize(c->queue);
    return e == 0 ? 0 : cu_fail(cd, name, e);
}

int synor__relu_cuda(const synor_task_ctx *c) { return eltwise(c, CUK_RELU, "relu"); }
int synor__gelu_cuda(const synor_task_ctx *c) { return eltwise(c, CUK_GELU, "gelu"); }
int synor__silu_cuda(const synor_task_ctx *c) { return eltwise(c, CUK_SILU, "silu"); }
