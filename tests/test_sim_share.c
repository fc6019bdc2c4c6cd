/* test_sim_share.c - devices that share the host's cores
 * (synor_fabric_set_host_sharing; docs/PLANNING.md "Devices that share the
 * host's cores"): with explicit task times, the simulator slows the node's
 * CPU devices by exactly cpu_slowdown while the shared device runs, and
 * the shared device by 1 + (slowdown - 1) x busy / CPU devices; a device
 * that is not shared (a GPU beside it, or the same device undeclared) is
 * not affected; every strategy charges it; the same input gives the same
 * trace; the setter checks its arguments. Plus, where this machine has an
 * OpenCL CPU device (PoCL), the run fabric declares it shared with the
 * factors given (skipped, with a message, elsewhere). */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/common.h"
#include "synor.h"
#include "pocl_fixture.h"
#include "sim_fixture.h"
#include "test.h"

static synor_catalog *cat;

/* Two CPU workers, a CPU-kind OpenCL-like device and a GPU, one node. */
static const char *const FABRIC =
    "{\"format\": \"synor-fabric/1\", \"name\": \"shared\", \"currency\": \"USD\",\n"
    " \"nodes\": [{\"name\": \"host\"}],\n"
    " \"devices\": [\n"
    "  {\"name\": \"cpu\", \"profile\": \"amd-epyc-9654\", \"node\": \"host\", \"count\": 2},\n"
    "  {\"name\": \"ocl\", \"profile\": \"intel-xeon-8480plus\", \"node\": \"host\"},\n"
    "  {\"name\": \"gpu\", \"profile\": \"nvidia-h100-pcie\", \"node\": \"host\"}]}";

/* Each task can run on one device only (the object form of exec_s). */
static const char *const WORK =
    "{\"format\": \"synor-workload/1\", \"name\": \"share\", \"tasks\": [\n"
    " {\"id\": \"a\", \"exec_s\": {\"cpu.0\": 4}},\n"
    " {\"id\": \"c\", \"exec_s\": {\"cpu.1\": 4}},\n"
    " {\"id\": \"b\", \"exec_s\": {\"ocl\": 2}},\n"
    " {\"id\": \"g\", \"exec_s\": {\"gpu\": 5}},\n"
    " {\"id\": \"d\", \"exec_s\": {\"cpu.0\": 1}, \"deps\": [\"a\"]}]}";

/* One CPU task and the shared device's: a lone CPU worker busy. */
static const char *const WORK1 =
    "{\"format\": \"synor-workload/1\", \"name\": \"share1\", \"tasks\": [\n"
    " {\"id\": \"a\", \"exec_s\": {\"cpu.0\": 4}},\n"
    " {\"id\": \"b\", \"exec_s\": {\"ocl\": 2}}]}";

typedef struct fx {
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
} fx;

static int fx_open(fx *x, const char *work, double cpu_slow, double slow)
{
    memset(x, 0, sizeof *x);
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        return -1;
    int rc = synor_fabric_load_string(cat, FABRIC, strlen(FABRIC), "shared.json", &x->f);
    if (!rc && (cpu_slow > 0 || slow > 0))
        rc = synor_fabric_set_host_sharing(x->f, 2, cpu_slow, slow);
    if (!rc)
        rc = synor_workload_load_string(work, strlen(work), "share.json", &x->w);
    if (!rc)
        rc = synor_cost_create(x->w, x->f, &x->c);
    return rc;
}

static void fx_close(fx *x)
{
    synor_cost_destroy(x->c);
    synor_workload_destroy(x->w);
    synor_fabric_destroy(x->f);
}


/* Both CPU workers busy with the shared device: it runs at 1/3 (1 + 2 x
 * 2/2), they at 1/2 while it runs: b ends at 6; a and c have done 3 of
 * their 4 s by then and end at 7; d follows a; the GPU's g ends at 5. */
