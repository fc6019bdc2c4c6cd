/* exec.c - real runs of workloads (synor/exec.h): each task becomes a
 * runtime task whose kernel computes its operation on its data.
 *
 * The operand rules (docs/RUNTIME.md, "Real runs"): a task's operands are
 * its consumed data followed by its produced data. Row-wise operations work
 * on row-major rows of n elements (dims.n; default: one row of `elements`).
 *   matmul      consumes A (m x k), B (k x n); produces C (m x n)
 *   relu, gelu, silu
 *               consumes X; produces Y; both `elements` values
 *   softmax, transpose
 *               consumes X (elements / n rows of n); produces Y (same
 *               size; transpose: n rows of elements / n)
 *   layer_norm  consumes X, gamma (n), beta (n); produces Y
 *   rms_norm    consumes X, gamma (n); produces Y
 *   sum, mean, max
 *               consumes X; produces Y (one value per row; without n one
 *               value: the whole-tensor reduction)
 *   embedding, gather
 *               consumes table (vocab x hidden), ids (batch x seq int32,
 *               external: filled with seeded ids in [0, vocab)); produces
 *               Y (batch x seq x hidden)
 *   self_attention, flash_attention (causal), cross_attention
 *               consumes Q (batch x seq x heads x head_dim), K, V (batch x
 *               kv_len x kv_heads x head_dim), token-major; produces O
 * Sizes are checked against the dimensions before anything runs. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "kernels/kernels.h"
#include "synor/exec.h"
#include "synor/perfmodel.h"

#define NORM_EPS 1e-5f

typedef struct op_rule {
    synor_op_type op;
    unsigned n_in, n_out;
    const synor_kernel *kernel;
} op_rule;

static const op_rule *rule_for(synor_op_type op)
{
    static const op_rule rules[] = {
        {SYNOR_OP_MATMUL, 2, 1, &synor__kernel_gemm_dims},
        {SYNOR_OP_RELU, 1, 1, &synor__kernel_relu_x},
        {SYNOR_OP_GELU, 1, 1, &synor__kernel_gelu_x},
        {SYNOR_OP_SILU, 1, 1, &synor__kernel_silu_x},
        {SYNOR_OP_SOFTMAX, 1, 1, &synor__kernel_softmax},
        {SYNOR_OP_LAYER_NORM, 3, 1, &synor__kernel_layer_norm},
        {SYNOR_OP_RMS_NORM, 2, 1, &synor__kernel_rms_norm},
        {SYNOR_OP_SUM, 1, 1, &synor__kernel_row_sum},
        {SYNOR_OP_MEAN, 1, 1, &synor__kernel_row_mean},
        {SYNOR_OP_MAX, 1, 1, &synor__kernel_row_max},
        {SYNOR_OP_TRANSPOSE, 1, 1, &synor__kernel_transpose},
        {SYNOR_OP_EMBEDDING, 2, 1, &synor__kernel_embedding},
        {SYNOR_OP_GATHER, 2, 1, &synor__kernel_embedding},
        {SYNOR_OP_SELF_ATTENTION, 3, 1, &synor__kernel_attention},
        {SYNOR_OP_CROSS_ATTENTION, 3, 1, &synor__kernel_attention},
        {SYNOR_OP_FLASH_ATTENTION, 3, 1, &synor__kernel_attention},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].op == op)
            return &rules[i];
    return NULL;
}

static unsigned elem_bytes(synor_dtype t) { return synor_dtype_bits(t) / 8; }

static int is_rowwise(synor_op_type op)
{
    return op == SYNOR_OP_SOFTMAX || op == SYNOR_OP_LAYER_NORM || op == SYNOR_OP_RMS_NORM ||
           op == SYNOR_OP_SUM || op == SYNOR_OP_MEAN || op == SYNOR_OP_MAX ||
           op == SYNOR_OP_TRANSPOSE;
}

static int is_attention(synor_op_type op)
{
    return op == SYNOR_OP_SELF_ATTENTION || op == SYNOR_OP_CROSS_ATTENTION ||
           op == SYNOR_OP_FLASH_ATTENTION;
}

static int is_embedding(synor_op_type op)
{
    return op == SYNOR_OP_EMBEDDING || op == SYNOR_OP_GATHER;
}

/* Row-wise operations: the row length (n, default all elements). */
static uint64_t row_len(const synor_task *t)
{
    return (uint64_t)(t->op.dims.n ? t->op.dims.n : t->op.dims.elements);
}

