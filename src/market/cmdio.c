/* cmdio.c - the JSON-lines form of market events (docs/MARKET.md), so that
 * every front end (the CLI's batch mode, a service) writes the same
 * format. Not on the hot path: the market itself never formats JSON. */
#include <string.h>

#include "json/json.h"
#include "market/market_internal.h"

static const char *const kind_names[] = {"",        "accepted",  "rejected", "trade",
                                         "cancelled", "expired", "amended",  "reputation",
                                         "leased",  "preempted", "migrated", "lease_ended"};

size_t synor_market_event_json(const synor_market_event *e, long line, char *buf, size_t cap)
{
    synor__buf out;
    synor__buf_init(&out);
    synor__jw w;
    synor__jw_init(&w, &out, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "event");
    synor__jw_str(&w, (unsigned)e->kind < SYNOR__ARRAY_LEN(kind_names) ? kind_names[e->kind] : "?");
    if (e->seq) { /* a rejected command has none */
        synor__jw_key(&w, "seq");
        synor__jw_uint(&w, e->seq);
    }
    if (line > 0) {
        synor__jw_key(&w, "line");
        synor__jw_int(&w, line);
    }
    synor__jw_key(&w, "time");
    synor__jw_uint(&w, e->time);
    if (e->kind != SYNOR_EV_REPUTATION) {
        synor__jw_key(&w, "id");
        synor__jw_uint(&w, e->order_id);
    }
    const char *owner = synor_market_owner_name(e->market, e->owner);
    synor__jw_key(&w, "owner");
    synor__jw_str(&w, owner ? owner : "?");
    if (e->kind == SYNOR_EV_REPUTATION) {
        synor__jw_key(&w, "reputation");
        synor__jw_int(&w, e->qty);
    } else {
        const char *res = synor_market_resource_key(e->market, e->resource);
        synor__jw_key(&w, "resource");
        synor__jw_str(&w, res ? res : "?");
        synor__jw_key(&w, "side");
        synor__jw_str(&w, e->side == SYNOR_BID ? "bid" : "ask");
        synor__jw_key(&w, "price");
        synor__jw_int(&w, e->price);
        synor__jw_key(&w, "qty");
        synor__jw_int(&w, e->qty);
        synor__jw_key(&w, "remaining");
        synor__jw_int(&w, e->remaining);
    }
    if (e->kind == SYNOR_EV_TRADE) {
        const char *mo = synor_market_owner_name(e->market, e->maker_owner);
        synor__jw_key(&w, "maker_id");
        synor__jw_uint(&w, e->maker_id);
        synor__jw_key(&w, "maker_owner");
        synor__jw_str(&w, mo ? mo : "?");
    }
    if (e->deadline) {
        synor__jw_key(&w, "deadline");
        synor__jw_uint(&w, e->deadline);
    }
    if (e->kind >= SYNOR_EV_LEASED) {
        const char *p = synor_market_owner_name(e->market, e->maker_owner);
        synor__jw_key(&w, "provider");
        synor__jw_str(&w, p ? p : "?");
    }
    if (e->kind == SYNOR_EV_AMENDED) {
        synor__jw_key(&w, "kept_priority");
        synor__jw_bool(&w, e->kept_priority);
    }
    if (e->reason) {
        synor__jw_key(&w, "reason");
        synor__jw_str(&w, synor_market_reason_name(e->reason));
        synor__jw_key(&w, "message");
        synor__jw_str(&w, synor_market_reason_text(e->reason));
    }
    synor__jw_obj_end(&w);
    size_t n = out.failed ? 0 : out.len;
    if (cap) {
        size_t k = n < cap - 1 ? n : cap - 1;
        if (k)
            memcpy(buf, out.data, k);
        buf[k] = '\0';
    }
    synor__buf_free(&out);
    return n;
}

