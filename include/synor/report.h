/* synor/report.h - reports from an execution trace (seed 001 §5.2): the
 * utilization table, a text timeline, makespan, energy and money, and the
 * comparison with a baseline run (GPU-only); a Chrome trace-event file that
 * opens in Perfetto (ui.perfetto.dev) or chrome://tracing; an SVG Gantt
 * chart. The functions read only the trace, so the same code serves
 * simulated and real runs; simulated devices are labelled as such. */
#ifndef SYNOR_REPORT_H
#define SYNOR_REPORT_H

#include <stddef.h>

#include "synor/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one device did in a trace. */
typedef struct synor_device_usage {
    double busy;        /* seconds running tasks */
    double utilization; /* busy / makespan, in [0, 1] */
    size_t tasks;
    char ops[160];      /* the most frequent operations, "decode_step x20480, ..." */
} synor_device_usage;

int synor_report_usage(const synor_trace *t, size_t dev, synor_device_usage *out);

typedef struct synor_report_options {
    const synor_trace *baseline;     /* compared against; NULL = none */
    const char *title;               /* NULL = "EXECUTION REPORT" */
    const char *const *assumptions;  /* printed as a list; may be NULL */
    size_t n_assumptions;
    int width;                       /* timeline columns; 0 = 60 */
    double deadline;                 /* seconds; > 0: a line under the totals
                                        says whether the makespan meets it */
} synor_report_options;

/* The text report; free() it. */
char *synor_report_text(const synor_trace *t, const synor_report_options *o);
/* Chrome trace-event JSON (one track per device, one per link); free() it. */
char *synor_report_chrome(const synor_trace *t);
/* An SVG Gantt chart, one row per device; free() it. */
char *synor_report_svg(const synor_trace *t);

#ifdef __cplusplus
}
#endif
#endif
