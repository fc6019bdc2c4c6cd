/* test_runtime_memory.c - memory nodes and transfers: replicas on a device
 * with memory of its own (the test GPU with cfg.test_gpu_memory; OpenCL
 * devices, PoCL's CPU device in CI), MSI coherence, write-back, capacity
 * and LRU eviction, strided tiles, stopping a device, traces of real runs.
 * Runs under ThreadSanitizer too (label concurrency). */
#include <cblas.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"
#include "synor/error.h"
#include "synor/report.h"
#include "synor/runtime.h"
#include "synor/sim.h"
#include "test.h"

static synor_runtime *make(unsigned cpu, unsigned gpu, uint64_t gpu_mem, int trace)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = cpu;
    c.test_gpu_workers = gpu;
    c.cuda = 0; /* the test GPU only: a real one would shift device numbers */
    c.test_gpu_memory = gpu_mem;
    c.pin_workers = 0;
    c.trace = trace;
    c.opencl = SYNOR_OPENCL_OFF;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0 || synor_runtime_start(rt) < 0) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

/* data 0 (RW): every float += 1; records where it ran in *(int *)user. */
static int k_inc(const synor_task_ctx *c)
{
    float *x = c->buffers[0];
    size_t rows = synor_handle_dim(c->data[0], 0), cols = synor_handle_dim(c->data[0], 1);
    for (size_t j = 0; j < cols; j++)
        for (size_t i = 0; i < rows; i++)
            x[i + j * c->ld[0]] += 1.0f;
    if (c->user)
        *(int *)c->user = (int)c->kind;
    return 0;
}
static const synor_kernel inc_cpu = {.name = "inc_cpu", .fn = {[SYNOR_KIND_CPU] = k_inc}};
static const synor_kernel inc_gpu = {.name = "inc_gpu", .fn = {[SYNOR_KIND_GPU] = k_inc}};
static const synor_kernel inc_any = {
    .name = "inc_any", .fn = {[SYNOR_KIND_CPU] = k_inc, [SYNOR_KIND_GPU] = k_inc}};

/* data 0 (R), data 1 (W): y = 2 x. */
static int k_double(const synor_task_ctx *c)
{
    const float *x = c->buffers[0];
    float *y = c->buffers[1];
    size_t n = synor_handle_dim(c->data[0], 0);
    for (size_t i = 0; i < n; i++)
        y[i] = 2 * x[i];
    return 0;
}
static const synor_kernel double_gpu = {.name = "double_gpu", .fn = {[SYNOR_KIND_GPU] = k_double}};

static synor_handle *reg(synor_runtime *rt, float *p, size_t rows, size_t cols, size_t ld)
{
    synor_handle_desc d = {.ptr = p, .dtype = SYNOR_DTYPE_FP32, .ndim = cols ? 2 : 1,
                           .shape = {rows, cols ? cols : 1}, .ld = ld};
    synor_handle *h = NULL;
    return synor_handle_register(rt, &d, &h) == 0 ? h : NULL;
}

static int submit1(synor_runtime *rt, const synor_kernel *k, synor_handle *h, synor_access m,
                   void *user)
{
    synor_task_spec t = {.kernel = k, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 1,
                         .data = {h}, .mode = {m}, .user = user};
    return synor_task_submit(rt, &t);
}

