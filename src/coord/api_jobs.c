/* api_jobs.c - /v1/jobs: submission (parsed whole before the store sees
 * it), listing, status, the ordered result and cancellation. Consumers see
 * their own jobs only (another's is 404, never revealed); the operator sees
 * every job and may submit spot-check jobs (shards with "expect"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/api.h"
#include "netstore/db.h"

static int kernel_ok(const char *k)
{
    for (; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '-' || *k == '_'))
            return 0;
    return 1;
}

/* The shards being parsed, of every stage. */
typedef struct {
    synor_net_shard_spec *sh;
    size_t n, cap;
    const char **inputs;
    long *from;
    size_t at;
    char **owned;       /* params texts to free (shards' and stages') */
    size_t n_owned;
    size_t first[65];   /* the index of each stage's first shard; first[stages] = n */
} shard_build;

static int count_shards(const synor__jval *shards, size_t *n, size_t *inputs)
{
    if (!shards || shards->type != SYNOR__J_ARRAY || !shards->u.arr.n)
        return -1;
    *n += shards->u.arr.n;
    for (size_t i = 0; i < shards->u.arr.n; i++) {
        const synor__jval *s = shards->u.arr.items[i], *in;
        if (s->type == SYNOR__J_OBJECT && (in = synor__json_get(s, "inputs")) &&
            in->type == SYNOR__J_ARRAY)
            *inputs += in->u.arr.n;
    }
    return 0;
}

/* One input of a staged shard: {"from_stage": s, "shard": i}, s earlier. */
static int parse_from(const synor__jdoc *d, const synor__jval *x, const char *where, size_t i,
                      size_t k, unsigned stage, const shard_build *b, long *out, coord_resp *err)
{
    static const char *const fkeys[] = {"from_stage", "shard", NULL};
    const synor__jval *fs = synor__json_get(x, "from_stage"), *fi = synor__json_get(x, "shard");
    int64_t st, ix;
    if (synor__coord_check_keys(d, x, fkeys, err))
        return -1;
    if (!stage || !fs || !fi || synor__json_int(d, fs, "from_stage", 0, stage - 1, &st)) {
        *err = synor__coord_err(400, "field '%s[%zu].inputs[%zu].from_stage': %s", where, i, k,
                                stage ? (fs && fi ? synor_errmsg() : "from_stage and shard required")
                                      : "the first stage reads blobs only");
        return -1;
    }
    size_t n = b->first[st + 1] - b->first[st];
    if (synor__json_int(d, fi, "shard", 0, (int64_t)n - 1, &ix)) {
        *err = synor__coord_err(400, "field '%s[%zu].inputs[%zu].shard': %s", where, i, k,
                                synor_errmsg());
        return -1;
    }
    *out = (long)(b->first[st] + (size_t)ix);
    return 0;
}

