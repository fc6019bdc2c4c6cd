/* cmd_market.c - `synor market`: the spot market from the command line.
 *
 * A market lives in a directory (journal + snapshot, --dir, default
 * ./synor-market). Subcommands place, amend and cancel orders, set a
 * reputation, reclaim leased capacity (each written as one JSON-lines
 * command and applied as the batch applies it), show a book, prices,
 * orders, leases and trades, replay the journal, and run a batch of
 * JSON-lines commands (market_batch.c; views in market_view.c).
 *
 * Every subcommand takes only its own flags: an unknown flag, a flag given
 * twice or a stray argument is a usage error (exit 2), never ignored. The
 * commands that only look (book, prices, orders, leases, trades, replay
 * without --salvage) open the market read-only: they create and change
 * nothing. A command the market rejects exits 1. Events are printed only
 * after the journal commit that makes them durable. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/market_cli.h"
#include "common/common.h"
#include "json/json.h"
#include "market/event_keep.h"

/* ------------------------------------------------------------ output */

static int out_reserve(mout *o, size_t n)
{
    if (o->cap - o->len >= n)
        return 0;
    size_t cap = o->cap ? o->cap : 1 << 16;
    while (cap - o->len < n)
        cap *= 2;
    char *d = realloc(o->data, cap);
    if (!d) {
        o->failed = 1;
        return -1;
    }
    o->data = d;
    o->cap = cap;
    return 0;
}

/* A kept event in mctx.out (keep_events): a header, then the event, or
 * the text of one that cannot be kept, padded to the header's alignment. */
typedef struct krec {
    size_t text; /* bytes of text that follow; 0: an event follows */
} krec;
#define KALIGN(n) (((n) + sizeof(krec) - 1) & ~(sizeof(krec) - 1))

static void on_event(const synor_market_event *e, void *ud)
{
    mctx *x = ud;
    if (!x->print_events || x->out.failed)
        return;
    if (x->keep_events) {
        /* kept, to be written on the thread that flushes the batch */
        if (out_reserve(&x->out, sizeof(krec) + sizeof(synor__kept_event)))
            return;
        krec *r = (krec *)(void *)(x->out.data + x->out.len);
        if (synor__event_keep(e, x->line, (synor__kept_event *)(void *)(r + 1)) == 0) {
            r->text = 0;
            x->out.len += sizeof *r + sizeof(synor__kept_event);
            return;
        }
        size_t room = 1200 + (e->message ? 6 * strlen(e->message) : 0);
        if (out_reserve(&x->out, sizeof(krec) + room + 1))
            return;
        r = (krec *)(void *)(x->out.data + x->out.len);
        char *t = (char *)(r + 1);
        size_t n = synor_market_event_json(e, x->line, t, room);
        if (n == 0 || n + 1 >= room) {
            x->out.failed = 1;
            return;
        }
        t[n++] = '\n';
        r->text = n;
        x->out.len += sizeof *r + KALIGN(n);
        return;
    }
    size_t room = 1200 + (e->message ? 6 * strlen(e->message) : 0);
    if (out_reserve(&x->out, room + 1))
        return;
    size_t n = synor_market_event_json(e, x->line, x->out.data + x->out.len,
                                       x->out.cap - x->out.len);
    if (n == 0 || n + 1 >= x->out.cap - x->out.len) {
        x->out.failed = 1; /* cannot happen with the room above, but never print half */
        return;
    }
    x->out.len += n;
    x->out.data[x->out.len++] = '\n';
}

int mcli_kept_text(const mout *kept, mout *text)
{
    for (size_t i = 0; i < kept->len;) {
        const krec *r = (const krec *)(const void *)(kept->data + i);
        size_t n = r->text ? r->text : SYNOR__KEPT_EVENT_MAX;
        if (out_reserve(text, n))
            return -1;
        if (r->text) {
            memcpy(text->data + text->len, r + 1, n);
            text->len += n;
            i += sizeof *r + KALIGN(n);
        } else {
            char *o = text->data + text->len;
            text->len += (size_t)(synor__kept_event_json((const synor__kept_event *)(const void *)(r + 1), o) - o);
            i += sizeof *r + sizeof(synor__kept_event);
        }
    }
    return 0;
}

