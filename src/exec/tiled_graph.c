/* tiled_graph.c - the task graph of the tiled presets as a workload
 * (synor_exec_tiled_workload), so that the simulator can be asked about
 * the very runs synor_exec_tiled makes.
 *
 * It mirrors the submission loops of src/kernels/tiled.c: the same tasks in
 * the same order, each tile's successive versions as data (a read-write
 * access consumes the tile's current version and produces the next), and
 * per task the kernel and footprint the runtime records for it (the tiles
 * are 2-D handles of tile_len rows x columns). tests/test_calibrate.c
 * checks that a real run records exactly these keys, as many times. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "kernels/kernels.h"
#include "synor/exec.h"
#include "synor/perfmodel.h"

static size_t tile_len(size_t n, size_t nb, size_t i)
{
    return (i + 1) * nb <= n ? nb : n - i * nb;
}

typedef struct graph {
    synor_workload *w;
    size_t nt, es;
    size_t n, nb;
    synor_dtype dt;
    /* per tile (i + j * nt): its current version's data index and producer
     * task (SIZE_MAX: none), and how many versions it has had */
    size_t *cur, *prod;
    unsigned *ver;
    const char **kernel; /* per task, grown with the workload */
    uint64_t *fp;
    size_t cap, ntasks;
    int rc;
} graph;

static int tile_data(graph *g, char mat, size_t i, size_t j, size_t *out)
{
    char name[64];
    size_t k = i + j * g->nt + (size_t)(mat - 'A') * g->nt * g->nt;
    snprintf(name, sizeof name, "%c[%zu,%zu]#%u", mat, i, j, g->ver[k]++);
    uint64_t bytes = (uint64_t)tile_len(g->n, g->nb, i) * tile_len(g->n, g->nb, j) * g->es;
    return synor_workload_add_data(g->w, name, bytes, out);
}

/* The slot of tile (i, j) of matrix mat; its first version made on demand. */
static size_t slot(graph *g, char mat, size_t i, size_t j)
{
    size_t k = i + j * g->nt + (size_t)(mat - 'A') * g->nt * g->nt;
    if (g->cur[k] == SIZE_MAX && !g->rc)
        g->rc = tile_data(g, mat, i, j, &g->cur[k]);
    return k;
}

typedef struct access {
    char mat;
    size_t i, j;
    int write; /* read-write (or write) */
} access;

/* One task: op, the kernel, its tiles in operand order. */
static void task(graph *g, const char *id, synor_op op, const synor_kernel *kern, const access *a,
                 unsigned na, synor_priority prio)
{
    if (g->rc)
        return;
    size_t cons[3], prod = 0, deps[3], nc = 0, nd = 0, produces = 0, k_written = SIZE_MAX;
    size_t v[3 * (SYNOR_HANDLE_MAX_DIMS + 1) + 1], nv = 0;
    v[nv++] = na;
    for (unsigned x = 0; x < na; x++) {
        size_t k = slot(g, a[x].mat, a[x].i, a[x].j);
        cons[nc++] = g->cur[k];
        if (g->prod[k] != SIZE_MAX) {
            int dup = 0;
            for (size_t y = 0; y < nd; y++)
                dup |= deps[y] == g->prod[k];
            if (!dup)
                deps[nd++] = g->prod[k];
        }
        if (a[x].write)
            k_written = k;
        v[nv++] = (size_t)g->dt;
        v[nv++] = tile_len(g->n, g->nb, a[x].i);
        v[nv++] = tile_len(g->n, g->nb, a[x].j);
        for (unsigned d = 2; d < SYNOR_HANDLE_MAX_DIMS; d++)
            v[nv++] = 1;
    }
    if (k_written != SIZE_MAX) {
        const access *wa = &a[na - 1];
        if ((g->rc = tile_data(g, wa->mat, wa->i, wa->j, &prod)))
            return;
        produces = 1;
    }
    if (g->ntasks == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 256;
        const char **k2 = synor__realloc(g->kernel, cap * sizeof *k2);
        if (k2)
            g->kernel = k2;
        uint64_t *f2 = synor__realloc(g->fp, cap * sizeof *f2);
        if (f2)
            g->fp = f2;
        if (!k2 || !f2) {
            g->rc = synor__error(SYNOR_ENOMEM, "out of memory");
            return;
        }
        g->cap = cap;
    }
    if (op.type == SYNOR_OP_MATMUL && (g->rc = synor_op_derive(&op)))
        return;
    synor_task_desc d = {.id = id,
                         .op = op,
                         .priority = prio,
                         .deps = deps,
                         .n_deps = nd,
                         .consumes = cons,
                         .n_consumes = nc,
                         .produces = &prod,
                         .n_produces = produces};
    size_t ti;
    if ((g->rc = synor_workload_add_task(g->w, &d, &ti)))
        return;
    g->kernel[g->ntasks] = kern->name;
    g->fp[g->ntasks++] = synor_perfmodel_footprint(v, (unsigned)nv);
    if (k_written != SIZE_MAX) {
        g->cur[k_written] = prod;
        g->prod[k_written] = ti;
    }
}

/* Work of a tile kernel the operation table has no formula for. */
static synor_op custom(synor_dtype dt, double flops, double bytes)
{
    synor_op op;
    memset(&op, 0, sizeof op);
    op.type = SYNOR_OP_CUSTOM;
    op.dtype = dt;
    op.work.type = SYNOR_OP_CUSTOM;
    op.work.dtype = dt;
    op.work.flops = flops;
    op.work.bytes_read = bytes;
    op.work.bytes_written = bytes;
    return op;
}

