/* workload_json.c - the workload file format (synor-workload/1,
 * docs/WORKLOADS.md): reading with errors that name file:line:column and
 * the field, and writing.
 *
 * Reading is two passes over the parsed document: the first adds every task
 * (so a dependency may name a task further down the file), the second
 * resolves dependency names; synor_workload_finish then checks the graph,
 * and a cycle is reported at the "deps" of the lowest-indexed task on it.
 * Work is written explicitly, so the output loads back to the same numbers
 * even for operations whose work came from a formula. A task may give a
 * cost row ("exec_s": seconds per device, null = cannot run there) and its
 * dependencies explicit edge costs ({"task", "comm_s"}), the form problems
 * from the scheduling literature come in; a task with a cost row needs no
 * operation (it is "custom") and no work. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json/json.h"
#include "synor/workload.h"
#include "workload/workload_internal.h"

static const char *const DIM_NAMES[] = {"m",      "n",        "k",        "batch",  "seq",
                                        "kv_len", "heads",    "kv_heads", "head_dim", "hidden",
                                        "ffn",    "elements", "vocab",    "layers", NULL};

static int64_t *dim_slot(synor_op_dims *d, size_t i)
{
    int64_t *slots[] = {&d->m,      &d->n,        &d->k,        &d->batch,    &d->seq,
                        &d->kv_len, &d->heads,    &d->kv_heads, &d->head_dim, &d->hidden,
                        &d->ffn,    &d->elements, &d->vocab,    &d->layers};
    return slots[i];
}

#define MAX_DIM ((int64_t)1 << 40)
#define MAX_WORK 1e30

/* Resolves a list of {name, bytes} objects to data indexes, adding data the
 * first time a name appears. bytes may be omitted where the data was
 * declared before; a different size for the same name is an error. */
static int data_refs(synor_workload *w, const synor__jdoc *d, const synor__jval *arr,
                     const char *path, size_t **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (!arr)
        return 0;
    size_t *idx = synor__malloc((arr->u.arr.n ? arr->u.arr.n : 1) * sizeof *idx);
    if (!idx)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    static const char *const keys[] = {"name", "bytes", NULL};
    int rc = 0;
    for (size_t i = 0; i < arr->u.arr.n && !rc; i++) {
        const synor__jval *o = arr->u.arr.items[i];
        synor__jval *nm, *by;
        char p[300];
        snprintf(p, sizeof p, "%s[%zu]", path, i);
        int64_t bytes = -1;
        if ((rc = synor__json_expect(d, o, p, SYNOR__J_OBJECT)) ||
            (rc = synor__json_check_keys(d, o, p, keys)) ||
            (rc = synor__json_member(d, o, p, "name", SYNOR__J_STRING, 1, &nm)) ||
            (rc = synor__json_member(d, o, p, "bytes", SYNOR__J_NUMBER, 0, &by)))
            break;
        char pb[320];
        if (!*nm->u.str.s) {
            snprintf(pb, sizeof pb, "%s.name", p);
            rc = synor__json_fail(d, nm, SYNOR_ESCHEMA, pb, "empty data name");
            break;
        }
        snprintf(pb, sizeof pb, "%s.bytes", p);
        if (by && (rc = synor__json_int(d, by, pb, 0, INT64_MAX, &bytes)))
            break;
        long k = synor_workload_find_data(w, nm->u.str.s);
        if (k < 0) {
            if (bytes < 0) {
                rc = synor__json_fail(d, o, SYNOR_ESCHEMA, p,
                                      "missing \"bytes\" for data \"%s\" declared nowhere else",
                                      nm->u.str.s);
                break;
            }
            size_t ni;
            if ((rc = synor_workload_add_data(w, nm->u.str.s, (uint64_t)bytes, &ni)))
                break;
            k = (long)ni;
        } else if (bytes >= 0 && (uint64_t)bytes != w->data[k].bytes) {
            rc = synor__json_fail(d, by, SYNOR_ESCHEMA, pb,
                                  "data \"%s\" has %llu bytes elsewhere, %lld here", nm->u.str.s,
                                  (unsigned long long)w->data[k].bytes, (long long)bytes);
            break;
        }
        idx[i] = (size_t)k;
    }
    if (rc) {
        synor__free(idx);
        return rc;
    }
    *out = idx;
    *n_out = arr->u.arr.n;
    return 0;
}

