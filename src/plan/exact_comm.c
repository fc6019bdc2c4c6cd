/* exact_comm.c - the exact planner's allocation-first search: devices
 * first, then the order on them (the allocation-ordering split of Orr and
 * Sinnen's optimal scheduling with communication delays). Used by exact.c
 * after its bound-deepening phase on problems with communication and
 * without weights, memory or colocation groups.
 *
 * Why: exact.c's append search bounds a partial schedule by paths and by
 * the work left spread over the devices, and neither knows that spreading
 * work costs transfers; with costly communication its bound stays far
 * below the optimum. Once tasks have devices, the transfers are known: an
 * edge between two devices costs its transfer, an edge on one device costs
 * nothing, and the tasks of one device run one at a time.
 *
 * Allocation: one task at a time, each on each device it can run on
 * (interchangeable devices, as exact.c defines them, once while unused).
 * The bound of a partial allocation, in topological order:
 *  - heads, forward: an allocated task starts no earlier than, per
 *    predecessor on another device, its head, time and transfer; its
 *    predecessors on the same device run one at a time before it (the
 *    join rule); per predecessor not allocated, the cheapest of its
 *    devices. A task left has a head per device, the same way;
 *  - tails, backward (from a task's end to the makespan): per successor on
 *    another device, the transfer and its time and tail there; successors
 *    on the same device run one at a time after it, by Jackson's rule on
 *    their tails (the fork rule); a successor left goes on the same device
 *    when every other device costs more than a threshold, and the least
 *    over thresholds counts. A task left has a bottom level per device;
 *  - the tasks left: the least over devices of head plus bottom level;
 *  - per device, its tasks on one machine with these heads and tails: for
 *    any subset, the least head plus the sum of times plus the least tail
 *    (subsets: heads at least a threshold, taken by tail, largest first);
 *  - the least work left poured onto the devices on top of their loads.
 * (These bounds are in exact_bound.c.) A child's bound is at least its
 * parent's; children are tried in order of their bound; a bound at or
 * above the incumbent prunes.
 *
 * Which task next (fail first): at each node, the children of every task
 * left are bounded, and the task with the fewest children the incumbent
 * does not prune is taken (none: the node is pruned; one: forced, taken
 * at once without looking further), ties to the largest least child
 * bound, then to the first in the allocation order below. The largest
 * least child bound seen also bounds the node (each completion gives that
 * task some device). Why: with a fixed order the bound of a partial
 * allocation stays low while the tasks that decide it are left (they
 * count on their best device for every neighbour at once); on a deep,
 * narrow 30-task graph with CCR 1 on 4 devices within 5% of each other
 * the fixed order never reached a complete allocation below 1,256 in
 * millions of nodes (optimum 1,289.8), the dynamic one proves it in
 * 30,000 nodes. A node costs up to (tasks left) x (devices) bounds.
 *
 * Two allocation orders in turn (the order in which tasks are scanned
 * and ties broken), the second from the best schedule the first found:
 * for a quarter of the time (at most 500,000 nodes), next the task with
 * the largest sum of its least time and its edges' costs to the tasks
 * already allocated, either way; then probes in that order (below:
 * targets between the bound and the incumbent, bisected; for half the
 * time left), then a topological order, next the ready task with the
 * costliest edges from its predecessors.
 *
 * Ordering (a complete allocation): exact.c's append search with the
 * devices fixed: ready tasks appended at the later of their device
 * becoming free and their inputs arriving, starts never decreasing, one
 * order among equal starts. Its bound: each task left starts no earlier
 * than the last start, its device's free time, its predecessors' (earliest)
 * ends plus transfers, and its local predecessors one at a time; then the
 * largest head plus time plus tail, and per device the one-machine bound of
 * its tasks left.
 *
 * Stopped by a limit, the bound proved is the largest of the probes'
 * targets exhausted and, over the two orders, the least bound of the
 * subtrees left (children are sorted by bound, so the child being
 * searched at each open level bounds those after it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "plan/exact_comm.h"
#include "plan/plan_internal.h"

#define EPS 1e-12
#define FIRST_NODES 500000u
#define PROBE_NODES 200000u

static int past(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* t = now + secs (secs > 0). */
static void after(struct timespec *t, double secs)
{
    clock_gettime(CLOCK_MONOTONIC, t);
    t->tv_sec += (time_t)secs;
    t->tv_nsec += (long)((secs - floor(secs)) * 1e9);
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

static int tick(synor__acs *a)
{
    if (a->aborted)
        return 1;
    if (a->nodes >= a->limit || ((++a->nodes & 1023) == 0 && past(&a->t_end)))
        a->aborted = 1;
    return a->aborted;
}

static int pruned(const synor__acs *a, double lb)
{
    return lb >= a->best - EPS - 1e-9 * a->best;
}

/* ------------------------------------------------------------ ordering */

static void record(synor__acs *a, double cur)
{
    a->best = cur;
    memcpy(a->bdev, a->dev, a->n * sizeof *a->dev);
    memcpy(a->bst, a->st, a->n * sizeof *a->st);
    memcpy(a->bft, a->ft, a->n * sizeof *a->ft);
}

static void order(synor__acs *a, size_t depth, double cur, double last, size_t prev)
{
    if (tick(a))
        return;
    if (depth == a->n) {
        if (cur < a->best - EPS)
            record(a, cur);
        return;
    }
    double lb = synor__acs_ord_bound(a, cur, last);
    if (pruned(a, lb))
        return;
    const synor_sched_problem *pb = a->pb;
    synor__ord_cand *cs = a->oc + depth * a->n;
    size_t nc = 0;
    for (size_t i = 0; i < a->n; i++) {
        if (a->done[i] || a->left[i])
            continue;
        size_t p = a->dev[i];
        double s = a->avail[p];
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
            size_t j = pb->pred[e];
            double r = a->ft[j] + synor__edge_comm(pb, e, a->dev[j], p);
            if (r > s)
                s = r;
        }
        if (s < last - EPS)
            continue; /* not in start order */
        if (prev != SIZE_MAX && fabs(s - last) <= EPS && a->w[i] > 0 &&
            a->ft[prev] > a->st[prev] && a->pos[i] < a->pos[prev])
            continue; /* the same start: topological order covers it */
        double key = synor__acs_round(a, s + a->w[i] + a->tail[i]);
        if (key < lb)
            key = lb; /* the parent's bound holds for its subtrees */
        if (pruned(a, key))
            continue;
        size_t y = nc++;
        while (y > 0 && (cs[y - 1].key > key || (cs[y - 1].key == key && cs[y - 1].s > s))) {
            cs[y] = cs[y - 1];
            y--;
        }
        cs[y] = (synor__ord_cand){key, s, i};
    }
    for (size_t k = 0; k < nc; k++) {
        synor__ord_cand c = cs[k];
        if (pruned(a, c.key))
            break;
        size_t i = c.task, p = a->dev[i];
        double old = a->avail[p], f = c.s + a->w[i];
        a->done[i] = 1;
        a->st[i] = c.s;
        a->ft[i] = f;
        a->avail[p] = f;
        for (size_t x = a->succ_off[i]; x < a->succ_off[i + 1]; x++)
            a->left[a->succ[x]]--;
        order(a, depth + 1, f > cur ? f : cur, c.s, i);
        for (size_t x = a->succ_off[i]; x < a->succ_off[i + 1]; x++)
            a->left[a->succ[x]]++;
        a->avail[p] = old;
        a->done[i] = 0;
        if (a->aborted) {
            if (c.key < a->open)
                a->open = c.key;
            break;
        }
    }
}

