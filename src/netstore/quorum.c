/* quorum.c - deciding a shard from its replicas' results, and paying.
 *
 * The rule: a shard's result is accepted when a strict majority of its N
 * configured replicas (floor(N/2) + 1) agree. Agreement is bytewise, except
 * for kernels whose output is float32 ("sgemm", "spotrf"), where two results
 * agree when they have the same length and every element pair satisfies
 * |a - b| <= 1e-4 x max(1, |a|, |b|) (docs/NETWORK.md). Validation happens
 * the moment a group reaches the majority, so at most N results of a shard
 * are ever paid, and the job's cost stays within shards x N x price. When
 * every replica has reported and no group has the majority, one more
 * replica is queued, up to 2N + 1 in all; then the shard and its job fail.
 *
 * A shard with a known answer (an operator's spot check) judges each task
 * alone against that answer.
 *
 * Paying: one ledger row per validated task, keyed by the task (UNIQUE), so
 * a retried transaction cannot pay twice; the amount is the task price x
 * the device's reputation multiplier (the rewards policy's curve) / 2. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "netstore/db.h"

__extension__ typedef __int128 ns_i128;

static int is_f32_kernel(const char *k) { return !strcmp(k, "sgemm") || !strcmp(k, "spotrf"); }

static int f32_agree(const nscell *a, const nscell *b)
{
    if (a->len != b->len || a->len % 4)
        return 0;
    for (size_t i = 0; i < a->len; i += 4) {
        float x, y;
        memcpy(&x, a->p + i, 4);
        memcpy(&y, b->p + i, 4);
        if (isnan(x) || isnan(y)) {
            if (!(isnan(x) && isnan(y)))
                return 0;
            continue;
        }
        double m = fmax(1.0, fmax(fabs((double)x), fabs((double)y)));
        if (!(fabs((double)x - (double)y) <= 1e-4 * m))
            return 0;
    }
    return 1;
}

/* Whether results with SHA-256 a and b agree for kernel. */
static int agree(synor_netstore *s, const char *kernel, const char *a, const char *b, int *out)
{
    if (!strcmp(a, b) || !is_f32_kernel(kernel)) {
        *out = !strcmp(a, b);
        return 0;
    }
    static const char get[] = "SELECT data FROM blobs WHERE sha = $1";
    nsres ra, rb;
    nsparam pa[] = {NS_T(a)}, pb[] = {NS_T(b)};
    int e = synor__ns_exec(s, get, pa, 1, &ra, NULL);
    if (e)
        return e;
    if ((e = synor__ns_exec(s, get, pb, 1, &rb, NULL))) {
        synor__nsres_free(&ra);
        return e;
    }
    *out = ra.rows && rb.rows && f32_agree(&ra.cells[0], &rb.cells[0]);
    synor__nsres_free(&ra);
    synor__nsres_free(&rb);
    return 0;
}

/* A device's reputation moves by delta within 0..100 (not written when it
 * is at the bound already: a write fewer, and no row lock). */
static int adjust(synor_netstore *s, int64_t device, int delta)
{
    static const char sql[] =
        "UPDATE devices SET reputation = CASE WHEN reputation + $1 > 100 THEN 100"
        " WHEN reputation + $1 < 0 THEN 0 ELSE reputation + $1 END WHERE id = $2"
        " AND NOT ((reputation >= 100 AND $1 >= 0) OR (reputation <= 0 AND $1 <= 0))";
    nsparam p[] = {NS_I(delta), NS_I(device)};
    return synor__ns_exec(s, sql, p, 2, NULL, NULL);
}

