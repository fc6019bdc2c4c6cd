/* lease.c - preemptible capacity (seed 003, PreemptibleCompute).
 *
 * A trade against an interruptible ask creates a lease: the buyer's job
 * runs on capacity the provider may take back. A lease has a term: it ends
 * (LEASE_ENDED, LEASE_TERM) when the bid's duration has run, or at the
 * provider's "available until", whichever comes first (neither: it runs
 * until preempted). A lease is preempted
 *   - by its provider (RECLAIM command), or
 *   - by higher-ranked demand: a bid left unfilled after matching whose
 *     rank is above the lease's. Rank: priority first (255 = on-demand),
 *     then price. So on-demand beats a higher bid beats a lower bid. The
 *     bid's constraints (reputation, zone set, duration) apply to leased
 *     capacity as they do to asks.
 * Only the units needed are preempted: a lease of 10 units of which 4 are
 * taken is split into two records with the same id, 4 warned and 6 running
 * on; the events carry qty (units concerned) and remaining (units of that
 * id still active).
 * Preemption is not immediate: the holder receives a PREEMPTED event
 * carrying the deadline (command time + the warning period) - the job's
 * checkpoint callback - and the market offers replacement capacity at once:
 * an IOC bid for the preempted units at the lease's price on the same
 * resource, only from asks available for the rest of the lease's term. If
 * it fills, a MIGRATED event follows; otherwise the units END at the
 * deadline. Capacity taken from a lease by demand is sold to that bid at the
 * bid's price (a trade whose maker is the provider; maker_id 0 marks capacity
 * that came from a lease rather than a resting ask).
 *
 * Leases are state: they are in the canonical serialization, the hash and
 * snapshots, and they change only through commands, so replay recreates
 * them exactly. m->lease_next (derived, not serialized) is a lower bound on
 * the next end or deadline, so commands that end nothing skip the list. */
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
    /* units of this lease id still running (not warned) after the event */
    int64_t active = 0;
    for (uint32_t i = 0; i < m->n_leases; i++)
        if (m->leases[i].id == l->id && !m->leases[i].deadline)
            active += m->leases[i].qty;
    ev.remaining = active;
    synor__emit(m, &ev);
}

static void note_time(synor_market *m, uint64_t t)
{
    if (t && t < m->lease_next)
        m->lease_next = t;
}

/* Appends a record; returns its index or -1 (out of memory, error set). */
static long lease_push(synor_market *m, const mlease *l)
{
    if (m->n_leases == m->cap_leases) {
        uint32_t cap = m->cap_leases ? m->cap_leases * 2 : 64;
        mlease *v = synor__realloc(m->leases, (size_t)cap * sizeof *v);
        if (!v) {
            synor__error(SYNOR_ENOMEM, "market: out of memory (leases)");
            return -1;
        }
        m->leases = v;
        m->cap_leases = cap;
    }
    m->leases[m->n_leases] = *l;
    note_time(m, l->end);
    note_time(m, l->deadline);
    return (long)m->n_leases++;
}

/* A new lease: the term is the bid's duration, cut at the provider's
 * availability. */
static int lease_new(synor_market *m, uint32_t provider, uint32_t user, uint32_t resource,
                     int64_t price, int64_t qty, uint8_t priority, uint64_t duration,
                     uint64_t avail, uint8_t zone)
{
    mlease l;
    memset(&l, 0, sizeof l);
    l.id = ++m->next_lease;
    l.provider = provider;
    l.user = user;
    l.resource = resource;
    l.price = price;
    l.qty = qty;
    l.priority = priority;
    l.start = m->cur_time;
    l.avail = avail;
    l.zone = zone;
    if (duration)
        l.end = duration > UINT64_MAX - m->cur_time ? UINT64_MAX : m->cur_time + duration;
    if (avail && (!l.end || avail < l.end))
        l.end = avail;
    long i = lease_push(m, &l);
    if (i < 0)
        return SYNOR_ENOMEM;
    lease_event(m, SYNOR_EV_LEASED, &m->leases[i], 0, m->leases[i].end);
    return 0;
}

int synor__lease_add(synor_market *m, const morder *ask, const morder *bid, int64_t price,
                     int64_t qty)
{
    return lease_new(m, ask->owner, bid->owner, ask->resource, price, qty, bid->priority,
                     bid->duration, ask->expires, ask->zone);
}

/* rank(a) < rank(b)? */
static int rank_below(uint8_t pa, int64_t a, uint8_t pb, int64_t b)
{
    return pa != pb ? pa < pb : a < b;
}

/* Warns q units of lease i (splitting the lease when q is less than its
 * qty): PREEMPTED event, then the replacement offer. */
