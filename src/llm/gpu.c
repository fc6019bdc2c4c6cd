/* gpu.c - a context's CUDA offload: the matrix products of chosen layers
 * run with cuBLAS on one of the runtime's CUDA GPUs (synor_llm_ctx_opts.
 * gpu_layers).
 *
 * At creation every weight matrix of the offloaded layers (and the
 * classifier when all layers are) is dequantized to fp32 on the host and
 * uploaded once; per layer Q, K and V are stacked into one matrix of
 * dim + 2 kv_dim rows, and the gate and up matrices into one of 2 hidden
 * rows, so a layer is four products. A product copies its n activation
 * rows up, runs SGEMM (SGEMV for one row: decode) and copies the n output
 * rows down, all on the context's own stream (page-locked staging buffers
 * where the driver gives them, so the copies are DMA), then waits for the
 * stream. The driver API and cuBLAS are loaded at run time
 * (common/cuda_api.c): the build needs no CUDA.
 *
 * Weights are row-major (rows x cols, a row per output), which cuBLAS's
 * column-major view sees as their transpose (cols x rows, ld cols); n
 * activation rows of cols floats are a cols x n column-major matrix. So
 * Y (n x rows, row-major) = X W^T is, column-major, Y^T = op_T(W^T) X^T:
 * SGEMM(T, N, m = rows, n, k = cols, W, cols, X, cols, Y, rows).
 *
 * With the OpenCL backend (synor_llm_ctx_opts.gpu_backend) the same
 * products run on an OpenCL device through ocl.c; this file keeps what
 * both share: the choice of layers, the staging buffers, the counters and
 * the trace. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "common/cuda_api.h"
#include "llm/llm_ctx.h"
#include "synor/kernel.h"

enum { OP_N = 0, OP_T = 1 };

struct llm_gpu {
    llm_ocl *ocl; /* the OpenCL backend; NULL: CUDA */
    synor__cu_api api;
    int loaded;
    synor_llm_gpu_info info;
    CUcontext ctx, prev; /* prev: the caller's, restored after open */
    int have_prev;
    int shape[LLM_GPU_NMAT + 1][2]; /* rows, cols of each product */
    CUstream stream;
    cublasHandle_t blas;
    int first, nl;     /* layers first .. first + nl - 1 */
    CUdeviceptr *w;    /* per offloaded layer: LLM_GPU_QKV .. LLM_GPU_W2 */
    CUdeviceptr cls;   /* 0: the classifier stays on the CPU */
    CUdeviceptr dx, dy;
    size_t dx_cap, dy_cap; /* floats */
    float *hx, *hy;        /* host staging, B x widest input / output */
    int pinned;
    int trace;        /* time the copies and the product apart */
    uint64_t last[4]; /* of the last product (trace) */
    uint64_t last_up, last_down;
};

static int cu_err(const llm_gpu *g, const char *what, CUresult e)
{
    return synor__error(e == 2 ? SYNOR_ENOMEM : SYNOR_EIO, "LLM on CUDA device %s (%s): %s: %s (%d)",
                        g->info.device, g->info.product, what,
                        synor__cuda_error_name(&g->api, e), (int)e);
}

static int blas_err(const llm_gpu *g, const char *what, cublasStatus_t s)
{
    return synor__error(SYNOR_EIO, "LLM on CUDA device %s (%s): %s: cuBLAS status %d",
                        g->info.device, g->info.product, what, (int)s);
}

/* The rows and columns of product `which` of a model. */
static void shape(const synor_llm *m, int which, int *rows, int *cols)
{
    const synor_llm_hparams *h = &m->cfg;
    int kvd = h->dim / h->n_heads * h->n_kv_heads;
    switch (which) {
    case LLM_GPU_QKV:
        *rows = h->dim + 2 * kvd, *cols = h->dim;
        break;
    case LLM_GPU_WO:
        *rows = h->dim, *cols = h->dim;
        break;
    case LLM_GPU_W13:
        *rows = 2 * h->hidden_dim, *cols = h->dim;
        break;
    case LLM_GPU_W2:
        *rows = h->dim, *cols = h->hidden_dim;
        break;
    default:
        *rows = h->vocab_size, *cols = h->dim;
        break;
    }
}

