/* gguf_meta.c - the metadata of an open GGUF file: lookups by key (a
 * binary search of the index built at open) and typed getters that
 * convert between number types only where the value survives. */
#include <inttypes.h>
#include <string.h>

#include "model/gguf_internal.h"

size_t synor_gguf_kv_count(const synor_gguf *g)
{
    return g->n_kv;
}

const char *synor_gguf_kv_key(const synor_gguf *g, size_t i)
{
    return i < g->n_kv ? g->kv[i].key : NULL;
}

synor_gguf_vtype synor_gguf_kv_type(const synor_gguf *g, size_t i)
{
    return i < g->n_kv ? (synor_gguf_vtype)g->kv[i].type : (synor_gguf_vtype)-1;
}

int synor_gguf_find(const synor_gguf *g, const char *key)
{
    size_t lo = 0, hi = g->n_kv;
    if (!key)
        return -1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, i = g->kv_sorted[mid];
        int c = strcmp(g->kv[i].key, key);
        if (c == 0)
            return i <= INT32_MAX ? (int)i : -1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int lookup(const synor_gguf *g, const char *key, const synor__gguf_kv **out)
{
    int i = synor_gguf_find(g, key);
    if (i < 0)
        return synor__error(SYNOR_ENOENT, "%s: no key '%s'", g->path, key ? key : "(null)");
    *out = &g->kv[i];
    return 0;
}

/* A number of any GGUF number type, read from p. */
typedef struct num {
    int kind; /* 0: not a number, 1: integer, 2: float */
    int neg;  /* integers: below zero (then i holds it, else u) */
    uint64_t u;
    int64_t i;
    double f;
} num;

static num load_num(uint32_t type, const uint8_t *p)
{
    num n = {0, 0, 0, 0, 0.0};
    int64_t s = 0;
    int is_signed = 0;
    switch (type) {
    case SYNOR_GGUF_U8: n.u = p[0]; break;
    case SYNOR_GGUF_I8: s = (int8_t)p[0], is_signed = 1; break;
    case SYNOR_GGUF_U16: {
        uint16_t v;
        memcpy(&v, p, 2);
        n.u = v;
        break;
    }
    case SYNOR_GGUF_I16: {
        int16_t v;
        memcpy(&v, p, 2);
        s = v, is_signed = 1;
        break;
    }
    case SYNOR_GGUF_U32: n.u = synor__ld_u32(p); break;
    case SYNOR_GGUF_I32: s = synor__ld_i32(p), is_signed = 1; break;
    case SYNOR_GGUF_U64: n.u = synor__ld_u64(p); break;
    case SYNOR_GGUF_I64: memcpy(&s, p, 8), is_signed = 1; break;
    case SYNOR_GGUF_F32: {
        float f;
        memcpy(&f, p, 4);
        n.kind = 2, n.f = f;
        return n;
    }
    case SYNOR_GGUF_F64: memcpy(&n.f, p, 8), n.kind = 2; return n;
    default: return n;
    }
    n.kind = 1;
    if (is_signed && s < 0)
        n.neg = 1, n.i = s;
    else
        n.u = is_signed ? (uint64_t)s : n.u;
    return n;
}

static double num_f(num n)
{
    return n.kind == 2 ? n.f : n.neg ? (double)n.i : (double)n.u;
}

static int not_a(const synor_gguf *g, const char *key, uint32_t type, const char *want)
{
    return synor__error(SYNOR_ESCHEMA, "%s: key '%s': a %s, not %s", g->path, key,
                        synor__gguf_vtype_name(type), want);
}

int synor_gguf_get_u32(const synor_gguf *g, const char *key, uint32_t *out)
{
    const synor__gguf_kv *kv = NULL;
    int rc = lookup(g, key, &kv);
    if (rc)
        return rc;
    num n = load_num(kv->type, kv->val);
    if (n.kind != 1)
        return not_a(g, key, kv->type, "an integer");
    if (n.neg || n.u > UINT32_MAX)
        return synor__error(SYNOR_ESCHEMA, "%s: key '%s': %s%" PRIu64 " does not fit in a u32",
                            g->path, key, n.neg ? "-" : "", n.neg ? 0 - (uint64_t)n.i : n.u);
    *out = (uint32_t)n.u;
    return 0;
}

int synor_gguf_get_f32(const synor_gguf *g, const char *key, float *out)
{
    const synor__gguf_kv *kv = NULL;
    int rc = lookup(g, key, &kv);
    if (rc)
        return rc;
    num n = load_num(kv->type, kv->val);
    if (n.kind == 0)
        return not_a(g, key, kv->type, "a number");
    *out = (float)num_f(n);
    return 0;
}

int synor_gguf_get_str(const synor_gguf *g, const char *key, const char **s, size_t *len)
{
    const synor__gguf_kv *kv = NULL;
    int rc = lookup(g, key, &kv);
    if (rc)
        return rc;
    if (kv->type != SYNOR_GGUF_STRING)
        return not_a(g, key, kv->type, "a string");
    *len = (size_t)synor__ld_u64(kv->val);
    *s = (const char *)kv->val + 8;
    return 0;
}

int synor_gguf_get_arr(const synor_gguf *g, const char *key, synor_gguf_vtype *elem, size_t *n)
{
    const synor__gguf_kv *kv = NULL;
    int rc = lookup(g, key, &kv);
    if (rc)
        return rc;
    if (kv->type != SYNOR_GGUF_ARRAY)
        return not_a(g, key, kv->type, "an array");
    *elem = (synor_gguf_vtype)kv->elem;
    *n = (size_t)kv->n; /* fits: the elements are in the mapping */
    return 0;
}

/* Element i of the array under key, whose element type must satisfy ok. */
static int element(const synor_gguf *g, const char *key, size_t i, const char *want,
                   int (*ok)(uint32_t), const synor__gguf_kv **out)
{
    const synor__gguf_kv *kv = NULL;
    int rc = lookup(g, key, &kv);
    if (rc)
        return rc;
    if (kv->type != SYNOR_GGUF_ARRAY)
        return not_a(g, key, kv->type, "an array");
    if (!ok(kv->elem))
        return synor__error(SYNOR_ESCHEMA, "%s: key '%s': an array of %s, not of %s", g->path,
                            key, synor__gguf_vtype_name(kv->elem), want);
    if (i >= kv->n)
        return synor__error(SYNOR_ERANGE, "%s: key '%s': element %zu of an array of %" PRIu64,
                            g->path, key, i, kv->n);
    *out = kv;
    return 0;
}

static int is_string(uint32_t t)
{
    return t == SYNOR_GGUF_STRING;
}

static int is_number(uint32_t t)
{
    return synor__gguf_vsize(t) && t != SYNOR_GGUF_BOOL;
}

static int is_integer(uint32_t t)
{
    return is_number(t) && t != SYNOR_GGUF_F32 && t != SYNOR_GGUF_F64;
}

int synor_gguf_arr_str(const synor_gguf *g, const char *key, size_t i, const char **s, size_t *len)
{
    const synor__gguf_kv *kv = NULL;
    int rc = element(g, key, i, "strings", is_string, &kv);
    if (rc)
        return rc;
    const uint8_t *p = kv->val + kv->soff[i];
    *len = (size_t)synor__ld_u64(p);
    *s = (const char *)p + 8;
    return 0;
}

int synor_gguf_arr_f32(const synor_gguf *g, const char *key, size_t i, float *out)
{
    const synor__gguf_kv *kv = NULL;
    int rc = element(g, key, i, "numbers", is_number, &kv);
    if (rc)
        return rc;
    *out = (float)num_f(load_num(kv->elem, kv->val + i * synor__gguf_vsize(kv->elem)));
    return 0;
}

int synor_gguf_arr_i64(const synor_gguf *g, const char *key, size_t i, int64_t *out)
{
    const synor__gguf_kv *kv = NULL;
    int rc = element(g, key, i, "integers", is_integer, &kv);
    if (rc)
        return rc;
    num n = load_num(kv->elem, kv->val + i * synor__gguf_vsize(kv->elem));
    if (!n.neg && n.u > INT64_MAX)
        return synor__error(SYNOR_ESCHEMA, "%s: key '%s': element %zu, %" PRIu64
                            ", does not fit in an i64", g->path, key, i, n.u);
    *out = n.neg ? n.i : (int64_t)n.u;
    return 0;
}
