/* test_econ.c - economics data (tests/data/econ/: fictional fixtures), its
 * loader's errors (exact messages, all-or-nothing, out of memory), staleness
 * on an injected date, fixed-point money at its limits, the pricing
 * breakdown recomputed by hand, the demand multiplier on a real market in a
 * temporary directory, region ranking and the best start window. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "synor.h"
#include "test.h"

#define FIXTURES SYNOR_SOURCE_DIR "/tests/data/econ"

static synor_catalog *cat;

static synor_catalog *catalog(void)
{
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        return NULL;
    return cat;
}

static synor_econ *fixtures(void)
{
    synor_econ *e = NULL;
    if (synor_econ_create(catalog(), &e) || synor_econ_load_dir(e, FIXTURES)) {
        fprintf(stderr, "  fixtures: %s\n", synor_errmsg());
        synor_econ_destroy(e);
        return NULL;
    }
    return e;
}

/* A one-line file of dataset ds with the common header and body. */
static char *file_text(const char *ds, const char *body)
{
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"dataset\":\"%s\",\"version\":1,\"as_of\":\"2024-12-31\",\"max_age_days\":365,"
             "\"notes\":\"test\",\"sources\":{\"s1\":{\"title\":\"T\",\"publisher\":\"P\","
             "\"url\":\"https://example.invalid/\",\"retrieved\":\"2025-01-02\"}},%s}",
             ds, body);
    return buf;
}

static const char *REGIONS_BODY =
    "\"regions\":[{\"id\":\"US-VA\",\"name\":\"Virginia\",\"country\":\"US\",\"lat\":37.5,"
    "\"lon\":-78.7,\"cloud\":{\"aws\":[\"us-east-1\"]}}]";

/* Loads regions (fixed) and one more file; returns the code. */
static int load_pair(synor_econ *e, const char *name, const char *ds, const char *body)
{
    char regions[1024], other[4096];
    snprintf(regions, sizeof regions, "%s", file_text("regions", REGIONS_BODY));
    snprintf(other, sizeof other, "%s", file_text(ds, body));
    const char *names[2] = {"regions.json", name}, *texts[2] = {regions, other};
    size_t lens[2] = {strlen(regions), strlen(other)};
    return synor_econ_load_texts(e, 2, names, texts, lens);
}

TEST(fixtures_load_and_lookups)
{
    synor_econ *e = fixtures();
    ASSERT(e);
    for (int d = 0; d < SYNOR_ECON_DATASET_COUNT; d++)
        ASSERT(synor_econ_file_of(e, (synor_econ_dataset)d));
    ASSERT_EQ(synor_econ_region_count(e), 3);
    const synor_econ_region *va = synor_econ_region_find(e, "aws:us-east-1");
    ASSERT(va);
    ASSERT_STREQ(va->id, "US-VA");
    ASSERT(synor_econ_region_find(e, "gcp:us-east4") == va);
    ASSERT(!synor_econ_region_find(e, "aws:us-west-2"));
    const synor_econ_elec *p = synor_econ_elec_find(e, "SE");
    ASSERT(p);
    ASSERT_EQ(p->industrial, 50000);
    ASSERT_EQ(p->commercial, -1);
    ASSERT_EQ(synor_econ_pue_find(e, "colocation", "hot")->pue_milli, 1500);
    ASSERT(!synor_econ_pue_find(e, "edge", "any"));
    ASSERT_EQ(synor_econ_hardware_find(e, "nvidia-h100-sxm")->list_price, 30000000000LL);
    const synor_econ_hourly *h = synor_econ_hourly_find(e, "DE", 0);
    ASSERT(h && h->n == 168);
    ASSERT_EQ(h->values[30], 10500000);
    ASSERT_EQ(h->values[50], -5250000);
    ASSERT_EQ(synor_econ_hourly_find(e, "DE", 1)->values[12], 200000);
    /* a latency listed between cloud regions answers for the regions */
    ASSERT(synor_econ_latency_find(e, "US-VA", "DE")->rtt_ms == 90.0);
    ASSERT(synor_econ_latency_find(e, "DE", "SE")->rtt_ms == 25.0);
    ASSERT(!synor_econ_latency_find(e, "SE", "US-VA"));
    ASSERT_EQ(synor_econ_egress_find(e, "aws", "internet")->first_gb_tier, 90000);
    ASSERT_EQ(synor_econ_instance_count(e), 1);
    ASSERT_EQ(synor_econ_instance_at(e, 0)->devices[0].count, 8);
    ASSERT_STREQ(synor_econ_file_of(e, SYNOR_ECON_CARBON)->as_of, "2024-12-31");
    synor_econ_destroy(e);
}

