/* llm_ctx.h - an inference context's state, shared by ctx.c (the task
 * graph of a batch) and batch.c (contexts, the KV pool, batches). */
#ifndef SYNOR_LLM_CTX_H
#define SYNOR_LLM_CTX_H

#include <stdatomic.h>

#include "llm/llm_internal.h"

/* At most this many tasks per step: one writes its own step token and
 * reads all of the previous step's. */
#define LLM_MAX_CHUNKS (SYNOR_TASK_MAX_DATA - 1)
/* A worker's scratch: normalised rows and their quantization. */
typedef struct llm_scratch {
    float *xb;
    /* the rows the products read: xb, or (not normalised) the rows
     * themselves, ld floats apart */
    const float *src;
    size_t ld;
    int8_t *q;
    float *d;
    float *c8;
    uint8_t *u;
    llm_qrow *qrows;
    float *scores;
    int qblock; /* block the rows in q are quantized for; 0: none */
} llm_scratch;

/* The KV pool's blocks (prefix.c): holders, the free list, and the prefix
 * cache's table of published blocks and its LRU list of idle ones. */
typedef struct llm_pool {
    int *free_blocks;
    unsigned nfree;
    int *ref; /* per block: the sequences holding it */
    int on;   /* the prefix cache */
    int *map; /* key -> block (-1: empty), mask + 1 slots */
    size_t mask;
    int *parent;   /* per published block: the block before it (-1: the first) */
    int32_t *toks; /* per published block: its tokens */
    uint64_t *key; /* per published block: its chained key */
    uint8_t *pub;  /* per block: in the table */
    int *prev, *next, head, tail; /* the idle list, least recently used first */
    unsigned nidle, ncached;
    uint64_t lookups, reused, published, evicted;
} llm_pool;

int synor__llm_pool_init(synor_llm_ctx *c, int prefix_cache);
void synor__llm_pool_free(synor_llm_ctx *c);
/* Blocks a batch can take: free ones and idle published ones. */
unsigned synor__llm_pool_avail(const synor_llm_ctx *c);
/* A block for one holder (a free one, else the least recently used idle
 * one, evicted), or -1. */
int synor__llm_pool_take(synor_llm_ctx *c);
/* Positions per unit of reuse (synor_llm_seq_reuse takes whole units);
 * 0 without the prefix cache. */
size_t synor__llm_pool_unit(const synor_llm_ctx *c);
/* Whether generated positions may be published as prompt positions are
 * (their keys and values the bits a prompt's rows get: prefix.c). */
int synor__llm_pool_answers(const synor_llm_ctx *c);
/* A holder lets go of b. */
void synor__llm_pool_drop(synor_llm_ctx *c, int b);
/* Before a sequence writes into the block *slot of its table: if it is
 * published, it leaves the table (this sequence alone holds it) or *slot
 * becomes a copy. SYNOR_ENOMEM when no block is left for the copy. */
int synor__llm_pool_unshare(synor_llm_ctx *c, int *slot);

typedef struct llm_seq {
    int len;     /* positions cached */
    int nblocks; /* blocks held */
    int *blocks; /* block table: position p is in blocks[p / BLOCK] */
} llm_seq;

struct synor_llm_ctx {
    synor_llm *m;
    synor_runtime *rt;
    const llm_kernels *k;
    int P;
    unsigned max_seqs, max_batch;
    int kv_dim;

    /* KV cache: per layer, kv_blocks blocks of BLOCK positions of kv_dim
     * elements (floats, or F16 when kv_f16); layer_stride elements per
     * layer, kv_esize bytes each. */
    void *kc, *vc;
    int kv_f16;
    size_t kv_esize;
    size_t layer_stride;
    unsigned kv_blocks;
    llm_pool pool;
    /* Blocks below kv_warm have been written (handed out, or warmed by
     * synor_llm_kv_warm); the pool hands fresh blocks out in increasing
     * order, after the freed ones. */
    unsigned kv_warm;
    llm_seq *seqs;

    float *rope_cos, *rope_sin; /* seq_len x head_dim / 2 */

    /* the batch being run */
    size_t n;
    int *pos;
    unsigned *seq;
    int *want_rows;
    size_t nwant;
    long *logit_row; /* batch row -> index into logits, -1 */
    /* The batch's prompt rows that F32 products send to SGEMM (kern.c):
     * gemm.start points at gemm_start (max_batch entries). */
    llm_gemm_blocks gemm;
    int *gemm_start;
    float *x, *q, *kbuf, *vbuf, *att, *hb, *hb2;
    float *logits;
    size_t logits_cap; /* rows */

