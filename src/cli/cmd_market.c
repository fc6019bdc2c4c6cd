/* cmd_market.c - `synor market`: the spot market from the command line.
 *
 * A market lives in a directory (journal + snapshot, --dir, default
 * ./synor-market). Subcommands place, amend and cancel orders, show a book,
 * prices and trades, replay the journal, and run a batch of JSON-lines
 * commands printing JSON-lines events (format in docs/MARKET.md).
 * Events are printed only after the journal commit that makes them durable:
 * what is printed is acknowledged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "common/common.h"
#include "json/json.h"

typedef struct mctx {
    synor_market *m;
    synor_catalog *cat;
    synor__buf out; /* events not yet acknowledged */
    long line;      /* batch input line of the current command (0 = none) */
    int print_events;
} mctx;

static void format_event(mctx *x, const synor_market_event *e)
{
    char small[1024];
    size_t n = synor_market_event_json(e, x->line, small, sizeof small);
    if (n < sizeof small) {
        synor__buf_append(&x->out, small, n);
    } else { /* long names: the exact size is known now */
        char *big = malloc(n + 1);
        if (big) {
            synor_market_event_json(e, x->line, big, n + 1);
            synor__buf_append(&x->out, big, n);
            free(big);
        }
    }
    synor__buf_puts(&x->out, "\n");
}

static void on_event(const synor_market_event *e, void *ud)
{
    mctx *x = ud;
    if (x->print_events)
        format_event(x, e);
}

/* A rejection decided before the market saw the command (malformed line,
 * unknown resource or owner name). */
static void reject_line(mctx *x, const char *reason, const char *msg)
{
    synor__jw w;
    synor__jw_init(&w, &x->out, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "event");
    synor__jw_str(&w, "rejected");
    if (x->line) {
        synor__jw_key(&w, "line");
        synor__jw_int(&w, x->line);
    }
    synor__jw_key(&w, "reason");
    synor__jw_str(&w, reason);
    synor__jw_key(&w, "message");
    synor__jw_str(&w, msg);
    synor__jw_obj_end(&w);
    synor__buf_puts(&x->out, "\n");
}

/* Commits, then prints what the commit acknowledged. */
static int flush(mctx *x)
{
    if (synor_market_commit(x->m)) {
        cli_error("%s", synor_errmsg());
        return -1;
    }
    if (x->out.len) {
        fwrite(x->out.data, 1, x->out.len, stdout);
        fflush(stdout);
        x->out.len = 0;
    }
    return 0;
}

static int open_ctx(mctx *x, const cli_globals *g, const char *dir, int print, int replay,
                    int salvage)
{
    memset(x, 0, sizeof *x);
    synor__buf_init(&x->out);
    x->print_events = print;
    x->cat = cli_load_catalog(g);
    if (!x->cat)
        return -1;
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    cfg.dir = dir;
    cfg.on_event = on_event;
    cfg.user_data = x;
    cfg.replay_events = replay;
    cfg.salvage = salvage;
    if (synor_market_open(&cfg, &x->m)) {
        cli_error("%s", synor_errmsg());
        synor_catalog_destroy(x->cat);
        return -1;
    }
    if (synor_market_recovery_note(x->m)[0])
        fprintf(stderr, "synor market: recovery: %s\n", synor_market_recovery_note(x->m));
    return 0;
}

static void close_ctx(mctx *x)
{
    synor_market_close(x->m);
    synor_catalog_destroy(x->cat);
    synor__buf_free(&x->out);
}

/* Market time for interactive commands: the realtime clock in ns (order
 * expiry is wall-clock by nature), never below the market's last time. */
static uint64_t cli_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "2.49" -> 2490000 ticks, exactly (no floating point). */
static int parse_price(const char *s, int64_t *out)
{
    int64_t whole = 0, frac = 0;
    int digits = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (*p - '0');
        if (whole > ((int64_t)1 << 53) / 1000000)
            return -1;
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++) {
            if (++digits > 6)
                return -1;
            frac = frac * 10 + (*p - '0');
        }
        for (int d = digits; d < 6; d++)
            frac *= 10;
    }
    if (*p)
        return -1;
    *out = whole * 1000000 + frac;
    return 0;
}

