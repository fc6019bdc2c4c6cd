/* gguf_write.c - writing GGUF version 3: metadata records are serialised
 * as they are added (so a copied record is the source's bytes), tensors are
 * copied, and save streams header, tensor table and data (each tensor
 * padded to the alignment, as llama.cpp lays files out) into a temporary
 * file renamed over the target. Every add either succeeds whole or leaves
 * the writer as it was. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model/gguf_internal.h"

typedef struct wtensor {
    char *name;
    synor_ttype type;
    unsigned ndim;
    uint64_t ne[4];
    void *data;
    size_t bytes;
} wtensor;

struct synor_gguf_writer {
    uint8_t *kv; /* the serialised records */
    size_t kv_len, kv_cap;
    char **keys;
    size_t n_kv, keys_cap;
    wtensor *t;
    size_t n_t, t_cap;
    uint32_t alignment;
};

int synor_gguf_writer_create(synor_gguf_writer **out)
{
    if (!out)
        return synor__error(SYNOR_EINVAL, "synor_gguf_writer_create: no result pointer");
    synor_gguf_writer *w = synor__calloc(1, sizeof *w);
    if (!w)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    w->alignment = SYNOR__GGUF_ALIGNMENT;
    *out = w;
    return 0;
}

void synor_gguf_writer_destroy(synor_gguf_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_kv; i++)
        synor__free(w->keys[i]);
    for (size_t i = 0; i < w->n_t; i++) {
        synor__free(w->t[i].name);
        synor__free(w->t[i].data);
    }
    synor__free(w->keys);
    synor__free(w->t);
    synor__free(w->kv);
    synor__free(w);
}

/* Room for `more` items of size sz in *arr (capacity *cap, n used). */
static int grow(void **arr, size_t *cap, size_t n, size_t more, size_t sz)
{
    if (more <= *cap - n)
        return 0;
    size_t want = *cap ? *cap : 8;
    while (want - n < more) {
        if (want > SIZE_MAX / 2 / sz)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        want *= 2;
    }
    void *p = synor__realloc(*arr, want * sz);
    if (!p)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    *arr = p;
    *cap = want;
    return 0;
}

static int has_key(const synor_gguf_writer *w, const char *key)
{
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->keys[i], key) == 0)
            return 1;
    return 0;
}

static int check_key(const synor_gguf_writer *w, const char *key)
{
    if (!w || !key || !key[0])
        return synor__error(SYNOR_EINVAL, "GGUF writer: no writer or an empty key");
    if (has_key(w, key))
        return synor__error(SYNOR_EEXIST, "GGUF writer: key '%s' added twice", key);
    return 0;
}

/* The record key, type, then the value parts v[0..nv) of lens l, added as
 * one piece. */
