/* test_runtime_linalg.c - tiled GEMM and Cholesky on the runtime match one
 * BLAS/LAPACK call on random inputs (odd sizes: edge tiles smaller than the
 * tile size), and a matrix that is not SPD fails naming the tile. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "synor/error.h"
#include "synor/runtime.h"
#include "test.h"

extern void dpotrf_(const char *, const blasint *, double *, const blasint *, blasint *);
extern void spotrf_(const char *, const blasint *, float *, const blasint *, blasint *);

static unsigned rng = 88172645u;
static double rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (double)rng / 4294967296.0 - 0.5;
}

static synor_runtime *make(unsigned workers)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = workers;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0 || synor_runtime_start(rt) < 0)
        return NULL;
    return rt;
}

static double rel_err_d(const double *a, const double *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

TEST(tiled_dgemm_matches_blas)
{
    synor_runtime *rt = make(3);
    ASSERT(rt != NULL);
    const size_t m = 101, n = 77, k = 93, lda = 110;
    double *a = malloc(lda * k * sizeof *a), *b = malloc(k * n * sizeof *b);
    double *c = malloc(m * n * sizeof *c), *ref = malloc(m * n * sizeof *ref);
    ASSERT(a && b && c && ref);
    for (size_t i = 0; i < lda * k; i++)
        a[i] = rnd();
    for (size_t i = 0; i < k * n; i++)
        b[i] = rnd();
    for (size_t i = 0; i < m * n; i++)
        c[i] = ref[i] = rnd();
    ASSERT_OK(synor_tiled_dgemm(rt, m, n, k, 1.5, a, lda, b, k, 0.5, c, m, 32));
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)n, (blasint)k, 1.5,
                a, (blasint)lda, b, (blasint)k, 0.5, ref, (blasint)m);
    ASSERT(rel_err_d(c, ref, m * n) < 1e-13);
    /* beta = 0: C is only written (its old contents are ignored, even NaN). */
    for (size_t i = 0; i < m * n; i++)
        c[i] = NAN;
    ASSERT_OK(synor_tiled_dgemm(rt, m, n, k, 1.0, a, lda, b, k, 0.0, c, m, 40));
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)n, (blasint)k, 1.0,
                a, (blasint)lda, b, (blasint)k, 0.0, ref, (blasint)m);
    ASSERT(rel_err_d(c, ref, m * n) < 1e-13);
    free(a), free(b), free(c), free(ref);
    synor_runtime_destroy(rt);
}

TEST(tiled_sgemm_matches_blas)
{
    synor_runtime *rt = make(2);
    ASSERT(rt != NULL);
    const size_t n = 96;
    float *a = malloc(n * n * sizeof *a), *b = malloc(n * n * sizeof *b);
    float *c = calloc(n * n, sizeof *c), *ref = calloc(n * n, sizeof *ref);
    ASSERT(a && b && c && ref);
    for (size_t i = 0; i < n * n; i++) {
        a[i] = (float)rnd();
        b[i] = (float)rnd();
    }
    ASSERT_OK(synor_tiled_sgemm(rt, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n, 24));
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)n, (blasint)n, 1.0f,
                a, (blasint)n, b, (blasint)n, 0.0f, ref, (blasint)n);
    double num = 0, den = 0;
    for (size_t i = 0; i < n * n; i++) {
        num += (double)(c[i] - ref[i]) * (c[i] - ref[i]);
        den += (double)ref[i] * ref[i];
    }
    ASSERT(sqrt(num / den) < 1e-5);
    free(a), free(b), free(c), free(ref);
    synor_runtime_destroy(rt);
}

/* A random SPD matrix: B B^T + n I. */
static void spd(double *a, size_t n)
{
    double *b = malloc(n * n * sizeof *b);
    for (size_t i = 0; i < n * n; i++)
        b[i] = rnd();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)n, (blasint)n, 1.0,
                b, (blasint)n, b, (blasint)n, 0.0, a, (blasint)n);
    for (size_t i = 0; i < n; i++)
        a[i + i * n] += (double)n;
    free(b);
}

TEST(tiled_dpotrf_matches_lapack)
{
    synor_runtime *rt = make(3);
    ASSERT(rt != NULL);
    const size_t n = 157;
    double *a = malloc(n * n * sizeof *a), *ref = malloc(n * n * sizeof *ref);
    ASSERT(a && ref);
    spd(a, n);
    memcpy(ref, a, n * n * sizeof *a);
    ASSERT_OK(synor_tiled_dpotrf(rt, n, a, n, 32));
    blasint nn = (blasint)n, info = 0;
    dpotrf_("L", &nn, ref, &nn, &info);
    ASSERT_EQ(info, 0);
    double num = 0, den = 0;
    for (size_t j = 0; j < n; j++)
        for (size_t i = j; i < n; i++) {
            double d = a[i + j * n] - ref[i + j * n];
            num += d * d;
            den += ref[i + j * n] * ref[i + j * n];
        }
    ASSERT(sqrt(num / den) < 1e-12);
    free(a), free(ref);
    synor_runtime_destroy(rt);
}

TEST(tiled_spotrf_matches_lapack)
{
    synor_runtime *rt = make(2);
    ASSERT(rt != NULL);
    const size_t n = 130;
    double *ad = malloc(n * n * sizeof *ad);
    float *a = malloc(n * n * sizeof *a), *ref = malloc(n * n * sizeof *ref);
    ASSERT(ad && a && ref);
    spd(ad, n);
    for (size_t i = 0; i < n * n; i++)
        a[i] = ref[i] = (float)ad[i];
    ASSERT_OK(synor_tiled_spotrf(rt, n, a, n, 32));
    blasint nn = (blasint)n, info = 0;
    spotrf_("L", &nn, ref, &nn, &info);
    ASSERT_EQ(info, 0);
    double num = 0, den = 0;
    for (size_t j = 0; j < n; j++)
        for (size_t i = j; i < n; i++) {
            double d = (double)a[i + j * n] - ref[i + j * n];
            num += d * d;
            den += (double)ref[i + j * n] * ref[i + j * n];
        }
    ASSERT(sqrt(num / den) < 1e-5);
    free(ad), free(a), free(ref);
    synor_runtime_destroy(rt);
}

TEST(not_spd_fails_naming_the_tile)
{
    synor_runtime *rt = make(2);
    ASSERT(rt != NULL);
    const size_t n = 64;
    double *a = malloc(n * n * sizeof *a);
    spd(a, n);
    a[40 + 40 * n] = -1e6; /* breaks positive definiteness in tile (2,2) of 16 */
    ASSERT_EQ(synor_tiled_dpotrf(rt, n, a, n, 16), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "task 'potrf'");
    ASSERT_CONTAINS(synor_errmsg(), "tile (2,2) is not positive definite");
    free(a);
    synor_runtime_destroy(rt);
}

TEST_MAIN(tiled_dgemm_matches_blas, tiled_sgemm_matches_blas, tiled_dpotrf_matches_lapack,
          tiled_spotrf_matches_lapack, not_spd_fails_naming_the_tile)
