/* synor/plan.h - planners: which device runs each task, and when (seed 001,
 * Part 2 "optimize_assignment" and §3.1).
 *
 * Strategies (synor_strategy_describe prints these):
 *   heft      HEFT with insertion (Topcuoglu, Hariri & Wu 2002): tasks in
 *             decreasing upward rank, each on the device giving the earliest
 *             finish time, using idle gaps between planned tasks.
 *   peft      PEFT (Arabnejad & Barbosa 2014): ranks and device choice from
 *             the optimistic cost table (finish time + OCT).
 *   energy    minimum energy: active energy of the task plus the idle power
 *             of every device over any extension of the makespan; with a
 *             deadline, the least-energy plan that meets it among candidates
 *             (HEFT, PEFT, greedy passes for a fixed ladder of targets;
 *             src/plan/deadline.c), else the fastest of them.
 *   cost      minimum money: price of the device for the task's time plus
 *             the price of every device over any makespan extension; deadline
 *             as for energy, on money.
 *   mix       StarPU dmda-like weighted fitness: alpha x finish time +
 *             beta x transfer time + gamma x energy.
 *   gpu-only  baseline: HEFT on the GPUs; tasks no GPU can run, or no GPU
 *             has memory left for, go to CPUs.
 *   cpu-only  baseline: HEFT on the CPUs only.
 *   seed      baseline: each task on the processor kind the seed names as
 *             optimal (the task's preferred kind), else its fallback kind,
 *             else anywhere; earliest finish among devices of that kind.
 *   pipeline  pipeline parallelism (seed 001 §3.3): the model's layers (the
 *             tasks that share a weight) split into contiguous ranges, one
 *             per device in the fabric's order, chosen by dynamic
 *             programming on each device's speed and memory and the
 *             transfers between stages; micro-batches flow through (HEFT
 *             order within the split). The plan lists its stages.
 *   improve   the better of the HEFT and PEFT schedules, then iterative
 *             improvement: tasks of the critical path moved to other
 *             devices (the schedule rebuilt by HEFT's order and insertion)
 *             while the makespan drops; never worse than HEFT or PEFT.
 *             With weights or colocation groups: HEFT's placement.
 *   exact     branch and bound over every order and assignment, started
 *             from improve's schedule (HEFT's or PEFT's with weights or
 *             groups), within a time limit: the best schedule found, the
 *             lower bound it proved (synor_plan.bound) and whether it is
 *             optimal; DAGs of up to SYNOR_EXACT_MAX_TASKS tasks. The
 *             reference the heuristics are tested against (src/plan/exact.c,
 *             docs/PLANNING.md).
 *
 * Weights (data no task produces) have a place. Each starts at its home:
 * the host memory of the fabric's first CPU (where it occupies memory from
 * the start) or, when the weights do not fit there, storage read at a
 * stated bandwidth. A task runs only where every weight it uses is held;
 * putting one on a device costs a copy from the holder that delivers it
 * first (home, storage, or a device that already has it), one copy at a
 * time per device, and its bytes stay there for the whole run: every
 * replica counts against the device's memory, with the task's own working
 * memory. Two modes (synor_weights):
 *   preload   (default) the weights are put in place before the run: the
 *             plan reports that as its setup time, the makespan starts
 *             when they are in place;
 *   load      the copies are part of the run: a task waits for its
 *             weights, which may be fetched while earlier tasks compute.
 * List planners try three placements and keep the best by their
 * objective: each weight on one device besides its home (replicas only
 * where no holder can run the task), replicas wherever memory allows,
 * and (preload) replicas priced by their copy time as in load mode. That
 * is what puts one pipeline stage per GPU instead of stage 0 on every GPU.
 * A task that fits on no device fails naming the task, the device that
 * came closest, the datum and the shortfall.
 *
 * Planners work on a synor_sched_problem, a plain description that either
 * comes from a cost matrix (synor_plan_create) or is filled by the caller
 * (synor_plan_problem; benchmarks on random DAGs do this). Communication
 * between devices p != q for an edge of b bytes costs lat[p][q] +
 * b x inv_bw[p][q] (sums over the hops of a fabric path have this form),
 * or exactly pred_comm[e] where the edge gives it (Topcuoglu's model, for
 * literature problems); on the same device it is free. Plans are
 * deterministic: ties are broken by the lowest index. */
