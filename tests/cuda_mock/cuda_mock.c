/* cuda_mock.c - a test double of the CUDA driver API, built as
 * libcuda.so.1 for tests/test_runtime_cuda_mock.c only (never installed,
 * never loaded outside that test: it is found through the test's
 * LD_LIBRARY_PATH). It is not a GPU and computes nothing of its own beyond
 * copies and the three element-wise kernels: "device memory" is host
 * memory, and each call checks what a real driver would refuse, so that the
 * runtime's CUDA backend (src/runtime/cuda_backend.c, src/kernels/
 * cuda_ops.c) is exercised on a machine without a GPU:
 *   - a context must be current on the calling thread for memory, copy,
 *     stream and launch calls (contexts are per thread in CUDA);
 *   - every device pointer and every byte a copy or a kernel touches must
 *     lie inside a live allocation (CUDA_ERROR_INVALID_VALUE otherwise);
 *   - the module must be PTX text that defines each kernel asked for;
 *   - kernel parameters are read as the kernels of cuda_ops.cu declare them
 *     (const float *x, float *y, long long n).
 *   - with synor_mock_devices > 1 (set by the test before a runtime is
 *     created), each device has its own primary context and memory: a
 *     pointer is valid only in its device's context, and cuMemcpyPeer
 *     needs the destination's context to have enabled peer access to the
 *     source's (cuCtxEnablePeerAccess).
 * Struct layouts and status codes follow the public cuda.h. Counters
 * (synor_mock_*) let the test see what went through. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
};

typedef struct CUDA_MEMCPY2D {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

enum { MEM_HOST = 1, MEM_DEVICE = 2 };

#define MOCK_MEMORY (64ull << 20) /* what cuDeviceTotalMem reports */
#define MAX_ALLOCS 4096
#define MAX_DEV 4

_Atomic long synor_mock_allocs, synor_mock_copies, synor_mock_launches, synor_mock_errors,
    synor_mock_peer_copies, synor_mock_host_allocs, synor_mock_async_copies;
int synor_mock_devices = 1; /* 1..MAX_DEV, read by cuInit */

static int inited, ndev = 1;
static int contexts[MAX_DEV];       /* the primary contexts' identities */
static _Thread_local void *current; /* per thread, as in CUDA */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *p;
    size_t n;
    int dev;
} allocs[MAX_ALLOCS];
static size_t used[MAX_DEV];
static int peer_on[MAX_DEV][MAX_DEV]; /* [dst][src]: dst's context may access src's memory */

static CUresult fail(CUresult e)
{
    atomic_fetch_add(&synor_mock_errors, 1);
    return e;
}

/* The device whose context is ctx, or -1. */
static int ctx_dev(const void *ctx)
{
    for (int i = 0; i < ndev; i++)
        if (ctx == &contexts[i])
            return i;
    return -1;
}

/* Is [p, p + n) inside one live allocation of device dev? */
static int in_range(int dev, CUdeviceptr p, size_t n)
{
    const char *c = (const char *)(uintptr_t)p;
    int ok = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < MAX_ALLOCS && !ok; i++)
        ok = allocs[i].p && allocs[i].dev == dev && c >= allocs[i].p && n <= allocs[i].n &&
             (size_t)(c - allocs[i].p) <= allocs[i].n - n;
    pthread_mutex_unlock(&lock);
    return ok;
}

/* ... of the device whose context is current on this thread? */
int synor_mock_device_range(CUdeviceptr p, size_t n);
int synor_mock_device_range(CUdeviceptr p, size_t n) { return in_range(ctx_dev(current), p, n); }

CUresult cuInit(unsigned flags)
{
    if (flags)
        return fail(CUDA_ERROR_INVALID_VALUE);
    inited = 1;
    ndev = synor_mock_devices < 1 ? 1 : synor_mock_devices > MAX_DEV ? MAX_DEV : synor_mock_devices;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
    if (!inited)
        return fail(CUDA_ERROR_NOT_INITIALIZED);
    *n = ndev;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int i)
{
    if (i < 0 || i >= ndev)
        return fail(CUDA_ERROR_INVALID_DEVICE);
    *d = i;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (d < 0 || d >= ndev || len < 1)
        return fail(CUDA_ERROR_INVALID_VALUE);
    strncpy(name, "CUDA driver mock (host memory, tests only)", (size_t)len - 1);
    name[len - 1] = 0;
    return CUDA_SUCCESS;
}

