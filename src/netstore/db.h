/* db.h - the netstore's database backends behind one small table of
 * functions (SQLite, PostgreSQL), and the helpers the store's files share.
 *
 * SQL is written once, with $1-style placeholders (SQLite takes them as
 * named parameters, libpq as positional ones), ON CONFLICT and RETURNING,
 * which both engines have. The few differences are spelled as macros the
 * backend substitutes before preparing: %ID% (an auto-increment primary
 * key), %BLOB% (a byte string column), %SKIP% (the claim's row lock:
 * "FOR UPDATE SKIP LOCKED" on PostgreSQL, nothing on SQLite, where the
 * write transaction is the lock) and %LOCK% ("FOR UPDATE": a row read to
 * decide on, such as a shard's, held until commit; %LOCK_S% locks only
 * the rows of the table aliased s in a join). Results come back as text cells
 * (integers as decimal text, blobs as bytes), so callers read both engines
 * the same way. Never installed. */
#ifndef SYNOR_NETSTORE_DB_H
#define SYNOR_NETSTORE_DB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/common.h"
#include "synor/netstore.h"

/* A statement parameter: an integer, a text (NUL-terminated) or bytes;
 * kind 'n' is NULL. */
typedef struct nsparam {
    char kind; /* 'i', 't', 'b', 'n' */
    int64_t i;
    const char *s;
    const void *b;
    size_t n;
} nsparam;

#define NS_I(x) ((nsparam){.kind = 'i', .i = (int64_t)(x)})
static inline nsparam synor__ns_text(const char *x)
{
    return (nsparam){.kind = x ? 't' : 'n', .s = x};
}
#define NS_T(x) synor__ns_text(x)
#define NS_B(p, len) ((nsparam){.kind = 'b', .b = (p), .n = (len)})

/* One result cell: NULL, or len bytes at p (NUL-terminated as well). */
typedef struct nscell {
    char *p;
    size_t len;
    int null;
} nscell;

/* A whole result, rows x cols cells. */
typedef struct nsres {
    size_t rows, cols;
    nscell *cells;
} nsres;

void synor__nsres_free(nsres *r);
const char *synor__nsres_text(const nsres *r, size_t row, size_t col); /* "" for NULL */
int64_t synor__nsres_int(const nsres *r, size_t row, size_t col);     /* 0 for NULL */
int synor__nsres_null(const nsres *r, size_t row, size_t col);
const nscell *synor__nsres_cell(const nsres *r, size_t row, size_t col);

typedef struct nsdb nsdb;

/* A backend. Every call returns 0 or a negative SYNOR_E* with the message
 * set; SYNOR_EEXIST when a UNIQUE constraint refused the statement. */
typedef struct nsdb_ops {
    const char *name;
    int (*open)(const char *url, nsdb **out);
    void (*close)(nsdb *db);
    /* write: the transaction will write (SQLite: BEGIN IMMEDIATE). */
    int (*begin)(nsdb *db, int write);
    int (*commit)(nsdb *db);
    void (*rollback)(nsdb *db);
    /* Runs sql (static storage: backends may cache its prepared form by
     * address) with params; rows into *res when res is not NULL; the
     * number of rows changed into *changes when not NULL. */
    int (*exec)(nsdb *db, const char *sql, const nsparam *p, int np, nsres *res,
                int64_t *changes);
    /* Runs several statements without parameters (migrations). */
    int (*script)(nsdb *db, const char *sql);
    /* Whether the connection still works (NULL: always). */
    int (*alive)(nsdb *db);
} nsdb_ops;

extern const nsdb_ops synor__nsdb_sqlite;
/* NULL in a build without libpq. */
extern const nsdb_ops *const synor__nsdb_pg;

/* sql with %ID%, %BLOB%, %SKIP% and %LOCK% replaced for a backend ("sqlite" or
 * "postgresql"); a fresh string or NULL. */
