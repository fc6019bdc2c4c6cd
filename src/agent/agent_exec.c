/* agent_exec.c - what a task runs (docs/NETWORK.md, "Task kernels"), on
 * the runtime: sgemm and spotrf through its tiled BLAS, sum-f32 as one
 * runtime task per chunk with the partial sums added in chunk order (so
 * the answer does not depend on the worker count), llm-generate through the
 * LLM engine on the same runtime.
 *
 * Data on the wire is row-major little-endian; the runtime's BLAS is
 * column-major, so a row-major C = A B is computed as the column-major
 * C^T = B^T A^T without moving anything, and the Cholesky factor is
 * transposed on the way out. Hosts are assumed little-endian (x86, ARM). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "common/common.h"
#include "synor/llm.h"
#include "synor/runtime.h"

/* Tile size of the tiled BLAS calls. */
#define TILE 256
/* Largest matrix side accepted (the data are bounded by the coordinator's
 * blob limit anyway). */
#define MAX_DIM 65536

typedef struct model_slot {
    const char *name, *path;
    synor_llm *llm;
    synor_llm_ctx *ctx;
    char digest[65]; /* model_digest, "" until needed */
} model_slot;

struct synor__agent_exec {
    unsigned workers;
    int cuda; /* a CUDA GPU is among the devices registered */
    synor_runtime *rt; /* created and started at the first task */
    unsigned n_models;
    model_slot models[SYNOR_AGENT_MAX_MODELS];
};

/* The CUDA ordinal of a device detection named "local-cudaN", else -1. */
static int cuda_ordinal(const char *name)
{
    unsigned k;
    int n = 0;
    if (sscanf(name, "local-cuda%u%n", &k, &n) == 1 && (size_t)n == strlen(name) && k < 4096)
        return (int)k;
    return -1;
}

int synor__agent_exec_create(unsigned workers, const synor_agent_config *cfg,
                             synor__agent_exec **out)
{
    synor__agent_exec *x = synor__calloc(1, sizeof(*x));
    if (!x)
        return synor__error(SYNOR_ENOMEM, "agent: out of memory");
    x->workers = workers;
    x->cuda = 1; /* the runtime's default where no devices are named */
    if (cfg && cfg->n_devices) {
        x->cuda = 0;
        for (unsigned i = 0; i < cfg->n_devices; i++)
            x->cuda |= cuda_ordinal(cfg->devices[i].name) >= 0;
    }
    if (cfg) {
        x->n_models = cfg->n_models;
        for (unsigned i = 0; i < cfg->n_models; i++) {
            x->models[i].name = cfg->models[i].name;
            x->models[i].path = cfg->models[i].path;
        }
    }
    *out = x;
    return 0;
}

void synor__agent_exec_destroy(synor__agent_exec *x)
{
    if (!x)
        return;
    for (unsigned i = 0; i < x->n_models; i++) {
        synor_llm_ctx_destroy(x->models[i].ctx);
        synor_llm_destroy(x->models[i].llm);
    }
    synor_runtime_destroy(x->rt);
    synor__free(x);
}

static int runtime(synor__agent_exec *x)
{
    if (x->rt)
        return 0;
    synor_runtime_config rc;
    synor_runtime_config_init(&rc);
    rc.cpu_workers = x->workers;
    rc.pin_workers = 0; /* a contributed machine: leave the owner's cores alone */
    rc.opencl = SYNOR_OPENCL_OFF;
    /* The owner's GPUs only when registered (--devices all). */
    rc.cuda = x->cuda;
    int r = synor_runtime_create(&rc, &x->rt);
    if (r)
        return r;
    r = synor_runtime_start(x->rt);
    if (r) {
        synor_runtime_destroy(x->rt);
        x->rt = NULL;
    }
    return r;
}

/* The runtime device a task claimed for dev runs on (*idx), named in
 * where: a CUDA GPU registered as "local-cudaN" is the runtime's "cudaN";
 * any other device (the host CPU, or a GPU the runtime has not opened) is
 * the host, device 0. */