static int parse_kind(const synor__jdoc *d, const synor__jval *v, const char *path,
                      synor_kind *out)
{
    if (synor_kind_from_name(v->u.str.s, out))
        return synor__json_fail(d, v, SYNOR_ESCHEMA, path, "unknown processor kind \"%s\"",
                                v->u.str.s);
    return 0;
}

#define MAX_SECONDS 1e30

/* "exec_s": an array of seconds in the fabric's device order, or an object
 * {device name: seconds}; null = cannot run there. Fills t's cost row; the
 * arrays are freed by the caller. */
static int parse_exec(const synor__jdoc *d, const synor__jval *v, const char *path,
                      synor_task_desc *t, double **row, const char ***names)
{
    int obj = v->type == SYNOR__J_OBJECT;
    if (!obj && v->type != SYNOR__J_ARRAY)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, path,
                                "expected an array of seconds (one per device of the fabric) or an "
                                "object {\"device\": seconds}, found %s",
                                synor__jtype_name(v->type));
    size_t n = obj ? v->u.obj.n : v->u.arr.n;
    if (!n)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, path, "empty: give a time for some device");
    *row = synor__malloc(n * sizeof **row);
    *names = obj ? synor__calloc(n, sizeof **names) : NULL;
    if (!*row || (obj && !*names))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t k = 0; k < n; k++) {
        const synor__jval *x = obj ? v->u.obj.m[k].val : v->u.arr.items[k];
        char p[400];
        if (obj)
            snprintf(p, sizeof p, "%s.%s", path, v->u.obj.m[k].key);
        else
            snprintf(p, sizeof p, "%s[%zu]", path, k);
        if (obj && !*v->u.obj.m[k].key)
            return synor__json_fail(d, x, SYNOR_ESCHEMA, path, "empty device name");
        if (obj)
            (*names)[k] = v->u.obj.m[k].key;
        if (x->type == SYNOR__J_NULL) {
            (*row)[k] = INFINITY;
            continue;
        }
        if (x->type != SYNOR__J_NUMBER)
            return synor__json_fail(d, x, SYNOR_ESCHEMA, p,
                                    "expected seconds (a number) or null (cannot run there), "
                                    "found %s",
                                    synor__jtype_name(x->type));
        int rc = synor__json_number(d, x, p, 0, MAX_SECONDS, &(*row)[k]);
        if (rc)
            return rc;
    }
    t->exec_s = *row;
    t->exec_dev = *names;
    t->n_exec = n;
    return 0;
}

/* One task; *row and *names receive the arrays of its cost row, which the
 * caller frees. */
