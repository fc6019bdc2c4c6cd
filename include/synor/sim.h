/* synor/sim.h - the discrete-event simulator and its execution trace (seed
 * 001 §3.1 and §5).
 *
 * The simulator runs a workload on a fabric on a virtual clock, following a
 * plan (each device runs its tasks in the plan's order, each as soon as the
 * device is free and its inputs are in its memory) or a dynamic strategy
 * (a task is placed when it becomes ready, on the device with the earliest
 * expected finish given queues and transfers; each device runs its queue by
 * priority, then readiness).
 *
 * Data produced by a task moves to the memory of each device that consumes
 * it when both are known, hop by hop along the fabric path: each hop waits
 * its latency, then flows; flows on the same link direction share its
 * bandwidth equally (progress is recomputed whenever a flow starts or ends).
 * A datum moves to a memory space once, however many tasks there use it.
 * External data (weights) is resident before the run on each device that
 * uses it and is never moved. An edge with an explicit cost (comm_s,
 * workload.h) takes exactly that long between two distinct devices, on no
 * link (no sharing, no transfer in the trace); the data it carries arrives
 * with it.
 *
 * Memory: when a task starts, the external data resident on its device plus
 * its own transient footprint (data it consumes and produces, workspace)
 * must fit in the device's memory, or the run fails with SYNOR_ENOMEM and a
 * message naming the task, the device and the sizes. A plan that puts a task
 * on a device that cannot run it fails with SYNOR_ENOTSUP naming both.
 *
 * Accounting: energy is each task's active energy plus the idle power of
 * every device of the fabric for the time it is not busy within the
 * makespan; money is the price per hour of every device that ran a task,
 * for the whole makespan (integer micro-units).
 *
 * The same inputs give a byte-identical trace: events at equal times are
 * processed in the order they were created. Every device in a trace from
 * the simulator is marked simulated. */
#ifndef SYNOR_SIM_H
#define SYNOR_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "synor/cost.h"
#include "synor/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_trace_device {
    const char *name;     /* fabric name, e.g. "h100" */
    const char *product;  /* the product alone, e.g. "NVIDIA H100 SXM5 80GB" */
    const char *kind;     /* "cpu", "gpu", ... */
    const char *backend;  /* what ran it: "simulated", or for real runs the
                             runtime backend, "host", "OpenCL", "CUDA", "test" */
    int simulated;
    double idle_watts;
    int64_t price_micro;  /* per hour */
} synor_trace_device;

typedef struct synor_trace_task {
    const char *id;
    const char *op;       /* operation name, "d/" prefix for backward */
    size_t device;
    double start, end;    /* seconds */
    double energy;        /* joules, active */
} synor_trace_task;

typedef struct synor_trace_transfer {
    const char *data;     /* datum name */
    const char *link;     /* link name */
    size_t from_dev, to_dev; /* the devices whose memories the transfer joins */
    uint64_t bytes;
    double start, end;    /* of this hop, latency included */
    const char *path;     /* real runs: "host", "unified", "peer" or "cpu-mediated"
                             (synor_xfer_path_name); NULL in simulated traces */
} synor_trace_transfer;

/* A mark: something that happened to a device during the run that is not
 * a task or a transfer - a preemption warning, a checkpoint, a device
 * leaving or its capacity replaced. An instant when end == start. Names
 * the simulator and the runtime write: "preempted" (the warning; detail
 * names the deadline), "checkpoint" (the checkpoint's span), "device
 * stopped" (the device left at the deadline), "replaced" (replacement
 * capacity was obtained: the device stays; detail names the price),
 * "aborted" (a task cut by the device's stop, re-run elsewhere). */
typedef struct synor_trace_mark {
    const char *name;
    size_t device;
    double start, end;    /* seconds */
    const char *detail;   /* free text; "" when none */
} synor_trace_mark;

/* Where a trace's energy or money figures come from. A figure whose basis
 * is NONE was not measured: reports say so instead of printing 0. */
typedef enum synor_trace_basis {
    SYNOR_BASIS_NONE = 0, /* not measured (a real run without power counters
                             or configured rates) */
    SYNOR_BASIS_MODEL,    /* simulated: the profiles' power and the fabric's prices */
    SYNOR_BASIS_RATED,    /* real run: configured watts or prices x real busy time */
    SYNOR_BASIS_MEASURED  /* real run: read from the hardware's energy counters */
} synor_trace_basis;

/* "none", "model", "rated", "measured" (NULL for an invalid value), and back
 * (-1 for an unknown name). */
const char *synor_trace_basis_name(synor_trace_basis b);
int synor_trace_basis_from_name(const char *name);

