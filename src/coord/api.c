/* api.c - the coordinator's /v1 routes: tokens, devices, heartbeats, task
 * dispatch (long-poll), results, blobs, earnings and the ledger. Jobs are
 * in api_jobs.c. Every handler checks the role first (403), parses all of
 * its input (400) and only then calls the store, which commits before the
 * answer is queued. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/api.h"
#include "json/json.h"
#include "netstore/db.h"

int synor__coord_parse_id(const char *s, const char *prefix, int64_t *out)
{
    size_t n = strlen(prefix);
    if (!s || strncmp(s, prefix, n))
        return -1;
    s += n;
    if (!*s || strlen(s) > 18)
        return -1;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 0;
}

int synor__coord_parse_body(coord_req *r, synor__jdoc **doc, coord_resp *err)
{
    if (!r->len) {
        *err = synor__coord_err(400, "the request has no JSON body");
        return -1;
    }
    if (synor__json_parse(r->body, r->len, "body", doc)) {
        *err = synor__coord_err(400, "%s", synor_errmsg());
        return -1;
    }
    if (synor__jdoc_root(*doc)->type != SYNOR__J_OBJECT) {
        synor__jdoc_free(*doc);
        *err = synor__coord_err(400, "the body must be a JSON object");
        return -1;
    }
    return 0;
}

/* A string member; required or NULL when absent. */
int synor__coord_str(const synor__jval *o, const char *key, int required, size_t max,
                     const char **out, coord_resp *err)
{
    const synor__jval *v = synor__json_get(o, key);
    *out = NULL;
    if (!v) {
        if (!required)
            return 0;
        *err = synor__coord_err(400, "field '%s': missing", key);
        return -1;
    }
    if (v->type != SYNOR__J_STRING || v->u.str.len > max || strlen(v->u.str.s) != v->u.str.len) {
        *err = synor__coord_err(400, "field '%s': expected a string of at most %zu bytes", key, max);
        return -1;
    }
    *out = v->u.str.s;
    return 0;
}

static int check_keys(const synor__jdoc *d, const synor__jval *o, const char *const *allowed,
                      coord_resp *err)
{
    if (synor__json_check_keys(d, o, "body", allowed)) {
        *err = synor__coord_err(400, "%s", synor_errmsg());
        return -1;
    }
    return 0;
}
int synor__coord_check_keys(const synor__jdoc *d, const synor__jval *o, const char *const *allowed,
                            coord_resp *err)
{
    return check_keys(d, o, allowed, err);
}

static coord_resp need(coord_req *r, synor_net_role role)
{
    return synor__coord_err(403, "%s %s: a %s token is needed (this one is %s's, a %s)", r->method,
                            r->url, synor_net_role_name(role), r->who.owner,
                            synor_net_role_name(r->who.role));
}

/* ---------------------------------------------------------------- tokens */

static coord_resp tokens_post(coord_req *r)
{
    synor__jdoc *d;
    coord_resp err;
    if (synor__coord_parse_body(r, &d, &err))
        return err;
    const synor__jval *o = synor__jdoc_root(d);
    static const char *const keys[] = {"role", "owner", NULL};
    const char *role = NULL, *owner = NULL;
    if (check_keys(d, o, keys, &err) || synor__coord_str(o, "role", 1, 16, &role, &err) ||
        synor__coord_str(o, "owner", 1, 63, &owner, &err)) {
        synor__jdoc_free(d);
        return err;
    }
    synor_net_role rl = synor_net_role_parse(role);
    if (!rl) {
        err = synor__coord_err(400, "field 'role': value '%s': operator, consumer or provider", role);
        synor__jdoc_free(d);
        return err;
    }
    char tok[SYNOR_NET_TOKEN_LEN + 1];
    int64_t id;
    int e = synor_netstore_token_create(r->c->store, rl, owner, tok, &id);
    if (e) {
        synor__jdoc_free(d);
        return synor__coord_store_err(e);
    }
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b, "{\"id\":%lld,\"token\":\"%s\",\"role\":\"%s\",\"owner\":", (long long)id,
                      tok, role);
    synor__json_escape(&b, owner);
    synor__buf_puts(&b, "}\n");
    char f[160];
    snprintf(f, sizeof f, "\"token\":%lld,\"role\":\"%s\"", (long long)id, role);
    synor__jdoc_free(d);
    synor__coord_log(r->c, "token-created", f);
    return synor__coord_json(201, synor__buf_take(&b));
}

