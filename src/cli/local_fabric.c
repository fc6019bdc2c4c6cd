/* local_fabric.c - the 'local' fabric of simulate and whatif: this machine
 * from detection (the CPU's measured peak), its task times calibrated on
 * the performance model that real runs record (synor_whatif_calibrate). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"

int cli_local_opt(const char *cmd, cli_local *l, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--no-perfmodel")) {
        l->no_perfmodel = 1;
        return 1;
    }
    if (*i + 1 >= argc)
        return 0;
    if (!strcmp(a, "--perfmodel")) {
        l->perfmodel = argv[++*i];
        return 1;
    }
    if (!strcmp(a, "--measure-cache")) {
        l->cache = argv[++*i];
        return 1;
    }
    if (!strcmp(a, "--sharing-cache")) {
        l->sharing_cache = argv[++*i];
        return 1;
    }
    if (!strcmp(a, "--opencl")) {
        const char *v = argv[++*i];
        if (strcmp(v, "off") != 0 && strcmp(v, "all") != 0)
            return cli_usage_error(cmd, "--opencl '%s': off or all", v), -1;
        l->opencl_off = !strcmp(v, "off");
        l->opencl_set = 1;
        return 1;
    }
    if (!strcmp(a, "--cpu-workers")) {
        if (cli_parse_uint(cmd, a, argv[++*i], 1, 1024, &l->cpu_workers))
            return -1;
        return 1;
    }
    return 0;
}

int cli_local_check(const char *cmd, const cli_local *l, int local)
{
    if (l->perfmodel && l->no_perfmodel)
        return cli_usage_error(cmd, "--perfmodel and --no-perfmodel exclude each other");
    if (!local && (l->perfmodel || l->no_perfmodel || l->cpu_workers || l->cache ||
                   l->sharing_cache || l->opencl_set))
        return cli_usage_error(cmd, "--perfmodel, --no-perfmodel, --cpu-workers, "
                                    "--measure-cache, --sharing-cache and --opencl are options "
                                    "of the local fabric (--fabric local)");
    if (l->sharing_cache && l->opencl_off)
        return cli_usage_error(cmd, "--sharing-cache and --opencl off exclude each other");
    return CLI_OK;
}

int cli_local_detect(synor_catalog *cat, const cli_local *l, synor_detection **det)
{
    char cache_default[4096];
    const char *cache = l->cache;
    if (!cache && synor_detect_default_cache_path(cache_default, sizeof cache_default) == 0)
        cache = cache_default;
    unsigned what = SYNOR_DETECT_HOST | SYNOR_DETECT_CUDA | SYNOR_DETECT_MEASURE;
    if (l->sharing_cache || (l->pocl == 1 && !l->opencl_off))
        what |= SYNOR_DETECT_OPENCL;
    if (synor_detect_run_cached(cat, what, cache, det)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* The CPU workers a real run would have: --cpu-workers, else one per core
 * as the runtime does (synor_runtime_config.cpu_workers 0). */
static unsigned workers_of(const cli_local *l, const synor_detection *det)
{
    if (l->cpu_workers)
        return (unsigned)l->cpu_workers;
    for (size_t i = 0; i < synor_detection_count(det); i++) {
        synor_device *dev = synor_detection_device(det, i);
        const char *cores = synor_device_detail_get(dev, "cores");
        if (!strcmp(synor_device_backend(dev), "host") && cores && atoi(cores) > 0)
            return (unsigned)atoi(cores) > 1024 ? 1024 : (unsigned)atoi(cores);
    }
    return 1;
}

/* The run fabric of the CPU workers and PoCL, shared with the factors of
 * the cache (measured and written there when absent); *pocl 0 and f
 * untouched when there is no OpenCL CPU device. */
static int shared_fabric(synor_catalog *cat, const synor_detection *det, const char *cache,
                         unsigned workers, int calibrated, synor_fabric **f, int *pocl,
                         char *name, size_t nsize)
{
    char product[96];
    *pocl = synor_runtime_find_host_opencl(workers, name, nsize, product, sizeof product);
    if (!*pocl)
        return 0;
    synor_whatif_sharing sh;
    int rc = synor_whatif_measure_sharing(workers, 1024, 256, 7, cache, &sh);
    synor_whatif_run_device rd[2] = {{"cpu", NULL, 0, workers, 0, 0},
                                     {name, product, 0, 0, 0, 0}};
    rd[1].share_cpu_slowdown = sh.cpu_slowdown;
    /* a model's times hold its own slowdown (synor_whatif_calibrate_sharing
     * then sets both to 1); a roofline does not */
    rd[1].share_slowdown = calibrated ? 1 : sh.slowdown;
    synor_fabric *g = NULL;
    if (!rc)
        rc = synor_whatif_run_fabric(cat, det, rd, 2, &g);
    if (!rc) {
        synor_fabric_destroy(*f);
        *f = g;
    }
    return rc;
}

