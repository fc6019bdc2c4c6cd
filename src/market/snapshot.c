/* snapshot.c - the market's canonical state: its serialization (the input
 * of the state hash, and the body of snapshot.bin) and its restore.
 *
 * snapshot.bin: "SYNSNAP3", u64 body length, u32 CRC-32C of the body, body
 * = synor__market_serialize (little endian, every number a u64; 128-bit
 * sums as two, low first). Version 3 added the used ids and 128-bit
 * volumes; version 2 (volumes of 64 bits, no used ids) is still read: its
 * used ids are then those of the open orders, the only ones it kept.
 *
 * A CRC only says that the bytes are the ones written. Restore checks every
 * value as submit checks a command - prices and quantities 1..2^53 - 1,
 * owners, zones and resources that exist, names that are valid and
 * distinct, ids that are unique and used - and then the invariants of the
 * whole state (check.c); a snapshot that fails is refused, never trusted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "market/market_internal.h"

#define SNAP_MAGIC "SYNSNAP3"
#define SNAP_MAGIC_V2 "SYNSNAP2"

/* ------------------------------------------------------------ writing */

static void put64(synor__buf *b, uint64_t v)
{
    unsigned char x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    synor__buf_append(b, (const char *)x, 8);
}

static void put128(synor__buf *b, synor__u128 v)
{
    put64(b, (uint64_t)v);
    put64(b, (uint64_t)(v >> 64));
}

static void putstr(synor__buf *b, const char *s)
{
    put64(b, strlen(s));
    synor__buf_puts(b, s);
}

typedef struct idblock {
    uint64_t key, bits;
} idblock;

static int cmp_block(const void *a, const void *b)
{
    uint64_t x = ((const idblock *)a)->key, y = ((const idblock *)b)->key;
    return x < y ? -1 : x > y;
}

/* The used-id blocks in ascending order (the table's order is not canonical). */
static void put_used(synor__buf *b, const synor_market *m)
{
    put64(b, m->used_n);
    if (!m->used_n)
        return;
    idblock *v = synor__malloc((size_t)m->used_n * sizeof *v);
    if (!v) {
        b->failed = 1;
        return;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->used_cap; i++)
        if (m->used_keys[i]) {
            v[k].key = m->used_keys[i] - 1;
            v[k++].bits = m->used_bits[i];
        }
    qsort(v, k, sizeof *v, cmp_block);
    for (uint32_t i = 0; i < k; i++) {
        put64(b, v[i].key);
        put64(b, v[i].bits);
    }
    synor__free(v);
}

/* Everything that determines future behaviour, in a fixed order: the state
 * hash is a hash of this, and a snapshot is this plus a header. Orders are
 * written in priority order, so the book rebuilds identically. */
