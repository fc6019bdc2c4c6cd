/* test_router.c - the task router: filters counted per reason exactly,
 * scores recomputed by hand, weights that change the choice, N distinct
 * devices (spread over owners), deterministic ties, devices without a
 * price, task cost in integer micro-USD at its limits, route tables and
 * weights with bad input named, snapshots and refresh, the index against
 * the brute-force scan over many random registries and requests, and
 * decisions on several threads while the registry changes. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "common/common.h"
#include "router/router_internal.h"
#include "synor.h"
#include "test.h"

static synor_catalog *cat;

static synor_catalog *catalog(void)
{
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        return NULL;
    return cat;
}

static int add(synor_registry *reg, const char *id, const char *profile, const char *owner,
               const char *region, synor_device_status st, int rep, double util, const char *avail)
{
    synor_device *dev;
    int rc = synor_device_create_simulated(synor_catalog_find(catalog(), profile), NULL, &dev);
    if (rc)
        return rc;
    synor_registry_info info;
    synor_registry_info_init(&info);
    synor__strlcpy(info.owner, owner, sizeof info.owner);
    synor__strlcpy(info.region, region, sizeof info.region);
    info.status = st;
    info.reputation = rep;
    info.utilization = util;
    if (avail && (rc = synor_availability_parse(avail, &info.availability)) == 0)
        rc = 0;
    if (!rc)
        rc = synor_registry_add(reg, id, dev, &info);
    synor_device_unref(dev);
    return rc;
}

static const char table_json[] =
    "{\"format\": \"synor-route-table/1\",\n"
    " \"latency\": {\"fibre_km_per_ms\": 200, \"route_factor\": 1.5},\n"
    " \"regions\": [\n"
    "  {\"name\": \"eu-west\", \"lat\": 50.11, \"lon\": 8.68, \"base_ms\": "
    "1},\n"
    "  {\"name\": \"us-east\", \"lat\": 39.04, \"lon\": -77.49, \"base_ms\": "
    "1},\n"
    "  {\"name\": \"us-west\", \"lat\": 37.34, \"lon\": -121.89, \"base_ms\": "
    "1},\n"
    "  {\"name\": \"ap-south\", \"lat\": 12.97, \"lon\": 77.59, \"base_ms\": "
    "2}],\n"
    " \"prices\": [\n"
    "  {\"profile\": \"nvidia-h100-sxm\", \"usd_per_hour\": \"2.00\"},\n"
    "  {\"profile\": \"nvidia-h100-sxm\", \"region\": \"us-east\", "
    "\"usd_per_hour\": \"2.5\"},\n"
    "  {\"profile\": \"nvidia-a100-80gb\", \"usd_per_hour\": \"1.2\"},\n"
    "  {\"profile\": \"nvidia-rtx-4090\", \"usd_per_hour\": \"0.35\"},\n"
    "  {\"profile\": \"google-tpu-v5p\", \"usd_per_hour\": \"4.2\"},\n"
    "  {\"profile\": \"amd-mi300x\", \"usd_per_hour\": \"1000\"}]}\n";

static synor_route_table *table(void)
{
    synor_route_table *t;
    if (synor_route_table_create(&t))
        return NULL;
    if (synor_route_table_load_string(t, table_json, sizeof table_json - 1, "t.json")) {
        synor_route_table_destroy(t);
        return NULL;
    }
    return t;
}

static void bf16_request(synor_route_request *q)
{
    synor_route_request_init(q);
    q->n_ops = 1;
    q->ops[0] = SYNOR_OP_MATMUL;
    q->dtypes[0] = SYNOR_DTYPE_BF16;
    q->flops = 1e15;
}

/* The fixture: one device filtered out per reason (two for some), three
 * candidates. */
static synor_registry *fixture(void)
{
    synor_registry *reg;
    if (synor_registry_create(&reg))
        return NULL;
    const synor_device_status ON = SYNOR_STATUS_ONLINE;
    int rc =
        add(reg, "a-h100", "nvidia-h100-sxm", "acme", "eu-west", ON, 90, 0.5, NULL) ||
        add(reg, "b-a100", "nvidia-a100-80gb", "bob", "eu-west", ON, 80, 0.1, NULL) ||
        add(reg, "c-h100", "nvidia-h100-sxm", "carol", "us-east", ON, 95, 0.0, NULL) ||
        add(reg, "cap-4090", "nvidia-rtx-4090", "dan", "eu-west", ON, 99, 0, NULL) ||
        add(reg, "cap-groq", "groq-lpu", "dan", "eu-west", ON, 99, 0, NULL) ||
        add(reg, "reg-west", "nvidia-h100-sxm", "erin", "us-west", ON, 99, 0, NULL) ||
        add(reg, "lat-blr", "nvidia-h100-sxm", "erin", "ap-south", ON, 99, 0, NULL) ||
        add(reg, "st-busy", "nvidia-h100-sxm", "acme", "eu-west", SYNOR_STATUS_BUSY, 99, 1, NULL) ||
        add(reg, "st-off", "nvidia-h100-sxm", "acme", "eu-west", SYNOR_STATUS_OFFLINE, 99, 0,
            NULL) ||
        add(reg, "av-night", "nvidia-h100-sxm", "fay", "eu-west", ON, 99, 0, "utc:22-7") ||
        add(reg, "rep-low", "nvidia-h100-sxm", "gus", "eu-west", ON, 30, 0, NULL) ||
        add(reg, "bud-mi300x", "amd-mi300x", "acme", "eu-west", ON, 99, 0, NULL) ||
        add(reg, "bud-epyc", "amd-epyc-9654", "acme", "eu-west", ON, 99, 0, NULL);
    if (rc) {
        synor_registry_destroy(reg);
        return NULL;
    }
    return reg;
}

