/* load.c - a model from a GGUF file or a llama2.c checkpoint: the
 * configuration, every weight checked against the shape the configuration
 * implies, and the tokenizer. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "llm/llm_internal.h"

static int mat_of_gguf(synor_llm *m, const char *path, const char *name, int rows, int cols,
                       llm_mat *out)
{
    const synor_gguf_tensor *t = synor_gguf_tensor_find(m->gguf, name);
    if (!t)
        return synor__error(SYNOR_ESCHEMA, "%s: tensor '%s' is missing", path, name);
    if (t->ndim != 2 || t->ne[0] != (uint64_t)cols || t->ne[1] != (uint64_t)rows)
        return synor__error(SYNOR_ESCHEMA,
                            "%s: tensor '%s' has shape [%llu, %llu] (%u dims); "
                            "the model needs [%d, %d]",
                            path, name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                            t->ndim, cols, rows);
    *out = (llm_mat){.type = (int)t->type,
                     .rows = rows,
                     .cols = cols,
                     .data = t->data,
                     .row_bytes = synor_ttype_bytes(t->type, (uint64_t)cols)};
    m->weight_bytes += t->bytes;
    return 0;
}

/* A norm weight (dim floats): used in place when F32, else converted. */
static int vec_of_gguf(synor_llm *m, const char *path, const char *name, int dim, float *spare,
                       const float **out)
{
    const synor_gguf_tensor *t = synor_gguf_tensor_find(m->gguf, name);
    if (!t)
        return synor__error(SYNOR_ESCHEMA, "%s: tensor '%s' is missing", path, name);
    if (t->ndim != 1 || t->ne[0] != (uint64_t)dim)
        return synor__error(SYNOR_ESCHEMA,
                            "%s: tensor '%s' has %llu elements (%u dims); the "
                            "model needs a vector of %d",
                            path, name, (unsigned long long)t->ne[0], t->ndim, dim);
    m->weight_bytes += t->bytes;
    if (t->type == SYNOR_TTYPE_F32) {
        *out = t->data;
        return 0;
    }
    int e = synor_ttype_dequantize(t->type, t->data, spare, (size_t)dim);
    if (e)
        return synor__error(e, "%s: tensor '%s': %s vectors are not supported", path, name,
                            synor_ttype_name(t->type));
    *out = spare;
    return 0;
}

static int u32_or(const synor_gguf *g, const char *key, uint32_t dflt, uint32_t *out)
{
    if (synor_gguf_find(g, key) < 0) {
        *out = dflt;
        return 0;
    }
    return synor_gguf_get_u32(g, key, out);
}

/* *out: the token id under key (or alt, where not NULL and key is
 * absent), checked against the vocabulary's n pieces; -1 when neither is
 * there. */
static int opt_id(const synor_gguf *g, const char *key, const char *alt, size_t n,
                  const char *path, int32_t *out)
{
    uint32_t v;
    *out = -1;
    if (synor_gguf_find(g, key) < 0)
        key = alt;
    if (!key || synor_gguf_find(g, key) < 0)
        return 0;
    int e = synor_gguf_get_u32(g, key, &v);
    if (!e && v >= n)
        e = synor__error(SYNOR_ESCHEMA, "%s: %s is %u; the vocabulary has %zu pieces", path, key,
                         v, n);
    *out = e ? -1 : (int32_t)v;
    return e;
}

static int f32_or(const synor_gguf *g, const char *key, float dflt, float *out)
{
    if (synor_gguf_find(g, key) < 0) {
        *out = dflt;
        return 0;
    }
    return synor_gguf_get_f32(g, key, out);
}

