/* test_runtime_llm.c - the inference engine on the runtime: logits against
 * a plain fp64 reference (llm_ref.h), the same weights through GGUF and a
 * llama2.c checkpoint, quantized models, batches of several sequences, the
 * paged KV cache's pool, sampling, and models missing a tensor. Runs under
 * ThreadSanitizer too: a batch is tasks on several workers. The kernels
 * themselves (every vector table against the portable one, the tiles, the
 * packed layouts) are checked in test_runtime_llm_kernels.c. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "llm/llm_internal.h"
#include "llm_ref.h"
#include "synor/error.h"
#include "synor/llm.h"
#include "synor/runtime.h"
#include "llm_fixture.h"
#include "test.h"

static char dir[64];

static void path_of(char *buf, size_t n, const char *leaf)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/synor-llm-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    snprintf(buf, n, "%s/%s", dir, leaf);
}

static synor_llm_synth tiny(void) { return llm_test_synth(2); }

/* The tiny model written as a GGUF file of type t under the test's folder
 * (leaf) and loaded with lo (may be NULL). */
static int tiny_model(const char *leaf, synor_ttype t, const synor_llm_load_opts *lo,
                      synor_llm **m)
{
    char p[128];
    path_of(p, sizeof p, leaf);
    synor_llm_synth s = tiny();
    int e = synor_llm_synth_gguf(&s, t, p);
    return e ? e : synor_llm_load(p, lo, m);
}

/* The tiny model of type t written under leaf and loaded twice: kept in
 * the file's layout (no_pack) into *plain, and as a context packs it
 * into *packed. */
static int tiny_pair(const char *leaf, synor_ttype t, synor_llm **plain, synor_llm **packed)
{
    synor_llm_load_opts np = {.no_pack = 1};
    int e = tiny_model(leaf, t, &np, plain);
    if (!e && (e = tiny_model(leaf, t, NULL, packed)))
        synor_llm_destroy(*plain);
    return e;
}

static synor_runtime *runtime(unsigned workers) { return llm_test_runtime(workers); }

static const int32_t prompt[] = {1,   40, 41, 42,  80,  300, 7,   99, 260, 261,
                                 262, 5,  17, 200, 150, 151, 152, 3,  4,   9};
#define NP ((int)(sizeof prompt / sizeof prompt[0]))

/* Runs prompt as one batch (every row's logits) into out (NP x V). */
static int run_batch(synor_llm_ctx *c, unsigned seq, int V, float *out)
{
    unsigned seqs[NP];
    uint8_t want[NP];
    for (int i = 0; i < NP; i++)
        seqs[i] = seq, want[i] = 1;
    int e = synor_llm_batch(c, NP, prompt, seqs, want);
    for (int i = 0; !e && i < NP; i++)
        memcpy(out + (size_t)i * V, synor_llm_logits(c, (size_t)i), (size_t)V * sizeof(float));
    return e;
}

static double max_abs_diff(const float *a, const double *b, size_t n, double *scale)
{
    double m = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        m = d > m ? d : m;
        s = fabs(b[i]) > s ? fabs(b[i]) : s;
    }
    if (scale)
        *scale = s;
    return m;
}

static int argmax_d(const double *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b])
            b = i;
    return b;
}

static int argmax_f(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b])
            b = i;
    return b;
}

/* The engine on model path against the reference: the largest logit
 * difference over all positions (relative to the largest logit), and how
 * many positions agree on the top token. */
static int compare(const char *path, double *rel, int *agree)
{
    synor_llm *m = NULL;
    synor_runtime *rt = runtime(2);
    synor_llm_ctx *c = NULL;
    ref_model r;
    if (!rt || synor_llm_load(path, NULL, &m) || synor_llm_ctx_create(m, rt, NULL, &c) ||
        ref_load(path, &r))
        return -1;
    int V = synor_llm_hparams_get(m)->vocab_size;
    float *got = malloc((size_t)NP * V * sizeof(float));
    double *want = malloc((size_t)NP * V * sizeof(double));
    int e = run_batch(c, 0, V, got);
    ref_forward(&r, prompt, NP, want);
    double scale;
    *rel = max_abs_diff(got, want, (size_t)NP * V, &scale) / scale;
    *agree = 0;
    for (int p = 0; p < NP; p++)
        *agree += argmax_f(got + (size_t)p * V, V) == argmax_d(want + (size_t)p * V, V);
    free(got);
    free(want);
    ref_free(&r);
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
    return e;
}

