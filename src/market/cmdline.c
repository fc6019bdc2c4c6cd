/* cmdline.c - synor_market_submit_json: one JSON-lines command, fields to
 * command, all or nothing.
 *
 * After cmdparse.c has the fields, the values are checked in a fixed order
 * (each error names the file, line, column, field and value); the names are
 * looked up, and those the command may register (an owner by a place or a
 * reputation, a resource by a place or a reclaim, zones) are added to the
 * market in memory only; then the market checks the command. A command
 * rejected at any step takes its new names back out, so that it changes
 * nothing; an accepted one journals its names and itself in one batch. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json/json.h"
#include "market/cmdline.h"

/* The fields each command takes (bit f for field f). */
#define B(f) (1u << (f))
static const unsigned kind_fields[] = {
    [SYNOR_CMD_PLACE] = B(F_CMD) | B(F_ID) | B(F_REF) | B(F_OWNER) | B(F_RESOURCE) | B(F_SIDE) |
                        B(F_TYPE) | B(F_TIF) | B(F_PRICE) | B(F_QTY) | B(F_TIME) | B(F_EXPIRES) |
                        B(F_DURATION) | B(F_INTERRUPTIBLE) | B(F_PRIORITY) | B(F_MIN_REP) |
                        B(F_ZONE) | B(F_ZONES) | B(F_ALSO),
    [SYNOR_CMD_CANCEL] = B(F_CMD) | B(F_ID) | B(F_REF) | B(F_OWNER) | B(F_TIME),
    [SYNOR_CMD_AMEND] = B(F_CMD) | B(F_ID) | B(F_REF) | B(F_OWNER) | B(F_PRICE) | B(F_QTY) |
                        B(F_TIME),
    [SYNOR_CMD_REPUTATION] = B(F_CMD) | B(F_REF) | B(F_OWNER) | B(F_REP) | B(F_TIME),
    [SYNOR_CMD_RECLAIM] = B(F_CMD) | B(F_REF) | B(F_OWNER) | B(F_RESOURCE) | B(F_QTY) | B(F_TIME),
};
static const unsigned kind_required[] = {
    [SYNOR_CMD_PLACE] = B(F_CMD) | B(F_OWNER) | B(F_TIME) | B(F_RESOURCE) | B(F_ID),
    [SYNOR_CMD_CANCEL] = B(F_CMD) | B(F_OWNER) | B(F_TIME) | B(F_ID),
    [SYNOR_CMD_AMEND] = B(F_CMD) | B(F_OWNER) | B(F_TIME) | B(F_ID),
    [SYNOR_CMD_REPUTATION] = B(F_CMD) | B(F_OWNER) | B(F_TIME) | B(F_REP),
    [SYNOR_CMD_RECLAIM] = B(F_CMD) | B(F_OWNER) | B(F_TIME) | B(F_RESOURCE),
};
static const char *const kind_words[] = {"", "place", "cancel", "amend", "reputation",
                                         "reclaim"};

/* A command line's command, its names still text. */
typedef struct pline {
    synor_market_cmd c;
    const rstr *owner, *resource, *zone, *zones, *also;
    size_t n_zones;
} pline;

typedef struct where {
    const char *name;
    long line;
} where;

/* "NAME:LINE:COL: command.FIELD: ..." into the error slot; returns reason. */
static int fail(const where *w, int col, int field, int reason, const char *fmt, ...)
    SYNOR__PRINTF(5, 6);
static int fail(const where *w, int col, int field, int reason, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    synor__error(SYNOR_EINVAL, "%s:%ld:%d: command%s%s: %s", w->name, w->line, col,
                 field >= 0 ? "." : "", field >= 0 ? synor__cmd_field_names[field] : "", msg);
    return reason;
}

/* Up to 40 bytes of a value for a message, shortened visibly. */
static const char *shown(const rstr *s, char *buf, size_t cap)
{
    size_t n = s->n < cap - 4 ? s->n : cap - 4;
    memcpy(buf, s->s, n);
    strcpy(buf + n, s->n > n ? "..." : "");
    return buf;
}

