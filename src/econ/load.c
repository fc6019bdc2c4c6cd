/* load.c - loading economics data files: the common header of every file
 * (dataset, version, as_of, max_age_days, notes, sources, fx), the order
 * of datasets (regions first: the others refer to them), all-or-nothing
 * replacement of the loaded set, built-in files and directories.
 *
 * A load builds a new set beside the old one and swaps it in only when
 * every file passed, so a failed load (bad value, out of memory) leaves the
 * set exactly as it was. The record formats are in records.c. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "econ/econ_internal.h"

static const char *const DATASET_NAMES[SYNOR_ECON_DATASET_COUNT] = {
    "regions", "electricity", "carbon", "pue", "hardware", "cloud", "network"};

const char *synor_econ_dataset_name(synor_econ_dataset d)
{
    return (unsigned)d < SYNOR_ECON_DATASET_COUNT ? DATASET_NAMES[d] : NULL;
}

/* ------------------------------------------------------------------ arena */

void *synor__econ_alloc(synor__econ_set *s, size_t n)
{
    const size_t head = sizeof(max_align_t);
    if (n > SIZE_MAX - head)
        return NULL;
    void **b = synor__calloc(1, head + n);
    if (!b)
        return NULL;
    *b = s->arena;
    s->arena = b;
    return (char *)b + head;
}

void synor__econ_set_free(synor__econ_set *s)
{
    if (!s)
        return;
    for (void *b = s->arena; b;) {
        void *next = *(void **)b;
        synor__free(b);
        b = next;
    }
    for (int i = 0; i < SYNOR_ECON_DATASET_COUNT; i++)
        synor__jdoc_free(s->docs[i]);
    synor__free(s);
}

/* ------------------------------------------------------------- lifecycle */

int synor_econ_create(const synor_catalog *cat, synor_econ **out)
{
    if (!cat || !out)
        return synor__error(SYNOR_EINVAL, "synor_econ_create: NULL argument");
    synor_econ *e = synor__calloc(1, sizeof *e);
    synor__econ_set *s = synor__calloc(1, sizeof *s);
    if (!e || !s) {
        synor__free(e);
        synor__free(s);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    e->cat = cat;
    e->set = s;
    *out = e;
    return 0;
}

void synor_econ_destroy(synor_econ *e)
{
    if (!e)
        return;
    synor__econ_set_free(e->set);
    synor__free(e);
}

const synor_econ_file *synor_econ_file_of(const synor_econ *e, synor_econ_dataset d)
{
    if (!e || (unsigned)d >= SYNOR_ECON_DATASET_COUNT || !e->set->has[d]) {
        synor__error(SYNOR_ENOENT, "no %s data loaded (%s.json)",
                     synor_econ_dataset_name(d) ? synor_econ_dataset_name(d) : "such",
                     synor_econ_dataset_name(d) ? synor_econ_dataset_name(d) : "?");
        return NULL;
    }
    return &e->set->files[d];
}

/* ---------------------------------------------------------------- header */

static const char *const SOURCE_KEYS[] = {"title",   "publisher", "url",   "published", "retrieved",
                                          "licence", "license",   "notes", NULL};

static int str_member(const synor__jdoc *d, const synor__jval *obj, const char *path,
                      const char *key, int required, const char **out)
{
    synor__jval *v;
    int rc = synor__json_member(d, obj, path, key, SYNOR__J_STRING, required, &v);
    if (rc)
        return rc;
    *out = v ? v->u.str.s : NULL;
    if (v && required && !v->u.str.len) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s.%s", path, key);
        return synor__json_fail(d, v, SYNOR_ESCHEMA, sub, "must not be empty");
    }
    return 0;
}

static int date_member(const synor__jdoc *d, const synor__jval *obj, const char *path,
                       const char *key, int required, const char **str, int64_t *day)
{
    int rc = str_member(d, obj, path, key, required, str);
    if (rc || !*str)
        return rc;
    if (synor_econ_date_parse(*str, day)) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s.%s", path, key);
        return synor__json_fail(d, synor__json_get(obj, key), SYNOR_ESCHEMA, sub,
                                "\"%s\" is not a calendar date YYYY-MM-DD", *str);
    }
    return 0;
}

