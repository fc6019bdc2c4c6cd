/* cuda_backend.c - NVIDIA GPUs as runtime devices through the CUDA driver
 * API, loaded with dlopen (common/cuda_api.c): the build needs no CUDA, and
 * a machine without it simply has no CUDA devices. Each GPU gets one worker
 * thread feeding a stream (the device's primary context is made current on
 * it) and a memory node (cuMemAlloc buffers; transfers with cuMemcpy2D on a
 * second stream, synchronous, so any thread can move data). What kernels
 * need beyond that (cuBLAS handles, compiled modules) belongs to their
 * kernel library (synor/kernel.h), which gets the context and the stream
 * from the device's native handles. When a GPU is used through CUDA, the
 * OpenCL backend skips NVIDIA's OpenCL devices (the same GPU twice). GPUs
 * the driver lets access each other's memory get peer access enabled, and
 * replicas move between them with cuMemcpyPeer (the "peer" path). */
#include <stdio.h>
#include <string.h>

#include "common/cuda_api.h"
#include "runtime/runtime_internal.h"

typedef struct synor__cu_dev {
    const synor__cu_api *api;
    CUdevice id;
    CUcontext ctx;           /* the device's primary context */
    CUstream stream;         /* kernels: the device's worker only */
    CUstream xstream;        /* transfers: any thread, synchronous */
    size_t mem;
    char product[128];
    synor__device *dev;
} synor__cu_dev;

typedef struct synor__cu_state {
    synor__cu_api api;
    unsigned n;
    synor__cu_dev d[SYNOR__MAX_DEVICES];
} synor__cu_state;

/* A CUDA call failed: the error for the caller; after a sticky error the
 * device stops, so that its tasks move. */
static int cu_fail(synor__cu_dev *cd, const char *what, CUresult e)
{
    if (synor__cuda_error_is_sticky(e))
        atomic_store(&cd->dev->stopped, 1);
    return synor__error(e == 2 ? SYNOR_ENOMEM : SYNOR_EIO, "CUDA device %s (%s): %s: %s (%d)",
                        cd->dev->name, cd->product, what, synor__cuda_error_name(cd->api, e),
                        (int)e);
}

/* ---------------------------------------------------------- memory node */

static int cu_alloc(synor__node *n, size_t bytes, void **buf)
{
    synor__cu_dev *cd = n->impl;
    const synor__cu_api *a = cd->api;
    CUdeviceptr p = 0;
    CUresult e = a->cuCtxSetCurrent(cd->ctx);
    if (e == 0)
        e = a->cuMemAlloc(&p, bytes ? bytes : 1);
    if (e != 0)
        return e == 2 /* CUDA_ERROR_OUT_OF_MEMORY */
                   ? synor__error(SYNOR_ENOMEM, "memory node %s: cuMemAlloc of %zu bytes: out of "
                                                "device memory", n->name, bytes)
                   : cu_fail(cd, "cuMemAlloc", e);
    *buf = (void *)(uintptr_t)p;
    return 0;
}

static void cu_free(synor__node *n, void *buf)
{
    synor__cu_dev *cd = n->impl;
    if (cd->api->cuCtxSetCurrent(cd->ctx) == 0)
        (void)cd->api->cuMemFree((CUdeviceptr)(uintptr_t)buf);
}

