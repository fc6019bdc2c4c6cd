/* cost_internal.h - the cost matrix's own arrays, for a planner that reads
 * them in place for as long as the cost lives (plan/problem.c) instead of
 * copying tasks x devices doubles twice. Never installed. */
#ifndef SYNOR_COST_INTERNAL_H
#define SYNOR_COST_INTERNAL_H

#include "synor/cost.h"

/* [task * devices + device]: seconds (synor_cost_time), joules
 * (synor_cost_energy). */
const double *synor__cost_times(const synor_cost *c);
const double *synor__cost_energies(const synor_cost *c);

#endif
