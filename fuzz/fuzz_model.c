/* fuzz_model.c - model files: every input is written to a file and opened
 * both as GGUF (synor_gguf_open) and as a llama2.c checkpoint
 * (synor_l2c_open).
 *
 * Contract checked: a rejected file gives a known code (EPARSE, or ENOTSUP
 * for a GGUF tensor type) with a message naming the file, and *out
 * untouched; an accepted GGUF file answers every getter on every key and
 * every array element, its tensors lie inside the file, and written back
 * through the writer (copy_kv and add_tensor) it opens again with the same
 * keys, values and tensor bytes; an accepted checkpoint hands out every
 * weight of every layer, inside the file. Opening is deterministic, and a
 * failed allocation anywhere in an open is SYNOR_ENOMEM with nothing leaked,
 * or the same result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "synor/model.h"

static char path[64], path2[72];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    snprintf(path, sizeof path, "/tmp/synor-fuzz-model-%ld.bin", (long)getpid());
    snprintf(path2, sizeof path2, "%s.out", path);
    return 0;
}

static void spit(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f, "cannot write %s", path);
    FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size, "cannot write %s", path);
    fclose(f);
}

/* A digest of everything the getters answer, to compare two opens. */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t gguf_digest(const synor_gguf *g)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < synor_gguf_kv_count(g); i++) {
        const char *k = synor_gguf_kv_key(g, i), *s;
        size_t n, len;
        uint32_t u;
        float f;
        int64_t iv;
        synor_gguf_vtype et;
        FUZZ_CHECK(synor_gguf_find(g, k) == (int)i, "key %zu not found by its name", i);
        h = mix(h, k, strlen(k) + 1);
        if (!synor_gguf_get_u32(g, k, &u))
            h = mix(h, &u, 4);
        if (!synor_gguf_get_f32(g, k, &f))
            h = mix(h, &f, 4);
        if (!synor_gguf_get_str(g, k, &s, &len))
            h = mix(h, s, len);
        if (synor_gguf_get_arr(g, k, &et, &n))
            continue;
        for (size_t j = 0; j < n; j++) {
            if (!synor_gguf_arr_str(g, k, j, &s, &len))
                h = mix(h, s, len);
            if (!synor_gguf_arr_f32(g, k, j, &f))
                h = mix(h, &f, 4);
            if (!synor_gguf_arr_i64(g, k, j, &iv))
                h = mix(h, &iv, 8);
        }
        FUZZ_CHECK(synor_gguf_arr_str(g, k, n, &s, &len) != 0, "element past the end");
    }
    for (size_t i = 0; i < synor_gguf_tensor_count(g); i++) {
        const synor_gguf_tensor *t = synor_gguf_tensor_at(g, i);
        FUZZ_CHECK(synor_gguf_tensor_find(g, t->name) == t, "tensor %zu not found", i);
        uint64_t n = 1;
        for (unsigned d = 0; d < t->ndim; d++)
            n *= t->ne[d];
        FUZZ_CHECK(t->bytes == synor_ttype_bytes(t->type, n), "tensor %zu: size", i);
        h = mix(h, t->name, strlen(t->name));
        h = mix(h, t->ne, sizeof t->ne);
        h = mix(h, t->data, t->bytes); /* ASan: inside the mapping, or a fault */
    }
    return h;
}

