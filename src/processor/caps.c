/* caps.c - small derived quantities of a capability set. */
#include "synor/caps.h"

double synor_caps_pcie_bandwidth(const synor_caps *c)
{
    if (c->pcie_gen <= 0 || c->pcie_lanes <= 0)
        return 0;
    /* PCIe 3.0 moves 8 GT/s with 128b/130b coding: 0.985 GB/s per lane per
     * direction; each later generation doubles the rate (PCI-SIG specs). Gens
     * 1 and 2 use 8b/10b: 0.25 and 0.5 GB/s per lane. */
    double per_lane;
    switch (c->pcie_gen) {
    case 1: per_lane = 0.25e9; break;
    case 2: per_lane = 0.5e9; break;
    default: {
        per_lane = 0.985e9;
        for (int g = 3; g < c->pcie_gen; g++)
            per_lane *= 2;
    }
    }
    return per_lane * c->pcie_lanes;
}

double synor_caps_peak(const synor_caps *c, synor_dtype t, int sparse)
{
    if ((unsigned)t >= SYNOR_DTYPE_COUNT)
        return 0;
    const synor_throughput *p = &c->peak[t];
    return sparse && p->sparse > p->dense ? p->sparse : p->dense;
}
