/* cublas_mock.c - a test double of cuBLAS (handle, stream, SGEMM, DGEMM,
 * SGEMV),
 * built as libcublas.so.13 next to the CUDA driver mock (cuda_mock.c) for
 * tests/test_runtime_cuda_mock.c and tests/test_llm_cuda_mock.c only. GEMM runs through OpenBLAS on the
 * mock's host-memory "device" buffers after checking what cuBLAS would:
 * a live handle bound to a stream, a current context, operations N or T,
 * leading dimensions, and that every element of A, B and C lies inside a
 * device allocation. Status codes follow the public cublas_api.h. */
#include <cblas.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_ALLOC_FAILED = 3,
       CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_EXECUTION_FAILED = 13 };

int synor_mock_device_range(unsigned long long p, size_t n);
int synor_mock_have_context(void);

_Atomic long synor_mock_sgemm_calls, synor_mock_sgemv_calls; /* successful ones */

typedef struct handle {
    int magic;
    void *stream;
} handle;

int cublasCreate_v2(handle **h);
int cublasCreate_v2(handle **h)
{
    if (!synor_mock_have_context())
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *h = calloc(1, sizeof **h);
    if (!*h)
        return CUBLAS_STATUS_ALLOC_FAILED;
    (*h)->magic = 0x5eed;
    return CUBLAS_STATUS_SUCCESS;
}

int cublasDestroy_v2(handle *h);
int cublasDestroy_v2(handle *h)
{
    if (!h || h->magic != 0x5eed)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    h->magic = 0;
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

int cublasSetStream_v2(handle *h, void *stream);
int cublasSetStream_v2(handle *h, void *stream)
{
    if (!h || h->magic != 0x5eed)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

/* Elements of a column-major rows x cols operand with leading dimension ld. */
static int inside(const void *p, int rows, int cols, int ld, size_t es)
{
    if (rows == 0 || cols == 0)
        return 1;
    size_t span = ((size_t)ld * (size_t)(cols - 1) + (size_t)rows) * es;
    return synor_mock_device_range((unsigned long long)(uintptr_t)p, span);
}

static int check(handle *h, int ta, int tb, int m, int n, int k, const void *a, int lda,
                 const void *b, int ldb, const void *c, int ldc, size_t es)
{
    if (!h || h->magic != 0x5eed || !h->stream || !synor_mock_have_context())
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1) || m < 0 || n < 0 || k < 0 ||
        lda < (ta ? (k > 1 ? k : 1) : (m > 1 ? m : 1)) || ldb < (tb ? (n > 1 ? n : 1) : (k > 1 ? k : 1)) ||
        ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!inside(a, ta ? k : m, ta ? m : k, lda, es) || !inside(b, tb ? n : k, tb ? k : n, ldb, es) ||
        !inside(c, m, n, ldc, es))
        return CUBLAS_STATUS_EXECUTION_FAILED; /* a wild device address */
    return CUBLAS_STATUS_SUCCESS;
}

int cublasSgemm_v2(handle *h, int ta, int tb, int m, int n, int k, const float *alpha,
                   const float *a, int lda, const float *b, int ldb, const float *beta, float *c,
                   int ldc);
int cublasSgemm_v2(handle *h, int ta, int tb, int m, int n, int k, const float *alpha,
                   const float *a, int lda, const float *b, int ldb, const float *beta, float *c,
                   int ldc)
{
    int s = check(h, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, sizeof(float));
    if (s == CUBLAS_STATUS_SUCCESS)
        atomic_fetch_add(&synor_mock_sgemm_calls, 1);
    if (s == CUBLAS_STATUS_SUCCESS && m && n)
        cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc);
    return s;
}

int cublasDgemm_v2(handle *h, int ta, int tb, int m, int n, int k, const double *alpha,
                   const double *a, int lda, const double *b, int ldb, const double *beta,
                   double *c, int ldc);
int cublasDgemm_v2(handle *h, int ta, int tb, int m, int n, int k, const double *alpha,
                   const double *a, int lda, const double *b, int ldb, const double *beta,
                   double *c, int ldc)
{
    int s = check(h, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, sizeof(double));
    if (s == CUBLAS_STATUS_SUCCESS && m && n)
        cblas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc);
    return s;
}

/* y = alpha op(A) x + beta y, A m x n column-major (op: N or T), unit or
 * other increments; x and y must lie in device memory like A. */
int cublasSgemv_v2(handle *h, int trans, int m, int n, const float *alpha, const float *a, int lda,
                   const float *x, int incx, const float *beta, float *y, int incy);
int cublasSgemv_v2(handle *h, int trans, int m, int n, const float *alpha, const float *a, int lda,
                   const float *x, int incx, const float *beta, float *y, int incy)
{
    if (!h || h->magic != 0x5eed || !h->stream || !synor_mock_have_context())
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((trans != 0 && trans != 1) || m < 0 || n < 0 || lda < (m > 1 ? m : 1) || incx <= 0 ||
        incy <= 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    int nx = trans ? m : n, ny = trans ? n : m;
    if (!inside(a, m, n, lda, sizeof(float)) || !inside(x, 1, nx, incx, sizeof(float)) ||
        !inside(y, 1, ny, incy, sizeof(float)))
        return CUBLAS_STATUS_EXECUTION_FAILED;
    atomic_fetch_add(&synor_mock_sgemv_calls, 1);
    if (m && n)
        cblas_sgemv(CblasColMajor, trans ? CblasTrans : CblasNoTrans, m, n, *alpha, a, lda, x, incx,
                    *beta, y, incy);
    return CUBLAS_STATUS_SUCCESS;
}
