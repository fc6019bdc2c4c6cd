/* agent.c - the provider agent's life (synor/agent.h): register, heartbeat
 * on a thread of its own, and one claim loop per registered device.
 *
 * Threads, each with its own connection: the heartbeat thread only reports
 * (busy, accepting) and counts; each device's loop (device 0's on run's
 * thread, the others' on threads of their own, each with a runtime of its
 * own sharing the owner's CPU share) does:
 *
 *   results from the state directory not yet acknowledged -> upload
 *   the owner's limits -> accepting or not (not: wait, check again)
 *   GET /v1/tasks/next for its device (long poll, cancellable by stop)
 *   per task (agent_task.c): memory share, inputs (SHA-256 checked), run
 *   (stopped at a safe point and released on a preemption,
 *   agent_preempt.c) -> result saved if costly -> upload, several in one
 *   request when batches are offered (agent_batch.c) -> dropped
 *
 * A result is saved before it is uploaded when it took long to compute,
 * so a crash between the two leaves it for the next start; the upload is
 * idempotent for the coordinator (same task, lease and bytes). An upload
 * that gets no answer is saved and retried. Stop and reclaim are atomic
 * flags (async-signal-safe) that also cancel the long polls in flight.
 * max_tasks is shared by the loops through a reservation counter. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "common/common.h"
#include "synor/netclient.h"

#define logf_ synor__agent_logf
#define url_escape synor__agent_url_escape
#define nap synor__agent_nap


void synor_agent_config_init(synor_agent_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->magic = SYNOR__AGENT_MAGIC;
    synor_netclient_config_init(&cfg->net);
    cfg->availability.kind = SYNOR_AVAIL_ALWAYS;
    cfg->cpu_share = 1;
    cfg->idle_threshold = 0.10;
    cfg->mem_share = 1;
    cfg->wait_s = 20;
    cfg->idle_poll_s = 5;
    cfg->heartbeat_s = 5;
}

void synor__agent_logf(synor_agent *a, const char *fmt, ...)
{
    if (!a->cfg.log)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    a->cfg.log(a->cfg.log_user, line);
}

static int stopping(synor_agent *a)
{
    return atomic_load(&a->stop);
}

void synor__agent_nap(synor_agent *a, double s)
{
    double end = synor_netclient_now() + s;
    while (!stopping(a)) {
        double left = end - synor_netclient_now();
        if (left <= 0)
            return;
        struct timespec ts = {0, (long)((left > 0.05 ? 0.05 : left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static int dup_opt(const char *s, char **out)
{
    *out = NULL;
    if (!s)
        return 0;
    *out = synor__strdup(s);
    return *out ? 0 : -1;
}

int synor_agent_create(const synor_agent_config *cfg, synor_agent **out)
{
    if (!cfg || !out || cfg->magic != SYNOR__AGENT_MAGIC)
        return synor__error(SYNOR_EINVAL, "agent: config not initialized "
                                          "(synor_agent_config_init)");
    if (!(cfg->cpu_share > 0 && cfg->cpu_share <= 1))
        return synor__error(SYNOR_EINVAL, "agent: cpu share %g: expected above 0 and at most 1",
                            cfg->cpu_share);
    if (!(cfg->idle_threshold > 0 && cfg->idle_threshold <= 1))
        return synor__error(SYNOR_EINVAL,
                            "agent: idle threshold %g: expected above 0 and at most 1",
                            cfg->idle_threshold);
    if (!(cfg->mem_share > 0 && cfg->mem_share <= 1))
        return synor__error(SYNOR_EINVAL, "agent: memory share %g: expected above 0 and at most 1",
                            cfg->mem_share);
    if (cfg->n_devices < 1 || cfg->n_devices > SYNOR_AGENT_MAX_DEVICES)
        return synor__error(SYNOR_EINVAL, "agent: %u devices: expected 1 to %d", cfg->n_devices,
                            SYNOR_AGENT_MAX_DEVICES);
    for (unsigned i = 0; i < cfg->n_devices; i++)
        if (!cfg->devices[i].name[0])
            return synor__error(SYNOR_EINVAL, "agent: device %u has no name", i);
    if (cfg->n_models > SYNOR_AGENT_MAX_MODELS)
        return synor__error(SYNOR_EINVAL, "agent: %u models: at most %d", cfg->n_models,
                            SYNOR_AGENT_MAX_MODELS);
    if (!(cfg->wait_s >= 0 && cfg->wait_s <= 300) || !(cfg->idle_poll_s > 0) ||
        !(cfg->heartbeat_s > 0))
        return synor__error(SYNOR_EINVAL, "agent: wait_s in [0, 300], idle_poll_s and "
                                          "heartbeat_s above 0");
    if (cfg->claim_max > SYNOR_AGENT_CLAIM_MAX)
        return synor__error(SYNOR_EINVAL, "agent: claim_max: value %u: 0 to %d", cfg->claim_max,
                            SYNOR_AGENT_CLAIM_MAX);
    int r = synor_availability_validate(&cfg->availability);
    if (r)
        return r;
    synor_agent *a = synor__calloc(1, sizeof(*a));
    if (!a)
        return synor__error(SYNOR_ENOMEM, "agent: out of memory");
    a->cfg = *cfg;
    a->lock_fd = -1;
    pthread_mutex_init(&a->ids_mu, NULL);
    pthread_mutex_init(&a->reg_mu, NULL);
    if (dup_opt(cfg->net.url, &a->url) || dup_opt(cfg->net.token, &a->token) ||
        dup_opt(cfg->net.cacert, &a->cacert) || dup_opt(cfg->state_dir, &a->state_dir) ||
        dup_opt(cfg->price, &a->price)) {
        synor_agent_destroy(a);
        return synor__error(SYNOR_ENOMEM, "agent: out of memory");
    }
    a->cfg.net.url = a->url;
    a->cfg.net.token = a->token;
    a->cfg.net.cacert = a->cacert;
    a->cfg.state_dir = a->state_dir;
    a->cfg.price = a->price;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    a->workers = (unsigned)((double)cores * cfg->cpu_share);
    if (a->workers < 1)
        a->workers = 1;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    a->mem_limit = pages > 0 && psz > 0
                       ? (uint64_t)((double)pages * (double)psz * cfg->mem_share)
                       : UINT64_MAX;
    atomic_init(&a->stop, 0);
    atomic_init(&a->reclaim, 0);
    atomic_init(&a->busy, 0);
    atomic_init(&a->accepting, 1);
    atomic_init(&a->hb_period_ms, (int)(cfg->heartbeat_s * 1000));
    if ((r = synor_netclient_create(&a->cfg.net, &a->net)) ||
        (r = synor__agent_exec_create(a->workers, &a->cfg, &a->exec)) ||
        (a->state_dir && (r = synor__agent_state_open(a->state_dir, &a->lock_fd))) ||
        (a->state_dir && (r = synor__agent_state_load_ids(a->state_dir, cfg->n_devices,
                                                          cfg->devices, a->ids)))) {
        synor_agent_destroy(a);
        return r;
    }
    a->loops[0] = (synor__agent_loop){.a = a, .dev = 0, .net = a->net, .exec = a->exec};
    *out = a;
    return 0;
}

void synor_agent_stop(synor_agent *a)
{
    if (!a)
        return;
    atomic_store(&a->stop, 1);
    synor_netclient_cancel(a->net); /* only the long poll is cancellable */
    for (unsigned i = 1; i < SYNOR_AGENT_MAX_DEVICES; i++)
        if (a->loops[i].net)
            synor_netclient_cancel(a->loops[i].net);
}

