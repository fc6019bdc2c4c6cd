/* test_runtime_llm.c - the inference engine on the runtime: logits against
 * a plain fp64 reference (llm_ref.h), the same weights through GGUF and a
 * llama2.c checkpoint, quantized models, batches of several sequences, the
 * paged KV cache's pool, sampling, and models missing a tensor. Runs under
 * ThreadSanitizer too: a batch is tasks on several workers. */
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

/* v[0..n): deterministic values in (-1000 / div, 1000 / div), drawn from
 * the generator state *st (a 64-bit LCG). */
static void fill(float *v, int n, uint64_t *st, float div)
{
    for (int i = 0; i < n; i++) {
        *st = *st * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((int)(*st >> 40) % 2001 - 1000) / div;
    }
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

/* The vectorized kernel tables this CPU runs (AVX2 where it has it, and
 * AVX-512 where that is the table in use), so that a machine with AVX-512
 * tests the AVX2 kernels too; returns how many. */
static int vector_tables(const llm_kernels *t[2])
{
    int n = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        (synor__llm_kernels() == &synor__llm_kernels_avx2 ||
         synor__llm_kernels() == &synor__llm_kernels_avx512))
        t[n++] = &synor__llm_kernels_avx2;
    if (synor__llm_kernels() == &synor__llm_kernels_avx512)
        t[n++] = &synor__llm_kernels_avx512;
#else
    (void)t;
#endif
    return n;
}

/* T activation rows of C floats (x, row t at x + t * C) quantized as the
 * engine quantizes them for Q8_0 / Q4_0 products (blocks of 32, by the
 * portable kernel), with the c8 and the q + 128 rows the products read. */
static void quantize_rows(const float *x, int T, int C, int8_t *q, uint8_t *u, float *d,
                          float *c8, llm_qrow *qx)
{
    const llm_kernels *g = &synor__llm_kernels_generic;
    int NB = C / 32;
    for (int t = 0; t < T; t++) {
        g->quantize_row(x + t * C, q + t * C, d + t * NB, C, 32);
        synor__llm_block_c8(q + t * C, d + t * NB, NB, c8 + t * NB);
        for (int i = 0; i < C; i++)
            u[t * C + i] = (uint8_t)(q[t * C + i] ^ 0x80);
        qx[t] = (llm_qrow){.q = q + t * C, .d = d + t * NB, .u = u + t * C, .c8 = c8 + t * NB};
    }
}

/* check(k) on every vectorized table of this CPU that has the kernel
 * (has(k)), naming each; a message naming `what` when none has it. */
static void on_vector_tables(int (*has)(const llm_kernels *), void (*check)(const llm_kernels *),
                             const char *what)
{
    const llm_kernels *t[2];
    int n = vector_tables(t), ran = 0;
    for (int i = 0; i < n; i++)
        if (has(t[i])) {
            check(t[i]);
            fprintf(stderr, "  %s: checked\n", t[i]->isa);
            ran++;
        }
    if (!ran)
        fprintf(stderr, "  skipped: no kernel table here has %s\n", what);
}

static int has_tile_f32w(const llm_kernels *k) { return k->tile_f32w != NULL; }
static int has_tile_f32p(const llm_kernels *k) { return k->tile_f32p != NULL; }
static int has_tile_q(const llm_kernels *k) { return k->tile_q != NULL; }
static int has_attention(const llm_kernels *k) { return k->att_scores && k->att_mix; }
static int has_elementwise(const llm_kernels *k) { return k->softmax && k->swiglu; }

