/* test_calibrate.c - the local fabric calibrated on the performance model
 * of real runs (synor_exec_task_keys, synor_whatif_fabric_workers,
 * synor_whatif_calibrate). The fallbacks are checked exactly on a model
 * written by hand; the prediction against real runs of this machine with a
 * tolerance wide enough for a noisy shared machine (the benchmark,
 * bench/run_sim_fidelity.sh, measures the 5% goal), on medians. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synor.h"
#include "test.h"

#define MLP SYNOR_SOURCE_DIR "/workloads/mlp-fp32.json"

static void catalog(synor_catalog **cat, synor_detection **det)
{
    ASSERT_OK(synor_catalog_create(cat));
    ASSERT_OK(synor_catalog_load_builtin(*cat));
    ASSERT_OK(synor_detect_run(*cat, SYNOR_DETECT_HOST, det));
}

static void cpu_runtime(synor_perfmodel *pm, unsigned workers, synor_runtime **rt)
{
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.opencl = SYNOR_OPENCL_OFF;
    cfg.cuda = 0; /* the CPU alone, as the CPU fabric: the default opens every GPU */
    cfg.cpu_workers = workers;
    cfg.perfmodel = pm;
    ASSERT_OK(synor_runtime_create(&cfg, rt));
    ASSERT_OK(synor_runtime_start(*rt));
}

static int count_device(const synor_perfmodel_entry *e, void *user)
{
    *(size_t *)user += strcmp(e->device, SYNOR_PERFMODEL_HOST) != 0;
    return 0;
}

/* The model's entries less the host's (SYNOR_PERFMODEL_HOST). */
static size_t not_host(const synor_perfmodel *pm)
{
    size_t n = 0;
    return synor_perfmodel_foreach(pm, count_device, &n) ? SIZE_MAX : n;
}

TEST(task_keys_are_what_a_real_run_records)
{
    synor_workload *w;
    ASSERT_OK(synor_workload_load_file(MLP, &w));
    size_t n = synor_workload_count(w);
    const char **kernel = calloc(n, sizeof *kernel);
    uint64_t *fp = calloc(n, sizeof *fp);
    ASSERT_OK(synor_exec_task_keys(w, kernel, fp));
    synor_perfmodel *pm;
    ASSERT_OK(synor_perfmodel_create(&pm));
    synor_perfmodel_set_min_samples(pm, 1);
    synor_runtime *rt;
    cpu_runtime(pm, 1, &rt);
    synor_exec_result r;
    ASSERT_OK(synor_exec_workload(rt, w, 1, NULL, &r));
    synor_runtime_destroy(rt);
    /* every task's key has an entry, and the model has no other */
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        double s;
        unsigned samples;
        ASSERT_OK(synor_perfmodel_estimate(pm, kernel[i], fp[i], "cpu", &s, &samples));
        ASSERT(samples >= 1 && s > 0);
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= kernel[j] == kernel[i] && fp[j] == fp[i];
        distinct += !seen;
    }
    /* ... and the runtime's dispatch times on the device (and the host's
     * side of each call, synor/perfmodel.h) */
    ASSERT_EQ(not_host(pm), distinct + 1);
    double dispatch;
    ASSERT_OK(synor_perfmodel_estimate(pm, SYNOR_PERFMODEL_DISPATCH, 0, "cpu", &dispatch, NULL));
    ASSERT(dispatch >= 0);
    /* a workload that cannot run for real has no keys */
    synor_workload *tiny;
    synor_llm_config m;
    ASSERT_OK(synor_llm_preset("tiny", &m));
    ASSERT_OK(synor_decompose_llm_inference(&m, 1, 8, 2, &tiny));
    const char **k2 = calloc(synor_workload_count(tiny), sizeof *k2);
    uint64_t *f2 = calloc(synor_workload_count(tiny), sizeof *f2);
    ASSERT_EQ(synor_exec_task_keys(tiny, k2, f2), SYNOR_ENOTSUP);
    free(k2);
    free(f2);
    synor_workload_destroy(tiny);
    synor_perfmodel_destroy(pm);
    free(kernel);
    free(fp);
    synor_workload_destroy(w);
}

