/* store.c - opening a netstore (backend by URL, schema migrated), tokens,
 * devices and blobs. Every public call holds the store's mutex for its
 * whole transaction; a failed call rolls back, so it changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json/json.h"
#include "netstore/db.h"

int synor_netstore_open(const synor_netstore_opts *o, synor_netstore **out)
{
    if (!o || !o->url || !out)
        return synor__error(SYNOR_EINVAL, "synor_netstore_open: no database URL");
    int pg = !strncmp(o->url, "postgresql://", 13) || !strncmp(o->url, "postgres://", 11);
    const nsdb_ops *ops = pg ? synor__nsdb_pg : &synor__nsdb_sqlite;
    if (!ops)
        return synor__error(SYNOR_ENOTSUP,
                            "netstore: '%s' is a PostgreSQL URL and this build has no libpq "
                            "(install libpq-dev and rebuild)",
                            o->url);
    if (o->spot_rate < 0 || o->spot_rate > 1 || o->lease_timeout_s < 0 || o->task_price < 0)
        return synor__error(SYNOR_EINVAL, "netstore: spot rate, lease timeout or price out of range");
    synor_netstore *s = synor__calloc(1, sizeof *s);
    if (!s)
        return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
    s->ops = ops;
    s->pg = pg;
    s->ncalls = NS_COMBINE_LEADERS;
    s->o = *o;
    s->o.url = NULL;
    if (!(s->o.lease_timeout_s > 0))
        s->o.lease_timeout_s = 15;
    if (!s->o.task_price)
        s->o.task_price = 10000;
    if (!s->o.min_replicas)
        s->o.min_replicas = 1;
    if (!s->o.max_attempts)
        s->o.max_attempts = 5;
    s->rng = (uint64_t)synor__ns_now_ms() * 0x9E3779B97F4A7C15ull | 1;
    int e = 0;
    if (o->policy)
        s->policy = o->policy;
    else if (!(e = synor_rewards_policy_load_builtin(&s->own_policy)))
        s->policy = s->own_policy;
    if (e) {
        synor__free(s);
        return e;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->rmu, NULL);
    pthread_mutex_init(&s->gmu, NULL);
    pthread_cond_init(&s->gcv, NULL);
    pthread_mutex_init(&s->pmu, NULL);
    pthread_cond_init(&s->pcv, NULL);
    pthread_mutex_init(&s->cmu, NULL);
    pthread_cond_init(&s->ccv, NULL);
    if (pg) {
        /* PostgreSQL: the pool of connections for the hot operations */
        size_t np = o->pool ? (o->pool < 1024 ? o->pool : 1024) : 16;
        s->pool = synor__calloc(np, sizeof *s->pool);
        s->pfree = synor__calloc(np, sizeof *s->pfree);
        s->url = synor__strdup(o->url);
        if (!s->pool || !s->pfree || !s->url) {
            synor_netstore_close(s);
            return synor__error(SYNOR_ENOMEM, "netstore: out of memory");
        }
        for (size_t i = 0; i < np; i++)
            s->pfree[i] = np - 1 - i;
        s->npool = s->nfree = np;
        /* default: half the online cores, at least 2 (docs/NETWORK.md,
         * "Scaling by coordinators": on 16 cores 8 calls dispatched 2.4x
         * what 2 did); a call holds a pooled connection: no more calls
         * than connections */
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        size_t nc = o->calls ? o->calls
                             : (ncpu / 2 > NS_COMBINE_LEADERS ? (size_t)(ncpu / 2)
                                                              : NS_COMBINE_LEADERS);
        s->ncalls = (int)(nc < np ? nc : np);
        /* another coordinator's slots are elsewhere (most likely) */
        char hex[9];
        if (!synor__ns_random_hex(4, hex))
            s->slot_base = (int64_t)(strtoull(hex, NULL, 16) % 1000000) * 1024;
    }
    e = ops->open(o->url, &s->db);
    if (!e)
        e = synor__ns_migrate(s);
    if (!e && pg)
        e = synor__ns_pg_functions(s);
    if (!e && pg)
        e = synor__ns_pg_claims_fn(s);
    if (!e)
        e = ops->open(o->url, &s->rdb);
    if (e) {
        synor_netstore_close(s);
        return e;
    }
    *out = s;
    return 0;
}

