/* compare.c - the cost comparison (seed 003 §1.4): a job of device-hours on
 * the network (the pricing engine at the cheapest region, and the market's
 * asks when given) against each cloud's cheapest matching instance,
 * on-demand and spot, and the seed's savings breakdown computed from the
 * data instead of asserted (docs/ECONOMICS.md, "The comparison").
 *
 * Every amount is the job's cost in int64 micro-USD: a cloud's instances
 * are whole (ceil(devices / devices per instance)) at the listed hourly
 * price for the job's seconds (per-second billing); the network's are
 * synor_econ_price over devices x seconds. The breakdown's parts are taken
 * on the job's share of the instances (price x seconds x the devices it
 * needs / the devices an instance holds: the same devices on both sides),
 * C being that share of the cheapest on-demand cloud:
 *   margin      C - the same devices' own cost (energy + depreciation) in
 *               that instance's region at hyperscale PUE, no fee: what the
 *               cloud charges above the devices and their electricity (its
 *               host servers, network, staff and profit)
 *   PUE         that own cost at hyperscale PUE - at the network's site
 *   spot        C - the cheapest cloud spot share (a discount the cloud
 *               itself offers on interruptible capacity)
 *   region      the network's cost in the user's region - in the cheapest
 *   consumer    the network's cost at the cheapest region - the same work
 *               on a consumer device there (hours scaled by the two
 *               profiles' peak throughput at the data type)
 * They overlap and need not add up. The headline saving is 1 - network /
 * the whole instances' on-demand cost (what a cloud user pays), and also
 * against C; the network's cost is at its cheapest region, or on the
 * consumer device when one is given and cheaper. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "econ/econ_internal.h"

__extension__ typedef __int128 i128;

static const char *const providers[SYNOR_COMPARE_PROVIDERS] = {"aws", "gcp", "azure"};

const char *synor_compare_provider_name(size_t i)
{
    return i < SYNOR_COMPARE_PROVIDERS ? providers[i] : NULL;
}

void synor_compare_request_init(synor_compare_request *r)
{
    memset(r, 0, sizeof *r);
    synor_price_request_init(&r->price);
    r->price.site = "colocation";
    r->count = 1;
    r->dtype = SYNOR_DTYPE_FP16;
}

/* (c - pay) / c in basis points, rounded half away from zero; 0 when c is 0 */
static int64_t saving_bp(int64_t c, int64_t pay)
{
    if (c <= 0)
        return 0;
    i128 num = (i128)(c - pay) * 10000;
    return (int64_t)(num >= 0 ? (num + c / 2) / c : -((-num + c / 2) / c));
}

/* devices of profile in the instance */
static int devices_in(const synor_econ_instance *in, const char *profile)
{
    int n = 0;
    for (size_t k = 0; k < in->n_devices; k++)
        if (!strcmp(in->devices[k].profile, profile))
            n += in->devices[k].count;
    return n;
}

/* The job on whole instances of `in` at an hourly price: ceil(count / per)
 * instances x price x seconds / 3600. */
static int instance_cost(const synor_econ_instance *in, int per, int count, int64_t hourly,
                         int64_t seconds, int64_t *instances, int64_t *out, int64_t *share)
{
    *instances = (count + per - 1) / per;
    int64_t per_job;
    int rc = synor_econ_muldiv(hourly, seconds, 3600, &per_job);
    if (!rc && per_job > INT64_MAX / *instances)
        rc = synor__error(SYNOR_ERANGE, "compare: %s for %lld instances exceeds 64 bits",
                          in->type, (long long)*instances);
    if (!rc)
        *out = per_job * *instances;
    /* the share: price x seconds x count / (3600 x per), rounded once */
    if (!rc && (rc = synor_econ_muldiv(hourly, seconds * (int64_t)count, 3600 * (int64_t)per,
                                       share)))
        rc = synor__error(SYNOR_ERANGE, "compare: the share of %s exceeds 64 bits", in->type);
    return rc;
}

/* The engine's cost of the job (count devices for seconds each) of profile
 * at region and site, with or without the fee. */
