/* cost.c - the cost matrix of a workload on a fabric (synor/cost.h).
 *
 * Invariants: time[i * n_dev + d] and energy[...] are finite exactly when
 * the device can run the operation (or the task's explicit cost row gives a
 * time there) and the task's footprint fits in the device's memory; both
 * are computed once on create. A cost row is matched against the fabric
 * here, since the workload does not know it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "cost/cost_internal.h"
#include "synor/cost.h"

struct synor_cost {
    const synor_workload *w;
    const synor_fabric *f;
    size_t n_tasks, n_dev;
    double *time, *energy;
    uint64_t *footprint;
};

/* A task's explicit cost row on the fabric: row[d] seconds on device d. A
 * row in device order must have one value per device; a row by name must
 * name devices of the fabric (the others cannot run the task). */
static int explicit_row(const synor_task *t, const synor_fabric *f, double *row)
{
    size_t n_dev = synor_fabric_device_count(f);
    if (!t->exec_dev) {
        if (t->n_exec != n_dev) {
            synor__buf b;
            synor__buf_init(&b);
            for (size_t d = 0; d < n_dev; d++)
                synor__buf_printf(&b, "%s%s", d ? ", " : "", synor_fabric_device_at(f, d)->name);
            char *names = synor__buf_take(&b);
            int rc = synor__error(SYNOR_EINVAL,
                                  "task \"%s\": exec_s has %zu value%s but fabric \"%s\" has %zu "
                                  "device%s (%s): an array gives one time per device, in that "
                                  "order",
                                  t->id, t->n_exec, t->n_exec == 1 ? "" : "s",
                                  synor_fabric_name(f), n_dev, n_dev == 1 ? "" : "s",
                                  names ? names : "");
            free(names);
            return rc;
        }
        memcpy(row, t->exec_s, n_dev * sizeof *row);
        return 0;
    }
    for (size_t d = 0; d < n_dev; d++)
        row[d] = INFINITY;
    for (size_t k = 0; k < t->n_exec; k++) {
        long d = synor_fabric_find_device(f, t->exec_dev[k]);
        if (d < 0)
            return synor__error(SYNOR_EINVAL,
                                "task \"%s\": exec_s.%s = %g: fabric \"%s\" has no device \"%s\"",
                                t->id, t->exec_dev[k], t->exec_s[k], synor_fabric_name(f),
                                t->exec_dev[k]);
        row[d] = t->exec_s[k];
    }
    return 0;
}

