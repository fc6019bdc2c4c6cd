/* grammar_mask.c - the JSON constraint over a vocabulary: each piece's
 * bytes as it decodes after another token (byte-fallback pieces are their
 * byte), which pieces are plain string content, made once a model by its
 * first constraint; and the mask that sets to -INFINITY the logits of the
 * tokens that cannot continue the text (grammar.c's automaton decides). */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "llm/grammar.h"
#include "llm/llm_internal.h"

void synor__llm_pieces_free(struct llm_pieces *p)
{
    if (!p)
        return;
    synor__free(p->off);
    synor__free(p->bytes);
    synor__free(p->plain);
    synor__free(p->other);
    synor__free(p->by_chars);
    synor__free(p->head);
    synor__free(p->len);
    synor__free(p);
}

/* Every piece's bytes as it decodes after another token, and its plain
 * flag. */
static struct llm_pieces *pieces_make(const synor_llm *m)
{
    const synor_tokenizer *tok = m->tok;
    int V = m->cfg.vocab_size;
    struct llm_pieces *p = synor__calloc(1, sizeof *p);
    size_t cap = (size_t)V * 8 + 64, used = 0;
    if (p) {
        p->off = synor__malloc(((size_t)V + 1) * sizeof *p->off);
        p->bytes = synor__malloc(cap);
        p->plain = synor__malloc((size_t)V);
    }
    if (!p || !p->off || !p->bytes || !p->plain)
        goto oom;
    p->V = V;
    p->eos = synor_tokenizer_eos(tok);
    int32_t bos = synor_tokenizer_bos(tok);
    int32_t prev = p->eos >= 0 && p->eos != bos ? p->eos : 0; /* not BOS: pieces whole */
    for (int t = 0; t < V; t++) {
        p->off[t] = (uint32_t)used;
        if (t == p->eos || t == bos || t >= (int)synor_tokenizer_size(tok))
            continue;
        long n = synor_tokenizer_decode(tok, prev, t, p->bytes + used, cap - used);
        if (n > 0 && used + (size_t)n > cap) { /* grow, then decode it again */
            size_t c2 = 2 * cap + (size_t)n;
            char *nb = synor__realloc(p->bytes, c2);
            if (!nb)
                goto oom;
            p->bytes = nb;
            cap = c2;
            synor_tokenizer_decode(tok, prev, t, p->bytes + used, cap - used);
        }
        used += n > 0 ? (size_t)n : 0;
    }
    p->off[V] = (uint32_t)used;
    const jnode *any = synor__llm_schema_any()->n;
    for (int t = 0; t < V; t++) { /* as a string's content: node 0's, unbounded */
        jstate st = {.mode = J_STR};
        size_t n = p->off[t + 1] - p->off[t];
        const char *b = p->bytes + p->off[t];
        int plain = n > 0 && !memchr(b, '"', n) && !memchr(b, '\\', n) &&
                    synor__json_feed(any, &st, b, n) == 0 && st.mode == J_STR && st.need == 0;
        p->plain[t] = plain ? (uint8_t)(st.len < 255 ? st.len : 255) : 0;
        p->n_other += !plain;
    }
    p->other = synor__malloc((size_t)(p->n_other ? p->n_other : 1) * sizeof *p->other);
    p->head = synor__calloc(2 * (size_t)V, 1);
    p->len = synor__malloc((size_t)V);
    p->by_chars = synor__malloc((size_t)(V > p->n_other ? V - p->n_other : 1) * sizeof(int32_t));
    if (!p->other || !p->head || !p->len || !p->by_chars)
        goto oom;
    for (int c = 255, k = 0; c >= 1; c--) /* (V x 255 byte compares, once a model) */
        for (int t = 0; t < V; t++)
            if (p->plain[t] == c)
                p->by_chars[k++] = t;
    for (int t = 0; t < V; t++) {
        uint32_t n = p->off[t + 1] - p->off[t];
        p->len[t] = (uint8_t)(n < 255 ? n : 255);
        for (uint32_t k = 0; k < n && k < 2; k++)
            p->head[2 * t + k] = (uint8_t)p->bytes[p->off[t] + k];
    }
    for (int t = 0, k = 0; t < V; t++)
        if (!p->plain[t])
            p->other[k++] = t;
    return p;
oom:
    synor__llm_pieces_free(p);
    return NULL;
}