/* ---------------------------------------------------------- allocation */

static void assign(synor__acs *a, size_t i, size_t p)
{
    a->dev[i] = p;
    a->w[i] = a->pb->exec[i * a->d + p];
    a->load[p] += a->w[i];
    a->used[p]++;
    a->minw_left -= a->in->minw[i];
}

static void unassign(synor__acs *a, size_t i)
{
    size_t p = a->dev[i];
    a->load[p] -= a->w[i];
    a->used[p]--;
    a->minw_left += a->in->minw[i];
    a->dev[i] = SIZE_MAX;
}

/* Whether device p repeats an interchangeable device, both unused. */
static int symmetric(const synor__acs *a, size_t p)
{
    const size_t *cls = a->in->cls;
    if (!cls || cls[p] == p || a->used[p])
        return 0;
    for (size_t q = cls[p]; q < p; q++)
        if (cls[q] == cls[p] && !a->used[q])
            return 1;
    return 0;
}

/* The children of allocating task i (one per device it can run on, but
 * interchangeable unused devices once) that the incumbent does not prune,
 * into cs by bound (at least lb), least first; their number. */
static size_t children(synor__acs *a, size_t i, double lb, synor__alloc_cand *cs)
{
    size_t nc = 0;
    for (size_t p = 0; p < a->d; p++) {
        if (!isfinite(a->pb->exec[i * a->d + p]) || symmetric(a, p))
            continue;
        assign(a, i, p);
        double raw = synor__acs_alloc_bound(a), key = raw < lb ? lb : raw; /* the parent's bound
                                                                   holds for its subtrees */
        unassign(a, i);
        if (pruned(a, key))
            continue;
        size_t y = nc++;
        while (y > 0 && (cs[y - 1].key > key || (cs[y - 1].key == key && cs[y - 1].raw > raw))) {
            cs[y] = cs[y - 1];
            y--;
        }
        cs[y] = (synor__alloc_cand){key, raw, p};
    }
    return nc;
}

