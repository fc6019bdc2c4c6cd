/* grammar.c - constrained decoding: a JSON object (OpenAI's response_format
 * {"type": "json_object"}), or one that a JSON Schema allows ("json_schema").
 *
 * A byte-level pushdown automaton of RFC 8259 (objects, arrays, strings
 * with their escapes, numbers, true / false / null, whitespace) walking a
 * schema's node graph (schema.h; no schema: any object): its state is a few
 * bytes and a frame per level of nesting (the container's node and how far
 * it has got), so that trying a token is copying the state and feeding it
 * the token's bytes. Each step every token of the vocabulary is tried from
 * the current state and the logits of those that would break the text are
 * set to -INFINITY; EOS is allowed only once the object is closed, and then
 * it alone. The schema compiler guarantees every state has a way on: a
 * container is entered only where its required content fits in the levels
 * left, an alternative is picked by its first byte, a property's name is
 * matched byte by byte among those that may come next. A token's bytes are
 * its piece as it decodes after another token (byte-fallback pieces are
 * their byte), computed once a model, by its first constraint. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "common/common.h"
#include "llm/llm_internal.h"
#include "llm/schema.h"

enum {
    J_START,        /* before the object: '{' */
    J_VALUE,        /* a value of node vnode (after ':' or ',' in an array) */
    J_KEY_OR_END,   /* after '{': a key or '}' */
    J_KEY,          /* after ',' in an object: a key */
    J_COLON,        /* after a key */
    J_AFTER,        /* after a value inside a container: ',' or its closer */
    J_VALUE_OR_END, /* after '[': a value or ']' */
    J_KEYLIT,       /* a property's name: cand the properties still matching */
    J_ENUM,         /* a value of an enum: cand the values still matching */
    J_STR,
    J_STR_ESC,
    J_STR_U,     /* aux hex digits left, cp the value so far */
    J_STR_PAIR,  /* after a high surrogate's \uD8xx-\uDBxx: '\' */
    J_STR_PAIRU, /* then 'u' (its four digits: a low surrogate) */
    J_NUM_MINUS,
    J_NUM_ZERO,
    J_NUM_INT,
    J_NUM_DOT,
    J_NUM_FRAC,
    J_NUM_E,
    J_NUM_ESIGN,
    J_NUM_EXP,
    J_LIT, /* true, false or null: lit, aux bytes matched */
    J_DONE /* the object closed: nothing more but the end */
};

typedef struct jframe {
    uint16_t node;
    uint16_t n;   /* an object's next property; an array's items begun */
    uint16_t sel; /* the value its sel_prop took (which N_SWITCH alternative) */
} jframe;

typedef struct jstate {
    uint8_t mode, depth, is_key, aux, lit;
    /* in a string: UTF-8 continuation bytes still needed and the range of
     * the next (Unicode's table 3-7); a \u escape's value so far and
     * whether it must be a low surrogate */
    uint8_t need, lo, hi, low;
    /* whitespace since the last token of JSON: 0 none, 0xff one space,
     * 1 + k a newline and k spaces or tabs of indentation */
    uint8_t ws;
    uint8_t intg; /* the number being written is an integer */
    uint16_t cp;
    uint16_t vnode; /* the node of the value to come, or being written */
    uint16_t len;   /* a string's characters; a name's or enum value's bytes */
    uint64_t cand;
    jframe fr[JSON_MAX_DEPTH]; /* [0, depth) in use: copies take only those */
} jstate;

/* The vocabulary as the automaton reads it, made once a model (its
 * first constraint) and shared by every constraint of the model. */
