/* test_runtime_llm_sched.c - continuous batching: requests run together,
 * queued, chunked, preempted or cancelled produce exactly the tokens each
 * produces alone; refusals change nothing; submit and cancel from another
 * thread while steps run (also under ThreadSanitizer); warming the KV
 * pool's fresh blocks mid-run changes no token; beside a prompt's SGEMM
 * block, decode rows keep the logits they get alone, bit for bit. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/blas_api.h"
#include "llm/llm_ctx.h"
#include "llm_fixture.h"
#include "synor/error.h"
#include "synor/llm.h"
#include "synor/runtime.h"
#include "test.h"

static const char text[] = "the cat sat on the mat and the dog ran to the park to play ball "
                           "with a boy who had a red kite and a blue hat";

enum { NREQ = 6, MAXNEW = 24 };

static char model_path[64];

/* The tests' model: dim 64, 2 layers, a 300-piece vocabulary trained on
 * text, context seq_len, weights of type t from seed, into path. */
static int synth(const char *path, synor_ttype t, int seq_len, uint64_t seed)
{
    synor_llm_synth s = {.cfg = {.dim = 64,
                                 .hidden_dim = 96,
                                 .n_layers = 2,
                                 .n_heads = 4,
                                 .n_kv_heads = 2,
                                 .vocab_size = 300,
                                 .seq_len = seq_len,
                                 .shared_classifier = 0},
                         .seed = seed,
                         .text = text,
                         .text_len = sizeof text - 1};
    return synor_llm_synth_gguf(&s, t, path);
}

static synor_llm *load(void)
{
    if (!model_path[0]) {
        char dir[] = "/tmp/synor-sched-XXXXXX";
        if (!mkdtemp(dir))
            return NULL;
        snprintf(model_path, sizeof model_path, "%s/m.gguf", dir);
        if (synth(model_path, SYNOR_TTYPE_Q8_0, 96, 9))
            return NULL;
    }
    synor_llm *m = NULL;
    return synor_llm_load(model_path, NULL, &m) ? NULL : m;
}

static synor_runtime *runtime(void) { return llm_test_runtime(2); }

static void prompt_of(int i, int32_t *p, size_t *n)
{
    *n = (size_t)(3 + 7 * i % 23);
    p[0] = 1;
    for (size_t j = 1; j < *n; j++)
        p[j] = (int32_t)(3 + (i * 37 + (int)j * 11) % 290);
}

/* 0: requests decode greedily; else they sample, each with its own
 * temperature, top-k, top-p and a seed of this series (sampler_of). */
static int sampled;

static void sampler_of(int i, synor_sampler *s)
{
    static const struct { float t; int k; float p; } v[] = {
        {0.8f, 0, 1}, {1, 40, 1}, {0.5f, 0, 0.9f}, {1.3f, 8, 0.95f}}; /* greedy: t 0 */
    synor_sampler_init(s, sampled ? v[i % 4].t : 0, v[i % 4].k, v[i % 4].p,
                       (uint64_t)sampled * 1000 + (uint64_t)i);
}

/* The tokens of request i alone (sampler_of): the prompt as one batch,
 * then one token per batch. */
static int alone(synor_llm *m, synor_runtime *rt, int i, int32_t *out)
{
    int32_t p[32];
    size_t n;
    synor_sampler s;
    prompt_of(i, p, &n);
    sampler_of(i, &s);
    int k = llm_test_decode(m, rt, p, n, &s, MAXNEW, out, NULL, NULL);
    return k < 0 ? 0 : k;
}

typedef struct got {
    int32_t toks[NREQ][MAXNEW];
    int n[NREQ], reason[NREQ], done[NREQ];
    uint64_t ids[NREQ];
    int stop_after[NREQ];
    pthread_mutex_t mu;
} got;

static int index_of(got *g, uint64_t id)
{
    for (int i = 0; i < NREQ; i++)
        if (g->ids[i] == id)
            return i;
    return -1;
}

static int on_token(uint64_t id, int32_t t, void *user)
{
    got *g = user;
    pthread_mutex_lock(&g->mu);
    int i = index_of(g, id), stop = 0;
    if (i >= 0 && g->n[i] < MAXNEW) {
        g->toks[i][g->n[i]++] = t;
        stop = g->stop_after[i] && g->n[i] >= g->stop_after[i];
    }
    pthread_mutex_unlock(&g->mu);
    return stop;
}

