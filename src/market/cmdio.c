/* cmdio.c - the JSON-lines form of market events (docs/MARKET.md), so that
 * every front end (the CLI's batch mode, a service) writes the same
 * format.
 *
 * Written by hand, not through the generic JSON writer: a batch prints two
 * or three events per command, and formatting them was most of the CLI's
 * time. Names need no escaping (synor__valid_name allows no quote,
 * backslash, control character or invalid UTF-8); a message is escaped,
 * its invalid UTF-8 replaced by U+FFFD, so the output is always valid
 * JSON. */
#include <stdlib.h>
#include <string.h>

#include "market/event_keep.h"
#include "market/market_internal.h"

#define W(s) {s, sizeof s - 1}
static const struct word {
    char s[16]; /* copied 16 bytes at a time */
    size_t n;
} kind_names[] = {W(""),        W("accepted"),  W("rejected"), W("trade"),
                  W("cancelled"), W("expired"), W("amended"),  W("reputation"),
                  W("leased"),  W("preempted"), W("migrated"), W("lease_ended")};
#undef W

/* Room an event without a message can need: names of 63 bytes, numbers of
 * 20 digits, the longest reason text. */
#define EVENT_MAX 1024

static char *lit(char *o, const char *s, size_t n)
{
    memcpy(o, s, n);
    return o + n;
}
#define LIT(o, s) lit(o, s, sizeof s - 1)

/* Decimal digits of v: written backwards into a scratch buffer, then 24
 * bytes copied at once (a fixed size, so no call); the bytes after the
 * number are scratch too, overwritten by what follows (the room written
 * into is EVENT_MAX, far more than an event's text). */
static char *u64(char *o, uint64_t v)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                                "34353637383940414243444546474849505152535455565758596061626364656667"
                                "6869707172737475767778798081828384858687888990919293949596979899";
    char t[48], *end = t + 24, *b = end;
    while (v >= 100) { /* two digits a division */
        unsigned k = (unsigned)(v % 100) * 2;
        v /= 100;
        *--b = pairs[k + 1];
        *--b = pairs[k];
    }
    if (v >= 10) {
        *--b = pairs[v * 2 + 1];
        *--b = pairs[v * 2];
    } else {
        *--b = (char)('0' + v);
    }
    memcpy(o, b, 24);
    return o + (end - b);
}

static char *i64(char *o, int64_t v)
{
    if (v < 0) {
        *o++ = '-';
        return u64(o, 0 - (uint64_t)v);
    }
    return u64(o, (uint64_t)v);
}

/* An owner's name or a resource's key, quoted: a valid name needs no
 * escaping, and its length is kept. */
static char *quoted(char *o, const char *s, size_t n)
{
    *o++ = '"';
    memcpy(o, s, NAME_ROOM); /* names are kept in NAME_ROOM bytes: one fixed copy */
    o += n;
    *o++ = '"';
    return o;
}

/* What an event shows for a name the market does not have. */
static const char unknown[NAME_ROOM] = "?";

static void owner(const synor_market *m, uint32_t id, const char **s, uint8_t *n)
{
    int ok = m && id < m->n_owners;
    *s = ok ? m->owner_names[id] : unknown;
    *n = ok ? m->owner_len[id] : 1;
}

static void resource(const synor_market *m, uint32_t r, const char **s, uint8_t *n)
{
    int ok = m && r < m->n_res;
    *s = ok ? m->res_keys[r] : unknown;
    *n = ok ? m->res_len[r] : 1;
}

/* A message as a JSON string: at most 6 bytes out per byte in. */
static char *escaped(char *o, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
            p++;
        } else if (c < 0x20) {
            o = LIT(o, "\\u00");
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
            p++;
        } else if (c < 0x80) {
            *o++ = (char)c;
            p++;
        } else { /* UTF-8: copied when valid, else U+FFFD */
            size_t n = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
            unsigned cp = n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
            size_t i = 1;
            for (; n && i < n && (p[i] & 0xc0) == 0x80; i++)
                cp = cp << 6 | (p[i] & 0x3f);
            static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
            if (n && i == n && cp >= min[n] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff)) {
                o = lit(o, (const char *)p, n);
                p += n;
            } else {
                o = LIT(o, "\\ufffd");
                p++;
            }
        }
    }
    *o++ = '"';
    return o;
}

/* The start every event has: its kind, seq and line. */
static char *head(char *o, unsigned kind, uint64_t seq, long line)
{
    o = LIT(o, "{\"event\":\"");
    if (kind < SYNOR__ARRAY_LEN(kind_names)) {
        memcpy(o, kind_names[kind].s, 16);
        o += kind_names[kind].n;
    } else
        o = LIT(o, "?");
    *o++ = '"';
    if (seq) { /* a rejected command has none */
        o = LIT(o, ",\"seq\":");
        o = u64(o, seq);
    }
    if (line > 0) {
        o = LIT(o, ",\"line\":");
        o = i64(o, line);
    }
    return o;
}

/* An event refused before the market saw the command: what is wrong,
 * nothing else (room: EVENT_MAX, plus 6 per byte of the message). */
