/* claims_pg.c - PostgreSQL: concurrent claims of one coordinator in one
 * statement, a call of the server-side function synor_claims (PL/pgSQL,
 * created at open), through the claims' combiner (combine.c): one round
 * trip, one transaction and one WAL flush for all the claims that queued
 * while the previous call ran, where each claim was a transaction of
 * three round trips and a flush of its own.
 *
 * The function does for each claim what claim_tx and synor__ns_take_many
 * do: the device checked (its owner, whether it accepts work, its UTC
 * hours), then the same pick (the lowest queued task of a shard the
 * provider holds no replica of, FOR UPDATE SKIP LOCKED), the jobs marked
 * running and the rows the agent needs. The claims run in the order of
 * their devices, so two calls lock devices' rows in one order. The device's
 * last_seen_ms is written only when it is a second old or more, so a
 * claim's transaction seldom holds a device's row that the results'
 * function waits on (reputation). If the call fails as a whole, each claim
 * takes the path of a transaction of its own (dispatch.c). Spot checks
 * (--spot-rate) always take that path. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "netstore/db.h"

extern _Thread_local ns_conn *synor__ns_tls_conn;

static const char *const claims_fn[] = {
    "SELECT pg_advisory_xact_lock(5172014);"
    "CREATE OR REPLACE FUNCTION synor_claims(p_owners text[], p_devices bigint[],"
    " p_max integer[], p_leases text[], p_now_ms bigint, p_expires bigint, p_hour integer)"
    " RETURNS TABLE (o_k integer, o_code integer, o_id bigint, o_job bigint, o_shard bigint,"
    " o_kernel text, o_jparams text, o_sparams text, o_sha text, o_bytes bigint, o_ck text,"
    " o_ckbytes bigint) LANGUAGE plpgsql AS $f$\n"
    "DECLARE\n"
    "  k integer; v_d record; v_a integer; v_b integer; v_ok boolean;\n"
    "BEGIN\n"
    "  FOR k IN SELECT u.i FROM unnest(p_devices) WITH ORDINALITY AS u(d, i)\n"
    "      ORDER BY u.d, u.i LOOP\n"
    "    o_k := k; o_code := 0; o_id := NULL; o_job := NULL; o_shard := NULL;\n"
    "    o_kernel := NULL; o_jparams := NULL; o_sparams := NULL; o_sha := NULL;\n"
    "    o_bytes := NULL; o_ck := NULL; o_ckbytes := NULL;\n"
    "    SELECT accepting, availability, last_seen_ms INTO v_d FROM devices\n"
    "      WHERE id = p_devices[k] AND owner = p_owners[k];\n"
    "    IF NOT FOUND THEN o_code := 1; RETURN NEXT; CONTINUE; END IF;\n"
    "    IF v_d.last_seen_ms < p_now_ms - 1000 THEN\n"
    "      UPDATE devices SET last_seen_ms = p_now_ms WHERE id = p_devices[k];\n"
    "    END IF;\n"
    "    v_ok := v_d.accepting <> 0;\n"
    "    IF v_ok AND v_d.availability ~ '^utc:[0-9]{1,9}-[0-9]{1,9}$' THEN\n"
    "      v_a := split_part(substr(v_d.availability, 5), '-', 1)::integer;\n"
    "      v_b := split_part(substr(v_d.availability, 5), '-', 2)::integer;\n"
    "      v_ok := CASE WHEN v_a <= v_b THEN p_hour >= v_a AND p_hour < v_b\n"
    "                   ELSE p_hour >= v_a OR p_hour < v_b END;\n"
    "    END IF;\n"
    "    IF NOT v_ok THEN o_code := 2; RETURN NEXT; CONTINUE; END IF;\n"
    "    RETURN QUERY WITH c AS (UPDATE tasks SET state = 'leased', device_id = p_devices[k],\n"
    "        provider = p_owners[k], lease = p_leases[k], lease_expires_ms = p_expires,\n"
    "        attempts = attempts + 1 WHERE id IN (SELECT t.id FROM tasks t\n"
    "        WHERE t.state = 'queued' AND NOT EXISTS (SELECT 1 FROM tasks u WHERE\n"
    "        u.shard_id = t.shard_id AND (u.provider = p_owners[k] OR (u.state = 'queued'\n"
    "        AND u.id < t.id))) ORDER BY t.id LIMIT p_max[k] FOR UPDATE SKIP LOCKED)\n"
    "        RETURNING id, job_id, shard_id, checkpoint_sha),\n"
    "      r AS (UPDATE jobs SET state = 'running' WHERE state = 'queued'\n"
    "        AND id IN (SELECT job_id FROM c))\n"
    "      SELECT k, 0, c.id, c.job_id, c.shard_id, COALESCE(s.kernel, j.kernel), j.params,\n"
    "        s.params, i.sha, b.bytes, c.checkpoint_sha, cb.bytes FROM c\n"
    "        JOIN shards s ON s.id = c.shard_id JOIN jobs j ON j.id = c.job_id\n"
    "        LEFT JOIN (shard_inputs i JOIN blobs b ON b.sha = i.sha) ON i.shard_id = c.shard_id\n"
    "        LEFT JOIN blobs cb ON cb.sha = c.checkpoint_sha ORDER BY c.id, i.pos;\n"
    "    IF NOT FOUND THEN o_code := 3; RETURN NEXT; END IF;\n"
    "  END LOOP;\n"
    "END\n"
    "$f$;",
    NULL};

int synor__ns_pg_claims_fn(synor_netstore *s)
{
    return synor__ns_pg_script(s, claims_fn);
}

typedef struct claim_req {
    ns_creq base; /* rc: 0 claims, 1 none, 2 the call failed; or an error */
    const char *owner;
    int64_t device;
    size_t max;
    char lease[34];
    synor_net_claim *c;
    size_t n;
} claim_req;

