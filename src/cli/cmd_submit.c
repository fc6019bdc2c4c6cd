/* cmd_submit.c - `synor submit`: a job file (format synor-job/1,
 * docs/JOBS.md) to a coordinator: its input files uploaded as blobs
 * (content addressed: each distinct file once), the job posted, its id
 * printed; --wait follows it to the end. Also makes data-parallel sgemm
 * jobs of any size from a seed (--make-sgemm-job) and checks their results
 * (--verify-sgemm) with a plain triple loop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/net_cli.h"
#include "common/common.h"
#include "json/json.h"

static void help(void)
{
    printf("usage: synor submit --coordinator URL --token-file F JOB.json [--wait] [-o FILE]\n"
           "       synor submit --make-sgemm-job N --dir D [--m M] [--n N] [--k K]\n"
           "                    [--seed S] [--replicas R] [--deadline S] [--budget CREDITS]\n"
           "       synor submit --verify-sgemm D RESULT\n\n"
           "Uploads the input files a job file names (each distinct file once, checked by\n"
           "SHA-256), posts the job and prints its id. The job file's format is synor-job/1\n"
           "(docs/JOBS.md); file names are relative to the job file's folder.\n\n" NET_OPTS_HELP
           "  --wait              follow the job until it ends (progress on stderr); exit 0\n"
           "                      when done, 1 when failed or cancelled\n"
           "  -o FILE             with --wait: fetch the result into FILE\n"
           "  --poll S            with --wait: seconds between progress checks (default 1)\n"
           "  --make-sgemm-job N  write D/job.json and its inputs: N shards of C = A B with\n"
           "                      A M x K (one per shard) and B K x N (shared), f32 values\n"
           "                      in [-1, 1) from the seed (default 1); defaults M=N=K=64,\n"
           "                      a budget of 0.1 credit per task (--budget)\n"
           "  --verify-sgemm D RESULT  check a fetched result of such a job against a\n"
           "                      triple loop (|a-b| <= 1e-4 max(1,|a|,|b|)); exit 1 if not\n"
           "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

/* ---------------------------------------------------------- sgemm jobs */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* n values in [-1, 1), from stream (seed, which). */
static void fill(float *x, size_t n, uint64_t seed, uint64_t which)
{
    uint64_t s = seed * 0x100000001b3ull ^ (which + 1) * 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((double)(splitmix(&s) >> 40) / (double)(1 << 24) * 2.0 - 1.0);
}

static int write_bytes(const char *path, const void *p, size_t n)
{
    if (synor__write_file_atomic(path, p, n)) {
        cli_error("submit: %s", synor_errmsg());
        return CLI_FAIL;
    }
    return CLI_OK;
}

typedef struct sgemm_job {
    unsigned long long shards, m, n, k, seed, replicas;
    double deadline;
    const char *budget;
} sgemm_job;

static int make_sgemm(const char *dir, const sgemm_job *j)
{
    char path[4096];
    size_t an = j->m * j->k, bn = j->k * j->n;
    float *a = malloc(an * 4), *b = malloc(bn * 4);
    int r = a && b ? CLI_OK : CLI_FAIL;
    if (r != CLI_OK)
        cli_error("submit: out of memory");
    if (r == CLI_OK) {
        fill(b, bn, j->seed, 0);
        snprintf(path, sizeof path, "%s/b.f32", dir);
        r = write_bytes(path, b, bn * 4);
    }
    synor__buf jb;
    synor__buf_init(&jb);
    synor__buf_printf(&jb,
                      "{\n  \"format\": \"synor-job/1\",\n  \"name\": \"sgemm-%llu\",\n"
                      "  \"kernel\": \"sgemm\",\n"
                      "  \"params\": {\"m\": %llu, \"n\": %llu, \"k\": %llu},\n"
                      "  \"replicas\": %llu,\n  \"deadline_s\": %.0f,\n",
                      j->shards, j->m, j->n, j->k, j->replicas, j->deadline);
    if (j->budget) {
        synor__buf_printf(&jb, "  \"budget\": \"%s\",\n", j->budget);
    } else { /* 0.1 credit per task, in micro-credits */
        unsigned long long micro = j->shards * j->replicas * 100000ull;
        synor__buf_printf(&jb, "  \"budget\": \"%llu.%06llu\",\n", micro / 1000000,
                          micro % 1000000);
    }
    synor__buf_printf(&jb, "  \"seed\": %llu,\n  \"shards\": [\n", j->seed);
    for (unsigned long long s = 0; r == CLI_OK && s < j->shards; s++) {
        fill(a, an, j->seed, s + 1);
        snprintf(path, sizeof path, "%s/a-%06llu.f32", dir, s);
        r = write_bytes(path, a, an * 4);
        synor__buf_printf(&jb, "    {\"inputs\": [\"a-%06llu.f32\", \"b.f32\"]}%s\n", s,
                          s + 1 < j->shards ? "," : "");
    }
    synor__buf_puts(&jb, "  ]\n}\n");
    char *text = synor__buf_take(&jb);
    if (r == CLI_OK) {
        snprintf(path, sizeof path, "%s/job.json", dir);
        r = text ? write_bytes(path, text, strlen(text)) : CLI_FAIL;
        if (r == CLI_OK)
            printf("%s\n", path);
    }
    synor__free(text);
    free(a);
    free(b);
    return r;
}