/* Each bad value fails the load with file:line:column, field and value. */
TEST(loader_errors_name_file_position_field_value)
{
    synor_econ *e;
    ASSERT_OK(synor_econ_create(catalog(), &e));
    static const struct {
        const char *ds, *body, *msg;
        int code;
    } cases[] = {
        {"electricity",
         "\"prices\":[{\"region\":\"US-VA\",\"industrial\":\"0.08x\",\"commercial\":null,"
         "\"unit\":\"USD/kWh\",\"period\":\"2024\",\"source\":\"s1\"}]",
         "e.json:1:239: prices[0].industrial: \"0.08x\" is not a decimal number", SYNOR_EINVAL},
        {"electricity",
         "\"prices\":[{\"region\":\"US-VA\",\"industrial\":\"-0.08\",\"commercial\":null,"
         "\"unit\":\"USD/kWh\",\"period\":\"2024\",\"source\":\"s1\"}]",
         "e.json:1:239: prices[0].industrial: \"-0.08\" is not a decimal number", SYNOR_EINVAL},
        {"electricity",
         "\"prices\":[{\"region\":\"US-VA\",\"industrial\":0.08,\"commercial\":null,"
         "\"unit\":\"USD/kWh\",\"period\":\"2024\",\"source\":\"s1\"}]",
         "e.json:1:239: prices[0].industrial: an amount must be a decimal string like "
         "\"0.0812\", found number",
         SYNOR_ESCHEMA},
        {"electricity",
         "\"prices\":[{\"region\":\"US-VA\",\"industrial\":\"0.0812345\",\"commercial\":null,"
         "\"unit\":\"USD/kWh\",\"period\":\"2024\",\"source\":\"s1\"}]",
         "e.json:1:239: prices[0].industrial: \"0.0812345\" has more than 6 decimals",
         SYNOR_EINVAL},
        {"electricity",
         "\"prices\":[{\"region\":\"FR\",\"industrial\":\"0.08\",\"commercial\":null,"
         "\"unit\":\"USD/kWh\",\"period\":\"2024\",\"source\":\"s1\"}]",
         "e.json:1:218: prices[0].region: unknown region \"FR\" (not an id of regions.json)",
         SYNOR_ENOENT},
        {"electricity",
         "\"prices\":[{\"region\":\"US-VA\",\"industrial\":\"0.08\",\"commercial\":null,"
         "\"unit\":\"USD/kWh\",\"period\":\"2024\",\"source\":\"eia\"}]",
         "e.json:1:306: prices[0].source: \"eia\" is not a key of this file's \"sources\"",
         SYNOR_ESCHEMA},
        {"electricity",
         "\"prices\":[{\"region\":\"US-VA\",\"industrial\":\"0.08\",\"commercial\":null,"
         "\"period\":\"2024\",\"source\":\"s1\"}]",
         "e.json:1:208: prices[0]: missing required field \"unit\"", SYNOR_ESCHEMA},
        {"electricity",
         "\"prices\":[{\"region\":\"US-VA\",\"industrial\":\"0.08\",\"commercial\":null,"
         "\"unit\":\"USD/kWh\",\"period\":\"2024\",\"source\":\"s1\",\"colour\":1}]",
         "e.json:1:311: prices[0]: unknown field \"colour\"", SYNOR_ESCHEMA},
        {"hardware",
         "\"hardware\":[{\"profile\":\"nvidia-h900\",\"list_price\":\"1.00\","
         "\"service_life_years\":5,\"price_kind\":\"list\",\"period\":\"2024\","
         "\"source\":\"s1\"}]",
         "e.json:1:218: hardware[0].profile: unknown profile \"nvidia-h900\"", SYNOR_ENOENT},
        {"pue",
         "\"pue\":[{\"site\":\"hyperscale\",\"climate\":\"any\",\"pue\":0.9,\"period\":\"2023\","
         "\"source\":\"s1\"}]",
         "e.json:1:240: pue[0].pue: value 0.9 is below the minimum 1", SYNOR_ERANGE},
        {"weather", "\"x\":[]", "e.json:1:12: dataset: unknown dataset \"weather\"", SYNOR_ESCHEMA},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = load_pair(e, "e.json", cases[i].ds, cases[i].body);
        if (rc != cases[i].code || !strstr(synor_errmsg(), cases[i].msg))
            TEST__FAIL("case %zu: rc %d, message \"%s\", expected %d \"%s\"", i, rc, synor_errmsg(),
                       cases[i].code, cases[i].msg);
    }
    /* a header error: a stale-age field that is not an integer */
    const char *bad = "{\"dataset\":\"pue\",\"version\":1,\"as_of\":\"2024-02-30\"}";
    const char *names[1] = {"h.json"};
    size_t len = strlen(bad);
    ASSERT_EQ(synor_econ_load_texts(e, 1, names, &bad, &len), SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "h.json:1:38: (root).as_of: \"2024-02-30\" is not a calendar "
                                    "date YYYY-MM-DD");
    /* a region file is needed by the files that refer to regions */
    const char *alone = file_text("carbon", "\"intensity\":[{\"region\":\"US-VA\","
                                            "\"gco2_per_kwh\":300,\"period\":\"2023\","
                                            "\"source\":\"s1\"}]");
    len = strlen(alone);
    names[0] = "c.json";
    ASSERT_EQ(synor_econ_load_texts(e, 1, names, &alone, &len), SYNOR_ENOENT);
    ASSERT_CONTAINS(synor_errmsg(), "no regions.json is loaded with this file");
    synor_econ_destroy(e);
}

