/* sim.c - the discrete-event simulator (synor/sim.h).
 *
 * State: a virtual clock and a binary heap of events ordered by (time,
 * creation number), so equal-time events run in creation order and a run
 * is reproducible. Event kinds: a task ends; a hop's latency has passed (the
 * flow joins its link); a link direction's first flow gets its last byte;
 * the explicit-cost edges into a task have arrived.
 * Flows on a link direction share its bandwidth equally, by virtual time
 * (processor sharing): the direction's v grows at bw / n per second, a flow
 * that joins at v0 with b bytes is done when v reaches v0 + b, so flows
 * finish in the order of their tags and only the least tag needs an event.
 * That event carries the direction's version; a flow joining or leaving
 * bumps it and schedules a fresh one, older ones are ignored. A transfer
 * costs O(log flows) however many flows share its link.
 *
 * Invariants: a device runs at most one task; a task starts only when all
 * its dependencies have finished and every datum it consumes that another
 * task produces is present in its device's memory space; each (datum,
 * space) pair is transferred at most once (loc[] goes absent -> moving ->
 * present, never back). */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "sim/sim_internal.h"
#include "sim/trace_internal.h"
#include "synor/sim.h"

/* ------------------------------------------------------------ the heap */

static int ev_before(const event *x, const event *y)
{
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static void push(sim *s, double t, int type, size_t a, uint64_t ver)
{
    if (s->rc)
        return;
    if (s->hn == s->hcap) {
        size_t cap = s->hcap ? s->hcap * 2 : 1024;
        event *h = synor__realloc(s->heap, cap * sizeof *h);
        if (!h) {
            s->rc = synor__error(SYNOR_ENOMEM, "out of memory");
            return;
        }
        s->heap = h;
        s->hcap = cap;
    }
    size_t k = s->hn++;
    s->heap[k] = (event){t, s->seq++, ver, type, a};
    while (k && ev_before(&s->heap[k], &s->heap[(k - 1) / 2])) {
        event tmp = s->heap[k];
        s->heap[k] = s->heap[(k - 1) / 2];
        s->heap[(k - 1) / 2] = tmp;
        k = (k - 1) / 2;
    }
}

static event pop(sim *s)
{
    event top = s->heap[0];
    s->heap[0] = s->heap[--s->hn];
    for (size_t k = 0;;) {
        size_t l = 2 * k + 1, b = k;
        if (l < s->hn && ev_before(&s->heap[l], &s->heap[b]))
            b = l;
        if (l + 1 < s->hn && ev_before(&s->heap[l + 1], &s->heap[b]))
            b = l + 1;
        if (b == k)
            break;
        event tmp = s->heap[k];
        s->heap[k] = s->heap[b];
        s->heap[b] = tmp;
        k = b;
    }
    return top;
}

/* ------------------------------------------------------------- helpers */

static size_t space_of(const sim *s, size_t dev) { return synor__sim_space_of(s, dev); }

static const synor_data *datum(const sim *s, size_t i) { return synor_workload_data(s->w, i); }

static double exec_time(const sim *s, size_t task, size_t dev)
{
    return synor_cost_time(s->c, task, dev);
}

/* --------------------------------------------------------------- tasks */

/* An edge with an explicit cost (comm_s) takes exactly that long between
 * two distinct devices, on no link; the data it carries comes with it. */
static double edge_comm(const sim *s, size_t task, size_t dep)
{
    return synor_workload_task(s->w, task)->dep_comm ? synor_workload_edge_comm(s->w, task, dep)
                                                     : -1;
}

/* When the explicit-cost edges into task i, placed on its device, arrive
 * (its dependencies have finished): until then it waits. */
static void edges_in(sim *s, size_t i)
{
    const synor_task *t = synor_workload_task(s->w, i);
    double at = s->now;
    for (size_t k = 0; t->dep_comm && k < t->n_deps; k++) {
        size_t j = t->deps[k];
        if (t->dep_comm[k] >= 0 && s->dev[j] != s->dev[i] && s->tend[j] + t->dep_comm[k] > at)
            at = s->tend[j] + t->dep_comm[k];
    }
    if (at > s->now) {
        s->edge_wait[i] = 1;
        push(s, at, EV_EDGES_IN, i, 0);
    }
}

static int inputs_present(sim *s, size_t i, size_t p)
{
    const synor_task *t = synor_workload_task(s->w, i);
    size_t sp = space_of(s, p);
    int ok = 1;
    for (size_t k = 0; k < t->n_consumes; k++) {
        size_t di = t->consumes[k];
        const synor_data *dd = datum(s, di);
        if (dd->producer < 0 || !dd->bytes || s->loc[di * s->S + sp] == LOC_PRESENT ||
            edge_comm(s, i, (size_t)dd->producer) >= 0)
            continue;
        synor__sim_request(s, di, p);
        ok = 0;
    }
    return ok;
}

static int start_task(sim *s, size_t i, size_t p)
{
    const synor_task *t = synor_workload_task(s->w, i);
    const synor_fabric_device *fd = synor_fabric_device_at(s->fab, p);
    uint64_t add = 0, transient = t->workspace;
    for (size_t k = 0; k < t->n_consumes; k++) {
        const synor_data *dd = datum(s, t->consumes[k]);
        if (dd->producer >= 0)
            transient += dd->bytes;
        else if (!s->loaded[p * s->nd + t->consumes[k]])
            add += dd->bytes;
    }
    for (size_t k = 0; k < t->n_produces; k++)
        transient += datum(s, t->produces[k])->bytes;
    uint64_t cap = synor_device_caps(fd->dev)->mem_bytes;
    if (!isfinite(exec_time(s, i, p)) && s->resident[p] + add + transient <= cap)
        return s->rc = synor__error(SYNOR_ENOTSUP, "task \"%s\" (%s in %s) cannot run on device "
                                                   "\"%s\"",
                                    t->id, synor_op_type_name(t->op.type),
                                    synor_dtype_name(t->op.dtype), fd->name);
    if (s->resident[p] + add + transient > cap) {
        char need[32], res[32], tr[32], have[32];
        synor__format_size(s->resident[p] + add + transient, 0, need, sizeof need);
        synor__format_size(s->resident[p] + add, 0, res, sizeof res);
        synor__format_size(transient, 0, tr, sizeof tr);
        synor__format_size(cap, 0, have, sizeof have);
        return s->rc = synor__error(SYNOR_ENOMEM,
                                    "task \"%s\" does not fit on device \"%s\" at t=%.6f s: it "
                                    "needs %s (resident weights %s + its data %s), the device "
                                    "has %s",
                                    t->id, fd->name, s->now, need, res, tr, have);
    }
    for (size_t k = 0; k < t->n_consumes; k++) {
        const synor_data *dd = datum(s, t->consumes[k]);
        if (dd->producer < 0 && !s->loaded[p * s->nd + t->consumes[k]]) {
            s->loaded[p * s->nd + t->consumes[k]] = 1;
            s->resident[p] += dd->bytes;
        }
    }
    s->running[p] = (long)i;
    s->tstart[i] = s->now;
    if (s->share)
        synor__sim_share_start(s, i, exec_time(s, i, p));
    else
        push(s, s->now + exec_time(s, i, p), EV_TASK_END, i, s->tver ? s->tver[i] : 0);
    return 0;
}

/* Dynamic queues: heaps on (priority, readiness order), readyq.c. */
static size_t q_head(const sim *s, size_t p, int *has)
{
    size_t n = s->qn[p] - s->qhead[p];
    *has = n > 0;
    return n ? s->queue[p][s->qhead[p]] : 0;
}

static void q_pop(sim *s, size_t p)
{
    if (s->plan) {
        s->qhead[p]++;
        return;
    }
    size_t *h = s->queue[p], n = --s->qn[p];
    h[0] = h[n];
    synor__sim_heap_down(s, h, n);
}

static void q_push(sim *s, size_t p, size_t i)
{
    if (s->qn[p] == s->qcap[p]) {
        size_t cap = s->qcap[p] ? s->qcap[p] * 2 : 16;
        size_t *q = synor__realloc(s->queue[p], cap * sizeof *q);
        if (!q) {
            s->rc = synor__error(SYNOR_ENOMEM, "out of memory");
            return;
        }
        s->queue[p] = q;
        s->qcap[p] = cap;
    }
    size_t *h = s->queue[p], k = s->qn[p]++;
    h[k] = i;
    if (!s->plan)
        synor__sim_heap_up(s, h, k);
}

static void try_start(sim *s, size_t p)
{
    if (s->rc || s->running[p] != -1) /* a task or a checkpoint */
        return;
    if (s->rt)
        synor__sim_rt_take(s, p);
    if (s->n_pre && (s->gone[p] || s->ckpt_due[p])) {
        if (!s->gone[p])
            synor__sim_checkpoint_start(s, p);
        return;
    }
    int has;
    size_t i = q_head(s, p, &has);
    if (!has || s->left[i] || s->edge_wait[i] || !inputs_present(s, i, p))
        return;
    if (s->wready && s->wready[i] > s->now) { /* its weights are still being copied */
        push(s, s->wready[i], EV_WAKE, p, 0);
        return;
    }
    q_pop(s, p);
    if (s->shp)
        synor__sim_shp_started(s, i, p);
    start_task(s, i, p);
}

/* Dynamic placement: the earliest expected finish, given queued work and
 * the transfers the task would need; devices it does not fit are skipped. */
static void assign_among(sim *s, size_t i, int mode);

/* A colocation group's tasks go where its first went; the first goes to a
 * device no other group uses when one can take it. */
static void assign(sim *s, size_t i)
{
    const synor_task *t = synor_workload_task(s->w, i);
    if (t->group_index != SIZE_MAX && s->gdev && s->gdev[t->group_index] == SIZE_MAX)
        for (int k = 2; k > 0; k--) { /* spread and slack, then slack alone */
            assign_among(s, i, k);
            if (s->dev[i] >= 0 || s->rc)
                return;
        }
    assign_among(s, i, 0);
}

/* mode 2: a group's first task on a device no group uses that runs the
 * group within twice its best time; 1: within twice; 0: anywhere. */
static void assign_among(sim *s, size_t i, int mode)
{
    const synor_task *t = synor_workload_task(s->w, i);
    size_t best = (size_t)-1, g = s->gdev ? t->group_index : SIZE_MAX;
    double best_f = INFINITY, best_rt = INFINITY;
    int by_rt = s->shp && g == SIZE_MAX; /* the runtime's rule between groups (shplace.c) */
    for (size_t p = 0; p < s->d; p++) {
        double w = exec_time(s, i, p);
        if (!isfinite(w) || (s->n_pre && s->leaving[p]))
            continue;
        if (g != SIZE_MAX && ((s->gdev[g] != SIZE_MAX && s->gdev[g] != p) ||
                              (s->gdev[g] == SIZE_MAX &&
                               ((mode == 2 && s->gcount[p]) ||
                                (mode && s->gwork[g * s->d + p] > 2.0 * s->gbest[g])))))
            continue; /* as the list planners do (heft.c, GROUP_SLACK) */
        uint64_t need = s->resident[p] + t->workspace;
        double arrive = s->now;
        for (size_t k = 0; k < t->n_consumes; k++) {
            const synor_data *dd = datum(s, t->consumes[k]);
            if (dd->producer < 0) {
                if (!s->loaded[p * s->nd + t->consumes[k]])
                    need += dd->bytes;
                continue;
            }
            need += dd->bytes;
            if (edge_comm(s, i, (size_t)dd->producer) >= 0)
                continue; /* arrives with its edge, below */
            double a = s->now + synor_fabric_transfer_time(s->fab, (size_t)s->dev[dd->producer], p,
                                                           (double)dd->bytes);
            if (a > arrive)
                arrive = a;
        }
        for (size_t k = 0; t->dep_comm && k < t->n_deps; k++) {
            size_t j = t->deps[k];
            double a = s->tend[j] + (s->dev[j] != (long)p ? t->dep_comm[k] : 0);
            if (t->dep_comm[k] >= 0 && a > arrive)
                arrive = a;
        }
        if (need > synor_device_caps(synor_fabric_device_at(s->fab, p)->dev)->mem_bytes)
            continue;
        double st = s->avail_est[p] > arrive ? s->avail_est[p] : arrive;
        if (by_rt) {
            /* the group by the runtime's score, then its device finishing first */
            double sc = synor__sim_shp_score(s, i, p, arrive - s->now);
            int same = best != (size_t)-1 && synor__sim_shp_same_group(s, p, best);
            if (same ? st + w < best_f : sc < best_rt) {
                best_f = st + w;
                best_rt = same && best_rt < sc ? best_rt : sc;
                best = p;
            }
            continue;
        }
        if (st + w < best_f) {
            best_f = st + w;
            best = p;
        }
    }
    if (best == (size_t)-1) {
        if (!mode)
            s->rc = synor__error(SYNOR_ENODEV, "task \"%s\" fits no device of fabric \"%s\"",
                                 t->id, synor_fabric_name(s->fab));
        return;
    }
    if (g != SIZE_MAX && s->gdev[g] == SIZE_MAX) {
        s->gdev[g] = best;
        s->gcount[best]++;
    }
    s->dev[i] = (long)best;
    s->avail_est[best] = best_f;
    s->ready_seq[i] = s->ready_counter++;
    q_push(s, best, i);
    if (s->shp)
        synor__sim_shp_queued(s, i, best);
    inputs_present(s, i, best); /* start the transfers now */
}

void synor__sim_push(sim *s, double t, int type, size_t a) { push(s, t, type, a, 0); }

void synor__sim_push_ver(sim *s, double t, int type, size_t a, uint64_t ver)
{
    push(s, t, type, a, ver);
}

void synor__sim_push_end(sim *s, double t, size_t i) { push(s, t, EV_TASK_END, i, s->tver[i]); }

int synor__sim_rt_queue(sim *s, size_t p, size_t i)
{
    q_push(s, p, i);
    edges_in(s, i);
    inputs_present(s, i, p);
    return 0;
}
void synor__sim_try_start(sim *s, size_t p) { try_start(s, p); }

void synor__sim_replace(sim *s, size_t i)
{
    s->dev[i] = -1;
    assign(s, i);
    if (s->dev[i] >= 0) {
        edges_in(s, i);
        try_start(s, (size_t)s->dev[i]);
    }
}

/* Task j has its inputs and has been submitted: released by a task of
 * device `from` (SIZE_MAX: by the host's submission). */
static void became_ready(sim *s, size_t j, size_t from)
{
    if (s->rt)
        synor__sim_rt_ready(s, j, from);
    else if (!s->plan)
        assign(s, j);
    if (s->dev[j] >= 0) {
        edges_in(s, j);
        try_start(s, (size_t)s->dev[j]);
    }
}

/* The host has submitted task i (synor_workload_set_host). */
static void released(sim *s, size_t i)
{
    if (--s->left[i])
        return;
    became_ready(s, i, SIZE_MAX);
    synor__sim_shp_rebalance(s);
    for (size_t q = 0; s->rt && q < s->d; q++) /* the group queues may have grown */
        try_start(s, q);
}

static void task_end(sim *s, size_t i)
{
    size_t p = (size_t)s->dev[i];
    const synor_task *t = synor_workload_task(s->w, i);
    s->finished[i] = 1;
    s->n_finished++;
    s->running[p] = -1;
    s->tend[i] = s->now;
    s->busy[p] += s->now - s->tstart[i];
    synor__sim_share_changed(s);
    synor_trace_task *k = synor__trace_add_task(s->tr);
    if (!k) {
        s->rc = synor__error(SYNOR_ENOMEM, "out of memory");
        return;
    }
    k->id = t->id; /* re-pointed to trace strings at the end */
    k->op = NULL;
    k->device = p;
    k->start = s->tstart[i];
    k->end = s->now;
    k->energy = synor_cost_energy(s->c, i, p);
    size_t sp = space_of(s, p);
    for (size_t q = 0; q < t->n_produces; q++) {
        size_t di = t->produces[q];
        s->loc[di * s->S + sp] = LOC_PRESENT;
        for (size_t e = s->cons_off[di]; e < s->cons_off[di + 1]; e++)
            if (s->dev[s->cons[e]] >= 0 && edge_comm(s, s->cons[e], i) < 0)
                synor__sim_request(s, di, (size_t)s->dev[s->cons[e]]);
    }
    for (size_t e = s->succ_off[i]; e < s->succ_off[i + 1]; e++) {
        size_t j = s->succ[e];
        if (--s->left[j] == 0)
            became_ready(s, j, p);
    }
    synor__sim_shp_rebalance(s);
    for (size_t q = 0; q < s->d; q++)
        if (s->rt || q == p || space_of(s, q) == sp) /* rt: any group's queue may have grown */
            try_start(s, q);
}

/* ----------------------------------------------------------------- setup */

static int setup(sim *s)
{
    size_t n = s->n, d = s->d, nd = s->nd, m = 0, nc = 0;
    for (size_t i = 0; i < n; i++) {
        m += synor_workload_task(s->w, i)->n_deps;
        nc += synor_workload_task(s->w, i)->n_consumes;
    }
    size_t n1 = n ? n : 1;
    s->dev = synor__malloc(n1 * sizeof *s->dev);
    s->left = synor__malloc(n1 * sizeof *s->left);
    s->succ_off = synor__calloc(n + 1, sizeof *s->succ_off);
    s->succ = synor__malloc((m ? m : 1) * sizeof *s->succ);
    s->cons_off = synor__calloc(nd + 1, sizeof *s->cons_off);
    s->cons = synor__malloc((nc ? nc : 1) * sizeof *s->cons);
    s->tstart = synor__calloc(n1, sizeof *s->tstart);
    s->tend = synor__calloc(n1, sizeof *s->tend);
    s->edge_wait = synor__calloc(n1, 1);
    s->finished = synor__calloc(n1, 1);
    s->ready_seq = synor__calloc(n1, sizeof *s->ready_seq);
    s->queue = synor__calloc(d, sizeof *s->queue);
    s->qn = synor__calloc(d, sizeof *s->qn);
    s->qhead = synor__calloc(d, sizeof *s->qhead);
    s->qcap = synor__calloc(d, sizeof *s->qcap);
    s->running = synor__malloc(d * sizeof *s->running);
    s->busy = synor__calloc(d, sizeof *s->busy);
    s->avail_est = synor__calloc(d, sizeof *s->avail_est);
    s->resident = synor__calloc(d, sizeof *s->resident);
    s->loaded = synor__calloc(d && nd ? d * nd : 1, 1);
    s->loc = synor__calloc(nd && s->S ? nd * s->S : 1, 1);
    s->ch = synor__calloc(2 * synor_fabric_link_count(s->fab) + 1, sizeof *s->ch);
    size_t *fill = synor__calloc(n1 + nd, sizeof *fill);
    if (!s->dev || !s->left || !s->succ_off || !s->succ || !s->cons_off || !s->cons ||
        !s->tstart || !s->tend || !s->edge_wait || !s->finished || !s->ready_seq || !s->queue ||
        !s->qn || !s->qhead || !s->qcap || !s->running || !s->busy || !s->avail_est ||
        !s->resident || !s->loaded || !s->loc || !s->ch || !fill) {
        synor__free(fill);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    for (size_t l = 0; l < synor_fabric_link_count(s->fab); l++)
        s->ch[2 * l].bw = s->ch[2 * l + 1].bw = synor_fabric_link(s->fab, l)->bandwidth;
    for (size_t p = 0; p < d; p++)
        s->running[p] = -1;
    for (size_t i = 0; i < n; i++) {
        const synor_task *t = synor_workload_task(s->w, i);
        s->left[i] = t->n_deps;
        s->dev[i] = -1;
        for (size_t k = 0; k < t->n_deps; k++)
            s->succ_off[t->deps[k] + 1]++;
        for (size_t k = 0; k < t->n_consumes; k++)
            s->cons_off[t->consumes[k] + 1]++;
    }
    /* The host submits the tasks one after another (synor_workload_set_host):
     * each waits for its submission as for one more dependency. */
    double before, per_task;
    synor_workload_host(s->w, &before, &per_task, NULL);
    for (size_t i = 0; (before > 0 || per_task > 0) && i < n; i++) {
        s->left[i]++;
        push(s, before + (double)(i + 1) * per_task, EV_RELEASE, i, 0);
    }
    for (size_t i = 0; i < n; i++)
        s->succ_off[i + 1] += s->succ_off[i];
    for (size_t i = 0; i < nd; i++)
        s->cons_off[i + 1] += s->cons_off[i];
    for (size_t i = 0; i < n; i++) {
        const synor_task *t = synor_workload_task(s->w, i);
        for (size_t k = 0; k < t->n_deps; k++) {
            size_t j = t->deps[k];
            s->succ[s->succ_off[j] + fill[j]++] = i;
        }
        for (size_t k = 0; k < t->n_consumes; k++) {
            size_t di = t->consumes[k];
            s->cons[s->cons_off[di] + fill[n1 + di]++] = i;
        }
    }
    synor__free(fill);
    if (s->plan) {
        for (size_t k = 0; k < n; k++) {
            size_t i = s->plan->order[k], p = s->plan->device[i];
            s->dev[i] = (long)p;
            q_push(s, p, i);
        }
    } else {
        size_t ng = synor_workload_group_count(s->w);
        if (ng) {
            s->gdev = synor__malloc(ng * sizeof *s->gdev);
            s->gcount = synor__calloc(d, sizeof *s->gcount);
            s->gwork = synor__calloc(ng * d, sizeof *s->gwork);
            s->gbest = synor__malloc(ng * sizeof *s->gbest);
            if (!s->gdev || !s->gcount || !s->gwork || !s->gbest)
                return synor__error(SYNOR_ENOMEM, "out of memory");
            for (size_t i = 0; i < n; i++) {
                size_t g = synor_workload_task(s->w, i)->group_index;
                for (size_t p = 0; g != SIZE_MAX && p < d; p++)
                    s->gwork[g * d + p] += exec_time(s, i, p);
            }
            for (size_t g = 0; g < ng; g++) {
                s->gdev[g] = SIZE_MAX;
                s->gbest[g] = INFINITY;
                for (size_t p = 0; p < d; p++)
                    s->gbest[g] = s->gwork[g * d + p] < s->gbest[g] ? s->gwork[g * d + p]
                                                                    : s->gbest[g];
            }
        }
        for (size_t k = 0; k < n; k++) {
            size_t i = synor_workload_order(s->w)[k];
            if (!s->left[i] && s->rt)
                synor__sim_rt_ready(s, i, SIZE_MAX);
            else if (!s->left[i])
                assign(s, i);
        }
    }
    return s->rc;
}

static void teardown(sim *s)
{
    synor__free(s->wready);
    synor__free(s->gdev);
    synor__free(s->gcount);
    synor__free(s->gwork);
    synor__free(s->gbest);
    synor__free(s->heap);
    synor__free(s->dev);
    synor__free(s->left);
    synor__free(s->succ_off);
    synor__free(s->succ);
    synor__free(s->cons_off);
    synor__free(s->cons);
    synor__free(s->tstart);
    synor__free(s->tend);
    synor__free(s->edge_wait);
    synor__free(s->finished);
    synor__free(s->ready_seq);
    for (size_t p = 0; s->queue && p < s->d; p++)
        synor__free(s->queue[p]);
    synor__free(s->queue);
    synor__free(s->qn);
    synor__free(s->qhead);
    synor__free(s->qcap);
    synor__free(s->running);
    synor__free(s->busy);
    synor__free(s->avail_est);
    synor__free(s->resident);
    synor__free(s->loaded);
    synor__free(s->loc);
    for (size_t l = 0; s->ch && l < 2 * synor_fabric_link_count(s->fab); l++)
        synor__free(s->ch[l].f);
    synor__free(s->ch);
    synor__free(s->flows);
}

static int run(const synor_cost *c, const synor_plan *plan, const synor_sim_preemption *pre,
               size_t n_pre, int rt, synor_trace **out);

int synor_simulate(const synor_cost *c, const synor_plan *plan, synor_trace **out)
{
    return run(c, plan, NULL, 0, 0, out);
}

int synor_simulate_runtime(const synor_cost *c, synor_trace **out)
{
    return run(c, NULL, NULL, 0, 1, out);
}

int synor_simulate_preempt(const synor_cost *c, const synor_plan *plan,
                           const synor_sim_preemption *pre, size_t n_pre, synor_trace **out)
{
    return run(c, plan, pre, n_pre, 0, out);
}

static int run(const synor_cost *c, const synor_plan *plan, const synor_sim_preemption *pre,
               size_t n_pre, int rt, synor_trace **out)
{
    sim s;
    memset(&s, 0, sizeof s);
    s.c = c;
    s.w = synor_cost_workload(c);
    s.fab = synor_cost_fabric(c);
    s.plan = plan;
    s.n = synor_workload_count(s.w);
    s.d = synor_fabric_device_count(s.fab);
    s.S = synor_fabric_space_count(s.fab);
    s.nd = synor_workload_data_count(s.w);
    if (plan && (plan->n_tasks != s.n || plan->n_devices != s.d))
        return synor__error(SYNOR_EINVAL, "the plan is for another workload or fabric");
    if (n_pre && plan)
        return synor__error(SYNOR_ENOTSUP, "preemptions need the dynamic strategy: a plan fixed "
                                           "in advance cannot move a leaving device's tasks");
    if (!(s.tr = synor__trace_new()))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    int rc = synor__sim_preempt_setup(&s, pre, n_pre);
    if (!rc)
        rc = synor__sim_share_setup(&s);
    if (!rc && !rt && !plan)
        rc = synor__sim_shp_setup(&s);
    if (!rc && rt)
        rc = synor__sim_rt_setup(&s);
    if (!rc)
        rc = setup(&s);
    if (!rc)
        rc = synor__sim_weight_copies(&s);
    if (!rc)
        synor__sim_shp_rebalance(&s);
    for (size_t p = 0; !rc && p < s.d; p++)
        try_start(&s, p);
    while (!rc && !s.rc && s.hn) {
        event e = pop(&s);
        if ((e.type == EV_PREEMPT || e.type == EV_DEADLINE || e.type == EV_REBALANCE) &&
            s.n_finished == s.n)
            continue; /* after the run: nothing to preempt or to move */
        if (e.type == EV_TASK_END && s.tver && e.ver != s.tver[e.a])
            continue; /* the end of a run cut by its device's stop */
        s.now = e.t;
        s.events++;
        if (e.type == EV_TASK_END)
            task_end(&s, e.a);
        else if (e.type >= EV_PREEMPT)
            synor__sim_preempt_event(&s, e.type, e.a);
        else if (e.type == EV_HOP_READY)
            synor__sim_hop_ready(&s, e.a);
        else if (e.type == EV_WAKE)
            try_start(&s, e.a);
        else if (e.type == EV_RELEASE)
            released(&s, e.a);
        else if (e.type == EV_REBALANCE)
            synor__sim_shp_tick(&s);
        else if (e.type == EV_EDGES_IN) {
            s.edge_wait[e.a] = 0;
            try_start(&s, (size_t)s.dev[e.a]);
        }
        else
            synor__sim_flow_done(&s, e.a, e.ver);
    }
    if (!rc)
        rc = s.rc;
    if (!rc && s.n_finished < s.n) {
        size_t i = 0;
        while (s.finished[i])
            i++;
        rc = synor__error(SYNOR_ESTATE,
                          "the simulation stalled: task \"%s\" never ran (the plan orders a "
                          "device's tasks against their dependencies)",
                          synor_workload_task(s.w, i)->id);
    }
    /* the host's work after the last task (synor_workload_set_host) */
    double after;
    synor_workload_host(s.w, NULL, NULL, &after);
    if (!rc && s.n)
        s.now += after;
    if (!rc && s.n_pre)
        synor__sim_preempt_finish(&s);
    if (!rc)
        rc = synor__trace_finish(s.tr, s.w, s.fab,
                                 plan ? synor_strategy_name(plan->strategy)
                                 : rt ? "runtime"
                                      : "dynamic",
                                 s.now,
                                 s.busy, s.events, s.n_pre ? s.held : NULL,
                                 s.n_pre ? s.money : NULL);
    teardown(&s);
    synor__sim_rt_teardown(&s);
    synor__sim_shp_teardown(&s);
    synor__sim_share_teardown(&s);
    synor__sim_preempt_teardown(&s);
    if (rc) {
        synor_trace_destroy(&s.tr->t);
        return rc;
    }
    *out = &s.tr->t;
    return 0;
}