static int verify_sgemm(const char *dir, const char *result)
{
    char path[4096], *text = NULL, *res = NULL;
    size_t len = 0, rlen = 0;
    snprintf(path, sizeof path, "%s/job.json", dir);
    synor__jdoc *d = NULL;
    if (synor__read_file(path, &text, &len) || synor__json_parse(text, len, path, &d) ||
        synor__read_file(result, &res, &rlen)) {
        cli_error("submit: %s", synor_errmsg());
        synor__free(text);
        synor__jdoc_free(d);
        return CLI_FAIL;
    }
    synor__free(text);
    const synor__jval *root = synor__jdoc_root(d), *p = synor__json_get(root, "params");
    const synor__jval *sh = synor__json_get(root, "shards"), *sd = synor__json_get(root, "seed");
    const synor__jval *m = p ? synor__json_get(p, "m") : NULL, *n = p ? synor__json_get(p, "n") : NULL,
                      *k = p ? synor__json_get(p, "k") : NULL;
    if (!m || !n || !k || !sh || !sd || sh->type != SYNOR__J_ARRAY || !m->u.n.is_int ||
        !n->u.n.is_int || !k->u.n.is_int || !sd->u.n.is_int) {
        cli_error("submit: %s: not a job made by --make-sgemm-job", path);
        synor__jdoc_free(d);
        synor__free(res);
        return CLI_FAIL;
    }
    size_t M = (size_t)m->u.n.inum, N = (size_t)n->u.n.inum, K = (size_t)k->u.n.inum;
    size_t S = sh->u.arr.n;
    uint64_t seed = (uint64_t)sd->u.n.inum;
    synor__jdoc_free(d);
    if (rlen != S * M * N * 4) {
        cli_error("submit: %s: %zu bytes, %zu expected (%zu shards of %zu x %zu f32)", result,
                  rlen, S * M * N * 4, S, M, N);
        synor__free(res);
        return CLI_FAIL;
    }
    float *a = malloc(M * K * 4), *b = malloc(K * N * 4);
    if (!a || !b) {
        free(a), free(b), synor__free(res);
        cli_error("submit: out of memory");
        return CLI_FAIL;
    }
    fill(b, K * N, seed, 0);
    size_t bad = 0, first = SIZE_MAX;
    for (size_t s = 0; s < S; s++) {
        fill(a, M * K, seed, s + 1);
        const char *c = res + s * M * N * 4;
        int shard_bad = 0;
        for (size_t i = 0; i < M && !shard_bad; i++)
            for (size_t jj = 0; jj < N; jj++) {
                double acc = 0;
                for (size_t l = 0; l < K; l++)
                    acc += (double)a[i * K + l] * (double)b[l * N + jj];
                float got;
                memcpy(&got, c + (i * N + jj) * 4, 4);
                double tol = 1e-4 * fmax(1.0, fmax(fabs(acc), fabs((double)got)));
                if (!(fabs((double)got - acc) <= tol)) {
                    shard_bad = 1;
                    break;
                }
            }
        if (shard_bad) {
            bad++;
            if (first == SIZE_MAX)
                first = s;
        }
    }
    free(a), free(b), synor__free(res);
    if (bad) {
        printf("sgemm: %zu of %zu shards wrong (first: shard %zu)\n", bad, S, first);
        return CLI_FAIL;
    }
    printf("sgemm: all %zu shards correct (%zu x %zu x %zu)\n", S, M, N, K);
    return CLI_OK;
}

