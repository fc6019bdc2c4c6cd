/* tools.c - OpenAI's function calling in synor serve's chat requests.
 *
 * "tools" (the functions a client offers), "tool_choice" and
 * "parallel_tool_calls" are read; the functions are written into the prompt
 * as one line before the messages (the plain template has no tool syntax
 * of its own); a call the choice asks for is constrained decoding to
 * {"name": ..., "arguments": ...} (synor__llm_schema_tools: the name picks
 * the arguments' schema, the function's "parameters"), answered as
 * "tool_calls" with finish_reason "tool_calls". With "auto" (the default)
 * the model picks a call or a text, in llama.cpp's generic tool format for
 * models without a tool-call template: {"tool_call": a call} or
 * {"response": the text}, exactly one, answered as tool_calls or as
 * content. Earlier calls in the conversation (an assistant message's
 * tool_calls) are written as the model would have written them. */
#include <stdio.h>
#include <string.h>

#include "json/json.h"
#include "llm/schema.h"
#include "serve/serve_api.h"
#include "serve/toolscan.h"

#define MAX_TOOLS 64

/* A function's name: 1-64 of A-Z a-z 0-9 _ - (OpenAI's rule). */
static int name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* tools[i].function, checked: its name, and its parameters (or NULL). */
static int function_of(const synor__jdoc *d, const synor__jval *t, size_t i,
                       const synor__jval **fn, const synor__jval **name,
                       const synor__jval **params)
{
    char path[48];
    snprintf(path, sizeof path, "tools[%zu]", i);
    synor__jval *type, *f, *nm, *pa, *x;
    int e = synor__json_expect(d, t, path, SYNOR__J_OBJECT);
    if (!e)
        e = synor__json_member(d, t, path, "type", SYNOR__J_STRING, 1, &type);
    if (!e && strcmp(type->u.str.s, "function"))
        return synor__json_fail(d, type, SYNOR_ENOTSUP, path,
                                "type \"%.40s\" is not supported (\"function\")", type->u.str.s);
    if (!e)
        e = synor__json_member(d, t, path, "function", SYNOR__J_OBJECT, 1, &f);
    snprintf(path, sizeof path, "tools[%zu].function", i);
    if (!e)
        e = synor__json_member(d, f, path, "name", SYNOR__J_STRING, 1, &nm);
    if (!e && !name_ok(nm->u.str.s, nm->u.str.len))
        return synor__json_fail(d, nm, SYNOR_ESCHEMA, path,
                                "name \"%.80s\": 1 to 64 letters, digits, '_' or '-'",
                                nm->u.str.s);
    if (!e)
        e = synor__json_member(d, f, path, "description", SYNOR__J_STRING, 0, &x);
    if (!e)
        e = synor__json_member(d, f, path, "strict", SYNOR__J_BOOL, 0, &x);
    if (!e)
        e = synor__json_member(d, f, path, "parameters", SYNOR__J_OBJECT, 0, &pa);
    if (e)
        return e;
    *fn = f;
    *name = nm;
    *params = pa;
    return 0;
}