/* Allocates the tasks a->aord[k..n-1] (in any order: the task taken next
 * is chosen here and swapped to position k), then orders. The next task is
 * the one left with the fewest children the incumbent does not prune (none:
 * this node is pruned; one: it is forced, taken at once), then the largest
 * least child bound, then the first in a->aord. Every completion of the
 * node gives each task a device, so the node's subtree is no shorter than
 * any task's least child bound: the largest of those seen bounds every
 * child too. */
static void allocate(synor__acs *a, size_t k, double lb)
{
    if (tick(a))
        return;
    if (k == a->n) { /* the order on the devices; tails of this allocation */
        if (pruned(a, synor__acs_alloc_bound(a)))
            return;
        memset(a->done, 0, a->n);
        for (size_t p = 0; p < a->d; p++)
            a->avail[p] = 0;
        for (size_t i = 0; i < a->n; i++)
            a->left[i] = a->pb->pred_off[i + 1] - a->pb->pred_off[i];
        order(a, 0, 0, 0, SIZE_MAX);
        return;
    }
    synor__alloc_cand *cs = a->ac + k * a->d;
    size_t pick = k, nc = SIZE_MAX;
    double least = -INFINITY, node = lb;
    for (size_t x = k; x < a->n && nc > 1; x++) {
        size_t c = children(a, a->aord[x], lb, a->ac_tmp);
        double m = c ? a->ac_tmp[0].key : INFINITY;
        node = m > node ? m : node;
        if (c < nc || (c == nc && m > least)) {
            nc = c;
            least = m;
            pick = x;
            memcpy(cs, a->ac_tmp, c * sizeof *cs);
        }
    }
    size_t i = a->aord[pick];
    a->aord[pick] = a->aord[k];
    a->aord[k] = i;
    for (size_t c = 0; c < nc; c++) {
        double key = cs[c].key > node ? cs[c].key : node;
        if (pruned(a, key))
            break;
        assign(a, i, cs[c].dev);
        allocate(a, k + 1, key);
        unassign(a, i);
        if (a->aborted) {
            if (key < a->open)
                a->open = key;
            break;
        }
    }
}

/* Probes (in the first order): the search as if a target t below the
 * incumbent were the incumbent, within a budget. A schedule below t is
 * found (t near the optimum prunes hard: found sooner), or none exists
 * (the bound proved rises to t), or the budget ends (later targets stay
 * below t, the budget doubles). t bisects the bound and the least of the
 * incumbent and the stopped targets; within 0.5%, t is the incumbent (the
 * plain search). Until t_end; 1 when the incumbent is proved optimal. */
static int probe(synor__acs *a, double root, double *proven, const struct timespec *t_end)
{
    double top = a->best;
    uint64_t budget = a->in->probe_nodes ? a->in->probe_nodes : PROBE_NODES;
    for (;;) {
        double lo = *proven, hi = a->best, t = synor__acs_round(a, (lo + top) / 2);
        if (top - lo <= 0.005 * hi || t > hi)
            t = hi;
        if (t <= lo || past(t_end) || budget > a->in->node_limit - a->nodes)
            return 0;
        a->best = t;
        a->aborted = 0;
        a->open = INFINITY;
        a->limit = a->nodes + budget;
        allocate(a, 0, root);
        if (a->best < t) { /* found */
            if (!a->aborted)
                return 1;
            top = a->best;
            continue;
        }
        a->best = hi;
        if (a->aborted) {
            top = t;
            budget *= 2;
            if (a->open < t && a->open > *proven) /* the least bound left open */
                *proven = a->open;
        } else if (t == hi) {
            return 1; /* nothing shorter than the incumbent */
        } else if (t - EPS - 1e-9 * t > *proven) {
            *proven = t - EPS - 1e-9 * t; /* nothing shorter than t */
        }
    }
}

