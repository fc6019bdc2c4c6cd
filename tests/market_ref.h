/* market_ref.h - a deliberately simple reference order book for
 * differential tests: one flat array of orders, linear scans, no indexes.
 * It implements the rules of include/synor/market.h directly; the fast book
 * must produce exactly the same events and final books. Test code only. */
#ifndef SYNOR_MARKET_REF_H
#define SYNOR_MARKET_REF_H

#include <stdlib.h>
#include <string.h>

#include "synor/market.h"

typedef struct ref_order {
    uint64_t id, arrival, expires, duration;
    uint32_t owner, resource;
    int side;
    int64_t price, qty;
    uint8_t min_rep;
    uint8_t n_also; /* an arriving bid's region set (cmd.also) */
    uint32_t also[3];
} ref_order;

typedef struct ref_market {
    ref_order *o;
    size_t n, cap;
    uint64_t arrivals, seq, last_time;
    uint8_t rep[256];
    uint32_t n_owners, n_res;
    uint32_t offer[256]; /* resource -> kind/profile group, for region sets */
    synor_market_event *ev;
    size_t n_ev, cap_ev;
    uint64_t *used; /* every id a command was accepted under, unsorted */
    size_t n_used, cap_used;
} ref_market;

static int ref_used(const ref_market *r, uint64_t id)
{
    for (size_t i = 0; i < r->n_used; i++)
        if (r->used[i] == id)
            return 1;
    return 0;
}

static void ref_use(ref_market *r, uint64_t id)
{
    if (r->n_used == r->cap_used) {
        r->cap_used = r->cap_used ? r->cap_used * 2 : 256;
        r->used = realloc(r->used, r->cap_used * sizeof *r->used);
    }
    r->used[r->n_used++] = id;
}

static void ref_emit(ref_market *r, synor_market_event e)
{
    if (r->n_ev == r->cap_ev) {
        r->cap_ev = r->cap_ev ? r->cap_ev * 2 : 1024;
        r->ev = realloc(r->ev, r->cap_ev * sizeof *r->ev);
    }
    r->ev[r->n_ev++] = e;
}

static synor_market_event ref_ev(ref_market *r, synor_market_event_kind k, const ref_order *o,
                                 int reason, int64_t remaining, uint64_t t)
{
    synor_market_event e;
    memset(&e, 0, sizeof e);
    e.kind = k;
    e.seq = r->seq;
    e.time = t;
    e.order_id = o->id;
    e.owner = o->owner;
    e.resource = o->resource;
    e.side = (synor_side)o->side;
    e.reason = reason;
    e.price = o->price;
    e.qty = o->qty;
    e.remaining = remaining;
    return e;
}

static void ref_remove(ref_market *r, size_t i)
{
    r->o[i] = r->o[--r->n];
}

/* The bid's constraints decide, whichever order rests. */
static int ref_eligible(const ref_market *r, const ref_order *a, const ref_order *b, uint64_t now)
{
    const ref_order *bid = a->side == SYNOR_BID ? a : b, *ask = a->side == SYNOR_BID ? b : a;
    if (bid->min_rep && r->rep[ask->owner] < bid->min_rep)
        return 0;
    return !bid->duration || !ask->expires || ask->expires >= now + bid->duration;
}

static long ref_find(ref_market *r, uint64_t id)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->o[i].id == id)
            return (long)i;
    return -1;
}

/* Priority of a resting order vs another on the same side: better price,
 * then earlier arrival. */
static int ref_before(const ref_order *a, const ref_order *b)
{
    if (a->price != b->price)
        return a->side == SYNOR_BID ? a->price > b->price : a->price < b->price;
    return a->arrival < b->arrival;
}

static int ref_crosses(int side, int limit, int64_t price, int64_t lp)
{
    if (!limit)
        return 1;
    return side == SYNOR_BID ? lp <= price : lp >= price;
}

