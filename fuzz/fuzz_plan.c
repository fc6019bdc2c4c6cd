/* fuzz_plan.c - plan files as `synor run --plan` reads them
 * (synor_exec_plan_hints: a synor-plan/1 file naming a device of this run
 * for tasks of the workload), for a fixed workload on a runtime with two
 * devices, "cpu" and "test-gpu" (created, never started: reading a plan
 * only looks the devices up).
 *
 * The call takes a path: each input is written to a memory file and read
 * through /proc/self/fd. Contract checked: a rejected plan leaves every
 * hint untouched and names the file with a position inside it; an accepted
 * one sets each hint to 0 (a task the plan does not name: the runtime
 * chooses) or 1 + a device index of the runtime, and the same bytes give
 * the same hints twice. */
#define _GNU_SOURCE /* memfd_create */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "synor.h"

static const char *const WORKLOAD =
    "{\"format\": \"synor-workload/1\", \"name\": \"chain\", \"tasks\": [\n"
    " {\"id\": \"load\", \"op\": \"relu\", \"dims\": {\"elements\": 1024},\n"
    "  \"produces\": [{\"name\": \"x\", \"bytes\": 4096}]},\n"
    " {\"id\": \"mm\", \"op\": \"matmul\", \"dims\": {\"m\": 32, \"n\": 32, \"k\": 32},\n"
    "  \"consumes\": [{\"name\": \"x\"}], \"produces\": [{\"name\": \"y\", \"bytes\": 4096}]},\n"
    " {\"id\": \"out\", \"op\": \"softmax\", \"dims\": {\"elements\": 1024},\n"
    "  \"consumes\": [{\"name\": \"y\"}]}]}";

#define SENTINEL 0xdeadbeefu

static synor_workload *wl;
static synor_runtime *rt;
static int fd;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = 1;
    cfg.pin_workers = 0;
    cfg.test_gpu_workers = 1;
    cfg.opencl = SYNOR_OPENCL_OFF;
    cfg.cuda = 0;
    if (synor_workload_load_string(WORKLOAD, strlen(WORKLOAD), "chain.json", &wl) ||
        synor_runtime_create(&cfg, &rt))
        fuzz_fail("set-up: %s", synor_errmsg());
    FUZZ_CHECK(synor_runtime_device_count(rt) == 2, "set-up: %u devices, expected cpu and test-gpu",
               synor_runtime_device_count(rt));
    fd = memfd_create("plan", 0);
    FUZZ_CHECK(fd >= 0, "set-up: memfd_create failed");
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return 0;
}

static int read_plan(const uint8_t *data, size_t size, unsigned *hints, size_t n)
{
    for (size_t i = 0; i < n; i++)
        hints[i] = SENTINEL;
    FUZZ_CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, data, size, 0) == (ssize_t)size,
               "cannot write the memory file");
    return synor_exec_plan_hints(path, wl, rt, hints);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n = synor_workload_count(wl);
    unsigned hints[8], again[8];
    int rc = read_plan(data, size, hints, n);
    if (rc) {
        fuzz_check_error(rc, 0, path, data, size);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(hints[i] == SENTINEL, "a rejected plan set the hint of task %zu", i);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(hints[i] <= synor_runtime_device_count(rt),
                   "task %zu: hint %u, the run has %u devices", i, hints[i],
                   synor_runtime_device_count(rt));
    FUZZ_CHECK(read_plan(data, size, again, n) == 0, "the same plan failed the second time: %s",
               synor_errmsg());
    FUZZ_CHECK(memcmp(hints, again, n * sizeof *hints) == 0,
               "the same plan gave other hints the second time");
    return 0;
}