TEST(shared_device_slows_cpu_workers_as_stated)
{
    fx x;
    ASSERT_OK(fx_open(&x, WORK, 2, 3));
    synor_trace *t = NULL;
    ASSERT_OK(synor_simulate(x.c, NULL, &t));
    ASSERT_NEAR(simfx_task(t, "b")->end, 6, 1e-12);
    ASSERT_NEAR(simfx_task(t, "a")->end, 7, 1e-12);
    ASSERT_NEAR(simfx_task(t, "c")->end, 7, 1e-12);
    ASSERT_NEAR(simfx_task(t, "d")->start, 7, 1e-12);
    ASSERT_NEAR(simfx_task(t, "d")->end, 8, 1e-12);
    ASSERT_NEAR(simfx_task(t, "g")->end, 5, 1e-12); /* not shared: unaffected */
    ASSERT_NEAR(t->makespan, 8, 1e-12);
    synor_trace_destroy(t);
    /* the runtime's rules charge it the same way */
    ASSERT_OK(synor_simulate_runtime(x.c, &t));
    ASSERT_NEAR(simfx_task(t, "b")->end, 6, 1e-12);
    ASSERT_NEAR(t->makespan, 8, 1e-12);
    synor_trace_destroy(t);
    fx_close(&x);
}

/* One of two CPU workers busy: the shared device runs at 1/2 (1 + 2 x
 * 1/2) and ends at 4; a runs at 1/2 until then (2 of 4 s), then at full
 * speed: ends at 6. */
TEST(shared_device_slowdown_follows_busy_workers)
{
    fx x;
    ASSERT_OK(fx_open(&x, WORK1, 2, 3));
    synor_trace *t = NULL;
    ASSERT_OK(synor_simulate(x.c, NULL, &t));
    ASSERT_NEAR(simfx_task(t, "b")->end, 4, 1e-12);
    ASSERT_NEAR(simfx_task(t, "a")->end, 6, 1e-12);
    synor_trace_destroy(t);
    fx_close(&x);
}

/* Undeclared, or declared without contention (1, 1), or undone (0, 0):
 * every task takes its own time. */
TEST(not_shared_is_unaffected)
{
    const double f[3][2] = {{0, 0}, {1, 1}, {0, 0}};
    for (int k = 0; k < 3; k++) {
        fx x;
        ASSERT_OK(fx_open(&x, WORK, f[k][0], f[k][1]));
        if (k == 2) { /* declared, then undone */
            synor_cost_destroy(x.c);
            ASSERT_OK(synor_fabric_set_host_sharing(x.f, 2, 2, 3));
            ASSERT_OK(synor_fabric_set_host_sharing(x.f, 2, 0, 0));
            ASSERT_OK(synor_cost_create(x.w, x.f, &x.c));
        }
        synor_trace *t = NULL;
        ASSERT_OK(synor_simulate(x.c, NULL, &t));
        ASSERT_NEAR(simfx_task(t, "b")->end, 2, 1e-12);
        ASSERT_NEAR(simfx_task(t, "a")->end, 4, 1e-12);
        ASSERT_NEAR(simfx_task(t, "c")->end, 4, 1e-12);
        ASSERT_NEAR(simfx_task(t, "g")->end, 5, 1e-12);
        ASSERT_NEAR(t->makespan, 5, 1e-12);
        synor_trace_destroy(t);
        fx_close(&x);
    }
}

TEST(deterministic)
{
    fx x;
    ASSERT_OK(fx_open(&x, WORK, 1.7, 2.9));
    synor_trace *t1 = NULL, *t2 = NULL;
    ASSERT_OK(synor_simulate(x.c, NULL, &t1));
    ASSERT_OK(synor_simulate(x.c, NULL, &t2));
    char *j1 = synor_trace_to_json(t1), *j2 = synor_trace_to_json(t2);
    ASSERT(j1 && j2 && !strcmp(j1, j2));
    free(j1);
    free(j2);
    synor_trace_destroy(t1);
    synor_trace_destroy(t2);
    fx_close(&x);
}

TEST(setter_checks_arguments)
{
    fx x;
    ASSERT_OK(fx_open(&x, WORK, 0, 0));
    ASSERT_EQ(synor_fabric_set_host_sharing(x.f, 9, 2, 3), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "no device 9"));
    ASSERT_EQ(synor_fabric_set_host_sharing(x.f, 2, 0.5, 3), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "\"ocl\""));
    ASSERT_EQ(synor_fabric_set_host_sharing(x.f, 2, 2, NAN), SYNOR_EINVAL);
    ASSERT_EQ(synor_fabric_set_host_sharing(x.f, 2, 0, 3), SYNOR_EINVAL);
    ASSERT_EQ(synor_fabric_device_at(x.f, 2)->share_cpu_slowdown, 0);
    fx_close(&x);
}