TEST(calibration_prefers_the_model_then_fits_the_roofline)
{
    synor_detection *det;
    synor_catalog *cat;
    catalog(&cat, &det);
    synor_fabric *f;
    ASSERT_OK(synor_whatif_fabric_workers(cat, det, 3, NULL, 0, &f));
    ASSERT_EQ(synor_fabric_device_count(f), 3); /* a host without CUDA: the workers */
    ASSERT_STREQ(synor_fabric_device_at(f, 1)->name, "cpu0.1");
    ASSERT_STREQ(synor_fabric_device_at(f, 0)->profile->id, "local-cpu0-worker3");
    const synor_caps *whole = synor_device_caps(synor_detection_device(det, 0));
    ASSERT_NEAR(synor_device_caps(synor_fabric_device_at(f, 2)->dev)->peak[SYNOR_DTYPE_FP32].dense,
                whole->peak[SYNOR_DTYPE_FP32].dense / 3, 1e-12);
    synor_workload *w, *cw;
    ASSERT_OK(synor_workload_load_file(MLP, &w));
    size_t n = synor_workload_count(w);
    const char **kernel = calloc(n, sizeof *kernel);
    uint64_t *fp = calloc(n, sizeof *fp);
    ASSERT_OK(synor_exec_task_keys(w, kernel, fp));
    synor_cost *roof;
    ASSERT_OK(synor_cost_create(w, f, &roof));
    /* The model knows one matmul footprint only: 4 x its roofline. */
    size_t known = SIZE_MAX, other = SIZE_MAX, elementwise = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(kernel[i], "matmul") && known == SIZE_MAX)
            known = i;
        else if (!strcmp(kernel[i], "matmul") && fp[i] != fp[known] && other == SIZE_MAX)
            other = i;
        else if (strcmp(kernel[i], "matmul") && elementwise == SIZE_MAX)
            elementwise = i;
    }
    ASSERT(known != SIZE_MAX && other != SIZE_MAX && elementwise != SIZE_MAX);
    synor_perfmodel *pm;
    ASSERT_OK(synor_perfmodel_create(&pm));
    double t_known = 4 * synor_cost_time(roof, known, 0);
    for (int s = 0; s < 3; s++)
        synor_perfmodel_record(pm, "matmul", fp[known], "cpu", t_known);
    synor_whatif_calibration ci;
    ASSERT_OK(synor_whatif_calibrate(f, w, pm, &cw, &ci));
    ASSERT_EQ(synor_workload_count(cw), n);
    ASSERT_EQ(ci.tasks, n);
    ASSERT_EQ(ci.local_devices, 3);
    ASSERT_NEAR(ci.overall_factor, 4, 1e-9);
    const synor_task *tk = synor_workload_task(cw, known), *to = synor_workload_task(cw, other),
                     *te = synor_workload_task(cw, elementwise);
    ASSERT_EQ(tk->n_exec, 3);
    for (size_t d = 0; d < 3; d++) {
        ASSERT_NEAR(tk->exec_s[d], t_known, 1e-12);                             /* the model */
        ASSERT_NEAR(to->exec_s[d], 4 * synor_cost_time(roof, other, d), 1e-12); /* kernel fit */
        ASSERT_NEAR(te->exec_s[d], 4 * synor_cost_time(roof, elementwise, d), 1e-12); /* all */
    }
    ASSERT(ci.from_model >= 3 && ci.from_kernel_fit >= 3 && ci.from_overall_fit >= 3);
    ASSERT_EQ(ci.from_model + ci.from_kernel_fit + ci.from_overall_fit + ci.from_roofline, 3 * n);
    ASSERT_EQ(ci.from_roofline, 0);
    ASSERT(isnan(ci.dispatch_s));
    synor_workload_destroy(cw);
    /* the runtime's dispatch time, its mean, is added to measured and
     * fitted times */
    synor_perfmodel_record(pm, SYNOR_PERFMODEL_DISPATCH, 0, "cpu", 1e-5);
    synor_perfmodel_record(pm, SYNOR_PERFMODEL_DISPATCH, 0, "cpu", 4e-5);
    synor_perfmodel_record(pm, SYNOR_PERFMODEL_DISPATCH, 0, "cpu", 1e-5);
    ASSERT_OK(synor_whatif_calibrate(f, w, pm, &cw, &ci));
    ASSERT_NEAR(ci.dispatch_s, 2e-5, 1e-9);
    ASSERT_NEAR(synor_workload_task(cw, known)->exec_s[2], t_known + 2e-5, 1e-12);
    ASSERT_NEAR(synor_workload_task(cw, elementwise)->exec_s[0],
                4 * synor_cost_time(roof, elementwise, 0) + 2e-5, 1e-12);
    synor_workload_destroy(cw);
    /* no model: the roofline, unchanged */
    ASSERT_OK(synor_whatif_calibrate(f, w, NULL, &cw, &ci));
    ASSERT_EQ(ci.from_roofline, 3 * n);
    ASSERT(isnan(ci.overall_factor));
    ASSERT_NEAR(synor_workload_task(cw, other)->exec_s[1], synor_cost_time(roof, other, 1), 1e-12);
    synor_workload_destroy(cw);
    synor_cost_destroy(roof);
    synor_perfmodel_destroy(pm);
    free(kernel);
    free(fp);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
}

