/* test_sim_shplace.c - the dynamic strategy placing as the runtime does on
 * a fabric with a device that shares the host's cores (docs/PLANNING.md
 * "Placing as the runtime does"; src/sim/shplace.c), the fabric file's
 * "host_sharing" field, synor_fabric_set_share_place_scale, and (where
 * this machine has an OpenCL CPU device, PoCL; skipped with a message
 * elsewhere) synor_whatif_calibrate_sharing. Explicit task times and no
 * contention (factors 1 and 1), so every figure below follows from the
 * rule by hand. */
#include <math.h>
#include <stdlib.h>

#include "common/common.h"
#include "synor.h"
#include "pocl_fixture.h"
#include "sim_fixture.h"
#include "test.h"

static synor_catalog *cat;

/* Two CPU workers and a CPU-kind OpenCL-like device, one node; the
 * shared device's extra fields go between the two parts. */
static const char *const FABRIC =
    "{\"format\": \"synor-fabric/1\", \"name\": \"shared\", \"currency\": \"USD\",\n"
    " \"nodes\": [{\"name\": \"host\"}],\n"
    " \"devices\": [\n"
    "  {\"name\": \"cpu\", \"profile\": \"amd-epyc-9654\", \"node\": \"host\", \"count\": 2},\n"
    "  {\"name\": \"ocl\", \"profile\": \"intel-xeon-8480plus\", \"node\": \"host\"";
static const char *const FABRIC_END = "}]}";

/* Six independent tasks: 1 s on a worker, 4 s on the shared device. */
static const char *const SIX =
    "{\"format\": \"synor-workload/1\", \"name\": \"six\", \"tasks\": [\n"
    " {\"id\": \"t0\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 4}},\n"
    " {\"id\": \"t1\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 4}},\n"
    " {\"id\": \"t2\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 4}},\n"
    " {\"id\": \"t3\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 4}},\n"
    " {\"id\": \"t4\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 4}},\n"
    " {\"id\": \"t5\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 4}}]}";

/* Four tasks that run anywhere (1 s on a worker, 1.5 s on the shared
 * device), then six that only the workers run (1 s). */
static const char *const MIXED =
    "{\"format\": \"synor-workload/1\", \"name\": \"mixed\", \"tasks\": [\n"
    " {\"id\": \"y0\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 1.5}},\n"
    " {\"id\": \"y1\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 1.5}},\n"
    " {\"id\": \"y2\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 1.5}},\n"
    " {\"id\": \"y3\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 1.5}},\n"
    " {\"id\": \"x0\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x1\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x2\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x3\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x4\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x5\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}}]}";

/* The fabric with `extra` after the shared device's profile, loaded as
 * "shared.json"; rc as synor_fabric_load_string returns it. */
static int load_fabric(const char *extra, synor_fabric **f)
{
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        return -1;
    char text[1024];
    snprintf(text, sizeof text, "%s%s%s", FABRIC, extra, FABRIC_END);
    return synor_fabric_load_string(cat, text, strlen(text), "shared.json", f);
}

/* Simulates work on the fabric (extra as load_fabric's; place scale
 * applied when > 0); the trace in *t. */
static int run(const char *extra, double scale, const char *work, synor_trace **t)
{
    synor_fabric *f = NULL;
    int rc = load_fabric(extra, &f);
    if (!rc && scale > 0)
        rc = synor_fabric_set_share_place_scale(f, 2, scale);
    return simfx_run(rc, f, work, t);
}


static size_t on_device(const synor_trace *t, size_t dev)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_tasks; i++)
        n += t->tasks[i].device == dev;
    return n;
}

#define SHARED ", \"host_sharing\": {\"cpu_slowdown\": 1, \"slowdown\": 1}"

/* Placement at release: the runtime's earliest finish, backlog per device
 * of the group + the estimate. With the shared device's estimate its 4 s
 * (scale 1) it never beats the workers' queue (at most 2.5 + 1): six
 * tasks over two workers, 3 s. With scale 0.25 (estimate 1 s) t1 goes
 * there (workers' 0.5 + 1 > its 0 + 1), t2 and t3 to the workers (its
 * backlog 1 + 1 against 1.5 and 2, a tie kept by the workers), t4 there
 * (2.5 > 2), t5 to the workers; the rebalancer never moves t4 back (its 1 s
 * backlog is not more than a worker's backlog plus 1 s), so the shared
 * device runs t1 and t4 at their real 4 s each: 8 s. */