/* An integer field's literal as a magnitude and a sign: it must be an
 * integer; beyond max (or negative when that is not allowed) it is
 * `range_reason`, worded "<value> is out of range: <range>" (range NULL:
 * "<field> is 0 to <max>", written only then). */
static int get_int_slow(const where *w, const rfield *v, int field, int neg_ok, uint64_t max,
                        int range_reason, const char *range, uint64_t *mag, int *neg)
{
    const char *p = v->str.s, *e = p + v->str.n;
    char lit[48], text[96];
    *neg = p < e && *p == '-';
    p += *neg;
    uint64_t x = 0;
    int over = 0;
    for (const char *q = p; q < e; q++) {
        unsigned d = (unsigned)(unsigned char)*q - '0';
        if (d > 9)
            return fail(w, v->col, field, SYNOR_REASON_MALFORMED, "expected an integer, found %s",
                        shown(&v->str, lit, sizeof lit));
        /* 19 digits always fit 64 bits; a 20th may not */
        if (q - p >= 19)
            over |= x > (UINT64_MAX - d) / 10;
        x = x * 10 + d;
    }
    if (p == e)
        return fail(w, v->col, field, SYNOR_REASON_MALFORMED, "expected an integer");
    if (over || x > max || (*neg && x && !neg_ok)) {
        if (!range)
            snprintf(text, sizeof text, "%s is 0 to %llu", synor__cmd_field_names[field],
                     (unsigned long long)max);
        else
            synor__strlcpy(text, range, sizeof text);
        return fail(w, v->col, field, range_reason, "%s is out of range: %s",
                    shown(&v->str, lit, sizeof lit), text);
    }
    *mag = x;
    return 0;
}

static inline int get_int(const where *w, const rfield *v, int field, int neg_ok, uint64_t max,
                          int range_reason, const char *range, uint64_t *mag, int *neg)
{
    if (v->num_ok && v->num <= max && !(v->neg && v->num && !neg_ok)) {
        *mag = v->num; /* the fast path read it, and it is in range */
        *neg = v->neg;
        return 0;
    }
    return get_int_slow(w, v, field, neg_ok, max, range_reason, range, mag, neg);
}

static inline int get_u64(const where *w, const rawcmd *r, int f, uint64_t max, uint64_t *out)
{
    if (!HAS(r, f))
        return 0;
    int neg;
    return get_int(w, &r->f[f], f, 0, max, SYNOR_REASON_BAD_FIELD, NULL, out, &neg);
}

/* price or qty: any int64 goes to the market (which says BAD_PRICE or
 * BAD_QUANTITY below 1 or above 2^53 - 1); beyond 64 bits is said here. */
static int get_i64(const where *w, const rawcmd *r, int f, int reason, int64_t *out)
{
    if (!HAS(r, f))
        return 0;
    uint64_t mag;
    int neg;
    const char *range = f == F_PRICE ? "a price is 1 to 9007199254740991 ticks"
                                     : "a quantity is 1 to 9007199254740991 units";
    int why = get_int(w, &r->f[f], f, 1, UINT64_MAX, reason, range, &mag, &neg);
    if (!why && (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)) {
        char lit[48];
        why = fail(w, r->f[f].col, f, reason, "%s is out of range: %s",
                   shown(&r->f[f].str, lit, sizeof lit), range);
    }
    if (!why)
        *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return why;
}

static int is(const rstr *s, const char *word)
{
    /* words are short: compare up to and including the end of the word */
    for (size_t i = 0; i < s->n; i++)
        if (s->s[i] != word[i])
            return 0;
    return word[s->n] == '\0';
}

