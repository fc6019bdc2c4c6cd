/* bench_rewards.c - the reward ledger's write and recovery speed: N rewards
 * recorded one by one (each written and fdatasync'ed before the call
 * returns, as acknowledged entries must be), then the ledger reopened
 * read-only (the replay that checks every record and rebuilds balances).
 *   bench_rewards DIR N     (DIR must not exist; it is left for inspection) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "synor.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    struct stat st;
    if (argc != 3 || atoi(argv[2]) <= 0 || stat(argv[1], &st) == 0) {
        fprintf(stderr, "usage: bench_rewards DIR N   (DIR must not exist)\n");
        return 2;
    }
    int n = atoi(argv[2]);
    synor_catalog *cat;
    synor_rewards_policy *p;
    synor_ledger *l;
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat) ||
        synor_rewards_policy_load_builtin(&p) || synor_ledger_open(argv[1], 0, &l)) {
        fprintf(stderr, "bench_rewards: %s\n", synor_errmsg());
        return 1;
    }
    double t0 = now();
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "b%d", i);
        synor_contribution c = {
            id, i % 7 ? "alice" : "bob", "nvidia-h100-sxm", NULL, 3600000, 12500, 1000, 9950, 70};
        if (synor_ledger_record(l, p, cat, &c, NULL, NULL)) {
            fprintf(stderr, "bench_rewards: %s\n", synor_errmsg());
            return 1;
        }
    }
    double t1 = now();
    synor_ledger_close(l);
    double t2 = now();
    if (synor_ledger_open(argv[1], 1, &l)) {
        fprintf(stderr, "bench_rewards: %s\n", synor_errmsg());
        return 1;
    }
    double t3 = now();
    stat(argv[1], &st);
    printf("record: %d entries in %.3f s, %.0f/s (%.0f us each, fdatasync each)\n", n, t1 - t0,
           n / (t1 - t0), (t1 - t0) / n * 1e6);
    printf("reopen: %zu entries replayed and checked in %.3f s\n", synor_ledger_count(l), t3 - t2);
    synor_ledger_close(l);
    synor_rewards_policy_destroy(p);
    synor_catalog_destroy(cat);
    return 0;
}
