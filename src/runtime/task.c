/* task.c - task submission, dependency inference and release, execution,
 * retries and failure.
 *
 * Dependencies (StarPU's implicit rule, sequential consistency in
 * submission order): for each access of a new task T to a handle D, under
 * D's lock (taken only by submitters):
 *   read:  T waits for D's last writer; T joins D's readers;
 *   write: T waits for D's readers since the last writer, or for the last
 *          writer if there are none; T becomes the last writer.
 * "Waits for P" pushes an edge onto P's successor list with a CAS and
 * increments T's npending. When P finishes it swaps its list for the DONE
 * marker (so no edge can be added after) and decrements each successor's
 * npending; the decrement to 0 makes the successor ready. npending starts
 * at 1 and submission drops that guard last, so T cannot start while its
 * edges are being added. No global lock: a handle's lock and a few atomics
 * per edge.
 *
 * Orderings: the successor list is pushed with release and swapped with
 * acq_rel, so the finisher's writes (the task's outputs, its status) are
 * visible to successors. npending decrements are acq_rel: the thread that
 * takes it to 0 (and then runs or queues the task) has seen every
 * predecessor's writes.
 *
 * Placement of a ready task: a worker that releases a Normal-priority task
 * that only its own device can run keeps it in its own deque (locality, no
 * lock); other tasks go to the ready queue of the device place.c chooses
 * (earliest finish, load, energy or money). A retry goes to another capable
 * device if there is one, and is skipped for a while by the worker it
 * failed on. A device that stops (synor_runtime_device_stop) hands its
 * queued tasks back (drain).
 *
 * A retry starts from the data its task found: before an attempt that may
 * be retried, memory.c keeps what is needed to undo a partial write of the
 * read-write data (synor__data_keep), unless the kernel fails only before
 * writing (SYNOR_KERNEL_FAILS_BEFORE_WRITING).
 */
#include <stdio.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "synor/perfmodel.h"

/* The internal scale: Low -1, Normal 0, High 1, Critical 2, so that
 * "priority > 0" is "above Normal" and a queue level is priority + 1. */
#define RT_PRIO(p) (2 - (int)(p))

static synor__pool_cache *task_cache(synor_runtime *rt, synor__worker *w)
{
    return w ? &w->task_cache : &rt->ext_task;
}

/* Pool access from a non-worker thread is under ext_lock. */
static void *task_alloc(synor_runtime *rt, synor__worker *w)
{
    if (w)
        return synor__pool_get(&rt->task_pool, &w->task_cache);
    pthread_mutex_lock(&rt->ext_lock);
    void *t = synor__pool_get(&rt->task_pool, &rt->ext_task);
    pthread_mutex_unlock(&rt->ext_lock);
    return t;
}

static synor__edge *edge_alloc(synor_runtime *rt, synor__worker *w)
{
    if (w)
        return synor__pool_get(&rt->edge_pool, &w->edge_cache);
    pthread_mutex_lock(&rt->ext_lock);
    synor__edge *e = synor__pool_get(&rt->edge_pool, &rt->ext_edge);
    pthread_mutex_unlock(&rt->ext_lock);
    return e;
}

static void edge_free(synor_runtime *rt, synor__worker *w, synor__edge *e)
{
    if (w) {
        synor__pool_put(&rt->edge_pool, &w->edge_cache, e);
        return;
    }
    pthread_mutex_lock(&rt->ext_lock);
    synor__pool_put(&rt->edge_pool, &rt->ext_edge, e);
    pthread_mutex_unlock(&rt->ext_lock);
}

void synor__task_unref(synor_runtime *rt, synor__task *t)
{
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    synor__worker *w = synor__current_worker(rt);
    if (w) {
        synor__pool_put(&rt->task_pool, task_cache(rt, w), t);
        return;
    }
    pthread_mutex_lock(&rt->ext_lock);
    synor__pool_put(&rt->task_pool, &rt->ext_task, t);
    pthread_mutex_unlock(&rt->ext_lock);
}

/* ---------------------------------------------------------------- placing */

static void finish(synor_runtime *rt, synor__worker *w, synor__task *t, int status);
static void record_failure(synor_runtime *rt, const char *dev, unsigned worker,
                           const synor__task *t, unsigned attempts, int rc, const char *why);

static int self_index(const synor__worker *self) { return self ? (int)self->dev->index : -1; }

