/* cmd_price.c - `synor price DEVICE --region R ...`: what an hour (or any
 * duration) of a device costs a provider in a region, line by line with
 * every input figure, its file, period and source, so that a reader can
 * recompute it by hand; and `synor price rank DEVICE ...`: regions ranked
 * by total cost or carbon, within a latency limit, with the best start
 * window before a deadline (docs/PRICING.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

typedef struct opts {
    synor_rank_request rk; /* rk.price is the price request */
    const char *device, *region, *market, *data, *today, *now, *regions_arg, *workload;
    int json, rank, hours_given;
    const char *regions[64];
} opts;

static void help(void)
{
    printf(
        "usage: synor price DEVICE --region R [options]\n"
        "       synor price rank DEVICE --hours H [options]\n\n"
        "What running DEVICE (a catalog profile, synor profiles) costs a provider:\n"
        "energy (power x hours x PUE x electricity price) + depreciation (list price over\n"
        "the service life at the expected utilisation) + network, times the demand\n"
        "multiplier of the market's order book, plus the protocol fee. Every input is\n"
        "printed with its data file, period and source (docs/PRICING.md).\n\n"
        "  --region R          region id (US-VA, DE) or cloud region (aws:us-east-1)\n"
        "  --hours H           duration, a decimal number of hours (default 1)\n"
        "  --workload W.json   instead of --hours: the workload's time on one DEVICE, its\n"
        "                      tasks one after another (the cost model, docs/PLANNING.md)\n"
        "  --site S            hyperscale|colocation|enterprise|edge|home (default hyperscale)\n"
        "  --climate C         any|cold|temperate|hot: PUE of that climate if listed (default "
        "any)\n"
        "  --tariff T          industrial|commercial electricity price (default industrial)\n"
        "  --utilisation PCT   expected utilisation over the service life, 0-100 (default 100)\n"
        "  --network-gb G      data moved, GB (default 0: no network line)\n"
        "  --egress-provider P aws|gcp|azure egress prices (default aws)\n"
        "  --market DIR        a market directory: demand multiplier from the book\n"
        "                      <kind>/DEVICE/<region id> (default: 1x, no market)\n"
        "  --fee-bp N          protocol fee in basis points of the base cost (default 500 = 5%%)\n"
        "  --econ-data DIR     economics data files (default: the built-in ones)\n"
        "  --today YYYY-MM-DD  the date against which data ages are judged (default: today)\n"
        "  --json              JSON output (docs/CLI.md)\n\n"
        "rank: the regions with an electricity price (or --regions a,b,...), best first by\n"
        "--by cost (default) or carbon; excluded regions last with the reason.\n"
        "  --from R | --lat X --lon Y   the user's position: RTT from network.json, else\n"
        "                      estimated from distance (1.5x route, 200 km/ms fibre)\n"
        "  --max-latency-ms N  exclude regions farther from the user\n"
        "  --deadline H        hours from now by which the job must end: best start window\n"
        "                      on the hourly profiles (prices for cost, intensity for carbon)\n"
        "  --now TIME          now, YYYY-MM-DDTHH:MM:SSZ (default: the current time)\n"
        "  --by cost|carbon, --regions a,b,...\n"
        "  -h, --help\n");
}

/* "1.5" -> 5400 seconds, exactly (micro-hours, rounded half up to the s). */
static int hours_opt(const char *o, const char *v, int64_t *s)
{
    int64_t micro;
    if (synor_econ_money_parse(v, &micro) || micro <= 0 ||
        micro > SYNOR_ECON_MAX_SECONDS / 3600 * 1000000)
        return cli_usage_error("price", "%s: '%s' is not a number of hours in (0, %lld]", o, v,
                               SYNOR_ECON_MAX_SECONDS / 3600);
    *s = (micro * 36 + 5000) / 10000;
    if (*s < 1)
        *s = 1;
    return CLI_OK;
}

