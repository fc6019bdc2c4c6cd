/* dispatch.c - the task lifecycle in the netstore: claims (leases),
 * heartbeats renewing them, results and failures from the lease holder,
 * and the reaper that expires leases and jobs past their deadline.
 *
 * A lease is a random string given with the task; only the provider that
 * holds it, before it expires, may report on the task (anything else is
 * SYNOR_ESTATE and changes nothing). A provider is never given two
 * replicas of one shard, so it cannot outvote others with itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json/json.h"
#include "netstore/db.h"

const char *synor_net_verdict_name(synor_net_verdict v)
{
    switch (v) {
    case SYNOR_NET_VALIDATED: return "validated";
    case SYNOR_NET_REJECTED: return "rejected";
    default: return "pending-quorum";
    }
}

void synor_net_claim_free(synor_net_claim *c)
{
    if (!c)
        return;
    synor__free(c->params_json);
    synor__free(c->inputs_json);
    synor__free(c->checkpoint_json);
    c->params_json = c->inputs_json = c->checkpoint_json = NULL;
}

char *synor__ns_json_text(const synor__jval *v)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_value(&w, v);
    return synor__buf_take(&b);
}

/* The job's params with the shard's members over them: a fresh string. */
char *synor__ns_merge_params(const char *job, const char *shard)
{
    synor__jdoc *a = NULL, *b = NULL;
    if (synor__json_parse(job, strlen(job), "job params", &a))
        return NULL;
    if (shard && synor__json_parse(shard, strlen(shard), "shard params", &b)) {
        synor__jdoc_free(a);
        return NULL;
    }
    synor__buf buf;
    synor__buf_init(&buf);
    synor__jw w;
    synor__jw_init(&w, &buf, 0);
    const synor__jval *ja = synor__jdoc_root(a), *jb = b ? synor__jdoc_root(b) : NULL;
    if (ja->type != SYNOR__J_OBJECT || (jb && jb->type != SYNOR__J_OBJECT)) {
        synor__jw_value(&w, jb ? jb : ja);
    } else {
        synor__jw_obj_begin(&w);
        for (size_t i = 0; i < ja->u.obj.n; i++) {
            if (jb && synor__json_get(jb, ja->u.obj.m[i].key))
                continue;
            synor__jw_key(&w, ja->u.obj.m[i].key);
            synor__jw_value(&w, ja->u.obj.m[i].val);
        }
        for (size_t i = 0; jb && i < jb->u.obj.n; i++) {
            synor__jw_key(&w, jb->u.obj.m[i].key);
            synor__jw_value(&w, jb->u.obj.m[i].val);
        }
        synor__jw_obj_end(&w);
    }
    synor__jdoc_free(a);
    synor__jdoc_free(b);
    return synor__buf_take(&buf);
}

int synor__ns_available_now(const char *availability, time_t now)
{
    int a, b, n = 0;
    if (!availability || sscanf(availability, "utc:%d-%d%n", &a, &b, &n) != 2 ||
        (size_t)n != strlen(availability))
        return 1; /* "always"; "idle" is the agent's to judge (accepting) */
    struct tm tm;
    gmtime_r(&now, &tm);
    int h = tm.tm_hour;
    /* "utc:22-06" wraps midnight: 22:00 to 05:59 */
    return a <= b ? (h >= a && h < b) : (h >= a || h < b);
}

/* A known-answer task of a spot-check job for this provider, leased to it
 * at once; *task 0 when there is none it has not done. */
