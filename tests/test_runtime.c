/* test_runtime.c - the task runtime without BLAS: lifecycle, priorities,
 * dependency inference, placement by processor kind, fault injection and
 * retries, task storms. Runs under ThreadSanitizer too (label concurrency). */
#include <stdatomic.h>
#include <string.h>

#include "common/common.h"
#include "synor/error.h"
#include "synor/runtime.h"
#include "test.h"

static synor_runtime *make(unsigned cpu, unsigned gpu, unsigned attempts, int start)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = cpu;
    c.test_gpu_workers = gpu;
    c.cuda = 0; /* the test GPU only: a real one would shift device numbers */
    c.max_attempts = attempts;
    c.pin_workers = 0;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0)
        return NULL;
    if (start && synor_runtime_start(rt) < 0) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

static int k_empty(const synor_task_ctx *c)
{
    (void)c;
    return 0;
}
static const synor_kernel kernel_empty = {.name = "empty", .fn = {[SYNOR_KIND_CPU] = k_empty}};

TEST(config_and_lifecycle)
{
    synor_runtime_config c;
    memset(&c, 0, sizeof c);
    synor_runtime *rt = NULL;
    ASSERT_EQ(synor_runtime_create(&c, &rt), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "synor_runtime_config_init");
    synor_runtime_config_init(&c);
    c.max_attempts = 0;
    ASSERT_EQ(synor_runtime_create(&c, &rt), SYNOR_EINVAL);
    ASSERT_OK(synor_runtime_create(NULL, &rt));
    ASSERT(synor_runtime_worker_count(rt) >= 1);
    ASSERT_OK(synor_runtime_start(rt));
    ASSERT_EQ(synor_runtime_start(rt), SYNOR_ESTATE);
    ASSERT_OK(synor_runtime_wait_all(rt));
    synor_runtime_destroy(rt);
    synor_runtime_destroy(NULL);
}

/* ---------------------------------------------------------- priorities */

typedef struct order_log {
    _Atomic int n;
    int seq[64];
} order_log;

static int k_log(const synor_task_ctx *c)
{
    order_log *l = c->user;
    int v;
    memcpy(&v, c->args, sizeof v);
    l->seq[atomic_fetch_add(&l->n, 1)] = v;
    return 0;
}
static const synor_kernel kernel_log = {.name = "log", .fn = {[SYNOR_KIND_CPU] = k_log}};

TEST(priorities_order_fifo_within_level)
{
    synor_runtime *rt = make(1, 0, 1, 0);
    ASSERT(rt != NULL);
    static order_log l;
    atomic_store(&l.n, 0);
    /* value = priority * 100 + submission index within the level */
    static const synor_priority pr[] = {SYNOR_PRIORITY_LOW, SYNOR_PRIORITY_NORMAL,
                                        SYNOR_PRIORITY_CRITICAL, SYNOR_PRIORITY_HIGH};
    int count[4] = {0};
    for (int i = 0; i < 24; i++) {
        synor_priority p = pr[(i * 7) % 4];
        int v = (3 - (int)p) * 100 + count[p]++;
        synor_task_spec t = {.kernel = &kernel_log, .priority = p, .args = &v, .args_size = sizeof v,
                        .user = &l};
        ASSERT_OK(synor_task_submit(rt, &t));
    }
    ASSERT_EQ(synor_runtime_wait_all(rt), SYNOR_ESTATE); /* not started */
    ASSERT_OK(synor_runtime_start(rt));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT_EQ(atomic_load(&l.n), 24);
    for (int i = 1; i < 24; i++)
        if (l.seq[i] >= l.seq[i - 1] + 100 || (l.seq[i] / 100 == l.seq[i - 1] / 100 &&
                                               l.seq[i] != l.seq[i - 1] + 1))
            TEST__FAIL("order broken at %d: %d after %d", i, l.seq[i], l.seq[i - 1]);
    ASSERT_EQ(l.seq[0], 300);
    ASSERT_EQ(l.seq[23] / 100, 0);
    synor_runtime_destroy(rt);
}

/* ----------------------------------------------------- dependency inference */

typedef struct cell {
    long value;
    _Atomic long mismatches;
} cell;

static int k_set(const synor_task_ctx *c)
{
    long v;
    memcpy(&v, c->args, sizeof v);
    *(long *)c->buffers[0] = v;
    return 0;
}
static int k_check(const synor_task_ctx *c)
{
    long v;
    memcpy(&v, c->args, sizeof v);
    if (*(const long *)c->buffers[0] != v)
        atomic_fetch_add(&((cell *)c->user)->mismatches, 1);
    return 0;
}
static int k_incr(const synor_task_ctx *c)
{
    (*(long *)c->buffers[0])++;
    return 0;
}
static const synor_kernel kernel_set = {.name = "set", .fn = {[SYNOR_KIND_CPU] = k_set}};
static const synor_kernel kernel_check = {.name = "check", .fn = {[SYNOR_KIND_CPU] = k_check}};
static const synor_kernel kernel_incr = {.name = "incr", .fn = {[SYNOR_KIND_CPU] = k_incr}};

