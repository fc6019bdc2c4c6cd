/* api.c - OpenAI's completion and chat completion requests, checked as the
 * rest of Synor checks its input (line, column, field and value named).
 * The text and error JSON of the answers: text.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "llm/schema.h"
#include "serve/serve_api.h"
#include "serve/toolscan.h"
#include "synor/llm.h"

#define DOC "request body"
#define MAX_TOKENS_LIMIT (1L << 24)

/* A member that is absent or null reads as absent, as OpenAI's do. */
static const synor__jval *opt(const synor__jval *root, const char *key)
{
    const synor__jval *v = synor__json_get(root, key);
    return v && v->type != SYNOR__J_NULL ? v : NULL;
}

/* Fields the engine has no way to honour: refused rather than ignored, so
 * a client never gets an answer that silently differs from what it asked. */
static int refuse_unsupported(const synor__jdoc *d, const synor__jval *root, int chat)
{
    static const char *const never[] = {"echo", "best_of", "suffix", "functions"};
    for (size_t i = chat ? 0 : 3; i < SYNOR__ARRAY_LEN(never); i++) { /* completions' own */
        const synor__jval *v = opt(root, never[i]);
        if (v && !(v->type == SYNOR__J_BOOL && !v->u.boolean) &&
            !(v->type == SYNOR__J_ARRAY && v->u.arr.n == 0))
            return synor__json_fail(d, v, SYNOR_ENOTSUP, never[i],
                                    "not supported by synor serve");
    }
    return 0;
}

/* "response_format": {"type": "text"}, {"type": "json_object"} or
 * {"type": "json_schema", "json_schema": {"name": ..., "schema": {...},
 * "strict": ...}} (OpenAI's; the schema is always enforced), and
 * llama.cpp's {"type": "json_object", "schema": {...}}. */
static int format_field(const synor__jdoc *d, const synor__jval *v, synor__serve_req *out)
{
    synor__jval *type, *js = NULL, *sch = NULL, *x;
    const char *path = "response_format.schema";
    int e = synor__json_expect(d, v, "response_format", SYNOR__J_OBJECT);
    if (!e)
        e = synor__json_member(d, v, "response_format", "type", SYNOR__J_STRING, 1, &type);
    if (e)
        return e;
    if (!strcmp(type->u.str.s, "json_schema")) {
        path = "response_format.json_schema.schema";
        e = synor__json_member(d, v, "response_format", "json_schema", SYNOR__J_OBJECT, 1, &js);
        if (!e)
            e = synor__json_member(d, js, "response_format.json_schema", "name",
                                   SYNOR__J_STRING, 0, &x);
        if (!e)
            e = synor__json_member(d, js, "response_format.json_schema", "strict",
                                   SYNOR__J_BOOL, 0, &x);
        if (!e)
            e = synor__json_member(d, js, "response_format.json_schema", "schema",
                                   SYNOR__J_OBJECT, 0, &sch);
    } else if (!strcmp(type->u.str.s, "json_object")) {
        e = synor__json_member(d, v, "response_format", "schema", SYNOR__J_OBJECT, 0, &sch);
    } else if (strcmp(type->u.str.s, "text")) {
        return synor__json_fail(d, type, SYNOR_ENOTSUP, "response_format.type",
                                "\"%.40s\" is not supported (\"text\", \"json_object\" or "
                                "\"json_schema\")",
                                type->u.str.s);
    } else {
        return 0;
    }
    if (!e && out->tool_call)
        return synor__json_fail(d, type, SYNOR_ENOTSUP, "response_format.type",
                                "a JSON answer and a tool call at once: one constraint at a "
                                "time");
    out->json_object = !e;
    if (e || !sch)
        return e;
    if ((e = synor__llm_schema_compile(d, sch, path, &out->schema)))
        return e;
    synor__buf b; /* its text, compact: what the exact-match cache keys by */
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_value(&w, sch);
    if (!(out->schema_text = synor__buf_take(&b)))
        return synor__error(SYNOR_ENOMEM, "out of memory reading the request");
    return 0;
}

/* vLLM's guided decoding fields: guided_json (a schema, as json_schema's)
 * and guided_choice (the answer one of 1-64 texts, raw); guided_regex,
 * guided_grammar and guided_whitespace_pattern refused by name. One
 * constraint a request: not with a JSON response_format or a tool call. */