static int tokenizer_of_gguf(synor_llm *m, const char *path)
{
    const synor_gguf *g = m->gguf;
    const char *s;
    size_t len, n = 0;
    synor_gguf_vtype et;
    int e = synor_gguf_get_str(g, "tokenizer.ggml.model", &s, &len);
    if (e)
        return e;
    if (len != 5 || memcmp(s, "llama", 5) != 0)
        return synor__error(SYNOR_ENOTSUP,
                            "%s: tokenizer.ggml.model is '%.*s'; only 'llama' "
                            "(SentencePiece BPE) is supported",
                            path, (int)len, s);
    if ((e = synor_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n)))
        return e;
    if ((size_t)m->cfg.vocab_size != n)
        return synor__error(SYNOR_ESCHEMA,
                            "%s: tokenizer.ggml.tokens has %zu pieces; "
                            "token_embd.weight has %d rows",
                            path, n, m->cfg.vocab_size);
    const char **pieces = synor__calloc(n, sizeof *pieces);
    size_t *lens = synor__calloc(n, sizeof *lens);
    float *scores = synor__calloc(n, sizeof *scores);
    int32_t *types = synor__calloc(n, sizeof *types);
    int have_scores = synor_gguf_find(g, "tokenizer.ggml.scores") >= 0;
    int have_types = synor_gguf_find(g, "tokenizer.ggml.token_type") >= 0;
    e = pieces && lens && scores && types ? 0 : SYNOR_ENOMEM;
    for (size_t i = 0; i < n && !e; i++) {
        e = synor_gguf_arr_str(g, "tokenizer.ggml.tokens", i, &pieces[i], &lens[i]);
        if (!e && have_scores)
            e = synor_gguf_arr_f32(g, "tokenizer.ggml.scores", i, &scores[i]);
        int64_t ty = SYNOR_TOKEN_NORMAL;
        if (!e && have_types)
            e = synor_gguf_arr_i64(g, "tokenizer.ggml.token_type", i, &ty);
        types[i] = (int32_t)ty;
    }
    uint32_t bos = 1, eos = 2, unk = 0, space = 1;
    if (!e)
        e = u32_or(g, "tokenizer.ggml.bos_token_id", 1, &bos);
    if (!e)
        e = u32_or(g, "tokenizer.ggml.eos_token_id", 2, &eos);
    if (!e)
        e = u32_or(g, "tokenizer.ggml.unknown_token_id", 0, &unk);
    /* optional ids: the end of a turn; fill-in-the-middle's three markers
     * (llama.cpp's names, and the older ones CodeLlama's files carry) */
    static const char *const keys[4][2] = {
        {"tokenizer.ggml.eot_token_id", NULL},
        {"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"},
        {"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"},
        {"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"}};
    int32_t *ids[4] = {&m->eot, &m->fim[0], &m->fim[1], &m->fim[2]};
    for (int k = 0; k < 4 && !e; k++)
        e = opt_id(g, keys[k][0], keys[k][1], n, path, ids[k]);
    const char *tmpl;
    size_t tlen;
    if (!e && synor_gguf_find(g, "tokenizer.chat_template") >= 0 &&
        !(e = synor_gguf_get_str(g, "tokenizer.chat_template", &tmpl, &tlen))) {
        m->chat_template = synor__malloc(tlen + 1);
        if (!m->chat_template)
            e = SYNOR_ENOMEM;
        else {
            memcpy(m->chat_template, tmpl, tlen);
            m->chat_template[tlen] = 0;
        }
    }
    if (!e && synor_gguf_find(g, "tokenizer.ggml.add_space_prefix") >= 0 &&
        synor_gguf_get_u32(g, "tokenizer.ggml.add_space_prefix", &space))
        space = 1;
    if (!e) {
        synor_tokenizer_spec sp = {.n = n,
                                   .pieces = pieces,
                                   .lens = lens,
                                   .scores = have_scores ? scores : NULL,
                                   .types = have_types ? types : NULL,
                                   .bos = (int32_t)bos,
                                   .eos = (int32_t)eos,
                                   .unk = (int32_t)unk,
                                   .add_space_prefix = space != 0};
        e = synor_tokenizer_create(&sp, &m->tok);
        if (e)
            e = synor__error(e, "%s: vocabulary: %s", path, synor_errmsg());
    }
    synor__free(pieces);
    synor__free(lens);
    synor__free(scores);
    synor__free(types);
    return e;
}

