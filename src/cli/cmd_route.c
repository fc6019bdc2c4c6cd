/* cmd_route.c - `synor route`: load inventory files into a registry and
 * route one task over it (docs/ROUTER.md): the chosen device or devices,
 * with --explain every component of every score, the runners-up and the
 * devices filtered out per reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"
#include "router/router_internal.h"

static void help(void)
{
    printf("usage: synor [--profiles FILE]... route --inventory FILE "
           "[--inventory FILE]...\n"
           "                                 --op OP:DTYPE [--op OP:DTYPE]... "
           "[OPTION]...\n\n"
           "Chooses the device (or, with --devices N, the N distinct devices) "
           "that should run a\n"
           "task: filters the registered devices (capability, status, "
           "availability, reputation,\n"
           "region, latency, budget), scores each on cost, latency, capability, "
           "reputation and\n"
           "load, and prints the best (docs/ROUTER.md). Exit status 1 when fewer "
           "devices than\n"
           "wanted pass the filters.\n\n"
           "  --inventory FILE       devices to register (repeatable; "
           "docs/DEVICES.md)\n"
           "  --prices FILE          route table: prices per device-hour and "
           "region coordinates\n"
           "                         (repeatable; format synor-route-table/1, "
           "docs/ROUTER.md)\n"
           "  --market DIR           a device's price: the best ask of its book\n"
           "                         <kind>/<profile>/<region> in the market in DIR "
           "first\n"
           "  --engine [--site S]    ... then the pricing engine's cost-based price "
           "for its\n"
           "                         profile and region (synor price; regions of "
           "data/economics)\n"
           "                         at site S (default colocation), then the route "
           "table\n"
           "  --op OP:DTYPE          an operation the device must support "
           "(repeatable, at most 8;\n"
           "                         the first one's speed estimates the task "
           "time)\n"
           "  --flops X              the task's operations (default 1e12)\n"
           "  --bytes X              bytes it moves through device memory "
           "(default 0)\n"
           "  --min-memory SIZE      at least SIZE of device memory, e.g. 40GiB\n"
           "  --region R             only devices in region R (repeatable: any "
           "of them)\n"
           "  --from REGION          the user is in REGION (of the route table)\n"
           "  --lat X --lon Y        ... or at these coordinates (degrees)\n"
           "  --max-latency-ms N     estimated round trip at most N ms (needs "
           "--from or --lat/--lon)\n"
           "  --min-reputation N     reputation at least N (0..100)\n"
           "  --budget USD           the task may cost at most USD (at most 6 "
           "decimals)\n"
           "  --devices N            N distinct devices for a distributed task "
           "(default 1)\n"
           "  --spread owner|region  ... each of a different owner, or region\n"
           "  --runners-up N         show the next N devices (default 2, at most "
           "16)\n"
           "  --weights W            "
           "cost=0.3,latency=0.2,capability=0.2,reputation=0.15,load=0.15\n"
           "                         (all five, each 0..1, summing to 1; these "
           "are the defaults)\n"
           "  --at H[,idle][,charging:PCT]\n"
           "                         availability schedules judged at UTC hour "
           "H, hosts in that\n"
           "                         state (default: schedules not checked)\n"
           "  --scan                 decide by scanning every device instead of "
           "the index\n"
           "  --explain              every component of every score, runners-up, "
           "filter counts\n"
           "  --json                 print JSON (format synor-route/1)\n"
           "  -h, --help\n");
}

static int parse_host_state(const char *s, synor_host_state *st)
{
    char buf[128];
    synor__strlcpy(buf, s, sizeof buf);
    memset(st, 0, sizeof *st);
    char *save, *tok = strtok_r(buf, ",", &save), *end;
    if (!tok)
        return -1;
    long h = *tok >= '0' && *tok <= '9' ? strtol(tok, &end, 10) : -1;
    if (h < 0 || *end || h > 23)
        return -1;
    st->utc_hour = (unsigned)h;
    while ((tok = strtok_r(NULL, ",", &save))) {
        if (strcmp(tok, "idle") == 0) {
            st->host_idle = 1;
        } else if (strncmp(tok, "charging:", 9) == 0 && tok[9] >= '0' && tok[9] <= '9') {
            long pct = strtol(tok + 9, &end, 10);
            if (*end || pct > 100)
                return -1;
            st->charging = 1;
            st->battery_pct = (unsigned)pct;
        } else {
            return -1;
        }
    }
    return 0;
}

static int parse_size(const char *val, uint64_t *out)
{
    char buf[64];
    const char *u = val;
    size_t k = 0;
    /* accept "40GiB" as well as "40 GiB" */
    while (*u && (*u == '.' || (*u >= '0' && *u <= '9')) && k < sizeof buf - 2)
        buf[k++] = *u++;
    buf[k++] = ' ';
    synor__strlcpy(buf + k, u, sizeof buf - k);
    return synor__parse_size(buf, out);
}

