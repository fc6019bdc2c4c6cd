/* place.c - which device a ready task goes to (issue 4 point 3).
 *
 * Candidates are the devices that implement the task's kernel and are not
 * stopped. With one candidate there is nothing to decide. Otherwise, by
 * cfg.policy:
 *
 *   load: the fewest queued tasks per worker.
 *   earliest finish (default): for each candidate d,
 *       finish(d) = queued(d) / workers(d)          expected work queued
 *                 + missing(d) / bandwidth(node(d))  inputs not valid there
 *                 + expect(d)                        the model's estimate
 *     and the task goes to the smallest. expect(d) comes from the
 *     performance model (cfg.perfmodel) once it is calibrated for (kernel,
 *     footprint, device); while a candidate is not, the task goes to the
 *     least loaded uncalibrated candidate, so that every device gets its
 *     samples (StarPU's dmda calibrates the same way). Without a model,
 *     this is the load rule.
 *   energy / money: among the candidates whose finish is within twice the
 *     earliest, the smallest expect(d) x watts(d) (or x price(d)).
 *   mix: the smallest alpha finish(d) + beta transfer(d) + gamma expect(d) watts(d).
 *
 * The model's estimate is a median of recent samples (synor/perfmodel.h),
 * so one slow run does not send all later work elsewhere. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "synor/perfmodel.h"

uint64_t synor__task_footprint(const synor__task *t)
{
    size_t v[SYNOR_TASK_MAX_DATA * (SYNOR_HANDLE_MAX_DIMS + 1) + 1];
    unsigned n = 0;
    v[n++] = t->ndata;
    for (unsigned i = 0; i < t->ndata; i++) {
        const synor_handle *d = t->data[i];
        v[n++] = (size_t)d->desc.dtype;
        for (unsigned j = 0; j < SYNOR_HANDLE_MAX_DIMS; j++)
            v[n++] = d->desc.shape[j];
    }
    return synor_perfmodel_footprint(v, n);
}

static double load_of(synor__device *d)
{
    return (double)atomic_load_explicit(&d->q.count, memory_order_relaxed) / (double)d->nworkers;
}

static int candidate(const synor__task *t, const synor__device *d, const synor__device *avoid,
                     int pass)
{
    return (t->kinds & d->impl_bit) && !atomic_load_explicit(&d->stopped, memory_order_relaxed) &&
           !(pass == 0 && d == avoid);
}

static synor__device *by_load(synor_runtime *rt, const synor__task *t, const synor__device *avoid)
{
    synor__device *best = NULL;
    double best_load = 0;
    for (int pass = 0; pass < 2 && !best; pass++)
        for (unsigned i = 0; i < rt->ndevices; i++) {
            synor__device *d = &rt->devices[i];
            if (!candidate(t, d, avoid, pass))
                continue;
            double l = load_of(d);
            if (!best || l < best_load) {
                best = d;
                best_load = l;
            }
        }
    return best;
}

/* ------------------------------------------- data placement by operation */

typedef struct op_entries {
    const char *op;
    synor_runtime *rt;
    struct {
        unsigned dev;
        uint64_t fp;
        double est;
    } v[256];
    unsigned n;
} op_entries;

static int collect(const synor_perfmodel_entry *e, void *user)
{
    op_entries *o = user;
    if (!e->calibrated || strcmp(e->op, o->op) || o->n == sizeof o->v / sizeof o->v[0])
        return 0;
    for (unsigned i = 0; i < o->rt->ndevices; i++)
        if (!strcmp(o->rt->devices[i].name, e->device)) {
            o->v[o->n].dev = i;
            o->v[o->n].fp = e->footprint;
            o->v[o->n].est = e->estimate;
            o->n++;
            break;
        }
    return 0;
}

