/* book.c - order books and matching: the hot path of the market.
 *
 * Invariants:
 *   - a level's qty is the sum of its orders' qty; side arrays are sorted
 *     with the best level last (bids ascending, asks descending); levels
 *     with no orders may remain (count 0) and are skipped by every reader;
 *   - every open order is in exactly one level FIFO and in the id map;
 *   - a command either is rejected with no change at all, or is applied
 *     completely: validate.c decides before anything changes, so the
 *     functions here apply commands that are known to be acceptable.
 * Event order for a PLACE: ACCEPTED, then TRADE/CANCELLED(SELF_TRADE) in
 * matching order, then CANCELLED(IOC_REMAINDER) if any part is left and the
 * order may not rest. */
#include <string.h>

#include "market/market_internal.h"

/* ------------------------------------------------------------- levels */

int synor__book_init(mbook *b, uint32_t n_candles)
{
    memset(b, 0, sizeof *b);
    b->candles = synor__calloc(n_candles, sizeof *b->candles);
    if (!b->candles)
        return synor__error(SYNOR_ENOMEM, "market: out of memory (candles)");
    b->n_candles = n_candles;
    return 0;
}

void synor__book_free(mbook *b)
{
    synor__free(b->side[0].v);
    synor__free(b->side[1].v);
    synor__free(b->candles);
}

/* True if price a is better than b for side s. */
static int better(int s, int64_t a, int64_t b) { return s == SYNOR_BID ? a > b : a < b; }

/* Index of the level with this price, or -1; *ins = where it would go. */
static long find_level(const mside *sd, int s, int64_t price, uint32_t *ins)
{
    uint32_t lo = 0, hi = sd->n;
    /* array sorted from worst to best */
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (sd->v[mid].price == price) {
            *ins = mid;
            return (long)mid;
        }
        if (better(s, price, sd->v[mid].price))
            lo = mid + 1;
        else
            hi = mid;
    }
    *ins = lo;
    return -1;
}

/* find_level, starting from index `hint`: an amend moves an order by a few
 * ticks, and empty levels stay in place, so the level it needs is usually
 * within a few slots of the one it left. Walks at most 16 slots from the
 * hint (correct from any start, the array being sorted), then falls back to
 * the binary search. */
static long find_level_near(const mside *sd, int s, int64_t price, uint32_t hint, uint32_t *ins)
{
    if (hint >= sd->n)
        return find_level(sd, s, price, ins);
    if (sd->v[hint].price == price) {
        *ins = hint;
        return (long)hint;
    }
    if (better(s, price, sd->v[hint].price)) {
        /* the level is above the hint */
        for (uint32_t j = hint + 1, k = 0; k < 16; j++, k++) {
            if (j == sd->n || better(s, sd->v[j].price, price)) {
                *ins = j;
                return -1;
            }
            if (sd->v[j].price == price) {
                *ins = j;
                return (long)j;
            }
        }
    } else {
        for (uint32_t j = hint, k = 0; k < 16; j--, k++) {
            if (j == 0 || better(s, price, sd->v[j - 1].price)) {
                *ins = j;
                return -1;
            }
            if (sd->v[j - 1].price == price) {
                *ins = j - 1;
                return (long)(j - 1);
            }
        }
    }
    return find_level(sd, s, price, ins);
}

