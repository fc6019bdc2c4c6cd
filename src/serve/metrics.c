/* metrics.c - synor serve's /metrics in Prometheus' text format (version
 * 0.0.4): counters of requests, answers and tokens, the scheduler's queue
 * and KV cache, tokens per second over the last seconds, and histograms of
 * the time to the first token and between output tokens. */
#include <stdio.h>
#include <string.h>

#include "serve/server.h"
#include "synor/llm.h"

const double synor__serve_hist_le[SERVE_HIST_N] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                   0.1,   0.25,   0.5,   1,    2.5,   5};
const int synor__serve_codes[SERVE_NCODES] = {200, 400, 404, 405, 413, 500, 503, 501, 408};

void synor__serve_hist_add(serve_hist *h, uint64_t ns)
{
    double sec = (double)ns * 1e-9;
    size_t i = 0;
    while (i < SERVE_HIST_N && sec > synor__serve_hist_le[i])
        i++;
    atomic_fetch_add(&h->bucket[i], 1);
    atomic_fetch_add(&h->sum_ns, ns);
    atomic_fetch_add(&h->count, 1);
}

void synor__serve_count_code(synor_server *s, int status)
{
    size_t i = 0;
    while (i < SERVE_NCODES && synor__serve_codes[i] != status)
        i++;
    atomic_fetch_add(&s->codes[i], 1);
}

static uint64_t now_sec(void) { return synor__serve_now_ns() / 1000000000u; }

void synor__serve_rate_add(synor_server *s, uint64_t n)
{
    uint64_t t = now_sec();
    size_t i = t % SERVE_RATE_S;
    if (s->rate_sec[i] != t) {
        s->rate_sec[i] = t;
        s->rate_tok[i] = 0;
    }
    s->rate_tok[i] += n;
}

