/* test_tokenizer.c - SentencePiece-style BPE: merge order on a hand-built
 * vocabulary, byte fallback, decoding, training, llama2.c's tokenizer.bin,
 * and a cross-check of the heap-based encoder against the plain O(n^2)
 * loop written here. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "common/common.h"
#include "synor/tokenizer.h"
#include "test.h"

#define SP "\xe2\x96\x81" /* U+2581, the space of SentencePiece pieces */

/* ------------------------------------------------------------ helpers */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

typedef struct extra {
    const char *piece;
    float score;
} extra;

/* <unk>, <s>, </s>, <0x00>..<0xFF>, then the extras (ids 259, 260, ...). */
static synor_tokenizer *hand_vocab(const extra *x, size_t nx)
{
    size_t n = 259 + nx;
    const char **pieces = malloc(n * sizeof *pieces);
    size_t *lens = malloc(n * sizeof *lens);
    float *scores = malloc(n * sizeof *scores);
    static char bytes[256][8];
    pieces[0] = "<unk>";
    pieces[1] = "<s>";
    pieces[2] = "</s>";
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        pieces[3 + b] = bytes[b];
    }
    for (size_t i = 0; i < n; i++) {
        if (i >= 259)
            pieces[i] = x[i - 259].piece;
        lens[i] = strlen(pieces[i]);
        scores[i] = i >= 259 ? x[i - 259].score : 0.0f;
    }
    synor_tokenizer_spec spec = {n, pieces, lens, scores, NULL, 1, 2, 0, 1};
    synor_tokenizer *t = NULL;
    if (synor_tokenizer_create(&spec, &t))
        fprintf(stderr, "  create: %s\n", synor_errmsg());
    free(pieces);
    free(lens);
    free(scores);
    return t;
}

static long enc(const synor_tokenizer *t, const char *s, int32_t *ids, size_t cap)
{
    return synor_tokenizer_encode(t, s, strlen(s), 0, 0, ids, cap);
}

/* ids as their pieces joined by '|' ("▁" kept), for readable assertions */
static const char *show(const synor_tokenizer *t, const int32_t *ids, long n)
{
    static char buf[4096];
    size_t o = 0;
    buf[0] = '\0';
    for (long i = 0; i < n; i++) {
        size_t len;
        const char *p = synor_tokenizer_piece(t, ids[i], &len);
        if (!p || o + len + 2 >= sizeof buf)
            return "(bad id)";
        if (i)
            buf[o++] = '|';
        memcpy(buf + o, p, len);
        o += len;
        buf[o] = '\0';
    }
    return buf;
}

static const char *encs(const synor_tokenizer *t, const char *s)
{
    int32_t ids[256];
    long n = enc(t, s, ids, 256);
    if (n < 0 || n > 256)
        return "(encode failed)";
    return show(t, ids, n);
}

/* Decodes ids (prev starting at `first`) into buf; its length. */
static size_t decode_all(const synor_tokenizer *t, int32_t first, const int32_t *ids, long n,
                         char *buf, size_t cap)
{
    size_t o = 0;
    int32_t prev = first;
    for (long i = 0; i < n; i++) {
        long k = synor_tokenizer_decode(t, prev, ids[i], buf + o, cap - o);
        if (k < 0 || (size_t)k > cap - o)
            return SIZE_MAX;
        o += (size_t)k;
        prev = ids[i];
    }
    return o;
}

static const extra ABC[] = {{SP, -10}, {"a", -11}, {"b", -12}, {"c", -13}, {"\xc3\xa9", -14},
                            {"ab", -1}, {"bc", -1}, {SP "a", -3}, {SP SP, -2}, {"aa", -1}};

/* ------------------------------------------------- hand-built vocabulary */

