/* pipeline.c - the pipeline strategy (seed 001 §3.3): contiguous ranges of
 * a model's layers per device, chosen by dynamic programming, micro-batches
 * flowing through the stages (plan_internal.h).
 *
 * Layers are found from the weights: the tasks whose largest weight is the
 * same datum form one layer (a forward, its backward, every micro-batch's
 * copy); a task with no weight joins the latest layer among its
 * predecessors (the first layer when it has none). Layers are ordered by
 * where they first appear in a topological order.
 *
 * A split puts layers [0, b1) on device d1, [b1, b2) on d2, ..., with
 * d1 < d2 < ... in the fabric's order (so stages follow the order the
 * fabric lists its devices, and each device takes at most one stage). With
 * M micro-batches, stage s taking t_s per micro-batch and c_s to receive
 * one from the stage before, the pipeline takes about
 *     T = sum_s (t_s + c_s) + (M - 1) max_s max(t_s, c_s)
 * (GPipe's fill and drain plus the bottleneck). T is not a sum over stages,
 * so the dynamic program over (layers covered, last device) keeps, per
 * state, the Pareto set of (bottleneck, sum) pairs, and picks the least T
 * at the end (Pareto sets are capped at PARETO_CAP pairs, keeping the
 * least T, which only matters for thousands of unequal layers). A stage is
 * allowed on a device only if it runs every task of its layers and its
 * weights (beside what the device already holds from the start) and its
 * largest working memory fit.
 *
 * M is the number of tasks of the first layer that use its weight with no
 * such task before them (the micro-batches that enter the pipeline). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "plan/plan_internal.h"

#define PARETO_CAP 64

typedef struct pair {
    double mx, sum;
    size_t from_b, from_p, from_k; /* the predecessor state's entry */
    size_t ns;                     /* stages so far */
} pair;

typedef struct front {
    pair *v;
    size_t n, cap;
} front;

/* Adds (mx, sum) unless dominated; drops what it dominates. by_count: only
 * pairs with as many stages compare (a forced number of stages). */
