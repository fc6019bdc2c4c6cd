/* bench_planner.c - schedule quality, planner speed and simulator speed
 * (issue 3, point 9). Results and commands: docs/BENCHMARKS.md, "Planner
 * and simulator"; bench/run_planner_bench.sh runs every mode.
 *
 *   bench_planner quality [--reps R] [--seed S] [--sizes A,B]   (default 100,1000)
 *   bench_planner exact   [--reps R] [--seed S] [--node-limit N]
 *   bench_planner beyond  [--reps R] [--seed S]   (improve against HEFT, PEFT)
 *   bench_planner speed   [--tasks N] [--devices D] [--runs R] [--seed S]
 *                         [--alpha A] [--beta B] [--ccr C]   (default 1, 0.5, 1)
 *   bench_planner sim     [--tasks N] [--width W] [--fabric NAME] [--runs R]
 *   bench_planner files   --dir DIR [--tasks N] [--devices D] [--seed S]
 *                         [--alpha A] [--beta B] [--ccr C] [--digits G]
 *   bench_planner phases  --dir DIR
 *
 * files writes the speed mode's DAG as DIR/workload.json (synor-workload/1:
 * each task's cost row as "exec_s", each edge as {"task", "comm_s"}) and a
 * fabric of D abstract processors as DIR/fabric.json, for timing `synor
 * plan` end to end (bench/run_planner_bench.sh, "cli"); it prints the HEFT
 * makespan the library finds on the same DAG, which the command must
 * print too. Numbers are written with G significant digits (default 17:
 * every cost reads back to the same double, so the plans are the same).
 * phases does in one process what `synor plan --workload DIR/workload.json
 * --fabric DIR/fabric.json --json` does (HEFT), timing each step in its
 * order: the fabric (with the built-in profiles), the workload load
 * (reading the file included), the cost matrix, the plan, its JSON written
 * to DIR/plan.json, freeing it all; peak RSS up to there. Then, apart,
 * reading the file alone and parsing it into a whole JSON document (the
 * loader did so before it streamed the tasks).
 *
 * Random DAGs as in Topcuoglu, Hariri & Wu 2002 (gen_dag), from n tasks,
 * shape alpha, heterogeneity beta, CCR and d devices:
 *   height   H levels, an integer uniform in [Hm - Hm/2, Hm + Hm/2] (integer
 *            halves) around Hm = max(1, round(sqrt(n) / alpha)), then
 *            clamped to [2, n];
 *   width    every level gets one task and the other n - H tasks are shared
 *            in proportion to weights uniform in [0, 1): the mean width is
 *            n / H, about sqrt(n) x alpha, levels range from 1 to about
 *            twice the mean;
 *   edges    each task above the last level gets an out-degree uniform in
 *            {1, ..., 5} (mean 3); each successor is in the next level with
 *            probability 3/4, else in a level drawn uniformly among the
 *            later ones, and uniform within its level; duplicates are
 *            dropped. A task below the first level left without a
 *            predecessor gets one from the level above. Edges go to later
 *            levels only, so task indexes are a topological order; the
 *            entry tasks are the first level;
 *   compute  w_DAG (the mean computation cost) uniform in [10, 100); each
 *            task's mean cost w_i uniform in [0, 2 w_DAG); its cost on each
 *            device uniform in [w_i (1 - beta/2), w_i (1 + beta/2)];
 *   comm     each edge draws a cost uniform in [0, 1); all are then scaled
 *            so that mean edge cost / mean computation cost (over tasks and
 *            devices) equals CCR exactly. Modelled as pred_bytes = cost with
 *            lat = 0 and inv_bw = 1 between distinct devices (0 on the
 *            diagonal): the classic model, an edge costs its cost between
 *            two devices and nothing on one. All devices are CPUs.
 * PRNG: splitmix64, seeded per DAG from --seed and the DAG's number, so
 * every figure is reproducible.
 *
 * Metrics (Topcuoglu et al.): SLR = makespan / the sum of minimum
 * computation costs along CP_MIN, the path with the largest such sum
 * (communication ignored; a lower bound of any makespan, so SLR >= 1);
 * speedup = min over devices of the sequential time on that device /
 * makespan. Every plan is checked with synor_plan_validate; a failure
 * aborts. */
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "json/json.h"
#include "synor.h"

#define BENCH_NAME "bench_planner"
#include "bench_dag.h"

