/* share.c - a fabric's devices that share the host's cores (an OpenCL CPU
 * device such as PoCL): the factors, the placement scale and the
 * rebalance period the simulator models them with (synor/fabric.h;
 * docs/PLANNING.md "Devices that share the host's cores"). */
#include <math.h>

#include "common/common.h"
#include "fabric/fabric_internal.h"

/* Device i, or NULL with the error set naming the setter. */
static synor_fabric_device *dev_of(synor_fabric *f, size_t i, const char *fn)
{
    synor_fabric_device *d = synor__fabric_device_mut(f, i);
    if (!d)
        (void)synor__error(SYNOR_EINVAL, "%s: no device %zu (the fabric has %zu)", fn, i,
                           f ? synor_fabric_device_count(f) : 0);
    return d;
}

int synor_fabric_set_host_sharing(synor_fabric *f, size_t i, double cpu_slowdown,
                                  double slowdown)
{
    synor_fabric_device *d = dev_of(f, i, "synor_fabric_set_host_sharing");
    if (!d)
        return SYNOR_EINVAL;
    int off = cpu_slowdown == 0 && slowdown == 0;
    if (!off && (!isfinite(cpu_slowdown) || !isfinite(slowdown) || cpu_slowdown < 1 ||
                 slowdown < 1))
        return synor__error(SYNOR_EINVAL, "synor_fabric_set_host_sharing: device \"%s\": "
                                          "slowdowns %g and %g (each must be >= 1, or both 0)",
                            d->name, cpu_slowdown, slowdown);
    if (!off && !(d->share_cpu_slowdown > 0))
        d->share_rebalance_s = SYNOR_FABRIC_SHARE_REBALANCE_S;
    d->share_cpu_slowdown = cpu_slowdown;
    d->share_slowdown = slowdown;
    if (off) {
        d->share_place_scale = 0;
        d->share_rebalance_s = 0;
    }
    return 0;
}

/* Device i if it shares the host's cores, else NULL with the error set. */
static synor_fabric_device *shared_of(synor_fabric *f, size_t i, const char *fn)
{
    synor_fabric_device *d = dev_of(f, i, fn);
    if (d && !(d->share_cpu_slowdown > 0)) {
        (void)synor__error(SYNOR_EINVAL, "%s: device \"%s\" does not share the host's cores", fn,
                           d->name);
        return NULL;
    }
    return d;
}

int synor_fabric_set_share_place_scale(synor_fabric *f, size_t i, double scale)
{
    synor_fabric_device *d = shared_of(f, i, "synor_fabric_set_share_place_scale");
    if (!d)
        return SYNOR_EINVAL;
    if (!(scale >= 0 && scale <= 1000))
        return synor__error(SYNOR_EINVAL, "synor_fabric_set_share_place_scale: device \"%s\": "
                                          "scale %g (must be in (0, 1000], or 0)",
                            d->name, scale);
    d->share_place_scale = scale;
    return 0;
}

int synor_fabric_set_share_rebalance(synor_fabric *f, size_t i, double period_s)
{
    synor_fabric_device *d = shared_of(f, i, "synor_fabric_set_share_rebalance");
    if (!d)
        return SYNOR_EINVAL;
    if (!(period_s >= 0 && period_s <= 3600))
        return synor__error(SYNOR_EINVAL, "synor_fabric_set_share_rebalance: device \"%s\": "
                                          "period %g s (must be in [0, 3600])",
                            d->name, period_s);
    d->share_rebalance_s = period_s;
    return 0;
}
