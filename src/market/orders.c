/* orders.c - where the market keeps its orders: the pool of fixed-size
 * order records (32-bit handles, 0 = none, freed records reused), the
 * open-addressing id -> handle map (linear probing, backward-shift
 * deletion) and the expiry heap (by time, then id). book.c matches with
 * them; journal.c restores into them. */
#include <string.h>

#include "market/market_internal.h"

/* ---------------------------------------------------------------- pool */

uint32_t synor__pool_alloc(synor_market *m)
{
    if (m->free_head) {
        uint32_t h = m->free_head;
        m->free_head = m->pool[h].next;
        return h;
    }
    if (m->pool_n + 1 >= m->pool_cap) {
        uint32_t cap = m->pool_cap ? m->pool_cap * 2 : 1024;
        morder *p = synor__realloc(m->pool, (size_t)cap * sizeof *p);
        if (!p)
            return 0;
        m->pool = p;
        m->pool_cap = cap;
        if (m->pool_n == 0)
            m->pool_n = 1; /* handle 0 means none */
    }
    return m->pool_n++;
}

void synor__pool_free(synor_market *m, uint32_t h)
{
    m->pool[h].id = 0;
    m->pool[h].next = m->free_head;
    m->free_head = h;
}

/* ------------------------------------------------------------- id map */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int map_grow(synor_market *m)
{
    uint32_t cap = m->map_cap ? m->map_cap * 2 : 4096;
    uint64_t *k = synor__calloc(cap, sizeof *k);
    uint32_t *v = synor__calloc(cap, sizeof *v);
    if (!k || !v) {
        synor__free(k);
        synor__free(v);
        return synor__error(SYNOR_ENOMEM, "market: out of memory growing the order index");
    }
    for (uint32_t i = 0; i < m->map_cap; i++) {
        if (!m->map_vals[i])
            continue;
        uint32_t j = (uint32_t)mix(m->map_keys[i]) & (cap - 1);
        while (v[j])
            j = (j + 1) & (cap - 1);
        k[j] = m->map_keys[i];
        v[j] = m->map_vals[i];
    }
    synor__free(m->map_keys);
    synor__free(m->map_vals);
    m->map_keys = k;
    m->map_vals = v;
    m->map_cap = cap;
    return 0;
}

int synor__map_put(synor_market *m, uint64_t id, uint32_t h)
{
    if ((m->map_n + 1) * 2 > m->map_cap) {
        int rc = map_grow(m);
        if (rc)
            return rc;
    }
    uint32_t mask = m->map_cap - 1, i = (uint32_t)mix(id) & mask;
    while (m->map_vals[i])
        i = (i + 1) & mask;
    m->map_keys[i] = id;
    m->map_vals[i] = h;
    m->map_n++;
    return 0;
}

uint32_t synor__map_get(const synor_market *m, uint64_t id)
{
    if (!m->map_cap)
        return 0;
    uint32_t mask = m->map_cap - 1, i = (uint32_t)mix(id) & mask;
    while (m->map_vals[i]) {
        if (m->map_keys[i] == id)
            return m->map_vals[i];
        i = (i + 1) & mask;
    }
    return 0;
}

/* Deletion by backward shift: no tombstones, so probes stay short. */
void synor__map_del(synor_market *m, uint64_t id)
{
    uint32_t mask = m->map_cap - 1, i = (uint32_t)mix(id) & mask;
    while (m->map_vals[i] && m->map_keys[i] != id)
        i = (i + 1) & mask;
    if (!m->map_vals[i])
        return;
    m->map_vals[i] = 0;
    m->map_n--;
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->map_vals[j])
            return;
        uint32_t home = (uint32_t)mix(m->map_keys[j]) & mask;
        /* move j into the hole i if its home is not in (i, j] cyclically */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->map_keys[i] = m->map_keys[j];
            m->map_vals[i] = m->map_vals[j];
            m->map_vals[j] = 0;
            i = j;
        }
    }
}

