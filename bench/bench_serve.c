/* bench_serve.c - a load generator for synor serve (issue 12 item 9's bar):
 * N streamed completions arriving as a Poisson process (or all at once),
 * at most C in flight, and the figures of vLLM's benchmark_serving:
 * aggregate output tokens per second, time to first token, time per
 * output token (per request: (last - first) / (tokens - 1)) and inter-token
 * latency (between consecutive events of a stream), p50 and p99.
 *
 *   bench_serve --port P [--host ADDR] [--requests N] [--concurrency C]
 *               [--rate R] [--max-tokens T] [--prompts FILE] [--seed S] [--temp T]
 *
 * --rate R: mean arrivals per second (exponential gaps from a seeded
 * generator); 0: every request at time 0. Prompts are cut from FILE
 * (default README.md): request i takes 8 to 64 words at an offset drawn
 * from the seed, so two runs with the same seed send the same requests
 * (whatever their --rate and --concurrency).
 * Greedy (temperature 0) by default, so sequential and concurrent runs
 * generate the same tokens; --temp T samples at temperature T (top_p 1),
 * request i seeded with S * 1000 + i: determined too. HTTP/1.0 with
 * Connection: close: the stream is plain bytes until the server closes it.
 *
 * Starvation: the largest TPOT and end-to-end time (request sent to its
 * last token) beside their medians, and the fewest tokens a request got
 * (a request that never finishes counts as failed). */
#include <arpa/inet.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_requests.h"

typedef struct breq {
    char *body;
    double arrive;           /* seconds after the start */
    double sent, first, last; /* seconds after the start */
    double *itl;             /* gaps between events */
    size_t n_itl, cap_itl;
    long events, completion_tokens;
    int ok;
} breq;

static const char *host = "127.0.0.1";
static const char *port = "8080";
static double t0;
static sem_t slots;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int dial(void)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, port, &hints, &ai))
        return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

