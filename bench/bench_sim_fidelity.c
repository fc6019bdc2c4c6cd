/* bench_sim_fidelity.c - how well the simulator predicts this machine
 * (issue 11, "a simulator that predicts this machine"): each workload run
 * for real by the runtime on the CPU workers, then simulated on the local
 * fabric calibrated on the performance model those runs recorded, and
 * uncalibrated (the roofline on the measured peak), side by side.
 *
 *   bench_sim_fidelity [--runs R] [--warm W] [--workers N] [--measure-cache F]
 *                      [--spin-us U] [--opencl] [--cuda]
 *                      [--tiled gemm|cholesky:N:NB]... WORKLOAD.json...
 *
 * --opencl: the runtime also opens every OpenCL device (PoCL included) and
 * places tasks between it and the CPU workers by its model; the fabric is
 * then the run's (synor_whatif_run_fabric: the CPU as its workers, each
 * OpenCL device by its runtime name). --cuda: likewise with every CUDA
 * GPU; without it the runtime opens none (its default opens them all, and
 * a run on a GPU simulated on the CPU-only fabric was ~100x off: each line
 * says real_cuda_tasks and model_other_devices, the model's devices the
 * fabric lacks, to show such a mismatch). --spin-us: the workers' polling
 * before they sleep (synor_runtime_config.spin_us).
 *
 * Per workload, in one process: a runtime with a fresh performance model;
 * W warm-up runs (they calibrate the model: 3 samples per entry); R timed
 * runs (wall time from first submit to wait_all, synor_exec_workload); the
 * median of those is "real". The model then holds every timed run's
 * kernel times too. "sim" is synor_simulate of the calibrated workload
 * (synor_whatif_calibrate) on the local fabric with one device per CPU
 * worker, dynamic placement (as the runtime places) and HEFT's plan
 * (each task's time: its kernel's median plus the runtime's mean dispatch
 * time, both from the model; the busy time per operation subtracts each
 * task's own device's dispatch, synor_whatif_device_dispatch);
 * "roofline" the same without the model. The calibration also charges
 * the host's side of the call (synor_workload_set_host: submissions,
 * handles, the wait), printed as host_before_us, host_submit_us (per
 * task) and host_after_us; sim_nohost_ms / ratio_nohost is the dynamic
 * simulation of the same model without it. Per operation: the real kernels'
 * mean busy time per run against the simulation's. One line per figure,
 * key=value, for bench/run_sim_fidelity.sh.
 *
 * --tiled: the runtime's tiled GEMM or Cholesky (synor_tiled_sgemm or
 * synor_tiled_spotrf, fp32, n x n, tiles of NB): 3 warm-up calls calibrate
 * the model, R timed calls give the median; the simulated graph is
 * synor_exec_tiled_workload's. Per kernel: busy time per timed call
 * against the simulation. after_openblas_ms is the median synor_exec_tiled
 * reports (`synor run --tiled`: each call after an OpenBLAS call on all
 * cores), for comparison.
 *
 * With --opencl, an OpenCL CPU device (PoCL) runs on the CPU workers'
 * cores: the shared-core factors are measured first
 * (synor_whatif_measure_sharing, cached in --sharing-cache F) and the run
 * fabric declares the device shared (synor_fabric_set_host_sharing);
 * sim_noshare_ms / ratio_noshare (sim_noshare_opencl_tasks) is the dynamic
 * simulation of the same model on the fabric without it (as before it was
 * modelled); sim_eventonly_ms / ratio_eventonly (sim_eventonly_opencl_tasks)
 * the dynamic simulation rebalancing at every event instead of when the
 * runtime's workers would (synor_fabric_set_share_rebalance 0);
 * sim_partial_ms / ratio_partial (sim_partial_opencl_tasks) with the
 * measured cpu_slowdown charged for the part of the shared device's task
 * time that its place scale says is kernel: 1 + (cpu_slowdown - 1) x scale. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "synor.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define MAX_OPS 32
typedef struct op_sum {
    const char *op[MAX_OPS];
    double s[MAX_OPS];
    size_t n;
} op_sum;

static void add(op_sum *o, const char *op, double s)
{
    size_t k = 0;
    while (k < o->n && strcmp(o->op[k], op))
        k++;
    if (k == o->n) {
        if (o->n == MAX_OPS)
            return;
        o->op[o->n] = op;
        o->s[o->n++] = 0;
    }
    o->s[k] += s;
}

static double get(const op_sum *o, const char *op)
{
    for (size_t k = 0; k < o->n; k++)
        if (!strcmp(o->op[k], op))
            return o->s[k];
    return 0;
}

/* Busy time per operation of a real trace (task ids are "kernel#tag", tag
 * = workload index + 1), by the workload's operation names. */