static char *write_message(char *o, const synor_market_event *e, long line)
{
    o = head(o, (unsigned)e->kind, e->seq, line);
    o = LIT(o, ",\"reason\":\"");
    const char *r = synor_market_reason_name(e->reason);
    o = lit(o, r, strlen(r));
    o = LIT(o, "\",\"message\":");
    o = escaped(o, e->message);
    *o++ = '}';
    return o;
}

/* Writes the event at o (room: EVENT_MAX); returns the end. */
static char *write_event(char *o, const synor__kept_event *e)
{
    o = head(o, e->kind, e->seq, e->line);
    o = LIT(o, ",\"time\":");
    o = u64(o, e->time);
    if (e->kind == SYNOR_EV_REPUTATION) {
        o = LIT(o, ",\"owner\":");
        o = quoted(o, e->owner, e->owner_n);
        o = LIT(o, ",\"reputation\":");
        o = i64(o, e->qty);
    } else {
        o = LIT(o, ",\"id\":");
        o = u64(o, e->order_id);
        o = LIT(o, ",\"owner\":");
        o = quoted(o, e->owner, e->owner_n);
        o = LIT(o, ",\"resource\":");
        o = quoted(o, e->resource, e->resource_n);
        o = e->side == SYNOR_BID ? LIT(o, ",\"side\":\"bid\",\"price\":")
                                 : LIT(o, ",\"side\":\"ask\",\"price\":");
        o = i64(o, e->price);
        o = LIT(o, ",\"qty\":");
        o = i64(o, e->qty);
        o = LIT(o, ",\"remaining\":");
        o = i64(o, e->remaining);
    }
    if (e->kind == SYNOR_EV_TRADE) {
        o = LIT(o, ",\"maker_id\":");
        o = u64(o, e->maker_id);
        o = LIT(o, ",\"maker_owner\":");
        o = quoted(o, e->maker, e->maker_n);
    }
    if (e->deadline) {
        o = LIT(o, ",\"deadline\":");
        o = u64(o, e->deadline);
    }
    if (e->kind >= SYNOR_EV_LEASED) {
        o = LIT(o, ",\"provider\":");
        o = quoted(o, e->maker, e->maker_n);
    }
    if (e->kind == SYNOR_EV_AMENDED)
        o = e->kept_priority ? LIT(o, ",\"kept_priority\":true")
                             : LIT(o, ",\"kept_priority\":false");
    if (e->reason) {
        o = LIT(o, ",\"reason\":\"");
        const char *r = synor_market_reason_name(e->reason);
        o = lit(o, r, strlen(r));
        o = LIT(o, "\",\"message\":\"");
        r = synor_market_reason_text(e->reason);
        o = lit(o, r, strlen(r));
        *o++ = '"';
    }
    *o++ = '}';
    return o;
}

static void keep(const synor_market_event *e, long line, synor__kept_event *k)
{
    const synor_market *m = e->market;
    k->seq = e->seq;
    k->time = e->time;
    k->order_id = e->order_id;
    k->maker_id = e->maker_id;
    k->deadline = e->deadline;
    k->price = e->price;
    k->qty = e->qty;
    k->remaining = e->remaining;
    k->line = line;
    owner(m, e->owner, &k->owner, &k->owner_n);
    resource(m, e->resource, &k->resource, &k->resource_n);
    owner(m, e->maker_owner, &k->maker, &k->maker_n);
    k->reason = e->reason;
    /* kinds beyond the table are written "?" (u8: a byte's worth is enough) */
    k->kind = (unsigned)e->kind < SYNOR__ARRAY_LEN(kind_names) ? (uint8_t)e->kind : 255;
    k->side = (uint8_t)e->side;
    k->kept_priority = e->kept_priority != 0;
}

int synor__event_keep(const synor_market_event *e, long line, synor__kept_event *out)
{
    if (e->kind == SYNOR_EV_REJECTED || e->message)
        return -1;
    keep(e, line, out);
    return 0;
}

char *synor__kept_event_json(const synor__kept_event *k, char *o)
{
    o = write_event(o, k);
    *o++ = '\n';
    return o;
}

size_t synor_market_event_json(const synor_market_event *e, long line, char *buf, size_t cap)
{
    size_t need = EVENT_MAX + (e->message ? 6 * strlen(e->message) : 0);
    synor__kept_event k;
    if (!e->message)
        keep(e, line, &k);
    else
        memset(&k, 0, sizeof k);
    if (cap >= need) { /* the usual case: straight into the caller's buffer */
        size_t n = (size_t)((e->message ? write_message(buf, e, line) : write_event(buf, &k)) - buf);
        buf[n] = '\0';
        return n;
    }
    char small[EVENT_MAX], *tmp = need <= sizeof small ? small : malloc(need);
    if (!tmp)
        return 0;
    size_t n = (size_t)((e->message ? write_message(tmp, e, line) : write_event(tmp, &k)) - tmp);
    if (cap) {
        size_t c = n < cap - 1 ? n : cap - 1;
        memcpy(buf, tmp, c);
        buf[c] = '\0';
    }
    if (tmp != small)
        free(tmp);
    return n;
}
