/* sharing.c - how an OpenCL CPU device (PoCL) and the runtime's CPU
 * workers slow each other on the host's cores, measured
 * (synor_whatif_measure_sharing, synor/whatif.h), for the simulator's
 * shared-core model (synor_fabric_set_host_sharing).
 *
 * Two runtimes in one process: the CPU workers alone (OpenCL off), and one
 * worker with the OpenCL CPU device. Per round: a tiled GEMM (n x n, tiles
 * of nb) on the CPU workers alone; one of 2nb x 2nb (8 tile products) on
 * the OpenCL device alone; then the CPU calls in a loop on a thread while
 * the OpenCL call runs. A tile's time is a call's time over the tiles per
 * worker (the OpenCL device runs its 8 one at a time). The factors are the
 * medians' ratios: a CPU tile with the device busy (the CPU calls that ran
 * wholly inside the OpenCL call) over alone; an OpenCL tile with every
 * worker busy over alone. The result is cached in a JSON file (format
 * synor-host-sharing/1) under the CPU's and the device's products, the
 * worker count and the sizes. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "json/json.h"
#include "synor/runtime.h"
#include "synor/whatif.h"

#define MAX_CALLS 4096

/* the median, 0 for no sample (synor__median's NAN would reach the cache
 * file) */
static double median_of(double *v, size_t n) { return n ? synor__median(v, n) : 0; }

typedef struct side {
    synor_runtime *rt;
    unsigned device; /* 0: wherever the runtime places (the CPU workers only) */
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
    s->a = synor__malloc(n * n * sizeof(float));
    s->b = synor__malloc(n * n * sizeof(float));
    s->c = synor__malloc(n * n * sizeof(float));
    if (!s->a || !s->b || !s->c)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < n * n; i++) {
        s->a[i] = (float)(i % 7) * 0.25f;
        s->b[i] = (float)(i % 5) * 0.5f;
    }
    return 0;
}

static void side_free(side *s)
{
    synor__free(s->a);
    synor__free(s->b);
    synor__free(s->c);
}

typedef struct loop {
    side *s;
    atomic_int stop, started;
    double start[MAX_CALLS], end[MAX_CALLS];
    size_t n;
    int rc;
} loop;

static void *cpu_loop(void *arg)
{
    loop *l = arg;
    while (!atomic_load(&l->stop) && l->n < MAX_CALLS) {
        double t0 = synor__now_s();
        if ((l->rc = call(l->s)))
            break;
        l->start[l->n] = t0;
        l->end[l->n++] = synor__now_s();
        atomic_store(&l->started, 1);
    }
    atomic_store(&l->started, 1);
    return NULL;
}

/* The cache: 0 when it holds this identity (out filled), else nonzero. */
static int cache_read(const char *path, const synor_whatif_sharing *want, synor_whatif_sharing *out)
{
    size_t len = 0;
    char *text = NULL;
    if (synor__read_file(path, &text, &len))
        return -1;
    synor__jdoc *d = NULL;
    int rc = synor__json_parse(text, len, path, &d);
    synor__free(text);
    if (rc)
        return rc;
    synor__jval *r = synor__jdoc_root(d), *v;
    synor_whatif_sharing s = *want;
    rc = -1;
#define NUM(k, f)                                                                        \
    ((v = synor__json_get(r, k)) && v->type == SYNOR__J_NUMBER && ((f) = v->u.n.num, 1))
#define STR(k) ((v = synor__json_get(r, k)) && v->type == SYNOR__J_STRING ? v->u.str.s : "")
    double workers = 0, n = 0, nb = 0;
    if (!strcmp(STR("format"), "synor-host-sharing/1") && !strcmp(STR("cpu"), want->cpu) &&
        !strcmp(STR("device"), want->device) && NUM("workers", workers) &&
        workers == want->workers && NUM("n", n) && n == (double)want->n && NUM("nb", nb) &&
        nb == (double)want->nb && NUM("cpu_alone_s", s.cpu_alone_s) &&
        NUM("cpu_with_device_s", s.cpu_with_device_s) && NUM("device_alone_s", s.device_alone_s) &&
        NUM("device_with_cpu_s", s.device_with_cpu_s) && NUM("cpu_slowdown", s.cpu_slowdown) &&
        NUM("slowdown", s.slowdown) && s.cpu_slowdown >= 1 && s.slowdown >= 1) {
        s.from_cache = 1;
        *out = s;
        rc = 0;
    }
#undef NUM
#undef STR
    synor__jdoc_free(d);
    return rc;
}

static void cache_write(const char *path, const synor_whatif_sharing *s)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 1);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "format");
    synor__jw_str(&w, "synor-host-sharing/1");
    synor__jw_key(&w, "cpu");
    synor__jw_str(&w, s->cpu);
    synor__jw_key(&w, "device");
    synor__jw_str(&w, s->device);
    synor__jw_key(&w, "workers");
    synor__jw_uint(&w, s->workers);
    synor__jw_key(&w, "n");
    synor__jw_uint(&w, s->n);
    synor__jw_key(&w, "nb");
    synor__jw_uint(&w, s->nb);
    const char *k[] = {"cpu_alone_s", "cpu_with_device_s", "device_alone_s", "device_with_cpu_s",
                       "cpu_slowdown", "slowdown"};
    const double v[] = {s->cpu_alone_s,       s->cpu_with_device_s, s->device_alone_s,
                        s->device_with_cpu_s, s->cpu_slowdown,      s->slowdown};
    for (size_t i = 0; i < 6; i++) {
        synor__jw_key(&w, k[i]);
        synor__jw_num(&w, v[i]);
    }
    synor__jw_obj_end(&w);
    synor__buf_puts(&b, "\n");
    if (!b.failed) /* a cache: a failed write only costs a measurement next time */
        (void)synor__write_file_atomic(path, b.data, b.len);
    synor__buf_free(&b);
}

