/* generate.c - text generation on one sequence: the prompt as batches of
 * up to max_batch tokens (prefill), then one token per batch (decode).
 *
 * Resumable generation (synor_llm_generate_ids with a segment): a run
 * stopped after a whole segment of generated tokens is resumed from the
 * token ids and the sampler's state alone, the KV cache rebuilt rather than
 * shipped. A batch of several rows does not round as one row per batch
 * does (a row's products take other kernels), so a resumed run that
 * prefilled the generated tokens would drift from the run it resumes. Both
 * therefore build the cache of every finished segment the same way: the
 * uninterrupted run, at each segment's end, drops the segment's one-row
 * cache entries and runs the segment again as one batch (a prefill of
 * segment rows, cheap next to the segment's decode steps); the resumed run
 * runs the prompt and each segment as those same batches. The same batches
 * on the same tokens make the same bits, so the tokens that follow are the
 * same. */
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "llm/llm_ctx.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int synor__llm_run_rows(synor_llm_ctx *c, const int32_t *ids, size_t n, const unsigned *seqs,
                        const float **logits)
{
    size_t step = c->max_batch, m = c->k->gemm_block > 0 ? (size_t)c->k->gemm_block : 0;
    if (m && step > m)
        step = step / m * m;
    uint8_t *none = n > step || !logits ? synor__calloc(step, 1) : NULL;
    int e = (n > step || !logits) && !none ? SYNOR_ENOMEM : 0;
    size_t last = 0;
    for (size_t off = 0; off < n && !e; off += step) {
        last = n - off < step ? n - off : step;
        e = synor_llm_batch(c, last, ids + off, seqs, off + last < n || !logits ? none : NULL);
    }
    synor__free(none);
    if (logits)
        *logits = e || !n ? NULL : synor_llm_logits(c, last - 1);
    return e;
}

int synor_llm_generate(synor_llm_ctx *c, const char *prompt, int n_new, synor_sampler *s,
                       synor_llm_on_token on_token, void *user, synor_llm_gen_stats *stats)
{
    const synor_tokenizer *tok = c->m->tok;
    size_t plen = prompt ? strlen(prompt) : 0;
    long need = synor_tokenizer_encode(tok, prompt ? prompt : "", plen, 1, 0, NULL, 0);
    if (need < 0)
        return (int)need;
    int32_t *ids = synor__malloc((size_t)need * sizeof *ids + sizeof *ids);
    if (!ids)
        return SYNOR_ENOMEM;
    synor_tokenizer_encode(tok, prompt ? prompt : "", plen, 1, 0, ids, (size_t)need);
    int e = synor_llm_generate_ids(c, ids, (size_t)need, 0, n_new, 0, s, on_token, user, stats);
    synor__free(ids);
    return e;
}

int synor_llm_generate_ids(synor_llm_ctx *c, const int32_t *ids, size_t n_prompt, size_t n_done,
                           int n_new, int segment, synor_sampler *s, synor_llm_on_token on_token,
                           void *user, synor_llm_gen_stats *stats)
{
    const synor_llm_hparams *cfg = &c->m->cfg;
    const synor_tokenizer *tok = c->m->tok;
    synor_llm_gen_stats st = {0};
    if (stats)
        *stats = st;
    if (!ids || !n_prompt || !s || segment < 0)
        return synor__error(SYNOR_EINVAL, "generate: no prompt ids, no sampler or segment %d",
                            segment);
    size_t want = n_new > 0 ? (size_t)n_new : 0;
    if (n_done && (!segment || n_done % (size_t)segment || n_done > want))
        return synor__error(SYNOR_EINVAL,
                            "generate: %zu tokens done is not a whole number of segments of "
                            "%d within the %zu asked",
                            n_done, segment, want);
    for (size_t i = 0; i < n_prompt + n_done; i++)
        if (ids[i] < 0 || ids[i] >= cfg->vocab_size)
            return synor__error(SYNOR_EINVAL, "generate: token %zu (%d) is outside the "
                                              "vocabulary of %d",
                                i, (int)ids[i], cfg->vocab_size);
    long need = (long)n_prompt;
    if (need + (long)want > cfg->seq_len && need >= cfg->seq_len)
        return synor__error(SYNOR_ERANGE,
                            "generate: the prompt is %ld tokens; the model's "
                            "context is %d",
                            need, cfg->seq_len);
    /* Where the run being resumed stopped by itself: nothing is left. */
    if (n_done && (n_done == want || need + (long)n_done - 1 >= cfg->seq_len))
        return 0;
    int32_t *all = synor__malloc((n_prompt + want + 1) * sizeof *all);
    unsigned *seqs = synor__calloc(c->max_batch, sizeof *seqs);
    if (!all || !seqs) {
        synor__free(all);
        synor__free(seqs);
        return SYNOR_ENOMEM;
    }
    memcpy(all, ids, (n_prompt + n_done) * sizeof *all);
    synor_llm_seq_reset(c, 0);
    uint64_t t0 = now_ns();
    const float *logits = NULL;
    int e = synor__llm_run_rows(c, all, n_prompt, seqs, &logits);
    for (size_t j = 0; j < n_done / (segment ? (size_t)segment : 1) && !e; j++)
        e = synor__llm_run_rows(c, all + n_prompt + j * (size_t)segment, (size_t)segment, seqs,
                                &logits);
    uint64_t t1 = now_ns();
    st.prompt_tokens = n_prompt;
    st.prefill_s = (double)(t1 - t0) * 1e-9;
    int32_t prev = all[n_prompt + n_done - 1];
    char text[256];
    for (size_t i = n_done; i < want && !e && logits; i++) {
        int32_t next = synor_sampler_sample(s, logits, cfg->vocab_size);
        if (next == synor_tokenizer_eos(tok) || next == synor_tokenizer_bos(tok))
            break;
        st.generated++;
        all[n_prompt + i] = next;
        long len = synor_tokenizer_decode(tok, prev, next, text, sizeof text);
        if (len < 0)
            len = 0;
        if (on_token &&
            on_token(next, text, (size_t)len < sizeof text ? (size_t)len : sizeof text, user))
            break;
        prev = next;
        if (i + 1 == want || synor_llm_seq_len(c, 0) >= cfg->seq_len)
            break;
        if (segment && (i + 1) % (size_t)segment == 0) {
            /* the segment's end: its cache again, as one batch (above) */
            size_t from = n_prompt + i + 1 - (size_t)segment;
            e = synor_llm_seq_truncate(c, 0, (int)from);
            if (!e)
                e = synor__llm_run_rows(c, all + from, (size_t)segment, seqs, &logits);
            continue;
        }
        e = synor_llm_batch(c, 1, &next, seqs, NULL);
        st.decode_steps++;
        logits = e ? NULL : synor_llm_logits(c, 0);
    }
    st.decode_s = (double)(now_ns() - t1) * 1e-9;
    if (stats)
        *stats = st;
    synor__free(all);
    synor__free(seqs);
    return e;
}