/* What detection (src/detect/nvidia.c) reads besides the name and memory:
 * a small made-up GPU (4 SMs at 1 GHz, compute capability 8.0, bus ids 0). */
CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return fail(CUDA_ERROR_INVALID_VALUE);
    *v = 12000;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int which, CUdevice d)
{
    if (!v || d < 0 || d >= ndev)
        return fail(CUDA_ERROR_INVALID_VALUE);
    switch (which) {
    case 13: *v = 1000000; break;  /* clock rate, kHz */
    case 16: *v = 4; break;        /* multiprocessors */
    case 33: *v = d + 1; break;    /* PCI bus */
    case 36: *v = 1000000; break;  /* memory clock, kHz */
    case 37: *v = 256; break;      /* memory bus width, bits */
    case 75: *v = 8; break;        /* compute capability */
    case 76: *v = 0; break;
    default: *v = 0;
    }
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
    if (d < 0 || d >= ndev)
        return fail(CUDA_ERROR_INVALID_DEVICE);
    *bytes = MOCK_MEMORY;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d)
{
    if (d < 0 || d >= ndev)
        return fail(CUDA_ERROR_INVALID_DEVICE);
    *ctx = &contexts[d];
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    return d >= 0 && d < ndev ? CUDA_SUCCESS : fail(CUDA_ERROR_INVALID_DEVICE);
}

CUresult cuCtxGetCurrent(void **ctx)
{
    if (!ctx)
        return fail(CUDA_ERROR_INVALID_VALUE);
    *ctx = current;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(void *ctx)
{
    if (ctx && ctx_dev(ctx) < 0)
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    current = ctx;
    return CUDA_SUCCESS;
}

static int have_ctx(void) { return ctx_dev(current) >= 0; }
int synor_mock_have_context(void); /* for the cuBLAS mock */
int synor_mock_have_context(void) { return have_ctx(); }

/* Streams: a heap cell each, so that a destroy of an unknown one is seen. */
CUresult cuStreamCreate(void **s, unsigned flags)
{
    if (!have_ctx())
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    (void)flags;
    *s = malloc(1);
    return *s ? CUDA_SUCCESS : fail(CUDA_ERROR_OUT_OF_MEMORY);
}

CUresult cuStreamDestroy_v2(void *s)
{
    if (!s)
        return fail(CUDA_ERROR_INVALID_HANDLE);
    free(s);
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(void *s)
{
    (void)s; /* work is done when it is enqueued */
    return have_ctx() ? CUDA_SUCCESS : fail(CUDA_ERROR_INVALID_CONTEXT);
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    if (!have_ctx())
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    if (n == 0)
        return fail(CUDA_ERROR_INVALID_VALUE);
    int dev = ctx_dev(current);
    pthread_mutex_lock(&lock);
    CUresult e = CUDA_ERROR_OUT_OF_MEMORY;
    if (used[dev] + n <= MOCK_MEMORY)
        for (size_t i = 0; i < MAX_ALLOCS; i++)
            if (!allocs[i].p) {
                allocs[i].p = malloc(n);
                if (allocs[i].p) {
                    allocs[i].n = n;
                    allocs[i].dev = dev;
                    used[dev] += n;
                    *p = (CUdeviceptr)(uintptr_t)allocs[i].p;
                    e = CUDA_SUCCESS;
                }
                break;
            }
    pthread_mutex_unlock(&lock);
    if (e == CUDA_SUCCESS)
        atomic_fetch_add(&synor_mock_allocs, 1);
    return e == CUDA_SUCCESS ? e : fail(e);
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
    if (!have_ctx())
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    CUresult e = CUDA_ERROR_INVALID_VALUE;
    int dev = ctx_dev(current);
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].p && allocs[i].p == (char *)(uintptr_t)p && allocs[i].dev == dev) {
            free(allocs[i].p);
            used[dev] -= allocs[i].n;
            allocs[i].p = NULL;
            e = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&lock);
    if (e == CUDA_SUCCESS)
        atomic_fetch_sub(&synor_mock_allocs, 1);
    return e == CUDA_SUCCESS ? e : fail(e);
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *c)
{
    if (!have_ctx())
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    if (c->srcXInBytes || c->srcY || c->dstXInBytes || c->dstY || c->srcArray || c->dstArray ||
        c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes || !c->Height)
        return fail(CUDA_ERROR_INVALID_VALUE);
    size_t sspan = c->srcPitch * (c->Height - 1) + c->WidthInBytes;
    size_t dspan = c->dstPitch * (c->Height - 1) + c->WidthInBytes;
    const char *src = c->srcMemoryType == MEM_DEVICE ? (const char *)(uintptr_t)c->srcDevice
                                                      : (const char *)c->srcHost;
    char *dst = c->dstMemoryType == MEM_DEVICE ? (char *)(uintptr_t)c->dstDevice : (char *)c->dstHost;
    if ((c->srcMemoryType != MEM_HOST && c->srcMemoryType != MEM_DEVICE) ||
        (c->dstMemoryType != MEM_HOST && c->dstMemoryType != MEM_DEVICE) || !src || !dst ||
        (c->srcMemoryType == MEM_DEVICE && !synor_mock_device_range(c->srcDevice, sspan)) ||
        (c->dstMemoryType == MEM_DEVICE && !synor_mock_device_range(c->dstDevice, dspan)))
        return fail(CUDA_ERROR_INVALID_VALUE);
    for (size_t r = 0; r < c->Height; r++)
        memcpy(dst + r * c->dstPitch, src + r * c->srcPitch, c->WidthInBytes);
    atomic_fetch_add(&synor_mock_copies, 1);
    return CUDA_SUCCESS;
}

