/* test_runtime_llm_spec.c - speculative decoding: greedy output is the
 * target's own greedy output whatever the draft, and the acceptance rule
 * turns draft proposals into draws from the target's distribution. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "llm/llm_internal.h"
#include "synor/error.h"
#include "synor/llm.h"
#include "synor/runtime.h"
#include "llm_fixture.h"
#include "test.h"

static const char text[] = "a bird sang in the tall green tree while the sun rose over the hill "
                           "and the river ran down to the sea past the old mill";

static char dir[64];

static void model(const char *leaf, uint64_t seed, synor_ttype type, char *path, size_t n)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/synor-spec-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    snprintf(path, n, "%s/%s", dir, leaf);
    synor_llm_synth s = {.cfg = {.dim = 64,
                                 .hidden_dim = 128,
                                 .n_layers = 2,
                                 .n_heads = 4,
                                 .n_kv_heads = 4,
                                 .vocab_size = 300,
                                 .seq_len = 128,
                                 .shared_classifier = 0},
                         .seed = seed,
                         .text = text,
                         .text_len = sizeof text - 1};
    if (synor_llm_synth_gguf(&s, type, path))
        abort();
}

static synor_runtime *runtime(void) { return llm_test_runtime(2); }

typedef struct toks {
    int32_t t[256];
    int n;
} toks;

static int collect(int32_t token, const char *txt, size_t len, void *user)
{
    (void)txt;
    (void)len;
    toks *k = user;
    if (k->n < 256)
        k->t[k->n++] = token;
    return 0;
}

/* The target's greedy tokens alone, then with a draft; returns the
 * acceptance rate, or -1 if the tokens differ. */
static double greedy_pair(const char *tp, const char *dp, int k)
{
    synor_runtime *rt = runtime();
    synor_llm *tm, *dm;
    synor_llm_ctx *tc, *dc;
    if (!rt || synor_llm_load(tp, NULL, &tm) || synor_llm_load(dp, NULL, &dm) ||
        synor_llm_ctx_create(tm, rt, NULL, &tc) || synor_llm_ctx_create(dm, rt, NULL, &dc))
        return -2;
    synor_sampler s;
    toks want = {0}, got = {0};
    synor_sampler_init(&s, 0, 0, 1, 1);
    if (synor_llm_generate(tc, "the sun", 60, &s, collect, &want, NULL))
        return -2;
    synor_llm_spec_stats st;
    synor_sampler_init(&s, 0, 0, 1, 1);
    if (synor_llm_generate_speculative(tc, dc, "the sun", 60, k, &s, collect, &got, &st))
        return -2;
    double rate = st.proposed ? (double)st.accepted / (double)st.proposed : 0;
    int same = got.n == want.n && memcmp(got.t, want.t, (size_t)got.n * sizeof(int32_t)) == 0;
    if (!same)
        fprintf(stderr, "  %d tokens vs %d alone\n", got.n, want.n);
    fprintf(stderr, "  k=%d: %zu checks, acceptance %.2f, %zu tokens\n", k, st.steps, rate,
            st.generated);
    synor_llm_ctx_destroy(tc);
    synor_llm_ctx_destroy(dc);
    synor_llm_destroy(tm);
    synor_llm_destroy(dm);
    synor_runtime_destroy(rt);
    return same && st.generated == (size_t)want.n ? rate : -1;
}

TEST(greedy_is_the_targets_greedy)
{
    char t[128], q4[128], other[128];
    model("t.gguf", 3, SYNOR_TTYPE_F32, t, sizeof t);
    model("q4.gguf", 3, SYNOR_TTYPE_Q4_0, q4, sizeof q4);
    model("other.gguf", 77, SYNOR_TTYPE_F32, other, sizeof other);
    double same4 = greedy_pair(t, q4, 4);
    ASSERT(same4 >= 0.5); /* the same weights quantized: mostly accepted */
    ASSERT(greedy_pair(t, q4, 1) >= 0.5);
    ASSERT(greedy_pair(t, q4, 3) >= 0.5);
    ASSERT(greedy_pair(t, t, 8) >= 0.99);  /* itself: all accepted */
    ASSERT(greedy_pair(t, other, 4) >= 0); /* unrelated draft: still the same tokens */
}