static int parse_task_fields(synor_workload *w, const synor__jdoc *d, const synor__jval *o,
                             size_t ti, double **row, const char ***names)
{
    static const char *const keys[] = {"id",       "op",        "backward",  "dtype",    "dims",
                                       "work",     "sequential", "priority", "deps",     "produces",
                                       "consumes", "workspace", "preferred", "fallback", "group",
                                       "exec_s",   NULL};
    char path[64], p[128];
    snprintf(path, sizeof path, "tasks[%zu]", ti);
    synor__jval *v;
    int rc;
    synor_task_desc t;
    memset(&t, 0, sizeof t);
    t.priority = SYNOR_PRIORITY_NORMAL;
    t.op.dtype = SYNOR_DTYPE_FP32;
    if ((rc = synor__json_expect(d, o, path, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, o, path, keys)) ||
        (rc = synor__json_member(d, o, path, "id", SYNOR__J_STRING, 1, &v)))
        return rc;
    snprintf(p, sizeof p, "%s.id", path);
    if (!*v->u.str.s)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, p, "empty task id");
    long other = synor_workload_find_task(w, v->u.str.s);
    if (other >= 0)
        return synor__json_fail(d, v, SYNOR_EEXIST, p, "duplicate task id \"%s\" (also tasks[%ld])",
                                v->u.str.s, other);
    t.id = v->u.str.s;
    const synor__jval *exec = synor__json_get(o, "exec_s");
    snprintf(p, sizeof p, "%s.exec_s", path);
    if (exec && (rc = parse_exec(d, exec, p, &t, row, names)))
        return rc;
    /* with a cost row the operation is optional: "custom" */
    if ((rc = synor__json_member(d, o, path, "op", SYNOR__J_STRING, 0, &v)))
        return rc;
    if (!v && !exec)
        return synor__json_fail(d, o, SYNOR_ESCHEMA, path,
                                "missing required field \"op\" (only a task with a cost row, "
                                "\"exec_s\", may omit it)");
    snprintf(p, sizeof p, "%s.op", path);
    t.op.type = SYNOR_OP_CUSTOM;
    if (v && synor_op_type_from_name(v->u.str.s, &t.op.type))
        return synor__json_fail(d, v, SYNOR_ESCHEMA, p, "unknown operation \"%s\"", v->u.str.s);
    if ((rc = synor__json_member(d, o, path, "backward", SYNOR__J_BOOL, 0, &v)))
        return rc;
    t.op.backward = v ? v->u.boolean : 0;
    if ((rc = synor__json_member(d, o, path, "dtype", SYNOR__J_STRING, 0, &v)))
        return rc;
    if (v && synor_dtype_from_name(v->u.str.s, &t.op.dtype)) {
        snprintf(p, sizeof p, "%s.dtype", path);
        return synor__json_fail(d, v, SYNOR_ESCHEMA, p, "unknown data type \"%s\"", v->u.str.s);
    }
    if ((rc = synor__json_member(d, o, path, "dims", SYNOR__J_OBJECT, 0, &v)))
        return rc;
    const synor__jval *dims = v;
    if (v) {
        snprintf(p, sizeof p, "%s.dims", path);
        if ((rc = synor__json_check_keys(d, v, p, DIM_NAMES)))
            return rc;
        for (size_t k = 0; DIM_NAMES[k]; k++) {
            synor__jval *x = synor__json_get(v, DIM_NAMES[k]);
            char pd[160];
            snprintf(pd, sizeof pd, "%s.%s", p, DIM_NAMES[k]);
            if (x && (rc = synor__json_int(d, x, pd, 1, MAX_DIM, dim_slot(&t.op.dims, k))))
                return rc;
        }
    }
    if ((rc = synor__json_member(d, o, path, "work", SYNOR__J_OBJECT, 0, &v)))
        return rc;
    if (v) {
        static const char *const wk[] = {"flops", "bytes_read", "bytes_written", "sparse", NULL};
        snprintf(p, sizeof p, "%s.work", path);
        double *dst[] = {&t.op.work.flops, &t.op.work.bytes_read, &t.op.work.bytes_written};
        if ((rc = synor__json_check_keys(d, v, p, wk)))
            return rc;
        for (size_t k = 0; k < 3; k++) {
            synor__jval *x;
            char pw[160];
            snprintf(pw, sizeof pw, "%s.%s", p, wk[k]);
            if ((rc = synor__json_member(d, v, p, wk[k], SYNOR__J_NUMBER, 1, &x)) ||
                (rc = synor__json_number(d, x, pw, 0, MAX_WORK, dst[k])))
                return rc;
        }
        synor__jval *x;
        if ((rc = synor__json_member(d, v, p, "sparse", SYNOR__J_BOOL, 0, &x)))
            return rc;
        t.op.work.sparse = x ? x->u.boolean : 0;
        t.op.work.type = t.op.type;
        t.op.work.dtype = t.op.dtype;
    } else if (exec && !dims) { /* the cost row gives the time: no work */
        t.op.work.type = t.op.type;
        t.op.work.dtype = t.op.dtype;
    } else if (t.op.type == SYNOR_OP_CUSTOM && !exec) {
        return synor__json_fail(d, o, SYNOR_ESCHEMA, path,
                                "operation custom has no work formula: give \"exec_s\" (seconds "
                                "per device) or \"work\"");
    } else if (synor_op_derive(&t.op)) {
        return synor__json_fail(d, o, SYNOR_ESCHEMA, path, "%s", synor_errmsg());
    } else {
        /* the bound of written work: the file format writes work out, so
         * larger derived work would make a file that does not load back */
        static const char *const what[] = {"FLOPs", "bytes read", "bytes written"};
        const double got[] = {t.op.work.flops, t.op.work.bytes_read, t.op.work.bytes_written};
        snprintf(p, sizeof p, "%s.dims", path);
        for (size_t k = 0; k < 3; k++)
            if (!(got[k] <= MAX_WORK))
                return synor__json_fail(d, dims ? dims : o, SYNOR_ERANGE, dims ? p : path,
                                        "the work derived from them, %g %s, is above the "
                                        "maximum %g",
                                        got[k], what[k], MAX_WORK);
    }
    if ((rc = synor__json_member(d, o, path, "sequential", SYNOR__J_BOOL, 0, &v)))
        return rc;
    t.op.sequential = v ? v->u.boolean : synor__op_default_sequential(t.op.type);
    if ((rc = synor__json_member(d, o, path, "priority", SYNOR__J_STRING, 0, &v)))
        return rc;
    if (v) {
        int found = 0;
        for (int k = 0; k < 4; k++)
            if (strcmp(v->u.str.s, synor_priority_name((synor_priority)k)) == 0) {
                t.priority = (synor_priority)k;
                found = 1;
            }
        snprintf(p, sizeof p, "%s.priority", path);
        if (!found)
            return synor__json_fail(d, v, SYNOR_ESCHEMA, p,
                                    "unknown priority \"%s\" (critical, high, normal, low)",
                                    v->u.str.s);
    }
    if ((rc = synor__json_member(d, o, path, "workspace", SYNOR__J_NUMBER, 0, &v)))
        return rc;
    if (v) {
        int64_t ws;
        snprintf(p, sizeof p, "%s.workspace", path);
        if ((rc = synor__json_int(d, v, p, 0, INT64_MAX, &ws)))
            return rc;
        t.workspace = (uint64_t)ws;
    }
    if ((rc = synor__json_member(d, o, path, "preferred", SYNOR__J_STRING, 0, &v)))
        return rc;
    snprintf(p, sizeof p, "%s.preferred", path);
    if (v && (rc = parse_kind(d, v, p, &t.preferred)))
        return rc;
    t.has_preferred = v != NULL;
    if ((rc = synor__json_member(d, o, path, "fallback", SYNOR__J_STRING, 0, &v)))
        return rc;
    snprintf(p, sizeof p, "%s.fallback", path);
    if (v && (rc = parse_kind(d, v, p, &t.fallback)))
        return rc;
    t.has_fallback = v != NULL;
    if ((rc = synor__json_member(d, o, path, "group", SYNOR__J_STRING, 0, &v)))
        return rc;
    if (v && !*v->u.str.s)
        return synor__json_fail(d, v, SYNOR_EINVAL, path, "group: an empty name");
    t.group = v ? v->u.str.s : NULL;
    synor__jval *pr, *co;
    if ((rc = synor__json_member(d, o, path, "deps", SYNOR__J_ARRAY, 0, &v)) ||
        (rc = synor__json_member(d, o, path, "produces", SYNOR__J_ARRAY, 0, &pr)) ||
        (rc = synor__json_member(d, o, path, "consumes", SYNOR__J_ARRAY, 0, &co)))
        return rc;
    size_t *prod = NULL, *cons = NULL;
    snprintf(p, sizeof p, "%s.produces", path);
    if ((rc = data_refs(w, d, pr, p, &prod, &t.n_produces)))
        return rc;
    snprintf(p, sizeof p, "%s.consumes", path);
    if ((rc = data_refs(w, d, co, p, &cons, &t.n_consumes))) {
        synor__free(prod);
        return rc;
    }
    for (size_t k = 0; k < t.n_produces && !rc; k++) {
        const synor_data *dd = &w->data[prod[k]];
        if (dd->producer >= 0) {
            snprintf(p, sizeof p, "%s.produces[%zu]", path, k);
            rc = synor__json_fail(d, pr->u.arr.items[k], SYNOR_ESCHEMA, p,
                                  "data \"%s\" is also produced by task \"%s\"", dd->name,
                                  w->tasks[dd->producer].id);
        }
    }
    t.produces = prod;
    t.consumes = cons;
    if (!rc)
        rc = synor_workload_add_task(w, &t, NULL);
    synor__free(prod);
    synor__free(cons);
    return rc;
}

