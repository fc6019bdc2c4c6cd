/* cuda_api.c - loading the CUDA driver API and cuBLAS (cuda_api.h). */
#include "common/cuda_api.h"

#include <dlfcn.h>
#include <string.h>

static int sym(void *lib, const char *name, void *slot)
{
    void *p = lib ? dlsym(lib, name) : NULL;
    if (!p)
        return -1;
    memcpy(slot, &p, sizeof p);
    return 0;
}

int synor__cuda_api_load(synor__cu_api *a, int blas)
{
    a->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib)
        return -1;
    if (sym(a->lib, "cuInit", &a->cuInit) || sym(a->lib, "cuDeviceGetCount", &a->cuDeviceGetCount) ||
        sym(a->lib, "cuDeviceGet", &a->cuDeviceGet) ||
        sym(a->lib, "cuDeviceGetName", &a->cuDeviceGetName) ||
        sym(a->lib, "cuDeviceTotalMem_v2", &a->cuDeviceTotalMem) ||
        sym(a->lib, "cuDevicePrimaryCtxRetain", &a->cuDevicePrimaryCtxRetain) ||
        sym(a->lib, "cuDevicePrimaryCtxRelease_v2", &a->cuDevicePrimaryCtxRelease) ||
        sym(a->lib, "cuCtxGetCurrent", &a->cuCtxGetCurrent) ||
        sym(a->lib, "cuCtxSetCurrent", &a->cuCtxSetCurrent) ||
        sym(a->lib, "cuStreamCreate", &a->cuStreamCreate) ||
        sym(a->lib, "cuStreamDestroy_v2", &a->cuStreamDestroy) ||
        sym(a->lib, "cuStreamSynchronize", &a->cuStreamSynchronize) ||
        sym(a->lib, "cuMemAlloc_v2", &a->cuMemAlloc) || sym(a->lib, "cuMemFree_v2", &a->cuMemFree) ||
        sym(a->lib, "cuMemcpy2D_v2", &a->cuMemcpy2D) ||
        sym(a->lib, "cuModuleLoadData", &a->cuModuleLoadData) ||
        sym(a->lib, "cuModuleUnload", &a->cuModuleUnload) ||
        sym(a->lib, "cuModuleGetFunction", &a->cuModuleGetFunction) ||
        sym(a->lib, "cuLaunchKernel", &a->cuLaunchKernel) ||
        sym(a->lib, "cuGetErrorName", &a->cuGetErrorName)) {
        dlclose(a->lib);
        a->lib = NULL;
        return -1;
    }
    /* Peer copies are optional: without them GPU to GPU goes through the host. */
    if (sym(a->lib, "cuDeviceCanAccessPeer", &a->cuDeviceCanAccessPeer) ||
        sym(a->lib, "cuCtxEnablePeerAccess", &a->cuCtxEnablePeerAccess) ||
        sym(a->lib, "cuMemcpyPeer", &a->cuMemcpyPeer))
        a->cuMemcpyPeer = NULL;
    /* cuBLAS is optional: without it GEMM tasks fail over to other devices. */
    a->blas = NULL;
    if (!blas)
        return 0;
    static const char *const blas_names[] = {"libcublas.so.13", "libcublas.so.12",
                                             "libcublas.so.11", "libcublas.so"};
    for (size_t i = 0; i < sizeof blas_names / sizeof blas_names[0] && !a->blas; i++)
        a->blas = dlopen(blas_names[i], RTLD_NOW | RTLD_LOCAL);
    if (a->blas && (sym(a->blas, "cublasCreate_v2", &a->cublasCreate) ||
                    sym(a->blas, "cublasDestroy_v2", &a->cublasDestroy) ||
                    sym(a->blas, "cublasSetStream_v2", &a->cublasSetStream) ||
                    sym(a->blas, "cublasSgemm_v2", &a->cublasSgemm) ||
                    sym(a->blas, "cublasDgemm_v2", &a->cublasDgemm))) {
        dlclose(a->blas);
        a->blas = NULL;
    }
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
