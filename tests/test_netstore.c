/* test_netstore.c - the compute network's store, on SQLite always and on
 * PostgreSQL too when SYNOR_TEST_PG_URL names a database (tests/cli/
 * netstore_pg.sh starts a throwaway cluster and sets it): schema versions
 * and the refusal of a newer one, tokens (hashed, revoked), a job through
 * claim, result and ledger, quorum with a cheating replica within the
 * float tolerance, ownership (other consumers, other providers' leases,
 * bad checksums change nothing), lease expiry, budgets, idempotent refs,
 * spot checks, a reopened store keeping everything, threads claiming
 * and reporting at once (group commit: a failing operation in a batch
 * changes nothing and fails alone), and a batch of results paid as one by
 * one (PostgreSQL's set-based pass against SQLite's amounts). */
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "synor.h"
#include "test.h"

#if SYNOR_HAVE_NETSTORE

static char dbpath[64];
static int on_pg;

/* A fresh store: a new SQLite file, or the PostgreSQL database wiped. */
static synor_netstore *fresh(const synor_netstore_opts *extra)
{
    synor_netstore_opts o = extra ? *extra : (synor_netstore_opts){0};
    const char *pg = getenv("SYNOR_TEST_PG_URL");
    if (on_pg) {
        o.url = pg;
    } else {
        snprintf(dbpath, sizeof dbpath, "/tmp/synor-netstore-XXXXXX");
        int fd = mkstemp(dbpath);
        if (fd < 0)
            abort();
        close(fd);
        unlink(dbpath);
        o.url = dbpath;
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
    if (!on_pg) {
        char p[80];
        unlink(dbpath);
        snprintf(p, sizeof p, "%s-wal", dbpath);
        unlink(p);
        snprintf(p, sizeof p, "%s-shm", dbpath);
        unlink(p);
    }
}

/* Runs body on SQLite, then on PostgreSQL when a URL is given. */
#define BOTH(body)                                                  \
    do {                                                            \
        for (on_pg = 0; on_pg < 2; on_pg++) {                       \
            if (on_pg && !getenv("SYNOR_TEST_PG_URL"))              \
                break;                                              \
            body();                                                 \
            if (test__s.failed) {                                   \
                fprintf(stderr, "  (backend: %s)\n", on_pg ? "postgresql" : "sqlite"); \
                return;                                             \
            }                                                       \
        }                                                           \
    } while (0)

static const float A4[4] = {1, 2, 3, 4};

/* submits a job of n shards, each with the blob A4 as input */
static int64_t submit(synor_netstore *s, const char *owner, size_t n, unsigned replicas,
                      const char *kernel, int64_t budget, const char *ref, char sha[65])
{
    if (synor_netstore_blob_put(s, owner, A4, sizeof A4, sha))
        return -1;
    const char *in[1] = {sha};
    synor_net_shard_spec sh[8];
    for (size_t i = 0; i < n; i++)
        sh[i] = (synor_net_shard_spec){.params_json = "{\"k\":2}", .inputs = in, .n_inputs = 1};
    synor_net_job_spec j = {.name = "t", .kernel = kernel, .params_json = "{\"m\":1,\"k\":1}",
                            .shards = sh, .n_shards = n, .replicas = replicas,
                            .budget = budget, .ref = ref};
    int64_t id = -1, tasks = 0;
    int existing = 0;
    if (synor_netstore_job_submit(s, owner, &j, &id, &tasks, &existing))
        return -1;
    return id;
}

static int64_t device(synor_netstore *s, const char *owner, const char *name)
{
    synor_net_device d = {.name = name, .kind = "cpu", .gflops = 10, .mem_bytes = 1 << 20};
    int64_t id = -1;
    return synor_netstore_device_register(s, owner, &d, &id) ? -1 : id;
}

static void schema_body(void)
{
    synor_netstore *s = fresh(NULL);
    ASSERT(s);
    int v = 0;
    ASSERT_OK(synor_netstore_schema_version(s, &v));
    ASSERT_EQ(v, SYNOR_NETSTORE_SCHEMA_VERSION);
    /* a v2 table and column are there */
    char *ev = NULL;
    ASSERT_OK(synor_netstore_events_json(s, 5, &ev));
    free(ev);
    if (!on_pg) {
        synor_netstore_close(s);
        /* a v6 database (tasks_state, no tasks_leased, the provider's index
         * over every task) is brought to v7, then v8 */
        sqlite3 *h;
        ASSERT_EQ(sqlite3_open(dbpath, &h), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(h,
                               "DROP INDEX tasks_leased; CREATE INDEX tasks_state ON tasks (state, id);"
                               " DROP INDEX tasks_provider;"
                               " CREATE INDEX tasks_provider ON tasks (provider, state);"
                               " UPDATE schema_version SET version = 6",
                               0, 0, 0),
                  SQLITE_OK);
        sqlite3_close(h);
        synor_netstore_opts o6 = {.url = dbpath};
        synor_netstore *u = NULL;
        ASSERT_OK(synor_netstore_open(&o6, &u));
        ASSERT_OK(synor_netstore_schema_version(u, &v));
        ASSERT_EQ(v, 8);
        synor_netstore_close(u);
        ASSERT_EQ(sqlite3_open(dbpath, &h), SQLITE_OK);
        sqlite3_stmt *st;
        ASSERT_EQ(sqlite3_prepare_v2(h,
                                     "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master"
                                     " WHERE type = 'index' AND name IN ('tasks_state', 'tasks_leased'))",
                                     -1, &st, NULL),
                  SQLITE_OK);
        ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
        ASSERT_STREQ((const char *)sqlite3_column_text(st, 0), "tasks_leased");
        sqlite3_finalize(st);
        ASSERT_EQ(sqlite3_prepare_v2(h,
                                     "SELECT sql FROM sqlite_master WHERE type = 'index'"
                                     " AND name = 'tasks_provider'",
                                     -1, &st, NULL),
                  SQLITE_OK);
        ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
        ASSERT_CONTAINS((const char *)sqlite3_column_text(st, 0), "WHERE state = 'leased'");
        sqlite3_finalize(st);
        /* a database newer than this build is refused, untouched */
        ASSERT_EQ(sqlite3_exec(h, "UPDATE schema_version SET version = 99", 0, 0, 0), SQLITE_OK);
        sqlite3_close(h);
        synor_netstore_opts o = {.url = dbpath};
        synor_netstore *t = NULL;
        ASSERT_EQ(synor_netstore_open(&o, &t), SYNOR_ENOTSUP);
        ASSERT_CONTAINS(synor_errmsg(), "schema version 99");
        s = fresh(NULL);
        ASSERT(s);
    }
    done(s);
}
TEST(schema_versions) { BOTH(schema_body); }

static void tokens_body(void)
{
    synor_netstore *s = fresh(NULL);
    ASSERT(s);
    char tok[SYNOR_NET_TOKEN_LEN + 1];
    int64_t id;
    int has = 1;
    ASSERT_OK(synor_netstore_has_operator(s, &has));
    ASSERT_EQ(has, 0);
    ASSERT_OK(synor_netstore_token_create(s, SYNOR_NET_CONSUMER, "alice", tok, &id));
    ASSERT_EQ(strlen(tok), 68);
    ASSERT(!strncmp(tok, "syn_", 4));
    synor_net_principal p;
    ASSERT_OK(synor_netstore_token_auth(s, tok, &p));
    ASSERT_EQ(p.role, SYNOR_NET_CONSUMER);
    ASSERT_STREQ(p.owner, "alice");
    ASSERT_EQ(p.token_id, id);
    /* the token itself is not stored */
    char *js = NULL;
    ASSERT_OK(synor_netstore_tokens_json(s, &js));
    ASSERT(!strstr(js, tok + 4));
    free(js);
    char wrong[SYNOR_NET_TOKEN_LEN + 1];
    memcpy(wrong, tok, sizeof wrong);
    wrong[10] = wrong[10] == 'a' ? 'b' : 'a';
    ASSERT_EQ(synor_netstore_token_auth(s, wrong, &p), SYNOR_ENOENT);
    ASSERT_EQ(synor_netstore_token_auth(s, "", &p), SYNOR_ENOENT);
    ASSERT_OK(synor_netstore_token_revoke(s, id));
    ASSERT_EQ(synor_netstore_token_auth(s, tok, &p), SYNOR_ENOENT);
    ASSERT_EQ(synor_netstore_token_revoke(s, id + 100), SYNOR_ENOENT);
    ASSERT_EQ(synor_netstore_token_create(s, SYNOR_NET_CONSUMER, "bad owner", tok, &id),
              SYNOR_EINVAL);
    ASSERT_OK(synor_netstore_token_create(s, SYNOR_NET_OPERATOR, "op", tok, &id));
    ASSERT_OK(synor_netstore_has_operator(s, &has));
    ASSERT_EQ(has, 1);
    done(s);
}
TEST(tokens_hashed_and_revoked) { BOTH(tokens_body); }

static void flow_body(void)
{
    synor_netstore *s = fresh(NULL);
    ASSERT(s);
    char sha[65];
    int64_t job = submit(s, "alice", 3, 1, "sum-f32", 1000000, NULL, sha);
    ASSERT(job > 0);
    int64_t dev = device(s, "bob", "bob-cpu0");
    ASSERT(dev > 0);
    /* bob may read the input only while he holds a lease on it */
    synor_net_principal bob = {.role = SYNOR_NET_PROVIDER};
    strcpy(bob.owner, "bob");
    void *data;
    size_t n;
    ASSERT_EQ(synor_netstore_blob_get(s, &bob, sha, &data, &n), SYNOR_ENOENT);
    for (int i = 0; i < 3; i++) {
        synor_net_claim c;
        ASSERT_EQ(synor_netstore_claim(s, "bob", dev, &c), 0);
        ASSERT_EQ(c.job, job);
        ASSERT_STREQ(c.kernel, "sum-f32");
        ASSERT_STREQ(c.params_json, "{\"m\":1,\"k\":2}");
        ASSERT_CONTAINS(c.inputs_json, sha);
        ASSERT_OK(synor_netstore_blob_get(s, &bob, sha, &data, &n));
        ASSERT_EQ(n, sizeof A4);
        free(data);
        double r = 10.0 + i;
        char rs[65];
        synor__strlcpy(rs, "", sizeof rs);
        synor_net_verdict v;
        /* a wrong checksum is refused and changes nothing */
        ASSERT_EQ(synor_netstore_result(s, "bob", c.task, c.lease, &r, sizeof r, sha, 1, &v),
                  SYNOR_EINVAL);
        /* so is another provider's upload */
        extern void synor__ns_sha256_hex(const void *, size_t, char *);
        synor__ns_sha256_hex(&r, sizeof r, rs);
        ASSERT_EQ(synor_netstore_result(s, "mallory", c.task, c.lease, &r, sizeof r, rs, 1, &v),
                  SYNOR_ESTATE);
        ASSERT_EQ(synor_netstore_result(s, "bob", c.task, "Lwrong", &r, sizeof r, rs, 1, &v),
                  SYNOR_ESTATE);
        ASSERT_OK(synor_netstore_result(s, "bob", c.task, c.lease, &r, sizeof r, rs, 5, &v));
        ASSERT_EQ(v, SYNOR_NET_VALIDATED);
        /* twice: the lease has ended */
        ASSERT_EQ(synor_netstore_result(s, "bob", c.task, c.lease, &r, sizeof r, rs, 1, &v),
                  SYNOR_ESTATE);
        synor_net_claim_free(&c);
    }
    synor_net_claim c;
    ASSERT_EQ(synor_netstore_claim(s, "bob", dev, &c), 1);
    ASSERT_EQ(synor_netstore_claim(s, "mallory", dev, &c), SYNOR_ENOENT);
    /* the job is done, its result the shards' in order */
    ASSERT_OK(synor_netstore_job_result(s, "alice", job, &data, &n));
    ASSERT_EQ(n, 3 * sizeof(double));
    double out[3];
    memcpy(out, data, sizeof out);
    free(data);
    ASSERT(out[0] == 10 && out[1] == 11 && out[2] == 12);
    ASSERT_EQ(synor_netstore_job_result(s, "carol", job, &data, &n), SYNOR_ENOENT);
    char *js;
    ASSERT_OK(synor_netstore_job_json(s, "alice", job, &js));
    ASSERT_CONTAINS(js, "\"state\":\"done\"");
    ASSERT_CONTAINS(js, "\"done\":3");
    ASSERT_CONTAINS(js, "\"cost\":\"0.030000\"");
    free(js);
    ASSERT_EQ(synor_netstore_job_json(s, "carol", job, &js), SYNOR_ENOENT);
    ASSERT_EQ(synor_netstore_job_cancel(s, "alice", job), SYNOR_ESTATE);
    /* one ledger entry per task */
    synor_netstore_stats st;
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.ledger_entries, 3);
    ASSERT_EQ(st.tasks_valid, 3);
    ASSERT_EQ(st.jobs_done, 1);
    ASSERT_OK(synor_netstore_earnings_json(s, "bob", &js));
    ASSERT_CONTAINS(js, "\"owner\":\"bob\"");
    free(js);
    /* the consumer may read the results' blobs, not others */
    synor_net_principal alice = {.role = SYNOR_NET_CONSUMER}, carol = alice;
    strcpy(alice.owner, "alice");
    strcpy(carol.owner, "carol");
    ASSERT_OK(synor_netstore_blob_get(s, &alice, sha, &data, &n));
    free(data);
    ASSERT_EQ(synor_netstore_blob_get(s, &carol, sha, &data, &n), SYNOR_ENOENT);
    done(s);
}
TEST(job_flows_and_pays_once) { BOTH(flow_body); }

