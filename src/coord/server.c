/* server.c - the coordinator's HTTP side on libmicrohttpd, its long-poll
 * wake-ups and its reaper thread.
 *
 * Threads: MHD runs a thread per connection, so a long-poll simply blocks
 * its own connection's thread on a condition variable (an agent keeps one
 * connection open; 50 agents are 50 mostly sleeping threads). A pool of a
 * few threads would need MHD's suspend/resume for every waiting poll; with
 * keep-alive connections the thread-per-connection model costs nothing on
 * the dispatch path and keeps the handlers plain blocking code.
 *
 * Order of checks on every request, before anything can change: a body
 * announced or grown over its limit (413), then the token (401) for all but
 * /health, then the route and role (404/405/403), then parsing (400). The
 * store commits before the reply is queued. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "coord/coord_internal.h"
#include "json/json.h"

typedef struct conn_req {
    synor__buf body;
    int too_big;
    size_t limit;
    uint64_t t0;
} conn_req;

uint64_t synor__coord_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

coord_resp synor__coord_json(int status, char *json)
{
    if (!json)
        return synor__coord_err(500, "out of memory");
    return (coord_resp){.status = status, .type = "application/json", .body = json,
                        .len = strlen(json)};
}

coord_resp synor__coord_err(int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "{\"error\":");
    synor__json_escape(&b, msg);
    synor__buf_puts(&b, "}\n");
    char *t = synor__buf_take(&b);
    return (coord_resp){.status = t ? status : 500, .type = "application/json", .body = t,
                        .len = t ? strlen(t) : 0};
}

coord_resp synor__coord_store_err(int code)
{
    int st = 500;
    switch (code) {
    case SYNOR_ENOENT: st = 404; break;
    case SYNOR_ESTATE:
    case SYNOR_EEXIST: st = 409; break;
    case SYNOR_EINVAL:
    case SYNOR_ESCHEMA:
    case SYNOR_EPARSE:
    case SYNOR_ERANGE: st = 400; break;
    case SYNOR_EBUSY: st = 503; break;
    default: break;
    }
    return synor__coord_err(st, "%s", synor_errmsg());
}

coord_resp synor__coord_bytes(int status, const char *type, const void *data, size_t n)
{
    char *p = synor__malloc(n ? n : 1);
    if (!p)
        return synor__coord_err(500, "out of memory");
    if (n)
        memcpy(p, data, n);
    return (coord_resp){.status = status, .type = type, .body = p, .len = n};
}

const char *synor__coord_arg(const coord_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *synor__coord_header(const coord_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, key);
}

void synor__coord_log(synor_coord *c, const char *event, const char *fields)
{
    if (!c->log)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pthread_mutex_lock(&c->log_mu);
    fprintf(c->log, "{\"ts\":%lld.%03ld,\"event\":\"%s\"%s%s}\n", (long long)ts.tv_sec,
            ts.tv_nsec / 1000000, event, fields && *fields ? "," : "", fields ? fields : "");
    fflush(c->log);
    pthread_mutex_unlock(&c->log_mu);
}

void synor__coord_kick(synor_coord *c)
{
    pthread_mutex_lock(&c->mu);
    c->kicks++;
    pthread_cond_broadcast(&c->work);
    pthread_mutex_unlock(&c->mu);
}

uint64_t synor__coord_kicks(synor_coord *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t k = c->kicks;
    pthread_mutex_unlock(&c->mu);
    return k;
}

static void abs_time(uint64_t deadline_ns, struct timespec *out)
{
    /* the condition variables run on CLOCK_MONOTONIC */
    out->tv_sec = (time_t)(deadline_ns / 1000000000u);
    out->tv_nsec = (long)(deadline_ns % 1000000000u);
}

void synor__coord_wait(synor_coord *c, uint64_t seen, uint64_t deadline_ns)
{
    struct timespec until;
    abs_time(deadline_ns, &until);
    pthread_mutex_lock(&c->mu);
    while (c->kicks == seen && !c->stopping) {
        if (pthread_cond_timedwait(&c->work, &c->mu, &until) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&c->mu);
}

static int queue(synor_coord *c, struct MHD_Connection *conn, coord_resp *r)
{
    struct MHD_Response *m =
        r->body ? MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE)
                : MHD_create_response_from_buffer(0, (void *)(uintptr_t) "", MHD_RESPMEM_PERSISTENT);
    if (!m) {
        synor__free(r->body);
        return MHD_NO;
    }
    MHD_add_response_header(m, "Content-Type", r->type ? r->type : "application/json");
    MHD_add_response_header(m, "Cache-Control", "no-store");
    if (r->allow)
        MHD_add_response_header(m, "Allow", r->allow);
    if (r->status == 401)
        MHD_add_response_header(m, "WWW-Authenticate", "Bearer");
    synor__coord_count_code(c, r->status);
    int q = MHD_queue_response(conn, (unsigned)r->status, m);
    MHD_destroy_response(m);
    return q;
}

