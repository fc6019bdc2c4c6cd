/* test_llm_schema.c - constrained decoding to a JSON Schema: schemas the
 * constraint cannot honour are refused naming the line, column, path and
 * keyword; texts the schema allows pass token by token in the order it
 * lists properties, and those it refuses are stopped; random walks over
 * whatever the mask allows end in text that a plain validator (written
 * here from JSON Schema's rules, apart from the constraint) accepts; a tool
 * call's name picks its arguments' schema; and a sampled request through
 * the scheduler writes only such text. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "json/json.h"
#include "llm/schema.h"
#include "json_fixture.h"
#include "synor/error.h"
#include "synor/llm.h"
#include "test.h"

static json_test_model model;

static synor_llm *load(void)
{
    static const char text[] =
        "{\"name\": \"Ann\", \"age\": 30, \"tags\": [\"red\", \"big\"], \"kind\": \"dog\", "
        "\"nick\": null, \"friend\": {\"name\": \"Bob\", \"age\": -4}, \"ok\": true, "
        "\"size\": 1.5e3} Once upon a time there was a cat. \\u00e9 \\n \\\" ";
    return json_test_load(&model, "synor-schema", text, sizeof text - 1);
}

static synor_llm_schema *schema(const char *text)
{
    synor_llm_schema *g = NULL;
    if (synor_llm_schema_parse(text, strlen(text), "s.json", &g))
        fprintf(stderr, "  %s\n", synor_errmsg());
    return g;
}

static const char person[] =
    "{\"type\": \"object\", \"title\": \"Person\", \"properties\": {"
    "\"name\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 8},"
    "\"age\": {\"type\": \"integer\", \"description\": \"years\"},"
    "\"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"maxItems\": 2},"
    "\"kind\": {\"$ref\": \"#/$defs/kind\"},"
    "\"nick\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}], \"default\": null},"
    "\"size\": {\"type\": [\"number\", \"boolean\"]},"
    "\"friend\": {\"$ref\": \"#\"}},"
    "\"required\": [\"name\", \"age\"],"
    "\"$defs\": {\"kind\": {\"enum\": [\"cat\", \"dog\", 1.5, 12, null]}}}";

TEST(schemas_it_cannot_honour_are_refused)
{
    static const struct {
        const char *schema, *want;
    } bad[] = {
        {"{\"type\": \"object\", \"properties\": {\"code\": {\"type\": \"string\", "
         "\"pattern\": \"^[a-z]+$\"}}}",
         "s.json:1:73: #/properties/code: keyword \"pattern\" is not supported"},
        {"{\"type\": \"string\"}", "root must be an object"},
        {"{\"type\": \"object\", \"properties\": {\"a\": {}}, \"required\": [\"b\"]}",
         "required property \"b\" is not in \"properties\""},
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"anyOf\": [{\"type\": \"string\"}, "
         "{\"enum\": [\"x\"]}]}}}",
         "may both begin with '\"'"},
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\", \"minLength\": "
         "3, \"maxLength\": 2}}, \"required\": [\"a\"]}",
         "no text satisfies the schema"},
        {"{\"type\": \"object\", \"properties\": {\"me\": {\"$ref\": \"#\"}}, \"required\": "
         "[\"me\"]}",
         "no text satisfies the schema"},
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"$ref\": \"#/$defs/b\"}}}",
         "refers to nothing"},
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"enum\": [[1]]}}}",
         "values that are array"},
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"float\"}}}",
         "unknown type float"},
        {"{\"type\": \"object\", \"minProperties\": 1}", "keyword \"minProperties\""},
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\", \"minimum\": "
         "0}}}",
         "#/properties/a: keyword \"minimum\""},
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"$ref\": \"http://x/y\"}}}",
         "only references inside the schema"},
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"items\": [{}]}}}", "a tuple"},
        {"{\"type\": \"object\",", "s.json:1:"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        synor_llm_schema *g = (synor_llm_schema *)1;
        int rc = synor_llm_schema_parse(bad[i].schema, strlen(bad[i].schema), "s.json", &g);
        const char *msg = synor_errmsg();
        if (!rc || !strstr(msg, bad[i].want))
            fprintf(stderr, "  %s\n  -> rc %d: %s (want \"%s\")\n", bad[i].schema, rc, msg,
                    bad[i].want);
        ASSERT(rc != 0 && strstr(msg, bad[i].want) != NULL);
        ASSERT(g == NULL);
    }
}

TEST(texts_pass_in_order_and_others_stop)
{
    synor_llm *m = load();
    synor_llm_schema *g = schema(person);
    ASSERT(m && g);
    static const char *const good[] = {
        "{\"name\": \"Ann\", \"age\": 30}",
        "{\"name\": \"Ann\", \"age\": -3, \"tags\": [], \"kind\": \"dog\", \"nick\": null}",
        "{\"name\": \"\\u00e9\\ud83d\\ude00\xc3\xa9\", \"age\": 0, \"kind\": 1.5, \"size\": 2e-3}",
        "{\"name\": \"Ann\", \"age\": 1, \"kind\": 12, \"size\": true, \"friend\": "
        "{\"name\": \"Bob\", \"age\": 2, \"friend\": {\"name\": \"C\", \"age\": 3}}}",
        "{\n  \"name\": \"12345678\",\n  \"age\": 7,\n  \"tags\": [\"a\", \"b\"],\n"
        "  \"kind\": null,\n  \"nick\": \"x\"\n}",
    };
    static const char *const bad[] = {
        "{\"age\": 30, \"name\": \"Ann\"}",           /* order */
        "{\"name\": \"Ann\"}",                        /* age is required */
        "{\"name\": \"Ann\", \"age\": 3.5}",          /* an integer */
        "{\"name\": \"Ann\", \"age\": 1e3}",
        "{\"name\": \"123456789\", \"age\": 1}",      /* 9 characters */
        "{\"name\": \"\", \"age\": 1}",               /* 0 */
        "{\"name\": \"Ann\", \"age\": 1, \"tags\": [\"a\", \"b\", \"c\"]}",
        "{\"name\": \"Ann\", \"age\": 1, \"tags\": [1]}",
        "{\"name\": \"Ann\", \"age\": 1, \"kind\": \"cow\"}",
        "{\"name\": \"Ann\", \"age\": 1, \"kind\": 1.55}",
        "{\"name\": \"Ann\", \"age\": 1, \"kind\": 1}",
        "{\"name\": \"Ann\", \"age\": 1, \"extra\": 1}",
        "{\"name\": \"Ann\", \"age\": 1, \"nick\": 5}",
        "{\"name\": \"Ann\", \"age\": 1, \"size\": \"big\"}",
        "{\"name\": \"Ann\", \"age\": 1, \"friend\": {}}",
        "{\"name\": \"Ann\", \"age\": 1, \"kind\": \"dog\", \"tags\": []}", /* order */
        "{\"nam\": \"Ann\", \"age\": 1}",
        "{\"name\": \"Ann\", \"age\": 1,}",
    };
    ASSERT_OK(json_test_expect(m, g, good, sizeof good / sizeof *good, bad,
                               sizeof bad / sizeof *bad));
    synor_llm_schema_free(g);
    synor_llm_destroy(m);
}

