/* cl_backend.c - OpenCL devices as runtime devices: one worker thread per
 * device feeding an in-order command queue, and a memory node per device
 * (cl_mem buffers; transfers with clEnqueueRead/WriteBuffer(Rect) on a
 * second queue, blocking, so any thread may move data).
 *
 * The devices of one platform share a context, so that a replica moves
 * from one to another with clEnqueueCopyBuffer (the "peer" path) instead
 * of through the host.
 *
 * Which devices: cfg.opencl = SYNOR_OPENCL_ACCELERATORS (default) takes GPU
 * and accelerator devices; SYNOR_OPENCL_ALL also CPU devices such as PoCL's
 * (useful in tests: a separate memory space on any machine, though it
 * competes with the CPU workers for the same cores).
 *
 * Programs are the kernels' business: a kernel library builds them for
 * the device from its native handles (synor/kernel.h). */
#include <stdio.h>
#include <string.h>

#include <CL/cl.h>

#include "runtime/runtime_internal.h"

typedef struct synor__cl_dev {
    cl_platform_id platform;
    cl_device_id id;
    cl_context ctx;          /* shared by the platform's devices (one reference each) */
    int ctx_tried;           /* the platform's context was attempted */
    cl_command_queue queue;  /* kernels: the device's worker thread only */
    cl_command_queue xqueue; /* transfers: any thread (blocking calls) */
    int unified;
    cl_ulong mem;
    char product[128];
    synor__device *dev;
} synor__cl_dev;

typedef struct synor__cl_state {
    unsigned n;
    synor__cl_dev d[SYNOR__MAX_DEVICES];
} synor__cl_state;

/* An OpenCL call failed: the error for the caller; a lost device is
 * stopped so that its tasks move. */
static int cl_fail(synor__cl_dev *cd, const char *what, cl_int e)
{
    if (synor__cl_error_is_fatal(e))
        atomic_store(&cd->dev->stopped, 1);
    return synor__error(e == CL_MEM_OBJECT_ALLOCATION_FAILURE ? SYNOR_ENOMEM : SYNOR_EIO,
                        "OpenCL device %s (%s): %s: %s (%d)", cd->dev->name, cd->product, what,
                        synor__cl_error_name(e), (int)e);
}

/* ---------------------------------------------------------- memory node */

static int cl_alloc(synor__node *n, size_t bytes, void **buf)
{
    synor__cl_dev *cd = n->impl;
    cl_int e = CL_SUCCESS;
    cl_mem m = clCreateBuffer(cd->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &e);
    if (e != CL_SUCCESS)
        return synor__error(e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES ||
                                    e == CL_OUT_OF_HOST_MEMORY
                                ? SYNOR_ENOMEM
                                : SYNOR_EIO,
                            "memory node %s: clCreateBuffer of %zu bytes: %s", n->name, bytes,
                            synor__cl_error_name(e));
    *buf = m;
    return 0;
}

static void cl_free(synor__node *n, void *buf)
{
    (void)n;
    clReleaseMemObject((cl_mem)buf);
}

/* Host layout of d: rows of `width` bytes, `height` of them, host pitch. */
static void geometry(const synor_handle *d, size_t *width, size_t *height, size_t *pitch)
{
    size_t es = synor_dtype_bits(d->desc.dtype) / 8;
    if (d->desc.ndim == 2 && d->desc.ld != d->desc.shape[0] && es) {
        *width = d->desc.shape[0] * es;
        *height = d->desc.shape[1];
        *pitch = d->desc.ld * es;
    } else {
        *width = d->bytes;
        *height = 1;
        *pitch = d->bytes;
    }
}

static int cl_to_node(synor__node *n, void *buf, const synor_handle *d)
{
    synor__cl_dev *cd = n->impl;
    size_t w, h, pitch;
    geometry(d, &w, &h, &pitch);
    cl_int e;
    if (h == 1) {
        e = clEnqueueWriteBuffer(cd->xqueue, (cl_mem)buf, CL_TRUE, 0, w, d->desc.ptr, 0, NULL, NULL);
    } else {
        size_t zero[3] = {0, 0, 0}, region[3] = {w, h, 1};
        e = clEnqueueWriteBufferRect(cd->xqueue, (cl_mem)buf, CL_TRUE, zero, zero, region, w, 0,
                                     pitch, 0, d->desc.ptr, 0, NULL, NULL);
    }
    return e == CL_SUCCESS ? 0 : cl_fail(cd, "copy to device", e);
}

