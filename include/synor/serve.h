/* synor/serve.h - an HTTP server for a loaded model: OpenAI-compatible
 * completions and chat completions (whole or streamed as Server-Sent
 * Events), health, the model list and Prometheus metrics (issue 12 item 9;
 * docs/LLM.md, "Serving").
 *
 * Threads: libmicrohttpd answers each connection on a thread of its own;
 * one engine thread runs the continuous-batching scheduler
 * (synor_llm_sched) over one context of the model, and its callbacks hand
 * each generated token to the request's connection thread. So every
 * request waiting or generating costs a thread, and max_seqs requests
 * share each batch.
 *
 * Built only when libmicrohttpd is found at build time; otherwise
 * synor_server_create fails with SYNOR_ENOTSUP naming the library. */
#ifndef SYNOR_SERVE_H
#define SYNOR_SERVE_H

#include <stddef.h>

#include "synor/cache.h"
#include "synor/llm.h"
#include "synor/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_server synor_server;

typedef struct synor_server_opts {
    const char *host;         /* address or name to listen on; NULL: "127.0.0.1" */
    unsigned port;            /* 0: a free port, see synor_server_port */
    const char *model_name;   /* the model's id in the API; NULL: "synor" */
    unsigned max_seqs;        /* requests generating at once; 0: 16 */
    unsigned max_queue;       /* requests waiting for a sequence; 0: 64; beyond
                                 that a request is refused (503 "overloaded") */
    unsigned ctx;             /* positions per request, prompt and output
                                 together; 0 (or above): the model's seq_len */
    size_t max_body;          /* request body bytes; 0: 1 MiB; beyond: 413 */
    unsigned max_connections; /* 0: 256 (each one is a thread) */
    double grace_s;           /* synor_server_stop: how long requests in flight may go
                                 on generating; 0: 30 s; then they are cancelled and
                                 answered with what they have */
    /* The exact-match response cache (synor/cache.h) for whole answers of
     * requests whose answer is determined: greedy, or sampled with a seed.
     * cache_bytes: its memory tier (0: 64 MiB); cache_file: an SQLite file
     * for its disk tier (NULL: memory only); no_cache: 1 turns it off. */
    uint64_t cache_bytes;
    const char *cache_file;
    int no_cache;
    /* The semantic cache (synor_semcache): semantic_threshold in (0, 1]
     * turns it on (0: off). A whole (not streamed) answer is kept under the
     * embedding of its prompt (synor_llm_embed, computed by the engine
     * thread on a context of its own); a later request whose prompt's
     * embedding is at least that similar is answered with it, the answer
     * carrying "synor_cache": {"tier": "semantic", "similarity": S}.
     * semantic_entries: at most that many (0: 10000; the oldest go).
     * semantic_index: its index (synor_semcache_opts.index: 0, AUTO, the
     * exact scan up to SYNOR_SEMCACHE_EXACT_MAX entries and hnswlib's graph
     * beyond; SYNOR_SEMCACHE_EXACT; SYNOR_SEMCACHE_HNSW). semantic_file:
     * an SQLite file its entries are kept in across restarts (NULL: memory
     * only; synor_semcache_opts.disk_path). */
    float semantic_threshold;
    unsigned semantic_entries;
    unsigned semantic_index;
    const char *semantic_file;
    /* Request-level speculation (synor_predictor): predict > 0 turns it on.
     * After each cacheable request (greedy or seeded, not streamed) of a
     * request naming a "user", the predictor's up to predict most likely
     * next requests of that user, with probability at least 1/4, are
     * generated while no request waits, into the exact-match cache, so the
     * user's next request is a hit. Needs the exact-match cache. */
    unsigned predict;
    /* The engine's GPU layers (synor_llm_ctx_opts.gpu_layers, gpu_device;
     * 0: CPU only); the runtime must have CUDA on for them. */
    int gpu_layers;
    unsigned gpu_device;
    unsigned gpu_backend; /* synor_llm_ctx_opts.gpu_backend */
    unsigned kv_type;     /* synor_llm_ctx_opts.kv_type (0: F32) */
    /* Prefix caching (synor_llm_ctx_opts.prefix_cache) is on unless this
     * is set: requests whose prompts begin alike (n choices, a shared
     * system prompt, a conversation's earlier turns) reuse the KV blocks
     * of what an earlier one computed. */
    int no_prefix_cache;
    /* A debugging trace of the engine: a line per step appended to this
     * file (NULL: none), see docs/LLM.md "Serving: the step log". */
    const char *step_log;
    /* Speculative decoding (synor_llm_sched_opts.draft): draft NULL, or a
     * draft model with m's vocabulary (not owned; it must outlive the
     * server), run on a context of spec_max sequences beside m's (0: 2, at
     * most max_seqs); while at most spec_max requests are generating, all
     * greedy, each step is a round of spec_k proposals a request (0: 4)
     * checked by m in one batch - the same tokens, fewer passes over m's
     * weights. /metrics counts the rounds and the acceptance. */
    synor_llm *draft;
    unsigned spec_k;
    unsigned spec_max;
    /* How chat messages are written for the model (docs/LLM.md, "Chat
     * templates"): NULL or "auto", the family the model's own template
     * (GGUF tokenizer.chat_template) shows, else plain; or "plain",
     * "chatml", "llama2", "zephyr". */
    const char *chat_template;
} synor_server_opts;

/* A server for model m (not owned; it must outlive the server) whose
 * context runs on rt (started or not; not owned). opts may be NULL.
 * Nothing listens until synor_server_start. SYNOR_EINVAL (a bad option,
 * named), SYNOR_ENOMEM, SYNOR_ENOTSUP (built without libmicrohttpd). */
int synor_server_create(synor_llm *m, synor_runtime *rt, const synor_server_opts *opts,
                        synor_server **out);
/* Starts the engine thread and listens on host:port. SYNOR_EIO naming the
 * address when it cannot be resolved or bound (in use, not permitted);
 * SYNOR_ESTATE if already started. */
int synor_server_start(synor_server *s);
/* The port listened on (the one chosen when opts.port was 0); 0 before
 * start. */
unsigned synor_server_port(const synor_server *s);
/* Stops: new connections are refused, requests in flight finish (or are
 * cancelled after grace_s, their answers ending with finish_reason
 * "cancelled"), then the threads end. Returns when all have. Idempotent. */
void synor_server_stop(synor_server *s);
/* Stops it if running and frees it; accepts NULL. */
void synor_server_destroy(synor_server *s);

#ifdef __cplusplus
}
#endif
#endif