static int front_add(front *f, pair x, double M, int by_count)
{
    for (size_t k = 0; k < f->n; k++)
        if (f->v[k].mx <= x.mx && f->v[k].sum <= x.sum && (!by_count || f->v[k].ns == x.ns))
            return 0;
    size_t w = 0;
    for (size_t k = 0; k < f->n; k++)
        if (!(x.mx <= f->v[k].mx && x.sum <= f->v[k].sum && (!by_count || f->v[k].ns == x.ns)))
            f->v[w++] = f->v[k];
    f->n = w;
    if (f->n == PARETO_CAP) { /* replace the worst by T if x is better */
        size_t worst = 0;
        for (size_t k = 1; k < f->n; k++)
            if (f->v[k].sum + (M - 1) * f->v[k].mx >
                f->v[worst].sum + (M - 1) * f->v[worst].mx)
                worst = k;
        if (x.sum + (M - 1) * x.mx < f->v[worst].sum + (M - 1) * f->v[worst].mx)
            f->v[worst] = x;
        return 0;
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 4;
        pair *v = synor__realloc(f->v, cap * sizeof *v);
        if (!v)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = x;
    return 0;
}

typedef struct pipe {
    const synor_sched_problem *pb;
    size_t n, d, G;
    size_t *group;   /* per task */
    size_t *first;   /* per group: its first task in topological order */
    size_t *last;    /* per group: its last task in topological order */
    double *W;       /* [g * d + p]: the group's tasks on p, all micro-batches */
    double *wbytes;  /* per group: its weights' bytes */
    size_t *witem;   /* per group: the weight that defines it (SIZE_MAX: none) */
    double *tmem;    /* per group: the largest working memory */
    double *xbytes;  /* per boundary after group g: bytes of the edges crossing it */
    double *xedges;  /* ... and how many edges */
    double *xcomm;   /* ... and the explicit seconds of those that give one */
    double *home;    /* per device: bytes of weights it holds from the start */
    unsigned char *free; /* per task: in no layer (no weight of its own) */
    size_t *mb;      /* per task: its micro-batch */
    size_t *pos;     /* per task: its topological position */
    double M;
    size_t want;     /* stages the split must have; 0 = any */
} pipe;

static void pipe_free(pipe *P)
{
    synor__free(P->group);
    synor__free(P->first);
    synor__free(P->last);
    synor__free(P->W);
    synor__free(P->wbytes);
    synor__free(P->witem);
    synor__free(P->tmem);
    synor__free(P->xbytes);
    synor__free(P->xedges);
    synor__free(P->xcomm);
    synor__free(P->home);
    synor__free(P->mb);
    synor__free(P->pos);
    synor__free(P->free);
}

static int uses_item(const synor_sched_problem *pb, size_t i, size_t item)
{
    if (item == SIZE_MAX)
        return 1; /* no weights at all: every task */
    for (size_t u = pb->use_off ? pb->use_off[i] : 0; pb->use_off && u < pb->use_off[i + 1]; u++)
        if (pb->use[u] == item)
            return 1;
    return 0;
}

/* Layers from the weights, their costs, and the number of micro-batches. */
static int pipe_init(pipe *P, const synor_sched_problem *pb, size_t micro_batches)
{
    memset(P, 0, sizeof *P);
    P->pb = pb;
    size_t n = P->n = pb->n_tasks, d = P->d = pb->n_devices, k = pb->n_items;
    size_t *topo = synor__malloc((n ? n : 1) * sizeof *topo);
    size_t *gid = synor__malloc((k ? k : 1) * sizeof *gid);
    P->group = synor__malloc((n ? n : 1) * sizeof *P->group);
    P->home = synor__calloc(d ? d : 1, sizeof *P->home);
    if (!topo || !gid || !P->group || !P->home) {
        synor__free(topo);
        synor__free(gid);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    int rc = synor__problem_topo(pb, topo);
    for (size_t j = 0; j < k; j++) {
        gid[j] = SIZE_MAX;
        size_t h = pb->item_home ? pb->item_home[j] : SYNOR_HOME_STORAGE;
        if (h < d)
            P->home[h] += pb->item_bytes[j];
    }
    /* weights: items two or more tasks use (a forward and its backward,
     * every micro-batch, every token); an item one task uses is an input,
     * unless no item is shared at all */
    size_t *uses = synor__calloc(k ? k : 1, sizeof *uses);
    P->free = synor__calloc(n ? n : 1, 1);
    if (!rc && (!uses || !P->free))
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
    int shared = 0;
    for (size_t u = 0; !rc && pb->use_off && u < pb->use_off[n]; u++)
        shared |= ++uses[pb->use[u]] >= 2;
    size_t G = 0;
    for (size_t x = 0; x < n && !rc; x++) {
        size_t i = topo[x], key = SIZE_MAX;
        for (size_t u = pb->use_off ? pb->use_off[i] : 0; pb->use_off && u < pb->use_off[i + 1];
             u++)
            if ((!shared || uses[pb->use[u]] >= 2) &&
                (key == SIZE_MAX || pb->item_bytes[pb->use[u]] > pb->item_bytes[key]))
                key = pb->use[u];
        if (key != SIZE_MAX) {
            if (gid[key] == SIZE_MAX)
                gid[key] = G++;
            P->group[i] = gid[key];
        } else {
            /* not part of a layer: placed where it finishes first */
            P->free[i] = 1;
            size_t g = 0;
            for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++)
                g = P->group[pb->pred[e]] > g ? P->group[pb->pred[e]] : g;
            P->group[i] = g;
        }
    }
    if (!G)
        G = 1; /* no weights: one layer */
    P->G = G;
    P->first = synor__malloc(G * sizeof *P->first);
    P->last = synor__malloc(G * sizeof *P->last);
    P->W = synor__calloc(G * d, sizeof *P->W);
    P->wbytes = synor__calloc(G, sizeof *P->wbytes);
    P->witem = synor__malloc(G * sizeof *P->witem);
    P->tmem = synor__calloc(G, sizeof *P->tmem);
    P->xbytes = synor__calloc(G, sizeof *P->xbytes);
    P->xedges = synor__calloc(G, sizeof *P->xedges);
    P->xcomm = synor__calloc(G, sizeof *P->xcomm);
    unsigned char *seen = synor__calloc(k ? k : 1, 1);
    if (!rc && (!P->first || !P->last || !P->W || !P->wbytes || !P->witem || !P->tmem ||
                !P->xbytes || !P->xedges || !P->xcomm || !seen))
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t g = 0; !rc && g < G; g++) {
        P->first[g] = SIZE_MAX;
        P->witem[g] = SIZE_MAX;
    }
    for (size_t j = 0; !rc && j < k; j++)
        if (gid[j] != SIZE_MAX)
            P->witem[gid[j]] = j;
    for (size_t x = 0; x < n && !rc; x++) {
        size_t i = topo[x], g = P->group[i];
        if (!P->free[i]) {
            if (P->first[g] == SIZE_MAX)
                P->first[g] = i;
            P->last[g] = i;
            for (size_t p = 0; p < d; p++)
                P->W[g * d + p] += pb->exec[i * d + p];
            double tm = pb->task_mem ? pb->task_mem[i] : 0;
            P->tmem[g] = tm > P->tmem[g] ? tm : P->tmem[g];
            for (size_t u = pb->use_off ? pb->use_off[i] : 0;
                 pb->use_off && u < pb->use_off[i + 1]; u++)
                if (!seen[pb->use[u]]) {
                    seen[pb->use[u]] = 1;
                    P->wbytes[g] += pb->item_bytes[pb->use[u]];
                }
        }
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
            size_t a = P->group[pb->pred[e]];
            for (size_t b = a; b < g; b++) { /* the edge crosses boundaries a .. g-1 */
                if (pb->pred_comm && pb->pred_comm[e] >= 0) {
                    P->xcomm[b] += pb->pred_comm[e];
                } else {
                    P->xbytes[b] += pb->pred_bytes ? pb->pred_bytes[e] : 0;
                    P->xedges[b] += 1;
                }
            }
        }
    }
    /* micro-batches: the first layer's users of its weight that no other
     * such user precedes (a backward follows its forward: not a new one).
     * Every task gets the micro-batch it belongs to: a head its own, any
     * other the latest of its predecessors' (so that (micro-batch,
     * topological position) is a topological order: the pipeline's). */
    size_t heads = 0;
    size_t *mark = rc ? NULL : synor__calloc(n ? n : 1, sizeof *mark);
    size_t *stack = rc ? NULL : synor__malloc((n ? n : 1) * sizeof *stack);
    P->mb = rc ? NULL : synor__calloc(n ? n : 1, sizeof *P->mb);
    P->pos = rc ? NULL : synor__malloc((n ? n : 1) * sizeof *P->pos);
    if (!rc && (!mark || !stack || !P->mb || !P->pos))
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
    if (!rc) {
        size_t key = P->witem[0], stamp = 0;
        for (size_t x = 0; x < n; x++) {
            size_t i = topo[x];
            P->pos[i] = x;
            for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++)
                P->mb[i] = P->mb[pb->pred[e]] > P->mb[i] ? P->mb[pb->pred[e]] : P->mb[i];
            if (P->group[i] != 0 || !uses_item(pb, i, key))
                continue;
            /* walk its ancestors: another user of the key among them? */
            int head = 1;
            size_t top = 0;
            stamp++;
            stack[top++] = i;
            while (top && head) {
                size_t v = stack[--top];
                for (size_t e = pb->pred_off[v]; e < pb->pred_off[v + 1] && head; e++) {
                    size_t a = pb->pred[e];
                    if (mark[a] == stamp)
                        continue;
                    mark[a] = stamp;
                    if (P->group[a] == 0 && uses_item(pb, a, key))
                        head = 0;
                    stack[top++] = a;
                }
            }
            if (head) { /* the next micro-batch (never before its predecessors') */
                size_t h = heads++;
                P->mb[i] = h > P->mb[i] ? h : P->mb[i];
            }
        }
    }
    size_t M = micro_batches ? micro_batches : heads ? heads : 1;
    synor__free(mark);
    synor__free(stack);
    P->M = (double)M;
    synor__free(seen);
    synor__free(uses);
    synor__free(topo);
    synor__free(gid);
    return rc;
}

