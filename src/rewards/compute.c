/* compute.c - the reward of one contribution: base components from the
 * policy's rates, times the reputation multiplier, plus the uptime bonus,
 * in integer ticks with 128-bit intermediates. The rounding (always down)
 * and the limits are stated in synor/rewards.h and docs/REWARDS.md. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "rewards/rewards_internal.h"

int synor__rewards_valid_name(const char *s, size_t max, int may_be_empty)
{
    if (!s)
        return may_be_empty;
    size_t n = strlen(s);
    if (n >= max || (!n && !may_be_empty))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~')
            return 0;
    return 1;
}

static int qty_ok(const char *what, int64_t v)
{
    if (v < 0 || v > SYNOR_REWARDS_MAX_QTY_MILLI) {
        char a[48], b[48];
        return synor__error(
            v < 0 ? SYNOR_EINVAL : SYNOR_ERANGE, "%s: %s is outside [0, %s]", what,
            synor_rewards_format_fixed(v, 3, a, sizeof a),
            synor_rewards_format_fixed(SYNOR_REWARDS_MAX_QTY_MILLI, 3, b, sizeof b));
    }
    return 0;
}

/* floor(rate x qty / 10^9): pico-USD x thousandths -> ticks. Both factors
 * are within the limits, so the product is below 10^33 < 2^127. */
static synor__rw128 component(int64_t rate_pusd, int64_t qty_milli)
{
    return (synor__rw128)rate_pusd * qty_milli / 1000000000;
}

/* The best peak of the device over every data type, dense or sparse. */
static double best_peak(const synor_caps *c)
{
    double best = 0;
    for (int t = 0; t < SYNOR_DTYPE_COUNT; t++) {
        double v = synor_caps_peak(c, (synor_dtype)t, 1);
        if (v > best)
            best = v;
    }
    return best;
}

int synor_rewards_compute(const synor_rewards_policy *p, const synor_catalog *cat,
                          const synor_contribution *c, synor_reward *out)
{
    if (!p || !cat || !c || !out)
        return synor__error(SYNOR_EINVAL, "synor_rewards_compute: NULL argument");
    if (!synor__rewards_valid_name(c->id, 64, 0))
        return synor__error(SYNOR_EINVAL,
                            "id: '%s' is not 1..63 printable characters without spaces",
                            c->id ? c->id : "");
    if (!synor__rewards_valid_name(c->contributor, 64, 0))
        return synor__error(SYNOR_EINVAL,
                            "contributor: '%s' is not 1..63 printable characters without spaces",
                            c->contributor ? c->contributor : "");
    if (!synor__rewards_valid_name(c->period, 32, 1))
        return synor__error(SYNOR_EINVAL,
                            "period: '%s' is not 0..31 printable characters without spaces",
                            c->period);
    const synor_profile *prof = c->device ? synor_catalog_find(cat, c->device) : NULL;
    if (!prof)
        return synor__error(SYNOR_ENOENT, "device: no profile '%s' in the catalog (synor profiles)",
                            c->device ? c->device : "");
    if (strlen(prof->id) >= 64)
        return synor__error(SYNOR_EINVAL, "device: profile id '%s' is too long for a ledger",
                            prof->id);
    int rc;
    if ((rc = qty_ok("work", c->work_milli)) || (rc = qty_ok("gb", c->gb_milli)) ||
        (rc = qty_ok("available hours", c->hours_milli)))
        return rc;
    if (c->uptime_bp > 10000)
        return synor__error(SYNOR_EINVAL, "uptime: %u basis points is above 100%%", c->uptime_bp);
    if (c->reputation > 100)
        return synor__error(SYNOR_EINVAL, "reputation: %u is outside 0..100", c->reputation);
    synor_work_unit unit =
        prof->type.kind == SYNOR_KIND_CPU ? SYNOR_WORK_GFLOP_S : SYNOR_WORK_TFLOP_S;
    const char *uname = unit == SYNOR_WORK_GFLOP_S ? "GFLOP-s" : "TFLOP-s";
    if (c->hours_milli > 0 && c->work_milli > 0) {
        /* plausibility only (not money): the device cannot have done more
         * than its best peak for every second it was available */
        double peak_units = best_peak(&prof->caps) / (unit == SYNOR_WORK_GFLOP_S ? 1e9 : 1e12);
        double most = peak_units * 3.6 * (double)c->hours_milli; /* x 3600 s / 1000 */
        if ((double)c->work_milli / 1000.0 > most * (1 + 1e-9)) {
            char w[48], h[48];
            return synor__error(
                SYNOR_ERANGE,
                "work: %s %s is more than a %s can do in %s hours at its peak "
                "(%.6g %s)",
                synor_rewards_format_fixed(c->work_milli, 3, w, sizeof w), uname, prof->id,
                synor_rewards_format_fixed(c->hours_milli, 3, h, sizeof h), most, uname);
        }
    }
    synor_reward r;
    memset(&r, 0, sizeof r);
    r.unit = unit;
    synor__rw128 comp =
        component(unit == SYNOR_WORK_GFLOP_S ? p->rate_gflop_s : p->rate_tflop_s, c->work_milli);
    synor__rw128 xfer = component(p->rate_gb, c->gb_milli);
    synor__rw128 avail = component(p->rate_hour, c->hours_milli);
    synor__rw128 base = comp + xfer + avail; /* each below 10^24: no overflow */
    r.reputation_bp = synor_rewards_reputation_bp(p, c->reputation);
    r.uptime_bonus_bp = synor_rewards_uptime_bonus_bp(p, c->uptime_bp);
    synor__rw128 after_rep = base * r.reputation_bp / 10000;
    synor__rw128 amount = base * r.reputation_bp * (10000 + r.uptime_bonus_bp) / 100000000;
    if (base > SYNOR_REWARDS_MAX_AMOUNT || amount > SYNOR_REWARDS_MAX_AMOUNT) {
        char lim[48];
        return synor__error(
            SYNOR_ERANGE, "contribution %s: the reward is above the limit of %s USD per entry",
            c->id, synor_rewards_format_fixed(SYNOR_REWARDS_MAX_AMOUNT, 6, lim, sizeof lim));
    }
    r.compute = (int64_t)comp; /* each at most base */
    r.transfer = (int64_t)xfer;
    r.availability = (int64_t)avail;
    r.base = (int64_t)base;
    r.reputation_adj = (int64_t)(after_rep - base);
    r.uptime_adj = (int64_t)(amount - after_rep);
    r.amount = (int64_t)amount;
    *out = r;
    return 0;
}
