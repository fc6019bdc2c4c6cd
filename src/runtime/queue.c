/* queue.c - per-device ready queues ordered by priority, and the eventcount
 * on which a device's idle workers sleep.
 *
 * A ready queue is four intrusive FIFO lists (Low, Normal, High, Critical)
 * under one mutex per device: tasks that a worker releases at Normal
 * priority go to its own lock-free deque instead (task.c), so the lock is
 * taken per task only for tasks submitted from outside, retries and
 * non-Normal priorities. count and count_hi mirror the contents so that
 * workers can skip an empty queue without locking.
 *
 * Sleeping without lost wake-ups (an eventcount): a worker about to sleep
 * increments sleepers, reads epoch, re-checks for work, and then waits
 * under the lock while epoch is unchanged. A producer makes its work
 * visible (count++, seq_cst) and then reads sleepers (seq_cst): by the
 * single total order of seq_cst operations either the producer sees the
 * sleeper, and bumps epoch under the lock, or the sleeper's re-check sees
 * the work (Dekker). The producer pays one load when nobody sleeps. */
#include "runtime/runtime_internal.h"

void synor__pq_init(synor__pqueue *q)
{
    pthread_mutex_init(&q->lock, NULL);
    for (int i = 0; i < SYNOR__NPRIO; i++)
        q->head[i] = q->tail[i] = NULL;
    atomic_init(&q->count, 0);
    atomic_init(&q->count_hi, 0);
}

void synor__pq_destroy(synor__pqueue *q) { pthread_mutex_destroy(&q->lock); }

/* t->priority is the internal scale of task.c: -1 (Low) .. 2 (Critical). */
static int level_of(const synor__task *t) { return t->priority + 1; }

void synor__pq_push(synor__pqueue *q, synor__task *t)
{
    int l = level_of(t);
    t->next = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->tail[l])
        q->tail[l]->next = t;
    else
        q->head[l] = t;
    q->tail[l] = t;
    if (t->priority > 0)
        atomic_fetch_add_explicit(&q->count_hi, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&q->count, 1, memory_order_seq_cst);
    pthread_mutex_unlock(&q->lock);
}

/* A retried task is skipped by the worker it failed on this many times, so
 * another worker gets the chance to take it; then anyone may. */
#define MAX_SKIPS 256

synor__task *synor__pq_pop(synor__pqueue *q, uint32_t kindbit, int self, int avoid, int steal)
{
    synor__task *t = NULL;
    pthread_mutex_lock(&q->lock);
    for (int l = SYNOR__NPRIO - 1; l >= 0 && !t; l--) {
        synor__task *prev = NULL;
        for (synor__task *c = q->head[l]; c; prev = c, c = c->next) {
            /* Thieves leave retries and hinted tasks where they were put. */
            if (!(c->kinds & kindbit) || (steal && (c->attempt > 0 || c->hint_dev >= 0)))
                continue;
            if (avoid && c->avoid_worker == self && c->skips < MAX_SKIPS) {
                c->skips++;
                continue;
            }
            if (prev)
                prev->next = c->next;
            else
                q->head[l] = c->next;
            if (q->tail[l] == c)
                q->tail[l] = prev;
            t = c;
            break;
        }
    }
    if (t) {
        if (t->priority > 0)
            atomic_fetch_sub_explicit(&q->count_hi, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&q->count, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&q->lock);
    return t;
}

synor__task *synor__pq_pop_last(synor__pqueue *q, uint32_t kindbit)
{
    synor__task *t = NULL;
    pthread_mutex_lock(&q->lock);
    for (int l = 0; l < SYNOR__NPRIO && !t; l++) {
        synor__task *prev = NULL, *bprev = NULL;
        for (synor__task *c = q->head[l]; c; prev = c, c = c->next)
            if ((c->kinds & kindbit) && c->attempt == 0 && c->hint_dev < 0) {
                t = c;
                bprev = prev;
            }
        if (!t)
            continue;
        if (bprev)
            bprev->next = t->next;
        else
            q->head[l] = t->next;
        if (q->tail[l] == t)
            q->tail[l] = bprev;
    }
    if (t) {
        if (t->priority > 0)
            atomic_fetch_sub_explicit(&q->count_hi, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&q->count, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&q->lock);
    return t;
}

void synor__ec_init(synor__ec *ec)
{
    atomic_init(&ec->sleepers, 0);
    atomic_init(&ec->epoch, 0);
    pthread_mutex_init(&ec->lock, NULL);
    pthread_cond_init(&ec->cond, NULL);
}

void synor__ec_destroy(synor__ec *ec)
{
    pthread_mutex_destroy(&ec->lock);
    pthread_cond_destroy(&ec->cond);
}

void synor__ec_notify(synor__ec *ec, int all)
{
    if (!all && atomic_load_explicit(&ec->sleepers, memory_order_seq_cst) == 0)
        return;
    pthread_mutex_lock(&ec->lock);
    atomic_fetch_add_explicit(&ec->epoch, 1, memory_order_relaxed);
    if (all)
        pthread_cond_broadcast(&ec->cond);
    else
        pthread_cond_signal(&ec->cond);
    pthread_mutex_unlock(&ec->lock);
}
