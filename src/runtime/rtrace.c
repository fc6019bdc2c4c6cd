/* rtrace.c - the trace of a real run (cfg.trace = 1): every task attempt and
 * every transfer, with monotonic-clock timestamps, turned into the trace
 * format of synor/sim.h so that the simulator's reports serve real runs.
 * Each worker is a row of the trace ("cpu/0", "cpu/1", "opencl0"): a
 * device with several workers would otherwise show a utilization above
 * 100 %.
 *
 * Each worker appends to its own buffer (no lock on the task path);
 * transfers made by other threads (wait_all's write-back) go to a shared
 * buffer under trace_lock. A record that cannot be stored (out of memory)
 * is counted and the trace says how many were lost. */
#include <stdio.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "sim/trace_internal.h"
#include "synor/fabric.h"

typedef struct synor__trec {
    uint64_t s, e;
    const synor_kernel *k; /* NULL: a transfer */
    uint64_t tag;          /* task tag or id; transfer: data id */
    uint64_t bytes;
    unsigned worker, from, to;
    int ok;
    synor_xfer_path path; /* transfers */
} synor__trec;

typedef struct synor__tbuf {
    synor__trec *v;
    size_t n, cap;
    uint64_t lost;
} synor__tbuf;

static synor__trec *tb_add(synor__tbuf **pb)
{
    synor__tbuf *b = *pb;
    if (!b) {
        b = synor__calloc(1, sizeof *b);
        if (!b)
            return NULL;
        *pb = b;
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        synor__trec *v = synor__realloc(b->v, cap * sizeof *v);
        if (!v) {
            b->lost++;
            return NULL;
        }
        b->v = v;
        b->cap = cap;
    }
    return &b->v[b->n++];
}

void synor__trace_task_rec(synor__worker *w, const synor__task *t, uint64_t s, uint64_t e, int ok)
{
    synor__trec *r = tb_add(&w->trace);
    if (!r)
        return;
    r->s = s;
    r->e = e;
    r->k = t->kernel;
    r->tag = t->tag ? t->tag : t->id;
    r->worker = w->id;
    r->ok = ok;
}

void synor__trace_xfer_rec(synor_runtime *rt, const synor_handle *d, unsigned from, unsigned to,
                           uint64_t bytes, uint64_t s, uint64_t e, synor_xfer_path path)
{
    if (!rt->cfg.trace)
        return;
    synor__worker *w = synor__current_worker(rt);
    if (!w)
        pthread_mutex_lock(&rt->trace_lock);
    synor__trec *r = tb_add(w ? &w->trace : &rt->ext_trace);
    if (r) {
        r->s = s;
        r->e = e;
        r->k = NULL;
        r->tag = d->id;
        r->bytes = bytes;
        r->from = from;
        r->to = to;
        r->path = path;
    }
    if (!w)
        pthread_mutex_unlock(&rt->trace_lock);
}

struct synor__rmark {
    uint64_t s, e;
    unsigned device;
    char name[24];
    char detail[112];
};

void synor__trace_mark_rec(synor_runtime *rt, const char *name, unsigned device, uint64_t s,
                           uint64_t e, const char *detail)
{
    if (!rt->cfg.trace)
        return;
    pthread_mutex_lock(&rt->trace_lock);
    if (rt->n_marks == rt->marks_cap) {
        size_t cap = rt->marks_cap ? rt->marks_cap * 2 : 16;
        struct synor__rmark *v = synor__realloc(rt->marks, cap * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&rt->trace_lock);
            return; /* a lost mark; the run goes on */
        }
        rt->marks = v;
        rt->marks_cap = cap;
    }
    struct synor__rmark *m = &rt->marks[rt->n_marks++];
    m->s = s;
    m->e = e;
    m->device = device;
    synor__strlcpy(m->name, name, sizeof m->name);
    synor__strlcpy(m->detail, detail ? detail : "", sizeof m->detail);
    pthread_mutex_unlock(&rt->trace_lock);
}

static void tb_free(synor__tbuf *b)
{
    if (b) {
        synor__free(b->v);
        synor__free(b);
    }
}