static int preempt(synor_market *m, uint32_t i, int64_t q, int reason)
{
    if (q < m->leases[i].qty) {
        mlease part = m->leases[i];
        part.qty = q;
        m->leases[i].qty -= q;
        long j = lease_push(m, &part);
        if (j < 0)
            return SYNOR_ENOMEM;
        i = (uint32_t)j;
    }
    mlease *l = &m->leases[i];
    uint64_t w = m->cfg.preempt_warning_ns;
    l->deadline = w > UINT64_MAX - m->cur_time ? UINT64_MAX : m->cur_time + w;
    note_time(m, l->deadline);
    lease_event(m, SYNOR_EV_PREEMPTED, l, reason, l->deadline);
    /* replacement: an immediate bid at the lease's price for the warned
     * units, from capacity that lasts the rest of the term */
    int64_t got = 0;
    uint64_t rest = l->end ? l->end - m->cur_time : 0;
    /* A provider reclaiming its capacity does not lease it out again: the
     * replacement comes from other providers (taking the reclaimer's own
     * asks made a reclaim re-lease and reclaim the same units again and
     * again: fuzz_market_journal). Version 1 journals replay as written. */
    uint32_t not_from = reason == SYNOR_REASON_RECLAIMED && !m->legacy ? l->provider + 1 : 0;
    int rc = synor__buy_now(m, l->user, l->resource, l->price, l->qty, l->priority, rest,
                            not_from, &got);
    if (rc)
        return rc;
    l = &m->leases[i]; /* buy_now may have added leases */
    if (got == l->qty) {
        l->migrated = 1;
        lease_event(m, SYNOR_EV_MIGRATED, l, reason, l->deadline);
    }
    return 0;
}

/* A version 1 journal's reclaim may re-lease the reclaimer's own capacity
 * and reclaim it again, a round per lease, each round scanning every lease
 * (fuzz_market_journal: a crafted journal took minutes to recover). The
 * version that wrote such a journal applied the command before writing it,
 * and its reclaims that finished preempted each lease it had at most a few
 * times: one that takes more than LEGACY_ROUNDS_PER_LEASE rounds per lease
 * (plus LEGACY_ROUNDS_BASE) on replay was not written by it, and the
 * replay stops instead of running for days. */
#define LEGACY_ROUNDS_PER_LEASE 4
#define LEGACY_ROUNDS_BASE 1000

int synor__lease_reclaim(synor_market *m, uint32_t provider, uint32_t resource, int64_t qty)
{
    /* lowest-ranked leases of this provider first, exactly qty units */
    long limit = LEGACY_ROUNDS_BASE + LEGACY_ROUNDS_PER_LEASE * (long)m->n_leases;
    for (long rounds = 0; qty > 0; rounds++) {
        if (m->legacy && rounds == limit)
            return synor__error(SYNOR_EPARSE,
                                "a version 1 reclaim that leases its own capacity out and "
                                "reclaims it again more than %ld times: not written by the "
                                "version it claims (that one could not have finished it)",
                                limit);
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
        int64_t q = m->leases[pick].qty < qty ? m->leases[pick].qty : qty;
        qty -= q;
        int rc = preempt(m, (uint32_t)pick, q, SYNOR_REASON_RECLAIMED);
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
                l->provider == bid->owner ||
                !rank_below(l->priority, l->price, bid->priority, bid->price) ||
                !synor__bid_accepts(m, bid->min_rep, bid->zones, bid->duration, l->provider,
                                    l->zone, l->avail))
                continue;
            if (pick < 0 || rank_below(l->priority, l->price, m->leases[pick].priority,
                                       m->leases[pick].price))
                pick = i;
        }
        if (pick < 0)
            return 0;
        const mlease *l = &m->leases[pick];
        int64_t q = l->qty < bid->qty ? l->qty : bid->qty;
        uint32_t provider = l->provider, resource = l->resource;
        uint64_t avail = l->avail;
        uint8_t zone = l->zone;
        int reason = bid->priority == 255 ? SYNOR_REASON_ON_DEMAND : SYNOR_REASON_OUTBID;
        int rc = preempt(m, (uint32_t)pick, q, reason);
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
        if ((rc = lease_new(m, provider, bid->owner, resource, bid->price, q, bid->priority,
                            bid->duration, avail, zone)))
            return rc;
    }
    return 0;
}

void synor__lease_expire(synor_market *m, uint64_t now)
{
    if (now < m->lease_next)
        return;
    uint64_t next = UINT64_MAX;
    uint32_t i = 0;
    while (i < m->n_leases) {
        mlease l = m->leases[i];
        /* whichever comes first: the term's end or the preemption deadline */
        int warned = l.deadline && (!l.end || l.deadline <= l.end);
        uint64_t stop = warned ? l.deadline : l.end;
        if (!stop || stop > now) {
            if (stop && stop < next)
                next = stop;
            i++;
            continue;
        }
        /* removed before the event, so `remaining` counts only the rest;
         * ends are rare next to commands, so a shift is cheap enough */
        memmove(&m->leases[i], &m->leases[i + 1], (m->n_leases - i - 1) * sizeof l);
        m->n_leases--;
        if (!(warned && l.migrated))
            lease_event(m, SYNOR_EV_LEASE_ENDED, &l,
                        warned ? SYNOR_REASON_PREEMPTION_DEADLINE : SYNOR_REASON_LEASE_TERM, stop);
    }
    m->lease_next = next;
}

int synor_market_leases(const synor_market *m, synor_market_lease *out, size_t max, size_t *n)
{
    if (!m || !n || (max && !out))
        return synor__error(SYNOR_EINVAL, "synor_market_leases: NULL argument");
    size_t k = 0;
    for (uint32_t i = 0; i < m->n_leases && k < max; i++, k++) {
        const mlease *l = &m->leases[i];
        out[k].id = l->id;
        out[k].provider = l->provider;
        out[k].holder = l->user;
        out[k].resource = l->resource;
        out[k].price = l->price;
        out[k].qty = l->qty;
        out[k].start = l->start;
        out[k].end = l->end;
        out[k].deadline = l->deadline;
        out[k].priority = l->priority;
        out[k].migrated = l->migrated;
    }
    *n = k;
    return 0;
}

size_t synor_market_lease_count(const synor_market *m) { return m ? m->n_leases : 0; }
