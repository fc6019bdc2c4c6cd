/* test_llm_cuda_mock.c - the inference engine's GPU layers
 * (synor_llm_ctx_opts.gpu_layers, src/llm/gpu.c) against the test doubles
 * of the CUDA driver API and cuBLAS (tests/cuda_mock/: host memory, no
 * GPU), which CTest puts first on LD_LIBRARY_PATH. With the same weights,
 * a context whose layers run on the "GPU" gives the CPU context's logits
 * within 1e-4 over a prompt (GEMM) and 16 greedy decode steps (GEMV), all
 * layers or some; quantized weights (dequantized to fp32 on upload) agree
 * with the fp64 reference; the mock's counters show the products went
 * through cuBLAS and every device and pinned allocation is freed; what
 * cannot be done (no CUDA device, a device that does not exist, weights
 * that do not fit) fails with a message and leaves nothing allocated. On
 * a real GPU the same test runs without the mock (bench/run_gpu_llm.sh). */
#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>
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

static const int32_t prompt[] = {1,   40, 41, 42,  80,  300, 7,   99, 260, 261,
                                 262, 5,  17, 200, 150, 151, 152, 3,  4,   9};
#define NP ((int)(sizeof prompt / sizeof prompt[0]))
#define STEPS 16

static char dir[64];

static void path_of(char *buf, size_t n, const char *leaf)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/synor-llmcu-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    snprintf(buf, n, "%s/%s", dir, leaf);
}

static synor_llm_synth tiny(int layers) { return llm_test_synth(layers); }

/* SYNOR_LLMCU_REAL=1: run on whatever CUDA driver is installed (a real
 * GPU) instead of requiring the mock; the mock's counters are then not
 * checked. */
static int real_gpu(void)
{
    const char *r = getenv("SYNOR_LLMCU_REAL");
    return r && *r == '1';
}

static int mock_present(void)
{
    const char *p = getenv("LD_LIBRARY_PATH");
    return p && strstr(p, "cuda-mock");
}

/* A mock counter (libcuda.so.1 or libcublas.so.13), or NULL on a real
 * driver. The test holds its own reference so it stays loaded. */
static long counter(const char *lib, const char *name)
{
    if (real_gpu())
        return -1;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    _Atomic long *p = h ? dlsym(h, name) : NULL;
    return p ? atomic_load(p) : -1;
}
#define CU "libcuda.so.1"
#define BLAS "libcublas.so.13"

static synor_runtime *runtime(int cuda)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 2;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = cuda;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) || synor_runtime_start(rt)) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

static int have_cuda(synor_runtime *rt)
{
    for (unsigned i = 0; i < synor_runtime_device_count(rt); i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(rt, i, &di) == 0 && !strcmp(di.backend, "cuda"))
            return 1;
    }
    return 0;
}

#define NEED_GPU()                                                                               \
    do {                                                                                         \
        if (!real_gpu() && !mock_present())                                                      \
            TEST_SKIP("run through ctest (LD_LIBRARY_PATH names the CUDA mock), or set "         \
                      "SYNOR_LLMCU_REAL=1 on a machine with a GPU");                             \
    } while (0)

/* The prompt, then STEPS greedy steps, on both (llm_lockstep.h). */
static int lockstep(synor_llm_ctx *ref, synor_llm_ctx *dev, int V, float *worst, int *same)
{
    return llm_lockstep(ref, dev, prompt, NP, STEPS, V, worst, same);
}

