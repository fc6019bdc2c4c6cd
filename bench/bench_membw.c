/* bench_membw.c - how fast this machine's cores can read memory: the
 * ceiling of a decode step that streams its weights (issue 12: a 110M F32
 * model reads ~440 MB a token, so tokens/s can be at most this rate over
 * the weights' bytes, for any engine).
 *
 *   bench_membw [--threads N] [--mib M] [--reps R]
 *
 * N threads (default: the online cores), each pinned to a core, each
 * reading its own M MiB (default 256, so the whole is far above any
 * last-level cache; first touched by the thread that reads it) from start
 * to end, 64 bytes at a time with AVX-512 loads where the CPU has them
 * (else AVX2, else the compiler's vectors), summed so the loads cannot be
 * dropped. A trial releases the threads together and times the slowest;
 * the figure is bytes read over that time. Prints every trial, then the
 * median and the best (the best is the ceiling; the median is what a
 * run of several seconds meets on a shared host). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define MAX_THREADS 256

typedef struct {
    int id;
    size_t bytes;
    double *buf;
    double secs;
    double sum;
} member;

static pthread_barrier_t start_bar, end_bar;
static int reps = 7;
static member *members;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static double read_avx512(const double *p, size_t n)
{
    __m512d a = _mm512_setzero_pd(), b = a, c = a, d = a;
    for (size_t i = 0; i + 32 <= n; i += 32) {
        a = _mm512_add_pd(a, _mm512_load_pd(p + i));
        b = _mm512_add_pd(b, _mm512_load_pd(p + i + 8));
        c = _mm512_add_pd(c, _mm512_load_pd(p + i + 16));
        d = _mm512_add_pd(d, _mm512_load_pd(p + i + 24));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a, b), _mm512_add_pd(c, d)));
}

__attribute__((target("avx2"))) static double read_avx2(const double *p, size_t n)
{
    __m256d a = _mm256_setzero_pd(), b = a, c = a, d = a;
    for (size_t i = 0; i + 16 <= n; i += 16) {
        a = _mm256_add_pd(a, _mm256_load_pd(p + i));
        b = _mm256_add_pd(b, _mm256_load_pd(p + i + 4));
        c = _mm256_add_pd(c, _mm256_load_pd(p + i + 8));
        d = _mm256_add_pd(d, _mm256_load_pd(p + i + 12));
    }
    double t[4];
    _mm256_storeu_pd(t, _mm256_add_pd(_mm256_add_pd(a, b), _mm256_add_pd(c, d)));
    return t[0] + t[1] + t[2] + t[3];
}
#endif

static double read_plain(const double *p, size_t n)
{
    double a[8] = {0};
    for (size_t i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            a[k] += p[i + k];
    return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

static double (*read_fn)(const double *, size_t) = read_plain;
static const char *read_isa = "plain";

static void *run(void *arg)
{
    member *m = arg;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET((int)(m->id % (ncpu > 0 ? ncpu : 1)), &cs);
    pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
    size_t n = m->bytes / sizeof(double);
    for (size_t i = 0; i < n; i++)
        m->buf[i] = (double)(i & 1023);
    for (int r = 0; r < reps; r++) {
        pthread_barrier_wait(&start_bar);
        double t0 = now_s();
        m->sum += read_fn(m->buf, n);
        m->secs = now_s() - t0;
        pthread_barrier_wait(&end_bar);
        pthread_barrier_wait(&end_bar); /* the main thread has read secs */
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_pos(const char *flag, const char *v, long max, long *out)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || end == v || x < 1 || x > max) {
        fprintf(stderr, "bench_membw: %s needs an integer from 1 to %ld, got '%s'\n", flag, max,
                v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

int main(int argc, char **argv)
{
    long threads = sysconf(_SC_NPROCESSORS_ONLN), mib = 256, r = 7;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad;
        if (!strcmp(a, "--threads"))
            bad = parse_pos(a, v, MAX_THREADS, &threads);
        else if (!strcmp(a, "--mib"))
            bad = parse_pos(a, v, 65536, &mib);
        else if (!strcmp(a, "--reps"))
            bad = parse_pos(a, v, 1000, &r);
        else {
            fprintf(stderr, "usage: bench_membw [--threads N] [--mib M] [--reps R]\n");
            return 2;
        }
        if (bad)
            return 2;
        i++;
    }
    reps = (int)r;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        read_fn = read_avx512;
        read_isa = "avx512";
    } else if (__builtin_cpu_supports("avx2")) {
        read_fn = read_avx2;
        read_isa = "avx2";
    }
#endif
    members = calloc((size_t)threads, sizeof *members);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    double *gbs = calloc((size_t)reps, sizeof *gbs);
    if (!members || !th || !gbs)
        return 1;
    pthread_barrier_init(&start_bar, NULL, (unsigned)threads);
    pthread_barrier_init(&end_bar, NULL, (unsigned)threads + 1);
    for (long i = 0; i < threads; i++) {
        members[i].id = (int)i;
        members[i].bytes = (size_t)mib << 20;
        members[i].buf = aligned_alloc(2u << 20, members[i].bytes);
        if (!members[i].buf) {
            fprintf(stderr, "bench_membw: cannot allocate %ld MiB for thread %ld\n", mib, i);
            return 1;
        }
        pthread_create(&th[i], NULL, run, &members[i]);
    }
    printf("# bench_membw: %ld threads x %ld MiB, %s loads, %d trials\n", threads, mib, read_isa,
           reps);
    for (int k = 0; k < reps; k++) {
        pthread_barrier_wait(&end_bar);
        double slowest = 0;
        for (long i = 0; i < threads; i++)
            if (members[i].secs > slowest)
                slowest = members[i].secs;
        gbs[k] = slowest > 0 ? (double)threads * (double)((size_t)mib << 20) / slowest / 1e9 : 0;
        printf("  trial %d: %.1f GB/s\n", k + 1, gbs[k]);
        pthread_barrier_wait(&end_bar);
    }
    double sum = 0;
    for (long i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        sum += members[i].sum;
        free(members[i].buf);
    }
    qsort(gbs, (size_t)reps, sizeof *gbs, cmp_double);
    printf("  read GB/s: median %.1f best %.1f  (checksum %.0f)\n", gbs[reps / 2],
           gbs[reps - 1], sum);
    free(members);
    free(th);
    free(gbs);
    return 0;
}
