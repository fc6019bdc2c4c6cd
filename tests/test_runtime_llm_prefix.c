/* test_runtime_llm_prefix.c - prefix caching in the KV pool: a sequence
 * that reuses another's published prompt blocks computes the rest to the
 * same bits as a prompt computed whole; a sequence cut inside a shared
 * block writes into a copy, never into what others read; idle published
 * blocks are handed out again least recently used first; and through the
 * scheduler, requests that share a prompt's beginning take its blocks and
 * still give the tokens they give alone. F32 and Q8_0 weights. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "llm_fixture.h"
#include "synor/error.h"
#include "synor/llm.h"
#include "synor/runtime.h"
#include "test.h"

enum { V = 320, CTX = 256, B = SYNOR_LLM_KV_BLOCK };

static char dir[32], path[2][64];

static synor_llm *load(int q8)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/synor-prefix-XXXXXX");
        if (!mkdtemp(dir))
            return NULL;
        synor_llm_synth s = llm_test_synth(2);
        s.cfg.seq_len = CTX;
        for (int i = 0; i < 2; i++) {
            snprintf(path[i], sizeof path[i], "%s/m%d.gguf", dir, i);
            if (synor_llm_synth_gguf(&s, i ? SYNOR_TTYPE_Q8_0 : SYNOR_TTYPE_F32, path[i]))
                return NULL;
        }
    }
    synor_llm *m = NULL;
    return synor_llm_load(path[q8], NULL, &m) ? NULL : m;
}

/* n tokens of stream `seed` (BOS first). */
static void tokens(int32_t *t, size_t n, unsigned seed)
{
    t[0] = 1;
    for (size_t i = 1; i < n; i++)
        t[i] = (int32_t)(3 + (seed * 131 + i * 97 + (i * i) % 29) % 310);
}

/* The logits of the last of t[0..n) computed from position `from` of
 * sequence seq of c (positions before it already there), into out. */
static int run_from(synor_llm_ctx *c, unsigned seq, const int32_t *t, size_t from, size_t n,
                    float *out)
{
    unsigned seqs[CTX];
    for (size_t i = 0; i < n; i++)
        seqs[i] = seq;
    if (synor_llm_batch(c, n - from, t + from, seqs, NULL))
        return -1;
    memcpy(out, synor_llm_logits(c, n - from - 1), V * sizeof *out);
    return 0;
}

/* The same on a fresh context, the prompt whole. */
static int fresh(synor_llm *m, synor_runtime *rt, const int32_t *t, size_t n, float *out)
{
    synor_llm_ctx *c;
    if (synor_llm_ctx_create(m, rt, NULL, &c))
        return -1;
    int e = run_from(c, 0, t, 0, n, out);
    synor_llm_ctx_destroy(c);
    return e;
}

