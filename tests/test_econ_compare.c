/* test_econ_compare.c - synor_econ_compare (synor/econ.h) on the fictional
 * fixtures of tests/data/econ: the clouds' whole instances, the network's
 * cheapest region, the breakdown's parts against the pricing engine, and
 * the limits. The CLI's figures are checked in tests/cli/compare.sh. */
#include "synor.h"
#include "test.h"

#define FIXTURES SYNOR_SOURCE_DIR "/tests/data/econ"

static int64_t engine(const synor_econ *e, const char *region, const char *site, uint32_t fee,
                      int64_t seconds)
{
    synor_price_request r;
    synor_price_request_init(&r);
    r.profile = "nvidia-h100-sxm";
    r.region = region;
    r.site = site;
    r.fee_bp = fee;
    r.seconds = seconds;
    synor_price_quote q;
    return synor_econ_price(e, &r, &q) ? -1 : q.total;
}

TEST(a_job_against_the_clouds)
{
    synor_catalog *cat;
    synor_econ *e;
    ASSERT_OK(synor_catalog_create(&cat));
    ASSERT_OK(synor_catalog_load_builtin(cat));
    ASSERT_OK(synor_econ_create(cat, &e));
    ASSERT_OK(synor_econ_load_dir(e, FIXTURES));
    synor_compare_request r;
    synor_compare_request_init(&r);
    r.price.profile = "nvidia-h100-sxm";
    r.price.seconds = 1800; /* half an hour each */
    r.count = 12;           /* two p5.48xlarge */
    r.user_region = "DE";
    synor_compare_result x;
    ASSERT_OK(synor_econ_compare(e, &r, &x));
    ASSERT_EQ(x.best_cloud, 0);
    ASSERT_EQ(x.cloud[0].on_demand_instances, 2);
    ASSERT_EQ(x.cloud[0].on_demand_cost, 2 * 49160000); /* 98.32 / 2 per instance */
    ASSERT(x.cloud[1].on_demand == NULL && x.cloud[2].on_demand == NULL);
    ASSERT_EQ(x.best_spot_cloud, -1);
    ASSERT_EQ(x.has_spot, 0);
    ASSERT_EQ(strcmp(x.network_region->id, "SE"), 0);
    int64_t net = engine(e, "SE", "colocation", 500, 12 * 1800);
    int64_t hyper = engine(e, "US-VA", "hyperscale", 0, 12 * 1800);
    int64_t colo = engine(e, "US-VA", "colocation", 0, 12 * 1800);
    int64_t de = engine(e, "DE", "colocation", 500, 12 * 1800);
    ASSERT(net > 0 && hyper > 0 && colo > 0 && de > 0);
    ASSERT_EQ(x.network.total, net);
    ASSERT_EQ(x.pay, net);
    ASSERT_EQ(x.cloud[0].on_demand_share, 12 * 98320000 / 8 / 2); /* 12 GPU half-hours */
    ASSERT_EQ(x.margin, 12 * 98320000 / 8 / 2 - hyper);
    ASSERT_EQ(x.pue, hyper - colo);
    ASSERT_EQ(x.region, de - net);
    int64_t C = 98320000, S = 12 * 98320000 / 8 / 2;
    ASSERT_EQ(x.saving_bp, ((C - net) * 10000 + C / 2) / C);
    ASSERT_EQ(x.saving_share_bp, ((S - net) * 10000 + S / 2) / S);
    /* the market's quote: whole device-hours, 12 devices x 1 h */
    r.market_ask = 2500000;
    ASSERT_OK(synor_econ_compare(e, &r, &x));
    ASSERT_EQ(x.market_cost, 12 * 2500000);
    /* a consumer device takes the work at the ratio of the peaks */
    r.consumer_profile = "nvidia-rtx-4090";
    ASSERT_OK(synor_econ_compare(e, &r, &x));
    ASSERT(x.has_consumer);
    ASSERT(x.consumer_seconds > 1800);
    ASSERT_EQ(x.consumer, x.network.total - x.consumer_quote.total);
    synor_econ_destroy(e);
    synor_catalog_destroy(cat);
}

TEST(limits_and_absent_data)
{
    synor_catalog *cat;
    synor_econ *e;
    ASSERT_OK(synor_catalog_create(&cat));
    ASSERT_OK(synor_catalog_load_builtin(cat));
    ASSERT_OK(synor_econ_create(cat, &e));
    ASSERT_OK(synor_econ_load_dir(e, FIXTURES));
    synor_compare_request r;
    synor_compare_request_init(&r);
    r.price.profile = "nvidia-h100-sxm";
    synor_compare_result x;
    r.count = 0;
    ASSERT_EQ(synor_econ_compare(e, &r, &x), SYNOR_ERANGE);
    r.count = 1000000;
    r.price.seconds = SYNOR_ECON_MAX_SECONDS;
    ASSERT_EQ(synor_econ_compare(e, &r, &x), SYNOR_ERANGE);
    r.count = 1;
    r.price.seconds = 0;
    ASSERT_EQ(synor_econ_compare(e, &r, &x), SYNOR_ERANGE);
    r.price.seconds = 3600;
    r.price.profile = "nvidia-rtx-4090"; /* no cloud sells one */
    ASSERT_EQ(synor_econ_compare(e, &r, &x), SYNOR_ENOENT);
    ASSERT_EQ(synor_econ_compare(NULL, &r, &x), SYNOR_EINVAL);
    synor_econ_destroy(e);
    synor_catalog_destroy(cat);
}

TEST_MAIN(a_job_against_the_clouds, limits_and_absent_data)
