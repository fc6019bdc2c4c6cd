/* claims_pg.c - PostgreSQL: concurrent claims of one coordinator in one
 * statement, a call of the server-side function synor_claims (PL/pgSQL,
 * created at open), through the claims' combiner (combine.c): one round
 * trip, one transaction and one WAL flush for all the claims that queued
 * while the previous call ran, where each claim was a transaction of
 * three round trips and a flush of its own.
 *
 * The function does for the claims what claim_tx and synor__ns_take_many
 * do, set-based: the devices checked in one statement (their owner,
 * whether they accept work, their UTC hours), the devices' last_seen_ms
 * written in one (only where a second old or more, so a claim's
 * transaction seldom holds a device's row that the results' function waits
 * on; the rows taken in id order, as the results' function takes them),
 * then ONE pick for the whole call: the first queued tasks that are the
 * lowest queued one of their shard, in a shard that no claimant of the
 * call holds a replica of (FOR UPDATE SKIP LOCKED, LIMIT the sum of the
 * claims' max), dealt to the claims in device order, each up to its max,
 * leased by one UPDATE ... FROM, the jobs marked running in the same
 * statement; then one statement that returns the rows the agents need.
 * Only when that pick comes back short of the total (the queue's end, or
 * a shard some claimant of the call holds a replica of) does each claim
 * still short look again on its own with the per-claim pick (its own
 * replicas excluded), so a claim gets what it would have got alone.
 * If the call fails as a whole, each claim takes the path of a
 * transaction of its own (dispatch.c). Spot checks (--spot-rate) always
 * take that path. */
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
    "  k integer; v_code integer[]; v_want bigint; v_got integer;\n"
    "  v_k integer[] := '{}'; v_id bigint[] := '{}'; v_job bigint[] := '{}';\n"
    "  v_shard bigint[] := '{}'; v_ck text[] := '{}';\n"
    "  f_k integer[]; f_id bigint[]; f_job bigint[]; f_shard bigint[]; f_ck text[];\n"
    "BEGIN\n"
    /* each claim's device: 1 none of its owner's, 2 takes no work now, 0 ok */
    "  SELECT array_agg(CASE WHEN d.id IS NULL THEN 1 WHEN d.accepting = 0 THEN 2\n"
    "      WHEN d.availability !~ '^utc:[0-9]{1,9}-[0-9]{1,9}$' THEN 0\n"
    "      WHEN (SELECT CASE WHEN h.a <= h.b THEN p_hour >= h.a AND p_hour < h.b\n"
    "            ELSE p_hour >= h.a OR p_hour < h.b END\n"
    "          FROM (SELECT split_part(substr(d.availability, 5), '-', 1)::integer AS a,\n"
    "            split_part(substr(d.availability, 5), '-', 2)::integer AS b) h) THEN 0\n"
    "      ELSE 2 END ORDER BY u.i)\n"
    "    INTO v_code FROM unnest(p_devices, p_owners) WITH ORDINALITY AS u(dev, own, i)\n"
    "    LEFT JOIN devices d ON d.id = u.dev AND d.owner = u.own;\n"
    /* last_seen_ms only when a second old, the rows taken in id order */
    "  UPDATE devices SET last_seen_ms = p_now_ms WHERE id IN (SELECT d.id FROM devices d\n"
    "    JOIN unnest(p_devices, p_owners) AS u(dev, own) ON d.id = u.dev AND d.owner = u.own\n"
    "    WHERE d.last_seen_ms < p_now_ms - 1000 ORDER BY d.id FOR UPDATE OF d);\n"
    "  SELECT coalesce(sum(p_max[i]), 0) INTO v_want FROM generate_subscripts(p_max, 1) AS g(i)\n"
    "    WHERE v_code[i] = 0;\n"
    "  IF v_want > 0 THEN\n"
    /* set-based: the first v_want queued tasks that are their shard's lowest
     * queued one, in a shard no claimant of the call holds a replica of,
     * dealt to the claims in device order, each its max */
    "    WITH w AS (SELECT g.i AS k, sum(p_max[g.i]) OVER (ORDER BY p_devices[g.i], g.i) AS hi\n"
    "        FROM generate_subscripts(p_max, 1) AS g(i) WHERE v_code[g.i] = 0),\n"
    "      c AS (SELECT p.id, row_number() OVER (ORDER BY p.id) AS r FROM (SELECT t.id FROM tasks t\n"
    "        WHERE t.state = 'queued' AND NOT EXISTS (SELECT 1 FROM tasks u WHERE\n"
    "        u.shard_id = t.shard_id AND (u.provider = ANY(p_owners) OR (u.state = 'queued'\n"
    "        AND u.id < t.id))) ORDER BY t.id LIMIT v_want FOR UPDATE SKIP LOCKED) p),\n"
    "      a AS (SELECT c.id, w.k FROM c JOIN w ON c.r > w.hi - p_max[w.k] AND c.r <= w.hi),\n"
    "      n AS (UPDATE tasks t SET state = 'leased', device_id = p_devices[a.k],\n"
    "        provider = p_owners[a.k], lease = p_leases[a.k], lease_expires_ms = p_expires,\n"
    "        attempts = t.attempts + 1 FROM a WHERE t.id = a.id\n"
    "        RETURNING a.k, t.id, t.job_id, t.shard_id, t.checkpoint_sha),\n"
    "      r AS (UPDATE jobs SET state = 'running' WHERE state = 'queued'\n"
    "        AND id IN (SELECT job_id FROM n))\n"
    "    SELECT coalesce(array_agg(n.k), '{}'), coalesce(array_agg(n.id), '{}'),\n"
    "      coalesce(array_agg(n.job_id), '{}'), coalesce(array_agg(n.shard_id), '{}'),\n"
    "      coalesce(array_agg(n.checkpoint_sha), '{}') INTO v_k, v_id, v_job, v_shard, v_ck FROM n;\n"
    "  END IF;\n",
    /* short of the total (the queue near its end, a shard some claimant of
     * the call holds a replica of): each claim short of its max looks
     * again on its own, in device order */
    "  IF cardinality(v_k) < v_want THEN\n"
    "    FOR k IN SELECT u.i FROM unnest(p_devices) WITH ORDINALITY AS u(d, i)\n"
    "        WHERE v_code[u.i] = 0 ORDER BY u.d, u.i LOOP\n"
    "      v_got := coalesce(cardinality(array_positions(v_k, k)), 0);\n"
    "      CONTINUE WHEN v_got >= p_max[k];\n"
    "      WITH n AS (UPDATE tasks SET state = 'leased', device_id = p_devices[k],\n"
    "          provider = p_owners[k], lease = p_leases[k], lease_expires_ms = p_expires,\n"
    "          attempts = attempts + 1 WHERE id IN (SELECT t.id FROM tasks t\n"
    "          WHERE t.state = 'queued' AND NOT EXISTS (SELECT 1 FROM tasks u WHERE\n"
    "          u.shard_id = t.shard_id AND (u.provider = p_owners[k] OR (u.state = 'queued'\n"
    "          AND u.id < t.id))) ORDER BY t.id LIMIT p_max[k] - v_got FOR UPDATE SKIP LOCKED)\n"
    "          RETURNING id, job_id, shard_id, checkpoint_sha),\n"
    "        r AS (UPDATE jobs SET state = 'running' WHERE state = 'queued'\n"
    "          AND id IN (SELECT job_id FROM n))\n"
    "      SELECT coalesce(array_agg(k), '{}'), coalesce(array_agg(n.id), '{}'),\n"
    "        coalesce(array_agg(n.job_id), '{}'), coalesce(array_agg(n.shard_id), '{}'),\n"
    "        coalesce(array_agg(n.checkpoint_sha), '{}') INTO f_k, f_id, f_job, f_shard, f_ck FROM n;\n"
    "      v_k := v_k || f_k; v_id := v_id || f_id; v_job := v_job || f_job;\n"
    "      v_shard := v_shard || f_shard; v_ck := v_ck || f_ck;\n"
    "    END LOOP;\n"
    "  END IF;\n"
    /* the claims without tasks: their code (3: none for it) */
    "  RETURN QUERY SELECT g.i, CASE WHEN v_code[g.i] = 0 THEN 3 ELSE v_code[g.i] END,\n"
    "    NULL::bigint, NULL::bigint, NULL::bigint, NULL::text, NULL::text, NULL::text,\n"
    "    NULL::text, NULL::bigint, NULL::text, NULL::bigint\n"
    "    FROM generate_subscripts(p_devices, 1) AS g(i) WHERE g.i <> ALL(v_k) ORDER BY g.i;\n"
    /* the tasks, with what the agent needs, by claim */
    "  IF cardinality(v_k) > 0 THEN\n"
    "    RETURN QUERY SELECT c.k, 0, c.id, c.job_id, c.shard_id, COALESCE(s.kernel, j.kernel),\n"
    "      j.params, s.params, i.sha, b.bytes, c.ck, cb.bytes\n"
    "      FROM unnest(v_k, v_id, v_job, v_shard, v_ck) AS c(k, id, job_id, shard_id, ck)\n"
    "      JOIN shards s ON s.id = c.shard_id JOIN jobs j ON j.id = c.job_id\n"
    "      LEFT JOIN (shard_inputs i JOIN blobs b ON b.sha = i.sha) ON i.shard_id = c.shard_id\n"
    "      LEFT JOIN blobs cb ON cb.sha = c.ck ORDER BY c.k, c.id, i.pos;\n"
    "  END IF;\n"
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
