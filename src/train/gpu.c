/* gpu.c - the trainer's matrix products on a CUDA GPU through cuBLAS
 * (synor_trainer_use_cuda).
 *
 * The parameters are resident on the GPU in fp32: uploaded whole before
 * the first product of each step (the optimizer, on the host, changed
 * them), then every product of the forward and backward passes reads its
 * weight there. A product copies its activations up, runs one SGEMM and
 * copies the result down: y = x W^T (forward), dx = dy W (backward, data)
 * and dW = dy^T x (backward, weights; added to the replica's host
 * gradients, where the all-reduce and AdamW run as before). Attention,
 * norms, SwiGLU, the loss and the optimizer stay on the CPU workers. The
 * replicas' tasks share the GPU: one stream, one cuBLAS handle, one
 * product at a time (a mutex).
 *
 * Row-major A (r x c) is column-major A^T (ld c). So, column-major:
 *   y^T (out x n)  = op_T(W^T) x^T      SGEMM(T, N, out, n, in, W, in, x, in, y, out)
 *   dx^T (in x n)  = W^T dy^T           SGEMM(N, N, in, n, out, W, in, dy, out, dx, in)
 *   dW^T (in x out) = x^T op_T(dy^T)    SGEMM(N, T, in, out, n, x, in, dy, out, dW, in) */
#include <stdio.h>
#include <string.h>

#include "common/cuda_api.h"
#include "synor/kernel.h"
#include "train/train_internal.h"

enum { OP_N = 0, OP_T = 1 };

struct train_gpu {
    synor__cu_api api;
    int loaded;
    char device[64], product[128];
    CUcontext ctx;
    CUstream stream;
    cublasHandle_t blas;
    pthread_mutex_t lock;
    CUdeviceptr params;
    size_t nparams;
    int stale;
    CUdeviceptr buf[3]; /* a, b: operands; c: the result */
    size_t cap[3];      /* floats */
    float *host;        /* a result to add on the host */
    size_t host_cap;
    synor_train_gpu_stats st;
};

static int cu_err(const train_gpu *g, const char *what, CUresult e)
{
    return synor__error(e == 2 ? SYNOR_ENOMEM : SYNOR_EIO, "trainer on CUDA device %s (%s): %s: %s (%d)",
                        g->device, g->product, what, synor__cuda_error_name(&g->api, e), (int)e);
}

/* Device buffer i holds at least n floats. */
static int ensure(train_gpu *g, int i, size_t n)
{
    if (n <= g->cap[i])
        return 0;
    const synor__cu_api *a = &g->api;
    if (g->buf[i])
        (void)a->cuMemFree(g->buf[i]);
    g->buf[i] = 0;
    g->cap[i] = 0;
    n += n / 4;
    CUresult e = a->cuMemAlloc(&g->buf[i], n * sizeof(float));
    if (e)
        return cu_err(g, "cuMemAlloc (activations)", e);
    g->cap[i] = n;
    return 0;
}

static int up(train_gpu *g, CUdeviceptr d, const float *h, size_t n)
{
    CUresult e = g->api.cuMemcpyHtoDAsync(d, h, n * sizeof(float), g->stream);
    g->st.bytes_up += n * sizeof(float);
    return e ? cu_err(g, "copy to device", e) : 0;
}

static int down(train_gpu *g, float *h, CUdeviceptr d, size_t n)
{
    CUresult e = g->api.cuMemcpyDtoHAsync(h, d, n * sizeof(float), g->stream);
    if (!e)
        e = g->api.cuStreamSynchronize(g->stream);
    g->st.bytes_down += n * sizeof(float);
    return e ? cu_err(g, "copy to host", e) : 0;
}

static int gemm(train_gpu *g, int ta, int tb, int m, int n, int k, CUdeviceptr A, int lda,
                CUdeviceptr B, int ldb, CUdeviceptr C, int ldc)
{
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t s = g->api.cublasSgemm(g->blas, ta, tb, m, n, k, &one,
                                          (const float *)(uintptr_t)A, lda,
                                          (const float *)(uintptr_t)B, ldb, &zero,
                                          (float *)(uintptr_t)C, ldc);
    g->st.products++;
    return s ? synor__error(SYNOR_EIO, "trainer on CUDA device %s (%s): cublasSgemm: status %d",
                            g->device, g->product, (int)s)
             : 0;
}

