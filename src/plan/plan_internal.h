/* plan_internal.h - what the planner files share: the list scheduler
 * (heft.c), the exact solver (exact.c) and helpers on problems (plan.c).
 * Never installed. */
#ifndef SYNOR_PLAN_INTERNAL_H
#define SYNOR_PLAN_INTERNAL_H

#include "synor/plan.h"

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

/* Seconds to move edge e (an index into pred) from device p to q: its
 * explicit cost when the problem gives one, else its bytes. */
static inline double synor__edge_comm(const synor_sched_problem *pb, size_t e, size_t p, size_t q)
{
    if (p != q && pb->pred_comm && pb->pred_comm[e] >= 0)
        return pb->pred_comm[e];
    return synor__comm(pb, pb->pred_bytes ? pb->pred_bytes[e] : 0, p, q);
}

/* The list-scheduling strategies (everything but exact). Fills dev, st, ft
 * (n_tasks each). */
int synor__list_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                         size_t *dev, double *st, double *ft);

/* Branch and bound; dev/st/ft hold an incumbent on entry (or ft[0] < 0 for
 * none) and the best schedule found on return. */
int synor__exact_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                          size_t *dev, double *st, double *ft, int *optimal, uint64_t *nodes);

#endif
