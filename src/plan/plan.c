/* plan.c - the planner entry points (synor/plan.h): strategy and weights
 * mode names, the choice among weight placements, the pipeline strategy's
 * schedule, and plans. The problem from a cost matrix: problem.c; where
 * weights are while planning: weights.c; validation: validate.c; the
 * plan's JSON: plan_json.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "json/json.h"
#include "plan/plan_internal.h"

static const char *const ST_NAMES[] = {
#define SYNOR__ST_NAME(e, s, d) s,
    SYNOR_STRATEGY_MAP(SYNOR__ST_NAME)
#undef SYNOR__ST_NAME
};
static const char *const ST_DESC[] = {
#define SYNOR__ST_DESC(e, s, d) d,
    SYNOR_STRATEGY_MAP(SYNOR__ST_DESC)
#undef SYNOR__ST_DESC
};

const char *synor_strategy_name(synor_strategy s)
{
    return (unsigned)s < SYNOR_STRATEGY_COUNT ? ST_NAMES[s] : "unknown";
}

const char *synor_strategy_describe(synor_strategy s)
{
    return (unsigned)s < SYNOR_STRATEGY_COUNT ? ST_DESC[s] : "";
}

int synor_strategy_from_name(const char *name, synor_strategy *out)
{
    for (int i = 0; i < SYNOR_STRATEGY_COUNT; i++)
        if (strcmp(name, ST_NAMES[i]) == 0) {
            *out = (synor_strategy)i;
            return 0;
        }
    return synor__error(SYNOR_EINVAL, "unknown strategy \"%s\"", name);
}

void synor_plan_options_init(synor_plan_options *o)
{
    memset(o, 0, sizeof *o);
    o->strategy = SYNOR_STRATEGY_HEFT;
    o->alpha = 1;
    o->beta = 1;
    o->gamma = 1e-3;
    o->exact_time_limit = SYNOR_EXACT_TIME_LIMIT_DEFAULT;
}

static const char *const W_NAMES[] = {"preload", "load"};

const char *synor_weights_name(synor_weights w)
{
    return (unsigned)w < 2 ? W_NAMES[w] : "unknown";
}

int synor_weights_from_name(const char *name, synor_weights *out)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(name, W_NAMES[i]) == 0) {
            *out = (synor_weights)i;
            return 0;
        }
    return synor__error(SYNOR_EINVAL, "unknown weights mode \"%s\" (preload or load)", name);
}

int synor__problem_topo(const synor_sched_problem *pb, size_t *order)
{
    size_t n = pb->n_tasks, m = pb->pred_off[n], done = 0, rc = 0;
    size_t *left = synor__malloc((n ? n : 1) * sizeof *left);
    size_t *succ_off = synor__calloc(n + 1, sizeof *succ_off);
    size_t *succ = synor__malloc((m ? m : 1) * sizeof *succ);
    size_t *fill = synor__calloc(n ? n : 1, sizeof *fill);
    if (!left || !succ_off || !succ || !fill) {
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        left[i] = pb->pred_off[i + 1] - pb->pred_off[i];
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
            if (pb->pred[e] >= n) {
                rc = 2;
                goto out;
            }
            succ_off[pb->pred[e] + 1]++;
        }
    }
    for (size_t i = 0; i < n; i++)
        succ_off[i + 1] += succ_off[i];
    for (size_t i = 0; i < n; i++)
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++)
            succ[succ_off[pb->pred[e]] + fill[pb->pred[e]]++] = i;
    /* FIFO Kahn: order[] doubles as the queue */
    for (size_t i = 0; i < n; i++)
        if (!left[i])
            order[done++] = i;
    for (size_t h = 0; h < done; h++)
        for (size_t e = succ_off[order[h]]; e < succ_off[order[h] + 1]; e++)
            if (--left[succ[e]] == 0)
                order[done++] = succ[e];
    if (done < n)
        rc = 3;
