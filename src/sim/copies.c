/* copies.c - a plan's weight copies in the simulator (sim_internal.h): in
 * load mode a task starts only when the plan's copies of its weights onto
 * its device have ended; the copies go into the trace as transfers (taken
 * as planned: they do not share links with the activations). */
#include "common/common.h"
#include "sim/sim_internal.h"

/* A plan in load mode: the weights reach each device when the plan's
 * copies end (the copies are taken as planned: they do not share links
 * with the activations' transfers). They go into the trace as transfers. */
int synor__sim_weight_copies(sim *s)
{
    const synor_plan *pl = s->plan;
    if (!pl || pl->weights != SYNOR_WEIGHTS_LOAD || !pl->n_loads)
        return 0;
    size_t n = s->n, nd = s->nd, k = 0;
    size_t *datum_of = synor__malloc((nd ? nd : 1) * sizeof *datum_of);
    double *at = synor__malloc((nd && s->d ? nd * s->d : 1) * sizeof *at);
    s->wready = synor__calloc(n ? n : 1, sizeof *s->wready);
    if (!datum_of || !at || !s->wready) {
        synor__free(datum_of);
        synor__free(at);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    k = synor_plan_weight_data(s->w, datum_of);
    for (size_t x = 0; x < nd * s->d; x++)
        at[x] = 0;
    for (size_t l = 0; l < pl->n_loads; l++) {
        const synor_plan_load *c = &pl->loads[l];
        if (c->item >= k || c->dev >= s->d)
            continue;
        at[c->dev * nd + datum_of[c->item]] = c->finish;
        synor_trace_transfer *x = synor__trace_add_transfer(s->tr);
        if (!x) {
            synor__free(datum_of);
            synor__free(at);
            return synor__error(SYNOR_ENOMEM, "out of memory");
        }
        const synor_data *dd = synor_workload_data(s->w, datum_of[c->item]);
        x->data = dd->name;
        x->from_dev = c->src == SYNOR_HOME_STORAGE ? c->dev : c->src;
        x->to_dev = c->dev;
        x->link = "weights copy";
        if (c->src == SYNOR_HOME_STORAGE) {
            x->link = "storage";
        } else {
            synor_path path = synor_fabric_path(s->fab, c->src, c->dev);
            if (path.n_hops)
                x->link = synor_fabric_link(s->fab, path.hops[0])->name;
        }
        x->bytes = dd->bytes;
        x->start = c->start;
        x->end = c->finish;
    }
    for (size_t i = 0; i < n; i++) {
        const synor_task *t = synor_workload_task(s->w, i);
        size_t p = pl->device[i];
        for (size_t q = 0; q < t->n_consumes; q++) {
            double a = at[p * nd + t->consumes[q]];
            s->wready[i] = a > s->wready[i] ? a : s->wready[i];
        }
    }
    synor__free(datum_of);
    synor__free(at);
    return 0;
}
