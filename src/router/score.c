/* score.c - what the index and the scan compute the same way: weights,
 * request checks, the latency estimate, task cost in integer micro-USD,
 * normalisation and the weighted total.
 *
 * Normalisation (docs/ROUTER.md "Score"): cost, latency and capability are
 * min-max over the candidates (cheapest, nearest, fastest = 1; dearest,
 * farthest, slowest = 0; 1 for all when all are equal; 0 for a device
 * without a price or without a known latency); reputation is reputation /
 * 100 and load is 1 - utilization, absolute. The total adds weight x score
 * in component order, so the index's bound for a leaf (the same sum with
 * the leaf's best reputation and least utilization) is never below the
 * score of a device in it: IEEE additions and multiplications by
 * non-negative numbers are monotonic. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router/router_internal.h"

static const char *const component_names[SYNOR_ROUTE_COMPONENTS] = {"cost", "latency", "capability",
                                                                    "reputation", "load"};

const char *synor_route_component_name(synor_route_component c)
{
    return (unsigned)c < SYNOR_ROUTE_COMPONENTS ? component_names[c] : "?";
}

static const char *const reason_names[SYNOR_ROUTE_OUT_COUNT] = {
    "capability", "region", "latency", "status", "availability", "reputation", "budget"};

const char *synor_route_reason_name(synor_route_reason r)
{
    return (unsigned)r < SYNOR_ROUTE_OUT_COUNT ? reason_names[r] : "?";
}

void synor_route_weights_default(synor_route_weights *w)
{
    static const double seed[SYNOR_ROUTE_COMPONENTS] = {0.3, 0.2, 0.2, 0.15, 0.15};
    memcpy(w->w, seed, sizeof seed);
}

int synor_route_weights_check(const synor_route_weights *w)
{
    if (!w)
        return synor__error(SYNOR_EINVAL, "weights: NULL");
    double sum = 0;
    for (int i = 0; i < SYNOR_ROUTE_COMPONENTS; i++) {
        if (!isfinite(w->w[i]) || w->w[i] < 0 || w->w[i] > 1)
            return synor__error(SYNOR_EINVAL, "weight %s=%g is not in [0, 1]", component_names[i],
                                w->w[i]);
        sum += w->w[i];
    }
    if (fabs(sum - 1) > 1e-6)
        return synor__error(SYNOR_EINVAL, "weights sum to %.9g, not 1", sum);
    return 0;
}

int synor_route_weights_parse(const char *text, synor_route_weights *out)
{
    if (!text || !out)
        return synor__error(SYNOR_EINVAL, "weights: NULL argument");
    synor_route_weights w;
    int seen[SYNOR_ROUTE_COMPONENTS] = {0};
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char part[64];
        if (len == 0 || len >= sizeof part)
            return synor__error(SYNOR_EINVAL, "weights: empty or too long part in \"%s\"", text);
        memcpy(part, p, len);
        part[len] = '\0';
        char *eq = strchr(part, '=');
        if (!eq)
            return synor__error(SYNOR_EINVAL, "weights: \"%s\" is not NAME=VALUE", part);
        *eq = '\0';
        int k = -1;
        for (int i = 0; i < SYNOR_ROUTE_COMPONENTS; i++)
            if (strcmp(part, component_names[i]) == 0)
                k = i;
        if (k < 0)
            return synor__error(SYNOR_EINVAL,
                                "weights: unknown component \"%s\" (cost, latency, capability, "
                                "reputation, load)",
                                part);
        if (seen[k]++)
            return synor__error(SYNOR_EINVAL, "weights: %s given twice", part);
        const char *v = eq + 1;
        char *vend;
        int digits_only = *v != '\0';
        for (const char *c = v; *c; c++)
            digits_only &= (*c >= '0' && *c <= '9') || *c == '.';
        double x = digits_only ? strtod(v, &vend) : NAN;
        if (!digits_only || *vend || !(x >= 0 && x <= 1))
            return synor__error(SYNOR_EINVAL, "weights: %s=%s is not a number in [0, 1]", part, v);
        w.w[k] = x;
        p += len;
        if (*p == ',' && !*++p)
            return synor__error(SYNOR_EINVAL, "weights: \"%s\" ends with a comma", text);
    }
    for (int i = 0; i < SYNOR_ROUTE_COMPONENTS; i++)
        if (!seen[i])
            return synor__error(SYNOR_EINVAL, "weights: %s is missing (give all five)",
                                component_names[i]);
    int rc = synor_route_weights_check(&w);
    if (rc)
        return rc;
    *out = w;
    return 0;
}

void synor_route_request_init(synor_route_request *r)
{
    memset(r, 0, sizeof *r);
    r->n_devices = 1;
    r->n_runners_up = 2;
    synor_route_weights_default(&r->weights);
}

/* Great-circle distance (haversine, mean Earth radius 6371.0 km). */
static double distance_km(double lat1, double lon1, double lat2, double lon2)
{
    const double rad = M_PI / 180;
    double dlat = (lat2 - lat1) * rad, dlon = (lon2 - lon1) * rad;
    double a = sin(dlat / 2) * sin(dlat / 2) +
               cos(lat1 * rad) * cos(lat2 * rad) * sin(dlon / 2) * sin(dlon / 2);
    if (a > 1)
        a = 1;
    return 2 * 6371.0 * asin(sqrt(a));
}