/* ---- JSON-lines batch ---- */

static int field_u64(const synor__jdoc *d, const synor__jval *o, const char *key, uint64_t *out,
                     int required)
{
    synor__jval *v = synor__json_get(o, key);
    if (!v)
        return required ? synor__json_fail(d, o, SYNOR_ESCHEMA, "command",
                                           "missing required field \"%s\"", key)
                        : 0;
    int64_t x;
    int rc = synor__json_int(d, v, key, 0, INT64_MAX, &x);
    if (!rc)
        *out = (uint64_t)x;
    return rc;
}

static int field_i64(const synor__jdoc *d, const synor__jval *o, const char *key, int64_t *out,
                     int required)
{
    synor__jval *v = synor__json_get(o, key);
    if (!v)
        return required ? synor__json_fail(d, o, SYNOR_ESCHEMA, "command",
                                           "missing required field \"%s\"", key)
                        : 0;
    return synor__json_int(d, v, key, INT64_MIN, INT64_MAX, out);
}

static int field_str(const synor__jdoc *d, const synor__jval *o, const char *key, const char **out,
                     int required)
{
    synor__jval *v;
    int rc = synor__json_member(d, o, "command", key, SYNOR__J_STRING, required, &v);
    if (!rc && v)
        *out = v->u.str.s;
    return rc;
}

/* Applies one JSON line. Returns 0 (applied or rejected), 1 for a
 * malformed line (reported), or a negative code for a market failure. */
