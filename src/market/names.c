/* names.c - the market's interned names: owners, resources (each with its
 * book) and provider zones. Each is registered once, journaled, and known
 * by its index from then on; a hash table finds owners and resources by
 * name in O(1) (zones, at most 63, are searched in order).
 *
 * A front end that registers the names a command needs together with it
 * (synor_market_submit_json) adds them first without journaling, and takes
 * them back (synor__name_pop) when the command is rejected: only the last
 * names added can be taken back, in reverse order. */
#include <string.h>

#include "market/market_internal.h"

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

/* ------------------------------------------------------- hash table */

/* Slot value: type bit (31: resource) | index + 1; 0 = empty. */
#define NAME_RES 0x80000000u

/* A hash of the name, eight bytes at a time: lookups run for every
 * command of a batch. */
static uint32_t name_hash(int res, const char *s, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n ^ (res ? 0x5bd1e995ull << 32 : 0);
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return (uint32_t)(h ^ h >> 32);
}

static const char *slot_name(const synor_market *m, uint32_t v)
{
    uint32_t i = (v & ~NAME_RES) - 1;
    return v & NAME_RES ? m->res_keys[i] : m->owner_names[i];
}

static size_t slot_len(const synor_market *m, uint32_t v)
{
    uint32_t i = (v & ~NAME_RES) - 1;
    return v & NAME_RES ? m->res_len[i] : m->owner_len[i];
}

int synor__name_find(const synor_market *m, int res, const char *s, size_t n, uint32_t *index)
{
    if (!m->names_cap)
        return -1;
    uint32_t mask = m->names_cap - 1, i = name_hash(res, s, n) & mask;
    for (uint32_t v; (v = m->names[i]); i = (i + 1) & mask)
        if (!(v & NAME_RES) == !res && slot_len(m, v) == n &&
            memcmp(slot_name(m, v), s, n) == 0) {
            *index = (v & ~NAME_RES) - 1;
            return 0;
        }
    return -1;
}

static void names_insert(uint32_t *t, uint32_t cap, uint32_t h, uint32_t v)
{
    uint32_t i = h & (cap - 1);
    while (t[i])
        i = (i + 1) & (cap - 1);
    t[i] = v;
}

/* Room for one more name. */
static int names_reserve(synor_market *m)
{
    if ((m->names_n + 1) * 2 <= m->names_cap)
        return 0;
    uint32_t cap = m->names_cap ? m->names_cap * 2 : 64;
    uint32_t *t = synor__calloc(cap, sizeof *t);
    if (!t)
        return synor__error(SYNOR_ENOMEM, "market: out of memory (names)");
    for (uint32_t i = 0; i < m->names_cap; i++)
        if (m->names[i]) {
            const char *k = slot_name(m, m->names[i]);
            names_insert(t, cap, name_hash(m->names[i] & NAME_RES, k, strlen(k)), m->names[i]);
        }
    synor__free(m->names);
    m->names = t;
    m->names_cap = cap;
    return 0;
}

/* Backward-shift deletion of the slot holding v. */
static void names_delete(synor_market *m, uint32_t v)
{
    uint32_t mask = m->names_cap - 1, i = 0;
    const char *k = slot_name(m, v);
    for (i = name_hash(v & NAME_RES, k, strlen(k)) & mask; m->names[i] != v; i = (i + 1) & mask)
        if (!m->names[i])
            return;
    m->names[i] = 0;
    m->names_n--;
    for (uint32_t j = (i + 1) & mask; m->names[j]; j = (j + 1) & mask) {
        const char *kj = slot_name(m, m->names[j]);
        uint32_t home = name_hash(m->names[j] & NAME_RES, kj, strlen(kj)) & mask;
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->names[i] = m->names[j];
            m->names[j] = 0;
            i = j;
        }
    }
}

/* ----------------------------------------------------- registration */

/* A copy of a name (at most 63 bytes) in 64 bytes: the event writer copies
 * names 64 bytes at a time, without a call. */
static char *name_dup(const char *s)
{
    size_t n = strlen(s);
    char *d = n < NAME_ROOM ? synor__calloc(1, NAME_ROOM) : NULL;
    if (d)
        memcpy(d, s, n);
    return d;
}

int synor__add_resource_raw(synor_market *m, const char *key, uint32_t *index)
{
    int rc = names_reserve(m);
    if (rc)
        return rc;
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
        uint8_t *l = synor__realloc(m->res_len, cap);
        if (!l)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        m->res_len = l;
        m->cap_res = cap;
    }
    char *dup = name_dup(key);
    if (!dup)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    rc = synor__book_init(&m->books[m->n_res], synor__n_candles(m));
    if (rc) {
        synor__free(dup);
        return rc;
    }
    m->res_keys[m->n_res] = dup;
    m->res_len[m->n_res] = (uint8_t)strlen(key);
    *index = m->n_res++;
    names_insert(m->names, m->names_cap, name_hash(1, key, strlen(key)), NAME_RES | m->n_res);
    m->names_n++;
    m->seq++;
    return 0;
}

int synor__add_owner_raw(synor_market *m, const char *name, uint32_t *id)
{
    int rc = names_reserve(m);
    if (rc)
        return rc;
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
        uint8_t *l = synor__realloc(m->owner_len, cap);
        if (!l)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        m->owner_len = l;
        m->cap_owners = cap;
    }
    char *dup = name_dup(name);
    if (!dup)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    m->owner_names[m->n_owners] = dup;
    m->owner_len[m->n_owners] = (uint8_t)strlen(name);
    m->owner_rep[m->n_owners] = 50;
    *id = m->n_owners++;
    names_insert(m->names, m->names_cap, name_hash(0, name, strlen(name)), m->n_owners);
    m->names_n++;
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

