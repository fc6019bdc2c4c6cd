/* lookup.c - finding records in the loaded economics data: regions by id or
 * cloud region, prices, intensities, PUE, hardware, hourly profiles,
 * egress and measured latency. Linear scans: the files hold tens to a few
 * hundred records, and a command makes a handful of lookups. */
#include <string.h>

#include "econ/econ_internal.h"

const synor_econ_region *synor__econ_region_id(const synor__econ_set *s, const char *id)
{
    for (size_t i = 0; i < s->n_regions; i++)
        if (strcmp(s->regions[i].id, id) == 0)
            return &s->regions[i];
    return NULL;
}

size_t synor_econ_region_count(const synor_econ *e)
{
    return e ? e->set->n_regions : 0;
}

const synor_econ_region *synor_econ_region_at(const synor_econ *e, size_t i)
{
    return e && i < e->set->n_regions ? &e->set->regions[i] : NULL;
}

const synor_econ_region *synor_econ_region_find(const synor_econ *e, const char *name)
{
    if (!e || !name)
        return NULL;
    const synor_econ_region *g = synor__econ_region_id(e->set, name);
    for (size_t i = 0; !g && i < e->set->n_regions; i++)
        for (size_t c = 0; c < e->set->regions[i].n_cloud; c++)
            if (strcmp(e->set->regions[i].cloud[c], name) == 0)
                return &e->set->regions[i];
    return g;
}

const synor_econ_elec *synor_econ_elec_find(const synor_econ *e, const char *region)
{
    for (size_t i = 0; e && region && i < e->set->n_elec; i++)
        if (strcmp(e->set->elec[i].region, region) == 0)
            return &e->set->elec[i];
    return NULL;
}

const synor_econ_carbon *synor_econ_carbon_find(const synor_econ *e, const char *region)
{
    for (size_t i = 0; e && region && i < e->set->n_carbon; i++)
        if (strcmp(e->set->carbon[i].region, region) == 0)
            return &e->set->carbon[i];
    return NULL;
}

const synor_econ_pue *synor_econ_pue_find(const synor_econ *e, const char *site,
                                          const char *climate)
{
    const synor_econ_pue *any = NULL;
    for (size_t i = 0; e && site && i < e->set->n_pue; i++) {
        const synor_econ_pue *p = &e->set->pue[i];
        if (strcmp(p->site, site) != 0)
            continue;
        if (climate && strcmp(p->climate, climate) == 0)
            return p;
        if (strcmp(p->climate, "any") == 0)
            any = p;
    }
    return any;
}

const synor_econ_hardware *synor_econ_hardware_find(const synor_econ *e, const char *profile)
{
    for (size_t i = 0; e && profile && i < e->set->n_hw; i++)
        if (strcmp(e->set->hw[i].profile, profile) == 0)
            return &e->set->hw[i];
    return NULL;
}

const synor_econ_hourly *synor_econ_hourly_find(const synor_econ *e, const char *region, int carbon)
{
    if (!e || !region)
        return NULL;
    const synor_econ_hourly *h = carbon ? e->set->carbon_hourly : e->set->elec_hourly;
    size_t n = carbon ? e->set->n_carbon_hourly : e->set->n_elec_hourly;
    for (size_t i = 0; i < n; i++)
        if (strcmp(h[i].region, region) == 0)
            return &h[i];
    return NULL;
}

const synor_econ_egress *synor_econ_egress_find(const synor_econ *e, const char *provider,
                                                const char *scope)
{
    for (size_t i = 0; e && provider && scope && i < e->set->n_egress; i++)
        if (!strcmp(e->set->egress[i].provider, provider) &&
            !strcmp(e->set->egress[i].scope, scope))
            return &e->set->egress[i];
    return NULL;
}

/* Whether name (a region id or provider:cloud-region) names region g. */
static int names(const synor_econ_region *g, const char *name)
{
    if (strcmp(g->id, name) == 0)
        return 1;
    for (size_t c = 0; c < g->n_cloud; c++)
        if (strcmp(g->cloud[c], name) == 0)
            return 1;
    return 0;
}

const synor_econ_latency *synor_econ_latency_find(const synor_econ *e, const char *region_a,
                                                  const char *region_b)
{
    if (!e || !region_a || !region_b)
        return NULL;
    const synor_econ_region *a = synor_econ_region_find(e, region_a);
    const synor_econ_region *b = synor_econ_region_find(e, region_b);
    if (!a || !b)
        return NULL;
    const synor_econ_latency *best = NULL;
    for (size_t i = 0; i < e->set->n_lat; i++) {
        const synor_econ_latency *l = &e->set->lat[i];
        if (((names(a, l->from) && names(b, l->to)) || (names(b, l->from) && names(a, l->to))) &&
            (!best || l->rtt_ms < best->rtt_ms))
            best = l;
    }
    return best;
}

size_t synor_econ_instance_count(const synor_econ *e)
{
    return e ? e->set->n_inst : 0;
}

const synor_econ_instance *synor_econ_instance_at(const synor_econ *e, size_t i)
{
    return e && i < e->set->n_inst ? &e->set->inst[i] : NULL;
}

const synor_econ_source *synor_econ_source_find(const synor_econ_file *f, const char *key)
{
    for (size_t i = 0; f && key && i < f->n_sources; i++)
        if (strcmp(f->sources[i].key, key) == 0)
            return &f->sources[i];
    return NULL;
}
