/* pass.c - one replica's forward and backward pass over its rows: the
 * layers of train.h's model, with the activations the backward pass needs
 * kept in train_acts. Single-threaded: matrix products are OpenBLAS calls
 * at one thread (the runtime's setting), or cuBLAS calls on the trainer's
 * GPU (gpu.c), or kernels on its OpenCL device for the replicas that use
 * it (ocl.c); replicas run side by side. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "train/train_internal.h"

void synor__train_acts_free(train_acts *a)
{
    float **f[] = {&a->x,   &a->xn1, &a->r1, &a->q,  &a->k,   &a->v,   &a->att, &a->ao,     &a->xm,
                   &a->xn2, &a->r2,  &a->h1, &a->h3, &a->hg,  &a->xnf, &a->rf,  &a->logits, &a->dx,
                   &a->dxn, &a->dq,  &a->dk, &a->dv, &a->dao, &a->dh1, &a->dh3, &a->dhg,    &a->dp};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(f); i++) {
        synor__free(*f[i]);
        *f[i] = NULL;
    }
    synor__free(a->tgt);
    a->tgt = NULL;
    a->rows = 0;
}

int synor__train_acts_alloc(const synor_trainer *t, train_acts *a, int rows)
{
    const synor_train_config *c = &t->cfg;
    size_t N = (size_t)rows * c->seq_len, D = (size_t)c->dim, H = (size_t)c->hidden_dim;
    size_t L = (size_t)c->n_layers, KVD = (size_t)t->kvd, V = (size_t)c->vocab_size;
    size_t T = (size_t)c->seq_len, NH = (size_t)c->n_heads;
    struct {
        float **p;
        size_t n;
    } f[] = {{&a->x, (L + 1) * N * D},
             {&a->xn1, L * N * D},
             {&a->r1, L * N},
             {&a->q, L * N * D},
             {&a->k, L * N * KVD},
             {&a->v, L * N * KVD},
             {&a->att, L * rows * NH * T * T},
             {&a->ao, L * N * D},
             {&a->xm, L * N * D},
             {&a->xn2, L * N * D},
             {&a->r2, L * N},
             {&a->h1, L * N * H},
             {&a->h3, L * N * H},
             {&a->hg, L * N * H},
             {&a->xnf, N * D},
             {&a->rf, N},
             {&a->logits, N * V},
             {&a->dx, N * D},
             {&a->dxn, N * D},
             {&a->dq, N * D},
             {&a->dk, N * KVD},
             {&a->dv, N * KVD},
             {&a->dao, N * D},
             {&a->dh1, N * H},
             {&a->dh3, N * H},
             {&a->dhg, N * H},
             {&a->dp, T * T}};
    size_t bytes = 0;
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(f); i++) {
        *f[i].p = synor__malloc(f[i].n * sizeof(float));
        bytes += f[i].n * sizeof(float);
        if (!*f[i].p) {
            synor__train_acts_free(a);
            return synor__error(SYNOR_ENOMEM,
                                "trainer: cannot allocate the activations of %d sequences "
                                "of %zu positions (%zu bytes so far)",
                                rows, T, bytes);
        }
    }
    a->tgt = synor__malloc(N * sizeof(int32_t));
    if (!a->tgt) {
        synor__train_acts_free(a);
        return synor__error(SYNOR_ENOMEM, "trainer: cannot allocate %zu targets", N);
    }
    a->rows = rows;
    return 0;
}

#define W(w, l) (t->params + t->lay.off[(w)] + (size_t)(l)*t->lay.size[(w)])
#define G(w, l) (g + t->lay.off[(w)] + (size_t)(l)*t->lay.size[(w)])

/* In check mode, the first operation whose output holds a NaN or an
 * infinity ends the pass, named. */
