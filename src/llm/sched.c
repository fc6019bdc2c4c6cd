/* sched.c - continuous batching (Orca's iteration-level scheduling) with
 * chunked prefill and recompute preemption (vLLM's) over one context.
 *
 * A request owns its tokens: the prompt, then each token it generates.
 * `fed` counts those already in its sequence's KV cache; a step feeds the
 * next ones - one for a decoding request (its last sampled token), up to
 * prefill_chunk for a prompt - and samples a token from the logits of a
 * request's last row when that row is its last token. Decoding requests
 * are placed first in the step, so a long prompt cannot delay them by more
 * than its chunk.
 *
 * With a draft model (opts.draft), when every running request is decoding
 * and they are few (at most the draft context's sequences),
 * the step is a speculative round (sched_spec.c) instead: the draft, each of
 * whose sequences holds a prefix of one request's tokens (`dreq`, `dfed`;
 * a request keeps its draft sequence while it runs), proposes for all of them in lockstep
 * batches; the target checks every request's k + 1 rows in one batch; the
 * tokens are those plain steps give, as the batch invariance of the
 * engine's rows makes every row's logits those of a plain step. A sampled
 * request's proposals are drawn by a copy of its sampler from the draft's
 * logits, proposal j with the draw that the request's token j will take
 * (the copy runs ahead of the sampler by the round's tokens), and the check
 * draws each token from the target's row with the sampler itself: a
 * proposal is accepted when it is the token that draw gives, so the
 * sampler spends one draw per token emitted, as in plain steps, and a
 * seeded answer is the same whether its steps were rounds or not. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "llm/sched_internal.h"

/* The scheduler's memory (NULL members are fine), s included. */
static void free_sched(synor_llm_sched *s)
{
    synor__free(s->run);
    synor__free(s->admitted);
    synor__free(s->btok);
    synor__free(s->bseq);
    synor__free(s->bwant);
    synor__free(s->brow);
    synor__free(s->bprow);
    synor__free(s->dreq);
    synor__free(s->dfed);
    synor__free(s->dseq);
    synor__free(s->dtok);
    synor__free(s->props);
    synor__free(s->kk);
    synor__free(s->slot);
    synor__free(s->pen);
    synor__free(s->cnt);
    synor__free(s);
}

int synor_llm_sched_create(synor_llm_ctx *c, const synor_llm_sched_opts *opts,
                           synor_llm_sched **out)
{
    if (!c || !out)
        return synor__error(SYNOR_EINVAL, "synor_llm_sched_create: NULL argument");
    synor_llm_sched *s = synor__calloc(1, sizeof *s);
    if (!s)
        return SYNOR_ENOMEM;
    s->c = c;
    s->o = (synor_llm_sched_opts){
        .step_tokens = c->max_batch, .prefill_chunk = 64, .max_queue = 256};
    if (opts) {
        if (opts->step_tokens && opts->step_tokens < c->max_batch)
            s->o.step_tokens = opts->step_tokens;
        if (opts->prefill_chunk)
            s->o.prefill_chunk = opts->prefill_chunk;
        if (opts->max_queue)
            s->o.max_queue = opts->max_queue;
    }
    if (s->o.step_tokens < c->max_seqs)
        s->o.step_tokens = c->max_seqs < c->max_batch ? c->max_seqs : c->max_batch;
    if (opts && opts->draft) {
        synor_llm_ctx *d = opts->draft;
        unsigned k = opts->spec_k ? opts->spec_k : 4;
        if (d->m->cfg.vocab_size != c->m->cfg.vocab_size ||
            synor_tokenizer_size(d->m->tok) != synor_tokenizer_size(c->m->tok)) {
            synor__free(s);
            return synor__error(SYNOR_EINVAL,
                                "synor_llm_sched_create: the draft's vocabulary (%d) is not "
                                "the target's (%d)",
                                d->m->cfg.vocab_size, c->m->cfg.vocab_size);
        }
        if (k > 32 || k + 1 > c->max_batch) {
            synor__free(s);
            return synor__error(SYNOR_EINVAL,
                                "synor_llm_sched_create: spec_k %u (1..32, and at most the "
                                "target's batch - 1)",
                                k);
        }
        s->draft = d;
        s->o.spec_k = k;
        s->dmax = d->max_seqs < c->max_seqs ? d->max_seqs : c->max_seqs;
        s->dmax = s->dmax < 32 ? s->dmax : 32; /* spec_round's arrays */
        s->dreq = synor__calloc(s->dmax, sizeof *s->dreq);
        s->dfed = synor__calloc(s->dmax, sizeof *s->dfed);
        s->dseq = synor__calloc(d->max_batch, sizeof *s->dseq);
        s->dtok = synor__calloc(s->dmax, sizeof *s->dtok);
        s->props = synor__calloc(s->dmax, sizeof *s->props);
        s->kk = synor__calloc(s->dmax, sizeof *s->kk);
        s->slot = synor__calloc(s->dmax, sizeof *s->slot);
    }
    s->pen = synor__malloc((size_t)c->m->cfg.vocab_size * sizeof *s->pen);
    s->cnt = synor__calloc((size_t)c->m->cfg.vocab_size, sizeof *s->cnt);
    s->run = synor__calloc(c->max_seqs, sizeof *s->run);
    s->admitted = synor__calloc(c->max_seqs, sizeof *s->admitted);
    s->btok = synor__malloc(c->max_batch * sizeof *s->btok);
    s->bseq = synor__malloc(c->max_batch * sizeof *s->bseq);
    s->bwant = synor__malloc(c->max_batch);
    s->brow = synor__malloc(c->max_batch * sizeof *s->brow);
    s->bprow = synor__malloc(c->max_batch * sizeof *s->bprow);
    if (!s->run || !s->admitted || !s->btok || !s->bseq || !s->bwant || !s->brow || !s->bprow ||
        !s->pen ||
        !s->cnt ||
        (s->draft &&
         (!s->dreq || !s->dfed || !s->dseq || !s->dtok || !s->props || !s->kk || !s->slot)) ||
        pthread_mutex_init(&s->mu, NULL) != 0) {
        free_sched(s);
        return synor__error(SYNOR_ENOMEM, "synor_llm_sched_create: out of memory");
    }
    s->next_id = 1;
    *out = s;
    return 0;
}