static int cl_to_host(synor__node *n, const void *buf, const synor_handle *d)
{
    synor__cl_dev *cd = n->impl;
    size_t w, h, pitch;
    geometry(d, &w, &h, &pitch);
    cl_int e;
    if (h == 1) {
        e = clEnqueueReadBuffer(cd->xqueue, (cl_mem)(uintptr_t)buf, CL_TRUE, 0, w, d->desc.ptr, 0,
                                NULL, NULL);
    } else {
        size_t zero[3] = {0, 0, 0}, region[3] = {w, h, 1};
        e = clEnqueueReadBufferRect(cd->xqueue, (cl_mem)(uintptr_t)buf, CL_TRUE, zero, zero, region,
                                    w, 0, pitch, 0, d->desc.ptr, 0, NULL, NULL);
    }
    return e == CL_SUCCESS ? 0 : cl_fail(cd, "copy to host", e);
}

/* Buffers of one context are usable on each of its devices: the copy runs
 * on the destination's transfer queue, and the source's last writer has
 * finished (its worker waits for each kernel). */
static int cl_can_peer(const synor__node *dst, const synor__node *src)
{
    const synor__cl_dev *a = dst->impl, *b = src->impl;
    return a->ctx && a->ctx == b->ctx;
}

static int cl_peer_copy(synor__node *dst, void *dbuf, synor__node *src, const void *sbuf,
                        size_t bytes)
{
    synor__cl_dev *cd = dst->impl;
    cl_int e = clEnqueueCopyBuffer(cd->xqueue, (cl_mem)(uintptr_t)sbuf, (cl_mem)dbuf, 0, 0,
                                   bytes ? bytes : 1, 0, NULL, NULL);
    if (e == CL_SUCCESS)
        e = clFinish(cd->xqueue);
    if (e != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "peer copy from %s", src->name);
        return cl_fail(cd, what, e);
    }
    return 0;
}

static const synor__node_ops cl_node_ops = {cl_alloc, cl_free, cl_to_node, cl_to_host,
                                            cl_can_peer, cl_peer_copy, NULL, NULL};

/* --------------------------------------------------------------- devices */

int synor__opencl_probe(synor_runtime *rt, unsigned *count)
{
    *count = 0;
    if (rt->cfg.opencl == SYNOR_OPENCL_OFF)
        return 0;
    cl_uint np = 0;
    cl_platform_id plats[8];
    if (clGetPlatformIDs(8, plats, &np) != CL_SUCCESS || np == 0)
        return 0; /* no ICD or no platform: no OpenCL devices */
    if (np > 8)
        np = 8;
    synor__cl_state *st = synor__calloc(1, sizeof *st);
    if (!st)
        return synor__error(SYNOR_ENOMEM, "runtime: out of memory");
    unsigned room = SYNOR__MAX_DEVICES - 2; /* host and test GPU */
    if (room > SYNOR__MAX_NODES - 2)
        room = SYNOR__MAX_NODES - 2;
    for (cl_uint p = 0; p < np && st->n < room; p++) {
        cl_device_id ids[8];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 8, ids, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint i = 0; i < nd && i < 8 && st->n < room; i++) {
            cl_device_type type = 0;
            clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            if ((type & CL_DEVICE_TYPE_CPU) && rt->cfg.opencl != SYNOR_OPENCL_ALL)
                continue;
            char vendor[64] = "";
            clGetDeviceInfo(ids[i], CL_DEVICE_VENDOR, sizeof vendor - 1, vendor, NULL);
            if (rt->cuda && strstr(vendor, "NVIDIA"))
                continue; /* the CUDA backend has this GPU */
            synor__cl_dev *cd = &st->d[st->n++];
            cd->platform = plats[p];
            cd->id = ids[i];
        }
    }
    rt->opencl = st;
    *count = st->n;
    return 0;
}

