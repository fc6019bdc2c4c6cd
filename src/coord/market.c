/* market.c - the spot market inside the coordinator (--market DIR): the
 * market library (synor/market.h) over its own journal directory, which
 * stays the source of truth for orders. GET /v1/market/book shows every
 * resource's best prices and last trade (or one resource's depth with
 * ?resource=); POST /v1/market/orders places a limit order for the token's
 * owner, committed (fsync) before the answer. Prices are credits with 6
 * decimals: the market's ticks. One mutex serializes the market. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord/api.h"

typedef struct ev_sink {
    synor__buf *b;
    int n;
    int rejected;
    int reason;
} ev_sink;

static _Thread_local ev_sink *sink;

static void on_event(const synor_market_event *ev, void *user_data)
{
    (void)user_data;
    if (!sink)
        return;
    char line[1024];
    size_t n = synor_market_event_json(ev, 0, line, sizeof line);
    if (n && n < sizeof line) {
        while (n && line[n - 1] == '\n')
            line[--n] = 0;
        synor__buf_puts(sink->b, sink->n++ ? "," : "");
        synor__buf_append(sink->b, line, n);
    }
    if (ev->kind == SYNOR_EV_REJECTED) {
        sink->rejected = 1;
        sink->reason = ev->reason;
    }
}

int synor__coord_market_open(synor_coord *c)
{
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    cfg.dir = c->market_dir;
    cfg.on_event = on_event;
    int e = synor_catalog_create(&c->catalog);
    if (!e)
        e = synor_catalog_load_builtin(c->catalog);
    if (!e)
        e = synor_market_open(&cfg, &c->market);
    if (e)
        return synor__error(e, "coordinator: market '%s': %s", c->market_dir, synor_errmsg());
    return 0;
}

void synor__coord_market_close(synor_coord *c)
{
    if (c->market)
        synor_market_close(c->market);
    c->market = NULL;
    synor_catalog_destroy(c->catalog);
    c->catalog = NULL;
}

static void money(synor__buf *b, const char *key, int has, int64_t v)
{
    char t[48];
    synor__buf_printf(b, ",\"%s\":", key);
    if (has)
        synor__buf_printf(b, "\"%s\"", synor_rewards_format_fixed(v, 6, t, sizeof t));
    else
        synor__buf_puts(b, "null");
}

coord_resp synor__coord_market_book(coord_req *r)
{
    synor_coord *c = r->c;
    if (!c->market)
        return synor__coord_err(404, "this coordinator runs no market (start it with --market DIR)");
    const char *want = r->conn ? synor__coord_arg(r, "resource") : NULL;
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "{\"books\":[");
    pthread_mutex_lock(&c->market_mu);
    int found = 0;
    for (uint32_t i = 0;; i++) {
        const char *key = synor_market_resource_key(c->market, i);
        if (!key)
            break;
        if (want && strcmp(want, key))
            continue;
        synor_market_prices p;
        if (synor_market_prices_get(c->market, i, &p))
            continue;
        synor__buf_puts(&b, found++ ? ",{\"resource\":" : "{\"resource\":");
        synor__json_escape(&b, key);
        money(&b, "best_bid", p.has_bid, p.best_bid);
        money(&b, "best_ask", p.has_ask, p.best_ask);
        money(&b, "last", p.has_last, p.last_price);
        money(&b, "vwap_24h", p.vwap_24h != 0, p.vwap_24h);
        synor__buf_printf(&b, ",\"volume_24h\":%lld", (long long)p.volume_24h);
        if (want) {
            synor_level bids[20], asks[20];
            size_t nb = 20, na = 20;
            if (!synor_market_depth(c->market, i, bids, &nb, asks, &na, 20)) {
                for (int side = 0; side < 2; side++) {
                    synor_level *lv = side ? asks : bids;
                    size_t n = side ? na : nb;
                    synor__buf_printf(&b, ",\"%s\":[", side ? "asks" : "bids");
                    for (size_t k = 0; k < n; k++) {
                        char t[48];
                        synor__buf_printf(&b, "%s{\"price\":\"%s\",\"qty\":%lld,\"orders\":%u}",
                                          k ? "," : "",
                                          synor_rewards_format_fixed(lv[k].price, 6, t, sizeof t),
                                          (long long)lv[k].qty, lv[k].orders);
                    }
                    synor__buf_puts(&b, "]");
                }
            }
        }
        synor__buf_puts(&b, "}");
    }
    pthread_mutex_unlock(&c->market_mu);
    synor__buf_puts(&b, "]}\n");
    if (want && !found) {
        synor__buf_free(&b);
        return synor__coord_err(404, "no book for resource '%s'", want);
    }
    return synor__coord_json(200, synor__buf_take(&b));
}

coord_resp synor__coord_market_order(coord_req *r)
{
    synor_coord *c = r->c;
    if (!c->market)
        return synor__coord_err(404, "this coordinator runs no market (start it with --market DIR)");
    synor__jdoc *d;
    coord_resp err;
    if (synor__coord_parse_body(r, &d, &err))
        return err;
    const synor__jval *o = synor__jdoc_root(d);
    static const char *const keys[] = {"resource", "side", "price", "qty", "tif", NULL};
    const char *res, *side, *price, *tif = NULL;
    int64_t qty = 0, ticks = 0;
    const synor__jval *q = synor__json_get(o, "qty");
    int bad = synor__coord_check_keys(d, o, keys, &err) ||
              synor__coord_str(o, "resource", 1, 128, &res, &err) ||
              synor__coord_str(o, "side", 1, 8, &side, &err) ||
              synor__coord_str(o, "price", 1, 32, &price, &err) ||
              synor__coord_str(o, "tif", 0, 8, &tif, &err);
    if (!bad && (strcmp(side, "bid") && strcmp(side, "ask"))) {
        err = synor__coord_err(400, "field 'side': value '%s': bid or ask", side);
        bad = 1;
    }
    if (!bad && tif && strcmp(tif, "gtc") && strcmp(tif, "ioc") && strcmp(tif, "fok")) {
        err = synor__coord_err(400, "field 'tif': value '%s': gtc, ioc or fok", tif);
        bad = 1;
    }
    if (!bad && (!q || synor__json_int(d, q, "qty", 1, 1000000000, &qty))) {
        err = synor__coord_err(400, "field 'qty': an integer from 1 to 10^9");
        bad = 1;
    }
    if (!bad && synor_rewards_parse_fixed(price, 6, SYNOR_REWARDS_MAX_AMOUNT, "field 'price'", &ticks)) {
        err = synor__coord_err(400, "%s", synor_errmsg());
        bad = 1;
    }
    if (bad) {
        synor__jdoc_free(d);
        return err;
    }
    synor__buf cmd, evs;
    synor__buf_init(&cmd);
    synor__buf_init(&evs);
    pthread_mutex_lock(&c->market_mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (t <= synor_market_time(c->market))
        t = synor_market_time(c->market) + 1;
    synor__buf_printf(&cmd, "{\"cmd\":\"place\",\"id\":%llu,\"owner\":", (unsigned long long)t);
    synor__json_escape(&cmd, r->who.owner);
    synor__buf_puts(&cmd, ",\"resource\":");
    synor__json_escape(&cmd, res);
    synor__buf_printf(&cmd,
                      ",\"side\":\"%s\",\"type\":\"limit\",\"tif\":\"%s\",\"price\":%lld,"
                      "\"qty\":%lld,\"time\":%llu}",
                      side, tif ? tif : "gtc", (long long)ticks, (long long)qty,
                      (unsigned long long)t);
    ev_sink s = {.b = &evs};
    sink = &s;
    int reason = 0, e = cmd.failed ? SYNOR_ENOMEM : 0;
    if (!e)
        e = synor_market_submit_json(c->market, c->catalog, cmd.data, cmd.len, "order", 1, &reason);
    if (!e)
        e = synor_market_commit(c->market);
    sink = NULL;
    pthread_mutex_unlock(&c->market_mu);
    synor__buf_free(&cmd);
    synor__jdoc_free(d);
    coord_resp x;
    if (e) {
        x = synor__coord_store_err(e);
    } else if (reason) {
        x = synor__coord_err(400, "order rejected: %s (%s)", synor_market_reason_name(reason),
                             synor_market_reason_text(reason));
    } else {
        synor__buf b;
        synor__buf_init(&b);
        synor__buf_printf(&b, "{\"id\":%llu,\"events\":[", (unsigned long long)t);
        if (evs.len)
            synor__buf_append(&b, evs.data, evs.len);
        synor__buf_puts(&b, "]}\n");
        x = synor__coord_json(201, synor__buf_take(&b));
    }
    synor__buf_free(&evs);
    return x;
}
