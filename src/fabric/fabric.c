/* fabric.c - fabric files (synor-fabric/1): nodes, devices simulated from
 * profiles, links between memory spaces, prices; and the precomputed path
 * between every pair of devices.
 *
 * Invariants after a successful load:
 *   - space 0 .. n_nodes-1 are the nodes' host memories, in node order; a
 *     virtual "network" space follows when there is more than one node;
 *     then one space per device that has its own memory;
 *   - every device whose space is not its host has a link to its host
 *     (from the file, or derived from the profile's PCIe figures);
 *   - with more than one node, every node has a link to the network space;
 *   - synor_fabric_path(f, i, j) is the route from device i's memory to
 *     device j's, computed when asked from the link index.
 * Scale: names and links are found through hash indexes (common/index.h)
 * and NVLink pairs are made within groups of one node and one profile, so
 * loading is linear in devices and links (the NVLink links of g devices of
 * one group are g(g-1)/2: output, not search); no table of all device
 * pairs is kept.
 * Defaults that are assumptions, not datasheet figures, are named here and
 * in docs/PLANNING.md: host links 5 us; a device without PCIe figures
 * 16 GB/s; NVLink between two devices of the same profile on one node at
 * half the profile's aggregate figure per direction, 2 us, for at most 576
 * such devices per node (the largest NVLink domain). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/index.h"
#include "json/json.h"
#include "fabric/fabric_internal.h"
#include "synor/fabric.h"

#define HOST_LINK_LATENCY 5e-6
#define HOST_LINK_FALLBACK_BW 16e9
#define NVLINK_LATENCY 2e-6
/* The largest NVLink domain sold (NVL576): more GPUs of one profile on one
 * node would be joined pairwise by NVLink - millions of links for a
 * fabric that cannot exist. */
#define NVLINK_DOMAIN_MAX 576

struct synor_fabric {
    char *name, *currency, *notes;
    char **node_names;
    size_t n_nodes;
    char **space_names;
    size_t n_spaces, space_cap;
    synor_fabric_device *devs;
    size_t n_devs, dev_cap;
    synor_link *links;
    size_t n_links, link_cap;
    synor__keyindex link_ix;  /* unordered pair of spaces -> link */
    synor__nameindex name_ix; /* device or node name -> item (see item_name) */
    size_t net_space;         /* the network space (several nodes), else 0 */
};

int synor_fabric_set_price(synor_fabric *f, size_t i, int64_t price_micro)
{
    if (!f || i >= f->n_devs || price_micro < 0)
        return synor__error(SYNOR_EINVAL, "synor_fabric_set_price: %s",
                            !f || i >= (f ? f->n_devs : 0) ? "no such device" : "negative price");
    f->devs[i].price_micro = price_micro;
    return 0;
}


/* Items of the name index: device i is 2i, node i is 2i + 1 (one namespace:
 * a link endpoint names either). */
static const char *item_name(const void *owner, uint32_t item)
{
    const synor_fabric *f = owner;
    return item & 1 ? f->node_names[item >> 1] : f->devs[item >> 1].name;
}

static uint64_t pair_key(size_t a, size_t b)
{
    return a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
}

static const char *const LINK_NAMES[] = {"same",     "unified",      "nvlink", "pcie-p2p",
                                         "pcie",     "cpu-mediated", "network"};

const char *synor_link_kind_name(synor_link_kind k)
{
    return (unsigned)k < SYNOR_LINK_KIND_COUNT ? LINK_NAMES[k] : "unknown";
}

int synor_link_kind_from_name(const char *name, synor_link_kind *out)
{
    for (int k = 0; k < SYNOR_LINK_KIND_COUNT; k++)
        if (strcmp(name, LINK_NAMES[k]) == 0) {
            *out = (synor_link_kind)k;
            return 0;
        }
    return SYNOR_EINVAL;
}

/* ------------------------------------------------------------------ money */

void synor_money_format(int64_t micro, char *buf, size_t n)
{
    int neg = micro < 0;
    uint64_t m = neg ? (uint64_t)0 - (uint64_t)micro : (uint64_t)micro;
    char frac[8];
    snprintf(frac, sizeof frac, "%06llu", (unsigned long long)(m % 1000000));
    size_t len = 6;
    while (len > 2 && frac[len - 1] == '0')
        len--;
    frac[len] = '\0';
    snprintf(buf, n, "%s%llu.%s", neg ? "-" : "", (unsigned long long)(m / 1000000), frac);
}

