/* test_tokenizer_train.c - BPE training (deterministic, complete, merges
 * that compress), encode/decode round trips of random bytes, and the
 * heap-based encoder against the plain O(n^2) loop written here. */
#include <math.h>

#include "test.h"
#include "tokenizer_text.h"

TEST(training_is_deterministic_and_complete)
{
    synor_tokenizer *a = trained(400), *b = trained(400);
    ASSERT(a && b);
    ASSERT(same_vocab(a, b));
    ASSERT_EQ(synor_tokenizer_size(a), 259 + NCHARS + 400);
    size_t len;
    const char *p = synor_tokenizer_piece(a, 0, &len);
    ASSERT(len == 5 && memcmp(p, "<unk>", 5) == 0);
    ASSERT_EQ(synor_tokenizer_type(a, 0), SYNOR_TOKEN_UNKNOWN);
    p = synor_tokenizer_piece(a, 1, &len);
    ASSERT(len == 3 && memcmp(p, "<s>", 3) == 0);
    ASSERT_EQ(synor_tokenizer_type(a, 1), SYNOR_TOKEN_CONTROL);
    p = synor_tokenizer_piece(a, 2, &len);
    ASSERT(len == 4 && memcmp(p, "</s>", 4) == 0);
    ASSERT_EQ(synor_tokenizer_type(a, 2), SYNOR_TOKEN_CONTROL);
    for (int b8 = 0; b8 < 256; b8++) {
        char want[8];
        snprintf(want, sizeof want, "<0x%02X>", b8);
        p = synor_tokenizer_piece(a, 3 + b8, &len);
        ASSERT(len == 6 && memcmp(p, want, 6) == 0);
        ASSERT_EQ(synor_tokenizer_type(a, 3 + b8), SYNOR_TOKEN_BYTE);
    }
    /* characters, then merges scored in decreasing order, all above the
     * characters; "▁" is the most frequent character */
    ASSERT_EQ(synor_tokenizer_find(a, SP, 3), 259);
    for (int32_t i = 259 + NCHARS + 1; i < 259 + NCHARS + 400; i++)
        ASSERT(synor_tokenizer_score(a, i) < synor_tokenizer_score(a, i - 1));
    ASSERT(synor_tokenizer_score(a, 259 + NCHARS + 399) > synor_tokenizer_score(a, 259));
    /* whole frequent words became pieces */
    ASSERT(synor_tokenizer_find(a, SP "tokenizer", 12) > 0);
    ASSERT(synor_tokenizer_find(a, SP "caf\xc3\xa9", 8) > 0);

    /* merges compress: the training text in under a third as many ids as
     * bytes (3.6 bytes per id with these 400 merges) */
    char *text = make_text(20000, 42, &len);
    long n = synor_tokenizer_encode(a, text, len, 0, 0, NULL, 0);
    ASSERT(n > 0 && (size_t)n * 3 < len);
    /* and a different text from the same words too */
    free(text);
    text = make_text(5000, 7, &len);
    n = synor_tokenizer_encode(a, text, len, 0, 0, NULL, 0);
    ASSERT(n > 0 && (size_t)n * 3 < len);
    free(text);
    synor_tokenizer_destroy(a);
    synor_tokenizer_destroy(b);
}

TEST(training_limits)
{
    synor_tokenizer *t = NULL;
    ASSERT(synor_tokenizer_train("ab ab", 5, 261, &t) == SYNOR_EINVAL);
    ASSERT_STREQ(synor_errmsg(), "tokenizer: vocab_size 261 is below 259 (<unk>, <s>, </s>, 256 "
                                 "bytes) + the 3 distinct characters of the text");
    ASSERT(t == NULL);
    /* the text runs out of pairs: fewer pieces than asked for */
    ASSERT_OK(synor_tokenizer_train("ab ab", 5, 1000, &t));
    ASSERT_EQ(synor_tokenizer_size(t), 259 + 3 + 2); /* "▁a", "▁ab" */
    int32_t ids[4];
    ASSERT_EQ(synor_tokenizer_encode(t, "ab", 2, 0, 0, ids, 4), 1);
    synor_tokenizer_destroy(t);
    /* the empty text: the reserved pieces only */
    ASSERT_OK(synor_tokenizer_train("", 0, 259, &t));
    ASSERT_EQ(synor_tokenizer_size(t), 259);
    synor_tokenizer_destroy(t);
    /* text spelling a reserved piece never merges into it */
    ASSERT_OK(synor_tokenizer_train("<s> <s> <0x41> <0x41>", 21, 400, &t));
    ASSERT_EQ(synor_tokenizer_encode(t, "<s>", 3, 0, 0, ids, 4), 1);
    ASSERT(ids[0] != 1);
    synor_tokenizer_destroy(t);
}