static int spot_task(synor_netstore *s, const char *owner, int64_t device, const char *lease,
                     int64_t expires, int64_t *task, int64_t *job, int64_t *shard)
{
    static const char pick[] =
        "SELECT s.id, s.job_id FROM shards s JOIN jobs j ON j.id = s.job_id"
        " WHERE s.expect IS NOT NULL AND j.state IN ('queued', 'running') AND NOT EXISTS"
        " (SELECT 1 FROM tasks t WHERE t.shard_id = s.id AND t.provider = $1)"
        " ORDER BY random() LIMIT 1";
    static const char ins[] =
        "INSERT INTO tasks (job_id, shard_id, state, device_id, provider, lease, lease_expires_ms,"
        " attempts) VALUES ($1, $2, 'leased', $3, $4, $5, $6, 1) RETURNING id";
    static const char bump[] = "UPDATE shards SET tasks = tasks + 1 WHERE id = $1";
    nsparam p[] = {NS_T(owner)};
    nsres r;
    *task = 0;
    int e = synor__ns_exec(s, pick, p, 1, &r, NULL);
    if (e || !r.rows) {
        synor__nsres_free(&r);
        return e;
    }
    *shard = synor__nsres_int(&r, 0, 0);
    *job = synor__nsres_int(&r, 0, 1);
    synor__nsres_free(&r);
    nsparam q[] = {NS_I(*job), NS_I(*shard), NS_I(device), NS_T(owner), NS_T(lease), NS_I(expires)};
    if ((e = synor__ns_exec(s, ins, q, 6, &r, NULL)))
        return e;
    *task = synor__nsres_int(&r, 0, 0);
    synor__nsres_free(&r);
    nsparam b[] = {NS_I(*shard)};
    return synor__ns_exec(s, bump, b, 1, NULL, NULL);
}

/* Leases one task to the device (checked by the caller): 0 with *c
 * filled, 1 when there is none. *last_job: the job last marked running in
 * this transaction (that update is skipped when it repeats). */
static int take_one(synor_netstore *s, const char *owner, int64_t device, int64_t now,
                    int64_t *last_job, synor_net_claim *c)
{
    static const char take[] =
        "UPDATE tasks SET state = 'leased', device_id = $1, provider = $2, lease = $3,"
        " lease_expires_ms = $4, attempts = attempts + 1 WHERE id = (SELECT t.id FROM tasks t"
        " WHERE t.state = 'queued' AND NOT EXISTS (SELECT 1 FROM tasks u WHERE"
        " u.shard_id = t.shard_id AND u.provider = $2) ORDER BY t.id LIMIT 1 %SKIP%)"
        " RETURNING id, job_id, shard_id";
    static const char info[] =
        "SELECT COALESCE(s.kernel, j.kernel), j.params, s.params, t.checkpoint_sha, b.bytes"
        " FROM tasks t JOIN shards s ON s.id = t.shard_id JOIN jobs j ON j.id = s.job_id"
        " LEFT JOIN blobs b ON b.sha = t.checkpoint_sha WHERE t.id = $1";
    static const char inputs[] =
        "SELECT i.sha, b.bytes FROM shard_inputs i JOIN blobs b ON b.sha = i.sha"
        " WHERE i.shard_id = $1 ORDER BY i.pos";
    static const char running[] = "UPDATE jobs SET state = 'running' WHERE id = $1 AND state = 'queued'";
    nsres r;
    int e;
    char lease[34] = "L";
    if ((e = synor__ns_random_hex(16, lease + 1)))
        return e;
    int64_t expires = now + (int64_t)(s->o.lease_timeout_s * 1000);
    int64_t task = 0, job = 0, shard = 0;
    if (s->o.spot_rate > 0 && (double)(synor__ns_rand(s) >> 11) / 9007199254740992.0 < s->o.spot_rate &&
        (e = spot_task(s, owner, device, lease, expires, &task, &job, &shard)))
        return e;
    if (!task) {
        nsparam pt[] = {NS_I(device), NS_T(owner), NS_T(lease), NS_I(expires)};
        if ((e = synor__ns_exec(s, take, pt, 4, &r, NULL)))
            return e;
        if (!r.rows) {
            synor__nsres_free(&r);
            return 1;
        }
        task = synor__nsres_int(&r, 0, 0);
        job = synor__nsres_int(&r, 0, 1);
        shard = synor__nsres_int(&r, 0, 2);
        synor__nsres_free(&r);
    }
    nsparam pj[] = {NS_I(job)};
    if (job != *last_job && (e = synor__ns_exec(s, running, pj, 1, NULL, NULL)))
        return e;
    *last_job = job;
    nsparam psh[] = {NS_I(shard)}, ptk[] = {NS_I(task)};
    if ((e = synor__ns_exec(s, info, ptk, 1, &r, NULL)))
        return e;
    *c = (synor_net_claim){.task = task, .job = job, .expires_in = s->o.lease_timeout_s};
    memcpy(c->lease, lease, sizeof lease);
    synor__strlcpy(c->kernel, synor__nsres_text(&r, 0, 0), sizeof c->kernel);
    c->params_json = synor__ns_merge_params(synor__nsres_text(&r, 0, 1),
                                  synor__nsres_null(&r, 0, 2) ? NULL : synor__nsres_text(&r, 0, 2));
    int ck = synor__ns_checkpoint_json(&r, 0, 3, &c->checkpoint_json);
    synor__nsres_free(&r);
    if (!c->params_json || ck)
        return synor__error(SYNOR_ENOMEM, "netstore: task t-%lld: its params could not be merged",
                            (long long)task);
    if ((e = synor__ns_exec(s, inputs, psh, 1, &r, NULL))) {
        synor_net_claim_free(c);
        return e;
    }
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < r.rows; i++) {
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "sha256");
        synor__jw_str(&w, synor__nsres_text(&r, i, 0));
        synor__jw_key(&w, "bytes");
        synor__jw_int(&w, synor__nsres_int(&r, i, 1));
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__nsres_free(&r);
    if (!(c->inputs_json = synor__buf_take(&b))) {
        synor_net_claim_free(c);
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    }
    return 0;
}

