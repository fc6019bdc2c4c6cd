/* llm_internal.h - what the engine's files share: weight matrices as the
 * kernels see them, the kernel table chosen for this CPU, the model. */
#ifndef SYNOR_LLM_INTERNAL_H
#define SYNOR_LLM_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "synor/llm.h"

/* llama2.c version 2: int8 values with one fp32 scale per group of
 * `group` elements (not a GGUF type; numbered out of GGUF's range). */
#define LLM_TTYPE_Q8G 1000

/* A weight matrix: rows x cols, row r at data + r * row_bytes (Q8G: q at
 * data + r * cols, its scales at gscale + r * cols / group). */
typedef struct llm_mat {
    int type;
    int rows, cols;
    const uint8_t *data;
    size_t row_bytes;
    const float *gscale;
    int group;
    /* Q8_0 / Q4_0: rows [0, rows / 8 * 8) repacked for batches; F32: rows
     * [0, rows / 4 * 4) in groups of 4 (pack.c); or NULL */
    const uint8_t *pack;
    /* Q8_0 packed for one-row products too (pack.c: a model whose packed
     * Q8_0 weights fit in the last-level cache, on the avx2 table) */
    int one_row;
} llm_mat;

/* Bytes of a packed Q8_0 block of 8 rows, of a packed Q4_0 block's
 * values, and of a Q4_0 group's scales (pack.c has the layouts). */
#define LLM_PACK_BLOCK_Q8 (32 + 32 + 8 * 32)
#define LLM_PACK_BLOCK_Q4 (4 * 32)
static inline size_t synor__llm_pack_scales_q4(int nb)
{
    return ((size_t)nb * 16 + 63) / 64 * 64;
}
/* Floats of a packed F32 group of 4 rows of n columns (each row padded
 * to a multiple of 8). */
static inline size_t synor__llm_pack_group_f32(int n)
{
    return (size_t)4 * (size_t)((n + 7) / 8 * 8);
}
/* Bytes of a packed group of 8 rows of nb blocks. */
static inline size_t synor__llm_pack_group_bytes(int q4, int nb)
{
    return q4 ? synor__llm_pack_scales_q4(nb) + (size_t)nb * LLM_PACK_BLOCK_Q4
              : (size_t)nb * LLM_PACK_BLOCK_Q8;
}
/* Q8_0 batches of at least this many rows use the packed weights: one
 * row's product streams the weights from memory, and the file's layout is
 * smaller (measured: one row 30% slower packed on 110M-shaped Q8_0). Q4_0
 * products use them from one row (LLM_PACK_MIN_ROWS_Q4): the file's layout
 * costs a nibble unpacking, a horizontal sum and scalar work per row and
 * block, and one row's decode step ran 1.3x (110M) to 2x (15M) faster
 * packed (AVX-512); with the avx2 table on the Zen 3 VM, 1.7x (110M) and
 * 1.7-2.4x (15M), and the kernel alone (256 x 768 in L2) 3.8x. */
#define LLM_PACK_MIN_ROWS 2
#define LLM_PACK_MIN_ROWS_Q4 1
/* Unpacked Q8_0 / Q4_0 batches of at least this many rows go through
 * tile_q, 4 rows at a time and the rest (1-3) in one last tile. On the
 * Zen 3 VM the avx2 tile against one dot product per row and weight row
 * (256 x 768 weights in L2, kernel alone): 2 rows 1.4x (Q8_0) and 1.3x
 * (Q4_0) faster, 3 rows 1.55x / 1.7x, 4 rows 2x; one row 1.2-1.3x slower
 * (the tile's lanes of absent rows are wasted), so decode steps keep the
 * dot products. The avx512 tile runs 1-3 rows as dot products. */
#define LLM_TILE_Q_MIN_ROWS 2
/* The rows from which w's products take its packed weights (one_row: a
 * Q8_0 matrix that pack.c packed for one row too). */
static inline int synor__llm_pack_min_rows(const llm_mat *w)
{
    return w->type == SYNOR_TTYPE_Q4_0 || w->one_row ? LLM_PACK_MIN_ROWS_Q4 : LLM_PACK_MIN_ROWS;
}

