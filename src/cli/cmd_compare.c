/* cmd_compare.c - `synor cost compare`: a job's cost on the network (the
 * pricing engine at its cheapest region, and a market's asks) against each
 * cloud's cheapest matching instance, on-demand and spot, with the seed's
 * savings breakdown computed from the data files beside what the seed
 * asserts (synor_econ_compare; docs/ECONOMICS.md, "The comparison"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* What seed 003 asserts (§1.4 "breakdown_savings" and its summary table),
 * printed beside the computed figures; nothing is computed from them. */
static const struct {
    const char *part;
    int claimed_pct;
} seed_claims[] = {{"margin", 35}, {"pue", 15}, {"spot", 20}, {"region", 10}, {"consumer", 10}};
#define SEED_TOTAL_CLAIM_PCT 90

typedef struct copts {
    const char *device, *workload, *from, *consumer, *market, *data, *today, *dtype;
    int64_t seconds; /* per device */
    long long count, runs;
    int json, hours_given;
    synor_compare_request req;
} copts;

static void help(void)
{
    printf("usage: synor cost compare (WORKLOAD.json [--runs N] | --device-hours H)\n"
           "                          [--device PROFILE] [--count N] [--from REGION]\n"
           "                          [--site S] [--tariff industrial|commercial]\n"
           "                          [--utilisation PCT] [--fee-bp N]\n"
           "                          [--consumer PROFILE [--dtype T]] [--market DIR]\n"
           "                          [--econ-data DIR] [--today YYYY-MM-DD] [--json]\n\n"
           "The cost of a job - COUNT devices (default 1) of PROFILE (default\n"
           "nvidia-h100-sxm) for H hours each, or N runs (default 1) of a workload's\n"
           "tasks one after another on that device by the cost model - on the network\n"
           "and on AWS, GCP and Azure, from the data files (data/economics, or\n"
           "--econ-data DIR): each cloud's cheapest instance holding the device, whole\n"
           "instances, per-second billing, on-demand and spot; the network's cost is the\n"
           "pricing engine's (synor price) at its cheapest region, at --site (default\n"
           "colocation), with the protocol fee. --from REGION adds the cost in the\n"
           "user's region, --consumer PROFILE the same work on a consumer device at\n"
           "home (hours scaled by the two profiles' peak at --dtype, default fp16),\n"
           "--market DIR the best ask of <kind>/<profile>/<cheapest region> there.\n"
           "Then the saving against the cheapest on-demand cloud and the seed's\n"
           "breakdown (margin, PUE, spot, region, consumer devices) computed from the\n"
           "data, each beside what the seed asserts (docs/ECONOMICS.md).\n"
           "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static int parse(int argc, char **argv, copts *o)
{
    synor_compare_request_init(&o->req);
    o->device = "nvidia-h100-sxm";
    o->count = 1;
    o->runs = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return -1;
        }
        if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        }
        if (a[0] != '-') {
            if (o->workload)
                return cli_usage_error("cost compare", "one WORKLOAD only ('%s' and '%s')",
                                       o->workload, a);
            o->workload = a;
            continue;
        }
        if (i + 1 >= argc)
            return cli_usage_error("cost compare", "unknown option or missing value '%s'", a);
        const char *v = argv[++i];
        unsigned long long u;
        double d;
        if (!strcmp(a, "--device"))
            o->device = v;
        else if (!strcmp(a, "--device-hours")) {
            if (cli_parse_double("cost compare", a, v, 1.0 / 3600, 1e6, &d))
                return CLI_USAGE;
            o->seconds = (int64_t)(d * 3600 + 0.5);
            o->hours_given = 1;
        } else if (!strcmp(a, "--count")) {
            if (cli_parse_uint("cost compare", a, v, 1, 1000000, &u))
                return CLI_USAGE;
            o->count = (long long)u;
        } else if (!strcmp(a, "--runs")) {
            if (cli_parse_uint("cost compare", a, v, 1, 1000000000, &u))
                return CLI_USAGE;
            o->runs = (long long)u;
        } else if (!strcmp(a, "--from"))
            o->from = v;
        else if (!strcmp(a, "--site"))
            o->req.price.site = v;
        else if (!strcmp(a, "--tariff")) {
            if (!strcmp(v, "industrial"))
                o->req.price.tariff = SYNOR_TARIFF_INDUSTRIAL;
            else if (!strcmp(v, "commercial"))
                o->req.price.tariff = SYNOR_TARIFF_COMMERCIAL;
            else
                return cli_usage_error("cost compare", "--tariff: industrial or commercial, "
                                                       "not '%s'", v);
        } else if (!strcmp(a, "--utilisation")) {
            if (cli_parse_double("cost compare", a, v, 0.01, 100, &d))
                return CLI_USAGE;
            o->req.price.utilisation_bp = (uint32_t)(d * 100 + 0.5);
        } else if (!strcmp(a, "--fee-bp")) {
            if (cli_parse_uint("cost compare", a, v, 0, 10000, &u))
                return CLI_USAGE;
            o->req.price.fee_bp = (uint32_t)u;
        } else if (!strcmp(a, "--consumer"))
            o->consumer = v;
        else if (!strcmp(a, "--dtype"))
            o->dtype = v;
        else if (!strcmp(a, "--market"))
            o->market = v;
        else if (!strcmp(a, "--econ-data"))
            o->data = v;
        else if (!strcmp(a, "--today")) {
            int64_t day;
            if (synor_econ_date_parse(v, &day))
                return cli_usage_error("cost compare", "--today: a date YYYY-MM-DD, not '%s'", v);
            o->today = v;
        } else
            return cli_usage_error("cost compare", "unknown option '%s'", a);
    }
    if (!o->workload == !o->hours_given)
        return cli_usage_error("cost compare", "give a WORKLOAD file or --device-hours H "
                                               "(one of them)");
    if (o->runs != 1 && !o->workload)
        return cli_usage_error("cost compare", "--runs goes with a WORKLOAD");
    if (o->dtype && !o->consumer)
        return cli_usage_error("cost compare", "--dtype scales the work onto --consumer: give "
                                               "--consumer PROFILE");
    if (o->dtype && synor_dtype_from_name(o->dtype, &o->req.dtype))
        return cli_usage_error("cost compare", "--dtype: unknown data type '%s'", o->dtype);
    return 0;
}