static void on_done(uint64_t id, int reason, void *user)
{
    got *g = user;
    pthread_mutex_lock(&g->mu);
    int i = index_of(g, id);
    if (i >= 0) {
        g->reason[i] = reason;
        g->done[i]++;
    }
    pthread_mutex_unlock(&g->mu);
}

static int submit(synor_llm_sched *s, got *g, int i)
{
    int32_t p[32];
    size_t n;
    prompt_of(i, p, &n);
    synor_llm_request r = {.prompt = p,
                           .n_prompt = n,
                           .max_new = MAXNEW,
                           .on_token = on_token,
                           .on_done = on_done,
                           .user = g};
    sampler_of(i, &r.sampler);
    pthread_mutex_lock(&g->mu); /* the id is stored before a step can use it */
    int e = synor_llm_sched_submit(s, &r, &g->ids[i]);
    pthread_mutex_unlock(&g->mu);
    return e;
}

/* run_all warms the KV pool's fresh blocks (synor_llm_kv_warm, one at a
 * time) after this many steps; 0: never. */
static int warm_after;

/* Warms c's pool to the end one block at a time: each call leaves one
 * fewer never-written block, and some were already written (in use). */
static int warm_all(synor_llm_ctx *c)
{
    unsigned used, total, left = synor_llm_kv_warm(c, 0);
    synor_llm_kv_usage(c, &used, &total);
    if (used == 0 || left > total - used) {
        fprintf(stderr, "  warm: %u never written with %u of %u in use\n", left, used, total);
        return -1;
    }
    while (left) {
        unsigned now = synor_llm_kv_warm(c, 1);
        if (now != left - 1)
            return -1;
        left = now;
    }
    return synor_llm_kv_warm(c, 4) == 0 ? 0 : -1;
}

/* Runs NREQ requests through a scheduler with the given limits and checks
 * each against its solo run; returns the preemptions seen. */
static long run_all(unsigned max_seqs, unsigned kv_blocks, unsigned step_tokens, unsigned chunk)
{
    synor_llm *m = load();
    synor_runtime *rt = runtime();
    if (!m || !rt)
        return -1;
    int32_t want[NREQ][MAXNEW];
    int nwant[NREQ];
    for (int i = 0; i < NREQ; i++)
        nwant[i] = alone(m, rt, i, want[i]);
    synor_llm_ctx_opts co = {.max_seqs = max_seqs, .max_batch = 64, .kv_blocks = kv_blocks};
    synor_llm_ctx *c;
    synor_llm_sched *s;
    synor_llm_sched_opts so = {.step_tokens = step_tokens, .prefill_chunk = chunk};
    if (synor_llm_ctx_create(m, rt, &co, &c) || synor_llm_sched_create(c, &so, &s)) {
        fprintf(stderr, "  %s\n", synor_errmsg());
        return -1;
    }
    got g;
    memset(&g, 0, sizeof g);
    pthread_mutex_init(&g.mu, NULL);
    for (int i = 0; i < NREQ; i++)
        if (submit(s, &g, i)) {
            fprintf(stderr, "  submit %d: %s\n", i, synor_errmsg());
            return -1;
        }
    int left, steps = 0;
    long bad = 0;
    while ((left = synor_llm_sched_step(s)) > 0 && steps < 10000)
        if (++steps == warm_after && warm_all(c)) {
            fprintf(stderr, "  warming the pool after %d steps failed\n", steps);
            bad = -1;
        }
    if (left < 0)
        bad = -1;
    if (bad)
        fprintf(stderr, "  step: %s\n", synor_errmsg());
    for (int i = 0; i < NREQ && !bad; i++) {
        if (g.done[i] != 1 || g.n[i] != nwant[i] ||
            memcmp(g.toks[i], want[i], (size_t)nwant[i] * sizeof(int32_t)) != 0) {
            fprintf(stderr, "  request %d: %d tokens (want %d), done %d\n", i, g.n[i], nwant[i],
                    g.done[i]);
            bad = -1;
        }
    }
    synor_llm_sched_stats st;
    synor_llm_sched_stats_get(s, &st);
    if (!bad && (st.finished != NREQ || st.running || st.waiting || st.kv_used))
        bad = -1;
    /* where the steps went: every step ran a row, no more than step_tokens,
     * the prompt rows among them; the batches inside the steps' time */
    if (!bad && (st.rows < st.steps || st.rows > st.steps * step_tokens ||
                 st.rows < st.prompt_tokens + st.generated_tokens - NREQ || st.batch_ns == 0 ||
                 st.batch_ns > st.step_ns)) {
        fprintf(stderr,
                "  stats: %llu steps, %llu rows, %llu prompt rows, batch %llu ns, step %llu "
                "ns\n",
                (unsigned long long)st.steps, (unsigned long long)st.rows,
                (unsigned long long)st.prompt_tokens, (unsigned long long)st.batch_ns,
                (unsigned long long)st.step_ns);
        bad = -1;
    }
    long out = bad ? -1 : (long)st.preempted;
    synor_llm_sched_destroy(s);
    synor_llm_ctx_destroy(c);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
    pthread_mutex_destroy(&g.mu);
    return out;
}

