/* deque.c - Chase-Lev work-stealing deque with C11 atomics.
 *
 * Algorithm and orderings: Le, Pop, Cohen, Zappa Nardelli, "Correct and
 * Efficient Work-Stealing for Weak Memory Models", PPoPP 2013, fig. 1. The
 * comments on each operation give the reason for every non-relaxed access.
 *
 * Invariants:
 *   - top only grows (CAS by take of the last item or by steal); bottom is
 *     written by the owner only; items live in [top, bottom).
 *   - indices are signed 64-bit: take decrements bottom before reading top,
 *     so bottom may be top - 1 transiently, and 2^63 pushes never wrap.
 *   - buffer slots are atomics: a thief may read a slot while the owner
 *     overwrites it after the item was taken; that thief's CAS on top then
 *     fails and the value is discarded, so the race is benign but must not
 *     be a data race in the C11 sense.
 *
 * ThreadSanitizer does not model atomic_thread_fence (gcc warns -Wtsan), so
 * a TSan build replaces each seq_cst fence by making the two accesses around
 * it seq_cst (the Dekker pattern is then ordered by the single total order S
 * instead of by fences), and the release fence in push by a release store of
 * bottom. Both are at least as strong as the fence version. */
#include "runtime/deque.h"

#include <string.h>

#include "common/common.h"

#if defined(__SANITIZE_THREAD__)
#define SYNOR__DQ_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SYNOR__DQ_TSAN 1
#endif
#endif

#ifdef SYNOR__DQ_TSAN
#define DQ_FENCE_SC() ((void)0)
#define DQ_FENCE_REL() ((void)0)
#define DQ_SC(o) memory_order_seq_cst
#define DQ_REL(o) memory_order_release
#else
#define DQ_FENCE_SC() atomic_thread_fence(memory_order_seq_cst)
#define DQ_FENCE_REL() atomic_thread_fence(memory_order_release)
#define DQ_SC(o) (o)
#define DQ_REL(o) (o)
#endif

char synor__deque_abort_marker; /* its address is the marker; never written */

struct synor__deque_buf {
    int64_t mask; /* capacity - 1, capacity a power of two */
    synor__deque_buf *next_retired;
    _Atomic(void *) slot[];
};

static synor__deque_buf *buf_new(int64_t cap)
{
    synor__deque_buf *b = synor__malloc(sizeof *b + (size_t)cap * sizeof(b->slot[0]));
    if (!b)
        return NULL;
    b->mask = cap - 1;
    b->next_retired = NULL;
    for (int64_t i = 0; i < cap; i++)
        atomic_init(&b->slot[i], NULL);
    return b;
}

int synor__deque_init(synor__deque *q, size_t capacity)
{
    int64_t cap = 16;
    while ((size_t)cap < capacity)
        cap *= 2;
    synor__deque_buf *b = buf_new(cap);
    if (!b)
        return synor__error(SYNOR_ENOMEM, "work-stealing deque: out of memory (%lld slots)",
                            (long long)cap);
    atomic_init(&q->top, 0);
    atomic_init(&q->bottom, 0);
    atomic_init(&q->buf, b);
    q->retired = NULL;
    return 0;
}

void synor__deque_destroy(synor__deque *q)
{
    synor__free(atomic_load_explicit(&q->buf, memory_order_relaxed));
    while (q->retired) {
        synor__deque_buf *n = q->retired->next_retired;
        synor__free(q->retired);
        q->retired = n;
    }
    atomic_store_explicit(&q->buf, NULL, memory_order_relaxed);
}

/* Owner only: copies [t, b) into a buffer twice as large. The old buffer is
 * kept (thieves that loaded it may still read from it: their CAS on top
 * tells them whether what they read is theirs, and the items in [t, b) are
 * identical in both buffers). */
