/* money.c - reading the ledger (a provider's earnings, the whole ledger),
 * the figures /metrics shows, and the event log. */
#include <stdio.h>
#include <string.h>

#include "json/json.h"
#include "netstore/db.h"

static void entry(synor__jw *w, const nsres *r, size_t i)
{
    /* columns: task_id, job_id, device_id, amount, provider, created_at */
    char id[32], money[48];
    synor__jw_obj_begin(w);
    snprintf(id, sizeof id, "t-%lld", (long long)synor__nsres_int(r, i, 0));
    synor__jw_key(w, "task");
    synor__jw_str(w, id);
    snprintf(id, sizeof id, "j-%lld", (long long)synor__nsres_int(r, i, 1));
    synor__jw_key(w, "job");
    synor__jw_str(w, id);
    snprintf(id, sizeof id, "dev-%lld", (long long)synor__nsres_int(r, i, 2));
    synor__jw_key(w, "device");
    synor__jw_str(w, id);
    synor__jw_key(w, "amount");
    synor__jw_str(w, synor_rewards_format_fixed(synor__nsres_int(r, i, 3), 6, money, sizeof money));
    synor__jw_key(w, "provider");
    synor__jw_str(w, synor__nsres_text(r, i, 4));
    synor__jw_key(w, "at");
    synor__jw_int(w, synor__nsres_int(r, i, 5));
    synor__jw_obj_end(w);
}

static int ledger_json(synor_netstore *s, const char *owner, char **json)
{
    static const char all[] = "SELECT task_id, job_id, device_id, amount, provider, created_at"
                              " FROM ledger ORDER BY id";
    static const char mine[] = "SELECT task_id, job_id, device_id, amount, provider, created_at"
                               " FROM ledger WHERE provider = $1 ORDER BY id";
    nsparam p[] = {NS_T(owner)};
    nsres r;
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_exec(s, owner ? mine : all, p, owner ? 1 : 0, &r, NULL);
    pthread_mutex_unlock(&s->mu);
    if (e)
        return e;
    int64_t total = 0;
    for (size_t i = 0; i < r.rows; i++)
        total += synor__nsres_int(&r, i, 3);
    char money[48];
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_obj_begin(&w);
    if (owner) {
        synor__jw_key(&w, "owner");
        synor__jw_str(&w, owner);
    }
    synor__jw_key(&w, owner ? "balance" : "total");
    synor__jw_str(&w, synor_rewards_format_fixed(total, 6, money, sizeof money));
    synor__jw_key(&w, "entries");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < r.rows; i++)
        entry(&w, &r, i);
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    synor__nsres_free(&r);
    *json = synor__buf_take(&b);
    return *json ? 0 : synor__error(SYNOR_ENOMEM, "netstore: out of memory");
}

int synor_netstore_earnings_json(synor_netstore *s, const char *owner, char **json)
{
    return ledger_json(s, owner, json);
}

int synor_netstore_ledger_json(synor_netstore *s, char **json) { return ledger_json(s, NULL, json); }

int synor_netstore_stats_get(synor_netstore *s, synor_netstore_stats *out)
{
    static const char dev[] = "SELECT count(*), COALESCE(SUM(CASE WHEN last_seen_ms >= $1 THEN 1"
                              " ELSE 0 END), 0) FROM devices";
    static const char tasks[] = "SELECT state, count(*) FROM tasks GROUP BY state";
    static const char jobs[] = "SELECT state, count(*) FROM jobs GROUP BY state";
    static const char led[] = "SELECT count(*), COALESCE(SUM(amount), 0) FROM ledger";
    nsparam p[] = {NS_I(synor__ns_now_ms() - (int64_t)(s->o.lease_timeout_s * 1000))};
    nsres d = {0}, t = {0}, j = {0}, l = {0};
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_begin(s, 0);
    if (!e)
        e = synor__ns_exec(s, dev, p, 1, &d, NULL);
    if (!e)
        e = synor__ns_exec(s, tasks, NULL, 0, &t, NULL);
    if (!e)
        e = synor__ns_exec(s, jobs, NULL, 0, &j, NULL);
    if (!e)
        e = synor__ns_exec(s, led, NULL, 0, &l, NULL);
    synor__ns_rollback(s);
    pthread_mutex_unlock(&s->mu);
    if (!e) {
        *out = (synor_netstore_stats){0};
        out->devices = synor__nsres_int(&d, 0, 0);
        out->devices_online = synor__nsres_int(&d, 0, 1);
        for (size_t i = 0; i < t.rows; i++) {
            const char *st = synor__nsres_text(&t, i, 0);
            int64_t n = synor__nsres_int(&t, i, 1);
            int64_t *slot = !strcmp(st, "queued")      ? &out->tasks_queued
                            : !strcmp(st, "leased")    ? &out->tasks_leased
                            : !strcmp(st, "done")      ? &out->tasks_done
                            : !strcmp(st, "valid")     ? &out->tasks_valid
                            : !strcmp(st, "invalid")   ? &out->tasks_invalid
                            : !strcmp(st, "failed")    ? &out->tasks_failed
                            : !strcmp(st, "cancelled") ? &out->tasks_cancelled
                            : !strcmp(st, "waiting")   ? &out->tasks_waiting
                                                       : NULL;
            if (slot)
                *slot = n;
        }
        for (size_t i = 0; i < j.rows; i++) {
            const char *st = synor__nsres_text(&j, i, 0);
            int64_t n = synor__nsres_int(&j, i, 1);
            if (!strcmp(st, "queued") || !strcmp(st, "running"))
                out->jobs_active += n;
            else if (!strcmp(st, "done"))
                out->jobs_done += n;
        }
        out->ledger_entries = synor__nsres_int(&l, 0, 0);
        out->ledger_total = synor__nsres_int(&l, 0, 1);
    }
    synor__nsres_free(&d);
    synor__nsres_free(&t);
    synor__nsres_free(&j);
    synor__nsres_free(&l);
    return e;
}

int synor_netstore_events_json(synor_netstore *s, int n, char **json)
{
    static const char sql[] = "SELECT id, at, kind, subject, detail FROM events ORDER BY id DESC"
                              " LIMIT $1";
    nsparam p[] = {NS_I(n > 0 ? n : 100)};
    nsres r;
    pthread_mutex_lock(&s->mu);
    int e = synor__ns_exec(s, sql, p, 1, &r, NULL);
    pthread_mutex_unlock(&s->mu);
    if (e)
        return e;
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "events");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < r.rows; i++) {
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "id");
        synor__jw_int(&w, synor__nsres_int(&r, i, 0));
        synor__jw_key(&w, "at");
        synor__jw_int(&w, synor__nsres_int(&r, i, 1));
        synor__jw_key(&w, "kind");
        synor__jw_str(&w, synor__nsres_text(&r, i, 2));
        synor__jw_key(&w, "subject");
        synor__jw_str(&w, synor__nsres_text(&r, i, 3));
        synor__jw_key(&w, "detail");
        synor__jw_str(&w, synor__nsres_text(&r, i, 4));
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    synor__nsres_free(&r);
    *json = synor__buf_take(&b);
    return *json ? 0 : synor__error(SYNOR_ENOMEM, "netstore: out of memory");
}
