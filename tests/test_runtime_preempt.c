/* test_runtime_preempt.c - preemption notices (synor_runtime_preempt): a
 * real run on CPU workers and the test GPU (a device with memory of its
 * own), a notice on the GPU mid-run: the job's callback is called once with
 * the deadline and checkpoints on that device, the device stops at the
 * deadline, every task still completes with the right result, and the
 * trace has the marks and the checkpoint tasks; a cancelled notice keeps
 * the device. Runs under ThreadSanitizer too (label concurrency). */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "synor/error.h"
#include "synor/runtime.h"
#include "synor/sim.h"
#include "test.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static synor_runtime *make(int trace)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.test_gpu_workers = 1;
    c.test_gpu_memory = 1 << 20;
    c.pin_workers = 0;
    c.trace = trace;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0;
    c.policy = SYNOR_PLACE_LOAD;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

enum { CHAINS = 8, STEPS = 40 };

/* One step of a chain: x += 1 after about half a millisecond of "work";
 * records the device kind and the start time of this step. */
typedef struct step_log {
    _Atomic int kind[CHAINS * STEPS];
    _Atomic uint64_t start[CHAINS * STEPS];
    _Atomic int done;
} step_log;

static step_log g_log;

static int k_step(const synor_task_ctx *c)
{
    unsigned id;
    memcpy(&id, c->args, sizeof id);
    atomic_store(&g_log.start[id], now_ns());
    atomic_store(&g_log.kind[id], (int)c->kind);
    struct timespec d = {0, 500000};
    nanosleep(&d, NULL);
    float *x = c->buffers[0];
    x[0] += 1.0f;
    atomic_fetch_add(&g_log.done, 1);
    return 0;
}
static const synor_kernel step_k = {.name = "step",
                                    .fn = {[SYNOR_KIND_CPU] = k_step, [SYNOR_KIND_GPU] = k_step}};

/* The checkpoint: copies the chain values (read) into a snapshot (write). */
static int k_checkpoint(const synor_task_ctx *c)
{
    memcpy(c->buffers[1], c->buffers[0], synor_handle_bytes(c->data[0]));
    return 0;
}
static const synor_kernel checkpoint_k = {
    .name = "checkpoint", .fn = {[SYNOR_KIND_CPU] = k_checkpoint, [SYNOR_KIND_GPU] = k_checkpoint}};

typedef struct job {
    _Atomic int calls;
    unsigned device;
    uint64_t deadline;
    synor_handle *state[CHAINS], *snap[CHAINS];
    int submit_rc;
} job;

static void on_preempt(synor_runtime *rt, unsigned device, uint64_t deadline, void *user)
{
    job *j = user;
    atomic_fetch_add(&j->calls, 1);
    j->device = device;
    j->deadline = deadline;
    for (int c = 0; c < CHAINS; c++) { /* snapshot every chain, on the preempted device */
        synor_task_spec t = {.kernel = &checkpoint_k,
                             .priority = SYNOR_PRIORITY_HIGH,
                             .ndata = 2,
                             .data = {j->state[c], j->snap[c]},
                             .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_W},
                             .device = device + 1};
        int rc = synor_task_submit(rt, &t);
        if (rc && !j->submit_rc)
            j->submit_rc = rc;
    }
}

static synor_handle *reg(synor_runtime *rt, float *p)
{
    synor_handle_desc d = {.ptr = p, .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {1}};
    synor_handle *h = NULL;
    return synor_handle_register(rt, &d, &h) == 0 ? h : NULL;
}

/* Waits (up to 10 s: a loaded machine may be slow to run the deadline
 * thread) until device 1 has no pending notice, then returns its info. */
static synor_runtime_device_info settle(synor_runtime *rt)
{
    synor_runtime_device_info di;
    uint64_t until = now_ns() + 10000000000ull;
    while (synor_runtime_device_get(rt, 1, &di) == 0 && di.preempt_deadline_ns && now_ns() < until)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    return di;
}

static int submit_step(synor_runtime *rt, synor_handle *h, unsigned id)
{
    synor_task_spec t = {.kernel = &step_k,
                         .priority = SYNOR_PRIORITY_NORMAL,
                         .ndata = 1,
                         .data = {h},
                         .mode = {SYNOR_ACCESS_RW},
                         .args = &id,
                         .args_size = sizeof id};
    return synor_task_submit(rt, &t);
}

static int count_marks(const synor_trace *t, const char *name)
{
    int n = 0;
    for (size_t i = 0; i < t->n_marks; i++)
        n += strcmp(t->marks[i].name, name) == 0;
    return n;
}