TEST(placement_follows_the_runtime_estimate)
{
    synor_trace *t = NULL;
    ASSERT_OK(run(SHARED, 0, SIX, &t));
    ASSERT_EQ(on_device(t, 2), 0);
    ASSERT_NEAR(t->makespan, 3, 1e-12);
    synor_trace_destroy(t);

    ASSERT_OK(run(SHARED, 0.25, SIX, &t));
    ASSERT_EQ(on_device(t, 2), 2);
    ASSERT_EQ(simfx_task(t, "t1")->device, 2);
    ASSERT_EQ(simfx_task(t, "t4")->device, 2);
    ASSERT_NEAR(simfx_task(t, "t1")->end, 4, 1e-12);
    ASSERT_NEAR(simfx_task(t, "t4")->start, 4, 1e-12);
    ASSERT_NEAR(t->makespan, 8, 1e-12);
    synor_trace_destroy(t);

    /* not shared: the dynamic strategy's own rule (expected finish), the
     * scale cannot be set */
    ASSERT_OK(run("", 0, SIX, &t));
    ASSERT_EQ(on_device(t, 2), 0);
    ASSERT_NEAR(t->makespan, 3, 1e-12);
    synor_trace_destroy(t);
    ASSERT_EQ(run("", 0.25, SIX, &t), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "does not share the host's cores"));
}

/* The rebalancer. At release y0 and y1 go to the workers (1 and 0.5 +
 * 1 against 1.5; a tie kept by the workers), y2 to the shared device (1 +
 * 1 > 1.5), y3 to the workers (2 against 1.5 + 1.5), then the x's (only
 * they run them): 9 tasks queued there, 4.5 s per worker, 1.5 s on the
 * shared device. Its first round moves the newest task the shared device
 * can run, y3 (4.5 > 1.5 + 1.5); the next would need 4 > 3 + 1.5 (y1):
 * none. So the shared device runs y2 (0 to 1.5) then y3 (1.5 to 3); no
 * other y is left in the workers' queue to move later. The dynamic
 * strategy without sharing keeps y3 on a worker (its expected finish 2
 * against the shared device's 3). */
TEST(rebalancer_moves_queued_work_to_the_least_backlog)
{
    synor_trace *t = NULL;
    ASSERT_OK(run(SHARED, 0, MIXED, &t));
    ASSERT_EQ(on_device(t, 2), 2);
    ASSERT_EQ(simfx_task(t, "y2")->device, 2);
    ASSERT_NEAR(simfx_task(t, "y2")->end, 1.5, 1e-12);
    ASSERT_EQ(simfx_task(t, "y3")->device, 2);
    ASSERT_NEAR(simfx_task(t, "y3")->start, 1.5, 1e-12);
    ASSERT_NEAR(simfx_task(t, "y3")->end, 3, 1e-12);
    ASSERT_NEAR(t->makespan, 4, 1e-12); /* 8 tasks of 1 s on the two workers */
    synor_trace_destroy(t);

    ASSERT_OK(run("", 0, MIXED, &t));
    ASSERT_EQ(simfx_task(t, "y2")->device, 2);
    ASSERT(simfx_task(t, "y3")->device != 2);
    ASSERT_EQ(on_device(t, 2), 1);
    synor_trace_destroy(t);
}

TEST(deterministic)
{
    synor_trace *t1 = NULL, *t2 = NULL;
    ASSERT_OK(run(", \"host_sharing\": {\"cpu_slowdown\": 1.7, \"slowdown\": 2.3}", 0.3, MIXED,
                  &t1));
    ASSERT_OK(run(", \"host_sharing\": {\"cpu_slowdown\": 1.7, \"slowdown\": 2.3}", 0.3, MIXED,
                  &t2));
    char *j1 = synor_trace_to_json(t1), *j2 = synor_trace_to_json(t2);
    ASSERT(j1 && j2 && !strcmp(j1, j2));
    free(j1);
    free(j2);
    synor_trace_destroy(t1);
    synor_trace_destroy(t2);
}

