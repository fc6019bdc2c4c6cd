/* heft.c - list scheduling: HEFT with insertion, PEFT, and the objective
 * and baseline variants that share their machinery (synor/plan.h).
 *
 * Every strategy places tasks one at a time, in an order that respects
 * dependencies, on the allowed device that minimises its objective; the
 * start is the earliest idle gap on that device at or after the time the
 * task's inputs arrive (insertion policy). Per device the planned intervals
 * are kept sorted and disjoint, so the gap search is a binary search plus a
 * forward scan (bounded by GAP_SCAN_LIMIT gaps), and appends (the common
 * case) cost O(1).
 *
 * Ranks use averages: w_i over the devices that can run the task, and for
 * edges L + b R where L and R are the mean latency and mean seconds per byte
 * over ordered pairs of distinct devices (an edge's explicit cost where the
 * problem gives one), so computing ranks is linear in tasks + edges. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "synor/fabric.h"
#include "plan/plan_internal.h"

/* Gaps examined per device before appending instead: keeps planning near
 * linear on graphs of a million tasks, where exhaustive insertion is
 * quadratic; small graphs never reach it. */
#define GAP_SCAN_LIMIT 256

/* A colocation group's device must run the whole group within this factor
 * of the fastest device's time for it. */
#define GROUP_SLACK 2.0

typedef struct slot {
    double s, e;
} slot;

/* A device's planned intervals, sorted and disjoint, in blocks of at most
 * BLOCK so that inserting into a gap moves at most one block's worth. */
#define BLOCK 256

typedef struct block {
    size_t n;
    slot v[BLOCK];
} block;

typedef struct timeline {
    block **b;
    size_t nb, cap;
} timeline;

static double last_end(const timeline *t)
{
    const block *k = t->b[t->nb - 1];
    return k->v[k->n - 1].e;
}

static double find_gap(const timeline *t, double ready, double w)
{
    if (!t->nb || last_end(t) <= ready)
        return ready;
    size_t lo = 0, hi = t->nb;
    while (lo < hi) { /* first block whose last interval ends after ready */
        size_t mid = (lo + hi) / 2;
        const block *k = t->b[mid];
        if (k->v[k->n - 1].e <= ready)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t bi = lo, i = 0;
    const block *k = t->b[bi];
    for (size_t l = 0, h = k->n; l < h;) { /* first interval in it ending after ready */
        size_t mid = (l + h) / 2;
        if (k->v[mid].e <= ready)
            l = mid + 1;
        else
            h = mid;
        i = l;
    }
    double cand = ready;
    for (size_t seen = 0; bi < t->nb; bi++, i = 0) {
        k = t->b[bi];
        for (; i < k->n; i++, seen++) {
            if (cand + w <= k->v[i].s)
                return cand;
            if (k->v[i].e > cand)
                cand = k->v[i].e;
            if (seen == GAP_SCAN_LIMIT) { /* give up on gaps: after the last task */
                double e = last_end(t);
                return e > cand ? e : cand;
            }
        }
    }
    return cand;
}

/* Whether slot v comes after [s, e): intervals are kept in order of start,
 * then end, so that a zero-length one at another's start comes first and
 * the ends stay in order too (find_gap's binary search needs that). */
static int after(const slot *v, double s, double e)
{
    return v->s > s || (v->s == s && v->e > e);
}

static int insert(timeline *t, double s, double e)
{
    size_t bi = t->nb ? t->nb - 1 : 0;
    if (t->nb && after(&t->b[bi]->v[t->b[bi]->n - 1], s, e)) {
        size_t lo = 0, hi = t->nb; /* first block whose last slot is after [s, e) */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (!after(&t->b[mid]->v[t->b[mid]->n - 1], s, e))
                lo = mid + 1;
            else
                hi = mid;
        }
        bi = lo;
    }
    if (!t->nb || t->b[bi]->n == BLOCK) { /* a new block after bi, or a split */
        if (t->nb == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 4;
            block **nbk = synor__realloc(t->b, cap * sizeof *nbk);
            if (!nbk)
                return synor__error(SYNOR_ENOMEM, "out of memory");
            t->b = nbk;
            t->cap = cap;
        }
        block *fresh = synor__malloc(sizeof *fresh);
        if (!fresh)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        fresh->n = 0;
        if (!t->nb) {
            t->b[t->nb++] = fresh;
            bi = 0;
        } else {
            block *full = t->b[bi];
            int append = bi == t->nb - 1 && !after(&full->v[full->n - 1], s, e);
            if (!append) { /* move the upper half */
                fresh->n = BLOCK / 2;
                memcpy(fresh->v, full->v + BLOCK / 2, (BLOCK / 2) * sizeof *fresh->v);
                full->n = BLOCK / 2;
            }
            memmove(&t->b[bi + 2], &t->b[bi + 1], (t->nb - bi - 1) * sizeof *t->b);
            t->b[bi + 1] = fresh;
            t->nb++;
            if (append || !after(&full->v[full->n - 1], s, e))
                bi++;
        }
    }
    block *k = t->b[bi];
    size_t pos = k->n;
    while (pos > 0 && after(&k->v[pos - 1], s, e))
        pos--;
    memmove(&k->v[pos + 1], &k->v[pos], (k->n - pos) * sizeof *k->v);
    k->v[pos] = (slot){s, e};
    k->n++;
    return 0;
}