TEST(gpu_layers_give_the_cpu_logits)
{
    NEED_GPU();
    char p[128];
    path_of(p, sizeof p, "f32.gguf");
    synor_llm_synth s = tiny(3);
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, p));
    synor_llm *m;
    ASSERT_OK(synor_llm_load(p, NULL, &m));
    synor_runtime *rt = runtime(1);
    ASSERT(rt);
    if (!have_cuda(rt)) {
        synor_runtime_destroy(rt);
        synor_llm_destroy(m);
        TEST_SKIP("no CUDA device (driver, or the mock, not found)");
    }
    int V = synor_llm_hparams_get(m)->vocab_size;
    synor_llm_ctx_opts oc = {.max_batch = 64};
    synor_llm_ctx *cpu;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &oc, &cpu));
    long gemm0 = counter(BLAS, "synor_mock_sgemm_calls"),
         gemv0 = counter(BLAS, "synor_mock_sgemv_calls");
    /* all layers and the classifier; then the last one; then two of three */
    static const int layers[] = {SYNOR_LLM_GPU_ALL, 1, 2};
    for (size_t k = 0; k < sizeof layers / sizeof layers[0]; k++) {
        synor_llm_ctx_opts og = {.max_batch = 64, .gpu_layers = layers[k]};
        synor_llm_ctx *gpu;
        ASSERT_OK(synor_llm_ctx_create(m, rt, &og, &gpu));
        synor_llm_gpu_info gi;
        synor_llm_ctx_gpu(gpu, &gi);
        int want_layers = layers[k] > 3 ? 3 : layers[k];
        ASSERT_EQ(gi.layers, want_layers);
        ASSERT_EQ(gi.classifier, layers[k] > 3);
        ASSERT_STREQ(gi.device, "cuda0");
        /* per layer: (64 + 2 * 32) x 64 + 64 x 64 + 2 * 96 x 64 + 64 x 96
         * floats; the classifier 320 x 64 */
        uint64_t per_layer = (128 * 64 + 64 * 64 + 192 * 64 + 64 * 96) * 4;
        ASSERT_EQ(gi.weight_bytes, per_layer * (uint64_t)want_layers +
                                       (gi.classifier ? 320u * 64u * 4u : 0u));
        float worst;
        int same;
        ASSERT_OK(lockstep(cpu, gpu, V, &worst, &same));
        fprintf(stderr, "  %d GPU layers%s: max |GPU - CPU logit| %.2e over %d prompt rows and %d "
                        "steps, top-1 %s\n",
                want_layers, gi.classifier ? " + classifier" : "", worst, NP, STEPS,
                same ? "identical" : "DIFFERS");
        ASSERT(worst <= 1e-4f);
        ASSERT(same);
        synor_llm_ctx_gpu(gpu, &gi);
        /* 4 products a layer (+ the classifier) per batch: 1 prompt + 16 steps */
        ASSERT_EQ(gi.products, (uint64_t)(4 * want_layers + gi.classifier) * (1 + STEPS));
        ASSERT(gi.bytes_up > 0 && gi.bytes_down > 0);
        synor_llm_ctx_destroy(gpu);
    }
    if (gemm0 >= 0) {
        /* the prompts went through SGEMM, the decode steps through SGEMV */
        ASSERT_EQ(counter(BLAS, "synor_mock_sgemm_calls") - gemm0, 4 * 3 + 1 + 4 * 1 + 4 * 2);
        ASSERT_EQ(counter(BLAS, "synor_mock_sgemv_calls") - gemv0,
                  (4 * 3 + 1 + 4 * 1 + 4 * 2) * STEPS);
        ASSERT_EQ(counter(CU, "synor_mock_host_allocs"), 0);
    }
    synor_llm_ctx_destroy(cpu);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
    if (gemm0 >= 0) {
        ASSERT_EQ(counter(CU, "synor_mock_allocs"), 0);
        ASSERT_EQ(counter(CU, "synor_mock_errors"), 0);
    }
}

/* Several sequences in one batch (rows interleaved), on a GPU context;
 * 36 rows: the element-wise work after the GPU's products runs as steps
 * of its own over the CPU workers (32 rows or more). */
