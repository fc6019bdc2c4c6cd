/* catalog.c - the profile catalog: built-in profiles embedded at build time
 * (cmake/embed_profiles.cmake) plus user files that add or replace profiles.
 *
 * Loading is staged: a file is parsed and validated into a staging list
 * first, capacity is reserved, and only then is the catalog changed, by
 * steps that cannot fail. So a bad file, or an allocation failure, leaves the
 * catalog exactly as it was. Replaced profiles move to a graveyard and stay
 * valid until the catalog is destroyed, so pointers callers hold never
 * dangle. */
#include <stdio.h>
#include <string.h>

#include "profile/profile_internal.h"

struct synor__builtin_file {
    const char *name;
    const char *text;
    size_t len;
};
extern const struct synor__builtin_file synor__builtin_profiles[];
extern const size_t synor__builtin_profiles_count;

typedef struct plist {
    synor_profile **v;
    size_t n, cap;
} plist;

struct synor_catalog {
    plist live;
    plist graveyard;
};

static int plist_reserve(plist *l, size_t extra)
{
    if (l->n + extra <= l->cap)
        return 0;
    size_t cap = l->cap ? l->cap : 16;
    while (cap < l->n + extra)
        cap *= 2;
    synor_profile **v = synor__realloc(l->v, cap * sizeof *v);
    if (!v)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    l->v = v;
    l->cap = cap;
    return 0;
}

static void plist_free_all(plist *l)
{
    for (size_t i = 0; i < l->n; i++)
        synor__profile_free(l->v[i]);
    synor__free(l->v);
    memset(l, 0, sizeof *l);
}

int synor_catalog_create(synor_catalog **out)
{
    if (!out)
        return synor__error(SYNOR_EINVAL, "synor_catalog_create: out is NULL");
    synor_catalog *c = synor__calloc(1, sizeof *c);
    if (!c)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    *out = c;
    return 0;
}

void synor_catalog_destroy(synor_catalog *cat)
{
    if (!cat)
        return;
    plist_free_all(&cat->live);
    plist_free_all(&cat->graveyard);
    synor__free(cat);
}

/* Parses one profile file into the staging list; checks ids are unique
 * within everything staged so far. */
static int stage_text(plist *stage, const char *text, size_t len, const char *name,
                      const char *origin)
{
    synor__jdoc *d;
    int rc = synor__json_parse(text, len, name, &d);
    if (rc)
        return rc;
    const synor__jval *root = synor__jdoc_root(d);
    static const char *const keys[] = {"format", "profiles", NULL};
    synor__jval *fmt, *arr;
    if ((rc = synor__json_expect(d, root, "(top level)", SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, root, "(top level)", keys)) ||
        (rc = synor__json_member(d, root, "(top level)", "format", SYNOR__J_STRING, 1, &fmt)) ||
        (rc = synor__json_member(d, root, "(top level)", "profiles", SYNOR__J_ARRAY, 1, &arr)))
        goto out;
    if (strcmp(fmt->u.str.s, "synor-profiles/1") != 0) {
        rc = synor__json_fail(d, fmt, SYNOR_ESCHEMA, "format",
                              "unsupported format \"%s\" (expected \"synor-profiles/1\")",
                              fmt->u.str.s);
        goto out;
    }
    size_t base = stage->n;
    for (size_t i = 0; i < arr->u.arr.n; i++) {
        char path[64];
        snprintf(path, sizeof path, "profiles[%zu]", i);
        synor_profile *p;
        if ((rc = plist_reserve(stage, 1)))
            goto out;
        if ((rc = synor__profile_parse(d, arr->u.arr.items[i], path, origin, &p)))
            goto out;
        for (size_t j = 0; j < stage->n; j++) {
            if (strcmp(stage->v[j]->id, p->id) == 0) {
                const synor__jval *idv = synor__json_get(arr->u.arr.items[i], "id");
                char where[80];
                if (j >= base)
                    snprintf(where, sizeof where, "profiles[%zu] of this file", j - base);
                else
                    snprintf(where, sizeof where, "%s", stage->v[j]->origin);
                rc = synor__json_fail(d, idv, SYNOR_EEXIST, path,
                                      "duplicate profile id \"%s\" (also in %s)", p->id, where);
                synor__profile_free(p);
                goto out;
            }
        }
        stage->v[stage->n++] = p;
    }
out:
    synor__jdoc_free(d);
    return rc;
}

