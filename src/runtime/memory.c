/* memory.c - memory nodes and the replicas of data handles (seed 001 §4.1).
 *
 * Node 0 is host memory: the handle's own pointer, registered by the
 * caller. Every device with memory of its own (an OpenCL device, the test
 * GPU when cfg.test_gpu_memory is set) has a node, with a capacity the
 * runtime accounts for. A handle has one replica slot per node. Replicas
 * off the host are packed (column stride = rows), whatever the host ld.
 *
 * Coherence is MSI per handle: a replica is Invalid, Shared (valid, maybe
 * other valid copies) or Modified (the only valid copy). Before a task runs
 * on node n, every datum it reads gets a valid replica on n: copied from
 * the host if the host copy is valid (path "host", or "unified" for a
 * device sharing the host's DRAM), else directly from a node holding a
 * valid copy when the two nodes have a peer path (same OpenCL context,
 * CUDA peer access: "peer"), else through the host ("cpu-mediated", two
 * hops). Every copy is traced with its path; reads that need no copy are
 * counted as local. A peer copy leaves two Shared device copies and an
 * Invalid host copy, so a replica is "dirty" (written back before it is
 * evicted) whenever it is valid and the host's is not. A datum a task only
 * writes just gets an allocated replica. When
 * the task succeeds, each written replica becomes Modified and every other
 * replica Invalid. The task dependencies (task.c) already order a writer
 * against the readers of a datum, so coherence only has to serialise
 * concurrent readers creating replicas: one lock per handle (coh).
 *
 * A running writer owns its handle: from its acquire to its release
 * (d->writing, under coh), nothing else copies into any of d's buffers. The
 * copies that do not come from a task check the mark: a prefetch request
 * skips d, eviction does not write a dirty replica of d back (into the host
 * copy the writer may be filling), wait_all's write-back leaves d alone.
 *
 * Failed attempts: a retry starts from the data its task found. Before an
 * attempt that may be retried, each read-write operand whose buffer is its
 * only valid copy gets a kept copy (synor__data_keep): in host memory a
 * packed copy in t->saved, on a device the host's copy made valid. A failed
 * attempt's host operand gets its copy back; a written replica is dropped
 * (Invalid) wherever another valid copy exists, so every copy agrees.
 *
 * Capacity and eviction: allocating a replica on a full node evicts the
 * least recently used replicas that no running task uses: Shared or
 * Invalid ones are simply freed; a Modified one is first written back to
 * the host. If what is pinned by running tasks leaves no room, the task's
 * attempt fails with SYNOR_ENOMEM naming the node and the sizes, and the
 * retry logic moves it to another device.
 *
 * Prefetch: when a task is queued on a device, each input with no valid
 * replica on the device's node is queued for the prefetch thread, which
 * makes the replica valid (as acquire would, then unpins it) while the
 * device works on earlier tasks. A queued task is ready: its inputs' last
 * writers have finished, and no later writer can start before it. But a
 * request may be served after its task has run elsewhere (stolen,
 * rebalanced) or after its replica was evicted again, while a later writer
 * runs: the writer mark makes it skip. A request pins its handle, and
 * unregister waits for the pins to drop.
 *
 * Lock order: a handle's coh, then a node's lock, then (trylock only) the
 * coh of a handle being evicted. */
#include <sched.h>
#include <string.h>

#include "runtime/runtime_internal.h"

/* ------------------------------------------------------------ geometry */

static int strided(const synor_handle *d)
{
    return d->desc.ndim == 2 && d->desc.ld != d->desc.shape[0] &&
           synor_dtype_bits(d->desc.dtype) % 8 == 0;
}

/* Host memory of d -> packed buffer. */
static void pack(void *dst, const synor_handle *d)
{
    if (!strided(d)) {
        memcpy(dst, d->desc.ptr, d->bytes);
        return;
    }
    size_t es = synor_dtype_bits(d->desc.dtype) / 8, col = d->desc.shape[0] * es;
    const char *s = d->desc.ptr;
    char *o = dst;
    for (size_t j = 0; j < d->desc.shape[1]; j++)
        memcpy(o + j * col, s + j * d->desc.ld * es, col);
}