TEST(together_equals_alone)
{
    ASSERT(run_all(NREQ, 0, 64, 64) >= 0); /* all at once */
    ASSERT(run_all(2, 0, 64, 64) >= 0);    /* queued behind 2 sequences */
    ASSERT(run_all(NREQ, 0, 8, 3) >= 0);   /* small steps, chunked prompts */
}

TEST(preemption_recomputes_the_same_tokens)
{
    /* 6 blocks of 16 positions for 6 requests of up to 48 positions. */
    long p = run_all(NREQ, 6, 64, 8);
    ASSERT(p > 0);
    fprintf(stderr, "  %ld preemptions\n", p);
}

TEST(refusals_change_nothing)
{
    synor_llm *m = load();
    synor_runtime *rt = runtime();
    ASSERT(m && rt);
    synor_llm_ctx *c;
    synor_llm_sched *s;
    synor_llm_ctx_opts co = {.max_seqs = 1};
    synor_llm_sched_opts so = {.max_queue = 2};
    ASSERT_OK(synor_llm_ctx_create(m, rt, &co, &c));
    ASSERT_OK(synor_llm_sched_create(c, &so, &s));
    got g;
    memset(&g, 0, sizeof g);
    pthread_mutex_init(&g.mu, NULL);
    ASSERT_OK(submit(s, &g, 0));
    ASSERT_OK(submit(s, &g, 1));
    ASSERT_EQ(submit(s, &g, 2), SYNOR_EBUSY);
    ASSERT_CONTAINS(synor_errmsg(), "overloaded");
    int32_t longp[200] = {1};
    synor_llm_request r = {.prompt = longp, .n_prompt = 200, .max_new = 4};
    uint64_t id;
    ASSERT_EQ(synor_llm_sched_submit(s, &r, &id), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "context is 96");
    longp[1] = 5000;
    r.n_prompt = 2;
    ASSERT_EQ(synor_llm_sched_submit(s, &r, &id), SYNOR_EINVAL);
    synor_llm_sched_stats st;
    synor_llm_sched_stats_get(s, &st);
    ASSERT_EQ(st.submitted, 2);
    ASSERT_EQ(st.waiting, 2);
    /* cancel one waiting, stop the other after 5 tokens */
    ASSERT_OK(synor_llm_sched_cancel(s, g.ids[1]));
    g.stop_after[0] = 5;
    while (synor_llm_sched_step(s) > 0)
        ;
    ASSERT_EQ(g.reason[1], SYNOR_LLM_DONE_CANCELLED);
    ASSERT_EQ(g.n[1], 0);
    ASSERT_EQ(g.reason[0], SYNOR_LLM_DONE_STOPPED);
    ASSERT_EQ(g.n[0], 5);
    ASSERT_EQ(synor_llm_sched_cancel(s, g.ids[0]), SYNOR_ENOENT);
    ASSERT_EQ(synor_llm_sched_step(s), 0); /* idle */
    synor_llm_sched_destroy(s);
    synor_llm_ctx_destroy(c);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
    pthread_mutex_destroy(&g.mu);
}

typedef struct feeder {
    synor_llm_sched *s;
    got *g;
} feeder;

static void *feed(void *arg)
{
    feeder *f = arg;
    for (int i = 0; i < NREQ; i++) {
        submit(f->s, f->g, i);
        usleep(2000);
    }
    return NULL;
}

/* Requests arrive from another thread while steps run, one is cancelled
 * while running; the rest finish with their solo tokens. */