void synor__opencl_init_device(synor_runtime *rt, unsigned k, synor__device *d, synor__node *n)
{
    synor__cl_state *st = rt->opencl;
    synor__cl_dev *cd = &st->d[k];
    cd->dev = d;
    d->backend_data = cd;
    snprintf(d->name, sizeof d->name, "opencl%u", k);
    clGetDeviceInfo(cd->id, CL_DEVICE_NAME, sizeof cd->product - 1, cd->product, NULL);
    snprintf(d->product, sizeof d->product, "%s (OpenCL)", cd->product);
    d->native.product = cd->product;
    cl_device_type type = 0;
    clGetDeviceInfo(cd->id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    d->kind = (type & CL_DEVICE_TYPE_GPU)   ? SYNOR_KIND_GPU
              : (type & CL_DEVICE_TYPE_CPU) ? SYNOR_KIND_CPU
                                            : SYNOR_KIND_CUSTOM;
    clGetDeviceInfo(cd->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof cd->mem, &cd->mem, NULL);
    cl_bool unified = CL_FALSE;
    clGetDeviceInfo(cd->id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    cd->unified = unified == CL_TRUE;
    uint64_t cap = cd->mem;
    if (rt->cfg.opencl_memory && rt->cfg.opencl_memory < cap)
        cap = rt->cfg.opencl_memory;
    char nname[64];
    snprintf(nname, sizeof nname, "opencl%u", k);
    (void)synor__node_init(n, nname, &cl_node_ops, cd, cap, cd->unified ? 20e9 : 12e9,
                           cd->unified);

    cl_int e = CL_SUCCESS;
    if (!cd->ctx && !cd->ctx_tried) {
        /* One context for the devices of this platform (those after k too,
         * initialised next): their buffers then copy device to device. */
        cl_device_id ids[SYNOR__MAX_DEVICES];
        cl_uint nid = 0;
        for (unsigned j = k; j < st->n; j++)
            if (st->d[j].platform == cd->platform)
                ids[nid++] = st->d[j].id;
        cl_context ctx = clCreateContext(NULL, nid, ids, NULL, NULL, &e);
        for (unsigned j = k; j < st->n; j++)
            if (st->d[j].platform == cd->platform) {
                st->d[j].ctx_tried = 1;
                if (e == CL_SUCCESS && (j == k || clRetainContext(ctx) == CL_SUCCESS))
                    st->d[j].ctx = ctx;
            }
    }
    if (!cd->ctx) /* no shared context: one of its own (no peer path then) */
        cd->ctx = clCreateContext(NULL, 1, &cd->id, NULL, NULL, &e);
    if (!cd->ctx) {
        synor__device_disable(d, "no context");
        return;
    }
    cd->queue = clCreateCommandQueueWithProperties(cd->ctx, cd->id, NULL, &e);
    if (e == CL_SUCCESS)
        cd->xqueue = clCreateCommandQueueWithProperties(cd->ctx, cd->id, NULL, &e);
    if (e != CL_SUCCESS) {
        synor__device_disable(d, "no command queue");
        return;
    }
    d->native.cl_platform = cd->platform;
    d->native.cl_device = cd->id;
    d->native.cl_context = cd->ctx;
    d->native.cl_queue = cd->queue;
}

void synor__opencl_destroy(synor_runtime *rt)
{
    synor__cl_state *st = rt->opencl;
    if (!st)
        return;
    for (unsigned i = 0; i < st->n; i++) {
        synor__cl_dev *cd = &st->d[i];
        if (cd->queue)
            clReleaseCommandQueue(cd->queue);
        if (cd->xqueue)
            clReleaseCommandQueue(cd->xqueue);
        if (cd->ctx)
            clReleaseContext(cd->ctx);
    }
    synor__free(st);
    rt->opencl = NULL;
}

int synor__opencl_worker_begin(synor__worker *w)
{
    synor__cl_dev *cd = w->dev->backend_data;
    w->queue = cd ? cd->queue : NULL;
    return 0;
}
