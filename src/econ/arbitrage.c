/* arbitrage.c - electricity and carbon arbitrage in space and time (seed
 * 003 §1.2): rank regions for a job by total cost or by carbon, within a
 * latency limit to the user, and with a deadline pick the start window of
 * the job's length that minimises the hourly price or intensity (the Carbon
 * Aware SDK's "best window").
 *
 * Latency: a measured RTT from network.json where the pair is listed, else
 * an estimate from the great-circle distance (haversine, mean Earth radius
 * 6371 km) x SYNOR_ECON_ROUTE_FACTOR at SYNOR_ECON_FIBRE_KM_PER_MS, there
 * and back; estimates are labelled.
 *
 * The hourly profiles are one published week each, used as a typical week:
 * "now" is placed at the same offset from the profile's start modulo its
 * length, and a window may wrap around the end. Money stays integer (sums
 * of value x seconds in 128 bits); carbon is grams, a double. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "econ/econ_internal.h"

__extension__ typedef __int128 i128;

void synor_rank_request_init(synor_rank_request *r)
{
    memset(r, 0, sizeof *r);
    synor_price_request_init(&r->price);
    r->by = SYNOR_RANK_COST;
}

int synor_econ_best_window(const synor_econ_hourly *h, int64_t now_unix, int64_t job_seconds,
                           int64_t deadline_seconds, int64_t *best_offset_s, int64_t *now_sum,
                           int64_t *best_sum)
{
    if (!h || !h->n || !best_offset_s || !now_sum || !best_sum)
        return synor__error(SYNOR_EINVAL, "best window: no hourly profile");
    if (job_seconds < 1 || job_seconds > deadline_seconds)
        return synor__error(SYNOR_EINVAL,
                            "best window: a job of %lld s does not fit before a "
                            "deadline of %lld s",
                            (long long)job_seconds, (long long)deadline_seconds);
    int64_t n = (int64_t)h->n;
    if (deadline_seconds > n * 3600)
        return synor__error(SYNOR_ERANGE,
                            "best window: a deadline of %lld h is longer than the "
                            "%lld h profile of %s",
                            (long long)((deadline_seconds + 3599) / 3600), (long long)n, h->region);
    /* hour of the profile that now falls in */
    int64_t off = now_unix - h->start_unix;
    int64_t idx = ((off / 3600) % n + n) % n;
    if (off < 0 && off % 3600)
        idx = (idx - 1 + n) % n;
    int64_t full = job_seconds / 3600, part = job_seconds % 3600;
    int64_t starts = (deadline_seconds - job_seconds) / 3600; /* last start offset, hours */
    i128 best = 0;
    int64_t best_s = -1;
    for (int64_t st = 0; st <= starts; st++) {
        i128 sum = 0;
        for (int64_t k = 0; k < full; k++)
            sum += (i128)h->values[(idx + st + k) % n] * 3600;
        if (part)
            sum += (i128)h->values[(idx + st + full) % n] * part;
        if (sum > INT64_MAX || sum < INT64_MIN)
            return synor__error(SYNOR_ERANGE, "best window: a sum beyond 64 bits");
        if (st == 0)
            *now_sum = (int64_t)sum;
        if (best_s < 0 || sum < best) {
            best = sum;
            best_s = st;
        }
    }
    *best_offset_s = best_s * 3600;
    *best_sum = (int64_t)best;
    return 0;
}

static double great_circle_km(double lat1, double lon1, double lat2, double lon2)
{
    const double rad = 3.14159265358979323846 / 180;
    double dphi = (lat2 - lat1) * rad, dl = (lon2 - lon1) * rad;
    double a = sin(dphi / 2) * sin(dphi / 2) +
               cos(lat1 * rad) * cos(lat2 * rad) * sin(dl / 2) * sin(dl / 2);
    return 2 * 6371.0 * asin(fmin(1.0, sqrt(a)));
}

/* kWh the job draws from the grid, as a double (carbon only). */
static double job_kwh(const synor_price_quote *q, int64_t seconds)
{
    return (double)q->milliwatts * (double)seconds * q->pue->pue_milli / 3.6e12;
}

static int by_rank(const void *pa, const void *pb, void *ctx)
{
    const synor_rank_entry *a = pa, *b = pb;
    synor_rank_by by = *(const synor_rank_by *)ctx;
    if (a->ok != b->ok)
        return b->ok - a->ok;
    if (a->ok) {
        if (by == SYNOR_RANK_COST) {
            if (a->quote.total != b->quote.total)
                return a->quote.total < b->quote.total ? -1 : 1;
        } else {
            if (a->gco2 != b->gco2)
                return a->gco2 < b->gco2 ? -1 : 1;
        }
    }
    return strcmp(a->region->id, b->region->id);
}