int synor__book_rest(synor_market *m, uint32_t h)
{
    morder *o = &m->pool[h];
    mside *sd = &m->books[o->resource].side[o->side];
    uint32_t ins;
    long li = find_level_near(sd, o->side, o->price, o->lvl, &ins);
    mlevel *L;
    if (li < 0) {
        if (sd->n == sd->cap) {
            uint32_t cap = sd->cap ? sd->cap * 2 : 64;
            mlevel *v = synor__realloc(sd->v, (size_t)cap * sizeof *v);
            if (!v)
                return synor__error(SYNOR_ENOMEM, "market: out of memory (price levels)");
            sd->v = v;
            sd->cap = cap;
        }
        memmove(&sd->v[ins + 1], &sd->v[ins], (size_t)(sd->n - ins) * sizeof *sd->v);
        sd->n++;
        L = &sd->v[ins];
        memset(L, 0, sizeof *L);
        L->price = o->price;
    } else {
        L = &sd->v[li];
        if (L->count == 0)
            sd->empty--;
    }
    o->prev = L->tail;
    o->next = 0;
    if (L->tail)
        m->pool[L->tail].next = h;
    else
        L->head = h;
    L->tail = h;
    L->count++;
    o->lvl = (uint32_t)(L - sd->v);
    m->open_orders++;
    return 0;
}

/* Unlinks order h from level index li of its side; removes the level when
 * it empties. Does not free the order. */
static void unlink_at(synor_market *m, mside *sd, uint32_t li, uint32_t h)
{
    morder *o = &m->pool[h];
    mlevel *L = &sd->v[li];
    if (o->prev)
        m->pool[o->prev].next = o->next;
    else
        L->head = o->next;
    if (o->next)
        m->pool[o->next].prev = o->prev;
    else
        L->tail = o->prev;
    L->count--;
    m->open_orders--;
    if (L->count == 0)
        sd->empty++;
    m->touched = o->resource;
}

/* Drops the empty levels once they are more than half of the array. Only
 * called between commands, never while a level pointer is held. */
static void compact(mside *sd)
{
    if (sd->empty <= 64 || sd->empty * 2 <= sd->n)
        return;
    uint32_t k = 0;
    for (uint32_t i = 0; i < sd->n; i++)
        if (sd->v[i].count)
            sd->v[k++] = sd->v[i];
    sd->n = k;
    sd->empty = 0;
}

static void unlink_order(synor_market *m, uint32_t h)
{
    morder *o = &m->pool[h];
    mside *sd = &m->books[o->resource].side[o->side];
    uint32_t ins;
    long li = find_level_near(sd, o->side, o->price, o->lvl, &ins);
    if (SYNOR_ALWAYS(li >= 0))
        unlink_at(m, sd, (uint32_t)li, h);
}

static void remove_order(synor_market *m, uint32_t h)
{
    unlink_order(m, h);
    synor__map_del(m, m->pool[h].id);
    synor__pool_free(m, h);
}

/* ------------------------------------------------------------ events */

static void ev_order(synor_market *m, synor_market_event_kind k, const morder *o, int reason,
                     int64_t remaining)
{
    if (synor__quiet(m))
        return;
    synor_market_event ev = synor__event(m, k);
    ev.order_id = o->id;
    ev.owner = o->owner;
    ev.resource = o->resource;
    ev.side = (synor_side)o->side;
    ev.reason = reason;
    ev.price = o->price;
    ev.qty = o->qty;
    ev.remaining = remaining;
    synor__emit(m, &ev);
}

int synor__reject(synor_market *m, const synor_market_cmd *c, int reason)
{
    if (synor__quiet(m))
        return 0;
    synor_market_event ev = synor__event(m, SYNOR_EV_REJECTED);
    ev.seq = 0; /* a rejected command is not in the sequence */
    ev.time = c->time;
    ev.order_id = c->order_id;
    ev.owner = c->owner;
    ev.resource = c->resource;
    ev.side = c->side;
    ev.reason = reason;
    ev.price = c->price;
    ev.qty = c->qty;
    synor__emit(m, &ev);
    return 0;
}

/* ------------------------------------------------------------ trades */

