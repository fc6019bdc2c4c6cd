/* batch.c - inference contexts: creation, the paged KV cache's block pool
 * and sequences, and running a batch.
 *
 * The KV cache is vLLM's paged layout: a pool of blocks of
 * SYNOR_LLM_KV_BLOCK positions (each holding every layer's keys and values
 * for those positions, each KV head's positions one run: ctx.c, kv_head),
 * and per sequence a block table. A sequence takes a
 * block from the pool when its length crosses a block boundary and gives
 * all back when it is reset, so sequences of any mix of lengths share the
 * pool with at most one partly used block each. Who holds each block, and
 * the prefix cache's blocks shared between sequences: prefix.c. */
#include <math.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "common/common.h"
#include "llm/llm_ctx.h"

static void scratch_free(llm_scratch *s)
{
    synor__free(s->xb);
    synor__free(s->q);
    synor__free(s->d);
    synor__free(s->c8);
    synor__free(s->u);
    synor__free(s->qrows);
    synor__free(s->scores);
}

void synor_llm_ctx_destroy(synor_llm_ctx *c)
{
    if (!c)
        return;
    synor__llm_gpu_close(c);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < LLM_MAX_CHUNKS; i++)
            if (c->bar[s][i])
                synor_handle_unregister(c->bar[s][i]);
    if (c->scratch)
        for (unsigned i = 0; i < c->nscratch; i++)
            scratch_free(&c->scratch[i]);
    synor__free(c->scratch);
    if (c->seqs)
        for (unsigned i = 0; i < c->max_seqs; i++)
            synor__free(c->seqs[i].blocks);
    synor__free(c->seqs);
    synor__free(c->kc);
    synor__free(c->vc);
    synor__llm_pool_free(c);
    synor__free(c->rope_cos);
    synor__free(c->ev);
    synor__free(c->rope_sin);
    synor__free(c->pos);
    synor__free(c->seq);
    synor__free(c->want_rows);
    synor__free(c->gemm_start);
    synor__free(c->logit_row);
    synor__free(c->x);
    synor__free(c->q);
    synor__free(c->kbuf);
    synor__free(c->vbuf);
    synor__free(c->att);
    synor__free(c->hb);
    synor__free(c->hb2);
    synor__free(c->logits);
    synor__free(c);
}

int synor_llm_kv_type_parse(const char *s, unsigned *out)
{
    if (s && out && (strcasecmp(s, "f32") == 0 || strcasecmp(s, "f16") == 0)) {
        *out = strcasecmp(s, "f16") == 0 ? SYNOR_LLM_KV_F16 : SYNOR_LLM_KV_F32;
        return 0;
    }
    return synor__error(SYNOR_EINVAL, "KV type '%s': expected f32 or f16", s ? s : "(null)");
}

const char *synor_llm_kv_type_name(unsigned kv_type)
{
    return kv_type == SYNOR_LLM_KV_F32 ? "f32" : kv_type == SYNOR_LLM_KV_F16 ? "f16" : NULL;
}

/* Asks for transparent huge pages under a KV cache (where the system
 * leaves them to madvise): a decode step writes each layer's keys and
 * values at a new position, so with 4 KiB pages it takes about one page
 * fault per layer and cache every few steps - 18 a step at 110M's shape,
 * and on the development VM a fault costs ~19 us and stalls the step's
 * other worker at the next barrier (measured: a Q8_0 110M decode step
 * 0.3-0.5 ms slower with its cache cold than warm, docs/BENCHMARKS.md).
 * A 2 MiB page is faulted once per ~670 positions of a layer. Memory is
 * still committed as it is first written. A failure is ignored. */
static void kv_huge_pages(void *p, size_t n) { synor__huge_pages(p, n); }

/* llama2.c's frequencies, computed as run.c computes them, so positions
 * rotate by the same floats. */
static void rope_tables(synor_llm_ctx *c)
{
    const synor_llm_hparams *cfg = &c->m->cfg;
    int hs = cfg->head_dim;
    for (int p = 0; p < cfg->seq_len; p++)
        for (int j = 0; j < hs / 2; j++) {
            float freq = 1.0f / powf(cfg->rope_base, (float)(2 * j) / (float)hs);
            float v = (float)p * freq;
            c->rope_cos[(size_t)p * (hs / 2) + j] = cosf(v);
            c->rope_sin[(size_t)p * (hs / 2) + j] = sinf(v);
        }
}