/* Uploads the stacked matrices mats[0..k) (same cols) as one device
 * matrix, through tmp (room for all of it, fp32). */
static int upload(llm_gpu *g, const llm_mat *const *mats, int k, float *tmp, CUdeviceptr *out)
{
    const synor__cu_api *a = &g->api;
    size_t rows = 0, cols = (size_t)mats[0]->cols;
    for (int i = 0; i < k; i++)
        for (int r = 0; r < mats[i]->rows; r++, rows++)
            synor__llm_mat_row(mats[i], r, tmp + rows * cols);
    size_t bytes = rows * cols * sizeof(float);
    CUresult e = a->cuMemAlloc(out, bytes);
    if (e)
        return e == 2 ? synor__error(SYNOR_ENOMEM,
                                     "LLM on CUDA device %s (%s): %zu bytes of weights: out of "
                                     "device memory (%llu bytes resident so far)",
                                     g->info.device, g->info.product, bytes,
                                     (unsigned long long)g->info.weight_bytes)
                      : cu_err(g, "cuMemAlloc", e);
    g->info.weight_bytes += bytes;
    e = a->cuMemcpyHtoDAsync(*out, tmp, bytes, g->stream);
    if (!e)
        e = a->cuStreamSynchronize(g->stream); /* tmp is reused */
    return e ? cu_err(g, "uploading weights", e) : 0;
}

/* The runtime's CUDA device number `which` (among its CUDA devices). */
static int find_device(synor_llm_ctx *c, unsigned which, synor_device_native *nat,
                       uint64_t *capacity)
{
    unsigned seen = 0;
    for (unsigned i = 0; i < synor_runtime_device_count(c->rt); i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(c->rt, i, &di) || strcmp(di.backend, "cuda"))
            continue;
        if (seen++ != which)
            continue;
        if (di.stopped || synor_runtime_device_native(c->rt, i, nat) || !nat->cu_context)
            return synor__error(SYNOR_ENOTSUP,
                                "synor_llm_ctx_create: CUDA device %s is stopped or has no "
                                "context", di.name);
        *capacity = di.memory_capacity;
        return 0;
    }
    return synor__error(SYNOR_ENOTSUP,
                        "synor_llm_ctx_create: GPU layers asked on CUDA device %u, but the runtime "
                        "has %u CUDA device%s (no NVIDIA driver or GPU here, or the runtime's "
                        "config has cuda off)",
                        which, seen, seen == 1 ? "" : "s");
}