/* A run fabric with the CPU as its workers (synor_whatif_run_device
 * .workers): one device per worker with its share of the CPU, and the
 * calibration finds the runtime's "cpu" entries for every one of them. */
TEST(a_run_fabric_can_have_the_cpu_as_its_workers)
{
    synor_detection *det;
    synor_catalog *cat;
    catalog(&cat, &det);
    synor_whatif_run_device rd[1] = {{"cpu", NULL, 0, 2, 0, 0}};
    synor_fabric *f, *whole;
    ASSERT_OK(synor_whatif_run_fabric(cat, det, rd, 1, &f));
    rd[0].workers = 0;
    ASSERT_OK(synor_whatif_run_fabric(cat, det, rd, 1, &whole));
    ASSERT_EQ(synor_fabric_device_count(f), 2);
    ASSERT_EQ(synor_fabric_device_count(whole), 1);
    ASSERT_STREQ(synor_fabric_device_at(f, 0)->profile->id, "local-run-cpu-w2");
    ASSERT_STREQ(synor_fabric_device_at(whole, 0)->profile->id, "local-run-cpu");
    double all = synor_device_caps(synor_fabric_device_at(whole, 0)->dev)->peak[SYNOR_DTYPE_FP32].dense;
    for (size_t d = 0; d < 2; d++)
        ASSERT_NEAR(synor_device_caps(synor_fabric_device_at(f, d)->dev)->peak[SYNOR_DTYPE_FP32].dense,
                    all / 2, 1e-9 * all);
    synor_workload *w, *cw;
    ASSERT_OK(synor_workload_load_file(MLP, &w));
    size_t n = synor_workload_count(w);
    const char **kernel = calloc(n, sizeof *kernel);
    uint64_t *fp = calloc(n, sizeof *fp);
    ASSERT_OK(synor_exec_task_keys(w, kernel, fp));
    synor_perfmodel *pm;
    ASSERT_OK(synor_perfmodel_create(&pm));
    for (int s = 0; s < 3; s++)
        synor_perfmodel_record(pm, kernel[0], fp[0], "cpu", 0.125);
    synor_whatif_calibration ci;
    ASSERT_OK(synor_whatif_calibrate(f, w, pm, &cw, &ci));
    ASSERT_EQ(ci.local_devices, 2);
    ASSERT_EQ(synor_workload_task(cw, 0)->n_exec, 2);
    ASSERT_NEAR(synor_workload_task(cw, 0)->exec_s[0], 0.125, 1e-12);
    ASSERT_NEAR(synor_workload_task(cw, 0)->exec_s[1], 0.125, 1e-12);
    synor_workload_destroy(cw);
    synor_perfmodel_destroy(pm);
    free(kernel);
    free(fp);
    synor_workload_destroy(w);
    synor_fabric_destroy(whole);
    synor_fabric_destroy(f);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
}