static void money(int64_t v, char *buf, size_t n) { synor_econ_money_format(v, 2, buf, n); }

/* v as a percentage of c, to one decimal */
static double pct(int64_t v, int64_t c) { return c ? 100.0 * (double)v / (double)c : 0; }

static int claimed(const char *part)
{
    for (size_t i = 0; i < sizeof seed_claims / sizeof seed_claims[0]; i++)
        if (!strcmp(seed_claims[i].part, part))
            return seed_claims[i].claimed_pct;
    return 0;
}

static void print_text(const copts *o, const synor_compare_result *r, const char *kind)
{
    char a[40], b[40];
    printf("job: %lld x %s for %lld s each (%.3f device-hours)\n\n", o->count, o->device,
           (long long)o->req.price.seconds,
           (double)o->count * (double)o->req.price.seconds / 3600.0);
    printf("clouds (cheapest instance holding the device; whole instances, per-second billing):\n");
    for (size_t p = 0; p < SYNOR_COMPARE_PROVIDERS; p++) {
        const synor_compare_cloud *c = &r->cloud[p];
        if (!c->on_demand) {
            printf("  %-6s no instance in the data holds a %s\n", synor_compare_provider_name(p),
                   o->device);
            continue;
        }
        money(c->on_demand_cost, a, sizeof a);
        money(c->on_demand_share, b, sizeof b);
        printf("  %-6s on-demand %s (%s) x %lld: %s USD (the job's share %s)",
               synor_compare_provider_name(p), c->on_demand->type, c->on_demand->region,
               (long long)c->on_demand_instances, a, b);
        if (c->spot) {
            money(c->spot_cost, a, sizeof a);
            money(c->spot_share, b, sizeof b);
            printf("; spot %s (%s) x %lld: %s USD (share %s)", c->spot->type, c->spot->region,
                   (long long)c->spot_instances, a, b);
        } else
            printf("; no spot price");
        printf("\n");
    }
    const synor_compare_cloud *best = &r->cloud[r->best_cloud];
    int64_t C = best->on_demand_cost, share = best->on_demand_share;
    printf("\nnetwork (the pricing engine, site %s, fee %u bp):\n", o->req.price.site,
           o->req.price.fee_bp);
    money(r->network.total, a, sizeof a);
    printf("  cheapest region %s (%s): %s USD (energy ", r->network_region->id,
           r->network_region->name, a);
    money(r->network.energy, b, sizeof b);
    printf("%s, depreciation ", b);
    money(r->network.depreciation, b, sizeof b);
    printf("%s, fee ", b);
    money(r->network.fee, b, sizeof b);
    printf("%s)\n", b);
    if (r->has_user_region) {
        money(r->network_user_region.total, a, sizeof a);
        printf("  your region %s: %s USD\n", o->from, a);
    }
    if (r->has_consumer) {
        money(r->consumer_quote.total, a, sizeof a);
        printf("  the same work on %s at home in %s: %lld s per device (the %s peaks' ratio), "
               "%s USD\n",
               o->consumer, r->network_region->id, (long long)r->consumer_seconds,
               synor_dtype_name(o->req.dtype), a);
    }
    if (r->has_market) {
        money(r->market_cost, a, sizeof a);
        printf("  the market (%s/%s/%s in %s): best ask for the job's whole device-hours: %s "
               "USD\n",
               kind, o->device, r->network_region->id, o->market, a);
    } else if (o->market)
        printf("  the market (%s): no ask on %s/%s/%s\n", o->market, kind, o->device,
               r->network_region->id);
    money(C, a, sizeof a);
    money(r->pay, b, sizeof b);
    printf("\nagainst the cheapest on-demand cloud, %s %s at %s USD: the network pays %s USD, "
           "%.1f%% less (the seed claims %d%%)",
           synor_compare_provider_name((size_t)r->best_cloud), best->on_demand->type, a, b,
           (double)r->saving_bp / 100.0, SEED_TOTAL_CLAIM_PCT);
    money(share, a, sizeof a);
    if (share != C)
        printf("; against the job's share of the instance, %s USD: %.1f%% less", a,
               (double)r->saving_share_bp / 100.0);
    printf("\n");
    if (r->best_spot_cloud >= 0) {
        const synor_compare_cloud *sp = &r->cloud[r->best_spot_cloud];
        money(sp->spot_cost, a, sizeof a);
        printf("against the cheapest spot cloud, %s %s (%s) at %s USD: %.1f%% less\n",
               synor_compare_provider_name((size_t)r->best_spot_cloud), sp->spot->type,
               sp->spot->region, a, pct(sp->spot_cost - r->pay, sp->spot_cost));
    }
    money(share, a, sizeof a);
    printf("\nthe seed's breakdown, computed from the data (parts overlap; %% of the job's "
           "on-demand share, %s USD):\n",
           a);
    struct {
        const char *part, *what;
        int has;
        int64_t v;
    } rows[] = {
        {"margin", "the cloud's price over the devices' own energy and depreciation in its "
                   "region",
         1, r->margin},
        {"pue", "own cost at hyperscale PUE less at the network's site", 1, r->pue},
        {"spot", "the cloud's own spot discount", r->has_spot, r->spot},
        {"region", "your region less the cheapest region", r->has_user_region, r->region},
        {"consumer", "the data-centre device less a consumer device", r->has_consumer,
         r->consumer},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (!rows[i].has) {
            printf("  %-9s (not computed: %s)   seed: %d%%\n", rows[i].part,
                   !strcmp(rows[i].part, "spot")     ? "no spot price in the data"
                   : !strcmp(rows[i].part, "region") ? "give --from REGION"
                                                     : "give --consumer PROFILE",
                   claimed(rows[i].part));
            continue;
        }
        money(rows[i].v, b, sizeof b);
        printf("  %-9s %12s USD  %6.1f%%   seed: %d%%   (%s)\n", rows[i].part, b,
               pct(rows[i].v, share), claimed(rows[i].part), rows[i].what);
    }
}