static int64_t kv_len(const synor_op_dims *d) { return d->kv_len ? d->kv_len : d->seq; }
static int64_t kv_heads(const synor_op_dims *d) { return d->kv_heads ? d->kv_heads : d->heads; }

/* a * b, or UINT64_MAX when it overflows (then no datum has that size). */
static uint64_t mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* The elements operand i (inputs first) must have. */
static uint64_t operand_elems(const synor_task *t, unsigned i)
{
    const synor_op_dims *d = &t->op.dims;
    uint64_t e = (uint64_t)d->elements, n = row_len(t);
    uint64_t tok = mul((uint64_t)d->batch, (uint64_t)d->seq);
    switch (t->op.type) {
    case SYNOR_OP_MATMUL:
        return i == 0   ? mul((uint64_t)d->m, (uint64_t)d->k)
               : i == 1 ? mul((uint64_t)d->k, (uint64_t)d->n)
                        : mul((uint64_t)d->m, (uint64_t)d->n);
    case SYNOR_OP_LAYER_NORM:
        return i == 1 || i == 2 ? n : e;
    case SYNOR_OP_RMS_NORM:
        return i == 1 ? n : e;
    case SYNOR_OP_SUM: case SYNOR_OP_MEAN: case SYNOR_OP_MAX:
        return i == 0 ? e : e / n;
    case SYNOR_OP_EMBEDDING: case SYNOR_OP_GATHER:
        return i == 0   ? mul((uint64_t)d->vocab, (uint64_t)d->hidden)
               : i == 1 ? tok
                        : mul(tok, (uint64_t)d->hidden);
    case SYNOR_OP_SELF_ATTENTION: case SYNOR_OP_CROSS_ATTENTION: case SYNOR_OP_FLASH_ATTENTION: {
        uint64_t rows = i == 1 || i == 2 ? mul(mul((uint64_t)d->batch, (uint64_t)kv_len(d)),
                                               (uint64_t)kv_heads(d))
                                         : mul(tok, (uint64_t)d->heads);
        return mul(rows, (uint64_t)d->head_dim);
    }
    default:
        return e;
    }
}

/* The bytes operand i must have (token ids are 4-byte int32). */
static uint64_t operand_bytes(const synor_task *t, unsigned i)
{
    uint64_t e = is_embedding(t->op.type) && i == 1 ? 4 : elem_bytes(t->op.dtype);
    return mul(operand_elems(t, i), e);
}

static const char *operand_name(const synor_task *t, unsigned i)
{
    switch (t->op.type) {
    case SYNOR_OP_MATMUL:
        return i == 0 ? "A (m x k)" : i == 1 ? "B (k x n)" : "C (m x n)";
    case SYNOR_OP_LAYER_NORM:
        return i == 0 ? "X (elements)" : i == 1 ? "gamma (n)" : i == 2 ? "beta (n)" : "Y (elements)";
    case SYNOR_OP_RMS_NORM:
        return i == 0 ? "X (elements)" : i == 1 ? "gamma (n)" : "Y (elements)";
    case SYNOR_OP_SUM: case SYNOR_OP_MEAN: case SYNOR_OP_MAX:
        return i == 0 ? "X (elements)" : "Y (elements / n)";
    case SYNOR_OP_EMBEDDING: case SYNOR_OP_GATHER:
        return i == 0 ? "table (vocab x hidden)"
               : i == 1 ? "ids (batch x seq, int32)" : "Y (batch x seq x hidden)";
    case SYNOR_OP_SELF_ATTENTION: case SYNOR_OP_CROSS_ATTENTION: case SYNOR_OP_FLASH_ATTENTION:
        return i == 0 ? "Q (batch x seq x heads x head_dim)"
               : i == 1 ? "K (batch x kv_len x kv_heads x head_dim)"
               : i == 2 ? "V (batch x kv_len x kv_heads x head_dim)"
                        : "O (batch x seq x heads x head_dim)";
    default:
        return i == 0 ? "X (elements)" : "Y (elements)";
    }
}

