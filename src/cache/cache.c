/* cache.c - the exact-match response cache: an LRU in memory under a byte
 * budget over an SQLite file on disk (WAL journal), promotion on a disk
 * hit. See synor/cache.h. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "synor/cache.h"
#include "synor/error.h"

typedef struct entry {
    struct entry *hnext;       /* hash chain */
    struct entry *prev, *next; /* LRU list, most recent first */
    uint64_t hash;
    size_t klen, vlen;
    char *key, *val; /* one allocation: key then value */
} entry;

struct synor_cache {
    pthread_mutex_t mu;
    entry **table;
    size_t nbuckets, count;
    uint64_t bytes, budget;
    entry *head, *tail;
    synor_cache_stats st;
    sqlite3 *db;
    sqlite3_stmt *get, *put;
    pthread_mutex_t dbmu; /* the prepared statements are not shareable */
};

static uint64_t hash_of(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, then a final mix */
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static void lru_unlink(synor_cache *c, entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_front(synor_cache *c, entry *e)
{
    e->next = c->head;
    e->prev = NULL;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

static entry **slot_of(synor_cache *c, uint64_t h, const void *key, size_t klen)
{
    entry **pp = &c->table[h & (c->nbuckets - 1)];
    while (*pp && !((*pp)->hash == h && (*pp)->klen == klen && !memcmp((*pp)->key, key, klen)))
        pp = &(*pp)->hnext;
    return pp;
}

static void remove_entry(synor_cache *c, entry *e)
{
    entry **pp = slot_of(c, e->hash, e->key, e->klen);
    *pp = e->hnext;
    lru_unlink(c, e);
    c->bytes -= e->klen + e->vlen;
    c->count--;
    synor__free(e->key);
    synor__free(e);
}

static int grow(synor_cache *c)
{
    size_t n = c->nbuckets * 2;
    entry **t = synor__calloc(n, sizeof *t);
    if (!t)
        return SYNOR_ENOMEM;
    for (size_t i = 0; i < c->nbuckets; i++)
        for (entry *e = c->table[i], *nx; e; e = nx) {
            nx = e->hnext;
            e->hnext = t[e->hash & (n - 1)];
            t[e->hash & (n - 1)] = e;
        }
    synor__free(c->table);
    c->table = t;
    c->nbuckets = n;
    return 0;
}

/* Inserts or replaces in memory, evicting least recently used entries to
 * stay within the budget. Called with mu held. */
static int mem_put(synor_cache *c, uint64_t h, const void *key, size_t klen, const void *val,
                   size_t len)
{
    if (klen + len > c->budget)
        return 0; /* disk only */
    entry **pp = slot_of(c, h, key, klen);
    if (*pp)
        remove_entry(c, *pp);
    if (c->count + 1 > c->nbuckets && grow(c))
        return SYNOR_ENOMEM;
    entry *e = synor__calloc(1, sizeof *e);
    char *kv = synor__malloc(klen + len + 1);
    if (!e || !kv) {
        synor__free(e);
        synor__free(kv);
        return SYNOR_ENOMEM;
    }
    memcpy(kv, key, klen);
    if (len)
        memcpy(kv + klen, val, len);
    *e = (entry){.hash = h, .klen = klen, .vlen = len, .key = kv, .val = kv + klen};
    pp = slot_of(c, h, key, klen);
    e->hnext = *pp;
    *pp = e;
    lru_front(c, e);
    c->bytes += klen + len;
    c->count++;
    while (c->bytes > c->budget && c->tail && c->tail != e) {
        remove_entry(c, c->tail);
        c->st.evictions++;
    }
    return 0;
}

static int db_error(synor_cache *c, const char *path, const char *what)
{
    return synor__error(SYNOR_EIO, "%s: %s: %s", path ? path : "cache", what,
                        c->db ? sqlite3_errmsg(c->db) : "cannot open");
}

static int open_disk(synor_cache *c, const char *path)
{
    if (sqlite3_open_v2(path, &c->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        return db_error(c, path, "cannot open the cache database");
    sqlite3_busy_timeout(c->db, 5000);
    char *err = NULL;
    const char *schema = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                         "CREATE TABLE IF NOT EXISTS synor_cache (k BLOB PRIMARY KEY, v BLOB NOT "
                         "NULL) WITHOUT ROWID;";
    if (sqlite3_exec(c->db, schema, NULL, NULL, &err) != SQLITE_OK) {
        int e = synor__error(SYNOR_EIO, "%s: not a cache database: %s", path, err ? err : "?");
        sqlite3_free(err);
        return e;
    }
    if (sqlite3_prepare_v2(c->db, "SELECT v FROM synor_cache WHERE k = ?1", -1, &c->get, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(c->db, "INSERT OR REPLACE INTO synor_cache (k, v) VALUES (?1, ?2)", -1,
                           &c->put, NULL) != SQLITE_OK)
        return db_error(c, path, "cannot prepare its statements");
    return 0;
}

void synor_cache_close(synor_cache *c)
{
    if (!c)
        return;
    while (c->head)
        remove_entry(c, c->head);
    sqlite3_finalize(c->get);
    sqlite3_finalize(c->put);
    sqlite3_close(c->db);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->dbmu);
    synor__free(c->table);
    synor__free(c);
}

int synor_cache_open(const synor_cache_opts *opts, synor_cache **out)
{
    if (!out)
        return synor__error(SYNOR_EINVAL, "synor_cache_open: NULL argument");
    synor_cache *c = synor__calloc(1, sizeof *c);
    if (!c)
        return SYNOR_ENOMEM;
    c->budget = opts && opts->mem_bytes ? opts->mem_bytes : 64ull << 20;
    c->nbuckets = 1024;
    c->table = synor__calloc(c->nbuckets, sizeof *c->table);
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->dbmu, NULL);
    int e = c->table ? 0 : SYNOR_ENOMEM;
    if (!e && opts && opts->disk_path)
        e = open_disk(c, opts->disk_path);
    if (e) {
        synor_cache_close(c);
        return e;
    }
    *out = c;
    return 0;
}

int synor_cache_get(synor_cache *c, const void *key, size_t klen, char **val, size_t *len,
                    int *tier)
{
    uint64_t h = hash_of(key, klen);
    pthread_mutex_lock(&c->mu);
    entry *e = *slot_of(c, h, key, klen);
    if (e) {
        char *v = malloc(e->vlen + 1);
        if (!v) {
            pthread_mutex_unlock(&c->mu);
            return SYNOR_ENOMEM;
        }
        if (e->vlen)
            memcpy(v, e->val, e->vlen);
        v[e->vlen] = 0;
        *val = v;
        *len = e->vlen;
        lru_unlink(c, e);
        lru_front(c, e);
        c->st.hits[SYNOR_CACHE_MEMORY]++;
        pthread_mutex_unlock(&c->mu);
        if (tier)
            *tier = SYNOR_CACHE_MEMORY;
        return 0;
    }
    pthread_mutex_unlock(&c->mu);
    char *v = NULL;
    size_t n = 0;
    int found = 0, e2 = 0;
    if (c->db) {
        pthread_mutex_lock(&c->dbmu);
        sqlite3_bind_blob(c->get, 1, key, (int)klen, SQLITE_STATIC);
        int rc = sqlite3_step(c->get);
        if (rc == SQLITE_ROW) {
            n = (size_t)sqlite3_column_bytes(c->get, 0);
            const void *b = sqlite3_column_blob(c->get, 0);
            v = malloc(n + 1);
            if (v) {
                if (n)
                    memcpy(v, b, n);
                v[n] = 0;
                found = 1;
            } else {
                e2 = SYNOR_ENOMEM;
            }
        } else if (rc != SQLITE_DONE) {
            e2 = db_error(c, NULL, "read failed");
        }
        sqlite3_reset(c->get);
        sqlite3_clear_bindings(c->get);
        pthread_mutex_unlock(&c->dbmu);
    }
    pthread_mutex_lock(&c->mu);
    if (found) {
        c->st.hits[SYNOR_CACHE_DISK]++;
        mem_put(c, h, key, klen, v, n); /* promotion; a failure only costs the promotion */
    } else if (!e2) {
        c->st.misses++;
    }
    pthread_mutex_unlock(&c->mu);
    if (!found)
        return e2 ? e2 : SYNOR_ENOENT;
    *val = v;
    *len = n;
    if (tier)
        *tier = SYNOR_CACHE_DISK;
    return 0;
}

int synor_cache_has(synor_cache *c, const void *key, size_t klen)
{
    uint64_t h = hash_of(key, klen);
    pthread_mutex_lock(&c->mu);
    int found = *slot_of(c, h, key, klen) != NULL;
    pthread_mutex_unlock(&c->mu);
    if (found || !c->db)
        return found;
    pthread_mutex_lock(&c->dbmu);
    sqlite3_bind_blob(c->get, 1, key, (int)klen, SQLITE_STATIC);
    found = sqlite3_step(c->get) == SQLITE_ROW;
    sqlite3_reset(c->get);
    sqlite3_clear_bindings(c->get);
    pthread_mutex_unlock(&c->dbmu);
    return found;
}

int synor_cache_put(synor_cache *c, const void *key, size_t klen, const void *val, size_t len)
{
    if (klen > INT32_MAX || len > INT32_MAX)
        return synor__error(SYNOR_ERANGE, "cache: an entry of %zu + %zu bytes is too large", klen,
                            len);
    if (c->db) {
        pthread_mutex_lock(&c->dbmu);
        sqlite3_bind_blob(c->put, 1, key, (int)klen, SQLITE_STATIC);
        sqlite3_bind_blob(c->put, 2, len ? val : "", (int)len, SQLITE_STATIC);
        int rc = sqlite3_step(c->put);
        sqlite3_reset(c->put);
        sqlite3_clear_bindings(c->put);
        int e = rc == SQLITE_DONE ? 0 : db_error(c, NULL, "write failed");
        pthread_mutex_unlock(&c->dbmu);
        if (e)
            return e;
    }
    pthread_mutex_lock(&c->mu);
    int e = mem_put(c, hash_of(key, klen), key, klen, val, len);
    if (!e)
        c->st.puts++;
    pthread_mutex_unlock(&c->mu);
    return e;
}

void synor_cache_stats_get(synor_cache *c, synor_cache_stats *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->st;
    out->mem_entries = c->count;
    out->mem_bytes = c->bytes;
    pthread_mutex_unlock(&c->mu);
    out->disk_entries = 0;
    if (c->db) {
        sqlite3_stmt *st = NULL;
        pthread_mutex_lock(&c->dbmu);
        if (sqlite3_prepare_v2(c->db, "SELECT count(*) FROM synor_cache", -1, &st, NULL) ==
                SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            out->disk_entries = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        pthread_mutex_unlock(&c->dbmu);
    }
}

static size_t put_bytes(char *buf, size_t cap, size_t at, const void *p, size_t n)
{
    if (at + n <= cap)
        memcpy(buf + at, p, n);
    return at + n;
}

size_t synor_cache_key(char *buf, size_t cap, const char *model, const char *prompt, int max_tokens,
                       float temperature, int top_k, float top_p, uint64_t seed)
{
    size_t at = put_bytes(buf, cap, 0, "synor-gen/1", 11);
    const char *s[2] = {model ? model : "", prompt ? prompt : ""};
    for (int i = 0; i < 2; i++) {
        uint64_t n = strlen(s[i]);
        at = put_bytes(buf, cap, at, &n, sizeof n);
        at = put_bytes(buf, cap, at, s[i], n);
    }
    int32_t ints[2] = {max_tokens, top_k};
    float floats[2] = {temperature, top_p};
    at = put_bytes(buf, cap, at, ints, sizeof ints);
    at = put_bytes(buf, cap, at, floats, sizeof floats);
    /* a greedy answer does not depend on the seed */
    uint64_t sd = temperature > 0 ? seed : 0;
    return put_bytes(buf, cap, at, &sd, sizeof sd);
}
