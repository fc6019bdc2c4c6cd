/* fuzz_tokenizer.c - llama2.c's tokenizer.bin (synor_tokenizer_load_llama2c
 * reads the file, then synor__tokenizer_parse_llama2c) and encoding any
 * bytes. Input: vocab_size as 2 bytes (little-endian), then the file, which
 * is also the text encoded.
 *
 * Contract checked: a rejected file is a known code with a message naming
 * the input, *out untouched; an accepted one has vocab_size pieces, written
 * (synor__tokenizer_serialize_llama2c) reads back to the same pieces,
 * scores and types. Encoding the bytes, with that vocabulary and with one
 * trained at start-up: BOS first, EOS last, every id in range, the same
 * count and ids with a short buffer; with the trained vocabulary (which
 * has all 256 byte pieces) decoding gives the bytes back ("▁" as a space);
 * encode_special's ids are in range and, where no special piece is in the
 * text, plain encode's.
 * A failed allocation is SYNOR_ENOMEM with *out untouched, or the same
 * result. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "synor/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

static synor_tokenizer *trained;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static const char text[] =
        "the quick brown fox jumps over the lazy dog, then the tokenizer merges pairs of "
        "tokens: caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80 "
        "x = 1; y = 2; the market prices spot capacity of GPU and CPU memory.\n";
    FUZZ_CHECK(synor_tokenizer_train(text, sizeof text - 1, 400, &trained) == 0, "set-up: %s",
               synor_errmsg());
    return 0;
}

static void check_same_vocab(const synor_tokenizer *a, const synor_tokenizer *b,
                             const char *what)
{
    FUZZ_CHECK(synor_tokenizer_size(a) == synor_tokenizer_size(b), "%s: %zu pieces vs %zu",
               what, synor_tokenizer_size(a), synor_tokenizer_size(b));
    for (int32_t i = 0; (size_t)i < synor_tokenizer_size(a); i++) {
        size_t la, lb;
        const char *pa = synor_tokenizer_piece(a, i, &la), *pb = synor_tokenizer_piece(b, i, &lb);
        float sa = synor_tokenizer_score(a, i), sb = synor_tokenizer_score(b, i);
        FUZZ_CHECK(la == lb && memcmp(pa, pb, la) == 0 && memcmp(&sa, &sb, sizeof sa) == 0 &&
                       synor_tokenizer_type(a, i) == synor_tokenizer_type(b, i),
                   "%s: piece %ld differs", what, (long)i);
    }
}

static void check_encode(const synor_tokenizer *t, const uint8_t *d, size_t n, int round_trip)
{
    const char *text = (const char *)d;
    fuzz_alloc_count_start();
    long m = synor_tokenizer_encode(t, text, n, 1, 1, NULL, 0);
    long allocs = fuzz_alloc_count_stop();
    FUZZ_CHECK(m >= 2, "encode of %zu bytes: %ld (%s)", n, m, synor_errmsg());
    int32_t *ids = malloc((size_t)m * sizeof *ids), *part = malloc((size_t)m * sizeof *part);
    FUZZ_CHECK(ids && part, "out of memory");
    FUZZ_CHECK(synor_tokenizer_encode(t, text, n, 1, 1, ids, (size_t)m) == m,
               "a second encode needs another count");
    FUZZ_CHECK(ids[0] == synor_tokenizer_bos(t) && ids[m - 1] == synor_tokenizer_eos(t),
               "BOS/EOS not first/last");
    for (long i = 0; i < m; i++)
        FUZZ_CHECK(ids[i] >= 0 && (size_t)ids[i] < synor_tokenizer_size(t), "id %ld: %ld", i,
                   (long)ids[i]);
    size_t cap = (size_t)m / 2;
    FUZZ_CHECK(synor_tokenizer_encode(t, text, n, 1, 1, part, cap) == m &&
                   (cap == 0 || memcmp(part, ids, cap * sizeof *ids) == 0),
               "a short buffer changed the ids");
    long armed = fuzz_alloc_fail_one(d, n, allocs);
    long mi = synor_tokenizer_encode(t, text, n, 1, 1, part, (size_t)m);
    int hit = fuzz_alloc_disarm() && armed; /* nothing armed reads as hit */
    if (mi < 0)
        FUZZ_CHECK(hit && mi == SYNOR_ENOMEM, "encode with a failed allocation: %ld", mi);
    else
        FUZZ_CHECK(mi == m && memcmp(part, ids, (size_t)m * sizeof *ids) == 0,
                   "encode with a failed allocation gave other ids");
    /* decode: with all byte pieces, the bytes come back */
    size_t o = 0, cap_out = 3 * n + 16;
    char *out = malloc(cap_out);
    FUZZ_CHECK(out, "out of memory");
    for (long i = 1; i < m; i++) {
        long k = synor_tokenizer_decode(t, ids[i - 1], ids[i], out + o, cap_out - o);
        FUZZ_CHECK(k >= 0, "decode of id %ld: %s", (long)ids[i], synor_errmsg());
        if (round_trip) {
            FUZZ_CHECK((size_t)k <= cap_out - o, "decode longer than the text");
            o += (size_t)k;
        }
    }
    if (round_trip) {
        size_t w = 0;
        for (size_t i = 0; i < n; i++, w++) {
            if (i + 3 <= n && memcmp(d + i, SYNOR__TOK_SPACE, 3) == 0) {
                FUZZ_CHECK(w < o && out[w] == ' ', "byte %zu: \"\\u2581\" did not decode to a space", i);
                i += 2;
            } else {
                FUZZ_CHECK(w < o && out[w] == text[i], "byte %zu differs after decoding", i);
            }
        }
        FUZZ_CHECK(w == o, "decoded %zu bytes for %zu", o, w);
    }
    free(out);
    /* encode_special: every id in range, the same count with a short buffer; the text
     * without a special piece's bytes gives plain encode's ids (BOS, no EOS) */
    long ms = synor_tokenizer_encode_special(t, text, n, 1, NULL, 0);
    FUZZ_CHECK(ms >= 1, "encode_special of %zu bytes: %ld (%s)", n, ms, synor_errmsg());
    int32_t *sp = malloc((size_t)ms * sizeof *sp);
    FUZZ_CHECK(sp, "out of memory");
    FUZZ_CHECK(synor_tokenizer_encode_special(t, text, n, 1, sp, (size_t)ms) == ms &&
                   synor_tokenizer_encode_special(t, text, n, 1, part, (size_t)m / 2) == ms,
               "encode_special: another count with a short buffer");
    int any = 0;
    for (long i = 0; i < ms; i++) {
        FUZZ_CHECK(sp[i] >= 0 && (size_t)sp[i] < synor_tokenizer_size(t), "special id %ld", i);
        int ty = synor_tokenizer_type(t, sp[i]);
        any |= i > 0 && (ty == SYNOR_TOKEN_CONTROL || ty == SYNOR_TOKEN_USER_DEFINED);
    }
    if (!any)
        FUZZ_CHECK(ms == m - 1 && memcmp(sp, ids, (size_t)ms * sizeof *sp) == 0,
                   "encode_special without special pieces differs from encode");
    free(sp);
    free(ids);
    free(part);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t vocab = (size_t)data[0] | (size_t)data[1] << 8;
    const uint8_t *d = data + 2;
    size_t n = size - 2;

    synor_tokenizer *t = FUZZ_UNTOUCHED(synor_tokenizer);
    fuzz_alloc_count_start();
    int rc = synor__tokenizer_parse_llama2c(FUZZ_NAME, d, n, vocab, &t);
    long allocs = fuzz_alloc_count_stop();
    if (rc) {
        fuzz_check_error(rc, 0, FUZZ_NAME, d, n);
        FUZZ_CHECK(rc == SYNOR_EPARSE || rc == SYNOR_EINVAL, "load: %s", synor_err_name(rc));
        FUZZ_CHECK(t == FUZZ_UNTOUCHED(synor_tokenizer), "a rejected file set *out");
        t = NULL;
    } else {
        FUZZ_CHECK(synor_tokenizer_size(t) == vocab, "%zu pieces for vocab_size %zu",
                   synor_tokenizer_size(t), vocab);
        char *img = NULL;
        size_t len = 0;
        FUZZ_CHECK(synor__tokenizer_serialize_llama2c(t, "saved.bin", &img, &len) == 0,
                   "save: %s", synor_errmsg());
        synor_tokenizer *again = NULL;
        FUZZ_CHECK(synor__tokenizer_parse_llama2c("saved.bin", img, len, vocab, &again) == 0,
                   "a saved file does not load: %s", synor_errmsg());
        check_same_vocab(t, again, "saved and loaded again");
        synor_tokenizer_destroy(again);
        synor__free(img);
        check_encode(t, d, n, 0);
    }
    synor_tokenizer *u = FUZZ_UNTOUCHED(synor_tokenizer);
    long armed = fuzz_alloc_fail_one(data, size, allocs);
    int rci = synor__tokenizer_parse_llama2c(FUZZ_NAME, d, n, vocab, &u);
    int hit = fuzz_alloc_disarm() && armed;
    if (rci) {
        FUZZ_CHECK(rci == rc || (hit && rci == SYNOR_ENOMEM), "load with a failed allocation: %s",
                   synor_err_name(rci));
        fuzz_check_error(rci, hit, FUZZ_NAME, d, n);
        FUZZ_CHECK(u == FUZZ_UNTOUCHED(synor_tokenizer), "a failed load set *out");
    } else {
        FUZZ_CHECK(rc == 0, "accepted only with a failed allocation");
        check_same_vocab(t, u, "loads with and without a failed allocation");
        synor_tokenizer_destroy(u);
    }
    synor_tokenizer_destroy(t);
    check_encode(trained, d, n, 1);
    return 0;
}
