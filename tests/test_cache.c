/* test_cache.c - the response caches: the memory tier's LRU under a byte
 * budget, the SQLite disk tier (reopened, after a crash, promotion), keys
 * of generation requests, the semantic cache's threshold and similarity,
 * and all of it from several threads (also under ThreadSanitizer). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "synor/cache.h"
#include "synor/error.h"
#include "test.h"

static char dir[64];

static const char *path_of(const char *leaf)
{
    static char buf[128];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/synor-cache-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    snprintf(buf, sizeof buf, "%s/%s", dir, leaf);
    return buf;
}

static int get_str(synor_cache *c, const char *k, char *out, size_t cap, int *tier)
{
    char *v;
    size_t n;
    int e = synor_cache_get(c, k, strlen(k), &v, &n, tier);
    if (e)
        return e;
    snprintf(out, cap, "%.*s", (int)n, v);
    free(v);
    return 0;
}

static int put_str(synor_cache *c, const char *k, const char *v)
{
    return synor_cache_put(c, k, strlen(k), v, strlen(v));
}

TEST(memory_tier_lru_under_budget)
{
    synor_cache_opts o = {.mem_bytes = 100};
    synor_cache *c;
    ASSERT_OK(synor_cache_open(&o, &c));
    char buf[64];
    int tier = -1;
    ASSERT_EQ(get_str(c, "a", buf, sizeof buf, &tier), SYNOR_ENOENT);
    ASSERT_OK(put_str(c, "a", "0123456789012345678")); /* 20 bytes */
    ASSERT_OK(put_str(c, "b", "0123456789012345678"));
    ASSERT_OK(put_str(c, "c", "0123456789012345678"));
    ASSERT_OK(put_str(c, "d", "0123456789012345678"));
    ASSERT_OK(get_str(c, "a", buf, sizeof buf, &tier)); /* a is now the most recent */
    ASSERT_EQ(tier, SYNOR_CACHE_MEMORY);
    ASSERT_OK(put_str(c, "e", "0123456789012345678")); /* 100 bytes: fits */
    ASSERT_OK(put_str(c, "f", "0123456789012345678")); /* evicts b, the least recent */
    ASSERT_EQ(get_str(c, "b", buf, sizeof buf, &tier), SYNOR_ENOENT);
    ASSERT_OK(get_str(c, "a", buf, sizeof buf, &tier));
    ASSERT_OK(put_str(c, "a", "new")); /* replace */
    ASSERT_OK(get_str(c, "a", buf, sizeof buf, &tier));
    ASSERT_STREQ(buf, "new");
    synor_cache_stats st;
    synor_cache_stats_get(c, &st);
    ASSERT(st.mem_bytes <= 100);
    ASSERT_EQ(st.evictions, 1);
    ASSERT_EQ(st.misses, 2);
    ASSERT_EQ(st.hits[SYNOR_CACHE_MEMORY], 3);
    ASSERT_EQ(st.disk_entries, 0);
    /* an entry above the whole budget is not kept in memory */
    char big[200];
    memset(big, 'x', sizeof big);
    ASSERT_OK(synor_cache_put(c, "big", 3, big, sizeof big));
    ASSERT_EQ(get_str(c, "big", buf, sizeof buf, &tier), SYNOR_ENOENT);
    synor_cache_close(c);
}

TEST(disk_tier_survives_reopen_and_promotes)
{
    const char *p = path_of("c.db");
    synor_cache_opts o = {.mem_bytes = 1 << 20, .disk_path = p};
    synor_cache *c;
    ASSERT_OK(synor_cache_open(&o, &c));
    ASSERT_OK(put_str(c, "prompt-1", "answer one"));
    ASSERT_OK(put_str(c, "prompt-2", "answer two"));
    synor_cache_close(c);
    ASSERT_OK(synor_cache_open(&o, &c));
    /* has: both tiers, no hit or miss counted, nothing promoted */
    ASSERT_EQ(synor_cache_has(c, "prompt-1", 8), 1);
    ASSERT_EQ(synor_cache_has(c, "prompt-3", 8), 0);
    synor_cache_stats hs;
    synor_cache_stats_get(c, &hs);
    ASSERT(hs.hits[0] == 0 && hs.hits[1] == 0 && hs.misses == 0 && hs.mem_entries == 0);
    char buf[64];
    int tier = -1;
    ASSERT_OK(get_str(c, "prompt-2", buf, sizeof buf, &tier));
    ASSERT_STREQ(buf, "answer two");
    ASSERT_EQ(tier, SYNOR_CACHE_DISK);
    ASSERT_OK(get_str(c, "prompt-2", buf, sizeof buf, &tier));
    ASSERT_EQ(tier, SYNOR_CACHE_MEMORY); /* promoted */
    synor_cache_stats st;
    synor_cache_stats_get(c, &st);
    ASSERT_EQ(st.disk_entries, 2);
    ASSERT_EQ(st.hits[SYNOR_CACHE_DISK], 1);
    synor_cache_close(c);
}