TEST(f32_matches_reference)
{
    char p[128];
    path_of(p, sizeof p, "f32.gguf");
    synor_llm_synth s = tiny();
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, p));
    double rel;
    int agree;
    ASSERT_OK(compare(p, &rel, &agree));
    fprintf(stderr, "  F32: max |logit - reference| = %.2e of the largest logit, top-1 %d/%d\n",
            rel, agree, NP);
    ASSERT(rel < 1e-5);
    ASSERT_EQ(agree, NP);
}

TEST(quantized_close_to_reference)
{
    static const struct {
        synor_ttype t;
        double bound;
    } cases[] = {{SYNOR_TTYPE_F16, 1e-5},
                 {SYNOR_TTYPE_BF16, 1e-5},
                 {SYNOR_TTYPE_Q8_0, 1e-2},
                 {SYNOR_TTYPE_Q4_0, 1e-2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char p[128], leaf[32];
        snprintf(leaf, sizeof leaf, "m-%s.gguf", synor_ttype_name(cases[i].t));
        path_of(p, sizeof p, leaf);
        synor_llm_synth s = tiny();
        ASSERT_OK(synor_llm_synth_gguf(&s, cases[i].t, p));
        double rel;
        int agree;
        ASSERT_OK(compare(p, &rel, &agree));
        fprintf(stderr, "  %s: max |logit - reference on its own weights| = %.2e, top-1 %d/%d\n",
                synor_ttype_name(cases[i].t), rel, agree, NP);
        ASSERT(rel < cases[i].bound);
        ASSERT(agree >= NP - 2);
    }
}

/* Prefill as one batch, and the same tokens one per batch, agree; so do
 * two sequences run in one interleaved batch and each on its own. */
TEST(batches_agree_with_single_tokens)
{
    synor_llm *m;
    ASSERT_OK(tiny_model("batch.gguf", SYNOR_TTYPE_Q8_0, NULL, &m));
    synor_runtime *rt = runtime(3);
    ASSERT(rt);
    synor_llm_ctx_opts o = {.max_seqs = 2, .max_batch = 64};
    synor_llm_ctx *c;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &o, &c));
    int V = synor_llm_hparams_get(m)->vocab_size;
    float *one = malloc((size_t)NP * V * sizeof(float));
    float *step = malloc((size_t)NP * V * sizeof(float));
    ASSERT_OK(run_batch(c, 0, V, one));
    ASSERT_EQ(synor_llm_seq_len(c, 0), NP);
    synor_llm_seq_reset(c, 0);
    for (int i = 0; i < NP; i++) {
        unsigned seq = 0;
        ASSERT_OK(synor_llm_batch(c, 1, &prompt[i], &seq, NULL));
        memcpy(step + (size_t)i * V, synor_llm_logits(c, 0), (size_t)V * sizeof(float));
    }
    for (size_t i = 0; i < (size_t)NP * V; i++)
        ASSERT(fabsf(one[i] - step[i]) <= 1e-4f * (1 + fabsf(one[i])));
    /* Interleaved: sequence 1 gets the prompt reversed. */
    synor_llm_seq_reset(c, 0);
    int32_t toks[2 * NP];
    unsigned seqs[2 * NP];
    for (int i = 0; i < NP; i++) {
        toks[2 * i] = prompt[i], seqs[2 * i] = 0;
        toks[2 * i + 1] = prompt[NP - 1 - i], seqs[2 * i + 1] = 1;
    }
    ASSERT_OK(synor_llm_batch(c, 2 * NP, toks, seqs, NULL));
    const float *l0 = synor_llm_logits(c, 2 * NP - 2), *l1 = synor_llm_logits(c, 2 * NP - 1);
    ASSERT(l0 && l1 && !synor_llm_logits(c, 0));
    for (int v = 0; v < V; v++)
        ASSERT(fabsf(l0[v] - one[(size_t)(NP - 1) * V + v]) <= 1e-4f * (1 + fabsf(l0[v])));
    float *l1copy = malloc((size_t)V * sizeof(float));
    memcpy(l1copy, l1, (size_t)V * sizeof(float));
    synor_llm_seq_reset(c, 1);
    unsigned s1 = 1;
    for (int i = 0; i < NP; i++)
        ASSERT_OK(synor_llm_batch(c, 1, &prompt[NP - 1 - i], &s1, NULL));
    const float *alone = synor_llm_logits(c, 0);
    for (int v = 0; v < V; v++)
        ASSERT(fabsf(l1copy[v] - alone[v]) <= 1e-4f * (1 + fabsf(alone[v])));
    free(one);
    free(step);
    free(l1copy);
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
}

