/* batch.c - the netstore's batches: a claim of several tasks in a few
 * statements whatever their number (one round trip for the pick on
 * PostgreSQL), and several results applied in one group commit, each item
 * on its own (a refused one changes nothing, the others apply). */
#include <stdio.h>
#include <string.h>

#include "json/json.h"
#include "netstore/db.h"

/* The claims of one lease from a claim's rows into c[0..*n) (at most
 * max): PostgreSQL's rows of r (in NULL) carry a task's inputs and
 * checkpoint, its columns from off on; SQLite's (off 0) have the inputs in
 * in. On an error the claims filled so far stay for the caller to free. */
int synor__ns_claims_fill(synor_netstore *s, const nsres *r, const nsres *in, size_t off,
                          const char *lease, size_t max, synor_net_claim *c, size_t *n)
{
    int pg = in == NULL, e = 0;
    *n = 0;
    size_t k = 0; /* the next row of in (SQLite) */
    for (size_t row = 0, i = 0; row < r->rows && i < max; i++) {
        synor_net_claim *ci = &c[i];
        size_t first = row; /* the task's first row: its checkpoint's columns */
        *ci = (synor_net_claim){.task = synor__nsres_int(r, row, off + 0),
                                .job = synor__nsres_int(r, row, off + 1),
                                .expires_in = s->o.lease_timeout_s};
        synor__strlcpy(ci->lease, lease, sizeof ci->lease);
        synor__strlcpy(ci->kernel, synor__nsres_text(r, row, off + 3), sizeof ci->kernel);
        ci->params_json = synor__ns_merge_params(
            synor__nsres_text(r, row, off + 4),
            synor__nsres_null(r, row, off + 5) ? NULL : synor__nsres_text(r, row, off + 5));
        synor__buf b;
        synor__buf_init(&b);
        synor__jw w;
        synor__jw_init(&w, &b, 0);
        synor__jw_arr_begin(&w);
        /* (table, row, column) of each input: in's rows, or r's own */
        const nsres *t = pg ? r : in;
        size_t *at = pg ? &row : &k, col = pg ? off + 6 : 1;
        if (pg && synor__nsres_null(r, row, off + 6))
            row++; /* a task without inputs */
        for (; *at < t->rows && synor__nsres_int(t, *at, pg ? off : 0) == ci->task; ++*at) {
            synor__jw_obj_begin(&w);
            synor__jw_key(&w, "sha256");
            synor__jw_str(&w, synor__nsres_text(t, *at, col));
            synor__jw_key(&w, "bytes");
            synor__jw_int(&w, synor__nsres_int(t, *at, col + 1));
            synor__jw_obj_end(&w);
        }
        synor__jw_arr_end(&w);
        if (!pg)
            row++;
        ci->inputs_json = synor__buf_take(&b);
        int ck = synor__ns_checkpoint_json(r, first, pg ? off + 8 : 6, &ci->checkpoint_json);
        *n = i + 1;
        if (!ci->params_json || !ci->inputs_json || ck) {
            e = synor__error(SYNOR_ENOMEM, "netstore: task t-%lld: out of memory",
                             (long long)ci->task);
            break;
        }
    }
    return e;
}

/* Leases up to max tasks to the device in a few statements whatever max
 * is (the claim of several tasks; spot checks off): they share one lease
 * string, which names the claim. 0 with c[0..*n) filled, 1 when none. The
 * pick takes the lowest queued replica of each shard only, so one claim
 * never gives a provider two replicas of a shard. Both conditions are
 * one NOT EXISTS over the shard's tasks, so PostgreSQL looks them up by
 * shard (tasks_shard) even with statistics older than the job: with two,
 * it scanned all of the provider's or all queued tasks per candidate. */
