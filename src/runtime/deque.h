/* deque.h - a lock-free Chase-Lev work-stealing deque of pointers (internal).
 *
 * One thread, the owner, pushes and takes at the bottom (LIFO); any number
 * of other threads, thieves, steal at the top (FIFO). The buffer grows when
 * full. The memory orderings are those of Le, Pop, Cohen and Zappa Nardelli,
 * "Correct and Efficient Work-Stealing for Weak Memory Models" (PPoPP 2013),
 * figure 1; deque.c justifies each. Never installed. */
#ifndef SYNOR_RUNTIME_DEQUE_H
#define SYNOR_RUNTIME_DEQUE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct synor__deque_buf synor__deque_buf;

typedef struct synor__deque {
    /* top and bottom on their own cache lines: thieves hammer top with CAS
     * while the owner writes bottom on every push and take. */
    _Alignas(64) _Atomic int64_t top;
    _Alignas(64) _Atomic int64_t bottom;
    _Atomic(synor__deque_buf *) buf;
    /* Buffers replaced by growth. A thief may still be reading one, so they
     * are freed only by synor__deque_destroy; growth doubles, so together
     * they are smaller than the live buffer. Owner only. */
    synor__deque_buf *retired;
} synor__deque;

/* What synor__deque_steal returns when it lost a race with the owner or
 * another thief: the deque was not empty, try again (or elsewhere). */
#define SYNOR__DEQUE_ABORT ((void *)&synor__deque_abort_marker)
extern char synor__deque_abort_marker;

/* capacity is rounded up to a power of two (at least 16). 0 or SYNOR_ENOMEM. */
int synor__deque_init(synor__deque *q, size_t capacity);
/* No other thread may use q any more. */
void synor__deque_destroy(synor__deque *q);

/* Owner only. item must not be NULL. 0, or SYNOR_ENOMEM when the buffer was
 * full and could not grow (the deque is unchanged). */
int synor__deque_push(synor__deque *q, void *item);
/* Owner only. The most recently pushed item, or NULL if empty. */
void *synor__deque_take(synor__deque *q);
/* Any thread. The oldest item, NULL if empty, or SYNOR__DEQUE_ABORT. */
void *synor__deque_steal(synor__deque *q);
/* Any thread: items present at some recent instant (a hint, for choosing a
 * victim and deciding to sleep; never negative). */
int64_t synor__deque_size(synor__deque *q);

#endif
