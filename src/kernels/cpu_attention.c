/* cpu_attention.c - scaled dot-product attention on the CPU (issue 4
 * point 6): O = softmax(scale Q K^T + mask) V per (batch, head), with
 * grouped KV heads and an optional causal mask.
 *
 * Queries go in blocks of up to BLOCK rows. For a block, one cblas_sgemm
 * gives the scores S = scale Q_blk K^T (block x keys), each row is
 * softmaxed in place over the keys it may see (the rest set to 0), and a
 * second cblas_sgemm gives O_blk = S V. Only one block's scores exist at a
 * time: memory is O(BLOCK x seq_kv), not O(seq^2) per head. With a causal
 * mask a block stops at the last key its last query sees, so the blocks
 * above the diagonal are never computed. The strides of cblas let Q, K, V
 * and O be read in place in either layout (head-major, or token-major with
 * the heads interleaved in each token's row). */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "common/blas_api.h"
#include "common/common.h"
#include "kernels/kernels.h"

#define BLOCK 64                   /* query rows per block */
#define SCORE_BUDGET (1u << 20)    /* at most this many floats of scores (4 MB) */

static int check(const synor_task_ctx *c, const synor__attention_args **out)
{
    if (c->ndata != 4 || !c->args)
        return synor__error(SYNOR_EINVAL, "attention: needs Q, K, V, O and its arguments");
    for (unsigned i = 0; i < 4; i++)
        if (synor_handle_dtype(c->data[i]) != SYNOR_DTYPE_FP32)
            return synor__error(SYNOR_EINVAL, "attention: data %u is %s; it must be fp32", i,
                                synor_dtype_name(synor_handle_dtype(c->data[i])));
    const synor__attention_args *a = c->args;
    if (a->batch < 1 || a->heads < 1 || a->kv_heads < 1 || a->seq_q < 1 || a->seq_kv < 1 ||
        a->head_dim < 1 || a->heads % a->kv_heads != 0 || !isfinite(a->scale) ||
        (int64_t)a->heads * a->head_dim > INT_MAX)
        return synor__error(SYNOR_EINVAL,
                            "attention: bad arguments (batch %d, heads %d, kv_heads %d, seq_q %d, "
                            "seq_kv %d, head_dim %d): sizes must be positive and kv_heads must "
                            "divide heads",
                            (int)a->batch, (int)a->heads, (int)a->kv_heads, (int)a->seq_q,
                            (int)a->seq_kv, (int)a->head_dim);
    uint64_t nq = (uint64_t)a->batch * (uint64_t)a->heads * (uint64_t)a->seq_q * (uint64_t)a->head_dim;
    uint64_t nkv = (uint64_t)a->batch * (uint64_t)a->kv_heads * (uint64_t)a->seq_kv *
                   (uint64_t)a->head_dim;
    static const char *const names[] = {"Q", "K", "V", "O"};
    for (unsigned i = 0; i < 4; i++) {
        uint64_t need = (i == 1 || i == 2 ? nkv : nq) * sizeof(float);
        if (synor_handle_bytes(c->data[i]) != need)
            return synor__error(SYNOR_EINVAL,
                                "attention: operand %s has %llu bytes; the arguments need %llu",
                                names[i], (unsigned long long)synor_handle_bytes(c->data[i]),
                                (unsigned long long)need);
    }
    *out = a;
    return 0;
}

/* Where the rows of head h of batch b start, and their stride, for a tensor
 * of nh heads and s rows per head. */
static size_t head_base(const synor__attention_args *a, size_t b, size_t h, size_t nh, size_t s,
                        size_t *ld)
{
    size_t d = (size_t)a->head_dim;
    if (a->token_major) {
        *ld = nh * d;
        return (b * s * nh + h) * d;
    }
    *ld = d;
    return (b * nh + h) * s * d;
}

static int attention_cpu(const synor_task_ctx *c)
{
    const synor__attention_args *a = NULL;
    int rc = check(c, &a);
    if (rc < 0)
        return rc;
    const synor__blas_api *blas = synor__blas();
    if (!blas)
        return SYNOR_ENOTSUP;
    const float *q = c->buffers[0], *k = c->buffers[1], *v = c->buffers[2];
    float *o = c->buffers[3];
    size_t sq = (size_t)a->seq_q, skv = (size_t)a->seq_kv, d = (size_t)a->head_dim;
    size_t group = (size_t)(a->heads / a->kv_heads);
    int64_t off = (int64_t)a->seq_kv - a->seq_q; /* causal: query i sees keys <= i + off */
    float scale = a->scale != 0 ? a->scale : (float)(1.0 / sqrt((double)d));
    size_t blk = BLOCK;
    if (blk * skv > SCORE_BUDGET)
        blk = SCORE_BUDGET / skv ? SCORE_BUDGET / skv : 1;
    if (blk > sq)
        blk = sq;
    float *s = synor__malloc(blk * skv * sizeof *s);
    if (!s)
        return synor__error(SYNOR_ENOMEM, "attention: no memory for %zu x %zu scores", blk, skv);
    for (size_t b = 0; b < (size_t)a->batch; b++)
        for (size_t h = 0; h < (size_t)a->heads; h++) {
            size_t ldq, ldk, ldv, ldo;
            const float *qh = q + head_base(a, b, h, (size_t)a->heads, sq, &ldq);
            const float *kh = k + head_base(a, b, h / group, (size_t)a->kv_heads, skv, &ldk);
            const float *vh = v + head_base(a, b, h / group, (size_t)a->kv_heads, skv, &ldv);
            float *oh = o + head_base(a, b, h, (size_t)a->heads, sq, &ldo);
            for (size_t i0 = 0; i0 < sq; i0 += blk) {
                size_t nb = sq - i0 < blk ? sq - i0 : blk;
                /* keys this block sees: all, or up to its last query's limit */
                int64_t lim = a->causal ? (int64_t)(i0 + nb) + off : (int64_t)skv;
                size_t kv_end = lim <= 0 ? 0 : (size_t)lim < skv ? (size_t)lim : skv;
                if (kv_end == 0) {
                    for (size_t r = 0; r < nb; r++)
                        memset(oh + (i0 + r) * ldo, 0, d * sizeof *oh);
                    continue;
                }
                blas->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)nb, (blasint)kv_end,
                            (blasint)d, scale, qh + i0 * ldq, (blasint)ldq, kh, (blasint)ldk, 0.0f,
                            s, (blasint)kv_end);
                for (size_t r = 0; r < nb; r++) {
                    float *row = s + r * kv_end;
                    int64_t see = a->causal ? (int64_t)(i0 + r) + off + 1 : (int64_t)kv_end;
                    size_t n = see <= 0 ? 0 : (size_t)see < kv_end ? (size_t)see : kv_end;
                    if (n > 0)
                        synor__softmax_row(row, row, n);
                    memset(row + n, 0, (kv_end - n) * sizeof *row);
                }
                blas->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)nb, (blasint)d,
                            (blasint)kv_end, 1.0f, s, (blasint)kv_end, vh, (blasint)ldv, 0.0f,
                            oh + i0 * ldo, (blasint)ldo);
            }
        }
    synor__free(s);
    return 0;
}

const synor_kernel synor__kernel_attention = {
    .name = "attention", .op = SYNOR_OP_SELF_ATTENTION, .fn = {[SYNOR_KIND_CPU] = attention_cpu}};