/* ---- a plain validator of the same subset, from JSON Schema's rules ---- */

static size_t code_points(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xc0) != 0x80;
    return k;
}

static int same(const synor__jval *a, const synor__jval *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case SYNOR__J_STRING:
        return a->u.str.len == b->u.str.len && !memcmp(a->u.str.s, b->u.str.s, a->u.str.len);
    case SYNOR__J_NUMBER:
        return a->u.n.num == b->u.n.num;
    case SYNOR__J_BOOL:
        return a->u.boolean == b->u.boolean;
    default:
        return a->type == SYNOR__J_NULL;
    }
}

static int has_type(const synor__jval *v, const char *t)
{
    if (!strcmp(t, "integer"))
        return v->type == SYNOR__J_NUMBER && v->u.n.num == (double)(long long)v->u.n.num;
    return !strcmp(t, synor__jtype_name(v->type)) ||
           (!strcmp(t, "boolean") && v->type == SYNOR__J_BOOL);
}

static int valid(const synor__jval *root, const synor__jval *s, const synor__jval *v)
{
    if (s->type == SYNOR__J_BOOL)
        return s->u.boolean;
    const synor__jval *k;
    if ((k = synor__json_get(s, "$ref"))) {
        const char *r = k->u.str.s;
        return valid(root, strcmp(r, "#") ? synor__json_get(synor__json_get(root, "$defs"), r + 8)
                                          : root,
                     v);
    }
    if ((k = synor__json_get(s, "enum"))) {
        for (size_t i = 0; i < k->u.arr.n; i++)
            if (same(k->u.arr.items[i], v))
                return 1;
        return 0;
    }
    if ((k = synor__json_get(s, "anyOf"))) {
        for (size_t i = 0; i < k->u.arr.n; i++)
            if (valid(root, k->u.arr.items[i], v))
                return 1;
        return 0;
    }
    if ((k = synor__json_get(s, "type"))) {
        int ok = 0;
        for (size_t i = 0; i < (k->type == SYNOR__J_ARRAY ? k->u.arr.n : 1); i++)
            ok |= has_type(v, (k->type == SYNOR__J_ARRAY ? k->u.arr.items[i] : k)->u.str.s);
        if (!ok)
            return 0;
    }
    const synor__jval *lo = NULL, *hi = NULL;
    if (v->type == SYNOR__J_STRING) {
        size_t n = code_points(v->u.str.s, v->u.str.len);
        lo = synor__json_get(s, "minLength");
        hi = synor__json_get(s, "maxLength");
        return (!lo || (double)n >= lo->u.n.num) && (!hi || (double)n <= hi->u.n.num);
    }
    if (v->type == SYNOR__J_ARRAY) {
        lo = synor__json_get(s, "minItems");
        hi = synor__json_get(s, "maxItems");
        if ((lo && (double)v->u.arr.n < lo->u.n.num) || (hi && (double)v->u.arr.n > hi->u.n.num))
            return 0;
        const synor__jval *it = synor__json_get(s, "items");
        for (size_t i = 0; it && i < v->u.arr.n; i++)
            if (!valid(root, it, v->u.arr.items[i]))
                return 0;
    }
    if (v->type == SYNOR__J_OBJECT) {
        const synor__jval *p = synor__json_get(s, "properties");
        const synor__jval *r = synor__json_get(s, "required");
        const synor__jval *ap = synor__json_get(s, "additionalProperties");
        for (size_t i = 0; r && i < r->u.arr.n; i++)
            if (!synor__json_get(v, r->u.arr.items[i]->u.str.s))
                return 0;
        for (size_t i = 0; i < v->u.obj.n; i++) {
            const synor__jval *ps = p ? synor__json_get(p, v->u.obj.m[i].key) : NULL;
            if (!ps && ap)
                ps = ap;
            if (ps && !valid(root, ps, v->u.obj.m[i].val))
                return 0;
        }
    }
    return 1;
}