static void real_ops(const synor_workload *w, const synor_trace *t, op_sum *o)
{
    for (size_t i = 0; i < t->n_tasks; i++) {
        const char *hash = strrchr(t->tasks[i].id, '#');
        size_t tag = hash ? strtoul(hash + 1, NULL, 10) : 0;
        if (tag < 1 || tag > synor_workload_count(w))
            continue;
        add(o, synor_op_type_name(synor_workload_task(w, tag - 1)->op.type),
            t->tasks[i].end - t->tasks[i].start);
    }
}

/* with_host 0: the host side the calibration charged taken out again
 * (synor_workload_set_host), as before it was modelled. */
static double g_opencl_task_s; /* the last simulation's OpenCL task time, mean */
static size_t g_other_devices; /* the last calibration's model devices not in the fabric */
static int simulate2(const synor_fabric *f, const synor_workload *w, const synor_perfmodel *pm,
                     int heft, int with_host, double *makespan, op_sum *ops, double *dispatch,
                     double *host, double *offcpu, const char *const *kernels,
                     const uint64_t *fps);

/* heft: 0 the dynamic strategy, 1 HEFT's plan, 2 the runtime's own rules
 * (synor_simulate_runtime). ops (may be NULL): the simulated busy time per operation, less the
 * dispatch time the calibration added to each task (the real trace's task
 * times are the kernels' alone). */
static int simulate(const synor_fabric *f, const synor_workload *w, const synor_perfmodel *pm,
                    int heft, double *makespan, op_sum *ops, double *dispatch, double *host,
                    double *offcpu, const char *const *kernels, const uint64_t *fps)
{
    return simulate2(f, w, pm, heft, 1, makespan, ops, dispatch, host, offcpu, kernels, fps);
}

static int simulate2(const synor_fabric *f, const synor_workload *w, const synor_perfmodel *pm,
                     int heft, int with_host, double *makespan, op_sum *ops, double *dispatch,
                     double *host, double *offcpu, const char *const *kernels,
                     const uint64_t *fps)
{
    synor_workload *cw = NULL;
    synor_cost *c = NULL;
    synor_plan *p = NULL;
    synor_trace *t = NULL;
    synor_whatif_calibration ci;
    int rc = kernels ? synor_whatif_calibrate_keyed(f, w, kernels, fps, pm, &cw, &ci)
                     : synor_whatif_calibrate(f, w, pm, &cw, &ci);
    double per_task = rc == 0 && ci.dispatch_s == ci.dispatch_s ? ci.dispatch_s : 0;
    if (dispatch)
        *dispatch = per_task;
    if (host && !rc) {
        host[0] = ci.host_before_s;
        host[1] = ci.host_per_task_s;
        host[2] = ci.host_after_s;
    }
    if (!rc && !with_host)
        rc = synor_workload_set_host(cw, 0, 0, 0);
    if (!rc)
        rc = synor_cost_create(cw, f, &c);
    if (!rc && heft == 1)
        rc = synor_plan_create(c, NULL, &p);
    if (!rc)
        rc = heft == 2 ? synor_simulate_runtime(c, &t) : synor_simulate(c, p, &t);
    if (!rc && offcpu) { /* and the OpenCL device's mean task time, calibrated */
        double sum = 0;
        size_t k = 0;
        for (size_t d = 0; d < synor_fabric_device_count(f); d++)
            if (!strncmp(synor_fabric_device_at(f, d)->name, "opencl", 6))
                for (size_t i = 0; i < synor_workload_count(cw); i++, k++)
                    sum += synor_cost_time(c, i, d);
        g_opencl_task_s = k ? sum / (double)k : 0;
        *offcpu = 0;
        for (size_t i = 0; i < t->n_tasks; i++)
            *offcpu += !strncmp(t->devices[t->tasks[i].device].name, "opencl", 6);
    }
    if (!rc) {
        *makespan = t->makespan;
        /* each task less the dispatch its own device's row has (a GPU's
         * or PoCL's is not the CPU workers' ci.dispatch_s: subtracting
         * that gave negative busy times) */
        for (size_t i = 0; ops && i < t->n_tasks; i++) {
            long k = synor_workload_find_task(w, t->tasks[i].id);
            if (k >= 0)
                add(ops,
                    kernels ? kernels[k]
                            : synor_op_type_name(synor_workload_task(w, (size_t)k)->op.type),
                    t->tasks[i].end - t->tasks[i].start -
                        synor_whatif_device_dispatch(f, t->tasks[i].device, pm));
        }
        if (pm)
            g_other_devices = ci.other_devices;
    }
    synor_trace_destroy(t);
    synor_plan_destroy(p);
    synor_cost_destroy(c);
    synor_workload_destroy(cw);
    return rc;
}