TEST(llama2c_checkpoint_same_as_gguf)
{
    char g[128], l[128], t[128];
    path_of(g, sizeof g, "same.gguf");
    path_of(l, sizeof l, "same.bin");
    path_of(t, sizeof t, "tokenizer.bin");
    synor_llm_synth s = tiny();
    s.cfg.shared_classifier = 0;
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, g));
    ASSERT_OK(synor_llm_synth_llama2c(&s, l, t));
    synor_llm *mg, *ml;
    ASSERT_OK(synor_llm_load(g, NULL, &mg));
    ASSERT_OK(synor_llm_load(l, NULL, &ml)); /* tokenizer.bin beside it */
    ASSERT_STREQ(synor_llm_format(ml), "llama2.c v0");
    ASSERT_STREQ(synor_llm_weight_type(ml), "F32");
    ASSERT_EQ(synor_tokenizer_size(synor_llm_tokenizer(ml)),
              synor_tokenizer_size(synor_llm_tokenizer(mg)));
    synor_runtime *rt = runtime(2);
    synor_llm_ctx *cg, *cl;
    ASSERT_OK(synor_llm_ctx_create(mg, rt, NULL, &cg));
    ASSERT_OK(synor_llm_ctx_create(ml, rt, NULL, &cl));
    int V = s.cfg.vocab_size;
    float *a = malloc((size_t)NP * V * sizeof(float)), *b = malloc((size_t)NP * V * sizeof(float));
    ASSERT_OK(run_batch(cg, 0, V, a));
    ASSERT_OK(run_batch(cl, 0, V, b));
    ASSERT(memcmp(a, b, (size_t)NP * V * sizeof(float)) == 0);
    free(a);
    free(b);
    synor_llm_ctx_destroy(cg);
    synor_llm_ctx_destroy(cl);
    synor_llm_destroy(mg);
    synor_llm_destroy(ml);
    synor_runtime_destroy(rt);
}

TEST(kv_pool_exhaustion_changes_nothing)
{
    synor_llm *m;
    ASSERT_OK(tiny_model("kv.gguf", SYNOR_TTYPE_F32, NULL, &m));
    synor_runtime *rt = runtime(2);
    synor_llm_ctx_opts o = {.max_seqs = 2, .max_batch = 64, .kv_blocks = 2};
    synor_llm_ctx *c;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &o, &c));
    unsigned seqs[NP] = {0};
    ASSERT_OK(synor_llm_batch(c, NP, prompt, seqs, NULL)); /* 20 positions: 2 blocks */
    unsigned used, total;
    synor_llm_kv_usage(c, &used, &total);
    ASSERT_EQ(used, 2);
    ASSERT_EQ(total, 2);
    unsigned one = 1;
    ASSERT_EQ(synor_llm_batch(c, 1, prompt, &one, NULL), SYNOR_ENOMEM);
    ASSERT_CONTAINS(synor_errmsg(), "KV cache");
    ASSERT_EQ(synor_llm_seq_len(c, 1), 0);
    ASSERT_EQ(synor_llm_seq_len(c, 0), NP);
    ASSERT_OK(synor_llm_seq_truncate(c, 0, 16)); /* back to one block */
    synor_llm_kv_usage(c, &used, &total);
    ASSERT_EQ(used, 1);
    ASSERT_OK(synor_llm_batch(c, 1, prompt, &one, NULL));
    synor_llm_seq_reset(c, 0);
    synor_llm_seq_reset(c, 1);
    synor_llm_kv_usage(c, &used, &total);
    ASSERT_EQ(used, 0);
    /* Bad rows are refused before anything changes. */
    int32_t bad = 320;
    ASSERT_EQ(synor_llm_batch(c, 1, &bad, seqs, NULL), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "token 320");
    unsigned far = 2;
    ASSERT_EQ(synor_llm_batch(c, 1, prompt, &far, NULL), SYNOR_EINVAL);
    ASSERT_EQ(synor_llm_seq_len(c, 0), 0);
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
}

