/* metrics.c - the coordinator's Prometheus text (/metrics): devices online,
 * tasks by state and jobs from the store, validation failures (tasks whose
 * result disagreed with the accepted one, a count kept in the store so it
 * survives restarts), the dispatch latency histogram (the claim's
 * transaction, without the long-poll's waiting) and HTTP responses by code.
 * Also the timeline samples the dashboard draws. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "coord/coord_internal.h"

const double synor__coord_hist_le[COORD_HIST_N] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                   0.01,   0.025,   0.05,   0.1,   0.25,   1};
const int synor__coord_codes[COORD_NCODES] = {200, 201, 204, 400, 401, 403,
                                              404, 405, 409, 413, 500, 503};

void synor__coord_count_code(synor_coord *c, int status)
{
    size_t i = 0;
    while (i < COORD_NCODES && synor__coord_codes[i] != status)
        i++;
    c->codes[i]++;
}

void synor__coord_observe_dispatch(synor_coord *c, uint64_t ns)
{
    double s = (double)ns / 1e9;
    size_t i = 0;
    while (i < COORD_HIST_N && s > synor__coord_hist_le[i])
        i++;
    c->hist[i]++;
    c->hist_sum_ns += ns;
    c->hist_count++;
}

void synor__coord_sample(synor_coord *c)
{
    synor_netstore_stats st;
    if (synor_netstore_stats_get(c->store, &st))
        return;
    pthread_mutex_lock(&c->mu);
    coord_sample *s = &c->timeline[c->tl_next];
    *s = (coord_sample){.at = time(NULL), .devices_online = st.devices_online,
                        .leased = st.tasks_leased, .queued = st.tasks_queued};
    c->tl_next = (c->tl_next + 1) % COORD_TIMELINE;
    if (c->tl_count < COORD_TIMELINE)
        c->tl_count++;
    pthread_mutex_unlock(&c->mu);
}

char *synor__coord_metrics(synor_coord *c)
{
    synor_netstore_stats st = {0};
    int have = !synor_netstore_stats_get(c->store, &st);
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "# HELP synor_coord_up Whether the store answered this scrape.\n"
                        "# TYPE synor_coord_up gauge\n");
    synor__buf_printf(&b, "synor_coord_up %d\n", have);
    synor__buf_printf(&b,
                      "# HELP synor_coord_devices Devices registered.\n"
                      "# TYPE synor_coord_devices gauge\nsynor_coord_devices %lld\n"
                      "# HELP synor_coord_devices_online Devices seen within the lease timeout.\n"
                      "# TYPE synor_coord_devices_online gauge\nsynor_coord_devices_online %lld\n",
                      (long long)st.devices, (long long)st.devices_online);
    synor__buf_puts(&b, "# HELP synor_coord_tasks Tasks by state.\n# TYPE synor_coord_tasks gauge\n");
    const struct {
        const char *name;
        int64_t v;
    } states[] = {{"queued", st.tasks_queued}, {"leased", st.tasks_leased},
                  {"done", st.tasks_done},     {"valid", st.tasks_valid},
                  {"invalid", st.tasks_invalid}, {"failed", st.tasks_failed},
                  {"cancelled", st.tasks_cancelled}, {"waiting", st.tasks_waiting}};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(states); i++)
        synor__buf_printf(&b, "synor_coord_tasks{state=\"%s\"} %lld\n", states[i].name,
                          (long long)states[i].v);
    synor__buf_printf(&b,
                      "# HELP synor_coord_validation_failures_total Results that disagreed with "
                      "the accepted one.\n# TYPE synor_coord_validation_failures_total counter\n"
                      "synor_coord_validation_failures_total %lld\n",
                      (long long)st.tasks_invalid);
    synor__buf_printf(&b,
                      "# HELP synor_coord_jobs Jobs by state.\n# TYPE synor_coord_jobs gauge\n"
                      "synor_coord_jobs{state=\"active\"} %lld\nsynor_coord_jobs{state=\"done\"} %lld\n",
                      (long long)st.jobs_active, (long long)st.jobs_done);
    synor__buf_printf(&b,
                      "# HELP synor_coord_ledger_entries_total Validated tasks paid.\n"
                      "# TYPE synor_coord_ledger_entries_total counter\n"
                      "synor_coord_ledger_entries_total %lld\n"
                      "# HELP synor_coord_ledger_credits_total Credits paid to providers.\n"
                      "# TYPE synor_coord_ledger_credits_total counter\n"
                      "synor_coord_ledger_credits_total %lld.%06lld\n",
                      (long long)st.ledger_entries, (long long)(st.ledger_total / 1000000),
                      (long long)(st.ledger_total % 1000000));
    synor__buf_puts(&b, "# HELP synor_coord_dispatch_seconds Time to lease a task to a device "
                        "(the claim, without waiting).\n"
                        "# TYPE synor_coord_dispatch_seconds histogram\n");
    uint64_t cum = 0;
    for (size_t i = 0; i < COORD_HIST_N; i++) {
        cum += c->hist[i];
        synor__buf_printf(&b, "synor_coord_dispatch_seconds_bucket{le=\"%g\"} %llu\n",
                          synor__coord_hist_le[i], (unsigned long long)cum);
    }
    cum += c->hist[COORD_HIST_N];
    synor__buf_printf(&b, "synor_coord_dispatch_seconds_bucket{le=\"+Inf\"} %llu\n",
                      (unsigned long long)cum);
    synor__buf_printf(&b, "synor_coord_dispatch_seconds_sum %.9f\n",
                      (double)c->hist_sum_ns / 1e9);
    synor__buf_printf(&b, "synor_coord_dispatch_seconds_count %llu\n",
                      (unsigned long long)c->hist_count);
    synor__buf_puts(&b, "# HELP synor_coord_http_responses_total HTTP responses by status.\n"
                        "# TYPE synor_coord_http_responses_total counter\n");
    for (size_t i = 0; i <= COORD_NCODES; i++) {
        uint64_t v = c->codes[i];
        if (i == COORD_NCODES)
            synor__buf_printf(&b, "synor_coord_http_responses_total{code=\"other\"} %llu\n",
                              (unsigned long long)v);
        else
            synor__buf_printf(&b, "synor_coord_http_responses_total{code=\"%d\"} %llu\n",
                              synor__coord_codes[i], (unsigned long long)v);
    }
    return synor__buf_take(&b);
}