/* ------------------------------------------------------------- submitting */

typedef struct blob_cache {
    char **paths;
    char (*sha)[65];
    size_t n, cap;
} blob_cache;

/* The blob address of file path, uploaded when first seen. */
static int blob_of(synor_netclient *c, blob_cache *bc, const char *path, char sha[65])
{
    for (size_t i = 0; i < bc->n; i++)
        if (!strcmp(bc->paths[i], path)) {
            memcpy(sha, bc->sha[i], 65);
            return CLI_OK;
        }
    char *data = NULL;
    size_t len = 0;
    if (synor__read_file(path, &data, &len)) {
        cli_error("submit: %s", synor_errmsg());
        return CLI_FAIL;
    }
    int r = synor_netclient_blob_put(c, data, len, sha);
    synor__free(data);
    if (r) {
        cli_error("submit: %s: %s", path, synor_errmsg());
        return CLI_FAIL;
    }
    if (bc->n == bc->cap) {
        size_t nc = bc->cap ? 2 * bc->cap : 64;
        char **p = realloc(bc->paths, nc * sizeof(*p));
        if (p)
            bc->paths = p;
        char(*s)[65] = realloc(bc->sha, nc * sizeof(*s));
        if (s)
            bc->sha = s;
        if (!p || !s) {
            cli_error("submit: out of memory");
            return CLI_FAIL;
        }
        bc->cap = nc;
    }
    bc->paths[bc->n] = synor__strdup(path);
    memcpy(bc->sha[bc->n], sha, 65);
    if (!bc->paths[bc->n]) {
        cli_error("submit: out of memory");
        return CLI_FAIL;
    }
    bc->n++;
    return CLI_OK;
}

static const char *const job_keys[] = {"format",     "name",   "kernel", "params", "shards", "replicas",
                                       "deadline_s", "budget", "ref",    "seed",   "stages", NULL};
static const char *const shard_keys[] = {"inputs", "params", NULL};
static const char *const stage_keys[] = {"kernel", "params", "shards", NULL};

/* Checks a shards array (where: "shards" or "stages[1].shards"); inputs
 * are file names, or in a staged job {"from_stage","shard"} objects the
 * coordinator checks. */
static int check_shards(synor__jdoc *d, const synor__jval *shards, const char *where, int staged)
{
    int e = 0;
    if (shards->u.arr.n == 0)
        return synor__json_fail(d, shards, SYNOR_ESCHEMA, where, "empty: at least one shard");
    for (size_t i = 0; !e && i < shards->u.arr.n; i++) {
        char p[96];
        snprintf(p, sizeof p, "%s[%zu]", where, i);
        const synor__jval *s = shards->u.arr.items[i];
        synor__jval *in = NULL, *sp = NULL;
        if ((e = synor__json_expect(d, s, p, SYNOR__J_OBJECT)) ||
            (e = synor__json_check_keys(d, s, p, shard_keys)) ||
            (e = synor__json_member(d, s, p, "inputs", SYNOR__J_ARRAY, 0, &in)) ||
            (e = synor__json_member(d, s, p, "params", SYNOR__J_OBJECT, 0, &sp)))
            break;
        for (size_t k = 0; in && k < in->u.arr.n && !e; k++) {
            char q[128];
            snprintf(q, sizeof q, "%s.inputs[%zu]", p, k);
            if (!staged || in->u.arr.items[k]->type != SYNOR__J_OBJECT)
                e = synor__json_expect(d, in->u.arr.items[k], q, SYNOR__J_STRING);
        }
    }
    return e;
}