typedef struct count_q {
    const char *op;
    uint64_t fp;
    uint64_t count;
} count_q;

static int find_count(const synor_perfmodel_entry *e, void *user)
{
    count_q *q = user;
    if (!strcmp(e->op, q->op) && e->footprint == q->fp && !strcmp(e->device, "cpu"))
        q->count = e->count;
    return 0;
}

/* The tiled presets' graphs: a real run records exactly these keys, each as
 * many times as the graph has tasks with it (a warm-up and one repetition:
 * twice). Edge tiles (n not a multiple of the tile) included. */
static void check_tiled(synor_tiled_algo algo, size_t n, size_t nb, size_t want_tasks)
{
    synor_workload *w;
    const char **kernel;
    uint64_t *fp;
    ASSERT_OK(synor_exec_tiled_workload(algo, n, nb, SYNOR_DTYPE_FP32, &w, &kernel, &fp));
    size_t nt = synor_workload_count(w);
    ASSERT_EQ(nt, want_tasks);
    synor_perfmodel *pm;
    ASSERT_OK(synor_perfmodel_create(&pm));
    synor_runtime *rt;
    cpu_runtime(pm, 2, &rt);
    synor_tiled_result r;
    int rc = synor_exec_tiled(rt, algo, n, nb, SYNOR_DTYPE_FP32, 1, 1, &r);
    synor_runtime_destroy(rt);
    if (rc == SYNOR_ENOTSUP) { /* no OpenBLAS for the reference */
        fprintf(stderr, "  (tiled run skipped: %s)\n", synor_errmsg());
    } else {
        ASSERT_OK(rc);
        size_t distinct = 0;
        for (size_t i = 0; i < nt; i++) {
            int seen = 0;
            size_t same = 0;
            for (size_t j = 0; j < nt; j++) {
                same += !strcmp(kernel[j], kernel[i]) && fp[j] == fp[i];
                seen |= j < i && !strcmp(kernel[j], kernel[i]) && fp[j] == fp[i];
            }
            if (seen)
                continue;
            distinct++;
            count_q q = {kernel[i], fp[i], 0};
            ASSERT_OK(synor_perfmodel_foreach(pm, find_count, &q));
            ASSERT_EQ(q.count, 2 * same);
        }
        ASSERT_EQ(not_host(pm), distinct + 1); /* and the dispatch entry */
    }
    synor_perfmodel_destroy(pm);
    free(kernel);
    free(fp);
    synor_workload_destroy(w);
}

TEST(tiled_graphs_are_what_the_runtime_runs)
{
    check_tiled(SYNOR_TILED_GEMM, 96, 32, 27);      /* 3 x 3 x 3 */
    check_tiled(SYNOR_TILED_GEMM, 100, 32, 64);     /* 4 x 4 x 4, edge tiles of 4 */
    check_tiled(SYNOR_TILED_CHOLESKY, 100, 32, 20); /* 4 potrf, 6 trsm, 6 syrk, 4 gemm */
    synor_workload *w;
    const char **k;
    uint64_t *f;
    ASSERT_EQ(synor_exec_tiled_workload(SYNOR_TILED_GEMM, 100, 0, SYNOR_DTYPE_FP32, &w, &k, &f),
              SYNOR_EINVAL);
    ASSERT_EQ(synor_exec_tiled_workload(SYNOR_TILED_GEMM, 100, 10, SYNOR_DTYPE_BF16, &w, &k, &f),
              SYNOR_ENOTSUP);
}

/* The host's side of a call (synor_workload_set_host): the runtime
 * records it per call (counts checked: times are this machine's), the
 * calibration charges the model's means, and the simulated makespan moves
 * by exactly what was learned. */
