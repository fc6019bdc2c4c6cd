/* shplace.c - the dynamic strategy placing as the runtime does, on a
 * fabric with a device that shares the host's cores (docs/PLANNING.md
 * "Placing as the runtime does"; src/runtime/place.c).
 *
 * The fabric's devices that share a profile and a node are the workers of
 * one runtime device (a group: the CPU workers of a run fabric). A ready
 * task goes to the group with the smallest
 *     backlog(g) / devices(g) + transfer + estimate(g)
 * as the runtime's earliest finish does: backlog is the sum of the
 * estimates of the tasks queued on the group's devices that have not
 * started (a running task is not in it), and a device's estimate is its
 * cost-model time x its share_place_scale (the runtime places by the
 * median kernel time without the dispatch; the calibrated time is the
 * mean with it). Within the group, the device that is expected to finish
 * it first (the dynamic strategy's own rule). After each task's end and
 * each release, the rebalancer's rounds: the newest, least urgent queued
 * task of the group with the most backlog per device that the one with
 * the least can run moves there while its estimate there ends before the
 * backlog it leaves would (backlog(hi) > backlog(lo) + its estimate on
 * lo), as synor__place_rebalance does. The time a task takes is still its
 * cost-model time (and share.c's contention).
 *
 * When the rebalancer runs: as the runtime's workers run it
 * (runtime.c, maybe_rebalance), not at every event. A worker that loops
 * (after a task's end; woken by a submission) runs a rebalance when the
 * period (the shared device's share_rebalance_s, 1 ms as the runtime's
 * rebalance_us; 0: at every event, the behaviour before) has passed since
 * the last one, which sets the next at now + period; a worker that found
 * nothing to run polls for SPIN_S (the runtime's spin_us) before it
 * sleeps, so a rebalance that falls due while it polls runs then: a timed
 * event (EV_REBALANCE) at that time. Deterministic: times only. */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "sim/sim_internal.h"

struct sim_shp {
    size_t *group;  /* device -> group */
    size_t *gsize;  /* group -> devices */
    size_t ngroups;
    double *qest;   /* per device: estimates of its queued tasks */
    double *est;    /* per task: its estimate where it is queued */
    double *gsum;   /* scratch: per group backlog */
    double period;  /* the rebalance period (0: at every event) */
    double next;    /* when a rebalance may run next */
    int tick;       /* an EV_REBALANCE is pending */
};

/* The runtime's spin_us default: how long an idle worker polls. */
#define SPIN_S 50e-6

int synor__sim_shp_setup(sim *s)
{
    if (!s->share || s->plan || s->rt || s->n_pre)
        return 0;
    sim_shp *h = synor__calloc(1, sizeof *h);
    if (!h)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    s->shp = h;
    h->group = synor__calloc(s->d, sizeof *h->group);
    h->gsize = synor__calloc(s->d, sizeof *h->gsize);
    h->qest = synor__calloc(s->d, sizeof *h->qest);
    h->gsum = synor__calloc(s->d, sizeof *h->gsum);
    h->est = synor__calloc(s->n + 1, sizeof *h->est);
    if (!h->group || !h->gsize || !h->qest || !h->gsum || !h->est)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t p = 0; p < s->d; p++) {
        const synor_fabric_device *fp = synor_fabric_device_at(s->fab, p);
        h->group[p] = h->ngroups;
        for (size_t q = 0; q < p; q++) {
            const synor_fabric_device *fq = synor_fabric_device_at(s->fab, q);
            if (fq->profile == fp->profile && fq->node == fp->node &&
                (fq->share_cpu_slowdown > 0) == (fp->share_cpu_slowdown > 0)) {
                h->group[p] = h->group[q];
                break;
            }
        }
        if (h->group[p] == h->ngroups)
            h->ngroups++;
        h->gsize[h->group[p]]++;
    }
    h->period = -1;
    for (size_t p = 0; p < s->d; p++) {
        const synor_fabric_device *fp = synor_fabric_device_at(s->fab, p);
        if (fp->share_cpu_slowdown > 0 && (h->period < 0 || fp->share_rebalance_s < h->period))
            h->period = fp->share_rebalance_s;
    }
    h->period = h->period > 0 ? h->period : 0;
    return 0;
}

void synor__sim_shp_teardown(sim *s)
{
    sim_shp *h = s->shp;
    if (!h)
        return;
    synor__free(h->group);
    synor__free(h->gsize);
    synor__free(h->qest);
    synor__free(h->gsum);
    synor__free(h->est);
    synor__free(h);
    s->shp = NULL;
}

double synor__sim_shp_estimate(const sim *s, size_t i, size_t p)
{
    double sc = synor_fabric_device_at(s->fab, p)->share_place_scale;
    return synor_cost_time(s->c, i, p) * (sc > 0 ? sc : 1);
}

static double backlog(const sim *s, size_t g)
{
    const sim_shp *h = s->shp;
    double b = 0;
    for (size_t q = 0; q < s->d; q++)
        if (h->group[q] == g)
            b += h->qest[q];
    return b / (double)h->gsize[g];
}

double synor__sim_shp_score(const sim *s, size_t i, size_t p, double xfer)
{
    return backlog(s, s->shp->group[p]) + xfer + synor__sim_shp_estimate(s, i, p);
}

