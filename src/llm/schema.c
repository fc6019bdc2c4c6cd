/* schema.c - a JSON Schema (the part of it a constraint can write) compiled
 * to the node graph of schema.h, for grammar.c's automaton.
 *
 * What a schema allows is a set of texts; the automaton writes a subset of
 * it: properties in the order the schema lists them and no others, any
 * alternative of an anyOf told apart by the first byte of its value. So
 * every text written is valid against the schema, and some valid texts
 * (another order, extra keys) are never written. Keywords that would take
 * more than that (pattern, minimum, uniqueItems, allOf, ...) are refused by
 * name rather than ignored; annotations (title, description, format, ...)
 * are ignored, as JSON Schema itself lets a validator do. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "llm/schema.h"
#include "llm/schema_cx.h"

#define MAX_NODES 4096
#define MAX_REFS 64   /* a chain of $ref to $ref */
#define MAX_KEY 1024  /* bytes of a property's name as JSON writes it */
#define MAX_NEST 16   /* anyOf directly inside anyOf */


static const char *const annotations[] = {
    "title", "description", "default", "examples", "$schema", "$id", "$comment", "format",
    "deprecated", "readOnly", "writeOnly", "contentEncoding", "contentMediaType", "$defs",
    "definitions", NULL};
static const char *const keywords[] = {
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
    "minLength", "maxLength", "enum", "const", "anyOf", "oneOf", "$ref", NULL};

static int in_list(const char *const *l, const char *k)
{
    for (; *l; l++)
        if (!strcmp(*l, k))
            return 1;
    return 0;
}

static int fail(cx *x, const synor__jval *v, const char *fmt, ...) SYNOR__PRINTF(3, 4);
static int fail(cx *x, const synor__jval *v, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return synor__json_fail(x->d, v, SYNOR_ESCHEMA, x->path[0] ? x->path : "#", "%s", msg);
}

static void path_push(cx *x, const char *seg, size_t *saved)
{
    *saved = x->plen;
    int w = snprintf(x->path + x->plen, sizeof x->path - x->plen, "/%s", seg);
    if (w > 0)
        x->plen += (size_t)w < sizeof x->path - x->plen ? (size_t)w : sizeof x->path - x->plen - 1;
}

static void path_pop(cx *x, size_t saved)
{
    x->plen = saved;
    x->path[saved] = 0;
}

static int new_node(cx *x, const synor__jval *v, int kind, uint16_t *out)
{
    synor_llm_schema *s = x->s;
    if (s->nn == MAX_NODES)
        return fail(x, v, "more than 4096 schemas in one");
    if (s->nn == x->cap) {
        unsigned c = x->cap * 2;
        jnode *n = synor__realloc(s->n, c * sizeof *n);
        if (n)
            s->n = n;
        const synor__jval **sv = n ? synor__realloc(x->src, c * sizeof *sv) : NULL;
        if (!sv)
            return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
        x->src = sv;
        x->cap = c;
    }
    memset(&s->n[s->nn], 0, sizeof s->n[0]);
    s->n[s->nn].kind = (uint8_t)kind;
    s->n[s->nn].max = SCHEMA_UNBOUNDED;
    s->n[s->nn].sub = SCHEMA_NONE;
    s->n[s->nn].sel_prop = SCHEMA_NONE;
    x->src[s->nn] = v;
    *out = s->nn++;
    return 0;
}

static uint16_t memo_find(const cx *x, const synor__jval *v)
{
    for (unsigned i = 3; i < x->s->nn; i++)
        if (x->src[i] == v)
            return (uint16_t)i;
    return SCHEMA_NONE;
}

static int compile(cx *x, const synor__jval *v, int refs, uint16_t *out);