char *synor__nsdb_dialect(const char *sql, int pg);

typedef struct ns_op ns_op;

/* A transaction's job counter changes (group.c), applied at its commit. */
struct ns_jobdelta {
    int64_t job, cost, done;
};
typedef struct ns_deltas {
    struct ns_jobdelta *v;
    size_t n, cap;
} ns_deltas;

/* A request to a combiner (combine.c): the first member of a caller's
 * request; weight its size (tasks, items); rc and msg its outcome. */
typedef struct ns_creq {
    struct ns_creq *next;
    size_t weight;
    int done, rc;
    char msg[256];
} ns_creq;

/* A combiner (PostgreSQL): concurrent requests of one kind queue, and a
 * caller that finds fewer than the store's ncalls batches running takes
 * the queue's head (up to a weight cap) and runs it as one statement, one
 * transaction and one WAL flush for all of them (docs/NETWORK.md). */
typedef struct ns_comb {
    ns_creq *head, *tail;
    int leaders;
} ns_comb;
#define NS_COMBINE_LEADERS 2 /* the least ncalls when the options give none */

/* A pooled connection (PostgreSQL) and its transaction's counters. */
typedef struct ns_conn {
    nsdb *db;
    ns_deltas jd;
} ns_conn;

/* The store. Every public call takes mu, so one connection serves the
 * process's writes (batched by group commit, group.c); token lookups, the
 * hottest read, use a second connection (rdb, under rmu) so they never wait
 * behind a commit. On PostgreSQL the hot operations (claims, results,
 * failures, heartbeats) instead each take a connection of a small pool
 * (pool.c) and run their own transaction, in parallel: PostgreSQL
 * group-commits its WAL itself, and they lock only the rows they touch, as
 * several coordinators' do. Several coordinators scale over one PostgreSQL
 * database. */
struct synor_netstore {
    const nsdb_ops *ops;
    nsdb *db;
    nsdb *rdb;
    pthread_mutex_t rmu;
    /* group commit (group.c), under gmu */
    pthread_mutex_t gmu;
    pthread_cond_t gcv;
    ns_op *ghead, *gtail;
    int gleader;
    int pg;
    pthread_mutex_t mu;
    synor_netstore_opts o;
    const synor_rewards_policy *policy;
    synor_rewards_policy *own_policy;
    uint64_t rng; /* spot-check draws, under mu */
    /* under mu: the job counters' changes of the transaction (group.c) */
    ns_deltas jd;
    /* PostgreSQL's connection pool (pool.c): npool slots, nopen opened,
     * the free ones' indexes in pfree[0..nfree), all under pmu; pmu also
     * guards rng outside mu */
    ns_conn *pool;
    size_t npool, nopen, nfree;
    size_t *pfree;
    char *url;
    int64_t slot_base; /* this store's first job_counts slot */
    pthread_mutex_t pmu;
    pthread_cond_t pcv;
    /* the combiners of claims and of results (combine.c), under cmu */
    pthread_mutex_t cmu;
    pthread_cond_t ccv;
    ns_comb cclaims, cresults;
    int ncalls; /* batches of one kind running at once (opts.calls) */
};

/* combine.c: queues r on c and returns once it is done (r->rc set), run
 * by this caller or another: run(s, batch, arg) takes a list of requests
 * whose weights add up to at most cap (or one heavier request) and sets
 * each one's rc (its msg for a failure). */
void synor__ns_combine(synor_netstore *s, ns_comb *c, ns_creq *r, size_t cap,
                       void (*run)(synor_netstore *s, ns_creq *batch));
/* results_pg.c: runs the SQL script made of parts (NULL-terminated)
 * joined, as one script (a server-side function's definition). */
int synor__ns_pg_script(synor_netstore *s, const char *const *parts);
/* results_pg.c: an element of a PostgreSQL array literal: NULL, or v
 * quoted. */
