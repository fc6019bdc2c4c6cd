/* run.c - a training run: the loop of train.h's graph with the batch of
 * the next step prepared by a task while this step computes, checkpoints
 * snapshotted by a task after the optimizer step and written by another
 * while the next step computes, evaluation, progress, resumption. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "train/train_internal.h"

typedef struct run_ctx {
    synor_trainer *t;
    const synor_train_data *d;
    uint64_t seed;
    int32_t *batch[2];
    float tok[3]; /* batch slots 0 and 1; the snapshot */
    synor_handle *batch_h[2], *snap_h;
    /* the checkpoint in flight: its state and path, set before its tasks
     * are submitted (one at a time: every step waits for all tasks) */
    synor_train_state st;
    char path[4096];
    unsigned char *snap;
    size_t snap_bytes;
    /* written checkpoints, oldest first, for keeping the newest */
    char (*kept)[4096];
    int nkept, keep;
    pthread_mutex_t lock;
    int err;
    char errmsg[600];
} run_ctx;

typedef struct load_args {
    int slot;
    long step;
} load_args;

static void run_fail(run_ctx *r, int code, const char *msg)
{
    pthread_mutex_lock(&r->lock);
    if (!r->err) {
        r->err = code;
        synor__strlcpy(r->errmsg, msg, sizeof r->errmsg);
    }
    pthread_mutex_unlock(&r->lock);
}

/* path was written: it becomes the newest of those kept (a rewritten one
 * moves there), and the oldest beyond keep are deleted. */
static void keep_newest(run_ctx *r, const char *path)
{
    for (int i = 0; i < r->nkept; i++)
        if (!strcmp(r->kept[i], path)) {
            memmove(r->kept[i], r->kept[i + 1], (size_t)(r->nkept - i - 1) * sizeof r->kept[0]);
            r->nkept--;
            break;
        }
    if (r->nkept == r->keep) {
        unlink(r->kept[0]);
        memmove(r->kept[0], r->kept[1], (size_t)(r->keep - 1) * sizeof r->kept[0]);
        r->nkept--;
    }
    synor__strlcpy(r->kept[r->nkept++], path, sizeof r->kept[0]);
}

static int k_load(const synor_task_ctx *ctx)
{
    run_ctx *r = ctx->user;
    const load_args *a = ctx->args;
    synor_train_data_batch(r->d, r->seed, a->step, r->t->batch, r->t->cfg.seq_len,
                           r->batch[a->slot]);
    return 0;
}

static int k_snapshot(const synor_task_ctx *ctx)
{
    run_ctx *r = ctx->user;
    synor_trainer *t = r->t;
    synor__train_ckpt_build(r->snap, &t->cfg, &r->st, t->params, t->m, t->v, t->lay.total);
    return 0;
}

static int k_write(const synor_task_ctx *ctx)
{
    run_ctx *r = ctx->user;
    int e = synor__write_file_atomic(r->path, (const char *)r->snap, r->snap_bytes);
    if (e) {
        run_fail(r, e, synor_errmsg());
        return 0;
    }
    pthread_mutex_lock(&r->lock);
    keep_newest(r, r->path);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

static const synor_kernel kern_load = {
    .name = "train_load_batch", .op = SYNOR_OP_DATA_LOAD, .fn = {[SYNOR_KIND_CPU] = k_load}};
static const synor_kernel kern_snapshot = {
    .name = "train_snapshot", .op = SYNOR_OP_CHECKPOINT, .fn = {[SYNOR_KIND_CPU] = k_snapshot}};
static const synor_kernel kern_write = {.name = "train_write_checkpoint",
                                        .op = SYNOR_OP_CHECKPOINT,
                                        .fn = {[SYNOR_KIND_CPU] = k_write}};

static int submit_load(run_ctx *r, long step)
{
    load_args a = {.slot = (int)(step % 2), .step = step};
    synor_task_spec s = {.kernel = &kern_load,
                         .priority = SYNOR_PRIORITY_HIGH,
                         .args = &a,
                         .args_size = sizeof a,
                         .user = r,
                         .ndata = 1};
    s.data[0] = r->batch_h[a.slot];
    s.mode[0] = SYNOR_ACCESS_W;
    return synor_task_submit(r->t->rt, &s);
}

static int submit_checkpoint(run_ctx *r)
{
    synor_trainer *t = r->t;
    synor_task_spec s = {.kernel = &kern_snapshot, .priority = SYNOR_PRIORITY_HIGH, .user = r};
    for (int c = 0; c < TRAIN_CHUNKS; c++) {
        s.data[s.ndata] = t->upd[c];
        s.mode[s.ndata++] = SYNOR_ACCESS_R;
    }
    s.data[s.ndata] = r->snap_h;
    s.mode[s.ndata++] = SYNOR_ACCESS_W;
    int e = synor_task_submit(t->rt, &s);
    if (e)
        return e;
    synor_task_spec w = {
        .kernel = &kern_write, .priority = SYNOR_PRIORITY_LOW, .user = r, .ndata = 1};
    w.data[0] = r->snap_h;
    w.mode[0] = SYNOR_ACCESS_RW;
    return synor_task_submit(t->rt, &w);
}

/* ckpt-<step>.bin files of dir, newest first. */
static int ckpt_list(const char *dir, long **steps, int *n)
{
    *steps = NULL;
    *n = 0;
    DIR *dp = opendir(dir);
    if (!dp)
        return 0;
    struct dirent *de;
    int cap = 0;
    while ((de = readdir(dp))) {
        long s;
        char tail[8];
        if (sscanf(de->d_name, "ckpt-%ld.bi%1s", &s, tail) != 2 || strcmp(tail, "n") || s < 0)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            long *nw = synor__realloc(*steps, (size_t)cap * sizeof(long));
            if (!nw) {
                closedir(dp);
                return synor__error(SYNOR_ENOMEM, "out of memory");
            }
            *steps = nw;
        }
        (*steps)[(*n)++] = s;
    }
    closedir(dp);
    for (int i = 1; i < *n; i++) /* newest first */
        for (int j = i; j > 0 && (*steps)[j] > (*steps)[j - 1]; j--) {
            long x = (*steps)[j];
            (*steps)[j] = (*steps)[j - 1];
            (*steps)[j - 1] = x;
        }
    return 0;
}

