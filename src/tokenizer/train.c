/* train.c - BPE training, as SentencePiece's BPE trainer does it, kept
 * small: words are the text split at spaces ("▁" prefixed, so "▁" begins a
 * piece, never ends one), each word a list of pieces; every step merges the
 * most frequent adjacent pair (weighted by how often the word occurs; ties
 * to the smaller ids) into a new piece, scored below every earlier one.
 *
 * Pair counts are kept up to date as merges change words: a merge
 * subtracts the pairs of each word it touches and adds them back after.
 * A lazy max-heap finds the most frequent pair: an entry whose count has
 * fallen since it was pushed is pushed again with the current count when
 * it comes up. Each step scans the distinct words for the pair, so training
 * costs O(merges x symbols of the distinct words), fine for the texts tests
 * and examples use, not for a corpus of gigabytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

/* Scores -k stay exact in a float up to 2^24. */
#define TRAIN_MAX_VOCAB ((size_t)1 << 24)
#define N_RESERVED 259 /* <unk>, <s>, </s>, 256 byte pieces */

/* Distinct byte strings with an id each, a count and (for pieces) a score
 * and a type. */
typedef struct strtab {
    char *blob;
    size_t len, cap;
    size_t *off; /* n + 1 */
    size_t n, ncap;
    int64_t *count;
    float *score;
    int32_t *type;
    synor__tokmap map;
} strtab;

static void strtab_free(strtab *t)
{
    synor__free(t->blob);
    synor__free(t->off);
    synor__free(t->count);
    synor__free(t->score);
    synor__free(t->type);
    synor__tokmap_free(&t->map);
}

