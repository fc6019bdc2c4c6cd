/* ocl.c - the trainer's matrix products on an OpenCL device
 * (synor_trainer_use_opencl), for the replicas that run there.
 *
 * As gpu.c does on a CUDA GPU: the parameters are resident on the device
 * in fp32, uploaded whole before the first product of each step (the
 * optimizer, on the host, changed them); every product of the forward and
 * backward passes reads its weight there. A product writes its activations
 * to the device, runs one SGEMM of the trainer's own kernel below and
 * reads the result back: y = x W^T (forward), dx = dy W (backward, data)
 * and dW = dy^T x (backward, weights; added to the replica's host
 * gradients, where the all-reduce and AdamW run as before). The device's
 * replicas share it through one in-order queue of the trainer's own, one
 * product at a time (a mutex); the other replicas' products stay on the
 * CPU workers, which is what makes a batch data parallel over the CPU and
 * the device at once.
 *
 * The kernel is column-major (the calls are gpu.c's cuBLAS calls, with
 * the same operands): work-item (ib, jb) computes the 8 x 8 block of C at
 * rows 8 ib and columns 8 jb, reading op(A)[8 ib .. 8 ib + 7, k] as one
 * float8 (A not transposed: contiguous) and broadcasting op(B)[k, j] to
 * eight float8 accumulators. On PoCL's CPU device that is a vector FMA
 * per load (6x the GFLOP/s of a local-memory tiled kernel there). The
 * forward product needs W^T untransposed, so each weight is transposed
 * once per step on the device (into a second parameter buffer) before its
 * first forward product. Operands are offsets into buffers (a weight is a
 * range of the parameters' buffer). */
#include <stdio.h>
#include <string.h>

#include <CL/cl.h>

#include "synor/kernel.h"
#include "train/train_internal.h"

enum { OP_N = 0, OP_T = 1 };

struct train_ocl {
    char device[64], product[128];
    cl_context ctx;
    cl_device_id id;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k, kt; /* the product; the transposition */
    pthread_mutex_t lock;
    cl_mem params, params_t; /* the parameters; transposed weights at the same offsets */
    size_t nparams;
    int stale;
    size_t *tdone; /* offsets of the weights transposed since the upload */
    size_t ntdone, tcap;
    cl_mem buf[3]; /* a, b: operands; c: the result */
    size_t cap[3]; /* floats */
    float *host;   /* a result to add on the host */
    size_t host_cap;
    synor_train_gpu_stats st;
};

/* C (M x N, ld ldc) = A (M x K, ld lda) op(B); op(B)[k, j] is B[j + k ldb]
 * when tb, else B[k + j ldb]. A work-item computes 8 rows (one float8) by
 * 8 columns: per k one vector load of A and eight broadcasts of B; the
 * last rows, past a multiple of 8, one at a time; columns past the edge
 * are clamped for reading and not stored. */