/* A process that stores entries and dies without closing anything: every
 * put it returned from is there. */
TEST(disk_tier_survives_a_crash)
{
    const char *p = path_of("crash.db");
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        synor_cache_opts o = {.disk_path = p};
        synor_cache *c;
        if (synor_cache_open(&o, &c))
            _exit(2);
        for (int i = 0; i < 50; i++) {
            char k[16], v[16];
            snprintf(k, sizeof k, "k%d", i);
            snprintf(v, sizeof v, "v%d", i);
            if (put_str(c, k, v))
                _exit(3);
        }
        _exit(0); /* no close: the WAL holds the commits */
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    synor_cache_opts o = {.disk_path = p};
    synor_cache *c;
    ASSERT_OK(synor_cache_open(&o, &c));
    for (int i = 0; i < 50; i++) {
        char k[16], v[16], buf[16];
        snprintf(k, sizeof k, "k%d", i);
        snprintf(v, sizeof v, "v%d", i);
        ASSERT_OK(get_str(c, k, buf, sizeof buf, NULL));
        ASSERT_STREQ(buf, v);
    }
    synor_cache_close(c);
}

TEST(bad_disk_file_is_named)
{
    const char *p = path_of("notadb.db");
    FILE *f = fopen(p, "w");
    ASSERT(f);
    fputs("this is not an SQLite database, just text that is long enough to matter......\n", f);
    fclose(f);
    synor_cache_opts o = {.disk_path = p};
    synor_cache *c = NULL;
    ASSERT_EQ(synor_cache_open(&o, &c), SYNOR_EIO);
    ASSERT_CONTAINS(synor_errmsg(), "notadb.db");
    ASSERT(c == NULL);
    o.disk_path = "/nonexistent-dir/x.db";
    ASSERT_EQ(synor_cache_open(&o, &c), SYNOR_EIO);
    ASSERT_CONTAINS(synor_errmsg(), "/nonexistent-dir/x.db");
}

TEST(generation_keys)
{
    char a[256], b[256];
    size_t na = synor_cache_key(a, sizeof a, "m", "hello", 16, 0.8f, 40, 0.9f, 1);
    size_t nb = synor_cache_key(b, sizeof b, "m", "hello", 16, 0.8f, 40, 0.9f, 2);
    ASSERT(na == nb && memcmp(a, b, na) != 0); /* the seed matters when sampling */
    na = synor_cache_key(a, sizeof a, "m", "hello", 16, 0, 40, 0.9f, 1);
    nb = synor_cache_key(b, sizeof b, "m", "hello", 16, 0, 40, 0.9f, 2);
    ASSERT(na == nb && memcmp(a, b, na) == 0); /* not when greedy */
    nb = synor_cache_key(b, sizeof b, "mh", "ello", 16, 0, 40, 0.9f, 1);
    ASSERT(memcmp(a, b, na < nb ? na : nb) != 0); /* no ambiguity at the boundary */
    nb = synor_cache_key(b, sizeof b, "m", "hello", 17, 0, 40, 0.9f, 1);
    ASSERT(memcmp(a, b, na) != 0);
    ASSERT_EQ(synor_cache_key(NULL, 0, "m", "hello", 16, 0, 40, 0.9f, 1), na);
}

TEST(semantic_threshold_and_similarity)
{
    synor_semcache *s;
    ASSERT_OK(synor_semcache_create(4, 0.95f, 3, &s));
    float sim;
    char *v;
    size_t n;
    float e1[4] = {1, 0, 0, 0}, e2[4] = {0, 1, 0, 0}, near1[4] = {1, 0.2f, 0, 0};
    ASSERT_EQ(synor_semcache_lookup(s, e1, &sim, &v, &n), SYNOR_ENOENT);
    ASSERT(sim == -1);
    ASSERT_OK(synor_semcache_add(s, e1, "one", 3));
    ASSERT_OK(synor_semcache_add(s, e2, "two", 3));
    ASSERT_OK(synor_semcache_lookup(s, near1, &sim, &v, &n));
    ASSERT_STREQ(v, "one");
    ASSERT_NEAR(sim, 1 / sqrt(1.04), 1e-5);
    free(v);
    float between[4] = {1, 1, 0, 0};
    ASSERT_EQ(synor_semcache_lookup(s, between, &sim, &v, &n), SYNOR_ENOENT);
    ASSERT_NEAR(sim, sqrt(0.5), 1e-5);
    float zero[4] = {0};
    ASSERT_EQ(synor_semcache_add(s, zero, "z", 1), SYNOR_EINVAL);
    /* the ring: a 4th entry replaces the oldest */
    float e3[4] = {0, 0, 1, 0}, e4[4] = {0, 0, 0, 1};
    ASSERT_OK(synor_semcache_add(s, e3, "three", 5));
    ASSERT_OK(synor_semcache_add(s, e4, "four", 4));
    ASSERT_EQ(synor_semcache_count(s), 3);
    ASSERT_EQ(synor_semcache_lookup(s, e1, &sim, &v, &n), SYNOR_ENOENT);
    ASSERT_OK(synor_semcache_lookup(s, e4, &sim, &v, &n));
    ASSERT_STREQ(v, "four");
    free(v);
    synor_semcache_destroy(s);
    ASSERT_EQ(synor_semcache_create(0, 0.9f, 3, &s), SYNOR_EINVAL);
}

