/* split.c - where a context's layers run, per phase, and how that is
 * decided: the prefill / decode split (synor_llm_ctx_set_split), the
 * engine's trace of its tasks (synor_llm_ctx_trace), and the split planner
 * (synor_llm_plan_split), which calibrates on the real devices and picks,
 * for batches of many rows and of one, how many of the uploaded layers
 * the GPU runs.
 *
 * The cost model is per layer and measured: with activations resident in
 * host memory (gpu.c copies them up and down at every product), a layer on
 * the GPU costs its own measured time whatever its neighbours run on, so a
 * split of the last k layers costs the CPU's times of the first L - k
 * layers plus the GPU's of the last k, plus the classifier on its device
 * and what lies outside the layers (the batch's setup, waits). */
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "llm/llm_ctx.h"

uint64_t synor__llm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------- split */

static int check_count(const synor_llm_ctx *c, const char *field, int k)
{
    if (k < 0 || k > c->gpu_up)
        return synor__error(SYNOR_EINVAL,
                            "synor_llm_ctx_set_split: %s %d: the context has %d layer%s on a GPU",
                            field, k, c->gpu_up, c->gpu_up == 1 ? "" : "s");
    return 0;
}

int synor_llm_ctx_set_split(synor_llm_ctx *c, const synor_llm_split *s)
{
    if (!c || !s)
        return synor__error(SYNOR_EINVAL, "synor_llm_ctx_set_split: NULL argument");
    int e = check_count(c, "prefill", s->prefill);
    if (!e)
        e = check_count(c, "decode", s->decode);
    if (!e)
        c->split = *s;
    return e;
}

void synor_llm_ctx_get_split(const synor_llm_ctx *c, synor_llm_split *out)
{
    *out = c ? c->split : (synor_llm_split){0, 0};
}

void synor__llm_apply_split(synor_llm_ctx *c)
{
    int L = c->m->cfg.n_layers;
    if (!c->gpu) {
        c->gpu_first = L;
        c->gpu_cls = 0;
        return;
    }
    int k = c->n > 1 ? c->split.prefill : c->split.decode;
    c->gpu_first = L - k;
    c->gpu_cls = c->gpu_cls_up && k >= L;
}

/* ------------------------------------------------------------- trace */

int synor_llm_ctx_trace(synor_llm_ctx *c, int on)
{
    if (!c)
        return synor__error(SYNOR_EINVAL, "synor_llm_ctx_trace: NULL context");
    atomic_store(&c->nev, 0);
    c->trace_t0 = synor__llm_now_ns();
    c->tracing = c->trace_gpu = on != 0;
    if (c->gpu)
        synor__llm_gpu_trace(c->gpu, c->tracing);
    return 0;
}

const synor_llm_event *synor_llm_ctx_events(const synor_llm_ctx *c, size_t *n)
{
    *n = c ? atomic_load(&c->nev) : 0;
    return c ? c->ev : NULL;
}

int synor__llm_trace_reserve(synor_llm_ctx *c, size_t n)
{
    size_t have = atomic_load(&c->nev);
    if (have + n <= c->ev_cap)
        return 0;
    size_t cap = c->ev_cap ? c->ev_cap : 1024;
    while (cap < have + n)
        cap *= 2;
    synor_llm_event *ev = synor__realloc(c->ev, cap * sizeof *ev);
    if (!ev)
        return synor__error(SYNOR_ENOMEM, "synor_llm_ctx_trace: out of memory for %zu events",
                            cap);
    c->ev = ev;
    c->ev_cap = cap;
    return 0;
}

void synor__llm_trace_add(synor_llm_ctx *c, const char *op, int layer, int worker, int gpu,
                          uint64_t t0, uint64_t t1, uint64_t bytes)
{
    size_t i = atomic_fetch_add(&c->nev, 1);
    if (i >= c->ev_cap) { /* cannot happen: run_graph reserved room */
        atomic_fetch_sub(&c->nev, 1);
        return;
    }
    c->ev[i] = (synor_llm_event){.start = (double)(t0 - c->trace_t0) * 1e-9,
                                 .end = (double)(t1 - c->trace_t0) * 1e-9,
                                 .op = op,
                                 .layer = layer,
                                 .worker = worker,
                                 .gpu = gpu,
                                 .prefill = c->n > 1,
                                 .rows = (unsigned)c->n,
                                 .bytes = bytes};
}

/* ------------------------------------------------------------- planner */

/* One calibration batch of `rows` rows of sequence 0 from position 0 under
 * GPU layers k for its phase; its wall time, and per layer (and the
 * classifier) the span of its tasks. */
