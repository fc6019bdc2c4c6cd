/* run_pipeline.c - `synor run W --strategy pipeline`: the pipeline
 * strategy plans W on a fabric of this run's own devices (cpu, openclK,
 * cudaK: synor_whatif_run_fabric), its task times calibrated on the
 * performance model (synor_whatif_calibrate); the run follows the plan's
 * device per task (hints), the memory manager moving data between the
 * stages' memory spaces; the report gets a PIPELINE section: per stage its
 * device, layers, tasks, busy time, utilization, bubble, planned and real. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct pipe_stage {
    char device[64];
    size_t first_layer, end_layer;
    size_t fdev;           /* the fabric device */
    double per_micro_batch; /* planned seconds */
    int stage;             /* 0: a device with tasks in no layer only */
} pipe_stage;

struct cli_pipe {
    size_t n_tasks, n_stages, n_rows, micro_batches, buffers, forced;
    pipe_stage *st;        /* the stages, then the other devices the plan uses */
    size_t *stage_of;      /* per task: its row of st */
    double *pstart, *pend; /* per task: planned */
    char (*pdev)[64];      /* per task: planned device */
    double planned_makespan;
    size_t n_devices;      /* of the run */
    synor_whatif_calibration ci;
};

void cli_pipe_free(cli_pipe *p)
{
    if (!p)
        return;
    free(p->st);
    free(p->stage_of);
    free(p->pstart);
    free(p->pend);
    free(p->pdev);
    free(p);
}

static int rt_index(const synor_runtime *rt, const char *name)
{
    for (unsigned i = 0; i < synor_runtime_device_count(rt); i++) {
        synor_runtime_device_info d;
        if (synor_runtime_device_get(rt, i, &d) == 0 && !strcmp(d.name, name))
            return (int)i;
    }
    return -1;
}

/* The plan, its stages and the hints; CLI_OK or CLI_FAIL (printed). */
static int plan_it(synor_runtime *rt, const synor_workload *w, const synor_perfmodel *pm,
                   const cli_pipe_opts *o, synor_catalog *cat, unsigned *hints, cli_pipe *P)
{
    synor_detection *det = NULL;
    synor_fabric *f = NULL;
    synor_workload *cw = NULL;
    synor_cost *c = NULL;
    synor_plan *plan = NULL;
    char cache_default[4096];
    const char *cache = o->measure_cache;
    if (!cache && synor_detect_default_cache_path(cache_default, sizeof cache_default) == 0)
        cache = cache_default;
    unsigned nd = synor_runtime_device_count(rt);
    synor_whatif_run_device *rd = calloc(nd ? nd : 1, sizeof *rd);
    synor_runtime_device_info *info = calloc(nd ? nd : 1, sizeof *info);
    int rc = !rd || !info;
    if (rc)
        cli_error("out of memory");
    for (unsigned i = 0; !rc && i < nd; i++) {
        synor_runtime_device_get(rt, i, &info[i]);
        rd[i].name = info[i].name;
        rd[i].product = info[i].product;
        rd[i].memory = info[i].memory_capacity;
    }
    synor_plan_options po;
    synor_plan_options_init(&po);
    po.strategy = SYNOR_STRATEGY_PIPELINE;
    po.micro_batches = o->micro_batches;
    po.pipeline_buffers = o->buffers;
    po.pipeline_stages = o->stages;
    if (!rc && (synor_detect_run_cached(cat,
                                        SYNOR_DETECT_HOST | SYNOR_DETECT_CUDA |
                                            SYNOR_DETECT_OPENCL | SYNOR_DETECT_MEASURE,
                                        cache, &det) ||
                synor_whatif_run_fabric(cat, det, rd, nd, &f) ||
                synor_whatif_calibrate(f, w, pm, &cw, &P->ci) || synor_cost_create(cw, f, &c) ||
                synor_plan_create(c, &po, &plan))) {
        cli_error("--strategy pipeline: %s", synor_errmsg());
        rc = 1;
    }
    size_t n = synor_workload_count(w);
    P->n_tasks = n;
    P->n_devices = nd;
    if (!rc) {
        P->st = calloc(plan->n_stages + nd + 1, sizeof *P->st);
        P->stage_of = calloc(n ? n : 1, sizeof *P->stage_of);
        P->pstart = calloc(n ? n : 1, sizeof *P->pstart);
        P->pend = calloc(n ? n : 1, sizeof *P->pend);
        P->pdev = calloc(n ? n : 1, sizeof *P->pdev);
        if (!P->st || !P->stage_of || !P->pstart || !P->pend || !P->pdev) {
            cli_error("out of memory");
            rc = 1;
        }
    }
    if (!rc) {
        P->n_stages = plan->n_stages;
        P->micro_batches = plan->micro_batches;
        P->buffers = plan->pipeline_buffers;
        P->forced = o->stages;
        P->planned_makespan = plan->makespan;
        for (size_t s = 0; s < plan->n_stages; s++) {
            const synor_plan_stage *ps = &plan->stages[s];
            snprintf(P->st[s].device, sizeof P->st[s].device, "%s",
                     synor_fabric_device_at(f, ps->dev)->name);
            P->st[s].first_layer = ps->first_layer;
            P->st[s].end_layer = ps->end_layer;
            P->st[s].fdev = ps->dev;
            P->st[s].per_micro_batch = ps->time_per_micro_batch;
            P->st[s].stage = 1;
        }
        P->n_rows = P->n_stages;
    }
    for (size_t i = 0; !rc && i < n; i++) {
        if (strcmp(synor_workload_task(cw, i)->id, synor_workload_task(w, i)->id) != 0) {
            cli_error("--strategy pipeline: the calibrated workload's task %zu is '%s', not "
                      "'%s'",
                      i, synor_workload_task(cw, i)->id, synor_workload_task(w, i)->id);
            rc = 1;
            break;
        }
        const char *dn = synor_fabric_device_at(f, plan->device[i])->name;
        int ri = rt_index(rt, dn);
        if (ri < 0) { /* cannot happen: the fabric is the run's devices */
            cli_error("--strategy pipeline: planned device '%s' is not a device of this run", dn);
            rc = 1;
            break;
        }
        hints[i] = (unsigned)ri + 1;
        snprintf(P->pdev[i], sizeof P->pdev[i], "%s", dn);
        P->pstart[i] = plan->start[i];
        P->pend[i] = plan->finish[i];
        P->stage_of[i] = SIZE_MAX;
        for (size_t s = 0; s < P->n_rows; s++)
            if (P->st[s].fdev == plan->device[i])
                P->stage_of[i] = s;
        if (P->stage_of[i] == SIZE_MAX) { /* a task in no layer, on a device of no stage */
            pipe_stage *r = &P->st[P->n_rows];
            snprintf(r->device, sizeof r->device, "%s", dn);
            r->fdev = plan->device[i];
            P->stage_of[i] = P->n_rows++;
        }
    }
    synor_plan_destroy(plan);
    synor_cost_destroy(c);
    synor_workload_destroy(cw);
    synor_fabric_destroy(f);
    synor_detection_destroy(det);
    free(rd);
    free(info);
    return rc ? CLI_FAIL : CLI_OK;
}

