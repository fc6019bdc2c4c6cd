/* bench_fabric.c - time to load a fabric (synor_fabric_load_string) as it
 * grows to thousands of devices, the size the compute network's
 * registries and fabrics reach. Three shapes, each generated as a fabric
 * file in memory:
 *   one-node   N H100s on one node (count N): every pair joined by NVLink,
 *              N(N-1)/2 links - the output grows quadratically, the search
 *              must not (576, the largest NVLink domain, is the most a node
 *              may hold);
 *   nodes-of-8 N H100s as N/8 nodes of 8 (one entry per node), a network;
 *   one-each   N devices, one entry each with its own name, TPUs and LPUs
 *              alternating over N/16 nodes (no NVLink), a network.
 * Prints devices, links and the median of R loads (plus one path query per
 * device pair sampled, to show paths stay O(1)).
 *
 *   ./build/bench/bench_fabric [R]    (default R = 3) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "synor.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static char *one_node(size_t n)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b, "{\"format\": \"synor-fabric/1\", \"name\": \"one-node-%zu\",\n"
                          " \"nodes\": [{\"name\": \"n0\"}],\n"
                          " \"devices\": [{\"name\": \"cpu\", \"profile\": \"amd-epyc-9654\", "
                          "\"node\": \"n0\"},\n  {\"name\": \"gpu\", \"profile\": "
                          "\"nvidia-h100-sxm\", \"node\": \"n0\", \"count\": %zu}]}\n",
                      n, n);
    return synor__buf_take(&b);
}

static char *nodes_of_8(size_t n)
{
    synor__buf b;
    synor__buf_init(&b);
    size_t nodes = n / 8;
    synor__buf_printf(&b, "{\"format\": \"synor-fabric/1\", \"name\": \"nodes-%zu\",\n \"nodes\": [",
                      n);
    for (size_t i = 0; i < nodes; i++)
        synor__buf_printf(&b, "%s{\"name\": \"n%zu\"}", i ? ", " : "", i);
    synor__buf_puts(&b, "],\n \"network\": {\"bandwidth_gb_s\": 50, \"latency_us\": 10},\n"
                        " \"devices\": [");
    for (size_t i = 0; i < nodes; i++)
        synor__buf_printf(&b, "%s\n  {\"name\": \"g%zu\", \"profile\": \"nvidia-h100-sxm\", "
                              "\"node\": \"n%zu\", \"count\": 8}",
                          i ? "," : "", i, i);
    synor__buf_puts(&b, "]}\n");
    return synor__buf_take(&b);
}

static char *one_each(size_t n)
{
    synor__buf b;
    synor__buf_init(&b);
    size_t nodes = n / 16 ? n / 16 : 1;
    synor__buf_printf(&b, "{\"format\": \"synor-fabric/1\", \"name\": \"each-%zu\",\n \"nodes\": [",
                      n);
    for (size_t i = 0; i < nodes; i++)
        synor__buf_printf(&b, "%s{\"name\": \"n%zu\"}", i ? ", " : "", i);
    synor__buf_puts(&b, "],\n \"network\": {\"bandwidth_gb_s\": 50, \"latency_us\": 10},\n"
                        " \"devices\": [");
    for (size_t i = 0; i < n; i++)
        synor__buf_printf(&b, "%s\n  {\"name\": \"d%zu\", \"profile\": \"%s\", \"node\": \"n%zu\"}",
                          i ? "," : "", i, i % 2 ? "groq-lpu" : "google-tpu-v5p", i % nodes);
    synor__buf_puts(&b, "]}\n");
    return synor__buf_take(&b);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    if (reps < 1 || reps > 99)
        reps = 3;
    synor_catalog *cat;
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)) {
        fprintf(stderr, "%s\n", synor_errmsg());
        return 1;
    }
    struct {
        const char *shape;
        char *(*gen)(size_t);
        size_t n;
    } cases[] = {
        {"one-node", one_node, 400},    {"one-node", one_node, 576},
        {"nodes-of-8", nodes_of_8, 1000},
        {"nodes-of-8", nodes_of_8, 10000}, {"one-each", one_each, 1000},
        {"one-each", one_each, 10000},
    };
    printf("%-11s %7s %9s %12s %12s %14s\n", "shape", "devices", "links", "load median",
           "per device", "path query");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *text = cases[c].gen(cases[c].n);
        if (!text)
            return 1;
        double t[99];
        size_t devs = 0, links = 0;
        double pq = 0;
        for (int r = 0; r < reps; r++) {
            synor_fabric *f;
            double t0 = now();
            if (synor_fabric_load_string(cat, text, strlen(text), cases[c].shape, &f)) {
                fprintf(stderr, "%s\n", synor_errmsg());
                return 1;
            }
            t[r] = now() - t0;
            devs = synor_fabric_device_count(f);
            links = synor_fabric_link_count(f);
            /* 1M path queries over pseudo-random pairs */
            unsigned s = 7;
            size_t hops = 0;
            double q0 = now();
            for (int k = 0; k < 1000000; k++) {
                s = s * 1103515245u + 12345u;
                size_t i = (s >> 4) % devs;
                s = s * 1103515245u + 12345u;
                size_t j = (s >> 4) % devs;
                hops += synor_fabric_path(f, i, j).n_hops;
            }
            pq = (now() - q0) / 1e6;
            if (hops == 0)
                printf("(no hops)\n");
            synor_fabric_destroy(f);
        }
        qsort(t, (size_t)reps, sizeof *t, cmp);
        double med = t[reps / 2];
        printf("%-11s %7zu %9zu %10.3f s %9.2f us %11.0f ns\n", cases[c].shape, devs, links, med,
               med / (double)devs * 1e6, pq * 1e9);
        fflush(stdout);
        synor__free(text);
    }
    synor_catalog_destroy(cat);
    return 0;
}