/* Whether layers [a, b) fit on device p (runs them, memory), and their time
 * per micro-batch there. */
static int stage_ok(const pipe *P, size_t a, size_t b, size_t p, double *t)
{
    const synor_sched_problem *pb = P->pb;
    double w = 0, bytes = 0, tm = 0;
    for (size_t g = a; g < b; g++) {
        w += P->W[g * P->d + p];
        size_t it = P->witem[g];
        size_t h = it != SIZE_MAX && pb->item_home ? pb->item_home[it] : SYNOR_HOME_STORAGE;
        if (h != p)
            bytes += P->wbytes[g];
        tm = P->tmem[g] > tm ? P->tmem[g] : tm;
    }
    if (!isfinite(w))
        return 0;
    if (pb->mem && P->home[p] + bytes + tm > pb->mem[p])
        return 0;
    *t = w / P->M;
    return 1;
}

static double boundary(const pipe *P, size_t g, size_t p, size_t q)
{
    size_t k = p * P->d + q;
    return (P->xcomm[g] + P->xedges[g] * (P->pb->lat ? P->pb->lat[k] : 0) +
            P->xbytes[g] * (P->pb->inv_bw ? P->pb->inv_bw[k] : 0)) /
           P->M;
}

/* The dynamic program for one order of the devices (perm): the best split
 * by the estimate, into *st (synor__malloc'd) and *ns; *est INFINITY when
 * nothing fits. */
