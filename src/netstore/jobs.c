/* jobs.c - jobs in the netstore: submission (shards x replicas tasks in one
 * transaction, idempotent by the consumer's ref, refused beyond the
 * budget), status, the concatenated result, cancellation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json/json.h"
#include "netstore/db.h"

__extension__ typedef __int128 ns_i128;

static int valid_sha(const char *s)
{
    if (!s || strlen(s) != 64)
        return 0;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

static int submit_tx(synor_netstore *s, const char *owner, const synor_net_job_spec *j,
                     unsigned replicas, int64_t *job_id, int64_t *n_tasks, int *existing)
{
    if (j->ref) {
        static const char find[] = "SELECT id, replicas FROM jobs WHERE owner = $1 AND ref = $2";
        nsparam p[] = {NS_T(owner), NS_T(j->ref)};
        nsres r;
        int e = synor__ns_exec(s, find, p, 2, &r, NULL);
        if (e)
            return e;
        if (r.rows) {
            *job_id = synor__nsres_int(&r, 0, 0);
            synor__nsres_free(&r);
            static const char cnt[] = "SELECT count(*) FROM tasks WHERE job_id = $1";
            nsparam q[] = {NS_I(*job_id)};
            if ((e = synor__ns_exec(s, cnt, q, 1, &r, NULL)))
                return e;
            *n_tasks = synor__nsres_int(&r, 0, 0);
            synor__nsres_free(&r);
            *existing = 1;
            return 0;
        }
        synor__nsres_free(&r);
    }
    /* every input must be a blob this owner stored */
    static const char has[] = "SELECT 1 FROM blob_owners WHERE sha = $1 AND owner = $2";
    for (size_t i = 0; i < j->n_shards; i++)
        for (size_t k = 0; k < j->shards[i].n_inputs; k++) {
            if (j->shards[i].from && j->shards[i].from[k] >= 0)
                continue;
            nsparam p[] = {NS_T(j->shards[i].inputs[k]), NS_T(owner)};
            nsres r;
            int e = synor__ns_exec(s, has, p, 2, &r, NULL);
            if (e)
                return e;
            size_t rows = r.rows;
            synor__nsres_free(&r);
            if (!rows)
                return synor__error(SYNOR_ENOENT,
                                    "field 'shards[%zu].inputs[%zu]': value '%s': no such blob "
                                    "(PUT /v1/blobs first)",
                                    i, k, j->shards[i].inputs[k]);
        }
    int64_t now = time(NULL);
    int spot = 0;
    for (size_t i = 0; i < j->n_shards; i++)
        spot |= j->shards[i].expect != NULL;
    static const char ins_job[] =
        "INSERT INTO jobs (owner, name, kernel, params, replicas, deadline_at, budget, ref, state,"
        " spot, created_at, shards_left) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'queued', $9, $10,"
        " $11) RETURNING id";
    nsparam pj[] = {NS_T(owner),
                    NS_T(j->name ? j->name : ""),
                    NS_T(j->kernel),
                    NS_T(j->params_json ? j->params_json : "{}"),
                    NS_I(replicas),
                    NS_I(j->deadline_s > 0 ? now + (int64_t)(j->deadline_s + 0.999) : 0),
                    NS_I(j->budget),
                    NS_T(j->ref),
                    NS_I(spot),
                    NS_I(now),
                    NS_I(j->n_shards)};
    nsres r;
    int e = synor__ns_exec(s, ins_job, pj, 11, &r, NULL);
    if (e)
        return e;
    *job_id = synor__nsres_int(&r, 0, 0);
    synor__nsres_free(&r);
    static const char ins_shard[] =
        "INSERT INTO shards (job_id, idx, params, state, expect, tasks, stage, kernel) VALUES ($1,"
        " $2, $3, 'queued', $4, $5, $6, $7) RETURNING id";
    static const char ins_input[] =
        "INSERT INTO shard_inputs (shard_id, pos, sha, from_shard) VALUES ($1, $2, $3, $4)";
    static const char ins_task[] = "INSERT INTO tasks (job_id, shard_id, state) VALUES ($1, $2, $3)";
    /* the shards' ids, for the inputs that name an earlier shard */
    int64_t *ids = synor__calloc(j->n_shards, sizeof *ids);
    if (!ids)
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    for (size_t i = 0; i < j->n_shards && !e; i++) {
        const synor_net_shard_spec *sh = &j->shards[i];
        /* a known answer needs no quorum: one replica */
        unsigned reps = sh->expect ? 1 : replicas;
        nsparam ps[] = {NS_I(*job_id), NS_I(i),          NS_T(sh->params_json), NS_T(sh->expect),
                        NS_I(reps),    NS_I(sh->stage), NS_T(sh->kernel)};
        if ((e = synor__ns_exec(s, ins_shard, ps, 7, &r, NULL)))
            break;
        int64_t shard = ids[i] = synor__nsres_int(&r, 0, 0);
        synor__nsres_free(&r);
        int waits = 0;
        for (size_t k = 0; k < sh->n_inputs && !e; k++) {
            int from = sh->from && sh->from[k] >= 0;
            nsparam pi[] = {NS_I(shard), NS_I(k), NS_T(from ? "" : sh->inputs[k]),
                            from ? NS_I(ids[sh->from[k]]) : NS_T(NULL)};
            waits |= from;
            e = synor__ns_exec(s, ins_input, pi, 4, NULL, NULL);
        }
        for (unsigned k = 0; k < reps && !e; k++) {
            nsparam pt[] = {NS_I(*job_id), NS_I(shard), NS_T(waits ? "waiting" : "queued")};
            e = synor__ns_exec(s, ins_task, pt, 3, NULL, NULL);
            ++*n_tasks;
        }
    }
    synor__free(ids);
    if (e)
        return e;
    char subj[32], det[160];
    snprintf(subj, sizeof subj, "j-%lld", (long long)*job_id);
    snprintf(det, sizeof det, "owner %s, %zu shards, %lld tasks", owner, j->n_shards,
             (long long)*n_tasks);
    return synor__ns_event(s, "job-submitted", subj, det);
}

