/* embed.c - a text's embedding from the model's own hidden states, for the
 * semantic cache: the final hidden state of every token (after the final
 * RMSNorm, as the classifier sees it), averaged and scaled to unit
 * length. */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "llm/llm_ctx.h"

int synor_llm_embed(synor_llm_ctx *c, unsigned seq, const char *text, float *out)
{
    const synor_llm_hparams *h = &c->m->cfg;
    const synor_tokenizer *tok = c->m->tok;
    size_t len = text ? strlen(text) : 0;
    long n = synor_tokenizer_encode(tok, text ? text : "", len, 1, 0, NULL, 0);
    if (n < 0)
        return (int)n;
    if (n >= h->seq_len)
        return synor__error(SYNOR_ERANGE,
                            "embed: the text is %ld tokens; the model's context is "
                            "%d",
                            n, h->seq_len);
    int32_t *ids = synor__malloc((size_t)n * sizeof *ids + sizeof *ids);
    unsigned *seqs = synor__malloc(c->max_batch * sizeof *seqs);
    uint8_t *want = synor__calloc(c->max_batch, 1);
    double *acc = synor__calloc((size_t)h->dim, sizeof *acc);
    int e = ids && seqs && want && acc ? 0 : SYNOR_ENOMEM;
    if (!e)
        synor_tokenizer_encode(tok, text ? text : "", len, 1, 0, ids, (size_t)n);
    for (size_t i = 0; !e && i < c->max_batch; i++)
        seqs[i] = seq;
    if (!e)
        synor_llm_seq_reset(c, seq);
    for (long off = 0; off < n && !e; off += c->max_batch) {
        size_t rows = (size_t)(n - off) < c->max_batch ? (size_t)(n - off) : c->max_batch;
        e = synor_llm_batch(c, rows, ids + off, seqs, want);
        for (size_t t = 0; !e && t < rows; t++) {
            const float *x = c->x + t * (size_t)h->dim;
            double ss = 0;
            for (int i = 0; i < h->dim; i++)
                ss += (double)x[i] * x[i];
            double scale = 1.0 / sqrt(ss / h->dim + h->norm_eps);
            for (int i = 0; i < h->dim; i++)
                acc[i] += x[i] * scale * c->m->rms_final[i];
        }
    }
    if (!e) {
        double norm = 0;
        for (int i = 0; i < h->dim; i++)
            norm += acc[i] * acc[i];
        norm = norm > 0 ? 1.0 / sqrt(norm) : 0;
        for (int i = 0; i < h->dim; i++)
            out[i] = (float)(acc[i] * norm);
    }
    synor_llm_seq_reset(c, seq);
    synor__free(ids);
    synor__free(seqs);
    synor__free(want);
    synor__free(acc);
    return e;
}
