/* peak.c - the host CPU's throughput and memory bandwidth, measured rather
 * than derived from a table (synor__host_measure_run).
 *
 * Why measure: the derived rule (cores x clock x FLOPs per cycle) needs the
 * clock the vector units really run at under load and their real width,
 * and neither is in cpuid: a VM reports a base clock below what its cores
 * sustain, AVX-512 runs at full width on some cores and as two halves on
 * others, and a licence-based down-clock applies on yet others. A short
 * loop answers all of these at once.
 *
 * Method: for every ISA level the CPU and the OS allow (cpu_<arch>.c), one
 * thread per core, each pinned to its core, runs the level's FMA loop for
 * about 10 ms, all released together; each thread's rate is its operations
 * over its own CPU time (CLOCK_THREAD_CPUTIME_ID), so time the scheduler
 * gave to other processes does not count against the hardware, and the
 * peak is the sum of the rates, the best of five trials. (The guest cannot
 * see a hypervisor's steal time: on a busy VM host the figure is low.)
 * Bandwidth: each thread copies its own 64 MiB (first touched by itself)
 * five times with STREAM's copy kernel; bytes read and written over the
 * slowest thread's wall time,
 * the best trial (main memory on most machines; partly cache where the
 * last-level cache is larger). About 0.4 s in all, so the figures are
 * cached in a file with the machine's identity (model, vendor, features,
 * packages, cores, threads, library version): a later detection on the
 * same machine reads them
 * instead of measuring again, and a different identity measures anew. */
#include <hwloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "detect/detect_internal.h"
#include "json/json.h"

#define TRIAL_S 0.010
#define TRIALS 5
#define BW_BYTES (64u << 20)
#define BW_TRIALS 5
#define MAX_THREADS 1024

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

/* ------------------------------------------------------------ the threads */

/* One thread per core, started once and given a job per trial: the leader
 * bumps a generation number and waits until every member has run it. */
typedef struct gang gang;

typedef struct member {
    gang *g;
    unsigned index;
    pthread_t thread;
    double secs;     /* of this member's last run: wall time (copies) or
                        this thread's CPU time (FMA loops) */
    double sink;
    double *src, *dst; /* bandwidth buffers, first touched by this thread */
} member;

struct gang {
    hwloc_topology_t topo;
    unsigned n;
    member *m;
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    unsigned long gen; /* under lock: the trial to run */
    unsigned pending;  /* under lock: members still running it */
    int quit;          /* under lock */
    /* the job of the current trial: written by the leader before gen++ */
    const synor__fma_loop *loop;
    uint64_t iters;
    int copy; /* 1: a bandwidth trial */
};

static void *member_main(void *arg)
{
    member *me = arg;
    gang *g = me->g;
    hwloc_obj_t core = hwloc_get_obj_by_type(g->topo, HWLOC_OBJ_CORE, me->index);
    if (core && core->cpuset)
        (void)hwloc_set_cpubind(g->topo, core->cpuset, HWLOC_CPUBIND_THREAD);
    me->src = synor__malloc(BW_BYTES);
    me->dst = synor__malloc(BW_BYTES);
    if (me->src && me->dst) {
        synor__stream_fill(me->src, BW_BYTES / sizeof(double), 1.0);
        synor__stream_fill(me->dst, BW_BYTES / sizeof(double), 2.0);
    }
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&g->lock);
        while (g->gen == seen && !g->quit)
            pthread_cond_wait(&g->go, &g->lock);
        seen = g->gen;
        int quit = g->quit;
        pthread_mutex_unlock(&g->lock);
        if (quit)
            break;
        clockid_t clk = g->copy ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
        double t0 = clock_s(clk);
        if (g->copy) {
            if (me->src && me->dst) {
                synor__stream_copy(me->dst, me->src, BW_BYTES / sizeof(double));
                me->sink += me->dst[(me->index * 4099u) % (BW_BYTES / sizeof(double))];
            }
        } else {
            me->sink += g->loop->fn(g->iters);
        }
        me->secs = clock_s(clk) - t0;
        pthread_mutex_lock(&g->lock);
        if (--g->pending == 0)
            pthread_cond_signal(&g->done);
        pthread_mutex_unlock(&g->lock);
    }
    synor__free(me->src);
    synor__free(me->dst);
    return NULL;
}

