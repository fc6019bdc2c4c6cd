/* test_gguf.c - GGUF files: the writer's output read back (every metadata
 * type, every tensor type, byte for byte, aligned), files built by hand
 * byte by byte (independent of the writer), and corrupt or truncated files
 * rejected with the error and the name they should carry. */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "synor/error.h"
#include "synor/model.h"
#include "test.h"

static char dir[64];
static const char *tmp(const char *leaf)
{
    static char p[4][128];
    static int k;
    if (!dir[0]) {
        strcpy(dir, "/tmp/synor-gguf-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, leaf);
    return p[k];
}

static void spit(const char *path, const void *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (len)
        fwrite(b, 1, len, f);
    fclose(f);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len + 1);
    if (fread(b, 1, *len, f) != *len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

/* ---- a byte builder for hand-made files ---- */

typedef struct bb {
    unsigned char b[1 << 16];
    size_t n;
} bb;

static void put(bb *b, const void *p, size_t n)
{
    memcpy(b->b + b->n, p, n);
    b->n += n;
}
static void u32(bb *b, uint32_t v) { put(b, &v, 4); }
static void u64(bb *b, uint64_t v) { put(b, &v, 8); }
static void str(bb *b, const char *s)
{
    u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void pad_to(bb *b, size_t a)
{
    while (b->n % a)
        b->b[b->n++] = 0;
}

static void header(bb *b, uint64_t nt, uint64_t nkv)
{
    b->n = 0;
    put(b, "GGUF", 4);
    u32(b, 3);
    u64(b, nt);
    u64(b, nkv);
}

/* a tensor's info: name, dims, type, offset */
static void tinfo(bb *b, const char *name, uint32_t ndim, const uint64_t *ne, uint32_t type,
                  uint64_t off)
{
    str(b, name);
    u32(b, ndim);
    for (uint32_t i = 0; i < ndim; i++)
        u64(b, ne[i]);
    u32(b, type);
    u64(b, off);
}

static int open_rc(const void *bytes, size_t n, synor_gguf **out)
{
    const char *p = tmp("h.gguf");
    spit(p, bytes, n);
    synor_gguf *g = NULL;
    int rc = synor_gguf_open(p, &g);
    if (out)
        *out = g;
    else
        synor_gguf_close(g);
    return rc;
}

/* ---- writer round trip ---- */

/* Saves w as path, destroys w and opens the file: NULL where saving or
 * opening failed. */
static synor_gguf *save_and_open(synor_gguf_writer *w, const char *path)
{
    synor_gguf *g = NULL;
    int e = synor_gguf_writer_save(w, path);
    synor_gguf_writer_destroy(w);
    if (!e && synor_gguf_open(path, &g))
        g = NULL;
    return g;
}

TEST(writer_round_trip)
{
    synor_gguf_writer *w = NULL;
    ASSERT_OK(synor_gguf_writer_create(&w));
    ASSERT_OK(synor_gguf_writer_add_str(w, "general.architecture", "llama"));
    ASSERT_OK(synor_gguf_writer_add_u32(w, "general.alignment", 64));
    ASSERT_OK(synor_gguf_writer_add_u32(w, "llama.block_count", 7));
    ASSERT_OK(synor_gguf_writer_add_f32(w, "llama.rope.freq_base", 10000.5f));
    const char *toks[] = {"<s>", "", "a\0b", "\xe2\x96\x81the"};
    size_t lens[] = {3, 0, 3, 6};
    ASSERT_OK(synor_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", 4, toks, lens));
    const char *merges[] = {"a b", "ab c"};
    ASSERT_OK(synor_gguf_writer_add_str_array(w, "tokenizer.ggml.merges", 2, merges, NULL));
    float scores[] = {0.0f, -1.5f, 2.25f, -1e30f};
    ASSERT_OK(synor_gguf_writer_add_f32_array(w, "tokenizer.ggml.scores", 4, scores));
    int32_t tt[] = {3, 1, -7, INT32_MAX};
    ASSERT_OK(synor_gguf_writer_add_i32_array(w, "tokenizer.ggml.token_type", 4, tt));
    ASSERT_OK(synor_gguf_writer_add_i32_array(w, "empty", 0, NULL));
    /* the adds that must fail leave the writer as it was */
    ASSERT_EQ(synor_gguf_writer_add_u32(w, "llama.block_count", 8), SYNOR_EEXIST);
    ASSERT_CONTAINS(synor_errmsg(), "'llama.block_count' added twice");
    ASSERT_EQ(synor_gguf_writer_add_f32(w, "", 1), SYNOR_EINVAL);

    /* one tensor of each type, with ragged shapes */
    float f[5 * 3];
    for (int i = 0; i < 15; i++)
        f[i] = (float)i * 0.25f - 1;
    uint64_t ne_f32[] = {5, 3}, ne_f16[] = {8}, ne_q8[] = {64, 2}, ne_q4[] = {32, 1, 2},
             ne_bf[] = {3, 1, 1, 2};
    uint16_t h[8];
    for (int i = 0; i < 8; i++)
        h[i] = synor_f32_to_f16((float)i / 3);
    float src[128];
    for (int i = 0; i < 128; i++)
        src[i] = sinf((float)i);
    unsigned char q8[4 * 34], q4[2 * 18];
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q8_0, src, q8, 128));
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q4_0, src, q4, 64));
    uint16_t bf[6] = {0x3f80, 0xbf80, 0x7f80, 0x0001, 0x4049, 0};
    ASSERT_OK(synor_gguf_writer_add_tensor(w, "a.f32", SYNOR_TTYPE_F32, 2, ne_f32, f));
    ASSERT_OK(synor_gguf_writer_add_tensor(w, "b.f16", SYNOR_TTYPE_F16, 1, ne_f16, h));
    ASSERT_OK(synor_gguf_writer_add_tensor(w, "c.q8", SYNOR_TTYPE_Q8_0, 2, ne_q8, q8));
    ASSERT_OK(synor_gguf_writer_add_tensor(w, "d.q4", SYNOR_TTYPE_Q4_0, 3, ne_q4, q4));
    ASSERT_OK(synor_gguf_writer_add_tensor(w, "e.bf16", SYNOR_TTYPE_BF16, 4, ne_bf, bf));
    ASSERT_EQ(synor_gguf_writer_add_tensor(w, "a.f32", SYNOR_TTYPE_F32, 2, ne_f32, f), SYNOR_EEXIST);
    uint64_t ne_bad[] = {33, 1};
    ASSERT_EQ(synor_gguf_writer_add_tensor(w, "x", SYNOR_TTYPE_Q8_0, 2, ne_bad, q8), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "rows of 33 elements");
    ASSERT_EQ(synor_gguf_writer_add_tensor(w, "x", SYNOR_TTYPE_F32, 5, ne_bad, f), SYNOR_EINVAL);
    ne_bad[1] = 0;
    ASSERT_EQ(synor_gguf_writer_add_tensor(w, "x", SYNOR_TTYPE_F32, 2, ne_bad, f), SYNOR_EINVAL);
    ASSERT_EQ(synor_gguf_writer_add_tensor(w, "x", (synor_ttype)12, 1, ne_f16, f), SYNOR_EINVAL);
    char longname[80];
    memset(longname, 'n', 64);
    longname[64] = 0;
    ASSERT_EQ(synor_gguf_writer_add_tensor(w, longname, SYNOR_TTYPE_F32, 1, ne_f16, f),
              SYNOR_EINVAL);
    const char *path = tmp("w.gguf");
    synor_gguf *g = save_and_open(w, path);
    ASSERT(g != NULL);
    /* every page mapped ahead (or the system cannot: read on demand); the
     * reads below then see the same file */
    int pr = synor_gguf_populate(g);
    ASSERT(pr == 0 || pr == SYNOR_ENOTSUP);
    ASSERT_EQ(synor_gguf_populate(NULL), SYNOR_EINVAL);
    ASSERT_EQ(synor_gguf_version(g), 3);
    ASSERT_STREQ(synor_gguf_path(g), path);
    ASSERT_EQ(synor_gguf_kv_count(g), 9);
    ASSERT_STREQ(synor_gguf_kv_key(g, 0), "general.architecture"); /* in the order added */
    ASSERT_STREQ(synor_gguf_kv_key(g, 8), "empty");
    ASSERT_EQ(synor_gguf_kv_type(g, 3), SYNOR_GGUF_F32);
    ASSERT_EQ(synor_gguf_find(g, "tokenizer.ggml.scores"), 6);
    ASSERT_EQ(synor_gguf_find(g, "nope"), -1);
    const char *s;
    size_t n;
    ASSERT_OK(synor_gguf_get_str(g, "general.architecture", &s, &n));
    ASSERT(n == 5 && memcmp(s, "llama", 5) == 0);
    uint32_t u;
    ASSERT_OK(synor_gguf_get_u32(g, "llama.block_count", &u));
    ASSERT_EQ(u, 7);
    float fv;
    ASSERT_OK(synor_gguf_get_f32(g, "llama.rope.freq_base", &fv));
    ASSERT(fv == 10000.5f);
    ASSERT_OK(synor_gguf_get_f32(g, "llama.block_count", &fv)); /* integer to float */
    ASSERT(fv == 7.0f);
    synor_gguf_vtype et;
    ASSERT_OK(synor_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n));
    ASSERT(et == SYNOR_GGUF_STRING && n == 4);
    for (size_t i = 0; i < 4; i++) {
        ASSERT_OK(synor_gguf_arr_str(g, "tokenizer.ggml.tokens", i, &s, &n));
        ASSERT(n == lens[i] && memcmp(s, toks[i], n) == 0);
    }
    ASSERT_OK(synor_gguf_arr_str(g, "tokenizer.ggml.merges", 1, &s, &n));
    ASSERT(n == 4 && memcmp(s, "ab c", 4) == 0);
    for (size_t i = 0; i < 4; i++) {
        ASSERT_OK(synor_gguf_arr_f32(g, "tokenizer.ggml.scores", i, &fv));
        ASSERT(fv == scores[i]);
        int64_t iv;
        ASSERT_OK(synor_gguf_arr_i64(g, "tokenizer.ggml.token_type", i, &iv));
        ASSERT_EQ(iv, tt[i]);
        ASSERT_OK(synor_gguf_arr_f32(g, "tokenizer.ggml.token_type", i, &fv));
        ASSERT(fv == (float)tt[i]);
    }
    ASSERT_OK(synor_gguf_get_arr(g, "empty", &et, &n));
    ASSERT(et == SYNOR_GGUF_I32 && n == 0);
    /* wrong types, missing keys, indices out of range */
    ASSERT_EQ(synor_gguf_get_u32(g, "llama.rope.freq_base", &u), SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "w.gguf: key 'llama.rope.freq_base': a f32, not an integer");
    ASSERT_EQ(synor_gguf_get_u32(g, "missing.key", &u), SYNOR_ENOENT);
    ASSERT_CONTAINS(synor_errmsg(), "w.gguf: no key 'missing.key'");
    ASSERT_EQ(synor_gguf_get_str(g, "tokenizer.ggml.tokens", &s, &n), SYNOR_ESCHEMA);
    ASSERT_EQ(synor_gguf_get_arr(g, "general.architecture", &et, &n), SYNOR_ESCHEMA);
    ASSERT_EQ(synor_gguf_arr_str(g, "tokenizer.ggml.tokens", 4, &s, &n), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "element 4 of an array of 4");
    int64_t iv;
    ASSERT_EQ(synor_gguf_arr_i64(g, "tokenizer.ggml.scores", 0, &iv), SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "an array of f32, not of integers");
    ASSERT_EQ(synor_gguf_arr_f32(g, "tokenizer.ggml.tokens", 0, &fv), SYNOR_ESCHEMA);

    ASSERT_EQ(synor_gguf_tensor_count(g), 5);
    struct {
        const char *name;
        synor_ttype type;
        unsigned ndim;
        const uint64_t *ne;
        const void *data;
        size_t bytes;
    } want[] = {{"a.f32", SYNOR_TTYPE_F32, 2, ne_f32, f, sizeof f},
                {"b.f16", SYNOR_TTYPE_F16, 1, ne_f16, h, sizeof h},
                {"c.q8", SYNOR_TTYPE_Q8_0, 2, ne_q8, q8, sizeof q8},
                {"d.q4", SYNOR_TTYPE_Q4_0, 3, ne_q4, q4, sizeof q4},
                {"e.bf16", SYNOR_TTYPE_BF16, 4, ne_bf, bf, sizeof bf}};
    for (size_t i = 0; i < 5; i++) {
        const synor_gguf_tensor *t = synor_gguf_tensor_at(g, i);
        ASSERT(t && t == synor_gguf_tensor_find(g, want[i].name));
        ASSERT_STREQ(t->name, want[i].name);
        ASSERT_EQ(t->type, want[i].type);
        ASSERT_EQ(t->ndim, want[i].ndim);
        for (unsigned d = 0; d < 4; d++)
            ASSERT_EQ(t->ne[d], d < want[i].ndim ? want[i].ne[d] : 1);
        ASSERT_EQ(t->bytes, want[i].bytes);
        ASSERT(memcmp(t->data, want[i].data, t->bytes) == 0);
        ASSERT_EQ((uintptr_t)t->data % 64, 0); /* general.alignment 64; the mapping is page aligned */
    }
    ASSERT(synor_gguf_tensor_at(g, 5) == NULL);
    ASSERT(synor_gguf_tensor_find(g, "zzz") == NULL);
    ASSERT(synor_gguf_tensor_find(g, "a") == NULL);

    /* the layout, read independently: data after the header at 64, each
     * tensor padded to 64 */
    size_t len;
    unsigned char *b = slurp(path, &len);
    ASSERT(b);
    const synor_gguf_tensor *t0 = synor_gguf_tensor_at(g, 0), *t4 = synor_gguf_tensor_at(g, 4);
    size_t data0 = len - (size_t)((const unsigned char *)t4->data + 64 -
                                  (const unsigned char *)t0->data);
    ASSERT_EQ(data0 % 64, 0);
    ASSERT(memcmp(b + data0, f, sizeof f) == 0);
    ASSERT(memcmp(b, "GGUF\3\0\0\0\5\0\0\0\0\0\0\0\x09\0\0\0\0\0\0\0", 24) == 0);
    free(b);

    /* copy_kv carries keys over verbatim, minus the skipped ones */
    ASSERT_OK(synor_gguf_writer_create(&w));
    ASSERT_OK(synor_gguf_writer_add_u32(w, "first", 1));
    const char *skip[] = {"tokenizer.ggml.merges", "general.alignment", NULL};
    ASSERT_OK(synor_gguf_writer_copy_kv(w, g, skip));
    ASSERT_EQ(synor_gguf_writer_copy_kv(w, g, NULL), SYNOR_EEXIST); /* and nothing added */
    ASSERT_OK(synor_gguf_writer_add_tensor(w, "t", SYNOR_TTYPE_F32, 1, ne_f16, f));
    const char *path2 = tmp("copy.gguf");
    synor_gguf *g2 = save_and_open(w, path2);
    ASSERT(g2 != NULL);
    ASSERT_EQ(synor_gguf_kv_count(g2), 8);
    ASSERT_STREQ(synor_gguf_kv_key(g2, 0), "first");
    ASSERT_EQ(synor_gguf_find(g2, "tokenizer.ggml.merges"), -1);
    ASSERT_OK(synor_gguf_arr_str(g2, "tokenizer.ggml.tokens", 3, &s, &n));
    ASSERT(n == 6 && memcmp(s, "\xe2\x96\x81the", 6) == 0);
    ASSERT_EQ((uintptr_t)synor_gguf_tensor_at(g2, 0)->data % 32, 0);
    synor_gguf_close(g2);
    synor_gguf_close(g);
    unlink(path);
    unlink(path2);
}