static void unpack(const void *src, const synor_handle *d)
{
    if (!strided(d)) {
        memcpy(d->desc.ptr, src, d->bytes);
        return;
    }
    size_t es = synor_dtype_bits(d->desc.dtype) / 8, col = d->desc.shape[0] * es;
    char *o = d->desc.ptr;
    const char *s = src;
    for (size_t j = 0; j < d->desc.shape[1]; j++)
        memcpy(o + j * d->desc.ld * es, s + j * col, col);
}

/* --------------------------------------------- the test GPU's own memory */

static int test_alloc(synor__node *n, size_t bytes, void **buf)
{
    *buf = synor__malloc(bytes ? bytes : 1);
    return *buf ? 0 : synor__error(SYNOR_ENOMEM, "memory node %s: out of host memory", n->name);
}
static void test_free(synor__node *n, void *buf) { synor__free(buf); }
static int test_to_node(synor__node *n, void *buf, const synor_handle *d)
{
    pack(buf, d);
    return 0;
}
static int test_to_host(synor__node *n, const void *buf, const synor_handle *d)
{
    unpack(buf, d);
    return 0;
}
static const synor__node_ops test_ops = {test_alloc, test_free, test_to_node, test_to_host, NULL,
                                         NULL, NULL, NULL};

int synor__test_node_init(synor__node *n, uint64_t capacity)
{
    return synor__node_init(n, "test-gpu", &test_ops, NULL, capacity, 10e9, 0);
}

/* ---------------------------------------------------------------- nodes */

int synor__node_init(synor__node *n, const char *name, const synor__node_ops *ops, void *impl,
                     uint64_t capacity, double bandwidth, int unified)
{
    memset(n, 0, sizeof *n);
    if (pthread_mutex_init(&n->lock, NULL) != 0)
        return synor__error(SYNOR_ENOMEM, "runtime: cannot create a mutex");
    synor__strlcpy(n->name, name, sizeof n->name);
    n->ops = ops;
    n->impl = impl;
    n->capacity = capacity;
    n->bandwidth = bandwidth > 0 ? bandwidth : 10e9;
    n->unified = unified;
    return 0;
}

void synor__node_destroy(synor__node *n) { pthread_mutex_destroy(&n->lock); }

static void lru_remove(synor__node *n, synor__replica *r)
{
    if (!r->in_lru)
        return;
    if (r->lru_prev)
        r->lru_prev->lru_next = r->lru_next;
    else
        n->lru_head = r->lru_next;
    if (r->lru_next)
        r->lru_next->lru_prev = r->lru_prev;
    else
        n->lru_tail = r->lru_prev;
    r->lru_prev = r->lru_next = NULL;
    r->in_lru = 0;
}

static void lru_push(synor__node *n, synor__replica *r)
{
    r->lru_next = NULL;
    r->lru_prev = n->lru_tail;
    if (n->lru_tail)
        n->lru_tail->lru_next = r;
    else
        n->lru_head = r;
    n->lru_tail = r;
    r->in_lru = 1;
}

int synor__handle_replicas_init(synor_runtime *rt, synor_handle *d)
{
    d->rep = NULL;
    if (rt->nnodes < 2)
        return 0;
    d->rep = synor__calloc(rt->nnodes, sizeof *d->rep);
    if (!d->rep)
        return synor__error(SYNOR_ENOMEM, "synor_handle_register: out of memory");
    for (unsigned k = 0; k < rt->nnodes; k++) {
        memset(&d->rep[k], 0, sizeof d->rep[k]);
        d->rep[k].owner = d;
        d->rep[k].node = k;
        d->rep[k].state = SYNOR__INVALID;
    }
    d->rep[0].buf = d->desc.ptr;
    d->rep[0].state = SYNOR__SHARED; /* the caller's memory is the valid copy */
    return 0;
}

/* ------------------------------------------------------------ transfers */

const char *synor_xfer_path_name(synor_xfer_path p)
{
    switch (p) {
    case SYNOR_PATH_HOST: return "host";
    case SYNOR_PATH_UNIFIED: return "unified";
    case SYNOR_PATH_PEER: return "peer";
    case SYNOR_PATH_MEDIATED: return "cpu-mediated";
    default: return NULL;
    }
}

