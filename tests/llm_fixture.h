/* llm_fixture.h - what the engine's tests share: a started runtime of n
 * CPU workers, unpinned, with no OpenCL or CUDA device (the engine's
 * kernels are CPU kernels; tests must not depend on the devices present);
 * and the tiny generated model they build. */
#ifndef SYNOR_LLM_FIXTURE_H
#define SYNOR_LLM_FIXTURE_H

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
