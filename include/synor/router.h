/* synor/router.h - the task router (seed 003 §4.1, issue 14 item 6): over
 * the device registry, filter the devices able to run a task, score each
 * on cost, latency, capability, reputation and load, choose one device (or
 * N distinct ones for a distributed task), and explain the decision.
 *
 * The router works on a snapshot of the registry (synor_router_refresh):
 * decisions see the registry as it was at the last refresh, prices
 * included, and never lock the registry. Decisions may run on any number
 * of threads at once; a refresh builds the new snapshot beside the old one
 * and swaps it in, waiting only for the decisions in flight.
 *
 * Money is int64 micro-USD (10^-6 USD, the market's ticks). Scores are
 * floating point (they are not money). docs/ROUTER.md has the filter, the
 * score and its normalisation, the latency estimate and the index. */
#ifndef SYNOR_ROUTER_H
#define SYNOR_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "synor/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest price per device-hour a table or a provider may give: 10^12
 * micro-USD (1,000,000 USD). With task times capped at 2^62 ns, a task's
 * cost (price x time, computed in 128 bits) then fits int64. */
#define SYNOR_ROUTE_PRICE_MAX INT64_C(1000000000000)

/* ---- route tables: prices by profile (and region), region coordinates ---- */

/* A route table (format synor-route-table/1, docs/ROUTER.md): prices per
 * device-hour by profile, optionally per region, and each region's
 * coordinates and base latency, plus the fibre speed and route factor of
 * the latency estimate. Immutable once loaded; safe to share between
 * threads. */
typedef struct synor_route_table synor_route_table;

/* An empty table: no prices, no regions, fibre 200 km/ms, route factor 1.5. */
int synor_route_table_create(synor_route_table **out);
void synor_route_table_destroy(synor_route_table *t);
/* Adds a file's prices and regions (a later entry for the same profile and
 * region, or region, replaces the earlier). All or nothing: an error (named
 * with file:line:column and field) leaves the table unchanged. */
int synor_route_table_load(synor_route_table *t, const char *path);
int synor_route_table_load_string(synor_route_table *t, const char *text, size_t len,
                                  const char *name);
/* The price of a profile in a region: the region's own entry, else the
 * profile's entry without region. 1 and *usd_micro_per_hour and *source
 * ("table: PROFILE in REGION" or "table: PROFILE", valid while t lives) if
 * found, 0 if not. */
int synor_route_table_price(const synor_route_table *t, const char *profile, const char *region,
                            int64_t *usd_micro_per_hour, const char **source);
/* A region's coordinates (degrees) and base latency (ms): 0, or
 * SYNOR_ENOENT when the table does not have it. */
int synor_route_table_region(const synor_route_table *t, const char *region, double *lat,
                             double *lon, double *base_ms);
/* The latency model: fibre speed (km/ms) and route factor. */
void synor_route_table_latency_model(const synor_route_table *t, double *km_per_ms,
                                     double *route_factor);

/* ---- cost providers ---- */

/* A cost provider: the price per device-hour of a registered device. Sets
 * *usd_micro_per_hour (0..SYNOR_ROUTE_PRICE_MAX) and *source (a text that
 * says where the price came from, valid while the router lives) and returns
 * 1, or returns 0 when it has no price, or a negative SYNOR_E* code (the
 * refresh then fails). Called on the refreshing thread, once per device. */
typedef int (*synor_route_price_fn)(void *user, const synor_registry_entry *e,
                                    int64_t *usd_micro_per_hour, const char **source);

/* The built-in provider: user is a const synor_route_table *; prices by the
 * device's profile and region (synor_route_table_price). */
int synor_route_table_price_fn(void *user, const synor_registry_entry *e,
                               int64_t *usd_micro_per_hour, const char **source);

/* ---- weights ---- */

/* The five components of a score, in this order everywhere. */
typedef enum synor_route_component {
    SYNOR_ROUTE_COST,
    SYNOR_ROUTE_LATENCY,
    SYNOR_ROUTE_CAPABILITY,
    SYNOR_ROUTE_REPUTATION,
    SYNOR_ROUTE_LOAD,
    SYNOR_ROUTE_COMPONENTS
} synor_route_component;