void synor__nodes_link(synor_runtime *rt)
{
    memset(rt->peer, 0, sizeof rt->peer);
    for (unsigned dst = 1; dst < rt->nnodes; dst++)
        for (unsigned src = 1; src < rt->nnodes; src++) {
            const synor__node *a = &rt->nodes[dst], *b = &rt->nodes[src];
            rt->peer[dst][src] = src != dst && a->ops == b->ops && a->ops->can_peer &&
                                 a->ops->peer_copy && a->ops->can_peer(a, b);
        }
}

/* Counts (on the device's node: the destination, or the source of a copy
 * to the host) and traces one copy of d. */
static void copied(synor_runtime *rt, synor_handle *d, unsigned from, unsigned to,
                   synor_xfer_path path, uint64_t start)
{
    synor__node *n = &rt->nodes[to ? to : from];
    atomic_fetch_add_explicit(&n->transfers, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n->bytes, d->bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&rt->path_n[path], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&rt->path_bytes[path], d->bytes, memory_order_relaxed);
    synor__trace_xfer_rec(rt, d, from, to, d->bytes, start, synor__now_ns(), path);
}

/* Copies d between the host and node k (either way). `mediated`: a hop of
 * a device-to-device copy through the host. */
static int copy(synor_runtime *rt, synor_handle *d, unsigned k, int to_host, int mediated)
{
    synor__node *n = &rt->nodes[k];
    uint64_t s = synor__now_ns();
    int rc = to_host ? n->ops->to_host(n, d->rep[k].buf, d) : n->ops->to_node(n, d->rep[k].buf, d);
    if (rc < 0)
        return rc;
    copied(rt, d, to_host ? k : 0, to_host ? 0 : k,
           mediated ? SYNOR_PATH_MEDIATED : n->unified ? SYNOR_PATH_UNIFIED : SYNOR_PATH_HOST, s);
    return 0;
}

/* Under d->coh: makes the host copy valid from a device's valid replica
 * (the Modified one, or a Shared one when a peer copy left the host
 * Invalid). */
static int host_valid(synor_runtime *rt, synor_handle *d, int mediated)
{
    if (d->rep[0].state != SYNOR__INVALID)
        return 0;
    for (int want = SYNOR__MODIFIED; want >= SYNOR__SHARED; want--)
        for (unsigned k = 1; k < rt->nnodes; k++) {
            if (d->rep[k].state == want) {
                int rc = copy(rt, d, k, 1, mediated);
                if (rc < 0)
                    return rc;
                d->rep[k].state = SYNOR__SHARED;
                d->rep[0].state = SYNOR__SHARED;
                return 0;
            }
        }
    return synor__error(SYNOR_ESTATE, "runtime: data %u has no valid copy (internal error)", d->id);
}

/* Under d->coh, the host copy Invalid: copies d into node `to` (its
 * replica allocated) from a node holding a valid replica with a peer path
 * to it. 1: done; 0: no such node; < 0: the copy failed. The source keeps a
 * valid copy, now Shared: with the host Invalid, evicting either replica
 * writes it back first (evict). */