int synor__serve_tools_read(const synor__jdoc *d, const synor__jval *root, int chat,
                            synor__serve_req *out, synor__buf *prompt)
{
    const synor__jval *tools = synor__json_get(root, "tools");
    const synor__jval *choice = synor__json_get(root, "tool_choice");
    const synor__jval *par = synor__json_get(root, "parallel_tool_calls");
    tools = tools && tools->type != SYNOR__J_NULL ? tools : NULL;
    choice = choice && choice->type != SYNOR__J_NULL ? choice : NULL;
    if (!chat) {
        if (tools && !(tools->type == SYNOR__J_ARRAY && tools->u.arr.n == 0))
            return synor__json_fail(d, tools, SYNOR_ENOTSUP, "tools",
                                    "not supported in a completion (a chat request's field)");
        return 0;
    }
    if (par && par->type != SYNOR__J_NULL && par->type != SYNOR__J_BOOL)
        return synor__json_expect(d, par, "parallel_tool_calls", SYNOR__J_BOOL);
    if (tools && (tools->type != SYNOR__J_ARRAY || tools->u.arr.n > MAX_TOOLS))
        return synor__json_fail(d, tools, SYNOR_ESCHEMA, "tools",
                                "expected an array of at most 64 functions");
    size_t n = tools ? tools->u.arr.n : 0;
    if (choice && !n)
        return synor__json_fail(d, choice, SYNOR_ESCHEMA, "tool_choice", "needs \"tools\"");
    if (!n)
        return 0;
    const synor__jval *params[MAX_TOOLS], *names[MAX_TOOLS], *fns[MAX_TOOLS];
    for (size_t i = 0; i < n; i++) {
        int e = function_of(d, tools->u.arr.items[i], i, &fns[i], &names[i], &params[i]);
        if (e)
            return e;
        for (size_t k = 0; k < i; k++)
            if (!strcmp(names[k]->u.str.s, names[i]->u.str.s))
                return synor__json_fail(d, names[i], SYNOR_ESCHEMA, "tools",
                                        "two functions named \"%s\"", names[i]->u.str.s);
    }
    /* which calls: all functions ("required"; "auto", the default: or a
     * text), one (named), none */
    size_t pick = n; /* n: all */
    int autop = !choice || (choice->type == SYNOR__J_STRING && !strcmp(choice->u.str.s, "auto"));
    if (autop) { /* every function, or a text */
        pick = n;
    } else if (choice->type == SYNOR__J_STRING && !strcmp(choice->u.str.s, "none")) {
        pick = SIZE_MAX;
    } else if (choice->type == SYNOR__J_STRING && strcmp(choice->u.str.s, "required")) {
        return synor__json_fail(d, choice, SYNOR_ESCHEMA, "tool_choice",
                                "\"%.40s\" is not one of none, auto, required or a function",
                                choice->u.str.s);
    } else if (choice->type == SYNOR__J_OBJECT) {
        synor__jval *f, *nm;
        int e = synor__json_member(d, choice, "tool_choice", "function", SYNOR__J_OBJECT, 1, &f);
        if (!e)
            e = synor__json_member(d, f, "tool_choice.function", "name", SYNOR__J_STRING, 1, &nm);
        if (e)
            return e;
        for (pick = 0; pick < n && strcmp(names[pick]->u.str.s, nm->u.str.s); pick++)
            ;
        if (pick == n)
            return synor__json_fail(d, nm, SYNOR_ESCHEMA, "tool_choice.function.name",
                                    "\"%.80s\" is not one of the tools", nm->u.str.s);
    } else if (choice->type != SYNOR__J_STRING) {
        return synor__json_expect(d, choice, "tool_choice", SYNOR__J_STRING);
    }
    /* the functions, in the prompt: one line before the messages */
    synor__jw w;
    synor__jw_init(&w, prompt, 0);
    synor__buf_puts(prompt, "tools: ");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < n; i++)
        synor__jw_value(&w, fns[i]);
    synor__jw_arr_end(&w);
    if (pick == SIZE_MAX)
        return 0;
    const synor__jval *ps[MAX_TOOLS];
    const char *ns[MAX_TOOLS], *paths[MAX_TOOLS];
    char pathbuf[MAX_TOOLS][48];
    int k = 0;
    for (size_t i = 0; i < n; i++)
        if (pick == n || pick == i) {
            snprintf(pathbuf[k], sizeof pathbuf[k], "tools[%zu].function.parameters", i);
            ps[k] = params[i];
            ns[k] = names[i]->u.str.s;
            paths[k] = pathbuf[k];
            k++;
        }
    /* several calls where the client allows them (parallel_tool_calls:
     * true; llama.cpp's default false) and more than one function may be
     * called */
    int list = par && par->type == SYNOR__J_BOOL && par->u.boolean && pick == n;
    int flags = (autop ? SCHEMA_CALLS_TEXT : 0) | (list ? SCHEMA_CALLS_LIST : 0);
    int e = synor__llm_schema_tools(d, ps, ns, paths, k, flags, &out->schema);
    if (e)
        return e;
    /* the exact-match cache's key: the functions that may be called */
    synor__buf b;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, 0);
    synor__buf_puts(&b, autop ? (list ? "tools-auto-list:" : "tools-auto:")
                              : (list ? "tools-list:" : "tools:"));
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < n; i++)
        if (pick == n || pick == i)
            synor__jw_value(&w, fns[i]);
    synor__jw_arr_end(&w);
    if (!(out->schema_text = synor__buf_take(&b)))
        return synor__error(SYNOR_ENOMEM, "out of memory reading the request");
    out->json_object = 1;
    out->tool_call = autop ? 2 : 1;
    out->tool_list = list;
    return 0;
}

