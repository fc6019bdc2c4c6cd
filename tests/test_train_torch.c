/* test_train_torch.c - the trainer against an independent reference:
 * PyTorch (Debian's python3-torch, a test-time reference only) running
 * tests/train_ref.py - the same architecture written with torch.nn and
 * autograd, in float64 - on the same weights and batch. Loss and every
 * weight's gradient must agree within 1e-4 relative, then after one
 * clipped AdamW step the parameters, and the loss and gradients there.
 * Skipped (exit 77, with the reason) where /usr/bin/python3 has no torch:
 * scripts/test.sh installs it. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "llm_fixture.h"
#include "synor/error.h"
#include "synor/train.h"
#include "test.h"

#define PY "/usr/bin/python3"

static int have_torch(void)
{
    return access(PY, X_OK) == 0 && system(PY " -c 'import torch' >/dev/null 2>&1") == 0;
}

static void put32(FILE *f, int32_t v) { fwrite(&v, 4, 1, f); }
static void putf(FILE *f, float v) { fwrite(&v, 4, 1, f); }

typedef struct ref {
    double loss[2];
    double *grad[2];
    double *params;
} ref;

static const char *const names[] = {"tok_emb", "rms_att", "wq", "wk", "wv",        "wo",
                                    "rms_ffn", "w1",      "w2", "w3", "rms_final", "wcls"};

/* Relative L2 error of each weight (all layers together): the largest. */
static double worst(const synor_train_config *c, const float *a, const double *b, char *which)
{
    double w = 0;
    for (int k = 0; k <= SYNOR_L2C_WCLS; k++) {
        if (k == SYNOR_L2C_WCLS && c->shared_classifier)
            continue;
        int per_layer =
            k != SYNOR_L2C_TOKEN_EMBD && k != SYNOR_L2C_RMS_FINAL && k != SYNOR_L2C_WCLS;
        size_t off = synor_train_param_offset(c, (synor_l2c_weight)k, 0);
        size_t n = synor_train_param_size(c, (synor_l2c_weight)k) * (per_layer ? c->n_layers : 1);
        double num = 0, den = 0;
        for (size_t i = off; i < off + n; i++) {
            num += (a[i] - b[i]) * (a[i] - b[i]);
            den += b[i] * b[i];
        }
        double e = den > 0 ? sqrt(num / den) : sqrt(num);
        if (e > w) {
            w = e;
            strcpy(which, names[k]);
        }
    }
    return w;
}