static unsigned g_spin_us; /* --spin-us: the workers' polling before they sleep; 0 = default */
static int g_opencl;       /* --opencl: every OpenCL device (PoCL) beside the CPU workers */
static int g_cuda;         /* --cuda: every CUDA GPU beside the CPU workers (else none) */
static synor_whatif_sharing g_share; /* --opencl: the measured shared-core factors (0: none) */

/* A runtime on the CPU workers (and with --opencl every OpenCL device,
 * PoCL included), recording into pm and a trace. */
static int start(synor_perfmodel *pm, unsigned workers, synor_runtime **rt,
                 synor_runtime_device_info *cpu)
{
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.opencl = g_opencl ? SYNOR_OPENCL_ALL : SYNOR_OPENCL_OFF;
    /* the runtime opens CUDA GPUs by default: without --cuda the run is
     * the CPU's alone, as the CPU-only fabric simulates it */
    cfg.cuda = g_cuda;
    cfg.cpu_workers = workers;
    cfg.perfmodel = pm;
    cfg.trace = 1;
    if (g_spin_us)
        cfg.spin_us = g_spin_us;
    int rc = synor_runtime_create(&cfg, rt);
    if (!rc)
        rc = synor_runtime_start(*rt);
    if (!rc)
        rc = synor_runtime_device_get(*rt, 0, cpu);
    return rc;
}

/* The local fabric of the run: the CPU as its workers, and with --opencl
 * each of the runtime's OpenCL devices by its runtime name, so the
 * calibration finds the model's entries for both. */
static int run_fabric(synor_catalog *cat, const synor_detection *det, synor_runtime *rt,
                      unsigned cpu_workers, int share, synor_fabric **f)
{
    if (!g_opencl && !g_cuda)
        return synor_whatif_fabric_workers(cat, det, cpu_workers, NULL, 0, f);
    unsigned nd = synor_runtime_device_count(rt);
    synor_whatif_run_device rd[16];
    synor_runtime_device_info info[16];
    if (nd > 16)
        nd = 16;
    for (unsigned i = 0; i < nd; i++) {
        synor_runtime_device_get(rt, i, &info[i]);
        rd[i] = (synor_whatif_run_device){info[i].name, info[i].product, info[i].memory_capacity,
                                          i == 0 ? cpu_workers : 0, 0, 0};
        if (share && g_share.cpu_slowdown > 0 && !strcmp(info[i].backend, "opencl") &&
            info[i].kind == SYNOR_KIND_CPU) {
            rd[i].share_cpu_slowdown = g_share.cpu_slowdown;
            /* its recorded times were taken beside busy workers: they
             * hold its own slowdown already; the workers' is charged */
            rd[i].share_slowdown = 1;
        }
    }
    return synor_whatif_run_fabric(cat, det, rd, nd, f);
}

typedef struct sims {
    double dynamic, heft, rtrules, roofline, dispatch;
    double nohost; /* dynamic, without the host side (as before it was modelled) */
    double host[3]; /* the host side charged: before, per task, after */
    double offcpu; /* --opencl: tasks the dynamic simulation put on an OpenCL device */
    double noshare, noshare_off; /* --opencl: dynamic on the fabric without sharing */
    double opencl_task; /* --opencl: the calibrated OpenCL task time, mean over tasks */
    double place_scale; /* --opencl: the shared device's placement scale (0: none) */
    double charged, charged_off; /* --opencl: placed so, the measured contention charged */
    double evonly, evonly_off; /* --opencl: rebalancing at every event (period 0) */
    double partial, partial_off; /* --opencl: cpu_slowdown charged x place_scale */
} sims;