static int load_gguf(synor_llm *m, const char *path)
{
    int e = synor_gguf_open(path, &m->gguf);
    if (e)
        return e;
    const synor_gguf *g = m->gguf;
    const char *arch;
    size_t alen;
    if ((e = synor_gguf_get_str(g, "general.architecture", &arch, &alen)))
        return e;
    if (alen != 5 || memcmp(arch, "llama", 5) != 0)
        return synor__error(SYNOR_ENOTSUP,
                            "%s: general.architecture is '%.*s'; only 'llama' "
                            "is supported",
                            path, (int)alen, arch);
    uint32_t dim, hid, layers, heads, kv, ctx;
    float eps, base;
    if ((e = synor_gguf_get_u32(g, "llama.embedding_length", &dim)) ||
        (e = synor_gguf_get_u32(g, "llama.feed_forward_length", &hid)) ||
        (e = synor_gguf_get_u32(g, "llama.block_count", &layers)) ||
        (e = synor_gguf_get_u32(g, "llama.attention.head_count", &heads)) ||
        (e = u32_or(g, "llama.attention.head_count_kv", heads, &kv)) ||
        (e = synor_gguf_get_u32(g, "llama.context_length", &ctx)) ||
        (e = f32_or(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f, &eps)) ||
        (e = f32_or(g, "llama.rope.freq_base", 10000.0f, &base)))
        return e;
    const synor_gguf_tensor *te = synor_gguf_tensor_find(g, "token_embd.weight");
    if (!te || te->ndim != 2)
        return synor__error(SYNOR_ESCHEMA, "%s: tensor 'token_embd.weight' is %s", path,
                            te ? "not a matrix" : "missing");
    uint64_t big = 1u << 20;
    if (!dim || !hid || !layers || !heads || !kv || !ctx || dim > big || hid > big ||
        layers > 4096 || heads > dim || dim % heads || heads % kv || (dim / heads) % 2 ||
        te->ne[1] > (1u << 24) || ctx > (1u << 24))
        return synor__error(SYNOR_ESCHEMA,
                            "%s: inconsistent model: embedding %u, feed-forward "
                            "%u, %u blocks, %u heads, %u KV heads, context %u",
                            path, dim, hid, layers, heads, kv, ctx);
    m->cfg = (synor_llm_hparams){.dim = (int)dim,
                                 .hidden_dim = (int)hid,
                                 .n_layers = (int)layers,
                                 .n_heads = (int)heads,
                                 .n_kv_heads = (int)kv,
                                 .vocab_size = (int)te->ne[1],
                                 .seq_len = (int)ctx,
                                 .head_dim = (int)(dim / heads),
                                 .norm_eps = eps,
                                 .rope_base = base};
    int D = (int)dim, H = (int)hid, KV = (int)(dim / heads * kv), V = m->cfg.vocab_size;
    m->layers = synor__calloc(layers, sizeof *m->layers);
    m->owned = synor__calloc((size_t)(2 * layers + 1) * dim, sizeof(float));
    if (!m->layers || !m->owned)
        return SYNOR_ENOMEM;
    if ((e = mat_of_gguf(m, path, "token_embd.weight", V, D, &m->embd)) ||
        (e = vec_of_gguf(m, path, "output_norm.weight", D, m->owned, &m->rms_final)))
        return e;
    if (synor_gguf_tensor_find(g, "output.weight")) {
        if ((e = mat_of_gguf(m, path, "output.weight", V, D, &m->cls)))
            return e;
    } else {
        m->cls = m->embd;
        m->cfg.shared_classifier = 1;
    }
    for (int l = 0; l < (int)layers; l++) {
        llm_layer *L = &m->layers[l];
        char nm[8][64];
        static const char *const suf[8] = {"attn_q",   "attn_k",   "attn_v", "attn_output",
                                           "ffn_gate", "ffn_down", "ffn_up", "attn_norm"};
        for (int i = 0; i < 8; i++)
            snprintf(nm[i], sizeof nm[i], "blk.%d.%s.weight", l, suf[i]);
        char fn[64];
        snprintf(fn, sizeof fn, "blk.%d.ffn_norm.weight", l);
        float *spare = m->owned + (size_t)(1 + 2 * l) * dim;
        if ((e = mat_of_gguf(m, path, nm[0], D, D, &L->wq)) ||
            (e = mat_of_gguf(m, path, nm[1], KV, D, &L->wk)) ||
            (e = mat_of_gguf(m, path, nm[2], KV, D, &L->wv)) ||
            (e = mat_of_gguf(m, path, nm[3], D, D, &L->wo)) ||
            (e = mat_of_gguf(m, path, nm[4], H, D, &L->w1)) ||
            (e = mat_of_gguf(m, path, nm[5], D, H, &L->w2)) ||
            (e = mat_of_gguf(m, path, nm[6], H, D, &L->w3)) ||
            (e = vec_of_gguf(m, path, nm[7], D, spare, &L->rms_att)) ||
            (e = vec_of_gguf(m, path, fn, D, spare + dim, &L->rms_ffn)))
            return e;
    }
    snprintf(m->format, sizeof m->format, "gguf v%u", synor_gguf_version(g));
    return tokenizer_of_gguf(m, path);
}