TEST(context_length_is_enforced)
{
    char p[128];
    path_of(p, sizeof p, "ctx.gguf");
    synor_llm_synth s = tiny();
    s.cfg.seq_len = 16;
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, p));
    synor_llm *m;
    ASSERT_OK(synor_llm_load(p, NULL, &m));
    synor_runtime *rt = runtime(1);
    synor_llm_ctx *c;
    ASSERT_OK(synor_llm_ctx_create(m, rt, NULL, &c));
    unsigned seqs[NP] = {0};
    ASSERT_EQ(synor_llm_batch(c, NP, prompt, seqs, NULL), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "context is 16");
    ASSERT_EQ(synor_llm_seq_len(c, 0), 0);
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
}

/* A context of one-row batches decodes on one thread while another
 * thread creates a context of batches on the same model, which packs its
 * products (pack.c): the first context's logits are those of a run with
 * nothing beside it, and the second's batch agrees with one-row steps.
 * (Under ThreadSanitizer: the packing's publication is checked too.) */
typedef struct decode_job {
    synor_llm_ctx *c;
    int V;
    float *out; /* NP x V */
    int err;
} decode_job;

static void *decode_alone(void *arg)
{
    decode_job *j = arg;
    unsigned seq = 0;
    for (int i = 0; i < NP && !j->err; i++) {
        j->err = synor_llm_batch(j->c, 1, &prompt[i], &seq, NULL);
        if (!j->err)
            memcpy(j->out + (size_t)i * j->V, synor_llm_logits(j->c, 0),
                   (size_t)j->V * sizeof(float));
    }
    return NULL;
}

TEST(packing_while_another_context_runs)
{
    synor_llm *m;
    ASSERT_OK(tiny_model("pack-race.gguf", SYNOR_TTYPE_Q8_0, NULL, &m));
    int V = synor_llm_hparams_get(m)->vocab_size;
    synor_runtime *rt1 = runtime(2), *rt2 = runtime(2);
    ASSERT(rt1 && rt2);
    synor_llm_ctx_opts one = {.max_seqs = 1, .max_batch = 1};
    synor_llm_ctx_opts many = {.max_seqs = 1, .max_batch = 32};
    synor_llm_ctx *c1, *c2;
    ASSERT_OK(synor_llm_ctx_create(m, rt1, &one, &c1));
    float *alone = malloc((size_t)NP * V * sizeof(float));
    float *beside = malloc((size_t)NP * V * sizeof(float));
    float *batch = malloc((size_t)NP * V * sizeof(float));
    decode_job j = {c1, V, alone, 0};
    decode_alone(&j);
    ASSERT_OK(j.err);
    synor_llm_seq_reset(c1, 0);
    j.out = beside;
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, decode_alone, &j), 0);
    ASSERT_OK(synor_llm_ctx_create(m, rt2, &many, &c2));
    ASSERT_OK(run_batch(c2, 0, V, batch));
    pthread_join(th, NULL);
    ASSERT_OK(j.err);
    ASSERT(memcmp(alone, beside, (size_t)NP * V * sizeof(float)) == 0);
    for (size_t i = 0; i < (size_t)NP * V; i++)
        ASSERT(fabsf(batch[i] - alone[i]) <= 1e-4f * (1 + fabsf(alone[i])));
    free(alone);
    free(beside);
    free(batch);
    synor_llm_ctx_destroy(c1);
    synor_llm_ctx_destroy(c2);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt1);
    synor_runtime_destroy(rt2);
}

/* synor_llm_load_opts.no_pack: a context of batches leaves the products
 * in the file's layout (nothing packed, where this CPU would pack), and
 * its batch agrees with the packed model's. */
