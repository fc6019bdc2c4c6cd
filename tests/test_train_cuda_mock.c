/* test_train_cuda_mock.c - the trainer's matrix products on a CUDA GPU
 * (synor_trainer_use_cuda, src/train/gpu.c) against the test doubles of
 * the CUDA driver API and cuBLAS (tests/cuda_mock/: host memory, no GPU),
 * which CTest puts first on LD_LIBRARY_PATH. With the same parameters and
 * batch, a trainer on the GPU gives the CPU trainer's loss and gradients
 * (tied and separate classifiers, grouped-query attention, two replicas
 * sharing the GPU); after AdamW steps on both, their parameters still
 * agree (the GPU's copy is refreshed after each update); the products
 * went through cuBLAS; what cannot run says why. SYNOR_TRAINCU_REAL=1
 * runs it on a real GPU (bench/run_gpu_llm.sh). */
#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synor/error.h"
#include "synor/runtime.h"
#include "synor/train.h"
#include "test.h"

static int real_gpu(void)
{
    const char *r = getenv("SYNOR_TRAINCU_REAL");
    return r && *r == '1';
}

static int mock_present(void)
{
    const char *p = getenv("LD_LIBRARY_PATH");
    return p && strstr(p, "cuda-mock");
}

static long counter(const char *lib, const char *name)
{
    if (real_gpu())
        return -1;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    _Atomic long *p = h ? dlsym(h, name) : NULL;
    return p ? atomic_load(p) : -1;
}

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

/* |a - b| <= tol (|b| + 0.01 max|b|) for every element; the worst ratio. */
static double worst(const float *a, const float *b, size_t n, double tol)
{
    double scale = 0, w = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(b[i]));
    for (size_t i = 0; i < n; i++)
        w = fmax(w, fabs(a[i] - b[i]) / (tol * (fabs(b[i]) + 0.01 * scale) + 1e-30));
    return w; /* <= 1: within tolerance */
}

/* n tokens below 64 from a fixed generator (seed s). */
static void random_tokens(int32_t *tok, int n, uint64_t s)
{
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = (int32_t)((s >> 33) % 64);
    }
}