static int l2c_mat(synor_llm *m, synor_l2c_weight w, int l, int rows, int cols, llm_mat *out)
{
    synor_l2c_tensor t;
    int e = synor_l2c_tensor_get(m->l2c, w, l, &t);
    if (e)
        return e;
    const synor_l2c_config *lc = synor_l2c_config_get(m->l2c);
    if (t.f32) {
        *out = (llm_mat){.type = SYNOR_TTYPE_F32,
                         .rows = rows,
                         .cols = cols,
                         .data = (const uint8_t *)t.f32,
                         .row_bytes = (size_t)cols * sizeof(float)};
        m->weight_bytes += t.n * sizeof(float);
    } else {
        *out = (llm_mat){.type = LLM_TTYPE_Q8G,
                         .rows = rows,
                         .cols = cols,
                         .data = (const uint8_t *)t.q,
                         .row_bytes = (size_t)cols,
                         .gscale = t.s,
                         .group = lc->group_size};
        m->weight_bytes += t.n + t.n / (uint64_t)lc->group_size * sizeof(float);
    }
    return 0;
}

static int l2c_vec(synor_llm *m, synor_l2c_weight w, int l, const float **out)
{
    synor_l2c_tensor t;
    int e = synor_l2c_tensor_get(m->l2c, w, l, &t);
    if (e)
        return e;
    *out = t.f32;
    m->weight_bytes += t.n * sizeof(float);
    return 0;
}

static int load_l2c(synor_llm *m, const char *path, const char *tok_path)
{
    int e = synor_l2c_open(path, &m->l2c);
    if (e)
        return e;
    const synor_l2c_config *lc = synor_l2c_config_get(m->l2c);
    if (lc->version == 2 && (lc->dim % lc->group_size || lc->hidden_dim % lc->group_size))
        return synor__error(SYNOR_ESCHEMA,
                            "%s: group_size %d does not divide dim %d and "
                            "hidden_dim %d",
                            path, lc->group_size, lc->dim, lc->hidden_dim);
    m->cfg = (synor_llm_hparams){.dim = lc->dim,
                                 .hidden_dim = lc->hidden_dim,
                                 .n_layers = lc->n_layers,
                                 .n_heads = lc->n_heads,
                                 .n_kv_heads = lc->n_kv_heads,
                                 .vocab_size = lc->vocab_size,
                                 .seq_len = lc->seq_len,
                                 .head_dim = lc->dim / lc->n_heads,
                                 .norm_eps = 1e-5f,
                                 .rope_base = 10000.0f,
                                 .shared_classifier = lc->shared_classifier};
    int D = lc->dim, H = lc->hidden_dim, KV = lc->dim / lc->n_heads * lc->n_kv_heads;
    int V = lc->vocab_size;
    m->layers = synor__calloc((size_t)lc->n_layers, sizeof *m->layers);
    if (!m->layers)
        return SYNOR_ENOMEM;
    if ((e = l2c_mat(m, SYNOR_L2C_TOKEN_EMBD, 0, V, D, &m->embd)) ||
        (e = l2c_vec(m, SYNOR_L2C_RMS_FINAL, 0, &m->rms_final)))
        return e;
    if (lc->shared_classifier)
        m->cls = m->embd;
    else if ((e = l2c_mat(m, SYNOR_L2C_WCLS, 0, V, D, &m->cls)))
        return e;
    for (int l = 0; l < lc->n_layers; l++) {
        llm_layer *L = &m->layers[l];
        if ((e = l2c_vec(m, SYNOR_L2C_RMS_ATT, l, &L->rms_att)) ||
            (e = l2c_vec(m, SYNOR_L2C_RMS_FFN, l, &L->rms_ffn)) ||
            (e = l2c_mat(m, SYNOR_L2C_WQ, l, D, D, &L->wq)) ||
            (e = l2c_mat(m, SYNOR_L2C_WK, l, KV, D, &L->wk)) ||
            (e = l2c_mat(m, SYNOR_L2C_WV, l, KV, D, &L->wv)) ||
            (e = l2c_mat(m, SYNOR_L2C_WO, l, D, D, &L->wo)) ||
            (e = l2c_mat(m, SYNOR_L2C_W1, l, H, D, &L->w1)) ||
            (e = l2c_mat(m, SYNOR_L2C_W2, l, D, H, &L->w2)) ||
            (e = l2c_mat(m, SYNOR_L2C_W3, l, H, D, &L->w3)))
            return e;
    }
    snprintf(m->format, sizeof m->format, "llama2.c v%d", lc->version);
    char buf[4096];
    if (!tok_path) {
        const char *slash = strrchr(path, '/');
        if (slash)
            snprintf(buf, sizeof buf, "%.*stokenizer.bin", (int)(slash - path + 1), path);
        else
            snprintf(buf, sizeof buf, "tokenizer.bin");
        tok_path = buf;
    }
    return synor_tokenizer_load_llama2c(tok_path, (size_t)V, &m->tok);
}

