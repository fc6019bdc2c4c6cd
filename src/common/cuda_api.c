/* cuda_api.c - loading the CUDA driver API and cuBLAS (cuda_api.h). */
#include "common/cuda_api.h"
#include "common/common.h"

#include <dlfcn.h>
#include <string.h>


int synor__cuda_api_load(synor__cu_api *a, int blas)
{
    a->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib)
        return -1;
    if (synor__dlsym_into(a->lib, "cuInit", &a->cuInit) ||
        synor__dlsym_into(a->lib, "cuDeviceGetCount", &a->cuDeviceGetCount) ||
        synor__dlsym_into(a->lib, "cuDeviceGet", &a->cuDeviceGet) ||
        synor__dlsym_into(a->lib, "cuDeviceGetName", &a->cuDeviceGetName) ||
        synor__dlsym_into(a->lib, "cuDeviceTotalMem_v2", &a->cuDeviceTotalMem) ||
        synor__dlsym_into(a->lib, "cuDevicePrimaryCtxRetain", &a->cuDevicePrimaryCtxRetain) ||
        synor__dlsym_into(a->lib, "cuDevicePrimaryCtxRelease_v2", &a->cuDevicePrimaryCtxRelease) ||
        synor__dlsym_into(a->lib, "cuCtxGetCurrent", &a->cuCtxGetCurrent) ||
        synor__dlsym_into(a->lib, "cuCtxSetCurrent", &a->cuCtxSetCurrent) ||
        synor__dlsym_into(a->lib, "cuStreamCreate", &a->cuStreamCreate) ||
        synor__dlsym_into(a->lib, "cuStreamDestroy_v2", &a->cuStreamDestroy) ||
        synor__dlsym_into(a->lib, "cuStreamSynchronize", &a->cuStreamSynchronize) ||
        synor__dlsym_into(a->lib, "cuMemAlloc_v2", &a->cuMemAlloc) ||
        synor__dlsym_into(a->lib, "cuMemFree_v2", &a->cuMemFree) ||
        synor__dlsym_into(a->lib, "cuMemcpy2D_v2", &a->cuMemcpy2D) ||
        synor__dlsym_into(a->lib, "cuModuleLoadData", &a->cuModuleLoadData) ||
        synor__dlsym_into(a->lib, "cuModuleUnload", &a->cuModuleUnload) ||
        synor__dlsym_into(a->lib, "cuModuleGetFunction", &a->cuModuleGetFunction) ||
        synor__dlsym_into(a->lib, "cuLaunchKernel", &a->cuLaunchKernel) ||
        synor__dlsym_into(a->lib, "cuGetErrorName", &a->cuGetErrorName)) {
        dlclose(a->lib);
        a->lib = NULL;
        return -1;
    }
    /* Peer copies are optional: without them GPU to GPU goes through the host. */
    if (synor__dlsym_into(a->lib, "cuDeviceCanAccessPeer", &a->cuDeviceCanAccessPeer) ||
        synor__dlsym_into(a->lib, "cuCtxEnablePeerAccess", &a->cuCtxEnablePeerAccess) ||
        synor__dlsym_into(a->lib, "cuMemcpyPeer", &a->cuMemcpyPeer))
        a->cuMemcpyPeer = NULL;
    /* Page-locking is optional: without it copies go through the driver's
     * staging buffers. */
    if (synor__dlsym_into(a->lib, "cuMemHostRegister_v2", &a->cuMemHostRegister) ||
        synor__dlsym_into(a->lib, "cuMemHostUnregister", &a->cuMemHostUnregister))
        a->cuMemHostRegister = NULL;
    /* Stream-ordered copies and pinned memory are optional too: only the
     * LLM engine's GPU layers need them (and say so without them). */
    if (synor__dlsym_into(a->lib, "cuMemcpyHtoDAsync_v2", &a->cuMemcpyHtoDAsync) ||
        synor__dlsym_into(a->lib, "cuMemcpyDtoHAsync_v2", &a->cuMemcpyDtoHAsync) ||
        synor__dlsym_into(a->lib, "cuMemAllocHost_v2", &a->cuMemAllocHost) ||
        synor__dlsym_into(a->lib, "cuMemFreeHost", &a->cuMemFreeHost))
        a->cuMemcpyHtoDAsync = NULL;
    /* cuBLAS is optional: without it GEMM tasks fail over to other devices. */
    a->blas = NULL;
    if (!blas)
        return 0;
    static const char *const blas_names[] = {"libcublas.so.13", "libcublas.so.12",
                                             "libcublas.so.11", "libcublas.so"};
    for (size_t i = 0; i < sizeof blas_names / sizeof blas_names[0] && !a->blas; i++)
        a->blas = dlopen(blas_names[i], RTLD_NOW | RTLD_LOCAL);
    if (a->blas && (synor__dlsym_into(a->blas, "cublasCreate_v2", &a->cublasCreate) ||
                    synor__dlsym_into(a->blas, "cublasDestroy_v2", &a->cublasDestroy) ||
                    synor__dlsym_into(a->blas, "cublasSetStream_v2", &a->cublasSetStream) ||
                    synor__dlsym_into(a->blas, "cublasSgemm_v2", &a->cublasSgemm) ||
                    synor__dlsym_into(a->blas, "cublasDgemm_v2", &a->cublasDgemm))) {
        dlclose(a->blas);
        a->blas = NULL;
    }
    if (a->blas && synor__dlsym_into(a->blas, "cublasSgemv_v2", &a->cublasSgemv))
        a->cublasSgemv = NULL;
    return 0;
}

void synor__cuda_api_unload(synor__cu_api *a)
{
    if (a->blas)
        dlclose(a->blas);
    if (a->lib)
        dlclose(a->lib);
    a->blas = a->lib = NULL;
}

const char *synor__cuda_error_name(const synor__cu_api *a, CUresult e)
{
    const char *name = NULL;
    if (a->cuGetErrorName)
        (void)a->cuGetErrorName(e, &name);
    return name ? name : "CUDA error";
}

int synor__cuda_error_is_sticky(CUresult e)
{
    /* illegal address, illegal instruction, unknown, device unavailable,
     * invalid device */
    return e == 700 || e == 719 || e == 999 || e == 46 || e == 101;
}
