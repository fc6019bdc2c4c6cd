/* plan.c - the planner entry points (synor/plan.h): strategy names, the
 * problem derived from a cost matrix (weights, their home, memory), the
 * choice among weight placements, plan validation and the plan's JSON
 * form. Where weights are while planning: weights.c. */
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

/* ------------------------------------------------- problem from a cost */

typedef struct owned_problem {
    synor_sched_problem pb; /* first: the public pointer points here */
    const synor_cost *c;
    double *exec, *energy, *bytes, *lat, *inv_bw, *idle;
    double *comm; /* explicit edge costs; NULL when the workload gives none */
    size_t *pred_off, *pred;
    int64_t *price;
    synor_kind *kind;
    int *pref, *fb;
    /* weights: item k is the workload's datum item_data[k] */
    double *item_bytes, *mem, *task_mem;
    size_t *item_home, *use_off, *use, *item_data;
    size_t *group;
} owned_problem;

void synor_sched_problem_free(synor_sched_problem *pb)
{
    owned_problem *op = (owned_problem *)pb;
    if (!op)
        return;
    synor__free(op->exec);
    synor__free(op->energy);
    synor__free(op->bytes);
    synor__free(op->comm);
    synor__free(op->lat);
    synor__free(op->inv_bw);
    synor__free(op->idle);
    synor__free(op->pred_off);
    synor__free(op->pred);
    synor__free(op->price);
    synor__free(op->kind);
    synor__free(op->pref);
    synor__free(op->fb);
    synor__free(op->item_bytes);
    synor__free(op->mem);
    synor__free(op->task_mem);
    synor__free(op->item_home);
    synor__free(op->use_off);
    synor__free(op->use);
    synor__free(op->item_data);
    synor__free(op->group);
    synor__free(op);
}

/* Weights: the data no task produces. Their home is the host memory of
 * the fabric's first CPU when they all fit there, else storage. */
