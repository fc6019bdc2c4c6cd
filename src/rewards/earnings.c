/* earnings.c - what a device would earn in a month on the spot market:
 * the volume-weighted mean price of the 24 h before the market's last
 * command over the matching books (never a constant), times hours a day,
 * 30.44 days and the utilisation, less the protocol fee and, when given,
 * the electricity the device draws. Integer ticks throughout; every
 * division rounds down (the formulas are in synor/rewards.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "rewards/rewards_internal.h"

void synor_earnings_options_init(synor_earnings_options *o)
{
    memset(o, 0, sizeof *o);
    o->electricity_pusd_kwh = -1;
    o->pue_milli = 1000;
}

#define MAX_MW INT64_C(1000000000)             /* 1 MW: a profile's power beyond is refused */
#define MAX_KWH_PUSD INT64_C(1000000000000000) /* 1,000 USD per kWh */

static int milliwatts(const synor_profile *prof, double w, const char *what, int64_t *out)
{
    if (!isfinite(w) || w < 0 || w * 1000 > (double)MAX_MW)
        return synor__error(SYNOR_ERANGE, "%s: %s power %g W is outside 0..1 MW", prof->id, what,
                            w);
    *out = llround(w * 1000);
    return 0;
}

int synor_earnings_estimate(const synor_market *m, const synor_catalog *cat,
                            const synor_rewards_policy *p, const char *profile,
                            const synor_earnings_options *o, synor_earnings *out)
{
    if (!m || !cat || !p || !profile || !o || !out)
        return synor__error(SYNOR_EINVAL, "synor_earnings_estimate: NULL argument");
    const synor_profile *prof = synor_catalog_find(cat, profile);
    if (!prof)
        return synor__error(SYNOR_ENOENT, "device: no profile '%s' in the catalog (synor profiles)",
                            profile);
    if (o->hours_per_day_milli <= 0 || o->hours_per_day_milli > 24000)
        return synor__error(SYNOR_EINVAL, "hours per day: %lld thousandths is outside (0, 24]",
                            (long long)o->hours_per_day_milli);
    if (o->pue_milli < 1000 || o->pue_milli > 3000)
        return synor__error(SYNOR_EINVAL, "pue: %u thousandths is outside [1, 3]", o->pue_milli);
    if (o->electricity_pusd_kwh > MAX_KWH_PUSD)
        return synor__error(SYNOR_ERANGE, "electricity: above 1000 USD per kWh");
    synor_earnings r;
    memset(&r, 0, sizeof r);
    const char *kind = synor_kind_name(prof->type.kind);
    char prefix[96];
    int pn = snprintf(prefix, sizeof prefix, "%s/%s/", kind, prof->id);
    if (pn < 0 || (size_t)pn >= sizeof prefix - 1)
        return synor__error(SYNOR_EINVAL, "device: profile id '%s' is too long", prof->id);
    if (o->region && snprintf(r.resource, sizeof r.resource, "%s%s", prefix, o->region) >=
                         (int)sizeof r.resource)
        return synor__error(SYNOR_EINVAL, "region: '%s' is too long", o->region);
    if (!o->region)
        snprintf(r.resource, sizeof r.resource, "%s*", prefix);
    synor__rw128 notional = 0, volume = 0;
    for (uint32_t i = 0;; i++) {
        const char *key = synor_market_resource_key(m, i);
        if (!key)
            break;
        if (o->region ? strcmp(key, r.resource) != 0 : strncmp(key, prefix, (size_t)pn) != 0)
            continue;
        synor_market_prices px;
        if (synor_market_prices_get(m, i, &px) || px.volume_24h <= 0)
            continue;
        notional += (synor__rw128)px.vwap_24h * px.volume_24h;
        volume += px.volume_24h;
        r.n_resources++;
        if (px.last_time > r.last_time)
            r.last_time = px.last_time;
    }
    if (volume == 0)
        return synor__error(SYNOR_ENOENT,
                            "no recent trades of %s in %s (the 24 h before the market's last "
                            "command): no price to estimate from",
                            r.resource, o->market_name ? o->market_name : "the market");
    /* the 24 h VWAP over the books, rounded half up as each book's is */
    synor__rw128 price = (notional + volume / 2) / volume;
    if (price > INT64_MAX || volume > INT64_MAX)
        return synor__error(SYNOR_ERANGE, "%s: price or volume out of range", r.resource);
    r.price = (int64_t)price;
    r.volume_24h = (int64_t)volume;
    r.fee_bp = synor_rewards_fee_bp(p);
    int rc;
    if ((rc = milliwatts(prof, prof->caps.idle_watts, "idle", &r.idle_mw)) ||
        (rc = milliwatts(prof, prof->caps.peak_watts, "peak", &r.peak_mw)))
        return rc;
    if (r.peak_mw < r.idle_mw)
        r.peak_mw = r.idle_mw;
    static const uint32_t util[SYNOR_EARNINGS_LEVELS] = {5000, 7000, 10000};
    const synor__rw128 H = o->hours_per_day_milli;
    for (int k = 0; k < SYNOR_EARNINGS_LEVELS; k++) {
        synor_earnings_level *lv = &r.level[k];
        lv->utilisation_bp = util[k];
        /* price x hours/day x 30.44 days x u: ticks x (H/1000) x (3044/100) x
         * (u/10^4) */
        synor__rw128 gross = price * H * 3044 * util[k] / 1000000000;
        synor__rw128 fee = gross * r.fee_bp / 10000;
        synor__rw128 elec = 0;
        if (o->electricity_pusd_kwh >= 0) {
            /* mW x (H/1000) h x 30.44 = mWh a month; / 10^6 = kWh; x PUE;
             * x pico-USD per kWh / 10^6 = ticks */
            synor__rw128 mw = r.idle_mw + (synor__rw128)(r.peak_mw - r.idle_mw) * util[k] / 10000;
            elec = (synor__rw128)o->electricity_pusd_kwh * mw * H * 3044 * o->pue_milli /
                   ((synor__rw128)1000 * 100 * 1000000 * 1000 * 1000000);
        }
        if (gross > SYNOR_REWARDS_MAX_AMOUNT || elec > SYNOR_REWARDS_MAX_AMOUNT)
            return synor__error(SYNOR_ERANGE, "%s: a month's earnings above 10^9 USD", r.resource);
        lv->gross = (int64_t)gross;
        lv->fee = (int64_t)fee;
        lv->electricity = (int64_t)elec;
        lv->net = lv->gross - lv->fee - lv->electricity;
    }
    *out = r;
    return 0;
}