static int parse(int argc, char **argv, opts *o)
{
    synor_rank_request_init(&o->rk);
    synor_price_request *p = &o->rk.price;
    int i = 1;
    if (i < argc && strcmp(argv[i], "rank") == 0) {
        o->rank = 1;
        i++;
    }
    int has_lat = 0, has_lon = 0;
    for (; i < argc; i++) {
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
            if (o->device)
                return cli_usage_error("price", "one DEVICE only ('%s' and '%s')", o->device, a);
            o->device = a;
            continue;
        }
        static const char *const WITH_VALUE[] = {"--region",     "--hours",
                                                 "--site",       "--climate",
                                                 "--tariff",     "--utilisation",
                                                 "--network-gb", "--egress-provider",
                                                 "--market",     "--fee-bp",
                                                 "--econ-data",  "--today",
                                                 "--from",       "--lat",
                                                 "--lon",        "--max-latency-ms",
                                                 "--deadline",   "--now",
                                                 "--by",         "--regions",
                                                 "--workload",   NULL};
        int known = 0;
        for (const char *const *w = WITH_VALUE; *w; w++)
            known |= !strcmp(*w, a);
        if (!known)
            return cli_usage_error("price", "unknown option '%s'", a);
        if (i + 1 >= argc)
            return cli_usage_error("price", "%s needs a value", a);
        const char *v = argv[++i];
        unsigned long long u;
        double d;
        int64_t x;
        int rc = CLI_OK;
        if (!strcmp(a, "--region"))
            o->region = v;
        else if (!strcmp(a, "--hours")) {
            rc = hours_opt(a, v, &p->seconds);
            o->hours_given = 1;
        } else if (!strcmp(a, "--site")) {
            if (strcmp(v, "hyperscale") && strcmp(v, "colocation") && strcmp(v, "enterprise") &&
                strcmp(v, "edge") && strcmp(v, "home"))
                return cli_usage_error("price",
                                       "--site: '%s' is not hyperscale, colocation, "
                                       "enterprise, edge or home",
                                       v);
            p->site = v;
        } else if (!strcmp(a, "--climate")) {
            if (strcmp(v, "any") && strcmp(v, "cold") && strcmp(v, "temperate") && strcmp(v, "hot"))
                return cli_usage_error("price",
                                       "--climate: '%s' is not any, cold, temperate or "
                                       "hot",
                                       v);
            p->climate = v;
        } else if (!strcmp(a, "--tariff")) {
            if (!strcmp(v, "industrial"))
                p->tariff = SYNOR_TARIFF_INDUSTRIAL;
            else if (!strcmp(v, "commercial"))
                p->tariff = SYNOR_TARIFF_COMMERCIAL;
            else
                return cli_usage_error("price", "--tariff: '%s' is not industrial or commercial",
                                       v);
        } else if (!strcmp(a, "--utilisation")) {
            if (synor_econ_money_parse(v, &x) || x <= 0 || x > 100000000)
                return cli_usage_error("price",
                                       "--utilisation: '%s' is not a percentage in "
                                       "(0, 100]",
                                       v);
            p->utilisation_bp = (uint32_t)((x + 5000) / 10000);
            if (!p->utilisation_bp)
                p->utilisation_bp = 1;
        } else if (!strcmp(a, "--network-gb")) {
            if (synor_econ_money_parse(v, &x) || x > SYNOR_ECON_MAX_MILLI_GB * 1000)
                return cli_usage_error("price",
                                       "--network-gb: '%s' is not a number of GB in "
                                       "[0, %lld]",
                                       v, SYNOR_ECON_MAX_MILLI_GB / 1000);
            p->network_milli_gb = (x + 500) / 1000;
        } else if (!strcmp(a, "--egress-provider")) {
            if (strcmp(v, "aws") && strcmp(v, "gcp") && strcmp(v, "azure"))
                return cli_usage_error("price", "--egress-provider: '%s' is not aws, gcp or azure",
                                       v);
            p->egress_provider = v;
        } else if (!strcmp(a, "--market"))
            o->market = v;
        else if (!strcmp(a, "--fee-bp")) {
            if ((rc = cli_parse_uint("price", a, v, 0, 10000, &u)) == CLI_OK)
                p->fee_bp = (uint32_t)u;
        } else if (!strcmp(a, "--econ-data"))
            o->data = v;
        else if (!strcmp(a, "--today")) {
            int64_t day;
            if (synor_econ_date_parse(v, &day))
                return cli_usage_error("price", "--today: '%s' is not a date YYYY-MM-DD", v);
            o->today = v;
        } else if (!strcmp(a, "--from"))
            o->rk.from = v;
        else if (!strcmp(a, "--lat")) {
            if ((rc = cli_parse_double("price", a, v, -90, 90, &d)) == CLI_OK)
                o->rk.lat = d, has_lat = 1;
        } else if (!strcmp(a, "--lon")) {
            if ((rc = cli_parse_double("price", a, v, -180, 180, &d)) == CLI_OK)
                o->rk.lon = d, has_lon = 1;
        } else if (!strcmp(a, "--max-latency-ms")) {
            if ((rc = cli_parse_double("price", a, v, 0.001, 100000, &d)) == CLI_OK)
                o->rk.max_latency_ms = d;
        } else if (!strcmp(a, "--deadline")) {
            rc = hours_opt(a, v, &o->rk.deadline_seconds);
        } else if (!strcmp(a, "--now"))
            o->now = v;
        else if (!strcmp(a, "--by")) {
            if (!strcmp(v, "cost"))
                o->rk.by = SYNOR_RANK_COST;
            else if (!strcmp(v, "carbon"))
                o->rk.by = SYNOR_RANK_CARBON;
            else
                return cli_usage_error("price", "--by: '%s' is not cost or carbon", v);
        } else if (!strcmp(a, "--regions"))
            o->regions_arg = v;
        else if (!strcmp(a, "--workload"))
            o->workload = v;
        if (rc != CLI_OK)
            return rc;
    }
    if (!o->device)
        return cli_usage_error("price", "missing DEVICE (a profile id: synor profiles)");
    if (o->workload && o->hours_given)
        return cli_usage_error("price", "give --hours or --workload, not both");
    if (!o->rank) {
        if (!o->region)
            return cli_usage_error("price", "missing --region R");
        if (o->rk.from || has_lat || has_lon || o->rk.max_latency_ms > 0 ||
            o->rk.deadline_seconds || o->now || o->regions_arg || o->rk.by != SYNOR_RANK_COST)
            return cli_usage_error("price",
                                   "--from, --lat, --lon, --max-latency-ms, --deadline, "
                                   "--now, --by and --regions are options of 'price rank'");
        return CLI_OK;
    }
    if (o->region)
        return cli_usage_error("price", "rank takes no --region (use --regions a,b,...)");
    if (o->market)
        return cli_usage_error("price", "rank takes no --market (regions are compared at 1x)");
    if (!o->hours_given && !o->workload)
        return cli_usage_error("price", "rank needs --hours H or --workload W.json");
    if (has_lat != has_lon || (has_lat && o->rk.from))
        return cli_usage_error("price", "give the user's position as --from R or as --lat and "
                                        "--lon");
    o->rk.has_latlon = has_lat;
    if (o->rk.max_latency_ms > 0 && !o->rk.from && !has_lat)
        return cli_usage_error("price", "--max-latency-ms needs --from or --lat/--lon");
    if (o->rk.deadline_seconds && o->rk.deadline_seconds < p->seconds)
        return cli_usage_error("price", "--deadline is shorter than --hours");
    if (o->now) {
        int64_t day;
        char date[11];
        snprintf(date, sizeof date, "%.10s", o->now);
        int ok = strlen(o->now) == 20 && !synor_econ_date_parse(date, &day) && o->now[10] == 'T' &&
                 o->now[19] == 'Z';
        unsigned hh, mm, ss;
        char z;
        if (!ok || sscanf(o->now + 11, "%2u:%2u:%2u%c", &hh, &mm, &ss, &z) != 4 || hh > 23 ||
            mm > 59 || ss > 59)
            return cli_usage_error("price", "--now: '%s' is not YYYY-MM-DDTHH:MM:SSZ", o->now);
        o->rk.now_unix = day * 86400 + hh * 3600 + mm * 60 + ss;
    } else
        o->rk.now_unix = (int64_t)time(NULL);
    if (o->regions_arg) {
        static char buf[1024];
        if (strlen(o->regions_arg) >= sizeof buf)
            return cli_usage_error("price", "--regions is too long");
        strcpy(buf, o->regions_arg);
        size_t n = 0;
        for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
            if (n == sizeof o->regions / sizeof o->regions[0])
                return cli_usage_error("price", "--regions: more than 64 regions");
            o->regions[n++] = t;
        }
        if (!n)
            return cli_usage_error("price", "--regions: no region given");
        o->rk.regions = o->regions;
        o->rk.n_regions = n;
    }
    return CLI_OK;
}

