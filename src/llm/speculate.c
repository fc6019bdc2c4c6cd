/* speculate.c - speculative decoding (Leviathan et al. 2023, Chen et al.
 * 2023): a draft model proposes k tokens one by one, the target checks all
 * of them in one batch of k + 1 rows, and the standard acceptance rule
 * keeps the output distribution exactly the target's: proposal d with
 * draft probability q(d) and target probability p(d) is accepted with
 * probability min(1, p(d) / q(d)); at the first rejection a token is drawn
 * from max(0, p - q) renormalised; when all k are accepted a bonus token
 * is drawn from the target's next distribution. Greedy (temperature 0)
 * makes p and q one-hot, so the tokens are exactly the target's greedy
 * tokens. With same_draws, a sampled round is checked as a greedy one:
 * proposal i is drawn from the draft's logits by a copy of the sampler
 * that runs i draws ahead, and accepted when the sampler's own draw from
 * the target's row gives the same token (the draw is the Gumbel-max trick,
 * sample.c) - the text is then the one plain decoding gives for the seed.
 *
 * Both caches always hold every emitted token but the last (`last`, not
 * yet fed); after a check, each is truncated back to what was accepted -
 * except after a check that accepted all k: then the draft lacks its last
 * proposal, which it takes with `last` in the next round's first batch
 * (two rows for the cost of about one: a step saved per such round).
 *
 * The cost model (BENCHMARKS.md, "Speculative decoding"): a round costs k
 * draft steps and one check of k + 1 rows, and emits (1 - a^(k+1)) / (1 - a)
 * tokens on average at acceptance a; a check costs about one target step
 * only while its rows' products stay bound by streaming the weights. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "llm/llm_ctx.h"

/* The first largest logit, as the greedy sampler picks it. */
static int32_t argmax(const float *l, int n)
{
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[best])
            best = i;
    return best;
}

/* The probability of logit l[best] (the largest) under the plain softmax
 * of l: the draft's confidence when greedy. */
static float top_prob(const float *l, int n, int32_t best)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += expf(l[i] - l[best]);
    return (float)(1.0 / sum);
}

/* The largest of n probabilities: the draft's confidence when sampling. */
static float max_prob(const float *q, int n)
{
    float m = 0;
    for (int i = 0; i < n; i++)
        if (q[i] > m)
            m = q[i];
    return m;
}

int32_t synor__llm_accept(synor_sampler *s, const float *p, const float *q, int32_t d, int n,
                          float *tmp, int *accepted)
{
    float ratio = q[d] > 0 ? p[d] / q[d] : 0;
    if (ratio >= 1.0f) {
        *accepted = 1;
        return d;
    }
    /* accept with probability ratio: draw from {accept: ratio, reject: 1 - ratio} */
    float two[2] = {ratio, 1.0f - ratio};
    if (synor__sampler_draw(s, two, 2) == 0) {
        *accepted = 1;
        return d;
    }
    *accepted = 0;
    float mass = 0;
    for (int i = 0; i < n; i++) {
        tmp[i] = p[i] > q[i] ? p[i] - q[i] : 0;
        mass += tmp[i];
    }
    return synor__sampler_draw(s, mass > 0 ? tmp : p, n);
}

/* The lookup draft (prompt lookup, LLMA): the latest earlier place where
 * the context's last n tokens (n = ngram down to 2) occur, and the k
 * tokens that followed them there (the context extended by the proposals
 * themselves where it ends), as the proposals. hist[0..cur] is the
 * context, hist[cur] its last token. Returns the count proposed (k, or 0
 * without a match). */
int synor__llm_lookup(const int32_t *hist, int cur, int ngram, int k, int32_t *props)
{
    for (int n = ngram; n >= 2; n--) {
        if (cur + 1 < n + 1)
            continue;
        const int32_t *tail = hist + cur - n + 1;
        for (int j = cur - 1; j >= n - 1; j--) {
            if (hist[j] != tail[n - 1] || memcmp(hist + j - n + 1, tail, (size_t)n * sizeof *hist))
                continue;
            /* past the context's end, the proposals themselves: a
             * repeating stretch of period cur - j goes on repeating */
            for (int m = 0; m < k; m++)
                props[m] = j + 1 + m <= cur ? hist[j + 1 + m] : props[j + m - cur];
            return k;
        }
    }
    return 0;
}

int synor_llm_generate_speculative(synor_llm_ctx *target, synor_llm_ctx *draft, const char *prompt,
                                   int n_new, int k, synor_sampler *s, synor_llm_on_token on_token,
                                   void *user, synor_llm_spec_stats *stats)
{
    synor_llm_spec_opts o = {.k = k};
    return synor_llm_generate_spec(target, draft, prompt, n_new, &o, s, on_token, user, stats);
}

/* Runs the draft model over what it lacks (hist[from..to]: the tokens the
 * target took since, and `last`), in batches of at most max_batch rows;
 * its logits are then those of hist[to]'s row. */