static coord_resp tokens_delete(coord_req *r, const char *idtext)
{
    int64_t id;
    if (synor__coord_parse_id(idtext, "", &id))
        return synor__coord_err(400, "token id '%s': expected a number", idtext);
    int e = synor_netstore_token_revoke(r->c->store, id);
    if (e)
        return synor__coord_store_err(e);
    char *t = synor__malloc(48);
    if (t)
        snprintf(t, 48, "{\"revoked\":%lld}\n", (long long)id);
    char f[64];
    snprintf(f, sizeof f, "\"token\":%lld", (long long)id);
    synor__coord_log(r->c, "token-revoked", f);
    return synor__coord_json(200, t);
}

/* --------------------------------------------------------------- devices */

static coord_resp devices_post(coord_req *r)
{
    synor__jdoc *d;
    coord_resp err;
    if (synor__coord_parse_body(r, &d, &err))
        return err;
    const synor__jval *o = synor__jdoc_root(d);
    static const char *const keys[] = {"name",      "kind",         "profile", "gflops",
                                       "mem_bytes", "availability", "price",   NULL};
    synor_net_device dev = {0};
    const char *price = NULL;
    int bad = check_keys(d, o, keys, &err) || synor__coord_str(o, "name", 1, 128, &dev.name, &err) ||
              synor__coord_str(o, "kind", 1, 32, &dev.kind, &err) ||
              synor__coord_str(o, "profile", 0, 128, &dev.profile, &err) ||
              synor__coord_str(o, "availability", 0, 64, &dev.availability, &err) ||
              synor__coord_str(o, "price", 0, 32, &price, &err);
    const synor__jval *v;
    if (!bad && (v = synor__json_get(o, "gflops")) &&
        synor__json_number(d, v, "gflops", 0, 1e12, &dev.gflops)) {
        err = synor__coord_err(400, "field 'gflops': %s", synor_errmsg());
        bad = 1;
    }
    if (!bad && (v = synor__json_get(o, "mem_bytes")) &&
        synor__json_int(d, v, "mem_bytes", 0, INT64_MAX, &dev.mem_bytes)) {
        err = synor__coord_err(400, "field 'mem_bytes': %s", synor_errmsg());
        bad = 1;
    }
    if (!bad && dev.availability && strcmp(dev.availability, "always") &&
        strcmp(dev.availability, "idle")) {
        int a, b, n = 0;
        if (sscanf(dev.availability, "utc:%d-%d%n", &a, &b, &n) != 2 ||
            (size_t)n != strlen(dev.availability) || a < 0 || a > 23 || b < 0 || b > 24) {
            err = synor__coord_err(400, "field 'availability': value '%s': \"always\", \"idle\" "
                                        "or \"utc:H1-H2\"",
                                   dev.availability);
            bad = 1;
        }
    }
    if (!bad && price &&
        synor_rewards_parse_fixed(price, 6, SYNOR_REWARDS_MAX_AMOUNT, "field 'price'", &dev.price)) {
        err = synor__coord_err(400, "%s", synor_errmsg());
        bad = 1;
    }
    if (bad) {
        synor__jdoc_free(d);
        return err;
    }
    int64_t id;
    int e = synor_netstore_device_register(r->c->store, r->who.owner, &dev, &id);
    synor__jdoc_free(d);
    if (e)
        return synor__coord_store_err(e);
    char *t = synor__malloc(48);
    if (t)
        snprintf(t, 48, "{\"id\":\"dev-%lld\"}\n", (long long)id);
    return synor__coord_json(201, t);
}