static const char mm_source[] =
    "#define JB 8\n"
    "__kernel void train_mm(int M, int N, int K, __global const float *A, long ao, int lda,\n"
    "                       __global const float *B, long bo, int ldb, int tb,\n"
    "                       __global float *C, int ldc)\n"
    "{\n"
    "    int i0 = get_global_id(0) * 8, j0 = get_global_id(1) * JB;\n"
    "    __global const float *a = A + ao;\n"
    "    long bj[JB], bk = tb ? ldb : 1;\n"
    "    for (int u = 0; u < JB; u++) {\n"
    "        long j = min(j0 + u, N - 1);\n"
    "        bj[u] = bo + (tb ? j : j * ldb);\n"
    "    }\n"
    "    if (i0 + 8 <= M) {\n"
    "        float8 acc[JB];\n"
    "        for (int u = 0; u < JB; u++)\n"
    "            acc[u] = (float8)(0.0f);\n"
    "        for (int k = 0; k < K; k++) {\n"
    "            float8 x = vload8(0, a + i0 + (long)k * lda);\n"
    "            long o = (long)k * bk;\n"
    "            for (int u = 0; u < JB; u++)\n"
    "                acc[u] += x * B[bj[u] + o];\n"
    "        }\n"
    "        for (int u = 0; u < JB && j0 + u < N; u++)\n"
    "            vstore8(acc[u], 0, C + i0 + (long)(j0 + u) * ldc);\n"
    "    } else {\n"
    "        for (int r = i0; r < M; r++)\n"
    "            for (int u = 0; u < JB && j0 + u < N; u++) {\n"
    "                float acc = 0.0f;\n"
    "                for (int k = 0; k < K; k++)\n"
    "                    acc += a[r + (long)k * lda] * B[bj[u] + (long)k * bk];\n"
    "                C[r + (long)(j0 + u) * ldc] = acc;\n"
    "            }\n"
    "    }\n"
    "}\n"
    "/* dst[o + i + k rows] = src[o + i cols + k]: a rows x cols row-major\n"
    " * matrix to column-major */\n"
    "__kernel void train_tr(__global const float *src, __global float *dst, long o, int rows,\n"
    "                       int cols)\n"
    "{\n"
    "    int i = get_global_id(0), k = get_global_id(1);\n"
    "    if (i < rows && k < cols)\n"
    "        dst[o + i + (long)k * rows] = src[o + (long)i * cols + k];\n"
    "}\n";

static int cl_err(const train_ocl *g, const char *what, cl_int e)
{
    return synor__error(e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES ||
                                e == CL_OUT_OF_HOST_MEMORY
                            ? SYNOR_ENOMEM
                            : SYNOR_EIO,
                        "trainer on OpenCL device %s (%s): %s: %s (%d)", g->device, g->product,
                        what, synor__cl_error_name(e), (int)e);
}

/* Device buffer i holds at least n floats. */
static int ensure(train_ocl *g, int i, size_t n)
{
    if (n <= g->cap[i])
        return 0;
    if (g->buf[i])
        clReleaseMemObject(g->buf[i]);
    g->buf[i] = NULL;
    g->cap[i] = 0;
    n += n / 4;
    cl_int e = CL_SUCCESS;
    g->buf[i] = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, n * sizeof(float), NULL, &e);
    if (e != CL_SUCCESS) {
        g->buf[i] = NULL;
        return cl_err(g, "clCreateBuffer (activations)", e);
    }
    g->cap[i] = n;
    return 0;
}

/* Not blocking: the in-order queue runs the kernel after it, and the
 * blocking read of the result waits for both (the host data is not
 * touched before then). */
static int up(train_ocl *g, cl_mem d, const float *h, size_t n)
{
    cl_int e = clEnqueueWriteBuffer(g->q, d, CL_FALSE, 0, n * sizeof(float), h, 0, NULL, NULL);
    g->st.bytes_up += n * sizeof(float);
    return e != CL_SUCCESS ? cl_err(g, "copy to device", e) : 0;
}

static int down(train_ocl *g, float *h, cl_mem d, size_t n)
{
    cl_int e = clEnqueueReadBuffer(g->q, d, CL_TRUE, 0, n * sizeof(float), h, 0, NULL, NULL);
    g->st.bytes_down += n * sizeof(float);
    return e != CL_SUCCESS ? cl_err(g, "copy to host", e) : 0;
}

#define ARG(kn, i, v) (e == CL_SUCCESS ? (e = clSetKernelArg((kn), (i), sizeof(v), &(v))) : e)

/* C (m x n, ld ldc) = A op(B), column-major, A not transposed; ao, bo:
 * offsets in floats. */
