/* opencl_ops.c - the library's OpenCL kernels: GEMM (fp32; fp64 where the
 * device has it) and the element-wise activations ReLU, GeLU, SiLU (fp32).
 * They run on any OpenCL device, PoCL's CPU device included, which is how
 * CI exercises them and the transfers around them.
 *
 * GEMM is the classic local-memory tiling: a work-group of 16 x 16
 * work-items computes a 16 x 16 block of C, stepping through K one 16-wide
 * panel of A and of B at a time, staged in local memory. Column-major, with
 * transposes and alpha/beta, like cblas_?gemm. Replicas off the host are
 * packed, so the strides come from ctx->ld.
 *
 * The programs are built once per device when the library is added to a
 * runtime (synor__cl_lib_init, from the device's native handles); kernels
 * find them in ctx->state. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <CL/cl.h>

#include "common/common.h"
#include "kernels/kernels.h"

enum {
    CLK_SGEMM,
    CLK_DGEMM, /* only where the device has fp64 */
    CLK_RELU,
    CLK_GELU,
    CLK_SILU,
    CLK_COUNT
};

/* What the library keeps per OpenCL device: its programs and kernels,
 * built by synor__cl_lib_init from the device's native handles. */
typedef struct cl_lib {
    const synor_device_native *dev;
    cl_device_id id;
    cl_context ctx;
    cl_program prog[2]; /* fp32 and element-wise; fp64 */
    cl_kernel k[CLK_COUNT];
    int fp64;
} cl_lib;

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

/* An OpenCL call failed: the error for the task; after an error that
 * leaves the device unusable it is stopped, so that its tasks move. */
static int cl_fail(const cl_lib *cd, const char *what, cl_int e)
{
    if (synor__cl_error_is_fatal(e))
        (void)synor_runtime_device_stop(cd->dev->runtime, cd->dev->index);
    return synor__error(e == CL_MEM_OBJECT_ALLOCATION_FAILURE ? SYNOR_ENOMEM : SYNOR_EIO,
                        "OpenCL device %s (%s): %s: %s (%d)", cd->dev->name, cd->dev->product, what,
                        synor__cl_error_name(e), (int)e);
}

static int build_one(cl_lib *cd, int fp64)
{
    const char *src = cl_source;
    cl_int e = CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(cd->ctx, 1, &src, NULL, &e);
    if (e != CL_SUCCESS)
        return cl_fail(cd, "clCreateProgramWithSource", e);
    e = clBuildProgram(p, 1, &cd->id, fp64 ? "-DSYNOR_FP64" : "", NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[512] = "";
        clGetProgramBuildInfo(p, cd->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        clReleaseProgram(p);
        return synor__error(SYNOR_EIO, "OpenCL device %s: kernels do not build: %s",
                            cd->dev->product, log);
    }
    cd->prog[fp64] = p;
    /* The fp32 program has the fp32 GEMM and the element-wise kernels;
     * the fp64 one only its GEMM. */
    static const struct {
        int slot, fp64;
        const char *name;
    } ks[] = {{CLK_SGEMM, 0, "gemm"}, {CLK_RELU, 0, "relu"}, {CLK_GELU, 0, "gelu"},
              {CLK_SILU, 0, "silu"},  {CLK_DGEMM, 1, "gemm"}};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        if (ks[i].fp64 != fp64)
            continue;
        cd->k[ks[i].slot] = clCreateKernel(p, ks[i].name, &e);
        if (e != CL_SUCCESS)
            return cl_fail(cd, ks[i].name, e);
    }
    return 0;
}

void synor__cl_lib_fini(void *state)
{
    cl_lib *cd = state;
    if (!cd)
        return;
    for (int k = 0; k < CLK_COUNT; k++)
        if (cd->k[k])
            clReleaseKernel(cd->k[k]);
    for (int i = 0; i < 2; i++)
        if (cd->prog[i])
            clReleaseProgram(cd->prog[i]);
    synor__free(cd);
}

int synor__cl_lib_init(const synor_device_native *dev, void **state)
{
    cl_lib *cd = synor__calloc(1, sizeof *cd);
    if (!cd)
        return synor__error(SYNOR_ENOMEM, "OpenCL device %s: out of memory", dev->name);
    cd->dev = dev;
    cd->id = dev->cl_device;
    cd->ctx = dev->cl_context;
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(cd->id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL);
    cd->fp64 = fp != 0;
    int rc = build_one(cd, 0);
    if (rc == 0 && cd->fp64)
        rc = build_one(cd, 1);
    if (rc < 0) {
        synor__cl_lib_fini(cd);
        return rc;
    }
    *state = cd;
    return 0;
}

/* --------------------------------------------------------------- kernels */

#define ARG(i, v) (e == CL_SUCCESS ? (e = clSetKernelArg(k, (i), sizeof(v), &(v))) : e)

static int run(const cl_lib *cd, cl_command_queue q, cl_kernel k, cl_uint dims,
               const size_t *global, const size_t *local, const char *what)
{
    cl_int e = clEnqueueNDRangeKernel(q, k, dims, NULL, global, local, 0, NULL, NULL);
    if (e == CL_SUCCESS)
        e = clFinish(q);
    return e == CL_SUCCESS ? 0 : cl_fail(cd, what, e);
}

static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

static int cl_gemm(const synor_task_ctx *c, synor_dtype t, cl_int M, cl_int N, cl_int K,
                   double alpha, cl_int lda, cl_int ta, cl_int ldb, cl_int tb, double beta,
                   cl_int ldc)
{
    const cl_lib *cd = c->state;
    int f64 = t == SYNOR_DTYPE_FP64;
    if ((t != SYNOR_DTYPE_FP32 && !f64) || (f64 && !cd->k[CLK_DGEMM]))
        return synor__error(SYNOR_ENOTSUP, "gemm (OpenCL, %s): data type %s not supported here",
                            cd->dev->product, synor_dtype_name(t));
    cl_kernel k = cd->k[f64 ? CLK_DGEMM : CLK_SGEMM];
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
        return cl_fail(cd, "gemm: clSetKernelArg", e);
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
    const cl_lib *cd = c->state;
    if (c->ndata != 2 || synor_handle_dtype(c->data[0]) != SYNOR_DTYPE_FP32 ||
        synor_handle_dtype(c->data[1]) != SYNOR_DTYPE_FP32 ||
        synor_handle_bytes(c->data[0]) != synor_handle_bytes(c->data[1]))
        return synor__error(SYNOR_EINVAL, "%s (OpenCL): needs X and Y, fp32, of equal size", name);
    cl_long n = (cl_long)(synor_handle_bytes(c->data[0]) / sizeof(float));
    cl_kernel k = cd->k[which];
    cl_mem X = c->buffers[0], Y = c->buffers[1];
    cl_int e = CL_SUCCESS;
    ARG(0, X), ARG(1, Y), ARG(2, n);
    if (e != CL_SUCCESS)
        return cl_fail(cd, name, e);
    size_t global = round_up((size_t)n, 64);
    return run(cd, c->queue, k, 1, &global, NULL, name);
}

int synor__relu_opencl(const synor_task_ctx *c) { return eltwise(c, CLK_RELU, "relu"); }
int synor__gelu_opencl(const synor_task_ctx *c) { return eltwise(c, CLK_GELU, "gelu"); }
int synor__silu_opencl(const synor_task_ctx *c) { return eltwise(c, CLK_SILU, "silu"); }
