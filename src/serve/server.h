/* server.h - the state synor serve's HTTP side (server.c), its generation
 * requests (gen.c) and its metrics (metrics.c) share. Never installed. */
#ifndef SYNOR_SERVE_SERVER_H
#define SYNOR_SERVE_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/common.h"
#include "synor/serve.h"

struct MHD_Daemon;
struct MHD_Connection;

/* Histogram buckets (seconds) of the time per output token and the time
 * to the first token. */
#define SERVE_HIST_N 12
extern const double synor__serve_hist_le[SERVE_HIST_N];

typedef struct serve_hist {
    _Atomic uint64_t bucket[SERVE_HIST_N + 1]; /* the last: +Inf */
    _Atomic uint64_t sum_ns, count;
} serve_hist;

/* Tokens generated per second over the last SERVE_RATE_S seconds: one slot
 * per second, stamped with the second it counts. */
#define SERVE_RATE_S 10

/* HTTP status codes counted in synor_http_responses_total. */
#define SERVE_NCODES 9
extern const int synor__serve_codes[SERVE_NCODES];

typedef struct serve_gen serve_gen;

struct synor_server {
    synor_llm *m;
    synor_runtime *rt;
    synor_server_opts o;
    char *host, *model_name;
    unsigned ctx_len;
    unsigned kv_total; /* blocks in the pool */
    synor_llm_ctx *ctx;
    synor_llm_sched *sched;
    synor_cache *cache; /* NULL when off */
    struct MHD_Daemon *d;
    unsigned port;
    time_t created;

    pthread_mutex_t mu;
    pthread_cond_t wake;   /* the engine: work arrived, or quit */
    pthread_cond_t idle;   /* stop: a request left */
    uint64_t kicks;        /* under mu: submissions and cancels */
    int quit, started, stopping, stopped, engine_running;
    unsigned inflight;     /* under mu: HTTP requests being answered */
    serve_gen *live;       /* under mu: generations not finished */
    uint64_t next_seq;     /* under mu: for ids and default seeds */
    pthread_t engine;

    /* under mu: tokens per second, see SERVE_RATE_S */
    uint64_t rate_sec[SERVE_RATE_S], rate_tok[SERVE_RATE_S];
    uint64_t rate_seen; /* generated tokens counted into the slots */

    /* metrics */
    _Atomic uint64_t requests, prompt_tokens, gen_tokens, finished[3];
    _Atomic uint64_t codes[SERVE_NCODES + 1];
    serve_hist tpot, ttft;
};

/* Monotonic nanoseconds. */
uint64_t synor__serve_now_ns(void);
void synor__serve_hist_add(serve_hist *h, uint64_t ns);
void synor__serve_count_code(synor_server *s, int status);
/* The Prometheus text of /metrics (a fresh string or NULL). */
char *synor__serve_metrics(synor_server *s);
/* Counts n tokens generated now into the tokens-per-second slots (mu
 * held). */
void synor__serve_rate_add(synor_server *s, uint64_t n);

/* The answer to a generation request (POST /v1/completions or
 * /v1/chat/completions with its body): queues the response on c. */
int synor__serve_generate(synor_server *s, struct MHD_Connection *c, int chat, const char *body,
                          size_t len);
/* Queues a JSON error response {"error":{...}} with status. */
int synor__serve_error(synor_server *s, struct MHD_Connection *c, int status, const char *fmt,
                       ...) SYNOR__PRINTF(4, 5);
/* Queues text (copied) with status and content type. */
int synor__serve_text(synor_server *s, struct MHD_Connection *c, int status, const char *type,
                      const char *text, size_t len);
/* Cancels every generation still live (stop's grace ran out). mu held. */
void synor__serve_cancel_all(synor_server *s);

#endif
