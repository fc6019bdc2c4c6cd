/* test_runtime_retry.c - failed attempts: a retry starts from the data its
 * task found, whether the attempt ran in host memory (the only copy) or in
 * a device's own memory (a replica that was the only valid copy, or one of
 * several), and a writer that fails for good leaves copies that agree.
 * Runs under ThreadSanitizer too (label concurrency). */
#include <string.h>

#include "common/common.h"
#include "synor/error.h"
#include "synor/runtime.h"
#include "test.h"

#define N 4096 /* floats: 16 KiB a vector */

static synor_runtime *make(unsigned cpu, uint64_t gpu_mem, unsigned attempts)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = cpu;
    c.test_gpu_workers = gpu_mem ? 1 : 0;
    c.test_gpu_memory = gpu_mem;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0;
    c.max_attempts = attempts;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0 || synor_runtime_start(rt) < 0) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

static synor_handle *reg(synor_runtime *rt, float *p, size_t n)
{
    synor_handle_desc d = {.ptr = p, .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {n}};
    synor_handle *h = NULL;
    return synor_handle_register(rt, &d, &h) == 0 ? h : NULL;
}

static int submit(synor_runtime *rt, const synor_kernel *k, unsigned n, synor_handle *const *h,
                  const synor_access *m)
{
    synor_task_spec t = {.kernel = k, .priority = SYNOR_PRIORITY_NORMAL, .ndata = n};
    for (unsigned i = 0; i < n; i++) {
        t.data[i] = h[i];
        t.mode[i] = m[i];
    }
    return synor_task_submit(rt, &t);
}

/* data 0 (RW): x += 1, but the first attempt adds 1 to the first half
 * only and then fails, as a kernel that hits an error part-way would. */
static int k_inc_fail_halfway(const synor_task_ctx *c)
{
    float *x = c->buffers[0];
    size_t n = synor_handle_dim(c->data[0], 0);
    size_t upto = c->attempt == 0 ? n / 2 : n;
    for (size_t i = 0; i < upto; i++)
        x[i] += 1;
    return upto < n ? synor__error(SYNOR_EIO, "injected fault half-way") : 0;
}
static const synor_kernel inc_fail_cpu = {.name = "inc_fail_cpu",
                                          .fn = {[SYNOR_KIND_CPU] = k_inc_fail_halfway}};
static const synor_kernel inc_fail_gpu = {.name = "inc_fail_gpu",
                                          .fn = {[SYNOR_KIND_GPU] = k_inc_fail_halfway}};

static int all_equal(const float *x, size_t n, float base_step, float add)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] != (float)i * base_step + add)
            return 0;
    return 1;
}

/* Host memory only (no device with memory of its own): the data the
 * failed attempt half-wrote are the only copy. */
TEST(a_retry_on_the_host_starts_from_the_data_its_task_found)
{
    synor_runtime *rt = make(2, 0, 3);
    ASSERT(rt);
    static float x[N];
    for (size_t i = 0; i < N; i++)
        x[i] = (float)i;
    synor_handle *h = reg(rt, x, N);
    ASSERT(h);
    synor_access rw = SYNOR_ACCESS_RW;
    for (int k = 0; k < 3; k++)
        ASSERT_OK(submit(rt, &inc_fail_cpu, 1, &h, &rw));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT(all_equal(x, N, 1, 3));
    synor_runtime_stats s;
    synor_runtime_get_stats(rt, &s);
    ASSERT_EQ(s.retried, 3);
    ASSERT_OK(synor_handle_unregister(h));
    synor_runtime_destroy(rt);
}

/* On the GPU's own memory, both when the failed attempt's replica was the
 * only valid copy (Modified there by the task before) and when the host
 * also held one (Shared): the retry, on the GPU again, must not see the
 * half-written replica. */
TEST(a_retry_on_a_device_starts_from_the_data_its_task_found)
{
    synor_runtime *rt = make(1, 1 << 20, 3);
    ASSERT(rt);
    static float x[N], y[N];
    for (size_t i = 0; i < N; i++)
        x[i] = y[i] = (float)i;
    synor_handle *hx = reg(rt, x, N), *hy = reg(rt, y, N);
    ASSERT(hx && hy);
    synor_access rw = SYNOR_ACCESS_RW;
    /* x: Shared on the host and the GPU when each faulty task starts. */
    ASSERT_OK(submit(rt, &inc_fail_gpu, 1, &hx, &rw));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT(all_equal(x, N, 1, 1));
    ASSERT_OK(submit(rt, &inc_fail_gpu, 1, &hx, &rw));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT(all_equal(x, N, 1, 2));
    /* y: Modified on the GPU (its only copy) before the second and third. */
    for (int k = 0; k < 3; k++)
        ASSERT_OK(submit(rt, &inc_fail_gpu, 1, &hy, &rw));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT(all_equal(y, N, 1, 3));
    ASSERT_OK(synor_handle_unregister(hx));
    ASSERT_OK(synor_handle_unregister(hy));
    synor_runtime_destroy(rt);
}