static synor__deque_buf *grow(synor__deque *q, synor__deque_buf *old, int64_t t, int64_t b)
{
    synor__deque_buf *nb = buf_new((old->mask + 1) * 2);
    if (!nb)
        return NULL;
    for (int64_t i = t; i < b; i++)
        atomic_store_explicit(&nb->slot[i & nb->mask],
                              atomic_load_explicit(&old->slot[i & old->mask], memory_order_relaxed),
                              memory_order_relaxed);
    /* release: a thief that loads the new buffer pointer (acquire, the
     * paper's consume) must see the copied slots. */
    atomic_store_explicit(&q->buf, nb, memory_order_release);
    old->next_retired = q->retired;
    q->retired = old;
    return nb;
}

int synor__deque_push(synor__deque *q, void *item)
{
    int64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    /* acquire: pairs with the thieves' CAS on top, so slots they emptied
     * are not overwritten before their read of the slot happened. */
    int64_t t = atomic_load_explicit(&q->top, memory_order_acquire);
    synor__deque_buf *a = atomic_load_explicit(&q->buf, memory_order_relaxed);
    if (b - t > a->mask) {
        a = grow(q, a, t, b);
        if (!a)
            return synor__error(SYNOR_ENOMEM, "work-stealing deque: cannot grow past %lld items",
                                (long long)(b - t));
    }
    atomic_store_explicit(&a->slot[b & a->mask], item, memory_order_relaxed);
    /* release fence: the item (and everything the owner wrote to the object
     * it points to) is visible to a thief that reads the new bottom. */
    DQ_FENCE_REL();
    atomic_store_explicit(&q->bottom, b + 1, DQ_REL(memory_order_relaxed));
    return 0;
}

void *synor__deque_take(synor__deque *q)
{
    int64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed) - 1;
    synor__deque_buf *a = atomic_load_explicit(&q->buf, memory_order_relaxed);
    atomic_store_explicit(&q->bottom, b, DQ_SC(memory_order_relaxed));
    /* seq_cst fence: the store of bottom must be ordered before the load of
     * top (store-load), or the owner and a thief could both take the last
     * item (Dekker). Pairs with the fence in steal. */
    DQ_FENCE_SC();
    int64_t t = atomic_load_explicit(&q->top, DQ_SC(memory_order_relaxed));
    void *x = NULL;
    if (t <= b) {
        x = atomic_load_explicit(&a->slot[b & a->mask], memory_order_relaxed);
        if (t == b) {
            /* The last item: race the thieves for it through top. */
            if (!atomic_compare_exchange_strong_explicit(&q->top, &t, t + 1, memory_order_seq_cst,
                                                         memory_order_relaxed))
                x = NULL;
            atomic_store_explicit(&q->bottom, b + 1, memory_order_relaxed);
        }
    } else {
        atomic_store_explicit(&q->bottom, b + 1, memory_order_relaxed);
    }
    return x;
}

void *synor__deque_steal(synor__deque *q)
{
    /* acquire on top: a thief that sees top advanced by another thief's CAS
     * also sees what that thief saw. */
    int64_t t = atomic_load_explicit(&q->top, DQ_SC(memory_order_acquire));
    /* seq_cst fence: orders the load of top before the load of bottom, the
     * thief's half of the Dekker pattern with take. */
    DQ_FENCE_SC();
    /* acquire on bottom: pairs with push's release fence, so the item read
     * below is the one pushed. */
    int64_t b = atomic_load_explicit(&q->bottom, DQ_SC(memory_order_acquire));
    if (t >= b)
        return NULL;
    /* acquire (the paper's consume): see the slots a growth copied. */
    synor__deque_buf *a = atomic_load_explicit(&q->buf, memory_order_acquire);
    void *x = atomic_load_explicit(&a->slot[t & a->mask], memory_order_relaxed);
    if (!atomic_compare_exchange_strong_explicit(&q->top, &t, t + 1, memory_order_seq_cst,
                                                 memory_order_relaxed))
        return SYNOR__DEQUE_ABORT;
    return x;
}

int64_t synor__deque_size(synor__deque *q)
{
    /* A hint only: relaxed loads, clamped because take may have lowered
     * bottom below top for an instant. */
    int64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    int64_t t = atomic_load_explicit(&q->top, memory_order_relaxed);
    return b > t ? b - t : 0;
}
