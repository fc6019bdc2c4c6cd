/* synor/llm.h - the LLM inference engine: Llama-architecture models from
 * GGUF files and llama2.c checkpoints, run on the task runtime's workers
 * (issue 12; seed 001 §5, seed 003 Part 2).
 *
 * A model (synor_llm) is the configuration, the weights - views into the
 * memory-mapped file, in the file's element type (F32, F16, BF16, Q8_0,
 * Q4_0; llama2.c's int8 version 2 as Q8 groups with fp32 scales) - and the
 * tokenizer. It is read-only once loaded, so any number of contexts share
 * it.
 *
 * A context (synor_llm_ctx) runs the model on a runtime: it owns the
 * activations and a paged KV cache (blocks of SYNOR_LLM_KV_BLOCK positions
 * allocated on demand from a pool and returned when a sequence is reset),
 * and runs batches: a batch is n (sequence, position, token) rows, any mix
 * of prompt tokens and decode tokens of different sequences. Each matrix
 * product of a batch is split by output rows into one task per runtime
 * worker; normalisation, RoPE, attention and SwiGLU run as tasks too, so the
 * runtime's workers are the engine's only threads.
 *
 * The arithmetic is Llama's (and llama2.c's run.c): RMSNorm (eps from the
 * file, 1e-5 for llama2.c), rotary embeddings on adjacent pairs (base from
 * the file, 10000 for llama2.c), grouped-query attention with a causal
 * mask, SwiGLU, a tied or separate classifier. Q8_0 and Q4_0 weights
 * multiply activations quantized to Q8_0 blocks (as llama.cpp does); F32,
 * F16 and BF16 weights multiply fp32 activations. Kernels are chosen at
 * run time for the CPU's instruction set (AVX-512, AVX2+FMA, or portable
 * C): synor_llm_isa names the one in use. */
#ifndef SYNOR_LLM_H
#define SYNOR_LLM_H

#include <stddef.h>
#include <stdint.h>

#include "synor/model.h"
#include "synor/runtime.h"
#include "synor/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_llm synor_llm;
typedef struct synor_llm_ctx synor_llm_ctx;

typedef struct synor_llm_hparams {
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int head_dim;    /* dim / n_heads */
    float norm_eps;  /* RMSNorm epsilon */
    float rope_base; /* RoPE frequency base */
    int shared_classifier;
} synor_llm_hparams;

typedef struct synor_llm_load_opts {
    /* llama2.c checkpoints: the tokenizer.bin; NULL: "tokenizer.bin" in the
     * checkpoint's folder. Ignored for GGUF (its metadata has the
     * vocabulary). */
    const char *tokenizer;
    /* 1: batches keep Q8_0/Q4_0 weights in the file's layout (no repacked
     * copy: less memory, slower batches; for A/B measurements); 0: the
     * products are repacked for batches when a context of batches is made
     * and the CPU has the tiles for it. */
    int no_pack;
} synor_llm_load_opts;

/* Loads a GGUF file (general.architecture "llama") or a llama2.c
 * checkpoint (told apart by their first bytes). Checks that every tensor
 * the architecture needs is there with the shape the configuration implies
 * (naming the tensor, the shape found and the one expected). opts may be
 * NULL. SYNOR_EIO, SYNOR_EPARSE, SYNOR_ESCHEMA, SYNOR_ENOTSUP, SYNOR_ENOMEM
 * with a message naming the file. */
int synor_llm_load(const char *path, const synor_llm_load_opts *opts, synor_llm **out);
void synor_llm_destroy(synor_llm *m); /* accepts NULL */
const synor_llm_hparams *synor_llm_hparams_get(const synor_llm *m);
const synor_tokenizer *synor_llm_tokenizer(const synor_llm *m);
/* The GGUF file's chat template (tokenizer.chat_template, a Jinja text),
 * or NULL (none; llama2.c checkpoints). */
const char *synor_llm_chat_template(const synor_llm *m);
/* The end-of-turn token (tokenizer.ggml.eot_token_id), or -1. */
int32_t synor_llm_eot(const synor_llm *m);
/* Fill-in-the-middle's markers (tokenizer.ggml.fim_pre/fim_suf/fim_mid
 * _token_id, or CodeLlama's prefix/suffix/middle_token_id) into out, -1
 * where absent; 1 when the model has all three. */
int synor_llm_fim(const synor_llm *m, int32_t out[3]);
/* "gguf" or "llama2.c v0" and so on, and the weights' element type as
 * synor_ttype_name names it ("Q8_0"; "Q8 groups" for llama2.c version 2;
 * "mixed" when the matrices differ). */
const char *synor_llm_format(const synor_llm *m);
const char *synor_llm_weight_type(const synor_llm *m);
/* Bytes of weights mapped. */
uint64_t synor_llm_weight_bytes(const synor_llm *m);