static int check_request(const synor_route_request *q)
{
    if (q->n_ops < 1 || q->n_ops > SYNOR_ROUTE_MAX_OPS)
        return synor__error(SYNOR_EINVAL, "request: n_ops %u is not 1..%d", q->n_ops,
                            SYNOR_ROUTE_MAX_OPS);
    for (unsigned i = 0; i < q->n_ops; i++)
        if ((unsigned)q->ops[i] >= SYNOR_OP_TYPE_COUNT ||
            (unsigned)q->dtypes[i] >= SYNOR_DTYPE_COUNT)
            return synor__error(SYNOR_EINVAL,
                                "request: ops[%u] is not a known operation and "
                                "data type",
                                i);
    if (!isfinite(q->flops) || !isfinite(q->bytes) || q->flops < 0 || q->bytes < 0 ||
        !(q->flops + q->bytes > 0))
        return synor__error(SYNOR_EINVAL,
                            "request: flops %g and bytes %g: both finite, not "
                            "negative, not both 0",
                            q->flops, q->bytes);
    if (q->n_regions > SYNOR_ROUTE_MAX_REGIONS)
        return synor__error(SYNOR_EINVAL, "request: n_regions %u is above %d", q->n_regions,
                            SYNOR_ROUTE_MAX_REGIONS);
    for (unsigned i = 0; i < q->n_regions; i++)
        if (!q->regions[i])
            return synor__error(SYNOR_EINVAL, "request: regions[%u] is NULL", i);
    if (q->has_location && (!(q->lat >= -90 && q->lat <= 90) || !(q->lon >= -180 && q->lon <= 180)))
        return synor__error(SYNOR_EINVAL,
                            "request: location %g,%g is not a latitude in "
                            "[-90, 90] and a longitude in [-180, 180]",
                            q->lat, q->lon);
    if (q->has_location && q->from_region)
        return synor__error(SYNOR_EINVAL, "request: a location and from_region \"%s\": give one",
                            q->from_region);
    if (!(q->max_latency_ms >= 0 && q->max_latency_ms <= 1e6))
        return synor__error(SYNOR_EINVAL, "request: max_latency_ms %g is not in [0, 1e6]",
                            q->max_latency_ms);
    if (q->max_latency_ms > 0 && !q->has_location && !q->from_region)
        return synor__error(SYNOR_EINVAL, "request: max_latency_ms needs the user's location "
                                          "(lat/lon or from_region)");
    if (q->min_reputation < 0 || q->min_reputation > 100)
        return synor__error(SYNOR_EINVAL, "request: min_reputation %d is not 0..100",
                            q->min_reputation);
    if (q->budget_usd_micro < 0)
        return synor__error(SYNOR_EINVAL, "request: budget %lld micro-USD is negative",
                            (long long)q->budget_usd_micro);
    if (q->n_devices < 1 || q->n_devices > SYNOR_ROUTE_MAX_DEVICES)
        return synor__error(SYNOR_EINVAL, "request: n_devices %u is not 1..%d", q->n_devices,
                            SYNOR_ROUTE_MAX_DEVICES);
    if (q->n_runners_up > SYNOR_ROUTE_MAX_RUNNERS_UP)
        return synor__error(SYNOR_EINVAL, "request: n_runners_up %u is above %d", q->n_runners_up,
                            SYNOR_ROUTE_MAX_RUNNERS_UP);
    if ((unsigned)q->spread > SYNOR_ROUTE_SPREAD_REGION)
        return synor__error(SYNOR_EINVAL, "request: spread %d is unknown", (int)q->spread);
    if (q->available_in && q->available_in->utc_hour > 23)
        return synor__error(SYNOR_EINVAL, "request: available_in hour %u is not 0..23",
                            q->available_in->utc_hour);
    return synor_route_weights_check(&q->weights);
}

