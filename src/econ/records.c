/* records.c - the records of each economics dataset (docs/ECONOMICS.md has
 * the format): regions, electricity prices and hourly market prices, carbon
 * intensity and its hourly profiles, PUE, hardware prices, cloud instances,
 * network latency and egress.
 *
 * Every field is checked where it is read, and the first bad one fails the
 * file with "FILE:LINE:COL: PATH: what is wrong, and the value": unknown or
 * missing fields, a source key not in the file's "sources", a region id not
 * in regions.json, a profile id not in the catalog, an amount that is not
 * an exact decimal, a duplicate record. Records may carry "local" and
 * "currency" (the figure in the source's currency, converted in the file's
 * "fx") and "notes"; those are checked and kept in the document only. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "econ/econ_internal.h"

typedef struct rec {
    synor__econ_set *s;
    const synor_catalog *cat;
    const synor__jdoc *d;
    const synor_econ_file *f;
    const synor__jval *obj;
    char path[96]; /* "prices[3]" */
} rec;

static int rec_fail(const rec *r, const synor__jval *v, int code, const char *key, const char *fmt,
                    ...) SYNOR__PRINTF(5, 6);

static int rec_fail(const rec *r, const synor__jval *v, int code, const char *key, const char *fmt,
                    ...)
{
    char msg[400], sub[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(sub, sizeof sub, "%s%s%s", r->path, key ? "." : "", key ? key : "");
    return synor__json_fail(r->d, v ? v : r->obj, code, sub, "%s", msg);
}

static void sub_path(const rec *r, const char *key, char *buf, size_t n)
{
    snprintf(buf, n, "%s.%s", r->path, key);
}

static int get(const rec *r, const char *key, synor__jtype t, int required, synor__jval **v)
{
    return synor__json_member(r->d, r->obj, r->path, key, t, required, v);
}

static int get_str(const rec *r, const char *key, int required, const char **out)
{
    synor__jval *v;
    int rc = get(r, key, SYNOR__J_STRING, required, &v);
    if (rc)
        return rc;
    *out = v ? v->u.str.s : NULL;
    if (v && !v->u.str.len)
        return rec_fail(r, v, SYNOR_ESCHEMA, key, "must not be empty");
    return 0;
}

static int get_enum(const rec *r, const char *key, const char *const *allowed, const char **out)
{
    int rc = get_str(r, key, 1, out);
    if (rc)
        return rc;
    char list[200] = "";
    for (const char *const *a = allowed; *a; a++) {
        if (strcmp(*a, *out) == 0)
            return 0;
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", a == allowed ? "" : ", ",
                 *a);
    }
    return rec_fail(r, synor__json_get(r->obj, key), SYNOR_ESCHEMA, key, "\"%s\" is not one of: %s",
                    *out, list);
}

static int get_unit(const rec *r, const char *want)
{
    const char *u;
    int rc = get_str(r, "unit", 1, &u);
    if (rc)
        return rc;
    if (strcmp(u, want) != 0)
        return rec_fail(r, synor__json_get(r->obj, "unit"), SYNOR_ESCHEMA, "unit",
                        "\"%s\" is not the unit of this field (\"%s\")", u, want);
    return 0;
}

/* An amount, or -1 for null when nullable. */
static int get_money(const rec *r, const char *key, int required, int nullable, int64_t *out)
{
    synor__jval *v = synor__json_get(r->obj, key);
    char sub[160];
    sub_path(r, key, sub, sizeof sub);
    *out = -1;
    if (!v) {
        if (required)
            return rec_fail(r, NULL, SYNOR_ESCHEMA, NULL, "missing required field \"%s\"", key);
        return 0;
    }
    if (v->type == SYNOR__J_NULL && nullable)
        return 0;
    return synor__econ_money(r->d, v, sub, out);
}

static int get_num(const rec *r, const char *key, int required, double min, double max, double *out)
{
    synor__jval *v = synor__json_get(r->obj, key);
    char sub[160];
    sub_path(r, key, sub, sizeof sub);
    if (!v) {
        if (required)
            return rec_fail(r, NULL, SYNOR_ESCHEMA, NULL, "missing required field \"%s\"", key);
        return 0;
    }
    return synor__json_number(r->d, v, sub, min, max, out);
}