void synor_agent_reclaim(synor_agent *a)
{
    if (!a)
        return;
    atomic_store(&a->reclaim, 1);
    synor_agent_stop(a);
}

void synor_agent_destroy(synor_agent *a)
{
    if (!a)
        return;
    for (unsigned i = 1; i < SYNOR_AGENT_MAX_DEVICES; i++) {
        synor_netclient_destroy(a->loops[i].net);
        synor__agent_exec_destroy(a->loops[i].exec);
    }
    synor_netclient_destroy(a->net);
    synor__agent_exec_destroy(a->exec);
    if (a->lock_fd >= 0)
        close(a->lock_fd); /* releases the flock */
    synor__free(a->url);
    if (a->token) {
        memset(a->token, 0, strlen(a->token));
        synor__free(a->token);
    }
    synor__free(a->cacert);
    synor__free(a->state_dir);
    synor__free(a->price);
    pthread_mutex_destroy(&a->ids_mu);
    pthread_mutex_destroy(&a->reg_mu);
    synor__free(a);
}

void synor_agent_stats_get(const synor_agent *a, synor_agent_stats *o)
{
    synor_agent *m = (synor_agent *)(uintptr_t)a; /* atomics are read, not changed */
    memset(o, 0, sizeof(*o));
    o->tasks_done = atomic_load(&m->s_done);
    o->tasks_failed = atomic_load(&m->s_failed);
    o->results_rejected = atomic_load(&m->s_rejected);
    o->reuploaded = atomic_load(&m->s_reup);
    o->heartbeats = atomic_load(&m->s_hb);
    o->heartbeat_errors = atomic_load(&m->s_hb_err);
    o->claims_empty = atomic_load(&m->s_empty);
    o->not_accepting = atomic_load(&m->s_notacc);
    o->released = atomic_load(&m->s_released);
    o->resumed = atomic_load(&m->s_resumed);
    o->workers = a->workers;
}

