/* synor/runtime.h - the task runtime: runs task graphs on the processors of
 * this machine (issue 4; seed 001 §3.1, §3.2, §4.1).
 *
 * A runtime owns worker threads: one per CPU core, pinned to it through
 * hwloc. Work is submitted as tasks: a kernel (one function per processor
 * kind; a task only runs on a device whose kind has one), a priority, a few
 * bytes of arguments copied into the task, and up to SYNOR_TASK_MAX_DATA data
 * handles, each with an access mode. Dependencies are inferred from the
 * access modes in submission order, as in sequential code: a task that reads
 * a handle waits for its last writer; a task that writes it waits for the
 * last writer and for every reader since (StarPU's implicit dependencies).
 *
 * Lifecycle (staged, as hwloc's topology):
 *   synor_runtime_config_init(&cfg); ...set fields...
 *   synor_runtime_create(&cfg, &rt);        workers exist but do not run
 *   synor_handle_register(rt, &desc, &d);     any time after create
 *   synor_task_submit(rt, &task);           any time after create
 *   synor_runtime_start(rt);                workers start executing
 *   synor_runtime_wait_all(rt);             0, or the first task failure
 *   synor_handle_unregister(d);
 *   synor_runtime_destroy(rt);              waits for submitted tasks
 *
 * Failures: a kernel returns 0 or a negative SYNOR_E* code (it may set a
 * message with its own error reporting). A failed attempt is retried on
 * another capable worker, on another device where one implements the
 * kernel, up to cfg.max_attempts attempts in all; then the task fails, the
 * tasks depending on it are cancelled (never run), and the next
 * synor_runtime_wait_all returns the error with a message naming the task,
 * the device, the worker and the kernel's message.
 *
 * The kernel contract for failures: an attempt may fail after writing part
 * of its data. A retry still starts from the data the task found: before an
 * attempt that may be retried, the runtime keeps a copy of each read-write
 * operand whose buffer is its only valid copy (in host memory: a copy made
 * for the attempt; in a device's memory: the host's copy brought up to
 * date) and restores it, or drops the attempt's replica, when the attempt
 * fails. A write-only operand needs none: every attempt must write all of
 * it. A kernel that fails only before it modifies anything says so with
 * SYNOR_KERNEL_FAILS_BEFORE_WRITING, and the runtime keeps no copy. The data
 * a task writes are unspecified once it has failed for good, but every
 * copy of them agrees (readers see the same values on every device).
 *
 * Thread safety: submit, register and wait_all may be called from any
 * thread, including from inside a kernel (submit only). Tasks are not
 * objects the caller holds: they are freed by the runtime once finished. */
#ifndef SYNOR_RUNTIME_H
#define SYNOR_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "synor/op.h"
#include "synor/processor.h"
#include "synor/workload.h" /* synor_priority */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_runtime synor_runtime;
typedef struct synor_handle synor_handle;

/* ------------------------------------------------------------ configuration */

/* Which OpenCL devices become runtime devices. An OpenCL device of type CPU
 * (PoCL, Intel's CPU runtime) runs on the very cores the CPU workers use,
 * so by default only GPUs and accelerators are taken. */
typedef enum synor_opencl_use {
    SYNOR_OPENCL_OFF = 0,
    SYNOR_OPENCL_ACCELERATORS = 1, /* default: GPU and accelerator devices */
    SYNOR_OPENCL_ALL = 2           /* every device, CPU ones included (tests, PoCL) */
} synor_opencl_use;

/* How a ready task picks its device (issue 4 point 3).
 *   SYNOR_PLACE_EARLIEST_FINISH (default): the device whose queue ends
 *     first once this task has run there: queued work + transfers of the
 *     inputs it lacks there + its expected time there. Expected times come
 *     from the performance model (cfg.perfmodel) once calibrated; until then
 *     a task goes where its kernel has the fewest samples, so every device
 *     gets calibrated (StarPU's dmda does the same).
 *   SYNOR_PLACE_LOAD: the device with the fewest queued tasks per worker.
 *   SYNOR_PLACE_ENERGY: the lowest expected energy (time x the device's
 *     active watts, cfg or profile) among devices finishing within twice the
 *     earliest finish.
 *   SYNOR_PLACE_MONEY: the lowest expected cost (time x price per hour)
 *     under the same bound.
 *   SYNOR_PLACE_MIX: the lowest alpha x finish + beta x transfer time +
 *     gamma x expected energy (the planner's mix, as StarPU's dmda), with
 *     the weights of cfg.mix. */
