/* train.h - training a Llama-architecture model on the runtime (seed 001
 * §2.2): forward and backward passes written by hand for every operation,
 * cross-entropy loss, AdamW with weight decay and gradient clipping, a
 * warm-up + cosine learning-rate schedule, all in fp32.
 *
 * One iteration is a graph of runtime tasks, the seed's decomposition:
 *
 *   load(s+1) ─────────────────────────────┐   (batch preparation, overlapping step s)
 *   fwdbwd(s, r)  r = 0..R-1  ─┬─ reduce(s, c)  c = 0..C-1 ─┬─ adamw(s, c) ─ [snapshot ─ write]
 *   (micro-batch r: forward,   │  (all-reduce of the R      │  (clip by the global norm,
 *    loss, backward into the   │   replicas' gradients,     │   AdamW on chunk c of the
 *    replica's own gradients)  │   partial squared norms)   │   parameters)
 *
 * Data parallel: the batch's rows are split over R replicas, each run by
 * whichever worker takes its task, with single-threaded kernels (OpenBLAS
 * at one thread per worker); the gradients are summed in replica order, so
 * a run is bit-for-bit reproducible for a given R whatever the scheduling,
 * and a checkpoint resumes bit-exactly. Checkpoints are copied by a task
 * after the optimizer step and written by another while the next steps run.
 *
 * The model is llama2.c's (run.c): token embedding, per layer RMSNorm,
 * Q/K/V with RoPE on pairs (2i, 2i+1) of each head, causal grouped-query
 * attention, output projection, RMSNorm, SwiGLU feed-forward; final
 * RMSNorm and a classifier tied to the embedding or separate. Parameters
 * are one fp32 array in llama2.c's order (synor_l2c_weight), so a model
 * exports as a llama2.c checkpoint (synor_l2c_write) as it is. */
#ifndef SYNOR_TRAIN_H
#define SYNOR_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "synor/model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct synor_runtime;
struct synor_tokenizer;

/* ------------------------------------------------------------ the model */

typedef struct synor_train_config {
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int shared_classifier; /* 1: the classifier is the token embedding */
    float rope_theta;      /* 0 = 10000 */
    float norm_eps;        /* 0 = 1e-5 */
} synor_train_config;

/* SYNOR_EINVAL naming the field and value: sizes must be 1 to 2^20, n_heads
 * divide dim into an even head size, n_kv_heads divide n_heads. Fills the
 * zero defaults. */
int synor_train_config_check(synor_train_config *cfg);
/* Parameters of cfg (elements), and where weight w of layer l starts. */
size_t synor_train_param_count(const synor_train_config *cfg);
size_t synor_train_param_offset(const synor_train_config *cfg, synor_l2c_weight w, int layer);
/* Elements of one weight (of one layer). */
size_t synor_train_param_size(const synor_train_config *cfg, synor_l2c_weight w);

/* ------------------------------------------------------------ optimizer */

typedef struct synor_train_adamw {
    float lr;           /* peak learning rate */
    float min_lr;       /* the cosine's floor */
    int warmup;         /* linear warm-up steps from lr / warmup */
    int decay_steps;    /* the cosine reaches min_lr at this step */
    float beta1, beta2, eps;
    float weight_decay; /* decoupled; on the matrices, not the norm weights */
    float grad_clip;    /* global L2 norm; 0 = none */
} synor_train_adamw;

/* nanoGPT's defaults: lr 1e-3 → 1e-4, 100 warm-up steps, betas 0.9/0.95,
 * eps 1e-8, weight decay 0.1, clip 1.0. */
void synor_train_adamw_init(synor_train_adamw *o, int steps);
/* The learning rate at step (0-based): linear warm-up, cosine decay. */
float synor_train_lr(const synor_train_adamw *o, long step);

/* ------------------------------------------------------------- trainer */

typedef struct synor_trainer synor_trainer;

/* A trainer of cfg for batches of `batch` sequences of cfg->seq_len + 1
 * tokens, split over `replicas` data-parallel micro-batches (0 = one per
 * worker of rt, at most the batch). Parameters start at zero (see
 * synor_trainer_init_params). rt must be started and outlive the trainer;
 * the trainer submits tasks to it and waits for them. SYNOR_EINVAL,
 * SYNOR_ENOMEM (naming the bytes), SYNOR_ENOTSUP (no OpenBLAS). */
int synor_trainer_create(struct synor_runtime *rt, const synor_train_config *cfg, int batch,
                         int replicas, synor_trainer **out);
