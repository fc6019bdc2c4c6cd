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
 * it. Two indexes (docs/LLM.md, "Caches"; docs/BENCHMARKS.md, "Caches"):
 *   exact  a scan of every entry: never misses the best one; its time
 *          grows with the entries (dim 288 on a Zen 3 VM: 50 us at 1,000,
 *          0.2 ms at 4,096, 0.6 ms at 10,000, 12 ms at 100,000);
 *   hnsw   hnswlib's hierarchical navigable small-world graph (Debian's
 *          libhnswlib-dev, where the build found it): 0.3 ms at 10,000
 *          and 0.6 ms at 100,000 on the same VM, at the cost of an add
 *          (0.2-1.3 ms, against microseconds) and of recall (it may return
 *          a near-best entry; the similarity reported is always the
 *          returned entry's own, summed as the scan sums it).
 * By default (SYNOR_SEMCACHE_AUTO) lookups scan up to exact_max entries
 * and take the graph beyond, which is then kept from the first entry on,
 * so the switch costs no rebuild. Optionally the entries are also kept in
 * an SQLite file (disk_path), committed as they are added and reloaded at
 * open. */
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

/* The index a lookup takes (synor_semcache_opts.index). */
enum { SYNOR_SEMCACHE_AUTO = 0, SYNOR_SEMCACHE_EXACT = 1, SYNOR_SEMCACHE_HNSW = 2 };
/* AUTO's default switch: the exact scan up to this many entries (measured:
 * docs/BENCHMARKS.md, "Caches"). */
#define SYNOR_SEMCACHE_EXACT_MAX 4096
/* The graph's default search width (hnswlib's ef): recall against time. */
#define SYNOR_SEMCACHE_EF_SEARCH 64

typedef struct synor_semcache_opts {
    int dim;            /* embedding length, 1..65536 */
    float threshold;    /* the least cosine similarity that is a hit (e.g. 0.95) */
    size_t max_entries; /* 1..2^24; beyond it the oldest entry goes */
    unsigned index;     /* SYNOR_SEMCACHE_*: AUTO (0), EXACT, or HNSW (SYNOR_ENOTSUP
                           from open where the build has no hnswlib; AUTO then
                           scans at every size) */
    size_t exact_max;   /* AUTO: the scan up to this many entries; 0: the default */
    int hnsw_m;         /* links per node (hnswlib's M); 0: 16 */
    int hnsw_ef_construction; /* candidates while inserting; 0: 200 */
    int hnsw_ef_search; /* candidates while searching; 0: SYNOR_SEMCACHE_EF_SEARCH */
    const char *disk_path; /* an SQLite file (WAL) every add is committed to before it
                              returns, whose newest max_entries entries open reloads
                              (the same bits); NULL: memory only */
} synor_semcache_opts;

/* Opens a semantic cache: empty, or what disk_path holds. SYNOR_EINVAL
 * naming the bad field (or the file and an entry whose embedding is not of
 * dim floats), SYNOR_EIO naming the file and SQLite's message. */
int synor_semcache_open(const synor_semcache_opts *opts, synor_semcache **out);
/* synor_semcache_open with dim, threshold, max_entries and the defaults. */
int synor_semcache_create(int dim, float threshold, size_t max_entries, synor_semcache **out);
void synor_semcache_destroy(synor_semcache *s); /* accepts NULL */
/* emb: dim floats (normalised here). The value is copied. On an error
 * (SYNOR_EINVAL: an embedding of norm 0 or not finite; SYNOR_EIO: the file
 * could not take it) the cache is unchanged. */
int synor_semcache_add(synor_semcache *s, const float *emb, const void *val, size_t len);
/* The most similar entry the index finds: 0 with *similarity, *val
 * (malloc'd, the caller frees it with free()) and *len when it reaches the
 * threshold, else SYNOR_ENOENT (*similarity still says the best one found,
 * -1 if empty). Thread-safe, as add. */
int synor_semcache_lookup(synor_semcache *s, const float *emb, float *similarity, char **val,
                          size_t *len);
size_t synor_semcache_count(const synor_semcache *s);
/* The index the next lookup takes: SYNOR_SEMCACHE_EXACT or _HNSW. */
unsigned synor_semcache_index(const synor_semcache *s);
/* "auto", "exact", "hnsw" ("?" for another value), and back: SYNOR_EINVAL
 * naming the text for anything else. */
const char *synor_semcache_index_name(unsigned index);
int synor_semcache_index_parse(const char *text, unsigned *out);

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