typedef struct ls {
    const synor_sched_problem *pb;
    const synor_plan_options *o;
    size_t n, d;
    size_t *succ_off, *succ, *succ_edge; /* successors with their edge index */
    double *wbar, *rank, *oct;
    double Lbar, Rbar;
    timeline *tl;
    double idle_total;  /* sum of idle watts */
    int64_t price_total;
    synor__wstate *ws;  /* weights and memory, or NULL */
    synor__nofit *nf;   /* the closest miss, for the error */
    size_t *gdev;       /* per colocation group: its device, or SIZE_MAX */
    size_t *gcount;     /* per device: groups placed on it */
    double *gwork;      /* [group * d + device]: the group's tasks there */
    double *gbest;      /* per group: its least gwork over the devices */
    const size_t *fixed; /* per task: the only device it may take, or NULL */
    int spread;         /* placing a group's first task: only devices with none */
    int slack;          /* ... and only devices within GROUP_SLACK for the group */
} ls;

static void ls_free(ls *s)
{
    synor__free(s->succ_off);
    synor__free(s->succ);
    synor__free(s->succ_edge);
    synor__free(s->wbar);
    synor__free(s->rank);
    synor__free(s->oct);
    synor__free(s->gdev);
    synor__free(s->gcount);
    synor__free(s->gwork);
    synor__free(s->gbest);
    if (s->tl)
        for (size_t p = 0; p < s->d; p++) {
            for (size_t k = 0; k < s->tl[p].nb; k++)
                synor__free(s->tl[p].b[k]);
            synor__free(s->tl[p].b);
        }
    synor__free(s->tl);
}

static double exec(const ls *s, size_t i, size_t p) { return s->pb->exec[i * s->d + p]; }

/* The mean cost of an edge over ordered pairs of distinct devices: an
 * explicit cost is the same for every pair (Topcuoglu's c-bar). */
static double cbar(const ls *s, size_t edge)
{
    if (s->pb->pred_comm && s->pb->pred_comm[edge] >= 0)
        return s->d > 1 ? s->pb->pred_comm[edge] : 0;
    return s->Lbar + s->pb->pred_bytes[edge] * s->Rbar;
}