TEST(round_trip_of_random_bytes)
{
    synor_tokenizer *t = trained(400);
    ASSERT(t);
    char s[512], want[512], got[2048];
    int32_t ids[1024];
    rng = 99;
    for (int k = 0; k < 3000; k++) {
        size_t len = random_string(s, sizeof s);
        long n = synor_tokenizer_encode(t, s, len, 1, 0, ids, 1024);
        ASSERT(n >= 1 && n <= 1024);
        ASSERT_EQ(ids[0], 1);
        size_t got_len = decode_all(t, ids[0], ids + 1, n - 1, got, sizeof got);
        /* a literal "▁" in the text reads back as a space: SentencePiece's
         * normalisation, not a loss of this tokenizer's */
        size_t wl = 0;
        for (size_t i = 0; i < len; i++) {
            if (i + 3 <= len && memcmp(s + i, SP, 3) == 0) {
                want[wl++] = ' ';
                i += 2;
            } else {
                want[wl++] = s[i];
            }
        }
        ASSERT_EQ(got_len, wl);
        ASSERT(memcmp(got, want, wl) == 0);
    }
    synor_tokenizer_destroy(t);
}

/* ------------------------------------------- the plain loop, written here */

typedef struct naive_vocab {
    const synor_tokenizer *t;
    int32_t *sorted; /* ids sorted by bytes */
    size_t n;
} naive_vocab;

