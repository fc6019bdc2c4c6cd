/* library.c - the kernel library of the library's own kernels that run
 * on GPUs (synor/kernel.h): what they need prepared on each device.
 *
 *   OpenCL   the programs of opencl_ops.c built for the device (a device
 *            they do not build on is stopped);
 *   CUDA     a cuBLAS handle on the device's stream and the module of
 *            cuda_ops.cu (cuda_ops.c).
 *   host     OpenBLAS loaded (the runtime limits it to one thread per
 *            worker itself).
 * The test GPU needs nothing (its kernels are C functions). */
#include "common/blas_api.h"
#include "kernels/kernels.h"

static int device_init(const synor_device_native *dev, void **state)
{
    switch (dev->backend) {
    case SYNOR_BACKEND_OPENCL:
#if SYNOR_HAVE_OPENCL
        return synor__cl_lib_init(dev, state);
#else
        return 0;
#endif
    case SYNOR_BACKEND_CUDA:
        return synor__cu_lib_init(dev, state);
    case SYNOR_BACKEND_HOST:
        /* OpenBLAS is loaded on first use (dlopen, its own start-up): do it
         * here, so that it is not in the first matmul's time, the run's
         * time or the performance model. A machine without it still runs
         * the kernels that need no BLAS; those that do fail by name. */
        (void)synor__blas();
        return 0;
    default:
        return 0;
    }
}

static void device_fini(const synor_device_native *dev, void *state)
{
    if (dev->backend == SYNOR_BACKEND_CUDA)
        synor__cu_lib_fini(state);
#if SYNOR_HAVE_OPENCL
    else if (dev->backend == SYNOR_BACKEND_OPENCL)
        synor__cl_lib_fini(state);
#endif
}

const synor_kernel_library synor__kernels_library = {"synor", device_init, device_fini};
