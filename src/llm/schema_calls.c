/* schema_calls.c - the node graphs of constraints that are not a JSON
 * Schema document: a tool call (OpenAI's function calling: the function's
 * name, then the arguments its parameters allow, the name picking their
 * schema; or, the model's pick, that call or a text) and a choice among raw
 * texts (vLLM's guided_choice). */
#include <string.h>

#include "common/common.h"
#include "llm/schema_cx.h"

/* Object node o's properties keys[i] of nodes[i] (n of them, all
 * required, or none), in that order. */
static int set_props(cx *x, uint16_t o, const char *const *keys, const uint16_t *nodes, int n,
                     int required)
{
    jnode *r = &x->s->n[o];
    r->props = synor__calloc((size_t)n, sizeof *r->props);
    r->nextreq = synor__calloc((size_t)n + 1, sizeof *r->nextreq);
    if (!r->props || !r->nextreq)
        return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
    for (int i = 0; i < n; i++) {
        if (!(r->props[i].key = synor__strdup(keys[i])))
            return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
        r->props[i].klen = (uint16_t)strlen(keys[i]);
        r->props[i].node = nodes[i];
        r->props[i].required = (uint8_t)required;
        r->nprops = (uint16_t)(i + 1);
        r->nextreq[i] = required ? (uint16_t)i : (uint16_t)n;
    }
    r->nextreq[n] = (uint16_t)n;
    return 0;
}

/* The tool call's root: {"name": L, "arguments": W}, L the names, W the
 * switch over the parameters' nodes. */
static int tool_nodes(cx *x, const synor__jval *const *params, const char *const *names,
                      const char *const *paths, int n)
{
    uint16_t lit, sw, root;
    int rc = synor__schema_node(x, N_LIT, &lit);
    if (!rc)
        rc = synor__schema_node(x, N_SWITCH, &sw);
    if (!rc)
        rc = synor__schema_node(x, N_OBJ, &root);
    if (rc)
        return rc;
    jnode *l = &x->s->n[lit];
    l->lits = synor__calloc((size_t)n, sizeof *l->lits);
    l->llen = synor__calloc((size_t)n, sizeof *l->llen);
    x->s->n[sw].alts = synor__calloc((size_t)n, sizeof(uint16_t));
    if (!l->lits || !l->llen || !x->s->n[sw].alts)
        return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
    for (int i = 0; i < n; i++) {
        synor__buf b;
        synor__buf_init(&b);
        synor__json_escape(&b, names[i]);
        jnode *ln = &x->s->n[lit];
        ln->llen[i] = (uint16_t)b.len;
        if (!(ln->lits[i] = synor__buf_take(&b)))
            return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
        ln->nlits = (uint16_t)(i + 1);
        uint16_t p;
        if (!params[i]) { /* no parameters: {} */
            if ((rc = synor__schema_node(x, N_OBJ, &p)))
                return rc;
            if (!(x->s->n[p].nextreq = synor__calloc(1, sizeof(uint16_t))))
                return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
        } else if ((rc = synor__schema_value(x, params[i], paths[i], &p))) {
            return rc;
        } else if (x->s->n[p].kind != N_OBJ) {
            return synor__schema_fail(x, params[i],
                                      "a function's parameters must be an object schema");
        }
        x->s->n[sw].alts[x->s->n[sw].nalts++] = p;
    }
    static const char *const keys[2] = {"name", "arguments"};
    uint16_t nodes[2] = {lit, sw};
    if ((rc = set_props(x, root, keys, nodes, 2, 1)))
        return rc;
    x->s->n[root].sel_prop = 0;
    x->s->root = root;
    return 0;
}

/* The call made the root's alternative: {KEY: the call, "response": a
 * string}, exactly one of them. */
static int or_text(cx *x, const char *key)
{
    uint16_t text, root;
    int rc = synor__schema_node(x, N_STR, &text);
    if (!rc)
        rc = synor__schema_node(x, N_OBJ, &root);
    const char *keys[2] = {key, "response"};
    uint16_t nodes[2] = {x->s->root, text};
    if (!rc) /* none required ... */
        rc = set_props(x, root, keys, nodes, 2, 0);
    if (rc)
        return rc;
    x->s->n[root].one_prop = 1; /* ... but one written */
    x->s->root = root;
    return 0;
}

