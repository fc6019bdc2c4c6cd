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
    /* cfg.cuda_staging: two page-locked buffers of stage_bytes, one copy
     * through them at a time */
    pthread_mutex_t slock;
    int slock_init;
    char *stage[2];
    size_t stage_bytes;
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

/* A chunk of a staged copy: the host rows it packs, from row r at byte o
 * of the row, `bytes` in all; on the device it is contiguous at doff. */
typedef struct stage_chunk {
    size_t r, o, bytes, doff;
} stage_chunk;

/* Packs (to the device) or unpacks chunk c between the host's rows (w
 * bytes each, pitch apart) and buf. */
static void stage_move(const stage_chunk *c, char *host, size_t w, size_t pitch, char *buf,
                       int to_dev)
{
    size_t r = c->r, o = c->o, done = 0;
    while (done < c->bytes) {
        size_t take = w - o < c->bytes - done ? w - o : c->bytes - done;
        char *hp = host + r * pitch + o;
        if (to_dev)
            memcpy(buf + done, hp, take);
        else
            memcpy(hp, buf + done, take);
        done += take;
        o += take;
        if (o == w)
            o = 0, r++;
    }
}

/* The next chunk after position (*r, *o) of h rows of w bytes. */
static stage_chunk stage_next(size_t *r, size_t *o, size_t w, size_t h, size_t cap)
{
    stage_chunk c = {*r, *o, 0, *r * w + *o};
    while (*r < h && c.bytes < cap) {
        size_t take = w - *o < cap - c.bytes ? w - *o : cap - c.bytes;
        c.bytes += take;
        *o += take;
        if (*o == w)
            *o = 0, (*r)++;
    }
    return c;
}

/* A copy through the staging buffers (cfg.cuda_staging). To the device:
 * pack chunk i into buffer i % 2, wait for the stream (chunk i - 1's DMA,
 * which read the other buffer), enqueue chunk i; so packing overlaps the
 * previous chunk's DMA. To the host: enqueue chunk i into buffer i % 2,
 * unpack chunk i - 1 from the other while it runs, wait. */
static CUresult staged_copy(synor__cu_dev *cd, char *host, size_t w, size_t h, size_t pitch,
                            CUdeviceptr dev, int to_dev)
{
    const synor__cu_api *a = cd->api;
    size_t r = 0, o = 0;
    stage_chunk prev = {0, 0, 0, 0};
    CUresult e = 0;
    pthread_mutex_lock(&cd->slock);
    for (int k = 0; !e && r < h; k ^= 1) {
        stage_chunk c = stage_next(&r, &o, w, h, cd->stage_bytes);
        if (to_dev) {
            stage_move(&c, host, w, pitch, cd->stage[k], 1);
            e = a->cuStreamSynchronize(cd->xstream);
            if (!e)
                e = a->cuMemcpyHtoDAsync(dev + c.doff, cd->stage[k], c.bytes, cd->xstream);
        } else {
            e = a->cuMemcpyDtoHAsync(cd->stage[k], dev + c.doff, c.bytes, cd->xstream);
            if (!e && prev.bytes)
                stage_move(&prev, host, w, pitch, cd->stage[k ^ 1], 0);
            if (!e)
                e = a->cuStreamSynchronize(cd->xstream);
            prev = c;
            if (!e && r >= h) /* the last chunk */
                stage_move(&c, host, w, pitch, cd->stage[k], 0);
        }
    }
    if (!e && to_dev)
        e = a->cuStreamSynchronize(cd->xstream);
    pthread_mutex_unlock(&cd->slock);
    return e;
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
    if (cd->stage[0] && w) {
        CUresult e = cd->api->cuCtxSetCurrent(cd->ctx);
        if (e == 0)
            e = staged_copy(cd, (char *)d->desc.ptr, w, h, pitch, (CUdeviceptr)(uintptr_t)dev,
                            to_dev);
        return e == 0 ? 0 : cu_fail(cd, to_dev ? "staged copy to device" : "staged copy to host", e);
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
    /* Staging buffers where asked for and to be had (else pageable copies). */
    if (rt->cfg.cuda_staging && a->cuMemAllocHost && a->cuMemcpyHtoDAsync &&
        pthread_mutex_init(&cd->slock, NULL) == 0) {
        cd->slock_init = 1;
        size_t b = (size_t)rt->cfg.cuda_staging;
        void *p0 = NULL, *p1 = NULL;
        if (a->cuMemAllocHost(&p0, b) == 0 && a->cuMemAllocHost(&p1, b) == 0) {
            cd->stage[0] = p0;
            cd->stage[1] = p1;
            cd->stage_bytes = b;
        } else if (p0) {
            (void)a->cuMemFreeHost(p0);
        }
    }
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
        for (int k = 0; k < 2; k++)
            if (cd->stage[k])
                (void)a->cuMemFreeHost(cd->stage[k]);
        if (cd->slock_init)
            pthread_mutex_destroy(&cd->slock);
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