TEST(submit_from_another_thread)
{
    synor_llm *m = load();
    synor_runtime *rt = runtime();
    ASSERT(m && rt);
    int32_t want[NREQ][MAXNEW];
    int nwant[NREQ];
    for (int i = 0; i < NREQ; i++)
        nwant[i] = alone(m, rt, i, want[i]);
    synor_llm_ctx_opts co = {.max_seqs = 3};
    synor_llm_ctx *c;
    synor_llm_sched *s;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &co, &c));
    ASSERT_OK(synor_llm_sched_create(c, NULL, &s));
    got g;
    memset(&g, 0, sizeof g);
    pthread_mutex_init(&g.mu, NULL);
    feeder f = {s, &g};
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, feed, &f), 0);
    /* Step until every request has finished (the feeder sleeps between
     * submits; an idle step returns at once), for at most 120 s. */
    int finished = 0;
    time_t t0 = time(NULL);
    while (finished < NREQ && time(NULL) - t0 < 120) {
        if (synor_llm_sched_step(s) == 0)
            usleep(200);
        pthread_mutex_lock(&g.mu);
        finished = 0;
        for (int i = 0; i < NREQ; i++)
            finished += g.done[i];
        pthread_mutex_unlock(&g.mu);
    }
    pthread_join(th, NULL);
    ASSERT_EQ(finished, NREQ);
    for (int i = 0; i < NREQ; i++) {
        ASSERT_EQ(g.n[i], nwant[i]);
        ASSERT(memcmp(g.toks[i], want[i], (size_t)nwant[i] * sizeof(int32_t)) == 0);
    }
    synor_llm_sched_destroy(s);
    synor_llm_ctx_destroy(c);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
    pthread_mutex_destroy(&g.mu);
}

/* Blocks written while requests hold others (the idle server's warming)
 * leave every request's tokens as they are alone, preempted ones too. */
TEST(warming_the_pool_changes_no_token)
{
    warm_after = 3;
    ASSERT(run_all(NREQ, 0, 64, 8) >= 0);
    ASSERT(run_all(NREQ, 6, 64, 8) > 0); /* and with preemptions */
    warm_after = 0;
}

typedef struct collected {
    int32_t *toks;
    int n;
} collected;

static int collect(int32_t t, const char *piece, size_t len, void *user)
{
    (void)piece, (void)len;
    collected *c = user;
    if (c->n < 8)
        c->toks[c->n++] = t;
    return 0;
}

/* The avx2 table (where the CPU has it and OpenBLAS is loaded) sends a
 * prompt's rows in blocks of m = gemm_block (48) to SGEMM and every other
 * row to the tile (batch.c, kern.c). One batch carrying a decode row of
 * each of two sequences and a 100-token prompt of a third (two blocks,
 * then 4 rows through the tile) gives, bit for bit, the logits each decode
 * row gets alone and the prompt's last logits as the scheduler's chunks of
 * m, m and 4 give them. Batch-sized SGEMM (every row of a batch of 64 or
 * more, as before) fails it: OpenBLAS sums in another order than the
 * tile. */
TEST(decode_rows_beside_a_prompt_block_are_bitwise_alone)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               (synor__llm_kernels() == &synor__llm_kernels_avx2 ||
                synor__llm_kernels() == &synor__llm_kernels_avx512);
#else
    int avx2 = 0;
