/* fuzz_route.c - the router's inputs: route tables
 * (synor_route_table_load_string) and, for an input starting "weights:",
 * weight strings (synor_route_weights_parse).
 *
 * Tables are loaded into a table that already holds one price and one
 * region. Contract checked: a rejected file leaves the table exactly as it
 * was and names the input (with a position inside it, where the message
 * has one); an accepted file gives every price within 0..10^12 micro-USD,
 * the same bytes give the same table twice, and a router over a small
 * registry priced and located by it decides the same with the index and
 * the scan, with every score in [0, 1]; a failed allocation is
 * SYNOR_ENOMEM with the table unchanged, or the same table. Weights: a
 * rejected string leaves the output untouched and says why; an accepted one
 * has each weight in [0, 1], a sum of 1, and reads back the same from
 * "%.17g". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "router/router_internal.h"
#include "synor.h"

static synor_catalog *cat;
static synor_registry *reg;

static const char base[] = "{\"format\": \"synor-route-table/1\", \"regions\": [{\"name\": "
                           "\"eu-west\", \"lat\": 50.11, \"lon\": 8.68}], \"prices\": "
                           "[{\"profile\": \"nvidia-h100-sxm\", \"usd_per_hour\": \"2.49\"}]}";

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static const char *const profiles[] = {"nvidia-h100-sxm", "nvidia-a100-80gb", "groq-lpu",
                                           "nvidia-rtx-4090"};
    static const char *const regions[] = {"eu-west", "us-east", "ap-south", "eu-west"};
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat) ||
        synor_registry_create(&reg))
        fuzz_fail("set-up: %s", synor_errmsg());
    for (int i = 0; i < 4; i++) {
        synor_device *dev;
        synor_registry_info info;
        synor_registry_info_init(&info);
        snprintf(info.region, sizeof info.region, "%s", regions[i]);
        snprintf(info.owner, sizeof info.owner, "o%d", i % 2);
        info.reputation = 60 + 10 * i;
        char id[16];
        snprintf(id, sizeof id, "d%d", i);
        if (synor_device_create_simulated(synor_catalog_find(cat, profiles[i]), NULL, &dev) ||
            synor_registry_add(reg, id, dev, &info))
            fuzz_fail("set-up: %s", synor_errmsg());
        synor_device_unref(dev);
    }
    return 0;
}

static synor_route_table *base_table(void)
{
    synor_route_table *t;
    FUZZ_CHECK(!synor_route_table_create(&t) &&
                   !synor_route_table_load_string(t, base, sizeof base - 1, "base"),
               "set-up: %s", synor_errmsg());
    return t;
}

static char *dump(const synor_route_table *t)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__route_table_dump(t, &b);
    return synor__buf_take(&b);
}

static void check_weights(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    FUZZ_CHECK(s, "out of memory");
    memcpy(s, data, size);
    s[size] = '\0';
    synor_route_weights w, sentinel;
    memset(&sentinel, 0x5a, sizeof sentinel);
    w = sentinel;
    int rc = synor_route_weights_parse(s, &w);
    if (rc) {
        FUZZ_CHECK(rc == SYNOR_EINVAL && synor_errmsg()[0], "weights: rc %d, message '%s'", rc,
                   synor_errmsg());
        FUZZ_CHECK(memcmp(&w, &sentinel, sizeof w) == 0, "weights: output changed on failure");
        free(s);
        return;
    }
    double sum = 0;
    for (int i = 0; i < SYNOR_ROUTE_COMPONENTS; i++) {
        FUZZ_CHECK(w.w[i] >= 0 && w.w[i] <= 1, "weight %d = %g", i, w.w[i]);
        sum += w.w[i];
    }
    FUZZ_CHECK(fabs(sum - 1) <= 1e-6, "weights sum to %.17g", sum);
    char again[512];
    snprintf(again, sizeof again,
             "cost=%.17g,latency=%.17g,capability=%.17g,reputation=%.17g,"
             "load=%.17g",
             w.w[0], w.w[1], w.w[2], w.w[3], w.w[4]);
    synor_route_weights w2;
    /* %.17g may write an exponent, which the parser refuses: only compare
     * when it read back */
    if (!strpbrk(again, "eE")) {
        FUZZ_CHECK(synor_route_weights_parse(again, &w2) == 0, "'%s' does not read back: %s", again,
                   synor_errmsg());
        FUZZ_CHECK(memcmp(&w, &w2, sizeof w) == 0, "'%s' reads back different", again);
    }
    free(s);
}