int synor_money_parse(const char *s, int64_t *micro)
{
    const char *p = s;
    uint64_t whole = 0, frac = 0;
    int digits = 0, fd = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (whole > 1000000000000ull)
            return synor__error(SYNOR_ERANGE, "amount \"%s\" is too large", s);
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, fd++) {
            if (fd == 6)
                return synor__error(SYNOR_EINVAL, "amount \"%s\" has more than 6 decimals", s);
            frac = frac * 10 + (uint64_t)(*p - '0');
        }
    if (!digits || *p)
        return synor__error(SYNOR_EINVAL, "amount \"%s\" is not a decimal number like \"2.99\"",
                            s);
    for (; fd < 6; fd++)
        frac *= 10;
    *micro = (int64_t)(whole * 1000000 + frac);
    return 0;
}

int64_t synor_money_for_seconds(int64_t price, double seconds)
{
    if (!(seconds > 0) || price <= 0)
        return 0;
    /* Integer arithmetic on microseconds, in 128 bits: price x us / hour,
     * rounded; beyond what int64 holds it saturates (a fuzzed workload of
     * 1e30 FLOPs ran for 1e15 s and overflowed the microseconds). */
    double usd = seconds * 1e6;
    if (usd >= 9.2e18)
        return INT64_MAX;
    __extension__ typedef __int128 i128;
    const i128 hour = 3600000000LL;
    i128 m = ((i128)price * llround(usd) + hour / 2) / hour;
    return m > INT64_MAX ? INT64_MAX : (int64_t)m;
}

int64_t synor_money_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* ---------------------------------------------------------------- access */

const char *synor_fabric_name(const synor_fabric *f) { return f->name; }
const char *synor_fabric_currency(const synor_fabric *f) { return f->currency; }
const char *synor_fabric_notes(const synor_fabric *f) { return f->notes ? f->notes : ""; }
size_t synor_fabric_node_count(const synor_fabric *f) { return f->n_nodes; }
const char *synor_fabric_node_name(const synor_fabric *f, size_t i)
{
    return i < f->n_nodes ? f->node_names[i] : NULL;
}
size_t synor_fabric_device_count(const synor_fabric *f) { return f->n_devs; }
const synor_fabric_device *synor_fabric_device_at(const synor_fabric *f, size_t i)
{
    return i < f->n_devs ? &f->devs[i] : NULL;
}
synor_fabric_device *synor__fabric_device_mut(synor_fabric *f, size_t i)
{
    return f && i < f->n_devs ? &f->devs[i] : NULL;
}
size_t synor_fabric_space_count(const synor_fabric *f) { return f->n_spaces; }
const char *synor_fabric_space_name(const synor_fabric *f, size_t s)
{
    return s < f->n_spaces ? f->space_names[s] : NULL;
}
size_t synor_fabric_link_count(const synor_fabric *f) { return f->n_links; }
const synor_link *synor_fabric_link(const synor_fabric *f, size_t i)
{
    return i < f->n_links ? &f->links[i] : NULL;
}

long synor_fabric_find_device(const synor_fabric *f, const char *name)
{
    long item = synor__nameindex_get(&f->name_ix, name);
    return item >= 0 && !(item & 1) ? item >> 1 : -1;
}

static long find_link(const synor_fabric *f, size_t a, size_t b)
{
    return synor__keyindex_get(&f->link_ix, pair_key(a, b));
}