/* Writes a shards array, uploading its input files (once each). */
static int write_shards(synor_netclient *c, blob_cache *bc, const char *dir,
                        const synor__jval *shards, synor__jw *w)
{
    int r = CLI_OK;
    synor__jw_arr_begin(w);
    for (size_t i = 0; r == CLI_OK && i < shards->u.arr.n; i++) {
        const synor__jval *s = shards->u.arr.items[i];
        const synor__jval *in = synor__json_get(s, "inputs"), *sp = synor__json_get(s, "params");
        synor__jw_obj_begin(w);
        synor__jw_key(w, "inputs");
        synor__jw_arr_begin(w);
        for (size_t k = 0; r == CLI_OK && in && k < in->u.arr.n; k++) {
            if (in->u.arr.items[k]->type == SYNOR__J_OBJECT) { /* an earlier stage's result */
                synor__jw_value(w, in->u.arr.items[k]);
                continue;
            }
            const char *f = in->u.arr.items[k]->u.str.s;
            char path[8192], sha[65];
            snprintf(path, sizeof path, "%s%s", f[0] == '/' ? "" : dir, f);
            r = blob_of(c, bc, path, sha);
            synor__jw_str(w, sha);
        }
        synor__jw_arr_end(w);
        if (sp) {
            synor__jw_key(w, "params");
            synor__jw_value(w, sp);
        }
        synor__jw_obj_end(w);
    }
    synor__jw_arr_end(w);
    return r;
}