static void quorum_body(void)
{
    synor_netstore *s = fresh(NULL);
    ASSERT(s);
    char sha[65];
    int64_t job = submit(s, "alice", 1, 3, "sgemm", 1000000, NULL, sha);
    ASSERT(job > 0);
    const char *who[3] = {"p1", "p2", "cheat"};
    int64_t dev[3];
    synor_net_claim c[3];
    for (int i = 0; i < 3; i++) {
        dev[i] = device(s, who[i], "d");
        ASSERT(dev[i] > 0);
        ASSERT_EQ(synor_netstore_claim(s, who[i], dev[i], &c[i]), 0);
    }
    /* p1 cannot take a second replica of the same shard */
    synor_net_claim x;
    ASSERT_EQ(synor_netstore_claim(s, "p1", dev[0], &x), 1);
    float good[4] = {1, 2, 3, 4}, near[4] = {1, 2, 3, 4.00001f}, bad[4] = {1, 2, 3, 5};
    const float *res[3] = {good, near, bad};
    synor_net_verdict v[3];
    int order[3] = {2, 0, 1}; /* the cheat first */
    for (int k = 0; k < 3; k++) {
        int i = order[k];
        char rs[65];
        extern void synor__ns_sha256_hex(const void *, size_t, char *);
        synor__ns_sha256_hex(res[i], sizeof good, rs);
        ASSERT_OK(synor_netstore_result(s, who[i], c[i].task, c[i].lease, res[i], sizeof good, rs,
                                        1, &v[i]));
    }
    ASSERT_EQ(v[2], SYNOR_NET_PENDING);
    ASSERT_EQ(v[0], SYNOR_NET_PENDING);
    ASSERT_EQ(v[1], SYNOR_NET_VALIDATED); /* within 1e-4 of p1's */
    int rep[3];
    for (int i = 0; i < 3; i++) {
        ASSERT_OK(synor_netstore_device_reputation(s, dev[i], &rep[i]));
        synor_net_claim_free(&c[i]);
    }
    ASSERT_EQ(rep[0], 51);
    ASSERT_EQ(rep[1], 51);
    ASSERT_EQ(rep[2], 45);
    char *js;
    ASSERT_OK(synor_netstore_earnings_json(s, "cheat", &js));
    ASSERT_CONTAINS(js, "\"balance\":\"0.000000\"");
    free(js);
    ASSERT_OK(synor_netstore_earnings_json(s, "p1", &js));
    ASSERT(!strstr(js, "\"balance\":\"0.000000\""));
    free(js);
    synor_netstore_stats st;
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.ledger_entries, 2);
    ASSERT_EQ(st.tasks_invalid, 1);
    ASSERT_EQ(st.jobs_done, 1);
    /* the accepted result is p1's (the first of the majority) */
    void *data;
    size_t n;
    ASSERT_OK(synor_netstore_job_result(s, "alice", job, &data, &n));
    ASSERT_EQ(n, sizeof good);
    ASSERT(!memcmp(data, good, n));
    free(data);
    done(s);
}
TEST(quorum_outvotes_a_cheat) { BOTH(quorum_body); }