/* Every vectorized kernel this CPU runs agrees with the portable one. */
TEST(kernels_agree_with_portable)
{
    const llm_kernels *k = synor__llm_kernels(), *g = &synor__llm_kernels_generic;
    fprintf(stderr, "  kernels in use: %s\n", k->isa);
    enum { N = 288 };
    float w[N], x[N];
    uint64_t st = 7;
    for (int i = 0; i < N; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        w[i] = (float)((int)(st >> 40) % 2001 - 1000) / 700.0f;
        x[i] = (float)((int)(st >> 20) % 2001 - 1000) / 900.0f;
    }
    for (int n = 1; n <= N; n += 37)
        ASSERT_NEAR(k->dot_f32(w, x, n), g->dot_f32(w, x, n), 1e-5);
    int8_t q1[N], q2[N];
    float d1[N / 32], d2[N / 32];
    k->quantize_row(x, q1, d1, N, 32);
    g->quantize_row(x, q2, d2, N, 32);
    ASSERT(memcmp(q1, q2, N) == 0 && memcmp(d1, d2, sizeof d1) == 0);
    uint8_t b8[N / 32 * 34], b4[N / 32 * 18];
    uint16_t h[N], bf[N];
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q8_0, w, b8, N));
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q4_0, w, b4, N));
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_F16, w, h, N));
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_BF16, w, bf, N));
    ASSERT_NEAR(k->dot_q8_0(b8, q1, d1, N / 32), g->dot_q8_0(b8, q1, d1, N / 32), 1e-5);
    float c8[N / 32];
    synor__llm_block_c8(q1, d1, N / 32, c8);
    ASSERT_NEAR(k->dot_q4_0(b4, q1, d1, c8, N / 32), g->dot_q4_0(b4, q1, d1, c8, N / 32), 1e-5);
    ASSERT_NEAR(k->dot_f16(h, x, N), g->dot_f16(h, x, N), 1e-5);
    ASSERT_NEAR(k->dot_bf16(bf, x, N), g->dot_bf16(bf, x, N), 1e-5);
    float s64[N / 64];
    int8_t qg[N];
    g->quantize_row(w, qg, s64, N / 64 * 64, 64);
    int8_t xq[N];
    float xs[N / 64];
    g->quantize_row(x, xq, xs, N / 64 * 64, 64);
    ASSERT_NEAR(k->dot_q8g(qg, s64, xq, xs, N / 64 * 64, 64),
                g->dot_q8g(qg, s64, xq, xs, N / 64 * 64, 64), 1e-5);
}

/* The packed weights of batches (pack.c): the portable product on a
 * packed group and a table's (where it has one) against the file
 * layout's dot products, for Q8_0 and Q4_0, 1..11 activation rows, each
 * row bitwise what it gets alone; and
 * synor__llm_matmul over a row range that cuts groups (rows around the
 * whole groups go the file's way) against the same range unpacked. */