TEST(merge_order_ties_go_left_and_scores_rule)
{
    synor_tokenizer *t = hand_vocab(ABC, SYNOR__ARRAY_LEN(ABC));
    ASSERT(t);
    /* "ab" and "bc" tie at -1: the left one merges; "▁a" (-3) then cannot */
    ASSERT_STREQ(encs(t, "abc"), SP "|ab|c");
    ASSERT_STREQ(encs(t, "bc"), SP "|bc");
    ASSERT_STREQ(encs(t, "ca"), SP "|c|a"); /* "▁c" is no piece */
    ASSERT_STREQ(encs(t, "ac"), SP "a|c");
    /* overlapping candidates: leftmost first */
    ASSERT_STREQ(encs(t, "aaa"), SP "|aa|a");
    synor_tokenizer_destroy(t);

    /* raise "bc" above "ab": now it merges first */
    extra x[SYNOR__ARRAY_LEN(ABC)];
    memcpy(x, ABC, sizeof x);
    x[6].score = -0.5f;
    t = hand_vocab(x, SYNOR__ARRAY_LEN(x));
    ASSERT(t);
    ASSERT_STREQ(encs(t, "abc"), SP "a|bc");
    /* and "▁a" above both */
    synor_tokenizer_destroy(t);
    x[7].score = 0.5f;
    t = hand_vocab(x, SYNOR__ARRAY_LEN(x));
    ASSERT_STREQ(encs(t, "abc"), SP "a|bc");
    ASSERT_STREQ(encs(t, "abab"), SP "a|b|ab");
    synor_tokenizer_destroy(t);
}

TEST(byte_fallback_for_what_the_vocabulary_lacks)
{
    synor_tokenizer *t = hand_vocab(ABC, SYNOR__ARRAY_LEN(ABC));
    ASSERT(t);
    int32_t ids[64];
    /* "é" is a piece; "ü" is not: its two bytes */
    ASSERT_STREQ(encs(t, "\xc3\xa9\xc3\xbc"), SP "|\xc3\xa9|<0xC3>|<0xBC>");
    /* an emoji: four byte pieces, which never merge with their neighbours */
    ASSERT_STREQ(encs(t, "a\xf0\x9f\x98\x80" "b"), SP "a|<0xF0>|<0x9F>|<0x98>|<0x80>|b");
    /* control bytes, NUL included (the length, not a terminator, ends the text) */
    long n = synor_tokenizer_encode(t, "a\x01\n\0b", 5, 0, 0, ids, 64);
    ASSERT_EQ(n, 5);
    ASSERT_STREQ(show(t, ids, n), SP "a|<0x01>|<0x0A>|<0x00>|b");
    /* byte pieces are found by lookup: id = byte + 3 in this layout */
    ASSERT_EQ(ids[1], 0x01 + 3);
    ASSERT_EQ(ids[3], 3);
    synor_tokenizer_destroy(t);
}

TEST(invalid_utf8_falls_back_byte_by_byte)
{
    synor_tokenizer *t = hand_vocab(ABC, SYNOR__ARRAY_LEN(ABC));
    ASSERT(t);
    ASSERT_STREQ(encs(t, "\xff"), SP "|<0xFF>");
    ASSERT_STREQ(encs(t, "\xc3" "a"), SP "|<0xC3>|a");      /* cut-off sequence */
    ASSERT_STREQ(encs(t, "a\x80\x80"), SP "a|<0x80>|<0x80>"); /* stray continuations */
    ASSERT_STREQ(encs(t, "\xc0\x80"), SP "|<0xC0>|<0x80>");   /* overlong NUL */
    ASSERT_STREQ(encs(t, "\xed\xa0\x80"), SP "|<0xED>|<0xA0>|<0x80>"); /* surrogate */
    ASSERT_STREQ(encs(t, "\xf4\x90\x80\x80"), SP "|<0xF4>|<0x90>|<0x80>|<0x80>");
    /* a whole character, then a stray continuation byte */
    ASSERT_STREQ(encs(t, "\xc3\xa9\xa9"), SP "|\xc3\xa9|<0xA9>");
    ASSERT_STREQ(encs(t, "ab\xe2\x96"), SP "|ab|<0xE2>|<0x96>");
    synor_tokenizer_destroy(t);
}