void synor__ns_pg_quoted(synor__buf *b, const char *v);
/* claims_pg.c: creates (or replaces) synor_claims. */
int synor__ns_pg_claims_fn(synor_netstore *s);
/* claims_pg.c: up to max tasks for the owner's device, combined with
 * other callers' claims into one call of synor_claims: as
 * synor_netstore_claim_many (0, 1 when none, or an error), or 2 when
 * the combined call failed as a whole (the caller then takes the path of
 * a transaction of its own). */
int synor__ns_claim_pg(synor_netstore *s, const char *owner, int64_t device, size_t max,
                       synor_net_claim *c, size_t *n);
/* batch.c: the claims of one lease from a claim's rows (see there). */
int synor__ns_claims_fill(synor_netstore *s, const nsres *r, const nsres *in, size_t off,
                          const char *lease, size_t max, synor_net_claim *c, size_t *n);

/* The connection the calling thread's transaction uses: a pooled one while
 * it runs a pooled operation, else db. */
nsdb *synor__ns_db(synor_netstore *s);
/* The job counter changes of the calling thread's transaction. */
ns_deltas *synor__ns_deltas(synor_netstore *s);
/* pool.c: runs fn(s, arg) in a transaction of its own on a pooled
 * connection (retried when PostgreSQL reports a deadlock or a
 * serialization failure); as synor__ns_tx. */
int synor__ns_pool_tx(synor_netstore *s, int (*fn)(synor_netstore *s, void *arg), void *arg);
/* pool.c: takes a pooled connection and binds it to the calling thread
 * (synor__ns_exec and the others use it) until synor__ns_pool_put. */
int synor__ns_pool_get(synor_netstore *s);
void synor__ns_pool_put(synor_netstore *s);
/* pool.c: closes the pool's connections. */
void synor__ns_pool_close(synor_netstore *s);
/* group.c: applies the deltas (one UPDATE per job), inside the caller's
 * transaction; empties them. */
int synor__ns_flush_deltas(synor_netstore *s, ns_deltas *d);
/* pool.c: the deltas into the pooled connection's slots (job_counts);
 * after the commit, synor__ns_pool_done marks the jobs finished by it. */
int synor__ns_pool_flush(synor_netstore *s, ns_deltas *d);
void synor__ns_pool_done(synor_netstore *s, ns_deltas *d);
/* A random 64-bit number (spot-check draws). */
uint64_t synor__ns_rand(synor_netstore *s);

/* Monotonic milliseconds (leases, heartbeats). */
int64_t synor__ns_now_ms(void);
/* SHA-256 of data as 64 lowercase hex digits. */
void synor__ns_sha256_hex(const void *data, size_t n, char out[65]);
/* n random bytes from getrandom as 2n hex digits (+ NUL) into out. */
int synor__ns_random_hex(size_t n, char *out);

/* Convenience: exec with the store's backend. */
int synor__ns_exec(synor_netstore *s, const char *sql, const nsparam *p, int np, nsres *res,
                   int64_t *changes);
int synor__ns_begin(synor_netstore *s, int write);
int synor__ns_commit(synor_netstore *s);
void synor__ns_rollback(synor_netstore *s);
/* Appends an event (inside the caller's transaction). */
int synor__ns_event(synor_netstore *s, const char *kind, const char *subject, const char *detail);

/* group.c: runs fn(s, arg) in a write transaction shared with other
 * threads' operations (group commit); returns fn's result (>= 0) once the
 * transaction is committed, or a negative code: fn failed (its changes
 * rolled back alone) or the commit did. fn runs with mu held, possibly in
 * another thread: it must not take mu, begin or commit. */
int synor__ns_tx(synor_netstore *s, int (*fn)(synor_netstore *s, void *arg), void *arg);

/* group.c: n operations fn(s, args[i]) queued together, so they share one
 * batch and its commit; each one's result into rc[i] (its error message
 * into msg[i]): a failed one is rolled back alone. Returns 0, or a negative
 * code when nothing could be queued. */