/* A tool call (synor serve's tools): {"name": a function's, "arguments": what that function's
 * parameters allow}, the name picking the arguments' schema. */
static const char tools_doc[] =
    "[{\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\", "
    "\"maxLength\": 12}, \"unit\": {\"enum\": [\"c\", \"f\"]}}, \"required\": [\"location\"]},"
    " {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}}]";

static synor_llm_schema *tools_schema_of(synor__jdoc **d, int flags)
{
    synor_llm_schema *g = NULL;
    if (synor__json_parse(tools_doc, strlen(tools_doc), "tools", d))
        return NULL;
    const synor__jval *r = synor__jdoc_root(*d);
    const synor__jval *params[3] = {r->u.arr.items[0], NULL, r->u.arr.items[1]};
    const char *names[3] = {"get_weather", "get_time", "get_weather_at"};
    const char *paths[3] = {"tools[0]", "tools[1]", "tools[2]"};
    if (synor__llm_schema_tools(*d, params, names, paths, 3, flags, &g))
        fprintf(stderr, "  %s\n", synor_errmsg());
    return g;
}

/* A call ({"name", "arguments"}); flags as synor__llm_schema_tools takes them: with
 * SCHEMA_CALLS_TEXT the model's pick ("auto"): {"tool_call": a call} or {"response": a
 * text}, exactly one; with SCHEMA_CALLS_LIST {"tool_calls": [one or more calls]} (with
 * TEXT: or {"response": a text}). */