/* The model's pieces: made by the first constraint (two at once: one
 * wins, the other's copy is given back). */
const struct llm_pieces *synor__json_pieces(const synor_llm *m)
{
    struct llm_pieces *p = __atomic_load_n(&m->lazy->pieces, __ATOMIC_ACQUIRE);
    if (p)
        return p;
    struct llm_pieces *mine = pieces_make(m), *none = NULL;
    if (mine && !__atomic_compare_exchange_n(&m->lazy->pieces, &none, mine, 0, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE)) {
        synor__llm_pieces_free(mine);
        return none;
    }
    return mine;
}

/* Whether token t may come next, given the bytes that may come first
 * and, where few may, the bytes each allows after it (second, a bitmap per
 * first byte, or NULL): pieces of one or two bytes are decided by the
 * tables, longer ones are fed if they pass. */
static inline __attribute__((always_inline)) int token_ok(const synor_llm_json *j, int32_t t,
                                                          const uint8_t *first,
                                                          const uint8_t (*second)[32])
{
    unsigned n = j->len[t];
    const uint8_t *h = j->head + 2 * (size_t)t;
    if (!n)
        return t == j->eos && synor__json_can_end(j->g->n, &j->st);
    if (!first[h[0]])
        return 0;
    if (n == 1)
        return 1;
    if (second) {
        if (!(second[h[0]][h[1] >> 3] >> (h[1] & 7) & 1))
            return 0;
        if (n == 2)
            return 1;
    }
    return synor_llm_json_allows(j, t);
}

void synor_llm_json_mask(const synor_llm_json *j, float *logits)
{
    const jnode *N = j->g->n;
    const jstate *st = &j->st;
    int in_str = st->mode == J_STR && st->need == 0;
    /* a plain piece fits where the string has room for its characters */
    unsigned room = 255; /* (no bound: any count plain holds) */
    if (in_str && !st->is_key && N[st->vnode].kind == N_STR &&
        N[st->vnode].max != SCHEMA_UNBOUNDED) { /* (a count of 255 may be more: fed) */
        room = N[st->vnode].max > st->len ? N[st->vnode].max - st->len : 0;
        room = room < 254 ? room : 254;
    }
    /* the bytes that may come next: a token whose first byte is not one
     * is refused without feeding it (outside strings, most of them); where
     * few may, the bytes each allows after it too (after a value, most
     * tokens begin with a blank that allows only a few bytes after it) */
    enum { FEW = 16 };
    uint8_t first[256], firsts[FEW];
    jstate after[FEW]; /* the state after each of the first FEW that may come */
    int nfirst = 0;
    for (int b = 0; b < 256; b++) {
        jstate s;
        jcopy(&s, st);
        first[b] = synor__json_step(N, &s, b) == 0;
        if (first[b] && nfirst < FEW) {
            firsts[nfirst] = (uint8_t)b;
            jcopy(&after[nfirst], &s);
        }
        nfirst += first[b];
    }
    uint8_t second[256][32]; /* rows of the bytes in firsts only */
    int two = !in_str && nfirst <= FEW;
    for (int i = 0; two && i < nfirst; i++) {
        uint8_t *row = second[firsts[i]];
        memset(row, 0, 32);
        for (int c = 0; c < 256; c++) {
            jstate s;
            jcopy(&s, &after[i]);
            row[c >> 3] |= (uint8_t)((synor__json_step(N, &s, c) == 0) << (c & 7));
        }
    }
    const uint8_t(*sec)[32] = two ? (const uint8_t(*)[32])second : NULL;
    if (in_str) { /* plain pieces fit if the string has room: only the others are tried */
        for (int k = 0; k < j->n_other; k++)
            if (!token_ok(j, j->other[k], first, sec))
                logits[j->other[k]] = -INFINITY;
        for (int k = 0; room < 255 && k < j->V - j->n_other && j->plain[j->by_chars[k]] > room;
             k++)
            logits[j->by_chars[k]] = -INFINITY;
        return;
    }
    for (int t = 0; t < j->V; t++)
        if (!token_ok(j, t, first, sec))
            logits[t] = -INFINITY;
}

