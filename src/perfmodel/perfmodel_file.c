/* perfmodel_file.c - performance model files (format synor-perfmodel/1,
 * docs/RUNTIME.md "Performance models"): reading with positions in every
 * message, writing, and the atomic save.
 *
 * Loading is all-or-nothing: the whole document is parsed and checked and
 * every entry is built outside the model first; only then are the entries
 * put in, which cannot fail (synor__pm_commit). So a malformed file or an
 * allocation failure leaves the model as it was. */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json/json.h"
#include "perfmodel/perfmodel_internal.h"

/* Samples an entry in a file may list (the newest SYNOR__PM_W are kept). */
#define MAX_FILE_SAMPLES 65536

/* ------------------------------------------------------------------ read */

typedef struct staged {
    synor__pm_entry *e;
    const synor__jval *at; /* the entry's object, for messages */
    size_t idx;            /* its index in "entries" */
} staged;

static int parse_name(const synor__jdoc *d, const synor__jval *v, const char *path)
{
    if (v->u.str.len == 0)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, path, "must not be empty");
    if (strlen(v->u.str.s) != v->u.str.len)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, path, "contains a NUL character");
    return 0;
}

static int parse_footprint(const synor__jdoc *d, const synor__jval *v, const char *path,
                           uint64_t *out)
{
    const char *s = v->u.str.s;
    size_t n = v->u.str.len;
    uint64_t x = 0;
    int ok = n >= 1 && n <= 16;
    for (size_t i = 0; ok && i < n; i++) {
        char c = s[i];
        unsigned dig;
        if (c >= '0' && c <= '9')
            dig = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            dig = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            dig = (unsigned)(c - 'A' + 10);
        else {
            ok = 0;
            break;
        }
        x = (x << 4) | dig;
    }
    if (!ok)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, path,
                                "\"%s\" is not 1 to 16 hexadecimal digits", s);
    *out = x;
    return 0;
}

static int parse_entry(const synor__jdoc *d, const synor__jval *o, size_t idx,
                       synor__pm_entry **out)
{
    static const char *const keys[] = {"op",  "device", "footprint", "count",   "mean",
                                       "stddev", "min", "max",       "samples", NULL};
    char path[64], p[96];
    snprintf(path, sizeof path, "entries[%zu]", idx);
    synor__jval *op, *dev, *fpv, *cnt, *mean, *sd, *mn, *mx, *smp;
    int rc;
    if ((rc = synor__json_expect(d, o, path, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, o, path, keys)) ||
        (rc = synor__json_member(d, o, path, "op", SYNOR__J_STRING, 1, &op)) ||
        (rc = synor__json_member(d, o, path, "device", SYNOR__J_STRING, 1, &dev)) ||
        (rc = synor__json_member(d, o, path, "footprint", SYNOR__J_STRING, 1, &fpv)) ||
        (rc = synor__json_member(d, o, path, "count", SYNOR__J_NUMBER, 1, &cnt)) ||
        (rc = synor__json_member(d, o, path, "mean", SYNOR__J_NUMBER, 1, &mean)) ||
        (rc = synor__json_member(d, o, path, "stddev", SYNOR__J_NUMBER, 1, &sd)) ||
        (rc = synor__json_member(d, o, path, "min", SYNOR__J_NUMBER, 1, &mn)) ||
        (rc = synor__json_member(d, o, path, "max", SYNOR__J_NUMBER, 1, &mx)) ||
        (rc = synor__json_member(d, o, path, "samples", SYNOR__J_ARRAY, 1, &smp)))
        return rc;
    uint64_t fp = 0;
    snprintf(p, sizeof p, "%s.op", path);
    if ((rc = parse_name(d, op, p)))
        return rc;
    snprintf(p, sizeof p, "%s.device", path);
    if ((rc = parse_name(d, dev, p)))
        return rc;
    snprintf(p, sizeof p, "%s.footprint", path);
    if ((rc = parse_footprint(d, fpv, p, &fp)))
        return rc;
    size_t ns = smp->u.arr.n;
    snprintf(p, sizeof p, "%s.samples", path);
    if (ns == 0)
        return synor__json_fail(d, smp, SYNOR_ESCHEMA, p, "an entry needs at least one sample");
    if (ns > MAX_FILE_SAMPLES)
        return synor__json_fail(d, smp, SYNOR_ERANGE, p, "%zu samples; at most %d", ns,
                                MAX_FILE_SAMPLES);
    int64_t count = 0;
    double vmean = 0, vsd = 0, vmin = 0, vmax = 0;
    snprintf(p, sizeof p, "%s.count", path);
    if ((rc = synor__json_int(d, cnt, p, (int64_t)ns, (int64_t)SYNOR__PM_MAX_COUNT, &count)))
        return rc;
    snprintf(p, sizeof p, "%s.mean", path);
    if ((rc = synor__json_number(d, mean, p, 0, DBL_MAX, &vmean)))
        return rc;
    snprintf(p, sizeof p, "%s.stddev", path);
    if ((rc = synor__json_number(d, sd, p, 0, DBL_MAX, &vsd)))
        return rc;
    snprintf(p, sizeof p, "%s.min", path);
    if ((rc = synor__json_number(d, mn, p, 0, DBL_MAX, &vmin)))
        return rc;
    snprintf(p, sizeof p, "%s.max", path);
    if ((rc = synor__json_number(d, mx, p, 0, DBL_MAX, &vmax)))
        return rc;
    if (vmax < vmin)
        return synor__json_fail(d, mx, SYNOR_ERANGE, p, "max %.17g is below min %.17g", vmax,
                                vmin);
    /* Only the newest SYNOR__PM_W samples are kept, but all are checked. */
    double win[SYNOR__PM_W];
    size_t skip = ns > SYNOR__PM_W ? ns - SYNOR__PM_W : 0;
    for (size_t k = 0; k < ns; k++) {
        const synor__jval *v = smp->u.arr.items[k];
        double x;
        snprintf(p, sizeof p, "%s.samples[%zu]", path, k);
        if ((rc = synor__json_number(d, v, p, 0, DBL_MAX, &x)))
            return rc;
        if (x < vmin || x > vmax)
            return synor__json_fail(d, v, SYNOR_ERANGE, p,
                                    "sample %.17g is outside [min, max] = [%.17g, %.17g]", x,
                                    vmin, vmax);
        if (k >= skip)
            win[k - skip] = x;
    }
    synor__pm_entry *e = synor__pm_entry_new(op->u.str.s, fp, dev->u.str.s);
    if (!e)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    e->count = (uint64_t)count;
    e->mean = vmean;
    e->m2 = count > 1 ? vsd * vsd * (double)(count - 1) : 0;
    e->min = vmin;
    e->max = vmax;
    synor__pm_window_set(e, win, ns - skip);
    *out = e;
    return 0;
}