static int target(synor__agent_exec *x, const synor_agent_device *dev, unsigned *idx,
                  char *where, size_t wn)
{
    int r = runtime(x);
    if (r)
        return r;
    *idx = 0;
    snprintf(where, wn, "cpu");
    int k = dev ? cuda_ordinal(dev->name) : -1;
    if (k < 0)
        return 0;
    char want[32];
    snprintf(want, sizeof want, "cuda%d", k);
    for (unsigned i = 1; i < synor_runtime_device_count(x->rt); i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(x->rt, i, &di) == 0 && !strcmp(di.name, want) &&
            !di.stopped) {
            *idx = i;
            snprintf(where, wn, "%s", want);
            return 0;
        }
    }
    snprintf(where, wn, "cpu (no runtime device %s)", want);
    return 0;
}

/* params.key: an integer in [lo, hi], required. */
static int param_int(const synor__jdoc *d, const synor__jval *params, const char *kernel,
                     const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    char path[64];
    snprintf(path, sizeof path, "%s: params.%s", kernel, key);
    synor__jval *v = params ? synor__json_get(params, key) : NULL;
    if (!v)
        return synor__error(SYNOR_ESCHEMA, "%s: missing", path);
    return synor__json_int(d, v, path, lo, hi, out);
}

static int want_inputs(const char *kernel, size_t n, size_t want)
{
    if (n != want)
        return synor__error(SYNOR_ESCHEMA, "%s: %zu inputs given, %zu expected", kernel, n, want);
    return 0;
}

static int want_len(const char *kernel, size_t i, size_t len, size_t want, const char *what)
{
    if (len != want)
        return synor__error(SYNOR_ESCHEMA, "%s: input %zu (%s): %zu bytes, %zu expected", kernel,
                            i, what, len, want);
    return 0;
}

/* ---- checkpoints: a header, then the kernel's state ----
 * "SYCK", u32 version 1, kernel name (16 bytes, NUL padded), four u64
 * dimensions that must match the task's, u64 units done; little-endian. */
#define CK_HDR 64

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int ck_pack(synor__agent_ckpt *ck, const char *kernel, const uint64_t dim[4],
                   uint64_t done, const void *payload, size_t plen)
{
    unsigned char *o = synor__calloc(1, CK_HDR + plen);
    if (!o)
        return synor__error(SYNOR_ENOMEM, "%s: checkpoint: out of memory", kernel);
    memcpy(o, "SYCK", 4);
    o[4] = 1;
    snprintf((char *)o + 8, 16, "%s", kernel);
    for (int i = 0; i < 4; i++)
        put64(o + 24 + 8 * i, dim[i]);
    put64(o + 56, done);
    if (plen)
        memcpy(o + CK_HDR, payload, plen);
    ck->out = o;
    ck->out_len = CK_HDR + plen;
    return 0;
}

/* The units done by ck->in and its payload if it is a checkpoint of this
 * kernel with these dimensions and payload size (fixed bytes, and per_unit
 * bytes a unit done); 0 otherwise, saying why in ck->ignored. */
static uint64_t ck_parse(synor__agent_ckpt *ck, const char *kernel, const uint64_t dim[4],
                         uint64_t units, size_t per_unit, size_t fixed, const void **payload)
{
    const unsigned char *p = ck ? ck->in : NULL;
    if (!p)
        return 0;
    const char *why = NULL;
    char name[17] = "";
    if (ck->in_len >= CK_HDR)
        memcpy(name, p + 8, 16);
    if (ck->in_len < CK_HDR || memcmp(p, "SYCK", 4) || p[4] != 1)
        why = "not a checkpoint of this agent's format";
    else if (strcmp(name, kernel))
        why = "a checkpoint of another kernel";
    for (int i = 0; !why && i < 4; i++)
        if (get64(p + 24 + 8 * i) != dim[i])
            why = "a checkpoint of other dimensions";
    uint64_t done = why ? 0 : get64(p + 56);
    if (!why && (done > units || ck->in_len != CK_HDR + fixed + done * per_unit))
        why = "its size does not match its progress";
    if (why) {
        snprintf(ck->ignored, sizeof ck->ignored, "%s (%zu bytes)", why, ck->in_len);
        return 0;
    }
    *payload = p + CK_HDR;
    ck->resumed = (unsigned)done;
    return done;
}

