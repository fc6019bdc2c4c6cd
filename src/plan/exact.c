/* exact.c - the optimal makespan by branch and bound, with a time limit:
 * the best schedule found and a proven lower bound, so the gap is known
 * when optimality is not proven. The reference the heuristics are measured
 * against (tests, bench).
 *
 * Why the search is complete: any schedule can be shifted left, task by
 * task in start order, until each task starts at the later of its device
 * becoming free and its inputs arriving, without finishing later. Such a
 * schedule is rebuilt exactly by appending its tasks in start order, each
 * at max(device free, inputs arrived). So it suffices to enumerate append
 * sequences whose start times never decrease, over every ready task and
 * every device. Among tasks with the same start, only one order is needed:
 * zero-length tasks first, then the others in topological order (two
 * tasks of positive length starting together are on distinct devices and
 * neither waits for the other), so a task of positive length is not
 * appended at the start of the previous one, also of positive length,
 * when it comes before it in topological order.
 *
 * Symmetry: devices that are interchangeable (same costs for every task,
 * same links to every other device) are tried once while unused; without
 * any communication a device's identity matters only through the time it
 * is free, so of interchangeable devices free at the same time one is
 * tried. Both rules are off with weights, memory or colocation groups.
 *
 * Lower bound of a node (all tasks left start no earlier than the last
 * appended start t): the makespan so far; for each task left, the least
 * over devices of its earliest start there (t, its finished inputs'
 * arrival, for a ready task the device's free time) plus its bottom level
 * there, bottom levels being computed per device with, for each
 * successor, the cheapest transfer to its best device; the remaining
 * minimum work plus each device's time busy after t, spread over the
 * devices. With integral costs (all execution and transfer times integers)
 * bounds are rounded up.
 *
 * Search: the incumbent is the caller's schedule (improve's, or the best
 * of HEFT and PEFT). First, for up to a quarter of the time limit,
 * iterative deepening on the bound: a depth-first search for a schedule no
 * longer than a target T, starting at the root bound; an exhausted search
 * proves the optimum above T and raises T to the least bound it cut; a
 * schedule within T is optimal. With real-valued times the target creeps up
 * by tiny steps, so there only the root bound is tried. Then depth-first branch and bound against
 * the incumbent, children in order of their bound, for the rest of the
 * time: exhausted, the incumbent is optimal; stopped, the proven bound is
 * the larger of the deepening's and the least bound of the subtrees left
 * unexplored (the children of each open level from the one being searched
 * on, which are sorted by bound).
 *
 * With communication (and no weights, memory or colocation groups) the
 * deepening gets a two-hundredth of the time (the allocation-first
 * search proves most graphs faster, and a deepening cut by its share is
 * time lost) and the allocation-first search
 * of exact_comm.c (devices first, then the order on them, with bounds
 * that charge the transfers an allocation implies) the rest, instead of
 * the branch and bound above: its bound is far stronger when transfers
 * are costly.
 *
 * For P|prec|Cmax with integral times (identical devices, no
 * communication: the STG sets), exact_ilp.c runs between the deepening and
 * the branch and bound, until three quarters of the time: a heuristic, then
 * (with GLPK) a time-indexed integer program that asks for each makespan
 * from the proven bound upwards whether a schedule exists.
 *
 * Weights and memory (weights.c) are part of the search: a device is tried
 * for a task only if the task's weights and working memory fit there, and
 * the weights it lacks are copied when the task is appended (undone on the
 * way back). In load mode the copies delay the task; the schedule is then
 * optimal among those whose copies are made in the order their tasks start.
 * In preload mode replicas cost memory only, and the makespan is optimal
 * under the memory limits.
 *
 * Limits: SYNOR_EXACT_MAX_TASKS tasks (the recursion is one level per
 * task); memory grows with the candidates open along the path (at most
 * tasks x devices per level). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "plan/plan_internal.h"

#define EPS 1e-12

typedef struct cand {
    double key, s, f;
    size_t task, dev;
} cand;

typedef struct bb {
    const synor_sched_problem *pb;
    size_t n, d;
    size_t *dev, *left;   /* current assignment; unscheduled predecessors */
    double *st, *ft, *avail, *minw;
    double *bl;           /* [task * d + dev]: from its start there to the end, at least */
    unsigned char *done;
    size_t *ntask;        /* tasks on each device */
    size_t *succ_off, *succ, *topo_pos;
    size_t *cls;          /* per device: the first device interchangeable with it */
    int symmetry, nocomm, integral, tie_rule;
    size_t *bdev;
    double *bst, *bft;
    double best, target, next_target;
    double open;           /* least bound of the subtrees an abort left */
    double busy, minw_left;
    synor__wstate *ws;
    size_t *gdev;          /* per colocation group: its device, or SIZE_MAX */
    synor_plan_load *blog; /* the best schedule's copies */
    size_t n_blog;
    cand *cs;              /* candidates of every open level, a stack */
    size_t n_cs, cap_cs;
    uint64_t nodes, limit;
    struct timespec t_end;
    int aborted;           /* 1 limit, 2 out of memory */
    int found;             /* a schedule within the target */
} bb;

