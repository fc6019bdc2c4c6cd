/* gguf_read.c - opening a GGUF file: the header, the metadata and the
 * tensor table are validated in one pass over the mapping before anything
 * is handed out. Every count is checked against the bytes that remain
 * before it is used to allocate, every size is computed with overflow
 * checks, and every failure names the file, the key or tensor, and the
 * value that is wrong. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gguf_internal.h"

/* A cursor over the mapping; `what` names the item being read for
 * messages ("key 'general.name'", "tensor 3 'output.weight'"). */
typedef struct cur {
    const uint8_t *d;
    size_t size, pos;
    const char *path;
    char what[128];
} cur;

static size_t left(const cur *c)
{
    return c->size - c->pos;
}

static int need(cur *c, uint64_t n, const char *field)
{
    if (n > left(c))
        return synor__error(SYNOR_EPARSE,
                            "%s: %s: truncated: %s needs %" PRIu64 " bytes at offset %zu, "
                            "the file has %zu",
                            c->path, c->what, field, n, c->pos, c->size);
    return 0;
}

static int rd_u32(cur *c, uint32_t *v, const char *field)
{
    int rc = need(c, 4, field);
    if (rc)
        return rc;
    *v = synor__ld_u32(c->d + c->pos);
    c->pos += 4;
    return 0;
}

static int rd_u64(cur *c, uint64_t *v, const char *field)
{
    int rc = need(c, 8, field);
    if (rc)
        return rc;
    *v = synor__ld_u64(c->d + c->pos);
    c->pos += 8;
    return 0;
}

/* A string: its length, then that many bytes; s points into the mapping. */
static int rd_str(cur *c, const char **s, uint64_t *len, const char *field)
{
    int rc = rd_u64(c, len, field);
    if (rc)
        return rc;
    if (*len > left(c))
        return synor__error(SYNOR_EPARSE,
                            "%s: %s: %s of %" PRIu64 " bytes at offset %zu runs past the end of "
                            "the file (%zu bytes)",
                            c->path, c->what, field, *len, c->pos - 8, c->size);
    *s = (const char *)c->d + c->pos;
    c->pos += (size_t)*len;
    return 0;
}

size_t synor__gguf_vsize(uint32_t type)
{
    static const unsigned char sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < sizeof sz ? sz[type] : 0;
}

const char *synor__gguf_vtype_name(uint32_t type)
{
    static const char *const names[] = {"u8",     "i8",    "u16", "i16", "u32", "i32", "f32",
                                        "bool",   "string", "array", "u64", "i64", "f64"};
    return type < SYNOR__ARRAY_LEN(names) ? names[type] : "unknown";
}

/* ggml's type names, for the message about a type this library does not
 * read. */
static const char *ggml_type_name(uint32_t t)
{
    static const char *const names[] = {
        "F32",     "F16",    "Q4_0",    "Q4_1",  "Q4_2",   "Q4_3",  "Q5_0",   "Q5_1",
        "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",   "Q8_K",
        "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S",  "IQ4_XS",
        "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M", "BF16",   "Q4_0_4_4",
        "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0"};
    return t < SYNOR__ARRAY_LEN(names) ? names[t] : "unknown";
}

int synor_gguf_populate(const synor_gguf *g)
{
    if (!g)
        return synor__error(SYNOR_EINVAL, "synor_gguf_populate: no file");
    return synor__map_populate(&g->map, g->path);
}

int synor_gguf_drop_pages(const synor_gguf *g, const void *p, size_t n)
{
    if (!g)
        return synor__error(SYNOR_EINVAL, "synor_gguf_drop_pages: no file");
    return synor__map_drop(&g->map, g->path, p, n);
}

void synor_gguf_close(synor_gguf *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_kv; i++) {
        synor__free(g->kv[i].key);
        synor__free(g->kv[i].soff);
    }
    for (size_t i = 0; i < g->n_tensors; i++)
        synor__free_const(g->t[i].name);
    synor__free(g->kv);
    synor__free(g->kv_sorted);
    synor__free(g->t);
    synor__free(g->t_sorted);
    synor__unmap_file(&g->map);
    synor__free(g->path);
    synor__free(g);
}

