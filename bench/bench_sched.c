/* bench_sched.c - synor serve's engine side without HTTP: the requests
 * bench_serve sends (the same seeded prompts cut from README.md, greedy,
 * max_tokens each), run through the continuous-batching scheduler
 * (synor_llm_sched) in this process, at most C at once, then one at a
 * time. What synor serve adds (HTTP, Server-Sent Events, the client on the
 * same cores) is the served figures' distance from these.
 *
 *   bench_sched -m MODEL [--requests N] [--concurrency C] [--max-tokens T]
 *               [--prompts FILE] [--seed S] [-t THREADS] [--kv-type f32|f16]
 *               [--sequential 0|1] [--shared W] [--prefix-cache 0|1]
 *
 * --sequential 0: the concurrent side only. --shared W: every prompt
 * begins with the same W words (the file's first; a system prompt), then
 * its own. --prefix-cache 1: the context keeps published prompt blocks
 * for reuse (synor serve's default; 0, the default here, computes every
 * prompt whole). Each side also reports the time to first token (from
 * submission; p50 and p99) and the prompt positions reused.
 * The context is synor serve's (max_seqs C, the default max_batch, KV
 * blocks for C full contexts), the scheduler's options its defaults. For
 * each side: wall time, output tokens, aggregate tokens/s, steps, mean
 * rows and prompt rows a step, and the time inside the engine's batches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_requests.h"
#include "synor.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct side {
    int32_t bos;
    long tokens;
    int done;
    uint64_t first_id; /* the scheduler's ids are consecutive: request i is first_id + i */
    double *t_submit, *t_first;
} side;

