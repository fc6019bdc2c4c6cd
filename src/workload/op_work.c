/* op_work.c - the work of an operation from its shapes: FLOPs (a fused
 * multiply-add counts 2) and bytes read from and written to device memory,
 * the inputs of the roofline cost model.
 *
 * Formulas (s = bytes per element of the data type):
 *   matmul          flops 2mnk; read (mk + kn)s; write mn s
 *   attention       b batch, q seq, L kv_len (default q), h heads, g kv_heads
 *                   (default h), d head_dim: flops 4bhqLd (QK^T and AV) +
 *                   5bhqL (softmax); read Q (bqhd) + K,V (2bLgd), write O
 *                   (bqhd); self/cross attention also write and read the
 *                   b*h*q*L score matrix, flash attention keeps it on chip
 *   feed_forward    SwiGLU with T = b*q tokens, H hidden, F ffn: three
 *                   matmuls, flops 6THF; read the weights 3HF s and T H s,
 *                   write T H s
 *   embedding,      T = b*q tokens of H: read and write T H s (a gather)
 *   gather
 *   element-wise /  E elements, flops c*E with c per op (relu 1, gelu 8,
 *   reductions      silu 4, softmax 5, layer_norm 8, rms_norm 4, rope 6,
 *                   data movement 0, others 1); read E s; write E s, or
 *                   one element for reductions
 *   transformer_layer / decode_step, output_projection, cross_entropy_loss,
 *   kv_cache, optimizer_step (AdamW), all_reduce (ring), and the I/O and
 *   string steps: see the comment on each case below.
 * A backward operation does twice the forward's FLOPs and bytes (gradient
 * of the input and of the weights). Other operations (conv, fft, crypto,
 * ...) need explicit work in the file. */
#include "common/common.h"
#include "synor/workload.h"
#include "workload/workload_internal.h"

int synor__op_default_sequential(synor_op_type t)
{
    switch (t) {
    case SYNOR_OP_DATA_LOAD: case SYNOR_OP_DATA_PREPROCESS: case SYNOR_OP_TOKENIZATION:
    case SYNOR_OP_DETOKENIZATION: case SYNOR_OP_DECODE_STEP: case SYNOR_OP_SAMPLING:
    case SYNOR_OP_CHECKPOINT:
        return 1;
    default:
        return 0;
    }
}

static int need(const char *op, const char *dim, int64_t v)
{
    if (v > 0)
        return 0;
    return synor__error(SYNOR_EINVAL, "operation %s needs a positive \"%s\"", op, dim);
}