int synor__train_gpu_mm(const synor_trainer *t, int op, float *out, const float *p,
                        const float *q, int n, int in, int outw, float beta)
{
    train_gpu *g = t->gpu;
    const synor__cu_api *a = &g->api;
    pthread_mutex_lock(&g->lock);
    CUresult ce = a->cuCtxSetCurrent(g->ctx);
    int e = ce ? cu_err(g, "cuCtxSetCurrent", ce) : 0;
    if (!e && g->stale) {
        e = up(g, g->params, t->params, g->nparams);
        g->st.param_uploads++;
        g->stale = e != 0;
    }
    size_t rn = (size_t)n, ri = (size_t)in, ro = (size_t)outw;
    if (!e && op == TRAIN_MM_FWD) {
        /* out = y (n x outw); p = x (n x in); q = W (host pointer into params) */
        CUdeviceptr w = g->params + (CUdeviceptr)((size_t)(q - t->params) * sizeof(float));
        if (!(e = ensure(g, 0, rn * ri)) && !(e = ensure(g, 2, rn * ro)) &&
            !(e = up(g, g->buf[0], p, rn * ri)) &&
            !(e = gemm(g, OP_T, OP_N, outw, n, in, w, in, g->buf[0], in, g->buf[2], outw)))
            e = down(g, out, g->buf[2], rn * ro);
    } else if (!e && op == TRAIN_MM_BWD_X) {
        /* out = dx (n x in) (+)= p = dy (n x outw) times q = W */
        CUdeviceptr w = g->params + (CUdeviceptr)((size_t)(q - t->params) * sizeof(float));
        if (!(e = ensure(g, 0, rn * ro)) && !(e = ensure(g, 2, rn * ri)) &&
            !(e = up(g, g->buf[0], p, rn * ro)) &&
            !(e = gemm(g, OP_N, OP_N, in, n, outw, w, in, g->buf[0], outw, g->buf[2], in))) {
            if (beta == 0.0f)
                e = down(g, out, g->buf[2], rn * ri);
            else if (rn * ri > g->host_cap) {
                float *h = synor__realloc(g->host, rn * ri * sizeof(float));
                e = h ? 0 : SYNOR_ENOMEM;
                if (h)
                    g->host = h, g->host_cap = rn * ri;
            }
            if (!e && beta != 0.0f && !(e = down(g, g->host, g->buf[2], rn * ri)))
                for (size_t i = 0; i < rn * ri; i++)
                    out[i] = beta * out[i] + g->host[i];
        }
    } else if (!e) {
        /* out = dW (outw x in) += p = dy (n x outw)^T times q = x (n x in) */
        if (!(e = ensure(g, 0, rn * ro)) && !(e = ensure(g, 1, rn * ri)) &&
            !(e = ensure(g, 2, ro * ri)) && !(e = up(g, g->buf[0], p, rn * ro)) &&
            !(e = up(g, g->buf[1], q, rn * ri)) &&
            !(e = gemm(g, OP_N, OP_T, in, outw, n, g->buf[1], in, g->buf[0], outw, g->buf[2], in))) {
            if (ro * ri > g->host_cap) {
                float *h = synor__realloc(g->host, ro * ri * sizeof(float));
                e = h ? 0 : SYNOR_ENOMEM;
                if (h)
                    g->host = h, g->host_cap = ro * ri;
            }
            if (!e && !(e = down(g, g->host, g->buf[2], ro * ri)))
                for (size_t i = 0; i < ro * ri; i++)
                    out[i] += g->host[i];
        }
    }
    pthread_mutex_unlock(&g->lock);
    return e;
}

void synor__train_gpu_params_changed(synor_trainer *t)
{
    if (t->gpu) {
        pthread_mutex_lock(&t->gpu->lock);
        t->gpu->stale = 1;
        pthread_mutex_unlock(&t->gpu->lock);
    }
}

void synor__train_gpu_free(synor_trainer *t)
{
    train_gpu *g = t->gpu;
    if (!g)
        return;
    t->gpu = NULL;
    for (int r = 0; r < t->nrep; r++)
        t->rep[r].cuda = 0;
    const synor__cu_api *a = &g->api;
    CUcontext prev = NULL;
    if (g->loaded && g->ctx && a->cuCtxGetCurrent(&prev) == 0 && a->cuCtxSetCurrent(g->ctx) == 0) {
        if (g->stream)
            (void)a->cuStreamSynchronize(g->stream);
        for (int i = 0; i < 3; i++)
            if (g->buf[i])
                (void)a->cuMemFree(g->buf[i]);
        if (g->params)
            (void)a->cuMemFree(g->params);
        if (g->blas)
            (void)a->cublasDestroy(g->blas);
        if (g->stream)
            (void)a->cuStreamDestroy(g->stream);
        (void)a->cuCtxSetCurrent(prev);
    }
    if (g->loaded)
        synor__cuda_api_unload(&g->api);
    synor__free(g->host);
    pthread_mutex_destroy(&g->lock);
    synor__free(g);
}