static int parse_sources(synor__econ_set *s, synor_econ_file *f, const synor__jdoc *d,
                         const synor__jval *obj)
{
    size_t n = obj->u.obj.n;
    if (!n)
        return synor__json_fail(d, obj, SYNOR_ESCHEMA, "sources", "must name at least one source");
    synor_econ_source *src = synor__econ_alloc(s, n * sizeof *src);
    if (!src)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const synor__jmember *m = &obj->u.obj.m[i];
        char path[160];
        snprintf(path, sizeof path, "sources.%.100s", m->key);
        if (synor__json_expect(d, m->val, path, SYNOR__J_OBJECT) ||
            synor__json_check_keys(d, m->val, path, SOURCE_KEYS))
            return SYNOR_ESCHEMA;
        synor_econ_source *o = &src[i];
        int64_t day;
        const char *lic2 = NULL;
        o->key = m->key;
        int rc = str_member(d, m->val, path, "title", 1, &o->title);
        if (!rc)
            rc = str_member(d, m->val, path, "publisher", 1, &o->publisher);
        if (!rc)
            rc = str_member(d, m->val, path, "url", 1, &o->url);
        if (!rc)
            rc = str_member(d, m->val, path, "published", 0, &o->published);
        if (!rc)
            rc = date_member(d, m->val, path, "retrieved", 1, &o->retrieved, &day);
        if (!rc)
            rc = str_member(d, m->val, path, "licence", 0, &o->licence);
        if (!rc)
            rc = str_member(d, m->val, path, "license", 0, &lic2);
        if (rc)
            return rc;
        if (!o->licence)
            o->licence = lic2;
        if (strncmp(o->url, "https://", 8) != 0 && strncmp(o->url, "http://", 7) != 0)
            return synor__json_fail(d, synor__json_get(m->val, "url"), SYNOR_ESCHEMA, path,
                                    "url \"%s\" is not an http(s) address", o->url);
    }
    f->sources = src;
    f->n_sources = n;
    return 0;
}

static int check_fx(const synor_econ_file *f, const synor__jdoc *d, const synor__jval *fx)
{
    static const char *const FX_KEYS[] = {"usd_per_unit", "date", "source", "notes", NULL};
    for (size_t i = 0; i < fx->u.obj.n; i++) {
        const synor__jmember *m = &fx->u.obj.m[i];
        char path[64];
        snprintf(path, sizeof path, "fx.%.20s", m->key);
        const char *k = m->key;
        if (strlen(k) != 3 || k[0] < 'A' || k[0] > 'Z' || k[1] < 'A' || k[1] > 'Z' || k[2] < 'A' ||
            k[2] > 'Z')
            return synor__json_fail(d, m->val, SYNOR_ESCHEMA, "fx",
                                    "\"%s\" is not an ISO 4217 currency code", k);
        if (synor__json_expect(d, m->val, path, SYNOR__J_OBJECT) ||
            synor__json_check_keys(d, m->val, path, FX_KEYS))
            return SYNOR_ESCHEMA;
        synor__jval *v;
        int64_t micro, day;
        const char *str;
        char sub[96];
        int rc = synor__json_member(d, m->val, path, "usd_per_unit", SYNOR__J_STRING, 1, &v);
        snprintf(sub, sizeof sub, "%s.usd_per_unit", path);
        if (rc || (rc = synor__econ_money(d, v, sub, &micro)))
            return rc;
        if (micro == 0)
            return synor__json_fail(d, v, SYNOR_ERANGE, sub, "a rate of 0");
        if ((rc = date_member(d, m->val, path, "date", 1, &str, &day)) ||
            (rc = str_member(d, m->val, path, "source", 1, &str)))
            return rc;
        if (!synor_econ_source_find(f, str))
            return synor__json_fail(d, synor__json_get(m->val, "source"), SYNOR_ESCHEMA, path,
                                    "source \"%s\" is not a key of \"sources\"", str);
    }
    return 0;
}

static const char *const HEADER_KEYS[] = {"dataset", "version", "as_of", "max_age_days",
                                          "notes",   "sources", "fx"};

/* The header of a parsed file; its dataset in *ds. */
static int parse_header(synor__econ_set *s, const synor__jdoc *d, synor_econ_dataset *ds)
{
    const synor__jval *root = synor__jdoc_root(d);
    if (synor__json_expect(d, root, "(root)", SYNOR__J_OBJECT))
        return SYNOR_ESCHEMA;
    const char *name;
    int rc = str_member(d, root, "(root)", "dataset", 1, &name);
    if (rc)
        return rc;
    int k = 0;
    while (k < SYNOR_ECON_DATASET_COUNT && strcmp(DATASET_NAMES[k], name) != 0)
        k++;
    if (k == SYNOR_ECON_DATASET_COUNT)
        return synor__json_fail(d, synor__json_get(root, "dataset"), SYNOR_ESCHEMA, "dataset",
                                "unknown dataset \"%s\" (known: regions, electricity, carbon, "
                                "pue, hardware, cloud, network)",
                                name);
    *ds = (synor_econ_dataset)k;
    if (s->has[k])
        return synor__json_fail(d, root, SYNOR_EEXIST, "dataset",
                                "a second \"%s\" file (the first was %s)", name, s->files[k].name);
    const char *allowed[16];
    size_t na = 0;
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(HEADER_KEYS); i++)
        allowed[na++] = HEADER_KEYS[i];
    for (const char *const *x = synor__econ_dataset_keys(*ds); *x; x++)
        allowed[na++] = *x;
    allowed[na] = NULL;
    if ((rc = synor__json_check_keys(d, root, "(root)", allowed)))
        return rc;

    synor_econ_file *f = &s->files[k];
    memset(f, 0, sizeof *f);
    f->dataset = *ds;
    f->name = synor__jdoc_name(d);
    synor__jval *v;
    int64_t x;
    if ((rc = synor__json_member(d, root, "(root)", "version", SYNOR__J_NUMBER, 1, &v)) ||
        (rc = synor__json_int(d, v, "version", 1, 1, &x)))
        return rc;
    f->version = (int)x;
    if ((rc = date_member(d, root, "(root)", "as_of", 1, &f->as_of, &f->as_of_day)) ||
        (rc = synor__json_member(d, root, "(root)", "max_age_days", SYNOR__J_NUMBER, 1, &v)) ||
        (rc = synor__json_int(d, v, "max_age_days", 1, 36500, &f->max_age_days)) ||
        (rc = str_member(d, root, "(root)", "notes", 1, &f->notes)) ||
        (rc = synor__json_member(d, root, "(root)", "sources", SYNOR__J_OBJECT, 1, &v)) ||
        (rc = parse_sources(s, f, d, v)) ||
        (rc = synor__json_member(d, root, "(root)", "fx", SYNOR__J_OBJECT, 0, &v)))
        return rc;
    if (v && (rc = check_fx(f, d, v)))
        return rc;
    return 0;
}