void synor_trainer_destroy(synor_trainer *t); /* waits for its tasks; accepts NULL */

const synor_train_config *synor_trainer_config(const synor_trainer *t);
int synor_trainer_replicas(const synor_trainer *t);
int synor_trainer_batch(const synor_trainer *t);

/* GPT-2's initialisation from a seeded generator: matrices N(0, 0.02),
 * the residual projections (wo, w2) N(0, 0.02 / sqrt(2 n_layers)), norm
 * weights 1. Resets the optimizer's moments and step. */
void synor_trainer_init_params(synor_trainer *t, uint64_t seed);
/* The parameters (synor_train_param_count floats, llama2.c order): read or
 * written only while no step is running. */
float *synor_trainer_params(synor_trainer *t);
/* The gradients of the last synor_trainer_grad / step, before clipping. */
const float *synor_trainer_grads(const synor_trainer *t);
/* AdamW's first and second moments, and the steps taken. */
float *synor_trainer_moment(synor_trainer *t, int which); /* 1 or 2 */
long synor_trainer_step_count(const synor_trainer *t);
void synor_trainer_set_step_count(synor_trainer *t, long step);

/* tokens: batch rows of seq_len + 1 ids (inputs 0..T-1, targets 1..T).
 * Forward and backward over the replicas, gradients all-reduced: *loss is
 * the mean cross-entropy, synor_trainer_grads its gradient. No update.
 * SYNOR_EINVAL for a token out of range (row and column named);
 * SYNOR_ERANGE when the loss or a gradient is NaN or infinite, naming the
 * first operation that produced one (layer and operation). */
int synor_trainer_grad(synor_trainer *t, const int32_t *tokens, double *loss);

typedef struct synor_train_step_info {
    long step;        /* the step this was (0-based) */
    double loss;      /* mean cross-entropy of the batch, before the update */
    double grad_norm; /* global L2 norm before clipping */
    float lr;
} synor_train_step_info;

/* One iteration: synor_trainer_grad, then clipping and AdamW at
 * synor_train_lr(o, step). On an error nothing is updated. */
int synor_trainer_step(synor_trainer *t, const int32_t *tokens, const synor_train_adamw *o,
                       synor_train_step_info *info);

/* Mean cross-entropy of rows sequences (any count; split over the
 * replicas in rounds of the batch), forward only. */
int synor_trainer_eval(synor_trainer *t, const int32_t *tokens, int rows, double *loss);

/* ----------------------------------------------------------------- CUDA */

/* Runs the trainer's matrix products - every projection of the forward
 * pass and both products of each one's backward pass (data and weight
 * gradients), for every replica - with cuBLAS SGEMM on the runtime's
 * CUDA GPU number `device` (0: the first; the runtime must have been
 * created with cfg.cuda). The parameters are resident there in fp32,
 * uploaded once per step (after the optimizer changed them on the host);
 * activations cross at each product; weight gradients come back into each
 * replica's gradients, so the all-reduce, clipping and AdamW run on the
 * CPU workers as before, as do attention, the norms, SwiGLU and the loss.
 * The replicas share the GPU one product at a time. Results equal the
 * CPU's to fp32 rounding (another summation order), so a run on the GPU is
 * reproducible but not bit-identical to one on the CPU. Call between
 * steps. SYNOR_ENOTSUP (no such CUDA device, no cuBLAS), SYNOR_ENOMEM
 * (device memory), SYNOR_ESTATE (already on a GPU). */
int synor_trainer_use_cuda(synor_trainer *t, unsigned device);
/* As synor_trainer_use_cuda for the last `replicas` replicas only (0: all
 * of them); the others keep their products on the CPU workers: one batch,
 * data parallel over the CPU and the GPU at once, as
 * synor_trainer_use_opencl does with an OpenCL device. SYNOR_EINVAL
 * (replicas above the trainer's), and the errors above. */
int synor_trainer_use_cuda_replicas(synor_trainer *t, unsigned device, int replicas);

typedef struct synor_train_gpu_stats {
    char device[64], product[128]; /* "" when the trainer has no GPU or OpenCL device */
    uint64_t products;             /* SGEMM calls */
    uint64_t bytes_up, bytes_down; /* copies, parameters included */
    uint64_t param_uploads;
} synor_train_gpu_stats;

void synor_trainer_gpu_stats(const synor_trainer *t, synor_train_gpu_stats *out);

/* --------------------------------------------------------------- OpenCL */