static void *run(void *arg)
{
    breq *r = arg;
    double wait = r->arrive - (now() - t0);
    if (wait > 0) {
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
    sem_wait(&slots);
    int fd = dial();
    if (fd < 0) {
        sem_post(&slots);
        return NULL;
    }
    char head[256];
    size_t blen = strlen(r->body);
    int hl = snprintf(head, sizeof head,
                      "POST /v1/completions HTTP/1.0\r\nHost: %s\r\nContent-Type: "
                      "application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                      host, blen);
    r->sent = now() - t0;
    if (write(fd, head, (size_t)hl) != hl || write(fd, r->body, blen) != (ssize_t)blen) {
        close(fd);
        sem_post(&slots);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0, scan = 0;
    char *buf = malloc(cap);
    int status = 0;
    for (;;) {
        if (len + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            break;
        double t = now() - t0;
        len += (size_t)n;
        buf[len] = 0;
        if (!status && len > 12)
            status = atoi(buf + 9);
        /* each complete event "data: ...\n\n" that arrived in this read */
        char *e;
        while ((e = strstr(buf + scan, "\n\n")) != NULL) {
            char *ev = strstr(buf + scan, "data: ");
            scan = (size_t)(e - buf) + 2;
            if (!ev || ev > e)
                continue;
            if (strstr(ev, "\"finish_reason\":null") && strstr(ev, "\"finish_reason\":null") < e) {
                if (r->events == 0) {
                    r->first = t;
                } else {
                    if (r->n_itl == r->cap_itl)
                        r->itl = realloc(r->itl, (r->cap_itl = r->cap_itl * 2 + 64) *
                                                     sizeof *r->itl);
                    r->itl[r->n_itl++] = t - r->last;
                }
                r->last = t;
                r->events++;
            }
            char *u = strstr(ev, "\"completion_tokens\":");
            if (u && u < e)
                r->completion_tokens = atol(u + 20);
            if (!strncmp(ev, "data: [DONE]", 12))
                r->ok = status == 200;
        }
    }
    free(buf);
    close(fd);
    sem_post(&slots);
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_d);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

/* The request's JSON body: a prompt of `words` words from text (greedy,
 * or at temperature temp with that seed; streamed, max_tokens). */
static char *prompt_json(const char *text, size_t off, int words, int max_tokens, double temp,
                         uint64_t seed)
{
    char *t = bench_prompt_text(text, off, words);
    size_t n = BENCH_PROMPT_MAX + 128;
    char *p = t ? malloc(n) : NULL;
    if (p && temp > 0)
        snprintf(p, n,
                 "{\"prompt\":\"%s\",\"max_tokens\":%d,\"temperature\":%g,\"top_p\":1,"
                 "\"seed\":%llu,\"stream\":true}",
                 t, max_tokens, temp, (unsigned long long)seed);
    else if (p)
        snprintf(p, n, "{\"prompt\":\"%s\",\"max_tokens\":%d,\"temperature\":0,\"stream\":true}",
                 t, max_tokens);
    free(t);
    return p;
}

int main(int argc, char **argv)
{
    int nreq = 64, conc = 16, max_tokens = 128;
    double rate = 0, temp = 0;
    const char *prompts = "README.md";
    uint64_t seed = 1;
    static const char usage[] =
        "usage: bench_serve --port P [--host ADDR] [--requests N] [--concurrency C]\n"
        "                   [--rate R] [--max-tokens T] [--prompts FILE] [--seed S]\n"
        "                   [--temp T]\n";
    if (argc % 2 == 0) {
        fputs(usage, stderr);
        return 2;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--host"))
            host = v;
        else if (!strcmp(a, "--port"))
            port = v;
        else if (!strcmp(a, "--requests"))
            nreq = atoi(v);
        else if (!strcmp(a, "--concurrency"))
            conc = atoi(v);
        else if (!strcmp(a, "--rate"))
            rate = atof(v);
        else if (!strcmp(a, "--max-tokens"))
            max_tokens = atoi(v);
        else if (!strcmp(a, "--prompts"))
            prompts = v;
        else if (!strcmp(a, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--temp"))
            temp = atof(v);
        else {
            fprintf(stderr, "bench_serve: unknown option %s\n%s", a, usage);
            return 2;
        }
    }
    if (nreq < 1 || conc < 1 || max_tokens < 1 || !(temp >= 0 && temp <= 100)) {
        fprintf(stderr, "bench_serve: --requests, --concurrency, --max-tokens must be >= 1, "
                        "--temp 0..100\n");
        return 2;
    }
    char *text = bench_read_all(prompts);
    if (!text || strlen(text) < 4096) {
        fprintf(stderr, "bench_serve: %s: cannot read at least 4 KiB of prompt text\n", prompts);
        return 1;
    }
    bench_rng_seed(seed);
    breq *r = calloc((size_t)nreq, sizeof *r);
    double t = 0;
    for (int i = 0; i < nreq; i++) {
        size_t off = (size_t)(bench_uniform() * (double)(strlen(text) - 2048));
        r[i].body = prompt_json(text, off, 8 + (int)(bench_uniform() * 57), max_tokens, temp,
                                seed * 1000 + (uint64_t)i);
        r[i].arrive = t;
        /* the gap is drawn at any rate, so the same seed sends the same
         * prompts with and without arrivals (both sides of run_serve_bench) */
        double gap = -log1p(-bench_uniform());
        if (rate > 0)
            t += gap / rate;
    }
    sem_init(&slots, 0, (unsigned)conc);
    pthread_t *th = calloc((size_t)nreq, sizeof *th);
    t0 = now();
    for (int i = 0; i < nreq; i++)
        pthread_create(&th[i], NULL, run, &r[i]);
    for (int i = 0; i < nreq; i++)
        pthread_join(th[i], NULL);
    double end = 0, start = 1e300;
    long tokens = 0, failed = 0;
    size_t nitl = 0;
    double *ttft = calloc((size_t)nreq, sizeof *ttft), *tpot = calloc((size_t)nreq, sizeof *tpot);
    double *e2e = calloc((size_t)nreq, sizeof *e2e);
    size_t ntpot = 0, nttft = 0, ne2e = 0;
    long fewest = -1;
    for (int i = 0; i < nreq; i++)
        nitl += r[i].n_itl;
    double *itl = calloc(nitl + 1, sizeof *itl);
    nitl = 0;
    for (int i = 0; i < nreq; i++) {
        if (!r[i].ok) {
            failed++;
            continue;
        }
        tokens += r[i].completion_tokens;
        if (r[i].sent < start)
            start = r[i].sent;
        if (r[i].last > end)
            end = r[i].last;
        ttft[nttft++] = r[i].first - r[i].sent;
        e2e[ne2e++] = r[i].last - r[i].sent;
        if (fewest < 0 || r[i].completion_tokens < fewest)
            fewest = r[i].completion_tokens;
        if (r[i].events > 1)
            tpot[ntpot++] = (r[i].last - r[i].first) / (double)(r[i].events - 1);
        memcpy(itl + nitl, r[i].itl, r[i].n_itl * sizeof *itl);
        nitl += r[i].n_itl;
    }
    double wall = end - start;
    printf("requests %d (failed %ld), concurrency %d, rate %g/s, max_tokens %d: wall %.3f s, "
           "output tokens %ld, aggregate %.1f tokens/s, TTFT p50 %.1f ms p99 %.1f ms, TPOT p50 "
           "%.2f ms p99 %.2f ms, ITL p50 %.2f ms p99 %.2f ms\n",
           nreq, failed, conc, rate, max_tokens, wall, tokens, wall > 0 ? (double)tokens / wall : 0,
           pct(ttft, nttft, 0.5) * 1e3, pct(ttft, nttft, 0.99) * 1e3, pct(tpot, ntpot, 0.5) * 1e3,
           pct(tpot, ntpot, 0.99) * 1e3, pct(itl, nitl, 0.5) * 1e3, pct(itl, nitl, 0.99) * 1e3);
    printf("starvation: TPOT max %.2f ms, E2E p50 %.3f s max %.3f s, fewest tokens %ld\n",
           pct(tpot, ntpot, 1.0) * 1e3, pct(e2e, ne2e, 0.5), pct(e2e, ne2e, 1.0), fewest);
    for (int i = 0; i < nreq; i++) {
        free(r[i].body);
        free(r[i].itl);
    }
    free(r);
    free(th);
    free(ttft);
    free(tpot);
    free(e2e);
    free(itl);
    free(text);
    return failed ? 1 : 0;
}