const char *synor_agent_device_id(const synor_agent *a, unsigned i)
{
    return a && i < a->cfg.n_devices ? a->ids[i] : "";
}

void synor__agent_url_escape(synor__buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            synor__buf_append(b, (const char *)&c, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            synor__buf_append(b, e, 3);
        }
    }
}

/* An answer's JSON root, parsed into *d; SYNOR_EPARSE naming what. */
static int answer_json(const synor_net_response *a, const char *what, synor__jdoc **d)
{
    return synor__json_parse(a->body ? a->body : "", a->len, what, d);
}

/* A status that means this agent cannot go on (token refused). */
static int fatal_status(long s)
{
    return s == 401 || s == 403;
}

/* ------------------------------------------------------------ registration */

/* The schedule as the protocol carries it: "always", "idle" or one window
 * "utc:S-E". The agent enforces its whole schedule itself; what the
 * coordinator gets is for routing, so a schedule the protocol cannot say
 * goes as the closest one that promises no more: several windows as the
 * first, charging-only as idle. */
static void protocol_availability(const synor_availability *av, char *buf, size_t n)
{
    switch (av->kind) {
    case SYNOR_AVAIL_UTC_WINDOWS:
        if (av->n_windows > 0) {
            snprintf(buf, n, "utc:%u-%u", av->windows[0].start_hour, av->windows[0].end_hour);
            return;
        }
        break;
    case SYNOR_AVAIL_ALWAYS:
        break;
    default: /* idle, charging */
        snprintf(buf, n, "idle");
        return;
    }
    snprintf(buf, n, "always");
}