static void fixture_request(synor_route_request *q, synor_host_state *noon)
{
    bf16_request(q);
    q->min_memory = 40ull << 30;
    q->n_regions = 3;
    q->regions[0] = "eu-west";
    q->regions[1] = "us-east";
    q->regions[2] = "ap-south";
    q->from_region = "eu-west";
    q->max_latency_ms = 105; /* us-east 99.2 ms, ap-south 113.1 ms */
    q->min_reputation = 50;
    q->budget_usd_micro = 10000; /* 0.01 USD */
    memset(noon, 0, sizeof *noon);
    noon->utc_hour = 12;
    q->available_in = noon;
}

TEST(filters_counted_per_reason)
{
    synor_route_table *t = table();
    synor_registry *reg = fixture();
    ASSERT(t && reg);
    synor_router_config cfg = {t, NULL, NULL};
    synor_router *r;
    ASSERT_OK(synor_router_create(reg, &cfg, &r));
    synor_route_request q;
    synor_host_state noon;
    fixture_request(&q, &noon);
    for (int scan = 0; scan < 2; scan++) {
        synor_route_decision *d;
        ASSERT_OK(scan ? synor_router_route_scan(r, &q, &d) : synor_router_route(r, &q, &d));
        ASSERT_EQ(d->considered, 13);
        ASSERT_EQ(d->candidates, 3);
        ASSERT_EQ(d->filtered[SYNOR_ROUTE_OUT_CAPABILITY], 2);
        ASSERT_EQ(d->filtered[SYNOR_ROUTE_OUT_REGION], 1);
        ASSERT_EQ(d->filtered[SYNOR_ROUTE_OUT_LATENCY], 1);
        ASSERT_EQ(d->filtered[SYNOR_ROUTE_OUT_STATUS], 2);
        ASSERT_EQ(d->filtered[SYNOR_ROUTE_OUT_AVAILABILITY], 1);
        ASSERT_EQ(d->filtered[SYNOR_ROUTE_OUT_REPUTATION], 1);
        ASSERT_EQ(d->filtered[SYNOR_ROUTE_OUT_BUDGET], 2);
        ASSERT_EQ(d->n_chosen, 1);
        ASSERT_EQ(d->n_runners_up, 2);
        synor_route_decision_free(d);
    }
    /* at 23:00 the night-only device passes */
    noon.utc_hour = 23;
    synor_route_decision *d;
    ASSERT_OK(synor_router_route(r, &q, &d));
    ASSERT_EQ(d->candidates, 4);
    ASSERT_EQ(d->filtered[SYNOR_ROUTE_OUT_AVAILABILITY], 0);
    synor_route_decision_free(d);
    synor_router_destroy(r);
    synor_registry_destroy(reg);
    synor_route_table_destroy(t);
}

static double haversine(double la1, double lo1, double la2, double lo2)
{
    double r = M_PI / 180, a = sin((la2 - la1) * r / 2), b = sin((lo2 - lo1) * r / 2);
    return 2 * 6371.0 * asin(sqrt(a * a + cos(la1 * r) * cos(la2 * r) * b * b));
}

