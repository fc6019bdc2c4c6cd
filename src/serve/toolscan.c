/* toolscan.c - a tool-call answer read as its bytes come (toolscan.h). */
#include <string.h>

#include "json/json.h"
#include "serve/toolscan.h"

/* What the scanner is handing out: a run of one kind, flushed when the
 * kind changes, the buffer fills, a call's name is reported, or the
 * bytes fed are done. */
typedef struct run {
    char b[256];
    size_t n;
    int kind; /* 1 arguments, 2 text */
    int k;    /* the call whose arguments */
} run;

static void flush(run *r, const tool_scan_cb *cb)
{
    if (r->n && r->kind == 1 && cb->on_args)
        cb->on_args(cb->user, r->k, r->b, r->n);
    else if (r->n && r->kind == 2 && cb->on_text)
        cb->on_text(cb->user, r->b, r->n);
    r->n = 0;
}

static void put(run *r, const tool_scan_cb *cb, int kind, int k, const char *p, size_t n)
{
    if (r->kind != kind || r->k != k || r->n + n > sizeof r->b)
        flush(r, cb);
    r->kind = kind;
    r->k = k;
    memcpy(r->b + r->n, p, n);
    r->n += n;
}

/* Code point cp as UTF-8 (U+FFFD for a lone surrogate) into out; its length. */
static size_t utf8(unsigned cp, char *out)
{
    return synor__json_put_utf8(out, cp >= 0xD800 && cp <= 0xDFFF ? 0xFFFD : cp);
}

void synor__tool_scan_init(tool_scan *t, int form)
{
    memset(t, 0, sizeof *t);
    t->form = form;
}

static int key_is(const tool_scan *t, int level, const char *k)
{
    return level >= 1 && t->kind[level] == 'o' && !strcmp(t->key[level], k);
}

/* A value begins inside the container at t->depth (0: the answer
 * itself) with byte c: what it is to the answer. */
static void value_starts(tool_scan *t, char c)
{
    int p = t->depth, list = t->form & TOOL_FORM_LIST, text = t->form & TOOL_FORM_TEXT;
    if (c == '{') {
        int call = (p == 0 && !list && !text) || (p == 1 && !list && key_is(t, 1, "tool_call")) ||
                   (p == 2 && list && t->kind[2] == 'a' && key_is(t, 1, "tool_calls"));
        if (call) {
            t->call_level = p + 1;
            t->named = 0;
            t->nlen = 0;
        } else if (t->call_level && t->named && p == t->call_level &&
                   key_is(t, p, "arguments")) {
            t->args_level = p + 1;
        }
    } else if (c == '"') {
        t->in_name = t->call_level && !t->named && p == t->call_level && key_is(t, p, "name");
        t->in_text = p == 1 && text && key_is(t, 1, "response");
        t->texts += t->in_text;
        t->nlen = t->in_name ? 0 : t->nlen;
    }
}

/* One byte of the response's string (not its closing quote): decoded. A
 * high surrogate's \u waits for its low half's; one without it is
 * U+FFFD, as a low half alone is. */
static void text_byte(tool_scan *t, run *r, const tool_scan_cb *cb, char c)
{
    char o[8];
    size_t n = 0;
    unsigned cp;
    int raw = 0;
    if (t->uhex > 0) { /* a \u escape's hex digits */
        unsigned v = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 0;
        t->u = t->u * 16 + v;
        if (++t->uhex <= 4)
            return;
        t->uhex = 0;
        cp = t->u;
        if (cp >= 0xDC00 && cp <= 0xDFFF && t->hi) {
            cp = 0x10000 + ((t->hi - 0xD800) << 10) + (cp - 0xDC00);
            t->hi = 0;
        }
    } else if (t->esc) {
        t->esc = 0;
        if (c == 'u') {
            t->uhex = 1;
            t->u = 0;
            return;
        }
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *f = c ? strchr(from, c) : NULL;
        cp = (unsigned char)(f ? to[f - from] : c);
    } else if (c == '\\') {
        t->esc = 1;
        return;
    } else {
        raw = 1; /* (UTF-8 bytes pass one by one) */
        cp = (unsigned char)c;
    }
    if (t->hi) { /* a high half without its low half */
        n += utf8(0xFFFD, o);
        t->hi = 0;
    }
    if (raw)
        o[n++] = c;
    else if (cp >= 0xD800 && cp <= 0xDBFF)
        t->hi = cp;
    else
        n += utf8(cp, o + n);
    if (n)
        put(r, cb, 2, 0, o, n);
}

void synor__tool_scan_feed(tool_scan *t, const char *p, size_t n, const tool_scan_cb *cb)
{
    run r = {.n = 0, .kind = 0, .k = 0};
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        int args = t->args_level && t->depth >= t->args_level;
        if (t->in_str) {
            if (args)
                put(&r, cb, 1, t->calls - 1, &c, 1);
            if (t->in_text && (t->esc || t->uhex || c != '"')) {
                text_byte(t, &r, cb, c);
                continue;
            }
            if (t->esc) {
                t->esc = 0;
            } else if (c == '\\') {
                t->esc = 1;
            } else if (c == '"') {
                t->in_str = 0;
                if (t->str_key) {
                    memcpy(t->key[t->depth], t->cur, (size_t)t->clen);
                    t->key[t->depth][t->clen] = 0;
                    t->str_key = 0;
                } else if (t->in_name) {
                    flush(&r, cb);
                    t->name[t->nlen] = 0;
                    t->named = 1;
                    if (cb->on_call)
                        cb->on_call(cb->user, t->calls, t->name, (size_t)t->nlen);
                    t->calls++;
                }
                t->in_name = t->in_text = 0;
                continue;
            }
            if (t->str_key && t->clen < 11)
                t->cur[t->clen++] = c;
            if (t->in_name && t->nlen < 64)
                t->name[t->nlen++] = c;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        int key = c == '"' && t->depth && t->kind[t->depth] == 'o' && t->want_key[t->depth];
        if (!key && c != '}' && c != ']' && c != ':' && c != ',')
            value_starts(t, c);
        args = t->args_level && (t->depth >= t->args_level || c == '{');
        if (args)
            put(&r, cb, 1, t->calls - 1, &c, 1);
        switch (c) {
        case '"':
            t->in_str = 1;
            t->str_key = key;
            t->clen = 0;
            break;
        case '{':
        case '[':
            if (t->depth + 1 < TOOL_SCAN_DEPTH) {
                t->depth++;
                t->kind[t->depth] = c == '{' ? 'o' : 'a';
                t->want_key[t->depth] = c == '{';
                t->key[t->depth][0] = 0;
            }
            break;
        case '}':
        case ']':
            if (t->depth == t->args_level)
                t->args_level = 0;
            if (t->depth == t->call_level)
                t->call_level = 0;
            t->depth -= t->depth > 0;
            break;
        case ':':
            t->want_key[t->depth] = 0;
            break;
        case ',':
            t->want_key[t->depth] = t->kind[t->depth] == 'o';
            break;
        default:
            break;
        }
    }
    flush(&r, cb);
}