static void head(synor__buf *b, const char *name, const char *type, const char *help)
{
    synor__buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void metric(synor__buf *b, const char *name, const char *type, const char *help, uint64_t v)
{
    head(b, name, type, help);
    synor__buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static void hist(synor__buf *b, const char *name, const char *help, serve_hist *h)
{
    head(b, name, "histogram", help);
    uint64_t cum = 0;
    for (size_t i = 0; i <= SERVE_HIST_N; i++) {
        cum += atomic_load(&h->bucket[i]);
        if (i < SERVE_HIST_N)
            synor__buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, synor__serve_hist_le[i],
                              (unsigned long long)cum);
        else
            synor__buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    }
    synor__buf_printf(b, "%s_sum %.9f\n%s_count %llu\n", name,
                      (double)atomic_load(&h->sum_ns) * 1e-9, name,
                      (unsigned long long)atomic_load(&h->count));
}

char *synor__serve_metrics(synor_server *s)
{
    synor_llm_sched_stats st;
    synor_llm_sched_stats_get(s->sched, &st);
    uint64_t t = now_sec(), window = 0;
    pthread_mutex_lock(&s->mu);
    uint64_t asleep = s->wait_ns + (s->wait_since ? synor__serve_now_ns() - s->wait_since : 0);
    /* the last SERVE_RATE_S whole seconds, not the one under way */
    for (size_t i = 0; i < SERVE_RATE_S; i++)
        if (s->rate_sec[i] + SERVE_RATE_S >= t && s->rate_sec[i] < t)
            window += s->rate_tok[i];
    pthread_mutex_unlock(&s->mu);
    synor__buf b;
    synor__buf_init(&b);
    metric(&b, "synor_requests_total", "counter",
           "Generation requests accepted (queued for the engine).", atomic_load(&s->requests));
    synor_cache_stats cs = {0};
    if (s->cache)
        synor_cache_stats_get(s->cache, &cs);
    head(&b, "synor_cache_hits_total", "counter",
         "Whole answers served from the exact-match cache, by tier (0 when it is off).");
    synor__buf_printf(&b, "synor_cache_hits_total{tier=\"memory\"} %llu\n",
                      (unsigned long long)cs.hits[SYNOR_CACHE_MEMORY]);
    synor__buf_printf(&b, "synor_cache_hits_total{tier=\"disk\"} %llu\n",
                      (unsigned long long)cs.hits[SYNOR_CACHE_DISK]);
    metric(&b, "synor_cache_misses_total", "counter",
           "Cacheable requests (greedy or seeded, not streamed) not in the cache.", cs.misses);
    metric(&b, "synor_cache_entries", "gauge", "Entries in the cache's memory tier.",
           cs.mem_entries);
    metric(&b, "synor_semantic_lookups_total", "counter",
           "Requests looked up in the semantic cache (0 when it is off).",
           atomic_load(&s->sem_lookups));
    metric(&b, "synor_semantic_hits_total", "counter",
           "Whole answers served from the semantic cache (a similar prompt's answer).",
           atomic_load(&s->sem_hits));
    metric(&b, "synor_semantic_entries", "gauge", "Entries in the semantic cache.",
           s->sem ? (uint64_t)synor_semcache_count(s->sem) : 0);
    metric(&b, "synor_semantic_hnsw", "gauge",
           "1 while the semantic cache's lookups take the HNSW graph (hnswlib), 0 the scan.",
           s->sem && synor_semcache_index(s->sem) == SYNOR_SEMCACHE_HNSW);
    metric(&b, "synor_predicted_started_total", "counter",
           "Requests predicted from a user's history and generated while idle.",
           atomic_load(&s->pred_started));
    metric(&b, "synor_predicted_ready_total", "counter",
           "Predicted answers stored in the exact-match cache.", atomic_load(&s->pred_ready));
    metric(&b, "synor_predicted_hits_total", "counter",
           "Requests answered from an answer generated on a prediction.",
           atomic_load(&s->pred_hits));
    head(&b, "synor_requests_finished_total", "counter",
         "Generation requests finished, by finish_reason.");
    static const char *const why[3] = {"stop", "length", "cancelled"};
    for (int i = 0; i < 3; i++)
        synor__buf_printf(&b, "synor_requests_finished_total{finish_reason=\"%s\"} %llu\n", why[i],
                          (unsigned long long)atomic_load(&s->finished[i]));
    head(&b, "synor_http_responses_total", "counter", "HTTP responses, by status code.");
    for (size_t i = 0; i <= SERVE_NCODES; i++) {
        uint64_t v = atomic_load(&s->codes[i]);
        if (i < SERVE_NCODES)
            synor__buf_printf(&b, "synor_http_responses_total{code=\"%d\"} %llu\n",
                              synor__serve_codes[i], (unsigned long long)v);
        else
            synor__buf_printf(&b, "synor_http_responses_total{code=\"other\"} %llu\n",
                              (unsigned long long)v);
    }
    metric(&b, "synor_requests_running", "gauge", "Requests holding a sequence (generating).",
           st.running);
    metric(&b, "synor_requests_waiting", "gauge",
           "Requests queued for a sequence (the queue's length).", st.waiting);
    metric(&b, "synor_prompt_tokens_total", "counter", "Prompt tokens of accepted requests.",
           atomic_load(&s->prompt_tokens));
    metric(&b, "synor_tokens_generated_total", "counter", "Tokens generated.",
           atomic_load(&s->gen_tokens));
    head(&b, "synor_tokens_per_second", "gauge",
         "Tokens generated per second over the last 10 whole seconds.");
    synor__buf_printf(&b, "synor_tokens_per_second %.1f\n", (double)window / SERVE_RATE_S);
    metric(&b, "synor_engine_steps_total", "counter", "Batches the engine ran.", st.steps);
    metric(&b, "synor_engine_prompt_rows_total", "counter",
           "Prompt tokens run by the engine (recomputed ones after a preemption included).",
           st.prompt_tokens);
    metric(&b, "synor_engine_rows_total", "counter",
           "Rows the engine's batches ran, decode and prompt rows together (over steps: the "
           "mean batch).",
           st.rows);
    head(&b, "synor_engine_seconds_total", "counter",
         "The engine thread's time: in its batches, in its steps as a whole (batches, "
         "admission, sampling, token events), asleep with no work.");
    synor__buf_printf(&b, "synor_engine_seconds_total{part=\"batch\"} %.6f\n",
                      (double)st.batch_ns * 1e-9);
    synor__buf_printf(&b, "synor_engine_seconds_total{part=\"step\"} %.6f\n",
                      (double)st.step_ns * 1e-9);
    synor__buf_printf(&b, "synor_engine_seconds_total{part=\"idle\"} %.6f\n",
                      (double)asleep * 1e-9);
    metric(&b, "synor_preemptions_total", "counter",
           "Requests preempted when the KV cache ran out (recomputed later).", st.preempted);
    metric(&b, "synor_spec_rounds_total", "counter",
           "Speculative rounds (--draft: while at most --speculate-max requests generate; "
           "counted in steps too).",
           st.spec_rounds);
    metric(&b, "synor_spec_proposed_total", "counter", "Tokens the draft proposed.",
           st.spec_proposed);
    metric(&b, "synor_spec_accepted_total", "counter",
           "Proposals the model accepted (over proposed: the acceptance rate).", st.spec_accepted);
    metric(&b, "synor_kv_blocks_used", "gauge", "KV-cache blocks in use.", st.kv_used);
    metric(&b, "synor_kv_blocks_total", "gauge", "KV-cache blocks in the pool.", s->kv_total);
    metric(&b, "synor_kv_blocks_cached", "gauge",
           "KV-cache blocks of prompts kept for reuse (prefix cache; held or idle).",
           st.kv_cached);
    metric(&b, "synor_kv_blocks_idle", "gauge",
           "Kept blocks no request holds (the pool hands them out again when it needs them).",
           st.kv_idle);
    metric(&b, "synor_prefix_reused_tokens_total", "counter",
           "Prompt tokens whose KV blocks were reused, not computed.", st.prompt_reused);
    hist(&b, "synor_time_to_first_token_seconds", "From a request's submission to its first token.",
         &s->ttft);
    hist(&b, "synor_time_per_output_token_seconds",
         "Between consecutive output tokens of a request.", &s->tpot);
    return synor__buf_take(&b);
}