#endif
    if (!avx2 || !synor__blas()) {
        fprintf(stderr, "  skipped: needs the avx2 kernel table and OpenBLAS\n");
        return;
    }
    char dir[] = "/tmp/synor-block-XXXXXX", path[64];
    ASSERT(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/f32.gguf", dir);
    ASSERT_OK(synth(path, SYNOR_TTYPE_F32, 160, 5));
    synor_llm *m = NULL;
    ASSERT_OK(synor_llm_load(path, NULL, &m));
    synor_runtime *rt = runtime();
    ASSERT(rt != NULL);
    synor_llm_ctx_opts co = {.max_seqs = 3, .max_batch = 128};
    synor_llm_ctx *a, *b;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &co, &a));
    ASSERT_OK(synor_llm_ctx_create(m, rt, &co, &b));
    a->k = b->k = &synor__llm_kernels_avx2;
    enum { NP = 100, V = 300 };
    int32_t tok[2 + NP], hist[9];
    unsigned seqs[2 + NP];
    uint8_t want[2 + NP];
    for (int i = 0; i < 9; i++)
        hist[i] = 3 + i * 31 % 290;
    for (int i = 0; i < NP; i++)
        tok[2 + i] = 3 + (i * 37 + 11) % 290;
    /* histories: sequence 0 five tokens, sequence 1 nine, in both contexts */
    unsigned zeros[9] = {0}, ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    synor_llm_ctx *both[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(synor_llm_batch(both[i], 5, hist, zeros, NULL));
        ASSERT_OK(synor_llm_batch(both[i], 9, hist, ones, NULL));
    }
    /* a: one batch of everything */
    tok[0] = 17, tok[1] = 29;
    for (int i = 0; i < 2 + NP; i++) {
        seqs[i] = i < 2 ? (unsigned)i : 2;
        want[i] = i < 2 || i == 1 + NP;
    }
    ASSERT_OK(synor_llm_batch(a, 2 + NP, tok, seqs, want));
    int bm = a->k->gemm_block;
    ASSERT(bm > 0 && 2 * bm < NP);
    ASSERT(a->gemm.n == 2 && a->gemm_start[0] == 2 && a->gemm_start[1] == 2 + bm);
    /* b: each decode row alone, the prompt in the scheduler's chunks */
    static float alone[3][V];
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(synor_llm_batch(b, 1, &tok[i], &seqs[i], NULL));
        memcpy(alone[i], synor_llm_logits(b, 0), sizeof alone[i]);
    }
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(synor_llm_batch(b, (size_t)bm, tok + 2 + i * bm, seqs + 2, want + 2 + i * bm));
        ASSERT(b->gemm.n == 1);
    }
    ASSERT_OK(
        synor_llm_batch(b, (size_t)(NP - 2 * bm), tok + 2 + 2 * bm, seqs + 2, want + 2 + 2 * bm));
    memcpy(alone[2], synor_llm_logits(b, (size_t)(NP - 2 * bm - 1)), sizeof alone[2]);
    ASSERT(memcmp(synor_llm_logits(a, 0), alone[0], sizeof alone[0]) == 0);
    ASSERT(memcmp(synor_llm_logits(a, 1), alone[1], sizeof alone[1]) == 0);
    ASSERT(memcmp(synor_llm_logits(a, 1 + NP), alone[2], sizeof alone[2]) == 0);
    /* The scheduler (chunks of at most 64) ends the prompt's chunks at
     * multiples of bm beside another request's decode rows - a block in
     * each of its first two steps, none in the third - and the prompt's
     * tokens are generate's. */
    for (unsigned q = 0; q < 3; q++)
        synor_llm_seq_reset(a, q);
    synor_llm_sched *sc;
    synor_llm_sched_opts so = {.prefill_chunk = 64};
    ASSERT_OK(synor_llm_sched_create(a, &so, &sc));
    got g;
    memset(&g, 0, sizeof g);
    pthread_mutex_init(&g.mu, NULL);
    synor_llm_request r[2] = {{.prompt = hist, .n_prompt = 5, .max_new = 8},
                              {.prompt = tok + 2, .n_prompt = NP, .max_new = 8}};
    for (int i = 0; i < 2; i++) {
        r[i].on_token = on_token, r[i].on_done = on_done, r[i].user = &g;
        synor_sampler_init(&r[i].sampler, 0, 0, 1, 1);
        ASSERT_OK(synor_llm_sched_submit(sc, &r[i], &g.ids[i]));
    }
    int blocks[3];
    for (int i = 0; i < 3; i++) {
        ASSERT(synor_llm_sched_step(sc) > 0);
        blocks[i] = a->gemm.n;
    }
    ASSERT(blocks[0] == 1 && blocks[1] == 1 && blocks[2] == 0);
    while (synor_llm_sched_step(sc) > 0)
        ;
    synor_llm_sched_destroy(sc);
    int32_t gen[8];
    collected cl = {gen, 0};
    synor_sampler gs;
    synor_sampler_init(&gs, 0, 0, 1, 1);
    synor_llm_seq_reset(b, 0);
    ASSERT_OK(synor_llm_generate_ids(b, tok + 2, NP, 0, 8, 0, &gs, collect, &cl, NULL));
    ASSERT(g.done[1] == 1 && g.n[1] == cl.n && cl.n > 0);
    ASSERT(memcmp(g.toks[1], gen, (size_t)cl.n * sizeof gen[0]) == 0);
    pthread_mutex_destroy(&g.mu);
    synor_llm_ctx_destroy(a);
    synor_llm_ctx_destroy(b);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
    unlink(path);
    rmdir(dir);
}