int synor__market_serialize(const synor_market *m, synor__buf *b)
{
    put64(b, m->seq);
    put64(b, m->last_time);
    put64(b, m->cfg.candle_ns);
    put64(b, m->n_owners);
    for (uint32_t i = 0; i < m->n_owners; i++) {
        putstr(b, m->owner_names[i]);
        put64(b, m->owner_rep[i]);
    }
    put64(b, m->n_zones);
    for (uint32_t z = 1; z <= m->n_zones; z++)
        putstr(b, m->zone_names[z]);
    put64(b, m->n_res);
    for (uint32_t r = 0; r < m->n_res; r++) {
        const mbook *k = &m->books[r];
        putstr(b, m->res_keys[r]);
        put64(b, (uint64_t)k->has_last);
        put64(b, (uint64_t)k->last_price);
        put64(b, (uint64_t)k->last_qty);
        put64(b, k->last_time);
        put128(b, k->volume_total);
        put64(b, k->trades_total);
        uint64_t used = 0;
        for (uint32_t c = 0; c < k->n_candles; c++)
            used += k->candles[c].volume > 0;
        put64(b, used);
        for (uint32_t c = 0; c < k->n_candles; c++) {
            const mcandle *q = &k->candles[c];
            if (!q->volume)
                continue;
            put64(b, c);
            put64(b, q->start);
            put64(b, (uint64_t)q->open);
            put64(b, (uint64_t)q->high);
            put64(b, (uint64_t)q->low);
            put64(b, (uint64_t)q->close);
            put128(b, q->volume);
            put128(b, q->notional);
        }
        for (int s = 0; s < 2; s++) {
            const mside *sd = &k->side[s];
            uint64_t n = 0;
            for (uint32_t l = 0; l < sd->n; l++)
                n += sd->v[l].count;
            put64(b, n);
            for (uint32_t l = sd->n; l-- > 0;) /* best first */
                for (uint32_t h = sd->v[l].head; h; h = m->pool[h].next) {
                    const morder *o = &m->pool[h];
                    put64(b, o->id);
                    put64(b, (uint64_t)o->price);
                    put64(b, (uint64_t)o->qty);
                    put64(b, o->expires);
                    put64(b, o->duration);
                    put64(b, o->zones);
                    put64(b, o->zone);
                    put64(b, o->owner);
                    put64(b, (uint64_t)o->interruptible | (uint64_t)o->priority << 8 |
                                 (uint64_t)o->min_rep << 16);
                }
        }
    }
    put64(b, m->next_lease);
    put64(b, m->n_leases);
    for (uint32_t i = 0; i < m->n_leases; i++) {
        const mlease *l = &m->leases[i];
        put64(b, l->id);
        put64(b, l->deadline);
        put64(b, (uint64_t)l->price);
        put64(b, (uint64_t)l->qty);
        put64(b, l->provider);
        put64(b, l->user);
        put64(b, l->resource);
        put64(b, l->start);
        put64(b, l->end);
        put64(b, l->avail);
        put64(b, (uint64_t)l->priority | (uint64_t)l->migrated << 8 | (uint64_t)l->zone << 16);
    }
    put_used(b, m);
    return b->failed ? synor__error(SYNOR_ENOMEM, "out of memory serializing the market") : 0;
}

int synor__snapshot_build(const synor_market *m, synor__buf *out)
{
    static const char header[20] = SNAP_MAGIC; /* then the length and CRC, set below */
    synor__buf_append(out, header, sizeof header);
    size_t start = out->len;
    int rc = synor__market_serialize(m, out);
    if (rc)
        return rc;
    if (start != 20)
        return synor__error(SYNOR_EINVAL, "synor__snapshot_build: the buffer is not empty");
    size_t n = out->len - start;
    uint32_t crc = synor__crc32c(0, out->data + start, n);
    for (int i = 0; i < 8; i++)
        out->data[8 + i] = (char)((uint64_t)n >> (8 * i));
    for (int i = 0; i < 4; i++)
        out->data[16 + i] = (char)(crc >> (8 * i));
    return 0;
}

/* ------------------------------------------------------------ reading */

typedef struct cur {
    const unsigned char *p, *end;
    int bad;
    char why[160]; /* the first value found out of range */
} cur;

static uint64_t c64(cur *c)
{
    if (c->end - c->p < 8) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | c->p[i];
    c->p += 8;
    return v;
}

static synor__u128 c128(cur *c)
{
    uint64_t lo = c64(c), hi = c64(c);
    return (synor__u128)hi << 64 | lo;
}

/* A name: 1..63 bytes, as registration accepts it. */
static int cname(cur *c, char *out)
{
    uint64_t n = c64(c);
    if (c->bad || n == 0 || n > 63 || (uint64_t)(c->end - c->p) < n) {
        c->bad = 1;
        return -1;
    }
    memcpy(out, c->p, (size_t)n);
    out[n] = '\0';
    c->p += n;
    if (strlen(out) != n || !synor__valid_name(out)) {
        snprintf(c->why, sizeof c->why, "a name that is not valid");
        c->bad = 1;
        return -1;
    }
    return 0;
}