static void req_free(sreq *q)
{
    synor__free(q->toks);
    synor__free(q->bias_tok);
    synor__free(q->bias_val);
    synor__free(q);
}

/* Publishes q's positions computed since the last call for prefix reuse:
 * its prompt's, and its answer's where those are the bits a prompt's rows
 * would get (synor__llm_pool_answers), so that a conversation's next turn,
 * whose prompt holds this answer, computes only what follows it. */
static void publish(synor_llm_sched *s, sreq *q)
{
    size_t lim = synor__llm_pool_answers(s->c) ? q->ntok : q->r.n_prompt;
    size_t upto = q->fed < lim ? q->fed : lim;
    if (upto / SYNOR_LLM_KV_BLOCK > q->published / SYNOR_LLM_KV_BLOCK)
        synor_llm_seq_publish(s->c, (unsigned)q->seq, q->toks, upto);
    if (upto > q->published)
        q->published = upto;
}

/* Takes q out of the running set (its sequence's cache is dropped, its
 * published blocks staying in the prefix cache, idle). */
static void unrun(synor_llm_sched *s, sreq *q)
{
    publish(s, q);
    synor_llm_seq_reset(s->c, (unsigned)q->seq);
    pthread_mutex_lock(&s->mu);
    s->run[q->seq] = NULL;
    unsigned j = 0;
    for (unsigned i = 0; i < s->nrunning; i++)
        if (s->admitted[i] != q)
            s->admitted[j++] = s->admitted[i];
    s->nrunning = j;
    q->seq = -1;
    pthread_mutex_unlock(&s->mu);
}

static void finish(synor_llm_sched *s, sreq *q, int reason)
{
    if (q->seq >= 0)
        unrun(s, q);
    if (q->r.on_done)
        q->r.on_done(q->id, reason, q->r.user);
    pthread_mutex_lock(&s->mu);
    s->st.finished++;
    pthread_mutex_unlock(&s->mu);
    req_free(q);
}

void synor_llm_sched_destroy(synor_llm_sched *s)
{
    if (!s)
        return;
    while (s->nrunning)
        finish(s, s->admitted[s->nrunning - 1], SYNOR_LLM_DONE_CANCELLED);
    while (s->wait_head) {
        sreq *q = s->wait_head;
        s->wait_head = q->next;
        finish(s, q, SYNOR_LLM_DONE_CANCELLED);
    }
    pthread_mutex_destroy(&s->mu);
    free_sched(s);
}

