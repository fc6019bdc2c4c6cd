/* test_runtime_library.c - kernel libraries and native handles
 * (synor/kernel.h): a library is set up on every device once, when added
 * or at the first submit of a kernel naming it; its kernels get their
 * device's state and native handles; a device it cannot be set up on is
 * stopped; destroy frees every state.
 * Runs under ThreadSanitizer too (label concurrency). */
#include <stdatomic.h>
#include <string.h>

#include "common/common.h"
#include "synor/error.h"
#include "synor/kernel.h"
#include "synor/runtime.h"
#include "test.h"

typedef struct lib_log {
    atomic_int inits, finis;
    int fail_backend; /* device_init fails on this backend (-1: none) */
    int state[4];     /* one per device: what kernels get as ctx->state */
} lib_log;

static lib_log logs[2];

static int init_with(lib_log *l, const synor_device_native *dev, void **state)
{
    atomic_fetch_add(&l->inits, 1);
    if ((int)dev->backend == l->fail_backend)
        return synor__error(SYNOR_EIO, "injected: nothing builds on %s", dev->name);
    l->state[dev->index] = 100 + (int)dev->index;
    *state = &l->state[dev->index];
    return 0;
}
static void fini_with(lib_log *l, const synor_device_native *dev, void *state)
{
    if (state == &l->state[dev->index])
        atomic_fetch_add(&l->finis, 1);
}
static int init0(const synor_device_native *d, void **s) { return init_with(&logs[0], d, s); }
static int init1(const synor_device_native *d, void **s) { return init_with(&logs[1], d, s); }
static void fini0(const synor_device_native *d, void *s) { fini_with(&logs[0], d, s); }
static void fini1(const synor_device_native *d, void *s) { fini_with(&logs[1], d, s); }
static const synor_kernel_library lib0 = {"lib0", init0, fini0};
static const synor_kernel_library lib1 = {"lib1", init1, fini1};

/* data 0 (W): what the kernel saw - its state's value, and whether the
 * native handles are its device's. */
static int k_report(const synor_task_ctx *c)
{
    long *out = c->buffers[0];
    const synor_device_native *n = c->device;
    int native_ok = n && (n->kind == c->kind) &&
                    (c->kind == SYNOR_KIND_CPU ? n->backend == SYNOR_BACKEND_HOST &&
                                                     !strcmp(n->name, "cpu")
                                               : n->backend == SYNOR_BACKEND_TEST &&
                                                     !strcmp(n->name, "test-gpu"));
    out[0] = c->state ? *(const int *)c->state : -1;
    out[1] = native_ok;
    return 0;
}
static const synor_kernel report_cpu = {
    .name = "report_cpu", .fn = {[SYNOR_KIND_CPU] = k_report}, .library = &lib0};
static const synor_kernel report_gpu = {
    .name = "report_gpu", .fn = {[SYNOR_KIND_GPU] = k_report}, .library = &lib0};
static const synor_kernel report_any = {
    .name = "report_any",
    .fn = {[SYNOR_KIND_CPU] = k_report, [SYNOR_KIND_GPU] = k_report},
    .library = &lib1};
static const synor_kernel report_none = {.name = "report_none",
                                         .fn = {[SYNOR_KIND_CPU] = k_report}};

static synor_runtime *make(int start)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.test_gpu_workers = 1;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0 || (start && synor_runtime_start(rt) < 0)) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

static int run(synor_runtime *rt, const synor_kernel *k, long *out)
{
    synor_handle_desc d = {.ptr = out, .dtype = SYNOR_DTYPE_FP64, .ndim = 1, .shape = {2}};
    synor_handle *h = NULL;
    int rc = synor_handle_register(rt, &d, &h);
    synor_task_spec t = {.kernel = k, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 1, .data = {h},
                         .mode = {SYNOR_ACCESS_W}};
    if (rc == 0)
        rc = synor_task_submit(rt, &t);
    if (rc == 0)
        rc = synor_runtime_wait_all(rt);
    (void)synor_handle_unregister(h);
    return rc;
}

TEST(native_handles_name_each_device)
{
    synor_runtime *rt = make(0);
    ASSERT(rt);
    /* a CPU and a test GPU, no OpenCL: no device shares the host's cores */
    ASSERT_EQ(synor_runtime_host_opencl_device(rt, NULL), 0u);
    ASSERT_EQ(synor_runtime_host_opencl_device(NULL, NULL), 0u);
    synor_device_native n;
    ASSERT_OK(synor_runtime_device_native(rt, 0, &n));
    ASSERT_EQ(n.backend, SYNOR_BACKEND_HOST);
    ASSERT_EQ(n.kind, SYNOR_KIND_CPU);
    ASSERT_STREQ(n.name, "cpu");
    ASSERT(n.runtime == rt && n.index == 0 && n.product && n.product[0]);
    ASSERT(!n.cl_context && !n.cu_context);
    ASSERT_OK(synor_runtime_device_native(rt, 1, &n));
    ASSERT_EQ(n.backend, SYNOR_BACKEND_TEST);
    ASSERT_EQ(n.kind, SYNOR_KIND_GPU);
    ASSERT_STREQ(n.name, "test-gpu");
    ASSERT_EQ(synor_runtime_device_native(rt, 2, &n), SYNOR_EINVAL);
    synor_runtime_destroy(rt);
}