/* The value of kv (its type already read). */
static int read_value(cur *c, synor__gguf_kv *kv)
{
    int rc;
    uint32_t type = kv->type;
    if (type == SYNOR_GGUF_ARRAY) {
        if ((rc = rd_u32(c, &kv->elem, "the array's element type")) ||
            (rc = rd_u64(c, &kv->n, "the array's length")))
            return rc;
        if (kv->elem == SYNOR_GGUF_ARRAY)
            return synor__error(SYNOR_EPARSE, "%s: %s: arrays of arrays are not supported",
                                c->path, c->what);
        if (kv->elem > SYNOR_GGUF_F64)
            return synor__error(SYNOR_EPARSE, "%s: %s: unknown array element type %" PRIu32,
                                c->path, c->what, kv->elem);
        kv->val = c->d + c->pos;
        size_t es = synor__gguf_vsize(kv->elem);
        /* the smallest the elements can be: a string is at least its length */
        uint64_t min;
        if (synor__mul_u64(kv->n, es ? es : 8, &min) || min > left(c))
            return synor__error(SYNOR_EPARSE,
                                "%s: %s: an array of %" PRIu64 " %s elements does not fit in "
                                "the %zu bytes left of the file",
                                c->path, c->what, kv->n, synor__gguf_vtype_name(kv->elem),
                                left(c));
        if (es) {
            if (kv->elem == SYNOR_GGUF_BOOL)
                for (uint64_t i = 0; i < kv->n; i++)
                    if (c->d[c->pos + i] > 1)
                        return synor__error(SYNOR_EPARSE,
                                            "%s: %s: element %" PRIu64 " is %u, not a bool (0 or 1)",
                                            c->path, c->what, i, c->d[c->pos + i]);
            c->pos += (size_t)min;
            return 0;
        }
        if (kv->n && !(kv->soff = synor__malloc((size_t)kv->n * sizeof *kv->soff)))
            return synor__error(SYNOR_ENOMEM, "out of memory");
        char field[48];
        for (uint64_t i = 0; i < kv->n; i++) {
            const char *s;
            uint64_t len;
            kv->soff[i] = (uint64_t)(c->d + c->pos - kv->val);
            snprintf(field, sizeof field, "string %" PRIu64, i);
            if ((rc = rd_str(c, &s, &len, field)))
                return rc;
        }
        return 0;
    }
    kv->val = c->d + c->pos;
    if (type == SYNOR_GGUF_STRING) {
        const char *s;
        uint64_t len;
        return rd_str(c, &s, &len, "the string");
    }
    size_t es = synor__gguf_vsize(type);
    if (!es)
        return synor__error(SYNOR_EPARSE, "%s: %s: unknown value type %" PRIu32, c->path,
                            c->what, type);
    if ((rc = need(c, es, "the value")))
        return rc;
    if (type == SYNOR_GGUF_BOOL && c->d[c->pos] > 1)
        return synor__error(SYNOR_EPARSE, "%s: %s: %u is not a bool (0 or 1)", c->path, c->what,
                            c->d[c->pos]);
    c->pos += es;
    return 0;
}

static int read_kv(cur *c, synor_gguf *g, size_t i)
{
    synor__gguf_kv *kv = &g->kv[i];
    const char *key;
    uint64_t len;
    int rc;
    snprintf(c->what, sizeof c->what, "key %zu", i);
    kv->raw = c->d + c->pos;
    if ((rc = rd_str(c, &key, &len, "the key")))
        return rc;
    char shown[72];
    synor__printable(key, (size_t)len, shown, sizeof shown);
    snprintf(c->what, sizeof c->what, "key '%s'", shown);
    if (len == 0)
        return synor__error(SYNOR_EPARSE, "%s: key %zu: empty key", c->path, i);
    if (memchr(key, '\0', (size_t)len))
        return synor__error(SYNOR_EPARSE, "%s: %s: the key contains a NUL byte", c->path, c->what);
    if (!(kv->key = synor__strndup(key, (size_t)len)))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    if ((rc = rd_u32(c, &kv->type, "the value type")) || (rc = read_value(c, kv)))
        return rc;
    kv->raw_len = (size_t)(c->d + c->pos - kv->raw);
    return 0;
}