void synor__record_trade(synor_market *m, mbook *b, int64_t price, int64_t qty)
{
    b->has_last = 1;
    b->last_price = price;
    b->last_qty = qty;
    b->last_time = m->cur_time;
    b->volume_total = synor__add_sat(b->volume_total, (synor__u128)qty);
    b->trades_total++;
    uint64_t width = m->cfg.candle_ns;
    uint64_t interval = m->cur_time / width;
    mcandle *k = &b->candles[interval % b->n_candles];
    if (k->volume == 0 || k->start != interval * width) {
        memset(k, 0, sizeof *k);
        k->start = interval * width;
        k->open = k->high = k->low = price;
    }
    if (price > k->high)
        k->high = price;
    if (price < k->low)
        k->low = price;
    k->close = price;
    k->volume = synor__add_sat(k->volume, (synor__u128)qty);
    k->notional = synor__add_sat(k->notional, (synor__u128)price * (synor__u128)qty);
}

int synor__bid_accepts(const synor_market *m, uint8_t min_rep, uint64_t zones, uint64_t duration,
                       uint32_t provider, uint8_t zone, uint64_t avail)
{
    if (min_rep && m->owner_rep[provider] < min_rep)
        return 0;
    if (zones && !(zone && (zones >> zone) & 1))
        return 0;
    /* written as a difference: now + duration may overflow */
    return !duration || !avail || (avail >= m->cur_time && avail - m->cur_time >= duration);
}

/* May these two orders trade? The bid's constraints decide, whichever of
 * the two is resting: the provider's reputation, the zone set, and an ask
 * available at least as long as the bid's duration. */
static int eligible(const synor_market *m, const morder *a, const morder *b)
{
    const morder *bid = a->side == SYNOR_BID ? a : b, *ask = a->side == SYNOR_BID ? b : a;
    if (!bid->min_rep && !bid->zones && !bid->duration && !bid->not_from)
        return 1; /* the common case, kept off the slow path */
    if (bid->not_from && ask->owner == bid->not_from - 1)
        return 0;
    return synor__bid_accepts(m, bid->min_rep, bid->zones, bid->duration, ask->owner, ask->zone,
                              ask->expires);
}

/* Does a taker at `price` on side s cross a level at lp? */
static int crosses(int s, int64_t price, int64_t lp)
{
    return s == SYNOR_BID ? lp <= price : lp >= price;
}

/* Units the taker could fill now, without self-trades or ineligible makers,
 * up to `want` (FOK pre-check). */
static int64_t fillable_at(const synor_market *m, const mside *opp, const morder *t, int limit,
                           int64_t want, uint64_t now)
{
    int64_t got = 0;
    for (uint32_t i = opp->n; i-- > 0 && got < want;) {
        const mlevel *L = &opp->v[i];
        if (L->count == 0)
            continue;
        if (limit && !crosses(t->side, t->price, L->price))
            break;
        for (uint32_t h = L->head; h && got < want; h = m->pool[h].next) {
            const morder *o = &m->pool[h];
            if (o->owner != t->owner && !(o->expires && o->expires <= now) &&
                eligible(m, t, o))
                got += o->qty;
        }
    }
    return got;
}

static int64_t fillable(const synor_market *m, const mside *opp, const morder *t, int limit,
                        int64_t want)
{
    return fillable_at(m, opp, t, limit, want, 0); /* expired orders are gone */
}

/* The taker a command would be, before it is in a book. */
static void taker_of(const synor_market_cmd *c, morder *t)
{
    memset(t, 0, sizeof *t);
    t->id = c->order_id;
    t->owner = c->owner;
    t->resource = c->resource;
    t->side = (uint8_t)c->side;
    t->price = c->price;
    t->qty = c->qty;
    t->expires = c->expires;
    t->duration = c->duration;
    t->zones = c->zones;
    t->zone = c->zone;
    t->min_rep = c->min_reputation;
}

int64_t synor__book_fillable(const synor_market *m, const synor_market_cmd *c, uint64_t now)
{
    morder t;
    taker_of(c, &t);
    uint32_t books[1 + SYNOR_MARKET_MAX_ALSO] = {c->resource};
    unsigned nb = 1;
    for (unsigned k = 0; k < c->n_also; k++)
        books[nb++] = c->also[k];
    int64_t can = 0;
    for (unsigned k = 0; k < nb && can < c->qty; k++)
        can += fillable_at(m, &m->books[books[k]].side[!c->side], &t, c->type == SYNOR_LIMIT,
                           c->qty - can, now);
    return can;
}