/* 700000 -> "700", 1100 -> "1.1" (thousandths, trailing zeros dropped) */
static void fmt_milli(int64_t v, char *buf, size_t n, const char *unit)
{
    char frac[8];
    snprintf(frac, sizeof frac, "%03lld", (long long)(v % 1000));
    for (int k = 2; k >= 0 && frac[k] == '0'; k--)
        frac[k] = '\0';
    snprintf(buf, n, "%lld%s%s%s", (long long)(v / 1000), frac[0] ? "." : "", frac, unit);
}

static void money(int64_t v, char *buf, size_t n)
{
    synor_econ_money_format(v, 6, buf, n);
}

void cli_econ_warn_stale(const synor_econ *e, const char *today, const synor_econ_dataset *used,
                         size_t n)
{
    int64_t day = synor_econ_today();
    if (today)
        synor_econ_date_parse(today, &day);
    for (size_t i = 0; i < n; i++) {
        const synor_econ_file *f = synor_econ_file_of(e, used[i]);
        if (f && synor_econ_file_is_stale(f, day))
            fprintf(stderr,
                    "synor: warning: %s is stale: as_of %s, %lld days old (max_age_days %lld)\n",
                    f->name, f->as_of, (long long)synor_econ_file_age(f, day),
                    (long long)f->max_age_days);
    }
}

