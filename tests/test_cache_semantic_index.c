/* test_cache_semantic_index.c - the semantic cache's two indexes: the
 * HNSW graph (hnswlib) against the exact scan on the same entries, AUTO's
 * switch between them, ring replacement inside the graph, bad options,
 * and the graph from several threads (also under ThreadSanitizer). The
 * graph's tests skip where the build has no hnswlib. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/hnsw.h"
#include "synor/cache.h"
#include "synor/error.h"
#include "test.h"

#define DIM 32

/* Deterministic vectors: entry i's, and a "paraphrase" of it (the same
 * vector with noise of relative size eps). */
static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

static void vec(uint64_t seed, float eps, float *out)
{
    uint64_t s = seed * 7919 + 1, n = seed * 104729 + 3;
    for (int j = 0; j < DIM; j++) {
        out[j] = (float)((double)lcg(&s) * 0x1.0p-53 - 0.5);
        out[j] += eps * (float)((double)lcg(&n) * 0x1.0p-53 - 0.5);
    }
}

static synor_semcache *open_index(unsigned index, size_t max, size_t exact_max)
{
    synor_semcache_opts o = {.dim = DIM, .threshold = 0.9f, .max_entries = max,
                             .index = index, .exact_max = exact_max};
    synor_semcache *s = NULL;
    if (synor_semcache_open(&o, &s))
        return NULL;
    return s;
}

static void add_entries(synor_semcache *s, int from, int to)
{
    for (int i = from; i < to; i++) {
        float v[DIM];
        char val[16];
        vec((uint64_t)i, 0, v);
        snprintf(val, sizeof val, "e%d", i);
        if (synor_semcache_add(s, v, val, strlen(val)))
            abort();
    }
}

/* How many of entries [from, to) a lookup of their own vector returns,
 * with similarity 1 (to 1e-5). */
static int found_by_own_vector(synor_semcache *s, int from, int to)
{
    int found = 0;
    for (int i = from; i < to; i++) {
        float v[DIM], sim;
        char *got = NULL, want[16];
        size_t n;
        vec((uint64_t)i, 0, v);
        snprintf(want, sizeof want, "e%d", i);
        if (synor_semcache_lookup(s, v, &sim, &got, &n) == 0 && !strcmp(got, want) &&
            fabsf(sim - 1.0f) < 1e-5f)
            found++;
        free(got);
    }
    return found;
}

TEST(hnsw_finds_what_the_scan_finds)
{
    if (!synor__hnsw_available())
        TEST_SKIP("built without hnswlib");
    synor_semcache *ex = open_index(SYNOR_SEMCACHE_EXACT, 3000, 0),
                   *hn = open_index(SYNOR_SEMCACHE_HNSW, 3000, 0);
    ASSERT(ex && hn);
    add_entries(ex, 0, 3000);
    add_entries(hn, 0, 3000);
    ASSERT_EQ(synor_semcache_index(ex), SYNOR_SEMCACHE_EXACT);
    ASSERT_EQ(synor_semcache_index(hn), SYNOR_SEMCACHE_HNSW);
    int same = 0, hits = 0, n = 300;
    for (int q = 0; q < n; q++) {
        float v[DIM], se, sh;
        char *a = NULL, *b = NULL;
        size_t la, lb;
        vec((uint64_t)(q * 10), 0.3f, v); /* near entry q * 10 */
        int ra = synor_semcache_lookup(ex, v, &se, &a, &la);
        int rb = synor_semcache_lookup(hn, v, &sh, &b, &lb);
        ASSERT(sh <= se + 1e-6f); /* the scan's is the best there is */
        if (ra == 0 && rb == 0 && !strcmp(a, b)) {
            same++;
            ASSERT(sh == se); /* the same entry: the same similarity, bit for bit */
        }
        hits += ra == 0;
        free(a);
        free(b);
    }
    /* near-duplicates, as a paraphrase is: the scan hits them all and the
     * graph (ef 64, 3,000 entries) finds the same entry for all but a few */
    ASSERT_EQ(hits, n);
    ASSERT(same >= n * 98 / 100);
    synor_semcache_destroy(ex);
    synor_semcache_destroy(hn);
}

