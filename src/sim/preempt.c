/* preempt.c - simulated preemptions (synor_simulate_preempt, synor/sim.h):
 * the warning, the job's checkpoint on the device, and at the deadline the
 * device leaving the fabric (its running task cut and re-run elsewhere) or
 * staying because replacement capacity was obtained - each a mark in the
 * trace - and the money and idle time of devices held for part of the run.
 *
 * Invariants: a device that is leaving takes no new task (assign skips
 * it) and has an empty queue once its warning has been handled; a gone
 * device never runs anything again; a task's end event carries its run's
 * version (tver), so the end of a cut run is ignored. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "sim/sim_internal.h"
#include "synor/fabric.h"

static int bad(size_t k, const char *field, const char *why, double v)
{
    return synor__error(SYNOR_EINVAL, "preemption %zu: %s %.17g: %s", k, field, v, why);
}

static int validate(const sim *s, const synor_sim_preemption *pre, size_t n)
{
    if (n > SYNOR_SIM_MAX_PREEMPTIONS)
        return synor__error(SYNOR_EINVAL, "%zu preemptions: at most %d", n,
                            SYNOR_SIM_MAX_PREEMPTIONS);
    if (n && !pre)
        return synor__error(SYNOR_EINVAL, "preemptions: NULL array");
    for (size_t k = 0; k < n; k++) {
        const synor_sim_preemption *x = &pre[k];
        if (x->device >= s->d)
            return synor__error(SYNOR_EINVAL, "preemption %zu: device %zu (fabric \"%s\" has %zu)",
                                k, x->device, synor_fabric_name(s->fab), s->d);
        if (!(x->at >= 0) || !isfinite(x->at))
            return bad(k, "at", "must be a finite time >= 0 s", x->at);
        if (!(x->warning > 0) || !isfinite(x->warning))
            return bad(k, "warning", "must be finite and > 0 s", x->warning);
        if (!isfinite(x->checkpoint))
            return bad(k, "checkpoint", "must be finite", x->checkpoint);
        if (x->checkpoint < 0 && (!(x->checkpoint_bw > 0) || !isfinite(x->checkpoint_bw)))
            return bad(k, "checkpoint_bw", "a checkpoint by size needs a bandwidth > 0 B/s",
                       x->checkpoint_bw);
        if (x->replacement_price_micro < 0)
            return bad(k, "replacement_price_micro", "must be >= 0",
                       (double)x->replacement_price_micro);
        for (size_t q = k + 1; q < n; q++) {
            const synor_sim_preemption *y = &pre[q];
            if (y->device != x->device)
                continue;
            const synor_sim_preemption *a = y->at < x->at ? y : x, *b = a == x ? y : x;
            int overlap = b->at <= a->at + a->warning;
            if (overlap || !a->replaced)
                return synor__error(SYNOR_EINVAL, "preemptions %zu and %zu of device \"%s\": %s", k,
                                    q, synor_fabric_device_at(s->fab, x->device)->name,
                                    overlap ? "the later one comes before the earlier one's "
                                              "deadline"
                                            : "the earlier one is not replaced: the device has "
                                              "left");
        }
    }
    return 0;
}

int synor__sim_preempt_setup(sim *s, const synor_sim_preemption *pre, size_t n)
{
    int rc = validate(s, pre, n);
    if (rc || !n)
        return rc;
    size_t n1 = s->n ? s->n : 1;
    s->pre = pre;
    s->n_pre = n;
    s->tver = synor__calloc(n1, sizeof *s->tver);
    s->leaving = synor__calloc(s->d, 1);
    s->gone = synor__calloc(s->d, 1);
    s->ckpt_due = synor__calloc(s->d, sizeof *s->ckpt_due);
    s->ckpt_t0 = synor__calloc(s->d, sizeof *s->ckpt_t0);
    s->held = synor__calloc(s->d, sizeof *s->held);
    s->since = synor__calloc(s->d, sizeof *s->since);
    s->price_now = synor__calloc(s->d, sizeof *s->price_now);
    s->money = synor__calloc(s->d, sizeof *s->money);
    if (!s->tver || !s->leaving || !s->gone || !s->ckpt_due || !s->ckpt_t0 || !s->held ||
        !s->since || !s->price_now || !s->money)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t p = 0; p < s->d; p++)
        s->price_now[p] = synor_fabric_device_at(s->fab, p)->price_micro;
    for (size_t k = 0; k < n; k++)
        synor__sim_push(s, pre[k].at, EV_PREEMPT, k);
    return s->rc;
}

void synor__sim_preempt_teardown(sim *s)
{
    synor__free(s->tver);
    synor__free(s->leaving);
    synor__free(s->gone);
    synor__free(s->ckpt_due);
    synor__free(s->ckpt_t0);
    synor__free(s->held);
    synor__free(s->since);
    synor__free(s->price_now);
    synor__free(s->money);
}

static void mark(sim *s, const char *name, size_t p, double a, double b, const char *detail)
{
    if (!s->rc && !synor__trace_add_mark(s->tr, name, p, a, b, detail))
        s->rc = synor__error(SYNOR_ENOMEM, "out of memory");
}

/* Bytes of task output valid in p's memory space: what a checkpoint saves. */
static uint64_t bytes_held(const sim *s, size_t p)
{
    size_t sp = synor_fabric_device_at(s->fab, p)->space;
    uint64_t b = 0;
    for (size_t di = 0; di < s->nd; di++) {
        const synor_data *dd = synor_workload_data(s->w, di);
        if (dd->producer >= 0 && s->loc[di * s->S + sp] == LOC_PRESENT)
            b += dd->bytes;
    }
    return b;
}