void synor__trace_free(synor_runtime *rt)
{
    for (unsigned i = 0; i < rt->nworkers; i++) {
        tb_free(rt->workers[i].trace);
        rt->workers[i].trace = NULL;
    }
    tb_free(rt->ext_trace);
    rt->ext_trace = NULL;
    synor__free(rt->marks);
    rt->marks = NULL;
    rt->n_marks = rt->marks_cap = 0;
}

/* The first worker of the device whose memory is node k. */
static unsigned node_worker(const synor_runtime *rt, unsigned k)
{
    for (unsigned i = 0; i < rt->ndevices; i++)
        if (rt->devices[i].node == k)
            return rt->devices[i].first_worker;
    return 0;
}

static const char *policy_name(synor_place_policy p)
{
    switch (p) {
    case SYNOR_PLACE_LOAD: return "load";
    case SYNOR_PLACE_ENERGY: return "energy";
    case SYNOR_PLACE_MONEY: return "money";
    case SYNOR_PLACE_MIX: return "mix";
    default: return "earliest-finish";
    }
}

static int add_records(synor_runtime *rt, synor__trace *tr, const synor__tbuf *b, uint64_t t0,
                       double *end)
{
    if (!b)
        return 0;
    char buf[160];
    for (size_t i = 0; i < b->n; i++) {
        const synor__trec *r = &b->v[i];
        double s = (double)(r->s - t0) * 1e-9, e = (double)(r->e - t0) * 1e-9;
        if (e > *end)
            *end = e;
        if (r->k) {
            synor_trace_task *k = synor__trace_add_task(tr);
            if (!k)
                return SYNOR_ENOMEM;
            const char *name = r->k->name ? r->k->name : "task";
            snprintf(buf, sizeof buf, "%s#%llu", name, (unsigned long long)r->tag);
            k->id = synor__trace_str(tr, buf);
            snprintf(buf, sizeof buf, "%s%s", name, r->ok ? "" : " (failed)");
            k->op = synor__trace_str(tr, buf);
            if (!k->id || !k->op)
                return SYNOR_ENOMEM;
            k->device = r->worker;
            k->start = s;
            k->end = e;
            k->energy = rt->workers[r->worker].dev->watts * (e - s);
        } else {
            synor_trace_transfer *x = synor__trace_add_transfer(tr);
            if (!x)
                return SYNOR_ENOMEM;
            snprintf(buf, sizeof buf, "data%llu", (unsigned long long)r->tag);
            x->data = synor__trace_str(tr, buf);
            snprintf(buf, sizeof buf, "%s->%s", rt->nodes[r->from].name, rt->nodes[r->to].name);
            x->link = synor__trace_str(tr, buf);
            x->path = synor__trace_str(tr, synor_xfer_path_name(r->path));
            if (!x->data || !x->link || !x->path)
                return SYNOR_ENOMEM;
            x->from_dev = node_worker(rt, r->from);
            x->to_dev = node_worker(rt, r->to);
            x->bytes = r->bytes;
            x->start = s;
            x->end = e;
        }
    }
    return 0;
}