static int ls_init(ls *s, const synor_sched_problem *pb, const synor_plan_options *o,
                   const size_t *topo)
{
    memset(s, 0, sizeof *s);
    s->pb = pb;
    s->o = o;
    s->n = pb->n_tasks;
    s->d = pb->n_devices;
    size_t n = s->n, d = s->d, m = pb->pred_off[n];
    s->succ_off = synor__calloc_whole(n + 1, sizeof *s->succ_off);
    s->succ = synor__malloc_whole((m ? m : 1) * sizeof *s->succ);
    s->succ_edge = synor__malloc_whole((m ? m : 1) * sizeof *s->succ_edge);
    s->wbar = synor__malloc_whole((n ? n : 1) * sizeof *s->wbar);
    s->rank = synor__malloc_whole((n ? n : 1) * sizeof *s->rank);
    s->tl = synor__calloc(d, sizeof *s->tl);
    if (!s->succ_off || !s->succ || !s->succ_edge || !s->wbar || !s->rank || !s->tl)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t e = 0; e < m; e++)
        s->succ_off[pb->pred[e] + 1]++;
    for (size_t i = 0; i < n; i++)
        s->succ_off[i + 1] += s->succ_off[i];
    size_t *fill = synor__calloc_whole(n ? n : 1, sizeof *fill);
    if (!fill)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
            size_t j = pb->pred[e], k = s->succ_off[j] + fill[j]++;
            s->succ[k] = i;
            s->succ_edge[k] = e;
        }
    synor__free(fill);
    if (d > 1) {
        double L = 0, R = 0;
        for (size_t p = 0; p < d; p++)
            for (size_t q = 0; q < d; q++)
                if (p != q) {
                    L += pb->lat ? pb->lat[p * d + q] : 0;
                    R += pb->inv_bw ? pb->inv_bw[p * d + q] : 0;
                }
        s->Lbar = L / (double)(d * (d - 1));
        s->Rbar = R / (double)(d * (d - 1));
    }
    for (size_t i = 0; i < n; i++) {
        double sum = 0;
        size_t k = 0;
        for (size_t p = 0; p < d; p++)
            if (isfinite(exec(s, i, p))) {
                sum += exec(s, i, p);
                k++;
            }
        s->wbar[i] = k ? sum / (double)k : INFINITY;
    }
    /* upward rank, in reverse topological order */
    for (size_t k = n; k-- > 0;) {
        size_t i = topo[k];
        double best = 0;
        for (size_t e = s->succ_off[i]; e < s->succ_off[i + 1]; e++) {
            double r = cbar(s, s->succ_edge[e]) + s->rank[s->succ[e]];
            if (r > best)
                best = r;
        }
        s->rank[i] = (isfinite(s->wbar[i]) ? s->wbar[i] : 0) + best;
    }
    for (size_t p = 0; p < d; p++) {
        s->idle_total += pb->idle_watts ? pb->idle_watts[p] : 0;
        s->price_total += pb->price_micro ? pb->price_micro[p] : 0;
    }
    return 0;
}

/* PEFT's optimistic cost table, in reverse topological order. */
static int build_oct(ls *s, const size_t *topo)
{
    size_t n = s->n, d = s->d;
    s->oct = synor__calloc(n && d ? n * d : 1, sizeof *s->oct);
    if (!s->oct)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t k = n; k-- > 0;) {
        size_t i = topo[k];
        double *row = &s->oct[i * d];
        for (size_t e = s->succ_off[i]; e < s->succ_off[i + 1]; e++) {
            size_t j = s->succ[e];
            const double *rj = &s->oct[j * d];
            double A = INFINITY;
            for (size_t w = 0; w < d; w++)
                if (rj[w] + exec(s, j, w) < A)
                    A = rj[w] + exec(s, j, w);
            double c = cbar(s, s->succ_edge[e]);
            for (size_t p = 0; p < d; p++) {
                double v = rj[p] + exec(s, j, p);
                if (A + c < v)
                    v = A + c;
                if (v > row[p])
                    row[p] = v;
            }
        }
        double sum = 0;
        size_t cnt = 0;
        for (size_t p = 0; p < d; p++)
            if (isfinite(row[p]) && isfinite(exec(s, i, p))) {
                sum += row[p];
                cnt++;
            }
        s->rank[i] = cnt ? sum / (double)cnt : 0;
    }
    return 0;
}

static int kind_of(const ls *s, size_t p)
{
    return s->pb->kind ? (int)s->pb->kind[p] : (int)SYNOR_KIND_CPU;
}

/* Whether task i may run on p: the device runs it and its weights and
 * working memory fit; *wready is when its weights are there. A memory miss
 * closer than the one recorded is kept for the error message. */
static int usable_at(const ls *s, size_t i, size_t p, double *wready)
{
    *wready = 0;
    if (!isfinite(exec(s, i, p)) || (s->fixed && s->fixed[i] != p))
        return 0;
    size_t g = s->pb->group ? s->pb->group[i] : SIZE_MAX;
    /* a group goes where its first task went; the first task goes where
     * the whole group runs within GROUP_SLACK of its fastest device (not
     * where its first, perhaps cheap, task would finish first) */
    if (g != SIZE_MAX && s->gdev &&
        ((s->gdev[g] != SIZE_MAX && s->gdev[g] != p) ||
         (s->gdev[g] == SIZE_MAX &&
          ((s->spread && s->gcount[p]) ||
           (s->slack && s->gwork[g * s->d + p] > GROUP_SLACK * s->gbest[g])))))
        return 0;
    if (!s->ws)
        return 1;
    synor__nofit nf;
    if (synor__ws_probe(s->ws, i, p, wready, &nf))
        return 1;
    if (s->nf && nf.need > 0 &&
        (s->nf->need <= 0 || nf.need - nf.cap < s->nf->need - s->nf->cap))
        *s->nf = nf;
    return 0;
}