static int gemm(train_ocl *g, cl_int tb, cl_int m, cl_int n, cl_int k, cl_mem A, cl_long ao,
                cl_int lda, cl_mem B, cl_long bo, cl_int ldb, cl_mem C, cl_int ldc)
{
    cl_int e = CL_SUCCESS;
    cl_kernel kn = g->k;
    ARG(kn, 0, m), ARG(kn, 1, n), ARG(kn, 2, k), ARG(kn, 3, A), ARG(kn, 4, ao), ARG(kn, 5, lda);
    ARG(kn, 6, B), ARG(kn, 7, bo), ARG(kn, 8, ldb), ARG(kn, 9, tb), ARG(kn, 10, C);
    ARG(kn, 11, ldc);
    if (e != CL_SUCCESS)
        return cl_err(g, "clSetKernelArg", e);
    /* work-groups of 64 (two warps of a GPU; on PoCL as fast as 16) */
    size_t global[2] = {((size_t)m + 511) / 512 * 64, ((size_t)n + 7) / 8};
    size_t local[2] = {64, 1};
    e = clEnqueueNDRangeKernel(g->q, g->k, 2, NULL, global, local, 0, NULL, NULL);
    g->st.products++;
    return e != CL_SUCCESS ? cl_err(g, "the SGEMM kernel", e) : 0;
}

/* The weight at offset w (rows x cols, row-major) transposed into
 * params_t, once after each upload. */
