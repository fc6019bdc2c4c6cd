/* bench_exact.c - the exact planner beyond 15 tasks and the heuristics
 * against published optima (issue 11, item 5). Results and commands:
 * docs/BENCHMARKS.md, "Exact planner and the STG set".
 *
 *   bench_exact exact30 [--reps R] [--seed S] [--time-limit SEC] [--threads T] [--job K]
 *   bench_exact stg     --dir DIR --opt FILE [--time-limit SEC] [--threads T] [--only STR]
 *
 * exact30: random heterogeneous DAGs from bench_planner's generator
 * (bench_dag.h) with 20, 25 and 30 tasks on 3 and 4 devices, R per (n,
 * devices), alpha, beta and CCR drawn from the quality sets (alpha 0.5, 1,
 * 2; beta 0.1, 0.5, 1; CCR 0.1, 1, 10), seeds apart from the tests' (the
 * tests use their own LCG). Each is planned by exact within the time limit
 * (default 60 s): how many are proven optimal, the time to prove (median,
 * max), the gap (makespan - bound) / bound of the rest, and HEFT's and
 * improve's excess over exact's makespan. --job K plans only the K-th DAG
 * (0 to 6R - 1, in the table's order: R per row) and prints one line for
 * it (a short run for each graph).
 *
 * stg: the Standard Task Graph set (Kasahara lab, Waseda University):
 * DIR holds the .stg files, FILE lists the published optima, one
 * "PATH,PROCESSORS,OPTIMUM" a line (PATH relative to DIR, e.g.
 * "50/rand0000.stg,4,66"). Each listed (graph, processors) is planned by
 * HEFT, PEFT, improve and exact (default 2 s) on identical processors with
 * free communication; per processor count and graph size: mean and worst %
 * above the optimum, how often exact proved optimality. A plan shorter than
 * the published optimum aborts (the data or a planner is wrong). Each
 * problem exact leaves above its optimum is named on stderr; --only STR
 * keeps the lines of FILE that contain STR (e.g. "50/rand0003.stg,8,").
 *
 * STG format: the number of tasks n (without the two dummies), then n + 2
 * lines "id time npred pred..." for ids 0 (the dummy entry) to n + 1 (the
 * dummy exit), predecessors with smaller ids; lines from '#' on are
 * comments. Every plan is checked with synor_plan_validate. --threads T
 * plans T problems at once (for a many-core machine; timings are per
 * problem). --verbose 1 prints one line per problem on stderr. */
#include <pthread.h>
#include <stdatomic.h>

#define BENCH_NAME "bench_exact"
#include "bench_dag.h"

static const double CCRS[] = {0.1, 1, 10}, ALPHAS[] = {0.5, 1, 2}, BETAS[] = {0.1, 0.5, 1};

typedef struct job {
    synor_sched_problem pb;
    void *owned[4];          /* freed after */
    const char *name;
    size_t n, d, size_class;
    double opt;              /* stg: the published optimum, or lower bound */
    double upper;            /* stg: the best known makespan when the optimum
                                is open (a 4th field), else 0 */
    double ms[4], bound, secs; /* heft, peft, improve, exact */
    double ccr, alpha, beta; /* exact30: the generator's parameters */
    int optimal;
} job;

static double time_limit = 0;
static const char *only;
static int verbose = 0;
static long pick = -1; /* exact30 --job */
static job *jobs;
static size_t n_jobs;
static atomic_size_t next_job;