/* Activations quantized for Q8_0 / Q4_0 / Q8G weights: per row, cols int8
 * values and cols / block fp32 scales (block 32, or the Q8G group). */
typedef struct llm_qrow {
    const int8_t *q;
    const float *d;
    const uint8_t *u; /* block 32: q + 128 (unsigned), for the tiles' vpdpbusd */
    const float *c8; /* block 32: 8 * d * (sum of the block's q), which a
                        Q4_0 product subtracts when it multiplies the
                        unsigned nibbles (q + 8) directly */
} llm_qrow;

/* c8[b] for the nb blocks of 32 of a quantized activation row. */
void synor__llm_block_c8(const int8_t *q, const float *d, int nb, float *c8);

/* The kernels of one instruction set. */
typedef struct llm_kernels {
    const char *isa;
    float (*dot_f32)(const float *w, const float *x, int n);
    float (*dot_f16)(const uint16_t *w, const float *x, int n);
    float (*dot_bf16)(const uint16_t *w, const float *x, int n);
    /* nb blocks of 32 */
    float (*dot_q8_0)(const uint8_t *w, const int8_t *xq, const float *xd, int nb);
    float (*dot_q4_0)(const uint8_t *w, const int8_t *xq, const float *xd, const float *c8, int nb);
    /* n elements, groups of gs (a multiple of 32 where vectorized) */
    float (*dot_q8g)(const int8_t *wq, const float *ws, const int8_t *xq, const float *xd, int n,
                     int gs);
    void (*quantize_row)(const float *x, int8_t *q, float *d, int n, int block);
    void (*axpy)(float a, const float *x, float *y, int n); /* y += a * x */
    /* Tiles, NULL where the table has none: 4 weight rows (row r at
     * w + r * ws) times T activation rows (1..4), y[t * ldy + r] (+)= the
     * dot. Q8_0 (q4 = 0) or Q4_0 (q4 = 1) weights of nb blocks; F32
     * weights of n elements. */
    void (*tile_q)(const uint8_t *w, size_t ws, const llm_qrow *qx, int T, int nb, int q4, float *y,
                   size_t ldy, int acc);
    void (*tile_f32)(const float *w, size_t ws, const float *x, size_t ldx, int T, int n, float *y,
                     size_t ldy, int acc);
    /* A packed group of 8 weight rows (pack.c) times T activation rows
     * (any T >= 1; qx[t].u, and qx[t].c8 for Q4_0), y[t * ldy + j] (+)=
     * row j's dot; NULL where the table has none (then nothing is packed). */
    void (*tile_p)(const uint8_t *pk, const llm_qrow *qx, int T, int nb, int q4, float *y,
                   size_t ldy, int acc);
    /* tile_p on two consecutive groups (the second gb bytes after pk):
     * 16 rows, y[t * ldy + j] for j < 16, each bitwise what tile_p gives;
     * NULL: none. */
    void (*tile_p2)(const uint8_t *pk, size_t gb, const llm_qrow *qx, int T, int nb, int q4,
                    float *y, size_t ldy, int acc);
    /* Whether tile_q and tile_p read qx[t].u (the avx512 table's vpdpbusd;
     * the avx2 tiles read qx[t].q): a batch's rows are shifted only then. */
    int tiles_u;
    /* As tile_f32 for any T >= 1, with the activation rows in registers
     * several at a time, bitwise what tile_f32 gives each row; next: 4
     * weight rows (ws apart) to prefetch while the first pass runs, or
     * NULL. NULL: none. */
    void (*tile_f32w)(const float *w, size_t ws, const float *x, size_t ldx, int T, int n,
                      float *y, size_t ldy, int acc, const float *next);
    /* tile_f32w on a group of 4 F32 weight rows packed as pack.c lays
     * them out (8 columns of each row in turn, so that the group is read
     * as one stream), bitwise what tile_f32w gives on the rows; next: the
     * packed group to prefetch, or NULL. NULL: F32 weights are not packed. */
    void (*tile_f32p)(const float *pk, const float *x, size_t ldx, int T, int n, float *y,
                      size_t ldy, int acc, const float *next);
    /* Prompt rows in blocks of this many (llm_gemm_blocks) go to
     * OpenBLAS's SGEMM instead of tile_f32w where OpenBLAS is loaded
     * (faster there for prompts, in its own order of the sums); 0:
     * tile_f32w for every row. */
    int gemm_block;
    /* Attention over np cached positions of one head (hs floats, position
     * p at k + p * ks): out[p] = scale * q . k_p; and o += sum_p a[p] v_p.
     * NULL: the loops of dot_f32 and axpy (ctx.c). */
    void (*att_scores)(const float *q, const float *k, size_t ks, int np, int hs, float scale,
                       float *out);
    void (*att_mix)(const float *a, const float *v, size_t vs, int np, int hs, float *o);
    /* Element-wise steps, NULL: the portable loops (synor__llm_softmax,
     * synor__llm_swiglu). softmax: x[i] = exp(x[i] - max) / sum over the
     * n values; swiglu: h1[i] = silu(h1[i]) * h3[i]. Each element's result
     * depends only on its own values (and, for softmax, the row's max and
     * sum), never on its place in a batch or chunk. */
    void (*softmax)(float *x, int n);
    void (*swiglu)(float *h1, const float *h3, int n);
    /* The same over an F16 KV cache (every table has them: the portable
     * loops convert one element at a time); and a row rounded to F16
     * (to nearest even, as synor_f32_to_f16) for its stores. */
    void (*att_scores_f16)(const float *q, const uint16_t *k, size_t ks, int np, int hs,
                           float scale, float *out);
    void (*att_mix_f16)(const float *a, const uint16_t *v, size_t vs, int np, int hs, float *o);
    void (*to_f16)(const float *x, uint16_t *y, int n);
    /* The sampler's draw over a whole row (sample.c): the lowest t of the
     * largest fmaf(l[t], inv_t, llm_gumbel(x, t)), bitwise what the
     * portable loop gives; NULL: that loop. */
    int32_t (*gumbel_argmax)(const float *l, int n, float inv_t, uint64_t x);
} llm_kernels;

