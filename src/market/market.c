/* market.c - the market object: resources and owners (interned, journaled),
 * command submission (validate time, journal, expire, match), the canonical
 * state serialization behind the state hash and snapshots, and price
 * discovery (best bid/ask, spread, depth, last trade, VWAP, OHLC, volume). */
#include <stdio.h>
#include <string.h>

#include "market/market_internal.h"

static const char *const reason_names[] = {
#define SYNOR__MR_NAME(n, v, d) [v] = #n,
    SYNOR_MARKET_REASON_MAP(SYNOR__MR_NAME)
#undef SYNOR__MR_NAME
};
static const char *const reason_texts[] = {
#define SYNOR__MR_TEXT(n, v, d) [v] = d,
    SYNOR_MARKET_REASON_MAP(SYNOR__MR_TEXT)
#undef SYNOR__MR_TEXT
};

const char *synor_market_reason_name(int r)
{
    return r >= 0 && (size_t)r < SYNOR__ARRAY_LEN(reason_names) && reason_names[r] ? reason_names[r]
                                                                                  : "UNKNOWN";
}

const char *synor_market_reason_text(int r)
{
    return r >= 0 && (size_t)r < SYNOR__ARRAY_LEN(reason_texts) && reason_texts[r] ? reason_texts[r]
                                                                                  : "unknown";
}

void synor_market_config_init(synor_market_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->fsync = SYNOR_FSYNC_BATCH;
    cfg->candle_ns = 60ull * 1000000000ull;
    cfg->preempt_warning_ns = 120ull * 1000000000ull;
    cfg->snapshot_every = 1000000;
}

void synor__emit(synor_market *m, const synor_market_event *ev)
{
    synor_market_event e = *ev;
    e.market = m;
    m->cfg.on_event(&e, m->cfg.user_data);
}

uint32_t synor__n_candles(const synor_market *m)
{
    uint64_t n = SYNOR__DAY_NS / m->cfg.candle_ns + 1;
    return (uint32_t)(n > 100000 ? 100000 : n);
}

static void market_free(synor_market *m)
{
    for (uint32_t i = 0; i < m->n_res; i++) {
        synor__free(m->res_keys[i]);
        synor__book_free(&m->books[i]);
    }
    for (uint32_t i = 0; i < m->n_owners; i++)
        synor__free(m->owner_names[i]);
    for (uint32_t z = 1; z <= m->n_zones; z++)
        synor__free(m->zone_names[z]);
    synor__free(m->res_keys);
    synor__free(m->books);
    synor__free(m->owner_names);
    synor__free(m->owner_rep);
    synor__free(m->pool);
    synor__free(m->map_keys);
    synor__free(m->map_vals);
    synor__free(m->heap);
    synor__free(m->used_keys);
    synor__free(m->used_bits);
    synor__free(m->leases);
    synor__free(m->dir);
    synor__free(m);
}

int synor_market_open(const synor_market_config *cfg, synor_market **out)
{
    if (!cfg || !out)
        return synor__error(SYNOR_EINVAL, "synor_market_open: NULL argument");
    if (cfg->candle_ns < 1000000ull)
        return synor__error(SYNOR_EINVAL, "market: candle interval %llu ns is below 1 ms",
                            (unsigned long long)cfg->candle_ns);
    if (cfg->interruptible_discount_bp > 10000)
        return synor__error(SYNOR_EINVAL, "market: interruptible discount %u bp is above 10000",
                            cfg->interruptible_discount_bp);
    if ((unsigned)cfg->fsync > SYNOR_FSYNC_EVERY)
        return synor__error(SYNOR_EINVAL, "market: unknown fsync policy %d", (int)cfg->fsync);
    if (cfg->read_only && !cfg->dir)
        return synor__error(SYNOR_EINVAL, "market: read_only needs a directory");
    synor_market *m = synor__calloc(1, sizeof *m);
    if (!m)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    m->cfg = *cfg;
    m->read_only = cfg->read_only != 0;
    if (cfg->dir) {
        m->dir = synor__strdup(cfg->dir);
        if (!m->dir) {
            market_free(m);
            return synor__error(SYNOR_ENOMEM, "out of memory");
        }
        int rc = synor__journal_open(m); /* restores snapshot + journal */
        if (rc) {
            synor__journal_close(m);
            market_free(m);
            return rc;
        }
    }
    *out = m;
    return 0;
}

