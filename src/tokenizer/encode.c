/* encode.c - text to piece ids: SentencePiece's BPE encoding.
 *
 * The text (with the space prefix, spaces as U+2581) is cut into symbols,
 * one per UTF-8 character that is a piece, one per byte otherwise (byte
 * fallback). Symbols form a doubly linked list over one array; a max-heap
 * holds the candidate merges of adjacent symbols, best score first and the
 * leftmost on ties. A merge folds the right symbol into the left one and
 * offers the two new neighbour pairs; heap entries a merge made stale are
 * recognised when they come up (a side gone, or a size that no longer
 * adds up) and dropped. So a text of n bytes costs O(n log n), and the
 * result is the one of the plain loop (find the best pair, merge, repeat),
 * which tests/test_tokenizer.c checks. */
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

#define NONE UINT32_MAX
/* The symbols index bytes of the normalised text (up to 3 per byte) with
 * 32-bit offsets. */
#define ENCODE_MAX_BYTES ((size_t)1 << 30)

typedef struct sym {
    int32_t id;
    uint32_t start, n; /* bytes of the normalised text; n = 0 once merged away */
    uint32_t prev, next;
    int merge;         /* 0: a byte-fallback symbol, never merged */
} sym;

typedef struct bigram {
    float score;
    int32_t id; /* the piece the pair makes */
    uint32_t left, right, size;
} bigram;

typedef struct enc {
    const synor_tokenizer *tok;
    const char *norm;
    sym *s;
    uint32_t ns, cap, max; /* max: the normalised text's length, < 2^32 - 1 */
    bigram *heap;
    size_t nheap;
} enc;

static int before(const bigram *a, const bigram *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(enc *e, bigram b)
{
    size_t i = e->nheap++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!before(&b, &e->heap[up]))
            break;
        e->heap[i] = e->heap[up];
        i = up;
    }
    e->heap[i] = b;
}

static bigram heap_pop(enc *e)
{
    bigram top = e->heap[0], last = e->heap[--e->nheap];
    size_t i = 0, n = e->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && before(&e->heap[c + 1], &e->heap[c]))
            c++;
        if (!before(&e->heap[c], &last))
            break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (n)
        e->heap[i] = last;
    return top;
}

/* Offers the pair (l, r) if their bytes together are a piece. */
static void offer(enc *e, uint32_t l, uint32_t r)
{
    if (l == NONE || r == NONE || !e->s[l].merge || !e->s[r].merge)
        return;
    size_t size = (size_t)e->s[l].n + e->s[r].n;
    if (size > e->tok->max_len)
        return;
    const synor_tokenizer *t = e->tok;
    int32_t id = synor__tokmap_find(&t->map, t->blob, t->off, e->norm + e->s[l].start, size);
    if (id < 0 || !synor__tok_mergeable(t, id))
        return;
    bigram b = {t->scores[id], id, l, r, (uint32_t)size};
    heap_push(e, b);
}

static int add_sym(enc *e, int32_t id, size_t start, size_t n, int merge)
{
    if (e->ns == e->cap) {
        /* only when byte fallback splits characters (a space without a
         * "▁" piece: 3 symbols); never more than one per normalised byte */
        uint32_t cap = e->cap > e->max / 2 ? e->max : e->cap * 2;
        sym *q = synor__realloc(e->s, (size_t)cap * sizeof *q);
        if (!q)
            return synor__error(SYNOR_ENOMEM, "tokenizer: out of memory encoding");
        e->s = q;
        e->cap = cap;
    }
    sym *s = &e->s[e->ns++];
    s->id = id;
    s->start = (uint32_t)start;
    s->n = (uint32_t)n;
    s->merge = merge;
    return 0;
}

/* The symbols of the character norm[start..start+n). For messages: at is
 * its offset in the text (SIZE_MAX for the space prefix), space whether it
 * stands for a space. */
