/* registry_internal.h - registering many devices at once (inventory.c).
 * Never installed. */
#ifndef SYNOR_REGISTRY_INTERNAL_H
#define SYNOR_REGISTRY_INTERNAL_H

#include <stddef.h>

#include "synor/registry.h"

typedef struct synor__registry_new {
    const char *id;
    synor_device *dev;                /* the registry takes its own reference */
    const synor_registry_info *info;  /* NULL: defaults */
} synor__registry_new;

/* Registers the n devices all or nothing, in O(n + registered): every id
 * and info is validated and checked against the registry and the other
 * ids, and all memory is reserved, before the registry changes. On failure
 * (an invalid or taken id, SYNOR_ENOMEM) *bad is the index of the device at
 * fault (n for memory) and the registry is unchanged. */
int synor__registry_add_all(synor_registry *reg, const synor__registry_new *v, size_t n,
                            size_t *bad);

#endif