struct llm_pieces {
    int V;
    int32_t eos;
    uint32_t *off; /* token t's bytes: bytes[off[t] .. off[t + 1]) */
    char *bytes;
    /* plain[t]: t's bytes are string content that leaves a string where it
     * was (no quote, backslash or control byte; whole UTF-8 characters),
     * and how many characters (at most 255): inside a string, where most
     * of an answer is written, such a token is allowed without feeding it
     * (where the string's length is bounded, if it fits) */
    uint8_t *plain;
    /* the tokens that are not plain (EOS among them), in order: inside an
     * unbounded string only these are tried */
    int32_t *other;
    int n_other;
    /* the plain tokens, most characters first: in a bounded string those
     * with more than it has room for are refused, the rest allowed */
    int32_t *by_chars;
    /* each token's first two bytes and its length (at most 255), side by
     * side so that a mask reads them in one pass */
    uint8_t *head, *len;
};

struct synor_llm_json {
    jstate st;
    synor_llm_schema *g; /* held */
    int V;
    int32_t eos;
    const uint32_t *off; /* the model's pieces' */
    const char *bytes;
    const uint8_t *plain;
    const int32_t *other;
    int n_other;
    const int32_t *by_chars;
    const uint8_t *head, *len;
};

static const char *const lits[3] = {"true", "false", "null"};

static void copy(jstate *d, const jstate *s)
{
    memcpy(d, s, offsetof(jstate, fr) + s->depth * sizeof(jframe));
}