/* The dynamic simulation on f with the shared device's measured
 * contention charged (g_share's cpu_slowdown; its own times hold its
 * slowdown), placed as the runtime does: the comparison for the
 * calibration's none; f as it was after. */
static int simulate_charged(synor_fabric *f, const synor_workload *w, const synor_perfmodel *pm,
                            const char *const *kernels, const uint64_t *fps, sims *out)
{
    int rc = 0;
    size_t nd = synor_fabric_device_count(f), d = 0;
    while (d < nd && !(synor_fabric_device_at(f, d)->share_place_scale > 0))
        d++;
    if (d == nd || !(g_share.cpu_slowdown > 0))
        return 0;
    const synor_fabric_device *fd = synor_fabric_device_at(f, d);
    double cs = fd->share_cpu_slowdown, sl = fd->share_slowdown, sc = fd->share_place_scale;
    rc = synor_fabric_set_host_sharing(f, d, g_share.cpu_slowdown, 1);
    if (!rc)
        rc = synor_fabric_set_share_place_scale(f, d, sc);
    if (!rc)
        rc = simulate(f, w, pm, 0, &out->charged, NULL, NULL, NULL, &out->charged_off, kernels,
                      fps);
    /* charged for the part of the shared device's task time that computes
     * (its median kernel time over its mean with dispatch: the place scale) */
    if (!rc)
        rc = synor_fabric_set_host_sharing(f, d, 1 + (g_share.cpu_slowdown - 1) * sc, 1);
    if (!rc)
        rc = synor_fabric_set_share_place_scale(f, d, sc);
    if (!rc)
        rc = simulate(f, w, pm, 0, &out->partial, NULL, NULL, NULL, &out->partial_off, kernels,
                      fps);
    int rc2 = synor_fabric_set_host_sharing(f, d, cs, sl);
    if (!rc2)
        rc2 = synor_fabric_set_share_place_scale(f, d, sc);
    /* the same placement rebalancing at every event, not when the
     * runtime's workers would (period 0: the simulation before) */
    double period = synor_fabric_device_at(f, d)->share_rebalance_s;
    if (!rc && !rc2)
        rc = synor_fabric_set_share_rebalance(f, d, 0);
    if (!rc && !rc2)
        rc = simulate(f, w, pm, 0, &out->evonly, NULL, NULL, NULL, &out->evonly_off, kernels,
                      fps);
    if (!rc2)
        rc2 = synor_fabric_set_share_rebalance(f, d, period);
    return rc ? rc : rc2;
}

/* With a shared device: calibrated on the model
 * (synor_whatif_calibrate_sharing), so the dynamic simulation places on it
 * as the runtime does. */
static int place_scales(synor_fabric *f, const synor_workload *w, const synor_perfmodel *pm,
                        const char *const *kernels, const uint64_t *fps, sims *out)
{
    out->place_scale = 0;
    if (!g_opencl)
        return 0;
    int rc = synor_whatif_calibrate_sharing(f, w, kernels, fps, pm, NULL);
    for (size_t d = 0; !rc && d < synor_fabric_device_count(f); d++)
        if (synor_fabric_device_at(f, d)->share_place_scale > 0)
            out->place_scale = synor_fabric_device_at(f, d)->share_place_scale;
    return rc;
}

/* Calibrated with dynamic placement (its busy time per operation into
 * ops) and with HEFT's plan; then the roofline alone. */
static int simulate_all(const synor_fabric *f, const synor_workload *w, const synor_perfmodel *pm,
                        const char *const *kernels, const uint64_t *fps, sims *out, op_sum *ops)
{
    int rc = simulate(f, w, pm, 0, &out->dynamic, ops, &out->dispatch, out->host, &out->offcpu,
                      kernels, fps);
    out->opencl_task = g_opencl_task_s;
    if (!rc)
        rc = simulate(f, w, pm, 1, &out->heft, NULL, NULL, NULL, NULL, kernels, fps);
    if (!rc)
        rc = simulate(f, w, pm, 2, &out->rtrules, NULL, NULL, NULL, NULL, kernels, fps);
    if (!rc)
        rc = simulate(f, w, NULL, 0, &out->roofline, NULL, NULL, NULL, NULL, kernels, fps);
    if (!rc)
        rc = simulate2(f, w, pm, 0, 0, &out->nohost, NULL, NULL, NULL, NULL, kernels, fps);
    return rc;
}

