/* semantic.c - the semantic cache: values under unit embedding vectors in
 * a ring of max_entries (the oldest entry is replaced), looked up by the
 * highest cosine similarity: an exact scan, or hnswlib's HNSW graph
 * (cache/hnsw.h) beside it once the entries pass the scan's measured
 * limit; optionally kept in an SQLite file and reloaded at open. See
 * synor/cache.h. */
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "cache/hnsw.h"
#include "common/common.h"
#include "synor/cache.h"
#include "synor/error.h"

struct synor_semcache {
    pthread_mutex_t mu;
    int dim;
    float threshold;
    size_t cap, count, next;
    float *vecs; /* cap x dim, unit length */
    float *tmp;  /* dim: a new entry's vector, before it is stored */
    char **vals;
    size_t *lens;
    size_t hnsw_from; /* entries from which lookups take the graph */
    int ef_search;
    synor__hnsw *hnsw; /* every entry, slot = label; NULL: none */
    /* the disk copy (NULL: none): entry n of all ever added under seq n */
    sqlite3 *db;
    sqlite3_stmt *ins, *del;
    char *path; /* a copy of disk_path, for messages */
    int64_t seq; /* the next entry's */
};

static const char *const index_names[] = {"auto", "exact", "hnsw"};

const char *synor_semcache_index_name(unsigned index)
{
    return index < 3 ? index_names[index] : "?";
}

int synor_semcache_index_parse(const char *text, unsigned *out)
{
    for (unsigned i = 0; text && i < 3; i++)
        if (!strcmp(text, index_names[i])) {
            *out = i;
            return 0;
        }
    return synor__error(SYNOR_EINVAL, "semantic index '%s': expected auto, exact or hnsw",
                        text ? text : "(null)");
}

/* Stores the unit vector v (s->dim floats) and the value copy (taken) in
 * the ring's next slot, the graph's too. Under s->mu, or before s is
 * shared. */
static int put(synor_semcache *s, const float *v, char *copy, size_t len)
{
    size_t i = s->next;
    int e = s->hnsw ? synor__hnsw_set(s->hnsw, i, v) : 0; /* slot i's old vector replaced */
    if (e) {
        synor__free(copy);
        return e;
    }
    memcpy(s->vecs + i * (size_t)s->dim, v, (size_t)s->dim * sizeof(float));
    synor__free(s->vals[i]);
    s->vals[i] = copy;
    s->lens[i] = len;
    s->next = (i + 1) % s->cap;
    if (s->count < s->cap)
        s->count++;
    return 0;
}

static int db_error(synor_semcache *s, const char *what)
{
    return synor__error(SYNOR_EIO, "semantic cache %s: %s: %s", s->path, what,
                        s->db ? sqlite3_errmsg(s->db) : "cannot open");
}

/* Opens (or creates) the file and loads its newest max_entries entries,
 * oldest first, as they were stored (no renormalising: the same bits). */
