/* synor/whatif.h - this machine as a fabric, and what adding or swapping
 * processors would buy (issue 11, "what-if in one command").
 *
 * The local fabric is built from detection: the host CPU with its measured
 * peak and bandwidth (synor_detect_run_cached) and any CUDA GPU, each made
 * a profile of the catalog ("local-cpu0", "local-cuda0": their figures and
 * where each comes from: measured, detected or derived) and a device of a
 * fabric named "local" on one node. Detected devices without a power
 * figure get 0 W (energy not modelled for them, and said so). A what-if is
 * the local fabric with devices added (a catalog profile, a count) or a
 * local device replaced by a profile; added devices are simulated from
 * their profiles. Prices per hour come from the built-in fabrics that
 * list the profile (the seed fabric's assumptions), else 0. */
#ifndef SYNOR_WHATIF_H
#define SYNOR_WHATIF_H

#include <stddef.h>

#include "synor/detect.h"
#include "synor/fabric.h"
#include "synor/perfmodel.h"
#include "synor/profile.h"
#include "synor/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A change to the local fabric: add `count` devices of `profile`, or (with
 * replace set) put one of `profile` in place of the local device named
 * `replace`. */
typedef struct synor_whatif_change {
    const char *profile;
    unsigned count;
    const char *replace; /* NULL: add */
} synor_whatif_change;

/* The local fabric (changes NULL / 0) or a what-if of it. Adds the local
 * devices' profiles to cat (which must outlive the fabric). Fails naming an
 * unknown profile or device. */
int synor_whatif_fabric(synor_catalog *cat, const synor_detection *d,
                        const synor_whatif_change *changes, size_t n_changes, synor_fabric **out);

/* As synor_whatif_fabric, with the host CPU as cpu_workers devices (cpu0.0,
 * cpu0.1, ...: the runtime's CPU workers, each one task at a time, as a
 * real run has them), each with its share of the CPU's measured peak,
 * bandwidth and power (profile "local-cpu0-workerN"). cpu_workers 0: one
 * device for the whole CPU (synor_whatif_fabric). At most 1024. */
int synor_whatif_fabric_workers(synor_catalog *cat, const synor_detection *d, unsigned cpu_workers,
                                const synor_whatif_change *changes, size_t n_changes,
                                synor_fabric **out);

/* Whether fd is one of the host CPU's devices in a fabric that
 * synor_whatif_fabric_workers made with cpu_workers (0 or 1: the whole CPU
 * as one device, profile "local-cpu0"; more: one of its worker devices). */
int synor_whatif_is_cpu_device(const synor_fabric_device *fd, unsigned cpu_workers);

/* A device of a real run: its runtime name (synor_runtime_device_info:
 * "cpu", "openclK", "cudaK") and product. */
typedef struct synor_whatif_run_device {
    const char *name;
    const char *product;
    uint64_t memory;      /* bytes the runtime may use there; 0 = the host's */
    unsigned workers;     /* "cpu" only: > 1 = that many fabric devices, one
                             per runtime worker, each with its share of the
                             CPU (profile "local-run-cpu-wN"), as a dynamic
                             run uses them; 0 or 1 = one device for the whole
                             CPU (the pipeline's stage) */
    /* "openclK" of an OpenCL CPU device (PoCL) only: > 0 declares that it
     * shares the host's cores with these factors
     * (synor_fabric_set_host_sharing; measured by
     * synor_whatif_measure_sharing); 0 = a device of its own. For a fabric
     * calibrated on a performance model (synor_whatif_calibrate), pass
     * share_slowdown 1: the device's recorded times were taken beside busy
     * workers and hold its own slowdown already. */
    double share_cpu_slowdown, share_slowdown;
} synor_whatif_run_device;

/* A fabric ("run") of a real run's devices, each fabric device named as
 * the runtime names it (so a plan on it can be followed by that run:
 * synor run --plan, --strategy pipeline) with a profile
 * ("local-run-<name>", added to cat) built from the detected device
 * behind it: the host CPU for "cpu" (the whole CPU: one device however
 * many workers, unless .workers says otherwise), the OpenCL device of that product (else the K-th) for
 * "openclK", the K-th CUDA GPU for "cudaK". A device detection does not
 * describe (the CUDA test doubles) gets the host CPU's figures with its own
 * name and memory, its sources saying so: the performance model's times
 * replace them once real runs recorded some. synor_whatif_calibrate knows
 * these devices by their runtime names. Fails naming a device of another
 * name or with no host CPU detected. */