int cli_pipe_plan(synor_runtime *rt, const synor_workload *w, const synor_perfmodel *pm,
                  const cli_pipe_opts *o, unsigned *hints, cli_pipe **out)
{
    *out = NULL;
    cli_pipe *P = calloc(1, sizeof *P);
    synor_catalog *cat = NULL;
    if (!P || synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)) {
        cli_error("%s", P ? synor_errmsg() : "out of memory");
        free(P);
        synor_catalog_destroy(cat);
        return CLI_FAIL;
    }
    int rc = plan_it(rt, w, pm, o, cat, hints, P);
    synor_catalog_destroy(cat);
    if (rc != CLI_OK) {
        cli_pipe_free(P);
        return rc;
    }
    *out = P;
    return CLI_OK;
}

typedef struct span {
    double a, b;
} span;

static int by_start(const void *x, const void *y)
{
    const span *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a;
}

/* The time covered by the spans (a device with several workers runs some
 * at once: busy is the union, never more than the makespan). */
static double covered(span *v, size_t n)
{
    qsort(v, n, sizeof *v, by_start);
    double sum = 0, a = 0, b = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (v[i].a > b) {
            if (b > a)
                sum += b - a;
            a = v[i].a;
            b = v[i].b;
        } else if (v[i].b > b) {
            b = v[i].b;
        }
    }
    if (n && b > a)
        sum += b - a;
    return sum;
}

/* The task index of a real run's trace task ("matmul#12": tag = index + 1). */
static size_t task_of(const char *id, size_t n)
{
    const char *h = id ? strrchr(id, '#') : NULL;
    if (!h)
        return SIZE_MAX;
    char *end;
    unsigned long long tag = strtoull(h + 1, &end, 10);
    return *end || tag < 1 || tag > n ? SIZE_MAX : (size_t)tag - 1;
}