static int parse_task(synor_workload *w, const synor__jdoc *d, const synor__jval *o, size_t ti)
{
    double *row = NULL;
    const char **names = NULL;
    int rc = parse_task_fields(w, d, o, ti, &row, &names);
    synor__free(row);
    synor__free(names);
    return rc;
}

/* One element of "deps": a task id, or {"task": id, "comm_s": seconds}. */
static int dep_ref(synor_workload *w, const synor__jdoc *d, const synor__jval *x, const char *p,
                   size_t *idx, double *comm)
{
    static const char *const keys[] = {"task", "comm_s", NULL};
    const synor__jval *id = x;
    synor__jval *tv, *cv;
    int rc;
    *comm = -1;
    if (x->type == SYNOR__J_OBJECT) {
        char pc[128];
        snprintf(pc, sizeof pc, "%s.comm_s", p);
        if ((rc = synor__json_check_keys(d, x, p, keys)) ||
            (rc = synor__json_member(d, x, p, "task", SYNOR__J_STRING, 1, &tv)) ||
            (rc = synor__json_member(d, x, p, "comm_s", SYNOR__J_NUMBER, 1, &cv)) ||
            (rc = synor__json_number(d, cv, pc, 0, MAX_SECONDS, comm)))
            return rc;
        id = tv;
    } else if (x->type != SYNOR__J_STRING) {
        return synor__json_fail(d, x, SYNOR_ESCHEMA, p,
                                "expected a task id or {\"task\": id, \"comm_s\": seconds}, "
                                "found %s",
                                synor__jtype_name(x->type));
    }
    long j = synor_workload_find_task(w, id->u.str.s);
    if (j < 0)
        return synor__json_fail(d, id, SYNOR_ESCHEMA, p, "no task with id \"%s\"", id->u.str.s);
    *idx = (size_t)j;
    return 0;
}