/* Up to max tasks for the owner's device into c[0..*n): 0 with *n >= 1, 1
 * when none (or the device is not accepting work). */
static int claim_tx(synor_netstore *s, const char *owner, int64_t device, size_t max,
                    synor_net_claim *c, size_t *n)
{
    /* the device seen now, and whether it takes work: one statement */
    static const char dev[] = "UPDATE devices SET last_seen_ms = $1 WHERE id = $2 AND owner = $3"
                              " RETURNING accepting, availability";
    int64_t now = synor__ns_now_ms();
    nsparam pd[] = {NS_I(now), NS_I(device), NS_T(owner)};
    nsres r;
    *n = 0;
    int e = synor__ns_exec(s, dev, pd, 3, &r, NULL);
    if (e)
        return e;
    if (!r.rows) {
        synor__nsres_free(&r);
        return synor__error(SYNOR_ENOENT, "no device dev-%lld", (long long)device);
    }
    int accepting = synor__nsres_int(&r, 0, 0) != 0 &&
                    synor__ns_available_now(synor__nsres_text(&r, 0, 1), time(NULL));
    synor__nsres_free(&r);
    if (!accepting)
        return 1;
    /* PostgreSQL: one task too is one statement there (the same pick:
     * the lowest queued task of a shard the provider has no replica of) */
    if ((max > 1 || s->pg) && !(s->o.spot_rate > 0))
        return synor__ns_take_many(s, owner, device, now, max, c, n);
    int64_t last_job = 0;
    while (*n < max) {
        e = take_one(s, owner, device, now, &last_job, &c[*n]);
        if (e < 0) {
            for (size_t i = 0; i < *n; i++)
                synor_net_claim_free(&c[i]);
            *n = 0;
            return e;
        }
        if (e == 1)
            break;
        ++*n;
    }
    return *n ? 0 : 1;
}

typedef struct claim_args {
    const char *owner;
    int64_t device;
    size_t max;
    synor_net_claim *claims;
    size_t n;
} claim_args;