static synor_handle *reg_long(synor_runtime *rt, long *p)
{
    synor_handle_desc d = {.ptr = p, .dtype = SYNOR_DTYPE_INT8, .ndim = 1, .shape = {sizeof *p}};
    synor_handle *h = NULL;
    return synor_handle_register(rt, &d, &h) == 0 ? h : NULL;
}

TEST(writes_then_readers_then_writes)
{
    synor_runtime *rt = make(4, 0, 1, 1);
    ASSERT(rt != NULL);
    static cell x;
    x.value = -1;
    atomic_store(&x.mismatches, 0);
    synor_handle *h = reg_long(rt, &x.value);
    ASSERT(h != NULL);
    for (long r = 0; r < 2000; r++) {
        synor_task_spec w = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_set, .ndata = 1, .data = {h}, .mode = {SYNOR_ACCESS_W},
                        .args = &r, .args_size = sizeof r};
        ASSERT_OK(synor_task_submit(rt, &w));
        for (int k = 0; k < 3; k++) {
            synor_task_spec rd = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_check, .ndata = 1, .data = {h},
                             .mode = {SYNOR_ACCESS_R}, .args = &r, .args_size = sizeof r,
                             .user = &x};
            ASSERT_OK(synor_task_submit(rt, &rd));
        }
    }
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT_EQ(atomic_load(&x.mismatches), 0);
    ASSERT_EQ(x.value, 1999);
    ASSERT_OK(synor_handle_unregister(h));
    synor_runtime_destroy(rt);
}

TEST(read_write_chain_is_serial)
{
    synor_runtime *rt = make(4, 0, 1, 1);
    ASSERT(rt != NULL);
    static long counters[3];
    memset(counters, 0, sizeof counters);
    synor_handle *h[3];
    for (int i = 0; i < 3; i++)
        ASSERT((h[i] = reg_long(rt, &counters[i])) != NULL);
    for (int i = 0; i < 30000; i++) {
        synor_task_spec t = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_incr, .ndata = 1, .data = {h[i % 3]},
                        .mode = {SYNOR_ACCESS_RW}};
        ASSERT_OK(synor_task_submit(rt, &t));
    }
    /* A task reading one handle twice and writing it: no self-dependency. */
    synor_task_spec t2 = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_incr, .ndata = 2, .data = {h[0], h[0]},
                     .mode = {SYNOR_ACCESS_RW, SYNOR_ACCESS_R}};
    ASSERT_OK(synor_task_submit(rt, &t2));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT_EQ(counters[0], 10001);
    ASSERT_EQ(counters[1], 10000);
    ASSERT_EQ(counters[2], 10000);
    synor_runtime_stats st;
    synor_runtime_get_stats(rt, &st);
    ASSERT_EQ(st.executed, 30001);
    for (int i = 0; i < 3; i++)
        ASSERT_OK(synor_handle_unregister(h[i]));
    synor_runtime_destroy(rt);
}

/* Tasks that submit tasks: wait_all covers the children. */
static const synor_kernel kernel_spawn;
static int k_spawn(const synor_task_ctx *c)
{
    synor_runtime *rt = c->user;
    int depth;
    memcpy(&depth, c->args, sizeof depth);
    if (depth == 0)
        return 0;
    depth--;
    for (int i = 0; i < 3; i++) {
        synor_task_spec t = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_spawn, .args = &depth, .args_size = sizeof depth,
                        .user = rt};
        int rc = synor_task_submit(rt, &t);
        if (rc < 0)
            return rc;
    }
    return 0;
}
static const synor_kernel kernel_spawn = {.name = "spawn", .fn = {[SYNOR_KIND_CPU] = k_spawn}};

TEST(tasks_submitted_from_kernels)
{
    synor_runtime *rt = make(3, 0, 1, 1);
    ASSERT(rt != NULL);
    int depth = 7; /* 1 + 3 + ... + 3^7 = 3280 tasks */
    synor_task_spec t = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_spawn, .args = &depth, .args_size = sizeof depth, .user = rt};
    ASSERT_OK(synor_task_submit(rt, &t));
    ASSERT_OK(synor_runtime_wait_all(rt));
    synor_runtime_stats st;
    synor_runtime_get_stats(rt, &st);
    ASSERT_EQ(st.executed, 3280);
    synor_runtime_destroy(rt);
}

