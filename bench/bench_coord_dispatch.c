/* bench_coord_dispatch.c - dispatch throughput and latency of the compute
 * network's coordinator: one coordinator in this process (a fresh SQLite
 * file, or the PostgreSQL URL given), one consumer job of T trivial tasks,
 * and N simulated agents as threads speaking the real protocol over HTTP
 * (libcurl, one keep-alive connection each): GET /v1/tasks/next, then POST
 * the result with its SHA-256, until the queue is empty. Reports tasks
 * completed per second and the claim round trip's p50/p99 as the agents
 * saw it, then checks the job is done and the ledger has T entries.
 *
 *   bench_coord_dispatch [--batch=K] [--calls=C] [AGENTS [TASKS [DB-URL [+N]]]]
 *   (defaults 50, 20000)
 *
 * --calls=C: each coordinator's combined calls at once on PostgreSQL
 * (synor_netstore_opts.calls; default 2).
 * --batch=K: each agent claims up to K tasks per request (GET
 * /v1/tasks/next?max=K) and reports them in one POST /v1/results (the batch
 * protocol of docs/NETWORK.md); the latency is then that of a claim of K.
 * DB-URL "-" is the fresh SQLite file (to give +N after it).
 *
 * With a second URL argument of the form "+N" several coordinators (N, on
 * PostgreSQL) share the store, the agents spread over them round robin.
 *
 * With SYNOR_BENCH_PG_PID set to the PostgreSQL postmaster's pid (a cluster
 * on this machine), it also prints the CPU time (user + system, from /proc)
 * per task of the dispatch alone, from the agents' start to their end: of
 * this process (coordinators and agents) and of the cluster (the
 * postmaster, its live children, and through its children's times those
 * that exited). The job's submission is not counted. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "netstore/db.h"
#include "synor.h"

/* CPU ticks of a process: its own (and with kids, its reaped children's). */
static long long proc_ticks(long pid, int kids)
{
    char p[64], buf[1024];
    snprintf(p, sizeof p, "/proc/%ld/stat", pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *q = strrchr(buf, ')');
    unsigned long long v[15] = {0};
    /* after ") ": state, then fields 4..; utime is field 14 */
    if (!q || sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
                     &v[0], &v[1], &v[2], &v[3]) != 4)
        return 0;
    return (long long)(v[0] + v[1] + (kids ? v[2] + v[3] : 0));
}

/* The cluster's CPU ticks so far (SYNOR_BENCH_PG_PID). */
static long long pg_ticks(long pm)
{
    long long t = proc_ticks(pm, 1);
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/task/%ld/children", pm, pm);
    FILE *f = fopen(p, "r");
    long kid;
    while (f && fscanf(f, "%ld", &kid) == 1)
        t += proc_ticks(kid, 0);
    if (f)
        fclose(f);
    return t;
}

typedef struct agent {
    int idx;
    unsigned port;
    char token[80];
    char device[32];
    double *lat;
    size_t n_lat, cap_lat;
    long done, errors;
    int batch;
} agent;

typedef struct sink {
    char buf[1 << 17];
    size_t len;
} sink;

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    sink *s = ud;
    size_t k = sz * n;
    if (s->len + k < sizeof s->buf) {
        memcpy(s->buf + s->len, p, k);
        s->len += k;
        s->buf[s->len] = 0;
    }
    return k;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the string value of "key":"..." in json into out */