/* One scheduler over the tests' model with a draft (path; k proposals),
 * every request's tokens against its solo run: together 0, the requests
 * one after another (each alone: speculative rounds); together T > 0,
 * request 0 alone for T steps (its prompt, then T - 1 rounds at most),
 * then requests 1.. all at once, stopping themselves after 2 tokens: 0
 * decodes beside them (plain steps), then alone again (the draft catching
 * up on the tokens it missed); together -1, all submitted at once; -2,
 * all at once and all but the last (on the target's last sequence)
 * stopping themselves after 2 tokens. stop_at > 0: request 2 stops itself after that many tokens.
 * *st: the scheduler's figures. 0 when every token is right. */
static int dseqs = 1; /* run_spec's draft context: its sequences */

static int run_spec(const char *draft, unsigned k, int together, int stop_at,
                    synor_llm_sched_stats *st)
{
    synor_llm *m = load(), *dm = NULL;
    synor_runtime *rt = runtime();
    if (!m || !rt || synor_llm_load(draft, NULL, &dm))
        return -1;
    int32_t want[NREQ][MAXNEW];
    int nwant[NREQ];
    for (int i = 0; i < NREQ; i++)
        nwant[i] = alone(m, rt, i, want[i]);
    synor_llm_ctx_opts co = {.max_seqs = NREQ, .max_batch = 64};
    synor_llm_ctx_opts dco = {.max_seqs = (unsigned)dseqs};
    synor_llm_ctx *c, *d;
    synor_llm_sched *s;
    if (synor_llm_ctx_create(m, rt, &co, &c) || synor_llm_ctx_create(dm, rt, &dco, &d))
        return -1;
    synor_llm_sched_opts so = {.draft = d, .spec_k = k};
    if (synor_llm_sched_create(c, &so, &s))
        return -1;
    got g;
    memset(&g, 0, sizeof g);
    pthread_mutex_init(&g.mu, NULL);
    int stop[NREQ] = {0};
    for (int i = 1; i < NREQ && together > 0; i++)
        stop[i] = 2;
    for (int i = 0; i < NREQ - 1 && together == -2; i++)
        stop[i] = 2;
    if (stop_at)
        stop[2] = stop_at;
    memcpy(g.stop_after, stop, sizeof stop);
    int bad = 0;
    for (int i = 0; i < NREQ && !bad; i++) {
        if (submit(s, &g, i))
            bad = -1;
        /* steps after this submit: to the end, T (request 0 alone) or none */
        int left = 1, budget = !together || i == NREQ - 1 ? 10000 : i == 0 && together > 0 ? together : 0;
        for (int steps = 0; steps < budget && left > 0; steps++)
            left = synor_llm_sched_step(s);
        if (left < 0)
            bad = -1;
    }
    for (int i = 0; i < NREQ && !bad; i++) {
        int cut = stop[i] && stop[i] < nwant[i];
        int n = cut ? stop[i] : nwant[i];
        int reason = cut ? SYNOR_LLM_DONE_STOPPED
                         : n < MAXNEW ? SYNOR_LLM_DONE_EOS : SYNOR_LLM_DONE_LENGTH;
        if (g.done[i] != 1 || g.n[i] != n || g.reason[i] != reason ||
            memcmp(g.toks[i], want[i], (size_t)n * sizeof(int32_t)) != 0) {
            fprintf(stderr, "  request %d: %d tokens (want %d), done %d, reason %d (want %d)\n",
                    i, g.n[i], n, g.done[i], g.reason[i], reason);
            bad = -1;
        }
    }
    synor_llm_sched_stats_get(s, st);
    fprintf(stderr,
            "  k=%u %s: %llu steps, %llu speculative rounds, acceptance %llu of %llu, %llu "
            "tokens\n",
            k, together > 0 ? "staggered" : together == -2 ? "at once, one left" : together ? "at once" : "one by one", (unsigned long long)st->steps,
            (unsigned long long)st->spec_rounds, (unsigned long long)st->spec_accepted,
            (unsigned long long)st->spec_proposed, (unsigned long long)st->generated_tokens);
    if (st->running || st->waiting || st->kv_used || st->spec_accepted > st->spec_proposed ||
        st->spec_rounds > st->steps)
        bad = -1;
    synor_llm_sched_destroy(s);
    synor_llm_ctx_destroy(d);
    synor_llm_ctx_destroy(c);
    synor_runtime_destroy(rt);
    synor_llm_destroy(dm);
    synor_llm_destroy(m);
    pthread_mutex_destroy(&g.mu);
    return bad;
}