int synor_llm_sched_submit(synor_llm_sched *s, const synor_llm_request *r, uint64_t *id)
{
    const synor_llm_hparams *h = &s->c->m->cfg;
    if (!r || !r->prompt || r->n_prompt == 0 || r->max_new < 1)
        return synor__error(SYNOR_EINVAL, "synor_llm_sched_submit: a request needs a prompt of "
                                          "at least one token and max_new >= 1");
    if (r->n_prompt >= (size_t)h->seq_len)
        return synor__error(SYNOR_ERANGE, "the prompt is %zu tokens; the model's context is %d",
                            r->n_prompt, h->seq_len);
    for (size_t i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= h->vocab_size)
            return synor__error(SYNOR_EINVAL, "prompt token %zu is %d, outside the vocabulary "
                                              "of %d",
                                i, r->prompt[i], h->vocab_size);
    if (!(r->presence_penalty >= -2 && r->presence_penalty <= 2 && r->frequency_penalty >= -2 &&
          r->frequency_penalty <= 2))
        return synor__error(SYNOR_EINVAL, "synor_llm_sched_submit: penalties %g and %g (each "
                                          "-2..2)",
                            (double)r->presence_penalty, (double)r->frequency_penalty);
    if (r->n_bias < 0 || r->n_bias > SYNOR_LLM_MAX_BIAS ||
        (r->n_bias && (!r->bias_token || !r->bias_value)))
        return synor__error(SYNOR_EINVAL, "synor_llm_sched_submit: %d logit biases (0..%d)",
                            r->n_bias, SYNOR_LLM_MAX_BIAS);
    for (int i = 0; i < r->n_bias; i++) {
        if (r->bias_token[i] < 0 || r->bias_token[i] >= h->vocab_size)
            return synor__error(SYNOR_EINVAL,
                                "logit_bias: token %d is outside the vocabulary of %d",
                                r->bias_token[i], h->vocab_size);
        if (!(r->bias_value[i] >= -100 && r->bias_value[i] <= 100))
            return synor__error(SYNOR_EINVAL,
                                "logit_bias: the bias of token %d is %g (-100..100)",
                                r->bias_token[i], (double)r->bias_value[i]);
    }
    sreq *q = synor__calloc(1, sizeof *q);
    size_t cap = r->n_prompt + (size_t)r->max_new + 1;
    if (cap > (size_t)h->seq_len + 1)
        cap = (size_t)h->seq_len + 1;
    if (q)
        q->toks = synor__malloc(cap * sizeof *q->toks);
    if (q && r->n_bias) {
        q->bias_tok = synor__malloc((size_t)r->n_bias * sizeof *q->bias_tok);
        q->bias_val = synor__malloc((size_t)r->n_bias * sizeof *q->bias_val);
    }
    if (!q || !q->toks || (r->n_bias && (!q->bias_tok || !q->bias_val))) {
        if (q)
            req_free(q);
        return synor__error(SYNOR_ENOMEM, "synor_llm_sched_submit: out of memory");
    }
    q->r = *r;
    q->r.prompt = NULL;
    if (r->n_bias) {
        memcpy(q->bias_tok, r->bias_token, (size_t)r->n_bias * sizeof *q->bias_tok);
        memcpy(q->bias_val, r->bias_value, (size_t)r->n_bias * sizeof *q->bias_val);
    }
    q->r.bias_token = q->bias_tok;
    q->r.bias_value = q->bias_val;
    memcpy(q->toks, r->prompt, r->n_prompt * sizeof *q->toks);
    q->ntok = r->n_prompt;
    q->cap = cap;
    q->seq = -1;
    pthread_mutex_lock(&s->mu);
    if (s->nwaiting >= s->o.max_queue) {
        pthread_mutex_unlock(&s->mu);
        req_free(q);
        return synor__error(SYNOR_EBUSY, "overloaded: the queue of waiting requests is full "
                                         "(%u)",
                            s->o.max_queue);
    }
    q->id = s->next_id++;
    if (s->wait_tail)
        s->wait_tail->next = q;
    else
        s->wait_head = q;
    s->wait_tail = q;
    s->nwaiting++;
    s->st.submitted++;
    pthread_mutex_unlock(&s->mu);
    if (id)
        *id = q->id;
    return 0;
}

