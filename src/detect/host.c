/* host.c - the CPU of this machine: topology through hwloc, ISA features
 * through cpu_<arch>.c, peak throughput and memory bandwidth measured
 * (peak.c, with SYNOR_DETECT_MEASURE) or else derived from cores x clock x
 * operations per cycle, and the "host" device backend that runs host
 * functions.
 *
 * Measured peaks replace the fp64 and fp32 figures; the other data types
 * keep the derived rule's ratio to fp32 (no loop measures them). A matched
 * profile's figures are scaled the same way: the profile says what the
 * product can do, the measurement what this machine's share of it does.
 *
 * Derived peak rule (per core per cycle, dense):
 *   fp64  AVX-512: 32 on Intel (two 512-bit FMA ports, as on Xeon Scalable
 *         Gold/Platinum), 16 on AMD (Zen 4 executes 512-bit as 2x256);
 *         AVX2+FMA: 16; ARM SVE (Neoverse V1, 2x256b): 16; NEON: 8;
 *         otherwise 4.  fp32 = 2 x fp64.
 *   fp16/bf16: native paths (AVX512_FP16, AVX512_BF16) at 2 x fp32; AMX-BF16
 *         1024; otherwise the fp32 rate (converted on load).
 *   int8  AMX-INT8 2048; VNNI 4 x fp32; AVX2 or NEON 2 x fp32.
 *   tf32, fp8, int4: no CPU path (0).
 * The clock is the base clock named in the model string ("@ 2.70GHz"), else
 * cpufreq's maximum, else /proc/cpuinfo's current MHz. */
#include <hwloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "detect/detect_internal.h"

void synor__cpu_ops_per_cycle(synor_cpu_isa isa, uint32_t f, const char *vendor,
                              double out[SYNOR_DTYPE_COUNT])
{
    memset(out, 0, SYNOR_DTYPE_COUNT * sizeof *out);
    double fp64;
    if (isa == SYNOR_ISA_X86_64) {
        if (f & SYNOR_CPU_AVX512F)
            fp64 = strcmp(vendor, "AuthenticAMD") == 0 ? 16 : 32;
        else if ((f & SYNOR_CPU_AVX2) && (f & SYNOR_CPU_FMA))
            fp64 = 16;
        else
            fp64 = 4;
    } else if (isa == SYNOR_ISA_ARM64) {
        fp64 = (f & SYNOR_CPU_SVE) ? 16 : (f & SYNOR_CPU_NEON) ? 8 : 2;
    } else {
        fp64 = 2;
    }
    double fp32 = 2 * fp64;
    out[SYNOR_DTYPE_FP64] = fp64;
    out[SYNOR_DTYPE_FP32] = fp32;
    out[SYNOR_DTYPE_FP16] = (f & SYNOR_CPU_AVX512_FP16) ? 2 * fp32 : fp32;
    out[SYNOR_DTYPE_BF16] = (f & SYNOR_CPU_AMX_BF16)      ? 1024
                            : (f & SYNOR_CPU_AVX512_BF16) ? 2 * fp32
                                                          : fp32;
    out[SYNOR_DTYPE_INT8] = (f & SYNOR_CPU_AMX_INT8)       ? 2048
                            : (f & SYNOR_CPU_AVX512_VNNI)  ? 4 * fp32
                            : (f & (SYNOR_CPU_AVX2 | SYNOR_CPU_NEON)) ? 2 * fp32
                                                                      : fp32;
}

/* ---- host backend ---- */

typedef struct host_impl {
    unsigned long long last_busy, last_total;
} host_impl;

static int host_submit(synor_device *dev, const synor_work *w)
{
    if (!w->fn)
        return synor__error(SYNOR_EINVAL, "device \"%s\": work has no host function",
                            synor_device_name(dev));
    return w->fn(w->arg);
}

/* Utilization of all CPUs since the previous call (since boot on the first),
 * from the aggregate line of /proc/stat. */
static double host_utilization(synor_device *dev)
{
    host_impl *h = synor_device_impl(dev);
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return 0;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 4)
        return 0;
    unsigned long long idle = v[3] + v[4], total = 0;
    for (int i = 0; i < 8; i++)
        total += v[i];
    unsigned long long busy = total - idle;
    double u = 0;
    if (total > h->last_total)
        u = (double)(busy - h->last_busy) / (double)(total - h->last_total);
    h->last_busy = busy;
    h->last_total = total;
    return u < 0 ? 0 : u > 1 ? 1 : u;
}

static uint64_t host_available_memory(synor_device *dev)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    if (f) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
                break;
        fclose(f);
    }
    uint64_t avail = (uint64_t)kb * 1024;
    uint64_t r = synor_device_reserved(dev);
    return avail > r ? avail - r : 0;
}

static void host_destroy(void *impl) { synor__free(impl); }

static const synor_device_ops host_ops = {
    .version = SYNOR_DEVICE_OPS_VERSION,
    .backend = "host",
    .simulated = 0,
    .submit = host_submit,
    .utilization = host_utilization,
    .available_memory = host_available_memory,
    .destroy = host_destroy,
};

