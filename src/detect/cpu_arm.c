/* cpu_arm.c - ARM64 ISA features from the auxiliary vector (HWCAP bits of
 * the Linux arm64 ABI). */
#include <sys/auxv.h>

#include "detect/detect_internal.h"

#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_SVE
#define HWCAP_SVE (1 << 22)
#endif
#ifndef HWCAP2_SVE2
#define HWCAP2_SVE2 (1 << 1)
#endif

void synor__cpu_features(synor_cpu_isa *isa, uint32_t *features, char *vendor, size_t n)
{
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    uint32_t f = 0;
    *isa = SYNOR_ISA_ARM64;
    if (hw & HWCAP_ASIMD)
        f |= SYNOR_CPU_NEON | SYNOR_CPU_FMA;
    if (hw & HWCAP_SVE)
        f |= SYNOR_CPU_SVE;
    if (hw2 & HWCAP2_SVE2)
        f |= SYNOR_CPU_SVE2;
    *features = f;
    synor__strlcpy(vendor, "arm", n);
}
