/* workload_internal.h - the workload object behind synor_workload, shared
 * by workload.c (building, validation, order) and workload_json.c (file
 * format). Never installed. */
#ifndef SYNOR_WORKLOAD_INTERNAL_H
#define SYNOR_WORKLOAD_INTERNAL_H

#include <stddef.h>

#include "synor/workload.h"

/* Open-addressing table of name -> index. A slot keeps the name's hash and
 * the (owned, stable) name itself, so a probe touches neither the task
 * array nor another name unless the hashes agree; name NULL = empty. */
typedef struct synor__name_slot {
    uint64_t hash;
    const char *name;
    size_t index;
} synor__name_slot;

typedef struct synor__names {
    synor__name_slot *slots;
    size_t cap, used;
} synor__names;

/* Memory for what the tasks and data own (ids, names, dependency and cost
 * arrays): bump-allocated in large blocks, freed with the workload. A
 * 100,000-task file made half a million small allocations otherwise. */
typedef struct synor__wl_chunk {
    struct synor__wl_chunk *next;
    size_t used, cap;
    max_align_t data[];
} synor__wl_chunk;

struct synor_workload {
    char *name;
    synor_task *tasks;
    size_t n_tasks, task_cap;
    synor_data *data;
    size_t n_data, data_cap;
    uint64_t **dep_bytes; /* per task, parallel to deps (after finish) */
    size_t *order;        /* topological order (after finish) */
    size_t n_groups;      /* colocation groups (after finish) */
    int finished;
    double host_before, host_per_task, host_after; /* synor_workload_set_host */
    long deps_task;       /* after a failed finish: the task whose deps are wrong
                             (on the cycle, two comm_s for one edge), or -1 */
    synor__names task_names, data_names;
    synor__wl_chunk *mem;
    size_t mem_next; /* the size of the next block */
};

/* n bytes owned by w (aligned for any type), or NULL when out of memory. */
void *synor__workload_alloc(synor_workload *w, size_t n);

/* Operations that are inherently sequential unless the file says otherwise:
 * I/O, string processing, one-token-at-a-time decoding. */
int synor__op_default_sequential(synor_op_type t);

#endif