void synor_netstore_close(synor_netstore *s)
{
    if (!s)
        return;
    if (s->db)
        s->ops->close(s->db);
    if (s->rdb)
        s->ops->close(s->rdb);
    synor_rewards_policy_destroy(s->own_policy);
    synor__free(s->jd.v);
    synor__ns_pool_close(s);
    synor__free(s->url);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->pmu);
    pthread_cond_destroy(&s->pcv);
    pthread_mutex_destroy(&s->cmu);
    pthread_cond_destroy(&s->ccv);
    pthread_mutex_destroy(&s->rmu);
    pthread_mutex_destroy(&s->gmu);
    pthread_cond_destroy(&s->gcv);
    synor__free(s);
}

const char *synor_netstore_backend(const synor_netstore *s) { return s->ops->name; }

int synor_netstore_wipe(synor_netstore *s)
{
    pthread_mutex_lock(&s->mu);
    int e = s->ops->script(s->db, "DELETE FROM ledger; DELETE FROM job_counts; DELETE FROM tasks; DELETE FROM shard_inputs;"
                                  " DELETE FROM shards; DELETE FROM jobs; DELETE FROM blob_owners;"
                                  " DELETE FROM blobs; DELETE FROM devices; DELETE FROM tokens;"
                                  " DELETE FROM events;");
    pthread_mutex_unlock(&s->mu);
    return e;
}

/* ---------------------------------------------------------------- tokens */

const char *synor_net_role_name(synor_net_role r)
{
    switch (r) {
    case SYNOR_NET_OPERATOR: return "operator";
    case SYNOR_NET_CONSUMER: return "consumer";
    case SYNOR_NET_PROVIDER: return "provider";
    }
    return "none";
}

synor_net_role synor_net_role_parse(const char *name)
{
    if (!name)
        return 0;
    if (!strcmp(name, "operator"))
        return SYNOR_NET_OPERATOR;
    if (!strcmp(name, "consumer"))
        return SYNOR_NET_CONSUMER;
    if (!strcmp(name, "provider"))
        return SYNOR_NET_PROVIDER;
    return 0;
}

static int check_owner(const char *owner)
{
    size_t n = owner ? strlen(owner) : 0;
    if (n < 1 || n > 63)
        return synor__error(SYNOR_EINVAL, "field 'owner': value '%s': 1 to 63 characters",
                            owner ? owner : "");
    for (size_t i = 0; i < n; i++) {
        char c = owner[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '@' || c == '-'))
            return synor__error(SYNOR_EINVAL,
                                "field 'owner': value '%s': only letters, digits and . _ @ -",
                                owner);
    }
    return 0;
}

int synor_netstore_token_create(synor_netstore *s, synor_net_role role, const char *owner,
                                char token[SYNOR_NET_TOKEN_LEN + 1], int64_t *id)
{
    if (!synor_net_role_parse(synor_net_role_name(role)))
        return synor__error(SYNOR_EINVAL, "field 'role': value '%d': operator, consumer or provider",
                            (int)role);
    int e = check_owner(owner);
    if (e)
        return e;
    char t[SYNOR_NET_TOKEN_LEN + 1] = "syn_", hash[65];
    if ((e = synor__ns_random_hex(32, t + 4)))
        return e;
    synor__ns_sha256_hex(t, strlen(t), hash);
    static const char sql[] = "INSERT INTO tokens (hash, role, owner, created_at) "
                              "VALUES ($1, $2, $3, $4) RETURNING id";
    nsparam p[] = {NS_T(hash), NS_I(role), NS_T(owner), NS_I(time(NULL))};
    nsres r;
    pthread_mutex_lock(&s->mu);
    e = synor__ns_exec(s, sql, p, 4, &r, NULL);
    pthread_mutex_unlock(&s->mu);
    if (e)
        return e;
    if (id)
        *id = synor__nsres_int(&r, 0, 0);
    synor__nsres_free(&r);
    memcpy(token, t, sizeof t);
    return 0;
}