static void print_json(const copts *o, const synor_compare_result *r)
{
    char a[40];
    printf("{\"format\": \"synor-cost-compare/1\", \"device\": \"%s\", \"count\": %lld, "
           "\"seconds_per_device\": %lld, \"clouds\": [",
           o->device, o->count, (long long)o->req.price.seconds);
    for (size_t p = 0; p < SYNOR_COMPARE_PROVIDERS; p++) {
        const synor_compare_cloud *c = &r->cloud[p];
        printf("%s{\"provider\": \"%s\"", p ? ", " : "", synor_compare_provider_name(p));
        if (c->on_demand) {
            synor_econ_money_format(c->on_demand_cost, 6, a, sizeof a);
            char sh[40];
            synor_econ_money_format(c->on_demand_share, 6, sh, sizeof sh);
            printf(", \"on_demand\": {\"type\": \"%s\", \"region\": \"%s\", \"instances\": %lld, "
                   "\"usd\": \"%s\", \"share_usd\": \"%s\"}",
                   c->on_demand->type, c->on_demand->region, (long long)c->on_demand_instances,
                   a, sh);
        }
        if (c->spot) {
            synor_econ_money_format(c->spot_cost, 6, a, sizeof a);
            printf(", \"spot\": {\"type\": \"%s\", \"region\": \"%s\", \"instances\": %lld, "
                   "\"usd\": \"%s\"}",
                   c->spot->type, c->spot->region, (long long)c->spot_instances, a);
        }
        printf("}");
    }
    synor_econ_money_format(r->network.total, 6, a, sizeof a);
    printf("], \"network\": {\"region\": \"%s\", \"site\": \"%s\", \"usd\": \"%s\"",
           r->network_region->id, o->req.price.site, a);
    if (r->has_user_region) {
        synor_econ_money_format(r->network_user_region.total, 6, a, sizeof a);
        printf(", \"user_region\": \"%s\", \"user_region_usd\": \"%s\"", o->from, a);
    }
    if (r->has_consumer) {
        synor_econ_money_format(r->consumer_quote.total, 6, a, sizeof a);
        printf(", \"consumer\": \"%s\", \"consumer_seconds\": %lld, \"consumer_usd\": \"%s\"",
               o->consumer, (long long)r->consumer_seconds, a);
    }
    if (r->has_market) {
        synor_econ_money_format(r->market_cost, 6, a, sizeof a);
        printf(", \"market_usd\": \"%s\"", a);
    }
    synor_econ_money_format(r->pay, 6, a, sizeof a);
    printf("}, \"pay_usd\": \"%s\", \"saving_bp\": %lld, \"saving_share_bp\": %lld, "
           "\"seed_claim_pct\": %d, \"breakdown\": {",
           a, (long long)r->saving_bp, (long long)r->saving_share_bp, SEED_TOTAL_CLAIM_PCT);
    struct {
        const char *k;
        int has;
        int64_t v;
    } rows[] = {{"margin", 1, r->margin},
                {"pue", 1, r->pue},
                {"spot", r->has_spot, r->spot},
                {"region", r->has_user_region, r->region},
                {"consumer", r->has_consumer, r->consumer}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        synor_econ_money_format(rows[i].v, 6, a, sizeof a);
        printf("%s\"%s\": {\"usd\": %s%s%s, \"seed_claim_pct\": %d}", i ? ", " : "", rows[i].k,
               rows[i].has ? "\"" : "", rows[i].has ? a : "null", rows[i].has ? "\"" : "",
               claimed(rows[i].k));
    }
    printf("}}\n");
}