static int is_ws(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* Whether a value of node n fits in the levels left at this depth. */
static int fits(const jnode *N, const jstate *s, uint16_t n)
{
    return n != SCHEMA_NONE && s->depth + N[n].depth <= JSON_MAX_DEPTH;
}

static jframe *top(jstate *s) { return &s->fr[s->depth - 1]; }

static int top_obj(const jnode *N, const jstate *s)
{
    return s->depth && N[s->fr[s->depth - 1].node].kind == N_OBJ;
}

static int push(const jnode *N, jstate *s, uint16_t node)
{
    if (!fits(N, s, node))
        return -1;
    s->fr[s->depth].node = node;
    s->fr[s->depth].n = 0;
    s->fr[s->depth].sel = 0;
    s->depth++;
    s->mode = N[node].kind == N_OBJ ? J_KEY_OR_END : J_VALUE_OR_END;
    return 0;
}

/* A value (or the object itself) is complete. */
static void end_value(jstate *s) { s->mode = s->depth ? J_AFTER : J_DONE; }

static int pop(const jnode *N, jstate *s, int obj)
{
    if (!s->depth || top_obj(N, s) != obj)
        return -1;
    s->depth--;
    end_value(s);
    return 0;
}

/* Property i's node in frame f's object (a switch: the alternative its
 * object picked). */
static uint16_t prop_node(const jnode *N, const jframe *f, unsigned i)
{
    uint16_t n = N[f->node].props[i].node;
    return N[n].kind == N_SWITCH ? N[n].alts[f->sel] : n;
}

/* The properties of the object on top that may come next: from its next
 * one to the first required one, those that fit. */
static uint64_t candidates(const jnode *N, const jstate *s)
{
    const jframe *f = &s->fr[s->depth - 1];
    const jnode *o = &N[f->node];
    uint64_t c = 0;
    unsigned last = o->nextreq[f->n] < o->nprops ? o->nextreq[f->n] : o->nprops - 1u;
    for (unsigned i = f->n; i <= last && i < o->nprops; i++)
        if (fits(N, s, prop_node(N, f, i)))
            c |= 1ull << i;
    return c;
}

static int num_byte(const jnode *N, jstate *s, int c);

/* The first byte of a value of node `node`. */
static int value_start(const jnode *N, jstate *s, uint16_t node, int c)
{
    const jnode *n = &N[node];
    if (n->kind == N_UNION) {
        if ((node = n->alt_of[c]) == SCHEMA_NONE)
            return -1;
        n = &N[node];
    }
    int kind = n->kind;
    if (kind == N_ANY) { /* its containers: nodes 1 and 2 */
        kind = c == '{'                ? N_OBJ
               : c == '['              ? N_ARR
               : c == '"'              ? N_STR
               : c == 't' || c == 'f'  ? N_BOOL
               : c == 'n'              ? N_NULL
                                       : N_NUM;
        node = kind == N_OBJ ? 1 : kind == N_ARR ? 2 : 0;
    }
    switch (kind) {
    case N_OBJ:
        return c == '{' ? push(N, s, node) : -1;
    case N_ARR:
        return c == '[' ? push(N, s, node) : -1;
    case N_STR:
        if (c != '"')
            return -1;
        s->mode = J_STR;
        s->is_key = 0;
        s->len = 0;
        s->vnode = node;
        return 0;
    case N_NUM:
    case N_INT:
        s->intg = kind == N_INT;
        s->mode = J_NUM_MINUS;
        return c == '-' ? 0 : num_byte(N, s, c);
    case N_BOOL:
    case N_NULL:
        if (kind == N_BOOL ? c != 't' && c != 'f' : c != 'n')
            return -1;
        s->mode = J_LIT;
        s->lit = c == 't' ? 0 : c == 'f' ? 1 : 2;
        s->aux = 1;
        return 0;
    case N_LIT:
        s->cand = 0;
        for (unsigned i = 0; i < n->nlits; i++)
            if ((unsigned char)n->lits[i][0] == c)
                s->cand |= 1ull << i;
        s->mode = J_ENUM;
        s->len = 1;
        s->vnode = node;
        return s->cand ? 0 : -1;
    default:
        return -1;
    }
}

/* Whitespace between tokens of JSON is llama.cpp's JSON grammar's: one
 * space, or a newline and at most JSON_MAX_INDENT spaces or tabs - so a
 * model cannot fill its answer with blanks, yet can indent. */
#define JSON_MAX_INDENT 20
static int ws_step(jstate *s, int c)
{
    if (s->ws == 0) {
        s->ws = c == ' ' ? 0xff : c == '\n' ? 1 : 0;
        return s->ws ? 0 : -1;
    }
    if (s->ws == 0xff || s->ws > JSON_MAX_INDENT || (c != ' ' && c != '\t'))
        return -1;
    s->ws++;
    return 0;
}

/* A key's first byte, '"'; then its bytes (an object with properties) or
 * any string (without: a map). */
static int key_start(const jnode *N, jstate *s, int c)
{
    const jnode *o = &N[top(s)->node];
    if (c != '"')
        return -1;
    if (!o->nprops) {
        if (!fits(N, s, o->sub))
            return -1;
        s->mode = J_STR;
        s->is_key = 1;
        return 0;
    }
    s->cand = candidates(N, s);
    s->mode = J_KEYLIT;
    s->len = 0;
    return s->cand ? 0 : -1;
}

/* A byte of a property's name (as JSON writes it) or its closing quote. */
static int key_byte(const jnode *N, jstate *s, int c)
{
    jframe *f = top(s);
    const jnode *o = &N[f->node];
    uint64_t keep = 0;
    for (uint64_t m = s->cand; m; m &= m - 1) {
        unsigned i = (unsigned)__builtin_ctzll(m);
        const jprop *p = &o->props[i];
        if (c == '"' && p->klen == s->len) { /* (an escaped quote is \": no clash) */
            f->n = (uint16_t)(i + 1);
            s->vnode = prop_node(N, f, i);
            s->mode = J_COLON;
            return 0;
        }
        if (p->klen > s->len && (unsigned char)p->key[s->len] == c)
            keep |= 1ull << i;
    }
    s->cand = keep;
    s->len++;
    return keep ? 0 : -1;
}

static int step(const jnode *N, jstate *s, int c);

/* A byte of an enum's value, or the first after it. */
static int enum_byte(const jnode *N, jstate *s, int c)
{
    const jnode *e = &N[s->vnode];
    uint64_t keep = 0;
    int whole = -1;
    for (uint64_t m = s->cand; m; m &= m - 1) {
        unsigned i = (unsigned)__builtin_ctzll(m);
        if (e->llen[i] > s->len && (unsigned char)e->lits[i][s->len] == c)
            keep |= 1ull << i;
        if (e->llen[i] == s->len) /* (values differ: one at most) */
            whole = (int)i;
    }
    if (keep) {
        s->cand = keep;
        s->len++;
        return 0;
    }
    if (whole < 0)
        return -1;
    if (s->depth) { /* the property that picks its object's switch */
        jframe *f = top(s);
        if (N[f->node].kind == N_OBJ && N[f->node].sel_prop == f->n - 1u)
            f->sel = (uint16_t)whole;
    }
    end_value(s); /* the value ended before c: c is the next thing */
    return step(N, s, c);
}

/* A byte inside a string: its characters counted against its bounds. */
static int str_byte(const jnode *N, jstate *s, int c)
{
    if (s->need) { /* a UTF-8 continuation byte */
        if (c < s->lo || c > s->hi)
            return -1;
        s->need--;
        s->lo = 0x80;
        s->hi = 0xbf;
        return 0;
    }
    const jnode *sn = &N[s->vnode];
    int bounded = !s->is_key && sn->kind == N_STR;
    if (c == '"') {
        if (s->is_key) {
            s->mode = J_COLON;
            s->vnode = N[top(s)->node].sub;
            return 0;
        }
        if (bounded && s->len < sn->min)
            return -1;
        end_value(s);
        return 0;
    }
    if (bounded && sn->max != SCHEMA_UNBOUNDED && s->len >= sn->max)
        return -1;
    s->len += s->len < 0xffff;
    if (c == '\\') {
        s->mode = J_STR_ESC;
    } else if (c < 0x20) {
        return -1;
    } else if (c >= 0x80) { /* a UTF-8 lead byte */
        s->lo = 0x80;
        s->hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf)
            s->need = 1;
        else if (c >= 0xe0 && c <= 0xef)
            s->need = 2, s->lo = c == 0xe0 ? 0xa0 : 0x80, s->hi = c == 0xed ? 0x9f : 0xbf;
        else if (c >= 0xf0 && c <= 0xf4)
            s->need = 3, s->lo = c == 0xf0 ? 0x90 : 0x80, s->hi = c == 0xf4 ? 0x8f : 0xbf;
        else
            return -1;
    }
    return 0;
}