synor_path synor_fabric_path(const synor_fabric *f, size_t i, size_t j)
{
    synor_path p;
    memset(&p, 0, sizeof p);
    if (i >= f->n_devs || j >= f->n_devs) {
        p.kind = SYNOR_LINK_SAME;
        return p;
    }
    const synor_fabric_device *a = &f->devs[i], *b = &f->devs[j];
    long l;
    if (a->space == b->space) {
        /* two processors on one physical memory (Apple, Grace Hopper
         * style): no copy, but not the same processor */
        p.kind = i != j && (a->profile->caps.unified_memory || b->profile->caps.unified_memory)
                     ? SYNOR_LINK_UNIFIED
                     : SYNOR_LINK_SAME;
        return p;
    }
    if ((l = find_link(f, a->space, b->space)) >= 0) {
        p.kind = f->links[l].kind;
        p.hops[p.n_hops++] = (size_t)l;
        return p;
    }
    /* Loading made these links: a device's link to its host, and each
     * node's link to the network. */
    if (a->space != a->node)
        p.hops[p.n_hops++] = (size_t)find_link(f, a->space, a->node);
    if (a->node != b->node) {
        p.hops[p.n_hops++] = (size_t)find_link(f, a->node, f->net_space);
        p.hops[p.n_hops++] = (size_t)find_link(f, f->net_space, b->node);
        p.kind = SYNOR_LINK_NETWORK;
    } else {
        p.kind = SYNOR_LINK_CPU_MEDIATED;
    }
    if (b->space != b->node)
        p.hops[p.n_hops++] = (size_t)find_link(f, b->node, b->space);
    if (p.n_hops == 1)
        p.kind = f->links[p.hops[0]].kind;
    return p;
}

double synor_fabric_transfer_time(const synor_fabric *f, size_t a, size_t b, double bytes)
{
    synor_path p = synor_fabric_path(f, a, b);
    double t = 0;
    for (size_t h = 0; h < p.n_hops; h++) {
        const synor_link *l = &f->links[p.hops[h]];
        t += l->latency + bytes / l->bandwidth;
    }
    return t;
}

void synor_fabric_destroy(synor_fabric *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_nodes; i++)
        synor__free(f->node_names[i]);
    for (size_t i = 0; i < f->n_spaces; i++)
        synor__free(f->space_names[i]);
    for (size_t i = 0; i < f->n_devs; i++) {
        synor__free_const(f->devs[i].name);
        synor_device_unref(f->devs[i].dev);
    }
    for (size_t i = 0; i < f->n_links; i++)
        synor__free_const(f->links[i].name);
    synor__free(f->node_names);
    synor__free(f->space_names);
    synor__free(f->devs);
    synor__free(f->links);
    synor__keyindex_free(&f->link_ix);
    synor__nameindex_free(&f->name_ix);
    synor__free(f->name);
    synor__free(f->currency);
    synor__free(f->notes);
    synor__free(f);
}

/* ------------------------------------------------------------------ load */

static int add_space(synor_fabric *f, const char *name, size_t *out)
{
    if (f->n_spaces == f->space_cap) {
        size_t cap = f->space_cap ? f->space_cap * 2 : 8;
        char **p = synor__realloc(f->space_names, cap * sizeof *p);
        if (!p)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        f->space_names = p;
        f->space_cap = cap;
    }
    char **p = f->space_names;
    if (!(p[f->n_spaces] = synor__strdup(name)))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    *out = f->n_spaces++;
    return 0;
}

static int add_link(synor_fabric *f, synor_link_kind kind, size_t a, size_t b, double bw,
                    double lat, int from_profile)
{
    if (f->n_links == f->link_cap) {
        size_t cap = f->link_cap ? f->link_cap * 2 : 8;
        synor_link *l = synor__realloc(f->links, cap * sizeof *l);
        if (!l)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        f->links = l;
        f->link_cap = cap;
    }
    char name[256];
    snprintf(name, sizeof name, "%s<->%s", f->space_names[a], f->space_names[b]);
    synor_link *l = &f->links[f->n_links];
    if (!(l->name = synor__strdup(name)))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    if (synor__keyindex_put(&f->link_ix, pair_key(a, b), (uint32_t)f->n_links)) {
        synor__free_const(l->name);
        return SYNOR_ENOMEM;
    }
    l->kind = kind;
    l->a = a;
    l->b = b;
    l->bandwidth = bw;
    l->latency = lat;
    l->from_profile = from_profile;
    f->n_links++;
    return 0;
}

/* A link endpoint: a device name (its memory) or a node name (its host). */
static long endpoint(const synor_fabric *f, const char *name)
{
    long item = synor__nameindex_get(&f->name_ix, name);
    if (item < 0)
        return -1;
    return item & 1 ? item >> 1 : (long)f->devs[item >> 1].space;
}

typedef struct ctx {
    const synor__jdoc *d;
    const synor_catalog *cat;
    synor_fabric *f;
} ctx;

/* "host_sharing": {"cpu_slowdown": X, "slowdown": Y, "place_scale": Z}
 * (docs/PLANNING.md "Devices that share the host's cores"): X and Y as
 * synor_fabric_set_host_sharing takes them (>= 1; at most 100 here), Z as
 * synor_fabric_set_share_place_scale (optional). */