TEST(gpu_batches_of_several_sequences)
{
    NEED_GPU();
    char p[128];
    path_of(p, sizeof p, "multi.gguf");
    synor_llm_synth s = tiny(2);
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_F16, p));
    synor_llm *m;
    ASSERT_OK(synor_llm_load(p, NULL, &m));
    synor_runtime *rt = runtime(1);
    ASSERT(rt);
    if (!have_cuda(rt)) {
        synor_runtime_destroy(rt);
        synor_llm_destroy(m);
        TEST_SKIP("no CUDA device");
    }
    int V = synor_llm_hparams_get(m)->vocab_size;
    synor_llm_ctx_opts oc = {.max_seqs = 3, .max_batch = 64},
                       og = {.max_seqs = 3, .max_batch = 64, .gpu_layers = SYNOR_LLM_GPU_ALL};
    synor_llm_ctx *cpu, *gpu;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &oc, &cpu));
    ASSERT_OK(synor_llm_ctx_create(m, rt, &og, &gpu));
    unsigned seqs[36];
    int32_t toks[36];
    for (int i = 0; i < 36; i++)
        seqs[i] = (unsigned)(i % 3), toks[i] = prompt[i % NP];
    for (int round = 0; round < 2; round++) {
        ASSERT_OK(synor_llm_batch(cpu, 36, toks, seqs, NULL));
        ASSERT_OK(synor_llm_batch(gpu, 36, toks, seqs, NULL));
        for (int i = 33; i < 36; i++) {
            const float *a = synor_llm_logits(cpu, (size_t)i), *b = synor_llm_logits(gpu, (size_t)i);
            ASSERT(a && b);
            ASSERT(max_diff(a, b, V) <= 1e-4f);
        }
        ASSERT(synor_llm_logits(gpu, 0) == NULL);
    }
    ASSERT_EQ(synor_llm_seq_len(gpu, 2), 24);
    synor_llm_ctx_destroy(gpu);
    synor_llm_ctx_destroy(cpu);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
}

/* Q8_0 and Q4_0 weights are dequantized on upload and multiply fp32
 * activations (the CPU multiplies Q8_0-quantized activations): the GPU
 * path is then the fp64 reference on the same dequantized weights, to
 * fp32 rounding. */
TEST(quantized_weights_on_the_gpu_match_the_reference)
{
    NEED_GPU();
    static const synor_ttype types[] = {SYNOR_TTYPE_Q8_0, SYNOR_TTYPE_Q4_0};
    for (size_t k = 0; k < 2; k++) {
        char p[128], leaf[32];
        snprintf(leaf, sizeof leaf, "q-%s.gguf", synor_ttype_name(types[k]));
        path_of(p, sizeof p, leaf);
        synor_llm_synth s = tiny(2);
        ASSERT_OK(synor_llm_synth_gguf(&s, types[k], p));
        synor_llm *m;
        ASSERT_OK(synor_llm_load(p, NULL, &m));
        synor_runtime *rt = runtime(1);
        ASSERT(rt);
        if (!have_cuda(rt)) {
            synor_runtime_destroy(rt);
            synor_llm_destroy(m);
            TEST_SKIP("no CUDA device");
        }
        int V = synor_llm_hparams_get(m)->vocab_size;
        synor_llm_ctx_opts og = {.max_batch = 32, .gpu_layers = SYNOR_LLM_GPU_ALL};
        synor_llm_ctx *gpu;
        ASSERT_OK(synor_llm_ctx_create(m, rt, &og, &gpu));
        unsigned seqs[NP];
        uint8_t want[NP];
        for (int i = 0; i < NP; i++)
            seqs[i] = 0, want[i] = 1;
        ASSERT_OK(synor_llm_batch(gpu, NP, prompt, seqs, want));
        double scale, worst = ref_worst_logit(gpu, p, prompt, NP, V, &scale);
        ASSERT(worst >= 0);
        fprintf(stderr, "  %s on the GPU: max |logit - fp64 reference| %.2e (largest logit %.2f)\n",
                synor_ttype_name(types[k]), worst, scale);
        ASSERT(worst <= 1e-4 * (1 + scale));
        synor_llm_ctx_destroy(gpu);
        synor_runtime_destroy(rt);
        synor_llm_destroy(m);
    }
}

