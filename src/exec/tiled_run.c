/* tiled_run.c - the tiled presets of real runs (synor_exec_tiled): the
 * runtime's tiled GEMM or Cholesky on a seeded random matrix, checked
 * against one OpenBLAS/LAPACK call on all cores, both timed after a
 * warm-up, the medians of several repetitions compared. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/blas_api.h"
#include "common/common.h"
#include "kernels/kernels.h"
#include "synor/exec.h"


static void fill(void *p, size_t n, int f64, uint64_t s)
{
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double v = (double)(s >> 11) * 0x1.0p-53 - 0.5;
        if (f64)
            ((double *)p)[i] = v;
        else
            ((float *)p)[i] = (float)v;
    }
}

static double get(const void *p, size_t i, int f64)
{
    return f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* One OpenBLAS call on all cores into ref (from a for potrf); seconds. */
static int reference(const synor__blas_api *bl, synor_tiled_algo algo, int f64, size_t n,
                     const void *a, const void *b, void *ref, int ncores, double *secs)
{
    blasint bn = (blasint)n, info = 0;
    size_t es = f64 ? 8 : 4;
    synor__blas_set_threads(ncores);
    if (algo == SYNOR_TILED_CHOLESKY)
        memcpy(ref, a, n * n * es);
    double t0 = synor__now_s();
    if (algo == SYNOR_TILED_GEMM && f64)
        bl->dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0, a, bn, b, bn, 0.0,
                  ref, bn);
    else if (algo == SYNOR_TILED_GEMM)
        bl->sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0f, a, bn, b, bn, 0.0f,
                  ref, bn);
    else if (f64)
        bl->dpotrf("L", &bn, ref, &bn, &info);
    else
        bl->spotrf("L", &bn, ref, &bn, &info);
    *secs = synor__now_s() - t0;
    synor__blas_set_threads(1);
    if (info != 0)
        return synor__error(SYNOR_EIO, "tiled run: LAPACK potrf failed (info %d)", (int)info);
    return 0;
}

/* The runtime's tiled algorithm into c (from a for potrf); seconds. */
static int tiled(synor_runtime *rt, synor_tiled_algo algo, int f64, size_t n, size_t nb,
                 const void *a, const void *b, void *c, double *secs)
{
    size_t es = f64 ? 8 : 4;
    if (algo == SYNOR_TILED_CHOLESKY)
        memcpy(c, a, n * n * es);
    double t0 = synor__now_s();
    int rc;
    if (algo == SYNOR_TILED_GEMM)
        rc = f64 ? synor_tiled_dgemm(rt, n, n, n, 1.0, a, n, b, n, 0.0, c, n, nb)
                 : synor_tiled_sgemm(rt, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n, nb);
    else
        rc = f64 ? synor_tiled_dpotrf(rt, n, c, n, nb) : synor_tiled_spotrf(rt, n, c, n, nb);
    *secs = synor__now_s() - t0;
    return rc;
}

int synor_exec_tiled(synor_runtime *rt, synor_tiled_algo algo, size_t n, size_t nb,
                     synor_dtype dtype, uint64_t seed, unsigned reps, synor_tiled_result *out)
{
    memset(out, 0, sizeof *out);
    int f64 = dtype == SYNOR_DTYPE_FP64;
    if (!f64 && dtype != SYNOR_DTYPE_FP32)
        return synor__error(SYNOR_ENOTSUP, "tiled run: data type %s (fp32 or fp64)",
                            synor_dtype_name(dtype));
    if (n == 0 || nb == 0 || n > 65536 || nb > n)
        return synor__error(SYNOR_EINVAL, "tiled run: n %zu, tile %zu (1 <= tile <= n <= 65536)",
                            n, nb);
    if (reps == 0 || reps > SYNOR_TILED_MAX_REPS)
        return synor__error(SYNOR_EINVAL, "tiled run: %u repetitions (1 to %u)", reps,
                            SYNOR_TILED_MAX_REPS);
    /* The kernels' per-device preparation (OpenCL builds, cuBLAS) is not
     * part of the timed run. */
    int rc = synor_runtime_library_add(rt, &synor__kernels_library);
    if (rc < 0)
        return rc;
    const synor__blas_api *bl = synor__blas();
    if (!bl)
        return SYNOR_ENOTSUP;
    size_t es = f64 ? 8 : 4, nn = n * n;
    int ncores = bl->get_num_procs();
    void *a = synor__malloc(nn * es), *b = synor__malloc(nn * es), *c = synor__malloc(nn * es),
         *ref = synor__malloc(nn * es);
    if (!a || !b || !c || !ref) {
        rc = synor__error(SYNOR_ENOMEM, "tiled run: cannot allocate 4 matrices of %zu x %zu", n, n);
        goto out;
    }
    blasint bn = (blasint)n;
    if (algo == SYNOR_TILED_GEMM) {
        fill(a, nn, f64, seed);
        fill(b, nn, f64, seed + 1);
    } else {
        /* SPD: A = M M^T + n I. */
        fill(b, nn, f64, seed);
        memset(a, 0, nn * es);
        synor__blas_set_threads(ncores);
        if (f64)
            bl->dsyrk(CblasColMajor, CblasLower, CblasNoTrans, bn, bn, 1.0, b, bn, 0.0, a, bn);
        else
            bl->ssyrk(CblasColMajor, CblasLower, CblasNoTrans, bn, bn, 1.0f, b, bn, 0.0f, a, bn);
        synor__blas_set_threads(1);
        for (size_t i = 0; i < n; i++) {
            if (f64)
                ((double *)a)[i * n + i] += (double)n;
            else
                ((float *)a)[i * n + i] += (float)n;
        }
    }
    /* One untimed warm-up of each (first-touch page faults, OpenBLAS's
     * thread start-up, the runtime's calibration), then reps timed pairs,
     * alternating so that a noisy moment hits both; the medians are
     * reported. */
    double t_rt[SYNOR_TILED_MAX_REPS], t_ref[SYNOR_TILED_MAX_REPS], dummy;
    if ((rc = reference(bl, algo, f64, n, a, b, ref, ncores, &dummy)) < 0 ||
        (rc = tiled(rt, algo, f64, n, nb, a, b, c, &dummy)) < 0)
        goto out;
    for (unsigned r = 0; r < reps; r++)
        if ((rc = reference(bl, algo, f64, n, a, b, ref, ncores, &t_ref[r])) < 0 ||
            (rc = tiled(rt, algo, f64, n, nb, a, b, c, &t_rt[r])) < 0)
            goto out;
    out->reps = reps;
    out->seconds = synor__median(t_rt, reps);
    out->ref_seconds = synor__median(t_ref, reps);
    double flop = algo == SYNOR_TILED_GEMM ? 2.0 * (double)n * (double)nn
                                           : (double)n * (double)nn / 3.0;
    out->gflops = flop / out->seconds * 1e-9;
    for (size_t j = 0; j < n; j++)
        for (size_t i = algo == SYNOR_TILED_CHOLESKY ? j : 0; i < n; i++) {
            double e = fabs(get(c, i + j * n, f64) - get(ref, i + j * n, f64));
            if (e > out->max_error || isnan(e))
                out->max_error = e;
        }
out:
    synor__free(a);
    synor__free(b);
    synor__free(c);
    synor__free(ref);
    return rc;
}
