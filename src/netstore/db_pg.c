/* db_pg.c - the netstore's PostgreSQL backend (libpq): a connection,
 * statements prepared once by the address of their SQL, parameters sent
 * as text (bytes in binary), results read as text (bytea unescaped).
 * Commits wait for the WAL flush (synchronous_commit on, the default).
 * BEGIN is not sent on its own: it goes with the transaction's first
 * statement in one pipeline (libpq's pipeline mode), one round trip. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netstore/db.h"

#define STMT_CACHE 96
#define BYTEAOID 17

typedef struct stmt_slot {
    const char *key;
    char name[16];
} stmt_slot;

struct nsdb {
    PGconn *c;
    stmt_slot cache[STMT_CACHE];
    int n_prepared;
    int begin_pending; /* BEGIN asked for, to be sent with the next statement */
};

static int fail_res(nsdb *db, PGresult *r, const char *what)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    int code = SYNOR_EIO;
    if (state && !strcmp(state, "23505"))
        code = SYNOR_EEXIST;
    else if (state && (!strcmp(state, "40001") || !strcmp(state, "40P01")))
        code = SYNOR_EBUSY;
    const char *msg = r ? PQresultErrorMessage(r) : PQerrorMessage(db->c);
    char buf[512];
    synor__strlcpy(buf, msg ? msg : "", sizeof buf);
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = 0;
    return synor__error(code, "netstore (postgresql): %s: %s", what, buf);
}

static int pg_script(nsdb *db, const char *sql)
{
    char *sub = synor__nsdb_dialect(sql, 1);
    if (!sub)
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    if (db->begin_pending) {
        db->begin_pending = 0;
        size_t n = strlen(sub);
        char *b = synor__malloc(n + 8);
        if (!b) {
            synor__free(sub);
            return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
        }
        memcpy(b, "BEGIN; ", 7);
        memcpy(b + 7, sub, n + 1);
        synor__free(sub);
        sub = b;
    }
    PGresult *r = PQexec(db->c, sub);
    synor__free(sub);
    ExecStatusType st = PQresultStatus(r);
    int e = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : fail_res(db, r, "script");
    PQclear(r);
    return e;
}

static void pg_close(nsdb *db)
{
    if (!db)
        return;
    PQfinish(db->c);
    synor__free(db);
}

static void quiet(void *arg, const PGresult *r)
{
    (void)arg;
    (void)r;
}

static int pg_open(const char *url, nsdb **out)
{
    nsdb *db = synor__calloc(1, sizeof *db);
    if (!db)
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    db->c = PQconnectdb(url);
    if (!db->c || PQstatus(db->c) != CONNECTION_OK) {
        char buf[512];
        synor__strlcpy(buf, db->c ? PQerrorMessage(db->c) : "out of memory", sizeof buf);
        size_t n = strlen(buf);
        while (n && buf[n - 1] == '\n')
            buf[--n] = 0;
        pg_close(db);
        return synor__error(SYNOR_EIO, "netstore: cannot connect to PostgreSQL: %s", buf);
    }
    PQsetNoticeReceiver(db->c, quiet, NULL);
    int e = pg_script(db, "SET client_min_messages = warning; SET synchronous_commit = on");
    if (e) {
        pg_close(db);
        return e;
    }
    *out = db;
    return 0;
}

static int pg_begin(nsdb *db, int write)
{
    (void)write;
    /* inside a transaction already, BEGIN would only warn: nothing to send */
    if (!db->begin_pending && PQtransactionStatus(db->c) == PQTRANS_IDLE)
        db->begin_pending = 1;
    return 0;
}
static int pg_commit(nsdb *db)
{
    if (db->begin_pending) { /* nothing was run */
        db->begin_pending = 0;
        return 0;
    }
    return pg_script(db, "COMMIT");
}
static int pg_alive(nsdb *db) { return PQstatus(db->c) == CONNECTION_OK; }
static void pg_rollback(nsdb *db)
{
    db->begin_pending = 0;
    if (PQtransactionStatus(db->c) != PQTRANS_IDLE) {
        PGresult *r = PQexec(db->c, "ROLLBACK");
        PQclear(r);
    }
}

static int prepare(nsdb *db, const char *sql, int np, const char **name)
{
    size_t h = ((uintptr_t)sql >> 3) % STMT_CACHE;
    for (size_t k = 0; k < STMT_CACHE; k++) {
        stmt_slot *sl = &db->cache[(h + k) % STMT_CACHE];
        if (sl->key == sql) {
            *name = sl->name;
            return 0;
        }
        if (!sl->key) {
            char *sub = synor__nsdb_dialect(sql, 1);
            if (!sub)
                return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
            snprintf(sl->name, sizeof sl->name, "s%d", db->n_prepared++);
            PGresult *r = PQprepare(db->c, sl->name, sub, np, NULL);
            synor__free(sub);
            int e = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : fail_res(db, r, "prepare");
            PQclear(r);
            if (e)
                return e;
            sl->key = sql;
            *name = sl->name;
            return 0;
        }
    }
    return synor__error(SYNOR_ENOMEM, "netstore: statement cache full");
}