static int get_int(const rec *r, const char *key, int64_t min, int64_t max, int64_t *out)
{
    synor__jval *v;
    char sub[160];
    sub_path(r, key, sub, sizeof sub);
    int rc = get(r, key, SYNOR__J_NUMBER, 1, &v);
    return rc ? rc : synor__json_int(r->d, v, sub, min, max, out);
}

static int get_source(const rec *r, const char **out)
{
    int rc = get_str(r, "source", 1, out);
    if (rc)
        return rc;
    if (!synor_econ_source_find(r->f, *out))
        return rec_fail(r, synor__json_get(r->obj, "source"), SYNOR_ESCHEMA, "source",
                        "\"%s\" is not a key of this file's \"sources\"", *out);
    return 0;
}

static int get_region(const rec *r, const char *key, const char **out)
{
    int rc = get_str(r, key, 1, out);
    if (rc)
        return rc;
    if (!r->s->has[SYNOR_ECON_REGIONS])
        return rec_fail(r, synor__json_get(r->obj, key), SYNOR_ENOENT, key,
                        "region \"%s\": no regions.json is loaded with this file", *out);
    if (!synor__econ_region_id(r->s, *out))
        return rec_fail(r, synor__json_get(r->obj, key), SYNOR_ENOENT, key,
                        "unknown region \"%s\" (not an id of regions.json)", *out);
    return 0;
}

static int get_profile(const rec *r, const char *key, const char **out)
{
    int rc = get_str(r, key, 1, out);
    if (rc)
        return rc;
    if (!synor_catalog_find(r->cat, *out))
        return rec_fail(r, synor__json_get(r->obj, key), SYNOR_ENOENT, key,
                        "unknown profile \"%s\" (not in the catalog: synor profiles)", *out);
    return 0;
}

/* "local" and "currency" (in the file's fx), "notes". */
static int check_common(const rec *r)
{
    const char *cur = NULL, *s;
    int64_t local;
    int rc = get_str(r, "currency", 0, &cur);
    if (!rc)
        rc = get_money(r, "local", 0, 1, &local);
    if (!rc)
        rc = get_str(r, "notes", 0, &s);
    if (rc)
        return rc;
    if (cur) {
        const synor__jval *fx = synor__json_get(synor__jdoc_root(r->d), "fx");
        if (!synor__json_get(fx, cur))
            return rec_fail(r, synor__json_get(r->obj, "currency"), SYNOR_ESCHEMA, "currency",
                            "\"%s\" has no conversion rate in the file's \"fx\"", cur);
    }
    return 0;
}

/* Starts record i of array `name`: the object, its keys, common fields. */
static int rec_begin(rec *r, const char *name, size_t i, const synor__jval *item,
                     const char *const *keys)
{
    snprintf(r->path, sizeof r->path, "%s[%zu]", name, i);
    r->obj = item;
    if (synor__json_expect(r->d, item, r->path, SYNOR__J_OBJECT))
        return SYNOR_ESCHEMA;
    const char *all[24];
    size_t n = 0;
    for (; keys[n]; n++)
        all[n] = keys[n];
    all[n++] = "currency";
    all[n++] = "local";
    all[n++] = "notes";
    all[n] = NULL;
    int rc = synor__json_check_keys(r->d, item, r->path, all);
    return rc ? rc : check_common(r);
}

static const synor__jval *array(const rec *r, const synor__jval *root, const char *key,
                                int required, int *rc)
{
    synor__jval *v;
    *rc = synor__json_member(r->d, root, "(root)", key, SYNOR__J_ARRAY, required, &v);
    return v;
}

static void *alloc_n(rec *r, size_t n, size_t size, int *rc)
{
    void *p = synor__econ_alloc(r->s, (n ? n : 1) * size);
    if (!p)
        *rc = synor__error(SYNOR_ENOMEM, "out of memory");
    return p;
}

