/* explain.c - a routing decision as text (with --explain: every component
 * of every score, the runners-up, the counts filtered out per reason) and
 * as JSON (format synor-route/1). Money is printed from integer micro-USD
 * digit by digit. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "router/router_internal.h"
#include "json/json.h"

/* "12.345678" from micro-USD (non-negative). */
static void usd(int64_t micro, char *buf, size_t n)
{
    snprintf(buf, n, "%" PRId64 ".%06" PRId64, micro / 1000000, micro % 1000000);
}

static void choice_line(synor__buf *b, const synor_route_choice *c, int rank)
{
    char price[40], cost[40], lat[32];
    if (c->priced) {
        usd(c->usd_micro_per_hour, price, sizeof price);
        usd(c->task_usd_micro, cost, sizeof cost);
    } else {
        snprintf(price, sizeof price, "no price");
        snprintf(cost, sizeof cost, "-");
    }
    if (c->latency_known)
        snprintf(lat, sizeof lat, "%.1f", c->latency_ms);
    else
        snprintf(lat, sizeof lat, "unknown");
    synor__buf_printf(b,
                      "%3d  %-22s %-24.24s %-12.12s %-10.10s %12s %12s %9s "
                      "%10.3g %4d %4.0f%% %.4f\n",
                      rank, c->id, c->profile[0] ? c->profile : "-", c->owner, c->region, price,
                      cost, lat, c->time_s, c->reputation, c->utilization * 100, c->total);
}

static void header(synor__buf *b)
{
    synor__buf_printf(b, "%3s  %-22s %-24s %-12s %-10s %12s %12s %9s %10s %4s %5s %s\n", "#", "ID",
                      "PROFILE", "OWNER", "REGION", "USD/HOUR", "TASK USD", "RTT MS", "TIME S",
                      "REP", "UTIL", "SCORE");
}

static void components(synor__buf *b, const synor_route_decision *d, const synor_route_choice *c)
{
    char cost[40];
    if (c->priced)
        usd(c->task_usd_micro, cost, sizeof cost);
    const char *raw[SYNOR_ROUTE_COMPONENTS];
    char rawbuf[SYNOR_ROUTE_COMPONENTS][96];
    if (c->priced)
        snprintf(rawbuf[0], sizeof rawbuf[0], "task USD %s (%s)", cost, c->price_source);
    else
        snprintf(rawbuf[0], sizeof rawbuf[0], "no price: scores 0");
    if (c->latency_known)
        snprintf(rawbuf[1], sizeof rawbuf[1], "estimated RTT %.2f ms", c->latency_ms);
    else
        snprintf(rawbuf[1], sizeof rawbuf[1], "latency unknown: scores 0");
    snprintf(rawbuf[2], sizeof rawbuf[2], "estimated time %.6g s", c->time_s);
    snprintf(rawbuf[3], sizeof rawbuf[3], "reputation %d/100", c->reputation);
    snprintf(rawbuf[4], sizeof rawbuf[4], "utilization %.3f", c->utilization);
    for (int i = 0; i < SYNOR_ROUTE_COMPONENTS; i++)
        raw[i] = rawbuf[i];
    for (int i = 0; i < SYNOR_ROUTE_COMPONENTS; i++)
        synor__buf_printf(b, "       %-10s %.4f x %.4f = %.4f   %s\n",
                          synor_route_component_name((synor_route_component)i), c->score[i],
                          d->weights.w[i], c->score[i] * d->weights.w[i], raw[i]);
    synor__buf_printf(b, "       total %.6f\n", c->total);
}

char *synor_route_decision_format(const synor_route_decision *d, int explain)
{
    if (!d)
        return NULL;
    synor__buf b;
    synor__buf_init(&b);
    if (d->n_chosen)
        header(&b);
    for (size_t i = 0; i < d->n_chosen; i++) {
        choice_line(&b, &d->chosen[i], (int)i + 1);
        if (explain)
            components(&b, d, &d->chosen[i]);
    }
    if (d->n_chosen < d->wanted)
        synor__buf_printf(&b, "Only %zu of the %u devices wanted passed every filter.\n",
                          d->n_chosen, d->wanted);
    if (explain) {
        if (d->n_runners_up) {
            synor__buf_printf(&b, "\nRunners-up:\n");
            header(&b);
            for (size_t i = 0; i < d->n_runners_up; i++) {
                choice_line(&b, &d->runners_up[i], (int)(d->n_chosen + i + 1));
                components(&b, d, &d->runners_up[i]);
            }
        }
        synor__buf_printf(&b,
                          "\n%zu devices considered, %zu candidates; filtered out:", d->considered,
                          d->candidates);
        for (int r = 0; r < SYNOR_ROUTE_OUT_COUNT; r++)
            synor__buf_printf(&b, " %s %zu%s", synor_route_reason_name((synor_route_reason)r),
                              d->filtered[r], r + 1 < SYNOR_ROUTE_OUT_COUNT ? "," : "\n");
        char lo[40], hi[40];
        usd(d->cost_min, lo, sizeof lo);
        usd(d->cost_max, hi, sizeof hi);
        synor__buf_printf(&b,
                          "Normalised over the candidates: task USD %s..%s, RTT %.2f..%.2f ms "
                          "(estimated), time %.6g..%.6g s; %zu devices scored; snapshot %" PRIu64
                          ".\n",
                          lo, hi, d->latency_min, d->latency_max, d->time_min, d->time_max,
                          d->scored, d->generation);
    }
    return synor__buf_take(&b);
}

