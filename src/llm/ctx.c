/* ctx.c - inference contexts: the paged KV cache, and a batch as a graph
 * of runtime tasks.
 *
 * A batch runs, per layer, five parallel steps - the Q/K/V products with
 * RoPE, attention, the output product, the gate/up products with SwiGLU,
 * the down product - then the classifier. Each step is split into P tasks
 * (P = the runtime's workers, at most SYNOR_TASK_MAX_DATA - 1), each over a
 * range of output rows (of attention heads for attention), and every task
 * of a step must wait for every task of the step before. That barrier is
 * expressed to the runtime with data handles: two sets of P one-float
 * "step tokens"; a task of step s writes token [s % 2][its chunk] and reads
 * all of set [(s + 1) % 2], so it waits for all of step s - 1 (read after
 * write) and step s + 1's writes wait for all of step s's reads (write
 * after read). No extra join tasks, no thread of the engine's own.
 *
 * On the layers offloaded to a GPU (gpu.c) each step but attention is one
 * task: it normalises the batch's rows, has the GPU run the step's
 * products for all of them, and finishes the step (RoPE and the KV cache;
 * the residual; SwiGLU) on the host.
 *
 * Normalisations and activation quantization are not steps of their own:
 * each task of a product redoes them for the rows it reads (a cost of 1/R
 * of the product for R output rows per task), which saves a barrier.
 *
 * The KV cache holds F32, or F16 (synor_llm_ctx_opts.kv_type): new keys
 * and values are rounded on store, attention converts as it reads. */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "llm/llm_ctx.h"

/* The sum of squares in double, as llama.cpp's ggml_rms_norm: then a
 * scale that differs from llama.cpp's in the last bit cannot flip an
 * activation's Q8_0 rounding and send the two engines apart (llama2.c's
 * float sum agrees with it to 1e-6 at fp32). */
static void rmsnorm(float *o, const float *x, const float *w, int n, float eps)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (double)(x[i] * x[i]);
    float mean = (float)(ss / n);
    float scale = 1.0f / sqrtf(mean + eps);
    for (int i = 0; i < n; i++)
        o[i] = (x[i] * scale) * w[i];
}

/* The scratch's src: rows of x normalised by w into xb, or x itself when
 * w and rows are NULL; acts() quantizes them for a matrix's block when it
 * needs it. */
static void norm_rows(synor_llm_ctx *c, llm_scratch *s, const float *x, size_t ldx, const float *w,
                      const int *rows, int n, int cols)
{
    s->qblock = 0;
    if (!w && !rows) {
        s->src = x;
        s->ld = ldx;
        return;
    }
    s->src = s->xb;
    s->ld = (size_t)cols;
    for (int t = 0; t < n; t++) {
        int r = rows ? rows[t] : t;
        if (w)
            rmsnorm(s->xb + (size_t)t * cols, x + (size_t)r * ldx, w, cols, c->m->cfg.norm_eps);
        else
            memcpy(s->xb + (size_t)t * cols, x + (size_t)r * ldx, (size_t)cols * sizeof(float));
    }
}

static const llm_qrow *acts(synor_llm_ctx *c, llm_scratch *s, int n, int cols, const llm_mat *m)
{
    int blk = synor__llm_act_block(m);
    if (!blk)
        return NULL;
    if (s->qblock != blk) {
        for (int t = 0; t < n; t++) {
            int8_t *q = s->q + (size_t)t * cols;
            float *d = s->d + (size_t)t * (cols / blk);
            c->k->quantize_row(s->src + (size_t)t * s->ld, q, d, cols, blk);
            s->qrows[t] = (llm_qrow){.q = q, .d = d};
        }
        s->qblock = blk;
    }
    /* What only some products read, made once per quantization when one
     * first needs it: Q4_0 dot products take 8 * d * sum(q) out per block;
     * the int8 tiles of batches read q + 128. */
    if (blk == SYNOR_QK && m->type == SYNOR_TTYPE_Q4_0 && !s->qrows[0].c8)
        for (int t = 0; t < n; t++) {
            float *c8 = s->c8 + (size_t)t * (cols / blk);
            synor__llm_block_c8(s->qrows[t].q, s->qrows[t].d, cols / blk, c8);
            s->qrows[t].c8 = c8;
        }
    const uint8_t *pk = __atomic_load_n(&m->pack, __ATOMIC_ACQUIRE);
    /* pk first: a matrix's one_row is read only once its pack is seen */
    int tiles = (n >= 4 && c->k->tile_q) || (pk && c->k->tile_p && n >= synor__llm_pack_min_rows(m));
    if (blk == SYNOR_QK && tiles && c->k->tiles_u && !s->qrows[0].u)
        for (int t = 0; t < n; t++) {
            uint8_t *u = s->u + (size_t)t * cols;
            for (int i = 0; i < cols; i++)
                u[i] = (uint8_t)(s->qrows[t].q[i] ^ 0x80);
            s->qrows[t].u = u;
        }
    return s->qrows;
}

