/* server.c - synor serve's HTTP side on libmicrohttpd and its engine
 * thread.
 *
 * MHD runs a thread per connection (MHD_USE_THREAD_PER_CONNECTION), so a
 * handler may block: a whole answer waits for its generation in the
 * handler, a streamed one in the response's reader callback. One engine
 * thread steps the scheduler while it has work and sleeps on a condition
 * variable when it has none; submissions and cancels wake it. Before it
 * first sleeps it writes the KV pool's fresh blocks, a few at a time
 * between looks for work (synor_llm_kv_warm). */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve/serve_api.h"
#include "serve/server.h"
#include "synor/llm.h"

/* One request on a connection: its body as it arrives. */
typedef struct conn_req {
    synor__buf body;
    int too_big;
} conn_req;

uint64_t synor__serve_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int synor__serve_text(synor_server *s, struct MHD_Connection *c, int status, const char *type,
                      const char *text, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)(uintptr_t)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    synor__serve_count_code(s, status);
    int q = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return q;
}

int synor__serve_error(synor_server *s, struct MHD_Connection *c, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *j = synor__serve_error_json(status, msg);
    if (!j)
        return MHD_NO;
    int r = synor__serve_text(s, c, status, "application/json", j, strlen(j));
    synor__free(j);
    return r;
}

static int method_not_allowed(synor_server *s, struct MHD_Connection *c, const char *method,
                              const char *url, const char *allow)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s is not allowed on %s (use %s)", method, url, allow);
    char *j = synor__serve_error_json(405, msg);
    struct MHD_Response *r =
        j ? MHD_create_response_from_buffer(strlen(j), j, MHD_RESPMEM_MUST_COPY) : NULL;
    synor__free(j);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Allow", allow);
    synor__serve_count_code(s, 405);
    int q = MHD_queue_response(c, 405, r);
    MHD_destroy_response(r);
    return q;
}