typedef enum synor_place_policy {
    SYNOR_PLACE_EARLIEST_FINISH = 0,
    SYNOR_PLACE_LOAD = 1,
    SYNOR_PLACE_ENERGY = 2,
    SYNOR_PLACE_MONEY = 3,
    SYNOR_PLACE_MIX = 4
} synor_place_policy;

struct synor_perfmodel;      /* synor/perfmodel.h */
struct synor_device_native;  /* synor/kernel.h */
struct synor_kernel_library; /* synor/kernel.h */

typedef struct synor_runtime_config {
    unsigned magic;           /* set by synor_runtime_config_init */
    unsigned cpu_workers;     /* CPU worker threads; 0 = one per core */
    int pin_workers;          /* 1 (default): bind worker i to core i mod cores */
    unsigned max_attempts;    /* attempts per task before it fails; default 3 */
    /* Idle workers poll this long (microseconds) before sleeping; default
     * 50. Longer lowers latency for bursty submitters and costs CPU. */
    unsigned spin_us;
    /* Synthetic accelerator for tests: this many extra worker threads form a
     * device of kind SYNOR_KIND_GPU that runs the kernels' GPU function.
     * Lets placement and cross-device retry be tested on any machine.
     * Default 0. */
    unsigned test_gpu_workers;
    /* 0 (default): the test GPU works on host memory directly. N > 0: it
     * has a memory node of its own of N bytes (host memory allocated per
     * replica), so data moves to it and back as to a discrete GPU, with
     * capacity accounting and eviction. */
    uint64_t test_gpu_memory;
    synor_opencl_use opencl;  /* default SYNOR_OPENCL_ACCELERATORS */
    /* 1 (default): NVIDIA GPUs through the CUDA driver (loaded at run time;
     * none when there is no driver or GPU). Their NVIDIA OpenCL devices are
     * then skipped. */
    int cuda;
    uint64_t cuda_memory;     /* caps the memory used per CUDA GPU; 0 = all */
    /* N > 0: copies between host memory and a CUDA GPU go through two
     * page-locked staging buffers of N bytes per GPU, in chunks, double-
     * buffered (the host side of one chunk overlaps the DMA of the other)
     * on the transfer stream. 0 (default): the driver's copies from
     * pageable memory. Where page-locked memory cannot be had, 0. */
    uint64_t cuda_staging;
    /* Caps the memory the runtime uses on each OpenCL device (bytes); 0 =
     * the device's global memory size. */
    uint64_t opencl_memory;
    synor_place_policy policy;
    struct {
        double alpha, beta, gamma; /* SYNOR_PLACE_MIX; default 1, 1, 0 */
    } mix;
    /* Optional history-based performance model: every task's duration is
     * recorded in it (per kernel, data footprint and device) and placement
     * uses its estimates. Not owned; must outlive the runtime. */
    struct synor_perfmodel *perfmodel;
    /* 1: keep a trace of every task and transfer (synor_runtime_trace). */
    int trace;
    /* 1 (default): when a task is queued on a device, its inputs are copied
     * to that device's memory by a prefetch thread while the device runs
     * earlier tasks. */
    int prefetch;
    /* Rebalancing period (microseconds) when there are several devices;
     * default 1000; 0 = never (stealing by idle workers still happens). */
    unsigned rebalance_us;
} synor_runtime_config;

/* Fills defaults. Every config passed to create must have been through it. */
void synor_runtime_config_init(synor_runtime_config *cfg);

/* cfg may be NULL (defaults). SYNOR_EINVAL for a config that was not
 * initialized or has out-of-range values; SYNOR_ENOMEM; SYNOR_EIO if a
 * thread cannot be created. */
int synor_runtime_create(const synor_runtime_config *cfg, synor_runtime **out);
/* Starts executing. SYNOR_ESTATE if already started. */
int synor_runtime_start(synor_runtime *rt);
/* Waits until every task submitted so far has finished (SYNOR_ESTATE if the
 * runtime was never started and tasks are pending: they would never finish).
 * Returns 0, or the error of the first task that failed since the previous
 * wait_all, with the message (synor_errmsg) naming task, device and cause;
 * the failure record is then cleared. */
