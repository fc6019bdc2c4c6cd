/* test_runtime_placement.c - placement by a calibrated performance model
 * (issue 4 points 3 and 4): earliest finish sends work to the faster
 * device, one slow sample does not change that, and the energy and money
 * policies trade speed for the device rates. The kernels sleep a set time
 * per device kind, so "faster" is known; the CPU device and the test GPU
 * share host memory (no transfers). Runs under ThreadSanitizer too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "synor/error.h"
#include "synor/perfmodel.h"
#include "synor/runtime.h"
#include "test.h"

/* How long the kernel sleeps per kind, and where it ran. */
typedef struct sleeper {
    long cpu_us, gpu_us;
    long gpu_outlier_us; /* the GPU's run number gpu_outlier_at sleeps this */
    int gpu_outlier_at;
    atomic_int ran_cpu, ran_gpu;
} sleeper;

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int k_sleep(const synor_task_ctx *c)
{
    sleeper *s = c->user;
    if (c->kind == SYNOR_KIND_GPU) {
        int nth = atomic_fetch_add(&s->ran_gpu, 1);
        sleep_us(nth == s->gpu_outlier_at ? s->gpu_outlier_us : s->gpu_us);
    } else {
        atomic_fetch_add(&s->ran_cpu, 1);
        sleep_us(s->cpu_us);
    }
    float *x = c->buffers[0];
    x[0] += 1.0f;
    return 0;
}
static const synor_kernel k_both = {
    .name = "sleep", .fn = {[SYNOR_KIND_CPU] = k_sleep, [SYNOR_KIND_GPU] = k_sleep}};

static synor_runtime *make(synor_perfmodel *pm, synor_place_policy policy)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.test_gpu_workers = 1;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0;
    c.policy = policy;
    c.perfmodel = pm;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0 || synor_runtime_start(rt) < 0) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

#define NDATA 48
static float g_x[NDATA][16];

/* n tasks on data g_x[0..n-1]; one at a time (wait after each: every
 * choice is made with empty queues) or all at once. */
static int run_tasks(synor_runtime *rt, sleeper *s, int n, int one_at_a_time)
{
    synor_handle *h[NDATA] = {0};
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        synor_handle_desc d = {.ptr = g_x[i], .dtype = SYNOR_DTYPE_FP32, .ndim = 1,
                               .shape = {16}};
        rc = synor_handle_register(rt, &d, &h[i]);
        synor_task_spec t = {.kernel = &k_both, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 1,
                             .data = {h[i]}, .mode = {SYNOR_ACCESS_RW}, .user = s};
        if (rc == 0)
            rc = synor_task_submit(rt, &t);
        if (rc == 0 && one_at_a_time)
            rc = synor_runtime_wait_all(rt);
    }
    if (rc == 0)
        rc = synor_runtime_wait_all(rt);
    for (int i = 0; i < n; i++)
        synor_handle_unregister(h[i]);
    return rc;
}

typedef struct found {
    const char *device;
    synor_perfmodel_entry e;
    int n;
} found;

static int find_entry(const synor_perfmodel_entry *e, void *user)
{
    found *f = user;
    if (!strcmp(e->op, "sleep") && !strcmp(e->device, f->device)) {
        f->e = *e;
        f->e.op = f->e.device = NULL; /* valid during the call only */
        f->n++;
    }
    return 0;
}

static found entry(const synor_perfmodel *pm, const char *device)
{
    found f = {.device = device};
    synor_perfmodel_foreach(pm, find_entry, &f);
    return f;
}

