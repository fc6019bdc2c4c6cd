/* bench_turns.c - a conversation's next turn with the prefix cache
 * (docs/LLM.md, "Prefix caching"): what reusing the earlier answer saves.
 *
 *   bench_turns -m MODEL [--conversations N] [--words W] [--answer T]
 *               [--message M] [--prompts FILE] [-t THREADS]
 *
 * Conversation i: a prompt of W words cut from FILE (default README.md;
 * BOS first), answered greedily with T tokens through the scheduler on a
 * context with the prefix cache; then its next turn, whose prompt is that
 * prompt, the answer's tokens and M tokens of a new message (the next W
 * words' first M), timed from submission to its first token, three ways:
 *   whole   - on a context without the prefix cache: every position computed;
 *   prompt  - the same turn with the answer's first token changed, so
 *             only the first prompt's blocks can be reused (what the cache
 *             gives where answers are not published: F32 layer products);
 *   answer  - the turn itself: the prompt's and the answer's blocks reused
 *             where the context publishes answers (no F32 layer products,
 *             no GPU), the rest computed.
 * Prints each way's median, min and max milliseconds over the
 * conversations and the positions each reused (mean). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_requests.h"
#include "bench_time.h"
#include "synor.h"

typedef struct got {
    int32_t t[1024];
    int n;
    size_t reused;
    double first;
} got;

static int on_token(uint64_t id, int32_t t, void *user)
{
    (void)id;
    got *g = user;
    if (!g->n)
        g->first = now();
    if (g->n < 1024)
        g->t[g->n++] = t;
    return 0;
}

static void on_admit(uint64_t id, size_t reused, void *user)
{
    (void)id;
    ((got *)user)->reused = reused;
}

/* Runs p[0..n) for max_new tokens on s alone; the time to its first
 * token in *ttft (seconds). */