/* "avx512", "avx2" or "generic": the kernels chosen for this CPU. */
const char *synor_llm_isa(void);

/* ------------------------------------------------------------- contexts */

#define SYNOR_LLM_KV_BLOCK 16 /* positions per KV-cache block */

typedef struct synor_llm_ctx_opts {
    unsigned max_seqs;  /* sequences at once; default 1 */
    unsigned max_batch; /* rows per batch; default 512 */
    /* KV-cache blocks in the pool; 0: enough for max_seqs sequences of the
     * model's full seq_len. */
    unsigned kv_blocks;
    /* CUDA offload (as llama.cpp's -ngl): the matrix products (Q/K/V,
     * output, gate/up, down) of the last gpu_layers transformer blocks run
     * with cuBLAS on the runtime's CUDA GPU number gpu_device (0: the
     * first), their weights uploaded once, at creation, dequantized to
     * fp32 and resident in device memory; activations cross to the GPU and
     * back at each product. gpu_layers >= n_layers (SYNOR_LLM_GPU_ALL):
     * every block and the classifier. SYNOR_LLM_GPU_AUTO: as many of the
     * last blocks as fit in the GPU's memory (as the runtime counts it,
     * less a reserve), all and the classifier when they fit; none if none
     * does. 0 (default): CPU only. RMSNorm,
     * RoPE, attention over the KV cache (host memory) and SwiGLU stay on
     * the CPU workers. The runtime must have been created with cfg.cuda. */
    int gpu_layers;
    unsigned gpu_device;
    /* SYNOR_LLM_GPU_CUDA (0): gpu_device is the runtime's CUDA device
     * number, the products run with cuBLAS; SYNOR_LLM_GPU_OPENCL: its
     * OpenCL device number (PoCL's CPU device counts when the runtime was
     * created with SYNOR_OPENCL_ALL), the products run with the engine's
     * own OpenCL kernel, the rest as above. */
    unsigned gpu_backend;
    /* The KV cache's element type: SYNOR_LLM_KV_F32 (0, default: the
     * attention the fp64 reference is compared with) or SYNOR_LLM_KV_F16
     * (half the cache's memory and the bytes attention reads a step, as
     * llama.cpp's default; keys and values rounded to F16 on store, the
     * dot products and sums in fp32). */
    unsigned kv_type;
    /* Prefix caching (vLLM's automatic prefix caching): non-zero keeps the
     * full KV blocks that sequences publish (synor_llm_seq_publish: the
     * scheduler publishes a prompt's, and an answer's where the layers have
     * no F32 products and no GPU - their keys and values are then the bits
     * a prompt's rows get) in the pool after they are let go, so a sequence whose
     * tokens begin the same way takes them (synor_llm_seq_reuse) instead
     * of computing them again; idle kept blocks are the first the pool
     * hands out again, least recently used first, when no block is free. */
    int prefix_cache;
} synor_llm_ctx_opts;

enum { SYNOR_LLM_GPU_CUDA = 0, SYNOR_LLM_GPU_OPENCL = 1 };
enum { SYNOR_LLM_KV_F32 = 0, SYNOR_LLM_KV_F16 = 1 };

/* "f32" / "f16" (any case) into *out; SYNOR_EINVAL naming the value
 * otherwise (for --kv-type). And the name of a KV type ("f32", "f16"; NULL
 * for another value). */
int synor_llm_kv_type_parse(const char *s, unsigned *out);
const char *synor_llm_kv_type_name(unsigned kv_type);

#define SYNOR_LLM_GPU_ALL 0x7fffffff
#define SYNOR_LLM_GPU_AUTO (-1)

/* What of a context runs on a GPU (all zero when nothing does). */
typedef struct synor_llm_gpu_info {
    int layers;                  /* transformer blocks, the last ones */
    int classifier;              /* 1: the classifier too */
    char device[64];             /* the runtime's name ("cuda0") */
    char product[128];           /* the GPU's ("NVIDIA H200") */
    uint64_t weight_bytes;       /* fp32 weights resident on it */
    uint64_t bytes_up, bytes_down; /* activations copied since creation */
    uint64_t products;           /* cuBLAS calls (GEMM, or GEMV for one row) */
} synor_llm_gpu_info;

void synor_llm_ctx_gpu(const synor_llm_ctx *c, synor_llm_gpu_info *out);

/* ------------------------------------------------ prefill / decode split
 * Of the last layers a context uploaded (synor_llm_gpu_info.layers), how
 * many run on the GPU can differ between batches of several rows (prefill,
 * and batches of many sequences) and batches of one row (one-sequence
 * decode): per-layer round trips make a GPU layer slower than the CPU's for
 * one row of a small model, faster for a batch. The results do not depend
 * on the split beyond float rounding (the GPU's products are fp32 on the
 * same weights). After creation both are every uploaded layer. */
