/* kernels.h - the library's own kernels (internal; never installed).
 * blas_cpu.c: dense linear algebra tiles through OpenBLAS.
 * tiled.c: the tiled algorithms built from them.
 * library.c: their kernel library (what they prepare per device).
 *
 * Kernels see the runtime through its public headers only (synor/kernel.h,
 * synor/runtime.h); scripts/check_layers.sh keeps it so. */
#ifndef SYNOR_KERNELS_H
#define SYNOR_KERNELS_H

#include "synor/kernel.h"
#include "synor/runtime.h"

/* library.c: the kernel library of the kernels below that run on GPUs:
 * on OpenCL devices the programs of opencl_ops.c, on CUDA GPUs cuBLAS and
 * the module of cuda_ops.cu. Every kernel below with an OpenCL or CUDA
 * implementation names it (synor_kernel.library). Real runs (src/exec/)
 * add it to the runtime before timing. */
extern const synor_kernel_library synor__kernels_library;

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

/* ---- cpu_ops.c, cpu_attention.c: CPU fp32 kernels of issue 4 point 6 ----
 * Contiguous row-major fp32 data; shapes come from the arguments and are
 * checked against the handles' sizes (SYNOR_EINVAL naming the kernel and
 * the sizes). Operands in task order after each name. */

/* rows x cols, and eps for the norms (0 = 1e-5). */
typedef struct synor__rows_args {
    int64_t rows, cols;
    float eps;
} synor__rows_args;
/* Softmax of each row (the row max is subtracted first): X (R), Y (W). */
extern const synor_kernel synor__kernel_softmax;
/* One row's softmax, y = x allowed (the attention kernel's scores). */
void synor__softmax_row(float *y, const float *x, size_t n);
/* Y = (X - mean) / sqrt(var + eps) * gamma + beta per row: X (R),
 * gamma (R, cols), beta (R, cols), Y (W). */
extern const synor_kernel synor__kernel_layer_norm;
/* Y = X / sqrt(mean(X^2) + eps) * gamma per row: X (R), gamma (R, cols),
 * Y (W). */
extern const synor_kernel synor__kernel_rms_norm;
/* Along rows, X (R, rows x cols) -> Y (W, rows); sums in double. */
extern const synor_kernel synor__kernel_row_sum, synor__kernel_row_max, synor__kernel_row_mean;
/* The sum of all rows x cols elements of X (R) -> Y (W, 1 element):
 * double accumulation, blocks added pairwise. */
extern const synor_kernel synor__kernel_sum_all;
/* X (R, rows x cols) -> Y (W, cols x rows), in 32 x 32 tiles. */
extern const synor_kernel synor__kernel_transpose;

/* Embedding gather: Y[i] = table[ids[i]]. table (R, vocab x dim), ids (R,
 * n int32 values in a handle of a 32-bit type: synor_dtype has no int32),
 * Y (W, n x dim). An id outside [0, vocab) fails the task (SYNOR_ERANGE,
 * naming the id, its position and the vocabulary size). */
typedef struct synor__embedding_args {
    int64_t n, vocab, dim;
} synor__embedding_args;
extern const synor_kernel synor__kernel_embedding;

/* Scaled dot-product attention: Q (R), K (R), V (R), O (W).
 * Q and O hold batch x heads x seq_q rows of head_dim, K and V batch x
 * kv_heads x seq_kv rows; query head h uses kv head h / (heads /
 * kv_heads). Layout 0: [batch][head][seq][head_dim] (head-major); 1:
 * [batch][seq][head][head_dim] (token-major, what a projection matmul
 * writes). causal: query i sees keys j <= i + seq_kv - seq_q (a query
 * that sees none gets O = 0). scale 0 = 1 / sqrt(head_dim). */
typedef struct synor__attention_args {
    int32_t batch, heads, kv_heads, seq_q, seq_kv, head_dim;
    int32_t causal, token_major;
    float scale;
} synor__attention_args;
extern const synor_kernel synor__kernel_attention;
/* ---- end of cpu_ops.c, cpu_attention.c ---- */

/* Argument bytes of the Cholesky tile kernels: the tile's coordinates, for
 * messages. */
typedef struct synor__tile_args {
    int i, j;
} synor__tile_args;

extern const synor_kernel synor__kernel_gemm;  /* A, B, C */

/* cuda_ops.c (always built; the CUDA API is loaded at run time). Per
 * device state for the library (ctx->state of the CUDA kernels). */
int synor__cu_lib_init(const synor_device_native *dev, void **state);
void synor__cu_lib_fini(void *state);
int synor__gemm_cuda(const synor_task_ctx *c);
int synor__gemm_dims_cuda(const synor_task_ctx *c);
int synor__relu_cuda(const synor_task_ctx *c);
int synor__gelu_cuda(const synor_task_ctx *c);
int synor__silu_cuda(const synor_task_ctx *c);

/* opencl_ops.c (built with OpenCL only): data as the CPU kernels; per
 * device state for the library (ctx->state of the OpenCL kernels). */
#if SYNOR_HAVE_OPENCL
int synor__cl_lib_init(const synor_device_native *dev, void **state);
void synor__cl_lib_fini(void *state);
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
