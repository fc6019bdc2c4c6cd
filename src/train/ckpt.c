/* ckpt.c - training checkpoints: one file holding the configuration, the
 * run's state, the parameters and AdamW's two moments, and a CRC-32C of
 * everything before it. Little-endian:
 *
 *   "SYNTRCK1"  u32 header bytes (H)  header (H bytes, fields below)
 *   f32 params[P]  f32 m[P]  f32 v[P]  u32 crc32c(all bytes before)
 *
 * A file is built whole in memory (the snapshot task of a run) and written
 * atomically (temporary file, fsync, rename, directory sync), so a crash
 * leaves the previous checkpoint or the new one; a torn or corrupted file
 * (a disk that lied, a copy cut short) fails its size or CRC check. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "train/train_internal.h"

#define MAGIC "SYNTRCK1"
#define HEADER_BYTES 128

typedef struct wbuf {
    unsigned char *p;
} wbuf;

static void w32(wbuf *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        *b->p++ = (unsigned char)(v >> (8 * i));
}
static void w64(wbuf *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        *b->p++ = (unsigned char)(v >> (8 * i));
}
static void wf(wbuf *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    w32(b, u);
}
static void wd(wbuf *b, double f)
{
    uint64_t u;
    memcpy(&u, &f, 8);
    w64(b, u);
}
static uint32_t r32(const unsigned char **p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)(*p)[i] << (8 * i);
    *p += 4;
    return v;
}
static uint64_t r64(const unsigned char **p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)(*p)[i] << (8 * i);
    *p += 8;
    return v;
}
static float rf(const unsigned char **p)
{
    uint32_t u = r32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double rd(const unsigned char **p)
{
    uint64_t u = r64(p);
    double f;
    memcpy(&f, &u, 8);
    return f;
}

size_t synor__train_ckpt_bytes(size_t P) { return 8 + 4 + HEADER_BYTES + 3 * P * 4 + 4; }

void synor__train_ckpt_build(unsigned char *buf, const synor_train_config *c,
                             const synor_train_state *st, const float *params, const float *m,
                             const float *v, size_t P)
{
    memcpy(buf, MAGIC, 8);
    wbuf b = {buf + 8};
    w32(&b, HEADER_BYTES);
    unsigned char *h = b.p;
    memset(h, 0, HEADER_BYTES);
    const int ints[] = {c->dim,        c->hidden_dim, c->n_layers, c->n_heads,
                        c->n_kv_heads, c->vocab_size, c->seq_len,  c->shared_classifier};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(ints); i++)
        w32(&b, (uint32_t)ints[i]);
    wf(&b, c->rope_theta);
    wf(&b, c->norm_eps);
    w64(&b, (uint64_t)st->step);
    w64(&b, st->seed);
    w32(&b, (uint32_t)st->batch);
    w32(&b, (uint32_t)st->replicas);
    w64(&b, st->tokens);
    wd(&b, st->elapsed_s);
    const synor_train_adamw *o = &st->opt;
    wf(&b, o->lr);
    wf(&b, o->min_lr);
    w32(&b, (uint32_t)o->warmup);
    w32(&b, (uint32_t)o->decay_steps);
    wf(&b, o->beta1);
    wf(&b, o->beta2);
    wf(&b, o->eps);
    wf(&b, o->weight_decay);
    wf(&b, o->grad_clip);
    w64(&b, (uint64_t)P);
    b.p = h + HEADER_BYTES;
    /* the arrays as the host holds them: little-endian x86 and ARM */
    memcpy(b.p, params, P * 4);
    memcpy(b.p + P * 4, m, P * 4);
    memcpy(b.p + 2 * P * 4, v, P * 4);
    b.p += 3 * P * 4;
    uint32_t crc = synor__crc32c(0, buf, (size_t)(b.p - buf));
    w32(&b, crc);
}

/* Verifies data[0..len) as a checkpoint file and reads its header; the
 * arrays start at *arrays. */
