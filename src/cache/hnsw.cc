/* hnsw.cc - hnsw.h over hnswlib (Debian's libhnswlib-dev, header-only,
 * Apache-2.0): the library's HierarchicalNSW graph in its inner-product
 * space. The one C++ file of the library: every exception hnswlib throws
 * (allocation, a full index) is caught here and returned as an error code,
 * so none crosses into C. */
#include <hnswlib/hnswlib.h>

#include <cstring>
#include <new>

#include "cache/hnsw.h"
#include "synor/error.h"

extern "C" int synor__error(int code, const char *fmt, ...);

struct synor__hnsw {
    hnswlib::InnerProductSpace space;
    hnswlib::HierarchicalNSW<float> graph;
    size_t max_elements;
    synor__hnsw(int dim, size_t max, int m, int efc, uint64_t seed)
        : space((size_t)dim), graph(&space, max, (size_t)m, (size_t)efc, (size_t)seed),
          max_elements(max)
    {
    }
};

int synor__hnsw_available(void)
{
    return 1;
}

int synor__hnsw_create(int dim, size_t max_elements, int m, int ef_construction, uint64_t seed,
                       synor__hnsw **out)
{
    *out = nullptr;
    if (dim < 1 || max_elements < 1 || m < 2 || ef_construction < 1)
        return synor__error(SYNOR_EINVAL,
                            "semantic cache: HNSW index of dim %d, %zu entries, M %d, "
                            "ef_construction %d",
                            dim, max_elements, m, ef_construction);
    try {
        *out = new synor__hnsw(dim, max_elements, m, ef_construction, seed);
    } catch (const std::exception &e) {
        return synor__error(SYNOR_ENOMEM, "semantic cache: HNSW index of %zu entries: %s",
                            max_elements, e.what());
    }
    return 0;
}

void synor__hnsw_destroy(synor__hnsw *h)
{
    delete h;
}

int synor__hnsw_set(synor__hnsw *h, size_t label, const float *v)
{
    if (label >= h->max_elements)
        return synor__error(SYNOR_EINVAL, "semantic cache: HNSW label %zu of %zu", label,
                            h->max_elements);
    try {
        h->graph.addPoint(v, (hnswlib::labeltype)label);
    } catch (const std::exception &e) {
        return synor__error(SYNOR_ENOMEM, "semantic cache: HNSW insert: %s", e.what());
    }
    return 0;
}

int synor__hnsw_nearest(synor__hnsw *h, const float *q, int ef, size_t *label, float *dot)
{
    if (h->graph.cur_element_count == 0)
        return SYNOR_ENOENT;
    try {
        h->graph.setEf((size_t)(ef < 1 ? 1 : ef));
        auto top = h->graph.searchKnn(q, 1);
        if (top.empty())
            return SYNOR_ENOENT;
        *label = (size_t)top.top().second;
        *dot = 1.0f - top.top().first;
    } catch (const std::exception &e) {
        return synor__error(SYNOR_ENOMEM, "semantic cache: HNSW search: %s", e.what());
    }
    return 0;
}

size_t synor__hnsw_count(const synor__hnsw *h)
{
    return h->graph.cur_element_count;
}