static void tiled_makespan(const synor_fabric *f, const synor_workload *w, const char *const *k,
                           const uint64_t *fp, const synor_perfmodel *pm,
                           synor_whatif_calibration *ci, double *m)
{
    synor_workload *cw;
    synor_cost *c;
    synor_trace *t;
    ASSERT_OK(synor_whatif_calibrate_keyed(f, w, k, fp, pm, &cw, ci));
    ASSERT_OK(synor_cost_create(cw, f, &c));
    ASSERT_OK(synor_simulate(c, NULL, &t));
    *m = t->makespan;
    /* no task starts before the host submitted it */
    for (size_t i = 0; i < t->n_tasks; i++) {
        long ti = synor_workload_find_task(cw, t->tasks[i].id);
        ASSERT(ti >= 0);
        ASSERT(t->tasks[i].start >=
               ci->host_before_s + (double)(ti + 1) * ci->host_per_task_s - 1e-12);
    }
    synor_trace_destroy(t);
    synor_cost_destroy(c);
    synor_workload_destroy(cw);
}

TEST(the_host_side_is_learned_and_charged)
{
    synor_detection *det;
    synor_catalog *cat;
    catalog(&cat, &det);
    synor_workload *w;
    const char **k;
    uint64_t *fp;
    /* 3 x 3 x 3 tiles: 27 tasks, 27 handles (A, B and C: 9 tiles each) */
    ASSERT_OK(synor_exec_tiled_workload(SYNOR_TILED_GEMM, 96, 32, SYNOR_DTYPE_FP32, &w, &k, &fp));
    ASSERT_EQ(synor_workload_count(w), 27);
    /* a real run records one sample per submission and per handle */
    synor_perfmodel *pm;
    ASSERT_OK(synor_perfmodel_create(&pm));
    synor_perfmodel_set_min_samples(pm, 1);
    synor_runtime *rt;
    cpu_runtime(pm, 1, &rt);
    float *a = calloc(96 * 96, sizeof *a), *b = calloc(96 * 96, sizeof *b),
          *c = calloc(96 * 96, sizeof *c);
    for (int call = 0; call < 2; call++)
        ASSERT_OK(synor_tiled_sgemm(rt, 96, 96, 96, 1.0f, a, 96, b, 96, 0.0f, c, 96, 32));
    synor_runtime_destroy(rt);
    free(a);
    free(b);
    free(c);
    double s;
    unsigned n;
    ASSERT_OK(synor_perfmodel_estimate(pm, SYNOR_PERFMODEL_SUBMIT, 0, SYNOR_PERFMODEL_HOST, &s, &n));
    ASSERT_EQ(n, 2 * 27);
    ASSERT_OK(synor_perfmodel_estimate(pm, SYNOR_PERFMODEL_REGISTER, 0, SYNOR_PERFMODEL_HOST, &s, &n));
    ASSERT_EQ(n, 2 * 27);
    ASSERT_OK(synor_perfmodel_estimate(pm, SYNOR_PERFMODEL_UNREGISTER, 0, SYNOR_PERFMODEL_HOST, &s, &n));
    ASSERT_EQ(n, 2 * 27);
    /* the wait is recorded when the call had to wait: at most once a call */
    if (synor_perfmodel_estimate(pm, SYNOR_PERFMODEL_WAIT, 0, SYNOR_PERFMODEL_HOST, &s, &n) == 0)
        ASSERT(n <= 2);
    synor_perfmodel_destroy(pm);

    /* A model by hand: kernels of 10 ms on one worker, then the host. */
    synor_fabric *f;
    ASSERT_OK(synor_whatif_fabric_workers(cat, det, 1, NULL, 0, &f));
    ASSERT_OK(synor_perfmodel_create(&pm));
    for (int r = 0; r < 3; r++)
        synor_perfmodel_record(pm, k[0], fp[0], "cpu", 0.01);
    synor_whatif_calibration ci;
    double bare, m;
    tiled_makespan(f, w, k, fp, pm, &ci, &bare);
    ASSERT_NEAR(bare, 27 * 0.01, 1e-9);
    ASSERT(ci.host_before_s == 0 && ci.host_per_task_s == 0 && ci.host_after_s == 0);
    for (int r = 0; r < 3; r++) {
        synor_perfmodel_record(pm, SYNOR_PERFMODEL_REGISTER, 0, SYNOR_PERFMODEL_HOST, 1e-4);
        synor_perfmodel_record(pm, SYNOR_PERFMODEL_UNREGISTER, 0, SYNOR_PERFMODEL_HOST, 2e-4);
        synor_perfmodel_record(pm, SYNOR_PERFMODEL_SUBMIT, 0, SYNOR_PERFMODEL_HOST, 1e-3);
        synor_perfmodel_record(pm, SYNOR_PERFMODEL_WAIT, 0, SYNOR_PERFMODEL_HOST, 5e-3);
    }
    /* one stalled wake-up: once per call, the wait is charged at its
     * median, so it does not move (its mean would be 0.25 s) */
    synor_perfmodel_record(pm, SYNOR_PERFMODEL_WAIT, 0, SYNOR_PERFMODEL_HOST, 1.0);
    tiled_makespan(f, w, k, fp, pm, &ci, &m);
    ASSERT_EQ(ci.handles, 27);
    ASSERT_NEAR(ci.host_before_s, 27 * 1e-4, 1e-12);
    ASSERT_NEAR(ci.host_per_task_s, 1e-3, 1e-12);
    ASSERT_NEAR(ci.host_after_s, 5e-3 + 27 * 2e-4, 1e-12);
    /* the worker is the bottleneck: the host adds its start and its end */
    ASSERT_NEAR(m, bare + 27 * 1e-4 + 1e-3 + 5e-3 + 27 * 2e-4, 1e-9);
    /* submitting slower than the worker runs: the host is the bottleneck,
     * the makespan rises by the learned per-task cost times the tasks */
    for (int r = 0; r < 40; r++)
        synor_perfmodel_record(pm, SYNOR_PERFMODEL_SUBMIT, 0, SYNOR_PERFMODEL_HOST, 0.02);
    tiled_makespan(f, w, k, fp, pm, &ci, &m);
    ASSERT_NEAR(ci.host_per_task_s, 0.02, 1e-12);
    ASSERT_NEAR(m, 27 * 1e-4 + 27 * 0.02 + 0.01 + 5e-3 + 27 * 2e-4, 1e-9);
    synor_perfmodel_destroy(pm);
    synor_fabric_destroy(f);
    synor_workload_destroy(w);
    free(k);
    free(fp);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

TEST(a_calibrated_simulation_predicts_a_real_run)
{
    synor_detection *det;
    synor_catalog *cat;
    catalog(&cat, &det);
    synor_workload *w, *cw;
    ASSERT_OK(synor_workload_load_file(MLP, &w));
    synor_perfmodel *pm;
    ASSERT_OK(synor_perfmodel_create(&pm));
    synor_runtime *rt;
    cpu_runtime(pm, 0, &rt);
    synor_runtime_device_info cpu;
    ASSERT_OK(synor_runtime_device_get(rt, 0, &cpu));
    enum { WARM = 3, RUNS = 7 };
    double real[RUNS];
    synor_exec_result r;
    for (int i = 0; i < WARM + RUNS; i++) {
        ASSERT_OK(synor_exec_workload(rt, w, 1, NULL, &r));
        if (i >= WARM)
            real[i - WARM] = r.seconds;
    }
    synor_runtime_destroy(rt);
    qsort(real, RUNS, sizeof *real, cmp);
    synor_fabric *f;
    ASSERT_OK(synor_whatif_fabric_workers(cat, det, cpu.workers, NULL, 0, &f));
    synor_whatif_calibration ci;
    ASSERT_OK(synor_whatif_calibrate(f, w, pm, &cw, &ci));
    ASSERT_EQ(ci.from_model, synor_workload_count(w) * cpu.workers); /* every time measured */
    synor_cost *c;
    synor_trace *t;
    ASSERT_OK(synor_cost_create(cw, f, &c));
    ASSERT_OK(synor_simulate(c, NULL, &t)); /* dynamic, as the runtime places */
    double ratio = t->makespan / real[RUNS / 2];
    fprintf(stderr,
            "  %u workers: simulated %.3f ms, real median %.3f ms (%.3f-%.3f): %.3f; host: "
            "%.1f us per submission, %.1f us after\n",
            cpu.workers, t->makespan * 1e3, real[RUNS / 2] * 1e3, real[0] * 1e3,
            real[RUNS - 1] * 1e3, ratio, ci.host_per_task_s * 1e6, ci.host_after_s * 1e6);
    /* The benchmark's goal is 5%; a shared CI machine gets a wider band. The
     * roofline alone is 3-5x off on the development VM (0.2-0.36). */
    ASSERT(ratio > 0.5 && ratio < 1.6);
    synor_trace_destroy(t);
    synor_cost_destroy(c);
    synor_workload_destroy(cw);
    synor_perfmodel_destroy(pm);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
}

/* Every key of w's tasks recorded 3 times on device dev (s seconds), and
 * the device's dispatch (disp seconds). */
static void record_all(synor_perfmodel *pm, const synor_workload *w, const char *dev, double s,
                       double disp)
{
    size_t n = synor_workload_count(w);
    const char **kernel = calloc(n, sizeof *kernel);
    uint64_t *fp = calloc(n, sizeof *fp);
    ASSERT(kernel && fp);
    ASSERT_OK(synor_exec_task_keys(w, kernel, fp));
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; i < n; i++)
            synor_perfmodel_record(pm, kernel[i], fp[i], dev, s);
        synor_perfmodel_record(pm, SYNOR_PERFMODEL_DISPATCH, 0, dev, disp);
    }
    free(kernel);
    free(fp);
}

