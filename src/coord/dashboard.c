/* dashboard.c - the operator's page (/dashboard): devices, jobs, the spot
 * market's prices (with --market) and a utilization timeline, rendered on
 * the server as plain HTML with inline SVG (no script, no external assets;
 * the page refreshes itself every 5 s). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord/coord_internal.h"
#include "json/json.h"

static void esc(synor__buf *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': synor__buf_puts(b, "&lt;"); break;
        case '>': synor__buf_puts(b, "&gt;"); break;
        case '&': synor__buf_puts(b, "&amp;"); break;
        case '"': synor__buf_puts(b, "&quot;"); break;
        default: synor__buf_append(b, s, 1);
        }
    }
}

static void cell_value(synor__buf *b, const synor__jval *v)
{
    char num[40];
    if (!v || v->type == SYNOR__J_NULL)
        synor__buf_puts(b, "&ndash;");
    else if (v->type == SYNOR__J_STRING)
        esc(b, v->u.str.s);
    else if (v->type == SYNOR__J_BOOL)
        synor__buf_puts(b, v->u.boolean ? "yes" : "no");
    else if (v->type == SYNOR__J_NUMBER) {
        snprintf(num, sizeof num, "%.6g", v->u.n.num);
        synor__buf_puts(b, num);
    }
}

/* A table of the array `key` of the JSON document text, with columns. */
static void table(synor__buf *b, const char *title, const char *id, const char *text,
                  const char *key, const char *const *cols)
{
    synor__buf_printf(b, "<h2>%s</h2>\n<table id=\"%s\"><tr>", title, id);
    for (size_t i = 0; cols[i]; i++)
        synor__buf_printf(b, "<th>%s</th>", cols[i]);
    synor__buf_puts(b, "</tr>\n");
    synor__jdoc *d = NULL;
    if (text && !synor__json_parse(text, strlen(text), key, &d)) {
        const synor__jval *arr = synor__json_get(synor__jdoc_root(d), key);
        for (size_t r = 0; arr && arr->type == SYNOR__J_ARRAY && r < arr->u.arr.n && r < 500; r++) {
            synor__buf_puts(b, "<tr>");
            for (size_t i = 0; cols[i]; i++) {
                synor__buf_puts(b, "<td>");
                cell_value(b, synor__json_get(arr->u.arr.items[r], cols[i]));
                synor__buf_puts(b, "</td>");
            }
            synor__buf_puts(b, "</tr>\n");
        }
    }
    synor__jdoc_free(d);
    synor__buf_puts(b, "</table>\n");
}

static void timeline(synor_coord *c, synor__buf *b)
{
    coord_sample s[COORD_TIMELINE];
    size_t n;
    pthread_mutex_lock(&c->mu);
    n = c->tl_count;
    for (size_t i = 0; i < n; i++)
        s[i] = c->timeline[(c->tl_next + COORD_TIMELINE - n + i) % COORD_TIMELINE];
    pthread_mutex_unlock(&c->mu);
    int64_t top = 1;
    for (size_t i = 0; i < n; i++) {
        if (s[i].leased > top)
            top = s[i].leased;
        if (s[i].devices_online > top)
            top = s[i].devices_online;
    }
    const int W = 720, H = 160;
    synor__buf_printf(b,
                      "<h2>Utilization</h2>\n<svg id=\"timeline\" width=\"%d\" height=\"%d\" "
                      "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"tasks leased and devices "
                      "online over time\"><rect width=\"%d\" height=\"%d\" fill=\"#f6f6f6\"/>",
                      W, H + 20, W, H + 20, W, H);
    const char *colour[2] = {"#1f6feb", "#2da44e"};
    for (int line = 0; line < 2; line++) {
        synor__buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                          colour[line]);
        for (size_t i = 0; i < n; i++) {
            double x = n > 1 ? (double)i * (W - 1) / (double)(n - 1) : 0;
            int64_t v = line ? s[i].devices_online : s[i].leased;
            double y = H - (double)v * (H - 4) / (double)top;
            synor__buf_printf(b, "%.1f,%.1f ", x, y);
        }
        synor__buf_puts(b, "\"/>");
    }
    synor__buf_printf(b,
                      "<text x=\"4\" y=\"%d\" font-size=\"12\" fill=\"#1f6feb\">tasks leased</text>"
                      "<text x=\"110\" y=\"%d\" font-size=\"12\" fill=\"#2da44e\">devices online</text>"
                      "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">max %lld, "
                      "%zu samples</text></svg>\n",
                      H + 16, H + 16, W - 4, H + 16, (long long)top, n);
}

char *synor__coord_dashboard(synor_coord *c, const char *token)
{
    (void)token;
    synor__buf b;
    synor__buf_init(&b);
    synor_netstore_stats st = {0};
    synor_netstore_stats_get(c->store, &st);
    synor__buf_puts(&b,
                    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta http-equiv=\"refresh\" content=\"5\">"
                    "<title>synor coordinator</title><style>body{font:14px system-ui,sans-serif;"
                    "margin:1.5em}table{border-collapse:collapse;margin-bottom:1em}td,th{border:"
                    "1px solid #ccc;padding:2px 8px;text-align:left}th{background:#eee}</style>"
                    "</head><body>\n<h1>synor coordinator</h1>\n");
    char paid[48];
    synor__buf_printf(&b,
                      "<p id=\"summary\">store: %s &middot; devices online: %lld of %lld &middot; "
                      "tasks queued %lld, leased %lld, validated %lld, invalid %lld &middot; "
                      "jobs active %lld, done %lld &middot; paid %s credits in %lld entries</p>\n",
                      synor_netstore_backend(c->store), (long long)st.devices_online,
                      (long long)st.devices, (long long)st.tasks_queued,
                      (long long)st.tasks_leased, (long long)st.tasks_valid,
                      (long long)st.tasks_invalid, (long long)st.jobs_active,
                      (long long)st.jobs_done,
                      synor_rewards_format_fixed(st.ledger_total, 6, paid, sizeof paid),
                      (long long)st.ledger_entries);
    timeline(c, &b);
    char *t = NULL;
    static const char *const dcols[] = {"id",    "owner",      "name",      "kind",
                                        "gflops", "reputation", "online",   "accepting",
                                        "availability", "price", NULL};
    if (!synor_netstore_devices_json(c->store, NULL, &t))
        table(&b, "Devices", "devices", t, "devices", dcols);
    synor__free(t);
    t = NULL;
    static const char *const jcols[] = {"id",       "owner", "name",   "kernel", "state",
                                        "replicas", "cost",  "budget", NULL};
    if (!synor_netstore_jobs_json(c->store, NULL, &t))
        table(&b, "Jobs", "jobs", t, "jobs", jcols);
    synor__free(t);
    if (c->market) {
        coord_req r = {.c = c};
        coord_resp x = synor__coord_market_book(&r);
        static const char *const mcols[] = {"resource", "best_bid", "best_ask", "last",
                                            "vwap_24h", "volume_24h", NULL};
        if (x.status == 200)
            table(&b, "Market prices (credits/hour)", "market", x.body, "books", mcols);
        synor__free(x.body);
    } else {
        synor__buf_puts(&b, "<h2>Market</h2><p id=\"market\">no market (start with --market DIR)</p>\n");
    }
    synor__buf_puts(&b, "</body></html>\n");
    return synor__buf_take(&b);
}
