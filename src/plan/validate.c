/* validate.c - synor_plan_validate (synor/plan.h): a plan against its
 * problem - devices that run each task, dependencies, no overlap, colocation
 * groups, and the weights' copies and every device's memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "json/json.h"
#include "plan/plan_internal.h"

/* ------------------------------------------------------------ validation */

/* The weights part of synor_plan_validate: replays the copies in planned
 * order (each from a source that holds the weight by then, no shorter
 * than its cost, one at a time per device), then checks every task's
 * weights and every device's memory. */
static int validate_weights(const synor_plan *p, const synor_sched_problem *pb)
{
    const double tol = 1e-9;
    size_t n = p->n_tasks, d = p->n_devices, k = pb->n_items;
    if (!k && !pb->mem)
        return 0;
    synor__wstate ws;
    int rc = synor__ws_init(&ws, pb, 1, 0);
    if (rc)
        return rc;
    double *maxmem = synor__calloc(d ? d : 1, sizeof *maxmem);
    if (!maxmem) {
        synor__ws_free(&ws);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    double *engine = ws.chan; /* when each device's last copy ended */
    for (size_t x = 0; x < p->n_loads && !rc; x++) {
        const synor_plan_load *l = &p->loads[x];
        if (l->item >= k || l->dev >= d)
            rc = synor__error(SYNOR_EINVAL, "copy %zu: item %zu or device %zu out of range", x,
                              l->item, l->dev);
        else if (isfinite(ws.ready[l->dev * k + l->item]))
            rc = synor__error(SYNOR_EINVAL, "copy %zu: device %zu already holds item %zu", x,
                              l->dev, l->item);
        else if (l->start < engine[l->dev] - tol * (1 + l->start))
            rc = synor__error(SYNOR_EINVAL, "copy %zu onto device %zu starts at %.9g, before "
                                            "its previous copy ends at %.9g",
                              x, l->dev, l->start, engine[l->dev]);
        if (rc)
            break;
        double cost, have;
        if (l->src == SYNOR_HOME_STORAGE) {
            size_t home = pb->item_home ? pb->item_home[l->item] : SYNOR_HOME_STORAGE;
            cost = pb->item_bytes[l->item] /
                   (pb->storage_bw > 0 ? pb->storage_bw : SYNOR_STORAGE_BW_DEFAULT);
            have = home == SYNOR_HOME_STORAGE ? 0 : INFINITY;
        } else if (l->src < d && l->src != l->dev) {
            cost = synor__comm(pb, pb->item_bytes[l->item], l->src, l->dev);
            have = ws.ready[l->src * k + l->item];
        } else {
            rc = synor__error(SYNOR_EINVAL, "copy %zu: source %zu is not a device", x, l->src);
            break;
        }
        if (!(l->start >= have - tol * (1 + have)))
            rc = synor__error(SYNOR_EINVAL, "copy %zu of item %zu comes from a source that "
                                            "does not hold it at %.9g",
                              x, l->item, l->start);
        else if (l->finish - l->start < cost - tol * (1 + cost))
            rc = synor__error(SYNOR_EINVAL, "copy %zu of item %zu takes %.9g s, less than its "
                                            "cost %.9g s",
                              x, l->item, l->finish - l->start, cost);
        ws.ready[l->dev * k + l->item] = l->finish;
        ws.held[l->dev] += pb->item_bytes[l->item];
        engine[l->dev] = l->finish;
    }
    for (size_t i = 0; i < n && !rc; i++) {
        size_t q = p->device[i];
        for (size_t u = pb->use_off ? pb->use_off[i] : 0; pb->use_off && u < pb->use_off[i + 1];
             u++) {
            double r = ws.ready[q * k + pb->use[u]];
            if (!isfinite(r)) {
                rc = synor__error(SYNOR_EINVAL, "task %zu runs on device %zu, which never "
                                                "holds its item %zu",
                                  i, q, pb->use[u]);
                break;
            }
            if (p->weights == SYNOR_WEIGHTS_LOAD && p->start[i] < r - tol * (1 + r)) {
                rc = synor__error(SYNOR_EINVAL, "task %zu starts at %.9g before its item %zu "
                                                "is on device %zu at %.9g",
                                  i, p->start[i], pb->use[u], q, r);
                break;
            }
        }
        double tm = pb->task_mem ? pb->task_mem[i] : 0;
        maxmem[q] = tm > maxmem[q] ? tm : maxmem[q];
    }
    for (size_t q = 0; q < d && !rc && pb->mem; q++)
        if (ws.held[q] + maxmem[q] > pb->mem[q] * (1 + tol))
            rc = synor__error(SYNOR_EINVAL, "device %zu holds %.0f bytes of weights and needs "
                                            "%.0f of working memory: more than its %.0f",
                              q, ws.held[q], maxmem[q], pb->mem[q]);
    synor__free(maxmem);
    synor__ws_free(&ws);
    return rc;
}

/* Every task of a colocation group on one device. */
static int validate_groups(const synor_plan *p, const synor_sched_problem *pb)
{
    if (!pb->group || !pb->n_groups)
        return 0;
    size_t *at = synor__malloc(pb->n_groups * sizeof *at);
    if (!at)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t g = 0; g < pb->n_groups; g++)
        at[g] = SIZE_MAX;
    int rc = 0;
    for (size_t i = 0; i < p->n_tasks && !rc; i++) {
        size_t g = pb->group[i];
        if (g == SIZE_MAX)
            continue;
        if (g >= pb->n_groups)
            rc = synor__error(SYNOR_EINVAL, "task %zu: group %zu of %zu", i, g, pb->n_groups);
        else if (at[g] == SIZE_MAX)
            at[g] = p->device[i];
        else if (at[g] != p->device[i])
            rc = synor__error(SYNOR_EINVAL, "task %zu of group %zu is on device %zu, the "
                                            "group's other tasks on device %zu",
                              i, g, p->device[i], at[g]);
    }
    synor__free(at);
    return rc;
}

