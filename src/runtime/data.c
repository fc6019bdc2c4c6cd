/* data.c - data handles: host memory with a shape and a data type whose
 * accesses the runtime orders (task.c infers the dependencies).
 *
 * A handle holds references to the tasks it names (its last writer and the
 * readers since), so their memory outlives the dependency inference that
 * may still need their state. Registration is rare and takes the runtime's
 * data_lock to keep the list destroy frees; submission takes only the
 * handle's own lock. Replicas on other memory nodes and their coherence
 * are memory.c's. */
#include <stdint.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "synor/perfmodel.h"

int synor_handle_register(synor_runtime *rt, const synor_handle_desc *desc, synor_handle **out)
{
    if (!rt || !desc || !out)
        return synor__error(SYNOR_EINVAL, "synor_handle_register: NULL argument");
    *out = NULL;
    if (desc->ndim < 1 || desc->ndim > SYNOR_HANDLE_MAX_DIMS || (unsigned)desc->dtype >= SYNOR_DTYPE_COUNT)
        return synor__error(SYNOR_EINVAL, "synor_handle_register: %u dimensions (1..%d), dtype %d",
                            desc->ndim, SYNOR_HANDLE_MAX_DIMS, (int)desc->dtype);
    for (unsigned i = 0; i < desc->ndim; i++)
        if (desc->shape[i] == 0)
            return synor__error(SYNOR_EINVAL, "synor_handle_register: dimension %u is 0", i);
    if (!desc->ptr)
        return synor__error(SYNOR_EINVAL, "synor_handle_register: ptr is NULL");
    if (desc->ndim == 2 && desc->ld != 0 && desc->ld < desc->shape[0])
        return synor__error(SYNOR_EINVAL, "synor_handle_register: ld %zu < rows %zu", desc->ld,
                            desc->shape[0]);
    size_t n = 1;
    for (unsigned i = 0; i < desc->ndim; i++) {
        if (n > SIZE_MAX / 16 / desc->shape[i])
            return synor__error(SYNOR_EINVAL, "synor_handle_register: shape overflows size_t");
        n *= desc->shape[i];
    }
    uint64_t t0 = rt->cfg.perfmodel ? synor__now_ns() : 0;
    synor_handle *d = synor__calloc(1, sizeof *d);
    if (!d)
        return synor__error(SYNOR_ENOMEM, "synor_handle_register: out of memory");
    if (pthread_mutex_init(&d->lock, NULL) != 0) {
        synor__free(d);
        return synor__error(SYNOR_ENOMEM, "synor_handle_register: cannot create a mutex");
    }
    if (pthread_mutex_init(&d->coh, NULL) != 0) {
        pthread_mutex_destroy(&d->lock);
        synor__free(d);
        return synor__error(SYNOR_ENOMEM, "synor_handle_register: cannot create a mutex");
    }
    d->rt = rt;
    d->desc = *desc;
    for (unsigned i = desc->ndim; i < SYNOR_HANDLE_MAX_DIMS; i++)
        d->desc.shape[i] = 1;
    if (d->desc.ld == 0)
        d->desc.ld = d->desc.shape[0];
    d->bytes = (n * synor_dtype_bits(desc->dtype) + 7) / 8;
    if (synor__handle_replicas_init(rt, d) < 0) {
        pthread_mutex_destroy(&d->coh);
        pthread_mutex_destroy(&d->lock);
        synor__free(d);
        return SYNOR_ENOMEM;
    }
    pthread_mutex_lock(&rt->data_lock);
    d->id = ++rt->next_data_id;
    d->next = rt->data_list;
    if (d->next)
        d->next->prev = d;
    rt->data_list = d;
    pthread_mutex_unlock(&rt->data_lock);
    *out = d;
    if (t0) /* the host side of a call (synor/perfmodel.h) */
        synor_perfmodel_record(rt->cfg.perfmodel, SYNOR_PERFMODEL_REGISTER, 0, SYNOR_PERFMODEL_HOST,
                               (double)(synor__now_ns() - t0) * 1e-9);
    return 0;
}

/* True while a task named by d has not finished. */
static int busy(synor_handle *d)
{
    if (d->last_writer &&
        atomic_load_explicit(&d->last_writer->succ, memory_order_acquire) != SYNOR__SUCC_DONE)
        return 1;
    for (synor__acc *r = d->readers; r; r = r->next_reader)
        if (atomic_load_explicit(&r->task->succ, memory_order_acquire) != SYNOR__SUCC_DONE)
            return 1;
    return 0;
}

/* A finished task that did not succeed (failed or cancelled). */
static int failed(synor__task *t)
{
    return atomic_load_explicit(&t->succ, memory_order_acquire) == SYNOR__SUCC_DONE &&
           t->status != SYNOR__TASK_OK;
}

void synor__data_forget_failures(synor_runtime *rt)
{
    pthread_mutex_lock(&rt->data_lock);
    for (synor_handle *d = rt->data_list; d; d = d->next) {
        pthread_mutex_lock(&d->lock);
        if (d->last_writer && failed(d->last_writer)) {
            synor__task_unref(rt, d->last_writer);
            d->last_writer = NULL;
        }
        synor__acc **pp = &d->readers;
        while (*pp) {
            synor__acc *r = *pp;
            if (failed(r->task)) {
                *pp = r->next_reader;
                synor__task_unref(rt, r->task);
            } else {
                pp = &r->next_reader;
            }
        }
        pthread_mutex_unlock(&d->lock);
    }
    pthread_mutex_unlock(&rt->data_lock);
}