/* The cost provider of --market and --engine: a device's price per
 * device-hour from the live book of its resource, else from the pricing
 * engine for its profile and region, else from the route table. */
typedef struct price_chain {
    const synor_market *m;
    const synor_econ *e;
    const char *site;
    synor_route_table *table; /* the table provider takes it as void * */
    const synor_catalog *cat;
} price_chain;

static int chain_price(void *user, const synor_registry_entry *en, int64_t *usd_micro_per_hour,
                       const char **source)
{
    const price_chain *pc = user;
    const char *pid = synor_device_profile_id(en->device);
    const synor_profile *p = pid ? synor_catalog_find(pc->cat, pid) : NULL;
    if (p && pc->m) {
        char key[256];
        uint32_t res;
        synor_market_prices pr;
        snprintf(key, sizeof key, "%s/%s/%s", synor_kind_name(p->type.kind), p->id,
                 en->info.region);
        if (synor_market_find_resource(pc->m, key, &res) == 0 &&
            synor_market_prices_get(pc->m, res, &pr) == 0 && pr.has_ask &&
            pr.best_ask <= SYNOR_ROUTE_PRICE_MAX) {
            *usd_micro_per_hour = pr.best_ask;
            *source = "the market's best ask for its resource";
            return 1;
        }
    }
    if (p && pc->e) {
        synor_price_request r;
        synor_price_quote q;
        synor_price_request_init(&r);
        r.profile = p->id;
        r.region = en->info.region;
        r.site = pc->site;
        if (synor_econ_price(pc->e, &r, &q) == 0 && q.total <= SYNOR_ROUTE_PRICE_MAX) {
            *usd_micro_per_hour = q.total;
            *source = "the pricing engine (energy + depreciation + fee, synor price)";
            return 1;
        }
    }
    return pc->table ? synor_route_table_price_fn(pc->table, en, usd_micro_per_hour, source) : 0;
}

typedef struct opts {
    const char *inv[32], *prices[16];
    const char *market, *site;
    int n_inv, n_prices, json, explain, scan, has_lat, has_lon, engine;
    synor_route_request q;
    synor_host_state at;
} opts;