int cli_pipe_report(const cli_pipe *P, const synor_trace *t)
{
    size_t n = P->n_tasks, S = P->n_stages;
    size_t *ti_of = calloc(t->n_tasks ? t->n_tasks : 1, sizeof *ti_of);
    size_t nr = t->n_tasks > n ? t->n_tasks : n;
    span *real = calloc(nr ? nr : 1, sizeof *real), *plan = calloc(n ? n : 1, sizeof *plan);
    if (!ti_of || !real || !plan) {
        free(ti_of);
        free(real);
        free(plan);
        cli_error("out of memory");
        return CLI_FAIL;
    }
    size_t seen = 0, unmatched = 0;
    for (size_t k = 0; k < t->n_tasks; k++) {
        ti_of[k] = task_of(t->tasks[k].id, n);
        seen += ti_of[k] != SIZE_MAX;
        unmatched += ti_of[k] == SIZE_MAX;
    }
    printf("\nPIPELINE  %zu stage%s over %zu micro-batches, planned by the pipeline strategy on "
           "this run's devices (%s)\n",
           S, S == 1 ? "" : "s", P->micro_batches,
           P->forced ? "--stages: the number of stages forced" : "the best number of stages");
    printf("  task times: %zu of %zu (task, device) from the performance model, %zu fitted "
           "per kernel, %zu over all kernels, %zu roofline alone\n",
           P->ci.from_model, P->ci.tasks * P->ci.local_devices, P->ci.from_kernel_fit,
           P->ci.from_overall_fit, P->ci.from_roofline);
    if (P->buffers)
        printf("  --buffers %zu bounds the plan; the run starts a task as soon as its inputs "
               "are ready\n",
               P->buffers);
    double mk = t->makespan, pmk = P->planned_makespan;
    printf("  %-5s %-10s %-7s %5s %6s %10s %6s %10s %10s %10s\n", "stage", "device", "layers",
           "tasks", "moved", "busy_s", "util", "bubble_s", "plan_busy", "plan_bub");
    double busy_all = 0, pbusy_all = 0;
    size_t in_stages = 0, outside = 0;
    for (size_t s = 0; s < P->n_rows; s++) {
        size_t cnt = 0, pc = 0, moved = 0;
        for (size_t k = 0; k < t->n_tasks; k++) {
            size_t i = ti_of[k];
            if (i == SIZE_MAX || P->stage_of[i] != s)
                continue;
            real[cnt++] = (span){t->tasks[k].start, t->tasks[k].end};
            /* a real trace names a CPU worker "cpu/0": its device is "cpu" */
            const char *dn = t->tasks[k].device < t->n_devices
                                 ? t->devices[t->tasks[k].device].name
                                 : "";
            size_t len = strcspn(dn, "/");
            moved += strlen(P->pdev[i]) != len || strncmp(dn, P->pdev[i], len) != 0;
        }
        for (size_t i = 0; i < n; i++)
            if (P->stage_of[i] == s)
                plan[pc++] = (span){P->pstart[i], P->pend[i]};
        double busy = covered(real, cnt), pbusy = covered(plan, pc);
        char layers[32] = "none";
        if (P->st[s].stage) {
            busy_all += busy;
            pbusy_all += pbusy;
            in_stages += cnt;
            snprintf(layers, sizeof layers, P->st[s].end_layer - P->st[s].first_layer > 1
                                                ? "%zu-%zu"
                                                : "%zu",
                     P->st[s].first_layer, P->st[s].end_layer - 1);
        } else {
            outside += cnt;
        }
        char name[8] = "-";
        if (P->st[s].stage)
            snprintf(name, sizeof name, "%zu", s);
        printf("  %-5s %-10s %-7s %5zu %6zu %10.6f %5.1f%% %10.6f %10.6f %10.6f\n", name,
               P->st[s].device, layers, cnt, moved, busy, mk > 0 ? 100 * busy / mk : 0,
               mk - busy, pbusy, pmk - pbusy);
    }
    if (P->n_rows > S)
        printf("  (stage '-': a device that runs only tasks in no layer, those without a "
               "weight of their own, such as activations: the planner puts each where it "
               "finishes first)\n");
    printf("  makespan: real %.6f s, planned %.6f s (real / planned %.2f)\n", mk, pmk,
           pmk > 0 ? mk / pmk : 0);
    double gpipe = S ? (double)(S - 1) / (double)(P->micro_batches + S - 1) : 0;
    printf("  bubble in all: real %.1f%%, planned %.1f%% of the stages' time (GPipe's "
           "(S-1)/(M+S-1) = %.1f%%)\n",
           mk > 0 && S ? 100 * (1 - busy_all / (mk * (double)S)) : 0,
           pmk > 0 && S ? 100 * (1 - pbusy_all / (pmk * (double)S)) : 0, 100 * gpipe);
    uint64_t xb = 0;
    for (size_t k = 0; k < t->n_transfers; k++)
        xb += t->transfers[k].bytes;
    printf("  data between memory spaces: %zu transfers, %.2f MiB (the memory manager's "
           "copies)\n",
           t->n_transfers, (double)xb / 1048576.0);
    printf("  tasks: %zu in stages + %zu outside = %zu of the run's %zu (%zu unmatched)\n",
           in_stages, outside, seen, n, unmatched);
    if (S == 1)
        printf("  One stage: the planner puts every layer on %s (splitting would be slower on "
               "these devices); --stages N forces N stages over the %zu device%s of the run, "
               "for a demonstration.\n",
               P->st[0].device, P->n_devices, P->n_devices == 1 ? "" : "s");
    free(ti_of);
    free(real);
    free(plan);
    return seen == n && !unmatched ? CLI_OK : CLI_FAIL;
}
