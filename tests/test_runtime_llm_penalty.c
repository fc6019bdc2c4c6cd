/* test_runtime_llm_penalty.c - the scheduler's presence and frequency
 * penalties and logit biases: the tokens of a reference loop (one token
 * per batch, the penalties and biases applied to a copy of the logits
 * here), alone or several requests at once, greedy or sampled, in plain
 * steps or speculative rounds; out-of-range values refused. */
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

enum { NREQ = 4, MAXNEW = 40, V = 320 };

static char dir[32], target[64], draft[64];

static int models(void)
{
    if (dir[0])
        return 0;
    snprintf(dir, sizeof dir, "/tmp/synor-pen-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(target, sizeof target, "%s/t.gguf", dir);
    snprintf(draft, sizeof draft, "%s/d.gguf", dir);
    synor_llm_synth s = llm_test_synth(2);
    return synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, target) ||
           synor_llm_synth_gguf(&s, SYNOR_TTYPE_Q4_0, draft);
}

/* Request i's logit biases: requests 1 and 3 have some (3: token 9
 * twice), the others none. */
static const int32_t bias_tok[NREQ][3] = {{0}, {40, 41, 200}, {0}, {9, 77, 9}};
static const float bias_val[NREQ][3] = {{0}, {100, -100, 1.25f}, {0}, {2.5f, 30, 1.5f}};
static const int nbias[NREQ] = {0, 3, 0, 3};

/* Request i: its prompt, its sampler (greedy for even i when `sampled` is
 * 0), its penalties. */
static int sampled;
static void request_of(int i, int32_t *p, size_t *n, synor_sampler *s, float *pp, float *fp)
{
    *n = (size_t)(2 + i);
    p[0] = 1;
    for (size_t j = 1; j < *n; j++)
        p[j] = (int32_t)(5 + (i * 31 + (int)j * 7) % 300);
    synor_sampler_init(s, sampled || i % 2 ? 0.9f : 0, i == 3 ? 20 : 0, 1, 100 + (uint64_t)i);
    static const float pres[NREQ] = {0.8f, 0, 2.0f, -0.5f};
    static const float freq[NREQ] = {0, 0.7f, 1.5f, 0.3f};
    *pp = pres[i];
    *fp = freq[i];
}

/* The penalties of a request, applied by the reference (counts over the
 * tokens generated so far: c * fp + pp off each one's logit), then its
 * logit biases. */
typedef struct pen {
    float pp, fp;
    int i;
} pen;

static void penalize(float *row, int n_vocab, const int32_t *out, int k, void *user)
{
    const pen *q = user;
    unsigned cnt[V] = {0};
    (void)n_vocab;
    for (int j = 0; j < k; j++)
        cnt[out[j]]++;
    for (int t = 0; t < V; t++)
        if (cnt[t]) {
            float d = (float)cnt[t] * q->fp;
            d += q->pp;
            row[t] -= d;
        }
    for (int b = 0; b < nbias[q->i]; b++)
        row[bias_tok[q->i][b]] += bias_val[q->i][b];
}

/* The reference: request i alone, one token per batch, the penalties
 * applied here. Returns the count of tokens in out. */
static int reference(synor_llm *m, synor_runtime *rt, int i, int32_t *out)
{
    int32_t p[16];
    size_t n;
    synor_sampler s;
    pen q = {.i = i};
    request_of(i, p, &n, &s, &q.pp, &q.fp);
    return llm_test_decode(m, rt, p, n, &s, MAXNEW, out, penalize, &q);
}

/* The requests through a scheduler (with a draft of NREQ sequences when
 * with_draft), all at once or one after another; 0 when each gets the
 * reference's tokens. *rounds: the speculative rounds run. */
static int through_sched(int with_draft, int together, uint64_t *rounds)
{
    synor_runtime *rt = llm_test_runtime(2);
    synor_llm *m, *dm = NULL;
    if (!rt || synor_llm_load(target, NULL, &m) || (with_draft && synor_llm_load(draft, NULL, &dm)))
        return -1;
    int32_t want[NREQ][MAXNEW];
    int nwant[NREQ];
    for (int i = 0; i < NREQ; i++)
        nwant[i] = reference(m, rt, i, want[i]);
    synor_llm_ctx_opts co = {.max_seqs = NREQ}, dco = {.max_seqs = NREQ};
    synor_llm_ctx *c, *d = NULL;
    synor_llm_sched *s;
    if (synor_llm_ctx_create(m, rt, &co, &c) || (dm && synor_llm_ctx_create(dm, rt, &dco, &d)))
        return -1;
    synor_llm_sched_opts so = {.draft = d, .spec_k = 3};
    if (synor_llm_sched_create(c, &so, &s))
        return -1;
    llm_test_got g;
    memset(&g, 0, sizeof g);
    int bad = 0;
    for (int i = 0; i < NREQ && !bad; i++) {
        int32_t p[16];
        size_t n;
        synor_llm_request r = {.on_token = llm_test_collect, .user = &g, .max_new = MAXNEW};
        request_of(i, p, &n, &r.sampler, &r.presence_penalty, &r.frequency_penalty);
        r.prompt = p;
        r.n_prompt = n;
        r.bias_token = bias_tok[i];
        r.bias_value = bias_val[i];
        r.n_bias = nbias[i];
        if (synor_llm_sched_submit(s, &r, &g.ids[i]))
            bad = -1;
        while (!together && synor_llm_sched_step(s) > 0)
            ;
    }
    while (together && synor_llm_sched_step(s) > 0)
        ;
    for (int i = 0; i < NREQ && !bad; i++)
        if (g.n[i] != nwant[i] || memcmp(g.t[i], want[i], (size_t)nwant[i] * sizeof(int32_t))) {
            fprintf(stderr, "  request %d: %d tokens, want %d\n", i, g.n[i], nwant[i]);
            bad = -1;
        }
    synor_llm_sched_stats st;
    synor_llm_sched_stats_get(s, &st);
    *rounds = st.spec_rounds;
    synor_llm_sched_destroy(s);
    synor_llm_ctx_destroy(d);
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(dm);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
    return bad;
}