TEST(auto_switches_past_exact_max)
{
    synor_semcache *s = open_index(SYNOR_SEMCACHE_AUTO, 200, 50);
    ASSERT(s);
    add_entries(s, 0, 50);
    ASSERT_EQ(synor_semcache_index(s), SYNOR_SEMCACHE_EXACT);
    add_entries(s, 50, 51);
    unsigned want = synor__hnsw_available() ? SYNOR_SEMCACHE_HNSW : SYNOR_SEMCACHE_EXACT;
    ASSERT_EQ(synor_semcache_index(s), want);
    add_entries(s, 51, 200);
    ASSERT_EQ(found_by_own_vector(s, 0, 200), 200);
    synor_semcache_destroy(s);
    /* a ring no larger than the switch never builds the graph */
    s = open_index(SYNOR_SEMCACHE_AUTO, 50, 50);
    add_entries(s, 0, 120);
    ASSERT_EQ(synor_semcache_index(s), SYNOR_SEMCACHE_EXACT);
    synor_semcache_destroy(s);
}

TEST(ring_replacement_in_the_graph)
{
    if (!synor__hnsw_available())
        TEST_SKIP("built without hnswlib");
    synor_semcache *s = open_index(SYNOR_SEMCACHE_HNSW, 100, 0);
    ASSERT(s);
    add_entries(s, 0, 350); /* slots reused three and a half times */
    ASSERT_EQ(synor_semcache_count(s), 100);
    ASSERT_EQ(found_by_own_vector(s, 250, 350), 100); /* the live ones */
    for (int i = 0; i < 250; i += 7) { /* the replaced ones are gone */
        float v[DIM], sim;
        char *got = NULL, old[16];
        size_t n;
        vec((uint64_t)i, 0, v);
        snprintf(old, sizeof old, "e%d", i);
        int r = synor_semcache_lookup(s, v, &sim, &got, &n);
        ASSERT(r == SYNOR_ENOENT || strcmp(got, old) != 0);
        ASSERT(sim < 0.9f);
        free(got);
    }
    float zero[DIM] = {0};
    ASSERT_EQ(synor_semcache_add(s, zero, "z", 1), SYNOR_EINVAL);
    ASSERT_EQ(synor_semcache_count(s), 100); /* unchanged */
    synor_semcache_destroy(s);
}

TEST(bad_options_are_named)
{
    synor_semcache *s = NULL;
    synor_semcache_opts o = {.dim = DIM, .threshold = 0.9f, .max_entries = 10, .index = 7};
    ASSERT_EQ(synor_semcache_open(&o, &s), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "index 7");
    ASSERT(s == NULL);
    o.index = SYNOR_SEMCACHE_HNSW;
    o.hnsw_m = 1;
    ASSERT_EQ(synor_semcache_open(&o, &s), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "M 1");
    o.hnsw_m = 0;
    if (!synor__hnsw_available()) {
        ASSERT_EQ(synor_semcache_open(&o, &s), SYNOR_ENOTSUP);
        ASSERT_CONTAINS(synor_errmsg(), "hnswlib");
    }
    unsigned idx = 9;
    ASSERT_EQ(synor_semcache_index_parse("hnws", &idx), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "'hnws'");
    ASSERT_EQ(idx, 9);
    for (unsigned i = 0; i < 3; i++) {
        ASSERT_OK(synor_semcache_index_parse(synor_semcache_index_name(i), &idx));
        ASSERT_EQ(idx, i);
    }
    ASSERT_STREQ(synor_semcache_index_name(3), "?");
}

static synor_semcache *open_disk(const char *path, int dim, size_t max)
{
    synor_semcache_opts o = {.dim = dim, .threshold = 0.9f, .max_entries = max,
                             .disk_path = path};
    synor_semcache *s = NULL;
    return synor_semcache_open(&o, &s) ? NULL : s;
}