/* insertion sort: a handful of regions, and qsort_r is a GNU extension */
static void sort_entries(synor_rank_entry *v, size_t n, synor_rank_by by)
{
    for (size_t i = 1; i < n; i++) {
        synor_rank_entry x = v[i];
        size_t j = i;
        while (j > 0 && by_rank(&v[j - 1], &x, &by) > 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

static void rank_one(const synor_econ *e, const synor_rank_request *r,
                     const synor_econ_region *user, synor_rank_entry *en)
{
    const synor_econ_region *g = en->region;
    synor_price_request pr = r->price;
    pr.region = g->id;
    pr.demand_bp = 10000;
    en->latency_ms = -1;
    en->gco2 = -1;
    /* network to the user: intra-region when the user is in the region */
    if (pr.network_milli_gb > 0)
        pr.egress_scope = user && user == g ? "intra-region" : "internet";
    if (synor_econ_price(e, &pr, &en->quote)) {
        snprintf(en->reason, sizeof en->reason, "%s", synor_errmsg());
        return;
    }
    const synor_econ_carbon *c = synor_econ_carbon_find(e, g->id);
    double kwh = job_kwh(&en->quote, pr.seconds);
    if (c)
        en->gco2 = kwh * c->gco2_per_kwh;
    else if (r->by == SYNOR_RANK_CARBON) {
        snprintf(en->reason, sizeof en->reason, "no carbon intensity for %s", g->id);
        return;
    }
    if (user) {
        const synor_econ_latency *l = synor_econ_latency_find(e, user->id, g->id);
        if (l)
            en->latency_ms = l->rtt_ms;
        else {
            en->latency_ms = 2 * great_circle_km(user->lat, user->lon, g->lat, g->lon) *
                             SYNOR_ECON_ROUTE_FACTOR / SYNOR_ECON_FIBRE_KM_PER_MS;
            en->latency_estimated = 1;
        }
    } else if (r->has_latlon) {
        en->latency_ms = 2 * great_circle_km(r->lat, r->lon, g->lat, g->lon) *
                         SYNOR_ECON_ROUTE_FACTOR / SYNOR_ECON_FIBRE_KM_PER_MS;
        en->latency_estimated = 1;
    }
    if (r->max_latency_ms > 0 && en->latency_ms > r->max_latency_ms) {
        snprintf(en->reason, sizeof en->reason, "RTT %.1f ms%s > %.1f ms", en->latency_ms,
                 en->latency_estimated ? " (estimated)" : "", r->max_latency_ms);
        return;
    }
    en->ok = 1;
    if (r->deadline_seconds <= 0)
        return;
    const synor_econ_hourly *h = synor_econ_hourly_find(e, g->id, r->by == SYNOR_RANK_CARBON);
    int64_t off, now_sum, best_sum;
    if (!h || synor_econ_best_window(h, r->now_unix, pr.seconds, r->deadline_seconds, &off,
                                     &now_sum, &best_sum))
        return; /* no window: ranked on the annual figures alone */
    en->has_window = 1;
    en->window_offset_s = off;
    en->window_start_unix = r->now_unix + off;
    if (r->by == SYNOR_RANK_CARBON) {
        /* sums are milli-gCO2/kWh x s; x kW (mW x PUE / 1e9) / 3600 / 1000 */
        double kw = (double)en->quote.milliwatts * en->quote.pue->pue_milli / 1e9;
        en->now_gco2 = (double)now_sum * kw / 3.6e6;
        en->best_gco2 = (double)best_sum * kw / 3.6e6;
    } else {
        /* uUSD/MWh x s x mW x PUE(milli) / (3600 s/h x 1e9 mW/MW x 1000) */
        i128 d = (i128)3600 * 1000000000 * 1000;
        i128 kwm = (i128)en->quote.milliwatts * en->quote.pue->pue_milli;
        i128 a = (i128)now_sum * kwm, b = (i128)best_sum * kwm;
        en->now_cost = (int64_t)(a >= 0 ? (a + d / 2) / d : -((-a + d / 2) / d));
        en->best_cost = (int64_t)(b >= 0 ? (b + d / 2) / d : -((-b + d / 2) / d));
    }
}

int synor_econ_rank(const synor_econ *e, const synor_rank_request *r, synor_rank_entry **out,
                    size_t *n)
{
    if (!e || !r || !out || !n)
        return synor__error(SYNOR_EINVAL, "synor_econ_rank: NULL argument");
    if (!synor_econ_file_of(e, SYNOR_ECON_REGIONS) ||
        !synor_econ_file_of(e, SYNOR_ECON_ELECTRICITY))
        return SYNOR_ENOENT;
    if (r->by == SYNOR_RANK_CARBON && !synor_econ_file_of(e, SYNOR_ECON_CARBON))
        return SYNOR_ENOENT;
    if (r->max_latency_ms < 0 || r->deadline_seconds < 0)
        return synor__error(SYNOR_EINVAL, "rank: negative latency limit or deadline");
    if (r->deadline_seconds > 0 && r->deadline_seconds < r->price.seconds)
        return synor__error(SYNOR_EINVAL,
                            "rank: a job of %lld s cannot finish within a deadline "
                            "of %lld s",
                            (long long)r->price.seconds, (long long)r->deadline_seconds);
    const synor_econ_region *user = NULL;
    if (r->from && !(user = synor_econ_region_find(e, r->from)))
        return synor__error(SYNOR_ENOENT, "rank: unknown region \"%s\" (--from)", r->from);
    if (r->has_latlon && (!(fabs(r->lat) <= 90) || !(fabs(r->lon) <= 180)))
        return synor__error(SYNOR_EINVAL,
                            "rank: position %g, %g is not a latitude and "
                            "longitude",
                            r->lat, r->lon);
    size_t cap = r->regions ? r->n_regions : e->set->n_elec;
    synor_rank_entry *v = synor__calloc(cap ? cap : 1, sizeof *v);
    if (!v)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < cap; i++) {
        const char *id = r->regions ? r->regions[i] : e->set->elec[i].region;
        const synor_econ_region *g = synor_econ_region_find(e, id);
        if (!g) {
            free(v);
            return synor__error(SYNOR_ENOENT, "rank: unknown region \"%s\"", id);
        }
        for (size_t k = 0; k < i; k++)
            if (v[k].region == g) {
                free(v);
                return synor__error(SYNOR_EINVAL, "rank: region %s is listed twice", g->id);
            }
        v[i].region = g;
        rank_one(e, r, user, &v[i]);
    }
    sort_entries(v, cap, r->by);
    *out = v;
    *n = cap;
    return 0;
}
