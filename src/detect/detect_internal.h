/* detect_internal.h - what the detection sources share. Never installed. */
#ifndef SYNOR_DETECT_INTERNAL_H
#define SYNOR_DETECT_INTERNAL_H

#include "common/common.h"
#include "synor/detect.h"

typedef struct synor__detect_ctx {
    synor_detection *out;
    const synor_catalog *cat;
    unsigned sources;
    int cuda_gpus; /* GPUs the cuda source found (OpenCL skips duplicates) */
} synor__detect_ctx;

/* Adds a device under id "local-<prefix><n>"; takes over the reference. */
int synor__detect_add(synor__detect_ctx *c, const char *prefix, synor_device *dev);
/* Records a note "source: text". Out of memory drops the note silently. */
void synor__detect_note(synor__detect_ctx *c, const char *source, const char *fmt, ...)
    SYNOR__PRINTF(3, 4);

int synor__detect_host(synor__detect_ctx *c);
int synor__detect_nvidia(synor__detect_ctx *c);
int synor__detect_opencl(synor__detect_ctx *c);

/* CPU ISA features of the running processor (cpu_x86.c / cpu_arm.c /
 * cpu_generic.c, one compiled per platform). vendor gets the vendor string
 * ("GenuineIntel", "AuthenticAMD", "arm", "") */
void synor__cpu_features(synor_cpu_isa *isa, uint32_t *features, char *vendor, size_t n);

/* Peak operations per cycle per core of a CPU with these features, per data
 * type (0 = no native path). */
void synor__cpu_ops_per_cycle(synor_cpu_isa isa, uint32_t features, const char *vendor,
                              double out[SYNOR_DTYPE_COUNT]);

/* Applies a matched profile to detected caps: the profile's figures, with
 * the live memory size (when known) overriding the profile's. */
void synor__caps_from_match(synor_caps *caps, const synor_profile *p, uint64_t live_mem);

#endif