int synor_llm_sched_cancel(synor_llm_sched *s, uint64_t id)
{
    int found = 0;
    pthread_mutex_lock(&s->mu);
    for (sreq *q = s->wait_head; q && !found; q = q->next)
        if (q->id == id)
            found = q->cancelled = 1;
    for (unsigned i = 0; i < s->c->max_seqs && !found; i++)
        if (s->run[i] && s->run[i]->id == id)
            found = s->run[i]->cancelled = 1;
    pthread_mutex_unlock(&s->mu);
    return found ? 0 : synor__error(SYNOR_ENOENT, "request %llu is not queued or running",
                                    (unsigned long long)id);
}

/* Prefix caching: whether q's tokens begin with a whole unit of reuse of
 * the prompt of a running request that has not computed it yet (q then
 * waits for it: n choices of one prompt, or requests with the same long
 * system prompt, compute it once). */
static int shares_pending_prompt(const synor_llm_sched *s, const sreq *q)
{
    size_t unit = synor__llm_pool_unit(s->c);
    if (!unit || q->r.on_prompt_logits || q->ntok <= unit)
        return 0;
    for (unsigned i = 0; i < s->nrunning; i++) {
        const sreq *r = s->admitted[i];
        size_t n = r->r.n_prompt < q->ntok - 1 ? r->r.n_prompt : q->ntok - 1, l = 0;
        while (l < n && r->toks[l] == q->toks[l])
            l++;
        if (l / unit * unit > r->published)
            return 1;
    }
    return 0;
}

/* Waiting requests take free sequences, first come first served; cancelled
 * ones leave. */
static void admit(synor_llm_sched *s)
{
    sreq *gone = NULL;
    /* KV blocks not yet promised: a request is admitted only when its
     * tokens fit in them (vLLM's admission rule), so a full pool queues new
     * requests instead of preempting running ones; with nothing running the
     * first one is admitted anyway (and fails alone if it cannot fit). A
     * request that takes published blocks (prefix caching) needs only the
     * others: it takes them first, and gives them back if it must wait. */
    long promised = 0;
    int blocked = 0; /* first come, first served: none overtakes the head */
    pthread_mutex_lock(&s->mu);
    unsigned was = s->nrunning;
    sreq **pp = &s->wait_head, *prev = NULL;
    while (*pp) {
        sreq *q = *pp;
        int seq = -1, reused = 0;
        long need = (long)((q->ntok + SYNOR_LLM_KV_BLOCK) / SYNOR_LLM_KV_BLOCK);
        if (!q->cancelled && !blocked && s->nrunning < s->c->max_seqs &&
            !shares_pending_prompt(s, q))
            for (unsigned i = 0; i < s->c->max_seqs && seq < 0; i++)
                if (!s->run[i])
                    seq = (int)i;
        if (seq >= 0 && !q->r.on_prompt_logits) /* (its prompt's rows: computed, not reused) */
            reused = synor_llm_seq_reuse(s->c, (unsigned)seq, q->toks, q->ntok);
        reused = reused > 0 ? reused : 0;
        need -= reused / SYNOR_LLM_KV_BLOCK;
        if (seq >= 0 && need > (long)synor__llm_pool_avail(s->c) - promised && s->nrunning) {
            synor_llm_seq_reset(s->c, (unsigned)seq); /* the blocks it took go back */
            seq = -1;
        }
        if (!q->cancelled && seq < 0) {
            blocked = 1;
            prev = q;
            pp = &q->next;
            continue;
        }
        *pp = q->next;
        if (s->wait_tail == q)
            s->wait_tail = prev;
        s->nwaiting--;
        if (q->cancelled) {
            q->next = gone;
            gone = q;
            continue;
        }
        promised += need;
        q->seq = seq;
        q->fed = (size_t)reused;
        q->published = q->fed;
        s->st.prompt_reused += q->fed;
        s->run[seq] = q;
        s->admitted[s->nrunning++] = q;
    }
    pthread_mutex_unlock(&s->mu);
    for (unsigned i = was; i < s->nrunning; i++) { /* (only this thread changes admitted) */
        const sreq *q = s->admitted[i];
        if (q->r.on_admit)
            q->r.on_admit(q->id, q->fed, q->r.user);
    }
    while (gone) {
        sreq *q = gone;
        gone = q->next;
        finish(s, q, SYNOR_LLM_DONE_CANCELLED);
    }
}

/* The newest running request goes back to the front of the queue, its
 * cache dropped: it will recompute its tokens. */