static int ck_stop(synor__agent_ckpt *ck)
{
    return ck && ck->stop && ck->stop(ck->user);
}

/* Strips of C (TILE rows each) per block: whole strips, so the blocks'
 * tiles are the whole product's (the same bits, interrupted or not, and
 * whatever the block height); 8 blocks at most, and blocks wide enough to
 * keep the workers busy (2 tiles each), so a safe point costs little. */
static size_t sgemm_block_strips(const synor__agent_exec *x, size_t m, size_t n)
{
    size_t strips = (m + TILE - 1) / TILE, ctiles = (n + TILE - 1) / TILE;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t w = x->workers ? x->workers : (size_t)(cores > 0 ? cores : 1);
    size_t a = (strips + 7) / 8, b = (2 * w + ctiles - 1) / ctiles;
    return a > b ? a : b;
}

static int run_sgemm(synor__agent_exec *x, unsigned dev, const synor__jdoc *d,
                     const synor__jval *p, size_t ni, const void *const *in, const size_t *len,
                     void **out, size_t *out_len, synor__agent_ckpt *ck)
{
    int64_t m, n, k;
    int r;
    if ((r = param_int(d, p, "sgemm", "m", 1, MAX_DIM, &m)) ||
        (r = param_int(d, p, "sgemm", "n", 1, MAX_DIM, &n)) ||
        (r = param_int(d, p, "sgemm", "k", 1, MAX_DIM, &k)) || (r = want_inputs("sgemm", ni, 2)) ||
        (r = want_len("sgemm", 0, len[0], (size_t)(m * k) * 4, "A, m*k f32")) ||
        (r = want_len("sgemm", 1, len[1], (size_t)(k * n) * 4, "B, k*n f32")))
        return r;
    float *c = synor__calloc((size_t)(m * n), sizeof(float));
    if (!c)
        return synor__error(SYNOR_ENOMEM, "sgemm: out of memory (%lld x %lld)", (long long)m,
                            (long long)n);
    /* Column-major C^T (n x m) = B^T (n x k, ld n) A^T (k x m, ld k), by
     * blocks of whole strips of rows of C (columns of C^T); a checkpoint is
     * the finished strips' rows, which any block height resumes from. */
    size_t strips = ((size_t)m + TILE - 1) / TILE;
    size_t per = sgemm_block_strips(x, (size_t)m, (size_t)n);
    uint64_t dim[4] = {(uint64_t)m, (uint64_t)n, (uint64_t)k, TILE};
    const void *saved = NULL;
    /* a checkpoint is taken before the last strip only: whole strips */
    size_t s0 = (size_t)ck_parse(ck, "sgemm", dim, strips - 1, (size_t)TILE * (size_t)n * 4, 0,
                                 &saved);
    if (s0)
        memcpy(c, saved, ck->in_len - CK_HDR);
    if (ck)
        ck->total = (unsigned)strips;
    const float *A = in[0];
    for (size_t s = s0; s < strips; s += per) {
        size_t r0 = s * TILE, r1 = (s + per) * TILE < (size_t)m ? (s + per) * TILE : (size_t)m;
        if ((r = runtime(x)) ||
            (r = synor_tiled_sgemm_on(x->rt, dev, (size_t)n, r1 - r0, (size_t)k, 1.0f, in[1],
                                      (size_t)n, A + r0 * (size_t)k, (size_t)k, 0.0f,
                                      c + r0 * (size_t)n, (size_t)n, TILE))) {
            synor__free(c);
            return r;
        }
        size_t done = s + per < strips ? s + per : strips;
        if (ck)
            ck->done = (unsigned)done;
        if (done < strips && ck_stop(ck)) {
            r = ck_pack(ck, "sgemm", dim, done, c, r1 * (size_t)n * 4);
            synor__free(c);
            return r ? r : SYNOR__AGENT_STOPPED;
        }
    }
    *out = c;
    *out_len = (size_t)(m * n) * 4;
    return 0;
}