static coord_resp heartbeat(coord_req *r)
{
    synor__jdoc *d;
    coord_resp err;
    if (synor__coord_parse_body(r, &d, &err))
        return err;
    const synor__jval *o = synor__jdoc_root(d);
    static const char *const keys[] = {"devices", "busy", "accepting", NULL};
    if (check_keys(d, o, keys, &err)) {
        synor__jdoc_free(d);
        return err;
    }
    const synor__jval *devs = synor__json_get(o, "devices"), *acc = synor__json_get(o, "accepting");
    if (!devs || devs->type != SYNOR__J_ARRAY || devs->u.arr.n > 1024) {
        synor__jdoc_free(d);
        return synor__coord_err(400, "field 'devices': expected an array of device ids (at most 1024)");
    }
    if (acc && acc->type != SYNOR__J_BOOL) {
        synor__jdoc_free(d);
        return synor__coord_err(400, "field 'accepting': expected true or false");
    }
    int64_t ids[1024];
    for (size_t i = 0; i < devs->u.arr.n; i++) {
        const synor__jval *v = devs->u.arr.items[i];
        if (v->type != SYNOR__J_STRING || synor__coord_parse_id(v->u.str.s, "dev-", &ids[i])) {
            err = synor__coord_err(400, "field 'devices[%zu]': value '%s': expected \"dev-N\"", i,
                                   v->type == SYNOR__J_STRING ? v->u.str.s : "");
            synor__jdoc_free(d);
            return err;
        }
    }
    char *leases = NULL;
    int e = synor_netstore_heartbeat(r->c->store, r->who.owner, ids, devs->u.arr.n,
                                     acc ? acc->u.boolean : 1, &leases);
    synor__jdoc_free(d);
    if (e)
        return synor__coord_store_err(e);
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b, "{\"leases\":%s,\"heartbeat_s\":%g,\"batch\":true}\n", leases,
                      r->c->o.heartbeat_s);
    synor__free(leases);
    return synor__coord_json(200, synor__buf_take(&b));
}

/* ------------------------------------------------------------- dispatch */

/* One claim as the JSON object an agent gets. */
static void claim_json(synor__buf *b, const synor_net_claim *cl)
{
    synor__buf_printf(b, "{\"task\":\"t-%lld\",\"lease\":\"%s\",\"job\":\"j-%lld\",\"kernel\":",
                      (long long)cl->task, cl->lease, (long long)cl->job);
    synor__json_escape(b, cl->kernel);
    synor__buf_printf(b, ",\"params\":%s,\"inputs\":%s,\"expires_in\":%g", cl->params_json,
                      cl->inputs_json, cl->expires_in);
    if (cl->checkpoint_json)
        synor__buf_printf(b, ",\"checkpoint\":%s", cl->checkpoint_json);
    synor__buf_puts(b, "}");
}

