/* graphs.c - the two ready graphs of synor/mpi.h (data-parallel with a tree
 * all-reduce; a pipeline of stages), their placement (owner rule or the
 * planner on a fabric of one node per rank), and the serial reference they
 * are checked against.
 *
 * Every kernel is a plain loop in a fixed order, and the reference calls
 * the same functions in the same order, so the results are bitwise equal
 * to the reference on any number of ranks: a difference is a bug in the
 * transfers, never rounding. Matrices are row-major fp32. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "mpi/comm.h"
#include "mpi/mpi_internal.h"
#include "synor/fabric.h"
#include "synor/mpi.h"
#include "synor/plan.h"
#include "synor/profile.h"

/* ------------------------------------------------------------- kernels */

typedef struct dims {
    size_t rows, k, n;
    float lr;
} dims;

/* out = relu(a w): a rows x k, w k x n */
static void linear_relu(const float *a, const float *w, float *out, const dims *d)
{
    for (size_t r = 0; r < d->rows; r++) {
        float *o = out + r * d->n;
        for (size_t j = 0; j < d->n; j++)
            o[j] = 0.0f;
        for (size_t k = 0; k < d->k; k++) {
            float av = a[r * d->k + k];
            const float *wr = w + k * d->n;
            for (size_t j = 0; j < d->n; j++)
                o[j] += av * wr[j];
        }
        for (size_t j = 0; j < d->n; j++)
            o[j] = o[j] > 0.0f ? o[j] : 0.0f;
    }
}

/* g = x^T h: x rows x k, h rows x n, g k x n (a gradient's shape) */
static void gram(const float *x, const float *h, float *g, const dims *d)
{
    for (size_t i = 0; i < d->k * d->n; i++)
        g[i] = 0.0f;
    for (size_t r = 0; r < d->rows; r++)
        for (size_t i = 0; i < d->k; i++) {
            float xv = x[r * d->k + i];
            for (size_t j = 0; j < d->n; j++)
                g[i * d->n + j] += xv * h[r * d->n + j];
        }
}

static void add_into(float *a, const float *b, const dims *d)
{
    for (size_t i = 0; i < d->k * d->n; i++)
        a[i] += b[i];
}

static void sgd(float *w, const float *g, const dims *d)
{
    for (size_t i = 0; i < d->k * d->n; i++)
        w[i] -= d->lr * g[i];
}

static int k_linear(const synor_task_ctx *c)
{
    linear_relu(c->buffers[0], c->buffers[1], c->buffers[2], c->args);
    return 0;
}
static int k_gram(const synor_task_ctx *c)
{
    gram(c->buffers[0], c->buffers[1], c->buffers[2], c->args);
    return 0;
}
static int k_add(const synor_task_ctx *c)
{
    add_into(c->buffers[0], c->buffers[1], c->args);
    return 0;
}
static int k_sgd(const synor_task_ctx *c)
{
    sgd(c->buffers[0], c->buffers[1], c->args);
    return 0;
}

#define KERNEL(var, nm, f)                                                                     \
    static const synor_kernel var = {.name = nm, .op = SYNOR_OP_CUSTOM,                        \
                                     .fn = {[SYNOR_KIND_CPU] = f},                              \
                                     .flags = SYNOR_KERNEL_FAILS_BEFORE_WRITING}
KERNEL(kern_linear, "linear_relu", k_linear);
KERNEL(kern_gram, "gradient", k_gram);
KERNEL(kern_add, "allreduce_add", k_add);
KERNEL(kern_sgd, "update", k_sgd);

/* ------------------------------------------------------- graph as a list */

enum { T_LINEAR, T_GRAM, T_ADD, T_SGD };

typedef struct gtask {
    int type;
    size_t in0, in1, out; /* data; T_ADD / T_SGD: out is read-write, in1 unused */
    dims d;
    size_t item;          /* pipeline: the stage's weight; else SIZE_MAX */
} gtask;