static int transposed(train_ocl *g, size_t w, cl_int rows, cl_int cols)
{
    for (size_t i = 0; i < g->ntdone; i++)
        if (g->tdone[i] == w)
            return 0;
    if (g->ntdone == g->tcap) {
        size_t cap = g->tcap ? 2 * g->tcap : 64;
        size_t *p = synor__realloc(g->tdone, cap * sizeof *p);
        if (!p)
            return synor__error(SYNOR_ENOMEM, "trainer on OpenCL device %s: out of memory",
                                g->device);
        g->tdone = p;
        g->tcap = cap;
    }
    cl_int e = CL_SUCCESS;
    cl_long o = (cl_long)w;
    cl_kernel kn = g->kt;
    ARG(kn, 0, g->params), ARG(kn, 1, g->params_t), ARG(kn, 2, o), ARG(kn, 3, rows);
    ARG(kn, 4, cols);
    if (e != CL_SUCCESS)
        return cl_err(g, "clSetKernelArg", e);
    size_t global[2] = {((size_t)rows + 15) / 16 * 16, ((size_t)cols + 15) / 16 * 16};
    size_t local[2] = {16, 16};
    e = clEnqueueNDRangeKernel(g->q, kn, 2, NULL, global, local, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return cl_err(g, "the transposition kernel", e);
    g->tdone[g->ntdone++] = w;
    return 0;
}

/* Room for n floats in g->host. */
static int host_room(train_ocl *g, size_t n)
{
    if (n <= g->host_cap)
        return 0;
    float *h = synor__realloc(g->host, n * sizeof(float));
    if (!h)
        return synor__error(SYNOR_ENOMEM, "trainer on OpenCL device %s: out of memory (%zu "
                                          "floats)", g->device, n);
    g->host = h;
    g->host_cap = n;
    return 0;
}

int synor__train_ocl_mm(const synor_trainer *t, int op, float *out, const float *p,
                        const float *q, int n, int in, int outw, float beta)
{
    train_ocl *g = t->ocl;
    pthread_mutex_lock(&g->lock);
    int e = 0;
    if (g->stale) {
        e = up(g, g->params, t->params, g->nparams);
        g->st.param_uploads++;
        g->stale = e != 0;
        g->ntdone = 0;
    }
    size_t rn = (size_t)n, ri = (size_t)in, ro = (size_t)outw;
    if (!e && op == TRAIN_MM_FWD) {
        /* out = y (n x outw); p = x (n x in); q = W (a pointer into params) */
        size_t w = (size_t)(q - t->params);
        if (!(e = transposed(g, w, outw, in)) && !(e = ensure(g, 0, rn * ri)) &&
            !(e = ensure(g, 2, rn * ro)) && !(e = up(g, g->buf[0], p, rn * ri)) &&
            !(e = gemm(g, OP_N, outw, n, in, g->params_t, (cl_long)w, outw, g->buf[0], 0, in,
                       g->buf[2], outw)))
            e = down(g, out, g->buf[2], rn * ro);
    } else if (!e && op == TRAIN_MM_BWD_X) {
        /* out = dx (n x in) (+)= p = dy (n x outw) times q = W */
        cl_long w = (cl_long)(q - t->params);
        if (!(e = ensure(g, 0, rn * ro)) && !(e = ensure(g, 2, rn * ri)) &&
            !(e = up(g, g->buf[0], p, rn * ro)) &&
            !(e = gemm(g, OP_N, in, n, outw, g->params, w, in, g->buf[0], 0, outw, g->buf[2],
                       in))) {
            if (beta == 0.0f) {
                e = down(g, out, g->buf[2], rn * ri);
            } else if (!(e = host_room(g, rn * ri)) &&
                       !(e = down(g, g->host, g->buf[2], rn * ri))) {
                for (size_t i = 0; i < rn * ri; i++)
                    out[i] = beta * out[i] + g->host[i];
            }
        }
    } else if (!e) {
        /* out = dW (outw x in) += p = dy (n x outw)^T times q = x (n x in) */
        if (!(e = ensure(g, 0, rn * ro)) && !(e = ensure(g, 1, rn * ri)) &&
            !(e = ensure(g, 2, ro * ri)) && !(e = up(g, g->buf[0], p, rn * ro)) &&
            !(e = up(g, g->buf[1], q, rn * ri)) &&
            !(e = gemm(g, OP_T, in, outw, n, g->buf[1], 0, in, g->buf[0], 0, outw, g->buf[2],
                       in)) &&
            !(e = host_room(g, ro * ri)) && !(e = down(g, g->host, g->buf[2], ro * ri)))
            for (size_t i = 0; i < ro * ri; i++)
                out[i] += g->host[i];
    }
    if (e)
        (void)clFinish(g->q); /* nothing of this product is left in flight */
    pthread_mutex_unlock(&g->lock);
    return e;
}

void synor__train_ocl_params_changed(synor_trainer *t)
{
    if (t->ocl) {
        pthread_mutex_lock(&t->ocl->lock);
        t->ocl->stale = 1;
        pthread_mutex_unlock(&t->ocl->lock);
    }
}

void synor__train_ocl_free(synor_trainer *t)
{
    train_ocl *g = t->ocl;
    if (!g)
        return;
    t->ocl = NULL;
    for (int r = 0; r < TRAIN_MAX_REPLICAS; r++)
        t->rep[r].ocl = 0;
    if (g->q)
        (void)clFinish(g->q);
    for (int i = 0; i < 3; i++)
        if (g->buf[i])
            clReleaseMemObject(g->buf[i]);
    if (g->params)
        clReleaseMemObject(g->params);
    if (g->params_t)
        clReleaseMemObject(g->params_t);
    if (g->k)
        clReleaseKernel(g->k);
    if (g->kt)
        clReleaseKernel(g->kt);
    synor__free(g->tdone);
    if (g->prog)
        clReleaseProgram(g->prog);
    if (g->q)
        clReleaseCommandQueue(g->q);
    synor__free(g->host);
    pthread_mutex_destroy(&g->lock);
    synor__free(g);
}

static int open_device(synor_trainer *t, train_ocl *g)
{
    cl_int e = CL_SUCCESS;
    g->q = clCreateCommandQueueWithProperties(g->ctx, g->id, NULL, &e);
    if (e != CL_SUCCESS) {
        g->q = NULL;
        return cl_err(g, "clCreateCommandQueueWithProperties", e);
    }
    const char *src = mm_source;
    g->prog = clCreateProgramWithSource(g->ctx, 1, &src, NULL, &e);
    if (e != CL_SUCCESS) {
        g->prog = NULL;
        return cl_err(g, "clCreateProgramWithSource", e);
    }
    e = clBuildProgram(g->prog, 1, &g->id, "", NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[512] = "";
        clGetProgramBuildInfo(g->prog, g->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        return synor__error(SYNOR_EIO, "trainer on OpenCL device %s (%s): the SGEMM kernel does "
                                       "not build: %s (%d): %s",
                            g->device, g->product, synor__cl_error_name(e), (int)e, log);
    }
    g->k = clCreateKernel(g->prog, "train_mm", &e);
    if (e == CL_SUCCESS)
        g->kt = clCreateKernel(g->prog, "train_tr", &e);
    if (e != CL_SUCCESS) {
        g->kt = NULL;
        return cl_err(g, "clCreateKernel", e);
    }
    g->nparams = t->lay.total;
    g->params = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, g->nparams * sizeof(float), NULL, &e);
    if (e == CL_SUCCESS)
        g->params_t =
            clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, g->nparams * sizeof(float), NULL, &e);
    if (e != CL_SUCCESS) {
        return e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES
                   ? synor__error(SYNOR_ENOMEM,
                                  "trainer on OpenCL device %s (%s): %zu parameters: out of "
                                  "device memory",
                                  g->device, g->product, g->nparams)
                   : cl_err(g, "clCreateBuffer (parameters)", e);
    }
    return 0;
}