static int cmp_staged(const void *a, const void *b)
{
    const staged *x = a, *y = b;
    int c = synor__pm_key_cmp(x->e, y->e);
    if (c)
        return c;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void free_staged(staged *st, size_t n)
{
    for (size_t i = 0; i < n; i++)
        synor__free(st[i].e);
    synor__free(st);
}

/* Checks the document and builds its entries, outside any model. */
static int parse_doc(const synor__jdoc *d, staged **out, size_t *nout)
{
    static const char *const keys[] = {"format", "entries", NULL};
    const synor__jval *root = synor__jdoc_root(d);
    synor__jval *fmt, *ents;
    int rc;
    if ((rc = synor__json_expect(d, root, "(root)", SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, root, "(root)", keys)) ||
        (rc = synor__json_member(d, root, "(root)", "format", SYNOR__J_STRING, 1, &fmt)))
        return rc;
    if (strcmp(fmt->u.str.s, SYNOR_PERFMODEL_FORMAT) != 0)
        return synor__json_fail(d, fmt, SYNOR_ESCHEMA, "format",
                                "unsupported format \"%s\" (this library reads \"%s\")",
                                fmt->u.str.s, SYNOR_PERFMODEL_FORMAT);
    if ((rc = synor__json_member(d, root, "(root)", "entries", SYNOR__J_ARRAY, 1, &ents)))
        return rc;
    size_t n = ents->u.arr.n;
    staged *st = synor__calloc(n ? n : 1, sizeof *st);
    if (!st)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        st[i].at = ents->u.arr.items[i];
        st[i].idx = i;
        if ((rc = parse_entry(d, st[i].at, i, &st[i].e))) {
            free_staged(st, i);
            return rc;
        }
    }
    /* The same key twice in one file is an error, reported at the later. */
    if (n > 1) {
        qsort(st, n, sizeof *st, cmp_staged);
        for (size_t i = 1; i < n; i++)
            if (synor__pm_key_cmp(st[i - 1].e, st[i].e) == 0) {
                char path[64];
                snprintf(path, sizeof path, "entries[%zu]", st[i].idx);
                rc = synor__json_fail(d, st[i].at, SYNOR_EEXIST, path,
                                      "a second entry for op \"%s\", device \"%s\", footprint "
                                      "%016" PRIx64 " (the first is entries[%zu])",
                                      st[i].e->op, st[i].e->dev, st[i].e->fp, st[i - 1].idx);
                free_staged(st, n);
                return rc;
            }
    }
    *out = st;
    *nout = n;
    return 0;
}

