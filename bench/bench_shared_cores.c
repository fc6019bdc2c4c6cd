/* bench_shared_cores.c - how an OpenCL CPU device (PoCL) and the runtime's
 * CPU workers slow each other when they share the host's cores (issue 11,
 * item 7: the simulator's shared-core model, docs/PLANNING.md "Devices
 * that share the host's cores").
 *
 *   bench_shared_cores [--rounds R] [--n N] [--nb NB]
 *
 * Two runtimes in one process: one with the CPU workers only (one per
 * core), one with the OpenCL CPU device. Four phases, R rounds each:
 *   cpu alone:   synor_tiled_sgemm n x n on the CPU workers (every worker busy);
 *   pocl alone:  synor_tiled_sgemm_on the OpenCL device, 2NB x 2NB (8 tiles);
 *   both:        the CPU calls in a loop on a thread while the OpenCL calls
 *                run; each side's calls that ran wholly while the other was
 *                busy are timed.
 * Per tile (nb x nb x nb product): the median call time / the tiles per
 * worker. Prints the medians and the two slowdowns (with / alone). Skips
 * (exit 0, a message) where no OpenCL CPU device exists. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "synor/runtime.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct side {
    synor_runtime *rt;
    unsigned device; /* 0: let the runtime place (the CPU workers only) */
    size_t n, nb;
    float *a, *b, *c;
} side;

static int call(side *s)
{
    if (s->device)
        return synor_tiled_sgemm_on(s->rt, s->device, s->n, s->n, s->n, 1.0f, s->a, s->n, s->b,
                                    s->n, 0.0f, s->c, s->n, s->nb);
    return synor_tiled_sgemm(s->rt, s->n, s->n, s->n, 1.0f, s->a, s->n, s->b, s->n, 0.0f, s->c,
                             s->n, s->nb);
}

static int side_init(side *s, synor_runtime *rt, unsigned device, size_t n, size_t nb)
{
    s->rt = rt;
    s->device = device;
    s->n = n;
    s->nb = nb;
    s->a = malloc(n * n * sizeof(float));
    s->b = malloc(n * n * sizeof(float));
    s->c = malloc(n * n * sizeof(float));
    if (!s->a || !s->b || !s->c)
        return -1;
    for (size_t i = 0; i < n * n; i++) {
        s->a[i] = (float)(i % 7) * 0.25f;
        s->b[i] = (float)(i % 5) * 0.5f;
    }
    return 0;
}

static void side_free(side *s)
{
    free(s->a);
    free(s->b);
    free(s->c);
}

/* The CPU side's loop while the OpenCL side runs: call times of the calls
 * that started after `from` and ended before `until` was set. */
typedef struct loop {
    side *s;
    atomic_int stop;
    double times[4096];
    double starts[4096], ends[4096];
    size_t n;
    int rc;
} loop;

