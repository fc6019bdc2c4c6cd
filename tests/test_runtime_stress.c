/* test_runtime_stress.c - random task graphs over reused buffers on two CPU
 * workers and the test GPU with a small memory node of its own (1 MiB for
 * 2 MiB of data: replicas are evicted and written back all the time),
 * every result checked against the same tasks run one after the other on
 * the host, final buffers and every task's own output. Prefetch is on (the
 * default), so requests queued for readers that then ran elsewhere (stolen,
 * or their replica evicted since) are still pending when later writers of
 * the same data run. Fault injection: a task may fail its first attempt
 * after writing part of its output (some of its chunks).
 * Runs under ThreadSanitizer too (label concurrency). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "synor/error.h"
#include "synor/runtime.h"
#include "test.h"

#define NBUF 64
#define ELEMS 4096 /* uint64 each: 32 KiB a buffer, 2 MiB in all */
#define NTASKS 3000
#define CHUNKS 8
#define MAX_IN 2

/* One task: output buffer (W or RW) first, then its inputs (R). */
typedef struct op {
    uint64_t salt;
    uint32_t nin, rw;
    uint32_t fail_chunks; /* > 0: the first attempt writes this many chunks, then fails */
    uint32_t index;
    int out, in[MAX_IN];
    const void *kernel;
} op;

/* What every kernel computes: element i of the output from its old value
 * (read-write) and the inputs' element i. */
/* Each task's output as its kernel left it (a sum of its elements),
 * against the sequential run's: a wrong version is seen even when a later
 * writer overwrites it. */
static uint64_t sums[NTASKS], ref_sums[NTASKS];

static uint64_t sum(const uint64_t *x)
{
    uint64_t s = 0;
    for (size_t i = 0; i < ELEMS; i++)
        s = s * 31 + x[i];
    return s;
}

static uint64_t f(uint64_t old, int rw, const uint64_t *const *in, uint32_t nin, uint64_t salt,
                  size_t i)
{
    uint64_t v = (rw ? old : 0) * 6364136223846793005u + salt + i;
    for (uint32_t j = 0; j < nin; j++)
        v ^= in[j][i] * 0x9e3779b97f4a7c15u + (v >> 29);
    return v;
}

static int k_mix(const synor_task_ctx *c)
{
    op a;
    memcpy(&a, c->args, sizeof a);
    uint64_t *out = c->buffers[0];
    const uint64_t *in[MAX_IN];
    for (uint32_t j = 0; j < a.nin; j++)
        in[j] = c->buffers[1 + j];
    uint32_t stop = c->attempt == 0 && a.fail_chunks ? a.fail_chunks : CHUNKS;
    for (uint32_t k = 0; k < stop; k++) {
        for (size_t i = k * (ELEMS / CHUNKS); i < (k + 1) * (ELEMS / CHUNKS); i++)
            out[i] = f(out[i], (int)a.rw, in, a.nin, a.salt, i);
    }
    if (stop < CHUNKS)
        return synor__error(SYNOR_EIO, "injected fault after %u of %u chunks", stop, CHUNKS);
    sums[a.index] = sum(out);
    return 0;
}

static const synor_kernel mix_any = {
    .name = "mix_any", .fn = {[SYNOR_KIND_CPU] = k_mix, [SYNOR_KIND_GPU] = k_mix}};
static const synor_kernel mix_cpu = {.name = "mix_cpu", .fn = {[SYNOR_KIND_CPU] = k_mix}};
static const synor_kernel mix_gpu = {.name = "mix_gpu", .fn = {[SYNOR_KIND_GPU] = k_mix}};

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void make_ops(op *ops, uint64_t seed, unsigned fault_pct)
{
    uint64_t s = seed * 2654435761u + 1;
    for (int t = 0; t < NTASKS; t++) {
        op *o = &ops[t];
        memset(o, 0, sizeof *o);
        o->index = (uint32_t)t;
        o->salt = rng_next(&s);
        o->out = (int)(rng_next(&s) % NBUF);
        o->rw = rng_next(&s) % 5 < 3;
        o->nin = (uint32_t)(rng_next(&s) % (MAX_IN + 1));
        for (uint32_t j = 0; j < o->nin; j++) {
            int b;
            do {
                b = (int)(rng_next(&s) % NBUF);
            } while (b == o->out || (j == 1 && b == o->in[0]));
            o->in[j] = b;
        }
        unsigned k = (unsigned)(rng_next(&s) % 10);
        o->kernel = k < 6 ? &mix_any : k < 8 ? &mix_cpu : &mix_gpu;
        if (fault_pct && rng_next(&s) % 100 < fault_pct)
            o->fail_chunks = 1 + (uint32_t)(rng_next(&s) % (CHUNKS - 1));
    }
}

static void initial(uint64_t *buf, int b, uint64_t seed)
{
    for (size_t i = 0; i < ELEMS; i++)
        buf[i] = (seed + 1) * 1000003u + (uint64_t)b * ELEMS + i;
}