TEST(data_moves_between_host_and_device_memory)
{
    synor_runtime *rt = make(1, 1, 1 << 20, 1);
    ASSERT(rt);
    static float x[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)i;
    synor_handle *h = reg(rt, x, 1000, 0, 0);
    ASSERT(h);
    /* CPU, GPU, CPU, GPU...: each step needs the other's result. */
    for (int r = 0; r < 10; r++)
        ASSERT_OK(submit1(rt, r % 2 ? &inc_gpu : &inc_cpu, h, SYNOR_ACCESS_RW, NULL));
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (int i = 0; i < 1000; i++)
        ASSERT_EQ(x[i], (float)i + 10);
    synor_runtime_stats s;
    synor_runtime_get_stats(rt, &s);
    ASSERT_EQ(s.transfers, 10); /* 5 to the GPU, 5 back (the last by wait_all) */
    ASSERT_EQ(s.bytes_moved, 10 * 4000);

    synor_trace *tr = NULL;
    ASSERT_OK(synor_runtime_trace(rt, "ping-pong", &tr));
    ASSERT_EQ(tr->n_tasks, 10);
    ASSERT_EQ(tr->n_transfers, 10);
    int to_gpu = 0, to_host = 0;
    for (size_t i = 0; i < tr->n_transfers; i++) {
        to_gpu += strcmp(tr->transfers[i].link, "host->test-gpu") == 0;
        to_host += strcmp(tr->transfers[i].link, "test-gpu->host") == 0;
        ASSERT_EQ(tr->transfers[i].bytes, 4000);
        ASSERT(tr->transfers[i].end >= tr->transfers[i].start);
    }
    ASSERT_EQ(to_gpu, 5);
    ASSERT_EQ(to_host, 5);
    for (size_t i = 0; i < tr->n_tasks; i++) {
        ASSERT_STREQ(tr->devices[tr->tasks[i].device].name, i % 2 ? "test-gpu" : "cpu");
        ASSERT(!tr->devices[tr->tasks[i].device].simulated);
    }
    /* The simulator's reports work on it. */
    char *txt = synor_report_text(tr, NULL);
    ASSERT(txt);
    ASSERT_CONTAINS(txt, "test-gpu");
    ASSERT_CONTAINS(txt, "DATA MOVEMENT");
    ASSERT_CONTAINS(txt, "host->test-gpu               host                 5        20000");
    free(txt);
    char *js = synor_trace_to_json(tr);
    ASSERT(js);
    synor_trace *back = NULL;
    ASSERT_OK(synor_trace_load_string(js, strlen(js), "run.json", &back));
    ASSERT_EQ(back->n_transfers, 10);
    synor_trace_destroy(back);
    free(js);
    synor_trace_destroy(tr);
    ASSERT_OK(synor_handle_unregister(h));
    synor_runtime_destroy(rt);
}

TEST(inputs_are_prefetched_while_the_task_waits_in_its_queue)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.test_gpu_workers = 1;
    c.cuda = 0; /* the test GPU only: a real one would shift device numbers */
    c.test_gpu_memory = 1 << 20;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.trace = 1;
    synor_runtime *rt = NULL;
    ASSERT_OK(synor_runtime_create(&c, &rt));
    static float x[1000], y[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)i;
    synor_handle *hx = reg(rt, x, 1000, 0, 0), *hy = reg(rt, y, 1000, 0, 0);
    /* Not started: the task waits in the GPU's queue; its input moves now. */
    synor_task_spec t = {.kernel = &double_gpu, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 2,
                         .data = {hx, hy}, .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_W}};
    ASSERT_OK(synor_task_submit(rt, &t));
    synor_runtime_stats s;
    for (int spin = 0; spin < 5000; spin++) {
        synor_runtime_get_stats(rt, &s);
        if (s.prefetched)
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    ASSERT_EQ(s.prefetched, 1);
    ASSERT_EQ(s.transfers, 1);
    ASSERT_OK(synor_runtime_start(rt));
    ASSERT_OK(synor_runtime_wait_all(rt));
    synor_runtime_get_stats(rt, &s);
    ASSERT_EQ(s.transfers, 2); /* x there (prefetched), y back: nothing more */
    for (int i = 0; i < 1000; i++)
        ASSERT_EQ(y[i], 2.0f * (float)i);
    synor_trace *tr = NULL;
    ASSERT_OK(synor_runtime_trace(rt, "prefetch", &tr));
    ASSERT_EQ(tr->n_tasks, 1);
    ASSERT_STREQ(tr->transfers[0].link, "host->test-gpu");
    ASSERT(tr->transfers[0].end <= tr->tasks[0].start);
    synor_trace_destroy(tr);
    ASSERT_OK(synor_handle_unregister(hx));
    ASSERT_OK(synor_handle_unregister(hy));
    synor_runtime_destroy(rt);
}