/* The SLR denominator: the largest sum of minimum costs along a path. */
static double cp_min(const dag *g)
{
    double *cp = xcalloc(g->n, sizeof *cp), best = 0;
    for (size_t i = 0; i < g->n; i++) {
        double w = INFINITY, in = 0;
        for (size_t p = 0; p < g->d; p++)
            w = fmin(w, g->exec[i * g->d + p]);
        for (size_t e = g->off[i]; e < g->off[i + 1]; e++)
            in = fmax(in, cp[g->pred[e]]);
        cp[i] = in + w;
        best = fmax(best, cp[i]);
    }
    free(cp);
    return best;
}

/* min over devices of the time to run everything there, one at a time */
static double seq_best(const dag *g)
{
    double best = INFINITY;
    for (size_t p = 0; p < g->d; p++) {
        double s = 0;
        for (size_t i = 0; i < g->n; i++)
            s += g->exec[i * g->d + p];
        best = fmin(best, s);
    }
    return best;
}

static double plan_with(const dag *g, synor_strategy st, uint64_t node_limit, int *optimal)
{
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = st;
    o.exact_node_limit = node_limit;
    synor_plan *p = NULL;
    if (synor_plan_problem(&g->pb, &o, &p))
        die(synor_strategy_name(st));
    if (synor_plan_validate(p, &g->pb)) {
        fprintf(stderr, "bench_planner: INVALID %s plan: %s\n", synor_strategy_name(st),
                synor_errmsg());
        abort();
    }
    double ms = p->makespan;
    if (optimal)
        *optimal = p->optimal;
    synor_plan_destroy(p);
    return ms;
}

typedef struct okey {
    double st;
    size_t task;
} okey;

static int by_st(const void *a, const void *b)
{
    const okey *x = a, *y = b;
    return x->st < y->st ? -1 : x->st > y->st ? 1 : (x->task > y->task) - (x->task < y->task);
}

/* Baseline: each task (index order is topological) on a uniformly random
 * device, at the later of its inputs arriving and the device being free
 * (no insertion). Validated like the library's plans. */
static double plan_random(const dag *g, uint64_t seed)
{
    size_t n = g->n, d = g->d;
    size_t *dev = xcalloc(n, sizeof *dev), *order = xcalloc(n, sizeof *order);
    double *st = xcalloc(n, sizeof *st), *ft = xcalloc(n, sizeof *ft);
    double *avail = xcalloc(d, sizeof *avail), ms = 0;
    okey *k = xcalloc(n, sizeof *k);
    for (size_t i = 0; i < n; i++) {
        size_t p = dev[i] = below(&seed, d);
        double ready = avail[p];
        for (size_t e = g->off[i]; e < g->off[i + 1]; e++) {
            size_t j = g->pred[e];
            ready = fmax(ready, ft[j] + (dev[j] == p ? 0 : g->bytes[e]));
        }
        st[i] = ready;
        ft[i] = avail[p] = ready + g->exec[i * d + p];
        ms = fmax(ms, ft[i]);
        k[i] = (okey){st[i], i};
    }
    qsort(k, n, sizeof *k, by_st);
    for (size_t i = 0; i < n; i++)
        order[i] = k[i].task;
    synor_plan pl = {.strategy = SYNOR_STRATEGY_HEFT, .n_tasks = n, .n_devices = d, .device = dev,
                     .start = st, .finish = ft, .order = order, .makespan = ms};
    if (synor_plan_validate(&pl, &g->pb)) {
        fprintf(stderr, "bench_planner: INVALID random plan: %s\n", synor_errmsg());
        abort();
    }
    free(dev);
    free(order);
    free(st);
    free(ft);
    free(avail);
    free(k);
    return ms;
}

/* ------------------------------------------------------------- quality */

static double NS[] = {100, 1000}; /* quality: --sizes A,B */
static const double CCRS[] = {0.1, 1, 10}, ALPHAS[] = {0.5, 1, 2}, BETAS[] = {0.1, 0.5, 1},
                    DEVS[] = {4, 8, 16};

enum { P_HEFT, P_PEFT, P_MIX, P_ENERGY, P_CPU, P_RANDOM, P_ONE, NP };
static const char *const PNAME[NP] = {"heft", "peft", "mix", "energy", "cpu-only", "random",
                                      "one-device"};
static const synor_strategy PST[NP] = {SYNOR_STRATEGY_HEFT, SYNOR_STRATEGY_PEFT,
                                       SYNOR_STRATEGY_MIX, SYNOR_STRATEGY_ENERGY,
                                       SYNOR_STRATEGY_CPU_ONLY};