static synor_op matmul(synor_dtype dt, size_t m, size_t n, size_t k)
{
    synor_op op;
    memset(&op, 0, sizeof op);
    op.type = SYNOR_OP_MATMUL;
    op.dtype = dt;
    op.dims.m = (int64_t)m;
    op.dims.n = (int64_t)n;
    op.dims.k = (int64_t)k;
    return op;
}

int synor_exec_tiled_workload(synor_tiled_algo algo, size_t n, size_t nb, synor_dtype dtype,
                              synor_workload **out, const char ***kernels, uint64_t **footprints)
{
    if (dtype != SYNOR_DTYPE_FP32 && dtype != SYNOR_DTYPE_FP64)
        return synor__error(SYNOR_ENOTSUP, "tiled workload: data type %s (fp32 or fp64)",
                            synor_dtype_name(dtype));
    if (n == 0 || nb == 0 || n > 65536 || nb > n || (n + nb - 1) / nb > 256)
        return synor__error(SYNOR_EINVAL,
                            "tiled workload: n %zu, tile %zu (1 <= tile <= n <= 65536, at most "
                            "256 tiles a side)",
                            n, nb);
    graph g;
    memset(&g, 0, sizeof g);
    g.n = n;
    g.nb = nb;
    g.dt = dtype;
    g.es = dtype == SYNOR_DTYPE_FP64 ? 8 : 4;
    g.nt = (n + nb - 1) / nb;
    size_t slots = 3 * g.nt * g.nt;
    g.cur = synor__malloc(slots * sizeof *g.cur);
    g.prod = synor__malloc(slots * sizeof *g.prod);
    g.ver = synor__calloc(slots, sizeof *g.ver);
    char name[96];
    snprintf(name, sizeof name, "tiled %s, n %zu, tiles of %zu, %s",
             algo == SYNOR_TILED_GEMM ? "GEMM" : "Cholesky", n, nb, synor_dtype_name(dtype));
    if (!g.cur || !g.prod || !g.ver)
        g.rc = synor__error(SYNOR_ENOMEM, "out of memory");
    else
        g.rc = synor_workload_create(name, &g.w);
    for (size_t k = 0; k < slots && g.cur && g.prod; k++)
        g.cur[k] = g.prod[k] = SIZE_MAX;
    char id[64];
    size_t nt = g.nt;
    if (algo == SYNOR_TILED_GEMM) { /* C = A B, beta 0: the first update writes C */
        for (size_t i = 0; i < nt; i++)
            for (size_t j = 0; j < nt; j++)
                for (size_t l = 0; l < nt; l++) {
                    access a[3] = {{'A', i, l, 0}, {'B', l, j, 0}, {'C', i, j, 1}};
                    snprintf(id, sizeof id, "gemm(%zu,%zu,%zu)", i, j, l);
                    /* the first update's C (written, not read) is the
                     * initial tile: external data, no dependency */
                    task(&g, id,
                         matmul(dtype, tile_len(n, nb, i), tile_len(n, nb, j), tile_len(n, nb, l)),
                         &synor__kernel_gemm, a, 3, SYNOR_PRIORITY_NORMAL);
                }
    } else {
        for (size_t k = 0; k < nt; k++) {
            double b = (double)tile_len(n, nb, k), bytes = b * b * (double)g.es;
            access p[1] = {{'A', k, k, 1}};
            snprintf(id, sizeof id, "potrf(%zu)", k);
            task(&g, id, custom(dtype, b * b * b / 3, bytes), &synor__kernel_potrf, p, 1,
                 SYNOR_PRIORITY_CRITICAL);
            for (size_t i = k + 1; i < nt; i++) {
                access t[2] = {{'A', k, k, 0}, {'A', i, k, 1}};
                snprintf(id, sizeof id, "trsm(%zu,%zu)", i, k);
                task(&g, id, custom(dtype, b * b * (double)tile_len(n, nb, i), 2 * bytes),
                     &synor__kernel_trsm, t, 2, SYNOR_PRIORITY_HIGH);
            }
            for (size_t i = k + 1; i < nt; i++) {
                double r = (double)tile_len(n, nb, i);
                access s[2] = {{'A', i, k, 0}, {'A', i, i, 1}};
                snprintf(id, sizeof id, "syrk(%zu,%zu)", i, k);
                task(&g, id, custom(dtype, r * r * b, 2 * r * r * (double)g.es),
                     &synor__kernel_syrk, s, 2,
                     i == k + 1 ? SYNOR_PRIORITY_HIGH : SYNOR_PRIORITY_NORMAL);
                for (size_t j = k + 1; j < i; j++) {
                    access m[3] = {{'A', i, k, 0}, {'A', j, k, 0}, {'A', i, j, 1}};
                    snprintf(id, sizeof id, "gemm(%zu,%zu,%zu)", i, j, k);
                    task(&g, id, matmul(dtype, tile_len(n, nb, i), tile_len(n, nb, j), (size_t)b),
                         &synor__kernel_gemm, m, 3,
                         j == k + 1 ? SYNOR_PRIORITY_HIGH : SYNOR_PRIORITY_NORMAL);
                }
            }
        }
    }
    if (!g.rc)
        g.rc = synor_workload_finish(g.w);
    synor__free(g.cur);
    synor__free(g.prod);
    synor__free(g.ver);
    if (g.rc) {
        synor_workload_destroy(g.w);
        synor__free(g.kernel);
        synor__free(g.fp);
        return g.rc;
    }
    *out = g.w;
    *kernels = g.kernel;
    *footprints = g.fp;
    return 0;
}