typedef struct synor_llm_split {
    int prefill; /* GPU layers (the last ones) for batches of > 1 row */
    int decode;  /* for batches of one row */
} synor_llm_split;

/* SYNOR_EINVAL (naming the value) for a count outside 0 .. the layers
 * uploaded; a count equal to n_layers puts the classifier on the GPU too
 * when it was uploaded (SYNOR_LLM_GPU_ALL, or AUTO when all fit). */
int synor_llm_ctx_set_split(synor_llm_ctx *c, const synor_llm_split *s);
void synor_llm_ctx_get_split(const synor_llm_ctx *c, synor_llm_split *out);

/* The split planner: a short calibration on the context's own devices
 * (sequence 0 is used and reset) times every layer of a batch of
 * `prompt_rows` rows and of one row, once with no layer on the GPU and once
 * with every uploaded one (the best of `reps` runs of each, after one
 * warm-up), then estimates every split k = 0 .. uploaded layers as the
 * measured CPU times of the first layers plus the measured GPU times of the
 * last k (the GPU's include their copies: activations live in host memory,
 * so a CPU-GPU boundary costs nothing more) plus the classifier and the
 * rest, and takes the fastest for each phase. Sets the split; leaves
 * tracing off (synor_llm_ctx_trace). */
#define SYNOR_LLM_PLAN_MAX_LAYERS 256
typedef struct synor_llm_split_plan {
    synor_llm_split split;      /* the decision */
    int layers, uploaded;       /* the model's layers; those on the GPU */
    int prompt_rows;
    /* per layer, seconds: [phase 0 prefill, 1 decode][device 0 CPU, 1 GPU] */
    double layer_s[2][2][SYNOR_LLM_PLAN_MAX_LAYERS];
    double cls_s[2][2];         /* the classifier (GPU: 0 when not uploaded) */
    double rest_s[2][2];        /* the batch's wall time not in a layer */
    double measured_s[2][2];    /* the batch's wall time, no GPU layer / all */
    double estimate_s[2][SYNOR_LLM_PLAN_MAX_LAYERS + 1]; /* per k */
    double calibration_s;       /* the calibration's own wall time */
} synor_llm_split_plan;

/* SYNOR_EINVAL when no layer is on a GPU or prompt_rows is outside
 * 1 .. max_batch; the errors of synor_llm_batch. */
int synor_llm_plan_split(synor_llm_ctx *c, int prompt_rows, int reps, synor_llm_split_plan *out);

/* ----------------------------------------------------- the engine's trace
 * With tracing on, every task of every batch (and, for a GPU step, its copy
 * up, its product and its copy down, each timed by waiting for the stream:
 * a little slower) is recorded, times in seconds since tracing was turned
 * on (the monotonic clock). */
typedef struct synor_llm_event {
    double start, end;
    const char *op;     /* "qkv", "attention", "out", "ffn_up", "ffn_down",
                           "classifier", "rope_kv", "swiglu"; on the GPU
                           "sgemm", "sgemv" and the copies "h2d", "d2h";
                           "gpu_step": the CPU worker driving a GPU step */
    int layer;          /* -1: the classifier */
    int worker;         /* the runtime worker that ran (or drove) it */
    int gpu;            /* 1: on the GPU (products and copies) */
    int prefill;        /* 1: in a batch of more than one row */
    unsigned rows;      /* the batch's rows */
    uint64_t bytes;     /* copies */
} synor_llm_event;

/* Turns tracing on (clearing what was recorded) or off. SYNOR_ENOMEM. */
int synor_llm_ctx_trace(synor_llm_ctx *c, int on);
/* The events recorded (valid until the next batch or trace call). */
const synor_llm_event *synor_llm_ctx_events(const synor_llm_ctx *c, size_t *n);

/* A context on rt (created, and started or not: the engine starts it).
 * opts may be NULL. SYNOR_ENOMEM; with gpu_layers: SYNOR_ENOTSUP (no such
 * CUDA device in rt, no cuBLAS, a driver without stream-ordered copies),
 * SYNOR_ENOMEM (device memory), SYNOR_EIO (a CUDA error). */
int synor_llm_ctx_create(synor_llm *m, synor_runtime *rt, const synor_llm_ctx_opts *opts,
                         synor_llm_ctx **out);
void synor_llm_ctx_destroy(synor_llm_ctx *c); /* accepts NULL */

/* Forgets sequence seq's cache and returns its blocks to the pool. */
void synor_llm_seq_reset(synor_llm_ctx *c, unsigned seq);
/* Positions cached for seq (the next position to run). */
int synor_llm_seq_len(const synor_llm_ctx *c, unsigned seq);
/* Drops the cache of seq from position pos on (speculative decoding's
 * rollback); blocks no longer used go back to the pool. */
int synor_llm_seq_truncate(synor_llm_ctx *c, unsigned seq, int pos);
/* KV blocks in use (held by sequences; idle published blocks, which the
 * pool hands out again when it needs them, are not) and in the pool. */
