/* quantize.c - a model converted to another weight type (synor quantize):
 * any model the engine loads, written as GGUF with its matrices in F32,
 * F16, BF16, Q8_0 or Q4_0 (GGUF's block formats, so llama.cpp loads the
 * result). Each matrix is dequantized to fp32 and converted; the metadata
 * of a GGUF source is carried over, a llama2.c source gets Llama metadata
 * and its tokenizer.bin's vocabulary. */
#include "common/common.h"
#include "llm/llm_internal.h"

typedef struct src {
    const synor_llm *m;
    float *buf;
} src;

static const float *from_model(synor_l2c_weight w, int layer, void *ctx)
{
    src *s = ctx;
    const synor_llm *m = s->m;
    const llm_layer *L = &m->layers[layer];
    const llm_mat *mat = NULL;
    switch (w) {
    case SYNOR_L2C_TOKEN_EMBD:
        mat = &m->embd;
        break;
    case SYNOR_L2C_WCLS:
        mat = &m->cls;
        break;
    case SYNOR_L2C_RMS_ATT:
        return L->rms_att;
    case SYNOR_L2C_RMS_FFN:
        return L->rms_ffn;
    case SYNOR_L2C_RMS_FINAL:
        return m->rms_final;
    case SYNOR_L2C_WQ:
        mat = &L->wq;
        break;
    case SYNOR_L2C_WK:
        mat = &L->wk;
        break;
    case SYNOR_L2C_WV:
        mat = &L->wv;
        break;
    case SYNOR_L2C_WO:
        mat = &L->wo;
        break;
    case SYNOR_L2C_W1:
        mat = &L->w1;
        break;
    case SYNOR_L2C_W2:
        mat = &L->w2;
        break;
    case SYNOR_L2C_W3:
        mat = &L->w3;
        break;
    }
    for (int r = 0; r < mat->rows; r++)
        synor__llm_mat_row(mat, r, s->buf + (size_t)r * mat->cols);
    return s->buf;
}

int synor_llm_quantize(const char *in, const synor_llm_load_opts *opts, synor_ttype type,
                       const char *out)
{
    synor_llm *m = NULL;
    int e = synor_llm_load(in, opts, &m);
    if (e)
        return e;
    const synor_llm_hparams *c = &m->cfg;
    size_t biggest = (size_t)c->vocab_size * (size_t)c->dim;
    size_t ffn = (size_t)c->hidden_dim * (size_t)c->dim;
    src s = {m, synor__malloc((biggest > ffn ? biggest : ffn) * sizeof(float))};
    if (!s.buf)
        e = synor__error(SYNOR_ENOMEM, "%s: no memory to convert its weights", in);
    if (!e)
        e = synor__llm_gguf_save(out, c, m->tok, NULL, m->gguf, type, from_model, &s);
    synor__free(s.buf);
    synor_llm_destroy(m);
    return e;
}
