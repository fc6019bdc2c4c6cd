/* calibrate.c - the local fabric's task times from the performance model
 * that real runs record (synor_whatif_calibrate, synor/whatif.h).
 *
 * A real run records, per (kernel, footprint, device), the median of its
 * tasks' kernel times (synor/perfmodel.h); synor_exec_task_keys says which
 * entry each task of a workload would record into. So a task that ran here
 * before gets its measured time. One that did not gets the roofline of its
 * device (the measured peak and bandwidth) scaled by how far this kernel's
 * measured tasks are from their rooflines - the median of measured /
 * roofline over the workload's tasks that have an entry - or, for a kernel
 * never measured, by the median over all kernels; with no entry at all,
 * the plain roofline. The times go into a copy of the workload as explicit
 * cost rows (workload.h), so the planners and the simulator use them as
 * they are: nothing below this layer knows about calibration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "synor/cost.h"
#include "synor/exec.h"
#include "synor/whatif.h"

/* The runtime's name of a local fabric device (whose profile is one that
 * synor_whatif_fabric made from detection): "cpu" for the first host CPU,
 * "cudaK" for a CUDA GPU, the name itself for a run fabric's device
 * ("local-run-opencl0": "opencl0"); NULL for any other device (added, swapped, or a
 * second CPU socket, which the runtime does not model apart). */
static const char *runtime_name(const synor_fabric_device *fd, char *buf, size_t size)
{
    const char *id = fd->profile ? fd->profile->id : "";
    unsigned k;
    int used = 0;
    if (!strncmp(id, "local-run-", 10)) { /* synor_whatif_run_fabric: the runtime's name */
        if (sscanf(id + 10, "cpu-w%u%n", &k, &used) == 1 && !id[10 + used])
            return "cpu"; /* one of the CPU's workers */
        snprintf(buf, size, "%s", id + 10);
        return buf;
    }
    if (sscanf(id, "local-cpu%u%n", &k, &used) == 1 && (!id[used] || id[used] == '-'))
        return k == 0 ? "cpu" : NULL;
    if (sscanf(id, "local-cuda%u%n", &k, &used) == 1 && !id[used]) {
        snprintf(buf, size, "cuda%u", k);
        return buf;
    }
    return NULL;
}

/* The model's calibrated entries, sorted by (operation, device,
 * footprint), with their window means. */
typedef struct pm_row {
    const char *op, *device;
    uint64_t fp;
    double mean, median; /* of the window */
} pm_row;

typedef struct pm_table {
    pm_row *v;
    size_t n, cap;
    int failed;
} pm_table;

static int cmp_row(const void *a, const void *b)
{
    const pm_row *x = a, *y = b;
    int c = strcmp(x->op, y->op);
    if (!c)
        c = strcmp(x->device, y->device);
    return c ? c : (x->fp > y->fp) - (x->fp < y->fp);
}

static int collect(const synor_perfmodel_entry *e, void *user)
{
    pm_table *t = user;
    if (!e->calibrated)
        return 0;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        pm_row *v = synor__realloc(t->v, cap * sizeof *v);
        if (!v) {
            t->failed = 1;
            return 1;
        }
        t->v = v;
        t->cap = cap;
    }
    /* the strings live as long as the snapshot: copy them */
    char *op = synor__strdup(e->op), *dev = synor__strdup(e->device);
    if (!op || !dev) {
        synor__free(op);
        synor__free(dev);
        t->failed = 1;
        return 1;
    }
    t->v[t->n++] = (pm_row){op, dev, e->footprint, e->window_mean, e->estimate};
    return 0;
}

static void table_free(pm_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        synor__free_const(t->v[i].op);
        synor__free_const(t->v[i].device);
    }
    synor__free(t->v);
}

/* The window mean of (op, device, fp); NAN when the model has none. */
static double lookup(const pm_table *t, const char *op, const char *device, uint64_t fp)
{
    pm_row key = {op, device, fp, 0, 0};
    const pm_row *r = t->n ? bsearch(&key, t->v, t->n, sizeof *t->v, cmp_row) : NULL;
    return r ? r->mean : NAN;
}

