/* bench_runtime_memory.c - memory of a large task graph held by the runtime
 * (issue 4: "a 1,000,000-task DAG runs with memory linear in tasks").
 *
 *   bench_runtime_memory N [HANDLES] [WORKERS]
 *
 * Registers HANDLES (default 1024) small handles, then, with the runtime
 * not yet started so that every task stays in memory, submits N empty
 * tasks, task i reading handle (7 i) mod HANDLES and read-writing handle
 * i mod HANDLES: a DAG of N tasks and about 2 N dependency edges. Prints
 * the resident memory before and after submission (from /proc/self/statm),
 * the bytes per task, then starts the runtime and prints the time to run
 * the whole graph. Run it for several N (bench/run_runtime_memory.sh): the
 * bytes per task stay constant when memory is linear in tasks. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "synor/error.h"
#include "synor/runtime.h"

static int empty(const synor_task_ctx *c)
{
    (void)c;
    return 0;
}
static const synor_kernel kernel_empty = {.name = "empty", .fn = {[SYNOR_KIND_CPU] = empty}};

static long rss_bytes(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &res) != 2)
        res = -1;
    fclose(f);
    return res * sysconf(_SC_PAGESIZE);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s N [handles] [workers]\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]), nh = argc > 2 ? atol(argv[2]) : 1024;
    unsigned workers = argc > 3 ? (unsigned)atoi(argv[3]) : 2;
    if (n < 1 || nh < 1) {
        fprintf(stderr, "N and handles must be positive\n");
        return 2;
    }
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = workers;
    /* the CPU workers alone: a GPU host's CUDA device (and an OpenCL
     * accelerator) would add a device and its thread to a CPU benchmark */
    cfg.cuda = 0;
    cfg.opencl = SYNOR_OPENCL_OFF;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&cfg, &rt) < 0) {
        fprintf(stderr, "%s\n", synor_errmsg());
        return 1;
    }
    double *vals = calloc((size_t)nh, sizeof *vals);
    synor_handle **h = calloc((size_t)nh, sizeof *h);
    for (long i = 0; i < nh; i++) {
        synor_handle_desc d = {.ptr = &vals[i], .dtype = SYNOR_DTYPE_FP64, .ndim = 1, .shape = {1}};
        if (synor_handle_register(rt, &d, &h[i]) < 0) {
            fprintf(stderr, "%s\n", synor_errmsg());
            return 1;
        }
    }
    long before = rss_bytes();
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        synor_task_spec t = {.kernel = &kernel_empty, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 2,
                             .data = {h[(7 * i) % nh], h[i % nh]},
                             .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_RW}};
        if (t.data[0] == t.data[1])
            t.ndata = 1, t.data[0] = h[i % nh], t.mode[0] = SYNOR_ACCESS_RW;
        if (synor_task_submit(rt, &t) < 0) {
            fprintf(stderr, "task %ld: %s\n", i, synor_errmsg());
            return 1;
        }
    }
    double t1 = now_s();
    long after = rss_bytes();
    if (synor_runtime_start(rt) < 0 || synor_runtime_wait_all(rt) < 0) {
        fprintf(stderr, "%s\n", synor_errmsg());
        return 1;
    }
    double t2 = now_s();
    synor_runtime_stats st;
    synor_runtime_get_stats(rt, &st);
    printf("tasks=%ld handles=%ld workers=%u rss_before_mib=%.1f rss_after_submit_mib=%.1f "
           "bytes_per_task=%.1f submit_s=%.3f run_s=%.3f executed=%llu\n",
           n, nh, workers, before / 1048576.0, after / 1048576.0,
           (double)(after - before) / (double)n, t1 - t0, t2 - t1,
           (unsigned long long)st.executed);
    for (long i = 0; i < nh; i++)
        synor_handle_unregister(h[i]);
    synor_runtime_destroy(rt);
    free(h);
    free(vals);
    return st.executed == (unsigned long long)n ? 0 : 1;
}
