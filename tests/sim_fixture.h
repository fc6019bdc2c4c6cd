/* sim_fixture.h - what the simulator's tests share: simulate a workload
 * text on a fabric, and find a task in the trace by its id. */
#ifndef SYNOR_TESTS_SIM_FIXTURE_H
#define SYNOR_TESTS_SIM_FIXTURE_H

#include <string.h>

#include "synor.h"

/* Simulates the workload text work on f (dynamic placement) into *t.
 * Takes f: it is destroyed whatever happens; rc is a prior step's result
 * (non-zero: nothing is simulated and rc is returned). */
static inline int simfx_run(int rc, synor_fabric *f, const char *work, synor_trace **t)
{
    synor_workload *w = NULL;
    synor_cost *c = NULL;
    if (!rc)
        rc = synor_workload_load_string(work, strlen(work), "w.json", &w);
    if (!rc)
        rc = synor_cost_create(w, f, &c);
    if (!rc)
        rc = synor_simulate(c, NULL, t);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    return rc;
}

/* The trace's task of this id, or NULL. */
static inline const synor_trace_task *simfx_task(const synor_trace *t, const char *id)
{
    for (size_t i = 0; i < t->n_tasks; i++)
        if (!strcmp(t->tasks[i].id, id))
            return &t->tasks[i];
    return NULL;
}

#endif