int mcli_flush(mctx *x)
{
    if (synor_market_commit(x->m)) {
        cli_error("%s", synor_errmsg());
        return -1;
    }
    fflush(stdout);
    mout kept_text = {NULL, 0, 0, 0}, *o = &x->out;
    if (x->keep_events) {
        if (mcli_kept_text(&x->out, &kept_text)) {
            free(kept_text.data);
            cli_error("out of memory writing the events");
            return -1;
        }
        o = &kept_text;
    }
    for (size_t i = 0; i < o->len;) {
        ssize_t w = write(1, o->data + i, o->len - i);
        if (w < 0) {
            free(kept_text.data);
            cli_error("writing the events: %s", strerror(errno));
            return -1;
        }
        i += (size_t)w;
    }
    free(kept_text.data);
    x->out.len = 0;
    return 0;
}

int mcli_open(mctx *x, const cli_globals *g, const char *dir, int writable, int print,
              int replay_events, int salvage, int fsync)
{
    memset(x, 0, sizeof *x);
    x->print_events = print;
    if (writable && !(x->cat = cli_load_catalog(g)))
        return -1;
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    cfg.dir = dir;
    cfg.on_event = on_event;
    cfg.user_data = x;
    cfg.replay_events = replay_events;
    cfg.salvage = salvage;
    cfg.read_only = !writable;
    if (fsync >= 0)
        cfg.fsync = (synor_fsync_policy)fsync;
    if (synor_market_open(&cfg, &x->m)) {
        cli_error("%s", synor_errmsg());
        synor_catalog_destroy(x->cat);
        free(x->out.data);
        return -1;
    }
    if (synor_market_recovery_note(x->m)[0])
        fprintf(stderr, "synor market: recovery: %s\n", synor_market_recovery_note(x->m));
    return 0;
}

void mcli_close(mctx *x)
{
    synor_market_close(x->m);
    synor_catalog_destroy(x->cat);
    free(x->out.data);
}

/* ------------------------------------------------------------- flags */

/* A subcommand: its flags, "--name" (a switch), "--name=" (a value) or
 * "--name#" (a whole number), and its arguments. */
static const struct msub {
    const char *name, *usage, *what, *flags;
    int args;   /* 0 none, 1 a RESOURCE, 2 an optional FILE */
    int writes; /* opens the market to write */
} msubs[] = {
    {"place",
     "place --owner O --resource KIND/PROFILE/REGION --side bid|ask --qty N\n"
     "        (--price P | --market) [--tif gtc|ioc|fok] [--id N] [--expires-in SEC]\n"
     "        [--interruptible] [--zone Z] [--min-reputation N] [--duration SEC]\n"
     "        [--zones Z1,Z2,...] [--also R2,R3] [--priority N | --on-demand]",
     "enter an order; prints its events (accepted, trades, leases...). --id makes a\n"
     "retry safe: resent with the same id, an applied order answers DUPLICATE_ID",
     "--owner= --resource= --side= --qty# --price= --market --tif= --id# --expires-in# "
     "--interruptible --zone= --min-reputation# --duration# --zones= --also= --priority# "
     "--on-demand",
     0, 1},
    {"amend", "amend --owner O --id N --price P --qty N [--ref N]",
     "change an open order (a pure quantity reduction keeps time priority); --ref N\n"
     "gives the command an id of its own, so that a resent copy does not act twice",
     "--owner= --id# --price= --qty# --ref#", 0, 1},
    {"cancel", "cancel --owner O --id N [--ref N]", "cancel an open order",
     "--owner= --id# --ref#", 0, 1},
    {"reputation", "reputation --owner O --value N [--ref N]",
     "set a provider's reputation (0..100)", "--owner= --value# --ref#", 0, 1},
    {"reclaim", "reclaim --owner PROVIDER --resource R --qty N [--ref N]",
     "take back N units of interruptible capacity leased out (preemption)",
     "--owner= --resource= --qty# --ref#", 0, 1},
    {"book", "book RESOURCE [--depth N]", "L2 depth: price levels with quantity and orders",
     "--depth#", 1, 0},
    {"orders", "orders RESOURCE", "open orders in priority order (JSON lines)", "", 1, 0},
    {"prices", "prices RESOURCE", "best bid/ask, spread, last trade, VWAP, volume, OHLC", "", 1,
     0},
    {"leases", "leases", "leases of interruptible capacity not yet ended (JSON lines)", "", 0, 0},
    {"trades", "trades", "trades since the last snapshot (JSON lines)", "", 0, 0},
    {"replay", "replay [--events] [--salvage]",
     "recover and print seq and state hash, changing nothing (--salvage: cut a journal\n"
     "damaged inside, which writes)",
     "--events --salvage", 0, 0},
    {"snapshot", "snapshot", "write a snapshot, truncate the journal", "", 0, 1},
    {"batch", "batch [FILE] [--fsync batch|every|never]",
     "JSON-lines commands in (stdin if no FILE), JSON-lines events out; a pipe or a\n"
     "terminal is answered line by line. --fsync: fdatasync the journal at every\n"
     "commit (batch, the default), after every command (every), or leave it to the\n"
     "operating system (never: a crash of the machine may lose the last commits)",
     "--fsync=", 2, 1},
};