/* The POST /v1/jobs body of the job file, its inputs uploaded. */
static int build_job(synor_netclient *c, const char *job_path, char **body)
{
    char *text = NULL;
    size_t len = 0;
    synor__jdoc *d = NULL;
    if (synor__read_file(job_path, &text, &len) ||
        synor__json_parse(text, len, job_path, &d)) {
        synor__free(text);
        cli_error("submit: %s", synor_errmsg());
        return CLI_FAIL;
    }
    synor__free(text);
    const synor__jval *root = synor__jdoc_root(d);
    synor__jval *fmt = NULL, *name = NULL, *kernel = NULL, *params = NULL, *shards = NULL,
                *repl = NULL, *dl = NULL, *budget = NULL, *ref = NULL, *stages = NULL;
    int64_t ri = 1;
    double dls = 0;
    int e = synor__json_expect(d, root, "job", SYNOR__J_OBJECT);
    if (!e)
        e = synor__json_check_keys(d, root, "job", job_keys);
    if (!e)
        e = synor__json_member(d, root, "job", "format", SYNOR__J_STRING, 1, &fmt);
    if (!e && strcmp(fmt->u.str.s, "synor-job/1"))
        e = synor__json_fail(d, fmt, SYNOR_ESCHEMA, "format", "'%s': expected synor-job/1",
                             fmt->u.str.s);
    if (!e)
        e = synor__json_member(d, root, "job", "name", SYNOR__J_STRING, 0, &name);
    if (!e)
        e = synor__json_member(d, root, "job", "stages", SYNOR__J_ARRAY, 0, &stages);
    /* a staged job gives kernel, params and shards per stage */
    if (!e && stages && (synor__json_get(root, "kernel") || synor__json_get(root, "params") ||
                         synor__json_get(root, "shards")))
        e = synor__json_fail(d, stages, SYNOR_ESCHEMA, "stages",
                             "kernel, params and shards go in each stage, not in the job");
    if (!e && stages && stages->u.arr.n == 0)
        e = synor__json_fail(d, stages, SYNOR_ESCHEMA, "stages", "empty: at least one stage");
    for (size_t t = 0; !e && stages && t < stages->u.arr.n; t++) {
        char p[48];
        snprintf(p, sizeof p, "stages[%zu]", t);
        const synor__jval *st = stages->u.arr.items[t];
        synor__jval *sk = NULL, *spm = NULL, *ssh = NULL;
        if (!(e = synor__json_expect(d, st, p, SYNOR__J_OBJECT)) &&
            !(e = synor__json_check_keys(d, st, p, stage_keys)) &&
            !(e = synor__json_member(d, st, p, "kernel", SYNOR__J_STRING, 1, &sk)) &&
            !(e = synor__json_member(d, st, p, "params", SYNOR__J_OBJECT, 0, &spm)) &&
            !(e = synor__json_member(d, st, p, "shards", SYNOR__J_ARRAY, 1, &ssh))) {
            snprintf(p, sizeof p, "stages[%zu].shards", t);
            e = check_shards(d, ssh, p, 1);
        }
    }
    if (!e && !stages)
        e = synor__json_member(d, root, "job", "kernel", SYNOR__J_STRING, 1, &kernel);
    if (!e && !stages)
        e = synor__json_member(d, root, "job", "params", SYNOR__J_OBJECT, 0, &params);
    if (!e && !stages)
        e = synor__json_member(d, root, "job", "shards", SYNOR__J_ARRAY, 1, &shards);
    if (!e && !stages)
        e = check_shards(d, shards, "shards", 0);
    if (!e)
        e = synor__json_member(d, root, "job", "replicas", SYNOR__J_NUMBER, 0, &repl);
    if (!e && repl)
        e = synor__json_int(d, repl, "replicas", 1, 5, &ri);
    if (!e)
        e = synor__json_member(d, root, "job", "deadline_s", SYNOR__J_NUMBER, 0, &dl);
    if (!e && dl)
        e = synor__json_number(d, dl, "deadline_s", 1, 1e9, &dls);
    if (!e)
        e = synor__json_member(d, root, "job", "budget", SYNOR__J_STRING, 1, &budget);
    if (!e)
        e = synor__json_member(d, root, "job", "ref", SYNOR__J_STRING, 0, &ref);
    if (e) {
        cli_error("submit: %s", synor_errmsg());
        synor__jdoc_free(d);
        return CLI_FAIL;
    }
    /* the folder input names are relative to */
    char dir[4096];
    synor__strlcpy(dir, job_path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = 0;
    else
        dir[0] = 0;
    blob_cache bc = {0};
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "name");
    synor__jw_str(&w, name ? name->u.str.s : job_path);
    int r = CLI_OK;
    if (stages) {
        synor__jw_key(&w, "stages");
        synor__jw_arr_begin(&w);
        for (size_t t = 0; r == CLI_OK && t < stages->u.arr.n; t++) {
            const synor__jval *st = stages->u.arr.items[t], *sp = synor__json_get(st, "params");
            synor__jw_obj_begin(&w);
            synor__jw_key(&w, "kernel");
            synor__jw_str(&w, synor__json_get(st, "kernel")->u.str.s);
            if (sp) {
                synor__jw_key(&w, "params");
                synor__jw_value(&w, sp);
            }
            synor__jw_key(&w, "shards");
            r = write_shards(c, &bc, dir, synor__json_get(st, "shards"), &w);
            synor__jw_obj_end(&w);
        }
        synor__jw_arr_end(&w);
    } else {
        synor__jw_key(&w, "kernel");
        synor__jw_str(&w, kernel->u.str.s);
        synor__jw_key(&w, "params");
        if (params)
            synor__jw_value(&w, params);
        else {
            synor__jw_obj_begin(&w);
            synor__jw_obj_end(&w);
        }
        synor__jw_key(&w, "shards");
        r = write_shards(c, &bc, dir, shards, &w);
    }
    synor__jw_key(&w, "replicas");
    synor__jw_int(&w, ri);
    if (dl) {
        synor__jw_key(&w, "deadline_s");
        synor__jw_num(&w, dls);
    }
    synor__jw_key(&w, "budget");
    synor__jw_str(&w, budget->u.str.s);
    /* A ref makes the post safe to retry: the job file's, else one of this
     * submission (the same job submitted twice on purpose is two jobs). */
    char refbuf[80];
    if (!ref) {
        char seed[128], h[65];
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(seed, sizeof seed, "%ld.%09ld.%ld", (long)ts.tv_sec, ts.tv_nsec, (long)getpid());
        synor_netclient_sha256(seed, strlen(seed), h);
        snprintf(refbuf, sizeof refbuf, "submit-%.32s", h);
    }
    synor__jw_key(&w, "ref");
    synor__jw_str(&w, ref ? ref->u.str.s : refbuf);
    synor__jw_obj_end(&w);
    for (size_t i = 0; i < bc.n; i++)
        synor__free(bc.paths[i]);
    free(bc.paths);
    free(bc.sha);
    synor__jdoc_free(d);
    *body = synor__buf_take(&b);
    if (r == CLI_OK && !*body) {
        cli_error("submit: out of memory");
        r = CLI_FAIL;
    }
    if (r != CLI_OK) {
        synor__free(*body);
        *body = NULL;
    }
    return r;
}