/* Panels of the Cholesky per safe point: 8 safe points at most. */
static size_t spotrf_block_panels(size_t panels) { return (panels + 7) / 8; }

static int run_spotrf(synor__agent_exec *x, unsigned dev, const synor__jdoc *d,
                      const synor__jval *p, size_t ni, const void *const *in, const size_t *len,
                      void **out, size_t *out_len, synor__agent_ckpt *ck)
{
    int64_t n;
    int r;
    if ((r = param_int(d, p, "spotrf", "n", 1, MAX_DIM, &n)) ||
        (r = want_inputs("spotrf", ni, 1)) ||
        (r = want_len("spotrf", 0, len[0], (size_t)(n * n) * 4, "A, n*n f32")))
        return r;
    size_t nn = (size_t)n;
    float *a = synor__malloc(nn * nn * 4), *l = synor__calloc(nn * nn, 4);
    if (!a || !l) {
        synor__free(a);
        synor__free(l);
        return synor__error(SYNOR_ENOMEM, "spotrf: out of memory (n %zu)", nn);
    }
    /* By panels (synor_tiled_spotrf_panels_on): a checkpoint is the
     * partially factored matrix after whole panels, which the remaining
     * panels finish with the same operations in the same order. */
    size_t panels = (nn + TILE - 1) / TILE, per = spotrf_block_panels(panels);
    uint64_t dim[4] = {(uint64_t)n, TILE, 0, 0};
    const void *saved = NULL;
    size_t k0 = (size_t)ck_parse(ck, "spotrf", dim, panels - 1, 0, nn * nn * 4, &saved);
    /* symmetric: row- and column-major agree */
    memcpy(a, k0 ? saved : in[0], nn * nn * 4);
    if (ck)
        ck->total = (unsigned)panels;
    for (size_t k = k0; k < panels; k += per) {
        size_t done = k + per < panels ? k + per : panels;
        if ((r = runtime(x)) ||
            (r = synor_tiled_spotrf_panels_on(x->rt, dev, nn, a, nn, TILE, k, done))) {
            synor__free(a);
            synor__free(l);
            return r;
        }
        if (ck)
            ck->done = (unsigned)done;
        if (done < panels && ck_stop(ck)) {
            r = ck_pack(ck, "spotrf", dim, done, a, nn * nn * 4);
            synor__free(a);
            synor__free(l);
            return r ? r : SYNOR__AGENT_STOPPED;
        }
    }
    for (size_t i = 0; i < nn; i++) /* row-major lower L: L(i,j) = a[i + j n] */
        for (size_t j = 0; j <= i; j++)
            l[i * nn + j] = a[i + j * nn];
    synor__free(a);
    *out = l;
    *out_len = nn * nn * 4;
    return 0;
}

static int sum_chunk(const synor_task_ctx *ctx)
{
    const float *v = ctx->buffers[0];
    size_t n = synor_handle_dim(ctx->data[0], 0);
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    *(double *)ctx->buffers[1] = s;
    return 0;
}

static const synor_kernel sum_kernel = {
    .name = "agent-sum-f32",
    .op = SYNOR_OP_SUM,
    .fn = {[SYNOR_KIND_CPU] = sum_chunk},
    .flags = SYNOR_KERNEL_FAILS_BEFORE_WRITING,
};

