/* tiled.c - tiled GEMM and Cholesky as task graphs on the runtime.
 *
 * Tiles are registered as 2-D views of the caller's column-major matrices
 * (no copy); the dependencies follow from the access modes. Cholesky (right-
 * looking, lower) gives the critical path priority as StarPU's examples do:
 * potrf Critical, the panel's trsm High, and the updates that feed the next
 * panel High; the remaining updates Normal. Every tile handle is
 * unregistered before returning, on success and on failure. */
#include <string.h>

#include "common/common.h"
#include "kernels/kernels.h"

typedef struct tiles {
    synor_handle **h;
    size_t mt, nt;
} tiles;

static size_t tile_len(size_t n, size_t nb, size_t i) { return (i + 1) * nb <= n ? nb : n - i * nb; }

static void tiles_free(tiles *t)
{
    if (!t->h)
        return;
    for (size_t i = 0; i < t->mt * t->nt; i++)
        (void)synor_handle_unregister(t->h[i]);
    synor__free(t->h);
    t->h = NULL;
}

/* Registers the tiles of an m x n matrix; lower_only: only tiles i >= j. */
static int tiles_make(synor_runtime *rt, tiles *t, void *base, synor_dtype dt, size_t esize,
                      size_t m, size_t n, size_t ld, size_t nb, int lower_only)
{
    t->mt = (m + nb - 1) / nb;
    t->nt = (n + nb - 1) / nb;
    t->h = synor__calloc(t->mt * t->nt, sizeof *t->h);
    if (!t->h)
        return synor__error(SYNOR_ENOMEM, "tiled: out of memory for %zu tiles", t->mt * t->nt);
    for (size_t j = 0; j < t->nt; j++)
        for (size_t i = lower_only ? j : 0; i < t->mt; i++) {
            synor_handle_desc d = {
                .ptr = (char *)base + (i * nb + j * nb * ld) * esize,
                .dtype = dt,
                .ndim = 2,
                .shape = {tile_len(m, nb, i), tile_len(n, nb, j)},
                .ld = ld,
            };
            int rc = synor_handle_register(rt, &d, &t->h[i + j * t->mt]);
            if (rc < 0) {
                tiles_free(t);
                return rc;
            }
        }
    return 0;
}

#define TILE(t, i, j) ((t)->h[(i) + (j) * (t)->mt])

static int check(size_t rows, size_t cols, size_t ld, const char *name, size_t nb)
{
    if (nb == 0)
        return synor__error(SYNOR_EINVAL, "tiled: tile size 0");
    if (rows && cols && ld < rows)
        return synor__error(SYNOR_EINVAL, "tiled: %s: leading dimension %zu < rows %zu", name, ld,
                            rows);
    return 0;
}

/* Bytes from the first element of a rows x cols matrix (leading dimension
 * ld) to one past its last. */
static size_t span(size_t rows, size_t cols, size_t ld, size_t es)
{
    return rows && cols ? ((cols - 1) * ld + rows) * es : 0;
}

/* The placement hints of a call "on" a device (hint = index + 1, 0 =
 * anywhere): *all for kernels every device implements (gemm), *cpu for
 * those with a CPU function only (potrf, trsm, syrk): the hint on the host,
 * none on an accelerator. */
static int hints(synor_runtime *rt, unsigned hint, const char *what, unsigned *all, unsigned *cpu)
{
    *all = *cpu = 0;
    if (!hint)
        return 0;
    synor_runtime_device_info di;
    if (synor_runtime_device_get(rt, hint - 1, &di) < 0)
        return synor__error(SYNOR_EINVAL, "%s: device %u: no such device (%u devices)", what,
                            hint - 1, synor_runtime_device_count(rt));
    *all = hint;
    *cpu = !strcmp(di.backend, "host") ? hint : 0;
    return 0;
}

