/* opencl.c - OpenCL platforms and devices through the ICD loader. PoCL,
 * installed by scripts/setup.sh, exposes this machine's CPU as an OpenCL
 * device with its own memory space, which is what the runtime's transfer
 * code is exercised against. An NVIDIA OpenCL device duplicates a GPU the
 * cuda source already found, and is skipped. */
#include <stdio.h>
#include <string.h>

#include <CL/cl.h>

#include "detect/detect_internal.h"

static void info_str(cl_device_id d, cl_device_info what, char *buf, size_t n)
{
    size_t got = 0;
    if (clGetDeviceInfo(d, what, n - 1, buf, &got) != CL_SUCCESS)
        got = 0;
    buf[got < n ? got : n - 1] = '\0';
}

static cl_ulong info_ulong(cl_device_id d, cl_device_info what)
{
    cl_ulong v = 0;
    clGetDeviceInfo(d, what, sizeof v, &v, NULL);
    return v;
}

static cl_uint info_uint(cl_device_id d, cl_device_info what)
{
    cl_uint v = 0;
    clGetDeviceInfo(d, what, sizeof v, &v, NULL);
    return v;
}

static void cl_destroy(void *impl) { (void)impl; }

static const synor_device_ops opencl_ops = {
    .version = SYNOR_DEVICE_OPS_VERSION,
    .backend = "opencl",
    .simulated = 0,
    .submit = NULL, /* kernels run through the runtime (later issue) */
    .destroy = cl_destroy,
};

