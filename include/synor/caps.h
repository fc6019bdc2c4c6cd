/* synor/caps.h - what a processor can do (seed 001, §1.2).
 *
 * synor_caps is a plain, documented value struct. All quantities are in SI
 * base units (operations per second, bytes, bytes per second, watts,
 * seconds) so estimates need no unit juggling; profile files use the units
 * vendors quote (TFLOPS, GB/s) and are converted on load. */
#ifndef SYNOR_CAPS_H
#define SYNOR_CAPS_H

#include <stdint.h>

#include "synor/op.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SYNOR_MEM_TYPE_MAP(X) \
    X(UNKNOWN, "unknown")     \
    X(HBM2, "hbm2")           \
    X(HBM2E, "hbm2e")         \
    X(HBM3, "hbm3")           \
    X(HBM3E, "hbm3e")         \
    X(GDDR6, "gddr6")         \
    X(GDDR6X, "gddr6x")       \
    X(DDR3, "ddr3")           \
    X(DDR4, "ddr4")           \
    X(DDR5, "ddr5")           \
    X(LPDDR4X, "lpddr4x")     \
    X(LPDDR5, "lpddr5")       \
    X(LPDDR5X, "lpddr5x")     \
    X(SRAM, "sram")           \
    X(UNIFIED, "unified")

typedef enum synor_mem_type {
#define SYNOR__MT_ENUM(e, s) SYNOR_MEM_##e,
    SYNOR_MEM_TYPE_MAP(SYNOR__MT_ENUM)
#undef SYNOR__MT_ENUM
    SYNOR_MEM_TYPE_COUNT
} synor_mem_type;

/* Workload characteristics a processor is best at ("optimal for"). */
#define SYNOR_TRAIT_MAP(X)                   \
    X(HIGHLY_PARALLEL, "highly_parallel")    \
    X(SEQUENTIAL, "sequential")              \
    X(MEMORY_BOUND, "memory_bound")          \
    X(COMPUTE_BOUND, "compute_bound")        \
    X(LOW_LATENCY, "low_latency")            \
    X(LOW_POWER, "low_power")                \
    X(LARGE_BATCH, "large_batch")            \
    X(SMALL_BATCH, "small_batch")            \
    X(VARIABLE_LENGTH, "variable_length")    \
    X(FIXED_SHAPE, "fixed_shape")

typedef enum synor_trait {
#define SYNOR__TR_ENUM(e, s) SYNOR_TRAIT_##e,
    SYNOR_TRAIT_MAP(SYNOR__TR_ENUM)
#undef SYNOR__TR_ENUM
    SYNOR_TRAIT_COUNT
} synor_trait;

const char *synor_mem_type_name(synor_mem_type t);
int synor_mem_type_from_name(const char *name, synor_mem_type *out);
const char *synor_trait_name(synor_trait t);
int synor_trait_from_name(const char *name, synor_trait *out);

/* Peak throughput for one data type, in operations per second. 0 means the
 * data type is not supported on that path. `sparse` is the figure with 2:4
 * structured sparsity (equal to dense where the hardware has none). */
typedef struct synor_throughput {
    double dense;
    double sparse;
} synor_throughput;

typedef struct synor_caps {
    synor_throughput peak[SYNOR_DTYPE_COUNT]; /* indexed by synor_dtype */

    uint64_t mem_bytes;      /* device memory capacity; for unified memory, the
                                share the processor can address */
    double mem_bandwidth;    /* bytes per second */
    synor_mem_type mem_type;

    synor_op_set ops;        /* operations it can execute */
    synor_dtype_set dtypes;  /* data types it can compute in */
    uint32_t optimal_for;    /* bit (1 << synor_trait) */

    double idle_watts;
    double peak_watts;       /* TDP / board power */

    int pcie_gen;            /* 0 = no PCIe attachment */
    int pcie_lanes;
    double nvlink_bandwidth; /* bytes/s, aggregate; also other GPU-to-GPU
                                fabrics (Infinity Fabric, ICI) */
    int unified_memory;      /* shares memory with the host CPU */
    double network_bandwidth; /* bytes/s of the network port(s); 0 = none */

    double launch_latency;   /* seconds from submit to start of work */
    double efficiency;       /* fraction of peak a well-tuned kernel reaches,
                                (0, 1]; a model parameter, not a datasheet
                                figure */
} synor_caps;

/* Host<->device bandwidth of the PCIe link in bytes/s per direction
 * (0 when pcie_gen is 0). Gen 3: 0.985 GB/s per lane, doubling per gen. */
double synor_caps_pcie_bandwidth(const synor_caps *c);

/* Best peak for dtype, using the sparse figure when sparse is non-zero. */
double synor_caps_peak(const synor_caps *c, synor_dtype t, int sparse);

#ifdef __cplusplus
}
#endif
#endif
