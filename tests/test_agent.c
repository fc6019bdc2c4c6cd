/* test_agent.c - the provider agent's parts that need no coordinator: its
 * kernels on the runtime (sgemm against a plain triple loop across tile
 * edges, spotrf's L L^T against A, sum-f32 independent of the worker
 * count, llm-generate deterministic for a seed), its checkpoints (sgemm,
 * sum-f32, spotrf and llm-generate stopped at safe points and resumed bit
 * for bit on another worker count; ill-fitting ones ignored), its refusals, the
 * wrong-results fault beyond the quorum tolerance, the state directory
 * (pending results kept, a torn one dropped, one agent per directory), the
 * network client's checksums, retries and errors, and the config checks.
 * The agent against a coordinator: tests/cli/agent.sh. Label concurrency
 * (runtime workers; the client is used from several threads there). */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "common/common.h"
#include "synor.h"
#include "test.h"

static char dir[64];

static void tmp_path(char *buf, size_t n, const char *leaf)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/synor-agent-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    snprintf(buf, n, "%s/%s", dir, leaf);
}

static void fill(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(seed >> 40) / (double)(1 << 24) * 2.0 - 1.0);
    }
}

/* C = A B, row-major, with a plain triple loop, compared with the agent's
 * sgemm (the runtime's tiled BLAS) at sizes that cross tile edges. */
TEST(sgemm_matches_a_triple_loop)
{
    const size_t sizes[][3] = {{1, 1, 1}, {37, 29, 53}, {300, 270, 260}};
    for (size_t c = 0; c < 3; c++) {
        size_t m = sizes[c][0], n = sizes[c][1], k = sizes[c][2];
        float *a = malloc(m * k * 4), *b = malloc(k * n * 4);
        fill(a, m * k, 1 + c);
        fill(b, k * n, 100 + c);
        char params[128];
        snprintf(params, sizeof params, "{\"m\":%zu,\"n\":%zu,\"k\":%zu}", m, n, k);
        const void *in[2] = {a, b};
        size_t len[2] = {m * k * 4, k * n * 4};
        void *out = NULL;
        size_t out_len = 0;
        ASSERT_OK(synor_agent_execute("sgemm", params, 2, in, len, 2, NULL, &out, &out_len));
        ASSERT_EQ(out_len, m * n * 4);
        const float *got = out;
        size_t bad = 0;
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double s = 0;
                for (size_t l = 0; l < k; l++)
                    s += (double)a[i * k + l] * (double)b[l * n + j];
                double g = got[i * n + j];
                if (!(fabs(g - s) <= 1e-4 * fmax(1.0, fmax(fabs(g), fabs(s)))))
                    bad++;
            }
        free(a);
        free(b);
        free(out);
        ASSERT_EQ(bad, 0);
    }
}

TEST(spotrf_factor_reproduces_a)
{
    size_t n = 300;
    float *m = malloc(n * n * 4), *a = malloc(n * n * 4);
    fill(m, n * n, 7);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double s = i == j ? (double)n : 0;
            for (size_t l = 0; l < n; l++)
                s += (double)m[i * n + l] * m[j * n + l];
            a[i * n + j] = (float)s;
        }
    char params[64];
    snprintf(params, sizeof params, "{\"n\":%zu}", n);
    const void *in[1] = {a};
    size_t len[1] = {n * n * 4};
    void *out = NULL;
    size_t out_len = 0;
    ASSERT_OK(synor_agent_execute("spotrf", params, 1, in, len, 2, NULL, &out, &out_len));
    ASSERT_EQ(out_len, n * n * 4);
    const float *l = out;
    size_t bad = 0, upper = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            if (j > i && l[i * n + j] != 0)
                upper++;
            double s = 0;
            for (size_t t = 0; t <= (i < j ? i : j); t++)
                s += (double)l[i * n + t] * l[j * n + t];
            if (!(fabs(s - a[i * n + j]) <= 1e-4 * fmax(1.0, fabs((double)a[i * n + j]))))
                bad++;
        }
    free(m);
    free(a);
    free(out);
    ASSERT_EQ(upper, 0);
    ASSERT_EQ(bad, 0);
}

/* The partial sums are added in chunk order: the same bits whatever the
 * number of workers, and the chunked sum computed here. */
