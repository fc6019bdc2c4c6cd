/* l2c.c - llama2.c checkpoints (karpathy/llama2.c): the legacy fp32 file
 * run.c reads (version 0) and export.py's versions 1 (fp32) and 2 (int8
 * groups with fp32 scales, runq.c's format), read in place from a mapping
 * and written from any source of fp32 weights.
 *
 * The versions store the same weights in different orders:
 *   0: 7-int header; embedding, then per weight all layers (rms_att, wq,
 *      wk, wv, wo, rms_ffn, w1, w2, w3), rms_final, two RoPE tables of
 *      seq_len * head_size / 2 floats (unused, skipped), then the
 *      classifier when it is not shared (vocab_size < 0 says so).
 *   1: 256-byte header; rms_att, rms_ffn, rms_final, embedding, wq ... w3,
 *      then the unshared classifier.
 *   2: 256-byte header; the norms in fp32 as version 1, then for the
 *      embedding, each layer's wq ... w3 and the unshared classifier: n
 *      int8 values, then n / group_size fp32 scales. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "synor/model.h"

#define L2C_MAGIC 0x616b3432u /* "ak42" */
#define L2C_HEADER 256
#define L2C_V0_HEADER 28
#define N_WEIGHTS 12
#define ROPE (-1) /* a layout entry: version 0's RoPE tables */

struct synor_l2c {
    char *path;
    synor__mapping map;
    synor_l2c_config cfg;
    uint64_t n[N_WEIGHTS];    /* elements of one instance (one layer's) */
    uint64_t off[N_WEIGHTS];  /* where layer 0's instance starts */
    uint64_t step[N_WEIGHTS]; /* bytes from one layer's instance to the next */
};

static const char *const weight_names[N_WEIGHTS] = {
    "token_embedding", "rms_att", "wq", "wk", "wv", "wo",
    "rms_ffn", "w1", "w2", "w3", "rms_final", "wcls"};

static const int order_v0[] = {SYNOR_L2C_TOKEN_EMBD, SYNOR_L2C_RMS_ATT, SYNOR_L2C_WQ,
                               SYNOR_L2C_WK, SYNOR_L2C_WV, SYNOR_L2C_WO, SYNOR_L2C_RMS_FFN,
                               SYNOR_L2C_W1, SYNOR_L2C_W2, SYNOR_L2C_W3, SYNOR_L2C_RMS_FINAL,
                               ROPE, SYNOR_L2C_WCLS};
static const int order_v12[] = {SYNOR_L2C_RMS_ATT, SYNOR_L2C_RMS_FFN, SYNOR_L2C_RMS_FINAL,
                                SYNOR_L2C_TOKEN_EMBD, SYNOR_L2C_WQ, SYNOR_L2C_WK, SYNOR_L2C_WV,
                                SYNOR_L2C_WO, SYNOR_L2C_W1, SYNOR_L2C_W2, SYNOR_L2C_W3,
                                SYNOR_L2C_WCLS};

static int per_layer(int w)
{
    return w != SYNOR_L2C_TOKEN_EMBD && w != SYNOR_L2C_RMS_FINAL && w != SYNOR_L2C_WCLS;
}

static int is_norm(int w)
{
    return w == SYNOR_L2C_RMS_ATT || w == SYNOR_L2C_RMS_FFN || w == SYNOR_L2C_RMS_FINAL;
}

/* Stored quantized: version 2's matrices. */
static int quantized(const synor_l2c_config *c, int w)
{
    return c->version == 2 && !is_norm(w);
}

/* Checks cfg (code for the failure: SYNOR_EPARSE reading, SYNOR_EINVAL
 * writing; `who` names the file) and computes the layout: n, off, step
 * and the total bytes. */