int synor_plan_validate(const synor_plan *p, const synor_sched_problem *pb)
{
    const double tol = 1e-9;
    size_t n = p->n_tasks, d = p->n_devices;
    if (n != pb->n_tasks || d != pb->n_devices)
        return synor__error(SYNOR_EINVAL, "plan and problem differ in size");
    for (size_t i = 0; i < n; i++) {
        size_t q = p->device[i];
        double w = q < d ? pb->exec[i * d + q] : INFINITY;
        if (!isfinite(w))
            return synor__error(SYNOR_EINVAL, "task %zu is on device %zu, which cannot run it", i,
                                q);
        if (fabs(p->finish[i] - p->start[i] - w) > tol * (1 + w))
            return synor__error(SYNOR_EINVAL, "task %zu: finish - start %.9g != cost %.9g", i,
                                p->finish[i] - p->start[i], w);
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
            size_t j = pb->pred[e];
            double arrive = p->finish[j] + synor__edge_comm(pb, e, p->device[j], q);
            if (p->start[i] < arrive - tol * (1 + arrive))
                return synor__error(SYNOR_EINVAL,
                                    "task %zu starts at %.9g before the input from task %zu "
                                    "arrives at %.9g",
                                    i, p->start[i], j, arrive);
        }
    }
    /* overlap: neighbours in start order on the same device */
    size_t *last = synor__malloc((d ? d : 1) * sizeof *last);
    if (!last)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t q = 0; q < d; q++)
        last[q] = (size_t)-1;
    int rc = 0;
    for (size_t k = 0; k < n && !rc; k++) {
        size_t i = p->order[k], q = p->device[i];
        if (last[q] != (size_t)-1 && p->start[i] < p->finish[last[q]] - tol * (1 + p->start[i]))
            rc = synor__error(SYNOR_EINVAL, "tasks %zu and %zu overlap on device %zu", last[q], i,
                              q);
        if (last[q] == (size_t)-1 || p->finish[i] > p->finish[last[q]])
            last[q] = i;
    }
    synor__free(last);
    if (!rc)
        rc = validate_groups(p, pb);
    return rc ? rc : validate_weights(p, pb);
}
