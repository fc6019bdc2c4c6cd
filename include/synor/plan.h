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
 *   exact     branch and bound over every order and assignment: the optimal
 *             makespan for DAGs of up to SYNOR_EXACT_MAX_TASKS tasks, the
 *             reference the heuristics are tested against.
 *
 * Planners work on a synor_sched_problem, a plain description that either
 * comes from a cost matrix (synor_plan_create) or is filled by the caller
 * (synor_plan_problem; benchmarks on random DAGs do this). Communication
 * between devices p != q for an edge of b bytes costs lat[p][q] +
 * b x inv_bw[p][q] (sums over the hops of a fabric path have this form);
 * on the same device it is free. Plans are deterministic: ties are broken
 * by the lowest index. */
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
    X(EXACT, "exact", "branch and bound: optimal makespan, small DAGs only")

typedef enum synor_strategy {
#define SYNOR__ST_ENUM(e, s, d) SYNOR_STRATEGY_##e,
    SYNOR_STRATEGY_MAP(SYNOR__ST_ENUM)
#undef SYNOR__ST_ENUM
    SYNOR_STRATEGY_COUNT
} synor_strategy;

const char *synor_strategy_name(synor_strategy s);
const char *synor_strategy_describe(synor_strategy s);
int synor_strategy_from_name(const char *name, synor_strategy *out);

#define SYNOR_EXACT_MAX_TASKS 15

typedef struct synor_plan_options {
    synor_strategy strategy;
    double deadline;            /* seconds, energy and cost; 0 = none */
    double alpha, beta, gamma;  /* mix: s/s, s/s, s/J (defaults 1, 1, 1e-3) */
    uint64_t exact_node_limit;  /* exact: give up proving optimality after
                                   this many search nodes (0 = 2e8) */
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
    const double *lat;          /* [p * n_devices + q] seconds; NULL = 0 */
    const double *inv_bw;       /* [p * n_devices + q] seconds per byte; NULL = 0 */
    const double *idle_watts;   /* per device; NULL = 0 */
    const int64_t *price_micro; /* per device-hour; NULL = 0 */
    const synor_kind *kind;     /* per device; NULL = all CPU */
    const int *preferred;       /* per task: a synor_kind or -1; NULL = none */
    const int *fallback;        /* per task: a synor_kind or -1; NULL = none */
    /* Optional memory hooks: fits says whether the task may still go to the
     * device given what was placed there before; place records it. */
    int (*fits)(void *user, size_t task, size_t dev);
    void (*place)(void *user, size_t task, size_t dev);
    void *user;
} synor_sched_problem;

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
    double deadline;            /* the options' deadline, seconds; 0 = none */
    int deadline_met;           /* makespan <= deadline (1 without one) */
} synor_plan;

/* Plans a workload with the costs of c. Fails with SYNOR_ENODEV naming the
 * task when a task fits no allowed device. */
int synor_plan_create(const synor_cost *c, const synor_plan_options *o, synor_plan **out);
/* Plans a caller-described problem. */
int synor_plan_problem(const synor_sched_problem *pb, const synor_plan_options *o,
                       synor_plan **out);
void synor_plan_destroy(synor_plan *p);

/* Checks a plan against its problem: every task on a device that can run
 * it, no task before its inputs arrive, no two tasks at once on a device,
 * finish = start + exec. 0 or SYNOR_EINVAL naming the first violation. */
int synor_plan_validate(const synor_plan *p, const synor_sched_problem *pb);

/* The problem synor_plan_create solves, for synor_plan_validate and for
 * callers that want to run several planners; free with
 * synor_sched_problem_free. Memory hooks are left NULL. */
int synor_sched_problem_from_cost(const synor_cost *c, synor_sched_problem **out);
void synor_sched_problem_free(synor_sched_problem *pb);

/* The plan as JSON (format synor-plan/1): per task id, device name, start,
 * finish. free() it. */
char *synor_plan_to_json(const synor_plan *p, const synor_cost *c);

#ifdef __cplusplus
}
#endif
#endif