void synor_market_close(synor_market *m)
{
    if (!m)
        return;
    if (m->journal) {
        synor__journal_commit(m);
        synor__journal_close(m);
    }
    market_free(m);
}

const char *synor_market_recovery_note(const synor_market *m) { return m->note; }

/* Length of the valid UTF-8 sequence at p (NUL-terminated), 0 if none. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned c = p[0], min;
    size_t n;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) {
        n = 2, min = 0x80, c &= 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3, min = 0x800, c &= 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4, min = 0x10000, c &= 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) /* a NUL ends here too */
            return 0;
        c = c << 6 | (p[i] & 0x3f);
    }
    return c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) ? 0 : n;
}

int synor__valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p <= ' ' || *p == 0x7f || *p == '"' || *p == '\\')
            return 0;
        size_t k = utf8_len(p);
        if (!k)
            return 0;
        p += k;
    }
    return 1;
}

int synor__add_resource_raw(synor_market *m, const char *key, uint32_t *index)
{
    if (m->n_res == m->cap_res) {
        uint32_t cap = m->cap_res ? m->cap_res * 2 : 8;
        char **k = synor__realloc(m->res_keys, cap * sizeof *k);
        if (!k)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        m->res_keys = k;
        mbook *b = synor__realloc(m->books, cap * sizeof *b);
        if (!b)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        m->books = b;
        m->cap_res = cap;
    }
    char *dup = synor__strdup(key);
    if (!dup)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    int rc = synor__book_init(&m->books[m->n_res], synor__n_candles(m));
    if (rc) {
        synor__free(dup);
        return rc;
    }
    m->res_keys[m->n_res] = dup;
    *index = m->n_res++;
    m->seq++;
    return 0;
}

int synor__add_owner_raw(synor_market *m, const char *name, uint32_t *id)
{
    if (m->n_owners == m->cap_owners) {
        uint32_t cap = m->cap_owners ? m->cap_owners * 2 : 16;
        char **n = synor__realloc(m->owner_names, cap * sizeof *n);
        if (!n)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        m->owner_names = n;
        uint8_t *r = synor__realloc(m->owner_rep, cap);
        if (!r)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        m->owner_rep = r;
        m->cap_owners = cap;
    }
    char *dup = synor__strdup(name);
    if (!dup)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    m->owner_names[m->n_owners] = dup;
    m->owner_rep[m->n_owners] = 50;
    *id = m->n_owners++;
    m->seq++;
    return 0;
}

int synor__add_zone_raw(synor_market *m, const char *name, uint32_t *id)
{
    if (m->n_zones >= 63)
        return synor__error(SYNOR_ERANGE, "market: at most 63 zones");
    char *dup = synor__strdup(name);
    if (!dup)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    m->zone_names[++m->n_zones] = dup;
    *id = m->n_zones;
    m->seq++;
    return 0;
}

int synor_market_zone(synor_market *m, const char *name, uint32_t *id)
{
    if (!m || !name || !id)
        return synor__error(SYNOR_EINVAL, "synor_market_zone: NULL argument");
    for (uint32_t z = 1; z <= m->n_zones; z++)
        if (strcmp(m->zone_names[z], name) == 0) {
            *id = z;
            return 0;
        }
    if (!synor__valid_name(name))
        return synor__error(SYNOR_EINVAL, "market: zone \"%s\" must be 1..63 printable "
                                          "characters without spaces or quotes", name);
    if (m->n_zones >= 63)
        return synor__error(SYNOR_ERANGE, "market: zone \"%s\": at most 63 zones", name);
    int rc = synor__journal_name(m, SYNOR__REC_ZONE, name);
    if (rc)
        return rc;
    return synor__add_zone_raw(m, name, id);
}