int synor_runtime_wait_all(synor_runtime *rt);
/* Waits for submitted tasks if started (tasks never started are dropped
 * without running), stops the workers, frees every handle still registered.
 * Accepts NULL. */
void synor_runtime_destroy(synor_runtime *rt);

unsigned synor_runtime_worker_count(const synor_runtime *rt);

/* The path a replica copy took between two memory nodes (seed 001 §4.1's
 * transfer paths), recorded per transfer in the trace and counted in the
 * stats. */
typedef enum synor_xfer_path {
    SYNOR_PATH_HOST = 0, /* host memory <-> a device's own memory (a driver copy) */
    SYNOR_PATH_UNIFIED,  /* host memory <-> a device sharing the host's physical memory
                            (CL_DEVICE_HOST_UNIFIED_MEMORY): a copy within one DRAM */
    SYNOR_PATH_PEER,     /* device -> device directly: two OpenCL devices of one context
                            (clEnqueueCopyBuffer), CUDA GPUs with peer access (cuMemcpyPeer) */
    SYNOR_PATH_MEDIATED, /* device -> host -> device where no peer path exists: each hop */
    SYNOR_PATH_COUNT
} synor_xfer_path;

/* "host", "unified", "peer", "cpu-mediated"; NULL for an unknown value. */
const char *synor_xfer_path_name(synor_xfer_path p);

typedef struct synor_runtime_stats {
    uint64_t submitted;  /* tasks accepted by synor_task_submit */
    uint64_t executed;   /* tasks whose kernel succeeded */
    uint64_t failed;     /* tasks that failed after their last attempt */
    uint64_t cancelled;  /* tasks not run because a predecessor failed */
    uint64_t retried;    /* failed attempts that were retried */
    uint64_t stolen;     /* tasks taken from another worker's deque */
    uint64_t moved;      /* queued tasks moved off a stopped device */
    uint64_t rebalanced; /* queued tasks moved by rebalancing */
    uint64_t transfers;  /* replica copies between memory nodes */
    uint64_t bytes_moved;
    uint64_t evictions;  /* clean replicas dropped to make room */
    uint64_t prefetched; /* replicas made valid ahead of their task */
    /* Placements made to calibrate the performance model: the task went
     * to a device whose estimate for it had too few samples, not to the
     * one expected to finish first. Non-zero: placement was still
     * calibrating (a later run with the same model places by its
     * measured times). */
    uint64_t calibrating;
    /* Transfers and bytes by path (transfers and bytes_moved are their
     * sums). A device-to-device copy through the host counts two
     * SYNOR_PATH_MEDIATED hops. */
    uint64_t path_transfers[SYNOR_PATH_COUNT];
    uint64_t path_bytes[SYNOR_PATH_COUNT];
    /* "Same node": a datum a task read was already valid in the memory of
     * the device that ran it, so nothing moved. Counted only when the
     * runtime has several memory nodes. */
    uint64_t local_reads;
} synor_runtime_stats;

/* Counters since create; exact once wait_all has returned. */
void synor_runtime_get_stats(const synor_runtime *rt, synor_runtime_stats *out);

/* The runtime's devices: 0 is the host CPU, then the test GPU if any, then
 * OpenCL devices. Each has a memory node: the host's (0) or its own. */
typedef struct synor_runtime_device_info {
    char name[64];         /* "cpu", "test-gpu", "opencl0" */
    char product[96];      /* the CPU model, the OpenCL device's name, ... */
    synor_kind kind;
    const char *backend;   /* "host", "test", "opencl", "cuda" */
    unsigned workers;
    unsigned hw_threads;   /* the host CPU: the machine's hardware threads
                              (workers beyond them share threads); else 0 */
    unsigned memory_node;
    uint64_t memory_capacity; /* bytes the runtime may use there; 0 = host */
    int stopped;
    /* A preemption notice is pending (synor_runtime_preempt): the device
     * stops at this monotonic time (CLOCK_MONOTONIC, ns); 0 = none. */
    uint64_t preempt_deadline_ns;
} synor_runtime_device_info;

unsigned synor_runtime_device_count(const synor_runtime *rt);
int synor_runtime_device_get(const synor_runtime *rt, unsigned i, synor_runtime_device_info *out);
/* The first OpenCL device of rt that runs on the host's CPU (PoCL's CPU
 * device: it shares the cores of the runtime's CPU workers), its index, and
 * its description in out (may be NULL); 0 when rt has none. */