TEST(empty_text_spaces_and_special_ids)
{
    synor_tokenizer *t = hand_vocab(ABC, SYNOR__ARRAY_LEN(ABC));
    ASSERT(t);
    int32_t ids[16];
    /* empty: no space prefix either (SentencePiece, run.c, llama.cpp) */
    ASSERT_EQ(synor_tokenizer_encode(t, "", 0, 0, 0, ids, 16), 0);
    ASSERT_EQ(synor_tokenizer_encode(t, NULL, 0, 0, 0, NULL, 0), 0);
    ASSERT_EQ(synor_tokenizer_encode(t, "", 0, 1, 1, ids, 16), 2);
    ASSERT_EQ(ids[0], 1);
    ASSERT_EQ(ids[1], 2);
    /* spaces: prefix + 3 = four "▁", merged in pairs from the left */
    ASSERT_STREQ(encs(t, "   "), SP SP "|" SP SP);
    ASSERT_STREQ(encs(t, "  "), SP SP "|" SP);
    ASSERT_STREQ(encs(t, "a b"), SP "a|" SP "|b");
    /* BOS first, EOS last */
    long n = synor_tokenizer_encode(t, "ab", 2, 1, 1, ids, 16);
    ASSERT_EQ(n, 4);
    ASSERT_EQ(ids[0], 1);
    ASSERT_STREQ(show(t, ids + 1, 2), SP "|ab");
    ASSERT_EQ(ids[3], 2);
    ASSERT_EQ(synor_tokenizer_bos(t), 1);
    ASSERT_EQ(synor_tokenizer_eos(t), 2);
    ASSERT_EQ(synor_tokenizer_unk(t), 0);
    synor_tokenizer_destroy(t);
}

TEST(cap_smaller_than_needed_returns_the_count)
{
    synor_tokenizer *t = hand_vocab(ABC, SYNOR__ARRAY_LEN(ABC));
    ASSERT(t);
    int32_t full[16], ids[16];
    long n = synor_tokenizer_encode(t, "abc ca\xff", 7, 1, 1, full, 16);
    ASSERT_EQ(n, 9); /* <s> ▁ ab c ▁ c a <0xFF> </s> */
    for (size_t cap = 0; cap < 10; cap++) {
        for (int i = 0; i < 16; i++)
            ids[i] = -7;
        ASSERT_EQ(synor_tokenizer_encode(t, "abc ca\xff", 7, 1, 1, cap ? ids : NULL, cap), 9);
        for (size_t i = 0; i < 16; i++)
            ASSERT_EQ(ids[i], i < cap ? full[i] : -7);
    }
    synor_tokenizer_destroy(t);
}

TEST(decode_spaces_bytes_and_control)
{
    synor_tokenizer *t = hand_vocab(ABC, SYNOR__ARRAY_LEN(ABC));
    ASSERT(t);
    char buf[16];
    int32_t sp_a = synor_tokenizer_find(t, SP "a", 4), spsp = synor_tokenizer_find(t, SP SP, 6);
    ASSERT(sp_a > 0 && spsp > 0);
    ASSERT_EQ(synor_tokenizer_decode(t, 1, sp_a, buf, sizeof buf), 1); /* after BOS */
    ASSERT(memcmp(buf, "a", 1) == 0);
    ASSERT_EQ(synor_tokenizer_decode(t, sp_a, sp_a, buf, sizeof buf), 2);
    ASSERT(memcmp(buf, " a", 2) == 0);
    ASSERT_EQ(synor_tokenizer_decode(t, 1, spsp, buf, sizeof buf), 1); /* only the first */
    ASSERT_EQ(synor_tokenizer_decode(t, 1, 3 + 0x20, buf, sizeof buf), 1); /* <0x20>: kept */
    ASSERT_EQ(buf[0], ' ');
    ASSERT_EQ(synor_tokenizer_decode(t, 5, 3 + 0xff, buf, sizeof buf), 1);
    ASSERT_EQ((unsigned char)buf[0], 0xff);
    ASSERT_EQ(synor_tokenizer_decode(t, 5, 1, buf, sizeof buf), 0); /* control */
    ASSERT_EQ(synor_tokenizer_decode(t, 5, 2, buf, sizeof buf), 0);
    ASSERT_EQ(synor_tokenizer_decode(t, 5, 0, buf, sizeof buf), 5); /* unknown: its text */
    /* a short buffer: the count, cap bytes written */
    memset(buf, 'x', sizeof buf);
    ASSERT_EQ(synor_tokenizer_decode(t, 5, sp_a, buf, 1), 2);
    ASSERT_EQ(buf[0], ' ');
    ASSERT_EQ(buf[1], 'x');
    ASSERT(synor_tokenizer_decode(t, 5, 10000, buf, sizeof buf) == SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "id 10000 out of range");
    ASSERT(synor_tokenizer_decode(t, 5, -1, buf, sizeof buf) == SYNOR_EINVAL);
    synor_tokenizer_destroy(t);
}