static void json_choice(synor__jw *w, const synor_route_choice *c)
{
    synor__jw_obj_begin(w);
    synor__jw_key(w, "id");
    synor__jw_str(w, c->id);
    synor__jw_key(w, "profile");
    if (c->profile[0])
        synor__jw_str(w, c->profile);
    else
        synor__jw_null(w);
    synor__jw_key(w, "owner");
    synor__jw_str(w, c->owner);
    synor__jw_key(w, "region");
    synor__jw_str(w, c->region);
    synor__jw_key(w, "usd_micro_per_hour");
    if (c->priced)
        synor__jw_int(w, c->usd_micro_per_hour);
    else
        synor__jw_null(w);
    synor__jw_key(w, "task_usd_micro");
    if (c->priced)
        synor__jw_int(w, c->task_usd_micro);
    else
        synor__jw_null(w);
    synor__jw_key(w, "price_source");
    synor__jw_str(w, c->price_source);
    synor__jw_key(w, "latency_ms_estimated");
    if (c->latency_known)
        synor__jw_num(w, c->latency_ms);
    else
        synor__jw_null(w);
    synor__jw_key(w, "time_s");
    synor__jw_num(w, c->time_s);
    synor__jw_key(w, "reputation");
    synor__jw_int(w, c->reputation);
    synor__jw_key(w, "utilization");
    synor__jw_num(w, c->utilization);
    synor__jw_key(w, "scores");
    synor__jw_obj_begin(w);
    for (int i = 0; i < SYNOR_ROUTE_COMPONENTS; i++) {
        synor__jw_key(w, synor_route_component_name((synor_route_component)i));
        synor__jw_num(w, c->score[i]);
    }
    synor__jw_obj_end(w);
    synor__jw_key(w, "total");
    synor__jw_num(w, c->total);
    synor__jw_obj_end(w);
}

char *synor_route_decision_json(const synor_route_decision *d)
{
    if (!d)
        return NULL;
    synor__buf b;
    synor__jw w;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, 1);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "format");
    synor__jw_str(&w, "synor-route/1");
    synor__jw_key(&w, "wanted");
    synor__jw_uint(&w, d->wanted);
    synor__jw_key(&w, "chosen");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < d->n_chosen; i++)
        json_choice(&w, &d->chosen[i]);
    synor__jw_arr_end(&w);
    synor__jw_key(&w, "runners_up");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < d->n_runners_up; i++)
        json_choice(&w, &d->runners_up[i]);
    synor__jw_arr_end(&w);
    synor__jw_key(&w, "weights");
    synor__jw_obj_begin(&w);
    for (int i = 0; i < SYNOR_ROUTE_COMPONENTS; i++) {
        synor__jw_key(&w, synor_route_component_name((synor_route_component)i));
        synor__jw_num(&w, d->weights.w[i]);
    }
    synor__jw_obj_end(&w);
    synor__jw_key(&w, "considered");
    synor__jw_uint(&w, d->considered);
    synor__jw_key(&w, "candidates");
    synor__jw_uint(&w, d->candidates);
    synor__jw_key(&w, "filtered");
    synor__jw_obj_begin(&w);
    for (int r = 0; r < SYNOR_ROUTE_OUT_COUNT; r++) {
        synor__jw_key(&w, synor_route_reason_name((synor_route_reason)r));
        synor__jw_uint(&w, d->filtered[r]);
    }
    synor__jw_obj_end(&w);
    synor__jw_key(&w, "normalised_over");
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "task_usd_micro");
    synor__jw_arr_begin(&w);
    synor__jw_int(&w, d->cost_min);
    synor__jw_int(&w, d->cost_max);
    synor__jw_arr_end(&w);
    synor__jw_key(&w, "latency_ms");
    synor__jw_arr_begin(&w);
    synor__jw_num(&w, d->latency_min);
    synor__jw_num(&w, d->latency_max);
    synor__jw_arr_end(&w);
    synor__jw_key(&w, "time_s");
    synor__jw_arr_begin(&w);
    synor__jw_num(&w, d->time_min);
    synor__jw_num(&w, d->time_max);
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    synor__jw_key(&w, "scored");
    synor__jw_uint(&w, d->scored);
    synor__jw_key(&w, "snapshot");
    synor__jw_uint(&w, d->generation);
    synor__jw_obj_end(&w);
    return synor__buf_take(&b);
}
