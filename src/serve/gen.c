/* gen.c - one generation request of synor serve, from its checked body to
 * its answer: tokenized, submitted to the scheduler, and fed token by token
 * by the engine thread's callbacks into a buffer that the connection's
 * thread drains - whole when the answer is one JSON object, as Server-Sent
 * Events as they come when it streams.
 *
 * A request is shared by two threads with different lifetimes (the engine
 * until on_done, the connection until its response is freed, which is
 * earlier when the client goes away), so it is counted: freed by the last
 * of the two.
 *
 * Stop sequences ("stop"): after each token the text is searched for them
 * where a match could end in the token's bytes; the first match cuts the
 * answer before it and stops the generation (finish_reason "stop"). A
 * stream holds back, besides an incomplete character, the longest end of
 * its text that begins some stop sequence, until the next token shows
 * whether it is one. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/serve_api.h"
#include "serve/server.h"
#include "synor/llm.h"

struct serve_gen {
    synor_server *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;    /* under mu */
    uint64_t id; /* the scheduler's; set under s->mu */
    int chat, stream;
    char name[40]; /* "cmpl-N" or "chatcmpl-N" */
    time_t created;
    size_t n_prompt;
    int32_t prev; /* the last token, for the leading-space rule */
    uint64_t t_submit, t_last;
    /* under mu: */
    size_t generated;
    synor__buf text; /* the whole answer's text (not streaming) */
    synor__buf held; /* streaming: bytes of a character still incomplete */
    synor__buf out;  /* streaming: events not yet sent */
    size_t out_off;
    int done, reason, cancelled, ended;
    serve_gen *prev_live, *next_live; /* under s->mu */
    /* a generation nobody waits for (a prediction, under bg_key): its
     * answer goes into the exact-match cache under bg_ekey, or (a sample)
     * is kept by the prediction */
    int background;
    char *bg_key, *bg_ekey;
    size_t bg_klen, bg_elen;
    /* an answer from a cache: "memory", "disk" (exact) or "semantic" */
    const char *tier;
    float similarity;
    char *stop[SYNOR__SERVE_MAX_STOP]; /* the request's stop sequences (copies) */
    int n_stop;
    int stop_hit; /* under mu: the answer ended at one */
    /* logprobs: the entries (under mu), and the one on_logits computed for
     * the token on_token is about to take (the engine thread's) */
    int has_lp, top_lp;
    synor__serve_lp *lp, pend;
    size_t nlp, cap_lp;
};