int synor_trainer_use_opencl(synor_trainer *t, unsigned device, int replicas)
{
    if (!t)
        return synor__error(SYNOR_EINVAL, "synor_trainer_use_opencl: NULL trainer");
    if (t->gpu || t->ocl)
        return synor__error(SYNOR_ESTATE, "synor_trainer_use_opencl: the trainer is already on "
                                          "%s",
                            t->gpu ? "a CUDA GPU" : t->ocl->device);
    if (replicas < 0 || replicas > t->nrep)
        return synor__error(SYNOR_EINVAL,
                            "synor_trainer_use_opencl: replicas is %d (0 = all, at most the "
                            "trainer's %d)",
                            replicas, t->nrep);
    unsigned seen = 0;
    synor_device_native nat;
    int found = 0;
    for (unsigned i = 0; i < synor_runtime_device_count(t->rt) && !found; i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(t->rt, i, &di) || strcmp(di.backend, "opencl"))
            continue;
        if (seen++ != device)
            continue;
        if (di.stopped || synor_runtime_device_native(t->rt, i, &nat) || !nat.cl_context ||
            !nat.cl_device)
            return synor__error(SYNOR_ENOTSUP,
                                "synor_trainer_use_opencl: OpenCL device %s is stopped or has no "
                                "context",
                                di.name);
        found = 1;
    }
    if (!found)
        return synor__error(SYNOR_ENOTSUP,
                            "synor_trainer_use_opencl: OpenCL device %u asked, but the runtime "
                            "has %u OpenCL device%s (no OpenCL platform here, or the runtime's "
                            "config has opencl off, or only accelerators while the device is a "
                            "CPU: SYNOR_OPENCL_ALL takes PoCL's)",
                            device, seen, seen == 1 ? "" : "s");
    train_ocl *g = synor__calloc(1, sizeof *g);
    if (!g)
        return synor__error(SYNOR_ENOMEM, "synor_trainer_use_opencl: out of memory");
    pthread_mutex_init(&g->lock, NULL);
    snprintf(g->device, sizeof g->device, "%s", nat.name ? nat.name : "opencl");
    snprintf(g->product, sizeof g->product, "%s", nat.product ? nat.product : "");
    g->ctx = nat.cl_context;
    g->id = nat.cl_device;
    g->stale = 1;
    t->ocl = g;
    int e = open_device(t, g);
    if (e) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", synor_errmsg());
        synor__train_ocl_free(t);
        return synor__error(e, "%s", msg);
    }
    int first = replicas == 0 ? 0 : t->nrep - replicas;
    for (int r = first; r < t->nrep; r++)
        t->rep[r].ocl = 1;
    return 0;
}

void synor__train_ocl_stats(const synor_trainer *t, synor_train_gpu_stats *out)
{
    train_ocl *g = t->ocl;
    pthread_mutex_lock(&g->lock);
    *out = g->st;
    snprintf(out->device, sizeof out->device, "%s", g->device);
    snprintf(out->product, sizeof out->product, "%s", g->product);
    pthread_mutex_unlock(&g->lock);
}