/* Tasks a real trace ran on devices of a backend (the runtime's name,
 * synor_runtime_device_info.backend: "opencl", "cuda"). */
static double backend_tasks(const synor_trace *t, const char *backend)
{
    double n = 0;
    for (size_t i = 0; t && i < t->n_tasks; i++)
        n += !strcmp(t->devices[t->tasks[i].device].backend, backend);
    return n;
}

static double opencl_tasks(const synor_trace *t)
{
    return backend_tasks(t, "opencl");
}

/* The workload's line (sorts real); after_openblas < 0: none; real_off:
 * tasks per timed run on OpenCL devices (printed with --opencl);
 * real_cuda: on CUDA GPUs (none without --cuda). model_other_devices: the
 * model's devices that the fabric lacks (synor_whatif_calibration): not 0,
 * the simulation is not of the machine the run used. */
static void print_line(const char *name, unsigned workers, int runs, double *real, const sims *s,
                       double after_openblas, double real_off, double real_cuda)
{
    qsort(real, (size_t)runs, sizeof *real, cmp);
    double med = runs % 2 ? real[runs / 2] : (real[runs / 2 - 1] + real[runs / 2]) / 2;
    printf("workload=%s workers=%u runs=%d real_ms=%.3f real_min_ms=%.3f real_max_ms=%.3f "
           "sim_dynamic_ms=%.3f sim_heft_ms=%.3f sim_runtime_ms=%.3f roofline_ms=%.3f "
           "ratio_dynamic=%.4f ratio_heft=%.4f ratio_runtime=%.4f ratio_roofline=%.4f "
           "dispatch_us=%.2f host_before_us=%.2f host_submit_us=%.3f host_after_us=%.2f "
           "sim_nohost_ms=%.3f ratio_nohost=%.4f",
           name, workers, runs, med * 1e3, real[0] * 1e3, real[runs - 1] * 1e3, s->dynamic * 1e3,
           s->heft * 1e3, s->rtrules * 1e3, s->roofline * 1e3, s->dynamic / med, s->heft / med,
           s->rtrules / med, s->roofline / med, s->dispatch * 1e6, s->host[0] * 1e6,
           s->host[1] * 1e6, s->host[2] * 1e6, s->nohost * 1e3, s->nohost / med);
    if (after_openblas >= 0)
        printf(" after_openblas_ms=%.3f", after_openblas * 1e3);
    printf(" real_cuda_tasks=%.1f model_other_devices=%zu", real_cuda, g_other_devices);
    if (g_opencl)
        printf(" real_opencl_tasks=%.1f sim_opencl_tasks=%.0f sim_noshare_ms=%.3f "
               "ratio_noshare=%.4f sim_noshare_opencl_tasks=%.0f sim_opencl_task_ms=%.3f "
               "place_scale=%.4f cpu_slowdown=%.3f sim_charged_ms=%.3f ratio_charged=%.4f "
               "sim_charged_opencl_tasks=%.0f sim_eventonly_ms=%.3f ratio_eventonly=%.4f "
               "sim_eventonly_opencl_tasks=%.0f sim_partial_ms=%.3f ratio_partial=%.4f "
               "sim_partial_opencl_tasks=%.0f",
               real_off, s->offcpu, s->noshare * 1e3, s->noshare / med, s->noshare_off,
               s->opencl_task * 1e3, s->place_scale, g_share.cpu_slowdown, s->charged * 1e3,
               s->charged / med, s->charged_off, s->evonly * 1e3, s->evonly / med,
               s->evonly_off, s->partial * 1e3, s->partial / med, s->partial_off);
    printf("\n");
}

/* Per operation: the real busy time per timed run (after the warm-ups'
 * trace, before, subtracted from the whole, all) against the simulation's. */
