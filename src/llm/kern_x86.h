/* kern_x86.h - what the x86-64 kernel files share: the target attributes
 * that compile a function for an instruction set (T2: AVX2 + FMA + F16C,
 * the avx2 table; T5: AVX-512 F, BW, VL and VNNI, which the avx512 table
 * requires, with the same), and the horizontal sum of 8 floats, in the one
 * order every AVX2 product reduces in ((0+4)+(2+6)) + ((1+5)+(3+7)): a
 * batch tile's row is then bitwise what the one-row product gives. Only
 * for x86-64 builds; each function is reached through the kernel table
 * synor__llm_kernels chose for the CPU (kern.c). */
#ifndef SYNOR_LLM_KERN_X86_H
#define SYNOR_LLM_KERN_X86_H

#include <immintrin.h>

#define T2 __attribute__((target("avx2,fma,f16c")))
#define T5 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

T2 static inline float x86_hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#endif
