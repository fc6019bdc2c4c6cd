/* hnsw.h - the semantic cache's approximate index: hnswlib's hierarchical
 * navigable small-world graph (Malkov & Yashunin), from Debian's
 * libhnswlib-dev (header-only C++, Apache-2.0), behind a C interface.
 * hnsw.cc wraps it; hnsw_none.c stands in where the build found no
 * hnswlib (or no C++ compiler of the C compiler's kind), and every call
 * but synor__hnsw_available then fails with SYNOR_ENOTSUP.
 *
 * Vectors are unit length; the space is hnswlib's inner product (distance
 * 1 - dot), so the nearest entry is the most similar by cosine. Labels are
 * the caller's slots 0..max_elements-1; setting a label that holds a
 * vector replaces it (hnswlib re-links the point's neighbours). Not
 * thread-safe: the caller serialises every call on one index. Never
 * installed. */
#ifndef SYNOR_CACHE_HNSW_H
#define SYNOR_CACHE_HNSW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor__hnsw synor__hnsw;

/* 1 when this build has hnswlib. */
int synor__hnsw_available(void);

/* An empty index of at most max_elements vectors of dim floats: m links
 * per node (hnswlib's M), ef_construction candidates while inserting, seed
 * for the levels (the same insertions in the same order build the same
 * graph). SYNOR_ENOTSUP without hnswlib, SYNOR_ENOMEM. */
int synor__hnsw_create(int dim, size_t max_elements, int m, int ef_construction, uint64_t seed,
                       synor__hnsw **out);
void synor__hnsw_destroy(synor__hnsw *h); /* accepts NULL */

/* Puts the unit vector v (dim floats, copied) under label, replacing what
 * the label held. SYNOR_EINVAL for a label >= max_elements, SYNOR_ENOMEM. */
int synor__hnsw_set(synor__hnsw *h, size_t label, const float *v);

/* The label of the nearest vector to the unit vector q that the search
 * finds with ef candidates (>= 1; more: better recall, slower), and its
 * inner product with q. SYNOR_ENOENT when the index is empty. */
int synor__hnsw_nearest(synor__hnsw *h, const float *q, int ef, size_t *label, float *dot);

/* Vectors held. */
size_t synor__hnsw_count(const synor__hnsw *h);

#ifdef __cplusplus
}
#endif
#endif