TEST(writer_rejects_a_bad_alignment)
{
    synor_gguf_writer *w = NULL;
    ASSERT_OK(synor_gguf_writer_create(&w));
    ASSERT_EQ(synor_gguf_writer_add_u32(w, "general.alignment", 48), SYNOR_EINVAL);
    ASSERT_EQ(synor_gguf_writer_add_f32(w, "general.alignment", 32), SYNOR_EINVAL);
    ASSERT_OK(synor_gguf_writer_add_u32(w, "general.alignment", 8));
    /* no tensors: a valid file of metadata alone */
    const char *path = tmp("meta.gguf");
    synor_gguf *g = save_and_open(w, path);
    ASSERT(g != NULL);
    ASSERT_EQ(synor_gguf_tensor_count(g), 0);
    synor_gguf_close(g);
    unlink(path);
}

/* synor_gguf_drop_pages: a tensor's pages let go are read back from the
 * file (the same bytes, not zeros); a range outside the mapping (before
 * it, past it, running off its end) is refused naming the file, and the
 * mapping is left as it was. (That the resident part falls is checked by
 * test_runtime_llm's packed_f32_lets_go_of_the_file_pages.) */
TEST(dropped_pages_read_back_from_the_file)
{
    enum { N = 64 * 1024 }; /* 256 KiB of F32: whole pages inside it */
    float *v = malloc(N * sizeof *v);
    ASSERT(v != NULL);
    for (int i = 0; i < N; i++)
        v[i] = (float)i * 0.25f - 7.0f;
    synor_gguf_writer *w = NULL;
    ASSERT_OK(synor_gguf_writer_create(&w));
    uint64_t ne[1] = {N};
    ASSERT_OK(synor_gguf_writer_add_tensor(w, "big", SYNOR_TTYPE_F32, 1, ne, v));
    const char *path = tmp("drop.gguf");
    synor_gguf *g = save_and_open(w, path);
    ASSERT(g != NULL);
    const synor_gguf_tensor *t = synor_gguf_tensor_find(g, "big");
    ASSERT(t != NULL && t->bytes == N * sizeof(float));
    ASSERT(memcmp(t->data, v, t->bytes) == 0); /* every page mapped in */
    ASSERT_OK(synor_gguf_drop_pages(g, t->data, t->bytes));
    ASSERT(memcmp(t->data, v, t->bytes) == 0); /* read back from the file */
    ASSERT_OK(synor_gguf_drop_pages(g, t->data, 0));
    ASSERT_EQ(synor_gguf_drop_pages(g, v, 16), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "drop.gguf") != NULL);
    ASSERT_EQ(synor_gguf_drop_pages(g, (const char *)t->data + 1, t->bytes), SYNOR_EINVAL);
    ASSERT_EQ(synor_gguf_drop_pages(NULL, t->data, 16), SYNOR_EINVAL);
    ASSERT(memcmp(t->data, v, t->bytes) == 0);
    synor_gguf_close(g);
    free(v);
    unlink(path);
}

