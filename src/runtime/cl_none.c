/* cl_none.c - the runtime's OpenCL backend when the library is built
 * without OpenCL: there are no OpenCL devices. */
#include "runtime/runtime_internal.h"

int synor__opencl_probe(synor_runtime *rt, unsigned *count)
{
    (void)rt;
    *count = 0;
    return 0;
}

void synor__opencl_init_device(synor_runtime *rt, unsigned k, synor__device *d, synor__node *n)
{
    (void)rt;
    (void)k;
    (void)d;
    (void)n;
}

void synor__opencl_destroy(synor_runtime *rt) { (void)rt; }

int synor__opencl_worker_begin(synor__worker *w)
{
    (void)w;
    return 0;
}