static void packed_products_agree_on(const llm_kernels *k)
{
    enum { R = 29, C = 96, NB = C / 32, TMAX = 11 };
    const llm_kernels *g = &synor__llm_kernels_generic;
    static float w[R * C], x[TMAX * C];
    uint64_t st = 11;
    fill(w, R * C, &st, 700.0f);
    fill(x, TMAX * C, &st, 900.0f);
    static int8_t q[TMAX * C];
    static uint8_t u[TMAX * C];
    static float d[TMAX * NB], c8[TMAX * NB];
    llm_qrow qx[TMAX];
    quantize_rows(x, TMAX, C, q, u, d, c8, qx);
    for (int q4 = 0; q4 < 2; q4++) {
        synor_ttype ty = q4 ? SYNOR_TTYPE_Q4_0 : SYNOR_TTYPE_Q8_0;
        size_t rb = (size_t)NB * (q4 ? 18 : 34);
        static uint8_t data[R * C * 2];
        for (int r = 0; r < R; r++)
            ASSERT_OK(synor_ttype_quantize(ty, w + r * C, data + r * rb, C));
        llm_mat m = {.type = ty, .rows = R, .cols = C, .data = data, .row_bytes = rb};
        ASSERT(synor__llm_packable(&m));
        uint8_t *pk = malloc(synor__llm_pack_size(&m));
        ASSERT(pk);
        synor__llm_pack(&m, pk);
        ASSERT(m.pack == pk);
        size_t gb = synor__llm_pack_size(&m) / (R / 8);
        /* Q4_0 packed as small as the file's rows: 18 bytes a row and
         * block (16 of values, 2 of fp16 scale), the scales padded to 64 */
        if (q4)
            ASSERT_EQ(gb, (size_t)(NB * 16 + 63) / 64 * 64 + (size_t)NB * 8 * 16);
        for (int T = 1; T <= TMAX; T++)
            for (int grp = 0; grp < R / 8; grp++) {
                float yr[TMAX * 8], yk[TMAX * 8];
                for (int i = 0; i < T * 8; i++)
                    yr[i] = yk[i] = 0.5f;
                synor__llm_tile_p_ref(pk + grp * gb, qx, T, NB, q4, yr, 8, 1);
                if (k->tile_p)
                    k->tile_p(pk + grp * gb, qx, T, NB, q4, yk, 8, 1);
                for (int t = 0; t < T; t++)
                    for (int j = 0; j < 8; j++) {
                        const uint8_t *row = data + (size_t)(grp * 8 + j) * rb;
                        float want = q4 ? g->dot_q4_0(row, qx[t].q, qx[t].d, qx[t].c8, NB)
                                        : g->dot_q8_0(row, qx[t].q, qx[t].d, NB);
                        float tol = 1e-4f * (1 + fabsf(want));
                        ASSERT(fabsf(yr[t * 8 + j] - (0.5f + want)) <= tol);
                        if (k->tile_p)
                            ASSERT(fabsf(yk[t * 8 + j] - (0.5f + want)) <= tol);
                    }
            }
        /* a row's sums are bitwise the same in a pass of any size (8, 4,
         * 3, 2 or 1 rows: a draft's catch-up of 2 rows, a check of 3-11)
         * as alone, one group and two */
        if (k->tile_p)
            for (int two = 0; two < 2 && (!two || k->tile_p2); two++)
                for (int T = 2; T <= TMAX; T++) {
                    float yb[TMAX * 16], y1[16];
                    for (int i = 0; i < T * 16; i++)
                        yb[i] = 0.25f * (float)(i % 5);
                    if (two)
                        k->tile_p2(pk, gb, qx, T, NB, q4, yb, 16, 1);
                    else
                        k->tile_p(pk, qx, T, NB, q4, yb, 16, 1);
                    for (int t = 0; t < T; t++) {
                        for (int i = 0; i < 16; i++)
                            y1[i] = 0.25f * (float)((t * 16 + i) % 5);
                        if (two)
                            k->tile_p2(pk, gb, qx + t, 1, NB, q4, y1, 16, 1);
                        else
                            k->tile_p(pk, qx + t, 1, NB, q4, y1, 16, 1);
                        ASSERT(memcmp(y1, yb + t * 16, (two ? 16 : 8) * sizeof(float)) == 0);
                    }
                }
        /* two groups at once: bitwise the two groups one at a time */
        if (k->tile_p2)
            for (int T = 1; T <= TMAX; T++) {
                float y1[TMAX * 16], y2[TMAX * 16];
                for (int i = 0; i < T * 16; i++)
                    y1[i] = y2[i] = 0.25f * (float)(i % 7);
                k->tile_p(pk, qx, T, NB, q4, y1, 16, 1);
                k->tile_p(pk + gb, qx, T, NB, q4, y1 + 8, 16, 1);
                k->tile_p2(pk, gb, qx, T, NB, q4, y2, 16, 1);
                ASSERT(memcmp(y1, y2, (size_t)T * 16 * sizeof(float)) == 0);
            }
        /* rows 3..26 of 29: a partial group on each side of two whole ones */
        static float yp[TMAX * R], yu[TMAX * R];
        llm_mat plain = m;
        plain.pack = NULL;
        for (int T = 1; T <= TMAX; T += 5) {
            synor__llm_matmul(k, &m, 3, 27, T, NULL, 0, qx, yp, R, 0);
            synor__llm_matmul(k, &plain, 3, 27, T, NULL, 0, qx, yu, R, 0);
            for (int t = 0; t < T; t++)
                for (int r = 3; r < 27; r++)
                    ASSERT(fabsf(yp[t * R + r] - yu[t * R + r]) <=
                           1e-4f * (1 + fabsf(yu[t * R + r])));
        }
        free(pk);
    }
}

