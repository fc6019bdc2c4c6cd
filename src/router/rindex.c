/* rindex.c - the router's immutable copy of the registry and its index
 * (classes, leaves, sorted reputations; router_internal.h).
 *
 * Built in O(n log n): one registry query (its read lock held only while
 * it copies the entries), one price per device from the cost provider,
 * names interned through hash indexes, and one sort of the device indices
 * by (class, schedule, price, online first, reputation descending, index).
 * Leaves are then the runs of that order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/index.h"
#include "router/router_internal.h"

/* A growing array of owned strings with a name index over it. */
typedef struct strset {
    char **s;
    size_t n, cap;
    synor__nameindex ix;
} strset;

static const char *strset_name(const void *owner, uint32_t i)
{
    return ((const strset *)owner)->s[i];
}

static long strset_intern(strset *t, const char *name)
{
    long at = synor__nameindex_get(&t->ix, name);
    if (at >= 0)
        return at;
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 16;
        char **ns = synor__realloc(t->s, nc * sizeof *ns);
        if (!ns)
            return -1;
        t->s = ns;
        t->cap = nc;
    }
    if (!(t->s[t->n] = synor__strdup(name)))
        return -1;
    if (synor__nameindex_put(&t->ix, (uint32_t)t->n)) {
        synor__free(t->s[t->n]);
        return -1;
    }
    return (long)t->n++;
}

static void strset_free_names(strset *t)
{
    for (size_t i = 0; i < t->n; i++)
        synor__free(t->s[i]);
    synor__free(t->s);
    synor__nameindex_free(&t->ix);
}

void synor__rsnap_free(synor__rsnap *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        synor_device_unref(s->devs[i].dev);
    for (size_t i = 0; i < s->n_owners; i++)
        synor__free(s->owners[i]);
    for (size_t i = 0; i < s->n_regions; i++)
        synor__free(s->regions[i].name);
    for (size_t i = 0; i < s->n_sources; i++)
        synor__free(s->sources[i]);
    synor__free(s->owners);
    synor__free(s->regions);
    synor__free(s->sources);
    synor__free(s->sigs);
    synor__free(s->classes);
    synor__free(s->leaves);
    synor__free(s->leaf_devs);
    synor__free(s->leaf_reps);
    synor__free(s->leaf_utils);
    synor__free(s->ids);
    synor__free(s->devs);
    synor__free(s);
}

/* A schedule with every unused byte zero, so equal schedules compare equal. */
static synor_availability canonical(const synor_availability *a)
{
    synor_availability c;
    memset(&c, 0, sizeof c);
    c.kind = a->kind;
    if (a->kind == SYNOR_AVAIL_UTC_WINDOWS) {
        c.n_windows = a->n_windows <= SYNOR_AVAIL_MAX_WINDOWS ? a->n_windows : 0;
        for (unsigned i = 0; i < c.n_windows; i++)
            c.windows[i] = a->windows[i];
    }
    if (a->kind == SYNOR_AVAIL_CHARGING_ONLY)
        c.min_battery_pct = a->min_battery_pct;
    return c;
}

static uint64_t bytes_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* The sort key of a device: what makes its leaf, then its place in it. */
typedef struct leaf_key {
    uint32_t cls, sig;
    int64_t price;   /* -1: no price */
    int32_t offline; /* 0 online first */
    int32_t neg_rep; /* reputation descending */
    double util;     /* then utilization ascending */
    uint32_t idx;
} leaf_key;