static int register_devices(synor_agent *a, synor_netclient *net)
{
    char avail[128];
    protocol_availability(&a->cfg.availability, avail, sizeof avail);
    double wait = 0.5;
    for (unsigned i = 0; i < a->cfg.n_devices && !stopping(a);) {
        const synor_agent_device *dv = &a->cfg.devices[i];
        synor__buf b;
        synor__buf_init(&b);
        synor__jw w;
        synor__jw_init(&w, &b, 0);
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "name");
        synor__jw_str(&w, dv->name);
        synor__jw_key(&w, "kind");
        synor__jw_str(&w, dv->kind[0] ? dv->kind : "cpu");
        synor__jw_key(&w, "profile");
        synor__jw_str(&w, dv->profile);
        synor__jw_key(&w, "gflops");
        synor__jw_num(&w, dv->gflops);
        synor__jw_key(&w, "mem_bytes");
        synor__jw_uint(&w, dv->mem_bytes);
        synor__jw_key(&w, "availability");
        synor__jw_str(&w, avail);
        if (a->cfg.price) {
            synor__jw_key(&w, "price");
            synor__jw_str(&w, a->cfg.price);
        }
        synor__jw_obj_end(&w);
        char *body = synor__buf_take(&b);
        if (!body)
            return synor__error(SYNOR_ENOMEM, "agent: out of memory");
        synor_net_request rq = {.method = "POST", .path = "/v1/devices", .body = body,
                                .body_len = strlen(body), .idempotent = 1};
        synor_net_response ans;
        int r = synor_netclient_request(net, &rq, &ans);
        synor__free(body);
        if (r == SYNOR_EIO) { /* unreachable: wait, try again */
            logf_(a, "coordinator unreachable (%s); retrying in %.1f s", synor_errmsg(), wait);
            nap(a, wait);
            wait = wait * 2 > 5 ? 5 : wait * 2;
            continue;
        }
        if (r)
            return r;
        if ((r = synor_net_response_check(&ans, "POST /v1/devices"))) {
            synor_net_response_free(&ans);
            return r; /* 400, 401, 403: nothing to retry */
        }
        synor__jdoc *d = NULL;
        if ((r = answer_json(&ans, "POST /v1/devices", &d))) {
            synor_net_response_free(&ans);
            return r;
        }
        synor__jval *id = synor__json_get(synor__jdoc_root(d), "id");
        if (!id || id->type != SYNOR__J_STRING || !id->u.str.len || id->u.str.len >= 64) {
            synor__jdoc_free(d);
            synor_net_response_free(&ans);
            return synor__error(SYNOR_ESCHEMA, "POST /v1/devices: the answer has no \"id\"");
        }
        if (a->ids[i][0] && strcmp(a->ids[i], id->u.str.s))
            logf_(a, "device %s: id %s (was %s before)", dv->name, id->u.str.s, a->ids[i]);
        pthread_mutex_lock(&a->ids_mu);
        synor__strlcpy(a->ids[i], id->u.str.s, 64);
        pthread_mutex_unlock(&a->ids_mu);
        logf_(a, "registered %s as %s", dv->name, a->ids[i]);
        synor__jdoc_free(d);
        synor_net_response_free(&ans);
        i++;
    }
    if (stopping(a))
        return 0;
    if (a->state_dir)
        return synor__agent_state_save_ids(a->state_dir, a->url, a->cfg.n_devices,
                                           a->cfg.devices, a->ids);
    return 0;
}

/* --------------------------------------------------------------- heartbeat */