#define CHECK(buf, count, ...)                                                                     \
    do {                                                                                           \
        if (check) {                                                                               \
            long bad_ = synor__train_nonfinite((buf), (size_t)(count));                            \
            if (bad_ >= 0) {                                                                       \
                int at_ = snprintf(msg, msgcap, __VA_ARGS__);                                      \
                if (at_ >= 0 && (size_t)at_ < msgcap)                                              \
                    snprintf(msg + at_, msgcap - (size_t)at_, " produced %g (element %ld)",        \
                             (double)(buf)[bad_], bad_);                                           \
                return SYNOR_ERANGE;                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void add(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

/* A matrix product (train_internal.h's synor__train_mm*, in their
 * argument order) on the host through OpenBLAS, on the OpenCL device when
 * the replica's products run there (ocl.c), or on the CUDA GPU when they
 * run there (gpu.c). */
static int mm(const synor_trainer *t, const train_replica *r, const synor__blas_api *b, int op,
              float *o, const float *p, const float *q, int n, int in, int out, float beta)
{
    if (r->ocl)
        return synor__train_ocl_mm(t, op, o, p, q, n, in, out, beta);
    if (r->cuda)
        return synor__train_gpu_mm(t, op, o, p, q, n, in, out, beta);
    if (op == TRAIN_MM_FWD)
        synor__train_mm(b, o, p, q, n, in, out);
    else if (op == TRAIN_MM_BWD_X)
        synor__train_mm_bwd_x(b, o, p, q, n, in, out, beta);
    else
        synor__train_mm_bwd_w(b, o, p, q, n, in, out);
    return 0;
}

#define MM(op, ...)                                                                                \
    do {                                                                                           \
        int e_ = mm(t, r, b, op, __VA_ARGS__);                                                     \
        if (e_) {                                                                                  \
            snprintf(msg, msgcap, "%s", synor_errmsg());                                           \
            return e_;                                                                             \
        }                                                                                          \
    } while (0)

/* Layer l's part of the kept activations. */
typedef struct layer_acts {
    float *x, *xn1, *r1, *q, *k, *v, *att, *ao, *xm, *xn2, *r2, *h1, *h3, *hg;
    float *xo; /* the layer's output: the next layer's x */
} layer_acts;

static layer_acts layer_of(const train_acts *a, int l, int rows, int T, int D, int KVD, int H,
                           int NH)
{
    size_t N = (size_t)rows * T, ND = N * D, NK = N * KVD, NHd = N * H, L = (size_t)l;
    return (layer_acts){.x = a->x + L * ND,
                        .xn1 = a->xn1 + L * ND,
                        .r1 = a->r1 + L * N,
                        .q = a->q + L * ND,
                        .k = a->k + L * NK,
                        .v = a->v + L * NK,
                        .att = a->att + L * rows * NH * T * T,
                        .ao = a->ao + L * ND,
                        .xm = a->xm + L * ND,
                        .xn2 = a->xn2 + L * ND,
                        .r2 = a->r2 + L * N,
                        .h1 = a->h1 + L * NHd,
                        .h3 = a->h3 + L * NHd,
                        .hg = a->hg + L * NHd,
                        .xo = a->x + (L + 1) * ND};
}

int synor__train_pass(const synor_trainer *t, train_replica *r, const int32_t *tokens, int rows,
                      float scale, int backward, int check, char *msg, size_t msgcap)
{
    const synor_train_config *c = &t->cfg;
    const synor__blas_api *b = synor__blas();
    if (!b) {
        snprintf(msg, msgcap, "%s", synor_errmsg());
        return SYNOR_ENOTSUP;
    }
    train_acts *a = &r->a;
    int T = c->seq_len, D = c->dim, H = c->hidden_dim, V = c->vocab_size, KVD = t->kvd;
    int L = c->n_layers, NH = c->n_heads, NKV = c->n_kv_heads, hs = t->hs;
    int N = rows * T;
    size_t ND = (size_t)N * D, NK = (size_t)N * KVD, NHd = (size_t)N * H;

    /* embedding; the targets */
    for (int i = 0; i < rows; i++)
        for (int p = 0; p <= T; p++) {
            int32_t id = tokens[(size_t)i * (T + 1) + p];
            if (id < 0 || id >= V) {
                snprintf(msg, msgcap,
                         "token %d at row %d, position %d is out of the "
                         "vocabulary (0 to %d)",
                         id, i, p, V - 1);
                return SYNOR_EINVAL;
            }
            if (p < T)
                memcpy(a->x + ((size_t)i * T + p) * D, W(SYNOR_L2C_TOKEN_EMBD, 0) + (size_t)id * D,
                       (size_t)D * sizeof(float));
            if (p > 0)
                a->tgt[i * T + p - 1] = id;
        }
    CHECK(a->x, ND, "embedding");

    for (int l = 0; l < L; l++) {
        layer_acts y = layer_of(a, l, rows, T, D, KVD, H, NH);
        synor__train_rmsnorm(y.xn1, y.r1, y.x, W(SYNOR_L2C_RMS_ATT, l), N, D, c->norm_eps);
        CHECK(y.xn1, ND, "layer %d: attention RMSNorm", l);
        MM(TRAIN_MM_FWD, y.q, y.xn1, W(SYNOR_L2C_WQ, l), N, D, D, 0.0f);
        MM(TRAIN_MM_FWD, y.k, y.xn1, W(SYNOR_L2C_WK, l), N, D, KVD, 0.0f);
        MM(TRAIN_MM_FWD, y.v, y.xn1, W(SYNOR_L2C_WV, l), N, D, KVD, 0.0f);
        CHECK(y.q, ND, "layer %d: query projection (wq)", l);
        CHECK(y.k, NK, "layer %d: key projection (wk)", l);
        CHECK(y.v, NK, "layer %d: value projection (wv)", l);
        synor__train_rope(y.q, N, T, D, hs, t->rope_cos, t->rope_sin, 0);
        synor__train_rope(y.k, N, T, KVD, hs, t->rope_cos, t->rope_sin, 0);
        synor__train_attention(b, y.ao, y.att, y.q, y.k, y.v, rows, T, NH, NKV, hs);
        CHECK(y.ao, ND, "layer %d: attention (softmax of the scores)", l);
        MM(TRAIN_MM_FWD, y.xm, y.ao, W(SYNOR_L2C_WO, l), N, D, D, 0.0f);
        add(y.xm, y.x, ND);
        CHECK(y.xm, ND, "layer %d: attention output projection (wo)", l);
        synor__train_rmsnorm(y.xn2, y.r2, y.xm, W(SYNOR_L2C_RMS_FFN, l), N, D, c->norm_eps);
        CHECK(y.xn2, ND, "layer %d: feed-forward RMSNorm", l);
        MM(TRAIN_MM_FWD, y.h1, y.xn2, W(SYNOR_L2C_W1, l), N, D, H, 0.0f);
        MM(TRAIN_MM_FWD, y.h3, y.xn2, W(SYNOR_L2C_W3, l), N, D, H, 0.0f);
        synor__train_swiglu(y.hg, y.h1, y.h3, NHd);
        CHECK(y.hg, NHd, "layer %d: SwiGLU (w1, w3)", l);
        MM(TRAIN_MM_FWD, y.xo, y.hg, W(SYNOR_L2C_W2, l), N, H, D, 0.0f);
        add(y.xo, y.xm, ND);
        CHECK(y.xo, ND, "layer %d: feed-forward down projection (w2)", l);
    }
    synor__train_rmsnorm(a->xnf, a->rf, a->x + (size_t)L * ND, W(SYNOR_L2C_RMS_FINAL, 0), N, D,
                         c->norm_eps);
    CHECK(a->xnf, ND, "final RMSNorm");
    MM(TRAIN_MM_FWD, a->logits, a->xnf, W(SYNOR_L2C_WCLS, 0), N, D, V, 0.0f);
    CHECK(a->logits, (size_t)N * V, "classifier");
    r->loss_sum = synor__train_xent(a->logits, a->tgt, N, V, scale, backward);
    if (check && !isfinite(r->loss_sum)) {
        snprintf(msg, msgcap, "cross-entropy produced %g", r->loss_sum);
        return SYNOR_ERANGE;
    }
    if (!backward)
        return 0;

    float *g = r->grad;
    memset(g, 0, t->lay.total * sizeof(float));
    float *dx = a->dx, *dxn = a->dxn;
    MM(TRAIN_MM_BWD_X, dxn, a->logits, W(SYNOR_L2C_WCLS, 0), N, D, V, 0.0f);
    MM(TRAIN_MM_BWD_W, G(SYNOR_L2C_WCLS, 0), a->logits, a->xnf, N, D, V, 0.0f);
    memset(dx, 0, ND * sizeof(float));
    synor__train_rmsnorm_bwd(dx, G(SYNOR_L2C_RMS_FINAL, 0), dxn, a->x + (size_t)L * ND, a->rf,
                             W(SYNOR_L2C_RMS_FINAL, 0), N, D);
    CHECK(dx, ND, "backward of the final RMSNorm and classifier");
    for (int l = L - 1; l >= 0; l--) {
        layer_acts y = layer_of(a, l, rows, T, D, KVD, H, NH);
        /* x_out = xm + hg w2^T */
        MM(TRAIN_MM_BWD_X, a->dhg, dx, W(SYNOR_L2C_W2, l), N, H, D, 0.0f);
        MM(TRAIN_MM_BWD_W, G(SYNOR_L2C_W2, l), dx, y.hg, N, H, D, 0.0f);
        synor__train_swiglu_bwd(a->dh1, a->dh3, a->dhg, y.h1, y.h3, NHd);
        MM(TRAIN_MM_BWD_X, dxn, a->dh1, W(SYNOR_L2C_W1, l), N, D, H, 0.0f);
        MM(TRAIN_MM_BWD_X, dxn, a->dh3, W(SYNOR_L2C_W3, l), N, D, H, 1.0f);
        MM(TRAIN_MM_BWD_W, G(SYNOR_L2C_W1, l), a->dh1, y.xn2, N, D, H, 0.0f);
        MM(TRAIN_MM_BWD_W, G(SYNOR_L2C_W3, l), a->dh3, y.xn2, N, D, H, 0.0f);
        synor__train_rmsnorm_bwd(dx, G(SYNOR_L2C_RMS_FFN, l), dxn, y.xm, y.r2,
                                 W(SYNOR_L2C_RMS_FFN, l), N, D);
        CHECK(dx, ND, "layer %d: backward of the feed-forward block", l);
        /* xm = x + ao wo^T */
        MM(TRAIN_MM_BWD_X, a->dao, dx, W(SYNOR_L2C_WO, l), N, D, D, 0.0f);
        MM(TRAIN_MM_BWD_W, G(SYNOR_L2C_WO, l), dx, y.ao, N, D, D, 0.0f);
        synor__train_attention_bwd(b, a->dq, a->dk, a->dv, a->dao, y.att, y.q, y.k, y.v, rows, T,
                                   NH, NKV, hs, a->dp);
        synor__train_rope(a->dq, N, T, D, hs, t->rope_cos, t->rope_sin, 1);
        synor__train_rope(a->dk, N, T, KVD, hs, t->rope_cos, t->rope_sin, 1);
        MM(TRAIN_MM_BWD_X, dxn, a->dq, W(SYNOR_L2C_WQ, l), N, D, D, 0.0f);
        MM(TRAIN_MM_BWD_X, dxn, a->dk, W(SYNOR_L2C_WK, l), N, D, KVD, 1.0f);
        MM(TRAIN_MM_BWD_X, dxn, a->dv, W(SYNOR_L2C_WV, l), N, D, KVD, 1.0f);
        MM(TRAIN_MM_BWD_W, G(SYNOR_L2C_WQ, l), a->dq, y.xn1, N, D, D, 0.0f);
        MM(TRAIN_MM_BWD_W, G(SYNOR_L2C_WK, l), a->dk, y.xn1, N, D, KVD, 0.0f);
        MM(TRAIN_MM_BWD_W, G(SYNOR_L2C_WV, l), a->dv, y.xn1, N, D, KVD, 0.0f);
        synor__train_rmsnorm_bwd(dx, G(SYNOR_L2C_RMS_ATT, l), dxn, y.x, y.r1,
                                 W(SYNOR_L2C_RMS_ATT, l), N, D);
        CHECK(dx, ND, "layer %d: backward of the attention block", l);
    }
    float *gemb = G(SYNOR_L2C_TOKEN_EMBD, 0);
    for (int i = 0; i < rows; i++)
        for (int p = 0; p < T; p++) {
            int32_t id = tokens[(size_t)i * (T + 1) + p];
            add(gemb + (size_t)id * D, dx + ((size_t)i * T + p) * D, (size_t)D);
        }
    CHECK(g, t->lay.total, "gradients");
    return 0;
}
