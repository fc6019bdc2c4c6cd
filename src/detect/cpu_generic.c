/* cpu_generic.c - ISA detection for architectures without a dedicated probe:
 * the ISA from the compiler, no vector features claimed. */
#include "detect/detect_internal.h"

void synor__cpu_features(synor_cpu_isa *isa, uint32_t *features, char *vendor, size_t n)
{
#if defined(__riscv) && __riscv_xlen == 64
    *isa = SYNOR_ISA_RISCV64;
#else
    *isa = SYNOR_ISA_UNKNOWN;
#endif
    *features = 0;
    synor__strlcpy(vendor, "", n);
}
