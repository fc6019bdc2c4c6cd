/* plan_reference.h - what the exact planner's tests share: a seeded
 * generator (rng_state, rnd) and the plain reference search, which tries
 * every start-ordered append sequence (a task at the later of its device
 * becoming free and its inputs arriving, starts never decreasing) with no
 * pruning rule but the incumbent, so its optimum is the true one on small
 * graphs. The includer defines MAXN (tasks) and MAXD (devices). */
#ifndef SYNOR_TESTS_PLAN_REFERENCE_H
#define SYNOR_TESTS_PLAN_REFERENCE_H

#include <math.h>
#include <string.h>

#include "synor.h"

static unsigned long long rng_state;

static inline double rnd(void) /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

typedef struct ref {
    const synor_sched_problem *pb;
    size_t n, d, dev[MAXN], left[MAXN];
    double ft[MAXN], avail[MAXD], best;
    unsigned char done[MAXN];
} ref;

static inline double ref_comm(const synor_sched_problem *pb, size_t e, size_t p, size_t q)
{
    if (p == q)
        return 0;
    return (pb->lat ? pb->lat[p * pb->n_devices + q] : 0) +
           pb->pred_bytes[e] * (pb->inv_bw ? pb->inv_bw[p * pb->n_devices + q] : 0);
}

static inline void ref_search(ref *r, size_t depth, double cur, double last)
{
    if (cur >= r->best)
        return;
    if (depth == r->n) {
        r->best = cur;
        return;
    }
    const synor_sched_problem *pb = r->pb;
    for (size_t i = 0; i < r->n; i++) {
        if (r->done[i] || r->left[i])
            continue;
        for (size_t p = 0; p < r->d; p++) {
            double w = pb->exec[i * r->d + p], s = r->avail[p];
            if (!isfinite(w))
                continue;
            for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
                size_t j = pb->pred[e];
                s = fmax(s, r->ft[j] + ref_comm(pb, e, r->dev[j], p));
            }
            if (s < last - 1e-12)
                continue;
            double old = r->avail[p];
            r->done[i] = 1;
            r->dev[i] = p;
            r->ft[i] = s + w;
            r->avail[p] = s + w;
            for (size_t k = 0; k < r->n; k++)
                for (size_t e = pb->pred_off[k]; e < pb->pred_off[k + 1]; e++)
                    r->left[k] -= pb->pred[e] == i;
            ref_search(r, depth + 1, fmax(cur, s + w), s);
            for (size_t k = 0; k < r->n; k++)
                for (size_t e = pb->pred_off[k]; e < pb->pred_off[k + 1]; e++)
                    r->left[k] += pb->pred[e] == i;
            r->avail[p] = old;
            r->done[i] = 0;
        }
    }
}

/* The optimal makespan, starting from an incumbent (which only prunes). */
static inline double reference(const synor_sched_problem *pb, double incumbent)
{
    ref r;
    memset(&r, 0, sizeof r);
    r.pb = pb;
    r.n = pb->n_tasks;
    r.d = pb->n_devices;
    r.best = incumbent * (1 + 1e-9);
    for (size_t i = 0; i < r.n; i++)
        r.left[i] = pb->pred_off[i + 1] - pb->pred_off[i];
    ref_search(&r, 0, 0, 0);
    return fmin(r.best, incumbent);
}

#endif