/* A count keyword (minLength, maxItems, ...): 0..65534, or unbounded. */
static int count_kw(cx *x, const synor__jval *v, const char *k, int is_max, uint16_t *out)
{
    const synor__jval *c = synor__json_get(v, k);
    if (!c)
        return 0;
    if (c->type != SYNOR__J_NUMBER || !c->u.n.is_int || c->u.n.inum < 0)
        return fail(x, c, "\"%s\" must be a non-negative integer", k);
    if (c->u.n.inum >= SCHEMA_UNBOUNDED) {
        if (!is_max)
            return fail(x, c, "\"%s\" above 65534 is not supported", k);
        *out = SCHEMA_UNBOUNDED;
    } else {
        *out = (uint16_t)c->u.n.inum;
    }
    return 0;
}

/* The JSON text of a scalar value, for an enum or const. */
static char *literal(const synor__jval *v)
{
    synor__buf b;
    synor__buf_init(&b);
    char num[40];
    switch (v->type) {
    case SYNOR__J_STRING:
        synor__json_escape(&b, v->u.str.s);
        break;
    case SYNOR__J_NUMBER:
        if (v->u.n.is_int) {
            snprintf(num, sizeof num, "%lld", (long long)v->u.n.inum);
        } else { /* the shortest that reads back as the same double */
            for (int p = 15; p <= 17; p++) {
                snprintf(num, sizeof num, "%.*g", p, v->u.n.num);
                if (strtod(num, NULL) == v->u.n.num)
                    break;
            }
        }
        synor__buf_puts(&b, num);
        break;
    case SYNOR__J_BOOL:
        synor__buf_puts(&b, v->u.boolean ? "true" : "false");
        break;
    default:
        synor__buf_puts(&b, "null");
        break;
    }
    return synor__buf_take(&b);
}

enum { T_OBJ = 1, T_ARR = 2, T_STR = 4, T_NUM = 8, T_INT = 16, T_BOOL = 32, T_NULL = 64 };
static const char *const type_names[] = {"object", "array", "string", "number", "integer",
                                         "boolean", "null"};
static const uint8_t type_kinds[] = {N_OBJ, N_ARR, N_STR, N_NUM, N_INT, N_BOOL, N_NULL};

static int type_mask(cx *x, const synor__jval *v, unsigned *mask)
{
    const synor__jval *t = synor__json_get(v, "type");
    *mask = 0;
    if (!t) { /* no type: the types the keywords present speak of */
        static const char *const obj[] = {"properties", "required", "additionalProperties", NULL};
        static const char *const arr[] = {"items", "minItems", "maxItems", NULL};
        static const char *const str[] = {"minLength", "maxLength", NULL};
        for (size_t i = 0; i < v->u.obj.n; i++) {
            const char *k = v->u.obj.m[i].key;
            *mask |= in_list(obj, k)   ? T_OBJ
                     : in_list(arr, k) ? T_ARR
                     : in_list(str, k) ? T_STR
                                       : 0;
        }
        return 0;
    }
    size_t n = t->type == SYNOR__J_ARRAY ? t->u.arr.n : 1;
    if (t->type != SYNOR__J_STRING && (t->type != SYNOR__J_ARRAY || n == 0))
        return fail(x, t, "\"type\" must be a type's name or a non-empty list of them");
    for (size_t i = 0; i < n; i++) {
        const synor__jval *e = t->type == SYNOR__J_ARRAY ? t->u.arr.items[i] : t;
        unsigned bit = 0;
        for (unsigned k = 0; e->type == SYNOR__J_STRING && k < 7; k++)
            if (!strcmp(e->u.str.s, type_names[k]))
                bit = 1u << k;
        if (!bit)
            return fail(x, e, "unknown type %s (object, array, string, number, integer, "
                              "boolean, null)", e->type == SYNOR__J_STRING ? e->u.str.s : "");
        *mask |= bit;
    }
    if ((*mask & T_NUM) && (*mask & T_INT)) /* every integer is a number */
        *mask &= ~(unsigned)T_INT;
    return 0;
}

