/* server.h - the state synor serve's HTTP side (server.c), its generation
 * requests (gen.c) and its metrics (metrics.c) share. Never installed. */
#ifndef SYNOR_SERVE_SERVER_H
#define SYNOR_SERVE_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "serve/serve_api.h"
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

/* An embedding asked of the engine thread (semantic.c). */
typedef struct serve_embed {
    const char *text;
    float *out;
    int rc, done;
    struct serve_embed *next;
} serve_embed;

/* A request the server generated on a prediction, not yet asked for
 * (semantic.c): under its prediction key; a sample's answer is kept in
 * val, a determined request's is in the exact-match cache. */
typedef struct serve_predicted {
    char *key;
    size_t klen;
    int ready; /* generated */
    char *val; /* a sample's answer (the exact-match cache's value format) */
    size_t vlen;
    struct serve_predicted *next;
} serve_predicted;

struct synor_server {
    synor_llm *m;
    synor_runtime *rt;
    synor_server_opts o;
    char *host, *model_name;
    unsigned ctx_len;
    unsigned kv_total; /* blocks in the pool */
    synor_llm_ctx *ctx;
    synor_llm_ctx *dctx; /* the draft model's (o.draft), or NULL */
    synor_llm_sched *sched;
    /* the chat template, and the tokens that end the assistant's turn
     * besides EOS (chatml's <|im_end|>, the model's end-of-turn token) */
    synor__serve_tmpl tmpl;
    int32_t turn_end[2];
    int n_turn_end;
    synor_cache *cache; /* NULL when off */
    synor_semcache *sem;   /* NULL when off */
    synor_llm_ctx *ectx;   /* the semantic cache's embeddings: the engine thread's */
    serve_embed *embeds;   /* under mu: waiting for the engine thread */
    pthread_cond_t embedded; /* an embedding is done */
    synor_predictor *pred; /* NULL when off */
    serve_predicted *predicted; /* under mu */
    unsigned n_predicted;       /* under mu: the list's length */
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
    FILE *step_log;        /* the engine thread's; NULL: none */
    unsigned kv_cold;      /* the engine thread's: KV blocks never written yet */
    uint64_t t_start;      /* monotonic ns at creation */
    uint64_t wait_ns;      /* under mu: the engine thread asleep (no work) */
    uint64_t wait_since;   /* under mu: when it fell asleep; 0: awake */

    /* under mu: tokens per second, see SERVE_RATE_S */
    uint64_t rate_sec[SERVE_RATE_S], rate_tok[SERVE_RATE_S];
    uint64_t rate_seen; /* generated tokens counted into the slots */

    /* metrics */
    _Atomic uint64_t requests, prompt_tokens, gen_tokens, finished[3];
    _Atomic uint64_t codes[SERVE_NCODES + 1];
    _Atomic uint64_t sem_lookups, sem_hits, pred_started, pred_ready, pred_hits;
    serve_hist tpot, ttft;
};

/* KV blocks the idle engine writes between looks for work (~1 MB each at
 * stories110M's shape). */
#define SERVE_WARM_BLOCKS 4

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
/* The embedding of text (dim floats into out), computed by the engine
 * thread between steps; blocks until it is. */
int synor__serve_embed(synor_server *s, const char *text, float *out);
/* The engine thread: computes the embeddings asked for (mu not held). */
void synor__serve_embed_run(synor_server *s);
/* After a whole-answer request naming a user: teaches the predictor and
 * starts the likely next requests' generations (mu not held). */
void synor__serve_predict_after(synor_server *s, const synor__serve_req *q);
/* A request's prediction key (a fresh buffer; NULL when out of memory). */
char *synor__serve_pred_key(synor_server *s, const synor__serve_req *q, size_t *klen);
/* A determined request answered from the exact-match cache: if its answer
 * was generated on a prediction, counts the hit and forgets it. */
void synor__serve_predicted_hit(synor_server *s, const char *key, size_t klen);
/* A sampled request: the sample generated for it on a prediction (val
 * taken by the caller, freed with synor__free), served once; SYNOR_ENOENT
 * when there is none ready. */
int synor__serve_predicted_take(synor_server *s, const char *key, size_t klen, char **val,
                                size_t *len);
/* A predicted generation ended: stored 1 when its answer went into the
 * exact-match cache, val (taken) a sample's answer to keep; neither: it did
 * not finish normally, and is forgotten. */
void synor__serve_predicted_ready(synor_server *s, const char *key, size_t klen, char *val,
                                  size_t vlen, int stored);
/* The exact-match cache's value of a finished generation (a fresh buffer;
 * NULL when it did not finish normally): the finish reason (one byte), the
 * completion tokens (8 bytes), the text. */
char *synor__serve_gen_value(serve_gen *g, size_t *len);
/* Submits a generation nobody waits for, of a predicted request: key is
 * its prediction key (not taken: the prediction's), ekey its exact-match
 * cache key for a determined request (taken on success) or NULL. 0 or a
 * negative code. */
int synor__serve_generate_predicted(synor_server *s, const synor__serve_req *q, const char *key,
                                    size_t klen, char *ekey, size_t elen);
/* The exact-match cache key of a request (a fresh buffer), or NULL when
 * it is not cacheable. */
char *synor__serve_cache_key(synor_server *s, const synor__serve_req *q, size_t *klen);
/* Frees the semantic cache's and the predictor's state. */
void synor__serve_semantic_free(synor_server *s);

/* Cancels every generation still live (stop's grace ran out). mu held. */
void synor__serve_cancel_all(synor_server *s);

#endif