int synor_netstore_job_submit(synor_netstore *s, const char *owner, const synor_net_job_spec *j,
                              int64_t *job_id, int64_t *n_tasks, int *existing)
{
    *existing = 0;
    *n_tasks = 0;
    if (!j->kernel || !*j->kernel || strlen(j->kernel) > 31)
        return synor__error(SYNOR_EINVAL, "field 'kernel': value '%s': 1 to 31 characters",
                            j->kernel ? j->kernel : "");
    if (!j->n_shards || j->n_shards > 100000)
        return synor__error(SYNOR_EINVAL, "field 'shards': %zu shards (1 to 100000)", j->n_shards);
    if (j->replicas < 1 || j->replicas > 5)
        return synor__error(SYNOR_EINVAL, "field 'replicas': value '%u': 1 to 5", j->replicas);
    for (size_t i = 0; i < j->n_shards; i++) {
        const synor_net_shard_spec *sh = &j->shards[i];
        if (i && sh->stage < j->shards[i - 1].stage)
            return synor__error(SYNOR_EINVAL, "field 'shards[%zu]': stage %u after stage %u (in "
                                "stage order)", i, sh->stage, j->shards[i - 1].stage);
        if (sh->kernel && (!*sh->kernel || strlen(sh->kernel) > 31))
            return synor__error(SYNOR_EINVAL, "field 'shards[%zu].kernel': value '%s': 1 to 31 "
                                "characters", i, sh->kernel);
        if (sh->stage && sh->expect)
            return synor__error(SYNOR_EINVAL, "field 'shards[%zu].expect': not in a staged job", i);
        for (size_t k = 0; k < sh->n_inputs; k++) {
            long f = sh->from ? sh->from[k] : -1;
            if (f >= 0 && ((size_t)f >= i || j->shards[f].stage >= sh->stage))
                return synor__error(SYNOR_EINVAL, "field 'shards[%zu].inputs[%zu]': shard %ld is "
                                    "not of an earlier stage", i, k, f);
            if (f < 0 && !valid_sha(sh->inputs[k]))
                return synor__error(SYNOR_EINVAL,
                                    "field 'shards[%zu].inputs[%zu]': value '%s': not a SHA-256 "
                                    "(64 lowercase hex digits)",
                                    i, k, j->shards[i].inputs[k] ? j->shards[i].inputs[k] : "");
        }
        if (j->shards[i].expect && !valid_sha(j->shards[i].expect))
            return synor__error(SYNOR_EINVAL, "field 'shards[%zu].expect': not a SHA-256", i);
    }
    unsigned replicas = j->replicas < s->o.min_replicas ? s->o.min_replicas : j->replicas;
    /* the most the job can cost: every replica of every shard validated */
    ns_i128 most = (ns_i128)j->n_shards * replicas * s->o.task_price;
    if (most > j->budget) {
        char b[48], m[48];
        synor_rewards_format_fixed(j->budget, 6, b, sizeof b);
        synor_rewards_format_fixed(most > INT64_MAX ? INT64_MAX : (int64_t)most, 6, m, sizeof m);
        return synor__error(SYNOR_ERANGE,
                            "field 'budget': value '%s': %zu shards x %u replicas at the task "
                            "price may cost %s",
                            b, j->n_shards, replicas, m);
    }
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_begin(s, 1);
    if (!e)
        e = submit_tx(s, owner, j, replicas, job_id, n_tasks, existing);
    if (!e)
        e = synor__ns_commit(s);
    if (e) {
        synor__ns_rollback(s);
        *n_tasks = 0;
    }
    /* PostgreSQL: a big job changes the queue's statistics at once; the
     * planner, told the table is small, looks up a shard's tasks by state
     * (thousands of index entries) instead of by shard. Analyzed now, not
     * at autovacuum's next turn. A failure costs only speed. */
    if (!e && s->pg && !*existing && *n_tasks >= 256)
        (void)s->ops->script(s->db, "ANALYZE tasks, shards, shard_inputs");
    pthread_mutex_unlock(&s->mu);
    return e;
}