/* Matches taker t (not in a book) against level i of the opposite side of
 * book r: trades with the orders it may trade with, in time order. */
static inline void match_level(synor_market *m, morder *t, uint32_t r, uint32_t i)
{
    mbook *b = &m->books[r];
    mside *opp = &b->side[!t->side];
    mlevel *L = &opp->v[i];
    int64_t lp = L->price;
    uint32_t h = L->head;
    while (h && t->qty > 0) {
        morder *o = &m->pool[h];
        uint32_t next = o->next;
        int ok = eligible(m, t, o);
        /* self-trade prevention cancels the resting order - only one the
         * taker could trade with (journals of version 1 cancelled any) */
        if (o->owner == t->owner && (ok || m->legacy)) {
            ev_order(m, SYNOR_EV_CANCELLED, o, SYNOR_REASON_SELF_TRADE, 0);
            synor__map_del(m, o->id);
            unlink_at(m, opp, i, h);
            synor__pool_free(m, h);
        } else if (ok) {
            int64_t q = o->qty < t->qty ? o->qty : t->qty;
            o->qty -= q;
            t->qty -= q;
            synor__record_trade(m, b, lp, q);
            if (!synor__quiet(m)) {
                synor_market_event ev = synor__event(m, SYNOR_EV_TRADE);
                ev.order_id = t->id;
                ev.owner = t->owner;
                ev.resource = r; /* the book it traded in */
                ev.side = (synor_side)t->side;
                ev.price = lp;
                ev.qty = q;
                ev.remaining = t->qty;
                ev.maker_id = o->id;
                ev.maker_owner = o->owner;
                synor__emit(m, &ev);
            }
            /* capacity from an interruptible ask is leased, preemptible */
            const morder *ask = t->side == SYNOR_ASK ? t : o, *bidder = t->side == SYNOR_ASK ? o : t;
            if (ask->interruptible && !m->lease_error)
                m->lease_error = synor__lease_add(m, ask, bidder, lp, q);
            if (o->qty == 0) {
                synor__map_del(m, o->id);
                unlink_at(m, opp, i, h);
                synor__pool_free(m, h);
            }
        }
        h = next;
    }
}

/* Matches taker (not yet in the book) against the opposite side. A level
 * with orders left afterwards holds only orders this taker may not trade
 * with (or the taker is filled): the next one is looked at. */
static void match(synor_market *m, morder *t, int limit)
{
    const mside *opp = &m->books[t->resource].side[!t->side];
    uint32_t i = opp->n;
    while (t->qty > 0 && i > 0) {
        i--;
        if (opp->v[i].count == 0)
            continue;
        if (limit && !crosses(t->side, t->price, opp->v[i].price))
            break;
        match_level(m, t, t->resource, i);
    }
}

/* A bid with a region set: the best level across its books, again and
 * again; at one price the earlier book in `books` first. */
static void sweep(synor_market *m, morder *t, int limit, const uint32_t *books, unsigned nb)
{
    uint32_t idx[1 + SYNOR_MARKET_MAX_ALSO];
    for (unsigned k = 0; k < nb; k++)
        idx[k] = m->books[books[k]].side[!t->side].n;
    while (t->qty > 0) {
        int best = -1;
        int64_t bp = 0;
        for (unsigned k = 0; k < nb; k++) {
            const mside *sd = &m->books[books[k]].side[!t->side];
            while (idx[k] > 0 && sd->v[idx[k] - 1].count == 0)
                idx[k]--;
            if (idx[k] == 0)
                continue;
            int64_t lp = sd->v[idx[k] - 1].price;
            if (limit && !crosses(t->side, t->price, lp))
                idx[k] = 0;
            else if (best < 0 || better(!t->side, lp, bp)) {
                best = (int)k;
                bp = lp;
            }
        }
        if (best < 0)
            break;
        idx[best]--;
        match_level(m, t, books[best], idx[best]);
    }
}