/* The drafts beside the target (model_path made first): its weights in 4
 * bits, and an unrelated model, mostly rejected. 0 when both are written. */
static int drafts(char q4[96], char other[96])
{
    synor_llm *m0 = load();
    synor_llm_destroy(m0);
    int d = (int)(strrchr(model_path, '/') - model_path);
    snprintf(q4, 96, "%.*s/q4.gguf", d, model_path);
    snprintf(other, 96, "%.*s/other.gguf", d, model_path);
    return !m0 || synth(q4, SYNOR_TTYPE_Q4_0, 96, 9) || synth(other, SYNOR_TTYPE_Q8_0, 96, 77);
}

/* A greedy request alone decodes speculatively and gets the tokens it gets
 * without a draft, whatever the draft proposes; requests together run
 * plain steps until one is left. */
TEST(speculative_rounds_give_the_same_tokens)
{
    char q4[96], other[96];
    ASSERT_OK(drafts(q4, other));
    synor_llm_sched_stats st, one;
    for (unsigned k = 1; k <= 7; k += 3) {
        ASSERT_OK(run_spec(q4, k, 0, 0, &one));
        ASSERT(one.spec_rounds > 0 && one.spec_accepted > 0);
        ASSERT(one.steps < one.generated_tokens); /* fewer target batches than tokens */
        ASSERT_OK(run_spec(q4, k, 3, 0, &st));
        ASSERT(st.spec_rounds >= 3); /* some after the others left */
        ASSERT(st.steps > st.spec_rounds); /* and plain steps, the requests together */
    }
    ASSERT_OK(run_spec(other, 4, 0, 0, &st));
    ASSERT(st.spec_rounds > 0 && st.spec_accepted < st.spec_proposed);
    /* a request stopping itself inside a round gets no token after it */
    ASSERT_OK(run_spec(q4, 7, 0, 3, &st));
    ASSERT_OK(run_spec(other, 2, 0, 5, &st));
    /* a draft of NREQ sequences: rounds for several requests at once */
    dseqs = NREQ;
    synor_llm_sched_stats many;
    for (unsigned k = 1; k <= 7; k += 3) {
        ASSERT_OK(run_spec(q4, k, -1, 0, &many));
        /* after the prompts' steps, rounds of several requests: fewer
         * rounds than the requests' tokens over k + 1 each could take */
        ASSERT(many.spec_rounds > 0 && many.steps - many.spec_rounds <= 3);
        ASSERT(many.spec_rounds * (k + 1) < many.generated_tokens);
    }
    ASSERT_OK(run_spec(q4, 4, -1, 3, &many)); /* request 2 stops after 3 */
    ASSERT_OK(run_spec(other, 4, -1, 0, &many));
    ASSERT_OK(run_spec(q4, 4, 3, 0, &many)); /* 0 alone, then beside the others */
    dseqs = 1;
    /* a draft of one sequence drafts for the last request left, whatever
     * the target's sequence it runs on */
    ASSERT_OK(run_spec(q4, 4, -2, 0, &many));
    ASSERT(many.spec_rounds > 0);
    unlink(q4);
    unlink(other);
}

/* Sampled requests speculate with the draws their tokens take: the
 * tokens of plain steps, one request or several, whatever the draft (the
 * target itself: every proposal accepted; its Q4_0 copy; an unrelated
 * model), stopping or not; a draft of another vocabulary and a bad k are
 * refused. */