static int measure(synor_runtime *rc_, synor_runtime *ro, unsigned ocl, unsigned rounds,
                   synor_whatif_sharing *s)
{
    side cpu = {0}, dev = {0};
    int rc = side_init(&cpu, rc_, 0, s->n, s->nb);
    if (!rc)
        rc = side_init(&dev, ro, ocl, 2 * s->nb, s->nb);
    double q = (double)(s->n / s->nb);
    double cpu_tiles = q * q * q / s->workers, dev_tiles = 8;
    double ca[64], da[64], db[64];
    double *cb = synor__calloc(MAX_CALLS, sizeof *cb);
    loop *l = synor__calloc(1, sizeof *l);
    size_t ncb = 0;
    if (!rc && (!cb || !l))
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
    if (!rc) /* warm-up: OpenBLAS's threads, PoCL's kernel build */
        rc = call(&cpu);
    if (!rc)
        rc = call(&dev);
    for (unsigned r = 0; !rc && r < rounds; r++) {
        double t0 = synor__now_s();
        if ((rc = call(&cpu)))
            break;
        ca[r] = (synor__now_s() - t0) / cpu_tiles;
        t0 = synor__now_s();
        if ((rc = call(&dev)))
            break;
        da[r] = (synor__now_s() - t0) / dev_tiles;
        memset(l, 0, sizeof *l);
        l->s = &cpu;
        pthread_t th;
        if (pthread_create(&th, NULL, cpu_loop, l)) {
            rc = synor__error(SYNOR_EIO, "measure sharing: cannot start a thread");
            break;
        }
        while (!atomic_load(&l->started)) /* the CPU workers are busy */
            sched_yield();
        t0 = synor__now_s();
        rc = call(&dev);
        double t1 = synor__now_s();
        db[r] = (t1 - t0) / dev_tiles;
        atomic_store(&l->stop, 1);
        pthread_join(th, NULL);
        if (!rc)
            rc = l->rc;
        for (size_t k = 0; k < l->n && ncb < MAX_CALLS; k++)
            if (l->start[k] >= t0 && l->end[k] <= t1)
                cb[ncb++] = (l->end[k] - l->start[k]) / cpu_tiles;
    }
    if (!rc && !ncb)
        rc = synor__error(SYNOR_ERANGE, "measure sharing: no CPU call of n %zu ran wholly while "
                                        "the OpenCL device ran (a smaller n, or nb)",
                          s->n);
    if (!rc) {
        s->cpu_alone_s = median_of(ca, rounds);
        s->cpu_with_device_s = median_of(cb, ncb);
        s->device_alone_s = median_of(da, rounds);
        s->device_with_cpu_s = median_of(db, rounds);
        s->cpu_slowdown = s->cpu_with_device_s / s->cpu_alone_s;
        s->slowdown = s->device_with_cpu_s / s->device_alone_s;
        /* a factor below 1 is noise: no contention measured */
        s->cpu_slowdown = s->cpu_slowdown < 1 ? 1 : s->cpu_slowdown;
        s->slowdown = s->slowdown < 1 ? 1 : s->slowdown;
    }
    synor__free(cb);
    synor__free(l);
    side_free(&cpu);
    side_free(&dev);
    return rc;
}

int synor_whatif_default_sharing_cache_path(char *buf, size_t size)
{
    return synor__xdg_path(SYNOR__XDG_CACHE, "host-sharing.json", buf, size);
}

int synor_whatif_measure_sharing(unsigned cpu_workers, size_t n, size_t nb, unsigned rounds,
                                 const char *cache_path, synor_whatif_sharing *out)
{
    memset(out, 0, sizeof *out);
    if (!nb || n < nb || !rounds || rounds > 64)
        return synor__error(SYNOR_EINVAL, "measure sharing: n %zu, nb %zu, rounds %u (nb >= 1, "
                                          "n >= nb, 1 to 64 rounds)",
                            n, nb, rounds);
    synor_runtime_config cc, oc;
    synor_runtime_config_init(&cc);
    cc.opencl = SYNOR_OPENCL_OFF;
    cc.cuda = 0; /* the CPU workers alone: the default opens every GPU, where they would go */
    cc.cpu_workers = cpu_workers;
    synor_runtime_config_init(&oc);
    oc.opencl = SYNOR_OPENCL_ALL;
    oc.cuda = 0;
    oc.cpu_workers = 1;
    synor_runtime *rc_ = NULL, *ro = NULL;
    int rc = synor_runtime_create(&cc, &rc_);
    if (!rc)
        rc = synor_runtime_create(&oc, &ro);
    synor_runtime_device_info info;
    unsigned ocl = rc ? 0 : synor_runtime_host_opencl_device(ro, &info);
    if (ocl)
        snprintf(out->device, sizeof out->device, "%s", info.product);
    if (!rc && !ocl)
        rc = synor__error(SYNOR_ENODEV, "measure sharing: no OpenCL CPU device (PoCL) here");
    if (!rc && !(rc = synor_runtime_device_get(rc_, 0, &info))) {
        snprintf(out->cpu, sizeof out->cpu, "%s", info.product);
        out->workers = info.workers;
        out->n = n;
        out->nb = nb;
    }
    if (!rc && cache_path && !cache_read(cache_path, out, out))
        goto done;
    if (!rc)
        rc = synor_runtime_start(rc_);
    if (!rc)
        rc = synor_runtime_start(ro);
    if (!rc)
        rc = measure(rc_, ro, ocl, rounds, out);
    if (!rc && cache_path)
        cache_write(cache_path, out);
done:
    synor_runtime_destroy(ro);
    synor_runtime_destroy(rc_);
    return rc;
}