static void run_one(job *j)
{
    static const synor_strategy ST[4] = {SYNOR_STRATEGY_HEFT, SYNOR_STRATEGY_PEFT,
                                         SYNOR_STRATEGY_IMPROVE, SYNOR_STRATEGY_EXACT};
    for (int k = 0; k < 4; k++) {
        synor_plan_options o;
        synor_plan_options_init(&o);
        o.strategy = ST[k];
        o.exact_time_limit = time_limit;
        synor_plan *p = NULL;
        double t0 = now_s();
        if (synor_plan_problem(&j->pb, &o, &p))
            die(synor_strategy_name(ST[k]));
        double dt = now_s() - t0;
        if (synor_plan_validate(p, &j->pb)) {
            fprintf(stderr, "bench_exact: INVALID %s plan of %s: %s\n", synor_strategy_name(ST[k]),
                    j->name ? j->name : "a random DAG", synor_errmsg());
            abort();
        }
        j->ms[k] = p->makespan;
        if (k == 3) {
            j->bound = p->bound;
            j->optimal = p->optimal;
            j->secs = dt;
            if (verbose)
                fprintf(stderr, "%s n %zu d %zu ccr %g alpha %g beta %g: heft %.4f improve %.4f exact %.4f bound %.4f%s "
                        "%.3f s\n", j->name ? j->name : "random", j->n, j->d, j->ccr, j->alpha, j->beta, j->ms[0],
                        j->ms[2], p->makespan, p->bound, p->optimal ? " (optimal)" : "", dt);
            if (p->bound > p->makespan * (1 + 1e-9) || p->makespan > j->ms[0] * (1 + 1e-9)) {
                fprintf(stderr, "bench_exact: exact's bound %.9g or makespan %.9g wrong\n",
                        p->bound, p->makespan);
                abort();
            }
        }
        synor_plan_destroy(p);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    for (size_t k; (k = atomic_fetch_add(&next_job, 1)) < n_jobs;)
        run_one(&jobs[k]);
    return NULL;
}

static void run_all(int threads)
{
    pthread_t t[64];
    atomic_store(&next_job, 0);
    for (int k = 0; k < threads; k++)
        if (pthread_create(&t[k], NULL, worker, NULL)) {
            fprintf(stderr, "bench_exact: cannot start a thread\n");
            exit(1);
        }
    for (int k = 0; k < threads; k++)
        pthread_join(t[k], NULL);
}

/* ------------------------------------------------------------- exact30 */

static int mode_exact30(int reps, uint64_t seed, int threads)
{
    static const size_t EN[] = {20, 25, 30}, ED[] = {3, 4};
    n_jobs = 3 * 2 * (size_t)reps;
    if (pick >= 0 && (size_t)pick >= n_jobs) {
        fprintf(stderr, "bench_exact: --job %ld: there are %zu DAGs (0 to %zu)\n", pick, n_jobs,
                n_jobs - 1);
        return 2;
    }
    jobs = xcalloc(n_jobs, sizeof *jobs);
    dag *g = xcalloc(n_jobs, sizeof *g);
    size_t k = 0;
    for (int a = 0; a < 3; a++)
        for (int c = 0; c < 2; c++)
            for (int r = 0; r < reps; r++, k++) {
                uint64_t s = seed * 2000003u + 99991u * (uint64_t)(a * 2 + c) + (uint64_t)r;
                double ccr = CCRS[below(&s, 3)], al = ALPHAS[below(&s, 3)],
                       be = BETAS[below(&s, 3)];
                gen_dag(&g[k], splitmix(&s), EN[a], ED[c], al, be, ccr);
                jobs[k].pb = g[k].pb;
                jobs[k].n = EN[a];
                jobs[k].d = ED[c];
                jobs[k].ccr = ccr;
                jobs[k].alpha = al;
                jobs[k].beta = be;
            }
    if (pick >= 0) {
        job *j = &jobs[pick];
        run_one(j);
        printf("exact30 job %ld (seed %llu, reps %d): n %zu devices %zu CCR %g alpha %g beta %g: "
               "HEFT %.4f improve %.4f exact %.4f bound %.4f%s in %.3f s\n",
               pick, (unsigned long long)seed, reps, j->n, j->d, j->ccr, j->alpha, j->beta,
               j->ms[0], j->ms[2], j->ms[3], j->bound, j->optimal ? " (optimal)" : "", j->secs);
        for (k = 0; k < n_jobs; k++)
            dag_free(&g[k]);
        free(g);
        free(jobs);
        return 0;
    }
    double t0 = now_s();
    run_all(threads);
    printf("exact30: %d DAGs per (n, devices), alpha, beta, CCR drawn from the quality sets, "
           "seed %llu, time limit %g s, %d thread(s), %.1f s in all\n\n",
           reps, (unsigned long long)seed, time_limit > 0 ? time_limit : 60.0, threads,
           now_s() - t0);
    printf("| n | devices | DAGs | proven optimal | time to prove median | max | unproven gap "
           "mean | max | HEFT over exact mean | max | improve over exact mean | max |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    k = 0;
    for (int a = 0; a < 3; a++)
        for (int c = 0; c < 2; c++) {
            double *tp = xcalloc((size_t)reps, sizeof *tp), gs = 0, gm = 0, hs = 0, hm = 0,
                   is = 0, im = 0;
            size_t np = 0, nu = 0;
            for (int r = 0; r < reps; r++, k++) {
                job *j = &jobs[k];
                if (j->optimal) {
                    tp[np++] = j->secs;
                } else {
                    double gap = j->bound > 0 ? j->ms[3] / j->bound - 1 : 0;
                    gs += gap;
                    gm = fmax(gm, gap);
                    nu++;
                }
                double h = j->ms[0] / j->ms[3] - 1, i = j->ms[2] / j->ms[3] - 1;
                hs += h;
                hm = fmax(hm, h);
                is += i;
                im = fmax(im, i);
                dag_free(&g[k]);
            }
            double tmax = 0;
            for (size_t x = 0; x < np; x++)
                tmax = fmax(tmax, tp[x]);
            double med = np ? median(tp, np) : 0;
            printf("| %zu | %zu | %d | %zu | %.3f s | %.3f s | %.2f%% | %.2f%% | %.2f%% | %.2f%% | "
                   "%.2f%% | %.2f%% |\n",
                   EN[a], ED[c], reps, np, med, tmax, nu ? 100 * gs / (double)nu : 0, 100 * gm,
                   100 * hs / reps, 100 * hm, 100 * is / reps, 100 * im);
            free(tp);
        }
    free(g);
    free(jobs);
    return 0;
}

/* ----------------------------------------------------------------- stg */

typedef struct stg {
    double *exec, *bytes; /* bytes: zeros, one per edge */
    size_t *off, *pred;
    size_t n; /* with the dummies */
} stg;

/* Reads an STG file for d identical processors; 0, or -1 after naming the
 * file, line and value. */
static int stg_read(const char *path, stg *g)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench_exact: %s: cannot open\n", path);
        return -1;
    }
    memset(g, 0, sizeof *g);
    char line[8192];
    size_t lineno = 0, n = 0, i = 0, m = 0, cap = 0;
    int have_n = 0, rc = -1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#'), *p = line, *end;
        if (hash)
            *hash = 0;
        unsigned long long v[3];
        int k = 0;
        for (; k < (have_n ? 3 : 1); k++) {
            v[k] = strtoull(p, &end, 10);
            if (end == p)
                break;
            p = end;
        }
        if (k == 0) {
            while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
                p++;
            if (*p) {
                fprintf(stderr, "bench_exact: %s:%zu: not a number: '%s'\n", path, lineno, p);
                goto out;
            }
            continue; /* blank or comment */
        }
        if (!have_n) {
            if (v[0] < 1 || v[0] > 100000) {
                fprintf(stderr, "bench_exact: %s:%zu: task count %llu out of range\n", path,
                        lineno, v[0]);
                goto out;
            }
            n = (size_t)v[0] + 2;
            have_n = 1;
            g->n = n;
            g->exec = xcalloc(n, sizeof *g->exec);
            g->off = xcalloc(n + 1, sizeof *g->off);
            continue;
        }
        if (i >= n) {
            fprintf(stderr, "bench_exact: %s:%zu: more than %zu task lines\n", path, lineno, n);
            goto out;
        }
        if (k < 3 || v[0] != i || v[2] > i) {
            fprintf(stderr, "bench_exact: %s:%zu: expected \"%zu time npred preds\" (npred "
                            "at most %zu)\n",
                    path, lineno, i, i);
            goto out;
        }
        g->exec[i] = (double)v[1];
        for (unsigned long long q = 0; q < v[2]; q++) {
            unsigned long long pr = strtoull(p, &end, 10);
            if (end == p || pr >= i) {
                fprintf(stderr, "bench_exact: %s:%zu: predecessor %llu of task %zu missing or "
                                "not before it\n",
                        path, lineno, q + 1, i);
                goto out;
            }
            p = end;
            if (m == cap) {
                cap = cap ? 2 * cap : 256;
                g->pred = realloc(g->pred, cap * sizeof *g->pred);
                if (!g->pred)
                    die("stg");
            }
            g->pred[m++] = (size_t)pr;
        }
        g->off[++i] = m;
    }
    if (!have_n || i != n) {
        fprintf(stderr, "bench_exact: %s: %zu task lines, expected %zu\n", path, i, n);
        goto out;
    }
    g->bytes = xcalloc(m, sizeof *g->bytes);
    rc = 0;
