/* trace.c - execution traces: building, JSON writing and reading
 * (synor-trace/1). A trace stands alone: it carries the names of its
 * devices, tasks and links, so a report can be made from the file without
 * the workload or the fabric. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "json/json.h"
#include "sim/trace_internal.h"

synor__trace *synor__trace_new(void)
{
    synor__trace *tr = synor__calloc(1, sizeof *tr);
    return tr;
}

const char *synor__trace_str(synor__trace *tr, const char *s)
{
    if (tr->n_strings == tr->str_cap) {
        size_t cap = tr->str_cap ? tr->str_cap * 2 : 64;
        char **p = synor__realloc(tr->strings, cap * sizeof *p);
        if (!p)
            return NULL;
        tr->strings = p;
        tr->str_cap = cap;
    }
    char *c = synor__strdup(s ? s : "");
    if (c)
        tr->strings[tr->n_strings++] = c;
    return c;
}

int synor__trace_devices(synor__trace *tr, size_t n)
{
    tr->dev = synor__calloc(n ? n : 1, sizeof *tr->dev);
    if (!tr->dev)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    tr->t.n_devices = n;
    tr->t.devices = tr->dev;
    return 0;
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 256;
    void *q = synor__realloc(*p, c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

synor_trace_task *synor__trace_add_task(synor__trace *tr)
{
    if (grow((void **)&tr->task, &tr->task_cap, tr->t.n_tasks, sizeof *tr->task))
        return NULL;
    tr->t.tasks = tr->task;
    synor_trace_task *k = &tr->task[tr->t.n_tasks++];
    memset(k, 0, sizeof *k);
    return k;
}

synor_trace_transfer *synor__trace_add_transfer(synor__trace *tr)
{
    if (grow((void **)&tr->xfer, &tr->xfer_cap, tr->t.n_transfers, sizeof *tr->xfer))
        return NULL;
    tr->t.transfers = tr->xfer;
    synor_trace_transfer *x = &tr->xfer[tr->t.n_transfers++];
    memset(x, 0, sizeof *x);
    return x;
}

synor_trace_mark *synor__trace_add_mark(synor__trace *tr, const char *name, size_t device,
                                        double start, double end, const char *detail)
{
    if (grow((void **)&tr->mark, &tr->mark_cap, tr->t.n_marks, sizeof *tr->mark))
        return NULL;
    tr->t.marks = tr->mark;
    synor_trace_mark *m = &tr->mark[tr->t.n_marks];
    memset(m, 0, sizeof *m);
    if (!(m->name = synor__trace_str(tr, name)) || !(m->detail = synor__trace_str(tr, detail)))
        return NULL;
    m->device = device;
    m->start = start;
    m->end = end;
    tr->t.n_marks++;
    return m;
}

/* Stable merge sort by start (qsort is not stable, and equal starts must
 * keep their creation order for byte-identical traces). */
#define DEFINE_SORT(NAME, T)                                                        \
    static void NAME(T *a, T *tmp, size_t n)                                        \
    {                                                                               \
        if (n < 2)                                                                  \
            return;                                                                 \
        size_t h = n / 2;                                                           \
        NAME(a, tmp, h);                                                            \
        NAME(a + h, tmp, n - h);                                                    \
        size_t i = 0, j = h, k = 0;                                                 \
        while (i < h && j < n)                                                      \
            tmp[k++] = a[j].start < a[i].start ? a[j++] : a[i++];                   \
        while (i < h)                                                               \
            tmp[k++] = a[i++];                                                      \
        while (j < n)                                                               \
            tmp[k++] = a[j++];                                                      \
        memcpy(a, tmp, n * sizeof *a);                                              \
    }
DEFINE_SORT(sort_tasks, synor_trace_task)
DEFINE_SORT(sort_xfers, synor_trace_transfer)
DEFINE_SORT(sort_marks, synor_trace_mark)

