/* pack.c - Q8_0 and Q4_0 weights repacked for batches, and the portable
 * product on them (the reference the vectorized one is tested against).
 *
 * A batch's product on the file's layout makes a dot product per (weight
 * row, activation row, block): 32 multiply-adds in one instruction, then a
 * horizontal conversion and two float operations to scale the block - four
 * instructions of overhead per instruction of work, which leaves a batch of
 * 16 rows compute-bound far below what the integer units can do. Repacked,
 * 8 weight rows are interleaved 4 bytes at a time, so one vpdpbusd of a
 * block's 4 bytes of an activation row (broadcast) against 32 bytes of
 * weights sums 4 products into each of 8 lanes, one lane per weight row:
 * after 8 of them each lane holds its row's whole block, and one
 * conversion and one multiply-add scale the block for all 8 rows.
 *
 * A Q8_0 group of 8 rows is nb blocks of LLM_PACK_BLOCK_Q8 bytes:
 *   8 fp32: each row's block scale d;
 *   8 int32: -128 * (the sum of the row's 32 values), which takes back
 *            the + 128 the activations carry (qx[t].u: vpdpbusd multiplies
 *            unsigned by signed bytes, and q may be negative);
 *   8 chunks of 32 bytes, chunk k holding values 4k..4k+3 of rows 0..7
 *   (row j at bytes 4j..4j+3).
 * A Q4_0 group is as small as the file's rows (18 bytes a row and block):
 *   the scales: per block the 8 rows' fp16 d (16 bytes), nb of them,
 *   padded to a multiple of 64 bytes (synor__llm_pack_scales_q4);
 *   then nb blocks of LLM_PACK_BLOCK_Q4 bytes: 4 chunks of 32 bytes of
 *   the file's nibble bytes 4k..4k+3 of rows 0..7: the low nibbles are
 *   values 4k..4k+3, the high ones 16 + 4k.. (as unsigned q + 8, which
 *   vpdpbusd takes as its unsigned operand against the signed activations
 *   q as they are: no correction term; the product subtracts the
 *   activations' c8 for the + 8). Whole chunks never cross a cache line.
 * Rows past the last whole group stay on the file's layout.
 *
 * AVX2 has no vpdpbusd: its product (kern_p_avx2.c) makes the same lanes
 * with vpmaddubsw on the signed activations q (Q8_0 by the sign trick,
 * so the -128 * sum(w) above goes unread there).
 *
 * F32 weights (where the kernels have tile_f32p: the avx2 table) are
 * packed in groups of 4 rows: for each 8 columns, those 8 of row 0, of
 * row 1, 2 and 3 (the last 8 zero-padded), so that a group is one
 * sequential stream. A one-row step on the file's layout reads 4 rows
 * side by side, which the Zen 3 development VM's prefetchers follow less
 * well: packed, its one-row products stream 4-15% faster (and the same
 * tile gives the same bits: kern_f32_x86.c). The copy then stands in for
 * the file's pages of the rows it holds, which the process lets go of
 * (drop_f32_pages): the F32 bytes are held once. While a matrix is copied
 * both are held, so it is made only for F32 weights of at most a quarter
 * of the machine's memory. */
#include <unistd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "llm/llm_internal.h"
#include "synor/model.h"

static size_t group_bytes(const llm_mat *w)
{
    return synor__llm_pack_group_bytes(w->type == SYNOR_TTYPE_Q4_0, w->cols / SYNOR_QK);
}

int synor__llm_packable(const llm_mat *w)
{
    if (w->type == SYNOR_TTYPE_F32)
        return w->rows >= 4;
    return (w->type == SYNOR_TTYPE_Q8_0 || w->type == SYNOR_TTYPE_Q4_0) && w->rows >= 8 &&
           w->cols % SYNOR_QK == 0;
}

size_t synor__llm_pack_size(const llm_mat *w)
{
    if (!synor__llm_packable(w))
        return 0;
    if (w->type == SYNOR_TTYPE_F32)
        return (size_t)(w->rows / 4) * synor__llm_pack_group_f32(w->cols) * sizeof(float);
    return (size_t)(w->rows / 8) * group_bytes(w);
}

