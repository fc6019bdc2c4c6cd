/* exact_bound.c - the bounds of the exact planner's allocation-first
 * search (exact_comm.c, which describes them): one-machine rules (the jobs
 * that must run one at a time on a device, before or after a task), the
 * fork rule, heads and tails of a partial allocation, and the bound of a
 * partial order on a complete one. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "plan/exact_comm.h"
#include "plan/plan_internal.h"

/* Jackson's rule: jobs (w, q) on one machine from time 0, each followed by
 * its tail q; the least makespan is the largest prefix of times plus the
 * tail where the jobs go by tail, largest first. Sorts the jobs. */
double synor__jackson(double *w, double *q, size_t k)
{
    for (size_t x = 1; x < k; x++) {
        double vw = w[x], vq = q[x];
        size_t y = x;
        while (y > 0 && q[y - 1] < vq) {
            w[y] = w[y - 1];
            q[y] = q[y - 1];
            y--;
        }
        w[y] = vw;
        q[y] = vq;
    }
    double sum = 0, m = 0;
    for (size_t x = 0; x < k; x++) {
        sum += w[x];
        if (sum + q[x] > m)
            m = sum + q[x];
    }
    return m;
}

/* Local predecessors one at a time: from their heads (r) and times (w),
 * the earliest all are done on one machine. Sorts them. */
double synor__serial(double *r, double *w, size_t k)
{
    for (size_t x = 1; x < k; x++) {
        double vr = r[x], vw = w[x];
        size_t y = x;
        while (y > 0 && r[y - 1] > vr) {
            r[y] = r[y - 1];
            w[y] = w[y - 1];
            y--;
        }
        r[y] = vr;
        w[y] = vw;
    }
    double t = 0;
    for (size_t x = 0; x < k; x++)
        t = (t > r[x] ? t : r[x]) + w[x];
    return t;
}

/* One machine, tasks k with head r, time p and tail q: for every subset,
 * the least head + the sum of times + the least tail, over the subsets of
 * tasks with head at least a threshold taken in order of tail. */
static double one_machine(synor__acs *a, size_t k)
{
    double lb = 0;
    size_t *ix = a->om_idx;
    for (size_t x = 0; x < k; x++)
        ix[x] = x;
    /* insertion sort by tail, largest first (k is small) */
    for (size_t x = 1; x < k; x++) {
        size_t v = ix[x], y = x;
        while (y > 0 && a->om_q[ix[y - 1]] < a->om_q[v]) {
            ix[y] = ix[y - 1];
            y--;
        }
        ix[y] = v;
    }
    for (size_t t = 0; t < k; t++) {
        double r = a->om_r[t], sum = 0;
        for (size_t x = 0; x < k; x++) {
            size_t i = ix[x];
            if (a->om_r[i] < r)
                continue;
            sum += a->om_p[i];
            if (r + sum + a->om_q[i] > lb)
                lb = r + sum + a->om_q[i];
        }
    }
    return lb;
}

/* From the end of task j on device p to the makespan, at least (the fork
 * rule): each successor on another device takes its transfer and its
 * bottom level there; those on p run one at a time after j (Jackson's
 * rule on their times and tails). Successors allocated are where they
 * are; for one left, with bl its bottom levels, the cheapest other device
 * or p: for the least threshold T, every successor that would cost more
 * than T elsewhere is on p. */
double synor__acs_fork_rule(synor__acs *a, size_t j, size_t p, const double *bl)
{
    const synor_sched_problem *pb = a->pb;
    size_t d = a->d, nf = 0, nu = 0;
    double fixed = 0;
    for (size_t y = a->succ_off[j]; y < a->succ_off[j + 1]; y++) {
        size_t i = a->succ[y], e = a->succ_e[y];
        if (a->dev[i] != SIZE_MAX) {
            if (a->dev[i] == p) {
                a->fw[nf] = a->w[i];
                a->fq[nf++] = a->tail[i];
            } else {
                double v = synor__edge_comm(pb, e, p, a->dev[i]) + a->w[i] + a->tail[i];
                fixed = v > fixed ? v : fixed;
            }
            continue;
        }
        double r = INFINITY, w = pb->exec[i * d + p];
        for (size_t q = 0; q < d; q++) {
            double v = q == p ? INFINITY : synor__edge_comm(pb, e, p, q) + bl[i * d + q];
            r = v < r ? v : r;
        }
        if (!isfinite(w)) {
            fixed = r > fixed ? r : fixed;
            continue;
        }
        /* by r, largest first */
        size_t x = nu++;
        while (x > 0 && a->ur[x - 1] < r) {
            a->ur[x] = a->ur[x - 1];
            a->uw[x] = a->uw[x - 1];
            a->uq[x] = a->uq[x - 1];
            x--;
        }
        a->ur[x] = r;
        a->uw[x] = w;
        a->uq[x] = bl[i * d + p] - w;
    }
    double best = INFINITY;
    for (size_t t = 0; t <= nu; t++) { /* the first t of them on p */
        double T = t < nu ? a->ur[t] : 0;
        if (T < fixed)
            T = fixed;
        if (T >= best)
            continue;
        size_t k = nf;
        double *w = a->fw + a->n, *q = a->fq + a->n; /* copies: jackson sorts */
        memcpy(w, a->fw, nf * sizeof *w);
        memcpy(q, a->fq, nf * sizeof *q);
        for (size_t x = 0; x < t; x++) {
            w[k] = a->uw[x];
            q[k++] = a->uq[x];
        }
        double v = synor__jackson(w, q, k);
        if (v < T)
            v = T;
        if (v < best)
            best = v;
    }
    return best;
}

