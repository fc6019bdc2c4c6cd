/* gguf_out.c - writing a Llama model as a GGUF file from any source of
 * fp32 weights: the generated weights of synth.c, or a loaded model's
 * weights dequantized (quantize.c). Matrices are converted to the type
 * asked for; norm weights stay F32, as llama.cpp keeps them. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "llm/llm_internal.h"

void synor__llm_weight_shape(const synor_llm_hparams *c, synor_l2c_weight w, uint64_t *rows,
                             uint64_t *cols)
{
    uint64_t D = (uint64_t)c->dim, H = (uint64_t)c->hidden_dim, V = (uint64_t)c->vocab_size;
    uint64_t KV = D / (uint64_t)c->n_heads * (uint64_t)c->n_kv_heads;
    static const int rows_of[] = {0, 1, 2, 3, 3, 2, 1, 4, 2, 4, 1, 0};
    static const int cols_of[] = {2, 2, 2, 2, 2, 2, 2, 2, 4, 2, 2, 2};
    uint64_t v[5] = {V, 1, D, KV, H};
    *rows = v[rows_of[w]];
    *cols = v[cols_of[w]];
}

static int add_vocab(synor_gguf_writer *w, const synor_tokenizer *t)
{
    size_t n = synor_tokenizer_size(t);
    const char **p = synor__calloc(n, sizeof *p);
    size_t *lens = synor__calloc(n, sizeof *lens);
    float *sc = synor__calloc(n, sizeof *sc);
    int32_t *ty = synor__calloc(n, sizeof *ty);
    int e = p && lens && sc && ty ? 0 : SYNOR_ENOMEM;
    for (size_t i = 0; i < n && !e; i++) {
        p[i] = synor_tokenizer_piece(t, (int32_t)i, &lens[i]);
        sc[i] = synor_tokenizer_score(t, (int32_t)i);
        ty[i] = synor_tokenizer_type(t, (int32_t)i);
    }
    if (!e)
        e = synor_gguf_writer_add_str(w, "tokenizer.ggml.model", "llama");
    if (!e)
        e = synor_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", n, p, lens);
    if (!e)
        e = synor_gguf_writer_add_f32_array(w, "tokenizer.ggml.scores", n, sc);
    if (!e)
        e = synor_gguf_writer_add_i32_array(w, "tokenizer.ggml.token_type", n, ty);
    if (!e)
        e = synor_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id",
                                      (uint32_t)synor_tokenizer_bos(t));
    if (!e)
        e = synor_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id",
                                      (uint32_t)synor_tokenizer_eos(t));
    if (!e)
        e = synor_gguf_writer_add_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    synor__free(p);
    synor__free(lens);
    synor__free(sc);
    synor__free(ty);
    return e;
}

static int add_meta(synor_gguf_writer *w, const synor_llm_hparams *c, const synor_tokenizer *tok,
                    const llm_gguf_extra *x)
{
    int e = synor_gguf_writer_add_str(w, "general.architecture", "llama");
    if (!e)
        e = synor_gguf_writer_add_str(w, "general.name", "synor");
    struct {
        const char *k;
        uint32_t v;
    } u[] = {{"llama.context_length", (uint32_t)c->seq_len},
             {"llama.embedding_length", (uint32_t)c->dim},
             {"llama.block_count", (uint32_t)c->n_layers},
             {"llama.feed_forward_length", (uint32_t)c->hidden_dim},
             {"llama.attention.head_count", (uint32_t)c->n_heads},
             {"llama.attention.head_count_kv", (uint32_t)c->n_kv_heads},
             {"llama.rope.dimension_count", (uint32_t)(c->dim / c->n_heads)}};
    for (size_t i = 0; i < sizeof u / sizeof u[0] && !e; i++)
        e = synor_gguf_writer_add_u32(w, u[i].k, u[i].v);
    if (!e)
        e = synor_gguf_writer_add_f32(w, "llama.attention.layer_norm_rms_epsilon",
                                      c->norm_eps > 0 ? c->norm_eps : 1e-5f);
    if (!e)
        e = synor_gguf_writer_add_f32(w, "llama.rope.freq_base",
                                      c->rope_base > 0 ? c->rope_base : 10000.0f);
    if (!e)
        e = add_vocab(w, tok);
    if (!e && x && x->jinja)
        e = synor_gguf_writer_add_str(w, "tokenizer.chat_template", x->jinja);
    static const char *const ids[4] = {
        "tokenizer.ggml.eot_token_id", "tokenizer.ggml.fim_pre_token_id",
        "tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.fim_mid_token_id"};
    for (int i = 0; i < 4 && x && !e; i++) {
        int32_t v = i ? x->fim[i - 1] : x->eot;
        if (v >= 0)
            e = synor_gguf_writer_add_u32(w, ids[i], (uint32_t)v);
    }
    return e;
}

/* llama.cpp's general.file_type (enum llama_ftype) for a whole-model type. */
static uint32_t file_type(synor_ttype t)
{
    switch (t) {
    case SYNOR_TTYPE_F16:
        return 1;
    case SYNOR_TTYPE_Q4_0:
        return 2;
    case SYNOR_TTYPE_Q8_0:
        return 7;
    case SYNOR_TTYPE_BF16:
        return 32;
    default:
        return 0;
    }
}