/* One of `words` (NULL-ended); its index, or a MALFORMED reason. */
static int get_word(const where *w, const rawcmd *r, int f, const char *const *words, int *out)
{
    if (!HAS(r, f))
        return 0;
    for (int i = 0; words[i]; i++)
        if (is(&r->f[f].str, words[i])) {
            *out = i;
            return 0;
        }
    char lit[48], list[120] = "";
    for (int i = 0; words[i]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"",
                 i ? (words[i + 1] ? ", " : " or ") : "", words[i]);
    return fail(w, r->f[f].col, f, SYNOR_REASON_MALFORMED, "must be %s, not \"%s\"", list,
                shown(&r->f[f].str, lit, sizeof lit));
}

static int convert(const where *w, const rawcmd *r, pline *pl)
{
    memset(pl, 0, sizeof *pl);
    synor_market_cmd *c = &pl->c;
    static const char *const kinds[] = {"", "place", "cancel", "amend", "reputation", "reclaim",
                                        NULL};
    if (!HAS(r, F_CMD))
        return fail(w, r->obj_col, -1, SYNOR_REASON_MALFORMED, "missing required field \"cmd\"");
    int kind = 0, why;
    if ((why = get_word(w, r, F_CMD, kinds + 1, &kind)))
        return why;
    c->kind = (synor_market_cmd_kind)(kind + 1);
    /* the first field (in field order) not taken, or required and absent */
    uint32_t extra = r->present & ~kind_fields[c->kind], missing = kind_required[c->kind] & ~r->present;
    if (extra || missing) {
        int fe = extra ? __builtin_ctz(extra) : NF, fm = missing ? __builtin_ctz(missing) : NF;
        if (fe < fm)
            return fail(w, r->f[fe].col, fe, SYNOR_REASON_MALFORMED, "not a field of a %s",
                        kind_words[c->kind]);
        return fail(w, r->obj_col, -1, SYNOR_REASON_MALFORMED,
                    "missing required field \"%s\" (a %s needs it)", synor__cmd_field_names[fm],
                    kind_words[c->kind]);
    }
    static const char *const sides[] = {"bid", "ask", NULL}, *const types[] = {"limit", "market",
                                                                               NULL},
                             *const tifs[] = {"gtc", "ioc", "fok", NULL};
    int side = 0, type = 0, tif = 0;
    uint64_t prio = 0, minrep = 0, rep = 0;
    if ((why = get_word(w, r, F_SIDE, sides, &side)) || (why = get_word(w, r, F_TYPE, types, &type)) ||
        (why = get_word(w, r, F_TIF, tifs, &tif)) ||
        (why = get_u64(w, r, F_ID, UINT64_MAX, &c->order_id)) ||
        (why = get_u64(w, r, F_REF, UINT64_MAX, &c->ref)) ||
        (why = get_u64(w, r, F_TIME, UINT64_MAX, &c->time)) ||
        (why = get_i64(w, r, F_PRICE, SYNOR_REASON_BAD_PRICE, &c->price)) ||
        (why = get_i64(w, r, F_QTY, SYNOR_REASON_BAD_QUANTITY, &c->qty)) ||
        (why = get_u64(w, r, F_EXPIRES, UINT64_MAX, &c->expires)) ||
        (why = get_u64(w, r, F_DURATION, UINT64_MAX, &c->duration)) ||
        (why = get_u64(w, r, F_PRIORITY, 255, &prio)) ||
        (why = get_u64(w, r, F_MIN_REP, 255, &minrep)) || (why = get_u64(w, r, F_REP, 255, &rep)))
        return why;
    c->side = (synor_side)side;
    c->type = (synor_order_type)type;
    c->tif = (synor_tif)tif;
    c->priority = (uint8_t)prio;
    c->min_reputation = (uint8_t)minrep;
    c->reputation = (uint8_t)rep;
    c->interruptible = (uint8_t)(HAS(r, F_INTERRUPTIBLE) && r->f[F_INTERRUPTIBLE].boolean);
    pl->owner = &r->f[F_OWNER].str;
    pl->resource = HAS(r, F_RESOURCE) ? &r->f[F_RESOURCE].str : NULL;
    pl->zone = HAS(r, F_ZONE) ? &r->f[F_ZONE].str : NULL;
    static const rfield none = {0, {NULL, 0, 0, 0}, 0, 0, 0, 0, NULL, 0};
    const rfield *z = HAS(r, F_ZONES) ? &r->f[F_ZONES] : &none,
                 *a = HAS(r, F_ALSO) ? &r->f[F_ALSO] : &none;
    for (size_t i = 0; i < z->n_items; i++)
        if (!z->items[i].is_str)
            return fail(w, z->items[i].col, F_ZONES, SYNOR_REASON_BAD_FIELD,
                        "zones must be strings (zone names)");
    if (z->n_items > 63)
        return fail(w, z->col, F_ZONES, SYNOR_REASON_BAD_FIELD, "at most 63 zones");
    for (size_t i = 0; i < a->n_items; i++)
        if (!a->items[i].is_str)
            return fail(w, a->items[i].col, F_ALSO, SYNOR_REASON_BAD_FIELD,
                        "also: resources are strings");
    if (a->n_items > SYNOR_MARKET_MAX_ALSO)
        return fail(w, a->col, F_ALSO, SYNOR_REASON_BAD_FIELD, "also: at most %d resources",
                    SYNOR_MARKET_MAX_ALSO);
    pl->zones = z->items;
    pl->n_zones = z->n_items;
    pl->also = a->items;
    c->n_also = (uint8_t)a->n_items;
    return 0;
}