static int add_char(enc *e, size_t start, size_t n, int valid, size_t at, int space)
{
    const synor_tokenizer *t = e->tok;
    if (valid) {
        int32_t id = synor__tokmap_find(&t->map, t->blob, t->off, e->norm + start, n);
        if (id >= 0 && synor__tok_mergeable(t, id))
            return add_sym(e, id, start, n, 1);
    }
    for (size_t j = 0; j < n; j++) {
        unsigned char b = (unsigned char)e->norm[start + j];
        int32_t id = t->byte_id[b] >= 0 ? t->byte_id[b] : t->unk;
        if (id < 0) {
            if (at == SIZE_MAX)
                return synor__error(SYNOR_EINVAL,
                                    "tokenizer: the space prefix is no piece, and byte 0x%02X "
                                    "has no <0x%02X> piece nor an unknown piece", b, b);
            return synor__error(SYNOR_EINVAL,
                                "tokenizer: byte %zu of the text (0x%02X) is in no piece, and "
                                "has no <0x%02X> piece nor an unknown piece to fall back to",
                                at + (space ? 0 : j), b, b);
        }
        int rc = add_sym(e, id, start + j, 1, 0);
        if (rc)
            return rc;
    }
    return 0;
}

/* Splits text into symbols, writing the normalised text to e->norm. */
static int split(enc *e, char *norm, const char *text, size_t len, int prefix)
{
    size_t o = 0;
    int rc;
    if (prefix) {
        memcpy(norm, SYNOR__TOK_SPACE, SYNOR__TOK_SPACE_LEN);
        o = SYNOR__TOK_SPACE_LEN;
        if ((rc = add_char(e, 0, o, 1, SIZE_MAX, 1)))
            return rc;
    }
    for (size_t i = 0; i < len;) {
        size_t start = o, at = i, n;
        int valid = 1, space = text[i] == ' ';
        if (space) {
            memcpy(norm + o, SYNOR__TOK_SPACE, SYNOR__TOK_SPACE_LEN);
            n = SYNOR__TOK_SPACE_LEN;
            i++;
        } else {
            n = synor__utf8_char((const unsigned char *)text + i, len - i);
            if (n == 0) {
                valid = 0;
                n = 1;
            }
            memcpy(norm + o, text + i, n);
            i += n;
        }
        o += n;
        if ((rc = add_char(e, start, n, valid, at, space)))
            return rc;
    }
    for (uint32_t k = 0; k < e->ns; k++) {
        e->s[k].prev = k ? k - 1 : NONE;
        e->s[k].next = k + 1 < e->ns ? k + 1 : NONE;
    }
    return 0;
}

static void merge_all(enc *e)
{
    for (uint32_t k = 0; k + 1 < e->ns; k++)
        offer(e, k, k + 1);
    while (e->nheap) {
        bigram b = heap_pop(e);
        sym *l = &e->s[b.left], *r = &e->s[b.right];
        if (l->n == 0 || r->n == 0 || l->next != b.right || l->n + r->n != b.size)
            continue; /* stale: a side took part in another merge since */
        l->n = b.size;
        l->id = b.id;
        r->n = 0;
        l->next = r->next;
        if (r->next != NONE)
            e->s[r->next].prev = b.left;
        offer(e, l->prev, b.left);
        offer(e, b.left, l->next);
    }
}

static void put(int32_t *ids, size_t cap, size_t *k, int32_t id)
{
    if (*k < cap)
        ids[*k] = id;
    (*k)++;
}

/* text[0..len) (len >= 1) encoded after *k ids, with the space prefix
 * if prefix. */
static int encode_text(const synor_tokenizer *tok, const char *text, size_t len, int prefix,
                       int32_t *ids, size_t cap, size_t *k)
{
    enc e = {tok, NULL, NULL, 0, 0, 0, NULL, 0};
    char *norm = synor__malloc(3 * len + SYNOR__TOK_SPACE_LEN);
    e.max = (uint32_t)(3 * len + SYNOR__TOK_SPACE_LEN);
    e.cap = (uint32_t)len + 1; /* enough unless byte fallback splits characters */
    e.s = synor__malloc(e.cap * sizeof *e.s);
    e.norm = norm;
    int rc = 0;
    if (!norm || !e.s)
        rc = synor__error(SYNOR_ENOMEM, "tokenizer: out of memory encoding %zu bytes", len);
    else if (!(rc = split(&e, norm, text, len, prefix))) {
        /* n - 1 first pairs, then at most 2 per merge, and n - 1 merges */
        e.heap = synor__malloc(3 * (size_t)e.ns * sizeof *e.heap);
        if (!e.heap)
            rc = synor__error(SYNOR_ENOMEM, "tokenizer: out of memory encoding %zu bytes", len);
    }
    if (!rc) {
        merge_all(&e);
        for (uint32_t i = 0; i != NONE && e.ns; i = e.s[i].next)
            put(ids, cap, k, e.s[i].id);
    }
    synor__free(norm);
    synor__free(e.s);
    synor__free(e.heap);
    return rc;
}