static int dp_split(const pipe *P, const size_t *perm, synor_plan_stage **st_out, size_t *ns_out,
                    double *est)
{
    size_t G = P->G, d = P->d;
    *st_out = NULL;
    *ns_out = 0;
    *est = INFINITY;
    front *F = synor__calloc((G + 1) * d, sizeof *F); /* [b * d + position] */
    int rc = F ? 0 : synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t b = 1; !rc && b <= G; b++)
        for (size_t q = 0; !rc && q < d; q++) {
            front *to = &F[b * d + q];
            double t;
            if (stage_ok(P, 0, b, perm[q], &t))
                rc = front_add(to, (pair){t, t, 0, SIZE_MAX, 0, 1}, P->M, P->want > 0);
            for (size_t a = 1; !rc && a < b; a++) {
                if (!stage_ok(P, a, b, perm[q], &t))
                    continue;
                for (size_t p = 0; !rc && p < q; p++) {
                    const front *fr = &F[a * d + p];
                    double c = fr->n ? boundary(P, a - 1, perm[p], perm[q]) : 0;
                    for (size_t k = 0; !rc && k < fr->n; k++) {
                        double mx = fr->v[k].mx;
                        mx = t > mx ? t : mx;
                        mx = c > mx ? c : mx;
                        if (P->want && fr->v[k].ns >= P->want)
                            continue;
                        rc = front_add(to,
                                       (pair){mx, fr->v[k].sum + t + c, a, p, k, fr->v[k].ns + 1},
                                       P->M, P->want > 0);
                    }
                }
            }
        }
    size_t bp = SIZE_MAX, bk = 0;
    double best = INFINITY;
    for (size_t p = 0; !rc && p < d; p++) {
        const front *f = &F[G * d + p];
        for (size_t k = 0; k < f->n; k++) {
            double T = f->v[k].sum + (P->M - 1) * f->v[k].mx;
            if (P->want && f->v[k].ns != P->want)
                continue;
            if (T < best) {
                best = T;
                bp = p;
                bk = k;
            }
        }
    }
    size_t ns = 0;
    synor_plan_stage *st = NULL;
    if (!rc && bp != SIZE_MAX) { /* walk back */
        size_t b = G, p = bp, k = bk;
        while (b > 0 && p != SIZE_MAX) {
            ns++;
            const pair *x = &F[b * d + p].v[k];
            size_t nb = x->from_b, np = x->from_p, nk = x->from_k;
            b = np == SIZE_MAX ? 0 : nb;
            p = np;
            k = nk;
        }
        st = synor__malloc(ns * sizeof *st);
        if (!st)
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
        b = G;
        p = bp;
        k = bk;
        for (size_t s = ns; !rc && s-- > 0;) {
            const pair *x = &F[b * d + p].v[k];
            size_t a = x->from_p == SIZE_MAX ? 0 : x->from_b;
            st[s] = (synor_plan_stage){perm[p], a, b, P->first[a], P->last[b - 1], 0, 0};
            for (size_t g = a; g < b; g++)
                st[s].weight_bytes += P->wbytes[g];
            double t = 0;
            stage_ok(P, a, b, perm[p], &t);
            st[s].time_per_micro_batch = t;
            size_t np = x->from_p, nk = x->from_k;
            b = a;
            p = np;
            k = nk;
        }
    }
    for (size_t x = 0; F && x < (G + 1) * d; x++)
        synor__free(F[x].v);
    synor__free(F);
    if (rc) {
        synor__free(st);
        return rc;
    }
    *st_out = st;
    *ns_out = ns;
    *est = best;
    return 0;
}