/* Which of the taker's books res is: 0 its own, k + 1 its also[k], -1 none. */
static int ref_rank(const ref_order *t, uint32_t res)
{
    if (res == t->resource)
        return 0;
    for (int k = 0; k < t->n_also; k++)
        if (t->also[k] == res)
            return k + 1;
    return -1;
}

/* Index of the best crossing opposite order not in `skip` list, or -1:
 * better price, then the earlier book of the taker, then earlier arrival. */
static long ref_next(ref_market *r, const ref_order *t, int limit, const uint64_t *skip,
                     size_t n_skip)
{
    long best = -1;
    for (size_t i = 0; i < r->n; i++) {
        const ref_order *o = &r->o[i];
        if (ref_rank(t, o->resource) < 0 || o->side == t->side ||
            !ref_crosses(t->side, limit, t->price, o->price))
            continue;
        int skipped = 0;
        for (size_t k = 0; k < n_skip; k++)
            skipped |= skip[k] == o->id;
        if (skipped)
            continue;
        const ref_order *b = best < 0 ? NULL : &r->o[best];
        if (!b || (o->price != b->price ? ref_before(o, b)
                   : ref_rank(t, o->resource) != ref_rank(t, b->resource)
                       ? ref_rank(t, o->resource) < ref_rank(t, b->resource)
                       : o->arrival < b->arrival))
            best = (long)i;
    }
    return best;
}

static void ref_match(ref_market *r, ref_order *t, int limit, uint64_t time)
{
    uint64_t *skip = NULL;
    size_t n_skip = 0;
    while (t->qty > 0) {
        long i = ref_next(r, t, limit, skip, n_skip);
        if (i < 0)
            break;
        ref_order *o = &r->o[i];
        if (!ref_eligible(r, t, o, time)) {
            /* skipped, whoever owns it: not even self-trade prevention
             * touches an order the taker could not trade with */
            skip = realloc(skip, (n_skip + 1) * sizeof *skip);
            skip[n_skip++] = o->id;
        } else if (o->owner == t->owner) {
            ref_emit(r, ref_ev(r, SYNOR_EV_CANCELLED, o, SYNOR_REASON_SELF_TRADE, 0, time));
            ref_remove(r, (size_t)i);
        } else {
            int64_t q = o->qty < t->qty ? o->qty : t->qty;
            o->qty -= q;
            t->qty -= q;
            synor_market_event e = ref_ev(r, SYNOR_EV_TRADE, t, 0, t->qty, time);
            e.resource = o->resource; /* the book it traded in */
            e.price = o->price;
            e.qty = q;
            e.maker_id = o->id;
            e.maker_owner = o->owner;
            ref_emit(r, e);
            if (o->qty == 0)
                ref_remove(r, (size_t)i);
        }
    }
    free(skip);
}

static void ref_expire(ref_market *r, uint64_t now)
{
    for (;;) {
        long best = -1;
        for (size_t i = 0; i < r->n; i++) {
            const ref_order *o = &r->o[i];
            if (!o->expires || o->expires > now)
                continue;
            if (best < 0 || o->expires < r->o[best].expires ||
                (o->expires == r->o[best].expires && o->id < r->o[best].id))
                best = (long)i;
        }
        if (best < 0)
            return;
        ref_emit(r, ref_ev(r, SYNOR_EV_EXPIRED, &r->o[best], SYNOR_REASON_EXPIRED, 0, now));
        ref_remove(r, (size_t)best);
    }
}

/* A rejected command is not in the sequence (seq 0) and changes nothing. */
static int ref_reject(ref_market *r, const synor_market_cmd *c, int reason)
{
    synor_market_event e;
    memset(&e, 0, sizeof e);
    e.kind = SYNOR_EV_REJECTED;
    e.time = c->time;
    e.order_id = c->order_id;
    e.owner = c->owner;
    e.resource = c->resource;
    e.side = c->side;
    e.reason = reason;
    e.price = c->price;
    e.qty = c->qty;
    ref_emit(r, e);
    return 0;
}

/* The order with this id still open at time t (one that expires at or
 * before t is gone by the time the command applies), or -1. */