/* A fabric of the CPU's 2 workers and a GPU ("cuda0", described by the
 * host's profile where detection has none: the CUDA test doubles' way). */
static void cpu_gpu_fabric(synor_catalog *cat, const synor_detection *det, synor_fabric **f)
{
    synor_whatif_run_device rd[2] = {{"cpu", NULL, 0, 2, 0, 0}, {"cuda0", "Test GPU", 0, 0, 0, 0}};
    ASSERT_OK(synor_whatif_run_fabric(cat, det, rd, 2, f));
    ASSERT_EQ(synor_fabric_device_count(*f), 3);
    ASSERT_STREQ(synor_fabric_device_at(*f, 2)->name, "cuda0");
}

/* Issue 11 item 7: the benchmark took each simulated task's kernel time as
 * its duration less calibration info's dispatch_s, the first local
 * device's (the CPU workers', hundreds of us on 16 cores), also for tasks
 * on a GPU or PoCL whose own dispatch is a few us: negative busy times. */
TEST(each_device_has_its_own_dispatch)
{
    synor_detection *det;
    synor_catalog *cat;
    catalog(&cat, &det);
    synor_fabric *f;
    cpu_gpu_fabric(cat, det, &f);
    synor_workload *w, *cw;
    ASSERT_OK(synor_workload_load_file(MLP, &w));
    synor_perfmodel *pm;
    ASSERT_OK(synor_perfmodel_create(&pm));
    const double cpu_s = 2e-3, cpu_disp = 300e-6, gpu_s = 40e-6, gpu_disp = 5e-6;
    record_all(pm, w, "cpu", cpu_s, cpu_disp);
    record_all(pm, w, "cuda0", gpu_s, gpu_disp);
    ASSERT_NEAR(synor_whatif_device_dispatch(f, 0, pm), cpu_disp, 1e-12);
    ASSERT_NEAR(synor_whatif_device_dispatch(f, 1, pm), cpu_disp, 1e-12);
    ASSERT_NEAR(synor_whatif_device_dispatch(f, 2, pm), gpu_disp, 1e-12);
    ASSERT(synor_whatif_device_dispatch(f, 3, pm) == 0);    /* no such device */
    ASSERT(synor_whatif_device_dispatch(f, 2, NULL) == 0);  /* no model */
    synor_whatif_calibration ci;
    ASSERT_OK(synor_whatif_calibrate(f, w, pm, &cw, &ci));
    ASSERT_NEAR(ci.dispatch_s, cpu_disp, 1e-12); /* the first device's only */
    ASSERT_EQ(ci.other_devices, 0);
    synor_cost *c;
    synor_trace *t;
    ASSERT_OK(synor_cost_create(cw, f, &c));
    ASSERT_OK(synor_simulate(c, NULL, &t));
    size_t on_gpu = 0;
    for (size_t i = 0; i < t->n_tasks; i++) {
        size_t d = t->tasks[i].device;
        double kernel = t->tasks[i].end - t->tasks[i].start - synor_whatif_device_dispatch(f, d, pm);
        ASSERT_NEAR(kernel, d == 2 ? gpu_s : cpu_s, 1e-9);
        if (d == 2) {
            on_gpu++;
            /* what the benchmark subtracted before: below zero */
            ASSERT(t->tasks[i].end - t->tasks[i].start - ci.dispatch_s < 0);
        }
    }
    ASSERT(on_gpu > 0);
    synor_trace_destroy(t);
    synor_cost_destroy(c);
    synor_workload_destroy(cw);
    synor_perfmodel_destroy(pm);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
}