static void *heartbeat_main(void *arg)
{
    synor_agent *a = arg;
    synor_netclient_config nc = a->cfg.net;
    nc.retries = 0; /* the next beat is the retry */
    synor_netclient *net = NULL;
    if (synor_netclient_create(&nc, &net)) {
        logf_(a, "heartbeat: %s", synor_errmsg());
        return NULL;
    }
    int failing = 0;
    while (!stopping(a)) {
        synor__buf b;
        synor__buf_init(&b);
        synor__jw w;
        synor__jw_init(&w, &b, 0);
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "devices");
        synor__jw_arr_begin(&w);
        pthread_mutex_lock(&a->ids_mu);
        for (unsigned i = 0; i < a->cfg.n_devices; i++)
            synor__jw_str(&w, a->ids[i]);
        pthread_mutex_unlock(&a->ids_mu);
        synor__jw_arr_end(&w);
        synor__jw_key(&w, "busy");
        synor__jw_bool(&w, atomic_load(&a->busy));
        synor__jw_key(&w, "accepting");
        synor__jw_bool(&w, atomic_load(&a->accepting));
        synor__jw_obj_end(&w);
        char *body = synor__buf_take(&b);
        int ok = 0;
        if (body) {
            synor_net_request rq = {.method = "POST", .path = "/v1/heartbeat", .body = body,
                                    .body_len = strlen(body), .idempotent = 1};
            synor_net_response ans;
            if (synor_netclient_request(net, &rq, &ans) == 0) {
                ok = ans.status == 200;
                synor__jdoc *d = NULL;
                if (ok && answer_json(&ans, "heartbeat", &d) == 0) {
                    synor__jval *p = synor__json_get(synor__jdoc_root(d), "heartbeat_s");
                    if (p && p->type == SYNOR__J_NUMBER && p->u.n.num >= 0.05 &&
                        p->u.n.num <= 300)
                        atomic_store(&a->hb_period_ms, (int)(p->u.n.num * 1000));
                    synor__jval *bt = synor__json_get(synor__jdoc_root(d), "batch");
                    atomic_store(&a->batch, bt && bt->type == SYNOR__J_BOOL && bt->u.boolean);
                    synor__jdoc_free(d);
                }
                if (!ok && !failing)
                    logf_(a, "heartbeat: HTTP %ld", ans.status);
                synor_net_response_free(&ans);
            } else if (!failing) {
                logf_(a, "heartbeat: %s", synor_errmsg());
            }
            synor__free(body);
        }
        if (ok) {
            atomic_fetch_add(&a->s_hb, 1);
            if (failing)
                logf_(a, "heartbeat: the coordinator answers again");
            failing = 0;
        } else {
            atomic_fetch_add(&a->s_hb_err, 1);
            failing = 1;
        }
        nap(a, atomic_load(&a->hb_period_ms) / 1000.0);
    }
    synor_netclient_destroy(net);
    return NULL;
}

/* ---------------------------------------------------------------- results */

int synor__agent_upload(synor__agent_loop *L, const synor__agent_pending *p, int *accepted)
{
    synor_agent *a = L->a;
    synor__buf path;
    synor__buf_init(&path);
    synor__buf_puts(&path, "/v1/tasks/");
    url_escape(&path, p->task);
    synor__buf_puts(&path, "/result?lease=");
    url_escape(&path, p->lease);
    char *ps = synor__buf_take(&path);
    if (!ps)
        return synor__error(SYNOR_ENOMEM, "agent: out of memory");
    char h1[100], h2[64];
    snprintf(h1, sizeof h1, "X-Synor-SHA256: %s", p->sha256);
    snprintf(h2, sizeof h2, "X-Synor-Elapsed-Ms: %llu", (unsigned long long)p->elapsed_ms);
    const char *hdrs[] = {h1, h2, NULL};
    synor_net_request rq = {.method = "POST", .path = ps, .body = p->data, .body_len = p->len,
                            .content_type = "application/octet-stream", .headers = hdrs,
                            .idempotent = 1};
    synor_net_response ans;
    int r = synor_netclient_request(L->net, &rq, &ans);
    synor__free(ps);
    *accepted = 0;
    if (r)
        return r;
    if (fatal_status(ans.status)) {
        r = synor_net_response_check(&ans, "result upload");
        synor_net_response_free(&ans);
        return r;
    }
    if (ans.status == 200) {
        const char *state = "?";
        synor__jdoc *d = NULL;
        if (answer_json(&ans, "result", &d) == 0) {
            synor__jval *s = synor__json_get(synor__jdoc_root(d), "state");
            if (s && s->type == SYNOR__J_STRING)
                state = s->u.str.s;
            logf_(a, "task %s: result accepted (%s)", p->task, state);
            synor__jdoc_free(d);
        }
        *accepted = 1;
    } else {
        synor_net_response_check(&ans, "result upload");
        logf_(a, "task %s: result refused: %s", p->task, synor_errmsg());
    }
    synor_net_response_free(&ans);
    return 0;
}

