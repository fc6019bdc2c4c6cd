/* bench_router.c - task router throughput (issue 14 item 6; bar: >= 10,000
 * routing decisions per second over 100,000 registered devices on one
 * core). Builds a registry of N simulated devices across the catalog's 20
 * profiles, 8 regions, 1,000 owners, reputations 0..100, utilizations,
 * statuses and availability schedules (seeded), prices per profile and
 * region, then times decisions on one thread over a mix of 32 requests:
 * the index (synor_router_route), and the brute-force scan
 * (synor_router_route_scan) for comparison. Every request of the mix is
 * first decided both ways and the decisions compared.
 *
 *   ./build/bench/bench_router [N [DECISIONS]]   (default 100000 20000)
 *
 * Prints the index build time (router create = registry snapshot + sort),
 * and decisions per second (median of 5 runs; the scan: of 3 runs of
 * fewer decisions). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "synor.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static const char *const regions[8] = {"eu-west",  "eu-north", "us-east", "us-west",
                                       "ap-south", "ap-east",  "sa-east", "af-south"};
static const double coords[8][2] = {{50.11, 8.68},    {59.91, 10.75}, {39.04, -77.49},
                                    {37.34, -121.89}, {12.97, 77.59}, {22.32, 114.17},
                                    {-23.55, -46.63}, {-33.92, 18.42}};

/* A route table with the 8 regions and a seeded price for every profile in
 * every region (0.05..5.00 USD per hour); one profile in four has none in
 * one region, so some devices are unpriced. */
static synor_route_table *make_table(const synor_catalog *cat)
{
    size_t np = synor_catalog_count(cat), cap = 4096 + np * 8 * 120;
    char *s = malloc(cap);
    size_t n = 0;
    n += (size_t)snprintf(s + n, cap - n, "{\"format\": \"synor-route-table/1\", \"regions\": [");
    for (int i = 0; i < 8; i++)
        n += (size_t)snprintf(s + n, cap - n,
                              "%s{\"name\": \"%s\", \"lat\": %.2f, \"lon\": %.2f, \"base_ms\": 1}",
                              i ? ", " : "", regions[i], coords[i][0], coords[i][1]);
    n += (size_t)snprintf(s + n, cap - n, "], \"prices\": [");
    int first = 1;
    for (size_t p = 0; p < np; p++)
        for (int r = 0; r < 8; r++) {
            if (p % 4 == 3 && r == 5)
                continue;
            unsigned cents = 5 + rnd(496);
            n += (size_t)snprintf(s + n, cap - n,
                                  "%s{\"profile\": \"%s\", \"region\": \"%s\", "
                                  "\"usd_per_hour\": \"%u.%02u\"}",
                                  first ? "" : ", ", synor_catalog_at(cat, p)->id, regions[r],
                                  cents / 100, cents % 100);
            first = 0;
        }
    n += (size_t)snprintf(s + n, cap - n, "]}");
    synor_route_table *t;
    if (synor_route_table_create(&t) || synor_route_table_load_string(t, s, n, "bench-table")) {
        fprintf(stderr, "bench_router: table: %s\n", synor_errmsg());
        exit(1);
    }
    free(s);
    return t;
}

static synor_registry *make_registry(const synor_catalog *cat, unsigned n)
{
    synor_registry *reg;
    if (synor_registry_create(&reg))
        exit(1);
    static const char *const avail[] = {"utc:8-18", "utc:22-7", "idle", "charging:40"};
    for (unsigned i = 0; i < n; i++) {
        synor_device *dev;
        char id[32];
        snprintf(id, sizeof id, "dev-%u", i);
        synor_registry_info info;
        synor_registry_info_init(&info);
        snprintf(info.owner, sizeof info.owner, "owner-%u", rnd(1000));
        snprintf(info.region, sizeof info.region, "%s", regions[rnd(8)]);
        unsigned st = rnd(100);
        info.status = st < 85   ? SYNOR_STATUS_ONLINE
                      : st < 90 ? SYNOR_STATUS_BUSY
                      : st < 95 ? SYNOR_STATUS_DRAINING
                                : SYNOR_STATUS_OFFLINE;
        info.reputation = (int)rnd(101);
        info.utilization = rnd(101) / 100.0;
        unsigned a = rnd(100);
        if (a >= 80)
            synor_availability_parse(avail[a % 4], &info.availability);
        if (synor_device_create_simulated(synor_catalog_at(cat, i % synor_catalog_count(cat)), NULL,
                                          &dev) ||
            synor_registry_add(reg, id, dev, &info)) {
            fprintf(stderr, "bench_router: %s\n", synor_errmsg());
            exit(1);
        }
        synor_device_unref(dev);
    }
    return reg;
}

#define MIX 32