static long ref_open_at(ref_market *r, uint64_t id, uint64_t t)
{
    long i = ref_find(r, id);
    return i >= 0 && !(r->o[i].expires && r->o[i].expires <= t) ? i : -1;
}

/* Why the command is refused (0: it is applied), decided before anything
 * changes, in the order of market.h: identity, time, fields. */
static int ref_check(ref_market *r, const synor_market_cmd *c)
{
    const int64_t MAXV = ((int64_t)1 << 53) - 1;
    uint64_t id = c->kind == SYNOR_CMD_PLACE ? c->order_id : c->ref;
    if (id && ref_used(r, id))
        return SYNOR_REASON_DUPLICATE_ID; /* an id is accepted once, ever */
    if (c->time < r->last_time)
        return SYNOR_REASON_TIME_BACKWARDS;
    if (c->kind == SYNOR_CMD_PLACE) {
        int limit = c->type == SYNOR_LIMIT;
        if (c->resource >= r->n_res)
            return SYNOR_REASON_UNKNOWN_RESOURCE;
        if (c->owner >= r->n_owners)
            return SYNOR_REASON_UNKNOWN_OWNER;
        if ((unsigned)c->side > 1 || (unsigned)c->type > 1 || (unsigned)c->tif > 2 ||
            c->min_reputation > 100 || c->order_id == 0)
            return SYNOR_REASON_BAD_FIELD;
        if (c->qty <= 0 || c->qty > MAXV)
            return SYNOR_REASON_BAD_QUANTITY;
        if (limit ? (c->price <= 0 || c->price > MAXV) : c->price != 0)
            return SYNOR_REASON_BAD_PRICE;
        if (c->expires && c->expires <= c->time)
            return SYNOR_REASON_BAD_EXPIRY;
        if (c->ref && c->ref != c->order_id)
            return SYNOR_REASON_BAD_FIELD;
        if (c->n_also) {
            if (c->n_also > 3 || c->side != SYNOR_BID)
                return SYNOR_REASON_BAD_FIELD;
            for (int k = 0; k < c->n_also; k++) {
                int bad = c->also[k] >= r->n_res || c->also[k] == c->resource ||
                          r->offer[c->also[k] % 256] != r->offer[c->resource];
                for (int j = 0; j < k; j++)
                    bad |= c->also[j] == c->also[k];
                if (bad)
                    return SYNOR_REASON_BAD_FIELD;
            }
        }
        return 0;
    }
    if (c->kind == SYNOR_CMD_CANCEL || c->kind == SYNOR_CMD_AMEND) {
        long i = ref_open_at(r, c->order_id, c->time);
        if (i < 0)
            return SYNOR_REASON_UNKNOWN_ORDER;
        if (r->o[i].owner != c->owner)
            return SYNOR_REASON_NOT_OWNER;
        if (c->kind == SYNOR_CMD_AMEND && (c->qty <= 0 || c->qty > MAXV))
            return SYNOR_REASON_BAD_QUANTITY;
        if (c->kind == SYNOR_CMD_AMEND && (c->price <= 0 || c->price > MAXV))
            return SYNOR_REASON_BAD_PRICE;
        return 0;
    }
    if (c->kind == SYNOR_CMD_REPUTATION) {
        if (c->owner >= r->n_owners)
            return SYNOR_REASON_UNKNOWN_OWNER;
        return c->reputation > 100 ? SYNOR_REASON_BAD_FIELD : 0;
    }
    return SYNOR_REASON_BAD_FIELD; /* no leases here: no reclaim */
}

