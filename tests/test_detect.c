/* test_detect.c - detection of this machine: a host CPU with topology and
 * measured (and cached) or derived capabilities, OpenCL devices where the library was built
 * with OpenCL (CI installs PoCL), no error without an NVIDIA driver, and
 * registration in a registry. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "detect/detect_internal.h"
#include "synor.h"
#include "test.h"

TEST(host_cpu_is_detected)
{
    synor_catalog *cat;
    ASSERT_OK(synor_catalog_create(&cat));
    ASSERT_OK(synor_catalog_load_builtin(cat));
    synor_detection *d;
    ASSERT_OK(synor_detect_run(cat, SYNOR_DETECT_HOST | SYNOR_DETECT_MEASURE, &d));
    ASSERT_EQ(synor_detection_count(d), 1);
    synor_device *cpu = synor_detection_device(d, 0);
    ASSERT_STREQ(synor_detection_device_id(d, 0), "local-cpu0");
    ASSERT_EQ(synor_device_kind(cpu), SYNOR_KIND_CPU);
    const synor_caps *c = synor_device_caps(cpu);
    ASSERT(c->peak[SYNOR_DTYPE_FP64].dense > 1e9);  /* > 1 GFLOPS */
    ASSERT(c->peak[SYNOR_DTYPE_FP32].dense >= c->peak[SYNOR_DTYPE_FP64].dense);
    ASSERT(c->mem_bytes > (64ull << 20));
    ASSERT(c->mem_bandwidth > 1e8);
    ASSERT(c->ops & SYNOR_OP_BIT(SYNOR_OP_TOKENIZATION));
    long cores = atol(synor_device_detail_get(cpu, "cores"));
    long threads = atol(synor_device_detail_get(cpu, "threads"));
    ASSERT(cores >= 1 && threads >= cores);
    ASSERT(synor_device_detail_get(cpu, "l1d_bytes"));
    ASSERT(synor_device_detail_get(cpu, "numa_nodes"));
    const synor_processor_type *t = synor_device_type(cpu);
#if defined(__x86_64__)
    ASSERT_EQ(t->isa, SYNOR_ISA_X86_64);
#if defined(__AVX2__)
    ASSERT(t->cpu_features & SYNOR_CPU_AVX2);
#endif
#endif
    ASSERT_EQ(t->cores, (uint32_t)cores);
    /* The peak is measured, and says so; the table's figure is kept beside
     * it, computed by the documented rule. */
    ASSERT_CONTAINS(synor_device_detail_get(cpu, "peak_source"), "measured: FMA loops");
    ASSERT(synor_device_detail_get(cpu, "measured_copy_bw_bytes_s"));
    if (synor_device_caps_origin(cpu) == SYNOR_CAPS_DERIVED) {
        double opc[SYNOR_DTYPE_COUNT];
        synor__cpu_ops_per_cycle(t->isa, t->cpu_features, synor_device_detail_get(cpu, "cpu_vendor"),
                                 opc);
        ASSERT_NEAR(atof(synor_device_detail_get(cpu, "derived_fp64_flops")),
                    cores * t->base_ghz * 1e9 * opc[SYNOR_DTYPE_FP64], 1e-3);
    }
    /* the best measured level is the fp64 peak */
    double best = 0;
    for (size_t k = 0; k < synor_device_detail_count(cpu); k++) {
        const char *key, *val;
        synor_device_detail(cpu, k, &key, &val);
        if (strncmp(key, "measured_fp64_flops_", 20) == 0 && atof(val) > best)
            best = atof(val);
    }
    ASSERT_NEAR(c->peak[SYNOR_DTYPE_FP64].dense, best, 1e-3);
    ASSERT(synor_detection_note_count(d) >= 1);
    ASSERT_CONTAINS(synor_detection_note(d, 0), "host: ");
    synor_detection_destroy(d);
    synor_catalog_destroy(cat);
}

static synor_device *host_of(synor_detection **d, const char *cache, unsigned extra)
{
    if (synor_detect_run_cached(NULL, SYNOR_DETECT_HOST | SYNOR_DETECT_MEASURE | extra, cache, d))
        return NULL;
    return synor_detection_device(*d, 0);
}