static void disagree_body(void)
{
    /* two replicas disagreeing: a third is queued; bytewise kernel */
    synor_netstore *s = fresh(NULL);
    ASSERT(s);
    char sha[65];
    int64_t job = submit(s, "alice", 1, 2, "sum-f32", 1000000, NULL, sha);
    ASSERT(job > 0);
    const char *who[3] = {"p1", "p2", "p3"};
    double val[3] = {1.0, 1.0000001, 1.0};
    synor_net_verdict v[3];
    for (int i = 0; i < 3; i++) {
        int64_t d = device(s, who[i], "d");
        synor_net_claim c;
        ASSERT_EQ(synor_netstore_claim(s, who[i], d, &c), 0);
        char rs[65];
        extern void synor__ns_sha256_hex(const void *, size_t, char *);
        synor__ns_sha256_hex(&val[i], 8, rs);
        ASSERT_OK(synor_netstore_result(s, who[i], c.task, c.lease, &val[i], 8, rs, 1, &v[i]));
        synor_net_claim_free(&c);
    }
    ASSERT_EQ(v[0], SYNOR_NET_PENDING);
    ASSERT_EQ(v[1], SYNOR_NET_PENDING);
    ASSERT_EQ(v[2], SYNOR_NET_VALIDATED);
    synor_netstore_stats st;
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.tasks_invalid, 1);
    ASSERT_EQ(st.ledger_entries, 2);
    done(s);
}
TEST(no_majority_adds_a_replica) { BOTH(disagree_body); }

