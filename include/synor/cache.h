/* synor/cache.h - response caches for the serving stack (issue 12 point 7;
 * seed 003 §2.1, multi-tier and semantic caching).
 *
 * Exact-match cache (synor_cache): values under byte keys - the caller
 * builds the key from everything that decides the answer (the model, the
 * prompt, the sampling parameters and seed; synor_cache_key does it for
 * generation requests) - in two tiers:
 *   memory  an LRU of entries under a byte budget (keys + values);
 *   disk    an SQLite database (WAL journal, one file, no server), so a
 *           crash leaves every committed entry readable and the file
 *           consistent; optional.
 * A put writes both tiers; a get looks in memory, then on disk, and a disk
 * hit is promoted into memory. Every call is thread-safe (one mutex for
 * the memory tier; SQLite serialises the disk tier).
 *
 * Semantic cache (synor_semcache): values under embedding vectors (unit
 * length); a lookup returns the most similar entry (cosine similarity) if
 * it reaches the threshold, with the similarity, so the caller can report
 * it. The index is an exact scan, so it never misses the best entry: at
 * dimension 288 it answers in 22 us at 1,000 entries, 0.23 ms at 10,000
 * and 4.3 ms at 100,000 on the development VM (docs/BENCHMARKS.md,
 * "Caches"); past about 10^4 entries an approximate index (hnswlib, FAISS)
 * would pay, and is not built yet. */
#ifndef SYNOR_CACHE_H
#define SYNOR_CACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_cache synor_cache;

typedef struct synor_cache_opts {
    uint64_t mem_bytes;    /* memory tier budget; default 64 MiB; 0 keeps the default */
    const char *disk_path; /* SQLite file of the disk tier; NULL: memory only */
} synor_cache_opts;

enum { SYNOR_CACHE_MEMORY = 0, SYNOR_CACHE_DISK = 1 };

typedef struct synor_cache_stats {
    uint64_t hits[2]; /* by tier */
    uint64_t misses, puts, evictions;
    uint64_t mem_entries, mem_bytes;
    uint64_t disk_entries;
} synor_cache_stats;

/* Opens a cache (creating the disk file if needed). SYNOR_EIO naming the
 * file and SQLite's message when the disk tier cannot be opened. */
int synor_cache_open(const synor_cache_opts *opts, synor_cache **out);
void synor_cache_close(synor_cache *c); /* accepts NULL */

/* The value under key: *val (malloc'd, the caller frees it with free()),
 * *len and the tier it came from. SYNOR_ENOENT on a miss. */
int synor_cache_get(synor_cache *c, const void *key, size_t klen, char **val, size_t *len,
                    int *tier);
/* Whether key has a value, in either tier, without counting a hit or a
 * miss or touching the LRU order (1 or 0; 0 also when the disk cannot be
 * read). */
int synor_cache_has(synor_cache *c, const void *key, size_t klen);
/* Stores (replaces) the value under key in memory and on disk. An entry
 * larger than the memory budget goes to disk only. */
int synor_cache_put(synor_cache *c, const void *key, size_t klen, const void *val, size_t len);
void synor_cache_stats_get(synor_cache *c, synor_cache_stats *out);

/* A generation request's key: model, prompt and every parameter that
 * changes the answer, in an unambiguous encoding (lengths before strings,
 * numbers as their exact bits). Returns the bytes written to buf (at most
 * cap), or the size needed if cap is too small. */
size_t synor_cache_key(char *buf, size_t cap, const char *model, const char *prompt, int max_tokens,
                       float temperature, int top_k, float top_p, uint64_t seed);

/* ------------------------------------------------------------ semantic */

typedef struct synor_semcache synor_semcache;

/* dim: embedding length; threshold: the least cosine similarity that is a
 * hit (e.g. 0.95); max_entries: beyond it the oldest entry goes. */
int synor_semcache_create(int dim, float threshold, size_t max_entries, synor_semcache **out);
void synor_semcache_destroy(synor_semcache *s); /* accepts NULL */
/* emb: dim floats (normalised here). The value is copied. */
int synor_semcache_add(synor_semcache *s, const float *emb, const void *val, size_t len);
/* The most similar entry: 0 with *similarity, *val (malloc'd, the caller
 * frees it with free()) and *len when it reaches the threshold, else
 * SYNOR_ENOENT (*similarity still says the best one found, -1 if empty).
 * Thread-safe, as add. */
int synor_semcache_lookup(synor_semcache *s, const float *emb, float *similarity, char **val,
                          size_t *len);
size_t synor_semcache_count(const synor_semcache *s);

/* ------------------------------------------- request-level speculation */

/* Predicts a user's next request from the requests seen so far (seed 003
 * §2.2), so a server can compute the likely ones while idle and answer
 * them from the cache. A first-order model: how often request B followed
 * request A, for each user and over all users; a user's own counts decide
 * once the user has been in A before, everyone's otherwise. At most
 * max_requests distinct requests (and users) are remembered; later new
 * ones are not learned. Thread-safe. */
typedef struct synor_predictor synor_predictor;

int synor_predictor_create(size_t max_requests, synor_predictor **out);
void synor_predictor_destroy(synor_predictor *p); /* accepts NULL */
/* user made request (both NUL-terminated strings, copied). */
int synor_predictor_observe(synor_predictor *p, const char *user, const char *request);
/* Up to n likely next requests of user, most likely first, with their
 * probabilities; returns how many (0 for a user or state never seen). The
 * strings live as long as the predictor. */
int synor_predictor_predict(synor_predictor *p, const char *user, size_t n, const char **reqs,
                            float *probs);

#ifdef __cplusplus
}
#endif
#endif