#define GROW(p, cap, need)                                                    \
    do {                                                                      \
        if ((need) > (cap)) {                                                 \
            size_t c_ = (cap) ? (cap) : 16;                                   \
            while (c_ < (need))                                               \
                c_ *= 2;                                                      \
            void *q_ = synor__realloc((p), c_ * sizeof *(p));                 \
            if (!q_)                                                          \
                return synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training"); \
            (p) = q_;                                                         \
            (cap) = c_;                                                       \
        }                                                                     \
    } while (0)

/* The id of s[0..n), added if new; its count grows by add. */
static int strtab_add(strtab *t, const char *s, size_t n, int64_t add, int32_t *id)
{
    int32_t i = synor__tokmap_find(&t->map, t->blob, t->off, s, n);
    if (i < 0) {
        GROW(t->blob, t->cap, t->len + n);
        if (t->n + 2 > t->ncap) {
            size_t c = t->ncap ? t->ncap * 2 : 64;
            void *q;
            if (!(q = synor__realloc(t->off, c * sizeof *t->off)))
                return synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training");
            t->off = q;
            if (!(q = synor__realloc(t->count, c * sizeof *t->count)))
                return synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training");
            t->count = q;
            if (!(q = synor__realloc(t->score, c * sizeof *t->score)))
                return synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training");
            t->score = q;
            if (!(q = synor__realloc(t->type, c * sizeof *t->type)))
                return synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training");
            t->type = q;
            t->ncap = c;
        }
        if (n)
            memcpy(t->blob + t->len, s, n);
        t->off[t->n] = t->len;
        t->len += n;
        t->off[t->n + 1] = t->len;
        int rc = synor__tokmap_add(&t->map, t->blob, t->off, (uint32_t)t->n);
        if (rc)
            return rc;
        i = (int32_t)t->n++;
        t->count[i] = 0;
        t->score[i] = 0.0f;
        t->type[i] = SYNOR_TOKEN_NORMAL;
    }
    t->count[i] += add;
    *id = i;
    return 0;
}

typedef struct pair {
    int32_t a, b;
    int64_t count, before; /* before: the count when this step first touched it */
    uint32_t stamp;        /* the step that last touched it */
    int blocked;           /* makes a reserved piece's text: never merged */
} pair;

typedef struct hentry {
    int64_t count;
    int32_t a, b;
} hentry;

typedef struct word {
    int32_t *s;
    size_t n;
    int64_t count;
} word;

typedef struct trainer {
    strtab pieces;
    pair *pairs;
    size_t npairs, pcap;
    uint32_t *slots; /* pair index + 1, 0 empty */
    size_t mask;
    hentry *heap;
    size_t nheap, hcap;
    word *words;
    size_t nwords;
    uint32_t *touched;
    size_t ntouched, tcap;
    uint32_t stamp;
} trainer;

static size_t pair_hash(int32_t a, int32_t b, size_t mask)
{
    uint64_t k = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) * 0x9e3779b97f4a7c15ull;
    return (size_t)(k >> 17) & mask;
}

static pair *pair_find(const trainer *t, int32_t a, int32_t b)
{
    if (!t->slots)
        return NULL;
    for (size_t i = pair_hash(a, b, t->mask);; i = (i + 1) & t->mask) {
        uint32_t v = t->slots[i];
        if (!v)
            return NULL;
        pair *p = &t->pairs[v - 1];
        if (p->a == a && p->b == b)
            return p;
    }
}

static int pair_get(trainer *t, int32_t a, int32_t b, pair **out)
{
    pair *p = pair_find(t, a, b);
    if (p) {
        *out = p;
        return 0;
    }
    if (!t->slots || (t->npairs + 1) * 2 > t->mask + 1) {
        size_t size = t->slots ? (t->mask + 1) * 2 : 1024;
        uint32_t *slots = synor__calloc(size, sizeof *slots);
        if (!slots)
            return synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training");
        for (size_t k = 0; k < t->npairs; k++) {
            size_t i = pair_hash(t->pairs[k].a, t->pairs[k].b, size - 1);
            while (slots[i])
                i = (i + 1) & (size - 1);
            slots[i] = (uint32_t)k + 1;
        }
        synor__free(t->slots);
        t->slots = slots;
        t->mask = size - 1;
    }
    GROW(t->pairs, t->pcap, t->npairs + 1);
    p = &t->pairs[t->npairs];
    memset(p, 0, sizeof *p);
    p->a = a;
    p->b = b;
    size_t i = pair_hash(a, b, t->mask);
    while (t->slots[i])
        i = (i + 1) & t->mask;
    t->slots[i] = (uint32_t)++t->npairs;
    *out = p;
    return 0;
}

/* Max-heap order: higher count, then smaller ids (a total order, so the
 * result does not depend on the order of pushes). */
static int hbefore(const hentry *x, const hentry *y)
{
    if (x->count != y->count)
        return x->count > y->count;
    if (x->a != y->a)
        return x->a < y->a;
    return x->b < y->b;
}

static int heap_push(trainer *t, int64_t count, int32_t a, int32_t b)
{
    GROW(t->heap, t->hcap, t->nheap + 1);
    hentry e = {count, a, b};
    size_t i = t->nheap++;
    while (i > 0 && hbefore(&e, &t->heap[(i - 1) / 2])) {
        t->heap[i] = t->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    t->heap[i] = e;
    return 0;
}

static hentry heap_pop(trainer *t)
{
    hentry top = t->heap[0], last = t->heap[--t->nheap];
    size_t i = 0, n = t->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && hbefore(&t->heap[c + 1], &t->heap[c]))
            c++;
        if (!hbefore(&t->heap[c], &last))
            break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (n)
        t->heap[i] = last;
    return top;
}

/* Adds sign * w->count to every adjacent pair of w, noting the pairs
 * touched in this step. */
static int count_word(trainer *t, const word *w, int sign)
{
    for (size_t i = 0; i + 1 < w->n; i++) {
        pair *p = NULL;
        int rc = pair_get(t, w->s[i], w->s[i + 1], &p);
        if (rc)
            return rc;
        if (p->stamp != t->stamp) {
            p->stamp = t->stamp;
            p->before = p->count;
            GROW(t->touched, t->tcap, t->ntouched + 1);
            t->touched[t->ntouched++] = (uint32_t)(p - t->pairs);
        }
        p->count += sign * w->count;
    }
    return 0;
}

/* Pushes the pairs whose count grew in this step (one whose count fell
 * keeps an entry above its count: corrected when it comes up). */
static int push_touched(trainer *t)
{
    for (size_t k = 0; k < t->ntouched; k++) {
        const pair *p = &t->pairs[t->touched[k]];
        if (p->count > p->before && !p->blocked) {
            int rc = heap_push(t, p->count, p->a, p->b);
            if (rc)
                return rc;
        }
    }
    t->ntouched = 0;
    t->stamp++;
    return 0;
}

/* Splits text into words counted in `words` (normalised bytes). */
static int collect_words(const char *text, size_t len, strtab *words)
{
    synor__buf w;
    synor__buf_init(&w);
    int32_t id;
    int rc = 0;
    if (len)
        synor__buf_append(&w, SYNOR__TOK_SPACE, SYNOR__TOK_SPACE_LEN);
    for (size_t i = 0; i <= len && !rc;) {
        size_t n = i < len ? synor__utf8_char((const unsigned char *)text + i, len - i) : 0;
        if (i == len || text[i] == ' ' || n == 0) { /* a word ends */
            if (w.failed)
                rc = synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training");
            else if (w.len)
                rc = strtab_add(words, w.data, w.len, 1, &id);
            w.len = 0;
            if (i < len && text[i] == ' ')
                synor__buf_append(&w, SYNOR__TOK_SPACE, SYNOR__TOK_SPACE_LEN);
            i++; /* an invalid byte is no character: it only splits words */
        } else {
            synor__buf_append(&w, text + i, n);
            i += n;
        }
    }
    synor__buf_free(&w);
    return rc;
}

typedef struct charent {
    int64_t count;
    const char *s;
    size_t n;
} charent;

static int char_cmp(const void *x, const void *y)
{
    const charent *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    size_t m = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->s, b->s, m);
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

static size_t char_len(const char *s, size_t n)
{
    size_t c = synor__utf8_char((const unsigned char *)s, n);
    return c ? c : 1; /* cannot happen: words hold whole characters */
}

/* The reserved pieces, then the characters of the words by frequency. */
static int add_base_pieces(trainer *t, const strtab *words, size_t vocab_size)
{
    static const char *const special[3] = {"<unk>", "<s>", "</s>"};
    static const int32_t stype[3] = {SYNOR_TOKEN_UNKNOWN, SYNOR_TOKEN_CONTROL, SYNOR_TOKEN_CONTROL};
    int32_t id;
    int rc;
    for (int k = 0; k < 3; k++) {
        if ((rc = strtab_add(&t->pieces, special[k], strlen(special[k]), 0, &id)))
            return rc;
        t->pieces.type[id] = stype[k];
    }
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        if ((rc = strtab_add(&t->pieces, s, 6, 0, &id)))
            return rc;
        t->pieces.type[id] = SYNOR_TOKEN_BYTE;
    }
    strtab chars = {0};
    charent *ents = NULL;
    for (size_t w = 0; w < words->n; w++) {
        const char *s = words->blob + words->off[w];
        size_t n = words->off[w + 1] - words->off[w];
        for (size_t i = 0; i < n;) {
            size_t c = char_len(s + i, n - i);
            if ((rc = strtab_add(&chars, s + i, c, words->count[w], &id)))
                goto out;
            i += c;
        }
    }
    if (vocab_size < N_RESERVED + chars.n) {
        rc = synor__error(SYNOR_EINVAL, "tokenizer: vocab_size %zu is below 259 (<unk>, <s>, "
                          "</s>, 256 bytes) + the %zu distinct characters of the text",
                          vocab_size, chars.n);
        goto out;
    }
    if (chars.n) {
        ents = synor__malloc(chars.n * sizeof *ents);
        if (!ents) {
            rc = synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training");
            goto out;
        }
        for (size_t c = 0; c < chars.n; c++)
            ents[c] = (charent){chars.count[c], chars.blob + chars.off[c],
                                chars.off[c + 1] - chars.off[c]};
        qsort(ents, chars.n, sizeof *ents, char_cmp);
        for (size_t c = 0; c < chars.n; c++)
            if ((rc = strtab_add(&t->pieces, ents[c].s, ents[c].n, 0, &id)))
                goto out;
    }
out:
    synor__free(ents);
    strtab_free(&chars);
    return rc;
}