TEST(notice_checkpoints_then_stops_the_device_and_every_task_completes)
{
    memset(&g_log, 0, sizeof g_log);
    synor_runtime *rt = make(1);
    ASSERT(rt);
    static float x[CHAINS], snap[CHAINS];
    static job j;
    memset(&j, 0, sizeof j);
    for (int c = 0; c < CHAINS; c++) {
        x[c] = 0;
        snap[c] = -1;
        ASSERT((j.state[c] = reg(rt, &x[c])) != NULL);
        ASSERT((j.snap[c] = reg(rt, &snap[c])) != NULL);
    }
    ASSERT_OK(synor_runtime_set_preempt_fn(rt, on_preempt, &j));
    /* The first half of every chain, then the notice mid-run, then the
     * second half: the checkpoint sees each chain after its first half. */
    for (unsigned s = 0; s < STEPS / 2; s++)
        for (unsigned c = 0; c < CHAINS; c++)
            ASSERT_OK(submit_step(rt, j.state[c], c * STEPS + s));
    ASSERT_OK(synor_runtime_start(rt));
    while (atomic_load(&g_log.done) < CHAINS * STEPS / 4)
        nanosleep(&(struct timespec){0, 200000}, NULL);
    uint64_t before = now_ns();
    const uint64_t warning = 40000000; /* 40 ms */
    ASSERT_OK(synor_runtime_preempt(rt, 1, warning));
    uint64_t after = now_ns();
    ASSERT_EQ(atomic_load(&j.calls), 1);
    ASSERT_EQ(j.device, 1);
    ASSERT(j.deadline >= before + warning && j.deadline <= after + warning);
    ASSERT_OK(j.submit_rc);
    synor_runtime_device_info di;
    ASSERT_OK(synor_runtime_device_get(rt, 1, &di));
    ASSERT(!di.stopped || now_ns() >= j.deadline);
    ASSERT_EQ(di.preempt_deadline_ns ? di.preempt_deadline_ns : j.deadline, j.deadline);
    /* a second notice for the same device: refused, no second callback */
    ASSERT_EQ(synor_runtime_preempt(rt, 1, warning), SYNOR_EBUSY);
    ASSERT_EQ(atomic_load(&j.calls), 1);
    for (unsigned s = STEPS / 2; s < STEPS; s++)
        for (unsigned c = 0; c < CHAINS; c++)
            ASSERT_OK(submit_step(rt, j.state[c], c * STEPS + s));
    ASSERT_OK(synor_runtime_wait_all(rt));
    /* wait_all may return before the deadline; the device stops then anyway */
    di = settle(rt);
    ASSERT(di.stopped);
    ASSERT_EQ(di.preempt_deadline_ns, 0);
    for (int c = 0; c < CHAINS; c++) {
        ASSERT_EQ(x[c], STEPS);
        ASSERT_EQ(snap[c], STEPS / 2); /* the checkpoint ran between the halves */
    }
    synor_trace *t = NULL;
    ASSERT_OK(synor_runtime_trace(rt, "preempt", &t));
    ASSERT_EQ(count_marks(t, "preempted"), 1);
    ASSERT_EQ(count_marks(t, "device stopped"), 1);
    ASSERT_EQ(count_marks(t, "replaced"), 0);
    int ckpt = 0;
    for (size_t i = 0; i < t->n_tasks; i++)
        ckpt += strcmp(t->tasks[i].op, "checkpoint") == 0;
    ASSERT_EQ(ckpt, CHAINS);
    /* the marks sit on the GPU's row, the stop a warning after the notice */
    double pre = -1, stop = -1;
    for (size_t i = 0; i < t->n_marks; i++) {
        ASSERT_CONTAINS(t->devices[t->marks[i].device].name, "test-gpu");
        if (!strcmp(t->marks[i].name, "preempted"))
            pre = t->marks[i].start;
        else
            stop = t->marks[i].start;
    }
    /* never early; late by however long the deadline thread waited for a core */
    ASSERT(stop - pre >= 0.040 && stop - pre < 30.0);
    /* Steps that started on the GPU after it stopped (at the latest `after`
     * + the marks' distance): none but one its worker had already taken
     * (it finishes there). */
    uint64_t stopped_by = after + (uint64_t)((stop - pre) * 1e9) + 1000000;
    int gpu_before = 0, gpu_late = 0;
    for (int i = 0; i < CHAINS * STEPS; i++) {
        if (atomic_load(&g_log.kind[i]) != SYNOR_KIND_GPU)
            continue;
        uint64_t st = atomic_load(&g_log.start[i]);
        gpu_before += st < j.deadline;
        gpu_late += st > stopped_by;
    }
    ASSERT(gpu_before > 0);
    ASSERT(gpu_late <= 1);
    /* the marks go through the trace file and back */
    char *json = synor_trace_to_json(t);
    ASSERT(json && strstr(json, "\"marks\""));
    synor_trace *back = NULL;
    ASSERT_OK(synor_trace_load_string(json, strlen(json), "t.json", &back));
    ASSERT_EQ(back->n_marks, t->n_marks);
    ASSERT(!strcmp(back->marks[0].name, t->marks[0].name));
    synor_trace_destroy(back);
    free(json);
    synor_trace_destroy(t);
    synor_runtime_destroy(rt);
}

