/* test_netstore_stages.c - staged jobs in the store (SQLite; tests/cli/
 * stages.sh runs them end to end on SQLite and PostgreSQL): a later
 * stage's tasks wait, not claimable, until every result they read is
 * validated, are queued by the commit that validates the last one, read
 * those results as their input blobs, and run the stage's kernel; the
 * job's result is its last stage's shards in order; malformed stage
 * references are refused; a cancel leaves nothing waiting. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "synor.h"
#include "test.h"

#if SYNOR_HAVE_NETSTORE

extern void synor__ns_sha256_hex(const void *, size_t, char *);

static char path[64];

static synor_netstore *fresh(void)
{
    snprintf(path, sizeof path, "/tmp/synor-stages-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    close(fd);
    unlink(path);
    synor_netstore_opts o = {.url = path};
    synor_netstore *s = NULL;
    return synor_netstore_open(&o, &s) ? NULL : s;
}

static void done(synor_netstore *s)
{
    synor_netstore_close(s);
    char p[80];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

/* stage 0: shards 0, 1 read x; stage 1: shard 2 reads shard 0's result and
 * w, shard 3 shard 0's and shard 1's */
static int submit(synor_netstore *s, const char *x, const char *w, const long *from2,
                  const long *from3, int64_t *job)
{
    const char *in0[1] = {x}, *in2[2] = {NULL, w}, *in3[2] = {NULL, NULL};
    synor_net_shard_spec sh[4] = {
        {.inputs = in0, .n_inputs = 1, .kernel = "sum-f32"},
        {.inputs = in0, .n_inputs = 1, .kernel = "sum-f32"},
        {.inputs = in2, .n_inputs = 2, .stage = 1, .kernel = "k2", .from = from2,
         .params_json = "{\"n\":2}"},
        {.inputs = in3, .n_inputs = 2, .stage = 1, .kernel = "k2", .from = from3},
    };
    synor_net_job_spec j = {.name = "staged", .kernel = "k2", .params_json = "{}", .shards = sh,
                            .n_shards = 4, .replicas = 1, .budget = 1000000};
    int64_t tasks = 0;
    int existing = 0;
    return synor_netstore_job_submit(s, "alice", &j, job, &tasks, &existing);
}

static void report(synor_netstore *s, const synor_net_claim *c, double v, char sha[65])
{
    synor_net_verdict verdict;
    synor__ns_sha256_hex(&v, sizeof v, sha);
    ASSERT_OK(synor_netstore_result(s, "bob", c->task, c->lease, &v, sizeof v, sha, 1, &verdict));
    ASSERT_EQ(verdict, SYNOR_NET_VALIDATED);
}

