/* train_sim.c - `synor train --report --simulate`: the run's training
 * iteration simulated on this machine's calibrated fabric beside the real
 * run (issue 13, item 4).
 *
 * A prediction, not a replay. Each kind of trainer task gets a rate per
 * unit of its work - the replicas' forward/backward pass per GFLOP (the
 * products and attention of the model's shape, rows per replica), the
 * all-reduce per MB of gradients it reads and writes, AdamW per million
 * parameters, batch loading per million tokens - and two constants are
 * measured: the runtime's dispatch per task (from when a task could start
 * to its start) and the step barrier (the trainer waits for every task of
 * a step, then submits the next); so is the spread of the replicas'
 * passes (a step waits for the slowest: the simulated passes take the
 * expected order statistics of a normal of that spread). The rates live in
 * the calibration cache, the performance model file that real runs record
 * into (synor perfmodel lists them: "train_fwdbwd per GFLOP", ...), keyed
 * by the model's shape, so a run of another batch or replica count is
 * predicted from the rates an earlier run measured. What the simulation of
 * a run uses is read BEFORE the run; only when the cache has nothing for
 * the shape are the run's own measurements used (said so: a fit, not a
 * prediction). After the run its tasks' rates are recorded and the cache
 * saved.
 *
 * The simulated workload is the trainer's own graph (synor/train.h), step
 * after step: load(s+1) beside the R passes of step s, the 4 all-reduce
 * chunks after every pass, the 4 AdamW chunks after every chunk, then the
 * barrier; every task can run on any CPU worker (one fabric device per
 * worker, synor_whatif_fabric_workers). Evaluations and checkpoints are
 * left out: the figure compared is the period of a training iteration,
 * the mean over the real run's consecutive steps with neither between
 * them. */
#include <math.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "synor/detect.h"
#include "synor/perfmodel.h"
#include "synor/report.h"
#include "synor/sim.h"
#include "synor/whatif.h"

/* The trainer's all-reduce and AdamW chunks (TRAIN_CHUNKS, src/train). */
#define CHUNKS 4
/* Steps simulated at most (the periods are all alike after the first). */
#define SIM_STEPS_MAX 100

enum { K_PASS, K_REDUCE, K_ADAMW, K_LOAD, K_BARRIER, K_DISPATCH, K_SPREAD, K_CPUS, NK };

static const char *const k_op[NK] = {"train_fwdbwd per GFLOP",    "train_allreduce per MB",
                                     "train_adamw per Mparam",    "train_load_batch per Mtoken",
                                     "train (step barrier)",      "train (dispatch)",
                                     "train_fwdbwd spread per GFLOP",
                                     "train (CPUs obtained)"};
static const char *const k_task[NK] = {"train_fwdbwd",     "train_allreduce",    "train_adamw",
                                       "train_load_batch", "train_step_barrier", "", "", ""};
static const char *const k_unit[NK] = {"s/GFLOP", "s/MB", "s/Mparam", "s/Mtoken",
                                       "s",       "s",    "s/GFLOP",  "CPUs"};

/* The expected order statistics of R draws of a standard normal (R = 1..6,
 * the trainer's replicas at most): the replicas' passes of a step take
 * mean + spread x these, so the step waits for the slowest as a real one
 * does (its mean excess over the mean pass is spread x z[R][R-1]). */
static const double z_order[7][6] = {
    {0},
    {0},
    {-0.5642, 0.5642},
    {-0.8463, 0, 0.8463},
    {-1.0294, -0.2970, 0.2970, 1.0294},
    {-1.1630, -0.4950, 0, 0.4950, 1.1630},
    {-1.2672, -0.6418, -0.2015, 0.2015, 0.6418, 1.2672}};

typedef struct rate {
    double prior;    /* from the cache before the run; NAN: none */
    uint64_t prior_n;
    int prior_other; /* 1: another model shape's entry */
    double fit;      /* this run's own measurements (mean); NAN: none */
    size_t fit_n;
    double used;
} rate;