static int hex_byte(jstate *s, int c)
{
    int v = is_digit(c)                             ? c - '0'
            : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10
                                                   : -1;
    if (v < 0)
        return -1;
    s->cp = (uint16_t)(s->cp << 4 | v);
    s->aux--;
    /* a low surrogate (DC00-DFFF) after a high one, and only there; no
     * \u0000: checked digit by digit, so no prefix is a dead end */
    if (s->low && ((s->aux == 3 && v != 0xd) || (s->aux == 2 && v < 0xc)))
        return -1;
    if (!s->low && s->aux == 2 && (s->cp >> 4) == 0xd && v >= 0xc)
        return -1;
    if (s->aux == 0 && !s->low && s->cp == 0)
        return -1;
    if (s->aux == 0)
        s->mode = !s->low && s->cp >= 0xd800 && s->cp <= 0xdbff ? J_STR_PAIR : J_STR;
    return 0;
}

/* A number's digits are bounded as llama.cpp's JSON grammars bound them
 * (a model that repeats a digit must end its number): at most 16 before
 * the point, 16 after it, 3 in the exponent. aux counts them. */
#define NUM_DIGITS 16
#define EXP_DIGITS 3
static int num_byte(const jnode *N, jstate *s, int c)
{
    switch (s->mode) {
    case J_NUM_MINUS: /* (also a number's first byte, when not '-') */
        if (c == '0')
            s->mode = J_NUM_ZERO;
        else if (c >= '1' && c <= '9')
            s->mode = J_NUM_INT;
        else
            return -1;
        s->aux = 1;
        return 0;
    case J_NUM_DOT:
        if (!is_digit(c))
            return -1;
        s->mode = J_NUM_FRAC;
        s->aux = 1;
        return 0;
    case J_NUM_E:
        if (c == '+' || c == '-') {
            s->mode = J_NUM_ESIGN;
            return 0;
        }
        /* fall through */
    case J_NUM_ESIGN:
        if (!is_digit(c))
            return -1;
        s->mode = J_NUM_EXP;
        s->aux = 1;
        return 0;
    default: /* ZERO, INT, FRAC, EXP: where the number may end */
        if (is_digit(c) && s->mode != J_NUM_ZERO)
            return s->aux++ < (s->mode == J_NUM_EXP ? EXP_DIGITS : NUM_DIGITS) ? 0 : -1;
        if (c == '.' && !s->intg && s->mode != J_NUM_FRAC && s->mode != J_NUM_EXP) {
            s->mode = J_NUM_DOT;
            return 0;
        }
        if ((c == 'e' || c == 'E') && !s->intg && s->mode != J_NUM_EXP) {
            s->mode = J_NUM_E;
            return 0;
        }
        end_value(s); /* the number ended before c: c is the next thing */
        return step(N, s, c);
    }
}