/* On the kernel table in use (the portable product alone where it has no
 * tile_p), and on every other vectorized table this CPU runs that has one
 * (an AVX-512 machine checks the avx2 tile_p too). */
TEST(packed_products_agree)
{
    const llm_kernels *t[2];
    packed_products_agree_on(synor__llm_kernels());
    int n = vector_tables(t);
    for (int i = 0; i < n; i++)
        if (t[i]->tile_p) {
            if (t[i] != synor__llm_kernels())
                packed_products_agree_on(t[i]);
            fprintf(stderr, "  %s: checked\n", t[i]->isa);
        }
}

/* The F32 batch tile (where the CPU has it) against the portable dot
 * products: 1..13 activation rows, lengths with and without a tail. */
static void f32_batch_tile_agrees_on(const llm_kernels *k)
{
    const llm_kernels *g = &synor__llm_kernels_generic;
    enum { N = 100, TMAX = 13 };
    static float w[4 * N], x[TMAX * N], y[TMAX * 4];
    uint64_t st = 5;
    fill(w, 4 * N, &st, 700.0f);
    fill(x, TMAX * N, &st, 900.0f);
    for (int n = 96; n <= N; n += 4)
        for (int T = 1; T <= TMAX; T++)
            for (int acc = 0; acc < 2; acc++) {
                for (int i = 0; i < TMAX * 4; i++)
                    y[i] = 0.25f;
                k->tile_f32w(w, N, x, N, T, n, y, 4, acc, NULL);
                for (int t = 0; t < T; t++)
                    for (int r = 0; r < 4; r++) {
                        float want = g->dot_f32(w + r * N, x + t * N, n) + (acc ? 0.25f : 0);
                        ASSERT(fabsf(y[t * 4 + r] - want) <= 1e-4f * (1 + fabsf(want)));
                    }
                /* and bitwise what each row gets alone (the one-row tile):
                 * a batch (a speculative check) changes no row's result */
                if (k->tile_f32)
                    for (int t = 0; t < T; t++) {
                        float one[4] = {0.25f, 0.25f, 0.25f, 0.25f};
                        k->tile_f32(w, N, x + t * N, N, 1, n, one, 4, acc);
                        ASSERT(memcmp(one, y + t * 4, sizeof one) == 0);
                    }
            }
}

TEST(f32_batch_tile_agrees)
{
    on_vector_tables(has_tile_f32w, f32_batch_tile_agrees_on, "an F32 batch tile");
}

/* The quantized tile (tile_q, where a table has it) against the portable
 * dot products: 4 Q8_0 / Q4_0 weight rows in the file's layout times
 * T = 1..4 activation rows, with and without accumulating; one weight row
 * of constant values (every Q8_0 value 127: pair sums at the int16 limit
 * of vpmaddubsw). On the avx2 table each row's sums are bitwise what it
 * gets alone (T = 1) in any place of the tile. And synor__llm_matmul
 * (tiles and the rows around them) over rows [1, 14) of 15 for 1..9 rows. */
