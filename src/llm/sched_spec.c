/* sched_spec.c - the scheduler's speculative rounds (sched.c's header
 * comment says what they are): when a few requests are all decoding, the
 * draft proposes for each of them in lockstep batches and the target
 * checks every request's proposals in one batch. */
#include <string.h>

#include "common/common.h"
#include "llm/sched_internal.h"

/* Whether this step can be a speculative round: a draft, no request
 * waiting, at most dmax running, every one decoding. */
int synor__sched_spec_ready(synor_llm_sched *s)
{
    if (!s->draft || !s->nrunning || s->nrunning > s->dmax)
        return 0;
    pthread_mutex_lock(&s->mu);
    int waiting = s->nwaiting != 0;
    pthread_mutex_unlock(&s->mu);
    for (unsigned i = 0; i < s->nrunning && !waiting; i++) {
        sreq *q = s->admitted[i];
        if (q->ntok - q->fed != 1 || q->r.json)
            return 0;
    }
    return !waiting;
}

/* Gives each running request a draft sequence: the one already holding
 * its tokens, else one that holds no running request's (there are dmax,
 * and at most dmax requests run). */
static void draft_slots(synor_llm_sched *s)
{
    unsigned n = s->nrunning, taken = 0; /* bit j: draft sequence j is this round's */
    for (unsigned i = 0; i < n; i++) {
        s->slot[i] = UINT32_MAX;
        for (unsigned j = 0; j < s->dmax; j++)
            if (s->dreq[j] == s->admitted[i]->id + 1) {
                s->slot[i] = j;
                taken |= 1u << j;
            }
    }
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < s->dmax && s->slot[i] == UINT32_MAX; j++)
            if (!(taken & 1u << j)) {
                s->slot[i] = j;
                taken |= 1u << j;
            }
}

/* Brings draft sequence si up to q's tokens (from nothing when it held
 * another request's) and proposes q's first token, *first, drawn by g (a
 * copy of q's sampler). */
static int draft_catch_up(synor_llm_sched *s, sreq *q, unsigned si, synor_sampler *g,
                          int32_t *first)
{
    synor_llm_ctx *d = s->draft;
    if (s->dreq[si] != q->id + 1) {
        synor_llm_seq_reset(d, si);
        s->dreq[si] = q->id + 1;
        s->dfed[si] = 0;
    }
    if (s->dfed[si] >= q->ntok) { /* keep a row to run: the last token's */
        synor_llm_seq_truncate(d, si, (int)q->ntok - 1);
        s->dfed[si] = q->ntok - 1;
    }
    int e = 0;
    size_t rows = 0;
    while (!e && s->dfed[si] < q->ntok) {
        rows = q->ntok - s->dfed[si] < d->max_batch ? q->ntok - s->dfed[si] : d->max_batch;
        for (size_t r = 0; r < rows; r++)
            s->dseq[r] = si;
        if (!(e = synor_llm_batch(d, rows, q->toks + s->dfed[si], s->dseq, NULL)))
            s->dfed[si] += rows;
    }
    if (!e) {
        const float *l = synor__sched_penalized(s, q, synor_llm_logits(d, rows - 1), NULL, 0);
        *first = synor_sampler_sample(g, l, d->m->cfg.vocab_size);
    }
    return e;
}

/* A speculative round for the running requests (spec_ready): the draft
 * proposes up to spec_k tokens for each (fewer near the context's end or
 * max_new, or for the step's row budget), one draft batch per proposal
 * holding every request's row; the target checks every request's last
 * token and proposals in one batch; each request gets its accepted
 * proposals and the target's token after them. Returns the target's rows
 * run (0: no round - no request has room for a proposal, or an error,
 * which the plain step that runs instead meets in its turn). */