/* ---------------------------------------------------------------- regions */

static int valid_region_id(const char *id)
{
    size_t n = strlen(id);
    if (n < 2 || id[0] < 'A' || id[0] > 'Z' || id[1] < 'A' || id[1] > 'Z')
        return 0;
    if (n == 2)
        return 1;
    if (id[2] != '-' || n < 4 || n > 6)
        return 0;
    for (size_t i = 3; i < n; i++)
        if (!((id[i] >= 'A' && id[i] <= 'Z') || (id[i] >= '0' && id[i] <= '9')))
            return 0;
    return 1;
}

static const char *const PROVIDERS[] = {"aws", "gcp", "azure", NULL};

static int parse_regions(rec *r, const synor__jval *root)
{
    static const char *const K[] = {"id",   "name",  "country", "lat", "lon",
                                    "grid", "cloud", "source",  NULL};
    int rc;
    const synor__jval *a = array(r, root, "regions", 1, &rc);
    if (rc)
        return rc;
    synor__econ_set *s = r->s;
    s->regions = alloc_n(r, a->u.arr.n, sizeof *s->regions, &rc);
    for (size_t i = 0; i < a->u.arr.n && !rc; i++) {
        synor_econ_region *g = &s->regions[i];
        const char *src;
        if ((rc = rec_begin(r, "regions", i, a->u.arr.items[i], K)) ||
            (rc = get_str(r, "id", 1, &g->id)) || (rc = get_str(r, "name", 1, &g->name)) ||
            (rc = get_str(r, "country", 1, &g->country)) ||
            (rc = get_num(r, "lat", 1, -90, 90, &g->lat)) ||
            (rc = get_num(r, "lon", 1, -180, 180, &g->lon)) ||
            (rc = get_str(r, "grid", 0, &g->grid)))
            return rc;
        if (synor__json_get(r->obj, "source") && (rc = get_source(r, &src)))
            return rc;
        if (!valid_region_id(g->id))
            return rec_fail(r, synor__json_get(r->obj, "id"), SYNOR_ESCHEMA, "id",
                            "\"%s\" is not an ISO 3166 code (\"DE\", \"US-VA\")", g->id);
        if (strlen(g->country) != 2 || strncmp(g->country, g->id, 2) != 0)
            return rec_fail(r, synor__json_get(r->obj, "country"), SYNOR_ESCHEMA, "country",
                            "\"%s\" is not the country of region \"%s\"", g->country, g->id);
        if (synor__econ_region_id(s, g->id))
            return rec_fail(r, synor__json_get(r->obj, "id"), SYNOR_EEXIST, "id",
                            "region \"%s\" is listed twice", g->id);
        synor__jval *cl;
        if ((rc = get(r, "cloud", SYNOR__J_OBJECT, 0, &cl)))
            return rc;
        size_t total = 0;
        for (size_t k = 0; cl && k < cl->u.obj.n; k++) {
            const synor__jmember *m = &cl->u.obj.m[k];
            char p[160];
            snprintf(p, sizeof p, "%s.cloud.%.20s", r->path, m->key);
            int known = 0;
            for (const char *const *pv = PROVIDERS; *pv; pv++)
                known |= strcmp(*pv, m->key) == 0;
            if (!known)
                return synor__json_fail(r->d, m->val, SYNOR_ESCHEMA, p,
                                        "unknown provider \"%s\" (aws, gcp, azure)", m->key);
            if (synor__json_expect(r->d, m->val, p, SYNOR__J_ARRAY))
                return SYNOR_ESCHEMA;
            total += m->val->u.arr.n;
        }
        const char **names = alloc_n(r, total, sizeof *names, &rc);
        for (size_t k = 0; cl && k < cl->u.obj.n && !rc; k++) {
            const synor__jmember *m = &cl->u.obj.m[k];
            for (size_t j = 0; j < m->val->u.arr.n && !rc; j++) {
                const synor__jval *v = m->val->u.arr.items[j];
                char p[160];
                snprintf(p, sizeof p, "%s.cloud.%.20s[%zu]", r->path, m->key, j);
                if (synor__json_expect(r->d, v, p, SYNOR__J_STRING))
                    return SYNOR_ESCHEMA;
                size_t l = strlen(m->key) + 1 + v->u.str.len + 1;
                char *full = synor__econ_alloc(s, l);
                if (!full)
                    return synor__error(SYNOR_ENOMEM, "out of memory");
                snprintf(full, l, "%s:%s", m->key, v->u.str.s);
                const synor_econ_region *other = NULL;
                for (size_t q = 0; q < s->n_regions && !other; q++)
                    for (size_t c = 0; c < s->regions[q].n_cloud; c++)
                        if (strcmp(s->regions[q].cloud[c], full) == 0)
                            other = &s->regions[q];
                for (size_t c = 0; c < g->n_cloud; c++)
                    if (strcmp(names[c], full) == 0)
                        other = g;
                if (other)
                    return synor__json_fail(r->d, v, SYNOR_EEXIST, p,
                                            "cloud region \"%s\" is already in region \"%s\"", full,
                                            other->id);
                names[g->n_cloud++] = full;
            }
        }
        g->cloud = names;
        s->n_regions++;
    }
    return rc;
}