int synor_cost_create(const synor_workload *w, const synor_fabric *f, synor_cost **out)
{
    if (!synor_workload_order(w))
        return synor__error(SYNOR_ESTATE, "workload \"%s\" is not finished",
                            synor_workload_name(w));
    synor_cost *c = synor__calloc(1, sizeof *c);
    if (!c)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    c->w = w;
    c->f = f;
    c->n_tasks = synor_workload_count(w);
    c->n_dev = synor_fabric_device_count(f);
    size_t cells = c->n_tasks * c->n_dev;
    c->time = synor__malloc((cells ? cells : 1) * sizeof *c->time);
    c->energy = synor__malloc((cells ? cells : 1) * sizeof *c->energy);
    c->footprint = synor__malloc((c->n_tasks ? c->n_tasks : 1) * sizeof *c->footprint);
    if (!c->time || !c->energy || !c->footprint) {
        synor_cost_destroy(c);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    synor__prefault(c->time, cells * sizeof *c->time);
    synor__prefault(c->energy, cells * sizeof *c->energy);
    for (size_t i = 0; i < c->n_tasks; i++) {
        const synor_task *t = synor_workload_task(w, i);
        uint64_t fp = t->workspace;
        for (size_t k = 0; k < t->n_consumes; k++)
            fp += synor_workload_data(w, t->consumes[k])->bytes;
        for (size_t k = 0; k < t->n_produces; k++)
            fp += synor_workload_data(w, t->produces[k])->bytes;
        c->footprint[i] = fp;
        double *row = &c->time[i * c->n_dev];
        int rc;
        if (t->n_exec && (rc = explicit_row(t, f, row))) {
            synor_cost_destroy(c);
            return rc;
        }
        for (size_t d = 0; d < c->n_dev; d++) {
            const synor_fabric_device *fd = synor_fabric_device_at(f, d);
            double tm, en;
            if (t->n_exec) { /* the row's time at the device's busy power */
                tm = row[d];
                en = tm * synor_device_caps(fd->dev)->peak_watts;
            } else {
                tm = synor_device_estimate_time(fd->dev, &t->op.work);
                en = synor_device_estimate_energy(fd->dev, &t->op.work);
            }
            if (fp > synor_device_caps(fd->dev)->mem_bytes)
                tm = en = INFINITY;
            c->time[i * c->n_dev + d] = tm;
            c->energy[i * c->n_dev + d] = en;
        }
    }
    *out = c;
    return 0;
}

void synor_cost_destroy(synor_cost *c)
{
    if (!c)
        return;
    synor__free(c->time);
    synor__free(c->energy);
    synor__free(c->footprint);
    synor__free(c);
}

const synor_workload *synor_cost_workload(const synor_cost *c) { return c->w; }
const synor_fabric *synor_cost_fabric(const synor_cost *c) { return c->f; }

const double *synor__cost_times(const synor_cost *c) { return c->time; }
const double *synor__cost_energies(const synor_cost *c) { return c->energy; }

int synor_cost_exclude_device(synor_cost *c, size_t dev)
{
    if (!c || dev >= c->n_dev)
        return synor__error(SYNOR_EINVAL, "synor_cost_exclude_device: no device %zu", dev);
    for (size_t t = 0; t < c->n_tasks; t++)
        c->time[t * c->n_dev + dev] = c->energy[t * c->n_dev + dev] = INFINITY;
    return 0;
}

double synor_cost_time(const synor_cost *c, size_t task, size_t dev)
{
    return c->time[task * c->n_dev + dev];
}

double synor_cost_energy(const synor_cost *c, size_t task, size_t dev)
{
    return c->energy[task * c->n_dev + dev];
}

uint64_t synor_cost_footprint(const synor_cost *c, size_t task) { return c->footprint[task]; }

double synor_cost_edge(const synor_cost *c, size_t task, size_t dep, size_t from_dev,
                       size_t to_dev)
{
    if (from_dev == to_dev)
        return 0;
    double comm = synor_workload_edge_comm(c->w, task, dep);
    if (comm >= 0)
        return comm;
    uint64_t b = synor_workload_edge_bytes(c->w, task, dep);
    return synor_fabric_transfer_time(c->f, from_dev, to_dev, (double)b);
}

size_t synor_cost_feasible(const synor_cost *c, size_t task)
{
    size_t n = 0;
    for (size_t d = 0; d < c->n_dev; d++)
        n += isfinite(c->time[task * c->n_dev + d]) != 0;
    return n;
}

char *synor_cost_format(const synor_cost *c, size_t max_rows)
{
    synor__buf b;
    synor__buf_init(&b);
    size_t rows = max_rows && max_rows < c->n_tasks ? max_rows : c->n_tasks;
    synor__buf_printf(&b, "Cost of each task on each device (ms; '-' cannot run there); "
                          "devices are simulated from profiles\n");
    synor__buf_printf(&b, "%-24s %-20s", "task", "operation");
    for (size_t d = 0; d < c->n_dev; d++)
        synor__buf_printf(&b, " %12.12s", synor_fabric_device_at(c->f, d)->name);
    synor__buf_puts(&b, "\n");
    for (size_t i = 0; i < rows; i++) {
        const synor_task *t = synor_workload_task(c->w, i);
        char op[64];
        snprintf(op, sizeof op, "%s%s", t->op.backward ? "d/" : "",
                 synor_op_type_name(t->op.type));
        synor__buf_printf(&b, "%-24.24s %-20.20s", t->id, op);
        for (size_t d = 0; d < c->n_dev; d++) {
            double tm = synor_cost_time(c, i, d);
            if (isfinite(tm))
                synor__buf_printf(&b, " %12.4f", tm * 1e3);
            else
                synor__buf_printf(&b, " %12s", "-");
        }
        synor__buf_puts(&b, "\n");
    }
    if (rows < c->n_tasks)
        synor__buf_printf(&b, "... %zu more tasks\n", c->n_tasks - rows);
    synor__buf_printf(&b, "\nTransfer of 1 MB (us, path)\n%-12s", "from \\ to");
    for (size_t d = 0; d < c->n_dev; d++)
        synor__buf_printf(&b, " %20.20s", synor_fabric_device_at(c->f, d)->name);
    synor__buf_puts(&b, "\n");
    for (size_t a = 0; a < c->n_dev; a++) {
        synor__buf_printf(&b, "%-12.12s", synor_fabric_device_at(c->f, a)->name);
        for (size_t d = 0; d < c->n_dev; d++) {
            char cell[48];
            snprintf(cell, sizeof cell, "%.1f %s",
                     synor_fabric_transfer_time(c->f, a, d, 1e6) * 1e6,
                     synor_link_kind_name(synor_fabric_path(c->f, a, d).kind));
            synor__buf_printf(&b, " %20s", cell);
        }
        synor__buf_puts(&b, "\n");
    }
    size_t explicit_edges = 0;
    for (size_t i = 0; i < c->n_tasks; i++) {
        const synor_task *t = synor_workload_task(c->w, i);
        for (size_t k = 0; t->dep_comm && k < t->n_deps; k++)
            explicit_edges += t->dep_comm[k] >= 0;
    }
    if (explicit_edges)
        synor__buf_printf(&b, "Explicit costs (comm_s) replace these on %zu edge%s of the "
                              "workload\n",
                          explicit_edges, explicit_edges == 1 ? "" : "s");
    char *s = synor__buf_take(&b);
    if (!s)
        synor__error(SYNOR_ENOMEM, "out of memory");
    return s;
}
