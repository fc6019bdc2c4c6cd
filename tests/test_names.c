/* test_names.c - every enum's name parses back to the same value, unknown
 * names are errors, and the error code tables are complete. */
#include "synor.h"
#include "test.h"

#define ROUND_TRIP(count, name_fn, parse_fn, type)                         \
    for (int i_ = 0; i_ < (int)(count); i_++) {                            \
        type v_;                                                           \
        const char *n_ = name_fn((type)i_);                                \
        ASSERT(n_ && strcmp(n_, "?") != 0);                                \
        ASSERT_OK(parse_fn(n_, &v_));                                      \
        ASSERT_EQ(v_, i_);                                                 \
    }

TEST(enum_names_round_trip)
{
    ROUND_TRIP(SYNOR_KIND_COUNT, synor_kind_name, synor_kind_from_name, synor_kind);
    ROUND_TRIP(SYNOR_ISA_COUNT, synor_cpu_isa_name, synor_cpu_isa_from_name, synor_cpu_isa);
    ROUND_TRIP(SYNOR_GPU_API_COUNT, synor_gpu_api_name, synor_gpu_api_from_name, synor_gpu_api);
    ROUND_TRIP(SYNOR_TPU_VERSION_COUNT, synor_tpu_version_name, synor_tpu_version_from_name,
               synor_tpu_version);
    ROUND_TRIP(SYNOR_NPU_VARIANT_COUNT, synor_npu_variant_name, synor_npu_variant_from_name,
               synor_npu_variant);
    ROUND_TRIP(SYNOR_FPGA_VENDOR_COUNT, synor_fpga_vendor_name, synor_fpga_vendor_from_name,
               synor_fpga_vendor);
    ROUND_TRIP(SYNOR_DSP_VENDOR_COUNT, synor_dsp_vendor_name, synor_dsp_vendor_from_name,
               synor_dsp_vendor);
    ROUND_TRIP(SYNOR_OP_TYPE_COUNT, synor_op_type_name, synor_op_type_from_name, synor_op_type);
    ROUND_TRIP(SYNOR_DTYPE_COUNT, synor_dtype_name, synor_dtype_from_name, synor_dtype);
    ROUND_TRIP(SYNOR_MEM_TYPE_COUNT, synor_mem_type_name, synor_mem_type_from_name, synor_mem_type);
    ROUND_TRIP(SYNOR_TRAIT_COUNT, synor_trait_name, synor_trait_from_name, synor_trait);
    ROUND_TRIP(SYNOR_STATUS_COUNT, synor_device_status_name, synor_device_status_from_name,
               synor_device_status);
}

TEST(unknown_names_are_errors)
{
    synor_kind k;
    ASSERT_EQ(synor_kind_from_name("qpu", &k), SYNOR_EINVAL);
    ASSERT_STREQ(synor_errmsg(), "unknown processor kind \"qpu\"");
    synor_op_type o;
    ASSERT_EQ(synor_op_type_from_name("MatMul", &o), SYNOR_EINVAL);
    uint32_t bit;
    ASSERT_EQ(synor_cpu_feature_from_name("avx1024", &bit), SYNOR_EINVAL);
    ASSERT_OK(synor_cpu_feature_from_name("amx_bf16", &bit));
    ASSERT_EQ(bit, SYNOR_CPU_AMX_BF16);
    ASSERT_STREQ(synor_cpu_feature_name(SYNOR_CPU_SVE), "sve");
}

TEST(operation_set_fits)
{
    ASSERT(SYNOR_OP_TYPE_COUNT <= 64);
    ASSERT_EQ(__builtin_popcountll(SYNOR_OP_SET_ALL), SYNOR_OP_TYPE_COUNT);
    ASSERT_EQ(synor_dtype_bits(SYNOR_DTYPE_BF16), 16);
    ASSERT_EQ(synor_dtype_bits(SYNOR_DTYPE_INT4), 4);
}

TEST(error_tables)
{
    ASSERT_STREQ(synor_err_name(SYNOR_EEXIST), "SYNOR_EEXIST");
    ASSERT_STREQ(synor_strerror(SYNOR_ENOMEM), "out of memory");
    ASSERT_STREQ(synor_err_name(0), "SYNOR_OK");
    ASSERT_STREQ(synor_err_name(-999), "SYNOR_UNKNOWN");
    ASSERT(synor_version()[0] >= '0' && synor_version()[0] <= '9');
}

TEST(type_format)
{
    char buf[128];
    synor_processor_type t;
    memset(&t, 0, sizeof t);
    t.kind = SYNOR_KIND_GPU;
    t.gpu_api = SYNOR_GPU_CUDA;
    t.cc_major = 9;
    synor_processor_type_format(&t, buf, sizeof buf);
    ASSERT_STREQ(buf, "gpu cuda sm_90");
    memset(&t, 0, sizeof t);
    t.kind = SYNOR_KIND_CPU;
    t.isa = SYNOR_ISA_X86_64;
    t.cpu_features = SYNOR_CPU_AVX2 | SYNOR_CPU_AVX512F;
    synor_processor_type_format(&t, buf, sizeof buf);
    ASSERT_STREQ(buf, "cpu x86-64 avx2+avx512f");
    memset(&t, 0, sizeof t);
    t.kind = SYNOR_KIND_NPU;
    t.npu = SYNOR_NPU_APPLE_ANE;
    t.npu_cores = 16;
    synor_processor_type_format(&t, buf, sizeof buf);
    ASSERT_STREQ(buf, "npu apple-ane 16 cores");
    memset(&t, 0, sizeof t);
    t.kind = SYNOR_KIND_CUSTOM;
    strcpy(t.vendor, "Cerebras");
    strcpy(t.model, "WSE-3");
    synor_processor_type_format(&t, buf, sizeof buf);
    ASSERT_STREQ(buf, "custom Cerebras WSE-3");
}

TEST_MAIN(enum_names_round_trip, unknown_names_are_errors, operation_set_fits, error_tables,
          type_format)