void synor__task_place(synor_runtime *rt, synor__worker *self, synor__task *t,
                       const synor__device *avoid)
{
    if (rt->cfg.perfmodel && !t->ready_ns) /* the dispatch time's start (run_task) */
        t->ready_ns = synor__now_ns();
    int mine = t->hint_dev >= 0 ? t->hint_dev == (int)self_index(self)
                                : rt->ndevices == 1 || (self && t->kinds == self->dev->impl_bit);
    if (self && !avoid && mine && t->priority == RT_PRIO(SYNOR_PRIORITY_NORMAL) &&
        (t->kinds & self->dev->impl_bit) &&
        !atomic_load_explicit(&self->dev->stopped, memory_order_relaxed) &&
        synor__deque_push(&self->dq, t) == 0) {
        /* Surplus work (more than the one we take next): let a sleeping
         * peer steal it. A missed wake-up here only costs parallelism: the
         * owner is awake and runs its deque. */
        if (self->dev->nworkers > 1 && synor__deque_size(&self->dq) > 1)
            synor__ec_notify(&self->dev->ec, 0);
        return;
    }
    synor__device *d = synor__place_choose(rt, t, avoid);
    if (!d) {
        /* Every device that implements the kernel has stopped. */
        record_failure(rt, avoid ? avoid->name : "-", self ? self->id : 0, t, t->attempt + 1,
                       SYNOR_ENOTSUP, "no running device implements the kernel (devices were stopped)");
        finish(rt, self, t, SYNOR__TASK_FAILED);
        return;
    }
    if (t->expect_ns)
        atomic_fetch_add_explicit(&d->queued_ns, t->expect_ns, memory_order_relaxed);
    t->queued_dev = (int)d->index;
    /* Before the push: once queued, t may run and be recycled at once. */
    if (rt->pf_running)
        synor__prefetch_task(rt, t, d->node);
    synor__pq_push(&d->q, t);
    synor__ec_notify(&d->ec, 0);
}

/* A worker of a stopped device: give every task it holds to the others. */
void synor__place_drain(synor__worker *w)
{
    synor_runtime *rt = w->rt;
    synor__device *d = w->dev;
    synor__task *t;
    while ((t = synor__deque_take(&w->dq)) != NULL) {
        atomic_fetch_add_explicit(&rt->n_moved, 1, memory_order_relaxed);
        synor__task_place(rt, w, t, d);
    }
    while ((t = synor__pq_pop(&d->q, ~0u, (int)w->id, 0, 0)) != NULL) {
        if (t->queued_dev >= 0)
            synor__place_done(&rt->devices[t->queued_dev], t);
        atomic_fetch_add_explicit(&rt->n_moved, 1, memory_order_relaxed);
        synor__task_place(rt, w, t, d);
    }
}

/* ---------------------------------------------------------------- finish */

static void record_failure(synor_runtime *rt, const char *dev, unsigned worker,
                           const synor__task *t, unsigned attempts, int rc, const char *why)
{
    pthread_mutex_lock(&rt->err_lock);
    if (!rt->err_code) {
        rt->err_code = rc;
        snprintf(rt->err_msg, sizeof rt->err_msg,
                 "task '%s' #%llu failed after %u attempt%s, last on device '%s' (worker %u): %s%s%s",
                 t->kernel->name ? t->kernel->name : "?",
                 (unsigned long long)(t->tag ? t->tag : t->id), attempts, attempts > 1 ? "s" : "",
                 dev, worker, synor_err_name(rc), why[0] ? ": " : "", why);
    }
    pthread_mutex_unlock(&rt->err_lock);
}