TEST(sampled_requests_speculate_with_their_own_draws)
{
    synor_llm *m = load();
    synor_runtime *rt = runtime();
    ASSERT(m && rt);
    char dir[80], small[96];
    snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(model_path, '/') - model_path), model_path);
    snprintf(small, sizeof small, "%s/v290.gguf", dir);
    synor_llm_synth sy = {.cfg = {.dim = 64,
                                  .hidden_dim = 96,
                                  .n_layers = 1,
                                  .n_heads = 4,
                                  .n_kv_heads = 2,
                                  .vocab_size = 290,
                                  .seq_len = 96},
                          .seed = 1,
                          .text = text,
                          .text_len = sizeof text - 1};
    ASSERT_OK(synor_llm_synth_gguf(&sy, SYNOR_TTYPE_Q8_0, small));
    synor_llm *dm, *sm;
    ASSERT_OK(synor_llm_load(model_path, NULL, &dm)); /* the target itself as the draft */
    ASSERT_OK(synor_llm_load(small, NULL, &sm));
    synor_llm_ctx *c, *d, *sd;
    synor_llm_ctx_opts one = {.max_seqs = 1};
    ASSERT_OK(synor_llm_ctx_create(m, rt, NULL, &c));
    ASSERT_OK(synor_llm_ctx_create(dm, rt, &one, &d));
    ASSERT_OK(synor_llm_ctx_create(sm, rt, &one, &sd));
    synor_llm_sched *s;
    synor_llm_sched_opts bad = {.draft = sd};
    ASSERT_EQ(synor_llm_sched_create(c, &bad, &s), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "vocabulary");
    bad.draft = d;
    bad.spec_k = 33;
    ASSERT_EQ(synor_llm_sched_create(c, &bad, &s), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "spec_k 33");
    int32_t toks[2][MAXNEW];
    int n[2];
    for (int with = 0; with < 2; with++) {
        synor_llm_sched_opts so = {.draft = with ? d : NULL};
        ASSERT_OK(synor_llm_sched_create(c, &so, &s));
        got g;
        memset(&g, 0, sizeof g);
        pthread_mutex_init(&g.mu, NULL);
        int32_t p[32];
        size_t np;
        prompt_of(3, p, &np);
        synor_llm_request r = {.prompt = p,
                               .n_prompt = np,
                               .max_new = MAXNEW,
                               .on_token = on_token,
                               .on_done = on_done,
                               .user = &g};
        synor_sampler_init(&r.sampler, 0.8f, 0, 0.95f, 42);
        ASSERT_OK(synor_llm_sched_submit(s, &r, &g.ids[0]));
        while (synor_llm_sched_step(s) > 0)
            ;
        synor_llm_sched_stats st;
        synor_llm_sched_stats_get(s, &st);
        if (with) { /* the draft is the target: its draws are the target's */
            ASSERT(st.spec_rounds > 0 && st.spec_proposed > 0);
            ASSERT_EQ(st.spec_accepted, st.spec_proposed);
        }
        ASSERT_EQ(g.done[0], 1);
        n[with] = g.n[0];
        memcpy(toks[with], g.toks[0], sizeof toks[with]);
        synor_llm_sched_destroy(s);
        pthread_mutex_destroy(&g.mu);
    }
    ASSERT(n[0] > 0);
    ASSERT_EQ(n[0], n[1]);
    ASSERT(memcmp(toks[0], toks[1], (size_t)n[0] * sizeof(int32_t)) == 0);
    synor_llm_ctx_destroy(sd);
    synor_llm_ctx_destroy(d);
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(sm);
    synor_llm_destroy(dm);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
    unlink(small);
    char q4[96], other[96];
    ASSERT_OK(drafts(q4, other));
    synor_llm_sched_stats alone1, many;
    for (sampled = 1; sampled <= 3; sampled++) {
        dseqs = 1;
        ASSERT_OK(run_spec(q4, 4, 0, 0, &alone1));
        ASSERT(alone1.spec_rounds > 0 && alone1.spec_accepted > 0);
        /* beside others, then alone */
        ASSERT_OK(run_spec(q4, (unsigned)(2 * sampled), 3, 0, &alone1));
        ASSERT(alone1.spec_rounds > 0);
        dseqs = NREQ;
        ASSERT_OK(run_spec(q4, 4, -1, 0, &many));
        ASSERT(many.spec_rounds > 0 && many.spec_accepted > 0);
        ASSERT_OK(run_spec(q4, 7, -1, 3, &many)); /* request 2 stops after 3 */
        ASSERT_OK(run_spec(other, 3, -1, 0, &many));
        ASSERT(many.spec_accepted < many.spec_proposed);
    }
    sampled = 0, dseqs = 1;
    unlink(q4);
    unlink(other);
}

TEST(cleanup)
{
    char *slash = strrchr(model_path, '/');
    if (slash) {
        unlink(model_path);
        *slash = 0;
        rmdir(model_path);
    }
}

TEST_MAIN(together_equals_alone, preemption_recomputes_the_same_tokens, refusals_change_nothing,
          submit_from_another_thread, warming_the_pool_changes_no_token,
          decode_rows_beside_a_prompt_block_are_bitwise_alone,
          speculative_rounds_give_the_same_tokens, sampled_requests_speculate_with_their_own_draws,
          cleanup)
