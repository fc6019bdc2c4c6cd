/* schema.h - a JSON Schema compiled for constrained decoding: the graph of
 * nodes grammar.c's automaton walks (schema.c builds it).
 *
 * Each node is what one JSON value may be. Containers point at the nodes
 * of what they hold; recursion ($ref) is a cycle in the graph. Nodes 0, 1
 * and 2 are always there: any value, any object (values: node 0), any
 * array (items: node 0); the schema-less constraint (OpenAI's json_object)
 * is node 1. */
#ifndef SYNOR_LLM_SCHEMA_H
#define SYNOR_LLM_SCHEMA_H

#include <stdint.h>

#include "json/json.h"
#include "synor/llm.h"

#define JSON_MAX_DEPTH 32     /* levels of nesting the automaton keeps */
#define SCHEMA_NONE 0xffff    /* no node */
#define SCHEMA_UNBOUNDED 0xffff /* a length or count without a maximum */
#define SCHEMA_TOO_DEEP 255   /* jnode.depth of a node nothing can satisfy */
#define SCHEMA_MAX_SET 64     /* properties of an object, values of an enum */

enum {
    N_ANY,   /* any JSON value */
    N_OBJ,   /* an object: props in order, or (no props) keys mapped to sub */
    N_ARR,   /* an array of sub, min..max items */
    N_STR,   /* a string of min..max characters (code points) */
    N_NUM,   /* a number */
    N_INT,   /* a number without fraction or exponent */
    N_BOOL,  /* true or false */
    N_NULL,  /* null */
    N_LIT,   /* one of lits (enum, const): their JSON texts */
    N_UNION, /* one of alts (anyOf, oneOf, a list of types): by first byte */
    N_FALSE, /* nothing (the schema false) */
    /* alts[k], k the index of the value (an N_LIT's) its object's property
     * `sel_prop` took: a tool call's arguments, by the function's name */
    N_SWITCH
};

typedef struct jprop {
    char *key;   /* the name as a JSON string writes it, without the quotes */
    uint16_t klen;
    uint16_t node;
    uint8_t required;
} jprop;

typedef struct jnode {
    uint8_t kind;
    /* the fewest levels of nesting an instance takes (0 for a scalar; an
     * object 1 + its deepest required property's); SCHEMA_TOO_DEEP: no
     * instance at all */
    uint8_t depth;
    uint16_t min, max; /* N_STR: characters, N_ARR: items */
    /* N_ARR: the items; N_OBJ without props: every key's value
     * (SCHEMA_NONE: no keys, the object is {}) */
    uint16_t sub;
    uint16_t nprops, nlits, nalts;
    /* N_OBJ: the property whose enum value picks the N_SWITCH properties'
     * alternative (SCHEMA_NONE: none) */
    uint16_t sel_prop;
    /* N_OBJ: exactly one of its properties (none required; a tool call or
     * a text, "auto") */
    uint8_t one_prop;
    jprop *props;
    /* nextreq[i]: the index of the first required property at or after i
     * (nprops: none); nprops + 1 entries */
    uint16_t *nextreq;
    char **lits;
    uint16_t *llen;
    uint16_t *alts;   /* after compiling, no alternative is itself a union */
    uint16_t *alt_of; /* N_UNION: the alternative a first byte picks, 256 */
} jnode;

struct synor_llm_schema {
    int refs; /* atomically: each constraint made from it holds one */
    uint16_t nn, root;
    jnode *n;
};

/* Compiles schema v of document d (path names it in messages: "PATH/
 * properties/x: ..."), as synor_llm_schema_parse does. */
int synor__llm_schema_compile(const synor__jdoc *d, const synor__jval *v, const char *path,
                              synor_llm_schema **out);
/* A tool call (OpenAI's function calling): {"name": one of names (n, at
 * most 64, distinct), "arguments": an object the named function's
 * parameters allow}; params[i] a schema of d (its own root for "#"),
 * NULL: no parameters (the arguments {}); paths[i] names it in
 * messages. flags, as llama.cpp's generic tool format has them:
 * SCHEMA_CALLS_LIST: one or more calls, {"tool_calls": [call, ...]};
 * SCHEMA_CALLS_TEXT: the call(s) or a text, the model's pick (tool_choice
 * "auto"): exactly one of {"tool_call": a call} (with LIST {"tool_calls":
 * [call, ...]}) and {"response": a string}. */
enum { SCHEMA_CALLS_TEXT = 1, SCHEMA_CALLS_LIST = 2 };
int synor__llm_schema_tools(const synor__jdoc *d, const synor__jval *const *params,
                            const char *const *names, const char *const *paths, int n, int flags,
                            synor_llm_schema **out);
/* A choice (vLLM's guided_choice): the text is exactly one of texts[i]
 * (lens[i] bytes, 1..65535 each; n 1..64, distinct), not JSON. */
int synor__llm_schema_choice(const char *const *texts, const size_t *lens, int n,
                             synor_llm_schema **out);
/* The schema of synor_llm_json_create: any object (a static one). */
synor_llm_schema *synor__llm_schema_any(void);
void synor__llm_schema_hold(synor_llm_schema *s);

#endif