int synor_llm_ctx_create(synor_llm *m, synor_runtime *rt, const synor_llm_ctx_opts *opts,
                         synor_llm_ctx **out)
{
    if (!m || !rt || !out)
        return synor__error(SYNOR_EINVAL, "synor_llm_ctx_create: NULL argument");
    const synor_llm_hparams *cfg = &m->cfg;
    synor_llm_ctx_opts o = {1, 512, 0, 0, 0, SYNOR_LLM_GPU_CUDA, SYNOR_LLM_KV_F32, 0};
    if (opts) {
        if (opts->max_seqs)
            o.max_seqs = opts->max_seqs;
        if (opts->max_batch)
            o.max_batch = opts->max_batch;
        o.kv_blocks = opts->kv_blocks;
        o.gpu_layers = opts->gpu_layers;
        o.gpu_device = opts->gpu_device;
        o.gpu_backend = opts->gpu_backend;
        o.kv_type = opts->kv_type;
        o.prefix_cache = opts->prefix_cache;
    }
    if (!synor_llm_kv_type_name(o.kv_type))
        return synor__error(SYNOR_EINVAL,
                            "synor_llm_ctx_create: kv_type %u is not f32 (%d) or f16 (%d)",
                            o.kv_type, SYNOR_LLM_KV_F32, SYNOR_LLM_KV_F16);
    if (o.gpu_layers < 0 && o.gpu_layers != SYNOR_LLM_GPU_AUTO)
        return synor__error(SYNOR_EINVAL, "synor_llm_ctx_create: gpu_layers %d is negative",
                            o.gpu_layers);
    if (o.max_seqs > 65536 || o.max_batch > 65536)
        return synor__error(SYNOR_EINVAL,
                            "synor_llm_ctx_create: max_seqs %u or max_batch %u "
                            "above 65536",
                            o.max_seqs, o.max_batch);
    unsigned per_seq = (unsigned)((cfg->seq_len + SYNOR_LLM_KV_BLOCK - 1) / SYNOR_LLM_KV_BLOCK);
    if (!o.kv_blocks)
        o.kv_blocks = per_seq * o.max_seqs;

    synor_llm_ctx *c = synor__calloc(1, sizeof *c);
    if (!c)
        return SYNOR_ENOMEM;
    c->m = m;
    c->rt = rt;
    c->k = synor__llm_kernels();
    c->max_seqs = o.max_seqs;
    c->max_batch = o.max_batch;
    c->kv_dim = cfg->dim / cfg->n_heads * cfg->n_kv_heads;
    c->kv_blocks = o.kv_blocks;
    c->kv_f16 = o.kv_type == SYNOR_LLM_KV_F16;
    c->kv_esize = c->kv_f16 ? sizeof(uint16_t) : sizeof(float);
    unsigned workers = synor_runtime_worker_count(rt);
    /* Steps split over the host CPU's workers (device 0): a GPU's worker
     * never runs the engine's tasks. */
    synor_runtime_device_info host;
    unsigned cpus = synor_runtime_device_get(rt, 0, &host) == 0 && host.workers ? host.workers
                                                                                 : workers;
    c->P = cpus < 1 ? 1 : cpus > LLM_MAX_CHUNKS ? LLM_MAX_CHUNKS : (int)cpus;
    c->gpu_first = cfg->n_layers;
    c->layer_stride = (size_t)o.kv_blocks * SYNOR_LLM_KV_BLOCK * (size_t)c->kv_dim;
    size_t B = o.max_batch, dim = (size_t)cfg->dim, hid = (size_t)cfg->hidden_dim;
    size_t widest = dim > hid ? dim : hid;
    size_t rope = (size_t)cfg->seq_len * (size_t)(cfg->head_dim / 2);

    int bad = 0;
    c->kc = synor__malloc_aligned(c->layer_stride * (size_t)cfg->n_layers * c->kv_esize);
    c->vc = synor__malloc_aligned(c->layer_stride * (size_t)cfg->n_layers * c->kv_esize);
    c->seqs = synor__calloc(o.max_seqs, sizeof *c->seqs);
    c->rope_cos = synor__malloc(rope * sizeof(float) + 1);
    c->rope_sin = synor__malloc(rope * sizeof(float) + 1);
    c->pos = synor__malloc(B * sizeof(int));
    c->seq = synor__malloc(B * sizeof(unsigned));
    c->want_rows = synor__malloc(B * sizeof(int));
    c->gemm_start = synor__malloc(B * sizeof(int));
    c->gemm.start = c->gemm_start;
    c->logit_row = synor__malloc(B * sizeof(long));
    c->x = synor__malloc_aligned(B * dim * sizeof(float));
    c->q = synor__malloc_aligned(B * dim * sizeof(float));
    c->kbuf = synor__malloc_aligned(B * (size_t)c->kv_dim * sizeof(float));
    c->vbuf = synor__malloc_aligned(B * (size_t)c->kv_dim * sizeof(float));
    c->att = synor__malloc_aligned(B * dim * sizeof(float));
    c->hb = synor__malloc_aligned(B * hid * sizeof(float));
    c->hb2 = synor__malloc_aligned(B * hid * sizeof(float));
    c->nscratch = workers ? workers : 1;
    c->scratch = synor__calloc(c->nscratch, sizeof *c->scratch);
    bad |= synor__llm_pool_init(c, o.prefix_cache) != 0;
    bad |= !c->kc || !c->vc || !c->seqs || !c->rope_cos || !c->rope_sin ||
           !c->pos || !c->seq || !c->want_rows || !c->gemm_start || !c->logit_row || !c->x ||
           !c->q || !c->kbuf || !c->vbuf || !c->att || !c->hb || !c->hb2 || !c->scratch;
    for (unsigned i = 0; !bad && i < c->nscratch; i++) {
        llm_scratch *s = &c->scratch[i];
        s->xb = synor__malloc_aligned(B * widest * sizeof(float));
        s->q = synor__malloc_aligned(B * widest);
        s->d = synor__malloc(B * widest * sizeof(float)); /* block >= 1 */
        s->c8 = synor__malloc(B * widest / SYNOR_QK * sizeof(float) + sizeof(float));
        s->u = synor__malloc_aligned(B * widest);
        s->qrows = synor__malloc(B * sizeof *s->qrows);
        /* a row's heads at once (ctx.c step_attention) */
        s->scores = synor__malloc((size_t)cfg->seq_len * (size_t)cfg->n_heads * sizeof(float));
        bad |= !s->xb || !s->q || !s->d || !s->c8 || !s->u || !s->qrows || !s->scores;
    }
    if (!bad) {
        kv_huge_pages(c->kc, c->layer_stride * (size_t)cfg->n_layers * c->kv_esize);
        kv_huge_pages(c->vc, c->layer_stride * (size_t)cfg->n_layers * c->kv_esize);
    }
    for (unsigned i = 0; !bad && i < o.max_seqs; i++) {
        c->seqs[i].blocks = synor__malloc(per_seq * sizeof(int));
        bad |= !c->seqs[i].blocks;
    }
    if (bad) {
        synor_llm_ctx_destroy(c);
        return synor__error(SYNOR_ENOMEM,
                            "synor_llm_ctx_create: out of memory for %u "
                            "sequences, %u KV blocks, batches of %u",
                            o.max_seqs, o.kv_blocks, o.max_batch);
    }
    /* A context reads every weight: the file's pages are mapped ahead,
     * once per model (load.c), not faulted in by its first batch. */
    synor__llm_populate(m);
    /* Contexts that run batches have the model's Q8_0/Q4_0 products
     * packed for them (once per model; pack.c) - not a model only
     * inspected, nor one run a row at a time, but where Q4_0, F32 or
     * (small models) Q8_0 products use the packed weights for one row too. */
    if (o.max_batch >= LLM_PACK_MIN_ROWS || synor__llm_model_packs_one_row(m))
        synor__llm_pack_model(m);
    rope_tables(c);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < c->P; i++) {
            synor_handle_desc d = {
                .ptr = &c->bar_mem[s][i], .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {1}};
            int e = synor_handle_register(rt, &d, &c->bar[s][i]);
            if (e) {
                synor_llm_ctx_destroy(c);
                return e;
            }
        }
    int e = synor__llm_gpu_open(c, o.gpu_layers, o.gpu_device, o.gpu_backend);
    if (e) {
        synor_llm_ctx_destroy(c);
        return e;
    }
    *out = c;
    return 0;
}