int synor_train_ckpt_latest(const char *dir, char *path, size_t cap, synor_train_config *cfg,
                            synor_train_state *st)
{
    long *steps;
    int n, e = ckpt_list(dir, &steps, &n);
    if (e)
        return e;
    e = SYNOR_ENOENT;
    for (int i = 0; i < n && e; i++) {
        snprintf(path, cap, "%s/ckpt-%ld.bin", dir, steps[i]);
        e = synor_train_ckpt_peek(path, cfg, st) ? SYNOR_ENOENT : 0;
    }
    synor__free(steps);
    return e ? synor__error(e, "%s: no checkpoint that verifies", dir) : 0;
}

static int resume(run_ctx *r, const synor_train_run_opts *o, synor_train_state *st)
{
    long *steps;
    int n, e = ckpt_list(o->ckpt_dir, &steps, &n);
    if (e)
        return e;
    int loaded = 0;
    for (int i = 0; i < n && !loaded; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/ckpt-%ld.bin", o->ckpt_dir, steps[i]);
        if (synor_trainer_load(r->t, path, st) == 0) {
            loaded = 1;
            fprintf(stderr, "synor train: resuming from %s (step %ld)\n", path, st->step);
        } else {
            fprintf(stderr, "synor train: skipping %s: %s\n", path, synor_errmsg());
        }
    }
    /* the checkpoints already there count towards those kept */
    for (int i = n - 1; i >= 0; i--) {
        char path[4096];
        snprintf(path, sizeof path, "%s/ckpt-%ld.bin", o->ckpt_dir, steps[i]);
        keep_newest(r, path);
    }
    synor__free(steps);
    return loaded;
}

static void run_free(run_ctx *r)
{
    synor_runtime_wait_all(r->t->rt);
    for (int i = 0; i < 2; i++) {
        synor_handle_unregister(r->batch_h[i]);
        synor__free(r->batch[i]);
    }
    synor_handle_unregister(r->snap_h);
    synor__free(r->snap);
    synor__free(r->kept);
    pthread_mutex_destroy(&r->lock);
}