out:
    synor__free(left);
    synor__free(succ_off);
    synor__free(succ);
    synor__free(fill);
    if (rc == 1)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    if (rc == 2)
        return synor__error(SYNOR_EINVAL, "a predecessor index is out of range");
    if (rc == 3)
        return synor__error(SYNOR_EINVAL, "the task graph has a cycle");
    return 0;
}

/* ----------------------------------------------------------------- plans */

typedef struct plan_impl {
    synor_plan p; /* first */
    size_t *dev, *order;
    double *st, *ft;
    synor_plan_load *loads;
    synor_plan_stage *stages;
} plan_impl;

void synor_plan_destroy(synor_plan *p)
{
    plan_impl *pi = (plan_impl *)p;
    if (!pi)
        return;
    synor__free(pi->dev);
    synor__free(pi->order);
    synor__free(pi->st);
    synor__free(pi->ft);
    synor__free(pi->loads);
    synor__free(pi->stages);
    synor__free(pi);
}

typedef struct okey {
    double st;
    size_t dev, task;
} okey;

static int by_start(const void *a, const void *b)
{
    const okey *x = a, *y = b;
    if (x->st != y->st)
        return x->st < y->st ? -1 : 1;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->task < y->task ? -1 : x->task > y->task;
}

/* What a strategy minimises, for choosing among weight placements: energy
 * and money as deadline.c accounts them (as the simulator does), else the
 * makespan. */
static double objective(const synor_sched_problem *pb, const synor_plan_options *o,
                        const size_t *dev, const double *st, const double *ft)
{
    double ms = 0, e = 0;
    int64_t money = 0;
    if (synor__sched_account(pb, dev, st, ft, &ms, &e, &money))
        return INFINITY;
    return o->strategy == SYNOR_STRATEGY_ENERGY ? e
           : o->strategy == SYNOR_STRATEGY_COST ? (double)money
                                                : ms;
}

/* Preload: the weights are in place at 0, so each task starts as soon as
 * its device and inputs allow, keeping the assignment and every device's
 * order. Never later than the schedule it retimes. */
static int retime(const synor_sched_problem *pb, const size_t *dev, double *st, double *ft)
{
    size_t n = pb->n_tasks, d = pb->n_devices;
    okey *k = synor__malloc((n ? n : 1) * sizeof *k);
    double *avail = synor__calloc(d ? d : 1, sizeof *avail);
    if (!k || !avail) {
        synor__free(k);
        synor__free(avail);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        k[i] = (okey){st[i], dev[i], i};
    qsort(k, n, sizeof *k, by_start);
    for (size_t x = 0; x < n; x++) {
        size_t i = k[x].task, p = dev[i];
        double r = avail[p];
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
            size_t j = pb->pred[e];
            double a = ft[j] + synor__edge_comm(pb, e, dev[j], p);
            r = a > r ? a : r;
        }
        st[i] = r;
        ft[i] = r + pb->exec[i * d + p];
        avail[p] = ft[i];
    }
    synor__free(k);
    synor__free(avail);
    return 0;
}

typedef struct variant {
    size_t *dev;
    double *st, *ft;
    synor__wstate ws;
    int have;
} variant;

static void variant_free(variant *v)
{
    synor__free(v->dev);
    synor__free(v->st);
    synor__free(v->ft);
    synor__ws_free(&v->ws);
}

/* One weight placement: list scheduling with the weights state given by
 * timed (copies delay tasks) and single (one holder besides the home);
 * preload schedules are then retimed with the weights in place. */