/* ---- probing ---- */

static double clock_ghz(const char *model)
{
    const char *at = model ? strstr(model, "@ ") : NULL;
    if (at) {
        double g = strtod(at + 2, NULL);
        if (g > 0.1 && g < 10)
            return g;
    }
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "r");
    if (f) {
        double khz = 0;
        int ok = fscanf(f, "%lf", &khz) == 1;
        fclose(f);
        if (ok && khz > 0)
            return khz / 1e6;
    }
    f = fopen("/proc/cpuinfo", "r");
    double mhz = 0;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "cpu MHz : %lf", &mhz) == 1)
                break;
        fclose(f);
    }
    return mhz / 1e3;
}

static uint64_t meminfo_total(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kb = 0;
    if (f) {
        if (fscanf(f, "MemTotal: %llu kB", &kb) != 1)
            kb = 0;
        fclose(f);
    }
    return (uint64_t)kb * 1024;
}

static int count(hwloc_topology_t t, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(t, type);
    return n < 0 ? 0 : n;
}

static uint64_t cache_size(hwloc_topology_t t, hwloc_obj_type_t type)
{
    hwloc_obj_t o = hwloc_get_obj_by_type(t, type, 0);
    return o && o->attr ? o->attr->cache.size : 0;
}

static int add_detail_num(synor_device *d, const char *k, unsigned long long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", v);
    return synor_device_add_detail(d, k, buf);
}