static void job_obj(synor__jw *w, const nsres *r, size_t i)
{
    /* columns: id, name, kernel, state, replicas, cost, budget, created_at, owner */
    char id[32], money[48];
    snprintf(id, sizeof id, "j-%lld", (long long)synor__nsres_int(r, i, 0));
    synor__jw_key(w, "id");
    synor__jw_str(w, id);
    synor__jw_key(w, "name");
    synor__jw_str(w, synor__nsres_text(r, i, 1));
    synor__jw_key(w, "kernel");
    synor__jw_str(w, synor__nsres_text(r, i, 2));
    synor__jw_key(w, "state");
    synor__jw_str(w, synor__nsres_text(r, i, 3));
    synor__jw_key(w, "replicas");
    synor__jw_int(w, synor__nsres_int(r, i, 4));
    synor__jw_key(w, "cost");
    synor__jw_str(w, synor_rewards_format_fixed(synor__nsres_int(r, i, 5), 6, money, sizeof money));
    synor__jw_key(w, "budget");
    synor__jw_str(w, synor_rewards_format_fixed(synor__nsres_int(r, i, 6), 6, money, sizeof money));
    synor__jw_key(w, "created_at");
    synor__jw_int(w, synor__nsres_int(r, i, 7));
    synor__jw_key(w, "owner");
    synor__jw_str(w, synor__nsres_text(r, i, 8));
}

/* cost: the job's own plus its striped counters' (schema v6, PostgreSQL) */
#define JOB_COLS                                                                                 \
    "id, name, kernel, state, replicas, cost + COALESCE((SELECT sum(c.cost) FROM job_counts c"   \
    " WHERE c.job_id = jobs.id), 0), budget, created_at, owner"