void synor_llm_seq_reset(synor_llm_ctx *c, unsigned seq)
{
    if (c && seq < c->max_seqs)
        synor_llm_seq_truncate(c, seq, 0);
}

int synor_llm_seq_len(const synor_llm_ctx *c, unsigned seq)
{
    return c && seq < c->max_seqs ? c->seqs[seq].len : -1;
}

int synor_llm_seq_truncate(synor_llm_ctx *c, unsigned seq, int pos)
{
    if (!c || seq >= c->max_seqs || pos < 0)
        return synor__error(SYNOR_EINVAL,
                            "synor_llm_seq_truncate: sequence %u or position %d "
                            "out of range",
                            seq, pos);
    llm_seq *s = &c->seqs[seq];
    if (pos >= s->len)
        return 0;
    int keep = (pos + SYNOR_LLM_KV_BLOCK - 1) / SYNOR_LLM_KV_BLOCK;
    /* the block the cut falls inside will be written: not a shared one */
    if (pos % SYNOR_LLM_KV_BLOCK) {
        int e = synor__llm_pool_unshare(c, &s->blocks[keep - 1]);
        if (e)
            return e;
    }
    while (s->nblocks > keep)
        synor__llm_pool_drop(c, s->blocks[--s->nblocks]);
    s->len = pos;
    return 0;
}