TEST(what_cannot_run_on_a_gpu_says_why)
{
    char p[128];
    path_of(p, sizeof p, "err.gguf");
    synor_llm_synth s = tiny(2);
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, p));
    synor_llm *m;
    ASSERT_OK(synor_llm_load(p, NULL, &m));
    synor_llm_ctx *c = NULL;
    /* a runtime without CUDA (any machine) */
    synor_runtime *rt = runtime(0);
    ASSERT(rt);
    synor_llm_ctx_opts o = {.gpu_layers = 1};
    ASSERT_EQ(synor_llm_ctx_create(m, rt, &o, &c), SYNOR_ENOTSUP);
    ASSERT(c == NULL);
    ASSERT_CONTAINS(synor_errmsg(), "CUDA device");
    o.gpu_layers = -2;
    ASSERT_EQ(synor_llm_ctx_create(m, rt, &o, &c), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "gpu_layers -2");
    /* without GPU layers the CPU path needs no CUDA */
    o.gpu_layers = 0;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &o, &c));
    synor_llm_gpu_info g0;
    synor_llm_ctx_gpu(c, &g0);
    ASSERT_EQ(g0.layers, 0);
    synor_llm_ctx_destroy(c);
    synor_runtime_destroy(rt);
    if (!mock_present()) {
        synor_llm_destroy(m);
        return;
    }
    rt = runtime(1);
    ASSERT(rt);
    o.gpu_layers = 1;
    o.gpu_device = 3; /* the mock has one GPU */
    ASSERT_EQ(synor_llm_ctx_create(m, rt, &o, &c), SYNOR_ENOTSUP);
    ASSERT_CONTAINS(synor_errmsg(), "1 CUDA device");
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);

    /* weights beyond the mock's 64 MiB of device memory: out of memory,
     * named, and what was uploaded before is freed */
    path_of(p, sizeof p, "big.gguf");
    s = tiny(5);
    s.cfg.dim = 512;
    s.cfg.hidden_dim = 2048;
    s.cfg.n_heads = 8;
    s.cfg.n_kv_heads = 8;
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_Q8_0, p));
    ASSERT_OK(synor_llm_load(p, NULL, &m));
    rt = runtime(1);
    ASSERT(rt);
    o.gpu_device = 0;
    o.gpu_layers = SYNOR_LLM_GPU_ALL;
    ASSERT_EQ(synor_llm_ctx_create(m, rt, &o, &c), SYNOR_ENOMEM);
    ASSERT_CONTAINS(synor_errmsg(), "out of device memory");
    ASSERT_EQ(counter(CU, "synor_mock_allocs"), 0);
    ASSERT_EQ(counter(CU, "synor_mock_host_allocs"), 0);
    /* two of its layers fit (16.8 MB each, beside 12.6 MB of activations
     * for batches of 512 rows): auto takes them, the classifier stays */
    o.gpu_layers = SYNOR_LLM_GPU_AUTO;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &o, &c));
    synor_llm_gpu_info gi;
    synor_llm_ctx_gpu(c, &gi);
    ASSERT_EQ(gi.layers, 2);
    ASSERT_EQ(gi.classifier, 0);
    unsigned q = 0;
    int32_t t = 1;
    ASSERT_OK(synor_llm_batch(c, 1, &t, &q, NULL));
    synor_llm_ctx_destroy(c);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
    ASSERT_EQ(counter(CU, "synor_mock_allocs"), 0);
}

/* A context with every layer on the GPU whose prefill and decode run
 * different splits: the CPU's logits within 1e-4 whatever the split, and
 * the products counted show each phase ran its own (the prompt: 4 per
 * prefill layer, the steps: 4 per decode layer; the classifier with all). */
