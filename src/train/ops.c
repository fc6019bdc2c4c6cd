/* ops.c - the operations of the trained model with their gradients,
 * single-threaded (a task runs one replica's whole pass; the runtime runs
 * replicas side by side). Shapes: n rows of d (or width) floats. */
#include <math.h>
#include <string.h>

#include "train/train_internal.h"

void synor__train_rmsnorm(float *y, float *rstd, const float *x, const float *w, int n, int d,
                          float eps)
{
    for (int i = 0; i < n; i++) {
        const float *xi = x + (size_t)i * d;
        float *yi = y + (size_t)i * d;
        double ss = 0;
        for (int j = 0; j < d; j++)
            ss += (double)xi[j] * xi[j];
        float r = (float)(1.0 / sqrt(ss / d + eps));
        rstd[i] = r;
        for (int j = 0; j < d; j++)
            yi[j] = xi[j] * r * w[j];
    }
}

/* y = x r w, r = (mean(x^2) + eps)^-1/2:
 * dx_j += r w_j dy_j - x_j r^3 / d sum_i dy_i w_i x_i; dw_j += sum_rows dy_j x_j r. */
void synor__train_rmsnorm_bwd(float *dx, float *dw, const float *dy, const float *x,
                              const float *rstd, const float *w, int n, int d)
{
    for (int i = 0; i < n; i++) {
        const float *xi = x + (size_t)i * d, *dyi = dy + (size_t)i * d;
        float *dxi = dx + (size_t)i * d;
        float r = rstd[i];
        double dot = 0;
        for (int j = 0; j < d; j++)
            dot += (double)dyi[j] * w[j] * xi[j];
        float c = (float)(dot * r * r * r / d);
        for (int j = 0; j < d; j++) {
            dxi[j] += r * w[j] * dyi[j] - xi[j] * c;
            dw[j] += dyi[j] * xi[j] * r;
        }
    }
}

/* Rotates pairs (2i, 2i+1) of every head of rows of `width` floats; row t
 * of a sequence at position t % T. inverse: by the opposite angle (the
 * gradient of a rotation is the rotation back). */
void synor__train_rope(float *v, int n, int T, int width, int hs, const float *cs, const float *sn,
                       int inverse)
{
    int half = hs / 2;
    float sign = inverse ? -1.0f : 1.0f;
    for (int i = 0; i < n; i++) {
        const float *c = cs + (size_t)(i % T) * half, *s = sn + (size_t)(i % T) * half;
        float *row = v + (size_t)i * width;
        for (int h = 0; h < width; h += hs)
            for (int j = 0; j < half; j++) {
                float a = row[h + 2 * j], b = row[h + 2 * j + 1];
                float sj = sign * s[j];
                row[h + 2 * j] = a * c[j] - b * sj;
                row[h + 2 * j + 1] = a * sj + b * c[j];
            }
    }
}

/* Per sequence and head, as matrix products (OpenBLAS): S = scale Q K^T,
 * P = causal softmax(S) (kept: the backward pass reads it), O = P V. The
 * products compute the masked upper triangle too - half wasted, and still
 * several times faster than loops over the triangle alone. */
void synor__train_attention(const synor__blas_api *bl, float *out, float *att, const float *q,
                            const float *k, const float *v, int rows, int T, int nh, int nkv,
                            int hs)
{
    int D = nh * hs, KVD = nkv * hs, group = nh / nkv;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < rows; b++)
        for (int h = 0; h < nh; h++) {
            int g = h / group;
            const float *qh = q + (size_t)b * T * D + (size_t)h * hs;
            const float *kg = k + (size_t)b * T * KVD + (size_t)g * hs;
            const float *vg = v + (size_t)b * T * KVD + (size_t)g * hs;
            float *P = att + ((size_t)b * nh + h) * T * T;
            bl->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, qh, D, kg, KVD,
                      0.0f, P, T);
            for (int t = 0; t < T; t++) {
                float *p = P + (size_t)t * T, mx = p[0];
                for (int s = 1; s <= t; s++)
                    mx = p[s] > mx ? p[s] : mx;
                float sum = 0;
                for (int s = 0; s <= t; s++) {
                    p[s] = expf(p[s] - mx);
                    sum += p[s];
                }
                float inv = 1.0f / sum;
                for (int s = 0; s <= t; s++)
                    p[s] *= inv;
                for (int s = t + 1; s < T; s++)
                    p[s] = 0;
            }
            bl->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, P, T, vg, KVD,
                      0.0f, out + (size_t)b * T * D + (size_t)h * hs, D);
        }
}