unsigned synor_llm_kv_warm(synor_llm_ctx *c, unsigned nblocks)
{
    size_t bytes = (size_t)SYNOR_LLM_KV_BLOCK * (size_t)c->kv_dim * c->kv_esize;
    for (; nblocks && c->kv_warm < c->kv_blocks; nblocks--, c->kv_warm++)
        for (int l = 0; l < c->m->cfg.n_layers; l++) {
            size_t el = (size_t)l * c->layer_stride +
                        (size_t)c->kv_warm * SYNOR_LLM_KV_BLOCK * (size_t)c->kv_dim;
            memset((uint8_t *)c->kc + el * c->kv_esize, 0, bytes);
            memset((uint8_t *)c->vc + el * c->kv_esize, 0, bytes);
        }
    return c->kv_blocks - c->kv_warm;
}

void synor_llm_kv_usage(const synor_llm_ctx *c, unsigned *used, unsigned *total)
{
    *used = c->kv_blocks - synor__llm_pool_avail(c);
    *total = c->kv_blocks;
}

/* The rows F32 products send to SGEMM where the kernel table does that
 * (gemm_block = m rows, avx2): blocks of m rows of one sequence at
 * positions m * j .. m * j + m - 1, consecutive in the batch - a prompt's.
 * Every other row (a decode step's, a speculative check's, a prompt's
 * last ones) takes the tile, whose sums depend on the row alone. So
 * whatever else a batch carries, a row's result is the one it gets alone,
 * and a prompt's the same in any chunks that end at multiples of m (the
 * scheduler's and generate's). */
static void gemm_blocks(synor_llm_ctx *c, size_t n, const unsigned *seqs)
{
    size_t m = c->k->gemm_block > 0 ? (size_t)c->k->gemm_block : 0;
    c->gemm.n = 0;
    for (size_t i = 0; m && i + m <= n;) {
        int ok = c->pos[i] % (int)m == 0;
        for (size_t j = i + 1; ok && j < i + m; j++)
            ok = seqs[j] == seqs[i];
        if (ok) {
            c->gemm_start[c->gemm.n++] = (int)i;
            i += m;
        } else {
            i++;
        }
    }
}

