/* prefix.c - the KV pool's blocks: who holds each, the free list, and the
 * prefix cache (vLLM's automatic prefix caching, SGLang's radix reuse in
 * its simplest form).
 *
 * A block is held by the sequences whose tables name it (ref). Without
 * the prefix cache a block is held by one sequence and goes back to the
 * free list when it lets go. With it, a sequence may publish the full
 * blocks of its prompt: each is entered in a table under a key chained
 * over every token up to its end (the key of the block before it and its
 * own BLOCK tokens), with its tokens and the block before it kept for a
 * check that does not rest on the hash alone (a wrong match would need
 * the block before it evicted and its place reused while it stays, and
 * a 64-bit key collision). A new sequence whose tokens begin the same way takes those
 * blocks into its own table (synor_llm_seq_reuse) instead of computing
 * them. A published block nobody holds stays in the table, idle, on an
 * LRU list; the pool hands out free blocks first, then evicts the least
 * recently used idle one. Published blocks are never written: only full
 * blocks are published and shared, a sequence writes only past its
 * length, and one cut inside a published block (synor_llm_seq_truncate)
 * takes a copy first unless it alone holds it. */
#include <string.h>

#include "common/common.h"
#include "llm/llm_ctx.h"

#define BLK SYNOR_LLM_KV_BLOCK

static uint64_t chain_key(uint64_t parent, const int32_t *t)
{
    uint64_t h = parent ^ 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < BLK; i++) {
        h ^= (uint32_t)t[i];
        h *= 0x100000001B3ull;
        h ^= h >> 29;
    }
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ull;
    return h ^ (h >> 32);
}

int synor__llm_pool_init(synor_llm_ctx *c, int prefix_cache)
{
    llm_pool *p = &c->pool;
    unsigned n = c->kv_blocks;
    p->free_blocks = synor__malloc((size_t)n * sizeof(int));
    p->ref = synor__calloc(n, sizeof(int));
    if (!p->free_blocks || !p->ref)
        return SYNOR_ENOMEM;
    for (unsigned i = 0; i < n; i++)
        p->free_blocks[i] = (int)(n - 1 - i);
    p->nfree = n;
    p->head = p->tail = -1;
    if (!prefix_cache)
        return 0;
    p->on = 1;
    size_t cap = 16;
    while (cap < 2 * (size_t)n)
        cap *= 2;
    p->mask = cap - 1;
    p->map = synor__malloc(cap * sizeof(int));
    p->parent = synor__malloc((size_t)n * sizeof(int));
    p->toks = synor__malloc((size_t)n * BLK * sizeof(int32_t));
    p->key = synor__malloc((size_t)n * sizeof(uint64_t));
    p->pub = synor__calloc(n, 1);
    p->prev = synor__malloc((size_t)n * sizeof(int));
    p->next = synor__malloc((size_t)n * sizeof(int));
    if (!p->map || !p->parent || !p->toks || !p->key || !p->pub || !p->prev || !p->next)
        return SYNOR_ENOMEM;
    for (size_t i = 0; i < cap; i++)
        p->map[i] = -1;
    return 0;
}

void synor__llm_pool_free(synor_llm_ctx *c)
{
    llm_pool *p = &c->pool;
    synor__free(p->free_blocks);
    synor__free(p->ref);
    synor__free(p->map);
    synor__free(p->parent);
    synor__free(p->toks);
    synor__free(p->key);
    synor__free(p->pub);
    synor__free(p->prev);
    synor__free(p->next);
    memset(p, 0, sizeof *p);
}

/* The idle list (published blocks nobody holds), least recently used first. */
static void idle_remove(llm_pool *p, int b)
{
    if (p->prev[b] >= 0)
        p->next[p->prev[b]] = p->next[b];
    else
        p->head = p->next[b];
    if (p->next[b] >= 0)
        p->prev[p->next[b]] = p->prev[b];
    else
        p->tail = p->prev[b];
    p->nidle--;
}

static void idle_append(llm_pool *p, int b)
{
    p->prev[b] = p->tail;
    p->next[b] = -1;
    if (p->tail >= 0)
        p->next[p->tail] = b;
    else
        p->head = b;
    p->tail = b;
    p->nidle++;
}