int synor__detect_host(synor__detect_ctx *c)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) {
        synor__detect_note(c, "host", "hwloc_topology_init failed");
        return 0;
    }
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        synor__detect_note(c, "host", "hwloc_topology_load failed");
        return 0;
    }
    int packages = count(topo, HWLOC_OBJ_PACKAGE), cores = count(topo, HWLOC_OBJ_CORE),
        pus = count(topo, HWLOC_OBJ_PU), numa = count(topo, HWLOC_OBJ_NUMANODE);
    if (cores <= 0)
        cores = pus > 0 ? pus : 1;
    hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
    const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
    int have_model = model && model[0];
    char name[128]; /* a copy: model dies with the topology */
    synor__strlcpy(name, have_model ? model : "host CPU", sizeof name);
    /* cpuid's brand string is padded with spaces on some CPUs and VMs */
    for (size_t l = strlen(name); l > 0 && name[l - 1] == ' '; l--)
        name[l - 1] = '\0';
    /* hwloc counts NUMA-node memory; some VMs report only part of RAM
     * there (a ballooned node), so /proc/meminfo's total wins if larger. */
    uint64_t numa_mem = hwloc_get_root_obj(topo)->total_memory;
    uint64_t mem = meminfo_total();
    if (mem < numa_mem)
        mem = numa_mem;
    uint64_t l1 = cache_size(topo, HWLOC_OBJ_L1CACHE), l2 = cache_size(topo, HWLOC_OBJ_L2CACHE),
             l3 = cache_size(topo, HWLOC_OBJ_L3CACHE);
    hwloc_topology_destroy(topo);

    synor_device_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.name = name;
    desc.location = "local";
    char vendor[16];
    synor__cpu_features(&desc.type.isa, &desc.type.cpu_features, vendor, sizeof vendor);
    desc.type.kind = SYNOR_KIND_CPU;
    desc.type.cores = (uint32_t)cores;
    desc.type.threads = (uint32_t)pus;
    desc.type.base_ghz = clock_ghz(have_model ? name : NULL);
    synor__strlcpy(desc.type.vendor, vendor, sizeof desc.type.vendor);
    synor__strlcpy(desc.type.model, name, sizeof desc.type.model);

    synor__host_measure hm;
    int measured = 0;
    char mnote[600] = "";
    if (c->sources & SYNOR_DETECT_MEASURE) {
        char identity[512];
        snprintf(identity, sizeof identity,
                 "%s|%s|features %08x|%d packages|%d cores|%d threads|synor %s", name, vendor,
                 (unsigned)desc.type.cpu_features, packages, cores, pus, synor_version());
        measured = synor__host_measure_run(identity, (unsigned)cores, desc.type.cpu_features,
                                           c->measure_cache,
                                           !(c->sources & SYNOR_DETECT_REMEASURE), &hm, mnote,
                                           sizeof mnote) == 0;
        if (!measured)
            synor__detect_note(c, "host", "peak not measured (%s): derived", synor_errmsg());
        else if (mnote[0])
            synor__detect_note(c, "host", "%s", mnote);
    }
    double bw = measured ? hm.copy_bw : 0;
    double derived_fp64 = 0;
    const synor_profile *p = synor_catalog_match(c->cat, SYNOR_KIND_CPU, name);
    synor_caps *caps = &desc.caps;
    if (p) {
        /* A matched CPU profile describes the whole socket; this machine may
         * see only some of its cores (a VM). Scale throughput to them. */
        synor__caps_from_match(caps, p, mem);
        double share = p->type.cores ? (double)cores / ((double)p->type.cores * packages) : 1;
        if (share < 1)
            for (int t = 0; t < SYNOR_DTYPE_COUNT; t++) {
                caps->peak[t].dense *= share;
                caps->peak[t].sparse *= share;
            }
        desc.profile_id = p->id;
        desc.origin = SYNOR_CAPS_FROM_PROFILE_MATCH;
    } else {
        double opc[SYNOR_DTYPE_COUNT];
        synor__cpu_ops_per_cycle(desc.type.isa, desc.type.cpu_features, vendor, opc);
        for (int t = 0; t < SYNOR_DTYPE_COUNT; t++) {
            caps->peak[t].dense = caps->peak[t].sparse = cores * desc.type.base_ghz * 1e9 * opc[t];
            if (opc[t] > 0)
                caps->dtypes |= SYNOR_DTYPE_BIT(t);
        }
        caps->mem_bytes = mem;
        caps->mem_bandwidth = bw;
        caps->mem_type = SYNOR_MEM_UNKNOWN;
        caps->ops = SYNOR_OP_SET_ALL;
        caps->optimal_for = (1u << SYNOR_TRAIT_SEQUENTIAL) | (1u << SYNOR_TRAIT_SMALL_BATCH) |
                            (1u << SYNOR_TRAIT_VARIABLE_LENGTH);
        caps->launch_latency = 1e-6; /* thread hand-off; an estimate */
        caps->efficiency = 0.8;
        desc.origin = SYNOR_CAPS_DERIVED;
    }
    derived_fp64 = caps->peak[SYNOR_DTYPE_FP64].dense;
    if (measured) {
        /* fp64 and fp32 as measured; the other types keep their ratio to
         * fp32 (the rule's or the profile's). */
        double f32 = caps->peak[SYNOR_DTYPE_FP32].dense;
        double scale = f32 > 0 ? hm.fp32 / f32 : 0;
        for (int t = 0; t < SYNOR_DTYPE_COUNT; t++) {
            double v = t == SYNOR_DTYPE_FP64   ? hm.fp64
                       : t == SYNOR_DTYPE_FP32 ? hm.fp32
                                               : caps->peak[t].dense * scale;
            caps->peak[t].dense = caps->peak[t].sparse = v;
        }
    }
    host_impl *impl = synor__calloc(1, sizeof *impl);
    if (!impl)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    synor_device *dev;
    int rc = synor_device_create(&desc, &host_ops, impl, &dev);
    if (rc) {
        synor__free(impl);
        return rc;
    }
    char ghz[32], source[160], derived[32];
    snprintf(ghz, sizeof ghz, "%.2f", desc.type.base_ghz);
    snprintf(derived, sizeof derived, "%.4g", derived_fp64);
    if (measured)
        snprintf(source, sizeof source, "measured: FMA loops (fp64 %s, fp32 %s) on %u threads, %s%s",
                 hm.fp64_isa, hm.fp32_isa, hm.threads, hm.when,
                 hm.from_cache ? " (cached)" : "");
    else
        snprintf(source, sizeof source, "%s",
                 p ? "profile, scaled to visible cores (not measured)"
                   : "derived: cores x base clock x ops/cycle (not measured)");
    if ((rc = add_detail_num(dev, "packages", (unsigned long long)packages)) ||
        (rc = add_detail_num(dev, "cores", (unsigned long long)cores)) ||
        (rc = add_detail_num(dev, "threads", (unsigned long long)pus)) ||
        (rc = add_detail_num(dev, "numa_nodes", (unsigned long long)numa)) ||
        (rc = add_detail_num(dev, "numa_memory_bytes", numa_mem)) ||
        (rc = add_detail_num(dev, "l1d_bytes", l1)) || (rc = add_detail_num(dev, "l2_bytes", l2)) ||
        (rc = add_detail_num(dev, "l3_bytes", l3)) ||
        (rc = synor_device_add_detail(dev, "clock_ghz", ghz)) ||
        (rc = synor_device_add_detail(dev, "cpu_vendor", vendor)) ||
        (rc = synor_device_add_detail(dev, "peak_source", source)) ||
        (rc = synor_device_add_detail(dev, p ? "profile_fp64_flops" : "derived_fp64_flops",
                                      derived)) ||
        (bw > 0 && (rc = add_detail_num(dev, "measured_copy_bw_bytes_s",
                                        (unsigned long long)bw)))) {
        synor_device_unref(dev);
        return rc;
    }
    for (size_t i = 0; measured && i < hm.n_levels; i++) {
        char key[48], val[32];
        snprintf(key, sizeof key, "measured_%s_flops_%s", synor_dtype_name(hm.level[i].dtype),
                 hm.level[i].isa);
        snprintf(val, sizeof val, "%.4g", hm.level[i].flops);
        if ((rc = synor_device_add_detail(dev, key, val))) {
            synor_device_unref(dev);
            return rc;
        }
    }
    synor__detect_note(c, "host", "%s: %d package(s), %d cores, %d threads, %d NUMA node(s)%s%s",
                       name, packages, cores, pus, numa, p ? ", profile " : "",
                       p ? p->id : "");
    return synor__detect_add(c, "cpu", dev);
}
