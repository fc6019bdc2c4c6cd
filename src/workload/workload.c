/* workload.c - a workload: data items and a DAG of tasks, built by adding
 * data and tasks and then finishing.
 *
 * Invariants after synor_workload_finish:
 *   - every dependency index is < count and no task depends on itself;
 *   - a task's deps are its explicit dependencies plus the producers of the
 *     data it consumes, sorted and unique, with the bytes each edge carries
 *     in dep_bytes and any explicit edge cost in the task's dep_comm (same
 *     order; before finish dep_comm is parallel to the deps as given);
 *   - every data item has at most one producer;
 *   - the graph is acyclic and order[] is a topological order in which ties
 *     keep insertion order (Kahn with a min-heap on the index), so the same
 *     input always gives the same order.
 * Names are looked up through one open-addressing hash table per kind, so a
 * 100,000-task file loads in linear time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "synor/workload.h"
#include "workload/workload_internal.h"

/* ---------------------------------------------------------------- names */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int names_grow(synor__names *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    synor__name_slot *slots = synor__calloc(cap, sizeof *slots);
    if (!slots)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    synor__prefault(slots, cap * sizeof *slots); /* names land all over it */
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].name) {
            size_t j = t->slots[i].hash & (cap - 1);
            while (slots[j].name)
                j = (j + 1) & (cap - 1);
            slots[j] = t->slots[i];
        }
    synor__free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

static long names_find(const synor__names *t, const char *name)
{
    if (!t->cap)
        return -1;
    uint64_t h = hash_str(name);
    for (size_t j = h & (t->cap - 1); t->slots[j].name; j = (j + 1) & (t->cap - 1))
        if (t->slots[j].hash == h && strcmp(t->slots[j].name, name) == 0)
            return (long)t->slots[j].index;
    return -1;
}

/* name must stay valid as long as the table (the workload's own copy). */
static int names_add(synor__names *t, size_t index, const char *name)
{
    int rc;
    if ((t->used + 1) * 2 > t->cap && (rc = names_grow(t)))
        return rc;
    uint64_t h = hash_str(name);
    size_t j = h & (t->cap - 1);
    while (t->slots[j].name)
        j = (j + 1) & (t->cap - 1);
    t->slots[j] = (synor__name_slot){h, name, index};
    t->used++;
    return 0;
}

/* ------------------------------------------------------------- building */

const char *synor_priority_name(synor_priority p)
{
    static const char *const names[] = {"critical", "high", "normal", "low"};
    return (unsigned)p < 4 ? names[p] : "unknown";
}

