/* exact.c - the optimal makespan of a small DAG by branch and bound, the
 * reference the heuristics are measured against (tests, bench).
 *
 * Why the search is complete: any schedule can be shifted left, task by
 * task in start order, until each task starts at the later of its device
 * becoming free and its inputs arriving, without finishing later. Such a
 * schedule is rebuilt exactly by appending its tasks in start order, each
 * at max(device free, inputs arrived). So it suffices to enumerate append
 * sequences whose start times never decrease (the pruning rule that makes
 * the search tractable), over every ready task and every device.
 *
 * Bounds: the best finish so far; the longest remaining path with each
 * task at its fastest device and free communication; total remaining
 * minimum work spread over all devices. The incumbent on entry (a
 * heuristic's plan) only makes pruning start earlier.
 *
 * Weights and memory (weights.c) are part of the search: a device is tried
 * for a task only if the task's weights and working memory fit there, and
 * the weights it lacks are copied when the task is appended (undone on the
 * way back). In load mode the copies delay the task; the schedule is then
 * optimal among those whose copies are made in the order their tasks start.
 * In preload mode replicas cost memory only, and the makespan is optimal
 * under the memory limits. */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "plan/plan_internal.h"

#define EPS 1e-12

typedef struct bb {
    const synor_sched_problem *pb;
    size_t n, d;
    size_t *dev, *left;   /* current assignment; unscheduled predecessors */
    double *st, *ft, *avail, *blevel, *minw;
    unsigned char *done;
    size_t *bdev;
    double *bst, *bft;
    double best;
    double busy, minw_left;
    synor__wstate *ws;
    size_t *gdev;          /* per colocation group: its device, or SIZE_MAX */
    synor_plan_load *blog; /* the best schedule's copies */
    size_t n_blog;
    uint64_t nodes, limit;
    int aborted;
} bb;

static double lower_bound(const bb *b, double cur)
{
    double lb = cur;
    double load = (b->busy + b->minw_left) / (double)b->d;
    if (load > lb)
        lb = load;
    const synor_sched_problem *pb = b->pb;
    for (size_t i = 0; i < b->n; i++) {
        if (b->done[i])
            continue;
        double r = 0;
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
            size_t j = pb->pred[e];
            if (b->done[j] && b->ft[j] > r)
                r = b->ft[j];
        }
        if (r + b->blevel[i] > lb)
            lb = r + b->blevel[i];
    }
    return lb;
}

static void search(bb *b, size_t depth, double cur, double last_start)
{
    if (b->aborted)
        return;
    if (++b->nodes > b->limit) {
        b->aborted = 1;
        return;
    }
    if (depth == b->n) {
        if (cur < b->best - EPS) {
            b->best = cur;
            if (b->ws && b->ws->n_log)
                memcpy(b->blog, b->ws->log, b->ws->n_log * sizeof *b->blog);
            if (b->ws)
                b->n_blog = b->ws->n_log;
            memcpy(b->bdev, b->dev, b->n * sizeof *b->dev);
            memcpy(b->bst, b->st, b->n * sizeof *b->st);
            memcpy(b->bft, b->ft, b->n * sizeof *b->ft);
        }
        return;
    }
    if (lower_bound(b, cur) >= b->best - EPS)
        return;
    const synor_sched_problem *pb = b->pb;
    for (size_t i = 0; i < b->n; i++) {
        if (b->done[i] || b->left[i])
            continue;
        for (size_t p = 0; p < b->d; p++) {
            double w = pb->exec[i * b->d + p], ready = 0;
            size_t g = b->gdev ? pb->group[i] : SIZE_MAX;
            if (g != SIZE_MAX && b->gdev[g] != SIZE_MAX && b->gdev[g] != p)
                continue; /* its group is elsewhere */
            if (!isfinite(w) || (b->ws && !synor__ws_probe(b->ws, i, p, &ready, NULL)))
                continue;
            for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
                size_t j = pb->pred[e];
                double r = b->ft[j] + synor__edge_comm(pb, e, b->dev[j], p);
                if (r > ready)
                    ready = r;
            }
            double s = ready > b->avail[p] ? ready : b->avail[p];
            if (s < last_start - EPS)
                continue; /* not in start order: another sequence covers it */
            double f = s + w;
            if (f + b->blevel[i] - b->minw[i] >= b->best - EPS)
                continue;
            double old_avail = b->avail[p];
            size_t mark = b->ws ? b->ws->n_commits : 0;
            if (b->ws && synor__ws_commit(b->ws, i, p)) {
                b->aborted = 2; /* out of memory */
                return;
            }
            int first_of_group = g != SIZE_MAX && b->gdev[g] == SIZE_MAX;
            if (first_of_group)
                b->gdev[g] = p;
            b->done[i] = 1;
            b->dev[i] = p;
            b->st[i] = s;
            b->ft[i] = f;
            b->avail[p] = f;
            b->busy += w;
            b->minw_left -= b->minw[i];
            for (size_t e = 0; e < b->n; e++) /* successors lose a predecessor */
                for (size_t k = pb->pred_off[e]; k < pb->pred_off[e + 1]; k++)
                    if (pb->pred[k] == i)
                        b->left[e]--;
            search(b, depth + 1, f > cur ? f : cur, s);
            for (size_t e = 0; e < b->n; e++)
                for (size_t k = pb->pred_off[e]; k < pb->pred_off[e + 1]; k++)
                    if (pb->pred[k] == i)
                        b->left[e]++;
            b->minw_left += b->minw[i];
            b->busy -= w;
            b->avail[p] = old_avail;
            b->done[i] = 0;
            if (first_of_group)
                b->gdev[g] = SIZE_MAX;
            if (b->ws)
                synor__ws_undo(b->ws, mark);
            if (b->aborted)
                return;
        }
    }
}

