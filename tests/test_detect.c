/* test_detect.c - detection of this machine: a host CPU with topology and
 * derived or profile capabilities, OpenCL devices where the library was built
 * with OpenCL (CI installs PoCL), no error without an NVIDIA driver, and
 * registration in a registry. */
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
    /* derived capabilities follow the documented rule */
    if (synor_device_caps_origin(cpu) == SYNOR_CAPS_DERIVED) {
        double opc[SYNOR_DTYPE_COUNT];
        synor__cpu_ops_per_cycle(t->isa, t->cpu_features, synor_device_detail_get(cpu, "cpu_vendor"),
                                 opc);
        ASSERT_NEAR(c->peak[SYNOR_DTYPE_FP64].dense, cores * t->base_ghz * 1e9 * opc[SYNOR_DTYPE_FP64],
                    1e-9);
    }
    ASSERT(synor_detection_note_count(d) >= 1);
    ASSERT_CONTAINS(synor_detection_note(d, 0), "host: ");
    synor_detection_destroy(d);
    synor_catalog_destroy(cat);
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

TEST_MAIN(host_cpu_is_detected, ops_per_cycle_rules, missing_nvidia_driver_is_not_an_error,
          opencl_devices, registers_all_or_nothing)