int synor_op_derive(synor_op *op)
{
    const synor_op_dims *d = &op->dims;
    const char *name = synor_op_type_name(op->type);
    double s = synor_dtype_bits(op->dtype) / 8.0;
    double flops = 0, rd = 0, wr = 0;
    int rc = 0;
    switch (op->type) {
    case SYNOR_OP_MATMUL:
        if ((rc = need(name, "m", d->m)) || (rc = need(name, "n", d->n)) ||
            (rc = need(name, "k", d->k)))
            return rc;
        flops = 2.0 * d->m * d->n * d->k;
        rd = ((double)d->m * d->k + (double)d->k * d->n) * s;
        wr = (double)d->m * d->n * s;
        break;
    case SYNOR_OP_SELF_ATTENTION:
    case SYNOR_OP_CROSS_ATTENTION:
    case SYNOR_OP_FLASH_ATTENTION: {
        if ((rc = need(name, "batch", d->batch)) || (rc = need(name, "seq", d->seq)) ||
            (rc = need(name, "heads", d->heads)) || (rc = need(name, "head_dim", d->head_dim)))
            return rc;
        double b = (double)d->batch, q = (double)d->seq, L = (double)(d->kv_len ? d->kv_len : d->seq);
        double h = (double)d->heads, g = (double)(d->kv_heads ? d->kv_heads : d->heads);
        double hd = (double)d->head_dim;
        flops = 4 * b * h * q * L * hd + 5 * b * h * q * L;
        rd = (b * q * h * hd + 2 * b * L * g * hd) * s;
        wr = b * q * h * hd * s;
        if (op->type != SYNOR_OP_FLASH_ATTENTION) {
            rd += b * h * q * L * s;
            wr += b * h * q * L * s;
        }
        break;
    }
    case SYNOR_OP_FEED_FORWARD: {
        if ((rc = need(name, "batch", d->batch)) || (rc = need(name, "seq", d->seq)) ||
            (rc = need(name, "hidden", d->hidden)) || (rc = need(name, "ffn", d->ffn)))
            return rc;
        double T = (double)d->batch * d->seq, H = (double)d->hidden, F = (double)d->ffn;
        flops = 6 * T * H * F;
        rd = (3 * H * F + T * H) * s;
        wr = T * H * s;
        break;
    }
    case SYNOR_OP_EMBEDDING:
    case SYNOR_OP_GATHER: {
        if ((rc = need(name, "batch", d->batch)) || (rc = need(name, "seq", d->seq)) ||
            (rc = need(name, "hidden", d->hidden)))
            return rc;
        double T = (double)d->batch * d->seq;
        rd = T * d->hidden * s;
        wr = T * d->hidden * s;
        break;
    }
    case SYNOR_OP_TRANSFORMER_LAYER:
    case SYNOR_OP_DECODE_STEP: {
        /* A pre-norm decoder layer: Q,K,V,O projections, attention over
         * kv_len keys, SwiGLU feed-forward; decode_step is `layers` of them
         * for seq new tokens. Weights are read once per layer. */
        if ((rc = need(name, "batch", d->batch)) || (rc = need(name, "seq", d->seq)) ||
            (rc = need(name, "heads", d->heads)) || (rc = need(name, "head_dim", d->head_dim)) ||
            (rc = need(name, "hidden", d->hidden)) || (rc = need(name, "ffn", d->ffn)))
            return rc;
        if (op->type == SYNOR_OP_DECODE_STEP && (rc = need(name, "layers", d->layers)))
            return rc;
        double b = (double)d->batch, q = (double)d->seq, T = b * q;
        double L = (double)(d->kv_len ? d->kv_len : d->seq);
        double h = (double)d->heads, g = (double)(d->kv_heads ? d->kv_heads : d->heads);
        double hd = (double)d->head_dim, H = (double)d->hidden, F = (double)d->ffn;
        double nl = op->type == SYNOR_OP_DECODE_STEP ? (double)d->layers : 1;
        double w_attn = H * (h * hd) * 2 + H * (g * hd) * 2; /* Wq, Wo, Wk, Wv */
        double w_ffn = 3 * H * F;
        flops = nl * (2 * T * (w_attn + w_ffn) + 4 * b * h * q * L * hd + 5 * b * h * q * L +
                      16 * T * H);
        rd = nl * ((w_attn + w_ffn + 2 * H) * s + T * H * s + 2 * b * L * g * hd * s);
        wr = nl * (T * H * s + 2 * T * g * hd * s); /* output, new K and V */
        break;
    }
    case SYNOR_OP_OUTPUT_PROJECTION:
    case SYNOR_OP_CROSS_ENTROPY_LOSS: {
        if ((rc = need(name, "batch", d->batch)) || (rc = need(name, "seq", d->seq)) ||
            (rc = need(name, "vocab", d->vocab)))
            return rc;
        double T = (double)d->batch * d->seq, V = (double)d->vocab;
        if (op->type == SYNOR_OP_OUTPUT_PROJECTION) {
            if ((rc = need(name, "hidden", d->hidden)))
                return rc;
            double H = (double)d->hidden;
            flops = 2 * T * H * V;
            rd = (H * V + T * H) * s;
            wr = T * V * s;
        } else { /* log-softmax over the logits and a gather: ~5 per logit */
            flops = 5 * T * V;
            rd = T * V * s;
            wr = T * s;
        }
        break;
    }
    case SYNOR_OP_KV_CACHE: {
        if ((rc = need(name, "batch", d->batch)) || (rc = need(name, "seq", d->seq)) ||
            (rc = need(name, "head_dim", d->head_dim)))
            return rc;
        double g = (double)(d->kv_heads ? d->kv_heads : d->heads);
        if ((rc = need(name, "kv_heads", (int64_t)g)))
            return rc;
        double kv = 2.0 * d->batch * d->seq * g * d->head_dim * s;
        rd = kv;
        wr = kv;
        break;
    }
    case SYNOR_OP_OPTIMIZER_STEP: {
        /* AdamW over E parameters: read weight, gradient, m, v; write weight,
         * m, v; about 12 operations per parameter. */
        if ((rc = need(name, "elements", d->elements)))
            return rc;
        double E = (double)d->elements;
        flops = 12 * E;
        rd = 4 * E * s;
        wr = 3 * E * s;
        break;
    }
    case SYNOR_OP_ALL_REDUCE: {
        /* Ring all-reduce of E elements: each device sends and receives
         * about 2E elements and adds E. */
        if ((rc = need(name, "elements", d->elements)))
            return rc;
        double E = (double)d->elements;
        flops = E;
        rd = 2 * E * s;
        wr = 2 * E * s;
        break;
    }
    case SYNOR_OP_DATA_LOAD:
    case SYNOR_OP_DATA_PREPROCESS:
    case SYNOR_OP_TOKENIZATION:
    case SYNOR_OP_DETOKENIZATION:
    case SYNOR_OP_CHECKPOINT: {
        /* E elements (bytes of text, tokens, parameters) streamed through
         * once; tokenizers do tens of operations per byte (BPE merges). */
        if ((rc = need(name, "elements", d->elements)))
            return rc;
        double E = (double)d->elements;
        double c = op->type == SYNOR_OP_TOKENIZATION || op->type == SYNOR_OP_DETOKENIZATION ? 50
                   : op->type == SYNOR_OP_DATA_PREPROCESS                                    ? 10
                                                                                             : 0;
        flops = c * E;
        rd = E * s;
        wr = E * s;
        break;
    }
    case SYNOR_OP_RELU: case SYNOR_OP_GELU: case SYNOR_OP_SILU: case SYNOR_OP_SOFTMAX:
    case SYNOR_OP_LAYER_NORM: case SYNOR_OP_RMS_NORM: case SYNOR_OP_BATCH_NORM:
    case SYNOR_OP_ROPE: case SYNOR_OP_TRANSPOSE: case SYNOR_OP_RESHAPE: case SYNOR_OP_CONCAT:
    case SYNOR_OP_SPLIT: case SYNOR_OP_SCATTER: case SYNOR_OP_SUM: case SYNOR_OP_MEAN:
    case SYNOR_OP_MAX: case SYNOR_OP_ARGMAX: case SYNOR_OP_TOPK: case SYNOR_OP_SAMPLING: {
        if ((rc = need(name, "elements", d->elements)))
            return rc;
        double c;
        switch (op->type) {
        case SYNOR_OP_RELU: c = 1; break;
        case SYNOR_OP_GELU: c = 8; break;
        case SYNOR_OP_SILU: c = 4; break;
        case SYNOR_OP_SOFTMAX: c = 5; break;
        case SYNOR_OP_LAYER_NORM: case SYNOR_OP_BATCH_NORM: c = 8; break;
        case SYNOR_OP_RMS_NORM: c = 4; break;
        case SYNOR_OP_ROPE: c = 6; break;
        case SYNOR_OP_TRANSPOSE: case SYNOR_OP_RESHAPE: case SYNOR_OP_CONCAT:
        case SYNOR_OP_SPLIT: case SYNOR_OP_SCATTER: c = 0; break;
        default: c = 1; break;
        }
        int reduce = op->type == SYNOR_OP_SUM || op->type == SYNOR_OP_MEAN ||
                     op->type == SYNOR_OP_MAX || op->type == SYNOR_OP_ARGMAX ||
                     op->type == SYNOR_OP_TOPK || op->type == SYNOR_OP_SAMPLING;
        flops = c * (double)d->elements;
        rd = (double)d->elements * s;
        wr = reduce ? s : (double)d->elements * s;
        break;
    }
    default:
        return synor__error(SYNOR_EINVAL,
                            "operation %s has no work formula: give \"flops\", \"bytes_read\" and "
                            "\"bytes_written\"",
                            name);
    }
    if (op->backward) {
        flops *= 2;
        rd *= 2;
        wr *= 2;
    }
    op->work.type = op->type;
    op->work.dtype = op->dtype;
    op->work.flops = flops;
    op->work.bytes_read = rd;
    op->work.bytes_written = wr;
    return 0;
}
