/* test_tokenizer.c - SentencePiece-style BPE on a hand-built vocabulary:
 * merge order (scores, ties), byte fallback, invalid UTF-8, empty text and
 * spaces, BOS/EOS, short output buffers, decoding, bad vocabularies.
 * Training, the cross-check against the plain loop: test_tokenizer_train.c;
 * llama2.c's tokenizer.bin: test_tokenizer_llama2c.c. */
#include "test.h"
#include "tokenizer_text.h"

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

TEST(spaces_without_a_space_piece_fall_back_to_three_bytes)
{
    /* every input byte here becomes three symbols: more than one per byte */
    static const extra x[] = {{"a", -1}};
    synor_tokenizer *t = hand_vocab(x, 1);
    ASSERT(t);
    char text[64];
    int32_t ids[4 * 64];
    memset(text, ' ', sizeof text);
    long n = synor_tokenizer_encode(t, text, sizeof text, 1, 1, ids, SYNOR__ARRAY_LEN(ids));
    ASSERT_EQ(n, 2 + 3 * (64 + 1));
    for (long i = 1; i + 1 < n; i++)
        ASSERT_EQ(ids[i], 3 + (i % 3 == 1 ? 0xe2 : i % 3 == 2 ? 0x96 : 0x81));
    ASSERT_STREQ(encs(t, "a a"), "<0xE2>|<0x96>|<0x81>|a|<0xE2>|<0x96>|<0x81>|a");
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

/* Special pieces (a chat template's markers) taken whole by encode_special: control and
 * user-defined pieces, the longest where two begin at one place; the text between them encoded
 * fragment by fragment, each with the space prefix; plain encode never produces them. */
TEST(special_pieces_taken_whole)
{
    size_t n = 259 + 7;
    const char **pieces = malloc(n * sizeof *pieces);
    size_t *lens = malloc(n * sizeof *lens);
    int32_t *types = malloc(n * sizeof *types);
    static char bytes[256][8];
    static const char *const extra_p[7] = {SP, "a", "b", "<|im", "<|im_start|>", "<|u|>", SP "a"};
    static const int32_t extra_t[7] = {1, 1, 1, 3, 3, 4, 1};
    pieces[0] = "<unk>", pieces[1] = "<s>", pieces[2] = "</s>";
    types[0] = 2, types[1] = types[2] = 3;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        pieces[3 + b] = bytes[b];
        types[3 + b] = 6;
    }
    for (int i = 0; i < 7; i++) {
        pieces[259 + i] = extra_p[i];
        types[259 + i] = extra_t[i];
    }
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(pieces[i]);
    synor_tokenizer_spec spec = {n, pieces, lens, NULL, types, 1, 2, 0, 1};
    synor_tokenizer *t = NULL;
    ASSERT_OK(synor_tokenizer_create(&spec, &t));
    int32_t ids[64];
    const char *text = "<|im_start|>a b</s><|im<|u|>a";
    long k = synor_tokenizer_encode_special(t, text, strlen(text), 1, ids, 64);
    ASSERT(k > 0);
    ASSERT_STREQ(show(t, ids, k), "<s>|<|im_start|>|" SP "a|" SP "|b|</s>|<|im|<|u|>|" SP "a");
    /* a short buffer: the count, the first ids */
    ASSERT_EQ(synor_tokenizer_encode_special(t, text, strlen(text), 1, ids, 2), k);
    ASSERT_STREQ(show(t, ids, 2), "<s>|<|im_start|>");
    /* no special piece in the text: plain encode's ids */
    int32_t plain[64];
    long a = synor_tokenizer_encode_special(t, "ab a", 4, 0, ids, 64);
    long b = synor_tokenizer_encode(t, "ab a", 4, 0, 0, plain, 64);
    ASSERT(a == b && !memcmp(ids, plain, (size_t)a * sizeof *ids));
    /* plain encode reads the markers as text */
    ASSERT(strstr(encs(t, "<|im_start|>"), "<|im_start|>") == NULL);
    ASSERT_EQ(synor_tokenizer_encode_special(t, "", 0, 0, ids, 64), 0);
    synor_tokenizer_destroy(t);
    free(pieces);
    free(lens);
    free(types);
}

TEST_MAIN(merge_order_ties_go_left_and_scores_rule, special_pieces_taken_whole,
          byte_fallback_for_what_the_vocabulary_lacks, invalid_utf8_falls_back_byte_by_byte,
          spaces_without_a_space_piece_fall_back_to_three_bytes, empty_text_spaces_and_special_ids,
          cap_smaller_than_needed_returns_the_count, decode_spaces_bytes_and_control,
          create_rejects_bad_vocabularies)
