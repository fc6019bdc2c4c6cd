/* bench_cache.c - the response caches (issue 12 point 7):
 *   1. exact cache, memory tier: latency of a hit, end to end in-process
 *      (key built, looked up, value copied out), p50/p99 of 100,000;
 *   2. exact cache, disk tier (SQLite, reopened so memory is cold): p50/p99
 *      of a hit and of a miss;
 *   3. semantic cache with a model's embeddings (synor_llm_embed): on a
 *      paraphrase set written for this benchmark, the hit rate of
 *      paraphrases and the false-hit rate of unrelated prompts per
 *      threshold, and the lookup time of an exact scan by entry count.
 *
 *   4. (--index) the semantic cache's two indexes without a model, on
 *      vectors with clusters (as embeddings have: 1 centre per 20 entries,
 *      each entry its centre plus noise): per dimension and entry count,
 *      the time of an add and of a lookup of the exact scan and of
 *      hnswlib's HNSW graph, and the graph's recall - how often it returns
 *      the entry the scan returns - for "paraphrases" (an entry plus
 *      noise: similarity ~0.97 to it) and whether it hits exactly when the
 *      scan does at the threshold (0.9).
 *
 *   With -m, --recall N adds the indexes' agreement on the model's own
 *   embeddings: N prompts cut from --text FILE (default docs/BENCHMARKS.md)
 *   and 400 paraphrases of them (recall(), below).
 *
 *   bench_cache [-m MODEL.gguf [--recall N] [--text FILE]] [--dir DIR]
 *               [--index [DIMS [ENTRIES]]]
 *   e.g. --index 288,768 1000,4096,10000,100000 (the defaults)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"
#include "synor.h"

static void pct(const char *what, double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    printf("  %-34s p50 %8.2f us   p99 %8.2f us   (%d)\n", what, t[n / 2] * 1e6,
           t[(int)(n * 0.99)] * 1e6, n);
}

/* Prompts and a paraphrase of each (same request in other words), then
 * prompts unrelated to all of them. */
static const char *const base[][2] = {
    {"Tell me a story about a little girl who loved to play in the park.",
     "Tell me a story about a small girl who liked playing in the park."},
    {"What is the capital city of France?", "Which city is the capital of France?"},
    {"How do I sort a list of numbers in C?", "How can I sort an array of numbers in C?"},
    {"Write a poem about the sea at night.", "Write a short poem about the ocean at night."},
    {"Explain how a heat pump works.", "Explain how heat pumps work."},
    {"Give me three ideas for a birthday party.", "Give me 3 ideas for a birthday party."},
    {"Translate good morning into Spanish.", "Translate 'good morning' to Spanish."},
    {"What is the price of electricity per kilowatt hour?",
     "How much does electricity cost per kilowatt hour?"},
    {"Summarise the plot of a detective novel.", "Summarize the plot of a detective story."},
    {"List the planets of the solar system.", "List all the planets in our solar system."},
};
static const char *const unrelated[] = {
    "How many legs does a spider have?",         "Recommend a good book about gardening.",
    "What time does the train to Berlin leave?", "Describe the taste of a lemon.",
    "Why is the sky blue during the day?",       "Convert 100 degrees Fahrenheit to Celsius.",
    "Who invented the printing press?",          "Plan a three day trip to the mountains.",
    "What should I cook for dinner tonight?",    "How does a compiler optimise a loop?",
};
#define NB (int)(sizeof base / sizeof base[0])
#define NU (int)(sizeof unrelated / sizeof unrelated[0])

