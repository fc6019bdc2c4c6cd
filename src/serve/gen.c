/* gen.c - one generation request of synor serve (gen.h), from its
 * checked body to its answer: tokenized, each of its choices submitted to
 * the scheduler, and fed token by token by the engine thread's callbacks
 * into the choice's text, which answer.c sends.
 *
 * Stop sequences ("stop"): after each token the text is searched for them
 * where a match could end in the token's bytes; the first match cuts the
 * answer before it and stops the choice (finish_reason "stop"). A stream
 * holds back, besides an incomplete character, the longest end of its
 * text that begins some stop sequence, until the next token shows whether
 * it is one. With "echo" the prompt's text comes first in each choice's
 * text (and, with logprobs, its tokens' entries first), and stop
 * sequences are looked for after it. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/gen.h"
#include "synor/llm.h"

void synor__serve_gen_unref(serve_gen *g)
{
    pthread_mutex_lock(&g->mu);
    int last = --g->refs == 0;
    pthread_mutex_unlock(&g->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    synor__buf_free(&g->out);
    synor__free(g->bg_key);
    synor__free(g->bg_ekey);
    for (int i = 0; i < g->n_stop; i++)
        synor__free(g->stop[i]);
    for (int i = 0; i < g->n; i++) {
        synor__buf_free(&g->ch[i].text);
        synor__free(g->ch[i].lp);
        synor__free(g->ch[i].ids);
        synor__buf_free(&g->ch[i].shown);
        synor_llm_json_destroy(g->ch[i].json);
    }
    synor__free(g->prompt_ids);
    synor__free(g);
}

/* Room for one more logprobs entry in c (mu held); 0 when out of memory
 * (the entry is lost, not the text). */
static int lp_room(serve_choice *c)
{
    if (c->nlp < c->cap_lp)
        return 1;
    size_t cap = c->cap_lp ? 2 * c->cap_lp : 64;
    synor__serve_lp *p = synor__realloc(c->lp, cap * sizeof *p);
    if (!p)
        return 0;
    c->lp = p;
    c->cap_lp = cap;
    return 1;
}

/* The decoded text of token after prev (at most 256 bytes) into piece. */
static size_t piece_of(const synor_tokenizer *tok, int32_t prev, int32_t token, char piece[256])
{
    long n = synor_tokenizer_decode(tok, prev, token, piece, 256);
    return n < 0 ? 0 : n > 256 ? 256 : (size_t)n;
}

/* The token's log-probability and its top_lp most likely alternatives,
 * from the row it was drawn from, for on_token to keep. */
static void on_logits(uint64_t id, int32_t token, const float *l, void *user)
{
    (void)id;
    serve_choice *c = user;
    synor__serve_lp_compute(l, synor_llm_hparams_get(c->g->s->m)->vocab_size, token,
                            c->g->top_lp, &c->pend);
}

/* echo with logprobs: prompt token i's entry, from the row before it. */
static void on_prompt_logits(uint64_t id, size_t i, int32_t token, const float *l, void *user)
{
    (void)id;
    serve_choice *c = user;
    serve_gen *g = c->g;
    synor__serve_lp e;
    synor__serve_lp_compute(l, synor_llm_hparams_get(g->s->m)->vocab_size, token, g->top_lp, &e);
    char piece[256];
    e.prev = c->prev; /* the prompt token before: on_prompt_logits walks the prompt */
    e.offset = c->poff;
    e.len = piece_of(synor_llm_tokenizer(g->s->m), c->prev, token, piece);
    if (e.offset + e.len > g->echo_len) /* (the echo is these pieces: never) */
        e.len = e.offset < g->echo_len ? g->echo_len - e.offset : 0;
    c->poff += e.len;
    c->prev = token;
    (void)i;
    pthread_mutex_lock(&g->mu);
    if (lp_room(c))
        c->lp[c->nlp++] = e;
    pthread_mutex_unlock(&g->mu);
}

/* The first stop sequence in c's text that ends at or after byte `from`
 * (bytes before it were searched before) and starts after the echoed
 * prompt: the text is cut where it starts; 1 if found. */
static int stop_cut(const serve_gen *g, serve_choice *c, size_t from)
{
    synor__buf *b = &c->text;
    size_t e = g->echo_len;
    size_t p = synor__serve_stop_find(g->stop, g->n_stop, b->data + e, b->len - e, from - e);
    if (p == SIZE_MAX)
        return 0;
    b->len = e + p;
    return 1;
}

