/* blas_api.h - OpenBLAS (CBLAS and the two LAPACK factorizations the
 * library uses), loaded with dlopen the first time a kernel or the runtime
 * needs it, not linked into the library.
 *
 * Why: OpenBLAS starts its thread pool when it is loaded, and its idle
 * threads spin (sched_yield) for about 0.1 s before they sleep. Linked in,
 * every `synor` command paid that - 0.1-0.15 s of CPU for `synor market
 * book`, and a quarter of `synor market batch`'s time on two cores - though
 * only real runs compute. Loaded on demand, only those do. cblas.h gives
 * the types and enums; the calls go through this table. Never installed. */
#ifndef SYNOR_BLAS_API_H
#define SYNOR_BLAS_API_H

#include <cblas.h>

typedef struct synor__blas_api {
    void (*sgemm)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint,
                  blasint, float, const float *, blasint, const float *, blasint, float, float *,
                  blasint);
    void (*dgemm)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint,
                  blasint, double, const double *, blasint, const double *, blasint, double,
                  double *, blasint);
    void (*strsm)(enum CBLAS_ORDER, enum CBLAS_SIDE, enum CBLAS_UPLO, enum CBLAS_TRANSPOSE,
                  enum CBLAS_DIAG, blasint, blasint, float, const float *, blasint, float *,
                  blasint);
    void (*dtrsm)(enum CBLAS_ORDER, enum CBLAS_SIDE, enum CBLAS_UPLO, enum CBLAS_TRANSPOSE,
                  enum CBLAS_DIAG, blasint, blasint, double, const double *, blasint, double *,
                  blasint);
    void (*ssyrk)(enum CBLAS_ORDER, enum CBLAS_UPLO, enum CBLAS_TRANSPOSE, blasint, blasint, float,
                  const float *, blasint, float, float *, blasint);
    void (*dsyrk)(enum CBLAS_ORDER, enum CBLAS_UPLO, enum CBLAS_TRANSPOSE, blasint, blasint,
                  double, const double *, blasint, double, double *, blasint);
    void (*spotrf)(const char *uplo, const blasint *n, float *a, const blasint *lda,
                   blasint *info);
    void (*dpotrf)(const char *uplo, const blasint *n, double *a, const blasint *lda,
                   blasint *info);
    void (*set_num_threads)(int);
    int (*get_num_procs)(void);
} synor__blas_api;

/* The table, loading OpenBLAS on the first call (thread-safe); NULL, with
 * the message set, when it cannot be loaded. */
const synor__blas_api *synor__blas(void);
/* OpenBLAS's own threads: set now if it is loaded, else when it is (a
 * runtime that never calls BLAS does not load it). 0 = its default. */
void synor__blas_set_threads(int n);

#endif