/* Pass 2: dependency names to indexes, with any explicit edge costs. */
static int resolve_deps(synor_workload *w, const synor__jdoc *d, const synor__jval *tasks)
{
    for (size_t i = 0; i < tasks->u.arr.n; i++) {
        const synor__jval *deps = synor__json_get(tasks->u.arr.items[i], "deps");
        if (!deps || !deps->u.arr.n)
            continue;
        size_t n = deps->u.arr.n, *idx = synor__malloc(n * sizeof *idx);
        double *comm = synor__malloc(n * sizeof *comm);
        if (!idx || !comm) {
            synor__free(idx);
            synor__free(comm);
            return synor__error(SYNOR_ENOMEM, "out of memory");
        }
        int any = 0;
        for (size_t k = 0; k < n; k++) {
            char p[96];
            snprintf(p, sizeof p, "tasks[%zu].deps[%zu]", i, k);
            int rc = dep_ref(w, d, deps->u.arr.items[k], p, &idx[k], &comm[k]);
            if (rc) {
                synor__free(idx);
                synor__free(comm);
                return rc;
            }
            any |= comm[k] >= 0;
        }
        if (!any) {
            synor__free(comm);
            comm = NULL;
        }
        w->tasks[i].deps = idx;
        w->tasks[i].dep_comm = comm;
        w->tasks[i].n_deps = n;
    }
    return 0;
}

