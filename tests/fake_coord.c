/* fake_coord.c - a stand-in coordinator FOR TESTS ONLY: it speaks enough
 * of the network protocol (docs/NETWORK.md) to drive `synor agent` and the
 * consumer commands, in memory, with no trust logic (one task per shard and
 * replica, the first result taken), and reports what it saw at GET
 * /test/state. Not the real coordinator (src/coord/); never installed.
 *
 * usage: fake_coord [--port N] [--token T] [--heartbeat-s S] [--corrupt-blobs]
 *   prints "fake_coord: listening on PORT" once ready; SIGTERM/SIGINT stop it.
 *   --token: the one token it accepts (default syn_test); tokens made with
 *   POST /v1/tokens are accepted too. Device ids are "dev-" + the device's
 *   name, so they survive a restart of the fake. --corrupt-blobs: every blob
 *   served to an agent has its first byte changed (checksum tests).
 *   --fail-results N: the first N result uploads are answered 503.
 *   POST /v1/tasks/{task}/release queues the task again with its checkpoint
 *   (kept when its X-Synor-SHA256 matches), handed out with the next claim. */
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "json/json.h"
#include "synor/netclient.h"

#define MAX_BODY (64u << 20)

typedef struct blob {
    char sha[65];
    char *data;
    size_t len;
} blob;

typedef struct task {
    char id[32], lease[32];
    int job, shard, state; /* 0 queued, 1 leased, 2 done, 3 failed, 4 cancelled */
    char *params;          /* JSON text */
    char (*inputs)[65];
    size_t n_inputs;
    int result;            /* blob index or -1 */
    int checkpoint;        /* blob index of a released task's checkpoint, or -1 */
} task;

typedef struct job {
    char id[32], name[128], kernel[64];
    int first, n;
    int cancelled;
} job;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const char *token;
    double heartbeat_s;
    int corrupt;
    int stopping;
    long fail_results; /* answer 503 to this many result uploads first */
    blob *blobs;
    size_t n_blobs, cap_blobs;
    task *tasks;
    size_t n_tasks, cap_tasks;
    job *jobs;
    size_t n_jobs, cap_jobs;
    char tokens[32][80];
    int revoked[32];
    int n_tokens;
    /* what the tests read */
    long registrations, heartbeats, hb_not_accepting, claims, results, bad_checksum, bad_lease,
        fails, releases, checkpoints;
    char last_fail[512];
    char last_availability[64];
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *grow(void *p, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return p;
    size_t nc = *cap ? 2 * *cap : 64;
    void *q = realloc(p, nc * sz);
    if (!q) {
        fprintf(stderr, "fake_coord: out of memory\n");
        exit(1);
    }
    *cap = nc;
    return q;
}

static int find_blob(const char *sha)
{
    for (size_t i = 0; i < S.n_blobs; i++)
        if (!strcmp(S.blobs[i].sha, sha))
            return (int)i;
    return -1;
}

static int add_blob(const char *data, size_t len, char sha[65])
{
    synor_netclient_sha256(data, len, sha);
    int i = find_blob(sha);
    if (i >= 0)
        return i;
    S.blobs = grow(S.blobs, &S.cap_blobs, S.n_blobs, sizeof(blob));
    blob *b = &S.blobs[S.n_blobs];
    memcpy(b->sha, sha, 65);
    b->data = malloc(len ? len : 1);
    memcpy(b->data, data, len);
    b->len = len;
    return (int)S.n_blobs++;
}

static char *value_text(const synor__jval *v)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    if (v)
        synor__jw_value(&w, v);
    else
        synor__buf_puts(&b, "{}");
    return synor__buf_take(&b);
}

/* ---------------------------------------------------------------- replies */

typedef struct reply {
    unsigned status;
    char *body;
    size_t len;
    const char *type;
} reply;

static reply rjson(unsigned status, char *text)
{
    reply r = {status, text, strlen(text), "application/json"};
    return r;
}

static reply rerr(unsigned status, const char *msg)
{
    char *t = malloc(strlen(msg) + 32);
    sprintf(t, "{\"error\":\"%s\"}", msg);
    return rjson(status, t);
}