TEST(scores_recomputed_by_hand)
{
    synor_route_table *t = table();
    synor_registry *reg = fixture();
    ASSERT(t && reg);
    synor_router_config cfg = {t, NULL, NULL};
    synor_router *r;
    ASSERT_OK(synor_router_create(reg, &cfg, &r));
    synor_route_request q;
    synor_host_state noon;
    fixture_request(&q, &noon);
    synor_route_decision *d;
    ASSERT_OK(synor_router_route(r, &q, &d));
    ASSERT_EQ(d->n_chosen + d->n_runners_up, 3);
    /* the three candidates, by hand */
    const char *ids[3] = {"a-h100", "b-a100", "c-h100"};
    const char *profs[3] = {"nvidia-h100-sxm", "nvidia-a100-80gb", "nvidia-h100-sxm"};
    const int64_t price[3] = {2000000, 1200000, 2500000};
    const int rep[3] = {90, 80, 95};
    const double util[3] = {0.5, 0.1, 0.0};
    const double lat[3] = {1, 1, 1 + 2 * haversine(50.11, 8.68, 39.04, -77.49) * 1.5 / 200};
    double time[3], speed[3];
    int64_t cost[3];
    synor_op_work w = {SYNOR_OP_MATMUL, SYNOR_DTYPE_BF16, 1e15, 0, 0, 0};
    for (int i = 0; i < 3; i++) {
        synor_device *dev;
        ASSERT_OK(
            synor_device_create_simulated(synor_catalog_find(catalog(), profs[i]), NULL, &dev));
        time[i] = synor_device_estimate_time(dev, &w);
        synor_device_unref(dev);
        speed[i] = 1 / time[i];
        /* price x ns / 3.6e12, rounded up */
        int64_t ns = (int64_t)ceil(time[i] * 1e9);
        cost[i] = (price[i] * ns + 3599999999999) / 3600000000000;
    }
    double cmin = fmin(fmin((double)cost[0], (double)cost[1]), (double)cost[2]);
    double cmax = fmax(fmax((double)cost[0], (double)cost[1]), (double)cost[2]);
    double smin = fmin(fmin(speed[0], speed[1]), speed[2]);
    double smax = fmax(fmax(speed[0], speed[1]), speed[2]);
    double want[3];
    for (int i = 0; i < 3; i++) {
        double sc = (cmax - (double)cost[i]) / (cmax - cmin);
        double sl = (lat[2] - lat[i]) / (lat[2] - lat[0]);
        double sp = (speed[i] - smin) / (smax - smin);
        want[i] = 0.3 * sc + 0.2 * sl + 0.2 * sp + 0.15 * rep[i] / 100 + 0.15 * (1 - util[i]);
    }
    for (size_t k = 0; k < 3; k++) {
        const synor_route_choice *c = k < d->n_chosen ? &d->chosen[k] : &d->runners_up[k - 1];
        int i = strcmp(c->id, ids[0]) == 0 ? 0 : strcmp(c->id, ids[1]) == 0 ? 1 : 2;
        ASSERT_STREQ(c->id, ids[i]);
        ASSERT_NEAR(c->total, want[i], 1e-12);
        ASSERT_EQ(c->task_usd_micro, cost[i]);
        ASSERT_EQ(c->usd_micro_per_hour, price[i]);
        ASSERT_NEAR(c->latency_ms, lat[i], 1e-9);
        ASSERT_NEAR(c->time_s, time[i], 1e-12);
        if (k > 0) /* best first */
            ASSERT(d->runners_up[k - 1].total <=
                   (k == 1 ? d->chosen[0].total : d->runners_up[k - 2].total));
    }
    ASSERT_STREQ(d->chosen[0].price_source, "table: nvidia-h100-sxm");
    int c_at = strcmp(d->chosen[0].id, "c-h100") == 0       ? -1
               : strcmp(d->runners_up[0].id, "c-h100") == 0 ? 0
                                                            : 1;
    ASSERT_STREQ(c_at < 0 ? d->chosen[0].price_source : d->runners_up[c_at].price_source,
                 "table: nvidia-h100-sxm in us-east");
    char *text = synor_route_decision_format(d, 1);
    ASSERT(text);
    ASSERT_CONTAINS(text, "capability 2, region 1, latency 1, status 2, availability 1, "
                          "reputation 1, budget 2");
    ASSERT_CONTAINS(text, "Runners-up");
    free(text);
    synor_route_decision_free(d);
    synor_router_destroy(r);
    synor_registry_destroy(reg);
    synor_route_table_destroy(t);
}

static const char *best_with(synor_router *r, synor_route_request *q, int only)
{
    static char id[SYNOR_REGISTRY_ID_MAX];
    for (int i = 0; i < SYNOR_ROUTE_COMPONENTS; i++)
        q->weights.w[i] = i == only ? 1 : 0;
    synor_route_decision *d;
    if (synor_router_route(r, q, &d) || d->n_chosen != 1)
        return "(none)";
    synor__strlcpy(id, d->chosen[0].id, sizeof id);
    synor_route_decision_free(d);
    return id;
}