/* ------------------------------------------------- hourly (both datasets) */

static int parse_hourly(rec *r, const synor__jval *root, int carbon, synor_econ_hourly **out,
                        size_t *nout)
{
    static const char *const K[] = {"market", "region", "week_start", "unit",
                                    "values", "source", NULL};
    int rc;
    const synor__jval *a = array(r, root, "hourly", 0, &rc);
    if (rc || !a)
        return rc;
    synor_econ_hourly *hs = alloc_n(r, a->u.arr.n, sizeof *hs, &rc);
    for (size_t i = 0; i < a->u.arr.n && !rc; i++) {
        synor_econ_hourly *h = &hs[i];
        synor__jval *vals;
        if ((rc = rec_begin(r, "hourly", i, a->u.arr.items[i], K)) ||
            (rc = get_str(r, "market", !carbon, &h->market)) ||
            (rc = get_region(r, "region", &h->region)) ||
            (rc = get_str(r, "week_start", 1, &h->week_start)) ||
            (rc = get_unit(r, carbon ? "gCO2/kWh" : "USD/MWh")) ||
            (rc = get_source(r, &h->source)) || (rc = get(r, "values", SYNOR__J_ARRAY, 1, &vals)))
            return rc;
        if (synor__econ_time_parse(h->week_start, &h->start_unix))
            return rec_fail(r, synor__json_get(r->obj, "week_start"), SYNOR_ESCHEMA, "week_start",
                            "\"%s\" is not a UTC time YYYY-MM-DDTHH:MM:SSZ", h->week_start);
        if (h->start_unix % 3600)
            return rec_fail(r, synor__json_get(r->obj, "week_start"), SYNOR_ESCHEMA, "week_start",
                            "\"%s\" does not start an hour", h->week_start);
        for (size_t k = 0; k < i; k++)
            if (strcmp(hs[k].region, h->region) == 0)
                return rec_fail(r, synor__json_get(r->obj, "region"), SYNOR_EEXIST, "region",
                                "a second hourly profile for \"%s\"", h->region);
        size_t n = vals->u.arr.n;
        if (n < 1 || n > 744)
            return rec_fail(r, vals, SYNOR_ERANGE, "values",
                            "%zu values (1 to 744 hours; a week is 168)", n);
        int64_t *v = alloc_n(r, n, sizeof *v, &rc);
        for (size_t k = 0; k < n && !rc; k++) {
            const synor__jval *x = vals->u.arr.items[k];
            char p[160];
            snprintf(p, sizeof p, "%s.values[%zu]", r->path, k);
            if (carbon) {
                double g;
                if ((rc = synor__json_number(r->d, x, p, 0, 5000, &g)))
                    return rc;
                v[k] = llround(g * 1000);
            } else if (x->type == SYNOR__J_STRING && x->u.str.s[0] == '-') {
                /* wholesale prices go below zero when supply exceeds demand */
                synor__jval neg = *x;
                neg.u.str.s++;
                neg.u.str.len--;
                if ((rc = synor__econ_money(r->d, &neg, p, &v[k])))
                    return rc;
                v[k] = -v[k];
            } else if ((rc = synor__econ_money(r->d, x, p, &v[k])))
                return rc;
        }
        h->values = v;
        h->n = n;
    }
    *out = hs;
    *nout = a->u.arr.n;
    return rc;
}

