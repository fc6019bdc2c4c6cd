/* llm_fixture.h - what the engine's tests share: a started runtime of n
 * CPU workers, unpinned, with no OpenCL or CUDA device (the engine's
 * kernels are CPU kernels; tests must not depend on the devices present). */
#ifndef SYNOR_LLM_FIXTURE_H
#define SYNOR_LLM_FIXTURE_H

#include "synor/runtime.h"

static inline synor_runtime *llm_test_runtime(unsigned workers)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = workers;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) || synor_runtime_start(rt)) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

#endif