TEST(earliest_finish_sends_work_to_the_faster_device_despite_an_outlier)
{
    synor_perfmodel *pm = NULL;
    ASSERT_OK(synor_perfmodel_create(&pm));
    synor_runtime *rt = make(pm, SYNOR_PLACE_EARLIEST_FINISH);
    ASSERT(rt);
    synor_runtime_device_info gi;
    ASSERT_OK(synor_runtime_device_get(rt, 1, &gi));
    ASSERT_EQ(gi.kind, SYNOR_KIND_GPU);
    /* Calibration, one task at a time: the uncalibrated device is tried
     * first, so both get samples. The GPU's second run is 150x slower.
     * Times are large enough that a loaded machine (CI runs tests in
     * parallel) delays a wake-up by a small part of them. */
    sleeper s = {.cpu_us = 20000, .gpu_us = 2000, .gpu_outlier_us = 300000, .gpu_outlier_at = 1};
    ASSERT_OK(run_tasks(rt, &s, 8, 1));
    found fc = entry(pm, "cpu"), fg = entry(pm, gi.name);
    ASSERT_EQ(fc.n, 1);
    ASSERT_EQ(fg.n, 1);
    ASSERT(fc.e.calibrated && fg.e.calibrated);
    /* The outlier is in the history (a mean would put the GPU above 30 ms,
     * slower than the CPU) but the median ignores it. */
    ASSERT(fg.e.max >= 0.299);
    ASSERT(fg.e.mean > 2.0 * fg.e.estimate);
    ASSERT(fg.e.estimate < fc.e.estimate / 3);
    ASSERT(fc.e.estimate >= 0.019);
    /* 40 independent tasks at once: the GPU's queue gets about 10 tasks per
     * CPU task (2 ms against 20 ms). */
    atomic_store(&s.ran_cpu, 0);
    atomic_store(&s.ran_gpu, 0);
    s.gpu_outlier_at = -1;
    ASSERT_OK(run_tasks(rt, &s, 40, 0));
    int on_gpu = atomic_load(&s.ran_gpu), on_cpu = atomic_load(&s.ran_cpu);
    ASSERT_EQ(on_gpu + on_cpu, 40);
    ASSERT(on_gpu >= 28);
    synor_runtime_destroy(rt);
    synor_perfmodel_destroy(pm);
}