/* ---- hand-built files: every metadata type, version 2 ---- */

TEST(every_metadata_type)
{
    bb *b = calloc(1, sizeof *b);
    header(b, 1, 16);
    b->b[4] = 2; /* version 2: the same layout */
    uint8_t u8v = 250;
    int8_t i8v = -100;
    uint16_t u16v = 65000;
    int16_t i16v = -30000;
    int32_t i32v = -2000000000;
    float f32v = 1.5f;
    uint64_t u64v = 1ull << 40;
    int64_t i64v = -(1ll << 40);
    double f64v = 0.1;
    str(b, "u8"), u32(b, SYNOR_GGUF_U8), put(b, &u8v, 1);
    str(b, "i8"), u32(b, SYNOR_GGUF_I8), put(b, &i8v, 1);
    str(b, "u16"), u32(b, SYNOR_GGUF_U16), put(b, &u16v, 2);
    str(b, "i16"), u32(b, SYNOR_GGUF_I16), put(b, &i16v, 2);
    str(b, "u32"), u32(b, SYNOR_GGUF_U32), u32(b, 4000000000u);
    str(b, "i32"), u32(b, SYNOR_GGUF_I32), put(b, &i32v, 4);
    str(b, "f32"), u32(b, SYNOR_GGUF_F32), put(b, &f32v, 4);
    str(b, "bool"), u32(b, SYNOR_GGUF_BOOL), put(b, "\1", 1);
    str(b, "str"), u32(b, SYNOR_GGUF_STRING), str(b, "hello");
    str(b, "u64"), u32(b, SYNOR_GGUF_U64), u64(b, u64v);
    str(b, "i64"), u32(b, SYNOR_GGUF_I64), put(b, &i64v, 8);
    str(b, "f64"), u32(b, SYNOR_GGUF_F64), put(b, &f64v, 8);
    str(b, "small"), u32(b, SYNOR_GGUF_I64), u64(b, 7);
    str(b, "arr.u8"), u32(b, SYNOR_GGUF_ARRAY), u32(b, SYNOR_GGUF_U8), u64(b, 3), put(b, "\1\2\377", 3);
    str(b, "arr.bool"), u32(b, SYNOR_GGUF_ARRAY), u32(b, SYNOR_GGUF_BOOL), u64(b, 2), put(b, "\0\1", 2);
    str(b, "arr.u64"), u32(b, SYNOR_GGUF_ARRAY), u32(b, SYNOR_GGUF_U64), u64(b, 2), u64(b, 5),
        u64(b, UINT64_MAX);
    uint64_t ne[] = {4};
    tinfo(b, "t", 1, ne, SYNOR_TTYPE_F32, 0);
    pad_to(b, 32);
    float data[4] = {1, 2, 3, 4};
    put(b, data, sizeof data);
    synor_gguf *g = NULL;
    ASSERT_OK(open_rc(b->b, b->n, &g));
    ASSERT_EQ(synor_gguf_version(g), 2);
    uint32_t u;
    float f;
    ASSERT_OK(synor_gguf_get_u32(g, "u8", &u));
    ASSERT_EQ(u, 250);
    ASSERT_OK(synor_gguf_get_u32(g, "u16", &u));
    ASSERT_EQ(u, 65000);
    ASSERT_OK(synor_gguf_get_u32(g, "u32", &u));
    ASSERT_EQ(u, 4000000000u);
    ASSERT_OK(synor_gguf_get_u32(g, "small", &u)); /* an i64 that fits */
    ASSERT_EQ(u, 7);
    ASSERT_EQ(synor_gguf_get_u32(g, "i8", &u), SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "key 'i8': -100 does not fit in a u32");
    ASSERT_EQ(synor_gguf_get_u32(g, "u64", &u), SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "1099511627776 does not fit");
    ASSERT_EQ(synor_gguf_get_u32(g, "bool", &u), SYNOR_ESCHEMA);
    ASSERT_EQ(synor_gguf_get_u32(g, "str", &u), SYNOR_ESCHEMA);
    ASSERT_OK(synor_gguf_get_f32(g, "i16", &f));
    ASSERT(f == -30000.0f);
    ASSERT_OK(synor_gguf_get_f32(g, "i32", &f));
    ASSERT(f == -2000000000.0f);
    ASSERT_OK(synor_gguf_get_f32(g, "f32", &f));
    ASSERT(f == 1.5f);
    ASSERT_OK(synor_gguf_get_f32(g, "f64", &f));
    ASSERT(f == 0.1f);
    ASSERT_OK(synor_gguf_get_f32(g, "i64", &f));
    ASSERT(f == -1099511627776.0f);
    ASSERT_EQ(synor_gguf_get_f32(g, "bool", &f), SYNOR_ESCHEMA);
    ASSERT_EQ(synor_gguf_kv_type(g, 7), SYNOR_GGUF_BOOL);
    ASSERT_EQ(synor_gguf_kv_type(g, 15), SYNOR_GGUF_ARRAY);
    int64_t iv;
    ASSERT_OK(synor_gguf_arr_i64(g, "arr.u8", 2, &iv));
    ASSERT_EQ(iv, 255);
    ASSERT_OK(synor_gguf_arr_i64(g, "arr.u64", 0, &iv));
    ASSERT_EQ(iv, 5);
    ASSERT_EQ(synor_gguf_arr_i64(g, "arr.u64", 1, &iv), SYNOR_ESCHEMA);
    ASSERT_EQ(synor_gguf_arr_i64(g, "arr.bool", 1, &iv), SYNOR_ESCHEMA);
    synor_gguf_vtype et;
    size_t n;
    ASSERT_OK(synor_gguf_get_arr(g, "arr.bool", &et, &n));
    ASSERT(et == SYNOR_GGUF_BOOL && n == 2);
    const synor_gguf_tensor *t = synor_gguf_tensor_find(g, "t");
    ASSERT(t && memcmp(t->data, data, 16) == 0);
    synor_gguf_close(g);
    free(b);
}