/* After a value in a container: ',' where another may come, the closer
 * where the container may end. */
static int after_byte(const jnode *N, jstate *s, int c)
{
    jframe *f = top(s);
    const jnode *o = &N[f->node];
    if (o->kind == N_OBJ) {
        if (c == ',' && (o->nprops ? candidates(N, s) != 0 : o->sub != SCHEMA_NONE)) {
            s->mode = J_KEY;
            return 0;
        }
        return c == '}' && o->nextreq[f->n] == o->nprops ? pop(N, s, 1) : -1;
    }
    if (c == ',' && (o->max == SCHEMA_UNBOUNDED || f->n < o->max) && fits(N, s, o->sub)) {
        f->n += f->n < 0xffff;
        s->vnode = o->sub;
        s->mode = J_VALUE;
        return 0;
    }
    return c == ']' && f->n >= o->min ? pop(N, s, 0) : -1;
}

/* Feeds byte c: 0, or -1 when the text can no longer be what is asked. */
static int step(const jnode *N, jstate *s, int c)
{
    if (s->mode <= J_VALUE_OR_END && s->mode != J_START) { /* between tokens of JSON */
        if (is_ws(c))
            return ws_step(s, c);
        s->ws = 0;
    }
    switch (s->mode) {
    case J_START: /* the answer begins with the object (as llama.cpp's root), or is one of
                     a choice's texts (a root enum of raw texts) */
        return c == '{' || N[s->vnode].kind == N_LIT ? value_start(N, s, s->vnode, c) : -1;
    case J_VALUE:
        return value_start(N, s, s->vnode, c);
    case J_VALUE_OR_END: {
        jframe *f = top(s);
        const jnode *a = &N[f->node];
        if (c == ']')
            return a->min == 0 ? pop(N, s, 0) : -1;
        if (a->max == 0 || !fits(N, s, a->sub))
            return -1;
        f->n = 1;
        return value_start(N, s, a->sub, c);
    }
    case J_KEY_OR_END:
        if (c == '}') {
            const jframe *f = top(s);
            return N[f->node].nextreq[f->n] == N[f->node].nprops ? pop(N, s, 1) : -1;
        }
        /* fall through */
    case J_KEY:
        return key_start(N, s, c);
    case J_KEYLIT:
        return key_byte(N, s, c);
    case J_COLON:
        if (c != ':')
            return -1;
        s->mode = J_VALUE;
        return 0;
    case J_AFTER:
        return after_byte(N, s, c);
    case J_ENUM:
        return enum_byte(N, s, c);
    case J_STR:
        return str_byte(N, s, c);
    case J_STR_ESC:
        if (c == 'u') {
            s->mode = J_STR_U;
            s->aux = 4;
            s->cp = 0;
            s->low = 0;
            return 0;
        }
        if (!c || !strchr("\"\\/bfnrt", c))
            return -1;
        s->mode = J_STR;
        return 0;
    case J_STR_PAIR:
        if (c != '\\')
            return -1;
        s->mode = J_STR_PAIRU;
        return 0;
    case J_STR_PAIRU:
        if (c != 'u')
            return -1;
        s->mode = J_STR_U;
        s->aux = 4;
        s->cp = 0;
        s->low = 1;
        return 0;
    case J_STR_U:
        return hex_byte(s, c);
    case J_LIT:
        if (c != lits[s->lit][s->aux])
            return -1;
        if (!lits[s->lit][++s->aux])
            end_value(s);
        return 0;
    case J_DONE: /* only the end */
        return -1;
    default:
        return num_byte(N, s, c);
    }
}

