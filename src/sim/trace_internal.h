/* trace_internal.h - building a synor_trace (sim.c, trace loading in
 * trace.c). Never installed. */
#ifndef SYNOR_TRACE_INTERNAL_H
#define SYNOR_TRACE_INTERNAL_H

#include "synor/sim.h"

typedef struct synor__trace {
    synor_trace t; /* first: the public pointer points here */
    synor_trace_device *dev;
    synor_trace_task *task;
    synor_trace_transfer *xfer;
    synor_trace_mark *mark;
    size_t task_cap, xfer_cap, mark_cap;
    char **strings; /* every string the trace owns */
    size_t n_strings, str_cap;
} synor__trace;

synor__trace *synor__trace_new(void);
/* Copies s into the trace; NULL on allocation failure. */
const char *synor__trace_str(synor__trace *tr, const char *s);
int synor__trace_devices(synor__trace *tr, size_t n);
synor_trace_task *synor__trace_add_task(synor__trace *tr);
synor_trace_transfer *synor__trace_add_transfer(synor__trace *tr);
/* A mark whose name and detail are copied into the trace; NULL on
 * allocation failure. */
synor_trace_mark *synor__trace_add_mark(synor__trace *tr, const char *name, size_t device,
                                        double start, double end, const char *detail);
/* Sorts tasks, transfers and marks by start time (stable on ties). */
int synor__trace_sort(synor__trace *tr);
/* The end of a simulated run: copies the names the tasks and transfers
 * point to into the trace, describes the fabric's devices, fills the totals
 * (active energy, idle energy from busy[] per device, money for every
 * device that ran a task over the makespan) and sorts. */
/* held[p] (NULL: the makespan for all): how long device p was part of the
 * fabric, for its idle energy; money[p] (NULL: its price for the
 * makespan): what device p costs if it ran a task. */
int synor__trace_finish(synor__trace *tr, const synor_workload *w, const synor_fabric *fab,
                        const char *strategy, double makespan, const double *busy,
                        uint64_t events, const double *held, const int64_t *money);

#endif