static int usable(const ls *s, size_t i, size_t p)
{
    double r;
    return usable_at(s, i, p, &r);
}

/* Devices the strategy allows for task i: all, or those of one kind. */
static int allowed_kind(const ls *s, size_t i)
{
    int want[3] = {-1, -1, -1};
    switch (s->o->strategy) {
    case SYNOR_STRATEGY_GPU_ONLY:
        want[0] = SYNOR_KIND_GPU;
        want[1] = SYNOR_KIND_CPU;
        break;
    case SYNOR_STRATEGY_CPU_ONLY:
        return SYNOR_KIND_CPU;
    case SYNOR_STRATEGY_SEED:
        want[0] = s->pb->preferred ? s->pb->preferred[i] : -1;
        want[1] = s->pb->fallback ? s->pb->fallback[i] : -1;
        break;
    default:
        return -1;
    }
    for (int k = 0; k < 2; k++) {
        if (want[k] < 0)
            continue;
        for (size_t p = 0; p < s->d; p++)
            if (kind_of(s, p) == want[k] && usable(s, i, p))
                return want[k];
    }
    return s->o->strategy == SYNOR_STRATEGY_GPU_ONLY ? SYNOR_KIND_GPU : -1;
}

static int place_once(ls *s, size_t i, double subdeadline, double *makespan, size_t *dev,
                      double *st, double *ft);

/* Places task i. With one holder per weight, a task whose weights no
 * holder can take is placed again with replicas allowed. */
static int place(ls *s, size_t i, double subdeadline, double *makespan, size_t *dev, double *st,
                 double *ft)
{
    size_t g = s->pb->group && s->gdev ? s->pb->group[i] : SIZE_MAX;
    int rc;
    if (g != SIZE_MAX && s->gdev[g] == SIZE_MAX) {
        /* a group's first task: a device no other group uses and that runs
         * the whole group well, else one that runs it well, else any */
        for (int k = 0; k < 2; k++) {
            s->spread = k == 0;
            s->slack = 1;
            rc = place_once(s, i, subdeadline, makespan, dev, st, ft);
            s->spread = s->slack = 0;
            if (rc != SYNOR_ENODEV && rc != SYNOR_ENOMEM)
                goto placed;
        }
    }
    rc = place_once(s, i, subdeadline, makespan, dev, st, ft);
    if ((rc == SYNOR_ENODEV || (rc == SYNOR_ENOMEM && s->nf && s->nf->need > 0)) && s->ws &&
        s->ws->single) {
        s->ws->single = 0;
        rc = place_once(s, i, subdeadline, makespan, dev, st, ft);
        s->ws->single = 1;
    }
placed:
    if (!rc && g != SIZE_MAX && s->gdev[g] == SIZE_MAX) {
        s->gdev[g] = dev[i];
        s->gcount[dev[i]]++;
    }
    return rc;
}