TEST(no_pack_keeps_the_file_layout)
{
    synor_llm *m0, *m1;
    ASSERT_OK(tiny_pair("no-pack.gguf", SYNOR_TTYPE_Q8_0, &m0, &m1));
    int V = synor_llm_hparams_get(m0)->vocab_size;
    synor_runtime *rt = runtime(2);
    ASSERT(rt);
    synor_llm_ctx_opts many = {.max_seqs = 1, .max_batch = 32};
    synor_llm_ctx *c0, *c1;
    ASSERT_OK(synor_llm_ctx_create(m0, rt, &many, &c0));
    ASSERT_OK(synor_llm_ctx_create(m1, rt, &many, &c1));
    ASSERT(m0->packed == NULL && m0->layers[0].wq.pack == NULL);
    if (synor__llm_kernels()->tile_p)
        ASSERT(m1->packed != NULL && m1->layers[0].wq.pack != NULL);
    float *a = malloc((size_t)NP * V * sizeof(float)), *b = malloc((size_t)NP * V * sizeof(float));
    ASSERT(a && b);
    ASSERT_OK(run_batch(c0, 0, V, a));
    ASSERT_OK(run_batch(c1, 0, V, b));
    for (size_t i = 0; i < (size_t)NP * V; i++)
        ASSERT(fabsf(a[i] - b[i]) <= 1e-4f * (1 + fabsf(b[i])));
    free(a);
    free(b);
    synor_llm_ctx_destroy(c0);
    synor_llm_ctx_destroy(c1);
    synor_llm_destroy(m0);
    synor_llm_destroy(m1);
    synor_runtime_destroy(rt);
}

/* This process's resident kilobytes of the mapping that holds p
 * (/proc/self/smaps), or -1. */
static long rss_kb_of(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in = 0;
    long kb = -1;
    while (kb < 0 && fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = (uintptr_t)p >= a && (uintptr_t)p < b;
        else if (in && !strncmp(line, "Rss:", 4))
            kb = strtol(line + 4, NULL, 10);
    }
    fclose(f);
    return kb;
}

/* Where the kernels pack F32 products (the avx2 table), a context of
 * batches lets go of the file's pages of the packed rows (pack.c): the
 * mapping's resident part falls well below the file, stays there through
 * batches of 80 rows over 4 sequences (SGEMM from the copy, the tied
 * embedding's rows from it too), and the logits are those of the model
 * kept in the file's layout. */
TEST(packed_f32_lets_go_of_the_file_pages)
{
    synor_llm *m0, *m1;
    ASSERT_OK(tiny_pair("f32-drop.gguf", SYNOR_TTYPE_F32, &m0, &m1));
    int V = synor_llm_hparams_get(m0)->vocab_size;
    synor_runtime *rt = runtime(2);
    ASSERT(rt);
    synor_llm_ctx_opts many = {.max_seqs = 4, .max_batch = 4 * NP};
    synor_llm_ctx *c0, *c1;
    ASSERT_OK(synor_llm_ctx_create(m0, rt, &many, &c0));
    ASSERT_OK(synor_llm_ctx_create(m1, rt, &many, &c1));
    int packs = m1->layers[0].wq.pack != NULL;
    long file_kb, before = rss_kb_of(m1->layers[0].wq.data);
    FILE *f = fopen(synor_gguf_path(m1->gguf), "rb");
    ASSERT(f && fseek(f, 0, SEEK_END) == 0);
    file_kb = ftell(f) / 1024;
    fclose(f);
    if (packs) {
        ASSERT(m1->embd.pack == m1->cls.pack); /* the tied classifier's copy */
        fprintf(stderr, "  after packing, %ld of the file's %ld KiB resident\n", before, file_kb);
        ASSERT(before >= 0 && before < file_kb / 2);
    } else {
        fprintf(stderr, "  this CPU's kernels keep F32 in the file's layout: nothing let go "
                        "(mapping %ld of %ld KiB resident)\n",
                before, file_kb);
    }
    int32_t toks[4 * NP];
    unsigned seqs[4 * NP];
    uint8_t want[4 * NP];
    for (int i = 0; i < 4 * NP; i++)
        toks[i] = prompt[i % NP], seqs[i] = (unsigned)(i / NP), want[i] = i % NP == NP - 1;
    ASSERT_OK(synor_llm_batch(c0, 4 * NP, toks, seqs, want));
    ASSERT_OK(synor_llm_batch(c1, 4 * NP, toks, seqs, want));
    for (size_t r = 0; r < 4; r++) {
        size_t row = r * NP + NP - 1;
        const float *a = synor_llm_logits(c0, row), *b = synor_llm_logits(c1, row);
        ASSERT(a && b);
        for (int i = 0; i < V; i++)
            ASSERT(fabsf(a[i] - b[i]) <= 1e-4f * (1 + fabsf(a[i])));
    }
    if (packs)
        ASSERT(rss_kb_of(m1->layers[0].wq.data) < file_kb / 2);
    synor_llm_ctx_destroy(c0);
    synor_llm_ctx_destroy(c1);
    synor_llm_destroy(m0);
    synor_llm_destroy(m1);
    synor_runtime_destroy(rt);
}