struct cli_train_sim {
    char path[4096]; /* the cache; "" = in memory only */
    synor_perfmodel *pm;
    synor_train_config cfg;
    uint64_t fp;
    rate r[NK];
    double cpu[2]; /* the process's CPU seconds when the run started, ended */
    int marked;    /* bit 0: started, bit 1: ended */
};

static double cpu_seconds(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u))
        return NAN;
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec * 1e-6;
}

void cli_train_sim_mark(cli_train_sim *s, int end)
{
    if (!s)
        return;
    s->cpu[end ? 1 : 0] = cpu_seconds();
    s->marked |= end ? 2 : 1;
}

static uint64_t shape_fp(const synor_train_config *c)
{
    size_t v[8] = {(size_t)c->dim,        (size_t)c->hidden_dim, (size_t)c->n_layers,
                   (size_t)c->n_heads,    (size_t)c->n_kv_heads, (size_t)c->vocab_size,
                   (size_t)c->seq_len,    (size_t)c->shared_classifier};
    return synor_perfmodel_footprint(v, 8);
}

/* The work of one task (the unit its rate is per). */
static double pass_gflop(const synor_train_config *c, double rows)
{
    double D = c->dim, H = c->hidden_dim, L = c->n_layers, T = c->seq_len, V = c->vocab_size;
    double kvd = D / c->n_heads * c->n_kv_heads;
    double per_tok = L * (2 * D * D + 2 * D * kvd + 3 * D * H) + D * V; /* weights used */
    double fwd = 2 * rows * T * per_tok + L * rows * 2 * 2 * T * T * D; /* + attention */
    return 3 * fwd * 1e-9; /* forward, and a backward of twice its products */
}
static double chunk_params(const synor_train_config *c)
{
    return (double)synor_train_param_count(c) / CHUNKS;
}
static double reduce_mb(const synor_train_config *c, int replicas)
{
    return (replicas + 1) * chunk_params(c) * 4 * 1e-6; /* read R, write 1 */
}

typedef struct find_ctx {
    const char *op;
    uint64_t fp;
    double exact, other;
    uint64_t exact_n, other_n;
} find_ctx;

static int find_cb(const synor_perfmodel_entry *e, void *ctx)
{
    find_ctx *f = ctx;
    if (strcmp(e->op, f->op) || strcmp(e->device, "cpu") || !e->window)
        return 0;
    if (e->footprint == f->fp) {
        f->exact = e->window_mean;
        f->exact_n = e->count;
    } else if (e->count > f->other_n) {
        f->other = e->window_mean;
        f->other_n = e->count;
    }
    return 0;
}

static void lookup(const synor_perfmodel *pm, int k, uint64_t fp, rate *r)
{
    find_ctx f = {.op = k_op[k], .fp = fp, .exact = NAN, .other = NAN};
    synor_perfmodel_foreach(pm, find_cb, &f);
    r->prior_other = 0;
    if (f.exact_n) {
        r->prior = f.exact;
        r->prior_n = f.exact_n;
    } else if (f.other_n) {
        r->prior = f.other;
        r->prior_n = f.other_n;
        r->prior_other = 1;
    } else {
        r->prior = NAN;
        r->prior_n = 0;
    }
}

int cli_train_sim_begin(const char *path, const synor_train_config *cfg, cli_train_sim **out)
{
    cli_train_sim *s = calloc(1, sizeof *s);
    if (!s) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    if (path)
        snprintf(s->path, sizeof s->path, "%s", path);
    else if (synor_perfmodel_default_path(s->path, sizeof s->path))
        s->path[0] = 0;
    if (synor_perfmodel_create(&s->pm) || (s->path[0] && synor_perfmodel_load(s->pm, s->path))) {
        cli_error("--simulate: %s", synor_errmsg());
        cli_train_sim_destroy(s);
        return CLI_FAIL;
    }
    s->cfg = *cfg;
    s->fp = shape_fp(cfg);
    for (int k = 0; k < NK; k++)
        lookup(s->pm, k, s->fp, &s->r[k]);
    *out = s;
    return CLI_OK;
}

void cli_train_sim_destroy(cli_train_sim *s)
{
    if (!s)
        return;
    synor_perfmodel_destroy(s->pm);
    free(s);
}

