/* kern_kv_x86.c - attention over an F16 KV cache for x86-64 (F16C's
 * vcvtph2ps / vcvtps2ph): AVX2 + FMA + F16C, and AVX-512; and the avx2
 * table's attention over an F32 cache (the avx512 table's is in
 * kern_x86.c). As kern_x86.c,
 * each function is compiled for its instruction set with a target
 * attribute and only reached through the kernel table synor__llm_kernels
 * chose for this CPU.
 *
 * The cache holds F16; scores, softmax weights and the weighted sums stay
 * fp32 (llama.cpp's CPU path converts the same way). Rows are rounded to
 * F16 to nearest even, bitwise what the portable synor_f32_to_f16 gives. */
#if defined(__x86_64__)
#include "llm/kern_x86.h"
#include "llm/llm_internal.h"
#include "synor/model.h"

T2 static inline __m256 ld8(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}

/* Attention of one head over an F32 cache, positions ks floats apart (a
 * KV block): the head's vectors in registers, no call per position, as the
 * avx512 table's. Heads of a multiple of 8 floats; others through the
 * portable loops (dot_f32 and axpy of the table, ctx.c's order). */
T2 void synor__llm_a2_att_scores(const float *q, const float *k, size_t ks, int np, int hs,
                                 float scale, float *out)
{
    if (hs % 8) {
        for (int p = 0; p < np; p++)
            out[p] = synor__llm_kernels_avx2.dot_f32(q, k + (size_t)p * ks, hs) * scale;
        return;
    }
    for (int p = 0; p < np; p++) {
        const float *kp = k + (size_t)p * ks;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0;
        int i = 0;
        for (; i + 16 <= hs; i += 16) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(kp + i), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(kp + i + 8), a1);
        }
        if (i < hs)
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(kp + i), a0);
        out[p] = x86_hsum8(_mm256_add_ps(a0, a1)) * scale;
    }
}

T2 void synor__llm_a2_att_mix(const float *a, const float *v, size_t vs, int np, int hs, float *o)
{
    if (hs % 8) {
        for (int p = 0; p < np; p++)
            synor__llm_kernels_avx2.axpy(a[p], v + (size_t)p * vs, o, hs);
        return;
    }
    for (int i = 0; i < hs; i += 8) {
        __m256 acc = _mm256_loadu_ps(o + i);
        for (int p = 0; p < np; p++)
            acc = _mm256_fmadd_ps(_mm256_set1_ps(a[p]), _mm256_loadu_ps(v + (size_t)p * vs + i),
                                  acc);
        _mm256_storeu_ps(o + i, acc);
    }
}

T2 void synor__llm_a2_att_scores_f16(const float *q, const uint16_t *k, size_t ks, int np, int hs,
                                     float scale, float *out)
{
    for (int p = 0; p < np; p++) {
        const uint16_t *kp = k + (size_t)p * ks;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0;
        int i = 0;
        for (; i + 16 <= hs; i += 16) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), ld8(kp + i), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), ld8(kp + i + 8), a1);
        }
        for (; i + 8 <= hs; i += 8)
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), ld8(kp + i), a0);
        float s = x86_hsum8(_mm256_add_ps(a0, a1));
        for (; i < hs; i++)
            s += q[i] * _cvtsh_ss(kp[i]);
        out[p] = s * scale;
    }
}

T2 void synor__llm_a2_att_mix_f16(const float *a, const uint16_t *v, size_t vs, int np, int hs,
                                  float *o)
{
    int i = 0;
    for (; i + 8 <= hs; i += 8) {
        __m256 acc = _mm256_loadu_ps(o + i);
        for (int p = 0; p < np; p++)
            acc = _mm256_fmadd_ps(_mm256_set1_ps(a[p]), ld8(v + (size_t)p * vs + i), acc);
        _mm256_storeu_ps(o + i, acc);
    }
    for (; i < hs; i++)
        for (int p = 0; p < np; p++)
            o[i] += a[p] * _cvtsh_ss(v[(size_t)p * vs + i]);
}

T2 void synor__llm_a2_to_f16(const float *x, uint16_t *y, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++)
        y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* ------------------------------------------------------------- AVX-512 */

T5 static inline __m512 ld16(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
}

/* Four positions at a time: four independent sums in flight, one
 * reduction each. Heads of a multiple of 16; others as AVX2. */
T5 void synor__llm_a5_att_scores_f16(const float *q, const uint16_t *k, size_t ks, int np, int hs,
                                     float scale, float *out)
{
    if (hs % 16) {
        synor__llm_a2_att_scores_f16(q, k, ks, np, hs, scale, out);
        return;
    }
    int p = 0;
    for (; p + 4 <= np; p += 4) {
        const uint16_t *k0 = k + (size_t)p * ks, *k1 = k0 + ks, *k2 = k1 + ks, *k3 = k2 + ks;
        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (int i = 0; i < hs; i += 16) {
            __m512 qv = _mm512_loadu_ps(q + i);
            s0 = _mm512_fmadd_ps(qv, ld16(k0 + i), s0);
            s1 = _mm512_fmadd_ps(qv, ld16(k1 + i), s1);
            s2 = _mm512_fmadd_ps(qv, ld16(k2 + i), s2);
            s3 = _mm512_fmadd_ps(qv, ld16(k3 + i), s3);
        }
        out[p] = _mm512_reduce_add_ps(s0) * scale;
        out[p + 1] = _mm512_reduce_add_ps(s1) * scale;
        out[p + 2] = _mm512_reduce_add_ps(s2) * scale;
        out[p + 3] = _mm512_reduce_add_ps(s3) * scale;
    }
    for (; p < np; p++) {
        const uint16_t *kp = k + (size_t)p * ks;
        __m512 s0 = _mm512_setzero_ps();
        for (int i = 0; i < hs; i += 16)
            s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), ld16(kp + i), s0);
        out[p] = _mm512_reduce_add_ps(s0) * scale;
    }
}

T5 void synor__llm_a5_att_mix_f16(const float *a, const uint16_t *v, size_t vs, int np, int hs,
                                  float *o)
{
    if (hs % 16) {
        synor__llm_a2_att_mix_f16(a, v, vs, np, hs, o);
        return;
    }
    for (int i = 0; i < hs; i += 16) {
        __m512 acc0 = _mm512_loadu_ps(o + i), acc1 = _mm512_setzero_ps();
        int p = 0;
        for (; p + 2 <= np; p += 2) {
            acc0 = _mm512_fmadd_ps(_mm512_set1_ps(a[p]), ld16(v + (size_t)p * vs + i), acc0);
            acc1 = _mm512_fmadd_ps(_mm512_set1_ps(a[p + 1]), ld16(v + (size_t)(p + 1) * vs + i),
                                   acc1);
        }
        if (p < np)
            acc0 = _mm512_fmadd_ps(_mm512_set1_ps(a[p]), ld16(v + (size_t)p * vs + i), acc0);
        _mm512_storeu_ps(o + i, _mm512_add_ps(acc0, acc1));
    }
}

T5 void synor__llm_a5_to_f16(const float *x, uint16_t *y, int n)
{
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(void *)(y + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(x + i),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    synor__llm_a2_to_f16(x + i, y + i, n - i);
}
#else
typedef int synor__llm_kern_kv_x86_empty;
#endif