/* Runs the matrix products of the trainer's last `replicas` replicas (0:
 * all of them) on the runtime's OpenCL device number `device` (0: the
 * first; the runtime needs cfg.opencl, SYNOR_OPENCL_ALL for a CPU device
 * such as PoCL's), as synor_trainer_use_cuda does on a CUDA GPU: every
 * projection of the forward pass and both products of its backward pass,
 * with the trainer's own SGEMM kernel; the parameters resident on the
 * device in fp32, uploaded once per step; activations crossing at each
 * product; weight gradients added into the replica's host gradients. The
 * other replicas keep their products on the CPU workers (OpenBLAS): one
 * batch, data parallel over the CPU and the device at once, the
 * all-reduce summing every replica's gradients in replica order. The
 * device's replicas share it, one product at a time. Results equal the
 * CPU's to fp32 rounding. Call between steps, at most once, not with
 * synor_trainer_use_cuda. SYNOR_ENOTSUP (no such OpenCL device, or built
 * without OpenCL), SYNOR_EINVAL (replicas above the trainer's), SYNOR_EIO
 * (the kernel does not build, naming the device), SYNOR_ENOMEM, SYNOR_ESTATE
 * (already on a device). synor_trainer_gpu_stats reports it ("opencl0"). */
int synor_trainer_use_opencl(synor_trainer *t, unsigned device, int replicas);

/* Whether replica r's products run on an accelerator (CUDA or OpenCL). */
int synor_trainer_replica_on_device(const synor_trainer *t, int r);

/* The batch's rows per replica: rows[r] for replica r (each at least 1,
 * summing to the batch). By default they are split evenly. The gradient
 * is the same for any split (to fp32 rounding: the loss is always scaled
 * by the whole batch), but a run is bit-for-bit reproducible only with
 * the same split. Call between steps. SYNOR_EINVAL naming the bad count,
 * SYNOR_ENOMEM (activations). */
int synor_trainer_set_rows(synor_trainer *t, const int *rows);
/* The current split (synor_trainer_replicas entries). */
void synor_trainer_get_rows(const synor_trainer *t, int *rows);

/* Splits the batch by the replicas' measured speed: `rounds` gradient
 * computations (no update) on tokens (a batch), each timing every
 * replica's pass (forward and backward, while the others run beside it)
 * and giving replica r rows in proportion to the rows per second it
 * achieved (at least 1 each; the largest remainders get the rounding).
 * The first round also warms up (kernels built, buffers allocated) and is
 * not used. The split then stays until changed (synor_trainer_set_rows).
 * seconds_per_row, if not NULL, gets each replica's last measured time per
 * row. Parameters and optimizer state are untouched. */
int synor_trainer_balance(synor_trainer *t, const int32_t *tokens, int rounds,
                          double *seconds_per_row);

/* ------------------------------------------------------------- datasets */

/* A corpus as one stream of token ids, split into a training part and a
 * validation part (the last val_fraction of the stream). */
typedef struct synor_train_data {
    int32_t *ids;
    size_t n;       /* ids */
    size_t n_train; /* ids [0, n_train) train; [n_train, n) validate */
} synor_train_data;

/* Encodes text with tok (no BOS/EOS) and splits it. SYNOR_EINVAL when
 * either part is shorter than seq_len + 1 tokens (the counts named). */
int synor_train_data_from_text(const struct synor_tokenizer *tok, const char *text, size_t len,
                               double val_fraction, int seq_len, synor_train_data *out);
void synor_train_data_free(synor_train_data *d);
/* The batch of training step `step`: rows windows of seq_len + 1 ids at
 * positions drawn from a generator seeded by (seed, step) - a function of
 * the step alone, so a resumed run reads the same batches. */
void synor_train_data_batch(const synor_train_data *d, uint64_t seed, long step, int rows,
                            int seq_len, int32_t *out);
/* Up to max_rows consecutive non-overlapping windows of the validation
 * part; returns the number written. */
int synor_train_data_val(const synor_train_data *d, int max_rows, int seq_len, int32_t *out);
/* The unigram baseline: cross-entropy (nats/token) of the validation part
 * under the training part's token frequencies (add-one smoothed over
 * vocab_size). A model that learned nothing but frequencies scores this. */
double synor_train_data_unigram(const synor_train_data *d, int vocab_size);

/* ---------------------------------------------------------- checkpoints */