/* Whether operand i of t is the token ids of an embedding. */
static int is_ids(const synor_task *t, unsigned i) { return is_embedding(t->op.type) && i == 1; }

/* Operation-specific dimension checks (beyond the operand sizes). */
static int check_dims(const synor_workload *w, const synor_task *t)
{
    const synor_op_dims *d = &t->op.dims;
    const char *op = synor_op_type_name(t->op.type);
    if (t->op.type == SYNOR_OP_MATMUL && (d->m > INT32_MAX || d->n > INT32_MAX || d->k > INT32_MAX))
        return synor__error(SYNOR_EINVAL, "task '%s': matmul dimensions above 2^31", t->id);
    if (is_rowwise(t->op.type)) {
        if (d->elements < 1 || d->n < 0 || (uint64_t)d->elements % row_len(t) != 0)
            return synor__error(SYNOR_EINVAL,
                                "task '%s' (%s): elements %lld is not a multiple of the row length "
                                "n %lld",
                                t->id, op, (long long)d->elements, (long long)row_len(t));
    }
    if (is_embedding(t->op.type)) {
        if (d->vocab < 1 || d->vocab > INT32_MAX)
            return synor__error(SYNOR_EINVAL,
                                "task '%s' (%s): a real run needs \"vocab\" (rows of the table) "
                                "in [1, 2^31)",
                                t->id, op);
        size_t di = t->consumes[1];
        const synor_data *ids = synor_workload_data(w, di);
        if (ids->producer >= 0)
            return synor__error(SYNOR_EINVAL,
                                "task '%s' (%s): the token ids '%s' must be external data (a real "
                                "run fills them with ids in [0, vocab))",
                                t->id, op, ids->name);
        for (size_t ui = 0; ui < synor_workload_count(w); ui++) {
            const synor_task *u = synor_workload_task(w, ui);
            for (unsigned j = 0; j < u->n_consumes; j++)
                if (u->consumes[j] == di && !is_ids(u, j))
                    return synor__error(SYNOR_EINVAL,
                                        "task '%s' (%s): data '%s' holds the token ids of task "
                                        "'%s'; it cannot also be an operand of other kinds",
                                        u->id, synor_op_type_name(u->op.type), ids->name, t->id);
        }
    }
    if (is_attention(t->op.type)) {
        int64_t g = kv_heads(d);
        if (d->batch > INT32_MAX || d->seq > INT32_MAX || kv_len(d) > INT32_MAX ||
            d->heads > INT32_MAX || d->head_dim > INT32_MAX || d->heads * d->head_dim > INT32_MAX)
            return synor__error(SYNOR_EINVAL, "task '%s' (%s): dimensions above 2^31", t->id, op);
        if (g > d->heads || d->heads % g != 0)
            return synor__error(SYNOR_EINVAL,
                                "task '%s' (%s): kv_heads %lld does not divide heads %lld", t->id,
                                op, (long long)g, (long long)d->heads);
    }
    return 0;
}

