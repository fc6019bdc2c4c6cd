/* generate_sim.c - `synor generate --report --simulate`: the run just made,
 * simulated on this machine's fabric beside its real report (issue 12).
 *
 * The engine's events (synor_llm_ctx_events) become a workload: the steps
 * of a batch run one after the other (a barrier between them), the tasks of
 * a step in parallel on the CPU workers. So each CPU task depends on every
 * task of the step before. A GPU step (the "gpu_step" task of the worker
 * driving it) becomes its products on the GPU, each reached by its copy up
 * and left by its copy down (edges with the copies' bytes and measured
 * times, comm_s), and the host work around them on the driving worker.
 * Every task has an explicit cost row (workload.h): its measured time on
 * the device it ran on, and no other device can run it. The fabric is the
 * local one (synor_whatif_fabric_workers: one device per CPU worker) with
 * the run's CUDA GPU from detection, or, for a device detection does not
 * describe (the CUDA test double), a profile made for it from the run
 * (synor_whatif_run_fabric). The dynamic strategy then follows the real
 * placement.
 *
 * The time between steps (the workers' wake-up and dispatch after a
 * barrier, and between batches the host's sampling and the next batch's
 * submission) is a "barrier" task on the first worker between every two
 * steps, of one constant length per kind of gap: the median of the gaps
 * this run measured between a step's last end and the next step's first
 * start (the step gaps within a batch, and the batch gaps after a
 * classifier step). So the simulation is the run's own tasks and two
 * measured constants; the ratio of the makespans shows how well that
 * describes the run (a run whose gaps vary a lot, on a loaded machine,
 * strays from 1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "synor/detect.h"
#include "synor/llm.h"
#include "synor/report.h"
#include "synor/runtime.h"
#include "synor/sim.h"
#include "synor/whatif.h"

static int ev_by_start(const void *a, const void *b)
{
    const synor_llm_event *x = *(const synor_llm_event *const *)a,
                          *y = *(const synor_llm_event *const *)b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->worker > y->worker) - (x->worker < y->worker);
}

static synor_op_type op_type(const char *op)
{
    if (!strcmp(op, "attention"))
        return SYNOR_OP_SELF_ATTENTION;
    if (!strcmp(op, "rope_kv"))
        return SYNOR_OP_ROPE;
    if (!strcmp(op, "swiglu"))
        return SYNOR_OP_SILU;
    if (!strcmp(op, "gpu_host"))
        return SYNOR_OP_CUSTOM;
    return SYNOR_OP_MATMUL; /* qkv, out, ffn_up, ffn_down, classifier, sgemm, sgemv */
}

/* The workload under construction: tasks added in order, each with at
 * most one datum it consumes (a copy's bytes). */
typedef struct wb {
    synor_workload *w;
    const char *const *names; /* fabric device names */
    size_t ntask;
    int rc;
} wb;

static size_t add_task(wb *b, const char *kind, const synor_llm_event *e, size_t dev, double secs,
                       const size_t *deps, size_t nd, const double *comm, long consumes,
                       long produces_bytes, size_t *produced)
{
    if (b->rc)
        return 0;
    char id[64];
    snprintf(id, sizeof id, "%s.%s%d.%s.%zu", e->prefill ? "prefill" : "decode",
             e->layer < 0 ? "cls" : "L", e->layer < 0 ? 0 : e->layer, kind, b->ntask);
    size_t out = 0, cons = consumes >= 0 ? (size_t)consumes : 0;
    if (produces_bytes >= 0) {
        char dn[80];
        snprintf(dn, sizeof dn, "%s.out", id);
        if ((b->rc = synor_workload_add_data(b->w, dn, (uint64_t)produces_bytes, &out)))
            return 0;
        *produced = out;
    }
    synor_op op = {.type = op_type(kind), .dtype = SYNOR_DTYPE_FP32};
    op.work.type = op.type;
    op.work.dtype = op.dtype;
    double s = secs > 0 ? secs : 0;
    const char *dn = b->names[dev];
    synor_task_desc d = {.id = id,
                         .op = op,
                         .priority = SYNOR_PRIORITY_NORMAL,
                         .deps = deps,
                         .n_deps = nd,
                         .produces = produces_bytes >= 0 ? &out : NULL,
                         .n_produces = produces_bytes >= 0,
                         .consumes = consumes >= 0 ? &cons : NULL,
                         .n_consumes = consumes >= 0,
                         .exec_s = &s,
                         .exec_dev = &dn,
                         .n_exec = 1,
                         .dep_comm = comm};
    size_t idx = 0;
    b->rc = synor_workload_add_task(b->w, &d, &idx);
    b->ntask++;
    return idx;
}