/* Sends every result of the state directory. 0 when none is left. */
static int flush_pending(synor__agent_loop *L, int counting)
{
    synor_agent *a = L->a;
    if (!a->state_dir)
        return 0;
    synor__agent_pending *list = NULL;
    size_t n = 0;
    int r = synor__agent_state_load_pending(a->state_dir, &list, &n);
    if (r)
        return r;
    for (size_t i = 0; i < n && !r; i++) {
        int acc = 0;
        r = synor__agent_upload(L, &list[i], &acc);
        if (r)
            break;
        if (counting) {
            atomic_fetch_add(&a->s_reup, 1);
            atomic_fetch_add(&a->reserved, 1); /* counts towards max_tasks */
            logf_(a, "task %s: result from the state directory uploaded again", list[i].task);
        }
        atomic_fetch_add(acc ? &a->s_done : &a->s_rejected, 1);
        synor__agent_state_drop_pending(a->state_dir, list[i].task);
    }
    synor__agent_pending_free_all(list, n);
    return r;
}

/* Takes up to want tasks from what max_tasks leaves (all of want without
 * max_tasks); 0 when nothing is left. */
static unsigned reserve(synor_agent *a, unsigned want)
{
    if (!a->cfg.max_tasks)
        return want;
    unsigned long long cur = atomic_load(&a->reserved), k;
    do {
        if (cur >= a->cfg.max_tasks)
            return 0;
        k = a->cfg.max_tasks - cur < want ? a->cfg.max_tasks - cur : want;
    } while (!atomic_compare_exchange_weak(&a->reserved, &cur, cur + k));
    return (unsigned)k;
}

static void unreserve(synor_agent *a, unsigned k)
{
    if (a->cfg.max_tasks && k)
        atomic_fetch_sub(&a->reserved, k);
}

/* Runs the n tasks of one claim (d), one after the other; their results
 * go up as agent_batch.c says, the tasks not started go back on a stop. */
static int run_claim(synor__agent_loop *L, synor__jdoc *d)
{
    synor_agent *a = L->a;
    /* {"tasks":[...]} when a batch was asked for, else one task */
    const synor__jval *root = synor__jdoc_root(d), *list = synor__json_get(root, "tasks");
    size_t n = list && list->type == SYNOR__J_ARRAY ? list->u.arr.n : 1;
    /* finished results wait here to go up together when batches are
     * offered (agent_batch.c says when) */
    synor__agent_held *held = synor__calloc(n ? n : 1, sizeof *held);
    if (!held)
        return synor__error(SYNOR_ENOMEM, "agent: out of memory");
    size_t nh = 0;
    double first = 0;
    int r = 0;
    for (size_t i = 0; i < n && !r; i++) {
        const synor__jval *one = list && list->type == SYNOR__J_ARRAY ? list->u.arr.items[i] : root;
        const synor__jval *t = synor__json_get(one, "task"), *l = synor__json_get(one, "lease");
        if (!t || !l || t->type != SYNOR__J_STRING || l->type != SYNOR__J_STRING) {
            r = synor__error(SYNOR_EIO, "GET /v1/tasks/next: no task or lease in the answer");
            break;
        }
        /* a stop, a reclaim or the limits closing: the rest go back */
        if (i && (stopping(a) || L->limits_closed)) {
            int e = synor__agent_release(L, t->u.str.s, l->u.str.s, NULL, 0);
            if (e && e != SYNOR_EIO)
                r = e;
            continue;
        }
        int have = 0;
        r = synor__agent_run_task(L, d, one, t->u.str.s, l->u.str.s, &held[nh], &have);
        if (have && !nh++)
            first = synor_netclient_now();
        if (nh && synor__agent_flush_due(a, held, nh, first, i + 1 == n)) {
            int e = synor__agent_upload_held(L, held, nh);
            nh = 0;
            if (e && !r)
                r = e;
        }
    }
    if (nh) { /* left by a stop or an error */
        int e = synor__agent_upload_held(L, held, nh);
        if (e && !r)
            r = e;
    }
    synor__free(held);
    return r;
}

/* One round of a device's loop: the owner's limits, a claim (long poll)
 * for its device, the tasks. */
