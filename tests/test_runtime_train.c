/* test_runtime_train.c - the trainer (synor/train.h): every operation's
 * gradient against central finite differences, the whole model's gradient
 * likewise, data parallelism (any replica count gives the same gradient;
 * a replica count gives the same bits every run), AdamW and the schedule,
 * a NaN named by its operation with nothing updated, bad tokens, and a
 * model that learns (memorises a batch). */
#include <stdint.h>
#include <stdlib.h>

#include "llm_fixture.h"
#include "synor/error.h"
#include "synor/train.h"
#include "test.h"
#include "train/train_internal.h"

static uint64_t rs = 12345;
static float urand(void) /* uniform in [-1, 1) */
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rs >> 11) * 0x1p-53 * 2.0 - 1.0);
}
static void fill(float *p, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++)
        p[i] = urand() * scale;
}
static float *arr(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof(float));
    if (!p)
        abort();
    return p;
}

/* Compares an analytic gradient with central differences of f at eps:
 * |a - fd| <= tol (|fd| + 0.05 * scale), scale the largest |fd|. */
static int close_fd(const float *a, const double *fd, size_t n, double tol, const char *what)
{
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(fd[i]));
    for (size_t i = 0; i < n; i++)
        if (!(fabs(a[i] - fd[i]) <= tol * (fabs(fd[i]) + 0.05 * scale))) {
            fprintf(stderr, "  %s: element %zu: analytic %.8g, finite differences %.8g\n", what, i,
                    (double)a[i], fd[i]);
            return 0;
        }
    return 1;
}

/* ------------------------------------------------------- operations */

