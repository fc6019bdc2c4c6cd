/* test_runtime_llm_prompt_logits.c - the scheduler's on_prompt_logits
 * (what serve's "echo" with logprobs reads): every prompt position from 1
 * once, in order, with its token and the row that predicts it - the row
 * the whole prompt gives in one batch on a fresh context - and all before
 * the request's first token, whether the prompt went in one chunk, in
 * many, or was recomputed after a preemption; the tokens the same as
 * without it. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "llm_fixture.h"
#include "synor/error.h"
#include "synor/llm.h"
#include "synor/runtime.h"
#include "test.h"

enum { NREQ = 4, MAXNEW = 6, V = 320, MAXP = 56 };

static char dir[32], path[64];

static synor_llm *load(void)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/synor-plog-XXXXXX");
        if (!mkdtemp(dir))
            return NULL;
        snprintf(path, sizeof path, "%s/m.gguf", dir);
        synor_llm_synth s = llm_test_synth(2);
        if (synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, path))
            return NULL;
    }
    synor_llm *m = NULL;
    return synor_llm_load(path, NULL, &m) ? NULL : m;
}

/* Request i's prompt: BOS and 19 + 11 i tokens. */
static size_t prompt_of(int i, int32_t *p)
{
    size_t n = (size_t)(20 + 11 * i);
    p[0] = 1;
    for (size_t j = 1; j < n; j++)
        p[j] = (int32_t)(5 + (i * 37 + (int)j * 13) % 300);
    return n;
}

typedef struct got {
    uint64_t ids[NREQ];
    int32_t prompt[NREQ][MAXP];
    size_t np[NREQ];
    float (*want)[MAXP][V]; /* by request, position - 1: the reference rows */
    size_t next[NREQ];      /* the position expected next */
    int ntok[NREQ];
    int32_t toks[NREQ][MAXNEW];
    int bad;
    double maxdiff;
} got;

/* The odd requests ask for their prompt's rows (the last, the longest,
 * is the one preempted). */
static int asks(int i)
{
    return i % 2;
}

static int which(const got *g, uint64_t id)
{
    for (int i = 0; i < NREQ; i++)
        if (g->ids[i] == id)
            return i;
    return -1;
}

static void on_prompt(uint64_t id, size_t pos, int32_t token, const float *l, void *user)
{
    got *g = user;
    int i = which(g, id);
    if (i < 0 || !asks(i) || pos != g->next[i] + 1 || pos >= g->np[i] || g->ntok[i] ||
        token != g->prompt[i][pos]) {
        fprintf(stderr, "  request %d: position %zu (want %zu), token %d\n", i, pos,
                i >= 0 ? g->next[i] + 1 : 0, token);
        g->bad = 1;
        return;
    }
    g->next[i] = pos;
    float scale = 0;
    for (int t = 0; t < V; t++)
        scale = fmaxf(scale, fabsf(g->want[i][pos - 1][t]));
    for (int t = 0; t < V; t++) {
        double d = fabs((double)l[t] - g->want[i][pos - 1][t]) / scale;
        if (d > g->maxdiff)
            g->maxdiff = d;
    }
}

static int on_token(uint64_t id, int32_t t, void *user)
{
    got *g = user;
    int i = which(g, id);
    if (i >= 0 && g->ntok[i] < MAXNEW)
        g->toks[i][g->ntok[i]++] = t;
    if (i >= 0 && asks(i) && g->next[i] + 1 != g->np[i]) {
        fprintf(stderr, "  request %d: a token before its prompt's rows\n", i);
        g->bad = 1;
    }
    return 0;
}

/* The reference rows of every prompt: the whole prompt in one batch on a
 * fresh context, every row wanted. */
static int reference_rows(synor_llm *m, synor_runtime *rt, got *g)
{
    for (int i = 0; i < NREQ; i++) {
        synor_llm_ctx *c;
        unsigned seqs[MAXP] = {0};
        uint8_t all[MAXP];
        memset(all, 1, sizeof all);
        if (synor_llm_ctx_create(m, rt, NULL, &c))
            return -1;
        int e = synor_llm_batch(c, g->np[i], g->prompt[i], seqs, all);
        for (size_t p = 0; !e && p + 1 < g->np[i]; p++)
            memcpy(g->want[i][p], synor_llm_logits(c, p), sizeof g->want[i][p]);
        synor_llm_ctx_destroy(c);
        if (e)
            return -1;
    }
    return 0;
}