/* Rows [*a, *b) of R for chunk i of P, boundaries on multiples of 16 where
 * R allows (whole cache lines of output, even for RoPE's pairs). */
static void chunk_range(int R, int P, int i, int *a, int *b)
{
    int unit = R >= 16 * P ? 16 : 2;
    int units = (R + unit - 1) / unit;
    *a = (int)((long)units * i / P) * unit;
    *b = (int)((long)units * (i + 1) / P) * unit;
    if (*a > R)
        *a = R;
    if (*b > R)
        *b = R;
}

/* KV head g's row at position pos of seq in layer `layer` of a cache (kc
 * or vc): head_dim elements of kv_esize bytes. A block holds each head's
 * SYNOR_LLM_KV_BLOCK positions as one run (head-major), so that attention
 * reads a head's block as one stream: 11-15% faster than position-major
 * rows on a Zen 3 VM (docs/BENCHMARKS.md, session 14). */
static void *kv_head(synor_llm_ctx *c, void *cache, int layer, unsigned seq, int pos, int g)
{
    size_t hs = (size_t)c->m->cfg.head_dim;
    int block = c->seqs[seq].blocks[pos / SYNOR_LLM_KV_BLOCK];
    size_t el = (size_t)layer * c->layer_stride +
                (size_t)block * SYNOR_LLM_KV_BLOCK * (size_t)c->kv_dim +
                ((size_t)g * SYNOR_LLM_KV_BLOCK + (size_t)(pos % SYNOR_LLM_KV_BLOCK)) * hs;
    return (uint8_t *)cache + el * c->kv_esize;
}

/* Elements [a, b) of a new key or value row (kv_dim, heads one after
 * another) into the cache at pos: copied, or rounded to F16. */
static void kv_store(synor_llm_ctx *c, void *cache, int layer, unsigned seq, int pos,
                     const float *row, int a, int b)
{
    int hs = c->m->cfg.head_dim;
    for (int lo = a; lo < b;) {
        int g = lo / hs, hi = (g + 1) * hs < b ? (g + 1) * hs : b;
        void *dst = (uint8_t *)kv_head(c, cache, layer, seq, pos, g) +
                    (size_t)(lo - g * hs) * c->kv_esize;
        if (c->kv_f16)
            c->k->to_f16(row + lo, (uint16_t *)dst, hi - lo);
        else
            memcpy(dst, row + lo, (size_t)(hi - lo) * sizeof(float));
        lo = hi;
    }
}

/* scores (scaled) of q against np positions of a KV block, and o += the
 * weighted sum of their values, for either cache type */
static void att_scores(synor_llm_ctx *c, const float *q, const void *k, int np, int hs,
                       float scale, float *out)
{
    size_t ks = (size_t)hs; /* a head's positions, one after another */
    if (c->kv_f16)
        c->k->att_scores_f16(q, k, ks, np, hs, scale, out);
    else if (c->k->att_scores)
        c->k->att_scores(q, k, ks, np, hs, scale, out);
    else
        for (int p = 0; p < np; p++)
            out[p] = c->k->dot_f32(q, (const float *)k + (size_t)p * ks, hs) * scale;
}

static void att_mix(synor_llm_ctx *c, const float *a, const void *v, int np, int hs, float *o)
{
    size_t vs = (size_t)hs;
    if (c->kv_f16)
        c->k->att_mix_f16(a, v, vs, np, hs, o);
    else if (c->k->att_mix)
        c->k->att_mix(a, v, vs, np, hs, o);
    else
        for (int p = 0; p < np; p++)
            c->k->axpy(a[p], (const float *)v + (size_t)p * vs, o, hs);
}

