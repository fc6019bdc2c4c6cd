/* market_view.c - what `synor market` shows: a book's depth, prices, open
 * orders, leases, the trades and events recovery replays. The market is
 * opened read-only for all of these: looking changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/market_cli.h"

/* A sum of quantities: the API reads INT64_MAX where the sum does not fit
 * (docs/MARKET.md), shown as at least that. */
static void fmt_sum(char *buf, size_t n, int64_t v)
{
    snprintf(buf, n, "%lld%s", (long long)v, v == INT64_MAX ? "+" : "");
}

static void fmt_price(char *buf, size_t n, int64_t p)
{
    snprintf(buf, n, "%lld.%06lld", (long long)(p / 1000000), (long long)(p % 1000000));
}

static int find(mctx *x, const char *res, uint32_t *r)
{
    if (synor_market_find_resource(x->m, res, r) == 0)
        return 0;
    cli_error("%s", synor_errmsg());
    return -1;
}

int mcli_book(mctx *x, const char *res, int depth)
{
    uint32_t r;
    if (find(x, res, &r))
        return CLI_FAIL;
    synor_level b[64], a[64];
    size_t nb, na;
    if (depth > 64)
        depth = 64;
    synor_market_depth(x->m, r, b, &nb, a, &na, (size_t)depth);
    printf("%s (price per device-hour; qty in device-hours)\n", res);
    printf("  %18s %8s | %-8s %-18s\n", "bid qty (orders)", "bid", "ask", "ask qty (orders)");
    for (size_t i = 0; i < (nb > na ? nb : na); i++) {
        char bq[48] = "", bp[32] = "", ap[32] = "", aq[48] = "", s[32];
        if (i < nb) {
            fmt_sum(s, sizeof s, b[i].qty);
            snprintf(bq, sizeof bq, "%s (%u)", s, b[i].orders);
            fmt_price(bp, sizeof bp, b[i].price);
        }
        if (i < na) {
            fmt_sum(s, sizeof s, a[i].qty);
            snprintf(aq, sizeof aq, "%s (%u)", s, a[i].orders);
            fmt_price(ap, sizeof ap, a[i].price);
        }
        printf("  %18s %8s | %-8s %-18s\n", bq, bp, ap, aq);
    }
    return CLI_OK;
}

static void show_price(const char *label, int has, int64_t p)
{
    char s[32] = "-";
    if (has)
        fmt_price(s, sizeof s, p);
    printf("  %-12s %s\n", label, s);
}

int mcli_prices(mctx *x, const char *res)
{
    uint32_t r;
    synor_market_prices p;
    if (find(x, res, &r))
        return CLI_FAIL;
    if (synor_market_prices_get(x->m, r, &p)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    printf("%s\n", res);
    show_price("best bid", p.has_bid, p.best_bid);
    show_price("best ask", p.has_ask, p.best_ask);
    show_price("spread", p.has_bid && p.has_ask, p.spread);
    show_price("last trade", p.has_last, p.last_price);
    show_price("VWAP 24h", p.volume_24h > 0, p.vwap_24h);
    char v24[32], vt[32];
    fmt_sum(v24, sizeof v24, p.volume_24h);
    fmt_sum(vt, sizeof vt, p.volume_total);
    printf("  %-12s %s\n  %-12s %s in %llu trades\n", "volume 24h", v24, "volume", vt,
           (unsigned long long)p.trades_total);
    synor_candle k[16];
    size_t nk;
    synor_market_candles(x->m, r, k, 16, &nk);
    for (size_t i = 0; i < nk; i++) {
        fmt_sum(v24, sizeof v24, k[i].volume);
        printf("  candle %llu: open %lld high %lld low %lld close %lld volume %s\n",
               (unsigned long long)k[i].start, (long long)k[i].open, (long long)k[i].high,
               (long long)k[i].low, (long long)k[i].close, v24);
    }
    return CLI_OK;
}

int mcli_orders(mctx *x, const char *res)
{
    uint32_t r;
    if (find(x, res, &r))
        return CLI_FAIL;
    size_t cap = synor_market_open_orders(x->m) + 1, n;
    synor_market_order *o = malloc(cap * sizeof *o);
    if (!o) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    for (int s = 0; s < 2; s++) {
        synor_market_orders(x->m, r, (synor_side)s, o, cap, &n);
        for (size_t i = 0; i < n; i++)
            printf("{\"id\":%llu,\"owner\":\"%s\",\"side\":\"%s\",\"price\":%lld,"
                   "\"qty\":%lld,\"expires\":%llu,\"interruptible\":%s}\n",
                   (unsigned long long)o[i].id, synor_market_owner_name(x->m, o[i].owner),
                   s == SYNOR_BID ? "bid" : "ask", (long long)o[i].price, (long long)o[i].qty,
                   (unsigned long long)o[i].expires, o[i].interruptible ? "true" : "false");
    }
    free(o);
    return CLI_OK;
}

int mcli_leases(mctx *x)
{
    size_t cap = synor_market_lease_count(x->m) + 1, n;
    synor_market_lease *l = malloc(cap * sizeof *l);
    if (!l) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    synor_market_leases(x->m, l, cap, &n);
    for (size_t i = 0; i < n; i++)
        printf("{\"id\":%llu,\"holder\":\"%s\",\"provider\":\"%s\",\"resource\":\"%s\","
               "\"price\":%lld,\"qty\":%lld,\"start\":%llu,\"end\":%llu,\"deadline\":%llu,"
               "\"priority\":%d,\"migrated\":%s}\n",
               (unsigned long long)l[i].id, synor_market_owner_name(x->m, l[i].holder),
               synor_market_owner_name(x->m, l[i].provider),
               synor_market_resource_key(x->m, l[i].resource), (long long)l[i].price,
               (long long)l[i].qty, (unsigned long long)l[i].start, (unsigned long long)l[i].end,
               (unsigned long long)l[i].deadline, l[i].priority, l[i].migrated ? "true" : "false");
    free(l);
    return CLI_OK;
}

int mcli_trades(mctx *x)
{
    if (x->out.failed) {
        cli_error("out of memory collecting the trades");
        return CLI_FAIL;
    }
    static const char pre[] = "{\"event\":\"trade\"";
    for (size_t i = 0; i < x->out.len;) {
        const char *p = x->out.data + i, *q = memchr(p, '\n', x->out.len - i);
        size_t n = q ? (size_t)(q - p) + 1 : x->out.len - i;
        if (n >= sizeof pre - 1 && memcmp(p, pre, sizeof pre - 1) == 0)
            fwrite(p, 1, n, stdout);
        i += n;
    }
    return CLI_OK;
}

int mcli_replay(mctx *x)
{
    if (x->out.failed) {
        cli_error("out of memory collecting the events");
        return CLI_FAIL;
    }
    if (x->out.len)
        fwrite(x->out.data, 1, x->out.len, stdout);
    /* the note is text: quotes and backslashes of a path must not break the line */
    printf("{\"seq\":%llu,\"state_hash\":\"%016llx\",\"open_orders\":%zu,\"leases\":%zu,"
           "\"recovery\":\"",
           (unsigned long long)synor_market_seq(x->m),
           (unsigned long long)synor_market_state_hash(x->m), synor_market_open_orders(x->m),
           synor_market_lease_count(x->m));
    for (const char *p = synor_market_recovery_note(x->m); *p; p++) {
        if (*p == '"' || *p == '\\')
            putchar('\\');
        if ((unsigned char)*p >= 0x20)
            putchar(*p);
    }
    printf("\"}\n");
    return CLI_OK;
}
