/* leasejob.c - the job's side of preemptible capacity (synor/leasejob.h):
 * market events about the leases a job holds become preemption notices on
 * its devices, replacement bids at the current ask within the job's limit,
 * and a graceful end when no device is left.
 *
 * State: units (one per device bound: the lease it belongs to, 0 for
 * capacity bought from an ask that is not interruptible, and its state)
 * and groups (one per PREEMPTED event of a held lease: the outcome). While
 * a replacement is being bought - the market's own, right after its
 * PREEMPTED event, or the job's IOC bid in step - `cur` names the group:
 * the holder's TRADE events of that buy (order id 0 for the market's, the
 * bid's id for the job's) cover its warned units in order, and a LEASED
 * event that follows a trade binds the units it covered to the new lease.
 * Everything is driven by the events, so the job's view is the market's
 * own account of what was bought. */
#include <string.h>

#include "common/common.h"
#include "synor/leasejob.h"

enum { U_ACTIVE = 0, U_WARNED = 1, U_LEAVING = 2, U_GONE = 3 };

typedef struct unit {
    uint64_t lease;
    unsigned device;
    int state;
} unit;

typedef struct group {
    synor_leasejob_outcome o;
    size_t *u;      /* indices into units, warned order */
    size_t bind_at; /* units [bind_at, o.replaced) came with the last trade */
    int migrated;   /* the market's MIGRATED event */
    int acted;      /* step has decided */
    int job_bought; /* some units from the job's own bids */
} group;

struct synor_leasejob {
    synor_leasejob_config cfg;
    unit *u;
    size_t nu, capu;
    group *g;
    size_t ng, capg;
    long cur;           /* group under replacement, -1 = none */
    uint64_t cur_order; /* the job's bid being placed (0: the market's buy) */
    uint64_t next_id;
    int in_step, ended;
};

const char *synor_leasejob_outcome_name(int kind)
{
    static const char *const n[] = {"warned", "migrated", "replaced", "stopped", "partial"};
    return kind >= 0 && kind < (int)SYNOR__ARRAY_LEN(n) ? n[kind] : NULL;
}

int synor_leasejob_create(const synor_leasejob_config *cfg, synor_leasejob **out)
{
    if (!cfg || !out)
        return synor__error(SYNOR_EINVAL, "synor_leasejob_create: NULL argument");
    if (cfg->max_price < 0 || cfg->max_price > (((int64_t)1 << 53) - 1))
        return synor__error(SYNOR_EINVAL,
                            "synor_leasejob_create: max_price %lld ticks (0 to 2^53 - 1)",
                            (long long)cfg->max_price);
    if (!cfg->first_order_id)
        return synor__error(SYNOR_EINVAL, "synor_leasejob_create: first_order_id 0 (must be > 0)");
    synor_leasejob *j = synor__calloc(1, sizeof *j);
    if (!j)
        return synor__error(SYNOR_ENOMEM, "synor_leasejob_create: out of memory");
    j->cfg = *cfg;
    j->cur = -1;
    j->next_id = cfg->first_order_id;
    *out = j;
    return 0;
}

void synor_leasejob_destroy(synor_leasejob *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->ng; i++)
        synor__free(j->g[i].u);
    synor__free(j->g);
    synor__free(j->u);
    synor__free(j);
}

int synor_leasejob_hold(synor_leasejob *j, uint64_t lease_id, const unsigned *devices, size_t units)
{
    if (!j || !devices || !lease_id || !units || units > SYNOR_LEASEJOB_MAX_UNITS)
        return synor__error(SYNOR_EINVAL,
                            "synor_leasejob_hold: lease %llu, %zu units (1..%d, a lease id > 0)",
                            (unsigned long long)lease_id, units, SYNOR_LEASEJOB_MAX_UNITS);
    for (size_t k = 0; k < units; k++)
        for (size_t i = 0; i < j->nu; i++)
            if (j->u[i].device == devices[k] && j->u[i].state != U_GONE)
                return synor__error(SYNOR_EINVAL,
                                    "synor_leasejob_hold: device %u is already bound (lease %llu)",
                                    devices[k], (unsigned long long)j->u[i].lease);
    if (j->nu + units > j->capu) {
        size_t cap = j->capu ? j->capu * 2 : 16;
        while (cap < j->nu + units)
            cap *= 2;
        unit *v = synor__realloc(j->u, cap * sizeof *v);
        if (!v)
            return synor__error(SYNOR_ENOMEM, "synor_leasejob_hold: out of memory");
        j->u = v;
        j->capu = cap;
    }
    for (size_t k = 0; k < units; k++)
        j->u[j->nu++] = (unit){lease_id, devices[k], U_ACTIVE};
    return 0;
}

static void note_error(group *g, int rc)
{
    if (rc < 0 && !g->o.error)
        g->o.error = rc;
}