/* One 2-D copy: rows of width bytes, `height` of them, host pitch. */
static int copy(synor__node *n, const synor_handle *d, void *dev, int to_dev)
{
    synor__cu_dev *cd = n->impl;
    size_t es = synor_dtype_bits(d->desc.dtype) / 8, w = d->bytes, h = 1, pitch = d->bytes;
    if (d->desc.ndim == 2 && d->desc.ld != d->desc.shape[0] && es) {
        w = d->desc.shape[0] * es;
        h = d->desc.shape[1];
        pitch = d->desc.ld * es;
    }
    synor__cu_memcpy2d c;
    memset(&c, 0, sizeof c);
    c.WidthInBytes = w;
    c.Height = h;
    if (to_dev) {
        c.srcMemoryType = SYNOR__CU_MEMORYTYPE_HOST;
        c.srcHost = d->desc.ptr;
        c.srcPitch = pitch;
        c.dstMemoryType = SYNOR__CU_MEMORYTYPE_DEVICE;
        c.dstDevice = (CUdeviceptr)(uintptr_t)dev;
        c.dstPitch = w;
    } else {
        c.srcMemoryType = SYNOR__CU_MEMORYTYPE_DEVICE;
        c.srcDevice = (CUdeviceptr)(uintptr_t)dev;
        c.srcPitch = w;
        c.dstMemoryType = SYNOR__CU_MEMORYTYPE_HOST;
        c.dstHost = d->desc.ptr;
        c.dstPitch = pitch;
    }
    CUresult e = cd->api->cuCtxSetCurrent(cd->ctx);
    if (e == 0)
        e = cd->api->cuMemcpy2D(&c);
    return e == 0 ? 0 : cu_fail(cd, to_dev ? "copy to device" : "copy to host", e);
}

static int cu_to_node(synor__node *n, void *buf, const synor_handle *d) { return copy(n, d, buf, 1); }
static int cu_to_host(synor__node *n, const void *buf, const synor_handle *d)
{
    return copy(n, d, (void *)(uintptr_t)buf, 0);
}

/* A peer path from src to dst: the driver says dst can access src's memory,
 * and dst's context has that access enabled (done here, once per pair, on
 * the thread creating the runtime). */
static int cu_can_peer(const synor__node *dst, const synor__node *src)
{
    const synor__cu_dev *a = dst->impl, *b = src->impl;
    const synor__cu_api *api = a->api;
    int can = 0;
    if (!api->cuMemcpyPeer || !a->ctx || !b->ctx ||
        api->cuDeviceCanAccessPeer(&can, a->id, b->id) != 0 || !can ||
        api->cuCtxSetCurrent(a->ctx) != 0)
        return 0;
    CUresult e = api->cuCtxEnablePeerAccess(b->ctx, 0);
    return e == 0 || e == 704 /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED */;
}

static int cu_peer_copy(synor__node *dst, void *dbuf, synor__node *src, const void *sbuf,
                        size_t bytes)
{
    synor__cu_dev *a = dst->impl, *b = src->impl;
    CUresult e = a->api->cuCtxSetCurrent(a->ctx);
    if (e == 0)
        e = a->api->cuMemcpyPeer((CUdeviceptr)(uintptr_t)dbuf, a->ctx,
                                 (CUdeviceptr)(uintptr_t)sbuf, b->ctx, bytes ? bytes : 1);
    if (e != 0) {
        char what[96];
        snprintf(what, sizeof what, "peer copy from %s", src->name);
        return cu_fail(a, what, e);
    }
    return 0;
}

/* Page-locks the caller's host memory (for every context: PORTABLE), so
 * that copies from and to it run at the link's speed instead of through
 * the driver's pageable staging. On the H200 of 2026-11-27 pageable tile
 * copies ran at about 5.7 GB/s. */
static int cu_pin(synor__node *n, void *ptr, size_t bytes)
{
    synor__cu_dev *cd = n->impl;
    const synor__cu_api *a = cd->api;
    if (!a->cuMemHostRegister || !ptr || !bytes || a->cuCtxSetCurrent(cd->ctx) != 0)
        return 0;
    CUresult e = a->cuMemHostRegister(ptr, bytes, 1u /* CU_MEMHOSTREGISTER_PORTABLE */);
    /* Already registered (by the caller or an overlapping range), or the
     * system refuses to lock that much: copies stay pageable. */
    return e == 0 ? 1 : 0;
}

static void cu_unpin(synor__node *n, void *ptr)
{
    synor__cu_dev *cd = n->impl;
    if (cd->api->cuMemHostUnregister && cd->api->cuCtxSetCurrent(cd->ctx) == 0)
        (void)cd->api->cuMemHostUnregister(ptr);
}

static const synor__node_ops cu_node_ops = {cu_alloc, cu_free, cu_to_node, cu_to_host,
                                            cu_can_peer, cu_peer_copy, cu_pin, cu_unpin};

/* --------------------------------------------------------------- devices */