int synor_workload_create(const char *name, synor_workload **out)
{
    synor_workload *w = synor__calloc(1, sizeof *w);
    if (!w || !(w->name = synor__strdup(name ? name : "workload"))) {
        synor__free(w);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    *out = w;
    return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = synor__realloc(*p, n * size);
    if (!q)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    synor__prefault((char *)q + *cap * size, (n - *cap) * size); /* filled next */
    *p = q;
    *cap = n;
    return 0;
}

#define WL_CHUNK ((size_t)1 << 20)

void *synor__workload_alloc(synor_workload *w, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    synor__wl_chunk *c = w->mem;
    if (!c || c->cap - c->used < n) {
        int big = n > WL_CHUNK / 4; /* a block of its own */
        /* 4 KiB, doubling up to WL_CHUNK: small workloads stay small */
        size_t cap = big ? n : w->mem_next ? w->mem_next : 4096;
        if (!big)
            w->mem_next = cap < WL_CHUNK ? 2 * cap : WL_CHUNK;
        if (!(c = synor__malloc(sizeof *c + cap)))
            return NULL;
        synor__prefault(c, sizeof *c + cap);
        c->used = 0;
        c->cap = cap;
        if (big && w->mem) { /* behind the current one, which has room left */
            c->next = w->mem->next;
            w->mem->next = c;
        } else {
            c->next = w->mem;
            w->mem = c;
        }
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

static void *dup_mem(synor_workload *w, const void *src, size_t n, size_t size, int *fail)
{
    if (!n || !src)
        return NULL;
    void *p = synor__workload_alloc(w, n * size);
    if (!p)
        *fail = 1;
    else
        memcpy(p, src, n * size);
    return p;
}

static size_t *dup_idx(synor_workload *w, const size_t *src, size_t n, int *fail)
{
    return dup_mem(w, src, n, sizeof *src, fail);
}

static char *dup_str(synor_workload *w, const char *s)
{
    int fail = 0;
    return dup_mem(w, s, strlen(s) + 1, 1, &fail);
}

int synor_workload_add_data(synor_workload *w, const char *name, uint64_t bytes, size_t *index)
{
    int rc;
    if (w->finished)
        return synor__error(SYNOR_ESTATE, "workload \"%s\" is finished", w->name);
    if (!name || !*name)
        return synor__error(SYNOR_EINVAL, "data needs a name");
    if (names_find(&w->data_names, name) >= 0)
        return synor__error(SYNOR_EEXIST, "duplicate data \"%s\"", name);
    if ((rc = grow((void **)&w->data, &w->data_cap, w->n_data + 1, sizeof *w->data)))
        return rc;
    synor_data *d = &w->data[w->n_data];
    if (!(d->name = dup_str(w, name)))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    d->bytes = bytes;
    d->producer = -1;
    if ((rc = names_add(&w->data_names, w->n_data, d->name)))
        return rc;
    if (index)
        *index = w->n_data;
    w->n_data++;
    return 0;
}

/* The explicit costs of a task description: a cost row of seconds >= 0 or
 * INFINITY, device names (if any) non-empty and distinct, edge costs finite
 * and >= 0 or negative (none). */
static int check_explicit(const synor_task_desc *t)
{
    for (size_t k = 0; k < t->n_exec; k++) {
        if (!(t->exec_s[k] >= 0))
            return synor__error(SYNOR_EINVAL, "task \"%s\": exec_s[%zu] is %g: seconds must be "
                                              ">= 0 (INFINITY: cannot run there)",
                                t->id, k, t->exec_s[k]);
        if (!t->exec_dev)
            continue;
        if (!t->exec_dev[k] || !*t->exec_dev[k])
            return synor__error(SYNOR_EINVAL, "task \"%s\": exec_s names an empty device",
                                t->id);
        for (size_t j = 0; j < k; j++)
            if (strcmp(t->exec_dev[j], t->exec_dev[k]) == 0)
                return synor__error(SYNOR_EINVAL, "task \"%s\": exec_s names device \"%s\" twice",
                                    t->id, t->exec_dev[k]);
    }
    for (size_t k = 0; t->dep_comm && k < t->n_deps; k++)
        if (isnan(t->dep_comm[k]) || isinf(t->dep_comm[k]))
            return synor__error(SYNOR_EINVAL, "task \"%s\": comm_s of dependency %zu is %g: "
                                              "seconds must be finite",
                                t->id, t->deps[k], t->dep_comm[k]);
    return 0;
}

int synor_workload_add_task(synor_workload *w, const synor_task_desc *t, size_t *index)
{
    int rc;
    if (w->finished)
        return synor__error(SYNOR_ESTATE, "workload \"%s\" is finished", w->name);
    if (!t->id || !*t->id)
        return synor__error(SYNOR_EINVAL, "a task needs an id");
    if (names_find(&w->task_names, t->id) >= 0)
        return synor__error(SYNOR_EEXIST, "duplicate task id \"%s\"", t->id);
    if (t->group && !*t->group)
        return synor__error(SYNOR_EINVAL, "task \"%s\": an empty group name", t->id);
    for (size_t i = 0; i < t->n_produces; i++)
        if (t->produces[i] >= w->n_data)
            return synor__error(SYNOR_ERANGE, "task \"%s\": no data %zu", t->id, t->produces[i]);
    for (size_t i = 0; i < t->n_consumes; i++)
        if (t->consumes[i] >= w->n_data)
            return synor__error(SYNOR_ERANGE, "task \"%s\": no data %zu", t->id, t->consumes[i]);
    for (size_t i = 0; i < t->n_produces; i++) {
        const synor_data *d = &w->data[t->produces[i]];
        if (d->producer >= 0)
            return synor__error(SYNOR_EINVAL, "data \"%s\" is produced by both \"%s\" and \"%s\"",
                                d->name, w->tasks[d->producer].id, t->id);
    }
    if ((rc = check_explicit(t)))
        return rc;
    if ((rc = grow((void **)&w->tasks, &w->task_cap, w->n_tasks + 1, sizeof *w->tasks)))
        return rc;
    synor_task *k = &w->tasks[w->n_tasks];
    memset(k, 0, sizeof *k);
    /* what is allocated before a failure stays with the workload, unused */
    int fail = 0;
    char *id = dup_str(w, t->id);
    size_t *deps = dup_idx(w, t->deps, t->n_deps, &fail);
    size_t *prod = dup_idx(w, t->produces, t->n_produces, &fail);
    size_t *cons = dup_idx(w, t->consumes, t->n_consumes, &fail);
    double *exec = dup_mem(w, t->exec_s, t->n_exec, sizeof *exec, &fail);
    double *comm = dup_mem(w, t->dep_comm, t->n_deps, sizeof *comm, &fail);
    char *group = t->group ? dup_str(w, t->group) : NULL;
    fail |= t->group && !group;
    const char **edev = t->exec_dev && t->n_exec
                            ? synor__workload_alloc(w, t->n_exec * sizeof *edev)
                            : NULL;
    fail |= t->exec_dev && t->n_exec && !edev;
    for (size_t j = 0; edev && j < t->n_exec; j++)
        fail |= !(edev[j] = dup_str(w, t->exec_dev[j]));
    if (fail || !id)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    k->id = id;
    k->op = t->op;
    k->priority = t->priority;
    k->deps = deps;
    k->n_deps = t->n_deps;
    k->produces = prod;
    k->n_produces = t->n_produces;
    k->consumes = cons;
    k->n_consumes = t->n_consumes;
    k->workspace = t->workspace;
    k->has_preferred = t->has_preferred;
    k->has_fallback = t->has_fallback;
    k->preferred = t->preferred;
    k->fallback = t->fallback;
    k->exec_s = exec;
    k->exec_dev = edev;
    k->n_exec = t->n_exec;
    k->dep_comm = comm;
    k->group = group;
    k->group_index = SIZE_MAX;
    if ((rc = names_add(&w->task_names, w->n_tasks, id))) {
        memset(k, 0, sizeof *k);
        return rc;
    }
    for (size_t i = 0; i < t->n_produces; i++)
        w->data[t->produces[i]].producer = (long)w->n_tasks;
    if (index)
        *index = w->n_tasks;
    w->n_tasks++;
    return 0;
}

long synor_workload_find_task(const synor_workload *w, const char *id)
{
    return names_find(&w->task_names, id);
}

long synor_workload_find_data(const synor_workload *w, const char *name)
{
    return names_find(&w->data_names, name);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* The explicit edge costs of task i (parallel to its raw deps) moved onto
 * its merged deps all[0..u); NULL when it has none. Two different costs for
 * one edge are an error. */
static int merge_comm(synor_workload *w, size_t i, const size_t *all, size_t u, double **out)
{
    const synor_task *t = &w->tasks[i];
    *out = NULL;
    int any = 0;
    for (size_t j = 0; t->dep_comm && j < t->n_deps; j++)
        any |= t->dep_comm[j] >= 0;
    if (!any)
        return 0;
    double *comm = synor__workload_alloc(w, u * sizeof *comm);
    if (!comm)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t q = 0; q < u; q++)
        comm[q] = -1;
    for (size_t j = 0; j < t->n_deps; j++) {
        if (!(t->dep_comm[j] >= 0))
            continue;
        size_t lo = 0, hi = u; /* all[] is sorted */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (all[mid] < t->deps[j])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (comm[lo] >= 0 && comm[lo] != t->dep_comm[j]) {
            double had = comm[lo];
            w->deps_task = (long)i;
            return synor__error(SYNOR_EINVAL,
                                "task \"%s\": the edge from \"%s\" has two different comm_s, "
                                "%g and %g",
                                t->id, w->tasks[t->deps[j]].id, had, t->dep_comm[j]);
        }
        comm[lo] = t->dep_comm[j];
    }
    *out = comm;
    return 0;
}

/* merge_deps where task i consumes nothing another task produces and its
 * deps are already sorted and unique (a file written by synor, a generator
 * listing predecessors in order): they stay as they are, no edge carries
 * bytes. 1 when that is not the case. */
static int merge_sorted(synor_workload *w, size_t i)
{
    synor_task *t = &w->tasks[i];
    for (size_t j = 0; j < t->n_consumes; j++)
        if (w->data[t->consumes[j]].producer >= 0)
            return 1;
    int any = 0;
    for (size_t j = 0; j < t->n_deps; j++) {
        if (t->deps[j] >= w->n_tasks || t->deps[j] == i || (j && t->deps[j] <= t->deps[j - 1]))
            return 1; /* the errors as merge_deps words them */
        if (t->dep_comm && t->dep_comm[j] < 0 && t->dep_comm[j] != -1)
            return 1; /* "none" written as merge_comm writes it */
        any |= t->dep_comm && t->dep_comm[j] >= 0;
    }
    if (!any)
        t->dep_comm = NULL;
    w->dep_bytes[i] = NULL; /* synor_workload_edge_bytes: 0 */
    return 0;
}

/* Merges explicit deps with the producers of consumed data, computing the
 * bytes on each edge. */
static int merge_deps(synor_workload *w, size_t i)
{
    if (!merge_sorted(w, i))
        return 0;
    synor_task *t = &w->tasks[i];
    size_t n = t->n_deps + t->n_consumes;
    size_t *all = synor__workload_alloc(w, (n ? n : 1) * sizeof *all);
    uint64_t *bytes = synor__workload_alloc(w, (n ? n : 1) * sizeof *bytes);
    if (!all || !bytes)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    memset(bytes, 0, (n ? n : 1) * sizeof *bytes);
    size_t m = 0;
    for (size_t j = 0; j < t->n_deps; j++) {
        if (t->deps[j] >= w->n_tasks)
            return synor__error(SYNOR_ERANGE, "task \"%s\": dependency %zu does not exist", t->id,
                                t->deps[j]);
        all[m++] = t->deps[j];
    }
    for (size_t j = 0; j < t->n_consumes; j++)
        if (w->data[t->consumes[j]].producer >= 0)
            all[m++] = (size_t)w->data[t->consumes[j]].producer;
    qsort(all, m, sizeof *all, cmp_size);
    size_t u = 0;
    for (size_t j = 0; j < m; j++)
        if (u == 0 || all[u - 1] != all[j])
            all[u++] = all[j];
    for (size_t j = 0; j < u; j++)
        if (all[j] == i) {
            w->deps_task = (long)i;
            return synor__error(SYNOR_EINVAL, "dependency cycle: %s -> %s", t->id, t->id);
        }
    for (size_t j = 0; j < t->n_consumes; j++) {
        const synor_data *d = &w->data[t->consumes[j]];
        if (d->producer < 0)
            continue;
        for (size_t q = 0; q < u; q++)
            if (all[q] == (size_t)d->producer)
                bytes[q] += d->bytes;
    }
    double *comm = NULL;
    int rc = merge_comm(w, i, all, u, &comm);
    if (rc)
        return rc;
    t->deps = all;
    t->n_deps = u;
    t->dep_comm = comm;
    w->dep_bytes[i] = bytes;
    return 0;
}

/* Names the tasks of one cycle among the nodes Kahn's algorithm could not
 * order (left[i] != 0): walk predecessors until a node repeats. */
static int report_cycle(synor_workload *w, const unsigned char *left)
{
    size_t start = 0;
    while (!left[start])
        start++;
    size_t *seen_at = synor__malloc(w->n_tasks * sizeof *seen_at);
    size_t *path = synor__malloc(w->n_tasks * sizeof *path);
    if (!seen_at || !path) {
        synor__free(seen_at);
        synor__free(path);
        return synor__error(SYNOR_EINVAL, "cycle through task \"%s\"", w->tasks[start].id);
    }
    for (size_t i = 0; i < w->n_tasks; i++)
        seen_at[i] = (size_t)-1;
    size_t len = 0, v = start;
    while (seen_at[v] == (size_t)-1) {
        seen_at[v] = len;
        path[len++] = v;
        const synor_task *t = &w->tasks[v];
        size_t next = v;
        for (size_t j = 0; j < t->n_deps; j++)
            if (left[t->deps[j]]) {
                next = t->deps[j];
                break;
            }
        v = next;
    }
    /* path[seen_at[v] .. len) is the cycle, each task followed by one of its
     * dependencies. Start it at its lowest index so the message does not
     * depend on where the walk began. */
    size_t c0 = seen_at[v], clen = len - c0, lo = c0;
    for (size_t k = c0; k < len; k++)
        if (path[k] < path[lo])
            lo = k;
    synor__buf b;
    synor__buf_init(&b);
    for (size_t k = 0; k <= clen; k++)
        synor__buf_printf(&b, "%s%s", k ? " -> " : "",
                          w->tasks[path[c0 + (lo - c0 + k) % clen]].id);
    w->deps_task = (long)path[lo];
    char *s = synor__buf_take(&b);
    int rc = synor__error(SYNOR_EINVAL, "dependency cycle: %s", s ? s : "(out of memory)");
    free(s);
    synor__free(seen_at);
    synor__free(path);
    return rc;
}

/* Kahn's algorithm with a binary min-heap of ready indexes. */
static int topo_order(synor_workload *w)
{
    size_t n = w->n_tasks, rc = 0;
    size_t *indeg = synor__calloc_whole(n ? n : 1, sizeof *indeg);
    size_t *succ_off = synor__calloc_whole(n + 1, sizeof *succ_off);
    size_t n_edges = 0;
    for (size_t i = 0; i < n; i++)
        n_edges += w->tasks[i].n_deps;
    size_t *succ = synor__malloc_whole((n_edges ? n_edges : 1) * sizeof *succ);
    size_t *heap = synor__malloc_whole((n ? n : 1) * sizeof *heap);
    w->order = synor__malloc_whole((n ? n : 1) * sizeof *w->order);
    if (!indeg || !succ_off || !succ || !heap || !w->order) {
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        indeg[i] = w->tasks[i].n_deps;
        for (size_t j = 0; j < w->tasks[i].n_deps; j++)
            succ_off[w->tasks[i].deps[j] + 1]++;
    }
    for (size_t i = 0; i < n; i++)
        succ_off[i + 1] += succ_off[i];
    {
        size_t *fill = synor__calloc(n ? n : 1, sizeof *fill);
        if (!fill) {
            rc = 1;
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < w->tasks[i].n_deps; j++) {
                size_t d = w->tasks[i].deps[j];
                succ[succ_off[d] + fill[d]++] = i;
            }
        synor__free(fill);
    }
    size_t hn = 0, done = 0;
    for (size_t i = 0; i < n; i++)
        if (!indeg[i])
            heap[hn++] = i; /* ascending: already a heap */
    while (hn) {
        size_t v = heap[0];
        heap[0] = heap[--hn];
        for (size_t k = 0;;) { /* sift down */
            size_t l = 2 * k + 1, s = k;
            if (l < hn && heap[l] < heap[s])
                s = l;
            if (l + 1 < hn && heap[l + 1] < heap[s])
                s = l + 1;
            if (s == k)
                break;
            size_t tmp = heap[k];
            heap[k] = heap[s];
            heap[s] = tmp;
            k = s;
        }
        w->order[done++] = v;
        for (size_t e = succ_off[v]; e < succ_off[v + 1]; e++) {
            size_t s = succ[e];
            if (--indeg[s] == 0) {
                size_t k = hn++;
                heap[k] = s;
                while (k && heap[(k - 1) / 2] > heap[k]) { /* sift up */
                    size_t p = (k - 1) / 2, tmp = heap[p];
                    heap[p] = heap[k];
                    heap[k] = tmp;
                    k = p;
                }
            }
        }
    }
    if (done < n) {
        unsigned char *left = synor__calloc(n, 1);
        if (!left) {
            rc = 1;
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            left[i] = indeg[i] != 0;
        int e = report_cycle(w, left);
        synor__free(left);
        synor__free(indeg);
        synor__free(succ_off);
        synor__free(succ);
        synor__free(heap);
        synor__free(w->order);
        w->order = NULL;
        return e;
    }
out:
    synor__free(indeg);
    synor__free(succ_off);
    synor__free(succ);
    synor__free(heap);
    if (rc) {
        synor__free(w->order);
        w->order = NULL;
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    return 0;
}

static int by_group(const void *a, const void *b)
{
    const synor_task *x = *(synor_task *const *)a, *y = *(synor_task *const *)b;
    return strcmp(x->group, y->group);
}

/* Numbers the colocation groups: by name, in sorted order. */
static int number_groups(synor_workload *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->n_tasks; i++)
        n += w->tasks[i].group != NULL;
    w->n_groups = 0;
    if (!n)
        return 0;
    synor_task **v = synor__malloc(n * sizeof *v);
    if (!v)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    n = 0;
    for (size_t i = 0; i < w->n_tasks; i++)
        if (w->tasks[i].group)
            v[n++] = &w->tasks[i];
    qsort(v, n, sizeof *v, by_group);
    for (size_t k = 0; k < n; k++) {
        if (k && strcmp(v[k - 1]->group, v[k]->group))
            w->n_groups++;
        v[k]->group_index = w->n_groups;
    }
    w->n_groups++;
    synor__free(v);
    return 0;
}

size_t synor_workload_group_count(const synor_workload *w) { return w->n_groups; }

int synor_workload_set_host(synor_workload *w, double before_s, double per_task_s,
                            double after_s)
{
    if (!w)
        return synor__error(SYNOR_EINVAL, "synor_workload_set_host: workload is NULL");
    const double v[3] = {before_s, per_task_s, after_s};
    static const char *const name[3] = {"before_s", "per_task_s", "after_s"};
    for (int k = 0; k < 3; k++)
        if (!isfinite(v[k]) || v[k] < 0)
            return synor__error(SYNOR_EINVAL, "workload \"%s\": host %s = %g (finite, >= 0)",
                                w->name, name[k], v[k]);
    w->host_before = before_s;
    w->host_per_task = per_task_s;
    w->host_after = after_s;
    return 0;
}

void synor_workload_host(const synor_workload *w, double *before_s, double *per_task_s,
                         double *after_s)
{
    if (before_s)
        *before_s = w ? w->host_before : 0;
    if (per_task_s)
        *per_task_s = w ? w->host_per_task : 0;
    if (after_s)
        *after_s = w ? w->host_after : 0;
}

int synor_workload_finish(synor_workload *w)
{
    int rc;
    if (w->finished)
        return synor__error(SYNOR_ESTATE, "workload \"%s\" is already finished", w->name);
    w->deps_task = -1;
    synor__free(w->dep_bytes);
    w->dep_bytes = synor__calloc(w->n_tasks ? w->n_tasks : 1, sizeof *w->dep_bytes);
    if (!w->dep_bytes)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < w->n_tasks; i++)
        if ((rc = merge_deps(w, i)))
            return rc;
    if ((rc = topo_order(w)) || (rc = number_groups(w)))
        return rc;
    w->finished = 1;
    return 0;
}

void synor_workload_destroy(synor_workload *w)
{
    if (!w)
        return;
    for (synor__wl_chunk *c = w->mem, *next; c; c = next) {
        next = c->next;
        synor__free(c);
    }
    synor__free(w->dep_bytes);
    synor__free(w->tasks);
    synor__free(w->data);
    synor__free(w->order);
    synor__free(w->task_names.slots);
    synor__free(w->data_names.slots);
    synor__free(w->name);
    synor__free(w);
}

/* ------------------------------------------------------------- queries */

const char *synor_workload_name(const synor_workload *w) { return w->name; }
size_t synor_workload_count(const synor_workload *w) { return w->n_tasks; }
size_t synor_workload_data_count(const synor_workload *w) { return w->n_data; }

const synor_task *synor_workload_task(const synor_workload *w, size_t i)
{
    return i < w->n_tasks ? &w->tasks[i] : NULL;
}

const synor_data *synor_workload_data(const synor_workload *w, size_t i)
{
    return i < w->n_data ? &w->data[i] : NULL;
}

uint64_t synor_workload_edge_bytes(const synor_workload *w, size_t task, size_t dep)
{
    if (task >= w->n_tasks || !w->dep_bytes || !w->dep_bytes[task])
        return 0;
    const synor_task *t = &w->tasks[task];
    for (size_t j = 0; j < t->n_deps; j++)
        if (t->deps[j] == dep)
            return w->dep_bytes[task][j];
    return 0;
}

double synor_workload_edge_comm(const synor_workload *w, size_t task, size_t dep)
{
    if (task >= w->n_tasks || !w->tasks[task].dep_comm)
        return -1;
    const synor_task *t = &w->tasks[task];
    for (size_t j = 0; j < t->n_deps; j++)
        if (t->deps[j] == dep)
            return t->dep_comm[j];
    return -1;
}

const size_t *synor_workload_order(const synor_workload *w) { return w->order; }

double synor_workload_flops(const synor_workload *w)
{
    double s = 0;
    for (size_t i = 0; i < w->n_tasks; i++)
        s += w->tasks[i].op.work.flops;
    return s;
}

double synor_workload_bytes(const synor_workload *w)
{
    double s = 0;
    for (size_t i = 0; i < w->n_tasks; i++)
        s += w->tasks[i].op.work.bytes_read + w->tasks[i].op.work.bytes_written;
    return s;
}
