/* test_llm_opencl.c - the inference engine's GPU layers on an OpenCL
 * device (synor_llm_ctx_opts.gpu_backend = SYNOR_LLM_GPU_OPENCL,
 * src/llm/ocl.c), on whatever OpenCL device the machine has (PoCL's CPU
 * device here, through SYNOR_OPENCL_ALL): with the same weights, a context
 * whose layers run there gives the CPU context's logits within 1e-4 over
 * a prompt (a product of several rows, including a batch that is not a
 * multiple of the kernel's 4 rows) and 12 greedy decode steps, for every
 * layer and the classifier, and for the last layer only; Q8_0 and Q4_0
 * weights, dequantized on upload, give the fp64 reference's logits; the
 * counters move; a device that
 * does not exist and a bad backend are refused with a message. Skipped
 * (with the reason) where no OpenCL device exists. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llm_fixture.h"
#include "llm_lockstep.h"
#include "llm_ref.h"
#include "synor/error.h"
#include "synor/llm.h"
#include "synor/runtime.h"
#include "test.h"

static const int32_t prompt[] = {1, 40, 41, 42, 80, 300, 7, 99, 260, 261, 262, 5, 17, 200, 150};
#define NP ((int)(sizeof prompt / sizeof prompt[0])) /* 15: not a multiple of 4 */
#define STEPS 12

static char dir[64];

static void path_of(char *buf, size_t n, const char *leaf)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/synor-llmcl-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    snprintf(buf, n, "%s/%s", dir, leaf);
}

static synor_llm *model(int layers, synor_ttype type, const char *leaf)
{
    synor_llm_synth s = llm_test_synth(layers);
    char p[128];
    path_of(p, sizeof p, leaf);
    synor_llm *m = NULL;
    if (synor_llm_synth_gguf(&s, type, p) || synor_llm_load(p, NULL, &m))
        return NULL;
    return m;
}

static synor_runtime *runtime(void)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 2;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_ALL;
    c.cuda = 0;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) || synor_runtime_start(rt)) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

static int have_opencl(synor_runtime *rt)
{
    for (unsigned i = 0; i < synor_runtime_device_count(rt); i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(rt, i, &di) == 0 && !strcmp(di.backend, "opencl"))
            return 1;
    }
    return 0;
}

/* The prompt, then STEPS greedy steps, on both (llm_lockstep.h). */
static int lockstep(synor_llm_ctx *ref, synor_llm_ctx *dev, int V, float *worst, int *same)
{
    return llm_lockstep(ref, dev, prompt, NP, STEPS, V, worst, same);
}

#define NEED_OPENCL(rt, m)                                                                       \
    do {                                                                                         \
        if (!have_opencl(rt)) {                                                                  \
            synor_runtime_destroy(rt);                                                           \
            synor_llm_destroy(m);                                                                \
            TEST_SKIP("no OpenCL device here (no ICD, or PoCL not installed)");                 \
        }                                                                                        \
    } while (0)

/* Every layer and the classifier, then the last layer only. */
TEST(opencl_layers_give_the_cpu_logits)
{
    const float tol = 1e-4f;
    const char *leaf = "f32.gguf";
    synor_ttype type = SYNOR_TTYPE_F32;
    synor_llm *m = model(3, type, leaf);
    ASSERT(m);
    synor_runtime *rt = runtime();
    ASSERT(rt);
    NEED_OPENCL(rt, m);
    int V = synor_llm_hparams_get(m)->vocab_size;
    synor_llm_ctx_opts oc = {.max_batch = 32};
    synor_llm_ctx *cpu;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &oc, &cpu));
    for (int layers = 0; layers < 2; layers++) {
        synor_llm_ctx_opts og = {.max_batch = 32,
                                 .gpu_layers = layers ? 1 : SYNOR_LLM_GPU_ALL,
                                 .gpu_backend = SYNOR_LLM_GPU_OPENCL};
        synor_llm_ctx *dev;
        ASSERT_OK(synor_llm_ctx_create(m, rt, &og, &dev));
        synor_llm_gpu_info gi;
        synor_llm_ctx_gpu(dev, &gi);
        ASSERT_EQ(gi.layers, layers ? 1 : 3);
        ASSERT_EQ(gi.classifier, !layers);
        ASSERT(!strncmp(gi.device, "opencl", 6));
        ASSERT(gi.weight_bytes > 0);
        float worst;
        int same;
        ASSERT_OK(lockstep(cpu, dev, V, &worst, &same));
        if (worst > tol)
            fprintf(stderr, "  %s, %s: logits differ by %g\n", leaf, layers ? "last layer" : "all",
                    (double)worst);
        ASSERT(worst <= tol);
        ASSERT(same);
        synor_llm_ctx_gpu(dev, &gi);
        ASSERT(gi.products > 0 && gi.bytes_up > 0 && gi.bytes_down > 0);
        synor_llm_ctx_destroy(dev);
    }
    synor_llm_ctx_destroy(cpu);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
}