static double round_up(const bb *b, double v)
{
    return b->integral ? ceil(v - 1e-9) : v;
}

static int past(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* The earliest start and finish of ready task i on device p. */
static int place(const bb *b, size_t i, size_t p, double *s, double *f)
{
    const synor_sched_problem *pb = b->pb;
    double w = pb->exec[i * b->d + p], ready = 0;
    if (!isfinite(w) || (b->ws && !synor__ws_probe(b->ws, i, p, &ready, NULL)))
        return 0;
    for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
        size_t j = pb->pred[e];
        double r = b->ft[j] + synor__edge_comm(pb, e, b->dev[j], p);
        if (r > ready)
            ready = r;
    }
    *s = ready > b->avail[p] ? ready : b->avail[p];
    *f = *s + w;
    return 1;
}

static double lower_bound(const bb *b, double cur, double last_start)
{
    double lb = cur;
    double load = b->minw_left;
    for (size_t p = 0; p < b->d; p++)
        load += b->avail[p] > last_start ? b->avail[p] : last_start;
    load /= (double)b->d;
    if (load > lb)
        lb = load;
    const synor_sched_problem *pb = b->pb;
    for (size_t i = 0; i < b->n; i++) {
        if (b->done[i])
            continue;
        double m = INFINITY;
        int ready = !b->left[i] && !b->ws;
        for (size_t p = 0; p < b->d; p++) {
            const double bl = b->bl[i * b->d + p];
            if (!isfinite(bl))
                continue;
            double s = last_start, f;
            if (ready) { /* its start on p as things stand */
                if (place(b, i, p, &s, &f) && s < last_start)
                    s = last_start;
            } else { /* its finished inputs' arrival on p */
                for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
                    size_t j = pb->pred[e];
                    if (!b->done[j])
                        continue;
                    double r = b->ft[j] + synor__edge_comm(pb, e, b->dev[j], p);
                    if (r > s)
                        s = r;
                }
            }
            if (s + bl < m)
                m = s + bl;
        }
        if (m > lb)
            lb = m;
    }
    return round_up(b, lb);
}

static int cand_cmp(const void *x, const void *y)
{
    const cand *a = x, *c = y;
    if (a->key != c->key)
        return a->key < c->key ? -1 : 1;
    if (a->s != c->s)
        return a->s < c->s ? -1 : 1;
    if (a->task != c->task)
        return a->task < c->task ? -1 : 1;
    return a->dev < c->dev ? -1 : a->dev > c->dev;
}

/* Whether device p repeats an interchangeable device already tried. */
static int symmetric(const bb *b, size_t p)
{
    if (!b->symmetry || b->cls[p] == p)
        return 0;
    for (size_t q = b->cls[p]; q < p; q++) {
        if (b->cls[q] != b->cls[p])
            continue;
        if (b->nocomm ? fabs(b->avail[q] - b->avail[p]) <= EPS
                      : (!b->ntask[q] && !b->ntask[p]))
            return 1;
    }
    return 0;
}