/* ------------------------------------------------------------- names */

typedef struct pending {
    int type[1 + 1 + SYNOR_MARKET_MAX_ALSO + 1 + 64];
    unsigned n;
} pending;

static void take_back(synor_market *m, pending *p)
{
    while (p->n)
        synor__name_pop(m, p->type[--p->n]);
}

/* A name as a C string; a longer one than any valid name is cut and shown
 * cut (it is refused anyway). */
static void cname(const rstr *s, char *out, size_t cap)
{
    size_t n = s->n < cap - 1 ? s->n : cap - 1;
    memcpy(out, s->s, n);
    out[n] = '\0';
    if (s->n > n && cap > 4)
        strcpy(out + cap - 4, "...");
}

/* Finds or adds (in memory) one name: 0, a rejection reason (message set),
 * or a negative code. */
/* The message set by a name check, prefixed with where the name is:
 * "file:line:col: command.field: ...". */
static int located(const where *w, const rstr *s, int field, int reason)
{
    char msg[400];
    synor__strlcpy(msg, synor_errmsg(), sizeof msg);
    const char *text = strncmp(msg, "market: ", 8) == 0 ? msg + 8 : msg;
    synor__error(SYNOR_EINVAL, "%s:%ld:%d: command.%s: %s", w->name, w->line, s->col,
                 synor__cmd_field_names[field], text);
    return reason;
}

static int resolve(synor_market *m, const synor_catalog *cat, const where *w, pending *p,
                   int type, int field, const rstr *s, int may_add, uint32_t *id)
{
    char name[256];
    int found = type == SYNOR__REC_ZONE ? synor__zone_find(m, s->s, s->n, id)
                                        : synor__name_find(m, type == SYNOR__REC_RESOURCE, s->s,
                                                           s->n, id);
    if (found == 0)
        return 0;
    cname(s, name, sizeof name);
    if (type == SYNOR__REC_RESOURCE) {
        if (s->n != strlen(name)) {
            synor__error(SYNOR_EINVAL, "resource \"%s\" is not <kind>/<profile-id>/<region>",
                         name);
            return located(w, s, field, SYNOR_REASON_UNKNOWN_RESOURCE);
        }
        if (synor__resource_key_check(cat, name))
            return located(w, s, field, SYNOR_REASON_UNKNOWN_RESOURCE);
    } else if (!may_add) {
        synor__error(SYNOR_ENOENT, "unknown owner \"%s\"", name);
        return located(w, s, field, SYNOR_REASON_UNKNOWN_OWNER);
    } else if (s->n != strlen(name) || !synor__valid_name(name)) {
        synor__error(SYNOR_EINVAL, "%s \"%s\" must be 1..63 printable characters "
                                   "without spaces or quotes",
                     type == SYNOR__REC_OWNER ? "owner" : "zone", name);
        return located(w, s, field, SYNOR_REASON_BAD_FIELD);
    } else if (type == SYNOR__REC_ZONE && m->n_zones >= 63) {
        synor__error(SYNOR_ERANGE, "zone \"%s\": at most 63 zones", name);
        return located(w, s, field, SYNOR_REASON_BAD_FIELD);
    }
    int rc = type == SYNOR__REC_OWNER      ? synor__add_owner_raw(m, name, id)
             : type == SYNOR__REC_RESOURCE ? synor__add_resource_raw(m, name, id)
                                           : synor__add_zone_raw(m, name, id);
    if (rc)
        return rc;
    p->type[p->n++] = type;
    return 0;
}