/* data 0 (W): scribbles over the first half, then fails (every attempt). */
static int k_scribble_fail(const synor_task_ctx *c)
{
    float *x = c->buffers[0];
    for (size_t i = 0; i < synor_handle_dim(c->data[0], 0) / 2; i++)
        x[i] = -1;
    return synor__error(SYNOR_EIO, "injected fault");
}
static const synor_kernel scribble_gpu = {.name = "scribble_gpu",
                                          .fn = {[SYNOR_KIND_GPU] = k_scribble_fail}};

/* data 0 (R), data 1 (W): y = x. */
static int k_copy(const synor_task_ctx *c)
{
    memcpy(c->buffers[1], c->buffers[0], synor_handle_dim(c->data[0], 0) * sizeof(float));
    return 0;
}
static const synor_kernel copy_cpu = {.name = "copy_cpu", .fn = {[SYNOR_KIND_CPU] = k_copy}};
static const synor_kernel copy_gpu = {.name = "copy_gpu", .fn = {[SYNOR_KIND_GPU] = k_copy}};

/* A writer that fails for good on the GPU leaves its data unspecified, but
 * every copy must agree: readers get the same values wherever they run. */
TEST(a_failed_writer_leaves_copies_that_agree)
{
    synor_runtime *rt = make(1, 1 << 20, 1);
    ASSERT(rt);
    static float x[N], on_cpu[N], on_gpu[N];
    for (size_t i = 0; i < N; i++)
        x[i] = (float)i;
    synor_handle *hx = reg(rt, x, N), *hc = reg(rt, on_cpu, N), *hg = reg(rt, on_gpu, N);
    ASSERT(hx && hc && hg);
    synor_access r_w[2] = {SYNOR_ACCESS_R, SYNOR_ACCESS_W}, w = SYNOR_ACCESS_W;
    synor_handle *xg[2] = {hx, hg}, *xc[2] = {hx, hc};
    /* A valid replica of x on the GPU and on the host. */
    ASSERT_OK(submit(rt, &copy_gpu, 2, xg, r_w));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT_OK(submit(rt, &scribble_gpu, 1, &hx, &w));
    ASSERT_EQ(synor_runtime_wait_all(rt), SYNOR_EIO);
    ASSERT_CONTAINS(synor_errmsg(), "scribble_gpu");
    ASSERT_OK(submit(rt, &copy_gpu, 2, xg, r_w));
    ASSERT_OK(submit(rt, &copy_cpu, 2, xc, r_w));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT(memcmp(on_cpu, on_gpu, sizeof on_cpu) == 0);
    ASSERT(memcmp(on_cpu, x, sizeof on_cpu) == 0);
    ASSERT_OK(synor_handle_unregister(hx));
    ASSERT_OK(synor_handle_unregister(hc));
    ASSERT_OK(synor_handle_unregister(hg));
    synor_runtime_destroy(rt);
}

/* data 0 (RW): x += 1 (never fails). */
static int k_inc(const synor_task_ctx *c)
{
    float *x = c->buffers[0];
    for (size_t i = 0; i < synor_handle_dim(c->data[0], 0); i++)
        x[i] += 1;
    return 0;
}
static const synor_kernel inc_gpu = {.name = "inc_gpu", .fn = {[SYNOR_KIND_GPU] = k_inc}};
static const synor_kernel inc_gpu_clean = {.name = "inc_gpu_clean",
                                           .fn = {[SYNOR_KIND_GPU] = k_inc},
                                           .flags = SYNOR_KERNEL_FAILS_BEFORE_WRITING};

/* What keeping costs on a device: the host's copy of a read-write datum
 * whose only valid copy is on the GPU is brought up to date before an
 * attempt that may be retried - unless the kernel fails only before
 * writing. */
TEST(only_a_kernel_that_may_fail_after_writing_pays_for_a_kept_copy)
{
    synor_runtime *rt = make(1, 1 << 20, 3);
    ASSERT(rt);
    static float y[N];
    for (size_t i = 0; i < N; i++)
        y[i] = (float)i;
    synor_handle *h = reg(rt, y, N);
    ASSERT(h);
    synor_access rw = SYNOR_ACCESS_RW;
    /* 1: to the GPU (the host's copy stays valid: nothing to keep). */
    ASSERT_OK(submit(rt, &inc_gpu, 1, &h, &rw));
    ASSERT_OK(synor_runtime_wait_all(rt)); /* 2: back to the host */
    ASSERT_OK(submit(rt, &inc_gpu, 1, &h, &rw));
    /* 3: y is Modified on the GPU only: kept in the host's copy first. */
    ASSERT_OK(submit(rt, &inc_gpu, 1, &h, &rw));
    ASSERT_OK(submit(rt, &inc_gpu_clean, 1, &h, &rw)); /* nothing */
    ASSERT_OK(synor_runtime_wait_all(rt));             /* 4: back to the host */
    synor_runtime_stats s;
    synor_runtime_get_stats(rt, &s);
    ASSERT_EQ(s.transfers, 4);
    ASSERT(all_equal(y, N, 1, 4));
    ASSERT_OK(synor_handle_unregister(h));
    synor_runtime_destroy(rt);
}

TEST_MAIN(only_a_kernel_that_may_fail_after_writing_pays_for_a_kept_copy, a_retry_on_the_host_starts_from_the_data_its_task_found,
          a_retry_on_a_device_starts_from_the_data_its_task_found,
          a_failed_writer_leaves_copies_that_agree)