/* Rows t0..t1 - 1 of v (row t at v + t * ld), columns a..b - 1. */
static void rope_rows(synor_llm_ctx *c, float *v, size_t ld, int t0, int t1, int a, int b)
{
    int hs = c->m->cfg.head_dim;
    for (int t = t0; t < t1; t++) {
        const float *cs = c->rope_cos + (size_t)c->pos[t] * (hs / 2);
        const float *sn = c->rope_sin + (size_t)c->pos[t] * (hs / 2);
        float *row = v + (size_t)t * ld;
        for (int i = a; i < b; i += 2) {
            int j = (i % hs) / 2;
            float v0 = row[i], v1 = row[i + 1];
            row[i] = v0 * cs[j] - v1 * sn[j];
            row[i + 1] = v0 * sn[j] + v1 * cs[j];
        }
    }
}

static void swiglu(const synor_llm_ctx *c, float *h1, const float *h3, int n)
{
    if (c->k->swiglu)
        c->k->swiglu(h1, h3, n);
    else
        synor__llm_swiglu(h1, h3, n);
}

static void step_qkv(synor_llm_ctx *c, llm_scratch *s, int l, int chunk)
{
    const synor_llm_hparams *cfg = &c->m->cfg;
    const llm_layer *L = &c->m->layers[l];
    int n = (int)c->n, dim = cfg->dim, kvd = c->kv_dim;
    const llm_mat *mats[3] = {&L->wq, &L->wk, &L->wv};
    float *outs[3] = {c->q, c->kbuf, c->vbuf};
    int lds[3] = {dim, kvd, kvd};
    /* Each matrix is split over the chunks on its own, so that every
     * chunk copies its share of the new K and V rows into the cache (split
     * over Q, K and V end to end, the last chunk had all of V's copies and
     * the others waited for it: measured, one chunk 2x the other at 16
     * rows). Ranges are whole units of chunk_range, so packed groups stay
     * whole. */
    int lo[3], hi[3], any = 0;
    for (int m = 0; m < 3; m++) {
        chunk_range(mats[m]->rows, c->P, chunk, &lo[m], &hi[m]);
        any |= lo[m] < hi[m];
    }
    if (!any)
        return;
    norm_rows(c, s, c->x, (size_t)dim, L->rms_att, NULL, n, dim);
    for (int m = 0; m < 3; m++) {
        if (lo[m] >= hi[m])
            continue;
        synor__llm_matmul(c->k, mats[m], lo[m], hi[m], n, s->src, s->ld,
                          acts(c, s, n, dim, mats[m]), outs[m], (size_t)lds[m], 0, &c->gemm);
        if (m < 2)
            rope_rows(c, outs[m], (size_t)lds[m], 0, n, lo[m], hi[m]);
        if (m > 0)
            for (int t = 0; t < n; t++)
                kv_store(c, m == 1 ? c->kc : c->vc, l, c->seq[t], c->pos[t],
                         outs[m] + (size_t)t * kvd, lo[m], hi[m]);
    }
}

/* Where chunk j of P starts among the n * H (row, head) items of
 * attention, split by work: an item of row t costs its pos[t] + 1 cached
 * positions and a fixed ATT_ITEM_COST (a prompt's last rows read many
 * times the positions of its first: split by count, the chunk with the
 * last rows had three quarters of a prefill's attention). */
#define ATT_ITEM_COST 8
static long att_bound(const synor_llm_ctx *c, int j)
{
    int n = (int)c->n, H = c->m->cfg.n_heads;
    if (j <= 0)
        return 0;
    if (j >= c->P)
        return (long)n * H;
    long long total = 0;
    for (int t = 0; t < n; t++)
        total += (long long)H * (c->pos[t] + 1 + ATT_ITEM_COST);
    long long target = total * j / c->P, acc = 0;
    for (int t = 0; t < n; t++) {
        long long per = c->pos[t] + 1 + ATT_ITEM_COST;
        if (acc + per * H >= target)
            return (long)t * H + (long)((target - acc + per - 1) / per);
        acc += per * H;
    }
    return (long)n * H;
}

/* Heads h0..h1 - 1 of row t: the scores of every head over a KV block,
 * block after block, then each head's softmax, then the values the same
 * way. A block holds a layer's heads one after another (kv_head), so the
 * heads of a row read each block as one stream; head after head, each
 * read 4 KiB pieces (110M, F32) 48 KiB apart, which the prefetchers
 * follow badly: at 16 rows and 96 positions attention took a third of a
 * step (docs/BENCHMARKS.md, session 21). Every head's sums are in the
 * same order either way (its positions in turn), so the same bits. */
