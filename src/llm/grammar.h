/* grammar.h - the JSON constraint's automaton state, shared by grammar.c
 * (the automaton: a byte at a time) and grammar_mask.c (the vocabulary's
 * pieces and the mask over them). Private to those two files. */
#ifndef SYNOR_LLM_GRAMMAR_H
#define SYNOR_LLM_GRAMMAR_H

#include <stddef.h>
#include <string.h>

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

static inline void jcopy(jstate *d, const jstate *s)
{
    memcpy(d, s, offsetof(jstate, fr) + s->depth * sizeof(jframe));
}

/* Feeds byte c (0, or -1 where the text can no longer be what is asked),
 * bytes p[0..n), and whether the text may end (grammar.c). */
int synor__json_step(const jnode *N, jstate *s, int c);
int synor__json_feed(const jnode *N, jstate *s, const char *p, size_t n);
int synor__json_can_end(const jnode *N, const jstate *s);
/* The model's pieces, made by its first constraint (grammar_mask.c). */
const struct llm_pieces *synor__json_pieces(const synor_llm *m);

#endif