/* loss = sum_i proj_i y_i, so dy = proj */
static double dotd(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

TEST(rmsnorm_backward_matches_finite_differences)
{
    int n = 3, d = 16;
    float *x = arr(n * d), *w = arr(d), *y = arr(n * d), *r = arr(n), *proj = arr(n * d);
    float *dx = arr(n * d), *dw = arr(d);
    fill(x, n * d, 1.5f);
    fill(w, d, 1.0f);
    fill(proj, n * d, 1.0f);
    synor__train_rmsnorm(y, r, x, w, n, d, 1e-5f);
    synor__train_rmsnorm_bwd(dx, dw, proj, x, r, w, n, d);
    double fdx[48], fdw[16], eps = 1e-2;
    for (int i = 0; i < n * d; i++) {
        float keep = x[i];
        x[i] = keep + (float)eps;
        synor__train_rmsnorm(y, r, x, w, n, d, 1e-5f);
        double up = dotd(y, proj, n * d);
        x[i] = keep - (float)eps;
        synor__train_rmsnorm(y, r, x, w, n, d, 1e-5f);
        fdx[i] = (up - dotd(y, proj, n * d)) / (2 * eps);
        x[i] = keep;
    }
    for (int i = 0; i < d; i++) {
        float keep = w[i];
        w[i] = keep + (float)eps;
        synor__train_rmsnorm(y, r, x, w, n, d, 1e-5f);
        double up = dotd(y, proj, n * d);
        w[i] = keep - (float)eps;
        synor__train_rmsnorm(y, r, x, w, n, d, 1e-5f);
        fdw[i] = (up - dotd(y, proj, n * d)) / (2 * eps);
        w[i] = keep;
    }
    ASSERT(close_fd(dx, fdx, n * d, 1e-2, "rmsnorm dx"));
    ASSERT(close_fd(dw, fdw, d, 1e-2, "rmsnorm dw"));
    free(x), free(w), free(y), free(r), free(proj), free(dx), free(dw);
}

TEST(rope_backward_is_the_inverse_rotation)
{
    int n = 5, T = 5, hs = 8, width = 16, half = hs / 2;
    float *cs = arr(T * half), *sn = arr(T * half), *v = arr(n * width), *proj = arr(n * width);
    for (int p = 0; p < T; p++)
        for (int j = 0; j < half; j++) {
            float a = (float)p * powf(10000.0f, -(float)(2 * j) / hs);
            cs[p * half + j] = cosf(a);
            sn[p * half + j] = sinf(a);
        }
    fill(v, n * width, 1.0f);
    fill(proj, n * width, 1.0f);
    /* d/dv of proj . rope(v) is rope^-1(proj) */
    float *g = arr(n * width);
    memcpy(g, proj, n * width * sizeof(float));
    synor__train_rope(g, n, T, width, hs, cs, sn, 1);
    double fd[80], eps = 1e-2;
    float *y = arr(n * width);
    for (int i = 0; i < n * width; i++) {
        float keep = v[i];
        v[i] = keep + (float)eps;
        memcpy(y, v, n * width * sizeof(float));
        synor__train_rope(y, n, T, width, hs, cs, sn, 0);
        double up = dotd(y, proj, n * width);
        v[i] = keep - (float)eps;
        memcpy(y, v, n * width * sizeof(float));
        synor__train_rope(y, n, T, width, hs, cs, sn, 0);
        fd[i] = (up - dotd(y, proj, n * width)) / (2 * eps);
        v[i] = keep;
    }
    ASSERT(close_fd(g, fd, n * width, 1e-3, "rope"));
    free(cs), free(sn), free(v), free(proj), free(g), free(y);
}

TEST(attention_backward_matches_finite_differences)
{
    /* 2 sequences, 5 positions, 4 query heads over 2 KV heads of 4 */
    const synor__blas_api *bl = synor__blas();
    if (!bl)
        TEST_SKIP("OpenBLAS cannot be loaded (libopenblas0)");
    int rows = 2, T = 5, nh = 4, nkv = 2, hs = 4, D = nh * hs, KVD = nkv * hs, N = rows * T;
    float *q = arr(N * D), *k = arr(N * KVD), *v = arr(N * KVD), *o = arr(N * D);
    float *att = arr(rows * nh * T * T), *proj = arr(N * D);
    float *dq = arr(N * D), *dk = arr(N * KVD), *dv = arr(N * KVD), *dp = arr(T * T);
    fill(q, N * D, 1.0f);
    fill(k, N * KVD, 1.0f);
    fill(v, N * KVD, 1.0f);
    fill(proj, N * D, 1.0f);
    synor__train_attention(bl, o, att, q, k, v, rows, T, nh, nkv, hs);
    synor__train_attention_bwd(bl, dq, dk, dv, proj, att, q, k, v, rows, T, nh, nkv, hs, dp);
    float *ins[3] = {q, k, v}, *grads[3] = {dq, dk, dv};
    size_t sizes[3] = {(size_t)N * D, (size_t)N * KVD, (size_t)N * KVD};
    const char *names[3] = {"attention dq", "attention dk", "attention dv"};
    double *fd = malloc(N * D * sizeof(double)), eps = 1e-2;
    for (int a = 0; a < 3; a++) {
        for (size_t i = 0; i < sizes[a]; i++) {
            float keep = ins[a][i];
            ins[a][i] = keep + (float)eps;
            synor__train_attention(bl, o, att, q, k, v, rows, T, nh, nkv, hs);
            double up = dotd(o, proj, N * D);
            ins[a][i] = keep - (float)eps;
            synor__train_attention(bl, o, att, q, k, v, rows, T, nh, nkv, hs);
            fd[i] = (up - dotd(o, proj, N * D)) / (2 * eps);
            ins[a][i] = keep;
        }
        ASSERT(close_fd(grads[a], fd, sizes[a], 1e-2, names[a]));
    }
    /* causal: the first position's output reads only itself */
    ASSERT(att[1] == 0.0f && att[0] == 1.0f);
    free(fd), free(q), free(k), free(v), free(o), free(att), free(proj), free(dq), free(dk);
    free(dv), free(dp);
}

TEST(swiglu_backward_matches_finite_differences)
{
    size_t n = 40;
    float *h1 = arr(n), *h3 = arr(n), *hg = arr(n), *proj = arr(n), *d1 = arr(n), *d3 = arr(n);
    fill(h1, n, 3.0f);
    fill(h3, n, 2.0f);
    fill(proj, n, 1.0f);
    synor__train_swiglu_bwd(d1, d3, proj, h1, h3, n);
    double fd1[40], fd3[40], eps = 1e-2;
    for (size_t i = 0; i < n; i++) {
        float keep = h1[i];
        h1[i] = keep + (float)eps;
        synor__train_swiglu(hg, h1, h3, n);
        double up = dotd(hg, proj, n);
        h1[i] = keep - (float)eps;
        synor__train_swiglu(hg, h1, h3, n);
        fd1[i] = (up - dotd(hg, proj, n)) / (2 * eps);
        h1[i] = keep;
        keep = h3[i];
        h3[i] = keep + (float)eps;
        synor__train_swiglu(hg, h1, h3, n);
        up = dotd(hg, proj, n);
        h3[i] = keep - (float)eps;
        synor__train_swiglu(hg, h1, h3, n);
        fd3[i] = (up - dotd(hg, proj, n)) / (2 * eps);
        h3[i] = keep;
    }
    ASSERT(close_fd(d1, fd1, n, 1e-2, "swiglu gate"));
    ASSERT(close_fd(d3, fd3, n, 1e-2, "swiglu up"));
    free(h1), free(h3), free(hg), free(proj), free(d1), free(d3);
}

TEST(cross_entropy_backward_matches_finite_differences)
{
    int n = 3, V = 11;
    int32_t tgt[3] = {0, 7, 10};
    float *lg = arr(n * V), *work = arr(n * V);
    fill(lg, n * V, 3.0f);
    memcpy(work, lg, n * V * sizeof(float));
    double loss = synor__train_xent(work, tgt, n, V, 1.0f, 1);
    /* against log-sum-exp in double */
    double ref = 0;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < V; j++)
            s += exp((double)lg[i * V + j]);
        ref += log(s) - lg[i * V + tgt[i]];
    }
    ASSERT_NEAR(loss, ref, 1e-6);
    double fd[33], eps = 1e-2;
    float *tmp = arr(n * V);
    for (int i = 0; i < n * V; i++) {
        float keep = lg[i];
        lg[i] = keep + (float)eps;
        memcpy(tmp, lg, n * V * sizeof(float));
        double up = synor__train_xent(tmp, tgt, n, V, 1.0f, 0);
        lg[i] = keep - (float)eps;
        memcpy(tmp, lg, n * V * sizeof(float));
        fd[i] = (up - synor__train_xent(tmp, tgt, n, V, 1.0f, 0)) / (2 * eps);
        lg[i] = keep;
    }
    ASSERT(close_fd(work, fd, n * V, 1e-2, "cross-entropy"));
    free(lg), free(work), free(tmp);
}