/* A failed load (bad value, or out of memory at any allocation) leaves the
 * loaded set as it was. */
TEST(loads_are_all_or_nothing)
{
    synor_econ *e = fixtures();
    ASSERT(e);
    const synor_econ_elec *before = synor_econ_elec_find(e, "DE");
    ASSERT(before);
    ASSERT_EQ(load_pair(e, "e.json", "electricity",
                        "\"prices\":[{\"region\":\"US-VA\",\"industrial\":\"0.1\",\"commercial\":"
                        "null,\"unit\":\"USD/kWh\",\"period\":\"2024\",\"source\":\"nope\"}]"),
              SYNOR_ESCHEMA);
    ASSERT(synor_econ_elec_find(e, "DE") == before);
    ASSERT_EQ(synor_econ_region_count(e), 3);
    ASSERT(synor_econ_file_of(e, SYNOR_ECON_NETWORK));
    /* a missing directory */
    ASSERT_EQ(synor_econ_load_dir(e, FIXTURES "/no-such-dir"), SYNOR_EIO);
    ASSERT(synor_econ_elec_find(e, "DE") == before);
    /* every allocation of a full load failing in turn */
    int failures = 0;
    for (long k = 1; k < 100000; k++) {
        synor__alloc_fail_after(k);
        int rc = synor_econ_load_dir(e, FIXTURES);
        synor__alloc_fail_after(0);
        if (rc == 0)
            break;
        ASSERT_EQ(rc, SYNOR_ENOMEM);
        ASSERT(synor_econ_elec_find(e, "DE") == before);
        failures++;
    }
    ASSERT(failures > 10);
    ASSERT_EQ(synor_econ_elec_find(e, "DE")->industrial, 176000);
    synor_econ_destroy(e);
}

TEST(staleness_on_an_injected_date)
{
    synor_econ *e = fixtures();
    ASSERT(e);
    const synor_econ_file *f = synor_econ_file_of(e, SYNOR_ECON_ELECTRICITY);
    int64_t day;
    ASSERT_OK(synor_econ_date_parse("2024-12-31", &day));
    ASSERT_EQ(day, f->as_of_day);
    ASSERT_EQ(day, 20088); /* 2025-01-01 is day 20089 */
    /* max_age_days 730: 2026-12-31 is day 730 (2025 and 2026 are not leap years) */
    ASSERT_OK(synor_econ_date_parse("2026-12-31", &day));
    ASSERT_EQ(synor_econ_file_age(f, day), 730);
    ASSERT_EQ(synor_econ_file_is_stale(f, day), 0);
    ASSERT_EQ(synor_econ_file_is_stale(f, day + 1), 1);
    ASSERT_OK(synor_econ_date_parse("2024-02-29", &day));
    ASSERT_EQ(synor_econ_date_parse("2023-02-29", &day), SYNOR_EINVAL);
    ASSERT_EQ(synor_econ_date_parse("2024-1-01", &day), SYNOR_EINVAL);
    ASSERT(synor_econ_today() > 20088);
    synor_econ_destroy(e);
}