static int claim_and_run(synor__agent_loop *L)
{
    synor_agent *a = L->a;
    if (!synor__agent_within_limits(a)) {
        if (atomic_exchange(&a->accepting, 0))
            logf_(a, "outside the owner's limits: taking no work");
        atomic_fetch_add(&a->s_notacc, 1);
        nap(a, a->cfg.idle_poll_s);
        return 0;
    }
    if (!atomic_exchange(&a->accepting, 1))
        logf_(a, "within the owner's limits again: taking work");
    unsigned max = reserve(a, a->cfg.claim_max > 1 ? a->cfg.claim_max : 1);
    if (!max)
        return 0; /* max_tasks reached: the loop ends */
    char id[64];
    pthread_mutex_lock(&a->ids_mu);
    memcpy(id, a->ids[L->dev], sizeof id);
    pthread_mutex_unlock(&a->ids_mu);
    synor__buf path;
    synor__buf_init(&path);
    synor__buf_puts(&path, "/v1/tasks/next?device=");
    url_escape(&path, id);
    synor__buf_printf(&path, "&wait=%d", (int)a->cfg.wait_s);
    if (max > 1 && atomic_load(&a->batch))
        synor__buf_printf(&path, "&max=%u", max);
    else
        unreserve(a, max - 1), max = 1;
    char *ps = synor__buf_take(&path);
    if (!ps) {
        unreserve(a, max);
        return synor__error(SYNOR_ENOMEM, "agent: out of memory");
    }
    synor_net_request rq = {.method = "GET", .path = ps, .idempotent = 1, .cancellable = 1,
                            .timeout_s = a->cfg.wait_s + a->cfg.net.timeout_s};
    synor_net_response ans;
    int r = synor_netclient_request(L->net, &rq, &ans);
    synor__free(ps);
    if (r) {
        unreserve(a, max);
        return r;
    }
    if (ans.status == 204) {
        unreserve(a, max);
        atomic_fetch_add(&a->s_empty, 1);
        synor_net_response_free(&ans);
        return 0;
    }
    if (ans.status != 200) {
        unreserve(a, max);
        r = synor_net_response_check(&ans, "GET /v1/tasks/next");
        synor_net_response_free(&ans);
        return r == SYNOR_EINVAL || r == SYNOR_ENOENT ? r : SYNOR_EIO;
    }
    synor__jdoc *d = NULL;
    r = answer_json(&ans, "GET /v1/tasks/next", &d);
    synor_net_response_free(&ans);
    if (r) {
        unreserve(a, max);
        return SYNOR_EIO; /* a garbled answer: as no answer */
    }
    const synor__jval *list = synor__json_get(synor__jdoc_root(d), "tasks");
    size_t n = list && list->type == SYNOR__J_ARRAY ? list->u.arr.n : 1;
    unreserve(a, n < max ? max - (unsigned)n : 0);
    atomic_fetch_add(&a->busy, 1);
    r = run_claim(L, d);
    atomic_fetch_sub(&a->busy, 1);
    if (L->limits_closed) {
        L->limits_closed = 0;
        atomic_store(&a->accepting, 0);
        logf_(a, "outside the owner's limits: taking no work");
    }
    synor__jdoc_free(d);
    return r;
}

/* A device's loop, until a stop, max_tasks or a fatal error. */
static int loop_run(synor__agent_loop *L)
{
    synor_agent *a = L->a;
    double backoff = 0.2;
    int r = 0;
    while (!stopping(a)) {
        if (a->cfg.max_tasks && atomic_load(&a->reserved) >= a->cfg.max_tasks)
            break;
        /* results an upload left (one loop: others may be uploading theirs) */
        r = a->cfg.n_devices == 1 ? flush_pending(L, 0) : 0;
        if (r == 0)
            r = claim_and_run(L);
        if (r == SYNOR_EIO || r == SYNOR_EBUSY) { /* unreachable, or stop */
            if (r == SYNOR_EIO)
                logf_(a, "%s; retrying in %.1f s", synor_errmsg(), backoff);
            nap(a, backoff);
            backoff = backoff * 2 > 5 ? 5 : backoff * 2;
            r = 0;
            continue;
        }
        if (r == SYNOR_ENOENT) { /* our device is unknown: register again */
            logf_(a, "%s; registering again", synor_errmsg());
            pthread_mutex_lock(&a->reg_mu);
            r = register_devices(a, L->net);
            pthread_mutex_unlock(&a->reg_mu);
            if (r)
                break;
            continue;
        }
        if (r)
            break;
        backoff = 0.2;
    }
    return r;
}