static int open_gpu(synor_llm_ctx *c, llm_gpu *g, const synor_device_native *nat, int cls,
                    float **tmp)
{
    const synor_llm *m = c->m;
    const synor__cu_api *a = &g->api;
    if (synor__cuda_api_load(&g->api, 1) < 0)
        return synor__error(SYNOR_ENOTSUP, "synor_llm_ctx_create: the CUDA driver cannot be "
                                           "loaded");
    g->loaded = 1;
    if (!a->blas)
        return synor__error(SYNOR_ENOTSUP,
                            "synor_llm_ctx_create: GPU layers need cuBLAS (libcublas.so.13, 12 "
                            "or 11), which cannot be loaded");
    if (!a->cuMemcpyHtoDAsync)
        return synor__error(SYNOR_ENOTSUP,
                            "synor_llm_ctx_create: the CUDA driver lacks cuMemcpyHtoDAsync_v2 / "
                            "cuMemAllocHost_v2");
    g->ctx = nat->cu_context;
    g->have_prev = a->cuCtxGetCurrent(&g->prev) == 0;
    for (int w = LLM_GPU_QKV; w <= LLM_GPU_CLS; w++)
        shape(m, w, &g->shape[w][0], &g->shape[w][1]);
    CUresult e = a->cuCtxSetCurrent(g->ctx);
    if (!e)
        e = a->cuStreamCreate(&g->stream, 1 /* non-blocking */);
    if (e)
        return cu_err(g, "creating a stream", e);
    cublasStatus_t s = a->cublasCreate(&g->blas);
    if (s) {
        g->blas = NULL;
        return blas_err(g, "cublasCreate", s);
    }
    if ((s = a->cublasSetStream(g->blas, g->stream)))
        return blas_err(g, "cublasSetStream", s);

    /* Staging and device activations: B rows of the widest input and of
     * the widest output of a layer (the classifier's grows on demand). */
    size_t B = c->max_batch, in = 0, outw = 0;
    for (int w = LLM_GPU_QKV; w <= LLM_GPU_CLS; w++) {
        int r, k;
        shape(m, w, &r, &k);
        in = (size_t)k > in ? (size_t)k : in;
        if (w != LLM_GPU_CLS)
            outw = (size_t)r > outw ? (size_t)r : outw;
    }
    g->dx_cap = B * in;
    g->dy_cap = B * outw;
    if ((e = a->cuMemAlloc(&g->dx, g->dx_cap * sizeof(float))) ||
        (e = a->cuMemAlloc(&g->dy, g->dy_cap * sizeof(float)))) {
        if (e != 2)
            return cu_err(g, "cuMemAlloc", e);
        return synor__error(SYNOR_ENOMEM,
                            "LLM on CUDA device %s (%s): activations for batches of %zu rows: out "
                            "of device memory",
                            g->info.device, g->info.product, B);
    }
    void *px = NULL, *py = NULL;
    if (a->cuMemAllocHost((void **)&px, g->dx_cap * sizeof(float)) == 0 &&
        a->cuMemAllocHost((void **)&py, g->dy_cap * sizeof(float)) == 0) {
        g->pinned = 1;
    } else { /* pageable memory works too, the copies are just slower */
        if (px)
            (void)a->cuMemFreeHost(px);
        px = synor__malloc(g->dx_cap * sizeof(float));
        py = synor__malloc(g->dy_cap * sizeof(float));
        if (!px || !py) {
            synor__free(px);
            synor__free(py);
            return SYNOR_ENOMEM;
        }
    }
    g->hx = px;
    g->hy = py;

    /* The weights. */
    size_t biggest = 0;
    for (int w = LLM_GPU_QKV; w <= LLM_GPU_CLS; w++) {
        int r, k;
        shape(m, w, &r, &k);
        if (w != LLM_GPU_CLS || cls)
            biggest = (size_t)r * (size_t)k > biggest ? (size_t)r * (size_t)k : biggest;
    }
    *tmp = synor__malloc(biggest * sizeof(float));
    g->w = synor__calloc((size_t)g->nl * LLM_GPU_NMAT + 1, sizeof *g->w);
    if (!*tmp || !g->w)
        return synor__error(SYNOR_ENOMEM, "synor_llm_ctx_create: out of memory for the GPU "
                                          "weights' staging");
    for (int i = 0; i < g->nl; i++) {
        const llm_layer *L = &m->layers[g->first + i];
        const llm_mat *qkv[3] = {&L->wq, &L->wk, &L->wv}, *wo[1] = {&L->wo},
                      *w13[2] = {&L->w1, &L->w3}, *w2[1] = {&L->w2};
        CUdeviceptr *d = g->w + (size_t)i * LLM_GPU_NMAT;
        int err = upload(g, qkv, 3, *tmp, &d[LLM_GPU_QKV]);
        if (!err)
            err = upload(g, wo, 1, *tmp, &d[LLM_GPU_WO]);
        if (!err)
            err = upload(g, w13, 2, *tmp, &d[LLM_GPU_W13]);
        if (!err)
            err = upload(g, w2, 1, *tmp, &d[LLM_GPU_W2]);
        if (err)
            return err;
    }
    if (cls) {
        const llm_mat *cm[1] = {&m->cls};
        int err = upload(g, cm, 1, *tmp, &g->cls);
        if (err)
            return err;
    }
    g->info.layers = g->nl;
    g->info.classifier = cls;
    return 0;
}