TEST(later_stages_wait_for_validated_results)
{
    synor_netstore *s = fresh();
    ASSERT(s);
    static const float X[2] = {1, 2}, W[2] = {3, 4};
    char x[65], w[65], r0[65], r1[65], r2[65], r3[65];
    ASSERT_OK(synor_netstore_blob_put(s, "alice", X, sizeof X, x));
    ASSERT_OK(synor_netstore_blob_put(s, "alice", W, sizeof W, w));
    static const long from2[2] = {0, -1}, from3[2] = {0, 1};
    int64_t job = 0;
    ASSERT_OK(submit(s, x, w, from2, from3, &job));
    char *js;
    ASSERT_OK(synor_netstore_job_json(s, "alice", job, &js));
    ASSERT_CONTAINS(js, "\"tasks\":4");
    ASSERT_CONTAINS(js, "\"waiting\":2");
    ASSERT_CONTAINS(js, "\"stage\":1");
    free(js);
    synor_net_device d = {.name = "d", .kind = "cpu", .gflops = 1, .mem_bytes = 1 << 20};
    int64_t dev = 0;
    ASSERT_OK(synor_netstore_device_register(s, "bob", &d, &dev));
    synor_net_principal bob = {.role = SYNOR_NET_PROVIDER};
    strcpy(bob.owner, "bob");
    /* stage 0 only */
    synor_net_claim c0, c1, c2, c3, none;
    ASSERT_EQ(synor_netstore_claim(s, "bob", dev, &c0), 0);
    ASSERT_EQ(synor_netstore_claim(s, "bob", dev, &c1), 0);
    ASSERT_STREQ(c0.kernel, "sum-f32");
    ASSERT_EQ(synor_netstore_claim(s, "bob", dev, &none), 1);
    /* shard 0 validated: shard 2 (reads it and w) is queued, shard 3 waits for shard 1 */
    report(s, &c0, 10.0, r0);
    ASSERT_OK(synor_netstore_job_json(s, "alice", job, &js));
    ASSERT_CONTAINS(js, "\"waiting\":1");
    free(js);
    ASSERT_EQ(synor_netstore_claim(s, "bob", dev, &c2), 0);
    ASSERT_STREQ(c2.kernel, "k2");
    ASSERT_CONTAINS(c2.params_json, "\"n\":2");
    ASSERT_CONTAINS(c2.inputs_json, r0);
    ASSERT_CONTAINS(c2.inputs_json, w);
    ASSERT(strstr(c2.inputs_json, r0) < strstr(c2.inputs_json, w)); /* in the shard's order */
    void *data;
    size_t n;
    ASSERT_OK(synor_netstore_blob_get(s, &bob, r0, &data, &n)); /* the lease reads the result */
    ASSERT_EQ(n, sizeof(double));
    free(data);
    ASSERT_EQ(synor_netstore_claim(s, "bob", dev, &none), 1);
    report(s, &c1, 11.0, r1);
    ASSERT_EQ(synor_netstore_claim(s, "bob", dev, &c3), 0);
    ASSERT_CONTAINS(c3.inputs_json, r0);
    ASSERT_CONTAINS(c3.inputs_json, r1);
    ASSERT_EQ(synor_netstore_job_result(s, "alice", job, &data, &n), SYNOR_ESTATE);
    report(s, &c2, 12.0, r2);
    report(s, &c3, 13.0, r3);
    /* the result: the last stage's shards in order */
    ASSERT_OK(synor_netstore_job_result(s, "alice", job, &data, &n));
    ASSERT_EQ(n, 2 * sizeof(double));
    double out[2];
    memcpy(out, data, sizeof out);
    free(data);
    ASSERT(out[0] == 12.0 && out[1] == 13.0);
    ASSERT_OK(synor_netstore_job_json(s, "alice", job, &js));
    ASSERT_CONTAINS(js, "\"state\":\"done\"");
    ASSERT_CONTAINS(js, "\"waiting\":0");
    free(js);
    synor_net_claim_free(&c0);
    synor_net_claim_free(&c1);
    synor_net_claim_free(&c2);
    synor_net_claim_free(&c3);
    done(s);
}

TEST(bad_references_refused_and_cancel_clears_waiting)
{
    synor_netstore *s = fresh();
    ASSERT(s);
    static const float X[2] = {1, 2};
    char x[65], *js;
    ASSERT_OK(synor_netstore_blob_put(s, "alice", X, sizeof X, x));
    synor_net_device d = {.name = "d", .kind = "cpu", .gflops = 1, .mem_bytes = 1 << 20};
    int64_t dev = 0;
    ASSERT_OK(synor_netstore_device_register(s, "bob", &d, &dev));
    synor_net_claim none;
    /* refused: a stage reading its own stage, a later shard */
    static const long from2[2] = {0, -1}, from3[2] = {0, 1};
    static const long same[2] = {2, -1}, later[2] = {3, -1};
    const char *w = x;
    int64_t j2 = 0;
    ASSERT_EQ(submit(s, x, w, from2, same, &j2), SYNOR_EINVAL);
    ASSERT_EQ(submit(s, x, w, later, from3, &j2), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "shards[2].inputs[0]");
    /* a cancelled staged job leaves nothing waiting */
    ASSERT_OK(submit(s, x, w, from2, from3, &j2));
    ASSERT_EQ(synor_netstore_claim(s, "bob", dev, &none), 0);
    synor_net_claim_free(&none);
    ASSERT_OK(synor_netstore_job_cancel(s, "alice", j2));
    ASSERT_OK(synor_netstore_job_json(s, "alice", j2, &js));
    ASSERT_CONTAINS(js, "\"waiting\":0");
    free(js);
    ASSERT_EQ(synor_netstore_claim(s, "bob", dev, &none), 1);
    done(s);
}

TEST_MAIN(later_stages_wait_for_validated_results, bad_references_refused_and_cancel_clears_waiting)

#else
int main(void)
{
    fprintf(stderr, "  skipped: built without nettle: no network store\n");
    return 77;
}
#endif
