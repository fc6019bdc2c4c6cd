/* semantic.c - the semantic cache: values under unit embedding vectors,
 * looked up by the highest cosine similarity over an exact scan, in a ring
 * of max_entries (the oldest entry is replaced). See synor/cache.h. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "synor/cache.h"
#include "synor/error.h"

struct synor_semcache {
    pthread_mutex_t mu;
    int dim;
    float threshold;
    size_t cap, count, next;
    float *vecs; /* cap x dim, unit length */
    char **vals;
    size_t *lens;
};

int synor_semcache_create(int dim, float threshold, size_t max_entries, synor_semcache **out)
{
    if (dim < 1 || dim > 65536 || max_entries < 1 || max_entries > (1u << 24) ||
        !(threshold >= -1.0f && threshold <= 1.0f))
        return synor__error(SYNOR_EINVAL,
                            "semantic cache: dim %d (1..65536), threshold %g "
                            "(-1..1), %zu entries (1..2^24)",
                            dim, threshold, max_entries);
    synor_semcache *s = synor__calloc(1, sizeof *s);
    if (!s)
        return SYNOR_ENOMEM;
    s->dim = dim;
    s->threshold = threshold;
    s->cap = max_entries;
    s->vecs = synor__malloc(max_entries * (size_t)dim * sizeof(float));
    s->vals = synor__calloc(max_entries, sizeof *s->vals);
    s->lens = synor__calloc(max_entries, sizeof *s->lens);
    if (!s->vecs || !s->vals || !s->lens) {
        synor_semcache_destroy(s);
        return SYNOR_ENOMEM;
    }
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return 0;
}

void synor_semcache_destroy(synor_semcache *s)
{
    if (!s)
        return;
    if (s->vals)
        for (size_t i = 0; i < s->cap; i++)
            synor__free(s->vals[i]);
    if (s->vecs)
        pthread_mutex_destroy(&s->mu);
    synor__free(s->vecs);
    synor__free(s->vals);
    synor__free(s->lens);
    synor__free(s);
}

static int unit(const float *v, float *out, int n)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (double)v[i] * v[i];
    if (!(ss > 0) || !isfinite(ss))
        return synor__error(SYNOR_EINVAL,
                            "semantic cache: the embedding has no direction "
                            "(norm %g)",
                            sqrt(ss));
    float inv = (float)(1.0 / sqrt(ss));
    for (int i = 0; i < n; i++)
        out[i] = v[i] * inv;
    return 0;
}

int synor_semcache_add(synor_semcache *s, const float *emb, const void *val, size_t len)
{
    char *copy = synor__malloc(len + 1);
    if (!copy)
        return SYNOR_ENOMEM;
    if (len)
        memcpy(copy, val, len);
    copy[len] = 0;
    pthread_mutex_lock(&s->mu);
    size_t i = s->next;
    int e = unit(emb, s->vecs + i * (size_t)s->dim, s->dim);
    if (e) {
        pthread_mutex_unlock(&s->mu);
        synor__free(copy);
        return e;
    }
    synor__free(s->vals[i]);
    s->vals[i] = copy;
    s->lens[i] = len;
    s->next = (i + 1) % s->cap;
    if (s->count < s->cap)
        s->count++;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int synor_semcache_lookup(synor_semcache *s, const float *emb, float *similarity, char **val,
                          size_t *len)
{
    float *q = synor__malloc((size_t)s->dim * sizeof *q);
    if (!q)
        return SYNOR_ENOMEM;
    int e = unit(emb, q, s->dim);
    if (e) {
        synor__free(q);
        return e;
    }
    pthread_mutex_lock(&s->mu);
    float best = -1;
    size_t at = 0;
    for (size_t i = 0; i < s->count; i++) {
        const float *v = s->vecs + i * (size_t)s->dim;
        /* 8 independent sums: the compiler keeps them in vector lanes */
        float a[8] = {0};
        int j = 0;
        for (; j + 8 <= s->dim; j += 8)
            for (int u = 0; u < 8; u++)
                a[u] += v[j + u] * q[j + u];
        float d = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
        for (; j < s->dim; j++)
            d += v[j] * q[j];
        if (d > best) {
            best = d;
            at = i;
        }
    }
    int hit = s->count && best >= s->threshold;
    char *copy = NULL;
    size_t n = 0;
    if (hit) {
        n = s->lens[at];
        copy = malloc(n + 1);
        if (copy) {
            memcpy(copy, s->vals[at], n + 1);
        }
    }
    pthread_mutex_unlock(&s->mu);
    synor__free(q);
    if (similarity)
        *similarity = best;
    if (!hit)
        return SYNOR_ENOENT;
    if (!copy)
        return SYNOR_ENOMEM;
    *val = copy;
    *len = n;
    return 0;
}

size_t synor_semcache_count(const synor_semcache *s)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)(uintptr_t)&s->mu; /* lock only */
    pthread_mutex_lock(mu);
    size_t n = s->count;
    pthread_mutex_unlock(mu);
    return n;
}