TEST(fixed_point_at_the_limits)
{
    int64_t v;
    ASSERT_OK(synor_econ_money_parse("0.0812", &v));
    ASSERT_EQ(v, 81200);
    ASSERT_OK(synor_econ_money_parse("0.000001", &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(synor_econ_money_parse("1000000000", &v));
    ASSERT_EQ(v, SYNOR_ECON_MAX_MONEY);
    ASSERT_EQ(synor_econ_money_parse("1000000000.000001", &v), SYNOR_ERANGE);
    ASSERT_EQ(synor_econ_money_parse("99999999999999999999999", &v), SYNOR_ERANGE);
    ASSERT_EQ(synor_econ_money_parse("0.0000001", &v), SYNOR_EINVAL);
    ASSERT_EQ(synor_econ_money_parse("1e3", &v), SYNOR_EINVAL);
    ASSERT_EQ(synor_econ_money_parse("-1", &v), SYNOR_EINVAL);
    ASSERT_EQ(synor_econ_money_parse("1.", &v), SYNOR_EINVAL);
    ASSERT_EQ(synor_econ_money_parse("", &v), SYNOR_EINVAL);
    ASSERT_EQ(synor_econ_money_parse(" 1", &v), SYNOR_EINVAL);
    char buf[40];
    synor_econ_money_format(1234567, 6, buf, sizeof buf);
    ASSERT_STREQ(buf, "1.234567");
    synor_econ_money_format(1234567, 2, buf, sizeof buf);
    ASSERT_STREQ(buf, "1.23");
    synor_econ_money_format(-5000, 2, buf, sizeof buf);
    ASSERT_STREQ(buf, "-0.01");
    synor_econ_money_format(INT64_MIN, 6, buf, sizeof buf);
    ASSERT_STREQ(buf, "-9223372036854.775808");
    /* 128-bit products, rounded once half up */
    ASSERT_OK(synor_econ_muldiv(INT64_MAX, INT64_MAX, INT64_MAX, &v));
    ASSERT_EQ(v, INT64_MAX);
    ASSERT_OK(synor_econ_muldiv(3, 1, 2, &v));
    ASSERT_EQ(v, 2);
    ASSERT_OK(synor_econ_muldiv(5, 1, 4, &v));
    ASSERT_EQ(v, 1);
    ASSERT_EQ(synor_econ_muldiv(INT64_MAX, 2, 1, &v), SYNOR_ERANGE);
    ASSERT_EQ(synor_econ_muldiv(-1, 2, 1, &v), SYNOR_EINVAL);

    /* the pricing engine at its stated limits: the largest duration, PUE
     * and price still give exact lines or SYNOR_ERANGE, never a wrap */
    synor_econ *e;
    ASSERT_OK(synor_econ_create(catalog(), &e));
    char reg[1024], el[2048], pue[1024], hw[1024];
    snprintf(reg, sizeof reg, "%s", file_text("regions", REGIONS_BODY));
    snprintf(el, sizeof el, "%s",
             file_text("electricity", "\"prices\":[{\"region\":\"US-VA\",\"industrial\":"
                                      "\"10\",\"commercial\":\"1000000000\",\"unit\":"
                                      "\"USD/kWh\",\"period\":\"x\",\"source\":\"s1\"}]"));
    snprintf(pue, sizeof pue, "%s",
             file_text("pue", "\"pue\":[{\"site\":\"hyperscale\",\"climate\":\"any\",\"pue\":5,"
                              "\"period\":\"x\",\"source\":\"s1\"}]"));
    snprintf(hw, sizeof hw, "%s",
             file_text("hardware", "\"hardware\":[{\"profile\":\"nvidia-h100-sxm\","
                                   "\"list_price\":\"1000000000\",\"service_life_years\":1,"
                                   "\"price_kind\":\"list\",\"period\":\"x\",\"source\":\"s1\"}]"));
    const char *names[4] = {"r", "e", "p", "h"}, *texts[4] = {reg, el, pue, hw};
    size_t lens[4] = {strlen(reg), strlen(el), strlen(pue), strlen(hw)};
    ASSERT_OK(synor_econ_load_texts(e, 4, names, texts, lens));
    synor_price_request r;
    synor_price_request_init(&r);
    r.profile = "nvidia-h100-sxm";
    r.region = "US-VA";
    r.seconds = SYNOR_ECON_MAX_SECONDS;
    synor_price_quote q;
    ASSERT_OK(synor_econ_price(e, &r, &q));
    /* 700 W x 10^6 h x 5 x 10 USD/kWh = 3.5e7 USD; 10^9 USD over one year
     * for 10^6 h: 10^9 x 3.6e9 / 31536000 */
    ASSERT_EQ(q.energy, 35000000000000LL);
    __extension__ __int128 dep =
        ((__int128)1000000000000000LL * 3600000000LL + 15768000) / 31536000;
    ASSERT(q.depreciation == (int64_t)dep);
    ASSERT_EQ(q.total, q.base + q.demand_adjustment + q.fee);
    r.seconds = SYNOR_ECON_MAX_SECONDS + 1;
    ASSERT_EQ(synor_econ_price(e, &r, &q), SYNOR_ERANGE);
    r.seconds = SYNOR_ECON_MAX_SECONDS;
    r.tariff = SYNOR_TARIFF_COMMERCIAL; /* 10^9 USD/kWh: beyond int64 */
    ASSERT_EQ(synor_econ_price(e, &r, &q), SYNOR_ERANGE);
    r.tariff = SYNOR_TARIFF_INDUSTRIAL;
    r.utilisation_bp = 1; /* depreciation x 10^4: 1.14e21 micro-USD */
    ASSERT_EQ(synor_econ_price(e, &r, &q), SYNOR_ERANGE);
    r.utilisation_bp = 0;
    ASSERT_EQ(synor_econ_price(e, &r, &q), SYNOR_ERANGE);
    synor_econ_destroy(e);
}

/* The breakdown of one H100-hour in US-VA, every line by hand: 700 W x 1 h
 * x 1.1 x 0.08 USD/kWh = 0.0616; 30000 / (5 x 8760) = 0.6849315 ->
 * 0.684932; base 0.746532; fee 5% = 0.0373266 -> 0.037327. */
TEST(pricing_breakdown_recomputed)
{
    synor_econ *e = fixtures();
    ASSERT(e);
    synor_price_request r;
    synor_price_request_init(&r);
    r.profile = "nvidia-h100-sxm";
    r.region = "aws:us-east-1";
    synor_price_quote q;
    ASSERT_OK(synor_econ_price(e, &r, &q));
    ASSERT_STREQ(q.region->id, "US-VA");
    ASSERT_EQ(q.milliwatts, 700000);
    ASSERT_EQ(q.energy_mwh, 770);
    ASSERT_EQ(q.energy, 61600);
    ASSERT_EQ(q.depreciation, 684932);
    ASSERT_EQ(q.network, 0);
    ASSERT_EQ(q.base, 746532);
    ASSERT_EQ(q.demand_adjustment, 0);
    ASSERT_EQ(q.fee, 37327);
    ASSERT_EQ(q.total, 783859);
    /* 2.5 h at 60% utilisation, 10 GB out to the internet, commercial
     * tariff, demand 1.5x, fee 10% */
    r.seconds = 9000;
    r.utilisation_bp = 6000;
    r.network_milli_gb = 10000;
    r.tariff = SYNOR_TARIFF_COMMERCIAL;
    r.demand_bp = 15000;
    r.fee_bp = 1000;
    ASSERT_OK(synor_econ_price(e, &r, &q));
    ASSERT_EQ(q.energy, 231000);        /* 700 x 2.5 x 1.1 x 0.12 = 0.231 */
    ASSERT_EQ(q.depreciation, 2853881); /* 30000 x 2.5 / (43800 x 0.6) = 2.8538813 */
    ASSERT_EQ(q.network, 900000);       /* 10 x 0.09 */
    ASSERT_EQ(q.base, 3984881);
    ASSERT_EQ(q.demand_adjustment, 1992441); /* 1992440.5 up */
    ASSERT_EQ(q.fee, 398488);                /* 398488.1 */
    ASSERT_EQ(q.total, 3984881 + 1992441 + 398488);
    /* demand 0.5x: the adjustment is negative, rounded away from zero */
    r.demand_bp = 5000;
    ASSERT_OK(synor_econ_price(e, &r, &q));
    ASSERT_EQ(q.demand_adjustment, -1992441);
    /* what is missing is named */
    r.region = "SE";
    ASSERT_EQ(synor_econ_price(e, &r, &q), SYNOR_ENOENT);
    ASSERT_CONTAINS(synor_errmsg(), "region SE has no commercial tariff");
    r.tariff = SYNOR_TARIFF_INDUSTRIAL;
    r.profile = "google-tpu-v5p";
    ASSERT_EQ(synor_econ_price(e, &r, &q), SYNOR_ENOENT);
    ASSERT_CONTAINS(synor_errmsg(), "no hardware price for google-tpu-v5p");
    r.profile = "nvidia-h100-sxm";
    r.region = "JP";
    ASSERT_EQ(synor_econ_price(e, &r, &q), SYNOR_ENOENT);
    ASSERT_CONTAINS(synor_errmsg(), "unknown region \"JP\"");
    r.demand_bp = 20001;
    r.region = "SE";
    ASSERT_EQ(synor_econ_price(e, &r, &q), SYNOR_ERANGE);
    synor_econ_destroy(e);
}

static int place(synor_market *m, int id, const char *owner, const char *side, int64_t price,
                 int64_t qty)
{
    char line[512];
    int reason = -1;
    snprintf(line, sizeof line,
             "{\"cmd\":\"place\",\"id\":%d,\"owner\":\"%s\",\"resource\":"
             "\"gpu/nvidia-h100-sxm/US-VA\",\"side\":\"%s\",\"price\":%lld,\"qty\":%lld,"
             "\"time\":%d}",
             id, owner, side, (long long)price, (long long)qty, 1000 + id);
    int rc = synor_market_submit_json(m, catalog(), line, strlen(line), "t", id, &reason);
    return rc ? rc : reason;
}

TEST(demand_multiplier_from_a_real_book)
{
    char dir[] = "/tmp/synor-econ-XXXXXX";
    ASSERT(mkdtemp(dir));
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    cfg.dir = dir;
    synor_market *m;
    ASSERT_OK(synor_market_open(&cfg, &m));
    const char *res = "gpu/nvidia-h100-sxm/US-VA";
    synor_econ_demand d;
    ASSERT_OK(synor_econ_demand_get(m, res, &d)); /* no such book: 1x */
    ASSERT_EQ(d.multiplier_bp, 10000);
    ASSERT_EQ(d.has_book, 0);
    /* asks only: supply without demand, the lower bound 0.5x */
    ASSERT_EQ(place(m, 1, "alice", "ask", 2500000, 8), 0);
    ASSERT_OK(synor_econ_demand_get(m, res, &d));
    ASSERT_EQ(d.has_book, 1);
    ASSERT_EQ(d.multiplier_bp, 5000);
    /* 2 bid against 8 asked near the mid: 0.25 -> bounded to 0.5x */
    ASSERT_EQ(place(m, 2, "bob", "bid", 2400000, 2), 0);
    ASSERT_OK(synor_econ_demand_get(m, res, &d));
    ASSERT_EQ(d.mid, 2450000);
    ASSERT_EQ(d.bid_qty, 2);
    ASSERT_EQ(d.ask_qty, 8);
    ASSERT_EQ(d.multiplier_bp, 5000);
    /* 12 bid (10 more near the mid) against 8: 1.5x */
    ASSERT_EQ(place(m, 3, "carol", "bid", 2300000, 10), 0);
    /* a bid far below the band does not count */
    ASSERT_EQ(place(m, 4, "dave", "bid", 1000000, 100), 0);
    ASSERT_OK(synor_econ_demand_get(m, res, &d));
    ASSERT_EQ(d.bid_qty, 12);
    ASSERT_EQ(d.multiplier_bp, 15000);
    /* 40 more bid: 52 / 8 = 6.5 -> bounded to 2x */
    ASSERT_EQ(place(m, 5, "erin", "bid", 2450000, 40), 0);
    ASSERT_OK(synor_econ_demand_get(m, res, &d));
    ASSERT_EQ(d.multiplier_bp, 20000);
    ASSERT_OK(synor_market_commit(m));
    synor_market_close(m);
    /* read back from the directory, as synor price --market does */
    cfg.read_only = 1;
    ASSERT_OK(synor_market_open(&cfg, &m));
    ASSERT_OK(synor_econ_demand_get(m, res, &d));
    ASSERT_EQ(d.multiplier_bp, 20000);
    synor_market_close(m);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
}

TEST(best_window_on_a_small_profile)
{
    /* 6 hours, hour 0 at t = 3600 * 10 */
    int64_t vals[6] = {50, 10, 20, 5, -40, 100};
    synor_econ_hourly h = {.region = "X", .start_unix = 36000, .values = vals, .n = 6};
    int64_t off, now_sum, best_sum;
    /* now = hour 1 + 30 min -> hour 1; 2 h job before a 4 h deadline:
     * starts +0 (10+20), +1 (20+5), +2 (5-40): the last */
    ASSERT_OK(synor_econ_best_window(&h, 36000 + 5400, 7200, 14400, &off, &now_sum, &best_sum));
    ASSERT_EQ(off, 7200);
    ASSERT_EQ(now_sum, 30 * 3600);
    ASSERT_EQ(best_sum, -35 * 3600);
    /* 1.5 h job: the last half hour counts 1800 s; wraps past hour 5 */
    ASSERT_OK(
        synor_econ_best_window(&h, 36000 + 5 * 3600, 5400, 5 * 3600, &off, &now_sum, &best_sum));
    /* starts from hour 5: +0: 100*3600 + 50*1800; +1: 50*3600+10*1800; +2: 10*3600+20*1800;
     * +3: 20*3600 + 5*1800 = 81000 ; 10/20 -> 72000 is less */
    ASSERT_EQ(off, 2 * 3600);
    ASSERT_EQ(best_sum, 10 * 3600 + 20 * 1800);
    ASSERT_EQ(now_sum, 100 * 3600 + 50 * 1800);
    /* now before the profile's start maps backwards onto the cycle */
    ASSERT_OK(synor_econ_best_window(&h, 36000 - 1, 3600, 3600, &off, &now_sum, &best_sum));
    ASSERT_EQ(now_sum, 100 * 3600);
    /* ties go to the earliest start */
    int64_t flat[4] = {7, 7, 7, 7};
    synor_econ_hourly f = {.region = "F", .start_unix = 0, .values = flat, .n = 4};
    ASSERT_OK(synor_econ_best_window(&f, 0, 3600, 4 * 3600, &off, &now_sum, &best_sum));
    ASSERT_EQ(off, 0);
    ASSERT_EQ(synor_econ_best_window(&f, 0, 3600, 5 * 3600, &off, &now_sum, &best_sum),
              SYNOR_ERANGE);
    ASSERT_EQ(synor_econ_best_window(&f, 0, 7200, 3600, &off, &now_sum, &best_sum), SYNOR_EINVAL);
}

TEST(ranking_by_cost_and_carbon)
{
    synor_econ *e = fixtures();
    ASSERT(e);
    synor_rank_request r;
    synor_rank_request_init(&r);
    r.price.profile = "nvidia-h100-sxm";
    r.price.seconds = 4 * 3600;
    r.from = "US-VA";
    r.deadline_seconds = 24 * 3600;
    ASSERT_OK(synor_econ_date_parse("2026-11-27", &r.now_unix)); /* a Friday */
    r.now_unix = r.now_unix * 86400 + 12 * 3600;
    synor_rank_entry *v;
    size_t n;
    ASSERT_OK(synor_econ_rank(e, &r, &v, &n));
    ASSERT_EQ(n, 3);
    /* energy: 0.7 kW x 4 h x 1.1 = 3.08 kWh at 0.05, 0.08, 0.176 */
    ASSERT_STREQ(v[0].region->id, "SE");
    ASSERT_EQ(v[0].quote.energy, 154000);
    ASSERT_STREQ(v[1].region->id, "US-VA");
    ASSERT_EQ(v[1].quote.energy, 246400);
    ASSERT_STREQ(v[2].region->id, "DE");
    ASSERT_EQ(v[2].quote.energy, 542080);
    ASSERT(v[0].ok && v[1].ok && v[2].ok);
    ASSERT_NEAR(v[0].gco2, 3.08 * 40, 1e-9);
    /* RTT: US-VA-DE measured (90 ms between their AWS regions), SE estimated */
    ASSERT(v[2].latency_ms == 90.0 && !v[2].latency_estimated);
    ASSERT(v[0].latency_estimated && v[0].latency_ms > 90 && v[0].latency_ms < 120);
    /* US-VA: 80 USD/MWh by day, 40 from 00:00 UTC: the window starts at
     * midnight, 12 h from now, and halves the wholesale energy */
    ASSERT(v[1].has_window);
    ASSERT_EQ(v[1].window_offset_s, 12 * 3600);
    ASSERT_EQ(v[1].now_cost, 246400);
    ASSERT_EQ(v[1].best_cost, 123200);
    ASSERT(!v[0].has_window); /* SE has no hourly profile */
    free(v);

    /* by carbon from Berlin within 50 ms: US-VA is out (estimated RTT) */
    r.from = NULL;
    r.has_latlon = 1;
    r.lat = 52.5;
    r.lon = 13.4;
    r.max_latency_ms = 50;
    r.by = SYNOR_RANK_CARBON;
    ASSERT_OK(synor_econ_rank(e, &r, &v, &n));
    ASSERT_STREQ(v[0].region->id, "SE");
    ASSERT_STREQ(v[1].region->id, "DE");
    ASSERT_STREQ(v[2].region->id, "US-VA");
    ASSERT(!v[2].ok);
    ASSERT_CONTAINS(v[2].reason, "(estimated) > 50.0 ms");
    /* DE at 12:00 on a weekday is in its 200 g hours (10-16 UTC): now is best */
    ASSERT(v[1].has_window);
    ASSERT_EQ(v[1].window_offset_s, 0);
    ASSERT_NEAR(v[1].best_gco2, 3.08 * 200, 1e-9);
    free(v);

    /* a restricted list; an unknown region is an error */
    const char *only[2] = {"DE", "aws:eu-north-1"};
    r.regions = only;
    r.n_regions = 2;
    r.by = SYNOR_RANK_COST;
    r.max_latency_ms = 0;
    ASSERT_OK(synor_econ_rank(e, &r, &v, &n));
    ASSERT_EQ(n, 2);
    ASSERT_STREQ(v[0].region->id, "SE");
    free(v);
    only[1] = "XX";
    ASSERT_EQ(synor_econ_rank(e, &r, &v, &n), SYNOR_ENOENT);
    r.deadline_seconds = 3600;
    only[1] = "SE";
    ASSERT_EQ(synor_econ_rank(e, &r, &v, &n), SYNOR_EINVAL);
    synor_econ_destroy(e);
}

TEST(builtin_data_loads)
{
    synor_econ *e;
    ASSERT_OK(synor_econ_create(catalog(), &e));
    ASSERT_OK(synor_econ_load_builtin(e));
    size_t n = 0;
    for (int d = 0; d < SYNOR_ECON_DATASET_COUNT; d++)
        n += synor_econ_file_of(e, (synor_econ_dataset)d) != NULL;
    ASSERT_EQ(n, synor_econ_builtin_count());
    synor_econ_destroy(e);
    synor_catalog_destroy(cat);
    cat = NULL;
}

TEST_MAIN(fixtures_load_and_lookups, loader_errors_name_file_position_field_value,
          loads_are_all_or_nothing, staleness_on_an_injected_date, fixed_point_at_the_limits,
          pricing_breakdown_recomputed, demand_multiplier_from_a_real_book,
          best_window_on_a_small_profile, ranking_by_cost_and_carbon, builtin_data_loads)
