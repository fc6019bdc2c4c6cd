/* fma_generic.c - the throughput loop of architectures without a dedicated
 * one (synor__cpu_fma_loops); compiled with optimisation and without
 * sanitizers, as fma_x86.c explains. */
#include "detect/detect_internal.h"

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
