/* plan_json.c - a plan as JSON (synor-plan/1, synor/plan.h): strategy,
 * makespan, weights mode, setup, copies, energy and money, the deadline,
 * and per task its device and times. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "json/json.h"
#include "plan/plan_internal.h"

/* ------------------------------------------------------------------ JSON */

char *synor_plan_to_json(const synor_plan *p, const synor_cost *c)
{
    const synor_workload *w = synor_cost_workload(c);
    const synor_fabric *f = synor_cost_fabric(c);
    synor__buf b;
    synor__jw j;
    synor__buf_init(&b);
    synor__jw_init(&j, &b, 1);
    synor__jw_obj_begin(&j);
    synor__jw_key(&j, "format");
    synor__jw_str(&j, "synor-plan/1");
    synor__jw_key(&j, "workload");
    synor__jw_str(&j, synor_workload_name(w));
    synor__jw_key(&j, "fabric");
    synor__jw_str(&j, synor_fabric_name(f));
    synor__jw_key(&j, "strategy");
    synor__jw_str(&j, synor_strategy_name(p->strategy));
    synor__jw_key(&j, "simulated");
    synor__jw_bool(&j, 1);
    synor__jw_key(&j, "makespan_s");
    synor__jw_num(&j, p->makespan);
    if (p->strategy == SYNOR_STRATEGY_EXACT) { /* what the search proved */
        synor__jw_key(&j, "optimal");
        synor__jw_bool(&j, p->optimal);
        synor__jw_key(&j, "bound_s");
        synor__jw_num(&j, p->bound);
        synor__jw_key(&j, "gap");
        synor__jw_num(&j, p->gap);
    }
    synor__jw_key(&j, "weights");
    synor__jw_str(&j, synor_weights_name(p->weights));
    synor__jw_key(&j, "setup_s");
    synor__jw_num(&j, p->setup);
    synor__jw_key(&j, "copies");
    synor__jw_arr_begin(&j);
    size_t nd = synor_workload_data_count(w), *item = NULL, n_items = 0;
    if (p->n_loads && (item = synor__malloc(nd * sizeof *item)))
        n_items = synor_plan_weight_data(w, item);
    for (size_t x = 0; item && x < p->n_loads; x++) {
        const synor_plan_load *l = &p->loads[x];
        synor__jw_obj_begin(&j);
        synor__jw_key(&j, "data");
        synor__jw_str(&j, l->item < n_items ? synor_workload_data(w, item[l->item])->name : "?");
        synor__jw_key(&j, "to");
        synor__jw_str(&j, synor_fabric_device_at(f, l->dev)->name);
        synor__jw_key(&j, "from");
        synor__jw_str(&j, l->src == SYNOR_HOME_STORAGE ? "storage"
                                                       : synor_fabric_device_at(f, l->src)->name);
        synor__jw_key(&j, "start_s");
        synor__jw_num(&j, l->start);
        synor__jw_key(&j, "finish_s");
        synor__jw_num(&j, l->finish);
        synor__jw_obj_end(&j);
    }
    synor__free(item);
    synor__jw_arr_end(&j);
    if (synor__plan_json_account(&j, p, c)) {
        synor__buf_free(&b);
        return NULL;
    }
    synor__jw_key(&j, "tasks");
    synor__jw_arr_begin(&j);
    for (size_t k = 0; k < p->n_tasks; k++) {
        size_t i = p->order[k];
        synor__jw_obj_begin(&j);
        synor__jw_key(&j, "id");
        synor__jw_str(&j, synor_workload_task(w, i)->id);
        synor__jw_key(&j, "device");
        synor__jw_str(&j, synor_fabric_device_at(f, p->device[i])->name);
        synor__jw_key(&j, "start_s");
        synor__jw_num(&j, p->start[i]);
        synor__jw_key(&j, "finish_s");
        synor__jw_num(&j, p->finish[i]);
        synor__jw_obj_end(&j);
    }
    synor__jw_arr_end(&j);
    synor__jw_obj_end(&j);
    char *s = synor__buf_take(&b);
    if (!s)
        synor__error(SYNOR_ENOMEM, "out of memory");
    return s;
}
