/* migrate.c - the netstore's schema and its migrations. schema_version
 * holds one row, the version the database is at; migration N -> N+1 is a
 * list of SQL statements run in one transaction with the version bump, so
 * a crash leaves the database at N or at N+1. A database newer than this
 * library is refused (an older coordinator must not write to it).
 *
 * Times: *_ms columns are the coordinator's monotonic milliseconds (leases,
 * heartbeats); *_at columns are unix seconds (display, deadlines). Money is
 * int64 micro-credits. */
#include <stdio.h>
#include <string.h>

#include "netstore/db.h"

/* version 1: the network's core state */
static const char v1[] =
    "CREATE TABLE tokens (id %ID%, hash TEXT NOT NULL UNIQUE, role INTEGER NOT NULL,"
    " owner TEXT NOT NULL, revoked INTEGER NOT NULL DEFAULT 0, created_at BIGINT NOT NULL);"
    "CREATE TABLE devices (id %ID%, owner TEXT NOT NULL, name TEXT NOT NULL,"
    " kind TEXT NOT NULL, profile TEXT, gflops DOUBLE PRECISION NOT NULL DEFAULT 0,"
    " mem_bytes BIGINT NOT NULL DEFAULT 0, availability TEXT NOT NULL DEFAULT 'always',"
    " price BIGINT NOT NULL DEFAULT 0, reputation INTEGER NOT NULL DEFAULT 50,"
    " last_seen_ms BIGINT NOT NULL DEFAULT 0, created_at BIGINT NOT NULL,"
    " UNIQUE (owner, name));"
    "CREATE TABLE blobs (sha TEXT PRIMARY KEY, bytes BIGINT NOT NULL, data %BLOB% NOT NULL);"
    "CREATE TABLE blob_owners (sha TEXT NOT NULL, owner TEXT NOT NULL, PRIMARY KEY (sha, owner));"
    "CREATE TABLE jobs (id %ID%, owner TEXT NOT NULL, name TEXT NOT NULL, kernel TEXT NOT NULL,"
    " params TEXT NOT NULL, replicas INTEGER NOT NULL, deadline_at BIGINT NOT NULL DEFAULT 0,"
    " budget BIGINT NOT NULL, cost BIGINT NOT NULL DEFAULT 0, ref TEXT,"
    " state TEXT NOT NULL, spot INTEGER NOT NULL DEFAULT 0, created_at BIGINT NOT NULL,"
    " UNIQUE (owner, ref));"
    "CREATE TABLE shards (id %ID%, job_id BIGINT NOT NULL REFERENCES jobs(id), idx INTEGER NOT NULL,"
    " params TEXT, state TEXT NOT NULL, result_sha TEXT, expect TEXT, tasks INTEGER NOT NULL,"
    " UNIQUE (job_id, idx));"
    "CREATE TABLE shard_inputs (shard_id BIGINT NOT NULL REFERENCES shards(id),"
    " pos INTEGER NOT NULL, sha TEXT NOT NULL, PRIMARY KEY (shard_id, pos));"
    "CREATE INDEX shard_inputs_sha ON shard_inputs (sha);"
    "CREATE TABLE tasks (id %ID%, job_id BIGINT NOT NULL REFERENCES jobs(id),"
    " shard_id BIGINT NOT NULL REFERENCES shards(id), state TEXT NOT NULL,"
    " device_id BIGINT, provider TEXT, lease TEXT, lease_expires_ms BIGINT NOT NULL DEFAULT 0,"
    " attempts INTEGER NOT NULL DEFAULT 0, result_sha TEXT, elapsed_ms BIGINT,"
    " finished_at BIGINT);"
    "CREATE INDEX tasks_state ON tasks (state, id);"
    "CREATE INDEX tasks_shard ON tasks (shard_id);"
    "CREATE INDEX tasks_job ON tasks (job_id);"
    "CREATE INDEX tasks_provider ON tasks (provider, state);"
    "CREATE TABLE ledger (id %ID%, task_id BIGINT NOT NULL UNIQUE REFERENCES tasks(id),"
    " job_id BIGINT NOT NULL, provider TEXT NOT NULL, device_id BIGINT NOT NULL,"
    " amount BIGINT NOT NULL, created_at BIGINT NOT NULL);"
    "CREATE INDEX ledger_provider ON ledger (provider);";

/* version 2: the event log, and whether a device takes new work */
static const char v2[] =
    "CREATE TABLE events (id %ID%, at BIGINT NOT NULL, kind TEXT NOT NULL,"
    " subject TEXT NOT NULL, detail TEXT NOT NULL);"
    "ALTER TABLE devices ADD COLUMN accepting INTEGER NOT NULL DEFAULT 1;";

/* version 3: a job counts its shards still open, so a validated shard
 * finds out whether it was the last without counting them all; the queue
 * gets a partial index of its own (only queued tasks: claims scan no
 * leased or finished entries) */