TEST(prefill_and_decode_splits_keep_the_logits)
{
    NEED_GPU();
    char p[128];
    path_of(p, sizeof p, "split.gguf");
    synor_llm_synth s = tiny(3);
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, p));
    synor_llm *m;
    ASSERT_OK(synor_llm_load(p, NULL, &m));
    synor_runtime *rt = runtime(1);
    ASSERT(rt);
    if (!have_cuda(rt)) {
        synor_runtime_destroy(rt);
        synor_llm_destroy(m);
        TEST_SKIP("no CUDA device");
    }
    int V = synor_llm_hparams_get(m)->vocab_size;
    synor_llm_ctx_opts oc = {.max_batch = 64}, og = {.max_batch = 64,
                                                     .gpu_layers = SYNOR_LLM_GPU_ALL};
    synor_llm_ctx *cpu, *gpu;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &oc, &cpu));
    ASSERT_OK(synor_llm_ctx_create(m, rt, &og, &gpu));
    synor_llm_split sp;
    synor_llm_ctx_get_split(gpu, &sp);
    ASSERT_EQ(sp.prefill, 3);
    ASSERT_EQ(sp.decode, 3);
    static const synor_llm_split splits[] = {{3, 0}, {0, 3}, {1, 2}, {2, 0}, {0, 0}};
    for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
        ASSERT_OK(synor_llm_ctx_set_split(gpu, &splits[k]));
        synor_llm_gpu_info g0, g1;
        synor_llm_ctx_gpu(gpu, &g0);
        float worst;
        int same;
        ASSERT_OK(lockstep(cpu, gpu, V, &worst, &same));
        synor_llm_ctx_gpu(gpu, &g1);
        int P = splits[k].prefill, D = splits[k].decode;
        fprintf(stderr, "  split prefill %d / decode %d: max |GPU - CPU logit| %.2e, top-1 %s\n",
                P, D, worst, same ? "identical" : "DIFFERS");
        ASSERT(worst <= 1e-4f);
        ASSERT(same);
        ASSERT_EQ(g1.products - g0.products,
                  (uint64_t)(4 * P + (P == 3)) + (uint64_t)(4 * D + (D == 3)) * STEPS);
    }
    /* counts beyond what was uploaded, or negative, are refused */
    ASSERT_EQ(synor_llm_ctx_set_split(gpu, &(synor_llm_split){4, 0}), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "prefill 4"));
    ASSERT_EQ(synor_llm_ctx_set_split(gpu, &(synor_llm_split){0, -1}), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "decode -1"));
    ASSERT_EQ(synor_llm_ctx_set_split(cpu, &(synor_llm_split){1, 0}), SYNOR_EINVAL);
    synor_llm_ctx_destroy(gpu);
    synor_llm_ctx_destroy(cpu);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
    ASSERT_EQ(counter(CU, "synor_mock_allocs") > 0, 0);
}

/* The planner: every layer timed on both devices for both phases, an
 * estimate per split whose minimum is the decision, the decision set on
 * the context (and the logits still the CPU's under it); then the trace of
 * a prefill and a decode batch: every task, the GPU's products and copies
 * of exactly the layers the split put there. The decision itself depends
 * on this machine's speed and is not checked. */