/* ------------------------------------------------------------------ loads */

int synor_econ_load_texts(synor_econ *e, size_t n, const char *const *names,
                          const char *const *texts, const size_t *lens)
{
    if (!e || (n && (!names || !texts || !lens)))
        return synor__error(SYNOR_EINVAL, "synor_econ_load_texts: NULL argument");
    synor__econ_set *s = synor__calloc(1, sizeof *s);
    if (!s)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    int rc = 0;
    synor__jdoc *extra = NULL;
    for (size_t i = 0; i < n && !rc; i++) {
        synor__jdoc *d = NULL;
        synor_econ_dataset ds = SYNOR_ECON_REGIONS;
        if (!names[i] || !texts[i]) {
            rc = synor__error(SYNOR_EINVAL, "synor_econ_load_texts: file %zu is NULL", i);
            break;
        }
        if ((rc = synor__json_parse(texts[i], lens[i], names[i], &d)))
            break;
        if ((rc = parse_header(s, d, &ds))) {
            extra = d;
            break;
        }
        s->docs[ds] = d;
        s->has[ds] = 1;
    }
    synor__jdoc_free(extra);
    /* regions first: every other dataset refers to them */
    for (int k = 0; k < SYNOR_ECON_DATASET_COUNT && !rc; k++)
        if (s->has[k])
            rc = synor__econ_records(s, e->cat, (synor_econ_dataset)k, s->docs[k],
                                     synor__jdoc_root(s->docs[k]));
    if (rc) {
        synor__econ_set_free(s);
        return rc;
    }
    synor__econ_set_free(e->set);
    e->set = s;
    return 0;
}

struct synor__builtin_file {
    const char *name;
    const char *text;
    size_t len;
};
extern const struct synor__builtin_file synor__builtin_economics[];
extern const size_t synor__builtin_economics_count;

size_t synor_econ_builtin_count(void)
{
    return synor__builtin_economics_count;
}

int synor_econ_load_builtin(synor_econ *e)
{
    enum { MAX = 32 };
    const char *names[MAX], *texts[MAX];
    char name_buf[MAX][80];
    size_t lens[MAX], n = synor__builtin_economics_count;
    if (n > MAX)
        return synor__error(SYNOR_ERANGE, "%zu built-in economics files (at most %d)", n, MAX);
    for (size_t i = 0; i < n; i++) {
        snprintf(name_buf[i], sizeof name_buf[i], "builtin:%s", synor__builtin_economics[i].name);
        names[i] = name_buf[i];
        texts[i] = synor__builtin_economics[i].text;
        lens[i] = synor__builtin_economics[i].len;
    }
    return synor_econ_load_texts(e, n, names, texts, lens);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int synor_econ_load_dir(synor_econ *e, const char *dir)
{
    enum { MAX = 32 };
    if (!e || !dir)
        return synor__error(SYNOR_EINVAL, "synor_econ_load_dir: NULL argument");
    DIR *dh = opendir(dir);
    if (!dh)
        return synor__error(SYNOR_EIO, "%s: cannot open the economics data directory", dir);
    char *paths[MAX];
    char *texts[MAX];
    size_t lens[MAX], n = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(dh))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || de->d_name[0] == '.')
            continue;
        if (n == MAX) {
            rc = synor__error(SYNOR_ERANGE, "%s: more than %d .json files", dir, MAX);
            break;
        }
        size_t pl = strlen(dir) + l + 2;
        if (!(paths[n] = synor__malloc(pl))) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            break;
        }
        snprintf(paths[n], pl, "%s/%s", dir, de->d_name);
        n++;
    }
    closedir(dh);
    if (!rc)
        qsort(paths, n, sizeof *paths, cmp_str);
    size_t nt = 0;
    for (; nt < n && !rc; nt++)
        if ((rc = synor__read_file(paths[nt], &texts[nt], &lens[nt])))
            break;
    if (!rc)
        rc = synor_econ_load_texts(e, n, (const char *const *)paths, (const char *const *)texts,
                                   lens);
    for (size_t i = 0; i < nt; i++)
        synor__free(texts[i]);
    for (size_t i = 0; i < n; i++)
        synor__free(paths[i]);
    return rc;
}