static int lit_node(cx *x, const synor__jval *v, uint16_t *out)
{
    const synor__jval *e = synor__json_get(v, "enum"), *c = synor__json_get(v, "const");
    if (e && c)
        return fail(x, c, "\"const\" beside \"enum\" is not supported");
    if (e && (e->type != SYNOR__J_ARRAY || e->u.arr.n == 0))
        return fail(x, e, "\"enum\" must be a non-empty array");
    unsigned mask;
    int rc = type_mask(x, v, &mask);
    if (rc || (rc = new_node(x, v, N_LIT, out)))
        return rc;
    size_t n = e ? e->u.arr.n : 1;
    jnode *nd = &x->s->n[*out];
    nd->lits = synor__calloc(n, sizeof *nd->lits);
    nd->llen = synor__calloc(n, sizeof *nd->llen);
    if (!nd->lits || !nd->llen)
        return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
    for (size_t i = 0; i < n; i++) {
        const synor__jval *l = e ? e->u.arr.items[i] : c;
        if (l->type == SYNOR__J_ARRAY || l->type == SYNOR__J_OBJECT)
            return fail(x, l, "enum and const values that are %s are not supported",
                        synor__jtype_name(l->type));
        unsigned bit = l->type == SYNOR__J_STRING   ? T_STR
                       : l->type == SYNOR__J_NUMBER ? T_NUM | (l->u.n.is_int ? T_INT : 0)
                       : l->type == SYNOR__J_BOOL   ? T_BOOL
                                                    : T_NULL;
        if (mask && !(mask & bit)) /* a value its own "type" refuses */
            continue;
        if (nd->nlits == SCHEMA_MAX_SET)
            return fail(x, l, "more than 64 values in one enum");
        char *t = literal(l);
        if (!t)
            return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
        nd->lits[nd->nlits] = t;
        size_t tl = strlen(t);
        nd->llen[nd->nlits++] = (uint16_t)tl;
        if (tl >= SCHEMA_UNBOUNDED)
            return fail(x, l, "an enum or const value longer than 65534 bytes");
    }
    return 0;
}

static int union_node(cx *x, const synor__jval *v, const synor__jval *alts, int refs,
                      uint16_t *out)
{
    const char *kw = synor__json_get(v, "anyOf") ? "anyOf" : "oneOf";
    if (synor__json_get(v, "anyOf") && synor__json_get(v, "oneOf"))
        return fail(x, v, "\"anyOf\" beside \"oneOf\" is not supported");
    for (size_t i = 0; i < v->u.obj.n; i++)
        if (!in_list(annotations, v->u.obj.m[i].key) && strcmp(v->u.obj.m[i].key, kw))
            return fail(x, v->u.obj.m[i].val, "\"%s\" beside anyOf / oneOf is not supported",
                        v->u.obj.m[i].key);
    if (alts->type != SYNOR__J_ARRAY || alts->u.arr.n == 0 || alts->u.arr.n > SCHEMA_MAX_SET)
        return fail(x, alts, "\"%s\" must be an array of 1 to 64 schemas", kw);
    int rc = new_node(x, v, N_UNION, out);
    uint16_t *a = rc ? NULL : synor__calloc(alts->u.arr.n, sizeof *a);
    if (rc || !a)
        return rc ? rc : synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
    x->s->n[*out].alts = a;
    for (size_t i = 0; i < alts->u.arr.n; i++) {
        char seg[40];
        size_t saved;
        snprintf(seg, sizeof seg, "%s/%zu", kw, i);
        path_push(x, seg, &saved);
        uint16_t an;
        rc = compile(x, alts->u.arr.items[i], refs, &an);
        path_pop(x, saved);
        if (rc)
            return rc;
        a[x->s->n[*out].nalts++] = an;
    }
    return 0;
}

