/* netclient.c - the network client on libcurl (synor/netclient.h).
 *
 * One easy handle per client, reused so the connection stays alive between
 * requests (a heartbeat every few seconds must not cost a TCP handshake
 * each). Retries: a failed connect sent nothing, so any request may be
 * retried; a transfer that failed later, or a 5xx answer, may have changed
 * the server's state, so only idempotent requests are retried then. Waits
 * between retries double from backoff_s up to backoff_max_s, and are cut
 * short by synor_netclient_cancel for cancellable requests. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "json/json.h"
#include "netclient/netclient_int.h"
#include "synor/netclient.h"

struct synor_netclient {
    char *url;   /* without a trailing '/' */
    char *auth;  /* "Authorization: Bearer ..." or NULL */
    char *cacert;
    synor_netclient_config cfg;
    CURL *curl;
    atomic_int cancelled;
    int cancellable_now; /* the request in flight is cancellable */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_OK;

static void global_init(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int synor_netclient_create(const synor_netclient_config *cfg, synor_netclient **out)
{
    if (!cfg || !out || cfg->magic != SYNOR__NETCLIENT_MAGIC)
        return synor__error(SYNOR_EINVAL, "netclient: config not initialized "
                                          "(synor_netclient_config_init)");
    if (!cfg->url || (strncmp(cfg->url, "http://", 7) && strncmp(cfg->url, "https://", 8)))
        return synor__error(SYNOR_EINVAL, "netclient: url '%s': expected http://HOST:PORT "
                                          "or https://HOST:PORT",
                            cfg->url ? cfg->url : "(none)");
    if (cfg->timeout_s <= 0 || cfg->connect_timeout_s <= 0 || cfg->backoff_s < 0 ||
        cfg->backoff_max_s < cfg->backoff_s)
        return synor__error(SYNOR_EINVAL, "netclient: timeouts must be above 0 and "
                                          "backoff_max_s >= backoff_s");
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK)
        return synor__error(SYNOR_EIO, "netclient: curl_global_init: %s",
                            curl_easy_strerror(global_rc));
    synor_netclient *c = synor__calloc(1, sizeof(*c));
    if (!c)
        return synor__error(SYNOR_ENOMEM, "netclient: out of memory");
    c->cfg = *cfg;
    c->url = synor__strdup(cfg->url);
    if (c->url) {
        size_t n = strlen(c->url);
        while (n > 0 && c->url[n - 1] == '/')
            c->url[--n] = 0;
    }
    if (cfg->token) {
        size_t n = strlen(cfg->token) + 32;
        c->auth = synor__malloc(n);
        if (c->auth)
            snprintf(c->auth, n, "Authorization: Bearer %s", cfg->token);
    }
    if (cfg->cacert)
        c->cacert = synor__strdup(cfg->cacert);
    c->curl = curl_easy_init();
    if (!c->url || (cfg->token && !c->auth) || (cfg->cacert && !c->cacert) || !c->curl) {
        synor_netclient_destroy(c);
        return synor__error(SYNOR_ENOMEM, "netclient: out of memory");
    }
    c->cfg.url = c->url;
    c->cfg.token = NULL; /* kept only in auth */
    c->cfg.cacert = c->cacert;
    atomic_init(&c->cancelled, 0);
    *out = c;
    return 0;
}

void synor_netclient_destroy(synor_netclient *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    synor__free(c->url);
    if (c->auth) {
        memset(c->auth, 0, strlen(c->auth)); /* the token */
        synor__free(c->auth);
    }
    synor__free(c->cacert);
    synor__free(c);
}

void synor_netclient_cancel(synor_netclient *c)
{
    if (c)
        atomic_store(&c->cancelled, 1);
}

void synor_netclient_uncancel(synor_netclient *c)
{
    if (c)
        atomic_store(&c->cancelled, 0);
}

typedef struct sink {
    synor__buf buf;
    size_t max;
    int over;
} sink;

static size_t on_data(char *p, size_t size, size_t nmemb, void *user)
{
    sink *s = user;
    size_t n = size * nmemb;
    if (s->buf.len + n > s->max) {
        s->over = 1;
        return 0; /* aborts the transfer */
    }
    synor__buf_append(&s->buf, p, n);
    return s->buf.failed ? 0 : n;
}

static int on_progress(void *user, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    synor_netclient *c = user;
    return c->cancellable_now && atomic_load(&c->cancelled);
}