synor__device *synor__place_for_kernel(synor_runtime *rt, const synor_kernel *k)
{
    uint32_t bits = synor__kernel_bits(k);
    int ok[SYNOR__MAX_DEVICES] = {0};
    unsigned nok = 0;
    for (unsigned i = 0; i < rt->ndevices; i++)
        if ((bits & rt->devices[i].impl_bit) &&
            !atomic_load_explicit(&rt->devices[i].stopped, memory_order_relaxed)) {
            ok[i] = 1;
            nok++;
        }
    if (!nok)
        return NULL;
    /* Sum the estimates over the footprints that every candidate has. */
    op_entries o; /* about 6 KB */
    o.op = k->name ? k->name : "";
    o.rt = rt;
    o.n = 0;
    double sum[SYNOR__MAX_DEVICES] = {0};
    int common = 0;
    if (rt->cfg.perfmodel && nok > 1 && synor_perfmodel_foreach(rt->cfg.perfmodel, collect, &o) == 0) {
        for (unsigned a = 0; a < o.n; a++) {
            if (!ok[o.v[a].dev])
                continue;
            unsigned have = 0;
            double row[SYNOR__MAX_DEVICES] = {0};
            for (unsigned b = 0; b < o.n; b++)
                if (o.v[b].fp == o.v[a].fp && ok[o.v[b].dev] && row[o.v[b].dev] == 0) {
                    row[o.v[b].dev] = o.v[b].est > 0 ? o.v[b].est : 1e-12;
                    have++;
                }
            /* each footprint once: at its first entry of a candidate */
            int first = 1;
            for (unsigned b = 0; b < a; b++)
                if (o.v[b].fp == o.v[a].fp && ok[o.v[b].dev])
                    first = 0;
            if (have == nok && first) {
                common++;
                for (unsigned i = 0; i < rt->ndevices; i++)
                    sum[i] += row[i];
            }
        }
    }
    synor__device *best = NULL;
    for (unsigned i = 0; i < rt->ndevices; i++) {
        if (!ok[i])
            continue;
        synor__device *d = &rt->devices[i];
        if (!best)
            best = d;
        else if (common ? sum[i] < sum[best->index] : (best->node == 0 && d->node != 0))
            best = d;
    }
    return best;
}

synor__device *synor__place_choose(synor_runtime *rt, synor__task *t, const synor__device *avoid)
{
    t->expect_ns = 0;
    if (t->hint_dev >= 0) {
        synor__device *h = &rt->devices[t->hint_dev];
        if (h != avoid && candidate(t, h, NULL, 1))
            return h;
    }
    if (rt->ndevices == 1)
        return candidate(t, &rt->devices[0], NULL, 1) ? &rt->devices[0] : NULL;
    struct synor_perfmodel *pm = rt->cfg.perfmodel;
    if (!pm || rt->cfg.policy == SYNOR_PLACE_LOAD)
        return by_load(rt, t, avoid);

    uint64_t fp = synor__task_footprint(t);
    double est[SYNOR__MAX_DEVICES], fin[SYNOR__MAX_DEVICES], xfer[SYNOR__MAX_DEVICES];
    synor__device *uncal = NULL, *fastest = NULL;
    double best_fin = INFINITY, uncal_load = 0;
    int pass = 0, any = 0;
    for (; pass < 2 && !any; pass++) {
        for (unsigned i = 0; i < rt->ndevices; i++) {
            synor__device *d = &rt->devices[i];
            est[i] = -1;
            if (!candidate(t, d, avoid, pass))
                continue;
            any = 1;
            double s;
            unsigned n;
            if (synor_perfmodel_estimate(pm, t->kernel->name, fp, d->name, &s, &n) != 0) {
                double l = load_of(d);
                if (!uncal || l < uncal_load) {
                    uncal = d;
                    uncal_load = l;
                }
                continue;
            }
            est[i] = s;
            double q = (double)atomic_load_explicit(&d->queued_ns, memory_order_relaxed) * 1e-9;
            double x = (double)synor__data_missing_bytes(t, d->node) / rt->nodes[d->node].bandwidth;
            xfer[i] = x;
            fin[i] = q / (double)d->nworkers + x + s;
            if (fin[i] < best_fin) {
                best_fin = fin[i];
                fastest = d;
            }
        }
    }
    if (uncal) { /* calibrate first */
        atomic_fetch_add_explicit(&rt->n_calibrating, 1, memory_order_relaxed);
        return uncal;
    }
    if (!fastest)
        return NULL;
    synor__device *pick = fastest;
    if (rt->cfg.policy == SYNOR_PLACE_ENERGY || rt->cfg.policy == SYNOR_PLACE_MONEY) {
        /* Ranking only (no money is accounted here): expected joules, or
         * expected micro-units, of running the task on each device. Ties,
         * such as devices without rates, keep the earliest finish. */
        int energy = rt->cfg.policy == SYNOR_PLACE_ENERGY;
#define RATE(d) (energy ? (d)->watts : (double)(d)->price_micro_hour)
        double best_cost = est[fastest->index] * RATE(fastest);
        for (unsigned i = 0; i < rt->ndevices; i++) {
            synor__device *d = &rt->devices[i];
            if (est[i] < 0 || fin[i] > 2 * best_fin)
                continue;
            double cost = est[i] * RATE(d);
            if (cost < best_cost) {
                best_cost = cost;
                pick = d;
            }
        }
#undef RATE
    } else if (rt->cfg.policy == SYNOR_PLACE_MIX) {
        double best = INFINITY;
        for (unsigned i = 0; i < rt->ndevices; i++) {
            if (est[i] < 0)
                continue;
            double score = rt->cfg.mix.alpha * fin[i] + rt->cfg.mix.beta * xfer[i] +
                           rt->cfg.mix.gamma * est[i] * rt->devices[i].watts;
            if (score < best) {
                best = score;
                pick = &rt->devices[i];
            }
        }
    }
    t->expect_ns = (int64_t)(est[pick->index] * 1e9);
    return pick;
}