void synor_llm_kv_usage(const synor_llm_ctx *c, unsigned *used, unsigned *total);

/* Prefix caching (ctx opts.prefix_cache; without it both are no-ops).
 * synor_llm_seq_reuse: seq must be empty; it takes the published blocks
 * that hold the longest run of whole blocks beginning tokens[0 .. n - 1)
 * (the last token is left to compute: its logits are the next token's),
 * checked token by token, and returns the positions it now holds (a
 * multiple of SYNOR_LLM_KV_BLOCK, 0 if none); the caller runs tokens from
 * there. synor_llm_seq_publish: the whole blocks of seq's first n
 * positions, whose tokens are tokens[0 .. n), may be reused by others
 * (call it for positions computed as a prompt is: a token's keys and
 * values are the same bits whichever batch computed them only among rows
 * that took the same kernels); blocks already published are skipped, and
 * a block equal to one already in the table stays private. */
int synor_llm_seq_reuse(synor_llm_ctx *c, unsigned seq, const int32_t *tokens, size_t n);
int synor_llm_seq_publish(synor_llm_ctx *c, unsigned seq, const int32_t *tokens, size_t n);

typedef struct synor_llm_prefix_stats {
    int enabled;
    unsigned cached_blocks; /* in the table: held or idle */
    unsigned idle_blocks;   /* in the table, held by no sequence */
    uint64_t lookups;       /* synor_llm_seq_reuse calls */
    uint64_t reused_blocks; /* blocks they took */
    uint64_t published_blocks, evicted_blocks;
} synor_llm_prefix_stats;
void synor_llm_prefix_stats_get(const synor_llm_ctx *c, synor_llm_prefix_stats *out);
/* Writes (zeros) up to nblocks KV blocks never handed out yet, the next
 * ones the pool will hand out, so that a sequence taking them later does
 * not pay the first writes' page faults inside a batch (a server calls it
 * while idle; not while a batch runs on c). Returns the blocks still never
 * written: 0 once the whole pool has been. What sequences hold is not
 * touched. */
unsigned synor_llm_kv_warm(synor_llm_ctx *c, unsigned nblocks);

/* One batch: row i runs token tokens[i] of sequence seqs[i] at the next
 * position of that sequence (rows of one sequence in order). Logits are
 * computed for the rows with want[i] != 0 (want NULL: the last row of each
 * sequence) and read with synor_llm_logits. SYNOR_EINVAL (a token or
 * sequence out of range, n above max_batch), SYNOR_ERANGE (a sequence would
 * pass seq_len), SYNOR_ENOMEM (the KV pool is exhausted: nothing was run
 * and no cache changed), or a runtime error. */
int synor_llm_batch(synor_llm_ctx *c, size_t n, const int32_t *tokens, const unsigned *seqs,
                    const uint8_t *want);
/* The logits of row i of the last batch (vocab_size floats), or NULL if
 * they were not asked for. Valid until the next batch. */
const float *synor_llm_logits(const synor_llm_ctx *c, size_t i);

/* A unit-length embedding of text (dim floats into out) from the model's
 * own hidden states: the final hidden state of every token, after the
 * final RMSNorm, averaged - for the semantic cache (synor/cache.h). Runs
 * on sequence seq of c and leaves it empty. */
int synor_llm_embed(synor_llm_ctx *c, unsigned seq, const char *text, float *out);

/* ------------------------------------------------------------- sampling */

/* Plain data: state is the whole of the random generator (xorshift64*),
 * advanced by exactly one step per draw and by nothing else, so a copy of
 * the struct taken after a draw and restored later continues the same
 * draws (how llm-generate's checkpoints resume a seeded sampling,
 * synor_llm_generate_ids). */
typedef struct synor_sampler {
    float temperature; /* 0: greedy (argmax, the lowest id on ties) */
    int top_k;         /* 0: off */
    float top_p;       /* 1: off */
    uint64_t state;    /* the random state; synor_sampler_init seeds it */
} synor_sampler;

void synor_sampler_init(synor_sampler *s, float temperature, int top_k, float top_p, uint64_t seed);
/* Draws a token from logits (n values; not modified). Deterministic for a
 * given seed and sequence of calls. The token is the candidate (after
 * top-k and top-p) with the largest logit / temperature plus Gumbel noise
 * hashed from the draw and the token, so it depends only on the state and
 * the logits: a copy of the state drawing from another model's logits
 * picks the same token wherever that model ranks it first under the same
 * noise (how the scheduler's speculative rounds keep a seeded answer). */
int32_t synor_sampler_sample(synor_sampler *s, const float *logits, int n);

/* ----------------------------------------------------------- generation */

/* Called with each generated token and its text; return non-zero to stop. */
typedef int (*synor_llm_on_token)(int32_t token, const char *text, size_t len, void *user);