static int tiled_gemm(synor_runtime *rt, unsigned hint, synor_dtype dt, size_t es, size_t m,
                      size_t n, size_t k, double alpha, const void *a, size_t lda, const void *b,
                      size_t ldb, double beta, void *c, size_t ldc, size_t nb)
{
    int rc;
    unsigned on, cpu_on;
    if (!rt || !a || !b || !c)
        return synor__error(SYNOR_EINVAL, "tiled gemm: NULL argument");
    if ((rc = hints(rt, hint, "tiled gemm", &on, &cpu_on)) < 0)
        return rc;
    if ((rc = check(m, k, lda, "A", nb)) < 0 || (rc = check(k, n, ldb, "B", nb)) < 0 ||
        (rc = check(m, n, ldc, "C", nb)) < 0)
        return rc;
    if (m == 0 || n == 0 || k == 0)
        return k == 0 && m && n
                   ? synor__error(SYNOR_ENOTSUP, "tiled gemm: k = 0 (scale C with beta yourself)")
                   : 0;
    tiles ta = {0}, tb = {0}, tc = {0};
    /* Page-locked for the devices that copy faster from it (CUDA); a no-op
     * elsewhere. */
    int pa = synor_runtime_pin_host(rt, (void *)(uintptr_t)a, span(m, k, lda, es)) == 1;
    int pb = synor_runtime_pin_host(rt, (void *)(uintptr_t)b, span(k, n, ldb, es)) == 1;
    int pc = synor_runtime_pin_host(rt, c, span(m, n, ldc, es)) == 1;
    /* A and B are only read; the const is restored by the R access mode. */
    if ((rc = tiles_make(rt, &ta, (void *)(uintptr_t)a, dt, es, m, k, lda, nb, 0)) < 0 ||
        (rc = tiles_make(rt, &tb, (void *)(uintptr_t)b, dt, es, k, n, ldb, nb, 0)) < 0 ||
        (rc = tiles_make(rt, &tc, c, dt, es, m, n, ldc, nb, 0)) < 0)
        goto out;
    for (size_t i = 0; i < tc.mt; i++)
        for (size_t j = 0; j < tc.nt; j++)
            for (size_t l = 0; l < ta.nt; l++) {
                synor__gemm_args ga = {0, 0, alpha, l == 0 ? beta : 1.0};
                synor_task_spec t = {
                    .kernel = &synor__kernel_gemm,
                    .priority = SYNOR_PRIORITY_NORMAL,
                    .ndata = 3,
                    .data = {TILE(&ta, i, l), TILE(&tb, l, j), TILE(&tc, i, j)},
                    .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_R,
                             l == 0 && beta == 0.0 ? SYNOR_ACCESS_W : SYNOR_ACCESS_RW},
                    .args = &ga,
                    .args_size = sizeof ga,
                    .device = on,
                };
                if ((rc = synor_task_submit(rt, &t)) < 0)
                    goto wait;
            }
wait:;
    int wrc = synor_runtime_wait_all(rt);
    if (rc == 0)
        rc = wrc;
out:
    tiles_free(&ta);
    tiles_free(&tb);
    tiles_free(&tc);
    if (pa)
        synor_runtime_unpin_host(rt, (void *)(uintptr_t)a);
    if (pb)
        synor_runtime_unpin_host(rt, (void *)(uintptr_t)b);
    if (pc)
        synor_runtime_unpin_host(rt, c);
    return rc;
}

int synor_tiled_dgemm(synor_runtime *rt, size_t m, size_t n, size_t k, double alpha,
                      const double *a, size_t lda, const double *b, size_t ldb, double beta,
                      double *c, size_t ldc, size_t nb)
{
    return tiled_gemm(rt, 0, SYNOR_DTYPE_FP64, sizeof(double), m, n, k, alpha, a, lda, b, ldb,
                      beta, c, ldc, nb);
}

int synor_tiled_sgemm(synor_runtime *rt, size_t m, size_t n, size_t k, float alpha,
                      const float *a, size_t lda, const float *b, size_t ldb, float beta,
                      float *c, size_t ldc, size_t nb)
{
    return tiled_gemm(rt, 0, SYNOR_DTYPE_FP32, sizeof(float), m, n, k, alpha, a, lda, b, ldb,
                      beta, c, ldc, nb);
}

int synor_tiled_sgemm_on(synor_runtime *rt, unsigned device, size_t m, size_t n, size_t k,
                         float alpha, const float *a, size_t lda, const float *b, size_t ldb,
                         float beta, float *c, size_t ldc, size_t nb)
{
    return tiled_gemm(rt, device + 1, SYNOR_DTYPE_FP32, sizeof(float), m, n, k, alpha, a, lda, b,
                      ldb, beta, c, ldc, nb);
}

static int submit(synor_runtime *rt, unsigned on, const synor_kernel *k, synor_priority p,
                  int ti, int tj, unsigned nd, synor_handle *d0, synor_access m0, synor_handle *d1, synor_access m1,
                  synor_handle *d2, synor_access m2, const void *args, size_t asz)
{
    synor__tile_args ta = {ti, tj};
    synor_task_spec t = {
        .kernel = k,
        .priority = p,
        .ndata = nd,
        .data = {d0, d1, d2},
        .mode = {m0, m1, m2},
        .args = args ? args : &ta,
        .args_size = args ? asz : sizeof ta,
        .device = on,
    };
    return synor_task_submit(rt, &t);
}