/* Records the first value out of its range and marks the cursor bad. */
static int out_of_range(cur *c, int bad, const char *what, uint64_t v)
{
    if (bad && !c->bad) {
        snprintf(c->why, sizeof c->why, "%s %llu is out of range", what, (unsigned long long)v);
        c->bad = 1;
    }
    return bad;
}

static int price_ok(int64_t v) { return v >= 1 && v <= SYNOR__MAX_PRICE; }
static int qty_ok(int64_t v) { return v >= 1 && v <= SYNOR__MAX_QTY; }

static void restore_names(synor_market *m, cur *c)
{
    char name[64];
    uint32_t id;
    uint64_t no = c64(c);
    for (uint64_t i = 0; i < no && !c->bad; i++) {
        if (cname(c, name))
            return;
        uint64_t rep = c64(c);
        if (out_of_range(c, synor_market_find_owner(m, name, &id) == 0, "owner (twice)", i) ||
            out_of_range(c, rep > 100, "reputation", rep))
            return;
        if (synor__add_owner_raw(m, name, &id)) {
            c->bad = 1;
            return;
        }
        m->owner_rep[id] = (uint8_t)rep;
    }
    uint64_t nz = c64(c);
    for (uint64_t z = 0; z < nz && !c->bad; z++) {
        if (cname(c, name))
            return;
        for (uint32_t k = 1; k <= m->n_zones; k++)
            if (out_of_range(c, strcmp(m->zone_names[k], name) == 0, "zone (twice)", z))
                return;
        if (synor__add_zone_raw(m, name, &id))
            c->bad = 1;
    }
}

static void restore_candles(synor_market *m, cur *c, mbook *k, int v2)
{
    uint64_t used = c64(c);
    for (uint64_t u = 0; u < used && !c->bad; u++) {
        uint64_t slot = c64(c);
        if (out_of_range(c, slot >= k->n_candles, "candle slot", slot))
            return;
        mcandle *q = &k->candles[slot];
        q->start = c64(c);
        q->open = (int64_t)c64(c);
        q->high = (int64_t)c64(c);
        q->low = (int64_t)c64(c);
        q->close = (int64_t)c64(c);
        q->volume = v2 ? (synor__u128)c64(c) : c128(c);
        q->notional = c128(c);
        if (out_of_range(c, !price_ok(q->low) || !price_ok(q->high) || !price_ok(q->open) ||
                                !price_ok(q->close),
                         "a candle price, the low one", (uint64_t)q->low) ||
            out_of_range(c, !q->volume || (v2 && q->volume > (synor__u128)INT64_MAX),
                         "candle volume", (uint64_t)q->volume))
            return;
    }
}

static void restore_orders(synor_market *m, cur *c, uint32_t idx)
{
    for (int s = 0; s < 2 && !c->bad; s++) {
        uint64_t cnt = c64(c);
        for (uint64_t i = 0; i < cnt && !c->bad; i++) {
            morder o;
            memset(&o, 0, sizeof o);
            o.id = c64(c);
            o.price = (int64_t)c64(c);
            o.qty = (int64_t)c64(c);
            o.expires = c64(c);
            o.duration = c64(c);
            o.zones = c64(c);
            uint64_t zone = c64(c), owner = c64(c), fl = c64(c);
            if (c->bad ||
                out_of_range(c, o.id == 0 || synor__map_get(m, o.id), "order id (0 or twice)",
                             o.id) ||
                out_of_range(c, !price_ok(o.price), "order price", (uint64_t)o.price) ||
                out_of_range(c, !qty_ok(o.qty), "order quantity", (uint64_t)o.qty) ||
                out_of_range(c, owner >= m->n_owners, "order owner", owner) ||
                out_of_range(c, zone > m->n_zones, "order zone", zone) ||
                out_of_range(c, (o.zones & ~(((uint64_t)2 << m->n_zones) - 2)) != 0,
                             "order zone set", o.zones) ||
                out_of_range(c, fl >> 24 || ((fl >> 16) & 0xff) > 100 || (fl & 0xff) > 1,
                             "order flags", fl))
                return;
            o.zone = (uint8_t)zone;
            o.owner = (uint32_t)owner;
            o.interruptible = (uint8_t)fl;
            o.priority = (uint8_t)(fl >> 8);
            o.min_rep = (uint8_t)(fl >> 16);
            o.resource = idx;
            o.side = (uint8_t)s;
            o.lvl = UINT32_MAX;
            uint32_t h = synor__pool_alloc(m);
            if (!h) {
                c->bad = 1;
                return;
            }
            m->pool[h] = o;
            if (synor__map_put(m, o.id, h) || synor__book_rest(m, h) ||
                (o.expires && synor__heap_push(m, o.expires, o.id))) {
                c->bad = 1;
                return;
            }
        }
    }
}