int synor__trace_sort(synor__trace *tr)
{
    size_t n = tr->t.n_tasks > tr->t.n_transfers ? tr->t.n_tasks : tr->t.n_transfers;
    n = n > tr->t.n_marks ? n : tr->t.n_marks;
    size_t sz = sizeof(synor_trace_task) > sizeof(synor_trace_transfer)
                    ? sizeof(synor_trace_task)
                    : sizeof(synor_trace_transfer);
    sz = sz > sizeof(synor_trace_mark) ? sz : sizeof(synor_trace_mark);
    void *tmp = synor__malloc((n ? n : 1) * sz);
    if (!tmp)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    sort_tasks(tr->task, tmp, tr->t.n_tasks);
    sort_xfers(tr->xfer, tmp, tr->t.n_transfers);
    sort_marks(tr->mark, tmp, tr->t.n_marks);
    synor__free(tmp);
    return 0;
}

int synor__trace_finish(synor__trace *tr, const synor_workload *w, const synor_fabric *fab,
                        const char *strategy, double makespan, const double *busy,
                        uint64_t events, const double *held, const int64_t *money)
{
    synor_trace *t = &tr->t;
    size_t d = synor_fabric_device_count(fab);
    if (!(t->workload = synor__trace_str(tr, synor_workload_name(w))) ||
        !(t->fabric = synor__trace_str(tr, synor_fabric_name(fab))) ||
        !(t->strategy = synor__trace_str(tr, strategy)) ||
        !(t->currency = synor__trace_str(tr, synor_fabric_currency(fab))) ||
        synor__trace_devices(tr, d))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    t->makespan = makespan;
    unsigned char *used = synor__calloc(d, 1);
    if (!used)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t k = 0; k < t->n_tasks; k++) {
        synor_trace_task *x = &tr->task[k];
        long i = synor_workload_find_task(w, x->id);
        const synor_task *wt = synor_workload_task(w, (size_t)i);
        char op[64];
        snprintf(op, sizeof op, "%s%s", wt->op.backward ? "d/" : "",
                 synor_op_type_name(wt->op.type));
        if (!(x->id = synor__trace_str(tr, x->id)) || !(x->op = synor__trace_str(tr, op))) {
            synor__free(used);
            return synor__error(SYNOR_ENOMEM, "out of memory");
        }
        t->energy_active += x->energy;
        used[x->device] = 1;
    }
    for (size_t k = 0; k < t->n_transfers; k++) {
        synor_trace_transfer *x = &tr->xfer[k];
        if (!(x->data = synor__trace_str(tr, x->data)) ||
            !(x->link = synor__trace_str(tr, x->link))) {
            synor__free(used);
            return synor__error(SYNOR_ENOMEM, "out of memory");
        }
    }
    for (size_t p = 0; p < d; p++) {
        const synor_fabric_device *fd = synor_fabric_device_at(fab, p);
        synor_trace_device *dv = &tr->dev[p];
        if (!(dv->name = synor__trace_str(tr, fd->name)) ||
            !(dv->product = synor__trace_str(tr, fd->profile->name)) ||
            !(dv->backend = synor__trace_str(tr, synor_device_backend(fd->dev))) ||
            !(dv->kind = synor__trace_str(tr, synor_kind_name(synor_device_kind(fd->dev))))) {
            synor__free(used);
            return synor__error(SYNOR_ENOMEM, "out of memory");
        }
        dv->simulated = synor_device_is_simulated(fd->dev);
        dv->idle_watts = synor_device_caps(fd->dev)->idle_watts;
        dv->price_micro = fd->price_micro;
        double idle = (held ? held[p] : makespan) - busy[p];
        t->energy_idle += dv->idle_watts * (idle > 0 ? idle : 0);
        if (used[p])
            t->money_micro = synor_money_add(
                t->money_micro,
                money ? money[p] : synor_money_for_seconds(fd->price_micro, makespan));
    }
    synor__free(used);
    t->energy_basis = SYNOR_BASIS_MODEL;
    t->money_basis = SYNOR_BASIS_MODEL;
    t->events = events;
    return synor__trace_sort(tr);
}

void synor_trace_destroy(synor_trace *t)
{
    synor__trace *tr = (synor__trace *)t;
    if (!tr)
        return;
    for (size_t i = 0; i < tr->n_strings; i++)
        synor__free(tr->strings[i]);
    synor__free(tr->strings);
    synor__free(tr->dev);
    synor__free(tr->task);
    synor__free(tr->xfer);
    synor__free(tr->mark);
    synor__free(tr);
}

static const char *const basis_names[] = {"none", "model", "rated", "measured"};

const char *synor_trace_basis_name(synor_trace_basis b)
{
    return (unsigned)b < SYNOR__ARRAY_LEN(basis_names) ? basis_names[b] : NULL;
}