TEST(a_library_is_set_up_once_per_device_and_freed_at_destroy)
{
    memset(logs, 0, sizeof logs);
    logs[0].fail_backend = logs[1].fail_backend = -1;
    synor_runtime *rt = make(1);
    ASSERT(rt);
    static long out[2];
    /* A kernel without a library gets no state. */
    ASSERT_OK(run(rt, &report_none, out));
    ASSERT_EQ(out[0], -1);
    ASSERT_EQ(out[1], 1);
    ASSERT_EQ(atomic_load(&logs[0].inits), 0);
    /* The first submit of a kernel naming lib0 sets it up on both devices;
     * its kernels get their device's state. */
    ASSERT_OK(run(rt, &report_cpu, out));
    ASSERT_EQ(atomic_load(&logs[0].inits), 2);
    ASSERT_EQ(out[0], 100);
    ASSERT_EQ(out[1], 1);
    ASSERT_OK(run(rt, &report_gpu, out));
    ASSERT_EQ(out[0], 101);
    ASSERT_EQ(out[1], 1);
    /* Once. */
    ASSERT_OK(synor_runtime_library_add(rt, &lib0));
    ASSERT_OK(run(rt, &report_cpu, out));
    ASSERT_EQ(atomic_load(&logs[0].inits), 2);
    ASSERT_EQ(atomic_load(&logs[0].finis), 0);
    ASSERT_EQ(synor_runtime_library_add(rt, NULL), SYNOR_EINVAL);
    synor_runtime_destroy(rt);
    ASSERT_EQ(atomic_load(&logs[0].finis), 2);
    ASSERT_EQ(atomic_load(&logs[1].inits), 0);
}

TEST(a_device_the_library_cannot_be_set_up_on_is_stopped)
{
    memset(logs, 0, sizeof logs);
    logs[0].fail_backend = -1;
    logs[1].fail_backend = SYNOR_BACKEND_TEST;
    synor_runtime *rt = make(0);
    ASSERT(rt);
    ASSERT_OK(synor_runtime_library_add(rt, &lib1)); /* before start */
    synor_runtime_device_info di;
    ASSERT_OK(synor_runtime_device_get(rt, 1, &di));
    ASSERT(di.stopped);
    ASSERT_CONTAINS(di.name, "kernels did not build");
    ASSERT_OK(synor_runtime_start(rt));
    /* Its kernels run where the library is: 20 tasks, all on the CPU. */
    static long out[20][2];
    for (int i = 0; i < 20; i++) {
        out[i][0] = 0;
        ASSERT_OK(run(rt, &report_any, out[i]));
        ASSERT_EQ(out[i][0], 100);
    }
    /* A kernel only the stopped device implements fails, naming it. */
    ASSERT_EQ(run(rt, &report_gpu, out[0]), SYNOR_ENOTSUP);
    ASSERT_CONTAINS(synor_errmsg(), "report_gpu");
    synor_runtime_destroy(rt);
    ASSERT_EQ(atomic_load(&logs[1].inits), 2);
    ASSERT_EQ(atomic_load(&logs[1].finis), 1); /* not for the device it failed on */
}

static int init_ok(const synor_device_native *d, void **s)
{
    (void)d;
    (void)s;
    return 0;
}

TEST(a_runtime_takes_a_bounded_number_of_libraries)
{
    synor_runtime *rt = make(0);
    ASSERT(rt);
    static synor_kernel_library many[SYNOR_RUNTIME_MAX_LIBRARIES + 1];
    for (int i = 0; i <= SYNOR_RUNTIME_MAX_LIBRARIES; i++) {
        many[i].name = "many";
        many[i].device_init = init_ok;
    }
    for (int i = 0; i < SYNOR_RUNTIME_MAX_LIBRARIES; i++)
        ASSERT_OK(synor_runtime_library_add(rt, &many[i]));
    ASSERT_EQ(synor_runtime_library_add(rt, &many[SYNOR_RUNTIME_MAX_LIBRARIES]), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "'many'");
    /* A kernel naming a library that cannot be added is refused at submit. */
    static const synor_kernel k = {.name = "k",
                                   .fn = {[SYNOR_KIND_CPU] = k_report},
                                   .library = &many[SYNOR_RUNTIME_MAX_LIBRARIES]};
    static long out[2];
    ASSERT_EQ(run(rt, &k, out), SYNOR_ERANGE);
    synor_runtime_destroy(rt);
}

TEST_MAIN(native_handles_name_each_device, a_library_is_set_up_once_per_device_and_freed_at_destroy,
          a_device_the_library_cannot_be_set_up_on_is_stopped,
          a_runtime_takes_a_bounded_number_of_libraries)