static int run_variant(const synor_sched_problem *pb, const synor_plan_options *o, int timed,
                       int single, variant *v, synor__nofit *nf)
{
    size_t n = pb->n_tasks;
    v->dev = synor__malloc((n ? n : 1) * sizeof *v->dev);
    v->st = synor__malloc((n ? n : 1) * sizeof *v->st);
    v->ft = synor__malloc((n ? n : 1) * sizeof *v->ft);
    if (!v->dev || !v->st || !v->ft)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    int rc = synor__ws_init(&v->ws, pb, timed, single);
    if (!rc)
        rc = synor__list_schedule(pb, o, &v->ws, v->dev, v->st, v->ft, nf);
    if (!rc && timed && o->weights == SYNOR_WEIGHTS_PRELOAD)
        rc = retime(pb, v->dev, v->st, v->ft);
    v->have = !rc;
    return rc;
}

/* The best of the weight placements (plan.h): one holder, replicas where
 * memory allows, and in preload mode replicas priced by their copy time. */
static int best_variant(const synor_sched_problem *pb, const synor_plan_options *o,
                        variant *best, synor__nofit *nf)
{
    int load = o->weights == SYNOR_WEIGHTS_LOAD;
    struct {
        int timed, single;
    } tries[3] = {{load, 1}, {load, 0}, {1, 0}};
    int n_tries = !pb->n_items ? 1 : load ? 2 : 3, rc = 0, any = 0;
    double best_v = INFINITY;
    memset(best, 0, sizeof *best);
    int first_rc = 0;
    char first_msg[512] = "";
    for (int t = 0; t < n_tries; t++) {
        variant v;
        memset(&v, 0, sizeof v);
        synor__nofit vnf;
        memset(&vnf, 0, sizeof vnf);
        rc = run_variant(pb, o, tries[t].timed, tries[t].single, &v, &vnf);
        if (rc) { /* another placement may still fit: keep the first failure */
            if (!first_rc) {
                first_rc = rc;
                *nf = vnf;
                synor__strlcpy(first_msg, synor_errmsg(), sizeof first_msg);
            }
            variant_free(&v);
            if (rc != SYNOR_ENOMEM && rc != SYNOR_ENODEV)
                break; /* out of memory or a bad problem: no point going on */
            continue;
        }
        double val = objective(pb, o, v.dev, v.st, v.ft);
        if (!any || val < best_v) {
            variant_free(best);
            *best = v;
            best_v = val;
            any = 1;
        } else {
            variant_free(&v);
        }
    }
    if (any)
        return 0;
    variant_free(best);
    return synor__error(first_rc, "%s", first_msg);
}

/* What a pipeline pass needs to know of the split. */
typedef struct pipe_split {
    const size_t *dev_of, *mb_of, *stage_of;
    size_t ns, m;
} pipe_split;