static int object_node(cx *x, const synor__jval *v, uint16_t idx, int refs)
{
    const synor__jval *p = synor__json_get(v, "properties"), *r = synor__json_get(v, "required");
    const synor__jval *ap = synor__json_get(v, "additionalProperties");
    if (p && p->type != SYNOR__J_OBJECT)
        return fail(x, p, "\"properties\" must be an object");
    if (r && r->type != SYNOR__J_ARRAY)
        return fail(x, r, "\"required\" must be an array of names");
    if (ap && ap->type != SYNOR__J_BOOL && ap->type != SYNOR__J_OBJECT)
        return fail(x, ap, "\"additionalProperties\" must be a schema");
    size_t np = p ? p->u.obj.n : 0;
    if (np > SCHEMA_MAX_SET)
        return fail(x, p, "more than 64 properties in one object");
    jprop *props = np ? synor__calloc(np, sizeof *props) : NULL;
    uint16_t *nr = synor__calloc(np + 1, sizeof *nr);
    x->s->n[idx].props = props;
    x->s->n[idx].nextreq = nr;
    if ((np && !props) || !nr)
        return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
    for (size_t i = 0; i < np; i++) {
        const synor__jmember *m = &p->u.obj.m[i];
        synor__buf b;
        synor__buf_init(&b);
        synor__json_escape(&b, m->key);
        size_t kl = b.len;
        char *k = synor__buf_take(&b);
        if (!k)
            return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
        memmove(k, k + 1, kl - 2); /* without its quotes */
        k[kl - 2] = 0;
        props[i].key = k;
        props[i].klen = (uint16_t)(kl - 2);
        x->s->n[idx].nprops = (uint16_t)(i + 1);
        if (kl - 2 > MAX_KEY)
            return fail(x, m->val, "a property's name longer than 1024 bytes");
        size_t saved;
        path_push(x, "properties", &saved);
        size_t saved2;
        path_push(x, m->key, &saved2);
        int rc = compile(x, m->val, refs, &props[i].node);
        path_pop(x, saved);
        if (rc)
            return rc;
    }
    for (size_t i = 0; r && i < r->u.arr.n; i++) {
        const synor__jval *e = r->u.arr.items[i];
        size_t k = 0;
        while (e->type == SYNOR__J_STRING && k < np && strcmp(p->u.obj.m[k].key, e->u.str.s))
            k++;
        if (e->type != SYNOR__J_STRING)
            return fail(x, e, "\"required\" must list names");
        if (k == np)
            return fail(x, e, "required property \"%s\" is not in \"properties\" (the "
                              "constraint writes only the properties listed)", e->u.str.s);
        props[k].required = 1;
    }
    nr[np] = (uint16_t)np;
    for (size_t i = np; i-- > 0;)
        nr[i] = props[i].required ? (uint16_t)i : nr[i + 1];
    /* the keys of an object without properties: any, with
     * additionalProperties' values; with properties, those alone */
    if (!np && !(ap && ap->type == SYNOR__J_BOOL && !ap->u.boolean)) {
        uint16_t sub = 0;
        if (ap && ap->type == SYNOR__J_OBJECT) {
            size_t saved;
            path_push(x, "additionalProperties", &saved);
            int rc = compile(x, ap, refs, &sub);
            path_pop(x, saved);
            if (rc)
                return rc;
        }
        x->s->n[idx].sub = sub;
    }
    return 0;
}

static int array_node(cx *x, const synor__jval *v, uint16_t idx, int refs)
{
    const synor__jval *it = synor__json_get(v, "items");
    uint16_t mn = 0, mx = SCHEMA_UNBOUNDED, sub = 0;
    int rc = count_kw(x, v, "minItems", 0, &mn);
    if (!rc)
        rc = count_kw(x, v, "maxItems", 1, &mx);
    if (!rc && it && it->type == SYNOR__J_ARRAY)
        rc = fail(x, it, "\"items\" as a list of schemas (a tuple) is not supported");
    if (!rc && it && it->type == SYNOR__J_BOOL && !it->u.boolean)
        mx = 0, sub = SCHEMA_NONE;
    else if (!rc && it) {
        size_t saved;
        path_push(x, "items", &saved);
        rc = compile(x, it, refs, &sub);
        path_pop(x, saved);
    }
    jnode *n = &x->s->n[idx];
    n->min = mn;
    n->max = mx;
    n->sub = sub;
    return rc;
}