static int claim_op(synor_netstore *s, void *arg)
{
    claim_args *a = arg;
    return claim_tx(s, a->owner, a->device, a->max, a->claims, &a->n);
}

int synor_netstore_claim_many(synor_netstore *s, const char *owner, int64_t device, size_t max,
                              synor_net_claim *claims, size_t *n)
{
    if (max < 1 || max > SYNOR_NET_CLAIM_MAX)
        return synor__error(SYNOR_EINVAL, "argument 'max': value %zu: 1 to %d", max,
                            SYNOR_NET_CLAIM_MAX);
    if (s->npool && !(s->o.spot_rate > 0)) {
        /* PostgreSQL: combined with other claims into one statement */
        int e = synor__ns_claim_pg(s, owner, device, max, claims, n);
        if (e != 2)
            return e;
    }
    claim_args a = {.owner = owner, .device = device, .max = max, .claims = claims};
    int e = synor__ns_tx(s, claim_op, &a);
    if (e < 0) { /* the commit failed after the claims were filled */
        for (size_t i = 0; i < a.n; i++)
            synor_net_claim_free(&claims[i]);
        a.n = 0;
    }
    *n = e < 0 ? 0 : a.n;
    return e;
}

int synor_netstore_claim(synor_netstore *s, const char *owner, int64_t device,
                         synor_net_claim *claim)
{
    size_t n;
    return synor_netstore_claim_many(s, owner, device, 1, claim, &n);
}

/* The task's row if owner holds lease on it, unexpired: shard, job. */
int synor__ns_check_lease(synor_netstore *s, const char *owner, int64_t task, const char *lease,
                       int64_t *shard, int64_t *job, int64_t *attempts)
{
    static const char get[] = "SELECT state, provider, lease, lease_expires_ms, shard_id, job_id,"
                              " attempts FROM tasks WHERE id = $1 %LOCK%";
    nsparam p[] = {NS_I(task)};
    nsres r;
    int e = synor__ns_exec(s, get, p, 1, &r, NULL);
    if (e)
        return e;
    if (!r.rows || strcmp(synor__nsres_text(&r, 0, 1), owner)) {
        synor__nsres_free(&r);
        return synor__error(SYNOR_ESTATE, "task t-%lld is not leased to you", (long long)task);
    }
    if (strcmp(synor__nsres_text(&r, 0, 0), "leased") || !lease ||
        strcmp(synor__nsres_text(&r, 0, 2), lease)) {
        synor__nsres_free(&r);
        return synor__error(SYNOR_ESTATE, "task t-%lld: lease '%s' is not the task's live lease",
                            (long long)task, lease ? lease : "");
    }
    if (synor__nsres_int(&r, 0, 3) < synor__ns_now_ms()) {
        synor__nsres_free(&r);
        return synor__error(SYNOR_ESTATE, "task t-%lld: lease %s expired", (long long)task, lease);
    }
    *shard = synor__nsres_int(&r, 0, 4);
    *job = synor__nsres_int(&r, 0, 5);
    *attempts = synor__nsres_int(&r, 0, 6);
    synor__nsres_free(&r);
    return 0;
}

static int result_tx(synor_netstore *s, const char *owner, int64_t task, const char *lease,
                     const void *data, size_t n, const char *sha, int64_t elapsed_ms,
                     synor_net_verdict *verdict)
{
    int64_t shard, job, attempts;
    int e = synor__ns_check_lease(s, owner, task, lease, &shard, &job, &attempts);
    if (e)
        return e;
    static const char put[] = "INSERT INTO blobs (sha, bytes, data) VALUES ($1, $2, $3) "
                              "ON CONFLICT (sha) DO NOTHING";
    static const char done[] = "UPDATE tasks SET state = 'done', result_sha = $1, elapsed_ms = $2,"
                               " finished_at = $3, lease = NULL WHERE id = $4";
    nsparam pb[] = {NS_T(sha), NS_I(n), NS_B(data, n)};
    if ((e = synor__ns_exec(s, put, pb, 3, NULL, NULL)))
        return e;
    nsparam pd[] = {NS_T(sha), NS_I(elapsed_ms), NS_I(time(NULL)), NS_I(task)};
    if ((e = synor__ns_exec(s, done, pd, 4, NULL, NULL)))
        return e;
    int v = 0;
    if ((e = synor__ns_quorum(s, shard, task, &v)))
        return e;
    *verdict = v > 0 ? SYNOR_NET_VALIDATED : v < 0 ? SYNOR_NET_REJECTED : SYNOR_NET_PENDING;
    return 0;
}


