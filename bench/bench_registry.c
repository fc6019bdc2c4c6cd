/* bench_registry.c - device registry throughput: registering N devices,
 * lookups by id, and filtered queries, from 1 and 2 threads (readers share
 * the lock). Prints the median of 5 runs of each measurement.
 *
 *   ./build/bench/bench_registry [N]     (default N = 10000) */
#include <pthread.h>
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

typedef struct job {
    synor_registry *reg;
    int n, lookups, queries;
} job;

static void *lookups(void *p)
{
    job *j = p;
    char id[32];
    unsigned s = 12345;
    for (int i = 0; i < j->lookups; i++) {
        s = s * 1103515245u + 12345u;
        snprintf(id, sizeof id, "dev-%u", (s >> 8) % (unsigned)j->n);
        synor_registry_entry e;
        if (synor_registry_get(j->reg, id, &e) == 0)
            synor_registry_entry_release(&e);
    }
    return NULL;
}

static void *queries(void *p)
{
    job *j = p;
    synor_registry_query q;
    memset(&q, 0, sizeof q);
    q.by_op = 1;
    q.op = SYNOR_OP_MATMUL;
    q.op_dtype = SYNOR_DTYPE_BF16;
    q.min_memory = 64ull << 30;
    q.region = "eu-west";
    for (int i = 0; i < j->queries; i++) {
        synor_registry_entry *e;
        size_t n;
        if (synor_registry_query_run(j->reg, &q, &e, &n) == 0)
            synor_registry_entries_free(e, n);
    }
    return NULL;
}

static double threaded(void *(*fn)(void *), job *j, int threads)
{
    pthread_t t[2];
    double t0 = now();
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, fn, j);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return now() - t0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    synor_catalog *cat;
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)) {
        fprintf(stderr, "%s\n", synor_errmsg());
        return 1;
    }
    if (synor_catalog_count(cat) == 0) {
        fprintf(stderr, "bench_registry: the built-in catalog is empty\n");
        return 1;
    }
    const char *regions[] = {"eu-west", "us-east", "ap-south"};
    double add[5], get1[5], get2[5], q1[5], q2[5];
    job j = {.n = n, .lookups = 200000, .queries = 200};
    for (int run = 0; run < 5; run++) {
        synor_registry *reg;
        synor_registry_create(&reg);
        double t0 = now();
        for (int i = 0; i < n; i++) {
            char id[32];
            snprintf(id, sizeof id, "dev-%d", i);
            synor_device *d;
            synor_device_create_simulated(
                synor_catalog_at(cat, (size_t)i % synor_catalog_count(cat)), id, &d);
            synor_registry_info info;
            synor_registry_info_init(&info);
            strcpy(info.region, regions[i % 3]);
            synor_registry_add(reg, id, d, &info);
            synor_device_unref(d);
        }
        add[run] = (now() - t0) / n;
        j.reg = reg;
        get1[run] = threaded(lookups, &j, 1) / j.lookups;
        get2[run] = threaded(lookups, &j, 2) / (2.0 * j.lookups);
        q1[run] = threaded(queries, &j, 1) / j.queries;
        q2[run] = threaded(queries, &j, 2) / (2.0 * j.queries);
        synor_registry_destroy(reg);
    }
    printf("registry with %d devices (median of 5 runs)\n", n);
    printf("  register (create device + add):   %8.0f ns/device\n", median(add, 5) * 1e9);
    printf("  get by id, 1 thread:              %8.0f ns/lookup\n", median(get1, 5) * 1e9);
    printf("  get by id, 2 threads:             %8.0f ns/lookup (wall time / total lookups)\n",
           median(get2, 5) * 1e9);
    printf("  filtered query, 1 thread:         %8.1f us/query\n", median(q1, 5) * 1e6);
    printf("  filtered query, 2 threads:        %8.1f us/query (wall time / total queries)\n",
           median(q2, 5) * 1e6);
    synor_catalog_destroy(cat);
    return 0;
}
