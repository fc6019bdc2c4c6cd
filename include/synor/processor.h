/* synor/processor.h - processor kinds and their variants (seed 001, §1.1).
 *
 * A synor_processor_type says *what* a processor is: its kind (CPU, GPU, TPU,
 * NPU, LPU, FPGA, DSP, WebGPU, WASM, custom) and the variant fields that
 * apply to that kind. Fields of other kinds are zero. Every enum has a stable
 * lower-case name used in profile files, JSON output and the CLI; the
 * synor_*_name() functions return it and synor_*_from_name() parse it. */
#ifndef SYNOR_PROCESSOR_H
#define SYNOR_PROCESSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum synor_kind {
    SYNOR_KIND_CPU,
    SYNOR_KIND_GPU,
    SYNOR_KIND_TPU,
    SYNOR_KIND_NPU,
    SYNOR_KIND_LPU,
    SYNOR_KIND_FPGA,
    SYNOR_KIND_DSP,
    SYNOR_KIND_WEBGPU,
    SYNOR_KIND_WASM,
    SYNOR_KIND_CUSTOM,
    SYNOR_KIND_COUNT
} synor_kind;

/* CPU instruction set architecture. */
typedef enum synor_cpu_isa {
    SYNOR_ISA_UNKNOWN,
    SYNOR_ISA_X86_64,
    SYNOR_ISA_ARM64,
    SYNOR_ISA_RISCV64,
    SYNOR_ISA_WASM32, /* a WebAssembly runtime's virtual ISA */
    SYNOR_ISA_COUNT
} synor_cpu_isa;

/* CPU vector/matrix extensions, a bit set in synor_processor_type.cpu_features. */
#define SYNOR_CPU_FEATURE_MAP(X)                                 \
    X(FMA, 0, "fma")                                             \
    X(AVX2, 1, "avx2")                                           \
    X(AVX512F, 2, "avx512f")                                     \
    X(AVX512DQ, 3, "avx512dq")                                   \
    X(AVX512CD, 4, "avx512cd")                                   \
    X(AVX512BW, 5, "avx512bw")                                   \
    X(AVX512VL, 6, "avx512vl")                                   \
    X(AVX512_VNNI, 7, "avx512_vnni")                             \
    X(AVX512_BF16, 8, "avx512_bf16")                             \
    X(AVX512_FP16, 9, "avx512_fp16")                             \
    X(AMX_TILE, 10, "amx_tile")                                  \
    X(AMX_BF16, 11, "amx_bf16")                                  \
    X(AMX_INT8, 12, "amx_int8")                                  \
    X(NEON, 13, "neon")                                          \
    X(SVE, 14, "sve")                                            \
    X(SVE2, 15, "sve2")                                          \
    X(RVV, 16, "rvv")                                            \
    X(WASM_SIMD128, 17, "simd128")

enum {
#define SYNOR__CPUF(name, bit, str) SYNOR_CPU_##name = 1u << (bit),
    SYNOR_CPU_FEATURE_MAP(SYNOR__CPUF)
#undef SYNOR__CPUF
};

typedef enum synor_gpu_api {
    SYNOR_GPU_UNKNOWN,
    SYNOR_GPU_CUDA,   /* NVIDIA; compute capability in cc_major.cc_minor */
    SYNOR_GPU_ROCM,   /* AMD; gfx_version such as 942 for gfx942 */
    SYNOR_GPU_ONEAPI, /* Intel */
    SYNOR_GPU_METAL,  /* Apple */
    SYNOR_GPU_ADRENO, /* Qualcomm */
    SYNOR_GPU_MALI,   /* Arm */
    SYNOR_GPU_WEBGPU,
    SYNOR_GPU_OPENCL, /* a GPU reached through OpenCL whose vendor API is not known */
    SYNOR_GPU_API_COUNT
} synor_gpu_api;

typedef enum synor_tpu_version {
    SYNOR_TPU_UNKNOWN,
    SYNOR_TPU_V2,
    SYNOR_TPU_V3,
    SYNOR_TPU_V4,
    SYNOR_TPU_V4I,
    SYNOR_TPU_V5E,
    SYNOR_TPU_V5P,
    SYNOR_TPU_EDGE,
    SYNOR_TPU_VERSION_COUNT
} synor_tpu_version;

