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

/* NULL: greedy_pair_opts decodes greedily; else with a copy of this. */
static const synor_sampler *pair_with;

/* The target's greedy tokens alone, then with a draft (dp NULL: none) and
 * the lookup draft of n-grams up to `lookup` (0: off); returns the
 * acceptance rate, or -1 if the tokens differ. *lookup_checks (if not
 * NULL): the checks of the lookup's proposals. */
static double greedy_pair_opts(const char *tp, const char *dp, const synor_llm_spec_opts *o,
                               const char *prompt, synor_llm_spec_stats *out)
{
    synor_runtime *rt = runtime();
    synor_llm *tm, *dm = NULL;
    synor_llm_ctx *tc, *dc = NULL;
    if (!rt || synor_llm_load(tp, NULL, &tm) || (dp && synor_llm_load(dp, NULL, &dm)) ||
        synor_llm_ctx_create(tm, rt, NULL, &tc) || (dp && synor_llm_ctx_create(dm, rt, NULL, &dc)))
        return -2;
    synor_sampler s;
    toks want = {0}, got = {0};
    synor_sampler_init(&s, 0, 0, 1, 1);
    if (pair_with)
        s = *pair_with;
    if (synor_llm_generate(tc, prompt, 60, &s, collect, &want, NULL))
        return -2;
    synor_llm_spec_stats st;
    synor_sampler_init(&s, 0, 0, 1, 1);
    if (pair_with)
        s = *pair_with;
    if (synor_llm_generate_spec(tc, dc, prompt, 60, o, &s, collect, &got, &st))
        return -2;
    double rate = st.proposed ? (double)st.accepted / (double)st.proposed : 0;
    int same = got.n == want.n && memcmp(got.t, want.t, (size_t)got.n * sizeof(int32_t)) == 0;
    if (!same)
        fprintf(stderr, "  %d tokens vs %d alone\n", got.n, want.n);
    fprintf(stderr,
            "  k=%d lookup %d p_min %g: %zu checks (%zu of the lookup's, %zu stopped short), "
            "acceptance %.2f (%zu of %zu), %zu tokens\n",
            o->k, o->lookup, (double)o->p_min, st.steps, st.lookup_checks, st.draft_stops, rate,
            st.accepted, st.proposed, st.generated);
    if (out)
        *out = st;
    synor_llm_ctx_destroy(tc);
    synor_llm_ctx_destroy(dc);
    synor_llm_destroy(tm);
    synor_llm_destroy(dm);
    synor_runtime_destroy(rt);
    return same && st.generated == (size_t)want.n ? rate : -1;
}

static double greedy_pair_lookup(const char *tp, const char *dp, int k, int lookup,
                                 const char *prompt, size_t *lookup_checks)
{
    synor_llm_spec_opts o = {.k = k, .lookup = lookup};
    synor_llm_spec_stats st;
    double r = greedy_pair_opts(tp, dp, &o, prompt, &st);
    if (lookup_checks)
        *lookup_checks = st.lookup_checks;
    return r;
}

