/* train_internal.h - the trainer's state, shared by its files. Never
 * installed. */
#ifndef SYNOR_TRAIN_INTERNAL_H
#define SYNOR_TRAIN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "common/blas_api.h"
#include "common/common.h"
#include "synor/runtime.h"
#include "synor/train.h"

/* Chunks of the all-reduce and of the optimizer step. Fixed, not the
 * worker count: the global norm is summed per chunk, so a different count
 * would change its last bits and a resumed run would not be bit-exact. */
#define TRAIN_CHUNKS 4
/* At most: a task names its replicas' or chunks' tokens among its 8 data. */
#define TRAIN_MAX_REPLICAS 6

/* Where each weight lives in the parameter array. */
typedef struct train_layout {
    size_t off[SYNOR_L2C_WCLS + 1];  /* of layer 0 */
    size_t size[SYNOR_L2C_WCLS + 1]; /* per layer */
    size_t total;
} train_layout;

/* What a forward pass keeps for its backward pass, for up to rows
 * sequences of T positions (N = rows T). Per layer l, arrays of N x width
 * at l N width. */
typedef struct train_acts {
    int rows;            /* capacity in sequences */
    float *x;            /* (L + 1) N D: residual stream entering layer l; [L] leaves */
    float *xn1;          /* L N D: normalised for attention */
    float *r1;           /* L N: 1 / rms */
    float *q;            /* L N D: after RoPE */
    float *k, *v;        /* L N KVD (k after RoPE) */
    float *att;          /* L rows NH T T: attention probabilities */
    float *ao;           /* L N D: attention output before wo */
    float *xm;           /* L N D: residual after attention */
    float *xn2;          /* L N D */
    float *r2;           /* L N */
    float *h1, *h3, *hg; /* L N H: gate, up, silu(gate) * up */
    float *xnf;          /* N D: final norm */
    float *rf;           /* N */
    float *logits;       /* N V: logits, then probabilities, then their gradient */
    /* backward scratch */
    float *dx, *dxn, *dq, *dk, *dv, *dao, *dh1, *dh3, *dhg; /* N x width */
    float *dp;                                              /* T x T: attention backward scratch */
    int32_t *tgt;                                           /* N: the targets */
} train_acts;

typedef struct train_replica {
    train_acts a;
    float *grad;       /* this replica's gradients (param_count) */
    double loss_sum;   /* of its rows' cross-entropies */
    int row0, nrows;   /* its rows of the batch */
    synor_handle *tok; /* written by its fwdbwd task */
    int ocl;           /* 1: its products run on the trainer's OpenCL device */
    int cuda;          /* 1: its products run on the trainer's CUDA GPU */
    double pass_s;     /* the wall time of its last pass (synor_trainer_balance) */
} train_replica;

typedef struct train_gpu train_gpu;
typedef struct train_ocl train_ocl;

struct synor_trainer {
    synor_runtime *rt;
    train_gpu *gpu; /* the matrix products' GPU (gpu.c), or NULL */
    train_ocl *ocl; /* the OpenCL device of the replicas with .ocl (ocl.c), or NULL */
    synor_train_config cfg;
    train_layout lay;
    int kvd, hs;
    int batch, nrep;
    float *params, *grad, *m, *v;
    float *rope_cos, *rope_sin; /* T x hs/2 */
    train_replica rep[TRAIN_MAX_REPLICAS];
    const int32_t *tokens; /* the batch the fwdbwd tasks read (T + 1 per row) */
    int eval_only;         /* the fwdbwd tasks only run the forward pass */
    long step;
    /* the step's optimizer inputs, set before its tasks are submitted */
    float lr;
    synor_train_adamw opt;
    double sumsq[TRAIN_CHUNKS]; /* per chunk, of the summed gradients */
    double grad_norm;
    synor_handle *red[TRAIN_CHUNKS];                     /* written by reduce tasks */
    synor_handle *upd[TRAIN_CHUNKS];                     /* written by adamw tasks */
    float tokmem[TRAIN_MAX_REPLICAS + 2 * TRAIN_CHUNKS]; /* the one-float "step tokens" */
    size_t chunk[TRAIN_CHUNKS + 1];                      /* parameter ranges of the chunks */
    /* Parameter ranges AdamW decays (the matrices), sorted. */
    struct {
        size_t off, n;
    } decay[2 + 8];
    int ndecay;
    /* The first failure of a task (error code, message); later tasks of
     * the step then do nothing, so nothing is updated. */
    pthread_mutex_t lock;
    int err;
    char errmsg[512];
};

/* model.c */
void synor__train_layout(const synor_train_config *cfg, train_layout *lay);

/* ckpt.c: a checkpoint file's size for P parameters, and its bytes built
 * in buf (that size). */