static void record(bb *b, double cur)
{
    b->best = cur;
    if (b->ws && b->ws->n_log)
        memcpy(b->blog, b->ws->log, b->ws->n_log * sizeof *b->blog);
    b->n_blog = b->ws ? b->ws->n_log : 0;
    memcpy(b->bdev, b->dev, b->n * sizeof *b->dev);
    memcpy(b->bst, b->st, b->n * sizeof *b->st);
    memcpy(b->bft, b->ft, b->n * sizeof *b->ft);
}

static void search(bb *b, size_t depth, double cur, double last_start, size_t prev)
{
    if (b->aborted || b->found)
        return;
    if (b->nodes >= b->limit || ((++b->nodes & 1023) == 0 && past(&b->t_end))) {
        b->aborted = 1;
        return;
    }
    if (depth == b->n) {
        if (cur < b->best - EPS)
            record(b, cur);
        if (isfinite(b->target) && cur <= b->target + 1e-9 * (b->target > 1 ? b->target : 1))
            b->found = 1;
        return;
    }
    double lb = lower_bound(b, cur, last_start);
    if (lb >= b->best - EPS - 1e-9 * b->best)
        return;
    if (lb > b->target + 1e-9 * (b->target > 1 ? b->target : 1)) {
        if (lb < b->next_target)
            b->next_target = lb;
        return;
    }
    const synor_sched_problem *pb = b->pb;
    size_t base = b->n_cs;
    for (size_t i = 0; i < b->n; i++) {
        if (b->done[i] || b->left[i])
            continue;
        size_t g = b->gdev ? pb->group[i] : SIZE_MAX;
        for (size_t p = 0; p < b->d; p++) {
            double s, f;
            if (g != SIZE_MAX && b->gdev[g] != SIZE_MAX && b->gdev[g] != p)
                continue; /* its group is elsewhere */
            if (symmetric(b, p) || !place(b, i, p, &s, &f))
                continue;
            if (s < last_start - EPS)
                continue; /* not in start order: another sequence covers it */
            if (b->tie_rule && prev != SIZE_MAX && fabs(s - last_start) <= EPS && f > s &&
                b->ft[prev] > b->st[prev] && b->topo_pos[i] < b->topo_pos[prev])
                continue; /* the same start: topological order covers it */
            double key = round_up(b, s + b->bl[i * b->d + p]);
            if (key >= b->best - EPS - 1e-9 * b->best)
                continue;
            if (b->n_cs == b->cap_cs) {
                size_t cap = b->cap_cs ? 2 * b->cap_cs : 1024;
                cand *c = synor__realloc(b->cs, cap * sizeof *c);
                if (!c) {
                    b->aborted = 2;
                    return;
                }
                b->cs = c;
                b->cap_cs = cap;
            }
            b->cs[b->n_cs++] = (cand){key, s, f, i, p};
        }
    }
    qsort(b->cs + base, b->n_cs - base, sizeof *b->cs, cand_cmp);
    for (size_t k = base; k < b->n_cs; k++) {
        cand c = b->cs[k];
        size_t i = c.task, p = c.dev;
        if (c.key >= b->best - EPS - 1e-9 * b->best)
            break; /* sorted: the rest cannot beat the incumbent either */
        double w = c.f - c.s;
        size_t g = b->gdev ? pb->group[i] : SIZE_MAX;
        double old_avail = b->avail[p];
        size_t mark = b->ws ? b->ws->n_commits : 0;
        if (b->ws && synor__ws_commit(b->ws, i, p)) {
            b->aborted = 2; /* out of memory */
            break;
        }
        int first_of_group = g != SIZE_MAX && b->gdev[g] == SIZE_MAX;
        if (first_of_group)
            b->gdev[g] = p;
        b->done[i] = 1;
        b->dev[i] = p;
        b->st[i] = c.s;
        b->ft[i] = c.f;
        b->avail[p] = c.f;
        b->ntask[p]++;
        b->busy += w;
        b->minw_left -= b->minw[i];
        for (size_t e = b->succ_off[i]; e < b->succ_off[i + 1]; e++)
            b->left[b->succ[e]]--;
        search(b, depth + 1, c.f > cur ? c.f : cur, c.s, i);
        for (size_t e = b->succ_off[i]; e < b->succ_off[i + 1]; e++)
            b->left[b->succ[e]]++;
        b->minw_left += b->minw[i];
        b->busy -= w;
        b->ntask[p]--;
        b->avail[p] = old_avail;
        b->done[i] = 0;
        if (first_of_group)
            b->gdev[g] = SIZE_MAX;
        if (b->ws)
            synor__ws_undo(b->ws, mark);
        if (b->aborted) { /* this child's subtree and the later ones are left */
            if (c.key < b->open)
                b->open = c.key;
            break;
        }
        if (b->found)
            break;
    }
    b->n_cs = base;
}

