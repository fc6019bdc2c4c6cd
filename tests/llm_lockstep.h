/* llm_lockstep.h - two contexts of one model run side by side (the
 * engine's device tests: a CPU context against one whose layers run on a
 * GPU or an OpenCL device): a prompt as one batch, every row's logits
 * compared, then greedy decode steps with the first context's token fed to
 * both; and a batch's logits against the fp64 reference (llm_ref.h).
 * Header-only, for tests. */
#ifndef SYNOR_TESTS_LLM_LOCKSTEP_H
#define SYNOR_TESTS_LLM_LOCKSTEP_H

#include <math.h>
#include <stdint.h>

#include "llm_ref.h"
#include "synor/llm.h"

static int argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b])
            b = i;
    return b;
}

static float max_diff(const float *a, const float *b, int n)
{
    float m = 0;
    for (int i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        m = d > m ? d : m;
    }
    return m;
}

/* The np prompt tokens as one batch on both (every row's logits), then
 * `steps` greedy steps: *worst gets the largest logit difference, *same
 * whether every step's top token agrees. 0 or the first batch error. */
static int llm_lockstep(synor_llm_ctx *ref, synor_llm_ctx *dev, const int32_t *prompt, int np,
                        int steps, int V, float *worst, int *same)
{
    unsigned seqs[64];
    uint8_t want[64];
    if (np > 64)
        return -1;
    for (int i = 0; i < np; i++)
        seqs[i] = 0, want[i] = 1;
    synor_llm_seq_reset(ref, 0);
    synor_llm_seq_reset(dev, 0);
    int e = synor_llm_batch(ref, (size_t)np, prompt, seqs, want);
    if (!e)
        e = synor_llm_batch(dev, (size_t)np, prompt, seqs, want);
    if (e)
        return e;
    *worst = 0;
    *same = 1;
    for (int i = 0; i < np; i++) {
        float d = max_diff(synor_llm_logits(ref, (size_t)i), synor_llm_logits(dev, (size_t)i), V);
        *worst = d > *worst ? d : *worst;
    }
    int32_t t = (int32_t)argmax(synor_llm_logits(ref, (size_t)np - 1), V);
    for (int s = 0; s < steps; s++) {
        unsigned q = 0;
        if ((e = synor_llm_batch(ref, 1, &t, &q, NULL)) || (e = synor_llm_batch(dev, 1, &t, &q, NULL)))
            return e;
        const float *a = synor_llm_logits(ref, 0), *b = synor_llm_logits(dev, 0);
        float d = max_diff(a, b, V);
        *worst = d > *worst ? d : *worst;
        *same &= argmax(a, V) == argmax(b, V);
        t = (int32_t)argmax(a, V);
    }
    return 0;
}

/* The largest |logit - reference| over the np prompt rows of a batch just
 * run on c (every row's logits asked for), against the fp64 reference of
 * the model file `path` over the same tokens; *scale gets the largest
 * reference logit. -1 when the file cannot be read or out of memory. */
static double ref_worst_logit(const synor_llm_ctx *c, const char *path, const int32_t *tokens,
                              int np, int V, double *scale)
{
    ref_model r;
    double *ref = malloc((size_t)np * (size_t)V * sizeof *ref);
    if (!ref || ref_load(path, &r)) {
        free(ref);
        return -1;
    }
    ref_forward(&r, tokens, np, ref);
    double worst = 0;
    *scale = 0;
    for (int i = 0; i < np; i++) {
        const float *l = synor_llm_logits(c, (size_t)i);
        for (int v = 0; v < V; v++) {
            double x = ref[(size_t)i * V + v], d = fabs(l[v] - x);
            worst = d > worst ? d : worst;
            *scale = fabs(x) > *scale ? fabs(x) : *scale;
        }
    }
    free(ref);
    ref_free(&r);
    return worst;
}

#endif
