/* ocl.c - a context's GPU layers on an OpenCL device
 * (synor_llm_ctx_opts.gpu_backend = SYNOR_LLM_GPU_OPENCL): the same
 * products as gpu.c runs with cuBLAS, with a kernel of the engine's own.
 *
 * At creation the offloaded layers' matrices are dequantized to fp32 on
 * the host, stacked as gpu.c stacks them (Q/K/V; gate/up) and written once
 * into one device buffer each. A product writes its n activation rows into
 * the device, runs the kernel and reads the n output rows back, on an
 * in-order queue of its own, and returns when they are on the host.
 *
 * The kernel: Y (n x rows) = X (n x cols) W^T with W row-major (a row per
 * output) and X row-major, so every output is the dot product of two
 * contiguous rows. A work-item computes one output row r for four
 * activation rows at once (W's row is read once for the four), four
 * columns at a time (vload4; the last cols % 4 one by one). Work-items
 * along r read consecutive rows of W, which is what both a GPU (coalesced
 * enough at these widths) and PoCL's CPU device (one work-item's loop
 * vectorised) do well with. */
#include <stdio.h>
#include <string.h>

#include <CL/cl.h>

#include "common/common.h"
#include "llm/llm_ctx.h"
#include "synor/kernel.h"

struct llm_ocl {
    cl_context ctx;
    cl_device_id id;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k;
    cl_mem *w;  /* per offloaded layer: LLM_GPU_QKV .. LLM_GPU_W2 */
    cl_mem cls; /* NULL: the classifier stays on the CPU */
    cl_mem dx, dy;
    size_t dx_cap, dy_cap; /* floats */
    int nl, first;
    int shape[LLM_GPU_NMAT + 1][2];
    synor_llm_gpu_info *info; /* the context's (gpu.c's) */
};

static const char mm_source[] =
    "__kernel void llm_mm(int n, int rows, int cols, __global const float *W,\n"
    "                     __global const float *X, __global float *Y)\n"
    "{\n"
    "    int r = get_global_id(0), i0 = get_global_id(1) * 4;\n"
    "    if (r >= rows || i0 >= n)\n"
    "        return;\n"
    "    int m = min(4, n - i0), c4 = cols & ~3;\n"
    "    __global const float *w = W + (long)r * cols;\n"
    "    __global const float *x0 = X + (long)i0 * cols;\n"
    "    __global const float *x1 = X + (long)(i0 + min(1, m - 1)) * cols;\n"
    "    __global const float *x2 = X + (long)(i0 + min(2, m - 1)) * cols;\n"
    "    __global const float *x3 = X + (long)(i0 + min(3, m - 1)) * cols;\n"
    "    float4 a0 = (float4)(0.0f), a1 = a0, a2 = a0, a3 = a0;\n"
    "    for (int k = 0; k < c4; k += 4) {\n"
    "        float4 v = vload4(0, w + k);\n"
    "        a0 = fma(v, vload4(0, x0 + k), a0);\n"
    "        a1 = fma(v, vload4(0, x1 + k), a1);\n"
    "        a2 = fma(v, vload4(0, x2 + k), a2);\n"
    "        a3 = fma(v, vload4(0, x3 + k), a3);\n"
    "    }\n"
    "    float s0 = a0.x + a0.y + a0.z + a0.w, s1 = a1.x + a1.y + a1.z + a1.w;\n"
    "    float s2 = a2.x + a2.y + a2.z + a2.w, s3 = a3.x + a3.y + a3.z + a3.w;\n"
    "    for (int k = c4; k < cols; k++) {\n"
    "        s0 = fma(w[k], x0[k], s0);\n"
    "        s1 = fma(w[k], x1[k], s1);\n"
    "        s2 = fma(w[k], x2[k], s2);\n"
    "        s3 = fma(w[k], x3[k], s3);\n"
    "    }\n"
    "    Y[(long)i0 * rows + r] = s0;\n"
    "    if (m > 1) Y[(long)(i0 + 1) * rows + r] = s1;\n"
    "    if (m > 2) Y[(long)(i0 + 2) * rows + r] = s2;\n"
    "    if (m > 3) Y[(long)(i0 + 3) * rows + r] = s3;\n"
    "}\n";

static int cl_err(const llm_ocl *o, const char *what, cl_int e)
{
    return synor__error(e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES
                            ? SYNOR_ENOMEM
                            : SYNOR_EIO,
                        "LLM on OpenCL device %s (%s): %s: OpenCL error %d", o->info->device,
                        o->info->product, what, (int)e);
}