static int feed(const jnode *N, jstate *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (step(N, s, (unsigned char)p[i]))
            return -1;
    return 0;
}

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
                    feed(any, &st, b, n) == 0 && st.mode == J_STR && st.need == 0;
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
static const struct llm_pieces *pieces_of(const synor_llm *m)
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

int synor_llm_json_create_schema(const synor_llm *m, synor_llm_schema *g,
                                 synor_llm_json **out)
{
    if (!m || !out)
        return synor__error(SYNOR_EINVAL, "synor_llm_json_create: NULL argument");
    const struct llm_pieces *p = pieces_of(m);
    synor_llm_json *j = p ? synor__calloc(1, sizeof *j) : NULL;
    if (!j)
        return synor__error(SYNOR_ENOMEM, "synor_llm_json_create: out of memory");
    j->V = p->V;
    j->eos = p->eos;
    j->off = p->off;
    j->bytes = p->bytes;
    j->plain = p->plain;
    j->other = p->other;
    j->n_other = p->n_other;
    j->by_chars = p->by_chars;
    j->head = p->head;
    j->len = p->len;
    j->g = g ? g : synor__llm_schema_any();
    synor__llm_schema_hold(j->g);
    j->st.mode = J_START;
    j->st.vnode = j->g->root;
    *out = j;
    return 0;
}

int synor_llm_json_create(const synor_llm *m, synor_llm_json **out)
{
    return synor_llm_json_create_schema(m, NULL, out);
}

void synor_llm_json_destroy(synor_llm_json *j)
{
    if (!j)
        return;
    synor_llm_schema_free(j->g);
    synor__free(j);
}

/* The text may end: the object closed, or a choice's text whole. */
static int done(const jnode *N, const jstate *s)
{
    if (s->mode == J_DONE)
        return 1;
    if (s->mode != J_ENUM || s->depth)
        return 0;
    for (uint64_t m = s->cand; m; m &= m - 1)
        if (N[s->vnode].llen[__builtin_ctzll(m)] == s->len)
            return 1;
    return 0;
}

int synor_llm_json_done(const synor_llm_json *j) { return done(j->g->n, &j->st); }

int synor_llm_json_allows(const synor_llm_json *j, int32_t t)
{
    if (t < 0 || t >= j->V)
        return 0;
    if (t == j->eos)
        return done(j->g->n, &j->st);
    size_t n = j->off[t + 1] - j->off[t];
    jstate s;
    copy(&s, &j->st);
    return n > 0 && feed(j->g->n, &s, j->bytes + j->off[t], n) == 0;
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
        return t == j->eos && done(j->g->n, &j->st);
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
        copy(&s, st);
        first[b] = step(N, &s, b) == 0;
        if (first[b] && nfirst < FEW) {
            firsts[nfirst] = (uint8_t)b;
            copy(&after[nfirst], &s);
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
            copy(&s, &after[i]);
            row[c >> 3] |= (uint8_t)((step(N, &s, c) == 0) << (c & 7));
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

int synor_llm_json_accept(synor_llm_json *j, int32_t t)
{
    if (!synor_llm_json_allows(j, t))
        return synor__error(SYNOR_EINVAL, "JSON constraint: token %d cannot continue the text",
                            (int)t);
    if (t != j->eos)
        feed(j->g->n, &j->st, j->bytes + j->off[t], j->off[t + 1] - j->off[t]);
    return 0;
}