static int apply_line(mctx *x, const char *text, size_t len, const char *name)
{
    synor__jdoc *d;
    if (synor__json_parse_at(text, len, name, x->line ? (int)x->line : 1, &d)) {
        reject_line(x, "MALFORMED", synor_errmsg());
        fprintf(stderr, "synor market: %s\n", synor_errmsg());
        return 1;
    }
    const synor__jval *o = synor__jdoc_root(d);
    static const char *const keys[] = {"cmd",    "id",       "owner",         "resource",
                                       "side",   "type",     "tif",           "price",
                                       "qty",    "time",     "expires",       "interruptible",
                                       "priority", "min_reputation", "reputation", "duration",
                                       "zone", "zones", "also", NULL};
    const char *cmd = NULL, *owner = NULL, *res = NULL, *side = "bid", *type = "limit",
               *tif = "gtc";
    synor_market_cmd c;
    memset(&c, 0, sizeof c);
    uint64_t t = 0, rep = 0, prio = 0, minrep = 0;
    int64_t price = 0, qty = 0;
    synor__jval *intr = NULL;
    int rc;
    if ((rc = synor__json_expect(d, o, "command", SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, o, "command", keys)) ||
        (rc = field_str(d, o, "cmd", &cmd, 1)) || (rc = field_str(d, o, "owner", &owner, 1)) ||
        (rc = field_str(d, o, "resource", &res, 0)) || (rc = field_str(d, o, "side", &side, 0)) ||
        (rc = field_str(d, o, "type", &type, 0)) || (rc = field_str(d, o, "tif", &tif, 0)) ||
        (rc = field_u64(d, o, "id", &c.order_id, 0)) || (rc = field_i64(d, o, "price", &price, 0)) ||
        (rc = field_i64(d, o, "qty", &qty, 0)) || (rc = field_u64(d, o, "time", &t, 1)) ||
        (rc = field_u64(d, o, "expires", &c.expires, 0)) ||
        (rc = field_u64(d, o, "duration", &c.duration, 0)) ||
        (rc = field_u64(d, o, "priority", &prio, 0)) ||
        (rc = field_u64(d, o, "min_reputation", &minrep, 0)) ||
        (rc = field_u64(d, o, "reputation", &rep, 0)) ||
        (rc = synor__json_member(d, o, "command", "interruptible", SYNOR__J_BOOL, 0, &intr))) {
        reject_line(x, "MALFORMED", synor_errmsg());
        fprintf(stderr, "synor market: %s\n", synor_errmsg());
        synor__jdoc_free(d);
        return 1;
    }
    /* zones are interned on first use, like owners */
    const char *zone = NULL;
    synor__jval *zones = NULL, *also = NULL;
    if ((rc = field_str(d, o, "zone", &zone, 0)) ||
        (rc = synor__json_member(d, o, "command", "zones", SYNOR__J_ARRAY, 0, &zones)) ||
        (rc = synor__json_member(d, o, "command", "also", SYNOR__J_ARRAY, 0, &also))) {
        reject_line(x, "MALFORMED", synor_errmsg());
        fprintf(stderr, "synor market: %s\n", synor_errmsg());
        synor__jdoc_free(d);
        return 1;
    }
    uint32_t zid;
    if (zone) {
        if (synor_market_zone(x->m, zone, &zid)) {
            reject_line(x, "BAD_FIELD", synor_errmsg());
            synor__jdoc_free(d);
            return 0;
        }
        c.zone = (uint8_t)zid;
    }
    for (size_t k = 0; zones && k < zones->u.arr.n; k++) {
        const synor__jval *z = zones->u.arr.items[k];
        if (z->type != SYNOR__J_STRING || synor_market_zone(x->m, z->u.str.s, &zid)) {
            reject_line(x, "BAD_FIELD", z->type != SYNOR__J_STRING ? "zones must be strings"
                                                                    : synor_errmsg());
            synor__jdoc_free(d);
            return 0;
        }
        c.zones |= 1ull << zid;
    }
    c.price = price;
    c.qty = qty;
    c.interruptible = intr && intr->u.boolean;
    c.priority = (uint8_t)(prio > 255 ? 255 : prio);
    c.min_reputation = (uint8_t)(minrep > 255 ? 255 : minrep);
    c.reputation = (uint8_t)(rep > 255 ? 255 : rep);
    c.time = t;
    const char *bad = NULL;
    if (strcmp(cmd, "place") == 0) {
        c.kind = SYNOR_CMD_PLACE;
        if (strcmp(side, "bid") && strcmp(side, "ask"))
            bad = "side must be \"bid\" or \"ask\"";
        c.side = strcmp(side, "ask") == 0 ? SYNOR_ASK : SYNOR_BID;
        if (strcmp(type, "limit") && strcmp(type, "market"))
            bad = "type must be \"limit\" or \"market\"";
        c.type = strcmp(type, "market") == 0 ? SYNOR_MARKET : SYNOR_LIMIT;
        if (strcmp(tif, "gtc") && strcmp(tif, "ioc") && strcmp(tif, "fok"))
            bad = "tif must be \"gtc\", \"ioc\" or \"fok\"";
        c.tif = strcmp(tif, "ioc") == 0 ? SYNOR_IOC : strcmp(tif, "fok") == 0 ? SYNOR_FOK : SYNOR_GTC;
        if (!res)
            bad = "place needs \"resource\"";
    } else if (strcmp(cmd, "cancel") == 0) {
        c.kind = SYNOR_CMD_CANCEL;
    } else if (strcmp(cmd, "amend") == 0) {
        c.kind = SYNOR_CMD_AMEND;
    } else if (strcmp(cmd, "reputation") == 0) {
        c.kind = SYNOR_CMD_REPUTATION;
    } else if (strcmp(cmd, "reclaim") == 0) {
        c.kind = SYNOR_CMD_RECLAIM;
        if (!res)
            bad = "reclaim needs \"resource\"";
    } else {
        bad = "cmd must be place, cancel, amend, reputation or reclaim";
    }
    if (bad) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s:%d:%d: %s", name, o->line, o->col, bad);
        reject_line(x, "MALFORMED", msg);
        fprintf(stderr, "synor market: %s\n", msg);
        synor__jdoc_free(d);
        return 1;
    }
    /* names to indexes: owners are registered on their first order; a
     * resource is opened on first use if the catalog knows it */
    if (c.kind == SYNOR_CMD_PLACE || c.kind == SYNOR_CMD_REPUTATION)
        rc = synor_market_owner(x->m, owner, &c.owner);
    else
        rc = synor_market_find_owner(x->m, owner, &c.owner);
    if (rc) {
        reject_line(x, rc == SYNOR_ENOENT ? "UNKNOWN_OWNER" : "BAD_FIELD", synor_errmsg());
        synor__jdoc_free(d);
        return rc == SYNOR_ENOENT || rc == SYNOR_EINVAL ? 0 : rc;
    }
    if ((c.kind == SYNOR_CMD_PLACE || c.kind == SYNOR_CMD_RECLAIM) &&
        (rc = synor_market_resource(x->m, x->cat, res, &c.resource))) {
        reject_line(x, "UNKNOWN_RESOURCE", synor_errmsg());
        synor__jdoc_free(d);
        return rc == SYNOR_ENOENT || rc == SYNOR_EINVAL ? 0 : rc;
    }
    /* a bid's region set: more resources, opened like the first one */
    for (size_t k = 0; also && c.kind == SYNOR_CMD_PLACE && k < also->u.arr.n; k++) {
        const synor__jval *a = also->u.arr.items[k];
        if (k == SYNOR_MARKET_MAX_ALSO || a->type != SYNOR__J_STRING) {
            reject_line(x, "BAD_FIELD", a->type != SYNOR__J_STRING ? "also: resources are strings"
                                                                    : "also: at most 3 resources");
            synor__jdoc_free(d);
            return 0;
        }
        if ((rc = synor_market_resource(x->m, x->cat, a->u.str.s, &c.also[k]))) {
            reject_line(x, "UNKNOWN_RESOURCE", synor_errmsg());
            synor__jdoc_free(d);
            return rc == SYNOR_ENOENT || rc == SYNOR_EINVAL ? 0 : rc;
        }
        c.n_also = (uint8_t)(k + 1);
    }
    synor__jdoc_free(d);
    return synor_market_submit(x->m, &c);
}

