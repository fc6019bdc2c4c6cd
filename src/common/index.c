/* index.c - the hash indexes of index.h. */
#include <string.h>

#include "common/common.h"
#include "common/index.h"

uint64_t synor__hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* A 64-bit mix (splitmix64's finalizer): keys built from small integers
 * would otherwise fill neighbouring slots. */
static uint64_t mix(uint64_t k)
{
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebull;
    return k ^ (k >> 31);
}

static size_t key_slot(const uint64_t *keys, const uint32_t *vals, size_t cap, uint64_t key)
{
    size_t mask = cap - 1, i = (size_t)mix(key) & mask;
    while (vals[i] && keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

int synor__keyindex_put(synor__keyindex *x, uint64_t key, uint32_t val)
{
    if ((x->n + 1) * 2 > x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        uint64_t *k = synor__calloc(cap, sizeof *k);
        uint32_t *v = synor__calloc(cap, sizeof *v);
        if (!k || !v) {
            synor__free(k);
            synor__free(v);
            return synor__error(SYNOR_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < x->cap; i++)
            if (x->vals[i]) {
                size_t s = key_slot(k, v, cap, x->keys[i]);
                k[s] = x->keys[i];
                v[s] = x->vals[i];
            }
        synor__free(x->keys);
        synor__free(x->vals);
        x->keys = k;
        x->vals = v;
        x->cap = cap;
    }
    size_t s = key_slot(x->keys, x->vals, x->cap, key);
    x->n += !x->vals[s];
    x->keys[s] = key;
    x->vals[s] = val + 1;
    return 0;
}

long synor__keyindex_get(const synor__keyindex *x, uint64_t key)
{
    if (!x->cap)
        return -1;
    size_t s = key_slot(x->keys, x->vals, x->cap, key);
    return x->vals[s] ? (long)x->vals[s] - 1 : -1;
}

void synor__keyindex_free(synor__keyindex *x)
{
    synor__free(x->keys);
    synor__free(x->vals);
    memset(x, 0, sizeof *x);
}

void synor__nameindex_init(synor__nameindex *x, const char *(*name_of)(const void *, uint32_t),
                           const void *owner)
{
    memset(x, 0, sizeof *x);
    x->name_of = name_of;
    x->owner = owner;
}

static size_t name_slot(const synor__nameindex *x, const uint32_t *slots, size_t cap,
                        const char *name)
{
    size_t mask = cap - 1, i = (size_t)synor__hash_str(name) & mask;
    while (slots[i] && strcmp(x->name_of(x->owner, slots[i] - 1), name) != 0)
        i = (i + 1) & mask;
    return i;
}

int synor__nameindex_put(synor__nameindex *x, uint32_t item)
{
    if ((x->n + 1) * 2 > x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        uint32_t *s = synor__calloc(cap, sizeof *s);
        if (!s)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        for (size_t i = 0; i < x->cap; i++)
            if (x->slots[i])
                s[name_slot(x, s, cap, x->name_of(x->owner, x->slots[i] - 1))] = x->slots[i];
        synor__free(x->slots);
        x->slots = s;
        x->cap = cap;
    }
    size_t i = name_slot(x, x->slots, x->cap, x->name_of(x->owner, item));
    x->n += !x->slots[i];
    x->slots[i] = item + 1;
    return 0;
}

long synor__nameindex_get(const synor__nameindex *x, const char *name)
{
    if (!x->cap)
        return -1;
    size_t i = name_slot(x, x->slots, x->cap, name);
    return x->slots[i] ? (long)x->slots[i] - 1 : -1;
}

void synor__nameindex_free(synor__nameindex *x)
{
    synor__free(x->slots);
    x->slots = NULL;
    x->cap = x->n = 0;
}
