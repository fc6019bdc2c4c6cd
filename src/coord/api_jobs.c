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

static coord_resp submit(coord_req *r)
{
    synor__jdoc *d;
    coord_resp err;
    if (synor__coord_parse_body(r, &d, &err))
        return err;
    const synor__jval *o = synor__jdoc_root(d);
    static const char *const keys[] = {"name",       "kernel", "params", "shards", "replicas",
                                       "deadline_s", "budget", "ref",    NULL};
    synor_net_job_spec j = {.replicas = 1};
    const char *budget = NULL;
    char *params = NULL;
    synor_net_shard_spec *sh = NULL;
    const char **inputs = NULL;
    char **sparams = NULL;
    size_t n_inputs = 0;
    int bad = synor__coord_check_keys(d, o, keys, &err) ||
              synor__coord_str(o, "name", 0, 256, &j.name, &err) ||
              synor__coord_str(o, "kernel", 1, 31, &j.kernel, &err) ||
              synor__coord_str(o, "budget", 1, 32, &budget, &err) ||
              synor__coord_str(o, "ref", 0, 128, &j.ref, &err);
    if (!bad && !kernel_ok(j.kernel)) {
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
    const synor__jval *shards = bad ? NULL : synor__json_get(o, "shards");
    if (!bad && (!shards || shards->type != SYNOR__J_ARRAY || !shards->u.arr.n ||
                 shards->u.arr.n > 100000)) {
        err = synor__coord_err(400, "field 'shards': expected an array of 1 to 100000 shards");
        bad = 1;
    }
    if (!bad) {
        for (size_t i = 0; i < shards->u.arr.n; i++) {
            const synor__jval *s = shards->u.arr.items[i], *in;
            if (s->type == SYNOR__J_OBJECT && (in = synor__json_get(s, "inputs")) &&
                in->type == SYNOR__J_ARRAY)
                n_inputs += in->u.arr.n;
        }
        sh = synor__calloc(shards->u.arr.n, sizeof *sh);
        inputs = synor__calloc(n_inputs ? n_inputs : 1, sizeof *inputs);
        sparams = synor__calloc(shards->u.arr.n, sizeof *sparams);
        if (!sh || !inputs || !sparams) {
            err = synor__coord_err(500, "out of memory");
            bad = 1;
        }
    }
    size_t at = 0;
    for (size_t i = 0; !bad && i < shards->u.arr.n; i++) {
        const synor__jval *s = shards->u.arr.items[i];
        static const char *const skeys[] = {"inputs", "params", "expect", NULL};
        if (s->type != SYNOR__J_OBJECT) {
            err = synor__coord_err(400, "field 'shards[%zu]': expected an object", i);
            bad = 1;
            break;
        }
        if (synor__coord_check_keys(d, s, skeys, &err)) {
            bad = 1;
            break;
        }
        const synor__jval *in = synor__json_get(s, "inputs"), *p = synor__json_get(s, "params");
        if (in && in->type != SYNOR__J_ARRAY) {
            err = synor__coord_err(400, "field 'shards[%zu].inputs': expected an array", i);
            bad = 1;
            break;
        }
        sh[i].inputs = inputs + at;
        for (size_t k = 0; in && k < in->u.arr.n; k++) {
            const synor__jval *x = in->u.arr.items[k];
            if (x->type != SYNOR__J_STRING) {
                err = synor__coord_err(400, "field 'shards[%zu].inputs[%zu]': expected a SHA-256 string",
                                       i, k);
                bad = 1;
                break;
            }
            inputs[at++] = x->u.str.s;
            sh[i].n_inputs++;
        }
        if (bad)
            break;
        if (p) {
            if (p->type != SYNOR__J_OBJECT) {
                err = synor__coord_err(400, "field 'shards[%zu].params': expected an object", i);
                bad = 1;
                break;
            }
            if (!(sparams[i] = synor__ns_json_text(p))) {
                err = synor__coord_err(500, "out of memory");
                bad = 1;
                break;
            }
            sh[i].params_json = sparams[i];
        }
        const char *expect = NULL;
        if (synor__coord_str(s, "expect", 0, 64, &expect, &err)) {
            bad = 1;
            break;
        }
        if (expect && r->who.role != SYNOR_NET_OPERATOR) {
            err = synor__coord_err(403, "field 'shards[%zu].expect': only the operator submits "
                                        "known-answer (spot-check) shards",
                                   i);
            bad = 1;
            break;
        }
        sh[i].expect = expect;
    }
    coord_resp x;
    if (bad) {
        x = err;
    } else {
        j.shards = sh;
        j.n_shards = shards->u.arr.n;
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
    for (size_t i = 0; sparams && shards && i < shards->u.arr.n; i++)
        synor__free(sparams[i]);
    synor__free(sparams);
    synor__free(sh);
    synor__free(inputs);
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