/* Moves the tasks queued on p to other devices (dynamic placement). */
static void move_queue(sim *s, size_t p)
{
    size_t n = s->qn[p] - s->qhead[p];
    if (!n)
        return;
    size_t *tmp = synor__malloc(n * sizeof *tmp);
    if (!tmp) {
        s->rc = synor__error(SYNOR_ENOMEM, "out of memory");
        return;
    }
    memcpy(tmp, s->queue[p] + s->qhead[p], n * sizeof *tmp);
    s->qn[p] = s->qhead[p] = 0;
    s->avail_est[p] = s->now;
    for (size_t k = 0; k < n && !s->rc; k++)
        synor__sim_replace(s, tmp[k]);
    synor__free(tmp);
}

void synor__sim_checkpoint_start(sim *s, size_t p)
{
    size_t k = s->ckpt_due[p] - 1;
    const synor_sim_preemption *x = &s->pre[k];
    s->ckpt_due[p] = 0;
    uint64_t bytes = bytes_held(s, p);
    double cost = x->checkpoint >= 0 ? x->checkpoint : (double)bytes / x->checkpoint_bw;
    double deadline = x->at + x->warning, end = s->now + cost;
    int cut = end > deadline;
    if (cut)
        end = deadline;
    char detail[160];
    if (x->checkpoint >= 0)
        snprintf(detail, sizeof detail, "%.6f s as stated%s", cost,
                 cut ? "; cut at the deadline" : "");
    else
        snprintf(detail, sizeof detail, "%llu bytes of task output at %.6g B/s%s",
                 (unsigned long long)bytes, x->checkpoint_bw, cut ? "; cut at the deadline" : "");
    mark(s, "checkpoint", p, s->now, end, detail);
    s->running[p] = SIM_CHECKPOINT;
    s->ckpt_t0[p] = s->now;
    if (s->avail_est[p] < end)
        s->avail_est[p] = end; /* placement sees the device busy until then */
    synor__sim_push(s, end, EV_CKPT_END, p);
}

static void money_until(sim *s, size_t p, double t)
{
    s->money[p] =
        synor_money_add(s->money[p], synor_money_for_seconds(s->price_now[p], t - s->since[p]));
    s->since[p] = t;
}

static void warn(sim *s, size_t k)
{
    const synor_sim_preemption *x = &s->pre[k];
    size_t p = x->device;
    if (s->gone[p])
        return;
    char detail[160];
    double deadline = x->at + x->warning;
    if (x->replaced)
        snprintf(detail, sizeof detail,
                 "deadline %.6f s; replacement capacity obtained: the device stays", deadline);
    else
        snprintf(detail, sizeof detail, "deadline %.6f s; no replacement: the device leaves then",
                 deadline);
    mark(s, "preempted", p, s->now, s->now, detail);
    if (!x->replaced) {
        s->leaving[p] = 1;
        for (size_t g = 0; s->gdev && g < synor_workload_group_count(s->w); g++)
            if (s->gdev[g] == p)
                s->gdev[g] = SIZE_MAX; /* its next task picks a device anew */
        if (s->gcount)
            s->gcount[p] = 0;
        move_queue(s, p);
    }
    s->ckpt_due[p] = k + 1;
    synor__sim_push(s, deadline, EV_DEADLINE, k);
    synor__sim_try_start(s, p);
}

static void deadline(sim *s, size_t k)
{
    const synor_sim_preemption *x = &s->pre[k];
    size_t p = x->device;
    if (s->gone[p])
        return;
    s->ckpt_due[p] = 0; /* a checkpoint that could not start in time */
    char detail[160];
    if (x->replaced) {
        int64_t price = x->replacement_price_micro ? x->replacement_price_micro : s->price_now[p];
        money_until(s, p, s->now);
        s->price_now[p] = price;
        snprintf(detail, sizeof detail, "replacement at %lld micro-units per hour",
                 (long long)price);
        mark(s, "replaced", p, s->now, s->now, detail);
        return;
    }
    if (s->running[p] == SIM_CHECKPOINT) {
        s->busy[p] += s->now - s->ckpt_t0[p];
        s->running[p] = -1;
    } else if (s->running[p] >= 0) { /* cut: it re-runs from the start elsewhere */
        size_t i = (size_t)s->running[p];
        const synor_task *t = synor_workload_task(s->w, i);
        s->busy[p] += s->now - s->tstart[i];
        s->tver[i]++;
        s->running[p] = -1;
        synor__sim_share_changed(s);
        snprintf(detail, sizeof detail, "task \"%s\" cut at the deadline; it runs again elsewhere",
                 t->id);
        mark(s, "aborted", p, s->tstart[i], s->now, detail);
        s->gone[p] = 1;
        synor__sim_replace(s, i);
    }
    s->gone[p] = 1;
    s->leaving[p] = 1;
    money_until(s, p, s->now);
    s->held[p] = s->now;
    mark(s, "device stopped", p, s->now, s->now, "preempted: the warning period ended");
    move_queue(s, p);
}

void synor__sim_preempt_event(sim *s, int type, size_t a)
{
    if (type == EV_PREEMPT)
        warn(s, a);
    else if (type == EV_DEADLINE)
        deadline(s, a);
    else if (s->running[a] == SIM_CHECKPOINT) { /* EV_CKPT_END, not cut by the deadline */
        s->busy[a] += s->now - s->ckpt_t0[a];
        s->running[a] = -1;
        synor__sim_try_start(s, a);
    }
}

void synor__sim_preempt_finish(sim *s)
{
    for (size_t p = 0; p < s->d; p++)
        if (!s->gone[p]) {
            money_until(s, p, s->now);
            s->held[p] = s->now;
        }
}
