/* test_train_opencl.c - the trainer's replicas on an OpenCL device
 * (synor_trainer_use_opencl, src/train/ocl.c), alone and beside CPU
 * replicas (heterogeneous data parallel), against the CPU trainer: with
 * the same parameters and batch the loss and every gradient agree (tied
 * and separate classifiers, grouped-query attention); over AdamW steps the
 * loss curves agree; the products went to the device (exactly 3 (7 L + 1)
 * per device replica and pass); any split of the batch over the replicas
 * gives the same gradient; the measured split is a valid one; misuse and
 * an absent device are named. Runs on PoCL's CPU device in CI; skips
 * saying so where there is no OpenCL device. SYNOR_TRAINOCL_DEVICE=K runs
 * it on the runtime's OpenCL device K instead of the first (on a machine
 * with an OpenCL GPU beside PoCL). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synor/error.h"
#include "synor/runtime.h"
#include "synor/train.h"
#include "test.h"

static synor_runtime *runtime(int opencl)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 2;
    c.pin_workers = 0;
    c.opencl = opencl ? SYNOR_OPENCL_ALL : SYNOR_OPENCL_OFF;
    c.cuda = 0;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) || synor_runtime_start(rt)) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

/* The OpenCL device the test uses: SYNOR_TRAINOCL_DEVICE, else 0. */
static unsigned cl_dev(void)
{
    const char *v = getenv("SYNOR_TRAINOCL_DEVICE");
    return v && *v ? (unsigned)strtoul(v, NULL, 10) : 0;
}

static int have_opencl(synor_runtime *rt)
{
    unsigned seen = 0;
    for (unsigned i = 0; i < synor_runtime_device_count(rt); i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(rt, i, &di) == 0 && !strcmp(di.backend, "opencl") &&
            !di.stopped && seen++ == cl_dev()) {
            fprintf(stderr, "  on %s (%s)\n", di.name, di.product);
            return 1;
        }
    }
    return 0;
}

/* |a - b| <= tol (|b| + 0.01 max|b|) for every element; the worst ratio
 * (<= 1: within tolerance). */
static double worst(const float *a, const float *b, size_t n, double tol)
{
    double scale = 0, w = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(b[i]));
    for (size_t i = 0; i < n; i++)
        w = fmax(w, fabs(a[i] - b[i]) / (tol * (fabs(b[i]) + 0.01 * scale) + 1e-30));
    return w;
}

static synor_train_config small(int shared)
{
    return (synor_train_config){.dim = 32,
                                .hidden_dim = 48,
                                .n_layers = 2,
                                .n_heads = 4,
                                .n_kv_heads = 2,
                                .vocab_size = 64,
                                .seq_len = 16,
                                .shared_classifier = shared};
}

static void fill_tokens(int32_t *tok, size_t n, uint64_t s)
{
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = (int32_t)((s >> 33) % 64);
    }
}

#define BATCH 6

/* cpu: 3 replicas on the CPU; dev: 3 replicas, the last `on_dev` (0:
 * all) with their products on the OpenCL device. */