TEST(weights_change_the_choice)
{
    synor_route_table *t = table();
    synor_registry *reg = fixture();
    ASSERT(t && reg);
    synor_router_config cfg = {t, NULL, NULL};
    synor_router *r;
    ASSERT_OK(synor_router_create(reg, &cfg, &r));
    synor_route_request q;
    synor_host_state noon;
    fixture_request(&q, &noon);
    /* H100 in eu-west is cheapest per task (2.00/h at ~3x the A100's speed) */
    ASSERT_STREQ(best_with(r, &q, SYNOR_ROUTE_COST), "a-h100");
    /* a-h100 and b-a100 are equally near: the tie goes to the first registered */
    ASSERT_STREQ(best_with(r, &q, SYNOR_ROUTE_LATENCY), "a-h100");
    /* a-h100 and c-h100 equally fast: first registered */
    ASSERT_STREQ(best_with(r, &q, SYNOR_ROUTE_CAPABILITY), "a-h100");
    ASSERT_STREQ(best_with(r, &q, SYNOR_ROUTE_REPUTATION), "c-h100");
    ASSERT_STREQ(best_with(r, &q, SYNOR_ROUTE_LOAD), "c-h100");
    /* reputation and load only, without c: the A100's lighter load wins */
    q.n_regions = 1;
    for (int i = 0; i < SYNOR_ROUTE_COMPONENTS; i++)
        q.weights.w[i] = 0;
    q.weights.w[SYNOR_ROUTE_REPUTATION] = 0.5;
    q.weights.w[SYNOR_ROUTE_LOAD] = 0.5;
    synor_route_decision *d;
    ASSERT_OK(synor_router_route(r, &q, &d));
    ASSERT_STREQ(d->chosen[0].id, "b-a100"); /* 0.5*0.8 + 0.5*0.9 > 0.5*0.9 + 0.5*0.5 */
    synor_route_decision_free(d);
    synor_router_destroy(r);
    synor_registry_destroy(reg);
    synor_route_table_destroy(t);
}

TEST(n_devices_distinct_and_spread)
{
    synor_route_table *t = table();
    synor_registry *reg;
    ASSERT(t);
    ASSERT_OK(synor_registry_create(&reg));
    char id[32];
    for (int i = 0; i < 12; i++) {
        snprintf(id, sizeof id, "d%d", i);
        const char *owner = i < 8 ? "big" : i < 10 ? "mid" : "small";
        ASSERT_OK(add(reg, id, "nvidia-h100-sxm", owner, "eu-west", SYNOR_STATUS_ONLINE, 90 - i, 0,
                      NULL));
    }
    synor_router_config cfg = {t, NULL, NULL};
    synor_router *r;
    ASSERT_OK(synor_router_create(reg, &cfg, &r));
    synor_route_request q;
    bf16_request(&q);
    q.n_devices = 4;
    synor_route_decision *d;
    ASSERT_OK(synor_router_route(r, &q, &d));
    ASSERT_EQ(d->n_chosen, 4);
    for (int i = 0; i < 4; i++) { /* best reputation first, all distinct */
        snprintf(id, sizeof id, "d%d", i);
        ASSERT_STREQ(d->chosen[i].id, id);
    }
    synor_route_decision_free(d);
    q.spread = SYNOR_ROUTE_SPREAD_OWNER;
    q.n_devices = 3;
    q.n_runners_up = 0;
    ASSERT_OK(synor_router_route(r, &q, &d));
    ASSERT_EQ(d->n_chosen, 3);
    ASSERT_STREQ(d->chosen[0].id, "d0");
    ASSERT_STREQ(d->chosen[1].id, "d8");
    ASSERT_STREQ(d->chosen[2].id, "d10");
    synor_route_decision_free(d);
    /* four owners wanted, three exist: three chosen, and the decision says so */
    q.n_devices = 4;
    ASSERT_OK(synor_router_route(r, &q, &d));
    ASSERT_EQ(d->n_chosen, 3);
    ASSERT_EQ(d->wanted, 4);
    char *text = synor_route_decision_format(d, 0);
    ASSERT_CONTAINS(text, "Only 3 of the 4 devices wanted");
    free(text);
    synor_route_decision_free(d);
    synor_router_destroy(r);
    synor_registry_destroy(reg);
    synor_route_table_destroy(t);
}

TEST(ties_go_to_the_first_registered)
{
    synor_route_table *t = table();
    synor_registry *reg;
    ASSERT(t);
    ASSERT_OK(synor_registry_create(&reg));
    /* identical devices registered in an order unlike their ids' */
    const char *ids[] = {"zz", "aa", "mm", "bb"};
    for (int i = 0; i < 4; i++)
        ASSERT_OK(add(reg, ids[i], "nvidia-a100-80gb", "o", "eu-west", SYNOR_STATUS_ONLINE, 70, 0.2,
                      NULL));
    synor_router_config cfg = {t, NULL, NULL};
    synor_router *r;
    ASSERT_OK(synor_router_create(reg, &cfg, &r));
    synor_route_request q;
    bf16_request(&q);
    q.n_devices = 2;
    q.n_runners_up = 2;
    for (int scan = 0; scan < 2; scan++) {
        synor_route_decision *d;
        ASSERT_OK(scan ? synor_router_route_scan(r, &q, &d) : synor_router_route(r, &q, &d));
        ASSERT_STREQ(d->chosen[0].id, "zz");
        ASSERT_STREQ(d->chosen[1].id, "aa");
        ASSERT_STREQ(d->runners_up[0].id, "mm");
        ASSERT_STREQ(d->runners_up[1].id, "bb");
        ASSERT(d->chosen[0].total == d->runners_up[1].total);
        synor_route_decision_free(d);
    }
    synor_router_destroy(r);
    synor_registry_destroy(reg);
    synor_route_table_destroy(t);
}