static reply rfmt(unsigned status, const char *fmt, ...) SYNOR__PRINTF(2, 3);
static reply rfmt(unsigned status, const char *fmt, ...)
{
    synor__buf b;
    synor__buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    char tmp[4096];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    synor__buf_puts(&b, tmp);
    return rjson(status, synor__buf_take(&b));
}

static int authorized(const char *auth)
{
    if (!auth || strncmp(auth, "Bearer ", 7))
        return 0;
    const char *t = auth + 7;
    if (!strcmp(t, S.token))
        return 1;
    for (int i = 0; i < S.n_tokens; i++)
        if (!S.revoked[i] && !strcmp(S.tokens[i], t))
            return 1;
    return 0;
}

static const char *job_state(const job *j, int *done, int *failed)
{
    *done = *failed = 0;
    for (int i = 0; i < j->n; i++) {
        int st = S.tasks[j->first + i].state;
        *done += st == 2;
        *failed += st == 3;
    }
    if (j->cancelled)
        return "cancelled";
    if (*failed)
        return "failed";
    if (*done == j->n)
        return "done";
    return *done ? "running" : "queued";
}

static void job_json(synor__jw *w, int ji, int shards)
{
    job *j = &S.jobs[ji];
    int done, failed;
    const char *st = job_state(j, &done, &failed);
    synor__jw_obj_begin(w);
    synor__jw_key(w, "id");
    synor__jw_str(w, j->id);
    synor__jw_key(w, "name");
    synor__jw_str(w, j->name);
    synor__jw_key(w, "state");
    synor__jw_str(w, st);
    synor__jw_key(w, "tasks");
    synor__jw_int(w, j->n);
    synor__jw_key(w, "done");
    synor__jw_int(w, done);
    synor__jw_key(w, "failed");
    synor__jw_int(w, failed);
    synor__jw_key(w, "cost");
    synor__jw_str(w, "0.000000");
    if (shards) {
        synor__jw_key(w, "shards");
        synor__jw_arr_begin(w);
        for (int i = 0; i < j->n; i++) {
            task *t = &S.tasks[j->first + i];
            synor__jw_obj_begin(w);
            synor__jw_key(w, "index");
            synor__jw_int(w, t->shard);
            synor__jw_key(w, "state");
            synor__jw_str(w, t->state == 2 ? "done" : t->state == 3 ? "failed" : "queued");
            synor__jw_key(w, "result");
            if (t->result >= 0)
                synor__jw_str(w, S.blobs[t->result].sha);
            else
                synor__jw_null(w);
            synor__jw_obj_end(w);
        }
        synor__jw_arr_end(w);
    }
    synor__jw_obj_end(w);
}

static int find_job(const char *id)
{
    for (size_t i = 0; i < S.n_jobs; i++)
        if (!strcmp(S.jobs[i].id, id))
            return (int)i;
    return -1;
}

static int find_task(const char *id)
{
    for (size_t i = 0; i < S.n_tasks; i++)
        if (!strcmp(S.tasks[i].id, id))
            return (int)i;
    return -1;
}

