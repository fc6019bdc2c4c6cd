/* generate_report.c - what `synor generate` prints about where a model ran:
 * the split planner's decision (--gpu-layers plan) and the utilization
 * report and timeline of the run (--report), made by src/report from a
 * trace built out of the engine's own events (synor_llm_ctx_events): one
 * processor per runtime worker and one for the GPU, whose products are its
 * tasks and whose copies are the transfers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "synor/llm.h"
#include "synor/report.h"
#include "synor/runtime.h"
#include "synor/sim.h"

static double ms(double s) { return s * 1e3; }

void cli_llm_print_plan(FILE *f, const synor_llm_split_plan *p, const char *gpu)
{
    int L = p->layers;
    fprintf(f,
            "synor: split plan: calibrated in %.3f s on the CPU workers and %s, batches of %d "
            "rows (prefill) and of 1 (decode), the layers' measured times:\n",
            p->calibration_s, gpu, p->prompt_rows);
    fprintf(f, "  %-10s %12s %12s %12s %12s\n", "layer", "prefill CPU", "prefill GPU", "decode CPU",
            "decode GPU");
    for (int l = 0; l <= L; l++) {
        int cls = l == L;
        const char *name = cls ? "classifier" : NULL;
        char lbl[16];
        if (!name) {
            snprintf(lbl, sizeof lbl, "%d", l);
            name = lbl;
        }
        int on_gpu = cls ? p->uploaded == L : l >= L - p->uploaded;
        double v[4] = {cls ? p->cls_s[0][0] : p->layer_s[0][0][l],
                       cls ? p->cls_s[0][1] : p->layer_s[0][1][l],
                       cls ? p->cls_s[1][0] : p->layer_s[1][0][l],
                       cls ? p->cls_s[1][1] : p->layer_s[1][1][l]};
        fprintf(f, "  %-10s", name);
        for (int i = 0; i < 4; i++) {
            if ((i % 2 && !on_gpu) || (i < 2 && p->prompt_rows == 1))
                fprintf(f, " %12s", "-");
            else
                fprintf(f, " %9.3f ms", ms(v[i]));
        }
        fputc('\n', f);
    }
    for (int ph = 0; ph < 2; ph++) {
        int k = ph ? p->split.decode : p->split.prefill;
        const double *est = p->estimate_s[ph];
        fprintf(f,
                "synor: %s: %d of %d layers on the GPU%s: estimate %.3f ms a batch (all on the "
                "CPU %.3f ms, every uploaded layer on the GPU %.3f ms; measured %.3f and %.3f)\n",
                ph ? "decode (1 row)" : "prefill", k, L,
                k == L && p->uploaded == L ? " and the classifier" : "", ms(est[k]), ms(est[0]),
                ms(est[p->uploaded]), ms(p->measured_s[ph][0]), ms(p->measured_s[ph][1]));
    }
}

static int by_start(const void *a, const void *b)
{
    const synor_trace_task *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int xfer_by_start(const void *a, const void *b)
{
    const synor_trace_transfer *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

char *cli_llm_report(const synor_llm_ctx *c, const synor_runtime *rt, const char *workload,
                     const char *strategy)
{
    size_t n;
    const synor_llm_event *ev = synor_llm_ctx_events(c, &n);
    synor_llm_gpu_info gi;
    synor_llm_ctx_gpu(c, &gi);
    int maxw = -1;
    for (size_t i = 0; i < n; i++)
        maxw = ev[i].worker > maxw ? ev[i].worker : maxw;
    size_t ncpu = (size_t)(maxw + 1), ndev = ncpu + (gi.layers > 0);
    if (ndev == 0)
        return NULL;
    synor_trace_device *dev = calloc(ndev, sizeof *dev);
    char(*dname)[16] = calloc(ndev, sizeof *dname);
    synor_trace_task *task = calloc(n ? n : 1, sizeof *task);
    synor_trace_transfer *xf = calloc(n ? n : 1, sizeof *xf);
    char(*ids)[32] = calloc(n ? n : 1, sizeof *ids);
    char *out = NULL;
    if (!dev || !dname || !task || !xf || !ids)
        goto done;
    char cpu_product[96] = "";
    synor_runtime_device_info di;
    for (unsigned i = 0; i < synor_runtime_device_count(rt); i++)
        if (!synor_runtime_device_get(rt, i, &di) && !strcmp(di.backend, "host")) {
            snprintf(cpu_product, sizeof cpu_product, "%s", di.product);
            break;
        }
    for (size_t d = 0; d < ncpu; d++) {
        snprintf(dname[d], sizeof dname[d], "cpu/%zu", d);
        dev[d] = (synor_trace_device){
            .name = dname[d], .product = cpu_product, .kind = "cpu", .backend = "host"};
    }
    if (gi.layers)
        dev[ncpu] = (synor_trace_device){
            .name = gi.device,
            .product = gi.product,
            .kind = "gpu",
            .backend = !strncmp(gi.device, "opencl", 6) ? "OpenCL" : "CUDA"};
    size_t nt = 0, nx = 0;
    double makespan = 0, t0 = n ? ev[0].start : 0;
    for (size_t i = 0; i < n; i++)
        t0 = ev[i].start < t0 ? ev[i].start : t0;
    for (size_t i = 0; i < n; i++) { /* times from the first task on */
        synor_llm_event ec = ev[i];
        ec.start -= t0;
        ec.end -= t0;
        const synor_llm_event *e = &ec;
        makespan = e->end > makespan ? e->end : makespan;
        if (e->layer < 0)
            snprintf(ids[i], sizeof ids[i], "%s.cls", e->prefill ? "prefill" : "decode");
        else
            snprintf(ids[i], sizeof ids[i], "%s.L%d", e->prefill ? "prefill" : "decode",
                     e->layer);
        if (e->gpu && strcmp(e->op, "h2d") && strcmp(e->op, "d2h")) {
            task[nt++] = (synor_trace_task){
                .id = ids[i], .op = e->op, .device = ncpu, .start = e->start, .end = e->end};
        } else if (e->gpu) {
            int up = !strcmp(e->op, "h2d");
            xf[nx++] = (synor_trace_transfer){.data = ids[i],
                                              .link = up ? "host->gpu (activations)"
                                                         : "gpu->host (activations)",
                                              .from_dev = up ? (size_t)e->worker : ncpu,
                                              .to_dev = up ? ncpu : (size_t)e->worker,
                                              .bytes = e->bytes,
                                              .start = e->start,
                                              .end = e->end,
                                              .path = "host"};
        } else {
            task[nt++] = (synor_trace_task){.id = ids[i],
                                            .op = e->op,
                                            .device = (size_t)e->worker,
                                            .start = e->start,
                                            .end = e->end};
        }
    }
    qsort(task, nt, sizeof *task, by_start);
    qsort(xf, nx, sizeof *xf, xfer_by_start);
    synor_trace t = {.workload = workload,
                     .fabric = "this machine (real run)",
                     .strategy = strategy,
                     .currency = "",
                     .n_devices = ndev,
                     .devices = dev,
                     .n_tasks = nt,
                     .tasks = task,
                     .n_transfers = nx,
                     .transfers = xf,
                     .makespan = makespan};
    synor_report_options ro = {.title = "GENERATE REPORT (the engine's tasks, real run)",
                               .width = 72};
    out = synor_report_text(&t, &ro);
done:
    free(dev);
    free(dname);
    free(task);
    free(xf);
    free(ids);
    return out;
}