TEST(readers_share_a_replica_and_a_write_invalidates_it)
{
    synor_runtime *rt = make(1, 1, 1 << 20, 0);
    ASSERT(rt);
    static float x[256], y[8][256];
    for (int i = 0; i < 256; i++)
        x[i] = (float)i;
    synor_handle *hx = reg(rt, x, 256, 0, 0), *hy[8];
    for (int k = 0; k < 8; k++) {
        hy[k] = reg(rt, y[k], 256, 0, 0);
        synor_task_spec t = {.kernel = &double_gpu, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 2,
                             .data = {hx, hy[k]}, .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_W}};
        ASSERT_OK(synor_task_submit(rt, &t));
    }
    ASSERT_OK(synor_runtime_wait_all(rt));
    synor_runtime_stats s;
    synor_runtime_get_stats(rt, &s);
    ASSERT_EQ(s.transfers, 1 + 8); /* x once to the GPU; each y back once */
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < 256; i++)
            ASSERT_EQ(y[k][i], 2.0f * (float)i);
    /* A write on the host invalidates the GPU copy: the next GPU reader gets
     * the new value, not the stale replica. */
    ASSERT_OK(submit1(rt, &inc_cpu, hx, SYNOR_ACCESS_RW, NULL));
    synor_task_spec t = {.kernel = &double_gpu, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 2,
                         .data = {hx, hy[0]}, .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_W}};
    ASSERT_OK(synor_task_submit(rt, &t));
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (int i = 0; i < 256; i++)
        ASSERT_EQ(y[0][i], 2.0f * (float)(i + 1));
    for (int k = 0; k < 8; k++)
        ASSERT_OK(synor_handle_unregister(hy[k]));
    ASSERT_OK(synor_handle_unregister(hx));
    synor_runtime_destroy(rt);
}

TEST(full_device_memory_evicts_least_recently_used)
{
    /* Room for 3 vectors of 4 KB; 12 vectors go through the GPU twice. */
    synor_runtime *rt = make(1, 1, 3 * 4096, 0);
    ASSERT(rt);
    static float v[12][1024];
    synor_handle *h[12];
    for (int k = 0; k < 12; k++) {
        for (int i = 0; i < 1024; i++)
            v[k][i] = (float)k;
        ASSERT((h[k] = reg(rt, v[k], 1024, 0, 0)) != NULL);
    }
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 12; k++)
            ASSERT_OK(submit1(rt, &inc_gpu, h[k], SYNOR_ACCESS_RW, NULL));
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (int k = 0; k < 12; k++)
        for (int i = 0; i < 1024; i++)
            ASSERT_EQ(v[k][i], (float)k + 2);
    synor_runtime_stats s;
    synor_runtime_get_stats(rt, &s);
    ASSERT(s.evictions >= 9); /* modified replicas written back, then dropped */

    /* Larger than the whole device: the GPU-only task fails, naming the
     * node and the sizes; a task that also runs on the CPU moves there. */
    static float big[8192];
    synor_handle *hb = reg(rt, big, 8192, 0, 0);
    ASSERT_OK(submit1(rt, &inc_gpu, hb, SYNOR_ACCESS_RW, NULL));
    int rc = synor_runtime_wait_all(rt);
    ASSERT_EQ(rc, SYNOR_ENOMEM);
    ASSERT_CONTAINS(synor_errmsg(), "memory node test-gpu");
    ASSERT_CONTAINS(synor_errmsg(), "32768 bytes");
    ASSERT_CONTAINS(synor_errmsg(), "inc_gpu");
    ASSERT_EQ(big[0], 0.0f); /* never ran */
    ASSERT_OK(submit1(rt, &inc_any, hb, SYNOR_ACCESS_RW, NULL));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT_EQ(big[8191], 1.0f);
    ASSERT_OK(synor_handle_unregister(hb));
    for (int k = 0; k < 12; k++)
        ASSERT_OK(synor_handle_unregister(h[k]));
    synor_runtime_destroy(rt);
}

