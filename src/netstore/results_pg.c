/* results_pg.c - PostgreSQL: a batch of results in one statement, a call
 * of the server-side function synor_results (PL/pgSQL, created at open),
 * run as a transaction of its own on a pooled connection: one round trip
 * and one WAL flush for the whole batch, where the statements of
 * dispatch.c and quorum.c take about 17 round trips per result.
 *
 * Concurrent callers' results (single or batches) are combined (combine.c)
 * into one call, each item with its owner; the items run in the order of
 * their tasks' devices, so two calls lock devices' rows in one order.
 *
 * First, set-based: the items whose shard has a single replica (no spot
 * check, still queued, no other replica of it queued, leased or done) and
 * whose lease holds are done together, one statement per step for all of
 * them: the tasks made valid (the lease rechecked on the row written), the
 * shards validated (all of them, or the pass is undone), the devices
 * locked in id order, the blobs stored, the ledger written (each device's
 * n-th item paid at its reputation before the call plus n - 1, as one by
 * one), the reputations raised, later stages fed. That is the dispatch's
 * common case, and about ten statements per call instead of about 13 per
 * item. If any step fails, the whole pass is undone (one subtransaction)
 * and its items go the second way.
 *
 * Then the rest, item by item as result_tx and synor__ns_quorum do it,
 * each in a subtransaction (a refused item changes nothing): the lease
 * check, the blob, the task done, and the quorum when the results agree
 * byte for byte — the validated replicas paid once (the ledger's UNIQUE
 * task), reputations moved, the others rejected, the shard validated, its
 * results fed to later stages and their tasks queued. What it does not
 * decide it leaves untouched and answers "redo" (code 9): spot-check
 * shards, float kernels whose results differ in their bytes (the tolerance
 * is the C code's), a shard with no majority and no replica left (another
 * replica or failure), and any error; those items then take the C path
 * (synor__ns_result_op) in a transaction of their own, so every rule stays
 * written once in C and the function is a shortcut of its common case.
 * The payment for a reputation comes from the rewards policy in C: the
 * caller passes the 101 amounts (reputation 0..100). The job counters go
 * to the connection's slots (job_counts) and the jobs finished are checked
 * after the commit (pool.c). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "netstore/db.h"

extern _Thread_local synor_netstore *synor__ns_tls_store;
extern _Thread_local ns_conn *synor__ns_tls_conn;

__extension__ typedef __int128 ns_i128;

/* The function, in pieces (C99 promises literals of 4,095 characters);
 * CREATE OR REPLACE under an advisory lock, so coordinators opening at once
 * do not collide. */