int synor_perfmodel_load_string(synor_perfmodel *pm, const char *text, size_t len,
                                const char *name)
{
    if (!pm || !text || !name)
        return synor__error(SYNOR_EINVAL, "synor_perfmodel_load_string: NULL argument");
    synor__jdoc *d;
    int rc = synor__json_parse(text, len, name, &d);
    if (rc)
        return rc;
    staged *st = NULL;
    size_t n = 0;
    rc = parse_doc(d, &st, &n);
    synor__jdoc_free(d);
    if (rc)
        return rc;
    /* Nothing below can fail. */
    for (size_t i = 0; i < n; i++)
        if (synor__pm_commit(pm, st[i].e))
            st[i].e = NULL; /* now owned by the model */
    free_staged(st, n);
    return 0;
}

int synor_perfmodel_load(synor_perfmodel *pm, const char *path)
{
    if (!pm || !path)
        return synor__error(SYNOR_EINVAL, "synor_perfmodel_load: NULL argument");
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)
        return 0; /* no model yet: nothing to load */
    char *text;
    size_t len;
    int rc = synor__read_file(path, &text, &len);
    if (rc)
        return rc;
    rc = synor_perfmodel_load_string(pm, text, len, path);
    synor__free(text);
    return rc;
}

/* ----------------------------------------------------------------- write */

/* The shortest of %.15g, %.16g, %.17g that reads back as the same double. */
static void put_num(synor__buf *b, double x)
{
    char s[40];
    if (!isfinite(x)) /* only statistics of absurd samples overflow */
        x = DBL_MAX;
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, x);
        if (strtod(s, NULL) == x)
            break;
    }
    synor__buf_puts(b, s);
}

char *synor_perfmodel_to_json(const synor_perfmodel *pm)
{
    synor__pm_entry *v;
    size_t n;
    if (synor__pm_snapshot(pm, &v, &n))
        return NULL;
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b, "{\n  \"format\": \"%s\",\n  \"entries\": [", SYNOR_PERFMODEL_FORMAT);
    for (size_t i = 0; i < n; i++) {
        const synor__pm_entry *e = &v[i];
        synor__buf_puts(&b, i ? ",\n    {\n      \"op\": " : "\n    {\n      \"op\": ");
        synor__json_escape(&b, e->op);
        synor__buf_puts(&b, ", \"device\": ");
        synor__json_escape(&b, e->dev);
        synor__buf_printf(&b, ", \"footprint\": \"%016" PRIx64 "\",\n      \"count\": %" PRIu64,
                          e->fp, e->count);
        synor__buf_puts(&b, ", \"mean\": ");
        put_num(&b, e->mean);
        synor__buf_puts(&b, ", \"stddev\": ");
        put_num(&b, e->count > 1 && e->m2 > 0 ? sqrt(e->m2 / (double)(e->count - 1)) : 0);
        synor__buf_puts(&b, ", \"min\": ");
        put_num(&b, e->min);
        synor__buf_puts(&b, ", \"max\": ");
        put_num(&b, e->max);
        synor__buf_puts(&b, ",\n      \"samples\": [");
        for (unsigned k = 0; k < e->n; k++) {
            if (k)
                synor__buf_puts(&b, k % 8 ? ", " : ",\n        ");
            put_num(&b, e->ring[(e->pos + SYNOR__PM_W - e->n + k) % SYNOR__PM_W]);
        }
        synor__buf_puts(&b, "]\n    }");
    }
    synor__buf_puts(&b, n ? "\n  ]\n}\n" : "]\n}\n");
    synor__free(v);
    char *s = synor__buf_take(&b);
    if (!s)
        synor__error(SYNOR_ENOMEM, "out of memory");
    return s;
}

/* ------------------------------------------------------------------ save */

/* mkdir -p dir, new directories with mode 0700. dir is modified and
 * restored. */
int synor_perfmodel_save(const synor_perfmodel *pm, const char *path)
{
    if (!pm || !path || !path[0])
        return synor__error(SYNOR_EINVAL, "synor_perfmodel_save: no path");
    char *text = synor_perfmodel_to_json(pm);
    if (!text)
        return SYNOR_ENOMEM;
    int rc = synor__write_file_atomic(path, text, strlen(text));
    synor__free(text);
    return rc;
}