/* "#", "#/$defs/name", any JSON pointer into the schema. */
static int resolve(cx *x, const synor__jval *ref, const synor__jval **out)
{
    if (ref->type != SYNOR__J_STRING)
        return fail(x, ref, "\"$ref\" must be a string");
    const char *r = ref->u.str.s;
    if (r[0] != '#' || (r[1] && r[1] != '/'))
        return fail(x, ref, "\"$ref\" \"%s\": only references inside the schema (#/...) are "
                            "supported", r);
    const synor__jval *at = x->top;
    for (const char *p = r + 1; *p == '/' && at;) {
        char seg[256];
        size_t n = 0;
        for (p++; *p && *p != '/' && n + 1 < sizeof seg; p++) { /* ~1 is '/', ~0 '~' */
            int esc = p[0] == '~' && (p[1] == '0' || p[1] == '1');
            seg[n++] = esc ? (*++p == '1' ? '/' : '~') : *p;
        }
        seg[n] = 0;
        if (at->type == SYNOR__J_OBJECT) {
            at = synor__json_get(at, seg);
        } else if (at->type == SYNOR__J_ARRAY) {
            char *end;
            unsigned long i = strtoul(seg, &end, 10);
            at = *seg && !*end && i < at->u.arr.n ? at->u.arr.items[i] : NULL;
        } else {
            at = NULL;
        }
    }
    if (!at)
        return fail(x, ref, "\"$ref\" \"%s\" refers to nothing in the schema", r);
    *out = at;
    return 0;
}

static int compile(cx *x, const synor__jval *v, int refs, uint16_t *out)
{
    if (v->type == SYNOR__J_BOOL) {
        *out = 0;
        return v->u.boolean ? 0 : new_node(x, v, N_FALSE, out);
    }
    if (v->type != SYNOR__J_OBJECT)
        return fail(x, v, "expected a schema (an object, true or false), found %s",
                    synor__jtype_name(v->type));
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const char *k = v->u.obj.m[i].key;
        if (!in_list(annotations, k) && !in_list(keywords, k))
            return fail(x, v->u.obj.m[i].val, "keyword \"%s\" is not supported (the constraint "
                                              "cannot guarantee it)", k);
    }
    const synor__jval *ref = synor__json_get(v, "$ref");
    if (ref) {
        for (size_t i = 0; i < v->u.obj.n; i++)
            if (!in_list(annotations, v->u.obj.m[i].key) && strcmp(v->u.obj.m[i].key, "$ref"))
                return fail(x, v->u.obj.m[i].val, "\"%s\" beside \"$ref\" is not supported",
                            v->u.obj.m[i].key);
        const synor__jval *to;
        int rc = resolve(x, ref, &to);
        if (!rc && refs >= MAX_REFS)
            rc = fail(x, ref, "more than 64 \"$ref\" in a chain (a reference to itself?)");
        if (rc)
            return rc;
        return compile(x, to, refs + 1, out);
    }
    if ((*out = memo_find(x, v)) != SCHEMA_NONE)
        return 0;
    if (synor__json_get(v, "enum") || synor__json_get(v, "const"))
        return lit_node(x, v, out);
    const synor__jval *alts = synor__json_get(v, "anyOf");
    if (alts || (alts = synor__json_get(v, "oneOf")))
        return union_node(x, v, alts, refs, out);
    unsigned mask;
    int rc = type_mask(x, v, &mask);
    if (rc)
        return rc;
    if (!mask) { /* any value */
        *out = 0;
        return 0;
    }
    int nt = __builtin_popcount(mask);
    if ((rc = new_node(x, v, nt > 1 ? N_UNION : type_kinds[__builtin_ctz(mask)], out)))
        return rc;
    uint16_t u = *out;
    if (nt > 1 && !(x->s->n[u].alts = synor__calloc((size_t)nt, sizeof(uint16_t))))
        return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
    for (unsigned k = 0; k < 7 && !rc; k++) {
        if (!(mask >> k & 1))
            continue;
        uint16_t t = u;
        if (nt > 1) { /* one node a type, the same keywords (x->src: the union's) */
            if ((rc = new_node(x, NULL, type_kinds[k], &t)))
                break;
            x->s->n[u].alts[x->s->n[u].nalts++] = t;
        }
        if (type_kinds[k] == N_OBJ)
            rc = object_node(x, v, t, refs);
        else if (type_kinds[k] == N_ARR)
            rc = array_node(x, v, t, refs);
        else if (type_kinds[k] == N_STR)
            rc = count_kw(x, v, "minLength", 0, &x->s->n[t].min) ||
                         count_kw(x, v, "maxLength", 1, &x->s->n[t].max)
                     ? SYNOR_ESCHEMA
                     : 0;
    }
    return rc;
}

