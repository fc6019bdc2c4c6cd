/* test_runtime_coherence.c - a running writer owns its handle: nothing else
 * copies into any of its buffers. Each case is set up step by step on the
 * test GPU with a memory node of its own (test_runtime_stress.c finds the
 * same bugs in random graphs, by chance). The prefetch cases reach into the
 * runtime (runtime_internal.h): a kernel queues a prefetch request for its
 * own handle while it writes it, which is what a request queued for an
 * earlier reader and served late amounts to, and waits until the prefetch
 * thread has dealt with it.
 * Runs under ThreadSanitizer too (label concurrency). */
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime_internal.h"
#include "synor/error.h"
#include "synor/runtime.h"
#include "test.h"

#define N 4096 /* floats: 16 KiB a vector */

static synor_runtime *make(uint64_t gpu_mem, unsigned attempts, int prefetch)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.test_gpu_workers = 1;
    c.test_gpu_memory = gpu_mem;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0;
    c.max_attempts = attempts;
    c.prefetch = prefetch;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0 || synor_runtime_start(rt) < 0) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

static synor_handle *reg(synor_runtime *rt, float *p)
{
    synor_handle_desc d = {.ptr = p, .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {N}};
    synor_handle *h = NULL;
    return synor_handle_register(rt, &d, &h) == 0 ? h : NULL;
}

static int submit(synor_runtime *rt, const synor_kernel *k, synor_handle *h, synor_access m,
                  float arg, void *user)
{
    synor_task_spec t = {.kernel = k, .priority = SYNOR_PRIORITY_NORMAL, .ndata = h ? 1 : 0,
                         .data = {h}, .mode = {m}, .args = &arg, .args_size = sizeof arg,
                         .user = user};
    return synor_task_submit(rt, &t);
}

/* Spins (yielding) until done(arg) holds; gives up after 10 s so that a
 * broken runtime fails the test instead of hanging it. */
static void wait_until(int (*done)(void *), void *arg)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (done(arg))
            return;
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - t0.tv_sec < 10);
}

/* data 0 (W): every element = the float in the arguments. */
static int k_fill(const synor_task_ctx *c)
{
    float v;
    memcpy(&v, c->args, sizeof v);
    float *x = c->buffers[0];
    for (size_t i = 0; i < N; i++)
        x[i] = v;
    return 0;
}
static const synor_kernel fill_gpu = {.name = "fill_gpu", .fn = {[SYNOR_KIND_GPU] = k_fill}};

/* --------------------------------------------------------- prefetch */

static int unpinned(void *d) { return atomic_load(&((synor_handle *)d)->pins) == 0; }

/* k_fill, then a prefetch request for the handle to the memory of the
 * device running this kernel, as a reader queued there earlier would have
 * left; returns once the prefetch thread has served it. */
static int k_fill_then_prefetch(const synor_task_ctx *c)
{
    k_fill(c);
    synor_handle *d = c->data[0];
    static synor__task reader; /* one test at a time */
    memset(&reader, 0, sizeof reader);
    reader.ndata = 1;
    reader.data[0] = d;
    reader.mode[0] = SYNOR_ACCESS_R;
    synor__prefetch_task(d->rt, &reader, c->kind == SYNOR_KIND_GPU ? 1 : 0);
    wait_until(unpinned, d);
    return 0;
}
static const synor_kernel fill_prefetch_cpu = {.name = "fill_prefetch_cpu",
                                               .fn = {[SYNOR_KIND_CPU] = k_fill_then_prefetch}};
static const synor_kernel fill_prefetch_gpu = {.name = "fill_prefetch_gpu",
                                               .fn = {[SYNOR_KIND_GPU] = k_fill_then_prefetch}};

/* The writer runs on the GPU, its replica there not yet valid (the data
 * is valid on the host only): the request must not copy the host's data
 * over what the writer wrote. */
TEST(a_late_prefetch_never_overwrites_a_writer_on_a_device)
{
    synor_runtime *rt = make(1 << 20, 1, 1);
    ASSERT(rt);
    static float x[N];
    memset(x, 0, sizeof x);
    synor_handle *h = reg(rt, x);
    ASSERT(h);
    ASSERT_OK(submit(rt, &fill_prefetch_gpu, h, SYNOR_ACCESS_W, 2, NULL));
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (size_t i = 0; i < N; i++)
        ASSERT_EQ(x[i], 2.0f);
    ASSERT_OK(synor_handle_unregister(h));
    synor_runtime_destroy(rt);
}