typedef struct synor_trace {
    const char *workload, *fabric, *strategy, *currency;
    size_t n_devices;
    const synor_trace_device *devices;
    size_t n_tasks;
    const synor_trace_task *tasks;       /* in start order */
    size_t n_transfers;
    const synor_trace_transfer *transfers; /* in start order */
    double makespan;                     /* seconds */
    double energy_active, energy_idle;   /* joules */
    int64_t money_micro;                 /* currency micro-units */
    synor_trace_basis energy_basis, money_basis;
    uint64_t events;                     /* events the simulator processed */
    size_t n_marks;
    const synor_trace_mark *marks;       /* in start order; JSON "marks",
                                            written only when there are some */
} synor_trace;

/* Runs the workload of c on its fabric following plan p, or the dynamic
 * strategy when p is NULL. */
int synor_simulate(const synor_cost *c, const synor_plan *p, synor_trace **out);

/* The dynamic strategy as the task runtime itself places (synor/runtime.h):
 * the fabric's devices that share a profile and a node are the workers of
 * one runtime device, with one ready queue by (priority, readiness) and a
 * deque each; a Normal task released by a device's task stays on that
 * device's deque, any other goes to the queue of the device that runs it
 * fastest; an idle device takes the queue's head above Normal, then its
 * own newest task, then the queue's head, then steals the oldest task of
 * its group's fullest deque (src/sim/rtrule.c). For predicting a real run
 * of the runtime on the local fabric (one device per CPU worker); the
 * trace's strategy is "runtime". Same inputs, the same trace. */
int synor_simulate_runtime(const synor_cost *c, synor_trace **out);

/* A simulated preemption of a device's interruptible capacity (seed 003
 * §1.3; the runtime's synor_runtime_preempt, synor/leasejob.h):
 *   at `at` the device gets the warning (mark "preempted"). The job
 *     checkpoints on it: as soon as its running task ends (at once when
 *     idle) the device runs the checkpoint (mark "checkpoint"), taking
 *     `checkpoint` seconds, or, when that is negative, the bytes of task
 *     output held in its memory space divided by checkpoint_bw; cut at the
 *     deadline. Without replacement the tasks queued on it move to the
 *     other devices at once (dynamic placement: the job knows it is
 *     leaving) and no new task is placed there.
 *   at at + warning, the deadline: without replacement the device leaves
 *     the fabric (mark "device stopped"); a task still running there is
 *     cut (mark "aborted") and re-runs from the start elsewhere. With
 *     replacement the device stays (mark "replaced") and from then on
 *     costs replacement_price per hour (0: its own price).
 * What the device produced stays readable over its links after it left:
 * the checkpoint holds it (a simplification: a real job reads it from
 * where the checkpoint was written). A device that left is paid up to the
 * deadline and draws no idle power after it.
 * Requires the dynamic strategy (a plan fixed in advance cannot move a
 * device's tasks). */
typedef struct synor_sim_preemption {
    size_t device;            /* fabric device index */
    double at;                /* seconds: the warning, >= 0 */
    double warning;           /* seconds to the deadline, > 0 */
    double checkpoint;        /* seconds; < 0: bytes held / checkpoint_bw */
    double checkpoint_bw;     /* bytes per second, > 0 when checkpoint < 0 */
    int replaced;             /* replacement capacity was obtained */
    int64_t replacement_price_micro; /* per hour after the deadline; 0 = the device's */
} synor_sim_preemption;

#define SYNOR_SIM_MAX_PREEMPTIONS 64

/* synor_simulate with preemptions (n may be 0: the same as synor_simulate).
 * SYNOR_EINVAL naming the preemption and the field for a bad one: a device
 * out of range, times negative or not finite, a non-positive warning, a
 * checkpoint by bandwidth without one, a negative price, two preemptions
 * of one device that overlap or follow one without replacement, more than
 * SYNOR_SIM_MAX_PREEMPTIONS; SYNOR_ENOTSUP with a plan. Same inputs, the
 * same trace, byte for byte. */
int synor_simulate_preempt(const synor_cost *c, const synor_plan *p,
                           const synor_sim_preemption *pre, size_t n, synor_trace **out);
void synor_trace_destroy(synor_trace *t);

/* The trace as JSON (format synor-trace/1); free() it. */
char *synor_trace_to_json(const synor_trace *t);
/* Reads a trace written by synor_trace_to_json (or by a real run). Every
 * time must lie in [0, makespan] (relative slack 1e-9) with start <= end,
 * every device index in range; tasks and transfers are sorted by start.
 * Errors name file:line:column, the field and the value; *out is untouched. */
int synor_trace_load_string(const char *text, size_t len, const char *name, synor_trace **out);
int synor_trace_load_file(const char *path, synor_trace **out);

#ifdef __cplusplus
}
#endif
#endif