int synor_netstore_token_auth(synor_netstore *s, const char *token, synor_net_principal *out)
{
    if (!token || strlen(token) != SYNOR_NET_TOKEN_LEN || strncmp(token, "syn_", 4))
        return synor__error(SYNOR_ENOENT, "unknown token");
    char hash[65];
    synor__ns_sha256_hex(token, SYNOR_NET_TOKEN_LEN, hash);
    static const char sql[] = "SELECT id, role, owner FROM tokens WHERE hash = $1 AND revoked = 0";
    nsparam p[] = {NS_T(hash)};
    nsres r;
    pthread_mutex_lock(&s->rmu);
    int e = s->ops->exec(s->rdb, sql, p, 1, &r, NULL);
    pthread_mutex_unlock(&s->rmu);
    if (e)
        return e;
    if (!r.rows) {
        synor__nsres_free(&r);
        return synor__error(SYNOR_ENOENT, "unknown or revoked token");
    }
    out->token_id = synor__nsres_int(&r, 0, 0);
    out->role = (synor_net_role)synor__nsres_int(&r, 0, 1);
    synor__strlcpy(out->owner, synor__nsres_text(&r, 0, 2), sizeof out->owner);
    synor__nsres_free(&r);
    return 0;
}

int synor_netstore_token_revoke(synor_netstore *s, int64_t id)
{
    static const char sql[] = "UPDATE tokens SET revoked = 1 WHERE id = $1";
    nsparam p[] = {NS_I(id)};
    int64_t n = 0;
    char subj[32];
    snprintf(subj, sizeof subj, "token-%lld", (long long)id);
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_begin(s, 1);
    if (!e)
        e = synor__ns_exec(s, sql, p, 1, NULL, &n);
    if (!e && !n)
        e = synor__error(SYNOR_ENOENT, "no token %lld", (long long)id);
    if (!e)
        e = synor__ns_event(s, "token-revoked", subj, "");
    if (!e)
        e = synor__ns_commit(s);
    if (e)
        synor__ns_rollback(s);
    pthread_mutex_unlock(&s->mu);
    return e;
}

int synor_netstore_has_operator(synor_netstore *s, int *out)
{
    static const char sql[] = "SELECT count(*) FROM tokens WHERE role = 1 AND revoked = 0";
    nsres r;
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_exec(s, sql, NULL, 0, &r, NULL);
    pthread_mutex_unlock(&s->mu);
    if (e)
        return e;
    *out = synor__nsres_int(&r, 0, 0) > 0;
    synor__nsres_free(&r);
    return 0;
}

int synor_netstore_tokens_json(synor_netstore *s, char **json)
{
    static const char sql[] = "SELECT id, role, owner, revoked FROM tokens ORDER BY id";
    nsres r;
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_exec(s, sql, NULL, 0, &r, NULL);
    pthread_mutex_unlock(&s->mu);
    if (e)
        return e;
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "tokens");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < r.rows; i++) {
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "id");
        synor__jw_int(&w, synor__nsres_int(&r, i, 0));
        synor__jw_key(&w, "role");
        synor__jw_str(&w, synor_net_role_name((synor_net_role)synor__nsres_int(&r, i, 1)));
        synor__jw_key(&w, "owner");
        synor__jw_str(&w, synor__nsres_text(&r, i, 2));
        synor__jw_key(&w, "revoked");
        synor__jw_bool(&w, synor__nsres_int(&r, i, 3) != 0);
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    synor__nsres_free(&r);
    *json = synor__buf_take(&b);
    return *json ? 0 : synor__error(SYNOR_ENOMEM, "netstore: out of memory");
}