TEST(matmul_backward_matches_finite_differences)
{
    const synor__blas_api *b = synor__blas();
    if (!b)
        TEST_SKIP("OpenBLAS cannot be loaded (libopenblas0)");
    int n = 4, in = 6, out = 5;
    float *x = arr(n * in), *w = arr(out * in), *y = arr(n * out), *proj = arr(n * out);
    float *dx = arr(n * in), *dw = arr(out * in);
    fill(x, n * in, 1.0f);
    fill(w, out * in, 1.0f);
    fill(proj, n * out, 1.0f);
    synor__train_mm_bwd_x(b, dx, proj, w, n, in, out, 0.0f);
    synor__train_mm_bwd_w(b, dw, proj, x, n, in, out);
    double fdx[24], fdw[30], eps = 1e-2;
    for (int i = 0; i < n * in; i++) {
        float keep = x[i];
        x[i] = keep + (float)eps;
        synor__train_mm(b, y, x, w, n, in, out);
        double up = dotd(y, proj, n * out);
        x[i] = keep - (float)eps;
        synor__train_mm(b, y, x, w, n, in, out);
        fdx[i] = (up - dotd(y, proj, n * out)) / (2 * eps);
        x[i] = keep;
    }
    for (int i = 0; i < out * in; i++) {
        float keep = w[i];
        w[i] = keep + (float)eps;
        synor__train_mm(b, y, x, w, n, in, out);
        double up = dotd(y, proj, n * out);
        w[i] = keep - (float)eps;
        synor__train_mm(b, y, x, w, n, in, out);
        fdw[i] = (up - dotd(y, proj, n * out)) / (2 * eps);
        w[i] = keep;
    }
    ASSERT(close_fd(dx, fdx, n * in, 1e-3, "matmul dx"));
    ASSERT(close_fd(dw, fdw, out * in, 1e-3, "matmul dw"));
    free(x), free(w), free(y), free(proj), free(dx), free(dw);
}