static coord_resp next_task(coord_req *r)
{
    synor_coord *c = r->c;
    const char *dv = synor__coord_arg(r, "device"), *wt = synor__coord_arg(r, "wait");
    const char *mx = synor__coord_arg(r, "max");
    int64_t dev, max = 1;
    if (synor__coord_parse_id(dv, "dev-", &dev))
        return synor__coord_err(400, "argument 'device': value '%s': expected \"dev-N\"", dv ? dv : "");
    if (mx && (synor__coord_parse_id(mx, "", &max) || max < 1 || max > SYNOR_NET_CLAIM_MAX))
        return synor__coord_err(400, "argument 'max': value '%s': 1 to %d tasks", mx,
                                SYNOR_NET_CLAIM_MAX);
    double wait = 0;
    if (wt) {
        char *end;
        wait = strtod(wt, &end);
        if (*end || !(wait >= 0) || wait > 3600)
            return synor__coord_err(400, "argument 'wait': value '%s': seconds, 0 to 3600", wt);
        if (wait > c->o.max_wait_s)
            wait = c->o.max_wait_s;
    }
    uint64_t deadline = synor__coord_now_ns() + (uint64_t)(wait * 1e9);
    synor_net_claim *cl = synor__calloc((size_t)max, sizeof *cl);
    if (!cl)
        return synor__coord_err(500, "out of memory");
    for (;;) {
        uint64_t seen = synor__coord_kicks(c);
        uint64_t t0 = synor__coord_now_ns();
        size_t n = 0;
        int e = synor_netstore_claim_many(c->store, r->who.owner, dev, (size_t)max, cl, &n);
        if (e < 0) {
            synor__free(cl);
            return synor__coord_store_err(e);
        }
        uint64_t now = synor__coord_now_ns();
        if (e == 0) {
            synor__coord_observe_dispatch(c, now - t0);
            synor__buf b;
            synor__buf_init(&b);
            if (mx)
                synor__buf_puts(&b, "{\"tasks\":[");
            for (size_t i = 0; i < n; i++) {
                if (i)
                    synor__buf_puts(&b, ",");
                claim_json(&b, &cl[i]);
                synor_net_claim_free(&cl[i]);
            }
            synor__buf_puts(&b, mx ? "]}\n" : "\n");
            synor__free(cl);
            return synor__coord_json(200, synor__buf_take(&b));
        }
        pthread_mutex_lock(&c->mu);
        int stopping = c->stopping;
        pthread_mutex_unlock(&c->mu);
        if (now >= deadline || stopping) {
            synor__free(cl);
            return (coord_resp){.status = 204, .type = "application/json"};
        }
        /* woken by a kick here, or every second (tasks freed by another
         * coordinator on the same database, a replica added by a quorum) */
        uint64_t until = now + 1000000000u < deadline ? now + 1000000000u : deadline;
        synor__coord_wait(c, seen, until);
    }
}

static const char *task_id_of(const char *rest, int64_t *task, const char **verb)
{
    /* rest: "t-55/result" */
    const char *slash = strchr(rest, '/');
    if (!slash)
        return NULL;
    char id[32];
    size_t n = (size_t)(slash - rest);
    if (n >= sizeof id)
        return NULL;
    memcpy(id, rest, n);
    id[n] = 0;
    if (synor__coord_parse_id(id, "t-", task))
        return NULL;
    *verb = slash + 1;
    return rest;
}

static coord_resp task_result(coord_req *r, int64_t task)
{
    const char *lease = synor__coord_arg(r, "lease");
    const char *sha = synor__coord_header(r, "X-Synor-SHA256");
    const char *ms = synor__coord_header(r, "X-Synor-Elapsed-Ms");
    if (!lease)
        return synor__coord_err(400, "argument 'lease': missing");
    if (!sha)
        return synor__coord_err(400, "header 'X-Synor-SHA256': missing");
    int64_t elapsed = 0;
    if (ms && synor__coord_parse_id(ms, "", &elapsed))
        return synor__coord_err(400, "header 'X-Synor-Elapsed-Ms': value '%s': milliseconds", ms);
    synor_net_verdict v;
    int e = synor_netstore_result(r->c->store, r->who.owner, task, lease, r->body, r->len, sha,
                                  elapsed, &v);
    if (e)
        return synor__coord_store_err(e);
    if (!r->c->o.quiet || v == SYNOR_NET_REJECTED) {
        char f[128];
        snprintf(f, sizeof f, "\"task\":\"t-%lld\",\"verdict\":\"%s\"", (long long)task,
                 synor_net_verdict_name(v));
        synor__coord_log(r->c, "result", f);
    }
    char *t = synor__malloc(96);
    if (t)
        snprintf(t, 96, "{\"accepted\":true,\"state\":\"%s\"}\n", synor_net_verdict_name(v));
    return synor__coord_json(200, t);
}