static int read_tensor(cur *c, synor_gguf *g, size_t i)
{
    synor_gguf_tensor *t = &g->t[i];
    const char *name = NULL; /* rd_str sets it; gcc -O3 cannot tell */
    uint64_t len, off;
    uint32_t ndim, type;
    int rc;
    snprintf(c->what, sizeof c->what, "tensor %zu", i);
    if ((rc = rd_str(c, &name, &len, "the name")))
        return rc;
    char shown[72];
    synor__printable(name, (size_t)len, shown, sizeof shown);
    snprintf(c->what, sizeof c->what, "tensor '%s'", shown);
    if (len == 0 || len > SYNOR__GGUF_MAX_NAME)
        return synor__error(SYNOR_EPARSE, "%s: tensor %zu: a name of %" PRIu64
                            " bytes (1 to %d allowed)", c->path, i, len, SYNOR__GGUF_MAX_NAME);
    if (memchr(name, '\0', (size_t)len))
        return synor__error(SYNOR_EPARSE, "%s: %s: the name contains a NUL byte", c->path, c->what);
    if (!(t->name = synor__strndup(name, (size_t)len)))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    if ((rc = rd_u32(c, &ndim, "the number of dimensions")))
        return rc;
    if (ndim < 1 || ndim > 4)
        return synor__error(SYNOR_EPARSE, "%s: %s: %" PRIu32 " dimensions (1 to 4 allowed)",
                            c->path, c->what, ndim);
    t->ndim = ndim;
    uint64_t n = 1;
    for (unsigned d = 0; d < 4; d++) {
        t->ne[d] = 1;
        if (d >= ndim)
            continue;
        if ((rc = rd_u64(c, &t->ne[d], "a dimension")))
            return rc;
        if (t->ne[d] == 0 || t->ne[d] > INT64_MAX)
            return synor__error(SYNOR_EPARSE, "%s: %s: dimension %u is %" PRIu64, c->path,
                                c->what, d, t->ne[d]);
        if (synor__mul_u64(n, t->ne[d], &n) || n > INT64_MAX)
            return synor__error(SYNOR_EPARSE,
                                "%s: %s: %" PRIu64 " x %" PRIu64 " x ... elements overflow 63 bits",
                                c->path, c->what, t->ne[0], ndim > 1 ? t->ne[1] : 1);
    }
    if ((rc = rd_u32(c, &type, "the type")))
        return rc;
    if (!synor_ttype_name((int)type))
        return synor__error(SYNOR_ENOTSUP,
                            "%s: %s: type %" PRIu32 " (%s) is not supported (F32, F16, BF16, "
                            "Q8_0 and Q4_0 are)",
                            c->path, c->what, type, ggml_type_name(type));
    t->type = (synor_ttype)type;
    unsigned be = synor_ttype_block_elems((int)type);
    if (t->ne[0] % be != 0)
        return synor__error(SYNOR_EPARSE,
                            "%s: %s: %s rows of %" PRIu64 " elements, not a multiple of its "
                            "block of %u",
                            c->path, c->what, synor_ttype_name((int)type), t->ne[0], be);
    t->bytes = synor_ttype_bytes((int)type, n);
    if (t->bytes == 0)
        return synor__error(SYNOR_EPARSE, "%s: %s: %" PRIu64 " elements are too large", c->path,
                            c->what, n);
    if ((rc = rd_u64(c, &off, "the data offset")))
        return rc;
    if (off % g->alignment != 0)
        return synor__error(SYNOR_EPARSE,
                            "%s: %s: data offset %" PRIu64 " is not a multiple of the "
                            "alignment %zu",
                            c->path, c->what, off, g->alignment);
    /* the offset, relative to the data section, is kept here until the
     * data section's start is known */
    t->data = (const void *)(uintptr_t)off;
    return 0;
}