static void exact(const char *dir)
{
    enum { N = 100000, KEYS = 1000 };
    synor_cache_opts o = {.mem_bytes = 64ull << 20};
    synor_cache *c;
    if (synor_cache_open(&o, &c)) {
        fprintf(stderr, "bench_cache: %s\n", synor_errmsg());
        exit(1);
    }
    char answer[1024];
    memset(answer, 'a', sizeof answer);
    char key[512];
    for (int i = 0; i < KEYS; i++) {
        char prompt[64];
        snprintf(prompt, sizeof prompt, "prompt number %d", i);
        size_t n = synor_cache_key(key, sizeof key, "s15", prompt, 64, 0, 0, 1, 0);
        synor_cache_put(c, key, n, answer, sizeof answer);
    }
    double *t = malloc(N * sizeof *t);
    for (int i = 0; i < N; i++) {
        char prompt[64], *v;
        size_t len;
        snprintf(prompt, sizeof prompt, "prompt number %d", i % KEYS);
        double t0 = now();
        size_t n = synor_cache_key(key, sizeof key, "s15", prompt, 64, 0, 0, 1, 0);
        int e = synor_cache_get(c, key, n, &v, &len, NULL);
        t[i] = now() - t0;
        if (!e)
            free(v);
    }
    printf("exact cache, %d entries of 1 KiB:\n", KEYS);
    pct("memory hit (key + get + copy)", t, N);
    synor_cache_close(c);

    char path[512];
    snprintf(path, sizeof path, "%s/bench-cache.db", dir);
    unlink(path);
    o.disk_path = path;
    if (synor_cache_open(&o, &c))
        exit(1);
    for (int i = 0; i < KEYS; i++) {
        char prompt[64];
        snprintf(prompt, sizeof prompt, "prompt number %d", i);
        size_t n = synor_cache_key(key, sizeof key, "s15", prompt, 64, 0, 0, 1, 0);
        synor_cache_put(c, key, n, answer, sizeof answer);
    }
    synor_cache_close(c);
    o.mem_bytes = 1; /* nothing promoted stays: every get goes to disk */
    if (synor_cache_open(&o, &c))
        exit(1);
    double *m = malloc(KEYS * sizeof *m);
    for (int i = 0; i < KEYS; i++) {
        char prompt[64], *v;
        size_t len;
        snprintf(prompt, sizeof prompt, "prompt number %d", i);
        size_t n = synor_cache_key(key, sizeof key, "s15", prompt, 64, 0, 0, 1, 0);
        double t0 = now();
        if (synor_cache_get(c, key, n, &v, &len, NULL) == 0)
            free(v);
        t[i] = now() - t0;
        snprintf(prompt, sizeof prompt, "absent %d", i);
        n = synor_cache_key(key, sizeof key, "s15", prompt, 64, 0, 0, 1, 0);
        t0 = now();
        synor_cache_get(c, key, n, &v, &len, NULL);
        m[i] = now() - t0;
    }
    pct("disk hit (SQLite, WAL)", t, KEYS);
    pct("disk miss", m, KEYS);
    synor_cache_close(c);
    unlink(path);
    free(t);
    free(m);
}

/* The two indexes on the model's own embeddings (--recall N): N prompts
 * of 12 words cut from a text (--text, default docs/BENCHMARKS.md, 18
 * words apart), in an exact and an HNSW cache; 400 "paraphrases" - a
 * prompt with its 7th word dropped and the text's next word appended -
 * looked up in both. Real hidden states are anisotropic (they share a
 * common direction), the harder case for a graph. */
static int recall_entries;
static const char *recall_text = "docs/BENCHMARKS.md";

static char **words_of(const char *path, size_t *nw)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_cache: %s cannot be read\n", path);
        exit(1);
    }
    size_t cap = 1 << 16, n = 0;
    char **w = malloc(cap * sizeof *w), buf[256];
    while (fscanf(f, "%255s", buf) == 1) {
        if (n == cap)
            w = realloc(w, (cap *= 2) * sizeof *w);
        w[n++] = strdup(buf);
    }
    fclose(f);
    *nw = n;
    return w;
}

static void join(char **w, size_t at, int n, int skip, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < n + (skip >= 0); i++) {
        if (i == skip)
            continue;
        int k = snprintf(out + o, cap - o, "%s%s", o ? " " : "", w[at + (size_t)i]);
        if (k < 0 || (size_t)k >= cap - o)
            break;
        o += (size_t)k;
    }
}