static int guided_fields(const synor__jdoc *d, const synor__jval *root, synor__serve_req *out)
{
    static const char *const never[] = {"guided_regex", "guided_grammar",
                                        "guided_whitespace_pattern"};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(never); i++)
        if (opt(root, never[i]))
            return synor__json_fail(d, opt(root, never[i]), SYNOR_ENOTSUP, never[i],
                                    "not supported by synor serve (guided_json and "
                                    "guided_choice are)");
    const synor__jval *gj = opt(root, "guided_json"), *gc = opt(root, "guided_choice");
    const synor__jval *v = gj ? gj : gc;
    if (!v)
        return 0;
    const char *name = gj ? "guided_json" : "guided_choice";
    if ((gj && gc) || out->json_object)
        return synor__json_fail(d, v, SYNOR_ENOTSUP, name,
                                "one constraint at a time (guided_json, guided_choice, a JSON "
                                "response_format, a tool call)");
    int e;
    if (gj) {
        e = synor__json_expect(d, gj, name, SYNOR__J_OBJECT);
        if (!e)
            e = synor__llm_schema_compile(d, gj, name, &out->schema);
    } else {
        const char *texts[SCHEMA_MAX_SET];
        size_t lens[SCHEMA_MAX_SET];
        e = synor__json_expect(d, gc, name, SYNOR__J_ARRAY);
        if (!e && (gc->u.arr.n == 0 || gc->u.arr.n > SCHEMA_MAX_SET))
            return synor__json_fail(d, gc, SYNOR_ESCHEMA, name,
                                    "expected 1 to 64 texts, found %zu", gc->u.arr.n);
        for (size_t i = 0; !e && i < gc->u.arr.n; i++) {
            const synor__jval *t = gc->u.arr.items[i];
            char path[40];
            snprintf(path, sizeof path, "guided_choice[%zu]", i);
            e = synor__json_expect(d, t, path, SYNOR__J_STRING);
            if (!e && (t->u.str.len == 0 || t->u.str.len > 1024))
                e = synor__json_fail(d, t, SYNOR_ESCHEMA, path,
                                     "a text is 1 to 1024 bytes, found %zu", t->u.str.len);
            if (!e) {
                texts[i] = t->u.str.s;
                lens[i] = t->u.str.len;
            }
        }
        if (!e && (e = synor__llm_schema_choice(texts, lens, (int)gc->u.arr.n, &out->schema)) &&
            e != SYNOR_ENOMEM)
            e = synor__json_fail(d, gc, SYNOR_ESCHEMA, name, "%s", synor_errmsg());
    }
    if (e)
        return e;
    synor__buf b; /* the exact-match cache's key: which constraint, compact */
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__buf_puts(&b, gj ? "json:" : "choice:");
    synor__jw_value(&w, v);
    out->json_object = 1;
    if (!(out->schema_text = synor__buf_take(&b)))
        return synor__error(SYNOR_ENOMEM, "out of memory reading the request");
    return 0;
}

/* A message's content: a string, or an array of {"type":"text","text"}
 * parts (concatenated); null for an assistant message with none. */
static int message_content(const synor__jdoc *d, const synor__jval *c, const char *path,
                           synor__buf *out)
{
    if (!c)
        return 0;
    if (c->type == SYNOR__J_STRING) {
        synor__buf_append(out, c->u.str.s, c->u.str.len);
        return 0;
    }
    if (c->type != SYNOR__J_ARRAY)
        return synor__json_fail(d, c, SYNOR_ESCHEMA, path,
                                "expected a string or an array of text parts, found %s",
                                synor__jtype_name(c->type));
    for (size_t i = 0; i < c->u.arr.n; i++) {
        const synor__jval *p = c->u.arr.items[i];
        char sub[96];
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        synor__jval *type, *text;
        int e = synor__json_expect(d, p, sub, SYNOR__J_OBJECT);
        if (!e)
            e = synor__json_member(d, p, sub, "type", SYNOR__J_STRING, 1, &type);
        if (!e && strcmp(type->u.str.s, "text") != 0)
            e = synor__json_fail(d, type, SYNOR_ENOTSUP, sub,
                                 "content part type \"%s\" is not supported (only \"text\")",
                                 type->u.str.s);
        if (!e)
            e = synor__json_member(d, p, sub, "text", SYNOR__J_STRING, 1, &text);
        if (e)
            return e;
        synor__buf_append(out, text->u.str.s, text->u.str.len);
    }
    return 0;
}

