/* pool.c - PostgreSQL's connection pool: the hot operations (claims,
 * results, failures, heartbeats) each take a connection, bound to their
 * thread while they run, and run their own transaction on it, so claims and
 * results from different agents do not wait on one connection. Each commit
 * still waits for its WAL flush (PostgreSQL flushes concurrent commits
 * together). Connections open on first use, up to npool; a connection found
 * broken after use is closed and reopened by its next user. */
#include <string.h>
#include <time.h>

#include "netstore/db.h"

extern _Thread_local synor_netstore *synor__ns_tls_store;
extern _Thread_local ns_conn *synor__ns_tls_conn;

int synor__ns_pool_get(synor_netstore *s)
{
    if (synor__ns_tls_store == s)
        return synor__error(SYNOR_ESTATE, "netstore: a pooled connection is already bound");
    pthread_mutex_lock(&s->pmu);
    while (!s->nfree)
        pthread_cond_wait(&s->pcv, &s->pmu);
    size_t i = s->pfree[--s->nfree];
    pthread_mutex_unlock(&s->pmu);
    ns_conn *c = &s->pool[i];
    if (!c->db) {
        int e = s->ops->open(s->url, &c->db);
        if (e) {
            c->db = NULL;
            pthread_mutex_lock(&s->pmu);
            s->pfree[s->nfree++] = i;
            pthread_cond_signal(&s->pcv);
            pthread_mutex_unlock(&s->pmu);
            return e;
        }
        pthread_mutex_lock(&s->pmu);
        s->nopen++;
        pthread_mutex_unlock(&s->pmu);
    }
    c->jd.n = 0;
    synor__ns_tls_store = s;
    synor__ns_tls_conn = c;
    return 0;
}

void synor__ns_pool_put(synor_netstore *s)
{
    ns_conn *c = synor__ns_tls_conn;
    synor__ns_tls_store = NULL;
    synor__ns_tls_conn = NULL;
    int dead = s->ops->alive && !s->ops->alive(c->db);
    if (dead) {
        s->ops->close(c->db);
        c->db = NULL;
    }
    pthread_mutex_lock(&s->pmu);
    if (dead)
        s->nopen--;
    s->pfree[s->nfree++] = (size_t)(c - s->pool);
    pthread_cond_signal(&s->pcv);
    pthread_mutex_unlock(&s->pmu);
}

void synor__ns_pool_close(synor_netstore *s)
{
    for (size_t i = 0; i < s->npool; i++) {
        if (s->pool[i].db)
            s->ops->close(s->pool[i].db);
        synor__free(s->pool[i].jd.v);
    }
    synor__free(s->pool);
    synor__free(s->pfree);
    s->pool = NULL;
    s->pfree = NULL;
    s->npool = s->nopen = s->nfree = 0;
}

/* The transaction's job counters into its connection's slot of each job
 * (job_counts, schema v6): no two pooled connections wait on one row. d
 * keeps the jobs that had shards validated, for synor__ns_pool_done. */
int synor__ns_pool_flush(synor_netstore *s, ns_deltas *d)
{
    static const char add[] =
        "INSERT INTO job_counts (job_id, slot, cost, done) VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (job_id, slot) DO UPDATE SET cost = job_counts.cost + excluded.cost,"
        " done = job_counts.done + excluded.done";
    int64_t slot = s->slot_base + (int64_t)(synor__ns_tls_conn - s->pool);
    size_t keep = 0;
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
        nsparam p[] = {NS_I(job), NS_I(slot), NS_I(cost), NS_I(done)};
        e = synor__ns_exec(s, add, p, 4, NULL, NULL);
        if (done)
            d->v[keep++] = (struct ns_jobdelta){job, 0, done};
    }
    d->n = e ? 0 : keep;
    return e;
}

/* After the commit: each job of d whose slots now add up to all its shards
 * is marked done (once: a second such check finds it done). A transaction
 * cannot see another's uncommitted slot, so the check runs after the
 * commit: of two results committing at once, the later check sees both. A
 * crash between the commit and this check leaves the job for the reaper
 * (synor__ns_done_sql). */
void synor__ns_pool_done(synor_netstore *s, ns_deltas *d)
{
    static const char chk[] = "WITH d AS (UPDATE jobs SET state = 'done' WHERE id = $1 AND"
                              " state IN ('queued', 'running') AND shards_left <= (SELECT"
                              " COALESCE(sum(c.done), 0) FROM job_counts c WHERE c.job_id = $1)"
                              " RETURNING id) INSERT INTO events (at, kind, subject, detail)"
                              " SELECT $2, 'job-done', 'j-' || id, '' FROM d";
    for (size_t i = 0; i < d->n; i++) {
        nsparam p[] = {NS_I(d->v[i].job), NS_I(time(NULL))};
        if (synor__ns_exec(s, chk, p, 2, NULL, NULL))
            synor__ns_rollback(s); /* the reaper will find it */
    }
    d->n = 0;
}
