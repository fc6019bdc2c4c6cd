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
 *   memory.c   memory nodes, replicas, MSI coherence, transfers, eviction
 *   place.c    choosing a device for a ready task; stopping a device
 *   rtrace.c   the trace of a real run
 *   cl_backend.c  OpenCL devices (cl_none.c without OpenCL)
 *   cuda_backend.c  CUDA GPUs (the driver through dlopen)
 *   library.c  kernel libraries (synor/kernel.h) and devices' native handles
 *
 * The runtime knows no particular kernels: what kernels prepare per device
 * comes in kernel libraries (synor/kernel.h), and kernels see only the
 * public headers.
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
#include "synor/kernel.h"
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
    uint32_t kinds;   /* implementations: bit k = kernel->fn[k], SYNOR__IMPL_OPENCL */
    synor_access mode[SYNOR_TASK_MAX_DATA];
    int64_t expect_ns; /* expected duration on the device it was queued on */
    uint64_t ready_ns; /* when it first became ready (cfg.perfmodel), 0: not yet */
    int queued_dev;    /* that device, -1: none */
    int hint_dev;      /* synor_task_spec.device - 1: -1 = none */
    int lib;           /* the kernel's library: its slot in rt->libs, -1 = none */
    const synor_kernel *kernel;
    /* The attempt's copy of its read-write data in host memory, kept for a
     * retry (memory.c), or NULL. */
    void *saved;
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

/* Implementation bits of a task (t->kinds) and of a device (impl_bit). */
#define SYNOR__IMPL_OPENCL (1u << 30)
#define SYNOR__IMPL_CUDA (1u << 29)

enum {
    SYNOR__BACKEND_HOST = SYNOR_BACKEND_HOST,
    SYNOR__BACKEND_TEST = SYNOR_BACKEND_TEST,
    SYNOR__BACKEND_OPENCL = SYNOR_BACKEND_OPENCL,
    SYNOR__BACKEND_CUDA = SYNOR_BACKEND_CUDA
};

typedef struct synor__device {
    _Alignas(SYNOR__CACHELINE) synor__pqueue q;
    _Alignas(SYNOR__CACHELINE) synor__ec ec;
    /* Expected work queued here (ns of execution not yet finished). */
    _Alignas(SYNOR__CACHELINE) _Atomic int64_t queued_ns;
    _Atomic int stopped;
    synor_kind kind;
    uint32_t impl_bit;
    int backend;
    unsigned index, node;
    unsigned first_worker, nworkers;
    void *backend_data; /* opencl: synor__cl_dev; cuda: synor__cu_dev */
    synor_device_native native; /* for kernels and kernel libraries */
    double watts;       /* active power for the energy policy (0: unknown) */
    int64_t price_micro_hour; /* for the money policy (currency micro-units) */
    char name[64];
    char product[96];   /* what it is: CPU model, OpenCL device name */
} synor__device;

/* ----------------------------------------------------------- memory nodes */

#define SYNOR__MAX_NODES 8

enum { SYNOR__INVALID = 0, SYNOR__SHARED = 1, SYNOR__MODIFIED = 2 };

typedef struct synor__replica {
    void *buf;       /* host pointer, cl_mem, or NULL: not allocated */
    _Atomic int state; /* SYNOR__INVALID / SHARED / MODIFIED */
    int users;       /* running tasks using it: not evictable */
    struct synor__replica *lru_prev, *lru_next; /* in its node's LRU */
    synor_handle *owner;
    unsigned node;
    int in_lru;
} synor__replica;

typedef struct synor__node synor__node;
typedef struct synor__node_ops {
    int (*alloc)(synor__node *n, size_t bytes, void **buf);
    void (*free)(synor__node *n, void *buf);
    /* host memory of d (with its ld) -> packed replica buf, and back */
    int (*to_node)(synor__node *n, void *buf, const synor_handle *d);
    int (*to_host)(synor__node *n, const void *buf, const synor_handle *d);
    /* Optional (NULL: none). can_peer: whether src's buffers can be copied
     * into dst's directly (both nodes have these ops). peer_copy: `bytes`
     * of packed replica sbuf on src -> dbuf on dst, synchronous. */
    int (*can_peer)(const synor__node *dst, const synor__node *src);
    int (*peer_copy)(synor__node *dst, void *dbuf, synor__node *src, const void *sbuf,
                     size_t bytes);
    /* Optional (NULL: none). pin: page-lock host memory [ptr, ptr+bytes)
     * for faster copies (1 done, 0 not possible, <0 error); unpin undoes
     * a pin that returned 1. */
    int (*pin)(synor__node *n, void *ptr, size_t bytes);
    void (*unpin)(synor__node *n, void *ptr);
} synor__node_ops;

