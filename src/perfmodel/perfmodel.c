/* perfmodel.c - history-based performance models (issue 4 point 4): the
 * table of entries, recording, estimates, footprints, the default path.
 * Files are in perfmodel_file.c.
 *
 * The table is a hash table cut into SYNOR__PM_STRIPES stripes, each with
 * its own mutex and chained buckets. record() hashes its key, locks one
 * stripe, finds the entry and updates it in O(window): the sample replaces
 * the oldest in a ring, and the sorted copy of the window is updated by
 * one removal and one insertion (binary search + memmove), so the median
 * is always ready and estimate() is O(1) once the entry is found. Bucket
 * arrays double when a stripe holds twice as many entries as buckets; when
 * that allocation fails the chains just get longer, so linking an entry
 * never fails (load relies on this to stay all-or-nothing). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfmodel/perfmodel_internal.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t mix64(uint64_t z) /* splitmix64's finalizer */
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= FNV_PRIME;
    }
    return h;
}

uint64_t synor_perfmodel_footprint(const size_t *sizes, unsigned n)
{
    uint64_t h = FNV_OFFSET;
    for (unsigned i = 0; i < n; i++) {
        uint64_t v = (uint64_t)sizes[i];
        for (int b = 0; b < 8; b++) {
            h ^= (v >> (8 * b)) & 0xff;
            h *= FNV_PRIME;
        }
    }
    /* The count too, so {} and {0} differ from each other... */
    h ^= (uint64_t)n;
    h *= FNV_PRIME;
    /* ... and a finalizer, so near shapes land far apart. */
    return mix64(h);
}

uint64_t synor__pm_hash(const char *op, uint64_t fp, const char *dev)
{
    uint64_t h = fnv_str(FNV_OFFSET, op);
    h = fnv_str(h ^ 0xff, dev); /* 0xff: no UTF-8 byte, separates op|dev */
    return mix64(h ^ fp);
}

int synor__pm_key_cmp(const synor__pm_entry *a, const synor__pm_entry *b)
{
    int c = strcmp(a->op, b->op);
    if (c)
        return c;
    if ((c = strcmp(a->dev, b->dev)))
        return c;
    return a->fp < b->fp ? -1 : a->fp > b->fp;
}

/* ---------------------------------------------------------------- entries */

synor__pm_entry *synor__pm_entry_new(const char *op, uint64_t fp, const char *dev)
{
    size_t lo = strlen(op) + 1, ld = strlen(dev) + 1;
    synor__pm_entry *e = synor__malloc(sizeof *e + lo + ld);
    if (!e)
        return NULL;
    memset(e, 0, sizeof *e);
    char *str = (char *)(e + 1);
    memcpy(str, op, lo);
    memcpy(str + lo, dev, ld);
    e->op = str;
    e->dev = str + lo;
    e->fp = fp;
    e->hash = synor__pm_hash(op, fp, dev);
    return e;
}