static int place_once(ls *s, size_t i, double subdeadline, double *makespan, size_t *dev,
                      double *st, double *ft)
{
    const synor_sched_problem *pb = s->pb;
    const synor_plan_options *o = s->o;
    if (s->nf)
        s->nf->need = 0;
    int kind = allowed_kind(s, i);
    size_t best = (size_t)-1, best_dl = (size_t)-1;
    double best_v = INFINITY, best_eft = INFINITY, best_st = 0;
    double dl_v = INFINITY, dl_eft = INFINITY, dl_st = 0;
    for (size_t p = 0; p < s->d; p++) {
        double ready = 0, xfer = 0;
        if ((kind >= 0 && kind_of(s, p) != kind) || !usable_at(s, i, p, &ready))
            continue;
        double w = exec(s, i, p);
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
            size_t j = pb->pred[e];
            double c = synor__edge_comm(pb, e, dev[j], p);
            xfer += c;
            if (ft[j] + c > ready)
                ready = ft[j] + c;
        }
        double est = find_gap(&s->tl[p], ready, w), eft = est + w;
        double en = pb->energy ? pb->energy[i * s->d + p] : w;
        double ext = eft > *makespan ? eft - *makespan : 0, v;
        switch (o->strategy) {
        case SYNOR_STRATEGY_PEFT:
            v = eft + s->oct[i * s->d + p];
            break;
        case SYNOR_STRATEGY_ENERGY:
            v = en + s->idle_total * ext;
            break;
        case SYNOR_STRATEGY_COST:
            v = (double)synor_money_add(
                synor_money_for_seconds(pb->price_micro ? pb->price_micro[p] : 0, w),
                synor_money_for_seconds(s->price_total, ext));
            break;
        case SYNOR_STRATEGY_MIX:
            v = o->alpha * eft + o->beta * xfer + o->gamma * en;
            break;
        default:
            v = eft;
            break;
        }
        if (v < best_v || (v == best_v && eft < best_eft)) {
            best = p;
            best_v = v;
            best_eft = eft;
            best_st = est;
        }
        if (subdeadline > 0 && eft <= subdeadline &&
            (v < dl_v || (v == dl_v && eft < dl_eft))) {
            best_dl = p;
            dl_v = v;
            dl_eft = eft;
            dl_st = est;
        }
    }
    if (subdeadline > 0) {
        if (best_dl != (size_t)-1) {
            best = best_dl;
            best_eft = dl_eft;
            best_st = dl_st;
        } else { /* no device meets the share of the deadline: be fast */
            best_eft = INFINITY;
            for (size_t p = 0; p < s->d; p++) {
                double ready = 0;
                if ((kind >= 0 && kind_of(s, p) != kind) || !usable_at(s, i, p, &ready))
                    continue;
                double w = exec(s, i, p);
                for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
                    size_t j = pb->pred[e];
                    double r = ft[j] + synor__edge_comm(pb, e, dev[j], p);
                    if (r > ready)
                        ready = r;
                }
                double est = find_gap(&s->tl[p], ready, w);
                if (est + w < best_eft) {
                    best = p;
                    best_eft = est + w;
                    best_st = est;
                }
            }
        }
    }
    if (best == (size_t)-1) {
        if (s->nf && s->nf->need > 0 && s->nf->task == i)
            return synor__error(SYNOR_ENOMEM,
                                "task %zu fits in no device's memory: device %zu needs %.0f "
                                "bytes of %.0f",
                                i, s->nf->dev, s->nf->need, s->nf->cap);
        return synor__error(SYNOR_ENODEV, "task %zu can run on no device this strategy allows",
                            i);
    }
    dev[i] = best;
    st[i] = best_st;
    ft[i] = best_eft;
    if (best_eft > *makespan)
        *makespan = best_eft;
    if (s->ws) {
        int rc = synor__ws_commit(s->ws, i, best);
        if (rc)
            return rc;
    }
    return insert(&s->tl[best], best_st, best_eft);
}

/* Sort key: decreasing rank, then topological position (ranks can tie
 * between a task and its successor when both cost nothing). */
typedef struct rkey {
    double rank;
    size_t pos, task;
} rkey;

static int by_rank(const void *a, const void *b)
{
    const rkey *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank > y->rank ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Ready-list heap for PEFT: highest rank first, then lowest index. */
static int heap_before(const ls *s, size_t a, size_t b)
{
    return s->rank[a] > s->rank[b] || (s->rank[a] == s->rank[b] && a < b);
}

static int list_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                         synor__wstate *ws, size_t *dev, double *st, double *ft,
                         synor__nofit *nf, const size_t *fixed);

int synor__list_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                         synor__wstate *ws, size_t *dev, double *st, double *ft,
                         synor__nofit *nf)
{
    return list_schedule(pb, o, ws, dev, st, ft, nf, NULL);
}

int synor__list_schedule_fixed(const synor_sched_problem *pb, const size_t *assign, size_t *dev,
                               double *st, double *ft)
{
    synor_plan_options o;
    synor_plan_options_init(&o);
    return list_schedule(pb, &o, NULL, dev, st, ft, NULL, assign);
}

