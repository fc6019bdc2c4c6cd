/* synor/kernel.h - what a kernel sees of the runtime, beyond its task
 * context (synor/runtime.h): the native handles of the device it runs on,
 * and kernel libraries.
 *
 * Kernels are "what runs" and the runtime is "how it runs": kernels use
 * only this header and synor/runtime.h, never the runtime's internals, and
 * the runtime never calls into a particular set of kernels. What a set of
 * kernels must prepare per device - OpenCL programs built for the device,
 * a cuBLAS handle bound to the device's stream, a CUDA module - is a kernel
 * library: two functions the runtime calls for each of its devices, with
 * the device's native handles, when the library is added to the runtime
 * (synor_runtime_library_add, or the first submit of a kernel that names
 * it), and when the runtime is destroyed. What device_init returns is
 * passed to the library's kernels as synor_task_ctx.state on that device.
 *
 * The library's own kernels (tiled linear algebra, the operations of real
 * runs) form one such library; synor_exec_* adds it before timing a run. */
#ifndef SYNOR_KERNEL_H
#define SYNOR_KERNEL_H

#include "synor/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a device is driven (synor_runtime_device_info.backend, as a value). */
typedef enum synor_backend {
    SYNOR_BACKEND_HOST = 0, /* the host CPU: its workers run fn[SYNOR_KIND_CPU] */
    SYNOR_BACKEND_TEST,     /* the synthetic test GPU (cfg.test_gpu_workers) */
    SYNOR_BACKEND_OPENCL,
    SYNOR_BACKEND_CUDA
} synor_backend;

/* A runtime device as its own API knows it. Pointers stay valid until the
 * runtime is destroyed. The OpenCL and CUDA handles are the runtime's: use
 * them, never release them. */
typedef struct synor_device_native {
    synor_runtime *runtime;
    unsigned index;          /* synor_runtime_device_get's index */
    synor_backend backend;
    synor_kind kind;
    const char *name;        /* "cpu", "test-gpu", "opencl0", "cuda0" */
    const char *product;     /* the device's own name ("NVIDIA H100 80GB HBM3") */
    /* OpenCL (NULL otherwise): cl_platform_id, cl_device_id, the context,
     * and the in-order queue the device's worker enqueues kernels on (the
     * same as synor_task_ctx.queue). */
    void *cl_platform, *cl_device, *cl_context, *cl_queue;
    /* CUDA: CUdevice, the device's primary context (current on its worker
     * thread) and the stream kernels enqueue on (synor_task_ctx.queue). */
    int cu_device;
    void *cu_context, *cu_stream;
} synor_device_native;

/* Device i's native handles. SYNOR_EINVAL for a bad index. */
int synor_runtime_device_native(const synor_runtime *rt, unsigned i, synor_device_native *out);

/* A kernel library (see the top). Must outlive the runtimes it is added to
 * (typically static const). */
typedef struct synor_kernel_library {
    const char *name;
    /* Prepares the library on one device; *state (NULL on entry) is given
     * to the library's kernels there as ctx->state. Called on the thread
     * that adds the library, for every device, the host's included (most
     * libraries have nothing to do there). Returns 0, or a negative
     * SYNOR_E*: the device is then stopped (as synor_runtime_device_stop;
     * before synor_runtime_start its name also says "kernels did not
     * build"), and device_fini is not called for it. A CUDA device's
     * context is not current on the calling thread: make it current, and
     * leave the thread's current context as it was. */
    int (*device_init)(const synor_device_native *dev, void **state);
    /* Frees a device's state (synor_runtime_destroy, before the devices go
     * away). May be NULL. */
    void (*device_fini)(const synor_device_native *dev, void *state);
} synor_kernel_library;

/* Adds lib to rt: device_init on every device not stopped, now, on this
 * thread. Adding a library twice does nothing. A task whose kernel names a
 * library (synor_kernel.library) that was not added adds it at submit,
 * before the task is queued; adding it earlier keeps that work out of
 * whatever the caller times. Inside a kernel, prefer adding beforehand: a
 * library's device_init then runs on a worker thread. SYNOR_EINVAL (NULL,
 * no device_init), SYNOR_ERANGE (SYNOR_RUNTIME_MAX_LIBRARIES already). */
#define SYNOR_RUNTIME_MAX_LIBRARIES 8
int synor_runtime_library_add(synor_runtime *rt, const synor_kernel_library *lib);

#ifdef __cplusplus
}
#endif
#endif