static int reuse_and_copy(int q8)
{
    synor_runtime *rt = llm_test_runtime(2);
    synor_llm *m = load(q8);
    if (!rt || !m)
        return -1;
    synor_llm_ctx_opts o = {.max_seqs = 2, .prefix_cache = 1};
    synor_llm_ctx *c;
    if (synor_llm_ctx_create(m, rt, &o, &c))
        return -1;
    int32_t a[160], b[160], x[161];
    float la[V], lb[V], want[V];
    tokens(a, 150, 1);
    memcpy(b, a, 130 * sizeof *b); /* b: a's first 130 tokens, then its own */
    tokens(b + 130, 20, 2);
    b[130] = 7;
    int bad = 0;
    /* a on sequence 0, published; b reuses its blocks on sequence 1 */
    if (run_from(c, 0, a, 0, 150, la) || synor_llm_seq_publish(c, 0, a, 150))
        return -1;
    int r = synor_llm_seq_reuse(c, 1, b, 150);
    fprintf(stderr, "  %s: b took %d positions of a's\n", q8 ? "Q8_0" : "F32", r);
    if (r < 3 * B || r > 128 || r % B) /* 128: the whole blocks they share */
        bad = 1;
    if (run_from(c, 1, b, (size_t)r, 150, lb) || fresh(m, rt, b, 150, want))
        return -1;
    if (memcmp(lb, want, sizeof want)) {
        fprintf(stderr, "  b's logits differ from b computed whole\n");
        bad = 1;
    }
    unsigned used, total;
    synor_llm_kv_usage(c, &used, &total);
    if (used != 10 + (150 - (unsigned)r + B - 1) / B) { /* a's 10 blocks, b's own */
        fprintf(stderr, "  %u blocks in use\n", used);
        bad = 1;
    }
    /* b cut inside a shared block, then other tokens: a must not see them */
    if (synor_llm_seq_truncate(c, 1, 40))
        return -1;
    tokens(b + 40, 30, 3);
    if (run_from(c, 1, b, 40, 70, lb))
        return -1;
    memcpy(x, a, 150 * sizeof *x);
    x[150] = 11;
    if (run_from(c, 0, x, 150, 151, la) || fresh(m, rt, x, 151, want))
        return -1;
    if (memcmp(la, want, sizeof want)) {
        fprintf(stderr, "  a's logits moved after b wrote past its cut\n");
        bad = 1;
    }
    /* (positions 40-47 now take the tile, not SGEMM as in a prompt whole:
     * close, not the same bits) */
    if (fresh(m, rt, b, 70, want))
        return -1;
    for (int t = 0; t < V; t++)
        if (fabsf(lb[t] - want[t]) > 1e-4f * (1 + fabsf(want[t]))) {
            fprintf(stderr, "  b's logit %d after the cut: %g, computed whole %g\n", t,
                    (double)lb[t], (double)want[t]);
            bad = 1;
            break;
        }
    synor_llm_prefix_stats st;
    synor_llm_prefix_stats_get(c, &st);
    if (!st.enabled || st.lookups != 1 || st.reused_blocks != (uint64_t)r / B ||
        st.published_blocks != 9 || st.cached_blocks != 9) {
        fprintf(stderr, "  stats: %llu lookups, %llu reused, %llu published, %u cached\n",
                (unsigned long long)st.lookups, (unsigned long long)st.reused_blocks,
                (unsigned long long)st.published_blocks, st.cached_blocks);
        bad = 1;
    }
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
    return bad ? -1 : 0;
}

TEST(reused_blocks_give_the_same_bits)
{
    ASSERT_OK(reuse_and_copy(0));
    ASSERT_OK(reuse_and_copy(1));
}

TEST(idle_blocks_go_least_recently_used_first)
{
    synor_runtime *rt = llm_test_runtime(1);
    synor_llm *m = load(1);
    ASSERT(rt && m);
    synor_llm_ctx_opts o = {.max_seqs = 2, .kv_blocks = 12, .prefix_cache = 1};
    synor_llm_ctx *c;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &o, &c));
    int32_t p1[100], p2[100];
    float l[V];
    tokens(p1, 100, 4);
    tokens(p2, 100, 5);
    ASSERT_OK(run_from(c, 0, p1, 0, 100, l));
    ASSERT_OK(synor_llm_seq_publish(c, 0, p1, 100));
    synor_llm_seq_reset(c, 0);
    unsigned used, total;
    synor_llm_kv_usage(c, &used, &total);
    synor_llm_prefix_stats st;
    synor_llm_prefix_stats_get(c, &st);
    ASSERT(used == 0 && total == 12 && st.cached_blocks == 6 && st.idle_blocks == 6);
    /* p2 needs 7 blocks, 6 are free: the idle block used last goes (p1's
     * last whole block: its parents stay reachable) */
    ASSERT_OK(run_from(c, 0, p2, 0, 100, l));
    synor_llm_prefix_stats_get(c, &st);
    ASSERT(st.evicted_blocks == 1 && st.cached_blocks == 5 && st.idle_blocks == 5);
    int r = synor_llm_seq_reuse(c, 1, p1, 100);
    ASSERT(r == 5 * B || r == 3 * B); /* 3: in whole units of SGEMM's 48 rows */
    /* all 12 blocks held (p2's 7, p1's reused 5 or 3 with the rest idle):
     * a batch needing more fails and changes nothing */
    synor_llm_seq_truncate(c, 1, 0);
    ASSERT_EQ(synor_llm_seq_reuse(c, 1, p1, 100), r);
    int32_t more[60];
    tokens(more, 60, 6);
    unsigned seqs[60] = {0};
    ASSERT_EQ(synor_llm_batch(c, 60, more, seqs, NULL), SYNOR_ENOMEM);
    ASSERT_EQ(synor_llm_seq_len(c, 0), 100);
    ASSERT_EQ(synor_llm_seq_reuse(c, 1, p1, 100), SYNOR_EINVAL); /* not empty */
    synor_llm_ctx_destroy(c);
    /* without the cache: no-ops */
    o.prefix_cache = 0;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &o, &c));
    ASSERT_OK(run_from(c, 0, p1, 0, 100, l));
    ASSERT_OK(synor_llm_seq_publish(c, 0, p1, 100));
    ASSERT_EQ(synor_llm_seq_reuse(c, 1, p1, 100), 0);
    synor_llm_prefix_stats_get(c, &st);
    ASSERT(!st.enabled && st.cached_blocks == 0);
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
}