TEST(a_model_saved_by_one_run_places_the_next_from_its_first_task)
{
    char dir[] = "/tmp/synor-pm-XXXXXX", path[64];
    ASSERT(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/perfmodel.json", dir);
    synor_perfmodel *pm = NULL;
    ASSERT_OK(synor_perfmodel_create(&pm));
    synor_runtime *rt = make(pm, SYNOR_PLACE_EARLIEST_FINISH);
    ASSERT(rt);
    /* A fresh model: the first tasks calibrate both devices, so the slow
     * CPU runs some of them. */
    sleeper s = {.cpu_us = 20000, .gpu_us = 2000, .gpu_outlier_at = -1};
    ASSERT_OK(run_tasks(rt, &s, 6, 1));
    ASSERT(atomic_load(&s.ran_cpu) >= 1);
    synor_runtime_destroy(rt);
    ASSERT_OK(synor_perfmodel_save(pm, path));
    synor_perfmodel_destroy(pm);
    /* The next run loads the file: every task goes to the GPU at once. */
    ASSERT_OK(synor_perfmodel_create(&pm));
    ASSERT_OK(synor_perfmodel_load(pm, path));
    rt = make(pm, SYNOR_PLACE_EARLIEST_FINISH);
    ASSERT(rt);
    sleeper s2 = {.cpu_us = 20000, .gpu_us = 2000, .gpu_outlier_at = -1};
    ASSERT_OK(run_tasks(rt, &s2, 6, 1));
    ASSERT_EQ(atomic_load(&s2.ran_cpu), 0);
    ASSERT_EQ(atomic_load(&s2.ran_gpu), 6);
    synor_runtime_destroy(rt);
    synor_perfmodel_destroy(pm);
    remove(path);
    rmdir(dir);
}

/* Each run below places by a model seeded with 32 samples per device - 15
 * ms on the CPU, 10 ms on the GPU - so that it does not depend on how long
 * a sleep takes on a loaded machine: a run's own samples (at most 10)
 * cannot move the median of a 32-sample window. The footprint is the one
 * a calibration run recorded for the sleeper's data. */
static int count_on_gpu(uint64_t fp, synor_place_policy policy, double cpu_w, double gpu_w,
                        int64_t cpu_price, int64_t gpu_price, int *total)
{
    synor_perfmodel *pm = NULL;
    if (synor_perfmodel_create(&pm) < 0)
        return -1;
    synor_runtime *rt = make(pm, policy);
    synor_runtime_device_info gi;
    if (!rt || synor_runtime_device_get(rt, 1, &gi) < 0 ||
        synor_runtime_device_set_rates(rt, 0, cpu_w, cpu_price) < 0 ||
        synor_runtime_device_set_rates(rt, 1, gpu_w, gpu_price) < 0) {
        synor_runtime_destroy(rt);
        synor_perfmodel_destroy(pm);
        return -1;
    }
    for (int k = 0; k < SYNOR_PERFMODEL_WINDOW; k++) {
        synor_perfmodel_record(pm, "sleep", fp, "cpu", 0.015);
        synor_perfmodel_record(pm, "sleep", fp, gi.name, 0.010);
    }
    sleeper s = {.cpu_us = 15000, .gpu_us = 10000, .gpu_outlier_at = -1};
    int rc = run_tasks(rt, &s, 10, 1);
    synor_runtime_destroy(rt);
    synor_perfmodel_destroy(pm);
    *total = atomic_load(&s.ran_cpu) + atomic_load(&s.ran_gpu);
    return rc < 0 ? rc : atomic_load(&s.ran_gpu);
}

TEST(energy_and_money_policies_follow_the_device_rates)
{
    /* The footprint of the sleeper's tasks, from a calibration run. */
    synor_perfmodel *pm = NULL;
    ASSERT_OK(synor_perfmodel_create(&pm));
    synor_runtime *rt = make(pm, SYNOR_PLACE_EARLIEST_FINISH);
    ASSERT(rt);
    sleeper cal = {.cpu_us = 1000, .gpu_us = 1000, .gpu_outlier_at = -1};
    ASSERT_OK(run_tasks(rt, &cal, 4, 1));
    synor_runtime_destroy(rt);
    found fc = entry(pm, "cpu");
    ASSERT_EQ(fc.n, 1);
    uint64_t fp = fc.e.footprint;
    synor_perfmodel_destroy(pm);
    int total = 0;
    /* Earliest finish: the GPU, every time. */
    ASSERT_EQ(count_on_gpu(fp, SYNOR_PLACE_EARLIEST_FINISH, 50, 700, 0, 0, &total), 10);
    /* Energy: the CPU finishes within twice the GPU's time and spends
     * 15 ms x 50 W = 0.75 J against 10 ms x 700 W = 7 J. */
    ASSERT_EQ(count_on_gpu(fp, SYNOR_PLACE_ENERGY, 50, 700, 0, 0, &total), 0);
    ASSERT_EQ(total, 10);
    /* Reverse the watts: the GPU again. */
    ASSERT_EQ(count_on_gpu(fp, SYNOR_PLACE_ENERGY, 700, 50, 0, 0, &total), 10);
    /* Money: the GPU costs 4x as much per hour, the CPU 1.5x as long. */
    ASSERT_EQ(count_on_gpu(fp, SYNOR_PLACE_MONEY, 0, 0, 1000000, 4000000, &total), 0);
    ASSERT_EQ(count_on_gpu(fp, SYNOR_PLACE_MONEY, 0, 0, 4000000, 1000000, &total), 10);
    /* Rates unknown (0): both policies keep the earliest finish. */
    ASSERT_EQ(count_on_gpu(fp, SYNOR_PLACE_ENERGY, 0, 0, 0, 0, &total), 10);
}

/* ------------------------------------------------ data placement hints */

static synor_runtime *make_mem(synor_perfmodel *pm, uint64_t gpu_mem)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.test_gpu_workers = 1;
    c.test_gpu_memory = gpu_mem;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0;
    c.perfmodel = pm;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

static uint64_t transfers(synor_runtime *rt)
{
    synor_runtime_stats st;
    synor_runtime_get_stats(rt, &st);
    return st.transfers;
}

/* data 0 (R), data 1 (W): y = x + 1. */
static int k_plus1(const synor_task_ctx *c)
{
    const float *x = c->buffers[0];
    float *y = c->buffers[1];
    for (size_t i = 0; i < synor_handle_dim(c->data[0], 0); i++)
        y[i] = x[i] + 1.0f;
    return 0;
}
static const synor_kernel plus1_gpu = {.name = "plus1", .fn = {[SYNOR_KIND_GPU] = k_plus1}};
static const synor_kernel plus1_cpu = {.name = "plus1", .fn = {[SYNOR_KIND_CPU] = k_plus1}};
static const synor_kernel plus1_any = {
    .name = "plus1", .fn = {[SYNOR_KIND_CPU] = k_plus1, [SYNOR_KIND_GPU] = k_plus1}};

static synor_handle *vec(synor_runtime *rt, float *p, size_t n)
{
    synor_handle_desc d = {.ptr = p, .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {n}};
    synor_handle *h = NULL;
    return synor_handle_register(rt, &d, &h) == 0 ? h : NULL;
}

TEST(data_placed_on_a_device_is_there_before_its_task)
{
    synor_runtime *rt = make_mem(NULL, 1 << 20);
    ASSERT(rt);
    static float x[256], y[256];
    for (int i = 0; i < 256; i++)
        x[i] = (float)i;
    synor_handle *hx = vec(rt, x, 256), *hy = vec(rt, y, 256);
    ASSERT(hx && hy);
    synor_data_hint h = {.kind = SYNOR_DATA_DEVICE, .device = 1};
    ASSERT_EQ(synor_handle_place(hx, &h), 1);
    ASSERT_EQ(transfers(rt), 1); /* moved now, before any task */
    ASSERT_EQ(synor_handle_place(hx, &h), 1);
    ASSERT_EQ(transfers(rt), 1); /* already there */
    synor_task_spec t = {.kernel = &plus1_gpu, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 2,
                         .data = {hx, hy}, .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_W}};
    ASSERT_OK(synor_task_submit(rt, &t));
    ASSERT_OK(synor_runtime_start(rt));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT_EQ(transfers(rt), 2); /* only y, back to the host */
    for (int i = 0; i < 256; i++)
        ASSERT_EQ(y[i], (float)i + 1.0f);
    /* The host: nothing moves. Auto: nothing moves now either. */
    synor_data_hint host = {.kind = SYNOR_DATA_DEVICE, .device = 0};
    ASSERT_EQ(synor_handle_place(hx, &host), 0);
    synor_data_hint aut = {.kind = SYNOR_DATA_AUTO};
    ASSERT_EQ(synor_handle_place(hy, &aut), 0);
    ASSERT_EQ(transfers(rt), 2);
    ASSERT_OK(synor_handle_unregister(hx));
    ASSERT_OK(synor_handle_unregister(hy));
    synor_runtime_destroy(rt);
}