static int peer_fill(synor_runtime *rt, synor_handle *d, unsigned to)
{
    for (unsigned k = 1; k < rt->nnodes; k++) {
        if (!rt->peer[to][k] || d->rep[k].state == SYNOR__INVALID)
            continue;
        synor__node *dst = &rt->nodes[to];
        uint64_t s = synor__now_ns();
        int rc = dst->ops->peer_copy(dst, d->rep[to].buf, &rt->nodes[k], d->rep[k].buf, d->bytes);
        if (rc < 0)
            return rc;
        copied(rt, d, k, to, SYNOR_PATH_PEER, s);
        d->rep[k].state = SYNOR__SHARED;
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------- eviction */

/* Whether dropping r would lose data: it is valid and the host's copy is
 * not (a Modified replica, or a Shared one made by a peer copy). */
static int dirty(const synor__replica *r)
{
    return r->state != SYNOR__INVALID && r->owner->rep[0].state == SYNOR__INVALID;
}

/* Under the node's lock: frees r (owner's coh held by the caller). A dirty
 * replica is written back first. */
static int evict(synor_runtime *rt, synor__node *n, synor__replica *r)
{
    synor_handle *d = r->owner;
    if (dirty(r)) {
        int rc = host_valid(rt, d, 0);
        if (rc < 0)
            return rc;
    }
    lru_remove(n, r);
    n->ops->free(n, r->buf);
    r->buf = NULL;
    r->state = SYNOR__INVALID;
    n->used -= d->bytes;
    atomic_fetch_add_explicit(&n->evictions, 1, memory_order_relaxed);
    return 0;
}

/* Makes room for `bytes` on n (lock held). Clean replicas first, then
 * dirty ones (written back). The state read before the trylock is only a
 * preference; evict decides under the owner's lock. */
static int make_room(synor_runtime *rt, synor__node *n, uint64_t bytes)
{
    for (int pass = 0; pass < 2 && n->used + bytes > n->capacity; pass++) {
        synor__replica *r = n->lru_head;
        while (r && n->used + bytes > n->capacity) {
            synor__replica *next = r->lru_next;
            if (r->users == 0 && pthread_mutex_trylock(&r->owner->coh) == 0) {
                /* A dirty replica is written back into the host copy, which
                 * a running writer of the handle may be filling. */
                if (r->users == 0 && r->buf && dirty(r) == pass && !(pass && r->owner->writing))
                    (void)evict(rt, n, r);
                pthread_mutex_unlock(&r->owner->coh);
            }
            r = next;
        }
    }
    return n->used + bytes <= n->capacity ? 0 : -1;
}

static int node_alloc(synor_runtime *rt, unsigned node, synor_handle *d)
{
    synor__node *n = &rt->nodes[node];
    pthread_mutex_lock(&n->lock);
    if (d->bytes > n->capacity || make_room(rt, n, d->bytes) < 0) {
        uint64_t used = n->used, cap = n->capacity;
        pthread_mutex_unlock(&n->lock);
        return synor__error(SYNOR_ENOMEM,
                            "memory node %s: data %u needs %zu bytes; %llu of %llu bytes are "
                            "held by running tasks",
                            n->name, d->id, d->bytes, (unsigned long long)used,
                            (unsigned long long)cap);
    }
    n->used += d->bytes;
    pthread_mutex_unlock(&n->lock);
    int rc = n->ops->alloc(n, d->bytes, &d->rep[node].buf);
    if (rc < 0) {
        d->rep[node].buf = NULL;
        pthread_mutex_lock(&n->lock);
        n->used -= d->bytes;
        pthread_mutex_unlock(&n->lock);
    }
    return rc;
}

/* -------------------------------------------------- acquire and release */

static void unpin(synor_runtime *rt, synor_handle *d, unsigned node)
{
    synor__replica *r = &d->rep[node];
    r->users--;
    if (node != 0 && r->users == 0 && r->buf) {
        synor__node *n = &rt->nodes[node];
        pthread_mutex_lock(&n->lock);
        lru_push(n, r);
        pthread_mutex_unlock(&n->lock);
    }
}

static int acquire_one(synor_runtime *rt, synor_handle *d, synor_access m, unsigned node)
{
    synor__replica *r = &d->rep[node];
    int rc = 0;
    if ((m & SYNOR_ACCESS_R) && r->state != SYNOR__INVALID)
        atomic_fetch_add_explicit(&rt->nodes[node].local_reads, 1, memory_order_relaxed);
    if (node == 0) {
        if (m & SYNOR_ACCESS_R)
            rc = host_valid(rt, d, 0);
    } else {
        if (!r->buf) {
            rc = node_alloc(rt, node, d);
        } else if (r->in_lru) {
            synor__node *n = &rt->nodes[node];
            pthread_mutex_lock(&n->lock);
            lru_remove(n, r);
            pthread_mutex_unlock(&n->lock);
        }
        if (rc == 0 && (m & SYNOR_ACCESS_R) && r->state == SYNOR__INVALID) {
            /* From the host if its copy is valid; else directly from a
             * device with a peer path; else through the host (two hops). */
            int mediated = d->rep[0].state == SYNOR__INVALID;
            int done = mediated ? peer_fill(rt, d, node) : 0;
            if (done < 0)
                rc = done;
            else if (!done && (rc = host_valid(rt, d, mediated)) == 0)
                rc = copy(rt, d, node, 0, mediated);
            if (rc == 0)
                r->state = SYNOR__SHARED;
        }
        if (rc < 0 && r->buf && r->users == 0) {
            synor__node *n = &rt->nodes[node];
            pthread_mutex_lock(&n->lock);
            lru_push(n, r);
            pthread_mutex_unlock(&n->lock);
        }
    }
    if (rc == 0)
        r->users++;
    return rc;
}

int synor__data_acquire(synor__worker *w, synor__task *t, unsigned node, void **bufs, size_t *lds)
{
    synor_runtime *rt = w->rt;
    for (unsigned i = 0; i < t->ndata; i++) {
        synor_handle *d = t->data[i];
        pthread_mutex_lock(&d->coh);
        int rc = acquire_one(rt, d, t->mode[i], node);
        if (rc == 0) {
            bufs[i] = d->rep[node].buf;
            lds[i] = node == 0 ? d->desc.ld : d->desc.shape[0];
            if (t->mode[i] & SYNOR_ACCESS_W)
                d->writing = 1;
        }
        pthread_mutex_unlock(&d->coh);
        if (rc < 0) {
            for (unsigned j = 0; j < i; j++) {
                pthread_mutex_lock(&t->data[j]->coh);
                if (t->mode[j] & SYNOR_ACCESS_W)
                    t->data[j]->writing = 0;
                unpin(rt, t->data[j], node);
                pthread_mutex_unlock(&t->data[j]->coh);
            }
            return rc;
        }
    }
    return 0;
}

/* ------------------------------------------------- copies kept for a retry */

static int other_valid(const synor_runtime *rt, const synor_handle *d, unsigned node)
{
    for (unsigned k = 0; k < rt->nnodes; k++)
        if (k != node && d->rep[k].state != SYNOR__INVALID)
            return 1;
    return 0;
}

/* Operand i's place in t->saved (read-write operands in host memory, in
 * operand order); NULL when it has none. */
static char *kept_at(const synor__task *t, unsigned i, unsigned node)
{
    if (!t->saved || node != 0 || t->mode[i] != SYNOR_ACCESS_RW)
        return NULL;
    char *p = t->saved;
    for (unsigned j = 0; j < i; j++)
        if (t->mode[j] == SYNOR_ACCESS_RW)
            p += t->data[j]->bytes;
    return p;
}

int synor__data_keep(synor_runtime *rt, synor__task *t, unsigned node)
{
    size_t bytes = 0;
    for (unsigned i = 0; i < t->ndata; i++) {
        synor_handle *d = t->data[i];
        if (t->mode[i] != SYNOR_ACCESS_RW)
            continue;
        if (node == 0) {
            bytes += d->bytes;
            continue;
        }
        /* Another valid copy outlives the attempt: the host's is never
         * evicted, and while the host's is Invalid the valid device copies
         * are dirty, which the writer mark keeps from eviction. */
        pthread_mutex_lock(&d->coh);
        int rc = other_valid(rt, d, node) ? 0 : host_valid(rt, d, 0);
        pthread_mutex_unlock(&d->coh);
        if (rc < 0)
            return rc;
    }
    if (!bytes)
        return 0;
    t->saved = synor__malloc(bytes);
    if (!t->saved)
        return synor__error(SYNOR_ENOMEM,
                            "runtime: no memory to keep %zu bytes of read-write data for a retry",
                            bytes);
    for (unsigned i = 0; i < t->ndata; i++)
        if (t->mode[i] == SYNOR_ACCESS_RW)
            pack(kept_at(t, i, 0), t->data[i]);
    return 0;
}

void synor__data_restore(synor__task *t)
{
    for (unsigned i = 0; i < t->ndata; i++) {
        const char *p = kept_at(t, i, 0);
        if (p)
            unpack(p, t->data[i]);
    }
}

void synor__data_kept_free(synor__task *t)
{
    synor__free(t->saved);
    t->saved = NULL;
}

void synor__data_release(synor__worker *w, synor__task *t, unsigned node, int success)
{
    synor_runtime *rt = w->rt;
    for (unsigned i = 0; i < t->ndata; i++) {
        synor_handle *d = t->data[i];
        pthread_mutex_lock(&d->coh);
        if (t->mode[i] & SYNOR_ACCESS_W) {
            d->writing = 0;
            const char *kept = kept_at(t, i, node);
            if (success) {
                for (unsigned k = 0; k < rt->nnodes; k++)
                    d->rep[k].state = SYNOR__INVALID;
                d->rep[node].state = SYNOR__MODIFIED;
            } else if (kept) {
                unpack(kept, d);
            } else if (other_valid(rt, d, node)) {
                /* The attempt may have written part of this replica: a
                 * retry, or a reader, gets the copy the task found. */
                d->rep[node].state = SYNOR__INVALID;
            }
        }
        unpin(rt, d, node);
        pthread_mutex_unlock(&d->coh);
    }
}

uint64_t synor__data_missing_bytes(const synor__task *t, unsigned node)
{
    uint64_t b = 0;
    for (unsigned i = 0; i < t->ndata && t->data[i]->rep; i++)
        if ((t->mode[i] & SYNOR_ACCESS_R) &&
            atomic_load_explicit(&t->data[i]->rep[node].state, memory_order_relaxed) ==
                SYNOR__INVALID)
            b += t->data[i]->bytes;
    return b;
}

int synor__data_writeback(synor_runtime *rt, synor_handle *d)
{
    if (rt->nnodes < 2)
        return 0;
    pthread_mutex_lock(&d->coh);
    /* A writer running now was submitted after the caller's wait began
     * (another thread): the host copy is its buffer, or about to be
     * superseded. */
    int rc = d->writing ? 0 : host_valid(rt, d, 0);
    pthread_mutex_unlock(&d->coh);
    return rc;
}

void synor__data_drop_replicas(synor_runtime *rt, synor_handle *d)
{
    if (!d->rep)
        return;
    pthread_mutex_lock(&d->coh);
    for (unsigned k = 1; k < rt->nnodes; k++) {
        synor__replica *r = &d->rep[k];
        if (!r->buf)
            continue;
        synor__node *n = &rt->nodes[k];
        pthread_mutex_lock(&n->lock);
        lru_remove(n, r);
        n->ops->free(n, r->buf);
        n->used -= d->bytes;
        pthread_mutex_unlock(&n->lock);
        r->buf = NULL;
        r->state = SYNOR__INVALID;
    }
    pthread_mutex_unlock(&d->coh);
    synor__free(d->rep);
    d->rep = NULL;
}

int synor__data_place(synor_runtime *rt, synor_handle *d, unsigned node)
{
    if (node == 0 || !d->rep)
        return 0;
    pthread_mutex_lock(&d->coh);
    int rc = 0;
    if (d->writing)
        rc = synor__error(SYNOR_EBUSY, "synor_handle_place: data %u: a task that writes it is running",
                          d->id);
    else if (d->rep[node].state == SYNOR__INVALID &&
             (rc = acquire_one(rt, d, SYNOR_ACCESS_R, node)) == 0)
        unpin(rt, d, node);
    pthread_mutex_unlock(&d->coh);
    return rc;
}

/* ------------------------------------------------------------- prefetch */

typedef struct synor__prefetch {
    struct synor__prefetch *next;
    synor_handle *d;
    unsigned node;
} synor__prefetch;

void synor__prefetch_task(synor_runtime *rt, const synor__task *t, unsigned node)
{
    if (!rt->pf_running)
        return;
    for (unsigned i = 0; i < t->ndata; i++) {
        synor_handle *d = t->data[i];
        if (!(t->mode[i] & SYNOR_ACCESS_R) ||
            atomic_load_explicit(&d->rep[node].state, memory_order_relaxed) != SYNOR__INVALID)
            continue;
        synor__prefetch *p = synor__malloc(sizeof *p);
        if (!p)
            return; /* only an optimisation */
        p->d = d;
        p->node = node;
        p->next = NULL;
        atomic_fetch_add_explicit(&d->pins, 1, memory_order_relaxed);
        pthread_mutex_lock(&rt->pf_lock);
        if (rt->pf_tail)
            rt->pf_tail->next = p;
        else
            rt->pf_head = p;
        rt->pf_tail = p;
        pthread_cond_signal(&rt->pf_cond);
        pthread_mutex_unlock(&rt->pf_lock);
    }
}

static void *prefetch_main(void *arg)
{
    synor_runtime *rt = arg;
    pthread_mutex_lock(&rt->pf_lock);
    for (;;) {
        while (!rt->pf_head && !rt->pf_stop)
            pthread_cond_wait(&rt->pf_cond, &rt->pf_lock);
        synor__prefetch *p = rt->pf_head;
        if (!p)
            break; /* stop, and nothing left */
        rt->pf_head = p->next;
        if (!rt->pf_head)
            rt->pf_tail = NULL;
        int stop = rt->pf_stop;
        pthread_mutex_unlock(&rt->pf_lock);
        synor_handle *d = p->d;
        if (!stop) {
            pthread_mutex_lock(&d->coh);
            /* The request was made for a reader that has run since (on
             * another device, or its replica was evicted) and d now has a
             * writer: copying in would overwrite what it writes. */
            if (!d->writing && d->rep[p->node].state == SYNOR__INVALID &&
                acquire_one(rt, d, SYNOR_ACCESS_R, p->node) == 0) {
                unpin(rt, d, p->node);
                atomic_fetch_add_explicit(&rt->n_prefetched, 1, memory_order_relaxed);
            }
            (void)synor__error(0, "%s", ""); /* a failed prefetch is not an error */
            pthread_mutex_unlock(&d->coh);
        }
        atomic_fetch_sub_explicit(&d->pins, 1, memory_order_release);
        synor__free(p);
        pthread_mutex_lock(&rt->pf_lock);
    }
    pthread_mutex_unlock(&rt->pf_lock);
    return NULL;
}

int synor__prefetch_start(synor_runtime *rt)
{
    pthread_mutex_init(&rt->pf_lock, NULL);
    pthread_cond_init(&rt->pf_cond, NULL);
    if (rt->nnodes < 2 || !rt->cfg.prefetch)
        return 0;
    int e = pthread_create(&rt->pf_thread, NULL, prefetch_main, rt);
    if (e != 0)
        return synor__error(SYNOR_EIO, "runtime: cannot create the prefetch thread");
    rt->pf_running = 1;
    return 0;
}

void synor__prefetch_stop(synor_runtime *rt)
{
    if (rt->pf_running) {
        pthread_mutex_lock(&rt->pf_lock);
        rt->pf_stop = 1;
        pthread_cond_signal(&rt->pf_cond);
        pthread_mutex_unlock(&rt->pf_lock);
        pthread_join(rt->pf_thread, NULL);
        rt->pf_running = 0;
    }
    pthread_mutex_destroy(&rt->pf_lock);
    pthread_cond_destroy(&rt->pf_cond);
}

void synor__data_wait_unpinned(synor_handle *d)
{
    while (atomic_load_explicit(&d->pins, memory_order_acquire) > 0)
        sched_yield();
}

/* ------------------------------------------------------- pinned host memory */

/* Page-locking is process-wide for the backends that offer it (CUDA with
 * the PORTABLE flag): the first node that can do it does it for all. */
static synor__node *pin_node(synor_runtime *rt)
{
    for (unsigned i = 0; i < rt->nnodes; i++)
        if (rt->nodes[i].ops && rt->nodes[i].ops->pin && rt->nodes[i].ops->unpin)
            return &rt->nodes[i];
    return NULL;
}

int synor_runtime_pin_host(synor_runtime *rt, void *ptr, size_t bytes)
{
    if (!rt || !ptr)
        return synor__error(SYNOR_EINVAL, "pin host memory: NULL argument");
    synor__node *n = pin_node(rt);
    return n && bytes ? n->ops->pin(n, ptr, bytes) : 0;
}

void synor_runtime_unpin_host(synor_runtime *rt, void *ptr)
{
    synor__node *n = rt && ptr ? pin_node(rt) : NULL;
    if (n)
        n->ops->unpin(n, ptr);
}