/* Stream-ordered copies: a current context, a stream (the callers here
 * always use their own), and the device bytes inside one allocation of
 * the current context's device. Done at once (the mock has no queue). */
static CUresult async_copy(void *dst, const void *src, CUdeviceptr dev, size_t n, void *stream)
{
    if (!have_ctx())
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    if (!stream || !dst || !src || !n || !synor_mock_device_range(dev, n))
        return fail(CUDA_ERROR_INVALID_VALUE);
    memcpy(dst, src, n);
    atomic_fetch_add(&synor_mock_async_copies, 1);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream)
{
    return async_copy((void *)(uintptr_t)dst, src, dst, n, stream);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream)
{
    return async_copy(dst, (const void *)(uintptr_t)src, src, n, stream);
}

/* Page-locked host memory: plain heap memory, counted, and a free of a
 * pointer it did not hand out is refused. */
#define MAX_HOST 256
static void *host_allocs[MAX_HOST];

CUresult cuMemAllocHost_v2(void **p, size_t n)
{
    if (!have_ctx())
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    if (!p || !n)
        return fail(CUDA_ERROR_INVALID_VALUE);
    CUresult e = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < MAX_HOST; i++)
        if (!host_allocs[i]) {
            host_allocs[i] = malloc(n);
            if (host_allocs[i]) {
                *p = host_allocs[i];
                e = CUDA_SUCCESS;
            }
            break;
        }
    pthread_mutex_unlock(&lock);
    if (e == CUDA_SUCCESS)
        atomic_fetch_add(&synor_mock_host_allocs, 1);
    return e == CUDA_SUCCESS ? e : fail(e);
}