static int run_batch(mctx *x, FILE *in, const char *name)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int malformed = 0;
    x->line = 0;
    while ((n = getline(&line, &cap, in)) >= 0) {
        x->line++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        int rc = apply_line(x, line, (size_t)n, name);
        if (rc < 0) {
            cli_error("%s", synor_errmsg());
            free(line);
            return CLI_FAIL;
        }
        malformed |= rc == 1;
        if (x->line % 1024 == 0 && flush(x))
            return CLI_FAIL;
    }
    free(line);
    if (flush(x))
        return CLI_FAIL;
    return malformed ? CLI_FAIL : CLI_OK;
}

/* ---- views ---- */

static void show_price(const char *label, int has, int64_t p)
{
    if (has)
        printf("  %-12s %lld.%06lld\n", label, (long long)(p / 1000000), (long long)(p % 1000000));
    else
        printf("  %-12s -\n", label);
}

static int show_book(mctx *x, const char *res, int depth)
{
    uint32_t r;
    if (synor_market_find_resource(x->m, res, &r)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    synor_level b[64], a[64];
    size_t nb, na;
    if (depth > 64)
        depth = 64;
    synor_market_depth(x->m, r, b, &nb, a, &na, (size_t)depth);
    printf("%s (price per device-hour; qty in device-hours)\n", res);
    printf("  %18s %8s | %-8s %-18s\n", "bid qty (orders)", "bid", "ask", "ask qty (orders)");
    for (size_t i = 0; i < (nb > na ? nb : na); i++) {
        char bq[32] = "", bp[32] = "", ap[32] = "", aq[32] = "";
        if (i < nb) {
            snprintf(bq, sizeof bq, "%lld (%u)", (long long)b[i].qty, b[i].orders);
            snprintf(bp, sizeof bp, "%lld.%06lld", (long long)(b[i].price / 1000000),
                     (long long)(b[i].price % 1000000));
        }
        if (i < na) {
            snprintf(aq, sizeof aq, "%lld (%u)", (long long)a[i].qty, a[i].orders);
            snprintf(ap, sizeof ap, "%lld.%06lld", (long long)(a[i].price / 1000000),
                     (long long)(a[i].price % 1000000));
        }
        printf("  %18s %8s | %-8s %-18s\n", bq, bp, ap, aq);
    }
    return CLI_OK;
}

static int show_prices(mctx *x, const char *res)
{
    uint32_t r;
    synor_market_prices p;
    if (synor_market_find_resource(x->m, res, &r) || synor_market_prices_get(x->m, r, &p)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    printf("%s\n", res);
    show_price("best bid", p.has_bid, p.best_bid);
    show_price("best ask", p.has_ask, p.best_ask);
    show_price("spread", p.has_bid && p.has_ask, p.spread);
    show_price("last trade", p.has_last, p.last_price);
    show_price("VWAP 24h", p.volume_24h > 0, p.vwap_24h);
    printf("  %-12s %lld\n  %-12s %lld in %llu trades\n", "volume 24h", (long long)p.volume_24h,
           "volume", (long long)p.volume_total, (unsigned long long)p.trades_total);
    synor_candle k[16];
    size_t nk;
    synor_market_candles(x->m, r, k, 16, &nk);
    for (size_t i = 0; i < nk; i++)
        printf("  candle %llu: open %lld high %lld low %lld close %lld volume %lld\n",
               (unsigned long long)k[i].start, (long long)k[i].open, (long long)k[i].high,
               (long long)k[i].low, (long long)k[i].close, (long long)k[i].volume);
    return CLI_OK;
}

static const struct msub {
    const char *name, *usage, *what;
} msubs[] = {
    {"place",
     "place --owner O --resource KIND/PROFILE/REGION --side bid|ask --qty N\n"
     "        (--price P | --market) [--tif gtc|ioc|fok] [--id N] [--expires-in SEC]\n"
     "        [--interruptible] [--zone Z] [--min-reputation N] [--duration SEC]\n"
     "        [--zones Z1,Z2,...] [--also R2,R3] [--priority N | --on-demand]",
     "enter an order; prints its events (accepted, trades, leases...)"},
    {"amend", "amend --owner O --id N --price P --qty N",
     "change an open order (a pure quantity reduction keeps time priority)"},
    {"cancel", "cancel --owner O --id N", "cancel an open order"},
    {"reputation", "reputation --owner O --value N", "set a provider's reputation (0..100)"},
    {"reclaim", "reclaim --owner PROVIDER --resource R --qty N",
     "take back N units of interruptible capacity leased out (preemption)"},
    {"book", "book RESOURCE [--depth N]", "L2 depth: price levels with quantity and orders"},
    {"orders", "orders RESOURCE", "open orders in priority order (JSON lines)"},
    {"prices", "prices RESOURCE", "best bid/ask, spread, last trade, VWAP, volume, OHLC"},
    {"leases", "leases", "leases of interruptible capacity not yet ended (JSON lines)"},
    {"trades", "trades", "trades since the last snapshot (JSON lines)"},
    {"replay", "replay [--events] [--salvage]",
     "recover; print seq and state hash (--salvage: cut a journal damaged inside)"},
    {"snapshot", "snapshot", "write a snapshot, truncate the journal"},
    {"batch", "batch [FILE]", "JSON-lines commands in (stdin if no FILE), JSON-lines events out"},
};

static void help(const char *sub)
{
    for (size_t i = 0; sub && i < SYNOR__ARRAY_LEN(msubs); i++)
        if (strcmp(sub, msubs[i].name) == 0) {
            printf("usage: synor market [--dir DIR] %s\n\n%s.\nPrices are per device-hour "
                   "with 6 decimals; quantities are device-hours (docs/MARKET.md).\n"
                   "Exit status: 0 success, 1 failure, 2 usage error.\n",
                   msubs[i].usage, msubs[i].what);
            return;
        }
    printf("usage: synor market [--dir DIR] COMMAND [ARGS]   (COMMAND --help for more)\n\n"
           "The spot market for compute capacity (docs/MARKET.md). The market's journal and\n"
           "snapshot live in DIR (default ./synor-market). Prices are per device-hour, with\n"
           "6 decimals (ticks of 10^-6); quantities are device-hours.\n\n");
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(msubs); i++)
        printf("  %s\n      %s\n", msubs[i].usage, msubs[i].what);
    printf("Exit status: 0 success, 1 failure (or a malformed batch line), 2 usage error.\n");
}

/* Digits only, so that a flag's value cannot change the JSON it goes into. */
static int is_uint(const char *v)
{
    if (!v || !*v || strlen(v) > 18)
        return 0;
    for (; *v; v++)
        if (*v < '0' || *v > '9')
            return 0;
    return 1;
}

static const char *opt(int argc, char **argv, const char *name)
{
    for (int i = 0; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return NULL;
}

static int has_flag(int argc, char **argv, const char *name)
{
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

/* JSON for one interactive command from its flags; CLI_OK or CLI_USAGE. */
static int flags_to_json(const char *sub, int argc, char **argv, uint64_t t, synor__buf *out)
{
    const char *owner = opt(argc, argv, "--owner"), *id = opt(argc, argv, "--id");
    const char *price_s = opt(argc, argv, "--price"), *qty = opt(argc, argv, "--qty");
    const char *res = opt(argc, argv, "--resource");
    int64_t price = 0;
    if (!owner)
        return cli_usage_error("market", "%s needs --owner", sub);
    if (price_s && parse_price(price_s, &price))
        return cli_usage_error("market", "--price '%s' is not a price with at most 6 decimals",
                               price_s);
    int place = strcmp(sub, "place") == 0, amend = strcmp(sub, "amend") == 0;
    int reclaim = strcmp(sub, "reclaim") == 0, rep = strcmp(sub, "reputation") == 0;
    const char *side = opt(argc, argv, "--side"), *value = opt(argc, argv, "--value");
    int market = has_flag(argc, argv, "--market");
    if (place && (!res || !side || !qty || (!price_s && !market)))
        return cli_usage_error("market", "place needs --resource, --side, --qty and --price "
                                         "(or --market)");
    if ((amend || strcmp(sub, "cancel") == 0) && !id)
        return cli_usage_error("market", "%s needs --id", sub);
    if (amend && (!price_s || !qty))
        return cli_usage_error("market", "amend needs --price and --qty");
    if (reclaim && (!res || !qty))
        return cli_usage_error("market", "reclaim needs --resource and --qty");
    if (rep && !value)
        return cli_usage_error("market", "reputation needs --value");
    synor__jw w;
    synor__jw_init(&w, out, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "cmd");
    synor__jw_str(&w, sub);
    synor__jw_key(&w, "owner");
    synor__jw_str(&w, owner);
    synor__jw_key(&w, "time");
    synor__jw_uint(&w, t);
    if (place || amend || strcmp(sub, "cancel") == 0) {
        synor__jw_key(&w, "id");
        synor__jw_uint(&w, id ? strtoull(id, NULL, 10) : t);
    }
    if (place || reclaim) {
        synor__jw_key(&w, "resource");
        synor__jw_str(&w, res);
    }
    if (place || amend || reclaim) {
        synor__jw_key(&w, "qty");
        synor__jw_int(&w, (int64_t)strtoll(qty, NULL, 10));
    }
    if (amend || (place && !market)) {
        synor__jw_key(&w, "price");
        synor__jw_int(&w, price);
    }
    if (rep) {
        synor__jw_key(&w, "reputation");
        synor__jw_uint(&w, strtoull(value, NULL, 10));
    }
    if (place) {
        const char *tif = opt(argc, argv, "--tif"), *exp = opt(argc, argv, "--expires-in");
        const char *minrep = opt(argc, argv, "--min-reputation"), *zone = opt(argc, argv, "--zone");
        const char *prio = opt(argc, argv, "--priority"), *dur = opt(argc, argv, "--duration");
        const char *zones = opt(argc, argv, "--zones"), *also = opt(argc, argv, "--also");
        synor__jw_key(&w, "side");
        synor__jw_str(&w, side);
        synor__jw_key(&w, "type");
        synor__jw_str(&w, market ? "market" : "limit");
        synor__jw_key(&w, "tif");
        synor__jw_str(&w, tif ? tif : "gtc");
        synor__jw_key(&w, "expires");
        synor__jw_uint(&w, exp ? t + strtoull(exp, NULL, 10) * 1000000000ull : 0);
        synor__jw_key(&w, "interruptible");
        synor__jw_bool(&w, has_flag(argc, argv, "--interruptible"));
        synor__jw_key(&w, "min_reputation");
        synor__jw_uint(&w, minrep ? strtoull(minrep, NULL, 10) : 0);
        synor__jw_key(&w, "priority");
        synor__jw_uint(&w, has_flag(argc, argv, "--on-demand") ? 255
                           : prio                              ? strtoull(prio, NULL, 10)
                                                               : 0);
        synor__jw_key(&w, "duration");
        synor__jw_uint(&w, dur ? strtoull(dur, NULL, 10) * 1000000000ull : 0);
        if (zone) {
            synor__jw_key(&w, "zone");
            synor__jw_str(&w, zone);
        }
        const char *lists[2][2] = {{"zones", zones}, {"also", also}};
        for (int l = 0; l < 2; l++) {
            if (!lists[l][1])
                continue;
            synor__jw_key(&w, lists[l][0]);
            synor__jw_arr_begin(&w);
            for (const char *p = lists[l][1]; *p;) {
                const char *q = strchr(p, ',');
                size_t n = q ? (size_t)(q - p) : strlen(p);
                char z[160];
                synor__strlcpy(z, p, n + 1 < sizeof z ? n + 1 : sizeof z);
                synor__jw_str(&w, z);
                p += n + (q != NULL);
            }
            synor__jw_arr_end(&w);
        }
    }
    synor__jw_obj_end(&w);
    return CLI_OK;
}

static int show_orders(mctx *x, const char *res)
{
    uint32_t r;
    if (synor_market_find_resource(x->m, res, &r)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    size_t cap = synor_market_open_orders(x->m) + 1, n;
    synor_market_order *o = malloc(cap * sizeof *o);
    if (!o)
        return CLI_FAIL;
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

static int show_leases(mctx *x)
{
    size_t cap = synor_market_lease_count(x->m) + 1, n;
    synor_market_lease *l = malloc(cap * sizeof *l);
    if (!l)
        return CLI_FAIL;
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

int cli_market(const cli_globals *g, int argc, char **argv)
{
    const char *dir = "synor-market";
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            help(NULL);
            return CLI_OK;
        }
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else
            return cli_usage_error("market", "unknown option '%s'", argv[i]);
    }
    if (i >= argc)
        return cli_usage_error("market", "missing command");
    const char *sub = argv[i];
    int sargc = argc - i;
    char **sargv = argv + i;
    int known = 0;
    for (size_t k = 0; k < SYNOR__ARRAY_LEN(msubs); k++)
        known |= strcmp(msubs[k].name, sub) == 0;
    if (!known)
        return cli_usage_error("market", "unknown command '%s'", sub);
    if (has_flag(sargc, sargv, "--help") || has_flag(sargc, sargv, "-h")) {
        help(sub);
        return CLI_OK;
    }
    /* flags whose values go into a JSON command must be plain numbers */
    static const char *const numeric[] = {"--id",       "--qty",      "--min-reputation",
                                          "--priority", "--duration", "--expires-in",
                                          "--value",    "--depth"};
    for (size_t k = 0; k < SYNOR__ARRAY_LEN(numeric); k++) {
        const char *v = opt(sargc, sargv, numeric[k]);
        if (has_flag(sargc, sargv, numeric[k]) && !is_uint(v))
            return cli_usage_error("market", "%s needs a whole number, not '%s'", numeric[k],
                                   v ? v : "");
    }

    mctx x;
    int trades = strcmp(sub, "trades") == 0, replay = strcmp(sub, "replay") == 0;
    if (trades || replay) {
        /* recovery with events: the journal since the last snapshot */
        if (open_ctx(&x, g, dir, replay ? has_flag(sargc, sargv, "--events") : 1, 1,
                     replay && has_flag(sargc, sargv, "--salvage")))
            return CLI_FAIL;
        if (trades) {
            /* keep only the trade lines */
            const char *p = x.out.data ? x.out.data : "", *q;
            for (; *p; p = q + 1) {
                q = strchr(p, '\n');
                if (!q)
                    break;
                static const char pre[] = "{\"event\":\"trade\"";
                if (strncmp(p, pre, sizeof pre - 1) == 0)
                    fwrite(p, 1, (size_t)(q - p + 1), stdout);
            }
        } else {
            if (x.out.len)
                fwrite(x.out.data, 1, x.out.len, stdout);
            printf("{\"seq\":%llu,\"state_hash\":\"%016llx\",\"open_orders\":%zu,"
                   "\"leases\":%zu,\"recovery\":\"%s\"}\n",
                   (unsigned long long)synor_market_seq(x.m),
                   (unsigned long long)synor_market_state_hash(x.m), synor_market_open_orders(x.m),
                   synor_market_lease_count(x.m), synor_market_recovery_note(x.m));
        }
        close_ctx(&x);
        return CLI_OK;
    }
    int view = strcmp(sub, "book") == 0 || strcmp(sub, "prices") == 0 ||
               strcmp(sub, "orders") == 0 || strcmp(sub, "leases") == 0 ||
               strcmp(sub, "snapshot") == 0;
    if (open_ctx(&x, g, dir, !view, 0, 0))
        return CLI_FAIL;
    int rc = CLI_OK;
    if (strcmp(sub, "batch") == 0) {
        const char *file = sargc > 1 ? sargv[1] : NULL;
        FILE *in = file ? fopen(file, "r") : stdin;
        if (!in) {
            cli_error("%s: cannot open", file);
            rc = CLI_FAIL;
        } else {
            rc = run_batch(&x, in, file ? file : "<stdin>");
            if (file)
                fclose(in);
        }
    } else if (strcmp(sub, "leases") == 0) {
        rc = show_leases(&x);
    } else if (strcmp(sub, "book") == 0 || strcmp(sub, "prices") == 0 ||
               strcmp(sub, "orders") == 0) {
        if (sargc < 2 || sargv[1][0] == '-') {
            rc = cli_usage_error("market", "%s needs a resource", sub);
        } else if (strcmp(sub, "book") == 0) {
            const char *d = opt(sargc, sargv, "--depth");
            rc = show_book(&x, sargv[1], d ? atoi(d) : 10);
        } else if (strcmp(sub, "orders") == 0) {
            rc = show_orders(&x, sargv[1]);
        } else {
            rc = show_prices(&x, sargv[1]);
        }
    } else if (strcmp(sub, "snapshot") == 0) {
        if (synor_market_snapshot(x.m)) {
            cli_error("%s", synor_errmsg());
            rc = CLI_FAIL;
        } else {
            printf("snapshot at seq %llu\n", (unsigned long long)synor_market_seq(x.m));
        }
    } else {
        /* place / amend / cancel / reputation / reclaim from flags, written
         * as a JSON-lines command (strings escaped by the JSON writer) and
         * applied through the batch path */
        synor__buf line;
        synor__buf_init(&line);
        uint64_t t = cli_time();
        if (t <= synor_market_time(x.m))
            t = synor_market_time(x.m) + 1; /* market time never goes back */
        rc = flags_to_json(sub, sargc, sargv, t, &line);
        if (rc == CLI_OK) {
            int r = apply_line(&x, line.data, line.len, "arguments");
            if (r < 0) {
                cli_error("%s", synor_errmsg());
                rc = CLI_FAIL;
            } else if (r == 1) {
                rc = CLI_USAGE;
            }
            if (flush(&x))
                rc = CLI_FAIL;
        }
        synor__buf_free(&line);
    }
    close_ctx(&x);
    return rc;
}