static int list_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                         synor__wstate *ws, size_t *dev, double *st, double *ft,
                         synor__nofit *nf, const size_t *fixed)
{
    size_t n = pb->n_tasks;
    size_t *topo = synor__malloc_whole((n ? n : 1) * sizeof *topo);
    size_t *list = synor__malloc_whole((n ? n : 1) * sizeof *list);
    size_t *indeg = synor__calloc_whole(n ? n : 1, sizeof *indeg);
    ls s;
    memset(&s, 0, sizeof s);
    int rc = 0;
    if (!topo || !list || !indeg) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = synor__problem_topo(pb, topo)) || (rc = ls_init(&s, pb, o, topo)))
        goto out;
    s.ws = ws;
    s.nf = nf;
    s.fixed = fixed;
    if (nf)
        nf->need = 0;
    if (pb->group && pb->n_groups) {
        s.gdev = synor__malloc(pb->n_groups * sizeof *s.gdev);
        s.gcount = synor__calloc(pb->n_devices ? pb->n_devices : 1, sizeof *s.gcount);
        if (!s.gdev || !s.gcount) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t g = 0; g < pb->n_groups; g++)
            s.gdev[g] = SIZE_MAX;
        size_t d = pb->n_devices;
        s.gwork = synor__calloc(pb->n_groups * d, sizeof *s.gwork);
        s.gbest = synor__malloc(pb->n_groups * sizeof *s.gbest);
        if (!s.gwork || !s.gbest) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            if (pb->group[i] != SIZE_MAX)
                for (size_t p = 0; p < d; p++)
                    s.gwork[pb->group[i] * d + p] += pb->exec[i * d + p];
        for (size_t g = 0; g < pb->n_groups; g++) {
            s.gbest[g] = INFINITY;
            for (size_t p = 0; p < d; p++)
                s.gbest[g] = s.gwork[g * d + p] < s.gbest[g] ? s.gwork[g * d + p] : s.gbest[g];
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!isfinite(s.wbar[i])) {
            rc = synor__error(SYNOR_ENODEV, "task %zu can run on no device", i);
            goto out;
        }
    double rank_max = 0;
    for (size_t i = 0; i < n; i++)
        if (s.rank[i] > rank_max)
            rank_max = s.rank[i];
    double makespan = 0;
    int deadline = o->deadline > 0 &&
                   (o->strategy == SYNOR_STRATEGY_ENERGY || o->strategy == SYNOR_STRATEGY_COST);
    if (o->strategy == SYNOR_STRATEGY_PEFT) {
        if ((rc = build_oct(&s, topo)))
            goto out;
        size_t hn = 0;
        for (size_t i = 0; i < n; i++) {
            indeg[i] = pb->pred_off[i + 1] - pb->pred_off[i];
            if (!indeg[i]) {
                size_t k = hn++;
                list[k] = i;
                while (k && heap_before(&s, list[k], list[(k - 1) / 2])) {
                    size_t p = (k - 1) / 2, t = list[p];
                    list[p] = list[k];
                    list[k] = t;
                    k = p;
                }
            }
        }
        while (hn) {
            size_t i = list[0];
            list[0] = list[--hn];
            for (size_t k = 0;;) {
                size_t l = 2 * k + 1, b = k;
                if (l < hn && heap_before(&s, list[l], list[b]))
                    b = l;
                if (l + 1 < hn && heap_before(&s, list[l + 1], list[b]))
                    b = l + 1;
                if (b == k)
                    break;
                size_t t = list[k];
                list[k] = list[b];
                list[b] = t;
                k = b;
            }
            if ((rc = place(&s, i, 0, &makespan, dev, st, ft)))
                goto out;
            for (size_t e = s.succ_off[i]; e < s.succ_off[i + 1]; e++) {
                size_t j = s.succ[e];
                if (--indeg[j] == 0) {
                    size_t k = hn++;
                    list[k] = j;
                    while (k && heap_before(&s, list[k], list[(k - 1) / 2])) {
                        size_t p = (k - 1) / 2, t = list[p];
                        list[p] = list[k];
                        list[k] = t;
                        k = p;
                    }
                }
            }
        }
    } else {
        rkey *keys = synor__malloc((n ? n : 1) * sizeof *keys);
        if (!keys) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t k = 0; k < n; k++)
            keys[k] = (rkey){s.rank[topo[k]], k, topo[k]};
        qsort(keys, n, sizeof *keys, by_rank);
        for (size_t k = 0; k < n; k++)
            list[k] = keys[k].task;
        synor__free(keys);
        for (size_t k = 0; k < n; k++) {
            size_t i = list[k];
            /* a task's share of the deadline: the deadline minus the
             * average time still needed after it */
            double sub = 0;
            if (deadline)
                sub = o->deadline * (rank_max > 0 ? (rank_max - s.rank[i] + s.wbar[i]) / rank_max
                                                  : 1);
            if ((rc = place(&s, i, sub, &makespan, dev, st, ft)))
                goto out;
        }
    }
out:
    ls_free(&s);
    synor__free(topo);
    synor__free(list);
    synor__free(indeg);
    return rc;
}