int synor_train_run(synor_trainer *t, const synor_train_data *d, const synor_train_run_opts *o)
{
    const synor_train_config *c = &t->cfg;
    if (o->steps <= 0)
        return synor__error(SYNOR_EINVAL, "train run: steps is %d (must be positive)", o->steps);
    if (o->resume && !o->ckpt_dir)
        return synor__error(SYNOR_EINVAL, "train run: resume needs a checkpoint directory");
    for (size_t i = 0; i < d->n; i++)
        if (d->ids[i] < 0 || d->ids[i] >= c->vocab_size)
            return synor__error(SYNOR_EINVAL,
                                "train run: token %d at %zu is out of the model's "
                                "vocabulary of %d",
                                d->ids[i], i, c->vocab_size);
    run_ctx r = {.t = t, .d = d, .seed = o->seed, .keep = o->ckpt_keep > 0 ? o->ckpt_keep : 2};
    pthread_mutex_init(&r.lock, NULL);
    size_t W = (size_t)c->seq_len + 1;
    int eval_rows = o->eval_rows > 0 ? o->eval_rows : 32, e = 0;
    int32_t *val = synor__malloc((size_t)eval_rows * W * sizeof(int32_t));
    r.snap_bytes = synor__train_ckpt_bytes(t->lay.total);
    r.kept = synor__calloc((size_t)r.keep, sizeof *r.kept);
    for (int i = 0; i < 2; i++)
        r.batch[i] = synor__malloc((size_t)t->batch * W * sizeof(int32_t));
    if (o->ckpt_dir)
        r.snap = synor__malloc(r.snap_bytes);
    if (!val || !r.kept || !r.batch[0] || !r.batch[1] || (o->ckpt_dir && !r.snap)) {
        synor__free(val);
        run_free(&r);
        return synor__error(SYNOR_ENOMEM, "train run: out of memory");
    }
    synor_handle_desc hd = {.dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {1}};
    for (int i = 0; i < 3 && !e; i++) {
        hd.ptr = &r.tok[i];
        e = synor_handle_register(t->rt, &hd, i < 2 ? &r.batch_h[i] : &r.snap_h);
    }
    synor_train_state st = {.seed = o->seed, .batch = t->batch, .replicas = t->nrep, .opt = o->opt};
    int resumed = 0;
    if (!e && o->resume && (resumed = resume(&r, o, &st)) < 0)
        e = resumed;
    if (!e && resumed && (st.batch != t->batch || st.seed != o->seed))
        e = synor__error(SYNOR_EINVAL,
                         "train run: the checkpoint was trained with batch %d and "
                         "seed %llu; this run has %d and %llu",
                         st.batch, (unsigned long long)st.seed, t->batch,
                         (unsigned long long)o->seed);
    if (!e && resumed && st.replicas != t->nrep)
        fprintf(stderr,
                "synor train: the checkpoint ran %d replicas, this run %d: the loss curve "
                "continues, not bit for bit\n",
                st.replicas, t->nrep);
    if (!e && !resumed)
        synor_trainer_init_params(t, o->seed);
    int nval = e ? 0 : synor_train_data_val(d, eval_rows, c->seq_len, val);
    t->opt = o->opt;
    st.opt = o->opt;
    st.replicas = t->nrep;
    double t0 = synor__now_s(), base_elapsed = st.elapsed_s, val_loss = NAN;
    long first = t->step;
    int stopped = 0;
    if (!e && first < o->steps)
        e = submit_load(&r, first);
    for (long s = first; !e && s < o->steps; s++) {
        if (s + 1 < o->steps && (e = submit_load(&r, s + 1)))
            break;
        t->lr = synor_train_lr(&t->opt, s);
        double loss;
        e = synor__trainer_run_step(t, r.batch[s % 2], r.batch_h[s % 2], 1, 1, &loss);
        if (e) {
            char m[600];
            synor__strlcpy(m, synor_errmsg(), sizeof m);
            e = synor__error(e, "step %ld: %s", s, m);
            break;
        }
        pthread_mutex_lock(&r.lock);
        e = r.err;
        pthread_mutex_unlock(&r.lock);
        if (e) {
            e = synor__error(e, "checkpoint: %s", r.errmsg);
            break;
        }
        t->step = s + 1;
        st.step = s + 1;
        st.tokens += (uint64_t)t->batch * (uint64_t)c->seq_len;
        double now = synor__now_s();
        st.elapsed_s = base_elapsed + (now - t0);
        synor_train_progress p = {.step = s + 1,
                                  .steps = o->steps,
                                  .loss = loss,
                                  .grad_norm = t->grad_norm,
                                  .lr = t->lr,
                                  .elapsed_s = st.elapsed_s};
        p.tokens_per_s = (double)(s + 1 - first) * t->batch * c->seq_len / (now - t0);
        p.eta_s = (now - t0) / (double)(s + 1 - first) * (double)(o->steps - s - 1);
        int last = s + 1 == o->steps;
        if (nval > 0 && (last || (o->eval_every > 0 && (s + 1) % o->eval_every == 0))) {
            if ((e = synor_trainer_eval(t, val, nval, &val_loss)))
                break;
            p.evaluated = 1;
        }
        p.val_loss = val_loss;
        if (o->ckpt_dir && (last || (o->ckpt_every > 0 && (s + 1) % o->ckpt_every == 0))) {
            r.st = st;
            snprintf(r.path, sizeof r.path, "%s/ckpt-%ld.bin", o->ckpt_dir, s + 1);
            if ((e = submit_checkpoint(&r)))
                break;
            p.checkpoint = r.path;
        }
        if (o->progress && o->progress(&p, o->progress_ctx)) {
            stopped = 1;
            break;
        }
    }
    int w = synor_runtime_wait_all(t->rt);
    if (!e && w)
        e = w;
    if (!e && r.err)
        e = synor__error(r.err, "checkpoint: %s", r.errmsg);
    synor__free(val);
    run_free(&r);
    return e ? e : stopped;
}

static const float *l2c_get(synor_l2c_weight w, int layer, void *ctx)
{
    synor_trainer *t = ctx;
    return t->params + synor_train_param_offset(&t->cfg, w, layer);
}

int synor_trainer_export_l2c(synor_trainer *t, const char *path)
{
    const synor_train_config *c = &t->cfg;
    synor_l2c_config lc = {.dim = c->dim,
                           .hidden_dim = c->hidden_dim,
                           .n_layers = c->n_layers,
                           .n_heads = c->n_heads,
                           .n_kv_heads = c->n_kv_heads,
                           .vocab_size = c->vocab_size,
                           .seq_len = c->seq_len,
                           .shared_classifier = c->shared_classifier,
                           .version = 0};
    synor_runtime_wait_all(t->rt);
    return synor_l2c_write(path, &lc, l2c_get, t);
}