enum { NREQ = 6, MAXNEW = 40 };

/* Request i: 0-3 a 120-token prompt and 10 of their own, 4 the same as 0,
 * 5 another prompt; odd ones sampled. */
static size_t request_of(int i, int32_t *p, synor_sampler *s)
{
    tokens(p, 130, i == 5 ? 9 : 8);
    if (i < 4)
        tokens(p + 120, 10, 20 + (unsigned)i);
    synor_sampler_init(s, i % 2 ? 0.9f : 0, 0, 1, 50 + (uint64_t)i);
    return 130;
}

/* The requests through a scheduler on a context with the prefix cache, all
 * submitted at once (together) or one after another; 0 when each gets the
 * tokens it gets alone. *reused: the prompt positions reused. */
static int through_sched(int q8, int together, unsigned kv_blocks, int max_new, uint64_t *reused,
                         uint64_t *preempted)
{
    synor_runtime *rt = llm_test_runtime(2);
    synor_llm *m = load(q8);
    if (!rt || !m)
        return -1;
    int32_t want[NREQ][MAXNEW], p[140];
    int nwant[NREQ];
    synor_sampler smp;
    for (int i = 0; i < NREQ; i++) {
        size_t n = request_of(i, p, &smp);
        nwant[i] = llm_test_decode(m, rt, p, n, &smp, max_new, want[i], NULL, NULL);
    }
    synor_llm_ctx_opts o = {.max_seqs = 4, .kv_blocks = kv_blocks, .prefix_cache = 1};
    synor_llm_ctx *c;
    synor_llm_sched *s;
    if (synor_llm_ctx_create(m, rt, &o, &c) || synor_llm_sched_create(c, NULL, &s))
        return -1;
    static llm_test_got g;
    memset(&g, 0, sizeof g);
    int bad = 0;
    for (int i = 0; i < NREQ && !bad; i++) {
        synor_llm_request rq = {.max_new = max_new, .on_token = llm_test_collect, .user = &g};
        rq.n_prompt = request_of(i, p, &rq.sampler);
        rq.prompt = p;
        bad = synor_llm_sched_submit(s, &rq, &g.ids[i]) != 0;
        while (!bad && !together && synor_llm_sched_step(s) > 0)
            ;
    }
    while (!bad && synor_llm_sched_step(s) > 0)
        ;
    for (int i = 0; i < NREQ; i++)
        if (g.n[i] != nwant[i] || memcmp(g.t[i], want[i], (size_t)nwant[i] * sizeof(int32_t))) {
            fprintf(stderr, "  request %d: %d tokens, not its %d alone\n", i, g.n[i], nwant[i]);
            bad = 1;
        }
    synor_llm_sched_stats st;
    synor_llm_sched_stats_get(s, &st);
    *reused = st.prompt_reused;
    *preempted = st.preempted;
    if (st.kv_used)
        bad = 1;
    llm_test_teardown(s, c, m, rt);
    return bad ? -1 : 0;
}

TEST(requests_sharing_a_prompt_compute_it_once)
{
    for (int q8 = 0; q8 < 2; q8++)
        for (int together = 0; together < 2; together++) {
            uint64_t r = 0, pre;
            ASSERT_OK(through_sched(q8, together, 0, 8, &r, &pre));
            fprintf(stderr, "  %s, %s: %llu prompt positions reused\n", q8 ? "Q8_0" : "F32",
                    together ? "together" : "one after another", (unsigned long long)r);
            /* requests 1-4 take at least the shared 96 of request 0's (Q8_0,
             * and F32 without SGEMM: 112, whole blocks of 16) */
            ASSERT(r >= 4 * 96);
        }
}

/* A pool of 14 blocks for requests of 9 to 11 each (40 tokens): they
 * are admitted on the blocks they do not share, preempted as they grow,
 * their idle blocks evicted and published again; the tokens still each
 * request's own. */
TEST(sharing_under_a_small_pool)
{
    for (int q8 = 0; q8 < 2; q8++) {
        uint64_t r = 0, pre = 0;
        ASSERT_OK(through_sched(q8, 1, 14, 40, &r, &pre));
        fprintf(stderr, "  %s: %llu preemptions, %llu prompt positions reused\n",
                q8 ? "Q8_0" : "F32", (unsigned long long)pre, (unsigned long long)r);
        ASSERT(pre > 0 && r > 0);
    }
}

