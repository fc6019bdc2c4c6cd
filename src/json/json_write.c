/* json_write.c - streaming JSON writer into a synor__buf. Output is stable:
 * keys appear in the order written, numbers use %.15g (enough for every
 * profile figure to read back as written). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json/json.h"

void synor__json_escape(synor__buf *b, const char *s)
{
    /* the common case, nothing to escape: one append */
    size_t n = 0;
    while (s[n] && (unsigned char)s[n] >= 0x20 && s[n] != '"' && s[n] != '\\')
        n++;
    if (!s[n]) {
        char small[128];
        if (n + 2 <= sizeof small) {
            small[0] = '"';
            memcpy(small + 1, s, n);
            small[n + 1] = '"';
            synor__buf_append(b, small, n + 2);
        } else {
            synor__buf_append(b, "\"", 1);
            synor__buf_append(b, s, n);
            synor__buf_append(b, "\"", 1);
        }
        return;
    }
    synor__buf_puts(b, "\"");
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        const char *esc = NULL;
        char tmp[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(tmp, sizeof tmp, "\\u%04x", c);
                esc = tmp;
            }
        }
        if (esc) {
            synor__buf_append(b, run, (size_t)(s - run));
            synor__buf_puts(b, esc);
            run = s + 1;
        }
    }
    synor__buf_append(b, run, (size_t)(s - run));
    synor__buf_puts(b, "\"");
}

void synor__jw_init(synor__jw *w, synor__buf *b, int pretty)
{
    memset(w, 0, sizeof *w);
    w->b = b;
    w->pretty = pretty;
    w->first[0] = 1;
}

/* Levels past SYNOR__JSON_MAX_DEPTH have no state: the buffer has failed. */
static int in_range(const synor__jw *w) { return w->depth <= SYNOR__JSON_MAX_DEPTH; }

static void newline(synor__jw *w)
{
    static const char spaces[] = "\n                                                              ";
    if (!w->pretty)
        return;
    size_t n = 1 + 2 * (size_t)w->depth;
    if (n <= sizeof spaces - 1) {
        synor__buf_append(w->b, spaces, n);
        return;
    }
    synor__buf_puts(w->b, "\n");
    for (int i = 0; i < w->depth; i++)
        synor__buf_puts(w->b, "  ");
}

/* Called before every value or key: writes the separator. */
static void before_item(synor__jw *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (!in_range(w))
        return;
    if (w->depth > 0) {
        if (!w->first[w->depth])
            synor__buf_puts(w->b, ",");
        newline(w);
    }
    w->first[w->depth] = 0;
}

static void open(synor__jw *w, const char *c)
{
    before_item(w);
    synor__buf_puts(w->b, c);
    w->depth++;
    if (in_range(w))
        w->first[w->depth] = 1;
    else
        w->b->failed = 1;
}

static void close_(synor__jw *w, const char *c)
{
    int empty = !in_range(w) || w->first[w->depth];
    w->depth--;
    if (!empty)
        newline(w);
    synor__buf_puts(w->b, c);
}

void synor__jw_obj_begin(synor__jw *w) { open(w, "{"); }
void synor__jw_obj_end(synor__jw *w) { close_(w, "}"); }
void synor__jw_arr_begin(synor__jw *w) { open(w, "["); }
void synor__jw_arr_end(synor__jw *w) { close_(w, "]"); }

void synor__jw_key(synor__jw *w, const char *k)
{
    before_item(w);
    synor__json_escape(w->b, k);
    synor__buf_puts(w->b, w->pretty ? ": " : ":");
    w->after_key = 1;
}

void synor__jw_str(synor__jw *w, const char *s)
{
    before_item(w);
    synor__json_escape(w->b, s ? s : "");
}

void synor__jw_num(synor__jw *w, double v)
{
    before_item(w);
    char t[32];
    if (!isfinite(v))
        synor__buf_puts(w->b, "null");
    else
        synor__buf_append(w->b, t, synor__json_num_g15(v, t));
}

void synor__jw_int(synor__jw *w, int64_t v)
{
    char t[32];
    before_item(w);
    synor__buf_append(w->b, t, (size_t)snprintf(t, sizeof t, "%lld", (long long)v));
}

void synor__jw_uint(synor__jw *w, uint64_t v)
{
    char t[32];
    before_item(w);
    synor__buf_append(w->b, t, (size_t)snprintf(t, sizeof t, "%llu", (unsigned long long)v));
}

void synor__jw_bool(synor__jw *w, int v)
{
    before_item(w);
    synor__buf_puts(w->b, v ? "true" : "false");
}

void synor__jw_null(synor__jw *w)
{
    before_item(w);
    synor__buf_puts(w->b, "null");
}

void synor__jw_value(synor__jw *w, const synor__jval *v)
{
    switch (v->type) {
    case SYNOR__J_NULL:
        synor__jw_null(w);
        break;
    case SYNOR__J_BOOL:
        synor__jw_bool(w, v->u.boolean);
        break;
    case SYNOR__J_NUMBER:
        if (v->u.n.is_int)
            synor__jw_int(w, v->u.n.inum);
        else
            synor__jw_num(w, v->u.n.num);
        break;
    case SYNOR__J_STRING:
        synor__jw_str(w, v->u.str.s);
        break;
    case SYNOR__J_ARRAY:
        synor__jw_arr_begin(w);
        for (size_t i = 0; i < v->u.arr.n; i++)
            synor__jw_value(w, v->u.arr.items[i]);
        synor__jw_arr_end(w);
        break;
    case SYNOR__J_OBJECT:
        synor__jw_obj_begin(w);
        for (size_t i = 0; i < v->u.obj.n; i++) {
            synor__jw_key(w, v->u.obj.m[i].key);
            synor__jw_value(w, v->u.obj.m[i].val);
        }
        synor__jw_obj_end(w);
        break;
    }
}
