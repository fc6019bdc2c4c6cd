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
#include "llm/grammar.h"
#include "llm/schema.h"


static const char *const lits[3] = {"true", "false", "null"};


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
        if (c == ',' && !o->one_prop &&
            (o->nprops ? candidates(N, s) != 0 : o->sub != SCHEMA_NONE)) {
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
            return N[f->node].nextreq[f->n] == N[f->node].nprops && !N[f->node].one_prop
                       ? pop(N, s, 1)
                       : -1;
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

int synor_llm_json_create_schema(const synor_llm *m, synor_llm_schema *g,
                                 synor_llm_json **out)
{
    if (!m || !out)
        return synor__error(SYNOR_EINVAL, "synor_llm_json_create: NULL argument");
    const struct llm_pieces *p = synor__json_pieces(m);
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
    jcopy(&s, &j->st);
    return n > 0 && feed(j->g->n, &s, j->bytes + j->off[t], n) == 0;
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

/* For grammar_mask.c (grammar.h). */
int synor__json_step(const jnode *N, jstate *s, int c) { return step(N, s, c); }
int synor__json_feed(const jnode *N, jstate *s, const char *p, size_t n)
{
    return feed(N, s, p, n);
}
int synor__json_can_end(const jnode *N, const jstate *s) { return done(N, s); }