/* BEGIN and the prepared statement name in one pipeline: *out gets the
 * statement's result (an error result when it failed). */
static int pipelined(nsdb *db, const char *name, int np, const char *const *vals,
                     const int *lens, const int *fmts, PGresult **out)
{
    PGconn *c = db->c;
    *out = NULL;
    if (!PQenterPipelineMode(c))
        return fail_res(db, NULL, "pipeline");
    int ok = PQsendQueryParams(c, "BEGIN", 0, NULL, NULL, NULL, NULL, 0) &&
             PQsendQueryPrepared(c, name, np, vals, lens, fmts, 0) && PQpipelineSync(c);
    /* the results: BEGIN's, NULL, the statement's, NULL, the sync */
    int e = ok ? 0 : fail_res(db, NULL, "pipeline");
    int item = 0;
    for (int guard = 0; ok && guard < 16; guard++) {
        PGresult *r = PQgetResult(c);
        if (!r) {
            item++;
            continue;
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            break;
        }
        if (item == 0 && st != PGRES_COMMAND_OK && !e)
            e = fail_res(db, r, "begin");
        if (item == 1 && !*out) {
            *out = r;
            continue;
        }
        PQclear(r);
    }
    if (!PQexitPipelineMode(c) && !e)
        e = fail_res(db, NULL, "pipeline");
    if (e || !*out) {
        PQclear(*out);
        *out = NULL;
        return e ? e : synor__error(SYNOR_EIO, "netstore (postgresql): pipeline: no result");
    }
    return 0;
}

static int pg_exec(nsdb *db, const char *sql, const nsparam *p, int np, nsres *res,
                   int64_t *changes)
{
    const char *name = NULL;
    int e = prepare(db, sql, np, &name);
    if (e)
        return e;
    const char *vals[16];
    int lens[16], fmts[16];
    char nums[16][24];
    if (np > 16)
        return synor__error(SYNOR_EINVAL, "netstore: more than 16 parameters");
    for (int i = 0; i < np; i++) {
        lens[i] = 0;
        fmts[i] = 0;
        switch (p[i].kind) {
        case 'i':
            snprintf(nums[i], sizeof nums[i], "%lld", (long long)p[i].i);
            vals[i] = nums[i];
            break;
        case 't': vals[i] = p[i].s; break;
        case 'b':
            vals[i] = p[i].b ? p[i].b : "";
            lens[i] = (int)p[i].n;
            fmts[i] = 1;
            break;
        default: vals[i] = NULL; break;
        }
    }
    PGresult *r;
    if (db->begin_pending) {
        db->begin_pending = 0;
        if ((e = pipelined(db, name, np, vals, lens, fmts, &r)))
            return e;
    } else {
        r = PQexecPrepared(db->c, name, np, vals, lens, fmts, 0);
    }
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        e = fail_res(db, r, "exec");
        PQclear(r);
        return e;
    }
    if (changes) {
        const char *t = PQcmdTuples(r);
        *changes = t && *t ? strtoll(t, NULL, 10) : 0;
    }
    if (res) {
        *res = (nsres){0};
        size_t rows = (size_t)PQntuples(r), cols = (size_t)PQnfields(r);
        if (rows && cols) {
            res->cells = synor__calloc(rows * cols, sizeof *res->cells);
            if (!res->cells) {
                PQclear(r);
                return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
            }
        }
        res->rows = rows;
        res->cols = cols;
        for (size_t i = 0; i < rows && !e; i++)
            for (size_t c = 0; c < cols && !e; c++) {
                nscell *cell = &res->cells[i * cols + c];
                cell->null = PQgetisnull(r, (int)i, (int)c);
                const char *v = PQgetvalue(r, (int)i, (int)c);
                size_t n = (size_t)PQgetlength(r, (int)i, (int)c);
                unsigned char *un = NULL;
                if (!cell->null && PQftype(r, (int)c) == BYTEAOID) {
                    un = PQunescapeBytea((const unsigned char *)v, &n);
                    if (!un) {
                        e = synor__error(SYNOR_ENOMEM, "netstore: out of memory");
                        break;
                    }
                    v = (const char *)un;
                }
                cell->p = synor__malloc(n + 1);
                if (cell->p) {
                    memcpy(cell->p, v, n);
                    cell->p[n] = 0;
                    cell->len = n;
                } else {
                    e = synor__error(SYNOR_ENOMEM, "netstore: out of memory");
                }
                if (un)
                    PQfreemem(un);
            }
        if (e)
            synor__nsres_free(res);
    }
    PQclear(r);
    return e;
}

static const nsdb_ops pg_ops = {
    .name = "postgresql",
    .open = pg_open,
    .close = pg_close,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .exec = pg_exec,
    .script = pg_script,
    .alive = pg_alive,
};
const nsdb_ops *const synor__nsdb_pg = &pg_ops;