/* --------------------------------------------------------------- devices */

int synor_netstore_device_register(synor_netstore *s, const char *owner,
                                   const synor_net_device *d, int64_t *id)
{
    if (!d || !d->name || !*d->name || strlen(d->name) > 128)
        return synor__error(SYNOR_EINVAL, "field 'name': a device name of 1 to 128 characters");
    if (!d->kind || !*d->kind || strlen(d->kind) > 32)
        return synor__error(SYNOR_EINVAL, "field 'kind': 1 to 32 characters");
    static const char sql[] =
        "INSERT INTO devices (owner, name, kind, profile, gflops, mem_bytes, availability, price,"
        " last_seen_ms, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        " ON CONFLICT (owner, name) DO UPDATE SET kind = excluded.kind, profile = excluded.profile,"
        " gflops = excluded.gflops, mem_bytes = excluded.mem_bytes,"
        " availability = excluded.availability, price = excluded.price,"
        " last_seen_ms = excluded.last_seen_ms RETURNING id";
    char gf[32];
    snprintf(gf, sizeof gf, "%.6f", d->gflops);
    nsparam p[] = {NS_T(owner),         NS_T(d->name),
                   NS_T(d->kind),       NS_T(d->profile),
                   NS_T(gf),            NS_I(d->mem_bytes),
                   NS_T(d->availability ? d->availability : "always"),
                   NS_I(d->price),      NS_I(synor__ns_now_ms()),
                   NS_I(time(NULL))};
    nsres r;
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_exec(s, sql, p, 10, &r, NULL);
    pthread_mutex_unlock(&s->mu);
    if (e)
        return e;
    *id = synor__nsres_int(&r, 0, 0);
    synor__nsres_free(&r);
    return 0;
}

int synor_netstore_device_reputation(synor_netstore *s, int64_t id, int *out)
{
    static const char sql[] = "SELECT reputation FROM devices WHERE id = $1";
    nsparam p[] = {NS_I(id)};
    nsres r;
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_exec(s, sql, p, 1, &r, NULL);
    pthread_mutex_unlock(&s->mu);
    if (e)
        return e;
    if (!r.rows)
        e = synor__error(SYNOR_ENOENT, "no device %lld", (long long)id);
    else
        *out = (int)synor__nsres_int(&r, 0, 0);
    synor__nsres_free(&r);
    return e;
}

int synor_netstore_devices_json(synor_netstore *s, const char *owner, char **json)
{
    static const char all[] =
        "SELECT id, owner, name, kind, profile, gflops, mem_bytes, availability, price,"
        " reputation, last_seen_ms, accepting FROM devices ORDER BY id";
    static const char mine[] =
        "SELECT id, owner, name, kind, profile, gflops, mem_bytes, availability, price,"
        " reputation, last_seen_ms, accepting FROM devices WHERE owner = $1 ORDER BY id";
    nsparam p[] = {NS_T(owner)};
    nsres r;
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_exec(s, owner ? mine : all, p, owner ? 1 : 0, &r, NULL);
    pthread_mutex_unlock(&s->mu);
    if (e)
        return e;
    int64_t now = synor__ns_now_ms(), tmo = (int64_t)(s->o.lease_timeout_s * 1000);
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "devices");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < r.rows; i++) {
        char id[32], price[48];
        snprintf(id, sizeof id, "dev-%lld", (long long)synor__nsres_int(&r, i, 0));
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "id");
        synor__jw_str(&w, id);
        static const char *const keys[] = {NULL, "owner", "name", "kind", "profile"};
        for (int k = 1; k <= 4; k++) {
            synor__jw_key(&w, keys[k]);
            if (synor__nsres_null(&r, i, (size_t)k))
                synor__jw_null(&w);
            else
                synor__jw_str(&w, synor__nsres_text(&r, i, (size_t)k));
        }
        synor__jw_key(&w, "gflops");
        synor__jw_num(&w, strtod(synor__nsres_text(&r, i, 5), NULL));
        synor__jw_key(&w, "mem_bytes");
        synor__jw_int(&w, synor__nsres_int(&r, i, 6));
        synor__jw_key(&w, "availability");
        synor__jw_str(&w, synor__nsres_text(&r, i, 7));
        synor__jw_key(&w, "price");
        synor__jw_str(&w, synor_rewards_format_fixed(synor__nsres_int(&r, i, 8), 6, price,
                                                     sizeof price));
        synor__jw_key(&w, "reputation");
        synor__jw_int(&w, synor__nsres_int(&r, i, 9));
        int64_t seen = synor__nsres_int(&r, i, 10);
        synor__jw_key(&w, "online");
        synor__jw_bool(&w, now - seen <= tmo);
        synor__jw_key(&w, "seen_s_ago");
        synor__jw_num(&w, (double)(now - seen) / 1000.0);
        synor__jw_key(&w, "accepting");
        synor__jw_bool(&w, synor__nsres_int(&r, i, 11) != 0);
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    synor__nsres_free(&r);
    *json = synor__buf_take(&b);
    return *json ? 0 : synor__error(SYNOR_ENOMEM, "netstore: out of memory");
}