static int layout(const synor_l2c_config *c, int code, const char *who, uint64_t n[N_WEIGHTS],
                  uint64_t off[N_WEIGHTS], uint64_t step[N_WEIGHTS], uint64_t *rope_off,
                  uint64_t *total)
{
    const struct {
        const char *name;
        int v;
    } pos[] = {{"dim", c->dim},         {"hidden_dim", c->hidden_dim}, {"n_layers", c->n_layers},
               {"n_heads", c->n_heads}, {"n_kv_heads", c->n_kv_heads}, {"vocab_size", c->vocab_size},
               {"seq_len", c->seq_len}};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(pos); i++)
        if (pos[i].v <= 0)
            return synor__error(code, "%s: %s is %d (must be positive)", who, pos[i].name, pos[i].v);
    if (c->dim % c->n_heads != 0)
        return synor__error(code, "%s: n_heads %d does not divide dim %d", who, c->n_heads, c->dim);
    if (c->n_heads % c->n_kv_heads != 0)
        return synor__error(code, "%s: n_kv_heads %d does not divide n_heads %d", who,
                            c->n_kv_heads, c->n_heads);
    if (c->version < 0 || c->version > 2)
        return synor__error(code, "%s: version %d is not supported (0, 1 and 2 are)", who,
                            c->version);
    uint64_t head = (uint64_t)(c->dim / c->n_heads), dim = (uint64_t)c->dim;
    uint64_t kv_dim = head * (uint64_t)c->n_kv_heads, hid = (uint64_t)c->hidden_dim;
    uint64_t voc = (uint64_t)c->vocab_size, L = (uint64_t)c->n_layers;
    if (c->version == 0 && head % 2 != 0)
        return synor__error(code, "%s: head size %" PRIu64 " (dim / n_heads) is odd: version 0's "
                            "RoPE tables need pairs", who, head);
    /* products of two ints fit in 64 bits */
    n[SYNOR_L2C_TOKEN_EMBD] = n[SYNOR_L2C_WCLS] = voc * dim;
    n[SYNOR_L2C_RMS_ATT] = n[SYNOR_L2C_RMS_FFN] = n[SYNOR_L2C_RMS_FINAL] = dim;
    n[SYNOR_L2C_WQ] = n[SYNOR_L2C_WO] = dim * dim;
    n[SYNOR_L2C_WK] = n[SYNOR_L2C_WV] = kv_dim * dim;
    n[SYNOR_L2C_W1] = n[SYNOR_L2C_W2] = n[SYNOR_L2C_W3] = hid * dim;
    if (c->version == 2) {
        if (c->group_size <= 0)
            return synor__error(code, "%s: group_size is %d (must be positive)", who,
                                c->group_size);
        for (int w = 0; w < N_WEIGHTS; w++) {
            if (!quantized(c, w))
                continue;
            if (n[w] % (uint64_t)c->group_size != 0)
                return synor__error(code, "%s: group_size %d does not divide the %" PRIu64
                                    " elements of %s", who, c->group_size, n[w], weight_names[w]);
            /* the scales after the int8 values are read in place as floats */
            if (n[w] % 4 != 0)
                return synor__error(code, "%s: %s has %" PRIu64 " elements, not a multiple of 4: "
                                    "its scales would be unaligned (not supported)", who,
                                    weight_names[w], n[w]);
        }
    }
    const int *order = c->version == 0 ? order_v0 : order_v12;
    size_t norder = c->version == 0 ? SYNOR__ARRAY_LEN(order_v0) : SYNOR__ARRAY_LEN(order_v12);
    uint64_t at = c->version == 0 ? L2C_V0_HEADER : L2C_HEADER;
    for (size_t k = 0; k < norder; k++) {
        int w = order[k];
        uint64_t bytes, count = 1;
        if (w == ROPE) {
            /* two tables of seq_len * head_size / 2 floats */
            *rope_off = at;
            if (synor__mul_u64((uint64_t)c->seq_len, head * 4, &bytes) ||
                synor__add_u64(at, bytes, &at))
                goto too_large;
            continue;
        }
        if (w == SYNOR_L2C_WCLS && c->shared_classifier) {
            off[w] = off[SYNOR_L2C_TOKEN_EMBD];
            step[w] = 0;
            continue;
        }
        if (quantized(c, w))
            bytes = n[w] + n[w] / (uint64_t)c->group_size * 4;
        else if (synor__mul_u64(n[w], 4, &bytes))
            goto too_large;
        if (per_layer(w))
            count = L;
        off[w] = at;
        step[w] = per_layer(w) ? bytes : 0;
        if (synor__mul_u64(bytes, count, &bytes) || synor__add_u64(at, bytes, &at))
            goto too_large;
    }
    *total = at;
    return 0;