int synor__sim_shp_same_group(const sim *s, size_t p, size_t q)
{
    return s->shp->group[p] == s->shp->group[q];
}

void synor__sim_shp_queued(sim *s, size_t i, size_t p)
{
    sim_shp *h = s->shp;
    h->est[i] = synor__sim_shp_estimate(s, i, p);
    h->qest[p] += h->est[i];
}

void synor__sim_shp_started(sim *s, size_t i, size_t p)
{
    sim_shp *h = s->shp;
    h->qest[p] -= h->est[i];
    if (h->qest[p] < 1e-15) /* rounding */
        h->qest[p] = 0;
    h->est[i] = 0;
}

/* Takes the k-th task out of device p's ready heap. */
static void heap_remove(sim *s, size_t p, size_t k)
{
    size_t *v = s->queue[p], n = --s->qn[p];
    v[k] = v[n];
    for (size_t j = 1; j < n; j++) /* rebuild: queues are short */
        synor__sim_heap_up(s, v, j);
}

/* One round; 1 when a task moved. */
static int round_once(sim *s, unsigned char *got)
{
    sim_shp *h = s->shp;
    size_t hi = SIZE_MAX, lo = SIZE_MAX;
    double bh = 0, bl = 0;
    for (size_t g = 0; g < h->ngroups; g++) {
        double b = backlog(s, g);
        if (hi == SIZE_MAX || b > bh)
            hi = g, bh = b;
        if (lo == SIZE_MAX || b < bl)
            lo = g, bl = b;
    }
    if (hi == lo || !(bh > bl))
        return 0;
    /* hi's last task (the least urgent, newest ready) that lo can run */
    size_t from = SIZE_MAX, at = 0, task = 0;
    for (size_t p = 0; p < s->d; p++) {
        if (h->group[p] != hi)
            continue;
        for (size_t k = s->qhead[p]; k < s->qn[p]; k++) {
            size_t i = s->queue[p][k];
            int ok = 0;
            for (size_t q = 0; q < s->d && !ok; q++)
                ok = h->group[q] == lo && isfinite(synor_cost_time(s->c, i, q));
            if (ok && (from == SIZE_MAX || synor__sim_q_before(s, task, i)))
                from = p, at = k, task = i;
        }
    }
    if (from == SIZE_MAX)
        return 0;
    /* lo's device for it: the least queued that can run it */
    size_t to = SIZE_MAX;
    for (size_t q = 0; q < s->d; q++)
        if (h->group[q] == lo && isfinite(synor_cost_time(s->c, task, q)) &&
            (to == SIZE_MAX || h->qest[q] < h->qest[to]))
            to = q;
    double xfer = 0;
    const synor_task *t = synor_workload_task(s->w, task);
    for (size_t k = 0; k < t->n_consumes; k++) {
        const synor_data *dd = synor_workload_data(s->w, t->consumes[k]);
        if (dd->producer >= 0 && s->dev[dd->producer] >= 0) {
            double a = synor_fabric_transfer_time(s->fab, (size_t)s->dev[dd->producer], to,
                                                  (double)dd->bytes);
            xfer = a > xfer ? a : xfer;
        }
    }
    double cost = synor__sim_shp_estimate(s, task, to) + xfer;
    if (!(bh - (bl + cost) > 0))
        return 0;
    heap_remove(s, from, at);
    synor__sim_shp_started(s, task, from);
    double w = synor_cost_time(s->c, task, from);
    s->avail_est[from] -= w; /* no longer expected there */
    if (s->avail_est[from] < s->now)
        s->avail_est[from] = s->now;
    s->dev[task] = (long)to;
    double wt = synor_cost_time(s->c, task, to);
    s->avail_est[to] = (s->avail_est[to] > s->now ? s->avail_est[to] : s->now) + wt;
    synor__sim_rt_queue(s, to, task); /* q_push, its edges and inputs */
    synor__sim_shp_queued(s, task, to);
    got[to] = 1;
    return 1;
}

/* The rounds now, then each device that got a task tries to start. */
static void rebalance_now(sim *s)
{
    unsigned char got[64] = {0};
    size_t d = s->d < sizeof got ? s->d : sizeof got;
    if (s->d > sizeof got) /* more devices than a run fabric has: no rebalancing */
        return;
    for (unsigned r = 0; r < 64 && !s->rc; r++)
        if (!round_once(s, got))
            break;
    for (size_t p = 0; p < d; p++)
        if (got[p])
            synor__sim_try_start(s, p);
}

void synor__sim_shp_rebalance(sim *s)
{
    sim_shp *h = s->shp;
    if (!h || s->rc)
        return;
    if (s->now < h->next) {
        /* not due: a worker left idle by this event polls until SPIN_S;
         * one due by then runs when it falls due */
        if (!h->tick && h->next - s->now <= SPIN_S) {
            h->tick = 1;
            synor__sim_push(s, h->next, EV_REBALANCE, 0);
        }
        return;
    }
    h->next = s->now + h->period;
    rebalance_now(s);
}

void synor__sim_shp_tick(sim *s)
{
    sim_shp *h = s->shp;
    h->tick = 0;
    int idle = 0;
    for (size_t p = 0; p < s->d && !idle; p++)
        idle = s->running[p] == -1;
    if (!idle || s->now < h->next || s->rc) /* every worker busy: none polls */
        return;
    h->next = s->now + h->period;
    rebalance_now(s);
}