/* ----------------------------------------------------------------- blobs */

int synor_netstore_blob_put(synor_netstore *s, const char *owner, const void *data, size_t n,
                            char sha[65])
{
    synor__ns_sha256_hex(data, n, sha);
    static const char put[] = "INSERT INTO blobs (sha, bytes, data) VALUES ($1, $2, $3) "
                              "ON CONFLICT (sha) DO NOTHING";
    static const char own[] = "INSERT INTO blob_owners (sha, owner) VALUES ($1, $2) "
                              "ON CONFLICT (sha, owner) DO NOTHING";
    nsparam p[] = {NS_T(sha), NS_I(n), NS_B(data, n)};
    nsparam q[] = {NS_T(sha), NS_T(owner)};
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_begin(s, 1);
    if (!e)
        e = synor__ns_exec(s, put, p, 3, NULL, NULL);
    if (!e)
        e = synor__ns_exec(s, own, q, 2, NULL, NULL);
    if (!e)
        e = synor__ns_commit(s);
    if (e)
        synor__ns_rollback(s);
    pthread_mutex_unlock(&s->mu);
    return e;
}

int synor_netstore_blob_get(synor_netstore *s, const synor_net_principal *who, const char *sha,
                            void **data, size_t *n)
{
    static const char any[] = "SELECT data FROM blobs WHERE sha = $1";
    static const char consumer[] =
        "SELECT data FROM blobs WHERE sha = $1 AND EXISTS (SELECT 1 FROM blob_owners o"
        " WHERE o.sha = $1 AND o.owner = $2)";
    static const char provider[] =
        "SELECT data FROM blobs WHERE sha = $1 AND (EXISTS (SELECT 1 FROM tasks t"
        " JOIN shard_inputs i ON i.shard_id = t.shard_id WHERE i.sha = $1 AND t.provider = $2"
        " AND t.state = 'leased') OR EXISTS (SELECT 1 FROM tasks c WHERE c.checkpoint_sha = $1"
        " AND c.provider = $2 AND c.state = 'leased'))";
    const char *sql = who->role == SYNOR_NET_OPERATOR   ? any
                      : who->role == SYNOR_NET_CONSUMER ? consumer
                                                        : provider;
    nsparam p[] = {NS_T(sha), NS_T(who->owner)};
    nsres r;
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_exec(s, sql, p, sql == any ? 1 : 2, &r, NULL);
    pthread_mutex_unlock(&s->mu);
    if (e)
        return e;
    if (!r.rows) {
        synor__nsres_free(&r);
        return synor__error(SYNOR_ENOENT, "no blob %s", sha);
    }
    /* hand the cell's bytes over */
    *data = r.cells[0].p;
    *n = r.cells[0].len;
    r.cells[0].p = NULL;
    synor__nsres_free(&r);
    return 0;
}
