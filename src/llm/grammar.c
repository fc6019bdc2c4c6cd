/* grammar.c - constrained decoding: a JSON object (OpenAI's response_format
 * {"type": "json_object"}).
 *
 * A byte-level pushdown automaton of RFC 8259 (objects, arrays, strings
 * with their escapes, numbers, true / false / null, whitespace) whose
 * state is a few bytes and a bit per level of nesting, so that trying a
 * token is copying the state and feeding it the token's bytes. Each step
 * every token of the vocabulary is tried from the current state and the
 * logits of those that would break the text are set to -INFINITY; EOS is
 * allowed only once the object is closed, and then it alone. A token's
 * bytes are its piece as it decodes after another token (byte-fallback
 * pieces are their byte), computed once when the constraint is made. */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "llm/llm_internal.h"

#define JSON_MAX_DEPTH 32

enum {
    J_START,       /* before the object: '{' */
    J_VALUE,       /* a value (after ':' or ',' in an array) */
    J_KEY_OR_END,  /* after '{': a key or '}' */
    J_KEY,         /* after ',' in an object: a key */
    J_COLON,       /* after a key */
    J_AFTER,       /* after a value inside a container: ',' or its closer */
    J_VALUE_OR_END, /* after '[': a value or ']' */
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

typedef struct jstate {
    uint8_t mode, depth, is_key, aux, lit;
    /* in a string: UTF-8 continuation bytes still needed and the range of
     * the next (Unicode's table 3-7); a \u escape's value so far and
     * whether it must be a low surrogate */
    uint8_t need, lo, hi, low;
    /* whitespace since the last token of JSON: 0 none, 0xff one space,
     * 1 + k a newline and k spaces or tabs of indentation */
    uint8_t ws;
    uint16_t cp;
    uint32_t objs; /* bit i: level i is an object (else an array) */
} jstate;

struct synor_llm_json {
    jstate st;
    int V;
    int32_t eos;
    uint32_t *off; /* token t's bytes: bytes[off[t] .. off[t + 1]) */
    char *bytes;
    /* plain[t]: t's bytes are string content that leaves a string where it
     * was (no quote, backslash or control byte; whole UTF-8 characters):
     * inside a string, where most of an answer is written, such a token
     * is allowed without feeding it */
    uint8_t *plain;
};

static const char *const lits[3] = {"true", "false", "null"};

static int is_ws(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int push(jstate *s, int obj)
{
    if (s->depth == JSON_MAX_DEPTH)
        return -1;
    s->objs = (s->objs & ~(1u << s->depth)) | ((uint32_t)obj << s->depth);
    s->depth++;
    s->mode = obj ? J_KEY_OR_END : J_VALUE_OR_END;
    return 0;
}

static int top_obj(const jstate *s) { return s->depth && (s->objs >> (s->depth - 1)) & 1; }

/* A value (or the object itself) is complete. */
static void end_value(jstate *s) { s->mode = s->depth ? J_AFTER : J_DONE; }

static int pop(jstate *s, int obj)
{
    if (!s->depth || top_obj(s) != obj)
        return -1;
    s->depth--;
    end_value(s);
    return 0;
}

/* The first byte of a value. */
static int value_start(jstate *s, int c)
{
    if (is_ws(c))
        return 0;
    switch (c) {
    case '{':
        return push(s, 1);
    case '[':
        return push(s, 0);
    case '"':
        s->mode = J_STR;
        s->is_key = 0;
        return 0;
    case '-':
        s->mode = J_NUM_MINUS;
        return 0;
    case '0':
        s->mode = J_NUM_ZERO;
        return 0;
    case 't':
    case 'f':
    case 'n':
        s->mode = J_LIT;
        s->lit = c == 't' ? 0 : c == 'f' ? 1 : 2;
        s->aux = 1;
        return 0;
    default:
        if (c >= '1' && c <= '9') {
            s->mode = J_NUM_INT;
            return 0;
        }
        return -1;
    }
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }

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

/* Feeds byte c: 0, or -1 when the text can no longer be a JSON object. */
static int step(jstate *s, int c)
{
    if (s->mode <= J_VALUE_OR_END && s->mode != J_START) { /* between tokens of JSON */
        if (is_ws(c))
            return ws_step(s, c);
        s->ws = 0;
    }
    switch (s->mode) {
    case J_START: /* the answer begins with the object (as llama.cpp's root) */
        return c == '{' ? push(s, 1) : -1;
    case J_VALUE:
        return value_start(s, c);
    case J_VALUE_OR_END:
        return c == ']' ? pop(s, 0) : value_start(s, c);
    case J_KEY_OR_END:
        if (c == '}')
            return pop(s, 1);
        /* fall through */
    case J_KEY:
        if (is_ws(c))
            return 0;
        if (c != '"')
            return -1;
        s->mode = J_STR;
        s->is_key = 1;
        return 0;
    case J_COLON:
        if (is_ws(c))
            return 0;
        if (c != ':')
            return -1;
        s->mode = J_VALUE;
        return 0;
    case J_AFTER:
        if (is_ws(c))
            return 0;
        if (c == ',') {
            s->mode = top_obj(s) ? J_KEY : J_VALUE;
            return 0;
        }
        return c == '}' ? pop(s, 1) : c == ']' ? pop(s, 0) : -1;
    case J_STR:
        if (s->need) { /* a UTF-8 continuation byte */
            if (c < s->lo || c > s->hi)
                return -1;
            s->need--;
            s->lo = 0x80;
            s->hi = 0xbf;
            return 0;
        }
        if (c == '"') {
            if (s->is_key)
                s->mode = J_COLON;
            else
                end_value(s);
        } else if (c == '\\') {
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
    case J_STR_U: {
        int v = is_digit(c)                             ? c - '0'
                : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10
                                                       : -1;
        if (v < 0)
            return -1;
        s->cp = (uint16_t)(s->cp << 4 | v);
        s->aux--;
        /* a low surrogate (DC00-DFFF) after a high one, and only there;
         * no \u0000: checked digit by digit, so no prefix is a dead end */
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
    case J_NUM_MINUS:
        if (c == '0')
            s->mode = J_NUM_ZERO;
        else if (c >= '1' && c <= '9')
            s->mode = J_NUM_INT;
        else
            return -1;
        return 0;
    case J_NUM_DOT:
        if (!is_digit(c))
            return -1;
        s->mode = J_NUM_FRAC;
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
        return 0;
    case J_NUM_ZERO:
    case J_NUM_INT:
    case J_NUM_FRAC:
    case J_NUM_EXP:
        if (is_digit(c) && s->mode != J_NUM_ZERO)
            return 0;
        if (c == '.' && s->mode != J_NUM_FRAC && s->mode != J_NUM_EXP) {
            s->mode = J_NUM_DOT;
            return 0;
        }
        if ((c == 'e' || c == 'E') && s->mode != J_NUM_EXP) {
            s->mode = J_NUM_E;
            return 0;
        }
        end_value(s); /* the number ended before c: c is the next thing */
        return step(s, c);
    case J_LIT:
        if (c != lits[s->lit][s->aux])
            return -1;
        if (!lits[s->lit][++s->aux])
            end_value(s);
        return 0;
    default: /* J_DONE: only the end */
        return -1;
    }
}

static int feed(jstate *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (step(s, (unsigned char)p[i]))
            return -1;
    return 0;
}

int synor_llm_json_create(const synor_llm *m, synor_llm_json **out)
{
    if (!m || !out)
        return synor__error(SYNOR_EINVAL, "synor_llm_json_create: NULL argument");
    const synor_tokenizer *tok = m->tok;
    int V = m->cfg.vocab_size;
    synor_llm_json *j = synor__calloc(1, sizeof *j);
    size_t cap = (size_t)V * 8 + 64, used = 0;
    if (j) {
        j->off = synor__malloc(((size_t)V + 1) * sizeof *j->off);
        j->bytes = synor__malloc(cap);
        j->plain = synor__malloc((size_t)V);
    }
    if (!j || !j->off || !j->bytes || !j->plain)
        goto oom;
    j->V = V;
    j->eos = synor_tokenizer_eos(tok);
    int32_t bos = synor_tokenizer_bos(tok);
    int32_t prev = j->eos >= 0 && j->eos != bos ? j->eos : 0; /* not BOS: pieces whole */
    for (int t = 0; t < V; t++) {
        j->off[t] = (uint32_t)used;
        if (t == j->eos || t == bos || t >= (int)synor_tokenizer_size(tok))
            continue;
        long n = synor_tokenizer_decode(tok, prev, t, j->bytes + used, cap - used);
        if (n > 0 && used + (size_t)n > cap) { /* grow, then decode it again */
            size_t c2 = 2 * cap + (size_t)n;
            char *nb = synor__realloc(j->bytes, c2);
            if (!nb)
                goto oom;
            j->bytes = nb;
            cap = c2;
            synor_tokenizer_decode(tok, prev, t, j->bytes + used, cap - used);
        }
        used += n > 0 ? (size_t)n : 0;
    }
    j->off[V] = (uint32_t)used;
    for (int t = 0; t < V; t++) {
        jstate st = {.mode = J_STR};
        size_t n = j->off[t + 1] - j->off[t];
        const char *b = j->bytes + j->off[t];
        j->plain[t] = n > 0 && !memchr(b, '"', n) && !memchr(b, '\\', n) &&
                      feed(&st, b, n) == 0 && st.mode == J_STR && st.need == 0;
    }
    j->st.mode = J_START;
    *out = j;
    return 0;
oom:
    synor_llm_json_destroy(j);
    return synor__error(SYNOR_ENOMEM, "synor_llm_json_create: out of memory");
}

void synor_llm_json_destroy(synor_llm_json *j)
{
    if (!j)
        return;
    synor__free(j->off);
    synor__free(j->bytes);
    synor__free(j->plain);
    synor__free(j);
}

int synor_llm_json_done(const synor_llm_json *j) { return j->st.mode == J_DONE; }

int synor_llm_json_allows(const synor_llm_json *j, int32_t t)
{
    if (t < 0 || t >= j->V)
        return 0;
    if (t == j->eos)
        return j->st.mode == J_DONE;
    size_t n = j->off[t + 1] - j->off[t];
    jstate s = j->st;
    return n > 0 && feed(&s, j->bytes + j->off[t], n) == 0;
}

void synor_llm_json_mask(const synor_llm_json *j, float *logits)
{
    int in_str = j->st.mode == J_STR && j->st.need == 0;
    /* the bytes that may come next: a token whose first byte is not one
     * is refused without feeding it (outside strings, most of them) */
    uint8_t first[256];
    for (int b = 0; b < 256; b++) {
        jstate st = j->st;
        first[b] = in_str || step(&st, b) == 0; /* (in a string: the plain flags do it) */
    }
    for (int t = 0; t < j->V; t++) {
        if (in_str && j->plain[t])
            continue;
        int ok = t == j->eos || (j->off[t + 1] > j->off[t] &&
                                 first[(unsigned char)j->bytes[j->off[t]]]);
        if (!ok || !synor_llm_json_allows(j, t))
            logits[t] = -INFINITY;
    }
}

int synor_llm_json_accept(synor_llm_json *j, int32_t t)
{
    if (!synor_llm_json_allows(j, t))
        return synor__error(SYNOR_EINVAL, "JSON constraint: token %d cannot continue the text",
                            (int)t);
    if (t != j->eos)
        feed(&j->st, j->bytes + j->off[t], j->off[t + 1] - j->off[t]);
    return 0;
}
