/* cl_internal.h - the runtime's state for one OpenCL device, shared by the
 * backend (src/runtime/cl_backend.c) and the library's OpenCL kernels
 * (src/kernels/opencl_ops.c). Never installed; only compiled with OpenCL. */
#ifndef SYNOR_CL_INTERNAL_H
#define SYNOR_CL_INTERNAL_H

#include <CL/cl.h>

#include "runtime/runtime_internal.h"

enum {
    SYNOR__CLK_SGEMM,
    SYNOR__CLK_DGEMM, /* only where the device has fp64 */
    SYNOR__CLK_RELU,
    SYNOR__CLK_GELU,
    SYNOR__CLK_SILU,
    SYNOR__CLK_COUNT
};

typedef struct synor__cl_dev {
    cl_platform_id platform;
    cl_device_id id;
    cl_context ctx;          /* shared by the platform's devices (one reference each) */
    int ctx_tried;           /* the platform's context was attempted */
    cl_command_queue queue;  /* kernels: the device's worker thread only */
    cl_command_queue xqueue; /* transfers: any thread (blocking calls) */
    cl_program prog[2];      /* fp32 and element-wise; fp64 */
    cl_kernel k[SYNOR__CLK_COUNT];
    int fp64;
    int unified;
    cl_ulong mem;
    char product[128];
    synor__device *dev;
} synor__cl_dev;

typedef struct synor__cl_state {
    unsigned n;
    synor__cl_dev d[SYNOR__MAX_DEVICES];
} synor__cl_state;

/* opencl_ops.c: builds the library's kernels for a device; 0 or an error
 * with the build log's first lines. */
int synor__cl_build(synor__cl_dev *cd);
void synor__cl_release(synor__cl_dev *cd);
const char *synor__cl_err(cl_int e);
/* An OpenCL call failed: the error for the task; a lost device is stopped
 * so that its tasks move elsewhere. */
int synor__cl_fail(synor__cl_dev *cd, const char *what, cl_int e);

#endif
