/* fabric_internal.h - what fabric.c lends the other files of src/fabric
 * (share.c). Never installed. */
#ifndef SYNOR_FABRIC_INTERNAL_H
#define SYNOR_FABRIC_INTERNAL_H

#include "synor/fabric.h"

/* Device i, writable; NULL for a bad index or fabric. */
synor_fabric_device *synor__fabric_device_mut(synor_fabric *f, size_t i);

#endif