static void att_row(synor_llm_ctx *c, llm_scratch *s, int l, int t, int h0, int h1, float scale)
{
    const synor_llm_hparams *cfg = &c->m->cfg;
    int hs = cfg->head_dim, group = cfg->n_heads / cfg->n_kv_heads;
    int npos = c->pos[t] + 1;
    unsigned seq = c->seq[t];
    size_t ss = (size_t)cfg->seq_len; /* a head's scores */
    for (int p0 = 0; p0 < npos; p0 += SYNOR_LLM_KV_BLOCK) {
        int np = npos - p0 < SYNOR_LLM_KV_BLOCK ? npos - p0 : SYNOR_LLM_KV_BLOCK;
        for (int h = h0; h < h1; h++)
            att_scores(c, c->q + (size_t)t * cfg->dim + (size_t)h * hs,
                       kv_head(c, c->kc, l, seq, p0, h / group), np, hs, scale,
                       s->scores + (size_t)(h - h0) * ss + p0);
    }
    for (int h = h0; h < h1; h++) {
        float *sc = s->scores + (size_t)(h - h0) * ss;
        if (c->k->softmax)
            c->k->softmax(sc, npos);
        else
            synor__llm_softmax(sc, npos);
        memset(c->att + (size_t)t * cfg->dim + (size_t)h * hs, 0, (size_t)hs * sizeof(float));
    }
    for (int p0 = 0; p0 < npos; p0 += SYNOR_LLM_KV_BLOCK) {
        int np = npos - p0 < SYNOR_LLM_KV_BLOCK ? npos - p0 : SYNOR_LLM_KV_BLOCK;
        for (int h = h0; h < h1; h++)
            att_mix(c, s->scores + (size_t)(h - h0) * ss + p0,
                    kv_head(c, c->vc, l, seq, p0, h / group), np, hs,
                    c->att + (size_t)t * cfg->dim + (size_t)h * hs);
    }
}

static void step_attention(synor_llm_ctx *c, llm_scratch *s, int l, int chunk)
{
    const synor_llm_hparams *cfg = &c->m->cfg;
    int H = cfg->n_heads;
    long a = att_bound(c, chunk), b = att_bound(c, chunk + 1);
    float scale = 1.0f / sqrtf((float)cfg->head_dim);
    /* this chunk's (row, head) items, a row's run of heads at a time */
    for (long i = a; i < b;) {
        int t = (int)(i / H), h0 = (int)(i % H);
        long end = (long)t * H + H < b ? (long)t * H + H : b;
        att_row(c, s, l, t, h0, (int)(end - (long)t * H), scale);
        i = end;
    }
}

static void step_out(synor_llm_ctx *c, llm_scratch *s, int l, int chunk)
{
    const llm_layer *L = &c->m->layers[l];
    int n = (int)c->n, dim = c->m->cfg.dim, a, b;
    chunk_range(dim, c->P, chunk, &a, &b);
    if (a >= b)
        return;
    norm_rows(c, s, c->att, (size_t)dim, NULL, NULL, n, dim);
    synor__llm_matmul(c->k, &L->wo, a, b, n, s->src, s->ld, acts(c, s, n, dim, &L->wo), c->x,
                      (size_t)dim, 1, &c->gemm);
}

static void step_ffn_up(synor_llm_ctx *c, llm_scratch *s, int l, int chunk)
{
    const llm_layer *L = &c->m->layers[l];
    int n = (int)c->n, dim = c->m->cfg.dim, hid = c->m->cfg.hidden_dim, a, b;
    chunk_range(hid, c->P, chunk, &a, &b);
    if (a >= b)
        return;
    norm_rows(c, s, c->x, (size_t)dim, L->rms_ffn, NULL, n, dim);
    synor__llm_matmul(c->k, &L->w1, a, b, n, s->src, s->ld, acts(c, s, n, dim, &L->w1), c->hb,
                      (size_t)hid, 0, &c->gemm);
    synor__llm_matmul(c->k, &L->w3, a, b, n, s->src, s->ld, acts(c, s, n, dim, &L->w3), c->hb2,
                      (size_t)hid, 0, &c->gemm);
    for (int t = 0; t < n; t++)
        swiglu(c, c->hb + (size_t)t * hid + a, c->hb2 + (size_t)t * hid + a, b - a);
}