static synor_llm_schema *tools_schema(synor__jdoc **d) { return tools_schema_of(d, 0); }

/* A tool call's validity: its name one of the three, its arguments what that function's
 * parameters allow (get_time: none). */
static int valid_tool(const synor__jval *params, const synor__jval *v)
{
    static const char *const names[3] = {"get_weather", "get_time", "get_weather_at"};
    const synor__jval *n = synor__json_get(v, "name"), *a = synor__json_get(v, "arguments");
    if (!n || !a || n->type != SYNOR__J_STRING || a->type != SYNOR__J_OBJECT || v->u.obj.n != 2)
        return 0;
    for (int k = 0; k < 3; k++)
        if (!strcmp(n->u.str.s, names[k])) {
            const synor__jval *p = k == 1 ? NULL : params->u.arr.items[k ? 1 : 0];
            return p ? valid(p, p, a) : a->u.obj.n == 0;
        }
    return 0;
}

static int valid_calls(const synor__jval *params, const synor__jval *l)
{
    if (!l || l->type != SYNOR__J_ARRAY || l->u.arr.n < 1)
        return 0;
    for (size_t i = 0; i < l->u.arr.n; i++)
        if (!valid_tool(params, l->u.arr.items[i]))
            return 0;
    return 1;
}

/* flags: SCHEMA_CALLS_* (one of them at least) */
static int valid_calls_or_text(const synor__jval *params, const synor__jval *v, int flags)
{
    if (v->type != SYNOR__J_OBJECT || v->u.obj.n != 1)
        return 0;
    const synor__jval *c = synor__json_get(v, "tool_call"), *r = synor__json_get(v, "response");
    const synor__jval *l = synor__json_get(v, "tool_calls");
    if (!(flags & SCHEMA_CALLS_TEXT))
        return valid_calls(params, l);
    if (flags & SCHEMA_CALLS_LIST)
        return l ? valid_calls(params, l) : r && r->type == SYNOR__J_STRING;
    return c ? valid_tool(params, c) : r && r->type == SYNOR__J_STRING;
}

static const char *const walk_schemas[] = {
    person,
    "{\"type\": \"object\", \"properties\": {\"ok\": {\"type\": \"boolean\"}, \"items\": "
    "{\"type\": \"array\", \"minItems\": 1, \"maxItems\": 3, \"items\": {\"type\": \"object\", "
    "\"properties\": {\"n\": {\"type\": \"number\"}, \"tag\": {\"const\": \"red\"}}, "
    "\"required\": [\"n\"]}}}, \"required\": [\"ok\", \"items\"]}",
    "{\"type\": \"object\", \"additionalProperties\": {\"type\": \"string\", \"maxLength\": 3}}",
    "{\"type\": \"object\", \"properties\": {}, \"additionalProperties\": false}",
    /* anyOf in anyOf (one list of four alternatives), a list of types beside it */
    "{\"type\": \"object\", \"properties\": {\"v\": {\"anyOf\": [{\"type\": \"null\"}, "
    "{\"anyOf\": [{\"type\": \"boolean\"}, {\"anyOf\": [{\"type\": \"integer\"}, "
    "{\"type\": \"array\", \"items\": {\"type\": [\"string\", \"null\"]}}]}]}]}}, "
    "\"required\": [\"v\"]}",
};

/* Random walks over the tokens the mask allows (those holding a closer or
 * a quote weighted up, so that walks end): every one that ends is text the
 * validator accepts. */
