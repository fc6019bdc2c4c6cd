/* nvidia.c - NVIDIA GPUs through the CUDA driver API and NVML, both loaded
 * at run time with dlopen so the library neither needs the CUDA toolkit to
 * build nor a driver to run: no library or no GPU means zero GPUs and a note.
 *
 * The CUDA driver enumerates devices and gives SM count, clocks, bus width
 * and compute capability; NVML adds power limit, live free memory and
 * utilization. Function signatures follow the public CUDA driver API and NVML
 * references; only the handful used here are declared. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "detect/detect_internal.h"

typedef int CUresult;
typedef int CUdevice;
enum {
    CU_ATTR_CLOCK_RATE = 13,         /* kHz */
    CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    CU_ATTR_PCI_BUS_ID = 33,
    CU_ATTR_PCI_DEVICE_ID = 34,
    CU_ATTR_MEMORY_CLOCK_RATE = 36,  /* kHz */
    CU_ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,
    CU_ATTR_PCI_DOMAIN_ID = 50,
    CU_ATTR_CC_MAJOR = 75,
    CU_ATTR_CC_MINOR = 76
};

typedef struct cuda_api {
    void *lib;
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
} cuda_api;

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used;
} nvml_memory;
typedef struct {
    unsigned gpu, memory;
} nvml_utilization;

typedef struct nvml_api {
    void *lib;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*get_handle_by_pci)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*get_memory)(nvmlDevice_t, nvml_memory *);
    nvmlReturn_t (*get_power_limit)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*get_utilization)(nvmlDevice_t, nvml_utilization *);
    nvmlReturn_t (*get_max_pcie_gen)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*get_max_pcie_width)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*driver_version)(char *, unsigned);
} nvml_api;

static int load_cuda(cuda_api *a, char *why, size_t n)
{
    memset(a, 0, sizeof *a);
    a->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
        snprintf(why, n, "libcuda.so.1 not loadable (%s)", dlerror());
        return -1;
    }
    if (synor__dlsym_into(a->lib, "cuInit", &a->cuInit) ||
        synor__dlsym_into(a->lib, "cuDriverGetVersion", &a->cuDriverGetVersion) ||
        synor__dlsym_into(a->lib, "cuDeviceGetCount", &a->cuDeviceGetCount) ||
        synor__dlsym_into(a->lib, "cuDeviceGet", &a->cuDeviceGet) ||
        synor__dlsym_into(a->lib, "cuDeviceGetName", &a->cuDeviceGetName) ||
        synor__dlsym_into(a->lib, "cuDeviceTotalMem_v2", &a->cuDeviceTotalMem) ||
        synor__dlsym_into(a->lib, "cuDeviceGetAttribute", &a->cuDeviceGetAttribute)) {
        snprintf(why, n, "libcuda.so.1 lacks a driver API symbol");
        dlclose(a->lib);
        a->lib = NULL;
        return -1;
    }
    return 0;
}

static void load_nvml(nvml_api *a)
{
    memset(a, 0, sizeof *a);
    a->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib)
        return;
    if (synor__dlsym_into(a->lib, "nvmlInit_v2", &a->init) ||
        synor__dlsym_into(a->lib, "nvmlShutdown", &a->shutdown) ||
        synor__dlsym_into(a->lib, "nvmlDeviceGetHandleByPciBusId_v2", &a->get_handle_by_pci) ||
        a->init() != 0) {
        dlclose(a->lib);
        memset(a, 0, sizeof *a);
        return;
    }
    /* Optional extras: a missing one just leaves that figure out. */
    synor__dlsym_into(a->lib, "nvmlDeviceGetMemoryInfo", &a->get_memory);
    synor__dlsym_into(a->lib, "nvmlDeviceGetPowerManagementLimit", &a->get_power_limit);
    synor__dlsym_into(a->lib, "nvmlDeviceGetUtilizationRates", &a->get_utilization);
    synor__dlsym_into(a->lib, "nvmlDeviceGetMaxPcieLinkGeneration", &a->get_max_pcie_gen);
    synor__dlsym_into(a->lib, "nvmlDeviceGetMaxPcieLinkWidth", &a->get_max_pcie_width);
    synor__dlsym_into(a->lib, "nvmlSystemGetDriverVersion", &a->driver_version);
}

/* FP32 lanes per SM by compute capability (CUDA C Programming Guide,
 * "Arithmetic Instructions" throughput table). */
static int fp32_per_sm(int major, int minor)
{
    switch (major) {
    case 6: return minor == 0 ? 64 : 128;
    case 7: return 64;
    case 8: return minor == 0 ? 64 : 128;
    default: return 128; /* 9.x, 10.x, 12.x */
    }
}

/* The GPU backend keeps NVML's handle for live queries. */
typedef struct gpu_impl {
    nvml_api *nvml; /* shared, owned by the last device that holds it */
    nvmlDevice_t handle;
} gpu_impl;

