/* kernels.h - the library's own kernels (internal; never installed).
 * blas_cpu.c: dense linear algebra tiles through OpenBLAS.
 * tiled.c: the tiled algorithms built from them. */
#ifndef SYNOR_KERNELS_H
#define SYNOR_KERNELS_H

#include "synor/runtime.h"

/* Argument bytes of the gemm kernel (copied into each task). */
typedef struct synor__gemm_args {
    int trans_a, trans_b;
    double alpha, beta;
} synor__gemm_args;

/* gemm_dims: C = A B with the shapes in the arguments, on contiguous
 * (1-D) data: A m x k, B k x n, C m x n, column-major (real runs of
 * workloads, src/exec/). */
typedef struct synor__gemm_dims_args {
    int m, n, k;
} synor__gemm_dims_args;
extern const synor_kernel synor__kernel_gemm_dims; /* A (R), B (R), C (W) */

/* activation.c: X (R) -> Y (W), contiguous fp32, CPU and OpenCL. */
extern const synor_kernel synor__kernel_relu_x, synor__kernel_gelu_x, synor__kernel_silu_x;

/* Argument bytes of the Cholesky tile kernels: the tile's coordinates, for
 * messages. */
typedef struct synor__tile_args {
    int i, j;
} synor__tile_args;

extern const synor_kernel synor__kernel_gemm;  /* A, B, C */

/* cuda_ops.c (always built; the CUDA API is loaded at run time). */
int synor__gemm_cuda(const synor_task_ctx *c);
int synor__gemm_dims_cuda(const synor_task_ctx *c);
int synor__relu_cuda(const synor_task_ctx *c);
int synor__gelu_cuda(const synor_task_ctx *c);
int synor__silu_cuda(const synor_task_ctx *c);

/* opencl_ops.c (built with OpenCL only): data as the CPU kernels. */
#if SYNOR_HAVE_OPENCL
int synor__gemm_opencl(const synor_task_ctx *c);
int synor__gemm_dims_opencl(const synor_task_ctx *c);
int synor__relu_opencl(const synor_task_ctx *c); /* X (R), Y (W) */
int synor__gelu_opencl(const synor_task_ctx *c);
int synor__silu_opencl(const synor_task_ctx *c);
#define SYNOR__OPENCL_IMPL(f) f
#else
#define SYNOR__OPENCL_IMPL(f) NULL
#endif
extern const synor_kernel synor__kernel_potrf; /* A (lower, in place) */
extern const synor_kernel synor__kernel_trsm;  /* L, B: B = B L^-T */
extern const synor_kernel synor__kernel_syrk;  /* A, C: C = C - A A^T (lower) */

#endif