static void lease_body(void)
{
    /* long enough that a loaded machine (CI runs the sanitizer builds side by side) cannot let p2's
       lease lapse between its claim and its result below; it failed once at 0.2 s under load 13 */
    synor_netstore_opts o = {.lease_timeout_s = 1.5};
    synor_netstore *s = fresh(&o);
    ASSERT(s);
    char sha[65];
    int64_t job = submit(s, "alice", 1, 1, "sum-f32", 1000000, NULL, sha);
    ASSERT(job > 0);
    int64_t d1 = device(s, "p1", "d"), d2 = device(s, "p2", "d");
    synor_net_claim c, c2;
    ASSERT_EQ(synor_netstore_claim(s, "p1", d1, &c), 0);
    ASSERT_EQ(synor_netstore_claim(s, "p2", d2, &c2), 1);
    usleep(1700000);
    int n = 0;
    ASSERT_OK(synor_netstore_reap(s, &n));
    ASSERT_EQ(n, 1);
    int rep;
    ASSERT_OK(synor_netstore_device_reputation(s, d1, &rep));
    ASSERT_EQ(rep, 49);
    double r = 1;
    char rs[65];
    extern void synor__ns_sha256_hex(const void *, size_t, char *);
    synor__ns_sha256_hex(&r, 8, rs);
    synor_net_verdict v;
    ASSERT_EQ(synor_netstore_result(s, "p1", c.task, c.lease, &r, 8, rs, 1, &v), SYNOR_ESTATE);
    ASSERT_EQ(synor_netstore_claim(s, "p2", d2, &c2), 0);
    ASSERT_EQ(c2.task, c.task);
    /* a heartbeat renews the lease */
    char *leases = NULL;
    ASSERT_OK(synor_netstore_heartbeat(s, "p2", &d2, 1, 1, &leases));
    ASSERT_CONTAINS(leases, c2.lease);
    free(leases);
    ASSERT_EQ(synor_netstore_heartbeat(s, "p1", &d2, 1, 1, &leases), SYNOR_ENOENT);
    ASSERT_OK(synor_netstore_result(s, "p2", c2.task, c2.lease, &r, 8, rs, 1, &v));
    ASSERT_EQ(v, SYNOR_NET_VALIDATED);
    synor_net_claim_free(&c);
    synor_net_claim_free(&c2);
    /* a device not accepting gets nothing */
    ASSERT(submit(s, "alice", 1, 1, "sum-f32", 1000000, NULL, sha) > 0);
    ASSERT_OK(synor_netstore_heartbeat(s, "p2", &d2, 1, 0, &leases));
    free(leases);
    ASSERT_EQ(synor_netstore_claim(s, "p2", d2, &c2), 1);
    done(s);
}
TEST(leases_expire_and_requeue) { BOTH(lease_body); }

static void budget_body(void)
{
    synor_netstore *s = fresh(NULL);
    ASSERT(s);
    char sha[65];
    /* 2 shards x 3 replicas x 0.01 = 0.06 > 0.05 */
    ASSERT_EQ(submit(s, "alice", 2, 3, "sum-f32", 50000, NULL, sha), -1);
    ASSERT_CONTAINS(synor_errmsg(), "budget");
    int64_t a = submit(s, "alice", 2, 3, "sum-f32", 60000, "ref-1", sha);
    ASSERT(a > 0);
    int64_t b = submit(s, "alice", 2, 3, "sum-f32", 60000, "ref-1", sha);
    ASSERT_EQ(b, a);
    int64_t c = submit(s, "carol", 2, 3, "sum-f32", 60000, "ref-1", sha);
    ASSERT(c > 0 && c != a);
    synor_netstore_stats st;
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.tasks_queued, 12);
    /* an input the consumer never stored is refused */
    const char *in[1] = {"0000000000000000000000000000000000000000000000000000000000000000"};
    synor_net_shard_spec sh = {.inputs = in, .n_inputs = 1};
    synor_net_job_spec j = {.kernel = "sum-f32", .params_json = "{}", .shards = &sh,
                            .n_shards = 1, .replicas = 1, .budget = 1000000};
    int64_t id, n;
    int ex;
    ASSERT_EQ(synor_netstore_job_submit(s, "alice", &j, &id, &n, &ex), SYNOR_ENOENT);
    /* cancel: only the owner */
    ASSERT_EQ(synor_netstore_job_cancel(s, "carol", a), SYNOR_ENOENT);
    ASSERT_OK(synor_netstore_job_cancel(s, "alice", a));
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.tasks_queued, 6);
    ASSERT_EQ(st.tasks_cancelled, 6);
    done(s);
}
TEST(budget_refs_and_cancel) { BOTH(budget_body); }

