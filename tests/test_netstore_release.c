/* test_netstore_release.c - preemption in the store (on SQLite, and on
 * PostgreSQL too when SYNOR_TEST_PG_URL names a database; tests/cli/
 * netstore_pg.sh sets it): a provider releasing a leased task with a
 * checkpoint queues it again at once, keeps its reputation and earns
 * nothing; the next claimant (one task or a batch) gets the checkpoint and
 * may read it, the old holder may not; only the lease holder may release;
 * a checkpoint whose checksum is wrong is ignored (the task keeps the one
 * it had, or starts over) and logged; releases do not use up the task's
 * attempts, a failure drops the checkpoint; the finisher alone is paid,
 * once. End to end with agents: tests/cli/net_preempt.sh. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "synor.h"
#include "test.h"

#if SYNOR_HAVE_NETSTORE

extern void synor__ns_sha256_hex(const void *, size_t, char *);

static char path[64];
static int on_pg;

static synor_netstore *fresh(void)
{
    synor_netstore_opts o = {.max_attempts = 3};
    if (on_pg) {
        o.url = getenv("SYNOR_TEST_PG_URL");
    } else {
        snprintf(path, sizeof path, "/tmp/synor-release-XXXXXX");
        int fd = mkstemp(path);
        if (fd < 0)
            abort();
        close(fd);
        unlink(path);
        o.url = path;
    }
    synor_netstore *s = NULL;
    if (synor_netstore_open(&o, &s)) {
        fprintf(stderr, "  open %s: %s\n", o.url, synor_errmsg());
        return NULL;
    }
    if (on_pg && synor_netstore_wipe(s)) {
        synor_netstore_close(s);
        return NULL;
    }
    return s;
}

static void done(synor_netstore *s)
{
    synor_netstore_close(s);
    if (on_pg)
        return;
    char p[80];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

#define BOTH(body)                                                                 \
    do {                                                                           \
        for (on_pg = 0; on_pg < 2; on_pg++) {                                      \
            if (on_pg && !getenv("SYNOR_TEST_PG_URL"))                             \
                break;                                                             \
            body();                                                                \
            if (test__s.failed) {                                                  \
                fprintf(stderr, "  (backend: %s)\n", on_pg ? "postgresql" : "sqlite"); \
                return;                                                            \
            }                                                                      \
        }                                                                          \
    } while (0)

static const float X[4] = {1, 2, 3, 4};

/* A job of n sum-f32 shards over X, one replica each. */
static int64_t submit(synor_netstore *s, size_t n)
{
    char sha[65];
    if (synor_netstore_blob_put(s, "alice", X, sizeof X, sha))
        return -1;
    const char *in[1] = {sha};
    synor_net_shard_spec sh[4];
    for (size_t i = 0; i < n; i++)
        sh[i] = (synor_net_shard_spec){.inputs = in, .n_inputs = 1};
    synor_net_job_spec j = {.name = "r", .kernel = "sum-f32", .params_json = "{}",
                            .shards = sh, .n_shards = n, .replicas = 1, .budget = 1000000};
    int64_t id = -1, tasks = 0;
    int existing = 0;
    return synor_netstore_job_submit(s, "alice", &j, &id, &tasks, &existing) ? -1 : id;
}

static int64_t device(synor_netstore *s, const char *owner)
{
    synor_net_device d = {.name = "cpu0", .kind = "cpu", .gflops = 10, .mem_bytes = 1 << 20};
    int64_t id = -1;
    return synor_netstore_device_register(s, owner, &d, &id) ? -1 : id;
}

static int readable(synor_netstore *s, const char *owner, const char *sha)
{
    synor_net_principal p = {.role = SYNOR_NET_PROVIDER};
    synor__strlcpy(p.owner, owner, sizeof p.owner);
    void *data = NULL;
    size_t n = 0;
    int e = synor_netstore_blob_get(s, &p, sha, &data, &n);
    free(data);
    return e == 0;
}