int synor_runtime_trace(synor_runtime *rt, const char *workload, synor_trace **out)
{
    if (!rt || !out)
        return synor__error(SYNOR_EINVAL, "synor_runtime_trace: NULL argument");
    *out = NULL;
    if (!rt->cfg.trace)
        return synor__error(SYNOR_ESTATE,
                            "synor_runtime_trace: the runtime was created without cfg.trace = 1");
    synor__trace *tr = synor__trace_new();
    if (!tr || synor__trace_devices(tr, rt->nworkers) < 0) {
        synor_trace_destroy(tr ? &tr->t : NULL);
        return synor__error(SYNOR_ENOMEM, "synor_runtime_trace: out of memory");
    }
    /* Time origin: the first record, so that a runtime started long before
     * its work does not show idle time. */
    uint64_t t0 = UINT64_MAX, lost = 0;
    pthread_mutex_lock(&rt->trace_lock);
    for (unsigned i = 0; i <= rt->nworkers; i++) {
        const synor__tbuf *b = i < rt->nworkers ? rt->workers[i].trace : rt->ext_trace;
        if (!b)
            continue;
        lost += b->lost;
        for (size_t j = 0; j < b->n; j++)
            if (b->v[j].s < t0)
                t0 = b->v[j].s;
    }
    for (size_t j = 0; j < rt->n_marks; j++)
        if (rt->marks[j].s < t0)
            t0 = rt->marks[j].s;
    if (t0 == UINT64_MAX)
        t0 = rt->t0_ns;
    int rc = 0;
    double end = 0;
    for (unsigned i = 0; i < rt->nworkers && rc == 0; i++) {
        const synor__device *d = rt->workers[i].dev;
        synor_trace_device *td = &tr->dev[i];
        char name[80];
        if (d->nworkers > 1)
            snprintf(name, sizeof name, "%s/%u", d->name, i - d->first_worker);
        else
            snprintf(name, sizeof name, "%s", d->name);
        td->name = synor__trace_str(tr, name);
        td->product = synor__trace_str(tr, d->product);
        td->kind = synor__trace_str(tr, synor_kind_name(d->kind));
        synor_runtime_device_info info;
        (void)synor_runtime_device_get(rt, d->index, &info);
        td->backend = synor__trace_str(tr, info.backend);
        td->simulated = 0;
        td->idle_watts = 0;
        td->price_micro = d->price_micro_hour;
        if (!td->name || !td->product || !td->kind || !td->backend)
            rc = SYNOR_ENOMEM;
    }
    for (unsigned i = 0; i <= rt->nworkers && rc == 0; i++)
        rc = add_records(rt, tr, i < rt->nworkers ? rt->workers[i].trace : rt->ext_trace, t0, &end);
    for (size_t j = 0; j < rt->n_marks && rc == 0; j++) {
        const struct synor__rmark *m = &rt->marks[j];
        double ms = (double)(m->s - t0) * 1e-9, me = (double)(m->e - t0) * 1e-9;
        end = me > end ? me : end;
        if (!synor__trace_add_mark(tr, m->name, rt->devices[m->device].first_worker, ms, me,
                                   m->detail))
            rc = SYNOR_ENOMEM;
    }
    pthread_mutex_unlock(&rt->trace_lock);
    char strat[64];
    snprintf(strat, sizeof strat, "%s%s", policy_name(rt->cfg.policy),
             lost ? " (records lost: out of memory)" : "");
    tr->t.workload = synor__trace_str(tr, workload ? workload : "run");
    tr->t.fabric = synor__trace_str(tr, "this machine");
    tr->t.strategy = synor__trace_str(tr, strat);
    tr->t.currency = synor__trace_str(tr, "USD");
    if (rc == 0 && (!tr->t.workload || !tr->t.fabric || !tr->t.strategy || !tr->t.currency))
        rc = SYNOR_ENOMEM;
    if (rc == 0)
        rc = synor__trace_sort(tr);
    if (rc < 0) {
        synor_trace_destroy(&tr->t);
        return synor__error(SYNOR_ENOMEM, "synor_runtime_trace: out of memory");
    }
    tr->t.makespan = end;
    for (size_t i = 0; i < tr->t.n_tasks; i++)
        tr->t.energy_active += tr->t.tasks[i].energy;
    /* No power counters are read: energy is known only from configured
     * watts (synor_runtime_device_set_rates), money only from configured
     * prices, each for the busy time or the makespan as in a simulation;
     * otherwise the trace says "not measured" rather than 0. */
    int watts = 0, priced = 0;
    for (unsigned i = 0; i < rt->ndevices; i++) {
        watts |= rt->devices[i].watts > 0;
        priced |= rt->devices[i].price_micro_hour > 0;
    }
    tr->t.energy_basis = watts ? SYNOR_BASIS_RATED : SYNOR_BASIS_NONE;
    tr->t.money_basis = priced ? SYNOR_BASIS_RATED : SYNOR_BASIS_NONE;
    for (unsigned i = 0; priced && i < rt->ndevices; i++) { /* per device, not per worker */
        const synor__device *d = &rt->devices[i];
        int used = 0;
        for (size_t k = 0; k < tr->t.n_tasks && !used; k++)
            used = rt->workers[tr->t.tasks[k].device].dev == d;
        if (used)
            tr->t.money_micro = synor_money_add(
                tr->t.money_micro, synor_money_for_seconds(d->price_micro_hour, end));
    }
    tr->t.events = tr->t.n_tasks + tr->t.n_transfers;
    *out = &tr->t;
    return 0;
}