/* Sorted index of n items; SYNOR_EPARSE for two equal names. */
static int index_names(synor_gguf *g, size_t n, size_t **out, int tensors)
{
    if (n == 0)
        return 0;
    size_t *ix = synor__malloc(n * sizeof *ix);
    if (!ix)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        ix[i] = i;
    *out = ix;
    /* A bottom-up merge sort: qsort's comparator has no context argument
     * (a global would make two opens at once race). */
    size_t *tmp = synor__malloc(n * sizeof *tmp);
    if (!tmp)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi) {
                const char *sa = tensors ? g->t[ix[a]].name : g->kv[ix[a]].key;
                const char *sb = tensors ? g->t[ix[b]].name : g->kv[ix[b]].key;
                tmp[k++] = strcmp(sb, sa) < 0 ? ix[b++] : ix[a++];
            }
            while (a < mid)
                tmp[k++] = ix[a++];
            while (b < hi)
                tmp[k++] = ix[b++];
        }
        memcpy(ix, tmp, n * sizeof *ix);
    }
    synor__free(tmp);
    for (size_t i = 1; i < n; i++) {
        const char *sa = tensors ? g->t[ix[i - 1]].name : g->kv[ix[i - 1]].key;
        const char *sb = tensors ? g->t[ix[i]].name : g->kv[ix[i]].key;
        if (strcmp(sa, sb) == 0) {
            char shown[72];
            synor__printable(sa, strlen(sa), shown, sizeof shown);
            size_t x = ix[i - 1] < ix[i] ? ix[i - 1] : ix[i], y = ix[i - 1] ^ ix[i] ^ x;
            return synor__error(SYNOR_EPARSE, "%s: %s '%s' appears twice (%s %zu and %zu)", g->path,
                                tensors ? "tensor" : "key", shown, tensors ? "tensors" : "keys",
                                x, y);
        }
    }
    return 0;
}