static void spot_body(void)
{
    synor_netstore_opts o = {.spot_rate = 1.0};
    synor_netstore *s = fresh(&o);
    ASSERT(s);
    double answer = 10;
    char sha[65], want[65];
    extern void synor__ns_sha256_hex(const void *, size_t, char *);
    synor__ns_sha256_hex(&answer, 8, want);
    ASSERT_OK(synor_netstore_blob_put(s, "op", A4, sizeof A4, sha));
    const char *in[1] = {sha};
    synor_net_shard_spec sh = {.inputs = in, .n_inputs = 1, .expect = want};
    synor_net_job_spec j = {.kernel = "sum-f32", .params_json = "{}", .shards = &sh,
                            .n_shards = 1, .replicas = 1, .budget = 1000000};
    int64_t id, n;
    int ex;
    ASSERT_OK(synor_netstore_job_submit(s, "op", &j, &id, &n, &ex));
    int64_t honest = device(s, "honest", "d"), liar = device(s, "liar", "d");
    synor_net_claim c;
    synor_net_verdict v;
    double wrong = 11;
    char ws[65];
    synor__ns_sha256_hex(&wrong, 8, ws);
    ASSERT_EQ(synor_netstore_claim(s, "liar", liar, &c), 0);
    ASSERT_OK(synor_netstore_result(s, "liar", c.task, c.lease, &wrong, 8, ws, 1, &v));
    ASSERT_EQ(v, SYNOR_NET_REJECTED);
    synor_net_claim_free(&c);
    ASSERT_EQ(synor_netstore_claim(s, "honest", honest, &c), 0);
    ASSERT_OK(synor_netstore_result(s, "honest", c.task, c.lease, &answer, 8, want, 1, &v));
    ASSERT_EQ(v, SYNOR_NET_VALIDATED);
    synor_net_claim_free(&c);
    int rep;
    ASSERT_OK(synor_netstore_device_reputation(s, liar, &rep));
    ASSERT_EQ(rep, 40);
    ASSERT_OK(synor_netstore_device_reputation(s, honest, &rep));
    ASSERT_EQ(rep, 51);
    /* each provider gets a known-answer task once */
    ASSERT_EQ(synor_netstore_claim(s, "honest", honest, &c), 1);
    done(s);
}
TEST(spot_checks_judge_alone) { BOTH(spot_body); }

static void reopen_body(void)
{
    if (on_pg)
        return; /* the same database: nothing to reopen */
    synor_netstore *s = fresh(NULL);
    ASSERT(s);
    char sha[65], tok[SYNOR_NET_TOKEN_LEN + 1];
    int64_t tid;
    ASSERT_OK(synor_netstore_token_create(s, SYNOR_NET_PROVIDER, "bob", tok, &tid));
    int64_t job = submit(s, "alice", 2, 1, "sum-f32", 1000000, NULL, sha);
    int64_t dev = device(s, "bob", "d");
    synor_net_claim c;
    ASSERT_EQ(synor_netstore_claim(s, "bob", dev, &c), 0);
    synor_netstore_close(s);
    synor_netstore_opts o = {.url = dbpath};
    ASSERT_OK(synor_netstore_open(&o, &s));
    synor_net_principal p;
    ASSERT_OK(synor_netstore_token_auth(s, tok, &p));
    /* the lease survived the restart */
    double r = 3;
    char rs[65];
    extern void synor__ns_sha256_hex(const void *, size_t, char *);
    synor__ns_sha256_hex(&r, 8, rs);
    synor_net_verdict v;
    ASSERT_OK(synor_netstore_result(s, "bob", c.task, c.lease, &r, 8, rs, 1, &v));
    synor_net_claim_free(&c);
    char *js;
    ASSERT_OK(synor_netstore_job_json(s, NULL, job, &js));
    ASSERT_CONTAINS(js, "\"done\":1");
    free(js);
    done(s);
}
TEST(reopen_keeps_state) { BOTH(reopen_body); }

typedef struct worker {
    synor_netstore *s;
    char owner[16];
    int64_t dev;
    int done, refused, errors;
} worker;

static void *work(void *arg)
{
    extern void synor__ns_sha256_hex(const void *, size_t, char *);
    worker *w = arg;
    for (;;) {
        synor_net_claim c;
        int e = synor_netstore_claim(w->s, w->owner, w->dev, &c);
        if (e == 1)
            break;
        if (e) {
            w->errors++;
            break;
        }
        double r = (double)c.task;
        char rs[65];
        synor__ns_sha256_hex(&r, 8, rs);
        synor_net_verdict v;
        /* a wrong lease, in the same batches as good results */
        if (synor_netstore_result(w->s, w->owner, c.task, "Lbad", &r, 8, rs, 1, &v) == SYNOR_ESTATE)
            w->refused++;
        if (synor_netstore_result(w->s, w->owner, c.task, c.lease, &r, 8, rs, 1, &v) == 0 &&
            v == SYNOR_NET_VALIDATED)
            w->done++;
        else
            w->errors++;
        synor_net_claim_free(&c);
    }
    return NULL;
}

