/* plan.c - the planner entry points (synor/plan.h): strategy names, the
 * problem derived from a cost matrix, memory-aware placement, plan
 * validation and the plan's JSON form.
 *
 * Memory: a workload's external data (weights) stays resident on every
 * device that ran a task consuming it. While planning, a device accepts a
 * task only if its resident external data, plus the external data the task
 * would add, plus the task's own transient footprint, fit in its memory.
 * This is what keeps a 70B model from being planned onto one 80 GB GPU
 * layer by layer. */
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
    size_t *pred_off, *pred;
    int64_t *price;
    synor_kind *kind;
    int *pref, *fb;
    /* memory hooks */
    unsigned char *loaded; /* [dev * n_data + data] */
    uint64_t *resident;    /* per device */
    size_t n_data;
} owned_problem;

void synor_sched_problem_free(synor_sched_problem *pb)
{
    owned_problem *op = (owned_problem *)pb;
    if (!op)
        return;
    synor__free(op->exec);
    synor__free(op->energy);
    synor__free(op->bytes);
    synor__free(op->lat);
    synor__free(op->inv_bw);
    synor__free(op->idle);
    synor__free(op->pred_off);
    synor__free(op->pred);
    synor__free(op->price);
    synor__free(op->kind);
    synor__free(op->pref);
    synor__free(op->fb);
    synor__free(op->loaded);
    synor__free(op->resident);
    synor__free(op);
}

/* External bytes the task would add to dev, and its transient footprint. */
static void mem_need(const owned_problem *op, size_t task, size_t dev, uint64_t *add,
                     uint64_t *transient)
{
    const synor_workload *w = synor_cost_workload(op->c);
    const synor_task *t = synor_workload_task(w, task);
    *add = 0;
    *transient = t->workspace;
    for (size_t k = 0; k < t->n_consumes; k++) {
        const synor_data *d = synor_workload_data(w, t->consumes[k]);
        if (d->producer >= 0)
            *transient += d->bytes;
        else if (!op->loaded[dev * op->n_data + t->consumes[k]])
            *add += d->bytes;
    }
    for (size_t k = 0; k < t->n_produces; k++)
        *transient += synor_workload_data(w, t->produces[k])->bytes;
}

static int hook_fits(void *user, size_t task, size_t dev)
{
    owned_problem *op = user;
    uint64_t add, tr;
    mem_need(op, task, dev, &add, &tr);
    const synor_fabric_device *fd = synor_fabric_device_at(synor_cost_fabric(op->c), dev);
    return op->resident[dev] + add + tr <= synor_device_caps(fd->dev)->mem_bytes;
}

static void hook_place(void *user, size_t task, size_t dev)
{
    owned_problem *op = user;
    const synor_workload *w = synor_cost_workload(op->c);
    const synor_task *t = synor_workload_task(w, task);
    for (size_t k = 0; k < t->n_consumes; k++) {
        const synor_data *d = synor_workload_data(w, t->consumes[k]);
        unsigned char *l = &op->loaded[dev * op->n_data + t->consumes[k]];
        if (d->producer < 0 && !*l) {
            *l = 1;
            op->resident[dev] += d->bytes;
        }
    }
}

static int problem_build(const synor_cost *c, int hooks, owned_problem **out)
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
    op->n_data = synor_workload_data_count(w);
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
    op->resident = synor__calloc(d, sizeof *op->resident);
    op->loaded = synor__calloc(d && op->n_data ? d * op->n_data : 1, 1);
    if (!op->exec || !op->energy || !op->bytes || !op->pred || !op->pred_off || !op->lat ||
        !op->inv_bw || !op->idle || !op->price || !op->kind || !op->pref || !op->fb ||
        !op->resident || !op->loaded) {
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
    pb->lat = op->lat;
    pb->inv_bw = op->inv_bw;
    pb->idle_watts = op->idle;
    pb->price_micro = op->price;
    pb->kind = op->kind;
    pb->preferred = op->pref;
    pb->fallback = op->fb;
    if (hooks) {
        pb->fits = hook_fits;
        pb->place = hook_place;
        pb->user = op;
    }
    *out = op;
    return 0;
}

int synor_sched_problem_from_cost(const synor_cost *c, synor_sched_problem **out)
{
    owned_problem *op;
    int rc = problem_build(c, 0, &op);
    if (!rc)
        *out = &op->pb;
    return rc;
}

/* Forgets what the memory hooks recorded, for deadline.c's candidate
 * passes: 0, or 1 for hooks this file did not make. */
