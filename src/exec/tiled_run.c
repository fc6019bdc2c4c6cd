/* tiled_run.c - the tiled presets of real runs (synor_exec_tiled): the
 * runtime's tiled GEMM or Cholesky on a seeded random matrix, checked
 * against one OpenBLAS/LAPACK call on all cores, both timed. */
#include <cblas.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "kernels/kernels.h"
#include "synor/exec.h"

extern void spotrf_(const char *uplo, const blasint *n, float *a, const blasint *lda,
                    blasint *info);
extern void dpotrf_(const char *uplo, const blasint *n, double *a, const blasint *lda,
                    blasint *info);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

int synor_exec_tiled(synor_runtime *rt, synor_tiled_algo algo, size_t n, size_t nb,
                     synor_dtype dtype, uint64_t seed, synor_tiled_result *out)
{
    memset(out, 0, sizeof *out);
    int f64 = dtype == SYNOR_DTYPE_FP64;
    if (!f64 && dtype != SYNOR_DTYPE_FP32)
        return synor__error(SYNOR_ENOTSUP, "tiled run: data type %s (fp32 or fp64)",
                            synor_dtype_name(dtype));
    if (n == 0 || nb == 0 || n > 65536 || nb > n)
        return synor__error(SYNOR_EINVAL, "tiled run: n %zu, tile %zu (1 <= tile <= n <= 65536)",
                            n, nb);
    /* The kernels' per-device preparation (OpenCL builds, cuBLAS) is not
     * part of the timed run. */
    int rc = synor_runtime_library_add(rt, &synor__kernels_library);
    if (rc < 0)
        return rc;
    size_t es = f64 ? 8 : 4, nn = n * n;
    int ncores = openblas_get_num_procs();
    void *a = synor__malloc(nn * es), *b = synor__malloc(nn * es), *c = synor__malloc(nn * es),
         *ref = synor__malloc(nn * es);
    if (!a || !b || !c || !ref) {
        rc = synor__error(SYNOR_ENOMEM, "tiled run: cannot allocate 4 matrices of %zu x %zu", n, n);
        goto out;
    }
    blasint bn = (blasint)n, info = 0;
    if (algo == SYNOR_TILED_GEMM) {
        fill(a, nn, f64, seed);
        fill(b, nn, f64, seed + 1);
        memset(c, 0, nn * es);
        memset(ref, 0, nn * es);
        openblas_set_num_threads(ncores);
        double t0 = now_s();
        if (f64)
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0, a, bn, b, bn,
                        0.0, ref, bn);
        else
            cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0f, a, bn, b, bn,
                        0.0f, ref, bn);
        out->ref_seconds = now_s() - t0;
        openblas_set_num_threads(1);
        t0 = now_s();
        rc = f64 ? synor_tiled_dgemm(rt, n, n, n, 1.0, a, n, b, n, 0.0, c, n, nb)
                 : synor_tiled_sgemm(rt, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n, nb);
        out->seconds = now_s() - t0;
        out->gflops = 2.0 * (double)n * (double)nn / out->seconds * 1e-9;
    } else {
        /* SPD: A = M M^T + n I. */
        fill(b, nn, f64, seed);
        memset(a, 0, nn * es);
        openblas_set_num_threads(ncores);
        if (f64)
            cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, bn, bn, 1.0, b, bn, 0.0, a, bn);
        else
            cblas_ssyrk(CblasColMajor, CblasLower, CblasNoTrans, bn, bn, 1.0f, b, bn, 0.0f, a, bn);
        for (size_t i = 0; i < n; i++) {
            if (f64)
                ((double *)a)[i * n + i] += (double)n;
            else
                ((float *)a)[i * n + i] += (float)n;
        }
        memcpy(ref, a, nn * es);
        memcpy(c, a, nn * es);
        double t0 = now_s();
        if (f64)
            dpotrf_("L", &bn, ref, &bn, &info);
        else
            spotrf_("L", &bn, ref, &bn, &info);
        out->ref_seconds = now_s() - t0;
        openblas_set_num_threads(1);
        if (info != 0) {
            rc = synor__error(SYNOR_EIO, "tiled run: LAPACK potrf failed (info %d)", (int)info);
            goto out;
        }
        t0 = now_s();
        rc = f64 ? synor_tiled_dpotrf(rt, n, c, n, nb) : synor_tiled_spotrf(rt, n, c, n, nb);
        out->seconds = now_s() - t0;
        out->gflops = (double)n * (double)nn / 3.0 / out->seconds * 1e-9;
    }
    if (rc < 0)
        goto out;
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
