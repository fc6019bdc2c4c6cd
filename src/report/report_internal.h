/* report_internal.h - what the text report and the exports share: how a
 * device of a trace is named. Never installed. */
#ifndef SYNOR_REPORT_INTERNAL_H
#define SYNOR_REPORT_INTERNAL_H

#include <stddef.h>

#include "synor/sim.h"

/* s into buf (n bytes), cut to at most n - 1 bytes with "..." at the end
 * when longer; the cut falls between UTF-8 characters. */
void synor__report_shorten(const char *s, char *buf, size_t n);
/* What ran the device: "simulated", or "<backend>, real" ("host, real"). */
void synor__report_runs_on(const synor_trace_device *d, char *buf, size_t n);

#endif