static int add_weight(synor_gguf_writer *w, const synor_llm_hparams *c, synor_l2c_source get,
                      void *ctx, synor_l2c_weight which, int layer, const char *name,
                      synor_ttype type, void *qbuf)
{
    uint64_t rows, cols;
    synor__llm_weight_shape(c, which, &rows, &cols);
    const float *v = get(which, layer, ctx);
    if (!v)
        return synor__error(SYNOR_ENOMEM, "%s: no weights", name);
    if (rows == 1) {
        uint64_t ne[1] = {cols};
        return synor_gguf_writer_add_tensor(w, name, SYNOR_TTYPE_F32, 1, ne, v);
    }
    uint64_t ne[2] = {cols, rows};
    if (type == SYNOR_TTYPE_F32)
        return synor_gguf_writer_add_tensor(w, name, type, 2, ne, v);
    int e = synor_ttype_quantize(type, v, qbuf, (size_t)(rows * cols));
    if (e)
        return synor__error(e, "%s: %s", name, synor_errmsg());
    return synor_gguf_writer_add_tensor(w, name, type, 2, ne, qbuf);
}

int synor__llm_gguf_save(const char *path, const synor_llm_hparams *c, const synor_tokenizer *tok,
                         const llm_gguf_extra *x, const synor_gguf *kv_from, synor_ttype type,
                         synor_l2c_source get, void *ctx)
{
    if (type != SYNOR_TTYPE_F32 && type != SYNOR_TTYPE_F16 && type != SYNOR_TTYPE_Q8_0 &&
        type != SYNOR_TTYPE_Q4_0 && type != SYNOR_TTYPE_BF16)
        return synor__error(SYNOR_EINVAL, "%s: type %d is not a type to write models in", path,
                            (int)type);
    if (type != SYNOR_TTYPE_F32 && (c->dim % SYNOR_QK || c->hidden_dim % SYNOR_QK))
        return synor__error(SYNOR_EINVAL, "%s: dim %d and hidden %d must be multiples of %d for %s",
                            path, c->dim, c->hidden_dim, SYNOR_QK, synor_ttype_name(type));
    size_t biggest = (size_t)c->vocab_size * (size_t)c->dim;
    size_t ffn = (size_t)c->hidden_dim * (size_t)c->dim;
    void *qbuf = synor__malloc((biggest > ffn ? biggest : ffn) * 2 + 64);
    synor_gguf_writer *w = NULL;
    int e = qbuf ? synor_gguf_writer_create(&w) : SYNOR_ENOMEM;
    static const char *const skip[] = {"general.file_type", "general.alignment", NULL};
    if (!e)
        e = kv_from ? synor_gguf_writer_copy_kv(w, kv_from, skip)
                    : add_meta(w, c, tok, x);
    if (!e)
        e = synor_gguf_writer_add_u32(w, "general.file_type", file_type(type));
    /* Tensors on 64-byte boundaries (a key llama.cpp reads too): mapped,
     * every F32 row of a dim a multiple of 16 then starts a cache line, and
     * the vector kernels' loads are not split over two (measured: 16-row
     * F32 products 1.3-1.5x faster than with the default 32) */
    if (!e)
        e = synor_gguf_writer_add_u32(w, "general.alignment", SYNOR_CACHE_LINE);
    if (!e)
        e = add_weight(w, c, get, ctx, SYNOR_L2C_TOKEN_EMBD, 0, "token_embd.weight", type, qbuf);
    if (!e)
        e = add_weight(w, c, get, ctx, SYNOR_L2C_RMS_FINAL, 0, "output_norm.weight", type, qbuf);
    if (!e && !c->shared_classifier)
        e = add_weight(w, c, get, ctx, SYNOR_L2C_WCLS, 0, "output.weight", type, qbuf);
    static const struct {
        synor_l2c_weight w;
        const char *suffix;
    } per_layer[] = {{SYNOR_L2C_RMS_ATT, "attn_norm"}, {SYNOR_L2C_WQ, "attn_q"},
                     {SYNOR_L2C_WK, "attn_k"},         {SYNOR_L2C_WV, "attn_v"},
                     {SYNOR_L2C_WO, "attn_output"},    {SYNOR_L2C_RMS_FFN, "ffn_norm"},
                     {SYNOR_L2C_W1, "ffn_gate"},       {SYNOR_L2C_W2, "ffn_down"},
                     {SYNOR_L2C_W3, "ffn_up"}};
    for (int l = 0; l < c->n_layers && !e; l++)
        for (size_t i = 0; i < sizeof per_layer / sizeof per_layer[0] && !e; i++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, per_layer[i].suffix);
            e = add_weight(w, c, get, ctx, per_layer[i].w, l, name, type, qbuf);
        }
    if (!e)
        e = synor_gguf_writer_save(w, path);
    synor_gguf_writer_destroy(w);
    synor__free(qbuf);
    return e;
}