struct synor__node {
    const synor__node_ops *ops; /* NULL for the host node */
    void *impl;
    char name[64];
    int unified;                /* device shares physical memory with the host */
    uint64_t capacity, used;    /* bytes; under lock */
    pthread_mutex_t lock;       /* used, the LRU */
    synor__replica *lru_head, *lru_tail; /* head: least recently used */
    double bandwidth;           /* bytes/s estimate for placement */
    _Atomic uint64_t transfers, bytes, evictions; /* copies into this node */
    _Atomic uint64_t local_reads; /* reads served by a valid replica here */
};

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
    struct synor__tbuf *trace; /* this worker's trace records (cfg.trace) */
    uint64_t last_end_ns;      /* when its last task ended (cfg.perfmodel) */
    uint64_t no_steal_until_ns; /* a steal from another device was refused */
    void *queue;       /* opencl: its cl_command_queue */
} synor__worker;

/* ---------------------------------------------------------------- runtime */

#define SYNOR__MAX_DEVICES 8

/* A kernel library added to the runtime (library.c). */
typedef struct synor__lib {
    const synor_kernel_library *lib;
    void *state[SYNOR__MAX_DEVICES];   /* device_init's, per device */
    unsigned char ok[SYNOR__MAX_DEVICES]; /* device_init succeeded: fini at destroy */
} synor__lib;

struct synor_runtime {
    synor_runtime_config cfg;
    unsigned nworkers, ndevices;
    synor__worker *workers;
    synor__device *devices; /* ndevices, cache-line aligned */
    uint32_t kinds_present;
    hwloc_topology_t topo;
    unsigned ncores;
    unsigned nthreads; /* hardware threads (hwloc PUs) */
    _Atomic int started, stop;
    unsigned threads_running;

    _Alignas(SYNOR__CACHELINE) _Atomic int64_t outstanding; /* submitted, unfinished */
    _Alignas(SYNOR__CACHELINE) _Atomic int waiters;
    _Atomic uint64_t drained_ns; /* with a perfmodel: when outstanding last hit 0 */
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
    _Atomic uint64_t n_calibrating; /* placements made to calibrate the model */

    pthread_mutex_t data_lock; /* registration only */
    synor_handle *data_list;
    unsigned next_data_id;     /* under data_lock */

    unsigned nnodes;
    synor__node nodes[SYNOR__MAX_NODES];
    /* peer[dst][src]: src's replicas copy into dst directly (filled by
     * synor__nodes_link once every device is initialised). */
    unsigned char peer[SYNOR__MAX_NODES][SYNOR__MAX_NODES];
    _Atomic uint64_t path_n[SYNOR_PATH_COUNT], path_bytes[SYNOR_PATH_COUNT];
    void *opencl;              /* synor__cl_state, cl_backend.c */
    void *cuda;                /* synor__cu_state, cuda_backend.c */
    _Atomic uint64_t n_moved, n_rebalanced;
    _Atomic uint64_t next_rebalance_ns;
    pthread_mutex_t rebalance_lock;

    /* Prefetch (memory.c): requests served by one thread when there are
     * several memory nodes. */
    pthread_mutex_t pf_lock;
    pthread_cond_t pf_cond;
    struct synor__prefetch *pf_head, *pf_tail;
    int pf_stop, pf_running;
    pthread_t pf_thread;
    _Atomic uint64_t n_prefetched;

    /* Kernel libraries: libs[0..nlibs) are set up; a slot is written
     * under lib_lock before nlibs is raised past it (release), and read
     * without a lock after an acquire load of nlibs. */
    pthread_mutex_t lib_lock;
    _Atomic unsigned nlibs;
    synor__lib libs[SYNOR_RUNTIME_MAX_LIBRARIES];