static void concurrent_run(synor_netstore_opts o)
{
    synor_netstore *s = fresh(&o);
    ASSERT(s);
    char sha[65];
    enum { W = 8, TASKS = 8 * 40 };
    /* 40 jobs of 8 shards */
    for (int k = 0; k < 40; k++)
        ASSERT(submit(s, "alice", 8, 1, "sum-f32", 1000000, NULL, sha) > 0);
    worker w[W];
    pthread_t th[W];
    for (int i = 0; i < W; i++) {
        w[i] = (worker){.s = s};
        snprintf(w[i].owner, sizeof w[i].owner, "p%d", i);
        w[i].dev = device(s, w[i].owner, "d");
        ASSERT(w[i].dev > 0);
    }
    for (int i = 0; i < W; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, work, &w[i]), 0);
    int n_done = 0, refused = 0, errors = 0;
    for (int i = 0; i < W; i++) {
        pthread_join(th[i], NULL);
        n_done += w[i].done;
        refused += w[i].refused;
        errors += w[i].errors;
    }
    ASSERT_EQ(errors, 0);
    ASSERT_EQ(n_done, TASKS);
    ASSERT_EQ(refused, TASKS);
    synor_netstore_stats st;
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.ledger_entries, TASKS);
    ASSERT_EQ(st.tasks_valid, TASKS);
    ASSERT_EQ(st.jobs_done, 40);
    ASSERT_EQ(st.tasks_queued + st.tasks_leased, 0);
    /* each job finished once (PostgreSQL: checked after each commit, by
     * whichever result committed last) and charged 8 tasks (its row's cost
     * plus its counter slots') */
    char *ev = NULL;
    ASSERT_OK(synor_netstore_events_json(s, 1000, &ev));
    int finished = 0;
    for (const char *q = ev; (q = strstr(q, "\"job-done\"")); q++)
        finished++;
    free(ev);
    ASSERT_EQ(finished, 40);
    char *js = NULL;
    ASSERT_OK(synor_netstore_jobs_json(s, NULL, &js));
    int charged = 0;
    for (const char *q = js; (q = strstr(q, "\"cost\":\"0.080000\"")); q++)
        charged++;
    free(js);
    ASSERT_EQ(charged, 40);
    done(s);
}
/* PostgreSQL: 3 pooled connections for 8 threads, so they wait for one */
static void concurrent_body(void) { concurrent_run((synor_netstore_opts){.pool = 3}); }
TEST(threads_share_commits) { BOTH(concurrent_body); }

/* PostgreSQL: up to 6 combined calls of claims (and 6 of results) at once
 * instead of 2 (opts.calls, --db-calls): the same accounting */
static void many_calls_body(void) { concurrent_run((synor_netstore_opts){.pool = 8, .calls = 6}); }
TEST(threads_share_commits_in_many_calls) { BOTH(many_calls_body); }

/* claims of several tasks in one transaction; results of several in one
 * commit, each item on its own: a refused one changes nothing of the others */
static void batch_body(void)
{
    extern void synor__ns_sha256_hex(const void *, size_t, char *);
    synor_netstore *s = fresh(NULL);
    ASSERT(s);
    char sha[65];
    int64_t job = submit(s, "alice", 5, 1, "sum-f32", 1000000, NULL, sha);
    ASSERT(job > 0);
    int64_t dev = device(s, "bob", "bob-cpu0");
    ASSERT(dev > 0);
    synor_net_claim c[8];
    size_t n = 0;
    ASSERT_EQ(synor_netstore_claim_many(s, "bob", dev, 0, c, &n), SYNOR_EINVAL);
    ASSERT_EQ(synor_netstore_claim_many(s, "bob", dev, SYNOR_NET_CLAIM_MAX + 1, c, &n),
              SYNOR_EINVAL);
    ASSERT_EQ(synor_netstore_claim_many(s, "mallory", dev, 3, c, &n), SYNOR_ENOENT);
    ASSERT_EQ(synor_netstore_claim_many(s, "bob", dev, 3, c, &n), 0);
    ASSERT_EQ(n, 3);
    size_t more = 0;
    ASSERT_EQ(synor_netstore_claim_many(s, "bob", dev, 8, c + 3, &more), 0);
    ASSERT_EQ(more, 2);
    ASSERT_EQ(synor_netstore_claim_many(s, "bob", dev, 8, c + 5, &more), 1);
    for (size_t i = 0; i < 5; i++) {
        ASSERT_EQ(c[i].job, job);
        ASSERT_STREQ(c[i].kernel, "sum-f32");
        ASSERT_CONTAINS(c[i].inputs_json, sha);
        for (size_t k = 0; k < i; k++) {
            ASSERT(c[i].task != c[k].task);
            /* the tasks of one claim share its lease; two claims do not */
            ASSERT_EQ(!strcmp(c[i].lease, c[k].lease), (i < 3) == (k < 3));
        }
    }
    double r[5];
    char rs[5][65];
    synor_net_result_item it[6];
    for (size_t i = 0; i < 5; i++) {
        r[i] = 20.0 + (double)i;
        synor__ns_sha256_hex(&r[i], sizeof r[i], rs[i]);
        it[i] = (synor_net_result_item){.task = c[i].task, .lease = c[i].lease, .data = &r[i],
                                        .n = sizeof r[i], .sha256 = rs[i], .elapsed_ms = 2};
    }
    /* another provider's batch is refused item by item and changes nothing */
    ASSERT_OK(synor_netstore_results(s, "mallory", it, 2));
    ASSERT_EQ(it[0].rc, SYNOR_ESTATE);
    ASSERT_EQ(it[1].rc, SYNOR_ESTATE);
    synor_netstore_stats st;
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.tasks_leased, 5);
    ASSERT_EQ(st.ledger_entries, 0);
    /* bob's: a wrong checksum, a wrong lease, a repeat of item 0 */
    it[1].sha256 = rs[0];
    it[2].lease = "Lwrong";
    it[5] = it[0];
    ASSERT_OK(synor_netstore_results(s, "bob", it, 6));
    ASSERT_EQ(it[0].rc, 0);
    ASSERT_EQ(it[0].verdict, SYNOR_NET_VALIDATED);
    ASSERT_EQ(it[1].rc, SYNOR_EINVAL);
    ASSERT_CONTAINS(it[1].error, "sha256");
    ASSERT_EQ(it[2].rc, SYNOR_ESTATE);
    ASSERT_EQ(it[3].rc, 0);
    ASSERT_EQ(it[4].rc, 0);
    ASSERT_EQ(it[5].rc, SYNOR_ESTATE);
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.tasks_valid, 3);
    ASSERT_EQ(st.tasks_leased, 2);
    ASSERT_EQ(st.ledger_entries, 3);
    /* the refused ones, sent right, still apply */
    it[0] = it[1];
    it[0].sha256 = rs[1];
    it[1] = it[2];
    it[1].lease = c[2].lease;
    ASSERT_OK(synor_netstore_results(s, "bob", it, 2));
    ASSERT_EQ(it[0].rc, 0);
    ASSERT_EQ(it[1].rc, 0);
    ASSERT_EQ(synor_netstore_results(s, "bob", it, SYNOR_NET_RESULTS_MAX + 1), SYNOR_EINVAL);
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.tasks_valid, 5);
    ASSERT_EQ(st.ledger_entries, 5);
    ASSERT_EQ(st.jobs_done, 1);
    void *data;
    ASSERT_OK(synor_netstore_job_result(s, "alice", job, &data, &n));
    ASSERT_EQ(n, 5 * sizeof(double));
    double out[5];
    memcpy(out, data, sizeof out);
    free(data);
    for (size_t i = 0; i < 5; i++)
        ASSERT(out[i] == 20.0 + (double)i);
    for (size_t i = 0; i < 5; i++)
        synor_net_claim_free(&c[i]);
    done(s);
}
TEST(batch_claims_and_results) { BOTH(batch_body); }

