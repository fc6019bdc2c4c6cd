/* synor/detect.h - detection of the processors of this machine.
 *
 * Sources, each probed independently (a missing one is a note, not an
 * error):
 *   host   - the CPU through hwloc (packages, cores, threads, caches, NUMA
 *            nodes) and its ISA features through cpuid (x86) or the auxiliary
 *            vector (ARM). With SYNOR_DETECT_MEASURE its fp64 and fp32 peak
 *            and memory bandwidth are measured: an FMA loop per ISA level
 *            on every core at once, and a copy on every core (~0.3 s; the
 *            other data types scale from the measured fp32 rate by the
 *            ratios of the derived rule). Without it, the peak is derived
 *            from cores x base clock x FLOPs per cycle per data type, which
 *            misses the clock the cores really sustain. The device's detail
 *            "peak_source" says which ("measured ...", "derived ...",
 *            "profile ...").
 *   cuda   - NVIDIA GPUs through NVML and the CUDA driver API, both loaded at
 *            run time with dlopen: no driver or no GPU gives zero GPUs.
 *   opencl - OpenCL platforms and devices through the ICD loader (when the
 *            library was built with OpenCL).
 * A detected device takes the capabilities of the catalog profile whose match
 * string occurs in its name (live figures such as memory and core count
 * override the profile's), otherwise capabilities derived from what was
 * detected; synor_device_caps_origin() says which. */
#ifndef SYNOR_DETECT_H
#define SYNOR_DETECT_H

#include <stddef.h>

#include "synor/device.h"
#include "synor/profile.h"
#include "synor/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    SYNOR_DETECT_HOST = 1 << 0,
    SYNOR_DETECT_CUDA = 1 << 1,
    SYNOR_DETECT_OPENCL = 1 << 2,
    SYNOR_DETECT_MEASURE = 1 << 3, /* measure the host's peak and bandwidth (~0.3 s) */
    SYNOR_DETECT_ALL = 0xf,
    /* with MEASURE and a cache: measure even when the cache holds this
     * machine's figures, and rewrite it (not part of ALL) */
    SYNOR_DETECT_REMEASURE = 1 << 4
};

typedef struct synor_detection synor_detection;

/* Probes the sources in `sources`. catalog may be NULL (no profile
 * matching). Fails only on bad arguments or out of memory. */
int synor_detect_run(const synor_catalog *catalog, unsigned sources, synor_detection **out);
/* As synor_detect_run, with the host's measured figures kept in the file
 * measure_cache (format synor-host-measure/1) under the machine's identity
 * (CPU model, vendor, ISA features, cores, threads, clock, library
 * version): a cache of this identity is read instead of measuring; a
 * missing one, one of another identity or an unreadable one is measured
 * again and (re)written atomically, with a detection note saying why.
 * measure_cache NULL: as synor_detect_run. */
int synor_detect_run_cached(const synor_catalog *catalog, unsigned sources,
                            const char *measure_cache, synor_detection **out);
/* The default cache: $XDG_CACHE_HOME/synor/host-measure.json, else
 * ~/.cache/synor/host-measure.json. SYNOR_ENOENT when neither is set,
 * SYNOR_ERANGE when buf is too small (buf untouched). */
int synor_detect_default_cache_path(char *buf, size_t size);
void synor_detection_destroy(synor_detection *d);

size_t synor_detection_count(const synor_detection *d);
/* Borrowed: valid while d lives (take a reference to keep it longer). */
synor_device *synor_detection_device(const synor_detection *d, size_t i);
/* The registry id detection proposes for device i: "local-cpu0",
 * "local-cuda0", "local-opencl0", ... */
const char *synor_detection_device_id(const synor_detection *d, size_t i);

/* What each source found or why it found nothing ("cuda: libcuda.so.1 not
 * found: ..."). */
size_t synor_detection_note_count(const synor_detection *d);
const char *synor_detection_note(const synor_detection *d, size_t i);

/* Registers every detected device in reg under its proposed id, owner
 * "local", region as given (may be NULL). All or nothing. */
int synor_detection_register(const synor_detection *d, synor_registry *reg, const char *region);

#ifdef __cplusplus
}
#endif
#endif