static int by_leaf(const void *pa, const void *pb)
{
    const leaf_key *a = pa, *b = pb;
    if (a->cls != b->cls)
        return a->cls < b->cls ? -1 : 1;
    if (a->sig != b->sig)
        return a->sig < b->sig ? -1 : 1;
    if (a->price != b->price)
        return a->price < b->price ? -1 : 1;
    if (a->offline != b->offline)
        return a->offline < b->offline ? -1 : 1;
    if (a->neg_rep != b->neg_rep)
        return a->neg_rep < b->neg_rep ? -1 : 1;
    if (a->util != b->util)
        return a->util < b->util ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Groups the devices into leaves (s->devs[].cls and .sig set). */
static int build_leaves(synor__rsnap *s)
{
    leaf_key *keys = synor__malloc((s->n + 1) * sizeof *keys);
    uint32_t *order = synor__malloc((s->n + 1) * sizeof *order);
    s->leaf_devs = synor__malloc((s->n + 1) * sizeof *s->leaf_devs);
    s->leaf_reps = synor__malloc((s->n + 1) * sizeof *s->leaf_reps);
    s->leaf_utils = synor__malloc((s->n + 1) * sizeof *s->leaf_utils);
    s->leaves = synor__calloc(s->n + 1, sizeof *s->leaves);
    if (!keys || !order || !s->leaf_devs || !s->leaf_reps || !s->leaf_utils || !s->leaves) {
        synor__free(keys);
        synor__free(order);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < s->n; i++) {
        const synor__rdev *d = &s->devs[i];
        keys[i].cls = d->cls;
        keys[i].sig = d->sig;
        keys[i].price = d->priced ? d->price : -1;
        keys[i].offline = d->status != SYNOR_STATUS_ONLINE;
        keys[i].neg_rep = -d->reputation;
        keys[i].util = d->utilization;
        keys[i].idx = (uint32_t)i;
    }
    qsort(keys, s->n, sizeof *keys, by_leaf);
    for (size_t i = 0; i < s->n; i++)
        order[i] = keys[i].idx;
    synor__free(keys);
    size_t used = 0;
    for (size_t i = 0; i < s->n;) {
        const synor__rdev *d0 = &s->devs[order[i]];
        size_t j = i;
        while (j < s->n) {
            const synor__rdev *d = &s->devs[order[j]];
            if (d->cls != d0->cls || d->sig != d0->sig || d->priced != d0->priced ||
                d->price != d0->price)
                break;
            j++;
        }
        synor__rleaf *l = &s->leaves[s->n_leaves];
        l->cls = d0->cls;
        l->sig = d0->sig;
        l->priced = d0->priced;
        l->price = d0->price;
        l->dev = s->leaf_devs + used;
        l->rep = s->leaf_reps + used;
        l->min_util = s->leaf_utils + used;
        for (size_t k = i; k < j; k++) {
            synor__rdev *d = &s->devs[order[k]];
            d->leaf = (uint32_t)s->n_leaves;
            if (d->status != SYNOR_STATUS_ONLINE) {
                l->n_bad_status++;
                continue;
            }
            size_t m = l->n_online++;
            l->dev[m] = order[k];
            l->rep[m] = d->reputation;
            l->min_util[m] =
                m && l->min_util[m - 1] < d->utilization ? l->min_util[m - 1] : d->utilization;
        }
        used += l->n_online;
        synor__rclass *c = &s->classes[l->cls];
        if (!c->n_leaves)
            c->first_leaf = (uint32_t)s->n_leaves;
        c->n_leaves++;
        s->n_leaves++;
        i = j;
    }
    synor__free(order);
    return 0;
}

static int fill(synor__rsnap *s, const synor_registry_entry *e, const synor_route_table *table,
                synor_route_price_fn fn, void *user)
{
    strset owners = {0}, regions = {0}, sources = {0}, classes = {0};
    synor__nameindex_init(&owners.ix, strset_name, &owners);
    synor__nameindex_init(&regions.ix, strset_name, &regions);
    synor__nameindex_init(&sources.ix, strset_name, &sources);
    synor__nameindex_init(&classes.ix, strset_name, &classes);
    synor__keyindex sig_ix = {0};
    size_t sig_cap = 0;
    int rc = 0;
    s->classes = synor__calloc(s->n + 1, sizeof *s->classes);
    if (!s->classes)
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < s->n && !rc; i++) {
        synor__rdev *d = &s->devs[i];
        memcpy(s->ids[i], e[i].id, sizeof s->ids[i]);
        d->dev = synor_device_ref(e[i].device);
        d->reputation = e[i].info.reputation;
        d->utilization = e[i].info.utilization;
        d->status = e[i].info.status;
        long o = strset_intern(&owners, e[i].info.owner);
        long r = strset_intern(&regions, e[i].info.region);
        const char *src = NULL;
        int64_t price = 0;
        int got = fn ? fn(user, &e[i], &price, &src) : 0;
        if (got < 0) {
            rc = got;
            break;
        }
        if (got && (price < 0 || price > SYNOR_ROUTE_PRICE_MAX)) {
            rc = synor__error(SYNOR_ERANGE,
                              "device %s: price %lld micro-USD per hour is outside 0..%lld",
                              e[i].id, (long long)price, (long long)SYNOR_ROUTE_PRICE_MAX);
            break;
        }
        long sv = got ? strset_intern(&sources, src ? src : "cost provider") : 0;
        /* the class: same profile (capabilities unchanged), same region */
        const char *prof = synor_device_profile_id(d->dev);
        char key[2 * SYNOR_REGISTRY_TEXT_MAX + 32];
        if (prof && synor_device_caps_origin(d->dev) == SYNOR_CAPS_FROM_PROFILE)
            snprintf(key, sizeof key, "%s\x01%s", prof, e[i].info.region);
        else
            snprintf(key, sizeof key, "\x02%zu", i);
        size_t n_before = classes.n;
        long c = strset_intern(&classes, key);
        /* a profile loaded twice with different figures (a user file
         * overriding the catalog between registrations): this device's
         * capabilities differ from its class's, so it is a class of its own */
        if (c >= 0 && classes.n == n_before &&
            memcmp(synor_device_caps(s->devs[s->classes[c].rep].dev), synor_device_caps(d->dev),
                   sizeof(synor_caps)) != 0) {
            snprintf(key, sizeof key, "\x02%zu", i);
            c = strset_intern(&classes, key);
        }
        synor_availability a = canonical(&e[i].info.availability);
        uint64_t h = bytes_hash(&a, sizeof a);
        long sg = synor__keyindex_get(&sig_ix, h);
        if (sg >= 0 && memcmp(&s->sigs[sg], &a, sizeof a) != 0) {
            sg = -1; /* a hash collision: look for it the slow way */
            for (size_t k = 0; k < s->n_sigs && sg < 0; k++)
                if (memcmp(&s->sigs[k], &a, sizeof a) == 0)
                    sg = (long)k;
        }
        if (sg < 0) {
            if (s->n_sigs == sig_cap) {
                size_t nc = sig_cap ? sig_cap * 2 : 8;
                synor_availability *ns = synor__realloc(s->sigs, nc * sizeof *ns);
                if (!ns) {
                    o = -1;
                } else {
                    s->sigs = ns;
                    sig_cap = nc;
                }
            }
            if (o >= 0) {
                s->sigs[s->n_sigs] = a;
                sg = (long)s->n_sigs++;
                if (synor__keyindex_get(&sig_ix, h) < 0 &&
                    synor__keyindex_put(&sig_ix, h, (uint32_t)sg))
                    o = -1;
            }
        }
        if (o < 0 || r < 0 || sv < 0 || c < 0) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            break;
        }
        d->owner = (uint32_t)o;
        d->region = (uint32_t)r;
        d->priced = got;
        d->price = got ? price : 0;
        d->source = (uint32_t)sv;
        d->sig = (uint32_t)sg;
        d->cls = (uint32_t)c;
        if (classes.n > n_before) {
            s->classes[c].rep = (uint32_t)i;
            s->classes[c].region = (uint32_t)r;
        }
        s->classes[c].n++;
        s->n_classes = classes.n;
    }
    synor__keyindex_free(&sig_ix);
    strset_free_names(&classes);
    synor__nameindex_free(&owners.ix);
    synor__nameindex_free(&regions.ix);
    synor__nameindex_free(&sources.ix);
    s->owners = owners.s;
    s->n_owners = owners.n;
    s->sources = sources.s;
    s->n_sources = sources.n;
    s->regions = synor__calloc(regions.n + 1, sizeof *s->regions);
    if (!s->regions) {
        strset_free_names(&regions);
        return rc ? rc : synor__error(SYNOR_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < regions.n; i++) {
        synor__rregion *g = &s->regions[i];
        g->name = regions.s[i];
        g->located =
            table && synor_route_table_region(table, g->name, &g->lat, &g->lon, &g->base_ms) == 0;
    }
    s->n_regions = regions.n;
    synor__free(regions.s);
    return rc;
}

