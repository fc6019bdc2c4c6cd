/* synth.c - models with deterministic generated weights: the same weights
 * written as GGUF (any supported type) or as a llama2.c checkpoint, so the
 * engine can be compared with llama2.c and llama.cpp on identical models
 * without shipping anyone's weights or vocabulary.
 *
 * Weight (w, layer) is a stream of a splitmix64 generator seeded with
 * (seed, w, layer): uniform in [-1, 1) times 1/sqrt(inputs) for matrices
 * (so a product keeps its input's scale), times 1 for the embedding, and
 * 1 + uniform * 0.1 for norm weights. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "llm/llm_internal.h"

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct gen {
    const synor_llm_synth *s;
    float *buf;
} gen;

static const float *generate(synor_l2c_weight w, int layer, void *ctx)
{
    gen *g = ctx;
    const synor_llm_hparams *c = &g->s->cfg;
    if (w == SYNOR_L2C_WCLS && c->shared_classifier)
        return NULL;
    uint64_t rows, cols;
    synor__llm_weight_shape(c, w, &rows, &cols);
    uint64_t st = g->s->seed ^ ((uint64_t)w << 48) ^ ((uint64_t)(layer + 1) << 32);
    int norm = w == SYNOR_L2C_RMS_ATT || w == SYNOR_L2C_RMS_FFN || w == SYNOR_L2C_RMS_FINAL;
    float scale = norm ? 0.1f : w == SYNOR_L2C_TOKEN_EMBD ? 1.0f : 1.0f / sqrtf((float)cols);
    for (uint64_t i = 0; i < rows * cols; i++) {
        float u = (float)(splitmix(&st) >> 40) / 8388608.0f - 1.0f; /* [-1, 1) */
        g->buf[i] = norm ? 1.0f + u * scale : u * scale;
    }
    return g->buf;
}

static int check_cfg(const synor_llm_hparams *c)
{
    if (c->dim <= 0 || c->hidden_dim <= 0 || c->n_layers <= 0 || c->n_heads <= 0 ||
        c->n_kv_heads <= 0 || c->vocab_size <= 0 || c->seq_len <= 0 || c->dim % c->n_heads ||
        c->n_heads % c->n_kv_heads || (c->dim / c->n_heads) % 2 || c->dim > (1 << 16) ||
        c->hidden_dim > (1 << 18) || c->vocab_size > (1 << 20) || c->n_layers > 256 ||
        c->seq_len > (1 << 20))
        return synor__error(SYNOR_EINVAL,
                            "synthetic model: inconsistent configuration: dim %d, "
                            "hidden %d, %d layers, %d heads, %d KV heads, vocab "
                            "%d, context %d",
                            c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                            c->vocab_size, c->seq_len);
    return 0;
}

/* The chat templates synth writes: a Jinja text of each family's markers
 * (what serve's template.c recognises), and the control pieces it adds. */
static const struct {
    const char *name, *jinja, *pieces[2];
} families[] = {
    {"chatml",
     "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
     "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
     "{{ '<|im_start|>assistant\\n' }}{% endif %}",
     {"<|im_start|>", "<|im_end|>"}},
    {"llama2",
     "{% for message in messages %}{% if message['role'] == 'system' %}{{ '<<SYS>>\\n' + "
     "message['content'] + '\\n<</SYS>>\\n\\n' }}{% elif message['role'] == 'user' %}"
     "{{ bos_token + '[INST] ' + message['content'] + ' [/INST]' }}{% else %}{{ ' ' + "
     "message['content'] + ' ' + eos_token }}{% endif %}{% endfor %}",
     {NULL, NULL}},
    {"zephyr",
     "{% for message in messages %}{% if message['role'] == 'user' %}{{ '<|user|>\\n' + "
     "message['content'] + eos_token + '\\n' }}{% elif message['role'] == 'system' %}"
     "{{ '<|system|>\\n' + message['content'] + eos_token + '\\n' }}{% else %}"
     "{{ '<|assistant|>\\n' + message['content'] + eos_token + '\\n' }}{% endif %}"
     "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}",
     {NULL, NULL}},
};

static const char *const fim_pieces[4] = {"<PRE>", "<SUF>", "<MID>", "<EOT>"};

static int family_of(const synor_llm_synth *s)
{
    for (int i = 0; s->chat_template && i < (int)(sizeof families / sizeof *families); i++)
        if (!strcmp(s->chat_template, families[i].name))
            return i;
    return -1;
}

/* The vocabulary: trained on the text (or bytes only), the chat template's
 * control pieces after it, padded with unused pieces to vocab_size. */
