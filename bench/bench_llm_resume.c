/* bench_llm_resume.c - what llm-generate's safe points cost
 * (docs/AGENT.md, "Preemption"; synor_llm_generate_ids):
 *   plain:    N tokens generated without segments (synor_llm_generate);
 *   segments: the same with segments of max(4, ceil(N / 8)), as the agent
 *             runs it (each segment's cache rebuilt as one batch);
 *   resume:   a run stopped after half its segments, resumed on the same
 *             context: the rebuild (the prompt and the finished segments as
 *             batches) and the rest of the tokens;
 *   restart:  the same tokens from the start (what a task without a
 *             checkpoint costs after a preemption: the whole run again).
 * Greedy, on one context of -t workers; medians of -r runs, in seconds.
 *
 *   bench_llm_resume -m MODEL [-n 256] [-p "Once upon a time"] [-t 2] [-r 3]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "synor.h"

typedef struct run {
    int n, stop_at;
    int32_t *toks;
} run;

static int on_token(int32_t tok, const char *text, size_t len, void *user)
{
    (void)text, (void)len;
    run *r = user;
    r->toks[r->n++] = tok;
    return r->n == r->stop_at;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *prompt = "Once upon a time";
    int n = 256, threads = 2, reps = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m"))
            model = argv[i + 1];
        else if (!strcmp(argv[i], "-n"))
            n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-p"))
            prompt = argv[i + 1];
        else if (!strcmp(argv[i], "-t"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-r"))
            reps = atoi(argv[i + 1]);
    }
    if (!model || n < 8 || threads < 1 || reps < 1 || reps > 64) {
        fprintf(stderr, "usage: bench_llm_resume -m MODEL [-n 256] [-p PROMPT] [-t 2] [-r 3]\n");
        return 2;
    }
    synor_llm *m;
    synor_runtime *rt;
    synor_llm_ctx *c;
    synor_runtime_config rc;
    synor_runtime_config_init(&rc);
    /* the CPU workers alone: a GPU host's CUDA device (and an OpenCL
     * accelerator) would add a device and its thread to a CPU benchmark */
    rc.cuda = 0;
    rc.opencl = SYNOR_OPENCL_OFF;
    rc.cpu_workers = (unsigned)threads;
    if (synor_llm_load(model, NULL, &m) || synor_runtime_create(&rc, &rt) ||
        synor_runtime_start(rt) || synor_llm_ctx_create(m, rt, NULL, &c)) {
        fprintf(stderr, "bench_llm_resume: %s\n", synor_errmsg());
        return 1;
    }
    const synor_tokenizer *tok = synor_llm_tokenizer(m);
    long np = synor_tokenizer_encode(tok, prompt, strlen(prompt), 1, 0, NULL, 0);
    int32_t *ids = malloc(((size_t)np + (size_t)n) * sizeof *ids);
    int32_t *toks = malloc((size_t)n * sizeof *toks);
    synor_tokenizer_encode(tok, prompt, strlen(prompt), 1, 0, ids, (size_t)np);
    int seg = (n + 7) / 8 > 4 ? (n + 7) / 8 : 4, half = seg * ((n / seg) / 2);
    double t[4][64];
    int made[4] = {0};
    for (int r = 0; r < reps; r++) {
        synor_sampler s;
        run rr = {.toks = toks, .stop_at = -1};
        double t0 = now();
        synor_sampler_init(&s, 0, 0, 1.0f, 1);
        int e = synor_llm_generate_ids(c, ids, (size_t)np, 0, n, 0, &s, on_token, &rr, NULL);
        t[0][r] = now() - t0;
        made[0] = rr.n;
        rr.n = 0;
        t0 = now();
        synor_sampler_init(&s, 0, 0, 1.0f, 1);
        e = e ? e : synor_llm_generate_ids(c, ids, (size_t)np, 0, n, seg, &s, on_token, &rr, NULL);
        t[1][r] = t[3][r] = now() - t0;
        made[1] = rr.n;
        /* stopped after half the segments, then resumed */
        rr.n = 0;
        rr.stop_at = half;
        synor_sampler_init(&s, 0, 0, 1.0f, 1);
        e = e ? e : synor_llm_generate_ids(c, ids, (size_t)np, 0, n, seg, &s, on_token, &rr, NULL);
        memcpy(ids + np, toks, (size_t)half * sizeof *ids);
        rr.stop_at = -1;
        rr.n = 0;
        t0 = now();
        e = e ? e
              : synor_llm_generate_ids(c, ids, (size_t)np, (size_t)half, n, seg, &s, on_token,
                                       &rr, NULL);
        t[2][r] = now() - t0;
        made[2] = rr.n;
        if (e) {
            fprintf(stderr, "bench_llm_resume: %s\n", synor_errmsg());
            return 1;
        }
    }
    const char *name[4] = {"plain", "segments", "resume", "restart"};
    printf("bench_llm_resume: %s, prompt %ld tokens, %d tokens in segments of %d, stopped "
           "after %d; %d workers, %s kernels, median of %d\n",
           model, np, n, seg, half, threads, synor_llm_isa(), reps);
    for (int k = 0; k < 4; k++) {
        qsort(t[k], (size_t)reps, sizeof t[k][0], cmp_d);
        printf("  %-8s %8.3f s  (min %.3f, max %.3f)%s\n", name[k], t[k][reps / 2], t[k][0],
               t[k][reps - 1], k == 2 ? "  (the rebuild and the rest)" : "");
    }
    printf("  tokens: plain %d, segments %d, resumed run %d of %d\n", made[0], made[1],
           half + made[2], n);
    free(ids);
    free(toks);
    synor_llm_ctx_destroy(c);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
    return 0;
}