int synor_trace_basis_from_name(const char *name)
{
    for (size_t i = 0; name && i < SYNOR__ARRAY_LEN(basis_names); i++)
        if (strcmp(name, basis_names[i]) == 0)
            return (int)i;
    return -1;
}

/* ---------------------------------------------------------------- writer */

char *synor_trace_to_json(const synor_trace *t)
{
    synor__buf b;
    synor__jw w;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, 1);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "format");
    synor__jw_str(&w, "synor-trace/1");
    synor__jw_key(&w, "workload");
    synor__jw_str(&w, t->workload);
    synor__jw_key(&w, "fabric");
    synor__jw_str(&w, t->fabric);
    synor__jw_key(&w, "strategy");
    synor__jw_str(&w, t->strategy);
    synor__jw_key(&w, "currency");
    synor__jw_str(&w, t->currency);
    synor__jw_key(&w, "makespan_s");
    synor__jw_num(&w, t->makespan);
    synor__jw_key(&w, "energy_active_j");
    synor__jw_num(&w, t->energy_active);
    synor__jw_key(&w, "energy_idle_j");
    synor__jw_num(&w, t->energy_idle);
    synor__jw_key(&w, "money_micro");
    synor__jw_int(&w, t->money_micro);
    synor__jw_key(&w, "energy_basis");
    synor__jw_str(&w, synor_trace_basis_name(t->energy_basis));
    synor__jw_key(&w, "money_basis");
    synor__jw_str(&w, synor_trace_basis_name(t->money_basis));
    synor__jw_key(&w, "devices");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < t->n_devices; i++) {
        const synor_trace_device *d = &t->devices[i];
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "name");
        synor__jw_str(&w, d->name);
        synor__jw_key(&w, "product");
        synor__jw_str(&w, d->product);
        synor__jw_key(&w, "kind");
        synor__jw_str(&w, d->kind);
        synor__jw_key(&w, "backend");
        synor__jw_str(&w, d->backend);
        synor__jw_key(&w, "simulated");
        synor__jw_bool(&w, d->simulated);
        synor__jw_key(&w, "idle_w");
        synor__jw_num(&w, d->idle_watts);
        synor__jw_key(&w, "price_micro");
        synor__jw_int(&w, d->price_micro);
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_key(&w, "tasks");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < t->n_tasks; i++) {
        const synor_trace_task *k = &t->tasks[i];
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "id");
        synor__jw_str(&w, k->id);
        synor__jw_key(&w, "op");
        synor__jw_str(&w, k->op);
        synor__jw_key(&w, "device");
        synor__jw_uint(&w, k->device);
        synor__jw_key(&w, "start");
        synor__jw_num(&w, k->start);
        synor__jw_key(&w, "end");
        synor__jw_num(&w, k->end);
        synor__jw_key(&w, "energy_j");
        synor__jw_num(&w, k->energy);
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_key(&w, "transfers");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < t->n_transfers; i++) {
        const synor_trace_transfer *x = &t->transfers[i];
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "data");
        synor__jw_str(&w, x->data);
        synor__jw_key(&w, "link");
        synor__jw_str(&w, x->link);
        synor__jw_key(&w, "from");
        synor__jw_uint(&w, x->from_dev);
        synor__jw_key(&w, "to");
        synor__jw_uint(&w, x->to_dev);
        synor__jw_key(&w, "bytes");
        synor__jw_uint(&w, x->bytes);
        synor__jw_key(&w, "start");
        synor__jw_num(&w, x->start);
        synor__jw_key(&w, "end");
        synor__jw_num(&w, x->end);
        if (x->path) {
            synor__jw_key(&w, "path");
            synor__jw_str(&w, x->path);
        }
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    if (t->n_marks) { /* absent otherwise: traces without marks stay as they were */
        synor__jw_key(&w, "marks");
        synor__jw_arr_begin(&w);
        for (size_t i = 0; i < t->n_marks; i++) {
            const synor_trace_mark *m = &t->marks[i];
            synor__jw_obj_begin(&w);
            synor__jw_key(&w, "name");
            synor__jw_str(&w, m->name);
            synor__jw_key(&w, "device");
            synor__jw_uint(&w, m->device);
            synor__jw_key(&w, "start");
            synor__jw_num(&w, m->start);
            synor__jw_key(&w, "end");
            synor__jw_num(&w, m->end);
            synor__jw_key(&w, "detail");
            synor__jw_str(&w, m->detail ? m->detail : "");
            synor__jw_obj_end(&w);
        }
        synor__jw_arr_end(&w);
    }
    synor__jw_obj_end(&w);
    synor__buf_puts(&b, "\n");
    char *s = synor__buf_take(&b);
    if (!s)
        synor__error(SYNOR_ENOMEM, "out of memory");
    return s;
}

