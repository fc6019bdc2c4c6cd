/* whatif.c - this machine as a fabric, and what-if fabrics around it
 * (synor/whatif.h).
 *
 * Each detected host CPU or CUDA GPU becomes a profile of the catalog
 * (id: its detection id, "local-cpu0") whose figures are the detected
 * device's - the CPU's peak and bandwidth measured when detection measured
 * them - and whose sources say so; then a fabric description (JSON, as a
 * user would write one) names them and the changes, and the fabric loader
 * builds it, so a what-if fabric is checked like any other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "whatif/whatif_internal.h"

int64_t synor_whatif_price(const synor_catalog *cat, const char *profile)
{
    for (size_t i = 0; i < synor_fabric_builtin_count(); i++) {
        synor_fabric *f;
        if (synor_fabric_load_builtin(cat, synor_fabric_builtin_name(i), &f))
            continue;
        int64_t price = 0;
        for (size_t k = 0; k < synor_fabric_device_count(f) && !price; k++) {
            const synor_fabric_device *fd = synor_fabric_device_at(f, k);
            if (fd->profile && !strcmp(fd->profile->id, profile))
                price = fd->price_micro;
        }
        synor_fabric_destroy(f);
        if (price)
            return price;
    }
    return 0;
}

int synor__whatif_add_profile(synor_catalog *cat, synor_device *dev, const char *id,
                              unsigned share, const synor_whatif_run_device *standin)
{
    synor_profile p;
    memset(&p, 0, sizeof p);
    p.id = id;
    char name[320];
    snprintf(name, sizeof name, share > 1 ? "%s, one of %u workers" : "%s",
             synor_device_name(dev), share);
    if (standin)
        snprintf(name, sizeof name, "%s (not detected: %s's figures)",
                 standin->product ? standin->product : standin->name, synor_device_name(dev));
    p.name = name;
    const char *vendor = synor_device_detail_get(dev, "cpu_vendor");
    p.vendor = vendor ? vendor : "detected";
    p.type = *synor_device_type(dev);
    p.caps = *synor_device_caps(dev);
    if (p.caps.peak_watts < p.caps.idle_watts)
        p.caps.peak_watts = p.caps.idle_watts;
    if (p.caps.efficiency <= 0 || p.caps.efficiency > 1)
        p.caps.efficiency = 1;
    if (share > 1) {
        for (int k = 0; k < SYNOR_DTYPE_COUNT; k++) {
            p.caps.peak[k].dense /= share;
            p.caps.peak[k].sparse /= share;
        }
        p.caps.mem_bandwidth /= share;
        p.caps.peak_watts /= share;
        p.caps.idle_watts /= share;
    }
    char compute[400], memory[300];
    const char *peak = synor_device_detail_get(dev, "peak_source");
    snprintf(compute, sizeof compute, "this machine (synor devices): %s",
             peak ? peak
                  : synor_device_caps_origin(dev) == SYNOR_CAPS_FROM_PROFILE_MATCH
                        ? "the figures of the profile its name matches"
                        : "derived from what was detected");
    snprintf(memory, sizeof memory,
             "this machine (synor devices): capacity detected; bandwidth %s",
             synor_device_detail_get(dev, "measured_copy_bw_bytes_s")
                 ? "measured (a copy on every core)"
                 : "from the matching profile or derived");
    if (standin) {
        if (standin->memory)
            p.caps.mem_bytes = standin->memory;
        snprintf(compute, sizeof compute,
                 "not detected (synor devices does not describe it): the host CPU's figures "
                 "stand in until the performance model has its times");
        snprintf(memory, sizeof memory, "the runtime's memory capacity for the device");
    }
    p.source_compute = compute;
    p.source_memory = memory;
    p.source_power = p.caps.peak_watts > 0 ? "the profile its name matches"
                                           : "not known for this device: 0 W (its energy is "
                                             "not modelled)";
    p.source_links = "this machine (synor devices)";
    p.source_latency = "the detected backend's launch latency";
    p.notes = "Built by synor whatif from detection; not a catalog product.";
    char *one = synor_profile_to_json(&p, 0);
    if (!one)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    size_t len = strlen(one) + 64;
    char *file = synor__malloc(len);
    if (!file) {
        free(one);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    snprintf(file, len, "{\"format\": \"synor-profiles/1\", \"profiles\": [%s]}", one);
    free(one);
    int rc = synor_catalog_load_string(cat, file, strlen(file), "local");
    synor__free(file);
    return rc;
}

static void emit_device(synor__buf *b, const char *name, const char *profile, unsigned count,
                        int64_t price, int *first)
{
    char money[64];
    synor_money_format(price, money, sizeof money);
    synor__buf_printf(b,
                      "%s\n {\"name\": \"%s\", \"profile\": \"%s\", \"node\": \"host\", "
                      "\"count\": %u, \"price_per_hour\": \"%s\"}",
                      *first ? "" : ",", name, profile, count ? count : 1, money);
    *first = 0;
}

int synor_whatif_fabric(synor_catalog *cat, const synor_detection *d,
                        const synor_whatif_change *changes, size_t n_changes, synor_fabric **out)
{
    return synor_whatif_fabric_workers(cat, d, 0, changes, n_changes, out);
}

int synor_whatif_is_cpu_device(const synor_fabric_device *fd, unsigned cpu_workers)
{
    if (!fd || !fd->profile || !fd->profile->id)
        return 0;
    char id[48];
    snprintf(id, sizeof id, cpu_workers > 1 ? "local-cpu0-worker%u" : "local-cpu0", cpu_workers);
    return !strcmp(fd->profile->id, id);
}

int synor_whatif_fabric_workers(synor_catalog *cat, const synor_detection *d, unsigned cpu_workers,
                                const synor_whatif_change *changes, size_t n_changes,
                                synor_fabric **out)
{
    if (cpu_workers > 1024)
        return synor__error(SYNOR_EINVAL, "%u CPU workers: 1 to 1024", cpu_workers);
    for (size_t k = 0; k < n_changes; k++) {
        if (!changes[k].profile || !synor_catalog_find(cat, changes[k].profile))
            return synor__error(SYNOR_ENOENT, "no profile \"%s\" (synor profiles lists them)",
                                changes[k].profile ? changes[k].profile : "(null)");
        if (!changes[k].replace && (changes[k].count < 1 || changes[k].count > 1024))
            return synor__error(SYNOR_EINVAL, "adding %u of \"%s\": 1 to 1024", changes[k].count,
                                changes[k].profile);
    }
    synor__buf b;
    synor__buf_init(&b);
    const char *head = "{\"format\": \"synor-fabric/1\", \"name\": \"local\", \"currency\": "
                       "\"USD\", \"notes\": \"This machine as detected, its CPU's peak and "
                       "bandwidth measured; added processors simulated from their profiles.\", "
                       "\"nodes\": [{\"name\": \"host\"}], \"devices\": [";
    synor__buf_puts(&b, head);
    int rc = 0, first = 1;
    size_t n_local = 0, cpu = 0, gpu = 0;
    for (size_t i = 0; !rc && i < synor_detection_count(d); i++) {
        synor_device *dev = synor_detection_device(d, i);
        const char *backend = synor_device_backend(dev);
        int is_cpu = !strcmp(backend, "host"), is_gpu = !strcmp(backend, "CUDA");
        if (!is_cpu && !is_gpu) /* OpenCL on this CPU would count its cores twice */
            continue;
        char id[96];
        unsigned share = is_cpu && cpu_workers ? cpu_workers : 1;
        snprintf(id, sizeof id, share > 1 ? "%s-worker%u" : "%s",
                 synor_detection_device_id(d, i), share);
        char name[32];
        snprintf(name, sizeof name, is_cpu ? "cpu%zu" : "gpu%zu", is_cpu ? cpu++ : gpu++);
        if (!synor_catalog_find(cat, id) && (rc = synor__whatif_add_profile(cat, dev, id, share, NULL)))
            break;
        const char *swap = NULL;
        for (size_t k = 0; k < n_changes; k++)
            if (changes[k].replace && !strcmp(changes[k].replace, name))
                swap = changes[k].profile;
        if (swap)
            emit_device(&b, name, swap, 1, synor_whatif_price(cat, swap), &first);
        else
            emit_device(&b, name, id, share, 0, &first);
        n_local++;
    }
    for (size_t k = 0; !rc && k < n_changes; k++) {
        if (changes[k].replace) { /* the name must be a local device */
            int found = 0;
            for (size_t c = 0; c < cpu && !found; c++) {
                char name[32];
                snprintf(name, sizeof name, "cpu%zu", c);
                found = !strcmp(name, changes[k].replace);
            }
            for (size_t g = 0; g < gpu && !found; g++) {
                char name[32];
                snprintf(name, sizeof name, "gpu%zu", g);
                found = !strcmp(name, changes[k].replace);
            }
            if (!found)
                rc = synor__error(SYNOR_ENOENT,
                                  "--replace %s=%s: this machine has no device \"%s\" (its "
                                  "devices are cpu0, ... and gpu0, ...)",
                                  changes[k].replace, changes[k].profile, changes[k].replace);
            continue;
        }
        emit_device(&b, changes[k].profile, changes[k].profile, changes[k].count,
                    synor_whatif_price(cat, changes[k].profile), &first);
    }
    if (!rc && !n_local)
        rc = synor__error(SYNOR_ENODEV, "detection found no CPU or CUDA GPU on this machine");
    synor__buf_puts(&b, "]}");
    if (!rc && b.failed)
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
    if (!rc)
        rc = synor_fabric_load_string(cat, b.data, b.len, "local", out);
    synor__buf_free(&b);
    return rc;
}