/* SYNOR_LLM_GPU_AUTO: the last layers whose fp32 weights fit in the
 * device's memory (as the runtime counts it: all of it, or cuda_memory)
 * beside the activations and a reserve for the context and cuBLAS (a
 * tenth, at most 1 GiB); all of them and the classifier if that fits. */
static int auto_layers(const synor_llm_ctx *c, uint64_t capacity)
{
    const synor_llm *m = c->m;
    int L = m->cfg.n_layers, r, k;
    uint64_t per_layer = 0, acts = 0, in = 0, out = 0;
    for (int w = LLM_GPU_QKV; w < LLM_GPU_NMAT; w++) {
        shape(m, w, &r, &k);
        per_layer += (uint64_t)r * (uint64_t)k * sizeof(float);
        in = (uint64_t)k > in ? (uint64_t)k : in;
        out = (uint64_t)r > out ? (uint64_t)r : out;
    }
    shape(m, LLM_GPU_CLS, &r, &k);
    uint64_t cls = (uint64_t)r * (uint64_t)k * sizeof(float);
    acts = (uint64_t)c->max_batch * (in + out + (uint64_t)r) * sizeof(float);
    uint64_t reserve = capacity / 10 < (1ull << 30) ? capacity / 10 : (1ull << 30);
    if (capacity <= reserve + acts)
        return 0;
    uint64_t room = capacity - reserve - acts;
    if (room >= per_layer * (uint64_t)L + cls)
        return L; /* and the classifier */
    uint64_t n = room / per_layer;
    return n >= (uint64_t)L ? L - 1 : (int)n; /* L - 1: below "all" */
}

/* The OpenCL backend's staging (host memory) and device (ocl.c). */
static int open_ocl(synor_llm_ctx *c, llm_gpu *g, const synor_device_native *nat)
{
    size_t B = c->max_batch, in = 0, outw = 0;
    for (int w = LLM_GPU_QKV; w <= LLM_GPU_CLS; w++) {
        shape(c->m, w, &g->shape[w][0], &g->shape[w][1]);
        in = (size_t)g->shape[w][1] > in ? (size_t)g->shape[w][1] : in;
        if (w != LLM_GPU_CLS)
            outw = (size_t)g->shape[w][0] > outw ? (size_t)g->shape[w][0] : outw;
    }
    g->hx = synor__malloc(B * in * sizeof(float));
    g->hy = synor__malloc(B * outw * sizeof(float));
    if (!g->hx || !g->hy)
        return synor__error(SYNOR_ENOMEM, "synor_llm_ctx_create: out of memory");
    g->info.layers = g->nl;
    g->info.classifier = c->gpu_cls;
    return synor__llm_ocl_open(c, nat, g->nl, g->first, (const int(*)[2])g->shape, &g->info,
                               &g->ocl);
}