static void *loop_main(void *arg)
{
    synor__agent_loop *L = arg;
    L->rc = loop_run(L);
    if (L->rc) /* a fatal error ends every loop */
        synor_agent_stop(L->a);
    return NULL;
}

/* The loops of devices 1.. (device 0's is run's thread, on the agent's
 * connection): a connection and a runtime each. The CPU workers are
 * shared: one for each GPU's loop (it feeds the GPU and runs what has no
 * GPU version), the rest for the CPU's. */
static int make_loops(synor_agent *a)
{
    unsigned n = a->cfg.n_devices, gpus = 0;
    for (unsigned i = 0; i < n; i++)
        gpus += strcmp(a->cfg.devices[i].kind, "cpu") != 0;
    unsigned cpus = n - gpus ? n - gpus : 1;
    unsigned cpu_workers = a->workers > gpus ? (a->workers - gpus) / cpus : 1;
    if (!cpu_workers)
        cpu_workers = 1;
    for (unsigned i = 0; i < n; i++) {
        synor__agent_loop *L = &a->loops[i];
        synor_agent_config one = a->cfg;
        one.n_devices = 1;
        one.devices[0] = a->cfg.devices[i];
        unsigned w = strcmp(a->cfg.devices[i].kind, "cpu") ? 1 : cpu_workers;
        synor__agent_exec *x = NULL;
        int r = synor__agent_exec_create(w, &one, &x);
        if (!r && i && (r = synor_netclient_create(&a->cfg.net, &L->net)))
            synor__agent_exec_destroy(x);
        if (r)
            return r;
        L->a = a;
        L->dev = i;
        if (i) {
            L->exec = x;
        } else { /* device 0 keeps the agent's connection */
            synor__agent_exec_destroy(a->exec);
            a->exec = L->exec = x;
        }
    }
    return 0;
}

int synor_agent_run(synor_agent *a)
{
    int r = 0;
    /* Results a previous run left: before anything else. */
    while (!stopping(a) && (r = flush_pending(&a->loops[0], 1)) == SYNOR_EIO) {
        logf_(a, "coordinator unreachable (%s); results kept, retrying", synor_errmsg());
        nap(a, 2);
    }
    if (r)
        return r;
    if ((r = register_devices(a, a->net)) || stopping(a))
        return r;
    if (a->cfg.n_devices > 1 && (r = make_loops(a)))
        return r;
    if (pthread_create(&a->hb, NULL, heartbeat_main, a) != 0)
        return synor__error(SYNOR_EIO, "agent: cannot start the heartbeat thread");
    a->hb_started = 1;
    /* Batches are asked for once a heartbeat said the coordinator has
     * them: the first claim waits for its answer (5 s at most). */
    for (int i = 0; a->cfg.claim_max > 1 && i < 500 && !stopping(a) &&
                    !atomic_load(&a->s_hb) && !atomic_load(&a->s_hb_err);
         i++)
        nap(a, 0.01);
    /* one loop per device, at the same time */
    unsigned started = 1;
    for (; started < a->cfg.n_devices; started++)
        if (pthread_create(&a->loops[started].th, NULL, loop_main, &a->loops[started]) != 0) {
            logf_(a, "cannot start the loop of %s: its device stays idle",
                  a->cfg.devices[started].name);
            break;
        }
    r = loop_run(&a->loops[0]);
    if (r)
        synor_agent_stop(a);
    for (unsigned i = 1; i < started; i++) {
        pthread_join(a->loops[i].th, NULL);
        if (!r)
            r = a->loops[i].rc;
    }
    atomic_store(&a->stop, 1);
    pthread_join(a->hb, NULL);
    a->hb_started = 0;
    return r;
}