TEST(sampler)
{
    float l[5] = {0.5f, 2.0f, 1.0f, 2.0f, -1.0f};
    synor_sampler s;
    synor_sampler_init(&s, 0, 0, 1, 1);
    ASSERT_EQ(synor_sampler_sample(&s, l, 5), 1); /* lowest id on ties */
    synor_sampler_init(&s, 1.0f, 1, 1, 1);
    ASSERT_EQ(synor_sampler_sample(&s, l, 5), 1); /* top-k 1 is greedy */
    synor_sampler_init(&s, 1.0f, 0, 0.01f, 1);
    ASSERT_EQ(synor_sampler_sample(&s, l, 5), 1); /* a tiny nucleus too */
    /* Same seed, same draws; frequencies follow the softmax. */
    synor_sampler a, b;
    synor_sampler_init(&a, 1.0f, 0, 1, 99);
    synor_sampler_init(&b, 1.0f, 0, 1, 99);
    int count[5] = {0};
    enum { DRAWS = 20000 };
    for (int i = 0; i < DRAWS; i++) {
        int32_t x = synor_sampler_sample(&a, l, 5);
        ASSERT_EQ(x, synor_sampler_sample(&b, l, 5));
        count[x]++;
    }
    double z = 0;
    for (int i = 0; i < 5; i++)
        z += exp(l[i]);
    for (int i = 0; i < 5; i++) {
        double p = exp(l[i]) / z, sd = sqrt(DRAWS * p * (1 - p));
        ASSERT(fabs(count[i] - DRAWS * p) < 5 * sd);
    }
    /* A row of 40 (the vector kernels' loop and tail), at two
     * temperatures, with top-k 5 and top-p 0.8 (the candidates' own
     * softmax): frequencies within 5 standard deviations, chi-square over
     * the tokens far below its 0.1% tail. */
    enum { NL = 40 };
    float l40[NL];
    for (int i = 0; i < NL; i++)
        l40[i] = (float)((i * 7) % 13) * 0.35f - 1.0f;
    static const float temps[] = {1.0f, 0.7f, 1.0f, 1.0f};
    static const int ks[] = {0, 0, 5, 0};
    static const float ps[] = {1.0f, 1.0f, 1.0f, 0.8f};
    for (int v = 0; v < 4; v++) {
        enum { D40 = 40000 };
        int c40[NL] = {0};
        synor_sampler_init(&a, temps[v], ks[v], ps[v], 7 + (uint64_t)v);
        for (int i = 0; i < D40; i++)
            c40[synor_sampler_sample(&a, l40, NL)]++;
        /* the candidates and their probabilities, as candidates() picks them */
        int order[NL];
        double w[NL], tot = 0;
        for (int i = 0; i < NL; i++) {
            order[i] = i;
            w[i] = exp(l40[i] / temps[v]);
        }
        for (int i = 0; i < NL; i++) /* by weight, lowest id first on ties */
            for (int j = i + 1; j < NL; j++)
                if (w[order[j]] > w[order[i]] ||
                    (w[order[j]] == w[order[i]] && order[j] < order[i])) {
                    int t = order[i];
                    order[i] = order[j];
                    order[j] = t;
                }
        int m = ks[v] ? ks[v] : NL;
        for (int i = 0; i < m; i++)
            tot += w[order[i]];
        if (ps[v] < 1) {
            double acc = 0;
            for (int i = 0; i < m; i++) {
                acc += w[order[i]];
                if (acc >= ps[v] * tot) {
                    m = i + 1;
                    break;
                }
            }
            tot = acc;
        }
        double chi = 0;
        int inside = 0;
        for (int i = 0; i < m; i++) {
            int t = order[i];
            double p = w[t] / tot, sd = sqrt(D40 * p * (1 - p));
            ASSERT(fabs(c40[t] - D40 * p) < 5 * sd);
            chi += (c40[t] - D40 * p) * (c40[t] - D40 * p) / (D40 * p);
            inside += c40[t];
        }
        ASSERT_EQ(inside, D40); /* nothing outside the candidates */
        /* chi-square with m - 1 degrees of freedom: its 0.1% tail starts
         * below df + 3.5 sqrt(2 df) + 8 (72 for 39, 18.5 for 4) */
        fprintf(stderr, "  sampler: %d candidates, chi-square %.1f (%d degrees of freedom)\n", m, chi,
                m - 1);
        ASSERT(chi < (m - 1) + 3.5 * sqrt(2.0 * (m - 1)) + 8);
    }
    /* top-k 2 never draws outside the two best. */
    synor_sampler_init(&a, 1.0f, 2, 1, 5);
    for (int i = 0; i < 1000; i++) {
        int32_t x = synor_sampler_sample(&a, l, 5);
        ASSERT(x == 1 || x == 3);
    }
}

