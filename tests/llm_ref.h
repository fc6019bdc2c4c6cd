/* llm_ref.h - a plain reference implementation of the Llama forward pass
 * for the engine's tests: naive loops, every sum in double, weights read
 * from a GGUF file through the model layer's dequantizer (not the engine's
 * kernels). Slow and obviously right. */
#ifndef SYNOR_LLM_REF_H
#define SYNOR_LLM_REF_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synor/model.h"

typedef struct ref_mat {
    int rows, cols;
    double *w;
} ref_mat;

typedef struct ref_model {
    int dim, hid, layers, heads, kv_heads, vocab, seq_len;
    double eps, base;
    ref_mat embd, cls, *wq, *wk, *wv, *wo, *w1, *w2, *w3;
    double **rms_att, **rms_ffn, *rms_final;
} ref_model;

static double *ref_tensor(const synor_gguf *g, const char *name, size_t *n)
{
    const synor_gguf_tensor *t = synor_gguf_tensor_find(g, name);
    if (!t)
        return NULL;
    size_t cnt = 1;
    for (unsigned i = 0; i < t->ndim; i++)
        cnt *= (size_t)t->ne[i];
    float *f = malloc(cnt * sizeof *f);
    double *d = malloc(cnt * sizeof *d);
    synor_ttype_dequantize(t->type, t->data, f, cnt);
    for (size_t i = 0; i < cnt; i++)
        d[i] = f[i];
    free(f);
    *n = cnt;
    return d;
}

static int ref_mat_load(const synor_gguf *g, const char *name, int rows, int cols, ref_mat *m)
{
    size_t n = 0;
    m->rows = rows;
    m->cols = cols;
    m->w = ref_tensor(g, name, &n);
    return m->w && n == (size_t)rows * (size_t)cols ? 0 : -1;
}

static int ref_load(const char *path, ref_model *r)
{
    synor_gguf *g;
    if (synor_gguf_open(path, &g))
        return -1;
    uint32_t v;
    float f;
    memset(r, 0, sizeof *r);
    synor_gguf_get_u32(g, "llama.embedding_length", &v), r->dim = (int)v;
    synor_gguf_get_u32(g, "llama.feed_forward_length", &v), r->hid = (int)v;
    synor_gguf_get_u32(g, "llama.block_count", &v), r->layers = (int)v;
    synor_gguf_get_u32(g, "llama.attention.head_count", &v), r->heads = (int)v;
    synor_gguf_get_u32(g, "llama.attention.head_count_kv", &v), r->kv_heads = (int)v;
    synor_gguf_get_u32(g, "llama.context_length", &v), r->seq_len = (int)v;
    synor_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &f), r->eps = f;
    synor_gguf_get_f32(g, "llama.rope.freq_base", &f), r->base = f;
    r->vocab = (int)synor_gguf_tensor_find(g, "token_embd.weight")->ne[1];
    int D = r->dim, H = r->hid, KV = r->dim / r->heads * r->kv_heads, V = r->vocab, L = r->layers;
    int bad = ref_mat_load(g, "token_embd.weight", V, D, &r->embd);
    if (synor_gguf_tensor_find(g, "output.weight"))
        bad |= ref_mat_load(g, "output.weight", V, D, &r->cls);
    else
        r->cls = r->embd;
    size_t n;
    r->rms_final = ref_tensor(g, "output_norm.weight", &n);
    r->wq = calloc((size_t)L, sizeof(ref_mat));
    r->wk = calloc((size_t)L, sizeof(ref_mat));
    r->wv = calloc((size_t)L, sizeof(ref_mat));
    r->wo = calloc((size_t)L, sizeof(ref_mat));
    r->w1 = calloc((size_t)L, sizeof(ref_mat));
    r->w2 = calloc((size_t)L, sizeof(ref_mat));
    r->w3 = calloc((size_t)L, sizeof(ref_mat));
    r->rms_att = calloc((size_t)L, sizeof(double *));
    r->rms_ffn = calloc((size_t)L, sizeof(double *));
    for (int l = 0; l < L; l++) {
        char nm[64];
#define REF_M(field, suffix, rows, cols)                                  \
    snprintf(nm, sizeof nm, "blk.%d." suffix ".weight", l);               \
    bad |= ref_mat_load(g, nm, rows, cols, &r->field[l]);
        REF_M(wq, "attn_q", D, D)
        REF_M(wk, "attn_k", KV, D)
        REF_M(wv, "attn_v", KV, D)
        REF_M(wo, "attn_output", D, D)
        REF_M(w1, "ffn_gate", H, D)
        REF_M(w2, "ffn_down", D, H)
        REF_M(w3, "ffn_up", H, D)
#undef REF_M
        snprintf(nm, sizeof nm, "blk.%d.attn_norm.weight", l);
        r->rms_att[l] = ref_tensor(g, nm, &n);
        snprintf(nm, sizeof nm, "blk.%d.ffn_norm.weight", l);
        r->rms_ffn[l] = ref_tensor(g, nm, &n);
    }
    synor_gguf_close(g);
    return bad ? -1 : 0;
}