double synor__acs_ord_bound(synor__acs *a, double cur, double last)
{
    const synor_sched_problem *pb = a->pb;
    size_t n = a->n, d = a->d;
    double lb = cur;
    for (size_t k = 0; k < n; k++) {
        size_t i = a->in->topo[k];
        if (a->done[i])
            continue;
        size_t p = a->dev[i];
        double h = last > a->avail[p] ? last : a->avail[p];
        size_t nl = 0;
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
            size_t j = pb->pred[e];
            if (!a->done[j] && a->dev[j] == p) { /* these run one at a time */
                a->fw[nl] = a->est[j];
                a->fq[nl++] = a->w[j];
                continue;
            }
            double r = (a->done[j] ? a->ft[j] : a->est[j] + a->w[j]) +
                       synor__edge_comm(pb, e, a->dev[j], p);
            if (r > h)
                h = r;
        }
        if (nl) {
            double t = synor__serial(a->fw, a->fq, nl);
            h = t > h ? t : h;
        }
        a->est[i] = h;
        if (h + a->w[i] + a->tail[i] > lb)
            lb = h + a->w[i] + a->tail[i];
    }
    for (size_t p = 0; p < d; p++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (!a->done[i] && a->dev[i] == p) {
                a->om_r[k] = a->est[i];
                a->om_p[k] = a->w[i];
                a->om_q[k++] = a->tail[i];
            }
        if (k > 1) {
            double v = one_machine(a, k);
            if (v > lb)
                lb = v;
        }
    }
    return synor__acs_round(a, lb);
}

/* The earliest start of task i on device p (allocated there, or if it
 * were): per predecessor allocated elsewhere, its head, time and
 * transfer; those allocated on p one at a time; per predecessor left, the
 * least over its devices of its head, time and transfer. */
static double head_on(synor__acs *a, size_t i, size_t p)
{
    const synor_sched_problem *pb = a->pb;
    size_t d = a->d, nl = 0;
    double h = 0;
    for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
        size_t j = pb->pred[e];
        double r;
        if (a->dev[j] == p) { /* these run one at a time */
            a->fw[nl] = a->head[j];
            a->fq[nl++] = a->w[j];
            continue;
        }
        if (a->dev[j] != SIZE_MAX) {
            r = a->head[j] + a->w[j] + synor__edge_comm(pb, e, a->dev[j], p);
        } else {
            r = INFINITY;
            for (size_t u = 0; u < d; u++) {
                double v = a->uhead[j * d + u] + pb->exec[j * d + u] +
                           synor__edge_comm(pb, e, u, p);
                if (v < r)
                    r = v;
            }
        }
        if (r > h)
            h = r;
    }
    if (nl) {
        double t = synor__serial(a->fw, a->fq, nl);
        h = t > h ? t : h;
    }
    return h;
}

/* The bound of a partial allocation (any set of tasks): heads forward and
 * tails backward in topological order (allocated tasks on their device,
 * tasks left per device), then the tasks left, one machine per device
 * and the work left. */
double synor__acs_alloc_bound(synor__acs *a)
{
    const synor_sched_problem *pb = a->pb;
    const size_t *topo = a->in->topo;
    const double *bl = a->bl2;
    double *bld = a->bld;
    size_t n = a->n, d = a->d;
    double lb = 0;
    for (size_t x = 0; x < n; x++) {
        size_t i = topo[x];
        if (a->dev[i] != SIZE_MAX) {
            a->head[i] = head_on(a, i, a->dev[i]);
            continue;
        }
        for (size_t q = 0; q < d; q++)
            a->uhead[i * d + q] = isfinite(pb->exec[i * d + q]) ? head_on(a, i, q) : INFINITY;
    }
    for (size_t x = n; x-- > 0;) {
        size_t j = topo[x];
        if (a->dev[j] != SIZE_MAX) {
            a->tail[j] = synor__acs_fork_rule(a, j, a->dev[j], bld);
            continue;
        }
        double m = INFINITY;
        for (size_t u = 0; u < d; u++) {
            double w = pb->exec[j * d + u], v = INFINITY;
            if (isfinite(w)) {
                v = w + synor__acs_fork_rule(a, j, u, bld);
                v = v > bl[j * d + u] ? v : bl[j * d + u];
            }
            bld[j * d + u] = v;
            if (a->uhead[j * d + u] + v < m)
                m = a->uhead[j * d + u] + v;
        }
        if (m > lb)
            lb = m;
    }
    /* per device, one machine */
    for (size_t p = 0; p < d; p++) {
        size_t c = 0;
        for (size_t i = 0; i < n; i++) {
            if (a->dev[i] != p)
                continue;
            a->om_r[c] = a->head[i];
            a->om_p[c] = a->w[i];
            a->om_q[c++] = a->tail[i];
        }
        double v = one_machine(a, c);
        if (v > lb)
            lb = v;
    }
    /* the least work left poured on top of the loads */
    if (a->minw_left > 0) {
        double *f = a->om_fill;
        memcpy(f, a->load, d * sizeof *f);
        for (size_t x = 1; x < d; x++) { /* ascending */
            double v = f[x];
            size_t y = x;
            while (y > 0 && f[y - 1] > v) {
                f[y] = f[y - 1];
                y--;
            }
            f[y] = v;
        }
        double rest = a->minw_left, level = f[0];
        size_t x = 1;
        for (;; x++) { /* raise the x lowest to the next load */
            double next = x < d ? f[x] : INFINITY, need = (next - level) * (double)x;
            if (need >= rest) {
                level += rest / (double)x;
                break;
            }
            rest -= need;
            level = next;
        }
        if (level > lb)
            lb = level;
    }
    return synor__acs_round(a, lb);
}