/* Panels k0 .. k1 - 1 of the factorization (all: 0 .. SIZE_MAX). Each tile
 * gets its updates in the order of k whether the panels run in one graph
 * or in several (a tile's writers follow their submission order), so the
 * bits do not depend on where the graph was cut. */
static int tiled_potrf(synor_runtime *rt, unsigned hint, synor_dtype dt, size_t es, size_t n,
                       void *a, size_t lda, size_t nb, size_t k0, size_t k1)
{
    int rc;
    unsigned on, cpu_on;
    if (!rt || !a)
        return synor__error(SYNOR_EINVAL, "tiled potrf: NULL argument");
    if ((rc = hints(rt, hint, "tiled potrf", &on, &cpu_on)) < 0)
        return rc;
    if ((rc = check(n, n, lda, "A", nb)) < 0)
        return rc;
    if (n == 0)
        return 0;
    if (k0 >= k1 || k0 >= (n + nb - 1) / nb)
        return 0;
    tiles t = {0};
    int pinned = synor_runtime_pin_host(rt, a, span(n, n, lda, es)) == 1;
    if ((rc = tiles_make(rt, &t, a, dt, es, n, n, lda, nb, 1)) < 0) {
        if (pinned)
            synor_runtime_unpin_host(rt, a);
        return rc;
    }
    const synor_access R = SYNOR_ACCESS_R, RW = SYNOR_ACCESS_RW;
    size_t nt = t.nt, kend = nt < k1 ? nt : k1;
    for (size_t k = k0; k < kend && rc == 0; k++) {
        rc = submit(rt, cpu_on, &synor__kernel_potrf, SYNOR_PRIORITY_CRITICAL, (int)k, (int)k, 1,
                    TILE(&t, k, k), RW, NULL, 0, NULL, 0, NULL, 0);
        for (size_t i = k + 1; i < nt && rc == 0; i++)
            rc = submit(rt, cpu_on, &synor__kernel_trsm, SYNOR_PRIORITY_HIGH, (int)i, (int)k, 2,
                        TILE(&t, k, k), R, TILE(&t, i, k), RW, NULL, 0, NULL, 0);
        for (size_t i = k + 1; i < nt && rc == 0; i++) {
            rc = submit(rt, cpu_on, &synor__kernel_syrk,
                        i == k + 1 ? SYNOR_PRIORITY_HIGH : SYNOR_PRIORITY_NORMAL, (int)i, (int)i, 2,
                        TILE(&t, i, k), R, TILE(&t, i, i), RW, NULL, 0, NULL, 0);
            for (size_t j = k + 1; j < i && rc == 0; j++) {
                synor__gemm_args ga = {0, 1, -1.0, 1.0};
                rc = submit(rt, on, &synor__kernel_gemm,
                            j == k + 1 ? SYNOR_PRIORITY_HIGH : SYNOR_PRIORITY_NORMAL, (int)i,
                            (int)j, 3, TILE(&t, i, k), R, TILE(&t, j, k), R, TILE(&t, i, j), RW,
                            &ga, sizeof ga);
            }
        }
    }
    int wrc = synor_runtime_wait_all(rt);
    if (rc == 0)
        rc = wrc;
    tiles_free(&t);
    if (pinned)
        synor_runtime_unpin_host(rt, a);
    return rc;
}

int synor_tiled_spotrf(synor_runtime *rt, size_t n, float *a, size_t lda, size_t nb)
{
    return tiled_potrf(rt, 0, SYNOR_DTYPE_FP32, sizeof(float), n, a, lda, nb, 0, SIZE_MAX);
}

int synor_tiled_spotrf_on(synor_runtime *rt, unsigned device, size_t n, float *a, size_t lda,
                          size_t nb)
{
    return tiled_potrf(rt, device + 1, SYNOR_DTYPE_FP32, sizeof(float), n, a, lda, nb, 0,
                       SIZE_MAX);
}

int synor_tiled_spotrf_panels_on(synor_runtime *rt, unsigned device, size_t n, float *a,
                                 size_t lda, size_t nb, size_t k0, size_t k1)
{
    return tiled_potrf(rt, device + 1, SYNOR_DTYPE_FP32, sizeof(float), n, a, lda, nb, k0, k1);
}

int synor_tiled_dpotrf(synor_runtime *rt, size_t n, double *a, size_t lda, size_t nb)
{
    return tiled_potrf(rt, 0, SYNOR_DTYPE_FP64, sizeof(double), n, a, lda, nb, 0, SIZE_MAX);
}