static coord_resp task_fail(coord_req *r, int64_t task)
{
    const char *lease = synor__coord_arg(r, "lease");
    if (!lease)
        return synor__coord_err(400, "argument 'lease': missing");
    synor__jdoc *d;
    coord_resp err;
    if (synor__coord_parse_body(r, &d, &err))
        return err;
    const synor__jval *o = synor__jdoc_root(d);
    static const char *const keys[] = {"error", NULL};
    const char *msg = NULL;
    if (check_keys(d, o, keys, &err) || synor__coord_str(o, "error", 0, 4096, &msg, &err)) {
        synor__jdoc_free(d);
        return err;
    }
    int e = synor_netstore_fail(r->c->store, r->who.owner, task, lease, msg ? msg : "");
    synor__jdoc_free(d);
    if (e)
        return synor__coord_store_err(e);
    synor__coord_kick(r->c);
    return synor__coord_json(200, synor__strdup("{\"ok\":true}\n"));
}

/* POST /v1/tasks/{task}/release?lease=L: the provider's owner reclaimed the
 * machine; the body is the checkpoint (may be empty), X-Synor-SHA256 its
 * SHA-256. The task is queued again at once. */
static coord_resp task_release(coord_req *r, int64_t task)
{
    const char *lease = synor__coord_arg(r, "lease");
    const char *sha = synor__coord_header(r, "X-Synor-SHA256");
    if (!lease)
        return synor__coord_err(400, "argument 'lease': missing");
    if (r->len && !sha)
        return synor__coord_err(400, "header 'X-Synor-SHA256': missing (a checkpoint of %zu "
                                     "bytes)",
                                r->len);
    int stored = 0;
    int e = synor_netstore_release(r->c->store, r->who.owner, task, lease, r->body, r->len, sha,
                                   &stored);
    if (e)
        return synor__coord_store_err(e);
    const char *ck = !r->len ? "none" : stored ? "stored" : "ignored";
    char f[160];
    snprintf(f, sizeof f, "\"task\":\"t-%lld\",\"checkpoint\":\"%s\",\"bytes\":%zu",
             (long long)task, ck, r->len);
    synor__coord_log(r->c, "task-released", f);
    synor__coord_kick(r->c);
    char *t = synor__malloc(96);
    if (t)
        snprintf(t, 96, "{\"released\":true,\"checkpoint\":\"%s\"}\n", ck);
    return synor__coord_json(200, t);
}

/* ----------------------------------------------------------------- blobs */

static coord_resp blob_put(coord_req *r)
{
    char sha[65];
    int e = synor_netstore_blob_put(r->c->store, r->who.owner, r->body, r->len, sha);
    if (e)
        return synor__coord_store_err(e);
    char *t = synor__malloc(128);
    if (t)
        snprintf(t, 128, "{\"sha256\":\"%s\",\"bytes\":%zu}\n", sha, r->len);
    return synor__coord_json(201, t);
}

static coord_resp blob_get(coord_req *r, const char *sha)
{
    void *data;
    size_t n;
    int e = synor_netstore_blob_get(r->c->store, &r->who, sha, &data, &n);
    if (e)
        return synor__coord_store_err(e);
    return (coord_resp){.status = 200, .type = "application/octet-stream", .body = data, .len = n};
}

/* ----------------------------------------------------------------- route */

static coord_resp no_method(coord_req *r, const char *allow)
{
    coord_resp x = synor__coord_err(405, "%s is not allowed on %s (use %s)", r->method, r->url, allow);
    x.allow = allow;
    return x;
}

#define IS(m) (!strcmp(r->method, m))
#define ROLE(x)                   \
    do {                          \
        if (r->who.role != (x))   \
            return need(r, (x));  \
    } while (0)

