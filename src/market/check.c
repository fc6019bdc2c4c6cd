/* check.c - the market's invariants, checked from outside the hot path.
 *
 * synor__market_invariants() walks the whole state and reports the first
 * broken invariant. Tests call it after every command of their random
 * streams (and fuzz harnesses after every input); recovery calls it once a
 * snapshot is restored, so that a snapshot whose CRC is valid but whose
 * contents are not is refused. It allocates only a sorted copy of the
 * expiry heap, never changes the market, and costs O(n log n). */
#include <stdlib.h>
#include <string.h>

#include "market/market_internal.h"

static int cmp_expiry(const void *a, const void *b)
{
    const mexpiry *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

#define BAD(...) return synor__error(SYNOR_ESTATE, "market invariant: " __VA_ARGS__)

/* One order as it sits in level li of side s of book r. */
static int check_order(const synor_market *m, uint32_t r, int s, const mlevel *L, uint32_t h)
{
    const morder *o = &m->pool[h];
    if (o->id == 0)
        BAD("book %u side %d: handle %u in a level has id 0 (a freed record)", r, s, h);
    if (o->resource != r || o->side != s)
        BAD("order %llu is in book %u side %d but says book %u side %u",
            (unsigned long long)o->id, r, s, o->resource, o->side);
    if (o->price != L->price)
        BAD("order %llu has price %lld in the level of %lld", (unsigned long long)o->id,
            (long long)o->price, (long long)L->price);
    if (o->qty < 1 || o->qty > SYNOR__MAX_QTY)
        BAD("order %llu has quantity %lld", (unsigned long long)o->id, (long long)o->qty);
    if (o->owner >= m->n_owners || o->zone > m->n_zones || o->min_rep > 100 ||
        (o->zones & ~(((uint64_t)2 << m->n_zones) - 2)))
        BAD("order %llu has an owner, zone, zone set or minimum reputation out of range",
            (unsigned long long)o->id);
    if (synor__map_get(m, o->id) != h)
        BAD("order %llu is not found under its id", (unsigned long long)o->id);
    return 0;
}

static int check_side(const synor_market *m, uint32_t r, int s, uint64_t *orders)
{
    const mside *sd = &m->books[r].side[s];
    uint32_t empty = 0;
    if (sd->n > sd->cap)
        BAD("book %u side %d: %u levels in an array of %u", r, s, sd->n, sd->cap);
    for (uint32_t l = 0; l < sd->n; l++) {
        const mlevel *L = &sd->v[l];
        if (L->price < 1 || L->price > SYNOR__MAX_PRICE)
            BAD("book %u side %d: a level at price %lld", r, s, (long long)L->price);
        /* worst first, best last: bids ascending, asks descending */
        if (l && (s == SYNOR_BID ? L->price <= sd->v[l - 1].price
                                 : L->price >= sd->v[l - 1].price))
            BAD("book %u side %d: levels %u and %u are out of order", r, s, l - 1, l);
        uint32_t count = 0, prev = 0;
        for (uint32_t h = L->head; h; h = m->pool[h].next) {
            if (h >= m->pool_n || ++count > L->count)
                BAD("book %u side %d: the level at %lld links more orders than its count %u",
                    r, s, (long long)L->price, L->count);
            if (m->pool[h].prev != prev)
                BAD("book %u side %d: a broken back link in the level at %lld", r, s,
                    (long long)L->price);
            int rc = check_order(m, r, s, L, h);
            if (rc)
                return rc;
            prev = h;
        }
        if (count != L->count || L->tail != prev)
            BAD("book %u side %d: the level at %lld counts %u orders, links %u", r, s,
                (long long)L->price, L->count, count);
        empty += count == 0;
        *orders += count;
    }
    if (empty != sd->empty)
        BAD("book %u side %d: %u empty levels, %u counted", r, s, empty, sd->empty);
    return 0;
}

static int check_orders(const synor_market *m)
{
    uint64_t orders = 0;
    for (uint32_t r = 0; r < m->n_res; r++)
        for (int s = 0; s < 2; s++) {
            int rc = check_side(m, r, s, &orders);
            if (rc)
                return rc;
        }
    if (orders != m->open_orders || orders != m->map_n)
        BAD("%llu orders in the books, %u counted open, %u in the id map",
            (unsigned long long)orders, m->open_orders, m->map_n);
    /* the free list: only freed records, no cycle */
    uint64_t free_n = 0;
    for (uint32_t h = m->free_head; h; h = m->pool[h].next) {
        if (h >= m->pool_n || ++free_n > m->pool_n)
            BAD("the free list of the order pool is broken");
        if (m->pool[h].id != 0)
            BAD("the free list holds order %llu", (unsigned long long)m->pool[h].id);
    }
    if (m->pool_n && orders + free_n + 1 != m->pool_n)
        BAD("order pool: %u records, %llu open, %llu free", m->pool_n,
            (unsigned long long)orders, (unsigned long long)free_n);
    for (uint32_t i = 0; i < m->map_cap; i++)
        if (m->map_vals[i] && (m->map_vals[i] >= m->pool_n ||
                               m->pool[m->map_vals[i]].id != m->map_keys[i]))
            BAD("the id map sends %llu to a record of another order",
                (unsigned long long)m->map_keys[i]);
    return 0;
}

/* The heap property, and every open order with an expiry has its entry
 * (the heap is lazy: entries of gone or re-dated orders may remain). */
static int check_expiry(const synor_market *m)
{
    for (uint32_t i = 1; i < m->heap_n; i++) {
        const mexpiry *p = &m->heap[(i - 1) / 2], *c = &m->heap[i];
        if (p->t > c->t || (p->t == c->t && p->id > c->id))
            BAD("the expiry heap is out of order at %u", i);
    }
    mexpiry *sorted = NULL;
    if (m->heap_n) {
        sorted = malloc((size_t)m->heap_n * sizeof *sorted);
        if (!sorted)
            return synor__error(SYNOR_ENOMEM, "out of memory checking the market");
        memcpy(sorted, m->heap, (size_t)m->heap_n * sizeof *sorted);
        qsort(sorted, m->heap_n, sizeof *sorted, cmp_expiry);
    }
    int rc = 0;
    for (uint32_t i = 0; i < m->map_cap && !rc; i++) {
        if (!m->map_vals[i])
            continue;
        const morder *o = &m->pool[m->map_vals[i]];
        if (!o->expires)
            continue;
        mexpiry key = {o->expires, o->id};
        if (!sorted || !bsearch(&key, sorted, m->heap_n, sizeof key, cmp_expiry))
            rc = synor__error(SYNOR_ESTATE, "market invariant: order %llu expires at %llu but "
                                            "is not in the expiry heap",
                              (unsigned long long)o->id, (unsigned long long)o->expires);
    }
    free(sorted);
    return rc;
}

static int check_leases(const synor_market *m)
{
    for (uint32_t i = 0; i < m->n_leases; i++) {
        const mlease *l = &m->leases[i];
        if (l->qty < 1 || l->qty > SYNOR__MAX_QTY || l->price < 1 ||
            l->price > SYNOR__MAX_PRICE)
            BAD("lease %llu has price %lld, quantity %lld", (unsigned long long)l->id,
                (long long)l->price, (long long)l->qty);
        if (l->provider >= m->n_owners || l->user >= m->n_owners || l->resource >= m->n_res ||
            l->zone > m->n_zones || l->id == 0 || l->id > m->next_lease || l->migrated > 1)
            BAD("lease %llu names an owner, resource, zone or id out of range",
                (unsigned long long)l->id);
        int warned = l->deadline && (!l->end || l->deadline <= l->end);
        uint64_t stop = warned ? l->deadline : l->end;
        if (stop && m->lease_next && m->lease_next > stop)
            BAD("lease %llu stops at %llu, before the next lease time %llu",
                (unsigned long long)l->id, (unsigned long long)stop,
                (unsigned long long)m->lease_next);
    }
    return 0;
}

static int check_prices(const synor_market *m)
{
    for (uint32_t r = 0; r < m->n_res; r++) {
        const mbook *b = &m->books[r];
        if (b->n_candles != synor__n_candles(m))
            BAD("book %u has %u candles, the interval needs %u", r, b->n_candles,
                synor__n_candles(m));
        if (b->has_last && (b->last_price < 1 || b->last_price > SYNOR__MAX_PRICE ||
                            b->last_qty < 1 || b->last_qty > SYNOR__MAX_QTY))
            BAD("book %u: last trade %lld at %lld", r, (long long)b->last_qty,
                (long long)b->last_price);
        if (b->has_last > 1 || (!b->has_last && b->trades_total))
            BAD("book %u: %llu trades but no last trade", r,
                (unsigned long long)b->trades_total);
        for (uint32_t c = 0; c < b->n_candles; c++) {
            const mcandle *k = &b->candles[c];
            if (k->volume == 0)
                continue;
            if (k->notional < k->volume || k->low < 1 || k->high > SYNOR__MAX_PRICE || k->low > k->open ||
                k->low > k->close || k->open > k->high || k->close > k->high ||
                k->start % m->cfg.candle_ns || (k->start / m->cfg.candle_ns) % b->n_candles != c)
                BAD("book %u: candle %u (start %llu) is inconsistent", r, c,
                    (unsigned long long)k->start);
        }
    }
    return 0;
}

int synor__market_invariants(const synor_market *m)
{
    if (m->seq > SYNOR__MAX_SEQ)
        BAD("seq %llu is beyond 2^62", (unsigned long long)m->seq);
    if (m->seq < (uint64_t)m->n_owners + m->n_res + m->n_zones)
        BAD("seq %llu is below the %u registrations", (unsigned long long)m->seq,
            m->n_owners + m->n_res + m->n_zones);
    for (uint32_t i = 0; i < m->n_owners; i++)
        if (m->owner_rep[i] > 100)
            BAD("owner %u has reputation %u", i, m->owner_rep[i]);
    int rc = check_orders(m);
    if (!rc)
        rc = check_expiry(m);
    if (!rc)
        rc = check_leases(m);
    if (!rc)
        rc = check_prices(m);
    return rc;
}