/* The most tasks one combined call leases. */
#define CLAIMS_CAP 64

static void run_claims(synor_netstore *s, ns_creq *batch)
{
    static const char call[] = "SELECT * FROM synor_claims($1, $2, $3, $4, $5, $6, $7)";
    synor__buf ow, dv, mx, ls;
    synor__buf *all[] = {&ow, &dv, &mx, &ls};
    for (size_t i = 0; i < 4; i++)
        synor__buf_init(all[i]);
    char num[32];
    size_t nreq = 0;
    for (ns_creq *o = batch; o; o = o->next, nreq++) {
        claim_req *q = (claim_req *)o;
        const char *sep = nreq ? "," : "{";
        for (size_t i = 0; i < 4; i++)
            synor__buf_puts(all[i], sep);
        synor__ns_pg_quoted(&ow, q->owner);
        snprintf(num, sizeof num, "%lld", (long long)q->device);
        synor__buf_puts(&dv, num);
        snprintf(num, sizeof num, "%zu", q->max);
        synor__buf_puts(&mx, num);
        synor__ns_pg_quoted(&ls, q->lease);
    }
    char *txt[4];
    int e = 0;
    for (size_t i = 0; i < 4; i++) {
        synor__buf_puts(all[i], "}");
        if (!(txt[i] = synor__buf_take(all[i])) && !e)
            e = SYNOR_ENOMEM;
    }
    int64_t now = synor__ns_now_ms();
    time_t unix_now = time(NULL);
    struct tm tm;
    gmtime_r(&unix_now, &tm);
    nsres r = {0};
    if (!e && !(e = synor__ns_pool_get(s))) {
        int64_t expires = now + (int64_t)(s->o.lease_timeout_s * 1000);
        nsparam p[] = {NS_T(txt[0]), NS_T(txt[1]), NS_T(txt[2]),      NS_T(txt[3]),
                       NS_I(now),    NS_I(expires), NS_I(tm.tm_hour)};
        /* no BEGIN: the statement is its own transaction */
        e = synor__ns_exec(s, call, p, 7, &r, NULL);
        synor__ns_pool_put(s);
    }
    for (size_t i = 0; i < 4; i++)
        synor__free(txt[i]);
    /* each claim's rows: those whose o_k is its place in the batch */
    size_t k = 1;
    for (ns_creq *o = batch; o; o = o->next, k++) {
        claim_req *q = (claim_req *)o;
        q->n = 0;
        if (e) {
            o->rc = 2;
            continue;
        }
        size_t a = 0;
        while (a < r.rows && (size_t)synor__nsres_int(&r, a, 0) != k)
            a++;
        size_t b = a;
        while (b < r.rows && (size_t)synor__nsres_int(&r, b, 0) == k)
            b++;
        int code = a < b ? (int)synor__nsres_int(&r, a, 1) : -1;
        if (code == 1) {
            o->rc = SYNOR_ENOENT;
            snprintf(o->msg, sizeof o->msg, "no device dev-%lld", (long long)q->device);
        } else if (code == 2 || code == 3) {
            o->rc = 1;
        } else if (code) {
            o->rc = 2; /* no answer for it: the path of its own */
        } else {
            nsres view = {.rows = b - a, .cols = r.cols, .cells = r.cells + a * r.cols};
            o->rc = synor__ns_claims_fill(s, &view, NULL, 2, q->lease, q->max, q->c, &q->n);
            if (o->rc < 0) {
                synor__strlcpy(o->msg, synor_errmsg(), sizeof o->msg);
                for (size_t i = 0; i < q->n; i++)
                    synor_net_claim_free(&q->c[i]);
                q->n = 0;
            }
        }
    }
    synor__nsres_free(&r);
}

int synor__ns_claim_pg(synor_netstore *s, const char *owner, int64_t device, size_t max,
                       synor_net_claim *c, size_t *n)
{
    claim_req q = {.base = {.weight = max}, .owner = owner, .device = device, .max = max, .c = c};
    *n = 0;
    q.lease[0] = 'L';
    int e = synor__ns_random_hex(16, q.lease + 1);
    if (e)
        return e;
    synor__ns_combine(s, &s->cclaims, &q.base, CLAIMS_CAP, run_claims);
    if (q.base.rc < 0)
        return synor__error(q.base.rc, "%s", q.base.msg);
    *n = q.n;
    return q.base.rc;
}
