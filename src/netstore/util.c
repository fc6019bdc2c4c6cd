/* util.c - what the netstore's files share: the SQL dialect substitution,
 * result cells, the clock, SHA-256 (nettle), random hex (getrandom), the
 * event log. */
#include <errno.h>
#include <nettle/sha2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "netstore/db.h"

char *synor__nsdb_dialect(const char *sql, int pg)
{
    static const char *const from[] = {"%ID%", "%BLOB%", "%SKIP%", "%LOCK%", "%LOCK_S%"};
    static const char *const lite[] = {"INTEGER PRIMARY KEY AUTOINCREMENT", "BLOB", "", "", ""};
    static const char *const post[] = {"BIGSERIAL PRIMARY KEY", "BYTEA", "FOR UPDATE SKIP LOCKED",
                                       "FOR UPDATE", "FOR UPDATE OF s"};
    synor__buf b;
    synor__buf_init(&b);
    for (const char *p = sql; *p;) {
        size_t k = 0;
        for (; k < SYNOR__ARRAY_LEN(from); k++)
            if (!strncmp(p, from[k], strlen(from[k])))
                break;
        if (k < SYNOR__ARRAY_LEN(from)) {
            synor__buf_puts(&b, pg ? post[k] : lite[k]);
            p += strlen(from[k]);
        } else {
            synor__buf_append(&b, p, 1);
            p++;
        }
    }
    if (!b.len)
        synor__buf_append(&b, "", 0);
    synor__buf_append(&b, "\0", 1);
    if (b.failed) {
        synor__buf_free(&b);
        return NULL;
    }
    return b.data;
}

void synor__nsres_free(nsres *r)
{
    if (!r || !r->cells)
        return;
    for (size_t i = 0; i < r->rows * r->cols; i++)
        synor__free(r->cells[i].p);
    synor__free(r->cells);
    *r = (nsres){0};
}

const nscell *synor__nsres_cell(const nsres *r, size_t row, size_t col)
{
    return row < r->rows && col < r->cols ? &r->cells[row * r->cols + col] : NULL;
}

const char *synor__nsres_text(const nsres *r, size_t row, size_t col)
{
    const nscell *c = synor__nsres_cell(r, row, col);
    return c && !c->null && c->p ? c->p : "";
}

int64_t synor__nsres_int(const nsres *r, size_t row, size_t col)
{
    return strtoll(synor__nsres_text(r, row, col), NULL, 10);
}

int synor__nsres_null(const nsres *r, size_t row, size_t col)
{
    const nscell *c = synor__nsres_cell(r, row, col);
    return !c || c->null;
}

int64_t synor__ns_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void synor__ns_sha256_hex(const void *data, size_t n, char out[65])
{
    struct sha256_ctx c;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_init(&c);
    sha256_update(&c, n, data);
    sha256_digest(&c, sizeof d, d);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[64] = 0;
}

int synor__ns_random_hex(size_t n, char *out)
{
    unsigned char b[64];
    if (n > sizeof b)
        return synor__error(SYNOR_EINVAL, "netstore: %zu random bytes asked, at most 64", n);
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(b + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return synor__error(SYNOR_EIO, "netstore: getrandom: %s", strerror(errno));
        }
        got += (size_t)r;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[2 * n] = 0;
    return 0;
}

/* The pooled connection bound to this thread (pool.c), and its store. */
_Thread_local synor_netstore *synor__ns_tls_store;
_Thread_local ns_conn *synor__ns_tls_conn;

nsdb *synor__ns_db(synor_netstore *s)
{
    return synor__ns_tls_store == s ? synor__ns_tls_conn->db : s->db;
}

ns_deltas *synor__ns_deltas(synor_netstore *s)
{
    return synor__ns_tls_store == s ? &synor__ns_tls_conn->jd : &s->jd;
}

uint64_t synor__ns_rand(synor_netstore *s)
{
    pthread_mutex_lock(&s->pmu);
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    uint64_t r = s->rng;
    pthread_mutex_unlock(&s->pmu);
    return r;
}

int synor__ns_exec(synor_netstore *s, const char *sql, const nsparam *p, int np, nsres *res,
                   int64_t *changes)
{
    return s->ops->exec(synor__ns_db(s), sql, p, np, res, changes);
}

int synor__ns_begin(synor_netstore *s, int write) { return s->ops->begin(synor__ns_db(s), write); }
int synor__ns_commit(synor_netstore *s) { return s->ops->commit(synor__ns_db(s)); }
void synor__ns_rollback(synor_netstore *s) { s->ops->rollback(synor__ns_db(s)); }

int synor__ns_event(synor_netstore *s, const char *kind, const char *subject, const char *detail)
{
    static const char sql[] =
        "INSERT INTO events (at, kind, subject, detail) VALUES ($1, $2, $3, $4)";
    nsparam p[] = {NS_I(time(NULL)), NS_T(kind), NS_T(subject), NS_T(detail ? detail : "")};
    return synor__ns_exec(s, sql, p, 4, NULL, NULL);
}