int synor__ns_result_op(synor_netstore *s, void *arg)
{
    result_args *a = arg;
    return result_tx(s, a->owner, a->task, a->lease, a->data, a->n, a->sha, a->elapsed_ms,
                     a->verdict);
}

int synor_netstore_result(synor_netstore *s, const char *owner, int64_t task, const char *lease,
                          const void *data, size_t n, const char *sha256, int64_t elapsed_ms,
                          synor_net_verdict *verdict)
{
    char sha[65];
    synor__ns_sha256_hex(data, n, sha);
    if (!sha256 || strcmp(sha, sha256))
        return synor__error(SYNOR_EINVAL,
                            "header 'X-Synor-SHA256': value '%s': the body's SHA-256 is %s",
                            sha256 ? sha256 : "", sha);
    result_args a = {owner, task, lease, data, n, sha, elapsed_ms < 0 ? 0 : elapsed_ms, verdict};
    if (s->npool) {
        /* PostgreSQL: one statement, unless it leaves the item to the C path */
        int rc = 0, redo = 0;
        char msg[1][256];
        if (!synor__ns_results_pg(s, owner, &a, 1, &rc, msg, &redo) && !redo) {
            if (rc < 0)
                synor__error(rc, "%s", msg[0]);
            return rc;
        }
    }
    return synor__ns_tx(s, synor__ns_result_op, &a);
}

/* Fails a shard and its job: the job's other live tasks are cancelled. */
int synor__ns_fail_job(synor_netstore *s, int64_t shard, int64_t job, const char *why)
{
    static const char sh[] = "UPDATE shards SET state = 'failed' WHERE id = $1";
    static const char jb[] = "UPDATE jobs SET state = 'failed' WHERE id = $1"
                             " AND state IN ('queued', 'running')";
    static const char tk[] = "UPDATE tasks SET state = 'cancelled', lease = NULL WHERE job_id = $1"
                             " AND state IN ('queued', 'leased', 'waiting')";
    nsparam ps[] = {NS_I(shard)}, pj[] = {NS_I(job)};
    int e = synor__ns_exec(s, sh, ps, 1, NULL, NULL);
    if (!e)
        e = synor__ns_exec(s, jb, pj, 1, NULL, NULL);
    if (!e)
        e = synor__ns_exec(s, tk, pj, 1, NULL, NULL);
    char subj[32];
    snprintf(subj, sizeof subj, "j-%lld", (long long)job);
    if (!e)
        e = synor__ns_event(s, "job-failed", subj, why);
    return e;
}