static void make_mix(synor_route_request *q, synor_host_state *hs)
{
    static const synor_op_type ops[] = {SYNOR_OP_MATMUL, SYNOR_OP_MATMUL,  SYNOR_OP_MATMUL,
                                        SYNOR_OP_CONV2D, SYNOR_OP_SOFTMAX, SYNOR_OP_MATMUL};
    static const synor_dtype dts[] = {SYNOR_DTYPE_BF16, SYNOR_DTYPE_FP16, SYNOR_DTYPE_FP32,
                                      SYNOR_DTYPE_FP16, SYNOR_DTYPE_FP32, SYNOR_DTYPE_INT8};
    for (int i = 0; i < MIX; i++) {
        synor_route_request *r = &q[i];
        synor_route_request_init(r);
        int k = (int)rnd(6);
        r->n_ops = 1;
        r->ops[0] = ops[k];
        r->dtypes[0] = dts[k];
        r->flops = 1e12 * (1 + rnd(1000));
        r->bytes = 1e9 * rnd(100);
        r->min_memory = rnd(2) ? 0 : (uint64_t)(8 << rnd(4)) << 30;
        if (rnd(3)) {
            r->from_region = regions[rnd(8)];
            if (rnd(2))
                r->max_latency_ms = 20 + rnd(200);
        }
        if (rnd(4) == 0) {
            r->n_regions = 2;
            r->regions[0] = regions[rnd(8)];
            r->regions[1] = regions[rnd(8)];
        }
        r->min_reputation = (int)rnd(3) * 30;
        if (rnd(4) == 0)
            r->budget_usd_micro = 1000 + rnd(100000);
        if (rnd(4) == 0) {
            r->n_devices = 2 + rnd(7);
            r->spread = (synor_route_spread)rnd(3);
        }
        if (rnd(2)) {
            hs[i] = (synor_host_state){rnd(24), (int)rnd(2), (int)rnd(2), rnd(101)};
            r->available_in = &hs[i];
        }
        if (rnd(3) == 0) {
            double s = 0;
            for (int c = 0; c < SYNOR_ROUTE_COMPONENTS; c++)
                s += r->weights.w[c] = rnd(10);
            if (s == 0)
                synor_route_weights_default(&r->weights);
            else
                for (int c = 0; c < SYNOR_ROUTE_COMPONENTS; c++)
                    r->weights.w[c] /= s;
        }
    }
}

/* Decisions per second over the mix. */
static double run(synor_router *r, const synor_route_request *q, int n, int scan, double *scored)
{
    double t0 = now(), sc = 0;
    for (int i = 0; i < n; i++) {
        synor_route_decision *d;
        int rc = scan ? synor_router_route_scan(r, &q[i % MIX], &d)
                      : synor_router_route(r, &q[i % MIX], &d);
        if (rc) {
            fprintf(stderr, "bench_router: %s\n", synor_errmsg());
            exit(1);
        }
        sc += (double)d->scored;
        synor_route_decision_free(d);
    }
    double dt = now() - t0;
    if (scored)
        *scored = sc / n;
    return n / dt;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 100000;
    int decisions = argc > 2 ? atoi(argv[2]) : 20000;
    if (n == 0 || decisions <= 0) {
        fprintf(stderr, "usage: bench_router [N [DECISIONS]]\n");
        return 2;
    }
    synor_catalog *cat;
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat) ||
        synor_catalog_count(cat) == 0) {
        fprintf(stderr, "bench_router: no catalog\n");
        return 1;
    }
    synor_route_table *t = make_table(cat);
    double t0 = now();
    synor_registry *reg = make_registry(cat, n);
    printf("registry: %u devices, %zu profiles, 8 regions, 1000 owners (%.2f s "
           "to register)\n",
           n, synor_catalog_count(cat), now() - t0);
    synor_router_config cfg = {t, NULL, NULL};
    synor_router *r = NULL;
    double build[3];
    for (int i = 0; i < 3; i++) {
        synor_router_destroy(r);
        t0 = now();
        if (synor_router_create(reg, &cfg, &r)) {
            fprintf(stderr, "bench_router: %s\n", synor_errmsg());
            return 1;
        }
        build[i] = now() - t0;
    }
    printf("index build (snapshot, prices, sort): %.1f ms (median of 3)\n", median(build, 3) * 1e3);
    synor_route_request q[MIX];
    synor_host_state hs[MIX];
    make_mix(q, hs);
    /* the index and the scan agree on every request of the mix */
    int chosen = 0;
    for (int i = 0; i < MIX; i++) {
        synor_route_decision *a, *b;
        if (synor_router_route(r, &q[i], &a) || synor_router_route_scan(r, &q[i], &b)) {
            fprintf(stderr, "bench_router: %s\n", synor_errmsg());
            return 1;
        }
        int same = a->n_chosen == b->n_chosen && a->candidates == b->candidates;
        for (size_t k = 0; same && k < a->n_chosen; k++)
            same = strcmp(a->chosen[k].id, b->chosen[k].id) == 0 &&
                   a->chosen[k].total == b->chosen[k].total;
        if (!same) {
            fprintf(stderr, "bench_router: request %d: the index and the scan disagree\n", i);
            return 1;
        }
        chosen += a->n_chosen > 0;
        synor_route_decision_free(a);
        synor_route_decision_free(b);
    }
    printf("check: index = scan on all %d requests of the mix (%d found "
           "devices): ok\n",
           MIX, chosen);
    double rates[5], scored = 0;
    run(r, q, decisions / 10 + 1, 0, NULL); /* warm-up */
    for (int i = 0; i < 5; i++)
        rates[i] = run(r, q, decisions, 0, &scored);
    double idx = median(rates, 5);
    printf("index: %.0f decisions/s (median of 5 runs of %d; %.1f us each; %.0f "
           "devices scored "
           "per decision)\n",
           idx, decisions, 1e6 / idx, scored);
    int scan_n = decisions / 100 > MIX ? decisions / 100 : MIX;
    for (int i = 0; i < 3; i++)
        rates[i] = run(r, q, scan_n, 1, &scored);
    double sc = median(rates, 3);
    printf("scan:  %.0f decisions/s (median of 3 runs of %d; %.0f us each)\n", sc, scan_n,
           1e6 / sc);
    printf("index / scan: %.0fx\n", idx / sc);
    synor_router_destroy(r);
    synor_registry_destroy(reg);
    synor_route_table_destroy(t);
    synor_catalog_destroy(cat);
    return 0;
}