int synor_whatif_run_fabric(synor_catalog *cat, const synor_detection *d,
                            const synor_whatif_run_device *devs, size_t n, synor_fabric **out);

/* How an OpenCL CPU device and the CPU workers slow each other here,
 * measured (synor_whatif_measure_sharing). Times are per nb x nb x nb
 * tile product, medians over the rounds. */
typedef struct synor_whatif_sharing {
    char cpu[96], device[96]; /* the products */
    unsigned workers;         /* the CPU workers measured */
    size_t n, nb;
    double cpu_alone_s, cpu_with_device_s;    /* a CPU worker's tile: alone, device busy */
    double device_alone_s, device_with_cpu_s; /* the device's tile: alone, every worker busy */
    double cpu_slowdown, slowdown;            /* the ratios (>= 1): synor_fabric_set_host_sharing */
    int from_cache;
} synor_whatif_sharing;

/* Measures the shared-core factors of the first OpenCL CPU device (PoCL)
 * against cpu_workers CPU workers (0: one per core): rounds (1-64) of a
 * tiled SGEMM n x n, tiles of nb, on the workers alone, one of 2nb x 2nb
 * on the device alone, and both at once (src/whatif/sharing.c). With
 * cache_path, a cache there (format synor-host-sharing/1) for the same
 * CPU, device, workers, n and nb is read instead (from_cache), and a
 * measurement is written there. Takes about rounds x 0.3 s on 2 cores at n
 * 1024, nb 256. SYNOR_ENODEV (a message) when no OpenCL CPU device exists;
 * SYNOR_EINVAL for bad sizes. */
/* Where the local fabric keeps the sharing factors it measured
 * (synor_whatif_measure_sharing's cache_path when none is given):
 * $XDG_CACHE_HOME/synor/host-sharing.json, else ~/.cache/synor/..., beside
 * the detection's measured peaks (synor_detect_default_cache_path). 0, or
 * an error when neither variable is set or buf is too small. */
int synor_whatif_default_sharing_cache_path(char *buf, size_t size);
int synor_whatif_measure_sharing(unsigned cpu_workers, size_t n, size_t nb, unsigned rounds,
                                 const char *cache_path, synor_whatif_sharing *out);

/* Where the local devices' task times of a calibrated workload came from,
 * counted per (task, local device). */
typedef struct synor_whatif_calibration {
    size_t tasks;
    size_t local_devices;     /* devices of the fabric that are this machine's */
    size_t from_model;        /* the model's estimate for this very task */
    size_t from_kernel_fit;   /* roofline x the kernel's factor */
    size_t from_overall_fit;  /* roofline x the factor over all kernels */
    size_t from_roofline;     /* the roofline alone: no entry to fit on */
    double overall_factor;    /* median measured / roofline; NAN: none */
    double dispatch_s;        /* the runtime's mean dispatch time per task on
                                 the first local device that has one; NAN:
                                 none */
    /* The host side charged (synor_workload_set_host; 0 where the model
     * has no such entry): registering `handles` handles before the first
     * submission (keyed only), each submission, and after the last task
     * the wait's wake-up plus unregistering them. */
    size_t handles;
    double host_before_s, host_per_task_s, host_after_s;
    /* Devices the model has task times of (kernels or dispatch, calibrated
     * entries) that are none of the fabric's local devices: a real run
     * that placed tasks there (e.g. "cuda0", when the fabric is the CPU
     * alone) is not what the simulation of f predicts, and the fabric's
     * devices then have only the few samples the runtime took to
     * calibrate them. 0 when the fabric has every device the model has. */
    size_t other_devices;
} synor_whatif_calibration;