static int field(const char *json, const char *key, char *out, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(json, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    const char *q = strchr(p, '"');
    if (!q || (size_t)(q - p) >= n)
        return -1;
    memcpy(out, p, (size_t)(q - p));
    out[q - p] = 0;
    return 0;
}

static void add_lat(agent *a, double dt)
{
    if (a->n_lat == a->cap_lat) {
        a->cap_lat = a->cap_lat ? 2 * a->cap_lat : 1024;
        a->lat = realloc(a->lat, a->cap_lat * sizeof *a->lat);
    }
    a->lat[a->n_lat++] = dt;
}

/* The batch protocol: claim up to a->batch tasks, report them in one POST. */
static void *run_agent_batch(void *arg)
{
    agent *a = arg;
    CURL *h = curl_easy_init();
    sink *s = malloc(sizeof *s);
    size_t cap = 256 + (size_t)a->batch * 200;
    char *body = malloc(cap);
    char url[256], auth[128];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", a->token);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    uint64_t *res = malloc((size_t)a->batch * sizeof *res);
    for (;;) {
        struct curl_slist *hl = curl_slist_append(NULL, auth);
        snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/tasks/next?device=%s&max=%d", a->port,
                 a->device, a->batch);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
        s->len = 0;
        s->buf[0] = 0;
        double t0 = now_s();
        CURLcode rc = curl_easy_perform(h);
        double dt = now_s() - t0;
        long code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_slist_free_all(hl);
        if (rc != CURLE_OK || (code != 200 && code != 204)) {
            if (++a->errors > 100)
                break;
            continue;
        }
        if (code == 204)
            break;
        add_lat(a, dt);
        /* the line, then the bytes */
        size_t len = (size_t)snprintf(body, cap, "{\"results\":[");
        int k = 0;
        for (const char *p = strstr(s->buf, "\"task\":\""); p && k < a->batch;
             p = strstr(p + 1, "\"task\":\"")) {
            char task[32], lease[40], sha[65];
            if (field(p, "task", task, sizeof task) || field(p, "lease", lease, sizeof lease))
                break;
            res[k] = (uint64_t)a->idx << 32 | (uint64_t)(a->done + k);
            synor__ns_sha256_hex(&res[k], sizeof res[k], sha);
            len += (size_t)snprintf(body + len, cap - len,
                                    "%s{\"task\":\"%s\",\"lease\":\"%s\",\"sha256\":\"%s\",\"bytes\":8}",
                                    k ? "," : "", task, lease, sha);
            k++;
        }
        len += (size_t)snprintf(body + len, cap - len, "]}\n");
        memcpy(body + len, res, (size_t)k * 8);
        len += (size_t)k * 8;
        hl = curl_slist_append(NULL, auth);
        hl = curl_slist_append(hl, "Content-Type: application/octet-stream");
        snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/results", a->port);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
        s->len = 0;
        rc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_slist_free_all(hl);
        if (rc != CURLE_OK || code != 200) {
            a->errors += k;
            continue;
        }
        int ok = 0;
        for (const char *p = strstr(s->buf, "\"accepted\":true"); p;
             p = strstr(p + 1, "\"accepted\":true"))
            ok++;
        a->done += ok;
        a->errors += k - ok;
    }
    free(res);
    free(body);
    free(s);
    curl_easy_cleanup(h);
    return NULL;
}