out:
    fclose(f);
    return rc;
}

static int mode_stg(const char *dir, const char *optfile, int threads)
{
    FILE *f = fopen(optfile, "r");
    if (!f) {
        fprintf(stderr, "bench_exact: %s: cannot open\n", optfile);
        return 1;
    }
    char line[1024];
    size_t cap = 0, lineno = 0;
    stg *gs = NULL;
    char **names = NULL;
    size_t n_graphs = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char path[512];
        unsigned procs, opt, upper = 0;
        if (line[0] == '\n' || line[0] == '#' || (only && !strstr(line, only)))
            continue;
        int got = sscanf(line, "%511[^,],%u,%u,%u", path, &procs, &opt, &upper);
        if (got < 3 || procs < 1 || procs > 64 || (got == 4 && upper < opt)) {
            fprintf(stderr, "bench_exact: %s:%zu: expected PATH,PROCESSORS,OPTIMUM or "
                            "PATH,PROCESSORS,LOWER,UPPER\n",
                    optfile, lineno);
            return 1;
        }
        size_t gi = 0;
        while (gi < n_graphs && strcmp(names[gi], path))
            gi++;
        if (gi == n_graphs) {
            names = realloc(names, (n_graphs + 1) * sizeof *names);
            gs = realloc(gs, (n_graphs + 1) * sizeof *gs);
            char full[1100];
            snprintf(full, sizeof full, "%s/%s", dir, path);
            if (!names || !gs || !(names[gi] = strdup(path)) || stg_read(full, &gs[gi]))
                return 1;
            n_graphs++;
        }
        if (n_jobs == cap) {
            cap = cap ? 2 * cap : 256;
            jobs = realloc(jobs, cap * sizeof *jobs);
            if (!jobs)
                die("stg");
        }
        job *j = &jobs[n_jobs++];
        memset(j, 0, sizeof *j);
        stg *g = &gs[gi];
        size_t d = procs, n = g->n;
        double *exec = xcalloc(n * d, sizeof *exec);
        for (size_t i = 0; i < n; i++)
            for (size_t p = 0; p < d; p++)
                exec[i * d + p] = g->exec[i];
        j->owned[0] = exec;
        j->pb = (synor_sched_problem){.n_tasks = n, .n_devices = d, .exec = exec,
                                      .pred_off = g->off, .pred = g->pred,
                                      .pred_bytes = g->bytes};
        j->name = names[gi];
        j->n = n - 2;
        j->d = d;
        j->opt = opt;
        j->upper = got == 4 ? upper : 0;
    }
    fclose(f);
    double t0 = now_s();
    run_all(threads);
    printf("stg: %zu (graph, processors) problems from %s, %zu graphs; exact time limit %g s, "
           "%d thread(s), %.1f s in all\n\n",
           n_jobs, optfile, n_graphs, time_limit > 0 ? time_limit : 2.0, threads, now_s() - t0);
    printf("| tasks | processors | problems | HEFT mean | worst | PEFT mean | worst | improve "
           "mean | worst | exact mean | worst | exact proven | exact = optimum |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    static const size_t SZ[] = {50, 100, 300, 500, 750, 1000, 1250, 1500, 2000, 2500, 3000, 5000},
                        PR[] = {2, 4, 8, 16};
    double all[4][2] = {{0}};
    size_t all_n = 0, open_n = 0, open_proven = 0, open_below = 0;
    for (size_t a = 0; a < sizeof SZ / sizeof *SZ; a++)
        for (size_t c = 0; c < 4; c++) {
            double sum[4] = {0}, worst[4] = {0};
            size_t cnt = 0, proven = 0, hit = 0;
            for (size_t k = 0; k < n_jobs; k++) {
                job *j = &jobs[k];
                if (j->n != SZ[a] || j->d != PR[c])
                    continue;
                if (j->upper > 0) { /* open: bounds only */
                    if (j->ms[3] < j->opt * (1 - 1e-9) ||
                        (j->optimal && j->ms[3] > j->upper * (1 + 1e-9))) {
                        fprintf(stderr, "bench_exact: %s on %zu: exact %g%s outside the "
                                        "published bounds [%g, %g]\n",
                                j->name, j->d, j->ms[3], j->optimal ? " (proven)" : "", j->opt,
                                j->upper);
                        abort();
                    }
                    open_n++;
                    open_proven += (size_t)j->optimal;
                    open_below += j->ms[3] < j->upper * (1 - 1e-9);
                    if (j->optimal)
                        fprintf(stderr, "bench_exact: %s on %zu processors (open, published "
                                        "bounds %g..%g): proven optimum %g\n",
                                j->name, j->d, j->opt, j->upper, j->ms[3]);
                    continue;
                }
                cnt++;
                for (int s = 0; s < 4; s++) {
                    double x = j->ms[s] / j->opt - 1;
                    if (x < -1e-9) {
                        fprintf(stderr, "bench_exact: %s on %zu: %g below the optimum %g\n",
                                j->name, j->d, j->ms[s], j->opt);
                        abort();
                    }
                    sum[s] += x;
                    worst[s] = fmax(worst[s], x);
                    all[s][0] += x;
                    all[s][1] = fmax(all[s][1], x);
                }
                proven += (size_t)j->optimal;
                if (j->optimal && j->ms[3] > j->opt * (1 + 1e-9)) {
                    fprintf(stderr, "bench_exact: %s on %zu: exact proved %g optimal, the "
                                    "published optimum is %g\n",
                            j->name, j->d, j->ms[3], j->opt);
                    abort();
                }
                hit += j->ms[3] <= j->opt * (1 + 1e-9);
                if (j->ms[3] > j->opt * (1 + 1e-9))
                    fprintf(stderr, "bench_exact: %s on %zu processors: exact %g (bound %g, "
                                    "%.2f s), optimum %g\n",
                            j->name, j->d, j->ms[3], j->bound, j->secs, j->opt);
                all_n++;
            }
            if (!cnt)
                continue;
            printf("| %zu | %zu | %zu ", SZ[a], PR[c], cnt);
            for (int s = 0; s < 4; s++)
                printf("| %.3f%% | %.2f%% ", 100 * sum[s] / (double)cnt, 100 * worst[s]);
            printf("| %zu | %zu |\n", proven, hit);
        }
    printf("| all | | %zu ", all_n);
    for (int s = 0; s < 4; s++)
        printf("| %.3f%% | %.2f%% ", 100 * all[s][0] / (double)(all_n ? all_n : 1),
               100 * all[s][1]);
    printf("| | |\n");
    printf("\n%zu problems whose optimum is open (published lower and upper bounds) are not in "
           "the table: exact proved %zu of them optimal (listed on stderr) and beat the "
           "published upper bound on %zu.\n",
           open_n, open_proven, open_below);
    for (size_t k = 0; k < n_jobs; k++)
        free(jobs[k].owned[0]);
    for (size_t g = 0; g < n_graphs; g++) {
        free(gs[g].exec);
        free(gs[g].bytes);
        free(gs[g].off);
        free(gs[g].pred);
        free(names[g]);
    }
    free(gs);
    free(names);
    free(jobs);
    return 0;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "exact30") && strcmp(argv[1], "stg"))) {
        fprintf(stderr, "usage: %s exact30 [--reps R] [--seed S] [--time-limit SEC] "
                        "[--threads T] [--job K]\n       %s stg --dir DIR --opt FILE [--time-limit SEC] "
                        "[--threads T] [--only STR]\n",
                argv[0], argv[0]);
        return 2;
    }
    int reps = 10, threads = 1;
    uint64_t seed = 1;
    const char *dir = NULL, *opt = NULL;
    for (int i = 2; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!v) {
            fprintf(stderr, "%s needs a value\n", k);
            return 2;
        }
        if (!strcmp(k, "--reps"))
            reps = (int)strtol(v, &end, 10);
        else if (!strcmp(k, "--seed"))
            seed = strtoull(v, &end, 10);
        else if (!strcmp(k, "--threads"))
            threads = (int)strtol(v, &end, 10);
        else if (!strcmp(k, "--time-limit"))
            time_limit = strtod(v, &end);
        else if (!strcmp(k, "--dir"))
            dir = v;
        else if (!strcmp(k, "--opt"))
            opt = v;
        else if (!strcmp(k, "--only"))
            only = v;
        else if (!strcmp(k, "--job"))
            pick = strtol(v, &end, 10);
        else if (!strcmp(k, "--verbose"))
            verbose = (int)strtol(v, &end, 10);
        else {
            fprintf(stderr, "unknown option %s\n", k);
            return 2;
        }
        if (end && (end == v || *end)) {
            fprintf(stderr, "%s: not a number: '%s'\n", k, v);
            return 2;
        }
    }
    if (reps < 1 || threads < 1 || threads > 64 || time_limit < 0) {
        fprintf(stderr, "reps above 0, threads 1 to 64, time limit not negative\n");
        return 2;
    }
    if (!strcmp(argv[1], "exact30"))
        return mode_exact30(reps, seed, threads);
    if (!dir || !opt) {
        fprintf(stderr, "stg: give --dir DIR and --opt FILE\n");
        return 2;
    }
    if (time_limit == 0)
        time_limit = 2;
    return mode_stg(dir, opt, threads);
}