/* One stop sequence: 1 to SYNOR__SERVE_STOP_BYTES bytes, no NUL. */
static int stop_one(const synor__jdoc *d, const synor__jval *v, const char *path,
                    synor__serve_req *out)
{
    int e = synor__json_expect(d, v, path, SYNOR__J_STRING);
    if (e)
        return e;
    if (v->u.str.len == 0 || v->u.str.len > SYNOR__SERVE_STOP_BYTES ||
        strlen(v->u.str.s) != v->u.str.len)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, path,
                                "a stop sequence is 1 to %d bytes without NUL, found %zu bytes",
                                SYNOR__SERVE_STOP_BYTES, v->u.str.len);
    if (!(out->stop[out->n_stop] = synor__strdup(v->u.str.s)))
        return synor__error(SYNOR_ENOMEM, "out of memory reading the request");
    out->n_stop++;
    return 0;
}

/* "stop": a string, or an array of at most SYNOR__SERVE_MAX_STOP. */
static int stop_field(const synor__jdoc *d, const synor__jval *v, synor__serve_req *out)
{
    if (v->type != SYNOR__J_ARRAY)
        return stop_one(d, v, "stop", out);
    if (v->u.arr.n > SYNOR__SERVE_MAX_STOP)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, "stop",
                                "at most %d stop sequences, found %zu", SYNOR__SERVE_MAX_STOP,
                                v->u.arr.n);
    int e = 0;
    for (size_t i = 0; i < v->u.arr.n && !e; i++) {
        char path[16];
        snprintf(path, sizeof path, "stop[%zu]", i);
        e = stop_one(d, v->u.arr.items[i], path, out);
    }
    return e;
}

/* "logit_bias": an object of token ids (decimal strings) to biases. */
static int bias_field(const synor__jdoc *d, const synor__jval *v, synor__serve_req *out)
{
    int e = synor__json_expect(d, v, "logit_bias", SYNOR__J_OBJECT);
    if (e)
        return e;
    size_t n = v->u.obj.n;
    if (n > SYNOR__SERVE_MAX_BIAS)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, "logit_bias", "at most %d tokens, found %zu",
                                SYNOR__SERVE_MAX_BIAS, n);
    if (!n)
        return 0;
    out->bias_tok = synor__malloc(n * sizeof *out->bias_tok);
    out->bias_val = synor__malloc(n * sizeof *out->bias_val);
    if (!out->bias_tok || !out->bias_val)
        return synor__error(SYNOR_ENOMEM, "out of memory reading the request");
    for (size_t i = 0; i < n; i++) {
        const synor__jmember *m = &v->u.obj.m[i];
        char path[64], *end;
        snprintf(path, sizeof path, "logit_bias[\"%.40s\"]", m->key);
        long id = strtol(m->key, &end, 10);
        if (!m->key[0] || *end || m->key[0] == '-' || m->key[0] == '+' || id > INT32_MAX)
            return synor__json_fail(d, m->val, SYNOR_ESCHEMA, path,
                                    "a key is a token id (a decimal number), found \"%.40s\"",
                                    m->key);
        double b;
        if ((e = synor__json_number(d, m->val, path, -100, 100, &b)))
            return e;
        out->bias_tok[i] = (int32_t)id;
        out->bias_val[i] = (float)b;
        out->n_bias = (int)i + 1;
    }
    return 0;
}

/* A completion's "prompt": a string, a list of one string, or a list of
 * token ids (OpenAI's; the ids checked against the vocabulary when the
 * request is tokenized); lists of several prompts are refused. */