static void against_cpu(synor_runtime *rt, synor_train_config cfg, int on_dev)
{
    int shared = cfg.shared_classifier, W = cfg.seq_len + 1, L = cfg.n_layers;
    synor_trainer *cpu, *dev;
    ASSERT_OK(synor_trainer_create(rt, &cfg, BATCH, 3, &cpu));
    ASSERT_OK(synor_trainer_create(rt, &cfg, BATCH, 3, &dev));
    ASSERT_OK(synor_trainer_use_opencl(dev, cl_dev(), on_dev));
    ASSERT_EQ(synor_trainer_use_opencl(dev, cl_dev(), on_dev), SYNOR_ESTATE);
    ASSERT_EQ(synor_trainer_use_cuda(dev, 0), SYNOR_ESTATE);
    int ndev = on_dev ? on_dev : 3;
    for (int r = 0; r < 3; r++)
        ASSERT_EQ(synor_trainer_replica_on_device(dev, r), r >= 3 - ndev);
    ASSERT_EQ(synor_trainer_replica_on_device(cpu, 0), 0);
    synor_trainer_init_params(cpu, 7);
    synor_trainer_init_params(dev, 7);
    size_t P = synor_train_param_count(&cfg);
    int32_t tok[BATCH * 17];
    fill_tokens(tok, (size_t)BATCH * W, 99);
    double lc, ld;
    ASSERT_OK(synor_trainer_grad(cpu, tok, &lc));
    ASSERT_OK(synor_trainer_grad(dev, tok, &ld));
    /* 1e-3: the rounding of another summation order compounds through
     * the backward pass's layers; a wrong product is off by far more */
    double wg = worst(synor_trainer_grads(dev), synor_trainer_grads(cpu), P, 1e-3);
    fprintf(stderr,
            "  %s classifier, %d of 3 replicas on OpenCL: loss CPU %.7f with OpenCL %.7f; "
            "gradients: worst %.3f of the tolerance\n",
            shared ? "tied" : "separate", ndev, lc, ld, wg);
    ASSERT(fabs(lc - ld) <= 1e-5 * fabs(lc));
    ASSERT(wg <= 1.0);
    /* the loss curve: four AdamW steps each on the same batches */
    synor_train_adamw o;
    synor_train_adamw_init(&o, 10);
    o.warmup = 0;
    for (int k = 0; k < 4; k++) {
        synor_train_step_info ic, id;
        fill_tokens(tok, (size_t)BATCH * W, 1000 + (uint64_t)k);
        ASSERT_OK(synor_trainer_step(cpu, tok, &o, &ic));
        ASSERT_OK(synor_trainer_step(dev, tok, &o, &id));
        fprintf(stderr, "    step %d: loss CPU %.6f with OpenCL %.6f\n", k, ic.loss, id.loss);
        ASSERT(fabs(ic.loss - id.loss) <= 1e-4 * fabs(ic.loss));
        ASSERT(fabs(ic.grad_norm - id.grad_norm) <= 1e-3 * ic.grad_norm);
    }
    /* AdamW divides by sqrt(v): where a gradient is near zero its rounding
     * moves a parameter by up to lr, so parameters agree more loosely */
    ASSERT(worst(synor_trainer_params(dev), synor_trainer_params(cpu), P, 1e-2) <= 1.0);
    synor_train_gpu_stats st;
    synor_trainer_gpu_stats(dev, &st);
    char name[32];
    snprintf(name, sizeof name, "opencl%u", cl_dev());
    ASSERT_STREQ(st.device, name);
    ASSERT(st.product[0]);
    /* 5 passes with backward of each device replica: 7 L + 1 forward and
     * 2 (7 L + 1) backward products; the parameters uploaded once per step */
    ASSERT_EQ(st.products, (uint64_t)5 * ndev * 3 * (7 * L + 1));
    ASSERT_EQ(st.param_uploads, 5);
    /* evaluation (forward only) runs there too */
    double ec, ed;
    ASSERT_OK(synor_trainer_eval(cpu, tok, 4, &ec));
    ASSERT_OK(synor_trainer_eval(dev, tok, 4, &ed));
    ASSERT(fabs(ec - ed) <= 1e-4 * fabs(ec));
    synor_trainer_gpu_stats(cpu, &st);
    ASSERT_EQ(st.products, 0);
    ASSERT_STREQ(st.device, "");
    synor_trainer_destroy(dev);
    synor_trainer_destroy(cpu);
}

TEST(opencl_replicas_give_the_cpu_loss_and_gradients)
{
    synor_runtime *rt = runtime(1);
    ASSERT(rt);
    if (!have_opencl(rt)) {
        synor_runtime_destroy(rt);
        TEST_SKIP("no OpenCL device (PoCL's CPU device counts: install pocl-opencl-icd)");
    }
    against_cpu(rt, small(1), 0); /* all on the device */
    against_cpu(rt, small(0), 0);
    /* sizes that are no multiple of the kernel's blocks (64 rows, 8
     * columns): 14 positions per replica, widths 24, 12 and 36 */
    synor_train_config odd = {.dim = 24,
                              .hidden_dim = 36,
                              .n_layers = 1,
                              .n_heads = 4,
                              .n_kv_heads = 2,
                              .vocab_size = 64,
                              .seq_len = 7,
                              .shared_classifier = 0};
    against_cpu(rt, odd, 0);
    synor_runtime_destroy(rt);
}

TEST(cpu_and_opencl_replicas_together_follow_the_cpu)
{
    synor_runtime *rt = runtime(1);
    ASSERT(rt);
    if (!have_opencl(rt)) {
        synor_runtime_destroy(rt);
        TEST_SKIP("no OpenCL device (PoCL's CPU device counts: install pocl-opencl-icd)");
    }
    against_cpu(rt, small(1), 1); /* two on the CPU workers, one on the device */
    against_cpu(rt, small(0), 2);
    synor_runtime_destroy(rt);
}