static void print_ops(const op_sum *sim, const op_sum *before, const op_sum *all, int runs)
{
    for (size_t k = 0; k < sim->n; k++) {
        double rs = (get(all, sim->op[k]) - get(before, sim->op[k])) / runs;
        printf("  op=%s real_busy_ms=%.3f sim_busy_ms=%.3f ratio=%.4f\n", sim->op[k], rs * 1e3,
               sim->s[k] * 1e3, rs > 0 ? sim->s[k] / rs : NAN);
    }
}

static int one(synor_catalog *cat, const synor_detection *det, const char *path, unsigned workers,
               int warm, int runs)
{
    synor_workload *w = NULL;
    synor_perfmodel *pm = NULL;
    synor_runtime *rt = NULL;
    synor_trace *t0 = NULL, *t1 = NULL;
    synor_fabric *f = NULL, *f0 = NULL;
    double *real = calloc((size_t)runs, sizeof *real);
    int rc = synor_workload_load_file(path, &w);
    if (!rc)
        rc = synor_perfmodel_create(&pm);
    synor_runtime_device_info cpu;
    if (!rc)
        rc = start(pm, workers, &rt, &cpu);
    synor_exec_result r;
    for (int i = 0; !rc && i < warm + runs; i++) {
        if (i == warm)
            rc = synor_runtime_trace(rt, "warm", &t0);
        if (!rc)
            rc = synor_exec_workload(rt, w, 1, NULL, &r);
        if (!rc && i >= warm)
            real[i - warm] = r.seconds;
    }
    if (!rc)
        rc = synor_runtime_trace(rt, "all", &t1);
    if (!rc)
        rc = run_fabric(cat, det, rt, cpu.workers, 1, &f);
    if (!rc && g_opencl)
        rc = run_fabric(cat, det, rt, cpu.workers, 0, &f0);
    synor_runtime_destroy(rt);
    rt = NULL;
    op_sum ops_before = {0}, ops_all = {0}, ops_sim = {0};
    sims sm = {0};
    if (!rc)
        rc = place_scales(f, w, pm, NULL, NULL, &sm);
    if (!rc)
        rc = simulate_all(f, w, pm, NULL, NULL, &sm, &ops_sim);
    if (!rc && g_opencl)
        rc = simulate_charged(f, w, pm, NULL, NULL, &sm);
    if (!rc && f0)
        rc = simulate(f0, w, pm, 0, &sm.noshare, NULL, NULL, NULL, &sm.noshare_off, NULL, NULL);
    if (rc) {
        fprintf(stderr, "%s: %s\n", path, synor_errmsg());
    } else {
        print_line(synor_workload_name(w), cpu.workers, runs, real, &sm, -1,
                   (opencl_tasks(t1) - opencl_tasks(t0)) / runs,
                   (backend_tasks(t1, "cuda") - backend_tasks(t0, "cuda")) / runs);
        real_ops(w, t0, &ops_before);
        real_ops(w, t1, &ops_all);
        print_ops(&ops_sim, &ops_before, &ops_all, runs);
    }
    free(real);
    synor_fabric_destroy(f);
    synor_fabric_destroy(f0);
    synor_trace_destroy(t0);
    synor_trace_destroy(t1);
    synor_perfmodel_destroy(pm);
    synor_workload_destroy(w);
    return rc;
}

/* Busy time per kernel of a real trace (task ids are "kernel#tag"). */
static void kernel_ops(const synor_trace *t, op_sum *o)
{
    static char names[MAX_OPS][32];
    for (size_t i = 0; i < t->n_tasks; i++) {
        char k[32];
        snprintf(k, sizeof k, "%s", t->tasks[i].id);
        char *hash = strchr(k, '#');
        if (hash)
            *hash = '\0';
        size_t j = 0;
        while (j < MAX_OPS && names[j][0] && strcmp(names[j], k))
            j++;
        if (j == MAX_OPS)
            continue;
        if (!names[j][0])
            snprintf(names[j], sizeof names[j], "%s", k);
        add(o, names[j], t->tasks[i].end - t->tasks[i].start);
    }
}

/* A tiled preset: synor_exec_tiled (a warm-up, then runs repetitions; the
 * median) against its graph (synor_exec_tiled_workload) simulated. */
