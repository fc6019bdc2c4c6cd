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
          vocabularies_must_match, cleanup)