int synor_netstore_job_json(synor_netstore *s, const char *owner, int64_t job_id, char **json)
{
    static const char get[] = "SELECT " JOB_COLS " FROM jobs WHERE id = $1";
    static const char counts[] = "SELECT state, count(*) FROM tasks WHERE job_id = $1 GROUP BY state";
    static const char shards[] = "SELECT idx, state, result_sha, stage FROM shards WHERE job_id = $1"
                                 " ORDER BY idx";
    nsparam p[] = {NS_I(job_id)};
    nsres j = {0}, c = {0}, sh = {0};
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_begin(s, 0);
    if (!e)
        e = synor__ns_exec(s, get, p, 1, &j, NULL);
    if (!e && (!j.rows || (owner && strcmp(owner, synor__nsres_text(&j, 0, 8)))))
        e = synor__error(SYNOR_ENOENT, "no job j-%lld", (long long)job_id);
    if (!e)
        e = synor__ns_exec(s, counts, p, 1, &c, NULL);
    if (!e)
        e = synor__ns_exec(s, shards, p, 1, &sh, NULL);
    synor__ns_rollback(s);
    pthread_mutex_unlock(&s->mu);
    if (e) {
        synor__nsres_free(&j);
        synor__nsres_free(&c);
        return e;
    }
    int64_t total = 0, done = 0, failed = 0, waiting = 0;
    for (size_t i = 0; i < c.rows; i++) {
        const char *st = synor__nsres_text(&c, i, 0);
        int64_t n = synor__nsres_int(&c, i, 1);
        if (strcmp(st, "cancelled"))
            total += n;
        if (!strcmp(st, "valid"))
            done += n;
        else if (!strcmp(st, "invalid") || !strcmp(st, "failed"))
            failed += n;
        else if (!strcmp(st, "waiting"))
            waiting += n;
    }
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_obj_begin(&w);
    job_obj(&w, &j, 0);
    synor__jw_key(&w, "tasks");
    synor__jw_int(&w, total);
    synor__jw_key(&w, "done");
    synor__jw_int(&w, done);
    synor__jw_key(&w, "failed");
    synor__jw_int(&w, failed);
    synor__jw_key(&w, "waiting"); /* tasks of later stages whose inputs are not validated yet */
    synor__jw_int(&w, waiting);
    synor__jw_key(&w, "shards");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < sh.rows; i++) {
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "index");
        synor__jw_int(&w, synor__nsres_int(&sh, i, 0));
        synor__jw_key(&w, "state");
        synor__jw_str(&w, synor__nsres_text(&sh, i, 1));
        synor__jw_key(&w, "result");
        if (synor__nsres_null(&sh, i, 2))
            synor__jw_null(&w);
        else
            synor__jw_str(&w, synor__nsres_text(&sh, i, 2));
        if (synor__nsres_int(&sh, i, 3)) { /* staged jobs only: stage 0 is not shown */
            synor__jw_key(&w, "stage");
            synor__jw_int(&w, synor__nsres_int(&sh, i, 3));
        }
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    synor__nsres_free(&j);
    synor__nsres_free(&c);
    synor__nsres_free(&sh);
    *json = synor__buf_take(&b);
    return *json ? 0 : synor__error(SYNOR_ENOMEM, "netstore: out of memory");
}

int synor_netstore_jobs_json(synor_netstore *s, const char *owner, char **json)
{
    static const char all[] = "SELECT " JOB_COLS " FROM jobs ORDER BY id";
    static const char mine[] = "SELECT " JOB_COLS " FROM jobs WHERE owner = $1 ORDER BY id";
    nsparam p[] = {NS_T(owner)};
    nsres r;
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_exec(s, owner ? mine : all, p, owner ? 1 : 0, &r, NULL);
    pthread_mutex_unlock(&s->mu);
    if (e)
        return e;
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "jobs");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < r.rows; i++) {
        synor__jw_obj_begin(&w);
        job_obj(&w, &r, i);
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    synor__nsres_free(&r);
    *json = synor__buf_take(&b);
    return *json ? 0 : synor__error(SYNOR_ENOMEM, "netstore: out of memory");
}

