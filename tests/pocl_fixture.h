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
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.opencl = SYNOR_OPENCL_ALL;
    cfg.cpu_workers = 1;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&cfg, &rt))
        return 0;
    synor_runtime_device_info info;
    int found = synor_runtime_host_opencl_device(rt, &info) != 0;
    if (found) {
        snprintf(name, 64, "%s", info.name);
        snprintf(product, 96, "%s", info.product);
    }
    synor_runtime_destroy(rt);
    return found;
}

#endif