unsigned synor_runtime_host_opencl_device(const synor_runtime *rt, synor_runtime_device_info *out);
/* Whether this machine has such a device: a runtime of cpu_workers CPU
 * workers and every OpenCL device is opened (not started) and closed; its
 * host OpenCL device's runtime name and product are copied into name
 * (nsize bytes) and product (psize bytes). 1 found, 0 none or no runtime. */
int synor_runtime_find_host_opencl(unsigned cpu_workers, char *name, size_t nsize, char *product,
                                   size_t psize);

/* The active power (watts) and the price (currency micro-units per hour)
 * of device i, used by the energy and money policies and carried into the
 * trace. Default 0: unknown (those policies then keep the earliest finish).
 * SYNOR_EINVAL for a bad index or a negative or non-finite value. */
int synor_runtime_device_set_rates(synor_runtime *rt, unsigned i, double watts,
                                   int64_t price_micro_per_hour);

/* Stops a device as if it had failed: it takes no new task; tasks queued on
 * it go back to the ready queues of the other devices that implement their
 * kernel (a task no other device can run fails, naming the task and the
 * device); a task running on it finishes. Device 0 (the host) cannot be
 * stopped. SYNOR_EINVAL for a bad index. */
int synor_runtime_device_stop(synor_runtime *rt, unsigned device);

/* ---------------------------------------------------- preemption notices
 * A device whose capacity is leased as interruptible may be preempted
 * (seed 003 §1.3; synor/market.h, synor/leasejob.h): the job gets a
 * warning, checkpoints, and the device either stops at the deadline or is
 * kept because replacement capacity was obtained.
 *
 * synor_runtime_preempt(rt, device, warning_ns) arms a notice: device
 * `device` stops warning_ns from now (monotonic clock) through the device
 * stop path above - it takes no new task, its queued tasks go to the other
 * devices that implement their kernels, and a task running on it at the
 * deadline finishes there (it is not cut; on a real lease the job's
 * checkpoint is what survives if the provider cuts it). Then the job's
 * preemption callback is called once, on the calling thread, with the
 * device and the absolute deadline. The callback checkpoints: it may
 * submit tasks (typically with .device = the preempted device + 1, so the
 * state that lives there is saved before the deadline; name their kernel
 * "checkpoint" so the trace shows them), register and place handles, and
 * call synor_runtime_preempt_cancel; it must not wait for tasks (wait_all)
 * or destroy the runtime, and should return promptly - the deadline runs
 * whatever it does. The trace (cfg.trace) gets the marks "preempted" (the
 * notice, with the deadline), "device stopped" (at the deadline) or
 * "replaced" (the notice was cancelled). The host (device 0) cannot be
 * preempted: its workers are the job's own process.
 *
 * Thread safety: these three calls may come from any thread (e.g. the one
 * reading a market's events), concurrently with submissions and
 * wait_all. */

/* deadline_ns: CLOCK_MONOTONIC time at which the device stops. */
typedef void (*synor_preempt_fn)(synor_runtime *rt, unsigned device, uint64_t deadline_ns,
                                 void *user);

/* Registers the job's preemption callback (NULL: none; the device still
 * stops at the deadline). Replaces the previous one; user is passed back
 * untouched. SYNOR_EINVAL for a NULL runtime. */
int synor_runtime_set_preempt_fn(synor_runtime *rt, synor_preempt_fn fn, void *user);

/* Arms a preemption notice (above): returns 0 once the callback has
 * returned. SYNOR_EINVAL: a bad index, device 0, or warning_ns above
 * SYNOR_PREEMPT_MAX_WARNING_NS; SYNOR_ESTATE: the device is already
 * stopped; SYNOR_EBUSY: a notice for it is already pending (the callback
 * is not called again); SYNOR_EIO: the deadline thread could not start.
 * On failure nothing was armed and the callback was not called. */
#define SYNOR_PREEMPT_MAX_WARNING_NS (86400ull * 1000000000ull) /* one day */
int synor_runtime_preempt(synor_runtime *rt, unsigned device, uint64_t warning_ns);

/* Withdraws a pending notice - replacement capacity was obtained, so the
 * device keeps running (on one machine the replacement is the same device
 * under a new lease). The trace gets a "replaced" mark. SYNOR_EINVAL for a
 * bad index; SYNOR_ENOENT when no notice is pending (none was armed, or
 * its deadline has passed and the device has stopped). */