typedef struct synor_llm_gen_stats {
    size_t prompt_tokens, generated;
    size_t decode_steps;        /* one-token batches run (generated - 1 at most) */
    double prefill_s, decode_s; /* monotonic wall time of the prompt's batches
                                   and of the decode steps with their sampling */
} synor_llm_gen_stats;

/* Encodes prompt (with BOS), runs it as one batch (prefill), then decodes
 * up to n_new tokens on sequence 0 of c (reset first), stopping early at
 * EOS or BOS or when on_token says so. */
int synor_llm_generate(synor_llm_ctx *c, const char *prompt, int n_new, synor_sampler *s,
                       synor_llm_on_token on_token, void *user, synor_llm_gen_stats *stats);

/* Generation from token ids that can stop and resume with the same tokens
 * as a run not stopped. ids[0 .. n_prompt) is the prompt as encoded (BOS
 * first), ids[n_prompt .. n_prompt + n_done) the tokens a stopped run had
 * generated, s the sampler as it was after the last of them; n_new counts
 * every token to generate, those done included. Every `segment` generated
 * tokens the run rebuilds the segment's cache as one batch (generate.c says
 * why), so stopping it (on_token returning non-zero) right after a
 * segment's last token and calling again with the ids so far, n_done their
 * count and the sampler as it then was makes the tokens an uninterrupted
 * run makes, bit for bit, whatever the context's workers; the KV cache is
 * rebuilt from the ids (the prompt and each segment as the batches the
 * uninterrupted run made), not shipped. on_token sees the new tokens only.
 * segment 0: no segments (n_done must be 0; synor_llm_generate on ids).
 * Runs on sequence 0 (reset first); a call whose n_done is where the run
 * would have stopped by itself (n_new, or the context full) generates
 * nothing. SYNOR_EINVAL (n_done not a whole number of segments within
 * n_new, a token outside the vocabulary), SYNOR_ERANGE, or the errors of
 * synor_llm_batch. */
int synor_llm_generate_ids(synor_llm_ctx *c, const int32_t *ids, size_t n_prompt, size_t n_done,
                           int n_new, int segment, synor_sampler *s, synor_llm_on_token on_token,
                           void *user, synor_llm_gen_stats *stats);

/* ------------------------------------------------ speculative decoding */

typedef struct synor_llm_spec_stats {
    size_t steps;     /* target checks (batches of k + 1 rows) */
    size_t proposed;  /* draft tokens proposed */
    size_t accepted;  /* of them accepted: acceptance rate = accepted / proposed */
    size_t generated; /* tokens emitted */
    double seconds;   /* monotonic wall time, prompt included */
    size_t draft_steps;    /* draft batches run (a check's proposals: one each) */
    double draft_seconds;  /* of `seconds`: the draft's batches (and sampling) */
    double check_seconds;  /* of `seconds`: the target's checks (and sampling) */
    size_t lookup_checks;   /* of `steps`: checks of the lookup draft's proposals */
    size_t lookup_proposed; /* of `proposed`: the lookup draft's */
    size_t lookup_accepted; /* of `accepted`: the lookup draft's */
    size_t draft_stops;     /* rounds whose draft stopped short of k (p_min) */
} synor_llm_spec_stats;

/* Generation as synor_llm_generate, with a draft model (a smaller model or
 * the same one quantized, with the same vocabulary) proposing k tokens
 * that the target checks in one batch of k + 1 rows. The standard
 * acceptance rule keeps the output distribution exactly the target's; at
 * temperature 0 the tokens are the target's greedy tokens (then a proposal
 * is accepted iff it is the target's argmax, and no distribution is built). Sequence 0 of
 * both contexts is used (reset first). SYNOR_EINVAL for vocabularies that
 * differ or k outside 1..32. */
int synor_llm_generate_speculative(synor_llm_ctx *target, synor_llm_ctx *draft, const char *prompt,
                                   int n_new, int k, synor_sampler *s, synor_llm_on_token on_token,
                                   void *user, synor_llm_spec_stats *stats);

/* The draft of synor_llm_generate_spec. k: tokens proposed per check
 * (1..32). lookup: 0, or the longest n-gram (2..16) of the lookup draft
 * (prompt lookup; Saxena 2023, LLMA: Yang et al. 2023): before each round
 * the context's last n tokens (n = lookup down to 2) are looked for earlier
 * in the context (prompt and generated text); at the latest match, up to k
 * of the tokens that followed are the proposals, at no model's cost. A
 * round with no match uses the draft model, or, without one, is a plain
 * target step. The proposals are checked as a draft model's are (one-hot
 * draft probabilities: sampled text keeps the target's distribution).
 * p_min: 0, or the draft model's confidence below which it stops
 * proposing (0 < p_min <= 1; llama.cpp's --draft-p-min): before each
 * proposal, the probability of the draft's most likely next token - under
 * the distribution it draws from when sampling (temperature, top-k,
 * top-p), under its plain softmax (temperature 1) when greedy - is
 * compared with p_min, and below it the round ends with the proposals so
 * far (none: a plain target step; p_min 1: only a token the draft is
 * certain of to float precision). The decision depends only on the
 * draft's own context, so the output is still exactly the target's
 * (greedy: its tokens; sampled: its distribution).
 * same_draws: sampled rounds take the sampler's own draws instead of the
 * standard rule's: a proposal is drawn from the draft's logits with the
 * draw its place in the text will take, and accepted when the target's
 * row, drawn with that draw, gives the same token; the text is then the
 * one synor_llm_generate gives for the same seed (as the scheduler's
 * rounds do), at an acceptance a little below the standard rule's when
 * the draft is close (BENCHMARKS.md) and further below when it is not. */