/* O = P V, P = softmax(scale Q K^T): dP = dO V^T; dS = P (dP - rowsum(P dP));
 * dQ = scale dS K; dK += scale dS^T Q; dV += P^T dO (the heads of a group
 * add into their KV head; dk and dv are zeroed here). dS is made in
 * scratch (T x T). */
void synor__train_attention_bwd(const synor__blas_api *bl, float *dq, float *dk, float *dv,
                                const float *dout, const float *att, const float *q, const float *k,
                                const float *v, int rows, int T, int nh, int nkv, int hs,
                                float *scratch)
{
    int D = nh * hs, KVD = nkv * hs, group = nh / nkv;
    float scale = 1.0f / sqrtf((float)hs);
    memset(dk, 0, (size_t)rows * T * KVD * sizeof(float));
    memset(dv, 0, (size_t)rows * T * KVD * sizeof(float));
    for (int b = 0; b < rows; b++)
        for (int h = 0; h < nh; h++) {
            int g = h / group;
            size_t qo = (size_t)b * T * D + (size_t)h * hs,
                   ko = (size_t)b * T * KVD + (size_t)g * hs;
            const float *P = att + ((size_t)b * nh + h) * T * T;
            float *dS = scratch;
            bl->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dout + qo, D, v + ko,
                      KVD, 0.0f, dS, T);
            for (int t = 0; t < T; t++) {
                const float *p = P + (size_t)t * T;
                float *d = dS + (size_t)t * T;
                double sum = 0;
                for (int s = 0; s <= t; s++)
                    sum += (double)p[s] * d[s];
                float fs = (float)sum;
                for (int s = 0; s <= t; s++)
                    d[s] = p[s] * (d[s] - fs) * scale;
                for (int s = t + 1; s < T; s++)
                    d[s] = 0;
            }
            bl->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, dS, T, k + ko, KVD,
                      0.0f, dq + qo, D);
            bl->sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, dS, T, q + qo, D,
                      1.0f, dk + ko, KVD);
            bl->sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, P, T, dout + qo, D,
                      1.0f, dv + ko, KVD);
        }
}

static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

void synor__train_swiglu(float *hg, const float *h1, const float *h3, size_t n)
{
    for (size_t i = 0; i < n; i++)
        hg[i] = h1[i] * sigmoid(h1[i]) * h3[i];
}

void synor__train_swiglu_bwd(float *dh1, float *dh3, const float *dhg, const float *h1,
                             const float *h3, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float s = sigmoid(h1[i]);
        float silu = h1[i] * s;
        dh3[i] = dhg[i] * silu;
        dh1[i] = dhg[i] * h3[i] * s * (1.0f + h1[i] * (1.0f - s));
    }
}

double synor__train_xent(float *logits, const int32_t *targets, int n, int V, float scale,
                         int backward)
{
    double loss = 0;
    for (int i = 0; i < n; i++) {
        float *l = logits + (size_t)i * V;
        float mx = l[0];
        for (int j = 1; j < V; j++)
            if (l[j] > mx)
                mx = l[j];
        float ly = l[targets[i]] - mx;
        double sum = 0;
        for (int j = 0; j < V; j++) {
            l[j] = expf(l[j] - mx);
            sum += l[j];
        }
        float inv = (float)(1.0 / sum);
        int32_t y = targets[i];
        loss += log(sum) - (double)ly;
        for (int j = 0; j < V; j++)
            l[j] *= inv;
        if (backward) {
            for (int j = 0; j < V; j++)
                l[j] *= scale;
            l[y] -= scale;
        }
    }
    return loss;
}

long synor__train_nonfinite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return (long)i;
    return -1;
}

void synor__train_mm(const synor__blas_api *b, float *y, const float *x, const float *w, int n,
                     int in, int out)
{
    b->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
}

void synor__train_mm_bwd_x(const synor__blas_api *b, float *dx, const float *dy, const float *w,
                           int n, int in, int out, float beta)
{
    b->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, dy, out, w, in, beta, dx,
             in);
}

void synor__train_mm_bwd_w(const synor__blas_api *b, float *dw, const float *dy, const float *x,
                           int n, int in, int out)
{
    b->sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, dy, out, x, in, 1.0f, dw,
             in);
}