/* The local fabric made to predict this machine (issue 11, "a simulator
 * that predicts this machine"): a copy of w (finished, *out; destroy it)
 * whose tasks have explicit cost rows (workload.h) for f's devices. On a
 * device of this machine (a fabric from synor_whatif_fabric or _workers) a
 * task's time is, in order of preference:
 *   - what real runs recorded for it in the performance model pm: the
 *     mean of its entry's window (window_mean: an expected time; the
 *     median that placement uses is below it on a busy machine), the
 *     entry found by the task's kernel and footprint (synor_exec_task_keys)
 *     and the device's runtime name ("cpu", "cuda0");
 *   - its roofline on the device (the measured peak and bandwidth, cost.h)
 *     x the median of measured / roofline over the workload's tasks of the
 *     same kernel that have an estimate;
 *   - the roofline x that median over all the tasks that have one;
 *   - the roofline.
 * To each of the first three the device's mean dispatch time is added (the
 * model's SYNOR_PERFMODEL_DISPATCH entry: what the runtime takes to start a
 * task once it can, over every task recorded), as a real run pays it.
 * The host's side of the call is charged too (synor_workload_set_host,
 * on the copy): the model's host entries (synor/perfmodel.h, device
 * "host") give the mean submission and the wait's median wake-up (once per
 * call: the median call has a typical one), as the time
 * synor_exec_workload reports has them (from the first submission to
 * wait_all's return); none when the fabric has no local device or the
 * model no such entry.
 * Other devices (added or swapped in) keep their roofline. A task with a
 * cost row of its own keeps it. With kernels given (_keyed), on a device
 * that shares the host's cores (synor_fabric_set_host_sharing) a task
 * whose kernel the model has on another device but not there, while it
 * has other kernels there, cannot run there (INFINITY): the runtime
 * calibrates every device that implements a kernel, so that one does not
 * (potrf, trsm and syrk have a CPU function only). pm may be NULL (then every local time is a
 * roofline); a workload that cannot run for real has no estimates. info
 * (may be NULL) says how many times came from where. */
int synor_whatif_calibrate(const synor_fabric *f, const synor_workload *w,
                           const synor_perfmodel *pm, synor_workload **out,
                           synor_whatif_calibration *info);

/* As synor_whatif_calibrate, with each task's kernel and footprint given
 * (e.g. synor_exec_tiled_workload's) instead of synor_exec_task_keys's,
 * for a library call (synor_tiled_sgemm) that registers its handles
 * itself: the host side also has the mean registration of a handle before
 * the first submission and its unregistration after the wait, one handle
 * per datum (a tile's later versions "X#k", k >= 1, share version 0's). */
int synor_whatif_calibrate_keyed(const synor_fabric *f, const synor_workload *w,
                                 const char *const *kernels, const uint64_t *footprints,
                                 const synor_perfmodel *pm, synor_workload **out,
                                 synor_whatif_calibration *info);

/* Calibrates f's devices that share the host's cores for the simulation
 * of w (docs/PLANNING.md "Placing as the runtime does"), from the model
 * pm: for each such device that is this machine's (a run fabric's OpenCL
 * device, its task times calibrated by synor_whatif_calibrate: the window
 * mean plus the device's mean dispatch), over w's tasks that pm has an
 * entry for there,
 *   - its placement scale (synor_fabric_set_share_place_scale): the sum of
 *     the window medians (what the runtime places by) over the sum of the
 *     calibrated times;
 *   - its contention factors become 1 and 1 (declared shared, so the
 *     simulation places on it by the runtime's rule, but nothing charged):
 *     the workers' and the device's times were recorded beside each other
 *     and hold the contention already (charging the measured factors on
 *     top overshot: docs/BENCHMARKS.md "Placing on PoCL as the runtime
 *     does").
 * kernels and footprints as synor_whatif_calibrate_keyed takes them, or
 * both NULL (synor_exec_task_keys). A device without entries is left as it
 * is. *set (may be NULL): how many devices were calibrated. */
int synor_whatif_calibrate_sharing(synor_fabric *f, const synor_workload *w,
                                   const char *const *kernels, const uint64_t *footprints,
                                   const synor_perfmodel *pm, size_t *set);

/* The mean dispatch time synor_whatif_calibrate adds to each task on
 * device d of f (the model's SYNOR_PERFMODEL_DISPATCH entry of the
 * device's runtime name, window mean), so that a simulated task's kernel
 * time is its duration less this: 0 when d is not one of this machine's
 * devices, pm is NULL or has no calibrated entry. Devices differ (a GPU's
 * dispatch is not the CPU workers'): calibration info's dispatch_s is the
 * first local device's only. */
double synor_whatif_device_dispatch(const synor_fabric *f, size_t d, const synor_perfmodel *pm);

/* The price per hour (micro-units) the built-in fabrics assume for a
 * profile; 0 if none lists it. */
int64_t synor_whatif_price(const synor_catalog *cat, const char *profile);

#ifdef __cplusplus
}
#endif
#endif
