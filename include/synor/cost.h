/* synor/cost.h - the cost model (seed 001, Part 2 §2.1): what each task of
 * a workload costs on each device of a fabric, and what moving data
 * between them costs.
 *
 * Time of a task on a device is the device's roofline estimate (device.h:
 * launch latency + max(FLOPs / (peak for the data type x efficiency),
 * bytes / memory bandwidth)); INFINITY when the device cannot run the
 * operation in that data type, or when the task's own footprint (the data
 * it consumes and produces plus its workspace) exceeds the device's
 * memory. Energy is the active energy of that time (device.h); the idle
 * power of devices that wait is added per schedule (sim.h). Transfers cost
 * latency + bytes / bandwidth over each hop of the fabric path.
 *
 * Explicit costs (workload.h, docs/WORKLOADS.md "Literature problems"): a
 * task's cost row replaces the estimate (energy: that time at the device's
 * peak power), and an edge's comm_s replaces its transfer time between two
 * distinct devices. synor_cost_create fails with SYNOR_EINVAL naming the
 * task, the field and the value when a row in device order has a length
 * other than the fabric's device count, or a row by name names a device
 * the fabric does not have.
 *
 * The matrix is computed once, on create, and is immutable. */
#ifndef SYNOR_COST_H
#define SYNOR_COST_H

#include <stddef.h>
#include <stdint.h>

#include "synor/fabric.h"
#include "synor/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_cost synor_cost;

/* w must be finished; w and f must outlive the cost matrix. */
int synor_cost_create(const synor_workload *w, const synor_fabric *f, synor_cost **out);
void synor_cost_destroy(synor_cost *c);

const synor_workload *synor_cost_workload(const synor_cost *c);
const synor_fabric *synor_cost_fabric(const synor_cost *c);

/* No task may run on device dev from now on (its times and energies become
 * INFINITY): a device the plan cannot have, e.g. one the market has no
 * capacity to rent for (`synor plan --market`). SYNOR_EINVAL for a bad
 * index. */
int synor_cost_exclude_device(synor_cost *c, size_t dev);
/* Seconds of task on device, INFINITY if it cannot run there. */
double synor_cost_time(const synor_cost *c, size_t task, size_t dev);
/* Joules while it runs (INFINITY if it cannot run there). */
double synor_cost_energy(const synor_cost *c, size_t task, size_t dev);
/* Bytes the task needs on its device while it runs. */
uint64_t synor_cost_footprint(const synor_cost *c, size_t task);
/* Seconds to move the data of edge dep -> task from one device to another
 * (0 on the same memory). */
double synor_cost_edge(const synor_cost *c, size_t task, size_t dep, size_t from_dev,
                       size_t to_dev);
/* The number of devices that can run the task. */
size_t synor_cost_feasible(const synor_cost *c, size_t task);

/* A printable table: the first max_rows tasks (0 = all) x devices, in
 * milliseconds, "-" where a task cannot run; then the transfer cost of
 * 1 MB between every pair of devices with the path kind. free() it. */
char *synor_cost_format(const synor_cost *c, size_t max_rows);

#ifdef __cplusplus
}
#endif
#endif