static void one_config(synor_runtime *rt, int shared)
{
    synor_train_config cfg = {.dim = 32,
                              .hidden_dim = 48,
                              .n_layers = 2,
                              .n_heads = 4,
                              .n_kv_heads = 2,
                              .vocab_size = 64,
                              .seq_len = 16,
                              .shared_classifier = shared};
    int batch = 4;
    synor_trainer *cpu, *gpu;
    ASSERT_OK(synor_trainer_create(rt, &cfg, batch, 2, &cpu));
    ASSERT_OK(synor_trainer_create(rt, &cfg, batch, 2, &gpu));
    ASSERT_OK(synor_trainer_use_cuda(gpu, 0));
    ASSERT_EQ(synor_trainer_use_cuda(gpu, 0), SYNOR_ESTATE);
    synor_trainer_init_params(cpu, 7);
    synor_trainer_init_params(gpu, 7);
    size_t P = synor_train_param_count(&cfg);
    int32_t tok[4 * 17];
    random_tokens(tok, 4 * 17, 99);
    double lc, lg;
    ASSERT_OK(synor_trainer_grad(cpu, tok, &lc));
    ASSERT_OK(synor_trainer_grad(gpu, tok, &lg));
    /* 1e-3: rounding of other summation orders compounds through the
     * layers of the backward pass; a wrong product is off by far more */
    double wg = worst(synor_trainer_grads(gpu), synor_trainer_grads(cpu), P, 1e-3);
    fprintf(stderr, "  %s classifier: loss CPU %.7f GPU %.7f; gradients: worst %.3f of the "
                    "tolerance\n",
            shared ? "tied" : "separate", lc, lg, wg);
    ASSERT(fabs(lc - lg) <= 1e-5 * fabs(lc));
    ASSERT(wg <= 1.0);
    /* three AdamW steps each: the GPU's weights follow the updates */
    synor_train_adamw o;
    synor_train_adamw_init(&o, 10);
    o.warmup = 0;
    for (int k = 0; k < 3; k++) {
        synor_train_step_info ic, ig;
        ASSERT_OK(synor_trainer_step(cpu, tok, &o, &ic));
        ASSERT_OK(synor_trainer_step(gpu, tok, &o, &ig));
        ASSERT(fabs(ic.loss - ig.loss) <= 1e-5 * fabs(ic.loss));
    }
    /* AdamW divides by sqrt(v): where a gradient is near zero its rounding
     * moves a parameter by up to lr, so the parameters agree more loosely
     * than the losses */
    double wp = worst(synor_trainer_params(gpu), synor_trainer_params(cpu), P, 1e-2);
    ASSERT(wp <= 1.0);
    ASSERT_OK(synor_trainer_grad(cpu, tok, &lc));
    ASSERT_OK(synor_trainer_grad(gpu, tok, &lg));
    ASSERT(lc < 4.2); /* below ln 64 = 4.16 + noise: it learns */
    ASSERT(fabs(lc - lg) <= 1e-5 * fabs(lc));
    synor_train_gpu_stats st;
    synor_trainer_gpu_stats(gpu, &st);
    ASSERT_STREQ(st.device, "cuda0");
    /* 5 grads/steps, 2 replicas: per pass 7 L + 1 forward and 2 (7 L + 1)
     * backward products */
    ASSERT_EQ(st.products, (uint64_t)5 * 2 * 3 * (7 * 2 + 1));
    ASSERT_EQ(st.param_uploads, 5);
    synor_trainer_gpu_stats(cpu, &st);
    ASSERT_EQ(st.products, 0);
    ASSERT_STREQ(st.device, "");
    synor_trainer_destroy(gpu);
    synor_trainer_destroy(cpu);
}

TEST(gpu_trainer_gives_the_cpu_loss_and_gradients)
{
    if (!real_gpu() && !mock_present())
        TEST_SKIP("run through ctest (LD_LIBRARY_PATH names the CUDA mock), or set "
                  "SYNOR_TRAINCU_REAL=1 on a machine with a GPU");
    synor_runtime *rt = runtime(1);
    ASSERT(rt);
    if (!have_cuda(rt)) {
        synor_runtime_destroy(rt);
        TEST_SKIP("no CUDA device");
    }
    long g0 = counter("libcublas.so.13", "synor_mock_sgemm_calls");
    one_config(rt, 1);
    one_config(rt, 0);
    if (g0 >= 0)
        ASSERT_EQ(counter("libcublas.so.13", "synor_mock_sgemm_calls") - g0,
                  2 * 5 * 2 * 3 * (7 * 2 + 1));
    synor_runtime_destroy(rt);
    if (g0 >= 0) {
        ASSERT_EQ(counter("libcuda.so.1", "synor_mock_allocs"), 0);
        ASSERT_EQ(counter("libcuda.so.1", "synor_mock_errors"), 0);
    }
}

/* One batch over the CPU workers and the GPU at once: 3 replicas, the
 * last one's products on the GPU, the others' on OpenBLAS; the loss, the
 * gradients and two AdamW steps follow the CPU-only trainer's, and only
 * that replica's products went through cuBLAS. */