TEST(whatever_the_mask_allows_is_valid)
{
    synor_llm *m = load();
    ASSERT(m != NULL);
    char text[8192];
    uint64_t rng = 7;
    size_t nsch = sizeof walk_schemas / sizeof *walk_schemas;
    /* the last four: a tool call, "auto", several calls, several calls or a text */
    for (size_t si = 0; si < nsch + 4; si++) {
        synor__jdoc *sd = NULL;
        int flags = si < nsch ? 0 : (int)(si - nsch);
        synor_llm_schema *g = si < nsch ? schema(walk_schemas[si]) : tools_schema_of(&sd, flags);
        ASSERT(g != NULL);
        if (si < nsch)
            ASSERT_OK(synor__json_parse(walk_schemas[si], strlen(walk_schemas[si]), "s", &sd));
        const synor__jval *sr = synor__jdoc_root(sd);
        int ended = 0;
        for (int walk = 0; walk < 30; walk++) {
            size_t len;
            int r = json_test_walk(m, g, &rng, text, sizeof text, &len);
            ASSERT(r >= 0); /* never a dead end */
            if (r == 0)
                continue;
            synor__jdoc *d;
            ended++;
            if (synor__json_parse(text, len, "walk", &d)) {
                fprintf(stderr, "  %.*s: %s\n", (int)len, text, synor_errmsg());
                ASSERT(0);
            }
            int ok = si < nsch    ? valid(sr, sr, synor__jdoc_root(d))
                     : si == nsch ? valid_tool(sr, synor__jdoc_root(d))
                                  : valid_calls_or_text(sr, synor__jdoc_root(d), flags);
            if (!ok)
                fprintf(stderr, "  schema %zu: invalid: %.*s\n", si, (int)len, text);
            synor__jdoc_free(d);
            ASSERT(ok);
        }
        fprintf(stderr, "  schema %zu: %d of 30 walks ended\n", si, ended);
        ASSERT(ended >= 10);
        synor__jdoc_free(sd);
        synor_llm_schema_free(g);
    }
    synor_llm_destroy(m);
}