/* row groups of the tables: every n, CCR, alpha, beta, device count, all */
enum { NROWS = 2 + 3 + 3 + 3 + 3 + 1 };
static const char *row_label(int r, char *buf, size_t len)
{
    if (r < 2)
        snprintf(buf, len, "n = %g", NS[r]);
    else if (r < 5)
        snprintf(buf, len, "CCR = %g", CCRS[r - 2]);
    else if (r < 8)
        snprintf(buf, len, "alpha = %g", ALPHAS[r - 5]);
    else if (r < 11)
        snprintf(buf, len, "beta = %g", BETAS[r - 8]);
    else if (r < 14)
        snprintf(buf, len, "%g devices", DEVS[r - 11]);
    else
        snprintf(buf, len, "all");
    return buf;
}

static void print_table(const char *title, double acc[NROWS][NP], const double *cnt)
{
    char lb[32];
    printf("\n%s\n\n| DAGs |", title);
    for (int p = 0; p < NP; p++)
        printf(" %s |", PNAME[p]);
    printf("\n|---|");
    for (int p = 0; p < NP; p++)
        printf("---|");
    printf("\n");
    for (int r = 0; r < NROWS; r++) {
        printf("| %s (%.0f) |", row_label(r, lb, sizeof lb), cnt[r]);
        for (int p = 0; p < NP; p++)
            printf(" %.4f |", acc[r][p] / cnt[r]);
        printf("\n");
    }
}

static int mode_quality(int reps, uint64_t seed)
{
    static double slr[NROWS][NP], spd[NROWS][NP], cnt[NROWS];
    long cmp[2][3] = {{0}}; /* per n: PEFT better, tie, worse than HEFT */
    long cpu_diff = 0, dags = 0;
    double t0 = now_s();
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++)
                for (int e = 0; e < 3; e++)
                    for (int f = 0; f < 3; f++)
                        for (int rep = 0; rep < reps; rep++) {
                            uint64_t s = seed * 1000003u + (uint64_t)dags++;
                            dag g;
                            gen_dag(&g, splitmix(&s), (size_t)NS[a], (size_t)DEVS[f], ALPHAS[c],
                                    BETAS[e], CCRS[b]);
                            double ms[NP], cp = cp_min(&g), sq = seq_best(&g);
                            for (int p = 0; p < P_RANDOM; p++)
                                ms[p] = plan_with(&g, PST[p], 0, NULL);
                            ms[P_RANDOM] = plan_random(&g, splitmix(&s));
                            ms[P_ONE] = sq;
                            cpu_diff += ms[P_CPU] != ms[P_HEFT];
                            double rel = (ms[P_PEFT] - ms[P_HEFT]) / ms[P_HEFT];
                            cmp[a][rel < -1e-9 ? 0 : rel > 1e-9 ? 2 : 1]++;
                            int rows[6] = {a, 2 + b, 5 + c, 8 + e, 11 + f, 14};
                            for (int k = 0; k < 6; k++) {
                                cnt[rows[k]]++;
                                for (int p = 0; p < NP; p++) {
                                    slr[rows[k]][p] += ms[p] / cp;
                                    spd[rows[k]][p] += sq / ms[p];
                                }
                            }
                            dag_free(&g);
                        }
    printf("quality: %ld DAGs (%d per cell of n x CCR x alpha x beta x devices), seed %llu, "
           "%.1f s; every plan valid\n",
           dags, reps, (unsigned long long)seed, now_s() - t0);
    print_table("Mean SLR (lower is better)", slr, cnt);
    print_table("Mean speedup (higher is better)", spd, cnt);
    printf("\nPEFT against HEFT, share of DAGs (makespans within 1e-9 relative count as a tie)\n\n"
           "| n | PEFT better | tie | PEFT worse |\n|---|---|---|---|\n");
    for (int a = 0; a <= 2; a++) {
        long v[3];
        for (int k = 0; k < 3; k++)
            v[k] = a < 2 ? cmp[a][k] : cmp[0][k] + cmp[1][k];
        double t = (double)(v[0] + v[1] + v[2]);
        char lb[16];
        snprintf(lb, sizeof lb, "%g", a < 2 ? NS[a] : 0);
        printf("| %s | %.1f%% | %.1f%% | %.1f%% |\n", a < 2 ? lb : "all", 100 * v[0] / t,
               100 * v[1] / t, 100 * v[2] / t);
    }
    double h = slr[14][P_HEFT] / cnt[14], pe = slr[14][P_PEFT] / cnt[14];
    printf("\nmean SLR: PEFT / HEFT = %.4f (%+.2f%%); cpu-only differs from heft on %ld DAGs\n",
           pe / h, 100 * (pe / h - 1), cpu_diff);
    return 0;
}

/* ------------------------------------------------------------- beyond */

/* The improve strategy against HEFT and PEFT (issue 11, item 5): n in
 * {50, 75, 100}, devices {4, 8, 16}, CCR {0.1, 1, 10}, heterogeneity beta
 * {0.5, 0.75, 1.0}, alpha 1; reps DAGs per cell, seeded apart from the
 * tests' graphs. Prints the mean makespan relative to HEFT, how often each
 * is worse than HEFT, and the planning time. */
