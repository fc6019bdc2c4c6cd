/* improve.c - the improve strategy (plan_internal.h): list scheduling, then
 * iterative improvement of the best list schedule.
 *
 * Start: the better of the HEFT and PEFT schedules. A schedule is
 * represented by its assignment (a device per task) and rebuilt by HEFT's
 * order and insertion with that assignment (synor__list_schedule_fixed;
 * HEFT's own assignment rebuilds HEFT's schedule). Local search: the tasks
 * of the current critical path (from the last task back, each to the
 * predecessor or the device neighbour it waited for) are moved one at a
 * time to every other device that can run them; the first move that
 * shortens the makespan is kept and the search starts again from the new
 * critical path. It stops at a local optimum (no single move of a critical
 * task helps) or after IMPROVE_EVALS schedules. Every schedule kept is
 * strictly shorter than the one before, so the result is never worse than
 * the better of HEFT and PEFT. Problems with weights or colocation groups
 * get the better of HEFT and PEFT alone (the search would have to move
 * weights and groups with the tasks). */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "plan/plan_internal.h"

/* Schedules tried at most, per 1,000 tasks (at least IMPROVE_EVALS_MIN). */
#define IMPROVE_EVALS 4000
#define IMPROVE_EVALS_MIN 2000
#define EPS 1e-9

static double makespan(const double *ft, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = ft[i] > m ? ft[i] : m;
    return m;
}

/* The critical path of a schedule, last task first; returns its length. */
static size_t critical_path(const synor_sched_problem *pb, const size_t *dev, const double *st,
                            const double *ft, size_t *path)
{
    size_t n = pb->n_tasks, k = 0, i = 0;
    for (size_t j = 1; j < n; j++)
        if (ft[j] > ft[i])
            i = j;
    for (; k < n;) {
        path[k++] = i;
        double tol = EPS * (1 + st[i]);
        if (st[i] <= tol)
            break;
        size_t next = SIZE_MAX;
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1] && next == SIZE_MAX; e++) {
            size_t j = pb->pred[e];
            if (fabs(ft[j] + synor__edge_comm(pb, e, dev[j], dev[i]) - st[i]) <= tol)
                next = j;
        }
        for (size_t j = 0; j < n && next == SIZE_MAX; j++) /* its device was busy */
            if (j != i && dev[j] == dev[i] && fabs(ft[j] - st[i]) <= tol)
                next = j;
        if (next == SIZE_MAX)
            break;
        i = next;
    }
    return k;
}

int synor__improve_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                            size_t *dev, double *st, double *ft)
{
    size_t n = pb->n_tasks, d = pb->n_devices;
    synor_plan_options h = *o;
    h.strategy = SYNOR_STRATEGY_HEFT;
    int rc = synor__list_schedule(pb, &h, NULL, dev, st, ft, NULL);
    if (rc || !n)
        return rc;
    size_t *adev = synor__malloc(n * sizeof *adev), *path = synor__malloc(n * sizeof *path);
    size_t *tdev = synor__malloc(n * sizeof *tdev);
    double *tst = synor__malloc(n * sizeof *tst), *tft = synor__malloc(n * sizeof *tft);
    if (!adev || !path || !tdev || !tst || !tft) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    h.strategy = SYNOR_STRATEGY_PEFT;
    if ((rc = synor__list_schedule(pb, &h, NULL, tdev, tst, tft, NULL)))
        goto out;
    double best = makespan(ft, n);
    if (makespan(tft, n) < best) {
        memcpy(dev, tdev, n * sizeof *dev);
        memcpy(st, tst, n * sizeof *st);
        memcpy(ft, tft, n * sizeof *ft);
        best = makespan(ft, n);
    }
    /* Moves would have to carry weights and groups along. Without weights
     * a device's memory only bounds each task's own footprint, which the
     * costs already say (a task that does not fit cannot run there). */
    if (pb->n_items || (pb->group && pb->n_groups))
        goto out;
    size_t budget = IMPROVE_EVALS * (n / 1000 + 1), evals = 0;
    budget = budget < IMPROVE_EVALS_MIN ? IMPROVE_EVALS_MIN : budget;
    memcpy(adev, dev, n * sizeof *adev);
    for (int improved = 1; improved && evals < budget;) {
        improved = 0;
        size_t len = critical_path(pb, dev, st, ft, path);
        for (size_t c = 0; c < len && !improved && evals < budget; c++) {
            size_t i = path[c], was = adev[i];
            for (size_t q = 0; q < d && !improved && evals < budget; q++) {
                if (q == was || !isfinite(pb->exec[i * d + q]))
                    continue;
                adev[i] = q;
                evals++;
                if ((rc = synor__list_schedule_fixed(pb, adev, tdev, tst, tft)))
                    goto out;
                double m = makespan(tft, n);
                if (m < best * (1 - EPS)) {
                    best = m;
                    memcpy(dev, tdev, n * sizeof *dev);
                    memcpy(st, tst, n * sizeof *st);
                    memcpy(ft, tft, n * sizeof *ft);
                    memcpy(adev, tdev, n * sizeof *adev);
                    improved = 1;
                } else {
                    adev[i] = was;
                }
            }
        }
    }
out:
    synor__free(adev);
    synor__free(path);
    synor__free(tdev);
    synor__free(tst);
    synor__free(tft);
    return rc;
}