/* ---------------------------------------------------------------- reader */

typedef struct rd {
    const synor__jdoc *d;
    synor__trace *tr;
} rd;

static int get_str(rd *r, const synor__jval *o, const char *path, const char *key,
                   const char **out)
{
    synor__jval *v;
    int rc = synor__json_member(r->d, o, path, key, SYNOR__J_STRING, 1, &v);
    if (rc)
        return rc;
    if (!(*out = synor__trace_str(r->tr, v->u.str.s)))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    return 0;
}

static int get_num(rd *r, const synor__jval *o, const char *path, const char *key, double *out)
{
    synor__jval *v;
    char p[128];
    snprintf(p, sizeof p, "%s.%s", path, key);
    int rc = synor__json_member(r->d, o, path, key, SYNOR__J_NUMBER, 1, &v);
    return rc ? rc : synor__json_number(r->d, v, p, 0, 1e300, out);
}

static int get_idx(rd *r, const synor__jval *o, const char *path, const char *key, size_t n,
                   size_t *out)
{
    synor__jval *v;
    char p[128];
    snprintf(p, sizeof p, "%s.%s", path, key);
    int64_t x;
    int rc = synor__json_member(r->d, o, path, key, SYNOR__J_NUMBER, 1, &v);
    if (!rc)
        rc = synor__json_int(r->d, v, p, 0, (int64_t)n - 1, &x);
    if (!rc)
        *out = (size_t)x;
    return rc;
}

static int get_basis(rd *r, const synor__jval *root, const char *key, int simulated,
                     synor_trace_basis *out)
{
    synor__jval *v;
    int rc = synor__json_member(r->d, root, "(top level)", key, SYNOR__J_STRING, 0, &v);
    if (rc)
        return rc;
    if (!v) {
        *out = simulated ? SYNOR_BASIS_MODEL : SYNOR_BASIS_NONE;
        return 0;
    }
    int b = synor_trace_basis_from_name(v->u.str.s);
    if (b < 0)
        return synor__json_fail(r->d, v, SYNOR_ESCHEMA, key,
                                "unknown basis \"%s\" (none, model, rated or measured)",
                                v->u.str.s);
    *out = (synor_trace_basis)b;
    return 0;
}

/* A time of a task or transfer must lie in [0, makespan]: a report divides
 * it by makespan / width and converts the quotient to int. A small relative
 * slack admits the rounding of a trace written with 15 digits. */
#define MAKESPAN_SLACK 1e-9

static int check_times(rd *r, const synor__jval *o, const char *path, double start, double end)
{
    double limit = r->tr->t.makespan * (1 + MAKESPAN_SLACK);
    char p[96];
    if (start > limit) {
        snprintf(p, sizeof p, "%s.start", path);
        return synor__json_fail(r->d, synor__json_get(o, "start"), SYNOR_ERANGE, p,
                                "%.15g is after the makespan %.15g (makespan_s)", start,
                                r->tr->t.makespan);
    }
    if (end < start)
        return synor__json_fail(r->d, o, SYNOR_ESCHEMA, path, "end %.15g is before start %.15g",
                                end, start);
    if (end > limit) {
        snprintf(p, sizeof p, "%s.end", path);
        return synor__json_fail(r->d, synor__json_get(o, "end"), SYNOR_ERANGE, p,
                                "%.15g is after the makespan %.15g (makespan_s)", end,
                                r->tr->t.makespan);
    }
    return 0;
}