/* The fabric: one device per CPU worker, and the GPU the run used (gpu
 * NULL: none). dev[k] gets the fabric index of worker k, *gdev the GPU's. */
static int local_fabric(synor_catalog *cat, synor_detection *det, size_t ncpu,
                        const synor_llm_gpu_info *gi, synor_fabric **out, size_t *cpu_dev,
                        size_t *gdev, const char **gpu_source)
{
    synor_fabric *f = NULL;
    synor_whatif_change ch = {0};
    char prof[64] = "";
    unsigned k = 0;
    if (gi->layers && sscanf(gi->device, "cuda%u", &k) == 1)
        snprintf(prof, sizeof prof, "local-cuda%u", k);
    int rc = synor_whatif_fabric_workers(cat, det, (unsigned)ncpu, NULL, 0, &f);
    int found = 0;
    for (size_t d = 0; !rc && gi->layers && d < synor_fabric_device_count(f); d++) {
        const synor_fabric_device *fd = synor_fabric_device_at(f, d);
        if (fd->profile && !strcmp(fd->profile->id, prof))
            found = 1;
    }
    if (!rc && gi->layers && !found) { /* not detected: a profile from the run */
        synor_whatif_run_device rd = {gi->device, gi->product, 0, 0, 0, 0};
        synor_fabric *tmp = NULL;
        rc = synor_whatif_run_fabric(cat, det, &rd, 1, &tmp);
        synor_fabric_destroy(tmp);
        snprintf(prof, sizeof prof, "local-run-%s", gi->device);
        ch = (synor_whatif_change){.profile = prof, .count = 1};
        synor_fabric_destroy(f);
        f = NULL;
        if (!rc)
            rc = synor_whatif_fabric_workers(cat, det, (unsigned)ncpu, &ch, 1, &f);
        *gpu_source = "a profile made from the run (detection does not describe it)";
    } else if (gi->layers) {
        *gpu_source = "detection";
    }
    size_t nc = 0;
    *gdev = SIZE_MAX;
    for (size_t d = 0; !rc && d < synor_fabric_device_count(f); d++) {
        const synor_fabric_device *fd = synor_fabric_device_at(f, d);
        if (synor_whatif_is_cpu_device(fd, (unsigned)ncpu) && nc < ncpu)
            cpu_dev[nc++] = d;
        else if (gi->layers && fd->profile && !strcmp(fd->profile->id, prof) && *gdev == SIZE_MAX)
            *gdev = d;
    }
    if (!rc && (nc != ncpu || (gi->layers && *gdev == SIZE_MAX))) {
        synor_fabric_destroy(f);
        cli_error("--simulate: the local fabric has %zu of the run's %zu CPU workers%s", nc, ncpu,
                  gi->layers && *gdev == SIZE_MAX ? " and not its GPU" : "");
        return CLI_FAIL;
    }
    if (rc) {
        synor_fabric_destroy(f);
        cli_error("--simulate: %s", synor_errmsg());
        return CLI_FAIL;
    }
    *out = f;
    return CLI_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The end of the step that starts at host[i] (its tasks: the host events
 * of one CPU step, or one "gpu_step"), its first start and last end. */
static size_t step_end(const synor_llm_event *const *host, size_t nh, size_t i, double *first,
                       double *last)
{
    const synor_llm_event *e = host[i];
    size_t j = i + 1;
    if (strcmp(e->op, "gpu_step"))
        while (j < nh && !strcmp(host[j]->op, e->op) && host[j]->layer == e->layer &&
               host[j]->prefill == e->prefill)
            j++;
    *first = e->start;
    *last = e->end;
    for (size_t k = i; k < j; k++) {
        *first = host[k]->start < *first ? host[k]->start : *first;
        *last = host[k]->end > *last ? host[k]->end : *last;
    }
    return j;
}

/* The medians of the step gaps (within a batch) and the batch gaps (after
 * a classifier step); 0 where there is none. */
static void gap_medians(const synor_llm_event *const *host, size_t nh, double *step_gap,
                        double *batch_gap)
{
    double *g[2];
    size_t n[2] = {0, 0};
    g[0] = calloc(nh ? nh : 1, sizeof *g[0]);
    g[1] = calloc(nh ? nh : 1, sizeof *g[1]);
    *step_gap = *batch_gap = 0;
    if (!g[0] || !g[1]) {
        free(g[0]);
        free(g[1]);
        return;
    }
    double prev_last = 0;
    int prev_cls = 0;
    for (size_t i = 0; i < nh;) {
        double first, last;
        size_t j = step_end(host, nh, i, &first, &last);
        if (i) {
            double gap = first - prev_last;
            g[prev_cls][n[prev_cls]++] = gap > 0 ? gap : 0;
        }
        prev_last = last;
        prev_cls = host[i]->layer < 0;
        i = j;
    }
    for (int k = 0; k < 2; k++)
        if (n[k]) {
            qsort(g[k], n[k], sizeof *g[k], cmp_double);
            *(k ? batch_gap : step_gap) = g[k][n[k] / 2];
        }
    free(g[0]);
    free(g[1]);
}

/* Builds the workload of the run's events (see the top of the file). */
static int build(const synor_llm_event *ev, size_t n, const size_t *cpu_dev, size_t gdev,
                 const char *const *names, double *step_gap, double *batch_gap,
                 synor_workload **out)
{
    const synor_llm_event **host = calloc(n ? n : 1, sizeof *host);
    const synor_llm_event **gev = calloc(n ? n : 1, sizeof *gev);
    size_t *prev = calloc(n ? n : 1, sizeof *prev), *cur = calloc(n ? n : 1, sizeof *cur);
    double *comm = calloc(n ? n : 1, sizeof *comm);
    wb b = {.names = names};
    if (!host || !gev || !prev || !cur || !comm) {
        b.rc = 1;
        cli_error("out of memory");
        goto done;
    }
    size_t nh = 0, ng = 0;
    for (size_t i = 0; i < n; i++)
        if (ev[i].gpu)
            gev[ng++] = &ev[i];
        else
            host[nh++] = &ev[i];
    qsort(host, nh, sizeof *host, ev_by_start);
    qsort(gev, ng, sizeof *gev, ev_by_start);
    gap_medians(host, nh, step_gap, batch_gap);
    if ((b.rc = synor_workload_create("generate (the real run's tasks)", &b.w))) {
        cli_error("--simulate: %s", synor_errmsg());
        goto done;
    }
    size_t np = 0; /* the tasks of the step before */
    int after_cls = 0;
    for (size_t i = 0; i < nh && !b.rc;) {
        const synor_llm_event *e = host[i];
        if (np) { /* the barrier: the gap between the step before and this one */
            size_t bar = add_task(&b, "barrier", e, cpu_dev[0], after_cls ? *batch_gap : *step_gap,
                                  prev, np, NULL, -1, -1, NULL);
            prev[0] = bar;
            np = 1;
        }
        after_cls = e->layer < 0;
        for (size_t j = 0; j < np; j++)
            comm[j] = -1;
        size_t nc = 0;
        if (strcmp(e->op, "gpu_step")) { /* a CPU step: its tasks in parallel */
            size_t j = i;
            while (j < nh && !strcmp(host[j]->op, e->op) && host[j]->layer == e->layer &&
                   host[j]->prefill == e->prefill)
                j++;
            for (; i < j; i++)
                cur[nc++] = add_task(&b, host[i]->op, host[i], cpu_dev[host[i]->worker],
                                     host[i]->end - host[i]->start, prev, np, NULL, -1, -1, NULL);
        } else { /* a GPU step: up, product, down for each product, then the host part */
            double inside = 0;
            size_t dep_n = np, last = 0, datum = 0;
            long consumes = -1;
            const size_t *deps = prev;
            size_t one[1];
            double onec[1];
            for (size_t g = 0; g < ng; g++) {
                const synor_llm_event *u = gev[g];
                if (u->worker != e->worker || u->start < e->start || u->end > e->end ||
                    strcmp(u->op, "h2d") || g + 2 >= ng)
                    continue;
                const synor_llm_event *p = gev[g + 1], *d = gev[g + 2];
                inside += (u->end - u->start) + (p->end - p->start) + (d->end - d->start);
                double up = u->end - u->start;
                if (deps == prev) { /* the copy up from every task of the step before */
                    for (size_t j = 0; j < np; j++)
                        comm[j] = up;
                } else {
                    onec[0] = up;
                }
                last = add_task(&b, p->op, p, gdev, p->end - p->start, deps, dep_n,
                                deps == prev ? (np ? comm : NULL) : onec, consumes,
                                (long)d->bytes, &datum);
                one[0] = last;
                onec[0] = d->end - d->start;
                deps = one;
                dep_n = 1;
                consumes = (long)datum;
                g += 2;
            }
            if (deps == one) { /* the host part after the copy down */
                cur[nc++] = add_task(&b, "gpu_host", e, cpu_dev[e->worker],
                                     (e->end - e->start) - inside, one, 1, onec, consumes, -1,
                                     NULL);
            } else {
                cur[nc++] = add_task(&b, "gpu_host", e, cpu_dev[e->worker], e->end - e->start,
                                     prev, np, NULL, -1, -1, NULL);
            }
            i++;
        }
        memcpy(prev, cur, nc * sizeof *prev);
        np = nc;
    }
    if (!b.rc)
        b.rc = synor_workload_finish(b.w);
    if (b.rc) {
        cli_error("--simulate: %s", synor_errmsg());
        synor_workload_destroy(b.w);
        b.w = NULL;
    }
done:
    free(host);
    free(gev);
    free(prev);
    free(cur);
    free(comm);
    *out = b.w;
    return b.rc ? CLI_FAIL : CLI_OK;
}

int cli_llm_simulate(const cli_globals *g, const synor_llm_ctx *c, unsigned cpu_workers)
{
    size_t n;
    const synor_llm_event *ev = synor_llm_ctx_events(c, &n);
    double t0 = n ? ev[0].start : 0, t1 = t0; /* the real makespan, as its report has it */
    for (size_t i = 0; i < n; i++) {
        t0 = ev[i].start < t0 ? ev[i].start : t0;
        t1 = ev[i].end > t1 ? ev[i].end : t1;
    }
    double real_makespan = t1 - t0;
    synor_llm_gpu_info gi;
    synor_llm_ctx_gpu(c, &gi);
    int maxw = -1;
    for (size_t i = 0; i < n; i++)
        maxw = ev[i].worker > maxw ? ev[i].worker : maxw;
    if (maxw < 0) {
        cli_error("--simulate: the run recorded no tasks");
        return CLI_FAIL;
    }
    /* every worker the run had, even one that ran nothing (a busy machine
     * can leave a worker without a task in a short run) */
    size_t ncpu = (size_t)maxw + 1 > cpu_workers ? (size_t)maxw + 1 : cpu_workers;
    synor_catalog *cat = cli_load_catalog(g);
    synor_detection *det = NULL;
    synor_fabric *f = NULL;
    synor_workload *w = NULL;
    synor_cost *cost = NULL;
    synor_trace *t = NULL;
    size_t *cpu_dev = calloc(ncpu, sizeof *cpu_dev), gdev = SIZE_MAX;
    const char **names = NULL;
    const char *gpu_source = "";
    int rc = CLI_FAIL;
    cli_local lo = {0};
    if (!cat || !cpu_dev || cli_local_detect(cat, &lo, &det) ||
        local_fabric(cat, det, ncpu, &gi, &f, cpu_dev, &gdev, &gpu_source))
        goto out;
    size_t nd = synor_fabric_device_count(f);
    if (!(names = calloc(nd, sizeof *names)))
        goto out;
    for (size_t d = 0; d < nd; d++)
        names[d] = synor_fabric_device_at(f, d)->name;
    double step_gap = 0, batch_gap = 0;
    if (build(ev, n, cpu_dev, gdev, names, &step_gap, &batch_gap, &w))
        goto out;
    if (synor_cost_create(w, f, &cost) || synor_simulate(cost, NULL, &t)) {
        cli_error("--simulate: %s", synor_errmsg());
        goto out;
    }
    char note[512], gaps[512];
    snprintf(note, sizeof note,
             "The run's tasks on the local fabric (one device per CPU worker%s%s), each "
             "taking the time it measured on the device it ran on, copies to and from the GPU "
             "as edges with their measured times.",
             gi.layers ? "; the GPU from " : "", gpu_source);
    snprintf(gaps, sizeof gaps,
             "Between two steps, a barrier task on the first worker: %.1f us within a batch "
             "(wake-up and dispatch), %.1f us after a batch's classifier (sampling, the next "
             "batch's submission): the medians of the gaps this run measured. %zu tasks with "
             "the barriers.",
             step_gap * 1e6, batch_gap * 1e6, synor_workload_count(w));
    const char *notes[2] = {note, gaps};
    synor_report_options ro = {.title = "GENERATE REPORT (the same tasks, simulated)",
                               .assumptions = notes,
                               .n_assumptions = 2,
                               .width = 72};
    char *text = synor_report_text(t, &ro);
    if (!text) {
        cli_error("--simulate: out of memory");
        goto out;
    }
    fputs(text, stderr);
    free(text);
    fprintf(stderr, "synor: simulated makespan %.3f ms vs real %.3f ms (ratio %.3f)\n",
            t->makespan * 1e3, real_makespan * 1e3,
            real_makespan > 0 ? t->makespan / real_makespan : NAN);
    rc = CLI_OK;
out:
    synor_trace_destroy(t);
    synor_cost_destroy(cost);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
    free(cpu_dev);
    free(names);
    return rc;
}