void synor__name_pop(synor_market *m, int type)
{
    if (type == SYNOR__REC_OWNER && m->n_owners) {
        names_delete(m, m->n_owners);
        synor__free(m->owner_names[--m->n_owners]);
    } else if (type == SYNOR__REC_RESOURCE && m->n_res) {
        names_delete(m, NAME_RES | m->n_res);
        synor__free(m->res_keys[--m->n_res]);
        synor__book_free(&m->books[m->n_res]);
    } else if (type == SYNOR__REC_ZONE && m->n_zones) {
        synor__free(m->zone_names[m->n_zones]);
        m->zone_names[m->n_zones--] = NULL;
    } else {
        return;
    }
    m->seq--;
}

void synor__names_free(synor_market *m)
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
    synor__free(m->owner_len);
    synor__free(m->res_len);
    synor__free(m->names);
}

/* ----------------------------------------------------------- lookup */

/* Registration through the API: in memory, then journaled and committed at
 * once (a caller may keep the index it gets); taken back if the journal
 * cannot take it. */
static int register_name(synor_market *m, int type, const char *name, uint32_t *id)
{
    if (m->read_only)
        return synor__error(SYNOR_ESTATE, "market: opened read-only");
    int rc = type == SYNOR__REC_OWNER      ? synor__add_owner_raw(m, name, id)
             : type == SYNOR__REC_RESOURCE ? synor__add_resource_raw(m, name, id)
                                           : synor__add_zone_raw(m, name, id);
    if (rc || !m->journal)
        return rc;
    rc = synor__journal_name_at(m, type, name, m->seq);
    if (rc) {
        synor__name_pop(m, type);
        return rc;
    }
    return synor_market_commit(m);
}

int synor__zone_find(const synor_market *m, const char *s, size_t n, uint32_t *id)
{
    for (uint32_t z = 1; z <= m->n_zones; z++)
        if (strncmp(m->zone_names[z], s, n) == 0 && m->zone_names[z][n] == '\0') {
            *id = z;
            return 0;
        }
    return -1;
}

int synor_market_zone(synor_market *m, const char *name, uint32_t *id)
{
    if (!m || !name || !id)
        return synor__error(SYNOR_EINVAL, "synor_market_zone: NULL argument");
    if (synor__zone_find(m, name, strlen(name), id) == 0)
        return 0;
    if (!synor__valid_name(name))
        return synor__error(SYNOR_EINVAL, "market: zone \"%s\" must be 1..63 printable "
                                          "characters without spaces or quotes", name);
    if (m->n_zones >= 63)
        return synor__error(SYNOR_ERANGE, "market: zone \"%s\": at most 63 zones", name);
    return register_name(m, SYNOR__REC_ZONE, name, id);
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
    if (synor__name_find(m, 1, key, strlen(key), index) == 0)
        return 0;
    return synor__error(SYNOR_ENOENT, "market: unknown resource \"%s\"", key);
}

int synor_market_find_owner(const synor_market *m, const char *name, uint32_t *id)
{
    if (synor__name_find(m, 0, name, strlen(name), id) == 0)
        return 0;
    return synor__error(SYNOR_ENOENT, "market: unknown owner \"%s\"", name);
}

int synor__resource_key_check(const synor_catalog *cat, const char *key)
{
    char kind[16], prof[64];
    const char *s1 = strchr(key, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (!synor__valid_name(key) || !s1 || !s2 || strchr(s2 + 1, '/') || s1 == key ||
        s2 == s1 + 1 || !s2[1] || (size_t)(s1 - key) >= sizeof kind ||
        (size_t)(s2 - s1 - 1) >= sizeof prof)
        return synor__error(SYNOR_EINVAL,
                            "market: resource \"%s\" is not <kind>/<profile-id>/<region>", key);
    memcpy(kind, key, (size_t)(s1 - key));
    kind[s1 - key] = '\0';
    memcpy(prof, s1 + 1, (size_t)(s2 - s1 - 1));
    prof[s2 - s1 - 1] = '\0';
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
    return 0;
}

int synor_market_resource(synor_market *m, const synor_catalog *cat, const char *key,
                          uint32_t *index)
{
    if (!m || !key || !index)
        return synor__error(SYNOR_EINVAL, "synor_market_resource: NULL argument");
    if (synor__name_find(m, 1, key, strlen(key), index) == 0)
        return 0;
    int rc = synor__resource_key_check(cat, key);
    return rc ? rc : register_name(m, SYNOR__REC_RESOURCE, key, index);
}

int synor_market_owner(synor_market *m, const char *name, uint32_t *id)
{
    if (!m || !name || !id)
        return synor__error(SYNOR_EINVAL, "synor_market_owner: NULL argument");
    if (synor__name_find(m, 0, name, strlen(name), id) == 0)
        return 0;
    if (!synor__valid_name(name))
        return synor__error(SYNOR_EINVAL, "market: owner \"%s\" must be 1..63 printable "
                                          "characters without spaces or quotes", name);
    return register_name(m, SYNOR__REC_OWNER, name, id);
}

const char *synor_market_resource_key(const synor_market *m, uint32_t i)
{
    return i < m->n_res ? m->res_keys[i] : NULL;
}

const char *synor_market_owner_name(const synor_market *m, uint32_t id)
{
    return id < m->n_owners ? m->owner_names[id] : NULL;
}