typedef struct graph {
    size_t nd, nt;
    size_t *elems;  /* per datum */
    int *owner;     /* per datum (owner rule) */
    int *init;      /* per datum: filled with seeded values (1) or zeros (0) */
    float *scale;   /* per datum: of its seeded values */
    gtask *t;
    size_t *outputs;
    size_t nout;
    int *rank;      /* per task: -1 owner rule, else planned */
} graph;

static void graph_free(graph *g)
{
    synor__free(g->elems), synor__free(g->owner), synor__free(g->init), synor__free(g->scale);
    synor__free(g->t), synor__free(g->outputs), synor__free(g->rank);
}

static int graph_alloc(graph *g, size_t nd, size_t nt, size_t nout)
{
    memset(g, 0, sizeof *g);
    g->elems = synor__calloc(nd, sizeof *g->elems);
    g->owner = synor__calloc(nd, sizeof *g->owner);
    g->init = synor__calloc(nd, sizeof *g->init);
    g->scale = synor__calloc(nd, sizeof *g->scale);
    g->t = synor__calloc(nt, sizeof *g->t);
    g->outputs = synor__calloc(nout, sizeof *g->outputs);
    g->rank = synor__calloc(nt, sizeof *g->rank);
    if (!g->elems || !g->owner || !g->init || !g->scale || !g->t || !g->outputs || !g->rank) {
        graph_free(g);
        return synor__error(SYNOR_ENOMEM, "mpi graph: out of memory");
    }
    g->nd = nd;
    g->nout = nout;
    return 0;
}

/* Data: W_s (parts), x_s, h_s, g_s; per step: forward, gradient, the tree
 * reduction into g_0, every replica's update from g_0. */
static int build_data_parallel(const synor_mpi_graph_options *o, int size, graph *g)
{
    size_t S = o->parts, D = o->dim, B = o->rows;
    /* per step: S forwards, S gradients, S - 1 additions, S updates */
    int rc = graph_alloc(g, 4 * S, o->steps * 4 * S, S);
    if (rc < 0)
        return rc;
    float ws = sqrtf(6.0f / (float)D);
    for (size_t s = 0; s < S; s++) {
        int r = (int)(s % (size_t)size);
        size_t W = s, X = S + s, H = 2 * S + s, G = 3 * S + s;
        g->elems[W] = D * D, g->owner[W] = r, g->init[W] = 1, g->scale[W] = ws;
        g->elems[X] = B * D, g->owner[X] = r, g->init[X] = 2, g->scale[X] = 1.0f;
        g->elems[H] = B * D, g->owner[H] = r;
        g->elems[G] = D * D, g->owner[G] = r;
        g->outputs[s] = W;
    }
    dims fw = {.rows = B, .k = D, .n = D}, sq = {.rows = B, .k = D, .n = D, .lr = 1e-3f};
    for (size_t step = 0; step < o->steps; step++) {
        for (size_t s = 0; s < S; s++)
            g->t[g->nt++] = (gtask){T_LINEAR, S + s, s, 2 * S + s, fw, SIZE_MAX};
        for (size_t s = 0; s < S; s++)
            g->t[g->nt++] = (gtask){T_GRAM, S + s, 2 * S + s, 3 * S + s, fw, SIZE_MAX};
        for (size_t st = 1; st < S; st *= 2)
            for (size_t s = 0; s + st < S; s += 2 * st)
                g->t[g->nt++] = (gtask){T_ADD, 3 * S + s + st, 0, 3 * S + s, sq, SIZE_MAX};
        for (size_t s = 0; s < S; s++)
            g->t[g->nt++] = (gtask){T_SGD, 3 * S, 0, s, sq, SIZE_MAX};
    }
    return 0;
}

/* Data: Wp_p (parts), x_m (steps), a_pm; micro-batch m goes through every
 * stage; inserted micro-batch by micro-batch, so stages overlap. */
