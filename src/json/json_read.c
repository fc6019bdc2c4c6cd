/* json_read.c - strict JSON reader with value positions (see json.h).
 *
 * Invariants: the arena owns every node and string of a document; a failed
 * parse frees everything it allocated and writes one message of the form
 * "NAME:LINE:COL: what was expected". Nesting is limited to 256 levels so
 * hostile input cannot exhaust the stack. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    max_align_t data[]; /* flexible, aligned storage */
} arena_chunk;

#define CHUNK 65536

struct synor__jdoc {
    arena_chunk *chunks;
    arena_chunk *spare; /* a released chunk of CHUNK bytes, kept for reuse */
    synor__jval *root;
    char *name;
};

static void *arena_alloc(synor__jdoc *d, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    arena_chunk *c = d->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK ? n : CHUNK;
        if (cap == CHUNK && d->spare) {
            c = d->spare;
            d->spare = NULL;
        } else if (!(c = synor__malloc(sizeof *c + cap))) {
            return NULL;
        }
        c->next = d->chunks;
        c->used = 0;
        c->cap = cap;
        d->chunks = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

/* The arena as it is now, to give back everything allocated after it. */
typedef struct arena_mark {
    arena_chunk *chunk;
    size_t used;
} arena_mark;

static arena_mark arena_mark_now(const synor__jdoc *d)
{
    return (arena_mark){d->chunks, d->chunks ? d->chunks->used : 0};
}

static void arena_release(synor__jdoc *d, arena_mark m)
{
    while (d->chunks != m.chunk) {
        arena_chunk *c = d->chunks;
        d->chunks = c->next;
        if (c->cap == CHUNK && !d->spare)
            d->spare = c;
        else
            synor__free(c);
    }
    if (m.chunk)
        m.chunk->used = m.used;
}

void synor__jdoc_free(synor__jdoc *d)
{
    if (!d)
        return;
    arena_chunk *c = d->chunks;
    while (c) {
        arena_chunk *n = c->next;
        synor__free(c);
        c = n;
    }
    synor__free(d->spare);
    synor__free(d->name);
    synor__free(d);
}

synor__jval *synor__jdoc_root(const synor__jdoc *d) { return d->root; }
const char *synor__jdoc_name(const synor__jdoc *d) { return d->name; }

typedef struct parser {
    const char *p, *end, *start;
    const char *line_start;
    int line;
    synor__jdoc *doc;
    const char *name;
    int depth;
    /* synor__json_parse_each: the root member whose array streams, the
     * callback (NULL once it asked to stop) and whether the value being
     * parsed is that array */
    const char *each_key;
    synor__json_each_fn each;
    void *each_ctx;
    int each_next;
    int fast; /* synor__json_fast_number may be used */
} parser;

static int col_of(const parser *ps, const char *at) { return (int)(at - ps->line_start) + 1; }

static int perr(parser *ps, const char *at, int code, const char *fmt, ...) SYNOR__PRINTF(4, 5);
static int perr(parser *ps, const char *at, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return synor__error(code, "%s:%d:%d: %s", ps->name, ps->line, col_of(ps, at), msg);
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == '\n') {
            ps->line++;
            ps->p++;
            ps->line_start = ps->p;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            ps->p++;
        } else {
            break;
        }
    }
}

static const char *describe(const parser *ps)
{
    if (ps->p >= ps->end)
        return "end of input";
    return NULL;
}

static int unexpected(parser *ps, const char *expected)
{
    const char *d = describe(ps);
    if (d)
        return perr(ps, ps->p, SYNOR_EPARSE, "expected %s, found %s", expected, d);
    unsigned char c = (unsigned char)*ps->p;
    if (c >= 0x20 && c < 0x7f)
        return perr(ps, ps->p, SYNOR_EPARSE, "expected %s, found '%c'", expected, c);
    return perr(ps, ps->p, SYNOR_EPARSE, "expected %s, found byte 0x%02x", expected, c);
}