static int parse(const char *path, const unsigned char *data, size_t len, synor_train_config *c,
                 synor_train_state *st, size_t *P, const unsigned char **arrays)
{
    if (len < 12 + HEADER_BYTES + 4 || memcmp(data, MAGIC, 8) != 0)
        return synor__error(SYNOR_EPARSE,
                            "%s: not a training checkpoint (magic %s expected, "
                            "%zu bytes)",
                            path, MAGIC, len);
    const unsigned char *p = data + 8;
    uint32_t hb = r32(&p);
    if (hb != HEADER_BYTES)
        return synor__error(SYNOR_EPARSE, "%s: header of %u bytes (this version writes %d)", path,
                            hb, HEADER_BYTES);
    int *ints[] = {&c->dim,        &c->hidden_dim, &c->n_layers, &c->n_heads,
                   &c->n_kv_heads, &c->vocab_size, &c->seq_len,  &c->shared_classifier};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(ints); i++)
        *ints[i] = (int)r32(&p);
    c->rope_theta = rf(&p);
    c->norm_eps = rf(&p);
    st->step = (long)r64(&p);
    st->seed = r64(&p);
    st->batch = (int)r32(&p);
    st->replicas = (int)r32(&p);
    st->tokens = r64(&p);
    st->elapsed_s = rd(&p);
    synor_train_adamw *o = &st->opt;
    o->lr = rf(&p);
    o->min_lr = rf(&p);
    o->warmup = (int)r32(&p);
    o->decay_steps = (int)r32(&p);
    o->beta1 = rf(&p);
    o->beta2 = rf(&p);
    o->eps = rf(&p);
    o->weight_decay = rf(&p);
    o->grad_clip = rf(&p);
    uint64_t n = r64(&p);
    synor_train_config chk = *c;
    int e = synor_train_config_check(&chk);
    if (e)
        return synor__error(SYNOR_EPARSE, "%s: %s", path, synor_errmsg());
    if (n != synor_train_param_count(c))
        return synor__error(SYNOR_EPARSE, "%s: %llu parameters, the configuration has %zu", path,
                            (unsigned long long)n, synor_train_param_count(c));
    if (len != synor__train_ckpt_bytes((size_t)n))
        return synor__error(SYNOR_EPARSE,
                            "%s: %zu bytes, a checkpoint of %llu parameters has "
                            "%zu: torn or cut short",
                            path, len, (unsigned long long)n, synor__train_ckpt_bytes((size_t)n));
    const unsigned char *end = data + len - 4;
    uint32_t want = r32(&end);
    if (synor__crc32c(0, data, len - 4) != want)
        return synor__error(SYNOR_EPARSE, "%s: checksum mismatch: torn or corrupted", path);
    *P = (size_t)n;
    *arrays = data + 12 + HEADER_BYTES;
    return 0;
}

int synor_train_ckpt_peek(const char *path, synor_train_config *cfg, synor_train_state *st)
{
    char *data;
    size_t len, P;
    const unsigned char *arrays;
    int e = synor__read_file(path, &data, &len);
    if (e)
        return e;
    e = parse(path, (const unsigned char *)data, len, cfg, st, &P, &arrays);
    synor__free(data);
    return e;
}

int synor_trainer_load(synor_trainer *t, const char *path, synor_train_state *st)
{
    char *data;
    size_t len, P;
    const unsigned char *arrays;
    synor_train_config c;
    synor_train_state s;
    int e = synor__read_file(path, &data, &len);
    if (e)
        return e;
    e = parse(path, (const unsigned char *)data, len, &c, &s, &P, &arrays);
    if (!e) {
        const struct {
            const char *name;
            int a, b;
        } f[] = {{"dim", c.dim, t->cfg.dim},
                 {"hidden_dim", c.hidden_dim, t->cfg.hidden_dim},
                 {"n_layers", c.n_layers, t->cfg.n_layers},
                 {"n_heads", c.n_heads, t->cfg.n_heads},
                 {"n_kv_heads", c.n_kv_heads, t->cfg.n_kv_heads},
                 {"vocab_size", c.vocab_size, t->cfg.vocab_size},
                 {"seq_len", c.seq_len, t->cfg.seq_len},
                 {"shared_classifier", c.shared_classifier, t->cfg.shared_classifier}};
        for (size_t i = 0; i < SYNOR__ARRAY_LEN(f) && !e; i++)
            if (f[i].a != f[i].b)
                e = synor__error(SYNOR_EINVAL, "%s: %s is %d, the trainer's is %d", path, f[i].name,
                                 f[i].a, f[i].b);
        if (!e && (c.rope_theta != t->cfg.rope_theta || c.norm_eps != t->cfg.norm_eps))
            e = synor__error(SYNOR_EINVAL,
                             "%s: rope_theta %g / norm_eps %g differ from the "
                             "trainer's %g / %g",
                             path, (double)c.rope_theta, (double)c.norm_eps,
                             (double)t->cfg.rope_theta, (double)t->cfg.norm_eps);
    }
    if (!e) {
        synor_runtime_wait_all(t->rt);
        memcpy(t->params, arrays, P * 4);
        memcpy(t->m, arrays + P * 4, P * 4);
        memcpy(t->v, arrays + 2 * P * 4, P * 4);
        t->step = s.step;
        if (st)
            *st = s;
    }
    synor__free(data);
    return e;
}

int synor_trainer_save(synor_trainer *t, const synor_train_state *st, const char *path)
{
    synor_runtime_wait_all(t->rt);
    size_t P = t->lay.total, n = synor__train_ckpt_bytes(P);
    unsigned char *buf = synor__malloc(n);
    if (!buf)
        return synor__error(SYNOR_ENOMEM, "%s: cannot build a checkpoint of %zu bytes", path, n);
    synor__train_ckpt_build(buf, &t->cfg, st, t->params, t->m, t->v, P);
    int e = synor__write_file_atomic(path, (const char *)buf, n);
    synor__free(buf);
    return e;
}
