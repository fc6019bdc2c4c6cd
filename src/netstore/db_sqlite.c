/* db_sqlite.c - the netstore's SQLite backend: one connection, WAL,
 * synchronous=FULL (a commit is on disk before the call returns), a busy
 * timeout for other processes reading the file, and write transactions
 * taken with BEGIN IMMEDIATE so a claim never races another writer.
 * Prepared statements are kept by the address of their (static) SQL. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "netstore/db.h"

#define STMT_CACHE 96

typedef struct stmt_slot {
    const char *key;
    sqlite3_stmt *st;
} stmt_slot;

struct nsdb {
    sqlite3 *h;
    char *path;
    stmt_slot cache[STMT_CACHE];
};

static int fail(nsdb *db, int rc, const char *what)
{
    int code = SYNOR_EIO;
    int ext = db && db->h ? sqlite3_extended_errcode(db->h) : rc;
    if ((ext & 0xff) == SQLITE_CONSTRAINT)
        code = SYNOR_EEXIST;
    else if ((ext & 0xff) == SQLITE_BUSY || (ext & 0xff) == SQLITE_LOCKED)
        code = SYNOR_EBUSY;
    return synor__error(code, "netstore (sqlite %s): %s: %s", db && db->path ? db->path : "",
                        what, db && db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc));
}

static int sq_script(nsdb *db, const char *sql)
{
    char *sub = synor__nsdb_dialect(sql, 0);
    if (!sub)
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    char *err = NULL;
    int rc = sqlite3_exec(db->h, sub, NULL, NULL, &err);
    synor__free(sub);
    if (rc != SQLITE_OK) {
        int e = synor__error(SYNOR_EIO, "netstore (sqlite %s): %s", db->path,
                             err ? err : sqlite3_errstr(rc));
        sqlite3_free(err);
        return e;
    }
    return 0;
}

static void sq_close(nsdb *db)
{
    if (!db)
        return;
    for (int i = 0; i < STMT_CACHE; i++)
        sqlite3_finalize(db->cache[i].st);
    sqlite3_close(db->h);
    synor__free(db->path);
    synor__free(db);
}

static int sq_open(const char *url, nsdb **out)
{
    const char *path = !strncmp(url, "sqlite:", 7) ? url + 7 : url;
    if (!*path)
        return synor__error(SYNOR_EINVAL, "netstore: empty SQLite path in '%s'", url);
    nsdb *db = synor__calloc(1, sizeof *db);
    if (!db || !(db->path = synor__strdup(path))) {
        synor__free(db);
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    }
    int rc = sqlite3_open_v2(path, &db->h,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        int e = fail(db, rc, "open");
        sq_close(db);
        return e;
    }
    sqlite3_busy_timeout(db->h, 10000);
    /* a 64 MiB page cache and checkpoints every 4,000 pages (16 MiB) of
     * WAL: the dispatch path's pages stay in memory and the WAL is folded
     * back in large steps, not every 1,000 pages */
    int e = sq_script(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
                          "PRAGMA foreign_keys=ON; PRAGMA cache_size=-65536; "
                          "PRAGMA wal_autocheckpoint=4000; PRAGMA temp_store=MEMORY;");
    if (e) {
        sq_close(db);
        return e;
    }
    *out = db;
    return 0;
}

static int sq_begin(nsdb *db, int write)
{
    return sq_script(db, write ? "BEGIN IMMEDIATE" : "BEGIN");
}
static int sq_commit(nsdb *db) { return sq_script(db, "COMMIT"); }
static void sq_rollback(nsdb *db)
{
    if (!sqlite3_get_autocommit(db->h))
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

static int prepare(nsdb *db, const char *sql, sqlite3_stmt **out)
{
    size_t h = ((uintptr_t)sql >> 3) % STMT_CACHE;
    for (size_t k = 0; k < STMT_CACHE; k++) {
        stmt_slot *sl = &db->cache[(h + k) % STMT_CACHE];
        if (sl->key == sql) {
            *out = sl->st;
            return 0;
        }
        if (!sl->key) {
            char *sub = synor__nsdb_dialect(sql, 0);
            if (!sub)
                return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
            int rc = sqlite3_prepare_v3(db->h, sub, -1, SQLITE_PREPARE_PERSISTENT, &sl->st, NULL);
            synor__free(sub);
            if (rc != SQLITE_OK)
                return fail(db, rc, "prepare");
            sl->key = sql;
            *out = sl->st;
            return 0;
        }
    }
    /* cache full (cannot happen with the store's fixed set of statements):
     * a statement that lives for this call only is not supported */
    return synor__error(SYNOR_ENOMEM, "netstore: statement cache full");
}

static int sq_exec(nsdb *db, const char *sql, const nsparam *p, int np, nsres *res,
                   int64_t *changes)
{
    sqlite3_stmt *st = NULL;
    int e = prepare(db, sql, &st);
    if (e)
        return e;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    for (int i = 0; i < np; i++) {
        char name[16];
        snprintf(name, sizeof name, "$%d", i + 1);
        int idx = sqlite3_bind_parameter_index(st, name);
        if (!idx)
            continue; /* a parameter the statement does not use */
        int rc;
        switch (p[i].kind) {
        case 'i': rc = sqlite3_bind_int64(st, idx, p[i].i); break;
        case 't': rc = sqlite3_bind_text(st, idx, p[i].s, -1, SQLITE_STATIC); break;
        case 'b': rc = sqlite3_bind_blob64(st, idx, p[i].b ? p[i].b : "", p[i].n, SQLITE_STATIC); break;
        default: rc = sqlite3_bind_null(st, idx); break;
        }
        if (rc != SQLITE_OK)
            return fail(db, rc, "bind");
    }
    if (res)
        *res = (nsres){0};
    size_t cap = 0;
    int cols = sqlite3_column_count(st);
    for (;;) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            e = fail(db, rc, "step");
            sqlite3_reset(st);
            if (res)
                synor__nsres_free(res);
            return e;
        }
        if (!res)
            continue;
        if (res->rows == cap) {
            size_t nc = cap ? cap * 2 : 8;
            nscell *c = synor__realloc(res->cells, nc * (size_t)cols * sizeof *c);
            if (!c) {
                sqlite3_reset(st);
                synor__nsres_free(res);
                return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
            }
            res->cells = c;
            cap = nc;
        }
        res->cols = (size_t)cols;
        memset(&res->cells[res->rows * (size_t)cols], 0, (size_t)cols * sizeof(nscell));
        for (int c = 0; c < cols; c++) {
            nscell *cell = &res->cells[res->rows * (size_t)cols + (size_t)c];
            int t = sqlite3_column_type(st, c);
            *cell = (nscell){.null = t == SQLITE_NULL};
            const void *src = t == SQLITE_BLOB ? sqlite3_column_blob(st, c)
                                               : (const void *)sqlite3_column_text(st, c);
            size_t n = (size_t)sqlite3_column_bytes(st, c);
            cell->p = synor__malloc(n + 1);
            if (!cell->p) {
                res->rows++;
                sqlite3_reset(st);
                synor__nsres_free(res);
                return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
            }
            if (n)
                memcpy(cell->p, src, n);
            cell->p[n] = 0;
            cell->len = n;
        }
        res->rows++;
    }
    if (changes)
        *changes = sqlite3_changes64(db->h);
    sqlite3_reset(st);
    return 0;
}

const nsdb_ops synor__nsdb_sqlite = {
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .exec = sq_exec,
    .script = sq_script,
};