/* ------------------------------------------------ the steps of a trace */

static int kind_of(const synor_trace_task *t)
{
    const char *id = t->id ? t->id : "";
    for (int k = 0; k < K_BARRIER; k++)
        if (!strncmp(id, k_task[k], strlen(k_task[k])))
            return k;
    if (!strncmp(id, "train_snapshot", 14) || !strncmp(id, "train_write_checkpoint", 22))
        return NK; /* a checkpoint */
    return -1;
}

/* What a trace says of its training steps. */
typedef struct steps {
    double *start, *end; /* per training step: first pass start, last AdamW end */
    int *clean;          /* nothing (evaluation, checkpoint) since the step before */
    size_t n;
    double sum[NK];      /* task seconds of the clean steps, per kind */
    size_t cnt[NK];
    double *ph[3];       /* per step: passes (first start to last end), then the
                            all-reduce, then AdamW (each to its last end) */
    double phase[3];     /* their means over the steps period() counts */
} steps;

static void steps_free(steps *st)
{
    free(st->start);
    free(st->end);
    free(st->clean);
    for (int i = 0; i < 3; i++)
        free(st->ph[i]);
}

/* Where scan records each training task's time per unit of work (pm NULL:
 * nowhere). */
typedef struct recorder {
    synor_perfmodel *pm;
    uint64_t fp;
    const double *units;
    double share; /* the CPU a busy task got: rates are recorded per CPU second */
} recorder;

/* Rates of work are per CPU second (x the share the run's tasks got), so
 * a run on a loaded machine records what a CPU of its own would take. */
static int per_cpu(int k)
{
    return k < K_BARRIER || k == K_SPREAD;
}

static void rec(const recorder *r, int k, double secs)
{
    if (r && r->pm)
        synor_perfmodel_record(r->pm, k_op[k], r->fp, "cpu",
                               secs / r->units[k] * (per_cpu(k) ? r->share : 1));
}

/* A task's dispatch: from when it could start (its inputs ready at `ready`,
 * its worker free) to its start. */
static void dispatch(steps *st, const recorder *re, const synor_trace_task *x, double ready,
                     const double *last_end, int clean)
{
    double could = last_end[x->device] > ready ? last_end[x->device] : ready;
    if (!clean || x->start < could)
        return;
    st->sum[K_DISPATCH] += x->start - could;
    st->cnt[K_DISPATCH]++;
    rec(re, K_DISPATCH, x->start - could);
}

/* Walks the tasks in start order: a step is the last R passes before an
 * all-reduce, up to its 4th AdamW; passes beyond R (evaluations) or a
 * checkpoint since the step before make it not clean. The clean steps'
 * tasks, their dispatch (the all-reduce's and AdamW's, whose inputs are
 * known to be ready when the phase before ended) and the batch loads go to
 * re and the sums. */