int cli_cost_compare(const cli_globals *g, int argc, char **argv)
{
    copts o;
    memset(&o, 0, sizeof o);
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    synor_econ *e = NULL;
    synor_market *m = NULL;
    int ret = CLI_FAIL;
    const synor_profile *prof = synor_catalog_find(cat, o.device);
    if (!prof) {
        cli_error("no profile \"%s\" in the catalog (synor profiles)", o.device);
        goto out;
    }
    if (synor_econ_create(cat, &e) ||
        (o.data ? synor_econ_load_dir(e, o.data) : synor_econ_load_builtin(e))) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    if (o.workload) {
        int64_t s;
        double one;
        /* the runs' device-seconds, rounded up to the second once */
        if (cli_workload_seconds(cat, o.device, o.workload, 1, 1, &s, &one) != CLI_OK)
            goto out;
        double all = ceil(one * (double)o.runs);
        if (!(all <= (double)SYNOR_ECON_MAX_SECONDS)) {
            cli_error("%lld runs of %s on %s exceed %lld h", o.runs, o.workload, o.device,
                      SYNOR_ECON_MAX_SECONDS / 3600);
            goto out;
        }
        o.seconds = all < 1 ? 1 : (int64_t)all;
        if (!o.json)
            printf("%s on %s: %.6g s a run by the cost model (tasks the device cannot run, "
                   "such as tokenization, left to the host); %lld run(s): %lld s\n\n",
                   o.workload, o.device, one, o.runs, (long long)o.seconds);
    }
    o.req.price.profile = o.device;
    o.req.price.seconds = o.seconds;
    o.req.count = (int)o.count;
    o.req.user_region = o.from;
    o.req.consumer_profile = o.consumer;
    const char *kind = synor_kind_name(prof->type.kind);
    synor_compare_result r;
    /* first without the market: its book is the one of the cheapest region */
    if (synor_econ_compare(e, &o.req, &r)) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    if (o.market) {
        synor_market_config cfg;
        synor_market_config_init(&cfg);
        cfg.dir = o.market;
        cfg.read_only = 1;
        char key[256];
        snprintf(key, sizeof key, "%s/%s/%s", kind, o.device, r.network_region->id);
        uint32_t res;
        synor_market_prices pr;
        if (synor_market_open(&cfg, &m)) {
            cli_error("%s", synor_errmsg());
            goto out;
        }
        if (synor_market_find_resource(m, key, &res) == 0 &&
            synor_market_prices_get(m, res, &pr) == 0 && pr.has_ask) {
            o.req.market_ask = pr.best_ask;
            if (synor_econ_compare(e, &o.req, &r)) {
                cli_error("%s", synor_errmsg());
                goto out;
            }
        }
    }
    static const synor_econ_dataset used[] = {SYNOR_ECON_REGIONS, SYNOR_ECON_ELECTRICITY,
                                              SYNOR_ECON_PUE, SYNOR_ECON_HARDWARE,
                                              SYNOR_ECON_CLOUD};
    cli_econ_warn_stale(e, o.today, used, sizeof used / sizeof used[0]);
    if (o.json)
        print_json(&o, &r);
    else
        print_text(&o, &r, kind);
    ret = CLI_OK;
out:
    synor_market_close(m);
    synor_econ_destroy(e);
    synor_catalog_destroy(cat);
    return ret;
}