int synor__cuda_probe(synor_runtime *rt, unsigned *count)
{
    *count = 0;
    if (!rt->cfg.cuda)
        return 0;
    synor__cu_state *st = synor__calloc(1, sizeof *st);
    if (!st)
        return synor__error(SYNOR_ENOMEM, "runtime: out of memory");
    int n = 0;
    if (synor__cuda_api_load(&st->api, 0) < 0 || st->api.cuInit(0) != 0 ||
        st->api.cuDeviceGetCount(&n) != 0 || n <= 0) {
        synor__cuda_api_unload(&st->api);
        synor__free(st);
        return 0; /* no driver or no GPU: no CUDA devices */
    }
    unsigned room = SYNOR__MAX_DEVICES - 2;
    if (room > SYNOR__MAX_NODES - 2)
        room = SYNOR__MAX_NODES - 2;
    for (int i = 0; i < n && st->n < room; i++) {
        synor__cu_dev *cd = &st->d[st->n];
        if (st->api.cuDeviceGet(&cd->id, i) != 0)
            continue;
        cd->api = &st->api;
        st->n++;
    }
    rt->cuda = st;
    *count = st->n;
    return 0;
}

void synor__cuda_init_device(synor_runtime *rt, unsigned k, synor__device *d, synor__node *n)
{
    synor__cu_state *st = rt->cuda;
    synor__cu_dev *cd = &st->d[k];
    const synor__cu_api *a = &st->api;
    cd->dev = d;
    d->backend_data = cd;
    d->kind = SYNOR_KIND_GPU;
    snprintf(d->name, sizeof d->name, "cuda%u", k);
    if (a->cuDeviceGetName(cd->product, (int)sizeof cd->product - 1, cd->id) != 0)
        snprintf(cd->product, sizeof cd->product, "CUDA device %u", k);
    snprintf(d->product, sizeof d->product, "%s (CUDA)", cd->product);
    d->native.product = cd->product;
    (void)a->cuDeviceTotalMem(&cd->mem, cd->id);
    uint64_t cap = cd->mem;
    if (rt->cfg.cuda_memory && rt->cfg.cuda_memory < cap)
        cap = rt->cfg.cuda_memory;
    char nname[64];
    snprintf(nname, sizeof nname, "cuda%u", k);
    /* 25 GB/s: a PCIe 4.0/5.0 x16 link in practice, for placement only. */
    (void)synor__node_init(n, nname, &cu_node_ops, cd, cap, 25e9, 0);
    if (a->cuDevicePrimaryCtxRetain(&cd->ctx, cd->id) != 0 || a->cuCtxSetCurrent(cd->ctx) != 0) {
        cd->ctx = NULL;
        synor__device_disable(d, "no context");
        return;
    }
    if (a->cuStreamCreate(&cd->stream, 1 /* non-blocking */) != 0 ||
        a->cuStreamCreate(&cd->xstream, 1) != 0) {
        synor__device_disable(d, "no stream");
        return;
    }
    d->native.cu_device = cd->id;
    d->native.cu_context = cd->ctx;
    d->native.cu_stream = cd->stream;
}

void synor__cuda_destroy(synor_runtime *rt)
{
    synor__cu_state *st = rt->cuda;
    if (!st)
        return;
    const synor__cu_api *a = &st->api;
    for (unsigned i = 0; i < st->n; i++) {
        synor__cu_dev *cd = &st->d[i];
        if (!cd->ctx)
            continue;
        (void)a->cuCtxSetCurrent(cd->ctx);
        if (cd->stream)
            (void)a->cuStreamDestroy(cd->stream);
        if (cd->xstream)
            (void)a->cuStreamDestroy(cd->xstream);
        (void)a->cuDevicePrimaryCtxRelease(cd->id);
    }
    synor__cuda_api_unload(&st->api);
    synor__free(st);
    rt->cuda = NULL;
}

int synor__cuda_worker_begin(synor__worker *w)
{
    synor__cu_dev *cd = w->dev->backend_data;
    w->queue = cd ? cd->stream : NULL;
    return cd && cd->ctx ? (cd->api->cuCtxSetCurrent(cd->ctx) == 0 ? 0 : SYNOR_EIO) : 0;
}
