/* runtime_internal.h - structures shared by the files of src/runtime/
 * (never installed).
 *
 *   pool.c     slab pools of fixed-size objects (tasks, dependency edges)
 *   deque.c    the Chase-Lev work-stealing deque
 *   queue.c    per-device priority ready queues and the idle eventcount
 *   runtime.c  create/start/destroy, worker threads, the scheduling loop
 *   task.c     submission, dependency inference and release, completion,
 *              retries and failure
 *   data.c     data handles
 *
 * Ownership of a task: it lives in a pool slot while refs > 0. References:
 * one held by execution (dropped when the task finished), one per data handle
 * that names it as last writer or as a current reader. Successor edges point
 * at tasks that cannot have finished (they wait for the edge's source), so
 * edges hold no reference. */
#ifndef SYNOR_RUNTIME_INTERNAL_H
#define SYNOR_RUNTIME_INTERNAL_H

#include <hwloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/common.h"
#include "runtime/deque.h"
#include "synor/runtime.h"

#define SYNOR__CACHELINE 64

/* ------------------------------------------------------------------ pools */

/* Objects in a pool start with a link pointer (used while free). */
typedef struct synor__pool {
    size_t elem_size;
    size_t per_slab;
    /* Freed objects flushed by other threads: a Treiber stack onto which
     * chains are pushed by CAS and which is emptied whole by exchange, so
     * no ABA problem (no thread ever pops a single element). */
    _Alignas(SYNOR__CACHELINE) _Atomic(void *) shared;
    _Alignas(SYNOR__CACHELINE) pthread_mutex_t slab_lock;
    void *slabs;
} synor__pool;

/* One thread's private free lists of a pool. */
typedef struct synor__pool_cache {
    void *free;   /* for get */
    void *ret;    /* returned here, flushed to the pool in batches */
    void *ret_tail;
    size_t nret;
} synor__pool_cache;

int synor__pool_init(synor__pool *p, size_t elem_size, size_t per_slab);
void synor__pool_destroy(synor__pool *p); /* frees every slab */
void *synor__pool_get(synor__pool *p, synor__pool_cache *c); /* NULL: ENOMEM */
void synor__pool_put(synor__pool *p, synor__pool_cache *c, void *obj);
void synor__pool_flush(synor__pool *p, synor__pool_cache *c);

/* ------------------------------------------------------------------ tasks */

typedef struct synor__task synor__task;

typedef struct synor__edge {
    struct synor__edge *next;
    synor__task *succ;
} synor__edge;

/* One data access of a task; while the access is a reader of its handle it
 * is linked into the handle's reader list. */
typedef struct synor__acc {
    struct synor__acc *next_reader;
    synor__task *task;
} synor__acc;

enum { SYNOR__TASK_OK = 0, SYNOR__TASK_FAILED = 1, SYNOR__TASK_CANCELLED = 2 };

struct synor__task {
    synor__task *next; /* pool free list, queue link */
    /* Unfinished predecessors + 1 while submission is in progress; the task
     * is ready when it reaches 0. */
    _Atomic int npending;
    _Atomic int refs;
    _Atomic int pred_failed;
    /* Successor edges; SYNOR__SUCC_DONE once the task has finished. */
    _Atomic(synor__edge *) succ;
    int status;      /* written before succ becomes DONE */
    int priority;    /* internal scale: -1 Low, 0 Normal, 1 High, 2 Critical */
    unsigned attempt;
    int avoid_worker; /* a retry prefers another worker than this one */
    unsigned skips;   /* times skipped because of avoid_worker */
    unsigned ndata;
    uint32_t kinds;   /* bit k: kernel->fn[k] != NULL */
    const synor_kernel *kernel;
    void *user;
    uint64_t id, tag;
    synor_handle *data[SYNOR_TASK_MAX_DATA];
    synor__acc acc[SYNOR_TASK_MAX_DATA];
    _Alignas(16) unsigned char args[SYNOR_TASK_MAX_ARGS];
};

#define SYNOR__SUCC_DONE ((synor__edge *)(uintptr_t)1)

/* ----------------------------------------------------------- ready queues */

#define SYNOR__NPRIO 4 /* level = internal priority + 1 (task.c) */

typedef struct synor__pqueue {
    pthread_mutex_t lock;
    synor__task *head[SYNOR__NPRIO], *tail[SYNOR__NPRIO];
    /* Written under lock, read without it to skip empty queues and to
     * decide to sleep (seq_cst: see synor__ec_wait). */
    _Atomic long count;
    _Atomic long count_hi; /* High and Critical */
} synor__pqueue;