/* May a worker of `thief` take t from the queue of `victim`, where the
 * model placed it? Only if thief's own time for it (plus copying its
 * inputs) ends before victim's backlog drains; without a model for both,
 * yes (work stealing as before). */
int synor__place_steal_helps(synor_runtime *rt, const synor__task *t, synor__device *victim,
                             synor__device *thief)
{
    if (!rt->cfg.perfmodel || rt->cfg.policy == SYNOR_PLACE_LOAD || !t->expect_ns)
        return 1;
    double s;
    unsigned n;
    if (synor_perfmodel_estimate(rt->cfg.perfmodel, t->kernel->name, synor__task_footprint(t),
                                 thief->name, &s, &n) != 0)
        return 1;
    double mine = s + (double)synor__data_missing_bytes(t, thief->node) /
                          rt->nodes[thief->node].bandwidth;
    double theirs = (double)atomic_load_explicit(&victim->queued_ns, memory_order_relaxed) *
                    1e-9 / (double)victim->nworkers;
    return mine < theirs;
}

/* The task left the queue of the device it was placed on. */
void synor__place_done(synor__device *d, synor__task *t)
{
    if (t->expect_ns)
        atomic_fetch_sub_explicit(&d->queued_ns, t->expect_ns, memory_order_relaxed);
    t->expect_ns = 0;
    t->queued_dev = -1;
}

/* ----------------------------------------------------------- rebalance */

/* Expected queued work per worker: model seconds when there is a model,
 * else tasks. */
static double backlog(const synor_runtime *rt, synor__device *d)
{
    if (rt->cfg.perfmodel && rt->cfg.policy != SYNOR_PLACE_LOAD)
        return (double)atomic_load_explicit(&d->queued_ns, memory_order_relaxed) * 1e-9 /
               (double)d->nworkers;
    return load_of(d);
}

unsigned synor__place_rebalance(synor_runtime *rt)
{
    unsigned moved = 0;
    if (rt->ndevices < 2 || pthread_mutex_trylock(&rt->rebalance_lock) != 0)
        return 0;
    for (unsigned round = 0; round < 64; round++) {
        synor__device *hi = NULL, *lo = NULL;
        double bh = 0, bl = 0;
        for (unsigned i = 0; i < rt->ndevices; i++) {
            synor__device *d = &rt->devices[i];
            if (atomic_load_explicit(&d->stopped, memory_order_relaxed))
                continue;
            double b = backlog(rt, d);
            if (!hi || b > bh)
                hi = d, bh = b;
            if (!lo || b < bl)
                lo = d, bl = b;
        }
        if (!hi || hi == lo)
            break;
        synor__task *t = synor__pq_pop_last(&hi->q, lo->impl_bit);
        if (!t)
            break;
        /* Would the move help? The task is the last of hi's queue, so it
         * finishes there when hi's backlog drains (bh); on lo it starts
         * after lo's backlog and takes lo's own time for it, plus the copy
         * of its inputs. With a model, lo's time is lo's estimate, not
         * hi's: a task a GPU runs in a millisecond must not move to a CPU
         * core that needs a second for it because the GPU's queue is 20 ms
         * long (seen on an H200: every such move became the run's tail). */
        double cost = 1.0 / (double)hi->nworkers, gain;
        int model = rt->cfg.perfmodel && rt->cfg.policy != SYNOR_PLACE_LOAD;
        double lo_s = -1;
        if (model) {
            unsigned n;
            if (synor_perfmodel_estimate(rt->cfg.perfmodel, t->kernel->name,
                                         synor__task_footprint(t), lo->name, &lo_s, &n) != 0)
                lo_s = -1;
        }
        if (model && lo_s >= 0)
            cost = lo_s + (double)synor__data_missing_bytes(t, lo->node) /
                              rt->nodes[lo->node].bandwidth;
        else if (model && t->expect_ns)
            cost = (double)t->expect_ns * 1e-9 / (double)hi->nworkers;
        gain = bh - (bl + cost);
        if (gain > 0 && lo_s >= 0 && t->expect_ns &&
            (rt->cfg.policy == SYNOR_PLACE_ENERGY || rt->cfg.policy == SYNOR_PLACE_MONEY)) {
            /* Those policies accepted a later finish for a lower cost: a
             * move must not cost more than staying. */
            int energy = rt->cfg.policy == SYNOR_PLACE_ENERGY;
            double rh = energy ? hi->watts : (double)hi->price_micro_hour;
            double rl = energy ? lo->watts : (double)lo->price_micro_hour;
            if (lo_s * rl > (double)t->expect_ns * 1e-9 * rh)
                gain = 0;
        }
        synor__place_done(hi, t);
        synor__device *dst = gain > 0 ? lo : hi;
        if (dst == lo && lo_s >= 0)
            t->expect_ns = (int64_t)(lo_s * 1e9);
        if (t->expect_ns)
            atomic_fetch_add_explicit(&dst->queued_ns, t->expect_ns, memory_order_relaxed);
        t->queued_dev = (int)dst->index;
        synor__pq_push(&dst->q, t);
        synor__ec_notify(&dst->ec, 0);
        if (dst == hi)
            break;
        moved++;
    }
    pthread_mutex_unlock(&rt->rebalance_lock);
    if (moved)
        atomic_fetch_add_explicit(&rt->n_rebalanced, moved, memory_order_relaxed);
    return moved;
}