static int scan(const synor_trace *t, int replicas, const recorder *re, steps *st)
{
    memset(st, 0, sizeof *st);
    size_t cap = t->n_tasks / CHUNKS + 2;
    st->start = calloc(cap, sizeof *st->start);
    st->end = calloc(cap, sizeof *st->end);
    st->clean = calloc(cap, sizeof *st->clean);
    for (int i = 0; i < 3; i++)
        st->ph[i] = calloc(cap, sizeof *st->ph[i]);
    size_t *pend = calloc(t->n_tasks + 1, sizeof *pend);
    double *last_end = calloc(t->n_devices + 1, sizeof *last_end);
    if (!st->start || !st->end || !st->clean || !pend || !last_end || !st->ph[0] || !st->ph[1] ||
        !st->ph[2]) {
        free(pend);
        free(last_end);
        steps_free(st);
        cli_error("out of memory");
        return CLI_FAIL;
    }
    size_t np = 0;
    int open = 0, nadamw = 0, dirty = 1, cur_clean = 0; /* the first step is not clean */
    double loads = 0, pass_end = 0, red_end = 0;
    size_t nloads = 0;
    for (size_t i = 0; i < t->n_tasks; i++) {
        const synor_trace_task *x = &t->tasks[i];
        double d = x->end - x->start;
        int k = kind_of(x);
        if (x->device >= t->n_devices)
            continue;
        if (k == K_PASS) {
            pend[np++] = i;
        } else if (k == NK) {
            dirty = 1;
        } else if (k == K_LOAD) {
            loads += d;
            nloads++;
            rec(re, K_LOAD, d);
        } else if (k == K_REDUCE) {
            if (!open) {
                if (np < (size_t)replicas) {
                    np = 0;
                    continue; /* not a step this scan understands */
                }
                open = 1;
                nadamw = 0;
                cur_clean = !dirty && np == (size_t)replicas;
                double s0 = INFINITY, psum = 0;
                pass_end = red_end = 0;
                for (size_t j = np - (size_t)replicas; j < np; j++) {
                    const synor_trace_task *p = &t->tasks[pend[j]];
                    s0 = p->start < s0 ? p->start : s0;
                    pass_end = p->end > pass_end ? p->end : pass_end;
                    psum += p->end - p->start;
                    if (cur_clean) {
                        rec(re, K_PASS, p->end - p->start);
                        st->sum[K_PASS] += p->end - p->start;
                        st->cnt[K_PASS]++;
                    }
                }
                if (cur_clean && replicas > 1 && replicas <= 6) {
                    /* the pass phase's excess over the step's mean pass (the slowest
                     * pass, and the later start of some), as a spread */
                    double sp = (pass_end - s0 - psum / replicas) / z_order[replicas][replicas - 1];
                    st->sum[K_SPREAD] += sp;
                    st->cnt[K_SPREAD]++;
                    rec(re, K_SPREAD, sp);
                }
                st->start[st->n] = s0;
                st->end[st->n] = s0;
                st->clean[st->n] = cur_clean;
                np = 0;
                dirty = 0;
            }
            dispatch(st, re, x, pass_end, last_end, cur_clean);
            red_end = x->end > red_end ? x->end : red_end;
            if (cur_clean) {
                rec(re, K_REDUCE, d);
                st->sum[K_REDUCE] += d;
                st->cnt[K_REDUCE]++;
            }
        } else if (k == K_ADAMW && open) {
            dispatch(st, re, x, red_end, last_end, cur_clean);
            if (cur_clean) {
                rec(re, K_ADAMW, d);
                st->sum[K_ADAMW] += d;
                st->cnt[K_ADAMW]++;
            }
            st->end[st->n] = x->end > st->end[st->n] ? x->end : st->end[st->n];
            if (++nadamw == CHUNKS) {
                open = 0;
                st->ph[0][st->n] = pass_end - st->start[st->n];
                st->ph[1][st->n] = red_end - pass_end;
                st->ph[2][st->n] = st->end[st->n] - red_end;
                if (st->n + 1 < cap)
                    st->n++;
            }
        }
        if (x->end > last_end[x->device])
            last_end[x->device] = x->end;
    }
    free(last_end);
    st->sum[K_LOAD] = loads;
    st->cnt[K_LOAD] = nloads;
    free(pend);
    return CLI_OK;
}

/* The mean period (start to start), gap (end to next start) and phases
 * of the steps that follow a step and come before one with nothing between
 * (no evaluation, no checkpoint; not the first step: the caches are cold);
 * NAN when none. Means, as the rates are: the expected iteration. The
 * phases and the gap add up to the period. */
static double period(steps *st, double *gap, size_t *n)
{
    double p = 0, g = 0, ph[3] = {0};
    size_t m = 0;
    for (size_t i = 1; i < st->n; i++)
        if (st->clean[i] && st->clean[i - 1]) {
            p += st->start[i] - st->start[i - 1];
            g += st->start[i] - st->end[i - 1];
            for (int k = 0; k < 3; k++)
                ph[k] += st->ph[k][i - 1];
            m++;
        }
    *n = m;
    *gap = m ? g / (double)m : NAN;
    for (int k = 0; k < 3; k++)
        st->phase[k] = m ? ph[k] / (double)m : NAN;
    return m ? p / (double)m : NAN;
}

/* ------------------------------------------------ the simulated workload */

