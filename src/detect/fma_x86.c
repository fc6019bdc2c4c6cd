/* fma_x86.c - the FMA throughput loops of x86-64, one per ISA level
 * (synor__cpu_fma_loops), measured by peak.c.
 *
 * This file is always compiled with optimisation and without sanitizers
 * (CMakeLists.txt): the loops touch no memory, and at -O0 or under a
 * sanitizer their accumulators would live on the stack and every step
 * would be a load, a store and a check - the measurement would time the
 * build, not the processor. */
#include <immintrin.h>
#include <string.h>

#include "detect/detect_internal.h"

/* Twelve independent accumulators: with an FMA latency of 4 cycles and two
 * FMA ports (Skylake-SP, Zen 4/5) eight chains keep every port busy; twelve
 * leave headroom for a latency of 6. Each step is a = a * m + c with m just
 * below 1, so the values converge to c / (1 - m) and never overflow or
 * become denormal. Compiled for their ISA by a target attribute: the
 * library itself is built for baseline x86-64, and only the levels cpuid
 * and the OS allow are ever called. */

#define FMA_ACC 12

#define DEFINE_FMA_LOOP(NAME, TARGET, VEC, SET1, FMA, ADD, REDUCE)             \
    __attribute__((target(TARGET))) static double NAME(uint64_t iters)         \
    {                                                                          \
        VEC a[FMA_ACC];                                                        \
        const VEC m = SET1(0.999999), c = SET1(1e-6);                          \
        for (int k = 0; k < FMA_ACC; k++)                                      \
            a[k] = SET1(0.5 + 0.01 * k);                                       \
        for (uint64_t i = 0; i < iters; i++) {                                 \
            a[0] = FMA(a[0], m, c);                                            \
            a[1] = FMA(a[1], m, c);                                            \
            a[2] = FMA(a[2], m, c);                                            \
            a[3] = FMA(a[3], m, c);                                            \
            a[4] = FMA(a[4], m, c);                                            \
            a[5] = FMA(a[5], m, c);                                            \
            a[6] = FMA(a[6], m, c);                                            \
            a[7] = FMA(a[7], m, c);                                            \
            a[8] = FMA(a[8], m, c);                                            \
            a[9] = FMA(a[9], m, c);                                            \
            a[10] = FMA(a[10], m, c);                                          \
            a[11] = FMA(a[11], m, c);                                          \
        }                                                                      \
        VEC s = a[0];                                                          \
        for (int k = 1; k < FMA_ACC; k++)                                      \
            s = ADD(s, a[k]);                                                  \
        return REDUCE(s);                                                      \
    }

__attribute__((target("avx512f"))) static double sum512d(__m512d v)
{
    return _mm512_reduce_add_pd(v);
}
__attribute__((target("avx512f"))) static double sum512s(__m512 v)
{
    return (double)_mm512_reduce_add_ps(v);
}
__attribute__((target("avx"))) static double sum256d(__m256d v)
{
    double x[4];
    _mm256_storeu_pd(x, v);
    return x[0] + x[1] + x[2] + x[3];
}
__attribute__((target("avx"))) static double sum256s(__m256 v)
{
    float x[8];
    _mm256_storeu_ps(x, v);
    double s = 0;
    for (int i = 0; i < 8; i++)
        s += x[i];
    return s;
}
static double sum128d(__m128d v)
{
    double x[2];
    _mm_storeu_pd(x, v);
    return x[0] + x[1];
}
static double sum128s(__m128 v)
{
    float x[4];
    _mm_storeu_ps(x, v);
    return (double)x[0] + x[1] + x[2] + x[3];
}
/* SSE2 has no FMA: a multiply and an add, 2 operations, as FMA counts. */
static __m128d sse_fma_pd(__m128d a, __m128d m, __m128d c) { return _mm_add_pd(_mm_mul_pd(a, m), c); }
static __m128 sse_fma_ps(__m128 a, __m128 m, __m128 c) { return _mm_add_ps(_mm_mul_ps(a, m), c); }
static __m128 sse_set1_ps(double v) { return _mm_set1_ps((float)v); }
__attribute__((target("avx"))) static __m256 avx_set1_ps(double v) { return _mm256_set1_ps((float)v); }
__attribute__((target("avx512f"))) static __m512 avx512_set1_ps(double v)
{
    return _mm512_set1_ps((float)v);
}

DEFINE_FMA_LOOP(fma512d, "avx512f", __m512d, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd,
                sum512d)
DEFINE_FMA_LOOP(fma512s, "avx512f", __m512, avx512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps,
                sum512s)
DEFINE_FMA_LOOP(fma256d, "avx2,fma", __m256d, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd,
                sum256d)
DEFINE_FMA_LOOP(fma256s, "avx2,fma", __m256, avx_set1_ps, _mm256_fmadd_ps, _mm256_add_ps,
                sum256s)
DEFINE_FMA_LOOP(mad128d, "sse2", __m128d, _mm_set1_pd, sse_fma_pd, _mm_add_pd, sum128d)
DEFINE_FMA_LOOP(mad128s, "sse2", __m128, sse_set1_ps, sse_fma_ps, _mm_add_ps, sum128s)

size_t synor__cpu_fma_loops(uint32_t f, synor__fma_loop *out, size_t max)
{
    const synor__fma_loop all[] = {
        {"avx512f", SYNOR_DTYPE_FP64, FMA_ACC * 8 * 2, fma512d},
        {"avx512f", SYNOR_DTYPE_FP32, FMA_ACC * 16 * 2, fma512s},
        {"avx2+fma", SYNOR_DTYPE_FP64, FMA_ACC * 4 * 2, fma256d},
        {"avx2+fma", SYNOR_DTYPE_FP32, FMA_ACC * 8 * 2, fma256s},
        {"sse2", SYNOR_DTYPE_FP64, FMA_ACC * 2 * 2, mad128d},
        {"sse2", SYNOR_DTYPE_FP32, FMA_ACC * 4 * 2, mad128s},
    };
    size_t n = 0;
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(all) && n < max; i++) {
        int ok = !strcmp(all[i].isa, "avx512f")    ? (f & SYNOR_CPU_AVX512F) != 0
                 : !strcmp(all[i].isa, "avx2+fma") ? (f & SYNOR_CPU_AVX2) && (f & SYNOR_CPU_FMA)
                                                   : 1;
        if (ok)
            out[n++] = all[i];
    }
    return n;
}

/* Non-temporal stores (SSE2, in every x86-64): a copy larger than the
 * caches goes to memory without first reading each destination line, as
 * the C library's memcpy does for large sizes; so the figure is what a
 * large copy achieves, not 2/3 of it. */
void synor__stream_copy(double *restrict c, const double *restrict a, size_t n)
{
    size_t i = 0;
    if (((uintptr_t)c & 15) == 0) {
        for (; i + 8 <= n; i += 8) {
            _mm_stream_pd(c + i, _mm_loadu_pd(a + i));
            _mm_stream_pd(c + i + 2, _mm_loadu_pd(a + i + 2));
            _mm_stream_pd(c + i + 4, _mm_loadu_pd(a + i + 4));
            _mm_stream_pd(c + i + 6, _mm_loadu_pd(a + i + 6));
        }
        _mm_sfence();
    }
    for (; i < n; i++)
        c[i] = a[i];
}

void synor__stream_fill(double *a, size_t n, double v)
{
    for (size_t i = 0; i < n; i++)
        a[i] = v;
}