TEST(penalties_are_the_references)
{
    ASSERT_OK(models());
    uint64_t rounds;
    for (sampled = 0; sampled < 2; sampled++)
        for (int together = 0; together < 2; together++) {
            ASSERT_OK(through_sched(0, together, &rounds));
            ASSERT_EQ(rounds, 0);
            ASSERT_OK(through_sched(1, together, &rounds));
            ASSERT(rounds > 0);
        }
    sampled = 0;
}

/* They change the text: the generated weights' greedy text repeats a few
 * tokens, and a presence penalty of 2 makes it move on. */
TEST(penalties_change_a_repetitive_text)
{
    ASSERT_OK(models());
    synor_runtime *rt = llm_test_runtime(2);
    synor_llm *m;
    ASSERT(rt != NULL);
    ASSERT_OK(synor_llm_load(target, NULL, &m));
    int32_t with[MAXNEW], plain[MAXNEW];
    int n1 = reference(m, rt, 2, with); /* presence 2, frequency 1.5 */
    synor_llm_ctx *c;
    ASSERT_OK(synor_llm_ctx_create(m, rt, NULL, &c));
    synor_sampler s;
    synor_sampler_init(&s, 0, 0, 1, 1);
    int32_t p[16];
    size_t n;
    float pp, fp;
    synor_sampler ignored;
    request_of(2, p, &n, &ignored, &pp, &fp);
    int k = 0;
    unsigned seqs[16] = {0};
    ASSERT_OK(synor_llm_batch(c, n, p, seqs, NULL));
    const float *l = synor_llm_logits(c, n - 1);
    for (; k < n1; k++) {
        plain[k] = synor_sampler_sample(&s, l, V);
        ASSERT_OK(synor_llm_batch(c, 1, &plain[k], seqs, NULL));
        l = synor_llm_logits(c, 0);
    }
    int distinct_with = 0, distinct_plain = 0;
    for (int i = 0; i < n1; i++) {
        int seen_w = 0, seen_p = 0;
        for (int j = 0; j < i; j++) {
            seen_w |= with[j] == with[i];
            seen_p |= plain[j] == plain[i];
        }
        distinct_with += !seen_w;
        distinct_plain += !seen_p;
    }
    fprintf(stderr, "  %d tokens: %d distinct with the penalties, %d without\n", n1,
            distinct_with, distinct_plain);
    ASSERT(distinct_with > distinct_plain);
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
}

TEST(out_of_range_penalties_are_refused)
{
    ASSERT_OK(models());
    synor_runtime *rt = llm_test_runtime(1);
    synor_llm *m;
    synor_llm_ctx *c;
    synor_llm_sched *s;
    ASSERT(rt != NULL);
    ASSERT_OK(synor_llm_load(target, NULL, &m));
    ASSERT_OK(synor_llm_ctx_create(m, rt, NULL, &c));
    ASSERT_OK(synor_llm_sched_create(c, NULL, &s));
    int32_t p[2] = {1, 7};
    synor_llm_request r = {.prompt = p, .n_prompt = 2, .max_new = 4, .presence_penalty = 2.5f};
    uint64_t id;
    ASSERT_EQ(synor_llm_sched_submit(s, &r, &id), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "penalties 2.5 and 0");
    r.presence_penalty = 0;
    r.frequency_penalty = NAN;
    ASSERT_EQ(synor_llm_sched_submit(s, &r, &id), SYNOR_EINVAL);
    r.frequency_penalty = 0;
    int32_t bt[2] = {5, V};
    float bv[2] = {1, 1};
    r.bias_token = bt;
    r.bias_value = bv;
    r.n_bias = 2;
    ASSERT_EQ(synor_llm_sched_submit(s, &r, &id), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "logit_bias: token 320 is outside the vocabulary of 320");
    bt[1] = 6;
    bv[0] = 101;
    ASSERT_EQ(synor_llm_sched_submit(s, &r, &id), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "logit_bias: the bias of token 5 is 101 (-100..100)");
    r.n_bias = SYNOR_LLM_MAX_BIAS + 1;
    ASSERT_EQ(synor_llm_sched_submit(s, &r, &id), SYNOR_EINVAL);
    synor_llm_sched_stats st;
    synor_llm_sched_stats_get(s, &st);
    ASSERT_EQ(st.submitted, 0);
    synor_llm_sched_destroy(s);
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
}

TEST(cleanup)
{
    unlink(target);
    unlink(draft);
    rmdir(dir);
}

TEST_MAIN(penalties_are_the_references, penalties_change_a_repetitive_text,
          out_of_range_penalties_are_refused, cleanup)
