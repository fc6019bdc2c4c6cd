/* bench_task_overhead.c - per-task overhead of the Synor runtime, measured
 * like StarPU's anchor (task_overhead_bench.c) so the two print comparable
 * lines:
 *   bench_task_overhead MODE N [WORKERS]
 *   MODE indep : N independent empty CPU tasks, no data
 *        chain : N empty tasks, each read-write on the same handle (a chain)
 *        indepd: N empty tasks, each read-write on its own handle
 * Prints submit and total nanoseconds per task (total = first submit until
 * wait_all returns); create/start/destroy and handle registration are
 * excluded, as in the anchor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "synor/error.h"
#include "synor/runtime.h"

static int empty(const synor_task_ctx *c)
{
    (void)c;
    return 0;
}
static const synor_kernel kernel_empty = {.name = "empty", .fn = {[SYNOR_KIND_CPU] = empty}};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s indep|chain|indepd N [workers]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    long n = atol(argv[2]);
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = argc > 3 ? (unsigned)atoi(argv[3]) : 2;
    /* the CPU workers alone: a GPU host's CUDA device (and an OpenCL
     * accelerator) would add a device and its thread to a CPU benchmark */
    cfg.cuda = 0;
    cfg.opencl = SYNOR_OPENCL_OFF;
    synor_runtime *rt;
    if (synor_runtime_create(&cfg, &rt) < 0 || synor_runtime_start(rt) < 0) {
        fprintf(stderr, "runtime: %s\n", synor_errmsg());
        return 1;
    }
    float one[16] = {0};
    float *many = NULL;
    synor_handle *h1 = NULL, **hs = NULL;
    synor_handle_desc d = {.ptr = one, .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {16}};
    if (strcmp(mode, "chain") == 0) {
        if (synor_handle_register(rt, &d, &h1) < 0)
            return 1;
    } else if (strcmp(mode, "indepd") == 0) {
        many = calloc((size_t)n * 16, sizeof *many);
        hs = malloc((size_t)n * sizeof *hs);
        for (long i = 0; i < n; i++) {
            d.ptr = many + 16 * i;
            if (synor_handle_register(rt, &d, &hs[i]) < 0)
                return 1;
        }
    } else if (strcmp(mode, "indep") != 0) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    /* Warm the task pool as StarPU's allocator is warm after init: one
     * untimed round of the same size would be unfair the other way, so only
     * a small one. */
    for (int i = 0; i < 1000; i++) {
        synor_task_spec t = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_empty};
        synor_task_submit(rt, &t);
    }
    synor_runtime_wait_all(rt);

    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        synor_task_spec t = {.priority = SYNOR_PRIORITY_NORMAL, .kernel = &kernel_empty};
        if (h1 || hs) {
            t.ndata = 1;
            t.data[0] = h1 ? h1 : hs[i];
            t.mode[0] = SYNOR_ACCESS_RW;
        }
        if (synor_task_submit(rt, &t) < 0) {
            fprintf(stderr, "submit: %s\n", synor_errmsg());
            return 1;
        }
    }
    double t1 = now_ns();
    if (synor_runtime_wait_all(rt) < 0) {
        fprintf(stderr, "wait_all: %s\n", synor_errmsg());
        return 1;
    }
    double t2 = now_ns();
    printf("mode=%s n=%ld runtime=synor ncpu=%u submit_ns_per_task=%.1f total_ns_per_task=%.1f\n",
           mode, n, synor_runtime_worker_count(rt), (t1 - t0) / n, (t2 - t0) / n);
    if (h1)
        synor_handle_unregister(h1);
    if (hs) {
        for (long i = 0; i < n; i++)
            synor_handle_unregister(hs[i]);
        free(hs);
        free(many);
    }
    synor_runtime_destroy(rt);
    return 0;
}