static void quantized_tile_agrees_on(const llm_kernels *k)
{
    enum { R = 15, C = 160, NB = C / 32, TMAX = 9 };
    const llm_kernels *g = &synor__llm_kernels_generic;
    static float w[R * C], x[TMAX * C];
    uint64_t st = 29;
    fill(w, R * C, &st, 700.0f);
    fill(x, TMAX * C, &st, 900.0f);
    for (int i = 0; i < C; i++)
        w[2 * C + i] = 0.75f;
    for (int i = 0; i < 32; i++)
        x[C + i] = -1.25f; /* row 1's first block all -127 */
    static int8_t q[TMAX * C];
    static uint8_t u[TMAX * C];
    static float d[TMAX * NB], c8[TMAX * NB];
    llm_qrow qx[TMAX];
    quantize_rows(x, TMAX, C, q, u, d, c8, qx);
    int alone = strcmp(k->isa, "avx2") == 0;
    for (int q4 = 0; q4 < 2; q4++) {
        synor_ttype ty = q4 ? SYNOR_TTYPE_Q4_0 : SYNOR_TTYPE_Q8_0;
        size_t rb = (size_t)NB * (q4 ? 18 : 34);
        static uint8_t data[R * C * 2];
        for (int r = 0; r < R; r++)
            ASSERT_OK(synor_ttype_quantize(ty, w + r * C, data + r * rb, C));
        for (int T = 1; T <= 4; T++)
            for (int acc = 0; acc < 2; acc++)
                for (int t0 = 0; t0 + T <= TMAX; t0 += 3) {
                    float y[4 * 5];
                    for (int i = 0; i < 4 * 5; i++)
                        y[i] = 0.25f * (float)(i % 3);
                    k->tile_q(data, rb, qx + t0, T, NB, q4, y, 5, acc);
                    for (int t = 0; t < 4; t++)
                        for (int r = 0; r < 5; r++) {
                            float got = y[t * 5 + r], base = 0.25f * (float)((t * 5 + r) % 3);
                            if (t >= T || r >= 4) { /* outside the tile: untouched */
                                ASSERT(got == base);
                                continue;
                            }
                            const uint8_t *row = data + (size_t)r * rb;
                            const llm_qrow *a = &qx[t0 + t];
                            float want = (q4 ? g->dot_q4_0(row, a->q, a->d, a->c8, NB)
                                             : g->dot_q8_0(row, a->q, a->d, NB)) +
                                         (acc ? base : 0);
                            ASSERT(fabsf(got - want) <= 1e-4f * (1 + fabsf(want)));
                            if (alone) {
                                float one[4] = {base, base, base, base};
                                k->tile_q(data, rb, a, 1, NB, q4, one, 4, acc);
                                ASSERT(memcmp(&one[r], &got, sizeof got) == 0);
                            }
                        }
                }
        llm_mat m = {.type = ty, .rows = R, .cols = C, .data = data, .row_bytes = rb};
        for (int T = 1; T <= TMAX; T++)
            for (int acc = 0; acc < 2; acc++) {
                static float y[TMAX * R];
                for (int i = 0; i < TMAX * R; i++)
                    y[i] = 0.25f;
                synor__llm_matmul(k, &m, 1, R - 1, T, NULL, 0, qx, y, R, acc);
                for (int t = 0; t < T; t++)
                    for (int r = 0; r < R; r++) {
                        float got = y[t * R + r];
                        if (r < 1 || r >= R - 1) {
                            ASSERT(got == 0.25f);
                            continue;
                        }
                        const uint8_t *row = data + (size_t)r * rb;
                        float want = (q4 ? g->dot_q4_0(row, qx[t].q, qx[t].d, qx[t].c8, NB)
                                         : g->dot_q8_0(row, qx[t].q, qx[t].d, NB)) +
                                     (acc ? 0.25f : 0);
                        ASSERT(fabsf(got - want) <= 1e-4f * (1 + fabsf(want)));
                    }
            }
    }
}

TEST(quantized_tile_agrees)
{
    on_vector_tables(has_tile_q, quantized_tile_agrees_on, "a quantized tile");
}

/* synor__llm_matmul on F32 weights for batches of every size the engine
 * uses (a decode row, serving steps, prefills longer than one block of
 * LLM_F32W_BLOCK rows) over a row range not a multiple of 4, with and
 * without accumulating, against the portable dot products. */