static void print_source(const synor_econ *e, synor_econ_dataset d, const char *key)
{
    const synor_econ_file *f = synor_econ_file_of(e, d);
    const synor_econ_source *s = synor_econ_source_find(f, key);
    if (s)
        printf("    [%s] %s, %s, %s (retrieved %s; file %s, as_of %s)\n", key, s->title,
               s->publisher, s->url, s->retrieved, f->name, f->as_of);
}

static int do_price(const synor_catalog *cat, const synor_econ *e, opts *o)
{
    synor_price_request *r = &o->rk.price;
    r->profile = o->device;
    r->region = o->region;
    synor_econ_demand dm = {.multiplier_bp = 10000};
    const synor_profile *prof = synor_catalog_find(cat, o->device);
    const synor_econ_region *g = synor_econ_region_find(e, o->region);
    char resource[256] = "";
    if (o->market && prof && g) {
        synor_market_config cfg;
        synor_market_config_init(&cfg);
        cfg.dir = o->market;
        cfg.read_only = 1;
        synor_market *m;
        if (synor_market_open(&cfg, &m)) {
            cli_error("%s", synor_errmsg());
            return CLI_FAIL;
        }
        snprintf(resource, sizeof resource, "%s/%s/%s", synor_kind_name(prof->type.kind), prof->id,
                 g->id);
        int rc = synor_econ_demand_get(m, resource, &dm);
        synor_market_close(m);
        if (rc) {
            cli_error("%s", synor_errmsg());
            return CLI_FAIL;
        }
    }
    r->demand_bp = dm.multiplier_bp;
    synor_price_quote q;
    if (synor_econ_price(e, r, &q)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    synor_econ_dataset used[5] = {SYNOR_ECON_REGIONS, SYNOR_ECON_ELECTRICITY, SYNOR_ECON_PUE,
                                  SYNOR_ECON_HARDWARE, SYNOR_ECON_NETWORK};
    cli_econ_warn_stale(e, o->today, used, q.egress ? 5 : 4);
    char a[40], b[40], c[40], d[40], t[40];
    const char *tariff = r->tariff == SYNOR_TARIFF_COMMERCIAL ? "commercial" : "industrial";
    if (o->json) {
        printf("{\"format\":\"synor-price/1\",\"device\":\"%s\",\"region\":\"%s\",\"seconds\":%lld,"
               "\"site\":\"%s\",\"climate\":\"%s\",\"tariff\":\"%s\",\"utilisation_bp\":%u,",
               prof->id, q.region->id, (long long)r->seconds, q.pue->site, q.pue->climate, tariff,
               r->utilisation_bp);
        printf("\"inputs\":{\"milliwatts\":%lld,\"pue_milli\":%d,\"price_per_kwh\":%lld,"
               "\"list_price\":%lld,\"service_life_years\":%d,\"egress_per_gb\":%lld,"
               "\"network_milli_gb\":%lld,\"demand_bp\":%u,\"fee_bp\":%u,"
               "\"market_resource\":%s%s%s,\"bid_qty\":%lld,\"ask_qty\":%lld},",
               (long long)q.milliwatts, q.pue->pue_milli, (long long)q.price_per_kwh,
               (long long)q.hw->list_price, q.hw->service_life_years,
               (long long)(q.egress ? q.egress->first_gb_tier : 0), (long long)r->network_milli_gb,
               q.demand_bp, q.fee_bp, dm.has_book ? "\"" : "", dm.has_book ? resource : "null",
               dm.has_book ? "\"" : "", (long long)dm.bid_qty, (long long)dm.ask_qty);
        printf("\"sources\":{\"electricity\":\"%s\",\"pue\":\"%s\",\"hardware\":\"%s\","
               "\"egress\":%s%s%s},",
               q.elec->source, q.pue->source, q.hw->source, q.egress ? "\"" : "",
               q.egress ? q.egress->source : "null", q.egress ? "\"" : "");
        printf("\"energy_wh\":%lld,\"energy\":%lld,\"depreciation\":%lld,\"network\":%lld,"
               "\"base\":%lld,\"demand_adjustment\":%lld,\"fee\":%lld,\"total\":%lld,"
               "\"unit\":\"micro-USD\"}\n",
               (long long)q.energy_mwh, (long long)q.energy, (long long)q.depreciation,
               (long long)q.network, (long long)q.base, (long long)q.demand_adjustment,
               (long long)q.fee, (long long)q.total);
        return CLI_OK;
    }
    double hours = (double)r->seconds / 3600;
    printf("%s in %s (%s): %.6g h, %s site, %s tariff\n\n", prof->id, q.region->id, q.region->name,
           hours, q.pue->site, tariff);
    char in[64];
    fmt_milli(q.milliwatts, in, sizeof in, " W");
    printf("  power         %-24s profile %s: %s\n", in, prof->id, prof->source_power);
    fmt_milli(q.pue->pue_milli, in, sizeof in, "");
    printf("  PUE           %-24s pue.json: %s sites, climate %s, %s [%s]\n", in, q.pue->site,
           q.pue->climate, q.pue->period, q.pue->source);
    money(q.price_per_kwh, a, sizeof a);
    snprintf(in, sizeof in, "%s USD/kWh", a);
    printf("  electricity   %-24s electricity.json: %s %s, %s [%s]\n", in, q.region->id, tariff,
           q.elec->period, q.elec->source);
    money(q.hw->list_price, b, sizeof b);
    snprintf(in, sizeof in, "%s USD, %d y", b, q.hw->service_life_years);
    printf("  hardware      %-24s hardware.json: %s, %s, %s [%s]\n", in, q.hw->profile,
           q.hw->price_kind, q.hw->period, q.hw->source);
    printf("\n");
    money(q.energy, c, sizeof c);
    char w[32], pu[32];
    fmt_milli(q.milliwatts, w, sizeof w, " W");
    fmt_milli(q.pue->pue_milli, pu, sizeof pu, "");
    printf("  energy        %s USD = %s x %lld s / 3600 x PUE %s x %s USD/kWh / 1000\n"
           "                (%lld Wh from the grid)\n",
           c, w, (long long)r->seconds, pu, a, (long long)q.energy_mwh);
    money(q.depreciation, c, sizeof c);
    printf("  depreciation  %s USD = %s USD x %lld s / (%d y x 8760 h x 3600 s x %u.%02u%%)\n", c,
           b, (long long)r->seconds, q.hw->service_life_years, r->utilisation_bp / 100,
           r->utilisation_bp % 100);
    if (q.egress) {
        money(q.network, c, sizeof c);
        money(q.egress->first_gb_tier, d, sizeof d);
        printf("  network       %s USD = %lld.%03lld GB x %s USD/GB (%s %s egress, %s [%s])\n", c,
               (long long)(r->network_milli_gb / 1000), (long long)(r->network_milli_gb % 1000), d,
               q.egress->provider, q.egress->scope, q.egress->period, q.egress->source);
    } else
        printf("  network       0.000000 USD (no --network-gb)\n");
    money(q.base, c, sizeof c);
    printf("  base cost     %s USD\n", c);
    money(q.demand_adjustment, d, sizeof d);
    if (!o->market)
        printf("  demand        %s USD (1.0000x: no --market)\n", d);
    else if (!dm.has_book)
        printf("  demand        %s USD (1.0000x: no book %s in the market)\n", d, resource);
    else
        printf("  demand        %s USD = base x (%u.%04ux - 1); book %s: %lld bid / %lld ask "
               "device-hours within 10%% of the mid\n",
               d, q.demand_bp / 10000, q.demand_bp % 10000, resource, (long long)dm.bid_qty,
               (long long)dm.ask_qty);
    money(q.fee, d, sizeof d);
    printf("  protocol fee  %s USD = base x %u.%02u%%\n", d, q.fee_bp / 100, q.fee_bp % 100);
    money(q.total, t, sizeof t);
    printf("  total         %s USD\n\n  sources (lines rounded half up to 0.000001 USD):\n", t);
    print_source(e, SYNOR_ECON_ELECTRICITY, q.elec->source);
    print_source(e, SYNOR_ECON_PUE, q.pue->source);
    print_source(e, SYNOR_ECON_HARDWARE, q.hw->source);
    if (q.egress)
        print_source(e, SYNOR_ECON_NETWORK, q.egress->source);
    return CLI_OK;
}

static void utc(int64_t t, char *buf, size_t n)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int do_rank(const synor_econ *e, opts *o)
{
    o->rk.price.profile = o->device;
    synor_rank_entry *v;
    size_t n;
    if (synor_econ_rank(e, &o->rk, &v, &n)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    synor_econ_dataset used[6] = {SYNOR_ECON_REGIONS,  SYNOR_ECON_ELECTRICITY, SYNOR_ECON_PUE,
                                  SYNOR_ECON_HARDWARE, SYNOR_ECON_CARBON,      SYNOR_ECON_NETWORK};
    size_t nu = 4;
    if (synor_econ_file_of(e, SYNOR_ECON_CARBON))
        nu = 5;
    if (synor_econ_file_of(e, SYNOR_ECON_NETWORK))
        used[nu++] = SYNOR_ECON_NETWORK;
    cli_econ_warn_stale(e, o->today, used, nu);
    int carbon = o->rk.by == SYNOR_RANK_CARBON;
    char a[40], b[40], c[40], d[40], w[32];
    if (o->json) {
        printf("{\"format\":\"synor-price-rank/1\",\"device\":\"%s\",\"seconds\":%lld,"
               "\"by\":\"%s\",\"deadline_seconds\":%lld,\"now_unix\":%lld,\"regions\":[",
               o->device, (long long)o->rk.price.seconds, carbon ? "carbon" : "cost",
               (long long)o->rk.deadline_seconds, (long long)o->rk.now_unix);
        for (size_t i = 0; i < n; i++) {
            const synor_rank_entry *x = &v[i];
            printf("%s{\"region\":\"%s\",\"ok\":%s", i ? "," : "", x->region->id,
                   x->ok ? "true" : "false");
            if (!x->ok) {
                printf(",\"reason\":\"");
                for (const char *p = x->reason; *p; p++)
                    printf(*p == '"' || *p == '\\'  ? "\\%c"
                           : (unsigned char)*p < 32 ? " "
                                                    : "%c",
                           *p);
                printf("\"}");
                continue;
            }
            printf(",\"energy\":%lld,\"depreciation\":%lld,\"network\":%lld,\"fee\":%lld,"
                   "\"total\":%lld,\"gco2\":",
                   (long long)x->quote.energy, (long long)x->quote.depreciation,
                   (long long)x->quote.network, (long long)x->quote.fee, (long long)x->quote.total);
            x->gco2 >= 0 ? printf("%.3f", x->gco2) : printf("null");
            printf(",\"latency_ms\":");
            x->latency_ms >= 0 ? printf("%.1f,\"latency_estimated\":%s", x->latency_ms,
                                        x->latency_estimated ? "true" : "false")
                               : printf("null");
            if (x->has_window) {
                utc(x->window_start_unix, w, sizeof w);
                printf(",\"window\":{\"start\":\"%s\",\"offset_seconds\":%lld,", w,
                       (long long)x->window_offset_s);
                if (carbon)
                    printf("\"now_gco2\":%.3f,\"best_gco2\":%.3f}", x->now_gco2, x->best_gco2);
                else
                    printf("\"now_cost\":%lld,\"best_cost\":%lld}", (long long)x->now_cost,
                           (long long)x->best_cost);
            }
            printf("}");
        }
        printf("]}\n");
        free(v);
        return CLI_OK;
    }
    printf("%s for %.6g h, ranked by %s (total = energy + depreciation + network + %u.%02u%% "
           "fee; demand 1x)\n\n",
           o->device, (double)o->rk.price.seconds / 3600, carbon ? "carbon" : "cost",
           o->rk.price.fee_bp / 100, o->rk.price.fee_bp % 100);
    printf("  %-3s %-6s %12s %12s %12s %12s %10s %11s\n", "#", "region", "energy", "deprec.",
           "network", "total USD", "gCO2", "RTT ms");
    size_t rank = 0;
    for (size_t i = 0; i < n; i++) {
        const synor_rank_entry *x = &v[i];
        if (!x->ok)
            continue;
        money(x->quote.energy, a, sizeof a);
        money(x->quote.depreciation, b, sizeof b);
        money(x->quote.network, c, sizeof c);
        money(x->quote.total, d, sizeof d);
        char g[24] = "-", l[24] = "-";
        if (x->gco2 >= 0)
            snprintf(g, sizeof g, "%.1f", x->gco2);
        if (x->latency_ms >= 0)
            snprintf(l, sizeof l, "%.1f%s", x->latency_ms, x->latency_estimated ? " est" : "");
        printf("  %-3zu %-6s %12s %12s %12s %12s %10s %11s\n", ++rank, x->region->id, a, b, c, d, g,
               l);
    }
    for (size_t i = 0; i < n; i++)
        if (!v[i].ok)
            printf("  --  %-6s excluded: %s\n", v[i].region->id, v[i].reason);
    const synor_rank_entry *best = n && v[0].ok ? &v[0] : NULL;
    if (!best) {
        printf("\nNo region qualifies.\n");
        free(v);
        return CLI_FAIL;
    }
    printf("\nChoice: %s (%s): ", best->region->id, best->region->name);
    if (carbon)
        printf("the least carbon, %.1f gCO2", best->gco2);
    else {
        money(best->quote.total, a, sizeof a);
        printf("the lowest total, %s USD", a);
    }
    if (rank > 1) {
        const synor_rank_entry *next = &v[1];
        if (carbon)
            printf(" (%.1f g less than %s)", next->gco2 - best->gco2, next->region->id);
        else {
            money(next->quote.total - best->quote.total, a, sizeof a);
            printf(" (%s USD less than %s)", a, next->region->id);
        }
    }
    printf(".\n");
    if (o->rk.deadline_seconds) {
        printf("\nStart window before the deadline (%.6g h from now; hourly %s, typical week):\n",
               (double)o->rk.deadline_seconds / 3600, carbon ? "intensity" : "wholesale prices");
        for (size_t i = 0; i < n; i++) {
            const synor_rank_entry *x = &v[i];
            if (!x->ok)
                continue;
            if (!x->has_window) {
                printf("  %-6s no hourly profile: start any time\n", x->region->id);
                continue;
            }
            utc(x->window_start_unix, w, sizeof w);
            if (carbon)
                printf("  %-6s start %s (+%lld h): %.1f gCO2 vs %.1f now, saves %.1f g\n",
                       x->region->id, w, (long long)(x->window_offset_s / 3600), x->best_gco2,
                       x->now_gco2, x->now_gco2 - x->best_gco2);
            else {
                money(x->best_cost, a, sizeof a);
                money(x->now_cost, b, sizeof b);
                money(x->now_cost - x->best_cost, c, sizeof c);
                printf("  %-6s start %s (+%lld h): energy %s USD vs %s now, saves %s USD\n",
                       x->region->id, w, (long long)(x->window_offset_s / 3600), a, b, c);
            }
        }
    }
    free(v);
    return CLI_OK;
}

/* --workload: the device-seconds of the workload on one DEVICE, from the
 * cost model (synor cost): its tasks' times on that device, one after
 * another, rounded up to the second. CLI_OK or CLI_FAIL (printed). */
int cli_workload_seconds(const synor_catalog *cat, const char *device, const char *path,
                         int quiet, int skip, int64_t *seconds, double *exact)
{
    char fab[512];
    snprintf(fab, sizeof fab,
             "{\"format\": \"synor-fabric/1\", \"name\": \"price\", \"nodes\": "
             "[{\"name\": \"host\"}], \"devices\": [{\"name\": \"dev\", \"profile\": "
             "\"%s\", \"node\": \"host\"}]}",
             device);
    synor_workload *w = NULL;
    synor_fabric *f = NULL;
    synor_cost *c = NULL;
    int rc = synor_workload_load_file(path, &w);
    if (!rc)
        rc = synor_fabric_load_string(cat, fab, strlen(fab), "price-fabric", &f);
    if (!rc)
        rc = synor_cost_create(w, f, &c);
    double total = 0;
    size_t skipped = 0;
    for (size_t t = 0; !rc && t < synor_workload_count(w); t++) {
        double x = synor_cost_time(c, t, 0);
        if (!(x < 1e300) && skip) {
            skipped++;
            continue;
        }
        if (!(x < 1e300)) {
            cli_error("%s: task %s cannot run on %s", path, synor_workload_task(w, t)->id, device);
            rc = SYNOR_EINVAL;
            break;
        }
        total += x;
    }
    if (rc && synor_errmsg()[0] && rc != SYNOR_EINVAL)
        cli_error("%s", synor_errmsg());
    synor_cost_destroy(c);
    synor_fabric_destroy(f);
    synor_workload_destroy(w);
    if (rc)
        return CLI_FAIL;
    if (total > (double)SYNOR_ECON_MAX_SECONDS) {
        cli_error("%s takes %.3g s on %s, more than %lld h", path, total, device,
                  SYNOR_ECON_MAX_SECONDS / 3600);
        return CLI_FAIL;
    }
    if (exact)
        *exact = total;
    *seconds = (int64_t)total + ((double)(int64_t)total < total);
    if (*seconds < 1)
        *seconds = 1;
    if (!quiet && skipped)
        printf("%s on %s: %.6g s by the cost model (%zu task(s) it cannot run, such as "
               "tokenization, left to the host), priced as %lld s\n\n",
               path, device, total, skipped, (long long)*seconds);
    else if (!quiet)
        printf("%s on %s: %.6g s by the cost model, priced as %lld s\n\n", path, device, total,
               (long long)*seconds);
    return CLI_OK;
}

int cli_price(const cli_globals *g, int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    synor_econ *e = NULL;
    rc = synor_econ_create(cat, &e);
    if (!rc)
        rc = o.data ? synor_econ_load_dir(e, o.data) : synor_econ_load_builtin(e);
    if (rc) {
        cli_error("%s", synor_errmsg());
        synor_econ_destroy(e);
        synor_catalog_destroy(cat);
        return CLI_FAIL;
    }
    if (!synor_catalog_find(cat, o.device)) {
        cli_error("no profile \"%s\" in the catalog (synor profiles)", o.device);
        rc = CLI_FAIL;
    } else if (o.workload &&
               cli_workload_seconds(cat, o.device, o.workload, o.json, 0, &o.rk.price.seconds, NULL) != CLI_OK)
        rc = CLI_FAIL;
    else
        rc = o.rank ? do_rank(e, &o) : do_price(cat, e, &o);
    synor_econ_destroy(e);
    synor_catalog_destroy(cat);
    return rc;
}