/* Runs one trial on every member; returns the slowest member's seconds. */
static double trial(gang *g)
{
    pthread_mutex_lock(&g->lock);
    g->pending = g->n;
    g->gen++;
    pthread_cond_broadcast(&g->go);
    while (g->pending)
        pthread_cond_wait(&g->done, &g->lock);
    pthread_mutex_unlock(&g->lock);
    double worst = 0;
    for (unsigned i = 0; i < g->n; i++)
        if (g->m[i].secs > worst)
            worst = g->m[i].secs;
    return worst;
}

static void gang_stop(gang *g)
{
    pthread_mutex_lock(&g->lock);
    g->quit = 1;
    pthread_cond_broadcast(&g->go);
    pthread_mutex_unlock(&g->lock);
    for (unsigned i = 0; i < g->n; i++)
        pthread_join(g->m[i].thread, NULL);
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->go);
    pthread_cond_destroy(&g->done);
    synor__free(g->m);
    hwloc_topology_destroy(g->topo);
}

static int gang_start(gang *g, unsigned n)
{
    memset(g, 0, sizeof *g);
    if (hwloc_topology_init(&g->topo) != 0)
        return synor__error(SYNOR_EIO, "hwloc_topology_init failed");
    if (hwloc_topology_load(g->topo) != 0) {
        hwloc_topology_destroy(g->topo);
        return synor__error(SYNOR_EIO, "hwloc_topology_load failed");
    }
    g->m = synor__calloc(n, sizeof *g->m);
    if (!g->m) {
        hwloc_topology_destroy(g->topo);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->go, NULL);
    pthread_cond_init(&g->done, NULL);
    for (unsigned i = 0; i < n; i++) {
        g->m[i].g = g;
        g->m[i].index = i;
        if (pthread_create(&g->m[i].thread, NULL, member_main, &g->m[i]) != 0) {
            g->n = i; /* stop the ones that started */
            gang_stop(g);
            return synor__error(SYNOR_EIO, "cannot start measurement thread %u of %u", i + 1, n);
        }
        g->n = i + 1;
    }
    return 0;
}

/* The best throughput of loop l over the gang, FLOP/s. */
static double measure_loop(gang *g, const synor__fma_loop *l)
{
    /* Calibrate on one thread (the gang's members would run it too, so
     * size it on this thread): grow until a run takes 1 ms, then scale to
     * TRIAL_S. */
    uint64_t iters = 1000;
    double t = 0, sink = 0;
    for (;;) {
        double t0 = now_s();
        sink += l->fn(iters);
        t = now_s() - t0;
        if (t >= 1e-3 || iters > (UINT64_C(1) << 40))
            break;
        iters *= 4;
    }
    g->m[0].sink += sink;
    g->loop = l;
    g->copy = 0;
    g->iters = (uint64_t)((double)iters * TRIAL_S / (t > 0 ? t : 1e-3)) + 1;
    double best = 0;
    for (int k = 0; k < TRIALS; k++) {
        (void)trial(g);
        double f = 0;
        for (unsigned i = 0; i < g->n; i++)
            if (g->m[i].secs > 0)
                f += (double)g->iters * l->flops_per_iter / g->m[i].secs;
        if (f > best)
            best = f;
    }
    return best;
}

static double measure_copy(gang *g)
{
    for (unsigned i = 0; i < g->n; i++)
        if (!g->m[i].src || !g->m[i].dst)
            return 0; /* a member could not allocate: no figure */
    g->copy = 1;
    double best = 0;
    for (int k = 0; k < BW_TRIALS; k++) {
        double s = trial(g);
        double bw = s > 0 ? 2.0 * BW_BYTES * g->n / s : 0;
        if (bw > best)
            best = bw;
    }
    return best;
}