static const synor_tokenizer *cmp_tok;
static int cmp_piece(const void *x, const void *y)
{
    size_t la, lb;
    const char *a = synor_tokenizer_piece(cmp_tok, *(const int32_t *)x, &la);
    const char *b = synor_tokenizer_piece(cmp_tok, *(const int32_t *)y, &lb);
    int c = memcmp(a, b, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static int32_t naive_find(const naive_vocab *v, const char *s, size_t n)
{
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2, l;
        const char *p = synor_tokenizer_piece(v->t, v->sorted[mid], &l);
        int c = memcmp(p, s, l < n ? l : n);
        if (!c)
            c = (l > n) - (l < n);
        if (!c)
            return v->sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Length of the UTF-8 character at s (decoding the code point and
 * checking its range), 0 if ill-formed. */
static size_t naive_char(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80 ? 1 : (s[0] >> 5) == 6 ? 2 : (s[0] >> 4) == 14 ? 3 : (s[0] >> 3) == 30 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    uint32_t cp = len == 1 ? s[0] : s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || (cp >= 0xd800 && cp < 0xe000) || cp > 0x10ffff)
        return 0;
    return len;
}

static int naive_ok(const synor_tokenizer *t, int32_t id)
{
    int ty = synor_tokenizer_type(t, id);
    return id >= 0 && (ty == SYNOR_TOKEN_NORMAL || ty == SYNOR_TOKEN_USER_DEFINED);
}

/* run.c's loop: find the best-scoring adjacent pair (leftmost on ties),
 * merge it, repeat. */
static long naive_encode(const naive_vocab *v, const char *text, size_t len, int32_t *ids)
{
    char norm[4096];
    size_t start[2048], n_[2048], ns = 0, o = 0;
    int32_t id[2048];
    int merge[2048];
    if (len) {
        memcpy(norm, SP, 3);
        o = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(norm + o, SP, 3);
            o += 3;
        } else {
            norm[o++] = text[i];
        }
    }
    for (size_t i = 0; i < o;) {
        size_t c = naive_char((const unsigned char *)norm + i, o - i);
        int32_t p = c ? naive_find(v, norm + i, c) : -1;
        if (p >= 0 && naive_ok(v->t, p)) {
            start[ns] = i, n_[ns] = c, id[ns] = p, merge[ns++] = 1;
        } else {
            for (size_t j = 0; j < (c ? c : 1); j++) {
                char bp[8];
                snprintf(bp, sizeof bp, "<0x%02X>", (unsigned char)norm[i + j]);
                start[ns] = i + j, n_[ns] = 1, id[ns] = naive_find(v, bp, 6), merge[ns++] = 0;
            }
        }
        i += c ? c : 1;
    }
    for (;;) {
        float best = 0;
        long bi = -1;
        int32_t bid = -1;
        for (size_t i = 0; i + 1 < ns; i++) {
            if (!merge[i] || !merge[i + 1])
                continue;
            int32_t p = naive_find(v, norm + start[i], n_[i] + n_[i + 1]);
            if (naive_ok(v->t, p) && (bi < 0 || synor_tokenizer_score(v->t, p) > best)) {
                best = synor_tokenizer_score(v->t, p);
                bi = (long)i;
                bid = p;
            }
        }
        if (bi < 0)
            break;
        id[bi] = bid;
        n_[bi] += n_[bi + 1];
        for (size_t i = (size_t)bi + 1; i + 1 < ns; i++)
            start[i] = start[i + 1], n_[i] = n_[i + 1], id[i] = id[i + 1], merge[i] = merge[i + 1];
        ns--;
    }
    memcpy(ids, id, ns * sizeof *ids);
    return (long)ns;
}

static void cross_check(const synor_tokenizer *t, int rounds)
{
    naive_vocab v = {t, malloc(synor_tokenizer_size(t) * sizeof(int32_t)), synor_tokenizer_size(t)};
    for (size_t i = 0; i < v.n; i++)
        v.sorted[i] = (int32_t)i;
    cmp_tok = t;
    qsort(v.sorted, v.n, sizeof *v.sorted, cmp_piece);
    char s[512];
    int32_t a[2048], b[2048];
    size_t tl;
    char *text = make_text(400, 5, &tl);
    for (int k = 0; k < rounds; k++) {
        size_t len = k == 0 ? tl : random_string(s, sizeof s);
        const char *x = k == 0 ? text : s;
        long na = synor_tokenizer_encode(t, x, len, 0, 0, a, 2048);
        long nb = naive_encode(&v, x, len, b);
        if (na != nb || memcmp(a, b, (size_t)na * sizeof *a) != 0) {
            fprintf(stderr, "  string %d (%zu bytes): %ld ids vs %ld of the plain loop\n", k, len,
                    na, nb);
            test__s.failed = 1;
            break;
        }
    }
    free(text);
    free(v.sorted);
}

TEST(heap_encoder_matches_the_plain_loop)
{
    synor_tokenizer *t = trained(600);
    ASSERT(t);
    rng = 1234;
    cross_check(t, 3000);
    /* the same pieces with coarse scores: many ties, which must go left */
    size_t n = synor_tokenizer_size(t);
    const char **p = malloc(n * sizeof *p);
    size_t *l = malloc(n * sizeof *l);
    float *sc = malloc(n * sizeof *sc);
    int32_t *ty = malloc(n * sizeof *ty);
    for (int32_t i = 0; (size_t)i < n; i++) {
        p[i] = synor_tokenizer_piece(t, i, &l[i]);
        sc[i] = floorf(synor_tokenizer_score(t, i) / 50.0f);
        ty[i] = synor_tokenizer_type(t, i);
    }
    synor_tokenizer_spec spec = {n, p, l, sc, ty, 1, 2, 0, 1};
    synor_tokenizer *c = NULL;
    ASSERT_OK(synor_tokenizer_create(&spec, &c));
    cross_check(c, 3000);
    /* and reversed scores: late merges first, so longer pieces can't form */
    for (size_t i = 0; i < n; i++)
        sc[i] = -sc[i];
    synor_tokenizer *r = NULL;
    ASSERT_OK(synor_tokenizer_create(&spec, &r));
    cross_check(r, 2000);
    free(p);
    free(l);
    free(sc);
    free(ty);
    synor_tokenizer_destroy(r);
    synor_tokenizer_destroy(c);
    synor_tokenizer_destroy(t);
}

TEST_MAIN(training_is_deterministic_and_complete, training_limits, round_trip_of_random_bytes,
          heap_encoder_matches_the_plain_loop)