/* anyOf in anyOf made one list; a union with "any value" in it is any value. */
static int flatten(cx *x, uint16_t u, uint16_t a, int nest, uint16_t *list, uint16_t *n, int *any)
{
    const jnode *na = &x->s->n[a];
    if (na->kind == N_UNION) {
        if (nest == MAX_NEST)
            return fail(x, x->src[u], "anyOf nested more than 16 deep (or in itself)");
        for (unsigned i = 0; i < na->nalts; i++) {
            int rc = flatten(x, u, na->alts[i], nest + 1, list, n, any);
            if (rc)
                return rc;
        }
        return 0;
    }
    *any |= na->kind == N_ANY;
    for (unsigned i = 0; i < *n; i++)
        if (list[i] == a)
            return 0;
    if (*n == SCHEMA_MAX_SET)
        return fail(x, x->src[u], "more than 64 alternatives in one anyOf");
    list[(*n)++] = a;
    return 0;
}

static unsigned depth_of(const synor_llm_schema *s, const jnode *n)
{
    unsigned d = 0;
    switch (n->kind) {
    case N_STR:
        return n->min <= n->max ? 0 : SCHEMA_TOO_DEEP;
    case N_LIT:
        return n->nlits ? 0 : SCHEMA_TOO_DEEP;
    case N_FALSE:
        return SCHEMA_TOO_DEEP;
    case N_ARR:
        if (n->min > n->max)
            return SCHEMA_TOO_DEEP;
        d = n->min == 0 ? 0 : n->sub == SCHEMA_NONE ? SCHEMA_TOO_DEEP : s->n[n->sub].depth;
        return d >= SCHEMA_TOO_DEEP - 1 ? SCHEMA_TOO_DEEP : d + 1;
    case N_OBJ:
        if (n->one_prop) { /* the shallowest of them */
            d = SCHEMA_TOO_DEEP;
            for (unsigned i = 0; i < n->nprops; i++)
                if (s->n[n->props[i].node].depth < d)
                    d = s->n[n->props[i].node].depth;
        }
        for (unsigned i = 0; i < n->nprops; i++)
            if (n->props[i].required && s->n[n->props[i].node].depth > d)
                d = s->n[n->props[i].node].depth;
        return d >= SCHEMA_TOO_DEEP - 1 ? SCHEMA_TOO_DEEP : d + 1;
    case N_UNION:
        d = SCHEMA_TOO_DEEP;
        for (unsigned i = 0; i < n->nalts; i++)
            if (s->n[n->alts[i]].depth < d)
                d = s->n[n->alts[i]].depth;
        return d;
    case N_SWITCH: /* any of them may be picked */
        for (unsigned i = 0; i < n->nalts; i++)
            if (s->n[n->alts[i]].depth > d)
                d = s->n[n->alts[i]].depth;
        return d;
    default:
        return 0;
    }
}

