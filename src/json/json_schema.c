/* json_schema.c - typed access to parsed JSON with error messages that name
 * the file, line:column, field path and offending value. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json/json.h"

int synor__json_fail(const synor__jdoc *d, const synor__jval *v, int code, const char *path,
                     const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (v)
        return synor__error(code, "%s:%d:%d: %s: %s", synor__jdoc_name(d), v->line, v->col,
                            path, msg);
    return synor__error(code, "%s: %s: %s", synor__jdoc_name(d), path, msg);
}

int synor__json_check_keys(const synor__jdoc *d, const synor__jval *obj, const char *path,
                           const char *const *allowed)
{
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        const synor__jmember *m = &obj->u.obj.m[i];
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if ((*a)[0] == m->key[0] && strcmp(*a, m->key) == 0) {
                ok = 1;
                break;
            }
        if (!ok) {
            char list[400] = "";
            size_t used = 0;
            for (const char *const *a = allowed; *a && used + 1 < sizeof list; a++) {
                int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", *a);
                if (w < 0)
                    break;
                used += (size_t)w;
            }
            return synor__error(SYNOR_ESCHEMA, "%s:%d:%d: %s: unknown field \"%s\" (allowed: %s)",
                                synor__jdoc_name(d), m->line, m->col, path, m->key, list);
        }
    }
    return 0;
}

int synor__json_expect(const synor__jdoc *d, const synor__jval *v, const char *path,
                       synor__jtype t)
{
    if (v->type == t)
        return 0;
    return synor__json_fail(d, v, SYNOR_ESCHEMA, path, "expected %s, found %s",
                            synor__jtype_name(t), synor__jtype_name(v->type));
}

int synor__json_member(const synor__jdoc *d, const synor__jval *obj, const char *path,
                       const char *key, synor__jtype t, int required, synor__jval **out)
{
    synor__jval *v = synor__json_get(obj, key);
    *out = NULL;
    if (!v) {
        if (required)
            return synor__json_fail(d, obj, SYNOR_ESCHEMA, path, "missing required field \"%s\"",
                                    key);
        return 0;
    }
    if (v->type != t) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s.%s", path, key);
        return synor__json_expect(d, v, sub, t);
    }
    *out = v;
    return 0;
}

int synor__json_number(const synor__jdoc *d, const synor__jval *v, const char *path,
                       double min, double max, double *out)
{
    if (synor__json_expect(d, v, path, SYNOR__J_NUMBER))
        return SYNOR_ESCHEMA;
    double x = v->u.n.num;
    if (!isfinite(x))
        return synor__json_fail(d, v, SYNOR_ERANGE, path, "value is not finite");
    if (x < min)
        return synor__json_fail(d, v, SYNOR_ERANGE, path, "value %g is below the minimum %g",
                                x, min);
    if (x > max)
        return synor__json_fail(d, v, SYNOR_ERANGE, path, "value %g is above the maximum %g",
                                x, max);
    *out = x;
    return 0;
}

int synor__json_int(const synor__jdoc *d, const synor__jval *v, const char *path, int64_t min,
                    int64_t max, int64_t *out)
{
    if (synor__json_expect(d, v, path, SYNOR__J_NUMBER))
        return SYNOR_ESCHEMA;
    if (!v->u.n.is_int)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, path, "expected an integer, found %g",
                                v->u.n.num);
    int64_t x = v->u.n.inum;
    if (x < min || x > max)
        return synor__json_fail(d, v, SYNOR_ERANGE, path,
                                "value %lld is outside [%lld, %lld]", (long long)x,
                                (long long)min, (long long)max);
    *out = x;
    return 0;
}
