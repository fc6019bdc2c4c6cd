/* test_runtime_llm_kvtype.c - the F16 KV cache (synor_llm_ctx_opts.kv_type):
 * its kernels against the portable ones, its logits against the F32
 * cache's on the tiny model within a stated tolerance, greedy tokens the
 * same, batching not changing its results, and bad values refused naming
 * them. Runs under ThreadSanitizer too: a batch is tasks on several
 * workers. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "llm/llm_internal.h"
#include "synor/error.h"
#include "synor/llm.h"
#include "synor/model.h"
#include "synor/runtime.h"
#include "llm_fixture.h"
#include "test.h"

/* The largest logit difference between the F16 and the F32 cache, relative
 * to the largest |logit| (docs/LLM.md states it): keys and values rounded
 * to F16 carry a relative error of at most 2^-11 each. F32 weights: 1e-3
 * (measured 4.5e-5); Q8_0 weights: 1e-2 (measured 3.6e-3: a rounded value
 * can move an activation's Q8_0 rounding, a step of 1/127 of its block). */
static const double kv16_tolerance[2] = {1e-3, 1e-2};

static char dir[64];

static int tiny_model(const char *leaf, synor_ttype t, synor_llm **m)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/synor-kv16-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, leaf);
    synor_llm_synth s = llm_test_synth(2);
    int e = synor_llm_synth_gguf(&s, t, p);
    return e ? e : synor_llm_load(p, NULL, m);
}

static const int32_t prompt[] = {1, 40, 41, 42, 80, 300, 7, 99, 260, 261, 262, 5, 17};
#define NP ((int)(sizeof prompt / sizeof prompt[0]))
#define NGEN 40

static int argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b])
            b = i;
    return b;
}

/* prompt as one batch (every row's logits into out, NP x V), then NGEN
 * greedy tokens one per batch (their logits after, NGEN x V; the tokens
 * into toks). */
static int run(synor_llm_ctx *c, int V, float *out, int32_t *toks)
{
    unsigned seqs[NP] = {0};
    uint8_t want[NP];
    memset(want, 1, sizeof want);
    int e = synor_llm_batch(c, NP, prompt, seqs, want);
    for (int i = 0; !e && i < NP; i++)
        memcpy(out + (size_t)i * V, synor_llm_logits(c, (size_t)i), (size_t)V * sizeof(float));
    int32_t t = e ? 0 : argmax(out + (size_t)(NP - 1) * V, V);
    for (int g = 0; !e && g < NGEN; g++) {
        toks[g] = t;
        unsigned s0 = 0;
        e = synor_llm_batch(c, 1, &t, &s0, NULL);
        if (!e) {
            const float *l = synor_llm_logits(c, 0);
            memcpy(out + (size_t)(NP + g) * V, l, (size_t)V * sizeof(float));
            t = argmax(l, V);
        }
    }
    return e;
}