static void gen_unref(serve_gen *g)
{
    pthread_mutex_lock(&g->mu);
    int last = --g->refs == 0;
    pthread_mutex_unlock(&g->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    synor__buf_free(&g->text);
    synor__buf_free(&g->held);
    synor__buf_free(&g->out);
    synor__free(g->bg_key);
    synor__free(g->bg_ekey);
    for (int i = 0; i < g->n_stop; i++)
        synor__free(g->stop[i]);
    synor__free(g->lp);
    synor__free(g);
}

/* The token's log-probability and its top_lp most likely alternatives,
 * from the row it was drawn from, for on_token to keep. */
static void on_logits(uint64_t id, int32_t token, const float *l, void *user)
{
    (void)id;
    serve_gen *g = user;
    synor__serve_lp_compute(l, synor_llm_hparams_get(g->s->m)->vocab_size, token, g->top_lp,
                            &g->pend);
}

/* The first stop sequence in b that ends at or after byte `from` (bytes
 * before it were searched before): b is cut where it starts; 1 if found. */
static int stop_cut(const serve_gen *g, synor__buf *b, size_t from)
{
    size_t p = synor__serve_stop_find(g->stop, g->n_stop, b->data, b->len, from);
    if (p == SIZE_MAX)
        return 0;
    b->len = p;
    return 1;
}

/* The start of every streamed chunk, up to the text. */
static void chunk_head(serve_gen *g, synor__buf *b)
{
    synor__buf_printf(b,
                      "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":", g->name,
                      g->chat ? "chat.completion.chunk" : "text_completion", (long long)g->created);
    synor__serve_json_text(b, g->s->model_name, strlen(g->s->model_name));
    synor__buf_puts(b, ",\"choices\":[{\"index\":0,");
}

/* One event carrying text[0..n) (mu held). */
static void emit_text(serve_gen *g, const char *text, size_t n)
{
    chunk_head(g, &g->out);
    synor__buf_puts(&g->out, g->chat ? "\"delta\":{\"content\":" : "\"text\":");
    synor__serve_json_text(&g->out, text, n);
    synor__buf_puts(&g->out, g->chat ? "},\"finish_reason\":null}]}\n\n"
                                     : ",\"logprobs\":null,\"finish_reason\":null}]}\n\n");
}

static int on_token(uint64_t id, int32_t token, void *user)
{
    (void)id;
    serve_gen *g = user;
    synor_server *s = g->s;
    const synor_tokenizer *tok = synor_llm_tokenizer(s->m);
    /* synor generate ends its text at BOS as well as EOS: so does serve */
    if (token == synor_tokenizer_bos(tok))
        return 1;
    char piece[256];
    long n = synor_tokenizer_decode(tok, g->prev, token, piece, sizeof piece);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof piece)
        n = (long)sizeof piece;
    int32_t prev = g->prev;
    g->prev = token;
    uint64_t now = synor__serve_now_ns();
    if (g->background) /* not a request: no latency figures */
        ;
    else if (g->t_last)
        synor__serve_hist_add(&s->tpot, now - g->t_last);
    else
        synor__serve_hist_add(&s->ttft, now - g->t_submit);
    g->t_last = now;
    atomic_fetch_add(&s->gen_tokens, 1);
    pthread_mutex_lock(&g->mu);
    g->generated++;
    if (g->has_lp && g->nlp == g->cap_lp) {
        size_t cap = g->cap_lp ? 2 * g->cap_lp : 64;
        synor__serve_lp *p = synor__realloc(g->lp, cap * sizeof *p);
        if (p) {
            g->lp = p;
            g->cap_lp = cap;
        }
    }
    if (g->has_lp && g->nlp < g->cap_lp) { /* (out of memory: the entry is lost, not the text) */
        g->pend.prev = prev;
        g->pend.offset = g->text.len;
        g->pend.len = (size_t)n;
        g->lp[g->nlp++] = g->pend;
    }
    synor__buf *b = g->stream ? &g->held : &g->text;
    size_t from = b->len;
    synor__buf_append(b, piece, (size_t)n);
    int stop = g->n_stop && b->data && !b->failed && stop_cut(g, b, from);
    g->stop_hit |= stop;
    if (g->stream) {
        /* after a stop the text before it is whole: all of it goes */
        size_t k = !b->data ? 0 : stop ? b->len : synor__serve_utf8_ready(b->data, b->len);
        if (!stop && g->n_stop && b->data) {
            size_t t = synor__serve_stop_tail(g->stop, g->n_stop, b->data, b->len);
            k = k < b->len - t ? k : b->len - t;
        }
        if (k) {
            emit_text(g, b->data, k);
            memmove(b->data, b->data + k, b->len - k);
            b->len -= k;
        }
        pthread_cond_signal(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
    return stop;
}

static void on_done(uint64_t id, int reason, void *user)
{
    (void)id;
    serve_gen *g = user;
    synor_server *s = g->s;
    pthread_mutex_lock(&s->mu);
    if (g->prev_live)
        g->prev_live->next_live = g->next_live;
    else if (s->live == g)
        s->live = g->next_live;
    if (g->next_live)
        g->next_live->prev_live = g->prev_live;
    g->prev_live = g->next_live = NULL;
    pthread_mutex_unlock(&s->mu);
    const char *fr = synor__serve_finish_reason(reason);
    if (!g->background)
        atomic_fetch_add(&s->finished[!strcmp(fr, "stop") ? 0 : !strcmp(fr, "length") ? 1 : 2], 1);
    pthread_mutex_lock(&g->mu);
    g->done = 1;
    g->reason = reason;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    if (g->background) {
        size_t vlen = 0;
        char *v = synor__serve_gen_value(g, &vlen);
        int stored = 0;
        if (v && g->bg_ekey) {
            stored = synor_cache_put(s->cache, g->bg_ekey, g->bg_elen, v, vlen) == 0;
            synor__free(v);
            v = NULL;
        }
        synor__serve_predicted_ready(s, g->bg_key, g->bg_klen, v, vlen, stored);
    }
    gen_unref(g);
}

void synor__serve_cancel_all(synor_server *s)
{
    for (serve_gen *g = s->live; g; g = g->next_live)
        synor_llm_sched_cancel(s->sched, g->id);
    s->kicks++;
    pthread_cond_signal(&s->wake);
}

static void append_usage(serve_gen *g, synor__buf *b)
{
    synor__buf_printf(b,
                      ",\"usage\":{\"prompt_tokens\":%zu,\"completion_tokens\":%zu,"
                      "\"total_tokens\":%zu}",
                      g->n_prompt, g->generated, g->n_prompt + g->generated);
}

/* The streamed answer: events as the engine adds them; at the end any
 * bytes held back, a chunk with the finish reason and usage, and [DONE].
 * MHD's thread per connection may block here. */
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    serve_gen *g = cls;
    pthread_mutex_lock(&g->mu);
    while (g->out_off == g->out.len && !g->done)
        pthread_cond_wait(&g->cv, &g->mu);
    if (g->out_off == g->out.len && g->done && !g->ended) {
        g->ended = 1;
        if (g->held.len)
            emit_text(g, g->held.data, g->held.len);
        chunk_head(g, &g->out);
        synor__buf_puts(&g->out, g->chat ? "\"delta\":{}" : "\"text\":\"\",\"logprobs\":null");
        synor__buf_printf(&g->out, ",\"finish_reason\":\"%s\"}]",
                          synor__serve_finish_reason(g->reason));
        append_usage(g, &g->out);
        synor__buf_puts(&g->out, "}\n\ndata: [DONE]\n\n");
    }
    ssize_t n = MHD_CONTENT_READER_END_OF_STREAM;
    if (g->out.failed) {
        n = MHD_CONTENT_READER_END_WITH_ERROR;
    } else if (g->out_off < g->out.len) {
        size_t k = g->out.len - g->out_off;
        if (k > max)
            k = max;
        memcpy(buf, g->out.data + g->out_off, k);
        g->out_off += k;
        if (g->out_off == g->out.len)
            g->out_off = g->out.len = 0;
        n = (ssize_t)k;
    }
    pthread_mutex_unlock(&g->mu);
    return n;
}

/* The response is gone: the client may have left before the end, so the
 * generation stops too. */
static void sse_free(void *cls)
{
    serve_gen *g = cls;
    synor_server *s = g->s;
    pthread_mutex_lock(&g->mu);
    int done = g->done;
    pthread_mutex_unlock(&g->mu);
    if (!done) {
        pthread_mutex_lock(&s->mu);
        synor_llm_sched_cancel(s->sched, g->id);
        s->kicks++;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->mu);
    }
    gen_unref(g);
}