static int parse(synor_gguf *g)
{
    cur c = {.d = g->map.data, .size = g->map.size, .path = g->path};
    uint64_t n_tensors, n_kv;
    uint32_t v;
    int rc;
    snprintf(c.what, sizeof c.what, "header");
    if ((rc = need(&c, 4, "the magic")))
        return rc;
    if (memcmp(c.d, SYNOR__GGUF_MAGIC, 4) != 0) {
        char shown[8];
        synor__printable((const char *)c.d, 4, shown, sizeof shown);
        return synor__error(SYNOR_EPARSE, "%s: not a GGUF file (magic '%s', expected 'GGUF')",
                            g->path, shown);
    }
    c.pos = 4;
    if ((rc = rd_u32(&c, &v, "the version")))
        return rc;
    if (v != 2 && v != 3)
        return synor__error(SYNOR_EPARSE, "%s: GGUF version %" PRIu32 " is not supported (2 and 3 are)%s",
                            g->path, v, (v & 0xffff) == 0 ? "; a big-endian file?" : "");
    g->version = v;
    if ((rc = rd_u64(&c, &n_tensors, "the tensor count")) || (rc = rd_u64(&c, &n_kv, "the key count")))
        return rc;
    /* a key takes at least 8 + 1 + 4 + 1 bytes */
    if (n_kv > left(&c) / 14)
        return synor__error(SYNOR_EPARSE,
                            "%s: header: %" PRIu64 " keys cannot fit in the %zu bytes left of the file",
                            g->path, n_kv, left(&c));
    if (n_kv && !(g->kv = synor__calloc((size_t)n_kv, sizeof *g->kv)))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < (size_t)n_kv; i++) {
        g->n_kv = i + 1; /* freed by close from here on */
        if ((rc = read_kv(&c, g, i)))
            return rc;
    }
    if ((rc = index_names(g, g->n_kv, &g->kv_sorted, 0)))
        return rc;
    g->alignment = SYNOR__GGUF_ALIGNMENT;
    int ai = synor_gguf_find(g, "general.alignment");
    if (ai >= 0) {
        const synor__gguf_kv *kv = &g->kv[ai];
        if (kv->type != SYNOR_GGUF_U32)
            return synor__error(SYNOR_EPARSE, "%s: key 'general.alignment': a %s, not a u32",
                                g->path, synor__gguf_vtype_name(kv->type));
        uint32_t a = synor__ld_u32(kv->val);
        if (a == 0 || (a & (a - 1)) != 0)
            return synor__error(SYNOR_EPARSE,
                                "%s: key 'general.alignment': %" PRIu32 " is not a power of 2",
                                g->path, a);
        g->alignment = a;
    }
    /* a tensor takes at least 8 + 1 + 4 + 8 + 4 + 8 bytes */
    snprintf(c.what, sizeof c.what, "header");
    if (n_tensors > left(&c) / 33)
        return synor__error(SYNOR_EPARSE,
                            "%s: header: %" PRIu64 " tensors cannot fit in the %zu bytes left of "
                            "the file",
                            g->path, n_tensors, left(&c));
    if (n_tensors && !(g->t = synor__calloc((size_t)n_tensors, sizeof *g->t)))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < (size_t)n_tensors; i++) {
        g->n_tensors = i + 1;
        if ((rc = read_tensor(&c, g, i)))
            return rc;
    }
    if ((rc = index_names(g, g->n_tensors, &g->t_sorted, 1)))
        return rc;
    /* the data section starts at the next multiple of the alignment; with
     * no tensors the file may end before it */
    uint64_t start = c.pos + (g->alignment - c.pos % g->alignment) % g->alignment;
    g->data_off = (size_t)start;
    for (size_t i = 0; i < g->n_tensors; i++) {
        synor_gguf_tensor *t = &g->t[i];
        uint64_t off = (uint64_t)(uintptr_t)t->data, at, end;
        if (synor__add_u64(start, off, &at) || synor__add_u64(at, t->bytes, &end) ||
            end > g->map.size) {
            char shown[72];
            synor__printable(t->name, strlen(t->name), shown, sizeof shown);
            if (at < start) /* the sum wrapped */
                return synor__error(SYNOR_EPARSE,
                                    "%s: tensor '%s': data offset %" PRIu64 " is past the end of "
                                    "the file (%zu bytes)",
                                    g->path, shown, off, g->map.size);
            return synor__error(SYNOR_EPARSE,
                                "%s: tensor '%s': data at offset %" PRIu64 " + %zu bytes runs "
                                "past the end of the file (%zu bytes)",
                                g->path, shown, at, t->bytes, g->map.size);
        }
        t->data = g->map.data + at;
    }
    return 0;
}

int synor_gguf_open(const char *path, synor_gguf **out)
{
    if (!path || !out)
        return synor__error(SYNOR_EINVAL, "synor_gguf_open: no path or no result pointer");
    synor_gguf *g = synor__calloc(1, sizeof *g);
    if (!g)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    if (!(g->path = synor__strdup(path))) {
        synor__free(g);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    int rc = synor__map_file(path, &g->map);
    if (!rc)
        rc = parse(g);
    if (rc) {
        synor_gguf_close(g);
        return rc;
    }
    *out = g;
    return 0;
}

const char *synor_gguf_path(const synor_gguf *g)
{
    return g->path;
}

uint32_t synor_gguf_version(const synor_gguf *g)
{
    return g->version;
}

size_t synor_gguf_tensor_count(const synor_gguf *g)
{
    return g->n_tensors;
}

const synor_gguf_tensor *synor_gguf_tensor_at(const synor_gguf *g, size_t i)
{
    return i < g->n_tensors ? &g->t[i] : NULL;
}

const synor_gguf_tensor *synor_gguf_tensor_find(const synor_gguf *g, const char *name)
{
    size_t lo = 0, hi = g->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const synor_gguf_tensor *t = &g->t[g->t_sorted[mid]];
        int c = strcmp(t->name, name);
        if (c == 0)
            return t;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
