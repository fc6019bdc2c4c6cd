/* coord_internal.h - what the coordinator's files share: the server state
 * (server.c), the endpoint handlers (api.c, api_jobs.c), the metrics
 * (metrics.c), the dashboard (dashboard.c) and the market endpoints
 * (market.c). Never installed. */
#ifndef SYNOR_COORD_INTERNAL_H
#define SYNOR_COORD_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "synor/coord.h"
#include "synor/market.h"
#include "synor/netstore.h"

struct MHD_Daemon;
struct MHD_Connection;

/* The dispatch latency histogram's upper bounds (seconds). */
#define COORD_HIST_N 12
extern const double synor__coord_hist_le[COORD_HIST_N];

/* HTTP status codes counted in synor_coord_http_responses_total. */
#define COORD_NCODES 12
extern const int synor__coord_codes[COORD_NCODES];

/* Utilization samples kept for the dashboard's timeline. */
#define COORD_TIMELINE 240

typedef struct coord_sample {
    int64_t at; /* unix seconds */
    int64_t devices_online, leased, queued;
} coord_sample;

struct synor_coord {
    synor_netstore *store;
    synor_coord_opts o;
    char *host, *log_path, *market_dir, *cert, *key;
    FILE *log;
    pthread_mutex_t log_mu;
    struct MHD_Daemon *d;
    unsigned port;
    int started, stopped, tls;

    /* long-poll: waiters sleep on work; kicks counts what may have made a
     * task claimable (submissions, failures, expiries) */
    pthread_mutex_t mu;
    pthread_cond_t work, reaper_cv;
    uint64_t kicks;
    int stopping;
    pthread_t reaper;
    int reaper_running;

    /* under mu: the timeline ring */
    coord_sample timeline[COORD_TIMELINE];
    size_t tl_next, tl_count;

    /* the market (NULL without --market), under market_mu */
    synor_market *market;
    synor_catalog *catalog;
    pthread_mutex_t market_mu;

    /* metrics */
    _Atomic uint64_t codes[COORD_NCODES + 1];
    _Atomic uint64_t hist[COORD_HIST_N + 1], hist_sum_ns, hist_count;
    _Atomic uint64_t requests;
};

/* A handler's answer: status, content type and body (owned, freed after
 * queueing). */
typedef struct coord_resp {
    int status;
    const char *type;
    char *body;
    size_t len;
    const char *allow; /* the Allow header of a 405 */
} coord_resp;

/* One request as the handlers see it. */
typedef struct coord_req {
    synor_coord *c;
    struct MHD_Connection *conn;
    const char *method, *url;
    const char *body;
    size_t len;
    synor_net_principal who; /* role 0: no valid token */
    int loopback;
} coord_req;

/* Monotonic nanoseconds. */
uint64_t synor__coord_now_ns(void);

/* Response builders: JSON text (taken), an error {"error": message}, bytes
 * (copied). */
coord_resp synor__coord_json(int status, char *json);
coord_resp synor__coord_err(int status, const char *fmt, ...) SYNOR__PRINTF(2, 3);
/* The error for a failed store call: SYNOR_ENOENT 404, ESTATE 409, EINVAL/
 * ESCHEMA/EPARSE/ERANGE 400, EEXIST 409, anything else 500. */
coord_resp synor__coord_store_err(int code);
coord_resp synor__coord_bytes(int status, const char *type, const void *data, size_t n);

/* A query argument or NULL. */
const char *synor__coord_arg(const coord_req *r, const char *key);
/* A request header or NULL. */
const char *synor__coord_header(const coord_req *r, const char *key);

/* Routes an authenticated /v1 request. */
coord_resp synor__coord_route(coord_req *r);

/* Wakes long-polls: something may have become claimable. */
void synor__coord_kick(synor_coord *c);
/* Waits until kicked, stopping, or until deadline_ns (monotonic); returns
 * at once if kicks moved past seen. */
void synor__coord_wait(synor_coord *c, uint64_t seen, uint64_t deadline_ns);
uint64_t synor__coord_kicks(synor_coord *c);

/* metrics.c */
void synor__coord_count_code(synor_coord *c, int status);
void synor__coord_observe_dispatch(synor_coord *c, uint64_t ns);
char *synor__coord_metrics(synor_coord *c);
void synor__coord_sample(synor_coord *c);

/* dashboard.c: the page (a fresh string or NULL). */
char *synor__coord_dashboard(synor_coord *c, const char *token);

/* market.c */
int synor__coord_market_open(synor_coord *c);
void synor__coord_market_close(synor_coord *c);
coord_resp synor__coord_market_book(coord_req *r);
coord_resp synor__coord_market_order(coord_req *r);

/* One structured log line: {"ts":..,"event":kind, ...fields_json} where
 * fields_json is a JSON object's members (without braces) or NULL. */
void synor__coord_log(synor_coord *c, const char *event, const char *fields);

#endif