typedef struct synor_llm_spec_opts {
    int k;
    int lookup;
    float p_min;
    int same_draws;
} synor_llm_spec_opts;

/* synor_llm_generate_speculative with the lookup draft: draft may be NULL
 * when o->lookup is on. SYNOR_EINVAL also for a lookup outside 0, 2..16,
 * neither a draft model nor the lookup, or p_min outside 0..1 (or NaN). */
int synor_llm_generate_spec(synor_llm_ctx *target, synor_llm_ctx *draft, const char *prompt,
                            int n_new, const synor_llm_spec_opts *o, synor_sampler *s,
                            synor_llm_on_token on_token, void *user, synor_llm_spec_stats *stats);

/* ----------------------------------------------- continuous batching */

/* An iteration-level scheduler (Orca's continuous batching) over one
 * context: every step runs one batch holding one decode token of every
 * running request plus chunks of waiting prompts (chunked prefill, at most
 * prefill_chunk tokens of one prompt per step, within the step's token
 * budget), so new requests join between steps and finished ones leave
 * without stalling the others. A request takes a sequence of the context
 * (max_seqs at once) and KV blocks as it grows; when the KV pool runs dry
 * the newest running request is preempted (its cache dropped; it is
 * re-queued at the front and recomputes its prompt and the tokens it had
 * generated, as vLLM's recompute preemption).
 *
 * Threads: submit, cancel and stats may be called from any thread while
 * one thread calls step; the callbacks run on the thread that calls step. */
typedef struct synor_llm_sched synor_llm_sched;

typedef struct synor_llm_sched_opts {
    unsigned step_tokens;   /* rows per batch; default (and at most) max_batch */
    unsigned prefill_chunk; /* prompt tokens per request per step; default 64 */
    unsigned max_queue;     /* requests waiting; default 256; beyond: EBUSY */
    /* Speculative decoding where it pays: NULL, or a context of a draft
     * model with the target's vocabulary (the scheduler's: each of its
     * sequences drafts for one running request). When the
     * running requests are few - at most the draft context's max_seqs (and
     * 32), nothing waiting - and every one of them is decoding (not in its
     * prompt), the step is a speculative round instead of a plain step: the draft
     * proposes spec_k tokens for each (default 4, 1..32, at most the
     * target's max_batch - 1; fewer near the context's end, max_new, or
     * when step_tokens cannot hold every request's k + 1 rows), the target
     * checks all of them in one batch and each request gets its accepted
     * proposals and the target's next token - the tokens it gets without a
     * draft. A sampled request too: its proposals are drawn from the
     * draft's logits with the random draws its own tokens will take, and a
     * proposal is accepted when the target's row, drawn with that draw,
     * gives the same token; so a seeded answer is the same under any load
     * (rounds or plain steps), at an acceptance below the standard rule's
     * (synor_llm_generate_speculative's) for the same pair. More requests
     * than the draft has sequences (a batch of many is already the cheaper
     * way to use the weights' stream) run plain steps. The draft catches up
     * on a request's tokens when it first drafts for it and after plain
     * steps. */
    synor_llm_ctx *draft;
    unsigned spec_k;
} synor_llm_sched_opts;

enum {
    SYNOR_LLM_DONE_LENGTH = 0,  /* max_new tokens generated */
    SYNOR_LLM_DONE_EOS = 1,     /* the model ended the text (EOS) */
    SYNOR_LLM_DONE_STOPPED = 2, /* on_token returned non-zero */
    SYNOR_LLM_DONE_CANCELLED = 3,
    SYNOR_LLM_DONE_CONTEXT = 4 /* the model's context is full */
};

#define SYNOR_LLM_MAX_BIAS 1024

/* ------------------------------------------------ constrained decoding */

