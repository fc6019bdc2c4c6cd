/* test_tokenizer_llama2c.c - llama2.c's tokenizer.bin: save and load,
 * the file's layout, corrupt and truncated files; allocation failures in
 * training, encoding and loading. */
#include <unistd.h>

#include "test.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer_text.h"

static char *tmp_path(const char *leaf)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s/test_tokenizer_%ld_%s", SYNOR_BINARY_DIR, (long)getpid(), leaf);
    return buf;
}

static char *slurp(const char *path, size_t *len)
{
    char *d = NULL;
    if (synor__read_file(path, &d, len))
        return NULL;
    return d;
}

static void spit(const char *path, const char *d, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(d, 1, len, f);
        fclose(f);
    }
}

static uint32_t rd32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

static void wr32(char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (char)(v >> (8 * i));
}

/* Byte offset of piece i's score in a tokenizer.bin image. */
static size_t piece_at(const char *d, size_t i)
{
    size_t pos = 4;
    while (i--)
        pos += 8 + rd32(d + pos + 4);
    return pos;
}

TEST(llama2c_save_load_round_trip)
{
    synor_tokenizer *t = trained(300), *u = NULL;
    ASSERT(t);
    const char *path = tmp_path("tok.bin");
    ASSERT_OK(synor_tokenizer_save_llama2c(t, path));
    size_t n = synor_tokenizer_size(t), size;
    ASSERT_OK(synor_tokenizer_load_llama2c(path, n, &u));
    ASSERT(same_vocab(t, u));
    ASSERT_EQ(synor_tokenizer_bos(u), 1);
    ASSERT_EQ(synor_tokenizer_eos(u), 2);
    ASSERT_EQ(synor_tokenizer_unk(u), 0);
    /* the file as llama2.c's export writes it: "▁" as a plain space */
    char *d = slurp(path, &size);
    ASSERT(d);
    int32_t sp = synor_tokenizer_find(t, SP, 3), sp_the = synor_tokenizer_find(t, SP "the", 6);
    ASSERT(sp > 0 && sp_the > 0);
    size_t at = piece_at(d, (size_t)sp);
    ASSERT_EQ(rd32(d + at + 4), 1);
    ASSERT_EQ(d[at + 8], ' ');
    at = piece_at(d, (size_t)sp_the);
    ASSERT_EQ(rd32(d + at + 4), 4);
    ASSERT(memcmp(d + at + 8, " the", 4) == 0);
    float score;
    memcpy(&score, d + at, 4);
    ASSERT(score == synor_tokenizer_score(t, sp_the));
    size_t max = 0;
    for (size_t i = 0; i < n; i++)
        if (rd32(d + piece_at(d, i) + 4) > max)
            max = rd32(d + piece_at(d, i) + 4);
    ASSERT_EQ(rd32(d), max);
    ASSERT_EQ(piece_at(d, n), size);
    /* the same ids */
    int32_t a[256], b[256];
    const char *s = "the quick caf\xc3\xa9 \xf0\x9f\x98\x80 x=1; \xff";
    long na = synor_tokenizer_encode(t, s, strlen(s), 1, 1, a, 256);
    ASSERT(na > 0 && na == synor_tokenizer_encode(u, s, strlen(s), 1, 1, b, 256));
    ASSERT(memcmp(a, b, (size_t)na * sizeof *a) == 0);
    synor_tokenizer_destroy(u);
    u = NULL;
    /* a tokenizer without 0, 1, 2 for unknown, BOS, EOS cannot be written */
    const char *p3[] = {"a", "b", "c"};
    size_t l3[] = {1, 1, 1};
    synor_tokenizer_spec spec = {3, p3, l3, NULL, NULL, 0, 1, 2, 1};
    ASSERT_OK(synor_tokenizer_create(&spec, &u));
    ASSERT(synor_tokenizer_save_llama2c(u, path) == SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "fixes unknown, BOS, EOS at ids 0, 1, 2");
    synor_tokenizer_destroy(u);
    free(d);
    unlink(path);
    synor_tokenizer_destroy(t);
}

/* Loads image d (from memory, or written as file `path`): expects EPARSE
 * with a message naming path and holding want. */
static int load_fails(const char *path, const char *d, size_t len, size_t n, const char *want,
                      int file)
{
    synor_tokenizer *u = NULL;
    int rc;
    if (file) {
        spit(path, d, len);
        rc = synor_tokenizer_load_llama2c(path, n, &u);
    } else {
        rc = synor__tokenizer_parse_llama2c(path, d, len, n, &u);
    }
    if (rc != SYNOR_EPARSE || u || !strstr(synor_errmsg(), path) ||
        !strstr(synor_errmsg(), want)) {
        fprintf(stderr, "  %zu bytes: rc %d, \"%s\" (wanted \"%s\")\n", len, rc, synor_errmsg(),
                want);
        synor_tokenizer_destroy(u);
        return 0;
    }
    return 1;
}

