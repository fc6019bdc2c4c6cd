/* bench_gpu_gemm.c - issue 4's GPU benchmark: tiled GEMM on the CPU cores
 * and a CUDA GPU together, through the runtime, against cuBLAS alone and
 * against the runtime on the CPU alone, on the same host matrices.
 *
 *   bench_gpu_gemm s|d N NB [iters]
 *
 * C = A B, N x N, column-major, single (s) or double (d) precision; NB is
 * the runtime's tile size. Every figure is end to end, from host memory to
 * host memory, because that is what a caller of the runtime gets:
 *   cublas_alone   per iteration: A and B to the GPU, one cuBLAS GEMM, C
 *                  back (also printed: the GEMM alone, between syncs);
 *   runtime_cpu    synor_tiled_?gemm with CUDA off (every core);
 *   runtime_mixed  synor_tiled_?gemm with the CPU cores and the GPU, placed
 *                  by earliest finish with a performance model calibrated
 *                  by the first iteration (kept in memory, not saved).
 * Goals (issue 4): runtime_mixed never slower than the best single device
 * (max of cublas_alone and runtime_cpu), and at least 0.97 of cublas_alone
 * at large N. Results are checked: runtime_mixed's C against cuBLAS's.
 *
 * SYNOR_CUDA_STAGING=BYTES in the environment: runtime_mixed's copies go
 * through page-locked staging buffers of BYTES (runtime.h, cuda_staging).
 *
 * Without a GPU it prints "no CUDA GPU" and exits 77. Under the test double
 * of tests/cuda_mock/ (LD_LIBRARY_PATH) it runs as a smoke test: the "GPU"
 * is host memory and OpenBLAS, so its figures mean nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cuda_api.h"
#include "synor/error.h"
#include "synor/perfmodel.h"
#include "synor/runtime.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct gpu {
    synor__cu_api api;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    cublasHandle_t blas;
    char name[128];
} gpu;

static int gpu_open(gpu *g)
{
    memset(g, 0, sizeof *g);
    int n = 0;
    if (synor__cuda_api_load(&g->api, 1) < 0)
        return -1;
    const synor__cu_api *a = &g->api;
    if (a->cuInit(0) || a->cuDeviceGetCount(&n) || n < 1 || !a->blas || a->cuDeviceGet(&g->dev, 0) ||
        a->cuDevicePrimaryCtxRetain(&g->ctx, g->dev) || a->cuCtxSetCurrent(g->ctx) ||
        a->cuStreamCreate(&g->stream, 1) || a->cublasCreate(&g->blas) ||
        a->cublasSetStream(g->blas, g->stream)) {
        synor__cuda_api_unload(&g->api);
        return -1;
    }
    if (a->cuDeviceGetName(g->name, (int)sizeof g->name - 1, g->dev))
        strcpy(g->name, "CUDA device 0");
    return 0;
}

static void gpu_close(gpu *g)
{
    const synor__cu_api *a = &g->api;
    (void)a->cuCtxSetCurrent(g->ctx);
    (void)a->cublasDestroy(g->blas);
    (void)a->cuStreamDestroy(g->stream);
    (void)a->cuDevicePrimaryCtxRelease(g->dev);
    synor__cuda_api_unload(&g->api);
}

static int copy(const gpu *g, void *host, CUdeviceptr dev, size_t bytes, int to_dev)
{
    synor__cu_memcpy2d c;
    memset(&c, 0, sizeof c);
    c.WidthInBytes = bytes;
    c.Height = 1;
    c.srcPitch = c.dstPitch = bytes;
    c.srcMemoryType = to_dev ? SYNOR__CU_MEMORYTYPE_HOST : SYNOR__CU_MEMORYTYPE_DEVICE;
    c.dstMemoryType = to_dev ? SYNOR__CU_MEMORYTYPE_DEVICE : SYNOR__CU_MEMORYTYPE_HOST;
    c.srcHost = host;
    c.dstHost = host;
    c.srcDevice = c.dstDevice = dev;
    return g->api.cuMemcpy2D(&c) ? -1 : 0;
}

/* One end-to-end product on the GPU; *kernel_s: the GEMM alone. */
static int cublas_once(const gpu *g, int dbl, int n, const void *a, const void *b, void *c,
                       double *kernel_s)
{
    const synor__cu_api *api = &g->api;
    size_t es = dbl ? 8 : 4, bytes = (size_t)n * (size_t)n * es;
    CUdeviceptr da = 0, db = 0, dc = 0;
    int rc = -1;
    if (api->cuCtxSetCurrent(g->ctx) || api->cuMemAlloc(&da, bytes) || api->cuMemAlloc(&db, bytes) ||
        api->cuMemAlloc(&dc, bytes))
        goto out;
    if (copy(g, (void *)(uintptr_t)a, da, bytes, 1) || copy(g, (void *)(uintptr_t)b, db, bytes, 1))
        goto out;
    double t0 = now_s();
    int e;
    if (dbl) {
        const double one = 1, zero = 0;
        e = api->cublasDgemm(g->blas, 0, 0, n, n, n, &one, (const double *)(uintptr_t)da, n,
                             (const double *)(uintptr_t)db, n, &zero, (double *)(uintptr_t)dc, n);
    } else {
        const float one = 1, zero = 0;
        e = api->cublasSgemm(g->blas, 0, 0, n, n, n, &one, (const float *)(uintptr_t)da, n,
                             (const float *)(uintptr_t)db, n, &zero, (float *)(uintptr_t)dc, n);
    }
    if (e || api->cuStreamSynchronize(g->stream))
        goto out;
    *kernel_s = now_s() - t0;
    rc = copy(g, c, dc, bytes, 0);
out:
    if (dc)
        (void)api->cuMemFree(dc);
    if (db)
        (void)api->cuMemFree(db);
    if (da)
        (void)api->cuMemFree(da);
    return rc;
}

