/* generate.c - text generation on one sequence: the prompt as batches of
 * up to max_batch tokens (prefill), then one token per batch (decode). */
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

int synor_llm_generate(synor_llm_ctx *c, const char *prompt, int n_new, synor_sampler *s,
                       synor_llm_on_token on_token, void *user, synor_llm_gen_stats *stats)
{
    const synor_llm_hparams *cfg = &c->m->cfg;
    const synor_tokenizer *tok = c->m->tok;
    synor_llm_gen_stats st = {0};
    size_t plen = prompt ? strlen(prompt) : 0;
    long need = synor_tokenizer_encode(tok, prompt ? prompt : "", plen, 1, 0, NULL, 0);
    if (need < 0)
        return (int)need;
    if (need + (n_new > 0 ? n_new : 0) > cfg->seq_len && need >= cfg->seq_len)
        return synor__error(SYNOR_ERANGE,
                            "generate: the prompt is %ld tokens; the model's "
                            "context is %d",
                            need, cfg->seq_len);
    int32_t *ids = synor__malloc((size_t)need * sizeof *ids + sizeof *ids);
    unsigned *seqs = synor__calloc(c->max_batch, sizeof *seqs);
    if (!ids || !seqs) {
        synor__free(ids);
        synor__free(seqs);
        return SYNOR_ENOMEM;
    }
    synor_tokenizer_encode(tok, prompt ? prompt : "", plen, 1, 0, ids, (size_t)need);
    synor_llm_seq_reset(c, 0);
    int e = 0;
    uint64_t t0 = now_ns();
    for (long off = 0; off < need && !e; off += c->max_batch) {
        size_t n = (size_t)(need - off) < c->max_batch ? (size_t)(need - off) : c->max_batch;
        e = synor_llm_batch(c, n, ids + off, seqs, NULL);
    }
    uint64_t t1 = now_ns();
    st.prompt_tokens = (size_t)need;
    st.prefill_s = (double)(t1 - t0) * 1e-9;
    int32_t prev = ids[need - 1];
    const float *logits = e ? NULL : synor_llm_logits(c, (size_t)((need - 1) % c->max_batch));
    char text[256];
    for (int i = 0; i < n_new && !e && logits; i++) {
        int32_t next = synor_sampler_sample(s, logits, cfg->vocab_size);
        if (next == synor_tokenizer_eos(tok) || next == synor_tokenizer_bos(tok))
            break;
        st.generated++;
        long len = synor_tokenizer_decode(tok, prev, next, text, sizeof text);
        if (len < 0)
            len = 0;
        if (on_token &&
            on_token(next, text, (size_t)len < sizeof text ? (size_t)len : sizeof text, user))
            break;
        prev = next;
        if (i + 1 == n_new || synor_llm_seq_len(c, 0) >= cfg->seq_len)
            break;
        e = synor_llm_batch(c, 1, &next, seqs, NULL);
        st.decode_steps++;
        logits = e ? NULL : synor_llm_logits(c, 0);
    }
    st.decode_s = (double)(now_ns() - t1) * 1e-9;
    if (stats)
        *stats = st;
    synor__free(ids);
    synor__free(seqs);
    return e;
}