int cli_local_load(synor_catalog *cat, const synor_detection *det, const cli_local *l,
                   const scenario *sc, const synor_whatif_change *ch, size_t n, synor_fabric **fo,
                   synor_workload **wo, char *note, size_t note_size)
{
    synor_fabric *f = NULL;
    synor_workload *w = NULL, *cw = NULL;
    synor_perfmodel *pm = NULL;
    char pm_default[4096];
    const char *pm_path = l->perfmodel;
    if (!pm_path && !l->no_perfmodel &&
        synor_perfmodel_default_path(pm_default, sizeof pm_default) == 0)
        pm_path = pm_default;
    /* A workload file does not depend on the fabric; a preset is built for
     * the whole CPU. A workload that runs for real here is simulated as a
     * real run has it: one device per CPU worker, each one task at a time. */
    const char **kernels = NULL;
    uint64_t *fps = NULL;
    /* PoCL beside the workers: --sharing-cache F, else by default (factors
     * cached beside the detection's, synor_whatif_default_sharing_cache_path)
     * unless --opencl off or the fabric is changed (whatif --add, --replace) */
    char sh_default[4096];
    const char *sh_cache = l->sharing_cache;
    int sh_skipped = 0, sh_on = sh_cache != NULL;
    if (!sh_cache && l->pocl && !l->opencl_off) {
        if (n || l->pocl == 2) {
            sh_skipped = 1;
        } else { /* no cache directory: measured each time */
            sh_on = 1;
            if (synor_whatif_default_sharing_cache_path(sh_default, sizeof sh_default) == 0)
                sh_cache = sh_default;
        }
    }
    int rc = synor_whatif_fabric(cat, det, ch, n, &f) ||
             (sc->tiled ? cli_scenario_tiled(sc, &w, &kernels, &fps) : cli_scenario_load(sc, f, &w));
    unsigned workers = 0;
    int pocl = 0;
    char pocl_name[64] = "";
    if (!rc && (sc->tiled || synor_exec_check(w) == 0)) {
        workers = workers_of(l, det);
        synor_fabric_destroy(f);
        f = NULL;
        rc = synor_whatif_fabric_workers(cat, det, workers, ch, n, &f);
        if (!rc && l->sharing_cache && n)
            rc = synor__error(SYNOR_EINVAL, "--sharing-cache: not with changes to the fabric");
        if (!rc && sh_on)
            rc = shared_fabric(cat, det, sh_cache, workers, pm_path != NULL, &f, &pocl,
                               pocl_name, sizeof pocl_name);
    }
    if (!rc && pm_path)
        rc = synor_perfmodel_create(&pm) || synor_perfmodel_load(pm, pm_path);
    synor_whatif_calibration ci;
    if (!rc)
        rc = kernels ? synor_whatif_calibrate_keyed(f, w, kernels, fps, pm, &cw, &ci)
                     : synor_whatif_calibrate(f, w, pm, &cw, &ci);
    if (!rc && pocl && pm)
        rc = synor_whatif_calibrate_sharing(f, w, kernels, fps, pm, NULL);
    free(kernels);
    free(fps);
    if (rc) { /* the caller prints synor_errmsg() */
        synor_perfmodel_destroy(pm);
        synor_workload_destroy(w);
        synor_fabric_destroy(f);
        return CLI_FAIL;
    }
    size_t cells = ci.tasks * ci.local_devices;
    int len = snprintf(
        note, note_size,
        "Local fabric: this machine from detection (synor devices), %s. Task "
        "times on its devices: %zu of %zu from the performance model (%s: what "
        "real runs recorded, median per kernel and data shape), %zu from the "
        "roofline x the same kernel's measured/roofline, %zu x all kernels' "
        "(median %.3g), %zu from the roofline alone (measured peak and "
        "bandwidth).",
        workers ? "the CPU as one device per runtime worker" : "the CPU as one device",
        ci.from_model, cells, pm_path ? pm_path : "--no-perfmodel", ci.from_kernel_fit,
        ci.from_overall_fit, ci.overall_factor == ci.overall_factor ? ci.overall_factor : 0.0,
        ci.from_roofline);
    if (len > 0 && (size_t)len < note_size && ci.dispatch_s == ci.dispatch_s)
        len += snprintf(note + len, note_size - (size_t)len,
                        " Each measured or fitted time includes the runtime's mean dispatch "
                        "time, %.1f us per task (from the same model).",
                        ci.dispatch_s * 1e6);
    if (len > 0 && (size_t)len < note_size && ci.other_devices)
        len += snprintf(note + len, note_size - (size_t)len,
                        " The model also has times of %zu device(s) this fabric lacks: runs "
                        "that placed tasks there are not what this simulates.",
                        ci.other_devices);
    if (len > 0 && (size_t)len < note_size && workers)
        len += snprintf(note + len, note_size - (size_t)len,
                        " %u CPU workers (%s), as 'synor run' has them.", workers,
                        l->cpu_workers ? "--cpu-workers" : "one per core");
    if (len > 0 && (size_t)len < note_size && sh_on && workers && pocl)
        snprintf(note + len, note_size - (size_t)len,
                 " With %s, an OpenCL CPU device that shares their cores (factors from %s), "
                 "placed on as the runtime does.",
                 pocl_name, sh_cache ? sh_cache : "a measurement, not cached: no cache directory");
    else if (len > 0 && (size_t)len < note_size && sh_on && workers)
        snprintf(note + len, note_size - (size_t)len,
                 " No OpenCL CPU device here: the CPU workers alone.");
    else if (len > 0 && (size_t)len < note_size && sh_skipped && workers)
        snprintf(note + len, note_size - (size_t)len,
                 " No OpenCL CPU device (PoCL) with changes to the fabric: the CPU workers "
                 "alone.");
    else if (len > 0 && (size_t)len < note_size && l->opencl_off && workers)
        snprintf(note + len, note_size - (size_t)len,
                 " No OpenCL device (--opencl off): the CPU workers alone.");
    synor_perfmodel_destroy(pm);
    synor_workload_destroy(w);
    *fo = f;
    *wo = cw;
    return CLI_OK;
}