static int build_weights(owned_problem *op)
{
    const synor_workload *w = synor_cost_workload(op->c);
    const synor_fabric *f = synor_cost_fabric(op->c);
    size_t n = synor_workload_count(w), nd = synor_workload_data_count(w);
    size_t d = synor_fabric_device_count(f), k = 0, u = 0;
    double total = 0;
    for (size_t j = 0; j < nd; j++) {
        const synor_data *x = synor_workload_data(w, j);
        if (x->producer < 0 && x->bytes) {
            k++;
            total += (double)x->bytes;
        }
    }
    for (size_t i = 0; i < n; i++)
        u += synor_workload_task(w, i)->n_consumes;
    op->item_bytes = synor__malloc((k ? k : 1) * sizeof *op->item_bytes);
    op->item_home = synor__malloc((k ? k : 1) * sizeof *op->item_home);
    op->item_data = synor__malloc((k ? k : 1) * sizeof *op->item_data);
    op->use_off = synor__calloc(n + 1, sizeof *op->use_off);
    op->use = synor__malloc((u ? u : 1) * sizeof *op->use);
    op->mem = synor__malloc((d ? d : 1) * sizeof *op->mem);
    op->task_mem = synor__malloc((n ? n : 1) * sizeof *op->task_mem);
    size_t *item_of = synor__malloc((nd ? nd : 1) * sizeof *item_of);
    if (!op->item_bytes || !op->item_home || !op->item_data || !op->use_off || !op->use ||
        !op->mem || !op->task_mem || !item_of) {
        synor__free(item_of);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    size_t home = SYNOR_HOME_STORAGE;
    for (size_t p = 0; p < d && home == SYNOR_HOME_STORAGE; p++) {
        const synor_device *dv = synor_fabric_device_at(f, p)->dev;
        if (synor_device_kind(dv) == SYNOR_KIND_CPU &&
            total <= (double)synor_device_caps(dv)->mem_bytes)
            home = p;
        else if (synor_device_kind(dv) == SYNOR_KIND_CPU)
            break; /* the first CPU is the host; it cannot hold them: storage */
    }
    k = 0;
    for (size_t j = 0; j < nd; j++) {
        const synor_data *x = synor_workload_data(w, j);
        item_of[j] = SIZE_MAX;
        if (x->producer < 0 && x->bytes) {
            item_of[j] = k;
            op->item_bytes[k] = (double)x->bytes;
            op->item_home[k] = home;
            op->item_data[k++] = j;
        }
    }
    u = 0;
    for (size_t i = 0; i < n; i++) {
        const synor_task *t = synor_workload_task(w, i);
        double tm = (double)t->workspace;
        for (size_t c = 0; c < t->n_consumes; c++) {
            const synor_data *x = synor_workload_data(w, t->consumes[c]);
            if (item_of[t->consumes[c]] != SIZE_MAX)
                op->use[u++] = item_of[t->consumes[c]];
            else if (x->producer >= 0)
                tm += (double)x->bytes;
        }
        for (size_t c = 0; c < t->n_produces; c++)
            tm += (double)synor_workload_data(w, t->produces[c])->bytes;
        op->task_mem[i] = tm;
        op->use_off[i + 1] = u;
    }
    for (size_t p = 0; p < d; p++)
        op->mem[p] = (double)synor_device_caps(synor_fabric_device_at(f, p)->dev)->mem_bytes;
    synor__free(item_of);
    op->pb.n_items = k;
    op->pb.item_bytes = op->item_bytes;
    op->pb.item_home = op->item_home;
    op->pb.use_off = op->use_off;
    op->pb.use = op->use;
    op->pb.mem = op->mem;
    op->pb.task_mem = op->task_mem;
    return 0;
}

/* The workload's explicit edge costs, in the problem's edge order (a
 * task's deps in order, tasks in index order); none: op->comm stays NULL. */
static int explicit_comm(const synor_workload *w, size_t m, owned_problem *op)
{
    size_t n = synor_workload_count(w), e = 0;
    for (size_t i = 0; i < n; i++) {
        const synor_task *t = synor_workload_task(w, i);
        if (t->dep_comm && !op->comm) {
            if (!(op->comm = synor__malloc(m * sizeof *op->comm)))
                return synor__error(SYNOR_ENOMEM, "out of memory");
            for (size_t k = 0; k < m; k++)
                op->comm[k] = -1;
        }
        for (size_t k = 0; k < t->n_deps; k++, e++)
            if (t->dep_comm)
                op->comm[e] = t->dep_comm[k];
    }
    return 0;
}

static int problem_build(const synor_cost *c, owned_problem **out)
{
    const synor_workload *w = synor_cost_workload(c);
    const synor_fabric *f = synor_cost_fabric(c);
    size_t n = synor_workload_count(w), d = synor_fabric_device_count(f), m = 0;
    for (size_t i = 0; i < n; i++)
        m += synor_workload_task(w, i)->n_deps;
    owned_problem *op = synor__calloc(1, sizeof *op);
    if (!op)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    op->c = c;
    op->exec = synor__malloc((n && d ? n * d : 1) * sizeof *op->exec);
    op->energy = synor__malloc((n && d ? n * d : 1) * sizeof *op->energy);
    op->bytes = synor__malloc((m ? m : 1) * sizeof *op->bytes);
    op->pred = synor__malloc((m ? m : 1) * sizeof *op->pred);
    op->pred_off = synor__calloc(n + 1, sizeof *op->pred_off);
    op->lat = synor__calloc(d * d, sizeof *op->lat);
    op->inv_bw = synor__calloc(d * d, sizeof *op->inv_bw);
    op->idle = synor__calloc(d, sizeof *op->idle);
    op->price = synor__calloc(d, sizeof *op->price);
    op->kind = synor__calloc(d, sizeof *op->kind);
    op->pref = synor__malloc((n ? n : 1) * sizeof *op->pref);
    op->fb = synor__malloc((n ? n : 1) * sizeof *op->fb);
    if (!op->exec || !op->energy || !op->bytes || !op->pred || !op->pred_off || !op->lat ||
        !op->inv_bw || !op->idle || !op->price || !op->kind || !op->pref || !op->fb) {
        synor_sched_problem_free(&op->pb);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    size_t e = 0;
    for (size_t i = 0; i < n; i++) {
        const synor_task *t = synor_workload_task(w, i);
        for (size_t p = 0; p < d; p++) {
            op->exec[i * d + p] = synor_cost_time(c, i, p);
            op->energy[i * d + p] = synor_cost_energy(c, i, p);
        }
        for (size_t k = 0; k < t->n_deps; k++) {
            op->pred[e] = t->deps[k];
            op->bytes[e++] = (double)synor_workload_edge_bytes(w, i, t->deps[k]);
        }
        op->pred_off[i + 1] = e;
        op->pref[i] = t->has_preferred ? (int)t->preferred : -1;
        op->fb[i] = t->has_fallback ? (int)t->fallback : -1;
    }
    for (size_t p = 0; p < d; p++) {
        const synor_fabric_device *fd = synor_fabric_device_at(f, p);
        op->idle[p] = synor_device_caps(fd->dev)->idle_watts;
        op->price[p] = fd->price_micro;
        op->kind[p] = synor_device_kind(fd->dev);
        for (size_t q = 0; q < d; q++) {
            synor_path path = synor_fabric_path(f, p, q);
            for (size_t h = 0; h < path.n_hops; h++) {
                const synor_link *l = synor_fabric_link(f, path.hops[h]);
                op->lat[p * d + q] += l->latency;
                op->inv_bw[p * d + q] += 1.0 / l->bandwidth;
            }
        }
    }
    synor_sched_problem *pb = &op->pb;
    pb->n_tasks = n;
    pb->n_devices = d;
    pb->exec = op->exec;
    pb->energy = op->energy;
    pb->pred_off = op->pred_off;
    pb->pred = op->pred;
    pb->pred_bytes = op->bytes;
    int rc = explicit_comm(w, m, op);
    if (rc) {
        synor_sched_problem_free(pb);
        return rc;
    }
    pb->pred_comm = op->comm;
    pb->lat = op->lat;
    pb->inv_bw = op->inv_bw;
    pb->idle_watts = op->idle;
    pb->price_micro = op->price;
    pb->kind = op->kind;
    pb->preferred = op->pref;
    pb->fallback = op->fb;
    rc = build_weights(op);
    if (!rc && synor_workload_group_count(w)) {
        if (!(op->group = synor__malloc((n ? n : 1) * sizeof *op->group)))
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
        for (size_t i = 0; !rc && i < n; i++)
            op->group[i] = synor_workload_task(w, i)->group_index;
        pb->group = op->group;
        pb->n_groups = synor_workload_group_count(w);
    }
    if (rc) {
        synor_sched_problem_free(pb);
        return rc;
    }
    *out = op;
    return 0;
}

int synor_sched_problem_from_cost(const synor_cost *c, synor_sched_problem **out)
{
    owned_problem *op;
    int rc = problem_build(c, &op);
    if (!rc)
        *out = &op->pb;
    return rc;
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

/* The pipeline strategy: the split (pipeline.c), then each task on its
 * stage's device in the pipeline's order (micro-batch by micro-batch, so a
 * stage passes each micro-batch on as soon as it is done), as early as its
 * device, inputs and (load mode) weights allow. (Without weights there are
 * no layers to split: the plan is HEFT's, with no stages.) */
static int pipeline(const synor_sched_problem *pb, const synor_plan_options *opt, plan_impl *pi,
                    variant *v, synor__nofit *nf)
{
    size_t n = pb->n_tasks, d = pb->n_devices, ns = 0, m = 0;
    size_t *dev_of = synor__malloc((n ? n : 1) * sizeof *dev_of);
    size_t *order = synor__malloc((n ? n : 1) * sizeof *order);
    size_t *mb_of = synor__malloc((n ? n : 1) * sizeof *mb_of);
    size_t *stage_of = synor__malloc((d ? d : 1) * sizeof *stage_of);
    double *avail = synor__calloc(d ? d : 1, sizeof *avail), est;
    double *entered = NULL; /* [stage * m + mb]: when the stage started the micro-batch */
    v->dev = synor__malloc((n ? n : 1) * sizeof *v->dev);
    v->st = synor__malloc((n ? n : 1) * sizeof *v->st);
    v->ft = synor__malloc((n ? n : 1) * sizeof *v->ft);
    int rc = !dev_of || !order || !mb_of || !stage_of || !avail || !v->dev || !v->st || !v->ft
                 ? synor__error(SYNOR_ENOMEM, "out of memory")
                 : 0;
    if (!rc)
        rc = synor__pipeline_split(pb, opt->micro_batches, dev_of, mb_of, order, &pi->stages,
                                   &ns, &est, &m);
    if (!rc && !(entered = synor__malloc((ns && m ? ns * m : 1) * sizeof *entered)))
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t x = 0; !rc && x < ns * m; x++)
        entered[x] = INFINITY;
    for (size_t p = 0; !rc && p < d; p++)
        stage_of[p] = SIZE_MAX;
    for (size_t x = 0; !rc && x < ns; x++)
        stage_of[pi->stages[x].dev] = x;
    size_t B = opt->pipeline_buffers;
    if (!rc)
        rc = synor__ws_init(&v->ws, pb, opt->weights == SYNOR_WEIGHTS_LOAD, 0);
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
    if (!rc) {
        v->have = 1;
        pi->p.stages = pi->stages;
        pi->p.n_stages = ns;
        pi->p.micro_batches = m;
        pi->p.pipeline_buffers = B;
    }
    synor__free(dev_of);
    synor__free(order);
    synor__free(mb_of);
    synor__free(stage_of);
    synor__free(entered);
    synor__free(avail);
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

static int plan_problem(const synor_sched_problem *pb, const synor_plan_options *opt,
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
        if (n == 0) {
            pi->p.optimal = 1;
        } else {
            /* the search works on the mode's clock: untimed in preload */
            v.ws.timed = opt->weights == SYNOR_WEIGHTS_LOAD;
            v.ws.single = 0;
            if ((rc = synor__exact_schedule(pb, opt, &v.ws, v.dev, v.st, v.ft, &pi->p.optimal,
                                            &pi->p.nodes)))
                goto fail;
        }
    } else if (opt->strategy == SYNOR_STRATEGY_PIPELINE && pb->n_items && pb->n_groups) {
        rc = synor__error(SYNOR_ENOTSUP, "the pipeline strategy splits layers over devices; this "
                                         "workload has colocation groups (data- or tensor-"
                                         "parallel copies): plan it with heft or peft");
        goto fail;
    } else if (opt->strategy == SYNOR_STRATEGY_PIPELINE && pb->n_items) {
        if ((rc = pipeline(pb, opt, pi, &v, nf)))
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
    return plan_problem(pb, o, &nf, out);
}

int synor_plan_create(const synor_cost *c, const synor_plan_options *o, synor_plan **out)
{
    owned_problem *op;
    int rc = problem_build(c, &op);
    if (rc)
        return rc;
    if (o && o->storage_bw > 0)
        op->pb.storage_bw = o->storage_bw;
    synor__nofit nf;
    memset(&nf, 0, sizeof nf);
    rc = plan_problem(&op->pb, o, &nf, out);
    const synor_workload *w = synor_cost_workload(c);
    const synor_fabric *f = synor_cost_fabric(c);
    if (rc == SYNOR_ENOMEM && nf.need > 0 && nf.task < op->pb.n_tasks &&
        nf.dev < op->pb.n_devices) {
        /* name the task, the device that came closest, the datum, the shortfall */
        char need[32], cap[32], gap[32], wb[32];
        synor__format_size((uint64_t)nf.need, 0, need, sizeof need);
        synor__format_size((uint64_t)nf.cap, 0, cap, sizeof cap);
        synor__format_size((uint64_t)(nf.need - nf.cap), 0, gap, sizeof gap);
        const char *dname = synor_fabric_device_at(f, nf.dev)->name;
        const synor_task *t = synor_workload_task(w, nf.task);
        if (nf.item < op->pb.n_items) {
            const synor_data *x = synor_workload_data(w, op->item_data[nf.item]);
            synor__format_size(x->bytes, 0, wb, sizeof wb);
            rc = synor__error(SYNOR_ENOMEM,
                              "task \"%s\" fits in no device's memory: the closest is \"%s\", "
                              "where datum \"%s\" (%s) with what the device already holds and "
                              "the task's working memory needs %s of its %s, %s short",
                              t->id, dname, x->name, wb, need, cap, gap);
        } else {
            rc = synor__error(SYNOR_ENOMEM,
                              "task \"%s\" fits in no device's memory: the closest is \"%s\", "
                              "where its working memory with what the device already holds "
                              "needs %s of its %s, %s short",
                              t->id, dname, need, cap, gap);
        }
    } else if (rc == SYNOR_ENODEV) {
        /* name the task and the reason in the workload's terms */
        char msg[512];
        synor__strlcpy(msg, synor_errmsg(), sizeof msg);
        size_t task;
        if (sscanf(msg, "task %zu", &task) == 1 && task < op->pb.n_tasks) {
            const synor_task *t = synor_workload_task(w, task);
            /* too big for every device? name the largest and the datum */
            uint64_t need = synor_cost_footprint(c, task), most = 0, big = 0;
            size_t at = 0;
            const char *datum = NULL;
            for (size_t p = 0; p < op->pb.n_devices; p++) {
                uint64_t m = synor_device_caps(synor_fabric_device_at(f, p)->dev)->mem_bytes;
                if (m > most) {
                    most = m;
                    at = p;
                }
            }
            for (size_t k = 0; k < t->n_consumes; k++) {
                const synor_data *x = synor_workload_data(w, t->consumes[k]);
                if (x->bytes > big) {
                    big = x->bytes;
                    datum = x->name;
                }
            }
            if (need > most && datum) {
                char nb[32], mb[32], gb[32], db[32];
                synor__format_size(need, 0, nb, sizeof nb);
                synor__format_size(most, 0, mb, sizeof mb);
                synor__format_size(need - most, 0, gb, sizeof gb);
                synor__format_size(big, 0, db, sizeof db);
                rc = synor__error(SYNOR_ENOMEM,
                                  "task \"%s\" fits in no device's memory: it needs %s, its "
                                  "largest datum \"%s\" alone %s; the largest device, \"%s\", "
                                  "has %s: %s short",
                                  t->id, nb, datum, db, synor_fabric_device_at(f, at)->name, mb,
                                  gb);
            } else {
                rc = synor__error(SYNOR_ENODEV,
                                  "task \"%s\" (%s, %s) can run on no device the strategy "
                                  "allows",
                                  t->id, synor_op_type_name(t->op.type),
                                  synor_dtype_name(t->op.dtype));
            }
        }
    }
    synor_sched_problem_free(&op->pb);
    return rc;
}

/* ------------------------------------------------------------ validation */

/* The weights part of synor_plan_validate: replays the copies in planned
 * order (each from a source that holds the weight by then, no shorter
 * than its cost, one at a time per device), then checks every task's
 * weights and every device's memory. */
static int validate_weights(const synor_plan *p, const synor_sched_problem *pb)
{
    const double tol = 1e-9;
    size_t n = p->n_tasks, d = p->n_devices, k = pb->n_items;
    if (!k && !pb->mem)
        return 0;
    synor__wstate ws;
    int rc = synor__ws_init(&ws, pb, 1, 0);
    if (rc)
        return rc;
    double *maxmem = synor__calloc(d ? d : 1, sizeof *maxmem);
    if (!maxmem) {
        synor__ws_free(&ws);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    double *engine = ws.chan; /* when each device's last copy ended */
    for (size_t x = 0; x < p->n_loads && !rc; x++) {
        const synor_plan_load *l = &p->loads[x];
        if (l->item >= k || l->dev >= d)
            rc = synor__error(SYNOR_EINVAL, "copy %zu: item %zu or device %zu out of range", x,
                              l->item, l->dev);
        else if (isfinite(ws.ready[l->dev * k + l->item]))
            rc = synor__error(SYNOR_EINVAL, "copy %zu: device %zu already holds item %zu", x,
                              l->dev, l->item);
        else if (l->start < engine[l->dev] - tol * (1 + l->start))
            rc = synor__error(SYNOR_EINVAL, "copy %zu onto device %zu starts at %.9g, before "
                                            "its previous copy ends at %.9g",
                              x, l->dev, l->start, engine[l->dev]);
        if (rc)
            break;
        double cost, have;
        if (l->src == SYNOR_HOME_STORAGE) {
            size_t home = pb->item_home ? pb->item_home[l->item] : SYNOR_HOME_STORAGE;
            cost = pb->item_bytes[l->item] /
                   (pb->storage_bw > 0 ? pb->storage_bw : SYNOR_STORAGE_BW_DEFAULT);
            have = home == SYNOR_HOME_STORAGE ? 0 : INFINITY;
        } else if (l->src < d && l->src != l->dev) {
            cost = synor__comm(pb, pb->item_bytes[l->item], l->src, l->dev);
            have = ws.ready[l->src * k + l->item];
        } else {
            rc = synor__error(SYNOR_EINVAL, "copy %zu: source %zu is not a device", x, l->src);
            break;
        }
        if (!(l->start >= have - tol * (1 + have)))
            rc = synor__error(SYNOR_EINVAL, "copy %zu of item %zu comes from a source that "
                                            "does not hold it at %.9g",
                              x, l->item, l->start);
        else if (l->finish - l->start < cost - tol * (1 + cost))
            rc = synor__error(SYNOR_EINVAL, "copy %zu of item %zu takes %.9g s, less than its "
                                            "cost %.9g s",
                              x, l->item, l->finish - l->start, cost);
        ws.ready[l->dev * k + l->item] = l->finish;
        ws.held[l->dev] += pb->item_bytes[l->item];
        engine[l->dev] = l->finish;
    }
    for (size_t i = 0; i < n && !rc; i++) {
        size_t q = p->device[i];
        for (size_t u = pb->use_off ? pb->use_off[i] : 0; pb->use_off && u < pb->use_off[i + 1];
             u++) {
            double r = ws.ready[q * k + pb->use[u]];
            if (!isfinite(r)) {
                rc = synor__error(SYNOR_EINVAL, "task %zu runs on device %zu, which never "
                                                "holds its item %zu",
                                  i, q, pb->use[u]);
                break;
            }
            if (p->weights == SYNOR_WEIGHTS_LOAD && p->start[i] < r - tol * (1 + r)) {
                rc = synor__error(SYNOR_EINVAL, "task %zu starts at %.9g before its item %zu "
                                                "is on device %zu at %.9g",
                                  i, p->start[i], pb->use[u], q, r);
                break;
            }
        }
        double tm = pb->task_mem ? pb->task_mem[i] : 0;
        maxmem[q] = tm > maxmem[q] ? tm : maxmem[q];
    }
    for (size_t q = 0; q < d && !rc && pb->mem; q++)
        if (ws.held[q] + maxmem[q] > pb->mem[q] * (1 + tol))
            rc = synor__error(SYNOR_EINVAL, "device %zu holds %.0f bytes of weights and needs "
                                            "%.0f of working memory: more than its %.0f",
                              q, ws.held[q], maxmem[q], pb->mem[q]);
    synor__free(maxmem);
    synor__ws_free(&ws);
    return rc;
}

/* Every task of a colocation group on one device. */
static int validate_groups(const synor_plan *p, const synor_sched_problem *pb)
{
    if (!pb->group || !pb->n_groups)
        return 0;
    size_t *at = synor__malloc(pb->n_groups * sizeof *at);
    if (!at)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t g = 0; g < pb->n_groups; g++)
        at[g] = SIZE_MAX;
    int rc = 0;
    for (size_t i = 0; i < p->n_tasks && !rc; i++) {
        size_t g = pb->group[i];
        if (g == SIZE_MAX)
            continue;
        if (g >= pb->n_groups)
            rc = synor__error(SYNOR_EINVAL, "task %zu: group %zu of %zu", i, g, pb->n_groups);
        else if (at[g] == SIZE_MAX)
            at[g] = p->device[i];
        else if (at[g] != p->device[i])
            rc = synor__error(SYNOR_EINVAL, "task %zu of group %zu is on device %zu, the "
                                            "group's other tasks on device %zu",
                              i, g, p->device[i], at[g]);
    }
    synor__free(at);
    return rc;
}

int synor_plan_validate(const synor_plan *p, const synor_sched_problem *pb)
{
    const double tol = 1e-9;
    size_t n = p->n_tasks, d = p->n_devices;
    if (n != pb->n_tasks || d != pb->n_devices)
        return synor__error(SYNOR_EINVAL, "plan and problem differ in size");
    for (size_t i = 0; i < n; i++) {
        size_t q = p->device[i];
        double w = q < d ? pb->exec[i * d + q] : INFINITY;
        if (!isfinite(w))
            return synor__error(SYNOR_EINVAL, "task %zu is on device %zu, which cannot run it", i,
                                q);
        if (fabs(p->finish[i] - p->start[i] - w) > tol * (1 + w))
            return synor__error(SYNOR_EINVAL, "task %zu: finish - start %.9g != cost %.9g", i,
                                p->finish[i] - p->start[i], w);
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++) {
            size_t j = pb->pred[e];
            double arrive = p->finish[j] + synor__edge_comm(pb, e, p->device[j], q);
            if (p->start[i] < arrive - tol * (1 + arrive))
                return synor__error(SYNOR_EINVAL,
                                    "task %zu starts at %.9g before the input from task %zu "
                                    "arrives at %.9g",
                                    i, p->start[i], j, arrive);
        }
    }
    /* overlap: neighbours in start order on the same device */
    size_t *last = synor__malloc((d ? d : 1) * sizeof *last);
    if (!last)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t q = 0; q < d; q++)
        last[q] = (size_t)-1;
    int rc = 0;
    for (size_t k = 0; k < n && !rc; k++) {
        size_t i = p->order[k], q = p->device[i];
        if (last[q] != (size_t)-1 && p->start[i] < p->finish[last[q]] - tol * (1 + p->start[i]))
            rc = synor__error(SYNOR_EINVAL, "tasks %zu and %zu overlap on device %zu", last[q], i,
                              q);
        if (last[q] == (size_t)-1 || p->finish[i] > p->finish[last[q]])
            last[q] = i;
    }
    synor__free(last);
    if (!rc)
        rc = validate_groups(p, pb);
    return rc ? rc : validate_weights(p, pb);
}

/* ------------------------------------------------------------------ JSON */

char *synor_plan_to_json(const synor_plan *p, const synor_cost *c)
{
    const synor_workload *w = synor_cost_workload(c);
    const synor_fabric *f = synor_cost_fabric(c);
    synor__buf b;
    synor__jw j;
    synor__buf_init(&b);
    synor__jw_init(&j, &b, 1);
    synor__jw_obj_begin(&j);
    synor__jw_key(&j, "format");
    synor__jw_str(&j, "synor-plan/1");
    synor__jw_key(&j, "workload");
    synor__jw_str(&j, synor_workload_name(w));
    synor__jw_key(&j, "fabric");
    synor__jw_str(&j, synor_fabric_name(f));
    synor__jw_key(&j, "strategy");
    synor__jw_str(&j, synor_strategy_name(p->strategy));
    synor__jw_key(&j, "simulated");
    synor__jw_bool(&j, 1);
    synor__jw_key(&j, "makespan_s");
    synor__jw_num(&j, p->makespan);
    synor__jw_key(&j, "weights");
    synor__jw_str(&j, synor_weights_name(p->weights));
    synor__jw_key(&j, "setup_s");
    synor__jw_num(&j, p->setup);
    synor__jw_key(&j, "copies");
    synor__jw_arr_begin(&j);
    size_t nd = synor_workload_data_count(w), *item = NULL, n_items = 0;
    if (p->n_loads && (item = synor__malloc(nd * sizeof *item)))
        for (size_t x = 0; x < nd; x++) /* item k = the k-th external datum (build_weights) */
            if (synor_workload_data(w, x)->producer < 0 && synor_workload_data(w, x)->bytes)
                item[n_items++] = x;
    for (size_t x = 0; item && x < p->n_loads; x++) {
        const synor_plan_load *l = &p->loads[x];
        synor__jw_obj_begin(&j);
        synor__jw_key(&j, "data");
        synor__jw_str(&j, l->item < n_items ? synor_workload_data(w, item[l->item])->name : "?");
        synor__jw_key(&j, "to");
        synor__jw_str(&j, synor_fabric_device_at(f, l->dev)->name);
        synor__jw_key(&j, "from");
        synor__jw_str(&j, l->src == SYNOR_HOME_STORAGE ? "storage"
                                                       : synor_fabric_device_at(f, l->src)->name);
        synor__jw_key(&j, "start_s");
        synor__jw_num(&j, l->start);
        synor__jw_key(&j, "finish_s");
        synor__jw_num(&j, l->finish);
        synor__jw_obj_end(&j);
    }
    synor__free(item);
    synor__jw_arr_end(&j);
    if (synor__plan_json_account(&j, p, c)) {
        synor__buf_free(&b);
        return NULL;
    }
    synor__jw_key(&j, "tasks");
    synor__jw_arr_begin(&j);
    for (size_t k = 0; k < p->n_tasks; k++) {
        size_t i = p->order[k];
        synor__jw_obj_begin(&j);
        synor__jw_key(&j, "id");
        synor__jw_str(&j, synor_workload_task(w, i)->id);
        synor__jw_key(&j, "device");
        synor__jw_str(&j, synor_fabric_device_at(f, p->device[i])->name);
        synor__jw_key(&j, "start_s");
        synor__jw_num(&j, p->start[i]);
        synor__jw_key(&j, "finish_s");
        synor__jw_num(&j, p->finish[i]);
        synor__jw_obj_end(&j);
    }
    synor__jw_arr_end(&j);
    synor__jw_obj_end(&j);
    char *s = synor__buf_take(&b);
    if (!s)
        synor__error(SYNOR_ENOMEM, "out of memory");
    return s;
}