TEST(sum_f32_does_not_depend_on_the_workers)
{
    size_t n = 200001, chunk = 1u << 16;
    float *x = malloc(n * 4);
    fill(x, n, 3);
    double want = 0;
    for (size_t c = 0; c < n; c += chunk) {
        double s = 0;
        for (size_t i = c; i < n && i < c + chunk; i++)
            s += x[i];
        want += s;
    }
    const void *in[1] = {x};
    size_t len[1] = {n * 4};
    for (unsigned w = 1; w <= 2; w++) {
        void *out = NULL;
        size_t out_len = 0;
        ASSERT_OK(synor_agent_execute("sum-f32", NULL, 1, in, len, w, NULL, &out, &out_len));
        ASSERT_EQ(out_len, 8);
        double got;
        memcpy(&got, out, 8);
        free(out);
        if (memcmp(&got, &want, 8))
            TEST__FAIL("workers %u: %.17g, expected %.17g", w, got, want);
    }
    /* no data: 0 */
    void *out = NULL;
    size_t out_len = 0;
    size_t zero = 0;
    ASSERT_OK(synor_agent_execute("sum-f32", "{}", 1, in, &zero, 1, NULL, &out, &out_len));
    double z;
    memcpy(&z, out, 8);
    ASSERT(z == 0);
    free(out);
    free(x);
}

TEST(llm_generate_is_deterministic_for_a_seed)
{
    char path[128];
    tmp_path(path, sizeof path, "tiny.gguf");
    synor_llm_synth s = {.cfg = {.dim = 64, .hidden_dim = 96, .n_layers = 2, .n_heads = 4,
                                 .n_kv_heads = 2, .vocab_size = 300, .seq_len = 64,
                                 .shared_classifier = 1},
                         .seed = 5};
    ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_F32, path));
    synor_agent_config cfg;
    synor_agent_config_init(&cfg);
    cfg.n_models = 1;
    cfg.models[0].name = "tiny";
    cfg.models[0].path = path;
    const char *p = "{\"model\":\"tiny\",\"prompt\":\"hello\",\"n\":12,\"seed\":9}";
    void *o1 = NULL, *o2 = NULL;
    size_t n1 = 0, n2 = 0;
    ASSERT_OK(synor_agent_execute("llm-generate", p, 0, NULL, NULL, 1, &cfg, &o1, &n1));
    ASSERT_OK(synor_agent_execute("llm-generate", p, 0, NULL, NULL, 2, &cfg, &o2, &n2));
    ASSERT(n1 > 0 && n1 % 4 == 0 && n1 <= 12 * 4);
    ASSERT_EQ(n1, n2);
    ASSERT(!memcmp(o1, o2, n1));
    for (size_t i = 0; i < n1 / 4; i++) {
        int32_t t;
        memcpy(&t, (char *)o1 + 4 * i, 4);
        ASSERT(t >= 0 && t < 300);
    }
    free(o1);
    free(o2);
    /* a model the agent does not serve */
    void *o = NULL;
    size_t n = 0;
    ASSERT_EQ(synor_agent_execute("llm-generate", "{\"model\":\"big\",\"prompt\":\"x\"}", 0, NULL,
                                  NULL, 1, &cfg, &o, &n),
              SYNOR_ENOENT);
    ASSERT_CONTAINS(synor_errmsg(), "'big'");
}

TEST(bad_tasks_are_refused_naming_the_field)
{
    float a[4] = {0};
    const void *in[2] = {a, a};
    size_t len[2] = {16, 12};
    void *out = NULL;
    size_t n = 0;
    ASSERT_EQ(synor_agent_execute("sgemm", "{\"m\":2,\"n\":2,\"k\":2}", 2, in, len, 1, NULL, &out,
                                  &n),
              SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "input 1");
    ASSERT_EQ(synor_agent_execute("sgemm", "{\"m\":2,\"n\":2}", 2, in, len, 1, NULL, &out, &n),
              SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "params.k");
    ASSERT(synor_agent_execute("sgemm", "{\"m\":0,\"n\":2,\"k\":2}", 2, in, len, 1, NULL, &out,
                               &n) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "params.m");
    ASSERT_EQ(synor_agent_execute("sgemm", "{\"m\":2,\"n\":2,\"k\":2}", 1, in, len, 1, NULL, &out,
                                  &n),
              SYNOR_ESCHEMA);
    ASSERT_EQ(synor_agent_execute("fft", "{}", 0, NULL, NULL, 1, NULL, &out, &n), SYNOR_ENOTSUP);
    ASSERT_CONTAINS(synor_errmsg(), "'fft'");
    size_t odd = 6;
    ASSERT_EQ(synor_agent_execute("sum-f32", "{}", 1, in, &odd, 1, NULL, &out, &n),
              SYNOR_ESCHEMA);
    /* not positive definite */
    float neg[4] = {-1, 0, 0, -1};
    const void *nin[1] = {neg};
    size_t nlen[1] = {16};
    ASSERT(synor_agent_execute("spotrf", "{\"n\":2}", 1, nin, nlen, 1, NULL, &out, &n) < 0);
    ASSERT(out == NULL);
}