/* The window median of (op, device, fp); NAN when the model has none. */
static double lookup_median(const pm_table *t, const char *op, const char *device, uint64_t fp)
{
    pm_row key = {op, device, fp, 0, 0};
    const pm_row *r = t->n ? bsearch(&key, t->v, t->n, sizeof *t->v, cmp_row) : NULL;
    return r ? r->median : NAN;
}

/* Whether the model has an entry of op (NULL: any) on device, or (other
 * 1) on a device other than it. */
static int has_entry(const pm_table *t, const char *op, const char *device, int other)
{
    for (size_t i = 0; i < t->n; i++)
        if ((!op || !strcmp(t->v[i].op, op)) && !strcmp(t->v[i].device, device) == !other)
            return 1;
    return 0;
}

/* The distinct devices of the model's entries (the host's side aside)
 * that are none of the fabric's runtime names (rt_name[0..nd), NULL for a
 * device that is not this machine's). */
static size_t other_devices(const pm_table *t, const char *const *rt_name, size_t nd)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const char *dev = t->v[i].device;
        int known = !strcmp(dev, SYNOR_PERFMODEL_HOST);
        for (size_t d = 0; d < nd && !known; d++)
            known = rt_name[d] && !strcmp(rt_name[d], dev);
        for (size_t j = 0; j < i && !known; j++) /* counted already */
            known = !strcmp(t->v[j].device, dev);
        n += !known;
    }
    return n;
}

/* A copy of w whose task i has the cost row rows[i * nd .. + nd) in the
 * fabric's device order (a task that had a row of its own keeps it). */