static int run(synor_llm_sched *s, const int32_t *p, size_t n, int max_new, got *g, double *ttft)
{
    memset(g, 0, sizeof *g);
    synor_llm_request rq = {.prompt = p,
                            .n_prompt = n,
                            .max_new = max_new,
                            .on_admit = on_admit,
                            .on_token = on_token,
                            .user = g};
    synor_sampler_init(&rq.sampler, 0, 0, 1, 1);
    uint64_t id;
    double t0 = now();
    if (synor_llm_sched_submit(s, &rq, &id))
        return -1;
    int left;
    while ((left = synor_llm_sched_step(s)) > 0)
        ;
    *ttft = g->first - t0;
    return left < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *prompts = "README.md";
    int nconv = 8, words = 48, answer = 128, message = 16, threads = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "-m"))
            model = v;
        else if (!strcmp(a, "--conversations"))
            nconv = atoi(v);
        else if (!strcmp(a, "--words"))
            words = atoi(v);
        else if (!strcmp(a, "--answer"))
            answer = atoi(v);
        else if (!strcmp(a, "--message"))
            message = atoi(v);
        else if (!strcmp(a, "--prompts"))
            prompts = v;
        else if (!strcmp(a, "-t"))
            threads = atoi(v);
        else
            model = NULL, nconv = 0;
    }
    if (!model || argc % 2 == 0 || nconv < 1 || nconv > 64 || words < 1 || words > 64 ||
        answer < 1 || answer > 1024 || message < 1 || message > 64 || threads < 1) {
        fprintf(stderr, "usage: bench_turns -m MODEL [--conversations N (1..64)] [--words W "
                        "(1..64)]\n                   [--answer T (1..1024)] [--message M "
                        "(1..64)] [--prompts FILE] [-t THREADS]\n");
        return 2;
    }
    char *text;
    synor_llm *m;
    if (bench_inputs("bench_turns", prompts, model, &text, &m))
        return 1;
    const synor_tokenizer *tok = synor_llm_tokenizer(m);
    const synor_llm_hparams *h = synor_llm_hparams_get(m);
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = (unsigned)threads;
    cfg.cuda = 0;
    cfg.opencl = SYNOR_OPENCL_OFF;
    synor_runtime *rt;
    synor_llm_ctx *c[2];
    synor_llm_sched *s[2];
    if (synor_runtime_create(&cfg, &rt) || synor_runtime_start(rt)) {
        fprintf(stderr, "bench_turns: %s\n", synor_errmsg());
        return 1;
    }
    for (int k = 0; k < 2; k++) { /* 0: with the prefix cache; 1: without */
        /* room for four sequences' blocks, as a server's pool has room
         * beside the running ones for what the cache keeps */
        unsigned per = (unsigned)((h->seq_len + SYNOR_LLM_KV_BLOCK - 1) / SYNOR_LLM_KV_BLOCK);
        synor_llm_ctx_opts co = {.max_seqs = 1, .kv_blocks = 4 * per, .prefix_cache = !k};
        if (synor_llm_ctx_create(m, rt, &co, &c[k]) || synor_llm_sched_create(c[k], NULL, &s[k])) {
            fprintf(stderr, "bench_turns: %s\n", synor_errmsg());
            return 1;
        }
    }
    double ms[3][64];
    double reused[3] = {0, 0, 0};
    long plen = 0, alen = 0;
    static got g;
    int32_t *p = malloc((size_t)h->seq_len * sizeof *p);
    bench_rng_seed(1);
    for (int i = 0; i < nconv; i++) {
        size_t off = (size_t)(bench_uniform() * (double)(strlen(text) - 4096));
        char *t1 = bench_prompt_text(text, off, words);
        char *t2 = bench_prompt_text(text, off + strlen(t1) + 1, words);
        long n = synor_tokenizer_encode(tok, t1, strlen(t1), 1, 0, p, (size_t)h->seq_len);
        int32_t msg[64];
        long nm = synor_tokenizer_encode(tok, t2, strlen(t2), 0, 0, msg, 64);
        free(t1);
        free(t2);
        nm = nm < message ? nm : message;
        double ttft;
        if (n < 1 || nm < 1 || n + answer + nm >= h->seq_len || run(s[0], p, (size_t)n, answer,
                                                                     &g, &ttft)) {
            fprintf(stderr, "bench_turns: conversation %d: %s\n", i,
                    n + answer + nm >= h->seq_len ? "longer than the context" : synor_errmsg());
            return 1;
        }
        plen += n;
        alen += g.n;
        size_t len = (size_t)n;
        memcpy(p + len, g.t, (size_t)g.n * sizeof *p);
        len += (size_t)g.n;
        memcpy(p + len, msg, (size_t)nm * sizeof *p);
        len += (size_t)nm;
        /* whole, answer, then prompt (the answer's first token changed) */
        int32_t first = p[n];
        for (int k = 0; k < 3; k++) {
            int w = k == 0 ? 0 : k == 1 ? 2 : 1;
            p[n] = w == 1 ? (first + 1) % h->vocab_size : first;
            if (run(s[w == 0], p, len, 1, &g, &ttft)) {
                fprintf(stderr, "bench_turns: %s\n", synor_errmsg());
                return 1;
            }
            ms[w][i] = ttft * 1e3;
            reused[w] += (double)g.reused;
        }
        p[n] = first;
    }
    printf("%s: %s, %d workers; %d conversations: prompts %.1f tokens, answers %.1f, new "
           "messages %d\n",
           model, synor_llm_weight_type(m), threads, nconv, (double)plen / nconv,
           (double)alen / nconv, message);
    static const char *const way[3] = {"whole", "prompt", "answer"};
    printf("%-8s %12s %10s %10s %14s\n", "reuse", "TTFT p50 ms", "min", "max", "reused (mean)");
    for (int w = 0; w < 3; w++) {
        qsort(ms[w], (size_t)nconv, sizeof ms[w][0], cmp_d);
        printf("%-8s %12.2f %10.2f %10.2f %14.1f\n", way[w], ms[w][nconv / 2], ms[w][0],
               ms[w][nconv - 1], reused[w] / nconv);
    }
    for (int k = 0; k < 2; k++) {
        synor_llm_sched_destroy(s[k]);
        synor_llm_ctx_destroy(c[k]);
    }
    free(p);
    free(text);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
    return 0;
}