/* The writer runs on the CPU, in host memory; the data's only valid copy
 * is Modified on the GPU: the request must not write that copy back over
 * what the writer wrote. */
TEST(a_late_prefetch_never_overwrites_a_writer_on_the_host)
{
    synor_runtime *rt = make(1 << 20, 1, 1);
    ASSERT(rt);
    static float x[N];
    memset(x, 0, sizeof x);
    synor_handle *h = reg(rt, x);
    ASSERT(h);
    ASSERT_OK(submit(rt, &fill_gpu, h, SYNOR_ACCESS_W, 1, NULL));
    ASSERT_OK(submit(rt, &fill_prefetch_cpu, h, SYNOR_ACCESS_W, 2, NULL));
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (size_t i = 0; i < N; i++)
        ASSERT_EQ(x[i], 2.0f);
    ASSERT_OK(synor_handle_unregister(h));
    synor_runtime_destroy(rt);
}

/* --------------------------------------------------------- eviction */

static int room_made(void *rt)
{
    synor_runtime_stats s;
    synor_runtime_get_stats(rt, &s);
    return s.evictions || s.retried;
}

static atomic_int fill_written;
static int written(void *unused)
{
    (void)unused;
    return atomic_load(&fill_written);
}

/* k_fill, then holds on until the GPU has had to make room (user: the
 * runtime), so the CPU is still writing when the GPU evicts. */
static int k_fill_then_wait(const synor_task_ctx *c)
{
    k_fill(c);
    atomic_store(&fill_written, 1);
    wait_until(room_made, c->user);
    return 0;
}
static const synor_kernel fill_wait_cpu = {.name = "fill_wait_cpu",
                                           .fn = {[SYNOR_KIND_CPU] = k_fill_then_wait}};

/* No data: holds the GPU's worker until the CPU task has written. */
static int k_hold(const synor_task_ctx *c)
{
    (void)c;
    wait_until(written, NULL);
    return 0;
}
static const synor_kernel hold_gpu = {.name = "hold_gpu", .fn = {[SYNOR_KIND_GPU] = k_hold}};

/* data 0 (RW): x += 1. */
static int k_inc(const synor_task_ctx *c)
{
    float *x = c->buffers[0];
    for (size_t i = 0; i < N; i++)
        x[i] += 1;
    return 0;
}
static const synor_kernel inc_gpu = {.name = "inc_gpu", .fn = {[SYNOR_KIND_GPU] = k_inc}};

/* A datum Modified on the GPU (its only valid copy) is being rewritten on
 * the CPU when the GPU needs its room: writing the GPU copy back to the
 * host then would overwrite what the CPU task writes. The replica stays
 * until the writer is done (the GPU task meanwhile fails for want of room
 * and is retried). */
TEST(eviction_never_writes_back_into_data_being_written)
{
    /* Room for one vector; prefetch off: only acquire makes room. */
    synor_runtime *rt = make(N * sizeof(float), 100, 0);
    ASSERT(rt);
    static float d[N], e[N];
    for (size_t i = 0; i < N; i++)
        e[i] = (float)i;
    synor_handle *hd = reg(rt, d), *he = reg(rt, e);
    ASSERT(hd && he);
    atomic_store(&fill_written, 0);
    /* d = 1 on the GPU: Modified there, Invalid on the host. */
    ASSERT_OK(submit(rt, &fill_gpu, hd, SYNOR_ACCESS_W, 1, NULL));
    /* d = 2 on the CPU (after the GPU's write; holds on until the eviction). */
    ASSERT_OK(submit(rt, &fill_wait_cpu, hd, SYNOR_ACCESS_W, 2, rt));
    /* The GPU's worker waits until the CPU has written d; then e += 1
     * needs d's room there. */
    ASSERT_OK(submit(rt, &hold_gpu, NULL, SYNOR_ACCESS_R, 0, NULL));
    ASSERT_OK(submit(rt, &inc_gpu, he, SYNOR_ACCESS_RW, 0, NULL));
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (size_t i = 0; i < N; i++) {
        ASSERT_EQ(d[i], 2.0f);
        ASSERT_EQ(e[i], (float)i + 1);
    }
    ASSERT_OK(synor_handle_unregister(hd));
    ASSERT_OK(synor_handle_unregister(he));
    synor_runtime_destroy(rt);
}

TEST_MAIN(a_late_prefetch_never_overwrites_a_writer_on_a_device,
          a_late_prefetch_never_overwrites_a_writer_on_the_host,
          eviction_never_writes_back_into_data_being_written)