static double gpu_utilization(synor_device *dev)
{
    gpu_impl *g = synor_device_impl(dev);
    nvml_utilization u;
    if (g->nvml && g->nvml->get_utilization && g->handle && g->nvml->get_utilization(g->handle, &u) == 0)
        return u.gpu / 100.0;
    return 0;
}

static uint64_t gpu_available_memory(synor_device *dev)
{
    gpu_impl *g = synor_device_impl(dev);
    nvml_memory m;
    if (g->nvml && g->nvml->get_memory && g->handle && g->nvml->get_memory(g->handle, &m) == 0)
        return m.free;
    uint64_t r = synor_device_reserved(dev), cap = synor_device_caps(dev)->mem_bytes;
    return r < cap ? cap - r : 0;
}

static void gpu_destroy(void *impl) { synor__free(impl); }

static const synor_device_ops cuda_ops = {
    .version = SYNOR_DEVICE_OPS_VERSION,
    .backend = "cuda",
    .simulated = 0,
    .submit = NULL, /* kernels run through the runtime (later issue) */
    .utilization = gpu_utilization,
    .available_memory = gpu_available_memory,
    .destroy = gpu_destroy,
};

/* NVML stays loaded for the life of the process once a GPU was found: live
 * queries need it and unloading a driver library mid-run buys nothing. */
static nvml_api g_nvml;

static int attr(cuda_api *a, int which, CUdevice d)
{
    int v = 0;
    return a->cuDeviceGetAttribute(&v, which, d) == 0 ? v : 0;
}