static synor__jval *new_val(parser *ps, synor__jtype t, const char *at)
{
    synor__jval *v = arena_alloc(ps->doc, sizeof *v);
    if (!v)
        return NULL;
    memset(v, 0, sizeof *v);
    v->type = t;
    v->line = ps->line;
    v->col = col_of(ps, at);
    return v;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int read_hex4(parser *ps, const char *at, unsigned *out)
{
    if (ps->end - at < 4)
        return perr(ps, at, SYNOR_EPARSE, "truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(at[i]);
        if (h < 0)
            return perr(ps, at + i, SYNOR_EPARSE, "invalid hex digit in \\u escape");
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return 0;
}

size_t synor__json_put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Length of a valid UTF-8 sequence starting at p, or 0 if invalid. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) {
        n = 2;
        min = 0x80;
        c &= 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3;
        min = 0x800;
        c &= 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4;
        min = 0x10000;
        c &= 0x07;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    return n;
}

/* Parses a string starting at the opening quote; the decoded text goes in the
 * arena. Decoded output is never longer than the source. */
static int parse_string(parser *ps, const char **out, size_t *out_len)
{
    const char *open = ps->p;
    ps->p++; /* opening quote */
    const char *s = ps->p;
    while (s < ps->end && *s != '"') {
        if (*s == '\\')
            s++;
        s++;
    }
    size_t maxlen = (size_t)(s - ps->p);
    char *buf = arena_alloc(ps->doc, maxlen + 1);
    if (!buf)
        return synor__error(SYNOR_ENOMEM, "%s: out of memory", ps->name);
    size_t o = 0;
    for (;;) {
        if (ps->p >= ps->end)
            return perr(ps, open, SYNOR_EPARSE, "unterminated string");
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20) {
            if (c == '\n')
                return perr(ps, open, SYNOR_EPARSE, "unterminated string (newline inside)");
            return perr(ps, ps->p, SYNOR_EPARSE, "control character 0x%02x in string", c);
        }
        if (c == '\\') {
            const char *esc = ps->p;
            ps->p++;
            if (ps->p >= ps->end)
                return perr(ps, open, SYNOR_EPARSE, "unterminated string");
            char e = *ps->p++;
            switch (e) {
            case '"': buf[o++] = '"'; break;
            case '\\': buf[o++] = '\\'; break;
            case '/': buf[o++] = '/'; break;
            case 'b': buf[o++] = '\b'; break;
            case 'f': buf[o++] = '\f'; break;
            case 'n': buf[o++] = '\n'; break;
            case 'r': buf[o++] = '\r'; break;
            case 't': buf[o++] = '\t'; break;
            case 'u': {
                unsigned cp;
                if (read_hex4(ps, ps->p, &cp))
                    return SYNOR_EPARSE;
                ps->p += 4;
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    unsigned lo;
                    if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u')
                        return perr(ps, esc, SYNOR_EPARSE, "unpaired surrogate in \\u escape");
                    if (read_hex4(ps, ps->p + 2, &lo))
                        return SYNOR_EPARSE;
                    if (lo < 0xdc00 || lo > 0xdfff)
                        return perr(ps, esc, SYNOR_EPARSE, "unpaired surrogate in \\u escape");
                    ps->p += 6;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    return perr(ps, esc, SYNOR_EPARSE, "unpaired surrogate in \\u escape");
                }
                if (cp == 0)
                    return perr(ps, esc, SYNOR_EPARSE, "\\u0000 is not allowed in strings");
                o += synor__json_put_utf8(buf + o, cp);
                break;
            }
            default:
                return perr(ps, esc, SYNOR_EPARSE, "invalid escape '\\%c'", e);
            }
            continue;
        }
        size_t n = utf8_len((const unsigned char *)ps->p, (const unsigned char *)ps->end);
        if (n == 0)
            return perr(ps, ps->p, SYNOR_EPARSE, "invalid UTF-8 in string");
        memcpy(buf + o, ps->p, n);
        o += n;
        ps->p += n;
    }
    buf[o] = '\0';
    *out = buf;
    *out_len = o;
    return 0;
}