static int answer_whole(serve_gen *g, struct MHD_Connection *c)
{
    synor_server *s = g->s;
    pthread_mutex_lock(&g->mu);
    while (!g->done)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    pthread_mutex_lock(&s->mu);
    int failed = g->reason == SYNOR_LLM_DONE_CANCELLED && !s->stopping;
    pthread_mutex_unlock(&s->mu);
    if (failed) /* only a failed batch cancels a request nobody can cancel */
        return synor__serve_error(s, c, 500,
                                  "the generation failed: the engine's batch failed "
                                  "(the server's standard error says why)");
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":", g->name,
                      g->chat ? "chat.completion" : "text_completion", (long long)g->created);
    synor__serve_json_text(&b, s->model_name, strlen(s->model_name));
    synor__buf_puts(&b, ",\"choices\":[{\"index\":0,");
    synor__buf_puts(&b, g->chat ? "\"message\":{\"role\":\"assistant\",\"content\":" : "\"text\":");
    synor__serve_json_text(&b, g->text.data ? g->text.data : "", g->text.len);
    synor__buf_puts(&b, g->chat ? "}" : "");
    if (g->has_lp)
        synor__serve_lp_json(&b, g->chat, synor_llm_tokenizer(s->m), g->lp, g->nlp,
                             g->text.data ? g->text.data : "", g->text.len);
    else if (!g->chat)
        synor__buf_puts(&b, ",\"logprobs\":null");
    synor__buf_printf(&b, ",\"finish_reason\":\"%s\"}]", synor__serve_finish_reason(g->reason));
    append_usage(g, &b);
    if (g->tier && !strcmp(g->tier, "predicted"))
        synor__buf_puts(&b, ",\"synor_cache\":{\"cache\":\"predicted\"}");
    else if (g->tier && !strcmp(g->tier, "semantic"))
        synor__buf_printf(&b, ",\"synor_cache\":{\"cache\":\"semantic\",\"similarity\":%.4f}",
                          (double)g->similarity);
    else if (g->tier)
        synor__buf_printf(&b, ",\"synor_cache\":{\"cache\":\"exact\",\"tier\":\"%s\"}", g->tier);
    synor__buf_puts(&b, "}\n");
    int r;
    if (b.failed)
        r = synor__serve_error(s, c, 500, "out of memory writing the answer");
    else
        r = synor__serve_text(s, c, 200, "application/json", b.data, b.len);
    synor__buf_free(&b);
    return r;
}