static void release_body(void)
{
    synor_netstore *s = fresh();
    ASSERT(s);
    int64_t job = submit(s, 1), d1 = device(s, "p1"), d2 = device(s, "p2");
    ASSERT(job > 0 && d1 > 0 && d2 > 0);
    synor_net_claim c, c2;
    ASSERT_EQ(synor_netstore_claim(s, "p1", d1, &c), 0);
    ASSERT(!c.checkpoint_json); /* a fresh task has none */
    const char ck[] = "checkpoint: 3 of 8 blocks";
    char cks[65];
    synor__ns_sha256_hex(ck, sizeof ck, cks);
    int stored = -1;
    /* only the holder of the live lease may release */
    ASSERT_EQ(synor_netstore_release(s, "p2", c.task, c.lease, ck, sizeof ck, cks, &stored),
              SYNOR_ESTATE);
    ASSERT_EQ(synor_netstore_release(s, "p1", c.task, "Lwrong", ck, sizeof ck, cks, &stored),
              SYNOR_ESTATE);
    ASSERT_EQ(synor_netstore_claim(s, "p2", d2, &c2), 1); /* still p1's */
    ASSERT_OK(synor_netstore_release(s, "p1", c.task, c.lease, ck, sizeof ck, cks, &stored));
    ASSERT_EQ(stored, 1);
    /* once: the lease has ended */
    ASSERT_EQ(synor_netstore_release(s, "p1", c.task, c.lease, ck, sizeof ck, cks, &stored),
              SYNOR_ESTATE);
    /* no reputation lost, and no lease left to expire */
    int rep = 0, n = -1;
    ASSERT_OK(synor_netstore_device_reputation(s, d1, &rep));
    ASSERT_EQ(rep, 50);
    ASSERT_OK(synor_netstore_reap(s, &n));
    ASSERT_EQ(n, 0);
    /* queued at once: the next claimant gets it with the checkpoint */
    ASSERT_EQ(synor_netstore_claim(s, "p2", d2, &c2), 0);
    ASSERT_EQ(c2.task, c.task);
    ASSERT(c2.checkpoint_json);
    ASSERT_CONTAINS(c2.checkpoint_json, cks);
    ASSERT_CONTAINS(c2.checkpoint_json, "\"bytes\":26");
    ASSERT(readable(s, "p2", cks));
    ASSERT(!readable(s, "p1", cks));
    /* the checkpoint's own bytes, and no other blob for holding one */
    synor_net_principal p2 = {.role = SYNOR_NET_PROVIDER};
    synor__strlcpy(p2.owner, "p2", sizeof p2.owner);
    void *got = NULL;
    size_t got_n = 0;
    ASSERT_OK(synor_netstore_blob_get(s, &p2, cks, &got, &got_n));
    ASSERT(got_n == sizeof ck && !memcmp(got, ck, sizeof ck));
    free(got);
    char other[65];
    ASSERT_OK(synor_netstore_blob_put(s, "alice", "private", 7, other));
    ASSERT(!readable(s, "p2", other));
    /* the old lease is dead */
    double r = 10;
    char rs[65];
    synor__ns_sha256_hex(&r, sizeof r, rs);
    synor_net_verdict v;
    ASSERT_EQ(synor_netstore_result(s, "p1", c.task, c.lease, &r, sizeof r, rs, 1, &v),
              SYNOR_ESTATE);
    ASSERT_OK(synor_netstore_result(s, "p2", c2.task, c2.lease, &r, sizeof r, rs, 1, &v));
    ASSERT_EQ(v, SYNOR_NET_VALIDATED);
    /* the finisher alone is paid, once */
    synor_netstore_stats st;
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.ledger_entries, 1);
    ASSERT_EQ(st.jobs_done, 1);
    char *js = NULL;
    ASSERT_OK(synor_netstore_earnings_json(s, "p1", &js));
    ASSERT_CONTAINS(js, "\"balance\":\"0.000000\"");
    free(js);
    ASSERT_OK(synor_netstore_ledger_json(s, &js));
    ASSERT_CONTAINS(js, "\"p2\"");
    ASSERT(!strstr(js, "\"p1\""));
    free(js);
    ASSERT_OK(synor_netstore_events_json(s, 20, &js));
    ASSERT_CONTAINS(js, "task-released");
    ASSERT_CONTAINS(js, "p1 released it with a checkpoint of 26 bytes");
    free(js);
    synor_net_claim_free(&c);
    synor_net_claim_free(&c2);
    done(s);
}
TEST(release_requeues_with_checkpoint) { BOTH(release_body); }