int synor__serve_tool_history(const synor__jdoc *d, const synor__jval *m, const char *path,
                              int form, const synor__serve_tmpl *t, int *turn, synor__buf *b)
{
    const synor__jval *calls = synor__json_get(m, "tool_calls");
    if (!calls || calls->type == SYNOR__J_NULL)
        return 0;
    char p[96];
    snprintf(p, sizeof p, "%s.tool_calls", path);
    int e = synor__json_expect(d, calls, p, SYNOR__J_ARRAY);
    /* as the model writes calls in this request's form: a list of them in
     * one message, or each in a message ("auto": inside "tool_call"); the
     * arguments' text as it was sent */
    int list = form & TOOL_FORM_LIST, wrap = !list && (form & TOOL_FORM_TEXT);
    synor__buf cb;
    synor__buf_init(&cb);
    synor__buf_puts(&cb, list ? "{\"tool_calls\":[" : "");
    for (size_t i = 0; !e && i < calls->u.arr.n; i++) {
        const synor__jval *c = calls->u.arr.items[i];
        synor__jval *f, *nm, *args;
        snprintf(p, sizeof p, "%s.tool_calls[%zu]", path, i);
        e = synor__json_expect(d, c, p, SYNOR__J_OBJECT);
        if (!e)
            e = synor__json_member(d, c, p, "function", SYNOR__J_OBJECT, 1, &f);
        snprintf(p, sizeof p, "%s.tool_calls[%zu].function", path, i);
        if (!e)
            e = synor__json_member(d, f, p, "name", SYNOR__J_STRING, 1, &nm);
        if (!e)
            e = synor__json_member(d, f, p, "arguments", SYNOR__J_STRING, 1, &args);
        if (e)
            break;
        synor__buf_puts(&cb, list && i ? "," : wrap ? "{\"tool_call\":" : "");
        synor__buf_puts(&cb, "{\"name\":");
        synor__json_escape(&cb, nm->u.str.s);
        synor__buf_puts(&cb, ",\"arguments\":");
        synor__buf_append(&cb, args->u.str.s, args->u.str.len);
        synor__buf_puts(&cb, wrap ? "}}" : "}");
        if (!list && !cb.failed) {
            synor__serve_tmpl_message(t, b, "assistant", cb.data, cb.len, turn);
            cb.len = 0;
        }
    }
    synor__buf_puts(&cb, list ? "]}" : "");
    if (!e && cb.failed)
        e = synor__error(SYNOR_ENOMEM, "out of memory reading the request");
    if (!e && list && calls->u.arr.n)
        synor__serve_tmpl_message(t, b, "assistant", cb.data, cb.len, turn);
    synor__buf_free(&cb);
    return e;
}

/* The answer's calls and text as the scanner reports them. */
typedef struct answer_parts {
    synor__buf names, text;
    synor__buf *args; /* per call */
    size_t *name_end; /* per call: its name's end in names */
    int n, cap, failed;
} answer_parts;

static void part_call(void *u, int k, const char *name, size_t n)
{
    answer_parts *a = u;
    if (k != a->n || a->failed) /* (the scanner numbers its calls 0, 1, ...) */
        return;
    if (k >= a->cap) {
        int cap = a->cap ? 2 * a->cap : 4;
        synor__buf *args = synor__realloc(a->args, (size_t)cap * sizeof *args);
        a->args = args ? args : a->args;
        size_t *ends = args ? synor__realloc(a->name_end, (size_t)cap * sizeof *ends) : NULL;
        a->name_end = ends ? ends : a->name_end;
        if (!ends) {
            a->failed = 1;
            return;
        }
        a->cap = cap;
    }
    synor__buf_append(&a->names, name, n);
    a->name_end[k] = a->names.len;
    synor__buf_init(&a->args[k]);
    a->n = k + 1;
}

static void part_args(void *u, int k, const char *p, size_t n)
{
    answer_parts *a = u;
    if (k < a->n)
        synor__buf_append(&a->args[k], p, n);
}

static void part_text(void *u, const char *p, size_t n)
{
    synor__buf_append(&((answer_parts *)u)->text, p, n);
}

void synor__serve_tool_id(char *out, size_t size, const char *request, int choice, int form,
                          int k)
{
    if (form & TOOL_FORM_LIST)
        snprintf(out, size, "call_%s_%d_%d", request, choice, k);
    else
        snprintf(out, size, "call_%s_%d", request, choice);
}

int synor__serve_tool_answer(synor__buf *b, const char *text, size_t len, const char *request,
                             int choice, int form)
{
    answer_parts a;
    memset(&a, 0, sizeof a);
    synor__buf_init(&a.names);
    synor__buf_init(&a.text);
    tool_scan t;
    tool_scan_cb cb = {part_call, part_args, part_text, &a};
    synor__tool_scan_init(&t, form);
    synor__tool_scan_feed(&t, text, len, &cb);
    int r = a.n ? 1 : t.texts ? 2 : 0;
    if (r == 1) {
        synor__buf_puts(b, "\"tool_calls\":[");
        for (int k = 0; k < a.n; k++) {
            char id[96];
            size_t n0 = k ? a.name_end[k - 1] : 0;
            synor__serve_tool_id(id, sizeof id, request, choice, form, k);
            synor__buf_printf(b, "%s{\"id\":\"%s\",\"type\":\"function\",\"function\":"
                                 "{\"name\":",
                              k ? "," : "", id);
            synor__serve_json_text(b, a.names.data + n0, a.name_end[k] - n0);
            synor__buf_puts(b, ",\"arguments\":");
            synor__serve_json_text(b, a.args[k].data ? a.args[k].data : "", a.args[k].len);
            synor__buf_puts(b, "}}");
            a.failed |= a.args[k].failed;
        }
        synor__buf_puts(b, "]");
    } else if (r == 2) {
        synor__serve_json_text(b, a.text.data ? a.text.data : "", a.text.len);
    }
    a.failed |= a.names.failed || a.text.failed;
    for (int k = 0; k < a.n; k++)
        synor__buf_free(&a.args[k]);
    synor__free(a.args);
    synor__free(a.name_end);
    synor__buf_free(&a.names);
    synor__buf_free(&a.text);
    return a.failed ? -1 : r;
}
