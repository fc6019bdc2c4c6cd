/* fixed.c - decimal strings to exact fixed-point integers and back: the
 * policy's rates ("0.00000001" USD), the CLI's quantities and amounts. No
 * floating point: a rate of 10^-8 USD must be exactly 10,000 pico-USD. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "rewards/rewards_internal.h"

int synor_rewards_parse_fixed(const char *s, unsigned scale, int64_t max, const char *what,
                              int64_t *out)
{
    if (!what)
        what = "value";
    if (!s || scale > 18 || max < 0)
        return synor__error(SYNOR_EINVAL, "%s: no value", what);
    const char *p = s;
    synor__rw128 v = 0;
    int digits = 0, frac = -1; /* frac: digits after the point, -1 before it */
    for (; *p; p++) {
        if (*p == '.' && frac < 0) {
            frac = 0;
            continue;
        }
        if (*p < '0' || *p > '9')
            return synor__error(SYNOR_EINVAL,
                                "%s: '%s' is not a decimal number (digits and one '.', no sign "
                                "or exponent)",
                                what, s);
        if (frac >= 0 && (unsigned)++frac > scale)
            return synor__error(SYNOR_EINVAL, "%s: '%s' has more than %u decimals", what, s, scale);
        digits++;
        v = v * 10 + (*p - '0');
        if (v > (synor__rw128)INT64_MAX * 10) /* way beyond any max; stop growing */
            return synor__error(SYNOR_ERANGE, "%s: '%s' is out of range", what, s);
    }
    if (!digits)
        return synor__error(SYNOR_EINVAL, "%s: '%s' is not a decimal number", what, s);
    for (int k = frac < 0 ? 0 : frac; (unsigned)k < scale; k++) {
        v *= 10;
        if (v > (synor__rw128)max)
            break;
    }
    if (v > (synor__rw128)max) {
        char lim[48];
        return synor__error(SYNOR_ERANGE, "%s: '%s' is above the limit %s", what, s,
                            synor_rewards_format_fixed(max, scale, lim, sizeof lim));
    }
    *out = (int64_t)v;
    return 0;
}

char *synor_rewards_format_fixed(int64_t v, unsigned scale, char *buf, size_t n)
{
    if (!buf || !n)
        return buf;
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v, p = 1;
    if (scale > 18)
        scale = 18;
    for (unsigned k = 0; k < scale; k++)
        p *= 10;
    if (scale)
        snprintf(buf, n, "%s%" PRIu64 ".%0*" PRIu64, v < 0 ? "-" : "", mag / p, (int)scale,
                 mag % p);
    else
        snprintf(buf, n, "%s%" PRIu64, v < 0 ? "-" : "", mag);
    return buf;
}