TEST(no_price_is_said_and_budget_excludes_it)
{
    synor_route_table *t = table();
    synor_registry *reg;
    ASSERT(t);
    ASSERT_OK(synor_registry_create(&reg));
    ASSERT_OK(
        add(reg, "priced", "nvidia-h100-sxm", "o", "eu-west", SYNOR_STATUS_ONLINE, 50, 0.5, NULL));
    ASSERT_OK(
        add(reg, "unpriced", "amd-epyc-9654", "o", "eu-west", SYNOR_STATUS_ONLINE, 100, 0, NULL));
    synor_router_config cfg = {t, NULL, NULL};
    synor_router *r;
    ASSERT_OK(synor_router_create(reg, &cfg, &r));
    synor_route_request q;
    bf16_request(&q);
    q.n_devices = 2;
    synor_route_decision *d;
    ASSERT_OK(synor_router_route(r, &q, &d));
    ASSERT_EQ(d->n_chosen, 2);
    const synor_route_choice *u =
        strcmp(d->chosen[0].id, "unpriced") == 0 ? &d->chosen[0] : &d->chosen[1];
    ASSERT_STREQ(u->id, "unpriced");
    ASSERT_EQ(u->priced, 0);
    ASSERT_STREQ(u->price_source, "no price");
    ASSERT(u->score[SYNOR_ROUTE_COST] == 0);
    char *text = synor_route_decision_format(d, 1);
    ASSERT_CONTAINS(text, "no price");
    free(text);
    text = synor_route_decision_json(d);
    ASSERT_CONTAINS(text, "\"usd_micro_per_hour\": null");
    free(text);
    synor_route_decision_free(d);
    q.budget_usd_micro = INT64_MAX;
    ASSERT_OK(synor_router_route(r, &q, &d));
    ASSERT_EQ(d->n_chosen, 1);
    ASSERT_STREQ(d->chosen[0].id, "priced");
    ASSERT_EQ(d->filtered[SYNOR_ROUTE_OUT_BUDGET], 1);
    synor_route_decision_free(d);
    synor_router_destroy(r);
    synor_registry_destroy(reg);
    synor_route_table_destroy(t);
}

TEST(task_cost_integer_limits)
{
    /* 3600 USD/h is 1 USD/s: one second costs exactly 1,000,000 micro-USD */
    ASSERT_EQ(synor__route_task_cost(3600000000, 1.0), 1000000);
    /* rounded up: a nanosecond at 3600 micro-USD/h is 10^-9 micro-USD -> 1 */
    ASSERT_EQ(synor__route_task_cost(3600, 1e-9), 1);
    ASSERT_EQ(synor__route_task_cost(0, 1e9), 0);
    /* the limits: the largest price for 2^62 ns (longer is capped there) */
    __extension__ typedef __int128 i128;
    i128 want = ((i128)SYNOR_ROUTE_PRICE_MAX * ((i128)1 << 62) + 3600000000000 - 1) / 3600000000000;
    ASSERT(want < INT64_MAX);
    ASSERT_EQ(synor__route_task_cost(SYNOR_ROUTE_PRICE_MAX, 4.7e9), (int64_t)want);
    ASSERT_EQ(synor__route_task_cost(SYNOR_ROUTE_PRICE_MAX, 1e300), (int64_t)want);
    ASSERT_EQ(synor__route_task_cost(SYNOR_ROUTE_PRICE_MAX, INFINITY), (int64_t)want);
    int64_t v;
    ASSERT_OK(synor__route_usd_parse("1000000", &v));
    ASSERT_EQ(v, SYNOR_ROUTE_PRICE_MAX);
    ASSERT(synor__route_usd_parse("1000000.000001", &v) < 0);
    ASSERT_OK(synor__route_usd_parse("0.000001", &v));
    ASSERT_EQ(v, 1);
    ASSERT(synor__route_usd_parse("2.", &v) < 0);
    ASSERT(synor__route_usd_parse("-1", &v) < 0);
    ASSERT(synor__route_usd_parse("1e3", &v) < 0);
}

