/* pocl_fixture.h - what the shared-core tests share: this machine's first
 * OpenCL device on the host's CPU (PoCL), as a runtime names it. */
#ifndef SYNOR_POCL_FIXTURE_H
#define SYNOR_POCL_FIXTURE_H

#include <stdio.h>

#include "synor/runtime.h"

/* Its runtime name (name[64]) and product (product[96]); 0 when there is
 * none (the caller skips). */
static inline int test_pocl_device(char *name, char *product)
{
    return synor_runtime_find_host_opencl(1, name, 64, product, 96);
}

#endif
