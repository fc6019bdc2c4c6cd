/* bench_runtime_blas.c - tiled dense kernels on the Synor runtime, printed
 * like the anchor's blas_gemm_bench.c so the two compare line by line:
 *   bench_runtime_blas d N NB [iters] [workers]   tiled DGEMM C = A B, 2N^3 flops
 *   bench_runtime_blas c N NB [iters] [workers]   tiled SPOTRF (lower), N^3/3 flops
 * Inputs are built exactly as in the anchor (drand48; for spotrf the same
 * diagonally dominant SPD matrix). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "synor/error.h"
#include "synor/runtime.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s d|c N NB [iters] [workers]\n", argv[0]);
        return 2;
    }
    char p = argv[1][0];
    long n = atol(argv[2]);
    size_t nb = (size_t)atol(argv[3]);
    int iters = argc > 4 ? atoi(argv[4]) : 1;
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = argc > 5 ? (unsigned)atoi(argv[5]) : 2;
    synor_runtime *rt;
    if (synor_runtime_create(&cfg, &rt) < 0 || synor_runtime_start(rt) < 0) {
        fprintf(stderr, "runtime: %s\n", synor_errmsg());
        return 1;
    }
    size_t nn = (size_t)n * (size_t)n;
    double best = 1e30, tot = 0, fl;
    int rc = 0;
    if (p == 'd') {
        double *a = malloc(nn * 8), *b = malloc(nn * 8), *c = malloc(nn * 8);
        for (size_t i = 0; i < nn; i++) {
            a[i] = drand48();
            b[i] = drand48();
            c[i] = 0;
        }
        rc = synor_tiled_dgemm(rt, 256, 256, 256, 1.0, a, n, b, n, 0.0, c, n, 128); /* warm-up */
        for (int it = 0; it < iters && rc == 0; it++) {
            double t0 = now_s();
            rc = synor_tiled_dgemm(rt, n, n, n, 1.0, a, n, b, n, 0.0, c, n, nb);
            double t = now_s() - t0;
            tot += t;
            if (t < best)
                best = t;
        }
        fl = 2.0 * n * n * n;
        free(a), free(b), free(c);
    } else if (p == 'c') {
        float *a0 = malloc(nn * 4), *a = malloc(nn * 4);
        for (long j = 0; j < n; j++)
            for (long i = 0; i < n; i++) {
                float v = (i == j) ? (float)n : 0.0f;
                a0[i + j * n] = v + 1.0f / (1 + labs(i - j));
            }
        for (int it = 0; it < iters && rc == 0; it++) {
            memcpy(a, a0, nn * 4);
            double t0 = now_s();
            rc = synor_tiled_spotrf(rt, n, a, n, nb);
            double t = now_s() - t0;
            tot += t;
            if (t < best)
                best = t;
        }
        fl = (double)n * n * n / 3.0;
        free(a0), free(a);
    } else {
        fprintf(stderr, "unknown kind %c\n", p);
        return 2;
    }
    if (rc < 0) {
        fprintf(stderr, "failed: %s\n", synor_errmsg());
        return 1;
    }
    printf("%s n=%ld nb=%zu workers=%u iters=%d avg_s=%.3f best_s=%.3f avg_GFLOPs=%.2f "
           "best_GFLOPs=%.2f\n",
           p == 'd' ? "tiled_dgemm" : "tiled_spotrf", n, nb, synor_runtime_worker_count(rt), iters,
           tot / iters, best, fl / (tot / iters) / 1e9, fl / best / 1e9);
    synor_runtime_destroy(rt);
    return 0;
}
