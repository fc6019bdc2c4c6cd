/* table.c - route tables (synor-route-table/1): prices per device-hour by
 * profile and region, region coordinates and base latencies, and the
 * latency model's constants; the built-in cost provider over them.
 *
 * Prices are decimal strings ("2.49", at most 6 decimals) turned into
 * micro-USD digit by digit, so no binary fraction touches money. Prices are
 * found through a name index over "PROFILE@REGION" keys ("PROFILE@" for a
 * profile's price in every region), so a refresh over 100,000 devices costs
 * one hash lookup or two per device. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/index.h"
#include "router/router_internal.h"
#include "synor/router.h"
#include "json/json.h"

#define KEY_MAX (2 * SYNOR_REGISTRY_TEXT_MAX + 2)

typedef struct price_row {
    char key[KEY_MAX]; /* PROFILE@REGION */
    int64_t usd_micro;
    char source[96];
} price_row;

typedef struct region_row {
    char name[SYNOR_REGISTRY_TEXT_MAX];
    double lat, lon, base_ms;
} region_row;

struct synor_route_table {
    price_row *prices;
    size_t n_prices;
    region_row *regions;
    size_t n_regions;
    synor__nameindex price_ix, region_ix;
    double km_per_ms, route_factor;
};

static const char *price_name(const void *owner, uint32_t i)
{
    return ((const synor_route_table *)owner)->prices[i].key;
}

static const char *region_name(const void *owner, uint32_t i)
{
    return ((const synor_route_table *)owner)->regions[i].name;
}

int synor_route_table_create(synor_route_table **out)
{
    if (!out)
        return synor__error(SYNOR_EINVAL, "synor_route_table_create: NULL argument");
    synor_route_table *t = synor__calloc(1, sizeof *t);
    if (!t)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    t->km_per_ms = 200;
    t->route_factor = 1.5;
    synor__nameindex_init(&t->price_ix, price_name, t);
    synor__nameindex_init(&t->region_ix, region_name, t);
    *out = t;
    return 0;
}

void synor_route_table_destroy(synor_route_table *t)
{
    if (!t)
        return;
    synor__nameindex_free(&t->price_ix);
    synor__nameindex_free(&t->region_ix);
    synor__free(t->prices);
    synor__free(t->regions);
    synor__free(t);
}