int synor__llm_ocl_find(synor_llm_ctx *c, unsigned which, synor_device_native *nat,
                        uint64_t *capacity)
{
    unsigned seen = 0;
    for (unsigned i = 0; i < synor_runtime_device_count(c->rt); i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(c->rt, i, &di) || strcmp(di.backend, "opencl"))
            continue;
        if (seen++ != which)
            continue;
        if (di.stopped || synor_runtime_device_native(c->rt, i, nat) || !nat->cl_context ||
            !nat->cl_device)
            return synor__error(SYNOR_ENOTSUP,
                                "synor_llm_ctx_create: OpenCL device %s is stopped or has no "
                                "context",
                                di.name);
        *capacity = di.memory_capacity;
        return 0;
    }
    return synor__error(SYNOR_ENOTSUP,
                        "synor_llm_ctx_create: GPU layers asked on OpenCL device %u, but the "
                        "runtime has %u OpenCL device%s (no OpenCL platform here, or the "
                        "runtime's config has opencl off, or only accelerators while the device "
                        "is a CPU: SYNOR_OPENCL_ALL takes PoCL's)",
                        which, seen, seen == 1 ? "" : "s");
}

/* Writes the stacked matrices mats[0..k) (same cols) as one device
 * buffer, through tmp (room for all of it, fp32). */
static int upload(llm_ocl *o, const llm_mat *const *mats, int k, float *tmp, cl_mem *out)
{
    size_t rows = 0, cols = (size_t)mats[0]->cols;
    for (int i = 0; i < k; i++)
        for (int r = 0; r < mats[i]->rows; r++, rows++)
            synor__llm_mat_row(mats[i], r, tmp + rows * cols);
    size_t bytes = rows * cols * sizeof(float);
    cl_int e;
    *out = clCreateBuffer(o->ctx, CL_MEM_READ_ONLY, bytes, NULL, &e);
    if (!*out)
        return e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES ||
                       e == CL_INVALID_BUFFER_SIZE
                   ? synor__error(SYNOR_ENOMEM,
                                  "LLM on OpenCL device %s (%s): %zu bytes of weights: out of "
                                  "device memory (%llu bytes resident so far)",
                                  o->info->device, o->info->product, bytes,
                                  (unsigned long long)o->info->weight_bytes)
                   : cl_err(o, "clCreateBuffer (weights)", e);
    o->info->weight_bytes += bytes;
    e = clEnqueueWriteBuffer(o->q, *out, CL_TRUE, 0, bytes, tmp, 0, NULL, NULL);
    return e ? cl_err(o, "uploading weights", e) : 0;
}

static int buffers(llm_ocl *o, size_t in, size_t out)
{
    cl_int e = 0;
    if (in > o->dx_cap) {
        if (o->dx)
            clReleaseMemObject(o->dx);
        o->dx_cap = 0;
        if (!(o->dx = clCreateBuffer(o->ctx, CL_MEM_READ_ONLY, in * sizeof(float), NULL, &e)))
            return cl_err(o, "clCreateBuffer (activations)", e);
        o->dx_cap = in;
    }
    if (out > o->dy_cap) {
        if (o->dy)
            clReleaseMemObject(o->dy);
        o->dy_cap = 0;
        if (!(o->dy = clCreateBuffer(o->ctx, CL_MEM_WRITE_ONLY, out * sizeof(float), NULL, &e)))
            return cl_err(o, "clCreateBuffer (outputs)", e);
        o->dy_cap = out;
    }
    return 0;
}