int synor_exec_check(const synor_workload *w)
{
    for (size_t ti = 0; ti < synor_workload_count(w); ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        const op_rule *r = t->op.backward ? NULL : rule_for(t->op.type);
        if (!r)
            return synor__error(SYNOR_ENOTSUP,
                                "task '%s': operation '%s%s' has no kernel for real runs (real "
                                "runs execute matmul, relu, gelu, silu, softmax, layer_norm, "
                                "rms_norm, sum, mean, max, transpose, embedding, gather, "
                                "self_attention, cross_attention, flash_attention)",
                                t->id, t->op.backward ? "backward of " : "",
                                synor_op_type_name(t->op.type));
        int f64ok = t->op.type == SYNOR_OP_MATMUL;
        if (t->op.dtype != SYNOR_DTYPE_FP32 && !(f64ok && t->op.dtype == SYNOR_DTYPE_FP64))
            return synor__error(SYNOR_ENOTSUP, "task '%s': data type %s (real runs compute in fp32%s)",
                                t->id, synor_dtype_name(t->op.dtype), f64ok ? " or fp64" : "");
        if (t->n_consumes != r->n_in || t->n_produces != r->n_out)
            return synor__error(SYNOR_EINVAL,
                                "task '%s' (%s): consumes %zu and produces %zu data; a real run "
                                "needs %u and %u",
                                t->id, synor_op_type_name(t->op.type), t->n_consumes,
                                t->n_produces, r->n_in, r->n_out);
        int rc = check_dims(w, t);
        if (rc < 0)
            return rc;
        for (unsigned i = 0; i < r->n_in + r->n_out; i++) {
            size_t di = i < r->n_in ? t->consumes[i] : t->produces[i - r->n_in];
            const synor_data *d = synor_workload_data(w, di);
            uint64_t need = operand_bytes(t, i);
            if (d->bytes != need || need == 0)
                return synor__error(SYNOR_EINVAL,
                                    "task '%s' (%s): data '%s' has %llu bytes; operand %s needs "
                                    "%llu (%s)",
                                    t->id, synor_op_type_name(t->op.type), d->name,
                                    (unsigned long long)d->bytes, operand_name(t, i),
                                    (unsigned long long)need,
                                    is_ids(t, i) ? "int32" : synor_dtype_name(t->op.dtype));
        }
    }
    return 0;
}

const char *synor_exec_task_id(const synor_workload *w, uint64_t tag)
{
    return tag >= 1 && tag <= synor_workload_count(w) ? synor_workload_task(w, tag - 1)->id : NULL;
}

/* The data type a datum is used with (its first user's). */
static synor_dtype data_dtype(const synor_workload *w, size_t di)
{
    for (size_t ti = 0; ti < synor_workload_count(w); ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        for (size_t j = 0; j < t->n_consumes; j++)
            if (t->consumes[j] == di)
                return t->op.dtype;
        for (size_t j = 0; j < t->n_produces; j++)
            if (t->produces[j] == di)
                return t->op.dtype;
    }
    return SYNOR_DTYPE_FP32;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The argument bytes of a task's kernel. */
typedef union task_args {
    synor__gemm_dims_args gemm;
    synor__rows_args rows;
    synor__embedding_args emb;
    synor__attention_args attn;
} task_args;

/* The kernel of task t and its arguments (*size 0: none). */
static const synor_kernel *task_kernel(const synor_task *t, task_args *a, size_t *size)
{
    const synor_op_dims *d = &t->op.dims;
    const synor_kernel *k = rule_for(t->op.type)->kernel;
    memset(a, 0, sizeof *a);
    *size = 0;
    if (t->op.type == SYNOR_OP_MATMUL) {
        a->gemm = (synor__gemm_dims_args){(int)d->m, (int)d->n, (int)d->k};
        *size = sizeof a->gemm;
    } else if (is_rowwise(t->op.type)) {
        a->rows.cols = (int64_t)row_len(t);
        a->rows.rows = d->elements / a->rows.cols;
        a->rows.eps = NORM_EPS;
        *size = sizeof a->rows;
        if (t->op.type == SYNOR_OP_SUM && a->rows.rows == 1)
            k = &synor__kernel_sum_all; /* whole-tensor sum, pairwise */
    } else if (is_embedding(t->op.type)) {
        a->emb = (synor__embedding_args){d->batch * d->seq, d->vocab, d->hidden};
        *size = sizeof a->emb;
    } else if (is_attention(t->op.type)) {
        a->attn = (synor__attention_args){
            .batch = (int32_t)d->batch, .heads = (int32_t)d->heads,
            .kv_heads = (int32_t)kv_heads(d), .seq_q = (int32_t)d->seq,
            .seq_kv = (int32_t)kv_len(d), .head_dim = (int32_t)d->head_dim,
            .causal = t->op.type != SYNOR_OP_CROSS_ATTENTION, .token_major = 1};
        *size = sizeof a->attn;
    }
    return k;
}

/* For each datum that is the token ids of an embedding: the smallest
 * vocabulary it indexes (0: not ids). */
static void ids_vocab(const synor_workload *w, int64_t *vocab)
{
    for (size_t ti = 0; ti < synor_workload_count(w); ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        if (!is_embedding(t->op.type))
            continue;
        int64_t *v = &vocab[t->consumes[1]];
        if (*v == 0 || t->op.dims.vocab < *v)
            *v = t->op.dims.vocab;
    }
}

int synor_exec_task_keys(const synor_workload *w, const char **kernels, uint64_t *footprints)
{
    int rc = synor_exec_check(w);
    if (rc < 0)
        return rc;
    size_t nd = synor_workload_data_count(w), nt = synor_workload_count(w);
    synor_dtype *dt = synor__malloc((nd ? nd : 1) * sizeof *dt);
    if (!dt)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t di = 0; di < nd; di++) /* data_dtype's rule in one pass: the first use */
        dt[di] = (synor_dtype)-1;
    for (size_t ti = 0; ti < nt; ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        for (size_t j = 0; j < t->n_consumes; j++)
            if (dt[t->consumes[j]] == (synor_dtype)-1)
                dt[t->consumes[j]] = t->op.dtype;
        for (size_t j = 0; j < t->n_produces; j++)
            if (dt[t->produces[j]] == (synor_dtype)-1)
                dt[t->produces[j]] = t->op.dtype;
    }
    for (size_t ti = 0; ti < nt; ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        const op_rule *r = rule_for(t->op.type);
        task_args args;
        size_t args_size;
        kernels[ti] = task_kernel(t, &args, &args_size)->name;
        /* synor__task_footprint of the runtime task synor_exec_workload
         * submits: the operand count, then per operand (inputs first) its
         * data type and its shape: one dimension of elements, the unused
         * ones 1 (as synor_handle_register stores them). */
        size_t v[SYNOR_TASK_MAX_DATA * (SYNOR_HANDLE_MAX_DIMS + 1) + 1];
        unsigned n = 0;
        v[n++] = r->n_in + r->n_out;
        for (unsigned i = 0; i < r->n_in + r->n_out; i++) {
            size_t di = i < r->n_in ? t->consumes[i] : t->produces[i - r->n_in];
            v[n++] = (size_t)dt[di];
            v[n++] = (size_t)(synor_workload_data(w, di)->bytes / elem_bytes(dt[di]));
            for (unsigned j = 1; j < SYNOR_HANDLE_MAX_DIMS; j++)
                v[n++] = 1;
        }
        footprints[ti] = synor_perfmodel_footprint(v, n);
    }
    synor__free(dt);
    return 0;
}