static void *run_agent(void *arg)
{
    agent *a = arg;
    if (a->batch > 1)
        return run_agent_batch(arg);
    CURL *h = curl_easy_init();
    sink *sp = malloc(sizeof *sp);
    char url[256], auth[128], hdr[128];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", a->token);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sp);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    for (;;) {
        struct curl_slist *hl = curl_slist_append(NULL, auth);
        snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/tasks/next?device=%s", a->port, a->device);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
        sp->len = 0;
        sp->buf[0] = 0;
        double t0 = now_s();
        CURLcode rc = curl_easy_perform(h);
        double dt = now_s() - t0;
        long code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_slist_free_all(hl);
        if (rc != CURLE_OK || (code != 200 && code != 204)) {
            a->errors++;
            if (a->errors > 100)
                break;
            continue;
        }
        if (code == 204)
            break;
        add_lat(a, dt);
        char task[32], lease[40];
        if (field(sp->buf, "task", task, sizeof task) || field(sp->buf, "lease", lease, sizeof lease)) {
            a->errors++;
            continue;
        }
        uint64_t result = (uint64_t)a->idx << 32 | (uint64_t)a->done;
        char sha[65];
        synor__ns_sha256_hex(&result, sizeof result, sha);
        snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/tasks/%s/result?lease=%s", a->port, task,
                 lease);
        snprintf(hdr, sizeof hdr, "X-Synor-SHA256: %s", sha);
        hl = curl_slist_append(NULL, auth);
        hl = curl_slist_append(hl, hdr);
        hl = curl_slist_append(hl, "Content-Type: application/octet-stream");
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)&result);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)sizeof result);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
        sp->len = 0;
        rc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_slist_free_all(hl);
        if (rc != CURLE_OK || code != 200)
            a->errors++;
        else
            a->done++;
    }
    free(sp);
    curl_easy_cleanup(h);
    return NULL;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
    int batch = 1, calls = 0;
    for (;;) {
        int *to = argc > 1 && !strncmp(argv[1], "--batch=", 8)   ? &batch
                  : argc > 1 && !strncmp(argv[1], "--calls=", 8) ? &calls
                                                                 : NULL;
        if (!to)
            break;
        char *end;
        long v = strtol(argv[1] + 8, &end, 10);
        if (end == argv[1] + 8 || *end || v < 1 || v > 1024) {
            fprintf(stderr, "bench_coord_dispatch: %.7s: '%s' is not a count from 1 to 1024\n",
                    argv[1], argv[1] + 8);
            return 2;
        }
        *to = (int)v;
        argc--, argv++;
    }
    int n_agents = argc > 1 ? atoi(argv[1]) : 50;
    long n_tasks = argc > 2 ? atol(argv[2]) : 20000;
    const char *url = argc > 3 ? argv[3] : NULL;
    int n_coord = argc > 4 && argv[4][0] == '+' ? atoi(argv[4] + 1) : 1;
    if (n_agents < 1 || n_agents > 1000 || n_tasks < 1 || n_coord < 1 || n_coord > 8 ||
        batch < 1 || batch > SYNOR_NET_CLAIM_MAX || calls < 0 || calls > 64) {
        fprintf(stderr, "usage: %s [--batch=K] [--calls=C] [AGENTS [TASKS [DB-URL|- [+COORDINATORS]]]]\n",
                argv[0]);
        return 2;
    }
    char path[64] = "";
    if (!url || !strcmp(url, "-")) {
        snprintf(path, sizeof path, "/tmp/synor-bench-coord-%d.db", (int)getpid());
        url = path;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    synor_netstore *st[8] = {0};
    synor_coord *co[8] = {0};
    synor_netstore_opts so = {.url = url, .lease_timeout_s = 60, .calls = (unsigned)calls};
    for (int i = 0; i < n_coord; i++) {
        synor_coord_opts copts = {.port = 0, .quiet = 1, .log_path = "/dev/null"};
        if (synor_netstore_open(&so, &st[i]) || synor_coord_create(st[i], &copts, &co[i]) ||
            synor_coord_start(co[i])) {
            fprintf(stderr, "coordinator: %s\n", synor_errmsg());
            return 1;
        }
    }
    if (url != path && synor_netstore_wipe(st[0])) {
        fprintf(stderr, "wipe: %s\n", synor_errmsg());
        return 1;
    }
    /* the job: n_tasks shards of one task, no inputs */
    synor_net_shard_spec *sh = calloc((size_t)n_tasks, sizeof *sh);
    synor_net_job_spec j = {.name = "bench", .kernel = "noop", .params_json = "{}", .shards = sh,
                            .n_shards = (size_t)n_tasks, .replicas = 1,
                            .budget = (int64_t)n_tasks * 10000};
    int64_t job, tasks;
    int existing;
    double t_sub = now_s();
    if (synor_netstore_job_submit(st[0], "consumer", &j, &job, &tasks, &existing)) {
        fprintf(stderr, "submit: %s\n", synor_errmsg());
        return 1;
    }
    t_sub = now_s() - t_sub;
    agent *ag = calloc((size_t)n_agents, sizeof *ag);
    pthread_t *th = calloc((size_t)n_agents, sizeof *th);
    for (int i = 0; i < n_agents; i++) {
        char owner[32], name[32];
        snprintf(owner, sizeof owner, "agent%d", i);
        snprintf(name, sizeof name, "cpu%d", i);
        int64_t tid, dev;
        synor_net_device d = {.name = name, .kind = "cpu"};
        if (synor_netstore_token_create(st[0], SYNOR_NET_PROVIDER, owner, ag[i].token, &tid) ||
            synor_netstore_device_register(st[0], owner, &d, &dev)) {
            fprintf(stderr, "setup: %s\n", synor_errmsg());
            return 1;
        }
        ag[i].idx = i;
        ag[i].batch = batch;
        ag[i].port = synor_coord_port(co[i % n_coord]);
        snprintf(ag[i].device, sizeof ag[i].device, "dev-%lld", (long long)dev);
    }
    const char *pm_env = getenv("SYNOR_BENCH_PG_PID");
    long pm = pm_env ? atol(pm_env) : 0;
    long long me0 = proc_ticks((long)getpid(), 0), pg0 = pm ? pg_ticks(pm) : 0;
    double t0 = now_s();
    for (int i = 0; i < n_agents; i++)
        pthread_create(&th[i], NULL, run_agent, &ag[i]);
    for (int i = 0; i < n_agents; i++)
        pthread_join(th[i], NULL);
    double el = now_s() - t0;
    long long me1 = proc_ticks((long)getpid(), 0), pg1 = pm ? pg_ticks(pm) : 0;
    size_t n = 0;
    long done = 0, errors = 0;
    for (int i = 0; i < n_agents; i++) {
        n += ag[i].n_lat;
        done += ag[i].done;
        errors += ag[i].errors;
    }
    double *all = malloc((n ? n : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < n_agents; i++)
        for (size_t x = 0; x < ag[i].n_lat; x++)
            all[k++] = ag[i].lat[x];
    qsort(all, n, sizeof *all, cmp);
    synor_netstore_stats s;
    synor_netstore_stats_get(st[0], &s);
    printf("store %s, %d coordinator%s, %d agents, %ld tasks (submitted in %.2f s), batch %d\n",
           synor_netstore_backend(st[0]), n_coord, n_coord > 1 ? "s" : "", n_agents, n_tasks, t_sub,
           batch);
    printf("completed %ld in %.2f s: %.0f tasks/s (claim + result), %ld errors\n", done, el,
           (double)done / el, errors);
    if (n)
        printf("claim round trip: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
               all[n / 2] * 1e3, all[(size_t)((double)n * 0.99)] * 1e3, all[n - 1] * 1e3);
    if (pm) {
        double hz = (double)sysconf(_SC_CLK_TCK), per = 1e3 / hz / (double)(done ? done : 1);
        printf("dispatch cpu per task: bench %.3f ms, postgres %.3f ms\n", (double)(me1 - me0) * per,
               (double)(pg1 - pg0) * per);
    }
    int ok = done == n_tasks && s.ledger_entries == n_tasks && s.jobs_done == 1;
    printf("check: job done %s, ledger entries %lld of %ld: %s\n", s.jobs_done == 1 ? "yes" : "no",
           (long long)s.ledger_entries, n_tasks, ok ? "ok" : "FAILED");
    for (int i = 0; i < n_coord; i++) {
        synor_coord_destroy(co[i]);
        synor_netstore_close(st[i]);
    }
    if (*path) {
        char p2[80];
        unlink(path);
        snprintf(p2, sizeof p2, "%s-wal", path);
        unlink(p2);
        snprintf(p2, sizeof p2, "%s-shm", path);
        unlink(p2);
    }
    for (int i = 0; i < n_agents; i++)
        free(ag[i].lat);
    free(ag);
    free(th);
    free(all);
    free(sh);
    curl_global_cleanup();
    return ok ? 0 : 1;
}