/* Moves every staged profile into the catalog. Reserves first; after that
 * nothing can fail. */
static int commit(synor_catalog *cat, plist *stage)
{
    int rc;
    if ((rc = plist_reserve(&cat->live, stage->n)) ||
        (rc = plist_reserve(&cat->graveyard, stage->n)))
        return rc;
    for (size_t i = 0; i < stage->n; i++) {
        synor_profile *p = stage->v[i];
        size_t j;
        for (j = 0; j < cat->live.n; j++)
            if (strcmp(cat->live.v[j]->id, p->id) == 0)
                break;
        if (j < cat->live.n) {
            cat->graveyard.v[cat->graveyard.n++] = cat->live.v[j];
            cat->live.v[j] = p;
        } else {
            cat->live.v[cat->live.n++] = p;
        }
    }
    synor__free(stage->v);
    memset(stage, 0, sizeof *stage);
    return 0;
}

int synor_catalog_load_builtin(synor_catalog *cat)
{
    if (!cat)
        return synor__error(SYNOR_EINVAL, "synor_catalog_load_builtin: catalog is NULL");
    plist stage = {0};
    int rc = 0;
    for (size_t i = 0; i < synor__builtin_profiles_count && !rc; i++) {
        const struct synor__builtin_file *f = &synor__builtin_profiles[i];
        char origin[128];
        snprintf(origin, sizeof origin, "builtin:profiles/%s", f->name);
        rc = stage_text(&stage, f->text, f->len, origin, origin);
    }
    if (!rc)
        rc = commit(cat, &stage);
    if (rc)
        plist_free_all(&stage);
    return rc;
}

int synor_catalog_load_string(synor_catalog *cat, const char *text, size_t len, const char *name)
{
    if (!cat || !text || !name)
        return synor__error(SYNOR_EINVAL, "synor_catalog_load_string: NULL argument");
    plist stage = {0};
    int rc = stage_text(&stage, text, len, name, name);
    if (!rc)
        rc = commit(cat, &stage);
    if (rc)
        plist_free_all(&stage);
    return rc;
}

int synor_catalog_load_file(synor_catalog *cat, const char *path)
{
    if (!cat || !path)
        return synor__error(SYNOR_EINVAL, "synor_catalog_load_file: NULL argument");
    char *text;
    size_t len;
    int rc = synor__read_file(path, &text, &len);
    if (rc)
        return rc;
    rc = synor_catalog_load_string(cat, text, len, path);
    synor__free(text);
    return rc;
}

size_t synor_catalog_count(const synor_catalog *cat) { return cat ? cat->live.n : 0; }

const synor_profile *synor_catalog_at(const synor_catalog *cat, size_t i)
{
    return cat && i < cat->live.n ? cat->live.v[i] : NULL;
}

const synor_profile *synor_catalog_find(const synor_catalog *cat, const char *id)
{
    if (cat && id)
        for (size_t i = 0; i < cat->live.n; i++)
            if (strcmp(cat->live.v[i]->id, id) == 0)
                return cat->live.v[i];
    synor__error(SYNOR_ENOENT, "no profile with id \"%s\"", id ? id : "(null)");
    return NULL;
}

const synor_profile *synor_catalog_match(const synor_catalog *cat, synor_kind kind,
                                         const char *device_name)
{
    const synor_profile *best = NULL;
    size_t best_len = 0;
    if (!cat || !device_name)
        return NULL;
    for (size_t i = 0; i < cat->live.n; i++) {
        const synor_profile *p = cat->live.v[i];
        if (p->type.kind != kind)
            continue;
        for (size_t m = 0; m < p->n_match; m++) {
            size_t l = strlen(p->match[m]);
            if (l > best_len && synor__strcasestr(device_name, p->match[m])) {
                best = p;
                best_len = l;
            }
        }
    }
    return best;
}