TEST(strided_tiles_are_packed_and_unpacked)
{
    synor_runtime *rt = make(1, 1, 1 << 20, 0);
    ASSERT(rt);
    /* A 10 x 6 tile at (2, 1) of a 16 x 8 matrix (column-major, ld 16). */
    static float m[16 * 8];
    for (int i = 0; i < 16 * 8; i++)
        m[i] = (float)i;
    synor_handle *t = reg(rt, m + 2 + 1 * 16, 10, 6, 16);
    ASSERT(t);
    ASSERT_OK(submit1(rt, &inc_gpu, t, SYNOR_ACCESS_RW, NULL));
    ASSERT_OK(synor_handle_unregister(t)); /* writes back */
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 16; i++) {
            int in = i >= 2 && i < 12 && j >= 1 && j < 7;
            ASSERT_EQ(m[i + j * 16], (float)(i + j * 16) + (in ? 1.0f : 0.0f));
        }
    synor_runtime_destroy(rt);
}

static atomic_int slow_started;
static int k_slow_inc(const synor_task_ctx *c)
{
    atomic_fetch_add(&slow_started, 1);
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
    return k_inc(c);
}
static const synor_kernel slow_any = {
    .name = "slow_any", .fn = {[SYNOR_KIND_CPU] = k_slow_inc, [SYNOR_KIND_GPU] = k_slow_inc}};
static const synor_kernel slow_gpu = {.name = "slow_gpu", .fn = {[SYNOR_KIND_GPU] = k_slow_inc}};

TEST(a_stopped_device_hands_its_tasks_over)
{
    synor_runtime *rt = make(1, 1, 0, 0);
    ASSERT(rt);
    enum { N = 400 };
    static float v[N];
    static int where[N];
    synor_handle *h[N];
    for (int i = 0; i < N; i++) {
        v[i] = 0;
        where[i] = -1;
        ASSERT((h[i] = reg(rt, &v[i], 1, 0, 0)) != NULL);
        ASSERT_OK(submit1(rt, &slow_any, h[i], SYNOR_ACCESS_RW, &where[i]));
    }
    while (atomic_load(&slow_started) < 20)
        ;
    ASSERT_EQ(synor_runtime_device_stop(rt, 0), SYNOR_EINVAL); /* not the host */
    ASSERT_OK(synor_runtime_device_stop(rt, 1));
    synor_runtime_device_info di;
    ASSERT_OK(synor_runtime_device_get(rt, 1, &di));
    ASSERT(di.stopped);
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (int i = 0; i < N; i++)
        ASSERT_EQ(v[i], 1.0f);
    /* After the stop, nothing more ran on the GPU. */
    ASSERT_OK(submit1(rt, &slow_any, h[0], SYNOR_ACCESS_RW, &where[0]));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT_EQ(where[0], SYNOR_KIND_CPU);
    /* A task only the stopped device implements fails, naming it. */
    ASSERT_OK(submit1(rt, &slow_gpu, h[1], SYNOR_ACCESS_RW, NULL));
    ASSERT_EQ(synor_runtime_wait_all(rt), SYNOR_ENOTSUP);
    ASSERT_CONTAINS(synor_errmsg(), "slow_gpu");
    ASSERT_CONTAINS(synor_errmsg(), "no running device");
    for (int i = 0; i < N; i++)
        ASSERT_OK(synor_handle_unregister(h[i]));
    synor_runtime_destroy(rt);
}