const char *synor_route_component_name(synor_route_component c);

typedef struct synor_route_weights {
    double w[SYNOR_ROUTE_COMPONENTS];
} synor_route_weights;

/* The seed's weights: cost 0.3, latency 0.2, capability 0.2, reputation
 * 0.15, load 0.15. */
void synor_route_weights_default(synor_route_weights *w);
/* Valid weights: each finite and in [0, 1], summing to 1 within 1e-6
 * (they are used as given, not normalised). SYNOR_EINVAL naming the
 * weight otherwise. */
int synor_route_weights_check(const synor_route_weights *w);
/* Parses "cost=0.3,latency=0.2,capability=0.2,reputation=0.15,load=0.15":
 * every component named exactly once, then checked as above. The message
 * names the bad part. *out is unchanged on failure. */
int synor_route_weights_parse(const char *text, synor_route_weights *out);

/* ---- requests ---- */

#define SYNOR_ROUTE_MAX_OPS 8
#define SYNOR_ROUTE_MAX_REGIONS 16
#define SYNOR_ROUTE_MAX_DEVICES 1024
#define SYNOR_ROUTE_MAX_RUNNERS_UP 16

/* Spread of a distributed task: N devices of N distinct owners or regions. */
typedef enum synor_route_spread {
    SYNOR_ROUTE_SPREAD_NONE,
    SYNOR_ROUTE_SPREAD_OWNER,
    SYNOR_ROUTE_SPREAD_REGION
} synor_route_spread;

typedef struct synor_route_request {
    unsigned n_ops;                          /* 1..SYNOR_ROUTE_MAX_OPS */
    synor_op_type ops[SYNOR_ROUTE_MAX_OPS];  /* all must be supported ... */
    synor_dtype dtypes[SYNOR_ROUTE_MAX_OPS]; /* ... in these data types */
    double flops;        /* of the task; time estimated as ops[0] in dtypes[0] */
    double bytes;        /* moved through device memory; flops + bytes > 0 */
    uint64_t min_memory; /* bytes of device memory */
    unsigned n_regions;  /* allowed device regions; 0 = any */
    const char *regions[SYNOR_ROUTE_MAX_REGIONS];
    int has_location; /* the user at lat/lon (degrees) ... */
    double lat, lon;
    const char *from_region;  /* ... or in this region of the table; NULL = no location */
    double max_latency_ms;    /* 0 = no limit (needs a location) */
    int min_reputation;       /* 0..100 */
    int64_t budget_usd_micro; /* most the task may cost; 0 = no budget */
    unsigned n_devices;       /* 1..SYNOR_ROUTE_MAX_DEVICES distinct devices */
    synor_route_spread spread;
    unsigned n_runners_up;                /* 0..SYNOR_ROUTE_MAX_RUNNERS_UP to report */
    const synor_host_state *available_in; /* schedules must allow; NULL = skip */
    synor_route_weights weights;
} synor_route_request;

/* Defaults: no ops (set one), 1 device, no spread, 2 runners-up, default
 * weights, no constraints. */
void synor_route_request_init(synor_route_request *r);

/* ---- decisions ---- */

/* Why a device was filtered out: the first failing check, in this order. */
typedef enum synor_route_reason {
    SYNOR_ROUTE_OUT_CAPABILITY,   /* an operation/data type unsupported, or memory
                                   */
    SYNOR_ROUTE_OUT_REGION,       /* not in an allowed region */
    SYNOR_ROUTE_OUT_LATENCY,      /* above the limit, or unknown with a limit */
    SYNOR_ROUTE_OUT_STATUS,       /* not online (busy, draining, offline) */
    SYNOR_ROUTE_OUT_AVAILABILITY, /* its schedule does not allow it now */
    SYNOR_ROUTE_OUT_REPUTATION,   /* below the floor */
    SYNOR_ROUTE_OUT_BUDGET,       /* task cost above the budget, or no price */
    SYNOR_ROUTE_OUT_COUNT
} synor_route_reason;