/* Each distinct word as its characters' piece ids. */
static int make_words(trainer *t, const strtab *words)
{
    t->words = synor__calloc(words->n, sizeof *t->words);
    if (!t->words)
        return synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training");
    t->nwords = words->n;
    for (size_t w = 0; w < words->n; w++) {
        const char *s = words->blob + words->off[w];
        size_t n = words->off[w + 1] - words->off[w];
        word *wd = &t->words[w];
        wd->count = words->count[w];
        wd->s = synor__malloc(n * sizeof *wd->s);
        if (!wd->s)
            return synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training");
        for (size_t i = 0; i < n;) {
            size_t c = char_len(s + i, n - i);
            wd->s[wd->n++] = synor__tokmap_find(&t->pieces.map, t->pieces.blob, t->pieces.off,
                                                s + i, c);
            i += c;
        }
        int rc = count_word(t, wd, 1);
        if (rc)
            return rc;
    }
    return push_touched(t);
}

/* Replaces every (a, b) in the words with id, left to right. */
static int apply_merge(trainer *t, int32_t a, int32_t b, int32_t id)
{
    int rc;
    for (size_t w = 0; w < t->nwords; w++) {
        word *wd = &t->words[w];
        size_t i = 0;
        while (i + 1 < wd->n && !(wd->s[i] == a && wd->s[i + 1] == b))
            i++;
        if (i + 1 >= wd->n)
            continue;
        if ((rc = count_word(t, wd, -1)))
            return rc;
        size_t o = i;
        for (; i < wd->n; i++) {
            if (i + 1 < wd->n && wd->s[i] == a && wd->s[i + 1] == b) {
                wd->s[o++] = id;
                i++;
            } else {
                wd->s[o++] = wd->s[i];
            }
        }
        wd->n = o;
        if ((rc = count_word(t, wd, 1)))
            return rc;
    }
    return push_touched(t);
}