TEST(tables_and_weights_bad_input_named)
{
    synor_route_table *t;
    ASSERT_OK(synor_route_table_create(&t));
    const char bad[] = "{\"format\": \"synor-route-table/1\",\n"
                       " \"prices\": [{\"profile\": \"x\", \"usd_per_hour\": \"2.4999999\"}]}";
    ASSERT_EQ(synor_route_table_load_string(t, bad, sizeof bad - 1, "p.json"), SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "p.json:2:");
    ASSERT_CONTAINS(synor_errmsg(), "prices[0].usd_per_hour");
    ASSERT_CONTAINS(synor_errmsg(), "2.4999999");
    const char bad2[] = "{\"format\": \"synor-route-table/1\",\n \"regions\": [\n"
                        "  {\"name\": \"r\", \"lat\": 91, \"lon\": 0}]}";
    ASSERT(synor_route_table_load_string(t, bad2, sizeof bad2 - 1, "r.json") < 0);
    ASSERT_CONTAINS(synor_errmsg(), "r.json:3:");
    ASSERT_CONTAINS(synor_errmsg(), "regions[0].lat");
    /* nothing was added by the failures */
    ASSERT_EQ(synor_route_table_price(t, "x", NULL, NULL, NULL), 0);
    ASSERT(synor_route_table_region(t, "r", NULL, NULL, NULL) == SYNOR_ENOENT);
    synor_route_table_destroy(t);

    synor_route_weights w, orig;
    synor_route_weights_default(&w);
    orig = w;
    ASSERT(synor_route_weights_parse("cost=0.5,latency=0.5", &w) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "capability is missing");
    ASSERT(synor_route_weights_parse("cost=0.3,latency=0.2,capability=0.2,reputation=0.15,"
                                     "lode=0.15",
                                     &w) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "\"lode\"");
    ASSERT(synor_route_weights_parse("cost=0.3,latency=0.2,capability=0.2,reputation=0.15,"
                                     "load=0.2",
                                     &w) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "sum to 1.05");
    ASSERT(synor_route_weights_parse("cost=-0.1,latency=0.2", &w) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "cost=-0.1");
    ASSERT(memcmp(&w, &orig, sizeof w) == 0);
    ASSERT_OK(synor_route_weights_parse("cost=1,latency=0,capability=0,reputation=0,load=0", &w));
    ASSERT(w.w[SYNOR_ROUTE_COST] == 1);
}

TEST(request_checked_and_snapshot_consistent)
{
    synor_route_table *t = table();
    synor_registry *reg = fixture();
    ASSERT(t && reg);
    synor_router_config cfg = {t, NULL, NULL};
    synor_router *r;
    ASSERT_OK(synor_router_create(reg, &cfg, &r));
    synor_route_request q;
    bf16_request(&q);
    static synor_route_decision sentinel;
    synor_route_decision *d = &sentinel;
    q.max_latency_ms = 10;
    ASSERT_EQ(synor_router_route(r, &q, &d), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "location");
    ASSERT(d == &sentinel);
    q.max_latency_ms = 0;
    q.from_region = "mars";
    ASSERT_EQ(synor_router_route(r, &q, &d), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "\"mars\"");
    q.from_region = NULL;
    q.weights.w[0] = 0.9;
    ASSERT_EQ(synor_router_route(r, &q, &d), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "sum");
    synor_route_weights_default(&q.weights);
    /* a change in the registry is seen after a refresh, not before */
    ASSERT_EQ(synor_router_generation(r), 1);
    ASSERT_OK(
        add(reg, "late", "nvidia-h100-sxm", "z", "eu-west", SYNOR_STATUS_ONLINE, 100, 0, NULL));
    ASSERT_EQ(synor_router_device_count(r), 13);
    ASSERT_OK(synor_router_refresh(r));
    ASSERT_EQ(synor_router_device_count(r), 14);
    ASSERT_EQ(synor_router_generation(r), 2);
    for (int i = 0; i < SYNOR_ROUTE_COMPONENTS; i++)
        q.weights.w[i] = i == SYNOR_ROUTE_REPUTATION;
    ASSERT_OK(synor_router_route(r, &q, &d));
    ASSERT_STREQ(d->chosen[0].id, "late");
    ASSERT_EQ(d->generation, 2);
    synor_route_decision_free(d);
    synor_router_destroy(r);
    synor_registry_destroy(reg);
    synor_route_table_destroy(t);
}

TEST(same_profile_different_figures_not_grouped)
{
    /* a profile overridden between registrations: same id, other memory */
    synor_profile small = *synor_catalog_find(catalog(), "nvidia-h100-sxm");
    small.caps.mem_bytes = 1ull << 30;
    synor_registry *reg;
    ASSERT_OK(synor_registry_create(&reg));
    ASSERT_OK(add(reg, "big", "nvidia-h100-sxm", "o", "eu-west", SYNOR_STATUS_ONLINE, 50, 0, NULL));
    synor_device *dev;
    ASSERT_OK(synor_device_create_simulated(&small, NULL, &dev));
    ASSERT_OK(synor_registry_add(reg, "small", dev, NULL));
    synor_device_unref(dev);
    synor_router *r;
    ASSERT_OK(synor_router_create(reg, NULL, &r));
    synor_route_request q;
    bf16_request(&q);
    q.min_memory = 40ull << 30;
    for (int scan = 0; scan < 2; scan++) {
        synor_route_decision *d;
        ASSERT_OK(scan ? synor_router_route_scan(r, &q, &d) : synor_router_route(r, &q, &d));
        ASSERT_EQ(d->filtered[SYNOR_ROUTE_OUT_CAPABILITY], 1);
        ASSERT_EQ(d->n_chosen, 1);
        ASSERT_STREQ(d->chosen[0].id, "big");
        synor_route_decision_free(d);
    }
    synor_router_destroy(r);
    synor_registry_destroy(reg);
}