TEST(disk_keeps_entries_across_reopen)
{
    char dir[] = "/tmp/synor-semcache-XXXXXX", path[64], cmd[96];
    ASSERT(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/sem.db", dir);
    synor_semcache *s = open_disk(path, DIM, 50);
    ASSERT(s);
    add_entries(s, 0, 80); /* the ring keeps 30..79 */
    float q[DIM], before, after;
    char *v;
    size_t n;
    vec(42, 0.3f, q);
    ASSERT_OK(synor_semcache_lookup(s, q, &before, &v, &n));
    free(v);
    synor_semcache_destroy(s);
    s = open_disk(path, DIM, 50);
    ASSERT(s);
    ASSERT_EQ(synor_semcache_count(s), 50);
    ASSERT_EQ(found_by_own_vector(s, 30, 80), 50);
    ASSERT_EQ(found_by_own_vector(s, 0, 30), 0);
    ASSERT_OK(synor_semcache_lookup(s, q, &after, &v, &n));
    ASSERT_STREQ(v, "e42");
    ASSERT(after == before); /* the same bits: stored, not renormalised */
    free(v);
    add_entries(s, 80, 90); /* the ring and the file go on: 40..89 */
    synor_semcache_destroy(s);
    s = open_disk(path, DIM, 20); /* a smaller ring takes the newest */
    ASSERT(s);
    ASSERT_EQ(synor_semcache_count(s), 20);
    ASSERT_EQ(found_by_own_vector(s, 70, 90), 20);
    synor_semcache_destroy(s);
    /* another dimension is refused, naming the file */
    ASSERT(open_disk(path, 16, 20) == NULL);
    ASSERT_CONTAINS(synor_errmsg(), path);
    ASSERT_CONTAINS(synor_errmsg(), "dim 16");
    /* a crash: what add returned from is in the file */
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        synor_semcache *c = open_disk(path, DIM, 200);
        if (!c)
            _exit(1);
        add_entries(c, 500, 505);
        _exit(0); /* no destroy, no close */
    }
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    s = open_disk(path, DIM, 200);
    ASSERT(s);
    ASSERT_EQ(found_by_own_vector(s, 500, 505), 5);
    ASSERT_EQ(synor_semcache_count(s), 55); /* 40..89 and 500..504 */
    synor_semcache_destroy(s);
    /* a path that cannot be a database is named */
    snprintf(cmd, sizeof cmd, "%s/no/such/dir/sem.db", dir);
    ASSERT(open_disk(cmd, DIM, 10) == NULL);
    ASSERT_CONTAINS(synor_errmsg(), cmd);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ASSERT_EQ(system(cmd), 0);
}

typedef struct targ {
    synor_semcache *s;
    int id, bad;
} targ;

static void *worker(void *p)
{
    targ *a = p;
    for (int i = 0; i < 200; i++) {
        float v[DIM], sim;
        char val[16], *got;
        size_t n;
        int k = a->id * 1000 + i;
        vec((uint64_t)k, 0, v);
        snprintf(val, sizeof val, "e%d", k);
        if (synor_semcache_add(a->s, v, val, strlen(val)))
            a->bad = 1;
        int r = synor_semcache_lookup(a->s, v, &sim, &got, &n);
        if (r == 0) /* its own entry, unless another thread's add replaced it */
            free(got);
        else if (r != SYNOR_ENOENT)
            a->bad = 1;
    }
    return NULL;
}

TEST(threads)
{
    if (!synor__hnsw_available())
        TEST_SKIP("built without hnswlib");
    synor_semcache *s = open_index(SYNOR_SEMCACHE_HNSW, 300, 0);
    ASSERT(s);
    pthread_t th[4];
    targ a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (targ){s, i, 0};
        ASSERT_EQ(pthread_create(&th[i], NULL, worker, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ASSERT_EQ(a[i].bad, 0);
    }
    ASSERT_EQ(synor_semcache_count(s), 300);
    synor_semcache_destroy(s);
}

TEST_MAIN(hnsw_finds_what_the_scan_finds, auto_switches_past_exact_max,
          ring_replacement_in_the_graph, bad_options_are_named, disk_keeps_entries_across_reopen,
          threads)