CUresult cuMemFreeHost(void *p)
{
    if (!have_ctx())
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    CUresult e = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < MAX_HOST; i++)
        if (p && host_allocs[i] == p) {
            free(p);
            host_allocs[i] = NULL;
            e = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&lock);
    if (e == CUDA_SUCCESS)
        atomic_fetch_sub(&synor_mock_host_allocs, 1);
    return e == CUDA_SUCCESS ? e : fail(e);
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer)
{
    if (!inited)
        return fail(CUDA_ERROR_NOT_INITIALIZED);
    if (!can || d < 0 || d >= ndev || peer < 0 || peer >= ndev)
        return fail(CUDA_ERROR_INVALID_DEVICE);
    *can = d != peer;
    return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(void *peer_ctx, unsigned flags)
{
    int d = ctx_dev(current), p = ctx_dev(peer_ctx);
    if (d < 0 || p < 0)
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    if (flags || p == d)
        return fail(CUDA_ERROR_INVALID_VALUE);
    pthread_mutex_lock(&lock);
    int was = peer_on[d][p];
    peer_on[d][p] = 1;
    pthread_mutex_unlock(&lock);
    return was ? CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED : CUDA_SUCCESS;
}

CUresult cuMemcpyPeer(CUdeviceptr dst, void *dst_ctx, CUdeviceptr src, void *src_ctx, size_t n)
{
    int d = ctx_dev(dst_ctx), s = ctx_dev(src_ctx);
    if (d < 0 || s < 0)
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    pthread_mutex_lock(&lock);
    int on = peer_on[d][s];
    pthread_mutex_unlock(&lock);
    if (!on)
        return fail(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    if (!n || !in_range(d, dst, n) || !in_range(s, src, n))
        return fail(CUDA_ERROR_INVALID_VALUE);
    memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    atomic_fetch_add(&synor_mock_peer_copies, 1);
    return CUDA_SUCCESS;
}

/* A module: the PTX text; a function: the index of a known kernel. */
static const char *const kernels[] = {"synor_relu", "synor_gelu", "synor_silu"};
static int function_ids[3] = {0, 1, 2};

CUresult cuModuleLoadData(void **m, const void *image)
{
    if (!have_ctx())
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    const char *ptx = image;
    if (!ptx || !strstr(ptx, ".version") || !strstr(ptx, ".target"))
        return fail(CUDA_ERROR_INVALID_IMAGE);
    *m = (void *)(uintptr_t)image;
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(void *m) { return m ? CUDA_SUCCESS : fail(CUDA_ERROR_INVALID_HANDLE); }

CUresult cuModuleGetFunction(void **f, void *m, const char *name)
{
    char entry[64];
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, kernels[i])) {
            /* the PTX must define it: ".entry synor_relu(" */
            snprintf(entry, sizeof entry, ".entry %s(", name);
            if (!strstr((const char *)m, entry))
                return fail(CUDA_ERROR_NOT_FOUND);
            *f = &function_ids[i];
            return CUDA_SUCCESS;
        }
    return fail(CUDA_ERROR_NOT_FOUND);
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
    if (!have_ctx())
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    int *id = f;
    if (!id || id < function_ids || id > function_ids + 2 || !params || extra || shared ||
        !gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 || gx > 2147483647u ||
        gy > 65535 || gz > 65535 || !stream)
        return fail(CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr x = *(CUdeviceptr *)params[0], y = *(CUdeviceptr *)params[1];
    long long n = *(long long *)params[2];
    if (n < 0 || (n && (!synor_mock_device_range(x, (size_t)n * 4) ||
                        !synor_mock_device_range(y, (size_t)n * 4))))
        return fail(CUDA_ERROR_INVALID_VALUE);
    const float *xs = (const float *)(uintptr_t)x;
    float *ys = (float *)(uintptr_t)y;
    for (long long i = 0; i < n; i++) {
        float v = xs[i];
        ys[i] = *id == 0   ? (v > 0.0f ? v : 0.0f)
                : *id == 1 ? 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)))
                           : v / (1.0f + expf(-v));
    }
    atomic_fetch_add(&synor_mock_launches, 1);
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult e, const char **s)
{
    *s = e == CUDA_ERROR_INVALID_VALUE       ? "CUDA_ERROR_INVALID_VALUE"
         : e == CUDA_ERROR_OUT_OF_MEMORY     ? "CUDA_ERROR_OUT_OF_MEMORY"
         : e == CUDA_ERROR_INVALID_CONTEXT   ? "CUDA_ERROR_INVALID_CONTEXT"
                                             : "CUDA_ERROR_UNKNOWN (mock)";
    return CUDA_SUCCESS;
}

/* Page-locked host ranges: counted, and an unregister must name a pointer
 * that was registered (as the driver's CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED). */
_Atomic long synor_mock_pinned, synor_mock_pins_total;
static struct {
    void *p;
    size_t n;
} pins[64];

CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags)
{
    (void)flags;
    if (!have_ctx())
        return fail(CUDA_ERROR_INVALID_CONTEXT);
    if (!p || !n)
        return fail(CUDA_ERROR_INVALID_VALUE);
    pthread_mutex_lock(&lock);
    int slot = -1;
    for (int i = 0; i < 64; i++) {
        if (pins[i].p && (char *)p < (char *)pins[i].p + pins[i].n &&
            (char *)pins[i].p < (char *)p + n) {
            pthread_mutex_unlock(&lock);
            return 712; /* CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED */
        }
        if (!pins[i].p && slot < 0)
            slot = i;
    }
    if (slot >= 0) {
        pins[slot].p = p;
        pins[slot].n = n;
        atomic_fetch_add(&synor_mock_pinned, 1);
        atomic_fetch_add(&synor_mock_pins_total, 1);
    }
    pthread_mutex_unlock(&lock);
    return slot >= 0 ? CUDA_SUCCESS : fail(CUDA_ERROR_OUT_OF_MEMORY);
}

CUresult cuMemHostUnregister(void *p)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < 64; i++)
        if (pins[i].p == p) {
            pins[i].p = NULL;
            atomic_fetch_sub(&synor_mock_pinned, 1);
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&lock);
    return fail(713); /* CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED */
}