static int fail_tx(synor_netstore *s, const char *owner, int64_t task, const char *lease,
                   const char *error)
{
    int64_t shard, job, attempts;
    int e = synor__ns_check_lease(s, owner, task, lease, &shard, &job, &attempts);
    if (e)
        return e;
    char subj[32], det[600];
    snprintf(subj, sizeof subj, "t-%lld", (long long)task);
    snprintf(det, sizeof det, "%s: %.500s", owner, error ? error : "");
    if ((e = synor__ns_event(s, "task-failed", subj, det)))
        return e;
    nsparam pt[] = {NS_I(task)};
    if (attempts >= (int64_t)s->o.max_attempts) {
        static const char dead[] = "UPDATE tasks SET state = 'failed', lease = NULL WHERE id = $1";
        if ((e = synor__ns_exec(s, dead, pt, 1, NULL, NULL)))
            return e;
        snprintf(det, sizeof det, "task t-%lld failed %lld times; last: %.400s", (long long)task,
                 (long long)attempts, error ? error : "");
        return synor__ns_fail_job(s, shard, job, det);
    }
    /* a failure may come from the checkpoint: the next attempt starts over */
    static const char again[] = "UPDATE tasks SET state = 'queued', lease = NULL, provider = NULL,"
                                " device_id = NULL, checkpoint_sha = NULL WHERE id = $1";
    return synor__ns_exec(s, again, pt, 1, NULL, NULL);
}

typedef struct fail_args {
    const char *owner;
    int64_t task;
    const char *lease, *error;
} fail_args;

static int fail_op(synor_netstore *s, void *arg)
{
    fail_args *a = arg;
    return fail_tx(s, a->owner, a->task, a->lease, a->error);
}

int synor_netstore_fail(synor_netstore *s, const char *owner, int64_t task, const char *lease,
                        const char *error)
{
    fail_args a = {owner, task, lease, error};
    return synor__ns_tx(s, fail_op, &a);
}

static int heartbeat_tx(synor_netstore *s, const char *owner, const int64_t *devices, size_t n,
                        int accepting, synor__jw *w)
{
    static const char seen[] = "UPDATE devices SET last_seen_ms = $1, accepting = $2 WHERE id = $3"
                               " AND owner = $4";
    static const char renew[] = "UPDATE tasks SET lease_expires_ms = $1 WHERE device_id = $2"
                                " AND provider = $3 AND state = 'leased'";
    static const char list[] = "SELECT id, lease FROM tasks WHERE device_id = $1 AND provider = $2"
                               " AND state = 'leased' ORDER BY id";
    int64_t now = synor__ns_now_ms(), until = now + (int64_t)(s->o.lease_timeout_s * 1000);
    for (size_t i = 0; i < n; i++) {
        nsparam p[] = {NS_I(now), NS_I(accepting != 0), NS_I(devices[i]), NS_T(owner)};
        int64_t ch = 0;
        int e = synor__ns_exec(s, seen, p, 4, NULL, &ch);
        if (e)
            return e;
        if (!ch)
            return synor__error(SYNOR_ENOENT, "field 'devices[%zu]': value 'dev-%lld': no such device",
                                i, (long long)devices[i]);
        nsparam q[] = {NS_I(until), NS_I(devices[i]), NS_T(owner)};
        if ((e = synor__ns_exec(s, renew, q, 3, NULL, NULL)))
            return e;
        nsres r;
        nsparam l[] = {NS_I(devices[i]), NS_T(owner)};
        if ((e = synor__ns_exec(s, list, l, 2, &r, NULL)))
            return e;
        for (size_t k = 0; k < r.rows; k++) {
            char t[32];
            snprintf(t, sizeof t, "t-%lld", (long long)synor__nsres_int(&r, k, 0));
            synor__jw_obj_begin(w);
            synor__jw_key(w, "task");
            synor__jw_str(w, t);
            synor__jw_key(w, "lease");
            synor__jw_str(w, synor__nsres_text(&r, k, 1));
            synor__jw_key(w, "expires_in");
            synor__jw_num(w, s->o.lease_timeout_s);
            synor__jw_obj_end(w);
        }
        synor__nsres_free(&r);
    }
    return 0;
}

typedef struct heartbeat_args {
    const char *owner;
    const int64_t *devices;
    size_t n;
    int accepting;
    synor__jw *w;
} heartbeat_args;

static int heartbeat_op(synor_netstore *s, void *arg)
{
    heartbeat_args *a = arg;
    size_t mark = a->w->b->len;
    int e = heartbeat_tx(s, a->owner, a->devices, a->n, a->accepting, a->w);
    if (e)
        a->w->b->len = mark; /* rolled back: no leases to list */
    return e;
}