static int prompt_field(const synor__jdoc *d, const synor__jval *v, synor__serve_req *out,
                        synor__buf *prompt)
{
    if (v->type == SYNOR__J_ARRAY && v->u.arr.n == 1 &&
        v->u.arr.items[0]->type == SYNOR__J_STRING)
        v = v->u.arr.items[0];
    if (v->type == SYNOR__J_STRING) {
        synor__buf_append(prompt, v->u.str.s, v->u.str.len);
        return 0;
    }
    if (v->type != SYNOR__J_ARRAY || v->u.arr.n == 0 ||
        v->u.arr.items[0]->type != SYNOR__J_NUMBER)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, "prompt",
                                "expected a string or a non-empty array of token ids, found %s",
                                v->type == SYNOR__J_ARRAY && v->u.arr.n
                                    ? "a list of prompts (one prompt a request)"
                                    : synor__jtype_name(v->type));
    size_t n = v->u.arr.n;
    if (!(out->prompt_ids = synor__malloc(n * sizeof *out->prompt_ids)))
        return synor__error(SYNOR_ENOMEM, "out of memory reading the request");
    for (size_t i = 0; i < n; i++) {
        char path[40];
        int64_t id;
        snprintf(path, sizeof path, "prompt[%zu]", i);
        int e = synor__json_int(d, v->u.arr.items[i], path, 0, INT32_MAX, &id);
        if (e)
            return e;
        out->prompt_ids[i] = (int32_t)id;
    }
    out->n_prompt_ids = n;
    return 0;
}

/* The messages in template t after b's functions' line (tools.c: the
 * plain template writes it as a line of its own, the others as a system
 * message). */
static int chat_prompt(const synor__jdoc *d, const synor__jval *root, const synor__serve_tmpl *t,
                       int form, synor__buf *b)
{
    int turn = 0;
    if (b->len && t->kind != SYNOR__TMPL_PLAIN) {
        synor__buf tl = *b;
        synor__buf_init(b);
        synor__serve_tmpl_message(t, b, "system", tl.data, tl.len, &turn);
        synor__buf_free(&tl);
    } else if (b->len) {
        synor__buf_puts(b, "\n");
    }
    synor__jval *msgs;
    int e = synor__json_member(d, root, "request", "messages", SYNOR__J_ARRAY, 1, &msgs);
    if (e)
        return e;
    if (msgs->u.arr.n == 0)
        return synor__json_fail(d, msgs, SYNOR_ESCHEMA, "messages", "needs at least one message");
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool"};
    for (size_t i = 0; i < msgs->u.arr.n; i++) {
        const synor__jval *m = msgs->u.arr.items[i];
        char path[64];
        snprintf(path, sizeof path, "messages[%zu]", i);
        synor__jval *role;
        e = synor__json_expect(d, m, path, SYNOR__J_OBJECT);
        if (!e)
            e = synor__json_member(d, m, path, "role", SYNOR__J_STRING, 1, &role);
        if (e)
            return e;
        int known = 0;
        for (size_t r = 0; r < SYNOR__ARRAY_LEN(roles); r++)
            known |= !strcmp(role->u.str.s, roles[r]);
        if (!known)
            return synor__json_fail(d, role, SYNOR_ESCHEMA, path,
                                    "role \"%s\" is not one of system, developer, user, "
                                    "assistant, tool",
                                    role->u.str.s);
        const synor__jval *c = opt(m, "content");
        if (!c && strcmp(role->u.str.s, "assistant") != 0)
            return synor__json_fail(d, m, SYNOR_ESCHEMA, path, "missing required field "
                                                               "\"content\"");
        synor__buf content;
        synor__buf_init(&content);
        char cpath[80];
        snprintf(cpath, sizeof cpath, "%s.content", path);
        e = message_content(d, c, cpath, &content);
        if (!e && content.failed)
            e = synor__error(SYNOR_ENOMEM, "out of memory reading the request");
        if (!e && (c || !synor__json_get(m, "tool_calls")))
            synor__serve_tmpl_message(t, b, role->u.str.s, content.data ? content.data : "",
                                      content.len, &turn);
        if (!e && !strcmp(role->u.str.s, "assistant"))
            e = synor__serve_tool_history(d, m, path, form, t, &turn, b);
        synor__buf_free(&content);
        if (e)
            return e;
    }
    synor__serve_tmpl_generation(t, b, &turn);
    return 0;
}

int synor__serve_req_parse(const char *body, size_t len, int chat, synor__serve_req *out)
{
    return synor__serve_req_parse_tmpl(body, len, chat, NULL, out);
}

