/* synor/netstore.h - the compute network coordinator's durable state: tokens
 * (stored as SHA-256), providers' devices (capabilities, availability,
 * reputation, last heartbeat), jobs, their shards and tasks (one per shard
 * replica), leases, results and input data (content-addressed blobs), the
 * reward ledger (one entry per validated task, never two) and an event log.
 *
 * Backends: SQLite (default: one file, WAL, synchronous=FULL, a busy
 * timeout) or PostgreSQL through libpq ("postgresql://..." URLs). Both use
 * the same schema, versioned (table schema_version) and migrated step by
 * step when opened. Every call that changes state commits before it
 * returns, so what a caller acknowledges survives a crash of the process.
 *
 * Dispatch: a claim takes the oldest queued task that this provider has no
 * other replica of, in one transaction (PostgreSQL: SELECT ... FOR UPDATE
 * SKIP LOCKED, so several coordinators may share one database). A result
 * is accepted when a strict majority of the shard's replicas agree
 * (float32 outputs element-wise within 1e-4 relative, others bytewise);
 * agreeing devices gain reputation (+1, up to 100) and earn, the others
 * lose 5 and earn nothing. A shard with a known answer (a spot check) is
 * judged against it alone (a wrong answer costs 10). Leases not renewed by
 * a heartbeat within the lease timeout expire: the task is queued again
 * and the device loses 1.
 *
 * Money is int64 micro-credits. A validated task costs its job the task
 * price; its device earns price x reputation multiplier / 2 (the rewards
 * policy's multiplier, 0.5x..2x: at most the price). A job is refused when
 * shards x replicas x price exceeds its budget, so it never costs more.
 *
 * Ids are int64 (the HTTP API writes them "dev-12", "t-55", "j-3").
 * Ownership: calls taking an owner act only on that owner's objects and
 * answer SYNOR_ENOENT for another's (never revealing it exists).
 *
 * Thread safety: a store may be used from any number of threads (calls are
 * serialized on one connection). Errors: 0 or a negative SYNOR_E* with
 * synor_errmsg() naming the object and value. */
#ifndef SYNOR_NETSTORE_H
#define SYNOR_NETSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "synor/rewards.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The newest schema version this library writes. */
#define SYNOR_NETSTORE_SCHEMA_VERSION 8

typedef struct synor_netstore synor_netstore;

typedef struct synor_netstore_opts {
    /* A path (SQLite file, created if missing), "sqlite:PATH", or a
     * "postgresql://" / "postgres://" URL. Required. */
    const char *url;
    double lease_timeout_s;   /* heartbeat timeout; 0: 15 */
    int64_t task_price;       /* micro-credits per validated task; 0: 10,000 */
    unsigned min_replicas;    /* replicas every shard gets at least; 0: 1 */
    unsigned max_attempts;    /* a task failed this often fails its shard; 0: 5 */
    double spot_rate;         /* share of claims given a known-answer task (0..1) */
    const synor_rewards_policy *policy; /* NULL: the built-in policy */
    /* PostgreSQL: connections for claims, results, failures and heartbeats
     * running in parallel, opened as needed; 0: 16 */
    unsigned pool;
    /* PostgreSQL: combined calls of claims (and, apart, of results) one
     * store runs at once (docs/NETWORK.md, "Scaling by coordinators");
     * 0: half the machine's online cores, at least 2; at most the pool's
     * size. More lets one coordinator use more cores; fewer batches more
     * requests per call. */
    unsigned calls;
} synor_netstore_opts;

int synor_netstore_open(const synor_netstore_opts *o, synor_netstore **out);
void synor_netstore_close(synor_netstore *s);
/* "sqlite" or "postgresql". */
const char *synor_netstore_backend(const synor_netstore *s);
int synor_netstore_schema_version(synor_netstore *s, int *out);
/* Test hook: deletes every row of every table (keeps the schema). */
int synor_netstore_wipe(synor_netstore *s);