static int calib_run(synor_llm_ctx *c, int rows, int k, const int32_t *tok, const unsigned *seqs,
                     double *wall, double *layer_s, double *cls_s)
{
    int L = c->m->cfg.n_layers;
    synor_llm_split sp = rows > 1 ? (synor_llm_split){k, c->split.decode}
                                  : (synor_llm_split){c->split.prefill, k};
    c->split = sp;
    synor_llm_seq_reset(c, 0);
    atomic_store(&c->nev, 0);
    c->trace_t0 = synor__llm_now_ns();
    c->tracing = 1; /* the tasks only: the GPU's copies are not waited for apart */
    c->trace_gpu = 0;
    synor__llm_gpu_trace(c->gpu, 0);
    uint64_t t0 = synor__llm_now_ns();
    int e = synor_llm_batch(c, (size_t)rows, tok, seqs, NULL);
    uint64_t t1 = synor__llm_now_ns();
    c->tracing = 0;
    synor_llm_seq_reset(c, 0);
    if (e)
        return e;
    *wall = (double)(t1 - t0) * 1e-9;
    size_t n = atomic_load(&c->nev);
    for (int l = -1; l < L; l++) {
        double lo = 1e300, hi = -1e300;
        for (size_t i = 0; i < n; i++)
            if (c->ev[i].layer == l && !c->ev[i].gpu) {
                lo = c->ev[i].start < lo ? c->ev[i].start : lo;
                hi = c->ev[i].end > hi ? c->ev[i].end : hi;
            }
        double s = hi > lo ? hi - lo : 0;
        if (l < 0)
            *cls_s = s;
        else
            layer_s[l] = s;
    }
    return 0;
}

int synor_llm_plan_split(synor_llm_ctx *c, int prompt_rows, int reps, synor_llm_split_plan *out)
{
    if (!c || !out)
        return synor__error(SYNOR_EINVAL, "synor_llm_plan_split: NULL argument");
    if (!c->gpu || c->gpu_up == 0)
        return synor__error(SYNOR_EINVAL,
                            "synor_llm_plan_split: no layer of the context is on a GPU (create "
                            "it with gpu_layers)");
    if (prompt_rows < 1 || (unsigned)prompt_rows > c->max_batch)
        return synor__error(SYNOR_EINVAL, "synor_llm_plan_split: prompt_rows %d is outside 1..%u",
                            prompt_rows, c->max_batch);
    int L = c->m->cfg.n_layers;
    if (L > SYNOR_LLM_PLAN_MAX_LAYERS)
        return synor__error(SYNOR_ENOTSUP, "synor_llm_plan_split: %d layers (at most %d)", L,
                            SYNOR_LLM_PLAN_MAX_LAYERS);
    if (reps < 1)
        reps = 1;
    memset(out, 0, sizeof *out);
    out->layers = L;
    out->uploaded = c->gpu_up;
    out->prompt_rows = prompt_rows;
    int32_t *tok = synor__malloc((size_t)prompt_rows * sizeof *tok);
    unsigned *seqs = synor__calloc((size_t)prompt_rows, sizeof *seqs);
    double *lay = synor__malloc((size_t)L * sizeof *lay);
    if (!tok || !seqs || !lay) {
        synor__free(tok);
        synor__free(seqs);
        synor__free(lay);
        return SYNOR_ENOMEM;
    }
    for (int i = 0; i < prompt_rows; i++) /* any tokens: only the time counts */
        tok[i] = (int32_t)(1 + i % (c->m->cfg.vocab_size - 1));
    synor_llm_split keep = c->split;
    uint64_t c0 = synor__llm_now_ns();
    int e = 0;
    for (int ph = 0; ph < 2 && !e; ph++) {
        int rows = ph == 0 ? prompt_rows : 1;
        if (ph == 0 && rows == 1) /* a one-token prompt is a decode batch */
            continue;
        for (int dev = 0; dev < 2 && !e; dev++) {
            int k = dev ? c->gpu_up : 0;
            double best = 1e300, w = 0, cl = 0;
            for (int r = 0; r <= reps && !e; r++) { /* r 0: the warm-up */
                e = calib_run(c, rows, k, tok, seqs, &w, lay, &cl);
                if (!e && r > 0 && w < best) {
                    best = w;
                    out->measured_s[ph][dev] = w;
                    out->cls_s[ph][dev] = cl;
                    double sum = cl;
                    for (int l = 0; l < L; l++) {
                        out->layer_s[ph][dev][l] = lay[l];
                        sum += lay[l];
                    }
                    out->rest_s[ph][dev] = w > sum ? w - sum : 0;
                }
            }
        }
        if (e)
            break;
        /* GPU classifier only with every layer (and when it is there) */
        double rest = 0.5 * (out->rest_s[ph][0] + out->rest_s[ph][1]);
        int bestk = 0;
        for (int k = 0; k <= c->gpu_up; k++) {
            double t = rest;
            for (int l = 0; l < L; l++)
                t += out->layer_s[ph][l >= L - k][l];
            t += out->cls_s[ph][k >= L && c->gpu_cls_up];
            out->estimate_s[ph][k] = t;
            if (t < out->estimate_s[ph][bestk])
                bestk = k;
        }
        if (ph == 0)
            out->split.prefill = bestk;
        else
            out->split.decode = bestk;
    }
    if (!e && prompt_rows == 1) { /* no prefill batch: as decode */
        out->split.prefill = out->split.decode;
        memcpy(out->estimate_s[0], out->estimate_s[1], sizeof out->estimate_s[0]);
    }
    out->calibration_s = (double)(synor__llm_now_ns() - c0) * 1e-9;
    synor__free(tok);
    synor__free(seqs);
    synor__free(lay);
    c->split = e ? keep : out->split;
    synor_llm_ctx_trace(c, 0);
    return e;
}
