/* test_deque.c - the Chase-Lev deque: sequential semantics, growth, and a
 * stress test with one owner and many thieves in which every pushed item must
 * be taken or stolen exactly once (also run under ThreadSanitizer). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "runtime/deque.h"
#include "synor/error.h"
#include "test.h"

TEST(lifo_for_owner_fifo_for_thief)
{
    synor__deque q;
    ASSERT_OK(synor__deque_init(&q, 4));
    uintptr_t v[5] = {1, 2, 3, 4, 5};
    for (int i = 0; i < 5; i++)
        ASSERT_OK(synor__deque_push(&q, (void *)v[i]));
    ASSERT_EQ(synor__deque_size(&q), 5);
    ASSERT_EQ((uintptr_t)synor__deque_steal(&q), 1);
    ASSERT_EQ((uintptr_t)synor__deque_take(&q), 5);
    ASSERT_EQ((uintptr_t)synor__deque_take(&q), 4);
    ASSERT_EQ((uintptr_t)synor__deque_steal(&q), 2);
    ASSERT_EQ((uintptr_t)synor__deque_take(&q), 3);
    ASSERT(synor__deque_take(&q) == NULL);
    ASSERT(synor__deque_steal(&q) == NULL);
    ASSERT_EQ(synor__deque_size(&q), 0);
    synor__deque_destroy(&q);
}

TEST(grows_keeping_order)
{
    synor__deque q;
    ASSERT_OK(synor__deque_init(&q, 16));
    for (uintptr_t i = 1; i <= 10000; i++) {
        ASSERT_OK(synor__deque_push(&q, (void *)i));
        if (i % 3 == 0)
            ASSERT_EQ((uintptr_t)synor__deque_steal(&q), i / 3);
    }
    for (uintptr_t i = 10000; i > 10000 / 3; i--)
        ASSERT_EQ((uintptr_t)synor__deque_take(&q), i);
    ASSERT(synor__deque_take(&q) == NULL);
    synor__deque_destroy(&q);
}

enum { NTHIEVES = 6, NITEMS = 200000 };

typedef struct stress {
    synor__deque q;
    _Atomic unsigned char *seen; /* times each item was obtained */
    _Atomic int done;
    _Atomic long stolen;
} stress;

static void mark(stress *s, void *x)
{
    uintptr_t i = (uintptr_t)x - 1;
    atomic_fetch_add_explicit(&s->seen[i], 1, memory_order_relaxed);
}

static void *thief(void *arg)
{
    stress *s = arg;
    long n = 0;
    for (;;) {
        void *x = synor__deque_steal(&s->q);
        if (x == SYNOR__DEQUE_ABORT)
            continue;
        if (x) {
            mark(s, x);
            n++;
            continue;
        }
        if (atomic_load_explicit(&s->done, memory_order_acquire))
            break;
    }
    atomic_fetch_add(&s->stolen, n);
    return NULL;
}

TEST(one_owner_many_thieves_exactly_once)
{
    static stress s;
    ASSERT_OK(synor__deque_init(&s.q, 16)); /* small: growth under contention */
    s.seen = calloc(NITEMS, 1);
    ASSERT(s.seen != NULL);
    atomic_store(&s.done, 0);
    atomic_store(&s.stolen, 0);
    pthread_t th[NTHIEVES];
    for (int i = 0; i < NTHIEVES; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, thief, &s), 0);
    long taken = 0;
    /* Bursts of pushes with takes in between, so both the last-item race
     * (take vs steal on one item) and growth are exercised. */
    uintptr_t next = 1;
    unsigned rng = 12345;
    while (next <= NITEMS) {
        rng = rng * 1103515245u + 12345u;
        unsigned burst = 1 + (rng >> 16) % 64;
        for (unsigned k = 0; k < burst && next <= NITEMS; k++)
            ASSERT_OK(synor__deque_push(&s.q, (void *)next++));
        unsigned takes = (rng >> 8) % (burst + 1);
        for (unsigned k = 0; k < takes; k++) {
            void *x = synor__deque_take(&s.q);
            if (!x)
                break;
            mark(&s, x);
            taken++;
        }
    }
    void *x;
    while ((x = synor__deque_take(&s.q)) != NULL) {
        mark(&s, x);
        taken++;
    }
    atomic_store_explicit(&s.done, 1, memory_order_release);
    for (int i = 0; i < NTHIEVES; i++)
        pthread_join(th[i], NULL);
    ASSERT_EQ(taken + atomic_load(&s.stolen), NITEMS);
    for (long i = 0; i < NITEMS; i++)
        if (atomic_load_explicit(&s.seen[i], memory_order_relaxed) != 1)
            TEST__FAIL("item %ld obtained %d times", i + 1, (int)s.seen[i]);
    free((void *)(uintptr_t)s.seen);
    synor__deque_destroy(&s.q);
}

TEST_MAIN(lifo_for_owner_fifo_for_thief, grows_keeping_order, one_owner_many_thieves_exactly_once)