TEST(data_placed_by_operation_goes_where_the_operation_runs_best)
{
    synor_perfmodel *pm = NULL;
    ASSERT_OK(synor_perfmodel_create(&pm));
    synor_runtime *rt = make_mem(pm, 1 << 20);
    ASSERT(rt);
    static float x[64];
    synor_handle *hx = vec(rt, x, 64);
    ASSERT(hx);
    /* Only one device implements it: that one. */
    synor_data_hint g = {.kind = SYNOR_DATA_OPERATION, .kernel = &plus1_gpu};
    synor_data_hint c = {.kind = SYNOR_DATA_OPERATION, .kernel = &plus1_cpu};
    synor_data_hint a = {.kind = SYNOR_DATA_OPERATION, .kernel = &plus1_any};
    ASSERT_EQ(synor_handle_place(hx, &c), 0);
    ASSERT_EQ(transfers(rt), 0);
    /* Both, no history: the device with memory of its own. */
    ASSERT_EQ(synor_handle_place(hx, &a), 1);
    ASSERT_EQ(transfers(rt), 1);
    ASSERT_EQ(synor_handle_place(hx, &g), 1);
    /* Both, and the model says the CPU is faster on the footprints both
     * have (the GPU-only footprint does not count). */
    synor_runtime_device_info gi;
    ASSERT_OK(synor_runtime_device_get(rt, 1, &gi));
    for (int i = 0; i < 3; i++) {
        synor_perfmodel_record(pm, "plus1", 11, "cpu", 0.001);
        synor_perfmodel_record(pm, "plus1", 11, gi.name, 0.004);
        synor_perfmodel_record(pm, "plus1", 12, "cpu", 0.002);
        synor_perfmodel_record(pm, "plus1", 12, gi.name, 0.003);
        synor_perfmodel_record(pm, "plus1", 13, gi.name, 0.0001);
        synor_perfmodel_record(pm, "other", 11, gi.name, 0.0001);
    }
    ASSERT_EQ(synor_handle_place(hx, &a), 0);
    /* The GPU speeds up (its medians follow once the new times are the
     * majority of its samples): now it is faster in sum. */
    for (int i = 0; i < 5; i++) {
        synor_perfmodel_record(pm, "plus1", 11, gi.name, 0.0002);
        synor_perfmodel_record(pm, "plus1", 12, gi.name, 0.0002);
    }
    ASSERT_EQ(synor_handle_place(hx, &a), 1);
    ASSERT_OK(synor_handle_unregister(hx));
    synor_runtime_destroy(rt);
    synor_perfmodel_destroy(pm);
}

