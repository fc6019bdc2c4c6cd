/* semantic.c - synor serve's semantic cache and request-level speculation
 * (issue 12 points 6 and 7; seed 003 §2.1 and §2.2).
 *
 * Embeddings. A prompt's embedding is a forward pass of the model
 * (synor_llm_embed), so it runs where the engine's passes run: on the
 * engine thread, between two steps of the scheduler, on a context of its
 * own with one sequence. A connection thread queues the text and sleeps
 * until the engine thread has computed it; so the runtime only ever sees
 * one thread submitting.
 *
 * Speculation. Each whole-answer (not streamed) request naming a "user"
 * is observed by the predictor as a string that encodes everything its
 * answer depends on (the sampling parameters, then the prompt). After it,
 * the predictor's likely next requests of that user (probability at least
 * 1/4, up to opts.predict of them) are decoded back into requests and
 * generated while no request waits:
 *   - a determined request (greedy, or seeded) unless the exact-match
 *     cache has its answer: the answer goes into that cache, and a later
 *     hit on it counts as a prediction hit;
 *   - a sampled request without a seed: its answer is a fresh sample, kept
 *     here and served once, to the first such request (never twice, so
 *     every answer is still a sample of its own).
 * At most PREDICTED_MAX predictions are kept; when full, no new ones start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/server.h"

#define PREDICT_MIN_PROB 0.25f
#define PREDICTED_MAX 1024 /* keys remembered for the hit count */

int synor__serve_embed(synor_server *s, const char *text, float *out)
{
    serve_embed e = {.text = text, .out = out};
    pthread_mutex_lock(&s->mu);
    if (s->quit) {
        pthread_mutex_unlock(&s->mu);
        return synor__error(SYNOR_ESTATE, "the server is shutting down");
    }
    serve_embed **tail = &s->embeds;
    while (*tail)
        tail = &(*tail)->next;
    *tail = &e;
    s->kicks++;
    pthread_cond_signal(&s->wake);
    while (!e.done)
        pthread_cond_wait(&s->embedded, &s->mu);
    pthread_mutex_unlock(&s->mu);
    return e.rc;
}

void synor__serve_embed_run(synor_server *s)
{
    pthread_mutex_lock(&s->mu);
    serve_embed *list = s->embeds;
    s->embeds = NULL;
    pthread_mutex_unlock(&s->mu);
    if (!list)
        return;
    for (serve_embed *e = list; e; e = e->next) {
        e->rc = synor_llm_embed(s->ectx, 0, e->text, e->out);
        if (e->rc)
            fprintf(stderr, "synor serve: an embedding failed: %s\n", synor_errmsg());
    }
    pthread_mutex_lock(&s->mu);
    for (serve_embed *e = list, *next; e; e = next) {
        next = e->next; /* e lives on its waiter's stack: read next first */
        e->done = 1;
    }
    pthread_cond_broadcast(&s->embedded);
    pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------ predicting */

/* The predictor's string for a request: its sampling parameters, then the
 * prompt, separated by the unit separator (the prompt last, so it may
 * hold anything). */
static char *encode(const synor__serve_req *q)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b, "%ld\x1f%a\x1f%ld\x1f%a\x1f%d\x1f%llu\x1f%d\x1f", q->max_tokens,
                      q->temperature, q->top_k, q->top_p, q->has_seed,
                      (unsigned long long)q->seed, q->special);
    synor__buf_puts(&b, q->prompt);
    if (b.failed) {
        synor__buf_free(&b);
        return NULL;
    }
    return synor__buf_take(&b);
}

static int decode(const char *str, synor__serve_req *q)
{
    memset(q, 0, sizeof *q);
    char *end;
    q->max_tokens = strtol(str, &end, 10);
    if (*end != '\x1f')
        return -1;
    q->temperature = strtod(end + 1, &end);
    if (*end != '\x1f')
        return -1;
    q->top_k = strtol(end + 1, &end, 10);
    if (*end != '\x1f')
        return -1;
    q->top_p = strtod(end + 1, &end);
    if (*end != '\x1f')
        return -1;
    q->has_seed = (int)strtol(end + 1, &end, 10);
    if (*end != '\x1f')
        return -1;
    q->seed = strtoull(end + 1, &end, 10);
    if (*end != '\x1f')
        return -1;
    q->special = (int)strtol(end + 1, &end, 10); /* (a chat template's markers) */
    if (*end != '\x1f')
        return -1;
    q->prompt = synor__strdup(end + 1);
    return q->prompt ? 0 : -1;
}

static int determined(const synor__serve_req *q) { return q->temperature == 0 || q->has_seed; }

char *synor__serve_pred_key(synor_server *s, const synor__serve_req *q, size_t *klen)
{
    uint64_t seed = q->has_seed ? q->seed : 0;
    size_t n = synor_cache_key(NULL, 0, s->model_name, q->prompt, (int)q->max_tokens,
                               (float)q->temperature, (int)q->top_k, (float)q->top_p, seed);
    char *k = synor__malloc(n + 1);
    if (!k)
        return NULL;
    synor_cache_key(k, n, s->model_name, q->prompt, (int)q->max_tokens, (float)q->temperature,
                    (int)q->top_k, (float)q->top_p, seed);
    k[n] = determined(q) ? 'd' : 's'; /* a seeded request never takes a sample */
    *klen = n + 1;
    return k;
}