int synor_handle_unregister(synor_handle *d)
{
    if (!d)
        return 0;
    synor_runtime *rt = d->rt;
    pthread_mutex_lock(&d->lock);
    int b = busy(d);
    pthread_mutex_unlock(&d->lock);
    if (b) {
        if (!atomic_load(&rt->started))
            return synor__error(SYNOR_EBUSY,
                                "synor_handle_unregister: tasks using the handle are pending and the "
                                "runtime is not started");
        /* The failure record, if any, stays for the caller's wait_all. */
        pthread_mutex_lock(&rt->wait_lock);
        atomic_fetch_add_explicit(&rt->waiters, 1, memory_order_seq_cst);
        for (;;) {
            pthread_mutex_lock(&d->lock);
            b = busy(d);
            pthread_mutex_unlock(&d->lock);
            if (!b || atomic_load_explicit(&rt->outstanding, memory_order_seq_cst) == 0)
                break;
            pthread_cond_wait(&rt->wait_cond, &rt->wait_lock);
        }
        atomic_fetch_sub_explicit(&rt->waiters, 1, memory_order_relaxed);
        pthread_mutex_unlock(&rt->wait_lock);
    }
    /* Timed from here: waiting for the handle's tasks is not its cost. */
    uint64_t t0 = rt->cfg.perfmodel ? synor__now_ns() : 0;
    pthread_mutex_lock(&d->lock);
    if (d->last_writer)
        synor__task_unref(rt, d->last_writer);
    for (synor__acc *r = d->readers; r;) {
        synor__acc *n = r->next_reader;
        synor__task_unref(rt, r->task);
        r = n;
    }
    d->last_writer = NULL;
    d->readers = NULL;
    pthread_mutex_unlock(&d->lock);
    synor__data_wait_unpinned(d);
    /* The caller's memory gets the last value, wherever it was written. */
    int rc = synor__data_writeback(rt, d);
    synor__data_drop_replicas(rt, d);

    pthread_mutex_lock(&rt->data_lock);
    if (d->prev)
        d->prev->next = d->next;
    else
        rt->data_list = d->next;
    if (d->next)
        d->next->prev = d->prev;
    pthread_mutex_unlock(&rt->data_lock);
    pthread_mutex_destroy(&d->lock);
    pthread_mutex_destroy(&d->coh);
    synor__free(d);
    if (t0)
        synor_perfmodel_record(rt->cfg.perfmodel, SYNOR_PERFMODEL_UNREGISTER, 0,
                               SYNOR_PERFMODEL_HOST, (double)(synor__now_ns() - t0) * 1e-9);
    return rc;
}

int synor_handle_place(synor_handle *d, const synor_data_hint *hint)
{
    if (!d || !hint)
        return synor__error(SYNOR_EINVAL, "synor_handle_place: NULL argument");
    synor_runtime *rt = d->rt;
    synor__device *dev = NULL;
    switch (hint->kind) {
    case SYNOR_DATA_AUTO:
        return 0;
    case SYNOR_DATA_DEVICE:
        if (hint->device >= rt->ndevices)
            return synor__error(SYNOR_EINVAL,
                                "synor_handle_place: device %u: the runtime has %u devices",
                                hint->device, rt->ndevices);
        dev = &rt->devices[hint->device];
        break;
    case SYNOR_DATA_OPERATION:
        if (!hint->kernel)
            return synor__error(SYNOR_EINVAL, "synor_handle_place: operation hint without a kernel");
        dev = synor__place_for_kernel(rt, hint->kernel);
        if (!dev)
            return synor__error(SYNOR_EINVAL,
                                "synor_handle_place: no running device implements kernel '%s'",
                                hint->kernel->name ? hint->kernel->name : "?");
        break;
    default:
        return synor__error(SYNOR_EINVAL, "synor_handle_place: unknown hint kind %d",
                            (int)hint->kind);
    }
    pthread_mutex_lock(&d->lock);
    int writer = d->last_writer && atomic_load_explicit(&d->last_writer->succ,
                                                        memory_order_acquire) != SYNOR__SUCC_DONE;
    pthread_mutex_unlock(&d->lock);
    if (writer)
        return synor__error(SYNOR_EBUSY,
                            "synor_handle_place: data %u: a task that writes it is pending", d->id);
    int rc = synor__data_place(rt, d, dev->node);
    return rc < 0 ? rc : (int)dev->index;
}

void *synor_handle_ptr(const synor_handle *d) { return d->desc.ptr; }
synor_dtype synor_handle_dtype(const synor_handle *d) { return d->desc.dtype; }
unsigned synor_handle_ndim(const synor_handle *d) { return d->desc.ndim; }
size_t synor_handle_dim(const synor_handle *d, unsigned i)
{
    return i < SYNOR_HANDLE_MAX_DIMS ? d->desc.shape[i] : 1;
}
size_t synor_handle_bytes(const synor_handle *d) { return d->bytes; }
size_t synor_handle_ld(const synor_handle *d) { return d->desc.ld; }