int synor__detect_opencl(synor__detect_ctx *c)
{
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0) {
        synor__detect_note(c, "opencl", "no OpenCL platform (clGetPlatformIDs: %d); 0 devices",
                           (int)err);
        return 0;
    }
    cl_platform_id plats[16];
    if (np > 16)
        np = 16;
    clGetPlatformIDs(np, plats, NULL);
    int found = 0, skipped = 0;
    for (cl_uint pi = 0; pi < np; pi++) {
        char pname[128] = "", pver[128] = "";
        clGetPlatformInfo(plats[pi], CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
        clGetPlatformInfo(plats[pi], CL_PLATFORM_VERSION, sizeof pver - 1, pver, NULL);
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[pi], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || !nd)
            continue;
        cl_device_id devs[32];
        if (nd > 32)
            nd = 32;
        clGetDeviceIDs(plats[pi], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
        for (cl_uint di = 0; di < nd; di++) {
            cl_device_id d = devs[di];
            char name[256], vendor[128], version[128], driver[128];
            info_str(d, CL_DEVICE_NAME, name, sizeof name);
            info_str(d, CL_DEVICE_VENDOR, vendor, sizeof vendor);
            info_str(d, CL_DEVICE_VERSION, version, sizeof version);
            info_str(d, CL_DRIVER_VERSION, driver, sizeof driver);
            cl_ulong type = info_ulong(d, CL_DEVICE_TYPE);
            if (c->cuda_gpus > 0 && (type & CL_DEVICE_TYPE_GPU) && synor__strcasestr(vendor, "nvidia")) {
                skipped++;
                continue;
            }
            cl_uint cus = info_uint(d, CL_DEVICE_MAX_COMPUTE_UNITS);
            cl_uint mhz = info_uint(d, CL_DEVICE_MAX_CLOCK_FREQUENCY);
            cl_uint wf = info_uint(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT);
            cl_uint wd = info_uint(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE);
            cl_uint wh = info_uint(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_HALF);
            cl_ulong gmem = info_ulong(d, CL_DEVICE_GLOBAL_MEM_SIZE);
            cl_ulong lmem = info_ulong(d, CL_DEVICE_LOCAL_MEM_SIZE);
            cl_ulong dfp = info_ulong(d, CL_DEVICE_DOUBLE_FP_CONFIG);

            synor_device_desc desc;
            memset(&desc, 0, sizeof desc);
            char dname[448];
            snprintf(dname, sizeof dname, "%s (OpenCL, %s)", name, pname);
            desc.name = dname;
            char loc[64];
            snprintf(loc, sizeof loc, "opencl platform %u device %u", pi, di);
            desc.location = loc;
            synor_kind kind = (type & CL_DEVICE_TYPE_GPU)           ? SYNOR_KIND_GPU
                              : (type & CL_DEVICE_TYPE_ACCELERATOR) ? SYNOR_KIND_CUSTOM
                                                                    : SYNOR_KIND_CPU;
            desc.type.kind = kind;
            if (kind == SYNOR_KIND_GPU)
                desc.type.gpu_api = SYNOR_GPU_OPENCL;
            if (kind == SYNOR_KIND_CPU) {
                char v[16];
                synor__cpu_features(&desc.type.isa, &desc.type.cpu_features, v, sizeof v);
                desc.type.cores = cus;
                desc.type.base_ghz = mhz / 1000.0;
            }
            synor__strlcpy(desc.type.vendor, vendor, sizeof desc.type.vendor);
            synor__strlcpy(desc.type.model, name, sizeof desc.type.model);
            const synor_profile *p = synor_catalog_match(c->cat, kind, name);
            if (p && kind != SYNOR_KIND_CPU) {
                synor__caps_from_match(&desc.caps, p, gmem);
                desc.profile_id = p->id;
                desc.origin = SYNOR_CAPS_FROM_PROFILE_MATCH;
            } else {
                /* cores x clock x native vector lanes x 2 (FMA) */
                synor_caps *k = &desc.caps;
                double base = (double)cus * mhz * 1e6 * 2.0;
                double fp32 = base * (wf ? wf : 1);
                double fp64 = dfp ? base * (wd ? wd : 1) : 0;
                double fp16 = wh ? base * wh : 0;
                k->peak[SYNOR_DTYPE_FP32].dense = k->peak[SYNOR_DTYPE_FP32].sparse = fp32;
                k->peak[SYNOR_DTYPE_FP64].dense = k->peak[SYNOR_DTYPE_FP64].sparse = fp64;
                k->peak[SYNOR_DTYPE_FP16].dense = k->peak[SYNOR_DTYPE_FP16].sparse = fp16;
                for (int t = 0; t < SYNOR_DTYPE_COUNT; t++)
                    if (k->peak[t].dense > 0)
                        k->dtypes |= SYNOR_DTYPE_BIT(t);
                k->mem_bytes = gmem;
                k->mem_type = SYNOR_MEM_UNKNOWN;
                /* The runtime implements GEMM and element-wise kernels on
                 * OpenCL; the catalogue of operations is what the device
                 * class can run, not what is written yet. */
                k->ops = SYNOR_OP_SET_ALL & ~(SYNOR_OP_BIT(SYNOR_OP_DATA_LOAD) |
                                              SYNOR_OP_BIT(SYNOR_OP_TOKENIZATION) |
                                              SYNOR_OP_BIT(SYNOR_OP_DETOKENIZATION) |
                                              SYNOR_OP_BIT(SYNOR_OP_CHECKPOINT));
                k->launch_latency = 10e-6; /* enqueue + completion event; an estimate */
                k->efficiency = 0.5;
                desc.origin = SYNOR_CAPS_DERIVED;
            }
            synor_device *dev;
            int rc = synor_device_create(&desc, &opencl_ops, NULL, &dev);
            if (rc)
                return rc;
            char buf[64];
            synor_device_add_detail(dev, "platform", pname);
            synor_device_add_detail(dev, "platform_version", pver);
            synor_device_add_detail(dev, "device_version", version);
            synor_device_add_detail(dev, "driver_version", driver);
            synor_device_add_detail(dev, "vendor", vendor);
            snprintf(buf, sizeof buf, "%u", cus);
            synor_device_add_detail(dev, "compute_units", buf);
            snprintf(buf, sizeof buf, "%u", mhz);
            synor_device_add_detail(dev, "max_clock_mhz", buf);
            snprintf(buf, sizeof buf, "%llu", (unsigned long long)lmem);
            synor_device_add_detail(dev, "local_mem_bytes", buf);
            snprintf(buf, sizeof buf, "float %u, double %u, half %u", wf, wd, wh);
            synor_device_add_detail(dev, "native_vector_width", buf);
            if (kind == SYNOR_KIND_CPU)
                synor_device_add_detail(dev, "note", "same silicon as the host CPU device, "
                                                     "reached through OpenCL with its own "
                                                     "memory space");
            if ((rc = synor__detect_add(c, "opencl", dev)))
                return rc;
            found++;
        }
    }
    synor__detect_note(c, "opencl", "%d device(s) on %u platform(s)%s", found, np,
                       skipped ? " (NVIDIA OpenCL GPUs skipped: found through CUDA)" : "");
    return 0;
}