static int run_sum(synor__agent_exec *x, size_t ni, const void *const *in, const size_t *len,
                   void **out, size_t *out_len, synor__agent_ckpt *ck)
{
    int r;
    if ((r = want_inputs("sum-f32", ni, 1)))
        return r;
    if (len[0] % 4)
        return synor__error(SYNOR_ESCHEMA, "sum-f32: input 0: %zu bytes, not a whole number of "
                                           "f32 values",
                            len[0]);
    size_t n = len[0] / 4, chunk = (size_t)1 << 16;
    size_t nc = n ? (n + chunk - 1) / chunk : 0;
    double *part = synor__calloc(nc ? nc : 1, sizeof(double));
    synor_handle **h = synor__calloc(nc ? 2 * nc : 1, sizeof(*h));
    double *res = synor__malloc(sizeof(double));
    if (!part || !h || !res) {
        synor__free(part), synor__free(h), synor__free(res);
        return synor__error(SYNOR_ENOMEM, "sum-f32: out of memory");
    }
    /* Chunks run in groups (8 at most): a checkpoint is the running sum
     * after whole groups, which goes on adding in chunk order. */
    size_t gc = nc ? (nc + 7) / 8 : 1, ng = (nc + gc - 1) / gc;
    uint64_t dim[4] = {(uint64_t)n, (uint64_t)chunk, (uint64_t)gc, 0};
    const void *saved = NULL;
    size_t g0 = (size_t)ck_parse(ck, "sum-f32", dim, ng ? ng - 1 : 0, 0, sizeof(double), &saved);
    double s = 0;
    if (g0)
        memcpy(&s, saved, sizeof s);
    if (ck)
        ck->total = (unsigned)ng;
    r = nc ? runtime(x) : 0;
    float *base; /* only read: the handles are the tasks' R data */
    memcpy(&base, &in[0], sizeof base);
    for (size_t g = g0; !r && g < ng; g++) {
        size_t c0 = g * gc, c1 = c0 + gc < nc ? c0 + gc : nc, made = 0;
        for (size_t c = c0; !r && c < c1; c++) {
            size_t off = c * chunk, cnt = n - off < chunk ? n - off : chunk;
            synor_handle_desc dx = {.ptr = base + off, .dtype = SYNOR_DTYPE_FP32,
                                    .ndim = 1, .shape = {cnt}};
            synor_handle_desc dp = {.ptr = &part[c], .dtype = SYNOR_DTYPE_FP64, .ndim = 1,
                                    .shape = {1}};
            if ((r = synor_handle_register(x->rt, &dx, &h[2 * c])))
                break;
            made++;
            if ((r = synor_handle_register(x->rt, &dp, &h[2 * c + 1])))
                break;
            made++;
            synor_task_spec t = {.kernel = &sum_kernel, .priority = SYNOR_PRIORITY_NORMAL,
                                 .ndata = 2, .data = {h[2 * c], h[2 * c + 1]},
                                 .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_W}};
            r = synor_task_submit(x->rt, &t);
        }
        int rw = made ? synor_runtime_wait_all(x->rt) : 0;
        for (size_t i = 0; i < made; i++)
            synor_handle_unregister(h[2 * c0 + i]);
        if (!r)
            r = rw;
        for (size_t c = c0; !r && c < c1; c++)
            s += part[c];
        if (!r && ck)
            ck->done = (unsigned)(g + 1);
        if (!r && g + 1 < ng && ck_stop(ck)) {
            r = ck_pack(ck, "sum-f32", dim, g + 1, &s, sizeof s);
            if (!r)
                r = SYNOR__AGENT_STOPPED;
        }
    }
    synor__free(part);
    synor__free(h);
    if (r) {
        synor__free(res);
        return r;
    }
    memcpy(res, &s, sizeof s);
    *out = res;
    *out_len = sizeof(double);
    return 0;
}

/* A model's digest for llm-generate's checkpoints: SHA-256 (hex) of the
 * file's size and of 64 slices of 4 KiB spread evenly over it, first and
 * last included - cheap on a file of gigabytes, and another model (other
 * weights, another quantization) differs in nearly every slice. */