/* Gumbel noise for the sampler (sample.c): token t's in the draw whose 64
 * random bits are x. u = an odd multiple of 2^-24 in (0, 1) from two
 * rounds of a 32-bit mix (Wellons' lowbias32) of t and x's halves, and
 * g = -ln(-ln u), in [-2.82, 16.64]. llm_ln is ln for positive normal
 * floats: y = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh z with
 * z = (m - 1) / (m + 1) to z^9 (|z| <= 0.172: the next term is below
 * 1e-9), then e ln 2 added; every multiply-add an fmaf, so the vector
 * kernels (kern_x86_ew.c), which do the same operations, give the same
 * bits. */
#define LLM_MIX_M1 0x7feb352du
#define LLM_MIX_M2 0x846ca68bu
static inline uint32_t llm_mix32(uint32_t h)
{
    h ^= h >> 16;
    h *= LLM_MIX_M1;
    h ^= h >> 15;
    h *= LLM_MIX_M2;
    h ^= h >> 16;
    return h;
}

static inline float llm_ln(float y)
{
    union {
        float f;
        uint32_t u;
    } b = {y};
    int e = (int)(b.u >> 23) - 127;
    b.u = (b.u & 0x7fffffu) | 0x3f800000u;
    float m = b.f;
    if (m > 1.41421356f) {
        m *= 0.5f;
        e++;
    }
    float z = (m - 1.0f) / (m + 1.0f), z2 = z * z;
    float p = fmaf(z2, 2.0f / 9.0f, 2.0f / 7.0f);
    p = fmaf(p, z2, 2.0f / 5.0f);
    p = fmaf(p, z2, 2.0f / 3.0f);
    float z3 = z * z2;
    return fmaf((float)e, 0.693147181f, fmaf(z3, p, 2.0f * z));
}

/* The portable gumbel_argmax (sample.c). */
int32_t synor__llm_gumbel_argmax(const float *l, int n, float inv_t, uint64_t x);