static reply post_job(const char *body, size_t len)
{
    synor__jdoc *d = NULL;
    if (synor__json_parse(body, len, "job", &d))
        return rerr(400, "malformed JSON");
    const synor__jval *root = synor__jdoc_root(d);
    const synor__jval *k = synor__json_get(root, "kernel"), *sh = synor__json_get(root, "shards");
    const synor__jval *rp = synor__json_get(root, "replicas"), *nm = synor__json_get(root, "name");
    if (!k || k->type != SYNOR__J_STRING || !sh || sh->type != SYNOR__J_ARRAY) {
        synor__jdoc_free(d);
        return rerr(400, "field 'kernel' or 'shards' missing");
    }
    int reps = rp && rp->type == SYNOR__J_NUMBER ? (int)rp->u.n.num : 1;
    S.jobs = grow(S.jobs, &S.cap_jobs, S.n_jobs, sizeof(job));
    job *j = &S.jobs[S.n_jobs];
    memset(j, 0, sizeof *j);
    snprintf(j->id, sizeof j->id, "j-%zu", S.n_jobs + 1);
    synor__strlcpy(j->name, nm && nm->type == SYNOR__J_STRING ? nm->u.str.s : "", sizeof j->name);
    synor__strlcpy(j->kernel, k->u.str.s, sizeof j->kernel);
    j->first = (int)S.n_tasks;
    for (size_t s = 0; s < sh->u.arr.n; s++) {
        const synor__jval *shard = sh->u.arr.items[s];
        const synor__jval *in = synor__json_get(shard, "inputs");
        const synor__jval *sp = synor__json_get(shard, "params");
        for (int r = 0; r < reps; r++) {
            S.tasks = grow(S.tasks, &S.cap_tasks, S.n_tasks, sizeof(task));
            task *t = &S.tasks[S.n_tasks];
            memset(t, 0, sizeof *t);
            snprintf(t->id, sizeof t->id, "t-%zu", S.n_tasks + 1);
            t->job = (int)S.n_jobs;
            t->shard = (int)s;
            t->result = -1;
            t->checkpoint = -1;
            t->params = value_text(sp ? sp : synor__json_get(root, "params"));
            t->n_inputs = in && in->type == SYNOR__J_ARRAY ? in->u.arr.n : 0;
            t->inputs = calloc(t->n_inputs ? t->n_inputs : 1, 65);
            for (size_t i = 0; i < t->n_inputs; i++)
                synor__strlcpy(t->inputs[i], in->u.arr.items[i]->u.str.s, 65);
            S.n_tasks++;
        }
    }
    j->n = (int)S.n_tasks - j->first;
    S.n_jobs++;
    synor__jdoc_free(d);
    pthread_cond_broadcast(&S.cv);
    return rfmt(201, "{\"id\":\"%s\",\"tasks\":%d}", j->id, j->n);
}

/* The first queued task, leased; -1 if none. */
static int lease_one(void)
{
    for (size_t i = 0; i < S.n_tasks; i++) {
        task *t = &S.tasks[i];
        if (t->state == 0 && !S.jobs[t->job].cancelled) {
            t->state = 1;
            snprintf(t->lease, sizeof t->lease, "L-%zu-%ld", i + 1, ++S.claims);
            return (int)i;
        }
    }
    return -1;
}

static reply next_task(double wait)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)wait;
    int i;
    while ((i = lease_one()) < 0) {
        if (S.stopping)
            return (reply){204, NULL, 0, NULL};
        if (pthread_cond_timedwait(&S.cv, &S.mu, &until) != 0 && (i = lease_one()) < 0)
            return (reply){204, NULL, 0, NULL};
    }
    task *t = &S.tasks[i];
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b,
                      "{\"task\":\"%s\",\"lease\":\"%s\",\"job\":\"%s\",\"kernel\":\"%s\","
                      "\"params\":%s,\"inputs\":[",
                      t->id, t->lease, S.jobs[t->job].id, S.jobs[t->job].kernel, t->params);
    for (size_t k = 0; k < t->n_inputs; k++) {
        int bi = find_blob(t->inputs[k]);
        synor__buf_printf(&b, "%s{\"sha256\":\"%s\",\"bytes\":%zu}", k ? "," : "", t->inputs[k],
                          bi >= 0 ? S.blobs[bi].len : (size_t)0);
    }
    synor__buf_puts(&b, "],\"expires_in\":30");
    if (t->checkpoint >= 0)
        synor__buf_printf(&b, ",\"checkpoint\":{\"sha256\":\"%s\",\"bytes\":%zu}",
                          S.blobs[t->checkpoint].sha, S.blobs[t->checkpoint].len);
    synor__buf_puts(&b, "}");
    return rjson(200, synor__buf_take(&b));
}

static const char *query(struct MHD_Connection *c, const char *k)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