static int models(synor_server *s, struct MHD_Connection *c)
{
    synor__buf b;
    synor__buf_init(&b);
    const synor_llm_hparams *h = synor_llm_hparams_get(s->m);
    synor__buf_puts(&b, "{\"object\":\"list\",\"data\":[{\"id\":");
    synor__serve_json_text(&b, s->model_name, strlen(s->model_name));
    synor__buf_printf(&b,
                      ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"synor\","
                      "\"meta\":{\"format\":\"%s\",\"weights\":\"%s\",\"n_ctx\":%u,"
                      "\"n_ctx_train\":%d,\"n_vocab\":%d,\"n_embd\":%d,\"n_layers\":%d,"
                      "\"chat_template\":\"%s\"}}]}\n",
                      (long long)s->created, synor_llm_format(s->m), synor_llm_weight_type(s->m),
                      s->ctx_len, h->seq_len, h->vocab_size, h->dim, h->n_layers,
                      synor__serve_tmpl_name(&s->tmpl));
    int r = b.failed ? MHD_NO : synor__serve_text(s, c, 200, "application/json", b.data, b.len);
    synor__buf_free(&b);
    return r;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    synor_server *s = cls;
    conn_req *k = *con_cls;
    if (!k) {
        k = synor__calloc(1, sizeof *k);
        if (!k)
            return MHD_NO;
        synor__buf_init(&k->body);
        *con_cls = k;
        pthread_mutex_lock(&s->mu);
        s->inflight++;
        pthread_mutex_unlock(&s->mu);
        /* refuse a body announced too large before it is sent */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > s->o.max_body) {
            k->too_big = 1;
            return synor__serve_error(s, c, 413,
                                      "the request body is %s bytes; at most %zu "
                                      "are accepted",
                                      cl, s->o.max_body) == MHD_YES
                       ? MHD_YES
                       : MHD_NO;
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (k->body.len + *upload_size > s->o.max_body)
            k->too_big = 1;
        else
            synor__buf_append(&k->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    int r;
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    int post = !strcmp(method, "POST");
    int chat = !strcmp(url, "/v1/chat/completions");
    pthread_mutex_lock(&s->mu);
    int stopping = s->stopping;
    pthread_mutex_unlock(&s->mu);
    if (k->too_big) {
        r = synor__serve_error(s, c, 413, "the request body is over %zu bytes", s->o.max_body);
    } else if (k->body.failed) {
        r = synor__serve_error(s, c, 500, "out of memory reading the request");
    } else if (!strcmp(url, "/health")) {
        r = get ? synor__serve_text(s, c, 200, "application/json", "{\"status\":\"ok\"}\n", 16)
                : method_not_allowed(s, c, method, url, "GET");
    } else if (!strcmp(url, "/v1/models")) {
        r = get ? models(s, c) : method_not_allowed(s, c, method, url, "GET");
    } else if (!strcmp(url, "/metrics")) {
        char *t = get ? synor__serve_metrics(s) : NULL;
        r = !get ? method_not_allowed(s, c, method, url, "GET")
            : t  ? synor__serve_text(s, c, 200, "text/plain; version=0.0.4", t, strlen(t))
                 : synor__serve_error(s, c, 500, "out of memory writing the metrics");
        synor__free(t);
    } else if (chat || !strcmp(url, "/v1/completions")) {
        if (!post)
            r = method_not_allowed(s, c, method, url, "POST");
        else if (stopping)
            r = synor__serve_error(s, c, 503, "the server is shutting down");
        else
            r = synor__serve_generate(s, c, chat, k->body.data ? k->body.data : "", k->body.len);
    } else {
        r = synor__serve_error(s, c, 404,
                               "no such path: %s (try /v1/completions, /v1/chat/completions, "
                               "/v1/models, /health, /metrics)",
                               url);
    }
    return r == MHD_YES ? MHD_YES : MHD_NO;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode why)
{
    (void)c;
    (void)why;
    synor_server *s = cls;
    conn_req *k = *con_cls;
    if (!k)
        return;
    synor__buf_free(&k->body);
    synor__free(k);
    *con_cls = NULL;
    pthread_mutex_lock(&s->mu);
    s->inflight--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
}

/* One line of the step log for a step that ran: when it began (ms since
 * the server was created), the gap since the previous step ended, the
 * step's time and its batch's, its rows and prompt rows, the requests
 * running and waiting after it. */
static void step_log_line(synor_server *s, uint64_t t_begin, uint64_t gap,
                          const synor_llm_sched_stats *was, const synor_llm_sched_stats *st)
{
    fprintf(s->step_log, "%.3f %.3f %.3f %.3f %llu %llu %u %u\n",
            (double)(t_begin - s->t_start) * 1e-6, (double)gap * 1e-6,
            (double)(st->step_ns - was->step_ns) * 1e-6,
            (double)(st->batch_ns - was->batch_ns) * 1e-6,
            (unsigned long long)(st->rows - was->rows),
            (unsigned long long)(st->prompt_tokens - was->prompt_tokens), st->running,
            st->waiting);
}

static void *engine(void *arg)
{
    synor_server *s = arg;
    synor_llm_sched_stats was;
    synor_llm_sched_stats_get(s->sched, &was);
    uint64_t t_end = 0; /* when the last step that ran ended */
    pthread_mutex_lock(&s->mu);
    while (!s->quit) {
        uint64_t seen = s->kicks;
        pthread_mutex_unlock(&s->mu);
        synor__serve_embed_run(s); /* between steps: the context is free */
        uint64_t t_begin = synor__serve_now_ns();
        int n = synor_llm_sched_step(s->sched);
        if (n < 0)
            fprintf(stderr, "synor serve: a batch failed (its requests were cancelled): %s\n",
                    synor_errmsg());
        synor_llm_sched_stats st;
        synor_llm_sched_stats_get(s->sched, &st);
        if (st.steps != was.steps) {
            if (s->step_log)
                step_log_line(s, t_begin, t_end ? t_begin - t_end : 0, &was, &st);
            t_end = synor__serve_now_ns();
        }
        was = st;
        pthread_mutex_lock(&s->mu);
        synor__serve_rate_add(s, st.generated_tokens - s->rate_seen);
        s->rate_seen = st.generated_tokens;
        if (n <= 0 && s->kicks == seen && !s->quit && !s->embeds && s->kv_cold) {
            /* idle: write the pool's next fresh KV blocks, so that the
             * steps taking them later do not pay their first writes'
             * page faults; a few at a time, looking for work between */
            pthread_mutex_unlock(&s->mu);
            s->kv_cold = synor_llm_kv_warm(s->ctx, SERVE_WARM_BLOCKS);
            pthread_mutex_lock(&s->mu);
        } else if (n <= 0 && s->kicks == seen && !s->quit && !s->embeds) {
            s->wait_since = synor__serve_now_ns();
            pthread_cond_wait(&s->wake, &s->mu);
            s->wait_ns += synor__serve_now_ns() - s->wait_since;
            s->wait_since = 0;
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (s->step_log)
        fflush(s->step_log);
    return NULL;
}

int synor_server_create(synor_llm *m, synor_runtime *rt, const synor_server_opts *opts,
                        synor_server **out)
{
    if (!m || !rt || !out)
        return synor__error(SYNOR_EINVAL, "synor_server_create: NULL argument");
    synor_server_opts o = opts ? *opts : (synor_server_opts){0};
    if (!o.host)
        o.host = "127.0.0.1";
    if (!o.model_name)
        o.model_name = "synor";
    if (!*o.model_name)
        return synor__error(SYNOR_EINVAL, "synor_server_create: the model name is empty");
    if (o.port > 65535)
        return synor__error(SYNOR_EINVAL, "synor_server_create: port %u is above 65535", o.port);
    if (!o.max_seqs)
        o.max_seqs = 16;
    if (!o.max_queue)
        o.max_queue = 64;
    if (!o.max_body)
        o.max_body = 1u << 20;
    if (!o.max_connections)
        o.max_connections = 256;
    if (!(o.grace_s > 0))
        o.grace_s = 30;
    if (!(o.semantic_threshold >= 0 && o.semantic_threshold <= 1))
        return synor__error(SYNOR_EINVAL,
                            "synor_server_create: semantic threshold %g: 0 (off) or a cosine "
                            "similarity above 0 and at most 1",
                            (double)o.semantic_threshold);
    if (!o.semantic_entries)
        o.semantic_entries = 10000;
    if (o.predict > 16)
        return synor__error(SYNOR_EINVAL, "synor_server_create: predict %u: at most 16", o.predict);
    if (o.predict && o.no_cache)
        return synor__error(SYNOR_EINVAL,
                            "synor_server_create: predicting requests needs the exact-match "
                            "cache (predicted answers are kept there)");
    const synor_llm_hparams *h = synor_llm_hparams_get(m);
    unsigned ctx = o.ctx && o.ctx < (unsigned)h->seq_len ? o.ctx : (unsigned)h->seq_len;
    if (ctx < 2)
        return synor__error(SYNOR_EINVAL,
                            "synor_server_create: a context of %u positions "
                            "leaves no room to generate",
                            ctx);
    synor__serve_tmpl tmpl;
    if (synor__serve_tmpl_for_model(m, o.chat_template, &tmpl))
        return synor__error(SYNOR_EINVAL, "synor_server_create: %s", synor_errmsg());
    synor_server *s = synor__calloc(1, sizeof *s);
    if (!s)
        return synor__error(SYNOR_ENOMEM, "synor_server_create: out of memory");
    s->tmpl = tmpl;
    /* what ends the assistant's turn besides EOS */
    s->n_turn_end = synor__serve_tmpl_turn_ends(&tmpl, m, s->turn_end);
    s->m = m;
    s->rt = rt;
    s->o = o;
    s->ctx_len = ctx;
    s->created = time(NULL);
    s->t_start = synor__serve_now_ns();
    s->host = synor__strdup(o.host);
    s->model_name = synor__strdup(o.model_name);
    s->o.host = s->host;
    s->o.model_name = s->model_name;
    s->o.step_log = NULL; /* not kept: the file is */
    int e = s->host && s->model_name ? 0 : SYNOR_ENOMEM;
    int mu = 0, wake = 0, idle = 0, embedded = 0;
    if (!e)
        e = (mu = !pthread_mutex_init(&s->mu, NULL)) ? 0 : SYNOR_ENOMEM;
    if (!e)
        e = (wake = !pthread_cond_init(&s->wake, NULL)) ? 0 : SYNOR_ENOMEM;
    if (!e)
        e = (idle = !pthread_cond_init(&s->idle, NULL)) ? 0 : SYNOR_ENOMEM;
    if (!e)
        e = (embedded = !pthread_cond_init(&s->embedded, NULL)) ? 0 : SYNOR_ENOMEM;
    if (e)
        synor__error(e, "synor_server_create: out of memory");
    /* KV blocks for max_seqs requests of ctx positions each */
    synor_llm_ctx_opts co = {.max_seqs = o.max_seqs,
                             .kv_blocks = o.max_seqs *
                                          ((ctx + SYNOR_LLM_KV_BLOCK - 1) / SYNOR_LLM_KV_BLOCK),
                             .gpu_layers = o.gpu_layers,
                             .gpu_device = o.gpu_device,
                             .gpu_backend = o.gpu_backend,
                             .kv_type = o.kv_type,
                             .prefix_cache = !o.no_prefix_cache};
    synor_llm_sched_opts so = {.max_queue = o.max_queue, .spec_k = o.spec_k};
    if (!e)
        e = synor_llm_ctx_create(m, rt, &co, &s->ctx);
    if (!e && o.draft) { /* a sequence for each request that may speculate */
        unsigned dseqs = o.spec_max ? o.spec_max : 2;
        dseqs = dseqs < o.max_seqs ? dseqs : o.max_seqs;
        synor_llm_ctx_opts dco = {.max_seqs = dseqs,
                                  .kv_blocks = dseqs * ((ctx + SYNOR_LLM_KV_BLOCK - 1) /
                                                        SYNOR_LLM_KV_BLOCK),
                                  .kv_type = o.kv_type};
        e = synor_llm_ctx_create(o.draft, rt, &dco, &s->dctx);
        so.draft = s->dctx;
    }
    if (!e)
        e = synor_llm_sched_create(s->ctx, &so, &s->sched);
    if (!e && !o.no_cache) {
        synor_cache_opts cop = {.mem_bytes = o.cache_bytes, .disk_path = o.cache_file};
        e = synor_cache_open(&cop, &s->cache);
        if (e)
            synor_llm_sched_destroy(s->sched);
    }
    int base_ok = !e; /* the context, scheduler and cache exist */
    if (!e && o.semantic_threshold > 0) { /* a context of one sequence for the embeddings */
        synor_llm_ctx_opts eo = {.max_seqs = 1,
                                 .kv_blocks = (ctx + SYNOR_LLM_KV_BLOCK - 1) / SYNOR_LLM_KV_BLOCK,
                                 .kv_type = o.kv_type};
        e = synor_llm_ctx_create(m, rt, &eo, &s->ectx);
        if (!e)
            e = synor_semcache_open(&(synor_semcache_opts){.dim = h->dim,
                                                            .threshold = o.semantic_threshold,
                                                            .max_entries = o.semantic_entries,
                                                            .index = o.semantic_index,
                                                            .disk_path = o.semantic_file},
                                    &s->sem);
    }
    if (!e && o.predict)
        e = synor_predictor_create(4096, &s->pred);
    if (!e && o.step_log) {
        s->step_log = fopen(o.step_log, "a");
        if (!s->step_log)
            e = synor__error(SYNOR_EIO, "serve: the step log %s cannot be opened: %s", o.step_log,
                             strerror(errno));
        else
            fputs("# synor serve step log: t_ms gap_ms step_ms batch_ms rows prompt_rows "
                  "running waiting\n",
                  s->step_log);
    }
    if (e && base_ok) {
        synor__serve_semantic_free(s);
        synor_cache_close(s->cache);
        synor_llm_sched_destroy(s->sched);
    }
    if (!e) {
        unsigned used;
        synor_llm_kv_usage(s->ctx, &used, &s->kv_total);
        s->kv_cold = s->kv_total;
    }
    if (e) {
        synor_llm_ctx_destroy(s->dctx);
        synor_llm_ctx_destroy(s->ctx);
        if (embedded)
            pthread_cond_destroy(&s->embedded);
        if (idle)
            pthread_cond_destroy(&s->idle);
        if (wake)
            pthread_cond_destroy(&s->wake);
        if (mu)
            pthread_mutex_destroy(&s->mu);
        synor__free(s->host);
        synor__free(s->model_name);
        synor__free(s);
        return e;
    }
    *out = s;
    return 0;
}

int synor_server_start(synor_server *s)
{
    if (s->started)
        return synor__error(SYNOR_ESTATE, "synor_server_start: already started");
    char port[16];
    snprintf(port, sizeof port, "%u", s->o.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *ai = NULL;
    int g = getaddrinfo(s->host, port, &hints, &ai);
    if (g)
        return synor__error(SYNOR_EIO, "serve: cannot resolve host \"%s\": %s", s->host,
                            gai_strerror(g));
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                     (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    if (pthread_create(&s->engine, NULL, engine, s)) {
        freeaddrinfo(ai);
        return synor__error(SYNOR_ENOMEM, "serve: cannot start the engine thread");
    }
    s->engine_running = 1;
    errno = 0;
    s->d =
        MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                         MHD_OPTION_NOTIFY_COMPLETED, completed, s, MHD_OPTION_CONNECTION_LIMIT,
                         s->o.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, 120u, MHD_OPTION_END);
    int err = errno;
    freeaddrinfo(ai);
    if (!s->d) {
        pthread_mutex_lock(&s->mu);
        s->quit = 1;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->engine, NULL);
        s->engine_running = 0;
        s->quit = 0;
        return synor__error(SYNOR_EIO, "serve: cannot listen on %s port %u: %s", s->host, s->o.port,
                            err ? strerror(err) : "libmicrohttpd could not start");
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : s->o.port;
    s->started = 1;
    return 0;
}

unsigned synor_server_port(const synor_server *s) { return s->port; }

void synor_server_stop(synor_server *s)
{
    if (!s->started || s->stopped)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_mutex_unlock(&s->mu);
    int fd = MHD_quiesce_daemon(s->d);
    if (fd >= 0)
        close(fd);
    /* requests in flight finish, for grace_s at most; then they are
     * cancelled, and end with what they have */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)s->o.grace_s;
    until.tv_nsec += (long)((s->o.grace_s - (double)(time_t)s->o.grace_s) * 1e9);
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&s->mu);
    while (s->inflight && pthread_cond_timedwait(&s->idle, &s->mu, &until) != ETIMEDOUT)
        ;
    while (s->inflight) {
        synor__serve_cancel_all(s);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&s->idle, &s->mu, &until);
    }
    pthread_mutex_unlock(&s->mu);
    MHD_stop_daemon(s->d);
    s->d = NULL;
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->engine, NULL);
    s->engine_running = 0;
    s->stopped = 1;
}

void synor_server_destroy(synor_server *s)
{
    if (!s)
        return;
    synor_server_stop(s);
    synor_llm_sched_destroy(s->sched); /* predictions still queued end here */
    synor__serve_semantic_free(s);
    synor_cache_close(s->cache);
    synor_llm_ctx_destroy(s->dctx);
    synor_llm_ctx_destroy(s->ctx);
    if (s->step_log)
        fclose(s->step_log);
    pthread_cond_destroy(&s->embedded);
    pthread_cond_destroy(&s->idle);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->mu);
    synor__free(s->host);
    synor__free(s->model_name);
    synor__free(s);
}