/* ---- the index against the scan ---- */

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static unsigned rndn(unsigned n)
{
    return (unsigned)(rnd() % n);
}

/* A provider pricing some devices by their id (so leaves split by price),
 * the rest from the table. */
static int by_id_price(void *user, const synor_registry_entry *e, int64_t *p, const char **src)
{
    size_t len = strlen(e->id);
    if (e->id[len - 1] == '7')
        return 0;
    if (e->id[len - 1] == '3') {
        *p = 1000000 + (int64_t)(e->id[len - 2] % 4) * 500000;
        *src = "by id";
        return 1;
    }
    return synor_route_table_price_fn(user, e, p, src);
}

static int same_choice(const synor_route_choice *a, const synor_route_choice *b)
{
    return strcmp(a->id, b->id) == 0 && a->total == b->total && a->priced == b->priced &&
           a->task_usd_micro == b->task_usd_micro && a->latency_known == b->latency_known &&
           memcmp(a->score, b->score, sizeof a->score) == 0;
}

TEST(index_equals_scan_on_random_registries)
{
    static const char *const profiles[] = {"nvidia-h100-sxm", "nvidia-a100-80gb", "nvidia-rtx-4090",
                                           "amd-epyc-9654",   "google-tpu-v5p",   "amd-mi300x",
                                           "groq-lpu",        "nvidia-h200-sxm"};
    static const char *const regions[] = {"eu-west", "us-east", "us-west", "ap-south", "moon"};
    static const char *const avails[] = {"always",   "always", "utc:8-18",
                                         "utc:22-7", "idle",   "charging:50"};
    static const synor_op_type ops[] = {SYNOR_OP_MATMUL, SYNOR_OP_MATMUL, SYNOR_OP_CONV2D,
                                        SYNOR_OP_SOFTMAX};
    static const synor_dtype dts[] = {SYNOR_DTYPE_BF16, SYNOR_DTYPE_FP32, SYNOR_DTYPE_FP16,
                                      SYNOR_DTYPE_INT8};
    synor_route_table *t = table();
    ASSERT(t);
    rng_state = 0x9e3779b97f4a7c15ull;
    size_t decisions = 0, differing_index_work = 0, with_choice = 0;
    for (int round = 0; round < 48; round++) {
        synor_registry *reg;
        ASSERT_OK(synor_registry_create(&reg));
        unsigned n = 50 + rndn(round % 4 == 3 ? 3000 : 400);
        unsigned n_owners = 1 + rndn(12);
        for (unsigned i = 0; i < n; i++) {
            char id[32], owner[16];
            snprintf(id, sizeof id, "r%d-%u", round, i);
            snprintf(owner, sizeof owner, "o%u", rndn(n_owners));
            static const synor_device_status sts[] = {SYNOR_STATUS_ONLINE,   SYNOR_STATUS_ONLINE,
                                                      SYNOR_STATUS_ONLINE,   SYNOR_STATUS_BUSY,
                                                      SYNOR_STATUS_DRAINING, SYNOR_STATUS_OFFLINE};
            ASSERT_OK(add(reg, id, profiles[rndn(8)], owner, regions[rndn(5)], sts[rndn(6)],
                          (int)rndn(11) * 10, rndn(5) * 0.25, avails[rndn(6)]));
        }
        synor_router_config cfg = {t, round % 2 ? by_id_price : NULL, round % 2 ? t : NULL};
        synor_router *r;
        ASSERT_OK(synor_router_create(reg, &cfg, &r));
        for (int k = 0; k < 60; k++) {
            synor_route_request q;
            synor_host_state hs = {rndn(24), (int)rndn(2), (int)rndn(2), rndn(101)};
            synor_route_request_init(&q);
            q.n_ops = 1 + rndn(2);
            for (unsigned o = 0; o < q.n_ops; o++) {
                q.ops[o] = ops[rndn(4)];
                q.dtypes[o] = dts[rndn(4)];
            }
            q.flops = rndn(4) ? 1e9 * (1 + rndn(1000000)) : 0;
            q.bytes = q.flops == 0 || rndn(2) ? 1e6 * (1 + rndn(100000)) : 0;
            q.min_memory = rndn(3) ? 0 : (uint64_t)rndn(200) << 30;
            q.n_regions = rndn(3) ? 0 : 1 + rndn(3);
            for (unsigned g = 0; g < q.n_regions; g++)
                q.regions[g] = regions[rndn(5)];
            switch (rndn(3)) {
            case 0:
                q.from_region = regions[rndn(4)];
                break;
            case 1:
                q.has_location = 1;
                q.lat = (double)rndn(180) - 90;
                q.lon = (double)rndn(360) - 180;
                break;
            default:
                break;
            }
            if ((q.from_region || q.has_location) && rndn(2))
                q.max_latency_ms = 5 + rndn(200);
            q.min_reputation = rndn(2) ? 0 : (int)rndn(101);
            q.budget_usd_micro = rndn(3) ? 0 : (int64_t)rndn(2000000);
            q.n_devices = 1 + rndn(rndn(4) ? 3 : 40);
            q.n_runners_up = rndn(4);
            q.spread = (synor_route_spread)rndn(3);
            q.available_in = rndn(2) ? &hs : NULL;
            double s = 0;
            for (int c = 0; c < SYNOR_ROUTE_COMPONENTS; c++)
                s += q.weights.w[c] = rndn(3) ? (double)rndn(100) : 0;
            if (s == 0)
                synor_route_weights_default(&q.weights);
            else
                for (int c = 0; c < SYNOR_ROUTE_COMPONENTS; c++)
                    q.weights.w[c] /= s;
            synor_route_decision *a, *b;
            ASSERT_OK(synor_router_route(r, &q, &a));
            ASSERT_OK(synor_router_route_scan(r, &q, &b));
            ASSERT_EQ(a->candidates, b->candidates);
            for (int x = 0; x < SYNOR_ROUTE_OUT_COUNT; x++)
                ASSERT_EQ(a->filtered[x], b->filtered[x]);
            ASSERT_EQ(a->n_chosen, b->n_chosen);
            ASSERT_EQ(a->n_runners_up, b->n_runners_up);
            for (size_t i = 0; i < a->n_chosen + a->n_runners_up; i++)
                if (!same_choice(&a->chosen[i], &b->chosen[i]))
                    TEST__FAIL("round %d request %d: place %zu: index %s %.17g, scan %s %.17g",
                               round, k, i, a->chosen[i].id, a->chosen[i].total, b->chosen[i].id,
                               b->chosen[i].total);
            ASSERT(a->cost_min == b->cost_min && a->cost_max == b->cost_max);
            ASSERT(a->time_min == b->time_min && a->latency_max == b->latency_max);
            size_t sum = a->candidates;
            for (int x = 0; x < SYNOR_ROUTE_OUT_COUNT; x++)
                sum += a->filtered[x];
            ASSERT_EQ(sum, n);
            differing_index_work += a->scored < b->scored;
            with_choice += a->n_chosen > 0;
            decisions++;
            synor_route_decision_free(a);
            synor_route_decision_free(b);
        }
        synor_router_destroy(r);
        synor_registry_destroy(reg);
    }
    ASSERT_EQ(decisions, 48 * 60);
    /* the index did skip work somewhere (else it would be a scan) */
    ASSERT(differing_index_work > 0);
    /* and most requests found devices to compare */
    ASSERT(with_choice > decisions / 2);
    printf("  %zu decisions, %zu with a choice, %zu where the index scored fewer "
           "devices\n",
           decisions, with_choice, differing_index_work);
    synor_route_table_destroy(t);
}