static double greedy_pair(const char *tp, const char *dp, int k)
{
    return greedy_pair_lookup(tp, dp, k, 0, "the sun", NULL);
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

/* The lookup draft proposes what followed the latest earlier occurrence of
 * the context's last n tokens, n from the longest down to 2. */
TEST(lookup_proposes_what_followed)
{
    int32_t props[8];
    const int32_t a[] = {1, 2, 3, 9, 8, 1, 2, 3};
    ASSERT_EQ(synor__llm_lookup(a, 7, 3, 4, props), 4);
    ASSERT(props[0] == 9 && props[1] == 8 && props[2] == 1 && props[3] == 2);
    ASSERT_EQ(synor__llm_lookup(a, 7, 3, 2, props), 2); /* at most k */
    /* the latest match; past the context's end, the stretch repeats */
    const int32_t b[] = {5, 6, 7, 5, 6, 8, 5, 6};
    ASSERT_EQ(synor__llm_lookup(b, 7, 2, 5, props), 5);
    ASSERT(props[0] == 8 && props[1] == 5 && props[2] == 6 && props[3] == 8 && props[4] == 5);
    /* no 3-gram match: the 2-gram's; no match at all: nothing */
    const int32_t c[] = {4, 5, 6, 1, 5, 6};
    ASSERT_EQ(synor__llm_lookup(c, 5, 3, 4, props), 4);
    ASSERT(props[0] == 1 && props[1] == 5 && props[2] == 6 && props[3] == 1);
    const int32_t d[] = {4, 5, 6, 1, 2, 3};
    ASSERT_EQ(synor__llm_lookup(d, 5, 3, 4, props), 0);
    ASSERT_EQ(synor__llm_lookup(d, 0, 2, 4, props), 0); /* one token: no n-gram */
    const int32_t e[] = {7, 7, 7};                      /* overlapping with itself */
    ASSERT_EQ(synor__llm_lookup(e, 2, 2, 4, props), 4);
    ASSERT(props[0] == 7 && props[1] == 7 && props[2] == 7 && props[3] == 7);
}

/* Greedy with the lookup draft, alone or before a draft model: the
 * target's own tokens, and the lookup's proposals were checked. */
TEST(greedy_lookup_is_the_targets_greedy)
{
    char t[128], q4[128], other[128];
    model("tl.gguf", 3, SYNOR_TTYPE_F32, t, sizeof t);
    model("q4l.gguf", 3, SYNOR_TTYPE_Q4_0, q4, sizeof q4);
    model("otherl.gguf", 77, SYNOR_TTYPE_F32, other, sizeof other);
    const char *rep = "the sun rose over the hill and the sun rose over the hill and the sun";
    for (int look = 2; look <= 4; look++) {
        size_t lc = 0;
        ASSERT(greedy_pair_lookup(t, NULL, 4, look, rep, &lc) >= 0);
        ASSERT(lc > 0);
        ASSERT(greedy_pair_lookup(t, q4, 3, look, rep, &lc) >= 0);
        ASSERT(lc > 0);
        ASSERT(greedy_pair_lookup(t, other, 2, look, "the sun", NULL) >= 0);
    }
    ASSERT(greedy_pair_lookup(t, NULL, 1, 3, "the sun", NULL) >= 0);
}

/* p_min: the draft stops proposing where its confidence falls below it;
 * the tokens stay the target's greedy ones at every threshold. Below the
 * draft's every confidence nothing changes; at 1 no round proposes
 * anything (every check is a plain target step); between, some rounds stop
 * short and others propose. */
TEST(greedy_pmin_is_the_targets_greedy)
{
    char t[128], q4[128];
    model("tp.gguf", 3, SYNOR_TTYPE_F32, t, sizeof t);
    model("q4p.gguf", 3, SYNOR_TTYPE_Q4_0, q4, sizeof q4);
    synor_llm_spec_opts o = {.k = 4, .lookup = 0, .p_min = 0};
    synor_llm_spec_stats base, st;
    ASSERT(greedy_pair_opts(t, q4, &o, "the sun", &base) >= 0);
    ASSERT_EQ(base.draft_stops, 0);
    o.p_min = 1e-6f; /* under every confidence over 300 tokens */
    ASSERT(greedy_pair_opts(t, q4, &o, "the sun", &st) >= 0);
    ASSERT_EQ(st.draft_stops, 0);
    ASSERT_EQ(st.proposed, base.proposed);
    ASSERT_EQ(st.steps, base.steps);
    o.p_min = 1;
    ASSERT(greedy_pair_opts(t, q4, &o, "the sun", &st) >= 0);
    ASSERT_EQ(st.proposed, 0);
    ASSERT_EQ(st.draft_stops, st.steps);
    ASSERT_EQ(st.steps, st.generated); /* one token a check */
    int mixed = 0;
    for (float pm = 0.005f; pm < 1; pm *= 1.5f) {
        o.p_min = pm;
        ASSERT(greedy_pair_opts(t, q4, &o, "the sun", &st) >= 0);
        if (st.draft_stops > 0 && st.draft_stops < st.steps && st.proposed > 0)
            mixed++;
    }
    ASSERT(mixed > 0);
    /* the lookup's rounds are not the draft model's: no stop there */
    o.p_min = 1;
    o.lookup = 2;
    ASSERT(greedy_pair_opts(t, q4, &o,
                            "the sun rose over the hill and the sun rose over the hill and the sun",
                            &st) >= 0);
    ASSERT(st.lookup_checks > 0 && st.lookup_proposed > 0);
    ASSERT_EQ(st.proposed, st.lookup_proposed);
    o.p_min = 1.5f;
    synor_sampler sm;
    synor_sampler_init(&sm, 0, 0, 1, 1);
    synor_runtime *rt = runtime();
    synor_llm *tm;
    synor_llm_ctx *tc;
    ASSERT_OK(synor_llm_load(t, NULL, &tm));
    ASSERT_OK(synor_llm_ctx_create(tm, rt, NULL, &tc));
    ASSERT_EQ(synor_llm_generate_spec(tc, tc, "x", 4, &o, &sm, NULL, NULL, NULL), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "p_min 1.5");
    o.p_min = NAN;
    ASSERT_EQ(synor_llm_generate_spec(tc, tc, "x", 4, &o, &sm, NULL, NULL, NULL), SYNOR_EINVAL);
    o.p_min = -0.1f;
    ASSERT_EQ(synor_llm_generate_spec(tc, tc, "x", 4, &o, &sm, NULL, NULL, NULL), SYNOR_EINVAL);
    synor_llm_ctx_destroy(tc);
    synor_llm_destroy(tm);
    synor_runtime_destroy(rt);
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

/* A prompt "A B W A B" (A B two words in a row of the text, W a word of
 * it) whose lookup proposal (what followed A B: W's first token) the
 * target gives a probability between 0.1 and 0.9 after it, sampled at
 * temperature 0.7, top-k 6. */
static int lookup_prompt(synor_llm_ctx *c, const synor_llm *m, char *out, size_t n)
{
    enum { V = 300 };
    static float p[V];
    synor_sampler s;
    synor_sampler_init(&s, 0.7f, 6, 1, 1);
    const synor_tokenizer *tok = synor_llm_tokenizer(m);
    for (const char *a = text; *a; a += strcspn(a, " ") + (a[strcspn(a, " ")] == ' ')) {
        const char *b = a + strcspn(a, " ");
        if (!*b)
            break;
        int ab = (int)(b + 1 + strcspn(b + 1, " ") - a);
        for (const char *w = text; *w; w += strcspn(w, " ") + (w[strcspn(w, " ")] == ' ')) {
            snprintf(out, n, "%.*s %.*s %.*s", ab, a, (int)strcspn(w, " "), w, ab, a);
            int32_t ids[64], props[4];
            long k = synor_tokenizer_encode(tok, out, strlen(out), 1, 0, ids, 64);
            if (k < 2 || k > 64 || synor__llm_lookup(ids, (int)k - 1, 2, 1, props) != 1 ||
                target_probs(c, m, &s, out, NULL, 0, p))
                continue;
            if (p[props[0]] > 0.1f && p[props[0]] < 0.9f)
                return 0;
        }
    }
    return -1;
}

/* Sampled (temperature 0.7, top-k 6) with a Q4_0 draft whose q differs
 * from p: the first token follows the target's distribution, and so does
 * the second given the most frequent first (a row further into the check
 * and, after an accepted first, the draft's cache as the rule left it). */
static void sampled_follows(const char *q4, int lookup, const char *prompt, int pmin)
{
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer runs the engine some 10 times slower (this file took
     * 3 of CI's 5 minutes a test): fewer generations there; the check's
     * tolerance follows the count */
    enum { V = 300, RUNS = 400 };
#else
    enum { V = 300, RUNS = 1200 };
#endif
    char t[128];
    model("ts.gguf", 5, SYNOR_TTYPE_F32, t, sizeof t);
    synor_runtime *rt = runtime();
    ASSERT(rt != NULL);
    synor_llm *tm, *dm = NULL;
    synor_llm_ctx *tc, *dc = NULL;
    ASSERT_OK(synor_llm_load(t, NULL, &tm));
    if (q4)
        ASSERT_OK(synor_llm_load(q4, NULL, &dm));
    ASSERT_OK(synor_llm_ctx_create(tm, rt, NULL, &tc));
    if (q4)
        ASSERT_OK(synor_llm_ctx_create(dm, rt, NULL, &dc));
    synor_llm_spec_opts o = {.k = 3, .lookup = lookup};
    size_t lookup_proposed = 0;
    char pbuf[128];
    if (lookup) { /* a prompt whose lookup proposal the target neither rules out nor is sure of */
        ASSERT_OK(lookup_prompt(tc, tm, pbuf, sizeof pbuf));
        prompt = pbuf;
        fprintf(stderr, "  prompt \"%s\"\n", prompt);
    }
    if (pmin) { /* p_min just under the draft's confidence at the prompt: the
                 * first proposal always made, later ones where the draft
                 * is surer than there */
        static float q0[V];
        synor_sampler s0;
        synor_sampler_init(&s0, 0.7f, 6, 1, 1);
        ASSERT_OK(target_probs(dc, dm, &s0, prompt, NULL, 0, q0));
        float top = 0;
        for (int i = 0; i < V; i++)
            top = q0[i] > top ? q0[i] : top;
        o.p_min = top * 0.999f;
        fprintf(stderr, "  p_min %.4f\n", (double)o.p_min);
    }
    static float p1[V], p2[V];
    static int first[V], second[V];
    memset(first, 0, sizeof first);
    memset(second, 0, sizeof second);
    static int32_t tokens[RUNS][2];
    int ntok[RUNS];
    size_t proposed = 0, accepted = 0, stops = 0;
    synor_sampler s;
    for (int r = 0; r < RUNS; r++) {
        synor_sampler_init(&s, 0.7f, 6, 1, (uint64_t)r + 1);
        toks got = {0};
        synor_llm_spec_stats st;
        ASSERT_OK(synor_llm_generate_spec(tc, dc, prompt, 2, &o, &s, collect, &got, &st));
        lookup_proposed += st.lookup_proposed;
        ntok[r] = got.n;
        tokens[r][0] = got.n > 0 ? got.t[0] : -1;
        tokens[r][1] = got.n > 1 ? got.t[1] : -1;
        proposed += st.proposed;
        accepted += st.accepted;
        stops += st.draft_stops;
    }
    fprintf(stderr, "  acceptance %.2f (%zu of %zu), %zu rounds stopped short\n",
            (double)accepted / (double)proposed, accepted, proposed, stops);
    if (pmin) /* some rounds stopped after the first proposal, others went on */
        ASSERT(stops > 0 && stops < RUNS && proposed > RUNS);
    else
        ASSERT_EQ(stops, 0);
    ASSERT(accepted > 0 && accepted < proposed); /* the draft is neither ignored nor exact */
    ASSERT(lookup ? lookup_proposed == proposed : lookup_proposed == 0);
    synor_sampler_init(&s, 0.7f, 6, 1, 1);
    ASSERT_OK(target_probs(tc, tm, &s, prompt, NULL, 0, p1));
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
    ASSERT_OK(target_probs(tc, tm, &s, prompt, &mode, 1, p2));
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

/* same_draws: sampled text is the plain text of the seed, token for
 * token, whatever the draft (the target's Q4_0 copy, an unrelated model,
 * the target itself: all accepted), with the lookup draft, with p_min, at
 * several temperatures, top-k and top-p. */
TEST(same_draws_is_the_plain_text)
{
    char t[128], q4[128], other[128];
    model("t.gguf", 3, SYNOR_TTYPE_F32, t, sizeof t);
    model("q4.gguf", 3, SYNOR_TTYPE_Q4_0, q4, sizeof q4);
    model("other.gguf", 77, SYNOR_TTYPE_F32, other, sizeof other);
    static const float temps[] = {0.7f, 1.0f, 1.3f};
    static const int top_k[] = {0, 20, 0};
    static const float top_p[] = {1.0f, 1.0f, 0.9f};
#if defined(__SANITIZE_THREAD__)
    const uint64_t seeds = 1; /* (ThreadSanitizer: one seed of each sampler) */
#else
    const uint64_t seeds = 3;
#endif
    for (int v = 0; v < 3; v++)
        for (uint64_t seed = 1; seed <= seeds; seed++) {
            synor_sampler s;
            synor_sampler_init(&s, temps[v], top_k[v], top_p[v], seed);
            pair_with = &s;
            synor_llm_spec_opts o = {.k = 4, .same_draws = 1};
            synor_llm_spec_stats st;
            double r = greedy_pair_opts(t, q4, &o, "the sun", &st);
            ASSERT(r > 0.3); /* close weights: mostly the same draws */
            o.k = (int)(2 * seed);
            ASSERT(greedy_pair_opts(t, other, &o, "the sun", &st) >= 0);
            ASSERT_EQ(greedy_pair_opts(t, t, &o, "the sun", &st), 1.0);
            o.p_min = 0.2f;
            ASSERT(greedy_pair_opts(t, q4, &o, "the sun", &st) >= 0);
            o.p_min = 0;
            o.lookup = 3;
            ASSERT(greedy_pair_opts(t, NULL, &o, "a b w a b w a b", &st) >= 0);
            ASSERT(greedy_pair_opts(t, q4, &o, "a b w a b w a b", &st) >= 0);
        }
    pair_with = NULL;
}

TEST(sampled_follows_the_target)
{
    char q4[128];
    model("q4s.gguf", 5, SYNOR_TTYPE_Q4_0, q4, sizeof q4);
    sampled_follows(q4, 0, "the sun", 0);
}

/* The same with p_min: where the draft stops depends on its own draws, not
 * the target's, so the first two tokens still follow the target. */
TEST(sampled_pmin_follows_the_target)
{
    char q4[128];
    model("q4s.gguf", 5, SYNOR_TTYPE_Q4_0, q4, sizeof q4);
    sampled_follows(q4, 0, "the sun", 1);
}

/* The same with the lookup draft alone, on a prompt "A B W A B"
 * (lookup_prompt): every proposal is the lookup's (one-hot q), and the
 * first two tokens still follow the target's distribution. */
TEST(sampled_lookup_follows_the_target)
{
    sampled_follows(NULL, 2, NULL, 0);
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
    synor_llm_spec_opts o = {.k = 4, .lookup = 0};
    ASSERT_EQ(synor_llm_generate_spec(tc, NULL, "x", 4, &o, &sm, NULL, NULL, NULL), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "lookup");
    o.lookup = 1;
    ASSERT_EQ(synor_llm_generate_spec(tc, NULL, "x", 4, &o, &sm, NULL, NULL, NULL), SYNOR_EINVAL);
    o.lookup = 2;
    ASSERT_EQ(synor_llm_generate_spec(tc, dc, "x", 4, &o, &sm, NULL, NULL, NULL), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "vocabulary");
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

TEST_MAIN(greedy_is_the_targets_greedy, same_draws_is_the_plain_text, lookup_proposes_what_followed,
          greedy_lookup_is_the_targets_greedy, greedy_pmin_is_the_targets_greedy, acceptance_rule_draws_from_the_target,
          sampled_follows_the_target, sampled_pmin_follows_the_target,
          sampled_lookup_follows_the_target, sampled_self_draft_accepts_all, vocabularies_must_match,
          cleanup)