static int add_record(synor_gguf_writer *w, const char *key, uint32_t type, size_t nv,
                      const void *const *v, const size_t *l)
{
    int rc = check_key(w, key);
    if (rc)
        return rc;
    if (strcmp(key, "general.alignment") == 0) {
        uint32_t a = 0;
        if (type == SYNOR_GGUF_U32)
            memcpy(&a, v[0], 4);
        if (type != SYNOR_GGUF_U32 || a == 0 || (a & (a - 1)) != 0)
            return synor__error(SYNOR_EINVAL,
                                "GGUF writer: general.alignment must be a u32 power of 2");
    }
    uint64_t klen = strlen(key), total = 8 + klen + 4;
    for (size_t i = 0; i < nv; i++)
        if (synor__add_u64(total, l[i], &total) || total > SIZE_MAX / 2)
            return synor__error(SYNOR_ENOMEM, "out of memory");
    char *kcopy = synor__strdup(key);
    if (!kcopy || (rc = grow((void **)&w->keys, &w->keys_cap, w->n_kv, 1, sizeof *w->keys)) ||
        (rc = grow((void **)&w->kv, &w->kv_cap, w->kv_len, (size_t)total, 1))) {
        synor__free(kcopy);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    uint8_t *p = w->kv + w->kv_len;
    memcpy(p, &klen, 8);
    memcpy(p + 8, key, (size_t)klen);
    memcpy(p + 8 + klen, &type, 4);
    p += 12 + klen;
    for (size_t i = 0; i < nv; i++) {
        if (l[i])
            memcpy(p, v[i], l[i]);
        p += l[i];
    }
    w->kv_len += (size_t)total;
    w->keys[w->n_kv++] = kcopy;
    if (strcmp(key, "general.alignment") == 0)
        memcpy(&w->alignment, v[0], 4);
    return 0;
}

int synor_gguf_writer_add_u32(synor_gguf_writer *w, const char *key, uint32_t v)
{
    const void *p[] = {&v};
    size_t l[] = {4};
    return add_record(w, key, SYNOR_GGUF_U32, 1, p, l);
}

int synor_gguf_writer_add_f32(synor_gguf_writer *w, const char *key, float v)
{
    const void *p[] = {&v};
    size_t l[] = {4};
    return add_record(w, key, SYNOR_GGUF_F32, 1, p, l);
}

int synor_gguf_writer_add_str(synor_gguf_writer *w, const char *key, const char *v)
{
    if (!v)
        return synor__error(SYNOR_EINVAL, "GGUF writer: key '%s': no string", key ? key : "");
    uint64_t len = strlen(v);
    const void *p[] = {&len, v};
    size_t l[] = {8, (size_t)len};
    return add_record(w, key, SYNOR_GGUF_STRING, 2, p, l);
}

/* An array of n fixed-size elements. */
static int add_array(synor_gguf_writer *w, const char *key, uint32_t elem, size_t n,
                     const void *v, size_t es)
{
    if (n && !v)
        return synor__error(SYNOR_EINVAL, "GGUF writer: key '%s': no elements", key ? key : "");
    if (n > SIZE_MAX / 2 / es)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    uint64_t count = n;
    const void *p[] = {&elem, &count, v};
    size_t l[] = {4, 8, n * es};
    return add_record(w, key, SYNOR_GGUF_ARRAY, 3, p, l);
}

int synor_gguf_writer_add_f32_array(synor_gguf_writer *w, const char *key, size_t n,
                                    const float *v)
{
    return add_array(w, key, SYNOR_GGUF_F32, n, v, 4);
}

int synor_gguf_writer_add_i32_array(synor_gguf_writer *w, const char *key, size_t n,
                                    const int32_t *v)
{
    return add_array(w, key, SYNOR_GGUF_I32, n, v, 4);
}

int synor_gguf_writer_add_str_array(synor_gguf_writer *w, const char *key, size_t n,
                                    const char *const *v, const size_t *lens)
{
    if (n && !v)
        return synor__error(SYNOR_EINVAL, "GGUF writer: key '%s': no strings", key ? key : "");
    int rc = check_key(w, key);
    if (rc)
        return rc;
    /* the value serialised into one block, then added as one part */
    uint64_t total = 12;
    for (size_t i = 0; i < n; i++) {
        if (!v[i])
            return synor__error(SYNOR_EINVAL, "GGUF writer: key '%s': string %zu is NULL", key, i);
        if (synor__add_u64(total, 8 + (uint64_t)(lens ? lens[i] : strlen(v[i])), &total) ||
            total > SIZE_MAX / 2)
            return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    uint8_t *blk = synor__malloc((size_t)total);
    if (!blk)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    uint32_t elem = SYNOR_GGUF_STRING;
    uint64_t count = n;
    memcpy(blk, &elem, 4);
    memcpy(blk + 4, &count, 8);
    size_t at = 12;
    for (size_t i = 0; i < n; i++) {
        uint64_t len = lens ? lens[i] : strlen(v[i]);
        memcpy(blk + at, &len, 8);
        if (len)
            memcpy(blk + at + 8, v[i], (size_t)len);
        at += 8 + (size_t)len;
    }
    const void *p[] = {blk};
    size_t l[] = {at};
    rc = add_record(w, key, SYNOR_GGUF_ARRAY, 1, p, l);
    synor__free(blk);
    return rc;
}

static int skipped(const char *key, const char *const *skip)
{
    for (; skip && *skip; skip++)
        if (strcmp(*skip, key) == 0)
            return 1;
    return 0;
}

int synor_gguf_writer_copy_kv(synor_gguf_writer *w, const synor_gguf *g, const char *const *skip)
{
    if (!w || !g)
        return synor__error(SYNOR_EINVAL, "synor_gguf_writer_copy_kv: no writer or no file");
    size_t n = 0, bytes = 0;
    for (size_t i = 0; i < g->n_kv; i++) {
        if (skipped(g->kv[i].key, skip))
            continue;
        if (has_key(w, g->kv[i].key))
            return synor__error(SYNOR_EEXIST, "GGUF writer: key '%s' (from %s) added twice",
                                g->kv[i].key, g->path);
        n++;
        bytes += g->kv[i].raw_len; /* fits: the records are in one mapping */
    }
    if (n == 0)
        return 0;
    char **copies = synor__calloc(n, sizeof *copies);
    int rc = copies ? 0 : SYNOR_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < g->n_kv && !rc; i++)
        if (!skipped(g->kv[i].key, skip) && !(copies[k++] = synor__strdup(g->kv[i].key)))
            rc = SYNOR_ENOMEM;
    if (!rc)
        rc = grow((void **)&w->keys, &w->keys_cap, w->n_kv, n, sizeof *w->keys);
    if (!rc)
        rc = grow((void **)&w->kv, &w->kv_cap, w->kv_len, bytes, 1);
    if (rc) {
        for (size_t i = 0; copies && i < n; i++)
            synor__free(copies[i]);
        synor__free(copies);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    k = 0;
    for (size_t i = 0; i < g->n_kv; i++) {
        const synor__gguf_kv *kv = &g->kv[i];
        if (skipped(kv->key, skip))
            continue;
        memcpy(w->kv + w->kv_len, kv->raw, kv->raw_len);
        w->kv_len += kv->raw_len;
        w->keys[w->n_kv++] = copies[k++];
        if (strcmp(kv->key, "general.alignment") == 0) /* validated at open: a u32 power of 2 */
            w->alignment = synor__ld_u32(kv->val);
    }
    synor__free(copies);
    return 0;
}

int synor_gguf_writer_add_tensor(synor_gguf_writer *w, const char *name, synor_ttype type,
                                 unsigned ndim, const uint64_t *ne, const void *data)
{
    if (!w || !name || !ne)
        return synor__error(SYNOR_EINVAL, "synor_gguf_writer_add_tensor: missing argument");
    size_t len = strlen(name);
    if (len == 0 || len > SYNOR__GGUF_MAX_NAME)
        return synor__error(SYNOR_EINVAL,
                            "GGUF writer: tensor '%s': a name of %zu bytes (1 to %d allowed)",
                            name, len, SYNOR__GGUF_MAX_NAME);
    for (size_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return synor__error(SYNOR_EEXIST, "GGUF writer: tensor '%s' added twice", name);
    if (!synor_ttype_name((int)type))
        return synor__error(SYNOR_EINVAL, "GGUF writer: tensor '%s': unsupported type %d", name,
                            (int)type);
    if (ndim < 1 || ndim > 4)
        return synor__error(SYNOR_EINVAL, "GGUF writer: tensor '%s': %u dimensions (1 to 4)",
                            name, ndim);
    uint64_t n = 1;
    for (unsigned d = 0; d < ndim; d++)
        if (ne[d] == 0 || ne[d] > INT64_MAX || synor__mul_u64(n, ne[d], &n) || n > INT64_MAX)
            return synor__error(SYNOR_EINVAL, "GGUF writer: tensor '%s': dimension %u is %" PRIu64
                                " (positive, at most 2^63 elements in all)", name, d, ne[d]);
    unsigned be = synor_ttype_block_elems((int)type);
    if (ne[0] % be != 0)
        return synor__error(SYNOR_EINVAL,
                            "GGUF writer: tensor '%s': %s rows of %" PRIu64
                            " elements, not a multiple of its block of %u",
                            name, synor_ttype_name((int)type), ne[0], be);
    size_t bytes = synor_ttype_bytes((int)type, n);
    if (bytes == 0 || !data)
        return synor__error(SYNOR_EINVAL, "GGUF writer: tensor '%s': no data, or too large",
                            name);
    wtensor t = {.type = type, .ndim = ndim, .bytes = bytes};
    for (unsigned d = 0; d < 4; d++)
        t.ne[d] = d < ndim ? ne[d] : 1;
    t.name = synor__strdup(name);
    t.data = synor__malloc(bytes);
    if (!t.name || !t.data || grow((void **)&w->t, &w->t_cap, w->n_t, 1, sizeof *w->t)) {
        synor__free(t.name);
        synor__free(t.data);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    memcpy(t.data, data, bytes);
    w->t[w->n_t++] = t;
    return 0;
}

static uint64_t pad(uint64_t x, uint64_t a)
{
    return (a - x % a) % a;
}

int synor_gguf_writer_save(synor_gguf_writer *w, const char *path)
{
    if (!w || !path)
        return synor__error(SYNOR_EINVAL, "synor_gguf_writer_save: no writer or no path");
    /* tensor offsets first: they must all fit before anything is written */
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++)
        if (synor__add_u64(off, w->t[i].bytes, &off) ||
            synor__add_u64(off, pad(off, w->alignment), &off))
            return synor__error(SYNOR_EINVAL, "%s: the tensors exceed 2^64 bytes", path);
    synor__afile f;
    int rc = synor__afile_open(&f, path);
    if (rc)
        return rc;
    uint32_t version = 3;
    uint64_t nt = w->n_t, nkv = w->n_kv;
    synor__afile_write(&f, SYNOR__GGUF_MAGIC, 4);
    synor__afile_write(&f, &version, 4);
    synor__afile_write(&f, &nt, 8);
    synor__afile_write(&f, &nkv, 8);
    if (w->kv_len)
        synor__afile_write(&f, w->kv, w->kv_len);
    off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        uint64_t len = strlen(t->name);
        uint32_t ndim = t->ndim, type = (uint32_t)t->type;
        synor__afile_write(&f, &len, 8);
        synor__afile_write(&f, t->name, (size_t)len);
        synor__afile_write(&f, &ndim, 4);
        synor__afile_write(&f, t->ne, 8 * (size_t)ndim);
        synor__afile_write(&f, &type, 4);
        synor__afile_write(&f, &off, 8);
        off += t->bytes + pad(t->bytes, w->alignment); /* checked above */
    }
    synor__afile_zeros(&f, (size_t)pad(f.written, w->alignment));
    for (size_t i = 0; i < w->n_t; i++) {
        synor__afile_write(&f, w->t[i].data, w->t[i].bytes);
        synor__afile_zeros(&f, (size_t)pad(w->t[i].bytes, w->alignment));
    }
    return synor__afile_commit(&f);
}