static int build_pipeline(const synor_mpi_graph_options *o, int size, graph *g)
{
    size_t P = o->parts, M = o->steps, D = o->dim, B = o->rows;
    int rc = graph_alloc(g, P + M + P * M, P * M, M);
    if (rc < 0)
        return rc;
    for (size_t p = 0; p < P; p++)
        g->elems[p] = D * D, g->owner[p] = (int)(p % (size_t)size), g->init[p] = 1,
        g->scale[p] = sqrtf(6.0f / (float)D);
    for (size_t m = 0; m < M; m++)
        g->elems[P + m] = B * D, g->owner[P + m] = 0, g->init[P + m] = 2, g->scale[P + m] = 1.0f;
    dims fw = {.rows = B, .k = D, .n = D};
    for (size_t m = 0; m < M; m++)
        for (size_t p = 0; p < P; p++) {
            size_t a = P + M + p * M + m;
            g->elems[a] = B * D, g->owner[a] = (int)(p % (size_t)size);
            size_t in = p ? P + M + (p - 1) * M + m : P + m;
            g->t[g->nt++] = (gtask){T_LINEAR, in, p, a, fw, p};
            if (p == P - 1)
                g->outputs[m] = a;
        }
    return 0;
}

/* ------------------------------------------------------------ placement */

static double task_flops(const gtask *t)
{
    const dims *d = &t->d;
    if (t->type == T_LINEAR || t->type == T_GRAM)
        return 2.0 * (double)d->rows * (double)d->k * (double)d->n;
    return 2.0 * (double)d->k * (double)d->n;
}

static void task_reads(const gtask *t, size_t *r, unsigned *n)
{
    *n = 0;
    if (t->type == T_LINEAR || t->type == T_GRAM) {
        r[(*n)++] = t->in0;
        r[(*n)++] = t->in1;
    } else {
        r[(*n)++] = t->out;
        r[(*n)++] = t->in0;
    }
}

/* Plans the graph on a fabric of `size` nodes, one CPU each, and puts each
 * task on its planned node's rank. */