/* ---------------------------------------------------------------- tokens */
typedef enum synor_net_role {
    SYNOR_NET_OPERATOR = 1,
    SYNOR_NET_CONSUMER = 2,
    SYNOR_NET_PROVIDER = 3
} synor_net_role;

/* "operator", "consumer", "provider"; 0 when name is none of them. */
const char *synor_net_role_name(synor_net_role r);
synor_net_role synor_net_role_parse(const char *name);

typedef struct synor_net_principal {
    int64_t token_id;
    synor_net_role role;
    char owner[64];
} synor_net_principal;

#define SYNOR_NET_TOKEN_LEN 68 /* "syn_" + 64 hex */

/* A new token ("syn_" + 64 hex from getrandom) into token (69 bytes); only
 * its SHA-256 is stored. owner: 1..63 of [A-Za-z0-9._@-]. */
int synor_netstore_token_create(synor_netstore *s, synor_net_role role, const char *owner,
                                char token[SYNOR_NET_TOKEN_LEN + 1], int64_t *id);
/* Who holds token: SYNOR_ENOENT when unknown or revoked. */
int synor_netstore_token_auth(synor_netstore *s, const char *token, synor_net_principal *out);
int synor_netstore_token_revoke(synor_netstore *s, int64_t id);
/* Whether a live operator token exists. */
int synor_netstore_has_operator(synor_netstore *s, int *out);
/* {"tokens":[{"id","role","owner","revoked"}]}; free with synor__free/free. */
int synor_netstore_tokens_json(synor_netstore *s, char **json);

/* --------------------------------------------------------------- devices */
typedef struct synor_net_device {
    const char *name, *kind, *profile, *availability; /* profile may be NULL */
    double gflops;
    int64_t mem_bytes;
    int64_t price; /* micro-credits per hour; 0 if not given */
} synor_net_device;

/* Registers (or updates, by owner and name) a device; its id. */
int synor_netstore_device_register(synor_netstore *s, const char *owner,
                                   const synor_net_device *d, int64_t *id);
/* A heartbeat for the owner's devices: marks them seen, accepting or not,
 * and renews the owner's leases on them. *leases_json: a JSON array
 * [{"task","lease","expires_in"}]. A device not the owner's: SYNOR_ENOENT. */
int synor_netstore_heartbeat(synor_netstore *s, const char *owner, const int64_t *devices,
                             size_t n, int accepting, char **leases_json);
/* Every device (owner NULL) or the owner's, as {"devices":[...]}, with
 * "online" true when seen within the lease timeout. */
int synor_netstore_devices_json(synor_netstore *s, const char *owner, char **json);
/* A device's reputation (0..100). */
int synor_netstore_device_reputation(synor_netstore *s, int64_t id, int *out);

/* ----------------------------------------------------------------- blobs */
/* Stores bytes under their SHA-256 (idempotent) and records owner as one
 * of its owners. */
int synor_netstore_blob_put(synor_netstore *s, const char *owner, const void *data, size_t n,
                            char sha[65]);
/* A blob's bytes (caller frees *data) if who may read it: an operator; a
 * consumer who stored it or whose job produced it; a provider holding a
 * lease on a task that reads it. Otherwise, or unknown: SYNOR_ENOENT. */
int synor_netstore_blob_get(synor_netstore *s, const synor_net_principal *who, const char *sha,
                            void **data, size_t *n);

/* ------------------------------------------------------------------ jobs */
typedef struct synor_net_shard_spec {
    const char *params_json;   /* "{...}" or NULL */
    const char *const *inputs; /* SHA-256 hex of stored blobs */
    size_t n_inputs;
    const char *expect;        /* a known answer's SHA-256 (operator spot checks) or NULL */
    /* staged jobs: the stage (0 first), the stage's kernel (NULL: the
     * job's) and, per input, -1 for the blob inputs[k] or the index in the
     * job's shards[] of an earlier stage's shard whose validated result is
     * input k (from NULL: every input is a blob) */
    unsigned stage;
    const char *kernel;
    const long *from;
} synor_net_shard_spec;

