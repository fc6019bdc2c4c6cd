/* export.c - trace exports for viewers: Chrome trace-event JSON (Perfetto,
 * chrome://tracing) and an SVG Gantt chart.
 *
 * Chrome format: complete events ("ph": "X") with microsecond timestamps;
 * process 1 holds one thread per device, process 2 one thread per link;
 * metadata events name them. A trace's marks (preemptions) are instant
 * events ("ph": "i") on their device's thread, or complete events when
 * they last (a checkpoint), category "mark". In the SVG, consecutive tasks of the same
 * operation on a device closer than half a pixel are drawn as one bar
 * ("decode_step x80") so a 20,000-task run stays a small file. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "report/report_internal.h"
#include "json/json.h"
#include "synor/report.h"

static void meta(synor__jw *w, int pid, size_t tid, const char *what, const char *name)
{
    synor__jw_obj_begin(w);
    synor__jw_key(w, "ph");
    synor__jw_str(w, "M");
    synor__jw_key(w, "pid");
    synor__jw_int(w, pid);
    synor__jw_key(w, "tid");
    synor__jw_uint(w, tid);
    synor__jw_key(w, "name");
    synor__jw_str(w, what);
    synor__jw_key(w, "args");
    synor__jw_obj_begin(w);
    synor__jw_key(w, "name");
    synor__jw_str(w, name);
    synor__jw_obj_end(w);
    synor__jw_obj_end(w);
}

static void span(synor__jw *w, int pid, size_t tid, const char *name, const char *cat,
                 double start, double end)
{
    synor__jw_key(w, "ph");
    synor__jw_str(w, "X");
    synor__jw_key(w, "pid");
    synor__jw_int(w, pid);
    synor__jw_key(w, "tid");
    synor__jw_uint(w, tid);
    synor__jw_key(w, "name");
    synor__jw_str(w, name);
    synor__jw_key(w, "cat");
    synor__jw_str(w, cat);
    synor__jw_key(w, "ts");
    synor__jw_num(w, start * 1e6);
    synor__jw_key(w, "dur");
    synor__jw_num(w, (end - start) * 1e6);
}

char *synor_report_chrome(const synor_trace *t)
{
    synor__buf b;
    synor__jw w;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "displayTimeUnit");
    synor__jw_str(&w, "ms");
    synor__jw_key(&w, "otherData");
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "workload");
    synor__jw_str(&w, t->workload);
    synor__jw_key(&w, "fabric");
    synor__jw_str(&w, t->fabric);
    synor__jw_key(&w, "strategy");
    synor__jw_str(&w, t->strategy);
    synor__jw_obj_end(&w);
    synor__jw_key(&w, "traceEvents");
    synor__jw_arr_begin(&w);
    meta(&w, 1, 0, "process_name", "devices");
    meta(&w, 2, 0, "process_name", "transfers");
    for (size_t p = 0; p < t->n_devices; p++) {
        /* the whole label, however long: a fixed buffer once cut it inside
         * a UTF-8 character, and the export was no longer JSON */
        char runs_on[64];
        synor__report_runs_on(&t->devices[p], runs_on, sizeof runs_on);
        synor__buf label;
        synor__buf_init(&label);
        synor__buf_printf(&label, "%s: %s (%s)", t->devices[p].name, t->devices[p].product,
                          runs_on);
        char *name = synor__buf_take(&label);
        if (!name) {
            b.failed = 1;
            break;
        }
        meta(&w, 1, p, "thread_name", name);
        synor__free(name);
    }
    /* links get thread ids in order of first use */
    const char **links = synor__calloc(t->n_transfers + 1, sizeof *links);
    size_t n_links = 0;
    if (!links)
        b.failed = 1;
    for (size_t k = 0; links && k < t->n_transfers; k++) {
        size_t j = 0;
        while (j < n_links && strcmp(links[j], t->transfers[k].link) != 0)
            j++;
        if (j == n_links) {
            links[n_links++] = t->transfers[k].link;
            meta(&w, 2, j, "thread_name", t->transfers[k].link);
        }
    }
    for (size_t k = 0; k < t->n_tasks; k++) {
        const synor_trace_task *x = &t->tasks[k];
        synor__jw_obj_begin(&w);
        span(&w, 1, x->device, x->id, x->op, x->start, x->end);
        synor__jw_key(&w, "args");
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "energy_j");
        synor__jw_num(&w, x->energy);
        synor__jw_obj_end(&w);
        synor__jw_obj_end(&w);
    }
    for (size_t k = 0; links && k < t->n_transfers; k++) {
        const synor_trace_transfer *x = &t->transfers[k];
        size_t j = 0;
        while (strcmp(links[j], x->link) != 0)
            j++;
        synor__jw_obj_begin(&w);
        span(&w, 2, j, x->data, "transfer", x->start, x->end);
        synor__jw_key(&w, "args");
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "bytes");
        synor__jw_uint(&w, x->bytes);
        if (x->path) {
            synor__jw_key(&w, "path");
            synor__jw_str(&w, x->path);
        }
        synor__jw_key(&w, "from");
        synor__jw_str(&w, t->devices[x->from_dev].name);
        synor__jw_key(&w, "to");
        synor__jw_str(&w, t->devices[x->to_dev].name);
        synor__jw_obj_end(&w);
        synor__jw_obj_end(&w);
    }
    for (size_t k = 0; k < t->n_marks; k++) { /* instants, or spans (a checkpoint) */
        const synor_trace_mark *m = &t->marks[k];
        synor__jw_obj_begin(&w);
        if (m->end > m->start) {
            span(&w, 1, m->device, m->name, "mark", m->start, m->end);
        } else {
            synor__jw_key(&w, "ph");
            synor__jw_str(&w, "i");
            synor__jw_key(&w, "s");
            synor__jw_str(&w, "t");
            synor__jw_key(&w, "pid");
            synor__jw_int(&w, 1);
            synor__jw_key(&w, "tid");
            synor__jw_uint(&w, m->device);
            synor__jw_key(&w, "name");
            synor__jw_str(&w, m->name);
            synor__jw_key(&w, "cat");
            synor__jw_str(&w, "mark");
            synor__jw_key(&w, "ts");
            synor__jw_num(&w, m->start * 1e6);
        }
        synor__jw_key(&w, "args");
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "detail");
        synor__jw_str(&w, m->detail);
        synor__jw_obj_end(&w);
        synor__jw_obj_end(&w);
    }
    synor__free_const(links);
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    synor__buf_puts(&b, "\n");
    char *s = synor__buf_take(&b);
    if (!s)
        synor__error(SYNOR_ENOMEM, "out of memory");
    return s;
}