int synor__rsnap_build(synor_registry *reg, const synor_route_table *table, synor_route_price_fn fn,
                       void *user, uint64_t generation, synor__rsnap **out)
{
    synor_registry_query q;
    memset(&q, 0, sizeof q);
    synor_registry_entry *e = NULL;
    size_t n = 0;
    int rc = synor_registry_query_run(reg, &q, &e, &n);
    if (rc)
        return rc;
    if (n >= UINT32_MAX) {
        synor_registry_entries_free(e, n);
        return synor__error(SYNOR_ERANGE, "the router indexes at most %u devices", UINT32_MAX - 1);
    }
    synor__rsnap *s = synor__calloc(1, sizeof *s);
    if (s) {
        s->generation = generation;
        s->n = n;
        s->devs = synor__calloc(n + 1, sizeof *s->devs);
        s->ids = synor__calloc(n + 1, sizeof *s->ids);
    }
    if (!s || !s->devs || !s->ids) {
        if (s) {
            synor__free(s->devs);
            synor__free(s->ids);
            synor__free(s);
        }
        synor_registry_entries_free(e, n);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    synor_route_table_latency_model(table, &s->km_per_ms, &s->route_factor);
    s->table = table;
    rc = fill(s, e, table, fn, user);
    synor_registry_entries_free(e, n);
    if (!rc)
        rc = build_leaves(s);
    if (rc) {
        synor__rsnap_free(s);
        return rc;
    }
    *out = s;
    return 0;
}