int synor__buy_now(synor_market *m, uint32_t user, uint32_t resource, int64_t price, int64_t qty,
                   uint8_t priority, uint64_t duration, uint32_t not_from, int64_t *got)
{
    morder t;
    memset(&t, 0, sizeof t);
    t.owner = user;
    t.resource = resource;
    t.side = SYNOR_BID;
    t.price = price;
    t.qty = qty;
    t.priority = priority;
    t.duration = duration;
    t.not_from = not_from;
    match(m, &t, 1);
    *got = qty - t.qty;
    return m->lease_error;
}

/* --------------------------------------------------------- commands */

static int apply_place(synor_market *m, const synor_market_cmd *c)
{
    int limit = c->type == SYNOR_LIMIT;
    uint32_t books[1 + SYNOR_MARKET_MAX_ALSO] = {c->resource};
    unsigned nb = 1;
    for (unsigned k = 0; k < c->n_also; k++)
        books[nb++] = c->also[k];

    morder tmp;
    taker_of(c, &tmp);
    int64_t can = 0;
    for (unsigned k = 0; c->tif == SYNOR_FOK && k < nb; k++)
        can += fillable(m, &m->books[books[k]].side[!c->side], &tmp, limit, c->qty - can);
    if (c->tif == SYNOR_FOK && can < c->qty) {
        ev_order(m, SYNOR_EV_ACCEPTED, &tmp, 0, c->qty);
        ev_order(m, SYNOR_EV_CANCELLED, &tmp, SYNOR_REASON_FOK_UNFILLABLE, 0);
        return 0;
    }

    uint32_t h = synor__pool_alloc(m);
    if (!h)
        return synor__error(SYNOR_ENOMEM, "market: out of memory (order pool)");
    morder *o = &m->pool[h];
    memset(o, 0, sizeof *o);
    o->id = c->order_id;
    o->price = c->price;
    o->qty = c->qty;
    o->expires = c->expires;
    o->duration = c->duration;
    o->zones = c->zones;
    o->zone = c->zone;
    o->owner = c->owner;
    o->resource = c->resource;
    o->side = (uint8_t)c->side;
    o->interruptible = c->interruptible;
    o->priority = c->priority;
    o->min_rep = c->min_reputation;
    o->lvl = UINT32_MAX; /* no hint: binary search */
    if (o->interruptible && o->side == SYNOR_ASK && limit && m->cfg.interruptible_discount_bp) {
        /* interruptible capacity is offered below the provider's price */
        o->price -= (int64_t)((synor__i128)o->price * m->cfg.interruptible_discount_bp / 10000);
        if (o->price < 1)
            o->price = 1;
    }
    ev_order(m, SYNOR_EV_ACCEPTED, o, 0, o->qty);
    if (nb > 1)
        sweep(m, o, limit, books, nb);
    else
        match(m, o, limit);
    o = &m->pool[h]; /* match() does not grow the pool, but stay safe */
    if (o->qty > 0 && o->side == SYNOR_BID && limit && c->tif != SYNOR_FOK && m->n_leases) {
        int rc = synor__lease_outbid(m, o);
        if (rc)
            return rc;
        o = &m->pool[h];
    }
    if (m->lease_error)
        return m->lease_error;
    if (o->qty > 0 && limit && c->tif == SYNOR_GTC) {
        int rc = synor__map_put(m, o->id, h);
        if (!rc)
            rc = synor__book_rest(m, h);
        if (!rc && o->expires)
            rc = synor__heap_push(m, o->expires, o->id);
        return rc;
    }
    if (o->qty > 0)
        ev_order(m, SYNOR_EV_CANCELLED, o, SYNOR_REASON_IOC_REMAINDER, 0);
    synor__pool_free(m, h);
    return 0;
}