static int measure(unsigned cores, uint32_t features, synor__host_measure *out)
{
    synor__fma_loop loops[8];
    size_t nl = synor__cpu_fma_loops(features, loops, SYNOR__ARRAY_LEN(loops));
    unsigned n = cores < 1 ? 1 : cores > MAX_THREADS ? MAX_THREADS : cores;
    gang g;
    int rc = gang_start(&g, n);
    if (rc)
        return rc;
    memset(out, 0, sizeof *out);
    out->threads = n;
    for (size_t i = 0; i < nl && i < SYNOR__ARRAY_LEN(out->level); i++) {
        synor__host_level *lv = &out->level[out->n_levels++];
        synor__strlcpy(lv->isa, loops[i].isa, sizeof lv->isa);
        lv->dtype = loops[i].dtype;
        lv->flops = measure_loop(&g, &loops[i]);
    }
    out->copy_bw = measure_copy(&g);
    gang_stop(&g);
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(out->when, sizeof out->when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return 0;
}

/* The best level per data type. */
static void pick_best(synor__host_measure *m)
{
    m->fp64 = m->fp32 = 0;
    for (size_t i = 0; i < m->n_levels; i++) {
        const synor__host_level *lv = &m->level[i];
        double *best = lv->dtype == SYNOR_DTYPE_FP64 ? &m->fp64 : &m->fp32;
        char *isa = lv->dtype == SYNOR_DTYPE_FP64 ? m->fp64_isa : m->fp32_isa;
        if (lv->flops > *best) {
            *best = lv->flops;
            synor__strlcpy(isa, lv->isa, sizeof m->fp64_isa);
        }
    }
}

/* ------------------------------------------------------------- the cache */

#define CACHE_FORMAT "synor-host-measure/1"

static char *cache_json(const char *identity, const synor__host_measure *m)
{
    synor__buf b;
    synor__jw w;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, 1);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "format");
    synor__jw_str(&w, CACHE_FORMAT);
    synor__jw_key(&w, "identity");
    synor__jw_str(&w, identity);
    synor__jw_key(&w, "measured_at");
    synor__jw_str(&w, m->when);
    synor__jw_key(&w, "threads");
    synor__jw_uint(&w, m->threads);
    synor__jw_key(&w, "copy_bw_bytes_s");
    synor__jw_num(&w, m->copy_bw);
    synor__jw_key(&w, "levels");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < m->n_levels; i++) {
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "isa");
        synor__jw_str(&w, m->level[i].isa);
        synor__jw_key(&w, "dtype");
        synor__jw_str(&w, synor_dtype_name(m->level[i].dtype));
        synor__jw_key(&w, "flops");
        synor__jw_num(&w, m->level[i].flops);
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    synor__buf_puts(&b, "\n");
    return synor__buf_take(&b);
}

/* 0 and *out filled: the cache is valid and of this identity; 1: of
 * another identity; < 0: unreadable or invalid (message set). */