/* Any split of the batch gives the same gradient; a measured one is valid. */
TEST(rows_split_over_the_replicas_at_will)
{
    synor_runtime *rt = runtime(1);
    ASSERT(rt);
    int ocl = have_opencl(rt);
    if (!ocl)
        fprintf(stderr, "  no OpenCL device: the split is tested on CPU replicas only\n");
    synor_train_config cfg = small(1);
    synor_trainer *a, *b;
    ASSERT_OK(synor_trainer_create(rt, &cfg, BATCH, 3, &a));
    ASSERT_OK(synor_trainer_create(rt, &cfg, BATCH, 3, &b));
    if (ocl)
        ASSERT_OK(synor_trainer_use_opencl(b, cl_dev(), 1));
    synor_trainer_init_params(a, 3);
    synor_trainer_init_params(b, 3);
    int rows[3];
    synor_trainer_get_rows(b, rows);
    ASSERT(rows[0] == 2 && rows[1] == 2 && rows[2] == 2);
    int bad[3] = {1, 1, 1};
    ASSERT_EQ(synor_trainer_set_rows(b, bad), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "sum to 3, not the batch (6)");
    int bad2[3] = {0, 3, 3};
    ASSERT_EQ(synor_trainer_set_rows(b, bad2), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "replica 0 gets 0 rows");
    int uneven[3] = {1, 1, 4}; /* the last replica's activations grow */
    ASSERT_OK(synor_trainer_set_rows(b, uneven));
    synor_trainer_get_rows(b, rows);
    ASSERT(rows[0] == 1 && rows[1] == 1 && rows[2] == 4);
    int32_t tok[BATCH * 17];
    fill_tokens(tok, BATCH * 17, 5);
    double la, lb;
    ASSERT_OK(synor_trainer_grad(a, tok, &la));
    ASSERT_OK(synor_trainer_grad(b, tok, &lb));
    size_t P = synor_train_param_count(&cfg);
    ASSERT(fabs(la - lb) <= 1e-5 * fabs(la));
    ASSERT(worst(synor_trainer_grads(b), synor_trainer_grads(a), P, 1e-3) <= 1.0);
    /* evaluation over more rows than the batch, in rounds, with this split */
    int32_t val[10 * 17];
    fill_tokens(val, 10 * 17, 6);
    double ea, eb;
    ASSERT_OK(synor_trainer_eval(a, val, 10, &ea));
    ASSERT_OK(synor_trainer_eval(b, val, 10, &eb));
    ASSERT(fabs(ea - eb) <= 1e-4 * fabs(ea));
    /* the measured split: whatever the timing, at least a row each and the
     * batch in all; the gradients of the last step are kept */
    float g0 = synor_trainer_grads(b)[0];
    double spr[3] = {0, 0, 0};
    ASSERT_EQ(synor_trainer_balance(b, tok, 0, spr), SYNOR_EINVAL);
    ASSERT_OK(synor_trainer_balance(b, tok, 2, spr));
    synor_trainer_get_rows(b, rows);
    fprintf(stderr, "  measured split: %d %d %d (%.2g %.2g %.2g s per row)\n", rows[0], rows[1],
            rows[2], spr[0], spr[1], spr[2]);
    ASSERT(rows[0] >= 1 && rows[1] >= 1 && rows[2] >= 1);
    ASSERT_EQ(rows[0] + rows[1] + rows[2], BATCH);
    ASSERT(spr[0] > 0 && spr[1] > 0 && spr[2] > 0);
    ASSERT(synor_trainer_grads(b)[0] == g0);
    ASSERT_OK(synor_trainer_grad(b, tok, &lb));
    ASSERT(fabs(la - lb) <= 1e-5 * fabs(la));
    synor_trainer_destroy(b);
    synor_trainer_destroy(a);
    synor_runtime_destroy(rt);
}

TEST(no_opencl_device_is_named)
{
    synor_runtime *rt = runtime(0);
    ASSERT(rt);
    synor_train_config cfg = small(1);
    synor_trainer *t;
    ASSERT_OK(synor_trainer_create(rt, &cfg, 2, 2, &t));
#if SYNOR_HAVE_OPENCL
    ASSERT_EQ(synor_trainer_use_opencl(t, 0, 3), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "replicas is 3");
#endif
    ASSERT_EQ(synor_trainer_use_opencl(t, 0, 0), SYNOR_ENOTSUP);
#if SYNOR_HAVE_OPENCL
    ASSERT_CONTAINS(synor_errmsg(), "0 OpenCL devices");
#else
    ASSERT_CONTAINS(synor_errmsg(), "no OpenCL");
#endif
    /* still trains on the CPU */
    int32_t tok[2 * 17] = {0};
    double loss;
    ASSERT_OK(synor_trainer_grad(t, tok, &loss));
    ASSERT(isfinite(loss));
    synor_trainer_destroy(t);
    synor_runtime_destroy(rt);
}

TEST_MAIN(opencl_replicas_give_the_cpu_loss_and_gradients,
          cpu_and_opencl_replicas_together_follow_the_cpu, rows_split_over_the_replicas_at_will,
          no_opencl_device_is_named)
