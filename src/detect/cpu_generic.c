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

/* A scalar multiply-add loop on twelve independent accumulators (the
 * compiler may contract it into FMAs; it counts 2 operations either way). */
#define DEFINE_SCALAR_LOOP(NAME, T)                                            \
    static double NAME(uint64_t iters)                                         \
    {                                                                          \
        T a[12];                                                               \
        const T m = (T)0.999999, c = (T)1e-6;                                  \
        for (int k = 0; k < 12; k++)                                           \
            a[k] = (T)(0.5 + 0.01 * k);                                        \
        for (uint64_t i = 0; i < iters; i++)                                   \
            for (int k = 0; k < 12; k++)                                       \
                a[k] = a[k] * m + c;                                           \
        double s = 0;                                                          \
        for (int k = 0; k < 12; k++)                                           \
            s += (double)a[k];                                                 \
        return s;                                                              \
    }
DEFINE_SCALAR_LOOP(scalar_f64, double)
DEFINE_SCALAR_LOOP(scalar_f32, float)

size_t synor__cpu_fma_loops(uint32_t features, synor__fma_loop *out, size_t max)
{
    (void)features;
    const synor__fma_loop all[] = {{"scalar", SYNOR_DTYPE_FP64, 12 * 2, scalar_f64},
                                   {"scalar", SYNOR_DTYPE_FP32, 12 * 2, scalar_f32}};
    size_t n = 0;
    for (; n < SYNOR__ARRAY_LEN(all) && n < max; n++)
        out[n] = all[n];
    return n;
}