TEST(create_rejects_bad_vocabularies)
{
    const char *p[] = {"<unk>", "a", "b", "a"};
    size_t l[] = {5, 1, 1, 1};
    float s[] = {0, 0, 0, 0};
    int32_t ty[] = {2, 1, 1, 1};
    synor_tokenizer *t = NULL;
    synor_tokenizer_spec spec = {4, p, l, s, NULL, -1, -1, 0, 1};
    ASSERT(synor_tokenizer_create(&spec, &t) == SYNOR_EINVAL);
    ASSERT_STREQ(synor_errmsg(), "tokenizer: piece 3 (\"a\") duplicates piece 1");
    spec.n = 3;
    spec.bos = 3;
    ASSERT(synor_tokenizer_create(&spec, &t) == SYNOR_EINVAL);
    ASSERT_STREQ(synor_errmsg(), "tokenizer: BOS id 3 out of range (vocabulary of 3 pieces)");
    spec.bos = -1;
    l[2] = 0;
    ASSERT(synor_tokenizer_create(&spec, &t) == SYNOR_EINVAL);
    ASSERT_STREQ(synor_errmsg(), "tokenizer: piece 2 is empty");
    l[2] = 1;
    s[1] = NAN;
    ASSERT(synor_tokenizer_create(&spec, &t) == SYNOR_EINVAL);
    ASSERT_STREQ(synor_errmsg(), "tokenizer: piece 1 (\"a\"): score is NaN");
    s[1] = 0;
    spec.types = ty;
    ty[2] = SYNOR_TOKEN_BYTE;
    ASSERT(synor_tokenizer_create(&spec, &t) == SYNOR_EINVAL);
    ASSERT_STREQ(synor_errmsg(), "tokenizer: piece 2 (\"b\"): a byte piece must be <0xHH>");
    ty[2] = 7;
    ASSERT(synor_tokenizer_create(&spec, &t) == SYNOR_EINVAL);
    ASSERT_STREQ(synor_errmsg(), "tokenizer: piece 2 (\"b\"): type 7 is not 1..6");
    spec.n = 0;
    ASSERT(synor_tokenizer_create(&spec, &t) == SYNOR_EINVAL);
    ASSERT(t == NULL);
    /* no byte pieces and no unknown piece: a character outside is an error */
    ty[2] = 1;
    spec.n = 3;
    spec.unk = -1;
    ty[0] = 1;
    ASSERT_OK(synor_tokenizer_create(&spec, &t));
    int32_t ids[8];
    ASSERT(synor_tokenizer_encode(t, "a", 1, 0, 0, ids, 8) == SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "the space prefix is no piece");
    ASSERT(synor_tokenizer_encode(t, "a", 1, 1, 0, ids, 8) == SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "BOS asked for");
    synor_tokenizer_destroy(t);
    spec.add_space_prefix = 0;
    ASSERT_OK(synor_tokenizer_create(&spec, &t));
    ASSERT_EQ(synor_tokenizer_encode(t, "ab", 2, 0, 0, ids, 8), 2);
    ASSERT_EQ(ids[0], 1);
    ASSERT_EQ(ids[1], 2);
    ASSERT(synor_tokenizer_encode(t, "abc", 3, 0, 0, ids, 8) == SYNOR_EINVAL);
    ASSERT_STREQ(synor_errmsg(), "tokenizer: byte 2 of the text (0x63) is in no piece, and has "
                                 "no <0x63> piece nor an unknown piece to fall back to");
    synor_tokenizer_destroy(t);
}