coord_resp synor__coord_route(coord_req *r)
{
    const char *u = r->url;
    synor_net_role role = r->who.role;
    if (!strcmp(u, "/v1/tokens")) {
        ROLE(SYNOR_NET_OPERATOR);
        if (IS("POST"))
            return tokens_post(r);
        if (IS("GET")) {
            char *t = NULL;
            int e = synor_netstore_tokens_json(r->c->store, &t);
            return e ? synor__coord_store_err(e) : synor__coord_json(200, t);
        }
        return no_method(r, "GET, POST");
    }
    if (!strncmp(u, "/v1/tokens/", 11)) {
        ROLE(SYNOR_NET_OPERATOR);
        return IS("DELETE") ? tokens_delete(r, u + 11) : no_method(r, "DELETE");
    }
    if (!strcmp(u, "/v1/ledger") || !strcmp(u, "/v1/events")) {
        ROLE(SYNOR_NET_OPERATOR);
        if (!IS("GET"))
            return no_method(r, "GET");
        char *t = NULL;
        int e = u[4] == 'l' ? synor_netstore_ledger_json(r->c->store, &t)
                            : synor_netstore_events_json(r->c->store, 200, &t);
        return e ? synor__coord_store_err(e) : synor__coord_json(200, t);
    }
    if (!strcmp(u, "/v1/devices")) {
        if (IS("GET")) {
            if (role == SYNOR_NET_CONSUMER)
                return need(r, SYNOR_NET_PROVIDER);
            char *t = NULL;
            int e = synor_netstore_devices_json(r->c->store,
                                                role == SYNOR_NET_OPERATOR ? NULL : r->who.owner, &t);
            return e ? synor__coord_store_err(e) : synor__coord_json(200, t);
        }
        ROLE(SYNOR_NET_PROVIDER);
        return IS("POST") ? devices_post(r) : no_method(r, "GET, POST");
    }
    if (!strcmp(u, "/v1/heartbeat")) {
        ROLE(SYNOR_NET_PROVIDER);
        return IS("POST") ? heartbeat(r) : no_method(r, "POST");
    }
    if (!strcmp(u, "/v1/tasks/next")) {
        ROLE(SYNOR_NET_PROVIDER);
        return IS("GET") ? next_task(r) : no_method(r, "GET");
    }
    if (!strcmp(u, "/v1/results")) {
        ROLE(SYNOR_NET_PROVIDER);
        return IS("POST") ? synor__coord_results(r) : no_method(r, "POST");
    }
    if (!strncmp(u, "/v1/tasks/", 10)) {
        ROLE(SYNOR_NET_PROVIDER);
        int64_t task;
        const char *verb;
        if (!task_id_of(u + 10, &task, &verb) ||
            (strcmp(verb, "result") && strcmp(verb, "fail") && strcmp(verb, "release")))
            return synor__coord_err(404, "no such path: %s", u);
        if (!IS("POST"))
            return no_method(r, "POST");
        return !strcmp(verb, "result")    ? task_result(r, task)
               : !strcmp(verb, "release") ? task_release(r, task)
                                          : task_fail(r, task);
    }
    if (!strcmp(u, "/v1/earnings")) {
        ROLE(SYNOR_NET_PROVIDER);
        if (!IS("GET"))
            return no_method(r, "GET");
        char *t = NULL;
        int e = synor_netstore_earnings_json(r->c->store, r->who.owner, &t);
        return e ? synor__coord_store_err(e) : synor__coord_json(200, t);
    }
    if (!strcmp(u, "/v1/blobs")) {
        if (role == SYNOR_NET_PROVIDER)
            return need(r, SYNOR_NET_CONSUMER);
        return IS("PUT") ? blob_put(r) : no_method(r, "PUT");
    }
    if (!strncmp(u, "/v1/blobs/", 10))
        return IS("GET") ? blob_get(r, u + 10) : no_method(r, "GET");
    if (!strcmp(u, "/v1/jobs") || !strncmp(u, "/v1/jobs/", 9)) {
        if (role == SYNOR_NET_PROVIDER)
            return need(r, SYNOR_NET_CONSUMER);
        return synor__coord_jobs(r);
    }
    if (!strcmp(u, "/v1/market/book")) {
        return IS("GET") ? synor__coord_market_book(r) : no_method(r, "GET");
    }
    if (!strcmp(u, "/v1/market/orders")) {
        if (role == SYNOR_NET_OPERATOR)
            return need(r, SYNOR_NET_CONSUMER);
        return IS("POST") ? synor__coord_market_order(r) : no_method(r, "POST");
    }
    return synor__coord_err(404, "no such path: %s (docs/NETWORK.md lists the API)", u);
}