/* The rule's output follows p whatever q proposes. */
TEST(acceptance_rule_draws_from_the_target)
{
    enum { N = 5, DRAWS = 40000 };
    float p[N] = {0.1f, 0.4f, 0.2f, 0.25f, 0.05f}, q[N] = {0.3f, 0.1f, 0.1f, 0.1f, 0.4f};
    float tmp[N];
    synor_sampler s, d;
    synor_sampler_init(&s, 1, 0, 1, 11);
    synor_sampler_init(&d, 1, 0, 1, 12);
    int count[N] = {0}, accepted = 0;
    for (int i = 0; i < DRAWS; i++) {
        int32_t prop = synor__sampler_draw(&d, q, N);
        int ok;
        int32_t x = synor__llm_accept(&s, p, q, prop, N, tmp, &ok);
        ASSERT(x >= 0 && x < N);
        count[x]++;
        accepted += ok;
    }
    for (int i = 0; i < N; i++) {
        double sd = sqrt(DRAWS * p[i] * (1 - p[i]));
        ASSERT(fabs(count[i] - DRAWS * p[i]) < 5 * sd);
    }
    /* acceptance probability is sum min(p, q) = 0.1+0.1+0.1+0.1+0.05 */
    ASSERT(fabs(accepted / (double)DRAWS - 0.45) < 0.02);
}

/* The target's next-token distribution (sampler s's) after prompt and
 * the tokens extra[0..nx), into p (V floats). */
static int target_probs(synor_llm_ctx *c, const synor_llm *m, const synor_sampler *s,
                        const char *prompt, const int32_t *extra, int nx, float *p)
{
    const synor_tokenizer *tok = synor_llm_tokenizer(m);
    int32_t ids[64];
    long n = synor_tokenizer_encode(tok, prompt, strlen(prompt), 1, 0, ids, 60);
    if (n < 1 || n + nx > 64)
        return -1;
    for (int i = 0; i < nx; i++)
        ids[n++] = extra[i];
    unsigned seqs[64] = {0};
    synor_llm_seq_reset(c, 0);
    if (synor_llm_batch(c, (size_t)n, ids, seqs, NULL))
        return -1;
    return synor__sampler_probs(s, synor_llm_logits(c, (size_t)n - 1),
                                synor_llm_hparams_get(m)->vocab_size, p);
}

/* |count - n p| within 5 standard deviations (and 2 counts) for every
 * token. */
static int follows(const int *count, const float *p, int V, int n)
{
    for (int i = 0; i < V; i++) {
        double sd = sqrt(n * (double)p[i] * (1 - (double)p[i]));
        if (fabs(count[i] - n * (double)p[i]) > 5 * sd + 2) {
            fprintf(stderr, "  token %d: %d of %d, expected %.1f\n", i, count[i], n, n * p[i]);
            return 0;
        }
    }
    return 1;
}

/* Sampled (temperature 0.7, top-k 6) with a Q4_0 draft whose q differs
 * from p: the first token follows the target's distribution, and so does
 * the second given the most frequent first (a row further into the check
 * and, after an accepted first, the draft's cache as the rule left it). */
TEST(sampled_follows_the_target)
{
    enum { V = 300, RUNS = 1200 };
    char t[128], q4[128];
    model("ts.gguf", 5, SYNOR_TTYPE_F32, t, sizeof t);
    model("q4s.gguf", 5, SYNOR_TTYPE_Q4_0, q4, sizeof q4);
    synor_runtime *rt = runtime();
    ASSERT(rt != NULL);
    synor_llm *tm, *dm;
    synor_llm_ctx *tc, *dc;
    ASSERT_OK(synor_llm_load(t, NULL, &tm));
    ASSERT_OK(synor_llm_load(q4, NULL, &dm));
    ASSERT_OK(synor_llm_ctx_create(tm, rt, NULL, &tc));
    ASSERT_OK(synor_llm_ctx_create(dm, rt, NULL, &dc));
    static float p1[V], p2[V];
    static int first[V], second[V];
    static int32_t tokens[RUNS][2];
    int ntok[RUNS];
    size_t proposed = 0, accepted = 0;
    synor_sampler s;
    for (int r = 0; r < RUNS; r++) {
        synor_sampler_init(&s, 0.7f, 6, 1, (uint64_t)r + 1);
        toks got = {0};
        synor_llm_spec_stats st;
        ASSERT_OK(synor_llm_generate_speculative(tc, dc, "the sun", 2, 3, &s, collect, &got, &st));
        ntok[r] = got.n;
        tokens[r][0] = got.n > 0 ? got.t[0] : -1;
        tokens[r][1] = got.n > 1 ? got.t[1] : -1;
        proposed += st.proposed;
        accepted += st.accepted;
    }
    fprintf(stderr, "  acceptance %.2f (%zu of %zu)\n", (double)accepted / (double)proposed,
            accepted, proposed);
    ASSERT(accepted > 0 && accepted < proposed); /* the draft is neither ignored nor exact */
    synor_sampler_init(&s, 0.7f, 6, 1, 1);
    ASSERT_OK(target_probs(tc, tm, &s, "the sun", NULL, 0, p1));
    const synor_tokenizer *tok = synor_llm_tokenizer(tm);
    int32_t eos = synor_tokenizer_eos(tok), bos = synor_tokenizer_bos(tok);
    /* an end token stops the text: counted as itself where it has mass */
    for (int r = 0; r < RUNS; r++) {
        int32_t x = tokens[r][0];
        if (x < 0)
            x = p1[eos] > 0 ? eos : bos;
        first[x]++;
    }
    ASSERT(follows(first, p1, V, RUNS));
    int32_t mode = 0;
    for (int i = 1; i < V; i++)
        if (first[i] > first[mode])
            mode = i;
    ASSERT(mode != eos && mode != bos && first[mode] >= RUNS / 6);
    ASSERT_OK(target_probs(tc, tm, &s, "the sun", &mode, 1, p2));
    int n2 = 0;
    for (int r = 0; r < RUNS; r++)
        if (tokens[r][0] == mode) {
            int32_t x = ntok[r] > 1 ? tokens[r][1] : (p2[eos] > 0 ? eos : bos);
            second[x]++;
            n2++;
        }
    ASSERT(follows(second, p2, V, n2));
    synor_llm_ctx_destroy(tc);
    synor_llm_ctx_destroy(dc);
    synor_llm_destroy(tm);
    synor_llm_destroy(dm);
    synor_runtime_destroy(rt);
}

