/* fma_arm.c - the FMA throughput loops of ARM64 (synor__cpu_fma_loops):
 * NEON, twelve independent 128-bit accumulators (fma_x86.c gives the
 * reasoning); compiled with optimisation and without sanitizers. */
#include <arm_neon.h>

#include "detect/detect_internal.h"

#define NEON_LOOP(NAME, VEC, DUP, FMA, ADD, REDUCE)                            \
    static double NAME(uint64_t iters)                                         \
    {                                                                          \
        VEC a[12];                                                             \
        const VEC m = DUP(0.999999), c = DUP(1e-6);                            \
        for (int k = 0; k < 12; k++)                                           \
            a[k] = DUP(0.5 + 0.01 * k);                                        \
        for (uint64_t i = 0; i < iters; i++)                                   \
            for (int k = 0; k < 12; k++)                                       \
                a[k] = FMA(c, a[k], m);                                        \
        VEC s = a[0];                                                          \
        for (int k = 1; k < 12; k++)                                           \
            s = ADD(s, a[k]);                                                  \
        return (double)REDUCE(s);                                              \
    }
NEON_LOOP(neon_f64, float64x2_t, vdupq_n_f64, vfmaq_f64, vaddq_f64, vaddvq_f64)
static float32x4_t dup_f32(double v) { return vdupq_n_f32((float)v); }
NEON_LOOP(neon_f32, float32x4_t, dup_f32, vfmaq_f32, vaddq_f32, vaddvq_f32)

size_t synor__cpu_fma_loops(uint32_t features, synor__fma_loop *out, size_t max)
{
    (void)features; /* NEON is part of the ARMv8-A base */
    const synor__fma_loop all[] = {{"neon", SYNOR_DTYPE_FP64, 12 * 2 * 2, neon_f64},
                                   {"neon", SYNOR_DTYPE_FP32, 12 * 4 * 2, neon_f32}};
    size_t n = 0;
    for (; n < SYNOR__ARRAY_LEN(all) && n < max; n++)
        out[n] = all[n];
    return n;
}

void synor__stream_copy(double *restrict c, const double *restrict a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        c[i] = a[i];
}

void synor__stream_fill(double *a, size_t n, double v)
{
    for (size_t i = 0; i < n; i++)
        a[i] = v;
}