/* One option with its value; CLI_OK or CLI_USAGE (printed). */
static int option(opts *o, const char *a, const char *val)
{
    const char *cmd = "route";
    synor_route_request *q = &o->q;
    unsigned long long n;
    if (strcmp(a, "--market") == 0) {
        o->market = val;
    } else if (strcmp(a, "--site") == 0) {
        o->site = val;
    } else if (strcmp(a, "--inventory") == 0) {
        if (o->n_inv == 32)
            return cli_usage_error(cmd, "at most 32 --inventory files");
        o->inv[o->n_inv++] = val;
    } else if (strcmp(a, "--prices") == 0) {
        if (o->n_prices == 16)
            return cli_usage_error(cmd, "at most 16 --prices files");
        o->prices[o->n_prices++] = val;
    } else if (strcmp(a, "--op") == 0) {
        if (q->n_ops == SYNOR_ROUTE_MAX_OPS)
            return cli_usage_error(cmd, "at most %d --op", SYNOR_ROUTE_MAX_OPS);
        char buf[64];
        synor__strlcpy(buf, val, sizeof buf);
        char *colon = strchr(buf, ':');
        if (!colon)
            return cli_usage_error(cmd, "--op expects OP:DTYPE (e.g. matmul:bf16), got '%s'", val);
        *colon = '\0';
        if (synor_op_type_from_name(buf, &q->ops[q->n_ops]) ||
            synor_dtype_from_name(colon + 1, &q->dtypes[q->n_ops]))
            return cli_usage_error(cmd, "--op '%s': %s", val, synor_errmsg());
        q->n_ops++;
    } else if (strcmp(a, "--flops") == 0) {
        return cli_parse_double(cmd, a, val, 0, 1e30, &q->flops);
    } else if (strcmp(a, "--bytes") == 0) {
        return cli_parse_double(cmd, a, val, 0, 1e24, &q->bytes);
    } else if (strcmp(a, "--min-memory") == 0) {
        if (parse_size(val, &q->min_memory))
            return cli_usage_error(cmd, "--min-memory: %s", synor_errmsg());
    } else if (strcmp(a, "--region") == 0) {
        if (q->n_regions == SYNOR_ROUTE_MAX_REGIONS)
            return cli_usage_error(cmd, "at most %d --region", SYNOR_ROUTE_MAX_REGIONS);
        q->regions[q->n_regions++] = val;
    } else if (strcmp(a, "--from") == 0) {
        q->from_region = val;
    } else if (strcmp(a, "--lat") == 0) {
        o->has_lat = 1;
        return cli_parse_double(cmd, a, val, -90, 90, &q->lat);
    } else if (strcmp(a, "--lon") == 0) {
        o->has_lon = 1;
        return cli_parse_double(cmd, a, val, -180, 180, &q->lon);
    } else if (strcmp(a, "--max-latency-ms") == 0) {
        if (cli_parse_double(cmd, a, val, 0, 1e6, &q->max_latency_ms))
            return CLI_USAGE;
        if (!(q->max_latency_ms > 0))
            return cli_usage_error(cmd, "--max-latency-ms: '%s' is not above 0", val);
    } else if (strcmp(a, "--min-reputation") == 0) {
        if (cli_parse_uint(cmd, a, val, 0, 100, &n))
            return CLI_USAGE;
        q->min_reputation = (int)n;
    } else if (strcmp(a, "--budget") == 0) {
        if (synor__route_usd_parse(val, &q->budget_usd_micro) || q->budget_usd_micro == 0)
            return cli_usage_error(cmd,
                                   "--budget '%s' is not an amount of USD above 0 with at "
                                   "most 6 decimals",
                                   val);
    } else if (strcmp(a, "--devices") == 0) {
        if (cli_parse_uint(cmd, a, val, 1, SYNOR_ROUTE_MAX_DEVICES, &n))
            return CLI_USAGE;
        q->n_devices = (unsigned)n;
    } else if (strcmp(a, "--runners-up") == 0) {
        if (cli_parse_uint(cmd, a, val, 0, SYNOR_ROUTE_MAX_RUNNERS_UP, &n))
            return CLI_USAGE;
        q->n_runners_up = (unsigned)n;
    } else if (strcmp(a, "--spread") == 0) {
        if (strcmp(val, "owner") == 0)
            q->spread = SYNOR_ROUTE_SPREAD_OWNER;
        else if (strcmp(val, "region") == 0)
            q->spread = SYNOR_ROUTE_SPREAD_REGION;
        else
            return cli_usage_error(cmd, "--spread '%s': expected owner or region", val);
    } else if (strcmp(a, "--weights") == 0) {
        if (synor_route_weights_parse(val, &q->weights))
            return cli_usage_error(cmd, "--weights: %s", synor_errmsg());
    } else if (strcmp(a, "--at") == 0) {
        if (parse_host_state(val, &o->at))
            return cli_usage_error(cmd,
                                   "--at expects H[,idle][,charging:PCT] with H 0..23, "
                                   "got '%s'",
                                   val);
        q->available_in = &o->at;
    } else {
        return cli_usage_error(cmd, "unknown argument '%s'", a);
    }
    return CLI_OK;
}