typedef struct simw {
    synor_workload *w;
    const char **dev; /* the CPU worker devices */
    double *secs;
    size_t ndev;
    int rc;
} simw;

static size_t add(simw *b, int k, long s, int i, double secs, const size_t *deps, size_t nd)
{
    if (b->rc)
        return 0;
    char id[96];
    snprintf(id, sizeof id, "%s.s%ld.%d", k_task[k], s, i);
    static const synor_op_type ops[] = {SYNOR_OP_TRANSFORMER_LAYER, SYNOR_OP_ALL_REDUCE,
                                        SYNOR_OP_OPTIMIZER_STEP, SYNOR_OP_DATA_LOAD,
                                        SYNOR_OP_CUSTOM};
    synor_op op = {.type = ops[k], .dtype = SYNOR_DTYPE_FP32};
    op.work.type = op.type;
    op.work.dtype = op.dtype;
    for (size_t d = 0; d < b->ndev; d++)
        b->secs[d] = secs > 0 ? secs : 0;
    synor_task_desc d = {.id = id,
                         .op = op,
                         .priority = k == K_PASS ? SYNOR_PRIORITY_NORMAL : SYNOR_PRIORITY_HIGH,
                         .deps = deps,
                         .n_deps = nd,
                         .exec_s = b->secs,
                         .exec_dev = b->dev,
                         .n_exec = b->ndev};
    size_t idx = 0;
    b->rc = synor_workload_add_task(b->w, &d, &idx);
    return idx;
}

/* nsteps iterations of the trainer's graph with task times t[kind], and
 * pt[r] for replica r's pass. */
static int build(simw *b, long nsteps, int replicas, const double *t, const double *pt)
{
    size_t prev[CHUNKS + 1], npr = 0, cur[CHUNKS], red[CHUNKS], barrier = 0, load_next = 0;
    size_t load = add(b, K_LOAD, 0, 0, t[K_LOAD], NULL, 0);
    size_t *pass = calloc((size_t)replicas, sizeof *pass);
    if (!pass)
        return b->rc = SYNOR_ENOMEM;
    for (long s = 0; s < nsteps && !b->rc; s++) {
        size_t after[1] = {barrier};
        if (s + 1 < nsteps) /* submitted before the step's passes */
            load_next = add(b, K_LOAD, s + 1, 0, t[K_LOAD], after, s > 0);
        for (int r = 0; r < replicas; r++) {
            size_t deps[2] = {load, barrier};
            pass[r] = add(b, K_PASS, s, r, pt[r], deps, s > 0 ? 2 : 1);
        }
        for (int c = 0; c < CHUNKS; c++)
            red[c] = add(b, K_REDUCE, s, c, t[K_REDUCE], pass, (size_t)replicas);
        for (int c = 0; c < CHUNKS; c++)
            cur[c] = add(b, K_ADAMW, s, c, t[K_ADAMW], red, CHUNKS);
        memcpy(prev, cur, sizeof cur);
        npr = CHUNKS;
        if (s + 1 < nsteps) {
            prev[npr++] = load_next;
            barrier = add(b, K_BARRIER, s, 0, t[K_BARRIER], prev, npr);
            load = load_next;
        }
    }
    free(pass);
    if (!b->rc)
        b->rc = synor_workload_finish(b->w);
    return b->rc;
}

/* ------------------------------------------------------------ the report */