/* ------------------------------------------------------------ electricity */

static int parse_electricity(rec *r, const synor__jval *root)
{
    static const char *const K[] = {"region", "industrial", "commercial", "unit",
                                    "period", "source",     NULL};
    int rc;
    const synor__jval *a = array(r, root, "prices", 1, &rc);
    if (rc)
        return rc;
    synor__econ_set *s = r->s;
    s->elec = alloc_n(r, a->u.arr.n, sizeof *s->elec, &rc);
    for (size_t i = 0; i < a->u.arr.n && !rc; i++) {
        synor_econ_elec *p = &s->elec[i];
        if ((rc = rec_begin(r, "prices", i, a->u.arr.items[i], K)) ||
            (rc = get_region(r, "region", &p->region)) ||
            (rc = get_money(r, "industrial", 1, 1, &p->industrial)) ||
            (rc = get_money(r, "commercial", 1, 1, &p->commercial)) ||
            (rc = get_unit(r, "USD/kWh")) || (rc = get_str(r, "period", 1, &p->period)) ||
            (rc = get_source(r, &p->source)))
            return rc;
        if (p->industrial < 0 && p->commercial < 0)
            return rec_fail(r, NULL, SYNOR_ESCHEMA, NULL,
                            "industrial and commercial are both null (give at least one)");
        if (p->industrial == 0 || p->commercial == 0)
            return rec_fail(r, synor__json_get(r->obj, p->industrial ? "commercial" : "industrial"),
                            SYNOR_ERANGE, p->industrial ? "commercial" : "industrial",
                            "a price of 0");
        for (size_t k = 0; k < i; k++)
            if (strcmp(s->elec[k].region, p->region) == 0)
                return rec_fail(r, synor__json_get(r->obj, "region"), SYNOR_EEXIST, "region",
                                "a second price for region \"%s\"", p->region);
        s->n_elec++;
    }
    return rc ? rc : parse_hourly(r, root, 0, &s->elec_hourly, &s->n_elec_hourly);
}

/* ----------------------------------------------------------------- carbon */

static int parse_carbon(rec *r, const synor__jval *root)
{
    static const char *const K[] = {"region", "gco2_per_kwh", "renewable_share_pct",
                                    "period", "source",       NULL};
    int rc;
    const synor__jval *a = array(r, root, "intensity", 1, &rc);
    if (rc)
        return rc;
    synor__econ_set *s = r->s;
    s->carbon = alloc_n(r, a->u.arr.n, sizeof *s->carbon, &rc);
    for (size_t i = 0; i < a->u.arr.n && !rc; i++) {
        synor_econ_carbon *c = &s->carbon[i];
        c->renewable_share_pct = -1;
        if ((rc = rec_begin(r, "intensity", i, a->u.arr.items[i], K)) ||
            (rc = get_region(r, "region", &c->region)) ||
            (rc = get_num(r, "gco2_per_kwh", 1, 0, 5000, &c->gco2_per_kwh)) ||
            (rc = get_num(r, "renewable_share_pct", 0, 0, 100, &c->renewable_share_pct)) ||
            (rc = get_str(r, "period", 1, &c->period)) || (rc = get_source(r, &c->source)))
            return rc;
        for (size_t k = 0; k < i; k++)
            if (strcmp(s->carbon[k].region, c->region) == 0)
                return rec_fail(r, synor__json_get(r->obj, "region"), SYNOR_EEXIST, "region",
                                "a second intensity for region \"%s\"", c->region);
        s->n_carbon++;
    }
    return rc ? rc : parse_hourly(r, root, 1, &s->carbon_hourly, &s->n_carbon_hourly);
}