int synor_workload_load_string(const char *text, size_t len, const char *name,
                               synor_workload **out)
{
    synor__jdoc *d;
    int rc = synor__json_parse(text, len, name, &d);
    if (rc)
        return rc;
    static const char *const keys[] = {"format", "name", "tasks", NULL};
    const char *top = "(top level)";
    synor__jval *root = synor__jdoc_root(d), *fmt, *nm, *tasks;
    synor_workload *w = NULL;
    if ((rc = synor__json_expect(d, root, top, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, root, top, keys)) ||
        (rc = synor__json_member(d, root, top, "format", SYNOR__J_STRING, 1, &fmt)) ||
        (rc = synor__json_member(d, root, top, "name", SYNOR__J_STRING, 0, &nm)) ||
        (rc = synor__json_member(d, root, top, "tasks", SYNOR__J_ARRAY, 1, &tasks)))
        goto out;
    if (strcmp(fmt->u.str.s, "synor-workload/1") != 0) {
        rc = synor__json_fail(d, fmt, SYNOR_ESCHEMA, "format",
                              "unsupported format \"%s\" (expected \"synor-workload/1\")",
                              fmt->u.str.s);
        goto out;
    }
    if ((rc = synor_workload_create(nm ? nm->u.str.s : name, &w)))
        goto out;
    for (size_t i = 0; i < tasks->u.arr.n && !rc; i++)
        rc = parse_task(w, d, tasks->u.arr.items[i], i);
    if (!rc)
        rc = resolve_deps(w, d, tasks);
    if (!rc && (rc = synor_workload_finish(w)) && w->deps_task >= 0) {
        char msg[1024], p[64];
        synor__strlcpy(msg, synor_errmsg(), sizeof msg);
        size_t c = (size_t)w->deps_task;
        snprintf(p, sizeof p, "tasks[%zu].deps", c);
        const synor__jval *dv = synor__json_get(tasks->u.arr.items[c], "deps");
        rc = synor__json_fail(d, dv ? dv : tasks->u.arr.items[c], rc, p, "%s", msg);
    }
out:
    if (rc)
        synor_workload_destroy(w);
    else
        *out = w;
    synor__jdoc_free(d);
    return rc;
}

int synor_workload_load_file(const char *path, synor_workload **out)
{
    char *text;
    size_t len;
    int rc = synor__read_file(path, &text, &len);
    if (rc)
        return rc;
    rc = synor_workload_load_string(text, len, path, out);
    synor__free(text);
    return rc;
}

/* ---------------------------------------------------------------- writer */

static void refs(synor__jw *jw, const synor_workload *wl, const char *key, const size_t *r,
                 size_t n)
{
    if (!n)
        return;
    synor__jw_key(jw, key);
    synor__jw_arr_begin(jw);
    for (size_t i = 0; i < n; i++) {
        const synor_data *dd = synor_workload_data(wl, r[i]);
        synor__jw_obj_begin(jw);
        synor__jw_key(jw, "name");
        synor__jw_str(jw, dd->name);
        synor__jw_key(jw, "bytes");
        synor__jw_uint(jw, dd->bytes);
        synor__jw_obj_end(jw);
    }
    synor__jw_arr_end(jw);
}