/* Sleeps s seconds in short steps; 1 if cancelled meanwhile. */
static int backoff_sleep(synor_netclient *c, double s, int cancellable)
{
    double end = synor_netclient_now() + s;
    for (;;) {
        if (cancellable && atomic_load(&c->cancelled))
            return 1;
        double left = end - synor_netclient_now();
        if (left <= 0)
            return 0;
        if (left > 0.05)
            left = 0.05;
        struct timespec ts = {0, (long)(left * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* One attempt: the curl code, the status in *status. */
static CURLcode attempt(synor_netclient *c, const synor_net_request *r, sink *s, long *status)
{
    CURL *h = c->curl;
    curl_easy_reset(h);
    synor__buf url;
    synor__buf_init(&url);
    synor__buf_puts(&url, c->url);
    synor__buf_puts(&url, r->path);
    if (url.failed) {
        synor__buf_free(&url);
        return CURLE_OUT_OF_MEMORY;
    }
    struct curl_slist *hdrs = NULL, *t;
    int oom = 0;
#define ADD_HDR(line)                                                                              \
    do {                                                                                           \
        t = curl_slist_append(hdrs, (line));                                                       \
        if (t)                                                                                     \
            hdrs = t;                                                                              \
        else                                                                                       \
            oom = 1;                                                                               \
    } while (0)
    if (c->auth)
        ADD_HDR(c->auth);
    ADD_HDR("Expect:"); /* no 100-continue round trip */
    char ct[160];
    if (r->body || !strcmp(r->method, "POST") || !strcmp(r->method, "PUT")) {
        snprintf(ct, sizeof ct, "Content-Type: %s",
                 r->content_type ? r->content_type : "application/json");
        ADD_HDR(ct);
    }
    for (const char *const *x = r->headers; x && *x; x++)
        ADD_HDR(*x);
#undef ADD_HDR
    if (oom) {
        curl_slist_free_all(hdrs);
        synor__buf_free(&url);
        return CURLE_OUT_OF_MEMORY;
    }
    double timeout = r->timeout_s > 0 ? r->timeout_s : c->cfg.timeout_s;
    curl_easy_setopt(h, CURLOPT_URL, url.data);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->cfg.connect_timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->cacert)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->cacert);
    if (!strcmp(r->method, "GET")) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
        if (r->body || !strcmp(r->method, "POST") || !strcmp(r->method, "PUT")) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body ? (const char *)r->body : "");
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        }
    }
    CURLcode rc = curl_easy_perform(h);
    *status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    synor__buf_free(&url);
    return rc;
}

int synor_netclient_request(synor_netclient *c, const synor_net_request *r,
                            synor_net_response *out)
{
    if (!c || !r || !out || !r->method || !r->path || r->path[0] != '/' ||
        (r->body_len && !r->body))
        return synor__error(SYNOR_EINVAL, "netclient: bad request (method, path starting "
                                          "with '/', body)");
    memset(out, 0, sizeof(*out));
    double wait = c->cfg.backoff_s;
    const char *why = "";
    char whybuf[256];
    for (unsigned n = 0;; n++) {
        if (r->cancellable && atomic_load(&c->cancelled))
            return synor__error(SYNOR_EBUSY, "netclient: %s %s%s: cancelled", r->method, c->url,
                                r->path);
        sink s = {.max = c->cfg.max_response};
        synor__buf_init(&s.buf);
        long status = 0;
        c->cancellable_now = r->cancellable;
        CURLcode rc = attempt(c, r, &s, &status);
        c->cancellable_now = 0;
        if (rc == CURLE_OK && !s.buf.failed && status < 500) {
            synor__buf_append(&s.buf, "", 1); /* the NUL */
            if (s.buf.failed) {
                synor__buf_free(&s.buf);
                return synor__error(SYNOR_ENOMEM, "netclient: out of memory");
            }
            out->status = status;
            out->len = s.buf.len - 1;
            out->body = synor__buf_take(&s.buf);
            return 0;
        }
        int over = s.over, oom = s.buf.failed || rc == CURLE_OUT_OF_MEMORY;
        if (rc == CURLE_OK && status >= 500) {
            snprintf(whybuf, sizeof whybuf, "HTTP %ld: %.120s", status,
                     s.buf.data ? s.buf.data : "");
            why = whybuf;
        } else {
            why = curl_easy_strerror(rc);
        }
        synor__buf_free(&s.buf);
        if (over)
            return synor__error(SYNOR_ERANGE, "netclient: %s %s%s: the answer exceeds %zu bytes",
                                r->method, c->url, r->path, c->cfg.max_response);
        if (oom)
            return synor__error(SYNOR_ENOMEM, "netclient: out of memory");
        if (rc == CURLE_ABORTED_BY_CALLBACK && r->cancellable && atomic_load(&c->cancelled))
            return synor__error(SYNOR_EBUSY, "netclient: %s %s%s: cancelled", r->method, c->url,
                                r->path);
        /* Nothing was sent when the connection could not be made. */
        int unsent = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST;
        if (n >= c->cfg.retries || !(r->idempotent || unsent))
            break;
        if (backoff_sleep(c, wait, r->cancellable))
            return synor__error(SYNOR_EBUSY, "netclient: %s %s%s: cancelled", r->method, c->url,
                                r->path);
        wait = wait * 2 > c->cfg.backoff_max_s ? c->cfg.backoff_max_s : wait * 2;
    }
    /* A 5xx after the retries is still an answer the caller may read. */
    return synor__error(SYNOR_EIO, "netclient: %s %s%s: %s (after %u attempts)", r->method,
                        c->url, r->path, why, c->cfg.retries + 1);
}

int synor_netclient_available(void)
{
    return 1;
}