static int train(trainer *t, const char *text, size_t len, size_t vocab_size,
                 synor_tokenizer **out)
{
    strtab words = {0};
    char *cat = NULL;
    const char **pp = NULL;
    size_t *lens = NULL;
    int rc;
    if ((rc = collect_words(text, len, &words)) || (rc = add_base_pieces(t, &words, vocab_size)) ||
        (rc = make_words(t, &words)))
        goto out;
    strtab *P = &t->pieces;
    size_t nchars = P->n, merges = 0;
    while (P->n < vocab_size && t->nheap) {
        hentry e = heap_pop(t);
        pair *p = pair_find(t, e.a, e.b);
        if (!p || p->blocked || p->count <= 0)
            continue;
        if (p->count != e.count) { /* fallen since: back in with its count */
            if ((rc = heap_push(t, p->count, p->a, p->b)))
                goto out;
            continue;
        }
        size_t la = P->off[e.a + 1] - P->off[e.a], lb = P->off[e.b + 1] - P->off[e.b];
        void *q = synor__realloc(cat, la + lb);
        if (!q) {
            rc = synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training");
            goto out;
        }
        cat = q;
        memcpy(cat, P->blob + P->off[e.a], la);
        memcpy(cat + la, P->blob + P->off[e.b], lb);
        int32_t id = synor__tokmap_find(&P->map, P->blob, P->off, cat, la + lb);
        if (id >= 0 && (size_t)id < N_RESERVED) {
            p->blocked = 1; /* the text spells "<s>" or "<0x41>": not a piece of its own */
            continue;
        }
        if (id < 0) { /* else two merges spell the same piece: no new one */
            if ((rc = strtab_add(P, cat, la + lb, 0, &id)))
                goto out;
            P->score[id] = (float)-(long)merges++;
        }
        if ((rc = apply_merge(t, e.a, e.b, id)))
            goto out;
    }
    /* characters below every merge, by frequency */
    for (size_t c = N_RESERVED; c < nchars; c++)
        P->score[c] = (float)-(long)(merges + (c - N_RESERVED));
    pp = synor__malloc(P->n * sizeof *pp);
    lens = synor__malloc(P->n * sizeof *lens);
    if (!pp || !lens) {
        rc = synor__error(SYNOR_ENOMEM, "tokenizer: out of memory training");
        goto out;
    }
    for (size_t i = 0; i < P->n; i++) {
        pp[i] = P->blob + P->off[i];
        lens[i] = P->off[i + 1] - P->off[i];
    }
    synor_tokenizer_spec spec = {P->n, pp, lens, P->score, P->type, 1, 2, 0, 1};
    rc = synor_tokenizer_create(&spec, out);
out:
    strtab_free(&words);
    synor__free(cat);
    synor__free(pp);
    synor__free(lens);
    return rc;
}

int synor_tokenizer_train(const char *text, size_t len, size_t vocab_size, synor_tokenizer **out)
{
    if (!out || (!text && len))
        return synor__error(SYNOR_EINVAL, "tokenizer: no text or no output pointer");
    if (vocab_size > TRAIN_MAX_VOCAB)
        return synor__error(SYNOR_EINVAL, "tokenizer: vocab_size %zu above the %zu training "
                            "supports", vocab_size, TRAIN_MAX_VOCAB);
    trainer t;
    memset(&t, 0, sizeof t);
    t.stamp = 1; /* new pairs have stamp 0: untouched in any step */
    int rc = train(&t, text, len, vocab_size, out);
    strtab_free(&t.pieces);
    synor__free(t.pairs);
    synor__free(t.slots);
    synor__free(t.heap);
    for (size_t w = 0; w < t.nwords; w++)
        synor__free(t.words[w].s);
    synor__free(t.words);
    synor__free(t.touched);
    return rc;
}