/* "host_sharing" in a fabric file: read as the setters take it; a bad
 * value is refused naming the file, the field and the value. */
TEST(fabric_file_host_sharing)
{
    synor_fabric *f = NULL;
    ASSERT_OK(load_fabric(", \"host_sharing\": {\"cpu_slowdown\": 1.7, \"slowdown\": 2.3, "
                          "\"place_scale\": 0.25}",
                          &f));
    const synor_fabric_device *fd = synor_fabric_device_at(f, 2);
    ASSERT(fd->share_cpu_slowdown == 1.7 && fd->share_slowdown == 2.3 &&
           fd->share_place_scale == 0.25);
    ASSERT(synor_fabric_device_at(f, 0)->share_cpu_slowdown == 0);
    synor_fabric_destroy(f);
    ASSERT_OK(load_fabric(SHARED, &f));
    ASSERT(synor_fabric_device_at(f, 2)->share_place_scale == 0);
    synor_fabric_destroy(f);

    static const struct {
        const char *extra, *field, *value;
    } bad[] = {
        {", \"host_sharing\": {\"cpu_slowdown\": 0.5, \"slowdown\": 2}",
         "devices[1].host_sharing.cpu_slowdown", "0.5"},
        {", \"host_sharing\": {\"cpu_slowdown\": 2, \"slowdown\": 500}",
         "devices[1].host_sharing.slowdown", "500"},
        {", \"host_sharing\": {\"cpu_slowdown\": 2, \"slowdown\": 2, \"place_scale\": 0}",
         "devices[1].host_sharing.place_scale", "0"},
        {", \"host_sharing\": {\"cpu_slowdown\": 2}", "devices[1].host_sharing", "slowdown"},
        {", \"host_sharing\": {\"cpu_slowdown\": 2, \"slowdown\": 2, \"slow\": 1}",
         "devices[1].host_sharing", "slow"},
        {", \"host_sharing\": 2", "devices[1].host_sharing", "object"},
        {", \"host_sharing\": {\"cpu_slowdown\": \"2\", \"slowdown\": 2}",
         "devices[1].host_sharing.cpu_slowdown", "number"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        f = NULL;
        int rc = load_fabric(bad[k].extra, &f);
        ASSERT(rc != 0);
        ASSERT(f == NULL);
        const char *m = synor_errmsg();
        if (!strstr(m, "shared.json") || !strstr(m, bad[k].field) || !strstr(m, bad[k].value))
            printf("  case %zu: %s\n", k, m);
        ASSERT(strstr(m, "shared.json"));
        ASSERT(strstr(m, bad[k].field));
        ASSERT(strstr(m, bad[k].value));
    }
}

TEST(place_scale_setter_checks_arguments)
{
    synor_fabric *f = NULL;
    ASSERT_OK(load_fabric(SHARED, &f));
    ASSERT_EQ(synor_fabric_set_share_place_scale(f, 9, 0.5), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "no device 9"));
    ASSERT_EQ(synor_fabric_set_share_place_scale(f, 0, 0.5), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "\"cpu.0\""));
    ASSERT_EQ(synor_fabric_set_share_place_scale(f, 2, -1), SYNOR_EINVAL);
    ASSERT_EQ(synor_fabric_set_share_place_scale(f, 2, NAN), SYNOR_EINVAL);
    ASSERT_EQ(synor_fabric_set_share_place_scale(f, 2, 2000), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "2000"));
    ASSERT_OK(synor_fabric_set_share_place_scale(f, 2, 0.5));
    ASSERT(synor_fabric_device_at(f, 2)->share_place_scale == 0.5);
    /* undoing the sharing undoes the scale */
    ASSERT_OK(synor_fabric_set_host_sharing(f, 2, 0, 0));
    ASSERT(synor_fabric_device_at(f, 2)->share_place_scale == 0);
    synor_fabric_destroy(f);
}