static int mode_beyond(int reps, uint64_t seed)
{
    static const double BN[] = {50, 75, 100}, BD[] = {4, 8, 16}, BB[] = {0.5, 0.75, 1.0};
    double sum_p = 0, sum_i = 0, worst_i = 0, t_h = 0, t_i = 0;
    long dags = 0, i_worse = 0, p_worse = 0, i_better = 0, i_below_p = 0;
    double by_ccr[3][2] = {{0}};
    long n_ccr[3] = {0};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++)
                for (int e = 0; e < 3; e++)
                    for (int rep = 0; rep < reps; rep++) {
                        uint64_t s = seed * 7919u + (uint64_t)dags++;
                        dag g;
                        gen_dag(&g, splitmix(&s), (size_t)BN[a], (size_t)BD[c], 1.0, BB[e],
                                CCRS[b]);
                        double t0 = now_s();
                        double h = plan_with(&g, SYNOR_STRATEGY_HEFT, 0, NULL);
                        double t1 = now_s();
                        double pe = plan_with(&g, SYNOR_STRATEGY_PEFT, 0, NULL);
                        double t2 = now_s();
                        double im = plan_with(&g, SYNOR_STRATEGY_IMPROVE, 0, NULL);
                        double t3 = now_s();
                        t_h += t1 - t0;
                        t_i += t3 - t2;
                        sum_p += pe / h;
                        sum_i += im / h;
                        worst_i = im / h > worst_i ? im / h : worst_i;
                        i_worse += im > h * (1 + 1e-9);
                        p_worse += pe > h * (1 + 1e-9);
                        i_better += im < h * (1 - 1e-9);
                        i_below_p += im < pe * (1 - 1e-9);
                        by_ccr[b][0] += pe / h;
                        by_ccr[b][1] += im / h;
                        n_ccr[b]++;
                        dag_free(&g);
                    }
    printf("beyond: %ld DAGs (n 50/75/100 x devices 4/8/16 x CCR 0.1/1/10 x beta 0.5/0.75/1, "
           "%d each), seed %llu; every plan valid\n\n",
           dags, reps, (unsigned long long)seed);
    printf("| | PEFT | improve |\n|---|---|---|\n");
    printf("| mean makespan / HEFT's | %.4f | %.4f |\n", sum_p / (double)dags,
           sum_i / (double)dags);
    for (int b = 0; b < 3; b++)
        printf("| ... CCR %g | %.4f | %.4f |\n", CCRS[b], by_ccr[b][0] / (double)n_ccr[b],
               by_ccr[b][1] / (double)n_ccr[b]);
    printf("| DAGs worse than HEFT | %ld | %ld |\n", p_worse, i_worse);
    printf("| DAGs better than HEFT | | %ld |\n", i_better);
    printf("| DAGs better than PEFT | | %ld |\n", i_below_p);
    printf("| worst makespan / HEFT's | | %.4f |\n", worst_i);
    printf("| mean planning time | HEFT %.2f ms | %.2f ms |\n", 1e3 * t_h / (double)dags,
           1e3 * t_i / (double)dags);
    return 0;
}

/* --------------------------------------------------------------- exact */