TEST(the_split_planner_and_the_trace)
{
    NEED_GPU();
    char p[128];
    path_of(p, sizeof p, "plan.gguf");
    synor_llm_synth s = tiny(3);
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, p));
    synor_llm *m;
    ASSERT_OK(synor_llm_load(p, NULL, &m));
    synor_runtime *rt = runtime(1);
    ASSERT(rt);
    if (!have_cuda(rt)) {
        synor_runtime_destroy(rt);
        synor_llm_destroy(m);
        TEST_SKIP("no CUDA device");
    }
    int V = synor_llm_hparams_get(m)->vocab_size;
    synor_llm_ctx_opts oc = {.max_batch = 64}, og = {.max_batch = 64,
                                                     .gpu_layers = SYNOR_LLM_GPU_ALL};
    synor_llm_ctx *cpu, *gpu;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &oc, &cpu));
    ASSERT_OK(synor_llm_ctx_create(m, rt, &og, &gpu));
    static synor_llm_split_plan pl;
    ASSERT_EQ(synor_llm_plan_split(cpu, NP, 1, &pl), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "no layer"));
    ASSERT_EQ(synor_llm_plan_split(gpu, 0, 1, &pl), SYNOR_EINVAL);
    ASSERT_EQ(synor_llm_plan_split(gpu, 65, 1, &pl), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "prompt_rows 65"));
    ASSERT_OK(synor_llm_plan_split(gpu, NP, 2, &pl));
    ASSERT_EQ(pl.layers, 3);
    ASSERT_EQ(pl.uploaded, 3);
    ASSERT_EQ(pl.prompt_rows, NP);
    for (int ph = 0; ph < 2; ph++) {
        for (int d = 0; d < 2; d++) {
            ASSERT(pl.measured_s[ph][d] > 0);
            ASSERT(pl.cls_s[ph][d] > 0);
            for (int l = 0; l < 3; l++)
                ASSERT(pl.layer_s[ph][d][l] > 0);
        }
        int k = ph ? pl.split.decode : pl.split.prefill;
        ASSERT(k >= 0 && k <= 3);
        for (int j = 0; j <= 3; j++)
            ASSERT(pl.estimate_s[ph][k] <= pl.estimate_s[ph][j]);
        /* the estimate of an endpoint is that run's own layers, classifier
         * and an average of the two runs' rest */
        double t0 = 0.5 * (pl.rest_s[ph][0] + pl.rest_s[ph][1]) + pl.cls_s[ph][0];
        for (int l = 0; l < 3; l++)
            t0 += pl.layer_s[ph][0][l];
        ASSERT(fabs(pl.estimate_s[ph][0] - t0) < 1e-9);
    }
    ASSERT(pl.calibration_s > 0);
    synor_llm_split sp;
    synor_llm_ctx_get_split(gpu, &sp);
    ASSERT_EQ(sp.prefill, pl.split.prefill);
    ASSERT_EQ(sp.decode, pl.split.decode);
    ASSERT_EQ(synor_llm_seq_len(gpu, 0), 0); /* the calibration left no cache */
    float worst;
    int same;
    ASSERT_OK(lockstep(cpu, gpu, V, &worst, &same));
    ASSERT(worst <= 1e-4f);
    ASSERT(same);

    /* the trace: prefill all on the GPU, decode on the CPU */
    ASSERT_OK(synor_llm_ctx_set_split(gpu, &(synor_llm_split){3, 0}));
    ASSERT_OK(synor_llm_ctx_trace(gpu, 1));
    unsigned seqs[NP] = {0};
    synor_llm_seq_reset(gpu, 0);
    ASSERT_OK(synor_llm_batch(gpu, NP, prompt, seqs, NULL));
    int32_t t = 5;
    ASSERT_OK(synor_llm_batch(gpu, 1, &t, seqs, NULL));
    size_t n;
    const synor_llm_event *ev = synor_llm_ctx_events(gpu, &n);
    size_t sgemm = 0, sgemv = 0, h2d = 0, d2h = 0, drive = 0, cpu_prefill = 0, cpu_decode = 0;
    uint64_t up = 0;
    for (size_t i = 0; i < n; i++) {
        ASSERT(ev[i].end >= ev[i].start && ev[i].start >= 0);
        ASSERT(ev[i].layer >= -1 && ev[i].layer < 3);
        ASSERT_EQ(ev[i].rows, ev[i].prefill ? (unsigned)NP : 1u);
        if (ev[i].gpu) {
            ASSERT(ev[i].prefill); /* the decode's split has no GPU layer */
            sgemm += !strcmp(ev[i].op, "sgemm");
            sgemv += !strcmp(ev[i].op, "sgemv");
            h2d += !strcmp(ev[i].op, "h2d");
            d2h += !strcmp(ev[i].op, "d2h");
            up += !strcmp(ev[i].op, "h2d") ? ev[i].bytes : 0;
        } else if (!strcmp(ev[i].op, "gpu_step")) {
            drive++;
        } else {
            cpu_prefill += ev[i].prefill;
            cpu_decode += !ev[i].prefill;
        }
    }
    /* prefill, no logits but the last row's: 4 products a layer (GEMM) and
     * the classifier (of one row: GEMV) */
    ASSERT_EQ(sgemm, 12u);
    ASSERT_EQ(sgemv, 1u);
    ASSERT_EQ(h2d, 13u);
    ASSERT_EQ(d2h, 13u);
    ASSERT_EQ(drive, 13u);
    ASSERT(up > 0);
    /* the CPU: attention (2 workers x 3 layers) in prefill; in decode 5
     * steps x 3 layers and the classifier, 2 tasks each */
    ASSERT_EQ(cpu_prefill, 6u);
    ASSERT_EQ(cpu_decode, (size_t)(5 * 3 + 1) * 2);
    ASSERT_OK(synor_llm_ctx_trace(gpu, 0));
    ASSERT_OK(synor_llm_batch(gpu, 1, &t, seqs, NULL));
    synor_llm_ctx_events(gpu, &n);
    ASSERT_EQ(n, 0u);
    synor_llm_ctx_destroy(gpu);
    synor_llm_ctx_destroy(cpu);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
    ASSERT_EQ(counter(CU, "synor_mock_allocs") > 0, 0);
}

TEST(cleanup)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (dir[0])
        ASSERT_EQ(system(cmd), 0);
}

TEST_MAIN(gpu_layers_give_the_cpu_logits, gpu_batches_of_several_sequences,
          quantized_weights_on_the_gpu_match_the_reference, what_cannot_run_on_a_gpu_says_why,
          prefill_and_decode_splits_keep_the_logits, the_split_planner_and_the_trace, cleanup)