int cli_submit(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    net_opts no;
    memset(&no, 0, sizeof no);
    const char *job = NULL, *dir = NULL, *out = NULL, *verify_dir = NULL, *verify_res = NULL;
    int wait = 0;
    double poll = 1;
    sgemm_job sj = {.shards = 0, .m = 64, .n = 64, .k = 64, .seed = 1, .replicas = 1,
                    .deadline = 600};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = net_opt("submit", &no, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (r)
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        }
        if (!strcmp(a, "--wait")) {
            wait = 1;
            continue;
        }
        if (a[0] != '-') {
            if (job)
                return cli_usage_error("submit", "one job file only ('%s', '%s')", job, a);
            job = a;
            continue;
        }
        if (!v)
            return cli_usage_error("submit", "%s needs a value", a);
        r = CLI_OK;
        if (!strcmp(a, "-o"))
            out = v;
        else if (!strcmp(a, "--poll"))
            r = cli_parse_seconds("submit", a, v, &poll);
        else if (!strcmp(a, "--dir"))
            dir = v;
        else if (!strcmp(a, "--make-sgemm-job"))
            r = cli_parse_uint("submit", a, v, 1, 10000000, &sj.shards);
        else if (!strcmp(a, "--m"))
            r = cli_parse_uint("submit", a, v, 1, 65536, &sj.m);
        else if (!strcmp(a, "--n"))
            r = cli_parse_uint("submit", a, v, 1, 65536, &sj.n);
        else if (!strcmp(a, "--k"))
            r = cli_parse_uint("submit", a, v, 1, 65536, &sj.k);
        else if (!strcmp(a, "--seed"))
            r = cli_parse_uint("submit", a, v, 0, UINT64_MAX, &sj.seed);
        else if (!strcmp(a, "--replicas"))
            r = cli_parse_uint("submit", a, v, 1, 5, &sj.replicas);
        else if (!strcmp(a, "--deadline"))
            r = cli_parse_seconds("submit", a, v, &sj.deadline);
        else if (!strcmp(a, "--budget"))
            sj.budget = v;
        else if (!strcmp(a, "--verify-sgemm")) {
            if (i + 2 >= argc)
                return cli_usage_error("submit", "--verify-sgemm needs DIR and RESULT");
            verify_dir = v;
            verify_res = argv[i + 2];
            i++;
        } else
            return cli_usage_error("submit", "unexpected argument '%s'", a);
        if (r != CLI_OK)
            return r;
        i++;
    }
    if (verify_dir)
        return verify_sgemm(verify_dir, verify_res);
    if (sj.shards) {
        if (!dir)
            return cli_usage_error("submit", "--make-sgemm-job needs --dir D");
        return make_sgemm(dir, &sj);
    }
    if (!job)
        return cli_usage_error("submit", "no job file (JOB.json)");
    if (out && !wait)
        return cli_usage_error("submit", "-o needs --wait");
    synor_netclient *c = NULL;
    int r = net_client("submit", &no, &c);
    if (r != CLI_OK)
        return r;
    char *body = NULL;
    r = build_job(c, job, &body);
    if (r == CLI_OK) {
        synor_net_request rq = {.method = "POST", .path = "/v1/jobs", .body = body,
                                .body_len = strlen(body), .idempotent = 1};
        synor_net_response ans;
        r = net_call("submit", c, &rq, &ans);
        synor__jdoc *d = NULL;
        if (r == CLI_OK) {
            const synor__jval *id = NULL;
            if (synor__json_parse(ans.body, ans.len, "POST /v1/jobs", &d) == 0)
                id = synor__json_get(synor__jdoc_root(d), "id");
            if (!id || id->type != SYNOR__J_STRING) {
                cli_error("submit: the coordinator's answer has no job id: %.200s", ans.body);
                r = CLI_FAIL;
            } else {
                printf("%s\n", id->u.str.s);
                fflush(stdout);
                if (wait)
                    r = net_wait_job(c, id->u.str.s, poll, out, "submit");
            }
            synor__jdoc_free(d);
            synor_net_response_free(&ans);
        }
    }
    synor__free(body);
    synor_netclient_destroy(c);
    return r;
}