static void preempt(synor_llm_sched *s)
{
    sreq *q = s->admitted[s->nrunning - 1];
    unrun(s, q);
    q->fed = 0;
    pthread_mutex_lock(&s->mu);
    q->next = s->wait_head;
    s->wait_head = q;
    if (!s->wait_tail)
        s->wait_tail = q;
    s->nwaiting++;
    s->st.preempted++;
    pthread_mutex_unlock(&s->mu);
}

/* Fills the step's rows: decoding requests first, then prompt chunks. */
static size_t build(synor_llm_sched *s)
{
    size_t n = 0, m = s->c->k->gemm_block > 0 ? (size_t)s->c->k->gemm_block : 0;
    s->bprompt = 0;
    for (int pass = 0; pass < 2; pass++)
        for (unsigned i = 0; i < s->nrunning && n < s->o.step_tokens; i++) {
            sreq *q = s->admitted[i];
            size_t left = q->ntok - q->fed;
            if ((pass == 0) != (left == 1) || left == 0)
                continue;
            size_t k = left < s->o.prefill_chunk ? left : s->o.prefill_chunk;
            if (k > s->o.step_tokens - n)
                k = s->o.step_tokens - n;
            /* A chunk that stops inside the prompt stops at a multiple of
             * the SGEMM blocks' rows where it can (batch.c): the prompt's
             * rows then take generate's paths, whatever the load. */
            if (m && k < left && (q->fed + k) % m && (q->fed + k) / m * m > q->fed)
                k = (q->fed + k) / m * m - q->fed;
            for (size_t j = 0; j < k; j++, n++) {
                s->btok[n] = q->toks[q->fed + j];
                s->bseq[n] = (unsigned)q->seq;
                s->bwant[n] = q->fed + j + 1 == q->ntok;
                s->brow[n] = s->bwant[n] ? q : NULL;
                /* a prompt row whose prediction of the next prompt token
                 * has not been reported yet */
                s->bprow[n] = q->r.on_prompt_logits && q->fed + j + 1 < q->r.n_prompt &&
                                      q->fed + j + 1 > q->scored
                                  ? q
                                  : NULL;
                s->bwant[n] |= s->bprow[n] != NULL;
                s->bprompt += q->fed + j < q->r.n_prompt;
            }
        }
    return n;
}

uint64_t synor__sched_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int synor__sched_emit(synor_llm_sched *s, sreq *q, int32_t t, const float *row)
{
    int reason = -1;
    if (t == synor_tokenizer_eos(s->c->m->tok)) {
        reason = SYNOR_LLM_DONE_EOS;
    } else {
        q->generated++;
        q->toks[q->ntok++] = t;
        if (q->r.json)
            synor_llm_json_accept(q->r.json, t); /* (drawn from its mask) */
        if (q->r.on_logits)
            q->r.on_logits(q->id, t, row, q->r.user);
        if (q->r.on_token && q->r.on_token(q->id, t, q->r.user))
            reason = SYNOR_LLM_DONE_STOPPED;
        else if (q->generated >= q->r.max_new)
            reason = SYNOR_LLM_DONE_LENGTH;
        else if (q->ntok >= (size_t)s->c->m->cfg.seq_len)
            reason = SYNOR_LLM_DONE_CONTEXT;
    }
    if (reason >= 0)
        finish(s, q, reason);
    return reason >= 0;
}

/* Row l of q's next token after n_extra tokens more than it has
 * generated (a round's proposals so far), with q's penalties (counts over
 * its generated tokens and the extra ones) and then its logit biases: in
 * s->pen, or l itself without either. */
const float *synor__sched_penalized(synor_llm_sched *s, const sreq *q, const float *l,
                                    const int32_t *extra, int n_extra)
{
    float pp = q->r.presence_penalty, fp = q->r.frequency_penalty;
    if (pp == 0 && fp == 0 && !q->r.n_bias && !q->r.json)
        return l;
    memcpy(s->pen, l, (size_t)s->c->m->cfg.vocab_size * sizeof *l);
    const int32_t *gen = q->toks + q->r.n_prompt;
    size_t ng = q->ntok - q->r.n_prompt;
    for (size_t i = 0; i < ng; i++)
        s->cnt[gen[i]]++;
    for (int i = 0; i < n_extra; i++)
        s->cnt[extra[i]]++;
    for (size_t i = 0; i < ng + (size_t)n_extra; i++) {
        int32_t t = i < ng ? gen[i] : extra[i - ng];
        if (s->cnt[t]) { /* once per token: c * fp + pp, then its count cleared */
            float d = (float)s->cnt[t] * fp;
            d += pp;
            s->pen[t] -= d;
            s->cnt[t] = 0;
        }
    }
    for (int i = 0; i < q->r.n_bias; i++)
        s->pen[q->bias_tok[i]] += q->bias_val[i];
    if (q->r.json)
        synor_llm_json_mask(q->r.json, s->pen);
    return s->pen;
}