static reply route(struct MHD_Connection *c, const char *m, const char *url, const char *body,
                   size_t len)
{
    if (!strcmp(url, "/health"))
        return rjson(200, strdup("{\"ok\":true}"));
    if (!strcmp(url, "/test/state"))
        return rfmt(200,
                    "{\"registrations\":%ld,\"heartbeats\":%ld,\"heartbeats_not_accepting\":%ld,"
                    "\"claims\":%ld,\"results\":%ld,\"bad_checksum\":%ld,\"bad_lease\":%ld,"
                    "\"fails\":%ld,\"releases\":%ld,\"checkpoints\":%ld,"
                    "\"last_fail\":\"%s\",\"last_availability\":\"%s\"}",
                    S.registrations, S.heartbeats, S.hb_not_accepting, S.claims, S.results,
                    S.bad_checksum, S.bad_lease, S.fails, S.releases, S.checkpoints, S.last_fail,
                    S.last_availability);
    if (!authorized(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")))
        return rerr(401, "missing or unknown token");
    if (!strcmp(m, "POST") && !strcmp(url, "/v1/tokens")) {
        if (S.n_tokens == 32)
            return rerr(400, "too many tokens");
        int id = S.n_tokens++;
        snprintf(S.tokens[id], sizeof S.tokens[id], "syn_%064d", id + 1);
        return rfmt(201, "{\"id\":%d,\"token\":\"%s\",\"role\":\"consumer\",\"owner\":\"x\"}",
                    id + 1, S.tokens[id]);
    }
    if (!strcmp(m, "GET") && !strcmp(url, "/v1/tokens")) {
        synor__buf b;
        synor__buf_init(&b);
        synor__buf_puts(&b, "{\"tokens\":[");
        for (int i = 0; i < S.n_tokens; i++)
            synor__buf_printf(&b, "%s{\"id\":%d,\"revoked\":%s}", i ? "," : "", i + 1,
                              S.revoked[i] ? "true" : "false");
        synor__buf_puts(&b, "]}");
        return rjson(200, synor__buf_take(&b));
    }
    if (!strcmp(m, "DELETE") && !strncmp(url, "/v1/tokens/", 11)) {
        int id = atoi(url + 11);
        if (id < 1 || id > S.n_tokens)
            return rerr(404, "no such token");
        S.revoked[id - 1] = 1;
        return rfmt(200, "{\"revoked\":%d}", id);
    }
    if (!strcmp(m, "POST") && !strcmp(url, "/v1/devices")) {
        synor__jdoc *d = NULL;
        if (synor__json_parse(body, len, "device", &d))
            return rerr(400, "malformed JSON");
        const synor__jval *n = synor__json_get(synor__jdoc_root(d), "name");
        reply r = n && n->type == SYNOR__J_STRING
                      ? rfmt(201, "{\"id\":\"dev-%s\"}", n->u.str.s)
                      : rerr(400, "field 'name' missing");
        S.registrations += r.status == 201;
        const synor__jval *av = synor__json_get(synor__jdoc_root(d), "availability");
        if (av && av->type == SYNOR__J_STRING)
            synor__strlcpy(S.last_availability, av->u.str.s, sizeof S.last_availability);
        synor__jdoc_free(d);
        return r;
    }
    if (!strcmp(m, "POST") && !strcmp(url, "/v1/heartbeat")) {
        S.heartbeats++;
        if (strstr(body ? body : "", "\"accepting\":false"))
            S.hb_not_accepting++;
        return rfmt(200, "{\"leases\":[],\"heartbeat_s\":%g}", S.heartbeat_s);
    }
    if (!strcmp(m, "GET") && !strcmp(url, "/v1/tasks/next")) {
        const char *w = query(c, "wait");
        return next_task(w ? atof(w) : 0);
    }
    if (!strcmp(m, "GET") && !strncmp(url, "/v1/blobs/", 10)) {
        int i = find_blob(url + 10);
        if (i < 0)
            return rerr(404, "no such blob");
        reply r = {200, malloc(S.blobs[i].len + 1), S.blobs[i].len, "application/octet-stream"};
        memcpy(r.body, S.blobs[i].data, S.blobs[i].len);
        if (S.corrupt && r.len)
            r.body[0] ^= 0x5a;
        return r;
    }
    if (!strcmp(m, "PUT") && !strcmp(url, "/v1/blobs")) {
        char sha[65];
        add_blob(body ? body : "", len, sha);
        return rfmt(201, "{\"sha256\":\"%s\",\"bytes\":%zu}", sha, len);
    }
    if (!strcmp(m, "POST") && !strncmp(url, "/v1/tasks/", 10)) {
        char id[64];
        const char *slash = strchr(url + 10, '/');
        if (!slash || (size_t)(slash - url - 10) >= sizeof id)
            return rerr(404, "no such task");
        memcpy(id, url + 10, (size_t)(slash - url - 10));
        id[slash - url - 10] = 0;
        int ti = find_task(id);
        const char *lease = query(c, "lease");
        if (ti < 0)
            return rerr(404, "no such task");
        task *t = &S.tasks[ti];
        if (!lease || t->state != 1 || strcmp(lease, t->lease)) {
            S.bad_lease++;
            return rerr(409, "lease not held");
        }
        if (!strcmp(slash, "/fail")) {
            S.fails++;
            synor__jdoc *d = NULL;
            if (synor__json_parse(body ? body : "", len, "fail", &d) == 0) {
                const synor__jval *e = synor__json_get(synor__jdoc_root(d), "error");
                if (e && e->type == SYNOR__J_STRING) {
                    synor__strlcpy(S.last_fail, e->u.str.s, sizeof S.last_fail);
                    for (char *p = S.last_fail; *p; p++)
                        if (*p == '"' || *p == '\\')
                            *p = '\'';
                }
                synor__jdoc_free(d);
            }
            t->state = 3;
            return rjson(200, strdup("{}"));
        }
        if (!strcmp(slash, "/release")) { /* queued again, with its checkpoint */
            S.releases++;
            const char *hs = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Synor-SHA256");
            char sha[65];
            synor_netclient_sha256(body ? body : "", len, sha);
            int kept = len && hs && !strcmp(hs, sha);
            if (kept) {
                t->checkpoint = add_blob(body, len, sha);
                S.checkpoints++;
            }
            t->state = 0;
            pthread_cond_broadcast(&S.cv);
            return rfmt(200, "{\"released\":true,\"checkpoint\":\"%s\"}",
                        !len ? "none" : kept ? "stored" : "ignored");
        }
        if (strcmp(slash, "/result"))
            return rerr(404, "no such endpoint");
        if (S.fail_results > 0) {
            S.fail_results--;
            return rerr(503, "test: result uploads failing");
        }
        const char *hs = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Synor-SHA256");
        char sha[65];
        synor_netclient_sha256(body ? body : "", len, sha);
        if (!hs || strcmp(hs, sha)) {
            S.bad_checksum++;
            return rerr(400, "X-Synor-SHA256 does not match the body");
        }
        t->result = add_blob(body ? body : "", len, sha);
        t->state = 2;
        S.results++;
        return rjson(200, strdup("{\"accepted\":true,\"state\":\"validated\"}"));
    }
    if (!strcmp(m, "GET") && !strcmp(url, "/v1/earnings"))
        return rjson(200, strdup("{\"owner\":\"test\",\"balance\":\"0.000000\",\"entries\":[]}"));
    if (!strcmp(m, "POST") && !strcmp(url, "/v1/jobs"))
        return post_job(body ? body : "", len);
    if (!strcmp(m, "GET") && !strcmp(url, "/v1/jobs")) {
        synor__buf b;
        synor__buf_init(&b);
        synor__jw w;
        synor__jw_init(&w, &b, 0);
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "jobs");
        synor__jw_arr_begin(&w);
        for (size_t i = 0; i < S.n_jobs; i++)
            job_json(&w, (int)i, 0);
        synor__jw_arr_end(&w);
        synor__jw_obj_end(&w);
        return rjson(200, synor__buf_take(&b));
    }
    if (!strncmp(url, "/v1/jobs/", 9)) {
        char id[64];
        synor__strlcpy(id, url + 9, sizeof id);
        char *sl = strchr(id, '/');
        if (sl)
            *sl = 0;
        int ji = find_job(id);
        if (ji < 0)
            return rerr(404, "no such job");
        job *j = &S.jobs[ji];
        if (!strcmp(m, "DELETE") && !sl) {
            j->cancelled = 1;
            return rfmt(200, "{\"cancelled\":\"%s\"}", j->id);
        }
        if (!strcmp(m, "GET") && !sl) {
            synor__buf b;
            synor__buf_init(&b);
            synor__jw w;
            synor__jw_init(&w, &b, 0);
            job_json(&w, ji, 1);
            return rjson(200, synor__buf_take(&b));
        }
        if (!strcmp(m, "GET") && sl && !strcmp(url + 9 + strlen(id), "/result")) {
            int done, failed;
            if (strcmp(job_state(j, &done, &failed), "done"))
                return rerr(409, "job not done");
            synor__buf b;
            synor__buf_init(&b);
            /* shard order; the first replica's result */
            int last_shard = -1;
            for (int i = 0; i < j->n; i++) {
                task *t = &S.tasks[j->first + i];
                if (t->shard == last_shard)
                    continue;
                last_shard = t->shard;
                synor__buf_append(&b, S.blobs[t->result].data, S.blobs[t->result].len);
            }
            reply r = {200, NULL, b.len, "application/octet-stream"};
            r.body = b.len ? synor__buf_take(&b) : malloc(1);
            return r;
        }
    }
    return rerr(404, "no such endpoint");
}

typedef struct conn {
    synor__buf body;
    int over;
} conn;

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **con_cls)
{
    (void)cls, (void)version;
    conn *cn = *con_cls;
    if (!cn) {
        cn = calloc(1, sizeof *cn);
        synor__buf_init(&cn->body);
        *con_cls = cn;
        return MHD_YES;
    }
    if (*size) {
        if (cn->body.len + *size > MAX_BODY)
            cn->over = 1;
        else
            synor__buf_append(&cn->body, data, *size);
        *size = 0;
        return MHD_YES;
    }
    reply r;
    if (cn->over) {
        r = rerr(413, "body too large");
    } else {
        pthread_mutex_lock(&S.mu);
        r = route(c, method, url, cn->body.data, cn->body.len);
        pthread_mutex_unlock(&S.mu);
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r.len, r.body ? r.body : (void *)(uintptr_t)"",
                                        r.body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (r.type)
        MHD_add_response_header(resp, "Content-Type", r.type);
    enum MHD_Result ret = MHD_queue_response(c, r.status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void done_cb(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    conn *cn = *con_cls;
    if (cn) {
        synor__buf_free(&cn->body);
        free(cn);
    }
    *con_cls = NULL;
}

int main(int argc, char **argv)
{
    unsigned port = 0;
    S.token = "syn_test";
    S.heartbeat_s = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--port") && i + 1 < argc)
            port = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--token") && i + 1 < argc)
            S.token = argv[++i];
        else if (!strcmp(argv[i], "--heartbeat-s") && i + 1 < argc)
            S.heartbeat_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--fail-results") && i + 1 < argc)
            S.fail_results = atol(argv[++i]);
        else if (!strcmp(argv[i], "--corrupt-blobs"))
            S.corrupt = 1;
        else {
            fprintf(stderr, "fake_coord: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_cond_init(&S.cv, &ca);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC,
        (uint16_t)port, NULL, NULL, handle, NULL, MHD_OPTION_NOTIFY_COMPLETED, done_cb, NULL,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_CONNECTION_TIMEOUT, 120u,
        MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "fake_coord: cannot listen on port %u\n", port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("fake_coord: listening on %u\n", info ? info->port : port);
    fflush(stdout);
    int sig;
    sigwait(&stop, &sig);
    /* wake long polls so their threads end */
    pthread_mutex_lock(&S.mu);
    S.stopping = 1;
    pthread_cond_broadcast(&S.cv);
    pthread_mutex_unlock(&S.mu);
    MHD_stop_daemon(d);
    return 0;
}