int synor_netstore_heartbeat(synor_netstore *s, const char *owner, const int64_t *devices,
                             size_t n, int accepting, char **leases_json)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_arr_begin(&w);
    heartbeat_args a = {owner, devices, n, accepting, &w};
    int e = synor__ns_tx(s, heartbeat_op, &a);
    synor__jw_arr_end(&w);
    if (e) {
        synor__buf_free(&b);
        return e;
    }
    *leases_json = synor__buf_take(&b);
    return *leases_json ? 0 : synor__error(SYNOR_ENOMEM, "netstore: out of memory");
}

static int reap_tx(synor_netstore *s, int *n)
{
    static const char late[] =
        "UPDATE devices SET reputation = CASE WHEN reputation > 0 THEN reputation - 1 ELSE 0 END"
        " WHERE id IN (SELECT device_id FROM tasks WHERE state = 'leased' AND lease_expires_ms < $1)";
    static const char back[] =
        "UPDATE tasks SET state = 'queued', lease = NULL, provider = NULL, device_id = NULL"
        " WHERE state = 'leased' AND lease_expires_ms < $1";
    static const char overdue[] =
        "SELECT id FROM jobs WHERE state IN ('queued', 'running') AND deadline_at > 0"
        " AND deadline_at < $1";
    int64_t now = synor__ns_now_ms(), ch = 0;
    nsparam p[] = {NS_I(now)};
    int e = synor__ns_exec(s, late, p, 1, NULL, NULL);
    if (!e)
        e = synor__ns_exec(s, back, p, 1, NULL, &ch);
    if (!e && ch) {
        char det[64];
        snprintf(det, sizeof det, "%lld leases expired; their tasks queued again", (long long)ch);
        e = synor__ns_event(s, "leases-expired", "tasks", det);
    }
    if (n)
        *n = (int)ch;
    /* PostgreSQL: a job whose last results committed but whose check after
     * the commit was lost (a crash in between, pool.c) is marked done here */
    static const char finished[] =
        "WITH d AS (UPDATE jobs SET state = 'done' WHERE state IN ('queued', 'running') AND"
        " shards_left <= (SELECT COALESCE(sum(c.done), 0) FROM job_counts c WHERE"
        " c.job_id = jobs.id) RETURNING id) INSERT INTO events (at, kind, subject, detail)"
        " SELECT $1, 'job-done', 'j-' || id, '' FROM d";
    nsparam pf[] = {NS_I(time(NULL))};
    if (!e && s->pg)
        e = synor__ns_exec(s, finished, pf, 1, NULL, NULL);
    nsres r;
    nsparam q[] = {NS_I(time(NULL))};
    if (!e)
        e = synor__ns_exec(s, overdue, q, 1, &r, NULL);
    if (e)
        return e;
    static const char sh[] = "SELECT id FROM shards WHERE job_id = $1 AND state = 'queued' LIMIT 1";
    for (size_t i = 0; i < r.rows && !e; i++) {
        int64_t job = synor__nsres_int(&r, i, 0);
        nsres x;
        nsparam pj[] = {NS_I(job)};
        if ((e = synor__ns_exec(s, sh, pj, 1, &x, NULL)))
            break;
        int64_t shard = x.rows ? synor__nsres_int(&x, 0, 0) : 0;
        synor__nsres_free(&x);
        e = synor__ns_fail_job(s, shard, job, "past its deadline");
    }
    synor__nsres_free(&r);
    return e;
}

int synor_netstore_reap(synor_netstore *s, int *n)
{
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_begin(s, 1);
    if (!e)
        e = reap_tx(s, n);
    if (!e)
        e = synor__ns_commit(s);
    if (e)
        synor__ns_rollback(s);
    pthread_mutex_unlock(&s->mu);
    return e;
}