static serve_predicted *find_predicted(synor_server *s, const char *key, size_t klen,
                                       serve_predicted ***link)
{
    for (serve_predicted **l = &s->predicted; *l; l = &(*l)->next)
        if ((*l)->klen == klen && !memcmp((*l)->key, key, klen)) {
            if (link)
                *link = l;
            return *l;
        }
    return NULL;
}

/* Forgets a prediction (mu held). */
static void forget(synor_server *s, serve_predicted **link)
{
    serve_predicted *x = *link;
    *link = x->next;
    s->n_predicted--;
    synor__free(x->key);
    synor__free(x->val);
    synor__free(x);
}

void synor__serve_predicted_hit(synor_server *s, const char *key, size_t klen)
{
    pthread_mutex_lock(&s->mu);
    serve_predicted **link = NULL, *p = find_predicted(s, key, klen, &link);
    if (p && p->ready) {
        atomic_fetch_add(&s->pred_hits, 1);
        forget(s, link);
    }
    pthread_mutex_unlock(&s->mu);
}

int synor__serve_predicted_take(synor_server *s, const char *key, size_t klen, char **val,
                                size_t *len)
{
    pthread_mutex_lock(&s->mu);
    serve_predicted **link = NULL, *p = find_predicted(s, key, klen, &link);
    int found = p && p->ready && p->val;
    if (found) {
        *val = p->val;
        *len = p->vlen;
        p->val = NULL;
        atomic_fetch_add(&s->pred_hits, 1);
        forget(s, link);
    }
    pthread_mutex_unlock(&s->mu);
    return found ? 0 : SYNOR_ENOENT;
}

void synor__serve_predicted_ready(synor_server *s, const char *key, size_t klen, char *val,
                                  size_t vlen, int stored)
{
    int ready = stored || val;
    pthread_mutex_lock(&s->mu);
    serve_predicted **link = NULL, *p = find_predicted(s, key, klen, &link);
    if (p && ready) {
        p->ready = 1;
        p->val = val;
        p->vlen = vlen;
        val = NULL;
    } else if (p) {
        forget(s, link);
    }
    pthread_mutex_unlock(&s->mu);
    if (ready)
        atomic_fetch_add(&s->pred_ready, 1);
    synor__free(val);
}

/* Starts one predicted request unless its answer is known or coming. */
static void start_one(synor_server *s, const char *str)
{
    synor__serve_req q;
    if (decode(str, &q)) {
        synor__serve_req_free(&q);
        return;
    }
    size_t klen = 0, elen = 0;
    char *key = synor__serve_pred_key(s, &q, &klen);
    char *ekey = determined(&q) ? synor__serve_cache_key(s, &q, &elen) : NULL;
    int skip = !key || (determined(&q) && (!ekey || synor_cache_has(s->cache, ekey, elen)));
    pthread_mutex_lock(&s->mu);
    skip = skip || find_predicted(s, key, klen, NULL) || s->n_predicted >= PREDICTED_MAX;
    serve_predicted *p = skip ? NULL : synor__calloc(1, sizeof *p);
    if (p) {
        p->key = key;
        p->klen = klen;
        p->next = s->predicted;
        s->predicted = p;
        s->n_predicted++;
    }
    pthread_mutex_unlock(&s->mu);
    if (p && synor__serve_generate_predicted(s, &q, p->key, klen, ekey, elen) == 0) {
        atomic_fetch_add(&s->pred_started, 1);
        ekey = NULL; /* taken */
    } else if (p) { /* not started */
        pthread_mutex_lock(&s->mu);
        serve_predicted **link = NULL;
        if (find_predicted(s, key, klen, &link))
            forget(s, link);
        pthread_mutex_unlock(&s->mu);
    } else {
        synor__free(key);
    }
    synor__free(ekey);
    synor__serve_req_free(&q);
}

void synor__serve_predict_after(synor_server *s, const synor__serve_req *q)
{
    if (!s->pred || !q->user || q->stream || synor__serve_req_extras(q))
        return;
    char *str = encode(q);
    int e = str ? synor_predictor_observe(s->pred, q->user, str) : SYNOR_ENOMEM;
    synor__free(str);
    if (e)
        return;
    const char *reqs[16];
    float probs[16];
    size_t want = s->o.predict < 16 ? s->o.predict : 16;
    int n = synor_predictor_predict(s->pred, q->user, want, reqs, probs);
    for (int i = 0; i < n; i++) {
        if (probs[i] < PREDICT_MIN_PROB)
            break;
        synor_llm_sched_stats st;
        synor_llm_sched_stats_get(s->sched, &st);
        if (st.waiting > 0 || st.running >= s->o.max_seqs) /* only while idle */
            break;
        start_one(s, reqs[i]);
    }
}

void synor__serve_semantic_free(synor_server *s)
{
    while (s->predicted)
        forget(s, &s->predicted);
    synor_predictor_destroy(s->pred);
    synor_semcache_destroy(s->sem);
    synor_llm_ctx_destroy(s->ectx);
    s->pred = NULL;
    s->sem = NULL;
    s->ectx = NULL;
}