static int open_device(synor_llm_ctx *c, llm_ocl *o, size_t in, size_t out, size_t biggest)
{
    const synor_llm *m = c->m;
    cl_int e;
    o->q = clCreateCommandQueueWithProperties(o->ctx, o->id, NULL, &e);
    if (!o->q)
        return cl_err(o, "clCreateCommandQueueWithProperties", e);
    const char *src = mm_source;
    o->prog = clCreateProgramWithSource(o->ctx, 1, &src, NULL, &e);
    if (!o->prog)
        return cl_err(o, "clCreateProgramWithSource", e);
    if ((e = clBuildProgram(o->prog, 1, &o->id, "-cl-mad-enable", NULL, NULL))) {
        char log[1024] = "";
        clGetProgramBuildInfo(o->prog, o->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        return synor__error(SYNOR_EIO, "LLM on OpenCL device %s: building the kernel: %d: %s",
                            o->info->device, (int)e, log);
    }
    if (!(o->k = clCreateKernel(o->prog, "llm_mm", &e)))
        return cl_err(o, "clCreateKernel", e);
    int rc = buffers(o, (size_t)c->max_batch * in, (size_t)c->max_batch * out);
    float *tmp = rc ? NULL : synor__malloc(biggest * sizeof(float));
    o->w = rc ? NULL : synor__calloc((size_t)o->nl * LLM_GPU_NMAT + 1, sizeof *o->w);
    if (!rc && (!tmp || !o->w))
        rc = synor__error(SYNOR_ENOMEM, "synor_llm_ctx_create: out of memory for the OpenCL "
                                        "weights' staging");
    for (int i = 0; !rc && i < o->nl; i++) {
        const llm_layer *L = &m->layers[o->first + i];
        const llm_mat *qkv[3] = {&L->wq, &L->wk, &L->wv}, *wo[1] = {&L->wo},
                      *w13[2] = {&L->w1, &L->w3}, *w2[1] = {&L->w2};
        cl_mem *d = o->w + (size_t)i * LLM_GPU_NMAT;
        rc = upload(o, qkv, 3, tmp, &d[LLM_GPU_QKV]);
        if (!rc)
            rc = upload(o, wo, 1, tmp, &d[LLM_GPU_WO]);
        if (!rc)
            rc = upload(o, w13, 2, tmp, &d[LLM_GPU_W13]);
        if (!rc)
            rc = upload(o, w2, 1, tmp, &d[LLM_GPU_W2]);
    }
    if (!rc && o->info->classifier) {
        const llm_mat *cm[1] = {&m->cls};
        rc = upload(o, cm, 1, tmp, &o->cls);
    }
    synor__free(tmp);
    return rc;
}

int synor__llm_ocl_open(synor_llm_ctx *c, const synor_device_native *nat, int nl, int first,
                        const int shape[][2], synor_llm_gpu_info *info, llm_ocl **out)
{
    llm_ocl *o = synor__calloc(1, sizeof *o);
    if (!o)
        return synor__error(SYNOR_ENOMEM, "synor_llm_ctx_create: out of memory");
    o->ctx = nat->cl_context;
    o->id = nat->cl_device;
    o->nl = nl;
    o->first = first;
    o->info = info;
    size_t in = 0, outw = 0, biggest = 0;
    for (int w = LLM_GPU_QKV; w <= LLM_GPU_CLS; w++) {
        o->shape[w][0] = shape[w][0];
        o->shape[w][1] = shape[w][1];
        size_t r = (size_t)shape[w][0], k = (size_t)shape[w][1];
        in = k > in ? k : in;
        if (w != LLM_GPU_CLS)
            outw = r > outw ? r : outw;
        if (w != LLM_GPU_CLS || info->classifier)
            biggest = r * k > biggest ? r * k : biggest;
    }
    int e = open_device(c, o, in, outw, biggest);
    if (e) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", synor_errmsg());
        synor__llm_ocl_close(o);
        return synor__error(e, "%s", msg);
    }
    *out = o;
    return 0;
}

void synor__llm_ocl_close(llm_ocl *o)
{
    if (!o)
        return;
    if (o->q)
        clFinish(o->q);
    if (o->w)
        for (size_t i = 0; i < (size_t)o->nl * LLM_GPU_NMAT; i++)
            if (o->w[i])
                clReleaseMemObject(o->w[i]);
    if (o->cls)
        clReleaseMemObject(o->cls);
    if (o->dx)
        clReleaseMemObject(o->dx);
    if (o->dy)
        clReleaseMemObject(o->dy);
    if (o->k)
        clReleaseKernel(o->k);
    if (o->prog)
        clReleaseProgram(o->prog);
    if (o->q)
        clReleaseCommandQueue(o->q);
    synor__free(o->w);
    synor__free(o);
}

int synor__llm_ocl_matmul(llm_ocl *o, int which, int layer, int n, const float *x, float *y,
                          uint64_t *last)
{
    int rows = o->shape[which][0], cols = o->shape[which][1];
    cl_mem w = which == LLM_GPU_CLS ? o->cls : o->w[(size_t)(layer - o->first) * LLM_GPU_NMAT + which];
    size_t in = (size_t)n * (size_t)cols, out = (size_t)n * (size_t)rows;
    int rc = buffers(o, in, out);
    if (rc)
        return rc;
    if (last)
        last[0] = synor__llm_now_ns();
    cl_int e = clEnqueueWriteBuffer(o->q, o->dx, last != NULL, 0, in * sizeof(float), x, 0, NULL,
                                    NULL);
    if (e)
        return cl_err(o, "copy to device", e);
    if (last)
        last[1] = synor__llm_now_ns();
    e = clSetKernelArg(o->k, 0, sizeof(int), &n);
    e |= clSetKernelArg(o->k, 1, sizeof(int), &rows);
    e |= clSetKernelArg(o->k, 2, sizeof(int), &cols);
    e |= clSetKernelArg(o->k, 3, sizeof(cl_mem), &w);
    e |= clSetKernelArg(o->k, 4, sizeof(cl_mem), &o->dx);
    e |= clSetKernelArg(o->k, 5, sizeof(cl_mem), &o->dy);
    if (e)
        return cl_err(o, "clSetKernelArg", e);
    size_t global[2] = {(size_t)rows, ((size_t)n + 3) / 4};
    if ((e = clEnqueueNDRangeKernel(o->q, o->k, 2, NULL, global, NULL, 0, NULL, NULL)))
        return cl_err(o, "clEnqueueNDRangeKernel", e);
    if (last) {
        if ((e = clFinish(o->q)))
            return cl_err(o, "the product", e);
        last[2] = synor__llm_now_ns();
    }
    if ((e = clEnqueueReadBuffer(o->q, o->dy, CL_TRUE, 0, out * sizeof(float), y, 0, NULL, NULL)))
        return cl_err(o, "copy to host", e);
    if (last)
        last[3] = synor__llm_now_ns();
    return 0;
}