static int check_args(const synor_tokenizer *tok, const char *text, size_t len, int bos,
                      int eos, const int32_t *ids, size_t cap)
{
    if (!tok)
        return synor__error(SYNOR_EINVAL, "tokenizer: NULL tokenizer");
    if (!text && len)
        return synor__error(SYNOR_EINVAL, "tokenizer: NULL text of %zu bytes", len);
    if (!ids && cap)
        return synor__error(SYNOR_EINVAL, "tokenizer: NULL ids for %zu ids", cap);
    if (bos && tok->bos < 0)
        return synor__error(SYNOR_EINVAL, "tokenizer: BOS asked for, but the vocabulary has none");
    if (eos && tok->eos < 0)
        return synor__error(SYNOR_EINVAL, "tokenizer: EOS asked for, but the vocabulary has none");
    if (len > ENCODE_MAX_BYTES)
        return synor__error(SYNOR_ERANGE, "tokenizer: a text of %zu bytes, more than the %zu "
                            "one call encodes", len, ENCODE_MAX_BYTES);
    return 0;
}

long synor_tokenizer_encode(const synor_tokenizer *tok, const char *text, size_t len, int bos,
                            int eos, int32_t *ids, size_t cap)
{
    int rc = check_args(tok, text, len, bos, eos, ids, cap);
    if (rc)
        return rc;
    size_t k = 0;
    if (bos)
        put(ids, cap, &k, tok->bos);
    /* as SentencePiece: an empty text gets no space prefix either */
    if (len && (rc = encode_text(tok, text, len, tok->add_space_prefix, ids, cap, &k)))
        return rc;
    if (eos)
        put(ids, cap, &k, tok->eos);
    return (long)k;
}

long synor_tokenizer_encode_fragment(const synor_tokenizer *tok, const char *text, size_t len,
                                     int32_t *ids, size_t cap)
{
    int rc = check_args(tok, text, len, 0, 0, ids, cap);
    size_t k = 0;
    if (!rc && len)
        rc = encode_text(tok, text, len, 0, ids, cap, &k);
    return rc ? rc : (long)k;
}

/* The special piece (control or user-defined) text[0..n) begins with, the
 * longest; its length in *len; -1 if none. */
static int32_t special_at(const synor_tokenizer *tok, const char *text, size_t n, size_t *len)
{
    for (size_t i = 0; i < tok->nspecial; i++) {
        int32_t id = tok->special[i];
        size_t l = tok->off[id + 1] - tok->off[id];
        if (l <= n && tok->blob[tok->off[id]] == text[0] &&
            !memcmp(tok->blob + tok->off[id], text, l)) {
            *len = l;
            return id;
        }
    }
    return -1;
}

long synor_tokenizer_encode_special(const synor_tokenizer *tok, const char *text, size_t len,
                                    int bos, int32_t *ids, size_t cap)
{
    int rc = check_args(tok, text, len, bos, 0, ids, cap);
    if (rc)
        return rc;
    size_t k = 0, start = 0;
    if (bos)
        put(ids, cap, &k, tok->bos);
    /* every fragment of plain text - the first, and each after a special
     * piece - is encoded on its own, with the space prefix (llama.cpp's
     * rule for SentencePiece vocabularies) */
    for (size_t i = 0; i <= len;) {
        size_t sl = 0;
        int32_t sp = i < len ? special_at(tok, text + i, len - i, &sl) : -1;
        if (sp < 0 && i < len) {
            i++;
            continue;
        }
        if (i > start &&
            (rc = encode_text(tok, text + start, i - start, tok->add_space_prefix, ids, cap, &k)))
            return rc;
        if (sp < 0)
            break;
        put(ids, cap, &k, sp);
        i += sl;
        start = i;
    }
    return (long)k;
}