char *synor_workload_to_json(const synor_workload *wl)
{
    if (!wl) {
        synor__error(SYNOR_EINVAL, "synor_workload_to_json: workload is NULL");
        return NULL;
    }
    synor__buf b;
    synor__jw w;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, 1);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "format");
    synor__jw_str(&w, "synor-workload/1");
    synor__jw_key(&w, "name");
    synor__jw_str(&w, synor_workload_name(wl));
    synor__jw_key(&w, "tasks");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < synor_workload_count(wl); i++) {
        const synor_task *t = synor_workload_task(wl, i);
        synor_op_dims dims = t->op.dims;
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "id");
        synor__jw_str(&w, t->id);
        synor__jw_key(&w, "op");
        synor__jw_str(&w, synor_op_type_name(t->op.type));
        if (t->op.backward) {
            synor__jw_key(&w, "backward");
            synor__jw_bool(&w, 1);
        }
        synor__jw_key(&w, "dtype");
        synor__jw_str(&w, synor_dtype_name(t->op.dtype));
        int any = 0;
        for (size_t k = 0; DIM_NAMES[k]; k++)
            any |= *dim_slot(&dims, k) != 0;
        if (any) {
            synor__jw_key(&w, "dims");
            synor__jw_obj_begin(&w);
            for (size_t k = 0; DIM_NAMES[k]; k++)
                if (*dim_slot(&dims, k)) {
                    synor__jw_key(&w, DIM_NAMES[k]);
                    synor__jw_int(&w, *dim_slot(&dims, k));
                }
            synor__jw_obj_end(&w);
        }
        synor__jw_key(&w, "work");
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "flops");
        synor__jw_num(&w, t->op.work.flops);
        synor__jw_key(&w, "bytes_read");
        synor__jw_num(&w, t->op.work.bytes_read);
        synor__jw_key(&w, "bytes_written");
        synor__jw_num(&w, t->op.work.bytes_written);
        if (t->op.work.sparse) {
            synor__jw_key(&w, "sparse");
            synor__jw_bool(&w, 1);
        }
        synor__jw_obj_end(&w);
        synor__jw_key(&w, "sequential");
        synor__jw_bool(&w, t->op.sequential);
        synor__jw_key(&w, "priority");
        synor__jw_str(&w, synor_priority_name(t->priority));
        if (t->n_deps) {
            synor__jw_key(&w, "deps");
            synor__jw_arr_begin(&w);
            for (size_t k = 0; k < t->n_deps; k++) {
                const char *id = synor_workload_task(wl, t->deps[k])->id;
                if (!t->dep_comm || t->dep_comm[k] < 0) {
                    synor__jw_str(&w, id);
                    continue;
                }
                synor__jw_obj_begin(&w);
                synor__jw_key(&w, "task");
                synor__jw_str(&w, id);
                synor__jw_key(&w, "comm_s");
                synor__jw_num(&w, t->dep_comm[k]);
                synor__jw_obj_end(&w);
            }
            synor__jw_arr_end(&w);
        }
        if (t->n_exec) {
            synor__jw_key(&w, "exec_s");
            if (t->exec_dev)
                synor__jw_obj_begin(&w);
            else
                synor__jw_arr_begin(&w);
            for (size_t k = 0; k < t->n_exec; k++) {
                if (t->exec_dev)
                    synor__jw_key(&w, t->exec_dev[k]);
                synor__jw_num(&w, t->exec_s[k]); /* INFINITY is written as null */
            }
            if (t->exec_dev)
                synor__jw_obj_end(&w);
            else
                synor__jw_arr_end(&w);
        }
        refs(&w, wl, "produces", t->produces, t->n_produces);
        refs(&w, wl, "consumes", t->consumes, t->n_consumes);
        if (t->workspace) {
            synor__jw_key(&w, "workspace");
            synor__jw_uint(&w, t->workspace);
        }
        if (t->group) {
            synor__jw_key(&w, "group");
            synor__jw_str(&w, t->group);
        }
        if (t->has_preferred) {
            synor__jw_key(&w, "preferred");
            synor__jw_str(&w, synor_kind_name(t->preferred));
        }
        if (t->has_fallback) {
            synor__jw_key(&w, "fallback");
            synor__jw_str(&w, synor_kind_name(t->fallback));
        }
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    char *s = synor__buf_take(&b);
    if (!s)
        synor__error(SYNOR_ENOMEM, "out of memory");
    return s;
}
