/* synor/detect.h - detection of the processors of this machine.
 *
 * Sources, each probed independently (a missing one is a note, not an
 * error):
 *   host   - the CPU through hwloc (packages, cores, threads, caches, NUMA
 *            nodes) and its ISA features through cpuid (x86) or the auxiliary
 *            vector (ARM); peak throughput derived from cores x clock x FLOPs
 *            per cycle per data type; memory bandwidth measured.
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
    SYNOR_DETECT_MEASURE = 1 << 3, /* measure host memory bandwidth (~0.1 s) */
    SYNOR_DETECT_ALL = 0xf
};

typedef struct synor_detection synor_detection;

/* Probes the sources in `sources`. catalog may be NULL (no profile
 * matching). Fails only on bad arguments or out of memory. */
int synor_detect_run(const synor_catalog *catalog, unsigned sources, synor_detection **out);
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