static int resolve_all(synor_market *m, const synor_catalog *cat, const where *w, pline *pl,
                       pending *p)
{
    synor_market_cmd *c = &pl->c;
    int adds = c->kind == SYNOR_CMD_PLACE || c->kind == SYNOR_CMD_REPUTATION, why;
    if ((why = resolve(m, cat, w, p, SYNOR__REC_OWNER, F_OWNER, pl->owner, adds, &c->owner)))
        return why;
    if (pl->resource && (why = resolve(m, cat, w, p, SYNOR__REC_RESOURCE, F_RESOURCE,
                                       pl->resource, 1, &c->resource)))
        return why;
    for (unsigned k = 0; k < c->n_also; k++)
        if ((why = resolve(m, cat, w, p, SYNOR__REC_RESOURCE, F_ALSO, &pl->also[k], 1,
                           &c->also[k])))
            return why;
    uint32_t z;
    if (pl->zone) {
        if ((why = resolve(m, cat, w, p, SYNOR__REC_ZONE, F_ZONE, pl->zone, 1, &z)))
            return why;
        c->zone = (uint8_t)z;
    }
    for (size_t k = 0; k < pl->n_zones; k++) {
        if ((why = resolve(m, cat, w, p, SYNOR__REC_ZONE, F_ZONES, &pl->zones[k], 1, &z)))
            return why;
        c->zones |= 1ull << z;
    }
    return 0;
}

/* ------------------------------------------------------------ submit */

/* A rejection found before the market saw the command: a REJECTED event
 * carrying the message (the error slot keeps it too). */
static int reject_line(synor_market *m, int reason, int *out)
{
    *out = reason;
    if (synor__quiet(m))
        return 0;
    char msg[600];
    synor__strlcpy(msg, synor_errmsg(), sizeof msg);
    synor_market_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = SYNOR_EV_REJECTED;
    ev.reason = reason;
    ev.message = msg;
    synor__emit(m, &ev);
    synor__error(SYNOR_EINVAL, "%s", msg); /* the callback may have used the slot */
    return 0;
}

/* The new names' records, then the command's: one batch. */
static int journal_names(synor_market *m, const pending *p)
{
    uint64_t seq = m->seq - p->n;
    uint32_t owners = m->n_owners, res = m->n_res, zones = m->n_zones;
    for (unsigned i = p->n; i-- > 0;) /* which ones: count back from the last */
        owners -= p->type[i] == SYNOR__REC_OWNER, res -= p->type[i] == SYNOR__REC_RESOURCE,
            zones -= p->type[i] == SYNOR__REC_ZONE;
    for (unsigned i = 0; i < p->n; i++) {
        const char *name = p->type[i] == SYNOR__REC_OWNER      ? m->owner_names[owners++]
                           : p->type[i] == SYNOR__REC_RESOURCE ? m->res_keys[res++]
                                                               : m->zone_names[++zones];
        int rc = synor__journal_name_at(m, p->type[i], name, ++seq);
        if (rc)
            return rc;
    }
    return 0;
}