    /* Preemption notices (preempt.c). pre_deadline[d]: the monotonic time
     * at which device d stops, 0 = no notice pending; written under
     * pre_lock, read without it. The deadline thread starts with the
     * first notice. */
    pthread_mutex_t pre_lock;
    pthread_cond_t pre_cond; /* on CLOCK_MONOTONIC */
    synor_preempt_fn pre_fn;
    void *pre_user;
    _Atomic uint64_t pre_deadline[SYNOR__MAX_DEVICES];
    int pre_thread_on, pre_quit;
    pthread_t pre_thread;
    /* Marks for the trace (preempted, device stopped, replaced), under
     * trace_lock. */
    struct synor__rmark *marks;
    size_t n_marks, marks_cap;

    uint64_t t0_ns;            /* start: trace time origin */
    struct synor__tbuf *ext_trace; /* records of non-worker threads, under trace_lock */
    pthread_mutex_t trace_lock;
};

struct synor_handle {
    synor_runtime *rt;
    synor_handle_desc desc;
    /* Dependency inference state, under lock (taken by submitters only). */
    pthread_mutex_t lock;
    synor__task *last_writer; /* holds a reference */
    synor__acc *readers;      /* since last_writer; each holds a reference */
    synor_handle *prev, *next;  /* rt->data_list */
    /* Coherence (memory.c), under coh: taken by the workers that run its
     * tasks, never together with lock. */
    pthread_mutex_t coh;
    size_t bytes;             /* packed size */
    unsigned id;
    /* One slot per memory node; NULL when the runtime has only host memory
     * (the common case stays small and cache-friendly). */
    synor__replica *rep;
    /* A task that writes d is running (between acquire and release; the
     * dependencies let only one at a time, and no reader): nothing but
     * that task may touch any of d's buffers meanwhile (memory.c). */
    int writing;
    _Atomic int pins;         /* prefetch requests naming it (unregister waits) */
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
/* The task that would run last (lowest priority, last queued) among those
 * with kinds & kindbit that are neither retries nor hinted; NULL if none. */
synor__task *synor__pq_pop_last(synor__pqueue *q, uint32_t kindbit);
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

/* memory.c */
int synor__node_init(synor__node *n, const char *name, const synor__node_ops *ops, void *impl,
                     uint64_t capacity, double bandwidth, int unified);
void synor__node_destroy(synor__node *n);
int synor__test_node_init(synor__node *n, uint64_t capacity);
/* Fills rt->peer from the nodes' can_peer (runtime create, after every
 * device's init). */
void synor__nodes_link(synor_runtime *rt);
/* Allocates d's replica slots when the runtime has several memory nodes. */
int synor__handle_replicas_init(synor_runtime *rt, synor_handle *d);
/* Makes task t's data valid on node `node` for its access modes, filling
 * bufs/lds; on failure nothing stays pinned. */
int synor__data_acquire(synor__worker *w, synor__task *t, unsigned node, void **bufs, size_t *lds);
/* After the attempt: success applies the writes (MSI); a failure puts back
 * what synor__data_keep kept, or drops the attempt's written replicas where
 * another valid copy exists. Unpins. */
void synor__data_release(synor__worker *w, synor__task *t, unsigned node, int success);
/* Before an attempt on node `node` that may be retried, for a kernel that
 * may fail after writing: keeps what a retry needs to start from the data
 * the task found - a copy of each read-write operand held in host memory
 * (t->saved), or, for one whose only valid copy is the replica on a
 * device's node, the host's copy made valid. On failure nothing is kept. */
int synor__data_keep(synor_runtime *rt, synor__task *t, unsigned node);
/* The attempt failed: its read-write data in host memory get their kept
 * copy back (a runtime with host memory only; release does it otherwise). */
void synor__data_restore(synor__task *t);
/* Frees what synor__data_keep kept (after the attempt, either way). */
void synor__data_kept_free(synor__task *t);
/* Brings the host copy of d up to date (wait_all, unregister). */
int synor__data_writeback(synor_runtime *rt, synor_handle *d);
/* Frees d's replicas off the host (unregister, destroy). */
void synor__data_drop_replicas(synor_runtime *rt, synor_handle *d);
/* Prefetch: the inputs of t, just queued on a device of node `node`, are
 * copied there by the prefetch thread (cfg.prefetch) while the device works
 * on earlier tasks. Start/stop the thread with the runtime. */
void synor__prefetch_task(synor_runtime *rt, const synor__task *t, unsigned node);
int synor__prefetch_start(synor_runtime *rt);
void synor__prefetch_stop(synor_runtime *rt);
/* Waits until no prefetch request names d. */
void synor__data_wait_unpinned(synor_handle *d);

/* Bytes of t's inputs that have no valid replica on node. */
uint64_t synor__data_missing_bytes(const synor__task *t, unsigned node);
/* Makes d's replica on node valid now (a copy from the host, or from the
 * Modified replica through the host); node 0 or a host-only runtime: 0. */
int synor__data_place(synor_runtime *rt, synor_handle *d, unsigned node);

/* place.c */
synor__device *synor__place_choose(synor_runtime *rt, synor__task *t, const synor__device *avoid);
/* The device a datum used by kernel k should live on (SYNOR_DATA_OPERATION);
 * NULL when no running device implements k. */
synor__device *synor__place_for_kernel(synor_runtime *rt, const synor_kernel *k);
/* Implementation bits of kernel k (bit i: fn[i]; SYNOR__IMPL_OPENCL, _CUDA). */
uint32_t synor__kernel_bits(const synor_kernel *k);
void synor__place_done(synor__device *d, synor__task *t);
/* One round of rebalancing; returns the tasks moved. */
int synor__place_steal_helps(synor_runtime *rt, const synor__task *t, synor__device *victim,
                             synor__device *thief);
unsigned synor__place_rebalance(synor_runtime *rt);
/* A device that could not be set up: stopped from the start, with the
 * reason appended to its name ("opencl0 (no context)"). */
void synor__device_disable(synor__device *d, const char *why);
/* A worker of a stopped device hands its queued tasks to other devices. */
void synor__place_drain(synor__worker *w);
uint64_t synor__task_footprint(const synor__task *t);

/* preempt.c: set up and tear down the notices' state and thread. */
void synor__preempt_init(synor_runtime *rt);
void synor__preempt_fini(synor_runtime *rt);

/* rtrace.c */
uint64_t synor__now_ns(void);
/* A mark on device `device` (its first worker's row) from s to e
 * (monotonic ns), when cfg.trace; detail may be NULL. Any thread. */
void synor__trace_mark_rec(synor_runtime *rt, const char *name, unsigned device, uint64_t s,
                           uint64_t e, const char *detail);
void synor__trace_task_rec(synor__worker *w, const synor__task *t, uint64_t s, uint64_t e, int ok);
void synor__trace_xfer_rec(synor_runtime *rt, const synor_handle *d, unsigned from, unsigned to,
                           uint64_t bytes, uint64_t s, uint64_t e, synor_xfer_path path);
void synor__trace_free(synor_runtime *rt);

/* cl_backend.c (cl_none.c without OpenCL): the OpenCL devices to take
 * (cfg.opencl); then each is set up as runtime device d with memory node n.
 * A device that cannot be set up is marked stopped, with the reason in
 * its name. */
int synor__opencl_probe(synor_runtime *rt, unsigned *count);
void synor__opencl_init_device(synor_runtime *rt, unsigned k, synor__device *d, synor__node *n);
void synor__opencl_destroy(synor_runtime *rt);
/* The OpenCL device's worker thread, before its loop: sets w->queue. */
int synor__opencl_worker_begin(synor__worker *w);

/* cuda_backend.c: the same for CUDA GPUs (driver loaded with dlopen). */
int synor__cuda_probe(synor_runtime *rt, unsigned *count);
void synor__cuda_init_device(synor_runtime *rt, unsigned k, synor__device *d, synor__node *n);
void synor__cuda_destroy(synor_runtime *rt);
int synor__cuda_worker_begin(synor__worker *w);

/* library.c: the slot of lib in rt->libs, adding it if need be (< 0: an
 * error, with its message); every library's device_fini (destroy). */
int synor__library_slot(synor_runtime *rt, const synor_kernel_library *lib);
void synor__libraries_fini(synor_runtime *rt);

#endif