/* The cheating agent's results must fail the quorum comparison everywhere. */
TEST(wrong_results_are_beyond_the_tolerance)
{
    float v[6] = {0, 1, -1, 1e-3f, 1e6f, -2.5f}, w[6];
    memcpy(w, v, sizeof v);
    synor__agent_corrupt("sgemm", w, sizeof w);
    for (int i = 0; i < 6; i++)
        ASSERT(fabs((double)w[i] - v[i]) > 1e-4 * fmax(1.0, fmax(fabs(v[i]), fabs(w[i]))));
    double s = 3.0;
    synor__agent_corrupt("sum-f32", &s, sizeof s);
    ASSERT(s == 4.0);
    int32_t t[2] = {5, 0};
    synor__agent_corrupt("llm-generate", t, sizeof t);
    ASSERT(t[0] == 6 && t[1] == 1);
}

TEST(state_dir_keeps_results_until_dropped)
{
    if (!synor_netclient_available())
        TEST_SKIP("built without nettle: no SHA-256 to name and check the files");
    char sd[128];
    tmp_path(sd, sizeof sd, "state");
    int fd = -1, fd2 = -1;
    ASSERT_OK(synor__agent_state_open(sd, &fd));
    ASSERT_EQ(synor__agent_state_open(sd, &fd2), SYNOR_EBUSY);
    ASSERT_CONTAINS(synor_errmsg(), "another agent");
    synor__agent_pending p;
    memset(&p, 0, sizeof p);
    char bytes[] = "result bytes";
    strcpy(p.task, "t-1/../weird name");
    strcpy(p.lease, "L-1");
    p.data = bytes;
    p.len = sizeof bytes;
    p.elapsed_ms = 42;
    synor_netclient_sha256(bytes, sizeof bytes, p.sha256);
    ASSERT_OK(synor__agent_state_save_pending(sd, &p));
    strcpy(p.task, "t-2");
    ASSERT_OK(synor__agent_state_save_pending(sd, &p));
    synor__agent_pending *list = NULL;
    size_t n = 0;
    ASSERT_OK(synor__agent_state_load_pending(sd, &list, &n));
    ASSERT_EQ(n, 2);
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ(list[i].len, sizeof bytes);
        ASSERT(!memcmp(list[i].data, bytes, sizeof bytes));
        ASSERT_STREQ(list[i].lease, "L-1");
        ASSERT_EQ(list[i].elapsed_ms, 42);
        seen |= !strcmp(list[i].task, "t-1/../weird name") ? 1 : !strcmp(list[i].task, "t-2") ? 2 : 0;
    }
    ASSERT_EQ(seen, 3);
    synor__agent_pending_free_all(list, n);
    /* t-2's bytes torn: dropped at load, never sent */
    char res[256], h[65];
    synor_netclient_sha256("t-2", 3, h);
    snprintf(res, sizeof res, "%s/pending/%.32s.res", sd, h);
    FILE *f = fopen(res, "r+b");
    ASSERT(f != NULL);
    fputc('X', f);
    fclose(f);
    ASSERT_OK(synor__agent_state_load_pending(sd, &list, &n));
    ASSERT_EQ(n, 1);
    ASSERT_STREQ(list[0].task, "t-1/../weird name");
    synor__agent_pending_free_all(list, n);
    ASSERT(access(res, F_OK) != 0);
    ASSERT_OK(synor__agent_state_drop_pending(sd, "t-1/../weird name"));
    ASSERT_OK(synor__agent_state_load_pending(sd, &list, &n));
    ASSERT_EQ(n, 0);
    synor__agent_pending_free_all(list, n);
    /* device ids */
    synor_agent_device devs[2];
    memset(devs, 0, sizeof devs);
    strcpy(devs[0].name, "cpu0");
    strcpy(devs[1].name, "gpu0");
    char ids[2][64] = {"dev-1", "dev-2"}, back[2][64] = {"", ""};
    ASSERT_OK(synor__agent_state_save_ids(sd, "http://x", 2, devs, ids));
    ASSERT_OK(synor__agent_state_load_ids(sd, 2, devs, back));
    ASSERT_STREQ(back[0], "dev-1");
    ASSERT_STREQ(back[1], "dev-2");
    close(fd);
    ASSERT_OK(synor__agent_state_open(sd, &fd2)); /* free again */
    close(fd2);
}

