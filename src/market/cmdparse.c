/* cmdparse.c - a JSON-lines command, text to fields.
 *
 * Two paths, one result. The fast one reads a valid line of the common
 * form in one pass without allocating: an object of known keys, each once,
 * strings of printable ASCII without escapes, integers, true/false, arrays
 * of strings, spaces and tabs between tokens. At the first thing it does
 * not handle it gives up and the line goes to the project's strict JSON
 * reader (src/json), which accepts every valid JSON line and words every
 * error with the file, line, column and field. So the fast path never
 * decides that a line is wrong - errors always come from the reader - and
 * what it accepts it reads exactly as the reader would (a test feeds both
 * mutated lines and compares). */
#include <string.h>

#include "json/json.h"
#include "market/cmdline.h"

const char *const synor__cmd_field_names[NF + 1] = {
    "cmd",    "id",    "ref",   "owner",   "resource", "side",     "type",
    "tif",    "price", "qty",   "time",    "expires",  "duration", "interruptible",
    "priority", "min_reputation", "reputation", "zone", "zones", "also", NULL};
const unsigned char synor__cmd_field_types[NF] = {
    T_STR, T_INT, T_INT, T_STR, T_STR, T_STR, T_STR, T_STR, T_INT,  T_INT,
    T_INT, T_INT, T_INT, T_BOOL, T_INT, T_INT, T_INT, T_STR, T_STRS, T_STRS};

/* ------------------------------------------------------------- fast path */

static int field_of(const char *k, size_t n)
{
#define K(s, f)                                                                                   \
    if (n == sizeof s - 1 && memcmp(k, s, sizeof s - 1) == 0)                                    \
    return f
    switch (k[0]) {
    case 'a': K("also", F_ALSO); break;
    case 'c': K("cmd", F_CMD); break;
    case 'd': K("duration", F_DURATION); break;
    case 'e': K("expires", F_EXPIRES); break;
    case 'i': K("id", F_ID); K("interruptible", F_INTERRUPTIBLE); break;
    case 'm': K("min_reputation", F_MIN_REP); break;
    case 'o': K("owner", F_OWNER); break;
    case 'p': K("price", F_PRICE); K("priority", F_PRIORITY); break;
    case 'q': K("qty", F_QTY); break;
    case 'r': K("resource", F_RESOURCE); K("ref", F_REF); K("reputation", F_REP); break;
    case 's': K("side", F_SIDE); break;
    case 't': K("time", F_TIME); K("type", F_TYPE); K("tif", F_TIF); break;
    case 'z': K("zone", F_ZONE); K("zones", F_ZONES); break;
    default: break;
    }
#undef K
    return -1;
}

static const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Bytes a string may hold on the fast path: printable ASCII but the quote
 * and the backslash (anything else goes to the reader). */
#define OK1(c) ((c) >= 0x20 && (c) < 0x7f && (c) != '"' && (c) != '\\')
#define OK4(c) OK1(c), OK1((c) + 1), OK1((c) + 2), OK1((c) + 3)
#define OK16(c) OK4(c), OK4((c) + 4), OK4((c) + 8), OK4((c) + 12)
#define OK64(c) OK16(c), OK16((c) + 16), OK16((c) + 32), OK16((c) + 48)
static const unsigned char plain[256] = {OK64(0), OK64(64), OK64(128), OK64(192)};

/* A string of printable ASCII without escapes, from its opening quote. */
static const char *fast_string(const char *p, const char *e, rstr *out)
{
    const unsigned char *s = (const unsigned char *)p + 1, *q = s, *end = (const unsigned char *)e;
    while (q < end && plain[*q])
        q++;
    if (q == end || *q != '"')
        return NULL;
    out->s = (const char *)s;
    out->n = (size_t)(q - s);
    out->is_str = 1;
    return (const char *)q + 1;
}

static int delimiter(const char *p, const char *e)
{
    return p == e || *p == ',' || *p == '}' || *p == ']' || *p == ' ' || *p == '\t';
}

/* An integer as JSON writes it: -?(0|[1-9][0-9]*), not followed by a
 * fraction or an exponent (those go to the reader). Its value is kept too
 * when it has at most 19 digits (it then fits 64 bits). */
static const char *fast_int(const char *p, const char *e, rfield *v)
{
    const char *s = p;
    int neg = p < e && *p == '-';
    p += neg;
    if (p == e || *p < '0' || *p > '9')
        return NULL;
    uint64_t x = 0;
    const char *d = p;
    if (*p == '0')
        p++;
    else
        for (unsigned dig; p < e && (dig = (unsigned)(unsigned char)*p - '0') < 10; p++)
            x = x * 10 + dig;
    if (!delimiter(p, e))
        return NULL;
    v->str.s = s;
    v->str.n = (size_t)(p - s);
    v->num_ok = p - d <= 19;
    v->num = x;
    v->neg = neg;
    return p;
}

static const char *fast_list(const char *text, const char *p, const char *e, rfield *v,
                             rstr *items)
{
    p = skip_ws(p + 1, e);
    v->items = items;
    v->n_items = 0;
    if (p < e && *p == ']')
        return p + 1;
    for (;;) {
        if (p == e || *p != '"' || v->n_items == RAW_MAX_ITEMS)
            return NULL;
        rstr *it = &items[v->n_items++];
        const char *q = fast_string(p, e, it);
        if (!q)
            return NULL;
        it->col = (int)(p - text) + 1;
        p = skip_ws(q, e);
        if (p < e && *p == ',') {
            p = skip_ws(p + 1, e);
            continue;
        }
        if (p < e && *p == ']')
            return p + 1;
        return NULL;
    }
}