int synor__llm_gpu_open(synor_llm_ctx *c, int layers, unsigned device, unsigned backend)
{
    int L = c->m->cfg.n_layers;
    if (layers < 0 && layers != SYNOR_LLM_GPU_AUTO)
        return synor__error(SYNOR_EINVAL, "synor_llm_ctx_create: gpu_layers %d is negative", layers);
    if (backend > SYNOR_LLM_GPU_OPENCL)
        return synor__error(SYNOR_EINVAL,
                            "synor_llm_ctx_create: gpu_backend %u: SYNOR_LLM_GPU_CUDA or _OPENCL",
                            backend);
    if (layers == 0)
        return 0;
    synor_device_native nat;
    uint64_t capacity = 0;
    int ocl = backend == SYNOR_LLM_GPU_OPENCL;
    int e = ocl ? synor__llm_ocl_find(c, device, &nat, &capacity)
                : find_device(c, device, &nat, &capacity);
    if (e)
        return e;
    if (layers == SYNOR_LLM_GPU_AUTO) {
        layers = auto_layers(c, capacity);
        if (layers == 0)
            return 0; /* nothing fits: the CPU runs it all */
    }
    llm_gpu *g = synor__calloc(1, sizeof *g);
    if (!g)
        return SYNOR_ENOMEM;
    snprintf(g->info.device, sizeof g->info.device, "%s",
             nat.name ? nat.name : ocl ? "opencl" : "cuda");
    snprintf(g->info.product, sizeof g->info.product, "%s", nat.product ? nat.product : "");
    g->nl = layers >= L ? L : layers;
    g->first = L - g->nl;
    c->gpu = g;
    c->gpu_first = g->first;
    c->gpu_cls = layers >= L;
    c->gpu_up = g->nl;
    c->gpu_cls_up = c->gpu_cls;
    c->split = (synor_llm_split){g->nl, g->nl};
    float *tmp = NULL;
    if (ocl) {
        e = open_ocl(c, g, &nat);
    } else {
        e = open_gpu(c, g, &nat, c->gpu_cls, &tmp);
        synor__free(tmp);
        if (g->have_prev)
            (void)g->api.cuCtxSetCurrent(g->prev);
    }
    if (e) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", synor_errmsg());
        synor__llm_gpu_close(c);
        return synor__error(e, "%s", msg);
    }
    return 0;
}

void synor__llm_gpu_close(synor_llm_ctx *c)
{
    llm_gpu *g = c->gpu;
    if (!g)
        return;
    c->gpu = NULL;
    c->gpu_first = c->m->cfg.n_layers;
    c->gpu_cls = 0;
    c->gpu_up = c->gpu_cls_up = 0;
    c->split = (synor_llm_split){0, 0};
    if (!g->loaded) { /* OpenCL, or CUDA that never loaded */
        synor__llm_ocl_close(g->ocl);
        synor__free(g->hx);
        synor__free(g->hy);
        synor__free(g->w);
        synor__free(g);
        return;
    }
    const synor__cu_api *a = &g->api;
    CUcontext prev = NULL;
    if (g->loaded && g->ctx && a->cuCtxGetCurrent(&prev) == 0 && a->cuCtxSetCurrent(g->ctx) == 0) {
        if (g->stream)
            (void)a->cuStreamSynchronize(g->stream);
        if (g->w)
            for (size_t i = 0; i < (size_t)g->nl * LLM_GPU_NMAT; i++)
                if (g->w[i])
                    (void)a->cuMemFree(g->w[i]);
        if (g->cls)
            (void)a->cuMemFree(g->cls);
        if (g->dx)
            (void)a->cuMemFree(g->dx);
        if (g->dy)
            (void)a->cuMemFree(g->dy);
        if (g->pinned) {
            (void)a->cuMemFreeHost(g->hx);
            (void)a->cuMemFreeHost(g->hy);
            g->hx = g->hy = NULL;
        }
        if (g->blas)
            (void)a->cublasDestroy(g->blas);
        if (g->stream)
            (void)a->cuStreamDestroy(g->stream);
        (void)a->cuCtxSetCurrent(prev);
    }
    if (!g->pinned) {
        synor__free(g->hx);
        synor__free(g->hy);
    }
    synor__free(g->w);
    if (g->loaded)
        synor__cuda_api_unload(&g->api);
    synor__free(g);
}

float *synor__llm_gpu_in(llm_gpu *g) { return g->hx; }
float *synor__llm_gpu_out(llm_gpu *g) { return g->hy; }