static void recall(synor_llm_ctx *c, int dim)
{
    size_t nw;
    char **w = words_of(recall_text, &nw);
    size_t n = (size_t)recall_entries;
    if (nw < n * 18 + 20) {
        fprintf(stderr, "bench_cache: %s has %zu words, too few for %zu prompts\n",
                recall_text, nw, n);
        exit(1);
    }
    float *e = malloc(n * (size_t)dim * sizeof *e), *q = malloc((size_t)dim * sizeof *q);
    char prompt[512], val[24];
    double t0 = now();
    synor_semcache_opts o = {.dim = dim, .threshold = 0.9f, .max_entries = n,
                             .index = SYNOR_SEMCACHE_EXACT};
    synor_semcache *ex, *hn;
    synor_semcache_open(&o, &ex);
    o.index = SYNOR_SEMCACHE_HNSW;
    if (synor_semcache_open(&o, &hn)) {
        printf("  index recall: %s\n", synor_errmsg());
        synor_semcache_destroy(ex);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        join(w, i * 18, 12, -1, prompt, sizeof prompt);
        synor_llm_embed(c, 0, prompt, e + i * (size_t)dim);
        snprintf(val, sizeof val, "%zu", i);
        synor_semcache_add(ex, e + i * (size_t)dim, val, strlen(val));
        synor_semcache_add(hn, e + i * (size_t)dim, val, strlen(val));
    }
    double embed_s = now() - t0;
    enum { Q = 400 };
    int same = 0, agree = 0, hits_ex = 0, right_ex = 0, right_hn = 0;
    double te[Q], th[Q];
    float worst = 1;
    for (int k = 0; k < Q; k++) {
        size_t i = (size_t)k * 7919 % n;
        join(w, i * 18, 12, 6, prompt, sizeof prompt);
        synor_llm_embed(c, 0, prompt, q);
        float se, sh;
        char *a = NULL, *b = NULL;
        size_t la, lb;
        double a0 = now();
        int ra = synor_semcache_lookup(ex, q, &se, &a, &la);
        double a1 = now();
        int rb = synor_semcache_lookup(hn, q, &sh, &b, &lb);
        th[k] = now() - a1;
        te[k] = a1 - a0;
        hits_ex += ra == 0;
        agree += (ra == 0) == (rb == 0);
        same += (ra == 0 && rb == 0 && !strcmp(a, b)) || (ra != 0 && rb != 0);
        right_ex += ra == 0 && (size_t)atoi(a) == i;
        right_hn += rb == 0 && (size_t)atoi(b) == i;
        if (se - sh > 1 - worst)
            worst = 1 - (se - sh);
        free(a);
        free(b);
    }
    qsort(te, Q, sizeof *te, cmp_d);
    qsort(th, Q, sizeof *th, cmp_d);
    printf("  index recall on the model's embeddings: %zu prompts of 12 words from %s "
           "(embedded in %.1f s), %d paraphrases (7th word dropped), threshold 0.9:\n"
           "    exact: %d hits (%d to the prompt paraphrased), lookup p50 %.1f us p99 %.1f us\n"
           "    hnsw (ef %d): the scan's entry (or both missing) %d/%d, hit/miss agree %d/%d, "
           "%d to the prompt paraphrased, lookup p50 %.1f us p99 %.1f us, largest similarity "
           "lost %.4f\n",
           n, recall_text, embed_s, Q, hits_ex, right_ex, te[Q / 2] * 1e6,
           te[(int)(Q * 0.99)] * 1e6, SYNOR_SEMCACHE_EF_SEARCH, same, Q, agree, Q, right_hn,
           th[Q / 2] * 1e6, th[(int)(Q * 0.99)] * 1e6, 1 - worst);
    synor_semcache_destroy(ex);
    synor_semcache_destroy(hn);
    for (size_t i = 0; i < nw; i++)
        free(w[i]);
    free(w);
    free(e);
    free(q);
}

