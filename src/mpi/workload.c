/* workload.c - a workload file (synor/workload.h) run across MPI ranks:
 * the real-run machinery of synor/exec.h (kernels, operands, seeded data)
 * with its submissions turned into inserts (synor_exec_hooks), each task
 * placed by the owner rule or by the planner on a fabric of one node per
 * rank; and that fabric, which the ready graphs plan on too. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "mpi/comm.h"
#include "mpi/mpi_internal.h"
#include "synor/cost.h"
#include "synor/mpi.h"

int synor__mpi_fabric_create(int size, const char *profile, double gb_s, double latency_us,
                             synor_catalog **cat, synor_fabric **f)
{
    *cat = NULL;
    *f = NULL;
    size_t cap = 256 + 192 * (size_t)size + strlen(profile) * (size_t)size;
    char *fab = synor__malloc(cap);
    if (!fab)
        return synor__error(SYNOR_ENOMEM, "mpi: out of memory");
    size_t len = (size_t)snprintf(fab, cap,
                                  "{\"format\": \"synor-fabric/1\", \"name\": \"mpi-%d\", "
                                  "\"currency\": \"USD\", \"nodes\": [",
                                  size);
    for (int i = 0; i < size && len < cap; i++)
        len += (size_t)snprintf(fab + len, cap - len, "%s{\"name\": \"rank%d\"}",
                                i ? ", " : "", i);
    if (len < cap)
        len += (size_t)snprintf(fab + len, cap - len, "], \"devices\": [");
    for (int i = 0; i < size && len < cap; i++)
        len += (size_t)snprintf(fab + len, cap - len,
                                "%s{\"name\": \"cpu%d\", \"profile\": \"%s\", \"node\": "
                                "\"rank%d\", \"price_per_hour\": \"1.00\"}",
                                i ? ", " : "", i, profile, i);
    if (len < cap)
        len += (size_t)snprintf(fab + len, cap - len,
                                "], \"network\": {\"bandwidth_gb_s\": %.17g, "
                                "\"latency_us\": %.17g}}",
                                gb_s, latency_us);
    int rc = 0;
    if (len >= cap)
        rc = synor__error(SYNOR_ERANGE, "mpi: %d ranks: the fabric is too large", size);
    if (rc == 0)
        rc = synor_catalog_create(cat);
    if (rc == 0)
        rc = synor_catalog_load_builtin(*cat);
    if (rc == 0)
        rc = synor_fabric_load_string(*cat, fab, len, "mpi fabric", f);
    synor__free(fab);
    if (rc < 0) {
        synor_catalog_destroy(*cat);
        *cat = NULL;
    }
    return rc;
}

/* ------------------------------------------------------------ workloads */

typedef struct wl_run {
    synor_mpi *m;
    const synor_workload *w;
    const int *task_rank;  /* per task */
    const int *data_owner; /* per datum */
    synor_handle **h;      /* per datum, this rank's */
    synor_mpi_data **md;   /* per datum */
    unsigned char *used;   /* per rank: ran a task */
} wl_run;

static int hook_data(void *user, size_t di, synor_handle *h)
{
    wl_run *r = user;
    r->h[di] = h;
    return synor_mpi_data_register(r->m, h, r->data_owner[di], &r->md[di]);
}

static int hook_submit(void *user, size_t ti, const synor_task_spec *s)
{
    wl_run *r = user;
    synor_mpi_task t = {.kernel = s->kernel, .priority = s->priority, .ndata = s->ndata,
                        .args = s->args, .args_size = s->args_size, .user = s->user,
                        .tag = s->tag, .rank = r->task_rank[ti]};
    size_t nd = synor_workload_data_count(r->w);
    for (unsigned i = 0; i < s->ndata; i++) {
        size_t di = 0;
        while (di < nd && r->h[di] != s->data[i])
            di++;
        if (di == nd)
            return synor__error(SYNOR_EINVAL, "mpi: task %zu: an operand of no datum", ti);
        t.data[i] = r->md[di];
        t.mode[i] = s->mode[i];
    }
    int rc = synor_mpi_task_insert(r->m, &t);
    if (rc >= 0)
        r->used[rc] = 1;
    return rc < 0 ? rc : 0;
}

static int hook_result(void *user, size_t di)
{
    wl_run *r = user;
    return synor_mpi_data_fetch(r->m, r->md[di], 0);
}

static int hook_wait(void *user)
{
    wl_run *r = user;
    return synor_mpi_wait_all(r->m);
}

/* Owner rule: external data round robin over the ranks in data order; a
 * task on the rank owning its first input; what it produces owned there. */