TEST(rebalancing_moves_queued_work_to_the_idle_device)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.test_gpu_workers = 1;
    c.cuda = 0; /* the test GPU only: a real one would shift device numbers */
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0; /* the device numbers below: the CPU and the test GPU only */
    c.policy = SYNOR_PLACE_LOAD;
    c.rebalance_us = 0; /* only the explicit round below */
    synor_runtime *rt = NULL;
    ASSERT_OK(synor_runtime_create(&c, &rt));
    enum { N = 40 };
    static float v[N];
    synor_handle *h[N];
    /* Not started: 10 tasks either device runs are spread 5/5 by load, then
     * 20 GPU-only tasks pile onto the GPU: 25 queued there, 5 on the CPU. */
    for (int i = 0; i < N; i++) {
        v[i] = 0;
        ASSERT((h[i] = reg(rt, &v[i], 1, 0, 0)) != NULL);
    }
    for (int i = 0; i < 10; i++)
        ASSERT_OK(submit1(rt, &inc_any, h[i], SYNOR_ACCESS_RW, NULL));
    for (int i = 10; i < 30; i++)
        ASSERT_OK(submit1(rt, &inc_gpu, h[i], SYNOR_ACCESS_RW, NULL));
    /* A hinted task stays where it was put. */
    synor_task_spec t = {.kernel = &inc_any, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 1,
                         .data = {h[30]}, .mode = {SYNOR_ACCESS_RW}, .device = 2};
    ASSERT_OK(synor_task_submit(rt, &t));
    t.device = 9;
    ASSERT_EQ(synor_task_submit(rt, &t), SYNOR_EINVAL);
    t.device = 2;
    t.kernel = &inc_cpu;
    ASSERT_EQ(synor_task_submit(rt, &t), SYNOR_EINVAL);
    /* The 5 movable tasks on the GPU go to the CPU: 21 vs 10. */
    ASSERT_EQ(synor_runtime_rebalance(rt), 5);
    ASSERT_EQ(synor_runtime_rebalance(rt), 0);
    ASSERT_OK(synor_runtime_start(rt));
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (int i = 0; i < 31; i++)
        ASSERT_EQ(v[i], 1.0f);
    synor_runtime_stats st;
    synor_runtime_get_stats(rt, &st);
    ASSERT_EQ(st.rebalanced, 5);
    for (int i = 0; i < N; i++)
        ASSERT_OK(synor_handle_unregister(h[i]));
    synor_runtime_destroy(rt);
}

/* ------------------------------------------------------------- OpenCL */

static synor_runtime *make_opencl(unsigned *cl_dev)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_ALL;
    c.trace = 1;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0)
        return NULL;
    for (unsigned i = 1; i < synor_runtime_device_count(rt); i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(rt, i, &di) == 0 && !strcmp(di.backend, "opencl") &&
            !di.stopped) {
            *cl_dev = i;
            if (synor_runtime_start(rt) == 0)
                return rt;
            break;
        }
    }
    synor_runtime_destroy(rt);
    return NULL;
}

TEST(opencl_tiled_gemm_matches_blas)
{
#if !SYNOR_HAVE_OPENCL
    TEST_SKIP("built without OpenCL");
#else
    unsigned cl = 0;
    synor_runtime *rt = make_opencl(&cl);
    if (!rt)
        TEST_SKIP("no usable OpenCL device (install pocl-opencl-icd)");
    /* Odd sizes: edge tiles, and the 16 x 16 work-groups' bounds checks. */
    size_t m = 150, n = 130, k = 70, nb = 64;
    float *a = malloc(m * k * 4), *b = malloc(k * n * 4), *c = malloc(m * n * 4),
          *ref = malloc(m * n * 4);
    srand(7);
    for (size_t i = 0; i < m * k; i++)
        a[i] = (float)rand() / RAND_MAX - 0.5f;
    for (size_t i = 0; i < k * n; i++)
        b[i] = (float)rand() / RAND_MAX - 0.5f;
    for (size_t i = 0; i < m * n; i++)
        c[i] = ref[i] = (float)rand() / RAND_MAX;
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.5f, a,
                (int)m, b, (int)k, 0.5f, ref, (int)m);
    ASSERT_OK(synor_tiled_sgemm(rt, m, n, k, 1.5f, a, m, b, k, 0.5f, c, m, nb));
    double err = 0;
    for (size_t i = 0; i < m * n; i++)
        err = fmax(err, fabs(c[i] - ref[i]));
    ASSERT(err < 1e-4);
    synor_trace *tr = NULL;
    ASSERT_OK(synor_runtime_trace(rt, "gemm", &tr));
    (void)cl;
    size_t on_cl = 0;
    for (size_t i = 0; i < tr->n_tasks; i++)
        on_cl += strcmp(tr->devices[tr->tasks[i].device].name, "opencl0") == 0;
    ASSERT(on_cl > 0); /* the OpenCL device took part ... */
    ASSERT(tr->n_transfers > 0); /* ... through its own memory */
    synor_trace_destroy(tr);
    free(a);
    free(b);
    free(c);
    free(ref);
    synor_runtime_destroy(rt);