typedef struct worker_arg {
    synor_cache *c;
    synor_semcache *s;
    int id;
    int bad;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    for (int i = 0; i < 300; i++) {
        char k[32], v[32], buf[32];
        snprintf(k, sizeof k, "t%d-%d", a->id, i % 40);
        snprintf(v, sizeof v, "value %d %d", a->id, i % 40);
        if (put_str(a->c, k, v))
            a->bad = 1;
        if (get_str(a->c, k, buf, sizeof buf, NULL) == 0 && strcmp(buf, v) != 0)
            a->bad = 1;
        float e[4] = {(float)a->id + 1, (float)i, 1, 0};
        synor_semcache_add(a->s, e, v, strlen(v));
        float sim;
        char *got;
        size_t n;
        if (synor_semcache_lookup(a->s, e, &sim, &got, &n) == 0)
            free(got);
    }
    return NULL;
}

TEST(threads)
{
    synor_cache_opts o = {.mem_bytes = 2000, .disk_path = path_of("threads.db")};
    synor_cache *c;
    synor_semcache *s;
    ASSERT_OK(synor_cache_open(&o, &c));
    ASSERT_OK(synor_semcache_create(4, 0.99f, 64, &s));
    pthread_t th[4];
    worker_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (worker_arg){c, s, i, 0};
        ASSERT_EQ(pthread_create(&th[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ASSERT(!args[i].bad);
    }
    synor_cache_stats st;
    synor_cache_stats_get(c, &st);
    ASSERT_EQ(st.disk_entries, 160);
    ASSERT(st.mem_bytes <= 2000);
    synor_cache_close(c);
    synor_semcache_destroy(s);
}

TEST(predictor_learns_each_users_flow)
{
    synor_predictor *p;
    ASSERT_OK(synor_predictor_create(100, &p));
    const char *reqs[4];
    float probs[4];
    ASSERT_EQ(synor_predictor_predict(p, "ann", 4, reqs, probs), 0); /* never seen */
    /* everyone: login -> inbox (3 times), login -> news (once) */
    for (int i = 0; i < 3; i++) {
        char u[8];
        snprintf(u, sizeof u, "u%d", i);
        ASSERT_OK(synor_predictor_observe(p, u, "login"));
        ASSERT_OK(synor_predictor_observe(p, u, "inbox"));
    }
    ASSERT_OK(synor_predictor_observe(p, "bob", "login"));
    ASSERT_OK(synor_predictor_observe(p, "bob", "news"));
    /* a new user after login: the global model */
    ASSERT_OK(synor_predictor_observe(p, "ann", "login"));
    ASSERT_EQ(synor_predictor_predict(p, "ann", 4, reqs, probs), 2);
    ASSERT_STREQ(reqs[0], "inbox");
    ASSERT_NEAR(probs[0], 0.75, 1e-6);
    ASSERT_STREQ(reqs[1], "news");
    /* bob after login again: his own habit */
    ASSERT_OK(synor_predictor_observe(p, "bob", "login"));
    ASSERT_EQ(synor_predictor_predict(p, "bob", 1, reqs, probs), 1);
    ASSERT_STREQ(reqs[0], "news");
    ASSERT_NEAR(probs[0], 1.0, 1e-6);
    synor_predictor_destroy(p);
    /* full: new requests are not learned, nothing breaks */
    ASSERT_OK(synor_predictor_create(2, &p));
    ASSERT_OK(synor_predictor_observe(p, "a", "x"));
    ASSERT_OK(synor_predictor_observe(p, "a", "y"));
    ASSERT_OK(synor_predictor_observe(p, "a", "z"));
    ASSERT_OK(synor_predictor_observe(p, "a", "x"));
    ASSERT_EQ(synor_predictor_predict(p, "a", 4, reqs, probs), 1);
    ASSERT_STREQ(reqs[0], "y");
    synor_predictor_destroy(p);
    ASSERT_EQ(synor_predictor_create(0, &p), SYNOR_EINVAL);
}

TEST(cleanup)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (dir[0])
        ASSERT_EQ(system(cmd), 0);
}

TEST_MAIN(memory_tier_lru_under_budget, disk_tier_survives_reopen_and_promotes,
          disk_tier_survives_a_crash, bad_disk_file_is_named, generation_keys,
          semantic_threshold_and_similarity, threads, predictor_learns_each_users_flow, cleanup)