static void pack_f32(llm_mat *w, uint8_t *out)
{
    size_t gf = synor__llm_pack_group_f32(w->cols);
    float *o = (float *)(void *)out;
    for (int g = 0; g < w->rows / 4; g++)
        for (int c = 0; c < w->cols; c += 8)
            for (int j = 0; j < 4; j++) {
                const float *src =
                    (const float *)(const void *)(w->data + (size_t)(g * 4 + j) * w->row_bytes);
                float *dst = o + (size_t)g * gf + (size_t)c * 4 + (size_t)j * 8;
                int k = w->cols - c < 8 ? w->cols - c : 8;
                memcpy(dst, src + c, (size_t)k * sizeof(float));
                memset(dst + k, 0, (size_t)(8 - k) * sizeof(float));
            }
}

void synor__llm_unpack_f32(const llm_mat *w, const float *pk, int r0, int r1, float *out,
                           size_t ld)
{
    size_t gf = synor__llm_pack_group_f32(w->cols);
    int n = w->cols, tail = n % 8;
    for (int g = r0 / 4; g * 4 < r1; g++) {
        const float *src = pk + (size_t)g * gf;
        /* the group's rows in [r0, r1), read as the one stream it is */
        int j0 = g * 4 < r0 ? r0 - g * 4 : 0, j1 = g * 4 + 4 > r1 ? r1 - g * 4 : 4;
        float *dst = out + (size_t)(g * 4 + j0 - r0) * ld;
        int c = 0;
        for (; c + 8 <= n; c += 8, src += 32)
            for (int j = j0; j < j1; j++)
                memcpy(dst + (size_t)(j - j0) * ld + c, src + j * 8, 8 * sizeof(float));
        for (int j = j0; tail && j < j1; j++)
            memcpy(dst + (size_t)(j - j0) * ld + c, src + j * 8, (size_t)tail * sizeof(float));
    }
}

static float f16_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return synor_f16_to_f32(h);
}

void synor__llm_pack(llm_mat *w, uint8_t *out)
{
    if (w->type == SYNOR_TTYPE_F32) {
        pack_f32(w, out);
        __atomic_store_n(&w->pack, (const uint8_t *)out, __ATOMIC_RELEASE);
        return;
    }
    int q4 = w->type == SYNOR_TTYPE_Q4_0, nb = w->cols / SYNOR_QK;
    size_t in_block = q4 ? 18 : 34, gb = group_bytes(w);
    size_t sb = q4 ? synor__llm_pack_scales_q4(nb) : 0;
    for (int g = 0; g < w->rows / 8; g++) {
        uint8_t *o = out + (size_t)g * gb + sb;
        if (q4)
            memset(out + (size_t)g * gb, 0, sb); /* the padding too */
        for (int b = 0; b < nb; b++, o += q4 ? LLM_PACK_BLOCK_Q4 : LLM_PACK_BLOCK_Q8) {
            float d[8];
            int32_t corr[8];
            for (int j = 0; j < 8; j++) {
                const uint8_t *src =
                    w->data + (size_t)(g * 8 + j) * w->row_bytes + (size_t)b * in_block;
                d[j] = f16_at(src);
                int sum = 0;
                if (q4) {
                    memcpy(out + (size_t)g * gb + (size_t)b * 16 + 2 * j, src, 2);
                    for (int k = 0; k < 4; k++)
                        memcpy(o + k * 32 + j * 4, src + 2 + 4 * k, 4);
                } else {
                    for (int i = 0; i < SYNOR_QK; i++)
                        sum += (int8_t)src[2 + i];
                    for (int k = 0; k < 8; k++)
                        memcpy(o + 64 + k * 32 + j * 4, src + 2 + 4 * k, 4);
                }
                corr[j] = -128 * sum;
            }
            if (!q4) {
                memcpy(o, d, sizeof d);
                memcpy(o + 32, corr, sizeof corr);
            }
        }
    }
    /* published with release: a context may be running batches on the
     * model while another context's creation packs it (kern.c reads it
     * with acquire, and uses it only when the activations were prepared
     * for it) */
    __atomic_store_n(&w->pack, (const uint8_t *)out, __ATOMIC_RELEASE);
}

