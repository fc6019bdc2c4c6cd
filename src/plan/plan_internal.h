/* plan_internal.h - what the planner files share: the list scheduler
 * (heft.c), the exact solver (exact.c) and helpers on problems (plan.c).
 * Never installed. */
#ifndef SYNOR_PLAN_INTERNAL_H
#define SYNOR_PLAN_INTERNAL_H

#include "synor/plan.h"

struct synor__jw;

/* A topological order of the problem's tasks (ties: lowest index first);
 * SYNOR_EINVAL if the predecessor lists have a cycle. */
int synor__problem_topo(const synor_sched_problem *pb, size_t *order);

/* Seconds to move an edge of `bytes` from device p to q. */
static inline double synor__comm(const synor_sched_problem *pb, double bytes, size_t p, size_t q)
{
    if (p == q)
        return 0;
    size_t k = p * pb->n_devices + q;
    return (pb->lat ? pb->lat[k] : 0) + (pb->inv_bw ? bytes * pb->inv_bw[k] : 0);
}

/* The list-scheduling strategies (everything but exact). Fills dev, st, ft
 * (n_tasks each). */
int synor__list_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                         size_t *dev, double *st, double *ft);

/* Branch and bound; dev/st/ft hold an incumbent on entry (or ft[0] < 0 for
 * none) and the best schedule found on return. */
int synor__exact_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                          size_t *dev, double *st, double *ft, int *optimal, uint64_t *nodes);

/* deadline.c: energy and cost under o->deadline > 0. Plans the candidates
 * (HEFT, PEFT, the objective without deadline, a ladder of deadline passes)
 * and fills dev, st, ft with the best that meets the deadline, else the
 * fastest. rewind forgets what the memory hooks recorded (0) or says it
 * cannot (nonzero; then one greedy pass plans); NULL: it cannot. */
int synor__deadline_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                             int (*rewind)(const synor_sched_problem *), size_t *dev, double *st,
                             double *ft);

/* The planned makespan, energy (J) and money (micro-units) of a schedule,
 * accounted as the simulator accounts a run (synor/sim.h): active energy
 * of every task + idle power of every device while not busy within the
 * makespan; price per hour of every device that runs a task, for the
 * makespan. Any output may be NULL. 0 or SYNOR_ENOMEM. */
int synor__sched_account(const synor_sched_problem *pb, const size_t *dev, const double *st,
                         const double *ft, double *makespan, double *energy, int64_t *money);

/* Writes the plan's "energy_j", "money_micro", "currency" and, with a
 * deadline, "deadline_s", "deadline_met", "shortfall_s" members into an
 * open JSON object (synor_plan_to_json). */
int synor__plan_json_account(struct synor__jw *j, const synor_plan *p, const synor_cost *c);

#endif