static int parse_number(parser *ps, synor__jval *v)
{
    const char *s = ps->p;
    const char *q = s;
    int integral = 1, neg = 0, sig = 0, e10 = 0;
    uint64_t dig = 0;
    if (q < ps->end && *q == '-') {
        neg = 1;
        q++;
    }
    if (q >= ps->end || *q < '0' || *q > '9')
        return perr(ps, s, SYNOR_EPARSE, "invalid number");
    if (*q == '0') {
        q++;
        if (q < ps->end && *q >= '0' && *q <= '9')
            return perr(ps, s, SYNOR_EPARSE, "invalid number (leading zero)");
    } else {
        while (q < ps->end && *q >= '0' && *q <= '9') {
            if (sig < 19)
                dig = dig * 10 + (uint64_t)(*q - '0');
            else
                e10++; /* beyond 19 digits: strtod decides */
            sig++;
            q++;
        }
    }
    if (q < ps->end && *q == '.') {
        integral = 0;
        q++;
        if (q >= ps->end || *q < '0' || *q > '9')
            return perr(ps, s, SYNOR_EPARSE, "invalid number (digit expected after '.')");
        while (q < ps->end && *q >= '0' && *q <= '9') {
            if (sig || *q != '0')
                sig++;
            if (sig <= 19) {
                dig = dig * 10 + (uint64_t)(*q - '0');
                e10--;
            }
            q++;
        }
    }
    int fast = sig <= 19;
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        integral = 0;
        q++;
        int eneg = 0, ex = 0;
        if (q < ps->end && (*q == '+' || *q == '-'))
            eneg = *q++ == '-';
        if (q >= ps->end || *q < '0' || *q > '9')
            return perr(ps, s, SYNOR_EPARSE, "invalid number (digit expected in exponent)");
        while (q < ps->end && *q >= '0' && *q <= '9') {
            if (ex < 10000)
                ex = ex * 10 + (*q - '0');
            q++;
        }
        e10 += eneg ? -ex : ex;
    }
    size_t n = (size_t)(q - s);
    if (n >= 64)
        return perr(ps, s, SYNOR_EPARSE, "number too long");
    if (fast && integral && sig <= 18) { /* an int64: exact, and its double as strtod rounds it */
        int64_t x = neg ? -(int64_t)dig : (int64_t)dig;
        v->u.n.num = neg && dig == 0 ? -0.0 : (double)x;
        v->u.n.is_int = 1;
        v->u.n.inum = x;
        ps->p = q;
        return 0;
    }
    if (fast && !integral && ps->fast && synor__json_fast_number(dig, e10, neg, &v->u.n.num) == 0) {
        ps->p = q;
        return 0;
    }
    char tmp[64];
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    v->u.n.num = strtod(tmp, NULL);
    if (!isfinite(v->u.n.num))
        return perr(ps, s, SYNOR_ERANGE, "number out of range: %s", tmp);
    if (integral) {
        errno = 0;
        long long ll = strtoll(tmp, NULL, 10);
        if (errno == 0) {
            v->u.n.is_int = 1;
            v->u.n.inum = ll;
        }
    }
    ps->p = q;
    return 0;
}

static int parse_value(parser *ps, synor__jval **out);

static int parse_array(parser *ps, synor__jval *v)
{
    ps->p++; /* [ */
    synor__jval *small[16];
    synor__jval **items = small;
    size_t n = 0, cap = 16;
    int rc = 0;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        goto done;
    }
    for (;;) {
        synor__jval *item;
        if ((rc = parse_value(ps, &item)))
            goto out;
        if (n == cap) {
            synor__jval **ni = synor__malloc(2 * cap * sizeof *ni);
            if (!ni) {
                rc = synor__error(SYNOR_ENOMEM, "%s: out of memory", ps->name);
                goto out;
            }
            memcpy(ni, items, n * sizeof *ni);
            if (items != small)
                synor__free(items);
            items = ni;
            cap *= 2;
        }
        items[n++] = item;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ']') {
                rc = perr(ps, ps->p, SYNOR_EPARSE, "trailing comma before ']'");
                goto out;
            }
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            break;
        }
        rc = unexpected(ps, "',' or ']' in array");
        goto out;
    }