/* The body limit of a route: blobs and results carry data, the rest JSON. */
static size_t body_limit(synor_coord *c, const char *method, const char *url)
{
    if ((!strcmp(method, "PUT") && !strcmp(url, "/v1/blobs")) ||
        (!strcmp(method, "POST") && !strncmp(url, "/v1/tasks/", 10) &&
         (strstr(url, "/result") || strstr(url, "/release"))) ||
        (!strcmp(method, "POST") && !strcmp(url, "/v1/results")))
        return c->o.max_blob;
    return c->o.max_json;
}

static int is_loopback(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return 0;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a);
    }
    return 0;
}

static void log_request(synor_coord *c, const coord_req *r, int status, uint64_t t0)
{
    if (c->o.quiet || !c->log)
        return;
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "\"method\":");
    synor__json_escape(&b, r->method);
    synor__buf_puts(&b, ",\"path\":");
    synor__json_escape(&b, r->url);
    synor__buf_printf(&b, ",\"status\":%d,\"ms\":%.3f", status,
                      (double)(synor__coord_now_ns() - t0) / 1e6);
    if (r->who.role) {
        synor__buf_printf(&b, ",\"role\":\"%s\",\"token\":%lld,\"owner\":",
                          synor_net_role_name(r->who.role), (long long)r->who.token_id);
        synor__json_escape(&b, r->who.owner);
    }
    char *t = synor__buf_take(&b);
    if (t)
        synor__coord_log(c, "request", t);
    synor__free(t);
}

/* The bearer token of a request (or ?token= for the dashboard page). */
static const char *bearer(struct MHD_Connection *conn, int allow_query)
{
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (h && !strncmp(h, "Bearer ", 7))
        return h + 7;
    return allow_query ? MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token") : NULL;
}

static coord_resp dispatch(coord_req *r)
{
    synor_coord *c = r->c;
    int get = !strcmp(r->method, "GET") || !strcmp(r->method, "HEAD");
    if (!strcmp(r->url, "/health")) {
        if (!get)
            return (coord_resp){.status = 405, .allow = "GET", .type = "application/json",
                                .body = synor__strdup("{\"error\":\"use GET\"}\n"),
                                .len = 19};
        char *t = synor__strdup("{\"status\":\"ok\"}\n");
        return synor__coord_json(200, t);
    }
    int dash = !strcmp(r->url, "/dashboard");
    const char *tok = bearer(r->conn, dash);
    if (tok && synor_netstore_token_auth(c->store, tok, &r->who))
        r->who.role = 0;
    if (!strcmp(r->url, "/metrics")) {
        if (!(r->who.role == SYNOR_NET_OPERATOR || (c->o.metrics_open && r->loopback)))
            return r->who.role ? synor__coord_err(403, "/metrics: operator token needed")
                               : synor__coord_err(401, "missing or unknown token");
        char *t = synor__coord_metrics(c);
        coord_resp x = synor__coord_json(200, t);
        x.type = "text/plain; version=0.0.4";
        return x;
    }
    if (!r->who.role)
        return synor__coord_err(401, "%s", tok ? "unknown or revoked token" : "missing token (Authorization: Bearer syn_...)");
    if (dash) {
        if (r->who.role != SYNOR_NET_OPERATOR)
            return synor__coord_err(403, "/dashboard: operator token needed");
        char *page = synor__coord_dashboard(c, tok);
        coord_resp x = synor__coord_json(200, page);
        x.type = "text/html; charset=utf-8";
        return x;
    }
    return synor__coord_route(r);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    synor_coord *c = cls;
    conn_req *k = *con_cls;
    if (!k) {
        k = synor__calloc(1, sizeof *k);
        if (!k)
            return MHD_NO;
        synor__buf_init(&k->body);
        k->t0 = synor__coord_now_ns();
        k->limit = body_limit(c, method, url);
        *con_cls = k;
        c->requests++;
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > k->limit) {
            k->too_big = 1;
            coord_req r = {.c = c, .conn = conn, .method = method, .url = url};
            coord_resp x = synor__coord_err(413, "the body is %s bytes; at most %zu are accepted here",
                                            cl, k->limit);
            log_request(c, &r, 413, k->t0);
            return queue(c, conn, &x) == MHD_YES ? MHD_YES : MHD_NO;
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!k->too_big) {
            if (k->body.len + *upload_size > k->limit)
                k->too_big = 1;
            else
                synor__buf_append(&k->body, upload, *upload_size);
        }
        *upload_size = 0;
        return MHD_YES;
    }
    coord_req r = {.c = c, .conn = conn, .method = method, .url = url,
                   .body = k->body.data ? k->body.data : "", .len = k->body.len,
                   .loopback = is_loopback(conn)};
    coord_resp x;
    if (k->too_big)
        x = synor__coord_err(413, "the body is over %zu bytes", k->limit);
    else if (k->body.failed)
        x = synor__coord_err(500, "out of memory reading the request");
    else
        x = dispatch(&r);
    log_request(c, &r, x.status, k->t0);
    return queue(c, conn, &x) == MHD_YES ? MHD_YES : MHD_NO;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)conn;
    (void)why;
    conn_req *k = *con_cls;
    if (!k)
        return;
    synor__buf_free(&k->body);
    synor__free(k);
    *con_cls = NULL;
}