static const char *first_bytes(const synor_llm_schema *s, const jnode *n, char *buf)
{
    static const char *const by_kind[] = {"", "{", "[", "\"", "-0123456789", "-0123456789",
                                          "tf", "n"};
    if (n->kind != N_LIT)
        return n->kind < N_LIT ? by_kind[n->kind] : "";
    size_t k = 0;
    for (unsigned i = 0; i < n->nlits; i++)
        if (!memchr(buf, n->lits[i][0], k))
            buf[k++] = n->lits[i][0];
    buf[k] = 0;
    (void)s;
    return buf;
}

static int finish(cx *x)
{
    synor_llm_schema *s = x->s;
    for (unsigned u = 3; u < s->nn; u++) {
        if (s->n[u].kind != N_UNION)
            continue;
        uint16_t list[SCHEMA_MAX_SET], n = 0;
        int any = 0;
        int rc = flatten(x, (uint16_t)u, (uint16_t)u, 0, list, &n, &any);
        if (rc)
            return rc;
        if (n > s->n[u].nalts) { /* an anyOf inside it: more than it had */
            uint16_t *a = synor__realloc(s->n[u].alts, n * sizeof *a);
            if (!a)
                return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
            s->n[u].alts = a;
        }
        memcpy(s->n[u].alts, list, n * sizeof *list);
        s->n[u].nalts = n;
        if (any)
            s->n[u].kind = N_ANY;
    }
    for (unsigned i = 0; i < s->nn; i++)
        s->n[i].depth = SCHEMA_TOO_DEEP;
    for (unsigned pass = 0, changed = 1; changed && pass <= s->nn; pass++) {
        changed = 0;
        for (unsigned i = 0; i < s->nn; i++) {
            unsigned d = depth_of(s, &s->n[i]);
            if (d < s->n[i].depth)
                s->n[i].depth = (uint8_t)d, changed = 1;
        }
    }
    for (unsigned u = 3; u < s->nn; u++) {
        jnode *n = &s->n[u];
        if (n->kind != N_UNION)
            continue;
        if (!(n->alt_of = synor__malloc(256 * sizeof *n->alt_of)))
            return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
        memset(n->alt_of, 0xff, 256 * sizeof *n->alt_of);
        for (unsigned i = 0; i < n->nalts; i++) {
            const jnode *a = &s->n[n->alts[i]];
            char buf[SCHEMA_MAX_SET + 1];
            if (a->depth > JSON_MAX_DEPTH)
                continue;
            for (const char *b = first_bytes(s, a, buf); *b; b++) {
                uint16_t *o = &n->alt_of[(unsigned char)*b];
                if (*o != SCHEMA_NONE)
                    return fail(x, x->src[u],
                                "alternatives (anyOf, oneOf or a list of types) that may "
                                "both begin with '%c' (the constraint tells them apart by a "
                                "value's first byte: give them different types)", *b);
                *o = n->alts[i];
            }
        }
    }
    if (s->n[s->root].kind != N_OBJ)
        return fail(x, x->top, "the schema's root must be an object schema (\"type\": "
                               "\"object\")");
    if (s->n[s->root].depth > JSON_MAX_DEPTH)
        return fail(x, x->top, "no text satisfies the schema within 32 levels of nesting (a "
                               "required property that can never be written, or required "
                               "recursion without end)");
    return 0;
}

static uint16_t any_nextreq[1] = {0};
static jnode any_nodes[3] = {
    {.kind = N_ANY, .depth = 0, .sub = SCHEMA_NONE, .max = SCHEMA_UNBOUNDED,
     .sel_prop = SCHEMA_NONE},
    {.kind = N_OBJ, .depth = 1, .sub = 0, .max = SCHEMA_UNBOUNDED, .sel_prop = SCHEMA_NONE,
     .nextreq = any_nextreq},
    {.kind = N_ARR, .depth = 1, .sub = 0, .max = SCHEMA_UNBOUNDED, .sel_prop = SCHEMA_NONE},
};
static synor_llm_schema any_schema = {.refs = -1, .nn = 3, .root = 1, .n = any_nodes};