int synor_runtime_preempt_cancel(synor_runtime *rt, unsigned device);

/* One round of rebalancing now (workers also do it every cfg.rebalance_us):
 * while the most loaded device's queue (expected work per worker; queued
 * tasks per worker without a performance model) is more than one task
 * longer than the least loaded device's, its last queued task that the
 * other device implements moves there (not retries, not hinted tasks).
 * Returns the number of tasks moved. */
unsigned synor_runtime_rebalance(synor_runtime *rt);

/* The trace of the run so far (cfg.trace = 1; SYNOR_ESTATE otherwise):
 * every finished task attempt with its device, start and end (seconds since
 * synor_runtime_start, from the monotonic clock) and every transfer with
 * its path ("host->test-gpu", "opencl0->host", ...), in the format of
 * synor/sim.h, so synor/report.h makes the same reports as for a
 * simulation. Call after wait_all. The trace's devices are the workers
 * ("cpu/0", "cpu/1", ..., "opencl0"), all real (not simulated). */
struct synor_trace;
int synor_runtime_trace(synor_runtime *rt, const char *workload, struct synor_trace **out);

/* ------------------------------------------------------------- data handles */

#define SYNOR_HANDLE_MAX_DIMS 4

/* Host memory the runtime tracks accesses to. When a task runs on a device
 * with memory of its own, the runtime copies the data there (a replica)
 * and keeps the copies coherent (MSI: a write invalidates the others);
 * synor_runtime_wait_all and synor_handle_unregister bring the host memory
 * up to date again. Dimensions are column-major:
 * shape[0] is the fastest-varying. For 2-D data, ld is the distance in
 * elements between consecutive columns (0 = shape[0]), so a tile of a larger
 * matrix is registered without copying. */
typedef struct synor_handle_desc {
    void *ptr;
    synor_dtype dtype;
    unsigned ndim;                      /* 1..SYNOR_HANDLE_MAX_DIMS */
    size_t shape[SYNOR_HANDLE_MAX_DIMS];
    size_t ld;
} synor_handle_desc;

/* Page-locks host memory [ptr, ptr + bytes) for the devices whose copies
 * are faster from such memory (CUDA GPUs), so that their replicas of
 * data registered there move at the link's speed. Returns 1 if it was
 * locked (undo with synor_runtime_unpin_host before freeing or reusing the
 * memory), 0 if nothing was done (no such device, already locked, or the
 * system refuses: copies then work as before), SYNOR_EINVAL for NULL. */
int synor_runtime_pin_host(synor_runtime *rt, void *ptr, size_t bytes);
/* Undoes a synor_runtime_pin_host that returned 1. Accepts NULL. */
void synor_runtime_unpin_host(synor_runtime *rt, void *ptr);

/* The memory stays the caller's; it must not be touched while tasks that
 * access it are pending. SYNOR_EINVAL for a bad descriptor. */
int synor_handle_register(synor_runtime *rt, const synor_handle_desc *desc, synor_handle **out);
/* Waits for the tasks that access d (wait_all when the runtime is started)
 * and frees the handle. SYNOR_EBUSY if such tasks are pending and the
 * runtime was never started (d stays registered). Accepts NULL. */
int synor_handle_unregister(synor_handle *d);

void *synor_handle_ptr(const synor_handle *d);
synor_dtype synor_handle_dtype(const synor_handle *d);
unsigned synor_handle_ndim(const synor_handle *d);
size_t synor_handle_dim(const synor_handle *d, unsigned i); /* 1 past ndim */
size_t synor_handle_ld(const synor_handle *d);              /* 2-D: column stride */
/* Bytes of d's elements (shape x element size), as packed off the host. */
size_t synor_handle_bytes(const synor_handle *d);

/* -------------------------------------------------------------------- tasks */

#define SYNOR_TASK_MAX_DATA 8
#define SYNOR_TASK_MAX_ARGS 64

typedef enum synor_access {
    SYNOR_ACCESS_R = 1,
    SYNOR_ACCESS_W = 2,
    SYNOR_ACCESS_RW = 3
} synor_access;

