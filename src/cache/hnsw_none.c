/* hnsw_none.c - the approximate index where the build has no hnswlib
 * (hnsw.h): it is reported as absent, and every call fails. */
#include "cache/hnsw.h"
#include "common/common.h"
#include "synor/error.h"

int synor__hnsw_available(void)
{
    return 0;
}

static int absent(void)
{
    return synor__error(SYNOR_ENOTSUP, "semantic cache: the HNSW index needs hnswlib, which this "
                                       "build lacks (install libhnswlib-dev and rebuild)");
}

int synor__hnsw_create(int dim, size_t max_elements, int m, int ef_construction, uint64_t seed,
                       synor__hnsw **out)
{
    (void)dim, (void)max_elements, (void)m, (void)ef_construction, (void)seed;
    *out = NULL;
    return absent();
}

void synor__hnsw_destroy(synor__hnsw *h)
{
    (void)h;
}

int synor__hnsw_set(synor__hnsw *h, size_t label, const float *v)
{
    (void)h, (void)label, (void)v;
    return absent();
}

int synor__hnsw_nearest(synor__hnsw *h, const float *q, int ef, size_t *label, float *dot)
{
    (void)h, (void)q, (void)ef, (void)label, (void)dot;
    return absent();
}

size_t synor__hnsw_count(const synor__hnsw *h)
{
    (void)h;
    return 0;
}