/* The tokens of the prompt (BOS first), or an answer already queued. */
static int tokenize(synor_server *s, struct MHD_Connection *c, const char *prompt, int32_t **ids,
                    size_t *n, int *answered)
{
    const synor_tokenizer *tok = synor_llm_tokenizer(s->m);
    size_t len = strlen(prompt);
    long need = synor_tokenizer_encode(tok, prompt, len, 1, 0, NULL, 0);
    *answered = 1;
    if (need < 0)
        return synor__serve_error(s, c, 400, "the prompt cannot be tokenized: %s", synor_errmsg());
    if (need >= (long)s->ctx_len)
        return synor__serve_error(s, c, 400,
                                  "the prompt is %ld tokens; the context holds %u (prompt and "
                                  "output together), so at most %u prompt tokens",
                                  need, s->ctx_len, s->ctx_len - 1);
    *ids = synor__malloc((size_t)need * sizeof **ids);
    if (!*ids)
        return synor__serve_error(s, c, 500, "out of memory tokenizing the prompt");
    synor_tokenizer_encode(tok, prompt, len, 1, 0, *ids, (size_t)need);
    *n = (size_t)need;
    *answered = 0;
    return MHD_YES;
}

static serve_gen *gen_new(synor_server *s, const synor__serve_req *q, size_t n_prompt, int32_t last)
{
    serve_gen *g = synor__calloc(1, sizeof *g);
    if (!g)
        return NULL;
    if (pthread_mutex_init(&g->mu, NULL)) {
        synor__free(g);
        return NULL;
    }
    if (pthread_cond_init(&g->cv, NULL)) {
        pthread_mutex_destroy(&g->mu);
        synor__free(g);
        return NULL;
    }
    g->s = s;
    g->refs = 2; /* the connection's and the engine's */
    g->chat = q->chat;
    g->stream = q->stream;
    g->has_lp = q->has_logprobs;
    g->top_lp = q->top_logprobs < SYNOR__SERVE_LP_TOP ? q->top_logprobs : SYNOR__SERVE_LP_TOP;
    g->created = time(NULL);
    g->n_prompt = n_prompt;
    g->prev = last;
    synor__buf_init(&g->text);
    synor__buf_init(&g->held);
    synor__buf_init(&g->out);
    for (int i = 0; i < q->n_stop; i++) {
        if (!(g->stop[i] = synor__strdup(q->stop[i]))) {
            g->refs = 1;
            gen_unref(g);
            return NULL;
        }
        g->n_stop = i + 1;
    }
    return g;
}

/* The exact-match cache holds a whole answer as: the finish reason (one
 * byte), the completion tokens (8 bytes), the text. Only answers that are
 * determined by the request are kept and served: greedy, or seeded. */