static void *cpu_loop(void *arg)
{
    loop *l = arg;
    while (!atomic_load(&l->stop) && l->n < 4096) {
        double t0 = now_s();
        if ((l->rc = call(l->s)))
            break;
        double t1 = now_s();
        l->starts[l->n] = t0;
        l->ends[l->n] = t1;
        l->times[l->n++] = t1 - t0;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned rounds = 5;
    size_t n = 1024, nb = 256;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--rounds"))
            rounds = (unsigned)atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--n"))
            n = (size_t)atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--nb"))
            nb = (size_t)atol(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--rounds R] [--n N] [--nb NB]\n", argv[0]);
            return 2;
        }
    }
    if (!rounds || rounds > 64 || !nb || n < nb) {
        fprintf(stderr, "bench_shared_cores: bad --rounds, --n or --nb\n");
        return 2;
    }
    synor_runtime_config cc, oc;
    synor_runtime_config_init(&cc);
    cc.opencl = SYNOR_OPENCL_OFF;
    synor_runtime_config_init(&oc);
    oc.opencl = SYNOR_OPENCL_ALL;
    oc.cpu_workers = 1;
    synor_runtime *rc_ = NULL, *ro = NULL;
    if (synor_runtime_create(&cc, &rc_) || synor_runtime_start(rc_) ||
        synor_runtime_create(&oc, &ro) || synor_runtime_start(ro)) {
        fprintf(stderr, "bench_shared_cores: %s\n", synor_errmsg());
        return 1;
    }
    unsigned ocl = 0;
    synor_runtime_device_info info;
    for (unsigned i = 1; i < synor_runtime_device_count(ro); i++)
        if (!synor_runtime_device_get(ro, i, &info) && !strncmp(info.name, "opencl", 6) &&
            info.kind == SYNOR_KIND_CPU) {
            ocl = i;
            break;
        }
    if (!ocl) {
        printf("skip: no OpenCL CPU device (PoCL) here\n");
        synor_runtime_destroy(ro);
        synor_runtime_destroy(rc_);
        return 0;
    }
    synor_runtime_device_get(rc_, 0, &info);
    unsigned workers = info.workers;
    side cpu, pocl;
    if (side_init(&cpu, rc_, 0, n, nb) || side_init(&pocl, ro, ocl, 2 * nb, nb)) {
        fprintf(stderr, "bench_shared_cores: out of memory\n");
        return 1;
    }
    double cpu_tiles = (double)(n / nb) * (double)(n / nb) * (double)(n / nb) / workers;
    double ocl_tiles = 8;
    double ca[64], oa[64], ob[64], cb[4096];
    size_t ncb = 0;
    int rc = call(&cpu) || call(&pocl); /* warm-up: OpenBLAS, PoCL's kernel build */
    for (unsigned r = 0; !rc && r < rounds; r++) {
        double t0 = now_s();
        rc = call(&cpu);
        ca[r] = (now_s() - t0) / cpu_tiles;
        t0 = now_s();
        rc = rc ? rc : call(&pocl);
        oa[r] = (now_s() - t0) / ocl_tiles;
        /* both: the CPU loop runs before, during and after the OpenCL call */
        static loop l;
        memset(&l, 0, sizeof l);
        l.s = &cpu;
        pthread_t th;
        if (rc || pthread_create(&th, NULL, cpu_loop, &l)) {
            rc = rc ? rc : -1;
            break;
        }
        while (!l.n && !l.rc) /* the loop is under way */
            sched_yield();
        t0 = now_s();
        rc = call(&pocl);
        double t1 = now_s();
        ob[r] = (t1 - t0) / ocl_tiles;
        atomic_store(&l.stop, 1);
        pthread_join(th, NULL);
        rc = rc ? rc : l.rc;
        for (size_t k = 0; k < l.n && ncb < 4096; k++)
            if (l.starts[k] >= t0 && l.ends[k] <= t1)
                cb[ncb++] = l.times[k] / cpu_tiles;
        printf("round %u: cpu alone %.3f ms/tile, pocl alone %.3f, pocl with cpu busy %.3f, "
               "cpu calls inside %zu\n",
               r, ca[r] * 1e3, oa[r] * 1e3, ob[r] * 1e3, ncb);
        fflush(stdout);
    }
    if (rc) {
        fprintf(stderr, "bench_shared_cores: %s\n", synor_errmsg());
        return 1;
    }
    double mca = median(ca, rounds), moa = median(oa, rounds), mob = median(ob, rounds),
           mcb = median(cb, ncb);
    printf("workers=%u pocl_device=%s n=%zu nb=%zu rounds=%u cpu_alone_ms=%.3f "
           "cpu_with_pocl_ms=%.3f cpu_slowdown=%.3f pocl_alone_ms=%.3f pocl_with_cpu_ms=%.3f "
           "pocl_slowdown=%.3f\n",
           workers, info.name, n, nb, rounds, mca * 1e3, mcb * 1e3, mca > 0 ? mcb / mca : 0,
           moa * 1e3, mob * 1e3, moa > 0 ? mob / moa : 0);
    side_free(&cpu);
    side_free(&pocl);
    synor_runtime_destroy(ro);
    synor_runtime_destroy(rc_);
    return 0;
}