/* ---- corruption ---- */

/* A valid file: two keys, an array of strings, three tensors. */
static size_t good_file(bb *b, size_t *meta_end)
{
    header(b, 3, 3);
    str(b, "general.name"), u32(b, SYNOR_GGUF_STRING), str(b, "tiny");
    str(b, "tok"), u32(b, SYNOR_GGUF_ARRAY), u32(b, SYNOR_GGUF_STRING), u64(b, 2), str(b, "ab"),
        str(b, "c");
    str(b, "n"), u32(b, SYNOR_GGUF_U32), u32(b, 3);
    uint64_t ne1[] = {32, 2}, ne2[] = {4};
    tinfo(b, "blk.0.w", 2, ne1, SYNOR_TTYPE_Q8_0, 0);
    tinfo(b, "blk.0.n", 1, ne2, SYNOR_TTYPE_F32, 96);
    tinfo(b, "out", 1, ne2, SYNOR_TTYPE_F16, 128);
    *meta_end = b->n;
    pad_to(b, 32);
    for (int i = 0; i < 136; i++)
        b->b[b->n++] = (unsigned char)(i * 7);
    return b->n;
}

/* Opens the bytes expecting code; returns the message. */
static const char *fails(const bb *b, int code)
{
    static char msg[512];
    int rc = open_rc(b->b, b->n, NULL);
    if (rc != code) {
        snprintf(msg, sizeof msg, "(rc %s, want %s: %s)", synor_err_name(rc), synor_err_name(code),
                 rc ? synor_errmsg() : "");
        return msg;
    }
    snprintf(msg, sizeof msg, "%s", synor_errmsg());
    return msg;
}