static int open_gpu(synor_trainer *t, train_gpu *g, void *cu_context)
{
    const synor__cu_api *a = &g->api;
    if (synor__cuda_api_load(&g->api, 1) < 0)
        return synor__error(SYNOR_ENOTSUP, "trainer: the CUDA driver cannot be loaded");
    g->loaded = 1;
    if (!a->blas)
        return synor__error(SYNOR_ENOTSUP, "trainer: CUDA needs cuBLAS (libcublas.so.13, 12 or "
                                           "11), which cannot be loaded");
    if (!a->cuMemcpyHtoDAsync)
        return synor__error(SYNOR_ENOTSUP,
                            "trainer: the CUDA driver lacks cuMemcpyHtoDAsync_v2 / "
                            "cuMemAllocHost_v2");
    g->ctx = cu_context;
    CUcontext prev = NULL;
    int have_prev = a->cuCtxGetCurrent(&prev) == 0;
    int e = 0;
    CUresult ce = a->cuCtxSetCurrent(g->ctx);
    if (!ce)
        ce = a->cuStreamCreate(&g->stream, 1 /* non-blocking */);
    if (ce)
        e = cu_err(g, "creating a stream", ce);
    cublasStatus_t s = 0;
    if (!e && (s = a->cublasCreate(&g->blas))) {
        g->blas = NULL;
        e = synor__error(SYNOR_EIO, "trainer on CUDA device %s: cublasCreate: status %d",
                         g->device, (int)s);
    }
    if (!e && (s = a->cublasSetStream(g->blas, g->stream)))
        e = synor__error(SYNOR_EIO, "trainer on CUDA device %s: cublasSetStream: status %d",
                         g->device, (int)s);
    g->nparams = t->lay.total;
    if (!e && (ce = a->cuMemAlloc(&g->params, g->nparams * sizeof(float))))
        e = ce == 2 ? synor__error(SYNOR_ENOMEM,
                                   "trainer on CUDA device %s (%s): %zu parameters: out of "
                                   "device memory",
                                   g->device, g->product, g->nparams)
                    : cu_err(g, "cuMemAlloc (parameters)", ce);
    if (have_prev)
        (void)a->cuCtxSetCurrent(prev);
    return e;
}

int synor_trainer_use_cuda(synor_trainer *t, unsigned device)
{
    return synor_trainer_use_cuda_replicas(t, device, 0);
}

int synor_trainer_use_cuda_replicas(synor_trainer *t, unsigned device, int replicas)
{
    if (!t)
        return synor__error(SYNOR_EINVAL, "synor_trainer_use_cuda: NULL trainer");
    if (replicas < 0 || replicas > t->nrep)
        return synor__error(SYNOR_EINVAL,
                            "synor_trainer_use_cuda: replicas is %d (0 = all, at most the "
                            "trainer's %d)",
                            replicas, t->nrep);
    if (t->gpu)
        return synor__error(SYNOR_ESTATE, "synor_trainer_use_cuda: already on %s", t->gpu->device);
    if (t->ocl)
        return synor__error(SYNOR_ESTATE, "synor_trainer_use_cuda: the trainer's replicas use an "
                                          "OpenCL device");
    unsigned seen = 0;
    synor_device_native nat;
    int found = 0;
    for (unsigned i = 0; i < synor_runtime_device_count(t->rt) && !found; i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(t->rt, i, &di) || strcmp(di.backend, "cuda"))
            continue;
        if (seen++ != device)
            continue;
        if (di.stopped || synor_runtime_device_native(t->rt, i, &nat) || !nat.cu_context)
            return synor__error(SYNOR_ENOTSUP,
                                "synor_trainer_use_cuda: CUDA device %s is stopped or has no "
                                "context", di.name);
        found = 1;
    }
    if (!found)
        return synor__error(SYNOR_ENOTSUP,
                            "synor_trainer_use_cuda: CUDA device %u asked, but the runtime has %u "
                            "CUDA device%s (no NVIDIA driver or GPU here, or the runtime's config "
                            "has cuda off)",
                            device, seen, seen == 1 ? "" : "s");
    train_gpu *g = synor__calloc(1, sizeof *g);
    if (!g)
        return SYNOR_ENOMEM;
    pthread_mutex_init(&g->lock, NULL);
    snprintf(g->device, sizeof g->device, "%s", nat.name ? nat.name : "cuda");
    snprintf(g->product, sizeof g->product, "%s", nat.product ? nat.product : "");
    g->stale = 1;
    t->gpu = g;
    int e = open_gpu(t, g, nat.cu_context);
    if (e) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", synor_errmsg());
        synor__train_gpu_free(t);
        return synor__error(e, "%s", msg);
    }
    for (int r = replicas == 0 ? 0 : t->nrep - replicas; r < t->nrep; r++)
        t->rep[r].cuda = 1;
    return 0;
}

void synor_trainer_gpu_stats(const synor_trainer *t, synor_train_gpu_stats *out)
{
    memset(out, 0, sizeof *out);
    if (t && t->gpu) {
        pthread_mutex_lock(&t->gpu->lock);
        *out = t->gpu->st;
        snprintf(out->device, sizeof out->device, "%s", t->gpu->device);
        snprintf(out->product, sizeof out->product, "%s", t->gpu->product);
        pthread_mutex_unlock(&t->gpu->lock);
    } else if (t && t->ocl) {
        synor__train_ocl_stats(t, out);
    }
}