static const char v3[] =
    "CREATE INDEX tasks_queued ON tasks (id) WHERE state = 'queued';"
    "ALTER TABLE jobs ADD COLUMN shards_left BIGINT NOT NULL DEFAULT 0;"
    "UPDATE jobs SET shards_left = (SELECT count(*) FROM shards s WHERE s.job_id = jobs.id"
    " AND s.state = 'queued');";

/* version 4: staged (model-parallel) jobs. A shard has a stage and its
 * own kernel (NULL: the job's); an input may be another shard's result
 * (from_shard; sha '' until that shard is validated) */
static const char v4[] =
    "ALTER TABLE shards ADD COLUMN stage INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE shards ADD COLUMN kernel TEXT;"
    "ALTER TABLE shard_inputs ADD COLUMN from_shard BIGINT;"
    "CREATE INDEX shard_inputs_from ON shard_inputs (from_shard) WHERE from_shard IS NOT NULL;";

/* version 5: preemption. A provider that reclaims its machine releases a
 * leased task with a checkpoint (a blob, its SHA-256 here); the next
 * claimant resumes from it. releases counts declared releases. */
static const char v5[] =
    "ALTER TABLE tasks ADD COLUMN checkpoint_sha TEXT;"
    "ALTER TABLE tasks ADD COLUMN releases INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX tasks_checkpoint ON tasks (checkpoint_sha) WHERE checkpoint_sha IS NOT NULL;";

/* version 6: a job's counters striped over rows of their own, so results
 * committing in parallel (PostgreSQL's pooled connections, several
 * coordinators) do not all wait on the job's row: each connection adds to
 * its slot; cost and shards left are the job's columns plus the slots'
 * sums (pool.c) */
static const char v6[] =
    "CREATE TABLE job_counts (job_id BIGINT NOT NULL, slot INTEGER NOT NULL,"
    " cost BIGINT NOT NULL DEFAULT 0, done BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (job_id, slot));";

/* version 7: fewer index entries per task. Every change of a task's state
 * writes a new row version with an entry in each of its indexes; the
 * lookups by state are the queue's (tasks_queued) and the reaper's, which
 * gets a partial index of the leased tasks only, so tasks_state (every
 * version of every task) goes. */
static const char v7[] =
    "CREATE INDEX tasks_leased ON tasks (lease_expires_ms) WHERE state = 'leased';"
    "DROP INDEX tasks_state;";

/* version 8: the provider's index holds its leased tasks only. Every
 * lookup by provider (heartbeat, the agent's leases, blob access) asks for
 * leased tasks; the full index took an entry for every version of every
 * task (the submission's, the valid one's) that no query read. */
static const char v8[] =
    "DROP INDEX tasks_provider;"
    "CREATE INDEX tasks_provider ON tasks (provider) WHERE state = 'leased';";

static const char *const migrations[] = {v1, v2, v3, v4, v5, v6, v7, v8};

static const char get_version[] = "SELECT version FROM schema_version";

int synor_netstore_schema_version(synor_netstore *s, int *out)
{
    pthread_mutex_lock(&s->mu);
    nsres r;
    int e = synor__ns_exec(s, get_version, NULL, 0, &r, NULL);
    if (!e) {
        *out = r.rows ? (int)synor__nsres_int(&r, 0, 0) : 0;
        synor__nsres_free(&r);
    }
    pthread_mutex_unlock(&s->mu);
    return e;
}

int synor__ns_migrate(synor_netstore *s)
{
    int e = s->ops->script(s->db, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
    if (e)
        return e;
    for (;;) {
        e = synor__ns_begin(s, 1);
        if (e)
            return e;
        nsres r;
        static const char lock_version[] = "SELECT version FROM schema_version %LOCK%";
        e = synor__ns_exec(s, lock_version, NULL, 0, &r, NULL);
        if (e) {
            synor__ns_rollback(s);
            return e;
        }
        int have = r.rows ? (int)synor__nsres_int(&r, 0, 0) : 0;
        int fresh = !r.rows;
        synor__nsres_free(&r);
        if (have > SYNOR_NETSTORE_SCHEMA_VERSION) {
            synor__ns_rollback(s);
            return synor__error(SYNOR_ENOTSUP,
                                "netstore: the database is at schema version %d; this build "
                                "knows versions up to %d (upgrade synor)",
                                have, SYNOR_NETSTORE_SCHEMA_VERSION);
        }
        if (have == SYNOR_NETSTORE_SCHEMA_VERSION) {
            synor__ns_rollback(s);
            return 0;
        }
        e = s->ops->script(s->db, migrations[have]);
        static const char ins[] = "INSERT INTO schema_version (version) VALUES ($1)";
        static const char upd[] = "UPDATE schema_version SET version = $1";
        nsparam p[] = {NS_I(have + 1)};
        if (!e)
            e = synor__ns_exec(s, fresh ? ins : upd, p, 1, NULL, NULL);
        if (!e)
            e = synor__ns_commit(s);
        if (e) {
            synor__ns_rollback(s);
            return synor__error(e, "netstore: migration %d -> %d failed: %s", have, have + 1,
                                synor_errmsg());
        }
    }
}