const char *synor_market_zone_name(const synor_market *m, uint32_t id)
{
    return id >= 1 && id <= m->n_zones ? m->zone_names[id] : NULL;
}

int synor__same_offer(const synor_market *m, uint32_t a, uint32_t b)
{
    const char *ka = m->res_keys[a], *kb = m->res_keys[b];
    const char *ra = strrchr(ka, '/'), *rb = strrchr(kb, '/');
    return ra && rb && ra - ka == rb - kb && !memcmp(ka, kb, (size_t)(ra - ka));
}

int synor_market_find_resource(const synor_market *m, const char *key, uint32_t *index)
{
    for (uint32_t i = 0; i < m->n_res; i++)
        if (strcmp(m->res_keys[i], key) == 0) {
            *index = i;
            return 0;
        }
    return synor__error(SYNOR_ENOENT, "market: unknown resource \"%s\"", key);
}

int synor_market_find_owner(const synor_market *m, const char *name, uint32_t *id)
{
    for (uint32_t i = 0; i < m->n_owners; i++)
        if (strcmp(m->owner_names[i], name) == 0) {
            *id = i;
            return 0;
        }
    return synor__error(SYNOR_ENOENT, "market: unknown owner \"%s\"", name);
}

int synor_market_resource(synor_market *m, const synor_catalog *cat, const char *key,
                          uint32_t *index)
{
    if (!m || !key || !index)
        return synor__error(SYNOR_EINVAL, "synor_market_resource: NULL argument");
    if (synor_market_find_resource(m, key, index) == 0)
        return 0;
    char kind[16], prof[64], region[64];
    const char *s1 = strchr(key, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (!synor__valid_name(key) || !s1 || !s2 || strchr(s2 + 1, '/') || s1 == key || s2 == s1 + 1 ||
        !s2[1] || (size_t)(s1 - key) >= sizeof kind || (size_t)(s2 - s1 - 1) >= sizeof prof)
        return synor__error(SYNOR_EINVAL,
                            "market: resource \"%s\" is not <kind>/<profile-id>/<region>", key);
    memcpy(kind, key, (size_t)(s1 - key));
    kind[s1 - key] = '\0';
    memcpy(prof, s1 + 1, (size_t)(s2 - s1 - 1));
    prof[s2 - s1 - 1] = '\0';
    synor__strlcpy(region, s2 + 1, sizeof region);
    synor_kind k;
    if (synor_kind_from_name(kind, &k))
        return synor__error(SYNOR_EINVAL, "market: resource \"%s\": unknown kind \"%s\"", key,
                            kind);
    const synor_profile *p = cat ? synor_catalog_find(cat, prof) : NULL;
    if (!p)
        return synor__error(SYNOR_ENOENT, "market: resource \"%s\": no profile \"%s\" in the "
                                          "catalog", key, prof);
    if (p->type.kind != k)
        return synor__error(SYNOR_EINVAL, "market: resource \"%s\": profile %s is a %s, not a %s",
                            key, prof, synor_kind_name(p->type.kind), kind);
    int rc = synor__journal_name(m, SYNOR__REC_RESOURCE, key);
    if (rc)
        return rc;
    return synor__add_resource_raw(m, key, index);
}

int synor_market_owner(synor_market *m, const char *name, uint32_t *id)
{
    if (!m || !name || !id)
        return synor__error(SYNOR_EINVAL, "synor_market_owner: NULL argument");
    if (synor_market_find_owner(m, name, id) == 0)
        return 0;
    if (!synor__valid_name(name))
        return synor__error(SYNOR_EINVAL, "market: owner \"%s\" must be 1..63 printable "
                                          "characters without spaces or quotes", name);
    int rc = synor__journal_name(m, SYNOR__REC_OWNER, name);
    if (rc)
        return rc;
    return synor__add_owner_raw(m, name, id);
}

const char *synor_market_resource_key(const synor_market *m, uint32_t i)
{
    return i < m->n_res ? m->res_keys[i] : NULL;
}

const char *synor_market_owner_name(const synor_market *m, uint32_t id)
{
    return id < m->n_owners ? m->owner_names[id] : NULL;
}

/* Journals (when durable) and applies a command synor__cmd_check accepted.
 * Nothing in a command can fail once it is checked but memory: then its
 * record is taken back out of the journal's batch, so the journal holds
 * exactly the commands before it, and the market refuses further commands
 * (its memory may hold part of this one) until it is reopened. */
static int apply_checked(synor_market *m, const synor_market_cmd *c)
{
    int journaled = m->journal && !m->replaying;
    synor__jmark mark = {0, 0};
    if (journaled) {
        mark = synor__journal_mark(m);
        int rc = synor__journal_cmd(m, c);
        if (rc)
            return rc; /* nothing changed */
    }
    /* the command's id is used from now on (room made first: nothing has
     * changed yet if there is none) */
    uint64_t id = c->kind == SYNOR_CMD_PLACE ? c->order_id : c->ref;
    if (id) {
        int rc = synor__used_reserve(m);
        if (rc) {
            if (journaled)
                synor__journal_rewind(m, mark);
            return rc;
        }
        synor__used_add(m, id);
    }
    m->cur_seq = m->seq + 1;
    m->cur_time = c->time;
    m->seq++;
    m->last_time = c->time;
    synor__market_expire(m, c->time);
    int rc = synor__book_apply(m, c);
    if (rc) {
        if (journaled)
            synor__journal_rewind(m, mark);
        m->broken = 1;
        return rc;
    }
    if (journaled && m->cfg.fsync == SYNOR_FSYNC_EVERY)
        return synor_market_commit(m);
    return 0;
}

int synor_market_submit(synor_market *m, const synor_market_cmd *c)
{
    if (!m || !c)
        return synor__error(SYNOR_EINVAL, "synor_market_submit: NULL argument");
    if (m->broken)
        return synor__error(SYNOR_ESTATE, "market: an earlier command or commit failed; close "
                                          "and reopen the market (recovery restores the state "
                                          "of the journal)");
    if (m->read_only)
        return synor__error(SYNOR_ESTATE, "market: opened read-only");
    m->cur_seq = 0;
    m->cur_time = c->time;
    int why = synor__cmd_check(m, c);
    if (why)
        return synor__reject(m, c, why); /* changes nothing, journals nothing */
    return apply_checked(m, c);
}

int synor__replay_cmd(synor_market *m, const synor_market_cmd *c)
{
    int why = synor__cmd_check(m, c);
    if (why == SYNOR_REASON_TIME_BACKWARDS)
        return synor__error(SYNOR_EPARSE, "market journal: a command of time %llu after one of "
                                          "time %llu", (unsigned long long)c->time,
                            (unsigned long long)m->last_time);
    if (!why)
        return apply_checked(m, c);
    if (!m->legacy)
        return synor__error(SYNOR_EPARSE, "a journaled command (kind %d, seq %llu) is rejected "
                                          "now (%s): this journal was not written by these "
                                          "rules", (int)c->kind,
                            (unsigned long long)(m->seq + 1), synor_market_reason_name(why));
    /* journals of version 1 hold rejected commands: such a record keeps the
     * sequence number and the time it took then, so that the records after
     * it still follow */
    m->cur_seq = m->seq + 1;
    m->cur_time = c->time;
    m->seq++;
    m->last_time = c->time;
    synor__market_expire(m, c->time);
    return synor__reject(m, c, why);
}

int synor_market_commit(synor_market *m)
{
    if (!m)
        return synor__error(SYNOR_EINVAL, "synor_market_commit: NULL market");
    if (!m->journal)
        return 0;
    if (m->broken)
        return synor__error(SYNOR_ESTATE, "market: an earlier commit failed; close and reopen "
                                          "the market");
    int rc = synor__journal_commit(m);
    if (!rc)
        rc = synor__journal_maybe_snapshot(m);
    if (rc == SYNOR_EIO)
        m->broken = 1; /* a write may have been partial: never append after it */
    return rc;
}

int synor_market_snapshot(synor_market *m)
{
    if (!m)
        return synor__error(SYNOR_EINVAL, "synor_market_snapshot: NULL market");
    if (!m->journal)
        return synor__error(SYNOR_ESTATE, "market: an in-memory market has no snapshots");
    if (m->read_only || m->broken)
        return synor__error(SYNOR_ESTATE, "market: %s", m->read_only ? "opened read-only"
                                                                     : "an earlier write failed");
    return synor__journal_snapshot(m);
}

uint64_t synor_market_seq(const synor_market *m) { return m->seq; }
uint64_t synor_market_time(const synor_market *m) { return m->last_time; }
size_t synor_market_open_orders(const synor_market *m) { return m->open_orders; }

/* ------------------------------------------------- canonical state */

uint64_t synor_market_state_hash(const synor_market *m)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__market_serialize(m, &b);
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64 */
    for (size_t i = 0; i < b.len; i++)
        h = (h ^ (unsigned char)b.data[i]) * 1099511628211ull;
    if (b.failed)
        h = 0;
    synor__buf_free(&b);
    return h;
}