TEST(cpu_and_gpu_replicas_together_follow_the_cpu)
{
    if (!real_gpu() && !mock_present())
        TEST_SKIP("run through ctest (LD_LIBRARY_PATH names the CUDA mock), or set "
                  "SYNOR_TRAINCU_REAL=1 on a machine with a GPU");
    synor_runtime *rt = runtime(1);
    ASSERT(rt);
    if (!have_cuda(rt)) {
        synor_runtime_destroy(rt);
        TEST_SKIP("no CUDA device");
    }
    synor_train_config cfg = {.dim = 32,
                              .hidden_dim = 48,
                              .n_layers = 2,
                              .n_heads = 4,
                              .n_kv_heads = 2,
                              .vocab_size = 64,
                              .seq_len = 16,
                              .shared_classifier = 1};
    synor_trainer *cpu, *mix;
    ASSERT_OK(synor_trainer_create(rt, &cfg, 6, 3, &cpu));
    ASSERT_OK(synor_trainer_create(rt, &cfg, 6, 3, &mix));
    ASSERT_EQ(synor_trainer_use_cuda_replicas(mix, 0, 4), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "replicas is 4");
    ASSERT_OK(synor_trainer_use_cuda_replicas(mix, 0, 1));
    ASSERT(!synor_trainer_replica_on_device(mix, 0) && !synor_trainer_replica_on_device(mix, 1));
    ASSERT(synor_trainer_replica_on_device(mix, 2));
    synor_trainer_init_params(cpu, 7);
    synor_trainer_init_params(mix, 7);
    size_t P = synor_train_param_count(&cfg);
    int32_t tok[6 * 17];
    random_tokens(tok, 6 * 17, 5);
    double lc, lm;
    ASSERT_OK(synor_trainer_grad(cpu, tok, &lc));
    ASSERT_OK(synor_trainer_grad(mix, tok, &lm));
    double wg = worst(synor_trainer_grads(mix), synor_trainer_grads(cpu), P, 1e-3);
    fprintf(stderr, "  2 CPU + 1 GPU replicas: loss CPU %.7f mixed %.7f; gradients: worst %.3f "
                    "of the tolerance\n",
            lc, lm, wg);
    ASSERT(fabs(lc - lm) <= 1e-5 * fabs(lc));
    ASSERT(wg <= 1.0);
    synor_train_adamw o;
    synor_train_adamw_init(&o, 10);
    o.warmup = 0;
    for (int k = 0; k < 2; k++) {
        synor_train_step_info ic, im;
        ASSERT_OK(synor_trainer_step(cpu, tok, &o, &ic));
        ASSERT_OK(synor_trainer_step(mix, tok, &o, &im));
        ASSERT(fabs(ic.loss - im.loss) <= 1e-5 * fabs(ic.loss));
    }
    synor_train_gpu_stats st;
    synor_trainer_gpu_stats(mix, &st);
    ASSERT_STREQ(st.device, "cuda0");
    /* 3 passes of the one GPU replica: 7 L + 1 forward, 2 (7 L + 1) backward */
    ASSERT_EQ(st.products, (uint64_t)3 * 3 * (7 * 2 + 1));
    synor_trainer_destroy(mix);
    synor_trainer_destroy(cpu);
    synor_runtime_destroy(rt);
}

TEST(no_cuda_device_is_named)
{
    synor_runtime *rt = runtime(0);
    ASSERT(rt);
    synor_train_config cfg = {.dim = 32,
                              .hidden_dim = 48,
                              .n_layers = 1,
                              .n_heads = 4,
                              .n_kv_heads = 4,
                              .vocab_size = 64,
                              .seq_len = 8,
                              .shared_classifier = 1};
    synor_trainer *t;
    ASSERT_OK(synor_trainer_create(rt, &cfg, 2, 1, &t));
    ASSERT_EQ(synor_trainer_use_cuda(t, 0), SYNOR_ENOTSUP);
    ASSERT_CONTAINS(synor_errmsg(), "0 CUDA devices");
    /* still trains on the CPU */
    int32_t tok[2 * 9] = {0};
    double loss;
    ASSERT_OK(synor_trainer_grad(t, tok, &loss));
    ASSERT(isfinite(loss));
    synor_trainer_destroy(t);
    synor_runtime_destroy(rt);
}

TEST_MAIN(gpu_trainer_gives_the_cpu_loss_and_gradients, cpu_and_gpu_replicas_together_follow_the_cpu,
          no_cuda_device_is_named)