TEST(truncated_files_are_rejected)
{
    bb *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
    size_t meta_end, len = good_file(b, &meta_end);
    synor_gguf *g = NULL;
    ASSERT_OK(open_rc(b->b, b->n, &g));
    synor_gguf_close(g);
    /* every cut: the header byte by byte, then inside the data */
    for (size_t cut = 0; cut < len; cut++) {
        memcpy(c->b, b->b, cut);
        c->n = cut;
        const char *e = fails(c, SYNOR_EPARSE);
        if (!strstr(e, "h.gguf: "))
            TEST__FAIL("cut at %zu: %s", cut, e);
        if (cut > 8 && cut < meta_end && !strstr(e, "truncated") && !strstr(e, "cannot fit") &&
            !strstr(e, "runs past the end") && !strstr(e, "does not fit"))
            TEST__FAIL("cut at %zu: %s", cut, e);
    }
    c->n = 105;
    memcpy(c->b, b->b, 105);
    ASSERT_CONTAINS(fails(c, SYNOR_EPARSE),
                    "h.gguf: key 'tok': string 1 of 1 bytes at offset 97 runs past the end of the "
                    "file (105 bytes)");
    c->n = len - 1;
    memcpy(c->b, b->b, len - 1);
    ASSERT_CONTAINS(fails(c, SYNOR_EPARSE),
                    "tensor 'out': data at offset 384 + 8 bytes runs past the end of the file "
                    "(391 bytes)");
    free(b);
    free(c);
}