/* Claims of several providers at once, on shards of 3 replicas: on
 * PostgreSQL they share calls of synor_claims (one pick for the call, the
 * shards some claimant holds a replica of left to each claim's own pick).
 * No provider gets two replicas of a shard, no task goes twice, and once
 * every provider has claimed until there is nothing for it, nothing is
 * left queued. */
enum { CL_P = 6, CL_JOBS = 2, CL_SHARDS = 16, CL_REPL = 3 };
enum { CL_TASKS = CL_JOBS * CL_SHARDS * CL_REPL };

typedef struct claimer {
    synor_netstore *s;
    char owner[16];
    int64_t dev;
    int64_t task[CL_TASKS];
    int shard[CL_TASKS]; /* job * CL_SHARDS + the shard's "s" */
    size_t n;
    int errors;
} claimer;

static int64_t cl_job0;

static void claim_until_none(claimer *w)
{
    for (;;) {
        synor_net_claim c[5];
        size_t n = 0;
        int e = synor_netstore_claim_many(w->s, w->owner, w->dev, 5, c, &n);
        if (e == 1)
            return;
        if (e || !n || w->n + n > CL_TASKS) {
            w->errors++;
            return;
        }
        for (size_t i = 0; i < n; i++) {
            const char *q = strstr(c[i].params_json, "\"s\":");
            w->task[w->n] = c[i].task;
            w->shard[w->n++] = q ? (int)(c[i].job - cl_job0) * CL_SHARDS + atoi(q + 4) : -1;
            if (strcmp(c[i].lease, c[0].lease))
                w->errors++; /* the tasks of one claim share its lease */
            synor_net_claim_free(&c[i]);
        }
    }
}

static void *claimer_run(void *arg)
{
    claim_until_none(arg);
    return NULL;
}

static void claims_body(void)
{
    synor_netstore_opts o = {.pool = 2};
    synor_netstore *s = fresh(&o);
    ASSERT(s);
    char sha[65];
    ASSERT_OK(synor_netstore_blob_put(s, "alice", A4, sizeof A4, sha));
    const char *in[1] = {sha};
    char prm[CL_SHARDS][16];
    synor_net_shard_spec sh[CL_SHARDS];
    for (int i = 0; i < CL_SHARDS; i++) {
        snprintf(prm[i], sizeof prm[i], "{\"s\":%d}", i);
        sh[i] = (synor_net_shard_spec){.params_json = prm[i], .inputs = in, .n_inputs = 1};
    }
    for (int j = 0; j < CL_JOBS; j++) {
        synor_net_job_spec js = {.name = "t", .kernel = "sum-f32",
                                 .params_json = "{\"m\":1,\"k\":1}", .shards = sh,
                                 .n_shards = CL_SHARDS, .replicas = CL_REPL, .budget = 1000000};
        int64_t id = -1, tasks = 0;
        int existing = 0;
        ASSERT_OK(synor_netstore_job_submit(s, "alice", &js, &id, &tasks, &existing));
        ASSERT_EQ(tasks, CL_SHARDS * CL_REPL);
        if (!j)
            cl_job0 = id;
        else
            ASSERT_EQ(id, cl_job0 + j);
    }
    static claimer w[CL_P];
    pthread_t th[CL_P];
    for (int i = 0; i < CL_P; i++) {
        w[i] = (claimer){.s = s};
        snprintf(w[i].owner, sizeof w[i].owner, "p%d", i);
        w[i].dev = device(s, w[i].owner, "d");
        ASSERT(w[i].dev > 0);
    }
    for (int i = 0; i < CL_P; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, claimer_run, &w[i]), 0);
    for (int i = 0; i < CL_P; i++)
        pthread_join(th[i], NULL);
    /* what a claim skipped while another held it: each provider once more */
    for (int i = 0; i < CL_P; i++)
        claim_until_none(&w[i]);
    size_t total = 0;
    static int64_t seen[CL_TASKS];
    for (int i = 0; i < CL_P; i++) {
        ASSERT_EQ(w[i].errors, 0);
        for (size_t a = 0; a < w[i].n; a++) {
            ASSERT(w[i].shard[a] >= 0 && w[i].shard[a] < CL_JOBS * CL_SHARDS);
            for (size_t b = 0; b < a; b++)
                ASSERT(w[i].shard[a] != w[i].shard[b]); /* two replicas of one shard */
            ASSERT(total < CL_TASKS);
            for (size_t b = 0; b < total; b++)
                ASSERT(seen[b] != w[i].task[a]); /* a task given twice */
            seen[total++] = w[i].task[a];
        }
    }
    ASSERT_EQ(total, CL_TASKS);
    synor_netstore_stats st;
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.tasks_leased, CL_TASKS);
    ASSERT_EQ(st.tasks_queued, 0);
    done(s);
}
TEST(claims_keep_replicas_apart) { BOTH(claims_body); }