/* A JSON constraint (OpenAI's response_format {"type": "json_object"}):
 * the text generated from its creation on is one JSON object (RFC 8259:
 * objects, arrays, strings and their escapes, numbers, true, false, null,
 * whitespace between them; at most 32 levels deep) and then the end of the
 * text. synor_llm_json_mask sets to -INFINITY the logits of the tokens
 * whose bytes cannot continue it (EOS until the object is closed, every
 * other token after); synor_llm_json_accept advances it by the token drawn
 * (SYNOR_EINVAL for a token it does not allow). A token's bytes are its
 * piece as it decodes after another token. One per generation. */
typedef struct synor_llm_json synor_llm_json;
int synor_llm_json_create(const synor_llm *m, synor_llm_json **out);
void synor_llm_json_destroy(synor_llm_json *j); /* accepts NULL */
void synor_llm_json_mask(const synor_llm_json *j, float *logits);
int synor_llm_json_allows(const synor_llm_json *j, int32_t token);
int synor_llm_json_accept(synor_llm_json *j, int32_t token);
/* Whether the object is closed (the text may end). */
int synor_llm_json_done(const synor_llm_json *j);

/* A JSON Schema for the constraint (OpenAI's response_format
 * {"type": "json_schema"}), compiled once, shared by the constraints made
 * from it (each holds it: free it when the last of yours is made).
 * The constraint writes a subset of what the schema allows: the root is
 * an object; properties in the order "properties" lists them, the
 * required ones always, no others (additionalProperties applies only to
 * an object without "properties": its keys' values); an anyOf / oneOf /
 * list of types whose alternatives a value's first byte tells apart
 * (different types; a null and a string); enum and const of strings,
 * numbers, booleans and null (at most 64 values); minLength / maxLength
 * (in code points), minItems / maxItems, integer, $ref inside the schema
 * ("#", "#/$defs/name"; recursion allowed), true / false schemas.
 * Annotations (title, description, default, examples, format, ...) are
 * ignored; any other keyword (pattern, minimum, uniqueItems, allOf, ...)
 * is refused with SYNOR_ESCHEMA naming NAME:LINE:COL, the schema's path
 * ("#/properties/age") and the keyword, as is a schema that no text can
 * satisfy within 32 levels of nesting. */
typedef struct synor_llm_schema synor_llm_schema;
int synor_llm_schema_parse(const char *text, size_t len, const char *name,
                           synor_llm_schema **out);
void synor_llm_schema_free(synor_llm_schema *s); /* accepts NULL */
/* A constraint to schema g (NULL: any object, as synor_llm_json_create);
 * it holds g until destroyed. */
int synor_llm_json_create_schema(const synor_llm *m, synor_llm_schema *g,
                                 synor_llm_json **out);

typedef struct synor_llm_request {
    const int32_t *prompt; /* tokens, BOS included if wanted (copied) */
    size_t n_prompt;       /* 1 .. seq_len - 1 */
    int max_new;           /* >= 1 */
    synor_sampler sampler;
    /* OpenAI's penalties (-2..2; 0: off): before each draw, the logit of a
     * token the request has generated (its prompt does not count) c times
     * is lowered by c * frequency_penalty + presence_penalty. Speculative
     * rounds penalize the draft's rows and the target's the same way, with
     * the round's proposals counted, so the tokens are those of plain
     * steps. */
    float presence_penalty, frequency_penalty;
    /* OpenAI's logit_bias: bias_value[i] (-100..100) added to the logit of
     * token bias_token[i] before each draw, after the penalties, in plain
     * steps and rounds alike; n_bias pairs (0..SYNOR_LLM_MAX_BIAS, copied;
     * a token twice: the sum). */
    const int32_t *bias_token;
    const float *bias_value;
    int n_bias;
    /* Optional: the request's text is one JSON object (not owned; it must
     * outlive the request, and is advanced by its tokens): its mask is
     * applied after the biases. Such a request takes no part in
     * speculative rounds. */
    synor_llm_json *json;
    /* Optional, just before on_token: the row of logits the token was
     * drawn from (the model's, vocab_size floats, before penalties and
     * temperature; valid during the call). */
    void (*on_logits)(uint64_t id, int32_t token, const float *logits, void *user);
    /* Optional: the prompt's own rows (OpenAI's "echo" with logprobs). For
     * each prompt position i >= 1, once (a preempted request's recomputed
     * prompt is not reported again), the row of logits at position i - 1,
     * from which the model predicts prompt token i, in order and before
     * the first generated token. */
    void (*on_prompt_logits)(uint64_t id, size_t i, int32_t token, const float *logits,
                             void *user);
    /* Optional: when the request is admitted (again after a preemption),
     * the positions it took from the prefix cache instead of computing
     * them (0 without it); called on the stepping thread. */
    void (*on_admit)(uint64_t id, size_t reused, void *user);
    /* Each generated token (EOS is not passed); non-zero stops it. */
    int (*on_token)(uint64_t id, int32_t token, void *user);
    /* Once, when the request leaves: a SYNOR_LLM_DONE_* reason. */
    void (*on_done)(uint64_t id, int reason, void *user);
    void *user;
} synor_llm_request;