/* A line's command, its names resolved and checked, applied and
 * journaled - or rejected, changing nothing. doc (may be NULL) backs pl's
 * names until they are in the market. */
static int apply_line(synor_market *m, const synor_catalog *cat, const where *w, pline *pl,
                      synor__jdoc *doc, int *reason)
{
    pending p;
    p.n = 0;
    int why = resolve_all(m, cat, w, pl, &p);
    synor__jdoc_free(doc); /* pl's names are in the market now */
    if (why) {
        int rc = why < 0 ? why : reject_line(m, why, reason);
        take_back(m, &p);
        return rc;
    }
    m->cur_seq = 0;
    m->cur_time = pl->c.time;
    if ((why = synor__cmd_check(m, &pl->c))) {
        *reason = why;
        synor__reject(m, &pl->c, why); /* the new names still resolve in the callback */
        take_back(m, &p);
        return 0;
    }
    synor__jmark mark = synor__journal_mark(m);
    int rc = m->journal ? journal_names(m, &p) : 0;
    if (!rc)
        rc = synor__apply_checked(m, &pl->c);
    if (rc) {
        synor__journal_rewind(m, mark);
        if (!m->broken)
            take_back(m, &p);
    }
    return rc;
}

static int submit_ok(const synor_market *m)
{
    if (m->broken || m->read_only)
        return synor__error(SYNOR_ESTATE, "market: %s", m->read_only ? "opened read-only"
                                                                     : "an earlier command or "
                                                                       "commit failed; reopen");
    return 0;
}

int synor_market_submit_json(synor_market *m, const synor_catalog *cat, const char *text,
                             size_t len, const char *name, long line, int *reason)
{
    int dummy;
    if (!reason)
        reason = &dummy;
    *reason = 0;
    if (!m || (!text && len))
        return synor__error(SYNOR_EINVAL, "synor_market_submit_json: NULL argument");
    int rc = submit_ok(m);
    if (rc)
        return rc;
    where w = {name ? name : "<command>", line > 0 ? line : 1};
    rawcmd r;
    synor__jdoc *doc = NULL;
    int why = synor__cmdline_parse(text ? text : "", len, w.name, w.line, &r, &doc);
    pline pl;
    if (why < 0) {
        synor__jdoc_free(doc);
        return why;
    }
    if (!why)
        why = convert(&w, &r, &pl);
    if (why) {
        synor__jdoc_free(doc);
        return reject_line(m, why, reason);
    }
    return apply_line(m, cat, &w, &pl, doc, reason);
}

int synor__cmdline_preparse(const char *text, size_t len, synor__parsed_line *out)
{
    rawcmd r;
    pline pl;
    const where w = {"", 1}; /* a message made here is not used: the line is read again */
    if (synor__cmdline_parse_fast(text, len, &r) || HAS(&r, F_ZONES) || HAS(&r, F_ALSO) ||
        convert(&w, &r, &pl))
        return -1;
    out->c = pl.c;
    out->owner = *pl.owner;
    out->has_resource = pl.resource != NULL;
    if (pl.resource)
        out->resource = *pl.resource;
    out->has_zone = pl.zone != NULL;
    if (pl.zone)
        out->zone = *pl.zone;
    return 0;
}

int synor__market_submit_parsed(synor_market *m, const synor_catalog *cat,
                                const synor__parsed_line *pp, const char *name, long line,
                                int *reason)
{
    *reason = 0;
    int rc = submit_ok(m);
    if (rc)
        return rc;
    where w = {name ? name : "<command>", line > 0 ? line : 1};
    pline pl;
    memset(&pl, 0, sizeof pl);
    pl.c = pp->c;
    pl.owner = &pp->owner;
    pl.resource = pp->has_resource ? &pp->resource : NULL;
    pl.zone = pp->has_zone ? &pp->zone : NULL;
    return apply_line(m, cat, &w, &pl, NULL, reason);
}