TEST(missing_or_misshapen_tensor_is_named)
{
    char full[128], cut[128];
    path_of(full, sizeof full, "full.gguf");
    path_of(cut, sizeof cut, "cut.gguf");
    synor_llm_synth s = tiny();
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, full));
    synor_gguf *g;
    ASSERT_OK(synor_gguf_open(full, &g));
    for (int variant = 0; variant < 2; variant++) {
        synor_gguf_writer *w;
        ASSERT_OK(synor_gguf_writer_create(&w));
        ASSERT_OK(synor_gguf_writer_copy_kv(w, g, NULL));
        for (size_t i = 0; i < synor_gguf_tensor_count(g); i++) {
            const synor_gguf_tensor *t = synor_gguf_tensor_at(g, i);
            if (strcmp(t->name, "blk.1.ffn_up.weight") == 0) {
                if (variant == 0)
                    continue;
                uint64_t ne[2] = {t->ne[1], t->ne[0]}; /* transposed */
                ASSERT_OK(synor_gguf_writer_add_tensor(w, t->name, t->type, 2, ne, t->data));
                continue;
            }
            ASSERT_OK(synor_gguf_writer_add_tensor(w, t->name, t->type, t->ndim, t->ne, t->data));
        }
        ASSERT_OK(synor_gguf_writer_save(w, cut));
        synor_gguf_writer_destroy(w);
        synor_llm *m = NULL;
        ASSERT_EQ(synor_llm_load(cut, NULL, &m), SYNOR_ESCHEMA);
        ASSERT_CONTAINS(synor_errmsg(), "blk.1.ffn_up.weight");
        ASSERT_CONTAINS(synor_errmsg(), variant == 0 ? "missing" : "[96, 64]");
        ASSERT(m == NULL);
    }
    synor_gguf_close(g);
}

TEST(embeddings)
{
    synor_llm *m;
    ASSERT_OK(tiny_model("embed.gguf", SYNOR_TTYPE_Q8_0, NULL, &m));
    synor_runtime *rt = runtime(2);
    synor_llm_ctx_opts o = {.max_seqs = 1, .max_batch = 8}; /* texts span batches */
    synor_llm_ctx *c;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &o, &c));
    float a[64], b[64], d[64];
    ASSERT_OK(synor_llm_embed(c, 0, "the little girl ran to the park", a));
    ASSERT_OK(synor_llm_embed(c, 0, "the little girl ran to the park", b));
    ASSERT_OK(synor_llm_embed(c, 0, "kicked it high into the sky", d));
    ASSERT(memcmp(a, b, sizeof a) == 0);
    double na = 0, dot = 0;
    for (int i = 0; i < 64; i++)
        na += a[i] * a[i], dot += a[i] * d[i];
    ASSERT_NEAR(na, 1.0, 1e-5);
    ASSERT(dot < 0.9999);
    ASSERT_EQ(synor_llm_seq_len(c, 0), 0);
    synor_llm_ctx_destroy(c);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
}

typedef struct gen_log {
    int n, stop_at;
    int32_t toks[64];
    synor_sampler *s, saved;
} gen_log;

static int log_token(int32_t tok, const char *t, size_t len, void *user)
{
    (void)t, (void)len;
    gen_log *g = user;
    g->toks[g->n++] = tok;
    if (g->n != g->stop_at)
        return 0;
    g->saved = *g->s; /* the sampler as it is after this draw */
    return 1;
}

/* Generation by segments of 6 (batches of at most 4 rows: a segment is two
 * batches), stopped after 2 segments and resumed on another context from
 * the ids and the sampler: the next token and the logits it was drawn
 * from are bit for bit those of the run not stopped (whose cache of the
 * segments was made by decode steps first, then rebuilt), greedy and
 * seeded. */
