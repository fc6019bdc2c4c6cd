/* opencl_ops.c - the library's OpenCL kernels: GEMM (fp32; fp64 where the
 * device has it) and the element-wise activations ReLU, GeLU, SiLU (fp32).
 * They run on any OpenCL device, PoCL's CPU device included, which is how
 * CI exercises them and the transfers around them.
 *
 * GEMM is the classic local-memory tiling: a work-group of 16 x 16
 * work-items computes a 16 x 16 block of C, stepping through K one 16-wide
 * panel of A and of B at a time, staged in local memory. Column-major, with
 * transposes and alpha/beta, like cblas_?gemm. Replicas off the host are
 * packed, so the strides come from ctx->ld. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "kernels/kernels.h"
#include "runtime/cl_internal.h"

static const char cl_source[] =
    "#ifdef SYNOR_FP64\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "typedef double real;\n"
    "#else\n"
    "typedef float real;\n"
    "#endif\n"
    "#define TS 16\n"
    "__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))\n"
    "void gemm(int M, int N, int K, real alpha, __global const real *A, int lda, int ta,\n"
    "          __global const real *B, int ldb, int tb, real beta, __global real *C, int ldc)\n"
    "{\n"
    "    int r = get_local_id(0), c = get_local_id(1);\n"
    "    int row = get_group_id(0) * TS + r, col = get_group_id(1) * TS + c;\n"
    "    __local real As[TS][TS + 1], Bs[TS][TS + 1];\n"
    "    real acc = 0;\n"
    "    for (int t = 0; t < K; t += TS) {\n"
    "        int ka = t + c, kb = t + r;\n"
    "        As[c][r] = (row < M && ka < K) ? (ta ? A[ka + (long)row * lda] : A[row + (long)ka * lda]) : 0;\n"
    "        Bs[c][r] = (kb < K && col < N) ? (tb ? B[col + (long)kb * ldb] : B[kb + (long)col * ldb]) : 0;\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        for (int k = 0; k < TS; k++)\n"
    "            acc += As[k][r] * Bs[c][k];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (row < M && col < N) {\n"
    "        long i = row + (long)col * ldc;\n"
    "        C[i] = beta == 0 ? alpha * acc : alpha * acc + beta * C[i];\n"
    "    }\n"
    "}\n"
    "#ifndef SYNOR_FP64\n"
    "__kernel void relu(__global const float *x, __global float *y, long n)\n"
    "{ long i = get_global_id(0); if (i < n) y[i] = fmax(x[i], 0.0f); }\n"
    "__kernel void gelu(__global const float *x, __global float *y, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) { float v = x[i];\n"
    "        y[i] = 0.5f * v * (1.0f + tanh(0.7978845608f * (v + 0.044715f * v * v * v))); }\n"
    "}\n"
    "__kernel void silu(__global const float *x, __global float *y, long n)\n"
    "{ long i = get_global_id(0); if (i < n) { float v = x[i]; y[i] = v / (1.0f + exp(-v)); } }\n"
    "#endif\n";

const char *synor__cl_err(cl_int e)
{
    switch (e) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
    default: return "OpenCL error";
    }
}

int synor__cl_fail(synor__cl_dev *cd, const char *what, cl_int e)
{
    /* Errors after which the device cannot be trusted with more work. */
    if (e == CL_DEVICE_NOT_AVAILABLE || e == CL_INVALID_COMMAND_QUEUE || e == CL_OUT_OF_RESOURCES)
        atomic_store(&cd->dev->stopped, 1);
    return synor__error(e == CL_MEM_OBJECT_ALLOCATION_FAILURE ? SYNOR_ENOMEM : SYNOR_EIO,
                        "OpenCL device %s (%s): %s: %s (%d)", cd->dev->name, cd->product, what,
                        synor__cl_err(e), (int)e);
}

static int build_one(synor__cl_dev *cd, int fp64)
{
    const char *src = cl_source;
    cl_int e = CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(cd->ctx, 1, &src, NULL, &e);
    if (e != CL_SUCCESS)
        return synor__cl_fail(cd, "clCreateProgramWithSource", e);
    e = clBuildProgram(p, 1, &cd->id, fp64 ? "-DSYNOR_FP64" : "", NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[512] = "";
        clGetProgramBuildInfo(p, cd->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        clReleaseProgram(p);
        return synor__error(SYNOR_EIO, "OpenCL device %s: kernels do not build: %s", cd->product,
                            log);
    }
    cd->prog[fp64] = p;
    /* The fp32 program has the fp32 GEMM and the element-wise kernels;
     * the fp64 one only its GEMM. */
    static const struct {
        int slot, fp64;
        const char *name;
    } ks[] = {{SYNOR__CLK_SGEMM, 0, "gemm"}, {SYNOR__CLK_RELU, 0, "relu"},
              {SYNOR__CLK_GELU, 0, "gelu"},  {SYNOR__CLK_SILU, 0, "silu"},
              {SYNOR__CLK_DGEMM, 1, "gemm"}};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        if (ks[i].fp64 != fp64)
            continue;
        cd->k[ks[i].slot] = clCreateKernel(p, ks[i].name, &e);
        if (e != CL_SUCCESS)
            return synor__cl_fail(cd, ks[i].name, e);
    }
    return 0;
}

int synor__cl_build(synor__cl_dev *cd)
{
    int rc = build_one(cd, 0);
    if (rc == 0 && cd->fp64)
        rc = build_one(cd, 1);
    return rc;
}

void synor__cl_release(synor__cl_dev *cd)
{
    for (int k = 0; k < SYNOR__CLK_COUNT; k++)
        if (cd->k[k])
            clReleaseKernel(cd->k[k]);
    for (int i = 0; i < 2; i++)
        if (cd->prog[i])
            clReleaseProgram(cd->prog[i]);
}

