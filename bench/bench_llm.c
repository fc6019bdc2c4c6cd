/* bench_llm.c - the inference engine's speed on a model, measured as
 * llama.cpp's llama-bench measures it, so the two print comparable rows:
 *   pp N: a prompt of N tokens run as one batch (prefill), tokens/s;
 *   tg N: N tokens decoded one per batch after BOS, tokens/s;
 *   bd B: (-b B > 1) B sequences decoding N tokens each, one batch of B rows
 *         a step (a serving step of B streams), aggregate tokens/s - the
 *         engine's own side of continuous batching, without the server.
 * Median and spread of --reps runs (docs/BENCHMARKS.md, "LLM inference").
 * --gpu-layers N|all offloads the products of the last N layers (all: and
 * the classifier) to CUDA GPU --gpu (synor_llm_ctx_opts.gpu_layers), as
 * llama-bench's -ngl; --no-kv skips the KV-memory table; --no-pack keeps
 * quantized weights in the file's layout for batches (A/B of the packing);
 * --kv-type f32|f16 the KV cache's element type (default f32). --at P
 * starts the bd sequences at position P (a prompt of P tokens each, not
 * timed), as served streams decode after their prompts; the bd row is then
 * followed by where its steps' time went (the engine's trace, summed over
 * the workers, ms a step per operation).
 *
 *   bench_llm -m MODEL [-p 128] [-n 128] [-b B] [-t THREADS] [-r 5] [--tokenizer F]
 *             [--gpu-layers N|all|auto] [--gpu N] [--no-kv] [--no-pack] [--kv-type T]
 *             [--at P]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "synor.h"

static void report(const char *what, int n, double *rates, int reps)
{
    qsort(rates, (size_t)reps, sizeof *rates, cmp_d);
    printf("  %-6s %4d  median %9.1f tokens/s  (min %.1f, max %.1f, %d runs)\n", what, n,
           rates[reps / 2], rates[0], rates[reps - 1], reps);
}

int main(int argc, char **argv)
{
    const char *model = NULL, *tok = NULL;
    int pp = 128, tg = 128, bd = 1, threads = 2, reps = 5, gpu_layers = 0, gpu = 0, kv = 1,
        ocl = 0, no_pack = 0, at = 0;
    unsigned kv_type = SYNOR_LLM_KV_F32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-kv")) {
            kv = 0;
            continue;
        }
        if (!strcmp(a, "--no-pack")) {
            no_pack = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "bench_llm: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "-m"))
            model = v;
        else if (!strcmp(a, "-p"))
            pp = atoi(v);
        else if (!strcmp(a, "-n"))
            tg = atoi(v);
        else if (!strcmp(a, "-b"))
            bd = atoi(v);
        else if (!strcmp(a, "-t"))
            threads = atoi(v);
        else if (!strcmp(a, "-r"))
            reps = atoi(v);
        else if (!strcmp(a, "--tokenizer"))
            tok = v;
        else if (!strcmp(a, "--at"))
            at = atoi(v);
        else if (!strcmp(a, "--kv-type")) {
            if (synor_llm_kv_type_parse(v, &kv_type)) {
                fprintf(stderr, "bench_llm: --kv-type: %s\n", synor_errmsg());
                return 2;
            }
        }
        else if (!strcmp(a, "--gpu-layers"))
            gpu_layers = !strcmp(v, "all")    ? SYNOR_LLM_GPU_ALL
                         : !strcmp(v, "auto") ? SYNOR_LLM_GPU_AUTO
                                              : atoi(v);
        else if (!strcmp(a, "--gpu")) { /* N, cudaN or openclN */
            ocl = !strncmp(v, "opencl", 6);
            gpu = atoi(v + (ocl ? 6 : !strncmp(v, "cuda", 4) ? 4 : 0));
        }
        else {
            fprintf(stderr, "bench_llm: unexpected argument '%s'\n", a);
            return 2;
        }
        i++;
    }
    if (!model || pp < 0 || tg < 0 || bd < 1 || bd > 4096 || threads < 1 || reps < 1 || at < 0 ||
        reps > 100 ||
        (gpu_layers < 0 && gpu_layers != SYNOR_LLM_GPU_AUTO) ||
        gpu < 0) {
        fprintf(stderr, "usage: bench_llm -m MODEL [-p N] [-n N] [-b B] [-t THREADS] [-r REPS]\n"
                        "                 [--gpu-layers N|all|auto] [--gpu N|openclN] [--no-kv] [--no-pack]\n"
                        "                 [--kv-type f32|f16] [--at P]\n");
        return 2;
    }
    synor_llm_load_opts lo = {.tokenizer = tok, .no_pack = no_pack};
    synor_llm *m;
    if (synor_llm_load(model, &lo, &m)) {
        fprintf(stderr, "bench_llm: %s\n", synor_errmsg());
        return 1;
    }
    const synor_llm_hparams *h = synor_llm_hparams_get(m);
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = (unsigned)threads;
    cfg.opencl = gpu_layers && ocl ? SYNOR_OPENCL_ALL : SYNOR_OPENCL_OFF;
    cfg.cuda = gpu_layers != 0 && !ocl;
    synor_runtime *rt;
    synor_llm_ctx *c;
    synor_llm_ctx_opts o = {.max_seqs = (unsigned)bd,
                            .max_batch = (unsigned)(pp > bd ? (pp > at ? pp : at)
                                                             : (bd > at ? bd : at)),
                            .gpu_layers = gpu_layers,
                            .gpu_device = (unsigned)gpu,
                            .gpu_backend = ocl ? SYNOR_LLM_GPU_OPENCL : SYNOR_LLM_GPU_CUDA,
                            .kv_type = kv_type};
    double tc = now();
    if (synor_runtime_create(&cfg, &rt) || synor_runtime_start(rt) ||
        synor_llm_ctx_create(m, rt, &o, &c)) {
        fprintf(stderr, "bench_llm: %s\n", synor_errmsg());
        return 1;
    }
    tc = now() - tc;
    printf("%s: %s %s, dim %d, %d layers, vocab %d; %s kernels, %d workers, KV %s\n", model,
           synor_llm_format(m), synor_llm_weight_type(m), h->dim, h->n_layers, h->vocab_size,
           synor_llm_isa(), threads, synor_llm_kv_type_name(kv_type));
    synor_llm_gpu_info gi;
    synor_llm_ctx_gpu(c, &gi);
    if (gi.layers)
        printf("  GPU: %d of %d layers%s on %s (%s), %.1f MiB fp32 weights uploaded; context "
               "created in %.2f s\n",
               gi.layers, h->n_layers, gi.classifier ? " and the classifier" : "", gi.device,
               gi.product, (double)gi.weight_bytes / 1048576, tc);
    else
        printf("  CPU only\n");
    int32_t *toks = malloc((size_t)(pp > tg ? pp : tg) * sizeof *toks + 4);
    unsigned seq0 = 0, *seqs = calloc((size_t)(pp > bd ? pp : bd), sizeof *seqs);
    double *rates = malloc((size_t)reps * sizeof *rates);
    for (int i = 0; i < (pp > tg ? pp : tg); i++)
        toks[i] = (int32_t)(1 + (i * 7919) % (h->vocab_size - 1));
    /* One warm-up of each (pages of the mapping, caches). */
    for (int r = -1; pp > 0 && r < reps; r++) {
        synor_llm_seq_reset(c, 0);
        double t0 = now();
        if (synor_llm_batch(c, (size_t)pp, toks, seqs, NULL)) {
            fprintf(stderr, "bench_llm: %s\n", synor_errmsg());
            return 1;
        }
        if (r >= 0)
            rates[r] = pp / (now() - t0);
    }
    if (pp > 0)
        report("pp", pp, rates, reps);
    for (int r = -1; tg > 0 && r < reps; r++) {
        synor_llm_seq_reset(c, 0);
        int32_t t = 1;
        double t0 = now();
        for (int i = 0; i < tg; i++) {
            if (synor_llm_batch(c, 1, &t, &seq0, NULL)) {
                fprintf(stderr, "bench_llm: %s\n", synor_errmsg());
                return 1;
            }
            const float *l = synor_llm_logits(c, 0);
            int32_t best = 0;
            for (int v = 1; v < h->vocab_size; v++)
                if (l[v] > l[best])
                    best = v;
            t = best;
        }
        if (r >= 0)
            rates[r] = tg / (now() - t0);
    }
    if (tg > 0)
        report("tg", tg, rates, reps);
    if (bd > 1 && tg > 0 && at + tg >= h->seq_len) {
        fprintf(stderr, "bench_llm: --at %d and -n %d do not fit the context (%d)\n", at, tg,
                h->seq_len);
        return 1;
    }
    int32_t *bt = malloc((size_t)bd * sizeof *bt), *pt = malloc((size_t)at * sizeof *pt + 4);
    unsigned *bs = malloc((size_t)bd * sizeof *bs), *ps = malloc((size_t)at * sizeof *ps + 4);
    /* the warm-up run's steps, traced: ms a step per operation */
    static const char *const ops[] = {"qkv", "attention", "out", "ffn_up", "ffn_down",
                                      "classifier"};
    double opms[6] = {0};
    for (int r = -1; bd > 1 && tg > 0 && r < reps; r++) {
        for (int j = 0; j < bd; j++) {
            synor_llm_seq_reset(c, (unsigned)j);
            bs[j] = (unsigned)j;
            bt[j] = (int32_t)(1 + (j * 7919) % (h->vocab_size - 1));
            for (int i = 0; i < at; i++) {
                pt[i] = (int32_t)(1 + (i * 31 + j * 7919) % (h->vocab_size - 1));
                ps[i] = (unsigned)j;
            }
            if (at > 0 && synor_llm_batch(c, (size_t)at, pt, ps, NULL)) {
                fprintf(stderr, "bench_llm: %s\n", synor_errmsg());
                return 1;
            }
        }
        double t0 = now();
        for (int i = 0; i < tg; i++) {
            if (r < 0 && at > 0)
                synor_llm_ctx_trace(c, 1);
            if (synor_llm_batch(c, (size_t)bd, bt, bs, NULL)) {
                fprintf(stderr, "bench_llm: %s\n", synor_errmsg());
                return 1;
            }
            size_t ne = 0;
            const synor_llm_event *ev = r < 0 && at > 0 ? synor_llm_ctx_events(c, &ne) : NULL;
            for (size_t e = 0; e < ne; e++)
                for (int q = 0; q < 6; q++)
                    if (!strcmp(ev[e].op, ops[q]))
                        opms[q] += (ev[e].end - ev[e].start) * 1e3 / tg;
            if (r < 0 && at > 0)
                synor_llm_ctx_trace(c, 0);
            for (int j = 0; j < bd; j++) {
                const float *l = synor_llm_logits(c, (size_t)j);
                int32_t best = 0;
                for (int v = 1; v < h->vocab_size; v++)
                    if (l[v] > l[best])
                        best = v;
                bt[j] = best;
            }
        }
        if (r >= 0)
            rates[r] = (double)bd * tg / (now() - t0);
    }
    if (bd > 1 && tg > 0) {
        report("bd", bd, rates, reps);
        if (at > 0) {
            printf("     from position %d, ms a step summed over the workers (warm-up run):", at);
            for (int q = 0; q < 6; q++)
                printf(" %s %.2f", ops[q], opms[q]);
            printf("\n");
        }
    }
    for (int j = 0; j < bd; j++)
        synor_llm_seq_reset(c, (unsigned)j);
    free(bt);
    free(bs);
    free(pt);
    free(ps);
    if (gi.layers) {
        synor_llm_ctx_gpu(c, &gi);
        printf("  GPU traffic: %.1f MiB up, %.1f MiB down, %llu cuBLAS calls\n",
               (double)gi.bytes_up / 1048576, (double)gi.bytes_down / 1048576,
               (unsigned long long)gi.products);
    }
    /* KV memory of one sequence by length: the paged cache's blocks in use
     * against a contiguous cache sized for the model's context. */
    size_t per_pos = (size_t)h->n_layers * 2 * (size_t)(h->dim / h->n_heads * h->n_kv_heads) *
                     (kv_type == SYNOR_LLM_KV_F16 ? sizeof(uint16_t) : sizeof(float));
    if (kv)
        printf("  KV cache per sequence (%zu bytes a position; contiguous: %d positions):\n",
               per_pos, h->seq_len);
    static const double fractions[] = {0.05, 0.25, 0.5, 1.0};
    for (size_t f = 0; kv && f < sizeof fractions / sizeof fractions[0]; f++) {
        int len = (int)(h->seq_len * fractions[f]);
        if (len < 1 || len > h->seq_len)
            continue;
        synor_llm_seq_reset(c, 0);
        int32_t t = 1;
        for (int i = 0; i < len; i++)
            if (synor_llm_batch(c, 1, &t, &seq0, NULL))
                return 1;
        unsigned used, total;
        synor_llm_kv_usage(c, &used, &total);
        double paged = (double)used * SYNOR_LLM_KV_BLOCK * (double)per_pos;
        double contiguous = (double)h->seq_len * (double)per_pos;
        printf("    %5d positions: paged %8.2f MiB (%u blocks), contiguous %8.2f MiB: %.2fx\n", len,
               paged / 1048576, used, contiguous / 1048576, contiguous / paged);
    }
    free(toks);
    free(seqs);
    free(rates);
    synor_llm_ctx_destroy(c);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
    return 0;
}
