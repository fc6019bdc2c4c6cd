/* model.c - the trained model's shape: configuration checks, the
 * parameter layout (llama2.c's order), the learning-rate schedule. */
#include <math.h>

#include "train/train_internal.h"

int synor_train_config_check(synor_train_config *c)
{
    const struct {
        const char *name;
        int v;
    } pos[] = {
        {"dim", c->dim},         {"hidden_dim", c->hidden_dim}, {"n_layers", c->n_layers},
        {"n_heads", c->n_heads}, {"n_kv_heads", c->n_kv_heads}, {"vocab_size", c->vocab_size},
        {"seq_len", c->seq_len}};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(pos); i++)
        /* bounds that keep every size product, and a checkpoint's byte
         * count, within 64 bits */
        if (pos[i].v <= 0 || pos[i].v > (1 << 20))
            return synor__error(SYNOR_EINVAL, "train config: %s is %d (must be 1 to %d)",
                                pos[i].name, pos[i].v, 1 << 20);
    if (c->dim % c->n_heads || (c->dim / c->n_heads) % 2)
        return synor__error(SYNOR_EINVAL,
                            "train config: n_heads %d must divide dim %d into an even head size",
                            c->n_heads, c->dim);
    if (c->n_heads % c->n_kv_heads)
        return synor__error(SYNOR_EINVAL, "train config: n_kv_heads %d must divide n_heads %d",
                            c->n_kv_heads, c->n_heads);
    if (c->shared_classifier != 0 && c->shared_classifier != 1)
        return synor__error(SYNOR_EINVAL, "train config: shared_classifier is %d (0 or 1)",
                            c->shared_classifier);
    if (c->rope_theta == 0)
        c->rope_theta = 10000.0f;
    if (c->norm_eps == 0)
        c->norm_eps = 1e-5f;
    if (!(c->rope_theta > 0) || !(c->norm_eps > 0) || !isfinite(c->rope_theta) ||
        !isfinite(c->norm_eps))
        return synor__error(SYNOR_EINVAL,
                            "train config: rope_theta %g and norm_eps %g must be "
                            "positive",
                            (double)c->rope_theta, (double)c->norm_eps);
    return 0;
}

void synor__train_layout(const synor_train_config *c, train_layout *lay)
{
    size_t D = (size_t)c->dim, H = (size_t)c->hidden_dim, V = (size_t)c->vocab_size;
    size_t KVD = D / (size_t)c->n_heads * (size_t)c->n_kv_heads, L = (size_t)c->n_layers;
    size_t per[SYNOR_L2C_WCLS + 1] = {
        [SYNOR_L2C_TOKEN_EMBD] = V * D, [SYNOR_L2C_RMS_ATT] = D,   [SYNOR_L2C_WQ] = D * D,
        [SYNOR_L2C_WK] = KVD * D,       [SYNOR_L2C_WV] = KVD * D,  [SYNOR_L2C_WO] = D * D,
        [SYNOR_L2C_RMS_FFN] = D,        [SYNOR_L2C_W1] = H * D,    [SYNOR_L2C_W2] = D * H,
        [SYNOR_L2C_W3] = H * D,         [SYNOR_L2C_RMS_FINAL] = D, [SYNOR_L2C_WCLS] = V * D};
    size_t off = 0;
    for (int w = 0; w <= SYNOR_L2C_WCLS; w++) {
        int per_layer =
            w != SYNOR_L2C_TOKEN_EMBD && w != SYNOR_L2C_RMS_FINAL && w != SYNOR_L2C_WCLS;
        lay->size[w] = per[w];
        if (w == SYNOR_L2C_WCLS && c->shared_classifier) {
            lay->off[w] = lay->off[SYNOR_L2C_TOKEN_EMBD];
            continue;
        }
        lay->off[w] = off;
        off += per[w] * (per_layer ? L : 1);
    }
    lay->total = off;
}

size_t synor_train_param_count(const synor_train_config *cfg)
{
    train_layout lay;
    synor__train_layout(cfg, &lay);
    return lay.total;
}

size_t synor_train_param_offset(const synor_train_config *cfg, synor_l2c_weight w, int layer)
{
    train_layout lay;
    synor__train_layout(cfg, &lay);
    int per_layer = w != SYNOR_L2C_TOKEN_EMBD && w != SYNOR_L2C_RMS_FINAL && w != SYNOR_L2C_WCLS;
    return lay.off[w] + (per_layer ? (size_t)layer * lay.size[w] : 0);
}

size_t synor_train_param_size(const synor_train_config *cfg, synor_l2c_weight w)
{
    train_layout lay;
    synor__train_layout(cfg, &lay);
    return lay.size[w];
}

void synor_train_adamw_init(synor_train_adamw *o, int steps)
{
    *o = (synor_train_adamw){.lr = 1e-3f,
                             .min_lr = 1e-4f,
                             .warmup = steps < 1000 ? steps / 10 : 100,
                             .decay_steps = steps,
                             .beta1 = 0.9f,
                             .beta2 = 0.95f,
                             .eps = 1e-8f,
                             .weight_decay = 0.1f,
                             .grad_clip = 1.0f};
}

float synor_train_lr(const synor_train_adamw *o, long step)
{
    if (o->warmup > 0 && step < o->warmup)
        return o->lr * (float)(step + 1) / (float)o->warmup;
    if (step >= o->decay_steps || o->decay_steps <= o->warmup)
        return step >= o->decay_steps ? o->min_lr : o->lr;
    double f = (double)(step - o->warmup) / (double)(o->decay_steps - o->warmup);
    double c = 0.5 * (1.0 + cos(M_PI * f));
    return (float)(o->min_lr + c * (o->lr - o->min_lr));
}