char *synor__serve_cache_key(synor_server *s, const synor__serve_req *q, size_t *klen)
{
    if (!s->cache || q->stream || q->has_logprobs || !(q->temperature == 0 || q->has_seed))
        return NULL;
    size_t n = synor_cache_key(NULL, 0, s->model_name, q->prompt, (int)q->max_tokens,
                               (float)q->temperature, (int)q->top_k, (float)q->top_p, q->seed);
    /* then, tagged: each stop sequence ('S', 4 bytes of length, its
     * bytes), the penalties ('P', 'F' and a float's bits) where not 0 */
    float pen[2] = {(float)q->presence_penalty, (float)q->frequency_penalty};
    size_t all = n;
    for (int i = 0; i < q->n_stop; i++)
        all += 5 + strlen(q->stop[i]);
    all += (pen[0] != 0) * 5 + (pen[1] != 0) * 5;
    char *k = synor__malloc(all);
    if (k) {
        synor_cache_key(k, n, s->model_name, q->prompt, (int)q->max_tokens, (float)q->temperature,
                        (int)q->top_k, (float)q->top_p, q->seed);
        for (int i = 0; i < q->n_stop; i++) {
            uint32_t l = (uint32_t)strlen(q->stop[i]);
            k[n] = 'S';
            memcpy(k + n + 1, &l, 4);
            memcpy(k + n + 5, q->stop[i], l);
            n += 5 + l;
        }
        for (int i = 0; i < 2; i++)
            if (pen[i] != 0) {
                k[n] = "PF"[i];
                memcpy(k + n + 1, &pen[i], 4);
                n += 5;
            }
    }
    *klen = all;
    return k;
}

char *synor__serve_gen_value(serve_gen *g, size_t *len)
{
    pthread_mutex_lock(&g->mu);
    int keep = g->done && (g->reason == SYNOR_LLM_DONE_LENGTH || g->reason == SYNOR_LLM_DONE_EOS ||
                           (g->reason == SYNOR_LLM_DONE_STOPPED && g->stop_hit));
    size_t n = g->text.len;
    char *v = keep && !g->text.failed ? synor__malloc(9 + n) : NULL;
    if (v) {
        uint64_t gen = g->generated;
        v[0] = (char)g->reason;
        memcpy(v + 1, &gen, 8);
        if (n)
            memcpy(v + 9, g->text.data, n);
        *len = 9 + n;
    }
    pthread_mutex_unlock(&g->mu);
    return v;
}

static void cache_store(synor_server *s, const char *key, size_t klen, const float *emb,
                        serve_gen *g)
{
    size_t n = 0;
    char *v = synor__serve_gen_value(g, &n);
    if (v && key)
        synor_cache_put(s->cache, key, klen, v, n); /* a failed put only costs a hit */
    if (v && emb)
        synor_semcache_add(s->sem, emb, v, n);
    synor__free(v);
}

/* Answers from a cached value, as answer_whole answers a generation. */
static int answer_cached(synor_server *s, struct MHD_Connection *c, const synor__serve_req *q,
                         size_t n_prompt, int32_t last, const char *v, size_t len,
                         const char *tier, float similarity)
{
    serve_gen *g = gen_new(s, q, n_prompt, last);
    if (!g)
        return synor__serve_error(s, c, 500, "out of memory");
    g->refs = 1;
    g->done = 1;
    g->reason = (unsigned char)v[0];
    uint64_t gen;
    memcpy(&gen, v + 1, 8);
    g->generated = (size_t)gen;
    g->tier = tier;
    g->similarity = similarity;
    synor__buf_append(&g->text, v + 9, len - 9);
    pthread_mutex_lock(&s->mu);
    uint64_t seq = ++s->next_seq;
    pthread_mutex_unlock(&s->mu);
    snprintf(g->name, sizeof g->name, "%s-%llu", q->chat ? "chatcmpl" : "cmpl",
             (unsigned long long)seq);
    int r = answer_whole(g, c);
    gen_unref(g);
    return r;
}

/* Names g (PREFIX-N), seeds its sampler (without a seed, each request
 * draws its own stream of numbers), and queues it with the scheduler,
 * linked into the live list: 0 or the scheduler's code. */
static int submit_gen(synor_server *s, serve_gen *g, const synor__serve_req *q, const char *prefix,
                      synor_llm_request *rq)
{
    pthread_mutex_lock(&s->mu);
    uint64_t seq = ++s->next_seq;
    snprintf(g->name, sizeof g->name, "%s-%llu", prefix, (unsigned long long)seq);
    uint64_t seed = q->has_seed ? q->seed : synor__serve_now_ns() ^ (seq * 0x9E3779B97F4A7C15ull);
    synor_sampler_init(&rq->sampler, (float)q->temperature, (int)q->top_k,
                       q->temperature > 0 ? (float)q->top_p : 1.0f, seed);
    rq->presence_penalty = (float)q->presence_penalty;
    rq->frequency_penalty = (float)q->frequency_penalty;
    g->t_submit = synor__serve_now_ns();
    int e = s->stopping ? SYNOR_ESTATE : synor_llm_sched_submit(s->sched, rq, &g->id);
    if (!e) {
        g->next_live = s->live;
        if (s->live)
            s->live->prev_live = g;
        s->live = g;
        s->kicks++;
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->mu);
    return e;
}