/* Q8_0 and Q4_0 weights are dequantized on upload and multiply fp32
 * activations (the CPU multiplies Q8_0-quantized activations, so it is not
 * the yardstick): the device path is the fp64 reference on the same
 * dequantized weights, to fp32 rounding. */
TEST(quantized_weights_match_the_reference)
{
    static const synor_ttype types[] = {SYNOR_TTYPE_Q8_0, SYNOR_TTYPE_Q4_0};
    for (size_t k = 0; k < 2; k++) {
        char p[128], leaf[32];
        snprintf(leaf, sizeof leaf, "q-%s.gguf", synor_ttype_name(types[k]));
        synor_llm *m = model(2, types[k], leaf);
        ASSERT(m);
        path_of(p, sizeof p, leaf);
        synor_runtime *rt = runtime();
        ASSERT(rt);
        NEED_OPENCL(rt, m);
        int V = synor_llm_hparams_get(m)->vocab_size;
        synor_llm_ctx_opts og = {.max_batch = 32,
                                 .gpu_layers = SYNOR_LLM_GPU_ALL,
                                 .gpu_backend = SYNOR_LLM_GPU_OPENCL};
        synor_llm_ctx *dev;
        ASSERT_OK(synor_llm_ctx_create(m, rt, &og, &dev));
        unsigned seqs[NP];
        uint8_t want[NP];
        for (int i = 0; i < NP; i++)
            seqs[i] = 0, want[i] = 1;
        ASSERT_OK(synor_llm_batch(dev, NP, prompt, seqs, want));
        double scale, worst = ref_worst_logit(dev, p, prompt, NP, V, &scale);
        ASSERT(worst >= 0);
        fprintf(stderr, "  %s on OpenCL: max |logit - fp64 reference| %.2e (largest logit %.2f)\n",
                synor_ttype_name(types[k]), worst, scale);
        ASSERT(worst <= 1e-4 * (1 + scale));
        synor_llm_ctx_destroy(dev);
        synor_runtime_destroy(rt);
        synor_llm_destroy(m);
    }
}

TEST(what_cannot_be_done_is_refused)
{
    synor_llm *m = model(2, SYNOR_TTYPE_F32, "bad.gguf");
    ASSERT(m);
    synor_runtime *rt = runtime();
    ASSERT(rt);
    synor_llm_ctx *c = NULL;
    synor_llm_ctx_opts bad = {.gpu_layers = 1, .gpu_backend = 7};
    ASSERT_EQ(synor_llm_ctx_create(m, rt, &bad, &c), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "gpu_backend 7");
    ASSERT(c == NULL);
    synor_llm_ctx_opts none = {.gpu_layers = 1, .gpu_device = 9,
                               .gpu_backend = SYNOR_LLM_GPU_OPENCL};
    ASSERT_EQ(synor_llm_ctx_create(m, rt, &none, &c), SYNOR_ENOTSUP);
    ASSERT_CONTAINS(synor_errmsg(), "OpenCL device 9");
    ASSERT(c == NULL);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
}

TEST(cleanup)
{
    char p[160];
    const char *leaves[] = {"f32.gguf", "q-Q8_0.gguf", "q-Q4_0.gguf", "bad.gguf"};
    for (size_t i = 0; i < sizeof leaves / sizeof leaves[0]; i++) {
        path_of(p, sizeof p, leaves[i]);
        unlink(p);
    }
    rmdir(dir);
}

TEST_MAIN(opencl_layers_give_the_cpu_logits, quantized_weights_match_the_reference,
          what_cannot_be_done_is_refused, cleanup)