/* ------------------------------------------------------------ model */

static const synor_train_config tiny = {.dim = 16,
                                        .hidden_dim = 24,
                                        .n_layers = 2,
                                        .n_heads = 4,
                                        .n_kv_heads = 2,
                                        .vocab_size = 23,
                                        .seq_len = 6};

static void tokens_fill(int32_t *tok, int rows, int T, int V, uint64_t seed)
{
    uint64_t s = seed;
    for (int i = 0; i < rows * (T + 1); i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = (int32_t)((s >> 33) % (uint64_t)V);
    }
}

static synor_runtime *rt_or_skip(unsigned workers)
{
    if (!synor__blas())
        return NULL;
    return llm_test_runtime(workers);
}

TEST(model_gradient_matches_finite_differences)
{
    synor_runtime *rt = rt_or_skip(2);
    if (!rt)
        TEST_SKIP("no runtime or OpenBLAS (libopenblas0)");
    for (int shared = 0; shared <= 1; shared++) {
        synor_train_config c = tiny;
        c.shared_classifier = shared;
        synor_trainer *t;
        ASSERT_OK(synor_trainer_create(rt, &c, 3, 2, &t));
        synor_trainer_init_params(t, 9);
        size_t P = synor_train_param_count(&c);
        float *p = synor_trainer_params(t);
        /* larger weights than the initialisation: gradients well above
         * float rounding of the loss */
        for (size_t i = 0; i < P; i++)
            p[i] = p[i] * 5.0f + (p[i] == 1.0f ? urand() * 0.3f - 4.0f : 0.0f);
        int32_t tok[3 * 7];
        tokens_fill(tok, 3, 6, c.vocab_size, 5);
        double loss;
        ASSERT_OK(synor_trainer_grad(t, tok, &loss));
        float *g = arr(P);
        memcpy(g, synor_trainer_grads(t), P * sizeof(float));
        /* every 7th parameter, so every weight of the model is sampled */
        size_t ns = 0;
        float *ga = arr(P);
        double *fd = malloc(P * sizeof(double)), eps = 3e-3;
        for (size_t i = 0; i < P; i += 7) {
            float keep = p[i];
            double up, dn;
            p[i] = keep + (float)eps;
            ASSERT_OK(synor_trainer_eval(t, tok, 3, &up));
            p[i] = keep - (float)eps;
            ASSERT_OK(synor_trainer_eval(t, tok, 3, &dn));
            p[i] = keep;
            fd[ns] = (up - dn) / (2 * eps);
            ga[ns++] = g[i];
        }
        ASSERT(close_fd(ga, fd, ns, 3e-2, shared ? "model (shared)" : "model (separate)"));
        free(g), free(ga), free(fd);
        synor_trainer_destroy(t);
    }
    synor_runtime_destroy(rt);
}

