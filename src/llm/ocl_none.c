/* ocl_none.c - a build without OpenCL: no context asks for OpenCL layers
 * (synor__llm_ocl_find refuses first), so the rest is never reached. */
#include "common/common.h"
#include "llm/llm_ctx.h"

int synor__llm_ocl_find(synor_llm_ctx *c, unsigned which, struct synor_device_native *nat,
                        uint64_t *capacity)
{
    (void)c;
    (void)nat;
    (void)capacity;
    return synor__error(SYNOR_ENOTSUP,
                        "synor_llm_ctx_create: GPU layers asked on OpenCL device %u, but this "
                        "build has no OpenCL (install ocl-icd-opencl-dev and rebuild)",
                        which);
}

int synor__llm_ocl_open(synor_llm_ctx *c, const struct synor_device_native *nat, int nl, int first,
                        const int shape[][2], synor_llm_gpu_info *info, llm_ocl **out)
{
    (void)c;
    (void)nat;
    (void)nl;
    (void)first;
    (void)shape;
    (void)info;
    (void)out;
    return SYNOR_ENOTSUP;
}

void synor__llm_ocl_close(llm_ocl *o) { (void)o; }

int synor__llm_ocl_matmul(llm_ocl *o, int which, int layer, int n, const float *x, float *y,
                          uint64_t *last)
{
    (void)o;
    (void)which;
    (void)layer;
    (void)n;
    (void)x;
    (void)y;
    (void)last;
    return SYNOR_ENOTSUP;
}