/* ------------------------------------------------- price discovery */

/* A level's total quantity: added up here, 128-bit, not kept by the book. */
static synor__u128 level_qty(const synor_market *m, const mlevel *L)
{
    synor__u128 q = 0;
    for (uint32_t h = L->head; h; h = m->pool[h].next)
        q += (synor__u128)m->pool[h].qty;
    return q;
}

int synor_market_prices_get(const synor_market *m, uint32_t r, synor_market_prices *out)
{
    if (!m || !out || r >= m->n_res)
        return synor__error(SYNOR_EINVAL, "market: resource index %u out of range", r);
    const mbook *k = &m->books[r];
    memset(out, 0, sizeof *out);
    for (int s = 0; s < 2; s++) {
        const mside *sd = &k->side[s];
        uint32_t i = sd->n;
        while (i > 0 && sd->v[i - 1].count == 0) /* skip emptied levels */
            i--;
        if (!i)
            continue;
        int64_t qty = synor__sat64(level_qty(m, &sd->v[i - 1]));
        if (s == SYNOR_BID) {
            out->has_bid = 1;
            out->best_bid = sd->v[i - 1].price;
            out->bid_qty = qty;
        } else {
            out->has_ask = 1;
            out->best_ask = sd->v[i - 1].price;
            out->ask_qty = qty;
        }
    }
    if (out->has_bid && out->has_ask)
        out->spread = out->best_ask - out->best_bid;
    out->has_last = k->has_last;
    out->last_price = k->last_price;
    out->last_qty = k->last_qty;
    out->last_time = k->last_time;
    out->volume_total = synor__sat64(k->volume_total);
    out->trades_total = k->trades_total;
    uint64_t from = m->last_time > SYNOR__DAY_NS ? m->last_time - SYNOR__DAY_NS : 0;
    synor__u128 notional = 0, vol = 0;
    for (uint32_t c = 0; c < k->n_candles; c++) {
        const mcandle *q = &k->candles[c];
        if (q->volume && q->start + m->cfg.candle_ns > from) {
            vol = synor__add_sat(vol, q->volume);
            notional = synor__add_sat(notional, q->notional);
        }
    }
    out->volume_24h = synor__sat64(vol);
    /* rounded to nearest; a saturated notional (beyond 2^128) is not exact */
    out->vwap_24h = vol ? synor__sat64(synor__add_sat(notional, vol / 2) / vol) : 0;
    return 0;
}