static int cache_read(const char *path, const char *identity, synor__host_measure *out)
{
    char *text;
    size_t len;
    int rc = synor__read_file(path, &text, &len);
    if (rc)
        return rc;
    synor__jdoc *d;
    rc = synor__json_parse(text, len, path, &d);
    synor__free(text);
    if (rc)
        return rc;
    static const char *const keys[] = {"format", "identity", "measured_at", "threads",
                                       "copy_bw_bytes_s", "levels", NULL};
    static const char *const lkeys[] = {"isa", "dtype", "flops", NULL};
    const char *top = "(top level)";
    const synor__jval *root = synor__jdoc_root(d);
    synor__jval *fmt, *id, *when, *thr, *bw, *levels;
    synor__host_measure m;
    memset(&m, 0, sizeof m);
    int64_t threads = 0;
    if ((rc = synor__json_expect(d, root, top, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, root, top, keys)) ||
        (rc = synor__json_member(d, root, top, "format", SYNOR__J_STRING, 1, &fmt)))
        goto out;
    if (strcmp(fmt->u.str.s, CACHE_FORMAT) != 0) {
        rc = synor__json_fail(d, fmt, SYNOR_ESCHEMA, "format", "\"%s\" (expected \"%s\")",
                              fmt->u.str.s, CACHE_FORMAT);
        goto out;
    }
    if ((rc = synor__json_member(d, root, top, "identity", SYNOR__J_STRING, 1, &id)) ||
        (rc = synor__json_member(d, root, top, "measured_at", SYNOR__J_STRING, 1, &when)) ||
        (rc = synor__json_member(d, root, top, "threads", SYNOR__J_NUMBER, 1, &thr)) ||
        (rc = synor__json_int(d, thr, "threads", 1, MAX_THREADS, &threads)) ||
        (rc = synor__json_member(d, root, top, "copy_bw_bytes_s", SYNOR__J_NUMBER, 1, &bw)) ||
        (rc = synor__json_number(d, bw, "copy_bw_bytes_s", 0, 1e15, &m.copy_bw)) ||
        (rc = synor__json_member(d, root, top, "levels", SYNOR__J_ARRAY, 1, &levels)))
        goto out;
    if (strcmp(id->u.str.s, identity) != 0) {
        rc = 1;
        goto out;
    }
    if (levels->u.arr.n == 0 || levels->u.arr.n > SYNOR__ARRAY_LEN(m.level)) {
        rc = synor__json_fail(d, levels, SYNOR_ESCHEMA, "levels", "%zu levels (1 to %zu)",
                              levels->u.arr.n, SYNOR__ARRAY_LEN(m.level));
        goto out;
    }
    for (size_t i = 0; i < levels->u.arr.n; i++) {
        const synor__jval *o = levels->u.arr.items[i];
        synor__host_level *lv = &m.level[m.n_levels++];
        char p[32];
        snprintf(p, sizeof p, "levels[%zu]", i);
        synor__jval *isa, *dt, *fl;
        synor_dtype t;
        if ((rc = synor__json_expect(d, o, p, SYNOR__J_OBJECT)) ||
            (rc = synor__json_check_keys(d, o, p, lkeys)) ||
            (rc = synor__json_member(d, o, p, "isa", SYNOR__J_STRING, 1, &isa)) ||
            (rc = synor__json_member(d, o, p, "dtype", SYNOR__J_STRING, 1, &dt)) ||
            (rc = synor__json_member(d, o, p, "flops", SYNOR__J_NUMBER, 1, &fl)) ||
            (rc = synor__json_number(d, fl, p, 0, 1e18, &lv->flops)))
            goto out;
        if (isa->u.str.len == 0 || isa->u.str.len >= sizeof lv->isa) {
            rc = synor__json_fail(d, isa, SYNOR_ESCHEMA, p, "isa \"%s\": 1 to %zu characters",
                                  isa->u.str.s, sizeof lv->isa - 1);
            goto out;
        }
        if (synor_dtype_from_name(dt->u.str.s, &t) < 0 ||
            (t != SYNOR_DTYPE_FP64 && t != SYNOR_DTYPE_FP32)) {
            rc = synor__json_fail(d, dt, SYNOR_ESCHEMA, p, "dtype \"%s\" (fp64 or fp32)",
                                  dt->u.str.s);
            goto out;
        }
        synor__strlcpy(lv->isa, isa->u.str.s, sizeof lv->isa);
        lv->dtype = t;
    }
    m.threads = (unsigned)threads;
    synor__strlcpy(m.when, when->u.str.s, sizeof m.when);
    m.from_cache = 1;
    *out = m;
out:
    synor__jdoc_free(d);
    return rc;
}

int synor__host_measure_run(const char *identity, unsigned cores, uint32_t features,
                            const char *cache, int read_cache, synor__host_measure *out,
                            char *note, size_t note_size)
{
    if (note_size)
        note[0] = '\0';
    if (cache && read_cache) {
        int rc = cache_read(cache, identity, out);
        if (rc == 0) {
            pick_best(out);
            if (out->fp64 > 0)
                return 0;
            snprintf(note, note_size, "%s: no positive throughput: measured again", cache);
        } else if (rc == 1) {
            snprintf(note, note_size, "%s is of another machine or library version: measured "
                     "again", cache);
        } else if (rc != SYNOR_EIO || strstr(synor_errmsg(), "cannot open") == NULL) {
            snprintf(note, note_size, "%s: measured again", synor_errmsg());
        }
    }
    synor__host_measure m;
    int rc = measure(cores, features, &m);
    if (rc)
        return rc;
    pick_best(&m);
    if (m.fp64 <= 0)
        return synor__error(SYNOR_EIO, "the FMA loops measured no throughput");
    if (cache) {
        char *text = cache_json(identity, &m);
        rc = text ? synor__write_file_atomic(cache, text, strlen(text))
                  : synor__error(SYNOR_ENOMEM, "out of memory");
        synor__free(text);
        if (rc && note_size) {
            size_t l = strlen(note);
            snprintf(note + l, note_size - l, "%sthe cache cannot be written (%s)",
                     l ? "; " : "", synor_errmsg());
        }
    }
    *out = m;
    return 0;
}
