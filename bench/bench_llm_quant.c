/* bench_llm_quant.c - what quantization costs in accuracy (issue 12 point
 * 4): the reference model (F32) decodes greedily for N steps; every other
 * model is fed the same tokens (teacher forcing) and its next-token
 * distribution is compared with the reference's at every step: mean and
 * max KL divergence KL(P_ref || P_q) in nats, and top-1 agreement.
 *
 *   bench_llm_quant -n 256 REF.gguf Q1.gguf [Q2.gguf ...]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synor.h"

static void softmax(const float *l, double *p, int n)
{
    double mx = l[0], sum = 0;
    for (int i = 1; i < n; i++)
        mx = l[i] > mx ? l[i] : mx;
    for (int i = 0; i < n; i++)
        sum += p[i] = exp(l[i] - mx);
    for (int i = 0; i < n; i++)
        p[i] /= sum;
}

static int argmax(const float *l, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[b])
            b = i;
    return b;
}

/* Logits of every step for the token sequence toks[0..n) (toks NULL:
 * greedy from BOS, writing the tokens). */
static float *run(const char *path, synor_runtime *rt, int n, int32_t *toks, int greedy, int *vocab)
{
    synor_llm *m;
    synor_llm_ctx *c;
    if (synor_llm_load(path, NULL, &m) || synor_llm_ctx_create(m, rt, NULL, &c)) {
        fprintf(stderr, "bench_llm_quant: %s\n", synor_errmsg());
        exit(1);
    }
    int V = synor_llm_hparams_get(m)->vocab_size;
    float *out = malloc((size_t)n * V * sizeof(float));
    unsigned seq = 0;
    int32_t t = 1;
    for (int i = 0; i < n; i++) {
        if (!greedy)
            t = toks[i];
        else
            toks[i] = t;
        if (synor_llm_batch(c, 1, &t, &seq, NULL)) {
            fprintf(stderr, "bench_llm_quant: %s\n", synor_errmsg());
            exit(1);
        }
        memcpy(out + (size_t)i * V, synor_llm_logits(c, 0), (size_t)V * sizeof(float));
        t = argmax(out + (size_t)i * V, V);
    }
    *vocab = V;
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(m);
    return out;
}

int main(int argc, char **argv)
{
    int n = 256, a = 1;
    if (argc > 2 && !strcmp(argv[1], "-n")) {
        n = atoi(argv[2]);
        a = 3;
    }
    if (argc - a < 2 || n < 1) {
        fprintf(stderr, "usage: bench_llm_quant [-n STEPS] REF.gguf MODEL.gguf...\n");
        return 2;
    }
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = 2;
    cfg.opencl = SYNOR_OPENCL_OFF;
    cfg.cuda = 0;
    synor_runtime *rt;
    if (synor_runtime_create(&cfg, &rt) || synor_runtime_start(rt))
        return 1;
    int32_t *toks = malloc((size_t)n * sizeof *toks);
    int V, V2;
    float *ref = run(argv[a], rt, n, toks, 1, &V);
    double *p = malloc((size_t)V * sizeof *p), *q = malloc((size_t)V * sizeof *q);
    printf("reference %s: %d greedy steps from BOS\n", argv[a], n);
    for (int k = a + 1; k < argc; k++) {
        float *l = run(argv[k], rt, n, toks, 0, &V2);
        if (V2 != V) {
            fprintf(stderr, "bench_llm_quant: %s: vocabulary %d, reference %d\n", argv[k], V2, V);
            return 1;
        }
        double kl_sum = 0, kl_max = 0;
        int agree = 0;
        for (int i = 0; i < n; i++) {
            const float *lr = ref + (size_t)i * V, *lq = l + (size_t)i * V;
            softmax(lr, p, V);
            softmax(lq, q, V);
            double kl = 0;
            for (int j = 0; j < V; j++)
                if (p[j] > 0)
                    kl += p[j] * log(p[j] / (q[j] > 1e-300 ? q[j] : 1e-300));
            kl_sum += kl;
            kl_max = kl > kl_max ? kl : kl_max;
            agree += argmax(lr, V) == argmax(lq, V);
        }
        printf("  %-40s KL mean %.3e max %.3e nats; top-1 %d/%d (%.1f%%)\n", argv[k], kl_sum / n,
               kl_max, agree, n, 100.0 * agree / n);
        free(l);
    }
    free(ref);
    free(toks);
    free(p);
    free(q);
    synor_runtime_destroy(rt);
    return 0;
}