int synor_market_depth(const synor_market *m, uint32_t r, synor_level *bids, size_t *n_bids,
                       synor_level *asks, size_t *n_asks, size_t max)
{
    if (!m || r >= m->n_res)
        return synor__error(SYNOR_EINVAL, "market: resource index %u out of range", r);
    synor_level *outs[2] = {bids, asks};
    size_t *ns[2] = {n_bids, n_asks};
    for (int s = 0; s < 2; s++) {
        const mside *sd = &m->books[r].side[s];
        size_t k = 0;
        for (uint32_t l = sd->n; l-- > 0 && k < max;) {
            if (sd->v[l].count == 0)
                continue;
            outs[s][k].price = sd->v[l].price;
            outs[s][k].qty = synor__sat64(level_qty(m, &sd->v[l]));
            outs[s][k].orders = sd->v[l].count;
            k++;
        }
        *ns[s] = k;
    }
    return 0;
}

int synor_market_candles(const synor_market *m, uint32_t r, synor_candle *out, size_t max,
                         size_t *n)
{
    if (!m || r >= m->n_res || !n)
        return synor__error(SYNOR_EINVAL, "market: resource index %u out of range", r);
    const mbook *k = &m->books[r];
    uint64_t from = m->last_time > SYNOR__DAY_NS ? m->last_time - SYNOR__DAY_NS : 0;
    size_t got = 0;
    /* walk intervals oldest first */
    uint64_t first = from / m->cfg.candle_ns, last = m->last_time / m->cfg.candle_ns;
    for (uint64_t iv = first; iv <= last && got < max; iv++) {
        const mcandle *q = &k->candles[iv % k->n_candles];
        if (!q->volume || q->start != iv * m->cfg.candle_ns)
            continue;
        out[got].start = q->start;
        out[got].open = q->open;
        out[got].high = q->high;
        out[got].low = q->low;
        out[got].close = q->close;
        out[got].volume = synor__sat64(q->volume);
        got++;
    }
    *n = got;
    return 0;
}