static int draft_catch_up(synor_llm_ctx *draft, const int32_t *hist, int from, int to,
                          const unsigned *seqs, const float **logits)
{
    int e = 0;
    size_t rows = 1;
    for (int off = from; off <= to && !e; off += (int)rows) {
        rows = (size_t)(to - off + 1) < draft->max_batch ? (size_t)(to - off + 1)
                                                        : draft->max_batch;
        e = synor_llm_batch(draft, rows, hist + off, seqs, NULL);
    }
    if (!e)
        *logits = synor_llm_logits(draft, rows - 1);
    return e;
}

int synor_llm_generate_spec(synor_llm_ctx *target, synor_llm_ctx *draft, const char *prompt,
                            int n_new, const synor_llm_spec_opts *o, synor_sampler *s,
                            synor_llm_on_token on_token, void *user, synor_llm_spec_stats *stats)
{
    const synor_llm_hparams *h = &target->m->cfg;
    int V = h->vocab_size, k = o->k, look = o->lookup;
    float pmin = o->p_min;
    if (draft && (draft->m->cfg.vocab_size != V ||
                  synor_tokenizer_size(draft->m->tok) != synor_tokenizer_size(target->m->tok)))
        return synor__error(SYNOR_EINVAL,
                            "speculative decoding: the draft's vocabulary (%d) is "
                            "not the target's (%d)",
                            draft->m->cfg.vocab_size, V);
    if (k < 1 || k > 32 || (unsigned)k + 1 > target->max_batch)
        return synor__error(SYNOR_EINVAL,
                            "speculative decoding: k = %d (1..32, and at most the "
                            "target's batch - 1)",
                            k);
    if (look < 0 || look > 16 || look == 1 || (!draft && !look))
        return synor__error(SYNOR_EINVAL,
                            "speculative decoding: lookup n-gram %d (0: off, or 2..16; "
                            "without a draft model it must be on)",
                            look);
    if (!(pmin >= 0 && pmin <= 1))
        return synor__error(SYNOR_EINVAL,
                            "speculative decoding: p_min %g (0: off, or a probability "
                            "up to 1)",
                            (double)pmin);
    const synor_tokenizer *tok = target->m->tok;
    size_t plen = prompt ? strlen(prompt) : 0;
    long np = synor_tokenizer_encode(tok, prompt ? prompt : "", plen, 1, 0, NULL, 0);
    if (np < 0)
        return (int)np;
    int limit = h->seq_len;
    if (draft && draft->m->cfg.seq_len < limit)
        limit = draft->m->cfg.seq_len;
    if (np + k + 1 >= limit)
        return synor__error(SYNOR_ERANGE,
                            "speculative decoding: a prompt of %ld tokens leaves "
                            "no room in a context of %d",
                            np, limit);
    /* hist: every token of the sequence (the prompt, then what was emitted);
     * hist[target's cache length] is `last`, the one not yet fed */
    int32_t *hist = synor__malloc(((size_t)limit + 40) * sizeof *hist);
    float *p = synor__malloc((size_t)V * (size_t)(k + 1) * sizeof *p);
    float *q = synor__malloc((size_t)V * (size_t)k * sizeof *q);
    float *tmp = synor__malloc((size_t)V * sizeof *tmp);
    unsigned *seqs = synor__calloc((size_t)limit + 40, sizeof *seqs);
    int e = hist && p && q && tmp && seqs ? 0 : SYNOR_ENOMEM;
    synor_llm_spec_stats st = {0};
    double t0 = synor__now_s();
    if (!e) {
        synor_tokenizer_encode(tok, prompt ? prompt : "", plen, 1, 0, hist, (size_t)np);
        synor_llm_seq_reset(target, 0);
        if (draft)
            synor_llm_seq_reset(draft, 0);
        /* The target's cache takes the prompt but its last token, which is
         * `last`; the draft catches up in its first round. */
        if (np > 1)
            e = synor__llm_run_rows(target, hist, (size_t)np - 1, seqs, NULL);
    }
    int32_t last = e ? 0 : hist[np - 1], prev = np > 1 ? hist[np - 2] : last;
    int32_t props[33], rows[33];
    char text[256];
    int done = 0;
    int greedy = s->temperature == 0;
    /* direct: every row's token is the sampler's own draw from it (greedy:
     * the argmax), a proposal accepted when it is that token */
    int direct = greedy || o->same_draws;
    /* The draft draws from a stream of its own, so its proposals are
     * independent of the acceptance draws; with same_draws, from a copy
     * of the sampler taken at each round's start (ahead). */
    synor_sampler ds = *s, ahead;
    ds.state = (s->state ^ 0x5851F42D4C957F2Dull) * 0x9E3779B97F4A7C15ull | 1u;
    while (!e && !done && (int)st.generated < n_new) {
        int base = synor_llm_seq_len(target, 0);
        int kk = k;
        if (base + kk + 1 >= limit)
            kk = limit - base - 2;
        if (kk < 1)
            break;
        double t1 = synor__now_s();
        int nl = look ? synor__llm_lookup(hist, base, look, kk, props) : 0;
        if (nl > 0) { /* the lookup's proposals: q one-hot */
            kk = nl;
            st.lookup_checks++;
            for (int i = 0; i < kk && !direct; i++) {
                memset(q + (size_t)i * V, 0, (size_t)V * sizeof *q);
                q[(size_t)i * V + props[i]] = 1.0f;
            }
        } else if (draft) { /* the draft model: kk proposals */
            int32_t t = last;
            ahead = *s;
            for (int i = 0; i < kk && !e; i++) {
                const float *dl = NULL;
                if (i == 0)
                    e = draft_catch_up(draft, hist, synor_llm_seq_len(draft, 0), base, seqs, &dl);
                else if (!(e = synor_llm_batch(draft, 1, &t, seqs, NULL)))
                    dl = synor_llm_logits(draft, 0);
                if (e)
                    break;
                st.draft_steps++;
                /* the draft unsure of its next token (p_min): the round
                 * checks the proposals so far; the decision rests on the
                 * draft's own context only, never on the target's draws */
                if (greedy) {
                    int32_t best = argmax(dl, V);
                    if (pmin > 0 && top_prob(dl, V, best) < pmin) {
                        kk = i;
                        st.draft_stops++;
                        break;
                    }
                    t = props[i] = best;
                    continue;
                }
                if (!direct || pmin > 0)
                    e = synor__sampler_probs(s, dl, V, q + (size_t)i * V);
                if (!e && pmin > 0 && max_prob(q + (size_t)i * V, V) < pmin) {
                    kk = i;
                    st.draft_stops++;
                    break;
                }
                if (!e)
                    t = props[i] = direct ? synor_sampler_sample(&ahead, dl, V)
                                          : synor__sampler_draw(&ds, q + (size_t)i * V, V);
            }
        } else { /* nothing to propose: one target step */
            kk = 0;
        }
        double t2 = synor__now_s();
        st.draft_seconds += t2 - t1;
        if (e)
            break;
        /* target: last and the proposals in one batch, every row's logits */
        rows[0] = last;
        memcpy(rows + 1, props, (size_t)kk * sizeof *rows);
        uint8_t want[33];
        memset(want, 1, sizeof want);
        e = synor_llm_batch(target, (size_t)kk + 1, rows, seqs, want);
        for (int i = 0; i <= kk && !e && !direct; i++)
            e = synor__sampler_probs(s, synor_llm_logits(target, (size_t)i), V, p + (size_t)i * V);
        st.check_seconds += synor__now_s() - t2;
        if (e)
            break;
        st.steps++;
        st.proposed += (size_t)kk;
        int a = 0;
        int32_t emit[34];
        int nemit = 0;
        for (; a < kk; a++) {
            int ok;
            int32_t x;
            if (direct) { /* accepted iff the target's own draw agrees */
                x = synor_sampler_sample(s, synor_llm_logits(target, (size_t)a), V);
                ok = x == props[a];
            } else {
                x = synor__llm_accept(s, p + (size_t)a * V, q + (size_t)a * V, props[a], V, tmp,
                                      &ok);
            }
            emit[nemit++] = x;
            if (!ok)
                break;
        }
        st.accepted += (size_t)a;
        if (nl > 0) {
            st.lookup_proposed += (size_t)kk;
            st.lookup_accepted += (size_t)a;
        }
        if (a == kk)
            emit[nemit++] = direct ? synor_sampler_sample(s, synor_llm_logits(target, (size_t)kk), V)
                                   : synor__sampler_draw(s, p + (size_t)kk * V, V);
        /* caches back to: everything up to the last emitted token; the
         * draft's may lack some (the lookup's rounds, a fully accepted
         * round's last proposal): its next round feeds them */
        synor_llm_seq_truncate(target, 0, base + 1 + a);
        if (draft && synor_llm_seq_len(draft, 0) > base + 1 + a)
            synor_llm_seq_truncate(draft, 0, base + 1 + a);
        memcpy(hist + base + 1, emit, (size_t)nemit * sizeof *hist);
        for (int i = 0; i < nemit && !done; i++) {
            int32_t x = emit[i];
            if (x == synor_tokenizer_eos(tok) || x == synor_tokenizer_bos(tok)) {
                done = 1;
                break;
            }
            st.generated++;
            long len = synor_tokenizer_decode(tok, prev, x, text, sizeof text);
            if (on_token && on_token(x, text,
                                     len < 0                     ? 0
                                     : (size_t)len < sizeof text ? (size_t)len
                                                                 : sizeof text,
                                     user))
                done = 1;
            prev = x;
            if ((int)st.generated >= n_new)
                done = 1;
        }
        last = emit[nemit - 1];
    }
    st.seconds = synor__now_s() - t0;
    if (stats)
        *stats = st;
    synor__free(hist);
    synor__free(p);
    synor__free(q);
    synor__free(tmp);
    synor__free(seqs);
    return e;
}