TEST(resumed_generation_rebuilds_the_same_cache)
{
    synor_llm *m;
    ASSERT_OK(tiny_model("resume.gguf", SYNOR_TTYPE_Q8_0, NULL, &m));
    synor_runtime *rt = runtime(2);
    ASSERT(rt);
    synor_llm_ctx_opts o = {.max_batch = 4};
    synor_llm_ctx *c, *c2;
    ASSERT_OK(synor_llm_ctx_create(m, rt, &o, &c));
    ASSERT_OK(synor_llm_ctx_create(m, rt, &o, &c2));
    int V = synor_llm_hparams_get(m)->vocab_size;
    float *want = malloc((size_t)V * sizeof(float));
    for (int t = 0; t < 2; t++) {
        float temp = t ? 0.8f : 0.0f;
        synor_sampler s;
        gen_log u = {.stop_at = -1, .s = &s};
        synor_sampler_init(&s, temp, 0, 1.0f, 3);
        ASSERT_OK(synor_llm_generate_ids(c, prompt, NP, 0, 13, 6, &s, log_token, &u, NULL));
        ASSERT_EQ(u.n, 13);
        ASSERT(synor_llm_logits(c, 1)); /* the last batch: the segment's 2 rows */
        memcpy(want, synor_llm_logits(c, 1), (size_t)V * sizeof(float));
        gen_log r = {.stop_at = 12, .s = &s};
        synor_sampler_init(&s, temp, 0, 1.0f, 3);
        ASSERT_OK(synor_llm_generate_ids(c, prompt, NP, 0, 13, 6, &s, log_token, &r, NULL));
        ASSERT_EQ(r.n, 12);
        ASSERT(!memcmp(r.toks, u.toks, 12 * sizeof(int32_t)));
        int32_t ids[NP + 12];
        memcpy(ids, prompt, sizeof prompt);
        memcpy(ids + NP, r.toks, sizeof r.toks[0] * 12);
        gen_log r2 = {.stop_at = -1, .s = &r.saved};
        ASSERT_OK(synor_llm_generate_ids(c2, ids, NP, 12, 13, 6, &r.saved, log_token, &r2, NULL));
        ASSERT_EQ(r2.n, 1);
        ASSERT_EQ(r2.toks[0], u.toks[12]);
        ASSERT(!memcmp(synor_llm_logits(c2, 1), want, (size_t)V * sizeof(float)));
        ASSERT_EQ(synor_llm_seq_len(c2, 0), NP + 12);
    }
    /* where the stopped run would have ended anyway: nothing more */
    synor_sampler s;
    synor_sampler_init(&s, 0, 0, 1.0f, 3);
    int32_t ids[NP + 12];
    memcpy(ids, prompt, sizeof prompt);
    for (int i = 0; i < 12; i++)
        ids[NP + i] = 5;
    gen_log z = {.stop_at = -1, .s = &s};
    ASSERT_OK(synor_llm_generate_ids(c2, ids, NP, 12, 12, 6, &s, log_token, &z, NULL));
    ASSERT_EQ(z.n, 0);
    /* refusals: not a whole number of segments, no segments, beyond n_new */
    ASSERT_EQ(synor_llm_generate_ids(c2, ids, NP, 5, 13, 6, &s, log_token, &z, NULL),
              SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "segments of 6");
    ASSERT_EQ(synor_llm_generate_ids(c2, ids, NP, 6, 13, 0, &s, log_token, &z, NULL),
              SYNOR_EINVAL);
    ASSERT_EQ(synor_llm_generate_ids(c2, ids, NP, 12, 6, 6, &s, log_token, &z, NULL),
              SYNOR_EINVAL);
    ids[NP] = V;
    ASSERT_EQ(synor_llm_generate_ids(c2, ids, NP, 6, 13, 6, &s, log_token, &z, NULL),
              SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "vocabulary");
    free(want);
    synor_llm_ctx_destroy(c);
    synor_llm_ctx_destroy(c2);
    synor_llm_destroy(m);
    synor_runtime_destroy(rt);
}

TEST(cleanup)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (dir[0])
        ASSERT_EQ(system(cmd), 0);
}

TEST_MAIN(f32_matches_reference, packing_while_another_context_runs, no_pack_keeps_the_file_layout, packed_f32_lets_go_of_the_file_pages, quantized_close_to_reference, batches_agree_with_single_tokens, llama2c_checkpoint_same_as_gguf, kv_pool_exhaustion_changes_nothing, context_length_is_enforced, sampler, missing_or_misshapen_tensor_is_named, embeddings, resumed_generation_rebuilds_the_same_cache, cleanup)