static void fmt_rate(char *buf, size_t n, int k, const rate *r, const char *path, int unused)
{
    const char *src;
    char tmp[4300];
    if (r->prior == r->prior && r->used == r->prior) {
        snprintf(tmp, sizeof tmp,
                 "the calibration cache %s, recorded before this run (%llu samples%s)",
                 path[0] ? path : "(in memory)", (unsigned long long)r->prior_n,
                 r->prior_other ? "; another model shape: none for this one yet" : "");
        src = tmp;
    } else if (r->fit == r->fit && k == K_SPREAD) {
        snprintf(tmp, sizeof tmp,
                 "this run's %zu steps (the pass phase's mean excess over its step's mean "
                 "pass - the slowest pass, and the later start of some - over the expected "
                 "maximum of that many normal draws; the cache had none for this shape: a fit, "
                 "not a prediction)",
                 r->fit_n);
        src = tmp;
    } else if (r->fit == r->fit && k == K_CPUS) {
        snprintf(tmp, sizeof tmp,
                 "this run: the process's CPU time (getrusage) over its tasks' time, x its "
                 "busy workers (the cache had none for this shape: a fit, not a prediction)");
        src = tmp;
    } else if (r->fit == r->fit && k == K_DISPATCH) {
        snprintf(tmp, sizeof tmp,
                 "this run's %zu all-reduce and AdamW tasks (the mean from when each could "
                 "start, its inputs ready and its worker free, to its start; the cache had none "
                 "for this shape: a fit, not a prediction)",
                 r->fit_n);
        src = tmp;
    } else if (r->fit == r->fit && k == K_BARRIER) {
        snprintf(tmp, sizeof tmp,
                 "this run's %zu gaps between steps (mean, less the dispatch; the cache had "
                 "none for this shape: a fit, not a prediction)",
                 r->fit_n);
        src = tmp;
    } else if (r->fit == r->fit) {
        snprintf(tmp, sizeof tmp,
                 "this run's own %zu tasks (the cache had none for this shape: a fit, not a "
                 "prediction)",
                 r->fit_n);
        src = tmp;
    } else {
        src = "not measured (0)";
    }
    snprintf(buf, n, "%s: %.4g %s, from %s.%s", k_op[k], r->used, k_unit[k], src,
             unused ? " Not used: one replica." : "");
}

static double or_else(double x, double y)
{
    return x == x ? x : y;
}