TEST(f16_kernels_agree_with_portable)
{
    const llm_kernels *k = synor__llm_kernels(), *g = &synor__llm_kernels_generic;
    ASSERT(k->att_scores_f16 && k->att_mix_f16 && k->to_f16);
    enum { HS = 64, KS = 72, NPOS = 16 };
    static float q[HS], kvf[NPOS * KS], a[NPOS], s1[NPOS], s2[NPOS], o1[HS], o2[HS];
    static uint16_t kv[NPOS * KS], kv2[NPOS * KS];
    uint64_t st = 9;
    for (int i = 0; i < NPOS * KS; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        kvf[i] = (float)((int)(st >> 40) % 2001 - 1000) / 700.0f;
        if (i < HS)
            q[i] = kvf[i] * 0.3f;
        if (i < NPOS)
            a[i] = (float)((int)(st >> 20) % 1000) / 1000.0f;
    }
    /* rounding to F16 is bitwise the portable round-to-nearest-even, on
     * ordinary values, halfway cases, subnormals, overflow and zeros */
    static const float edge[] = {0.0f, -0.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65504.0f,
                                 65520.0f, 1e6f, -1e6f, 6.0e-8f, 3.0e-8f, 1e-5f, -2.5e-6f,
                                 0.33333334f, -7.0f / 3, 5.96e-8f, 65519.0f, 2049.0f};
    static float src[NPOS * KS];
    memcpy(src, kvf, sizeof src);
    memcpy(src, edge, sizeof edge);
    for (int n = 1; n <= NPOS * KS; n += n < 40 ? 1 : 97) {
        k->to_f16(src, kv, n);
        g->to_f16(src, kv2, n);
        for (int i = 0; i < n; i++)
            if (kv[i] != kv2[i] || kv[i] != synor_f32_to_f16(src[i]))
                TEST__FAIL("%s to_f16(%g) = 0x%04x, portable 0x%04x", k->isa, (double)src[i],
                           kv[i], kv2[i]);
    }
    k->to_f16(kvf, kv, NPOS * KS); /* the cache the attention kernels read */
    static const int heads[] = {16, 64, 20, 8, 3};
    for (int h = 0; h < 5; h++)
        for (int np = 1; np <= NPOS; np++) {
            int hs = heads[h];
            k->att_scores_f16(q, kv, KS, np, hs, 0.125f, s1);
            g->att_scores_f16(q, kv, KS, np, hs, 0.125f, s2);
            for (int p = 0; p < np; p++)
                if (!(fabsf(s1[p] - s2[p]) <= 1e-5f * (1 + fabsf(s2[p]))))
                    TEST__FAIL("%s att_scores_f16 hs %d np %d p %d: %g, portable %g", k->isa, hs,
                               np, p, (double)s1[p], (double)s2[p]);
            for (int i = 0; i < hs; i++)
                o1[i] = o2[i] = 0.5f;
            k->att_mix_f16(a, kv, KS, np, hs, o1);
            g->att_mix_f16(a, kv, KS, np, hs, o2);
            for (int i = 0; i < hs; i++)
                ASSERT(fabsf(o1[i] - o2[i]) <= 1e-5f * (1 + fabsf(o2[i])));
            /* and the portable F16 loops are the F32 ones on the rounded
             * values */
            for (int p = 0; p < np; p++) {
                float want = 0;
                for (int i = 0; i < hs; i++)
                    want += q[i] * synor_f16_to_f32(kv[p * KS + i]);
                ASSERT(fabsf(s2[p] - want * 0.125f) <= 1e-6f * (1 + fabsf(want)));
            }
        }
}

/* The tiny model's logits with an F16 cache are within KV16_TOLERANCE of
 * the F32 cache's (prefill and NGEN decode steps) and the greedy tokens
 * are the same; on F32 and Q8_0 weights. */
TEST(f16_kv_close_to_f32_kv)
{
    static const synor_ttype types[] = {SYNOR_TTYPE_F32, SYNOR_TTYPE_Q8_0};
    for (int ti = 0; ti < 2; ti++) {
        synor_llm *m;
        char leaf[32];
        snprintf(leaf, sizeof leaf, "m%d.gguf", ti);
        ASSERT_OK(tiny_model(leaf, types[ti], &m));
        synor_runtime *rt = llm_test_runtime(3);
        ASSERT(rt);
        int V = synor_llm_hparams_get(m)->vocab_size;
        size_t rows = NP + NGEN;
        float *l32 = malloc(rows * V * sizeof(float)), *l16 = malloc(rows * V * sizeof(float));
        int32_t t32[NGEN], t16[NGEN];
        ASSERT(l32 && l16);
        synor_llm_ctx *c32, *c16;
        synor_llm_ctx_opts o32 = {.max_batch = 64},
                           o16 = {.max_batch = 64, .kv_type = SYNOR_LLM_KV_F16};
        ASSERT_OK(synor_llm_ctx_create(m, rt, &o32, &c32));
        ASSERT_OK(synor_llm_ctx_create(m, rt, &o16, &c16));
        ASSERT_OK(run(c32, V, l32, t32));
        ASSERT_OK(run(c16, V, l16, t16));
        double diff = 0, scale = 0;
        int moved = 0;
        for (size_t i = 0; i < rows * V; i++) {
            double d = fabs((double)l32[i] - l16[i]);
            diff = d > diff ? d : diff;
            scale = fabs(l32[i]) > scale ? fabs(l32[i]) : scale;
            moved |= d > 0;
        }
        fprintf(stderr, "  %s weights: F16 KV max |logit diff| %.3g of max |logit| %.3g (%.2g)\n",
                synor_ttype_name(types[ti]), diff, scale, diff / scale);
        ASSERT(moved); /* the cache really is F16 */
        ASSERT(diff / scale < kv16_tolerance[ti]);
        ASSERT(memcmp(t32, t16, sizeof t32) == 0);
        free(l32);
        free(l16);
        synor_llm_ctx_destroy(c32);
        synor_llm_ctx_destroy(c16);
        synor_runtime_destroy(rt);
        synor_llm_destroy(m);
    }
}