too_large:
    return synor__error(code, "%s: the weights of dim %d, hidden_dim %d, n_layers %d, vocab_size "
                        "%d exceed 2^64 bytes", who, c->dim, c->hidden_dim, c->n_layers,
                        c->vocab_size);
}

int synor_l2c_populate(const synor_l2c *m)
{
    if (!m)
        return synor__error(SYNOR_EINVAL, "synor_l2c_populate: no file");
    return synor__map_populate(&m->map, m->path);
}

int synor_l2c_drop_pages(const synor_l2c *m, const void *p, size_t n)
{
    if (!m)
        return synor__error(SYNOR_EINVAL, "synor_l2c_drop_pages: no file");
    return synor__map_drop(&m->map, m->path, p, n);
}

void synor_l2c_close(synor_l2c *m)
{
    if (!m)
        return;
    synor__unmap_file(&m->map);
    synor__free(m->path);
    synor__free(m);
}

/* Which weight holds byte `at` of the file, for a message about where a
 * short file ends. */
static void locate(const synor_l2c *m, uint64_t at, char *buf, size_t size)
{
    for (int w = 0; w < N_WEIGHTS; w++) {
        uint64_t count = per_layer(w) ? (uint64_t)m->cfg.n_layers : 1;
        uint64_t inst = per_layer(w) ? m->step[w] : 0, end;
        if (!per_layer(w)) {
            if (w == SYNOR_L2C_WCLS && m->cfg.shared_classifier)
                continue;
            inst = quantized(&m->cfg, w) ? m->n[w] + m->n[w] / (uint64_t)m->cfg.group_size * 4
                                         : m->n[w] * 4;
        }
        end = m->off[w] + inst * count;
        if (at >= m->off[w] && at < end) {
            if (per_layer(w))
                snprintf(buf, size, "%s of layer %" PRIu64, weight_names[w],
                         (at - m->off[w]) / inst);
            else
                snprintf(buf, size, "%s", weight_names[w]);
            return;
        }
    }
    snprintf(buf, size, "the RoPE tables");
}

static int parse(synor_l2c *m)
{
    const uint8_t *d = m->map.data;
    size_t size = m->map.size;
    synor_l2c_config *c = &m->cfg;
    if (size < 4 || synor__ld_u32(d) != L2C_MAGIC) {
        if (size < L2C_V0_HEADER)
            return synor__error(SYNOR_EPARSE,
                                "%s: truncated: a llama2.c checkpoint's header needs %d bytes, "
                                "the file has %zu",
                                m->path, L2C_V0_HEADER, size);
        c->version = 0;
    } else {
        if (size < L2C_HEADER)
            return synor__error(SYNOR_EPARSE,
                                "%s: truncated: the 'ak42' header needs %d bytes, the file has %zu",
                                m->path, L2C_HEADER, size);
        c->version = synor__ld_i32(d + 4);
        if (c->version != 1 && c->version != 2)
            return synor__error(SYNOR_EPARSE, "%s: version %d is not supported (1 and 2 are)",
                                m->path, c->version);
        d += 8;
    }
    int *fields[] = {&c->dim,        &c->hidden_dim, &c->n_layers, &c->n_heads,
                     &c->n_kv_heads, &c->vocab_size, &c->seq_len};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(fields); i++)
        *fields[i] = synor__ld_i32(d + 4 * i);
    if (c->version == 0) {
        /* a negative vocabulary size: the classifier follows the weights */
        c->shared_classifier = c->vocab_size > 0;
        if (c->vocab_size < 0) {
            if (c->vocab_size == INT32_MIN)
                return synor__error(SYNOR_EPARSE, "%s: vocab_size is %d", m->path, c->vocab_size);
            c->vocab_size = -c->vocab_size;
        }
    } else {
        uint8_t shared = d[28];
        if (shared > 1)
            return synor__error(SYNOR_EPARSE, "%s: shared_classifier is %u (0 or 1)", m->path,
                                shared);
        c->shared_classifier = shared;
        if (c->version == 2)
            c->group_size = synor__ld_i32(d + 29);
    }
    uint64_t total, rope = 0;
    int rc = layout(c, SYNOR_EPARSE, m->path, m->n, m->off, m->step, &rope, &total);
    if (rc)
        return rc;
    /* version 0 files from before the classifier could be unshared may end
     * without the (unused) RoPE tables */
    if (c->version == 0 && c->shared_classifier && size == rope)
        return 0;
    if (size < total) {
        char where[64];
        locate(m, size, where, sizeof where);
        return synor__error(SYNOR_EPARSE,
                            "%s: truncated: the header (dim %d, hidden_dim %d, n_layers %d, "
                            "vocab_size %d) needs %" PRIu64 " bytes, the file ends at %zu in %s",
                            m->path, c->dim, c->hidden_dim, c->n_layers, c->vocab_size, total,
                            size, where);
    }
    if (size > total)
        return synor__error(SYNOR_EPARSE,
                            "%s: %" PRIu64 " bytes after the weights the header describes "
                            "(dim %d, hidden_dim %d, n_layers %d, vocab_size %d: %" PRIu64
                            " bytes)",
                            m->path, (uint64_t)size - total, c->dim, c->hidden_dim, c->n_layers,
                            c->vocab_size, total);
    return 0;
}

