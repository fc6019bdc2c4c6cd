/* problem.c - the scheduling problem of a workload on a fabric (synor/plan.h):
 * execution times, energies and transfer costs from the cost matrix, the
 * weights (data no task produces) with their home and every device's
 * memory, explicit edge costs and colocation groups; and synor_plan_create,
 * which plans it and names tasks, devices and data in its errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "cost/cost_internal.h"
#include "json/json.h"
#include "plan/plan_internal.h"

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

size_t synor_plan_weight_data(const synor_workload *w, size_t *datum)
{
    size_t k = 0, nd = synor_workload_data_count(w);
    for (size_t j = 0; j < nd; j++) {
        const synor_data *x = synor_workload_data(w, j);
        if (x->producer < 0 && x->bytes)
            datum[k++] = j;
    }
    return k;
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
    k = synor_plan_weight_data(w, op->item_data);
    for (size_t j = 0; j < nd; j++)
        item_of[j] = SIZE_MAX;
    for (size_t j = 0; j < k; j++) {
        item_of[op->item_data[j]] = j;
        op->item_bytes[j] = (double)synor_workload_data(w, op->item_data[j])->bytes;
        op->item_home[j] = home;
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

/* in_place: the problem reads the cost matrix's times and energies where
 * they are (it must not outlive c), else it has copies. */
static int problem_build(const synor_cost *c, int in_place, owned_problem **out)
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
    if (!in_place) {
        op->exec = synor__malloc((n && d ? n * d : 1) * sizeof *op->exec);
        op->energy = synor__malloc((n && d ? n * d : 1) * sizeof *op->energy);
    }
    op->bytes = synor__malloc_whole((m ? m : 1) * sizeof *op->bytes);
    op->pred = synor__malloc_whole((m ? m : 1) * sizeof *op->pred);
    op->pred_off = synor__calloc_whole(n + 1, sizeof *op->pred_off);
    op->lat = synor__calloc(d * d, sizeof *op->lat);
    op->inv_bw = synor__calloc(d * d, sizeof *op->inv_bw);
    op->idle = synor__calloc(d, sizeof *op->idle);
    op->price = synor__calloc(d, sizeof *op->price);
    op->kind = synor__calloc(d, sizeof *op->kind);
    op->pref = synor__malloc_whole((n ? n : 1) * sizeof *op->pref);
    op->fb = synor__malloc_whole((n ? n : 1) * sizeof *op->fb);
    if ((!in_place && (!op->exec || !op->energy)) || !op->bytes || !op->pred || !op->pred_off ||
        !op->lat || !op->inv_bw || !op->idle || !op->price || !op->kind || !op->pref || !op->fb) {
        synor_sched_problem_free(&op->pb);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    if (!in_place) {
        synor__prefault(op->exec, n * d * sizeof *op->exec);
        synor__prefault(op->energy, n * d * sizeof *op->energy);
    }
    size_t e = 0;
    for (size_t i = 0; i < n; i++) {
        const synor_task *t = synor_workload_task(w, i);
        for (size_t p = 0; !in_place && p < d; p++) {
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
    pb->exec = in_place ? synor__cost_times(c) : op->exec;
    pb->energy = in_place ? synor__cost_energies(c) : op->energy;
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
    int rc = problem_build(c, 0, &op);
    if (!rc)
        *out = &op->pb;
    return rc;
}

int synor_plan_create(const synor_cost *c, const synor_plan_options *o, synor_plan **out)
{
    owned_problem *op;
    int rc = problem_build(c, 1, &op); /* freed below, before c can go */
    if (rc)
        return rc;
    if (o && o->storage_bw > 0)
        op->pb.storage_bw = o->storage_bw;
    synor__nofit nf;
    memset(&nf, 0, sizeof nf);
    rc = synor__plan_problem(&op->pb, o, &nf, out);
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
