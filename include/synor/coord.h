/* synor/coord.h - the compute network's coordinator: the HTTP/JSON API of
 * docs/NETWORK.md (protocol v1) over a netstore (synor/netstore.h), served
 * by libmicrohttpd, with TLS when given a certificate.
 *
 * What it adds to the store: authentication (bearer tokens, roles and
 * ownership on every endpoint), size limits (413) and strict parsing (400)
 * before anything changes, long-polling for tasks (a condition variable
 * that results, submissions and expiries signal), a reaper thread expiring
 * leases, Prometheus /metrics, one JSON log line per request and event, a
 * /dashboard page, and, with a market directory, the spot market's order
 * book and orders (synor/market.h, its journal the source of truth).
 *
 * Lifecycle: create (borrows the store, which must outlive it), start,
 * stop (requests in flight finish; long-polls answer 204), destroy. Built
 * without libmicrohttpd or nettle, create fails with SYNOR_ENOTSUP. */
#ifndef SYNOR_COORD_H
#define SYNOR_COORD_H

#include <stddef.h>

#include "synor/netstore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_coord synor_coord;

typedef struct synor_coord_opts {
    const char *host;          /* default "127.0.0.1" */
    unsigned port;             /* 0: any free port (read it with synor_coord_port) */
    const char *tls_cert;      /* PEM files; both or neither */
    const char *tls_key;
    size_t max_json;           /* default 1 MiB */
    size_t max_blob;           /* default 16 MiB */
    double max_wait_s;         /* longest long-poll; default 30 */
    double heartbeat_s;        /* told to agents; default 5 */
    double reap_s;             /* reaper period; default 1 */
    int metrics_open;          /* /metrics without a token from loopback */
    const char *log_path;      /* JSON lines; NULL: stderr */
    int quiet;                 /* no request log lines */
    const char *market_dir;    /* the spot market's journal directory, or NULL */
    unsigned max_connections;  /* default 1024 */
} synor_coord_opts;

int synor_coord_create(synor_netstore *store, const synor_coord_opts *o, synor_coord **out);
int synor_coord_start(synor_coord *c);
unsigned synor_coord_port(const synor_coord *c);
void synor_coord_stop(synor_coord *c);
void synor_coord_destroy(synor_coord *c);

#ifdef __cplusplus
}
#endif
#endif