/* One schedule of the split with the tasks taken in `order`. */
static int pipeline_pass(const synor_sched_problem *pb, const synor_plan_options *opt,
                         const pipe_split *sp, const size_t *order, variant *v,
                         synor__nofit *nf)
{
    size_t n = pb->n_tasks, d = pb->n_devices, ns = sp->ns, m = sp->m;
    size_t B = opt->pipeline_buffers;
    const size_t *dev_of = sp->dev_of, *mb_of = sp->mb_of, *stage_of = sp->stage_of;
    double *avail = synor__calloc(d ? d : 1, sizeof *avail);
    double *entered = synor__malloc((ns && m ? ns * m : 1) * sizeof *entered);
    v->dev = synor__malloc((n ? n : 1) * sizeof *v->dev);
    v->st = synor__malloc((n ? n : 1) * sizeof *v->st);
    v->ft = synor__malloc((n ? n : 1) * sizeof *v->ft);
    int rc = !avail || !entered || !v->dev || !v->st || !v->ft
                 ? synor__error(SYNOR_ENOMEM, "out of memory")
                 : synor__ws_init(&v->ws, pb, opt->weights == SYNOR_WEIGHTS_LOAD, 0);
    for (size_t x = 0; !rc && x < ns * m; x++)
        entered[x] = INFINITY; /* [stage * m + mb]: when the stage started the micro-batch */
    for (size_t k = 0; !rc && k < n; k++) {
        /* a layer's task on its stage's device; any other task (no weight
         * of its own: tokenizing, sampling, attention without weights)
         * wherever it finishes first */
        size_t i = order[k], best = SIZE_MAX;
        double best_st = 0, best_ft = INFINITY;
        for (size_t p = 0; p < d; p++) {
            double r = avail[p], wr = 0;
            if ((dev_of[i] != SIZE_MAX && p != dev_of[i]) || !isfinite(pb->exec[i * d + p]) ||
                !synor__ws_probe(&v->ws, i, p, &wr, nf))
                continue;
            r = wr > r ? wr : r;
            for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
                size_t j = pb->pred[e];
                double a = v->ft[j] + synor__edge_comm(pb, e, v->dev[j], p);
                r = a > r ? a : r;
            }
            /* bounded buffers: micro-batch k enters stage s only once the
             * next stage has taken micro-batch k - B off its buffer */
            size_t s = dev_of[i] != SIZE_MAX ? stage_of[p] : SIZE_MAX, k2 = mb_of[i];
            if (B && s != SIZE_MAX && s + 1 < ns && k2 >= B && k2 - B < m &&
                isfinite(entered[(s + 1) * m + k2 - B]) && entered[(s + 1) * m + k2 - B] > r)
                r = entered[(s + 1) * m + k2 - B];
            if (r + pb->exec[i * d + p] < best_ft) {
                best = p;
                best_st = r;
                best_ft = r + pb->exec[i * d + p];
            }
        }
        if (best == SIZE_MAX) {
            rc = nf->need > 0 ? synor__error(SYNOR_ENOMEM,
                                             "task %zu fits in no device's memory: device %zu "
                                             "needs %.0f bytes of %.0f",
                                             i, nf->dev, nf->need, nf->cap)
                              : synor__error(SYNOR_ENODEV, "task %zu can run on no device", i);
            break;
        }
        v->dev[i] = best;
        v->st[i] = best_st;
        v->ft[i] = best_ft;
        avail[best] = best_ft;
        if (dev_of[i] != SIZE_MAX && mb_of[i] < m) {
            double *en = &entered[stage_of[best] * m + mb_of[i]];
            *en = best_st < *en ? best_st : *en;
        }
        rc = synor__ws_commit(&v->ws, i, best);
    }
    v->have = !rc;
    synor__free(avail);
    synor__free(entered);
    return rc;
}

/* The pipeline strategy: the split (pipeline.c), then each task on its
 * stage's device as early as its device, inputs and (load mode) weights
 * allow, in the better of two orders: micro-batch by micro-batch (a stage
 * passes each micro-batch on as soon as it is done: forward pipelines)
 * and layer by layer (every micro-batch's forward, then the backwards:
 * GPipe's schedule for training; not with --buffers, whose bound needs the
 * next stage's earlier micro-batches placed first). (Without weights there
 * are no layers to split: the plan is HEFT's, with no stages.) */
