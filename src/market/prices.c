/* prices.c - price discovery and views of the books: best bid and ask,
 * spread, depth, last trade, VWAP, OHLC candles, volumes, open orders.
 * Read only; sums of quantities are 128-bit and shown saturated at
 * INT64_MAX (market_internal.h). */
#include <string.h>

#include "market/market_internal.h"

/* A level's total quantity: added up here, 128-bit, not kept by the book. */
static synor__u128 level_qty(const synor_market *m, const mlevel *L)
{
    synor__u128 q = 0;
    for (uint32_t h = L->head; h; h = m->pool[h].next)
        q += (synor__u128)m->pool[h].qty;
    return q;
}

int synor_market_prices_get(const synor_market *m, uint32_t r, synor_market_prices *out)
{
    if (!m || !out || r >= m->n_res)
        return synor__error(SYNOR_EINVAL, "market: resource index %u out of range", r);
    const mbook *k = &m->books[r];
    memset(out, 0, sizeof *out);
    for (int s = 0; s < 2; s++) {
        const mside *sd = &k->side[s];
        uint32_t i = sd->n;
        while (i > 0 && sd->v[i - 1].count == 0) /* skip emptied levels */
            i--;
        if (!i)
            continue;
        int64_t qty = synor__sat64(level_qty(m, &sd->v[i - 1]));
        if (s == SYNOR_BID) {
            out->has_bid = 1;
            out->best_bid = sd->v[i - 1].price;
            out->bid_qty = qty;
        } else {
            out->has_ask = 1;
            out->best_ask = sd->v[i - 1].price;
            out->ask_qty = qty;
        }
    }
    if (out->has_bid && out->has_ask)
        out->spread = out->best_ask - out->best_bid;
    out->has_last = k->has_last;
    out->last_price = k->last_price;
    out->last_qty = k->last_qty;
    out->last_time = k->last_time;
    out->volume_total = synor__sat64(k->volume_total);
    out->trades_total = k->trades_total;
    uint64_t from = m->last_time > SYNOR__DAY_NS ? m->last_time - SYNOR__DAY_NS : 0;
    synor__u128 notional = 0, vol = 0;
    for (uint32_t c = 0; c < k->n_candles; c++) {
        const mcandle *q = &k->candles[c];
        if (q->volume && q->start + m->cfg.candle_ns > from) {
            vol = synor__add_sat(vol, q->volume);
            notional = synor__add_sat(notional, q->notional);
        }
    }
    out->volume_24h = synor__sat64(vol);
    /* rounded to nearest; a saturated notional (beyond 2^128) is not exact */
    out->vwap_24h = vol ? synor__sat64(synor__add_sat(notional, vol / 2) / vol) : 0;
    return 0;
}

int synor_market_depth(const synor_market *m, uint32_t r, synor_level *bids, size_t *n_bids,
                       synor_level *asks, size_t *n_asks, size_t max)
{
    if (!m || r >= m->n_res)
        return synor__error(SYNOR_EINVAL, "market: resource index %u out of range", r);
    synor_level *outs[2] = {bids, asks};
    size_t *ns[2] = {n_bids, n_asks};
    for (int s = 0; s < 2; s++) {
        const mside *sd = &m->books[r].side[s];
        size_t k = 0;
        for (uint32_t l = sd->n; l-- > 0 && k < max;) {
            if (sd->v[l].count == 0)
                continue;
            outs[s][k].price = sd->v[l].price;
            outs[s][k].qty = synor__sat64(level_qty(m, &sd->v[l]));
            outs[s][k].orders = sd->v[l].count;
            k++;
        }
        *ns[s] = k;
    }
    return 0;
}

int synor_market_candles(const synor_market *m, uint32_t r, synor_candle *out, size_t max,
                         size_t *n)
{
    if (!m || r >= m->n_res || !n)
        return synor__error(SYNOR_EINVAL, "market: resource index %u out of range", r);
    const mbook *k = &m->books[r];
    uint64_t from = m->last_time > SYNOR__DAY_NS ? m->last_time - SYNOR__DAY_NS : 0;
    size_t got = 0;
    /* walk intervals oldest first */
    uint64_t first = from / m->cfg.candle_ns, last = m->last_time / m->cfg.candle_ns;
    for (uint64_t iv = first; iv <= last && got < max; iv++) {
        const mcandle *q = &k->candles[iv % k->n_candles];
        if (!q->volume || q->start != iv * m->cfg.candle_ns)
            continue;
        out[got].start = q->start;
        out[got].open = q->open;
        out[got].high = q->high;
        out[got].low = q->low;
        out[got].close = q->close;
        out[got].volume = synor__sat64(q->volume);
        got++;
    }
    *n = got;
    return 0;
}

int synor_market_order_get(const synor_market *m, uint64_t id, synor_market_order *out)
{
    uint32_t h = m ? synor__map_get(m, id) : 0;
    if (!h)
        return synor__error(SYNOR_ENOENT, "market: no open order %llu", (unsigned long long)id);
    const morder *o = &m->pool[h];
    out->id = o->id;
    out->owner = o->owner;
    out->resource = o->resource;
    out->side = (synor_side)o->side;
    out->price = o->price;
    out->qty = o->qty;
    out->expires = o->expires;
    out->interruptible = o->interruptible;
    return 0;
}

int synor_market_orders(const synor_market *m, uint32_t r, synor_side side, synor_market_order *out,
                        size_t max, size_t *n)
{
    if (!m || r >= m->n_res || (unsigned)side > 1 || !n)
        return synor__error(SYNOR_EINVAL, "market: resource index %u or side out of range", r);
    const mside *sd = &m->books[r].side[side];
    size_t k = 0;
    for (uint32_t l = sd->n; l-- > 0 && k < max;)
        for (uint32_t h = sd->v[l].head; h && k < max; h = m->pool[h].next) {
            const morder *o = &m->pool[h];
            out[k].id = o->id;
            out[k].owner = o->owner;
            out[k].resource = o->resource;
            out[k].side = (synor_side)o->side;
            out[k].price = o->price;
            out[k].qty = o->qty;
            out[k].expires = o->expires;
            out[k].interruptible = o->interruptible;
            k++;
        }
    *n = k;
    return 0;
}