int cli_route(const cli_globals *g, int argc, char **argv)
{
    const char *cmd = "route";
    opts o;
    memset(&o, 0, sizeof o);
    synor_route_request_init(&o.q);
    o.q.flops = 1e12;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help();
            return CLI_OK;
        }
        int *flag = strcmp(a, "--json") == 0      ? &o.json
                    : strcmp(a, "--explain") == 0 ? &o.explain
                    : strcmp(a, "--scan") == 0    ? &o.scan
                    : strcmp(a, "--engine") == 0  ? &o.engine
                                                  : NULL;
        if (flag) {
            *flag = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            return cli_usage_error(cmd, "unknown argument '%s'", a);
        if (i + 1 >= argc)
            return cli_usage_error(cmd, "%s needs a value", a);
        if (option(&o, a, argv[i + 1]))
            return CLI_USAGE;
        i++;
    }
    if (!o.n_inv)
        return cli_usage_error(cmd, "no devices: give --inventory FILE");
    if (!o.q.n_ops)
        return cli_usage_error(cmd, "no operation: give --op OP:DTYPE, e.g. --op matmul:bf16");
    if (o.has_lat != o.has_lon)
        return cli_usage_error(cmd, "--lat and --lon go together");
    o.q.has_location = o.has_lat;
    if (o.q.has_location && o.q.from_region)
        return cli_usage_error(cmd, "--from and --lat/--lon: give one");
    if (o.q.max_latency_ms > 0 && !o.q.has_location && !o.q.from_region)
        return cli_usage_error(cmd, "--max-latency-ms needs --from REGION or --lat/--lon");
    if (!(o.q.flops + o.q.bytes > 0))
        return cli_usage_error(cmd, "--flops and --bytes are both 0: nothing to estimate");
    if (o.q.spread && o.q.n_devices < 2)
        return cli_usage_error(cmd, "--spread needs --devices N with N >= 2");

    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    int rc = CLI_FAIL;
    synor_registry *reg = NULL;
    synor_route_table *table = NULL;
    synor_router *router = NULL;
    synor_route_decision *d = NULL;
    synor_market *market = NULL;
    synor_econ *econ = NULL;
    if (synor_registry_create(&reg) || synor_route_table_create(&table))
        goto fail;
    for (int i = 0; i < o.n_inv; i++)
        if (synor_registry_load_inventory(reg, cat, o.inv[i]))
            goto fail;
    for (int i = 0; i < o.n_prices; i++)
        if (synor_route_table_load(table, o.prices[i]))
            goto fail;
    synor_router_config cfg = {table, NULL, NULL};
    price_chain pc = {NULL, NULL, o.site ? o.site : "colocation", table, cat};
    if (o.market) {
        synor_market_config mc;
        synor_market_config_init(&mc);
        mc.dir = o.market;
        mc.read_only = 1;
        if (synor_market_open(&mc, &market))
            goto fail;
        pc.m = market;
    }
    if (o.engine) {
        if (synor_econ_create(cat, &econ) || synor_econ_load_builtin(econ))
            goto fail;
        pc.e = econ;
    }
    if (pc.m || pc.e) {
        cfg.price = chain_price;
        cfg.price_user = &pc;
    }
    if (synor_router_create(reg, &cfg, &router))
        goto fail;
    if (o.scan ? synor_router_route_scan(router, &o.q, &d) : synor_router_route(router, &o.q, &d))
        goto fail;
    char *text = o.json ? synor_route_decision_json(d) : synor_route_decision_format(d, o.explain);
    if (!text) {
        cli_error("out of memory");
        goto out;
    }
    fputs(text, stdout);
    if (o.json)
        putchar('\n');
    synor__free(text);
    if (d->n_chosen < d->wanted) {
        if (!o.json && !d->n_chosen)
            printf("No device passed every filter%s.\n", o.explain ? "" : " (see --explain)");
        rc = CLI_FAIL;
    } else {
        rc = CLI_OK;
    }
    goto out;
fail:
    cli_error("%s", synor_errmsg());
out:
    synor_route_decision_free(d);
    synor_router_destroy(router);
    synor_market_close(market);
    synor_econ_destroy(econ);
    synor_route_table_destroy(table);
    synor_registry_destroy(reg);
    synor_catalog_destroy(cat);
    return rc;
}