static void help(const struct msub *s)
{
    if (s) {
        printf("usage: synor market [--dir DIR] %s\n\n%s.\nPrices are per device-hour with 6 "
               "decimals; quantities are device-hours (docs/MARKET.md).\n"
               "Exit status: 0 success, 1 failure or a rejected command, 2 usage error.\n",
               s->usage, s->what);
        return;
    }
    printf("usage: synor market [--dir DIR] COMMAND [ARGS]   (COMMAND --help for more)\n\n"
           "The spot market for compute capacity (docs/MARKET.md). The market's journal and\n"
           "snapshot live in DIR (default ./synor-market). Prices are per device-hour, with\n"
           "6 decimals (ticks of 10^-6); quantities are device-hours.\n\n");
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(msubs); i++)
        printf("  %s\n      %s\n", msubs[i].usage, msubs[i].what);
    printf("Exit status: 0 success; 1 failure, a rejected command, or a batch with a rejected\n"
           "or malformed line; 2 usage error.\n");
}

#define MAX_FLAGS 20
typedef struct margs {
    const char *name[MAX_FLAGS], *value[MAX_FLAGS];
    int n;
    const char *arg; /* the RESOURCE or FILE */
} margs;

/* The kind of flag f for subcommand s: '=', '#', ' ' (a switch), or 0. */
static char flag_kind(const struct msub *s, const char *f)
{
    size_t n = strlen(f);
    for (const char *p = s->flags; (p = strstr(p, f)); p += n)
        if ((p == s->flags || p[-1] == ' ') && (p[n] == '=' || p[n] == '#' || p[n] == ' ' ||
                                                 p[n] == '\0'))
            return p[n] ? p[n] : ' ';
    return 0;
}

static int digits(const char *v)
{
    if (!*v)
        return 0;
    for (; *v; v++)
        if (*v < '0' || *v > '9')
            return 0;
    return 1;
}

static int parse_args(const struct msub *s, int argc, char **argv, margs *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (f[0] != '-' || !f[1]) {
            if (!s->args || a->arg)
                return cli_usage_error("market", "%s: unexpected argument '%s'", s->name, f);
            a->arg = f;
            continue;
        }
        char k = flag_kind(s, f);
        if (!k)
            return cli_usage_error("market", "%s: unknown option '%s'", s->name, f);
        for (int j = 0; j < a->n; j++)
            if (strcmp(a->name[j], f) == 0)
                return cli_usage_error("market", "%s: %s given twice", s->name, f);
        const char *v = NULL;
        if (k != ' ') {
            if (i + 1 >= argc)
                return cli_usage_error("market", "%s: %s needs a value", s->name, f);
            v = argv[++i];
            /* a whole number goes into the command as written: digits only,
             * so that no value can change the JSON it is written into */
            if (k == '#' && !digits(v))
                return cli_usage_error("market", "%s needs a whole number, not '%s'", f, v);
        }
        a->name[a->n] = f;
        a->value[a->n++] = v ? v : "";
    }
    if (s->args == 1 && !a->arg)
        return cli_usage_error("market", "%s needs a resource", s->name);
    return CLI_OK;
}

static const char *opt(const margs *a, const char *name)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->name[i], name) == 0)
            return a->value[i];
    return NULL;
}

/* ------------------------------------------------- interactive commands */

/* Market time for interactive commands: the realtime clock in ns (order
 * expiry is wall-clock by nature), never below the market's last time. */
static uint64_t cli_time(const synor_market *m)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return t > synor_market_time(m) ? t : synor_market_time(m) + 1;
}

/* "2.49" -> "2490000": the price in ticks as digits, exactly (no floating
 * point, any size: the command's parser says whether it is in range). */
static int price_ticks(const char *s, char *out, size_t cap)
{
    const char *dot = strchr(s, '.');
    size_t whole = dot ? (size_t)(dot - s) : strlen(s), frac = dot ? strlen(dot + 1) : 0;
    if (!whole || frac > 6 || whole + 7 > cap)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < whole; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (n || s[i] != '0')
            out[n++] = s[i];
    }
    for (size_t i = 0; i < 6; i++) {
        char c = i < frac ? dot[1 + i] : '0';
        if (c < '0' || c > '9')
            return -1;
        if (n || c != '0')
            out[n++] = c;
    }
    if (!n)
        out[n++] = '0';
    out[n] = '\0';
    return 0;
}