/* Appends the shards of one stage (or of a job without stages). */
static int parse_shards(coord_req *r, const synor__jdoc *d, const synor__jval *shards,
                        const char *where, unsigned stage, const char *kernel,
                        const char *stage_params, shard_build *b, coord_resp *err)
{
    static const char *const skeys[] = {"inputs", "params", "expect", NULL};
    for (size_t i = 0; i < shards->u.arr.n; i++) {
        const synor__jval *s = shards->u.arr.items[i];
        synor_net_shard_spec *sh = &b->sh[b->n];
        if (s->type != SYNOR__J_OBJECT) {
            *err = synor__coord_err(400, "field '%s[%zu]': expected an object", where, i);
            return -1;
        }
        if (synor__coord_check_keys(d, s, skeys, err))
            return -1;
        const synor__jval *in = synor__json_get(s, "inputs"), *p = synor__json_get(s, "params");
        if (in && in->type != SYNOR__J_ARRAY) {
            *err = synor__coord_err(400, "field '%s[%zu].inputs': expected an array", where, i);
            return -1;
        }
        sh->inputs = b->inputs + b->at;
        sh->from = b->from + b->at;
        sh->stage = stage;
        sh->kernel = kernel;
        sh->params_json = stage_params;
        for (size_t k = 0; in && k < in->u.arr.n; k++) {
            const synor__jval *x = in->u.arr.items[k];
            b->from[b->at] = -1;
            if (x->type == SYNOR__J_STRING) {
                b->inputs[b->at] = x->u.str.s;
            } else if (x->type == SYNOR__J_OBJECT && kernel) {
                if (parse_from(d, x, where, i, k, stage, b, &b->from[b->at], err))
                    return -1;
            } else {
                *err = synor__coord_err(400, "field '%s[%zu].inputs[%zu]': expected a SHA-256 "
                                             "string%s",
                                        where, i, k, kernel ? " or {\"from_stage\",\"shard\"}" : "");
                return -1;
            }
            b->at++;
            sh->n_inputs++;
        }
        if (p) {
            if (p->type != SYNOR__J_OBJECT) {
                *err = synor__coord_err(400, "field '%s[%zu].params': expected an object", where, i);
                return -1;
            }
            if (!(b->owned[b->n_owned] = synor__ns_json_text(p))) {
                *err = synor__coord_err(500, "out of memory");
                return -1;
            }
            sh->params_json = b->owned[b->n_owned++];
        }
        const char *expect = NULL;
        if (synor__coord_str(s, "expect", 0, 64, &expect, err))
            return -1;
        if (expect && (r->who.role != SYNOR_NET_OPERATOR || kernel)) {
            *err = synor__coord_err(kernel ? 400 : 403,
                                    "field '%s[%zu].expect': %s", where, i,
                                    kernel ? "not in a staged job"
                                           : "only the operator submits known-answer (spot-check) shards");
            return -1;
        }
        sh->expect = expect;
        b->n++;
    }
    return 0;
}

/* "stages": [{"kernel", "params", "shards"}...] into b; *kernel: the last
 * stage's (the job's kernel as listed). */
static int parse_stages(coord_req *r, const synor__jdoc *d, const synor__jval *stages,
                        shard_build *b, const char **kernel, coord_resp *err)
{
    static const char *const tkeys[] = {"kernel", "params", "shards", NULL};
    for (size_t t = 0; t < stages->u.arr.n; t++) {
        const synor__jval *st = stages->u.arr.items[t], *p;
        char where[48];
        snprintf(where, sizeof where, "stages[%zu].shards", t);
        b->first[t] = b->n;
        if (st->type != SYNOR__J_OBJECT) {
            *err = synor__coord_err(400, "field 'stages[%zu]': expected an object", t);
            return -1;
        }
        if (synor__coord_check_keys(d, st, tkeys, err) ||
            synor__coord_str(st, "kernel", 1, 31, kernel, err))
            return -1;
        if (!kernel_ok(*kernel)) {
            *err = synor__coord_err(400, "field 'stages[%zu].kernel': value '%s': letters, digits, "
                                         "- and _", t, *kernel);
            return -1;
        }
        const char *params = "{}";
        if ((p = synor__json_get(st, "params"))) {
            if (p->type != SYNOR__J_OBJECT) {
                *err = synor__coord_err(400, "field 'stages[%zu].params': expected an object", t);
                return -1;
            }
            if (!(params = b->owned[b->n_owned] = synor__ns_json_text(p))) {
                *err = synor__coord_err(500, "out of memory");
                return -1;
            }
            b->n_owned++;
        }
        if (parse_shards(r, d, synor__json_get(st, "shards"), where, (unsigned)t, *kernel, params,
                         b, err))
            return -1;
        b->first[t + 1] = b->n;
    }
    return 0;
}