static int place_by_plan(const synor_mpi_graph_options *o, int size, graph *g)
{
    synor_catalog *cat = NULL;
    synor_fabric *f = NULL;
    synor_plan *plan = NULL;
    size_t nt = g->nt, nd = (size_t)size;
    double *exec = synor__calloc(nt * nd, sizeof *exec);
    double *lat = synor__calloc(nd * nd, sizeof *lat), *ibw = synor__calloc(nd * nd, sizeof *ibw);
    size_t *poff = synor__calloc(nt + 1, sizeof *poff), *pred = synor__calloc(2 * nt, sizeof *pred);
    double *pbytes = synor__calloc(2 * nt, sizeof *pbytes);
    size_t *writer = synor__calloc(g->nd, sizeof *writer);
    size_t *uoff = synor__calloc(nt + 1, sizeof *uoff), *use = synor__calloc(nt, sizeof *use);
    double *ibytes = synor__calloc(o->parts, sizeof *ibytes);
    size_t *ihome = synor__calloc(o->parts, sizeof *ihome);
    int rc = 0;
    if (!exec || !lat || !ibw || !poff || !pred || !pbytes || !writer || !uoff || !use ||
        !ibytes || !ihome) {
        rc = synor__error(SYNOR_ENOMEM, "mpi graph: out of memory");
        goto out;
    }
    if ((rc = synor__mpi_fabric_create(size, o->cpu_profile, o->network_gb_s,
                                       o->network_latency_us, &cat, &f)) < 0)
        goto out;
    for (size_t p = 0; p < nd; p++)
        for (size_t q = 0; q < nd; q++) {
            double t0 = synor_fabric_transfer_time(f, p, q, 0.0);
            lat[p * nd + q] = t0;
            ibw[p * nd + q] = (synor_fabric_transfer_time(f, p, q, 1e9) - t0) / 1e9;
        }
    for (size_t i = 0; i < g->nd; i++)
        writer[i] = SIZE_MAX;
    size_t ne = 0, nu = 0;
    for (size_t ti = 0; ti < nt; ti++) {
        const gtask *t = &g->t[ti];
        synor_op_work w = {.type = SYNOR_OP_MATMUL, .dtype = SYNOR_DTYPE_FP32,
                           .flops = task_flops(t),
                           .bytes_read = 4.0 * (double)(g->elems[t->in0] + g->elems[t->out]),
                           .bytes_written = 4.0 * (double)g->elems[t->out]};
        for (size_t dv = 0; dv < nd; dv++)
            exec[ti * nd + dv] = synor_device_estimate_time(synor_fabric_device_at(f, dv)->dev, &w);
        size_t r[2];
        unsigned n;
        task_reads(t, r, &n);
        poff[ti] = ne;
        for (unsigned i = 0; i < n; i++)
            if (writer[r[i]] != SIZE_MAX) {
                pred[ne] = writer[r[i]];
                pbytes[ne++] = 4.0 * (double)g->elems[r[i]];
            }
        writer[t->out] = ti;
        uoff[ti] = nu;
        if (t->item != SIZE_MAX) {
            use[nu++] = t->item;
            ibytes[t->item] = 4.0 * (double)g->elems[t->in1];
        }
    }
    poff[nt] = ne;
    uoff[nt] = nu;
    synor_sched_problem pb = {.n_tasks = nt, .n_devices = nd, .exec = exec, .pred_off = poff,
                              .pred = pred, .pred_bytes = pbytes, .lat = lat, .inv_bw = ibw};
    if (nu) {
        pb.n_items = o->parts;
        pb.item_bytes = ibytes;
        pb.item_home = ihome; /* node 0's memory */
        pb.use_off = uoff;
        pb.use = use;
    }
    synor_plan_options po;
    synor_plan_options_init(&po);
    po.strategy = o->strategy;
    if (o->strategy == SYNOR_STRATEGY_PIPELINE)
        po.micro_batches = o->steps;
    if ((rc = synor_plan_problem(&pb, &po, &plan)) < 0)
        goto out;
    for (size_t ti = 0; ti < nt; ti++)
        g->rank[ti] = (int)plan->device[ti];
out:
    synor_plan_destroy(plan);
    synor_fabric_destroy(f);
    synor_catalog_destroy(cat);
    synor__free(exec), synor__free(lat), synor__free(ibw), synor__free(poff), synor__free(pred);
    synor__free(pbytes), synor__free(writer), synor__free(uoff), synor__free(use);
    synor__free(ibytes), synor__free(ihome);
    return rc;
}

/* ------------------------------------------------------------------ run */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill(float *p, size_t n, uint64_t seed, size_t datum, float scale)
{
    uint64_t s = seed ^ (0x51ed270b2705ull * (datum + 1));
    for (size_t i = 0; i < n; i++)
        p[i] = scale * (float)((double)(splitmix(&s) >> 11) * 0x1.0p-52 - 1.0);
}

static void run_serial(const graph *g, float **mem)
{
    for (size_t ti = 0; ti < g->nt; ti++) {
        const gtask *t = &g->t[ti];
        switch (t->type) {
        case T_LINEAR: linear_relu(mem[t->in0], mem[t->in1], mem[t->out], &t->d); break;
        case T_GRAM: gram(mem[t->in0], mem[t->in1], mem[t->out], &t->d); break;
        case T_ADD: add_into(mem[t->out], mem[t->in0], &t->d); break;
        default: sgd(mem[t->out], mem[t->in0], &t->d); break;
        }
    }
}

static const char *const graph_names[] = {"data-parallel", "pipeline"};
static const char *const place_names[] = {"owner", "plan"};

const char *synor_mpi_graph_name(synor_mpi_graph g)
{
    return (unsigned)g < 2 ? graph_names[g] : NULL;
}
const char *synor_mpi_placement_name(synor_mpi_placement p)
{
    return (unsigned)p < 2 ? place_names[p] : NULL;
}

int synor_mpi_graph_from_name(const char *name, synor_mpi_graph *out)
{
    for (int i = 0; i < 2; i++)
        if (name && strcmp(name, graph_names[i]) == 0) {
            *out = (synor_mpi_graph)i;
            return 0;
        }
    return synor__error(SYNOR_EINVAL, "mpi: unknown graph '%s' (data-parallel, pipeline)",
                        name ? name : "");
}

