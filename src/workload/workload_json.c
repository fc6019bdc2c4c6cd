/* workload_json.c - the workload file format (synor-workload/1,
 * docs/WORKLOADS.md): reading with errors that name file:line:column and
 * the field, and writing.
 *
 * Reading streams the tasks (synor__json_parse_each): each task's JSON is
 * checked and added, and its dependencies on tasks already read resolved,
 * then dropped, so a 100,000-task file never exists as a whole document.
 * Errors come out as if the whole file had been parsed first and then read
 * in two passes: a syntax error anywhere, then the top level, then the
 * first task whose fields are wrong (pass 1), then the first dependency
 * that is malformed or names no task (pass 2: a dependency may name a task
 * further down the file); the first error of each kind is kept until the
 * end of the text. synor_workload_finish then checks the graph, and a cycle
 * is reported at the "deps" of the lowest-indexed task on it.
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

/* path.name into buf (n bytes), cut short as snprintf would: the name of a
 * field for an error message, made for every field read, so no printf. */
static const char *field(char *buf, size_t n, const char *path, const char *name)
{
    size_t a = strlen(path), b = strlen(name);
    if (a >= n)
        a = n - 1;
    memcpy(buf, path, a);
    if (a + 1 < n)
        buf[a++] = '.';
    if (b > n - 1 - a)
        b = n - 1 - a;
    memcpy(buf + a, name, b);
    buf[a + b] = '\0';
    return buf;
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
            field(pb, sizeof pb, p, "name");
            rc = synor__json_fail(d, nm, SYNOR_ESCHEMA, pb, "empty data name");
            break;
        }
        field(pb, sizeof pb, p, "bytes");
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
 * arrays are freed by the caller. A row of up to ROW_SMALL devices goes in
 * small (no allocation for each task of a large file). */