/* A run fabric's shared device calibrated: its place scale, the window
 * medians over the window means plus its mean dispatch, over the tasks
 * measured (samples 1, 1, 1, 5 ms: median 1, mean 2; dispatch the same:
 * 1 / (2 + 2)); its factors (1.5, 1) become 1 and 1, still shared. The
 * CPU is not shared and keeps none; nothing measured, nothing set.
 * Needs PoCL (the run fabric names the runtime's device). */
TEST(sharing_calibrated_from_the_model)
{
    char name[64], product[96];
    if (!test_pocl_device(name, product))
        TEST_SKIP("no OpenCL CPU device (PoCL) on this machine");
    synor_catalog *c = NULL;
    synor_detection *det = NULL;
    ASSERT_OK(synor_catalog_create(&c));
    ASSERT_OK(synor_catalog_load_builtin(c));
    ASSERT_OK(synor_detect_run(c, SYNOR_DETECT_HOST | SYNOR_DETECT_OPENCL, &det));
    synor_whatif_run_device rd[2] = {{"cpu", NULL, 0, 2, 0, 0}, {name, product, 0, 0, 1.5, 1}};
    synor_fabric *f = NULL;
    ASSERT_OK(synor_whatif_run_fabric(c, det, rd, 2, &f));
    long ocl = synor_fabric_find_device(f, name);
    ASSERT(ocl >= 0);
    synor_workload *w = NULL;
    const char **kernels = NULL;
    uint64_t *fps = NULL;
    ASSERT_OK(synor_exec_tiled_workload(SYNOR_TILED_GEMM, 512, 256, SYNOR_DTYPE_FP32, &w, &kernels,
                                        &fps));
    synor_perfmodel *pm = NULL;
    ASSERT_OK(synor_perfmodel_create(&pm));
    size_t set = 9;
    /* nothing measured: nothing set */
    ASSERT_OK(synor_whatif_calibrate_sharing(f, w, kernels, fps, pm, &set));
    ASSERT_EQ(set, 0);
    ASSERT(synor_fabric_device_at(f, (size_t)ocl)->share_place_scale == 0);
    for (size_t i = 0; i < synor_workload_count(w); i++) {
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= !strcmp(kernels[j], kernels[i]) && fps[j] == fps[i];
        if (seen)
            continue;
        const double ms[4] = {1, 1, 1, 5};
        for (int k = 0; k < 4; k++) {
            synor_perfmodel_record(pm, kernels[i], fps[i], name, ms[k] * 1e-3);
            synor_perfmodel_record(pm, kernels[i], fps[i], "cpu", 1e-3);
        }
    }
    const double disp[4] = {1, 1, 1, 5}; /* its median, 1, not its mean, 2 */
    for (int k = 0; k < 4; k++)
        synor_perfmodel_record(pm, SYNOR_PERFMODEL_DISPATCH, 0, name, disp[k] * 1e-3);
    ASSERT_OK(synor_whatif_calibrate_sharing(f, w, kernels, fps, pm, &set));
    ASSERT_EQ(set, 1);
    ASSERT_NEAR(synor_fabric_device_at(f, (size_t)ocl)->share_place_scale, 1.0 / 4, 1e-9);
    ASSERT(synor_fabric_device_at(f, (size_t)ocl)->share_cpu_slowdown == 1);
    ASSERT(synor_fabric_device_at(f, (size_t)ocl)->share_slowdown == 1);
    for (size_t d = 0; d < synor_fabric_device_count(f); d++)
        if ((long)d != ocl)
            ASSERT(synor_fabric_device_at(f, d)->share_place_scale == 0);
    ASSERT_EQ(synor_whatif_calibrate_sharing(f, w, kernels, NULL, pm, &set),
              SYNOR_EINVAL);
    synor_perfmodel_destroy(pm);
    free(kernels);
    free(fps);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_detection_destroy(det);
    synor_catalog_destroy(c);
}

TEST_MAIN(placement_follows_the_runtime_estimate, rebalancer_moves_queued_work_to_the_least_backlog,
          deterministic, fabric_file_host_sharing, place_scale_setter_checks_arguments,
          sharing_calibrated_from_the_model)