int synor__ns_tx_many(synor_netstore *s, int (*fn)(synor_netstore *s, void *arg), void *const *args,
                      size_t n, int *rc, char (*msg)[256]);

/* group.c: a job's cost grows by cost and done shards by done, applied to
 * its row once per transaction, just before the commit (so a batch of
 * results updates a job's row once, not once per result, and a second
 * coordinator waits on it only while committing); the job is marked done
 * there when its last shard is. Undone with the operation that made it. */
int synor__ns_job_delta(synor_netstore *s, int64_t job, int64_t cost, int64_t done);

/* migrate.c: brings the schema to the newest version. */
int synor__ns_migrate(synor_netstore *s);

/* quorum.c: a task of shard_id finished (state 'done'); decides the shard.
 * *verdict: 0 pending, 1 this task validated, -1 this task rejected. Runs
 * inside the caller's write transaction. */
int synor__ns_quorum(synor_netstore *s, int64_t shard_id, int64_t task_id, int *verdict);

/* dispatch.c: a parsed JSON value written back as compact text (fresh, or
 * NULL when out of memory); the coordinator stores request fields so. */
struct synor__jval;
char *synor__ns_json_text(const struct synor__jval *v);

/* dispatch.c: whether a device with this availability ("always", "idle",
 * "utc:H1-H2", H2 exclusive, wrapping midnight when H1 > H2) takes work at
 * unix time now. */
int synor__ns_available_now(const char *availability, time_t now);

/* dispatch.c: the job's params with the shard's members over them (a
 * fresh string or NULL). */
char *synor__ns_merge_params(const char *job, const char *shard);

/* dispatch.c: one result (synor_netstore_result's work) as a group-commit
 * operation on a result_args. */
typedef struct result_args {
    const char *owner;
    int64_t task;
    const char *lease;
    const void *data;
    size_t n;
    const char *sha;
    int64_t elapsed_ms;
    synor_net_verdict *verdict;
} result_args;
int synor__ns_result_op(synor_netstore *s, void *arg);

/* results_pg.c: creates (or replaces) the server-side functions. */
int synor__ns_pg_functions(synor_netstore *s);
/* results_pg.c: the m results a[] in one call of synor_results on a pooled
 * connection, its own transaction: rc[k] and msg[k] each item's outcome,
 * its verdict set; redo[k] set for the items it left untouched for the C
 * path (synor__ns_result_op). A negative code: nothing was done. */
int synor__ns_results_pg(synor_netstore *s, const char *owner, result_args *a, size_t m,
                         int *rc, char (*msg)[256], int *redo);

/* batch.c: leases up to max tasks to the device in a few statements
 * (inside the caller's transaction, the device checked): 0 with c[0..*n)
 * filled, sharing one lease; 1 when there is none. */
int synor__ns_take_many(synor_netstore *s, const char *owner, int64_t device, int64_t now,
                        size_t max, synor_net_claim *c, size_t *n);

/* dispatch.c: the task's row if owner holds lease on it, unexpired (its
 * shard, job and attempts); SYNOR_ESTATE otherwise. */
int synor__ns_check_lease(synor_netstore *s, const char *owner, int64_t task, const char *lease,
                          int64_t *shard, int64_t *job, int64_t *attempts);
/* release.c: {"sha256","bytes"} from the row's columns col (the
 * checkpoint's sha, NULL for none) and col + 1 (its bytes) into *out
 * (NULL when none); SYNOR_ENOMEM. */
int synor__ns_checkpoint_json(const nsres *r, size_t row, size_t col, char **out);

/* dispatch.c: fails a shard and its job (their live tasks cancelled),
 * inside the caller's write transaction. */
int synor__ns_fail_job(synor_netstore *s, int64_t shard, int64_t job, const char *why);

#endif