size_t synor__sched_spec_round(synor_llm_sched *s)
{
    synor_llm_ctx *c = s->c, *d = s->draft;
    int V = c->m->cfg.vocab_size;
    unsigned n = s->nrunning;
    sreq *rq[32];
    size_t base[32];
    synor_sampler ahead[32]; /* by request: the copy of its sampler that draws its proposals */
    long kmax = 0, budget = (long)(s->o.step_tokens / n) - 1;
    int e = 0;
    draft_slots(s);
    for (unsigned i = 0; i < n && !e; i++) {
        sreq *q = rq[i] = s->admitted[i];
        base[i] = q->fed; /* the target's cache: every token but the last */
        long kk = (long)s->o.spec_k;
        long lim[4] = {(long)c->m->cfg.seq_len - (long)q->ntok - 1,
                       (long)d->m->cfg.seq_len - (long)q->ntok - 1,
                       (long)q->r.max_new - q->generated - 1, budget};
        for (int j = 0; j < 4; j++)
            kk = lim[j] < kk ? lim[j] : kk;
        s->kk[i] = kk > 0 ? (int)kk : 0;
        kmax = s->kk[i] > kmax ? s->kk[i] : kmax;
        ahead[i] = q->r.sampler;
        if (s->kk[i])
            e = draft_catch_up(s, q, s->slot[i], &ahead[i], &s->props[i][0]);
    }
    if (!e && kmax == 0)
        return 0;
    for (long j = 1; j < kmax && !e; j++) { /* proposal j of every request that wants it */
        size_t r = 0;
        for (unsigned i = 0; i < n; i++)
            if (s->kk[i] > j) {
                s->dtok[r] = s->props[i][j - 1];
                s->dseq[r++] = s->slot[i];
            }
        if ((e = synor_llm_batch(d, r, s->dtok, s->dseq, NULL)))
            break;
        r = 0;
        for (unsigned i = 0; i < n; i++)
            if (s->kk[i] > j) {
                s->dfed[s->slot[i]]++;
                const float *l = synor__sched_penalized(s, rq[i], synor_llm_logits(d, r++),
                                                        s->props[i], (int)j);
                s->props[i][j] = synor_sampler_sample(&ahead[i], l, V);
            }
    }
    /* the check: each request's last token and its proposals */
    size_t rows = 0, off[32];
    for (unsigned i = 0; i < n; i++) {
        off[i] = rows;
        s->btok[rows] = rq[i]->toks[rq[i]->ntok - 1];
        memcpy(s->btok + rows + 1, s->props[i], (size_t)s->kk[i] * sizeof *s->btok);
        for (int j = 0; j <= s->kk[i]; j++, rows++) {
            s->bseq[rows] = (unsigned)rq[i]->seq;
            s->bwant[rows] = 1;
        }
    }
    uint64_t tb = synor__sched_now_ns();
    if (!e)
        e = synor_llm_batch(c, rows, s->btok, s->bseq, s->bwant);
    tb = synor__sched_now_ns() - tb;
    if (e) { /* the target's caches as they were (ENOMEM ran nothing); the draft's start afresh */
        for (unsigned i = 0; i < n; i++) {
            synor_llm_seq_truncate(c, (unsigned)rq[i]->seq, (int)base[i]);
            s->dreq[s->slot[i]] = 0;
        }
        return 0;
    }
    /* accepted: the proposals the target's own draw agrees with (greedy:
     * its argmax); then the target's token after them (a correction or the
     * bonus) */
    int32_t out[32][33];
    int nout[32];
    uint64_t accepted = 0, proposed = 0;
    for (unsigned i = 0; i < n; i++) {
        sreq *q = rq[i];
        int a = 0, kk = s->kk[i];
        nout[i] = 0;
        for (; a <= kk; a++) {
            const float *row = synor_llm_logits(c, off[i] + (size_t)a);
            const float *l = synor__sched_penalized(s, q, row, s->props[i], a);
            int32_t t = synor_sampler_sample(&q->r.sampler, l, V);
            out[i][nout[i]++] = t;
            if (a == kk || t != s->props[i][a])
                break;
        }
        size_t keep = base[i] + 1 + (size_t)a;
        synor_llm_seq_truncate(c, (unsigned)q->seq, (int)keep);
        q->fed = keep;
        if (kk && s->dfed[s->slot[i]] > keep) {
            synor_llm_seq_truncate(d, s->slot[i], (int)keep);
            s->dfed[s->slot[i]] = keep;
        }
        accepted += (uint64_t)a;
        proposed += (uint64_t)kk;
    }
    pthread_mutex_lock(&s->mu);
    s->st.steps++;
    s->st.rows += rows;
    s->st.batch_ns += tb;
    s->st.spec_rounds++;
    s->st.spec_proposed += proposed;
    s->st.spec_accepted += accepted;
    pthread_mutex_unlock(&s->mu);
    /* the tokens, request by request (a request that ends leaves the
     * running set: rq is this round's copy of it) */
    uint64_t gen = 0;
    for (unsigned i = 0; i < n; i++)
        for (int j = 0; j < nout[i]; j++) {
            gen += out[i][j] != synor_tokenizer_eos(c->m->tok);
            if (synor__sched_emit(s, rq[i], out[i][j], synor_llm_logits(c, off[i] + (size_t)j)))
                break;
        }
    pthread_mutex_lock(&s->mu);
    s->st.generated_tokens += gen;
    pthread_mutex_unlock(&s->mu);
    return rows;
}