TEST(replicas_give_the_same_gradient_and_the_same_bits_every_run)
{
    synor_runtime *rt = rt_or_skip(3);
    if (!rt)
        TEST_SKIP("no runtime or OpenBLAS (libopenblas0)");
    size_t P = synor_train_param_count(&tiny);
    int32_t tok[6 * 7];
    tokens_fill(tok, 6, 6, tiny.vocab_size, 77);
    float *g[4];
    double loss[4];
    int reps[4] = {1, 2, 3, 3};
    for (int k = 0; k < 4; k++) {
        synor_trainer *t;
        ASSERT_OK(synor_trainer_create(rt, &tiny, 6, reps[k], &t));
        ASSERT_EQ(synor_trainer_replicas(t), reps[k]);
        synor_trainer_init_params(t, 3);
        ASSERT_OK(synor_trainer_grad(t, tok, &loss[k]));
        g[k] = arr(P);
        memcpy(g[k], synor_trainer_grads(t), P * sizeof(float));
        synor_trainer_destroy(t);
    }
    for (int k = 1; k < 4; k++) {
        ASSERT_NEAR(loss[k], loss[0], 1e-6);
        double num = 0, den = 0;
        for (size_t i = 0; i < P; i++) {
            num += ((double)g[k][i] - g[0][i]) * ((double)g[k][i] - g[0][i]);
            den += (double)g[0][i] * g[0][i];
        }
        ASSERT(sqrt(num / den) < 1e-5);
    }
    ASSERT(memcmp(g[2], g[3], P * sizeof(float)) == 0);
    ASSERT(loss[2] == loss[3]);
    for (int k = 0; k < 4; k++)
        free(g[k]);
    synor_runtime_destroy(rt);
}

TEST(adamw_follows_its_definition_and_the_schedule)
{
    synor_train_adamw o;
    synor_train_adamw_init(&o, 1000);
    ASSERT_NEAR(synor_train_lr(&o, 0), 1e-3 / 100, 1e-6);
    ASSERT_NEAR(synor_train_lr(&o, 99), 1e-3, 1e-6);
    ASSERT_NEAR(synor_train_lr(&o, 550), 1e-4 + 0.5 * (1e-3 - 1e-4), 1e-5);
    ASSERT_NEAR(synor_train_lr(&o, 1000), 1e-4, 1e-6);
    ASSERT_NEAR(synor_train_lr(&o, 5000), 1e-4, 1e-6);
    synor_runtime *rt = rt_or_skip(2);
    if (!rt)
        TEST_SKIP("no runtime or OpenBLAS (libopenblas0)");
    synor_trainer *t;
    ASSERT_OK(synor_trainer_create(rt, &tiny, 2, 2, &t));
    synor_trainer_init_params(t, 1);
    size_t P = synor_train_param_count(&tiny);
    float *before = arr(P);
    memcpy(before, synor_trainer_params(t), P * sizeof(float));
    int32_t tok[2 * 7];
    tokens_fill(tok, 2, 6, tiny.vocab_size, 2);
    o = (synor_train_adamw){.lr = 0.01f,
                            .min_lr = 0.01f,
                            .decay_steps = 10,
                            .beta1 = 0.9f,
                            .beta2 = 0.95f,
                            .eps = 1e-8f,
                            .weight_decay = 0.1f,
                            .grad_clip = 0.5f};
    synor_train_step_info info;
    ASSERT_OK(synor_trainer_step(t, tok, &o, &info));
    ASSERT_EQ(info.step, 0);
    ASSERT_EQ(synor_trainer_step_count(t), 1);
    const float *g = synor_trainer_grads(t), *p = synor_trainer_params(t);
    double clip = fmin(1.0, 0.5 / (info.grad_norm + 1e-6));
    /* step 1: m = 0.1 g', v = 0.05 g'^2, m^ = g', v^ = g'^2: p -= lr (sign(g') + wd p) */
    size_t ra = synor_train_param_offset(&tiny, SYNOR_L2C_RMS_ATT, 0);
    size_t rf = synor_train_param_offset(&tiny, SYNOR_L2C_RMS_FFN, 0);
    size_t rl = synor_train_param_offset(&tiny, SYNOR_L2C_RMS_FINAL, 0);
    size_t wq = synor_train_param_offset(&tiny, SYNOR_L2C_WQ, 1) + 5;
    for (size_t i = 0; i < P; i++) {
        int norm = (i >= ra && i < ra + 32) || (i >= rf && i < rf + 32) || (i >= rl && i < rl + 16);
        double gc = g[i] * clip, wd = norm ? 0.0 : 0.1;
        double expect = before[i] * (1 - 0.01 * wd) -
                        0.01 * (0.1 * gc / 0.1) / (sqrt(0.05 * gc * gc) / sqrt(0.05) + 1e-8);
        if (!(fabs(p[i] - expect) <= 1e-5 * fmax(1e-3, fabs(expect))))
            TEST__FAIL("parameter %zu: %.9g, AdamW's definition gives %.9g", i, (double)p[i],
                       expect);
    }
    ASSERT(p[wq] != before[wq]);
    free(before);
    synor_trainer_destroy(t);
    synor_runtime_destroy(rt);
}