static coord_resp submit(coord_req *r)
{
    synor__jdoc *d;
    coord_resp err;
    if (synor__coord_parse_body(r, &d, &err))
        return err;
    const synor__jval *o = synor__jdoc_root(d);
    static const char *const keys[] = {"name",       "kernel", "params", "shards", "replicas",
                                       "deadline_s", "budget", "ref",    "stages", NULL};
    synor_net_job_spec j = {.replicas = 1};
    const char *budget = NULL;
    char *params = NULL;
    shard_build b = {0};
    const synor__jval *stages = synor__json_get(o, "stages");
    int bad = synor__coord_check_keys(d, o, keys, &err) ||
              synor__coord_str(o, "name", 0, 256, &j.name, &err) ||
              synor__coord_str(o, "kernel", !stages, 31, &j.kernel, &err) ||
              synor__coord_str(o, "budget", 1, 32, &budget, &err) ||
              synor__coord_str(o, "ref", 0, 128, &j.ref, &err);
    if (!bad && stages && (j.kernel || synor__json_get(o, "shards") || synor__json_get(o, "params"))) {
        err = synor__coord_err(400, "field 'stages': a staged job gives kernel, params and shards "
                                    "per stage, not for the job");
        bad = 1;
    }
    if (!bad && j.kernel && !kernel_ok(j.kernel)) {
        err = synor__coord_err(400, "field 'kernel': value '%s': letters, digits, - and _", j.kernel);
        bad = 1;
    }
    if (!bad && synor_rewards_parse_fixed(budget, 6, SYNOR_REWARDS_MAX_AMOUNT, "field 'budget'",
                                          &j.budget)) {
        err = synor__coord_err(400, "%s", synor_errmsg());
        bad = 1;
    }
    const synor__jval *v;
    int64_t reps = 1;
    if (!bad && (v = synor__json_get(o, "replicas")) &&
        synor__json_int(d, v, "replicas", 1, 5, &reps)) {
        err = synor__coord_err(400, "field 'replicas': %s", synor_errmsg());
        bad = 1;
    }
    j.replicas = (unsigned)reps;
    if (!bad && (v = synor__json_get(o, "deadline_s")) &&
        synor__json_number(d, v, "deadline_s", 1, 1e8, &j.deadline_s)) {
        err = synor__coord_err(400, "field 'deadline_s': %s", synor_errmsg());
        bad = 1;
    }
    if (!bad && (v = synor__json_get(o, "params"))) {
        if (v->type != SYNOR__J_OBJECT) {
            err = synor__coord_err(400, "field 'params': expected an object");
            bad = 1;
        } else if (!(params = synor__ns_json_text(v))) {
            err = synor__coord_err(500, "out of memory");
            bad = 1;
        }
    }
    j.params_json = params ? params : "{}";
    /* count the shards and inputs of every stage, then parse them */
    size_t n_inputs = 0, n_stages = 0;
    if (!bad && stages) {
        n_stages = stages->type == SYNOR__J_ARRAY ? stages->u.arr.n : 0;
        if (!n_stages || n_stages > 64) {
            err = synor__coord_err(400, "field 'stages': expected an array of 1 to 64 stages");
            bad = 1;
        }
        for (size_t t = 0; !bad && t < n_stages; t++) {
            const synor__jval *st = stages->u.arr.items[t];
            if (st->type != SYNOR__J_OBJECT ||
                count_shards(synor__json_get(st, "shards"), &b.cap, &n_inputs)) {
                err = synor__coord_err(400, "field 'stages[%zu].shards': expected an array of "
                                            "at least one shard", t);
                bad = 1;
            }
        }
    } else if (!bad && count_shards(synor__json_get(o, "shards"), &b.cap, &n_inputs)) {
        err = synor__coord_err(400, "field 'shards': expected an array of 1 to 100000 shards");
        bad = 1;
    }
    if (!bad && b.cap > 100000) {
        err = synor__coord_err(400, "field '%s': %zu shards (1 to 100000)",
                               stages ? "stages" : "shards", b.cap);
        bad = 1;
    }
    if (!bad) {
        b.sh = synor__calloc(b.cap, sizeof *b.sh);
        b.inputs = synor__calloc(n_inputs ? n_inputs : 1, sizeof *b.inputs);
        b.from = synor__calloc(n_inputs ? n_inputs : 1, sizeof *b.from);
        b.owned = synor__calloc(b.cap + n_stages, sizeof *b.owned);
        if (!b.sh || !b.inputs || !b.from || !b.owned) {
            err = synor__coord_err(500, "out of memory");
            bad = 1;
        }
    }
    if (!bad)
        bad = stages ? parse_stages(r, d, stages, &b, &j.kernel, &err)
                     : parse_shards(r, d, synor__json_get(o, "shards"), "shards", 0, NULL, NULL,
                                    &b, &err);
    coord_resp x;
    if (bad) {
        x = err;
    } else {
        j.shards = b.sh;
        j.n_shards = b.n;
        int64_t id, tasks;
        int existing;
        int e = synor_netstore_job_submit(r->c->store, r->who.owner, &j, &id, &tasks, &existing);
        if (e) {
            x = synor__coord_store_err(e);
        } else {
            char *t = synor__malloc(96);
            if (t)
                snprintf(t, 96, "{\"id\":\"j-%lld\",\"tasks\":%lld%s}\n", (long long)id,
                         (long long)tasks, existing ? ",\"existing\":true" : "");
            x = synor__coord_json(existing ? 200 : 201, t);
            if (!existing) {
                char f[96];
                snprintf(f, sizeof f, "\"job\":\"j-%lld\",\"tasks\":%lld", (long long)id,
                         (long long)tasks);
                synor__coord_log(r->c, "job-submitted", f);
                synor__coord_kick(r->c);
            }
        }
    }
    for (size_t i = 0; i < b.n_owned; i++)
        synor__free(b.owned[i]);
    synor__free(b.owned);
    synor__free(b.sh);
    synor__free(b.inputs);
    synor__free(b.from);
    synor__free(params);
    synor__jdoc_free(d);
    return x;
}