TEST(empty_task_storms)
{
    synor_runtime *rt = make(0, 0, 1, 1); /* one worker per core */
    ASSERT(rt != NULL);
    static long c;
    c = 0;
    synor_handle *h = reg_long(rt, &c);
    ASSERT(h != NULL);
    uint64_t total = 0;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 20000; i++) {
            synor_task_spec t = {.kernel = &kernel_empty, .priority = (synor_priority)(i % 4)};
            ASSERT_OK(synor_task_submit(rt, &t));
        }
        for (int i = 0; i < 5000; i++) {
            synor_task_spec t = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_empty, .ndata = 1, .data = {h},
                            .mode = {SYNOR_ACCESS_RW}};
            ASSERT_OK(synor_task_submit(rt, &t));
        }
        total += 25000;
        ASSERT_OK(synor_runtime_wait_all(rt));
    }
    synor_runtime_stats st;
    synor_runtime_get_stats(rt, &st);
    ASSERT_EQ(st.executed, total);
    ASSERT_EQ(st.submitted, total);
    ASSERT_OK(synor_handle_unregister(h));
    synor_runtime_destroy(rt);
}

TEST(destroy_without_start_drops_tasks)
{
    synor_runtime *rt = make(2, 0, 1, 0);
    ASSERT(rt != NULL);
    static long v;
    synor_handle *h = reg_long(rt, &v);
    ASSERT(h != NULL);
    for (int i = 0; i < 1000; i++) {
        synor_task_spec t = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_incr, .ndata = 1, .data = {h}, .mode = {SYNOR_ACCESS_RW}};
        ASSERT_OK(synor_task_submit(rt, &t));
    }
    ASSERT_EQ(synor_handle_unregister(h), SYNOR_EBUSY);
    synor_runtime_destroy(rt); /* frees h and the queued tasks (ASan: no leak) */
}

/* ------------------------------------------------------ placement by kind */

static int k_kind(const synor_task_ctx *c)
{
    *(long *)c->buffers[0] = (long)c->kind;
    return 0;
}
static const synor_kernel kernel_gpu_only = {.name = "gpu_only", .fn = {[SYNOR_KIND_GPU] = k_kind}};
static const synor_kernel kernel_cpu_only = {.name = "cpu_only", .fn = {[SYNOR_KIND_CPU] = k_kind}};

TEST(tasks_run_only_where_implemented)
{
    synor_runtime *rt = make(2, 0, 1, 1);
    ASSERT(rt != NULL);
    synor_task_spec t = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_gpu_only};
    ASSERT_EQ(synor_task_submit(rt, &t), SYNOR_ENOTSUP);
    ASSERT_CONTAINS(synor_errmsg(), "gpu_only");
    synor_runtime_destroy(rt);

    rt = make(2, 2, 1, 1);
    ASSERT(rt != NULL);
    static long out[200];
    synor_handle *h[200];
    for (int i = 0; i < 200; i++) {
        out[i] = -1;
        ASSERT((h[i] = reg_long(rt, &out[i])) != NULL);
        synor_task_spec k = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = i % 2 ? &kernel_gpu_only : &kernel_cpu_only, .ndata = 1,
                        .data = {h[i]}, .mode = {SYNOR_ACCESS_W}};
        ASSERT_OK(synor_task_submit(rt, &k));
    }
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (int i = 0; i < 200; i++) {
        ASSERT_EQ(out[i], i % 2 ? SYNOR_KIND_GPU : SYNOR_KIND_CPU);
        ASSERT_OK(synor_handle_unregister(h[i]));
    }
    synor_runtime_destroy(rt);
}

/* ---------------------------------------------------------- fault injection */

/* Fails its first `fail` attempts (args), then adds 1 to its data. */
static int k_flaky(const synor_task_ctx *c)
{
    unsigned fail;
    memcpy(&fail, c->args, sizeof fail);
    if (c->attempt < fail)
        return synor__error(SYNOR_EIO, "injected fault %u", c->attempt + 1);
    (*(long *)c->buffers[0])++;
    return 0;
}
static const synor_kernel kernel_flaky = {.name = "flaky", .fn = {[SYNOR_KIND_CPU] = k_flaky}};

TEST(failed_attempts_are_retried)
{
    synor_runtime *rt = make(2, 0, 3, 1);
    ASSERT(rt != NULL);
    static long v[50];
    synor_handle *h[50];
    unsigned fail = 2;
    for (int i = 0; i < 50; i++) {
        v[i] = 0;
        ASSERT((h[i] = reg_long(rt, &v[i])) != NULL);
        for (int k = 0; k < 4; k++) {
            synor_task_spec t = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_flaky, .ndata = 1, .data = {h[i]},
                            .mode = {SYNOR_ACCESS_RW}, .args = &fail, .args_size = sizeof fail};
            ASSERT_OK(synor_task_submit(rt, &t));
        }
    }
    ASSERT_OK(synor_runtime_wait_all(rt));
    synor_runtime_stats st;
    synor_runtime_get_stats(rt, &st);
    ASSERT_EQ(st.retried, 50 * 4 * 2);
    ASSERT_EQ(st.failed, 0);
    for (int i = 0; i < 50; i++) {
        ASSERT_EQ(v[i], 4);
        ASSERT_OK(synor_handle_unregister(h[i]));
    }
    synor_runtime_destroy(rt);
}