/* The requests together through a scheduler with these limits; 0 when every check holds.
 * *preempted: the preemptions seen. */
static int run(unsigned kv_blocks, unsigned step_tokens, unsigned chunk, double *maxdiff,
               uint64_t *preempted)
{
    synor_runtime *rt = llm_test_runtime(2);
    synor_llm *m = load();
    static got g;
    static float want[NREQ][MAXP][V];
    memset(&g, 0, sizeof g);
    g.want = want;
    if (!rt || !m)
        return -1;
    int32_t alone[NREQ][MAXNEW];
    int nalone[NREQ];
    for (int i = 0; i < NREQ; i++) {
        g.np[i] = prompt_of(i, g.prompt[i]);
        synor_sampler s;
        synor_sampler_init(&s, 0, 0, 1, 0);
        nalone[i] = llm_test_decode(m, rt, g.prompt[i], g.np[i], &s, MAXNEW, alone[i], NULL, NULL);
    }
    if (reference_rows(m, rt, &g))
        return -1;
    synor_llm_ctx_opts co = {.max_seqs = NREQ, .max_batch = 64, .kv_blocks = kv_blocks};
    synor_llm_sched_opts so = {.step_tokens = step_tokens, .prefill_chunk = chunk};
    synor_llm_ctx *c;
    synor_llm_sched *s;
    if (synor_llm_ctx_create(m, rt, &co, &c) || synor_llm_sched_create(c, &so, &s))
        return -1;
    for (int i = 0; i < NREQ; i++) {
        synor_llm_request rq = {.prompt = g.prompt[i], .n_prompt = g.np[i], .max_new = MAXNEW,
                                .on_token = on_token, .user = &g};
        synor_sampler_init(&rq.sampler, 0, 0, 1, 0);
        if (asks(i))
            rq.on_prompt_logits = on_prompt;
        if (synor_llm_sched_submit(s, &rq, &g.ids[i]))
            return -1;
    }
    int left, steps = 0;
    while ((left = synor_llm_sched_step(s)) > 0 && steps++ < 10000)
        ;
    synor_llm_sched_stats st;
    synor_llm_sched_stats_get(s, &st);
    *preempted = st.preempted;
    int bad = left != 0 || g.bad;
    for (int i = 0; i < NREQ; i++) {
        if (asks(i) && g.next[i] + 1 != g.np[i]) {
            fprintf(stderr, "  request %d: rows up to %zu of %zu\n", i, g.next[i], g.np[i]);
            bad = 1;
        }
        if (g.ntok[i] != nalone[i] || memcmp(g.toks[i], alone[i], sizeof(int32_t) * nalone[i])) {
            fprintf(stderr, "  request %d: %d tokens, not its %d alone\n", i, g.ntok[i],
                    nalone[i]);
            bad = 1;
        }
    }
    *maxdiff = g.maxdiff;
    llm_test_teardown(s, c, m, rt);
    return bad ? -1 : 0;
}

TEST(prompt_rows_once_in_order)
{
    double d;
    uint64_t pre;
    ASSERT_OK(run(0, 64, 64, &d, &pre)); /* whole prompts, as far as steps allow */
    fprintf(stderr, "  one chunk: rows within %.2g of the reference (relative)\n", d);
    ASSERT(d < 1e-5);
    ASSERT_OK(run(0, 16, 5, &d, &pre)); /* chunks of 5 */
    fprintf(stderr, "  chunks of 5: within %.2g\n", d);
    ASSERT(d < 1e-5);
}

TEST(prompt_rows_not_repeated_after_preemption)
{
    double d;
    uint64_t pre;
    /* 8 blocks of 16 positions for prompts of 20-53 positions and 6 new */
    ASSERT_OK(run(8, 64, 8, &d, &pre));
    fprintf(stderr, "  %llu preemptions; rows within %.2g\n", (unsigned long long)pre, d);
    ASSERT(pre > 0);
    ASSERT(d < 1e-5);
}

TEST(cleanup)
{
    char p[80];
    snprintf(p, sizeof p, "%s/m.gguf", dir);
    unlink(p);
    rmdir(dir);
}

TEST_MAIN(prompt_rows_once_in_order, prompt_rows_not_repeated_after_preemption, cleanup)