int synor__exact_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                          synor__wstate *ws, size_t *dev, double *st, double *ft,
                          int *optimal, uint64_t *nodes)
{
    size_t n = pb->n_tasks, d = pb->n_devices;
    if (n > SYNOR_EXACT_MAX_TASKS)
        return synor__error(SYNOR_ERANGE, "the exact solver takes at most %d tasks, not %zu",
                            SYNOR_EXACT_MAX_TASKS, n);
    bb b;
    memset(&b, 0, sizeof b);
    b.pb = pb;
    b.n = n;
    b.d = d;
    b.limit = o->exact_node_limit ? o->exact_node_limit : 200000000u;
    size_t topo[SYNOR_EXACT_MAX_TASKS + 1];
    int rc = synor__problem_topo(pb, topo);
    if (rc)
        return rc;
    b.dev = synor__calloc(n + 1, sizeof *b.dev);
    b.left = synor__calloc(n + 1, sizeof *b.left);
    b.bdev = synor__calloc(n + 1, sizeof *b.bdev);
    b.st = synor__calloc(n + 1, sizeof *b.st);
    b.ft = synor__calloc(n + 1, sizeof *b.ft);
    b.bst = synor__calloc(n + 1, sizeof *b.bst);
    b.bft = synor__calloc(n + 1, sizeof *b.bft);
    b.blevel = synor__calloc(n + 1, sizeof *b.blevel);
    b.minw = synor__calloc(n + 1, sizeof *b.minw);
    b.avail = synor__calloc(d + 1, sizeof *b.avail);
    b.done = synor__calloc(n + 1, 1);
    if (pb->group && pb->n_groups) {
        b.gdev = synor__malloc(pb->n_groups * sizeof *b.gdev);
        for (size_t g = 0; b.gdev && g < pb->n_groups; g++)
            b.gdev[g] = SIZE_MAX;
        if (!b.gdev) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            goto out;
        }
    }
    /* each task copies at most all the items onto its device */
    b.ws = ws;
    b.blog = synor__malloc((ws && pb->use_off ? pb->use_off[n] + ws->n_log + 1 : 1) *
                           sizeof *b.blog);
    if (!b.dev || !b.left || !b.bdev || !b.st || !b.ft || !b.bst || !b.bft || !b.blevel ||
        !b.minw || !b.avail || !b.done || !b.blog) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        b.left[i] = pb->pred_off[i + 1] - pb->pred_off[i];
        b.minw[i] = INFINITY;
        for (size_t p = 0; p < d; p++)
            if (pb->exec[i * d + p] < b.minw[i])
                b.minw[i] = pb->exec[i * d + p];
        if (!isfinite(b.minw[i])) {
            rc = synor__error(SYNOR_ENODEV, "task %zu can run on no device", i);
            goto out;
        }
        b.minw_left += b.minw[i];
    }
    for (size_t k = n; k-- > 0;) { /* bottom level with the fastest devices, free edges */
        size_t i = topo[k];
        double m = 0;
        for (size_t j = 0; j < n; j++)
            for (size_t e = pb->pred_off[j]; e < pb->pred_off[j + 1]; e++)
                if (pb->pred[e] == i && b.blevel[j] > m)
                    m = b.blevel[j];
        b.blevel[i] = b.minw[i] + m;
    }
    b.best = INFINITY;
    if (n && ft[0] >= 0) { /* incumbent */
        b.best = 0;
        for (size_t i = 0; i < n; i++)
            if (ft[i] > b.best)
                b.best = ft[i];
        memcpy(b.bdev, dev, n * sizeof *dev);
        memcpy(b.bst, st, n * sizeof *st);
        memcpy(b.bft, ft, n * sizeof *ft);
        b.best += 1e-9 * b.best; /* let an equal schedule replace it */
    }
    if (ws) { /* the incumbent's copies, then a clean slate for the search */
        if (ws->n_log)
            memcpy(b.blog, ws->log, ws->n_log * sizeof *b.blog);
        b.n_blog = ws->n_log;
        synor__ws_undo(ws, 0);
    }
    search(&b, 0, 0, 0);
    if (b.aborted == 2) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    if (ws) { /* the best schedule's copies (only the log is meaningful now) */
        synor__ws_undo(ws, 0);
        if (b.n_blog > ws->cap_log) {
            synor_plan_load *l = synor__realloc(ws->log, b.n_blog * sizeof *l);
            if (l)
                ws->log = l;
            double *c = l ? synor__realloc(ws->log_chan, b.n_blog * sizeof *c) : NULL;
            if (!c) {
                rc = synor__error(SYNOR_ENOMEM, "out of memory");
                goto out;
            }
            ws->log_chan = c;
            ws->cap_log = b.n_blog;
        }
        if (b.n_blog)
            memcpy(ws->log, b.blog, b.n_blog * sizeof *b.blog);
        ws->n_log = b.n_blog;
    }
    memcpy(dev, b.bdev, n * sizeof *dev);
    memcpy(st, b.bst, n * sizeof *st);
    memcpy(ft, b.bft, n * sizeof *ft);
    *optimal = !b.aborted;
    *nodes = b.nodes;
out:
    synor__free(b.dev);
    synor__free(b.left);
    synor__free(b.bdev);
    synor__free(b.st);
    synor__free(b.ft);
    synor__free(b.bst);
    synor__free(b.bft);
    synor__free(b.blevel);
    synor__free(b.minw);
    synor__free(b.avail);
    synor__free(b.done);
    synor__free(b.blog);
    synor__free(b.gdev);
    return rc;
}