static void semantic(const char *model)
{
    synor_llm *m;
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = 2;
    cfg.opencl = SYNOR_OPENCL_OFF;
    cfg.cuda = 0;
    synor_runtime *rt;
    synor_llm_ctx *c;
    if (synor_llm_load(model, NULL, &m) || synor_runtime_create(&cfg, &rt) ||
        synor_runtime_start(rt) || synor_llm_ctx_create(m, rt, NULL, &c)) {
        fprintf(stderr, "bench_cache: %s\n", synor_errmsg());
        exit(1);
    }
    int dim = synor_llm_hparams_get(m)->dim;
    float *eb = malloc((size_t)NB * dim * sizeof *eb), *ep = malloc((size_t)NB * dim * sizeof *ep);
    float *eu = malloc((size_t)NU * dim * sizeof *eu);
    for (int i = 0; i < NB; i++) {
        synor_llm_embed(c, 0, base[i][0], eb + (size_t)i * dim);
        synor_llm_embed(c, 0, base[i][1], ep + (size_t)i * dim);
    }
    for (int i = 0; i < NU; i++)
        synor_llm_embed(c, 0, unrelated[i], eu + (size_t)i * dim);
    printf("semantic cache, embeddings of %s (dim %d), %d prompts, %d paraphrases, %d "
           "unrelated:\n",
           model, dim, NB, NB, NU);
    static const float th[] = {0.80f, 0.90f, 0.95f, 0.98f, 0.99f};
    for (size_t k = 0; k < sizeof th / sizeof th[0]; k++) {
        synor_semcache *s;
        synor_semcache_create(dim, th[k], 1024, &s);
        for (int i = 0; i < NB; i++) {
            char v[8];
            snprintf(v, sizeof v, "%d", i);
            synor_semcache_add(s, eb + (size_t)i * dim, v, strlen(v));
        }
        int hits = 0, right = 0, false_hits = 0;
        float sim;
        char *v;
        size_t n;
        for (int i = 0; i < NB; i++)
            if (synor_semcache_lookup(s, ep + (size_t)i * dim, &sim, &v, &n) == 0) {
                hits++;
                right += atoi(v) == i;
                free(v);
            }
        for (int i = 0; i < NU; i++)
            if (synor_semcache_lookup(s, eu + (size_t)i * dim, &sim, &v, &n) == 0) {
                false_hits++;
                free(v);
            }
        printf("  threshold %.2f: paraphrase hits %d/%d (%d to the right prompt), false hits "
               "%d/%d unrelated\n",
               th[k], hits, NB, right, false_hits, NU);
        synor_semcache_destroy(s);
    }
    if (recall_entries > 0)
        recall(c, dim);
    /* lookup time of the exact scan by size */
    for (size_t entries = 1000; entries <= 100000; entries *= 10) {
        synor_semcache *s;
        synor_semcache_create(dim, 0.99f, entries, &s);
        float *v = malloc((size_t)dim * sizeof *v);
        for (size_t i = 0; i < entries; i++) {
            for (int j = 0; j < dim; j++)
                v[j] = (float)((i * 2654435761u + (size_t)j * 40503u) % 1000) - 500.0f;
            synor_semcache_add(s, v, "x", 1);
        }
        double t[200];
        for (int i = 0; i < 200; i++) {
            float sim;
            char *val;
            size_t n;
            double t0 = now();
            if (synor_semcache_lookup(s, eb + (size_t)(i % NB) * dim, &sim, &val, &n) == 0)
                free(val);
            t[i] = now() - t0;
        }
        char what[64];
        snprintf(what, sizeof what, "semantic lookup, %zu entries", entries);
        pct(what, t, 200);
        free(v);
        synor_semcache_destroy(s);
    }
    free(eb);
    free(ep);
    free(eu);
    synor_llm_ctx_destroy(c);
    synor_runtime_destroy(rt);
    synor_llm_destroy(m);
}

/* Section 4: the indexes. */
static uint64_t irng;
static float urand(void)
{
    irng = irng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(irng >> 11) * 0x1.0p-53 * 2 - 1);
}

/* entry i: centre i / 20 plus noise of relative size 0.5; a paraphrase of
 * entry i: entry i plus noise of relative size 0.15 */