int synor_exec_workload(synor_runtime *rt, const synor_workload *w, uint64_t seed,
                        const unsigned *hints, synor_exec_result *out)
{
    return synor_exec_workload_hooked(rt, w, seed, hints, NULL, out);
}

static int wait_run(synor_runtime *rt, const synor_exec_hooks *hooks)
{
    return hooks && hooks->wait ? hooks->wait(hooks->user) : synor_runtime_wait_all(rt);
}

int synor_exec_workload_hooked(synor_runtime *rt, const synor_workload *w, uint64_t seed,
                               const unsigned *hints, const synor_exec_hooks *hooks,
                               synor_exec_result *out)
{
    memset(out, 0, sizeof *out);
    int rc = synor_exec_check(w);
    if (rc < 0)
        return rc;
    size_t nd = synor_workload_data_count(w), nt = synor_workload_count(w);
    void **mem = synor__calloc(nd ? nd : 1, sizeof *mem);
    synor_handle **h = synor__calloc(nd ? nd : 1, sizeof *h);
    unsigned char *sink = synor__calloc(nd ? nd : 1, 1);
    int64_t *vocab = synor__calloc(nd ? nd : 1, sizeof *vocab);
    if (!mem || !h || !sink || !vocab) {
        rc = synor__error(SYNOR_ENOMEM, "real run: out of memory");
        goto out;
    }
    for (size_t ti = 0; ti < nt; ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        for (size_t j = 0; j < t->n_produces; j++)
            sink[t->produces[j]] = 1;
    }
    for (size_t ti = 0; ti < nt; ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        for (size_t j = 0; j < t->n_consumes; j++)
            sink[t->consumes[j]] = 0;
    }
    ids_vocab(w, vocab);
    for (size_t di = 0; di < nd; di++) {
        const synor_data *d = synor_workload_data(w, di);
        synor_dtype dt = data_dtype(w, di);
        size_t n = (size_t)(d->bytes / elem_bytes(dt));
        mem[di] = synor__malloc(d->bytes ? (size_t)d->bytes : 1);
        if (!mem[di]) {
            rc = synor__error(SYNOR_ENOMEM, "real run: cannot allocate %llu bytes for data '%s'",
                              (unsigned long long)d->bytes, d->name);
            goto out;
        }
        out->bytes += d->bytes;
        uint64_t s = seed ^ (0x51ed270b2705ull * (di + 1));
        for (size_t i = 0; vocab[di] && i < n; i++) /* token ids in [0, vocab) */
            ((int32_t *)mem[di])[i] = (int32_t)(((splitmix(&s) >> 32) * (uint64_t)vocab[di]) >> 32);
        for (size_t i = 0; !vocab[di] && i < n; i++) {
            double v = d->producer < 0 ? (double)(splitmix(&s) >> 11) * 0x1.0p-52 - 1.0 : 0.0;
            if (dt == SYNOR_DTYPE_FP64)
                ((double *)mem[di])[i] = v;
            else
                ((float *)mem[di])[i] = (float)v;
        }
        synor_handle_desc desc = {.ptr = mem[di], .dtype = dt, .ndim = 1, .shape = {n}};
        if ((rc = synor_handle_register(rt, &desc, &h[di])) < 0)
            goto out;
        if (hooks && hooks->data && (rc = hooks->data(hooks->user, di, h[di])) < 0)
            goto out;
    }
    /* The kernels' per-device preparation (OpenCL builds, cuBLAS) is not
     * part of the run's time. */
    if ((rc = synor_runtime_library_add(rt, &synor__kernels_library)) < 0)
        goto out;
    double t0 = synor__now_s();
    const size_t *order = synor_workload_order(w);
    for (size_t oi = 0; oi < nt; oi++) {
        size_t ti = order[oi];
        const synor_task *t = synor_workload_task(w, ti);
        const op_rule *r = rule_for(t->op.type);
        task_args args;
        size_t args_size = 0;
        synor_task_spec s = {.kernel = task_kernel(t, &args, &args_size), .priority = t->priority,
                             .ndata = r->n_in + r->n_out, .tag = ti + 1,
                             .device = hints ? hints[ti] : 0};
        for (unsigned i = 0; i < r->n_in; i++) {
            s.data[i] = h[t->consumes[i]];
            s.mode[i] = SYNOR_ACCESS_R;
        }
        for (unsigned i = 0; i < r->n_out; i++) {
            s.data[r->n_in + i] = h[t->produces[i]];
            s.mode[r->n_in + i] = SYNOR_ACCESS_W;
        }
        if (args_size) {
            s.args = &args;
            s.args_size = args_size;
        }
        rc = hooks && hooks->submit ? hooks->submit(hooks->user, ti, &s)
                                    : synor_task_submit(rt, &s);
        if (rc < 0) {
            (void)wait_run(rt, hooks);
            goto out;
        }
        out->tasks++;
    }
    for (size_t di = 0; hooks && hooks->result && di < nd; di++)
        if (sink[di] && (rc = hooks->result(hooks->user, di)) < 0) {
            (void)wait_run(rt, hooks);
            goto out;
        }
    rc = wait_run(rt, hooks);
    out->seconds = synor__now_s() - t0;
    if (rc == 0)
        for (size_t di = 0; di < nd; di++) {
            if (!sink[di])
                continue;
            synor_dtype dt = data_dtype(w, di);
            size_t n = (size_t)(synor_workload_data(w, di)->bytes / elem_bytes(dt));
            for (size_t i = 0; i < n; i++)
                out->checksum += dt == SYNOR_DTYPE_FP64 ? ((double *)mem[di])[i]
                                                        : (double)((float *)mem[di])[i];
        }
out:
    for (size_t di = 0; h && mem && di < nd; di++) {
        if (h[di])
            (void)synor_handle_unregister(h[di]);
        synor__free(mem[di]);
    }
    synor__free(mem);
    synor__free(h);
    synor__free(sink);
    synor__free(vocab);
    return rc;
}