size_t synor__train_ckpt_bytes(size_t P);
void synor__train_ckpt_build(unsigned char *buf, const synor_train_config *c,
                             const synor_train_state *st, const float *params, const float *m,
                             const float *v, size_t P);

/* trainer.c: submits one step's tasks - the replicas' passes (reading the
 * batch handle too when not NULL), and with backward the all-reduce, and
 * with update the optimizer - and waits for them. */
int synor__trainer_submit(synor_trainer *t, const int32_t *tokens, synor_handle *batch,
                          int backward, int update);
/* synor__trainer_submit, waiting for the tasks (and every other task of
 * the runtime): *loss is the batch's mean; a failure is named, a NaN or
 * infinity diagnosed (the operation that made it). */
int synor__trainer_run_step(synor_trainer *t, const int32_t *tokens, synor_handle *batch,
                            int backward, int update, double *loss);

/* pass.c: the forward (and backward) pass of one replica over rows of
 * tokens (T + 1 each), single-threaded: r->loss_sum gets the rows' summed
 * cross-entropy, r->grad (zeroed first) the gradient of that sum times
 * scale. Returns 0, or SYNOR_ERANGE /
 * SYNOR_EINVAL with msg naming the operation. check: scan every
 * operation's output for NaN/Inf (the diagnosis after a bad loss). */
int synor__train_pass(const synor_trainer *t, train_replica *r, const int32_t *tokens, int rows,
                      float scale, int backward, int check, char *msg, size_t msgcap);
int synor__train_acts_alloc(const synor_trainer *t, train_acts *a, int rows);
void synor__train_acts_free(train_acts *a);

/* ops.c: the operations and their gradients (single-threaded). */
void synor__train_rmsnorm(float *y, float *rstd, const float *x, const float *w, int n, int d,
                          float eps);
void synor__train_rmsnorm_bwd(float *dx, float *dw, const float *dy, const float *x,
                              const float *rstd, const float *w, int n, int d);
void synor__train_rope(float *v, int n, int T, int width, int hs, const float *cs, const float *sn,
                       int inverse);
void synor__train_attention(const synor__blas_api *bl, float *out, float *att, const float *q,
                            const float *k, const float *v, int rows, int T, int nh, int nkv,
                            int hs);
void synor__train_attention_bwd(const synor__blas_api *bl, float *dq, float *dk, float *dv,
                                const float *dout, const float *att, const float *q, const float *k,
                                const float *v, int rows, int T, int nh, int nkv, int hs,
                                float *scratch);
void synor__train_swiglu(float *hg, const float *h1, const float *h3, size_t n);
void synor__train_swiglu_bwd(float *dh1, float *dh3, const float *dhg, const float *h1,
                             const float *h3, size_t n);
/* Softmax of each row in place; returns the sum over rows of -log p[target]
 * and turns probs into the gradient of that sum times scale. */
double synor__train_xent(float *logits, const int32_t *targets, int n, int V, float scale,
                         int backward);
/* Index of the first non-finite value of v[0..n), or -1. */
long synor__train_nonfinite(const float *v, size_t n);

/* Matrix products through OpenBLAS (row-major; W is out x in):
 * y[n][out] = x[n][in] W^T; dx[n][in] (+)= dy[n][out] W; dW += dy^T x. */
void synor__train_mm(const synor__blas_api *b, float *y, const float *x, const float *w, int n,
                     int in, int out);
void synor__train_mm_bwd_x(const synor__blas_api *b, float *dx, const float *dy, const float *w,
                           int n, int in, int out, float beta);
void synor__train_mm_bwd_w(const synor__blas_api *b, float *dw, const float *dy, const float *x,
                           int n, int in, int out);

/* gpu.c: the products above on the trainer's GPU, thread-safe (out, p, q
 * in the order of synor__train_mm, _bwd_x, _bwd_w; beta for BWD_X). The
 * weights (q of FWD and BWD_X) are pointers into t->params, read from
 * their copy on the GPU, uploaded again after params_changed. */
enum { TRAIN_MM_FWD, TRAIN_MM_BWD_X, TRAIN_MM_BWD_W };
int synor__train_gpu_mm(const synor_trainer *t, int op, float *out, const float *p,
                        const float *q, int n, int in, int outw, float beta);
void synor__train_gpu_params_changed(synor_trainer *t);
void synor__train_gpu_free(synor_trainer *t);

/* ocl.c (ocl_none.c without OpenCL): the same products on the trainer's
 * OpenCL device, for the replicas that have .ocl set. */
int synor__train_ocl_mm(const synor_trainer *t, int op, float *out, const float *p,
                        const float *q, int n, int in, int outw, float beta);
void synor__train_ocl_params_changed(synor_trainer *t);
void synor__train_ocl_free(synor_trainer *t);
void synor__train_ocl_stats(const synor_trainer *t, synor_train_gpu_stats *out);

#endif