static void ivec(int dim, size_t i, float noise, uint64_t salt, float *out)
{
    irng = (i / 20) * 0x9E3779B97F4A7C15ull + 1;
    for (int j = 0; j < dim; j++)
        out[j] = urand();
    irng = i * 0xBF58476D1CE4E5B9ull + 7;
    for (int j = 0; j < dim; j++)
        out[j] += 0.5f * urand();
    if (noise > 0) {
        irng = i * 0x94D049BB133111EBull + salt;
        for (int j = 0; j < dim; j++)
            out[j] += noise * urand();
    }
}

static void index_one(int dim, size_t entries, unsigned index, int ef)
{
    synor_semcache_opts o = {.dim = dim, .threshold = 0.9f, .max_entries = entries,
                             .index = index, .hnsw_ef_search = ef};
    synor_semcache *s, *ref = NULL;
    if (synor_semcache_open(&o, &s)) {
        printf("  %s: %s\n", synor_semcache_index_name(index), synor_errmsg());
        return;
    }
    if (index == SYNOR_SEMCACHE_HNSW) { /* the scan's answers to compare with */
        o.index = SYNOR_SEMCACHE_EXACT;
        synor_semcache_open(&o, &ref);
    }
    float *v = malloc((size_t)dim * sizeof *v);
    double *ta = malloc(entries * sizeof *ta), t0 = now();
    char val[24];
    for (size_t i = 0; i < entries; i++) {
        ivec(dim, i, 0, 0, v);
        snprintf(val, sizeof val, "%zu", i);
        double a = now();
        synor_semcache_add(s, v, val, strlen(val));
        ta[i] = now() - a;
        if (ref)
            synor_semcache_add(ref, v, val, strlen(val));
    }
    double build = now() - t0 - 0; /* ref's adds are outside ta, inside build: not printed */
    (void)build;
    enum { Q = 400 };
    double tl[Q];
    int same = 0, agree = 0, hits = 0;
    for (int q = 0; q < Q; q++) {
        size_t i = (size_t)q * 7919 % entries;
        if (q % 4 == 3) /* an unrelated prompt: a centre no entry has */
            ivec(dim, (entries + (size_t)q) * 20, 0, 0, v);
        else
            ivec(dim, i, 0.15f, (uint64_t)q, v);
        float sim, rsim;
        char *got = NULL, *want = NULL;
        size_t n;
        double a = now();
        int r = synor_semcache_lookup(s, v, &sim, &got, &n);
        tl[q] = now() - a;
        hits += r == 0;
        if (ref) {
            int rr = synor_semcache_lookup(ref, v, &rsim, &want, &n);
            agree += (r == 0) == (rr == 0);
            same += r == 0 && rr == 0 && !strcmp(got, want);
            same += r != 0 && rr != 0;
            free(want);
        }
        free(got);
    }
    qsort(ta, entries, sizeof *ta, cmp_d);
    qsort(tl, Q, sizeof *tl, cmp_d);
    printf("  dim %4d %7zu entries %-5s", dim, entries, synor_semcache_index_name(index));
    if (index == SYNOR_SEMCACHE_HNSW)
        printf(" ef %3d", ef ? ef : SYNOR_SEMCACHE_EF_SEARCH);
    else
        printf("       ");
    printf("  add p50 %7.1f us p99 %7.1f us  lookup p50 %8.1f us p99 %8.1f us  hits %d/%d",
           ta[entries / 2] * 1e6, ta[(size_t)((double)entries * 0.99)] * 1e6, tl[Q / 2] * 1e6,
           tl[(int)(Q * 0.99)] * 1e6, hits, Q);
    if (ref)
        printf("  same entry %d/%d, hit/miss agree %d/%d", same, Q, agree, Q);
    printf("\n");
    free(v);
    free(ta);
    synor_semcache_destroy(s);
    synor_semcache_destroy(ref);
}

