/* index.h - open-addressing hash indexes for the loaders that must scale
 * to thousands of items (fabrics, inventories): no deletion, grown at half
 * load, linear probing. Never installed.
 *
 * synor__keyindex maps a 64-bit key to a value (a 32-bit item index);
 * synor__nameindex maps a name to the index of the item that carries it,
 * without copying names: it asks the caller for an item's name (name_of),
 * so the items stay the one owner of their strings. */
#ifndef SYNOR_INDEX_H
#define SYNOR_INDEX_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a of a NUL-terminated string. */
uint64_t synor__hash_str(const char *s);

typedef struct synor__keyindex {
    uint64_t *keys;
    uint32_t *vals; /* value + 1; 0 marks an empty slot */
    size_t cap, n;
} synor__keyindex;

/* Adds or replaces key -> val (val < UINT32_MAX). 0 or SYNOR_ENOMEM (the
 * index unchanged). */
int synor__keyindex_put(synor__keyindex *x, uint64_t key, uint32_t val);
/* The value of key, or -1. */
long synor__keyindex_get(const synor__keyindex *x, uint64_t key);
void synor__keyindex_free(synor__keyindex *x);

typedef struct synor__nameindex {
    uint32_t *slots; /* item index + 1; 0 marks an empty slot */
    size_t cap, n;
    const char *(*name_of)(const void *owner, uint32_t item);
    const void *owner;
} synor__nameindex;

void synor__nameindex_init(synor__nameindex *x, const char *(*name_of)(const void *, uint32_t),
                           const void *owner);
/* Adds item (whose name is name_of(owner, item)); a name already present
 * is replaced. 0 or SYNOR_ENOMEM (the index unchanged). */
int synor__nameindex_put(synor__nameindex *x, uint32_t item);
/* The item named name, or -1. */
long synor__nameindex_get(const synor__nameindex *x, const char *name);
void synor__nameindex_free(synor__nameindex *x);

#endif