static void step_ffn_down(synor_llm_ctx *c, llm_scratch *s, int l, int chunk)
{
    const llm_layer *L = &c->m->layers[l];
    int n = (int)c->n, dim = c->m->cfg.dim, hid = c->m->cfg.hidden_dim, a, b;
    chunk_range(dim, c->P, chunk, &a, &b);
    if (a >= b)
        return;
    norm_rows(c, s, c->hb, (size_t)hid, NULL, NULL, n, hid);
    synor__llm_matmul(c->k, &L->w2, a, b, n, s->src, s->ld, acts(c, s, n, hid, &L->w2), c->x,
                      (size_t)dim, 1, &c->gemm);
}

static void step_classifier(synor_llm_ctx *c, llm_scratch *s, int chunk)
{
    int dim = c->m->cfg.dim, V = c->m->cfg.vocab_size, a, b;
    chunk_range(V, c->P, chunk, &a, &b);
    if (a >= b || c->nwant == 0)
        return;
    norm_rows(c, s, c->x, (size_t)dim, c->m->rms_final, c->want_rows, (int)c->nwant, dim);
    synor__llm_matmul(c->k, &c->m->cls, a, b, (int)c->nwant, s->src, s->ld,
                      acts(c, s, (int)c->nwant, dim, &c->m->cls), c->logits, (size_t)V, 0,
                      NULL); /* wanted rows: never in a block */
}

/* ----------------------------------------------------- GPU layers
 * One task per step (the products of the whole batch at once, gpu.c);
 * the element-wise parts around them are done here on the host. */

/* Batches of at least this many rows finish a GPU product's element-wise
 * work (RoPE and the KV cache; SwiGLU) in a step of their own, split over
 * the CPU workers; smaller ones in the product's task. */
#define GPU_SPLIT_ROWS 32

/* RoPE on rows t0..t1 - 1 of the stacked Q/K/V product, the keys and
 * values into the cache, the queries into q. */
/* synor__llm_gpu_matmul, and with tracing its copies and product as
 * events of the GPU (one GPU step runs at a time: gpu_worker is its). */
static int gpu_mm(synor_llm_ctx *c, int which, int l, int n, const float *x, float *y)
{
    int e = synor__llm_gpu_matmul(c->gpu, which, l, n, x, y);
    if (!e && c->tracing && c->trace_gpu) {
        uint64_t t[4], up, down;
        synor__llm_gpu_last(c->gpu, t, &up, &down);
        int layer = which == LLM_GPU_CLS ? -1 : l;
        synor__llm_trace_add(c, "h2d", layer, c->gpu_worker, 1, t[0], t[1], up);
        synor__llm_trace_add(c, n == 1 ? "sgemv" : "sgemm", layer, c->gpu_worker, 1, t[1], t[2], 0);
        synor__llm_trace_add(c, "d2h", layer, c->gpu_worker, 1, t[2], t[3], down);
    }
    return e;
}

static void qkv_post(synor_llm_ctx *c, int l, int t0, int t1)
{
    int dim = c->m->cfg.dim, kvd = c->kv_dim, R = dim + 2 * kvd;
    float *y = synor__llm_gpu_out(c->gpu);
    rope_rows(c, y, (size_t)R, t0, t1, 0, dim);
    rope_rows(c, y + dim, (size_t)R, t0, t1, 0, kvd);
    for (int t = t0; t < t1; t++) {
        const float *row = y + (size_t)t * R;
        memcpy(c->q + (size_t)t * dim, row, (size_t)dim * sizeof(float));
        kv_store(c, c->kc, l, c->seq[t], c->pos[t], row + dim, 0, kvd);
        kv_store(c, c->vc, l, c->seq[t], c->pos[t], row + dim + kvd, 0, kvd);
    }
}

/* SwiGLU of rows t0..t1 - 1 of the stacked gate/up product into hb. */
static void swiglu_post(synor_llm_ctx *c, int t0, int t1)
{
    int hid = c->m->cfg.hidden_dim;
    const float *y = synor__llm_gpu_out(c->gpu);
    for (int t = t0; t < t1; t++) {
        const float *h1 = y + (size_t)t * 2 * hid;
        float *o = c->hb + (size_t)t * hid;
        memcpy(o, h1, (size_t)hid * sizeof(float));
        swiglu(c, o, h1 + hid, hid);
    }
}