/* Value i (0..31) of row j of a packed block's values, as the product
 * reads it (Q8_0: q; Q4_0: q + 8). */
static int packed_value(const uint8_t *v, int q4, int j, int i)
{
    if (!q4)
        return (int8_t)v[(i / 4) * 32 + j * 4 + i % 4];
    int lo = i < 16, k = (i % 16) / 4;
    uint8_t byte = v[k * 32 + j * 4 + i % 4];
    return lo ? byte & 0x0F : byte >> 4;
}

void synor__llm_tile_p_ref(const uint8_t *pk, const llm_qrow *qx, int T, int nb, int q4, float *y,
                           size_t ldy, int acc)
{
    size_t sb = q4 ? synor__llm_pack_scales_q4(nb) : 0;
    for (int t = 0; t < T; t++)
        for (int j = 0; j < 8; j++) {
            float s = 0;
            for (int b = 0; b < nb; b++) {
                float d;
                int32_t sum = 0;
                const uint8_t *v;
                if (q4) {
                    d = f16_at(pk + (size_t)b * 16 + 2 * j);
                    v = pk + sb + (size_t)b * LLM_PACK_BLOCK_Q4;
                    for (int i = 0; i < SYNOR_QK; i++)
                        sum += qx[t].q[b * SYNOR_QK + i] * packed_value(v, 1, j, i);
                } else {
                    const uint8_t *blk = pk + (size_t)b * LLM_PACK_BLOCK_Q8;
                    memcpy(&d, blk + 4 * j, 4);
                    memcpy(&sum, blk + 32 + 4 * j, 4);
                    v = blk + 64;
                    for (int i = 0; i < SYNOR_QK; i++)
                        sum += (qx[t].q[b * SYNOR_QK + i] + 128) * packed_value(v, 0, j, i);
                }
                s += (float)sum * d * qx[t].d[b];
                if (q4)
                    s -= d * qx[t].c8[b];
            }
            float *o = y + (size_t)t * ldy + j;
            *o = acc ? *o + s : s;
        }
}

static llm_mat *mat_at(synor_llm *m, int i)
{
    if (i == 7 * m->cfg.n_layers)
        return &m->cls;
    llm_layer *L = &m->layers[i / 7];
    llm_mat *ls[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w1, &L->w2, &L->w3};
    return ls[i % 7];
}

/* Bytes of m's products of type ty, packed. */
static size_t packed_bytes_of(const synor_llm *m, int ty)
{
    size_t total = m->cls.type == ty ? synor__llm_pack_size(&m->cls) : 0;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const llm_layer *L = &m->layers[l];
        const llm_mat *ls[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w1, &L->w2, &L->w3};
        for (int i = 0; i < 7; i++)
            if (ls[i]->type == ty)
                total += synor__llm_pack_size(ls[i]);
    }
    return total;
}

/* Bytes of CPU 0's last-level cache as Linux's sysfs describes it (the
 * highest level of index0..index7), or 0 unknown. Not sysconf's
 * _SC_LEVEL3_CACHE_SIZE: glibc reads it from CPUID, which on the Zen 3 VM
 * says 256 MB where the guest's cache is 32 MB. */
static size_t last_level_cache(void)
{
    size_t best = 0;
    int level = 0;
    for (int i = 0; i < 8; i++) {
        char path[96], buf[32];
        int lv = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int ok = fscanf(f, "%d", &lv) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!ok || lv < level || !(f = fopen(path, "r")))
            continue;
        unsigned long v = 0;
        char unit = 0;
        if (fgets(buf, sizeof buf, f) && sscanf(buf, "%lu%c", &v, &unit) >= 1) {
            size_t b = (size_t)v * (unit == 'K' ? 1024u : unit == 'M' ? 1048576u : 1u);
            if (lv > level || b > best)
                best = b;
            level = lv;
        }
        fclose(f);
    }
    return best;
}

/* Whether one-row Q8_0 products take the packed weights: on the avx2
 * table (whose packed product uses the signed activations as they are)
 * when the model's packed Q8_0 weights fit in the last-level cache. The
 * packed layout is 1.18x the file's bytes and cheaper in instructions: on
 * the Zen 3 VM one-row decode of the 15M shape (17 MB, L3 32 MB) ran
 * 12-38% faster packed, of the 110M shape (117 MB) 7-16% slower
 * (docs/BENCHMARKS.md). */