done:
    v->u.arr.n = n;
    if (n) {
        v->u.arr.items = arena_alloc(ps->doc, n * sizeof *items);
        if (!v->u.arr.items) {
            rc = synor__error(SYNOR_ENOMEM, "%s: out of memory", ps->name);
            goto out;
        }
        memcpy(v->u.arr.items, items, n * sizeof *items);
    }
out:
    if (items != small)
        synor__free(items);
    return rc;
}

/* The streamed array: each element is parsed into memory given back once
 * the callback has seen it; the node keeps only the count. */
static int parse_array_each(parser *ps, synor__jval *v)
{
    ps->p++; /* [ */
    size_t n = 0;
    int rc;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        goto done;
    }
    for (;;) {
        arena_mark m = arena_mark_now(ps->doc);
        synor__jval *item;
        if ((rc = parse_value(ps, &item)))
            return rc;
        if (ps->each && ps->each(ps->each_ctx, ps->doc, n, item))
            ps->each = NULL;
        arena_release(ps->doc, m);
        n++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ']')
                return perr(ps, ps->p, SYNOR_EPARSE, "trailing comma before ']'");
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            break;
        }
        return unexpected(ps, "',' or ']' in array");
    }
done:
    v->u.arr.n = n;
    v->u.arr.items = NULL;
    return 0;
}

static int parse_object(parser *ps, synor__jval *v)
{
    ps->p++; /* { */
    synor__jmember small[16];
    synor__jmember *m = small;
    size_t n = 0, cap = 16;
    int rc = 0;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        goto done;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            rc = unexpected(ps, "a string key in object");
            goto out;
        }
        synor__jmember mem;
        mem.line = ps->line;
        mem.col = col_of(ps, ps->p);
        size_t klen;
        if ((rc = parse_string(ps, &mem.key, &klen)))
            goto out;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(m[i].key, mem.key) == 0) {
                rc = synor__error(SYNOR_EPARSE, "%s:%d:%d: duplicate key \"%s\" (first at %d:%d)",
                                  ps->name, mem.line, mem.col, mem.key, m[i].line, m[i].col);
                goto out;
            }
        }
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            rc = unexpected(ps, "':' after object key");
            goto out;
        }
        ps->p++;
        ps->each_next = ps->each_key && ps->depth == 1 && strcmp(mem.key, ps->each_key) == 0;
        if ((rc = parse_value(ps, &mem.val)))
            goto out;
        if (n == cap) {
            synor__jmember *nm = synor__malloc(2 * cap * sizeof *nm);
            if (!nm) {
                rc = synor__error(SYNOR_ENOMEM, "%s: out of memory", ps->name);
                goto out;
            }
            memcpy(nm, m, n * sizeof *nm);
            if (m != small)
                synor__free(m);
            m = nm;
            cap *= 2;
        }
        m[n++] = mem;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == '}') {
                rc = perr(ps, ps->p, SYNOR_EPARSE, "trailing comma before '}'");
                goto out;
            }
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            break;
        }
        rc = unexpected(ps, "',' or '}' in object");
        goto out;
    }
done:
    v->u.obj.n = n;
    if (n) {
        v->u.obj.m = arena_alloc(ps->doc, n * sizeof *m);
        if (!v->u.obj.m) {
            rc = synor__error(SYNOR_ENOMEM, "%s: out of memory", ps->name);
            goto out;
        }
        memcpy(v->u.obj.m, m, n * sizeof *m);
    }
out:
    if (m != small)
        synor__free(m);
    return rc;
}

static int match_word(parser *ps, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, w, n) == 0) {
        ps->p += n;
        return 1;
    }
    return 0;
}