static void check_case(synor_runtime *rt, synor_train_config c, int B, int rounds)
{
    char dir[] = "/tmp/synor-torch-XXXXXX";
    if (!mkdtemp(dir))
        TEST__FAIL("mkdtemp");
    char cpath[128], opath[128], cmd[512];
    snprintf(cpath, sizeof cpath, "%s/case.bin", dir);
    snprintf(opath, sizeof opath, "%s/out.bin", dir);
    synor_trainer *t;
    ASSERT_OK(synor_trainer_create(rt, &c, B, 2, &t));
    synor_trainer_init_params(t, 17);
    size_t P = synor_train_param_count(&c);
    float *p = synor_trainer_params(t);
    /* norm weights away from 1, so their gradients are tested at a point
     * that is not special */
    for (size_t i = 0; i < P; i++)
        if (p[i] == 1.0f)
            p[i] = 1.0f + 0.3f * sinf((float)i);
    int T = c.seq_len;
    int32_t *tok = malloc((size_t)B * (T + 1) * sizeof(int32_t));
    uint64_t s = 3;
    for (int i = 0; i < B * (T + 1); i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = (int32_t)((s >> 33) % (uint64_t)c.vocab_size);
    }
    synor_train_adamw o = {.lr = 0.01f,
                           .min_lr = 0.01f,
                           .warmup = 0,
                           .decay_steps = 1 << 20,
                           .beta1 = 0.9f,
                           .beta2 = 0.95f,
                           .eps = 1e-8f,
                           .weight_decay = 0.1f,
                           .grad_clip = 0.5f};
    FILE *f = fopen(cpath, "wb");
    ASSERT(f);
    put32(f, 0x52545953);
    put32(f, 1);
    int hdr[] = {c.dim, c.hidden_dim,        c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, T,
                 B,     c.shared_classifier, rounds - 1};
    for (size_t i = 0; i < sizeof hdr / sizeof hdr[0]; i++)
        put32(f, hdr[i]);
    float fl[] = {10000.0f, 1e-5f, o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, o.grad_clip};
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++)
        putf(f, fl[i]);
    fwrite(p, sizeof(float), P, f);
    fwrite(tok, sizeof(int32_t), (size_t)B * (T + 1), f);
    fclose(f);
    snprintf(cmd, sizeof cmd, PY " %s/tests/train_ref.py %s %s", SYNOR_SOURCE_DIR, cpath, opath);
    ASSERT_EQ(system(cmd), 0);

    ref r = {0};
    f = fopen(opath, "rb");
    ASSERT(f);
    for (int k = 0; k < rounds; k++) {
        r.grad[k] = malloc(P * sizeof(double));
        ASSERT(fread(&r.loss[k], 8, 1, f) == 1);
        ASSERT(fread(r.grad[k], 8, P, f) == P);
    }
    r.params = malloc(P * sizeof(double));
    ASSERT(fread(r.params, 8, P, f) == P);
    fclose(f);

    char which[32] = "";
    double eg[2] = {0, 0}, el[2] = {0, 0};
    for (int k = 0; k < rounds; k++) {
        double loss;
        ASSERT_OK(synor_trainer_grad(t, tok, &loss));
        ASSERT_NEAR(loss, r.loss[k], 1e-4);
        el[k] = fabs(loss - r.loss[k]) / fabs(r.loss[k]);
        double e = eg[k] = worst(&c, synor_trainer_grads(t), r.grad[k], which);
        if (!(e <= 1e-4))
            TEST__FAIL("step %d: gradient of %s off by %.3g (relative L2)", k, which, e);
        if (k + 1 < rounds) {
            ASSERT_OK(synor_trainer_step(t, tok, &o, NULL));
        }
    }
    double e = worst(&c, synor_trainer_params(t), r.params, which);
    if (!(e <= 1e-4))
        TEST__FAIL("parameters after the steps: %s off by %.3g (relative L2)", which, e);
    fprintf(stderr,
            "  %s classifier, %d KV heads of %d: relative error of the loss %.2g, of the "
            "gradients %.2g (worst weight); after one AdamW step: parameters %.2g, loss %.2g, "
            "gradients %.2g\n",
            c.shared_classifier ? "tied" : "separate", c.n_kv_heads, c.n_heads, el[0], eg[0], e,
            el[1], eg[1]);
    for (int k = 0; k < rounds; k++)
        free(r.grad[k]);
    free(r.params);
    free(tok);
    synor_trainer_destroy(t);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "  could not remove %s\n", dir);
}

static synor_runtime *setup(void)
{
    if (!have_torch()) {
        fprintf(stderr, "  PyTorch is not installed for " PY " (Debian's python3-torch; "
                        "scripts/test.sh installs it)\n");
        return NULL;
    }
    return llm_test_runtime(2);
}

/* grouped-query attention and a classifier of its own; two rounds:
 * gradients, one AdamW step, gradients again */
TEST(grouped_query_attention_and_separate_classifier_match_pytorch)
{
    synor_runtime *rt = setup();
    if (!rt)
        TEST_SKIP("no PyTorch reference here: the check is skipped");
    synor_train_config a = {.dim = 48,
                            .hidden_dim = 96,
                            .n_layers = 2,
                            .n_heads = 6,
                            .n_kv_heads = 2,
                            .vocab_size = 67,
                            .seq_len = 16};
    check_case(rt, a, 4, 2);
    synor_runtime_destroy(rt);
}

/* tied classifier, as many KV heads as heads, three layers */
TEST(tied_classifier_matches_pytorch)
{
    synor_runtime *rt = setup();
    if (!rt)
        TEST_SKIP("no PyTorch reference here: the check is skipped");
    synor_train_config b = {.dim = 32,
                            .hidden_dim = 64,
                            .n_layers = 3,
                            .n_heads = 4,
                            .n_kv_heads = 4,
                            .vocab_size = 50,
                            .seq_len = 9,
                            .shared_classifier = 1};
    check_case(rt, b, 3, 2);
    synor_runtime_destroy(rt);
}

TEST_MAIN(grouped_query_attention_and_separate_classifier_match_pytorch,
          tied_classifier_matches_pytorch)