static int on_token(uint64_t id, int32_t t, void *user)
{
    side *s = user;
    if (t == s->bos) /* synor serve ends the text at BOS */
        return 1;
    s->tokens++;
    double *f = &s->t_first[id - s->first_id];
    if (*f == 0)
        *f = now();
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void on_done(uint64_t id, int reason, void *user)
{
    (void)id;
    (void)reason;
    ((side *)user)->done++;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *prompts = "README.md";
    int nreq = 48, conc = 16, max_tokens = 128, threads = 2, sequential = 1;
    unsigned kv_type = SYNOR_LLM_KV_F32;
    uint64_t seed = 1;
    int shared = 0, prefix_cache = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "-m"))
            model = v;
        else if (!strcmp(a, "--requests"))
            nreq = atoi(v);
        else if (!strcmp(a, "--concurrency"))
            conc = atoi(v);
        else if (!strcmp(a, "--max-tokens"))
            max_tokens = atoi(v);
        else if (!strcmp(a, "--prompts"))
            prompts = v;
        else if (!strcmp(a, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--sequential"))
            sequential = atoi(v);
        else if (!strcmp(a, "--shared"))
            shared = atoi(v);
        else if (!strcmp(a, "--prefix-cache"))
            prefix_cache = atoi(v);
        else if (!strcmp(a, "-t"))
            threads = atoi(v);
        else if (!strcmp(a, "--kv-type") && !synor_llm_kv_type_parse(v, &kv_type))
            ;
        else
            model = NULL, nreq = 0;
    }
    if (!model || argc % 2 == 0 || nreq < 1 || conc < 1 || max_tokens < 1 || threads < 1 ||
        shared < 0 || shared > 64) {
        fprintf(stderr, "usage: bench_sched -m MODEL [--requests N] [--concurrency C] "
                        "[--max-tokens T]\n                   [--prompts FILE] [--seed S] "
                        "[-t THREADS] [--kv-type f32|f16] [--sequential 0|1]\n"
                        "                   [--shared W (0..64)] [--prefix-cache 0|1]\n");
        return 2;
    }
    char *text;
    synor_llm *m;
    if (bench_inputs("bench_sched", prompts, model, &text, &m))
        return 1;
    const synor_llm_hparams *h = synor_llm_hparams_get(m);
    const synor_tokenizer *tok = synor_llm_tokenizer(m);
    bench_rng_seed(seed);
    int32_t **ids = calloc((size_t)nreq, sizeof *ids);
    size_t *nids = calloc((size_t)nreq, sizeof *nids);
    long prompt_tokens = 0;
    for (int i = 0; i < nreq; i++) {
        size_t off = (size_t)(bench_uniform() * (double)(strlen(text) - 2048));
        char *own = bench_prompt_text(text, off, 8 + (int)(bench_uniform() * 57));
        (void)bench_uniform(); /* bench_serve's arrival gap (drawn at any rate) */
        char *sys = shared ? bench_prompt_text(text, 0, shared) : NULL;
        char *p = malloc(2 * BENCH_PROMPT_MAX + 2);
        snprintf(p, 2 * BENCH_PROMPT_MAX + 2, "%s%s%s", sys ? sys : "", sys ? " " : "", own);
        free(sys);
        free(own);
        long n = synor_tokenizer_encode(tok, p, strlen(p), 1, 0, NULL, 0);
        ids[i] = malloc((size_t)(n > 0 ? n : 1) * sizeof **ids);
        synor_tokenizer_encode(tok, p, strlen(p), 1, 0, ids[i], (size_t)n);
        nids[i] = (size_t)n;
        prompt_tokens += n;
        free(p);
    }
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = (unsigned)threads;
    /* the CPU workers alone: a GPU host's CUDA device (and an OpenCL
     * accelerator) would add a device and its thread to a CPU benchmark */
    cfg.cuda = 0;
    cfg.opencl = SYNOR_OPENCL_OFF;
    synor_runtime *rt;
    if (synor_runtime_create(&cfg, &rt) || synor_runtime_start(rt)) {
        fprintf(stderr, "bench_sched: %s\n", synor_errmsg());
        return 1;
    }
    printf("%s: %s, %d workers, KV %s; %d requests (%ld prompt tokens) of %d tokens\n", model,
           synor_llm_weight_type(m), threads, synor_llm_kv_type_name(kv_type), nreq,
           prompt_tokens, max_tokens);
    int sides[2] = {conc, 1};
    for (int k = 0; k < 1 + (sequential != 0); k++) {
        int c = sides[k];
        unsigned per = (unsigned)((h->seq_len + SYNOR_LLM_KV_BLOCK - 1) / SYNOR_LLM_KV_BLOCK);
        synor_llm_ctx_opts co = {.max_seqs = (unsigned)conc,
                                 .kv_blocks = (unsigned)conc * per,
                                 .kv_type = kv_type,
                                 .prefix_cache = prefix_cache};
        synor_llm_ctx *ctx;
        synor_llm_sched *s;
        synor_llm_sched_opts so = {.max_queue = (unsigned)nreq};
        if (synor_llm_ctx_create(m, rt, &co, &ctx) || synor_llm_sched_create(ctx, &so, &s)) {
            fprintf(stderr, "bench_sched: %s\n", synor_errmsg());
            return 1;
        }
        double *ts = calloc((size_t)nreq, sizeof *ts), *tf = calloc((size_t)nreq, sizeof *tf);
        side sd = {.bos = synor_tokenizer_bos(tok), .t_submit = ts, .t_first = tf};
        int next = 0, left = 0;
        double t0 = now();
        for (;;) {
            while (next < nreq && next - sd.done < c) {
                synor_llm_request rq = {.prompt = ids[next],
                                        .n_prompt = nids[next],
                                        .max_new = max_tokens,
                                        .on_token = on_token,
                                        .on_done = on_done,
                                        .user = &sd};
                synor_sampler_init(&rq.sampler, 0, 0, 1, 1);
                uint64_t id;
                ts[next] = now();
                if (synor_llm_sched_submit(s, &rq, &id)) {
                    fprintf(stderr, "bench_sched: %s\n", synor_errmsg());
                    return 1;
                }
                if (!next)
                    sd.first_id = id;
                next++;
            }
            left = synor_llm_sched_step(s);
            if (left < 0) {
                fprintf(stderr, "bench_sched: %s\n", synor_errmsg());
                return 1;
            }
            if (!left && next == nreq)
                break;
        }
        double wall = now() - t0;
        synor_llm_sched_stats st;
        synor_llm_sched_stats_get(s, &st);
        printf("concurrency %d: wall %.3f s, output tokens %ld, aggregate %.1f tokens/s; %llu "
               "steps, %.1f rows a step (%.1f prompt rows), batches %.2f s, steps %.2f s\n",
               c, wall, sd.tokens, (double)sd.tokens / wall, (unsigned long long)st.steps,
               (double)st.rows / (double)st.steps, (double)st.prompt_tokens / (double)st.steps,
               (double)st.batch_ns * 1e-9, (double)st.step_ns * 1e-9);
        for (int i = 0; i < nreq; i++)
            tf[i] = tf[i] > 0 ? tf[i] - ts[i] : 0;
        qsort(tf, (size_t)nreq, sizeof *tf, cmp_d);
        printf("  time to first token p50 %.1f ms, p99 %.1f ms; prompt positions computed %llu, "
               "reused %llu\n",
               tf[nreq / 2] * 1e3, tf[(size_t)(0.99 * (nreq - 1) + 0.5)] * 1e3,
               (unsigned long long)st.prompt_tokens, (unsigned long long)st.prompt_reused);
        free(ts);
        free(tf);
        synor_llm_sched_destroy(s);
        synor_llm_ctx_destroy(ctx);
    }
    for (int i = 0; i < nreq; i++)
        free(ids[i]);
    free(ids);
    free(nids);
    free(text);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
    return 0;
}