static void advance(synor_llm_sched *s, size_t n)
{
    const synor_llm_hparams *h = &s->c->m->cfg;
    for (size_t i = 0; i < n; i++)
        s->run[s->bseq[i]]->fed++;
    /* blocks now whole in the cache: others may reuse them */
    for (unsigned i = 0; i < s->nrunning; i++)
        publish(s, s->admitted[i]);
    uint64_t gen = 0;
    for (size_t i = 0; i < n; i++) { /* prompt rows first: they come before its tokens */
        sreq *q = s->bprow[i];
        if (q) {
            q->scored++;
            q->r.on_prompt_logits(q->id, q->scored, q->toks[q->scored], synor_llm_logits(s->c, i),
                                  q->r.user);
        }
    }
    for (size_t i = 0; i < n; i++) {
        sreq *q = s->brow[i];
        if (!q)
            continue;
        const float *row = synor_llm_logits(s->c, i);
        const float *l = synor__sched_penalized(s, q, row, NULL, 0);
        int32_t t = synor_sampler_sample(&q->r.sampler, l, h->vocab_size);
        gen += t != synor_tokenizer_eos(s->c->m->tok);
        synor__sched_emit(s, q, t, row);
    }
    pthread_mutex_lock(&s->mu);
    s->st.generated_tokens += gen;
    pthread_mutex_unlock(&s->mu);
}

int synor_llm_sched_step(synor_llm_sched *s)
{
    uint64_t t0 = synor__sched_now_ns();
    admit(s);
    for (unsigned i = 0; i < s->nrunning;) {
        sreq *q = s->admitted[i];
        int cancelled;
        pthread_mutex_lock(&s->mu);
        cancelled = q->cancelled;
        pthread_mutex_unlock(&s->mu);
        if (cancelled)
            finish(s, q, SYNOR_LLM_DONE_CANCELLED);
        else
            i++;
    }
    int e = 0;
    size_t n = 0;
    if (synor__sched_spec_ready(s)) /* a few requests decoding: a speculative round */
        n = synor__sched_spec_round(s);
    while (!n && s->nrunning) { /* a plain step (again after a preemption) */
        n = build(s);
        uint64_t tb = synor__sched_now_ns();
        e = synor_llm_batch(s->c, n, s->btok, s->bseq, s->bwant);
        tb = synor__sched_now_ns() - tb;
        if (e == SYNOR_ENOMEM && s->nrunning > 1) {
            preempt(s); /* the KV pool is dry: make room and build again */
            n = 0;
            continue;
        }
        if (!e) {
            pthread_mutex_lock(&s->mu);
            s->st.steps++;
            s->st.prompt_tokens += s->bprompt;
            s->st.rows += n;
            s->st.batch_ns += tb;
            pthread_mutex_unlock(&s->mu);
            advance(s, n);
        }
        break;
    }
    if (e) {
        while (s->nrunning)
            finish(s, s->admitted[s->nrunning - 1], SYNOR_LLM_DONE_CANCELLED);
        return e;
    }
    pthread_mutex_lock(&s->mu);
    synor_llm_kv_usage(s->c, &s->st.kv_used, &s->st.kv_total);
    synor_llm_prefix_stats pst;
    synor_llm_prefix_stats_get(s->c, &pst);
    s->st.kv_cached = pst.cached_blocks;
    s->st.kv_idle = pst.idle_blocks;
    if (n)
        s->st.step_ns += synor__sched_now_ns() - t0;
    int left = (int)(s->nrunning + s->nwaiting);
    pthread_mutex_unlock(&s->mu);
    return left;
}

void synor_llm_sched_stats_get(synor_llm_sched *s, synor_llm_sched_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->st;
    out->waiting = s->nwaiting;
    out->running = s->nrunning;
    pthread_mutex_unlock(&s->mu);
}
