/* bench_runtime_blas.c - tiled dense kernels on the Synor runtime, printed
 * like the anchor's blas_gemm_bench.c so the two compare line by line:
 *   bench_runtime_blas d N NB [iters] [workers]   tiled DGEMM C = A B, 2N^3 flops
 *   bench_runtime_blas c N NB [iters] [workers]   tiled SPOTRF (lower), N^3/3 flops
 *   bench_runtime_blas s N NB [iters] [workers]   the same tiled DGEMM without the
 *       runtime: `workers` threads, each making the one-thread OpenBLAS calls of
 *       a fixed share of the C tiles (tile (i,j) to thread (i*nt+j) % workers),
 *       k-loop in order. It is the ceiling of any runtime that calls OpenBLAS
 *       per tile (no scheduling, no dependencies), and so separates the
 *       runtime's cost from the cost of calling BLAS on tiles.
 * Inputs are built exactly as in the anchor (drand48; for spotrf the same
 * diagonally dominant SPD matrix). */
#define _GNU_SOURCE /* pthread_setaffinity_np */
#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "synor/error.h"
#include "synor/runtime.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the static schedule (mode s) ---- */
typedef struct share {
    const double *a, *b;
    double *c;
    long n;
    size_t nb;
    unsigned id, nthreads;
} share;

static void *static_worker(void *arg)
{
    const share *w = arg;
    cpu_set_t set; /* pinned as the runtime pins its workers */
    CPU_ZERO(&set);
    CPU_SET(w->id % (unsigned)sysconf(_SC_NPROCESSORS_ONLN), &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    size_t nt = ((size_t)w->n + w->nb - 1) / w->nb, n = (size_t)w->n;
    for (size_t i = 0; i < nt; i++)
        for (size_t j = 0; j < nt; j++) {
            if ((i * nt + j) % w->nthreads != w->id)
                continue;
            size_t mi = i + 1 < nt ? w->nb : n - i * w->nb, nj = j + 1 < nt ? w->nb : n - j * w->nb;
            for (size_t l = 0; l < nt; l++) {
                size_t kl = l + 1 < nt ? w->nb : n - l * w->nb;
                cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)mi, (int)nj, (int)kl, 1.0,
                            w->a + i * w->nb + l * w->nb * n, (int)n,
                            w->b + l * w->nb + j * w->nb * n, (int)n, l ? 1.0 : 0.0,
                            w->c + i * w->nb + j * w->nb * n, (int)n);
            }
        }
    return NULL;
}

static int static_dgemm(const double *a, const double *b, double *c, long n, size_t nb,
                        unsigned nthreads)
{
    pthread_t t[64];
    share w[64];
    if (nthreads > 64)
        nthreads = 64;
    for (unsigned i = 0; i < nthreads; i++) {
        w[i] = (share){a, b, c, n, nb, i, nthreads};
        if (pthread_create(&t[i], NULL, static_worker, &w[i]) != 0)
            return -1;
    }
    for (unsigned i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s d|c|s N NB [iters] [workers]\n", argv[0]);
        return 2;
    }
    char p = argv[1][0];
    long n = atol(argv[2]);
    size_t nb = (size_t)atol(argv[3]);
    int iters = argc > 4 ? atoi(argv[4]) : 1;
    unsigned workers = argc > 5 ? (unsigned)atoi(argv[5]) : 2;
    if (n <= 0 || nb == 0 || iters <= 0 || workers == 0) {
        fprintf(stderr, "%s: N, NB, iters and workers must be positive\n", argv[0]);
        return 2;
    }
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = workers;
    /* the CPU workers alone: a GPU host's CUDA device (and an OpenCL
     * accelerator) would add a device and its thread to a CPU benchmark */
    cfg.cuda = 0;
    cfg.opencl = SYNOR_OPENCL_OFF;
    synor_runtime *rt = NULL;
    if (p == 's') {
        openblas_set_num_threads(1); /* one-thread calls, as the runtime's workers make */
    } else if (synor_runtime_create(&cfg, &rt) < 0 || synor_runtime_start(rt) < 0) {
        fprintf(stderr, "runtime: %s\n", synor_errmsg());
        return 1;
    }
    size_t nn = (size_t)n * (size_t)n;
    double best = 1e30, tot = 0, fl;
    int rc = 0;
    if (p == 'd' || p == 's') {
        double *a = malloc(nn * 8), *b = malloc(nn * 8), *c = malloc(nn * 8);
        for (size_t i = 0; i < nn; i++) {
            a[i] = drand48();
            b[i] = drand48();
            c[i] = 0;
        }
        rc = p == 's' ? static_dgemm(a, b, c, 256, 128, workers) /* warm-up */
                      : synor_tiled_dgemm(rt, 256, 256, 256, 1.0, a, n, b, n, 0.0, c, n, 128);
        for (int it = 0; it < iters && rc == 0; it++) {
            double t0 = now_s();
            rc = p == 's' ? static_dgemm(a, b, c, n, nb, workers)
                          : synor_tiled_dgemm(rt, n, n, n, 1.0, a, n, b, n, 0.0, c, n, nb);
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
           p == 'd' ? "tiled_dgemm" : p == 's' ? "static_tiled_dgemm" : "tiled_spotrf", n, nb,
           rt ? synor_runtime_worker_count(rt) : workers, iters,
           tot / iters, best, fl / (tot / iters) / 1e9, fl / best / 1e9);
    synor_runtime_destroy(rt);
    return 0;
}