/* Eventcount: idle workers of a device sleep here. */
typedef struct synor__ec {
    _Atomic unsigned sleepers;
    _Atomic unsigned epoch;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} synor__ec;

typedef struct synor__device {
    _Alignas(SYNOR__CACHELINE) synor__pqueue q;
    _Alignas(SYNOR__CACHELINE) synor__ec ec;
    synor_kind kind;
    unsigned first_worker, nworkers;
    char name[32];
} synor__device;

typedef struct synor__worker {
    _Alignas(SYNOR__CACHELINE) synor__deque dq;
    _Alignas(SYNOR__CACHELINE) synor_runtime *rt;
    synor__device *dev;
    unsigned id;
    int core;          /* hwloc core index to bind to, -1: none */
    pthread_t thread;
    unsigned rng;
    synor__pool_cache task_cache, edge_cache;
    /* Statistics: written by this worker only, read by get_stats. */
    _Atomic uint64_t executed, stolen;
} synor__worker;

/* ---------------------------------------------------------------- runtime */

#define SYNOR__MAX_DEVICES 2

struct synor_runtime {
    synor_runtime_config cfg;
    unsigned nworkers, ndevices;
    synor__worker *workers;
    synor__device *devices; /* ndevices, cache-line aligned */
    uint32_t kinds_present;
    hwloc_topology_t topo;
    unsigned ncores;
    _Atomic int started, stop;
    unsigned threads_running;

    _Alignas(SYNOR__CACHELINE) _Atomic int64_t outstanding; /* submitted, unfinished */
    _Alignas(SYNOR__CACHELINE) _Atomic int waiters;
    pthread_mutex_t wait_lock;
    pthread_cond_t wait_cond;

    _Alignas(SYNOR__CACHELINE) _Atomic uint64_t next_id;
    synor__pool task_pool, edge_pool;
    /* Caches of threads that are not workers (submitters), shared under a
     * lock: uncontended with one submitting thread. */
    pthread_mutex_t ext_lock;
    synor__pool_cache ext_task, ext_edge;

    pthread_mutex_t err_lock; /* failure path only */
    int err_code;
    char err_msg[768];
    _Atomic uint64_t n_failed, n_cancelled, n_retried;

    pthread_mutex_t data_lock; /* registration only */
    synor_handle *data_list;
};

struct synor_handle {
    synor_runtime *rt;
    synor_handle_desc desc;
    /* Dependency inference state, under lock (taken by submitters only). */
    pthread_mutex_t lock;
    synor__task *last_writer; /* holds a reference */
    synor__acc *readers;      /* since last_writer; each holds a reference */
    synor_handle *prev, *next;  /* rt->data_list */
};

/* queue.c */
void synor__pq_init(synor__pqueue *q);
void synor__pq_destroy(synor__pqueue *q);
void synor__pq_push(synor__pqueue *q, synor__task *t);
/* Highest priority first, FIFO within a level; only tasks with kinds & kind
 * bit; a task whose avoid_worker is self is skipped a bounded number of
 * times when avoid is set; steal (a worker of another device): retries are
 * left to the device they were moved to. NULL if none. */
synor__task *synor__pq_pop(synor__pqueue *q, uint32_t kindbit, int self, int avoid, int steal);
void synor__ec_init(synor__ec *ec);
void synor__ec_destroy(synor__ec *ec);
void synor__ec_notify(synor__ec *ec, int all);

/* task.c */
void synor__task_execute(synor__worker *w, synor__task *t);
void synor__task_unref(synor_runtime *rt, synor__task *t);
/* Puts a ready task in a ready queue (from a worker or any thread). */
void synor__task_place(synor_runtime *rt, synor__worker *self, synor__task *t, const synor__device *avoid);
synor__worker *synor__current_worker(const synor_runtime *rt);

/* runtime.c */
void synor__runtime_task_done(synor_runtime *rt);

/* data.c: once a failure was reported by wait_all, handles stop naming the
 * failed and cancelled tasks, so later tasks start from a clean state
 * instead of being cancelled in turn. */
void synor__data_forget_failures(synor_runtime *rt);

/* kernels (src/kernels/): one BLAS thread per worker. */
void synor__kernels_cpu_init(void);

#endif