TEST(a_nan_is_named_by_its_operation_and_nothing_is_updated)
{
    synor_runtime *rt = rt_or_skip(2);
    if (!rt)
        TEST_SKIP("no runtime or OpenBLAS (libopenblas0)");
    synor_trainer *t;
    ASSERT_OK(synor_trainer_create(rt, &tiny, 2, 2, &t));
    synor_trainer_init_params(t, 1);
    size_t P = synor_train_param_count(&tiny);
    float *p = synor_trainer_params(t);
    p[synor_train_param_offset(&tiny, SYNOR_L2C_W1, 1) + 3] = NAN;
    float *before = arr(P);
    memcpy(before, p, P * sizeof(float));
    int32_t tok[2 * 7];
    tokens_fill(tok, 2, 6, tiny.vocab_size, 2);
    synor_train_adamw o;
    synor_train_adamw_init(&o, 10);
    ASSERT_EQ(synor_trainer_step(t, tok, &o, NULL), SYNOR_ERANGE);
    ASSERT(strstr(synor_errmsg(), "layer 1: SwiGLU (w1, w3)") != NULL);
    ASSERT(memcmp(before, p, P * sizeof(float)) == 0);
    ASSERT_EQ(synor_trainer_step_count(t), 0);
    /* a token out of the vocabulary, named by row and position */
    p[synor_train_param_offset(&tiny, SYNOR_L2C_W1, 1) + 3] = 0.01f;
    tok[7 + 4] = 23;
    ASSERT_EQ(synor_trainer_step(t, tok, &o, NULL), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "token 23 at row 0, position 4") != NULL);
    free(before);
    synor_trainer_destroy(t);
    synor_runtime_destroy(rt);
}

TEST(the_model_learns_a_batch_by_heart)
{
    synor_runtime *rt = rt_or_skip(2);
    if (!rt)
        TEST_SKIP("no runtime or OpenBLAS (libopenblas0)");
    synor_train_config c = {.dim = 32,
                            .hidden_dim = 64,
                            .n_layers = 2,
                            .n_heads = 4,
                            .n_kv_heads = 4,
                            .vocab_size = 40,
                            .seq_len = 16,
                            .shared_classifier = 1};
    synor_trainer *t;
    ASSERT_OK(synor_trainer_create(rt, &c, 4, 0, &t));
    synor_trainer_init_params(t, 11);
    int32_t tok[4 * 17];
    tokens_fill(tok, 4, 16, c.vocab_size, 8);
    synor_train_adamw o;
    synor_train_adamw_init(&o, 150);
    o.lr = 1e-2f;
    o.weight_decay = 0;
    synor_train_step_info first = {0}, info = {0};
    for (int s = 0; s < 150; s++) {
        ASSERT_OK(synor_trainer_step(t, tok, &o, &info));
        if (s == 0)
            first = info;
    }
    /* random ids: a model that learned nothing scores ln(40) = 3.69 */
    ASSERT(first.loss > 3.0);
    ASSERT(info.loss < 0.5);
    synor_trainer_destroy(t);
    synor_runtime_destroy(rt);
}