static inline float llm_gumbel(uint64_t x, int32_t t)
{
    uint32_t h = llm_mix32(llm_mix32((uint32_t)t + (uint32_t)x) ^ (uint32_t)(x >> 32));
    float u = (float)((h >> 9) << 1 | 1u) * 0x1p-24f;
    return -llm_ln(-llm_ln(u));
}


/* The portable element-wise steps (run.c's loops: expf, a division). */
void synor__llm_softmax(float *x, int n);
void synor__llm_swiglu(float *h1, const float *h3, int n);

/* F32 products of LLM_F32W_MIN_ROWS rows or more (a decode row too) use
 * tile_f32w where the table has it, over blocks of at most LLM_F32W_BLOCK
 * activation rows (128 rows of dim 768: 384 KiB, in L2); elsewhere
 * OpenBLAS's SGEMM from 16 rows (where it is loaded). Each weight row is
 * read from memory once for all the rows, and each call prefetches the
 * weight rows LLM_F32W_AHEAD rows on (two blocks of 4) into L1, so that
 * the stream waits less on the multiply-adds of the rows; a block of more
 * than 6 rows (several passes, all of which prefetch) the block
 * LLM_F32W_AHEAD_PASSES rows on (docs/BENCHMARKS.md). */
#define LLM_F32W_MIN_ROWS 1
#define LLM_F32W_AHEAD 8
#define LLM_F32W_AHEAD_PASSES 4
#ifndef LLM_F32W_BLOCK
#define LLM_F32W_BLOCK 128
#endif

const llm_kernels *synor__llm_kernels(void);
/* The portable kernels (also the reference the vectorized ones are tested
 * against). */
extern const llm_kernels synor__llm_kernels_generic;
#if defined(__x86_64__)
extern const llm_kernels synor__llm_kernels_avx2;
extern const llm_kernels synor__llm_kernels_avx512;
/* kern_x86_ew.c: softmax and SwiGLU of the avx512 and avx2 tables */
void synor__llm_a5_softmax(float *x, int n);
void synor__llm_a5_swiglu(float *h1, const float *h3, int n);
void synor__llm_a2_softmax(float *x, int n);
void synor__llm_a2_swiglu(float *h1, const float *h3, int n);
int32_t synor__llm_a2_gumbel_argmax(const float *l, int n, float inv_t, uint64_t x);
/* kern_kv_x86.c: the avx2 table's attention over an F32 cache */
void synor__llm_a2_att_scores(const float *q, const float *k, size_t ks, int np, int hs,
                              float scale, float *out);
void synor__llm_a2_att_mix(const float *a, const float *v, size_t vs, int np, int hs, float *o);
/* kern_kv_x86.c: the F16 KV cache's kernels of the two tables. */
void synor__llm_a2_att_scores_f16(const float *q, const uint16_t *k, size_t ks, int np, int hs,
                                  float scale, float *out);
void synor__llm_a2_att_mix_f16(const float *a, const uint16_t *v, size_t vs, int np, int hs,
                               float *o);
void synor__llm_a2_to_f16(const float *x, uint16_t *y, int n);
void synor__llm_a5_att_scores_f16(const float *q, const uint16_t *k, size_t ks, int np, int hs,
                                  float scale, float *out);
void synor__llm_a5_att_mix_f16(const float *a, const uint16_t *v, size_t vs, int np, int hs,
                               float *o);
void synor__llm_a5_to_f16(const float *x, uint16_t *y, int n);
/* kern_f32_x86.c: the avx512 table's F32 tiles (tile_f32, tile_f32w). */
void synor__llm_a5_tile_f32(const float *w, size_t ws, const float *x, size_t ldx, int T, int n,
                            float *y, size_t ldy, int acc);
void synor__llm_a5_tile_f32w(const float *w, size_t ws, const float *x, size_t ldx, int T, int n,
                             float *y, size_t ldy, int acc, const float *next);
/* kern_q_avx2.c, kern_p_avx2.c: the avx2 table's tile_q and tile_p. */
void synor__llm_a2_tile_q(const uint8_t *w, size_t ws, const llm_qrow *qx, int T, int nb, int q4,
                          float *y, size_t ldy, int acc);