#define ROW_SMALL 64
static int parse_exec(const synor__jdoc *d, const synor__jval *v, const char *path,
                      synor_task_desc *t, double *small, double **row, const char ***names)
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
    *row = n <= ROW_SMALL ? small : synor__malloc(n * sizeof **row);
    *names = obj ? synor__calloc(n, sizeof **names) : NULL;
    if (!*row || (obj && !*names))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t k = 0; k < n; k++) {
        const synor__jval *x = obj ? v->u.obj.m[k].val : v->u.arr.items[k];
        if (obj && !*v->u.obj.m[k].key)
            return synor__json_fail(d, x, SYNOR_ESCHEMA, path, "empty device name");
        if (obj)
            (*names)[k] = v->u.obj.m[k].key;
        if (x->type == SYNOR__J_NULL) {
            (*row)[k] = INFINITY;
            continue;
        }
        /* the common case without formatting the field's name */
        if (x->type == SYNOR__J_NUMBER && x->u.n.num >= 0 && x->u.n.num <= MAX_SECONDS) {
            (*row)[k] = x->u.n.num;
            continue;
        }
        char p[400];
        if (obj)
            field(p, sizeof p, path, v->u.obj.m[k].key);
        else
            snprintf(p, sizeof p, "%s[%zu]", path, k);
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
 * caller frees (*row unless it is small). */
static int parse_task_fields(synor_workload *w, const synor__jdoc *d, const synor__jval *o,
                             size_t ti, double *small, double **row, const char ***names)
{
    static const char *const keys[] = {"id",       "op",        "backward",  "dtype",    "dims",
                                       "work",     "sequential", "priority", "deps",     "produces",
                                       "consumes", "workspace", "preferred", "fallback", "group",
                                       "exec_s",   NULL};
    char path[64], p[128];
    char digits[24];
    size_t nd = 0, rest = ti;
    do
        digits[nd++] = (char)('0' + rest % 10);
    while ((rest /= 10) && nd < sizeof digits);
    memcpy(path, "tasks[", 6);
    for (size_t k = 0; k < nd; k++)
        path[6 + k] = digits[nd - 1 - k];
    memcpy(path + 6 + nd, "]", 2); /* "tasks[%zu]" */
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
    field(p, sizeof p, path, "id");
    if (!*v->u.str.s)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, p, "empty task id");
    long other = synor_workload_find_task(w, v->u.str.s);
    if (other >= 0)
        return synor__json_fail(d, v, SYNOR_EEXIST, p, "duplicate task id \"%s\" (also tasks[%ld])",
                                v->u.str.s, other);
    t.id = v->u.str.s;
    const synor__jval *exec = synor__json_get(o, "exec_s");
    field(p, sizeof p, path, "exec_s");
    if (exec && (rc = parse_exec(d, exec, p, &t, small, row, names)))
        return rc;
    /* with a cost row the operation is optional: "custom" */
    if ((rc = synor__json_member(d, o, path, "op", SYNOR__J_STRING, 0, &v)))
        return rc;
    if (!v && !exec)
        return synor__json_fail(d, o, SYNOR_ESCHEMA, path,
                                "missing required field \"op\" (only a task with a cost row, "
                                "\"exec_s\", may omit it)");
    field(p, sizeof p, path, "op");
    t.op.type = SYNOR_OP_CUSTOM;
    if (v && synor_op_type_from_name(v->u.str.s, &t.op.type))
        return synor__json_fail(d, v, SYNOR_ESCHEMA, p, "unknown operation \"%s\"", v->u.str.s);
    if ((rc = synor__json_member(d, o, path, "backward", SYNOR__J_BOOL, 0, &v)))
        return rc;
    t.op.backward = v ? v->u.boolean : 0;
    if ((rc = synor__json_member(d, o, path, "dtype", SYNOR__J_STRING, 0, &v)))
        return rc;
    if (v && synor_dtype_from_name(v->u.str.s, &t.op.dtype)) {
        field(p, sizeof p, path, "dtype");
        return synor__json_fail(d, v, SYNOR_ESCHEMA, p, "unknown data type \"%s\"", v->u.str.s);
    }
    if ((rc = synor__json_member(d, o, path, "dims", SYNOR__J_OBJECT, 0, &v)))
        return rc;
    const synor__jval *dims = v;
    if (v) {
        field(p, sizeof p, path, "dims");
        if ((rc = synor__json_check_keys(d, v, p, DIM_NAMES)))
            return rc;
        for (size_t k = 0; DIM_NAMES[k]; k++) {
            synor__jval *x = synor__json_get(v, DIM_NAMES[k]);
            char pd[160];
            field(pd, sizeof pd, p, DIM_NAMES[k]);
            if (x && (rc = synor__json_int(d, x, pd, 1, MAX_DIM, dim_slot(&t.op.dims, k))))
                return rc;
        }
    }
    if ((rc = synor__json_member(d, o, path, "work", SYNOR__J_OBJECT, 0, &v)))
        return rc;
    if (v) {
        static const char *const wk[] = {"flops", "bytes_read", "bytes_written", "sparse", NULL};
        field(p, sizeof p, path, "work");
        double *dst[] = {&t.op.work.flops, &t.op.work.bytes_read, &t.op.work.bytes_written};
        if ((rc = synor__json_check_keys(d, v, p, wk)))
            return rc;
        for (size_t k = 0; k < 3; k++) {
            synor__jval *x;
            char pw[160];
            field(pw, sizeof pw, p, wk[k]);
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
        field(p, sizeof p, path, "dims");
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
        field(p, sizeof p, path, "priority");
        if (!found)
            return synor__json_fail(d, v, SYNOR_ESCHEMA, p,
                                    "unknown priority \"%s\" (critical, high, normal, low)",
                                    v->u.str.s);
    }
    if ((rc = synor__json_member(d, o, path, "workspace", SYNOR__J_NUMBER, 0, &v)))
        return rc;
    if (v) {
        int64_t ws;
        field(p, sizeof p, path, "workspace");
        if ((rc = synor__json_int(d, v, p, 0, INT64_MAX, &ws)))
            return rc;
        t.workspace = (uint64_t)ws;
    }
    if ((rc = synor__json_member(d, o, path, "preferred", SYNOR__J_STRING, 0, &v)))
        return rc;
    field(p, sizeof p, path, "preferred");
    if (v && (rc = parse_kind(d, v, p, &t.preferred)))
        return rc;
    t.has_preferred = v != NULL;
    if ((rc = synor__json_member(d, o, path, "fallback", SYNOR__J_STRING, 0, &v)))
        return rc;
    field(p, sizeof p, path, "fallback");
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
    field(p, sizeof p, path, "produces");
    if ((rc = data_refs(w, d, pr, p, &prod, &t.n_produces)))
        return rc;
    field(p, sizeof p, path, "consumes");
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
    double small[ROW_SMALL], *row = NULL;
    const char **names = NULL;
    int rc = parse_task_fields(w, d, o, ti, small, &row, &names);
    if (row != small)
        synor__free(row);
    synor__free(names);
    return rc;
}

/* One element of "deps", tasks[ti].deps[k]: a task id, or {"task": id,
 * "comm_s": seconds}; *id receives the id's value. */
static int dep_ref(const synor__jdoc *d, const synor__jval *x, size_t ti, size_t k,
                   const synor__jval **id, double *comm)
{
    static const char *const keys[] = {"task", "comm_s", NULL};
    synor__jval *tv, *cv;
    char p[96], pc[128];
    *comm = -1;
    *id = x;
    if (x->type == SYNOR__J_STRING)
        return 0;
    if (x->type == SYNOR__J_OBJECT && x->u.obj.n == 2) { /* the common case, no names made */
        tv = synor__json_get(x, "task");
        cv = synor__json_get(x, "comm_s");
        if (tv && cv && tv->type == SYNOR__J_STRING && cv->type == SYNOR__J_NUMBER &&
            cv->u.n.num >= 0 && cv->u.n.num <= MAX_SECONDS) {
            *id = tv;
            *comm = cv->u.n.num;
            return 0;
        }
    }
    snprintf(p, sizeof p, "tasks[%zu].deps[%zu]", ti, k);
    if (x->type != SYNOR__J_OBJECT)
        return synor__json_fail(d, x, SYNOR_ESCHEMA, p,
                                "expected a task id or {\"task\": id, \"comm_s\": seconds}, "
                                "found %s",
                                synor__jtype_name(x->type));
    field(pc, sizeof pc, p, "comm_s");
    int rc;
    if ((rc = synor__json_check_keys(d, x, p, keys)) ||
        (rc = synor__json_member(d, x, p, "task", SYNOR__J_STRING, 1, &tv)) ||
        (rc = synor__json_member(d, x, p, "comm_s", SYNOR__J_NUMBER, 1, &cv)) ||
        (rc = synor__json_number(d, cv, pc, 0, MAX_SECONDS, comm)))
        return rc;
    *id = tv;
    return 0;
}

/* A dependency on a task not read yet, resolved at the end. */
typedef struct late_dep {
    size_t task, k, id; /* id: offset of the name in reader.ids */
    int line, col;      /* of the name */
    size_t *slot;       /* where the index goes (unused after a malformed dependency) */
} late_dep;

/* The state of a load while the tasks stream past. */
typedef struct reader {
    synor_workload *w;
    int rc; /* the first error of a task's fields (pass 1) */
    char msg[1024];
    int dep_rc; /* the first malformed dependency (pass 2), at tasks[dep_task].deps[dep_k] */
    size_t dep_task, dep_k;
    char dep_msg[1024];
    late_dep *late;
    size_t n_late, late_cap;
    synor__buf ids;
    int *where; /* per task: line and column of its "deps", else of the task */
    size_t where_cap;
} reader;

static int grow_to(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 1024;
    while (n < need)
        n *= 2;
    void *q = synor__realloc(*p, n * size);
    if (!q)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    *p = q;
    *cap = n;
    return 0;
}

/* The dependencies of task ti (just added): those on tasks already read
 * resolved now, the others kept for the end; a malformed one is kept as
 * the pass-2 error if it is the first. Only running out of memory fails. */
static int task_deps(reader *r, const synor__jdoc *d, const synor__jval *o, size_t ti)
{
    const synor__jval *deps = synor__json_get(o, "deps"), *at = deps ? deps : o;
    int rc;
    if ((rc = grow_to((void **)&r->where, &r->where_cap, 2 * (ti + 1), sizeof *r->where)))
        return rc;
    r->where[2 * ti] = at->line;
    r->where[2 * ti + 1] = at->col;
    if (r->dep_rc || !deps || !deps->u.arr.n)
        return 0; /* after a malformed dependency only the tasks' fields matter */
    /* owned by the workload from here, kept even when unused */
    size_t n = deps->u.arr.n, *idx = synor__workload_alloc(r->w, n * sizeof *idx);
    double *comm = synor__workload_alloc(r->w, n * sizeof *comm);
    if (!idx || !comm)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    int any = 0;
    for (size_t k = 0; k < n; k++) {
        const synor__jval *id;
        if ((rc = dep_ref(d, deps->u.arr.items[k], ti, k, &id, &comm[k]))) {
            r->dep_rc = rc;
            r->dep_task = ti;
            r->dep_k = k;
            synor__strlcpy(r->dep_msg, synor_errmsg(), sizeof r->dep_msg);
            return 0;
        }
        long j = synor_workload_find_task(r->w, id->u.str.s);
        idx[k] = j >= 0 ? (size_t)j : SIZE_MAX;
        if (j < 0) {
            if ((rc = grow_to((void **)&r->late, &r->late_cap, r->n_late + 1, sizeof *r->late)))
                return rc;
            r->late[r->n_late] = (late_dep){ti, k, r->ids.len, id->line, id->col, &idx[k]};
            synor__buf_append(&r->ids, id->u.str.s, id->u.str.len + 1);
            if (r->ids.failed)
                return synor__error(SYNOR_ENOMEM, "out of memory");
            r->n_late++;
        }
        any |= comm[k] >= 0;
    }
    r->w->tasks[ti].deps = idx;
    r->w->tasks[ti].dep_comm = any ? comm : NULL;
    r->w->tasks[ti].n_deps = n;
    return 0;
}

/* Pass 1 for one task as it streams past (synor__json_each_fn). */
static int each_task(void *ctx, const synor__jdoc *d, size_t i, const synor__jval *o)
{
    reader *r = ctx;
    int rc = parse_task(r->w, d, o, i);
    if (!rc)
        rc = task_deps(r, d, o, i);
    if (!rc)
        return 0;
    r->rc = rc;
    synor__strlcpy(r->msg, synor_errmsg(), sizeof r->msg);
    return 1;
}

/* Pass 2: the dependencies on tasks further down the file, in file order,
 * up to the first malformed dependency. */
static int resolve_late(reader *r, const synor__jdoc *d)
{
    for (size_t x = 0; x < r->n_late; x++) {
        const late_dep *l = &r->late[x];
        if (r->dep_rc && (l->task > r->dep_task || (l->task == r->dep_task && l->k > r->dep_k)))
            break;
        const char *id = r->ids.data + l->id;
        long j = synor_workload_find_task(r->w, id);
        if (j < 0) {
            synor__jval at;
            memset(&at, 0, sizeof at);
            at.type = SYNOR__J_STRING;
            at.line = l->line;
            at.col = l->col;
            char p[96];
            snprintf(p, sizeof p, "tasks[%zu].deps[%zu]", l->task, l->k);
            return synor__json_fail(d, &at, SYNOR_ESCHEMA, p, "no task with id \"%s\"", id);
        }
        if (!r->dep_rc)
            *l->slot = (size_t)j;
    }
    if (r->dep_rc)
        return synor__error(r->dep_rc, "%s", r->dep_msg);
    return 0;
}

int synor_workload_load_string(const char *text, size_t len, const char *name,
                               synor_workload **out)
{
    reader r;
    memset(&r, 0, sizeof r);
    synor__buf_init(&r.ids);
    int rc = synor_workload_create(name, &r.w);
    if (rc)
        return rc;
    synor__jdoc *d = NULL;
    if ((rc = synor__json_parse_each(text, len, name, "tasks", each_task, &r, &d)))
        goto out;
    static const char *const keys[] = {"format", "name", "tasks", NULL};
    const char *top = "(top level)";
    synor__jval *root = synor__jdoc_root(d), *fmt, *nm, *tasks;
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
    if (nm) {
        char *n = synor__strdup(nm->u.str.s);
        if (!n) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            goto out;
        }
        synor__free(r.w->name);
        r.w->name = n;
    }
    if (r.rc) {
        rc = synor__error(r.rc, "%s", r.msg);
        goto out;
    }
    if ((rc = resolve_late(&r, d)))
        goto out;
    if ((rc = synor_workload_finish(r.w)) && r.w->deps_task >= 0) {
        char msg[1024], p[64];
        synor__strlcpy(msg, synor_errmsg(), sizeof msg);
        size_t c = (size_t)r.w->deps_task;
        snprintf(p, sizeof p, "tasks[%zu].deps", c);
        synor__jval at;
        memset(&at, 0, sizeof at);
        at.line = r.where[2 * c];
        at.col = r.where[2 * c + 1];
        rc = synor__json_fail(d, &at, rc, p, "%s", msg);
    }
out:
    if (rc)
        synor_workload_destroy(r.w);
    else
        *out = r.w;
    synor__free(r.late);
    synor__free(r.where);
    synor__buf_free(&r.ids);
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
