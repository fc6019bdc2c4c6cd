/* activation.c - the element-wise activations as runtime kernels on
 * contiguous fp32 data, X (R) -> Y (W): CPU loops (auto-vectorized) and the
 * OpenCL versions of opencl_ops.c. GeLU is the tanh approximation
 * (Hendrycks & Gimpel), as GPT-2 and most inference engines use. */
#include <math.h>

#include "common/common.h"
#include "kernels/kernels.h"

static int check(const synor_task_ctx *c, const char *name, size_t *n)
{
    if (c->ndata != 2 || synor_handle_dtype(c->data[0]) != SYNOR_DTYPE_FP32 ||
        synor_handle_dtype(c->data[1]) != SYNOR_DTYPE_FP32 ||
        synor_handle_bytes(c->data[0]) != synor_handle_bytes(c->data[1]))
        return synor__error(SYNOR_EINVAL, "%s: needs X and Y, fp32, of equal size", name);
    *n = synor_handle_bytes(c->data[0]) / sizeof(float);
    return 0;
}

static int relu_cpu(const synor_task_ctx *c)
{
    size_t n = 0;
    int rc = check(c, "relu", &n);
    const float *restrict x = c->buffers[0];
    float *restrict y = c->buffers[1];
    for (size_t i = 0; rc == 0 && i < n; i++)
        y[i] = x[i] > 0 ? x[i] : 0.0f;
    return rc;
}

static int gelu_cpu(const synor_task_ctx *c)
{
    size_t n = 0;
    int rc = check(c, "gelu", &n);
    const float *restrict x = c->buffers[0];
    float *restrict y = c->buffers[1];
    for (size_t i = 0; rc == 0 && i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
    return rc;
}

static int silu_cpu(const synor_task_ctx *c)
{
    size_t n = 0;
    int rc = check(c, "silu", &n);
    const float *restrict x = c->buffers[0];
    float *restrict y = c->buffers[1];
    for (size_t i = 0; rc == 0 && i < n; i++)
        y[i] = x[i] / (1.0f + expf(-x[i]));
    return rc;
}

const synor_kernel synor__kernel_relu_x = {.name = "relu",
                                           .op = SYNOR_OP_RELU,
                                           .fn = {[SYNOR_KIND_CPU] = relu_cpu},
                                           .opencl = SYNOR__OPENCL_IMPL(synor__relu_opencl),
                                           .cuda = synor__relu_cuda,
                                           .library = &synor__kernels_library};
const synor_kernel synor__kernel_gelu_x = {.name = "gelu",
                                           .op = SYNOR_OP_GELU,
                                           .fn = {[SYNOR_KIND_CPU] = gelu_cpu},
                                           .opencl = SYNOR__OPENCL_IMPL(synor__gelu_opencl),
                                           .cuda = synor__gelu_cuda,
                                           .library = &synor__kernels_library};
const synor_kernel synor__kernel_silu_x = {.name = "silu",
                                           .op = SYNOR_OP_SILU,
                                           .fn = {[SYNOR_KIND_CPU] = silu_cpu},
                                           .opencl = SYNOR__OPENCL_IMPL(synor__silu_opencl),
                                           .cuda = synor__silu_cuda,
                                           .library = &synor__kernels_library};
