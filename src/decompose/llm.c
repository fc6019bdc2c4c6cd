/* llm.c - LLM inference and training workloads from hyper-parameters
 * (synor/decompose.h).
 *
 * Counting conventions (so tests can check them by hand): a multiply-add is
 * 2 FLOPs; T = batch x tokens; s = bytes per element of the data type.
 * Per layer the weights are Wq (H x h.d), Wk and Wv (H x g.d each), Wo
 * (h.d x H), the three SwiGLU matrices (3 H F) and two norm vectors (2 H).
 * The work of each task comes from op_work.c (synor_op_derive); this file
 * only chooses operations, shapes and the data flowing between them.
 * Data sizes: hidden states T H s; the KV cache of a layer 2 T g d s;
 * tokens 4 bytes each (int32 ids); text 4 bytes per token. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "decompose/llm_internal.h"

typedef struct preset {
    const char *name;
    synor_llm_config c;
} preset;

/* Llama 2 (Touvron et al. 2023, table 1 and the released configs);
 * stories15M is Karpathy's llama2.c TinyStories model. */
static const preset PRESETS[] = {
    {"llama-2-7b", {"Llama-2-7B", 32, 32, 32, 4096, 11008, 32000, 4096, SYNOR_DTYPE_BF16}},
    {"llama-2-70b", {"Llama-2-70B", 80, 64, 8, 8192, 28672, 32000, 4096, SYNOR_DTYPE_BF16}},
    {"tiny", {"stories15M", 6, 6, 6, 288, 768, 32000, 256, SYNOR_DTYPE_FP32}},
};

size_t synor_llm_preset_count(void) { return SYNOR__ARRAY_LEN(PRESETS); }

const char *synor_llm_preset_name(size_t i)
{
    return i < SYNOR__ARRAY_LEN(PRESETS) ? PRESETS[i].name : NULL;
}

int synor_llm_preset(const char *name, synor_llm_config *out)
{
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(PRESETS); i++)
        if (synor__strcaseeq(name, PRESETS[i].name) || synor__strcaseeq(name, PRESETS[i].c.name)) {
            *out = PRESETS[i].c;
            return 0;
        }
    return synor__error(SYNOR_ENOENT, "no model preset \"%s\" (llama-2-7b, llama-2-70b, tiny)",
                        name);
}

double synor__llm_layer_params(const synor_llm_config *m)
{
    double H = (double)m->hidden, d = (double)(m->hidden / m->heads);
    return H * d * (double)m->heads * 2 + H * d * (double)m->kv_heads * 2 + 3 * H * (double)m->ffn +
           2 * H;
}

double synor_llm_params(const synor_llm_config *m)
{
    return (double)m->layers * synor__llm_layer_params(m) +
           2.0 * (double)m->vocab * (double)m->hidden + (double)m->hidden;
}

static int check_model(const synor_llm_config *m)
{
    if (m->layers <= 0 || m->heads <= 0 || m->hidden <= 0 || m->ffn <= 0 || m->vocab <= 0 ||
        m->context <= 0)
        return synor__error(SYNOR_EINVAL, "model \"%s\": every dimension must be positive",
                            m->name ? m->name : "?");
    if (m->hidden % m->heads)
        return synor__error(SYNOR_EINVAL,
                            "model \"%s\": hidden %lld is not a multiple of %lld heads",
                            m->name ? m->name : "?", (long long)m->hidden, (long long)m->heads);
    int64_t g = m->kv_heads ? m->kv_heads : m->heads;
    if (g <= 0 || m->heads % g)
        return synor__error(SYNOR_EINVAL, "model \"%s\": heads must be a multiple of kv_heads",
                            m->name ? m->name : "?");
    return 0;
}

/* ------------------------------------------------------------ builder */