int synor__detect_nvidia(synor__detect_ctx *c)
{
    cuda_api cu;
    char why[512];
    if (load_cuda(&cu, why, sizeof why)) {
        synor__detect_note(c, "cuda", "no NVIDIA driver: %s; 0 GPUs", why);
        return 0;
    }
    int n = 0, drv = 0;
    CUresult r = cu.cuInit(0);
    if (r != 0 || cu.cuDeviceGetCount(&n) != 0) {
        synor__detect_note(c, "cuda", "cuInit failed (CUresult %d): no usable GPU; 0 GPUs", r);
        dlclose(cu.lib);
        return 0;
    }
    cu.cuDriverGetVersion(&drv);
    if (!g_nvml.lib)
        load_nvml(&g_nvml);
    nvml_api *nv = g_nvml.lib ? &g_nvml : NULL;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        CUdevice d;
        char name[256] = "NVIDIA GPU";
        size_t mem = 0;
        if (cu.cuDeviceGet(&d, i) != 0)
            continue;
        cu.cuDeviceGetName(name, (int)sizeof name, d);
        cu.cuDeviceTotalMem(&mem, d);
        int sms = attr(&cu, CU_ATTR_MULTIPROCESSOR_COUNT, d);
        int clk_khz = attr(&cu, CU_ATTR_CLOCK_RATE, d);
        int mclk_khz = attr(&cu, CU_ATTR_MEMORY_CLOCK_RATE, d);
        int bus = attr(&cu, CU_ATTR_GLOBAL_MEMORY_BUS_WIDTH, d);
        int ccma = attr(&cu, CU_ATTR_CC_MAJOR, d), ccmi = attr(&cu, CU_ATTR_CC_MINOR, d);
        char pci[32];
        snprintf(pci, sizeof pci, "%08x:%02x:%02x.0", attr(&cu, CU_ATTR_PCI_DOMAIN_ID, d),
                 attr(&cu, CU_ATTR_PCI_BUS_ID, d), attr(&cu, CU_ATTR_PCI_DEVICE_ID, d));

        nvmlDevice_t h = NULL;
        unsigned power_mw = 0, pgen = 0, pwidth = 0;
        if (nv && nv->get_handle_by_pci(pci, &h) == 0) {
            if (nv->get_power_limit)
                nv->get_power_limit(h, &power_mw);
            if (nv->get_max_pcie_gen)
                nv->get_max_pcie_gen(h, &pgen);
            if (nv->get_max_pcie_width)
                nv->get_max_pcie_width(h, &pwidth);
        } else {
            h = NULL;
        }

        synor_device_desc desc;
        memset(&desc, 0, sizeof desc);
        char loc[48];
        snprintf(loc, sizeof loc, "pci %s", pci);
        desc.name = name;
        desc.location = loc;
        desc.type.kind = SYNOR_KIND_GPU;
        desc.type.gpu_api = SYNOR_GPU_CUDA;
        desc.type.cc_major = ccma;
        desc.type.cc_minor = ccmi;
        synor__strlcpy(desc.type.vendor, "NVIDIA", sizeof desc.type.vendor);
        synor__strlcpy(desc.type.model, name, sizeof desc.type.model);
        const synor_profile *p = synor_catalog_match(c->cat, SYNOR_KIND_GPU, name);
        if (p) {
            synor__caps_from_match(&desc.caps, p, mem);
            desc.profile_id = p->id;
            desc.origin = SYNOR_CAPS_FROM_PROFILE_MATCH;
        } else {
            synor_caps *k = &desc.caps;
            double fp32 = (double)sms * fp32_per_sm(ccma, ccmi) * 2.0 * clk_khz * 1e3;
            double fp64_ratio = (ccma == 6 && ccmi == 0) || ccma == 7 || (ccma == 8 && ccmi == 0) ||
                                        ccma == 9 || (ccma == 10 && ccmi == 0)
                                    ? 0.5
                                    : 1.0 / 64;
            k->peak[SYNOR_DTYPE_FP32].dense = k->peak[SYNOR_DTYPE_FP32].sparse = fp32;
            k->peak[SYNOR_DTYPE_FP64].dense = k->peak[SYNOR_DTYPE_FP64].sparse = fp32 * fp64_ratio;
            /* Without a profile, claim no tensor-core figures: only what the
             * SM count and clock prove (fp16 at 2x fp32 since sm_60). */
            if (ccma >= 6)
                k->peak[SYNOR_DTYPE_FP16].dense = k->peak[SYNOR_DTYPE_FP16].sparse = 2 * fp32;
            for (int t = 0; t < SYNOR_DTYPE_COUNT; t++)
                if (k->peak[t].dense > 0)
                    k->dtypes |= SYNOR_DTYPE_BIT(t);
            k->mem_bytes = mem;
            k->mem_bandwidth = 2.0 * mclk_khz * 1e3 * bus / 8.0;
            k->mem_type = SYNOR_MEM_UNKNOWN;
            k->ops = SYNOR_OP_SET_ALL & ~(SYNOR_OP_BIT(SYNOR_OP_DATA_LOAD) |
                                          SYNOR_OP_BIT(SYNOR_OP_TOKENIZATION) |
                                          SYNOR_OP_BIT(SYNOR_OP_DETOKENIZATION) |
                                          SYNOR_OP_BIT(SYNOR_OP_CHECKPOINT));
            k->peak_watts = power_mw / 1000.0;
            k->idle_watts = k->peak_watts * 0.1;
            k->pcie_gen = (int)pgen;
            k->pcie_lanes = (int)pwidth;
            k->launch_latency = 5e-6;
            k->efficiency = 0.7;
            k->optimal_for = (1u << SYNOR_TRAIT_HIGHLY_PARALLEL) | (1u << SYNOR_TRAIT_LARGE_BATCH);
            desc.origin = SYNOR_CAPS_DERIVED;
        }
        gpu_impl *g = synor__calloc(1, sizeof *g);
        if (!g) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            break;
        }
        g->nvml = nv;
        g->handle = h;
        synor_device *dev;
        if ((rc = synor_device_create(&desc, &cuda_ops, g, &dev))) {
            synor__free(g);
            break;
        }
        char buf[64];
        snprintf(buf, sizeof buf, "%d.%d", ccma, ccmi);
        synor_device_add_detail(dev, "compute_capability", buf);
        snprintf(buf, sizeof buf, "%d", sms);
        synor_device_add_detail(dev, "sms", buf);
        snprintf(buf, sizeof buf, "%d", clk_khz / 1000);
        synor_device_add_detail(dev, "sm_clock_mhz", buf);
        snprintf(buf, sizeof buf, "%d", mclk_khz / 1000);
        synor_device_add_detail(dev, "memory_clock_mhz", buf);
        snprintf(buf, sizeof buf, "%d", bus);
        synor_device_add_detail(dev, "memory_bus_bits", buf);
        snprintf(buf, sizeof buf, "%zu", mem);
        synor_device_add_detail(dev, "memory_bytes", buf);
        snprintf(buf, sizeof buf, "%d.%d", drv / 1000, (drv % 1000) / 10);
        synor_device_add_detail(dev, "cuda_driver_api", buf);
        if (power_mw) {
            snprintf(buf, sizeof buf, "%u", power_mw / 1000);
            synor_device_add_detail(dev, "power_limit_w", buf);
        }
        if (pgen) {
            snprintf(buf, sizeof buf, "gen%u x%u", pgen, pwidth);
            synor_device_add_detail(dev, "pcie_max", buf);
        }
        if (nv && nv->driver_version && nv->driver_version(buf, sizeof buf) == 0)
            synor_device_add_detail(dev, "driver_version", buf);
        synor_device_add_detail(dev, "nvml", h ? "yes" : "no");
        if ((rc = synor__detect_add(c, "cuda", dev)))
            break;
        c->cuda_gpus++;
    }
    synor__detect_note(c, "cuda", "%d GPU(s) through the CUDA driver%s", c->cuda_gpus,
                       nv ? " and NVML" : " (NVML not available: no power or live figures)");
    /* libcuda stays loaded: drivers do not support being unloaded cleanly. */
    return rc;
}