unsigned synor_runtime_rebalance(synor_runtime *rt) { return rt ? synor__place_rebalance(rt) : 0; }

/* ------------------------------------------------------------- devices */

unsigned synor_runtime_device_count(const synor_runtime *rt) { return rt ? rt->ndevices : 0; }

int synor_runtime_device_get(const synor_runtime *rt, unsigned i, synor_runtime_device_info *out)
{
    if (!rt || !out || i >= rt->ndevices)
        return synor__error(SYNOR_EINVAL, "synor_runtime_device_get: no device %u", i);
    const synor__device *d = &rt->devices[i];
    memset(out, 0, sizeof *out);
    synor__strlcpy(out->name, d->name, sizeof out->name);
    synor__strlcpy(out->product, d->product, sizeof out->product);
    out->kind = d->kind;
    out->backend = d->backend == SYNOR__BACKEND_HOST     ? "host"
                   : d->backend == SYNOR__BACKEND_TEST   ? "test"
                   : d->backend == SYNOR__BACKEND_OPENCL ? "opencl"
                                                         : "cuda";
    out->workers = d->nworkers;
    out->hw_threads = d->backend == SYNOR__BACKEND_HOST ? rt->nthreads : 0;
    out->memory_node = d->node;
    out->memory_capacity = d->node ? rt->nodes[d->node].capacity : 0;
    out->stopped = atomic_load(&((synor__device *)(uintptr_t)d)->stopped);
    out->preempt_deadline_ns =
        i < SYNOR__MAX_DEVICES ? atomic_load(&((synor_runtime *)(uintptr_t)rt)->pre_deadline[i]) : 0;
    return 0;
}

unsigned synor_runtime_host_opencl_device(const synor_runtime *rt, synor_runtime_device_info *out)
{
    for (unsigned i = 1; rt && i < rt->ndevices; i++)
        if (rt->devices[i].backend == SYNOR__BACKEND_OPENCL &&
            rt->devices[i].kind == SYNOR_KIND_CPU)
            return out && synor_runtime_device_get(rt, i, out) ? 0 : i;
    return 0;
}

int synor_runtime_find_host_opencl(unsigned cpu_workers, char *name, size_t nsize, char *product,
                                   size_t psize)
{
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.opencl = SYNOR_OPENCL_ALL;
    cfg.cpu_workers = cpu_workers;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&cfg, &rt))
        return 0;
    synor_runtime_device_info info;
    int found = synor_runtime_host_opencl_device(rt, &info) != 0;
    if (found) {
        snprintf(name, nsize, "%s", info.name);
        snprintf(product, psize, "%s", info.product);
    }
    synor_runtime_destroy(rt);
    return found;
}

int synor_runtime_device_set_rates(synor_runtime *rt, unsigned i, double watts,
                                   int64_t price_micro_per_hour)
{
    if (!rt || i >= rt->ndevices || !(watts >= 0) || watts > 1e7 || price_micro_per_hour < 0)
        return synor__error(SYNOR_EINVAL,
                            "synor_runtime_device_set_rates: device %u, %g W, %lld micro-units "
                            "per hour",
                            i, watts, (long long)price_micro_per_hour);
    rt->devices[i].watts = watts;
    rt->devices[i].price_micro_hour = price_micro_per_hour;
    return 0;
}

void synor__device_disable(synor__device *d, const char *why)
{
    atomic_store(&d->stopped, 1);
    size_t l = strlen(d->name);
    snprintf(d->name + l, sizeof d->name - l, " (%s)", why);
}

int synor_runtime_device_stop(synor_runtime *rt, unsigned i)
{
    if (!rt || i >= rt->ndevices || i == 0)
        return synor__error(SYNOR_EINVAL,
                            "synor_runtime_device_stop: device %u (1..%u; the host cannot stop)", i,
                            rt ? rt->ndevices - 1 : 0);
    synor__device *d = &rt->devices[i];
    atomic_store(&d->stopped, 1);
    synor__ec_notify(&d->ec, 1); /* its workers wake up and hand their tasks over */
    return 0;
}
