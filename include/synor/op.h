/* synor/op.h - operation types, data types, and the work an operation does.
 *
 * The operation list is the seed's OperationType list (001 §1.2) plus the
 * composite and training/inference steps the decomposers produce, and
 * "custom": an operation the cost model knows nothing about, whose time
 * comes from the workload (explicit work, or an explicit cost row per device
 * as in published scheduling benchmarks, docs/WORKLOADS.md). Names are the
 * snake_case strings used in profile and workload files. */
#ifndef SYNOR_OP_H
#define SYNOR_OP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X-macro list: enum suffix, file name. Order is the ABI; append only. */
#define SYNOR_OP_TYPE_MAP(X)                       \
    X(MATMUL, "matmul")                            \
    X(CONV2D, "conv2d")                            \
    X(CONV3D, "conv3d")                            \
    X(DEPTHWISE_CONV, "depthwise_conv")            \
    X(BATCH_NORM, "batch_norm")                    \
    X(LAYER_NORM, "layer_norm")                    \
    X(SELF_ATTENTION, "self_attention")            \
    X(CROSS_ATTENTION, "cross_attention")          \
    X(FLASH_ATTENTION, "flash_attention")          \
    X(RELU, "relu")                                \
    X(GELU, "gelu")                                \
    X(SILU, "silu")                                \
    X(SOFTMAX, "softmax")                          \
    X(SUM, "sum")                                  \
    X(MEAN, "mean")                                \
    X(MAX, "max")                                  \
    X(ARGMAX, "argmax")                            \
    X(TRANSPOSE, "transpose")                      \
    X(RESHAPE, "reshape")                          \
    X(CONCAT, "concat")                            \
    X(SPLIT, "split")                              \
    X(GATHER, "gather")                            \
    X(SCATTER, "scatter")                          \
    X(EMBEDDING, "embedding")                      \
    X(ROPE, "rope")                                \
    X(KV_CACHE, "kv_cache")                        \
    X(TOPK, "topk")                                \
    X(SAMPLING, "sampling")                        \
    X(DATA_LOAD, "data_load")                      \
    X(DATA_PREPROCESS, "data_preprocess")          \
    X(TOKENIZATION, "tokenization")                \
    X(DETOKENIZATION, "detokenization")            \
    X(FEED_FORWARD, "feed_forward")                \
    X(TRANSFORMER_LAYER, "transformer_layer")      \
    X(DECODE_STEP, "decode_step")                  \
    X(OUTPUT_PROJECTION, "output_projection")      \
    X(CROSS_ENTROPY_LOSS, "cross_entropy_loss")    \
    X(ALL_REDUCE, "all_reduce")                    \
    X(OPTIMIZER_STEP, "optimizer_step")            \
    X(CHECKPOINT, "checkpoint")                    \
    X(RMS_NORM, "rms_norm")                        \
    X(FFT, "fft")                                  \
    X(FIR_FILTER, "fir_filter")                    \
    X(CRYPTO_HASH, "crypto_hash")                  \
    X(CUSTOM, "custom")

typedef enum synor_op_type {
#define SYNOR__OP_ENUM(e, s) SYNOR_OP_##e,
    SYNOR_OP_TYPE_MAP(SYNOR__OP_ENUM)
#undef SYNOR__OP_ENUM
    SYNOR_OP_TYPE_COUNT
} synor_op_type;

/* A set of operation types: bit (1 << op). */
typedef uint64_t synor_op_set;
#define SYNOR_OP_BIT(op) ((synor_op_set)1 << (op))
#define SYNOR_OP_SET_ALL ((((synor_op_set)1) << SYNOR_OP_TYPE_COUNT) - 1)

#define SYNOR_DTYPE_MAP(X)        \
    X(FP64, "fp64", 64)           \
    X(FP32, "fp32", 32)           \
    X(TF32, "tf32", 32)           \
    X(FP16, "fp16", 16)           \
    X(BF16, "bf16", 16)           \
    X(FP8, "fp8", 8)              \
    X(INT8, "int8", 8)            \
    X(INT4, "int4", 4)

typedef enum synor_dtype {
#define SYNOR__DT_ENUM(e, s, bits) SYNOR_DTYPE_##e,
    SYNOR_DTYPE_MAP(SYNOR__DT_ENUM)
#undef SYNOR__DT_ENUM
    SYNOR_DTYPE_COUNT
} synor_dtype;

/* A set of data types: bit (1 << dtype). */
typedef uint32_t synor_dtype_set;
#define SYNOR_DTYPE_BIT(t) ((synor_dtype_set)1 << (t))

const char *synor_op_type_name(synor_op_type op);
int synor_op_type_from_name(const char *name, synor_op_type *out); /* 0 or SYNOR_EINVAL */
const char *synor_dtype_name(synor_dtype t);
int synor_dtype_from_name(const char *name, synor_dtype *out);
/* Storage size in bits (tf32 is stored in 32 bits). */
unsigned synor_dtype_bits(synor_dtype t);

/* The work one operation does, the input of every cost estimate:
 * FLOPs (or integer ops) and bytes moved to and from the device's memory. */
typedef struct synor_op_work {
    synor_op_type type;
    synor_dtype dtype;
    double flops;         /* floating-point (or integer) operations */
    double bytes_read;    /* from device memory */
    double bytes_written; /* to device memory */
    int sparse;           /* 2:4 structured sparsity can be used */
} synor_op_work;

#ifdef __cplusplus
}
#endif
#endif