typedef enum synor_npu_variant {
    SYNOR_NPU_UNKNOWN,
    SYNOR_NPU_APPLE_ANE,        /* npu_cores = Neural Engine cores */
    SYNOR_NPU_QUALCOMM_HEXAGON, /* npu_version = Hexagon version, e.g. 75 */
    SYNOR_NPU_INTEL_VPU,
    SYNOR_NPU_HUAWEI_ASCEND,
    SYNOR_NPU_GOOGLE_EDGE_TPU,
    SYNOR_NPU_CUSTOM, /* npu_tops = advertised INT8 TOPS */
    SYNOR_NPU_VARIANT_COUNT
} synor_npu_variant;

typedef enum synor_fpga_vendor {
    SYNOR_FPGA_UNKNOWN,
    SYNOR_FPGA_XILINX_AMD,
    SYNOR_FPGA_INTEL_ALTERA,
    SYNOR_FPGA_VENDOR_COUNT
} synor_fpga_vendor;

typedef enum synor_dsp_vendor {
    SYNOR_DSP_UNKNOWN,
    SYNOR_DSP_TI,
    SYNOR_DSP_ANALOG_DEVICES,
    SYNOR_DSP_VENDOR_COUNT
} synor_dsp_vendor;

/* What a processor is. Only the fields of `kind` are meaningful. */
typedef struct synor_processor_type {
    synor_kind kind;
    /* CPU and WASM */
    synor_cpu_isa isa;
    uint32_t cpu_features; /* SYNOR_CPU_* bits */
    uint32_t cores;        /* physical cores of the product (0 = unknown) */
    uint32_t threads;      /* hardware threads (0 = unknown) */
    double base_ghz;       /* base clock, GHz (0 = unknown) */
    /* GPU and WebGPU */
    synor_gpu_api gpu_api;
    int cc_major, cc_minor; /* CUDA compute capability */
    uint32_t gfx_version;   /* ROCm gfx target, e.g. 942 */
    /* TPU */
    synor_tpu_version tpu;
    /* NPU */
    synor_npu_variant npu;
    uint32_t npu_cores;
    uint32_t npu_version;
    double npu_tops;
    /* FPGA, DSP */
    synor_fpga_vendor fpga;
    synor_dsp_vendor dsp;
    /* Custom accelerators (and, informatively, any kind): vendor and model. */
    char vendor[48];
    char model[64];
} synor_processor_type;

const char *synor_kind_name(synor_kind k);
int synor_kind_from_name(const char *name, synor_kind *out); /* 0 or SYNOR_EINVAL */
const char *synor_cpu_isa_name(synor_cpu_isa v);
int synor_cpu_isa_from_name(const char *name, synor_cpu_isa *out);
/* Name of one SYNOR_CPU_* bit ("avx2"); NULL for an unknown bit. */
const char *synor_cpu_feature_name(uint32_t bit);
int synor_cpu_feature_from_name(const char *name, uint32_t *bit);
const char *synor_gpu_api_name(synor_gpu_api v);
int synor_gpu_api_from_name(const char *name, synor_gpu_api *out);
const char *synor_tpu_version_name(synor_tpu_version v);
int synor_tpu_version_from_name(const char *name, synor_tpu_version *out);
const char *synor_npu_variant_name(synor_npu_variant v);
int synor_npu_variant_from_name(const char *name, synor_npu_variant *out);
const char *synor_fpga_vendor_name(synor_fpga_vendor v);
int synor_fpga_vendor_from_name(const char *name, synor_fpga_vendor *out);
const char *synor_dsp_vendor_name(synor_dsp_vendor v);
int synor_dsp_vendor_from_name(const char *name, synor_dsp_vendor *out);

/* Writes a one-line description such as "gpu cuda sm_90", "cpu x86-64
 * avx2+avx512f+amx_bf16" or "npu apple-ane 16 cores" into buf (always
 * NUL-terminated). Returns the length it wanted, like snprintf. */
int synor_processor_type_format(const synor_processor_type *t, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
