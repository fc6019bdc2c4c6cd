/* detect_internal.h - what the detection sources share. Never installed. */
#ifndef SYNOR_DETECT_INTERNAL_H
#define SYNOR_DETECT_INTERNAL_H

#include "common/common.h"
#include "synor/detect.h"

typedef struct synor__detect_ctx {
    synor_detection *out;
    const synor_catalog *cat;
    unsigned sources;
    const char *measure_cache; /* NULL: measure without caching */
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

/* A floating-point throughput loop of one ISA level (cpu_<arch>.c): fn runs
 * iters iterations of FMAs on independent register accumulators (enough to
 * cover the FMA latency on every port) and returns a value derived from
 * them so the work cannot be optimised away; each iteration performs
 * flops_per_iter floating-point operations (an FMA counts 2). */
typedef struct synor__fma_loop {
    const char *isa;  /* "avx512f", "avx2+fma", "sse2", "neon", "scalar" */
    synor_dtype dtype; /* SYNOR_DTYPE_FP64 or SYNOR_DTYPE_FP32 */
    unsigned flops_per_iter;
    double (*fn)(uint64_t iters);
} synor__fma_loop;

/* STREAM's copy kernel, c[i] = a[i] over n doubles, and a fill; in the
 * loop files, so that they too run optimised and uninstrumented. */
void synor__stream_copy(double *restrict c, const double *restrict a, size_t n);
void synor__stream_fill(double *a, size_t n, double v);

/* The loops this CPU can run (features from synor__cpu_features), best ISA
 * first; returns how many were written (at most max). */
size_t synor__cpu_fma_loops(uint32_t features, synor__fma_loop *out, size_t max);

/* The host's measured figures: the FMA throughput of every ISA level over
 * all cores per data type, the best of them, and the copy bandwidth of all
 * cores (peak.c). */
typedef struct synor__host_level {
    char isa[16];
    synor_dtype dtype;
    double flops;               /* FLOP/s, all cores */
} synor__host_level;

typedef struct synor__host_measure {
    double fp64, fp32;          /* FLOP/s, the best ISA level, all cores */
    char fp64_isa[16], fp32_isa[16];
    synor__host_level level[8];
    size_t n_levels;
    double copy_bw;             /* bytes read + written per second, all cores */
    unsigned threads;           /* threads the measurement ran, one per core */
    char when[32];              /* UTC date and time of the measurement */
    int from_cache;             /* 1: read from the cache, not measured now */
} synor__host_measure;

/* Measures (or, when cache names a file whose identity matches and
 * read_cache is set, reads) the host's figures; identity is a string naming the machine (model, features,
 * cores, clock, library version). A missing or unreadable cache is no
 * error: the figures are measured and the cache (re)written; note gets why
 * a cache was not used or could not be written ("" when it was used or
 * saved). Fails only when nothing could be measured. */
int synor__host_measure_run(const char *identity, unsigned cores, uint32_t features,
                            const char *cache, int read_cache, synor__host_measure *out,
                            char *note, size_t note_size);

/* Applies a matched profile to detected caps: the profile's figures, with
 * the live memory size (when known) overriding the profile's. */
void synor__caps_from_match(synor_caps *caps, const synor_profile *p, uint64_t live_mem);

#endif