coord_resp synor__coord_jobs(coord_req *r)
{
    const char *owner = r->who.role == SYNOR_NET_OPERATOR ? NULL : r->who.owner;
    synor_netstore *s = r->c->store;
    if (!strcmp(r->url, "/v1/jobs")) {
        if (!strcmp(r->method, "POST"))
            return submit(r);
        if (!strcmp(r->method, "GET")) {
            char *t = NULL;
            int e = synor_netstore_jobs_json(s, owner, &t);
            return e ? synor__coord_store_err(e) : synor__coord_json(200, t);
        }
        coord_resp x = synor__coord_err(405, "use GET or POST on /v1/jobs");
        x.allow = "GET, POST";
        return x;
    }
    /* /v1/jobs/j-3 or /v1/jobs/j-3/result */
    const char *rest = r->url + 9;
    char id[32];
    const char *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    int64_t job;
    if (n >= sizeof id)
        return synor__coord_err(404, "no such job");
    memcpy(id, rest, n);
    id[n] = 0;
    if (synor__coord_parse_id(id, "j-", &job))
        return synor__coord_err(404, "no such job '%s' (ids look like j-3)", id);
    if (slash) {
        if (strcmp(slash, "/result"))
            return synor__coord_err(404, "no such path: %s", r->url);
        if (strcmp(r->method, "GET")) {
            coord_resp x = synor__coord_err(405, "use GET");
            x.allow = "GET";
            return x;
        }
        void *data;
        size_t len;
        int e = synor_netstore_job_result(s, owner, job, &data, &len);
        if (e)
            return synor__coord_store_err(e);
        return (coord_resp){.status = 200, .type = "application/octet-stream", .body = data,
                            .len = len};
    }
    if (!strcmp(r->method, "GET")) {
        char *t = NULL;
        int e = synor_netstore_job_json(s, owner, job, &t);
        return e ? synor__coord_store_err(e) : synor__coord_json(200, t);
    }
    if (!strcmp(r->method, "DELETE")) {
        int e = synor_netstore_job_cancel(s, owner, job);
        if (e)
            return synor__coord_store_err(e);
        char *t = synor__malloc(64);
        if (t)
            snprintf(t, 64, "{\"cancelled\":\"j-%lld\"}\n", (long long)job);
        return synor__coord_json(200, t);
    }
    coord_resp x = synor__coord_err(405, "use GET or DELETE");
    x.allow = "GET, DELETE";
    return x;
}