static int q8_one_row(const synor_llm *m)
{
    const llm_kernels *k = synor__llm_kernels();
    if (m->no_pack || !k->tile_p || k->tiles_u)
        return 0;
    size_t q8 = packed_bytes_of(m, SYNOR_TTYPE_Q8_0), llc = last_level_cache();
    return q8 > 0 && llc > 0 && q8 <= llc;
}

/* Whether the F32 products are packed (where the kernels have tile_f32p):
 * only when the copy is at most a quarter of the machine's memory. */
static int packs_f32(const synor_llm *m)
{
    if (m->no_pack || !synor__llm_kernels()->tile_f32p)
        return 0;
    size_t total = packed_bytes_of(m, SYNOR_TTYPE_F32);
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return total > 0 && (pages <= 0 || psz <= 0 || total <= (size_t)pages * (size_t)psz / 4);
}

int synor__llm_model_packs_one_row(const synor_llm *m)
{
    return packed_bytes_of(m, SYNOR_TTYPE_Q4_0) > 0 || q8_one_row(m) || packs_f32(m);
}

/* What pack_model packs of w: its type's kernels, and for F32 the size. */
static int packs(const llm_mat *w, int f32)
{
    if (w->type == SYNOR_TTYPE_F32)
        return f32 && synor__llm_packable(w);
    return synor__llm_kernels()->tile_p && synor__llm_packable(w);
}

/* Packed F32 rows are read from the copy alone (kern.c: the tiles, and
 * SGEMM over slices unpacked from it; synor__llm_mat_row), so the process
 * lets go of the file's pages of them as each is packed: the model is not
 * held twice (110M F32: 440 MB). A classifier tied to the embedding gives
 * the embedding its copy too (its rows are read a token at a time through
 * synor__llm_mat_row); other rows the embedding shares stay. Best effort. */
static void drop_f32_pages(synor_llm *m, const llm_mat *w)
{
    if (w->type != SYNOR_TTYPE_F32)
        return;
    llm_mat *e = &m->embd;
    if (w == &m->cls && e->data == w->data && e->type == w->type && e->rows == w->rows &&
        e->cols == w->cols && e->row_bytes == w->row_bytes)
        __atomic_store_n(&e->pack, w->pack, __ATOMIC_RELEASE);
    const uint8_t *e0 = e->data, *e1 = e0 + (size_t)e->rows * e->row_bytes;
    size_t n = (size_t)(w->rows / 4 * 4) * w->row_bytes;
    if (e->pack == w->pack || w->data >= e1 || w->data + n <= e0)
        (void)synor__llm_drop_pages(m, w->data, n);
}

static pthread_mutex_t pack_mu = PTHREAD_MUTEX_INITIALIZER;

static void pack_model(synor_llm *m)
{
    if (m->packed || m->no_pack)
        return;
    int nm = 7 * m->cfg.n_layers + 1, f32 = packs_f32(m);
    size_t total = 0;
    for (int i = 0; i < nm; i++)
        if (packs(mat_at(m, i), f32))
            total += (synor__llm_pack_size(mat_at(m, i)) + 63) / 64 * 64;
    uint8_t *mem = total ? synor__malloc_aligned(total) : NULL;
    if (!mem) /* the file's layout still works: batches are slower */
        return;
    synor__huge_pages(mem, total); /* streamed every step */
    size_t off = 0;
    int one = q8_one_row(m);
    for (int i = 0; i < nm; i++) {
        llm_mat *w = mat_at(m, i);
        if (!packs(w, f32))
            continue;
        /* set before the pack pointer is published (release) */
        w->one_row = one && w->type == SYNOR_TTYPE_Q8_0;
        synor__llm_pack(w, mem + off);
        off += (synor__llm_pack_size(w) + 63) / 64 * 64;
        drop_f32_pages(m, w);
    }
    m->packed = mem;
    m->packed_bytes = total;
}

void synor__llm_pack_model(synor_llm *m)
{
    pthread_mutex_lock(&pack_mu);
    pack_model(m);
    pthread_mutex_unlock(&pack_mu);
}
