/* test_market_group_commit.c - the commit split in two (synor/market.h,
 * synor_market_commit_write / synor_market_commit_sync): a second thread
 * flushes batch k while this one submits batch k + 1, as `synor market
 * batch` does with a file. The journal then recovers exactly the state of
 * a market committed the plain way. Runs
 * under ThreadSanitizer in CI (label "concurrency"). */
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "market_fixture.h"

typedef struct flusher {
    pthread_t th;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    synor_market *m;
    int job, busy, quit, rc, jobs;
} flusher;

static void *flush_main(void *arg)
{
    flusher *f = arg;
    pthread_mutex_lock(&f->lock);
    for (;;) {
        while (!f->job && !f->quit)
            pthread_cond_wait(&f->cv, &f->lock);
        if (f->quit)
            break;
        f->job = 0;
        pthread_mutex_unlock(&f->lock);
        int rc = synor_market_commit_sync(f->m);
        pthread_mutex_lock(&f->lock);
        f->rc |= rc;
        f->jobs++;
        f->busy = 0;
        pthread_cond_broadcast(&f->cv);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

static void flush_wait(flusher *f)
{
    pthread_mutex_lock(&f->lock);
    while (f->busy)
        pthread_cond_wait(&f->cv, &f->lock);
    pthread_mutex_unlock(&f->lock);
}

static char *tmpdir(const char *tag)
{
    static char d[2][64];
    static int k;
    char *p = d[k++ % 2];
    snprintf(p, 64, "/tmp/synor-gc-%s-XXXXXX", tag);
    return mkdtemp(p);
}

static void rm_rf(const char *dir)
{
    char p[512];
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    if (system(p) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* a (committed the plain way) and b (in halves) are in the same state, and
 * b's directory, reopened after both are closed, recovers that state. */
static int agree_and_recover(fx *a, fx *b, const char *b_dir)
{
    uint64_t h = synor_market_state_hash(a->m);
    int same = synor_market_state_hash(b->m) == h;
    fx_close(a);
    fx_close(b);
    fx r;
    if (fx_open(&r, b_dir))
        return 0;
    same = same && synor_market_state_hash(r.m) == h;
    fx_close(&r);
    return same;
}

TEST(a_flush_on_another_thread_overlaps_the_next_batch)
{
    enum { N = 20000, BATCH = 512 };
    char *plain_dir = tmpdir("plain"), *piped_dir = tmpdir("piped");
    ASSERT(plain_dir && piped_dir);
    fx a, b;
    ASSERT_OK(fx_open(&a, plain_dir));
    ASSERT_OK(fx_open(&b, piped_dir));
    flusher fl;
    memset(&fl, 0, sizeof fl);
    fl.m = b.m;
    pthread_mutex_init(&fl.lock, NULL);
    pthread_cond_init(&fl.cv, NULL);
    ASSERT_EQ(pthread_create(&fl.th, NULL, flush_main, &fl), 0);
    uint64_t next_id = 1;
    rng_state = 7;
    T = 1000;
    for (int i = 0; i < N; i++) {
        synor_market_cmd c = random_cmd(&next_id, 2, 4);
        ASSERT_OK(synor_market_submit(a.m, &c));
        ASSERT_OK(synor_market_submit(b.m, &c)); /* while the flusher may run */
        if ((i + 1) % BATCH == 0) {
            ASSERT_OK(synor_market_commit(a.m));
            flush_wait(&fl); /* one flush per batch, as counted below */
            ASSERT_OK(synor_market_commit_write(b.m));
            pthread_mutex_lock(&fl.lock);
            fl.job = fl.busy = 1;
            pthread_cond_signal(&fl.cv);
            pthread_mutex_unlock(&fl.lock);
        }
    }
    flush_wait(&fl);
    pthread_mutex_lock(&fl.lock);
    fl.quit = 1;
    pthread_cond_signal(&fl.cv);
    pthread_mutex_unlock(&fl.lock);
    pthread_join(fl.th, NULL);
    ASSERT_EQ(fl.rc, 0);
    ASSERT_EQ(synor_market_commit_sync(NULL), SYNOR_EINVAL);
    ASSERT_EQ(fl.jobs, N / BATCH);
    /* both markets agree, and the journal written in halves recovers it */
    ASSERT(agree_and_recover(&a, &b, piped_dir));
    pthread_mutex_destroy(&fl.lock);
    pthread_cond_destroy(&fl.cv);
    rm_rf(plain_dir);
    rm_rf(piped_dir);
}

/* Flushes back to back on another thread, never waited for: beside every
 * write, commit and snapshot of this one (synor_market_commit_sync's rule
 * since the CLI's group commit lets one flush cover several batches). */
static void *flush_loop(void *arg)
{
    flusher *f = arg;
    for (;;) {
        pthread_mutex_lock(&f->lock);
        int quit = f->quit;
        pthread_mutex_unlock(&f->lock);
        if (quit)
            break;
        int rc = synor_market_commit_sync(f->m);
        pthread_mutex_lock(&f->lock);
        f->rc |= rc;
        f->jobs++;
        pthread_mutex_unlock(&f->lock);
    }
    return NULL;
}

TEST(flushes_beside_writes_commits_and_snapshots)
{
    enum { N = 12000, BATCH = 256 };
    char *plain_dir = tmpdir("plain2"), *piped_dir = tmpdir("piped2");
    ASSERT(plain_dir && piped_dir);
    fx a, b;
    ASSERT_OK(fx_open(&a, plain_dir));
    ASSERT_OK(fx_open(&b, piped_dir));
    flusher fl;
    memset(&fl, 0, sizeof fl);
    fl.m = b.m;
    pthread_mutex_init(&fl.lock, NULL);
    ASSERT_EQ(pthread_create(&fl.th, NULL, flush_loop, &fl), 0);
    uint64_t next_id = 1;
    rng_state = 11;
    T = 1000;
    for (int i = 0; i < N; i++) {
        synor_market_cmd c = random_cmd(&next_id, 2, 4);
        ASSERT_OK(synor_market_submit(a.m, &c));
        ASSERT_OK(synor_market_submit(b.m, &c));
        if ((i + 1) % BATCH == 0) {
            ASSERT_OK(synor_market_commit(a.m));
            int k = (i + 1) / BATCH;
            /* the three ways of making records durable, all beside a flush */
            ASSERT_OK(k % 5 == 0   ? synor_market_snapshot(b.m)
                      : k % 3 == 0 ? synor_market_commit(b.m)
                                   : synor_market_commit_write(b.m));
        }
    }
    ASSERT_OK(synor_market_commit_write(b.m));
    pthread_mutex_lock(&fl.lock);
    fl.quit = 1;
    pthread_mutex_unlock(&fl.lock);
    pthread_join(fl.th, NULL);
    ASSERT_EQ(fl.rc, 0);
    ASSERT(fl.jobs > 0);
    /* both markets agree, and the journal written in halves recovers it */
    ASSERT(agree_and_recover(&a, &b, piped_dir));
    pthread_mutex_destroy(&fl.lock);
    rm_rf(plain_dir);
    rm_rf(piped_dir);
}

/* On one thread the two halves are a commit; without the flush the
 * records are written all the same (a process crash loses nothing). */
TEST(the_halves_on_one_thread)
{
    char *dir = tmpdir("one");
    ASSERT(dir);
    fx f;
    T = 1000;
    ASSERT_OK(fx_open(&f, dir));
    ASSERT_OK(submit(&f, place(1, f.alice, f.gpu, SYNOR_ASK, 100, 5, SYNOR_GTC)));
    ASSERT_OK(synor_market_commit_write(f.m));
    ASSERT_OK(synor_market_commit_sync(f.m));
    ASSERT_OK(submit(&f, place(2, f.bob, f.gpu, SYNOR_BID, 100, 2, SYNOR_GTC)));
    ASSERT_OK(synor_market_commit_write(f.m)); /* written, not flushed */
    uint64_t h = synor_market_state_hash(f.m);
    fx_close(&f);
    fx r;
    ASSERT_OK(fx_open(&r, dir));
    ASSERT(synor_market_state_hash(r.m) == h);
    fx_close(&r);
    rm_rf(dir);
}

TEST_MAIN(a_flush_on_another_thread_overlaps_the_next_batch,
          flushes_beside_writes_commits_and_snapshots, the_halves_on_one_thread)