#ifndef SYNOR_PLAN_H
#define SYNOR_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "synor/cost.h"
#include "synor/processor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SYNOR_STRATEGY_MAP(X)                                              \
    X(HEFT, "heft", "HEFT with insertion: earliest finish time, upward rank") \
    X(PEFT, "peft", "PEFT: optimistic cost table look-ahead")              \
    X(ENERGY, "energy", "minimum energy (active + idle), optional deadline") \
    X(COST, "cost", "minimum money from prices per device-hour, optional deadline") \
    X(MIX, "mix", "weighted alpha*finish + beta*transfer + gamma*energy (StarPU dmda)") \
    X(GPU_ONLY, "gpu-only", "baseline: GPUs only (CPUs for what no GPU runs or holds)") \
    X(CPU_ONLY, "cpu-only", "baseline: CPUs only")                         \
    X(SEED, "seed", "baseline: each task on the kind the seed names as optimal") \
    X(EXACT, "exact", "branch and bound: optimal makespan or a proven bound, time limit") \
    X(PIPELINE, "pipeline", "pipeline: contiguous layer ranges per device by dynamic programming") \
    X(IMPROVE, "improve", "best of HEFT and PEFT, then local search on the critical path")

typedef enum synor_strategy {
#define SYNOR__ST_ENUM(e, s, d) SYNOR_STRATEGY_##e,
    SYNOR_STRATEGY_MAP(SYNOR__ST_ENUM)
#undef SYNOR__ST_ENUM
    SYNOR_STRATEGY_COUNT
} synor_strategy;

const char *synor_strategy_name(synor_strategy s);
const char *synor_strategy_describe(synor_strategy s);
int synor_strategy_from_name(const char *name, synor_strategy *out);

/* The exact solver's largest problem (its recursion is one level per
 * task) and its default time limit, seconds. */
#define SYNOR_EXACT_MAX_TASKS 1024
#define SYNOR_EXACT_TIME_LIMIT_DEFAULT 60.0

/* How weights get where the plan puts them (see above). */
typedef enum synor_weights {
    SYNOR_WEIGHTS_PRELOAD = 0,
    SYNOR_WEIGHTS_LOAD = 1
} synor_weights;

const char *synor_weights_name(synor_weights w);
int synor_weights_from_name(const char *name, synor_weights *out);

/* A weight's home when it is in storage rather than a device's memory. */
#define SYNOR_HOME_STORAGE ((size_t)-1)
/* Default storage read bandwidth, bytes/s: a PCIe 4.0 x4 NVMe SSD's
 * sequential read (about 7 GB/s; e.g. Samsung 990 PRO 7.45 GB/s). */
#define SYNOR_STORAGE_BW_DEFAULT 7e9

typedef struct synor_plan_options {
    synor_strategy strategy;
    double deadline;            /* seconds, energy and cost; 0 = none */
    double alpha, beta, gamma;  /* mix: s/s, s/s, s/J (defaults 1, 1, 1e-3) */
    uint64_t exact_node_limit;  /* exact: give up proving optimality after
                                   this many search nodes (0 = no limit) */
    double exact_time_limit;    /* exact: seconds of search (monotonic clock)
                                   before it returns its best schedule and
                                   bound; <= 0 = SYNOR_EXACT_TIME_LIMIT_DEFAULT */
    synor_weights weights;      /* default SYNOR_WEIGHTS_PRELOAD */
    size_t micro_batches;       /* pipeline: 0 = found from the graph */
    size_t pipeline_buffers;    /* pipeline: micro-batches a stage may run
                                   ahead of the next (bounded buffers
                                   between stages); 0 = unbounded */
    size_t pipeline_stages;     /* pipeline: exactly this many stages (a
                                   demonstration over several devices where
                                   one would do); 0 = the best number */
    double storage_bw;          /* bytes/s for weights in storage; 0 = the default */
} synor_plan_options;

void synor_plan_options_init(synor_plan_options *o);

/* The input of every planner. Arrays are read, never kept. */
typedef struct synor_sched_problem {
    size_t n_tasks, n_devices;
    const double *exec;         /* [task * n_devices + dev] seconds; INFINITY = cannot */
    const double *energy;       /* same shape, joules; NULL = exec x 1 W */
    const size_t *pred_off;     /* n_tasks + 1 offsets into pred / pred_bytes */
    const size_t *pred;         /* predecessor task indexes */
    const double *pred_bytes;   /* bytes on each edge */
    const double *pred_comm;    /* per edge: explicit seconds between distinct
                                   devices, < 0 = from the bytes; NULL = none */
    const double *lat;          /* [p * n_devices + q] seconds; NULL = 0 */
    const double *inv_bw;       /* [p * n_devices + q] seconds per byte; NULL = 0 */
    const double *idle_watts;   /* per device; NULL = 0 */
    const int64_t *price_micro; /* per device-hour; NULL = 0 */
    const synor_kind *kind;     /* per device; NULL = all CPU */
    const int *preferred;       /* per task: a synor_kind or -1; NULL = none */
    const int *fallback;        /* per task: a synor_kind or -1; NULL = none */
    /* Weights (optional; n_items 0 = none). Item k has item_bytes[k]
     * bytes and starts at item_home[k]: a device, whose memory it occupies,
     * or SYNOR_HOME_STORAGE. Task i needs items use[use_off[i] ..
     * use_off[i + 1]) on its device. */
    size_t n_items;
    const double *item_bytes;
    const size_t *item_home;
    const size_t *use_off, *use;
    double storage_bw;          /* bytes/s from storage; 0 = the default */
    /* Memory (optional): per device capacity in bytes (NULL = unlimited)
     * and per task the working memory it needs while it runs (NULL = 0). */
    const double *mem;
    const double *task_mem;
    /* Colocation groups (optional): per task a group index below n_groups
     * or SIZE_MAX. A group's tasks run on one device; list planners put a
     * group's first task on a device no other group uses when one can take
     * it (data-parallel replicas, tensor-parallel shards spread out). */
    const size_t *group;
    size_t n_groups;
} synor_sched_problem;

