/* lease.c - preemptible capacity (seed 003, PreemptibleCompute).
 *
 * A trade against an interruptible ask creates a lease: the buyer's job
 * runs on capacity the provider may take back. A lease is preempted
 *   - by its provider (RECLAIM command), or
 *   - by higher-ranked demand: a bid left unfilled after matching whose
 *     rank is above the lease's. Rank: priority first (255 = on-demand),
 *     then price. So on-demand beats a higher bid beats a lower bid.
 * Preemption is not immediate: the lease is WARNED, the holder receives a
 * PREEMPTED event carrying the deadline (command time + the warning period)
 * - the job's cue to checkpoint - and the market offers replacement
 * capacity at once: an IOC bid for the lease's quantity at the lease's
 * price on the same resource. If it fills, a MIGRATED event names the new
 * provider; otherwise the lease ENDS at the deadline. The capacity taken
 * from a lease preempted by demand is sold to that bid at the bid's price
 * (a trade whose maker is the lease's provider; maker_id 0 marks capacity
 * that came from a lease rather than a resting ask).
 *
 * Leases are state: they are in the canonical serialization, the hash and
 * snapshots, and they change only through commands, so replay recreates
 * them exactly. */
#include <string.h>

#include "market/market_internal.h"

static void lease_event(synor_market *m, synor_market_event_kind k, const mlease *l, int reason,
                        uint64_t deadline)
{
    if (synor__quiet(m))
        return;
    synor_market_event ev = synor__event(m, k);
    ev.order_id = l->id; /* lease id */
    ev.owner = l->user;
    ev.resource = l->resource;
    ev.side = SYNOR_BID;
    ev.reason = reason;
    ev.price = l->price;
    ev.qty = l->qty;
    ev.maker_owner = l->provider;
    ev.deadline = deadline;
    synor__emit(m, &ev);
}

int synor__lease_add(synor_market *m, uint32_t provider, uint32_t user, uint32_t resource,
                     int64_t price, int64_t qty, uint8_t priority)
{
    if (m->n_leases == m->cap_leases) {
        uint32_t cap = m->cap_leases ? m->cap_leases * 2 : 64;
        mlease *v = synor__realloc(m->leases, (size_t)cap * sizeof *v);
        if (!v)
            return synor__error(SYNOR_ENOMEM, "market: out of memory (leases)");
        m->leases = v;
        m->cap_leases = cap;
    }
    mlease *l = &m->leases[m->n_leases++];
    memset(l, 0, sizeof *l);
    l->id = ++m->next_lease;
    l->provider = provider;
    l->user = user;
    l->resource = resource;
    l->price = price;
    l->qty = qty;
    l->priority = priority;
    lease_event(m, SYNOR_EV_LEASED, l, 0, 0);
    return 0;
}

/* rank(a) < rank(b)? */
static int rank_below(uint8_t pa, int64_t a, uint8_t pb, int64_t b)
{
    return pa != pb ? pa < pb : a < b;
}

/* Warns lease i: PREEMPTED event, then the replacement offer. */
static int preempt(synor_market *m, uint32_t i, int reason)
{
    mlease *l = &m->leases[i];
    l->deadline = m->cur_time + m->cfg.preempt_warning_ns;
    lease_event(m, SYNOR_EV_PREEMPTED, l, reason, l->deadline);
    /* replacement: an immediate bid at the lease's price for its qty */
    int64_t got = 0;
    int rc = synor__buy_now(m, l->user, l->resource, l->price, l->qty, l->priority, &got);
    if (rc)
        return rc;
    l = &m->leases[i]; /* buy_now may have added leases */
    if (got == l->qty) {
        lease_event(m, SYNOR_EV_MIGRATED, l, reason, l->deadline);
        l->migrated = 1;
    }
    return 0;
}

int synor__lease_reclaim(synor_market *m, uint32_t provider, uint32_t resource, int64_t qty)
{
    /* lowest-ranked leases of this provider first */
    while (qty > 0) {
        long pick = -1;
        for (uint32_t i = 0; i < m->n_leases; i++) {
            const mlease *l = &m->leases[i];
            if (l->provider != provider || l->resource != resource || l->deadline)
                continue;
            if (pick < 0 || rank_below(l->priority, l->price, m->leases[pick].priority,
                                       m->leases[pick].price))
                pick = i;
        }
        if (pick < 0)
            break;
        qty -= m->leases[pick].qty;
        int rc = preempt(m, (uint32_t)pick, SYNOR_REASON_RECLAIMED);
        if (rc)
            return rc;
    }
    return 0;
}

int synor__lease_outbid(synor_market *m, morder *bid)
{
    while (bid->qty > 0) {
        long pick = -1;
        for (uint32_t i = 0; i < m->n_leases; i++) {
            const mlease *l = &m->leases[i];
            if (l->resource != bid->resource || l->deadline || l->user == bid->owner ||
                !rank_below(l->priority, l->price, bid->priority, bid->price))
                continue;
            if (pick < 0 || rank_below(l->priority, l->price, m->leases[pick].priority,
                                       m->leases[pick].price))
                pick = i;
        }
        if (pick < 0)
            return 0;
        /* the whole lease is preempted; the bid takes what it needs */
        mlease *l = &m->leases[pick];
        int64_t q = l->qty < bid->qty ? l->qty : bid->qty;
        uint32_t provider = l->provider, resource = l->resource;
        int reason = bid->priority == 255 ? SYNOR_REASON_ON_DEMAND : SYNOR_REASON_OUTBID;
        int rc = preempt(m, (uint32_t)pick, reason);
        if (rc)
            return rc;
        bid->qty -= q;
        synor__record_trade(m, &m->books[resource], bid->price, q);
        if (!synor__quiet(m)) {
            synor_market_event ev = synor__event(m, SYNOR_EV_TRADE);
            ev.order_id = bid->id;
            ev.owner = bid->owner;
            ev.resource = resource;
            ev.side = SYNOR_BID;
            ev.price = bid->price;
            ev.qty = q;
            ev.remaining = bid->qty;
            ev.maker_id = 0;
            ev.maker_owner = provider;
            ev.reason = reason;
            synor__emit(m, &ev);
        }
        if ((rc = synor__lease_add(m, provider, bid->owner, resource, bid->price, q,
                                   bid->priority)))
            return rc;
    }
    return 0;
}

void synor__lease_expire(synor_market *m, uint64_t now)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->n_leases; i++) {
        mlease *l = &m->leases[i];
        if (l->deadline && l->deadline <= now) {
            if (!l->migrated)
                lease_event(m, SYNOR_EV_LEASE_ENDED, l, SYNOR_REASON_PREEMPTION_DEADLINE,
                            l->deadline);
            continue;
        }
        m->leases[k++] = *l;
    }
    m->n_leases = k;
}