/* Whitespace is rare in these lines: test for it before calling. */
#define WS(p, e)                                                                                  \
    do {                                                                                          \
        if ((p) < (e) && (*(p) == ' ' || *(p) == '\t'))                                           \
            (p) = skip_ws((p), (e));                                                              \
    } while (0)

int synor__cmdline_parse_fast(const char *text, size_t len, rawcmd *r)
{
    const char *p = text, *e = text + len;
    r->present = 0;
    WS(p, e);
    if (p == e || *p != '{')
        return -1;
    r->obj_col = (int)(p - text) + 1;
    p++;
    WS(p, e);
    if (p < e && *p == '}')
        return -1; /* {}: the reader words what is missing */
    for (;;) {
        if (p == e || *p != '"')
            return -1;
        /* a key is one of the field names (letters and '_'), or the line
         * goes to the reader: its end is the next quote */
        const char *k = ++p;
        while (p < e && *p != '"')
            p++;
        if (p == e)
            return -1;
        int f = field_of(k, (size_t)(p - k));
        if (f < 0 || HAS(r, f))
            return -1;
        p++;
        WS(p, e);
        if (p == e || *p != ':')
            return -1;
        p++;
        WS(p, e);
        if (p == e)
            return -1;
        rfield *v = &r->f[f]; /* each type sets what its readers read */
        r->present |= 1u << f;
        v->col = v->str.col = (int)(p - text) + 1;
        const char *q;
        switch (synor__cmd_field_types[f]) {
        case T_STR:
            q = *p == '"' ? fast_string(p, e, &v->str) : NULL;
            break;
        case T_INT:
            q = fast_int(p, e, v);
            break;
        case T_BOOL:
            if (e - p >= 4 && memcmp(p, "true", 4) == 0 && delimiter(p + 4, e)) {
                v->boolean = 1;
                q = p + 4;
            } else if (e - p >= 5 && memcmp(p, "false", 5) == 0 && delimiter(p + 5, e)) {
                v->boolean = 0;
                q = p + 5;
            } else {
                q = NULL;
            }
            break;
        default:
            q = *p == '[' ? fast_list(text, p, e, v, f == F_ZONES ? r->zones : r->also) : NULL;
            break;
        }
        if (!q)
            return -1;
        p = q;
        WS(p, e);
        if (p == e)
            return -1;
        if (*p == ',') {
            p++;
            WS(p, e);
            continue;
        }
        if (*p == '}')
            break;
        return -1;
    }
    p++;
    WS(p, e);
    return p == e ? 0 : -1;
}

/* ------------------------------------------------------------- slow path */

/* The extent of the number literal at p (valid JSON: the reader read it). */
static size_t literal_len(const char *p, const char *e)
{
    const char *s = p;
    while (p < e && ((*p >= '0' && *p <= '9') || *p == '-' || *p == '+' || *p == '.' ||
                     *p == 'e' || *p == 'E'))
        p++;
    return (size_t)(p - s);
}

int synor__cmdline_parse_slow(const char *text, size_t len, const char *name, long line,
                              rawcmd *r, synor__jdoc **doc)
{
    memset(r, 0, sizeof *r);
    int rc = synor__json_parse_at(text, len, name, line > 0 && line < 0x7fffffff ? (int)line : 1,
                                  doc);
    if (rc == SYNOR_ENOMEM)
        return rc;
    if (rc)
        return SYNOR_REASON_MALFORMED;
    const synor__jval *o = synor__jdoc_root(*doc);
    if (synor__json_expect(*doc, o, "command", SYNOR__J_OBJECT) ||
        synor__json_check_keys(*doc, o, "command", synor__cmd_field_names))
        return SYNOR_REASON_MALFORMED;
    r->obj_col = o->col;
    static const synor__jtype want[] = {SYNOR__J_STRING, SYNOR__J_NUMBER, SYNOR__J_BOOL,
                                        SYNOR__J_ARRAY};
    for (int f = 0; f < NF; f++) {
        synor__jval *v;
        if (synor__json_member(*doc, o, "command", synor__cmd_field_names[f],
                               want[synor__cmd_field_types[f]], 0, &v))
            return SYNOR_REASON_MALFORMED;
        if (!v)
            continue;
        rfield *x = &r->f[f];
        r->present |= 1u << f;
        x->col = v->col;
        x->str.col = v->col;
        switch (synor__cmd_field_types[f]) {
        case T_STR:
            x->str.s = v->u.str.s;
            x->str.n = v->u.str.len;
            x->str.is_str = 1;
            break;
        case T_INT: /* the literal as written: its column is its offset in this one line */
            x->str.s = text + v->col - 1;
            x->str.n = literal_len(x->str.s, text + len);
            break;
        case T_BOOL:
            x->boolean = v->u.boolean;
            break;
        default:
            x->items = f == F_ZONES ? r->zones : r->also;
            for (size_t i = 0; i < v->u.arr.n && i < RAW_MAX_ITEMS; i++) {
                const synor__jval *it = v->u.arr.items[i];
                rstr *s = &x->items[x->n_items++];
                s->col = it->col;
                s->is_str = it->type == SYNOR__J_STRING;
                if (s->is_str) {
                    s->s = it->u.str.s;
                    s->n = it->u.str.len;
                }
            }
            break;
        }
    }
    return 0;
}

int synor__cmdline_parse(const char *text, size_t len, const char *name, long line, rawcmd *r,
                         synor__jdoc **doc)
{
    *doc = NULL;
    r->present = 0; /* a field is read only when its bit is set */
    if (synor__cmdline_parse_fast(text, len, r) == 0)
        return 0;
    return synor__cmdline_parse_slow(text, len, name, line, r, doc);
}