static const char *const results_fn[] = {
    "SELECT pg_advisory_xact_lock(5172014);"
    /* schema v6's one-owner form: its coordinators refuse a v7 database */
    "DROP FUNCTION IF EXISTS synor_results(text, bigint[], text[], text[], bigint[], bytea,"
    " bigint[], bigint, bigint, bigint, bigint[], integer);"
    "CREATE OR REPLACE FUNCTION synor_results2(p_owners text[], p_tasks bigint[], p_leases text[],"
    " p_shas text[], p_lens bigint[], p_offs bigint[], p_data bytea, p_elapsed bigint[],"
    " p_now_ms bigint, p_unix bigint, p_price bigint, p_pay bigint[], p_slot integer)"
    " RETURNS TABLE (o_k integer, o_task bigint, o_rc integer, o_verdict integer, o_job bigint)"
    " LANGUAGE plpgsql AS $f$\n"
    "DECLARE\n"
    "  k integer; v_one boolean;\n"
    "  v_t record; v_s record; v_d record;\n"
    "  v_win text; v_rep integer; v_ins bigint; v_cost bigint; v_done bigint; v_job bigint;\n"
    "  v_jobs bigint[] := '{}'; v_costs bigint[] := '{}'; v_dones bigint[] := '{}';\n"
    "  v_j integer;\n"
    "  v_fi integer[] := '{}'; v_ft bigint[]; v_fs bigint[]; v_fj bigint[]; v_fd bigint[];\n"
    "  v_fo text[]; v_pj bigint[]; v_pc bigint[]; v_pd bigint[];\n"
    "BEGIN\n"
    /* the set-based pass: every item of a single replica's shard whose lease
     * holds (see the comment above), in one statement per step */
    "  BEGIN\n"
    /* the candidates (a task once, a shard once, no other replica open or
     * done in it) made valid; the UPDATE rechecks the lease on the row it
     * writes, so one changed meanwhile is left to the item-by-item pass. The
     * lease test is a CASE so that the planner cannot take the partial
     * index of the leased tasks (tasks_leased: with the statistics of the
     * submission it looks empty, and it holds an entry for every lease since
     * the last vacuum) instead of the tasks' keys */
    "    WITH c AS (SELECT y.* FROM (SELECT u.i::integer AS i, t.id AS tid, t.shard_id AS shard,\n"
    "          t.job_id AS job, t.device_id AS dev, j.owner AS jowner,\n"
    "          row_number() OVER (PARTITION BY t.id ORDER BY u.i) AS r1,\n"
    "          row_number() OVER (PARTITION BY t.shard_id ORDER BY u.i) AS r2\n"
    "        FROM unnest(p_tasks) WITH ORDINALITY AS u(id, i) JOIN tasks t ON t.id = u.id\n"
    "        JOIN shards s ON s.id = t.shard_id JOIN jobs j ON j.id = s.job_id\n"
    "        WHERE CASE WHEN t.state = 'leased' THEN t.provider = p_owners[u.i::integer]\n"
    "          AND t.lease = p_leases[u.i::integer] AND t.lease_expires_ms >= p_now_ms END\n"
    "          AND j.replicas = 1 AND s.state = 'queued' AND s.expect IS NULL) y\n"
    "        WHERE y.r1 = 1 AND y.r2 = 1 AND NOT EXISTS (SELECT 1 FROM tasks o\n"
    "          WHERE o.shard_id = y.shard AND o.id <> y.tid\n"
    "          AND o.state IN ('done', 'queued', 'leased'))),\n"
    "      v AS (UPDATE tasks t SET state = 'valid', result_sha = p_shas[c.i],\n"
    "          elapsed_ms = p_elapsed[c.i], finished_at = p_unix, lease = NULL FROM c\n"
    "        WHERE t.id = c.tid AND CASE WHEN t.state = 'leased' THEN t.provider = p_owners[c.i]\n"
    "          AND t.lease = p_leases[c.i] AND t.lease_expires_ms >= p_now_ms END\n"
    "        RETURNING c.i, c.tid, c.shard, c.job, c.dev, c.jowner)\n"
    "    SELECT coalesce(array_agg(v.i ORDER BY v.i), '{}'), array_agg(v.tid ORDER BY v.i),\n"
    "      array_agg(v.shard ORDER BY v.i), array_agg(v.job ORDER BY v.i),\n"
    "      array_agg(v.dev ORDER BY v.i), array_agg(v.jowner ORDER BY v.i)\n"
    "      INTO v_fi, v_ft, v_fs, v_fj, v_fd, v_fo FROM v;\n",
    "    IF cardinality(v_fi) > 0 THEN\n"
    "      UPDATE shards SET state = 'validated', result_sha = p_shas[f.i]\n"
    "        FROM unnest(v_fi, v_fs) AS f(i, id) WHERE shards.id = f.id AND shards.state = 'queued';\n"
    "      GET DIAGNOSTICS v_ins = ROW_COUNT;\n"
    "      IF v_ins <> cardinality(v_fi) THEN\n"
    "        RAISE EXCEPTION USING ERRCODE = 'SY001';\n"
    "      END IF;\n"
    "      PERFORM 1 FROM devices WHERE id = ANY(v_fd) ORDER BY id FOR UPDATE;\n"
    "      INSERT INTO blobs (sha, bytes, data) SELECT DISTINCT ON (p_shas[f.i]) p_shas[f.i],\n"
    "          p_lens[f.i], substring(p_data FROM (p_offs[f.i] + 1)::integer FOR p_lens[f.i]::integer)\n"
    "        FROM unnest(v_fi) AS f(i) ORDER BY p_shas[f.i] ON CONFLICT (sha) DO NOTHING;\n"
    /* each device's n-th item is paid at its reputation before the call
     * plus n - 1 (one point per validated replica, up to 100) */
    "      WITH f AS (SELECT * FROM unnest(v_fi, v_ft, v_fj, v_fd) AS f(i, id, job, dev)),\n"
    "        ins AS (INSERT INTO ledger (task_id, job_id, provider, device_id, amount, created_at)\n"
    "          SELECT f.id, f.job, p_owners[f.i], f.dev, p_pay[CASE WHEN d.id IS NULL THEN 0\n"
    "            ELSE least(100, d.reputation + (row_number() OVER (PARTITION BY f.dev\n"
    "            ORDER BY f.i))::integer - 1) END + 1], p_unix\n"
    "          FROM f LEFT JOIN devices d ON d.id = f.dev\n"
    "          ON CONFLICT (task_id) DO NOTHING RETURNING job_id),\n"
    "        paid AS (SELECT job_id AS job, count(*) AS n FROM ins GROUP BY job_id),\n"
    "        done AS (SELECT job, count(*) AS n FROM f GROUP BY job)\n"
    "      SELECT array_agg(done.job), array_agg(coalesce(paid.n, 0) * p_price), array_agg(done.n)\n"
    "        INTO v_pj, v_pc, v_pd FROM done LEFT JOIN paid ON paid.job = done.job;\n"
    "      UPDATE devices SET reputation = CASE WHEN reputation + f.n > 100 THEN 100\n"
    "        WHEN reputation + f.n < 0 THEN 0 ELSE reputation + f.n END\n"
    "        FROM (SELECT dev, count(*)::integer AS n FROM unnest(v_fd) AS u(dev) GROUP BY dev) f\n"
    "        WHERE devices.id = f.dev AND reputation < 100;\n"
    "      INSERT INTO blob_owners (sha, owner) SELECT DISTINCT p_shas[f.i], f.o\n"
    "        FROM unnest(v_fi, v_fo) AS f(i, o) ON CONFLICT (sha, owner) DO NOTHING;\n",
    "      UPDATE shard_inputs SET sha = p_shas[f.i] FROM unnest(v_fi, v_fs) AS f(i, id)\n"
    "        WHERE from_shard = f.id;\n"
    "      UPDATE tasks SET state = 'queued' WHERE state = 'waiting' AND shard_id IN\n"
    "        (SELECT shard_id FROM shard_inputs WHERE from_shard = ANY(v_fs)) AND NOT EXISTS\n"
    "        (SELECT 1 FROM shard_inputs i WHERE i.shard_id = tasks.shard_id AND i.sha = '');\n"
    "      v_jobs := v_pj; v_costs := v_pc; v_dones := v_pd;\n"
    "    END IF;\n"
    "  EXCEPTION WHEN OTHERS THEN\n"
    "    v_fi := '{}'; v_jobs := '{}'; v_costs := '{}'; v_dones := '{}';\n"
    "  END;\n"
    "  FOR v_j IN 1 .. cardinality(v_fi) LOOP\n"
    "    o_k := v_fi[v_j]; o_task := v_ft[v_j]; o_rc := 0; o_verdict := 1; o_job := 0;\n"
    "    RETURN NEXT;\n"
    "  END LOOP;\n"
    /* the others, item by item */
    "  FOR k IN SELECT u.i FROM unnest(p_tasks) WITH ORDINALITY AS u(id, i)\n"
    "      LEFT JOIN tasks t ON t.id = u.id WHERE u.i <> ALL(v_fi)\n"
    "      ORDER BY t.device_id, u.i LOOP\n"
    "    o_k := k; o_task := p_tasks[k]; o_rc := 0; o_verdict := 0; o_job := 0;\n"
    "    v_cost := 0; v_done := 0; v_job := 0;\n"
    "    BEGIN\n"
    "      SELECT state, provider, lease, lease_expires_ms, shard_id, job_id INTO v_t\n"
    "        FROM tasks WHERE id = p_tasks[k] FOR UPDATE;\n"
    "      IF NOT FOUND OR v_t.provider IS DISTINCT FROM p_owners[k] THEN\n"
    "        o_rc := 1;\n"
    "      ELSIF v_t.state <> 'leased' OR p_leases[k] IS NULL\n"
    "            OR coalesce(v_t.lease, '') <> p_leases[k] THEN\n"
    "        o_rc := 2;\n"
    "      ELSIF v_t.lease_expires_ms < p_now_ms THEN\n"
    "        o_rc := 3;\n"
    "      ELSE\n"
    "        INSERT INTO blobs (sha, bytes, data) VALUES (p_shas[k], p_lens[k],\n"
    "          substring(p_data FROM (p_offs[k] + 1)::integer FOR p_lens[k]::integer)) ON CONFLICT (sha) DO NOTHING;\n"
    "        SELECT s.expect, s.tasks, s.state, j.replicas, COALESCE(s.kernel, j.kernel) AS kernel,\n"
    "          j.owner, j.id AS job INTO v_s FROM shards s JOIN jobs j ON j.id = s.job_id\n"
    "          WHERE s.id = v_t.shard_id FOR UPDATE OF s;\n"
    "        IF NOT FOUND OR v_s.expect IS NOT NULL THEN\n"
    "          RAISE EXCEPTION USING ERRCODE = 'SY001';\n"
    "        END IF;\n"
    /* one replica: its result is the majority, the task valid at once (one
     * row version and its index entries fewer than done, then valid) */
    "        v_one := v_s.replicas = 1 AND v_s.state = 'queued';\n"
    "        UPDATE tasks SET state = CASE WHEN v_one THEN 'valid' ELSE 'done' END,\n"
    "          result_sha = p_shas[k], elapsed_ms = p_elapsed[k],\n"
    "          finished_at = p_unix, lease = NULL WHERE id = p_tasks[k];\n"
    "        IF v_one THEN\n"
    "          v_win := p_shas[k];\n"
    "        ELSIF v_s.state = 'queued' THEN\n"
    "          IF v_s.kernel IN ('sgemm', 'spotrf') AND (SELECT count(DISTINCT result_sha)\n"
    "              FROM tasks WHERE shard_id = v_t.shard_id AND state = 'done') > 1 THEN\n"
    "            RAISE EXCEPTION USING ERRCODE = 'SY001';\n"
    "          END IF;\n"
    "          SELECT result_sha INTO v_win FROM tasks WHERE shard_id = v_t.shard_id\n"
    "            AND state = 'done' GROUP BY result_sha HAVING count(*) >= v_s.replicas / 2 + 1\n"
    "            LIMIT 1;\n"
    "        END IF;\n"
    "        IF v_s.state = 'queued' THEN\n"
    "          IF v_win IS NULL THEN\n"
    "            IF NOT EXISTS (SELECT 1 FROM tasks WHERE shard_id = v_t.shard_id\n"
    "                           AND state IN ('queued', 'leased')) THEN\n"
    "              RAISE EXCEPTION USING ERRCODE = 'SY001';\n"
    "            END IF;\n"
    "          ELSE\n"
    "            FOR v_d IN SELECT id, result_sha, device_id, provider FROM tasks\n"
    "                WHERE shard_id = v_t.shard_id AND (state = 'done'\n"
    "                OR (v_one AND id = p_tasks[k])) ORDER BY id LOOP\n"
    "              IF v_d.result_sha = v_win THEN\n"
    "                v_rep := NULL;\n",
    "                SELECT reputation INTO v_rep FROM devices WHERE id = v_d.device_id;\n"
    "                IF NOT v_one OR v_d.id <> p_tasks[k] THEN\n"
    "                  UPDATE tasks SET state = 'valid' WHERE id = v_d.id;\n"
    "                END IF;\n"
    "                INSERT INTO ledger (task_id, job_id, provider, device_id, amount, created_at)\n"
    "                  VALUES (v_d.id, v_s.job, v_d.provider, v_d.device_id,\n"
    "                          p_pay[coalesce(v_rep, 0) + 1], p_unix)\n"
    "                  ON CONFLICT (task_id) DO NOTHING;\n"
    "                GET DIAGNOSTICS v_ins = ROW_COUNT;\n"
    "                IF v_ins > 0 THEN v_cost := v_cost + p_price; END IF;\n"
    "                UPDATE devices SET reputation = CASE WHEN reputation + 1 > 100 THEN 100\n"
    "                  WHEN reputation + 1 < 0 THEN 0 ELSE reputation + 1 END\n"
    "                  WHERE id = v_d.device_id AND reputation < 100;\n"
    "                IF v_d.id = p_tasks[k] THEN o_verdict := 1; END IF;\n"
    "              ELSE\n"
    "                UPDATE tasks SET state = 'invalid' WHERE id = v_d.id;\n"
    "                INSERT INTO events (at, kind, subject, detail) VALUES (p_unix,\n"
    "                  'result-invalid', 't-' || v_d.id, 'disagrees with the accepted result');\n"
    "                UPDATE devices SET reputation = CASE WHEN reputation - 5 > 100 THEN 100\n"
    "                  WHEN reputation - 5 < 0 THEN 0 ELSE reputation - 5 END\n"
    "                  WHERE id = v_d.device_id;\n"
    "                IF v_d.id = p_tasks[k] THEN o_verdict := -1; END IF;\n"
    "              END IF;\n"
    "            END LOOP;\n"
    "            UPDATE tasks SET state = 'cancelled', lease = NULL WHERE shard_id = v_t.shard_id\n"
    "              AND state IN ('queued', 'leased');\n"
    "            UPDATE shards SET state = 'validated', result_sha = v_win WHERE id = v_t.shard_id;\n"
    "            INSERT INTO blob_owners (sha, owner) VALUES (v_win, v_s.owner)\n"
    "              ON CONFLICT (sha, owner) DO NOTHING;\n"
    "            UPDATE shard_inputs SET sha = v_win WHERE from_shard = v_t.shard_id;\n"
    "            UPDATE tasks SET state = 'queued' WHERE state = 'waiting' AND shard_id IN\n"
    "              (SELECT shard_id FROM shard_inputs WHERE from_shard = v_t.shard_id) AND NOT EXISTS\n"
    "              (SELECT 1 FROM shard_inputs i WHERE i.shard_id = tasks.shard_id AND i.sha = '');\n"
    "            v_done := 1;\n"
    "          END IF;\n"
    "        END IF;\n"
    "        v_job := v_s.job;\n"
    "      END IF;\n"
    "    EXCEPTION WHEN OTHERS THEN\n"
    "      o_rc := 9; o_verdict := 0; v_cost := 0; v_done := 0; v_job := 0;\n"
    "    END;\n"
    "    IF v_job <> 0 AND (v_cost <> 0 OR v_done <> 0) THEN\n"
    "      v_j := array_position(v_jobs, v_job);\n"
    "      IF v_j IS NULL THEN\n"
    "        v_jobs := v_jobs || v_job; v_costs := v_costs || v_cost; v_dones := v_dones || v_done;\n"
    "      ELSE\n"
    "        v_costs[v_j] := v_costs[v_j] + v_cost; v_dones[v_j] := v_dones[v_j] + v_done;\n"
    "      END IF;\n"
    "    END IF;\n"
    "    RETURN NEXT;\n"
    "  END LOOP;\n"
    "  FOR v_j IN 1 .. coalesce(array_length(v_jobs, 1), 0) LOOP\n"
    "    INSERT INTO job_counts (job_id, slot, cost, done)\n"
    "      VALUES (v_jobs[v_j], p_slot, v_costs[v_j], v_dones[v_j])\n",
    "      ON CONFLICT (job_id, slot) DO UPDATE SET cost = job_counts.cost + excluded.cost,\n"
    "      done = job_counts.done + excluded.done;\n"
    "    IF v_dones[v_j] > 0 THEN\n"
    "      o_k := 0; o_task := 0; o_rc := 0; o_verdict := 0; o_job := v_jobs[v_j]; RETURN NEXT;\n"
    "    END IF;\n"
    "  END LOOP;\n"
    "END\n"
    "$f$;",
    NULL};

