/* validate.c - is a command acceptable? Decided before anything changes.
 *
 * synor_market_submit asks synor__cmd_check first; a command it refuses
 * produces one REJECTED event and changes nothing at all - not the books,
 * not the sequence or the market's time (so nothing expires because of it),
 * not the journal (only applied commands are journaled). The check reads
 * the state as it will be once the command's time has expired what it
 * expires, without expiring anything: an order that expires at or before
 * the command's time is already gone for a cancel or an amend, and a lease
 * whose term has ended cannot be reclaimed.
 *
 * Order of the checks: the command's identity first (an id already used is
 * DUPLICATE_ID whatever else the command says, so that a client resending a
 * command after a crash gets the same answer at any time), then its time,
 * then the fields of its kind. */
#include "market/market_internal.h"

/* Is order h still open at time now (not expiring at or before it)? */
static int open_at(const synor_market *m, uint32_t h, uint64_t now)
{
    return h && !(m->pool[h].expires && m->pool[h].expires <= now);
}

static int check_place(const synor_market *m, const synor_market_cmd *c)
{
    int limit = c->type == SYNOR_LIMIT;
    if (c->resource >= m->n_res)
        return SYNOR_REASON_UNKNOWN_RESOURCE;
    if (c->owner >= m->n_owners)
        return SYNOR_REASON_UNKNOWN_OWNER;
    if ((unsigned)c->side > 1 || (unsigned)c->type > 1 || (unsigned)c->tif > 2 ||
        c->interruptible > 1 || /* a flag: any other value would be kept as it is */
        c->min_reputation > 100 || c->order_id == 0 || c->zone > m->n_zones ||
        (c->zones & ~(((uint64_t)2 << m->n_zones) - 2)))
        return SYNOR_REASON_BAD_FIELD;
    if (c->qty <= 0 || c->qty > SYNOR__MAX_QTY)
        return SYNOR_REASON_BAD_QUANTITY;
    if (limit ? (c->price <= 0 || c->price > SYNOR__MAX_PRICE) : c->price != 0)
        return SYNOR_REASON_BAD_PRICE;
    if (c->expires && c->expires <= c->time)
        return SYNOR_REASON_BAD_EXPIRY;
    /* version 1 only refused the id of an open order */
    if (m->legacy && open_at(m, synor__map_get(m, c->order_id), c->time))
        return SYNOR_REASON_DUPLICATE_ID;
    if (c->ref && c->ref != c->order_id)
        return SYNOR_REASON_BAD_FIELD;
    if (c->n_also) {
        if (c->n_also > SYNOR_MARKET_MAX_ALSO || c->side != SYNOR_BID)
            return SYNOR_REASON_BAD_FIELD;
        for (unsigned k = 0; k < c->n_also; k++) {
            uint32_t r = c->also[k];
            if (r >= m->n_res || r == c->resource || !synor__same_offer(m, r, c->resource))
                return SYNOR_REASON_BAD_FIELD;
            for (unsigned j = 0; j < k; j++)
                if (c->also[j] == r)
                    return SYNOR_REASON_BAD_FIELD;
        }
    }
    return 0;
}

static int check_order_cmd(const synor_market *m, const synor_market_cmd *c)
{
    uint32_t h = synor__map_get(m, c->order_id);
    if (!open_at(m, h, c->time))
        return SYNOR_REASON_UNKNOWN_ORDER;
    if (m->pool[h].owner != c->owner)
        return SYNOR_REASON_NOT_OWNER;
    if (c->kind == SYNOR_CMD_CANCEL)
        return 0;
    if (c->qty <= 0 || c->qty > SYNOR__MAX_QTY)
        return SYNOR_REASON_BAD_QUANTITY;
    if (c->price <= 0 || c->price > SYNOR__MAX_PRICE)
        return SYNOR_REASON_BAD_PRICE;
    return 0;
}

/* A reclaim needs a running (not yet warned) lease of the provider on the
 * resource whose term has not ended by the command's time. */
static int check_reclaim(const synor_market *m, const synor_market_cmd *c)
{
    if (c->owner >= m->n_owners)
        return SYNOR_REASON_UNKNOWN_OWNER;
    if (c->resource >= m->n_res)
        return SYNOR_REASON_UNKNOWN_RESOURCE;
    if (c->qty <= 0 || c->qty > SYNOR__MAX_QTY)
        return SYNOR_REASON_BAD_QUANTITY;
    for (uint32_t i = 0; i < m->n_leases; i++) {
        const mlease *l = &m->leases[i];
        if (l->provider == c->owner && l->resource == c->resource && !l->deadline &&
            (!l->end || l->end > c->time))
            return 0;
    }
    return SYNOR_REASON_NOTHING_LEASED;
}

int synor__cmd_check(const synor_market *m, const synor_market_cmd *c)
{
    uint64_t id = c->kind == SYNOR_CMD_PLACE ? c->order_id : c->ref;
    if (id && !m->legacy && synor__used_has(m, id))
        return SYNOR_REASON_DUPLICATE_ID;
    if (c->time < m->last_time)
        return SYNOR_REASON_TIME_BACKWARDS;
    switch (c->kind) {
    case SYNOR_CMD_PLACE:
        return check_place(m, c);
    case SYNOR_CMD_CANCEL:
    case SYNOR_CMD_AMEND:
        return check_order_cmd(m, c);
    case SYNOR_CMD_REPUTATION:
        if (c->owner >= m->n_owners)
            return SYNOR_REASON_UNKNOWN_OWNER;
        return c->reputation > 100 ? SYNOR_REASON_BAD_FIELD : 0;
    case SYNOR_CMD_RECLAIM:
        return check_reclaim(m, c);
    default:
        return SYNOR_REASON_BAD_FIELD;
    }
}