static int pipeline(const synor_sched_problem *pb, const synor_plan_options *opt, plan_impl *pi,
                    variant *v, synor__nofit *nf)
{
    size_t n = pb->n_tasks, d = pb->n_devices, ns = 0, m = 0;
    size_t *dev_of = synor__malloc((n ? n : 1) * sizeof *dev_of);
    size_t *order = synor__malloc((n ? n : 1) * sizeof *order);
    size_t *topo = synor__malloc((n ? n : 1) * sizeof *topo);
    size_t *mb_of = synor__malloc((n ? n : 1) * sizeof *mb_of);
    size_t *stage_of = synor__malloc((d ? d : 1) * sizeof *stage_of);
    double est;
    int rc = !dev_of || !order || !topo || !mb_of || !stage_of
                 ? synor__error(SYNOR_ENOMEM, "out of memory")
                 : 0;
    if (!rc)
        rc = synor__pipeline_split(pb, opt->micro_batches, opt->pipeline_stages, dev_of, mb_of,
                                   order, &pi->stages, &ns, &est, &m);
    if (!rc)
        rc = synor__problem_topo(pb, topo);
    for (size_t p = 0; !rc && p < d; p++)
        stage_of[p] = SIZE_MAX;
    for (size_t x = 0; !rc && x < ns; x++)
        stage_of[pi->stages[x].dev] = x;
    pipe_split sp = {dev_of, mb_of, stage_of, ns, m};
    variant other;
    memset(&other, 0, sizeof other);
    if (!rc)
        rc = pipeline_pass(pb, opt, &sp, order, v, nf);
    /* bounded buffers need the next stage's earlier micro-batches placed
     * first: the micro-batch order only */
    if (!rc && !opt->pipeline_buffers && !(rc = pipeline_pass(pb, opt, &sp, topo, &other, nf))) {
        double a = 0, b = 0;
        for (size_t i = 0; i < n; i++) {
            a = v->ft[i] > a ? v->ft[i] : a;
            b = other.ft[i] > b ? other.ft[i] : b;
        }
        if (b < a) {
            variant t = *v;
            *v = other;
            other = t;
        }
    }
    variant_free(&other);
    if (!rc) {
        pi->p.stages = pi->stages;
        pi->p.n_stages = ns;
        pi->p.micro_batches = m;
        pi->p.pipeline_buffers = opt->pipeline_buffers;
    }
    synor__free(dev_of);
    synor__free(order);
    synor__free(topo);
    synor__free(mb_of);
    synor__free(stage_of);
    return rc;
}

/* A planning pass for deadline.c: the best weight placement. */
typedef struct pass_ctx {
    const synor_sched_problem *pb;
    synor__nofit *nf;
} pass_ctx;

static int plan_pass(void *ctx, const synor_plan_options *o, synor__sched *out)
{
    pass_ctx *c = ctx;
    variant v;
    int rc = best_variant(c->pb, o, &v, c->nf);
    if (rc)
        return rc;
    size_t n = c->pb->n_tasks;
    if (n) {
        memcpy(out->dev, v.dev, n * sizeof *out->dev);
        memcpy(out->st, v.st, n * sizeof *out->st);
        memcpy(out->ft, v.ft, n * sizeof *out->ft);
    }
    synor__free(out->log);
    out->log = v.ws.log; /* taken */
    out->n_log = v.ws.n_log;
    v.ws.log = NULL;
    variant_free(&v);
    return 0;
}

/* The exact solver's incumbent: improve's schedule where improve plans
 * the problem as it is (no weights, memory or groups) and it is shorter
 * than v's (the better of HEFT's and PEFT's). */
static int exact_incumbent_improve(const synor_sched_problem *pb, const synor_plan_options *opt,
                                   variant *v)
{
    size_t n = pb->n_tasks;
    if (pb->n_items || pb->mem || pb->task_mem || (pb->group && pb->n_groups))
        return 0;
    size_t *dev = synor__malloc(n * sizeof *dev);
    double *st = synor__malloc(n * sizeof *st), *ft = synor__malloc(n * sizeof *ft);
    int rc = !dev || !st || !ft ? synor__error(SYNOR_ENOMEM, "out of memory")
                                : synor__improve_schedule(pb, opt, dev, st, ft);
    if (!rc) {
        double a = 0, b = 0;
        for (size_t i = 0; i < n; i++) {
            a = ft[i] > a ? ft[i] : a;
            b = v->ft[i] > b ? v->ft[i] : b;
        }
        if (a < b) {
            memcpy(v->dev, dev, n * sizeof *dev);
            memcpy(v->st, st, n * sizeof *st);
            memcpy(v->ft, ft, n * sizeof *ft);
        }
    }
    synor__free(dev);
    synor__free(st);
    synor__free(ft);
    return rc;
}