static int mode_exact(int reps, uint64_t seed, uint64_t node_limit)
{
    static const size_t EN[] = {8, 10, 12};
    printf("exact: %d DAGs per (n, devices), devices 2-4, alpha, beta, CCR drawn from the "
           "quality sets; node limit %llu (0: none), time limit %g s\n\n",
           reps, (unsigned long long)node_limit, SYNOR_EXACT_TIME_LIMIT_DEFAULT);
    printf("| n | DAGs | proven optimal | HEFT gap mean | HEFT gap max | PEFT gap mean | "
           "PEFT gap max | HEFT optimal | PEFT optimal | exact time mean | max | worst gap at "
           "(CCR, alpha, beta, devices) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    long dags = 0;
    double cg[3][2] = {{0}}, cn[3] = {0}; /* mean gap per CCR */
    for (int a = 0; a < 3; a++) {
        double gs[2] = {0}, gm[2] = {0}, tsum = 0, tmax = 0, worst[4] = {0}, wg = -1;
        long proven = 0, hits[2] = {0}, total = 0;
        for (size_t d = 2; d <= 4; d++)
            for (int rep = 0; rep < reps; rep++) {
                uint64_t s = seed * 1000003u + 7777777u + (uint64_t)dags++;
                size_t ci = below(&s, 3);
                double ccr = CCRS[ci], al = ALPHAS[below(&s, 3)],
                       be = BETAS[below(&s, 3)];
                dag g;
                gen_dag(&g, splitmix(&s), EN[a], d, al, be, ccr);
                double h[2];
                h[0] = plan_with(&g, SYNOR_STRATEGY_HEFT, 0, NULL);
                h[1] = plan_with(&g, SYNOR_STRATEGY_PEFT, 0, NULL);
                int opt = 0;
                double t0 = now_s();
                double ex = plan_with(&g, SYNOR_STRATEGY_EXACT, node_limit, &opt);
                double dt = now_s() - t0;
                tsum += dt;
                tmax = fmax(tmax, dt);
                total++;
                for (int k = 0; k < 2; k++)
                    if (ex > h[k] * (1 + 1e-9)) {
                        fprintf(stderr, "bench_planner: exact %.9g worse than %s %.9g\n", ex,
                                k ? "peft" : "heft", h[k]);
                        abort();
                    }
                if (opt) { /* gaps only against a proven optimum */
                    proven++;
                    cn[ci]++;
                    for (int k = 0; k < 2; k++) {
                        double gap = h[k] / ex - 1;
                        cg[ci][k] += gap;
                        gs[k] += gap;
                        gm[k] = fmax(gm[k], gap);
                        hits[k] += gap < 1e-9;
                        if (gap > wg) {
                            wg = gap;
                            worst[0] = ccr, worst[1] = al, worst[2] = be, worst[3] = (double)d;
                        }
                    }
                }
                dag_free(&g);
            }
        double pv = proven ? (double)proven : 1;
        printf("| %zu | %ld | %ld | %.2f%% | %.1f%% | %.2f%% | %.1f%% | %.0f%% | %.0f%% | %.3f s "
               "| %.2f s | %g, %g, %g, %g |\n",
               EN[a], total, proven, 100 * gs[0] / pv, 100 * gm[0], 100 * gs[1] / pv,
               100 * gm[1], 100 * (double)hits[0] / pv, 100 * (double)hits[1] / pv,
               tsum / (double)total, tmax, worst[0], worst[1], worst[2], worst[3]);
    }
    printf("\nexact <= HEFT and exact <= PEFT on every DAG (checked); gaps over the proven "
           "optima only\n\n| CCR | proven DAGs | HEFT gap mean | PEFT gap mean |\n"
           "|---|---|---|---|\n");
    for (int c = 0; c < 3; c++)
        printf("| %g | %.0f | %.2f%% | %.2f%% |\n", CCRS[c], cn[c],
               100 * cg[c][0] / (cn[c] ? cn[c] : 1), 100 * cg[c][1] / (cn[c] ? cn[c] : 1));
    return 0;
}

/* --------------------------------------------------------------- speed */

static int mode_speed(size_t n, size_t d, int runs, uint64_t seed, const double *abc)
{
    /* big blocks straight from mmap and back on free, so that the resident
     * size follows what the planner holds (no dynamic threshold) */
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    dag g;
    double t0 = now_s();
    gen_dag(&g, seed, n, d, abc[0], abc[1], abc[2]);
    double gen = now_s() - t0;
    size_t in_bytes = n * d * sizeof(double) + (n + 1 + g.m) * sizeof(size_t) +
                      g.m * sizeof(double) + d * d * sizeof(double);
    printf("speed: tasks=%zu edges=%zu devices=%zu alpha=%g beta=%g ccr=%g generate_s=%.3f "
           "problem_mib=%.2f\n",
           n, g.m, d, abc[0], abc[1], abc[2], gen, (double)in_bytes / 1048576.0);
    static const synor_strategy ST[] = {SYNOR_STRATEGY_HEFT, SYNOR_STRATEGY_PEFT};
    for (int k = 0; k < 2; k++) {
        synor_plan_options o;
        synor_plan_options_init(&o);
        o.strategy = ST[k];
        double *t = xcalloc((size_t)runs, sizeof *t), ms = -1;
        long peak_kb = -1;
        for (int r = 0; r < runs; r++) {
            int memok = r == 0 && reset_peak() == 0;
            long rss0 = status_kb("VmRSS:");
            synor_plan *p = NULL;
            double a = now_s();
            if (synor_plan_problem(&g.pb, &o, &p))
                die("plan");
            t[r] = now_s() - a;
            if (memok)
                peak_kb = status_kb("VmHWM:") - rss0;
            if (r == 0 && synor_plan_validate(p, &g.pb)) {
                fprintf(stderr, "bench_planner: INVALID plan: %s\n", synor_errmsg());
                abort();
            }
            if (ms >= 0 && p->makespan != ms) {
                fprintf(stderr, "bench_planner: runs disagree on the makespan\n");
                abort();
            }
            ms = p->makespan;
            synor_plan_destroy(p);
        }
        double mn = t[0], mx = t[0];
        for (int r = 1; r < runs; r++) {
            mn = fmin(mn, t[r]);
            mx = fmax(mx, t[r]);
        }
        double med = median(t, (size_t)runs), pk = (double)peak_kb * 1024;
        printf("speed strategy=%s tasks=%zu edges=%zu devices=%zu runs=%d median_s=%.4f "
               "min_s=%.4f max_s=%.4f peak_mib=%.2f bytes_per_task=%.1f "
               "bytes_per_task_edge=%.1f makespan=%.6g\n",
               synor_strategy_name(ST[k]), n, g.m, d, runs, med, mn, mx, pk / 1048576.0,
               pk / (double)n, pk / (double)(n + g.m), ms);
        free(t);
    }
    dag_free(&g);
    return 0;
}

/* ----------------------------------------------------------------- sim */

/* A layered workload: layers of `width` tasks; even layers matmul fp32
 * 128 x 128 x 128, odd layers gelu on 16,384 fp32 elements; each task
 * produces one 64 KiB datum and consumes those of two tasks of the layer
 * before it (j and (31 j + l) mod width; one if they coincide). */
static synor_workload *sim_workload(size_t n, size_t width)
{
    synor_workload *w = NULL;
    if (synor_workload_create("planner-bench", &w))
        die("workload");
    size_t *out = xcalloc(n, sizeof *out);
    char name[32];
    for (size_t i = 0; i < n; i++) {
        size_t l = i / width, j = i % width, cons[2], nc = 0;
        snprintf(name, sizeof name, "x%zu", i);
        if (synor_workload_add_data(w, name, 65536, &out[i]))
            die("add data");
        if (l > 0) {
            size_t base = (l - 1) * width, j2 = (31 * j + l) % width;
            cons[nc++] = out[base + j];
            if (j2 != j)
                cons[nc++] = out[base + j2];
        }
        synor_task_desc t;
        memset(&t, 0, sizeof t);
        snprintf(name, sizeof name, "t%zu", i);
        t.id = name;
        t.priority = SYNOR_PRIORITY_NORMAL;
        t.op.dtype = SYNOR_DTYPE_FP32;
        if (l % 2 == 0) {
            t.op.type = SYNOR_OP_MATMUL;
            t.op.dims.m = t.op.dims.n = t.op.dims.k = 128;
        } else {
            t.op.type = SYNOR_OP_GELU;
            t.op.dims.elements = 16384;
        }
        if (synor_op_derive(&t.op))
            die("op");
        t.produces = &out[i];
        t.n_produces = 1;
        t.consumes = cons;
        t.n_consumes = nc;
        if (synor_workload_add_task(w, &t, NULL))
            die("add task");
    }
    free(out);
    if (synor_workload_finish(w))
        die("finish");
    return w;
}

static int mode_sim(size_t n, size_t width, const char *fabric, int runs)
{
    synor_catalog *cat = NULL;
    synor_fabric *f = NULL;
    synor_cost *c = NULL;
    synor_plan *p = NULL;
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat))
        die("catalog");
    if (synor_fabric_load_builtin(cat, fabric, &f))
        die("fabric");
    double t0 = now_s();
    synor_workload *w = sim_workload(n, width);
    double t1 = now_s();
    if (synor_cost_create(w, f, &c))
        die("cost");
    double t2 = now_s();
    synor_plan_options o;
    synor_plan_options_init(&o);
    if (synor_plan_create(c, &o, &p))
        die("plan");
    double t3 = now_s();
    size_t d = synor_fabric_device_count(f), *per = xcalloc(d, sizeof *per), edges = 0;
    for (size_t i = 0; i < n; i++) {
        per[p->device[i]]++;
        edges += synor_workload_task(w, i)->n_deps;
    }
    printf("sim: tasks=%zu edges=%zu fabric=%s devices=%zu build_s=%.2f cost_s=%.2f "
           "heft_plan_s=%.2f planned_makespan=%.6g\ntasks per device:",
           n, edges, fabric, d, t1 - t0, t2 - t1, t3 - t2, p->makespan);
    for (size_t q = 0; q < d; q++)
        printf(" %s=%zu", synor_fabric_device_at(f, q)->name, per[q]);
    printf("\n");
    double *t = xcalloc((size_t)runs, sizeof *t);
    for (int r = 0; r < runs; r++) {
        synor_trace *tr = NULL;
        double a = now_s();
        if (synor_simulate(c, p, &tr))
            die("simulate");
        t[r] = now_s() - a;
        /* each task has one end event, each hop one latency event and one
         * current completion event; the rest are completions superseded
         * when a link's share changed */
        uint64_t useful = (uint64_t)tr->n_tasks + 2 * (uint64_t)tr->n_transfers;
        printf("sim run=%d simulate_s=%.3f events=%llu events_per_s=%.0f useful_events=%llu "
               "useful_per_s=%.0f superseded=%llu tasks_per_s=%.0f transfer_hops=%zu "
               "makespan=%.6g\n",
               r, t[r], (unsigned long long)tr->events, (double)tr->events / t[r],
               (unsigned long long)useful, (double)useful / t[r],
               (unsigned long long)(tr->events - useful), (double)tr->n_tasks / t[r],
               tr->n_transfers, tr->makespan);
        synor_trace_destroy(tr);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("sim median_simulate_s=%.3f peak_rss_mib=%.0f\n", median(t, (size_t)runs),
           (double)ru.ru_maxrss / 1024.0);
    free(t);
    free(per);
    synor_plan_destroy(p);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_catalog_destroy(cat);
    return 0;
}