/* -------------------------------------------------------------------- pue */

static const char *const SITES[] = {"hyperscale", "colocation", "enterprise", "edge", "home", NULL};
static const char *const CLIMATES[] = {"any", "cold", "temperate", "hot", NULL};

static int parse_pue(rec *r, const synor__jval *root)
{
    static const char *const K[] = {"site", "climate", "pue", "period", "source", NULL};
    int rc;
    const synor__jval *a = array(r, root, "pue", 1, &rc);
    if (rc)
        return rc;
    synor__econ_set *s = r->s;
    s->pue = alloc_n(r, a->u.arr.n, sizeof *s->pue, &rc);
    for (size_t i = 0; i < a->u.arr.n && !rc; i++) {
        synor_econ_pue *p = &s->pue[i];
        double x;
        if ((rc = rec_begin(r, "pue", i, a->u.arr.items[i], K)) ||
            (rc = get_enum(r, "site", SITES, &p->site)) ||
            (rc = get_enum(r, "climate", CLIMATES, &p->climate)) ||
            (rc = get_num(r, "pue", 1, 1.0, SYNOR_ECON_MAX_PUE_MILLI / 1000.0, &x)) ||
            (rc = get_str(r, "period", 1, &p->period)) || (rc = get_source(r, &p->source)))
            return rc;
        double milli = x * 1000;
        if (fabs(milli - nearbyint(milli)) > 1e-6)
            return rec_fail(r, synor__json_get(r->obj, "pue"), SYNOR_ESCHEMA, "pue",
                            "%g has more than 3 decimals", x);
        p->pue_milli = (int)llround(milli);
        for (size_t k = 0; k < i; k++)
            if (strcmp(s->pue[k].site, p->site) == 0 && strcmp(s->pue[k].climate, p->climate) == 0)
                return rec_fail(r, r->obj, SYNOR_EEXIST, NULL,
                                "a second PUE for %s sites, %s "
                                "climate",
                                p->site, p->climate);
        s->n_pue++;
    }
    return rc;
}

/* --------------------------------------------------------------- hardware */

static int parse_hardware(rec *r, const synor__jval *root)
{
    static const char *const K[] = {
        "profile", "list_price", "service_life_years", "price_kind", "period", "source", NULL};
    static const char *const KINDS[] = {"street estimate", "list", "msrp", NULL};
    int rc;
    const synor__jval *a = array(r, root, "hardware", 1, &rc);
    if (rc)
        return rc;
    synor__econ_set *s = r->s;
    s->hw = alloc_n(r, a->u.arr.n, sizeof *s->hw, &rc);
    for (size_t i = 0; i < a->u.arr.n && !rc; i++) {
        synor_econ_hardware *h = &s->hw[i];
        int64_t life;
        if ((rc = rec_begin(r, "hardware", i, a->u.arr.items[i], K)) ||
            (rc = get_profile(r, "profile", &h->profile)) ||
            (rc = get_money(r, "list_price", 1, 0, &h->list_price)) ||
            (rc = get_int(r, "service_life_years", 1, SYNOR_ECON_MAX_LIFE_YEARS, &life)) ||
            (rc = get_enum(r, "price_kind", KINDS, &h->price_kind)) ||
            (rc = get_str(r, "period", 1, &h->period)) || (rc = get_source(r, &h->source)))
            return rc;
        if (h->list_price == 0)
            return rec_fail(r, synor__json_get(r->obj, "list_price"), SYNOR_ERANGE, "list_price",
                            "a price of 0");
        h->service_life_years = (int)life;
        for (size_t k = 0; k < i; k++)
            if (strcmp(s->hw[k].profile, h->profile) == 0)
                return rec_fail(r, synor__json_get(r->obj, "profile"), SYNOR_EEXIST, "profile",
                                "a second price for \"%s\"", h->profile);
        s->n_hw++;
    }
    return rc;
}

/* ------------------------------------------------------------------ cloud */