TEST(bad_placement_hints_are_refused_and_move_nothing)
{
    synor_runtime *rt = make_mem(NULL, 4096);
    ASSERT(rt);
    static float x[64], y[64], big[2048];
    synor_handle *hx = vec(rt, x, 64), *hy = vec(rt, y, 64), *hb = vec(rt, big, 2048);
    ASSERT(hx && hy && hb);
    synor_data_hint h = {.kind = SYNOR_DATA_DEVICE, .device = 7};
    ASSERT_EQ(synor_handle_place(hx, &h), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "device 7"));
    synor_data_hint nok = {.kind = SYNOR_DATA_OPERATION};
    ASSERT_EQ(synor_handle_place(hx, &nok), SYNOR_EINVAL);
    synor_data_hint bad = {.kind = (synor_data_hint_kind)9};
    ASSERT_EQ(synor_handle_place(hx, &bad), SYNOR_EINVAL);
    ASSERT_EQ(synor_handle_place(NULL, &h), SYNOR_EINVAL);
    /* 8 KB on a 4 KB device. */
    synor_data_hint g = {.kind = SYNOR_DATA_DEVICE, .device = 1};
    ASSERT_EQ(synor_handle_place(hb, &g), SYNOR_ENOMEM);
    ASSERT(strstr(synor_errmsg(), "8192 bytes"));
    /* A pending writer (the runtime is not started): busy. */
    synor_task_spec t = {.kernel = &plus1_any, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 2,
                         .data = {hx, hy}, .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_W}};
    ASSERT_OK(synor_task_submit(rt, &t));
    ASSERT_EQ(synor_handle_place(hy, &g), SYNOR_EBUSY);
    ASSERT_EQ(transfers(rt), 0);
    /* Reading it is no reason to wait: x may move. */
    ASSERT_EQ(synor_handle_place(hx, &g), 1);
    ASSERT_EQ(transfers(rt), 1);
    ASSERT_OK(synor_runtime_start(rt));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT_EQ(synor_handle_place(hy, &g), 1);
    ASSERT_OK(synor_handle_unregister(hx));
    ASSERT_OK(synor_handle_unregister(hy));
    ASSERT_OK(synor_handle_unregister(hb));
    synor_runtime_destroy(rt);
}