/* --------------------------------------------------------------- files */

static FILE *open_out(const char *dir, const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    return f;
}

static void close_out(FILE *f, const char *path)
{
    if (ferror(f) | fclose(f)) {
        fprintf(stderr, "bench_planner: cannot write %s\n", path);
        exit(1);
    }
}

static int mode_files(const char *dir, size_t n, size_t d, uint64_t seed, const double *abc,
                      int digits)
{
    dag g;
    gen_dag(&g, seed, n, d, abc[0], abc[1], abc[2]);
    char path[4096];
    FILE *f = open_out(dir, "fabric.json", path, sizeof path);
    fprintf(f, "{\n  \"format\": \"synor-fabric/1\",\n  \"name\": \"bench-%zu-processors\",\n"
               "  \"currency\": \"USD\",\n  \"notes\": \"bench_planner files: %zu abstract "
               "processors for a workload of cost rows (exec_s) and edge costs (comm_s)\",\n"
               "  \"nodes\": [{\"name\": \"host\"}],\n  \"devices\": [\n",
            d, d);
    for (size_t p = 0; p < d; p++)
        fprintf(f, "    {\"name\": \"P%zu\", \"profile\": \"amd-epyc-9654\", \"node\": \"host\"}%s\n",
                p + 1, p + 1 < d ? "," : "");
    fprintf(f, "  ]\n}\n");
    close_out(f, path);
    f = open_out(dir, "workload.json", path, sizeof path);
    fprintf(f, "{\"format\": \"synor-workload/1\", \"name\": \"bench-%zu-tasks\", \"tasks\": [\n", n);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "{\"id\": \"t%zu\", \"exec_s\": [", i);
        for (size_t p = 0; p < d; p++)
            fprintf(f, "%s%.*g", p ? ", " : "", digits, g.exec[i * d + p]);
        fprintf(f, "]");
        if (g.off[i + 1] > g.off[i]) {
            fprintf(f, ", \"deps\": [");
            for (size_t e = g.off[i]; e < g.off[i + 1]; e++)
                fprintf(f, "%s{\"task\": \"t%zu\", \"comm_s\": %.*g}", e > g.off[i] ? ", " : "",
                        g.pred[e], digits, g.bytes[e]);
            fprintf(f, "]");
        }
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "]}\n");
    close_out(f, path);
    int optimal;
    double ms = plan_with(&g, SYNOR_STRATEGY_HEFT, 0, &optimal);
    printf("files: dir=%s tasks=%zu edges=%zu devices=%zu alpha=%g beta=%g ccr=%g digits=%d "
           "heft_makespan=%.6f\n",
           dir, n, g.m, d, abc[0], abc[1], abc[2], digits, ms);
    dag_free(&g);
    return 0;
}