int synor_llm_batch(synor_llm_ctx *c, size_t n, const int32_t *tokens, const unsigned *seqs,
                    const uint8_t *want)
{
    const synor_llm_hparams *cfg = &c->m->cfg;
    if (n == 0 || n > c->max_batch)
        return synor__error(SYNOR_EINVAL, "synor_llm_batch: %zu rows (1..%u)", n, c->max_batch);
    /* Validate everything and count the blocks needed before changing any
     * state: a refused batch leaves every sequence as it was. */
    long need = 0;
    for (size_t i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= cfg->vocab_size)
            return synor__error(SYNOR_EINVAL,
                                "synor_llm_batch: row %zu: token %d out of range "
                                "(vocabulary of %d)",
                                i, tokens[i], cfg->vocab_size);
        if (seqs[i] >= c->max_seqs)
            return synor__error(SYNOR_EINVAL,
                                "synor_llm_batch: row %zu: sequence %u (context "
                                "has %u)",
                                i, seqs[i], c->max_seqs);
    }
    for (size_t i = 0; i < n; i++)
        c->pos[i] = -1;
    for (size_t i = 0; i < n; i++) {
        if (c->pos[i] >= 0)
            continue;
        unsigned s = seqs[i];
        int len = c->seqs[s].len;
        for (size_t j = i; j < n; j++)
            if (seqs[j] == s)
                c->pos[j] = len++;
        if (len > cfg->seq_len)
            return synor__error(SYNOR_ERANGE,
                                "synor_llm_batch: sequence %u would reach %d "
                                "positions (the model's context is %d)",
                                s, len, cfg->seq_len);
        need += (len + SYNOR_LLM_KV_BLOCK - 1) / SYNOR_LLM_KV_BLOCK - c->seqs[s].nblocks;
    }
    if (need > (long)synor__llm_pool_avail(c))
        return synor__error(SYNOR_ENOMEM,
                            "synor_llm_batch: the KV cache needs %ld more blocks, "
                            "%u are free (of %u)",
                            need, synor__llm_pool_avail(c), c->kv_blocks);
    c->nwant = 0;
    for (size_t i = 0; i < n; i++) {
        int w;
        if (want)
            w = want[i] != 0;
        else {
            w = 1;
            for (size_t j = i + 1; j < n && w; j++)
                w = seqs[j] != seqs[i];
        }
        c->logit_row[i] = w ? (long)c->nwant : -1;
        if (w)
            c->want_rows[c->nwant++] = (int)i;
    }
    gemm_blocks(c, n, seqs);
    if (c->nwant > c->logits_cap) {
        float *l = synor__realloc(c->logits, c->nwant * (size_t)cfg->vocab_size * sizeof(float));
        if (!l)
            return synor__error(SYNOR_ENOMEM, "synor_llm_batch: logits for %zu rows", c->nwant);
        c->logits = l;
        c->logits_cap = c->nwant;
    }
    /* Commit: blocks, lengths, the rows, the embeddings. */
    for (size_t i = 0; i < n; i++) {
        llm_seq *s = &c->seqs[seqs[i]];
        int nb = c->pos[i] / SYNOR_LLM_KV_BLOCK + 1;
        while (s->nblocks < nb)
            s->blocks[s->nblocks++] = synor__llm_pool_take(c); /* (counted above) */
        c->seq[i] = seqs[i];
        synor__llm_mat_row(&c->m->embd, tokens[i], c->x + i * (size_t)cfg->dim);
    }
    for (size_t i = 0; i < n; i++) {
        llm_seq *s = &c->seqs[seqs[i]];
        if (c->pos[i] + 1 > s->len)
            s->len = c->pos[i] + 1;
    }
    c->n = n;
    int e = synor__llm_run_graph(c);
    if (e) {
        /* The cache holds partial values for the new positions: forget
         * them (each sequence back to its first row's position). */
        for (size_t i = 0; i < n; i++)
            synor_llm_seq_truncate(c, seqs[i], c->pos[i]);
        c->nwant = 0;
        c->n = 0; /* no logits of a failed batch */
    }
    return e;
}

const float *synor_llm_logits(const synor_llm_ctx *c, size_t i)
{
    if (!c || i >= c->n || c->logit_row[i] < 0)
        return NULL;
    return c->logits + (size_t)c->logit_row[i] * (size_t)c->m->cfg.vocab_size;
}