static void on_admit(uint64_t id, size_t reused, void *user)
{
    (void)id;
    serve_choice *c = user;
    pthread_mutex_lock(&c->g->mu);
    if (!c->admitted++) /* (a preempted choice's later admissions count its answer) */
        c->cached = reused;
    pthread_mutex_unlock(&c->g->mu);
}

static int on_token(uint64_t id, int32_t token, void *user)
{
    (void)id;
    serve_choice *c = user;
    serve_gen *g = c->g;
    synor_server *s = g->s;
    const synor_tokenizer *tok = synor_llm_tokenizer(s->m);
    /* synor generate ends its text at BOS as well as EOS: so does serve;
     * and a chat template's end of turn */
    if (token == synor_tokenizer_bos(tok))
        return 1;
    for (int i = 0; i < s->n_turn_end; i++)
        if (token == s->turn_end[i])
            return 1;
    char piece[256];
    size_t n = piece_of(tok, c->prev, token, piece);
    int32_t prev = c->prev;
    c->prev = token;
    uint64_t now = synor__serve_now_ns();
    if (g->background) /* not a request: no latency figures */
        ;
    else if (c->t_last)
        synor__serve_hist_add(&s->tpot, now - c->t_last);
    else
        synor__serve_hist_add(&s->ttft, now - g->t_submit);
    c->t_last = now;
    atomic_fetch_add(&s->gen_tokens, 1);
    pthread_mutex_lock(&g->mu);
    c->generated++;
    c->sum_lp += c->pend.lp;
    if (g->prompt_ids) { /* return_token_ids (out of memory: the answer says so) */
        if (c->nids == c->cap_ids) {
            size_t cap = c->cap_ids ? 2 * c->cap_ids : 64;
            int32_t *t = synor__realloc(c->ids, cap * sizeof *t);
            c->cap_ids = t ? cap : c->cap_ids;
            c->ids = t ? t : c->ids;
        }
        if (c->nids < c->cap_ids)
            c->ids[c->nids++] = token;
    }
    synor__buf *b = &c->text;
    if (g->has_lp && lp_room(c)) {
        c->pend.prev = prev;
        c->pend.offset = b->len;
        c->pend.len = n;
        c->lp[c->nlp++] = c->pend;
    }
    size_t from = b->len;
    synor__buf_append(b, piece, n);
    int stop = g->n_stop && b->data && !b->failed && stop_cut(g, c, from);
    c->stop_hit |= stop;
    if (g->stream && g->tools && b->data && !b->failed) {
        synor__serve_tool_stream(g, c, b->data + from, b->len - from);
        pthread_cond_signal(&g->cv);
    } else if (g->stream && b->data && !b->failed) {
        /* after a stop the text before it is whole: all of it goes */
        size_t k = stop ? b->len : c->sent + synor__serve_utf8_ready(b->data + c->sent,
                                                                      b->len - c->sent);
        if (!stop && g->n_stop) {
            size_t e = g->echo_len;
            size_t t = synor__serve_stop_tail(g->stop, g->n_stop, b->data + e, b->len - e);
            k = k < b->len - t ? k : b->len - t;
        }
        if (k > c->sent)
            synor__serve_emit(g, c, k, 0);
        pthread_cond_signal(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
    return stop;
}

/* A choice left; the request is done when all have (the answer can be
 * written) and leaves the live list. s->mu before g->mu: a request still
 * submitting its choices holds s->mu, so its count of them is settled. */
static void on_done(uint64_t id, int reason, void *user)
{
    (void)id;
    serve_choice *c = user;
    serve_gen *g = c->g;
    synor_server *s = g->s;
    pthread_mutex_lock(&s->mu);
    pthread_mutex_lock(&g->mu);
    c->done = 1;
    c->reason = reason;
    int all = ++g->ndone == g->n;
    if (all) {
        if (g->prev_live)
            g->prev_live->next_live = g->next_live;
        else if (s->live == g)
            s->live = g->next_live;
        if (g->next_live)
            g->next_live->prev_live = g->prev_live;
        g->prev_live = g->next_live = NULL;
        g->done = 1;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
    pthread_mutex_unlock(&s->mu);
    const char *fr = synor__serve_finish_reason(reason);
    if (!g->background)
        atomic_fetch_add(&s->finished[!strcmp(fr, "stop") ? 0 : !strcmp(fr, "length") ? 1 : 2], 1);
    if (g->background && all) {
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
    synor__serve_gen_unref(g);
}

void synor__serve_cancel_all(synor_server *s)
{
    for (serve_gen *g = s->live; g; g = g->next_live)
        for (int i = 0; i < g->n; i++)
            synor_llm_sched_cancel(s->sched, g->ch[i].id);
    s->kicks++;
    pthread_cond_signal(&s->wake);
}

/* The tokens of the prompt (BOS first), or an answer already queued. */
static int tokenize(synor_server *s, struct MHD_Connection *c, const synor__serve_req *q,
                    int32_t **ids, size_t *n, int *answered)
{
    const synor_tokenizer *tok = synor_llm_tokenizer(s->m);
    const char *prompt = q->prompt;
    size_t len = strlen(prompt);
    int32_t fim[3];
    long need, nsuf = 0;
    *answered = 1;
    if (q->suffix) { /* fill in the middle: BOS PRE prompt SUF suffix MID */
        if (!synor_llm_fim(s->m, fim))
            return synor__serve_error(s, c, 400,
                                      "suffix: this model has no fill-in-the-middle tokens "
                                      "(tokenizer.ggml.fim_pre/fim_suf/fim_mid_token_id)");
        need = synor_tokenizer_encode_fragment(tok, prompt, len, NULL, 0);
        nsuf = synor_tokenizer_encode_fragment(tok, q->suffix, strlen(q->suffix), NULL, 0);
        if (need >= 0 && nsuf >= 0)
            need += nsuf + 3 + (synor_tokenizer_bos(tok) >= 0);
        else
            need = need < 0 ? need : nsuf;
    } else { /* a chat template's markers are special pieces */
        need = q->n_prompt_ids ? (long)q->n_prompt_ids
               : q->special    ? synor_tokenizer_encode_special(tok, prompt, len, 1, NULL, 0)
                               : synor_tokenizer_encode(tok, prompt, len, 1, 0, NULL, 0);
    }
    int vocab = synor_llm_hparams_get(s->m)->vocab_size;
    for (size_t i = 0; i < q->n_prompt_ids; i++)
        if (q->prompt_ids[i] >= vocab)
            return synor__serve_error(s, c, 400,
                                      "prompt[%zu]: token %d is outside the model's vocabulary "
                                      "of %d",
                                      i, q->prompt_ids[i], vocab);
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
    if (q->suffix) {
        int32_t *p = *ids;
        if (synor_tokenizer_bos(tok) >= 0)
            *p++ = synor_tokenizer_bos(tok);
        *p++ = fim[0];
        p += synor_tokenizer_encode_fragment(tok, prompt, len, p, (size_t)(need - 3 - nsuf));
        *p++ = fim[1];
        p += synor_tokenizer_encode_fragment(tok, q->suffix, strlen(q->suffix), p, (size_t)nsuf);
        *p = fim[2];
    } else if (q->n_prompt_ids)
        memcpy(*ids, q->prompt_ids, (size_t)need * sizeof **ids);
    else if (q->special)
        synor_tokenizer_encode_special(tok, prompt, len, 1, *ids, (size_t)need);
    else
        synor_tokenizer_encode(tok, prompt, len, 1, 0, *ids, (size_t)need);
    *n = (size_t)need;
    *answered = 0;
    return MHD_YES;
}

/* A request of q's choices (none submitted yet) with the connection's
 * reference and one per choice; ids: the prompt's n_prompt tokens. */
static serve_gen *gen_new(synor_server *s, const synor__serve_req *q, const int32_t *ids,
                          size_t n_prompt)
{
    int n = q->n > 1 ? (int)q->n : 1, n_answer = n;
    if (q->best_of > n)
        n = (int)q->best_of;
    serve_gen *g = synor__calloc(1, sizeof *g + (size_t)n * sizeof g->ch[0]);
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
    g->refs = 1 + n; /* the connection's and the engine's, one per choice */
    g->n = n;
    g->n_answer = n_answer;
    g->chat = q->chat;
    g->stream = q->stream;
    g->has_lp = q->has_logprobs;
    g->tools = q->tool_call;
    g->tool_form = (q->tool_call == 2 ? TOOL_FORM_TEXT : 0) | (q->tool_list ? TOOL_FORM_LIST : 0);
    g->top_lp = q->top_logprobs < SYNOR__SERVE_LP_TOP ? q->top_logprobs : SYNOR__SERVE_LP_TOP;
    g->created = time(NULL);
    g->n_prompt = n_prompt;
    synor__buf_init(&g->out);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        serve_choice *c = &g->ch[i];
        c->g = g;
        c->index = i;
        synor__buf_init(&c->text);
        synor__buf_init(&c->shown);
        synor__tool_scan_init(&c->scan, g->tool_form);
        /* echo: the prompt as the model reads it, each token's piece */
        int32_t prev = ids[0];
        for (size_t j = 1; q->echo && j < n_prompt; j++) {
            char piece[256];
            synor__buf_append(&c->text, piece,
                              piece_of(synor_llm_tokenizer(s->m), prev, ids[j], piece));
            prev = ids[j];
        }
        failed |= c->text.failed;
        failed |= q->json_object && synor_llm_json_create_schema(s->m, q->schema, &c->json) != 0;
        g->echo_len = c->text.len;
        /* with prompt logprobs, on_prompt_logits walks prev to the last */
        c->prev = q->echo && q->has_logprobs ? ids[0] : ids[n_prompt - 1];
    }
    if (q->return_ids && (g->prompt_ids = synor__malloc(n_prompt * sizeof *ids)) != NULL)
        memcpy(g->prompt_ids, ids, n_prompt * sizeof *ids);
    failed |= q->return_ids && !g->prompt_ids;
    for (int i = 0; i < q->n_stop && !failed; i++) {
        failed = !(g->stop[i] = synor__strdup(q->stop[i]));
        g->n_stop = i + !failed;
    }
    if (failed) {
        g->refs = 1;
        synor__serve_gen_unref(g);
        return NULL;
    }
    return g;
}

/* The exact-match cache holds a whole answer as: the finish reason (one
 * byte), the completion tokens (8 bytes), the text. Only answers that are
 * determined by the request are kept and served: greedy, or seeded. */
char *synor__serve_cache_key(synor_server *s, const synor__serve_req *q, size_t *klen)
{
    if (!s->cache || q->stream || q->has_logprobs || q->n > 1 || q->echo || q->best_of > 1 ||
        q->return_ids || !(q->temperature == 0 || q->has_seed))
        return NULL;
    size_t n = synor_cache_key(NULL, 0, s->model_name, q->prompt, (int)q->max_tokens,
                               (float)q->temperature, (int)q->top_k, (float)q->top_p, q->seed);
    /* then, tagged: each stop sequence ('S', 4 bytes of length, its
     * bytes), the penalties ('P', 'F' and a float's bits) where not 0,
     * a JSON response format ('J', then with a schema 4 bytes of length
     * and its compact text), the logit biases ('L', their count, each
     * token and bias), a prompt of token ids ('T', their count, each), a
     * prompt whose template markers are special pieces ('X'), a suffix
     * ('U', 4 bytes of length, its bytes) */
    float pen[2] = {(float)q->presence_penalty, (float)q->frequency_penalty};
    size_t all = n;
    for (int i = 0; i < q->n_stop; i++)
        all += 5 + strlen(q->stop[i]);
    all += (pen[0] != 0) * 5 + (pen[1] != 0) * 5 + (q->n_bias ? 5 + 8 * (size_t)q->n_bias : 0) +
           (q->json_object != 0) + (q->schema_text ? 4 + strlen(q->schema_text) : 0) +
           (q->n_prompt_ids ? 5 + 4 * q->n_prompt_ids : 0) + (q->special != 0) +
           (q->suffix ? 5 + strlen(q->suffix) : 0);
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
        if (q->json_object)
            k[n++] = 'J';
        if (q->schema_text) {
            uint32_t l = (uint32_t)strlen(q->schema_text);
            memcpy(k + n, &l, 4);
            memcpy(k + n + 4, q->schema_text, l);
            n += 4 + l;
        }
        if (q->n_bias) { /* 'L', the count, each token and its bias */
            uint32_t nb = (uint32_t)q->n_bias;
            k[n] = 'L';
            memcpy(k + n + 1, &nb, 4);
            n += 5;
            for (int i = 0; i < q->n_bias; i++, n += 8) {
                memcpy(k + n, &q->bias_tok[i], 4);
                memcpy(k + n + 4, &q->bias_val[i], 4);
            }
        }
        if (q->n_prompt_ids) {
            uint32_t nt = (uint32_t)q->n_prompt_ids;
            k[n] = 'T';
            memcpy(k + n + 1, &nt, 4);
            memcpy(k + n + 5, q->prompt_ids, 4 * q->n_prompt_ids);
            n += 5 + 4 * q->n_prompt_ids;
        }
        if (q->special)
            k[n++] = 'X';
        if (q->suffix) {
            uint32_t l = (uint32_t)strlen(q->suffix);
            k[n] = 'U';
            memcpy(k + n + 1, &l, 4);
            memcpy(k + n + 5, q->suffix, l);
            n += 5 + l;
        }
    }
    *klen = all;
    return k;
}

char *synor__serve_gen_value(serve_gen *g, size_t *len)
{
    pthread_mutex_lock(&g->mu);
    const serve_choice *c = &g->ch[0]; /* (cached requests have one choice) */
    int keep = g->done && g->n == 1 && !g->echo_len &&
               (c->reason == SYNOR_LLM_DONE_LENGTH || c->reason == SYNOR_LLM_DONE_EOS ||
                (c->reason == SYNOR_LLM_DONE_STOPPED && c->stop_hit));
    size_t n = c->text.len;
    char *v = keep && !c->text.failed ? synor__malloc(9 + n) : NULL;
    if (v) {
        uint64_t gen = c->generated;
        v[0] = (char)c->reason;
        memcpy(v + 1, &gen, 8);
        if (n)
            memcpy(v + 9, c->text.data, n);
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

/* Answers from a cached value, as a generation is answered. */
static int answer_cached(synor_server *s, struct MHD_Connection *c, const synor__serve_req *q,
                         const int32_t *ids, size_t n_prompt, const char *v, size_t len,
                         const char *tier, float similarity)
{
    serve_gen *g = gen_new(s, q, ids, n_prompt);
    if (!g)
        return synor__serve_error(s, c, 500, "out of memory");
    g->refs = 1;
    g->done = 1;
    serve_choice *ch = &g->ch[0];
    ch->done = 1;
    ch->reason = (unsigned char)v[0];
    uint64_t gen;
    memcpy(&gen, v + 1, 8);
    ch->generated = (size_t)gen;
    g->tier = tier;
    g->similarity = similarity;
    synor__buf_append(&ch->text, v + 9, len - 9);
    pthread_mutex_lock(&s->mu);
    uint64_t seq = ++s->next_seq;
    pthread_mutex_unlock(&s->mu);
    snprintf(g->name, sizeof g->name, "%s-%llu", q->chat ? "chatcmpl" : "cmpl",
             (unsigned long long)seq);
    int r = synor__serve_answer_whole(g, c);
    synor__serve_gen_unref(g);
    return r;
}

/* Names g (PREFIX-N) and queues each of its choices with the scheduler
 * (rq their common fields), linked into the live list; each choice's
 * sampler is seeded with the request's seed (without one, a stream of
 * numbers of its own), choice i > 0 with the seed moved by i. 0, or the
 * scheduler's code for the first choice it refused: those before it are
 * cancelled, and the request has only them. */
static int submit_gen(synor_server *s, serve_gen *g, const synor__serve_req *q, const char *prefix,
                      synor_llm_request *rq)
{
    pthread_mutex_lock(&s->mu);
    uint64_t seq = ++s->next_seq;
    snprintf(g->name, sizeof g->name, "%s-%llu", prefix, (unsigned long long)seq);
    uint64_t seed = q->has_seed ? q->seed : synor__serve_now_ns() ^ (seq * 0x9E3779B97F4A7C15ull);
    rq->presence_penalty = (float)q->presence_penalty;
    rq->frequency_penalty = (float)q->frequency_penalty;
    rq->bias_token = q->bias_tok;
    rq->bias_value = q->bias_val;
    rq->n_bias = q->n_bias;
    g->t_submit = synor__serve_now_ns();
    int e = s->stopping ? SYNOR_ESTATE : 0, n = g->n, ok = 0;
    for (; ok < n && !e; ok += !e) {
        synor_sampler_init(&rq->sampler, (float)q->temperature, (int)q->top_k,
                           q->temperature > 0 ? (float)q->top_p : 1.0f,
                           seed + (uint64_t)ok * 0xD1B54A32D192ED03ull);
        rq->user = &g->ch[ok];
        rq->json = g->ch[ok].json;
        e = synor_llm_sched_submit(s->sched, rq, &g->ch[ok].id);
    }
    if (e) { /* choices 0 .. ok - 1 were queued: cancel them */
        pthread_mutex_lock(&g->mu); /* (their on_done waits for s->mu) */
        for (int j = ok; j < n; j++) {
            synor__buf_free(&g->ch[j].text);
            synor_llm_json_destroy(g->ch[j].json);
        }
        g->n = ok;
        g->n_answer = g->n_answer < ok ? g->n_answer : ok;
        g->refs -= n - ok;
        pthread_mutex_unlock(&g->mu);
        for (int j = 0; j < ok; j++)
            synor_llm_sched_cancel(s->sched, g->ch[j].id);
    }
    if (g->n > 0) {
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

/* The response to a request the scheduler refused (e: its code, msg its
 * message). */
static int answer_refused(synor_server *s, struct MHD_Connection *c, int e, const char *msg)
{
    if (e == SYNOR_ESTATE)
        return synor__serve_error(s, c, 503, "the server is shutting down");
    if (e != SYNOR_EBUSY)
        return synor__serve_error(s, c, e == SYNOR_ERANGE || e == SYNOR_EINVAL ? 400 : 500, "%s",
                                  msg);
    char m[256];
    snprintf(m, sizeof m, "overloaded: the queue of %u waiting requests is full; retry later",
             s->o.max_queue);
    struct MHD_Response *rsp = NULL;
    char *j = synor__serve_error_json(503, m);
    if (j)
        rsp = MHD_create_response_from_buffer(strlen(j), j, MHD_RESPMEM_MUST_COPY);
    synor__free(j);
    if (!rsp)
        return MHD_NO;
    MHD_add_response_header(rsp, "Content-Type", "application/json");
    MHD_add_response_header(rsp, "Retry-After", "1");
    synor__serve_count_code(s, 503);
    int r = MHD_queue_response(c, 503, rsp);
    MHD_destroy_response(rsp);
    return r;
}

int synor__serve_generate(synor_server *s, struct MHD_Connection *c, int chat, const char *body,
                          size_t len)
{
    synor__serve_req q;
    if (synor__serve_req_parse_tmpl(body, len, chat, &s->tmpl, &q))
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
    int answered, r = tokenize(s, c, &q, &ids, &n, &answered);
    if (answered) {
        synor__serve_req_free(&q);
        return r;
    }
    size_t klen = 0, pklen = 0;
    char *key = synor__serve_cache_key(s, &q, &klen);
    char *pkey = s->pred && !q.stream && !synor__serve_req_extras(&q)
                     ? synor__serve_pred_key(s, &q, &pklen)
                     : NULL;
    char *v = NULL;
    size_t vlen = 0;
    const char *tier = NULL;
    float sim = -1;
    if (key) {
        int t;
        if (synor_cache_get(s->cache, key, klen, &v, &vlen, &t) == 0 && vlen >= 9) {
            tier = t == SYNOR_CACHE_DISK ? "disk" : "memory";
            if (pkey)
                synor__serve_predicted_hit(s, pkey, pklen);
        } else if (v) {
            free(v);
            v = NULL;
        }
    } else if (pkey) { /* a sample: one generated ahead on a prediction? */
        if (synor__serve_predicted_take(s, pkey, pklen, &v, &vlen) == 0) {
            tier = "predicted";
            char *w = malloc(vlen ? vlen : 1); /* (the caches' values are malloc's) */
            if (w)
                memcpy(w, v, vlen);
            synor__free(v);
            v = w;
            tier = w ? tier : NULL;
        }
    }
    synor__free(pkey);
    /* the semantic cache: whole answers (not streamed; no stop sequences,
     * penalties, logprobs, echo or choices) to similar prompts */
    float *emb = NULL;
    if (!v && s->sem && !q.stream && !synor__serve_req_extras(&q)) {
        const synor_llm_hparams *h = synor_llm_hparams_get(s->m);
        emb = synor__malloc((size_t)h->dim * sizeof *emb);
        if (emb && synor__serve_embed(s, q.prompt, emb) != 0) {
            synor__free(emb); /* the engine said why on standard error */
            emb = NULL;
        }
        if (emb) {
            atomic_fetch_add(&s->sem_lookups, 1);
            if (synor_semcache_lookup(s->sem, emb, &sim, &v, &vlen) == 0 && vlen >= 9) {
                atomic_fetch_add(&s->sem_hits, 1);
                tier = "semantic";
            } else if (v) {
                free(v);
                v = NULL;
            }
        }
    }
    if (v) {
        r = answer_cached(s, c, &q, ids, n, v, vlen, tier, sim);
        free(v);
        synor__serve_predict_after(s, &q);
        synor__free(emb);
        synor__free(key);
        synor__free(ids);
        synor__serve_req_free(&q);
        return r;
    }
    synor_llm_request rq = {.prompt = ids,
                            .n_prompt = n,
                            .on_admit = on_admit,
                            .on_token = on_token,
                            .on_done = on_done};
    if (q.has_logprobs || q.best_of > q.n)
        rq.on_logits = on_logits;
    if (q.has_logprobs && q.echo)
        rq.on_prompt_logits = on_prompt_logits;
    rq.max_new =
        (int)(q.max_tokens < (long)(s->ctx_len - n) ? q.max_tokens : (long)(s->ctx_len - n));
    serve_gen *g = gen_new(s, &q, ids, n);
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
        synor__serve_gen_unref(g); /* the connection's: choices queued hold theirs */
        return answer_refused(s, c, e, msg);
    }
    atomic_fetch_add(&s->requests, 1);
    atomic_fetch_add(&s->prompt_tokens, n * (size_t)g->n);
    if (!stream) {
        r = synor__serve_answer_whole(g, c);
        if (key || emb)
            cache_store(s, key, klen, emb, g);
        synor__serve_predict_after(s, &q); /* the user has the answer: what next? */
        synor__serve_req_free(&q);
        synor__free(emb);
        synor__free(key);
        synor__serve_gen_unref(g);
        return r;
    }
    synor__free(key); /* streams are not cached */
    return synor__serve_answer_stream(g, c);
}

int synor__serve_generate_predicted(synor_server *s, const synor__serve_req *q, const char *key,
                                    size_t klen, char *ekey, size_t elen)
{
    const synor_tokenizer *tok = synor_llm_tokenizer(s->m);
    size_t len = strlen(q->prompt);
    long n = q->special ? synor_tokenizer_encode_special(tok, q->prompt, len, 1, NULL, 0)
                        : synor_tokenizer_encode(tok, q->prompt, len, 1, 0, NULL, 0);
    if (n < 1 || n >= (long)s->ctx_len)
        return SYNOR_ERANGE;
    int32_t *ids = synor__malloc((size_t)n * sizeof *ids);
    char *k = synor__malloc(klen);
    if (ids && q->special)
        synor_tokenizer_encode_special(tok, q->prompt, len, 1, ids, (size_t)n);
    else if (ids)
        synor_tokenizer_encode(tok, q->prompt, len, 1, 0, ids, (size_t)n);
    serve_gen *g = ids && k ? gen_new(s, q, ids, (size_t)n) : NULL;
    if (!g) {
        synor__free(ids);
        synor__free(k);
        return SYNOR_ENOMEM;
    }
    memcpy(k, key, klen);
    g->refs = 1; /* the engine's only */
    g->background = 1;
    g->bg_key = k;
    g->bg_klen = klen;
    g->bg_ekey = ekey;
    g->bg_elen = elen;
    synor_llm_request rq = {
        .prompt = ids, .n_prompt = (size_t)n, .on_token = on_token, .on_done = on_done};
    rq.max_new = (int)(q->max_tokens < (long)s->ctx_len - n ? q->max_tokens : (long)s->ctx_len - n);
    int e = submit_gen(s, g, q, "predicted", &rq);
    synor__free(ids);
    if (e) {
        g->bg_ekey = NULL; /* the caller keeps it on failure */
        g->refs = 1;
        synor__serve_gen_unref(g);
    }
    return e;
}