#endif
}

/* A CUDA GPU, when there is one: tiled SGEMM spread over it and the CPU,
 * and the element-wise kernels pinned to it, against the CPU's results. */
TEST(cuda_kernels_match_the_cpu)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 1;
    synor_runtime *rt = NULL;
    ASSERT_OK(synor_runtime_create(&c, &rt));
    unsigned cu = 0;
    for (unsigned i = 1; i < synor_runtime_device_count(rt) && !cu; i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(rt, i, &di) == 0 && !strcmp(di.backend, "cuda") && !di.stopped)
            cu = i;
    }
    if (!cu) {
        synor_runtime_destroy(rt);
        TEST_SKIP("no CUDA GPU on this machine");
    }
    ASSERT_OK(synor_runtime_start(rt));
    size_t m = 1000, n = 700, k = 300;
    float *a = malloc(m * k * 4), *b = malloc(k * n * 4), *cm = calloc(m * n, 4),
          *ref = calloc(m * n, 4);
    for (size_t i = 0; i < m * k; i++)
        a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < k * n; i++)
        b[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a,
                (int)m, b, (int)k, 0.0f, ref, (int)m);
    ASSERT_OK(synor_tiled_sgemm(rt, m, n, k, 1.0f, a, m, b, k, 0.0f, cm, m, 256));
    double err = 0;
    for (size_t i = 0; i < m * n; i++)
        err = fmax(err, fabs(cm[i] - ref[i]));
    ASSERT(err < 1e-3);
    /* GeLU on the GPU (hinted there) against the CPU kernel. */
    static float x[100000], y_gpu[100000], y_cpu[100000];
    for (int i = 0; i < 100000; i++)
        x[i] = (float)(i % 2000) / 200.0f - 5.0f;
    synor_handle *hx = reg(rt, x, 100000, 0, 0), *hg = reg(rt, y_gpu, 100000, 0, 0),
                 *hc = reg(rt, y_cpu, 100000, 0, 0);
    synor_task_spec t = {.kernel = &synor__kernel_gelu_x, .priority = SYNOR_PRIORITY_NORMAL,
                         .ndata = 2, .data = {hx, hg}, .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_W},
                         .device = cu + 1};
    ASSERT_OK(synor_task_submit(rt, &t));
    t.data[1] = hc;
    t.device = 1;
    ASSERT_OK(synor_task_submit(rt, &t));
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (int i = 0; i < 100000; i++)
        ASSERT(fabsf(y_gpu[i] - y_cpu[i]) < 1e-5f);
    synor_handle_unregister(hx);
    synor_handle_unregister(hg);
    synor_handle_unregister(hc);
    free(a);
    free(b);
    free(cm);
    free(ref);
    synor_runtime_destroy(rt);
}

TEST_MAIN(data_moves_between_host_and_device_memory,
          inputs_are_prefetched_while_the_task_waits_in_its_queue,
          readers_share_a_replica_and_a_write_invalidates_it,
          full_device_memory_evicts_least_recently_used, strided_tiles_are_packed_and_unpacked,
          a_stopped_device_hands_its_tasks_over, rebalancing_moves_queued_work_to_the_idle_device,
          opencl_tiled_gemm_matches_blas, cuda_kernels_match_the_cpu)