static void ref_free(ref_model *r)
{
    if (r->cls.w != r->embd.w)
        free(r->cls.w);
    free(r->embd.w);
    free(r->rms_final);
    for (int l = 0; l < r->layers; l++) {
        free(r->wq[l].w), free(r->wk[l].w), free(r->wv[l].w), free(r->wo[l].w);
        free(r->w1[l].w), free(r->w2[l].w), free(r->w3[l].w);
        free(r->rms_att[l]), free(r->rms_ffn[l]);
    }
    free(r->wq), free(r->wk), free(r->wv), free(r->wo), free(r->w1), free(r->w2), free(r->w3);
    free(r->rms_att), free(r->rms_ffn);
}

static void ref_matvec(const ref_mat *m, const double *x, double *y)
{
    for (int r = 0; r < m->rows; r++) {
        double s = 0;
        for (int c = 0; c < m->cols; c++)
            s += m->w[(size_t)r * m->cols + c] * x[c];
        y[r] = s;
    }
}

static void ref_rmsnorm(double *o, const double *x, const double *w, int n, double eps)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    ss = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++)
        o[i] = w[i] * ss * x[i];
}

/* Logits of every position of tokens[0..T) (out: T x vocab). */
static void ref_forward(const ref_model *r, const int32_t *tokens, int T, double *out)
{
    int D = r->dim, H = r->hid, hs = D / r->heads, KV = hs * r->kv_heads;
    int group = r->heads / r->kv_heads;
    double *kc = calloc((size_t)r->layers * T * KV, sizeof(double));
    double *vc = calloc((size_t)r->layers * T * KV, sizeof(double));
    double *x = malloc(D * sizeof(double)), *xb = malloc(D * sizeof(double));
    double *q = malloc(D * sizeof(double)), *att = malloc(D * sizeof(double));
    double *tmp = malloc(D * sizeof(double)), *h1 = malloc(H * sizeof(double));
    double *h3 = malloc(H * sizeof(double)), *sc = malloc(T * sizeof(double));
    for (int p = 0; p < T; p++) {
        memcpy(x, r->embd.w + (size_t)tokens[p] * D, D * sizeof(double));
        for (int l = 0; l < r->layers; l++) {
            double *k = kc + ((size_t)l * T + p) * KV, *v = vc + ((size_t)l * T + p) * KV;
            ref_rmsnorm(xb, x, r->rms_att[l], D, r->eps);
            ref_matvec(&r->wq[l], xb, q);
            ref_matvec(&r->wk[l], xb, k);
            ref_matvec(&r->wv[l], xb, v);
            for (int i = 0; i < D; i += 2) {
                double fr = 1.0 / pow(r->base, (double)(i % hs) / hs);
                double c = cos(p * fr), s = sin(p * fr);
                double a = q[i], b = q[i + 1];
                q[i] = a * c - b * s, q[i + 1] = a * s + b * c;
                if (i < KV) {
                    a = k[i], b = k[i + 1];
                    k[i] = a * c - b * s, k[i + 1] = a * s + b * c;
                }
            }
            for (int h = 0; h < r->heads; h++) {
                int kvo = (h / group) * hs;
                double mx = -1e300, sum = 0;
                for (int t = 0; t <= p; t++) {
                    double s = 0;
                    for (int j = 0; j < hs; j++)
                        s += q[h * hs + j] * kc[((size_t)l * T + t) * KV + kvo + j];
                    sc[t] = s / sqrt((double)hs);
                    mx = sc[t] > mx ? sc[t] : mx;
                }
                for (int t = 0; t <= p; t++)
                    sum += sc[t] = exp(sc[t] - mx);
                for (int j = 0; j < hs; j++) {
                    double a = 0;
                    for (int t = 0; t <= p; t++)
                        a += sc[t] / sum * vc[((size_t)l * T + t) * KV + kvo + j];
                    att[h * hs + j] = a;
                }
            }
            ref_matvec(&r->wo[l], att, tmp);
            for (int i = 0; i < D; i++)
                x[i] += tmp[i];
            ref_rmsnorm(xb, x, r->rms_ffn[l], D, r->eps);
            ref_matvec(&r->w1[l], xb, h1);
            ref_matvec(&r->w3[l], xb, h3);
            for (int i = 0; i < H; i++)
                h1[i] = h1[i] / (1.0 + exp(-h1[i])) * h3[i];
            ref_matvec(&r->w2[l], h1, tmp);
            for (int i = 0; i < D; i++)
                x[i] += tmp[i];
        }
        ref_rmsnorm(xb, x, r->rms_final, D, r->eps);
        ref_matvec(&r->cls, xb, out + (size_t)p * r->vocab);
    }
    free(kc), free(vc), free(x), free(xb), free(q), free(att), free(tmp), free(h1), free(h3);
    free(sc);
}

#endif