int synor__plan_problem(const synor_sched_problem *pb, const synor_plan_options *opt,
                        synor__nofit *nf, synor_plan **out)
{
    synor_plan_options defaults;
    if (!opt) {
        synor_plan_options_init(&defaults);
        opt = &defaults;
    }
    if (!pb->n_devices)
        return synor__error(SYNOR_ENODEV, "no devices to plan for");
    size_t n = pb->n_tasks;
    plan_impl *pi = synor__calloc(1, sizeof *pi);
    okey *keys = synor__malloc((n ? n : 1) * sizeof *keys);
    if (!pi || !keys) {
        synor__free(pi);
        synor__free(keys);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    variant v;
    memset(&v, 0, sizeof v);
    int rc = 0;
    if (opt->strategy == SYNOR_STRATEGY_EXACT && n > SYNOR_EXACT_MAX_TASKS) {
        rc = synor__error(SYNOR_ERANGE, "the exact solver takes at most %d tasks, not %zu",
                          SYNOR_EXACT_MAX_TASKS, n);
        goto fail;
    }
    if (opt->strategy == SYNOR_STRATEGY_EXACT) {
        /* incumbent: the better of HEFT's and PEFT's best placements */
        synor_plan_options h = *opt;
        for (int k = 0; k < 2; k++) {
            variant c;
            h.strategy = k ? SYNOR_STRATEGY_PEFT : SYNOR_STRATEGY_HEFT;
            if ((rc = best_variant(pb, &h, &c, nf)))
                goto fail;
            double a = 0, b = 0;
            for (size_t i = 0; i < n; i++) {
                a = c.ft[i] > a ? c.ft[i] : a;
                b = v.have && v.ft[i] > b ? v.ft[i] : b;
            }
            if (!v.have || a < b) {
                variant_free(&v);
                v = c;
            } else {
                variant_free(&c);
            }
        }
        if (n && (rc = exact_incumbent_improve(pb, opt, &v)))
            goto fail;
        if (n == 0) {
            pi->p.optimal = 1;
        } else {
            /* the search works on the mode's clock: untimed in preload */
            v.ws.timed = opt->weights == SYNOR_WEIGHTS_LOAD;
            v.ws.single = 0;
            synor__exact_result r;
            if ((rc = synor__exact_schedule(pb, opt, &v.ws, v.dev, v.st, v.ft, &r)))
                goto fail;
            pi->p.optimal = r.optimal;
            pi->p.nodes = r.nodes;
            pi->p.bound = r.bound;
        }
    } else if (opt->strategy == SYNOR_STRATEGY_PIPELINE && pb->n_items && pb->n_groups) {
        rc = synor__error(SYNOR_ENOTSUP, "the pipeline strategy splits layers over devices; this "
                                         "workload has colocation groups (data- or tensor-"
                                         "parallel copies): plan it with heft or peft");
        goto fail;
    } else if (opt->strategy == SYNOR_STRATEGY_PIPELINE && pb->n_items) {
        if ((rc = pipeline(pb, opt, pi, &v, nf)))
            goto fail;
    } else if (opt->strategy == SYNOR_STRATEGY_IMPROVE && !pb->n_items &&
               !(pb->group && pb->n_groups)) {
        v.dev = synor__malloc((n ? n : 1) * sizeof *v.dev);
        v.st = synor__malloc((n ? n : 1) * sizeof *v.st);
        v.ft = synor__malloc((n ? n : 1) * sizeof *v.ft);
        rc = !v.dev || !v.st || !v.ft ? synor__error(SYNOR_ENOMEM, "out of memory")
                                      : synor__improve_schedule(pb, opt, v.dev, v.st, v.ft);
        if (rc)
            goto fail;
    } else if (opt->deadline > 0 && (opt->strategy == SYNOR_STRATEGY_ENERGY ||
                                      opt->strategy == SYNOR_STRATEGY_COST)) {
        pass_ctx ctx = {pb, nf};
        v.dev = synor__malloc((n ? n : 1) * sizeof *v.dev);
        v.st = synor__malloc((n ? n : 1) * sizeof *v.st);
        v.ft = synor__malloc((n ? n : 1) * sizeof *v.ft);
        synor__sched won = {v.dev, v.st, v.ft, NULL, 0};
        if (!v.dev || !v.st || !v.ft)
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
        else
            rc = synor__deadline_schedule(pb, opt, plan_pass, &ctx, &won);
        v.ws.log = won.log; /* freed with v */
        v.ws.n_log = won.n_log;
        if (rc)
            goto fail;
    } else if ((rc = best_variant(pb, opt, &v, nf))) {
        goto fail;
    }
    pi->dev = v.dev;
    pi->st = v.st;
    pi->ft = v.ft;
    v.dev = NULL;
    v.st = v.ft = NULL;
    pi->order = synor__calloc(n ? n : 1, sizeof *pi->order);
    pi->loads = synor__malloc((v.ws.n_log ? v.ws.n_log : 1) * sizeof *pi->loads);
    if (!pi->order || !pi->loads) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto fail;
    }
    if (v.ws.n_log)
        memcpy(pi->loads, v.ws.log, v.ws.n_log * sizeof *pi->loads);
    pi->p.n_loads = v.ws.n_log;
    pi->p.loads = pi->loads;
    pi->p.weights = opt->weights;
    if (opt->weights == SYNOR_WEIGHTS_PRELOAD) {
        /* the copies happen before the run: their own clock, from 0 */
        synor__wstate setup;
        if ((rc = synor__ws_init(&setup, pb, 0, 0)))
            goto fail;
        for (size_t k = 0; k < pi->p.n_loads && !rc; k++) {
            /* replay in planned order so sources and times are the setup's */
            size_t j = pi->loads[k].item, p = pi->loads[k].dev;
            if (!isfinite(setup.ready[p * setup.k + j])) {
                synor_sched_problem one = *pb;
                size_t off[2] = {0, 1}, use[1] = {j};
                one.use_off = off;
                one.use = use;
                setup.pb = &one;
                rc = synor__ws_commit(&setup, 0, p);
                setup.pb = pb;
                if (!rc)
                    pi->loads[k] = setup.log[setup.n_log - 1];
            }
        }
        pi->p.setup = synor__ws_setup(&setup);
        synor__ws_free(&setup);
        if (rc)
            goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        keys[i] = (okey){pi->st[i], pi->dev[i], i};
        if (pi->ft[i] > pi->p.makespan)
            pi->p.makespan = pi->ft[i];
    }
    qsort(keys, n, sizeof *keys, by_start);
    for (size_t i = 0; i < n; i++)
        pi->order[i] = keys[i].task;
    synor__free(keys);
    variant_free(&v);
    if (opt->strategy == SYNOR_STRATEGY_EXACT) {
        if (pi->p.optimal || pi->p.bound > pi->p.makespan)
            pi->p.bound = pi->p.makespan;
        pi->p.gap = pi->p.bound > 0 ? (pi->p.makespan - pi->p.bound) / pi->p.bound : 0;
    }
    pi->p.strategy = opt->strategy;
    pi->p.deadline = opt->deadline > 0 ? opt->deadline : 0;
    pi->p.deadline_met = !(opt->deadline > 0) || pi->p.makespan <= opt->deadline;
    pi->p.n_tasks = n;
    pi->p.n_devices = pb->n_devices;
    pi->p.device = pi->dev;
    pi->p.start = pi->st;
    pi->p.finish = pi->ft;
    pi->p.order = pi->order;
    *out = &pi->p;
    return 0;
fail:
    synor__free(keys);
    variant_free(&v);
    synor_plan_destroy(&pi->p);
    return rc;
}

int synor_plan_problem(const synor_sched_problem *pb, const synor_plan_options *o,
                       synor_plan **out)
{
    synor__nofit nf;
    return synor__plan_problem(pb, o, &nf, out);
}