/* ------------------------------------------------------- expiry heap */

int synor__heap_push(synor_market *m, uint64_t t, uint64_t id)
{
    if (m->heap_n == m->heap_cap) {
        uint32_t cap = m->heap_cap ? m->heap_cap * 2 : 256;
        mexpiry *h = synor__realloc(m->heap, (size_t)cap * sizeof *h);
        if (!h)
            return synor__error(SYNOR_ENOMEM, "market: out of memory (expiry heap)");
        m->heap = h;
        m->heap_cap = cap;
    }
    uint32_t i = m->heap_n++;
    /* ties broken by id so expiry order is deterministic */
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (m->heap[p].t < t || (m->heap[p].t == t && m->heap[p].id < id))
            break;
        m->heap[i] = m->heap[p];
        i = p;
    }
    m->heap[i].t = t;
    m->heap[i].id = id;
    return 0;
}

void synor__heap_pop(synor_market *m)
{
    mexpiry last = m->heap[--m->heap_n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= m->heap_n)
            break;
        if (c + 1 < m->heap_n &&
            (m->heap[c + 1].t < m->heap[c].t ||
             (m->heap[c + 1].t == m->heap[c].t && m->heap[c + 1].id < m->heap[c].id)))
            c++;
        if (last.t < m->heap[c].t || (last.t == m->heap[c].t && last.id < m->heap[c].id))
            break;
        m->heap[i] = m->heap[c];
        i = c;
    }
    if (m->heap_n)
        m->heap[i] = last;
}


/* ------------------------------------------------------- used ids */

/* Every id a command was accepted under (a place's order id, another
 * command's ref), for good: a set of 64-id blocks, each a bitmap, in an
 * open-addressing table keyed by id / 64 + 1 (0 = empty slot). Clients
 * number their orders in sequence, so most ids fill the same few blocks:
 * about a bit per id; scattered ids cost a block each. */

static uint32_t used_slot(const synor_market *m, uint64_t key)
{
    uint32_t mask = m->used_cap - 1, i = (uint32_t)mix(key) & mask;
    while (m->used_keys[i] && m->used_keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

int synor__used_has(const synor_market *m, uint64_t id)
{
    if (!m->used_cap)
        return 0;
    uint32_t i = used_slot(m, (id >> 6) + 1);
    return m->used_keys[i] && (m->used_bits[i] >> (id & 63)) & 1;
}

int synor__used_reserve(synor_market *m)
{
    if ((m->used_n + 1) * 2 <= m->used_cap)
        return 0;
    uint32_t cap = m->used_cap ? m->used_cap * 2 : 1024;
    if (!cap)
        return synor__error(SYNOR_ENOMEM, "market: too many ids");
    uint64_t *k = synor__calloc(cap, sizeof *k), *b = synor__calloc(cap, sizeof *b);
    if (!k || !b) {
        synor__free(k);
        synor__free(b);
        return synor__error(SYNOR_ENOMEM, "market: out of memory (used ids)");
    }
    for (uint32_t i = 0; i < m->used_cap; i++) {
        if (!m->used_keys[i])
            continue;
        uint32_t j = (uint32_t)mix(m->used_keys[i]) & (cap - 1);
        while (k[j])
            j = (j + 1) & (cap - 1);
        k[j] = m->used_keys[i];
        b[j] = m->used_bits[i];
    }
    synor__free(m->used_keys);
    synor__free(m->used_bits);
    m->used_keys = k;
    m->used_bits = b;
    m->used_cap = cap;
    return 0;
}

int synor__used_add(synor_market *m, uint64_t id)
{
    int rc = synor__used_reserve(m);
    if (rc)
        return rc;
    uint64_t key = (id >> 6) + 1;
    uint32_t i = used_slot(m, key);
    if (!m->used_keys[i]) {
        m->used_keys[i] = key;
        m->used_bits[i] = 0;
        m->used_n++;
    }
    m->used_bits[i] |= 1ull << (id & 63);
    return 0;
}
