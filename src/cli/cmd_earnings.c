/* cmd_earnings.c - `synor earnings`: what renting out one device would earn
 * in a month, from the spot market's recent prices (the 24 h VWAP of its
 * books in --market DIR), at 50, 70 and 100% utilisation, less the
 * protocol fee and optionally electricity. Fails when the market has no
 * recent trades of the device: no price is ever assumed. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/rewards_cli.h"

static void help(void)
{
    printf("usage: synor earnings --device PROFILE --hours-per-day H --market DIR "
           "[--region R]\n"
           "                      [--electricity USD_PER_KWH] [--pue X] [--policy "
           "FILE] [--json]\n\n"
           "Estimates a month (30.44 days) of renting out one device of PROFILE on "
           "the spot\n"
           "market in DIR (read-only: nothing is created or changed), at 50, 70 and "
           "100%%\n"
           "utilisation: price x hours/day x 30.44 x utilisation, less the protocol "
           "fee (the\n"
           "reward policy's), less electricity when --electricity is given (the "
           "profile's\n"
           "idle and peak power, interpolated by utilisation, over the hours "
           "available,\n"
           "times --pue, default 1). The price is the volume-weighted mean of the "
           "trades of\n"
           "the 24 h before the market's last command, over the books of the "
           "profile (every\n"
           "region, or --region R). No such trades: exit 1, nothing estimated.\n\n"
           "  --hours-per-day H  hours a day the device is offered, (0, 24], 3 "
           "decimals\n"
           "  --electricity P    USD per kWh (up to 12 decimals)\n"
           "  --pue X            power usage effectiveness, 1..3 (3 decimals)\n"
           "Exit status: 0 success, 1 failure (no recent trades), 2 usage error.\n");
}

/* The newest trade's market time as a UTC date when it reads as one (the
 * CLI's market commands stamp wall-clock nanoseconds; a batch file may use
 * any clock): between 2000 and a day from now. Else "" (not shown). */
static const char *trade_date(uint64_t t_ns, char *buf, size_t n)
{
    time_t now = time(NULL), t = (time_t)(t_ns / 1000000000u);
    struct tm tm;
    buf[0] = '\0';
    if (t_ns / 1000000000u < 946684800u || t > now + 86400 || !gmtime_r(&t, &tm))
        return buf;
    strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buf;
}

static const char *usd(int64_t ticks, char *buf, size_t n)
{
    return synor_rewards_format_fixed(ticks, 6, buf, n);
}

static void print_json(const synor_earnings *r, const char *profile, const char *dir, int64_t hours)
{
    char a[48], b[48], c[48], d[48];
    printf("{\"device\":\"%s\",\"market\":\"", profile);
    for (const char *p = dir; *p; p++) {
        if (*p == '"' || *p == '\\')
            putchar('\\');
        putchar((unsigned char)*p < 0x20 ? '?' : *p);
    }
    printf("\",\"resource\":\"%s\",\"books\":%zu,\"price_usd_per_hour\":\"%s\","
           "\"price_ticks\":%lld,\"volume_24h\":%lld,\"last_trade_time\":%llu,\"hours_per_day\":\"%"
           "s\","
           "\"fee_bp\":%u,"
           "\"idle_w\":\"%s\",\"peak_w\":\"%s\",\"levels\":[",
           r->resource, r->n_resources, usd(r->price, a, sizeof a), (long long)r->price,
           (long long)r->volume_24h, (unsigned long long)r->last_time,
           synor_rewards_format_fixed(hours, 3, b, sizeof b), r->fee_bp,
           synor_rewards_format_fixed(r->idle_mw, 3, c, sizeof c),
           synor_rewards_format_fixed(r->peak_mw, 3, d, sizeof d));
    for (int k = 0; k < SYNOR_EARNINGS_LEVELS; k++) {
        const synor_earnings_level *l = &r->level[k];
        char e[48];
        printf("%s{\"utilisation_bp\":%u,\"gross_usd\":\"%s\",\"fee_usd\":\"%s\","
               "\"electricity_usd\":\"%s\",\"net_usd\":\"%s\",\"net_ticks\":%lld}",
               k ? "," : "", l->utilisation_bp, usd(l->gross, a, sizeof a),
               usd(l->fee, b, sizeof b), usd(l->electricity, c, sizeof c), usd(l->net, e, sizeof e),
               (long long)l->net);
    }
    printf("]}\n");
}