const char *synor_route_reason_name(synor_route_reason r);

/* One scored device. */
typedef struct synor_route_choice {
    char id[SYNOR_REGISTRY_ID_MAX];
    char profile[SYNOR_REGISTRY_TEXT_MAX]; /* "" if the device has none */
    char owner[SYNOR_REGISTRY_TEXT_MAX];
    char region[SYNOR_REGISTRY_TEXT_MAX];
    int priced;                           /* 0: the provider had no price */
    int64_t usd_micro_per_hour;           /* when priced */
    int64_t task_usd_micro;               /* price x time, rounded up; when priced */
    char price_source[96];                /* the provider's text, or "no price" */
    int latency_known;                    /* 0: no location, or region not in the table */
    double latency_ms;                    /* estimated round trip */
    double time_s;                        /* estimated task time on the device */
    int reputation;                       /* 0..100 */
    double utilization;                   /* 0..1 */
    double score[SYNOR_ROUTE_COMPONENTS]; /* normalised, each in [0, 1] */
    double total;                         /* sum of weight x score */
} synor_route_choice;

typedef struct synor_route_decision {
    unsigned wanted;            /* the request's n_devices */
    size_t n_chosen;            /* < wanted: not enough candidates */
    synor_route_choice *chosen; /* best first */
    size_t n_runners_up;
    synor_route_choice *runners_up; /* the next best after the chosen */
    size_t considered;              /* devices in the snapshot */
    size_t candidates;              /* devices that passed every filter */
    size_t filtered[SYNOR_ROUTE_OUT_COUNT];
    synor_route_weights weights;
    /* the ranges the scores were normalised over (over the candidates) */
    int64_t cost_min, cost_max;      /* task cost, priced candidates */
    double latency_min, latency_max; /* candidates with a known latency */
    double time_min, time_max;       /* task time */
    size_t scored;                   /* devices whose score was computed */
    uint64_t generation;             /* of the snapshot decided on */
} synor_route_decision;

void synor_route_decision_free(synor_route_decision *d);
/* A printable decision: the chosen devices, and with explain each one's
 * components (raw, normalised, weighted), the runners-up and the counts
 * filtered out per reason. free() it; NULL when out of memory. */
char *synor_route_decision_format(const synor_route_decision *d, int explain);
/* The decision as JSON (format synor-route/1, docs/ROUTER.md). free() it. */
char *synor_route_decision_json(const synor_route_decision *d);

/* ---- the router ---- */

typedef struct synor_router synor_router;

typedef struct synor_router_config {
    const synor_route_table *table; /* regions for latency; NULL = none */
    synor_route_price_fn price;     /* NULL: synor_route_table_price_fn on table */
    void *price_user;
} synor_router_config;

/* A router over reg, with its first snapshot taken. reg and the config's
 * table must outlive the router. */
int synor_router_create(synor_registry *reg, const synor_router_config *cfg, synor_router **out);
void synor_router_destroy(synor_router *r);
/* Takes a new snapshot of the registry (and prices). On failure the old
 * snapshot stays. */
int synor_router_refresh(synor_router *r);
/* Devices in the current snapshot, and its generation (1 on create, +1 per
 * refresh). */
size_t synor_router_device_count(synor_router *r);
uint64_t synor_router_generation(synor_router *r);

/* Decides with the index: a decision looks at groups of devices, not at
 * every device (docs/ROUTER.md "Index"). Returns 0 and a decision (free
 * with synor_route_decision_free) also when fewer than n_devices qualify
 * (n_chosen says how many did); SYNOR_EINVAL naming the field for a bad
 * request, and *out unchanged. */
int synor_router_route(synor_router *r, const synor_route_request *req, synor_route_decision **out);
/* The same decision by scanning every device of the snapshot: the
 * reference the index is tested against, and the benchmark's baseline. */
int synor_router_route_scan(synor_router *r, const synor_route_request *req,
                            synor_route_decision **out);

#ifdef __cplusplus
}
#endif
#endif