int synor__rctx_init(synor__rctx *c, const synor__rsnap *s, const synor_route_request *req)
{
    memset(c, 0, sizeof *c);
    int rc = check_request(req);
    if (rc)
        return rc;
    c->req = req;
    c->s = s;
    c->work.type = req->ops[0];
    c->work.dtype = req->dtypes[0];
    c->work.flops = req->flops;
    c->work.bytes_read = req->bytes;
    if (req->has_location) {
        c->located = 1;
        c->lat = req->lat;
        c->lon = req->lon;
    } else if (req->from_region) {
        if (synor_route_table_region(s->table, req->from_region, &c->lat, &c->lon, NULL))
            return synor__error(SYNOR_EINVAL,
                                "request: from_region \"%s\" is not in the route "
                                "table",
                                req->from_region);
        c->located = 1;
    }
    c->region_ok = synor__malloc(s->n_regions + s->n_sigs + 1);
    c->region_lat_ms = synor__malloc((s->n_regions + 1) * sizeof *c->region_lat_ms);
    if (!c->region_ok || !c->region_lat_ms) {
        synor__rctx_free(c);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    c->sig_ok = c->region_ok + s->n_regions;
    for (size_t i = 0; i < s->n_regions; i++) {
        const synor__rregion *g = &s->regions[i];
        int ok = req->n_regions == 0;
        for (unsigned k = 0; k < req->n_regions && !ok; k++)
            ok = strcmp(req->regions[k], g->name) == 0;
        c->region_ok[i] = (uint8_t)ok;
        c->region_lat_ms[i] = -1;
        if (c->located && g->located)
            c->region_lat_ms[i] = g->base_ms + 2 * distance_km(c->lat, c->lon, g->lat, g->lon) *
                                                   s->route_factor / s->km_per_ms;
    }
    for (size_t i = 0; i < s->n_sigs; i++)
        c->sig_ok[i] = (uint8_t)(!req->available_in ||
                                 synor_availability_allows(&s->sigs[i], req->available_in));
    return 0;
}

void synor__rctx_free(synor__rctx *c)
{
    synor__free(c->region_ok);
    synor__free(c->region_lat_ms);
    c->region_ok = NULL;
    c->region_lat_ms = NULL;
}

int synor__route_capable(const synor__rctx *c, synor_device *dev, double *time_s)
{
    const synor_route_request *q = c->req;
    if (synor_device_caps(dev)->mem_bytes < q->min_memory)
        return 0;
    for (unsigned i = 0; i < q->n_ops; i++) {
        synor_op_work w = c->work;
        w.type = q->ops[i];
        w.dtype = q->dtypes[i];
        if (!synor_device_can_execute(dev, &w))
            return 0;
    }
    double t = synor_device_estimate_time(dev, &c->work);
    if (!(t > 0) || !isfinite(t))
        return 0;
    *time_s = t;
    return 1;
}

int64_t synor__route_task_cost(int64_t usd_micro_per_hour, double time_s)
{
    const double cap = 4611686018427387904.0; /* 2^62 ns */
    double ns_d = ceil(time_s * 1e9);
    int64_t ns = ns_d >= cap ? INT64_C(4611686018427387904) : ns_d > 0 ? (int64_t)ns_d : 0;
    /* price <= 10^12 and ns <= 2^62: the product fits 128 bits, the result
     * (<= 1.3e18) int64 */
    __extension__ typedef __int128 i128;
    i128 num = (i128)usd_micro_per_hour * ns;
    const i128 per_hour_ns = (i128)3600 * 1000000000;
    return (int64_t)((num + per_hour_ns - 1) / per_hour_ns);
}

void synor__rnorm_init(synor__rnorm *n)
{
    memset(n, 0, sizeof *n);
    n->time_min = INFINITY;
}

void synor__rnorm_add(synor__rnorm *n, int priced, int64_t cost, double lat_ms, double time_s)
{
    if (priced) {
        if (!n->any_priced || cost < n->cost_min)
            n->cost_min = cost;
        if (!n->any_priced || cost > n->cost_max)
            n->cost_max = cost;
        n->any_priced = 1;
    }
    if (lat_ms >= 0) {
        if (!n->any_located || lat_ms < n->lat_min)
            n->lat_min = lat_ms;
        if (!n->any_located || lat_ms > n->lat_max)
            n->lat_max = lat_ms;
        n->any_located = 1;
    }
    if (time_s < n->time_min)
        n->time_min = time_s;
    if (time_s > n->time_max)
        n->time_max = time_s;
}

void synor__route_fixed_scores(const synor__rnorm *n, int priced, int64_t cost, double lat_ms,
                               double time_s, double out[3])
{
    if (!priced)
        out[0] = 0;
    else if (n->cost_max == n->cost_min)
        out[0] = 1;
    else
        out[0] = (double)(n->cost_max - cost) / (double)(n->cost_max - n->cost_min);
    if (lat_ms < 0)
        out[1] = 0;
    else if (n->lat_max == n->lat_min)
        out[1] = 1;
    else
        out[1] = (n->lat_max - lat_ms) / (n->lat_max - n->lat_min);
    /* capability: speed 1/time, min-max; the fastest 1 */
    double smin = 1 / n->time_max, smax = 1 / n->time_min, sp = 1 / time_s;
    if (!(smax > smin))
        out[2] = 1;
    else
        out[2] = (sp - smin) / (smax - smin);
    for (int i = 0; i < 3; i++)
        out[i] = out[i] < 0 ? 0 : out[i] > 1 ? 1 : out[i];
}

double synor__route_total(const synor_route_weights *w, const double fixed[3], int reputation,
                          double utilization)
{
    double t = w->w[0] * fixed[0];
    t += w->w[1] * fixed[1];
    t += w->w[2] * fixed[2];
    t += w->w[3] * (reputation / 100.0);
    t += w->w[4] * (1 - utilization);
    return t;
}