int synor_netstore_job_result(synor_netstore *s, const char *owner, int64_t job_id, void **data,
                              size_t *n)
{
    static const char get[] = "SELECT owner, state FROM jobs WHERE id = $1";
    static const char parts[] = "SELECT b.data FROM shards s JOIN blobs b ON b.sha = s.result_sha"
                                " WHERE s.job_id = $1 AND s.stage = (SELECT max(stage) FROM shards"
                                " WHERE job_id = $1) ORDER BY s.idx";
    nsparam p[] = {NS_I(job_id)};
    nsres j = {0}, r = {0};
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_begin(s, 0);
    if (!e)
        e = synor__ns_exec(s, get, p, 1, &j, NULL);
    if (!e && (!j.rows || (owner && strcmp(owner, synor__nsres_text(&j, 0, 0)))))
        e = synor__error(SYNOR_ENOENT, "no job j-%lld", (long long)job_id);
    if (!e && strcmp(synor__nsres_text(&j, 0, 1), "done"))
        e = synor__error(SYNOR_ESTATE, "job j-%lld is %s, not done", (long long)job_id,
                         synor__nsres_text(&j, 0, 1));
    if (!e)
        e = synor__ns_exec(s, parts, p, 1, &r, NULL);
    synor__ns_rollback(s);
    pthread_mutex_unlock(&s->mu);
    synor__nsres_free(&j);
    if (e)
        return e;
    size_t total = 0;
    for (size_t i = 0; i < r.rows; i++)
        total += r.cells[i].len;
    char *out = synor__malloc(total ? total : 1);
    if (!out) {
        synor__nsres_free(&r);
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    }
    size_t at = 0;
    for (size_t i = 0; i < r.rows; i++) {
        memcpy(out + at, r.cells[i].p, r.cells[i].len);
        at += r.cells[i].len;
    }
    synor__nsres_free(&r);
    *data = out;
    *n = total;
    return 0;
}

int synor_netstore_job_cancel(synor_netstore *s, const char *owner, int64_t job_id)
{
    static const char get[] = "SELECT owner, state FROM jobs WHERE id = $1 %LOCK%";
    static const char upd[] = "UPDATE jobs SET state = 'cancelled' WHERE id = $1";
    static const char tasks[] = "UPDATE tasks SET state = 'cancelled', lease = NULL WHERE job_id = $1"
                                " AND state IN ('queued', 'leased', 'waiting')";
    static const char shards[] = "UPDATE shards SET state = 'cancelled' WHERE job_id = $1"
                                 " AND state = 'queued'";
    nsparam p[] = {NS_I(job_id)};
    nsres j = {0};
    char subj[32];
    snprintf(subj, sizeof subj, "j-%lld", (long long)job_id);
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_begin(s, 1);
    if (!e)
        e = synor__ns_exec(s, get, p, 1, &j, NULL);
    if (!e && (!j.rows || (owner && strcmp(owner, synor__nsres_text(&j, 0, 0)))))
        e = synor__error(SYNOR_ENOENT, "no job j-%lld", (long long)job_id);
    if (!e) {
        const char *st = synor__nsres_text(&j, 0, 1);
        if (strcmp(st, "queued") && strcmp(st, "running"))
            e = synor__error(SYNOR_ESTATE, "job j-%lld is already %s", (long long)job_id, st);
    }
    if (!e)
        e = synor__ns_exec(s, upd, p, 1, NULL, NULL);
    if (!e)
        e = synor__ns_exec(s, tasks, p, 1, NULL, NULL);
    if (!e)
        e = synor__ns_exec(s, shards, p, 1, NULL, NULL);
    if (!e)
        e = synor__ns_event(s, "job-cancelled", subj, "");
    if (!e)
        e = synor__ns_commit(s);
    if (e)
        synor__ns_rollback(s);
    pthread_mutex_unlock(&s->mu);
    synor__nsres_free(&j);
    return e;
}