static const char *weight_type(const synor_llm *m)
{
    int t = m->layers[0].wq.type;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const llm_layer *L = &m->layers[l];
        const llm_mat *ms[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w1, &L->w2, &L->w3};
        for (int i = 0; i < 7; i++)
            if (ms[i]->type != t)
                return "mixed";
    }
    if (m->cls.type != t || m->embd.type != t)
        return "mixed";
    return t == LLM_TTYPE_Q8G ? "Q8 groups" : synor_ttype_name(t);
}

int synor__llm_drop_pages(const synor_llm *m, const void *p, size_t n)
{
    return m->gguf ? synor_gguf_drop_pages(m->gguf, p, n)
           : m->l2c ? synor_l2c_drop_pages(m->l2c, p, n)
                    : 0;
}

static pthread_mutex_t populate_mu = PTHREAD_MUTEX_INITIALIZER;

void synor__llm_populate(synor_llm *m)
{
    pthread_mutex_lock(&populate_mu);
    if (!m->populated) {
        m->populated = 1;
        /* best effort: without it the weights are read on demand; and not
         * for weights over half the machine's memory, which would push out
         * everything else first */
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        if (pages <= 0 || psz <= 0 || m->weight_bytes <= (uint64_t)pages * (uint64_t)psz / 2)
            (void)(m->gguf  ? synor_gguf_populate(m->gguf)
                   : m->l2c ? synor_l2c_populate(m->l2c)
                            : 0);
    }
    pthread_mutex_unlock(&populate_mu);
}

int synor_llm_load(const char *path, const synor_llm_load_opts *opts, synor_llm **out)
{
    if (!path || !out)
        return synor__error(SYNOR_EINVAL, "synor_llm_load: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f)
        return synor__error(SYNOR_EIO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char magic[4] = {0};
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    synor_llm *m = synor__calloc(1, sizeof *m);
    if (m && !(m->lazy = synor__calloc(1, sizeof *m->lazy))) {
        synor__free(m);
        m = NULL;
    }
    if (!m)
        return SYNOR_ENOMEM;
    m->eot = m->fim[0] = m->fim[1] = m->fim[2] = -1;
    int e = got == 4 && memcmp(magic, "GGUF", 4) == 0
                ? load_gguf(m, path)
                : load_l2c(m, path, opts ? opts->tokenizer : NULL);
    if (!e) {
        m->wtype = weight_type(m);
        m->no_pack = opts && opts->no_pack;
        *out = m;
        return 0;
    }
    synor_llm_destroy(m);
    return e;
}

void synor_llm_destroy(synor_llm *m)
{
    if (!m)
        return;
    synor_tokenizer_destroy(m->tok);
    synor__free(m->chat_template);
    synor_gguf_close(m->gguf);
    synor_l2c_close(m->l2c);
    synor__free(m->layers);
    synor__free(m->owned);
    synor__free(m->packed);
    if (m->lazy)
        synor__llm_pieces_free(m->lazy->pieces);
    synor__free(m->lazy);
    synor__free(m);
}

const synor_llm_hparams *synor_llm_hparams_get(const synor_llm *m) { return &m->cfg; }
const synor_tokenizer *synor_llm_tokenizer(const synor_llm *m) { return m->tok; }
const char *synor_llm_format(const synor_llm *m) { return m->format; }
const char *synor_llm_chat_template(const synor_llm *m) { return m->chat_template; }
int32_t synor_llm_eot(const synor_llm *m) { return m->eot; }

int synor_llm_fim(const synor_llm *m, int32_t out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = m->fim[i];
    return m->fim[0] >= 0 && m->fim[1] >= 0 && m->fim[2] >= 0;
}
const char *synor_llm_weight_type(const synor_llm *m) { return m->wtype; }
uint64_t synor_llm_weight_bytes(const synor_llm *m) { return m->weight_bytes; }
