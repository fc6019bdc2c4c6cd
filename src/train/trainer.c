/* trainer.c - the trainer: its memory, and one iteration as runtime tasks
 * (train.h's graph): the replicas' passes, the all-reduce in chunks, the
 * optimizer step in chunks. Tasks are ordered by one-float "step token"
 * handles, as the inference engine's steps are (llm/ctx.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "train/train_internal.h"

/* ------------------------------------------------------------- kernels */

typedef struct pass_args {
    int rep, backward;
} pass_args;

static void fail(synor_trainer *t, int code, const char *msg)
{
    pthread_mutex_lock(&t->lock);
    if (!t->err) {
        t->err = code;
        synor__strlcpy(t->errmsg, msg, sizeof t->errmsg);
    }
    pthread_mutex_unlock(&t->lock);
}

static int failed(synor_trainer *t)
{
    pthread_mutex_lock(&t->lock);
    int e = t->err;
    pthread_mutex_unlock(&t->lock);
    return e;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int k_pass(const synor_task_ctx *ctx)
{
    synor_trainer *t = ctx->user;
    const pass_args *a = ctx->args;
    train_replica *r = &t->rep[a->rep];
    r->loss_sum = 0; /* a replica without rows in this round adds nothing */
    r->pass_s = 0;
    if (failed(t) || !r->nrows)
        return 0;
    char msg[256];
    float scale = 1.0f / ((float)t->batch * (float)t->cfg.seq_len);
    const int32_t *tok = t->tokens + (size_t)r->row0 * (t->cfg.seq_len + 1);
    double t0 = mono_s();
    int e = synor__train_pass(t, r, tok, r->nrows, scale, a->backward, 0, msg, sizeof msg);
    r->pass_s = mono_s() - t0;
    if (e) {
        char m2[400];
        snprintf(m2, sizeof m2, "replica %d: %s", a->rep, msg);
        fail(t, e, m2);
    }
    return 0;
}

static int k_reduce(const synor_task_ctx *ctx)
{
    synor_trainer *t = ctx->user;
    int c = *(const int *)ctx->args;
    if (failed(t))
        return 0;
    size_t a = t->chunk[c], b = t->chunk[c + 1];
    float *g = t->grad;
    memcpy(g + a, t->rep[0].grad + a, (b - a) * sizeof(float));
    for (int r = 1; r < t->nrep; r++) {
        const float *gr = t->rep[r].grad;
        for (size_t i = a; i < b; i++)
            g[i] += gr[i];
    }
    double ss = 0;
    for (size_t i = a; i < b; i++)
        ss += (double)g[i] * g[i];
    t->sumsq[c] = ss;
    return 0;
}

static void adamw_range(synor_trainer *t, size_t a, size_t b, float clip, float wd, long k)
{
    const synor_train_adamw *o = &t->opt;
    float b1 = o->beta1, b2 = o->beta2, lr = t->lr;
    float bc1 = 1.0f - powf(b1, (float)k), bc2 = 1.0f - powf(b2, (float)k);
    float step = lr / bc1, sbc2 = sqrtf(bc2), keep = 1.0f - lr * wd;
    float *p = t->params, *m = t->m, *v = t->v;
    const float *g = t->grad;
    for (size_t i = a; i < b; i++) {
        float gi = g[i] * clip;
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        p[i] = p[i] * keep - step * (m[i] / (sqrtf(v[i]) / sbc2 + o->eps));
    }
}

static int k_adamw(const synor_task_ctx *ctx)
{
    synor_trainer *t = ctx->user;
    int c = *(const int *)ctx->args;
    if (failed(t))
        return 0;
    double ss = 0;
    for (int i = 0; i < TRAIN_CHUNKS; i++)
        ss += t->sumsq[i];
    double loss = 0;
    for (int r = 0; r < t->nrep; r++)
        loss += t->rep[r].loss_sum;
    if (!isfinite(ss) || !isfinite(loss))
        return 0; /* the driver names the operation; nothing is updated */
    double norm = sqrt(ss);
    /* as torch.nn.utils.clip_grad_norm_: max_norm / (norm + 1e-6), at most 1 */
    double coef = t->opt.grad_clip > 0 ? t->opt.grad_clip / (norm + 1e-6) : 1.0;
    float clip = coef < 1.0 ? (float)coef : 1.0f;
    if (c == 0)
        t->grad_norm = norm;
    long k = t->step + 1;
    size_t a = t->chunk[c], b = t->chunk[c + 1], at = a;
    for (int s = 0; s < t->ndecay && at < b; s++) {
        size_t s0 = t->decay[s].off, s1 = s0 + t->decay[s].n;
        if (s1 <= at)
            continue;
        if (s0 > at)
            adamw_range(t, at, s0 < b ? s0 : b, clip, 0.0f, k);
        if (s0 < b) {
            size_t from = s0 > at ? s0 : at, to = s1 < b ? s1 : b;
            adamw_range(t, from, to, clip, t->opt.weight_decay, k);
            at = to;
        } else {
            at = b;
        }
    }
    if (at < b)
        adamw_range(t, at, b, clip, 0.0f, k);
    return 0;
}

static const synor_kernel kern_pass = {
    .name = "train_fwdbwd", .op = SYNOR_OP_TRANSFORMER_LAYER, .fn = {[SYNOR_KIND_CPU] = k_pass}};
static const synor_kernel kern_reduce = {
    .name = "train_allreduce", .op = SYNOR_OP_ALL_REDUCE, .fn = {[SYNOR_KIND_CPU] = k_reduce}};
static const synor_kernel kern_adamw = {
    .name = "train_adamw", .op = SYNOR_OP_OPTIMIZER_STEP, .fn = {[SYNOR_KIND_CPU] = k_adamw}};

/* ------------------------------------------------------------- create */

static int reg_token(synor_trainer *t, float *f, synor_handle **h)
{
    synor_handle_desc d = {.ptr = f, .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {1}};
    return synor_handle_register(t->rt, &d, h);
}

int synor_trainer_create(synor_runtime *rt, const synor_train_config *cfg_in, int batch,
                         int replicas, synor_trainer **out)
{
    *out = NULL;
    if (!rt || !cfg_in)
        return synor__error(SYNOR_EINVAL, "trainer: NULL runtime or configuration");
    synor_train_config cfg = *cfg_in;
    int e = synor_train_config_check(&cfg);
    if (e)
        return e;
    if (batch <= 0 || batch > (1 << 20))
        return synor__error(SYNOR_EINVAL, "trainer: batch is %d (1 to %d sequences)", batch,
                            1 << 20);
    if (replicas <= 0) {
        replicas = (int)synor_runtime_worker_count(rt);
        if (replicas > TRAIN_MAX_REPLICAS)
            replicas = TRAIN_MAX_REPLICAS;
        if (replicas < 1)
            replicas = 1;
    }
    if (replicas > TRAIN_MAX_REPLICAS)
        return synor__error(SYNOR_EINVAL, "trainer: replicas is %d (at most %d)", replicas,
                            TRAIN_MAX_REPLICAS);
    if (replicas > batch)
        replicas = batch;
    if (!synor__blas())
        return SYNOR_ENOTSUP;
    synor_trainer *t = synor__calloc(1, sizeof *t);
    if (!t)
        return synor__error(SYNOR_ENOMEM, "trainer: out of memory");
    pthread_mutex_init(&t->lock, NULL);
    t->rt = rt;
    t->cfg = cfg;
    t->batch = batch;
    t->nrep = replicas;
    t->hs = cfg.dim / cfg.n_heads;
    t->kvd = t->hs * cfg.n_kv_heads;
    synor__train_layout(&cfg, &t->lay);
    size_t P = t->lay.total, T = (size_t)cfg.seq_len, half = (size_t)t->hs / 2;
    t->params = synor__calloc(P, sizeof(float));
    t->grad = synor__calloc(P, sizeof(float));
    t->m = synor__calloc(P, sizeof(float));
    t->v = synor__calloc(P, sizeof(float));
    t->rope_cos = synor__malloc(T * half * sizeof(float));
    t->rope_sin = synor__malloc(T * half * sizeof(float));
    if (!t->params || !t->grad || !t->m || !t->v || !t->rope_cos || !t->rope_sin) {
        synor_trainer_destroy(t);
        return synor__error(SYNOR_ENOMEM, "trainer: cannot allocate %zu parameters (4 copies)", P);
    }
    for (size_t p = 0; p < T; p++)
        for (size_t j = 0; j < half; j++) {
            /* llama2.c's run.c: freq = 1 / theta^(2j / head_size) */
            float freq = 1.0f / powf(cfg.rope_theta, (float)(2 * j) / (float)t->hs);
            float val = (float)p * freq;
            t->rope_cos[p * half + j] = cosf(val);
            t->rope_sin[p * half + j] = sinf(val);
        }
    for (int r = 0; r < replicas; r++) {
        train_replica *rp = &t->rep[r];
        rp->row0 = (int)((long)batch * r / replicas);
        rp->nrows = (int)((long)batch * (r + 1) / replicas) - rp->row0;
        rp->grad = synor__malloc(P * sizeof(float));
        if (!rp->grad || (e = synor__train_acts_alloc(t, &rp->a, rp->nrows)) ||
            (e = reg_token(t, &t->tokmem[r], &rp->tok))) {
            synor_trainer_destroy(t);
            return rp->grad ? e : synor__error(SYNOR_ENOMEM, "trainer: out of memory");
        }
    }
    for (int c = 0; c < TRAIN_CHUNKS; c++) {
        if ((e = reg_token(t, &t->tokmem[TRAIN_MAX_REPLICAS + c], &t->red[c])) ||
            (e = reg_token(t, &t->tokmem[TRAIN_MAX_REPLICAS + TRAIN_CHUNKS + c], &t->upd[c]))) {
            synor_trainer_destroy(t);
            return e;
        }
        /* on multiples of 16 floats: chunks never share a cache line */
        t->chunk[c + 1] = c + 1 == TRAIN_CHUNKS ? P : (P * (size_t)(c + 1) / TRAIN_CHUNKS) & ~15u;
    }
    const train_layout *l = &t->lay;
    t->decay[t->ndecay].off = l->off[SYNOR_L2C_TOKEN_EMBD];
    t->decay[t->ndecay++].n = l->size[SYNOR_L2C_TOKEN_EMBD];
    t->decay[t->ndecay].off = l->off[SYNOR_L2C_WQ];
    t->decay[t->ndecay++].n = l->off[SYNOR_L2C_RMS_FFN] - l->off[SYNOR_L2C_WQ];
    t->decay[t->ndecay].off = l->off[SYNOR_L2C_W1];
    t->decay[t->ndecay++].n = l->off[SYNOR_L2C_RMS_FINAL] - l->off[SYNOR_L2C_W1];
    if (!cfg.shared_classifier) {
        t->decay[t->ndecay].off = l->off[SYNOR_L2C_WCLS];
        t->decay[t->ndecay++].n = l->size[SYNOR_L2C_WCLS];
    }
    *out = t;
    return 0;
}

void synor_trainer_destroy(synor_trainer *t)
{
    if (!t)
        return;
    if (t->rt)
        synor_runtime_wait_all(t->rt);
    synor__train_gpu_free(t);
    synor__train_ocl_free(t);
    for (int r = 0; r < TRAIN_MAX_REPLICAS; r++) {
        synor_handle_unregister(t->rep[r].tok);
        synor__train_acts_free(&t->rep[r].a);
        synor__free(t->rep[r].grad);
    }
    for (int c = 0; c < TRAIN_CHUNKS; c++) {
        synor_handle_unregister(t->red[c]);
        synor_handle_unregister(t->upd[c]);
    }
    synor__free(t->params);
    synor__free(t->grad);
    synor__free(t->m);
    synor__free(t->v);
    synor__free(t->rope_cos);
    synor__free(t->rope_sin);
    pthread_mutex_destroy(&t->lock);
    synor__free(t);
}

const synor_train_config *synor_trainer_config(const synor_trainer *t) { return &t->cfg; }
int synor_trainer_replicas(const synor_trainer *t) { return t->nrep; }
int synor_trainer_batch(const synor_trainer *t) { return t->batch; }
float *synor_trainer_params(synor_trainer *t) { return t->params; }
const float *synor_trainer_grads(const synor_trainer *t) { return t->grad; }
float *synor_trainer_moment(synor_trainer *t, int which) { return which == 1 ? t->m : t->v; }
long synor_trainer_step_count(const synor_trainer *t) { return t->step; }
void synor_trainer_set_step_count(synor_trainer *t, long step) { t->step = step; }

/* ---------------------------------------------------------- parameters */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Box-Muller on two 53-bit uniforms: deterministic across machines. */
static void normal_fill(float *p, size_t n, float std, uint64_t *s)
{
    for (size_t i = 0; i < n; i += 2) {
        double u1 = ((double)(splitmix(s) >> 11) + 1.0) * 0x1p-53;
        double u2 = (double)(splitmix(s) >> 11) * 0x1p-53;
        double r = sqrt(-2.0 * log(u1));
        p[i] = (float)(std * r * cos(2 * M_PI * u2));
        if (i + 1 < n)
            p[i + 1] = (float)(std * r * sin(2 * M_PI * u2));
    }
}

void synor_trainer_init_params(synor_trainer *t, uint64_t seed)
{
    const train_layout *l = &t->lay;
    int L = t->cfg.n_layers;
    float std = 0.02f, resid = 0.02f / sqrtf(2.0f * (float)L);
    uint64_t s = seed;
    for (int w = 0; w <= SYNOR_L2C_WCLS; w++) {
        if (w == SYNOR_L2C_WCLS && t->cfg.shared_classifier)
            continue;
        int per_layer =
            w != SYNOR_L2C_TOKEN_EMBD && w != SYNOR_L2C_RMS_FINAL && w != SYNOR_L2C_WCLS;
        size_t n = l->size[w] * (per_layer ? (size_t)L : 1);
        float *p = t->params + l->off[w];
        if (w == SYNOR_L2C_RMS_ATT || w == SYNOR_L2C_RMS_FFN || w == SYNOR_L2C_RMS_FINAL) {
            for (size_t i = 0; i < n; i++)
                p[i] = 1.0f;
        } else {
            normal_fill(p, n, w == SYNOR_L2C_WO || w == SYNOR_L2C_W2 ? resid : std, &s);
        }
    }
    memset(t->m, 0, l->total * sizeof(float));
    memset(t->v, 0, l->total * sizeof(float));
    t->step = 0;
}

/* ---------------------------------------------------------------- steps */

int synor__trainer_submit(synor_trainer *t, const int32_t *tokens, synor_handle *batch,
                          int backward, int update)
{
    t->tokens = tokens;
    synor__train_gpu_params_changed(t); /* the caller or the last step changed them */
    synor__train_ocl_params_changed(t);
    for (int c = 0; c < TRAIN_CHUNKS; c++)
        t->sumsq[c] = 0;
    for (int r = 0; r < t->nrep; r++) {
        pass_args a = {.rep = r, .backward = backward};
        synor_task_spec s = {.kernel = &kern_pass,
                             .priority = SYNOR_PRIORITY_NORMAL,
                             .args = &a,
                             .args_size = sizeof a,
                             .user = t};
        s.data[s.ndata] = t->rep[r].tok;
        s.mode[s.ndata++] = SYNOR_ACCESS_W;
        for (int c = 0; c < TRAIN_CHUNKS; c++) {
            s.data[s.ndata] = t->upd[c];
            s.mode[s.ndata++] = SYNOR_ACCESS_R;
        }
        if (batch) {
            s.data[s.ndata] = batch;
            s.mode[s.ndata++] = SYNOR_ACCESS_R;
        }
        int e = synor_task_submit(t->rt, &s);
        if (e)
            return e;
    }
    for (int c = 0; backward && c < TRAIN_CHUNKS; c++) {
        synor_task_spec s = {.kernel = &kern_reduce,
                             .priority = SYNOR_PRIORITY_HIGH,
                             .args = &c,
                             .args_size = sizeof c,
                             .user = t};
        for (int r = 0; r < t->nrep; r++) {
            s.data[s.ndata] = t->rep[r].tok;
            s.mode[s.ndata++] = SYNOR_ACCESS_R;
        }
        s.data[s.ndata] = t->red[c];
        s.mode[s.ndata++] = SYNOR_ACCESS_W;
        int e = synor_task_submit(t->rt, &s);
        if (e)
            return e;
    }
    for (int c = 0; update && c < TRAIN_CHUNKS; c++) {
        synor_task_spec s = {.kernel = &kern_adamw,
                             .priority = SYNOR_PRIORITY_HIGH,
                             .args = &c,
                             .args_size = sizeof c,
                             .user = t};
        for (int i = 0; i < TRAIN_CHUNKS; i++) {
            s.data[s.ndata] = t->red[i];
            s.mode[s.ndata++] = SYNOR_ACCESS_R;
        }
        s.data[s.ndata] = t->upd[c];
        s.mode[s.ndata++] = SYNOR_ACCESS_W;
        int e = synor_task_submit(t->rt, &s);
        if (e)
            return e;
    }
    return 0;
}

/* After a step whose loss or gradient norm is not finite: runs each
 * replica's pass again (the parameters were not updated) checking every
 * operation's output, to name the first that produced one. */
static int diagnose(synor_trainer *t, const int32_t *tokens, int backward)
{
    char msg[300];
    float scale = 1.0f / ((float)t->batch * (float)t->cfg.seq_len);
    for (int r = 0; r < t->nrep; r++) {
        train_replica *rp = &t->rep[r];
        const int32_t *tok = tokens + (size_t)rp->row0 * (t->cfg.seq_len + 1);
        int e = synor__train_pass(t, rp, tok, rp->nrows, scale, backward, 1, msg, sizeof msg);
        if (e)
            return synor__error(e, "trainer: NaN or infinity in replica %d (batch rows %d-%d): %s",
                                r, rp->row0, rp->row0 + rp->nrows - 1, msg);
    }
    return synor__error(SYNOR_ERANGE, "trainer: the loss or the gradient norm is not finite");
}

int synor__trainer_run_step(synor_trainer *t, const int32_t *tokens, synor_handle *batch,
                            int backward, int update, double *loss)
{
    pthread_mutex_lock(&t->lock);
    t->err = 0;
    pthread_mutex_unlock(&t->lock);
    t->grad_norm = NAN;
    int e = synor__trainer_submit(t, tokens, batch, backward, update);
    int w = synor_runtime_wait_all(t->rt);
    if (e)
        return e;
    if (w)
        return w;
    if ((e = failed(t)))
        return synor__error(e, "trainer: %s", t->errmsg);
    double sum = 0, ss = 0;
    for (int r = 0; r < t->nrep; r++)
        sum += t->rep[r].loss_sum;
    for (int c = 0; c < TRAIN_CHUNKS; c++)
        ss += t->sumsq[c];
    *loss = sum / ((double)t->batch * t->cfg.seq_len);
    if (!isfinite(*loss) || (backward && !isfinite(ss)))
        return diagnose(t, tokens, backward);
    if (backward)
        t->grad_norm = sqrt(ss);
    return 0;
}

int synor_trainer_grad(synor_trainer *t, const int32_t *tokens, double *loss)
{
    return synor__trainer_run_step(t, tokens, NULL, 1, 0, loss);
}

int synor_trainer_step(synor_trainer *t, const int32_t *tokens, const synor_train_adamw *o,
                       synor_train_step_info *info)
{
    t->opt = *o;
    t->lr = synor_train_lr(o, t->step);
    double loss = 0;
    int e = synor__trainer_run_step(t, tokens, NULL, 1, 1, &loss);
    if (e)
        return e;
    if (info)
        *info = (synor_train_step_info){
            .step = t->step, .loss = loss, .grad_norm = t->grad_norm, .lr = t->lr};
    t->step++;
    return 0;
}

int synor_trainer_eval(synor_trainer *t, const int32_t *tokens, int rows, double *loss)
{
    if (rows <= 0)
        return synor__error(SYNOR_EINVAL, "trainer: eval over %d rows", rows);
    int T = t->cfg.seq_len;
    double sum = 0;
    int saved[TRAIN_MAX_REPLICAS][2], done = 0;
    for (int r = 0; r < t->nrep; r++) {
        saved[r][0] = t->rep[r].row0;
        saved[r][1] = t->rep[r].nrows;
    }
    int e = 0;
    while (done < rows && !e) {
        int n = rows - done < t->batch ? rows - done : t->batch;
        /* the round's rows over the replicas in order, each at most its
         * activations' capacity (its share of a full batch) */
        for (int r = 0, at = 0; r < t->nrep; r++) {
            int k = n - at < saved[r][1] ? n - at : saved[r][1];
            t->rep[r].row0 = at;
            t->rep[r].nrows = k;
            at += k;
        }
        double l;
        e = synor__trainer_run_step(t, tokens + (size_t)done * (T + 1), NULL, 0, 0, &l);
        if (!e)
            sum += l * ((double)t->batch * T);
        done += n;
    }
    for (int r = 0; r < t->nrep; r++) {
        t->rep[r].row0 = saved[r][0];
        t->rep[r].nrows = saved[r][1];
    }
    if (!e)
        *loss = sum / ((double)rows * T);
    return e;
}