static void *reaper(void *arg)
{
    synor_coord *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        pthread_mutex_unlock(&c->mu);
        int n = 0;
        if (synor_netstore_reap(c->store, &n)) {
            char f[600];
            synor__buf b;
            synor__buf_init(&b);
            synor__buf_puts(&b, "\"error\":");
            synor__json_escape(&b, synor_errmsg());
            char *t = synor__buf_take(&b);
            snprintf(f, sizeof f, "%s", t ? t : "");
            synor__free(t);
            synor__coord_log(c, "reap-failed", f);
        } else if (n) {
            char f[64];
            snprintf(f, sizeof f, "\"leases\":%d", n);
            synor__coord_log(c, "leases-expired", f);
            synor__coord_kick(c);
        }
        synor__coord_sample(c);
        struct timespec until;
        abs_time(synor__coord_now_ns() + (uint64_t)(c->o.reap_s * 1e9), &until);
        pthread_mutex_lock(&c->mu);
        if (!c->stopping)
            pthread_cond_timedwait(&c->reaper_cv, &c->mu, &until);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static char *dup_or_null(const char *s, int *oom)
{
    if (!s)
        return NULL;
    char *d = synor__strdup(s);
    if (!d)
        *oom = 1;
    return d;
}

int synor_coord_create(synor_netstore *store, const synor_coord_opts *opts, synor_coord **out)
{
    if (!store || !out)
        return synor__error(SYNOR_EINVAL, "synor_coord_create: NULL argument");
    synor_coord_opts o = opts ? *opts : (synor_coord_opts){0};
    if (!!o.tls_cert != !!o.tls_key)
        return synor__error(SYNOR_EINVAL, "coordinator: TLS needs both --tls-cert and --tls-key");
    if (o.port > 65535)
        return synor__error(SYNOR_EINVAL, "coordinator: port %u is above 65535", o.port);
    if (!o.host)
        o.host = "127.0.0.1";
    if (!o.max_json)
        o.max_json = 1u << 20;
    if (!o.max_blob)
        o.max_blob = 16u << 20;
    if (!(o.max_wait_s > 0))
        o.max_wait_s = 30;
    if (!(o.heartbeat_s > 0))
        o.heartbeat_s = 5;
    if (!(o.reap_s > 0))
        o.reap_s = 1;
    if (!o.max_connections)
        o.max_connections = 1024;
    synor_coord *c = synor__calloc(1, sizeof *c);
    if (!c)
        return synor__error(SYNOR_ENOMEM, "coordinator: out of memory");
    c->store = store;
    int oom = 0;
    c->host = dup_or_null(o.host, &oom);
    c->log_path = dup_or_null(o.log_path, &oom);
    c->market_dir = dup_or_null(o.market_dir, &oom);
    int e = oom ? synor__error(SYNOR_ENOMEM, "coordinator: out of memory") : 0;
    if (!e && o.tls_cert) {
        size_t n;
        e = synor__read_file(o.tls_cert, &c->cert, &n);
        if (!e)
            e = synor__read_file(o.tls_key, &c->key, &n);
        c->tls = 1;
    }
    o.host = c->host;
    o.log_path = c->log_path;
    o.market_dir = c->market_dir;
    o.tls_cert = o.tls_key = NULL;
    c->o = o;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->log_mu, NULL);
    pthread_mutex_init(&c->market_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->work, &ca);
    pthread_cond_init(&c->reaper_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (!e) {
        if (c->log_path) {
            c->log = fopen(c->log_path, "a");
            if (!c->log)
                e = synor__error(SYNOR_EIO, "coordinator: cannot open the log '%s': %s",
                                 c->log_path, strerror(errno));
        } else {
            c->log = stderr;
        }
    }
    if (!e && c->market_dir)
        e = synor__coord_market_open(c);
    if (e) {
        synor_coord_destroy(c);
        return e;
    }
    *out = c;
    return 0;
}

int synor_coord_start(synor_coord *c)
{
    if (c->started)
        return synor__error(SYNOR_ESTATE, "coordinator: already started");
    char port[16];
    snprintf(port, sizeof port, "%u", c->o.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *ai = NULL;
    int g = getaddrinfo(c->host, port, &hints, &ai);
    if (g)
        return synor__error(SYNOR_EIO, "coordinator: cannot resolve host \"%s\": %s", c->host,
                            gai_strerror(g));
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                     (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0) | (c->tls ? MHD_USE_TLS : 0);
    errno = 0;
    if (c->tls)
        c->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, c, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, c,
                                MHD_OPTION_CONNECTION_LIMIT, c->o.max_connections,
                                MHD_OPTION_CONNECTION_TIMEOUT, 120u, MHD_OPTION_HTTPS_MEM_CERT,
                                c->cert, MHD_OPTION_HTTPS_MEM_KEY, c->key, MHD_OPTION_END);
    else
        c->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, c, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, c,
                                MHD_OPTION_CONNECTION_LIMIT, c->o.max_connections,
                                MHD_OPTION_CONNECTION_TIMEOUT, 120u, MHD_OPTION_END);
    int err = errno;
    freeaddrinfo(ai);
    if (!c->d)
        return synor__error(SYNOR_EIO, "coordinator: cannot listen on %s port %u%s: %s", c->host,
                            c->o.port, c->tls ? " (TLS)" : "",
                            err ? strerror(err) : "libmicrohttpd could not start (TLS files?)");
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(c->d, MHD_DAEMON_INFO_BIND_PORT);
    c->port = info ? info->port : c->o.port;
    if (pthread_create(&c->reaper, NULL, reaper, c)) {
        MHD_stop_daemon(c->d);
        c->d = NULL;
        return synor__error(SYNOR_ENOMEM, "coordinator: cannot start the reaper thread");
    }
    c->reaper_running = 1;
    c->started = 1;
    char f[160];
    snprintf(f, sizeof f, "\"port\":%u,\"tls\":%s,\"store\":\"%s\"", c->port,
             c->tls ? "true" : "false", synor_netstore_backend(c->store));
    synor__coord_log(c, "started", f);
    return 0;
}

unsigned synor_coord_port(const synor_coord *c) { return c->port; }

void synor_coord_stop(synor_coord *c)
{
    if (!c || !c->started || c->stopped)
        return;
    pthread_mutex_lock(&c->mu);
    c->stopping = 1;
    pthread_cond_broadcast(&c->work);
    pthread_cond_broadcast(&c->reaper_cv);
    pthread_mutex_unlock(&c->mu);
    /* long-polls see stopping and answer 204; MHD then waits for its
     * connection threads */
    MHD_stop_daemon(c->d);
    c->d = NULL;
    if (c->reaper_running)
        pthread_join(c->reaper, NULL);
    c->reaper_running = 0;
    c->stopped = 1;
    synor__coord_log(c, "stopped", NULL);
}

void synor_coord_destroy(synor_coord *c)
{
    if (!c)
        return;
    synor_coord_stop(c);
    synor__coord_market_close(c);
    if (c->log && c->log != stderr)
        fclose(c->log);
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->reaper_cv);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->log_mu);
    pthread_mutex_destroy(&c->market_mu);
    synor__free(c->host);
    synor__free(c->log_path);
    synor__free(c->market_dir);
    synor__free(c->cert);
    synor__free(c->key);
    synor__free(c);
}