static int ref_submit(ref_market *r, const synor_market_cmd *c)
{
    int why = ref_check(r, c);
    if (why)
        return ref_reject(r, c, why);
    if (c->kind == SYNOR_CMD_PLACE || c->ref)
        ref_use(r, c->kind == SYNOR_CMD_PLACE ? c->order_id : c->ref);
    r->seq++;
    r->last_time = c->time;
    ref_expire(r, c->time);
    if (c->kind == SYNOR_CMD_PLACE) {
        int limit = c->type == SYNOR_LIMIT;
        ref_order t = {c->order_id, ++r->arrivals, c->expires, c->duration, c->owner,
                       c->resource, c->side, c->price, c->qty, c->min_reputation,
                       c->n_also, {c->also[0], c->also[1], c->also[2]}};
        if (c->tif == SYNOR_FOK) {
            int64_t avail = 0;
            for (size_t i = 0; i < r->n; i++) {
                const ref_order *o = &r->o[i];
                if (ref_rank(&t, o->resource) >= 0 && o->side != t.side &&
                    ref_crosses(t.side, limit, t.price, o->price) && o->owner != t.owner &&
                    ref_eligible(r, &t, o, c->time))
                    avail += o->qty;
            }
            if (avail < t.qty) {
                ref_emit(r, ref_ev(r, SYNOR_EV_ACCEPTED, &t, 0, t.qty, c->time));
                ref_emit(r, ref_ev(r, SYNOR_EV_CANCELLED, &t, SYNOR_REASON_FOK_UNFILLABLE, 0,
                                   c->time));
                return 0;
            }
        }
        ref_emit(r, ref_ev(r, SYNOR_EV_ACCEPTED, &t, 0, t.qty, c->time));
        ref_match(r, &t, limit, c->time);
        if (t.qty > 0 && limit && c->tif == SYNOR_GTC) {
            if (r->n == r->cap) {
                r->cap = r->cap ? r->cap * 2 : 256;
                r->o = realloc(r->o, r->cap * sizeof *r->o);
            }
            t.n_also = 0; /* a resting bid stays in its own book */
            r->o[r->n++] = t;
        } else if (t.qty > 0) {
            ref_emit(r, ref_ev(r, SYNOR_EV_CANCELLED, &t, SYNOR_REASON_IOC_REMAINDER, 0, c->time));
        }
    } else if (c->kind == SYNOR_CMD_CANCEL) {
        long i = ref_find(r, c->order_id);
        ref_emit(r, ref_ev(r, SYNOR_EV_CANCELLED, &r->o[i], SYNOR_REASON_USER, 0, c->time));
        ref_remove(r, (size_t)i);
    } else if (c->kind == SYNOR_CMD_AMEND) {
        long i = ref_find(r, c->order_id);
        ref_order t = r->o[i];
        int keep = c->price == t.price && c->qty <= t.qty;
        t.price = c->price;
        t.qty = c->qty;
        synor_market_event e = ref_ev(r, SYNOR_EV_AMENDED, &t, 0, t.qty, c->time);
        e.kept_priority = keep;
        ref_emit(r, e);
        if (keep) {
            r->o[i] = t;
            return 0;
        }
        ref_remove(r, (size_t)i);
        t.arrival = ++r->arrivals;
        ref_match(r, &t, 1, c->time);
        if (t.qty > 0) {
            if (r->n == r->cap) {
                r->cap = r->cap ? r->cap * 2 : 256;
                r->o = realloc(r->o, r->cap * sizeof *r->o);
            }
            r->o[r->n++] = t;
        }
    } else if (c->kind == SYNOR_CMD_REPUTATION) {
        r->rep[c->owner] = c->reputation;
        synor_market_event e;
        memset(&e, 0, sizeof e);
        e.kind = SYNOR_EV_REPUTATION;
        e.seq = r->seq;
        e.time = c->time;
        e.owner = c->owner;
        e.qty = c->reputation;
        ref_emit(r, e);
    }
    return 0;
}

/* The orders of one book side in priority order. */
static size_t ref_side(const ref_market *r, uint32_t res, int side, ref_order *out)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->o[i].resource == res && r->o[i].side == side)
            out[k++] = r->o[i];
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && ref_before(&out[j], &out[j - 1]); j--) {
            ref_order tmp = out[j];
            out[j] = out[j - 1];
            out[j - 1] = tmp;
        }
    return k;
}

#endif
