/* price.c - the pricing engine (seed 003 §1.1): a provider's base cost
 * (energy + depreciation + network), the demand multiplier read from a live
 * order book, the protocol fee, and the total, all in int64 micro-USD.
 *
 *   energy       = W x s x PUE x price/kWh            (one rounding)
 *   depreciation = list price x s / (life s x utilisation)
 *   network      = GB x egress price/GB
 *   base         = energy + depreciation + network
 *   demand adj.  = base x (multiplier - 1)
 *   fee          = base x fee
 *   total        = base + demand adj. + fee
 *
 * Each line is one product of integers formed in 128 bits and rounded once,
 * half up, to the micro-dollar (synor_econ_muldiv); the total is the sum of
 * the printed lines. Within the SYNOR_ECON_MAX_* limits no product exceeds
 * 2^127 and no line exceeds 2^63 (docs/PRICING.md, "Limits"), and the
 * inputs are checked against them, so a result is exact or SYNOR_ERANGE. */
#include <math.h>
#include <string.h>

#include "econ/econ_internal.h"

__extension__ typedef __int128 i128;

void synor_price_request_init(synor_price_request *r)
{
    memset(r, 0, sizeof *r);
    r->seconds = 3600;
    r->site = "hyperscale";
    r->climate = "any";
    r->tariff = SYNOR_TARIFF_INDUSTRIAL;
    r->utilisation_bp = 10000;
    r->egress_provider = "aws";
    r->egress_scope = "internet";
    r->demand_bp = 10000;
    r->fee_bp = SYNOR_ECON_DEFAULT_FEE_BP;
}

/* round_half_up(num / den) of a non-negative 128-bit product. */
static int div_round(i128 num, i128 den, int64_t *out, const char *what)
{
    i128 q = (num + den / 2) / den;
    if (q > INT64_MAX)
        return synor__error(SYNOR_ERANGE, "%s exceeds the 64-bit range of micro-USD", what);
    *out = (int64_t)q;
    return 0;
}

int synor_econ_price(const synor_econ *e, const synor_price_request *r, synor_price_quote *out)
{
    if (!e || !r || !out || !r->profile || !r->region)
        return synor__error(SYNOR_EINVAL, "synor_econ_price: NULL argument");
    if (r->seconds < 1 || r->seconds > SYNOR_ECON_MAX_SECONDS)
        return synor__error(SYNOR_ERANGE, "price: a duration of %lld s (1 s to %lld h)",
                            (long long)r->seconds, SYNOR_ECON_MAX_SECONDS / 3600);
    if (r->utilisation_bp < 1 || r->utilisation_bp > 10000)
        return synor__error(SYNOR_ERANGE, "price: utilisation %u bp (1 to 10000)",
                            r->utilisation_bp);
    if (r->demand_bp < 5000 || r->demand_bp > 20000)
        return synor__error(SYNOR_ERANGE, "price: demand multiplier %u bp (5000 to 20000)",
                            r->demand_bp);
    if (r->fee_bp > 10000)
        return synor__error(SYNOR_ERANGE, "price: fee %u bp (0 to 10000)", r->fee_bp);
    if (r->network_milli_gb < 0 || r->network_milli_gb > SYNOR_ECON_MAX_MILLI_GB)
        return synor__error(SYNOR_ERANGE, "price: %lld milli-GB of data (0 to %lld)",
                            (long long)r->network_milli_gb, SYNOR_ECON_MAX_MILLI_GB);
    synor_price_quote q;
    memset(&q, 0, sizeof q);
    const synor_profile *p = synor_catalog_find(e->cat, r->profile);
    if (!p)
        return synor__error(SYNOR_ENOENT,
                            "price: no profile \"%s\" in the catalog (synor "
                            "profiles)",
                            r->profile);
    double w = p->caps.peak_watts;
    if (!(w > 0) || w * 1000 > (double)SYNOR_ECON_MAX_MILLIWATTS)
        return synor__error(SYNOR_ERANGE,
                            "price: profile %s has a power of %g W (above 0, at "
                            "most %lld W)",
                            p->id, w, SYNOR_ECON_MAX_MILLIWATTS / 1000);
    q.milliwatts = llround(w * 1000);
    if (!synor_econ_file_of(e, SYNOR_ECON_REGIONS) ||
        !synor_econ_file_of(e, SYNOR_ECON_ELECTRICITY) || !synor_econ_file_of(e, SYNOR_ECON_PUE) ||
        !synor_econ_file_of(e, SYNOR_ECON_HARDWARE))
        return SYNOR_ENOENT; /* message set */
    if (!(q.region = synor_econ_region_find(e, r->region)))
        return synor__error(SYNOR_ENOENT,
                            "price: unknown region \"%s\" (not an id or cloud "
                            "region of %s)",
                            r->region, e->set->files[SYNOR_ECON_REGIONS].name);
    if (!(q.elec = synor_econ_elec_find(e, q.region->id)))
        return synor__error(SYNOR_ENOENT, "price: no electricity price for region %s in %s",
                            q.region->id, e->set->files[SYNOR_ECON_ELECTRICITY].name);
    q.price_per_kwh =
        r->tariff == SYNOR_TARIFF_COMMERCIAL ? q.elec->commercial : q.elec->industrial;
    if (q.price_per_kwh < 0)
        return synor__error(SYNOR_ENOENT,
                            "price: region %s has no %s tariff in %s (try the %s "
                            "one)",
                            q.region->id,
                            r->tariff == SYNOR_TARIFF_COMMERCIAL ? "commercial" : "industrial",
                            e->set->files[SYNOR_ECON_ELECTRICITY].name,
                            r->tariff == SYNOR_TARIFF_COMMERCIAL ? "industrial" : "commercial");
    if (!(q.pue = synor_econ_pue_find(e, r->site ? r->site : "hyperscale", r->climate)))
        return synor__error(SYNOR_ENOENT, "price: no PUE for %s sites (climate %s or any) in %s",
                            r->site ? r->site : "hyperscale", r->climate ? r->climate : "any",
                            e->set->files[SYNOR_ECON_PUE].name);
    if (!(q.hw = synor_econ_hardware_find(e, p->id)))
        return synor__error(SYNOR_ENOENT, "price: no hardware price for %s in %s", p->id,
                            e->set->files[SYNOR_ECON_HARDWARE].name);

    const i128 s = r->seconds;
    /* energy: mW x s x PUE(milli) x uUSD/kWh / (1000 mW/W x 1000 W/kW x
     * 3600 s/h x 1000): at most 1e8 x 3.6e9 x 5e3 x 1e15 = 1.8e36 < 2^127 */
    i128 num = (i128)q.milliwatts * s * q.pue->pue_milli;
    int rc = div_round(num * q.price_per_kwh, (i128)3600 * 1000000000, &q.energy, "energy");
    if (!rc) /* Wh drawn, for display: mW x s x PUE / (1000 x 3600 x 1000) */
        rc = div_round(num, (i128)3600 * 1000000, &q.energy_mwh, "energy");
    /* depreciation: list x s x 10000 / (years x 8760 h x 3600 s x util bp):
     * at most 1e15 x 3.6e9 x 1e4 = 3.6e28 */
    if (!rc)
        rc = div_round((i128)q.hw->list_price * s * 10000,
                       (i128)q.hw->service_life_years * 8760 * 3600 * r->utilisation_bp,
                       &q.depreciation, "depreciation");
    if (!rc && r->network_milli_gb > 0) {
        q.egress = synor_econ_egress_find(e, r->egress_provider, r->egress_scope);
        if (!q.egress)
            return synor__error(SYNOR_ENOENT, "price: no %s egress price for %s (network.json)",
                                r->egress_scope ? r->egress_scope : "(null)",
                                r->egress_provider ? r->egress_provider : "(null)");
        rc = div_round((i128)r->network_milli_gb * q.egress->first_gb_tier, 1000, &q.network,
                       "network");
    }
    if (rc)
        return rc;
    i128 base = (i128)q.energy + q.depreciation + q.network;
    if (base > INT64_MAX / 4) /* keeps base x 2 + fee inside int64 */
        return synor__error(SYNOR_ERANGE, "price: a base cost above %lld micro-USD",
                            (long long)(INT64_MAX / 4));
    q.base = (int64_t)base;
    q.demand_bp = r->demand_bp;
    q.fee_bp = r->fee_bp;
    /* base x (m - 1), rounded half away from zero (it may be negative) */
    i128 adj = (i128)q.base * ((int32_t)r->demand_bp - 10000);
    q.demand_adjustment = (int64_t)(adj >= 0 ? (adj + 5000) / 10000 : -((-adj + 5000) / 10000));
    q.fee = (int64_t)(((i128)q.base * r->fee_bp + 5000) / 10000);
    q.total = q.base + q.demand_adjustment + q.fee;
    *out = q;
    return 0;
}