/* A pipeline stage: layers [first_layer, end_layer) on dev (layers as the
 * pipeline strategy finds them, numbered in order), from task first_task
 * to task last_task. */
typedef struct synor_plan_stage {
    size_t dev, first_layer, end_layer, first_task, last_task;
    double weight_bytes;          /* of its layers */
    double time_per_micro_batch;  /* seconds, its layers on dev */
} synor_plan_stage;

/* A copy of a weight onto a device, in the plan. Times are seconds on the
 * plan's clock (load mode) or on the setup clock before the run (preload). */
typedef struct synor_plan_load {
    size_t item, dev;
    size_t src;                 /* a device, or SYNOR_HOME_STORAGE */
    double start, finish;
} synor_plan_load;

/* A plan, read-only. */
typedef struct synor_plan {
    synor_strategy strategy;
    size_t n_tasks, n_devices;
    const size_t *device;       /* per task */
    const double *start, *finish; /* planned, seconds */
    const size_t *order;        /* tasks by planned start (ties: device, index) */
    double makespan;            /* planned */
    int optimal;                /* exact: 1 if optimality was proven */
    uint64_t nodes;             /* exact: search nodes visited */
    double bound;               /* exact: proven lower bound of any
                                   schedule's makespan, seconds (= makespan
                                   when optimal); other strategies: 0 */
    double gap;                 /* exact: (makespan - bound) / bound, 0 when
                                   optimal (or bound 0); others: 0 */
    synor_weights weights;      /* how the loads below are timed */
    size_t n_loads;
    const synor_plan_load *loads; /* in the order they were planned */
    double setup;               /* preload: seconds to put the weights in
                                   place before the run (devices in
                                   parallel, each one copy at a time) */
    size_t n_stages;            /* pipeline: its stages, in order */
    const synor_plan_stage *stages;
    size_t micro_batches;       /* pipeline: as used for the split */
    size_t pipeline_buffers;    /* pipeline: as planned (0 = unbounded) */
    double deadline;            /* the options' deadline, seconds; 0 = none */
    int deadline_met;           /* makespan <= deadline (1 without one) */
} synor_plan;

/* Plans a workload with the costs of c. Fails with SYNOR_ENODEV naming the
 * task when a task runs on no allowed device, and with SYNOR_ENOMEM naming
 * the task, the device that came closest, the datum and the shortfall when
 * it fits in no allowed device's memory. */
int synor_plan_create(const synor_cost *c, const synor_plan_options *o, synor_plan **out);
/* Plans a caller-described problem. */
int synor_plan_problem(const synor_sched_problem *pb, const synor_plan_options *o,
                       synor_plan **out);
void synor_plan_destroy(synor_plan *p);

/* Checks a plan against its problem: every task on a device that can run
 * it, no task before its inputs arrive, no two tasks at once on a device,
 * finish = start + exec; every weight a task uses held on its device (and,
 * in load mode, there before it starts), each copy no shorter than its
 * cost from a source that held the weight, one copy at a time per device,
 * and every device's weights plus its largest task's working memory within
 * its memory. 0 or SYNOR_EINVAL naming the first violation. */
int synor_plan_validate(const synor_plan *p, const synor_sched_problem *pb);

/* The workload's weights in the order a plan numbers them (the items of
 * synor_plan_load): datum[k] is the workload datum of item k, for the data
 * no task produces that have bytes, in data order. datum holds
 * synor_workload_data_count(w) entries; returns the number of items. */
size_t synor_plan_weight_data(const synor_workload *w, size_t *datum);

/* The problem synor_plan_create solves, for synor_plan_validate and for
 * callers that want to run several planners; free with
 * synor_sched_problem_free. Weights and memory are filled in; the storage
 * bandwidth is the default. */
int synor_sched_problem_from_cost(const synor_cost *c, synor_sched_problem **out);
void synor_sched_problem_free(synor_sched_problem *pb);

/* The plan as JSON (format synor-plan/1): per task id, device name, start,
 * finish. free() it. */
char *synor_plan_to_json(const synor_plan *p, const synor_cost *c);

#ifdef __cplusplus
}
#endif
#endif