int cli_train_sim_finish(cli_train_sim *s, const cli_globals *g, const synor_trace *real,
                         int batch, int replicas, unsigned workers)
{
    const synor_train_config *c = &s->cfg;
    double rows = (double)batch / replicas, gf = pass_gflop(c, rows);
    double units[NK] = {gf,
                        reduce_mb(c, replicas),
                        chunk_params(c) * 1e-6,
                        (double)batch * (c->seq_len + 1) * 1e-6,
                        1,
                        1,
                        gf};
    /* the CPU the run's tasks got: the process's CPU time over the tasks'
     * (wall) time, at most 1; the process's CPUs' worth = that x its busy
     * workers */
    double busy = 0;
    for (size_t i = 0; i < real->n_tasks; i++)
        busy += real->tasks[i].end - real->tasks[i].start;
    double share = 1;
    if (s->marked == 3 && busy > 0 && s->cpu[1] - s->cpu[0] > 0)
        share = (s->cpu[1] - s->cpu[0]) / busy;
    share = share > 1 ? 1 : share < 0.01 ? 0.01 : share;
    int k_run = replicas < (int)workers ? replicas : (int)workers;
    steps rs;
    recorder re = {s->pm, s->fp, units, share};
    if (scan(real, replicas, &re, &rs))
        return CLI_FAIL;
    double real_gap;
    size_t real_n;
    double real_period = period(&rs, &real_gap, &real_n);
    if (!(real_period == real_period)) {
        steps_free(&rs);
        cli_error("--simulate: the run has no two consecutive training steps without an "
                  "evaluation or a checkpoint between them (more --steps, or a larger "
                  "--eval-every and --ckpt-every)");
        return CLI_FAIL;
    }
    /* this run's rates (scan recorded them into the cache per task): means */
    for (int k = 0; k < NK; k++) {
        s->r[k].fit =
            rs.cnt[k] ? rs.sum[k] / (double)rs.cnt[k] / units[k] * (per_cpu(k) ? share : 1) : NAN;
        s->r[k].fit_n = rs.cnt[k];
    }
    s->r[K_CPUS].fit = share * k_run;
    s->r[K_CPUS].fit_n = 1;
    synor_perfmodel_record(s->pm, k_op[K_CPUS], s->fp, "cpu", share * k_run);
    /* the barrier: the gap between steps less the next pass's dispatch */
    double run_dsp = or_else(s->r[K_DISPATCH].fit, 0);
    for (size_t i = 1; i < rs.n; i++)
        if (rs.clean[i] && rs.clean[i - 1]) {
            double gp = rs.start[i] - rs.end[i - 1] - run_dsp;
            synor_perfmodel_record(s->pm, k_op[K_BARRIER], s->fp, "cpu", gp > 0 ? gp : 0);
        }
    s->r[K_BARRIER].fit = real_gap - run_dsp > 0 ? real_gap - run_dsp : 0;
    s->r[K_BARRIER].fit_n = real_n;
    double tk[NK];
    for (int k = 0; k < NK; k++)
        s->r[k].used = or_else(s->r[k].prior, or_else(s->r[k].fit, 0));
    /* the CPU a task of this configuration gets: the CPUs' worth shared by
     * the workers busy at once (the passes: the replicas; the chunks: 4) */
    double cpus = s->r[K_CPUS].used > 0 ? s->r[K_CPUS].used : 1;
    int w = (int)workers, kc = CHUNKS < w ? CHUNKS : w;
    double sh_pass = cpus / k_run > 1 ? 1 : cpus / k_run, sh_chunk = cpus / kc > 1 ? 1 : cpus / kc;
    double sh[NK] = {sh_pass, sh_chunk, sh_chunk, sh_pass, 1, 1, sh_pass, 1};
    double dsp = s->r[K_DISPATCH].used;
    for (int k = 0; k < NK; k++)
        tk[k] = s->r[k].used * units[k] / sh[k] + (k < K_BARRIER ? dsp : 0);
    tk[K_SPREAD] = replicas > 1 && replicas <= 6 ? s->r[K_SPREAD].used * units[K_SPREAD] / sh_pass
                                                 : 0;
    /* replica r: its rows (the trainer's split), and its place among the step's passes */
    double pt[6] = {0};
    for (int r = 0; r < replicas && r < 6; r++) {
        int rows_r = (int)((long)batch * (r + 1) / replicas) - (int)((long)batch * r / replicas);
        double z = replicas > 1 ? z_order[replicas][r] : 0;
        pt[r] = s->r[K_PASS].used * pass_gflop(c, rows_r) / sh_pass + dsp + tk[K_SPREAD] * z;
        pt[r] = pt[r] > dsp ? pt[r] : dsp;
    }
    if (s->path[0] && synor_perfmodel_save(s->pm, s->path))
        fprintf(stderr, "synor train: warning: the calibration cache: %s\n", synor_errmsg());

    /* the simulation */
    long nsteps = (long)rs.n < SIM_STEPS_MAX ? (long)rs.n : SIM_STEPS_MAX;
    nsteps = nsteps < 3 ? 3 : nsteps;
    synor_catalog *cat = cli_load_catalog(g);
    synor_detection *det = NULL;
    synor_fabric *f = NULL;
    synor_cost *cost = NULL;
    synor_trace *t = NULL;
    simw b = {0};
    cli_local lo = {0};
    int rc = CLI_FAIL;
    steps ss = {0};
    if (!cat || cli_local_detect(cat, &lo, &det))
        goto out;
    if (synor_whatif_fabric_workers(cat, det, workers, NULL, 0, &f)) {
        cli_error("--simulate: %s", synor_errmsg());
        goto out;
    }
    size_t nd = synor_fabric_device_count(f);
    b.dev = calloc(nd, sizeof *b.dev);
    b.secs = calloc(nd, sizeof *b.secs);
    if (!b.dev || !b.secs)
        goto out;
    for (size_t d = 0; d < nd; d++) {
        const synor_fabric_device *fd = synor_fabric_device_at(f, d);
        if (synor_whatif_is_cpu_device(fd, workers))
            b.dev[b.ndev++] = fd->name;
    }
    if (b.ndev != workers) {
        cli_error("--simulate: the local fabric has %zu of the run's %u CPU workers", b.ndev,
                  workers);
        goto out;
    }
    if (synor_workload_create("synor train (one iteration after another, simulated)", &b.w) ||
        build(&b, nsteps, replicas, tk, pt) || synor_cost_create(b.w, f, &cost) ||
        synor_simulate(cost, NULL, &t)) {
        cli_error("--simulate: %s", synor_errmsg());
        goto out;
    }
    if (scan(t, replicas, NULL, &ss))
        goto out;
    double sim_gap;
    size_t sim_n;
    double sim_period = period(&ss, &sim_gap, &sim_n);

    char notes[NK + 2][1024];
    const char *np[NK + 2];
    size_t nn = 0;
    snprintf(notes[nn++], sizeof notes[0],
             "The trainer's graph, %ld iterations (%zu tasks) on the local fabric: one device "
             "per CPU worker (%u), each task able to run on any, times = rate x work + "
             "dispatch. Work per task: a replica's pass %.3f GFLOP (%.4g rows of %d tokens: "
             "2 x the weights' FLOPs per token, attention 4 T^2 D per layer and row, backward "
             "twice the forward), an all-reduce chunk %.3f MB (%d replicas' gradients read, "
             "one written), an AdamW chunk %.4g M parameters, a batch %.4g M tokens. "
             "Evaluations and checkpoints are not simulated.",
             nsteps, synor_workload_count(b.w), workers, gf, rows, c->seq_len, units[K_REDUCE],
             replicas, units[K_ADAMW], units[K_LOAD]);
    for (int k = 0; k < NK; k++)
        fmt_rate(notes[nn++], sizeof notes[0], k, &s->r[k], s->path,
                 k == K_SPREAD && replicas == 1);
    for (size_t i = 0; i < nn; i++)
        np[i] = notes[i];
    synor_report_options ro = {.title = "TRAINING RUN, SIMULATED (the calibrated local fabric)",
                               .assumptions = np,
                               .n_assumptions = nn,
                               .width = 72};
    char *text = synor_report_text(t, &ro);
    if (!text) {
        cli_error("--simulate: out of memory");
        goto out;
    }
    fputs(text, stdout);
    free(text);
    printf("\nREAL vs SIMULATED (a training iteration; real: the clean steps of the run)\n");
    printf("  %-20s %12s %12s %8s\n", "task", "real, mean", "simulated", "ratio");
    for (int k = 0; k < K_BARRIER; k++) {
        double rm = rs.cnt[k] ? rs.sum[k] / rs.cnt[k] : NAN;
        double sk = tk[k] - dsp; /* the kernel, as the real trace has it */
        printf("  %-20s %9.3f ms %9.3f ms %8.3f\n", k_task[k], rm * 1e3, sk * 1e3, sk / rm);
    }
    sim_gap += dsp; /* to the kernel's start, as the real trace has it */
    /* a simulated task's dispatch comes first: its kernel starts dsp later */
    static const char *const phase[3] = {"phase: passes", "phase: all-reduce", "phase: AdamW"};
    for (int i = 0; i < 3; i++) {
        double rp = rs.phase[i], sp = ss.phase[i] - (i ? 0 : dsp);
        printf("  %-20s %9.3f ms %9.3f ms %8.3f\n", phase[i], rp * 1e3, sp * 1e3, sp / rp);
    }
    printf("  %-20s %9.3f ms %9.3f ms %8.3f\n", "gap between steps", real_gap * 1e3,
           sim_gap * 1e3, sim_gap / real_gap);
    printf("  %-20s %9.3f ms %9.3f ms %8.3f\n", "iteration (period)", real_period * 1e3,
           sim_period * 1e3, sim_period / real_period);
    printf("synor train: simulated iteration %.3f ms vs real %.3f ms (ratio %.3f; real: mean "
           "of %zu steps; simulated: %s)\n",
           sim_period * 1e3, real_period * 1e3, sim_period / real_period, real_n,
           s->r[K_PASS].used == s->r[K_PASS].prior ? "predicted from the calibration cache"
                                                   : "fitted to this run");
    rc = CLI_OK;
out:
    steps_free(&rs);
    steps_free(&ss);
    synor_trace_destroy(t);
    synor_cost_destroy(cost);
    synor_workload_destroy(b.w);
    free(b.dev);
    free(b.secs);
    synor_fabric_destroy(f);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
    return rc;
}