/* A stable colour per operation name. */
static unsigned colour(const char *op)
{
    static const unsigned palette[] = {0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f,
                                       0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac};
    unsigned h = 5381;
    for (; *op; op++)
        h = h * 33 + (unsigned char)*op;
    return palette[h % SYNOR__ARRAY_LEN(palette)];
}

static void esc(synor__buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            synor__buf_puts(b, "&lt;");
        else if (*s == '>')
            synor__buf_puts(b, "&gt;");
        else if (*s == '&')
            synor__buf_puts(b, "&amp;");
        else if (*s == '"')
            synor__buf_puts(b, "&quot;");
        else
            synor__buf_append(b, s, 1);
    }
}

char *synor_report_svg(const synor_trace *t)
{
    const double W = 1000, label = 170, row = 28, top = 40;
    double span_s = t->makespan > 0 ? t->makespan : 1, px = (W - label - 20) / span_s;
    synor__buf b;
    synor__buf_init(&b);
    double H = top + row * (double)t->n_devices + 40;
    synor__buf_printf(&b,
                      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                      "font-family=\"sans-serif\" font-size=\"12\">\n"
                      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" "
                      "y=\"20\" font-size=\"14\">",
                      W, H);
    esc(&b, t->workload);
    synor__buf_puts(&b, " on ");
    esc(&b, t->fabric);
    int any_sim = 0;
    for (size_t p = 0; p < t->n_devices; p++)
        any_sim |= t->devices[p].simulated;
    synor__buf_printf(&b, " (%s; %s), makespan %.6g s</text>\n", t->strategy,
                      any_sim ? "simulated devices" : "real run", t->makespan);
    for (size_t p = 0; p < t->n_devices; p++) {
        double y = top + row * (double)p;
        synor__buf_printf(&b, "<text x=\"10\" y=\"%.1f\">", y + row * 0.6);
        esc(&b, t->devices[p].name);
        synor__buf_printf(&b, "</text>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                              "fill=\"#f3f3f3\"/>\n",
                          label, y + 2, W - label - 20, row - 4);
        /* merge runs of the same operation closer than half a pixel */
        const synor_trace_task *run = NULL;
        double run_end = 0;
        size_t run_n = 0;
        for (size_t k = 0; k <= t->n_tasks; k++) {
            const synor_trace_task *x = k < t->n_tasks ? &t->tasks[k] : NULL;
            if (x && x->device != p)
                continue;
            if (run && x && strcmp(x->op, run->op) == 0 && (x->start - run_end) * px < 0.5) {
                if (x->end > run_end)
                    run_end = x->end;
                run_n++;
                continue;
            }
            if (run) {
                double w = (run_end - run->start) * px;
                synor__buf_printf(&b, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                                      "fill=\"#%06x\"><title>",
                                  label + run->start * px, top + row * (double)p + 4,
                                  w < 0.5 ? 0.5 : w, row - 8, colour(run->op));
                esc(&b, run_n > 1 ? run->op : run->id);
                if (run_n > 1)
                    synor__buf_printf(&b, " x%zu", run_n);
                synor__buf_printf(&b, " %.6g-%.6g s</title></rect>\n", run->start, run_end);
            }
            run = x;
            run_end = x ? x->end : 0;
            run_n = 1;
        }
    }
    double ay = top + row * (double)t->n_devices + 20;
    for (int k = 0; k <= 4; k++) {
        double x = label + (W - label - 20) * k / 4;
        synor__buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.4g s</text>\n",
                          x, ay, span_s * k / 4);
    }
    synor__buf_puts(&b, "</svg>\n");
    char *s = synor__buf_take(&b);
    if (!s)
        synor__error(SYNOR_ENOMEM, "out of memory");
    return s;
}