static void bad_checksum_body(void)
{
    synor_netstore *s = fresh();
    ASSERT(s);
    int64_t job = submit(s, 2), d1 = device(s, "p1"), d2 = device(s, "p2");
    ASSERT(job > 0 && d1 > 0 && d2 > 0);
    synor_net_claim c[2], c2[2];
    size_t n = 0;
    ASSERT_EQ(synor_netstore_claim_many(s, "p1", d1, 2, c, &n), 0);
    ASSERT_EQ(n, 2);
    const char good[] = "good", bad[] = "bad!";
    char gs[65];
    synor__ns_sha256_hex(good, 4, gs);
    int stored = -1;
    /* task 0: a checkpoint whose bytes are not what their SHA-256 says */
    ASSERT_OK(synor_netstore_release(s, "p1", c[0].task, c[0].lease, bad, 4, gs, &stored));
    ASSERT_EQ(stored, 0);
    /* task 1: a good one, then (claimed again) a bad one: the good one stays */
    ASSERT_OK(synor_netstore_release(s, "p1", c[1].task, c[1].lease, good, 4, gs, &stored));
    ASSERT_EQ(stored, 1);
    /* a batch claim carries the checkpoints too */
    ASSERT_EQ(synor_netstore_claim_many(s, "p2", d2, 2, c2, &n), 0);
    ASSERT_EQ(n, 2);
    ASSERT_EQ(c2[0].task, c[0].task);
    ASSERT(!c2[0].checkpoint_json); /* ignored: starts over */
    ASSERT(c2[1].checkpoint_json);
    ASSERT_CONTAINS(c2[1].checkpoint_json, gs);
    ASSERT_OK(synor_netstore_release(s, "p2", c2[1].task, c2[1].lease, bad, 4, gs, &stored));
    ASSERT_EQ(stored, 0);
    char *js = NULL;
    ASSERT_OK(synor_netstore_events_json(s, 20, &js));
    ASSERT_CONTAINS(js, "checkpoint-ignored");
    free(js);
    synor_net_claim c3;
    ASSERT_EQ(synor_netstore_claim(s, "p1", d1, &c3), 0);
    ASSERT_EQ(c3.task, c[1].task);
    ASSERT(c3.checkpoint_json);
    ASSERT_CONTAINS(c3.checkpoint_json, gs);
    /* releases use up no attempts (max_attempts 3): many, then a claim */
    for (int i = 0; i < 4; i++) {
        ASSERT_OK(synor_netstore_release(s, "p1", c3.task, c3.lease, NULL, 0, NULL, &stored));
        ASSERT_EQ(stored, 0);
        synor_net_claim_free(&c3);
        ASSERT_EQ(synor_netstore_claim(s, "p1", d1, &c3), 0);
        ASSERT(c3.checkpoint_json); /* a release without one keeps the old */
    }
    /* a failure is an attempt, and drops the checkpoint */
    ASSERT_OK(synor_netstore_fail(s, "p1", c3.task, c3.lease, "boom"));
    synor_net_claim_free(&c3);
    ASSERT_EQ(synor_netstore_claim(s, "p1", d1, &c3), 0);
    ASSERT(!c3.checkpoint_json);
    ASSERT_OK(synor_netstore_job_json(s, "alice", job, &js));
    ASSERT(!strstr(js, "\"state\":\"failed\""));
    free(js);
    synor_net_claim_free(&c3);
    for (int i = 0; i < 2; i++) {
        synor_net_claim_free(&c[i]);
        synor_net_claim_free(&c2[i]);
    }
    done(s);
}
TEST(bad_checkpoint_ignored_attempts_kept) { BOTH(bad_checksum_body); }

TEST_MAIN(release_requeues_with_checkpoint, bad_checkpoint_ignored_attempts_kept)

#else
int main(void)
{
    fprintf(stderr, "  skipped: built without nettle: no network store\n");
    return 77;
}
#endif