static int read_trace(rd *r, const synor__jval *root)
{
    static const char *const keys[] = {"format", "workload", "fabric", "strategy", "currency",
                                       "makespan_s", "energy_active_j", "energy_idle_j",
                                       "money_micro", "energy_basis", "money_basis", "devices",
                                       "tasks", "transfers", "marks", NULL};
    const char *top = "(top level)";
    synor__jval *fmt, *devs, *tasks, *xfers, *v;
    synor_trace *t = &r->tr->t;
    int rc;
    if ((rc = synor__json_expect(r->d, root, top, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(r->d, root, top, keys)) ||
        (rc = synor__json_member(r->d, root, top, "format", SYNOR__J_STRING, 1, &fmt)))
        return rc;
    if (strcmp(fmt->u.str.s, "synor-trace/1") != 0)
        return synor__json_fail(r->d, fmt, SYNOR_ESCHEMA, "format",
                                "unsupported format \"%s\" (expected \"synor-trace/1\")",
                                fmt->u.str.s);
    int64_t money;
    if ((rc = get_str(r, root, top, "workload", &t->workload)) ||
        (rc = get_str(r, root, top, "fabric", &t->fabric)) ||
        (rc = get_str(r, root, top, "strategy", &t->strategy)) ||
        (rc = get_str(r, root, top, "currency", &t->currency)) ||
        (rc = get_num(r, root, top, "makespan_s", &t->makespan)) ||
        (rc = get_num(r, root, top, "energy_active_j", &t->energy_active)) ||
        (rc = get_num(r, root, top, "energy_idle_j", &t->energy_idle)) ||
        (rc = synor__json_member(r->d, root, top, "money_micro", SYNOR__J_NUMBER, 1, &v)) ||
        (rc = synor__json_int(r->d, v, "money_micro", 0, INT64_MAX, &money)) ||
        (rc = synor__json_member(r->d, root, top, "devices", SYNOR__J_ARRAY, 1, &devs)) ||
        (rc = synor__json_member(r->d, root, top, "tasks", SYNOR__J_ARRAY, 1, &tasks)) ||
        (rc = synor__json_member(r->d, root, top, "transfers", SYNOR__J_ARRAY, 1, &xfers)))
        return rc;
    t->money_micro = money;
    if ((rc = synor__trace_devices(r->tr, devs->u.arr.n)))
        return rc;
    int any_sim = 0;
    for (size_t i = 0; i < devs->u.arr.n; i++) {
        const synor__jval *o = devs->u.arr.items[i];
        synor_trace_device *dv = &r->tr->dev[i];
        char p[64];
        snprintf(p, sizeof p, "devices[%zu]", i);
        int64_t price;
        if ((rc = synor__json_expect(r->d, o, p, SYNOR__J_OBJECT)) ||
            (rc = get_str(r, o, p, "name", &dv->name)) ||
            (rc = get_str(r, o, p, "product", &dv->product)) ||
            (rc = get_str(r, o, p, "kind", &dv->kind)) ||
            (rc = get_num(r, o, p, "idle_w", &dv->idle_watts)) ||
            (rc = synor__json_member(r->d, o, p, "simulated", SYNOR__J_BOOL, 1, &v)))
            return rc;
        dv->simulated = v->u.boolean;
        char pp[80];
        snprintf(pp, sizeof pp, "%s.price_micro", p);
        if ((rc = synor__json_member(r->d, o, p, "price_micro", SYNOR__J_NUMBER, 1, &v)) ||
            (rc = synor__json_int(r->d, v, pp, 0, INT64_MAX, &price)))
            return rc;
        dv->price_micro = price;
        /* "backend": optional (older traces named it inside the product) */
        if ((rc = synor__json_member(r->d, o, p, "backend", SYNOR__J_STRING, 0, &v)))
            return rc;
        if (!(dv->backend = synor__trace_str(r->tr, v ? v->u.str.s
                                                      : dv->simulated ? "simulated" : "real")))
            return synor__error(SYNOR_ENOMEM, "out of memory");
        any_sim |= dv->simulated;
    }
    /* The bases: optional; older traces are simulated (model) or real runs
     * that measured nothing. */
    if ((rc = get_basis(r, root, "energy_basis", any_sim, &t->energy_basis)) ||
        (rc = get_basis(r, root, "money_basis", any_sim, &t->money_basis)))
        return rc;
    for (size_t i = 0; i < tasks->u.arr.n; i++) {
        const synor__jval *o = tasks->u.arr.items[i];
        char p[64];
        snprintf(p, sizeof p, "tasks[%zu]", i);
        synor_trace_task *k = synor__trace_add_task(r->tr);
        if (!k)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        if ((rc = synor__json_expect(r->d, o, p, SYNOR__J_OBJECT)) ||
            (rc = get_str(r, o, p, "id", &k->id)) || (rc = get_str(r, o, p, "op", &k->op)) ||
            (rc = get_idx(r, o, p, "device", t->n_devices, &k->device)) ||
            (rc = get_num(r, o, p, "start", &k->start)) ||
            (rc = get_num(r, o, p, "end", &k->end)) ||
            (rc = get_num(r, o, p, "energy_j", &k->energy)) ||
            (rc = check_times(r, o, p, k->start, k->end)))
            return rc;
    }
    for (size_t i = 0; i < xfers->u.arr.n; i++) {
        const synor__jval *o = xfers->u.arr.items[i];
        char p[64];
        snprintf(p, sizeof p, "transfers[%zu]", i);
        char pb[80];
        snprintf(pb, sizeof pb, "%s.bytes", p);
        synor_trace_transfer *x = synor__trace_add_transfer(r->tr);
        int64_t bytes;
        if (!x)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        if ((rc = synor__json_expect(r->d, o, p, SYNOR__J_OBJECT)) ||
            (rc = get_str(r, o, p, "data", &x->data)) ||
            (rc = get_str(r, o, p, "link", &x->link)) ||
            (rc = get_idx(r, o, p, "from", t->n_devices, &x->from_dev)) ||
            (rc = get_idx(r, o, p, "to", t->n_devices, &x->to_dev)) ||
            (rc = get_num(r, o, p, "start", &x->start)) ||
            (rc = get_num(r, o, p, "end", &x->end)) ||
            (rc = synor__json_member(r->d, o, p, "bytes", SYNOR__J_NUMBER, 1, &v)) ||
            (rc = synor__json_int(r->d, v, pb, 0, INT64_MAX, &bytes)) ||
            (rc = check_times(r, o, p, x->start, x->end)))
            return rc;
        x->bytes = (uint64_t)bytes;
        /* "path": optional (real runs only; older traces have none) */
        if ((rc = synor__json_member(r->d, o, p, "path", SYNOR__J_STRING, 0, &v)))
            return rc;
        if (v && !(x->path = synor__trace_str(r->tr, v->u.str.s)))
            return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    /* "marks": optional (traces without preemptions have none) */
    if ((rc = synor__json_member(r->d, root, top, "marks", SYNOR__J_ARRAY, 0, &v)))
        return rc;
    for (size_t i = 0; v && i < v->u.arr.n; i++) {
        const synor__jval *o = v->u.arr.items[i];
        char p[64];
        snprintf(p, sizeof p, "marks[%zu]", i);
        const char *name, *detail;
        size_t dev;
        double ms, me;
        if ((rc = synor__json_expect(r->d, o, p, SYNOR__J_OBJECT)) ||
            (rc = get_str(r, o, p, "name", &name)) || (rc = get_str(r, o, p, "detail", &detail)) ||
            (rc = get_idx(r, o, p, "device", t->n_devices, &dev)) ||
            (rc = get_num(r, o, p, "start", &ms)) || (rc = get_num(r, o, p, "end", &me)) ||
            (rc = check_times(r, o, p, ms, me)))
            return rc;
        if (!synor__trace_add_mark(r->tr, name, dev, ms, me, detail))
            return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    /* sim.h promises start order; a hand-edited file need not keep it */
    return synor__trace_sort(r->tr);
}

int synor_trace_load_string(const char *text, size_t len, const char *name, synor_trace **out)
{
    synor__jdoc *d;
    int rc = synor__json_parse(text, len, name, &d);
    if (rc)
        return rc;
    rd r = {d, synor__trace_new()};
    if (!r.tr) {
        synor__jdoc_free(d);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    rc = read_trace(&r, synor__jdoc_root(d));
    synor__jdoc_free(d);
    if (rc) {
        synor_trace_destroy(&r.tr->t);
        return rc;
    }
    *out = &r.tr->t;
    return 0;
}

int synor_trace_load_file(const char *path, synor_trace **out)
{
    char *text;
    size_t len;
    int rc = synor__read_file(path, &text, &len);
    if (rc)
        return rc;
    rc = synor_trace_load_string(text, len, path, out);
    synor__free(text);
    return rc;
}