TEST(an_evaluation_of_fewer_rows_than_replicas_counts_only_those)
{
    synor_runtime *rt = rt_or_skip(2);
    if (!rt)
        TEST_SKIP("no runtime or OpenBLAS (libopenblas0)");
    synor_trainer *t, *one;
    ASSERT_OK(synor_trainer_create(rt, &tiny, 4, 2, &t));
    ASSERT_OK(synor_trainer_create(rt, &tiny, 1, 1, &one));
    synor_trainer_init_params(t, 4);
    synor_trainer_init_params(one, 4);
    int32_t tok[5 * 7];
    tokens_fill(tok, 5, 6, tiny.vocab_size, 6);
    double l4, l1, ref, l5, sum = 0;
    ASSERT_OK(synor_trainer_grad(t, tok, &l4)); /* every replica has a loss now */
    ASSERT_OK(synor_trainer_eval(t, tok, 1, &l1));
    ASSERT_OK(synor_trainer_eval(one, tok, 1, &ref));
    ASSERT_NEAR(l1, ref, 1e-6);
    /* 5 rows: a round of 4, then one of 1 */
    ASSERT_OK(synor_trainer_eval(t, tok, 5, &l5));
    for (int i = 0; i < 5; i++) {
        ASSERT_OK(synor_trainer_eval(one, tok + i * 7, 1, &ref));
        sum += ref;
    }
    ASSERT_NEAR(l5, sum / 5, 1e-6);
    synor_trainer_destroy(t);
    synor_trainer_destroy(one);
    synor_runtime_destroy(rt);
}

TEST(bad_configurations_are_named)
{
    synor_train_config c = tiny;
    c.n_heads = 3;
    ASSERT_EQ(synor_train_config_check(&c), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "n_heads 3") != NULL);
    c = tiny;
    c.n_kv_heads = 3;
    ASSERT_EQ(synor_train_config_check(&c), SYNOR_EINVAL);
    c = tiny;
    c.vocab_size = 0;
    ASSERT_EQ(synor_train_config_check(&c), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "vocab_size is 0") != NULL);
    /* the layout: llama2.c's order, the classifier shared or after the rest */
    c = tiny;
    size_t P = synor_train_param_count(&c);
    c.shared_classifier = 1;
    ASSERT_EQ(P - synor_train_param_count(&c), 23 * 16);
    ASSERT_EQ(synor_train_param_offset(&c, SYNOR_L2C_WCLS, 0), 0);
    ASSERT_EQ(synor_train_param_offset(&c, SYNOR_L2C_WQ, 1), 23 * 16 + 2 * 16 + 256);
}

TEST_MAIN(rmsnorm_backward_matches_finite_differences, rope_backward_is_the_inverse_rotation,
          attention_backward_matches_finite_differences, swiglu_backward_matches_finite_differences,
          cross_entropy_backward_matches_finite_differences,
          matmul_backward_matches_finite_differences, model_gradient_matches_finite_differences,
          replicas_give_the_same_gradient_and_the_same_bits_every_run,
          adamw_follows_its_definition_and_the_schedule,
          a_nan_is_named_by_its_operation_and_nothing_is_updated, the_model_learns_a_batch_by_heart,
          an_evaluation_of_fewer_rows_than_replicas_counts_only_those, bad_configurations_are_named)