static int parse_cloud(rec *r, const synor__jval *root)
{
    static const char *const K[] = {"provider", "type",       "region",    "grid_region", "devices",
                                    "vcpus",    "memory_gib", "on_demand", "spot",        "unit",
                                    "period",   "source",     NULL};
    static const char *const DK[] = {"profile", "count", NULL};
    int rc;
    const synor__jval *a = array(r, root, "instances", 1, &rc);
    if (rc)
        return rc;
    synor__econ_set *s = r->s;
    s->inst = alloc_n(r, a->u.arr.n, sizeof *s->inst, &rc);
    for (size_t i = 0; i < a->u.arr.n && !rc; i++) {
        synor_econ_instance *c = &s->inst[i];
        synor__jval *devs;
        int64_t vcpus;
        if ((rc = rec_begin(r, "instances", i, a->u.arr.items[i], K)) ||
            (rc = get_enum(r, "provider", PROVIDERS, &c->provider)) ||
            (rc = get_str(r, "type", 1, &c->type)) || (rc = get_str(r, "region", 1, &c->region)) ||
            (rc = get_region(r, "grid_region", &c->grid_region)) ||
            (rc = get(r, "devices", SYNOR__J_ARRAY, 1, &devs)) ||
            (rc = get_int(r, "vcpus", 0, 100000, &vcpus)) ||
            (rc = get_num(r, "memory_gib", 1, 0, 1e6, &c->memory_gib)) ||
            (rc = get_money(r, "on_demand", 1, 0, &c->on_demand)) ||
            (rc = get_money(r, "spot", 0, 1, &c->spot)) || (rc = get_unit(r, "USD/hour")) ||
            (rc = get_str(r, "period", 1, &c->period)) || (rc = get_source(r, &c->source)))
            return rc;
        c->vcpus = (int)vcpus;
        synor_econ_device_count *dc = alloc_n(r, devs->u.arr.n, sizeof *dc, &rc);
        for (size_t k = 0; k < devs->u.arr.n && !rc; k++) {
            rec sub = *r;
            snprintf(sub.path, sizeof sub.path, "%s.devices[%zu]", r->path, k);
            sub.obj = devs->u.arr.items[k];
            int64_t cnt;
            if (synor__json_expect(r->d, sub.obj, sub.path, SYNOR__J_OBJECT) ||
                synor__json_check_keys(r->d, sub.obj, sub.path, DK))
                return SYNOR_ESCHEMA;
            if ((rc = get_profile(&sub, "profile", &dc[k].profile)) ||
                (rc = get_int(&sub, "count", 1, 1024, &cnt)))
                return rc;
            dc[k].count = (int)cnt;
        }
        c->devices = dc;
        c->n_devices = devs->u.arr.n;
        for (size_t k = 0; k < i; k++)
            if (!strcmp(s->inst[k].provider, c->provider) && !strcmp(s->inst[k].type, c->type) &&
                !strcmp(s->inst[k].region, c->region))
                return rec_fail(r, synor__json_get(r->obj, "type"), SYNOR_EEXIST, "type",
                                "%s %s in %s is listed twice", c->provider, c->type, c->region);
        s->n_inst++;
    }
    return rc;
}

/* ---------------------------------------------------------------- network */

/* A region id of regions.json, or "provider:cloud-region". */
static int get_place(const rec *r, const char *key, const char **out)
{
    int rc = get_str(r, key, 1, out);
    if (rc)
        return rc;
    const char *colon = strchr(*out, ':');
    if (colon) {
        for (const char *const *p = PROVIDERS; *p; p++)
            if (strlen(*p) == (size_t)(colon - *out) && !strncmp(*p, *out, strlen(*p)) && colon[1])
                return 0;
        return rec_fail(r, synor__json_get(r->obj, key), SYNOR_ESCHEMA, key,
                        "\"%s\" is not provider:cloud-region (aws, gcp, azure)", *out);
    }
    return get_region(r, key, out);
}

