/* tokenizer_text.h - what the tokenizer tests share: deterministic texts
 * and random strings, a trained vocabulary, vocabulary comparison. */
#ifndef SYNOR_TEST_TOKENIZER_TEXT_H
#define SYNOR_TEST_TOKENIZER_TEXT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "synor/tokenizer.h"

#define SP "\xe2\x96\x81" /* U+2581, the space of SentencePiece pieces */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static inline uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

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
static inline char *make_text(size_t n, uint64_t seed, size_t *len)
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
static inline size_t random_string(char *s, size_t max)
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

static inline synor_tokenizer *trained(size_t merges)
{
    size_t len;
    char *text = make_text(20000, 42, &len);
    synor_tokenizer *t = NULL;
    if (synor_tokenizer_train(text, len, 259 + NCHARS + merges, &t))
        fprintf(stderr, "  train: %s\n", synor_errmsg());
    free(text);
    return t;
}

static inline int same_vocab(const synor_tokenizer *a, const synor_tokenizer *b)
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

/* Decodes ids (prev starting at `first`) into buf; its length. */
static inline size_t decode_all(const synor_tokenizer *t, int32_t first, const int32_t *ids, long n,
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

#endif