/* w is NULL when a non-worker thread finishes a task (placement failed). */
static void finish(synor_runtime *rt, synor__worker *w, synor__task *t, int status)
{
    t->status = status;
    synor__edge *e = atomic_exchange_explicit(&t->succ, SYNOR__SUCC_DONE, memory_order_acq_rel);
    while (e) {
        synor__edge *next = e->next;
        synor__task *s = e->succ;
        if (status != SYNOR__TASK_OK)
            atomic_store_explicit(&s->pred_failed, 1, memory_order_relaxed);
        if (atomic_fetch_sub_explicit(&s->npending, 1, memory_order_acq_rel) == 1) {
            /* it could start when this task's kernel ended: what the worker
             * does from there (recording, releasing, placing) is dispatch */
            if (rt->cfg.perfmodel && !s->ready_ns && w && w->last_end_ns)
                s->ready_ns = w->last_end_ns;
            synor__task_place(rt, w, s, NULL);
        }
        edge_free(rt, w, e);
        e = next;
    }
    if (status == SYNOR__TASK_OK)
        atomic_store_explicit(&w->executed,
                              atomic_load_explicit(&w->executed, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    else if (status == SYNOR__TASK_FAILED)
        atomic_fetch_add_explicit(&rt->n_failed, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&rt->n_cancelled, 1, memory_order_relaxed);
    synor__task_unref(rt, t);
    synor__runtime_task_done(rt);
}

static int run_kernel(synor__worker *w, synor__task *t, const synor_task_ctx *ctx)
{
    synor__device *d = w->dev;
    synor_kernel_fn fn = d->backend == SYNOR__BACKEND_OPENCL ? t->kernel->opencl
                         : d->backend == SYNOR__BACKEND_CUDA ? t->kernel->cuda
                                                             : t->kernel->fn[d->kind];
    if (SYNOR_NEVER(!fn))
        return synor__error(SYNOR_ENOTSUP, "no implementation for device '%s'", d->name);
    return fn(ctx);
}

void synor__task_execute(synor__worker *w, synor__task *t)
{
    synor_runtime *rt = w->rt;
    synor__device *dev = w->dev;
    if (t->queued_dev >= 0)
        synor__place_done(&rt->devices[t->queued_dev], t);
    if (atomic_load_explicit(&t->pred_failed, memory_order_relaxed)) {
        finish(rt, w, t, SYNOR__TASK_CANCELLED);
        return;
    }
    void *bufs[SYNOR_TASK_MAX_DATA];
    size_t lds[SYNOR_TASK_MAX_DATA];
    int timed = rt->cfg.trace || rt->cfg.perfmodel;
    int rc = 0, acquired = 0;
    if (rt->nnodes > 1) {
        rc = synor__data_acquire(w, t, dev->node, bufs, lds);
        acquired = rc >= 0;
    } else {
        for (unsigned i = 0; i < t->ndata; i++) {
            bufs[i] = t->data[i]->desc.ptr;
            lds[i] = t->data[i]->desc.ld;
        }
    }
    /* A retry must start from the data the task found (the kernel
     * contract, synor/runtime.h). */
    if (rc >= 0 && t->attempt + 1 < rt->cfg.max_attempts &&
        !(t->kernel->flags & SYNOR_KERNEL_FAILS_BEFORE_WRITING))
        rc = synor__data_keep(rt, t, dev->node);
    /* Transfers are traced on their own; the task's time is its kernel's. */
    uint64_t t1 = timed ? synor__now_ns() : 0;
    if (rc >= 0) {
        synor_task_ctx ctx = {
            .buffers = bufs,
            .ld = lds,
            .data = t->data,
            .ndata = t->ndata,
            .args = t->args,
            .user = t->user,
            .worker = w->id,
            .kind = dev->kind,
            .attempt = t->attempt,
            .queue = w->queue,
            .device = &dev->native,
            .state = t->lib >= 0 ? rt->libs[t->lib].state[dev->index] : NULL,
        };
        rc = run_kernel(w, t, &ctx);
    }
    if (timed) {
        uint64_t t2 = synor__now_ns();
        if (rt->cfg.trace)
            synor__trace_task_rec(w, t, t1, t2, rc >= 0);
        if (rt->cfg.perfmodel && rc >= 0) {
            synor_perfmodel_record(rt->cfg.perfmodel, t->kernel->name, synor__task_footprint(t),
                                   dev->name, (double)(t2 - t1) * 1e-9);
            /* Dispatch: from when the task could start here (its last
             * predecessor's kernel ended or it was submitted, and this
             * worker's previous kernel ended) to when its kernel started -
             * finishing the previous task, placing, waking a worker,
             * dequeuing, preparing data: what kernel times do not have. */
            uint64_t from = t->ready_ns > w->last_end_ns ? t->ready_ns : w->last_end_ns;
            if (from && t1 >= from)
                synor_perfmodel_record(rt->cfg.perfmodel, SYNOR_PERFMODEL_DISPATCH, 0, dev->name,
                                       (double)(t1 - from) * 1e-9);
            w->last_end_ns = t2;
        }
    }
    if (acquired)
        synor__data_release(w, t, dev->node, rc >= 0);
    else if (rc < 0)
        synor__data_restore(t);
    synor__data_kept_free(t);
    if (rc >= 0) {
        finish(rt, w, t, SYNOR__TASK_OK);
        return;
    }
    /* The kernel's message, if it set one; the slot is then cleared so a
     * later kernel that fails silently is not blamed with this text. */
    char why[512];
    synor__strlcpy(why, synor_errmsg(), sizeof why);
    (void)synor__error(0, "%s", "");
    if (t->attempt + 1 < rt->cfg.max_attempts) {
        t->attempt++;
        t->avoid_worker = (int)w->id;
        t->skips = 0;
        atomic_fetch_add_explicit(&rt->n_retried, 1, memory_order_relaxed);
        synor__task_place(rt, w, t, dev);
        return;
    }
    record_failure(rt, dev->name, w->id, t, t->attempt + 1, rc, why);
    finish(rt, w, t, SYNOR__TASK_FAILED);
}

/* ---------------------------------------------------------------- submit */

/* Makes t wait for p (p != t), unless p has already finished. Called with
 * the lock of the handle that references p held, so p is alive. */
static int add_edge(synor_runtime *rt, synor__worker *w, synor__task *p, synor__task *t)
{
    synor__edge *head = atomic_load_explicit(&p->succ, memory_order_acquire);
    if (head == SYNOR__SUCC_DONE) {
        if (p->status != SYNOR__TASK_OK)
            atomic_store_explicit(&t->pred_failed, 1, memory_order_relaxed);
        return 0;
    }
    synor__edge *e = edge_alloc(rt, w);
    if (!e)
        return SYNOR_ENOMEM;
    e->succ = t;
    atomic_fetch_add_explicit(&t->npending, 1, memory_order_relaxed);
    do {
        if (head == SYNOR__SUCC_DONE) {
            /* p finished meanwhile: its writes are visible (acquire). */
            atomic_fetch_sub_explicit(&t->npending, 1, memory_order_relaxed);
            if (p->status != SYNOR__TASK_OK)
                atomic_store_explicit(&t->pred_failed, 1, memory_order_relaxed);
            edge_free(rt, w, e);
            return 0;
        }
        e->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&p->succ, &head, e, memory_order_release,
                                                    memory_order_acquire));
    return 0;
}

static void infer(synor_runtime *rt, synor__worker *w, synor__task *t, unsigned i, synor_access m,
                  int *enomem)
{
    synor_handle *d = t->data[i];
    pthread_mutex_lock(&d->lock);
    synor__task *lw = d->last_writer;
    if (m & SYNOR_ACCESS_W) {
        if (d->readers) {
            /* Readers already wait for the last writer: waiting for them
             * implies it. */
            synor__acc *r = d->readers;
            d->readers = NULL;
            while (r) {
                synor__acc *n = r->next_reader;
                if (r->task != t && add_edge(rt, w, r->task, t) < 0)
                    *enomem = 1;
                synor__task_unref(rt, r->task);
                r = n;
            }
        } else if (lw && lw != t && add_edge(rt, w, lw, t) < 0) {
            *enomem = 1;
        }
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
        d->last_writer = t;
        if (lw)
            synor__task_unref(rt, lw);
    } else {
        if (lw && lw != t && add_edge(rt, w, lw, t) < 0)
            *enomem = 1;
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
        t->acc[i].task = t;
        t->acc[i].next_reader = d->readers;
        d->readers = &t->acc[i];
    }
    pthread_mutex_unlock(&d->lock);
}

uint32_t synor__kernel_bits(const synor_kernel *k)
{
    uint32_t kinds = 0;
    for (unsigned i = 0; i < SYNOR_KIND_COUNT; i++)
        if (k->fn[i])
            kinds |= 1u << i;
    if (k->opencl)
        kinds |= SYNOR__IMPL_OPENCL;
    if (k->cuda)
        kinds |= SYNOR__IMPL_CUDA;
    return kinds;
}

int synor_task_submit(synor_runtime *rt, const synor_task_spec *task)
{
    if (!rt || !task || !task->kernel)
        return synor__error(SYNOR_EINVAL, "synor_task_submit: runtime, task or kernel is NULL");
    const synor_kernel *k = task->kernel;
    uint32_t kinds = synor__kernel_bits(k);
    if (!(kinds & rt->kinds_present))
        return synor__error(SYNOR_ENOTSUP,
                            "synor_task_submit: no device of the runtime implements kernel '%s'",
                            k->name ? k->name : "?");
    if (task->ndata > SYNOR_TASK_MAX_DATA || task->args_size > SYNOR_TASK_MAX_ARGS ||
        (task->args_size && !task->args) || (unsigned)task->priority > SYNOR_PRIORITY_LOW)
        return synor__error(SYNOR_EINVAL,
                            "synor_task_submit: kernel '%s': %u data (max %d), %zu argument bytes "
                            "(max %d), priority %d",
                            k->name ? k->name : "?", task->ndata, SYNOR_TASK_MAX_DATA,
                            task->args_size, SYNOR_TASK_MAX_ARGS, (int)task->priority);
    for (unsigned i = 0; i < task->ndata; i++) {
        synor_access m = task->mode[i];
        if (!task->data[i] || task->data[i]->rt != rt ||
            (m != SYNOR_ACCESS_R && m != SYNOR_ACCESS_W && m != SYNOR_ACCESS_RW))
            return synor__error(SYNOR_EINVAL,
                                "synor_task_submit: kernel '%s': data %u is NULL, of another "
                                "runtime, or has a bad access mode",
                                k->name ? k->name : "?", i);
    }
    if (task->device && (task->device > rt->ndevices ||
                         !(kinds & rt->devices[task->device - 1].impl_bit)))
        return synor__error(SYNOR_EINVAL,
                            "synor_task_submit: kernel '%s': device hint %u: %s",
                            k->name ? k->name : "?", task->device,
                            task->device > rt->ndevices ? "no such device"
                                                        : "that device does not implement it");
    /* The kernel's library is set up before its first task is queued. */
    int lib = k->library ? synor__library_slot(rt, k->library) : -1;
    if (k->library && lib < 0)
        return lib;
    uint64_t submit_ns = rt->cfg.perfmodel ? synor__now_ns() : 0;
    synor__worker *w = synor__current_worker(rt);
    synor__task *t = task_alloc(rt, w);
    if (!t)
        return synor__error(SYNOR_ENOMEM, "synor_task_submit: out of memory for a task");
    atomic_init(&t->npending, 1);
    atomic_init(&t->refs, 1);
    atomic_init(&t->pred_failed, 0);
    atomic_init(&t->succ, NULL);
    t->status = SYNOR__TASK_OK;
    t->priority = RT_PRIO(task->priority);
    t->attempt = 0;
    t->avoid_worker = -1;
    t->skips = 0;
    t->ready_ns = 0;
    t->ndata = task->ndata;
    t->kinds = kinds & rt->kinds_present;
    t->expect_ns = 0;
    t->queued_dev = -1;
    t->hint_dev = (int)task->device - 1;
    t->lib = lib;
    t->kernel = k;
    t->saved = NULL;
    t->user = task->user;
    t->tag = task->tag;
    t->id = atomic_fetch_add_explicit(&rt->next_id, 1, memory_order_relaxed);
    if (task->args_size)
        memcpy(t->args, task->args, task->args_size);
    atomic_fetch_add_explicit(&rt->outstanding, 1, memory_order_relaxed);

    /* Edge allocation is the only failure after this point; a task that
     * cannot record a dependency must not run out of order, so it is
     * cancelled (it finishes without running) and the submit reports it. */
    int enomem = 0;
    for (unsigned i = 0; i < t->ndata; i++) {
        t->data[i] = task->data[i];
        t->mode[i] = task->mode[i];
    }
    for (unsigned i = 0; i < t->ndata; i++)
        infer(rt, w, t, i, task->mode[i], &enomem);
    if (enomem)
        atomic_store_explicit(&t->pred_failed, 1, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(&t->npending, 1, memory_order_acq_rel) == 1)
        synor__task_place(rt, w, t, NULL);
    /* The submitting thread's time (a task submitted from a kernel is
     * the worker's, already in that kernel's time). */
    if (submit_ns && !w)
        synor_perfmodel_record(rt->cfg.perfmodel, SYNOR_PERFMODEL_SUBMIT, 0, SYNOR_PERFMODEL_HOST,
                               (double)(synor__now_ns() - submit_ns) * 1e-9);
    if (enomem)
        return synor__error(SYNOR_ENOMEM,
                            "synor_task_submit: kernel '%s': out of memory recording a dependency; "
                            "the task is cancelled",
                            k->name ? k->name : "?");
    return 0;
}