TEST(f32_batches_of_any_size_agree)
{
    enum { R = 23, C = 72, TMAX = 2 * LLM_F32W_BLOCK + 9 };
    const llm_kernels *k = synor__llm_kernels(), *g = &synor__llm_kernels_generic;
    static float w[R * C], x[TMAX * C], y[TMAX * R];
    uint64_t st = 17;
    fill(w, R * C, &st, 700.0f);
    fill(x, TMAX * C, &st, 900.0f);
    llm_mat m = {.type = SYNOR_TTYPE_F32, .rows = R, .cols = C, .data = (const uint8_t *)w,
                 .row_bytes = C * sizeof(float)};
    const int sizes[] = {1, 5, LLM_F32W_MIN_ROWS, 16, LLM_F32W_BLOCK, LLM_F32W_BLOCK + 1, TMAX};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int acc = 0; acc < 2; acc++) {
            int T = sizes[s];
            for (int i = 0; i < TMAX * R; i++)
                y[i] = 0.25f;
            synor__llm_matmul(k, &m, 2, 21, T, x, C, NULL, y, R, acc);
            for (int t = 0; t < T; t++)
                for (int r = 0; r < R; r++) {
                    float got = y[t * R + r];
                    if (r < 2 || r >= 21) { /* outside the range: untouched */
                        ASSERT(got == 0.25f);
                        continue;
                    }
                    float want = g->dot_f32(w + r * C, x + t * C, C) + (acc ? 0.25f : 0);
                    ASSERT(fabsf(got - want) <= 1e-4f * (1 + fabsf(want)));
                }
        }
}

/* A row's F32 product in a batch of T = 2..19 rows is bitwise what it gets
 * alone (T = 1), whatever tile or pass the batch takes and whatever the
 * weights prefetch (up to 6 rows the first pass prefetches 8 rows on,
 * beyond that every pass a share of the block 4 rows on: 19 rows are 4
 * passes, the last one a single row), for every kernel table this CPU
 * runs (portable, AVX2, AVX-512; the portable one up to 15 rows, below
 * OpenBLAS's threshold): a
 * speculative check (k + 1 rows) or a serving step changes no row's logits. Rows [1, 36) of 37 (a range not a multiple of 4, long
 * enough for the prefetch of LLM_F32W_AHEAD rows on), 200 columns (a
 * tail of 8), with and without accumulating. */
TEST(f32_rows_in_a_batch_are_bitwise_alone)
{
    enum { R = 37, C = 200, TMAX = 19 };
    const llm_kernels *tables[3] = {&synor__llm_kernels_generic, NULL, NULL};
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        tables[1] = &synor__llm_kernels_avx2;
    if (synor__llm_kernels() == &synor__llm_kernels_avx512)
        tables[2] = &synor__llm_kernels_avx512;
#endif
    static float w[R * C], x[TMAX * C], y[TMAX * R], one[R];
    uint64_t st = 23;
    fill(w, R * C, &st, 700.0f);
    fill(x, TMAX * C, &st, 900.0f);
    llm_mat m = {.type = SYNOR_TTYPE_F32, .rows = R, .cols = C, .data = (const uint8_t *)w,
                 .row_bytes = C * sizeof(float)};
    int ran = 0;
    for (int k = 0; k < 3; k++) {
        if (!tables[k])
            continue;
        ran++;
        /* without the F32 tile, 16 rows or more may go to OpenBLAS's SGEMM
         * (its own order): the portable table up to 15 */
        int tmax = tables[k]->tile_f32w ? TMAX : 15;
        for (int T = 2; T <= tmax; T++)
            for (int acc = 0; acc < 2; acc++) {
                for (int i = 0; i < TMAX * R; i++)
                    y[i] = 0.5f + (float)(i % 7);
                synor__llm_matmul(tables[k], &m, 1, R - 1, T, x, C, NULL, y, R, acc);
                for (int t = 0; t < T; t++) {
                    for (int r = 0; r < R; r++)
                        one[r] = 0.5f + (float)((t * R + r) % 7);
                    synor__llm_matmul(tables[k], &m, 1, R - 1, 1, x + t * C, C, NULL, one, R, acc);
                    ASSERT(memcmp(one, y + t * R, sizeof one) == 0);
                }
            }
    }
    fprintf(stderr, "  %d kernel table(s) checked\n", ran);
}