size_t synor__llm_data(synor__gen *G, uint64_t bytes, const char *fmt, ...)
{
    char name[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    size_t i = 0;
    if (!G->rc)
        G->rc = synor_workload_add_data(G->w, name, bytes, &i);
    return i;
}

void synor__llm_spec(synor__tspec *t, synor_op_type type, synor_dtype dt, synor_priority prio,
                     int pref, int fb)
{
    memset(t, 0, sizeof *t);
    t->op.type = type;
    t->op.dtype = dt;
    t->prio = prio;
    t->pref = pref;
    t->fb = fb;
}

size_t synor__llm_add(synor__gen *G, synor__tspec *t, const size_t *extra_cons, size_t n_extra)
{
    if (G->rc)
        return 0;
    if ((G->rc = synor_op_derive(&t->op)))
        return 0;
    t->op.sequential = t->op.type == SYNOR_OP_TOKENIZATION ||
                       t->op.type == SYNOR_OP_DETOKENIZATION || t->op.type == SYNOR_OP_SAMPLING ||
                       t->op.type == SYNOR_OP_DECODE_STEP || t->op.type == SYNOR_OP_DATA_LOAD ||
                       t->op.type == SYNOR_OP_CHECKPOINT;
    const size_t *cons = t->cons;
    size_t n_cons = t->n_cons;
    if (n_extra) {
        cons = extra_cons;
        n_cons = n_extra;
    }
    synor_task_desc d;
    memset(&d, 0, sizeof d);
    d.id = t->id;
    d.op = t->op;
    d.priority = t->prio;
    d.deps = t->deps;
    d.n_deps = t->n_deps;
    d.produces = t->prod;
    d.n_produces = t->n_prod;
    d.consumes = cons;
    d.n_consumes = n_cons;
    d.workspace = t->workspace;
    d.has_preferred = t->pref != 0;
    d.preferred = t->pref ? (synor_kind)(t->pref - 1) : SYNOR_KIND_CPU;
    d.has_fallback = t->fb != 0;
    d.fallback = t->fb ? (synor_kind)(t->fb - 1) : SYNOR_KIND_CPU;
    d.group = t->group;
    size_t idx = 0;
    G->rc = synor_workload_add_task(G->w, &d, &idx);
    return idx;
}

uint64_t synor__llm_hidden_bytes(const synor__gen *G, int64_t batch, int64_t tokens)
{
    return (uint64_t)((double)batch * (double)tokens * (double)G->m->hidden * G->s);
}

uint64_t synor__llm_kv_bytes(const synor__gen *G, int64_t batch, int64_t tokens)
{
    return (uint64_t)(2.0 * (double)batch * (double)tokens * (double)G->g * (double)G->d * G->s);
}

void synor__llm_layer_dims(const synor__gen *G, synor_op *op, int64_t batch, int64_t seq,
                           int64_t kv_len)
{
    const synor_llm_config *m = G->m;
    op->dims.batch = batch;
    op->dims.seq = seq;
    op->dims.kv_len = kv_len;
    op->dims.heads = m->heads;
    op->dims.kv_heads = G->g;
    op->dims.head_dim = G->d;
    op->dims.hidden = m->hidden;
    op->dims.ffn = m->ffn;
}

int synor__llm_start(synor__gen *G, const synor_llm_config *m, const char *what, synor_workload **w)
{
    memset(G, 0, sizeof *G);
    int rc = check_model(m);
    if (rc)
        return rc;
    G->m = m;
    G->s = synor_dtype_bits(m->dtype) / 8.0;
    G->d = m->hidden / m->heads;
    G->g = m->kv_heads ? m->kv_heads : m->heads;
    char name[128];
    snprintf(name, sizeof name, "%s %s", m->name ? m->name : "model", what);
    if ((rc = synor_workload_create(name, w)))
        return rc;
    G->w = *w;
    return 0;
}

int synor__llm_finish(synor__gen *G, synor_workload **out)
{
    if (!G->rc)
        G->rc = synor_workload_finish(G->w);
    if (G->rc) {
        synor_workload_destroy(G->w);
        return G->rc;
    }
    *out = G->w;
    return 0;
}

size_t synor__llm_tokenize(synor__gen *G, int64_t batch, int64_t prompt, size_t text)
{
    /* on the CPU: string processing */
    synor__tspec t;
    size_t ids = synor__llm_data(G, (uint64_t)(4 * batch * prompt), "tokens.prompt");
    synor__llm_spec(&t, SYNOR_OP_TOKENIZATION, SYNOR_DTYPE_INT8, SYNOR_PRIORITY_HIGH,
                    SYNOR__KIND(CPU), 0);
    snprintf(t.id, sizeof t.id, "tokenize");
    t.op.dims.elements = 4 * batch * prompt;
    t.cons[t.n_cons++] = text;
    t.prod[t.n_prod++] = ids;
    synor__llm_add(G, &t, NULL, 0);
    return ids;
}

void synor__llm_detokenize(synor__gen *G, int64_t batch, int64_t new_tokens, const size_t *tok)
{
    /* every generated token, on the CPU */
    synor__tspec t;
    size_t out_text = synor__llm_data(G, (uint64_t)(4 * batch * new_tokens), "text.out");
    synor__llm_spec(&t, SYNOR_OP_DETOKENIZATION, SYNOR_DTYPE_INT8, SYNOR_PRIORITY_NORMAL,
                    SYNOR__KIND(CPU), 0);
    snprintf(t.id, sizeof t.id, "detokenize");
    t.op.dims.elements = 4 * batch * new_tokens;
    t.prod[t.n_prod++] = out_text;
    synor__llm_add(G, &t, tok, (size_t)new_tokens);
}

/* ------------------------------------------------------------ inference */

int synor_decompose_llm_inference(const synor_llm_config *m, int64_t batch, int64_t prompt,
                                  int64_t new_tokens, synor_workload **out)
{
    synor__gen G;
    synor_workload *w;
    int rc;
    if (batch <= 0 || prompt <= 0 || new_tokens <= 0)
        return synor__error(SYNOR_EINVAL, "batch, prompt and new tokens must be positive");
    if (prompt + new_tokens > m->context)
        return synor__error(SYNOR_EINVAL,
                            "prompt %lld + new tokens %lld exceed the context of %lld",
                            (long long)prompt, (long long)new_tokens, (long long)m->context);
    if ((rc = synor__llm_start(&G, m, "inference", &w)))
        return rc;
    const int64_t L = m->layers, H = m->hidden;
    const synor_dtype dt = m->dtype;
    uint64_t wl = (uint64_t)(synor__llm_layer_params(m) * G.s);
    uint64_t wemb = (uint64_t)((double)m->vocab * (double)H * G.s);
    size_t text = synor__llm_data(&G, (uint64_t)(4 * batch * prompt), "text");
    size_t w_emb = synor__llm_data(&G, wemb, "w.embed");
    size_t w_out = synor__llm_data(&G, wemb + (uint64_t)(H * G.s), "w.output");
    size_t *w_layer = synor__calloc((size_t)L, sizeof *w_layer);
    size_t *kv = synor__calloc((size_t)L, sizeof *kv);
    size_t *tok = synor__calloc((size_t)new_tokens, sizeof *tok);
    if (!w_layer || !kv || !tok) {
        synor__free(w_layer);
        synor__free(kv);
        synor__free(tok);
        synor_workload_destroy(w);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    for (int64_t l = 0; l < L; l++)
        w_layer[l] = synor__llm_data(&G, wl, "w.layer%lld", (long long)l);
    synor__tspec t;
    size_t ids = synor__llm_tokenize(&G, batch, prompt, text);
    /* embedding lookup: memory-bound gather */
    size_t h = synor__llm_data(&G, synor__llm_hidden_bytes(&G, batch, prompt), "h.prefill.0");
    synor__llm_spec(&t, SYNOR_OP_EMBEDDING, dt, SYNOR_PRIORITY_HIGH, SYNOR__KIND(GPU), 0);
    snprintf(t.id, sizeof t.id, "embed.prompt");
    t.op.dims.batch = batch;
    t.op.dims.seq = prompt;
    t.op.dims.hidden = H;
    t.cons[t.n_cons++] = ids;
    t.cons[t.n_cons++] = w_emb;
    t.prod[t.n_prod++] = h;
    synor__llm_add(&G, &t, NULL, 0);
    /* prefill: every prompt token through each layer at once */
    for (int64_t l = 0; l < L; l++) {
        size_t hn = synor__llm_data(&G, synor__llm_hidden_bytes(&G, batch, prompt),
                                    "h.prefill.%lld", (long long)l + 1);
        kv[l] =
            synor__llm_data(&G, synor__llm_kv_bytes(&G, batch, prompt), "kv.%lld", (long long)l);
        synor__llm_spec(&t, SYNOR_OP_TRANSFORMER_LAYER, dt, SYNOR_PRIORITY_CRITICAL,
                        SYNOR__KIND(TPU), SYNOR__KIND(GPU));
        snprintf(t.id, sizeof t.id, "prefill.%lld", (long long)l);
        synor__llm_layer_dims(&G, &t.op, batch, prompt, prompt);
        t.cons[t.n_cons++] = h;
        t.cons[t.n_cons++] = w_layer[l];
        t.prod[t.n_prod++] = hn;
        t.prod[t.n_prod++] = kv[l];
        synor__llm_add(&G, &t, NULL, 0);
        h = hn;
    }
    /* each generated token: (embedding, layers,) output projection, sampling */
    for (int64_t k = 0; k < new_tokens; k++) {
        if (k > 0) { /* the first token comes from the prefill */
            size_t hn = synor__llm_data(&G, synor__llm_hidden_bytes(&G, batch, 1), "h.%lld.0",
                                        (long long)k);
            synor__llm_spec(&t, SYNOR_OP_EMBEDDING, dt, SYNOR_PRIORITY_HIGH, SYNOR__KIND(GPU), 0);
            snprintf(t.id, sizeof t.id, "embed.%lld", (long long)k);
            t.op.dims.batch = batch;
            t.op.dims.seq = 1;
            t.op.dims.hidden = H;
            t.cons[t.n_cons++] = tok[k - 1];
            t.cons[t.n_cons++] = w_emb;
            t.prod[t.n_prod++] = hn;
            synor__llm_add(&G, &t, NULL, 0);
            h = hn;
            for (int64_t l = 0; l < L; l++) {
                hn = synor__llm_data(&G, synor__llm_hidden_bytes(&G, batch, 1), "h.%lld.%lld",
                                     (long long)k, (long long)l + 1);
                synor__llm_spec(&t, SYNOR_OP_DECODE_STEP, dt, SYNOR_PRIORITY_CRITICAL,
                                SYNOR__KIND(LPU), SYNOR__KIND(GPU));
                snprintf(t.id, sizeof t.id, "decode.%lld.%lld", (long long)k, (long long)l);
                synor__llm_layer_dims(&G, &t.op, batch, 1, prompt + k);
                t.op.dims.layers = 1;
                t.cons[t.n_cons++] = h;
                t.cons[t.n_cons++] = w_layer[l];
                t.cons[t.n_cons++] = kv[l];
                t.prod[t.n_prod++] = hn;
                /* the cache grows by one token per step where it lives */
                t.workspace = synor__llm_kv_bytes(&G, batch, new_tokens);
                synor__llm_add(&G, &t, NULL, 0);
                h = hn;
            }
        }
        /* logits of the last position only */
        size_t logits = synor__llm_data(&G, (uint64_t)((double)batch * (double)m->vocab * G.s),
                                        "logits.%lld", (long long)k);
        synor__llm_spec(&t, SYNOR_OP_OUTPUT_PROJECTION, dt, SYNOR_PRIORITY_CRITICAL,
                        SYNOR__KIND(LPU), SYNOR__KIND(GPU));
        snprintf(t.id, sizeof t.id, "lm_head.%lld", (long long)k);
        t.op.dims.batch = batch;
        t.op.dims.seq = 1;
        t.op.dims.hidden = H;
        t.op.dims.vocab = m->vocab;
        t.cons[t.n_cons++] = h;
        t.cons[t.n_cons++] = w_out;
        t.prod[t.n_prod++] = logits;
        synor__llm_add(&G, &t, NULL, 0);
        tok[k] = synor__llm_data(&G, (uint64_t)(4 * batch), "token.%lld", (long long)k);
        synor__llm_spec(&t, SYNOR_OP_SAMPLING, dt, SYNOR_PRIORITY_CRITICAL, SYNOR__KIND(LPU),
                        SYNOR__KIND(GPU));
        snprintf(t.id, sizeof t.id, "sample.%lld", (long long)k);
        t.op.dims.elements = batch * m->vocab;
        t.cons[t.n_cons++] = logits;
        t.prod[t.n_prod++] = tok[k];
        synor__llm_add(&G, &t, NULL, 0);
    }
    synor__llm_detokenize(&G, batch, new_tokens, tok);
    synor__free(w_layer);
    synor__free(kv);
    synor__free(tok);
    return synor__llm_finish(&G, out);
}

/* ------------------------------------------------------------- training */

/* One forward task of the training graph, remembered for its backward. */
typedef struct fwd {
    size_t task;
    size_t in;     /* activation it consumed (kept for the backward) */
    size_t weight; /* external weight, or (size_t)-1 */
    uint64_t out_bytes;
} fwd;

int synor_decompose_llm_training(const synor_llm_config *m, int64_t batch, int64_t seq,
                                 synor_workload **out)
{
    synor__gen G;
    synor_workload *w;
    int rc;
    if (batch <= 0 || seq <= 0 || seq > m->context)
        return synor__error(SYNOR_EINVAL, "batch must be positive and seq in [1, context]");
    if ((rc = synor__llm_start(&G, m, "training iteration", &w)))
        return rc;
    const int64_t L = m->layers, H = m->hidden, T = batch * seq;
    const synor_dtype dt = m->dtype;
    const int64_t qkv_n = (m->heads + 2 * G.g) * G.d;
    size_t n_fwd = 0, cap = (size_t)(4 * L + 4);
    fwd *F = synor__calloc(cap, sizeof *F);
    size_t *grads = synor__calloc(cap, sizeof *grads);
    if (!F || !grads) {
        synor__free(F);
        synor__free(grads);
        synor_workload_destroy(w);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    size_t n_grads = 0;
    synor__tspec t;
    size_t raw = synor__llm_data(&G, (uint64_t)(4 * T), "batch.raw");
    size_t loaded = synor__llm_data(&G, (uint64_t)(4 * T), "batch.loaded");
    synor__llm_spec(&t, SYNOR_OP_DATA_LOAD, SYNOR_DTYPE_INT8, SYNOR_PRIORITY_HIGH, SYNOR__KIND(CPU),
                    0);
    snprintf(t.id, sizeof t.id, "data_load");
    t.op.dims.elements = 4 * T;
    t.cons[t.n_cons++] = raw;
    t.prod[t.n_prod++] = loaded;
    synor__llm_add(&G, &t, NULL, 0);
    size_t prep = synor__llm_data(&G, (uint64_t)(4 * T), "batch.text");
    synor__llm_spec(&t, SYNOR_OP_DATA_PREPROCESS, SYNOR_DTYPE_INT8, SYNOR_PRIORITY_HIGH,
                    SYNOR__KIND(CPU), 0);
    snprintf(t.id, sizeof t.id, "preprocess");
    t.op.dims.elements = 4 * T;
    t.cons[t.n_cons++] = loaded;
    t.prod[t.n_prod++] = prep;
    synor__llm_add(&G, &t, NULL, 0);
    size_t ids = synor__llm_data(&G, (uint64_t)(4 * T), "batch.tokens");
    synor__llm_spec(&t, SYNOR_OP_TOKENIZATION, SYNOR_DTYPE_INT8, SYNOR_PRIORITY_HIGH,
                    SYNOR__KIND(CPU), 0);
    snprintf(t.id, sizeof t.id, "tokenize");
    t.op.dims.elements = 4 * T;
    t.cons[t.n_cons++] = prep;
    t.prod[t.n_prod++] = ids;
    synor__llm_add(&G, &t, NULL, 0);
    uint64_t hb = synor__llm_hidden_bytes(&G, batch, seq);
    size_t w_emb = synor__llm_data(&G, (uint64_t)((double)m->vocab * H * G.s), "w.embed");
    size_t h = synor__llm_data(&G, hb, "act.embed");
    synor__llm_spec(&t, SYNOR_OP_EMBEDDING, dt, SYNOR_PRIORITY_HIGH, SYNOR__KIND(GPU), 0);
    snprintf(t.id, sizeof t.id, "embed");
    t.op.dims.batch = batch;
    t.op.dims.seq = seq;
    t.op.dims.hidden = H;
    t.cons[t.n_cons++] = ids;
    t.cons[t.n_cons++] = w_emb;
    t.prod[t.n_prod++] = h;
    F[n_fwd++] = (fwd){synor__llm_add(&G, &t, NULL, 0), ids, w_emb, hb};
    for (int64_t l = 0; l < L; l++) {
        /* QKV projection (matmul), attention (flash), output projection
         * (matmul), feed-forward: the four pieces of a layer */
        struct {
            const char *what;
            synor_op_type op;
            int64_t mm_n, mm_k;
            uint64_t wbytes, obytes;
            int pref, fb;
        } part[4] = {
            {"qkv", SYNOR_OP_MATMUL, qkv_n, H, (uint64_t)((double)H * qkv_n * G.s),
             (uint64_t)((double)T * qkv_n * G.s), SYNOR__KIND(TPU), SYNOR__KIND(GPU)},
            {"attn", SYNOR_OP_FLASH_ATTENTION, 0, 0, 0,
             (uint64_t)((double)T * m->heads * G.d * G.s), SYNOR__KIND(TPU), SYNOR__KIND(GPU)},
            {"wo", SYNOR_OP_MATMUL, H, m->heads * G.d, (uint64_t)((double)m->heads * G.d * H * G.s),
             hb, SYNOR__KIND(TPU), SYNOR__KIND(GPU)},
            {"ffn", SYNOR_OP_FEED_FORWARD, 0, 0, (uint64_t)(3.0 * H * m->ffn * G.s), hb,
             SYNOR__KIND(GPU), 0},
        };
        for (int p = 0; p < 4; p++) {
            size_t wt = (size_t)-1, o;
            if (part[p].wbytes)
                wt = synor__llm_data(&G, part[p].wbytes, "w.%lld.%s", (long long)l, part[p].what);
            o = synor__llm_data(&G, part[p].obytes, "act.%lld.%s", (long long)l, part[p].what);
            synor__llm_spec(&t, part[p].op, dt, SYNOR_PRIORITY_CRITICAL, part[p].pref, part[p].fb);
            snprintf(t.id, sizeof t.id, "%s.%lld", part[p].what, (long long)l);
            if (part[p].op == SYNOR_OP_MATMUL) {
                t.op.dims.m = T;
                t.op.dims.n = part[p].mm_n;
                t.op.dims.k = part[p].mm_k;
            } else {
                synor__llm_layer_dims(&G, &t.op, batch, seq, seq);
            }
            t.cons[t.n_cons++] = h;
            if (wt != (size_t)-1)
                t.cons[t.n_cons++] = wt;
            t.prod[t.n_prod++] = o;
            F[n_fwd++] = (fwd){synor__llm_add(&G, &t, NULL, 0), h, wt, part[p].obytes};
            h = o;
        }
    }
    size_t w_out = synor__llm_data(&G, (uint64_t)((double)m->vocab * H * G.s), "w.output");
    size_t logits = synor__llm_data(&G, (uint64_t)((double)T * m->vocab * G.s), "act.logits");
    synor__llm_spec(&t, SYNOR_OP_OUTPUT_PROJECTION, dt, SYNOR_PRIORITY_HIGH, SYNOR__KIND(GPU), 0);
    snprintf(t.id, sizeof t.id, "lm_head");
    t.op.dims.batch = batch;
    t.op.dims.seq = seq;
    t.op.dims.hidden = H;
    t.op.dims.vocab = m->vocab;
    t.cons[t.n_cons++] = h;
    t.cons[t.n_cons++] = w_out;
    t.prod[t.n_prod++] = logits;
    F[n_fwd++] =
        (fwd){synor__llm_add(&G, &t, NULL, 0), h, w_out, (uint64_t)((double)T * m->vocab * G.s)};
    size_t loss = synor__llm_data(&G, (uint64_t)((double)T * m->vocab * G.s), "grad.logits");
    synor__llm_spec(&t, SYNOR_OP_CROSS_ENTROPY_LOSS, dt, SYNOR_PRIORITY_HIGH, SYNOR__KIND(GPU), 0);
    snprintf(t.id, sizeof t.id, "loss");
    t.op.dims.batch = batch;
    t.op.dims.seq = seq;
    t.op.dims.vocab = m->vocab;
    t.cons[t.n_cons++] = logits;
    t.prod[t.n_prod++] = loss;
    synor__llm_add(&G, &t, NULL, 0);
    /* backward in reverse: each consumes the gradient flowing back and the
     * activation its forward consumed; produces the input gradient and the
     * weight gradient */
    size_t grad = loss;
    for (size_t k = n_fwd; k-- > 0 && !G.rc;) {
        const synor_task *ft = synor_workload_task(w, F[k].task);
        synor__llm_spec(&t, ft->op.type, ft->op.dtype, ft->priority,
                        ft->has_preferred ? ft->preferred + 1 : 0,
                        ft->has_fallback ? ft->fallback + 1 : 0);
        t.op.dims = ft->op.dims;
        t.op.backward = 1;
        snprintf(t.id, sizeof t.id, "d.%s", ft->id);
        t.cons[t.n_cons++] = grad;
        t.cons[t.n_cons++] = F[k].in;
        if (F[k].weight != (size_t)-1) {
            t.cons[t.n_cons++] = F[k].weight;
            grads[n_grads] = synor__llm_data(&G, synor_workload_data(w, F[k].weight)->bytes,
                                             "grad.%s", synor_workload_data(w, F[k].weight)->name);
            t.prod[t.n_prod++] = grads[n_grads++];
        }
        if (k > 0) { /* the embedding's input gradient goes nowhere */
            grad = synor__llm_data(&G, synor_workload_data(w, F[k].in)->bytes, "grad.%s",
                                   synor_workload_data(w, F[k].in)->name);
            t.prod[t.n_prod++] = grad;
        }
        synor__llm_add(&G, &t, NULL, 0);
    }
    double params = synor_llm_params(m);
    size_t reduced = synor__llm_data(&G, (uint64_t)(params * 4), "grad.reduced");
    synor__llm_spec(&t, SYNOR_OP_ALL_REDUCE, SYNOR_DTYPE_FP32, SYNOR_PRIORITY_CRITICAL,
                    SYNOR__KIND(CPU), 0);
    snprintf(t.id, sizeof t.id, "all_reduce");
    t.op.dims.elements = (int64_t)params;
    t.prod[t.n_prod++] = reduced;
    synor__llm_add(&G, &t, grads, n_grads);
    size_t updated = synor__llm_data(&G, (uint64_t)(params * G.s), "w.updated");
    size_t state = synor__llm_data(&G, (uint64_t)(params * 4 * 3), "adamw.state");
    synor__llm_spec(&t, SYNOR_OP_OPTIMIZER_STEP, SYNOR_DTYPE_FP32, SYNOR_PRIORITY_HIGH,
                    SYNOR__KIND(GPU), 0);
    snprintf(t.id, sizeof t.id, "adamw");
    t.op.dims.elements = (int64_t)params;
    t.cons[t.n_cons++] = reduced;
    t.cons[t.n_cons++] = state;
    t.prod[t.n_prod++] = updated;
    synor__llm_add(&G, &t, NULL, 0);
    size_t ckpt = synor__llm_data(&G, (uint64_t)(params * G.s), "checkpoint.file");
    synor__llm_spec(&t, SYNOR_OP_CHECKPOINT, dt, SYNOR_PRIORITY_LOW, SYNOR__KIND(CPU), 0);
    snprintf(t.id, sizeof t.id, "checkpoint");
    t.op.dims.elements = (int64_t)params;
    t.cons[t.n_cons++] = updated;
    t.prod[t.n_prod++] = ckpt;
    synor__llm_add(&G, &t, NULL, 0);
    synor__free(F);
    synor__free(grads);
    return synor__llm_finish(&G, out);
}