typedef struct synor_llm_sched_stats {
    unsigned running, waiting; /* now */
    uint64_t submitted, finished, preempted;
    uint64_t steps, prompt_tokens, generated_tokens;
    unsigned kv_used, kv_total; /* blocks */
    /* Where the steps went: rows run (decode and prompt rows together;
     * rows / steps is the mean batch), nanoseconds inside the engine's
     * batch (synor_llm_batch) and inside synor_llm_sched_step as a whole
     * (the batch, admission, sampling and the token callbacks), monotonic
     * clock. */
    uint64_t rows, batch_ns, step_ns;
    /* Speculative rounds (sched_opts.draft): rounds run (each counted in
     * steps too), tokens proposed and accepted (acceptance = accepted /
     * proposed). */
    uint64_t spec_rounds, spec_proposed, spec_accepted;
    /* Prefix caching (the context's opts.prefix_cache): positions
     * admitted requests took from published blocks (prompts' and, where
     * the context publishes them, answers') instead of computing them (not
     * in prompt_tokens). */
    uint64_t prompt_reused;
    unsigned kv_cached, kv_idle; /* blocks in the prefix cache, those held by none */
} synor_llm_sched_stats;

int synor_llm_sched_create(synor_llm_ctx *c, const synor_llm_sched_opts *opts,
                           synor_llm_sched **out);
/* Requests still queued or running are cancelled (on_done called). */
void synor_llm_sched_destroy(synor_llm_sched *s);
/* Queues a request; *id names it in callbacks and cancel. SYNOR_EBUSY when
 * max_queue requests wait (the caller answers "overloaded"), SYNOR_ERANGE
 * when the prompt does not fit the context, SYNOR_EINVAL for a token out
 * of the vocabulary or bad counts. Nothing is queued on an error. */
int synor_llm_sched_submit(synor_llm_sched *s, const synor_llm_request *r, uint64_t *id);
/* Cancels a queued or running request (on_done with CANCELLED at the next
 * step); SYNOR_ENOENT if it is unknown or finished. */
int synor_llm_sched_cancel(synor_llm_sched *s, uint64_t id);
/* Runs one step if there is work: returns the number of requests running
 * or waiting afterwards (0: idle, nothing was run), or a negative error of
 * the batch (the requests of the failed batch are finished with reason
 * CANCELLED). */
int synor_llm_sched_step(synor_llm_sched *s);
void synor_llm_sched_stats_get(synor_llm_sched *s, synor_llm_sched_stats *out);

/* --------------------------------------------------------- quantization */

/* Writes the model at in (any file synor_llm_load reads) to out as GGUF
 * with every matrix in type: F32, F16, BF16, Q8_0 or Q4_0 (norm weights
 * stay F32; general.file_type says the type). Blocks are llama.cpp's, so
 * the file loads there too. A GGUF source's metadata is kept; a llama2.c
 * source gets Llama metadata and its vocabulary. Also converts llama2.c
 * checkpoints to GGUF (type F32). Atomic: a failure leaves no file, or the
 * one that was there. */
int synor_llm_quantize(const char *in, const synor_llm_load_opts *opts, synor_ttype type,
                       const char *out);

/* ---------------------------------------------------- synthetic models */

/* A model with deterministic pseudo-random weights (a seeded generator,
 * scaled as a trained model's are, so activations stay in range), for
 * tests, benchmarks and the README: written as a GGUF file of type (F32,
 * F16, Q8_0 or Q4_0) with a vocabulary trained on the text given (or a
 * byte-level one when text is NULL), or as a llama2.c checkpoint (version
 * 0) plus tokenizer.bin. vocab_size must be at least what the vocabulary
 * needs. */
typedef struct synor_llm_synth {
    synor_llm_hparams cfg; /* head_dim, norm_eps, rope_base are derived */
    uint64_t seed;
    const char *text; /* vocabulary training text, or NULL */
    size_t text_len;
    /* GGUF only: NULL, or a chat template family - "chatml" (its markers
     * <|im_start|> and <|im_end|> added to the vocabulary as control
     * pieces, <|im_end|> the end-of-turn token), "llama2", "zephyr" -
     * written as tokenizer.chat_template, a Jinja text of that family's
     * markers, as a chat model's file holds one. */
    const char *chat_template;
    /* GGUF only: fill-in-the-middle's markers <PRE>, <SUF>, <MID> and <EOT>
     * (CodeLlama's) added as control pieces and named in the metadata
     * (fim_pre/fim_suf/fim_mid_token_id; <EOT> the end-of-turn token). */
    int fim;
} synor_llm_synth;

int synor_llm_synth_gguf(const synor_llm_synth *s, synor_ttype type, const char *path);
int synor_llm_synth_llama2c(const synor_llm_synth *s, const char *path, const char *tokenizer_path);

#ifdef __cplusplus
}
#endif
#endif