/* The call made a list's items: [call, ...], at least one; with a text
 * beside it, that list alone; else {"tool_calls": the list}. */
static int in_list(cx *x, int text)
{
    uint16_t arr, root;
    int rc = synor__schema_node(x, N_ARR, &arr);
    if (rc)
        return rc;
    x->s->n[arr].sub = x->s->root;
    x->s->n[arr].min = 1;
    x->s->root = arr;
    if (text)
        return 0;
    if ((rc = synor__schema_node(x, N_OBJ, &root)))
        return rc;
    static const char *const keys[1] = {"tool_calls"};
    if ((rc = set_props(x, root, keys, &arr, 1, 1)))
        return rc;
    x->s->root = root;
    return 0;
}

int synor__llm_schema_tools(const synor__jdoc *d, const synor__jval *const *params,
                            const char *const *names, const char *const *paths, int n, int flags,
                            synor_llm_schema **out)
{
    cx x;
    *out = NULL;
    if (n < 1 || n > SCHEMA_MAX_SET)
        return synor__error(SYNOR_EINVAL, "a tool call: 1 to 64 functions, not %d", n);
    int rc = synor__schema_begin(&x, d, NULL, "tools");
    if (rc)
        return rc;
    rc = tool_nodes(&x, params, names, paths, n);
    if (!rc && (flags & SCHEMA_CALLS_LIST))
        rc = in_list(&x, flags & SCHEMA_CALLS_TEXT);
    if (!rc && (flags & SCHEMA_CALLS_TEXT))
        rc = or_text(&x, flags & SCHEMA_CALLS_LIST ? "tool_calls" : "tool_call");
    return synor__schema_end(&x, rc, out);
}

/* The texts as a root enum: grammar.c starts in it (no '{') and may end
 * where one is whole. */
static int choice_nodes(cx *x, const char *const *texts, const size_t *lens, int n)
{
    uint16_t lit;
    int rc = synor__schema_node(x, N_LIT, &lit);
    if (rc)
        return rc;
    jnode *l = &x->s->n[lit];
    l->lits = synor__calloc((size_t)n, sizeof *l->lits);
    l->llen = synor__calloc((size_t)n, sizeof *l->llen);
    if (!l->lits || !l->llen)
        return synor__error(SYNOR_ENOMEM, "a choice: out of memory");
    for (int i = 0; i < n; i++) {
        if (!(l->lits[i] = synor__malloc(lens[i] + 1)))
            return synor__error(SYNOR_ENOMEM, "a choice: out of memory");
        memcpy(l->lits[i], texts[i], lens[i]);
        l->lits[i][lens[i]] = 0;
        l->llen[i] = (uint16_t)lens[i];
        l->nlits = (uint16_t)(i + 1);
    }
    x->s->root = lit;
    return 0;
}

int synor__llm_schema_choice(const char *const *texts, const size_t *lens, int n,
                             synor_llm_schema **out)
{
    *out = NULL;
    if (n < 1 || n > SCHEMA_MAX_SET)
        return synor__error(SYNOR_EINVAL, "a choice: 1 to 64 texts, not %d", n);
    for (int i = 0; i < n; i++) {
        if (lens[i] == 0 || lens[i] >= SCHEMA_UNBOUNDED)
            return synor__error(SYNOR_EINVAL, "a choice: text %d is %zu bytes (1 to 65534)", i,
                                lens[i]);
        for (int k = 0; k < i; k++)
            if (lens[k] == lens[i] && !memcmp(texts[k], texts[i], lens[i]))
                return synor__error(SYNOR_EINVAL, "a choice: texts %d and %d are the same", k, i);
    }
    cx x;
    int rc = synor__schema_begin(&x, NULL, NULL, "choice");
    if (rc)
        return rc;
    rc = choice_nodes(&x, texts, lens, n);
    synor__free(x.src);
    if (rc) {
        synor_llm_schema_free(x.s);
        return rc;
    }
    *out = x.s; /* (no finish: the root is not an object, nothing can nest) */
    return 0;
}