/* F32 weights packed in groups of 4 rows (pack.c), where the kernels
 * have tile_f32p: synor__llm_matmul gives bitwise what it gives on the
 * file's layout, for batches of 1..19 rows (one pass, several passes, the
 * prefetch of the next group), over ranges that start on a group (the
 * packed path), inside one (the file's layout) and end past the last
 * whole group; 203 columns (a tail of 3, zero-padded in the packing). */
static void f32_packed_is_bitwise_unpacked_on(const llm_kernels *k)
{
    enum { R = 38, C = 203, TMAX = 19 };
    static float w[R * C], x[TMAX * C], yp[TMAX * R], yu[TMAX * R];
    uint64_t st = 29;
    fill(w, R * C, &st, 700.0f);
    fill(x, TMAX * C, &st, 900.0f);
    llm_mat m = {.type = SYNOR_TTYPE_F32, .rows = R, .cols = C, .data = (const uint8_t *)w,
                 .row_bytes = C * sizeof(float)};
    ASSERT(synor__llm_packable(&m));
    ASSERT_EQ(synor__llm_pack_size(&m), (size_t)(R / 4) * 4 * 208 * sizeof(float));
    uint8_t *pk = malloc(synor__llm_pack_size(&m));
    ASSERT(pk != NULL);
    llm_mat plain = m;
    synor__llm_pack(&m, pk);
    ASSERT(m.pack == pk);
    /* the layout: row j of group g, column c at g * 4 * 208 + (c / 8) * 32 + j * 8 + c % 8 */
    const float *pf = (const float *)(const void *)pk;
    ASSERT(pf[1 * 832 + (200 / 8) * 32 + 2 * 8 + 1] == w[(4 + 2) * C + 201]);
    ASSERT(pf[1 * 832 + (200 / 8) * 32 + 2 * 8 + 5] == 0.0f);
    static const int ranges[][2] = {{0, R}, {4, 36}, {1, 35}, {16, 38}};
    for (int T = 1; T <= TMAX; T++)
        for (int g = 0; g < 4; g++)
            for (int acc = 0; acc < 2; acc++) {
                for (int i = 0; i < TMAX * R; i++)
                    yp[i] = yu[i] = 0.5f + (float)(i % 7);
                synor__llm_matmul(k, &m, ranges[g][0], ranges[g][1], T, x, C, NULL, yp, R, acc);
                synor__llm_matmul(k, &plain, ranges[g][0], ranges[g][1], T, x, C, NULL, yu, R,
                                  acc);
                ASSERT(memcmp(yp, yu, sizeof yp) == 0);
            }
    free(pk);
}

TEST(f32_packed_is_bitwise_unpacked)
{
    on_vector_tables(has_tile_f32p, f32_packed_is_bitwise_unpacked_on, "packed F32 weights");
}

/* The attention kernels (where the CPU has them) against the portable
 * loops: heads of 16, 64 and 20 floats (no vector path), 1..16 positions
 * a stride apart. */
static void attention_kernels_agree_on(const llm_kernels *k)
{
    const llm_kernels *g = &synor__llm_kernels_generic;
    enum { HS = 64, KS = 72, NPOS = 16 };
    static float q[HS], kv[NPOS * KS], a[NPOS], s1[NPOS], o1[HS], o2[HS];
    uint64_t st = 9;
    for (int i = 0; i < NPOS * KS; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        kv[i] = (float)((int)(st >> 40) % 2001 - 1000) / 700.0f;
        if (i < HS)
            q[i] = kv[i] * 0.3f;
        if (i < NPOS)
            a[i] = (float)((int)(st >> 20) % 1000) / 1000.0f;
    }
    static const int heads[] = {16, 64, 20};
    for (int h = 0; h < 3; h++)
        for (int np = 1; np <= NPOS; np++) {
            int hs = heads[h];
            k->att_scores(q, kv, KS, np, hs, 0.125f, s1);
            for (int p = 0; p < np; p++) {
                float want = g->dot_f32(q, kv + p * KS, hs) * 0.125f;
                ASSERT(fabsf(s1[p] - want) <= 1e-5f * (1 + fabsf(want)));
            }
            for (int i = 0; i < hs; i++)
                o1[i] = o2[i] = 0.5f;
            k->att_mix(a, kv, KS, np, hs, o1);
            for (int p = 0; p < np; p++)
                g->axpy(a[p], kv + p * KS, o2, hs);
            for (int i = 0; i < hs; i++)
                ASSERT(fabsf(o1[i] - o2[i]) <= 1e-5f * (1 + fabsf(o2[i])));
        }
}

