/* pool.c - slab pools of fixed-size objects, so that submitting and running
 * tasks never calls malloc (a slab is allocated only when every cached
 * object is in use; memory then grows linearly with the live objects).
 *
 * Each thread gets from its own cache. A thread that returns objects
 * collects them privately and pushes them onto the pool's shared stack in
 * batches of FLUSH_BATCH (one CAS per batch); a thread whose cache is empty
 * takes the whole shared stack with one exchange. Because elements are only
 * ever removed all at once, the CAS push cannot suffer ABA.
 *
 * Orderings: the push is a release CAS (the links written into the chain are
 * visible to the taker), the take an acquire exchange. Slabs are freed only
 * by synor__pool_destroy. */
#include <stdlib.h>

#include "runtime/runtime_internal.h"

#define FLUSH_BATCH 128

typedef struct slab_hdr {
    void *next;
} slab_hdr;

int synor__pool_init(synor__pool *p, size_t elem_size, size_t per_slab)
{
    /* Round up so that every element stays aligned for its largest member. */
    p->elem_size = (elem_size + SYNOR__CACHELINE - 1) / SYNOR__CACHELINE * SYNOR__CACHELINE;
    p->per_slab = per_slab;
    atomic_init(&p->shared, NULL);
    p->slabs = NULL;
    if (pthread_mutex_init(&p->slab_lock, NULL) != 0)
        return synor__error(SYNOR_ENOMEM, "pool: cannot create a mutex");
    return 0;
}

void synor__pool_destroy(synor__pool *p)
{
    while (p->slabs) {
        void *n = ((slab_hdr *)p->slabs)->next;
        free(p->slabs); /* from posix_memalign, not synor__malloc */
        p->slabs = n;
    }
    pthread_mutex_destroy(&p->slab_lock);
}

static void *new_slab(synor__pool *p, synor__pool_cache *c)
{
    /* The header takes one element's room, so elements stay aligned. */
    char *s = NULL;
    if (posix_memalign((void **)&s, SYNOR__CACHELINE, p->elem_size * (p->per_slab + 1)) != 0)
        return NULL;
    pthread_mutex_lock(&p->slab_lock);
    ((slab_hdr *)s)->next = p->slabs;
    p->slabs = s;
    pthread_mutex_unlock(&p->slab_lock);
    /* Element 1 is returned; 2.. go to the cache's free list. */
    for (size_t i = p->per_slab; i >= 2; i--) {
        void **e = (void **)(s + i * p->elem_size);
        *e = c->free;
        c->free = e;
    }
    return s + p->elem_size;
}

void *synor__pool_get(synor__pool *p, synor__pool_cache *c)
{
    void **e = c->free;
    if (!e) {
        if (c->ret) { /* our own returns first: no shared traffic */
            e = c->ret;
            c->ret = c->ret_tail = NULL;
            c->nret = 0;
        } else if (atomic_load_explicit(&p->shared, memory_order_relaxed)) {
            e = atomic_exchange_explicit(&p->shared, NULL, memory_order_acquire);
        }
        if (!e)
            return new_slab(p, c);
    }
    c->free = *e;
    return e;
}

void synor__pool_flush(synor__pool *p, synor__pool_cache *c)
{
    if (!c->ret)
        return;
    void **tail = c->ret_tail;
    void *head = atomic_load_explicit(&p->shared, memory_order_relaxed);
    do {
        *tail = head;
    } while (!atomic_compare_exchange_weak_explicit(&p->shared, &head, c->ret, memory_order_release,
                                                    memory_order_relaxed));
    c->ret = c->ret_tail = NULL;
    c->nret = 0;
}

void synor__pool_put(synor__pool *p, synor__pool_cache *c, void *obj)
{
    void **e = obj;
    *e = c->ret;
    c->ret = e;
    if (!c->ret_tail)
        c->ret_tail = e;
    if (++c->nret >= FLUSH_BATCH)
        synor__pool_flush(p, c);
}