TEST(a_tool_call_takes_its_functions_arguments)
{
    synor_llm *m = load();
    synor__jdoc *d = NULL;
    synor_llm_schema *g = tools_schema(&d);
    ASSERT(m && g);
    static const char *const good[] = {
        "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}",
        "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\", \"unit\": \"c\"}}",
        "{\"name\": \"get_time\", \"arguments\": {}}",
        "{\"name\": \"get_weather_at\", \"arguments\": {\"n\": 12}}",
        "{\"name\": \"get_weather_at\", \"arguments\": {}}",
    };
    static const char *const bad[] = {
        "{\"name\": \"get_time\", \"arguments\": {\"location\": \"x\"}}",
        "{\"name\": \"get_weather\", \"arguments\": {}}",
        "{\"name\": \"get_weather\", \"arguments\": {\"n\": 1}}",
        "{\"name\": \"get_weather_at\", \"arguments\": {\"location\": \"x\"}}",
        "{\"name\": \"other\", \"arguments\": {}}",
        "{\"arguments\": {}, \"name\": \"get_time\"}",
        "{\"name\": \"get_time\"}",
        "{\"name\": \"get_time\", \"arguments\": []}",
    };
    ASSERT_OK(json_test_expect(m, g, good, sizeof good / sizeof *good, bad,
                               sizeof bad / sizeof *bad));
    /* the model's pick: a call or a text, exactly one */
    synor__jdoc *da = NULL;
    synor_llm_schema *ga = tools_schema_of(&da, SCHEMA_CALLS_TEXT);
    ASSERT(ga != NULL);
    static const char *const agood[] = {
        "{\"tool_call\": {\"name\": \"get_time\", \"arguments\": {}}}",
        "{\"response\": \"It is noon.\"}",
        "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": {\"location\": \"Rome\"}}}",
    };
    static const char *const abad[] = {
        "{}",
        "{\"response\": \"x\", \"tool_call\": {\"name\": \"get_time\", \"arguments\": {}}}",
        "{\"tool_call\": {\"name\": \"get_time\", \"arguments\": {}}, \"response\": \"x\"}",
        "{\"text\": \"x\"}",
        "{\"response\": 1}",
        "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": {}}}",
    };
    ASSERT_OK(json_test_expect(m, ga, agood, sizeof agood / sizeof *agood, abad,
                               sizeof abad / sizeof *abad));
    synor_llm_schema_free(ga);
    synor__jdoc_free(da);
    /* several calls (parallel_tool_calls): a list of one or more */
    synor_llm_schema *gl = tools_schema_of(&da, SCHEMA_CALLS_LIST);
    ASSERT(gl != NULL);
    static const char *const lgood[] = {
        "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {}}]}",
        "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": "
        "\"get_weather\", \"arguments\": {\"location\": \"Rome\"}}]}",
    };
    static const char *const lbad[] = {
        "{\"tool_calls\": []}",
        "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {}}, {}]}",
        "{\"tool_call\": {\"name\": \"get_time\", \"arguments\": {}}}",
        "{\"name\": \"get_time\", \"arguments\": {}}",
        "{\"response\": \"x\"}",
    };
    ASSERT_OK(json_test_expect(m, gl, lgood, sizeof lgood / sizeof *lgood, lbad,
                               sizeof lbad / sizeof *lbad));
    synor_llm_schema_free(gl);
    synor__jdoc_free(da);
    /* several calls or a text */
    gl = tools_schema_of(&da, SCHEMA_CALLS_LIST | SCHEMA_CALLS_TEXT);
    ASSERT(gl != NULL);
    static const char *const tgood[] = {
        "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": "
        "\"get_time\", \"arguments\": {}}]}",
        "{\"response\": \"It is noon.\"}",
    };
    static const char *const tbad[] = {
        "{\"tool_calls\": []}",
        "{\"tool_call\": {\"name\": \"get_time\", \"arguments\": {}}}",
        "{\"response\": \"x\", \"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {}}]}",
        "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {}}], \"response\": \"x\"}",
    };
    ASSERT_OK(json_test_expect(m, gl, tgood, sizeof tgood / sizeof *tgood, tbad,
                               sizeof tbad / sizeof *tbad));
    synor_llm_schema_free(gl);
    synor__jdoc_free(da);
    /* a function whose parameters are not an object schema */
    synor__jdoc *d2;
    const char *t = "{\"type\": \"string\"}";
    ASSERT_OK(synor__json_parse(t, strlen(t), "p", &d2));
    const synor__jval *params[1] = {synor__jdoc_root(d2)};
    const char *names[1] = {"f"}, *paths[1] = {"tools[0].function.parameters"};
    synor_llm_schema *g2 = NULL;
    ASSERT(synor__llm_schema_tools(d2, params, names, paths, 1, 0, &g2) != 0 && !g2);
    ASSERT(strstr(synor_errmsg(), "p:1:1: tools[0].function.parameters: a function's "
                                  "parameters must be an object schema") != NULL);
    synor__jdoc_free(d2);
    synor_llm_schema_free(g);
    synor__jdoc_free(d);
    synor_llm_destroy(m);
}

/* A choice (vLLM's guided_choice): the text is one of the texts, raw, and may end exactly where
 * one is whole (a text that begins another: either). */
