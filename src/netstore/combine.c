/* combine.c - PostgreSQL's combiners: concurrent claims (or results) of
 * one coordinator queue, and the first caller that finds fewer than
 * s->ncalls batches running (opts.calls; default half the cores, >= 2) takes the queue's head and runs it
 * as one call of a server-side function: one statement, one transaction,
 * one WAL flush for all of them. Requests that queue while a batch runs
 * form the next one, so batches grow with the load and a lone request
 * goes at once (it waits for nothing). Each caller returns only once its
 * request is done, so nothing is acknowledged before its commit. */
#include "netstore/db.h"

void synor__ns_combine(synor_netstore *s, ns_comb *c, ns_creq *r, size_t cap,
                       void (*run)(synor_netstore *s, ns_creq *batch))
{
    r->next = NULL;
    r->done = 0;
    pthread_mutex_lock(&s->cmu);
    if (c->tail)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
    while (!r->done) {
        if (c->leaders >= s->ncalls || !c->head) {
            pthread_cond_wait(&s->ccv, &s->cmu);
            continue;
        }
        /* the head's requests up to cap (at least one) */
        ns_creq *batch = c->head, *last = batch;
        size_t w = batch->weight;
        while (last->next && w + last->next->weight <= cap) {
            last = last->next;
            w += last->weight;
        }
        c->head = last->next;
        if (!c->head)
            c->tail = NULL;
        last->next = NULL;
        c->leaders++;
        pthread_mutex_unlock(&s->cmu);
        run(s, batch);
        pthread_mutex_lock(&s->cmu);
        for (ns_creq *o = batch, *next; o; o = next) {
            next = o->next; /* o belongs to its caller once done */
            o->done = 1;
        }
        c->leaders--;
        pthread_cond_broadcast(&s->ccv);
    }
    pthread_mutex_unlock(&s->cmu);
}