static void check_gguf(const uint8_t *data, size_t size)
{
    synor_gguf *g = FUZZ_UNTOUCHED(synor_gguf);
    fuzz_alloc_count_start();
    int rc = synor_gguf_open(path, &g);
    long allocs = fuzz_alloc_count_stop();
    if (rc) {
        FUZZ_CHECK(rc == SYNOR_EPARSE || rc == SYNOR_ENOTSUP, "GGUF: %s", synor_err_name(rc));
        FUZZ_CHECK(g == FUZZ_UNTOUCHED(synor_gguf), "a failed open set *out");
        fuzz_check_error(rc, 0, path, data, size);
        return;
    }
    uint64_t h = gguf_digest(g);

    /* the same file again, with one allocation failing */
    synor_gguf *g2 = FUZZ_UNTOUCHED(synor_gguf);
    fuzz_alloc_fail_one(data, size, allocs);
    int rc2 = synor_gguf_open(path, &g2);
    int hit = fuzz_alloc_disarm();
    if (rc2) {
        FUZZ_CHECK(hit, "a second open failed: %s", synor_errmsg());
        fuzz_check_error(rc2, 1, path, data, size);
        FUZZ_CHECK(g2 == FUZZ_UNTOUCHED(synor_gguf), "a failed open set *out");
    } else {
        FUZZ_CHECK(gguf_digest(g2) == h, "two opens differ");
        synor_gguf_close(g2);
    }

    /* written back: the same keys, values and tensors */
    synor_gguf_writer *w;
    FUZZ_CHECK(!synor_gguf_writer_create(&w), "writer");
    FUZZ_CHECK(!synor_gguf_writer_copy_kv(w, g, NULL), "copy_kv: %s", synor_errmsg());
    for (size_t i = 0; i < synor_gguf_tensor_count(g); i++) {
        const synor_gguf_tensor *t = synor_gguf_tensor_at(g, i);
        FUZZ_CHECK(!synor_gguf_writer_add_tensor(w, t->name, t->type, t->ndim, t->ne, t->data),
                   "add_tensor: %s", synor_errmsg());
    }
    FUZZ_CHECK(!synor_gguf_writer_save(w, path2), "save: %s", synor_errmsg());
    synor_gguf_writer_destroy(w);
    FUZZ_CHECK(!synor_gguf_open(path2, &g2), "the written file does not open: %s",
               synor_errmsg());
    FUZZ_CHECK(gguf_digest(g2) == h, "the written file differs");
    synor_gguf_close(g2);
    unlink(path2);
    synor_gguf_close(g);
}

static uint64_t l2c_digest(const synor_l2c *m)
{
    const synor_l2c_config *c = synor_l2c_config_get(m);
    uint64_t h = mix(14695981039346656037ull, c, sizeof *c);
    for (int w = SYNOR_L2C_TOKEN_EMBD; w <= SYNOR_L2C_WCLS; w++)
        for (int l = 0; l < c->n_layers; l++) {
            synor_l2c_tensor t;
            FUZZ_CHECK(!synor_l2c_tensor_get(m, (synor_l2c_weight)w, l, &t), "weight %d", w);
            FUZZ_CHECK(t.n > 0 && (t.f32 != NULL) != (t.q != NULL), "weight %d: no data", w);
            /* the first and last element of each array */
            if (t.f32)
                h = mix(mix(h, t.f32, 4), t.f32 + t.n - 1, 4);
            else
                h = mix(mix(mix(h, t.q, 1), t.q + t.n - 1, 1), t.s + t.n / (uint64_t)c->group_size - 1, 4);
            if (w == SYNOR_L2C_TOKEN_EMBD || w == SYNOR_L2C_RMS_FINAL || w == SYNOR_L2C_WCLS)
                break;
        }
    return h;
}

static void check_l2c(const uint8_t *data, size_t size)
{
    synor_l2c *m = FUZZ_UNTOUCHED(synor_l2c);
    fuzz_alloc_count_start();
    int rc = synor_l2c_open(path, &m);
    long allocs = fuzz_alloc_count_stop();
    if (rc) {
        FUZZ_CHECK(rc == SYNOR_EPARSE, "l2c: %s", synor_err_name(rc));
        FUZZ_CHECK(m == FUZZ_UNTOUCHED(synor_l2c), "a failed open set *out");
        fuzz_check_error(rc, 0, path, data, size);
        return;
    }
    uint64_t h = l2c_digest(m);
    synor_l2c *m2 = FUZZ_UNTOUCHED(synor_l2c);
    fuzz_alloc_fail_one(data, size, allocs);
    int rc2 = synor_l2c_open(path, &m2);
    int hit = fuzz_alloc_disarm();
    if (rc2) {
        FUZZ_CHECK(hit, "a second open failed: %s", synor_errmsg());
        fuzz_check_error(rc2, 1, path, data, size);
    } else {
        FUZZ_CHECK(l2c_digest(m2) == h, "two opens differ");
        synor_l2c_close(m2);
    }
    synor_l2c_close(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    spit(data, size);
    check_gguf(data, size);
    check_l2c(data, size);
    unlink(path);
    return 0;
}