void synor__llm_a2_tile_p(const uint8_t *pk, const llm_qrow *qx, int T, int nb, int q4, float *y,
                          size_t ldy, int acc);
/* kern_f32_x86.c: the avx2 table's F32 tiles, the same in 8 lanes. */
void synor__llm_a2_tile_f32(const float *w, size_t ws, const float *x, size_t ldx, int T, int n,
                            float *y, size_t ldy, int acc);
void synor__llm_a2_tile_f32w(const float *w, size_t ws, const float *x, size_t ldx, int T, int n,
                             float *y, size_t ldy, int acc, const float *next);
void synor__llm_a2_tile_f32p(const float *pk, const float *x, size_t ldx, int T, int n, float *y,
                             size_t ldy, int acc, const float *next);
#endif

/* Block size the activations are quantized to for a weight type: 32 for
 * Q8_0/Q4_0, the group for Q8G, 0 for float weights. */
int synor__llm_act_block(const llm_mat *w);

/* The rows of a batch that F32 products send to SGEMM (tables with
 * gemm_block, where OpenBLAS is loaded): n blocks of gemm_block rows,
 * block i at row start[i] (ascending, apart). A row's sums depend on its
 * block's rows only: blocks next to each other share one SGEMM call only
 * where that was found to change no bit (kern.c); every other row takes
 * the tile, whose sums depend on the row only (batch.c chooses the
 * blocks). */
typedef struct llm_gemm_blocks {
    const int *start;
    int n;
} llm_gemm_blocks;

/* y[t * ldy + r] (+)= W_r . x_t for r in [r0, r1), t in [0, n). x rows at
 * x + t * ldx (float weights) or qx[t] (quantized weights). blocks (NULL:
 * none) names the rows that F32 weights send to SGEMM. */
void synor__llm_matmul(const llm_kernels *k, const llm_mat *w, int r0, int r1, int n,
                       const float *x, size_t ldx, const llm_qrow *qx, float *y, size_t ldy,
                       int accumulate, const llm_gemm_blocks *blocks);
/* Whether neighbouring SGEMM blocks of k share a call (kern.c; 0 without
 * OpenBLAS or blocks). */
int synor__llm_sgemm_merges(const llm_kernels *k);

/* pack.c: whether w can be packed (Q8_0 / Q4_0 where the kernels have
 * tile_p, F32 where they have tile_f32p), its packed size, packing it
 * into out (sets w->pack, with release); the model's products packed,
 * once, unless the model was loaded with no_pack (out of memory: left
 * unpacked; called by synor_llm_ctx_create, any thread: for contexts of
 * batches, of Q4_0 products, or of F32 products, which the packed layout
 * streams faster one row at a time too); the portable product on a
 * packed group. */
int synor__llm_packable(const llm_mat *w);
size_t synor__llm_pack_size(const llm_mat *w);
void synor__llm_pack(llm_mat *w, uint8_t *out);
void synor__llm_pack_model(synor_llm *m);
/* Rows [r0, r1) (below rows / 4 * 4) of w from its packed F32 copy pk,
 * in the file's layout (row r at out + (r - r0) * ld): the same floats as
 * the file's rows. */
void synor__llm_unpack_f32(const llm_mat *w, const float *pk, int r0, int r1, float *out,
                           size_t ld);
/* load.c: lets go of the model file's pages of [p, p + n) (read back from
 * the file if touched again; synor_gguf_drop_pages). Best effort: 0 or
 * the error, nothing changed. */
int synor__llm_drop_pages(const synor_llm *m, const void *p, size_t n);
/* Maps every page of the model's file ahead, once per model (synor_gguf_
 * populate): a context that runs batches reads every weight, and the first
 * batch then takes no page fault per page of them (on the development VM
 * the first 7-row batch of a fresh 110M F32 context: 221 ms faulting,
 * 94 ms populated, for 20 ms more at creation). Best effort. */
void synor__llm_populate(synor_llm *m);
/* Whether any of m's products is packed for one-row products too: Q4_0,
 * Q8_0 where synor__llm_pack_model sets one_row, F32 where it packs it. */