/* What a kernel function is given. Pointers are valid during the call. */
typedef struct synor_task_ctx {
    void *const *buffers;       /* buffers[i]: task data i, in the memory of
                                   the executing device: a host pointer for
                                   fn[], a cl_mem for opencl */
    const size_t *ld;           /* ld[i]: column stride of buffers[i] in
                                   elements (2-D data); replicas off the host
                                   are packed, so use this, not the handle's */
    synor_handle *const *data;    /* the handles, for shapes and strides */
    unsigned ndata;
    const void *args;           /* the task's argument bytes (copied) */
    void *user;                 /* synor_task_spec.user */
    unsigned worker;            /* 0..worker_count-1 */
    synor_kind kind;            /* kind of the executing device */
    unsigned attempt;           /* 0 for the first attempt */
    void *queue;                /* opencl: the device's cl_command_queue;
                                   cuda: its CUstream */
    /* The executing device's native handles (synor/kernel.h). */
    const struct synor_device_native *device;
    /* What the kernel's library (synor_kernel.library) prepared on this
     * device; NULL without a library. */
    void *state;
} synor_task_ctx;

/* 0, or a negative SYNOR_E* code (the attempt failed). */
typedef int (*synor_kernel_fn)(const synor_task_ctx *ctx);

/* An operation with its implementations: fn[kind] runs on host memory on
 * a device of that kind (the CPU workers; the test GPU); opencl on an
 * OpenCL device (buffers are cl_mem, enqueue on ctx->queue and finish
 * before returning); cuda on a CUDA GPU. NULL where none. Must outlive the tasks that use it
 * (typically static const). */
typedef struct synor_kernel {
    const char *name;
    synor_op_type op;
    synor_kernel_fn fn[SYNOR_KIND_COUNT];
    synor_kernel_fn opencl;
    synor_kernel_fn cuda; /* buffers are CUdeviceptr values; ctx->queue is
                             the device's CUstream; synchronize before
                             returning */
    unsigned flags;       /* SYNOR_KERNEL_*; 0 by default */
    /* The kernel library whose per-device state the implementations use
     * (synor/kernel.h), or NULL. */
    const struct synor_kernel_library *library;
} synor_kernel;

/* Every implementation returns an error only before it modifies any of its
 * data (argument checks, a failed allocation), so a failed attempt left its
 * read-write data as it found them: the runtime keeps no copy for a retry
 * (see "The kernel contract for failures" at the top). */
#define SYNOR_KERNEL_FAILS_BEFORE_WRITING 1u

/* Priorities are synor_priority of synor/workload.h (Critical > High >
 * Normal > Low). Its zero is SYNOR_PRIORITY_CRITICAL: set .priority =
 * SYNOR_PRIORITY_NORMAL for ordinary tasks. */
typedef struct synor_task_spec {
    const synor_kernel *kernel;
    synor_priority priority;
    unsigned ndata;
    synor_handle *data[SYNOR_TASK_MAX_DATA];
    synor_access mode[SYNOR_TASK_MAX_DATA];
    const void *args;           /* copied at submit; may be NULL */
    size_t args_size;           /* <= SYNOR_TASK_MAX_ARGS */
    void *user;                 /* passed to the kernel, never touched */
    uint64_t tag;               /* shown in failure messages (0 = task id) */
    /* Placement hint: 0 (default) lets the runtime choose; i + 1 runs the
     * task on device i (synor_runtime_device_get), which must implement the
     * kernel. A retry after a failure there, or a stop of that device, may
     * still move it. */
    unsigned device;
} synor_task_spec;

/* Submits a task; it runs once its dependencies have finished (and the
 * runtime is started). SYNOR_EINVAL for a bad task, SYNOR_ENOTSUP if no
 * device of the runtime implements the kernel, SYNOR_ENOMEM. A failed
 * submit leaves no trace. Never blocks on other tasks. */
int synor_task_submit(synor_runtime *rt, const synor_task_spec *task);

/* ------------------------------------------------------ data placement
 * Where a handle's data should live before tasks use it (seed 001 §4.1,
 * PlacementHint): on a given device, near the device expected to run an
 * operation fastest, or wherever the runtime decides. */
typedef enum synor_data_hint_kind {
    /* The runtime decides at first use: the data moves to the device the
     * first task reading it is placed on (prefetched while that task
     * waits in its queue). Nothing moves now. */
    SYNOR_DATA_AUTO = 0,
    /* To the memory of device `device` (synor_runtime_device_get). */
    SYNOR_DATA_DEVICE = 1,
    /* To the memory of the device expected to run `kernel` fastest: among
     * the devices that implement it and are not stopped, the one with the
     * smallest sum of calibrated performance-model estimates over the data
     * footprints every such device has (cfg.perfmodel); without such
     * estimates, the first device with memory of its own (an accelerator),
     * else the host. */
    SYNOR_DATA_OPERATION = 2
} synor_data_hint_kind;