int synor__ns_pg_script(synor_netstore *s, const char *const *parts)
{
    synor__buf b;
    synor__buf_init(&b);
    for (size_t i = 0; parts[i]; i++)
        synor__buf_puts(&b, parts[i]);
    char *sql = synor__buf_take(&b);
    if (!sql)
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    int e = s->ops->script(s->db, sql);
    synor__free(sql);
    return e;
}

int synor__ns_pg_functions(synor_netstore *s)
{
    return synor__ns_pg_script(s, results_fn);
}

/* A PostgreSQL array literal element: NULL, or a quoted string. */
void synor__ns_pg_quoted(synor__buf *b, const char *v)
{
    if (!v) {
        synor__buf_puts(b, "NULL");
        return;
    }
    synor__buf_append(b, "\"", 1);
    for (; *v; v++) {
        if (*v == '"' || *v == '\\')
            synor__buf_append(b, "\\", 1);
        synor__buf_append(b, v, 1);
    }
    synor__buf_append(b, "\"", 1);
}

typedef struct results_req {
    ns_creq base; /* rc: 0, or negative when nothing was done */
    const char *owner;
    result_args *a;
    size_t m;
    int *rc;
    char (*msg)[256];
    int *redo;
} results_req;

/* The most items one combined call takes (each is a subtransaction:
 * PostgreSQL keeps 64 per transaction in shared memory); one request of
 * more goes alone. */