TEST(netclient_checksums_and_errors)
{
    char h[65];
    synor_netclient_sha256("abc", 3, h);
    if (!synor_netclient_available())
        TEST_SKIP("built without libcurl and nettle");
    ASSERT_STREQ(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    ASSERT(synor_netclient_is_sha256(h));
    h[3] = 'G';
    ASSERT(!synor_netclient_is_sha256(h));
    synor_netclient_config cfg;
    synor_netclient_config_init(&cfg);
    synor_netclient *c = NULL;
    cfg.url = "ftp://x";
    ASSERT_EQ(synor_netclient_create(&cfg, &c), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "ftp://x");
    /* nothing listens on port 1: refused, retried, then SYNOR_EIO */
    cfg.url = "http://127.0.0.1:1/";
    cfg.retries = 2;
    cfg.backoff_s = 0.01;
    cfg.backoff_max_s = 0.02;
    ASSERT_OK(synor_netclient_create(&cfg, &c));
    synor_net_request r = {.method = "GET", .path = "/health"};
    synor_net_response a;
    ASSERT_EQ(synor_netclient_request(c, &r, &a), SYNOR_EIO);
    ASSERT_CONTAINS(synor_errmsg(), "http://127.0.0.1:1/health");
    ASSERT_CONTAINS(synor_errmsg(), "3 attempts");
    /* cancelled: a cancellable request returns at once */
    synor_netclient_cancel(c);
    r.cancellable = 1;
    ASSERT_EQ(synor_netclient_request(c, &r, &a), SYNOR_EBUSY);
    synor_netclient_uncancel(c);
    void *data = NULL;
    size_t n = 0;
    ASSERT_EQ(synor_netclient_blob_get(c, "nope", SIZE_MAX, &data, &n), SYNOR_EINVAL);
    synor_netclient_destroy(c);
    /* an answer's error text */
    char body[] = "{\"error\":\"field 'x': value 'y': why\"}";
    synor_net_response e = {.status = 400, .body = body, .len = sizeof body - 1};
    ASSERT_EQ(synor_net_response_check(&e, "POST /v1/jobs"), SYNOR_EINVAL);
    ASSERT_STREQ(synor_errmsg(), "POST /v1/jobs: HTTP 400: field 'x': value 'y': why");
    e.status = 409;
    ASSERT_EQ(synor_net_response_check(&e, "w"), SYNOR_ESTATE);
    e.status = 404;
    ASSERT_EQ(synor_net_response_check(&e, "w"), SYNOR_ENOENT);
    e.status = 204;
    ASSERT_OK(synor_net_response_check(&e, "w"));
}

TEST(agent_config_is_checked)
{
    synor_agent_config cfg;
    synor_agent_config_init(&cfg);
    cfg.net.url = "http://127.0.0.1:1";
    synor_agent *a = NULL;
    ASSERT_EQ(synor_agent_create(&cfg, &a), SYNOR_EINVAL); /* no device */
    ASSERT_CONTAINS(synor_errmsg(), "devices");
    cfg.n_devices = 1;
    strcpy(cfg.devices[0].name, "cpu0");
    cfg.cpu_share = 0;
    ASSERT_EQ(synor_agent_create(&cfg, &a), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "cpu share");
    cfg.cpu_share = 0.5;
    cfg.mem_share = 1.5;
    ASSERT_EQ(synor_agent_create(&cfg, &a), SYNOR_EINVAL);
    cfg.mem_share = 1;
    ASSERT(cfg.idle_threshold == 0.10);
    cfg.idle_threshold = 0;
    ASSERT_EQ(synor_agent_create(&cfg, &a), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "idle threshold 0");
    cfg.idle_threshold = 0.9;
    if (!synor_netclient_available())
        TEST_SKIP("built without libcurl and nettle");
    ASSERT_OK(synor_agent_create(&cfg, &a));
    synor_agent_stats st;
    synor_agent_stats_get(a, &st);
    ASSERT(st.workers >= 1);
    ASSERT_STREQ(synor_agent_device_id(a, 0), "");
    synor_agent_destroy(a);
}

/* Stops a task at its n-th safe point. */
typedef struct stopper {
    unsigned n, seen;
} stopper;

static int stop_at(void *user)
{
    stopper *s = user;
    return ++s->seen >= s->n;
}

/* Runs kernel on the executor: stopped at safe point stop (0: never), or
 * resumed from ck_in; *out is the result or the checkpoint. */
static int run_ck(synor__agent_exec *x, const char *kernel, const char *params, size_t ni,
                  const void *const *in, const size_t *len, unsigned stop, const void *ck_in,
                  size_t ck_len, void **out, size_t *out_len, synor__agent_ckpt *ck)
{
    synor__jdoc *d = NULL;
    if (synor__json_parse(params, strlen(params), "params", &d))
        return -1;
    stopper st = {stop, 0};
    *ck = (synor__agent_ckpt){.in = ck_in, .in_len = ck_len, .stop = stop ? stop_at : NULL,
                              .user = &st};
    int r = synor__agent_exec_run_ck(x, NULL, kernel, d, synor__jdoc_root(d), ni, in, len, out,
                                     out_len, NULL, 0, ck);
    if (r == SYNOR__AGENT_STOPPED) {
        *out = ck->out;
        *out_len = ck->out_len;
    }
    synor__jdoc_free(d);
    return r;
}

/* Preemption: sgemm stopped after 1 and 2 of its 3 row strips, sum-f32
 * after 2 of its 5 chunk groups, resumed from the checkpoint: the same
 * bits as a run never stopped; checkpoints that do not fit (cut short,
 * another kernel's, other dimensions) are ignored, saying why, and the
 * task starts over. */
TEST(checkpoints_resume_bit_for_bit)
{
    synor__agent_exec *x = NULL;
    ASSERT_OK(synor__agent_exec_create(1, NULL, &x)); /* 1 worker: a block per strip */
    size_t m = 600, n = 600, k = 90;
    float *a = malloc(m * k * 4), *b = malloc(k * n * 4);
    fill(a, m * k, 7);
    fill(b, k * n, 8);
    const void *in[2] = {a, b};
    size_t len[2] = {m * k * 4, k * n * 4};
    const char *pm = "{\"m\":600,\"n\":600,\"k\":90}";
    void *ref = NULL, *ck1 = NULL, *out = NULL;
    size_t ref_len = 0, ck1_len = 0, out_len = 0;
    synor__agent_ckpt ck;
    ASSERT_EQ(run_ck(x, "sgemm", pm, 2, in, len, 0, NULL, 0, &ref, &ref_len, &ck), 0);
    ASSERT_EQ(ck.total, 3);
    ASSERT_EQ(ref_len, m * n * 4);
    for (unsigned at = 1; at <= 2; at++) {
        ASSERT_EQ(run_ck(x, "sgemm", pm, 2, in, len, at, NULL, 0, &ck1, &ck1_len, &ck),
                  SYNOR__AGENT_STOPPED);
        ASSERT_EQ(ck.done, at);
        ASSERT(ck1_len > at * 256 * n * 4);
        /* resumed by an executor of another block height */
        synor__agent_exec *x2 = NULL;
        ASSERT_OK(synor__agent_exec_create(8, NULL, &x2));
        ASSERT_EQ(run_ck(x2, "sgemm", pm, 2, in, len, 0, ck1, ck1_len, &out, &out_len, &ck), 0);
        synor__agent_exec_destroy(x2);
        ASSERT_EQ(ck.resumed, at);
        ASSERT_STREQ(ck.ignored, "");
        ASSERT_EQ(out_len, ref_len);
        ASSERT(!memcmp(out, ref, ref_len));
        free(out);
        if (at == 2)
            break;
        free(ck1);
    }
    /* cut short, and for other dimensions: ignored, the same answer */
    ASSERT_EQ(run_ck(x, "sgemm", pm, 2, in, len, 0, ck1, ck1_len - 4, &out, &out_len, &ck), 0);
    ASSERT_EQ(ck.resumed, 0);
    ASSERT_CONTAINS(ck.ignored, "size");
    ASSERT(!memcmp(out, ref, ref_len));
    free(out);
    const char *pm2 = "{\"m\":600,\"n\":600,\"k\":89}";
    size_t len2[2] = {m * 89 * 4, 89 * n * 4};
    ASSERT_EQ(run_ck(x, "sgemm", pm2, 2, in, len2, 0, ck1, ck1_len, &out, &out_len, &ck), 0);
    ASSERT_CONTAINS(ck.ignored, "dimensions");
    free(out);
    /* sum-f32: 10 chunks in 5 groups of 2 */
    size_t nx = 9 * 65536 + 5;
    float *v = malloc(nx * 4);
    fill(v, nx, 9);
    const void *vin[1] = {v};
    size_t vlen[1] = {nx * 4};
    void *sref = NULL, *sck = NULL;
    size_t sref_len = 0, sck_len = 0;
    ASSERT_EQ(run_ck(x, "sum-f32", "{}", 1, vin, vlen, 0, NULL, 0, &sref, &sref_len, &ck), 0);
    ASSERT_EQ(ck.total, 5);
    ASSERT_EQ(run_ck(x, "sum-f32", "{}", 1, vin, vlen, 2, NULL, 0, &sck, &sck_len, &ck),
              SYNOR__AGENT_STOPPED);
    ASSERT_EQ(run_ck(x, "sum-f32", "{}", 1, vin, vlen, 0, sck, sck_len, &out, &out_len, &ck), 0);
    ASSERT_EQ(ck.resumed, 2);
    ASSERT_EQ(out_len, 8);
    ASSERT(!memcmp(out, sref, 8));
    free(out);
    /* another kernel's checkpoint */
    ASSERT_EQ(run_ck(x, "sgemm", pm, 2, in, len, 0, sck, sck_len, &out, &out_len, &ck), 0);
    ASSERT_CONTAINS(ck.ignored, "another kernel");
    ASSERT(!memcmp(out, ref, ref_len));
    free(out);
    free(sref), free(sck), free(v), free(ref), free(ck1), free(a), free(b);
    synor__agent_exec_destroy(x);
}

/* spotrf stopped after 1 and 2 of its 3 panels, resumed by an executor of
 * another worker count from the partially factored matrix: the same bits
 * as a run never stopped. */
TEST(spotrf_checkpoints_resume_bit_for_bit)
{
    size_t n = 600;
    float *a = malloc(n * n * 4);
    fill(a, n * n, 11);
    for (size_t i = 0; i < n; i++) /* symmetric, diagonally dominant */
        for (size_t j = 0; j <= i; j++)
            a[i * n + j] = a[j * n + i] = i == j ? (float)n : a[i * n + j];
    const void *in[1] = {a};
    size_t len[1] = {n * n * 4};
    const char *pm = "{\"n\":600}";
    synor__agent_exec *x = NULL, *x2 = NULL;
    ASSERT_OK(synor__agent_exec_create(2, NULL, &x));
    ASSERT_OK(synor__agent_exec_create(1, NULL, &x2));
    void *ref = NULL, *ck1 = NULL, *out = NULL;
    size_t ref_len = 0, ck1_len = 0, out_len = 0;
    synor__agent_ckpt ck;
    ASSERT_EQ(run_ck(x, "spotrf", pm, 1, in, len, 0, NULL, 0, &ref, &ref_len, &ck), 0);
    ASSERT_EQ(ck.total, 3);
    for (unsigned at = 1; at <= 2; at++) {
        ASSERT_EQ(run_ck(x, "spotrf", pm, 1, in, len, at, NULL, 0, &ck1, &ck1_len, &ck),
                  SYNOR__AGENT_STOPPED);
        ASSERT_EQ(ck.done, at);
        ASSERT_EQ(ck1_len, 64 + n * n * 4);
        ASSERT_EQ(run_ck(x2, "spotrf", pm, 1, in, len, 0, ck1, ck1_len, &out, &out_len, &ck), 0);
        ASSERT_EQ(ck.resumed, at);
        ASSERT_STREQ(ck.ignored, "");
        ASSERT_EQ(out_len, ref_len);
        ASSERT(!memcmp(out, ref, ref_len));
        free(out);
        free(ck1);
    }
    free(ref), free(a);
    synor__agent_exec_destroy(x);
    synor__agent_exec_destroy(x2);
}

static void llm_models(synor_agent_config *cfg, const char *path)
{
    synor_agent_config_init(cfg);
    cfg->n_models = 1;
    cfg->models[0].name = "tiny";
    cfg->models[0].path = path;
}

/* llm-generate stopped at safe points (after 1 and 3 segments of 5 of its
 * 40 tokens) and resumed on an executor of another worker count from the
 * token ids and the sampler's state: the same tokens as a run never
 * stopped, greedy and seeded, F32 and Q8_0 weights. Checkpoints that do
 * not fit (another model under the same name, another prompt, fewer
 * tokens asked, progress past the end) are ignored, saying why, and the
 * task starts over. */
TEST(llm_generate_checkpoints_resume_bit_for_bit)
{
    char path[128], path2[128];
    const char *pm[2] = {
        "{\"model\":\"tiny\",\"prompt\":\"hello world\",\"n\":40,\"seed\":9,\"temperature\":0}",
        "{\"model\":\"tiny\",\"prompt\":\"hello world\",\"n\":40,\"seed\":9,\"temperature\":0.9}"};
    for (int q = 0; q < 2; q++) {
        tmp_path(path, sizeof path, q ? "ck8.gguf" : "ck32.gguf");
        synor_llm_synth s = {.cfg = {.dim = 64, .hidden_dim = 96, .n_layers = 2, .n_heads = 4,
                                     .n_kv_heads = 2, .vocab_size = 300, .seq_len = 96,
                                     .shared_classifier = 1},
                             .seed = 5};
        ASSERT_OK(synor_llm_synth_gguf(&s, q ? SYNOR_TTYPE_Q8_0 : SYNOR_TTYPE_F32, path));
        synor_agent_config cfg;
        llm_models(&cfg, path);
        synor__agent_exec *x = NULL, *x2 = NULL;
        ASSERT_OK(synor__agent_exec_create(2, &cfg, &x));
        ASSERT_OK(synor__agent_exec_create(1, &cfg, &x2));
        for (int t = 0; t < 2; t++) {
            void *ref = NULL, *ck1 = NULL, *out = NULL;
            size_t ref_len = 0, ck1_len = 0, out_len = 0;
            synor__agent_ckpt ck;
            ASSERT_EQ(run_ck(x, "llm-generate", pm[t], 0, NULL, NULL, 0, NULL, 0, &ref, &ref_len,
                             &ck),
                      0);
            ASSERT_EQ(ck.total, 40);
            ASSERT_EQ(ref_len, 40 * 4); /* no end of text before 40 tokens */
            for (unsigned at = 1; at <= 3; at += 2) {
                ASSERT_EQ(run_ck(x, "llm-generate", pm[t], 0, NULL, NULL, at, NULL, 0, &ck1,
                                 &ck1_len, &ck),
                          SYNOR__AGENT_STOPPED);
                ASSERT_EQ(ck.done, 5 * at);
                ASSERT_EQ((ck1_len - 64 - 72) % 4, 0);
                ASSERT_EQ(run_ck(x2, "llm-generate", pm[t], 0, NULL, NULL, 0, ck1, ck1_len, &out,
                                 &out_len, &ck),
                          0);
                ASSERT_STREQ(ck.ignored, "");
                ASSERT_EQ(ck.resumed, 5 * at);
                ASSERT_EQ(out_len, ref_len);
                if (memcmp(out, ref, ref_len))
                    TEST__FAIL("%s, temperature %s, stopped after %u tokens: other tokens",
                               q ? "Q8_0" : "F32", t ? "0.9" : "0", 5 * at);
                free(out);
                if (at == 3)
                    break;
                free(ck1);
            }
            if (q == 1 && t == 1) {
                /* checkpoints that do not fit: ignored, the same tokens */
                unsigned char *bad = malloc(ck1_len);
                memcpy(bad, ck1, ck1_len);
                int32_t v;
                memcpy(&v, bad + 64 + 72 + 4, 4); /* the prompt's second token */
                v = (v + 1) % 300;
                memcpy(bad + 64 + 72 + 4, &v, 4);
                ASSERT_EQ(run_ck(x2, "llm-generate", pm[t], 0, NULL, NULL, 0, bad, ck1_len, &out,
                                 &out_len, &ck),
                          0);
                ASSERT_CONTAINS(ck.ignored, "another prompt");
                ASSERT_EQ(ck.resumed, 0);
                ASSERT(out_len == ref_len && !memcmp(out, ref, ref_len));
                free(out);
                memcpy(bad, ck1, ck1_len);
                bad[56] = 40; /* 40 tokens done of 40: past the last safe point */
                ASSERT_EQ(run_ck(x2, "llm-generate", pm[t], 0, NULL, NULL, 0, bad, ck1_len, &out,
                                 &out_len, &ck),
                          0);
                ASSERT_CONTAINS(ck.ignored, "progress");
                ASSERT(out_len == ref_len && !memcmp(out, ref, ref_len));
                free(out);
                free(bad);
                const char *fewer = "{\"model\":\"tiny\",\"prompt\":\"hello world\",\"n\":20,"
                                    "\"seed\":9,\"temperature\":0.9}";
                ASSERT_EQ(run_ck(x2, "llm-generate", fewer, 0, NULL, NULL, 0, ck1, ck1_len, &out,
                                 &out_len, &ck),
                          0);
                ASSERT_CONTAINS(ck.ignored, "dimensions");
                void *fresh = NULL;
                size_t fresh_len = 0;
                ASSERT_EQ(run_ck(x, "llm-generate", fewer, 0, NULL, NULL, 0, NULL, 0, &fresh,
                                 &fresh_len, &ck),
                          0);
                ASSERT(out_len == fresh_len && !memcmp(out, fresh, out_len));
                free(fresh);
                free(out);
                /* another model file under the name (the same shape) */
                tmp_path(path2, sizeof path2, "ck8b.gguf");
                s.seed = 6;
                ASSERT_OK(synor_llm_synth_gguf(&s, SYNOR_TTYPE_Q8_0, path2));
                synor_agent_config cfg2;
                llm_models(&cfg2, path2);
                synor__agent_exec *x3 = NULL;
                ASSERT_OK(synor__agent_exec_create(1, &cfg2, &x3));
                ASSERT_EQ(run_ck(x3, "llm-generate", pm[t], 0, NULL, NULL, 0, ck1, ck1_len, &out,
                                 &out_len, &ck),
                          0);
                ASSERT_CONTAINS(ck.ignored, "another model");
                ASSERT_EQ(ck.resumed, 0);
                free(out);
                synor__agent_exec_destroy(x3);
            }
            free(ck1);
            free(ref);
        }
        synor__agent_exec_destroy(x);
        synor__agent_exec_destroy(x2);
    }
}

/* The safe-point question: going on within the owner's hours, stopping
 * once they are over (judged at most once a second) or on a reclaim. */
TEST(safe_points_follow_the_owner)
{
    if (!synor_netclient_available())
        TEST_SKIP("built without libcurl and nettle");
    synor_agent_config cfg;
    synor_agent_config_init(&cfg);
    cfg.net.url = "http://127.0.0.1:1";
    cfg.n_devices = 1;
    strcpy(cfg.devices[0].name, "cpu0");
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    unsigned h = (unsigned)tm.tm_hour, later = (h + 2) % 24, after = (h + 3) % 24;
    if (!after)
        after = 24;
    char spec[32];
    snprintf(spec, sizeof spec, "utc:%u-%u", later, after); /* not now */
    ASSERT_OK(synor_availability_parse(spec, &cfg.availability));
    synor_agent *a = NULL;
    ASSERT_OK(synor_agent_create(&cfg, &a));
    ASSERT_EQ(synor__agent_safe_point(&a->loops[0]), 1);
    ASSERT_EQ(a->loops[0].limits_closed, 1);
    synor_agent_destroy(a);
    cfg.availability.kind = SYNOR_AVAIL_ALWAYS;
    ASSERT_OK(synor_agent_create(&cfg, &a));
    ASSERT_EQ(synor__agent_safe_point(&a->loops[0]), 0);
    synor_agent_reclaim(a);
    ASSERT_EQ(synor__agent_safe_point(&a->loops[0]), 1);
    ASSERT_EQ(a->loops[0].limits_closed, 0);
    synor_agent_destroy(a);
}

TEST(cleanup)
{
    char cmd[128];
    if (dir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        ASSERT_EQ(system(cmd), 0);
    }
}

TEST_MAIN(sgemm_matches_a_triple_loop, spotrf_factor_reproduces_a,
          sum_f32_does_not_depend_on_the_workers, llm_generate_is_deterministic_for_a_seed,
          bad_tasks_are_refused_naming_the_field, wrong_results_are_beyond_the_tolerance,
          state_dir_keeps_results_until_dropped, netclient_checksums_and_errors,
          agent_config_is_checked, checkpoints_resume_bit_for_bit,
          spotrf_checkpoints_resume_bit_for_bit, llm_generate_checkpoints_resume_bit_for_bit,
          safe_points_follow_the_owner, cleanup)