/* ---- decisions on several threads while the registry changes ---- */

typedef struct worker {
    synor_router *r;
    int failures;
} worker;

static void *decide_loop(void *arg)
{
    worker *w = arg;
    synor_route_request q;
    bf16_request(&q);
    q.n_devices = 2;
    q.from_region = "eu-west";
    for (int i = 0; i < 300; i++) {
        synor_route_decision *d;
        if (synor_router_route(w->r, &q, &d)) {
            w->failures++;
            continue;
        }
        if (d->n_chosen != 2 || strcmp(d->chosen[0].id, d->chosen[1].id) == 0)
            w->failures++;
        synor_route_decision_free(d);
    }
    return NULL;
}

TEST(concurrent_decisions_during_refresh)
{
    synor_route_table *t = table();
    synor_registry *reg = fixture();
    ASSERT(t && reg);
    synor_router_config cfg = {t, NULL, NULL};
    synor_router *r;
    ASSERT_OK(synor_router_create(reg, &cfg, &r));
    worker w[3] = {{r, 0}, {r, 0}, {r, 0}};
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, decide_loop, &w[i]), 0);
    for (int i = 0; i < 20; i++) {
        synor_registry_info info;
        synor_registry_info_init(&info);
        info.utilization = (i % 10) / 10.0;
        info.reputation = 50 + i;
        synor_registry_update(reg, "a-h100", SYNOR_UPDATE_UTILIZATION | SYNOR_UPDATE_REPUTATION,
                              &info);
        synor_router_refresh(r);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(w[i].failures, 0);
    ASSERT_EQ(synor_router_generation(r), 21);
    synor_router_destroy(r);
    synor_registry_destroy(reg);
    synor_route_table_destroy(t);
}

TEST_MAIN(filters_counted_per_reason, scores_recomputed_by_hand, weights_change_the_choice,
          n_devices_distinct_and_spread, ties_go_to_the_first_registered,
          no_price_is_said_and_budget_excludes_it, task_cost_integer_limits,
          tables_and_weights_bad_input_named, request_checked_and_snapshot_consistent,
          same_profile_different_figures_not_grouped, index_equals_scan_on_random_registries,
          concurrent_decisions_during_refresh)