int synor__serve_generate(synor_server *s, struct MHD_Connection *c, int chat, const char *body,
                          size_t len)
{
    synor__serve_req q;
    if (synor__serve_req_parse(body, len, chat, &q))
        return synor__serve_error(s, c, 400, "%s", synor_errmsg());
    if (q.model && strcmp(q.model, s->model_name) != 0) {
        int r = synor__serve_error(s, c, 404,
                                   "model \"%s\" is not served here (this server has "
                                   "\"%s\")",
                                   q.model, s->model_name);
        synor__serve_req_free(&q);
        return r;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    int answered, r = tokenize(s, c, q.prompt, &ids, &n, &answered);
    if (answered) {
        synor__serve_req_free(&q);
        return r;
    }
    size_t klen = 0, pklen = 0;
    char *key = synor__serve_cache_key(s, &q, &klen);
    char *pkey = s->pred && !q.stream && !synor__serve_req_extras(&q)
                     ? synor__serve_pred_key(s, &q, &pklen)
                     : NULL;
    if (key) {
        char *v;
        size_t vlen;
        int tier;
        if (synor_cache_get(s->cache, key, klen, &v, &vlen, &tier) == 0 && vlen >= 9) {
            if (pkey)
                synor__serve_predicted_hit(s, pkey, pklen);
            r = answer_cached(s, c, &q, n, ids[n - 1], v, vlen,
                              tier == SYNOR_CACHE_DISK ? "disk" : "memory", 0);
            free(v);
            synor__serve_predict_after(s, &q);
            synor__free(pkey);
            synor__free(key);
            synor__free(ids);
            synor__serve_req_free(&q);
            return r;
        }
    } else if (pkey) { /* a sample: one generated ahead on a prediction? */
        char *v;
        size_t vlen;
        if (synor__serve_predicted_take(s, pkey, pklen, &v, &vlen) == 0) {
            r = answer_cached(s, c, &q, n, ids[n - 1], v, vlen, "predicted", 0);
            synor__free(v);
            synor__serve_predict_after(s, &q);
            synor__free(pkey);
            synor__free(ids);
            synor__serve_req_free(&q);
            return r;
        }
    }
    synor__free(pkey);
    /* the semantic cache: whole answers (not streamed; no stop sequences or
     * penalties) to similar prompts */
    float *emb = NULL;
    if (s->sem && !q.stream && !synor__serve_req_extras(&q)) {
        const synor_llm_hparams *h = synor_llm_hparams_get(s->m);
        emb = synor__malloc((size_t)h->dim * sizeof *emb);
        if (emb && synor__serve_embed(s, q.prompt, emb) != 0) {
            synor__free(emb); /* the engine said why on standard error */
            emb = NULL;
        }
        float sim = -1;
        char *v;
        size_t vlen;
        if (emb) {
            atomic_fetch_add(&s->sem_lookups, 1);
            if (synor_semcache_lookup(s->sem, emb, &sim, &v, &vlen) == 0 && vlen >= 9) {
                atomic_fetch_add(&s->sem_hits, 1);
                r = answer_cached(s, c, &q, n, ids[n - 1], v, vlen, "semantic", sim);
                free(v);
                synor__serve_predict_after(s, &q);
                synor__free(emb);
                synor__free(key);
                synor__free(ids);
                synor__serve_req_free(&q);
                return r;
            }
        }
    }
    synor_llm_request rq = {.prompt = ids, .n_prompt = n, .on_token = on_token, .on_done = on_done};
    if (q.has_logprobs)
        rq.on_logits = on_logits;
    rq.max_new =
        (int)(q.max_tokens < (long)(s->ctx_len - n) ? q.max_tokens : (long)(s->ctx_len - n));
    serve_gen *g = gen_new(s, &q, n, ids[n - 1]);
    rq.user = g;
    if (!g) {
        synor__free(emb);
        synor__free(key);
        synor__free(ids);
        synor__serve_req_free(&q);
        return synor__serve_error(s, c, 500, "out of memory");
    }
    int e = submit_gen(s, g, &q, chat ? "chatcmpl" : "cmpl", &rq);
    synor__free(ids);
    int stream = q.stream;
    if (e || stream)
        synor__serve_req_free(&q);
    if (e) {
        synor__free(emb);
        synor__free(key);
        char msg[512];
        synor__strlcpy(msg, synor_errmsg(), sizeof msg);
        g->refs = 1;
        gen_unref(g);
        if (e == SYNOR_ESTATE)
            return synor__serve_error(s, c, 503, "the server is shutting down");
        if (e == SYNOR_EBUSY) {
            struct MHD_Response *rsp = NULL;
            snprintf(msg, sizeof msg,
                     "overloaded: the queue of %u waiting requests is full; "
                     "retry later",
                     s->o.max_queue);
            char *j = synor__serve_error_json(503, msg);
            if (j)
                rsp = MHD_create_response_from_buffer(strlen(j), j, MHD_RESPMEM_MUST_COPY);
            synor__free(j);
            if (!rsp)
                return MHD_NO;
            MHD_add_response_header(rsp, "Content-Type", "application/json");
            MHD_add_response_header(rsp, "Retry-After", "1");
            synor__serve_count_code(s, 503);
            r = MHD_queue_response(c, 503, rsp);
            MHD_destroy_response(rsp);
            return r;
        }
        return synor__serve_error(s, c, e == SYNOR_ERANGE || e == SYNOR_EINVAL ? 400 : 500, "%s",
                                  msg);
    }
    atomic_fetch_add(&s->requests, 1);
    atomic_fetch_add(&s->prompt_tokens, n);
    if (!stream) {
        r = answer_whole(g, c);
        if (key || emb)
            cache_store(s, key, klen, emb, g);
        synor__serve_predict_after(s, &q); /* the user has the answer: what next? */
        synor__serve_req_free(&q);
        synor__free(emb);
        synor__free(key);
        gen_unref(g);
        return r;
    }
    synor__free(key); /* streams are not cached */
    struct MHD_Response *rsp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, sse_read, g, sse_free);
    if (!rsp) {
        sse_free(g);
        return MHD_NO;
    }
    MHD_add_response_header(rsp, "Content-Type", "text/event-stream");
    MHD_add_response_header(rsp, "Cache-Control", "no-cache");
    synor__serve_count_code(s, 200);
    r = MHD_queue_response(c, 200, rsp);
    MHD_destroy_response(rsp);
    return r;
}