/* --------------------------------------------------------------- kernels */

#define ARG(i, v) (e == CL_SUCCESS ? (e = clSetKernelArg(k, (i), sizeof(v), &(v))) : e)

static int run(synor__cl_dev *cd, cl_command_queue q, cl_kernel k, cl_uint dims,
               const size_t *global, const size_t *local, const char *what)
{
    cl_int e = clEnqueueNDRangeKernel(q, k, dims, NULL, global, local, 0, NULL, NULL);
    if (e == CL_SUCCESS)
        e = clFinish(q);
    return e == CL_SUCCESS ? 0 : synor__cl_fail(cd, what, e);
}

static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

static int cl_gemm(const synor_task_ctx *c, synor_dtype t, cl_int M, cl_int N, cl_int K,
                   double alpha, cl_int lda, cl_int ta, cl_int ldb, cl_int tb, double beta,
                   cl_int ldc)
{
    synor__cl_dev *cd = c->backend;
    int f64 = t == SYNOR_DTYPE_FP64;
    if ((t != SYNOR_DTYPE_FP32 && !f64) || (f64 && !cd->k[SYNOR__CLK_DGEMM]))
        return synor__error(SYNOR_ENOTSUP, "gemm (OpenCL, %s): data type %s not supported here",
                            cd->product, synor_dtype_name(t));
    cl_kernel k = cd->k[f64 ? SYNOR__CLK_DGEMM : SYNOR__CLK_SGEMM];
    cl_mem A = c->buffers[0], B = c->buffers[1], C = c->buffers[2];
    cl_int e = CL_SUCCESS;
    ARG(0, M), ARG(1, N), ARG(2, K);
    if (f64) {
        ARG(3, alpha), ARG(10, beta);
    } else {
        float al = (float)alpha, be = (float)beta;
        ARG(3, al), ARG(10, be);
    }
    ARG(4, A), ARG(5, lda), ARG(6, ta), ARG(7, B), ARG(8, ldb), ARG(9, tb), ARG(11, C), ARG(12, ldc);
    if (e != CL_SUCCESS)
        return synor__cl_fail(cd, "gemm: clSetKernelArg", e);
    size_t global[2] = {round_up((size_t)M, 16), round_up((size_t)N, 16)}, local[2] = {16, 16};
    return run(cd, c->queue, k, 2, global, local, "gemm");
}

/* data: A (R), B (R), C (RW or W): C = alpha op(A) op(B) + beta C. */
int synor__gemm_opencl(const synor_task_ctx *c)
{
    const synor__gemm_args *a = c->args;
    synor_dtype t = synor_handle_dtype(c->data[0]);
    for (unsigned i = 0; i < 3; i++)
        if (synor_handle_ndim(c->data[i]) != 2 || synor_handle_dtype(c->data[i]) != t ||
            synor_handle_dim(c->data[i], 0) > INT_MAX || synor_handle_dim(c->data[i], 1) > INT_MAX)
            return synor__error(SYNOR_EINVAL, "gemm (OpenCL): data %u is not a 2-D %s matrix", i,
                                synor_dtype_name(t));
    cl_int M = (cl_int)synor_handle_dim(c->data[2], 0), N = (cl_int)synor_handle_dim(c->data[2], 1);
    cl_int K = (cl_int)(a->trans_a ? synor_handle_dim(c->data[0], 0) : synor_handle_dim(c->data[0], 1));
    return cl_gemm(c, t, M, N, K, a->alpha, (cl_int)c->ld[0], a->trans_a, (cl_int)c->ld[1],
                   a->trans_b, a->beta, (cl_int)c->ld[2]);
}

/* data: A (R), B (R), C (W), contiguous, dims from the arguments. */
int synor__gemm_dims_opencl(const synor_task_ctx *c)
{
    const synor__gemm_dims_args *a = c->args;
    return cl_gemm(c, synor_handle_dtype(c->data[0]), a->m, a->n, a->k, 1.0, a->m, 0, a->k, 0,
                   0.0, a->m);
}

/* data: X (R), Y (W), fp32, same element count. */
static int eltwise(const synor_task_ctx *c, int which, const char *name)
{
    synor__cl_dev *cd = c->backend;
    if (c->ndata != 2 || synor_handle_dtype(c->data[0]) != SYNOR_DTYPE_FP32 ||
        synor_handle_dtype(c->data[1]) != SYNOR_DTYPE_FP32 ||
        c->data[0]->bytes != c->data[1]->bytes)
        return synor__error(SYNOR_EINVAL, "%s (OpenCL): needs X and Y, fp32, of equal size", name);
    cl_long n = (cl_long)(c->data[0]->bytes / sizeof(float));
    cl_kernel k = cd->k[which];
    cl_mem X = c->buffers[0], Y = c->buffers[1];
    cl_int e = CL_SUCCESS;
    ARG(0, X), ARG(1, Y), ARG(2, n);
    if (e != CL_SUCCESS)
        return synor__cl_fail(cd, name, e);
    size_t global = round_up((size_t)n, 64);
    return run(cd, c->queue, k, 1, &global, NULL, name);
}

int synor__relu_opencl(const synor_task_ctx *c) { return eltwise(c, SYNOR__CLK_RELU, "relu"); }
int synor__gelu_opencl(const synor_task_ctx *c) { return eltwise(c, SYNOR__CLK_GELU, "gelu"); }
int synor__silu_opencl(const synor_task_ctx *c) { return eltwise(c, SYNOR__CLK_SILU, "silu"); }