int synor__ns_take_many(synor_netstore *s, const char *owner, int64_t device, int64_t now,
                        size_t max, synor_net_claim *c, size_t *n)
{
#define PICK                                                                                     \
    "UPDATE tasks SET state = 'leased', device_id = $1, provider = $2, lease = $3,"              \
    " lease_expires_ms = $4, attempts = attempts + 1 WHERE id IN (SELECT t.id FROM tasks t"      \
    " WHERE t.state = 'queued' AND NOT EXISTS (SELECT 1 FROM tasks u WHERE"                      \
    " u.shard_id = t.shard_id AND (u.provider = $2 OR (u.state = 'queued' AND u.id < t.id)))"    \
    " ORDER BY t.id LIMIT $5 %SKIP%)"
    /* PostgreSQL: the lease, the jobs marked running and what the agent
     * needs (a row per input, or one with NULL input columns; the
     * checkpoint in columns 8 and 9 of each) in one statement */
    static const char take_pg[] =
        "WITH c AS (" PICK " RETURNING id, job_id, shard_id, checkpoint_sha), r AS (UPDATE jobs"
        " SET state = 'running' WHERE state = 'queued' AND id IN (SELECT job_id FROM c))"
        " SELECT c.id, c.job_id, c.shard_id, COALESCE(s.kernel, j.kernel), j.params, s.params,"
        " i.sha, b.bytes, c.checkpoint_sha, cb.bytes FROM c JOIN shards s ON s.id = c.shard_id"
        " JOIN jobs j ON j.id = c.job_id"
        " LEFT JOIN (shard_inputs i JOIN blobs b ON b.sha = i.sha) ON i.shard_id = c.shard_id"
        " LEFT JOIN blobs cb ON cb.sha = c.checkpoint_sha ORDER BY c.id, i.pos";
    static const char take_lite[] = PICK;
#undef PICK
    static const char info[] =
        "SELECT t.id, t.job_id, t.shard_id, COALESCE(s.kernel, j.kernel), j.params, s.params,"
        " t.checkpoint_sha, b.bytes FROM tasks t JOIN shards s ON s.id = t.shard_id"
        " JOIN jobs j ON j.id = t.job_id LEFT JOIN blobs b ON b.sha = t.checkpoint_sha"
        " WHERE t.provider = $1 AND t.state = 'leased' AND t.lease = $2 ORDER BY t.id";
    static const char inputs[] =
        "SELECT t.id, i.sha, b.bytes FROM tasks t JOIN shard_inputs i ON i.shard_id = t.shard_id"
        " JOIN blobs b ON b.sha = i.sha WHERE t.provider = $1 AND t.state = 'leased'"
        " AND t.lease = $2 ORDER BY t.id, i.pos";
    static const char running[] =
        "UPDATE jobs SET state = 'running' WHERE state = 'queued' AND id IN (SELECT t.job_id FROM"
        " tasks t WHERE t.provider = $1 AND t.state = 'leased' AND t.lease = $2)";
    char lease[34] = "L";
    int e;
    *n = 0;
    if ((e = synor__ns_random_hex(16, lease + 1)))
        return e;
    int64_t expires = now + (int64_t)(s->o.lease_timeout_s * 1000);
    nsparam pt[] = {NS_I(device), NS_T(owner), NS_T(lease), NS_I(expires), NS_I(max)};
    nsres r, in;
    if ((e = synor__ns_exec(s, s->pg ? take_pg : take_lite, pt, 5, s->pg ? &r : NULL, NULL)))
        return e;
    nsparam pl[] = {NS_T(owner), NS_T(lease)};
    if (!s->pg && (e = synor__ns_exec(s, info, pl, 2, &r, NULL)))
        return e;
    if (!r.rows) {
        synor__nsres_free(&r);
        return 1;
    }
    if (s->pg) {
        in = (nsres){0}; /* the inputs came with r: columns 6 and 7 */
    } else if ((e = synor__ns_exec(s, running, pl, 2, NULL, NULL)) ||
               (e = synor__ns_exec(s, inputs, pl, 2, &in, NULL))) {
        synor__nsres_free(&r);
        return e;
    }
    e = synor__ns_claims_fill(s, &r, s->pg ? NULL : &in, 0, lease, max, c, n);
    synor__nsres_free(&r);
    synor__nsres_free(&in);
    if (e) {
        for (size_t i = 0; i < *n; i++)
            synor_net_claim_free(&c[i]);
        *n = 0;
        return e;
    }
    return 0;
}