static void restore_books(synor_market *m, cur *c, int v2)
{
    char key[64];
    uint64_t nr = c64(c);
    for (uint64_t r = 0; r < nr && !c->bad; r++) {
        uint32_t idx;
        if (cname(c, key) ||
            out_of_range(c, synor_market_find_resource(m, key, &idx) == 0, "resource (twice)", r))
            return;
        if (synor__add_resource_raw(m, key, &idx)) {
            c->bad = 1;
            return;
        }
        mbook *k = &m->books[idx];
        uint64_t has_last = c64(c);
        k->has_last = has_last == 1;
        k->last_price = (int64_t)c64(c);
        k->last_qty = (int64_t)c64(c);
        k->last_time = c64(c);
        k->volume_total = v2 ? (synor__u128)c64(c) : c128(c);
        k->trades_total = c64(c);
        if (out_of_range(c, has_last > 1, "has_last", has_last) ||
            out_of_range(c, has_last && (!price_ok(k->last_price) || !qty_ok(k->last_qty)),
                         "last trade price", (uint64_t)k->last_price) ||
            out_of_range(c, !has_last && (k->trades_total || k->volume_total), "trade count",
                         k->trades_total) ||
            out_of_range(c, v2 && k->volume_total > (synor__u128)INT64_MAX, "volume",
                         (uint64_t)k->volume_total))
            return;
        restore_candles(m, c, k, v2);
        restore_orders(m, c, idx);
    }
}

static void restore_leases(synor_market *m, cur *c)
{
    m->next_lease = c64(c);
    uint64_t nl = c64(c);
    for (uint64_t i = 0; i < nl && !c->bad; i++) {
        if (m->n_leases == m->cap_leases) {
            uint32_t cap = m->cap_leases ? m->cap_leases * 2 : 64;
            mlease *v = synor__realloc(m->leases, (size_t)cap * sizeof *v);
            if (!v) {
                c->bad = 1;
                return;
            }
            m->leases = v;
            m->cap_leases = cap;
        }
        mlease l;
        memset(&l, 0, sizeof l);
        l.id = c64(c);
        l.deadline = c64(c);
        l.price = (int64_t)c64(c);
        l.qty = (int64_t)c64(c);
        uint64_t provider = c64(c), user = c64(c), res = c64(c);
        l.start = c64(c);
        l.end = c64(c);
        l.avail = c64(c);
        uint64_t fl = c64(c);
        if (c->bad || out_of_range(c, !price_ok(l.price), "lease price", (uint64_t)l.price) ||
            out_of_range(c, !qty_ok(l.qty), "lease quantity", (uint64_t)l.qty) ||
            out_of_range(c, provider >= m->n_owners || user >= m->n_owners, "lease owner",
                         provider) ||
            out_of_range(c, res >= m->n_res, "lease resource", res) ||
            out_of_range(c, l.id == 0 || l.id > m->next_lease, "lease id", l.id) ||
            out_of_range(c, fl >> 24 || ((fl >> 8) & 0xff) > 1 || ((fl >> 16) & 0xff) > m->n_zones,
                         "lease flags", fl))
            return;
        l.provider = (uint32_t)provider;
        l.user = (uint32_t)user;
        l.resource = (uint32_t)res;
        l.priority = (uint8_t)fl;
        l.migrated = (uint8_t)(fl >> 8);
        l.zone = (uint8_t)(fl >> 16);
        m->leases[m->n_leases++] = l;
    }
}