int synor__serve_req_parse_tmpl(const char *body, size_t len, int chat,
                                const synor__serve_tmpl *t, synor__serve_req *out)
{
    static const synor__serve_tmpl plain = {.kind = SYNOR__TMPL_PLAIN};
    t = t ? t : &plain;
    memset(out, 0, sizeof *out);
    out->chat = chat;
    out->special = chat && t->kind != SYNOR__TMPL_PLAIN;
    out->max_tokens = 16;
    out->n = 1;
    out->temperature = 1;
    out->top_p = 1;
    synor__jdoc *d;
    int e = synor__json_parse(body, len, DOC, &d);
    if (e)
        return e;
    const synor__jval *root = synor__jdoc_root(d);
    synor__buf prompt;
    synor__buf_init(&prompt);
    e = synor__json_expect(d, root, "request", SYNOR__J_OBJECT);
    if (!e)
        e = refuse_unsupported(d, root, chat);
    const synor__jval *v;
    if (!e && (v = opt(root, "model"))) {
        e = synor__json_expect(d, v, "model", SYNOR__J_STRING);
        if (!e && !(out->model = synor__strdup(v->u.str.s)))
            e = SYNOR_ENOMEM;
    }
    if (!e)
        e = synor__serve_tools_read(d, root, chat, out, &prompt);
    if (!e && chat) {
        e = chat_prompt(d, root, t,
                        (out->tool_call == 2 ? TOOL_FORM_TEXT : 0) |
                            (out->tool_list ? TOOL_FORM_LIST : 0),
                        &prompt);
    } else if (!e) {
        v = synor__json_get(root, "prompt");
        if (!v)
            e = synor__json_fail(d, root, SYNOR_ESCHEMA, "request",
                                 "missing required field \"prompt\"");
        else
            e = prompt_field(d, v, out, &prompt);
    }
    int64_t i64;
    const char *mt = chat && opt(root, "max_completion_tokens") ? "max_completion_tokens"
                                                                 : "max_tokens";
    if (!e && (v = opt(root, mt)) && !(e = synor__json_int(d, v, mt, 1, MAX_TOKENS_LIMIT, &i64)))
        out->max_tokens = (long)i64;
    if (!e && (v = opt(root, "temperature")))
        e = synor__json_number(d, v, "temperature", 0, 100, &out->temperature);
    if (!e && (v = opt(root, "top_p")))
        e = synor__json_number(d, v, "top_p", 1e-9, 1, &out->top_p);
    if (!e && (v = opt(root, "top_k")) && !(e = synor__json_int(d, v, "top_k", 0, 1 << 24, &i64)))
        out->top_k = (long)i64;
    if (!e && (v = opt(root, "seed")) && !(e = synor__json_int(d, v, "seed", 0, INT64_MAX, &i64))) {
        out->seed = (uint64_t)i64;
        out->has_seed = 1;
    }
    if (!e && (v = opt(root, "user"))) {
        e = synor__json_expect(d, v, "user", SYNOR__J_STRING);
        if (!e && (v->u.str.len == 0 || v->u.str.len > 256 || strlen(v->u.str.s) != v->u.str.len))
            e = synor__json_fail(d, v, SYNOR_ESCHEMA, "user",
                                 "expected 1 to 256 bytes without NUL, found %zu bytes",
                                 v->u.str.len);
        if (!e && !(out->user = synor__strdup(v->u.str.s)))
            e = synor__error(SYNOR_ENOMEM, "out of memory reading the request");
    }
    if (!e && (v = opt(root, "stream"))) {
        e = synor__json_expect(d, v, "stream", SYNOR__J_BOOL);
        out->stream = !e && v->u.boolean;
    }
    if (!e && (v = opt(root, "stop")))
        e = stop_field(d, v, out);
    if (!e && !chat && (v = opt(root, "logprobs")) &&
        !(e = synor__json_int(d, v, "logprobs", 0, 5, &i64))) {
        out->has_logprobs = 1;
        out->top_logprobs = (int)i64;
    }
    if (!e && chat && (v = opt(root, "logprobs")) &&
        !(e = synor__json_expect(d, v, "logprobs", SYNOR__J_BOOL)))
        out->has_logprobs = v->u.boolean;
    if (!e && chat && (v = opt(root, "top_logprobs")) &&
        !(e = synor__json_int(d, v, "top_logprobs", 0, 20, &i64))) {
        if (!out->has_logprobs)
            e = synor__json_fail(d, v, SYNOR_ESCHEMA, "top_logprobs", "needs \"logprobs\": true");
        out->top_logprobs = (int)i64;
    }
    if (!e && (v = opt(root, "logit_bias")))
        e = bias_field(d, v, out);
    if (!e && (v = opt(root, "response_format")))
        e = format_field(d, v, out);
    if (!e)
        e = guided_fields(d, root, out);
    if (!e && (v = opt(root, "n")) &&
        !(e = synor__json_int(d, v, "n", 1, SYNOR__SERVE_MAX_N, &i64)))
        out->n = (long)i64;
    if (!e && !chat && (v = opt(root, "best_of")) &&
        !(e = synor__json_int(d, v, "best_of", 1, SYNOR__SERVE_MAX_N, &i64))) {
        out->best_of = (long)i64;
        if (out->best_of < out->n)
            e = synor__json_fail(d, v, SYNOR_ESCHEMA, "best_of",
                                 "must be at least n (%ld), found %ld", out->n, out->best_of);
        else if (out->stream && out->best_of > out->n)
            e = synor__json_fail(d, v, SYNOR_ENOTSUP, "best_of",
                                 "not with \"stream\": true (the best are known at the end)");
    }
    if (!e && !chat && (v = opt(root, "echo")) &&
        !(e = synor__json_expect(d, v, "echo", SYNOR__J_BOOL)))
        out->echo = v->u.boolean;
    if (!e && !chat && (v = opt(root, "suffix")) && v->type != SYNOR__J_NULL &&
        !(e = synor__json_expect(d, v, "suffix", SYNOR__J_STRING))) {
        /* fill in the middle: a text prompt, no echo */
        if (out->n_prompt_ids || out->echo)
            e = synor__json_fail(d, v, SYNOR_ENOTSUP, "suffix", "not with %s",
                                 out->echo ? "\"echo\"" : "a prompt of token ids");
        else if (!(out->suffix = synor__strdup(v->u.str.s)))
            e = synor__error(SYNOR_ENOMEM, "out of memory reading the request");
    }
    if (!e && (v = opt(root, "presence_penalty")))
        e = synor__json_number(d, v, "presence_penalty", -2, 2, &out->presence_penalty);
    if (!e && (v = opt(root, "frequency_penalty")))
        e = synor__json_number(d, v, "frequency_penalty", -2, 2, &out->frequency_penalty);
    if (!e && (v = opt(root, "return_token_ids")) &&
        !(e = synor__json_expect(d, v, "return_token_ids", SYNOR__J_BOOL)))
        out->return_ids = v->u.boolean;
    if (!e && out->tool_call && out->n_stop)
        e = synor__json_fail(d, opt(root, "stop"), SYNOR_ENOTSUP, "stop",
                             "not with a tool call (a stop sequence would cut its JSON)");
    if (!e) {
        synor__buf_append(&prompt, "", 0);
        if (prompt.failed || !prompt.data) {
            out->prompt = synor__strdup("");
            e = prompt.failed || !out->prompt ? SYNOR_ENOMEM : 0;
        } else {
            out->prompt = synor__buf_take(&prompt);
        }
        if (e)
            synor__error(e, "out of memory reading the request");
    }
    synor__buf_free(&prompt);
    synor__jdoc_free(d);
    if (e)
        synor__serve_req_free(out);
    return e;
}

int synor__serve_req_extras(const synor__serve_req *r)
{
    return r->n_stop || r->presence_penalty != 0 || r->frequency_penalty != 0 || r->has_logprobs ||
           r->n > 1 || r->best_of > 1 || r->echo || r->n_bias || r->json_object ||
           r->n_prompt_ids || r->return_ids || r->suffix;
}

void synor__serve_req_free(synor__serve_req *r)
{
    synor__free(r->prompt);
    synor__free(r->prompt_ids);
    synor__free(r->suffix);
    r->suffix = NULL;
    r->prompt_ids = NULL;
    r->n_prompt_ids = 0;
    synor__free(r->model);
    synor__free(r->user);
    r->prompt = r->model = r->user = NULL;
    for (int i = 0; i < r->n_stop; i++) {
        synor__free(r->stop[i]);
        r->stop[i] = NULL;
    }
    r->n_stop = 0;
    synor_llm_schema_free(r->schema);
    synor__free(r->schema_text);
    r->schema = NULL;
    r->schema_text = NULL;
    synor__free(r->bias_tok);
    synor__free(r->bias_val);
    r->bias_tok = NULL;
    r->bias_val = NULL;
    r->n_bias = 0;
}
