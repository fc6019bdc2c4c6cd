/* cpu_x86.c - x86-64 ISA features from cpuid, checked against the register
 * state the OS enables (xgetbv): a CPU with AVX-512 under an OS that does not
 * save ZMM registers cannot use it. Bits per the Intel SDM vol. 2A, CPUID. */
#include <cpuid.h>
#include <stdint.h>
#include <string.h>

#include "detect/detect_internal.h"

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

void synor__cpu_features(synor_cpu_isa *isa, uint32_t *features, char *vendor, size_t n)
{
    unsigned a, b, c, d;
    uint32_t f = 0;
    *isa = SYNOR_ISA_X86_64;
    if (!__get_cpuid(0, &a, &b, &c, &d)) {
        *features = 0;
        synor__strlcpy(vendor, "", n);
        return;
    }
    unsigned max_leaf = a;
    char v[13];
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    v[12] = '\0';
    synor__strlcpy(vendor, v, n);

    __get_cpuid(1, &a, &b, &c, &d);
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1;
    uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    int ymm_ok = (xcr0 & 0x6) == 0x6;          /* SSE + AVX state */
    int zmm_ok = ymm_ok && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
    int amx_ok = (xcr0 & 0x60000) == 0x60000;  /* XTILECFG, XTILEDATA */
    if (fma && avx && ymm_ok)
        f |= SYNOR_CPU_FMA;
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        if (ymm_ok && ((b >> 5) & 1))
            f |= SYNOR_CPU_AVX2;
        if (zmm_ok) {
            if ((b >> 16) & 1) f |= SYNOR_CPU_AVX512F;
            if ((b >> 17) & 1) f |= SYNOR_CPU_AVX512DQ;
            if ((b >> 28) & 1) f |= SYNOR_CPU_AVX512CD;
            if ((b >> 30) & 1) f |= SYNOR_CPU_AVX512BW;
            if ((b >> 31) & 1) f |= SYNOR_CPU_AVX512VL;
            if ((c >> 11) & 1) f |= SYNOR_CPU_AVX512_VNNI;
            if ((d >> 23) & 1) f |= SYNOR_CPU_AVX512_FP16;
        }
        if (amx_ok) {
            if ((d >> 22) & 1) f |= SYNOR_CPU_AMX_BF16;
            if ((d >> 24) & 1) f |= SYNOR_CPU_AMX_TILE;
            if ((d >> 25) & 1) f |= SYNOR_CPU_AMX_INT8;
        }
        unsigned sub = a;
        if (sub >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            if (zmm_ok && ((a >> 5) & 1))
                f |= SYNOR_CPU_AVX512_BF16;
        }
    }
    *features = f;
}