static void restore_used(synor_market *m, cur *c, int v2)
{
    if (v2) { /* version 2 kept no used ids: those of the open orders */
        for (uint32_t i = 0; i < m->map_cap && !c->bad; i++)
            if (m->map_vals[i] && synor__used_add(m, m->map_keys[i]))
                c->bad = 1;
        return;
    }
    uint64_t n = c64(c), prev = 0;
    for (uint64_t i = 0; i < n && !c->bad; i++) {
        uint64_t block = c64(c), bits = c64(c);
        if (c->bad || out_of_range(c, (i && block <= prev) || block > (UINT64_MAX >> 6) || !bits,
                                   "used-id block", block))
            return;
        prev = block;
        for (unsigned j = 0; j < 64 && !c->bad; j++)
            if ((bits >> j) & 1 && synor__used_add(m, block << 6 | j))
                c->bad = 1;
    }
    for (uint32_t i = 0; i < m->map_cap && !c->bad; i++)
        if (m->map_vals[i])
            out_of_range(c, !synor__used_has(m, m->map_keys[i]), "open order id not used",
                         m->map_keys[i]);
}

static int restore(synor_market *m, const unsigned char *p, size_t n, const char *path, int v2)
{
    cur c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.end = p + n;
    uint64_t seq = c64(&c), last_time = c64(&c), candle_ns = c64(&c);
    if (!c.bad && candle_ns != m->cfg.candle_ns)
        return synor__error(SYNOR_EINVAL, "%s: snapshot has candle interval %llu ns, the market "
                                          "is configured with %llu", path,
                            (unsigned long long)candle_ns, (unsigned long long)m->cfg.candle_ns);
    restore_names(m, &c);
    restore_books(m, &c, v2);
    restore_leases(m, &c);
    restore_used(m, &c, v2);
    out_of_range(&c, seq > SYNOR__MAX_SEQ, "sequence number", seq);
    if (c.bad || c.p != c.end)
        return synor__error(SYNOR_EPARSE, "%s: snapshot body is inconsistent%s%s", path,
                            c.why[0] ? ": " : "", c.why);
    m->seq = seq;
    m->last_time = last_time;
    int rc = synor__market_invariants(m);
    if (rc) {
        char why[400];
        synor__strlcpy(why, synor_errmsg(), sizeof why);
        return synor__error(SYNOR_EPARSE, "%s: snapshot is inconsistent: %s", path, why);
    }
    return 0;
}

int synor__snapshot_load(synor_market *m, const char *path)
{
    char *data;
    size_t len;
    int rc = synor__read_file(path, &data, &len);
    if (rc)
        return rc;
    const unsigned char *p = (const unsigned char *)data;
    if (len >= 8 && memcmp(p, "SYNSNAP1", 8) == 0) {
        synor__free(data);
        return synor__error(SYNOR_EPARSE, "%s: snapshot of an older format (SYNSNAP1, leases "
                                          "without terms); replay its journal with the version "
                                          "that wrote it", path);
    }
    int v2 = len >= 8 && memcmp(p, SNAP_MAGIC_V2, 8) == 0;
    uint64_t body = 0;
    for (int i = 7; len >= 20 && i >= 0; i--)
        body = body << 8 | p[8 + i];
    uint32_t crc = len >= 20 ? (uint32_t)p[16] | (uint32_t)p[17] << 8 | (uint32_t)p[18] << 16 |
                                   (uint32_t)p[19] << 24
                             : 0;
    if (len < 20 || (!v2 && memcmp(p, SNAP_MAGIC, 8) != 0) || body != len - 20 ||
        synor__crc32c(0, p + 20, len - 20) != crc) {
        synor__free(data);
        return synor__error(SYNOR_EPARSE, "%s: snapshot is damaged (bad header, length or CRC); "
                                          "refusing to start from it", path);
    }
    rc = restore(m, p + 20, len - 20, path, v2);
    synor__free(data);
    return rc;
}