int synor_netstore_results(synor_netstore *s, const char *owner, synor_net_result_item *items,
                           size_t n)
{
    if (n > SYNOR_NET_RESULTS_MAX)
        return synor__error(SYNOR_EINVAL, "results: %zu items, at most %d", n,
                            SYNOR_NET_RESULTS_MAX);
    result_args *a = synor__calloc(n ? n : 1, sizeof *a);
    void **args = synor__calloc(n ? n : 1, sizeof *args);
    int *rc = synor__calloc(n ? n : 1, sizeof *rc);
    char(*msg)[256] = synor__calloc(n ? n : 1, sizeof *msg);
    char(*sha)[65] = synor__calloc(n ? n : 1, sizeof *sha);
    size_t *slot = synor__calloc(n ? n : 1, sizeof *slot);
    if (!a || !args || !rc || !msg || !sha || !slot) {
        synor__free(a), synor__free(args), synor__free(rc), synor__free(msg), synor__free(sha);
        synor__free(slot);
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    }
    size_t m = 0; /* items whose checksum matches go to the store */
    for (size_t i = 0; i < n; i++) {
        synor_net_result_item *it = &items[i];
        it->verdict = SYNOR_NET_PENDING;
        it->error[0] = 0;
        synor__ns_sha256_hex(it->data, it->n, sha[i]);
        if (!it->sha256 || strcmp(sha[i], it->sha256)) {
            it->rc = SYNOR_EINVAL;
            snprintf(it->error, sizeof it->error,
                     "results[%zu]: field 'sha256': value '%.64s': the bytes' SHA-256 is %s", i,
                     it->sha256 ? it->sha256 : "", sha[i]);
            continue;
        }
        a[m] = (result_args){owner,    it->task, it->lease, it->data, it->n, sha[i],
                             it->elapsed_ms < 0 ? 0 : it->elapsed_ms, &it->verdict};
        args[m] = &a[m];
        slot[m++] = i;
    }
    int e = 0;
    size_t left = m; /* items for the C path, in args[0..left) */
    if (s->npool && m) {
        /* PostgreSQL: one call of synor_results; what it left, below */
        int *redo = synor__calloc(m, sizeof *redo);
        size_t *back = synor__calloc(m, sizeof *back);
        if (redo && back && !synor__ns_results_pg(s, owner, a, m, rc, msg, redo)) {
            left = 0;
            for (size_t k = 0; k < m; k++)
                if (redo[k]) {
                    args[left] = &a[k];
                    back[left++] = k;
                }
            if (left) {
                int *rc2 = synor__calloc(left, sizeof *rc2);
                char(*msg2)[256] = synor__calloc(left, sizeof *msg2);
                e = rc2 && msg2 ? synor__ns_tx_many(s, synor__ns_result_op, args, left, rc2, msg2)
                                : synor__error(SYNOR_ENOMEM, "netstore: out of memory");
                for (size_t k = 0; k < left && !e; k++) {
                    rc[back[k]] = rc2[k];
                    memcpy(msg[back[k]], msg2[k], sizeof msg2[k]);
                }
                synor__free(rc2), synor__free(msg2);
                left = 0;
            }
        } else {
            for (size_t k = 0; k < m; k++)
                args[k] = &a[k];
        }
        synor__free(redo), synor__free(back);
    }
    if (left)
        e = synor__ns_tx_many(s, synor__ns_result_op, args, left, rc, msg);
    for (size_t k = 0; k < m; k++) {
        synor_net_result_item *it = &items[slot[k]];
        it->rc = rc[k] < 0 ? rc[k] : 0;
        if (rc[k] < 0)
            snprintf(it->error, sizeof it->error, "%s", msg[k]);
    }
    synor__free(a), synor__free(args), synor__free(rc), synor__free(msg), synor__free(sha);
    synor__free(slot);
    return e;
}