static void key_raw(synor__jw *w, synor__buf *b, const char *key, const char *digits_)
{
    synor__jw_key(w, key);
    synor__jw_null(w); /* a placeholder, replaced by the digits */
    b->len -= 4;
    synor__buf_puts(b, digits_);
}

/* seconds -> ns as digits, or -1 when it does not fit 64 bits */
static int seconds_ns(const char *sec, uint64_t add, char *out, size_t cap)
{
    errno = 0;
    unsigned long long s = strtoull(sec, NULL, 10), ns;
    if (errno || __builtin_mul_overflow(s, 1000000000ull, &ns) ||
        __builtin_add_overflow(ns, add, &ns))
        return -1;
    snprintf(out, cap, "%llu", ns);
    return 0;
}

/* The JSON-lines command for an interactive subcommand; CLI_OK or CLI_USAGE. */
static int command_json(const struct msub *s, const margs *a, uint64_t t, synor__buf *out)
{
    const char *sub = s->name;
    int place = !strcmp(sub, "place"), amend = !strcmp(sub, "amend"),
        cancel = !strcmp(sub, "cancel"), reclaim = !strcmp(sub, "reclaim"),
        rep = !strcmp(sub, "reputation"), market = opt(a, "--market") != NULL;
    const char *owner = opt(a, "--owner"), *res = opt(a, "--resource"), *qty = opt(a, "--qty"),
               *price = opt(a, "--price"), *id = opt(a, "--id"), *side = opt(a, "--side");
    if (!owner)
        return cli_usage_error("market", "%s needs --owner", sub);
    if (place && (!res || !side || !qty || (!price && !market)))
        return cli_usage_error("market", "place needs --resource, --side, --qty and --price "
                                         "(or --market)");
    if (place && price && market)
        return cli_usage_error("market", "place takes --price or --market, not both");
    if ((amend || cancel) && !id)
        return cli_usage_error("market", "%s needs --id", sub);
    if (amend && (!price || !qty))
        return cli_usage_error("market", "amend needs --price and --qty");
    if (reclaim && (!res || !qty))
        return cli_usage_error("market", "reclaim needs --resource and --qty");
    if (rep && !opt(a, "--value"))
        return cli_usage_error("market", "reputation needs --value");
    char ticks[64], num[32];
    if (price && price_ticks(price, ticks, sizeof ticks))
        return cli_usage_error("market", "--price '%s' is not a price with at most 6 decimals",
                               price);
    synor__jw w;
    synor__jw_init(&w, out, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "cmd");
    synor__jw_str(&w, sub);
    synor__jw_key(&w, "owner");
    synor__jw_str(&w, owner);
    synor__jw_key(&w, "time");
    synor__jw_uint(&w, t);
    snprintf(num, sizeof num, "%llu", (unsigned long long)t);
    if (place || amend || cancel)
        key_raw(&w, out, "id", id ? id : num); /* a place's id defaults to the time */
    if (opt(a, "--ref"))
        key_raw(&w, out, "ref", opt(a, "--ref"));
    if (res) {
        synor__jw_key(&w, "resource");
        synor__jw_str(&w, res);
    }
    if (qty)
        key_raw(&w, out, "qty", qty);
    if (price)
        key_raw(&w, out, "price", ticks);
    if (rep)
        key_raw(&w, out, "reputation", opt(a, "--value"));
    if (place) {
        const char *tif = opt(a, "--tif"), *zone = opt(a, "--zone"), *v;
        synor__jw_key(&w, "side");
        synor__jw_str(&w, side);
        synor__jw_key(&w, "type");
        synor__jw_str(&w, market ? "market" : "limit");
        synor__jw_key(&w, "tif");
        synor__jw_str(&w, tif ? tif : "gtc");
        if ((v = opt(a, "--expires-in"))) {
            if (seconds_ns(v, t, num, sizeof num))
                return cli_usage_error("market", "--expires-in %s is too far", v);
            key_raw(&w, out, "expires", num);
        }
        if ((v = opt(a, "--duration"))) {
            if (seconds_ns(v, 0, num, sizeof num))
                return cli_usage_error("market", "--duration %s is too long", v);
            key_raw(&w, out, "duration", num);
        }
        if (opt(a, "--interruptible")) {
            synor__jw_key(&w, "interruptible");
            synor__jw_bool(&w, 1);
        }
        if ((v = opt(a, "--min-reputation")))
            key_raw(&w, out, "min_reputation", v);
        if (opt(a, "--on-demand") && opt(a, "--priority"))
            return cli_usage_error("market", "place takes --priority or --on-demand, not both");
        if ((v = opt(a, "--on-demand") ? "255" : opt(a, "--priority")))
            key_raw(&w, out, "priority", v);
        if (zone) {
            synor__jw_key(&w, "zone");
            synor__jw_str(&w, zone);
        }
        const char *lists[2][2] = {{"zones", opt(a, "--zones")}, {"also", opt(a, "--also")}};
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
    return out->failed ? (cli_error("out of memory"), CLI_FAIL) : CLI_OK;
}

static int run_command(mctx *x, const struct msub *s, const margs *a)
{
    synor__buf line;
    synor__buf_init(&line);
    int rc = command_json(s, a, cli_time(x->m), &line);
    if (rc == CLI_OK) {
        int reason = 0;
        int r = synor_market_submit_json(x->m, x->cat, line.data, line.len, "arguments", 0,
                                         &reason);
        char msg[700] = "";
        if (reason == SYNOR_REASON_MALFORMED)
            synor__strlcpy(msg, synor_errmsg(), sizeof msg);
        if (r < 0) {
            cli_error("%s", synor_errmsg());
            rc = CLI_FAIL;
        } else if (mcli_flush(x)) {
            rc = CLI_FAIL;
        } else if (reason == SYNOR_REASON_MALFORMED) {
            rc = cli_usage_error("market", "%s", msg);
        } else if (reason) {
            fprintf(stderr, "synor market: rejected: %s (%s)\n", synor_market_reason_name(reason),
                    synor_market_reason_text(reason));
            rc = CLI_FAIL;
        }
    }
    synor__buf_free(&line);
    return rc;
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
    const struct msub *s = NULL;
    for (size_t k = 0; k < SYNOR__ARRAY_LEN(msubs); k++)
        if (strcmp(msubs[k].name, argv[i]) == 0)
            s = &msubs[k];
    if (!s)
        return cli_usage_error("market", "unknown command '%s'", argv[i]);
    for (int k = i + 1; k < argc; k++)
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            help(s);
            return CLI_OK;
        }
    margs a;
    int rc = parse_args(s, argc - i, argv + i, &a);
    if (rc != CLI_OK)
        return rc;
    int replay = !strcmp(s->name, "replay"), trades = !strcmp(s->name, "trades");
    int salvage = replay && opt(&a, "--salvage");
    int events = trades || (replay && opt(&a, "--events")) || s->writes;
    const char *fs = opt(&a, "--fsync");
    int fsync = !fs ? -1 : !strcmp(fs, "batch") ? SYNOR_FSYNC_BATCH
                : !strcmp(fs, "every")          ? SYNOR_FSYNC_EVERY
                : !strcmp(fs, "never")          ? SYNOR_FSYNC_NEVER
                                                : -2;
    if (fsync == -2)
        return cli_usage_error("market", "--fsync must be batch, every or never, not '%s'", fs);
    mctx x;
    if (mcli_open(&x, g, dir, s->writes || salvage, events, replay || trades, salvage, fsync))
        return CLI_FAIL;
    if (!strcmp(s->name, "batch")) {
        int fd = a.arg ? open(a.arg, O_RDONLY) : 0;
        if (fd < 0) {
            cli_error("%s: cannot open: %s", a.arg, strerror(errno));
            rc = CLI_FAIL;
        } else {
            rc = mcli_batch(&x, fd, a.arg ? a.arg : "<stdin>");
            if (a.arg)
                close(fd);
        }
    } else if (!strcmp(s->name, "book")) {
        const char *d = opt(&a, "--depth");
        rc = mcli_book(&x, a.arg, d ? (strlen(d) > 3 ? 64 : atoi(d)) : 10);
    } else if (!strcmp(s->name, "orders")) {
        rc = mcli_orders(&x, a.arg);
    } else if (!strcmp(s->name, "prices")) {
        rc = mcli_prices(&x, a.arg);
    } else if (!strcmp(s->name, "leases")) {
        rc = mcli_leases(&x);
    } else if (trades) {
        rc = mcli_trades(&x);
    } else if (replay) {
        rc = mcli_replay(&x);
    } else if (!strcmp(s->name, "snapshot")) {
        if (synor_market_snapshot(x.m)) {
            cli_error("%s", synor_errmsg());
            rc = CLI_FAIL;
        } else {
            printf("snapshot at seq %llu\n", (unsigned long long)synor_market_seq(x.m));
        }
    } else {
        rc = run_command(&x, s, &a);
    }
    mcli_close(&x);
    return rc;
}
