/* router_internal.h - the router's snapshot of the registry and its index,
 * shared by rindex.c (building), route.c (deciding) and score.c (the
 * score every path computes the same way). Never installed.
 *
 * A snapshot is immutable once built. Devices are grouped three levels
 * deep:
 *   class  = devices with the same capabilities (same profile, caps taken
 *            from it unchanged) in the same region: capability, memory,
 *            region, latency and task time are the same for all;
 *   leaf   = devices of a class with the same availability schedule and
 *            the same price: availability and task cost are the same;
 *   inside a leaf, the online devices sorted by reputation (highest
 *            first), then utilization (lowest first), with the running
 *            minimum of utilization, so the reputation floor is a binary
 *            search, a leaf's best possible score a lookup, and a scan of
 *            a leaf can stop early (route.c). */
#ifndef SYNOR_ROUTER_INTERNAL_H
#define SYNOR_ROUTER_INTERNAL_H

#include <stdint.h>

#include "common/common.h"
#include "synor/router.h"

typedef struct synor__rdev {
    synor_device *dev; /* a reference held by the snapshot */
    uint32_t cls, leaf;
    uint32_t owner;  /* index into names */
    uint32_t region; /* index into regions */
    uint32_t sig;    /* availability schedule index */
    int32_t reputation;
    double utilization;
    synor_device_status status;
    int priced;
    int64_t price;   /* micro-USD per hour */
    uint32_t source; /* index into sources */
} synor__rdev;

typedef struct synor__rclass {
    uint32_t rep; /* a device standing for the class */
    uint32_t region;
    uint32_t first_leaf, n_leaves;
    size_t n; /* devices */
} synor__rclass;

typedef struct synor__rleaf {
    uint32_t cls, sig;
    int priced;
    int64_t price;
    size_t n_bad_status; /* devices not online */
    size_t n_online;
    uint32_t *dev;    /* online devices: reputation descending, then
                         utilization ascending, then index */
    int32_t *rep;     /* their reputations */
    double *min_util; /* min_util[i] = least utilization of dev[0..i] */
} synor__rleaf;

typedef struct synor__rregion {
    char *name;
    int located; /* in the route table */
    double lat, lon, base_ms;
} synor__rregion;

typedef struct synor__rsnap {
    uint64_t generation;
    size_t n;
    synor__rdev *devs;
    char (*ids)[SYNOR_REGISTRY_ID_MAX];
    char **owners;
    size_t n_owners;
    synor__rregion *regions;
    size_t n_regions;
    char **sources;
    size_t n_sources;
    synor_availability *sigs;
    size_t n_sigs;
    synor__rclass *classes;
    size_t n_classes;
    synor__rleaf *leaves;
    size_t n_leaves;
    uint32_t *leaf_devs; /* storage of the leaves' arrays */
    int32_t *leaf_reps;
    double *leaf_utils;
    double km_per_ms, route_factor;
    const synor_route_table *table; /* for the user's region */
} synor__rsnap;

/* Builds a snapshot of every device of reg, priced by fn. */
int synor__rsnap_build(synor_registry *reg, const synor_route_table *table, synor_route_price_fn fn,
                       void *user, uint64_t generation, synor__rsnap **out);
void synor__rsnap_free(synor__rsnap *s);

/* Every price and region of a table, one a line, in table order (for the
 * fuzz harness's comparisons). */
void synor__route_table_dump(const synor_route_table *t, synor__buf *b);

/* "2.49" -> 2490000 micro-USD; at most 6 decimals, at most
 * SYNOR_ROUTE_PRICE_MAX. 0 or -1. */
int synor__route_usd_parse(const char *s, int64_t *out);

/* What a decision works from, checked and resolved against a snapshot. */
typedef struct synor__rctx {
    const synor_route_request *req;
    const synor__rsnap *s;
    synor_op_work work; /* ops[0], dtypes[0], flops, bytes */
    int located;        /* the user's position is known */
    double lat, lon;
    uint8_t *region_ok;    /* per snapshot region */
    double *region_lat_ms; /* per region; < 0: unknown */
    uint8_t *sig_ok;       /* per availability schedule */
} synor__rctx;

int synor__rctx_init(synor__rctx *c, const synor__rsnap *s, const synor_route_request *req);
void synor__rctx_free(synor__rctx *c);

/* Per device, what the class decides: capability and memory (0 if it
 * fails), the task time. */
int synor__route_capable(const synor__rctx *c, synor_device *dev, double *time_s);
/* Task cost: price x time, rounded up to a micro-USD (time capped at 2^62 ns).
 */
int64_t synor__route_task_cost(int64_t usd_micro_per_hour, double time_s);

/* Normalisation ranges over the candidates. */
typedef struct synor__rnorm {
    int any_priced, any_located;
    int64_t cost_min, cost_max;
    double lat_min, lat_max;
    double time_min, time_max;
} synor__rnorm;

void synor__rnorm_init(synor__rnorm *n);
void synor__rnorm_add(synor__rnorm *n, int priced, int64_t cost, double lat_ms, double time_s);
/* The first three (class and leaf) normalised components. */
void synor__route_fixed_scores(const synor__rnorm *n, int priced, int64_t cost, double lat_ms,
                               double time_s, double out[3]);
/* The weighted total; bit for bit the same on every path (fixed order). */
double synor__route_total(const synor_route_weights *w, const double fixed[3], int reputation,
                          double utilization);

#endif