static void reference(uint64_t (*ref)[ELEMS], const op *ops, uint64_t seed)
{
    for (int b = 0; b < NBUF; b++)
        initial(ref[b], b, seed);
    for (int t = 0; t < NTASKS; t++) {
        const op *o = &ops[t];
        const uint64_t *in[MAX_IN];
        for (uint32_t j = 0; j < o->nin; j++)
            in[j] = ref[o->in[j]];
        for (size_t i = 0; i < ELEMS; i++)
            ref[o->out][i] = f(ref[o->out][i], (int)o->rw, in, o->nin, o->salt, i);
        ref_sums[t] = sum(ref[o->out]);
    }
}

static synor_runtime *make(unsigned rebalance_us)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 2;
    c.test_gpu_workers = 1;
    c.test_gpu_memory = 1 << 20;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0;
    c.rebalance_us = rebalance_us;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0 || synor_runtime_start(rt) < 0) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

/* Runs `runs` graphs (seeds first_seed...) and counts wrong results. */
static int run_graphs(uint64_t first_seed, int runs, unsigned fault_pct, unsigned rebalance_us,
                      long *wrong, char *first, size_t first_size)
{
    static uint64_t data[NBUF][ELEMS], ref[NBUF][ELEMS];
    static op ops[NTASKS];
    synor_runtime *rt = make(rebalance_us);
    if (!rt)
        return -1;
    *wrong = 0;
    first[0] = 0;
    for (int r = 0; r < runs; r++) {
        uint64_t seed = first_seed + (uint64_t)r;
        make_ops(ops, seed, fault_pct);
        reference(ref, ops, seed);
        synor_handle *h[NBUF];
        for (int b = 0; b < NBUF; b++) {
            initial(data[b], b, seed);
            synor_handle_desc d = {.ptr = data[b], .dtype = SYNOR_DTYPE_FP64, .ndim = 1,
                                   .shape = {ELEMS}};
            if (synor_handle_register(rt, &d, &h[b]) < 0) {
                synor_runtime_destroy(rt);
                return -1;
            }
        }
        for (int t = 0; t < NTASKS; t++) {
            const op *o = &ops[t];
            synor_task_spec s = {.kernel = o->kernel, .priority = SYNOR_PRIORITY_NORMAL,
                                 .ndata = 1 + o->nin, .args = o, .args_size = sizeof *o,
                                 .tag = (uint64_t)t + 1};
            s.data[0] = h[o->out];
            s.mode[0] = o->rw ? SYNOR_ACCESS_RW : SYNOR_ACCESS_W;
            for (uint32_t j = 0; j < o->nin; j++) {
                s.data[1 + j] = h[o->in[j]];
                s.mode[1 + j] = SYNOR_ACCESS_R;
            }
            if (synor_task_submit(rt, &s) < 0) {
                synor_runtime_destroy(rt);
                return -1;
            }
        }
        int rc = synor_runtime_wait_all(rt);
        for (int b = 0; b < NBUF; b++)
            (void)synor_handle_unregister(h[b]);
        if (rc < 0) {
            snprintf(first, first_size, "seed %llu: wait_all: %s", (unsigned long long)seed,
                     synor_errmsg());
            synor_runtime_destroy(rt);
            return rc;
        }
        for (int t = 0; t < NTASKS; t++)
            if (sums[t] != ref_sums[t] && (*wrong)++ == 0)
                snprintf(first, first_size, "seed %llu: task %d wrote a wrong result (buffer %d)",
                         (unsigned long long)seed, t, ops[t].out);
        for (int b = 0; b < NBUF; b++)
            for (size_t i = 0; i < ELEMS; i++)
                if (data[b][i] != ref[b][i] && (*wrong)++ == 0)
                    snprintf(first, first_size, "seed %llu: buffer %d element %zu: %llu, expected %llu",
                             (unsigned long long)seed, b, i, (unsigned long long)data[b][i],
                             (unsigned long long)ref[b][i]);
    }
    synor_runtime_destroy(rt);
    return 0;
}

TEST(random_graphs_match_a_sequential_run)
{
    long wrong = 0;
    char first[256];
    ASSERT_OK(run_graphs(1, 2, 0, 1000, &wrong, first, sizeof first));
    if (wrong)
        fprintf(stderr, "  %ld wrong results; first: %s\n", wrong, first);
    ASSERT_EQ(wrong, 0);
}

/* Rebalancing every 20 us moves queued tasks away from the device their
 * prefetch requests were made for. */
TEST(random_graphs_with_frequent_rebalancing_match_a_sequential_run)
{
    long wrong = 0;
    char first[256];
    ASSERT_OK(run_graphs(51, 1, 0, 20, &wrong, first, sizeof first));
    if (wrong)
        fprintf(stderr, "  %ld wrong results; first: %s\n", wrong, first);
    ASSERT_EQ(wrong, 0);
}

/* 5% of the tasks fail their first attempt after writing part of their
 * output (a read-write one included): the retry must start from the data
 * the task found. */
TEST(random_graphs_with_failing_first_attempts_match_a_sequential_run)
{
    long wrong = 0;
    char first[256];
    ASSERT_OK(run_graphs(101, 1, 5, 1000, &wrong, first, sizeof first));
    if (wrong)
        fprintf(stderr, "  %ld wrong results; first: %s\n", wrong, first);
    ASSERT_EQ(wrong, 0);
}

TEST_MAIN(random_graphs_match_a_sequential_run,
          random_graphs_with_frequent_rebalancing_match_a_sequential_run,
          random_graphs_with_failing_first_attempts_match_a_sequential_run)