static int tiled(synor_runtime *rt, int dbl, int n, const void *a, const void *b, void *c,
                 size_t nb)
{
    size_t N = (size_t)n;
    return dbl ? synor_tiled_dgemm(rt, N, N, N, 1.0, a, N, b, N, 0.0, c, N, nb)
               : synor_tiled_sgemm(rt, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N, nb);
}

/* Best and mean GFLOP/s of iters runs of the runtime (one untimed first). */
static int run_runtime(const char *label, int cuda, synor_perfmodel *pm, int dbl, int n, size_t nb,
                       int iters, const void *a, const void *b, void *c)
{
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cuda = cuda;
    /* SYNOR_CUDA_STAGING=BYTES: the runtime's copies through page-locked
     * staging buffers of that size (synor_runtime_config.cuda_staging) */
    const char *stg = getenv("SYNOR_CUDA_STAGING");
    cfg.cuda_staging = stg ? strtoull(stg, NULL, 10) : 0;
    cfg.opencl = SYNOR_OPENCL_OFF;
    cfg.perfmodel = pm;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&cfg, &rt) < 0 || synor_runtime_start(rt) < 0 ||
        tiled(rt, dbl, n, a, b, c, nb) < 0) {
        fprintf(stderr, "%s: %s\n", label, synor_errmsg());
        synor_runtime_destroy(rt);
        return -1;
    }
    double best = 1e30, tot = 0, fl = 2.0 * n * n * (double)n;
    for (int i = 0; i < iters; i++) {
        double t0 = now_s();
        if (tiled(rt, dbl, n, a, b, c, nb) < 0) {
            fprintf(stderr, "%s: %s\n", label, synor_errmsg());
            synor_runtime_destroy(rt);
            return -1;
        }
        double t = now_s() - t0;
        tot += t;
        best = t < best ? t : best;
    }
    synor_runtime_stats st;
    synor_runtime_get_stats(rt, &st);
    printf("%s n=%d nb=%zu iters=%d avg_s=%.4f best_s=%.4f avg_GFLOPs=%.1f best_GFLOPs=%.1f "
           "workers=%u transfers=%llu\n",
           label, n, nb, iters, tot / iters, best, fl / (tot / iters) / 1e9, fl / best / 1e9,
           synor_runtime_worker_count(rt), (unsigned long long)st.transfers);
    synor_runtime_destroy(rt);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4 || (argv[1][0] != 's' && argv[1][0] != 'd')) {
        fprintf(stderr, "usage: %s s|d N NB [iters]\n", argv[0]);
        return 2;
    }
    int dbl = argv[1][0] == 'd', n = atoi(argv[2]), iters = argc > 4 ? atoi(argv[4]) : 3;
    size_t nb = (size_t)atol(argv[3]);
    if (n <= 0 || nb == 0 || iters <= 0) {
        fprintf(stderr, "%s: N, NB and iters must be positive\n", argv[0]);
        return 2;
    }
    gpu g;
    if (gpu_open(&g) < 0) {
        printf("no CUDA GPU (driver, device or cuBLAS missing)\n");
        return 77;
    }
    printf("GPU: %s\n", g.name);
    size_t es = dbl ? 8 : 4, nn = (size_t)n * (size_t)n;
    char *a = malloc(nn * es), *b = malloc(nn * es), *c_ref = malloc(nn * es), *c = malloc(nn * es);
    if (!a || !b || !c_ref || !c) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    srand48(1);
    for (size_t i = 0; i < nn; i++) {
        double x = drand48() - 0.5, y = drand48() - 0.5;
        if (dbl)
            ((double *)(void *)a)[i] = x, ((double *)(void *)b)[i] = y;
        else
            ((float *)(void *)a)[i] = (float)x, ((float *)(void *)b)[i] = (float)y;
    }
    double fl = 2.0 * n * n * (double)n, best = 1e30, tot = 0, kbest = 1e30, k;
    if (cublas_once(&g, dbl, n, a, b, c_ref, &k) < 0) { /* warm-up */
        fprintf(stderr, "cuBLAS alone failed\n");
        return 1;
    }
    for (int i = 0; i < iters; i++) {
        double t0 = now_s();
        if (cublas_once(&g, dbl, n, a, b, c_ref, &k) < 0)
            return 1;
        double t = now_s() - t0;
        tot += t;
        best = t < best ? t : best;
        kbest = k < kbest ? k : kbest;
    }
    printf("cublas_alone n=%d iters=%d avg_s=%.4f best_s=%.4f avg_GFLOPs=%.1f best_GFLOPs=%.1f "
           "kernel_best_GFLOPs=%.1f\n",
           n, iters, tot / iters, best, fl / (tot / iters) / 1e9, fl / best / 1e9, fl / kbest / 1e9);
    gpu_close(&g);

    if (run_runtime("runtime_cpu", 0, NULL, dbl, n, nb, iters, a, b, c) < 0)
        return 1;
    synor_perfmodel *pm = NULL;
    if (synor_perfmodel_create(&pm) < 0)
        return 1;
    int rc = run_runtime("runtime_mixed", 1, pm, dbl, n, nb, iters, a, b, c);
    synor_perfmodel_destroy(pm);
    if (rc < 0)
        return 1;
    double err = 0, scale = 0;
    for (size_t i = 0; i < nn; i++) {
        double x = dbl ? ((double *)(void *)c)[i] : ((float *)(void *)c)[i];
        double r = dbl ? ((double *)(void *)c_ref)[i] : ((float *)(void *)c_ref)[i];
        err = fmax(err, fabs(x - r));
        scale = fmax(scale, fabs(r));
    }
    double tol = (dbl ? 1e-12 : 1e-4) * (scale > 1 ? scale : 1) * sqrt((double)n);
    printf("check: max |runtime_mixed - cublas_alone| = %.3g (tolerance %.3g): %s\n", err, tol,
           err <= tol ? "ok" : "MISMATCH");
    free(a), free(b), free(c), free(c_ref);
    return err <= tol ? 0 : 1;
}