static int mode_phases(const char *dir)
{
    char wpath[4096], fpath[4096], ppath[4096];
    snprintf(wpath, sizeof wpath, "%s/workload.json", dir);
    snprintf(fpath, sizeof fpath, "%s/fabric.json", dir);
    snprintf(ppath, sizeof ppath, "%s/plan.json", dir);
    double t[12];
    char *text;
    size_t len;
    synor__jdoc *doc;
    synor_catalog *cat = NULL;
    synor_fabric *f = NULL;
    synor_workload *w = NULL;
    synor_cost *c = NULL;
    synor_plan *p = NULL;
    synor_plan_options o;
    synor_plan_options_init(&o);
    /* the steps of synor plan --json, in its order */
    t[0] = now_s();
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat) ||
        synor_fabric_open(cat, fpath, &f))
        die("fabric");
    t[1] = now_s();
    if (synor_workload_load_file(wpath, &w))
        die("workload");
    t[2] = now_s();
    if (synor_cost_create(w, f, &c))
        die("cost");
    t[3] = now_s();
    if (synor_plan_create(c, &o, &p))
        die("plan");
    t[4] = now_s();
    char *j = synor_plan_to_json(p, c);
    FILE *out = j ? fopen(ppath, "w") : NULL;
    if (!out || fputs(j, out) < 0 || fclose(out))
        die("plan json");
    t[5] = now_s();
    double ms = p->makespan;
    free(j);
    synor_plan_destroy(p);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_catalog_destroy(cat);
    t[6] = now_s();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    /* then, apart: reading the file, and parsing it into a whole document
     * (what the loader did before it streamed the tasks) */
    t[7] = now_s();
    if (synor__read_file(wpath, &text, &len))
        die("read");
    t[8] = now_s();
    if (synor__json_parse(text, len, wpath, &doc))
        die("parse");
    t[9] = now_s();
    synor__jdoc_free(doc);
    free(text);
    printf("phases: fabric_s=%.4f load_s=%.4f cost_s=%.4f plan_s=%.4f write_s=%.4f free_s=%.4f "
           "total_s=%.4f read_s=%.4f dom_parse_s=%.4f makespan=%.6f peak_rss_mib=%.0f\n",
           t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3], t[5] - t[4], t[6] - t[5],
           t[6] - t[0], t[8] - t[7], t[9] - t[8], ms, (double)ru.ru_maxrss / 1024.0);
    return 0;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s quality|exact|speed|sim|files|phases [--reps R] [--runs R] [--seed S] "
                        "[--tasks N] [--devices D] [--node-limit N] [--width W] "
                        "[--fabric NAME] [--alpha A] [--beta B] [--ccr C] [--sizes A,B] "
                        "[--dir DIR] [--digits G]\n",
                argv[0]);
        return 2;
    }
    const char *mode = argv[1], *fabric = "two-node-h100", *dir = NULL;
    int reps = 10, runs = 5, digits = 17;
    uint64_t seed = 1, node_limit = 0;
    size_t tasks = 0, devices = 16, width = 1000;
    double abc[3] = {1, 0.5, 1}; /* speed: alpha, beta, CCR */
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--reps"))
            reps = atoi(v);
        else if (!strcmp(k, "--runs"))
            runs = atoi(v);
        else if (!strcmp(k, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--tasks"))
            tasks = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--devices"))
            devices = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--node-limit"))
            node_limit = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--width"))
            width = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--fabric"))
            fabric = v;
        else if (!strcmp(k, "--dir"))
            dir = v;
        else if (!strcmp(k, "--digits"))
            digits = atoi(v);
        else if (!strcmp(k, "--sizes")) {
            if (sscanf(v, "%lf,%lf", &NS[0], &NS[1]) != 2 || NS[0] < 2 || NS[1] < 2) {
                fprintf(stderr, "--sizes takes two task counts, e.g. 100,1000\n");
                return 2;
            }
        } else if (!strcmp(k, "--alpha"))
            abc[0] = atof(v);
        else if (!strcmp(k, "--beta"))
            abc[1] = atof(v);
        else if (!strcmp(k, "--ccr"))
            abc[2] = atof(v);
        else {
            fprintf(stderr, "unknown option %s\n", k);
            return 2;
        }
    }
    if (reps < 1 || runs < 1 || devices < 1 || width < 1 || !(abc[0] > 0) || digits < 1 ||
        digits > 17) {
        fprintf(stderr, "reps, runs, devices and width must be positive, digits 1 to 17\n");
        return 2;
    }
    if (!strcmp(mode, "quality"))
        return mode_quality(reps, seed);
    if (!strcmp(mode, "exact"))
        return mode_exact(reps, seed, node_limit);
    if (!strcmp(mode, "beyond"))
        return mode_beyond(reps, seed);
    if (!strcmp(mode, "speed"))
        return mode_speed(tasks ? tasks : 100000, devices, runs, seed, abc);
    if (!strcmp(mode, "files")) {
        if (!dir) {
            fprintf(stderr, "files: give --dir DIR\n");
            return 2;
        }
        return mode_files(dir, tasks ? tasks : 100000, devices, seed, abc, digits);
    }
    if (!strcmp(mode, "phases")) {
        if (!dir) {
            fprintf(stderr, "phases: give --dir DIR\n");
            return 2;
        }
        return mode_phases(dir);
    }
    if (!strcmp(mode, "sim"))
        return mode_sim(tasks ? tasks : 1000000, width, fabric, runs);
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