int synor__llm_gpu_matmul(llm_gpu *g, int which, int layer, int n, const float *x, float *y)
{
    if (g->ocl) {
        int rc = synor__llm_ocl_matmul(g->ocl, which, layer, n, x, y, g->trace ? g->last : NULL);
        if (rc)
            return rc;
        size_t in = (size_t)n * (size_t)g->shape[which][1] * sizeof(float),
               out = (size_t)n * (size_t)g->shape[which][0] * sizeof(float);
        if (g->trace) {
            g->last_up = in;
            g->last_down = out;
        }
        g->info.bytes_up += in;
        g->info.bytes_down += out;
        g->info.products++;
        return 0;
    }
    const synor__cu_api *a = &g->api;
    int rows = g->shape[which][0], cols = g->shape[which][1];
    CUdeviceptr w = which == LLM_GPU_CLS ? g->cls
                                         : g->w[(size_t)(layer - g->first) * LLM_GPU_NMAT + which];
    size_t in = (size_t)n * (size_t)cols, out = (size_t)n * (size_t)rows;
    CUresult e = a->cuCtxSetCurrent(g->ctx);
    if (e)
        return cu_err(g, "cuCtxSetCurrent", e);
    if (out > g->dy_cap) { /* the classifier's rows of a batch */
        (void)a->cuStreamSynchronize(g->stream);
        (void)a->cuMemFree(g->dy);
        g->dy = 0;
        g->dy_cap = 0;
        if ((e = a->cuMemAlloc(&g->dy, out * sizeof(float))))
            return cu_err(g, "cuMemAlloc (logits)", e);
        g->dy_cap = out;
    }
    if (in > g->dx_cap)
        return synor__error(SYNOR_EINVAL, "LLM on CUDA: %zu input floats (room for %zu)", in,
                            g->dx_cap);
    const float one = 1.0f, zero = 0.0f;
    if (g->trace)
        g->last[0] = synor__llm_now_ns();
    float *dx = (float *)(uintptr_t)g->dx, *dy = (float *)(uintptr_t)g->dy;
    const float *dw = (const float *)(uintptr_t)w;
    if ((e = a->cuMemcpyHtoDAsync(g->dx, x, in * sizeof(float), g->stream)))
        return cu_err(g, "copy to device", e);
    if (g->trace) {
        if ((e = a->cuStreamSynchronize(g->stream)))
            return cu_err(g, "copy to device", e);
        g->last[1] = synor__llm_now_ns();
    }
    cublasStatus_t s;
    if (n == 1 && a->cublasSgemv)
        s = a->cublasSgemv(g->blas, OP_T, cols, rows, &one, dw, cols, dx, 1, &zero, dy, 1);
    else
        s = a->cublasSgemm(g->blas, OP_T, OP_N, rows, n, cols, &one, dw, cols, dx, cols, &zero, dy,
                           rows);
    if (s)
        return blas_err(g, n == 1 && a->cublasSgemv ? "cublasSgemv" : "cublasSgemm", s);
    if (g->trace) {
        if ((e = a->cuStreamSynchronize(g->stream)))
            return cu_err(g, n == 1 ? "cublasSgemv" : "cublasSgemm", e);
        g->last[2] = synor__llm_now_ns();
    }
    if ((e = a->cuMemcpyDtoHAsync(y, g->dy, out * sizeof(float), g->stream)) ||
        (e = a->cuStreamSynchronize(g->stream)))
        return cu_err(g, "copy to host", e);
    if (g->trace) {
        g->last[3] = synor__llm_now_ns();
        g->last_up = in * sizeof(float);
        g->last_down = out * sizeof(float);
    }
    g->info.bytes_up += in * sizeof(float);
    g->info.bytes_down += out * sizeof(float);
    g->info.products++;
    return 0;
}

void synor_llm_ctx_gpu(const synor_llm_ctx *c, synor_llm_gpu_info *out)
{
    memset(out, 0, sizeof *out);
    if (c && c->gpu)
        *out = c->gpu->info;
}

void synor__llm_gpu_trace(llm_gpu *g, int on) { g->trace = on; }

void synor__llm_gpu_last(const llm_gpu *g, uint64_t t[4], uint64_t *up, uint64_t *down)
{
    memcpy(t, g->last, sizeof g->last);
    *up = g->last_up;
    *down = g->last_down;
}