/* ------------------------------------------------------------------ demand */

int synor_econ_demand_get(const synor_market *m, const char *resource, synor_econ_demand *out)
{
    enum { LEVELS = 64 };
    if (!m || !resource || !out)
        return synor__error(SYNOR_EINVAL, "synor_econ_demand_get: NULL argument");
    synor_econ_demand dm = {.multiplier_bp = 10000};
    uint32_t idx;
    if (synor_market_find_resource(m, resource, &idx) != 0) {
        *out = dm; /* no book: 1x, and the caller says so */
        return 0;
    }
    dm.has_book = 1;
    synor_level bids[LEVELS], asks[LEVELS];
    size_t nb = 0, na = 0;
    int rc = synor_market_depth(m, idx, bids, &nb, asks, &na, LEVELS);
    if (rc)
        return rc;
    int64_t lo = 0, hi = INT64_MAX;
    if (nb && na) {
        /* the mid, and the band of +-10% around it */
        dm.mid = (int64_t)(((i128)bids[0].price + asks[0].price) / 2);
        lo = dm.mid - (int64_t)((i128)dm.mid * SYNOR_ECON_DEMAND_BAND_BP / 10000);
        hi = dm.mid + (int64_t)((i128)dm.mid * SYNOR_ECON_DEMAND_BAND_BP / 10000);
    }
    for (size_t i = 0; i < nb; i++)
        if (bids[i].price >= lo)
            dm.bid_qty += bids[i].qty;
    for (size_t i = 0; i < na; i++)
        if (asks[i].price <= hi)
            dm.ask_qty += asks[i].qty;
    if (dm.bid_qty == 0 && dm.ask_qty == 0)
        dm.multiplier_bp = 10000;
    else if (dm.ask_qty == 0)
        dm.multiplier_bp = 20000;
    else {
        i128 r = ((i128)dm.bid_qty * 10000 + dm.ask_qty / 2) / dm.ask_qty;
        dm.multiplier_bp = r < 5000 ? 5000 : r > 20000 ? 20000 : (uint32_t)r;
    }
    *out = dm;
    return 0;
}
