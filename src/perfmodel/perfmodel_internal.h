/* perfmodel_internal.h - the performance model's table, shared by
 * perfmodel.c (table, record, estimate) and perfmodel_file.c (JSON, files).
 * Never installed. */
#ifndef SYNOR_PERFMODEL_INTERNAL_H
#define SYNOR_PERFMODEL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/common.h"
#include "synor/perfmodel.h"

#define SYNOR__PM_W SYNOR_PERFMODEL_WINDOW
/* Stripes of the table: a power of two. 64 mutexes make two workers
 * recording into different entries collide rarely. */
#define SYNOR__PM_STRIPES 64
#define SYNOR__PM_INLINE_BUCKETS 4
/* The largest sample count: exactly representable in a double, so a file
 * holds it exactly. Counts saturate there (merging two files' entries could
 * otherwise go past what a file may hold). */
#define SYNOR__PM_MAX_COUNT (UINT64_C(1) << 53)

/* One (operation, footprint, device). op and dev point into the same
 * allocation and never change; an entry lives until the model is destroyed,
 * so a snapshot may keep its string pointers. */
typedef struct synor__pm_entry {
    struct synor__pm_entry *next; /* bucket chain */
    uint64_t hash;
    uint64_t fp;
    const char *op, *dev;
    /* Welford over every sample. */
    uint64_t count;
    double mean, m2, min, max;
    /* The window: ring[] in arrival order (the next write goes to ring[pos];
     * the oldest is ring[(pos + W - n) % W]) and the same n values sorted
     * ascending in sorted[], kept up to date by insertion, so the median is
     * O(1) to read and a sample costs two memmoves of at most W doubles. */
    unsigned n, pos;
    double ring[SYNOR__PM_W];
    double sorted[SYNOR__PM_W];
} synor__pm_entry;

typedef struct synor__pm_stripe {
    pthread_mutex_t lock;
    synor__pm_entry **b; /* nb buckets (a power of two); initially inl */
    size_t nb, n;
    synor__pm_entry *inl[SYNOR__PM_INLINE_BUCKETS];
    char pad[64]; /* keeps two stripes' locks off one cache line */
} synor__pm_stripe;

struct synor_perfmodel {
    synor__pm_stripe *s; /* SYNOR__PM_STRIPES */
    atomic_uint min_samples;
};

/* The key's hash (stripe from the low bits, bucket from the others). */
uint64_t synor__pm_hash(const char *op, uint64_t fp, const char *dev);

/* A new entry with no samples, outside any table; NULL when out of memory. */
synor__pm_entry *synor__pm_entry_new(const char *op, uint64_t fp, const char *dev);

/* Appends one sample (finite, >= 0) to e: window and statistics. */
void synor__pm_entry_add(synor__pm_entry *e, double x);

/* Sets e's window to the last SYNOR__PM_W of x[0..n), oldest first; the
 * statistics are left alone. */
void synor__pm_window_set(synor__pm_entry *e, const double *x, size_t n);

/* The median of e's window (n > 0). */
double synor__pm_median(const synor__pm_entry *e);

/* Puts e (from synor__pm_entry_new, filled) into pm: if pm has no entry
 * for its key, e is linked in and 1 returned; otherwise e's samples are
 * merged into the existing entry as older ones, and 0 is returned (the
 * caller frees e). Never fails. */
int synor__pm_commit(synor_perfmodel *pm, synor__pm_entry *e);

/* Copies of every entry (strings shared with the model), sorted by op,
 * device, footprint. *out is NULL when there are none. */
int synor__pm_snapshot(const synor_perfmodel *pm, synor__pm_entry **out, size_t *n);

/* Compares two entries' keys: op, then device, then footprint. */
int synor__pm_key_cmp(const synor__pm_entry *a, const synor__pm_entry *b);

#endif