static int parse_network(rec *r, const synor__jval *root)
{
    static const char *const LK[] = {"from", "to", "rtt_ms", "source", NULL};
    static const char *const EK[] = {"provider", "scope", "first_gb_tier", "unit", "period",
                                     "source",   NULL};
    static const char *const SCOPES[] = {"internet", "inter-region", "intra-region", NULL};
    int rc;
    const synor__jval *a = array(r, root, "latency", 0, &rc);
    if (rc)
        return rc;
    synor__econ_set *s = r->s;
    size_t na = a ? a->u.arr.n : 0;
    s->lat = alloc_n(r, na, sizeof *s->lat, &rc);
    for (size_t i = 0; i < na && !rc; i++) {
        synor_econ_latency *l = &s->lat[i];
        if ((rc = rec_begin(r, "latency", i, a->u.arr.items[i], LK)) ||
            (rc = get_place(r, "from", &l->from)) || (rc = get_place(r, "to", &l->to)) ||
            (rc = get_num(r, "rtt_ms", 1, 0, 2000, &l->rtt_ms)) || (rc = get_source(r, &l->source)))
            return rc;
        s->n_lat++;
    }
    if (rc || (a = array(r, root, "egress", 0, &rc), rc) || !a)
        return rc;
    s->egress = alloc_n(r, a->u.arr.n, sizeof *s->egress, &rc);
    for (size_t i = 0; i < a->u.arr.n && !rc; i++) {
        synor_econ_egress *g = &s->egress[i];
        if ((rc = rec_begin(r, "egress", i, a->u.arr.items[i], EK)) ||
            (rc = get_enum(r, "provider", PROVIDERS, &g->provider)) ||
            (rc = get_enum(r, "scope", SCOPES, &g->scope)) ||
            (rc = get_money(r, "first_gb_tier", 1, 0, &g->first_gb_tier)) ||
            (rc = get_unit(r, "USD/GB")) || (rc = get_str(r, "period", 1, &g->period)) ||
            (rc = get_source(r, &g->source)))
            return rc;
        for (size_t k = 0; k < i; k++)
            if (!strcmp(s->egress[k].provider, g->provider) &&
                !strcmp(s->egress[k].scope, g->scope))
                return rec_fail(r, r->obj, SYNOR_EEXIST, NULL, "a second %s %s egress price",
                                g->provider, g->scope);
        s->n_egress++;
    }
    return rc;
}

/* ------------------------------------------------------------------ entry */

const char *const *synor__econ_dataset_keys(synor_econ_dataset ds)
{
    static const char *const REG[] = {"regions", NULL}, *const ELEC[] = {"prices", "hourly", NULL},
                             *const CO2[] = {"intensity", "hourly", NULL},
                             *const PUE[] = {"pue", NULL}, *const HW[] = {"hardware", NULL},
                             *const CLOUD[] = {"instances", NULL},
                             *const NET[] = {"latency", "egress", NULL};
    static const char *const *const ALL[SYNOR_ECON_DATASET_COUNT] = {REG, ELEC,  CO2, PUE,
                                                                     HW,  CLOUD, NET};
    return ALL[ds];
}

int synor__econ_records(synor__econ_set *s, const synor_catalog *cat, synor_econ_dataset ds,
                        const synor__jdoc *d, const synor__jval *root)
{
    rec r = {.s = s, .cat = cat, .d = d, .f = &s->files[ds]};
    switch (ds) {
    case SYNOR_ECON_REGIONS:
        return parse_regions(&r, root);
    case SYNOR_ECON_ELECTRICITY:
        return parse_electricity(&r, root);
    case SYNOR_ECON_CARBON:
        return parse_carbon(&r, root);
    case SYNOR_ECON_PUE:
        return parse_pue(&r, root);
    case SYNOR_ECON_HARDWARE:
        return parse_hardware(&r, root);
    case SYNOR_ECON_CLOUD:
        return parse_cloud(&r, root);
    case SYNOR_ECON_NETWORK:
        return parse_network(&r, root);
    default:
        return synor__error(SYNOR_EINVAL, "dataset %d", (int)ds);
    }
}