/* Rebalancing moves a queued task only if it finishes earlier on the idle
 * device by that device's own time for it. A GPU with 12 one-millisecond
 * tasks queued must keep them rather than hand one to a CPU core that needs
 * 100 ms for it (on an H200 the old rule, which priced the move at the
 * GPU's time, made every such move the tail of a tiled GEMM). */
TEST(rebalancing_uses_the_idle_devices_own_time)
{
    synor_perfmodel *pm = NULL;
    ASSERT_OK(synor_perfmodel_create(&pm));
    synor_runtime *rt = make(pm, SYNOR_PLACE_EARLIEST_FINISH);
    ASSERT(rt);
    sleeper cal = {.cpu_us = 100, .gpu_us = 100, .gpu_outlier_at = -1};
    ASSERT_OK(run_tasks(rt, &cal, 4, 1));
    synor_runtime_destroy(rt);
    found fc = entry(pm, "cpu");
    ASSERT_EQ(fc.n, 1);
    uint64_t fp = fc.e.footprint;
    synor_perfmodel_destroy(pm);

    ASSERT_OK(synor_perfmodel_create(&pm));
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.test_gpu_workers = 1;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0;
    c.policy = SYNOR_PLACE_EARLIEST_FINISH;
    c.perfmodel = pm;
    c.rebalance_us = 0; /* only the explicit rounds below */
    ASSERT_OK(synor_runtime_create(&c, &rt));
    synor_runtime_device_info gi;
    ASSERT_OK(synor_runtime_device_get(rt, 1, &gi));
    for (int k = 0; k < SYNOR_PERFMODEL_WINDOW; k++) {
        synor_perfmodel_record(pm, "sleep", fp, "cpu", 0.100);
        synor_perfmodel_record(pm, "sleep", fp, gi.name, 0.001);
    }
    /* Not started: all 12 wait on the GPU (its queue ends at 12 ms, the
     * CPU would finish one at 100 ms). */
    sleeper s = {.cpu_us = 100000, .gpu_us = 1000, .gpu_outlier_at = -1};
    synor_handle *h[12];
    for (int i = 0; i < 12; i++) {
        synor_handle_desc d = {.ptr = g_x[i], .dtype = SYNOR_DTYPE_FP32, .ndim = 1,
                               .shape = {16}};
        ASSERT_OK(synor_handle_register(rt, &d, &h[i]));
        synor_task_spec t = {.kernel = &k_both, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 1,
                             .data = {h[i]}, .mode = {SYNOR_ACCESS_RW}, .user = &s};
        ASSERT_OK(synor_task_submit(rt, &t));
    }
    ASSERT_EQ(synor_runtime_rebalance(rt), 0);
    ASSERT_OK(synor_runtime_start(rt));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT_EQ(atomic_load(&s.ran_cpu), 0);
    ASSERT_EQ(atomic_load(&s.ran_gpu), 12);
    for (int i = 0; i < 12; i++)
        ASSERT_OK(synor_handle_unregister(h[i]));
    synor_runtime_destroy(rt);
    synor_perfmodel_destroy(pm);
}

TEST_MAIN(earliest_finish_sends_work_to_the_faster_device_despite_an_outlier,
          a_model_saved_by_one_run_places_the_next_from_its_first_task,
          data_placed_on_a_device_is_there_before_its_task,
          data_placed_by_operation_goes_where_the_operation_runs_best,
          bad_placement_hints_are_refused_and_move_nothing,
          energy_and_money_policies_follow_the_device_rates,
          rebalancing_uses_the_idle_devices_own_time)