static int disk_open(synor_semcache *s, const char *path)
{
    if (!(s->path = synor__strdup(path)))
        return SYNOR_ENOMEM;
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        return db_error(s, "cannot open the database");
    sqlite3_busy_timeout(s->db, 5000);
    char *err = NULL;
    const char *schema = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                         "CREATE TABLE IF NOT EXISTS synor_semcache (seq INTEGER PRIMARY KEY, "
                         "emb BLOB NOT NULL, val BLOB NOT NULL);";
    if (sqlite3_exec(s->db, schema, NULL, NULL, &err) != SQLITE_OK) {
        int e = synor__error(SYNOR_EIO, "semantic cache %s: not a semantic cache database: %s",
                             path, err ? err : "?");
        sqlite3_free(err);
        return e;
    }
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT seq, emb, val FROM synor_semcache WHERE seq > (SELECT "
                           "coalesce(max(seq), 0) FROM synor_semcache) - ?1 ORDER BY seq",
                           -1, &q, NULL) != SQLITE_OK)
        return db_error(s, "cannot read it");
    sqlite3_bind_int64(q, 1, (sqlite3_int64)s->cap);
    int e = 0, rc;
    s->seq = 1;
    while (!e && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(q, 0);
        size_t eb = (size_t)sqlite3_column_bytes(q, 1), vb = (size_t)sqlite3_column_bytes(q, 2);
        const void *emb = sqlite3_column_blob(q, 1), *val = sqlite3_column_blob(q, 2);
        if (eb != (size_t)s->dim * sizeof(float) || !emb) {
            e = synor__error(SYNOR_EINVAL,
                             "semantic cache %s: entry %lld holds %zu bytes of embedding, "
                             "this cache's dim %d takes %zu",
                             path, (long long)seq, eb, s->dim, (size_t)s->dim * sizeof(float));
            break;
        }
        char *copy = synor__malloc(vb + 1);
        if (!copy) {
            e = SYNOR_ENOMEM;
            break;
        }
        if (vb)
            memcpy(copy, val, vb);
        copy[vb] = 0;
        memcpy(s->tmp, emb, eb); /* the blob need not be aligned */
        e = put(s, s->tmp, copy, vb);
        s->seq = seq + 1;
    }
    if (!e && rc != SQLITE_DONE)
        e = db_error(s, "cannot read it");
    sqlite3_finalize(q);
    if (e)
        return e;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO synor_semcache (seq, emb, val) VALUES (?1, ?2, ?3)",
                           -1, &s->ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "DELETE FROM synor_semcache WHERE seq <= ?1", -1, &s->del,
                           NULL) != SQLITE_OK)
        return db_error(s, "cannot prepare its statements");
    return 0;
}

/* Writes the unit vector v and the value as entry s->seq, and lets go of
 * the one the ring drops, in one transaction: committed, or nothing. */
static int disk_put(synor_semcache *s, const float *v, const void *val, size_t len)
{
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_error(s, "cannot write it");
    sqlite3_bind_int64(s->ins, 1, s->seq);
    sqlite3_bind_blob(s->ins, 2, v, (int)((size_t)s->dim * sizeof(float)), SQLITE_STATIC);
    sqlite3_bind_blob(s->ins, 3, len ? val : "", (int)len, SQLITE_STATIC);
    int ok = sqlite3_step(s->ins) == SQLITE_DONE;
    sqlite3_reset(s->ins);
    sqlite3_clear_bindings(s->ins);
    if (ok) {
        sqlite3_bind_int64(s->del, 1, s->seq - (int64_t)s->cap);
        ok = sqlite3_step(s->del) == SQLITE_DONE;
        sqlite3_reset(s->del);
    }
    if (!ok || sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        int e = db_error(s, "cannot write it");
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return e;
    }
    s->seq++;
    return 0;
}

int synor_semcache_open(const synor_semcache_opts *o, synor_semcache **out)
{
    *out = NULL;
    int dim = o->dim;
    size_t cap = o->max_entries;
    if (dim < 1 || dim > 65536 || cap < 1 || cap > (1u << 24) ||
        !(o->threshold >= -1.0f && o->threshold <= 1.0f))
        return synor__error(SYNOR_EINVAL,
                            "semantic cache: dim %d (1..65536), threshold %g "
                            "(-1..1), %zu entries (1..2^24)",
                            dim, o->threshold, cap);
    if (o->index > SYNOR_SEMCACHE_HNSW || o->hnsw_m < 0 || o->hnsw_m == 1 ||
        o->hnsw_m > 256 || o->hnsw_ef_construction < 0 || o->hnsw_ef_search < 0)
        return synor__error(SYNOR_EINVAL,
                            "semantic cache: index %u (0..2), M %d (2..256), "
                            "ef_construction %d, ef_search %d (>= 0; 0: default)",
                            o->index, o->hnsw_m, o->hnsw_ef_construction, o->hnsw_ef_search);
    size_t exact_max = o->exact_max ? o->exact_max : SYNOR_SEMCACHE_EXACT_MAX;
    /* the graph where lookups will take it: forced, or past the scan's limit */
    int graph = o->index == SYNOR_SEMCACHE_HNSW ||
                (o->index == SYNOR_SEMCACHE_AUTO && cap > exact_max && synor__hnsw_available());
    synor_semcache *s = synor__calloc(1, sizeof *s);
    if (!s)
        return SYNOR_ENOMEM;
    pthread_mutex_init(&s->mu, NULL);
    s->dim = dim;
    s->threshold = o->threshold;
    s->cap = cap;
    s->ef_search = o->hnsw_ef_search ? o->hnsw_ef_search : SYNOR_SEMCACHE_EF_SEARCH;
    s->hnsw_from = !graph ? (size_t)-1 : o->index == SYNOR_SEMCACHE_HNSW ? 0 : exact_max + 1;
    s->vecs = synor__malloc(cap * (size_t)dim * sizeof(float));
    s->tmp = synor__malloc((size_t)dim * sizeof(float));
    s->vals = synor__calloc(cap, sizeof *s->vals);
    s->lens = synor__calloc(cap, sizeof *s->lens);
    if (!s->vecs || !s->tmp || !s->vals || !s->lens) {
        synor_semcache_destroy(s);
        return SYNOR_ENOMEM;
    }
    int e = graph ? synor__hnsw_create(dim, cap, o->hnsw_m ? o->hnsw_m : 16,
                                       o->hnsw_ef_construction ? o->hnsw_ef_construction : 200,
                                       100, &s->hnsw)
                  : 0;
    if (!e && o->disk_path)
        e = disk_open(s, o->disk_path);
    if (e) {
        synor_semcache_destroy(s);
        return e;
    }
    *out = s;
    return 0;
}