int synor__serve_generate_predicted(synor_server *s, const synor__serve_req *q, const char *key,
                                    size_t klen, char *ekey, size_t elen)
{
    const synor_tokenizer *tok = synor_llm_tokenizer(s->m);
    size_t len = strlen(q->prompt);
    long n = synor_tokenizer_encode(tok, q->prompt, len, 1, 0, NULL, 0);
    if (n < 1 || n >= (long)s->ctx_len)
        return SYNOR_ERANGE;
    int32_t *ids = synor__malloc((size_t)n * sizeof *ids);
    char *k = synor__malloc(klen);
    serve_gen *g = ids && k ? gen_new(s, q, (size_t)n, 0) : NULL;
    if (!g) {
        synor__free(ids);
        synor__free(k);
        return SYNOR_ENOMEM;
    }
    memcpy(k, key, klen);
    synor_tokenizer_encode(tok, q->prompt, len, 1, 0, ids, (size_t)n);
    g->refs = 1; /* the engine's only */
    g->background = 1;
    g->bg_key = k;
    g->bg_klen = klen;
    g->bg_ekey = ekey;
    g->bg_elen = elen;
    g->prev = ids[n - 1];
    synor_llm_request rq = {.prompt = ids,
                            .n_prompt = (size_t)n,
                            .on_token = on_token,
                            .on_done = on_done,
                            .user = g};
    rq.max_new = (int)(q->max_tokens < (long)s->ctx_len - n ? q->max_tokens : (long)s->ctx_len - n);
    int e = submit_gen(s, g, q, "predicted", &rq);
    synor__free(ids);
    if (e) {
        g->bg_ekey = NULL; /* the caller keeps it on failure */
        gen_unref(g);
    }
    return e;
}
