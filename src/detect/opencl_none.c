/* opencl_none.c - the OpenCL source when the library was built without the
 * OpenCL ICD loader and headers: detection says so and finds nothing. */
#include "detect/detect_internal.h"

int synor__detect_opencl(synor__detect_ctx *c)
{
    synor__detect_note(c, "opencl", "built without OpenCL (install ocl-icd-opencl-dev and "
                                    "opencl-headers, then rebuild); 0 devices");
    return 0;
}