synor_llm_schema *synor__llm_schema_any(void) { return &any_schema; }

void synor__llm_schema_hold(synor_llm_schema *s)
{
    if (s->refs >= 0)
        __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void synor_llm_schema_free(synor_llm_schema *s)
{
    if (!s || s->refs < 0 || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    for (unsigned i = 3; s->n && i < s->nn; i++) {
        jnode *n = &s->n[i];
        for (unsigned k = 0; n->props && k < n->nprops; k++)
            synor__free(n->props[k].key);
        for (unsigned k = 0; n->lits && k < n->nlits; k++)
            synor__free(n->lits[k]);
        synor__free(n->props);
        synor__free(n->nextreq);
        synor__free(n->lits);
        synor__free(n->llen);
        synor__free(n->alts);
        synor__free(n->alt_of);
    }
    synor__free(s->n);
    synor__free(s);
}

static void set_path(cx *x, const char *path)
{
    snprintf(x->path, sizeof x->path, "%s", path ? path : "");
    x->plen = strlen(x->path);
}

/* A schema with the three fixed nodes. */
static int begin(cx *x, const synor__jdoc *d, const synor__jval *v, const char *path)
{
    *x = (cx){.d = d, .top = v, .cap = 16};
    set_path(x, path);
    x->s = synor__calloc(1, sizeof *x->s);
    if (x->s) {
        x->s->refs = 1;
        x->s->n = synor__malloc(x->cap * sizeof *x->s->n);
        x->src = synor__calloc(x->cap, sizeof *x->src);
    }
    if (!x->s || !x->s->n || !x->src) {
        synor__free(x->src);
        synor_llm_schema_free(x->s);
        return synor__error(SYNOR_ENOMEM, "JSON schema: out of memory");
    }
    memcpy(x->s->n, any_nodes, sizeof any_nodes);
    x->s->nn = 3;
    return 0;
}

static int end(cx *x, int rc, synor_llm_schema **out)
{
    if (!rc)
        rc = finish(x);
    synor__free(x->src);
    if (rc) {
        synor_llm_schema_free(x->s);
        return rc;
    }
    *out = x->s;
    return 0;
}

int synor__llm_schema_compile(const synor__jdoc *d, const synor__jval *v, const char *path,
                              synor_llm_schema **out)
{
    cx x;
    *out = NULL;
    int rc = begin(&x, d, v, path);
    return rc ? rc : end(&x, compile(&x, v, 0, &x.s->root), out);
}

int synor_llm_schema_parse(const char *text, size_t len, const char *name,
                           synor_llm_schema **out)
{
    if (!out || (!text && len))
        return synor__error(SYNOR_EINVAL, "synor_llm_schema_parse: NULL argument");
    *out = NULL;
    synor__jdoc *d;
    int rc = synor__json_parse(text ? text : "", len, name ? name : "schema", &d);
    if (rc)
        return rc;
    rc = synor__llm_schema_compile(d, synor__jdoc_root(d), "#", out);
    synor__jdoc_free(d);
    return rc;
}

/* For schema_calls.c (schema_cx.h). */
int synor__schema_begin(cx *x, const synor__jdoc *d, const synor__jval *v, const char *path)
{
    return begin(x, d, v, path);
}
int synor__schema_end(cx *x, int rc, synor_llm_schema **out) { return end(x, rc, out); }
int synor__schema_node(cx *x, int kind, uint16_t *out) { return new_node(x, NULL, kind, out); }
int synor__schema_value(cx *x, const synor__jval *v, const char *path, uint16_t *out)
{
    x->top = v;
    set_path(x, path);
    return compile(x, v, 0, out);
}
int synor__schema_fail(cx *x, const synor__jval *v, const char *msg)
{
    return fail(x, v, "%s", msg);
}