/* A conversation's next turn: request B's prompt is request A's prompt,
 * A's answer and a few tokens more. Where the layers have no F32 products
 * (Q8_0) the scheduler publishes A's answer too, so B reuses every whole
 * block of it and computes only the rest - and its first row of logits is
 * the bits a fresh context gives the whole prompt, its tokens the ones it
 * gets alone. With F32 products (which a prompt may send to SGEMM) only
 * A's prompt is published. */
static size_t admitted_reused;
static float first_row[V];
static int first_taken;

static void on_admit(uint64_t id, size_t reused, void *user)
{
    (void)id, (void)user;
    admitted_reused = reused;
}

static void on_logits(uint64_t id, int32_t t, const float *l, void *user)
{
    (void)id, (void)t, (void)user;
    if (!first_taken++)
        memcpy(first_row, l, sizeof first_row);
}

static int next_turn(int q8, size_t *reused, size_t *answer)
{
    synor_runtime *rt = llm_test_runtime(2);
    synor_llm *m = load(q8);
    synor_llm_ctx_opts o = {.max_seqs = 2, .prefix_cache = 1};
    synor_llm_ctx *c = NULL;
    synor_llm_sched *s = NULL;
    if (!rt || !m || synor_llm_ctx_create(m, rt, &o, &c) || synor_llm_sched_create(c, NULL, &s))
        return -1;
    static llm_test_got g;
    memset(&g, 0, sizeof g);
    int32_t p[CTX];
    tokens(p, 40, 3);
    synor_llm_request rq = {
        .prompt = p, .n_prompt = 40, .max_new = 50, .on_token = llm_test_collect, .user = &g};
    synor_sampler_init(&rq.sampler, 0, 0, 1, 1);
    int bad = synor_llm_sched_submit(s, &rq, &g.ids[0]) != 0;
    while (!bad && synor_llm_sched_step(s) > 0)
        ;
    *answer = (size_t)g.n[0];
    size_t n = 40 + (size_t)g.n[0];
    memcpy(p + 40, g.t[0], (size_t)g.n[0] * sizeof *p);
    tokens(p + n, 6, 11);
    n += 6;
    int32_t want[20];
    float row[V];
    synor_sampler smp;
    synor_sampler_init(&smp, 0, 0, 1, 1);
    int nwant = llm_test_decode(m, rt, p, n, &smp, 20, want, NULL, NULL);
    bad |= nwant < 1 || fresh(m, rt, p, n, row) != 0;
    rq.n_prompt = n;
    rq.max_new = 20;
    rq.on_admit = on_admit;
    rq.on_logits = on_logits;
    first_taken = 0;
    admitted_reused = (size_t)-1;
    bad |= synor_llm_sched_submit(s, &rq, &g.ids[1]) != 0;
    while (!bad && synor_llm_sched_step(s) > 0)
        ;
    *reused = admitted_reused;
    if (!bad && (g.n[1] != nwant || memcmp(g.t[1], want, (size_t)nwant * sizeof *want) ||
                 memcmp(first_row, row, sizeof row))) {
        fprintf(stderr, "  the next turn's tokens or first logits are not those it gets alone\n");
        bad = 1;
    }
    llm_test_teardown(s, c, m, rt);
    return bad ? -1 : 0;
}

TEST(a_next_turn_reuses_the_answer)
{
    for (int q8 = 0; q8 < 2; q8++) {
        size_t r = 0, ans = 0;
        ASSERT_OK(next_turn(q8, &r, &ans));
        fprintf(stderr, "  %s: an answer of %zu tokens after a 40-token prompt; the next turn "
                        "reused %zu positions\n",
                q8 ? "Q8_0" : "F32", ans, r);
        ASSERT(ans >= 20);
        if (q8) /* A's prompt and the answer's tokens but the last (never fed), whole blocks */
            ASSERT_EQ(r, (40 + ans - 1) / B * B);
        else
            ASSERT(r <= 40);
    }
}

TEST(cleanup)
{
    for (int i = 0; i < 2; i++)
        unlink(path[i]);
    rmdir(dir);
}

TEST_MAIN(reused_blocks_give_the_same_bits, idle_blocks_go_least_recently_used_first,
          requests_sharing_a_prompt_compute_it_once, sharing_under_a_small_pool,
          a_next_turn_reuses_the_answer, cleanup)
