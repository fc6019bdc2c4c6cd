/* synor/workload.h - workloads: DAGs of tasks, each an operation with
 * shapes and a data type from which its work (FLOPs, bytes moved) is
 * derived (seed 001, Part 2).
 *
 * A workload is read from JSON (format synor-workload/1, docs/WORKLOADS.md)
 * and written back. Loading validates everything and reports the first
 * problem with file:line:column and the field: an unknown operation, a
 * missing or negative dimension, a non-finite number, a duplicate task id,
 * a dependency on a task that does not exist, or a cycle (naming the tasks
 * on it). Tasks may carry explicit costs instead of work (a cost row per
 * device, a communication cost per edge) to state problems from the
 * scheduling literature. A workload is immutable once loaded. */
#ifndef SYNOR_WORKLOAD_H
#define SYNOR_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "synor/op.h"
#include "synor/processor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum synor_priority {
    SYNOR_PRIORITY_CRITICAL = 0,
    SYNOR_PRIORITY_HIGH = 1,
    SYNOR_PRIORITY_NORMAL = 2,
    SYNOR_PRIORITY_LOW = 3
} synor_priority;

const char *synor_priority_name(synor_priority p);

/* The dimensions an operation may carry; which ones an operation needs is
 * listed in docs/WORKLOADS.md. 0 = absent. */
typedef struct synor_op_dims {
    int64_t m, n, k;        /* matmul: (m x k) . (k x n) */
    int64_t batch, seq;     /* attention, feed_forward, embedding */
    int64_t kv_len;         /* attention: keys/values attended (default seq) */
    int64_t heads, kv_heads, head_dim;
    int64_t hidden, ffn;    /* feed_forward, embedding, layer ops */
    int64_t elements;       /* element-wise, reduction, optimizer, I/O ops */
    int64_t vocab;          /* output_projection, cross_entropy_loss */
    int64_t layers;         /* decode_step: layers one token goes through */
} synor_op_dims;

/* One operation of a task. */
typedef struct synor_op {
    synor_op_type type;
    int backward;            /* the gradient of `type` */
    synor_dtype dtype;
    synor_op_dims dims;
    synor_op_work work;      /* derived (or given explicitly in the file) */
    int sequential;          /* inherently sequential (decode, I/O, tokenize) */
} synor_op;

/* Derives op->work from type, backward, dtype and dims. Fails with
 * SYNOR_EINVAL naming the missing dimension for operations whose work has a
 * formula; other operations need explicit work. */
int synor_op_derive(synor_op *op);

/* A named piece of data. Data no task produces is external: model weights
 * and inputs, resident on the devices that use it before the run starts
 * (its bytes count against their memory, its loading does not count in
 * time). Data a task produces moves along the edges to the tasks that
 * consume it. */
typedef struct synor_data {
    const char *name;
    uint64_t bytes;
    long producer; /* task index, or -1: external */
} synor_data;

/* A task, read-only once the workload is finished. */
typedef struct synor_task {
    const char *id;
    synor_op op;
    synor_priority priority;
    const size_t *deps;      /* task indexes: the explicit dependencies plus the
                                producers of the data it consumes; sorted,
                                unique */
    size_t n_deps;
    const size_t *produces;  /* data indexes */
    size_t n_produces;
    const size_t *consumes;  /* data indexes */
    size_t n_consumes;
    uint64_t workspace;      /* extra bytes the task needs on its device while
                                it runs (activations, KV-cache growth) */
    int has_preferred, has_fallback;
    synor_kind preferred, fallback;
    /* An explicit cost row, as published scheduling benchmarks give one
     * (docs/WORKLOADS.md "Literature problems"): the seconds the task takes
     * on each device, used instead of the estimate from its work. n_exec 0:
     * none. exec_dev NULL: exec_s[k] is for the fabric's k-th device, and
     * n_exec must equal the fabric's device count; else exec_s[k] is for
     * the device named exec_dev[k], and devices not named cannot run the
     * task. INFINITY: cannot run there. Matched against a fabric by
     * synor_cost_create. */
    const double *exec_s;
    const char *const *exec_dev;
    size_t n_exec;
    /* Explicit communication costs, parallel to deps: the seconds the edge
     * deps[j] -> task takes between two distinct devices (0 on the same
     * device) instead of its bytes over the fabric; < 0 = none. NULL when
     * no edge into the task has one. */
    const double *dep_comm;
    /* A colocation group (docs/WORKLOADS.md): every task of a group runs on
     * one device, e.g. a data-parallel replica or a tensor-parallel shard;
     * planners put a group's first task preferably on a device no other
     * group uses yet. NULL: none. group_index numbers the groups (after
     * finish; SIZE_MAX for none). */
    const char *group;
    size_t group_index;
} synor_task;