int synor_mpi_placement_from_name(const char *name, synor_mpi_placement *out)
{
    for (int i = 0; i < 2; i++)
        if (name && strcmp(name, place_names[i]) == 0) {
            *out = (synor_mpi_placement)i;
            return 0;
        }
    return synor__error(SYNOR_EINVAL, "mpi: unknown placement '%s' (owner, plan)",
                        name ? name : "");
}

void synor_mpi_graph_options_init(synor_mpi_graph_options *o)
{
    memset(o, 0, sizeof *o);
    o->graph = SYNOR_MPI_GRAPH_DATA_PARALLEL;
    o->placement = SYNOR_MPI_PLACE_OWNER;
    o->strategy = SYNOR_STRATEGY_HEFT;
    o->cpu_profile = "amd-epyc-9654";
    o->network_gb_s = 12.5;
    o->network_latency_us = 5.0;
    o->dim = 128;
    o->rows = 64;
    o->parts = 4;
    o->steps = 0; /* 0: the graph's default (3 steps, 8 micro-batches) */
    o->seed = 42;
}

int synor_mpi_graph_run(synor_mpi *m, const synor_mpi_graph_options *opt,
                        synor_mpi_graph_result *out)
{
    memset(out, 0, sizeof *out);
    synor_mpi_graph_options o = *opt;
    if (!o.steps)
        o.steps = o.graph == SYNOR_MPI_GRAPH_PIPELINE ? 8 : 3;
    if (o.dim < 1 || o.dim > 4096 || o.rows < 1 || o.rows > 65536 || o.parts < 1 ||
        o.parts > 256 || o.steps > 4096)
        return synor__error(SYNOR_EINVAL,
                            "mpi graph: dim %zu (1..4096), rows %zu (1..65536), parts %zu "
                            "(1..256), steps %zu (at most 4096)",
                            o.dim, o.rows, o.parts, o.steps);
    int size = synor_mpi_size(m), me = synor_mpi_rank(m);
    graph g;
    int rc = o.graph == SYNOR_MPI_GRAPH_PIPELINE ? build_pipeline(&o, size, &g)
                                                 : build_data_parallel(&o, size, &g);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < g.nt; i++)
        g.rank[i] = -1;
    if (o.placement == SYNOR_MPI_PLACE_PLAN && (rc = place_by_plan(&o, size, &g)) < 0) {
        graph_free(&g);
        return rc;
    }
    float **mem = synor__calloc(g.nd, sizeof *mem);
    synor_handle **h = synor__calloc(g.nd, sizeof *h);
    synor_mpi_data **md = synor__calloc(g.nd, sizeof *md);
    unsigned char *used = synor__calloc((size_t)size, 1);
    if (!mem || !h || !md || !used) {
        rc = synor__error(SYNOR_ENOMEM, "mpi graph: out of memory");
        goto out;
    }
    for (size_t i = 0; i < g.nd; i++) {
        /* every rank has memory for every datum: its own data, a cache of
         * the others' */
        mem[i] = synor__calloc(g.elems[i], sizeof(float));
        if (!mem[i]) {
            rc = synor__error(SYNOR_ENOMEM, "mpi graph: out of memory");
            goto out;
        }
        if (g.init[i] && g.owner[i] == me)
            fill(mem[i], g.elems[i], o.seed, i, g.scale[i]);
    }
    for (size_t i = 0; i < g.nd; i++) {
        synor_handle_desc desc = {.ptr = mem[i], .dtype = SYNOR_DTYPE_FP32, .ndim = 1,
                                  .shape = {g.elems[i]}};
        if ((rc = synor_handle_register(synor_mpi_runtime(m), &desc, &h[i])) < 0 ||
            (rc = synor_mpi_data_register(m, h[i], g.owner[i], &md[i])) < 0)
            goto out;
    }
    if ((rc = synor__comm_barrier()) < 0)
        goto out;
    synor_mpi_stats st0, st1;
    synor_mpi_get_stats(m, &st0);
    double t0 = synor__now_s();
    for (size_t ti = 0; ti < g.nt; ti++) {
        const gtask *t = &g.t[ti];
        synor_mpi_task mt = {.priority = SYNOR_PRIORITY_NORMAL, .args = &t->d,
                             .args_size = sizeof t->d, .tag = ti + 1, .rank = g.rank[ti]};
        if (t->type == T_LINEAR || t->type == T_GRAM) {
            mt.kernel = t->type == T_LINEAR ? &kern_linear : &kern_gram;
            mt.ndata = 3;
            mt.data[0] = md[t->in0], mt.mode[0] = SYNOR_ACCESS_R;
            mt.data[1] = md[t->in1], mt.mode[1] = SYNOR_ACCESS_R;
            mt.data[2] = md[t->out], mt.mode[2] = SYNOR_ACCESS_W;
        } else {
            mt.kernel = t->type == T_ADD ? &kern_add : &kern_sgd;
            mt.ndata = 2;
            mt.data[0] = md[t->out], mt.mode[0] = SYNOR_ACCESS_RW;
            mt.data[1] = md[t->in0], mt.mode[1] = SYNOR_ACCESS_R;
        }
        if ((rc = synor_mpi_task_insert(m, &mt)) < 0)
            goto out;
        used[rc] = 1;
    }
    for (size_t i = 0; i < g.nout; i++)
        if ((rc = synor_mpi_data_fetch(m, md[g.outputs[i]], 0)) < 0)
            goto out;
    if ((rc = synor_mpi_wait_all(m)) < 0)
        goto out;
    out->seconds = synor__now_s() - t0;
    out->tasks = g.nt;
    synor_mpi_get_stats(m, &st1);
    double msgs = (double)(st1.messages_sent - st0.messages_sent);
    double bytes = (double)(st1.bytes_sent - st0.bytes_sent);
    if ((rc = synor__comm_sum(&msgs)) < 0 || (rc = synor__comm_sum(&bytes)) < 0)
        goto out;
    out->messages = (uint64_t)msgs;
    out->bytes = (uint64_t)bytes;
    for (int r = 0; r < size; r++)
        out->ranks_used += used[r];
    if (me == 0) {
        /* the serial reference, on fresh copies of the inputs */
        float **ref = synor__calloc(g.nd, sizeof *ref);
        int ok = ref != NULL;
        for (size_t i = 0; ok && i < g.nd; i++) {
            ref[i] = synor__calloc(g.elems[i], sizeof(float));
            ok = ref[i] != NULL;
            if (ok && g.init[i])
                fill(ref[i], g.elems[i], o.seed, i, g.scale[i]);
        }
        if (ok) {
            run_serial(&g, ref);
            for (size_t k = 0; k < g.nout; k++) {
                size_t i = g.outputs[k];
                for (size_t e = 0; e < g.elems[i]; e++) {
                    double d = fabs((double)mem[i][e] - (double)ref[i][e]);
                    if (d > out->max_abs_diff || d != d)
                        out->max_abs_diff = d;
                    /* data-parallel: the replicas are one model, counted once */
                    if (o.graph == SYNOR_MPI_GRAPH_PIPELINE || k == 0)
                        out->checksum += mem[i][e], out->outputs++;
                }
            }
        } else
            rc = synor__error(SYNOR_ENOMEM, "mpi graph: out of memory for the reference");
        for (size_t i = 0; ref && i < g.nd; i++)
            synor__free(ref[i]);
        synor__free(ref);
    }
out:
    if (rc < 0)
        (void)synor_mpi_wait_all(m); /* what was inserted, before its memory goes */
    for (size_t i = 0; h && i < g.nd; i++)
        if (h[i])
            (void)synor_handle_unregister(h[i]);
    for (size_t i = 0; mem && i < g.nd; i++)
        synor__free(mem[i]);
    synor__free(mem), synor__free(h), synor__free(md), synor__free(used);
    graph_free(&g);
    return rc < 0 ? rc : 0;
}