int synor__llm_model_packs_one_row(const synor_llm *m);
void synor__llm_tile_p_ref(const uint8_t *pk, const llm_qrow *qx, int T, int nb, int q4, float *y,
                           size_t ldy, int acc);

/* Row `row` of an embedding matrix as floats. */
void synor__llm_mat_row(const llm_mat *w, int row, float *out);

typedef struct llm_layer {
    const float *rms_att, *rms_ffn;
    llm_mat wq, wk, wv, wo, w1, w2, w3;
} llm_layer;

struct synor_llm {
    synor_llm_hparams cfg;
    char format[32];
    const char *wtype;
    uint64_t weight_bytes;
    llm_mat embd, cls;
    const float *rms_final;
    llm_layer *layers;
    synor_tokenizer *tok;
    char *chat_template; /* GGUF's tokenizer.chat_template (a copy), or NULL */
    int32_t eot;         /* tokenizer.ggml.eot_token_id, or -1 */
    int32_t fim[3];      /* fill-in-the-middle's prefix, suffix, middle markers, or -1 */
    /* what keeps the weights mapped; and floats converted at load (norm
     * weights stored as F16 in some files) */
    struct synor_gguf *gguf;
    struct synor_l2c *l2c;
    float *owned;
    uint8_t *packed; /* the packed products (pack.c), or NULL */
    int no_pack;     /* synor_llm_load_opts.no_pack */
    int populated;   /* the file's pages mapped ahead (load.c) */
    size_t packed_bytes;
    /* made on first use by whichever thread needs it first (atomically;
     * the pointer set at load, so a const model can fill it): the
     * vocabulary's bytes for JSON constraints (grammar.c) */
    struct llm_lazy {
        struct llm_pieces *pieces;
    } *lazy;
};
void synor__llm_pieces_free(struct llm_pieces *p);

/* The distribution s draws from for these logits (temperature, top-k,
 * top-p; temperature 0: all mass on the argmax), normalised, into probs
 * (n). And a draw from any distribution (need not sum to 1) with s's
 * random state. */
int synor__sampler_probs(const synor_sampler *s, const float *logits, int n, float *probs);
int32_t synor__sampler_draw(synor_sampler *s, const float *probs, int n);

/* The acceptance rule of speculative decoding for proposal d: returns d
 * (*accepted = 1) with probability min(1, p[d] / q[d]), else a draw from
 * max(0, p - q) renormalised (*accepted = 0). tmp: n floats of room. */
/* speculate.c's lookup draft: k proposals for the context hist[0..cur] from
 * the latest earlier occurrence of its last n tokens (n = ngram down to 2),
 * a stretch running into the context's end repeating; returns k, or 0
 * without a match. */
int synor__llm_lookup(const int32_t *hist, int cur, int ngram, int k, int32_t *props);
int32_t synor__llm_accept(synor_sampler *s, const float *p, const float *q, int32_t d, int n,
                          float *tmp, int *accepted);

/* The shape of llama2.c weight w for the configuration c (rows x cols;
 * 1 row for norm weights). */
void synor__llm_weight_shape(const synor_llm_hparams *c, synor_l2c_weight w, uint64_t *rows,
                             uint64_t *cols);
/* Writes a Llama GGUF file of c's shape: the metadata copied from kv_from
 * (general.file_type replaced), or written from c and tok when kv_from is
 * NULL (with x's chat template and special ids where x gives them); each
 * weight read as fp32 from get and converted to type
 * (norms stay F32). Atomic. */
typedef struct llm_gguf_extra {
    const char *jinja; /* tokenizer.chat_template, or NULL */
    int32_t eot;       /* tokenizer.ggml.eot_token_id, or -1 */
    int32_t fim[3];    /* tokenizer.ggml.fim_pre/fim_suf/fim_mid_token_id, or -1 */
} llm_gguf_extra;
int synor__llm_gguf_save(const char *path, const synor_llm_hparams *c, const synor_tokenizer *tok,
                         const llm_gguf_extra *x, const synor_gguf *kv_from, synor_ttype type,
                         synor_l2c_source get, void *ctx);

#endif