/* ------------------------------------------------------------ training */

static const char *const WORDS[] = {
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and", "then",
    "tokenizer", "token", "tokens", "merge", "merges", "pair", "pairs", "byte", "bytes",
    "compute", "market", "spot", "price", "GPU", "CPU", "memory", "is", "of", "a", "to",
    "caf\xc3\xa9", "na\xc3\xafve", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "\xf0\x9f\x98\x80",
    "x=1;", "(y)", "12345", "hello,", "world.", "\n"};

static const char *const SYLLABLES[] = {
    "ka", "to", "ri", "men", "sa", "lo", "pu", "ne", "qua", "ti", "do", "ber", "an", "el",
    "is", "or", "un", "ex", "st", "gr", "\xc3\xa9", "\xc3\xbc", "\xe6\x97\xa5", "ch", "th"};

/* Deterministic text of about n bytes: words of WORDS, and made-up words
 * of 1 to 4 syllables (so training does not run out of pairs). */
static char *make_text(size_t n, uint64_t seed, size_t *len)
{
    char *s = malloc(n + 64);
    size_t o = 0;
    rng = seed;
    while (o < n) {
        if (rnd() % 3 == 0) {
            const char *w = WORDS[rnd() % SYNOR__ARRAY_LEN(WORDS)];
            size_t l = strlen(w);
            memcpy(s + o, w, l);
            o += l;
        } else {
            for (uint32_t k = rnd() % 4 + 1; k-- > 0;) {
                const char *w = SYLLABLES[rnd() % SYNOR__ARRAY_LEN(SYLLABLES)];
                size_t l = strlen(w);
                memcpy(s + o, w, l);
                o += l;
            }
        }
        s[o++] = ' ';
    }
    *len = o;
    return s;
}

/* Random strings: words, runs of spaces, random bytes (invalid UTF-8
 * included), random code points. */