int synor_market_order_get(const synor_market *m, uint64_t id, synor_market_order *out)
{
    uint32_t h = m ? synor__map_get(m, id) : 0;
    if (!h)
        return synor__error(SYNOR_ENOENT, "market: no open order %llu", (unsigned long long)id);
    const morder *o = &m->pool[h];
    out->id = o->id;
    out->owner = o->owner;
    out->resource = o->resource;
    out->side = (synor_side)o->side;
    out->price = o->price;
    out->qty = o->qty;
    out->expires = o->expires;
    out->interruptible = o->interruptible;
    return 0;
}

int synor_market_orders(const synor_market *m, uint32_t r, synor_side side, synor_market_order *out,
                        size_t max, size_t *n)
{
    if (!m || r >= m->n_res || (unsigned)side > 1 || !n)
        return synor__error(SYNOR_EINVAL, "market: resource index %u or side out of range", r);
    const mside *sd = &m->books[r].side[side];
    size_t k = 0;
    for (uint32_t l = sd->n; l-- > 0 && k < max;)
        for (uint32_t h = sd->v[l].head; h && k < max; h = m->pool[h].next) {
            const morder *o = &m->pool[h];
            out[k].id = o->id;
            out[k].owner = o->owner;
            out[k].resource = o->resource;
            out[k].side = (synor_side)o->side;
            out[k].price = o->price;
            out[k].qty = o->qty;
            out[k].expires = o->expires;
            out[k].interruptible = o->interruptible;
            k++;
        }
    *n = k;
    return 0;
}