static int vocab(const synor_llm_synth *s, synor_tokenizer **out)
{
    synor_tokenizer *t = NULL;
    size_t V = (size_t)s->cfg.vocab_size, nx = 0;
    const char *extra[6];
    int f = family_of(s);
    for (int i = 0; f >= 0 && i < 2 && families[f].pieces[i]; i++)
        extra[nx++] = families[f].pieces[i];
    for (int i = 0; s->fim && i < 4; i++)
        extra[nx++] = fim_pieces[i];
    int e = synor_tokenizer_train(s->text ? s->text : "", s->text ? s->text_len : 0,
                                  V > nx ? V - nx : V, &t);
    if (e)
        return e;
    size_t n = synor_tokenizer_size(t);
    if (n == V && !nx) {
        *out = t;
        return 0;
    }
    if (n + nx > V) {
        synor_tokenizer_destroy(t);
        return synor__error(SYNOR_EINVAL,
                            "synthetic model: the vocabulary needs %zu pieces, "
                            "vocab_size is %zu",
                            n + nx, V);
    }
    const char **pieces = synor__calloc(V, sizeof *pieces);
    size_t *lens = synor__calloc(V, sizeof *lens);
    float *scores = synor__calloc(V, sizeof *scores);
    int32_t *types = synor__calloc(V, sizeof *types);
    char *names = synor__calloc(V - n, 24);
    e = pieces && lens && scores && types && names ? 0 : SYNOR_ENOMEM;
    for (size_t i = 0; i < V && !e; i++) {
        if (i < n) {
            pieces[i] = synor_tokenizer_piece(t, (int32_t)i, &lens[i]);
            scores[i] = synor_tokenizer_score(t, (int32_t)i);
            types[i] = synor_tokenizer_type(t, (int32_t)i);
        } else if (i < n + nx) {
            pieces[i] = extra[i - n];
            lens[i] = strlen(pieces[i]);
            types[i] = SYNOR_TOKEN_CONTROL;
        } else {
            char *nm = names + (i - n) * 24;
            snprintf(nm, 24, "<unused%zu>", i - n);
            pieces[i] = nm;
            lens[i] = strlen(nm);
            scores[i] = -1e9f;
            types[i] = SYNOR_TOKEN_UNUSED;
        }
    }
    if (!e) {
        synor_tokenizer_spec sp = {
            V, pieces, lens, scores, types, synor_tokenizer_bos(t), synor_tokenizer_eos(t), 0, 1};
        e = synor_tokenizer_create(&sp, out);
    }
    synor__free(pieces);
    synor__free(lens);
    synor__free(scores);
    synor__free(types);
    synor__free(names);
    synor_tokenizer_destroy(t);
    return e;
}

static int gen_init(gen *g, const synor_llm_synth *s)
{
    const synor_llm_hparams *c = &s->cfg;
    size_t biggest = (size_t)c->vocab_size * (size_t)c->dim;
    size_t ffn = (size_t)c->hidden_dim * (size_t)c->dim;
    g->s = s;
    g->buf = synor__malloc((biggest > ffn ? biggest : ffn) * sizeof(float));
    return g->buf ? 0 : SYNOR_ENOMEM;
}

int synor_llm_synth_gguf(const synor_llm_synth *s, synor_ttype type, const char *path)
{
    int e = check_cfg(&s->cfg);
    if (e)
        return e;
    gen g;
    synor_tokenizer *tok = NULL;
    if ((e = gen_init(&g, s)))
        return e;
    int f = family_of(s);
    if (s->chat_template && f < 0)
        e = synor__error(SYNOR_EINVAL, "synthetic model: chat template \"%s\" is not one of "
                                       "chatml, llama2, zephyr",
                         s->chat_template);
    if (!e)
        e = vocab(s, &tok);
    llm_gguf_extra x = {f >= 0 ? families[f].jinja : NULL, -1, {-1, -1, -1}};
    if (tok && f >= 0)
        x.eot = synor_tokenizer_find(tok, "<|im_end|>", 10);
    for (int i = 0; tok && s->fim && i < 3; i++)
        x.fim[i] = synor_tokenizer_find(tok, fim_pieces[i], 5);
    if (tok && s->fim)
        x.eot = synor_tokenizer_find(tok, fim_pieces[3], 5);
    if (!e)
        e = synor__llm_gguf_save(path, &s->cfg, tok, &x, NULL, type, generate, &g);
    synor_tokenizer_destroy(tok);
    synor__free(g.buf);
    return e;
}

int synor_llm_synth_llama2c(const synor_llm_synth *s, const char *path, const char *tokenizer_path)
{
    int e = check_cfg(&s->cfg);
    if (e)
        return e;
    gen g;
    synor_tokenizer *tok = NULL;
    if ((e = gen_init(&g, s)))
        return e;
    synor_l2c_config lc = {.dim = s->cfg.dim,
                           .hidden_dim = s->cfg.hidden_dim,
                           .n_layers = s->cfg.n_layers,
                           .n_heads = s->cfg.n_heads,
                           .n_kv_heads = s->cfg.n_kv_heads,
                           .vocab_size = s->cfg.vocab_size,
                           .seq_len = s->cfg.seq_len,
                           .shared_classifier = s->cfg.shared_classifier,
                           .version = 0};
    e = vocab(s, &tok);
    if (!e)
        e = synor_l2c_write(path, &lc, generate, &g);
    if (!e)
        e = synor_tokenizer_save_llama2c(tok, tokenizer_path);
    synor_tokenizer_destroy(tok);
    synor__free(g.buf);
    return e;
}
