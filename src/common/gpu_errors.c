/* gpu_errors.c - names of OpenCL error codes, for messages of the runtime's
 * OpenCL backend and of the library's OpenCL kernels. The codes are the
 * OpenCL specification's, written out so that this file builds without
 * OpenCL headers. */
#include "common/common.h"

const char *synor__cl_error_name(int e)
{
    switch (e) {
    case 0: return "CL_SUCCESS";
    case -2: return "CL_DEVICE_NOT_AVAILABLE";
    case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case -5: return "CL_OUT_OF_RESOURCES";
    case -6: return "CL_OUT_OF_HOST_MEMORY";
    case -11: return "CL_BUILD_PROGRAM_FAILURE";
    case -30: return "CL_INVALID_VALUE";
    case -36: return "CL_INVALID_COMMAND_QUEUE";
    case -38: return "CL_INVALID_MEM_OBJECT";
    case -52: return "CL_INVALID_KERNEL_ARGS";
    case -54: return "CL_INVALID_WORK_GROUP_SIZE";
    default: return "OpenCL error";
    }
}

int synor__cl_error_is_fatal(int e)
{
    /* CL_DEVICE_NOT_AVAILABLE, CL_OUT_OF_RESOURCES, CL_INVALID_COMMAND_QUEUE */
    return e == -2 || e == -5 || e == -36;
}