typedef struct synor_net_job_spec {
    const char *name, *kernel;
    const char *params_json; /* "{...}" */
    const synor_net_shard_spec *shards;
    size_t n_shards;
    unsigned replicas;  /* 1..5 */
    double deadline_s;  /* 0: none */
    int64_t budget;     /* micro-credits */
    const char *ref;    /* idempotency key or NULL */
} synor_net_job_spec;

/* Queues a job: shards x max(replicas, min_replicas) tasks. Every input
 * must be a blob the owner stored (else SYNOR_ENOENT naming it); a budget
 * below the tasks' price SYNOR_ERANGE. The same ref again returns the
 * first job's id (*existing = 1), changing nothing. A staged job's tasks
 * that read earlier stages' results wait (state 'waiting') until those
 * are validated, then are queued in the same commit; its result is its
 * last stage's shards in order. */
int synor_netstore_job_submit(synor_netstore *s, const char *owner, const synor_net_job_spec *j,
                              int64_t *job_id, int64_t *n_tasks, int *existing);
/* A job's status (protocol "GET /v1/jobs/{id}"); owner NULL: any job. */
int synor_netstore_job_json(synor_netstore *s, const char *owner, int64_t job_id, char **json);
/* {"jobs":[...]} of the owner (NULL: all). */
int synor_netstore_jobs_json(synor_netstore *s, const char *owner, char **json);
/* The shards' results concatenated in shard order; SYNOR_ESTATE before the
 * job is done. */
int synor_netstore_job_result(synor_netstore *s, const char *owner, int64_t job_id, void **data,
                              size_t *n);
/* Cancels a job that is not finished: its queued and leased tasks too.
 * Finished already: SYNOR_ESTATE. */
int synor_netstore_job_cancel(synor_netstore *s, const char *owner, int64_t job_id);

/* -------------------------------------------------------------- dispatch */
typedef struct synor_net_claim {
    int64_t task, job;
    char lease[34];     /* "L" + 32 hex */
    char kernel[32];
    char *params_json;  /* the job's params merged with the shard's: {"job":{},"shard":{}} */
    char *inputs_json;  /* [{"sha256","bytes"}] */
    double expires_in;
    /* The checkpoint a provider left when it released the task
     * (synor_netstore_release): {"sha256","bytes"}, or NULL for none. */
    char *checkpoint_json;
} synor_net_claim;

/* Leases the next task to the owner's device: 0 with *claim filled, 1 when
 * there is none (or the device is not accepting work), SYNOR_ENOENT when the
 * device is not the owner's. Free with synor_net_claim_free. */
int synor_netstore_claim(synor_netstore *s, const char *owner, int64_t device,
                         synor_net_claim *claim);
/* The most tasks one claim_many takes, and the most items of one results. */
#define SYNOR_NET_CLAIM_MAX 256
#define SYNOR_NET_RESULTS_MAX 256
/* Leases up to max (1 to SYNOR_NET_CLAIM_MAX) tasks to the owner's device in
 * one transaction: 0 with claims[0..*n) filled (*n >= 1), 1 when there is
 * none, errors as synor_netstore_claim. Free each with synor_net_claim_free. */
int synor_netstore_claim_many(synor_netstore *s, const char *owner, int64_t device, size_t max,
                              synor_net_claim *claims, size_t *n);
void synor_net_claim_free(synor_net_claim *c);

typedef enum synor_net_verdict {
    SYNOR_NET_PENDING = 0,   /* waiting for other replicas */
    SYNOR_NET_VALIDATED = 1, /* agrees with the majority (or the known answer) */
    SYNOR_NET_REJECTED = 2   /* disagrees */
} synor_net_verdict;
const char *synor_net_verdict_name(synor_net_verdict v); /* "pending-quorum", ... */

