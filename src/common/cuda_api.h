/* cuda_api.h - the CUDA driver API and cuBLAS, loaded with dlopen (no CUDA
 * header or library is needed to build): shared by the runtime's CUDA
 * backend (src/runtime/cuda_backend.c: contexts, streams, memory), the
 * library's CUDA kernels (src/kernels/cuda_ops.c: launches, cuBLAS) and
 * bench/bench_gpu_gemm.c (cuBLAS alone). Signatures follow the public CUDA
 * driver API and cuBLAS references; only what is used is declared. Never
 * installed. */
#ifndef SYNOR_CUDA_API_H
#define SYNOR_CUDA_API_H

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUmodule;
typedef void *CUfunction;
typedef unsigned long long CUdeviceptr;
typedef int cublasStatus_t;
typedef void *cublasHandle_t;

enum { SYNOR__CU_MEMORYTYPE_HOST = 1, SYNOR__CU_MEMORYTYPE_DEVICE = 2 };

/* CUDA_MEMCPY2D of cuda.h, member for member. */
typedef struct synor__cu_memcpy2d {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} synor__cu_memcpy2d;

typedef struct synor__cu_api {
    void *lib, *blas;
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemcpy2D)(const synor__cu_memcpy2d *);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    /* Optional (NULL where the driver lacks them): peer copies. */
    CUresult (*cuDeviceCanAccessPeer)(int *, CUdevice, CUdevice);
    CUresult (*cuCtxEnablePeerAccess)(CUcontext, unsigned);
    CUresult (*cuMemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
    /* Optional: page-locking host memory the caller owns. */
    CUresult (*cuMemHostRegister)(void *, size_t, unsigned);
    CUresult (*cuMemHostUnregister)(void *);
    /* Optional (NULL where the driver lacks any of them): copies ordered on
     * a stream, and page-locked host memory for them to be asynchronous. */
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemAllocHost)(void **, size_t);
    CUresult (*cuMemFreeHost)(void *);
    cublasStatus_t (*cublasCreate)(cublasHandle_t *);
    cublasStatus_t (*cublasDestroy)(cublasHandle_t);
    cublasStatus_t (*cublasSetStream)(cublasHandle_t, CUstream);
    cublasStatus_t (*cublasSgemm)(cublasHandle_t, int, int, int, int, int, const float *,
                                  const float *, int, const float *, int, const float *, float *,
                                  int);
    cublasStatus_t (*cublasDgemm)(cublasHandle_t, int, int, int, int, int, const double *,
                                  const double *, int, const double *, int, const double *,
                                  double *, int);
    /* Optional (NULL without it): y = alpha op(A) x + beta y. */
    cublasStatus_t (*cublasSgemv)(cublasHandle_t, int, int, int, const float *, const float *, int,
                                  const float *, int, const float *, float *, int);
} synor__cu_api;

/* Loads libcuda.so.1 (required symbols; 0, or -1 and nothing loaded) and,
 * with `blas`, cuBLAS (optional: a->blas NULL without it); unload closes
 * what was loaded. dlopen counts references: each user loads its own. */
int synor__cuda_api_load(synor__cu_api *a, int blas);
void synor__cuda_api_unload(synor__cu_api *a);

/* The driver's name of a CUresult ("CUDA_ERROR_ILLEGAL_ADDRESS"). */
const char *synor__cuda_error_name(const synor__cu_api *a, CUresult e);
/* Errors after which the context is unusable (illegal address, launch
 * failure, device lost): the device must stop taking work. */
int synor__cuda_error_is_sticky(CUresult e);

#endif
