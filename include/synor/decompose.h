/* synor/decompose.h - decomposers: workloads generated from model
 * hyper-parameters (seed 001, Part 2 §2.2 and Part 5 §5.1).
 *
 * LLM inference: tokenization -> embedding -> prefill through every layer
 * (compute-bound: all prompt tokens at once) -> output projection and
 * sampling of the first token -> for each further token: embedding, one
 * decode task per layer (memory-bound: it reads the layer's weights and its
 * KV cache for one token), output projection, sampling -> detokenization.
 *
 * LLM training iteration: data load -> preprocess -> tokenization ->
 * embedding -> per layer: QKV projection, self-attention (flash), output
 * projection, feed-forward -> output projection -> loss -> the backward of
 * each of those in reverse -> all-reduce of the gradients -> AdamW step ->
 * asynchronous checkpoint (nothing waits for it).
 *
 * Model weights are external data (resident on the devices that use them
 * before the run; see workload.h), one item per layer, so a plan may split
 * the layers of a model that fits no single device across several. Each
 * task carries the processor kind the seed names as optimal (preferred) and
 * its fallback. */
#ifndef SYNOR_DECOMPOSE_H
#define SYNOR_DECOMPOSE_H

#include <stdint.h>

#include "synor/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_llm_config {
    const char *name;
    int64_t layers;
    int64_t heads, kv_heads; /* kv_heads < heads: grouped-query attention */
    int64_t hidden;          /* model dimension; head_dim = hidden / heads */
    int64_t ffn;             /* SwiGLU inner dimension */
    int64_t vocab;
    int64_t context;         /* maximum sequence length */
    synor_dtype dtype;       /* weights and activations */
} synor_llm_config;

/* Presets: "llama-2-7b", "llama-2-70b", "tiny" (the stories15M shape). */
int synor_llm_preset(const char *name, synor_llm_config *out);
size_t synor_llm_preset_count(void);
const char *synor_llm_preset_name(size_t i);

/* Parameters (weights) of the model: embeddings, layers, norms, output. */
double synor_llm_params(const synor_llm_config *m);

/* Inference of batch sequences of prompt tokens, generating new_tokens
 * (>= 1) each. prompt + new_tokens must not exceed the context. */
int synor_decompose_llm_inference(const synor_llm_config *m, int64_t batch, int64_t prompt,
                                  int64_t new_tokens, synor_workload **out);

/* One training iteration on batch sequences of seq tokens. Optimizer state
 * and the all-reduce are in fp32. */
int synor_decompose_llm_training(const synor_llm_config *m, int64_t batch, int64_t seq,
                                 synor_workload **out);

/* How data-parallel replicas reduce their gradients (llm_parallel.c):
 * RING: reduce-scatter, AdamW on each rank's 1/dp of the parameters (its
 * optimizer state sharded, ZeRO stage 1), all-gather; TREE: binary-tree
 * reduction to a root per bucket, AdamW there, binary-tree broadcast. */
typedef enum synor_collective {
    SYNOR_COLLECTIVE_RING = 0,
    SYNOR_COLLECTIVE_TREE = 1
} synor_collective;

/* One training iteration in data parallel: dp replicas (1 to 64), each a
 * colocation group "dp.R" with its own copy of the weights, each running
 * batch / dp sequences (batch must be a multiple of dp); gradients reduced
 * per layer bucket with the collective, each step a task on the receiving
 * rank whose input edge carries the message. */
int synor_decompose_llm_training_dp(const synor_llm_config *m, int64_t batch, int64_t seq,
                                    int64_t dp, synor_collective coll, synor_workload **out);

/* One training iteration of batch sequences in micro_batches (1 to 64,
 * dividing batch), gradients accumulated: one AdamW per layer bucket on all
 * the micro-batches' gradients. No groups: the pipeline strategy splits
 * its layers into stages that the micro-batches flow through (GPipe). */
int synor_decompose_llm_training_micro(const synor_llm_config *m, int64_t batch, int64_t seq,
                                       int64_t micro_batches, synor_workload **out);

/* Inference in tensor parallel (Megatron-LM): each layer's attention heads,
 * KV heads and MLP inner dimension, and the output projection's vocabulary,
 * split tp ways (1 to 64; each must divide), each shard a colocation group
 * "tp.J"; a layer's partial sums reach every shard of the next layer
 * (one-shot all-reduce). */
int synor_decompose_llm_inference_tp(const synor_llm_config *m, int64_t batch, int64_t prompt,
                                     int64_t new_tokens, int64_t tp, synor_workload **out);

#ifdef __cplusplus
}
#endif
#endif