TEST(exhausted_retries_fail_with_a_message_and_cancel_dependents)
{
    synor_runtime *rt = make(2, 0, 3, 1);
    ASSERT(rt != NULL);
    static long v, other;
    v = 0;
    other = 0;
    synor_handle *h = reg_long(rt, &v), *h2 = reg_long(rt, &other);
    ASSERT(h && h2);
    unsigned fail = 3, none = 0;
    synor_task_spec bad = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_flaky, .ndata = 1, .data = {h}, .mode = {SYNOR_ACCESS_RW},
                      .args = &fail, .args_size = sizeof fail, .tag = 4242};
    ASSERT_OK(synor_task_submit(rt, &bad));
    for (int i = 0; i < 10; i++) { /* depend on the failed task: cancelled */
        synor_task_spec t = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_flaky, .ndata = 1, .data = {h},
                        .mode = {SYNOR_ACCESS_RW}, .args = &none, .args_size = sizeof none};
        ASSERT_OK(synor_task_submit(rt, &t));
    }
    synor_task_spec ok = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_flaky, .ndata = 1, .data = {h2}, .mode = {SYNOR_ACCESS_RW},
                     .args = &none, .args_size = sizeof none};
    ASSERT_OK(synor_task_submit(rt, &ok));
    ASSERT_EQ(synor_runtime_wait_all(rt), SYNOR_EIO);
    const char *m = synor_errmsg();
    ASSERT_CONTAINS(m, "task 'flaky' #4242");
    ASSERT_CONTAINS(m, "3 attempts");
    ASSERT_CONTAINS(m, "device 'cpu'");
    ASSERT_CONTAINS(m, "SYNOR_EIO");
    ASSERT_CONTAINS(m, "injected fault 3");
    ASSERT_EQ(v, 0);     /* neither the failed task nor its dependents wrote */
    ASSERT_EQ(other, 1); /* independent work completed */
    synor_runtime_stats st;
    synor_runtime_get_stats(rt, &st);
    ASSERT_EQ(st.failed, 1);
    ASSERT_EQ(st.cancelled, 10);
    /* The failure is reported once; the runtime keeps working. */
    ASSERT_OK(synor_runtime_wait_all(rt));
    synor_task_spec again = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_flaky, .ndata = 1, .data = {h},
                        .mode = {SYNOR_ACCESS_RW}, .args = &none, .args_size = sizeof none};
    ASSERT_OK(synor_task_submit(rt, &again));
    ASSERT_OK(synor_runtime_wait_all(rt));
    ASSERT_EQ(v, 1);
    ASSERT_OK(synor_handle_unregister(h));
    ASSERT_OK(synor_handle_unregister(h2));
    synor_runtime_destroy(rt);
}

/* CPU implementation always fails, GPU one works: the retry moves device. */
static int k_cpu_broken(const synor_task_ctx *c)
{
    (void)c;
    return synor__error(SYNOR_EIO, "cpu kernel broken");
}
static const synor_kernel kernel_both = {
    .name = "both", .fn = {[SYNOR_KIND_CPU] = k_cpu_broken, [SYNOR_KIND_GPU] = k_kind}};

TEST(retry_moves_to_another_device)
{
    synor_runtime *rt = make(1, 1, 2, 1);
    ASSERT(rt != NULL);
    static long out[100];
    synor_handle *h[100];
    for (int i = 0; i < 100; i++) {
        out[i] = -1;
        ASSERT((h[i] = reg_long(rt, &out[i])) != NULL);
        synor_task_spec t = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_both, .ndata = 1, .data = {h[i]},
                        .mode = {SYNOR_ACCESS_W}};
        ASSERT_OK(synor_task_submit(rt, &t));
    }
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (int i = 0; i < 100; i++) {
        ASSERT_EQ(out[i], SYNOR_KIND_GPU);
        ASSERT_OK(synor_handle_unregister(h[i]));
    }
    synor_runtime_destroy(rt);
}

TEST_MAIN(config_and_lifecycle, priorities_order_fifo_within_level,
          writes_then_readers_then_writes, read_write_chain_is_serial,
          tasks_submitted_from_kernels, empty_task_storms, destroy_without_start_drops_tasks,
          tasks_run_only_where_implemented, failed_attempts_are_retried,
          exhausted_retries_fail_with_a_message_and_cancel_dependents,
          retry_moves_to_another_device)