/* The table: open addressing, linear probing, deletion by backward shift. */
static void map_insert(llm_pool *p, int b)
{
    size_t i = (size_t)p->key[b] & p->mask;
    while (p->map[i] >= 0)
        i = (i + 1) & p->mask;
    p->map[i] = b;
    p->pub[b] = 1;
    p->ncached++;
}

static void map_delete(llm_pool *p, int b)
{
    size_t i = (size_t)p->key[b] & p->mask;
    while (p->map[i] != b)
        i = (i + 1) & p->mask;
    size_t j = i;
    for (;;) {
        p->map[i] = -1;
        for (;;) {
            j = (j + 1) & p->mask;
            if (p->map[j] < 0) {
                p->pub[b] = 0;
                p->ncached--;
                return;
            }
            size_t home = (size_t)p->key[p->map[j]] & p->mask;
            /* the entry at j may move to i when its home is not in (i, j] */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        p->map[i] = p->map[j];
        i = j;
    }
}

/* The published block with this key, after `parent`, holding tokens t; -1. */
static int map_find(const llm_pool *p, uint64_t key, int parent, const int32_t *t)
{
    for (size_t i = (size_t)key & p->mask; p->map[i] >= 0; i = (i + 1) & p->mask) {
        int b = p->map[i];
        if (p->key[b] == key && p->parent[b] == parent &&
            !memcmp(p->toks + (size_t)b * BLK, t, BLK * sizeof *t))
            return b;
    }
    return -1;
}

unsigned synor__llm_pool_avail(const synor_llm_ctx *c)
{
    return c->pool.nfree + c->pool.nidle;
}

int synor__llm_pool_take(synor_llm_ctx *c)
{
    llm_pool *p = &c->pool;
    int b;
    if (p->nfree) {
        b = p->free_blocks[--p->nfree];
    } else if (p->nidle) { /* the least recently used idle block */
        b = p->head;
        idle_remove(p, b);
        map_delete(p, b);
        p->evicted++;
    } else {
        return -1;
    }
    p->ref[b] = 1;
    if ((unsigned)b >= c->kv_warm)
        c->kv_warm = (unsigned)b + 1;
    return b;
}

void synor__llm_pool_drop(synor_llm_ctx *c, int b)
{
    llm_pool *p = &c->pool;
    if (--p->ref[b] > 0)
        return;
    if (p->on && p->pub[b])
        idle_append(p, b); /* kept for reuse until the pool needs it */
    else
        p->free_blocks[p->nfree++] = b;
}

int synor__llm_pool_unshare(synor_llm_ctx *c, int *slot)
{
    llm_pool *p = &c->pool;
    int b = *slot;
    if (!p->on || !p->pub[b])
        return 0;
    if (p->ref[b] == 1) { /* held by this sequence alone: it leaves the table */
        map_delete(p, b);
        return 0;
    }
    int nb = synor__llm_pool_take(c);
    if (nb < 0)
        return synor__error(SYNOR_ENOMEM, "synor_llm_seq_truncate: no KV block free to copy "
                                          "a shared block into");
    size_t el = (size_t)BLK * (size_t)c->kv_dim, bytes = el * c->kv_esize;
    for (int l = 0; l < c->m->cfg.n_layers; l++) {
        size_t from = ((size_t)l * c->layer_stride + (size_t)b * el) * c->kv_esize;
        size_t to = ((size_t)l * c->layer_stride + (size_t)nb * el) * c->kv_esize;
        memcpy((uint8_t *)c->kc + to, (uint8_t *)c->kc + from, bytes);
        memcpy((uint8_t *)c->vc + to, (uint8_t *)c->vc + from, bytes);
    }
    *slot = nb;
    synor__llm_pool_drop(c, b);
    return 0;
}

/* Blocks per unit of reuse: whole units of u blocks where F32 prompt rows
 * go to SGEMM in groups of gemm_block positions (batch.c; a model with F32
 * products on a kernel table that does that), so that a
 * reused run ends at a group's end and the rows computed after it take
 * the kernels they take in a prompt computed whole - the same bits. */
static int layers_f32(const synor_llm *md)
{
    for (int l = 0; l < md->cfg.n_layers; l++) {
        const llm_layer *L = &md->layers[l];
        const llm_mat *ms[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w1, &L->w2, &L->w3};
        for (int i = 0; i < 7; i++)
            if (ms[i]->type == SYNOR_TTYPE_F32)
                return 1;
    }
    return 0;
}

static size_t unit_blocks(const synor_llm_ctx *c)
{
    /* only F32 products take SGEMM; the layers' make the keys and values
     * (the classifier's rows are those of wanted logits: a request that
     * reuses computes its last prompt row alone, as a whole prompt does) */
    int f32 = layers_f32(c->m);
    size_t u = 1, m = f32 && c->k->gemm_block > 0 ? (size_t)c->k->gemm_block : 0;
    while (m && (u * BLK) % m)
        u++;
    return u;
}

/* Whether generated positions may be published too: a token's keys and
 * values are then the bits a prompt's row gets, because every layer's
 * products take the tiles (no F32 products, which a prompt sends to SGEMM
 * in blocks or, on the portable table, whole) on the CPU (a GPU's library
 * sums a batch in an order of its own). */
int synor__llm_pool_answers(const synor_llm_ctx *c)
{
    return c->pool.on && !layers_f32(c->m) && !c->gpu;
}

size_t synor__llm_pool_unit(const synor_llm_ctx *c)
{
    return c->pool.on ? unit_blocks(c) * BLK : 0;
}

int synor_llm_seq_reuse(synor_llm_ctx *c, unsigned seq, const int32_t *tokens, size_t n)
{
    if (!c || seq >= c->max_seqs || (!tokens && n))
        return synor__error(SYNOR_EINVAL, "synor_llm_seq_reuse: sequence %u out of range", seq);
    llm_seq *s = &c->seqs[seq];
    if (s->len)
        return synor__error(SYNOR_EINVAL,
                            "synor_llm_seq_reuse: sequence %u holds %d positions (reuse starts "
                            "an empty one)",
                            seq, s->len);
    llm_pool *p = &c->pool;
    if (!p->on || n < 2)
        return 0;
    size_t u = unit_blocks(c);
    size_t most = (n - 1) / BLK; /* the last token is always computed: its logits */
    if (most > (size_t)c->m->cfg.seq_len / BLK)
        most = (size_t)c->m->cfg.seq_len / BLK;
    most = most / u * u;
    uint64_t key = 0;
    int parent = -1;
    size_t k = 0;
    for (; k < most; k++) {
        key = chain_key(key, tokens + k * BLK);
        int b = map_find(p, key, parent, tokens + k * BLK);
        if (b < 0)
            break;
        if (p->ref[b]++ == 0)
            idle_remove(p, b);
        s->blocks[s->nblocks++] = b;
        parent = b;
    }
    for (; k % u; k--)
        synor__llm_pool_drop(c, s->blocks[--s->nblocks]);
    s->len = (int)(k * BLK);
    p->lookups++;
    p->reused += k;
    return s->len;
}

int synor_llm_seq_publish(synor_llm_ctx *c, unsigned seq, const int32_t *tokens, size_t n)
{
    if (!c || seq >= c->max_seqs || (!tokens && n))
        return synor__error(SYNOR_EINVAL, "synor_llm_seq_publish: sequence %u out of range",
                            seq);
    llm_pool *p = &c->pool;
    llm_seq *s = &c->seqs[seq];
    if (!p->on)
        return 0;
    if (n > (size_t)s->len)
        n = (size_t)s->len;
    uint64_t key = 0;
    int parent = -1;
    for (size_t k = 0; k < n / BLK; k++) {
        int b = s->blocks[k];
        if (p->pub[b]) { /* reused, or published before */
            key = p->key[b];
            parent = b;
            continue;
        }
        key = chain_key(key, tokens + k * BLK);
        int twin = map_find(p, key, parent, tokens + k * BLK);
        if (twin >= 0) { /* computed twice at once: the table keeps the first */
            parent = twin;
            continue;
        }
        p->key[b] = key;
        p->parent[b] = parent;
        memcpy(p->toks + (size_t)b * BLK, tokens + k * BLK, BLK * sizeof *tokens);
        map_insert(p, b);
        p->published++;
        parent = b;
    }
    return 0;
}

void synor_llm_prefix_stats_get(const synor_llm_ctx *c, synor_llm_prefix_stats *out)
{
    const llm_pool *p = &c->pool;
    memset(out, 0, sizeof *out);
    out->enabled = p->on;
    out->idle_blocks = p->nidle;
    out->lookups = p->lookups;
    out->reused_blocks = p->reused;
    out->published_blocks = p->published;
    out->evicted_blocks = p->evicted;
    out->cached_blocks = p->ncached;
}
