/* synor/netclient.h - the HTTP/JSON client of the compute network
 * (docs/NETWORK.md): what `synor agent`, `synor submit` and the other
 * network commands use to talk to a coordinator.
 *
 * One client is one connection (kept alive between requests) and is used
 * by one thread at a time; a program with several threads makes one client
 * per thread. Requests carry the bearer token of the configuration; TLS is
 * used for https:// URLs, verified against cfg.cacert (or the system's
 * certificates). Requests marked idempotent are retried, with exponential
 * backoff, when the connection fails or the server answers 5xx; others
 * only when the connection could not be made at all (nothing was sent).
 *
 * Built on libcurl and nettle (SHA-256). A library built without them
 * (CMake says so at configure time) has these functions, and create fails
 * with SYNOR_ENOTSUP naming the missing library. */
#ifndef SYNOR_NETCLIENT_H
#define SYNOR_NETCLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_netclient synor_netclient;

typedef struct synor_netclient_config {
    unsigned magic;            /* set by synor_netclient_config_init */
    const char *url;           /* the coordinator, "http://127.0.0.1:8700" */
    const char *token;         /* bearer token ("syn_..."), or NULL */
    const char *cacert;        /* PEM file of the CA that signed the server; NULL: system */
    double connect_timeout_s;  /* default 5 */
    double timeout_s;          /* one request, transfer included; default 60 */
    unsigned retries;          /* retries after the first attempt; default 4 */
    double backoff_s;          /* first wait before a retry, doubled each time; default 0.2 */
    double backoff_max_s;      /* the longest wait; default 5 */
    size_t max_response;       /* bytes of a response body accepted; default 1 GiB */
} synor_netclient_config;

void synor_netclient_config_init(synor_netclient_config *cfg);

/* SYNOR_EINVAL (no URL, not http:// or https://, an uninitialized config),
 * SYNOR_ENOTSUP (built without libcurl), SYNOR_ENOMEM. The strings are
 * copied. */
int synor_netclient_create(const synor_netclient_config *cfg, synor_netclient **out);
void synor_netclient_destroy(synor_netclient *c); /* accepts NULL */

typedef struct synor_net_request {
    const char *method;        /* "GET", "POST", "PUT", "DELETE" */
    const char *path;          /* "/v1/jobs" (query included), appended to the URL */
    const void *body;          /* may be NULL */
    size_t body_len;
    const char *content_type;  /* default application/json when there is a body */
    const char *const *headers; /* extra "Name: value" lines, NULL-terminated; may be NULL */
    int idempotent;            /* 1: retried on connection errors and 5xx */
    int cancellable;           /* 1: synor_netclient_cancel aborts it (long polls) */
    double timeout_s;          /* 0: the config's */
} synor_net_request;

typedef struct synor_net_response {
    long status;               /* the HTTP status */
    char *body;                /* NUL-terminated (the NUL not counted); owned */
    size_t len;
} synor_net_response;

/* Sends r and waits for the answer. 0 when an answer came, whatever its
 * status (read out->status; synor_net_response_check turns an error status
 * into an error), then free out with synor_net_response_free. SYNOR_EIO when
 * no answer came after the retries (the message names the method, URL and
 * libcurl's reason), SYNOR_EBUSY when cancelled, SYNOR_ERANGE when the body
 * exceeds max_response. On failure *out is empty. */
int synor_netclient_request(synor_netclient *c, const synor_net_request *r,
                            synor_net_response *out);
void synor_net_response_free(synor_net_response *r);

/* 0 for a 2xx status; otherwise sets the message "WHAT: HTTP 409: <the
 * server's "error" text>" and returns SYNOR_EINVAL (400, 401, 403, 413),
 * SYNOR_ENOENT (404), SYNOR_ESTATE (409) or SYNOR_EIO (anything else). */
int synor_net_response_check(const synor_net_response *r, const char *what);

/* Aborts a cancellable request in flight on c (or the next one), and its
 * retries' waits, from any thread: it returns SYNOR_EBUSY. Sticky until
 * synor_netclient_uncancel. */
void synor_netclient_cancel(synor_netclient *c);
void synor_netclient_uncancel(synor_netclient *c);

/* SHA-256 of data as 64 lowercase hex digits and a NUL. */
void synor_netclient_sha256(const void *data, size_t n, char out[65]);
/* 1 if s is 64 lowercase hex digits, else 0. */
int synor_netclient_is_sha256(const char *s);

/* PUT /v1/blobs: uploads n bytes (content addressed, idempotent) and checks
 * the address the server answers against the local SHA-256 (SYNOR_EIO on a
 * mismatch). sha_out receives it. */
int synor_netclient_blob_put(synor_netclient *c, const void *data, size_t n, char sha_out[65]);
/* GET /v1/blobs/{sha}: the bytes (malloc'd, free()), verified: SYNOR_EPARSE
 * "checksum mismatch" (naming both digests) when they do not hash to sha,
 * or when expect_len is not SIZE_MAX and differs from their length. */
int synor_netclient_blob_get(synor_netclient *c, const char *sha, size_t expect_len,
                             void **data, size_t *n);

/* 1 if the library was built with libcurl and nettle, else 0. */
int synor_netclient_available(void);

/* The monotonic clock in seconds (leases, heartbeats, backoff). */
double synor_netclient_now(void);

#ifdef __cplusplus
}
#endif
#endif