typedef struct synor_data_hint {
    synor_data_hint_kind kind;
    unsigned device;             /* SYNOR_DATA_DEVICE */
    const synor_kernel *kernel;  /* SYNOR_DATA_OPERATION */
} synor_data_hint;

/* Places d's data per hint: a valid copy is made now in the memory of the
 * chosen device (a counted, traced transfer; the host copy stays valid),
 * so tasks that run there read it without waiting for a transfer. A device
 * working on host memory needs no copy. Returns the chosen device's index
 * (>= 0; SYNOR_DATA_AUTO returns 0 and moves nothing), or SYNOR_EINVAL (a
 * NULL argument, a device index out of range, a kernel that no device
 * implements), SYNOR_EBUSY (a task writing d is pending: place data before
 * submitting its writers or after they finish) or SYNOR_ENOMEM (the
 * device's memory cannot hold it; the message names the node and the
 * sizes); on failure nothing has moved. Must not run at the same time as a
 * submission of a task that writes d. */
int synor_handle_place(synor_handle *d, const synor_data_hint *hint);

/* --------------------------------------------- tiled dense linear algebra
 * CPU kernels through OpenBLAS, one BLAS thread per worker. Matrices are
 * column-major. Each call registers the tiles of nb x nb (the last row and
 * column of tiles may be smaller), submits the tiled algorithm with
 * priorities on the critical path, waits for it and unregisters. */

/* C = alpha A B + beta C, A m x k, B k x n, C m x n. */
int synor_tiled_dgemm(synor_runtime *rt, size_t m, size_t n, size_t k, double alpha,
                      const double *a, size_t lda, const double *b, size_t ldb, double beta,
                      double *c, size_t ldc, size_t nb);
int synor_tiled_sgemm(synor_runtime *rt, size_t m, size_t n, size_t k, float alpha,
                      const float *a, size_t lda, const float *b, size_t ldb, float beta,
                      float *c, size_t ldc, size_t nb);

/* Cholesky factorization A = L L^T of a symmetric positive definite n x n
 * matrix; the lower triangle of a is overwritten with L, the strict upper
 * triangle is not referenced. SYNOR_ERANGE (naming the tile) if A is not
 * positive definite. */
int synor_tiled_spotrf(synor_runtime *rt, size_t n, float *a, size_t lda, size_t nb);
int synor_tiled_dpotrf(synor_runtime *rt, size_t n, double *a, size_t lda, size_t nb);

/* The same on runtime device `device` (synor_runtime_device_get): every
 * task whose kernel that device implements is placed there
 * (synor_task_spec.device), the others wherever the runtime decides. GEMM
 * has CPU, OpenCL and CUDA versions; the Cholesky's tile factorizations,
 * triangular solves and symmetric updates have a CPU version only, so on
 * an accelerator only the Cholesky's GEMM updates (most of its flops) run
 * there. SYNOR_EINVAL (naming the count) for a device that does not exist;
 * otherwise as above. */
int synor_tiled_sgemm_on(synor_runtime *rt, unsigned device, size_t m, size_t n, size_t k,
                         float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                         float beta, float *c, size_t ldc, size_t nb);
int synor_tiled_spotrf_on(synor_runtime *rt, unsigned device, size_t n, float *a, size_t lda,
                          size_t nb);
/* Panels k0 .. k1 - 1 (of ceil(n / nb)) of synor_tiled_spotrf_on, k0
 * being the first not yet done: panel k factors diagonal tile k, solves the
 * tiles below it and updates the trailing matrix. Running panels 0 .. p,
 * then p .. the end (a task that stopped there and resumed from the
 * partially factored matrix) makes the same bits as one call: every tile
 * gets the same updates in the same order. Nothing happens when k0 >= k1 or
 * past the last panel; otherwise as synor_tiled_spotrf_on. */
int synor_tiled_spotrf_panels_on(synor_runtime *rt, unsigned device, size_t n, float *a,
                                 size_t lda, size_t nb, size_t k0, size_t k1);

#ifdef __cplusplus
}
#endif
#endif