/* Whether devices p and q can be swapped without changing the problem. */
static int interchangeable(const synor_sched_problem *pb, size_t p, size_t q)
{
    size_t n = pb->n_tasks, d = pb->n_devices;
    for (size_t i = 0; i < n; i++) {
        double a = pb->exec[i * d + p], c = pb->exec[i * d + q];
        if (a != c && !(isinf(a) && isinf(c)))
            return 0;
    }
    const double *m[2] = {pb->lat, pb->inv_bw};
    for (int k = 0; k < 2; k++) {
        if (!m[k])
            continue;
        if (m[k][p * d + q] != m[k][q * d + p])
            return 0;
        for (size_t r = 0; r < d; r++)
            if (r != p && r != q &&
                (m[k][p * d + r] != m[k][q * d + r] || m[k][r * d + p] != m[k][r * d + q]))
                return 0;
    }
    return 1;
}

/* Whether no edge costs anything between any two devices. */
static int no_comm(const synor_sched_problem *pb)
{
    size_t d = pb->n_devices;
    for (size_t e = 0; e < pb->pred_off[pb->n_tasks]; e++)
        for (size_t p = 0; p < d; p++)
            for (size_t q = 0; q < d; q++)
                if (synor__edge_comm(pb, e, p, q) != 0)
                    return 0;
    return 1;
}

/* Whether every execution and transfer time is an integer: then so is
 * every start and finish of a left-shifted schedule. */
static int all_integral(const synor_sched_problem *pb)
{
    size_t n = pb->n_tasks, d = pb->n_devices;
    for (size_t k = 0; k < n * d; k++)
        if (isfinite(pb->exec[k]) && (pb->exec[k] != floor(pb->exec[k]) || pb->exec[k] > 1e15))
            return 0;
    for (size_t e = 0; e < pb->pred_off[n]; e++)
        for (size_t p = 0; p < d; p++)
            for (size_t q = 0; q < d; q++) {
                double c = synor__edge_comm(pb, e, p, q);
                if (c != floor(c) || c > 1e15)
                    return 0;
            }
    return 1;
}

static int setup(bb *b, const synor_sched_problem *pb, size_t *topo)
{
    size_t n = b->n, d = b->d, m = pb->pred_off[n];
    b->succ_off = synor__calloc(n + 2, sizeof *b->succ_off);
    b->succ = synor__malloc((m ? m : 1) * sizeof *b->succ);
    b->topo_pos = synor__malloc((n + 1) * sizeof *b->topo_pos);
    b->cls = synor__malloc((d + 1) * sizeof *b->cls);
    b->ntask = synor__calloc(d + 1, sizeof *b->ntask);
    if (!b->succ_off || !b->succ || !b->topo_pos || !b->cls || !b->ntask)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t e = 0; e < m; e++)
        b->succ_off[pb->pred[e] + 2]++;
    for (size_t i = 0; i < n; i++)
        b->succ_off[i + 2] += b->succ_off[i + 1];
    for (size_t i = 0; i < n; i++)
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++)
            b->succ[b->succ_off[pb->pred[e] + 1]++] = i;
    for (size_t k = 0; k < n; k++)
        b->topo_pos[topo[k]] = k;
    int plain = !b->ws && !b->gdev;
    b->symmetry = plain;
    b->tie_rule = plain;
    b->nocomm = no_comm(pb);
    b->integral = all_integral(pb);
    for (size_t p = 0; p < d; p++) {
        b->cls[p] = p;
        for (size_t q = 0; plain && q < p; q++)
            if (b->cls[q] == q && interchangeable(pb, p, q)) {
                b->cls[p] = q;
                break;
            }
    }
    return 0;
}