/* What synor_workload_add_task copies into the workload. deps are task
 * indexes (they may name tasks added later); produces and consumes are data
 * indexes from synor_workload_add_data. */
typedef struct synor_task_desc {
    const char *id;
    synor_op op;             /* op.work must be filled (synor_op_derive) */
    synor_priority priority;
    const size_t *deps;
    size_t n_deps;
    const size_t *produces;
    size_t n_produces;
    const size_t *consumes;
    size_t n_consumes;
    uint64_t workspace;
    int has_preferred, has_fallback;
    synor_kind preferred, fallback;
    const double *exec_s;    /* as in synor_task; each >= 0 or INFINITY */
    const char *const *exec_dev;
    size_t n_exec;
    const double *dep_comm;  /* NULL, or parallel to deps: finite seconds >= 0,
                                or < 0 for none */
    const char *group;       /* NULL or a non-empty name */
} synor_task_desc;

typedef struct synor_workload synor_workload;

/* Building: create, add data and tasks, finish. finish validates (dangling
 * dependency, data produced twice, cycle naming the tasks on it, two
 * different comm_s for one edge) and
 * computes the order; only a finished workload may be planned. Adding after
 * finish fails with SYNOR_ESTATE. */
int synor_workload_create(const char *name, synor_workload **out);
int synor_workload_add_data(synor_workload *w, const char *name, uint64_t bytes, size_t *index);
int synor_workload_add_task(synor_workload *w, const synor_task_desc *t, size_t *index);
int synor_workload_finish(synor_workload *w);

/* The submitting thread's own work around the tasks, as a real run of the
 * task runtime has it (issue 11; synor_whatif_calibrate sets it from the
 * performance model's host entries, synor/perfmodel.h): before_s before
 * the first task is submitted (registering data), per_task_s per
 * submission - the tasks are submitted one after another in index order,
 * so task i exists from before_s + (i + 1) * per_task_s and cannot start
 * earlier, while the devices already run the tasks submitted before it -
 * and after_s from the end of the last task to the end of the run
 * (waking the waiting thread, unregistering). The simulator charges them
 * (synor/sim.h); planners ignore them. All 0 by default. Each must be
 * finite and >= 0 (SYNOR_EINVAL naming it). May be set after finish (a
 * cost model made from the workload sees the change: nothing is derived
 * from them). No JSON form: it describes a run of this machine, not the
 * workload. */
int synor_workload_set_host(synor_workload *w, double before_s, double per_task_s,
                            double after_s);
/* The three figures (any pointer may be NULL). */
void synor_workload_host(const synor_workload *w, double *before_s, double *per_task_s,
                         double *after_s);

/* The number of colocation groups (after finish). */
size_t synor_workload_group_count(const synor_workload *w);

/* The index of a task or data by name; -1 if absent. */
long synor_workload_find_task(const synor_workload *w, const char *id);
long synor_workload_find_data(const synor_workload *w, const char *name);

int synor_workload_load_file(const char *path, synor_workload **out);
int synor_workload_load_string(const char *text, size_t len, const char *name,
                               synor_workload **out);
void synor_workload_destroy(synor_workload *w);

const char *synor_workload_name(const synor_workload *w);
size_t synor_workload_count(const synor_workload *w);
const synor_task *synor_workload_task(const synor_workload *w, size_t i);
size_t synor_workload_data_count(const synor_workload *w);
const synor_data *synor_workload_data(const synor_workload *w, size_t i);
/* Bytes that move along the edge dep -> task: the data task consumes that dep
 * produces (0 for a pure ordering dependency). */
uint64_t synor_workload_edge_bytes(const synor_workload *w, size_t task, size_t dep);
/* Seconds the edge dep -> task takes between two distinct devices when the
 * workload gives it explicitly ("comm_s"); < 0 when it does not (then the
 * edge costs its bytes over the fabric). */
double synor_workload_edge_comm(const synor_workload *w, size_t task, size_t dep);
/* A topological order (dependencies first; ties in insertion order). */
const size_t *synor_workload_order(const synor_workload *w);
/* Totals over all tasks. */
double synor_workload_flops(const synor_workload *w);
double synor_workload_bytes(const synor_workload *w);

/* The workload in its file format; free() the string. NULL on failure. */
char *synor_workload_to_json(const synor_workload *w);

#ifdef __cplusplus
}
#endif
#endif