int synor__route_usd_parse(const char *s, int64_t *out)
{
    const char *dot = strchr(s, '.');
    size_t whole = dot ? (size_t)(dot - s) : strlen(s), frac = dot ? strlen(dot + 1) : 0;
    if (!whole || whole > 7 || frac > 6 || (dot && !frac))
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < whole; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    for (size_t i = 0; i < 6; i++) {
        char c = i < frac ? dot[1 + i] : '0';
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    if (v > SYNOR_ROUTE_PRICE_MAX)
        return -1;
    *out = v;
    return 0;
}

static int text_field(const synor__jdoc *d, const synor__jval *o, const char *path, const char *key,
                      int required, char *dst, size_t n)
{
    synor__jval *v;
    int rc = synor__json_member(d, o, path, key, SYNOR__J_STRING, required, &v);
    if (rc || !v)
        return rc;
    char p[96];
    snprintf(p, sizeof p, "%s.%s", path, key);
    if (v->u.str.len == 0 || v->u.str.len >= n || strchr(v->u.str.s, '@'))
        return synor__json_fail(d, v, SYNOR_ESCHEMA, p,
                                "\"%s\" is not a name of 1 to %zu characters without '@'",
                                v->u.str.s, n - 1);
    memcpy(dst, v->u.str.s, v->u.str.len + 1);
    return 0;
}

static int parse_price(const synor__jdoc *d, const synor__jval *e, const char *path, price_row *row)
{
    static const char *const keys[] = {"profile", "region", "usd_per_hour", NULL};
    char profile[SYNOR_REGISTRY_TEXT_MAX], region[SYNOR_REGISTRY_TEXT_MAX] = "", p[96];
    synor__jval *v;
    int rc;
    if ((rc = synor__json_expect(d, e, path, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, e, path, keys)) ||
        (rc = text_field(d, e, path, "profile", 1, profile, sizeof profile)) ||
        (rc = text_field(d, e, path, "region", 0, region, sizeof region)) ||
        (rc = synor__json_member(d, e, path, "usd_per_hour", SYNOR__J_STRING, 1, &v)))
        return rc;
    snprintf(p, sizeof p, "%s.usd_per_hour", path);
    if (synor__route_usd_parse(v->u.str.s, &row->usd_micro))
        return synor__json_fail(d, v, SYNOR_ESCHEMA, p,
                                "\"%s\" is not a price in USD with at most 6 decimals, "
                                "at most 1000000",
                                v->u.str.s);
    snprintf(row->key, sizeof row->key, "%s@%s", profile, region);
    if (region[0])
        snprintf(row->source, sizeof row->source, "table: %s in %s", profile, region);
    else
        snprintf(row->source, sizeof row->source, "table: %s", profile);
    return 0;
}

static int parse_region(const synor__jdoc *d, const synor__jval *e, const char *path,
                        region_row *row)
{
    static const char *const keys[] = {"name", "lat", "lon", "base_ms", NULL};
    synor__jval *v;
    char p[96];
    int rc;
    if ((rc = synor__json_expect(d, e, path, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, e, path, keys)) ||
        (rc = text_field(d, e, path, "name", 1, row->name, sizeof row->name)))
        return rc;
    static const char *const num[] = {"lat", "lon", "base_ms"};
    static const double lo[] = {-90, -180, 0}, hi[] = {90, 180, 1000};
    double *dst[] = {&row->lat, &row->lon, &row->base_ms};
    row->base_ms = 0;
    for (int k = 0; k < 3; k++) {
        if ((rc = synor__json_member(d, e, path, num[k], SYNOR__J_NUMBER, k < 2, &v)))
            return rc;
        snprintf(p, sizeof p, "%s.%s", path, num[k]);
        if (v && (rc = synor__json_number(d, v, p, lo[k], hi[k], dst[k])))
            return rc;
    }
    return 0;
}

/* Appends or replaces rows into a grown copy, then swaps the copy in. */
static int commit(synor_route_table *t, const price_row *np, size_t n_np, const region_row *nr,
                  size_t n_nr, double km, double rf)
{
    price_row *p = synor__malloc((t->n_prices + n_np + 1) * sizeof *p);
    region_row *r = synor__malloc((t->n_regions + n_nr + 1) * sizeof *r);
    synor_route_table tmp = *t;
    if (!p || !r) {
        synor__free(p);
        synor__free(r);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    if (t->n_prices)
        memcpy(p, t->prices, t->n_prices * sizeof *p);
    if (t->n_regions)
        memcpy(r, t->regions, t->n_regions * sizeof *r);
    tmp.prices = p;
    tmp.regions = r;
    synor__nameindex_init(&tmp.price_ix, price_name, &tmp);
    synor__nameindex_init(&tmp.region_ix, region_name, &tmp);
    int rc = 0;
    for (size_t i = 0; i < tmp.n_prices && !rc; i++)
        rc = synor__nameindex_put(&tmp.price_ix, (uint32_t)i);
    for (size_t i = 0; i < tmp.n_regions && !rc; i++)
        rc = synor__nameindex_put(&tmp.region_ix, (uint32_t)i);
    for (size_t i = 0; i < n_np && !rc; i++) {
        long at = synor__nameindex_get(&tmp.price_ix, np[i].key);
        if (at >= 0) {
            p[at] = np[i];
        } else {
            p[tmp.n_prices] = np[i];
            rc = synor__nameindex_put(&tmp.price_ix, (uint32_t)tmp.n_prices++);
        }
    }
    for (size_t i = 0; i < n_nr && !rc; i++) {
        long at = synor__nameindex_get(&tmp.region_ix, nr[i].name);
        if (at >= 0) {
            r[at] = nr[i];
        } else {
            r[tmp.n_regions] = nr[i];
            rc = synor__nameindex_put(&tmp.region_ix, (uint32_t)tmp.n_regions++);
        }
    }
    if (rc) {
        synor__nameindex_free(&tmp.price_ix);
        synor__nameindex_free(&tmp.region_ix);
        synor__free(p);
        synor__free(r);
        return rc;
    }
    synor__nameindex_free(&t->price_ix);
    synor__nameindex_free(&t->region_ix);
    synor__free(t->prices);
    synor__free(t->regions);
    *t = tmp;
    /* the indexes ask their owner for names: it is t, not tmp */
    t->price_ix.owner = t;
    t->region_ix.owner = t;
    t->km_per_ms = km;
    t->route_factor = rf;
    return 0;
}

int synor_route_table_load_string(synor_route_table *t, const char *text, size_t len,
                                  const char *name)
{
    if (!t || !text || !name)
        return synor__error(SYNOR_EINVAL, "synor_route_table_load: NULL argument");
    synor__jdoc *d;
    int rc = synor__json_parse(text, len, name, &d);
    if (rc)
        return rc;
    const synor__jval *root = synor__jdoc_root(d);
    static const char *const keys[] = {"format", "source", "latency", "regions", "prices", NULL};
    synor__jval *fmt, *lat, *regs, *prices, *src;
    price_row *np = NULL;
    region_row *nr = NULL;
    double km = t->km_per_ms, rf = t->route_factor;
    const char *top = "(top level)";
    if ((rc = synor__json_expect(d, root, top, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, root, top, keys)) ||
        (rc = synor__json_member(d, root, top, "format", SYNOR__J_STRING, 1, &fmt)) ||
        (rc = synor__json_member(d, root, top, "source", SYNOR__J_STRING, 0, &src)) ||
        (rc = synor__json_member(d, root, top, "latency", SYNOR__J_OBJECT, 0, &lat)) ||
        (rc = synor__json_member(d, root, top, "regions", SYNOR__J_ARRAY, 0, &regs)) ||
        (rc = synor__json_member(d, root, top, "prices", SYNOR__J_ARRAY, 0, &prices)))
        goto out;
    if (strcmp(fmt->u.str.s, "synor-route-table/1") != 0) {
        rc = synor__json_fail(d, fmt, SYNOR_ESCHEMA, "format",
                              "unsupported format \"%s\" (expected \"synor-route-table/1\")",
                              fmt->u.str.s);
        goto out;
    }
    if (lat) {
        static const char *const lkeys[] = {"fibre_km_per_ms", "route_factor", NULL};
        synor__jval *v;
        if ((rc = synor__json_check_keys(d, lat, "latency", lkeys)))
            goto out;
        if ((v = synor__json_get(lat, "fibre_km_per_ms")) &&
            (rc = synor__json_number(d, v, "latency.fibre_km_per_ms", 1, 300, &km)))
            goto out;
        if ((v = synor__json_get(lat, "route_factor")) &&
            (rc = synor__json_number(d, v, "latency.route_factor", 1, 10, &rf)))
            goto out;
    }
    size_t n_nr = regs ? regs->u.arr.n : 0, n_np = prices ? prices->u.arr.n : 0;
    nr = synor__calloc(n_nr + 1, sizeof *nr);
    np = synor__calloc(n_np + 1, sizeof *np);
    if (!nr || !np) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    char path[48];
    for (size_t i = 0; i < n_nr; i++) {
        snprintf(path, sizeof path, "regions[%zu]", i);
        if ((rc = parse_region(d, regs->u.arr.items[i], path, &nr[i])))
            goto out;
    }
    for (size_t i = 0; i < n_np; i++) {
        snprintf(path, sizeof path, "prices[%zu]", i);
        if ((rc = parse_price(d, prices->u.arr.items[i], path, &np[i])))
            goto out;
    }
    rc = commit(t, np, n_np, nr, n_nr, km, rf);
out:
    synor__free(np);
    synor__free(nr);
    synor__jdoc_free(d);
    return rc;
}

int synor_route_table_load(synor_route_table *t, const char *path)
{
    if (!path)
        return synor__error(SYNOR_EINVAL, "synor_route_table_load: path is NULL");
    char *text;
    size_t len;
    int rc = synor__read_file(path, &text, &len);
    if (rc)
        return rc;
    rc = synor_route_table_load_string(t, text, len, path);
    synor__free(text);
    return rc;
}

int synor_route_table_price(const synor_route_table *t, const char *profile, const char *region,
                            int64_t *usd_micro_per_hour, const char **source)
{
    if (!t || !profile || !profile[0])
        return 0;
    char key[KEY_MAX];
    long at = -1;
    if (region && region[0]) {
        snprintf(key, sizeof key, "%s@%s", profile, region);
        at = synor__nameindex_get(&t->price_ix, key);
    }
    if (at < 0) {
        snprintf(key, sizeof key, "%s@", profile);
        at = synor__nameindex_get(&t->price_ix, key);
    }
    if (at < 0)
        return 0;
    if (usd_micro_per_hour)
        *usd_micro_per_hour = t->prices[at].usd_micro;
    if (source)
        *source = t->prices[at].source;
    return 1;
}

int synor_route_table_region(const synor_route_table *t, const char *region, double *lat,
                             double *lon, double *base_ms)
{
    long at = t && region ? synor__nameindex_get(&t->region_ix, region) : -1;
    if (at < 0)
        return synor__error(SYNOR_ENOENT, "region \"%s\" is not in the route table",
                            region ? region : "(null)");
    if (lat)
        *lat = t->regions[at].lat;
    if (lon)
        *lon = t->regions[at].lon;
    if (base_ms)
        *base_ms = t->regions[at].base_ms;
    return 0;
}

void synor_route_table_latency_model(const synor_route_table *t, double *km_per_ms,
                                     double *route_factor)
{
    if (km_per_ms)
        *km_per_ms = t ? t->km_per_ms : 200;
    if (route_factor)
        *route_factor = t ? t->route_factor : 1.5;
}

int synor_route_table_price_fn(void *user, const synor_registry_entry *e,
                               int64_t *usd_micro_per_hour, const char **source)
{
    const char *prof = e && e->device ? synor_device_profile_id(e->device) : NULL;
    if (!user || !prof)
        return 0;
    return synor_route_table_price(user, prof, e->info.region, usd_micro_per_hour, source);
}

void synor__route_table_dump(const synor_route_table *t, synor__buf *b)
{
    synor__buf_printf(b, "latency %.17g km/ms x %.17g\n", t->km_per_ms, t->route_factor);
    for (size_t i = 0; i < t->n_prices; i++)
        synor__buf_printf(b, "price %s %lld (%s)\n", t->prices[i].key,
                          (long long)t->prices[i].usd_micro, t->prices[i].source);
    for (size_t i = 0; i < t->n_regions; i++)
        synor__buf_printf(b, "region %s %.17g %.17g %.17g\n", t->regions[i].name, t->regions[i].lat,
                          t->regions[i].lon, t->regions[i].base_ms);
}