static void check_routing(const synor_route_table *t)
{
    synor_router_config cfg = {t, NULL, NULL};
    synor_router *r;
    FUZZ_CHECK(synor_router_create(reg, &cfg, &r) == 0, "router: %s", synor_errmsg());
    synor_route_request q;
    synor_route_request_init(&q);
    q.n_ops = 1;
    q.ops[0] = SYNOR_OP_MATMUL;
    q.dtypes[0] = SYNOR_DTYPE_BF16;
    q.flops = 1e12;
    q.has_location = 1;
    q.n_devices = 2;
    synor_route_decision *a, *b;
    FUZZ_CHECK(synor_router_route(r, &q, &a) == 0 && synor_router_route_scan(r, &q, &b) == 0,
               "route: %s", synor_errmsg());
    FUZZ_CHECK(a->n_chosen == b->n_chosen && a->n_runners_up == b->n_runners_up,
               "index and scan chose %zu and %zu", a->n_chosen, b->n_chosen);
    for (size_t i = 0; i < a->n_chosen + a->n_runners_up; i++) {
        const synor_route_choice *x = &a->chosen[i], *y = &b->chosen[i];
        FUZZ_CHECK(strcmp(x->id, y->id) == 0 && x->total == y->total,
                   "place %zu: index %s, scan %s", i, x->id, y->id);
        for (int k = 0; k < SYNOR_ROUTE_COMPONENTS; k++)
            FUZZ_CHECK(x->score[k] >= 0 && x->score[k] <= 1, "%s: score %d = %g", x->id, k,
                       x->score[k]);
        FUZZ_CHECK(!x->priced ||
                       (x->usd_micro_per_hour >= 0 &&
                        x->usd_micro_per_hour <= SYNOR_ROUTE_PRICE_MAX && x->task_usd_micro >= 0),
                   "%s: price %lld, task %lld", x->id, (long long)x->usd_micro_per_hour,
                   (long long)x->task_usd_micro);
        FUZZ_CHECK(!x->latency_known || (x->latency_ms >= 0 && isfinite(x->latency_ms)),
                   "%s: latency %g", x->id, x->latency_ms);
    }
    synor_route_decision_free(a);
    synor_route_decision_free(b);
    synor_router_destroy(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 8 && memcmp(data, "weights:", 8) == 0) {
        check_weights(data + 8, size - 8);
        return 0;
    }
    const char *text = (const char *)data;
    synor_route_table *t = base_table();
    char *before = dump(t);
    fuzz_alloc_count_start();
    int rc = synor_route_table_load_string(t, text, size, FUZZ_NAME);
    long allocs = fuzz_alloc_count_stop();
    char *d1 = dump(t);
    if (rc) {
        fuzz_check_error(rc, 0, FUZZ_NAME, data, size);
        fuzz_check_same(before, d1, "the table before and after a rejected file");
        goto out;
    }
    synor_route_table *t2 = base_table();
    FUZZ_CHECK(synor_route_table_load_string(t2, text, size, FUZZ_NAME) == 0,
               "the same bytes failed the second time: %s", synor_errmsg());
    char *d2 = dump(t2);
    fuzz_check_same(d1, d2, "two loads of the same bytes");
    free(d2);
    synor_route_table_destroy(t2);
    check_routing(t);

    synor_route_table *t3 = base_table();
    fuzz_alloc_fail_one(data, size, allocs);
    rc = synor_route_table_load_string(t3, text, size, FUZZ_NAME);
    int hit = fuzz_alloc_disarm();
    char *d3 = dump(t3);
    if (rc) {
        FUZZ_CHECK(hit, "the load failed only the second time: %s", synor_errmsg());
        fuzz_check_error(rc, 1, FUZZ_NAME, data, size);
        fuzz_check_same(before, d3, "the table before and after an allocation failure");
    } else {
        fuzz_check_same(d1, d3, "a load with a failed allocation and one without");
    }
    free(d3);
    synor_route_table_destroy(t3);
out:
    free(d1);
    free(before);
    synor_route_table_destroy(t);
    return 0;
}