static int parse_sharing(ctx *c, const synor__jval *o, const char *path, double out[3])
{
    static const char *const keys[] = {"cpu_slowdown", "slowdown", "place_scale", NULL};
    char sp[96], p[128];
    snprintf(sp, sizeof sp, "%s.host_sharing", path);
    synor__jval *cs, *sl, *ps;
    int rc;
    if ((rc = synor__json_check_keys(c->d, o, sp, keys)) ||
        (rc = synor__json_member(c->d, o, sp, "cpu_slowdown", SYNOR__J_NUMBER, 1, &cs)) ||
        (rc = synor__json_member(c->d, o, sp, "slowdown", SYNOR__J_NUMBER, 1, &sl)) ||
        (rc = synor__json_member(c->d, o, sp, "place_scale", SYNOR__J_NUMBER, 0, &ps)))
        return rc;
    snprintf(p, sizeof p, "%s.cpu_slowdown", sp);
    if ((rc = synor__json_number(c->d, cs, p, 1, 100, &out[0])))
        return rc;
    snprintf(p, sizeof p, "%s.slowdown", sp);
    if ((rc = synor__json_number(c->d, sl, p, 1, 100, &out[1])))
        return rc;
    snprintf(p, sizeof p, "%s.place_scale", sp);
    if (ps && (rc = synor__json_number(c->d, ps, p, 1e-6, 1000, &out[2])))
        return rc;
    return 0;
}