#define RESULTS_CAP 48

/* The items of the batch's requests in one call of synor_results2 on a
 * pooled connection, its own transaction. */
static void run_results(synor_netstore *s, ns_creq *batch)
{
    static const char call[] =
        "SELECT o_k, o_task, o_rc, o_verdict, o_job FROM synor_results2($1, $2, $3, $4, $5, $6,"
        " $7, $8, $9, $10, $11, $12, $13)";
    synor__buf ow, tk, ls, sh, ln, of, el, pay, data;
    synor__buf *all[] = {&ow, &tk, &ls, &sh, &ln, &of, &el, &pay, &data};
    enum { NTXT = 8 };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        synor__buf_init(all[i]);
    char num[32];
    size_t total = 0;
    for (ns_creq *o = batch; o; o = o->next) {
        results_req *q = (results_req *)o;
        for (size_t k = 0; k < q->m; k++, total++) {
            const char *sep = total ? "," : "{";
            for (size_t i = 0; i < 7; i++)
                synor__buf_puts(all[i], sep);
            synor__ns_pg_quoted(&ow, q->owner);
            snprintf(num, sizeof num, "%lld", (long long)q->a[k].task);
            synor__buf_puts(&tk, num);
            synor__ns_pg_quoted(&ls, q->a[k].lease);
            synor__ns_pg_quoted(&sh, q->a[k].sha);
            snprintf(num, sizeof num, "%zu", q->a[k].n);
            synor__buf_puts(&ln, num);
            snprintf(num, sizeof num, "%zu", data.len);
            synor__buf_puts(&of, num);
            snprintf(num, sizeof num, "%lld", (long long)q->a[k].elapsed_ms);
            synor__buf_puts(&el, num);
            synor__buf_append(&data, q->a[k].data, q->a[k].n);
        }
    }
    for (size_t i = 0; i < 7; i++)
        synor__buf_puts(all[i], total ? "}" : "{}");
    for (uint32_t r = 0; r <= 100; r++) {
        uint32_t bp = synor_rewards_reputation_bp(s->policy, r);
        snprintf(num, sizeof num, "%s%lld", r ? "," : "{",
                 (long long)((ns_i128)s->o.task_price * bp / 20000));
        synor__buf_puts(&pay, num);
    }
    synor__buf_puts(&pay, "}");
    /* the literals as strings (NULL when an append failed) */
    char *txt[NTXT];
    int e = data.failed ? synor__error(SYNOR_ENOMEM, "netstore: out of memory") : 0;
    for (size_t i = 0; i < NTXT; i++)
        if (!(txt[i] = synor__buf_take(all[i])) && !e)
            e = synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    if (!e)
        e = synor__ns_pool_get(s);
    nsres r = {0};
    if (!e) {
        int64_t slot = s->slot_base + (int64_t)(synor__ns_tls_conn - s->pool);
        nsparam p[] = {NS_T(txt[0]),
                       NS_T(txt[1]),
                       NS_T(txt[2]),
                       NS_T(txt[3]),
                       NS_T(txt[4]),
                       NS_T(txt[5]),
                       NS_B(data.data ? (const void *)data.data : "", data.len),
                       NS_T(txt[6]),
                       NS_I(synor__ns_now_ms()),
                       NS_I(time(NULL)),
                       NS_I(s->o.task_price),
                       NS_T(txt[7]),
                       NS_I(slot)};
        /* no BEGIN: the statement is its own transaction */
        e = synor__ns_exec(s, call, p, 13, &r, NULL);
        if (!e && r.rows < total) {
            synor__nsres_free(&r);
            e = synor__error(SYNOR_EIO, "netstore: synor_results2 answered too few rows");
        }
        if (!e) {
            /* the jobs that had shards validated: finished? (after the commit) */
            ns_deltas *d = synor__ns_deltas(s);
            d->n = 0;
            for (size_t i = 0; i < r.rows && !e; i++)
                if (!synor__nsres_int(&r, i, 0) && synor__nsres_int(&r, i, 4))
                    e = synor__ns_job_delta(s, synor__nsres_int(&r, i, 4), 0, 1);
            synor__ns_pool_done(s, d);
            e = 0; /* the commit happened: a failed check is the reaper's */
        }
        synor__ns_pool_put(s);
    }
    for (size_t i = 0; i < NTXT; i++)
        synor__free(txt[i]);
    synor__buf_free(&data);
    /* each item's row: the one whose o_k is its place in the call */
    int *at = e ? NULL : synor__calloc(total ? total : 1, sizeof *at);
    if (!e && !at)
        e = synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    for (size_t i = 0; i < total && at; i++)
        at[i] = -1;
    for (size_t i = 0; i < r.rows && at; i++) {
        int64_t k = synor__nsres_int(&r, i, 0);
        if (k >= 1 && (size_t)k <= total)
            at[k - 1] = (int)i;
    }
    size_t base = 0;
    for (ns_creq *o = batch; o; o = o->next) {
        results_req *q = (results_req *)o;
        o->rc = e;
        if (e) {
            synor__strlcpy(o->msg, synor_errmsg(), sizeof o->msg);
            continue;
        }
        for (size_t k = 0; k < q->m; k++) {
            int row = at[base + k];
            int code = row < 0 ? 9 : (int)synor__nsres_int(&r, (size_t)row, 2);
            int v = row < 0 ? 0 : (int)synor__nsres_int(&r, (size_t)row, 3);
            long long t = (long long)q->a[k].task;
            const char *lease = q->a[k].lease ? q->a[k].lease : "";
            q->redo[k] = code == 9;
            q->rc[k] = code ? SYNOR_ESTATE : 0;
            q->msg[k][0] = 0;
            if (code == 1)
                snprintf(q->msg[k], sizeof q->msg[k], "task t-%lld is not leased to you", t);
            else if (code == 2)
                snprintf(q->msg[k], sizeof q->msg[k],
                         "task t-%lld: lease '%s' is not the task's live lease", t, lease);
            else if (code == 3)
                snprintf(q->msg[k], sizeof q->msg[k], "task t-%lld: lease %s expired", t, lease);
            if (!code)
                *q->a[k].verdict = v > 0   ? SYNOR_NET_VALIDATED
                                   : v < 0 ? SYNOR_NET_REJECTED
                                           : SYNOR_NET_PENDING;
        }
        base += q->m;
    }
    synor__free(at);
    synor__nsres_free(&r);
}

int synor__ns_results_pg(synor_netstore *s, const char *owner, result_args *a, size_t m,
                         int *rc, char (*msg)[256], int *redo)
{
    results_req q = {.base = {.weight = m},
                     .owner = owner,
                     .a = a,
                     .m = m,
                     .rc = rc,
                     .msg = msg,
                     .redo = redo};
    synor__ns_combine(s, &s->cresults, &q.base, RESULTS_CAP, run_results);
    if (q.base.rc < 0)
        return synor__error(q.base.rc, "%s", q.base.msg);
    return 0;
}