int synor_semcache_create(int dim, float threshold, size_t max_entries, synor_semcache **out)
{
    synor_semcache_opts o = {.dim = dim, .threshold = threshold, .max_entries = max_entries};
    return synor_semcache_open(&o, out);
}

void synor_semcache_destroy(synor_semcache *s)
{
    if (!s)
        return;
    if (s->vals)
        for (size_t i = 0; i < s->cap; i++)
            synor__free(s->vals[i]);
    pthread_mutex_destroy(&s->mu);
    sqlite3_finalize(s->ins);
    sqlite3_finalize(s->del);
    sqlite3_close(s->db);
    synor__free(s->path);
    synor__hnsw_destroy(s->hnsw);
    synor__free(s->vecs);
    synor__free(s->tmp);
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

/* The inner product of two unit vectors, in one order for both indexes (so
 * an entry's similarity is the same whichever found it). */
static float dot(const float *v, const float *q, int n)
{
    /* 8 independent sums: the compiler keeps them in vector lanes */
    float a[8] = {0};
    int j = 0;
    for (; j + 8 <= n; j += 8)
        for (int u = 0; u < 8; u++)
            a[u] += v[j + u] * q[j + u];
    float d = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    for (; j < n; j++)
        d += v[j] * q[j];
    return d;
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
    int e = unit(emb, s->tmp, s->dim);
    if (!e && s->db) /* on disk first: an entry the file lacks is never acknowledged */
        e = disk_put(s, s->tmp, val, len);
    if (e)
        synor__free(copy);
    else
        e = put(s, s->tmp, copy, len);
    pthread_mutex_unlock(&s->mu);
    return e;
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
    if (s->count && s->count >= s->hnsw_from) {
        float approx;
        e = synor__hnsw_nearest(s->hnsw, q, s->ef_search, &at, &approx);
        if (!e && at < s->count)
            best = dot(s->vecs + at * (size_t)s->dim, q, s->dim);
        else if (!e)
            e = synor__error(SYNOR_ESTATE, "semantic cache: HNSW label %zu of %zu entries", at,
                             s->count);
        if (e) {
            pthread_mutex_unlock(&s->mu);
            synor__free(q);
            return e;
        }
    } else
        for (size_t i = 0; i < s->count; i++) {
            float d = dot(s->vecs + i * (size_t)s->dim, q, s->dim);
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

static pthread_mutex_t *lock_of(const synor_semcache *s)
{
    return (pthread_mutex_t *)(uintptr_t)&s->mu; /* lock only */
}

size_t synor_semcache_count(const synor_semcache *s)
{
    pthread_mutex_lock(lock_of(s));
    size_t n = s->count;
    pthread_mutex_unlock(lock_of(s));
    return n;
}

unsigned synor_semcache_index(const synor_semcache *s)
{
    pthread_mutex_lock(lock_of(s));
    unsigned i = s->count >= s->hnsw_from ? SYNOR_SEMCACHE_HNSW : SYNOR_SEMCACHE_EXACT;
    pthread_mutex_unlock(lock_of(s));
    return i;
}