/* An F32 model as its own draft, sampled: a row's logits do not depend on
 * the batch it is checked in (the F32 products of 1..63 rows are bitwise
 * the one-row products), so p = q and every proposal is accepted. */
TEST(sampled_self_draft_accepts_all)
{
    char t[128];
    model("self.gguf", 9, SYNOR_TTYPE_F32, t, sizeof t);
    synor_runtime *rt = runtime();
    ASSERT(rt != NULL);
    synor_llm *tm, *dm;
    synor_llm_ctx *tc, *dc;
    ASSERT_OK(synor_llm_load(t, NULL, &tm));
    ASSERT_OK(synor_llm_load(t, NULL, &dm));
    ASSERT_OK(synor_llm_ctx_create(tm, rt, NULL, &tc));
    ASSERT_OK(synor_llm_ctx_create(dm, rt, NULL, &dc));
    for (int k = 1; k <= 6; k++) {
        synor_sampler s;
        synor_sampler_init(&s, 0.9f, 0, 0.95f, (uint64_t)k);
        toks got = {0};
        synor_llm_spec_stats st;
        ASSERT_OK(synor_llm_generate_speculative(tc, dc, "the sun", 40, k, &s, collect, &got, &st));
        ASSERT(st.proposed > 0);
        ASSERT_EQ(st.accepted, st.proposed);
    }
    synor_llm_ctx_destroy(tc);
    synor_llm_ctx_destroy(dc);
    synor_llm_destroy(tm);
    synor_llm_destroy(dm);
    synor_runtime_destroy(rt);
}

TEST(vocabularies_must_match)
{
    char t[128], small[128];
    model("t2.gguf", 3, SYNOR_TTYPE_F32, t, sizeof t);
    snprintf(small, sizeof small, "%s/small.gguf", dir);
    synor_llm_synth s = {.cfg = {.dim = 64,
                                 .hidden_dim = 128,
                                 .n_layers = 1,
                                 .n_heads = 4,
                                 .n_kv_heads = 4,
                                 .vocab_size = 290,
                                 .seq_len = 128},
                         .seed = 1,
                         .text = text,
                         .text_len = sizeof text - 1};
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, small));
    synor_runtime *rt = runtime();
    synor_llm *tm, *dm;
    synor_llm_ctx *tc, *dc;
    ASSERT_OK(synor_llm_load(t, NULL, &tm));
    ASSERT_OK(synor_llm_load(small, NULL, &dm));
    ASSERT_OK(synor_llm_ctx_create(tm, rt, NULL, &tc));
    ASSERT_OK(synor_llm_ctx_create(dm, rt, NULL, &dc));
    synor_sampler sm;
    synor_sampler_init(&sm, 0, 0, 1, 1);
    ASSERT_EQ(synor_llm_generate_speculative(tc, dc, "x", 4, 4, &sm, NULL, NULL, NULL),
              SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "vocabulary");
    ASSERT_EQ(synor_llm_generate_speculative(tc, tc, "x", 4, 0, &sm, NULL, NULL, NULL),
              SYNOR_EINVAL);
    synor_llm_ctx_destroy(tc);
    synor_llm_ctx_destroy(dc);
    synor_llm_destroy(tm);
    synor_llm_destroy(dm);
    synor_runtime_destroy(rt);
}

TEST(cleanup)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (dir[0])
        ASSERT_EQ(system(cmd), 0);
}

TEST_MAIN(greedy_is_the_targets_greedy, acceptance_rule_draws_from_the_target,
          sampled_follows_the_target, sampled_self_draft_accepts_all, vocabularies_must_match,
          cleanup)