static int one_tiled(synor_catalog *cat, const synor_detection *det, const char *spec,
                     unsigned workers, int runs)
{
    char algo_s[16];
    size_t n = 0, nb = 0;
    if (sscanf(spec, "%15[a-z]:%zu:%zu", algo_s, &n, &nb) != 3 ||
        (strcmp(algo_s, "gemm") && strcmp(algo_s, "cholesky"))) {
        fprintf(stderr, "--tiled %s: gemm|cholesky:N:NB\n", spec);
        return 1;
    }
    synor_tiled_algo algo = strcmp(algo_s, "gemm") ? SYNOR_TILED_CHOLESKY : SYNOR_TILED_GEMM;
    synor_workload *w = NULL;
    const char **kernels = NULL;
    uint64_t *fps = NULL;
    synor_perfmodel *pm = NULL;
    synor_runtime *rt = NULL;
    synor_fabric *f = NULL, *f0 = NULL;
    synor_trace *t0 = NULL, *t1 = NULL;
    int rc = synor_exec_tiled_workload(algo, n, nb, SYNOR_DTYPE_FP32, &w, &kernels, &fps);
    if (!rc)
        rc = synor_perfmodel_create(&pm);
    synor_runtime_device_info cpu;
    if (!rc)
        rc = start(pm, workers, &rt, &cpu);
    /* The runtime's tiled call alone (synor_exec_tiled alternates each
     * with an OpenBLAS call on all cores): 3 warm-ups calibrate the model,
     * then the timed runs. */
    size_t nn = n * n;
    float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
    double *real = calloc((size_t)runs, sizeof *real);
    if (!rc && (!a || !b || !c || !real))
        rc = SYNOR_ENOMEM;
    uint64_t s = 42;
    for (size_t i = 0; !rc && i < nn; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        a[i] = (float)((double)(s >> 11) * 0x1.0p-53 - 0.5);
        b[i] = a[(i * 7919) % nn];
    }
    if (!rc && algo == SYNOR_TILED_CHOLESKY) /* symmetric, diagonally dominant: SPD */
        for (size_t j = 0; j < n; j++)
            for (size_t i = 0; i <= j; i++)
                b[i + j * n] = b[j + i * n] = i == j ? (float)n : a[i + j * n];
    for (int k = 0; !rc && k < 3 + runs; k++) {
        if (k == 3)
            rc = synor_runtime_trace(rt, "warm", &t0);
        /* the input is restored before the clock starts: the runtime's
         * call alone is timed, as the simulated graph has no copy */
        if (algo == SYNOR_TILED_CHOLESKY)
            memcpy(c, b, nn * sizeof *c);
        double t = now_s();
        if (!rc && algo == SYNOR_TILED_GEMM)
            rc = synor_tiled_sgemm(rt, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n, nb);
        else if (!rc)
            rc = synor_tiled_spotrf(rt, n, c, n, nb);
        if (k >= 3)
            real[k - 3] = now_s() - t;
    }
    if (!rc)
        rc = synor_runtime_trace(rt, "all", &t1);
    /* Simulated on the model as the timed runs left it: the comparison
     * call below alternates with OpenBLAS on all cores, whose threads may
     * still spin while the workers run, so its samples stay out. */
    if (!rc)
        rc = run_fabric(cat, det, rt, cpu.workers, 1, &f);
    if (!rc && g_opencl)
        rc = run_fabric(cat, det, rt, cpu.workers, 0, &f0);
    op_sum ops_before = {0}, ops_all = {0}, ops_sim = {0};
    sims sm = {0};
    if (!rc)
        rc = place_scales(f, w, pm, (const char *const *)kernels, fps, &sm);
    if (!rc)
        rc = simulate_all(f, w, pm, kernels, fps, &sm, &ops_sim);
    if (!rc && g_opencl)
        rc = simulate_charged(f, w, pm, kernels, fps, &sm);
    if (!rc && f0)
        rc = simulate(f0, w, pm, 0, &sm.noshare, NULL, NULL, NULL, &sm.noshare_off, kernels, fps);
    synor_tiled_result r = {0};
    /* the same as `synor run --tiled` times it, for comparison */
    if (!rc)
        rc = synor_exec_tiled(rt, algo, n, nb, SYNOR_DTYPE_FP32, 1, (unsigned)runs, &r);
    free(a);
    free(b);
    free(c);
    synor_runtime_destroy(rt);
    if (rc) {
        fprintf(stderr, "%s: %s\n", spec, rc == SYNOR_ENOMEM ? "out of memory" : synor_errmsg());
    } else {
        print_line(synor_workload_name(w), cpu.workers, runs, real, &sm, r.seconds,
                   (opencl_tasks(t1) - opencl_tasks(t0)) / runs,
                   (backend_tasks(t1, "cuda") - backend_tasks(t0, "cuda")) / runs);
        kernel_ops(t0, &ops_before);
        kernel_ops(t1, &ops_all);
        print_ops(&ops_sim, &ops_before, &ops_all, runs);
    }
    synor_fabric_destroy(f);
    synor_fabric_destroy(f0);
    synor_trace_destroy(t0);
    synor_trace_destroy(t1);
    synor_perfmodel_destroy(pm);
    synor_workload_destroy(w);
    free(kernels);
    free(fps);
    free(real);
    return rc;
}