static int engine_cost(const synor_econ *e, const synor_compare_request *r, const char *profile,
                       const char *region, const char *site, int fee, int64_t seconds,
                       synor_price_quote *q)
{
    synor_price_request p = r->price;
    p.profile = profile;
    p.region = region;
    p.site = site;
    if (!fee)
        p.fee_bp = 0;
    if ((int64_t)r->count > SYNOR_ECON_MAX_SECONDS / seconds)
        return synor__error(SYNOR_ERANGE, "compare: %d devices x %lld s is beyond %lld hours",
                            r->count, (long long)seconds, SYNOR_ECON_MAX_SECONDS / 3600);
    p.seconds = seconds * r->count;
    return synor_econ_price(e, &p, q);
}

int synor_econ_compare(const synor_econ *e, const synor_compare_request *r,
                       synor_compare_result *out)
{
    if (!e || !r || !out || !r->price.profile)
        return synor__error(SYNOR_EINVAL, "synor_econ_compare: NULL argument");
    if (r->count < 1 || r->count > 1000000)
        return synor__error(SYNOR_ERANGE, "compare: %d devices (1 to 1,000,000)", r->count);
    int64_t secs = r->price.seconds;
    if (secs < 1 || secs > SYNOR_ECON_MAX_SECONDS)
        return synor__error(SYNOR_ERANGE, "compare: a job of %lld s per device (1 s to %lld h)",
                            (long long)secs, SYNOR_ECON_MAX_SECONDS / 3600);
    synor_compare_result res;
    memset(&res, 0, sizeof res);
    const char *profile = r->price.profile;
    /* the clouds: each provider's cheapest matching instance, on-demand and spot */
    int rc = 0;
    for (size_t i = 0; i < synor_econ_instance_count(e) && !rc; i++) {
        const synor_econ_instance *in = synor_econ_instance_at(e, i);
        int per = devices_in(in, profile);
        size_t pv = 0;
        while (pv < SYNOR_COMPARE_PROVIDERS && strcmp(providers[pv], in->provider))
            pv++;
        if (!per || pv == SYNOR_COMPARE_PROVIDERS)
            continue;
        synor_compare_cloud *c = &res.cloud[pv];
        int64_t n, cost, share;
        if ((rc = instance_cost(in, per, r->count, in->on_demand, secs, &n, &cost, &share)))
            break;
        if (!c->on_demand || cost < c->on_demand_cost ||
            (cost == c->on_demand_cost && share < c->on_demand_share)) {
            c->on_demand = in;
            c->on_demand_cost = cost;
            c->on_demand_instances = n;
            c->on_demand_share = share;
        }
        if (in->spot >= 0) {
            if ((rc = instance_cost(in, per, r->count, in->spot, secs, &n, &cost, &share)))
                break;
            if (!c->spot || cost < c->spot_cost ||
                (cost == c->spot_cost && share < c->spot_share)) {
                c->spot = in;
                c->spot_cost = cost;
                c->spot_instances = n;
                c->spot_share = share;
            }
        }
    }
    if (rc)
        return rc;
    int best = -1, best_spot = -1;
    for (int pv = 0; pv < SYNOR_COMPARE_PROVIDERS; pv++) {
        const synor_compare_cloud *c = &res.cloud[pv];
        if (c->on_demand && (best < 0 || c->on_demand_cost < res.cloud[best].on_demand_cost))
            best = pv;
        if (c->spot && (best_spot < 0 || c->spot_cost < res.cloud[best_spot].spot_cost))
            best_spot = pv;
    }
    if (best < 0)
        return synor__error(SYNOR_ENOENT, "compare: no cloud instance in the data holds a %s "
                                          "(cloud.json)", profile);
    res.best_cloud = best;
    res.best_spot_cloud = best_spot;
    /* the network: its cheapest region for this device (the arbitrage) */
    synor_rank_request rk;
    synor_rank_request_init(&rk);
    rk.price = r->price;
    rk.price.seconds = secs;
    if ((int64_t)r->count > SYNOR_ECON_MAX_SECONDS / secs)
        return synor__error(SYNOR_ERANGE, "compare: %d devices x %lld s is beyond %lld hours",
                            r->count, (long long)secs, SYNOR_ECON_MAX_SECONDS / 3600);
    rk.price.seconds = secs * r->count;
    rk.by = SYNOR_RANK_COST;
    synor_rank_entry *ranked = NULL;
    size_t nr = 0;
    if ((rc = synor_econ_rank(e, &rk, &ranked, &nr)))
        return rc;
    if (nr == 0 || !ranked[0].ok) {
        free(ranked);
        return synor__error(SYNOR_ENOENT, "compare: no region can price a %s (electricity, "
                                          "PUE and hardware data are needed)", profile);
    }
    res.network_region = ranked[0].region;
    res.network = ranked[0].quote;
    free(ranked);
    /* the parts of the breakdown */
    const synor_econ_instance *cin = res.cloud[best].on_demand;
    const char *cloud_region = cin->grid_region;
    int64_t C = res.cloud[best].on_demand_share;
    synor_price_quote own_hyper, own_site;
    if ((rc = engine_cost(e, r, profile, cloud_region, "hyperscale", 0, secs, &own_hyper)) ||
        (rc = engine_cost(e, r, profile, cloud_region, r->price.site, 0, secs, &own_site)))
        return rc;
    res.own_cost_hyperscale = own_hyper.total;
    res.own_cost_site = own_site.total;
    res.cloud_region = cloud_region;
    res.margin = C - own_hyper.total;
    res.pue = own_hyper.total - own_site.total;
    int64_t spot_share = INT64_MAX;
    for (int pv = 0; pv < SYNOR_COMPARE_PROVIDERS; pv++)
        if (res.cloud[pv].spot && res.cloud[pv].spot_share < spot_share)
            spot_share = res.cloud[pv].spot_share;
    res.spot = best_spot >= 0 ? C - spot_share : 0;
    res.has_spot = best_spot >= 0;
    if (r->user_region) {
        synor_price_quote uq;
        if ((rc = engine_cost(e, r, profile, r->user_region, r->price.site, 1, secs, &uq)))
            return rc;
        res.network_user_region = uq;
        res.has_user_region = 1;
        res.region = uq.total - res.network.total;
    }
    res.pay = res.network.total;
    if (r->consumer_profile) {
        const synor_profile *dc = synor_catalog_find(e->cat, profile);
        const synor_profile *cp = synor_catalog_find(e->cat, r->consumer_profile);
        if (!cp)
            return synor__error(SYNOR_ENOENT, "compare: no profile \"%s\" in the catalog",
                                r->consumer_profile);
        double a = dc ? synor_caps_peak(&dc->caps, r->dtype, 0) : 0;
        double b = synor_caps_peak(&cp->caps, r->dtype, 0);
        if (!(a > 0) || !(b > 0))
            return synor__error(SYNOR_ENOENT, "compare: %s or %s has no %s throughput to "
                                              "scale the work by",
                                profile, r->consumer_profile, synor_dtype_name(r->dtype));
        double cs = ceil((double)secs * a / b);
        if (!(cs >= 1) || cs > (double)SYNOR_ECON_MAX_SECONDS)
            return synor__error(SYNOR_ERANGE, "compare: the work on %s would take %g s",
                                r->consumer_profile, cs);
        res.consumer_seconds = (int64_t)cs;
        if ((rc = engine_cost(e, r, r->consumer_profile, res.network_region->id, "home", 1,
                              res.consumer_seconds, &res.consumer_quote)))
            return rc;
        res.has_consumer = 1;
        res.consumer = res.network.total - res.consumer_quote.total;
        if (res.consumer_quote.total < res.pay)
            res.pay = res.consumer_quote.total;
    }
    if (r->market_ask > 0) {
        /* the market's best ask for the job's device-hours (units are whole
         * device-hours: the job's seconds rounded up per device) */
        int64_t hours = (secs + 3599) / 3600;
        int64_t units = hours * r->count, cost;
        if (r->market_ask > INT64_MAX / units)
            return synor__error(SYNOR_ERANGE, "compare: the market's quote exceeds 64 bits");
        cost = r->market_ask * units;
        res.market_cost = cost;
        res.has_market = 1;
    }
    res.saving_bp = saving_bp(res.cloud[best].on_demand_cost, res.pay);
    res.saving_share_bp = saving_bp(C, res.pay);
    *out = res;
    return 0;
}