static int apply_cancel(synor_market *m, const synor_market_cmd *c)
{
    uint32_t h = synor__map_get(m, c->order_id);
    ev_order(m, SYNOR_EV_CANCELLED, &m->pool[h], SYNOR_REASON_USER, 0);
    remove_order(m, h);
    return 0;
}

static void emit_amended(synor_market *m, const morder *o, int kept)
{
    if (synor__quiet(m))
        return;
    synor_market_event ev = synor__event(m, SYNOR_EV_AMENDED);
    ev.order_id = o->id;
    ev.owner = o->owner;
    ev.resource = o->resource;
    ev.side = (synor_side)o->side;
    ev.price = o->price;
    ev.qty = o->qty;
    ev.remaining = o->qty;
    ev.kept_priority = kept;
    synor__emit(m, &ev);
}

static int apply_amend(synor_market *m, const synor_market_cmd *c)
{
    uint32_t h = synor__map_get(m, c->order_id);
    morder *o = &m->pool[h];
    if (c->price == o->price && c->qty <= o->qty) {
        /* a pure reduction keeps time priority */
        o->qty = c->qty;
        emit_amended(m, o, 1);
        return 0;
    }
    /* price change or increase: leave the book and re-enter at the back of
     * the new level, trading first if the new price crosses */
    unlink_order(m, h);
    o = &m->pool[h];
    o->price = c->price;
    o->qty = c->qty;
    emit_amended(m, o, 0);
    match(m, o, 1);
    o = &m->pool[h];
    if (o->qty > 0)
        return synor__book_rest(m, h);
    synor__map_del(m, o->id);
    synor__pool_free(m, h);
    return 0;
}

void synor__market_expire(synor_market *m, uint64_t now)
{
    if (m->n_leases)
        synor__lease_expire(m, now);
    while (m->heap_n && m->heap[0].t <= now) {
        uint64_t id = m->heap[0].id, t = m->heap[0].t;
        synor__heap_pop(m);
        uint32_t h = synor__map_get(m, id);
        /* the heap is lazy: the order may be gone or re-dated */
        if (!h || m->pool[h].expires != t)
            continue;
        ev_order(m, SYNOR_EV_EXPIRED, &m->pool[h], SYNOR_REASON_EXPIRED, 0);
        uint32_t r = m->pool[h].resource;
        remove_order(m, h);
        compact(&m->books[r].side[0]);
        compact(&m->books[r].side[1]);
    }
}

static int apply(synor_market *m, const synor_market_cmd *c);

int synor__book_apply(synor_market *m, const synor_market_cmd *c)
{
    m->touched = UINT32_MAX;
    int rc = apply(m, c);
    if (m->touched < m->n_res) {
        compact(&m->books[m->touched].side[0]);
        compact(&m->books[m->touched].side[1]);
    }
    return rc;
}

static int apply(synor_market *m, const synor_market_cmd *c)
{
    switch (c->kind) {
    case SYNOR_CMD_PLACE:
        return apply_place(m, c);
    case SYNOR_CMD_CANCEL:
        return apply_cancel(m, c);
    case SYNOR_CMD_AMEND:
        return apply_amend(m, c);
    case SYNOR_CMD_REPUTATION:
        m->owner_rep[c->owner] = c->reputation;
        if (!synor__quiet(m)) {
            synor_market_event ev = synor__event(m, SYNOR_EV_REPUTATION);
            ev.owner = c->owner;
            ev.qty = c->reputation;
            synor__emit(m, &ev);
        }
        return 0;
    case SYNOR_CMD_RECLAIM:
        return synor__lease_reclaim(m, c->owner, c->resource, c->qty);
    default: /* refused by synor__cmd_check */
        return synor__error(SYNOR_EINVAL, "market: command kind %d", (int)c->kind);
    }
}