/* The allocation order, topological or not: next, the task with the
 * costliest edges to the tasks already taken, either way (their transfers
 * bound the allocation soonest), not topological plus its least time (big
 * tasks first), then the longest bottom level. Uses a->done and a->est as
 * scratch. */
static void alloc_order(synor__acs *a, int topological)
{
    const synor_sched_problem *pb = a->pb;
    size_t n = a->n, d = a->d;
    double *score = a->est;
    for (size_t i = 0; i < n; i++) {
        a->done[i] = 0;
        score[i] = 0;
        a->left[i] = pb->pred_off[i + 1] - pb->pred_off[i];
    }
    for (size_t k = 0; k < n; k++) {
        size_t pick = SIZE_MAX;
        double pb_best = -1, ps_best = -1;
        for (size_t i = 0; i < n; i++) {
            if (a->done[i] || (topological && a->left[i]))
                continue;
            double blm = INFINITY;
            for (size_t q = 0; q < d; q++)
                if (a->bl2[i * d + q] < blm)
                    blm = a->bl2[i * d + q];
            double sc = score[i] + (topological ? 0 : a->in->minw[i]);
            if (sc > ps_best || (sc == ps_best && blm > pb_best)) {
                pick = i;
                ps_best = sc;
                pb_best = blm;
            }
        }
        a->aord[k] = pick;
        a->done[pick] = 1;
        for (size_t x = a->succ_off[pick]; x < a->succ_off[pick + 1]; x++) {
            score[a->succ[x]] += d > 1 ? synor__edge_comm(pb, a->succ_e[x], 0, 1) : 0;
            a->left[a->succ[x]]--;
        }
        for (size_t e = pb->pred_off[pick]; e < pb->pred_off[pick + 1]; e++)
            score[pb->pred[e]] += d > 1 ? synor__edge_comm(pb, e, 0, 1) : 0;
    }
    memset(a->done, 0, n);
}

/* Points a's arrays into one block at base (zeroed), or with base NULL
 * only counts; the bytes the block takes. m: the edges. */
static size_t carve(synor__acs *a, char *base, size_t m)
{
    size_t n = a->n, d = a->d, N = n + 1, off = 0;
#define TAKE(ptr, count)                                                            \
    do {                                                                            \
        (ptr) = base ? (void *)(base + off) : NULL;                                 \
        off += ((count) * sizeof *(ptr) + 15) & ~(size_t)15;                        \
    } while (0)
    TAKE(a->pos, N);
    TAKE(a->aord, N);
    TAKE(a->succ_off, n + 2);
    TAKE(a->succ, m + 1);
    TAKE(a->succ_e, m + 1);
    TAKE(a->dev, N);
    TAKE(a->used, d + 1);
    TAKE(a->head, N);
    TAKE(a->tail, N);
    TAKE(a->w, N);
    TAKE(a->uhead, n * d + 1);
    TAKE(a->load, d + 1);
    TAKE(a->om_idx, N);
    TAKE(a->om_r, N);
    TAKE(a->om_p, N);
    TAKE(a->om_q, N);
    TAKE(a->om_fill, d + 1);
    TAKE(a->fw, 2 * N);
    TAKE(a->fq, 2 * N);
    TAKE(a->ur, N);
    TAKE(a->uw, N);
    TAKE(a->uq, N);
    TAKE(a->bl2, n * d + 1);
    TAKE(a->bld, n * d + 1);
    TAKE(a->left, N);
    TAKE(a->st, N);
    TAKE(a->ft, N);
    TAKE(a->avail, d + 1);
    TAKE(a->est, N);
    TAKE(a->oc, n * n + 1);
    TAKE(a->ac, n * d + 1);
    TAKE(a->ac_tmp, d + 1);
    TAKE(a->bdev, N);
    TAKE(a->bst, N);
    TAKE(a->bft, N);
    TAKE(a->done, N);
#undef TAKE
    return off;
}

