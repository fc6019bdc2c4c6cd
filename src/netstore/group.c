/* group.c - group commit: the store's hot writes (claims, results,
 * failures, heartbeats) from many threads share one transaction and one
 * commit, so one fsync (SQLite, synchronous=FULL) or one WAL flush
 * (PostgreSQL) acknowledges a whole batch.
 *
 * A caller queues its operation; the first caller to find no leader becomes
 * the leader, takes the queue, and runs each operation inside a savepoint
 * of one write transaction: an operation that fails is rolled back to its
 * savepoint alone (so it changes nothing, as every store call promises)
 * while the others stay. Then one COMMIT; every caller of the batch
 * returns only after it, so nothing is acknowledged before it is durable.
 * If the commit fails, every operation of the batch fails with its error.
 * Operations queued while a batch commits form the next batch; a lone
 * operation runs without a savepoint. Error messages live in per-thread
 * slots, so the leader copies a failed operation's message into it and its
 * caller sets it again in its own thread. */
#include <stdio.h>
#include <string.h>

#include "netstore/db.h"

struct ns_op {
    int (*fn)(synor_netstore *s, void *arg);
    void *arg;
    int rc;
    int done;
    char msg[512];
    ns_op *next;
};


int synor__ns_job_delta(synor_netstore *s, int64_t job, int64_t cost, int64_t done)
{
    ns_deltas *d = synor__ns_deltas(s);
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        struct ns_jobdelta *p = synor__realloc(d->v, cap * sizeof *p);
        if (!p)
            return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
        d->v = p;
        d->cap = cap;
    }
    d->v[d->n++] = (struct ns_jobdelta){job, cost, done};
    return 0;
}

/* Applies the transaction's job counter changes, one UPDATE per job; a
 * job whose last shard is done is marked done. */
int synor__ns_flush_deltas(synor_netstore *s, ns_deltas *d)
{
    static const char upd[] = "UPDATE jobs SET cost = cost + $1, shards_left = shards_left - $2"
                              " WHERE id = $3 RETURNING shards_left";
    static const char job_done[] = "UPDATE jobs SET state = 'done' WHERE id = $1"
                                   " AND state IN ('queued', 'running')";
    if (s->npool)
        return synor__ns_pool_flush(s, d);
    int e = 0;
    for (size_t i = 0; i < d->n && !e; i++) {
        int64_t job = d->v[i].job, cost = 0, done = 0;
        if (!job)
            continue;
        for (size_t k = i; k < d->n; k++)
            if (d->v[k].job == job) {
                cost += d->v[k].cost;
                done += d->v[k].done;
                d->v[k].job = 0;
            }
        nsparam p[] = {NS_I(cost), NS_I(done), NS_I(job)};
        nsres r;
        if ((e = synor__ns_exec(s, upd, p, 3, &r, NULL)))
            break;
        int last = done && r.rows && synor__nsres_int(&r, 0, 0) == 0;
        synor__nsres_free(&r);
        if (last) {
            nsparam pj[] = {NS_I(job)};
            char subj[32];
            snprintf(subj, sizeof subj, "j-%lld", (long long)job);
            if (!(e = synor__ns_exec(s, job_done, pj, 1, NULL, NULL)))
                e = synor__ns_event(s, "job-done", subj, "");
        }
    }
    d->n = 0;
    return e;
}

/* Runs the batch in one transaction on the calling thread's connection. */
static void run_ops(synor_netstore *s, ns_op *batch)
{
    ns_deltas *d = synor__ns_deltas(s);
    d->n = 0;
    int e = synor__ns_begin(s, 1);
    int single = batch && !batch->next;
    for (ns_op *o = batch; o; o = o->next) {
        if (e) {
            o->rc = e;
            continue;
        }
        if (single) {
            o->rc = o->fn(s, o->arg);
            continue;
        }
        static const char sp[] = "SAVEPOINT g", back[] = "ROLLBACK TO SAVEPOINT g",
                          rel[] = "RELEASE SAVEPOINT g";
        size_t mark = d->n;
        int x = synor__ns_exec(s, sp, NULL, 0, NULL, NULL);
        o->rc = x ? x : o->fn(s, o->arg);
        if (!x && o->rc < 0) {
            synor__strlcpy(o->msg, synor_errmsg(), sizeof o->msg);
            d->n = mark; /* its counter changes go with it */
            x = synor__ns_exec(s, back, NULL, 0, NULL, NULL);
        }
        if (!x)
            x = synor__ns_exec(s, rel, NULL, 0, NULL, NULL);
        if (x) {
            /* the transaction is unusable: fail the rest of the batch */
            e = x;
            if (o->rc >= 0)
                o->rc = x;
        }
        if (o->rc < 0 && !o->msg[0])
            synor__strlcpy(o->msg, synor_errmsg(), sizeof o->msg);
    }
    if (single && batch->rc < 0 && !e)
        synor__strlcpy(batch->msg, synor_errmsg(), sizeof batch->msg);
    int any_ok = 0;
    for (ns_op *o = batch; o; o = o->next)
        any_ok |= o->rc >= 0;
    if (!e && (!single || batch->rc >= 0) && any_ok) {
        e = synor__ns_flush_deltas(s, d);
        if (!e)
            e = synor__ns_commit(s);
    } else if (!e) {
        synor__ns_rollback(s);
        d->n = 0;
    }
    if (e) {
        synor__ns_rollback(s);
        d->n = 0;
        for (ns_op *o = batch; o; o = o->next)
            if (o->rc >= 0 || !o->msg[0]) {
                o->rc = e;
                synor__strlcpy(o->msg, synor_errmsg(), sizeof o->msg);
            }
    }
}