/* Issue 11 item 7: on a 16-core machine with a GPU the benchmark's
 * "CPU only" runtime opened the GPU (the default) and ran matmul, gelu and
 * gemm there, while the fabric simulated was the CPU's: the CPU entries
 * then held only the runtime's calibration samples, and the simulation was
 * ~100x the run. The calibration says so: the model has a device the
 * fabric lacks. */
TEST(a_model_device_the_fabric_lacks_is_counted)
{
    synor_detection *det;
    synor_catalog *cat;
    catalog(&cat, &det);
    synor_fabric *cpu_only, *both;
    ASSERT_OK(synor_whatif_fabric_workers(cat, det, 2, NULL, 0, &cpu_only));
    cpu_gpu_fabric(cat, det, &both);
    synor_workload *w, *cw;
    ASSERT_OK(synor_workload_load_file(MLP, &w));
    synor_perfmodel *pm;
    ASSERT_OK(synor_perfmodel_create(&pm));
    record_all(pm, w, "cpu", 2e-3, 300e-6);
    for (int k = 0; k < 3; k++) /* the host's side: not a device */
        synor_perfmodel_record(pm, SYNOR_PERFMODEL_SUBMIT, 0, SYNOR_PERFMODEL_HOST, 1e-6);
    synor_whatif_calibration ci;
    ASSERT_OK(synor_whatif_calibrate(cpu_only, w, pm, &cw, &ci));
    ASSERT_EQ(ci.other_devices, 0);
    synor_workload_destroy(cw);
    record_all(pm, w, "cuda0", 40e-6, 5e-6);
    ASSERT_OK(synor_whatif_calibrate(cpu_only, w, pm, &cw, &ci));
    ASSERT_EQ(ci.other_devices, 1); /* cuda0 */
    synor_workload_destroy(cw);
    ASSERT_OK(synor_whatif_calibrate(both, w, pm, &cw, &ci));
    ASSERT_EQ(ci.other_devices, 0);
    synor_workload_destroy(cw);
    synor_perfmodel_destroy(pm);
    synor_workload_destroy(w);
    synor_fabric_destroy(cpu_only);
    synor_fabric_destroy(both);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
}

TEST_MAIN(each_device_has_its_own_dispatch, a_model_device_the_fabric_lacks_is_counted,
          task_keys_are_what_a_real_run_records, a_run_fabric_can_have_the_cpu_as_its_workers,
          tiled_graphs_are_what_the_runtime_runs, calibration_prefers_the_model_then_fits_the_roofline,
          the_host_side_is_learned_and_charged,
          a_calibrated_simulation_predicts_a_real_run)