static void indexes(const char *dims, const char *counts)
{
    printf("semantic cache indexes (clustered vectors; 3 of 4 lookups a paraphrase of an "
           "entry, 1 unrelated; threshold 0.9):\n");
    for (const char *d = dims; *d;) {
        int dim = atoi(d);
        for (const char *c = counts; *c;) {
            size_t n = (size_t)strtoull(c, NULL, 10);
            index_one(dim, n, SYNOR_SEMCACHE_EXACT, 0);
            index_one(dim, n, SYNOR_SEMCACHE_HNSW, 0);
            if (n >= 10000) {
                index_one(dim, n, SYNOR_SEMCACHE_HNSW, 16);
                index_one(dim, n, SYNOR_SEMCACHE_HNSW, 200);
            }
            fflush(stdout);
            c = strchr(c, ',') ? strchr(c, ',') + 1 : c + strlen(c);
        }
        d = strchr(d, ',') ? strchr(d, ',') + 1 : d + strlen(d);
    }
}

/* Request-level speculation on a synthetic trace (the seed's "predictable
 * workloads"): 40 users, 5 flows of 5 requests; a user follows a flow of
 * its own in 80% of its sessions, another flow otherwise, and 15% of the
 * steps are one-off requests. After each request the predictions with
 * probability > 0.3 (the seed's cut) would be computed in the background;
 * a hit is a next request among them. Measured over the second half of
 * 20,000 requests (the first half trains). */
static void speculation(void)
{
    synor_predictor *p;
    if (synor_predictor_create(1u << 16, &p))
        exit(1);
    uint64_t rng = 12345;
#define RND() (rng = rng * 6364136223846793005ull + 1442695040888963407ull, (rng >> 33))
    enum { USERS = 40, FLOWS = 5, STEPS = 5, TOTAL = 20000 };
    char pending[USERS][5][64]; /* each user's predicted next requests */
    int npend[USERS] = {0};
    long n = 0, hits = 0, precomputed = 0, counted = 0;
    while (n < TOTAL) {
        int u = (int)(RND() % USERS);
        int flow = RND() % 100 < 80 ? u % FLOWS : (int)(RND() % FLOWS);
        char user[16];
        snprintf(user, sizeof user, "user%d", u);
        for (int st = 0; st < STEPS && n < TOTAL; st++, n++) {
            char req[64];
            if (RND() % 100 < 15)
                snprintf(req, sizeof req, "one-off %llu", (unsigned long long)RND());
            else
                snprintf(req, sizeof req, "flow %d step %d", flow, st);
            if (n >= TOTAL / 2) {
                counted++;
                for (int i = 0; i < npend[u]; i++)
                    if (!strcmp(pending[u][i], req)) {
                        hits++;
                        break;
                    }
            }
            synor_predictor_observe(p, user, req);
            const char *next[5];
            float prob[5];
            int k = synor_predictor_predict(p, user, 5, next, prob);
            npend[u] = 0;
            for (int i = 0; i < k; i++)
                if (prob[i] > 0.3f)
                    snprintf(pending[u][npend[u]++], 64, "%s", next[i]);
            if (n >= TOTAL / 2)
                precomputed += npend[u];
        }
    }
    printf("request-level speculation, synthetic trace (%d users, %d flows, 15%% one-off "
           "requests):\n  hit rate %.1f%% of %ld requests, %.2f precomputed per request\n",
           USERS, FLOWS, 100.0 * hits / counted, counted, (double)precomputed / counted);
    synor_predictor_destroy(p);
}

int main(int argc, char **argv)
{
    const char *model = NULL, *dir = "/tmp";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--index")) {
            const char *dims = i + 1 < argc && argv[i + 1][0] != '-' ? argv[++i] : "288,768";
            const char *counts =
                i + 1 < argc && argv[i + 1][0] != '-' ? argv[++i] : "1000,4096,10000,100000";
            indexes(dims, counts);
            return 0;
        }
        if (i + 1 >= argc)
            break;
        if (!strcmp(argv[i], "-m"))
            model = argv[++i];
        else if (!strcmp(argv[i], "--recall"))
            recall_entries = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--text"))
            recall_text = argv[++i];
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[++i];
    }
    exact(dir);
    speculation();
    if (model)
        semantic(model);
    return 0;
}