/* A checkpoint holds the configuration, the optimizer settings, the run's
 * position and the parameters with both AdamW moments, checked by a
 * CRC-32C: resuming from it continues bit for bit (same batches, same
 * loss curve) with the same replica count. */
typedef struct synor_train_state {
    long step;          /* steps done */
    uint64_t seed;      /* the data order's seed */
    int batch, replicas;
    uint64_t tokens;    /* training tokens seen */
    double elapsed_s;   /* training time so far */
    synor_train_adamw opt;
} synor_train_state;

/* Writes t's parameters and moments with st to path atomically (a
 * temporary file, fdatasync, rename, directory sync). SYNOR_EIO naming the
 * file. Waits for t's running steps. */
int synor_trainer_save(synor_trainer *t, const synor_train_state *st, const char *path);
/* Reads a checkpoint's configuration and state (not its weights) and
 * verifies the whole file: SYNOR_EIO, SYNOR_EPARSE naming the file and
 * what is wrong (bad magic, a size that does not match, "checksum
 * mismatch: torn or corrupted"). */
int synor_train_ckpt_peek(const char *path, synor_train_config *cfg, synor_train_state *st);
/* The newest checkpoint of dir (ckpt-<step>.bin) that verifies: its path
 * (into path, cap bytes), configuration and state. SYNOR_ENOENT when there
 * is none. */
int synor_train_ckpt_latest(const char *dir, char *path, size_t cap, synor_train_config *cfg,
                            synor_train_state *st);
/* Loads a verified checkpoint into t (same configuration, else
 * SYNOR_EINVAL naming the field); t's step count becomes st->step. */
int synor_trainer_load(synor_trainer *t, const char *path, synor_train_state *st);

/* --------------------------------------------------------------- runs */

/* What synor_train_run reports after every step (and evaluation). */
typedef struct synor_train_progress {
    long step, steps;     /* this step (1-based count done) of steps */
    double loss;          /* training loss of the step */
    double val_loss;      /* last validation loss; NaN until the first */
    double grad_norm;
    float lr;
    double tokens_per_s;  /* over the run so far (this process) */
    double elapsed_s;     /* including resumed time */
    double eta_s;
    int evaluated;        /* 1: val_loss was computed at this step */
    const char *checkpoint; /* a checkpoint of this step was queued: its path */
} synor_train_progress;

typedef int (*synor_train_progress_fn)(const synor_train_progress *p, void *ctx);

typedef struct synor_train_run_opts {
    int steps;           /* total steps of the run (resumed ones included) */
    uint64_t seed;       /* initialisation and data order */
    synor_train_adamw opt;
    int eval_every;      /* 0 = only at the end */
    int eval_rows;       /* validation windows per evaluation; default 32 */
    int ckpt_every;      /* 0 = only at the end */
    const char *ckpt_dir; /* NULL = no checkpoints */
    int ckpt_keep;       /* newest checkpoints kept; default 2 */
    int resume;          /* 1: continue from ckpt_dir's newest valid checkpoint */
    synor_train_progress_fn progress; /* may be NULL; non-zero return stops */
    void *progress_ctx;
} synor_train_run_opts;

/* Trains t on d: the loop of the graph above with the batch of step s + 1
 * prepared by a task while step s computes, and checkpoints
 * (ckpt_dir/ckpt-<step>.bin) snapshotted and written by tasks while the
 * next steps run. With resume, the newest checkpoint that verifies is
 * loaded (a torn one is reported on stderr by name and skipped) and the run
 * continues at its step; without one, it starts from init_params(seed).
 * Stops at the first error: a NaN or infinite loss (SYNOR_ERANGE naming
 * the step and the operation), a checkpoint that cannot be written.
 * Returns 0 when all steps ran, 1 when progress asked to stop (after the
 * step it was told of, whose checkpoint, if one was queued, is written). */
int synor_train_run(synor_trainer *t, const synor_train_data *d, const synor_train_run_opts *o);

/* Writes t's model as a llama2.c checkpoint (version 0: fp32), which
 * synor_llm_load and llama2.c's run.c read. */
int synor_trainer_export_l2c(synor_trainer *t, const char *path);

/* ------------------------------------------------------------- the log */

/* An SVG line chart of a training log (the CSV synor train writes: a
 * header line naming columns "step", "loss" and optionally "val_loss"),
 * training loss and validation loss against the step; NULL with the
 * message set (the file and line of a bad row). Free with free(). */
char *synor_train_plot_svg(const char *log_path, double baseline);

#ifdef __cplusplus
}
#endif
#endif