static int parse_device(ctx *c, const synor__jval *o, size_t di)
{
    static const char *const keys[] = {"name",           "profile",      "node", "count",
                                       "price_per_hour", "host_sharing", NULL};
    char path[64], p[96];
    snprintf(path, sizeof path, "devices[%zu]", di);
    synor__jval *nm, *pr, *nd, *cn, *price, *share;
    int rc;
    if ((rc = synor__json_expect(c->d, o, path, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(c->d, o, path, keys)) ||
        (rc = synor__json_member(c->d, o, path, "profile", SYNOR__J_STRING, 1, &pr)) ||
        (rc = synor__json_member(c->d, o, path, "name", SYNOR__J_STRING, 0, &nm)) ||
        (rc = synor__json_member(c->d, o, path, "node", SYNOR__J_STRING, 0, &nd)) ||
        (rc = synor__json_member(c->d, o, path, "count", SYNOR__J_NUMBER, 0, &cn)) ||
        (rc = synor__json_member(c->d, o, path, "price_per_hour", SYNOR__J_STRING, 0, &price)) ||
        (rc = synor__json_member(c->d, o, path, "host_sharing", SYNOR__J_OBJECT, 0, &share)))
        return rc;
    double sh[3] = {0, 0, 0};
    if (share && (rc = parse_sharing(c, share, path, sh)))
        return rc;
    synor_fabric *f = c->f;
    const synor_profile *prof = synor_catalog_find(c->cat, pr->u.str.s);
    snprintf(p, sizeof p, "%s.profile", path);
    if (!prof)
        return synor__json_fail(c->d, pr, SYNOR_ENOENT, p, "no profile \"%s\" in the catalog",
                                pr->u.str.s);
    size_t node = 0;
    if (nd) {
        size_t k = 0;
        while (k < f->n_nodes && strcmp(f->node_names[k], nd->u.str.s) != 0)
            k++;
        snprintf(p, sizeof p, "%s.node", path);
        if (k == f->n_nodes)
            return synor__json_fail(c->d, nd, SYNOR_ESCHEMA, p, "no node \"%s\"", nd->u.str.s);
        node = k;
    } else if (f->n_nodes > 1) {
        return synor__json_fail(c->d, o, SYNOR_ESCHEMA, path,
                                "missing \"node\" (the fabric has several nodes)");
    }
    int64_t count = 1, micro = 0;
    snprintf(p, sizeof p, "%s.count", path);
    if (cn && (rc = synor__json_int(c->d, cn, p, 1, 4096, &count)))
        return rc;
    snprintf(p, sizeof p, "%s.price_per_hour", path);
    if (price && synor_money_parse(price->u.str.s, &micro))
        return synor__json_fail(c->d, price, SYNOR_ESCHEMA, p, "%s", synor_errmsg());
    if (micro > INT32_MAX)
        return synor__json_fail(c->d, price, SYNOR_ERANGE, p, "price above 2147 per hour");
    const char *base = nm ? nm->u.str.s : prof->id;
    if (f->n_devs + (size_t)count > f->dev_cap) { /* geometric: one entry at a time is common */
        size_t cap = f->dev_cap ? f->dev_cap : 8;
        while (cap < f->n_devs + (size_t)count)
            cap *= 2;
        synor_fabric_device *nd2 = synor__realloc(f->devs, cap * sizeof *nd2);
        if (!nd2)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        f->devs = nd2;
        f->dev_cap = cap;
    }
    for (int64_t k = 0; k < count; k++) {
        char name[160];
        if (count == 1)
            snprintf(name, sizeof name, "%s", base);
        else
            snprintf(name, sizeof name, "%s.%lld", base, (long long)k);
        if (endpoint(f, name) >= 0)
            return synor__json_fail(c->d, nm ? nm : pr, SYNOR_EEXIST, path,
                                    "duplicate device or node name \"%s\"", name);
        synor_fabric_device *fd = &f->devs[f->n_devs];
        memset(fd, 0, sizeof *fd);
        char label[200];
        snprintf(label, sizeof label, "%s (simulated)", prof->name);
        if ((rc = synor_device_create_simulated(prof, label, &fd->dev)))
            return rc;
        if (!(fd->name = synor__strdup(name))) {
            synor_device_unref(fd->dev);
            return synor__error(SYNOR_ENOMEM, "out of memory");
        }
        fd->profile = prof;
        fd->node = node;
        fd->price_micro = micro;
        fd->share_cpu_slowdown = sh[0];
        fd->share_slowdown = sh[1];
        fd->share_place_scale = sh[2];
        fd->share_rebalance_s = sh[0] > 0 ? SYNOR_FABRIC_SHARE_REBALANCE_S : 0;
        f->n_devs++;
        if (synor__nameindex_put(&f->name_ix, (uint32_t)(f->n_devs - 1) << 1))
            return SYNOR_ENOMEM;
        if (prof->type.kind == SYNOR_KIND_CPU || prof->caps.unified_memory)
            fd->space = node;
        else if ((rc = add_space(f, name, &fd->space)))
            return rc;
    }
    return 0;
}

static int parse_link(ctx *c, const synor__jval *o, size_t li)
{
    static const char *const keys[] = {"between", "kind", "bandwidth_gb_s", "latency_us", NULL};
    char path[64], p[96];
    snprintf(path, sizeof path, "links[%zu]", li);
    synor__jval *bt, *kd, *bw, *lt;
    int rc;
    if ((rc = synor__json_expect(c->d, o, path, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(c->d, o, path, keys)) ||
        (rc = synor__json_member(c->d, o, path, "between", SYNOR__J_ARRAY, 1, &bt)) ||
        (rc = synor__json_member(c->d, o, path, "kind", SYNOR__J_STRING, 1, &kd)) ||
        (rc = synor__json_member(c->d, o, path, "bandwidth_gb_s", SYNOR__J_NUMBER, 1, &bw)) ||
        (rc = synor__json_member(c->d, o, path, "latency_us", SYNOR__J_NUMBER, 1, &lt)))
        return rc;
    snprintf(p, sizeof p, "%s.between", path);
    if (bt->u.arr.n != 2)
        return synor__json_fail(c->d, bt, SYNOR_ESCHEMA, p, "expected two endpoints");
    long ends[2];
    for (int k = 0; k < 2; k++) {
        const synor__jval *e = bt->u.arr.items[k];
        snprintf(p, sizeof p, "%s.between[%d]", path, k);
        if ((rc = synor__json_expect(c->d, e, p, SYNOR__J_STRING)))
            return rc;
        if ((ends[k] = endpoint(c->f, e->u.str.s)) < 0)
            return synor__json_fail(c->d, e, SYNOR_ESCHEMA, p, "no device or node \"%s\"",
                                    e->u.str.s);
    }
    snprintf(p, sizeof p, "%s.between", path);
    if (ends[0] == ends[1])
        return synor__json_fail(c->d, bt, SYNOR_ESCHEMA, p,
                                "both endpoints are the same memory space");
    if (find_link(c->f, (size_t)ends[0], (size_t)ends[1]) >= 0)
        return synor__json_fail(c->d, bt, SYNOR_EEXIST, p, "duplicate link");
    synor_link_kind kind;
    snprintf(p, sizeof p, "%s.kind", path);
    if (synor_link_kind_from_name(kd->u.str.s, &kind) || kind == SYNOR_LINK_SAME ||
        kind == SYNOR_LINK_CPU_MEDIATED || kind == SYNOR_LINK_NETWORK)
        return synor__json_fail(c->d, kd, SYNOR_ESCHEMA, p,
                                "unknown link kind \"%s\" (unified, nvlink, pcie-p2p, pcie)",
                                kd->u.str.s);
    double gbs, us;
    snprintf(p, sizeof p, "%s.bandwidth_gb_s", path);
    if ((rc = synor__json_number(c->d, bw, p, 1e-6, 1e9, &gbs)))
        return rc;
    snprintf(p, sizeof p, "%s.latency_us", path);
    if ((rc = synor__json_number(c->d, lt, p, 0, 1e9, &us)))
        return rc;
    return add_link(c->f, kind, (size_t)ends[0], (size_t)ends[1], gbs * 1e9, us * 1e-6, 0);
}

/* NVLink groups: the devices with their own memory and NVLink of one node
 * and one profile, in device order. */
typedef struct group_member {
    size_t node;
    uintptr_t profile;
    size_t dev;
} group_member;

static int by_group(const void *x, const void *y)
{
    const group_member *a = x, *b = y;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->profile != b->profile)
        return a->profile < b->profile ? -1 : 1;
    return a->dev < b->dev ? -1 : a->dev > b->dev;
}

/* Host links and NVLink the file did not give. NVLink links are added in
 * the order of a loop over every pair (i < j) of devices, as the result is
 * part of the fabric's identity (link indexes), but only pairs within a
 * group are visited. */
static int complete(synor_fabric *f, const char *file)
{
    int rc;
    for (size_t i = 0; i < f->n_devs; i++) {
        const synor_fabric_device *d = &f->devs[i];
        if (d->space == d->node || find_link(f, d->space, d->node) >= 0)
            continue;
        double bw = synor_caps_pcie_bandwidth(&d->profile->caps);
        if ((rc = add_link(f, SYNOR_LINK_PCIE, d->space, d->node, bw > 0 ? bw : HOST_LINK_FALLBACK_BW,
                           HOST_LINK_LATENCY, 1)))
            return rc;
    }
    group_member *g = synor__malloc((f->n_devs ? f->n_devs : 1) * sizeof *g);
    size_t *pos = synor__malloc((f->n_devs ? f->n_devs : 1) * sizeof *pos);
    if (!g || !pos) {
        synor__free(g);
        synor__free(pos);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    size_t n = 0;
    for (size_t i = 0; i < f->n_devs; i++) {
        const synor_fabric_device *d = &f->devs[i];
        if (d->space != d->node && d->profile->caps.nvlink_bandwidth > 0)
            g[n++] = (group_member){d->node, (uintptr_t)d->profile, i};
    }
    qsort(g, n, sizeof *g, by_group);
    for (size_t k = 0; k < n; k++)
        pos[g[k].dev] = k;
    rc = 0;
    for (size_t k = 0, first = 0; k <= n && !rc; k++) {
        if (k < n && g[k].node == g[first].node && g[k].profile == g[first].profile)
            continue;
        if (k - first > NVLINK_DOMAIN_MAX) {
            const synor_fabric_device *d = &f->devs[g[first].dev];
            rc = synor__error(SYNOR_ERANGE,
                              "%s: node \"%s\": %zu %s devices would all be joined by NVLink; "
                              "an NVLink domain holds at most %d GPUs (NVL576): put them on "
                              "several nodes",
                              file, f->node_names[d->node], k - first, d->profile->id,
                              NVLINK_DOMAIN_MAX);
        }
        first = k;
    }
    for (size_t i = 0; i < f->n_devs && !rc; i++) {
        const synor_fabric_device *a = &f->devs[i];
        if (a->space == a->node || a->profile->caps.nvlink_bandwidth <= 0)
            continue;
        /* the group members after i, in device order */
        const group_member *gi = &g[pos[i]];
        for (size_t k = pos[i] + 1;
             k < n && g[k].node == gi->node && g[k].profile == gi->profile && !rc; k++) {
            const synor_fabric_device *b = &f->devs[g[k].dev];
            if (find_link(f, a->space, b->space) < 0)
                rc = add_link(f, SYNOR_LINK_NVLINK, a->space, b->space,
                              a->profile->caps.nvlink_bandwidth / 2, NVLINK_LATENCY, 1);
        }
    }
    synor__free(g);
    synor__free(pos);
    return rc;
}

static int load(ctx *c, const synor__jval *root, const char *fallback_name)
{
    static const char *const keys[] = {"format", "name",  "currency", "notes",
                                       "nodes",  "devices", "links",  "network", NULL};
    const char *top = "(top level)";
    synor__jval *fmt, *nm, *cur, *notes, *nodes, *devs, *links, *net;
    synor_fabric *f = c->f;
    int rc;
    if ((rc = synor__json_expect(c->d, root, top, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(c->d, root, top, keys)) ||
        (rc = synor__json_member(c->d, root, top, "format", SYNOR__J_STRING, 1, &fmt)) ||
        (rc = synor__json_member(c->d, root, top, "name", SYNOR__J_STRING, 0, &nm)) ||
        (rc = synor__json_member(c->d, root, top, "currency", SYNOR__J_STRING, 0, &cur)) ||
        (rc = synor__json_member(c->d, root, top, "notes", SYNOR__J_STRING, 0, &notes)) ||
        (rc = synor__json_member(c->d, root, top, "nodes", SYNOR__J_ARRAY, 1, &nodes)) ||
        (rc = synor__json_member(c->d, root, top, "devices", SYNOR__J_ARRAY, 1, &devs)) ||
        (rc = synor__json_member(c->d, root, top, "links", SYNOR__J_ARRAY, 0, &links)) ||
        (rc = synor__json_member(c->d, root, top, "network", SYNOR__J_OBJECT, 0, &net)))
        return rc;
    if (strcmp(fmt->u.str.s, "synor-fabric/1") != 0)
        return synor__json_fail(c->d, fmt, SYNOR_ESCHEMA, "format",
                                "unsupported format \"%s\" (expected \"synor-fabric/1\")",
                                fmt->u.str.s);
    if (!(f->name = synor__strdup(nm ? nm->u.str.s : fallback_name)) ||
        !(f->currency = synor__strdup(cur ? cur->u.str.s : "USD")) ||
        (notes && !(f->notes = synor__strdup(notes->u.str.s))))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    if (!nodes->u.arr.n)
        return synor__json_fail(c->d, nodes, SYNOR_ESCHEMA, "nodes", "a fabric needs a node");
    if (!(f->node_names = synor__calloc(nodes->u.arr.n, sizeof *f->node_names)))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    static const char *const nkeys[] = {"name", NULL};
    for (size_t i = 0; i < nodes->u.arr.n; i++) {
        const synor__jval *o = nodes->u.arr.items[i];
        synor__jval *v;
        char p[64];
        snprintf(p, sizeof p, "nodes[%zu]", i);
        size_t sp;
        if ((rc = synor__json_expect(c->d, o, p, SYNOR__J_OBJECT)) ||
            (rc = synor__json_check_keys(c->d, o, p, nkeys)) ||
            (rc = synor__json_member(c->d, o, p, "name", SYNOR__J_STRING, 1, &v)))
            return rc;
        if (endpoint(f, v->u.str.s) >= 0)
            return synor__json_fail(c->d, v, SYNOR_EEXIST, p, "duplicate node \"%s\"",
                                    v->u.str.s);
        if (!(f->node_names[i] = synor__strdup(v->u.str.s)))
            return synor__error(SYNOR_ENOMEM, "out of memory");
        f->n_nodes = i + 1;
        if (synor__nameindex_put(&f->name_ix, (uint32_t)i << 1 | 1))
            return SYNOR_ENOMEM;
        if ((rc = add_space(f, v->u.str.s, &sp)))
            return rc;
    }
    size_t net_space = 0;
    if (f->n_nodes > 1) {
        if (!net)
            return synor__json_fail(c->d, root, SYNOR_ESCHEMA, top,
                                    "missing \"network\" (the fabric has several nodes)");
        if ((rc = add_space(f, "network", &net_space)))
            return rc;
    }
    if (!devs->u.arr.n)
        return synor__json_fail(c->d, devs, SYNOR_ESCHEMA, "devices", "a fabric needs a device");
    for (size_t i = 0; i < devs->u.arr.n; i++)
        if ((rc = parse_device(c, devs->u.arr.items[i], i)))
            return rc;
    for (size_t i = 0; links && i < links->u.arr.n; i++)
        if ((rc = parse_link(c, links->u.arr.items[i], i)))
            return rc;
    if (net && f->n_nodes > 1) {
        static const char *const wk[] = {"bandwidth_gb_s", "latency_us", NULL};
        synor__jval *bw, *lt;
        double gbs, us;
        if ((rc = synor__json_check_keys(c->d, net, "network", wk)) ||
            (rc = synor__json_member(c->d, net, "network", "bandwidth_gb_s", SYNOR__J_NUMBER, 1,
                                     &bw)) ||
            (rc = synor__json_member(c->d, net, "network", "latency_us", SYNOR__J_NUMBER, 1,
                                     &lt)) ||
            (rc = synor__json_number(c->d, bw, "network.bandwidth_gb_s", 1e-6, 1e9, &gbs)) ||
            (rc = synor__json_number(c->d, lt, "network.latency_us", 0, 1e9, &us)))
            return rc;
        for (size_t i = 0; i < f->n_nodes; i++)
            if ((rc = add_link(f, SYNOR_LINK_NETWORK, i, net_space, gbs * 1e9, us * 1e-6 / 2, 0)))
                return rc;
    }
    f->net_space = net_space;
    return complete(f, synor__jdoc_name(c->d));
}

int synor_fabric_load_string(const synor_catalog *cat, const char *text, size_t len,
                             const char *name, synor_fabric **out)
{
    synor__jdoc *d;
    int rc = synor__json_parse(text, len, name, &d);
    if (rc)
        return rc;
    ctx c = {d, cat, synor__calloc(1, sizeof(synor_fabric))};
    if (!c.f) {
        synor__jdoc_free(d);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    synor__nameindex_init(&c.f->name_ix, item_name, c.f);
    rc = load(&c, synor__jdoc_root(d), name);
    synor__jdoc_free(d);
    if (rc) {
        synor_fabric_destroy(c.f);
        return rc;
    }
    *out = c.f;
    return 0;
}

int synor_fabric_load_file(const synor_catalog *cat, const char *path, synor_fabric **out)
{
    char *text;
    size_t len;
    int rc = synor__read_file(path, &text, &len);
    if (rc)
        return rc;
    rc = synor_fabric_load_string(cat, text, len, path, out);
    synor__free(text);
    return rc;
}

struct synor__builtin_file {
    const char *name;
    const char *text;
    size_t len;
};
extern const struct synor__builtin_file synor__builtin_fabrics[];
extern const size_t synor__builtin_fabrics_count;

size_t synor_fabric_builtin_count(void) { return synor__builtin_fabrics_count; }

/* The name is the file name without ".json". */
const char *synor_fabric_builtin_name(size_t i)
{
    static _Thread_local char buf[128];
    if (i >= synor__builtin_fabrics_count)
        return NULL;
    synor__strlcpy(buf, synor__builtin_fabrics[i].name, sizeof buf);
    char *dot = strrchr(buf, '.');
    if (dot)
        *dot = '\0';
    return buf;
}

int synor_fabric_load_builtin(const synor_catalog *cat, const char *name, synor_fabric **out)
{
    for (size_t i = 0; i < synor__builtin_fabrics_count; i++) {
        const struct synor__builtin_file *b = &synor__builtin_fabrics[i];
        size_t n = strlen(name);
        if (strncmp(b->name, name, n) == 0 && strcmp(b->name + n, ".json") == 0) {
            char label[160];
            snprintf(label, sizeof label, "builtin:%s", b->name);
            return synor_fabric_load_string(cat, b->text, b->len, label, out);
        }
    }
    return synor__error(SYNOR_ENOENT, "no built-in fabric \"%s\"", name);
}

int synor_fabric_open(const synor_catalog *cat, const char *spec, synor_fabric **out)
{
    size_t n = strlen(spec);
    if (strchr(spec, '/') || (n > 5 && strcmp(spec + n - 5, ".json") == 0))
        return synor_fabric_load_file(cat, spec, out);
    return synor_fabric_load_builtin(cat, spec, out);
}