static void run_batch(synor_netstore *s, ns_op *batch)
{
    if (s->npool) {
        /* PostgreSQL: a pooled connection of its own, no mu */
        int e = synor__ns_pool_get(s);
        if (e) {
            for (ns_op *o = batch; o; o = o->next) {
                o->rc = e;
                synor__strlcpy(o->msg, synor_errmsg(), sizeof o->msg);
            }
            return;
        }
        run_ops(s, batch);
        synor__ns_pool_done(s, synor__ns_deltas(s));
        synor__ns_pool_put(s);
        return;
    }
    pthread_mutex_lock(&s->mu);
    run_ops(s, batch);
    pthread_mutex_unlock(&s->mu);
}

int synor__ns_pool_tx(synor_netstore *s, int (*fn)(synor_netstore *s, void *arg), void *arg)
{
    for (int attempt = 1;; attempt++) {
        ns_op op = {.fn = fn, .arg = arg};
        run_batch(s, &op);
        /* a deadlock or serialization failure rolled it back whole: again */
        if (op.rc == SYNOR_EBUSY && attempt < 5)
            continue;
        if (op.rc < 0)
            synor__error(op.rc, "%s", op.msg);
        return op.rc;
    }
}

int synor__ns_tx(synor_netstore *s, int (*fn)(synor_netstore *s, void *arg), void *arg)
{
    if (s->npool)
        return synor__ns_pool_tx(s, fn, arg);
    ns_op op = {.fn = fn, .arg = arg};
    pthread_mutex_lock(&s->gmu);
    if (s->gtail)
        s->gtail->next = &op;
    else
        s->ghead = &op;
    s->gtail = &op;
    while (!op.done) {
        if (s->gleader) {
            pthread_cond_wait(&s->gcv, &s->gmu);
            continue;
        }
        s->gleader = 1;
        ns_op *batch = s->ghead;
        s->ghead = s->gtail = NULL;
        pthread_mutex_unlock(&s->gmu);
        run_batch(s, batch);
        pthread_mutex_lock(&s->gmu);
        for (ns_op *o = batch, *next; o; o = next) {
            next = o->next; /* o belongs to its caller once done */
            o->done = 1;
        }
        s->gleader = 0;
        pthread_cond_broadcast(&s->gcv);
    }
    pthread_mutex_unlock(&s->gmu);
    if (op.rc < 0)
        synor__error(op.rc, "%s", op.msg);
    return op.rc;
}

int synor__ns_tx_many(synor_netstore *s, int (*fn)(synor_netstore *s, void *arg), void *const *args,
                      size_t n, int *rc, char (*msg)[256])
{
    ns_op *ops = synor__calloc(n ? n : 1, sizeof *ops);
    if (!ops)
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    for (size_t i = 0; i < n; i++) {
        ops[i].fn = fn;
        ops[i].arg = args[i];
        ops[i].next = i + 1 < n ? &ops[i + 1] : NULL;
    }
    if (s->npool) {
        /* PostgreSQL: one transaction of their own on a pooled connection */
        if (n)
            run_batch(s, &ops[0]);
        goto out;
    }
    pthread_mutex_lock(&s->gmu);
    /* queued together, so one leader takes them all into one batch */
    if (n) {
        if (s->gtail)
            s->gtail->next = &ops[0];
        else
            s->ghead = &ops[0];
        s->gtail = &ops[n - 1];
    }
    while (n && !ops[n - 1].done) {
        if (s->gleader) {
            pthread_cond_wait(&s->gcv, &s->gmu);
            continue;
        }
        s->gleader = 1;
        ns_op *batch = s->ghead;
        s->ghead = s->gtail = NULL;
        pthread_mutex_unlock(&s->gmu);
        run_batch(s, batch);
        pthread_mutex_lock(&s->gmu);
        for (ns_op *o = batch, *next; o; o = next) {
            next = o->next;
            o->done = 1;
        }
        s->gleader = 0;
        pthread_cond_broadcast(&s->gcv);
    }
    pthread_mutex_unlock(&s->gmu);
out:
    for (size_t i = 0; i < n; i++) {
        rc[i] = ops[i].rc;
        synor__strlcpy(msg[i], ops[i].rc < 0 ? ops[i].msg : "", sizeof msg[i]);
    }
    synor__free(ops);
    return 0;
}