TEST(attention_kernels_agree)
{
    on_vector_tables(has_attention, attention_kernels_agree_on, "attention kernels");
}

/* The vectorized softmax and SwiGLU against the portable loops (expf):
 * within 1e-6 relative on values from the tiny to the saturating, every
 * length around the vector width, exp's range ends (0, inf) kept, and an
 * element's result the same wherever it sits in the row. */
static void elementwise_kernels_agree_on(const llm_kernels *k)
{
    enum { N = 70 };
    static float x[N], a[N], b[N], h3[N];
    uint64_t st = 5;
    for (int i = 0; i < N; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((int)(st >> 40) % 20001 - 10000) / 500.0f; /* -20 .. 20 */
        h3[i] = (float)((int)(st >> 20) % 2001 - 1000) / 300.0f;
    }
    x[3] = 95.0f;   /* e^-95 underflows in SiLU's denominator: silu(x) = x */
    x[4] = -95.0f;  /* e^95 overflows: silu = -0 */
    x[5] = 0.0f;
    for (int n = 1; n <= N; n++) {
        memcpy(a, x, sizeof x);
        memcpy(b, x, sizeof x);
        k->softmax(a, n);
        synor__llm_softmax(b, n);
        for (int i = 0; i < n; i++)
            ASSERT(fabsf(a[i] - b[i]) <= 1e-6f * fabsf(b[i]) + 1e-30f);
        memcpy(a, x, sizeof x);
        memcpy(b, x, sizeof x);
        k->swiglu(a, h3, n);
        synor__llm_swiglu(b, h3, n);
        for (int i = 0; i < n; i++)
            ASSERT(fabsf(a[i] - b[i]) <= 1e-6f * fabsf(b[i]) + 1e-30f);
    }
    /* element-wise: the same value at another place gives the same bits */
    memcpy(a, x, sizeof x);
    k->swiglu(a, h3, N);
    for (int i = 0; i < N; i++) {
        float one = x[i];
        k->swiglu(&one, &h3[i], 1);
        ASSERT(memcmp(&one, &a[i], sizeof one) == 0);
    }
}

TEST(elementwise_kernels_agree)
{
    on_vector_tables(has_elementwise, elementwise_kernels_agree_on, "element-wise kernels");
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
    char p[128];
    path_of(p, sizeof p, "no-pack.gguf");
    synor_llm_synth s = tiny();
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_Q8_0, p));
    synor_llm_load_opts plain = {.no_pack = 1};
    synor_llm *m0, *m1;
    ASSERT_OK(synor_llm_load(p, &plain, &m0));
    ASSERT_OK(synor_llm_load(p, NULL, &m1));
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

TEST_MAIN(f32_matches_reference, packed_products_agree, quantized_tile_agrees,
          f32_packed_is_bitwise_unpacked, elementwise_kernels_agree, f32_batch_tile_agrees,
          f32_batches_of_any_size_agree, f32_rows_in_a_batch_are_bitwise_alone,
          attention_kernels_agree, packing_while_another_context_runs,
          no_pack_keeps_the_file_layout,
          quantized_close_to_reference, batches_agree_with_single_tokens,
          llama2c_checkpoint_same_as_gguf, kv_pool_exhaustion_changes_nothing,
          context_length_is_enforced, kernels_agree_with_portable, sampler,
          missing_or_misshapen_tensor_is_named, embeddings,
          resumed_generation_rebuilds_the_same_cache, cleanup)