/* Patches the u32 or u64 at off of the good file and expects code with a
 * message containing want. */
static const char *patched(size_t off, uint64_t v, int width, int code)
{
    static bb b;
    size_t meta_end;
    good_file(&b, &meta_end);
    memcpy(b.b + off, &v, (size_t)width);
    return fails(&b, code);
}

/* Offsets in the good file. */
static size_t find(const char *s)
{
    static bb b;
    size_t meta_end;
    good_file(&b, &meta_end);
    for (size_t i = 0; i + strlen(s) <= b.n; i++)
        if (memcmp(b.b + i, s, strlen(s)) == 0)
            return i;
    abort();
}

TEST(corrupt_fields_are_named)
{
    ASSERT_CONTAINS(patched(0, 0x46554748, 4, SYNOR_EPARSE), "h.gguf: not a GGUF file (magic 'HGUF'");
    ASSERT_CONTAINS(patched(0, 0x4c4c4747, 4, SYNOR_EPARSE), "magic 'GGLL', expected 'GGUF'");
    ASSERT_CONTAINS(patched(4, 1, 4, SYNOR_EPARSE), "GGUF version 1 is not supported");
    ASSERT_CONTAINS(patched(4, 0x03000000, 4, SYNOR_EPARSE), "a big-endian file?");
    ASSERT_CONTAINS(patched(8, 1ull << 60, 8, SYNOR_EPARSE),
                    "1152921504606846976 tensors cannot fit");
    ASSERT_CONTAINS(patched(16, UINT64_MAX, 8, SYNOR_EPARSE), "keys cannot fit");
    /* a key's string value of absurd length */
    size_t name_val = find("tiny") - 8;
    ASSERT_CONTAINS(patched(name_val, 1ull << 62, 8, SYNOR_EPARSE),
                    "key 'general.name': the string of 4611686018427387904 bytes at offset");
    /* the key length itself */
    ASSERT_CONTAINS(patched(24, 0, 8, SYNOR_EPARSE), "key 0: empty key");
    ASSERT_CONTAINS(patched(24, 1ull << 40, 8, SYNOR_EPARSE), "key 0: the key of 1099511627776 bytes");
    ASSERT_CONTAINS(patched(find("general.name") + 12, 13, 4, SYNOR_EPARSE),
                    "key 'general.name': unknown value type 13");
    size_t tok = find("tok") + 3;
    ASSERT_CONTAINS(patched(tok + 4, SYNOR_GGUF_ARRAY, 4, SYNOR_EPARSE),
                    "key 'tok': arrays of arrays are not supported");
    ASSERT_CONTAINS(patched(tok + 4, 99, 4, SYNOR_EPARSE), "key 'tok': unknown array element type 99");
    ASSERT_CONTAINS(patched(tok + 8, 1ull << 61, 8, SYNOR_EPARSE),
                    "key 'tok': an array of 2305843009213693952 string elements does not fit");
    ASSERT_CONTAINS(patched(tok + 16, 1ull << 40, 8, SYNOR_EPARSE),
                    "key 'tok': string 0 of 1099511627776 bytes at offset 87 runs past the end");
    /* tensors */
    size_t w = find("blk.0.w") + 7, nn = find("blk.0.n") + 7, out = find("out") + 3;
    ASSERT_CONTAINS(patched(w, 5, 4, SYNOR_EPARSE), "tensor 'blk.0.w': 5 dimensions (1 to 4 allowed)");
    ASSERT_CONTAINS(patched(w, 0, 4, SYNOR_EPARSE), "tensor 'blk.0.w': 0 dimensions");
    ASSERT_CONTAINS(patched(w + 4, 0, 8, SYNOR_EPARSE), "tensor 'blk.0.w': dimension 0 is 0");
    ASSERT_CONTAINS(patched(w + 4, 33, 8, SYNOR_EPARSE),
                    "tensor 'blk.0.w': Q8_0 rows of 33 elements, not a multiple of its block of 32");
    ASSERT_CONTAINS(patched(w + 12, 1ull << 62, 8, SYNOR_EPARSE), "tensor 'blk.0.w':");
    ASSERT_CONTAINS(patched(w + 20, 12, 4, SYNOR_ENOTSUP),
                    "tensor 'blk.0.w': type 12 (Q4_K) is not supported");
    ASSERT_CONTAINS(patched(w + 20, 1000, 4, SYNOR_ENOTSUP), "type 1000 (unknown)");
    ASSERT_CONTAINS(patched(nn + 16, 100, 8, SYNOR_EPARSE),
                    "tensor 'blk.0.n': data offset 100 is not a multiple of the alignment 32");
    ASSERT_CONTAINS(patched(nn + 16, 4096, 8, SYNOR_EPARSE),
                    "tensor 'blk.0.n': data at offset 4352 + 16 bytes runs past the end");
    ASSERT_CONTAINS(patched(nn + 16, UINT64_MAX - 31, 8, SYNOR_EPARSE),
                    "tensor 'blk.0.n': data offset 18446744073709551584 is past the end");
    ASSERT_CONTAINS(patched(out, 7, 4, SYNOR_EPARSE), "tensor 'out': 7 dimensions");
    ASSERT_CONTAINS(patched(find("blk.0.n") - 8, 100, 8, SYNOR_EPARSE), "tensor 1: a name of 100 bytes");
}