TEST(a_choice_is_one_of_its_texts)
{
    synor_llm *m = load();
    ASSERT(m != NULL);
    const char *texts[4] = {"positive", "negative", "neutral \xc3\xa9", "pos"};
    size_t lens[4] = {8, 8, 10, 3};
    synor_llm_schema *g;
    ASSERT_OK(synor__llm_schema_choice(texts, lens, 4, &g));
    static const char *const good[] = {"positive", "pos", "negative", "neutral \xc3\xa9"};
    static const char *const bad[] = {"posi", "positively", "{\"a\": 1}", " positive", "neg",
                                      "Positive"};
    ASSERT_OK(json_test_expect(m, g, good, sizeof good / sizeof *good, bad,
                               sizeof bad / sizeof *bad));
    /* after "pos": the end or more of "positive"; after "positive": the end alone */
    synor_llm_json *j;
    ASSERT_OK(synor_llm_json_create_schema(m, g, &j));
    int32_t eos = synor_tokenizer_eos(synor_llm_tokenizer(m));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(synor_llm_json_accept(j, 3 + (unsigned char)"pos"[i]));
    ASSERT(synor_llm_json_allows(j, eos) && synor_llm_json_allows(j, 3 + 'i'));
    for (int i = 3; i < 8; i++)
        ASSERT_OK(synor_llm_json_accept(j, 3 + (unsigned char)"positive"[i]));
    ASSERT(synor_llm_json_allows(j, eos) && !synor_llm_json_allows(j, 3 + ' '));
    synor_llm_json_destroy(j);
    /* texts it refuses: none, an empty one, the same twice */
    size_t zero[2] = {0, 3};
    synor_llm_schema *g2 = NULL;
    ASSERT(synor__llm_schema_choice(texts, lens, 0, &g2) != 0 && !g2);
    ASSERT(synor__llm_schema_choice(texts, zero, 2, &g2) != 0 && !g2);
    const char *twice[2] = {"a", "a"};
    size_t ones[2] = {1, 1};
    ASSERT(synor__llm_schema_choice(twice, ones, 2, &g2) != 0 && !g2);
    ASSERT(strstr(synor_errmsg(), "texts 0 and 1 are the same") != NULL);
    synor_llm_schema_free(g);
    synor_llm_destroy(m);
}

/* Through the scheduler, sampled: the text of every request that ends is
 * valid, and the constraint outlives the schema handle given back. */
TEST(a_constrained_request_follows_the_schema)
{
    synor_llm *m = load();
    synor_runtime *rt = llm_test_runtime(1);
    ASSERT(m && rt);
    synor_llm_ctx *c;
    synor_llm_sched *s;
    ASSERT_OK(synor_llm_ctx_create(m, rt, NULL, &c));
    ASSERT_OK(synor_llm_sched_create(c, NULL, &s));
    synor__jdoc *sd;
    ASSERT_OK(synor__json_parse(person, strlen(person), "s", &sd));
    const synor__jval *sr = synor__jdoc_root(sd);
    int closed = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        synor_llm_schema *g = schema(person);
        synor_llm_json *j;
        ASSERT_OK(synor_llm_json_create_schema(m, g, &j));
        synor_llm_schema_free(g); /* the constraint holds it */
        json_test_got got;
        ASSERT_OK(json_test_sample(s, j, seed, 250, &got));
        if (got.reason == SYNOR_LLM_DONE_EOS) {
            char text[4096];
            size_t len = 0;
            int32_t prev = 20;
            for (int i = 0; i < got.n; i++) {
                long k = synor_tokenizer_decode(synor_llm_tokenizer(m), prev, got.t[i], text + len,
                                                sizeof text - len);
                ASSERT(k >= 0);
                len += (size_t)k;
                prev = got.t[i];
            }
            synor__jdoc *d;
            ASSERT_OK(synor__json_parse(text, len, "answer", &d));
            ASSERT(valid(sr, sr, synor__jdoc_root(d)));
            synor__jdoc_free(d);
            closed++;
        } else {
            ASSERT_EQ(got.reason, SYNOR_LLM_DONE_LENGTH);
        }
        synor_llm_json_destroy(j);
    }
    fprintf(stderr, "  %d of 6 sampled requests closed their object within 250 tokens\n",
            closed);
    synor__jdoc_free(sd);
    llm_test_teardown(s, c, m, rt);
}

TEST(cleanup) { json_test_unlink(&model); }

TEST_MAIN(schemas_it_cannot_honour_are_refused, texts_pass_in_order_and_others_stop,
          whatever_the_mask_allows_is_valid, a_tool_call_takes_its_functions_arguments,
          a_choice_is_one_of_its_texts, a_constrained_request_follows_the_schema, cleanup)