/* Marks a task valid, pays its device (once) and charges its job. */
static int credit(synor_netstore *s, int64_t task, int64_t job, int64_t device, const char *provider)
{
    static const char rep[] = "SELECT reputation FROM devices WHERE id = $1";
    static const char valid[] = "UPDATE tasks SET state = 'valid' WHERE id = $1";
    static const char pay[] = "INSERT INTO ledger (task_id, job_id, provider, device_id, amount,"
                              " created_at) VALUES ($1, $2, $3, $4, $5, $6)"
                              " ON CONFLICT (task_id) DO NOTHING";
    nsparam pd[] = {NS_I(device)};
    nsres r;
    int e = synor__ns_exec(s, rep, pd, 1, &r, NULL);
    if (e)
        return e;
    uint32_t reputation = r.rows ? (uint32_t)synor__nsres_int(&r, 0, 0) : 0;
    synor__nsres_free(&r);
    uint32_t bp = synor_rewards_reputation_bp(s->policy, reputation);
    int64_t amount = (int64_t)((ns_i128)s->o.task_price * bp / 20000);
    nsparam pt[] = {NS_I(task)};
    if ((e = synor__ns_exec(s, valid, pt, 1, NULL, NULL)))
        return e;
    nsparam pp[] = {NS_I(task), NS_I(job), NS_T(provider), NS_I(device), NS_I(amount),
                    NS_I(time(NULL))};
    int64_t ch = 0;
    if ((e = synor__ns_exec(s, pay, pp, 6, NULL, &ch)))
        return e;
    if (ch && (e = synor__ns_job_delta(s, job, s->o.task_price, 0)))
        return e;
    return adjust(s, device, +1);
}

static int reject(synor_netstore *s, int64_t task, int64_t device, int penalty)
{
    static const char bad[] = "UPDATE tasks SET state = 'invalid' WHERE id = $1";
    nsparam pt[] = {NS_I(task)};
    int e = synor__ns_exec(s, bad, pt, 1, NULL, NULL);
    char subj[32];
    snprintf(subj, sizeof subj, "t-%lld", (long long)task);
    if (!e)
        e = synor__ns_event(s, "result-invalid", subj, "disagrees with the accepted result");
    return e ? e : adjust(s, device, -penalty);
}

