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

/* Argument bytes of the Cholesky tile kernels: the tile's coordinates, for
 * messages. */
typedef struct synor__tile_args {
    int i, j;
} synor__tile_args;

extern const synor_kernel synor__kernel_gemm;  /* A, B, C */
extern const synor_kernel synor__kernel_potrf; /* A (lower, in place) */
extern const synor_kernel synor__kernel_trsm;  /* L, B: B = B L^-T */
extern const synor_kernel synor__kernel_syrk;  /* A, C: C = C - A A^T (lower) */

#endif