int main(int argc, char **argv)
{
    int runs = 11, warm = 3, files = 0;
    unsigned workers = 0;
    const char *cache = NULL, *share_cache = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warm") && i + 1 < argc)
            warm = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
            workers = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--measure-cache") && i + 1 < argc)
            cache = argv[++i];
        else if (!strcmp(argv[i], "--sharing-cache") && i + 1 < argc)
            share_cache = argv[++i];
        else if (!strcmp(argv[i], "--opencl"))
            g_opencl = 1;
        else if (!strcmp(argv[i], "--cuda"))
            g_cuda = 1;
        else if (!strcmp(argv[i], "--spin-us") && i + 1 < argc)
            g_spin_us = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tiled") && i + 1 < argc)
            files++, i++;
        else if (argv[i][0] == '-') {
            fprintf(stderr,
                    "usage: %s [--runs R] [--warm W] [--workers N] [--measure-cache F] [--spin-us U] [--opencl] [--cuda] "
                    "[--sharing-cache F] WORKLOAD.json...\n",
                    argv[0]);
            return 2;
        } else
            files++;
    }
    if (!files || runs < 1 || warm < 3) {
        fprintf(stderr,
                "%s: give workload files; --runs >= 1, --warm >= 3 (the model "
                "needs 3 samples per entry)\n",
                argv[0]);
        return 2;
    }
    synor_catalog *cat;
    synor_detection *det;
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat) ||
        synor_detect_run_cached(cat,
                                SYNOR_DETECT_HOST | SYNOR_DETECT_MEASURE |
                                    (g_opencl ? SYNOR_DETECT_OPENCL : 0) |
                                    (g_cuda ? SYNOR_DETECT_CUDA : 0),
                                cache, &det)) {
        fprintf(stderr, "%s\n", synor_errmsg());
        return 1;
    }
    int rc = 0;
    if (g_opencl) { /* before any workload's runtime: it runs both sides */
        int src = synor_whatif_measure_sharing(workers, 1024, 256, 7, share_cache, &g_share);
        if (src == SYNOR_ENODEV)
            printf("sharing: none (%s)\n", synor_errmsg());
        else if (src) {
            fprintf(stderr, "%s\n", synor_errmsg());
            return 1;
        } else
            printf("sharing: device=\"%s\" cpu_alone_ms=%.3f cpu_with_device_ms=%.3f "
                   "cpu_slowdown=%.3f device_alone_ms=%.3f device_with_cpu_ms=%.3f "
                   "slowdown=%.3f%s\n",
                   g_share.device, g_share.cpu_alone_s * 1e3, g_share.cpu_with_device_s * 1e3,
                   g_share.cpu_slowdown, g_share.device_alone_s * 1e3,
                   g_share.device_with_cpu_s * 1e3, g_share.slowdown,
                   g_share.from_cache ? " (cached)" : "");
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tiled")) {
            rc |= one_tiled(cat, det, argv[++i], workers, runs) != 0;
            continue;
        }
        if (argv[i][0] == '-') {
            i += strcmp(argv[i], "--opencl") && strcmp(argv[i], "--cuda"); /* the others take a value */
            continue;
        }
        rc |= one(cat, det, argv[i], workers, warm, runs) != 0;
    }
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
    return rc;
}