static size_t random_string(char *s, size_t max)
{
    size_t o = 0, parts = rnd() % 12;
    for (size_t k = 0; k < parts && o + 16 < max; k++) {
        switch (rnd() % 5) {
        case 0:
        case 1: {
            const char *w = WORDS[rnd() % SYNOR__ARRAY_LEN(WORDS)];
            size_t l = strlen(w);
            if (o + l < max) {
                memcpy(s + o, w, l);
                o += l;
            }
            break;
        }
        case 2:
            for (uint32_t r = rnd() % 3 + 1; r-- > 0;)
                s[o++] = ' ';
            break;
        case 3:
            for (uint32_t r = rnd() % 4 + 1; r-- > 0;)
                s[o++] = (char)(rnd() & 0xff);
            break;
        default: { /* a code point, encoded by hand */
            uint32_t cp = rnd() % 0x30000;
            if (cp >= 0xd800 && cp < 0xe000)
                cp = 0x41;
            if (cp < 0x80) {
                s[o++] = (char)cp;
            } else if (cp < 0x800) {
                s[o++] = (char)(0xc0 | cp >> 6);
                s[o++] = (char)(0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
                s[o++] = (char)(0xe0 | cp >> 12);
                s[o++] = (char)(0x80 | (cp >> 6 & 0x3f));
                s[o++] = (char)(0x80 | (cp & 0x3f));
            } else {
                s[o++] = (char)(0xf0 | cp >> 18);
                s[o++] = (char)(0x80 | (cp >> 12 & 0x3f));
                s[o++] = (char)(0x80 | (cp >> 6 & 0x3f));
                s[o++] = (char)(0x80 | (cp & 0x3f));
            }
        }
        }
    }
    return o;
}

/* The distinct characters of make_text's texts, "▁" included. */
#define NCHARS 50

static synor_tokenizer *trained(size_t merges)
{
    size_t len;
    char *text = make_text(20000, 42, &len);
    synor_tokenizer *t = NULL;
    if (synor_tokenizer_train(text, len, 259 + NCHARS + merges, &t))
        fprintf(stderr, "  train: %s\n", synor_errmsg());
    free(text);
    return t;
}

static int same_vocab(const synor_tokenizer *a, const synor_tokenizer *b)
{
    if (synor_tokenizer_size(a) != synor_tokenizer_size(b))
        return 0;
    for (int32_t i = 0; (size_t)i < synor_tokenizer_size(a); i++) {
        size_t la, lb;
        const char *pa = synor_tokenizer_piece(a, i, &la), *pb = synor_tokenizer_piece(b, i, &lb);
        if (la != lb || memcmp(pa, pb, la) != 0 ||
            memcmp(&(float){synor_tokenizer_score(a, i)}, &(float){synor_tokenizer_score(b, i)},
                   sizeof(float)) != 0 ||
            synor_tokenizer_type(a, i) != synor_tokenizer_type(b, i)) {
            fprintf(stderr, "  piece %ld differs\n", (long)i);
            return 0;
        }
    }
    return 1;
}

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

/* ------------------------------------------------- llama2.c tokenizer.bin */

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

/* Loads image d as file `path`: expects EPARSE with a message holding want. */
static int load_fails(const char *path, const char *d, size_t len, size_t n, const char *want)
{
    synor_tokenizer *u = NULL;
    spit(path, d, len);
    int rc = synor_tokenizer_load_llama2c(path, n, &u);
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
    /* every truncation */
    for (size_t cut = 0; cut < size; cut++) {
        size_t piece = 0;
        while (piece < n && piece_at(d, piece + 1) <= cut)
            piece++;
        char want[64];
        if (cut < 4)
            snprintf(want, sizeof want, "truncated: %zu bytes, no max_token_length", cut);
        else
            snprintf(want, sizeof want, ": piece %zu: truncated", piece);
        ASSERT(load_fails(path, d, cut, n, want));
    }
    /* too many pieces asked for; too few */
    char want[96];
    snprintf(want, sizeof want, "piece %zu: truncated at byte %zu", n, size);
    ASSERT(load_fails(path, d, size, n + 1, want));
    snprintf(want, sizeof want, "bytes after piece %zu, the last of vocab_size %zu", n - 2, n - 1);
    ASSERT(load_fails(path, d, size, n - 1, want));
    /* a negative length */
    memcpy(e, d, size);
    wr32(e + piece_at(d, 5) + 4, (uint32_t)-3);
    ASSERT(load_fails(path, e, size, n, "piece 5: negative length -3"));
    /* longer than max_token_length */
    memcpy(e, d, size);
    wr32(e, 5);
    ASSERT(load_fails(path, e, size, n, "piece 3: length 6 exceeds the file's max_token_length 5"));
    /* a NaN score */
    memcpy(e, d, size);
    wr32(e + piece_at(d, 7), 0x7fc00000u);
    ASSERT(load_fails(path, e, size, n, "piece 7: score is NaN"));
    /* a duplicate piece: one character spelled as another */
    int32_t ia = synor_tokenizer_find(t, "a", 1), ie = synor_tokenizer_find(t, "e", 1);
    ASSERT(ia > 258 && ie > 258);
    int32_t hi = ia > ie ? ia : ie, lo = ia > ie ? ie : ia;
    memcpy(e, d, size);
    e[piece_at(d, (size_t)hi) + 8] = e[piece_at(d, (size_t)lo) + 8];
    snprintf(want, sizeof want, "piece %ld (\"%c\") duplicates piece %ld", (long)hi,
             e[piece_at(d, (size_t)lo) + 8], (long)lo);
    ASSERT(load_fails(path, e, size, n, want));
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

TEST_MAIN(merge_order_ties_go_left_and_scores_rule, byte_fallback_for_what_the_vocabulary_lacks,
          invalid_utf8_falls_back_byte_by_byte, empty_text_spaces_and_special_ids,
          cap_smaller_than_needed_returns_the_count, decode_spaces_bytes_and_control,
          create_rejects_bad_vocabularies, training_is_deterministic_and_complete,
          training_limits, round_trip_of_random_bytes, heap_encoder_matches_the_plain_loop,
          llama2c_save_load_round_trip, llama2c_corrupt_files_are_rejected,
          allocation_failures_leave_nothing_behind)
