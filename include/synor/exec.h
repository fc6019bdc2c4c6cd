/* synor/exec.h - real runs: a workload (synor/workload.h) executed on this
 * machine's processors by the runtime (synor/runtime.h), with real kernels
 * on real data; the runtime's trace (synor_runtime_trace) then gives the
 * same reports as a simulation (synor/report.h).
 *
 * Every datum of the workload becomes a data handle of its size. A task's
 * operands are its data, in order: what it consumes, then what it produces
 * (operand rules per operation in docs/RUNTIME.md, "Real runs"); the sizes
 * must agree with the operation's dimensions. External data (produced by no
 * task) is filled with seeded uniform values in [-1, 1), except token ids
 * (the ids operand of embedding/gather: seeded int32 in [0, vocab)); produced data
 * starts at zero. Real runs compute in fp32 (matmul also fp64).
 *
 * The tiled presets run the runtime's tiled GEMM or Cholesky on a random
 * matrix and check the result against one call of the BLAS/LAPACK library
 * (OpenBLAS, all cores); both are warmed up, then timed over several
 * repetitions, and the medians are reported side by side. */
#ifndef SYNOR_EXEC_H
#define SYNOR_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "synor/runtime.h"
#include "synor/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 0 if every task of w can run for real here; else SYNOR_ENOTSUP (an
 * operation without a kernel, a data type) or SYNOR_EINVAL (operand sizes),
 * naming the task, the datum and the sizes. */
int synor_exec_check(const synor_workload *w);

typedef struct synor_exec_result {
    double seconds;      /* wall time from first submit to wait_all */
    double checksum;     /* sum of every element of the sink data (produced,
                            never consumed): equal runs give equal sums up to
                            rounding, wherever the tasks ran */
    size_t tasks;
    uint64_t bytes;      /* memory allocated for the data */
} synor_exec_result;

/* Runs w on rt (started) and waits for it. hints: NULL, or per task index
 * a device hint (synor_task_spec.device: 0 = the runtime chooses). The
 * runtime's failure message names the task by tag = index + 1
 * (synor_exec_task_id). */
int synor_exec_workload(synor_runtime *rt, const synor_workload *w, uint64_t seed,
                        const unsigned *hints, synor_exec_result *out);

/* Hooks that let another layer take over what synor_exec_workload does
 * with the runtime (the MPI layer: synor/mpi.h runs a workload across
 * ranks through them). NULL members keep the default. Each returns 0 or a
 * negative SYNOR_E* code, which ends the run with that error. */
typedef struct synor_exec_hooks {
    void *user;
    /* after datum di's handle is registered (every datum, in data order) */
    int (*data)(void *user, size_t di, synor_handle *h);
    /* instead of synor_task_submit, for task ti (its index in w) */
    int (*submit)(void *user, size_t ti, const synor_task_spec *spec);
    /* once every task is submitted: datum di is a result (a sink, summed
     * into the checksum) */
    int (*result)(void *user, size_t di);
    /* instead of synor_runtime_wait_all */
    int (*wait)(void *user);
} synor_exec_hooks;

/* synor_exec_workload through hooks (NULL: exactly synor_exec_workload). */
int synor_exec_workload_hooked(synor_runtime *rt, const synor_workload *w, uint64_t seed,
                               const unsigned *hints, const synor_exec_hooks *hooks,
                               synor_exec_result *out);

/* What a real run of w records in the performance model for each task
 * (synor/perfmodel.h, synor_runtime_config.perfmodel): kernels[i] the
 * kernel's name, footprints[i] the footprint of its data, for every task i
 * (arrays of synor_workload_count(w)). So a model filled by real runs can
 * be asked about a workload before it runs (synor_whatif_calibrate). The
 * names are static. Fails as synor_exec_check when w cannot run for real. */
int synor_exec_task_keys(const synor_workload *w, const char **kernels, uint64_t *footprints);
/* Reads a plan (synor-plan/1, `synor plan --json`) for w and fills hints
 * (one per task of w; tasks the plan does not name get 0). Every device the
 * plan names must be a device of rt by name ("cpu", "opencl0", ...): plan
 * with a fabric whose devices have those names. Errors name
 * file:line:column, the task or device, and leave hints unchanged. */
int synor_exec_plan_hints(const char *path, const synor_workload *w, const synor_runtime *rt,
                          unsigned *hints);
/* The workload task id of a runtime task tag (index + 1); NULL if none. */
const char *synor_exec_task_id(const synor_workload *w, uint64_t tag);

typedef enum synor_tiled_algo { SYNOR_TILED_GEMM, SYNOR_TILED_CHOLESKY } synor_tiled_algo;

typedef struct synor_tiled_result {
    double seconds;      /* the runtime's tiled algorithm: median of the repetitions */
    double ref_seconds;  /* one OpenBLAS call, all cores: median of the repetitions */
    unsigned reps;       /* timed repetitions of each, after one untimed warm-up */
    double max_error;    /* largest |runtime - reference| element (last repetition) */
    double gflops;       /* of the runtime's median run */
} synor_tiled_result;

#define SYNOR_TILED_MAX_REPS 100

/* n x n, tiles of nb, fp32 or fp64: one warm-up of each, then reps timed
 * repetitions of the reference and the runtime, alternating (1 <= reps <=
 * SYNOR_TILED_MAX_REPS). */
int synor_exec_tiled(synor_runtime *rt, synor_tiled_algo algo, size_t n, size_t nb,
                     synor_dtype dtype, uint64_t seed, unsigned reps, synor_tiled_result *out);

/* The task graph synor_exec_tiled runs for (algo, n, nb, dtype), as a
 * workload for the simulator: one task per tile kernel call, in the
 * runtime's submission order ("gemm(i,j,l)", "potrf(k)", "trsm(i,k)",
 * "syrk(i,k)"), each tile's successive versions as data ("A[i,j]#v"); and
 * per task the kernel name and footprint the runtime records for it (as
 * synor_exec_task_keys; *kernels and *footprints are malloc'ed arrays of
 * synor_workload_count(*out): free() them). GEMM tasks are matmul; potrf,
 * trsm and syrk "custom" with their FLOPs and bytes. At most 256 tiles a
 * side. */
int synor_exec_tiled_workload(synor_tiled_algo algo, size_t n, size_t nb, synor_dtype dtype,
                              synor_workload **out, const char ***kernels, uint64_t **footprints);

#ifdef __cplusplus
}
#endif
#endif