int synor__ns_quorum(synor_netstore *s, int64_t shard, int64_t task, int *verdict)
{
    static const char get[] =
        "SELECT s.expect, s.tasks, s.state, j.replicas, COALESCE(s.kernel, j.kernel), j.owner, j.id"
        " FROM shards s JOIN jobs j ON j.id = s.job_id WHERE s.id = $1 %LOCK_S%";
    static const char done[] = "SELECT id, result_sha, device_id, provider FROM tasks"
                               " WHERE shard_id = $1 AND state = 'done' ORDER BY id";
    nsparam ps[] = {NS_I(shard)};
    nsres sh, d = {0};
    *verdict = 0;
    int e = synor__ns_exec(s, get, ps, 1, &sh, NULL);
    if (e)
        return e;
    if (!sh.rows) {
        synor__nsres_free(&sh);
        return synor__error(SYNOR_ENOENT, "netstore: no shard %lld", (long long)shard);
    }
    char kernel[32], owner[64];
    synor__strlcpy(kernel, synor__nsres_text(&sh, 0, 4), sizeof kernel);
    synor__strlcpy(owner, synor__nsres_text(&sh, 0, 5), sizeof owner);
    int64_t made = synor__nsres_int(&sh, 0, 1), replicas = synor__nsres_int(&sh, 0, 3);
    int64_t job = synor__nsres_int(&sh, 0, 6);
    int spot = !synor__nsres_null(&sh, 0, 0);
    char expect[65];
    synor__strlcpy(expect, synor__nsres_text(&sh, 0, 0), sizeof expect);
    int open = !strcmp(synor__nsres_text(&sh, 0, 2), "queued");
    synor__nsres_free(&sh);
    if (!open)
        return 0; /* decided already (cannot happen: its leases ended then) */
    if ((e = synor__ns_exec(s, done, ps, 1, &d, NULL)))
        return e;
    size_t n = d.rows;
    if (spot) {
        for (size_t i = 0; i < n && !e; i++) {
            int ok = 0;
            int64_t t = synor__nsres_int(&d, i, 0), dev = synor__nsres_int(&d, i, 2);
            e = agree(s, kernel, synor__nsres_text(&d, i, 1), expect, &ok);
            if (!e)
                e = ok ? credit(s, t, job, dev, synor__nsres_text(&d, i, 3)) : reject(s, t, dev, 10);
            if (t == task)
                *verdict = ok ? 1 : -1;
        }
        synor__nsres_free(&d);
        return e;
    }
    /* group the results: group[i] is the first result i agrees with */
    size_t *group = synor__calloc(n ? n : 1, sizeof *group), *size = synor__calloc(n ? n : 1, sizeof *size);
    if (!group || !size) {
        synor__free(group);
        synor__free(size);
        synor__nsres_free(&d);
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    }
    size_t need = (size_t)replicas / 2 + 1, winner = n;
    for (size_t i = 0; i < n && !e; i++) {
        group[i] = i;
        for (size_t k = 0; k < i; k++) {
            if (group[k] != k)
                continue;
            int ok = 0;
            if ((e = agree(s, kernel, synor__nsres_text(&d, i, 1), synor__nsres_text(&d, k, 1), &ok)))
                break;
            if (ok) {
                group[i] = k;
                break;
            }
        }
        if (++size[group[i]] >= need && winner == n)
            winner = group[i];
    }
    if (!e && winner < n) {
        static const char rest[] = "UPDATE tasks SET state = 'cancelled', lease = NULL"
                                   " WHERE shard_id = $1 AND state IN ('queued', 'leased')";
        static const char ok_shard[] = "UPDATE shards SET state = 'validated', result_sha = $1"
                                       " WHERE id = $2";
        static const char feed[] = "UPDATE shard_inputs SET sha = $1 WHERE from_shard = $2";
        static const char wake[] =
            "UPDATE tasks SET state = 'queued' WHERE state = 'waiting' AND shard_id IN"
            " (SELECT shard_id FROM shard_inputs WHERE from_shard = $1) AND NOT EXISTS"
            " (SELECT 1 FROM shard_inputs i WHERE i.shard_id = tasks.shard_id AND i.sha = '')";
        static const char own[] = "INSERT INTO blob_owners (sha, owner) VALUES ($1, $2)"
                                  " ON CONFLICT (sha, owner) DO NOTHING";
        const char *sha = synor__nsres_text(&d, winner, 1);
        for (size_t i = 0; i < n && !e; i++) {
            int64_t t = synor__nsres_int(&d, i, 0), dev = synor__nsres_int(&d, i, 2);
            int ok = group[i] == winner;
            e = ok ? credit(s, t, job, dev, synor__nsres_text(&d, i, 3)) : reject(s, t, dev, 5);
            if (t == task)
                *verdict = ok ? 1 : -1;
        }
        nsparam pv[] = {NS_T(sha), NS_I(shard)}, po[] = {NS_T(sha), NS_T(owner)};
        if (!e)
            e = synor__ns_exec(s, rest, ps, 1, NULL, NULL);
        if (!e)
            e = synor__ns_exec(s, ok_shard, pv, 2, NULL, NULL);
        if (!e)
            e = synor__ns_exec(s, own, po, 2, NULL, NULL);
        /* later stages' inputs: this result; their tasks with every input
         * known are queued, in this same commit */
        if (!e)
            e = synor__ns_exec(s, feed, pv, 2, NULL, NULL);
        if (!e)
            e = synor__ns_exec(s, wake, ps, 1, NULL, NULL);
        /* the job's counters move at the commit (group.c): not on its row per result */
        if (!e)
            e = synor__ns_job_delta(s, job, 0, 1);
    } else if (!e) {
        static const char live[] = "SELECT count(*) FROM tasks WHERE shard_id = $1"
                                   " AND state IN ('queued', 'leased')";
        static const char more[] = "INSERT INTO tasks (job_id, shard_id, state) VALUES ($1, $2, 'queued')";
        static const char bump[] = "UPDATE shards SET tasks = tasks + 1 WHERE id = $1";
        nsres l;
        e = synor__ns_exec(s, live, ps, 1, &l, NULL);
        int64_t pending = e ? 1 : synor__nsres_int(&l, 0, 0);
        if (!e)
            synor__nsres_free(&l);
        if (!e && !pending) {
            if (made < 2 * replicas + 1) {
                nsparam pm[] = {NS_I(job), NS_I(shard)};
                e = synor__ns_exec(s, more, pm, 2, NULL, NULL);
                if (!e)
                    e = synor__ns_exec(s, bump, ps, 1, NULL, NULL);
            } else {
                char why[128];
                snprintf(why, sizeof why, "shard %lld: no %zu of %lld results agreed",
                         (long long)shard, need, (long long)made);
                e = synor__ns_fail_job(s, shard, job, why);
            }
        }
    }
    synor__free(group);
    synor__free(size);
    synor__nsres_free(&d);
    return e;
}
