/* llm_fixture.h - what the engine's tests share: a started runtime of n
 * CPU workers, unpinned, with no OpenCL or CUDA device (the engine's
 * kernels are CPU kernels; tests must not depend on the devices present);
 * the tiny generated model they build; and a plain decode loop to check
 * the scheduler and speculative decoding against. */
#ifndef SYNOR_LLM_FIXTURE_H
#define SYNOR_LLM_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "synor/llm.h"
#include "synor/runtime.h"

static inline synor_runtime *llm_test_runtime(unsigned workers)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = workers;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) || synor_runtime_start(rt)) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

/* Decodes alone on a fresh context: the prompt p (n tokens) as one batch,
 * then one token per batch, each drawn by s from its row - from a copy
 * that adjust (when not NULL) changed first, told the k tokens so far -
 * until EOS (not kept) or max_new. Returns the count of tokens in out, or
 * -1 when the model cannot run. */
typedef void (*llm_test_adjust)(float *row, int n_vocab, const int32_t *out, int k, void *user);
static inline int llm_test_decode(synor_llm *m, synor_runtime *rt, const int32_t *p, size_t n,
                                  synor_sampler *s, int max_new, int32_t *out,
                                  llm_test_adjust adjust, void *user)
{
    int V = synor_llm_hparams_get(m)->vocab_size, k = -1;
    synor_llm_ctx *c;
    if (synor_llm_ctx_create(m, rt, NULL, &c))
        return -1;
    unsigned *seqs = (unsigned *)calloc(n, sizeof *seqs);
    float *row = (float *)malloc((size_t)V * sizeof *row);
    if (seqs && row && synor_llm_batch(c, n, p, seqs, NULL) == 0) {
        const float *l = synor_llm_logits(c, n - 1);
        for (k = 0; k < max_new; k++) {
            memcpy(row, l, (size_t)V * sizeof *row);
            if (adjust)
                adjust(row, V, out, k, user);
            out[k] = synor_sampler_sample(s, row, V);
            if (out[k] == synor_tokenizer_eos(synor_llm_tokenizer(m)) ||
                synor_llm_batch(c, 1, &out[k], seqs, NULL))
                break;
            l = synor_llm_logits(c, 0);
        }
    }
    free(seqs);
    free(row);
    synor_llm_ctx_destroy(c);
    return k;
}

/* The tokens each of up to LLM_TEST_MAXREQ scheduler requests got (its
 * first LLM_TEST_MAXTOK), by the id submit gave it: llm_test_collect is
 * their on_token, the struct their user pointer. */
enum { LLM_TEST_MAXREQ = 8, LLM_TEST_MAXTOK = 64 };
typedef struct llm_test_got {
    uint64_t ids[LLM_TEST_MAXREQ];
    int n[LLM_TEST_MAXREQ];
    int32_t t[LLM_TEST_MAXREQ][LLM_TEST_MAXTOK];
} llm_test_got;

static inline int llm_test_collect(uint64_t id, int32_t t, void *user)
{
    llm_test_got *g = (llm_test_got *)user;
    for (int i = 0; i < LLM_TEST_MAXREQ; i++)
        if (g->ids[i] == id && g->n[i] < LLM_TEST_MAXTOK)
            g->t[i][g->n[i]++] = t;
    return 0;
}

/* Destroys what a scheduler test made (any may be NULL). */
static inline void llm_test_teardown(synor_llm_sched *s, synor_llm_ctx *c, synor_llm *m,
                                     synor_runtime *rt)
{
    synor_llm_sched_destroy(s);
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
}

/* The tiny model's recipe: dim 64, hidden 96, `layers` layers, 4 heads over
 * 2 KV heads, a 320-piece vocabulary trained on a short story, context 64,
 * a shared classifier, seed 42. */
static inline synor_llm_synth llm_test_synth(int layers)
{
    static const char text[] =
        "Once upon a time there was a little girl who loved to play in the park. "
        "One day she saw a big red ball under a tree. She ran to the ball and "
        "kicked it high into the sky. The sun was warm and the birds sang.";
    synor_llm_synth s = {.cfg = {.dim = 64,
                                 .hidden_dim = 96,
                                 .n_layers = layers,
                                 .n_heads = 4,
                                 .n_kv_heads = 2,
                                 .vocab_size = 320,
                                 .seq_len = 64,
                                 .shared_classifier = 1},
                         .seed = 42,
                         .text = text,
                         .text_len = sizeof text - 1};
    return s;
}

#endif