static int model_digest(model_slot *m)
{
    if (m->digest[0])
        return 0;
    enum { SLICES = 64, SLICE = 4096 };
    FILE *f = fopen(m->path, "rb");
    if (!f)
        return synor__error(SYNOR_EIO, "llm-generate: %s: cannot open", m->path);
    unsigned char *buf = synor__calloc(1, 8 + (size_t)SLICES * SLICE);
    long size = -1;
    if (buf && fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    size_t got = 8;
    for (int i = 0; buf && size >= 0 && i < SLICES; i++) {
        long off = size > SLICE ? (long)((double)(size - SLICE) * i / (SLICES - 1)) : 0;
        if (fseek(f, off, SEEK_SET) == 0)
            got += fread(buf + got, 1, SLICE, f);
    }
    fclose(f);
    if (!buf || size < 0) {
        synor__free(buf);
        return synor__error(buf ? SYNOR_EIO : SYNOR_ENOMEM, "llm-generate: %s: cannot read",
                            m->path);
    }
    put64(buf, (uint64_t)size);
    synor_netclient_sha256(buf, got, m->digest);
    synor__free(buf);
    return 0;
}

/* Generated tokens per llm-generate safe point: 8 safe points at most, and
 * segments of 4 tokens at least. Part of what the result is (the engine
 * rebuilds each segment's cache as one batch), so it depends on n alone. */
static int llm_segment(int64_t n)
{
    int64_t q = (n + 7) / 8;
    return q > 4 ? (int)q : 4;
}

typedef struct tokens {
    synor__buf b;
    size_t count, segment, n;
    synor__agent_ckpt *ck;
    int stopped;
} tokens;

static int on_token(int32_t tok, const char *text, size_t len, void *user)
{
    (void)text, (void)len;
    tokens *t = user;
    synor__buf_append(&t->b, (const char *)&tok, sizeof tok);
    if (t->b.failed)
        return 1;
    t->count++;
    if (t->ck)
        t->ck->done = (unsigned)t->count;
    /* a safe point: a segment's end, before the last token */
    if (t->count % t->segment == 0 && t->count < t->n && ck_stop(t->ck))
        t->stopped = 1;
    return t->stopped;
}

/* The llm-generate checkpoint in ck->in, if it is one of this task on this
 * model (dims: n, prompt tokens, segment, vocabulary; payload: the model
 * digest in hex, the sampler's state, the prompt's and the generated
 * tokens' ids, int32): the tokens done (their ids into *gen, the state
 * into *state); 0 otherwise, saying why in ck->ignored. */
static size_t llm_resume(synor__agent_ckpt *ck, const uint64_t dim[4], const model_slot *m,
                         const int32_t *prompt, size_t np, const synor_tokenizer *tok,
                         const unsigned char **gen, uint64_t *state)
{
    const void *saved = NULL;
    size_t done = (size_t)ck_parse(ck, "llm-generate", dim, dim[0] - 1, 4, 72 + 4 * np, &saved);
    if (!done)
        return 0;
    const unsigned char *p = saved;
    const char *why = NULL;
    if (done % dim[2])
        why = "not at a segment's end";
    else if (memcmp(p, m->digest, 64))
        why = "a checkpoint of another model";
    else if (memcmp(p + 72, prompt, 4 * np)) /* little-endian hosts (above) */
        why = "a checkpoint of another prompt";
    for (size_t i = 0; !why && i < done; i++) {
        int32_t v;
        memcpy(&v, p + 72 + 4 * (np + i), 4);
        if (v < 0 || (uint64_t)v >= dim[3] || v == synor_tokenizer_eos(tok) ||
            v == synor_tokenizer_bos(tok))
            why = "a token outside what generation makes";
    }
    if (why) {
        snprintf(ck->ignored, sizeof ck->ignored, "%s (%zu bytes)", why, ck->in_len);
        ck->resumed = 0;
        return 0;
    }
    *state = get64(p + 64);
    *gen = p + 72 + 4 * np;
    return done;
}

static int run_llm(synor__agent_exec *x, const synor__jdoc *d, const synor__jval *p, size_t ni,
                   void **out, size_t *out_len, synor__agent_ckpt *ck)
{
    int r;
    if ((r = want_inputs("llm-generate", ni, 0)))
        return r;
    synor__jval *mv = NULL, *pv = NULL, *tv = NULL;
    if (!p)
        return synor__error(SYNOR_ESCHEMA, "llm-generate: params: missing");
    if ((r = synor__json_member(d, p, "llm-generate: params", "model", SYNOR__J_STRING, 1, &mv)) ||
        (r = synor__json_member(d, p, "llm-generate: params", "prompt", SYNOR__J_STRING, 1, &pv)) ||
        (r = synor__json_member(d, p, "llm-generate: params", "temperature", SYNOR__J_NUMBER, 0,
                                &tv)))
        return r;
    int64_t n = 32, seed = 1;
    if (synor__json_get(p, "n") && (r = param_int(d, p, "llm-generate", "n", 1, 4096, &n)))
        return r;
    if (synor__json_get(p, "seed") &&
        (r = param_int(d, p, "llm-generate", "seed", 0, INT64_MAX, &seed)))
        return r;
    double temp = 1.0;
    if (tv && (r = synor__json_number(d, tv, "llm-generate: params.temperature", 0, 10, &temp)))
        return r;
    model_slot *m = NULL;
    for (unsigned i = 0; i < x->n_models; i++)
        if (!strcmp(x->models[i].name, mv->u.str.s))
            m = &x->models[i];
    if (!m)
        return synor__error(SYNOR_ENOENT, "llm-generate: params.model '%s': not a model this "
                                          "agent serves (--model NAME=PATH)",
                            mv->u.str.s);
    if ((r = runtime(x)))
        return r;
    if (!m->llm && (r = synor_llm_load(m->path, NULL, &m->llm)))
        return r;
    if (!m->ctx && (r = synor_llm_ctx_create(m->llm, x->rt, NULL, &m->ctx)))
        return r;
    if (ck && ck->in && (r = model_digest(m)))
        return r;
    const synor_tokenizer *tok = synor_llm_tokenizer(m->llm);
    const char *prompt = pv->u.str.s;
    long np = synor_tokenizer_encode(tok, prompt, strlen(prompt), 1, 0, NULL, 0);
    if (np < 0)
        return (int)np;
    int32_t *ids = synor__malloc(((size_t)np + (size_t)n) * sizeof *ids);
    if (!ids)
        return synor__error(SYNOR_ENOMEM, "llm-generate: out of memory");
    synor_tokenizer_encode(tok, prompt, strlen(prompt), 1, 0, ids, (size_t)np);
    int segment = llm_segment(n);
    uint64_t dim[4] = {(uint64_t)n, (uint64_t)np, (uint64_t)segment,
                       (uint64_t)synor_llm_hparams_get(m->llm)->vocab_size};
    synor_sampler s;
    synor_sampler_init(&s, (float)temp, 0, 1.0f, (uint64_t)seed);
    tokens t = {.segment = (size_t)segment, .n = (size_t)n, .ck = ck};
    synor__buf_init(&t.b);
    const unsigned char *gen = NULL;
    size_t done = llm_resume(ck, dim, m, ids, (size_t)np, tok, &gen, &s.state);
    if (done) {
        memcpy(ids + np, gen, 4 * done);
        synor__buf_append(&t.b, (const char *)gen, 4 * done);
        t.count = done;
    }
    if (ck)
        ck->total = (unsigned)n;
    r = synor_llm_generate_ids(m->ctx, ids, (size_t)np, done, (int)n, segment, &s, on_token, &t,
                               NULL);
    if (!r && t.b.failed)
        r = synor__error(SYNOR_ENOMEM, "llm-generate: out of memory");
    if (!r && t.stopped) {
        /* the checkpoint: digest, the sampler after the last token, ids */
        size_t len = 72 + 4 * ((size_t)np + t.count);
        unsigned char *pl = synor__malloc(len);
        if (!pl || (r = model_digest(m))) {
            synor__free(pl);
            synor__buf_free(&t.b);
            synor__free(ids);
            return r ? r : synor__error(SYNOR_ENOMEM, "llm-generate: out of memory");
        }
        memcpy(pl, m->digest, 64);
        put64(pl + 64, s.state);
        memcpy(pl + 72, ids, 4 * (size_t)np);
        memcpy(pl + 72 + 4 * (size_t)np, t.b.data, 4 * t.count);
        r = ck_pack(ck, "llm-generate", dim, t.count, pl, len);
        synor__free(pl);
        r = r ? r : SYNOR__AGENT_STOPPED;
    }
    synor__free(ids);
    if (r) {
        synor__buf_free(&t.b);
        return r;
    }
    *out_len = t.b.len;
    if (!t.b.len) {
        synor__buf_free(&t.b);
        *out = synor__malloc(1);
        return *out ? 0 : synor__error(SYNOR_ENOMEM, "llm-generate: out of memory");
    }
    *out = t.b.data; /* the bytes, as they are */
    return 0;
}

int synor__agent_exec_run(synor__agent_exec *x, const synor_agent_device *dev, const char *kernel,
                          const synor__jdoc *d, const synor__jval *params, size_t n_inputs,
                          const void *const *inputs, const size_t *len, void **out,
                          size_t *out_len, char *where, size_t where_n)
{
    return synor__agent_exec_run_ck(x, dev, kernel, d, params, n_inputs, inputs, len, out,
                                    out_len, where, where_n, NULL);
}

int synor__agent_exec_run_ck(synor__agent_exec *x, const synor_agent_device *dev,
                             const char *kernel, const synor__jdoc *d, const synor__jval *params,
                             size_t n_inputs, const void *const *inputs, const size_t *len,
                             void **out, size_t *out_len, char *where, size_t where_n,
                             synor__agent_ckpt *ck)
{
    int r;
    unsigned idx;
    if (where_n)
        where[0] = 0;
    if (params && params->type != SYNOR__J_OBJECT)
        return synor__error(SYNOR_ESCHEMA, "%s: params: expected an object", kernel);
    if (!strcmp(kernel, "sgemm") || !strcmp(kernel, "spotrf")) {
        char w[64];
        if ((r = target(x, dev, &idx, w, sizeof w)))
            return r;
        if (where_n)
            snprintf(where, where_n, "%s", w);
        return kernel[1] == 'g' ? run_sgemm(x, idx, d, params, n_inputs, inputs, len, out, out_len,
                                            ck)
                                : run_spotrf(x, idx, d, params, n_inputs, inputs, len, out,
                                             out_len, ck);
    }
    if (where_n)
        snprintf(where, where_n, "cpu");
    if (!strcmp(kernel, "sum-f32"))
        return run_sum(x, n_inputs, inputs, len, out, out_len, ck);
    if (!strcmp(kernel, "llm-generate"))
        return run_llm(x, d, params, n_inputs, out, out_len, ck);
    return synor__error(SYNOR_ENOTSUP, "kernel '%s': not one this agent runs (sgemm, spotrf, "
                                       "sum-f32, llm-generate)",
                        kernel);
}

void synor__agent_corrupt(const char *kernel, void *out, size_t len)
{
    unsigned char *p = out;
    if (!strcmp(kernel, "sum-f32")) {
        for (size_t i = 0; i + 8 <= len; i += 8) {
            double v;
            memcpy(&v, p + i, 8);
            v += 1.0;
            memcpy(p + i, &v, 8);
        }
    } else if (!strcmp(kernel, "llm-generate")) {
        for (size_t i = 0; i + 4 <= len; i += 4) {
            int32_t v;
            memcpy(&v, p + i, 4);
            v += 1;
            memcpy(p + i, &v, 4);
        }
    } else {
        for (size_t i = 0; i + 4 <= len; i += 4) {
            float v;
            memcpy(&v, p + i, 4);
            v = v * 1.5f + 1.0f;
            memcpy(p + i, &v, 4);
        }
    }
}

int synor_agent_execute(const char *kernel, const char *params_json, size_t n_inputs,
                        const void *const *inputs, const size_t *len, unsigned workers,
                        const synor_agent_config *models, void **out, size_t *out_len)
{
    if (!kernel || !out || !out_len || (n_inputs && (!inputs || !len)))
        return synor__error(SYNOR_EINVAL, "agent: execute: bad arguments");
    synor__jdoc *d = NULL;
    const char *pj = params_json ? params_json : "{}";
    int r = synor__json_parse(pj, strlen(pj), "params", &d);
    if (r)
        return r;
    synor__agent_exec *x = NULL;
    if (!(r = synor__agent_exec_create(workers, models, &x)))
        r = synor__agent_exec_run(x, NULL, kernel, d, synor__jdoc_root(d), n_inputs, inputs, len,
                                  out, out_len, NULL, 0);
    synor__agent_exec_destroy(x);
    synor__jdoc_free(d);
    return r;
}