static void on_preempted(synor_leasejob *j, const synor_market_event *ev)
{
    size_t pick[SYNOR_LEASEJOB_MAX_UNITS], n = 0;
    for (size_t i = j->nu; i-- > 0 && (int64_t)n < ev->qty && n < SYNOR_LEASEJOB_MAX_UNITS;)
        if (j->u[i].lease == ev->order_id && j->u[i].state == U_ACTIVE)
            pick[n++] = i;
    if (!n)
        return; /* not a lease this job bound */
    if (j->ng == j->capg) {
        size_t cap = j->capg ? j->capg * 2 : 8;
        group *v = synor__realloc(j->g, cap * sizeof *v);
        if (!v)
            return; /* out of memory: the devices stop at the deadline as the market
                       says */
        j->g = v;
        j->capg = cap;
    }
    group *g = &j->g[j->ng];
    memset(g, 0, sizeof *g);
    if (!(g->u = synor__malloc(n * sizeof *g->u)))
        return;
    j->ng++;
    g->o.lease_id = ev->order_id;
    g->o.resource = ev->resource;
    g->o.time = ev->time;
    g->o.deadline = ev->deadline;
    g->o.units = (int64_t)n;
    g->o.lease_price = ev->price;
    g->o.kind = SYNOR_LEASEJOB_WARNED;
    uint64_t warning = ev->deadline > ev->time ? ev->deadline - ev->time : 0;
    for (size_t k = 0; k < n; k++) {
        unit *u = &j->u[pick[k]];
        g->u[k] = pick[k];
        u->state = U_WARNED;
        if (k < SYNOR__ARRAY_LEN(g->o.devices))
            g->o.devices[k] = u->device;
        if (j->cfg.ops.preempt)
            note_error(g, j->cfg.ops.preempt(j->cfg.ops.user, u->device, warning));
    }
    j->cur = (long)(j->ng - 1);
    j->cur_order = 0; /* the market's replacement buy follows at once */
}

/* A trade of the buy under way covers the next warned units of `cur`. */
static void on_trade(synor_leasejob *j, const synor_market_event *ev)
{
    group *g = &j->g[j->cur];
    int64_t q = ev->qty < g->o.units - g->o.replaced ? ev->qty : g->o.units - g->o.replaced;
    g->bind_at = (size_t)g->o.replaced;
    for (int64_t k = 0; k < q; k++)
        j->u[g->u[g->o.replaced + k]].lease = 0; /* not interruptible unless LEASED follows */
    g->o.replaced += q;
    if (j->in_step && q > 0) {
        g->job_bought = 1;
        if (ev->price > g->o.paid_max)
            g->o.paid_max = ev->price;
    }
}

void synor_leasejob_on_event(const synor_market_event *ev, void *job)
{
    synor_leasejob *j = job;
    if (!j || !ev || ev->owner != j->cfg.holder)
        return;
    switch (ev->kind) {
    case SYNOR_EV_PREEMPTED:
        if (!j->in_step) /* the job's own bids never preempt its own leases */
            on_preempted(j, ev);
        break;
    case SYNOR_EV_TRADE:
        if (j->cur >= 0 && ev->side == SYNOR_BID && ev->order_id == j->cur_order)
            on_trade(j, ev);
        break;
    case SYNOR_EV_LEASED:
        if (j->cur >= 0) { /* the units the last trade covered now run on this lease */
            group *g = &j->g[j->cur];
            for (size_t k = g->bind_at; k < (size_t)g->o.replaced; k++)
                j->u[g->u[k]].lease = ev->order_id;
            g->bind_at = (size_t)g->o.replaced;
        }
        break;
    case SYNOR_EV_MIGRATED:
        for (size_t i = j->ng; i-- > 0;)
            if (j->g[i].o.lease_id == ev->order_id && !j->g[i].acted) {
                j->g[i].migrated = 1;
                break;
            }
        break;
    case SYNOR_EV_LEASE_ENDED: {
        /* Deadline: the warned units not replaced are gone. Term: the
         * lease's units end (the job planned for that). */
        int64_t left = ev->qty;
        for (size_t i = 0; i < j->nu && left > 0; i++) {
            unit *u = &j->u[i];
            if (u->lease != ev->order_id || u->state == U_GONE)
                continue;
            if (ev->reason == SYNOR_REASON_PREEMPTION_DEADLINE && u->state == U_ACTIVE)
                continue;
            u->state = U_GONE;
            left--;
        }
        break;
    }
    default: break;
    }
}

/* The end of the lease's term (0 = none), from the market's lease list. */
static uint64_t lease_end(const synor_market *m, uint64_t id)
{
    size_t n = synor_market_lease_count(m), got = 0;
    synor_market_lease *v = synor__malloc((n ? n : 1) * sizeof *v);
    uint64_t end = 0;
    if (v && synor_market_leases(m, v, n, &got) == 0)
        for (size_t i = 0; i < got; i++)
            if (v[i].id == id) {
                end = v[i].end;
                break;
            }
    synor__free(v);
    return end;
}