    llm_scratch *scratch; /* per runtime worker */
    unsigned nscratch;
    /* CUDA offload (gpu.c): layers gpu_first.. (n_layers: none) and the
     * classifier when gpu_cls run their products on gpu. */
    struct llm_gpu *gpu;
    int gpu_first, gpu_cls;
    /* split.c: the layers uploaded (the classifier too when gpu_cls_up),
     * and of those the GPU layers of batches of > 1 row and of 1 row */
    int gpu_up, gpu_cls_up;
    synor_llm_split split;
    /* the trace (split.c): events [0, nev) of cap, times from trace_t0 */
    int tracing, trace_gpu, gpu_worker;
    uint64_t trace_t0;
    synor_llm_event *ev;
    size_t ev_cap;
    _Atomic size_t nev;

    synor_handle *bar[2][LLM_MAX_CHUNKS];
    float bar_mem[2][LLM_MAX_CHUNKS];
    unsigned long nsteps;
};

/* The products of a layer on the GPU: Q/K/V stacked, output, gate/up
 * stacked, down; and the classifier. */
enum { LLM_GPU_QKV, LLM_GPU_WO, LLM_GPU_W13, LLM_GPU_W2, LLM_GPU_NMAT, LLM_GPU_CLS = LLM_GPU_NMAT };
typedef struct llm_gpu llm_gpu;

/* Uploads the weights of the last `layers` layers (>= n_layers: all and
 * the classifier) to the runtime's CUDA device number `device`; 0 layers:
 * nothing. On an error nothing is left open. */
int synor__llm_gpu_open(synor_llm_ctx *c, int layers, unsigned device, unsigned backend);
void synor__llm_gpu_close(synor_llm_ctx *c);
/* Host staging buffers (max_batch rows of the widest input, output). */
float *synor__llm_gpu_in(llm_gpu *g);
float *synor__llm_gpu_out(llm_gpu *g);
/* y (n x rows) = x (n x cols) W^T for product `which` of `layer`, on the
 * GPU; returns when y is on the host. One caller at a time. */
int synor__llm_gpu_matmul(llm_gpu *g, int which, int layer, int n, const float *x, float *y);

/* ocl.c: the same products on an OpenCL device (gpu.c forwards to them
 * when the context's backend is SYNOR_LLM_GPU_OPENCL). find: the runtime's
 * OpenCL device number `which`; open: uploads the layers first ..
 * first + nl - 1 (and the classifier when info->classifier), shapes as
 * gpu.c's; matmul: as synor__llm_gpu_matmul, with last (NULL: untimed)
 * the four times of a traced product. */
typedef struct llm_ocl llm_ocl;
struct synor_device_native;
int synor__llm_ocl_find(synor_llm_ctx *c, unsigned which, struct synor_device_native *nat,
                        uint64_t *capacity);
int synor__llm_ocl_open(synor_llm_ctx *c, const struct synor_device_native *nat, int nl, int first,
                        const int shape[][2], synor_llm_gpu_info *info, llm_ocl **out);
void synor__llm_ocl_close(llm_ocl *o);
int synor__llm_ocl_matmul(llm_ocl *o, int which, int layer, int n, const float *x, float *y,
                          uint64_t *last);

/* The GPU's times of its last product (tracing only: the copy up, the
 * product and the copy down each waited for): monotonic ns, start, after
 * the copy up, after the product, after the copy down; and its bytes. */
void synor__llm_gpu_trace(llm_gpu *g, int on);
void synor__llm_gpu_last(const llm_gpu *g, uint64_t t[4], uint64_t *up, uint64_t *down);

/* split.c: the monotonic clock in ns; room for n more events (call
 * between batches); records an event (any thread). */
uint64_t synor__llm_now_ns(void);
int synor__llm_trace_reserve(synor_llm_ctx *c, size_t n);
void synor__llm_trace_add(synor_llm_ctx *c, const char *op, int layer, int worker, int gpu,
                          uint64_t t0, uint64_t t1, uint64_t bytes);
/* Before a batch: the split of its phase into gpu_first / gpu_cls. */
void synor__llm_apply_split(synor_llm_ctx *c);

/* Submits the batch's tasks and waits for them. */
int synor__llm_run_graph(synor_llm_ctx *c);

/* generate.c: ids[0..n) on sequence 0 (seqs: max_batch zeros) at its next
 * positions, in batches of up to max_batch rows rounded to a multiple of
 * the SGEMM blocks' rows (batch.c), so that the prompt's rows take the
 * same path as in the scheduler's chunks. The last row's logits into
 * *logits, the only ones computed; logits NULL: none. */
int synor__llm_run_rows(synor_llm_ctx *c, const int32_t *ids, size_t n, const unsigned *seqs,
                        const float **logits);

#endif