static void count_only(synor_runtime *rt, unsigned device, uint64_t deadline, void *user)
{
    (void)rt;
    (void)device;
    (void)deadline;
    atomic_fetch_add((_Atomic int *)user, 1);
}

static int k_gpu_only(const synor_task_ctx *c)
{
    ((float *)c->buffers[0])[0] += 1.0f;
    return 0;
}
static const synor_kernel gpu_only_k = {.name = "gpu_only", .fn = {[SYNOR_KIND_GPU] = k_gpu_only}};

TEST(cancelled_notice_keeps_the_device)
{
    synor_runtime *rt = make(1);
    ASSERT(rt);
    ASSERT_OK(synor_runtime_start(rt));
    static _Atomic int calls;
    atomic_store(&calls, 0);
    ASSERT_OK(synor_runtime_set_preempt_fn(rt, count_only, &calls));
    ASSERT_OK(synor_runtime_preempt(rt, 1, 30000000));
    ASSERT_EQ(atomic_load(&calls), 1);
    ASSERT_OK(synor_runtime_preempt_cancel(rt, 1));
    ASSERT_EQ(synor_runtime_preempt_cancel(rt, 1), SYNOR_ENOENT);
    nanosleep(&(struct timespec){0, 60000000}, NULL); /* past the withdrawn deadline */
    synor_runtime_device_info di;
    ASSERT_OK(synor_runtime_device_get(rt, 1, &di));
    ASSERT(!di.stopped);
    static float v;
    v = 0;
    synor_handle *h = reg(rt, &v);
    ASSERT(h);
    synor_task_spec t = {.kernel = &gpu_only_k,
                         .priority = SYNOR_PRIORITY_NORMAL,
                         .ndata = 1,
                         .data = {h},
                         .mode = {SYNOR_ACCESS_RW}};
    ASSERT_OK(synor_task_submit(rt, &t));
    ASSERT_OK(synor_runtime_wait_all(rt)); /* only the GPU runs it: it is still there */
    ASSERT_EQ(v, 1);
    synor_trace *tr = NULL;
    ASSERT_OK(synor_runtime_trace(rt, "cancel", &tr));
    ASSERT_EQ(count_marks(tr, "preempted"), 1);
    ASSERT_EQ(count_marks(tr, "replaced"), 1);
    ASSERT_EQ(count_marks(tr, "device stopped"), 0);
    synor_trace_destroy(tr);
    /* a second notice after the cancel is a new one */
    ASSERT_OK(synor_runtime_preempt(rt, 1, 1000000));
    ASSERT_EQ(atomic_load(&calls), 2);
    di = settle(rt);
    ASSERT(di.stopped);
    ASSERT_EQ(synor_runtime_preempt_cancel(rt, 1), SYNOR_ENOENT); /* too late */
    ASSERT_EQ(synor_runtime_preempt(rt, 1, 1000000), SYNOR_ESTATE);
    synor_runtime_destroy(rt);
}

TEST(bad_notices_are_refused_and_destroy_does_not_wait_for_a_deadline)
{
    synor_runtime *rt = make(0);
    ASSERT(rt);
    ASSERT_EQ(synor_runtime_preempt(rt, 0, 1000), SYNOR_EINVAL); /* the host */
    ASSERT_CONTAINS(synor_errmsg(), "host");
    ASSERT_EQ(synor_runtime_preempt(rt, 2, 1000), SYNOR_EINVAL);
    ASSERT_EQ(synor_runtime_preempt(rt, 1, SYNOR_PREEMPT_MAX_WARNING_NS + 1), SYNOR_EINVAL);
    ASSERT_EQ(synor_runtime_preempt(NULL, 1, 1000), SYNOR_EINVAL);
    ASSERT_EQ(synor_runtime_preempt_cancel(rt, 9), SYNOR_EINVAL);
    ASSERT_EQ(synor_runtime_preempt_cancel(rt, 0), SYNOR_ENOENT);
    ASSERT_EQ(synor_runtime_set_preempt_fn(NULL, NULL, NULL), SYNOR_EINVAL);
    /* without a callback the notice still arms; a 60 s deadline does not
     * hold up destroy */
    ASSERT_OK(synor_runtime_preempt(rt, 1, 60000000000ull));
    uint64_t t0 = now_ns();
    synor_runtime_destroy(rt);
    ASSERT(now_ns() - t0 < 5000000000ull);
}

TEST_MAIN(notice_checkpoints_then_stops_the_device_and_every_task_completes,
          cancelled_notice_keeps_the_device,
          bad_notices_are_refused_and_destroy_does_not_wait_for_a_deadline)