int synor_l2c_open(const char *path, synor_l2c **out)
{
    if (!path || !out)
        return synor__error(SYNOR_EINVAL, "synor_l2c_open: no path or no result pointer");
    synor_l2c *m = synor__calloc(1, sizeof *m);
    if (!m || !(m->path = synor__strdup(path))) {
        synor__free(m);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    int rc = synor__map_file(path, &m->map);
    if (!rc)
        rc = parse(m);
    if (rc) {
        synor_l2c_close(m);
        return rc;
    }
    *out = m;
    return 0;
}

const synor_l2c_config *synor_l2c_config_get(const synor_l2c *m)
{
    return &m->cfg;
}

int synor_l2c_tensor_get(const synor_l2c *m, synor_l2c_weight w, int layer, synor_l2c_tensor *out)
{
    if (!m || !out || (int)w < 0 || (int)w >= N_WEIGHTS)
        return synor__error(SYNOR_EINVAL, "synor_l2c_tensor_get: no checkpoint or weight %d",
                            (int)w);
    if (per_layer((int)w) && (layer < 0 || layer >= m->cfg.n_layers))
        return synor__error(SYNOR_ERANGE, "%s: %s of layer %d: the model has %d layers", m->path,
                            weight_names[w], layer, m->cfg.n_layers);
    uint64_t at = m->off[w] + (per_layer((int)w) ? (uint64_t)layer * m->step[w] : 0);
    const uint8_t *p = m->map.data + at;
    memset(out, 0, sizeof *out);
    out->n = m->n[w];
    /* every float lies at a multiple of 4 (checked by layout) in a mapping
     * that starts on a page */
    if (quantized(&m->cfg, (int)w)) {
        out->q = (const int8_t *)p;
        out->s = (const float *)(const void *)(p + m->n[w]);
    } else {
        out->f32 = (const float *)(const void *)p;
    }
    return 0;
}

/* ------------------------------------------------------------- writing */

/* export.py's quantize_q80: per group scale = max|w| / 127 and q = w /
 * scale rounded half to even (torch.round); an all-zero group has scale 0
 * and q 0 (export.py would divide by zero). */
static void quantize_groups(const float *x, uint64_t n, int gs, int8_t *q, float *s)
{
    for (uint64_t g = 0; g < n / (uint64_t)gs; g++) {
        const float *xg = x + g * (uint64_t)gs;
        float wmax = 0.0f;
        for (int i = 0; i < gs; i++)
            wmax = fmaxf(wmax, fabsf(xg[i]));
        float scale = wmax / 127.0f;
        s[g] = scale;
        for (int i = 0; i < gs; i++) {
            /* |w / scale| <= 127 but for a subnormal scale, rounded */
            float v = scale != 0.0f ? nearbyintf(xg[i] / scale) : 0.0f;
            q[g * (uint64_t)gs + (uint64_t)i] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
        }
    }
}

static int write_weight(synor__afile *f, const synor_l2c_config *c, int w, int layer,
                        uint64_t n, synor_l2c_source get, void *ctx, const char *path)
{
    const float *x = get((synor_l2c_weight)w, layer, ctx);
    if (!x)
        return synor__error(SYNOR_EINVAL, "%s: the source gave no data for %s of layer %d", path,
                            weight_names[w], layer);
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return synor__error(SYNOR_EINVAL, "%s: %s of layer %d: element %" PRIu64 " is %g",
                                path, weight_names[w], layer, i, (double)x[i]);
    if (!quantized(c, w)) {
        synor__afile_write(f, x, (size_t)n * 4);
        return 0;
    }
    int8_t *q = synor__malloc((size_t)n);
    float *s = synor__malloc((size_t)(n / (uint64_t)c->group_size) * 4);
    if (!q || !s) {
        synor__free(q);
        synor__free(s);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    quantize_groups(x, n, c->group_size, q, s);
    synor__afile_write(f, q, (size_t)n);
    synor__afile_write(f, s, (size_t)(n / (uint64_t)c->group_size) * 4);
    synor__free(q);
    synor__free(s);
    return 0;
}

/* Version 0's RoPE tables as export.py writes them (model.py's
 * precompute_freqs_cis, theta 10000): cos, then sin, of pos * theta^(-2i /
 * head_size) for each position and pair. run.c skips them. */
static int write_rope(synor__afile *f, const synor_l2c_config *c)
{
    int head = c->dim / c->n_heads, half = head / 2;
    float *row = synor__malloc((size_t)half * 4);
    if (!row)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (int table = 0; table < 2; table++)
        for (int p = 0; p < c->seq_len; p++) {
            for (int i = 0; i < half; i++) {
                double freq = 1.0 / pow(10000.0, (double)(2 * i) / head), a = p * freq;
                row[i] = (float)(table == 0 ? cos(a) : sin(a));
            }
            synor__afile_write(f, row, (size_t)half * 4);
        }
    synor__free(row);
    return 0;
}

int synor_l2c_write(const char *path, const synor_l2c_config *cfg, synor_l2c_source get,
                    void *ctx)
{
    if (!path || !cfg || !get)
        return synor__error(SYNOR_EINVAL, "synor_l2c_write: no path, config or source");
    synor_l2c_config c = *cfg;
    c.shared_classifier = c.shared_classifier != 0;
    uint64_t n[N_WEIGHTS], off[N_WEIGHTS], step[N_WEIGHTS], rope = 0, total;
    int rc = layout(&c, SYNOR_EINVAL, path, n, off, step, &rope, &total);
    if (rc)
        return rc;
    if (total > SIZE_MAX)
        return synor__error(SYNOR_EINVAL, "%s: %" PRIu64 " bytes of weights", path, total);
    synor__afile f;
    if ((rc = synor__afile_open(&f, path)))
        return rc;
    int32_t hdr[7] = {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size,
                      c.seq_len};
    if (c.version == 0) {
        if (!c.shared_classifier)
            hdr[5] = -hdr[5];
        synor__afile_write(&f, hdr, sizeof hdr);
    } else {
        uint8_t h[L2C_HEADER] = {0};
        uint32_t magic = L2C_MAGIC;
        int32_t version = c.version;
        memcpy(h, &magic, 4);
        memcpy(h + 4, &version, 4);
        memcpy(h + 8, hdr, sizeof hdr);
        h[36] = (uint8_t)c.shared_classifier;
        if (c.version == 2)
            memcpy(h + 37, &c.group_size, 4);
        synor__afile_write(&f, h, sizeof h);
    }
    const int *order = c.version == 0 ? order_v0 : order_v12;
    size_t norder = c.version == 0 ? SYNOR__ARRAY_LEN(order_v0) : SYNOR__ARRAY_LEN(order_v12);
    for (size_t k = 0; k < norder && !rc; k++) {
        int w = order[k];
        if (w == ROPE) {
            rc = write_rope(&f, &c);
            continue;
        }
        if (w == SYNOR_L2C_WCLS && c.shared_classifier)
            continue;
        int layers = per_layer(w) ? c.n_layers : 1;
        for (int l = 0; l < layers && !rc; l++)
            rc = write_weight(&f, &c, w, per_layer(w) ? l : 0, n[w], get, ctx, path);
    }
    if (!rc && f.written != total && !f.failed)
        rc = synor__error(SYNOR_EIO, "%s: wrote %" PRIu64 " bytes, the layout has %" PRIu64,
                          path, f.written, total);
    if (rc) {
        synor__afile_abort(&f);
        return rc;
    }
    return synor__afile_commit(&f);
}