TEST(hand_built_corruptions)
{
    bb *b = calloc(1, sizeof *b);
    uint64_t ne[] = {32};
    /* bool values other than 0 and 1 */
    header(b, 0, 1);
    str(b, "flag"), u32(b, SYNOR_GGUF_BOOL), put(b, "\2", 1);
    ASSERT_CONTAINS(fails(b, SYNOR_EPARSE), "key 'flag': 2 is not a bool");
    header(b, 0, 1);
    str(b, "flags"), u32(b, SYNOR_GGUF_ARRAY), u32(b, SYNOR_GGUF_BOOL), u64(b, 2), put(b, "\1\7", 2);
    ASSERT_CONTAINS(fails(b, SYNOR_EPARSE), "key 'flags': element 1 is 7");
    /* alignment: not a power of two, not a u32; a valid 64 is honoured */
    header(b, 0, 1);
    str(b, "general.alignment"), u32(b, SYNOR_GGUF_U32), u32(b, 48);
    ASSERT_CONTAINS(fails(b, SYNOR_EPARSE), "key 'general.alignment': 48 is not a power of 2");
    header(b, 0, 1);
    str(b, "general.alignment"), u32(b, SYNOR_GGUF_U64), u64(b, 64);
    ASSERT_CONTAINS(fails(b, SYNOR_EPARSE), "key 'general.alignment': a u64, not a u32");
    header(b, 1, 1);
    str(b, "general.alignment"), u32(b, SYNOR_GGUF_U32), u32(b, 64);
    tinfo(b, "t", 1, ne, SYNOR_TTYPE_F32, 32);
    pad_to(b, 64);
    memset(b->b + b->n, 0, 64 + 128);
    b->n += 64 + 128;
    ASSERT_CONTAINS(fails(b, SYNOR_EPARSE), "tensor 't': data offset 32 is not a multiple of the alignment 64");
    /* a key with a NUL, a tensor name with a NUL */
    header(b, 0, 1);
    u64(b, 3), put(b, "a\0b", 3), u32(b, SYNOR_GGUF_U8), put(b, "\1", 1);
    ASSERT_CONTAINS(fails(b, SYNOR_EPARSE), "key 'a?b': the key contains a NUL byte");
    header(b, 1, 0);
    u64(b, 2), put(b, "t\0", 2), u32(b, 1), u64(b, 32), u32(b, 0), u64(b, 0);
    pad_to(b, 32);
    b->n += 128;
    ASSERT_CONTAINS(fails(b, SYNOR_EPARSE), "tensor 't?': the name contains a NUL byte");
    /* element counts whose product overflows */
    header(b, 1, 0);
    uint64_t huge[] = {1ull << 32, 1ull << 32};
    tinfo(b, "big", 2, huge, SYNOR_TTYPE_F32, 0);
    ASSERT_CONTAINS(fails(b, SYNOR_EPARSE), "tensor 'big': 4294967296 x 4294967296 x ... elements overflow");
    /* duplicates: keys, tensors */
    header(b, 0, 3);
    str(b, "b"), u32(b, SYNOR_GGUF_U8), put(b, "\1", 1);
    str(b, "a"), u32(b, SYNOR_GGUF_U8), put(b, "\1", 1);
    str(b, "b"), u32(b, SYNOR_GGUF_U16), put(b, "\1\0", 2);
    ASSERT_CONTAINS(fails(b, SYNOR_EPARSE), "h.gguf: key 'b' appears twice (keys 0 and 2)");
    header(b, 3, 0);
    tinfo(b, "w", 1, ne, SYNOR_TTYPE_F32, 0);
    tinfo(b, "v", 1, ne, SYNOR_TTYPE_F32, 128);
    tinfo(b, "w", 1, ne, SYNOR_TTYPE_F32, 256);
    pad_to(b, 32);
    memset(b->b + b->n, 0, 384);
    b->n += 384;
    ASSERT_CONTAINS(fails(b, SYNOR_EPARSE), "h.gguf: tensor 'w' appears twice (tensors 0 and 2)");
    /* an empty file, a directory */
    b->n = 0;
    ASSERT_CONTAINS(fails(b, SYNOR_EPARSE), "truncated: the magic needs 4 bytes at offset 0, the file has 0");
    synor_gguf *g = NULL;
    ASSERT_EQ(synor_gguf_open(dir, &g), SYNOR_EIO);
    ASSERT_CONTAINS(synor_errmsg(), "not a regular file");
    ASSERT_EQ(synor_gguf_open(tmp("none.gguf"), &g), SYNOR_EIO);
    ASSERT_CONTAINS(synor_errmsg(), "none.gguf: cannot open: No such file");
    ASSERT(g == NULL);
    free(b);
    unlink(tmp("h.gguf"));
    rmdir(dir);
}

TEST_MAIN(writer_round_trip, writer_rejects_a_bad_alignment, dropped_pages_read_back_from_the_file,
          every_metadata_type,
          truncated_files_are_rejected, corrupt_fields_are_named, hand_built_corruptions)