/* Whether the problem uses anything the weights state tracks. */
static int needs_ws(const synor_sched_problem *pb)
{
    return pb->n_items || pb->mem || pb->task_mem;
}

/* The allocation-first search for the rest of the time (exact_comm.c):
 * its schedule when shorter, and what it proved. */
static int comm_phase(bb *b, const size_t *topo, double *proven, int *optimal)
{
    synor__exact_comm_in in = {b->pb, topo, b->symmetry ? b->cls : NULL, b->bl, b->minw,
                               b->integral, b->t_end,
                               b->limit > b->nodes ? b->limit - b->nodes : 0, b->best, 0, 0};
    synor__exact_comm_out out;
    int rc = synor__exact_comm(&in, b->bdev, b->bst, b->bft, &out);
    if (rc)
        return rc;
    b->nodes += out.nodes;
    b->best = out.best;
    if (out.exhausted)
        *optimal = 1;
    else if (out.bound > *proven)
        *proven = out.bound;
    return 0;
}

int synor__exact_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                          synor__wstate *ws, size_t *dev, double *st, double *ft,
                          synor__exact_result *res)
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
    b.limit = o->exact_node_limit ? o->exact_node_limit : UINT64_MAX;
    double tl = o->exact_time_limit > 0 ? o->exact_time_limit : SYNOR_EXACT_TIME_LIMIT_DEFAULT;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t *topo = synor__malloc((n + 1) * sizeof *topo);
    if (!topo)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    int rc = synor__problem_topo(pb, topo);
    if (rc) {
        synor__free(topo);
        return rc;
    }
    b.dev = synor__calloc(n + 1, sizeof *b.dev);
    b.left = synor__calloc(n + 1, sizeof *b.left);
    b.bdev = synor__calloc(n + 1, sizeof *b.bdev);
    b.st = synor__calloc(n + 1, sizeof *b.st);
    b.ft = synor__calloc(n + 1, sizeof *b.ft);
    b.bst = synor__calloc(n + 1, sizeof *b.bst);
    b.bft = synor__calloc(n + 1, sizeof *b.bft);
    b.bl = synor__calloc(n * d + 1, sizeof *b.bl);
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
    b.ws = ws && needs_ws(pb) ? ws : NULL;
    b.blog = synor__malloc((ws && pb->use_off ? pb->use_off[n] + ws->n_log + 1 : 1) *
                           sizeof *b.blog);
    if (!b.dev || !b.left || !b.bdev || !b.st || !b.ft || !b.bst || !b.bft || !b.bl ||
        !b.minw || !b.avail || !b.done || !b.blog) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = setup(&b, pb, topo)))
        goto out;
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
    /* bottom levels per device: a task's time there, then for each
     * successor the least over its devices of the transfer and its own
     * bottom level there */
    for (size_t k = n; k-- > 0;) {
        size_t i = topo[k];
        for (size_t p = 0; p < d; p++) {
            double w = pb->exec[i * d + p], m = 0;
            for (size_t x = b.succ_off[i]; isfinite(w) && x < b.succ_off[i + 1]; x++) {
                size_t j = b.succ[x], e = pb->pred_off[j];
                while (pb->pred[e] != i)
                    e++;
                double best = INFINITY;
                for (size_t q = 0; q < d; q++) {
                    double v = synor__edge_comm(pb, e, p, q) + b.bl[j * d + q];
                    if (v < best)
                        best = v;
                }
                if (best > m)
                    m = best;
            }
            b.bl[i * d + p] = isfinite(w) ? w + m : INFINITY;
        }
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
    }
    if (ws) { /* the incumbent's copies, then a clean slate for the search */
        if (ws->n_log)
            memcpy(b.blog, ws->log, ws->n_log * sizeof *b.blog);
        b.n_blog = ws->n_log;
        synor__ws_undo(ws, 0);
    }
    double root = n ? lower_bound(&b, 0, 0) : 0, proven = root;
    int optimal = b.best <= root + 1e-9 * (root > 1 ? root : 1);
    /* iterative deepening on the bound for up to a quarter of the time,
     * then branch and bound against the incumbent for the rest; with
     * communication (and no weights, memory or groups) a two-hundredth, then
     * the allocation-first search; for P|prec|Cmax with integral times
     * (exact_ilp.c), between them the heuristic and the integer program,
     * up to three quarters of the time */
    int comm = !b.nocomm && !b.ws && !b.gdev;
    int ilp = !optimal && synor__exact_ilp_applies(pb);
    for (int phase = 0; phase < 2 && !optimal && b.aborted != 2; phase++) {
        if (phase && ilp) {
            double until = 0.75 * tl;
            struct timespec t_ilp = t0;
            t_ilp.tv_sec += (time_t)until;
            t_ilp.tv_nsec += (long)((until - floor(until)) * 1e9);
            if (t_ilp.tv_nsec >= 1000000000L) {
                t_ilp.tv_sec++;
                t_ilp.tv_nsec -= 1000000000L;
            }
            if ((rc = synor__exact_ilp(pb, &t_ilp, b.bdev, b.bst, b.bft, &b.best, &proven)))
                goto out;
            if ((optimal = proven >= b.best - 1e-9 * b.best))
                break;
        }
        double share = phase ? tl : tl / (comm ? 200 : 4);
        b.t_end = t0;
        b.t_end.tv_sec += (time_t)share;
        b.t_end.tv_nsec += (long)((share - floor(share)) * 1e9);
        if (b.t_end.tv_nsec >= 1000000000L) {
            b.t_end.tv_sec++;
            b.t_end.tv_nsec -= 1000000000L;
        }
        b.aborted = 0;
        if (phase && comm) { /* devices first, then order (exact_comm.c) */
            if ((rc = comm_phase(&b, topo, &proven, &optimal)))
                goto out;
            break;
        }
        b.target = phase ? INFINITY : proven;
        while (!optimal && !b.aborted && b.nodes < b.limit) {
            b.next_target = INFINITY;
            b.open = INFINITY;
            b.found = 0;
            search(&b, 0, 0, 0, SIZE_MAX);
            if (b.found) { /* within the target: nothing shorter exists */
                optimal = 1;
            } else if (!b.aborted) { /* exhausted: longer than the target, or the incumbent */
                double t = b.next_target < b.best ? b.next_target : b.best;
                proven = t > proven ? t : proven;
                optimal = proven >= b.best - 1e-9 * b.best;
                b.target = proven;
                if (!phase && !b.integral)
                    break; /* real-valued times: deepening creeps; one try at the root bound */
            } else if (phase && b.open > proven) { /* the least bound left unexplored */
                proven = b.open < b.best ? b.open : b.best;
            }
        }
    }
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
    res->optimal = optimal;
    res->nodes = b.nodes;
    res->bound = optimal ? b.best : (proven < b.best ? proven : b.best);
out:
    synor__free(topo);
    synor__free(b.dev);
    synor__free(b.left);
    synor__free(b.bdev);
    synor__free(b.st);
    synor__free(b.ft);
    synor__free(b.bst);
    synor__free(b.bft);
    synor__free(b.bl);
    synor__free(b.minw);
    synor__free(b.avail);
    synor__free(b.done);
    synor__free(b.blog);
    synor__free(b.gdev);
    synor__free(b.succ_off);
    synor__free(b.succ);
    synor__free(b.topo_pos);
    synor__free(b.cls);
    synor__free(b.ntask);
    synor__free(b.cs);
    return rc;
}