/* The run fabric declares an OpenCL CPU device shared with the factors
 * given (and refuses them for the CPU); the measurement reads a cache of
 * this machine's identity instead of measuring. Needs PoCL. */
TEST(run_fabric_declares_an_opencl_cpu_device_shared)
{
    char name[64], product[96];
    if (!test_pocl_device(name, product))
        TEST_SKIP("no OpenCL CPU device (PoCL) on this machine");
    synor_catalog *c = NULL;
    synor_detection *det = NULL;
    ASSERT_OK(synor_catalog_create(&c));
    ASSERT_OK(synor_catalog_load_builtin(c));
    ASSERT_OK(synor_detect_run(c, SYNOR_DETECT_HOST | SYNOR_DETECT_OPENCL, &det));
    synor_whatif_run_device rd[2] = {{"cpu", NULL, 0, 2, 0, 0}, {name, product, 0, 0, 1.5, 2.5}};
    synor_fabric *f = NULL;
    ASSERT_OK(synor_whatif_run_fabric(c, det, rd, 2, &f));
    ASSERT_EQ(synor_fabric_device_count(f), 3);
    for (size_t k = 0; k < 3; k++) {
        const synor_fabric_device *fd = synor_fabric_device_at(f, k);
        int ocl = !strcmp(fd->name, name);
        ASSERT(fd->share_cpu_slowdown == (ocl ? 1.5 : 0));
        ASSERT(fd->share_slowdown == (ocl ? 2.5 : 0));
    }
    synor_fabric_destroy(f);
    rd[0].share_cpu_slowdown = rd[0].share_slowdown = 2;
    ASSERT_EQ(synor_whatif_run_fabric(c, det, rd, 2, &f), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "only an OpenCL CPU device"));

    /* a cache of this identity is read, not measured */
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.opencl = SYNOR_OPENCL_OFF;
    cfg.cpu_workers = 2;
    synor_runtime *rt = NULL;
    ASSERT_OK(synor_runtime_create(&cfg, &rt));
    synor_runtime_device_info cpu;
    ASSERT_OK(synor_runtime_device_get(rt, 0, &cpu));
    synor_runtime_destroy(rt);
    char path[] = "/tmp/synor-share-XXXXXX";
    int fdno = mkstemp(path);
    ASSERT(fdno >= 0);
    FILE *fp = fdopen(fdno, "w");
    ASSERT(fp);
    fprintf(fp,
            "{\"format\": \"synor-host-sharing/1\", \"cpu\": \"%s\", \"device\": \"%s\", "
            "\"workers\": 2, \"n\": 1024, \"nb\": 256, \"cpu_alone_s\": 0.001, "
            "\"cpu_with_device_s\": 0.00125, \"device_alone_s\": 0.01, "
            "\"device_with_cpu_s\": 0.035, \"cpu_slowdown\": 1.25, \"slowdown\": 3.5}\n",
            cpu.product, product);
    fclose(fp);
    synor_whatif_sharing sh;
    int rc = synor_whatif_measure_sharing(2, 1024, 256, 1, path, &sh);
    remove(path);
    ASSERT_OK(rc);
    ASSERT(sh.from_cache);
    ASSERT(sh.cpu_slowdown == 1.25 && sh.slowdown == 3.5 && sh.device_with_cpu_s == 0.035);
    ASSERT(!strcmp(sh.device, product));
    ASSERT_EQ(synor_whatif_measure_sharing(2, 100, 256, 1, NULL, &sh), SYNOR_EINVAL);
    synor_detection_destroy(det);
    synor_catalog_destroy(c);
}

TEST_MAIN(shared_device_slows_cpu_workers_as_stated, shared_device_slowdown_follows_busy_workers,
          not_shared_is_unaffected, deterministic, setter_checks_arguments,
          run_fabric_declares_an_opencl_cpu_device_shared)