/* A task's result from the provider holding lease: its checksum is
 * checked (sha256 hex; SYNOR_EINVAL when the bytes differ); a lease that is
 * not the owner's, expired or ended is SYNOR_ESTATE and changes nothing. */
int synor_netstore_result(synor_netstore *s, const char *owner, int64_t task, const char *lease,
                          const void *data, size_t n, const char *sha256, int64_t elapsed_ms,
                          synor_net_verdict *verdict);
/* One item of synor_netstore_results: the inputs of synor_netstore_result,
 * and its outcome (rc 0 with verdict, or a negative SYNOR_E* with error). */
typedef struct synor_net_result_item {
    int64_t task;
    const char *lease;
    const void *data;
    size_t n;
    const char *sha256;
    int64_t elapsed_ms;
    int rc;
    synor_net_verdict verdict;
    char error[256];
} synor_net_result_item;
/* Several results of one provider (at most SYNOR_NET_RESULTS_MAX), each
 * checked and applied as synor_netstore_result does, all sharing one commit
 * (returns after it). Items are independent: one refused (checksum, lease)
 * changes nothing and the others still apply. Returns 0 when the items were
 * tried (each one's rc says how it went), SYNOR_EINVAL for too many. */
int synor_netstore_results(synor_netstore *s, const char *owner, synor_net_result_item *items,
                           size_t n);
/* The provider gives a task up (error text kept in the event log): it is
 * queued again, or its shard fails after max_attempts. */
int synor_netstore_fail(synor_netstore *s, const char *owner, int64_t task, const char *lease,
                        const char *error);
/* The provider holding lease gives the task back because its owner
 * reclaimed the machine (preemption): the task is queued again at once,
 * with no reputation lost and nothing paid to this provider, and does not
 * count as a failed attempt. ckpt (n bytes, may be NULL/0) is the work
 * done so far, sha256 its SHA-256 hex: stored as a blob and handed to the
 * next claimant (synor_net_claim.checkpoint_json), who may read it. A
 * checkpoint whose bytes do not match sha256 is ignored (an event
 * "checkpoint-ignored" is logged; the task keeps the checkpoint it had, if
 * any) and *stored is 0; 1 when it was stored. A lease that is not the
 * owner's, expired or ended: SYNOR_ESTATE, nothing changes. */
int synor_netstore_release(synor_netstore *s, const char *owner, int64_t task, const char *lease,
                           const void *ckpt, size_t n, const char *sha256, int *stored);
/* Expires leases whose holder stopped heartbeating and jobs past their
 * deadline; the number of leases expired into *n (may be NULL). */
int synor_netstore_reap(synor_netstore *s, int *n);

/* ------------------------------------------------------------- money */
/* {"owner","balance","entries":[{"task","job","device","amount"}]} */
int synor_netstore_earnings_json(synor_netstore *s, const char *owner, char **json);
/* {"entries":[...],"total":"..."}: every ledger entry. */
int synor_netstore_ledger_json(synor_netstore *s, char **json);

/* ------------------------------------------------------------- figures */
typedef struct synor_netstore_stats {
    int64_t devices, devices_online;
    int64_t tasks_queued, tasks_leased, tasks_done, tasks_valid, tasks_invalid, tasks_failed,
        tasks_cancelled;
    int64_t tasks_waiting; /* staged: their inputs not all validated yet */
    int64_t jobs_active, jobs_done;
    int64_t ledger_entries, ledger_total;
} synor_netstore_stats;
int synor_netstore_stats_get(synor_netstore *s, synor_netstore_stats *out);
/* The last n events, newest first, as {"events":[{"id","ts","kind","subject","detail"}]}. */
int synor_netstore_events_json(synor_netstore *s, int n, char **json);

#ifdef __cplusplus
}
#endif
#endif