/* The job's replacement: IOC bids at the best ask while it is within the
 * limit and units remain uncovered (one price level per round). */
static int buy_replacement(synor_leasejob *j, synor_market *m, size_t gi)
{
    group *g = &j->g[gi];
    uint64_t end = lease_end(m, g->o.lease_id), now = synor_market_time(m);
    if (end && end <= now)
        return 0; /* the term is over: nothing to replace */
    for (int round = 0; round < 8 && g->o.replaced < g->o.units; round++) {
        synor_market_prices p;
        if (synor_market_prices_get(m, g->o.resource, &p) != 0 || !p.has_ask)
            break;
        if (!g->o.best_ask)
            g->o.best_ask = p.best_ask;
        if (p.best_ask > j->cfg.max_price)
            break;
        synor_market_cmd c;
        memset(&c, 0, sizeof c);
        c.kind = SYNOR_CMD_PLACE;
        c.time = now;
        c.order_id = j->next_id++;
        c.owner = j->cfg.holder;
        c.resource = g->o.resource;
        c.side = SYNOR_BID;
        c.type = SYNOR_LIMIT;
        c.tif = SYNOR_IOC;
        c.price = p.best_ask;
        c.qty = g->o.units - g->o.replaced;
        c.duration = end ? end - now : 0;
        int64_t before = g->o.replaced;
        j->cur = (long)gi;
        j->cur_order = c.order_id;
        int rc = synor_market_submit(m, &c);
        j->cur = -1;
        g = &j->g[gi];
        if (rc < 0)
            return rc;
        if (g->o.replaced == before)
            break; /* nothing eligible at that price (term, reputation): stop trying
                    */
    }
    return 0;
}

size_t synor_leasejob_devices_left(const synor_leasejob *j)
{
    size_t n = 0;
    for (size_t i = 0; j && i < j->nu; i++)
        n += j->u[i].state == U_ACTIVE || j->u[i].state == U_WARNED;
    return n;
}

int synor_leasejob_step(synor_leasejob *j, synor_market *m)
{
    if (!j || !m)
        return synor__error(SYNOR_EINVAL, "synor_leasejob_step: NULL argument");
    int rc = 0;
    j->cur = -1;
    j->in_step = 1;
    for (size_t gi = 0; gi < j->ng && rc == 0; gi++) {
        if (j->g[gi].acted)
            continue;
        if (j->g[gi].migrated)
            j->g[gi].o.replaced = j->g[gi].o.units;
        if (j->g[gi].o.replaced < j->g[gi].o.units && j->cfg.max_price > 0)
            rc = buy_replacement(j, m, gi);
        group *g = &j->g[gi];
        for (int64_t k = 0; k < g->o.units; k++) {
            unit *u = &j->u[g->u[k]];
            if (u->state != U_WARNED)
                continue; /* its lease's term ended meanwhile */
            if (k < g->o.replaced) {
                u->state = U_ACTIVE;
                if (j->cfg.ops.cancel)
                    note_error(g, j->cfg.ops.cancel(j->cfg.ops.user, u->device));
            } else {
                u->state = U_LEAVING;
            }
        }
        g->o.kind = g->o.replaced == 0           ? SYNOR_LEASEJOB_STOPPED
                    : g->o.replaced < g->o.units ? SYNOR_LEASEJOB_PARTIAL
                    : g->job_bought              ? SYNOR_LEASEJOB_REPLACED
                                                 : SYNOR_LEASEJOB_MIGRATED;
        g->acted = 1;
    }
    j->in_step = 0;
    j->cur = -1;
    if (rc == 0 && !j->ended && j->nu && synor_leasejob_devices_left(j) == 0) {
        j->ended = 1;
        if (j->cfg.ops.end)
            j->cfg.ops.end(j->cfg.ops.user);
    }
    return rc;
}

size_t synor_leasejob_outcomes(const synor_leasejob *j, synor_leasejob_outcome *out, size_t max)
{
    for (size_t i = 0; j && out && i < j->ng && i < max; i++)
        out[i] = j->g[i].o;
    return j ? j->ng : 0;
}

int synor_leasejob_ended(const synor_leasejob *j) { return j ? j->ended : 0; }

/* ------------------------------------------------------------ the runtime */

static int rt_preempt(void *user, unsigned device, uint64_t warning_ns)
{
    return synor_runtime_preempt(user, device, warning_ns);
}

static int rt_cancel(void *user, unsigned device)
{
    return synor_runtime_preempt_cancel(user, device);
}

void synor_leasejob_runtime_ops(synor_runtime *rt, synor_leasejob_ops *ops)
{
    if (!ops)
        return;
    memset(ops, 0, sizeof *ops);
    ops->preempt = rt_preempt;
    ops->cancel = rt_cancel;
    ops->user = rt;
}