/* With an F16 cache, two sequences in one interleaved batch give each the
 * logits it gets alone, bitwise (the rounding is per element, not per
 * batch), on 1 and 3 workers. */
TEST(f16_kv_batches_agree_with_alone)
{
    synor_llm *m;
    ASSERT_OK(tiny_model("b.gguf", SYNOR_TTYPE_F32, &m));
    int V = synor_llm_hparams_get(m)->vocab_size;
    float *alone = malloc((size_t)NP * V * sizeof(float));
    ASSERT(alone);
    for (unsigned w = 1; w <= 3; w += 2) {
        synor_runtime *rt = llm_test_runtime(w);
        ASSERT(rt);
        synor_llm_ctx *c;
        synor_llm_ctx_opts o = {.max_seqs = 2, .max_batch = 64, .kv_type = SYNOR_LLM_KV_F16};
        ASSERT_OK(synor_llm_ctx_create(m, rt, &o, &c));
        /* alone: sequence 0, one token per batch */
        for (int i = 0; i < NP; i++) {
            unsigned s0 = 0;
            ASSERT_OK(synor_llm_batch(c, 1, &prompt[i], &s0, NULL));
            memcpy(alone + (size_t)i * V, synor_llm_logits(c, 0), (size_t)V * sizeof(float));
        }
        synor_llm_seq_reset(c, 0);
        /* both sequences, each batch a row of each */
        for (int i = 0; i < NP; i++) {
            int32_t t[2] = {prompt[i], prompt[i]};
            unsigned s[2] = {1, 0};
            ASSERT_OK(synor_llm_batch(c, 2, t, s, NULL));
            for (int r = 0; r < 2; r++)
                if (memcmp(synor_llm_logits(c, (size_t)r), alone + (size_t)i * V,
                           (size_t)V * sizeof(float)) != 0)
                    TEST__FAIL("%u workers: row %d of position %d differs from alone", w, r, i);
        }
        synor_llm_ctx_destroy(c);
        synor_runtime_destroy(rt);
    }
    free(alone);
    synor_llm_destroy(m);
}

TEST(bad_kv_type_is_refused_naming_it)
{
    unsigned t = 99;
    ASSERT_OK(synor_llm_kv_type_parse("f16", &t));
    ASSERT_EQ(t, SYNOR_LLM_KV_F16);
    ASSERT_OK(synor_llm_kv_type_parse("F32", &t));
    ASSERT_EQ(t, SYNOR_LLM_KV_F32);
    ASSERT_EQ(synor_llm_kv_type_parse("f8", &t), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "'f8'");
    ASSERT_EQ(synor_llm_kv_type_parse("", &t), SYNOR_EINVAL);
    ASSERT_EQ(synor_llm_kv_type_parse("f16x", &t), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "'f16x'");
    ASSERT_EQ(t, SYNOR_LLM_KV_F32); /* unchanged by a refusal */
    ASSERT_STREQ(synor_llm_kv_type_name(SYNOR_LLM_KV_F16), "f16");
    ASSERT(synor_llm_kv_type_name(2) == NULL);

    synor_llm *m;
    ASSERT_OK(tiny_model("bad.gguf", SYNOR_TTYPE_F32, &m));
    synor_runtime *rt = llm_test_runtime(1);
    ASSERT(rt);
    synor_llm_ctx *c = NULL;
    synor_llm_ctx_opts o = {.kv_type = 7};
    ASSERT_EQ(synor_llm_ctx_create(m, rt, &o, &c), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "kv_type 7");
    ASSERT(c == NULL);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
}

TEST(cleanup)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (dir[0])
        ASSERT_EQ(system(cmd), 0);
}

TEST_MAIN(f16_kernels_agree_with_portable, f16_kv_close_to_f32_kv, f16_kv_batches_agree_with_alone,
          bad_kv_type_is_refused_naming_it, cleanup)