static int parse_value(parser *ps, synor__jval **out)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return unexpected(ps, "a value");
    const char *at = ps->p;
    char c = *at;
    synor__jval *v;
    int rc = 0, each = ps->each_next;
    ps->each_next = 0;
    switch (c) {
    case '{':
    case '[':
        if (++ps->depth > SYNOR__JSON_MAX_DEPTH)
            return perr(ps, at, SYNOR_EPARSE, "nesting deeper than %d levels", SYNOR__JSON_MAX_DEPTH);
        v = new_val(ps, c == '{' ? SYNOR__J_OBJECT : SYNOR__J_ARRAY, at);
        if (!v)
            return synor__error(SYNOR_ENOMEM, "%s: out of memory", ps->name);
        rc = c == '{' ? parse_object(ps, v) : each ? parse_array_each(ps, v) : parse_array(ps, v);
        ps->depth--;
        break;
    case '"':
        v = new_val(ps, SYNOR__J_STRING, at);
        if (!v)
            return synor__error(SYNOR_ENOMEM, "%s: out of memory", ps->name);
        rc = parse_string(ps, &v->u.str.s, &v->u.str.len);
        break;
    case 't':
    case 'f':
    case 'n':
        v = new_val(ps, c == 'n' ? SYNOR__J_NULL : SYNOR__J_BOOL, at);
        if (!v)
            return synor__error(SYNOR_ENOMEM, "%s: out of memory", ps->name);
        if (match_word(ps, "true"))
            v->u.boolean = 1;
        else if (match_word(ps, "false"))
            v->u.boolean = 0;
        else if (!match_word(ps, "null"))
            return unexpected(ps, "a value");
        break;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) {
            v = new_val(ps, SYNOR__J_NUMBER, at);
            if (!v)
                return synor__error(SYNOR_ENOMEM, "%s: out of memory", ps->name);
            rc = parse_number(ps, v);
            break;
        }
        return unexpected(ps, "a value");
    }
    if (rc)
        return rc;
    *out = v;
    return 0;
}

int synor__json_parse(const char *text, size_t len, const char *name, synor__jdoc **out)
{
    return synor__json_parse_at(text, len, name, 1, out);
}

static int parse_doc(parser *ps, const char *text, size_t len, const char *name, int first_line,
                     synor__jdoc **out);

int synor__json_parse_at(const char *text, size_t len, const char *name, int first_line,
                         synor__jdoc **out)
{
    parser ps = {0};
    return parse_doc(&ps, text, len, name, first_line, out);
}

int synor__json_parse_each(const char *text, size_t len, const char *name, const char *key,
                           synor__json_each_fn fn, void *ctx, synor__jdoc **out)
{
    parser ps = {.each_key = key, .each = fn, .each_ctx = ctx};
    return parse_doc(&ps, text, len, name, 1, out);
}

static int parse_doc(parser *ps, const char *text, size_t len, const char *name, int first_line,
                     synor__jdoc **out)
{
    synor__jdoc *d = synor__calloc(1, sizeof *d);
    if (!d)
        return synor__error(SYNOR_ENOMEM, "%s: out of memory", name);
    d->name = synor__strdup(name);
    if (!d->name) {
        synor__free(d);
        return synor__error(SYNOR_ENOMEM, "%s: out of memory", name);
    }
    ps->p = text;
    ps->end = text + len;
    ps->start = text;
    ps->line_start = text;
    ps->line = first_line;
    ps->doc = d;
    ps->name = name;
    ps->fast = synor__json_fast_numbers_ok();
    /* A UTF-8 byte order mark is tolerated at the very start. */
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
        ps->p += 3;
        ps->line_start = ps->p;
    }
    int rc = parse_value(ps, &d->root);
    if (!rc) {
        skip_ws(ps);
        if (ps->p < ps->end)
            rc = unexpected(ps, "end of input after the top-level value");
    }
    if (rc) {
        synor__jdoc_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

synor__jval *synor__json_get(const synor__jval *obj, const char *key)
{
    if (!obj || obj->type != SYNOR__J_OBJECT)
        return NULL;
    for (size_t i = 0; i < obj->u.obj.n; i++) /* the first byte rules most out */
        if (obj->u.obj.m[i].key[0] == key[0] && strcmp(obj->u.obj.m[i].key, key) == 0)
            return obj->u.obj.m[i].val;
    return NULL;
}

const char *synor__jtype_name(synor__jtype t)
{
    static const char *const names[] = {"null", "boolean", "number", "string", "array", "object"};
    return (unsigned)t < SYNOR__ARRAY_LEN(names) ? names[t] : "?";
}