static void place_owner(const synor_workload *w, int size, int *task_rank, int *owner)
{
    size_t nd = synor_workload_data_count(w), next = 0;
    for (size_t di = 0; di < nd; di++)
        owner[di] = synor_workload_data(w, di)->producer < 0 ? (int)(next++ % (size_t)size) : 0;
    const size_t *order = synor_workload_order(w);
    for (size_t oi = 0; oi < synor_workload_count(w); oi++) {
        const synor_task *t = synor_workload_task(w, order[oi]);
        int r = t->n_consumes ? owner[t->consumes[0]] : 0;
        task_rank[order[oi]] = r;
        for (size_t j = 0; j < t->n_produces; j++)
            owner[t->produces[j]] = r;
    }
}

/* The planner on a fabric of one node per rank; external data start on
 * the rank of their first consumer, produced data on their producer's. */
static int place_plan(const synor_workload *w, const synor_mpi_graph_options *o, int size,
                      int *task_rank, int *owner)
{
    synor_catalog *cat = NULL;
    synor_fabric *f = NULL;
    synor_cost *c = NULL;
    synor_plan *p = NULL;
    synor_plan_options po;
    synor_plan_options_init(&po);
    po.strategy = o->strategy;
    int rc = synor__mpi_fabric_create(size, o->cpu_profile, o->network_gb_s,
                                      o->network_latency_us, &cat, &f);
    if (rc == 0)
        rc = synor_cost_create(w, f, &c);
    if (rc == 0)
        rc = synor_plan_create(c, &po, &p);
    if (rc == 0) {
        size_t nd = synor_workload_data_count(w);
        for (size_t di = 0; di < nd; di++)
            owner[di] = -1;
        const size_t *order = synor_workload_order(w);
        for (size_t oi = 0; oi < synor_workload_count(w); oi++) {
            size_t ti = order[oi];
            const synor_task *t = synor_workload_task(w, ti);
            int r = (int)synor_fabric_device_at(f, p->device[ti])->node;
            task_rank[ti] = r;
            for (size_t j = 0; j < t->n_consumes; j++)
                if (owner[t->consumes[j]] < 0)
                    owner[t->consumes[j]] = r;
            for (size_t j = 0; j < t->n_produces; j++)
                owner[t->produces[j]] = r;
        }
        for (size_t di = 0; di < nd; di++)
            if (owner[di] < 0)
                owner[di] = 0;
    }
    synor_plan_destroy(p);
    synor_cost_destroy(c);
    synor_fabric_destroy(f);
    synor_catalog_destroy(cat);
    return rc;
}

int synor_mpi_workload_run(synor_mpi *m, const synor_workload *w,
                           const synor_mpi_graph_options *o, synor_mpi_workload_result *out)
{
    memset(out, 0, sizeof *out);
    int size = synor_mpi_size(m), rc = synor_exec_check(w);
    if (rc < 0)
        return rc;
    size_t nt = synor_workload_count(w), nd = synor_workload_data_count(w);
    wl_run r = {.m = m, .w = w};
    int *task_rank = synor__calloc(nt ? nt : 1, sizeof *task_rank);
    int *owner = synor__calloc(nd ? nd : 1, sizeof *owner);
    r.h = synor__calloc(nd ? nd : 1, sizeof *r.h);
    r.md = synor__calloc(nd ? nd : 1, sizeof *r.md);
    r.used = synor__calloc((size_t)size, 1);
    if (!task_rank || !owner || !r.h || !r.md || !r.used) {
        rc = synor__error(SYNOR_ENOMEM, "mpi: out of memory");
        goto out;
    }
    if (o->placement == SYNOR_MPI_PLACE_PLAN)
        rc = place_plan(w, o, size, task_rank, owner);
    else
        place_owner(w, size, task_rank, owner);
    if (rc < 0)
        goto out;
    r.task_rank = task_rank;
    r.data_owner = owner;
    synor_exec_hooks hooks = {.user = &r, .data = hook_data, .submit = hook_submit,
                              .result = hook_result, .wait = hook_wait};
    synor_mpi_stats s0, s1;
    synor_mpi_get_stats(m, &s0);
    if ((rc = synor__comm_barrier()) < 0)
        goto out;
    rc = synor_exec_workload_hooked(synor_mpi_runtime(m), w, o->seed, NULL, &hooks, &out->run);
    if (rc < 0)
        goto out;
    synor_mpi_get_stats(m, &s1);
    double msgs = (double)(s1.messages_sent - s0.messages_sent);
    double bytes = (double)(s1.bytes_sent - s0.bytes_sent);
    if ((rc = synor__comm_sum(&msgs)) < 0 || (rc = synor__comm_sum(&bytes)) < 0)
        goto out;
    out->messages = (uint64_t)msgs;
    out->bytes = (uint64_t)bytes;
    for (int i = 0; i < size; i++)
        out->ranks_used += r.used[i];
out:
    synor__free(task_rank);
    synor__free(owner);
    synor__free(r.h);
    synor__free(r.md);
    synor__free(r.used);
    return rc;
}