/* First index in sorted[0..n) whose value is >= x. */
static unsigned lower_bound(const double *v, unsigned n, double x)
{
    unsigned lo = 0, hi = n;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void synor__pm_entry_add(synor__pm_entry *e, double x)
{
    x += 0.0; /* -0.0 -> +0.0 */
    /* Welford. */
    if (e->count < SYNOR__PM_MAX_COUNT)
        e->count++;
    double d = x - e->mean;
    e->mean += d / (double)e->count;
    e->m2 += d * (x - e->mean);
    if (e->count == 1 || x < e->min)
        e->min = x;
    if (e->count == 1 || x > e->max)
        e->max = x;
    /* The window. */
    if (e->n == SYNOR__PM_W) {
        double old = e->ring[e->pos];
        unsigned i = lower_bound(e->sorted, e->n, old);
        memmove(&e->sorted[i], &e->sorted[i + 1], (e->n - i - 1) * sizeof(double));
        e->n--;
    }
    e->ring[e->pos] = x;
    e->pos = (e->pos + 1) % SYNOR__PM_W;
    unsigned j = lower_bound(e->sorted, e->n, x);
    memmove(&e->sorted[j + 1], &e->sorted[j], (e->n - j) * sizeof(double));
    e->sorted[j] = x;
    e->n++;
}

double synor__pm_median(const synor__pm_entry *e)
{
    unsigned n = e->n;
    if (n % 2)
        return e->sorted[n / 2];
    /* lo + half the gap: (lo + hi) / 2 overflows near DBL_MAX */
    double lo = e->sorted[n / 2 - 1], hi = e->sorted[n / 2];
    return lo + 0.5 * (hi - lo);
}

/* Merges `older` into e: statistics combined (Chan et al.), and the window
 * becomes older's samples followed by e's, the newest W kept. */
static void entry_merge(synor__pm_entry *e, const synor__pm_entry *older)
{
    if (!older->count)
        return;
    if (!e->count) {
        e->count = older->count;
        e->mean = older->mean;
        e->m2 = older->m2;
        e->min = older->min;
        e->max = older->max;
    } else {
        double na = (double)older->count, nb = (double)e->count, n = na + nb;
        double d = e->mean - older->mean;
        /* nb / n first: d * nb could overflow where the result does not */
        e->mean = older->mean + d * (nb / n);
        e->m2 = older->m2 + e->m2 + d * d * na * nb / n;
        e->count += older->count;
        if (e->count > SYNOR__PM_MAX_COUNT)
            e->count = SYNOR__PM_MAX_COUNT;
        e->min = fmin(e->min, older->min);
        e->max = fmax(e->max, older->max);
    }
    double all[2 * SYNOR__PM_W];
    unsigned k = 0;
    for (unsigned i = 0; i < older->n; i++)
        all[k++] = older->ring[(older->pos + SYNOR__PM_W - older->n + i) % SYNOR__PM_W];
    for (unsigned i = 0; i < e->n; i++)
        all[k++] = e->ring[(e->pos + SYNOR__PM_W - e->n + i) % SYNOR__PM_W];
    synor__pm_window_set(e, all, k);
}

void synor__pm_window_set(synor__pm_entry *e, const double *x, size_t n)
{
    size_t skip = n > SYNOR__PM_W ? n - SYNOR__PM_W : 0;
    e->n = 0;
    for (size_t i = skip; i < n; i++) {
        double v = x[i] + 0.0;
        e->ring[e->n] = v;
        unsigned j = lower_bound(e->sorted, e->n, v);
        memmove(&e->sorted[j + 1], &e->sorted[j], (e->n - j) * sizeof(double));
        e->sorted[j] = v;
        e->n++;
    }
    e->pos = e->n % SYNOR__PM_W;
}

/* ------------------------------------------------------------------ table */

static synor__pm_stripe *stripe_of(const synor_perfmodel *pm, uint64_t h)
{
    return &pm->s[h & (SYNOR__PM_STRIPES - 1)];
}

static size_t bucket_of(const synor__pm_stripe *s, uint64_t h)
{
    return (size_t)(h >> 16) & (s->nb - 1);
}

/* Under s->lock. */
static synor__pm_entry *find(const synor__pm_stripe *s, uint64_t h, const char *op, uint64_t fp,
                             const char *dev)
{
    for (synor__pm_entry *e = s->b[bucket_of(s, h)]; e; e = e->next)
        if (e->hash == h && e->fp == fp && strcmp(e->op, op) == 0 && strcmp(e->dev, dev) == 0)
            return e;
    return NULL;
}

/* Under s->lock. Never fails: without memory to grow, chains get longer. */
static void link_entry(synor__pm_stripe *s, synor__pm_entry *e)
{
    if (s->n >= 2 * s->nb) {
        size_t nb = s->nb * 2;
        synor__pm_entry **b = synor__calloc(nb, sizeof *b);
        if (b) {
            for (size_t i = 0; i < s->nb; i++)
                for (synor__pm_entry *x = s->b[i], *nx; x; x = nx) {
                    nx = x->next;
                    size_t k = (size_t)(x->hash >> 16) & (nb - 1);
                    x->next = b[k];
                    b[k] = x;
                }
            if (s->b != s->inl)
                synor__free(s->b);
            s->b = b;
            s->nb = nb;
        }
    }
    size_t k = bucket_of(s, e->hash);
    e->next = s->b[k];
    s->b[k] = e;
    s->n++;
}

int synor__pm_commit(synor_perfmodel *pm, synor__pm_entry *e)
{
    synor__pm_stripe *s = stripe_of(pm, e->hash);
    pthread_mutex_lock(&s->lock);
    synor__pm_entry *old = find(s, e->hash, e->op, e->fp, e->dev);
    if (old)
        entry_merge(old, e);
    else
        link_entry(s, e);
    pthread_mutex_unlock(&s->lock);
    return !old;
}

int synor_perfmodel_create(synor_perfmodel **out)
{
    synor_perfmodel *pm = synor__calloc(1, sizeof *pm);
    synor__pm_stripe *s = synor__calloc(SYNOR__PM_STRIPES, sizeof *s);
    if (!pm || !s) {
        synor__free(pm);
        synor__free(s);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    for (unsigned i = 0; i < SYNOR__PM_STRIPES; i++) {
        pthread_mutex_init(&s[i].lock, NULL);
        s[i].b = s[i].inl;
        s[i].nb = SYNOR__PM_INLINE_BUCKETS;
    }
    pm->s = s;
    atomic_init(&pm->min_samples, SYNOR_PERFMODEL_MIN_SAMPLES);
    *out = pm;
    return 0;
}

void synor_perfmodel_destroy(synor_perfmodel *pm)
{
    if (!pm)
        return;
    for (unsigned i = 0; i < SYNOR__PM_STRIPES; i++) {
        synor__pm_stripe *s = &pm->s[i];
        for (size_t k = 0; k < s->nb; k++)
            for (synor__pm_entry *e = s->b[k], *nx; e; e = nx) {
                nx = e->next;
                synor__free(e);
            }
        if (s->b != s->inl)
            synor__free(s->b);
        pthread_mutex_destroy(&s->lock);
    }
    synor__free(pm->s);
    synor__free(pm);
}

void synor_perfmodel_set_min_samples(synor_perfmodel *pm, unsigned n)
{
    if (n < 1)
        n = 1;
    if (n > SYNOR__PM_W)
        n = SYNOR__PM_W;
    atomic_store_explicit(&pm->min_samples, n, memory_order_relaxed);
}

unsigned synor_perfmodel_min_samples(const synor_perfmodel *pm)
{
    return atomic_load_explicit(&pm->min_samples, memory_order_relaxed);
}

size_t synor_perfmodel_count(const synor_perfmodel *pm)
{
    size_t n = 0;
    for (unsigned i = 0; i < SYNOR__PM_STRIPES; i++) {
        synor__pm_stripe *s = &pm->s[i];
        pthread_mutex_lock(&s->lock);
        n += s->n;
        pthread_mutex_unlock(&s->lock);
    }
    return n;
}

/* ------------------------------------------------------- record, estimate */

void synor_perfmodel_record(synor_perfmodel *pm, const char *op, uint64_t footprint,
                            const char *device, double seconds)
{
    if (!pm || !op || !device || !isfinite(seconds) || seconds < 0)
        return;
    uint64_t h = synor__pm_hash(op, footprint, device);
    synor__pm_stripe *s = stripe_of(pm, h);
    pthread_mutex_lock(&s->lock);
    synor__pm_entry *e = find(s, h, op, footprint, device);
    if (!e) {
        /* First sample of this key: allocate outside the lock, then look
         * again (another thread may have added it meanwhile). */
        pthread_mutex_unlock(&s->lock);
        synor__pm_entry *ne = synor__pm_entry_new(op, footprint, device);
        if (!ne)
            return;
        pthread_mutex_lock(&s->lock);
        if ((e = find(s, h, op, footprint, device)) == NULL) {
            link_entry(s, ne);
            e = ne;
            ne = NULL;
        }
        synor__pm_entry_add(e, seconds);
        pthread_mutex_unlock(&s->lock);
        synor__free(ne);
        return;
    }
    synor__pm_entry_add(e, seconds);
    pthread_mutex_unlock(&s->lock);
}

int synor_perfmodel_estimate(const synor_perfmodel *pm, const char *op, uint64_t footprint,
                             const char *device, double *seconds, unsigned *samples)
{
    if (!pm || !op || !device) {
        if (samples)
            *samples = 0;
        return SYNOR_ENOENT;
    }
    unsigned need = atomic_load_explicit(&pm->min_samples, memory_order_relaxed);
    uint64_t h = synor__pm_hash(op, footprint, device);
    synor__pm_stripe *s = stripe_of(pm, h);
    int rc = SYNOR_ENOENT;
    uint64_t count = 0;
    pthread_mutex_lock(&s->lock);
    const synor__pm_entry *e = find(s, h, op, footprint, device);
    if (e) {
        count = e->count;
        if (e->n >= need && e->n > 0) {
            if (seconds)
                *seconds = synor__pm_median(e);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (samples)
        *samples = count > UINT32_MAX ? UINT32_MAX : (unsigned)count;
    return rc;
}

/* ------------------------------------------------------ snapshot, foreach */

static int cmp_entries(const void *a, const void *b)
{
    return synor__pm_key_cmp(a, b);
}

int synor__pm_snapshot(const synor_perfmodel *pm, synor__pm_entry **out, size_t *n)
{
    synor__pm_entry *v = NULL;
    size_t len = 0, cap = 0;
    for (unsigned i = 0; i < SYNOR__PM_STRIPES; i++) {
        synor__pm_stripe *s = &pm->s[i];
        pthread_mutex_lock(&s->lock);
        if (len + s->n > cap) {
            size_t nc = cap ? cap : 16;
            while (nc < len + s->n)
                nc *= 2;
            synor__pm_entry *nv = synor__realloc(v, nc * sizeof *nv);
            if (!nv) {
                pthread_mutex_unlock(&s->lock);
                synor__free(v);
                return synor__error(SYNOR_ENOMEM, "out of memory");
            }
            v = nv;
            cap = nc;
        }
        for (size_t k = 0; k < s->nb; k++)
            for (const synor__pm_entry *e = s->b[k]; e; e = e->next) {
                v[len] = *e;
                v[len++].next = NULL;
            }
        pthread_mutex_unlock(&s->lock);
    }
    if (len)
        qsort(v, len, sizeof *v, cmp_entries);
    *out = v;
    *n = len;
    return 0;
}

int synor_perfmodel_foreach(const synor_perfmodel *pm,
                            int (*fn)(const synor_perfmodel_entry *e, void *user), void *user)
{
    synor__pm_entry *v;
    size_t n;
    int rc = synor__pm_snapshot(pm, &v, &n);
    if (rc)
        return rc;
    unsigned need = synor_perfmodel_min_samples(pm);
    for (size_t i = 0; i < n && !rc; i++) {
        const synor__pm_entry *e = &v[i];
        double sum = 0;
        for (unsigned k = 0; k < e->n; k++)
            sum += e->sorted[k];
        synor_perfmodel_entry x = {
            .op = e->op,
            .footprint = e->fp,
            .device = e->dev,
            .count = e->count,
            .mean = e->mean,
            .stddev = e->count > 1 && e->m2 > 0 ? sqrt(e->m2 / (double)(e->count - 1)) : 0,
            .min = e->min,
            .max = e->max,
            .window = e->n,
            .estimate = e->n ? synor__pm_median(e) : 0,
            .window_mean = e->n ? sum / e->n : 0,
            .calibrated = e->n > 0 && e->n >= need,
        };
        rc = fn(&x, user);
    }
    synor__free(v);
    return rc;
}

/* ------------------------------------------------------------ default path */

int synor_perfmodel_default_path(char *buf, size_t size)
{
    return synor__xdg_path(SYNOR__XDG_DATA, "perfmodel.json", buf, size);
}