int synor__exact_comm(const synor__exact_comm_in *in, size_t *dev, double *st, double *ft,
                      synor__exact_comm_out *out)
{
    const synor_sched_problem *pb = in->pb;
    size_t n = pb->n_tasks, d = pb->n_devices, m = pb->pred_off[n];
    synor__acs a;
    memset(&a, 0, sizeof a);
    a.in = in;
    a.pb = pb;
    a.n = n;
    a.d = d;
    a.best = in->best;
    a.open = INFINITY;
    char *arena = synor__calloc(1, carve(&a, NULL, m));
    if (!arena)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    carve(&a, arena, m);
    for (size_t k = 0; k < n; k++)
        a.pos[in->topo[k]] = k;
    for (size_t e = 0; e < m; e++)
        a.succ_off[pb->pred[e] + 2]++;
    for (size_t i = 0; i < n; i++)
        a.succ_off[i + 2] += a.succ_off[i + 1];
    for (size_t i = 0; i < n; i++)
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
            size_t x = a.succ_off[pb->pred[e] + 1]++;
            a.succ[x] = i;
            a.succ_e[x] = e;
        }
    for (size_t i = 0; i < n; i++) {
        a.dev[i] = SIZE_MAX;
        a.minw_left += in->minw[i];
    }
    /* bottom levels with the fork rule, never below exact.c's */
    for (size_t k = n; k-- > 0;) {
        size_t i = in->topo[k];
        for (size_t p = 0; p < d; p++) {
            double w = pb->exec[i * d + p], v = isfinite(w) ? w + synor__acs_fork_rule(&a, i, p, a.bl2)
                                                            : INFINITY;
            a.bl2[i * d + p] = v > in->bl[i * d + p] ? v : in->bl[i * d + p];
        }
    }
    /* two orders in turn: the costliest edges first (strong when
     * transfers dominate) for a quarter of the time or 500,000 nodes,
     * then topological,
     * from the best schedule found */
    memcpy(a.bdev, dev, n * sizeof *dev);
    memcpy(a.bst, st, n * sizeof *st);
    memcpy(a.bft, ft, n * sizeof *ft);
    double root = n ? synor__acs_alloc_bound(&a) : 0, proven = root;
    struct timespec now, pe;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double left = (double)(in->t_end.tv_sec - now.tv_sec) +
                  1e-9 * (double)(in->t_end.tv_nsec - now.tv_nsec);
    for (int pass = 0; pass < 2 && !pruned(&a, root); pass++) {
        a.t_end = in->t_end;
        if (!pass && left > 0)
            after(&a.t_end, left / 4);
        if (pass) { /* probes, in the first order, for half the time left */
            clock_gettime(CLOCK_MONOTONIC, &now);
            left = (double)(in->t_end.tv_sec - now.tv_sec) +
                   1e-9 * (double)(in->t_end.tv_nsec - now.tv_nsec);
            after(&pe, left > 0 ? left / 2 : 0);
            if (probe(&a, root, &proven, &pe)) {
                a.aborted = 0;
                break;
            }
        }
        /* the first order: at most 500,000 nodes too (the time share alone
         * would starve the second order of a long limit) */
        uint64_t first = in->first_nodes ? in->first_nodes : FIRST_NODES;
        a.limit = in->node_limit;
        if (!pass && in->node_limit > first && a.nodes < in->node_limit - first)
            a.limit = a.nodes + first;
        alloc_order(&a, pass);
        a.aborted = 0;
        a.open = INFINITY;
        allocate(&a, 0, root);
        if (!a.aborted)
            break;
        if (!isfinite(a.open))
            a.open = root; /* stopped before the root was expanded */
        if (a.open > proven)
            proven = a.open;
    }
    memcpy(dev, a.bdev, n * sizeof *dev);
    memcpy(st, a.bst, n * sizeof *st);
    memcpy(ft, a.bft, n * sizeof *ft);
    out->best = a.best;
    out->nodes = a.nodes;
    out->exhausted = !a.aborted;
    out->bound = a.aborted ? (proven < a.best ? proven : a.best) : a.best;
    synor__free(arena);
    return 0;
}
