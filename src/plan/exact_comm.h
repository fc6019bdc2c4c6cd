/* exact_comm.h - the state of the exact planner's allocation-first search
 * (exact_comm.c: the search; exact_bound.c: its bounds). Internal to
 * src/plan. */
#ifndef SYNOR_PLAN_EXACT_COMM_H
#define SYNOR_PLAN_EXACT_COMM_H

#include <math.h>
#include <stdint.h>
#include <time.h>

#include "plan/plan_internal.h"

typedef struct synor__ord_cand {
    double key, s;
    size_t task;
} synor__ord_cand;

typedef struct synor__alloc_cand {
    double key, raw; /* raw: the child's own bound, which breaks ties */
    size_t dev;
} synor__alloc_cand;

typedef struct synor__acs {
    const synor__exact_comm_in *in;
    const synor_sched_problem *pb;
    size_t n, d;
    size_t *pos;             /* task -> position in in->topo */
    size_t *aord;            /* the allocation order */
    size_t *succ_off, *succ, *succ_e; /* successors and their edge in pred[] */
    size_t *dev;             /* SIZE_MAX: not allocated */
    size_t *used;            /* tasks per device */
    double *head, *tail, *w; /* allocated tasks */
    double *uhead;           /* [i * d + q]: tasks left */
    double *load;            /* per device */
    double minw_left;
    size_t *om_idx;          /* one-machine scratch */
    double *om_r, *om_p, *om_q, *om_fill;
    double *fw, *fq, *ur, *uw, *uq; /* fork/join scratch */
    double *bl2;             /* [i * d + p]: bottom levels with the fork rule */
    double *bld;             /* the same with the allocation so far */
    /* ordering */
    size_t *left;
    unsigned char *done;
    double *st, *ft, *avail, *est;
    synor__ord_cand *oc;     /* n levels of n */
    synor__alloc_cand *ac;   /* n levels of d */
    synor__alloc_cand *ac_tmp; /* d: the allocation's scratch */
    /* the outcome */
    double best, open;
    size_t *bdev;
    double *bst, *bft;
    uint64_t nodes, limit;   /* limit: this pass's */
    struct timespec t_end;
    int aborted;
} synor__acs;

/* Rounded up when every time is an integer (the bounds then are too). */
static inline double synor__acs_round(const synor__acs *a, double v)
{
    return a->in->integral ? ceil(v - 1e-9) : v;
}

/* exact_bound.c. From the end of task j on device p to the makespan, at
 * least (the fork rule), with bl the bottom levels of the tasks left. */
double synor__acs_fork_rule(synor__acs *a, size_t j, size_t p, const double *bl);
/* The bound of a partial allocation (heads, tails, tasks left, one
 * machine per device, work left); fills a->head, a->tail, a->uhead. */
double synor__acs_alloc_bound(synor__acs *a);
/* The bound of a partial order on a complete allocation: cur the makespan
 * so far, last the last start; fills a->est. */
double synor__acs_ord_bound(synor__acs *a, double cur, double last);

#endif