TEST(llama2c_corrupt_files_are_rejected)
{
    synor_tokenizer *t = trained(100), *u = NULL;
    ASSERT(t);
    const char *path = tmp_path("bad.bin");
    ASSERT_OK(synor_tokenizer_save_llama2c(t, path));
    size_t n = synor_tokenizer_size(t), size;
    char *d = slurp(path, &size), *e = malloc(size + 16);
    ASSERT(d && e);
    /* every truncation (from memory: the same parser the file goes to;
     * a few through a file) */
    for (size_t cut = 0; cut < size; cut++) {
        size_t piece = 0;
        while (piece < n && piece_at(d, piece + 1) <= cut)
            piece++;
        char want[64];
        if (cut < 4)
            snprintf(want, sizeof want, "truncated: %zu bytes, no max_token_length", cut);
        else
            snprintf(want, sizeof want, ": piece %zu: truncated", piece);
        ASSERT(load_fails(path, d, cut, n, want, cut < 6 || cut % 997 == 0));
    }
    /* too many pieces asked for; too few */
    char want[96];
    snprintf(want, sizeof want, "piece %zu: truncated at byte %zu", n, size);
    ASSERT(load_fails(path, d, size, n + 1, want, 1));
    snprintf(want, sizeof want, "bytes after piece %zu, the last of vocab_size %zu", n - 2, n - 1);
    ASSERT(load_fails(path, d, size, n - 1, want, 1));
    /* a negative length */
    memcpy(e, d, size);
    wr32(e + piece_at(d, 5) + 4, (uint32_t)-3);
    ASSERT(load_fails(path, e, size, n, "piece 5: negative length -3", 1));
    /* longer than max_token_length */
    memcpy(e, d, size);
    wr32(e, 5);
    ASSERT(load_fails(path, e, size, n, "piece 3: length 6 exceeds the file's max_token_length 5", 1));
    /* a NaN score */
    memcpy(e, d, size);
    wr32(e + piece_at(d, 7), 0x7fc00000u);
    ASSERT(load_fails(path, e, size, n, "piece 7: score is NaN", 1));
    /* a duplicate piece: one character spelled as another */
    int32_t ia = synor_tokenizer_find(t, "a", 1), ie = synor_tokenizer_find(t, "e", 1);
    ASSERT(ia > 258 && ie > 258);
    int32_t hi = ia > ie ? ia : ie, lo = ia > ie ? ie : ia;
    memcpy(e, d, size);
    e[piece_at(d, (size_t)hi) + 8] = e[piece_at(d, (size_t)lo) + 8];
    snprintf(want, sizeof want, "piece %ld (\"%c\") duplicates piece %ld", (long)hi,
             e[piece_at(d, (size_t)lo) + 8], (long)lo);
    ASSERT(load_fails(path, e, size, n, want, 1));
    /* vocab_size below the three special ids; a missing file */
    ASSERT(synor_tokenizer_load_llama2c(path, 2, &u) == SYNOR_EINVAL);
    unlink(path);
    ASSERT(synor_tokenizer_load_llama2c(path, n, &u) == SYNOR_EIO);
    ASSERT_CONTAINS(synor_errmsg(), path);
    ASSERT(u == NULL);
    free(d);
    free(e);
    synor_tokenizer_destroy(t);
}

/* ------------------------------------------------- allocation failures */

TEST(allocation_failures_leave_nothing_behind)
{
    size_t len;
    char *text = make_text(1500, 3, &len);
    synor_tokenizer *t = NULL;
    int rc = SYNOR_ENOMEM;
    for (long k = 1; rc == SYNOR_ENOMEM; k++) {
        synor__alloc_fail_after(k);
        rc = synor_tokenizer_train(text, len, 259 + NCHARS + 50, &t);
        synor__alloc_fail_after(0);
        if (rc)
            ASSERT(rc == SYNOR_ENOMEM && t == NULL);
    }
    ASSERT_OK(rc);
    long want = synor_tokenizer_encode(t, text, len, 1, 1, NULL, 0), got = SYNOR_ENOMEM;
    ASSERT(want > 0);
    for (long k = 1; got == SYNOR_ENOMEM; k++) {
        synor__alloc_fail_after(k);
        got = synor_tokenizer_encode(t, text, len, 1, 1, NULL, 0);
        synor__alloc_fail_after(0);
    }
    ASSERT_EQ(got, want);
    const char *path = tmp_path("oom.bin");
    ASSERT_OK(synor_tokenizer_save_llama2c(t, path));
    synor_tokenizer *u = NULL;
    rc = SYNOR_ENOMEM;
    for (long k = 1; rc == SYNOR_ENOMEM; k++) {
        synor__alloc_fail_after(k);
        rc = synor_tokenizer_load_llama2c(path, synor_tokenizer_size(t), &u);
        synor__alloc_fail_after(0);
        if (rc)
            ASSERT(rc == SYNOR_ENOMEM && u == NULL);
    }
    ASSERT_OK(rc);
    ASSERT(same_vocab(t, u));
    unlink(path);
    free(text);
    synor_tokenizer_destroy(u);
    synor_tokenizer_destroy(t);
}

TEST_MAIN(llama2c_save_load_round_trip, llama2c_corrupt_files_are_rejected,
          allocation_failures_leave_nothing_behind)