static int gstep_qkv(synor_llm_ctx *c, int l)
{
    const synor_llm_hparams *cfg = &c->m->cfg;
    int n = (int)c->n, dim = cfg->dim;
    float *x = synor__llm_gpu_in(c->gpu), *y = synor__llm_gpu_out(c->gpu);
    for (int t = 0; t < n; t++)
        rmsnorm(x + (size_t)t * dim, c->x + (size_t)t * dim, c->m->layers[l].rms_att, dim,
                cfg->norm_eps);
    int e = gpu_mm(c, LLM_GPU_QKV, l, n, x, y);
    if (!e && n < GPU_SPLIT_ROWS)
        qkv_post(c, l, 0, n);
    return e;
}

/* x += the product of `which` on in (n x cols). */
static int gstep_residual(synor_llm_ctx *c, int which, int l, const float *in)
{
    int n = (int)c->n, dim = c->m->cfg.dim;
    float *y = synor__llm_gpu_out(c->gpu);
    int e = gpu_mm(c, which, l, n, in, y);
    for (size_t i = 0; !e && i < (size_t)n * dim; i++)
        c->x[i] += y[i];
    return e;
}

static int gstep_ffn_up(synor_llm_ctx *c, int l)
{
    const synor_llm_hparams *cfg = &c->m->cfg;
    int n = (int)c->n, dim = cfg->dim;
    float *x = synor__llm_gpu_in(c->gpu), *y = synor__llm_gpu_out(c->gpu);
    for (int t = 0; t < n; t++)
        rmsnorm(x + (size_t)t * dim, c->x + (size_t)t * dim, c->m->layers[l].rms_ffn, dim,
                cfg->norm_eps);
    int e = gpu_mm(c, LLM_GPU_W13, l, n, x, y);
    if (!e && n < GPU_SPLIT_ROWS)
        swiglu_post(c, 0, n);
    return e;
}

static int gstep_classifier(synor_llm_ctx *c)
{
    const synor_llm_hparams *cfg = &c->m->cfg;
    int dim = cfg->dim;
    float *x = synor__llm_gpu_in(c->gpu);
    for (size_t t = 0; t < c->nwant; t++)
        rmsnorm(x + t * dim, c->x + (size_t)c->want_rows[t] * dim, c->m->rms_final, dim,
                cfg->norm_eps);
    return gpu_mm(c, LLM_GPU_CLS, 0, (int)c->nwant, x, c->logits);
}

static int gpu_step(synor_llm_ctx *c, int step, int l);

typedef struct step_args {
    int step, layer, chunk;
} step_args;

enum {
    STEP_QKV,
    STEP_ATT,
    STEP_OUT,
    STEP_FFN_UP,
    STEP_FFN_DOWN,
    STEP_CLS,
    STEP_QKV_POST, /* after a GPU layer's Q/K/V of a large batch */
    STEP_SWIGLU,   /* after its gate/up */
    STEP_GPU = 16
};

static int gpu_step(synor_llm_ctx *c, int step, int l)
{
    switch (step) {
    case STEP_QKV:
        return gstep_qkv(c, l);
    case STEP_OUT:
        return gstep_residual(c, LLM_GPU_WO, l, c->att);
    case STEP_FFN_UP:
        return gstep_ffn_up(c, l);
    case STEP_FFN_DOWN:
        return gstep_residual(c, LLM_GPU_W2, l, c->hb);
    default:
        return c->nwant ? gstep_classifier(c) : 0;
    }
}

static const char *const step_names[] = {"qkv",        "attention", "out",    "ffn_up",
                                         "ffn_down",   "classifier", "rope_kv", "swiglu"};

static void run_step(synor_llm_ctx *c, llm_scratch *s, step_args a);

