/* names.c - the stable lower-case names of every enum in processor.h, op.h
 * and caps.h, and their parsers. One table per enum; the index is the enum
 * value, so adding a value means adding its name in the same place. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "synor/caps.h"
#include "synor/op.h"
#include "synor/processor.h"

static const char *const kind_names[SYNOR_KIND_COUNT] = {
    "cpu", "gpu", "tpu", "npu", "lpu", "fpga", "dsp", "webgpu", "wasm", "custom"};
static const char *const isa_names[SYNOR_ISA_COUNT] = {"unknown", "x86-64", "arm64", "riscv64",
                                                       "wasm32"};
static const char *const gpu_api_names[SYNOR_GPU_API_COUNT] = {
    "unknown", "cuda", "rocm", "oneapi", "metal", "adreno", "mali", "webgpu", "opencl"};
static const char *const tpu_names[SYNOR_TPU_VERSION_COUNT] = {"unknown", "v2",  "v3",  "v4",
                                                               "v4i",     "v5e", "v5p", "edge"};
static const char *const npu_names[SYNOR_NPU_VARIANT_COUNT] = {
    "unknown", "apple-ane", "qualcomm-hexagon", "intel-vpu", "huawei-ascend", "google-edge-tpu",
    "custom"};
static const char *const fpga_names[SYNOR_FPGA_VENDOR_COUNT] = {"unknown", "xilinx-amd",
                                                                "intel-altera"};
static const char *const dsp_names[SYNOR_DSP_VENDOR_COUNT] = {"unknown", "ti", "analog-devices"};
static const char *const op_names[SYNOR_OP_TYPE_COUNT] = {
#define SYNOR__OP_NAME(e, s) s,
    SYNOR_OP_TYPE_MAP(SYNOR__OP_NAME)
#undef SYNOR__OP_NAME
};
static const char *const dtype_names[SYNOR_DTYPE_COUNT] = {
#define SYNOR__DT_NAME(e, s, bits) s,
    SYNOR_DTYPE_MAP(SYNOR__DT_NAME)
#undef SYNOR__DT_NAME
};
static const unsigned dtype_bits[SYNOR_DTYPE_COUNT] = {
#define SYNOR__DT_BITS(e, s, bits) bits,
    SYNOR_DTYPE_MAP(SYNOR__DT_BITS)
#undef SYNOR__DT_BITS
};
static const char *const mem_names[SYNOR_MEM_TYPE_COUNT] = {
#define SYNOR__MT_NAME(e, s) s,
    SYNOR_MEM_TYPE_MAP(SYNOR__MT_NAME)
#undef SYNOR__MT_NAME
};
static const char *const trait_names[SYNOR_TRAIT_COUNT] = {
#define SYNOR__TR_NAME(e, s) s,
    SYNOR_TRAIT_MAP(SYNOR__TR_NAME)
#undef SYNOR__TR_NAME
};

static const char *name_at(const char *const *tab, size_t n, int v)
{
    return v >= 0 && (size_t)v < n ? tab[v] : "?";
}

static int index_of(const char *const *tab, size_t n, const char *name, const char *what)
{
    if (name)
        for (size_t i = 0; i < n; i++)
            if (strcmp(tab[i], name) == 0)
                return (int)i;
    return synor__error(SYNOR_EINVAL, "unknown %s \"%s\"", what, name ? name : "(null)");
}

#define SYNOR__NAMED(fn, type, tab, what)                                          \
    const char *synor_##fn##_name(type v) { return name_at(tab, SYNOR__ARRAY_LEN(tab), (int)v); } \
    int synor_##fn##_from_name(const char *name, type *out)                       \
    {                                                                              \
        int i = index_of(tab, SYNOR__ARRAY_LEN(tab), name, what);                 \
        if (i < 0)                                                                 \
            return i;                                                              \
        *out = (type)i;                                                            \
        return 0;                                                                  \
    }

SYNOR__NAMED(kind, synor_kind, kind_names, "processor kind")
SYNOR__NAMED(cpu_isa, synor_cpu_isa, isa_names, "CPU ISA")
SYNOR__NAMED(gpu_api, synor_gpu_api, gpu_api_names, "GPU API")
SYNOR__NAMED(tpu_version, synor_tpu_version, tpu_names, "TPU version")
SYNOR__NAMED(npu_variant, synor_npu_variant, npu_names, "NPU variant")
SYNOR__NAMED(fpga_vendor, synor_fpga_vendor, fpga_names, "FPGA vendor")
SYNOR__NAMED(dsp_vendor, synor_dsp_vendor, dsp_names, "DSP vendor")
SYNOR__NAMED(op_type, synor_op_type, op_names, "operation")
SYNOR__NAMED(dtype, synor_dtype, dtype_names, "data type")
SYNOR__NAMED(mem_type, synor_mem_type, mem_names, "memory type")
SYNOR__NAMED(trait, synor_trait, trait_names, "workload trait")

unsigned synor_dtype_bits(synor_dtype t)
{
    return (unsigned)t < SYNOR_DTYPE_COUNT ? dtype_bits[t] : 0;
}

static const struct {
    uint32_t bit;
    const char *name;
} cpu_features[] = {
#define SYNOR__CPUF_NAME(name, bit, str) {1u << (bit), str},
    SYNOR_CPU_FEATURE_MAP(SYNOR__CPUF_NAME)
#undef SYNOR__CPUF_NAME
};

const char *synor_cpu_feature_name(uint32_t bit)
{
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(cpu_features); i++)
        if (cpu_features[i].bit == bit)
            return cpu_features[i].name;
    return NULL;
}

int synor_cpu_feature_from_name(const char *name, uint32_t *bit)
{
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(cpu_features); i++)
        if (name && strcmp(cpu_features[i].name, name) == 0) {
            *bit = cpu_features[i].bit;
            return 0;
        }
    return synor__error(SYNOR_EINVAL, "unknown CPU feature \"%s\"", name ? name : "(null)");
}

int synor_processor_type_format(const synor_processor_type *t, char *buf, size_t n)
{
    char extra[256] = "";
    size_t used = 0;
    switch (t->kind) {
    case SYNOR_KIND_CPU:
    case SYNOR_KIND_WASM:
        used = (size_t)snprintf(extra, sizeof extra, " %s", synor_cpu_isa_name(t->isa));
        for (size_t i = 0, first = 1; i < SYNOR__ARRAY_LEN(cpu_features); i++) {
            if (!(t->cpu_features & cpu_features[i].bit) || used >= sizeof extra)
                continue;
            used += (size_t)snprintf(extra + used, sizeof extra - used, "%s%s",
                                     first ? " " : "+", cpu_features[i].name);
            first = 0;
        }
        break;
    case SYNOR_KIND_GPU:
    case SYNOR_KIND_WEBGPU:
        if (t->gpu_api == SYNOR_GPU_CUDA && t->cc_major)
            snprintf(extra, sizeof extra, " cuda sm_%d%d", t->cc_major, t->cc_minor);
        else if (t->gpu_api == SYNOR_GPU_ROCM && t->gfx_version)
            snprintf(extra, sizeof extra, " rocm gfx%u", t->gfx_version);
        else
            snprintf(extra, sizeof extra, " %s", synor_gpu_api_name(t->gpu_api));
        break;
    case SYNOR_KIND_TPU:
        snprintf(extra, sizeof extra, " %s", synor_tpu_version_name(t->tpu));
        break;
    case SYNOR_KIND_NPU:
        used = (size_t)snprintf(extra, sizeof extra, " %s", synor_npu_variant_name(t->npu));
        if (t->npu_cores)
            used += (size_t)snprintf(extra + used, sizeof extra - used, " %u cores", t->npu_cores);
        if (t->npu_version)
            used += (size_t)snprintf(extra + used, sizeof extra - used, " v%u", t->npu_version);
        if (t->npu_tops > 0)
            snprintf(extra + used, sizeof extra - used, " %g TOPS", t->npu_tops);
        break;
    case SYNOR_KIND_FPGA:
        snprintf(extra, sizeof extra, " %s", synor_fpga_vendor_name(t->fpga));
        break;
    case SYNOR_KIND_DSP:
        snprintf(extra, sizeof extra, " %s", synor_dsp_vendor_name(t->dsp));
        break;
    case SYNOR_KIND_CUSTOM:
        snprintf(extra, sizeof extra, " %s %s", t->vendor, t->model);
        break;
    default:
        break;
    }
    return snprintf(buf, n, "%s%s", synor_kind_name(t->kind), extra);
}