static int hooks_rewind(const synor_sched_problem *pb)
{
    if (pb->fits != hook_fits)
        return 1;
    owned_problem *op = pb->user;
    size_t d = pb->n_devices;
    memset(op->loaded, 0, d && op->n_data ? d * op->n_data : 1);
    memset(op->resident, 0, d * sizeof *op->resident);
    return 0;
}

/* ----------------------------------------------------------------- plans */

typedef struct plan_impl {
    synor_plan p; /* first */
    size_t *dev, *order;
    double *st, *ft;
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

int synor_plan_problem(const synor_sched_problem *pb, const synor_plan_options *opt,
                       synor_plan **out)
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
    if (!pi)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    pi->dev = synor__calloc(n ? n : 1, sizeof *pi->dev);
    pi->order = synor__calloc(n ? n : 1, sizeof *pi->order);
    pi->st = synor__calloc(n ? n : 1, sizeof *pi->st);
    pi->ft = synor__calloc(n ? n : 1, sizeof *pi->ft);
    okey *keys = synor__malloc((n ? n : 1) * sizeof *keys);
    int rc = 0;
    if (!pi->dev || !pi->order || !pi->st || !pi->ft || !keys) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto fail;
    }
    if (opt->strategy == SYNOR_STRATEGY_EXACT) {
        if (n > SYNOR_EXACT_MAX_TASKS) {
            rc = synor__error(SYNOR_ERANGE, "the exact solver takes at most %d tasks, not %zu",
                              SYNOR_EXACT_MAX_TASKS, n);
            goto fail;
        }
        /* incumbent: the better of HEFT and PEFT, without memory hooks */
        synor_sched_problem plain = *pb;
        plain.fits = NULL;
        plain.place = NULL;
        synor_plan_options h = *opt;
        double best = INFINITY;
        size_t dv[SYNOR_EXACT_MAX_TASKS + 1];
        double s1[SYNOR_EXACT_MAX_TASKS + 1], f1[SYNOR_EXACT_MAX_TASKS + 1];
        for (int k = 0; k < 2; k++) {
            h.strategy = k ? SYNOR_STRATEGY_PEFT : SYNOR_STRATEGY_HEFT;
            if ((rc = synor__list_schedule(&plain, &h, dv, s1, f1)))
                goto fail;
            double ms = 0;
            for (size_t i = 0; i < n; i++)
                ms = f1[i] > ms ? f1[i] : ms;
            if (ms < best) {
                best = ms;
                memcpy(pi->dev, dv, n * sizeof *dv);
                memcpy(pi->st, s1, n * sizeof *s1);
                memcpy(pi->ft, f1, n * sizeof *f1);
            }
        }
        if (n == 0)
            pi->p.optimal = 1;
        else if ((rc = synor__exact_schedule(&plain, opt, pi->dev, pi->st, pi->ft,
                                             &pi->p.optimal, &pi->p.nodes)))
            goto fail;
    } else if (opt->deadline > 0 && (opt->strategy == SYNOR_STRATEGY_ENERGY ||
                                      opt->strategy == SYNOR_STRATEGY_COST)) {
        if ((rc = synor__deadline_schedule(pb, opt, hooks_rewind, pi->dev, pi->st, pi->ft)))
            goto fail;
    } else if ((rc = synor__list_schedule(pb, opt, pi->dev, pi->st, pi->ft))) {
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
    synor_plan_destroy(&pi->p);
    return rc;
}

int synor_plan_create(const synor_cost *c, const synor_plan_options *o, synor_plan **out)
{
    owned_problem *op;
    int rc = problem_build(c, 1, &op);
    if (rc)
        return rc;
    rc = synor_plan_problem(&op->pb, o, out);
    if (rc == SYNOR_ENODEV) {
        /* name the task and the reason in the workload's terms */
        char msg[512];
        synor__strlcpy(msg, synor_errmsg(), sizeof msg);
        size_t task;
        if (sscanf(msg, "task %zu", &task) == 1 && task < op->pb.n_tasks) {
            const synor_task *t = synor_workload_task(synor_cost_workload(c), task);
            char fp[32];
            synor__format_size(synor_cost_footprint(c, task), 0, fp, sizeof fp);
            rc = synor__error(SYNOR_ENODEV,
                              "task \"%s\" (%s, %s) fits no device the strategy allows: no "
                              "device runs it, or its data (%s plus resident weights) does not "
                              "fit in memory",
                              t->id, synor_op_type_name(t->op.type),
                              synor_dtype_name(t->op.dtype), fp);
        }
    }
    synor_sched_problem_free(&op->pb);
    return rc;
}

/* ------------------------------------------------------------ validation */

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
            double arrive = p->finish[j] + synor__comm(pb, pb->pred_bytes[e], p->device[j], q);
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
    return rc;
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