static int step_kernel(const synor_task_ctx *t)
{
    synor_llm_ctx *c = t->user;
    step_args a;
    memcpy(&a, t->args, sizeof a);
    uint64_t t0 = c->tracing ? synor__llm_now_ns() : 0;
    int e = 0;
    if (a.step >= STEP_GPU) {
        c->gpu_worker = (int)t->worker;
        e = gpu_step(c, a.step - STEP_GPU, a.layer);
    } else {
        run_step(c, &c->scratch[t->worker], a);
    }
    if (c->tracing && !e) {
        int st = a.step >= STEP_GPU ? a.step - STEP_GPU : a.step;
        synor__llm_trace_add(c, a.step >= STEP_GPU ? "gpu_step" : step_names[st],
                             st == STEP_CLS ? -1 : a.layer, (int)t->worker, 0, t0,
                             synor__llm_now_ns(), 0);
    }
    return e;
}

static void run_step(synor_llm_ctx *c, llm_scratch *s, step_args a)
{
    int t0 = (int)((long)c->n * a.chunk / c->P), t1 = (int)((long)c->n * (a.chunk + 1) / c->P);
    switch (a.step) {
    case STEP_QKV_POST:
        qkv_post(c, a.layer, t0, t1);
        break;
    case STEP_SWIGLU:
        swiglu_post(c, t0, t1);
        break;
    case STEP_QKV:
        step_qkv(c, s, a.layer, a.chunk);
        break;
    case STEP_ATT:
        step_attention(c, s, a.layer, a.chunk);
        break;
    case STEP_OUT:
        step_out(c, s, a.layer, a.chunk);
        break;
    case STEP_FFN_UP:
        step_ffn_up(c, s, a.layer, a.chunk);
        break;
    case STEP_FFN_DOWN:
        step_ffn_down(c, s, a.layer, a.chunk);
        break;
    default:
        step_classifier(c, s, a.chunk);
        break;
    }
}

static const synor_kernel llm_step_kernel = {
    .name = "llm.step",
    .op = SYNOR_OP_MATMUL,
    .fn = {[SYNOR_KIND_CPU] = step_kernel},
    .flags = SYNOR_KERNEL_FAILS_BEFORE_WRITING,
};

/* A step of P tasks; or of one (a GPU step), which still reads every
 * token of the step before and is read by every task of the next. */
static int submit_step(synor_llm_ctx *c, int step, int layer)
{
    int set = c->nsteps % 2;
    int gpu = step <= STEP_CLS && step != STEP_ATT &&
              (step == STEP_CLS ? c->gpu_cls : layer >= c->gpu_first);
    if (gpu)
        step += STEP_GPU;
    for (int i = 0; i < (gpu ? 1 : c->P); i++) {
        step_args a = {step, layer, i};
        synor_task_spec t = {.kernel = &llm_step_kernel,
                             .priority = SYNOR_PRIORITY_NORMAL,
                             .args = &a,
                             .args_size = sizeof a,
                             .user = c};
        t.data[t.ndata] = c->bar[set][i];
        t.mode[t.ndata++] = SYNOR_ACCESS_W;
        for (int j = 0; j < c->P; j++) {
            t.data[t.ndata] = c->bar[!set][j];
            t.mode[t.ndata++] = SYNOR_ACCESS_R;
        }
        int e = synor_task_submit(c->rt, &t);
        if (e)
            return e;
    }
    c->nsteps++;
    return 0;
}

int synor__llm_run_graph(synor_llm_ctx *c)
{
    synor__llm_apply_split(c);
    int L = c->m->cfg.n_layers;
    /* at most 7 steps a layer and the classifier, P tasks or 1 + 3 GPU
     * events each */
    int e = c->tracing ? synor__llm_trace_reserve(c, (size_t)(7 * L + 1) * (size_t)(c->P + 4)) : 0;
    if (e)
        return e;
    int split = c->n >= GPU_SPLIT_ROWS;
    for (int l = 0; l < c->m->cfg.n_layers && !e; l++) {
        int gpu = l >= c->gpu_first;
        e = submit_step(c, STEP_QKV, l);
        if (!e && gpu && split)
            e = submit_step(c, STEP_QKV_POST, l);
        if (!e)
            e = submit_step(c, STEP_ATT, l);
        if (!e)
            e = submit_step(c, STEP_OUT, l);
        if (!e)
            e = submit_step(c, STEP_FFN_UP, l);
        if (!e && gpu && split)
            e = submit_step(c, STEP_SWIGLU, l);
        if (!e)
            e = submit_step(c, STEP_FFN_DOWN, l);
    }
    if (!e && c->nwant)
        e = submit_step(c, STEP_CLS, 0);
    int w = synor_runtime_wait_all(c->rt);
    return e ? e : w;
}