int cli_earnings(const cli_globals *g, int argc, char **argv)
{
    for (int k = 1; k < argc; k++)
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            help();
            return CLI_OK;
        }
    ropt o[] = {{"--device", 1, NULL}, {"--hours-per-day", 1, NULL}, {"--market", 1, NULL},
                {"--region", 1, NULL}, {"--electricity", 1, NULL},   {"--pue", 1, NULL},
                {"--policy", 1, NULL}, {"--json", 0, NULL}};
    const size_t n = SYNOR__ARRAY_LEN(o);
    const char *cmd = "earnings";
    int rc = rcli_parse(cmd, argc, argv, 1, o, n, NULL, 0, NULL);
    if (rc)
        return rc;
    const char *dev = rcli_get(o, n, "--device"), *hpd = rcli_get(o, n, "--hours-per-day");
    const char *dir = rcli_get(o, n, "--market"), *v;
    if (!dev || !hpd || !dir)
        return cli_usage_error(cmd, "--device, --hours-per-day and --market are required");
    synor_earnings_options eo;
    synor_earnings_options_init(&eo);
    eo.region = rcli_get(o, n, "--region");
    eo.market_name = dir;
    int64_t x;
    if ((rc = rcli_fixed(cmd, "--hours-per-day", hpd, 3, 1, 24000, &eo.hours_per_day_milli)))
        return rc;
    if ((v = rcli_get(o, n, "--electricity")) &&
        (rc = rcli_fixed(cmd, "--electricity", v, 12, 0, INT64_C(1000000000000000),
                         &eo.electricity_pusd_kwh)))
        return rc;
    if ((v = rcli_get(o, n, "--pue"))) {
        if ((rc = rcli_fixed(cmd, "--pue", v, 3, 1000, 3000, &x)))
            return rc;
        if (eo.electricity_pusd_kwh < 0)
            return cli_usage_error(cmd, "--pue only scales --electricity: give both");
        eo.pue_milli = (uint32_t)x;
    }
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    synor_rewards_policy *p = rcli_policy(rcli_get(o, n, "--policy"));
    synor_market *m = NULL;
    rc = CLI_FAIL;
    if (p) {
        synor_market_config cfg;
        synor_market_config_init(&cfg);
        cfg.dir = dir;
        cfg.read_only = 1;
        if (synor_market_open(&cfg, &m))
            cli_error("%s", synor_errmsg());
        else
            rc = CLI_OK;
    }
    synor_earnings r;
    if (rc == CLI_OK && synor_earnings_estimate(m, cat, p, dev, &eo, &r)) {
        cli_error("%s", synor_errmsg());
        rc = CLI_FAIL;
    }
    if (rc == CLI_OK && rcli_get(o, n, "--json")) {
        print_json(&r, dev, dir, eo.hours_per_day_milli);
    } else if (rc == CLI_OK) {
        char a[48], b[48], c[48], d[48];
        printf("%s, %s hours a day, from the market in %s\n", dev,
               synor_rewards_format_fixed(eo.hours_per_day_milli, 3, a, sizeof a), dir);
        printf("price: %s USD per device-hour, the 24 h VWAP of %s (%zu book%s, %lld "
               "device-hours traded)\n",
               usd(r.price, a, sizeof a), r.resource, r.n_resources, r.n_resources == 1 ? "" : "s",
               (long long)r.volume_24h);
        if (trade_date(r.last_time, a, sizeof a)[0])
            printf("newest trade used: %s\n", a);
        printf("protocol fee %s%%", synor_rewards_format_fixed(r.fee_bp, 2, a, sizeof a));
        if (eo.electricity_pusd_kwh >= 0)
            printf("; electricity %s USD/kWh x PUE %s, %s W idle .. %s W peak",
                   synor_rewards_format_fixed(eo.electricity_pusd_kwh, 12, a, sizeof a),
                   synor_rewards_format_fixed(eo.pue_milli, 3, b, sizeof b),
                   synor_rewards_format_fixed(r.idle_mw, 3, c, sizeof c),
                   synor_rewards_format_fixed(r.peak_mw, 3, d, sizeof d));
        printf("\n\n%-12s %16s %14s %14s %16s\n", "utilisation", "gross USD/month", "fee",
               "electricity", "net USD/month");
        for (int k = 0; k < SYNOR_EARNINGS_LEVELS; k++) {
            const synor_earnings_level *l = &r.level[k];
            char e[48];
            printf("%10u%%  %16s %14s %14s %16s\n", l->utilisation_bp / 100,
                   usd(l->gross, a, sizeof a), usd(l->fee, b, sizeof b),
                   eo.electricity_pusd_kwh >= 0 ? usd(l->electricity, c, sizeof c) : "-",
                   usd(l->net, e, sizeof e));
        }
    }
    synor_market_close(m);
    synor_rewards_policy_destroy(p);
    synor_catalog_destroy(cat);
    return rc;
}
