/* schema_cx.h - the compiler's state, shared by schema.c (JSON Schema
 * documents) and schema_calls.c (the graphs built for tool calls and
 * choices). Private to those two files. */
#ifndef SYNOR_LLM_SCHEMA_CX_H
#define SYNOR_LLM_SCHEMA_CX_H

#include "llm/schema.h"

typedef struct cx {
    const synor__jdoc *d;
    const synor__jval *top; /* what "#" refers to */
    synor_llm_schema *s;
    unsigned cap;
    const synor__jval **src; /* per node: the schema it came from */
    char path[512];
    size_t plen;
} cx;

/* A schema with the three fixed nodes (d, v, path: what messages name);
 * on failure nothing is left. */
int synor__schema_begin(cx *x, const synor__jdoc *d, const synor__jval *v, const char *path);
/* rc 0: the graph checked (every node's depth, the alternatives' first
 * bytes, the root) and given in *out; else, or when the check fails, all
 * freed and the code returned. */
int synor__schema_end(cx *x, int rc, synor_llm_schema **out);
/* A new node of kind (its other fields empty, no maximum). */
int synor__schema_node(cx *x, int kind, uint16_t *out);
/* Schema v of x->d (its own root for "#"; path names it) compiled. */
int synor__schema_value(cx *x, const synor__jval *v, const char *path, uint16_t *out);
/* The message "D:LINE:COL: PATH: msg" for v; SYNOR_ESCHEMA. */
int synor__schema_fail(cx *x, const synor__jval *v, const char *msg);

#endif