static int copy_with_rows(const synor_workload *w, const double *rows, size_t nd,
                          const double host[3], synor_workload **out)
{
    synor_workload *c = NULL;
    int rc = synor_workload_create(synor_workload_name(w), &c);
    if (!rc)
        rc = synor_workload_set_host(c, host[0], host[1], host[2]);
    for (size_t di = 0; !rc && di < synor_workload_data_count(w); di++) {
        const synor_data *d = synor_workload_data(w, di);
        size_t idx;
        rc = synor_workload_add_data(c, d->name, d->bytes, &idx);
    }
    for (size_t ti = 0; !rc && ti < synor_workload_count(w); ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        synor_task_desc desc = {.id = t->id,
                                .op = t->op,
                                .priority = t->priority,
                                .deps = t->deps,
                                .n_deps = t->n_deps,
                                .produces = t->produces,
                                .n_produces = t->n_produces,
                                .consumes = t->consumes,
                                .n_consumes = t->n_consumes,
                                .workspace = t->workspace,
                                .has_preferred = t->has_preferred,
                                .has_fallback = t->has_fallback,
                                .preferred = t->preferred,
                                .fallback = t->fallback,
                                .dep_comm = t->dep_comm,
                                .group = t->group};
        if (t->n_exec) {
            desc.exec_s = t->exec_s;
            desc.exec_dev = t->exec_dev;
            desc.n_exec = t->n_exec;
        } else {
            desc.exec_s = rows + ti * nd;
            desc.n_exec = nd;
        }
        size_t idx;
        rc = synor_workload_add_task(c, &desc, &idx);
    }
    if (!rc)
        rc = synor_workload_finish(c);
    if (rc) {
        synor_workload_destroy(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* The handles a real run registers for w's data: one per datum, but a
 * later version of a tile ("X[i,j]#k", k >= 1, as synor_exec_tiled_workload
 * names them) is the same handle as its version 0. */
static size_t handles_of(const synor_workload *w)
{
    size_t n = 0;
    for (size_t i = 0; i < synor_workload_data_count(w); i++) {
        const char *h = strrchr(synor_workload_data(w, i)->name, '#');
        char *end = NULL;
        unsigned long k = h && h[1] >= '0' && h[1] <= '9' ? strtoul(h + 1, &end, 10) : 0;
        n += !(k > 0 && end && !*end);
    }
    return n;
}

static int calibrate(const synor_fabric *f, const synor_workload *w, const char *const *keys_k,
                     const uint64_t *keys_fp, const synor_perfmodel *pm, synor_workload **out,
                     synor_whatif_calibration *info)
{
    synor_whatif_calibration st;
    memset(&st, 0, sizeof st);
    size_t nt = synor_workload_count(w), nd = synor_fabric_device_count(f);
    st.tasks = nt;
    const char **kernel = synor__calloc(nt ? nt : 1, sizeof *kernel);
    uint64_t *fp = synor__calloc(nt ? nt : 1, sizeof *fp);
    size_t cells = nt * nd > 0 ? nt * nd : 1;
    double *rows = synor__calloc(cells, sizeof *rows);
    double *meas = synor__calloc(cells, sizeof *meas); /* NAN: no entry */
    double *ratio = synor__calloc(cells, sizeof *ratio);
    const char **rt_name = synor__calloc(nd ? nd : 1, sizeof *rt_name);
    char(*names)[32] = synor__calloc(nd ? nd : 1, sizeof *names);
    double *dispatch = synor__calloc(nd ? nd : 1, sizeof *dispatch); /* 0: none */
    synor_cost *roof = NULL;
    pm_table tab = {0};
    int rc = 0;
    if (!kernel || !fp || !rows || !meas || !ratio || !rt_name || !names || !dispatch) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = synor_cost_create(w, f, &roof)))
        goto out;
    if (pm && (synor_perfmodel_foreach(pm, collect, &tab) || tab.failed)) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    if (tab.n)
        qsort(tab.v, tab.n, sizeof *tab.v, cmp_row);
    st.dispatch_s = NAN;
    for (size_t d = 0; d < nd; d++) {
        if (!(rt_name[d] = runtime_name(synor_fabric_device_at(f, d), names[d], sizeof names[d])))
            continue;
        st.local_devices++;
        double m = lookup(&tab, SYNOR_PERFMODEL_DISPATCH, rt_name[d], 0);
        dispatch[d] = isnan(m) ? 0 : m;
        if (isnan(st.dispatch_s) && !isnan(m))
            st.dispatch_s = m;
    }
    st.other_devices = other_devices(&tab, rt_name, nd);
    /* A workload that cannot run here has no entries to look up. */
    int keyed = 0;
    if (pm && keys_k) {
        memcpy(kernel, keys_k, nt * sizeof *kernel);
        memcpy(fp, keys_fp, nt * sizeof *fp);
        keyed = 1;
    } else if (pm) {
        keyed = synor_exec_task_keys(w, kernel, fp) == 0;
    }
    size_t nr = 0;
    for (size_t ti = 0; ti < nt; ti++)
        for (size_t d = 0; d < nd; d++) {
            double s = keyed && rt_name[d] ? lookup(&tab, kernel[ti], rt_name[d], fp[ti]) : NAN;
            meas[ti * nd + d] = s;
            double r = synor_cost_time(roof, ti, d);
            if (!isnan(s) && r > 0 && isfinite(r))
                ratio[nr++] = s / r;
        }
    st.overall_factor = synor__median(ratio, nr);
    /* Per distinct kernel (a few), its factor. */
    const char *kname[64];
    double kfac[64];
    size_t nkern = 0;
    for (size_t ti = 0; keyed && ti < nt; ti++) {
        size_t k = 0;
        while (k < nkern && strcmp(kname[k], kernel[ti]))
            k++;
        if (k < nkern || nkern == 64)
            continue;
        size_t nk = 0;
        for (size_t u = ti; u < nt; u++) {
            if (strcmp(kernel[u], kernel[ti]))
                continue;
            for (size_t e = 0; e < nd; e++) {
                double r = synor_cost_time(roof, u, e);
                if (!isnan(meas[u * nd + e]) && r > 0 && isfinite(r))
                    ratio[nk++] = meas[u * nd + e] / r;
            }
        }
        kname[nkern] = kernel[ti];
        kfac[nkern++] = synor__median(ratio, nk);
    }
    for (size_t ti = 0; ti < nt; ti++) {
        double kfactor = NAN;
        for (size_t k = 0; keyed && k < nkern; k++)
            if (!strcmp(kname[k], kernel[ti]))
                kfactor = kfac[k];
        for (size_t d = 0; d < nd; d++) {
            double r = synor_cost_time(roof, ti, d), *row = &rows[ti * nd + d];
            *row = r;
            if (!rt_name[d] || synor_workload_task(w, ti)->n_exec || !isfinite(r))
                continue;
            /* A device that shares the host's cores and has entries, but
             * none of this kernel that another device has: the runtime
             * never ran it there after calibrating every device it can
             * (potrf, trsm, syrk have a CPU function only). */
            if (keyed && synor_fabric_device_at(f, d)->share_cpu_slowdown > 0 &&
                isnan(meas[ti * nd + d]) && has_entry(&tab, NULL, rt_name[d], 0) &&
                !has_entry(&tab, kernel[ti], rt_name[d], 0) &&
                has_entry(&tab, kernel[ti], rt_name[d], 1)) {
                *row = INFINITY;
                continue;
            }
            /* measured kernel times, and what the runtime adds to each */
            if (!isnan(meas[ti * nd + d])) {
                *row = meas[ti * nd + d] + dispatch[d];
                st.from_model++;
            } else if (!isnan(kfactor)) {
                *row = r * kfactor + dispatch[d];
                st.from_kernel_fit++;
            } else if (!isnan(st.overall_factor)) {
                *row = r * st.overall_factor + dispatch[d];
                st.from_overall_fit++;
            } else {
                st.from_roofline++;
            }
        }
    }
    /* The host's side of the call: the mean submission, registration and
     * unregistration of the data's handles (many per call: their sum is
     * about the count x the mean, as for kernels), and the wait's wake-up,
     * once per call: its median (the median call has a typical one; a
     * stalled wake-up, a few ms on a busy machine, would otherwise be
     * charged to every call). */
    if (st.local_devices && tab.n) {
        double sub = lookup(&tab, SYNOR_PERFMODEL_SUBMIT, SYNOR_PERFMODEL_HOST, 0);
        double reg = lookup(&tab, SYNOR_PERFMODEL_REGISTER, SYNOR_PERFMODEL_HOST, 0);
        double unreg = lookup(&tab, SYNOR_PERFMODEL_UNREGISTER, SYNOR_PERFMODEL_HOST, 0);
        double wait = lookup_median(&tab, SYNOR_PERFMODEL_WAIT, SYNOR_PERFMODEL_HOST, 0);
        /* a library call (keyed: synor_exec_tiled_workload's graphs)
         * registers and unregisters its handles inside the call; a whole
         * workload's time (synor_exec_workload) starts after registering
         * and stops at wait_all's return */
        st.handles = keys_k ? handles_of(w) : 0;
        st.host_before_s = isnan(reg) ? 0 : reg * (double)st.handles;
        st.host_per_task_s = isnan(sub) ? 0 : sub;
        st.host_after_s = (isnan(wait) ? 0 : wait) + (isnan(unreg) ? 0 : unreg * (double)st.handles);
    }
    const double host[3] = {st.host_before_s, st.host_per_task_s, st.host_after_s};
    rc = copy_with_rows(w, rows, nd, host, out);
out:
    synor_cost_destroy(roof);
    synor__free(kernel);
    synor__free(fp);
    synor__free(rows);
    synor__free(meas);
    synor__free(ratio);
    synor__free(rt_name);
    synor__free(names);
    synor__free(dispatch);
    table_free(&tab);
    if (!rc && info)
        *info = st;
    return rc;
}

int synor_whatif_calibrate(const synor_fabric *f, const synor_workload *w,
                           const synor_perfmodel *pm, synor_workload **out,
                           synor_whatif_calibration *info)
{
    return calibrate(f, w, NULL, NULL, pm, out, info);
}

int synor_whatif_calibrate_keyed(const synor_fabric *f, const synor_workload *w,
                                 const char *const *kernels, const uint64_t *footprints,
                                 const synor_perfmodel *pm, synor_workload **out,
                                 synor_whatif_calibration *info)
{
    if (!kernels || !footprints)
        return synor__error(SYNOR_EINVAL, "calibrate: no kernels or footprints");
    return calibrate(f, w, kernels, footprints, pm, out, info);
}

int synor_whatif_calibrate_sharing(synor_fabric *f, const synor_workload *w,
                                   const char *const *kernels, const uint64_t *footprints,
                                   const synor_perfmodel *pm, size_t *set)
{
    if (set)
        *set = 0;
    if (!f || !w || !pm || (!kernels) != (!footprints))
        return synor__error(SYNOR_EINVAL, "synor_whatif_calibrate_sharing: no fabric, workload or "
                                          "model, or kernels without footprints");
    size_t nt = synor_workload_count(w), nd = synor_fabric_device_count(f);
    const char **kernel = synor__calloc(nt ? nt : 1, sizeof *kernel);
    uint64_t *fp = synor__calloc(nt ? nt : 1, sizeof *fp);
    pm_table tab = {0};
    int rc = 0;
    if (!kernel || !fp || synor_perfmodel_foreach(pm, collect, &tab) || tab.failed) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    if (tab.n)
        qsort(tab.v, tab.n, sizeof *tab.v, cmp_row);
    if (kernels) {
        memcpy(kernel, kernels, nt * sizeof *kernel);
        memcpy(fp, footprints, nt * sizeof *fp);
    } else if (synor_exec_task_keys(w, kernel, fp) != 0) {
        goto out; /* cannot run here: nothing measured */
    }
    for (size_t d = 0; d < nd; d++) {
        const synor_fabric_device *fd = synor_fabric_device_at(f, d);
        char buf[32];
        const char *name = runtime_name(fd, buf, sizeof buf);
        if (!(fd->share_cpu_slowdown > 0) || !name)
            continue;
        double disp = lookup(&tab, SYNOR_PERFMODEL_DISPATCH, name, 0), med = 0, cost = 0;
        if (isnan(disp))
            disp = 0;
        for (size_t ti = 0; ti < nt; ti++) {
            double a = lookup(&tab, kernel[ti], name, fp[ti]);
            double m = lookup_median(&tab, kernel[ti], name, fp[ti]);
            if (isnan(a) || isnan(m) || synor_workload_task(w, ti)->n_exec)
                continue;
            med += m;
            cost += a + disp;
        }
        if (!(med > 0 && cost > 0))
            continue;
        double sc = med / cost;
        sc = sc < 1e-6 ? 1e-6 : sc > 1000 ? 1000 : sc;
        /* no contention charged: the times recorded beside each other hold
         * it, on both sides */
        if ((rc = synor_fabric_set_host_sharing(f, d, 1, 1)) ||
            (rc = synor_fabric_set_share_place_scale(f, d, sc)))
            goto out;
        if (set)
            (*set)++;
    }
out:
    synor__free(kernel);
    synor__free(fp);
    table_free(&tab);
    return rc;
}

double synor_whatif_device_dispatch(const synor_fabric *f, size_t d, const synor_perfmodel *pm)
{
    if (!f || !pm || d >= synor_fabric_device_count(f))
        return 0;
    char buf[32];
    const char *name = runtime_name(synor_fabric_device_at(f, d), buf, sizeof buf);
    pm_table tab = {0};
    double m = NAN;
    if (name && synor_perfmodel_foreach(pm, collect, &tab) == 0 && !tab.failed) {
        if (tab.n)
            qsort(tab.v, tab.n, sizeof *tab.v, cmp_row);
        m = lookup(&tab, SYNOR_PERFMODEL_DISPATCH, name, 0);
    }
    table_free(&tab);
    return isnan(m) ? 0 : m;
}
