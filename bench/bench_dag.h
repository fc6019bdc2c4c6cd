/* bench_dag.h - what the planner benchmarks share (bench_planner.c,
 * bench_exact.c): timing, a seeded PRNG and the random DAG generator of
 * Topcuoglu, Hariri & Wu 2002 (gen_dag, described in bench_planner.c).
 * Included by one benchmark program each; define BENCH_NAME first. */
#ifndef BENCH_DAG_H
#define BENCH_DAG_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "synor.h"

/* ------------------------------------------------------------- helpers */

static inline void die(const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", BENCH_NAME, what, synor_errmsg());
    exit(1);
}

static inline void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", BENCH_NAME);
        exit(1);
    }
    return p;
}

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double unif(uint64_t *s) { return (double)(splitmix(s) >> 11) * 0x1p-53; }
static inline size_t below(uint64_t *s, size_t n) { return (size_t)(unif(s) * (double)n); }

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* kB from /proc/self/status ("VmRSS:", "VmHWM:"), -1 if unreadable. */
static inline long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0)
            v = atol(line + kl);
    if (f)
        fclose(f);
    return v;
}

/* Resets the peak resident size (VmHWM) to the current one; 0 on success. */
static inline int reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* ---------------------------------------------------------- random DAGs */

typedef struct dag {
    size_t n, d, m;
    double *exec, *bytes, *inv_bw;
    size_t *off, *pred;
    synor_sched_problem pb;
} dag;

static inline void dag_free(dag *g)
{
    free(g->exec);
    free(g->bytes);
    free(g->inv_bw);
    free(g->off);
    free(g->pred);
    memset(g, 0, sizeof *g);
}

static inline void gen_dag(dag *g, uint64_t seed, size_t n, size_t d, double alpha, double beta,
                    double ccr)
{
    uint64_t r = seed;
    memset(g, 0, sizeof *g);
    g->n = n;
    g->d = d;
    long hm = lround(sqrt((double)n) / alpha);
    size_t Hm = hm < 1 ? 1 : (size_t)hm, H = Hm - Hm / 2 + below(&r, 2 * (Hm / 2) + 1);
    H = H < 2 ? 2 : H > n ? n : H;
    size_t *lstart = xcalloc(H + 1, sizeof *lstart), *width = xcalloc(H, sizeof *width);
    double *u = xcalloc(H, sizeof *u), usum = 0;
    for (size_t l = 0; l < H; l++)
        usum += (u[l] = unif(&r));
    size_t placed = 0;
    for (size_t l = 0; l < H; l++)
        placed += (width[l] = 1 + (size_t)((double)(n - H) * u[l] / usum));
    for (size_t k = below(&r, H); placed < n; k++, placed++)
        width[k % H]++;
    for (size_t l = 0; l < H; l++)
        lstart[l + 1] = lstart[l] + width[l];
    /* edges as (from, to) pairs, then CSR by destination */
    size_t cap = 6 * n, m = 0;
    size_t *ef = xcalloc(cap, sizeof *ef), *et = xcalloc(cap, sizeof *et);
    unsigned char *has_pred = xcalloc(n, 1);
    for (size_t l = 0; l + 1 < H; l++)
        for (size_t i = lstart[l]; i < lstart[l + 1]; i++) {
            size_t k = 1 + below(&r, 5), first = m;
            for (size_t t = 0; t < k; t++) {
                size_t L = unif(&r) < 0.75 ? l + 1 : l + 1 + below(&r, H - 1 - l);
                size_t j = lstart[L] + below(&r, width[L]), dup = 0;
                for (size_t e = first; e < m; e++)
                    dup |= et[e] == j;
                if (!dup) {
                    ef[m] = i;
                    et[m++] = j;
                    has_pred[j] = 1;
                }
            }
        }
    for (size_t l = 1; l < H; l++)
        for (size_t i = lstart[l]; i < lstart[l + 1]; i++)
            if (!has_pred[i]) {
                ef[m] = lstart[l - 1] + below(&r, width[l - 1]);
                et[m++] = i;
            }
    g->m = m;
    g->off = xcalloc(n + 1, sizeof *g->off);
    g->pred = xcalloc(m, sizeof *g->pred);
    g->bytes = xcalloc(m, sizeof *g->bytes);
    size_t *fill = xcalloc(n, sizeof *fill);
    for (size_t e = 0; e < m; e++)
        g->off[et[e] + 1]++;
    for (size_t i = 0; i < n; i++)
        g->off[i + 1] += g->off[i];
    for (size_t e = 0; e < m; e++)
        g->pred[g->off[et[e]] + fill[et[e]]++] = ef[e];
    /* costs */
    g->exec = xcalloc(n * d, sizeof *g->exec);
    double wdag = 10 + 90 * unif(&r), wsum = 0, csum = 0;
    for (size_t i = 0; i < n; i++) {
        double wi = 2 * wdag * unif(&r);
        for (size_t p = 0; p < d; p++)
            wsum += (g->exec[i * d + p] = wi * (1 - beta / 2 + beta * unif(&r)));
    }
    for (size_t e = 0; e < m; e++)
        csum += (g->bytes[e] = unif(&r));
    double scale = csum > 0 ? ccr * (wsum / (double)(n * d)) / (csum / (double)m) : 0;
    for (size_t e = 0; e < m; e++)
        g->bytes[e] *= scale;
    g->inv_bw = xcalloc(d * d, sizeof *g->inv_bw);
    for (size_t p = 0; p < d; p++)
        for (size_t q = 0; q < d; q++)
            g->inv_bw[p * d + q] = p == q ? 0 : 1;
    g->pb = (synor_sched_problem){.n_tasks = n, .n_devices = d, .exec = g->exec,
                                  .pred_off = g->off, .pred = g->pred, .pred_bytes = g->bytes,
                                  .inv_bw = g->inv_bw};
    free(lstart);
    free(width);
    free(u);
    free(ef);
    free(et);
    free(has_pred);
    free(fill);
}

#endif