static int has_note(const synor_detection *d, const char *needle)
{
    for (size_t i = 0; i < synor_detection_note_count(d); i++)
        if (strstr(synor_detection_note(d, i), needle))
            return 1;
    return 0;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* The measurement is cached under the machine's identity: read back when it
 * matches, measured again (and rewritten) when it does not, when the file
 * is damaged, or when asked to. The figures are whatever the file says,
 * so the test can plant its own and see them used exactly. */
TEST(measured_peak_is_cached)
{
    char dir[] = "/tmp/synor-peak-XXXXXX";
    ASSERT(mkdtemp(dir));
    char cache[128];
    snprintf(cache, sizeof cache, "%s/sub/host-measure.json", dir);
    synor_detection *d;
    synor_device *cpu = host_of(&d, cache, 0);
    ASSERT(cpu);
    ASSERT(!strstr(synor_device_detail_get(cpu, "peak_source"), "(cached)"));
    double first = synor_device_caps(cpu)->peak[SYNOR_DTYPE_FP64].dense;
    ASSERT(first > 1e9);
    synor_detection_destroy(d);
    /* the same machine: read, not measured */
    char *text;
    size_t len;
    ASSERT_OK(synor__read_file(cache, &text, &len));
    ASSERT_CONTAINS(text, "\"format\": \"synor-host-measure/1\"");
    cpu = host_of(&d, cache, 0);
    ASSERT(cpu);
    ASSERT_CONTAINS(synor_device_detail_get(cpu, "peak_source"), "(cached)");
    ASSERT_NEAR(synor_device_caps(cpu)->peak[SYNOR_DTYPE_FP64].dense, first, 1e-12);
    synor_detection_destroy(d);
    /* planted figures of this identity are used as they are */
    char *id = strstr(text, "\"identity\": ");
    ASSERT(id);
    char *end = strchr(id + 13, '"');
    char planted[1024];
    snprintf(planted, sizeof planted,
             "{\"format\": \"synor-host-measure/1\", %.*s, \"measured_at\": \"2026-01-01T00:00:00Z\",\n"
             " \"threads\": 1, \"copy_bw_bytes_s\": 5e9,\n"
             " \"levels\": [{\"isa\": \"x\", \"dtype\": \"fp64\", \"flops\": 1.25e11},\n"
             "            {\"isa\": \"x\", \"dtype\": \"fp32\", \"flops\": 2.5e11}]}\n",
             (int)(end + 1 - id), id);
    write_text(cache, planted);
    cpu = host_of(&d, cache, 0);
    ASSERT(cpu);
    ASSERT(synor_device_caps(cpu)->peak[SYNOR_DTYPE_FP64].dense == 1.25e11);
    ASSERT(synor_device_caps(cpu)->peak[SYNOR_DTYPE_FP32].dense == 2.5e11);
    ASSERT_STREQ(synor_device_detail_get(cpu, "measured_copy_bw_bytes_s"), "5000000000");
    ASSERT_CONTAINS(synor_device_detail_get(cpu, "peak_source"), "2026-01-01T00:00:00Z (cached)");
    synor_detection_destroy(d);
    /* asked to measure again: measured, and the file rewritten */
    cpu = host_of(&d, cache, SYNOR_DETECT_REMEASURE);
    ASSERT(cpu);
    ASSERT(!strstr(synor_device_detail_get(cpu, "peak_source"), "(cached)"));
    synor_detection_destroy(d);
    synor__free(text);
    ASSERT_OK(synor__read_file(cache, &text, &len));
    ASSERT(!strstr(text, "2026-01-01T00:00:00Z"));
    /* another machine's file: measured again, with a note */
    char other[1024];
    snprintf(other, sizeof other, "%s", planted);
    memcpy(strstr(other, "\"identity\": \"") + 13, "Another", 7);
    write_text(cache, other);
    cpu = host_of(&d, cache, 0);
    ASSERT(cpu);
    ASSERT(!strstr(synor_device_detail_get(cpu, "peak_source"), "(cached)"));
    ASSERT(has_note(d, "is of another machine or library version: measured again"));
    synor_detection_destroy(d);
    /* a damaged file: the note names the place; measured, rewritten */
    write_text(cache, "{\"format\": \"synor-host-measure/1\", \"identity\": \"x\", "
                      "\"measured_at\": \"y\",\n \"threads\": -4}");
    cpu = host_of(&d, cache, 0);
    ASSERT(cpu);
    ASSERT(has_note(d, "host-measure.json:2:13: threads: value -4 is outside [1, 1024]"));
    synor_detection_destroy(d);
    synor__free(text);
    ASSERT_OK(synor__read_file(cache, &text, &len));
    ASSERT_CONTAINS(text, "\"levels\"");
    synor__free(text);
    /* not measured: derived, and said so */
    ASSERT_OK(synor_detect_run_cached(NULL, SYNOR_DETECT_HOST, cache, &d));
    ASSERT_CONTAINS(synor_device_detail_get(synor_detection_device(d, 0), "peak_source"),
                    "(not measured)");
    synor_detection_destroy(d);
    unlink(cache);
    snprintf(cache, sizeof cache, "%s/sub", dir);
    rmdir(cache);
    rmdir(dir);
}

/* Each FMA loop does the work it claims on every accumulator and lane:
 * its result depends on the iteration count, and converges to the fixed
 * point of the recurrence. */
TEST(fma_loops_compute)
{
    synor_cpu_isa isa;
    uint32_t f;
    char vendor[16];
    synor__cpu_features(&isa, &f, vendor, sizeof vendor);
    synor__fma_loop l[8];
    size_t n = synor__cpu_fma_loops(f, l, 8);
    ASSERT(n >= 2);
    for (size_t i = 0; i < n; i++) {
        ASSERT(l[i].flops_per_iter > 0);
        ASSERT(l[i].dtype == SYNOR_DTYPE_FP64 || l[i].dtype == SYNOR_DTYPE_FP32);
        double a = l[i].fn(1), b = l[i].fn(20000000);
        ASSERT(a != b);
        /* lanes x 12 accumulators, each at the fixed point of a = 0.999999 a
         * + 1e-6 after 20M steps: 1 in fp64; in fp32, where the step is a
         * few ulps, rounding stalls it a few percent below */
        double all = l[i].flops_per_iter / 2.0;
        ASSERT(b > 0.9 * all && b < 1.001 * all);
    }
}

TEST(ops_per_cycle_rules)
{
    double o[SYNOR_DTYPE_COUNT];
    synor__cpu_ops_per_cycle(SYNOR_ISA_X86_64,
                             SYNOR_CPU_FMA | SYNOR_CPU_AVX2 | SYNOR_CPU_AVX512F | SYNOR_CPU_AMX_BF16 |
                                 SYNOR_CPU_AMX_INT8 | SYNOR_CPU_AVX512_VNNI,
                             "GenuineIntel", o);
    ASSERT(o[SYNOR_DTYPE_FP64] == 32 && o[SYNOR_DTYPE_FP32] == 64);
    ASSERT(o[SYNOR_DTYPE_BF16] == 1024 && o[SYNOR_DTYPE_INT8] == 2048);
    ASSERT(o[SYNOR_DTYPE_TF32] == 0 && o[SYNOR_DTYPE_FP8] == 0);
    synor__cpu_ops_per_cycle(SYNOR_ISA_X86_64, SYNOR_CPU_FMA | SYNOR_CPU_AVX2 | SYNOR_CPU_AVX512F,
                             "AuthenticAMD", o);
    ASSERT(o[SYNOR_DTYPE_FP64] == 16);
    synor__cpu_ops_per_cycle(SYNOR_ISA_ARM64, SYNOR_CPU_NEON | SYNOR_CPU_SVE, "arm", o);
    ASSERT(o[SYNOR_DTYPE_FP64] == 16 && o[SYNOR_DTYPE_INT8] == 64);
}

TEST(missing_nvidia_driver_is_not_an_error)
{
    synor_detection *d;
    ASSERT_OK(synor_detect_run(NULL, SYNOR_DETECT_CUDA, &d));
    for (size_t i = 0; i < synor_detection_count(d); i++)
        ASSERT_STREQ(synor_device_backend(synor_detection_device(d, i)), "cuda");
    ASSERT(synor_detection_note_count(d) >= 1);
    ASSERT_CONTAINS(synor_detection_note(d, synor_detection_note_count(d) - 1), "cuda: ");
    synor_detection_destroy(d);
}

TEST(opencl_devices)
{
#if !SYNOR_HAVE_OPENCL
    TEST_SKIP("built without OpenCL");
#else
    synor_detection *d;
    ASSERT_OK(synor_detect_run(NULL, SYNOR_DETECT_OPENCL, &d));
    if (synor_detection_count(d) == 0) {
        synor_detection_destroy(d);
        TEST_SKIP("no OpenCL platform installed (scripts/setup.sh installs PoCL)");
    }
    synor_device *dev = synor_detection_device(d, 0);
    ASSERT_STREQ(synor_device_backend(dev), "opencl");
    ASSERT(!synor_device_is_simulated(dev));
    ASSERT(synor_device_caps(dev)->mem_bytes > 0);
    ASSERT(synor_device_caps(dev)->peak[SYNOR_DTYPE_FP32].dense > 0);
    ASSERT(synor_device_detail_get(dev, "platform"));
    ASSERT(synor_device_detail_get(dev, "compute_units"));
    ASSERT_CONTAINS(synor_detection_device_id(d, 0), "local-opencl");
    synor_work w = {.op = {.type = SYNOR_OP_MATMUL, .dtype = SYNOR_DTYPE_FP32}};
    ASSERT_EQ(synor_device_submit(dev, &w), SYNOR_ENOTSUP);
    synor_detection_destroy(d);
#endif
}

TEST(registers_all_or_nothing)
{
    synor_detection *d;
    ASSERT_OK(synor_detect_run(NULL, SYNOR_DETECT_HOST | SYNOR_DETECT_OPENCL, &d));
    synor_registry *reg;
    ASSERT_OK(synor_registry_create(&reg));
    ASSERT_OK(synor_detection_register(d, reg, "local-region"));
    ASSERT_EQ(synor_registry_count(reg), synor_detection_count(d));
    synor_registry_entry e;
    ASSERT_OK(synor_registry_get(reg, "local-cpu0", &e));
    ASSERT_STREQ(e.info.owner, "local");
    ASSERT_STREQ(e.info.region, "local-region");
    synor_registry_entry_release(&e);
    /* a second registration collides on the first id and changes nothing */
    ASSERT_EQ(synor_detection_register(d, reg, NULL), SYNOR_EEXIST);
    ASSERT_EQ(synor_registry_count(reg), synor_detection_count(d));
    synor_registry_destroy(reg);
    synor_detection_destroy(d);
}

TEST_MAIN(measured_peak_is_cached, fma_loops_compute, host_cpu_is_detected, ops_per_cycle_rules, missing_nvidia_driver_is_not_an_error,
          opencl_devices, registers_all_or_nothing)