/* Device orders tried: the fabric's, its reverse, fastest first, slowest
 * first (speed: the whole model's time on the device). */
#define N_ORDERS 4

typedef struct mkey {
    size_t mb, pos, task;
} mkey;

static int by_micro_batch(const void *a, const void *b)
{
    const mkey *x = a, *y = b;
    if (x->mb != y->mb)
        return x->mb < y->mb ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

int synor__pipeline_split(const synor_sched_problem *pb, size_t micro_batches, size_t stages_wanted,
                          size_t *dev_of, size_t *mb_of, size_t *order,
                          synor_plan_stage **stages, size_t *n_stages, double *estimate,
                          size_t *m_used)
{
    pipe P;
    int rc = pipe_init(&P, pb, micro_batches);
    P.want = stages_wanted;
    if (!rc && stages_wanted && (stages_wanted > P.d || stages_wanted > P.G))
        rc = synor__error(SYNOR_EINVAL,
                          "%zu pipeline stages: the workload has %zu layers and the fabric %zu "
                          "devices (a stage takes one device and at least one layer)",
                          stages_wanted, P.G, P.d);
    size_t d = P.d;
    size_t *perm = rc ? NULL : synor__malloc(N_ORDERS * (d ? d : 1) * sizeof *perm);
    double *speed = rc ? NULL : synor__calloc(d ? d : 1, sizeof *speed);
    if (!rc && (!perm || !speed))
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t p = 0; !rc && p < d; p++) {
        for (size_t g = 0; g < P.G; g++)
            speed[p] += P.W[g * d + p];
        perm[p] = p;
        perm[d + p] = d - 1 - p;
        perm[2 * d + p] = perm[3 * d + p] = p;
    }
    for (size_t x = 1; !rc && x < d; x++) /* insertion sorts by time, then index */
        for (size_t y = x; y > 0; y--) {
            size_t *f = &perm[2 * d], *l = &perm[3 * d];
            double a = speed[f[y - 1]], b = speed[f[y]];
            if (a > b) {
                size_t t = f[y - 1];
                f[y - 1] = f[y];
                f[y] = t;
            }
            a = speed[l[y - 1]];
            b = speed[l[y]];
            if (a < b) {
                size_t t = l[y - 1];
                l[y - 1] = l[y];
                l[y] = t;
            }
        }
    synor_plan_stage *best_st = NULL;
    size_t best_ns = 0;
    double best = INFINITY;
    for (int k = 0; !rc && k < N_ORDERS; k++) {
        synor_plan_stage *st;
        size_t ns;
        double est;
        if ((rc = dp_split(&P, &perm[(size_t)k * d], &st, &ns, &est)))
            break;
        if (est < best) {
            synor__free(best_st);
            best_st = st;
            best_ns = ns;
            best = est;
        } else {
            synor__free(st);
        }
    }
    if (!rc && !best_st)
        rc = stages_wanted ? synor__error(SYNOR_ENOMEM,
                                          "no split of the %zu layers into %zu stages fits "
                                          "the devices (each stage's device must run all its "
                                          "tasks and hold its weights)",
                                          P.G, stages_wanted)
                           : synor__error(SYNOR_ENOMEM, "no split of the %zu layers over the "
                                                        "devices fits in their memory",
                                          P.G);
    if (!rc) {
        for (size_t i = 0; i < P.n; i++) {
            mb_of[i] = P.mb[i];
            dev_of[i] = SIZE_MAX; /* not in a layer: the caller places it */
            for (size_t s = 0; s < best_ns && !P.free[i]; s++)
                if (P.group[i] >= best_st[s].first_layer && P.group[i] < best_st[s].end_layer)
                    dev_of[i] = best_st[s].dev;
        }
        mkey *k = synor__malloc((P.n ? P.n : 1) * sizeof *k);
        if (!k) {
            synor__free(best_st);
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < P.n; i++)
            k[i] = (mkey){P.mb[i], P.pos[i], i};
        qsort(k, P.n, sizeof *k, by_micro_batch);
        for (size_t i = 0; i < P.n; i++)
            order[i] = k[i].task;
        synor__free(k);
        *stages = best_st;
        *n_stages = best_ns;
        *estimate = best;
        *m_used = (size_t)P.M;
    } else {
        synor__free(best_st);
    }
out:
    synor__free(perm);
    synor__free(speed);
    pipe_free(&P);
    return rc;
}