/* One device's results in one call, with a refused item and a repeat among
 * them: each validated replica is paid at the reputation it had when its
 * turn came (one point more per replica before it, in the batch's order),
 * and the device ends that many points up. PostgreSQL's set-based pass
 * (results_pg.c) must pay exactly what SQLite's item-by-item path pays: the
 * amounts of the SQLite run are kept and compared. */
static char paid_sqlite[512];
static void batch_pay_body(void)
{
    extern void synor__ns_sha256_hex(const void *, size_t, char *);
    synor_netstore *s = fresh(NULL);
    ASSERT(s);
    char sha[65];
    int64_t job = submit(s, "alice", 8, 1, "sum-f32", 100000000, NULL, sha);
    ASSERT(job > 0);
    int64_t dev = device(s, "bob", "bob-cpu0");
    ASSERT(dev > 0);
    int rep0 = -1, rep1 = -1;
    ASSERT_OK(synor_netstore_device_reputation(s, dev, &rep0));
    synor_net_claim c[8];
    size_t n = 0;
    ASSERT_EQ(synor_netstore_claim_many(s, "bob", dev, 8, c, &n), 0);
    ASSERT_EQ(n, 8);
    double r[8];
    char rs[8][65];
    synor_net_result_item it[9];
    for (size_t i = 0; i < 8; i++) {
        r[i] = 3.0 * (double)i;
        synor__ns_sha256_hex(&r[i], sizeof r[i], rs[i]);
        it[i] = (synor_net_result_item){.task = c[i].task, .lease = c[i].lease, .data = &r[i],
                                        .n = sizeof r[i], .sha256 = rs[i], .elapsed_ms = 1};
    }
    it[8] = it[6];      /* a repeat: refused, the first one counts */
    it[3].lease = "Lx"; /* refused, the others go on */
    ASSERT_OK(synor_netstore_results(s, "bob", it, 9));
    for (size_t i = 0; i < 8; i++) {
        ASSERT_EQ(it[i].rc, i == 3 ? SYNOR_ESTATE : 0);
        if (i != 3)
            ASSERT_EQ(it[i].verdict, SYNOR_NET_VALIDATED);
    }
    ASSERT_EQ(it[8].rc, SYNOR_ESTATE);
    ASSERT_OK(synor_netstore_device_reputation(s, dev, &rep1));
    ASSERT_EQ(rep1, rep0 + 7 > 100 ? 100 : rep0 + 7);
    /* the amounts, in the ledger's order: never falling (reputation rises) */
    char *json = NULL;
    ASSERT_OK(synor_netstore_earnings_json(s, "bob", &json));
    char amounts[512] = "";
    double last = 0;
    size_t count = 0;
    for (const char *p = json; (p = strstr(p, "\"amount\":\"")); count++) {
        p += 10; /* a decimal string: "0.004500" */
        double a = strtod(p, NULL);
        ASSERT(a > 0 && a >= last);
        last = a;
        char one[32];
        snprintf(one, sizeof one, "%.*s,", (int)strcspn(p, "\""), p);
        strncat(amounts, one, sizeof amounts - strlen(amounts) - 1);
    }
    free(json);
    ASSERT_EQ(count, 7);
    if (!on_pg)
        snprintf(paid_sqlite, sizeof paid_sqlite, "%s", amounts);
    else
        ASSERT_STREQ(amounts, paid_sqlite);
    /* the refused item, sent right, finishes the job */
    it[0] = it[3];
    it[0].lease = c[3].lease;
    ASSERT_OK(synor_netstore_results(s, "bob", it, 1));
    ASSERT_EQ(it[0].rc, 0);
    synor_netstore_stats st;
    ASSERT_OK(synor_netstore_stats_get(s, &st));
    ASSERT_EQ(st.tasks_valid, 8);
    ASSERT_EQ(st.ledger_entries, 8);
    ASSERT_EQ(st.jobs_done, 1);
    for (size_t i = 0; i < 8; i++)
        synor_net_claim_free(&c[i]);
    done(s);
}
TEST(batch_pays_by_reputation) { BOTH(batch_pay_body); }

TEST(availability_hours)
{
    extern int synor__ns_available_now(const char *, time_t);
    time_t h3 = 3 * 3600 + 60, h12 = 12 * 3600, h23 = 23 * 3600 + 59 * 60;
    ASSERT(synor__ns_available_now("always", h3));
    ASSERT(synor__ns_available_now("idle", h3));
    ASSERT(synor__ns_available_now("utc:09-17", h12));
    ASSERT(!synor__ns_available_now("utc:09-17", h3));
    ASSERT(!synor__ns_available_now("utc:09-17", 17 * 3600));
    ASSERT(synor__ns_available_now("utc:22-06", h3));
    ASSERT(synor__ns_available_now("utc:22-06", h23));
    ASSERT(!synor__ns_available_now("utc:22-06", h12));
}

TEST_MAIN(claims_keep_replicas_apart, availability_hours, batch_pays_by_reputation, threads_share_commits,
          threads_share_commits_in_many_calls, schema_versions, tokens_hashed_and_revoked, job_flows_and_pays_once,
          quorum_outvotes_a_cheat, no_majority_adds_a_replica, leases_expire_and_requeue,
          budget_refs_and_cancel, spot_checks_judge_alone, reopen_keeps_state, batch_claims_and_results)

#else
int main(void)
{
    fprintf(stderr, "  skipped: built without nettle: no network store\n");
    return 77;
}
#endif
