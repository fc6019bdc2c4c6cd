/* run_fabric.c - a fabric of a real run's own devices (synor/whatif.h,
 * synor_whatif_run_fabric): each runtime device ("cpu", "openclK",
 * "cudaK") becomes a fabric device of the same name whose profile
 * ("local-run-<name>") is the detected device behind it, so a plan made
 * on it names devices the run has, and synor_whatif_calibrate finds the
 * run's performance-model entries by that name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/common.h"
#include "whatif/whatif_internal.h"

/* The k-th detected device of backend b ("host", "opencl", "cuda"); an
 * OpenCL device is matched by its product name first (the runtime opens
 * fewer OpenCL devices than detection lists when some cannot run). */
static synor_device *detected(const synor_detection *d, const char *b, unsigned k,
                              const char *product)
{
    synor_device *nth = NULL;
    unsigned seen = 0;
    for (size_t i = 0; i < synor_detection_count(d); i++) {
        synor_device *dev = synor_detection_device(d, i);
        if (strcasecmp(synor_device_backend(dev), b) != 0)
            continue;
        if (product && *product && !strcmp(synor_device_name(dev), product) &&
            !strcasecmp(b, "opencl"))
            return dev;
        if (seen++ == k)
            nth = dev;
    }
    return nth;
}

int synor_whatif_run_fabric(synor_catalog *cat, const synor_detection *d,
                            const synor_whatif_run_device *devs, size_t n, synor_fabric **out)
{
    *out = NULL;
    if (!n)
        return synor__error(SYNOR_EINVAL, "a run fabric needs at least one device");
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "{\"format\": \"synor-fabric/1\", \"name\": \"run\", \"currency\": "
                        "\"USD\", \"notes\": \"The devices of this real run, named as the "
                        "runtime names them, from detection.\", \"nodes\": [{\"name\": "
                        "\"host\"}], \"devices\": [");
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const char *name = devs[i].name;
        unsigned k = 0;
        int used = 0;
        synor_device *dev = NULL;
        const char *b_name = NULL;
        if (!strcmp(name, "cpu")) {
            b_name = "host";
        } else if (sscanf(name, "opencl%u%n", &k, &used) == 1 && !name[used]) {
            b_name = "opencl";
        } else if (sscanf(name, "cuda%u%n", &k, &used) == 1 && !name[used]) {
            b_name = "cuda";
        } else {
            rc = synor__error(SYNOR_EINVAL,
                              "run device '%s': a run fabric takes cpu, openclK and cudaK", name);
            break;
        }
        dev = detected(d, b_name, k, devs[i].product);
        if (devs[i].share_cpu_slowdown > 0 &&
            (strcmp(b_name, "opencl") != 0 || !dev || synor_device_kind(dev) != SYNOR_KIND_CPU)) {
            rc = synor__error(SYNOR_EINVAL,
                              "run device '%s': only an OpenCL CPU device shares the host's "
                              "cores (share_cpu_slowdown %g)",
                              name, devs[i].share_cpu_slowdown);
            break;
        }
        const synor_whatif_run_device *standin = NULL;
        if (!dev && strcmp(b_name, "host") != 0) { /* e.g. the CUDA test doubles */
            dev = detected(d, "host", 0, NULL);
            standin = &devs[i];
        }
        if (!dev) {
            rc = synor__error(SYNOR_ENODEV,
                              "run device '%s' (%s): detection found no %s device to describe "
                              "it (synor devices lists what it finds)",
                              name, devs[i].product ? devs[i].product : "", b_name);
            break;
        }
        /* the CPU as its workers: one device each, with its share */
        unsigned share = !strcmp(b_name, "host") && devs[i].workers > 1 ? devs[i].workers : 1;
        char id[96];
        if (share > 1)
            snprintf(id, sizeof id, "local-run-%s-w%u", name, share);
        else
            snprintf(id, sizeof id, "local-run-%s", name);
        if (!synor_catalog_find(cat, id) &&
            (rc = synor__whatif_add_profile(cat, dev, id, share, standin)))
            break;
        synor__buf_printf(&b,
                          "%s\n {\"name\": \"%s\", \"profile\": \"%s\", \"node\": \"host\", "
                          "\"count\": %u, \"price_per_hour\": \"0\"}",
                          i ? "," : "", name, id, share);
    }
    synor__buf_puts(&b, "]}");
    if (!rc && b.failed)
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
    if (!rc)
        rc = synor_fabric_load_string(cat, b.data, b.len, "run", out);
    synor__buf_free(&b);
    /* an OpenCL CPU device runs on the CPU workers' cores */
    for (size_t i = 0; !rc && i < n; i++) {
        if (!(devs[i].share_cpu_slowdown > 0))
            continue;
        for (size_t k = 0; k < synor_fabric_device_count(*out); k++)
            if (!strcmp(synor_fabric_device_at(*out, k)->name, devs[i].name))
                rc = synor_fabric_set_host_sharing(*out, k, devs[i].share_cpu_slowdown,
                                                   devs[i].share_slowdown);
    }
    if (rc) {
        synor_fabric_destroy(*out);
        *out = NULL;
    }
    return rc;
}
