/* answer.c - the answers of synor serve's generation requests (gen.h):
 * the whole answer as one JSON object once every choice is done, or
 * Server-Sent Events as the tokens come, each choice's chunks carrying its
 * "index" and, with logprobs, the entries of the tokens whose text the
 * chunk completes. */
#include <microhttpd.h>
#include <string.h>

#include "serve/gen.h"
#include "synor/llm.h"

/* The start of every streamed chunk, up to the choice's fields. */
static void chunk_head(serve_gen *g, int index, synor__buf *b)
{
    synor__buf_printf(b,
                      "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":", g->name,
                      g->chat ? "chat.completion.chunk" : "text_completion", (long long)g->created);
    synor__serve_json_text(b, g->s->model_name, strlen(g->s->model_name));
    synor__buf_printf(b, ",\"choices\":[{\"index\":%d,", index);
}

/* ,"name":[ids...] (vLLM's return_token_ids) */
static void append_ids(synor__buf *b, const char *name, const int32_t *ids, size_t n)
{
    synor__buf_printf(b, ",\"%s\":[", name);
    for (size_t i = 0; i < n; i++)
        synor__buf_printf(b, i ? ",%d" : "%d", ids[i]);
    synor__buf_puts(b, "]");
}

/* return_token_ids in a stream: the choice's prompt ids in its first
 * chunk, then in each chunk the ids of the tokens generated since the
 * last (inside the choice's object, before its finish_reason). */
static void chunk_ids(serve_gen *g, serve_choice *c, synor__buf *b)
{
    if (!g->prompt_ids)
        return;
    if (!c->pids_sent)
        append_ids(b, "prompt_token_ids", g->prompt_ids, g->n_prompt);
    c->pids_sent = 1;
    append_ids(b, "token_ids", c->ids ? c->ids + c->ids_sent : NULL, c->nids - c->ids_sent);
    c->ids_sent = c->nids;
}

void synor__serve_emit(serve_gen *g, serve_choice *c, size_t upto, int final)
{
    synor__buf *b = &g->out;
    const char *text = c->text.data ? c->text.data : "";
    chunk_head(g, c->index, b);
    synor__buf_puts(b, g->chat ? "\"delta\":{\"content\":" : "\"text\":");
    synor__serve_json_text(b, text + c->sent, upto - c->sent);
    synor__buf_puts(b, g->chat ? "}" : "");
    if (g->has_lp) { /* the tokens whose text is now all sent */
        size_t m = c->lp_sent;
        while (m < c->nlp && (c->lp[m].offset + c->lp[m].len <= upto ||
                              (final && c->lp[m].offset < upto)))
            m++;
        synor__serve_lp_json(b, g->chat, synor_llm_tokenizer(g->s->m), c->lp + c->lp_sent,
                             m - c->lp_sent, text, upto);
        c->lp_sent = m;
    } else if (!g->chat) {
        synor__buf_puts(b, ",\"logprobs\":null");
    }
    chunk_ids(g, c, b);
    synor__buf_puts(b, ",\"finish_reason\":null}]}\n\n");
    c->sent = upto;
}

static size_t completion_tokens(const serve_gen *g)
{
    size_t n = 0;
    for (int i = 0; i < g->n; i++)
        n += g->ch[i].generated;
    return n;
}

/* OpenAI's usage; prompt_tokens_details.cached_tokens: the prompt
 * positions that were not computed for this request - all of them for an
 * answer from a cache of answers, else those the KV prefix cache gave the
 * choice that got the fewest (the prompt was computed once, by it). */
static void append_usage(serve_gen *g, synor__buf *b)
{
    size_t gen = completion_tokens(g), cached = g->tier ? g->n_prompt : SIZE_MAX;
    for (int i = 0; i < g->n && !g->tier; i++)
        cached = g->ch[i].cached < cached ? g->ch[i].cached : cached;
    cached = cached < g->n_prompt ? cached : g->n_prompt;
    synor__buf_printf(b,
                      ",\"usage\":{\"prompt_tokens\":%zu,\"completion_tokens\":%zu,"
                      "\"total_tokens\":%zu,\"prompt_tokens_details\":{\"cached_tokens\":%zu}}",
                      g->n_prompt, gen, g->n_prompt + gen, cached);
}


/* A streamed tool call's events (toolscan.h) as chunks: a call's first
 * delta (the assistant's role and content null with the first call) holds
 * its index, id, name and empty arguments; each later one more of its
 * arguments; "auto"'s text goes as content, whole UTF-8 characters at a
 * time. */
static void ts_call(void *u, int k, const char *name, size_t n)
{
    serve_choice *c = u;
    serve_gen *g = c->g;
    char id[96];
    synor__serve_tool_id(id, sizeof id, g->name, c->index, g->tool_form, k);
    chunk_head(g, c->index, &g->out);
    synor__buf_printf(&g->out,
                      "\"delta\":{%s\"tool_calls\":[{\"index\":%d,\"id\":\"%s\",\"type\":"
                      "\"function\",\"function\":{\"name\":",
                      c->ts_calls ? "" : "\"role\":\"assistant\",\"content\":null,", k, id);
    synor__serve_json_text(&g->out, name, n);
    synor__buf_puts(&g->out, ",\"arguments\":\"\"}}]}");
    chunk_ids(g, c, &g->out);
    synor__buf_puts(&g->out, ",\"finish_reason\":null}]}\n\n");
    c->ts_calls = k + 1;
}

static void ts_args(void *u, int k, const char *p, size_t n)
{
    serve_choice *c = u;
    serve_gen *g = c->g;
    chunk_head(g, c->index, &g->out);
    synor__buf_printf(&g->out, "\"delta\":{\"tool_calls\":[{\"index\":%d,\"function\":"
                               "{\"arguments\":",
                      k);
    synor__serve_json_text(&g->out, p, n);
    synor__buf_puts(&g->out, "}}]}");
    chunk_ids(g, c, &g->out);
    synor__buf_puts(&g->out, ",\"finish_reason\":null}]}\n\n");
}

/* c's decoded text up to `upto` as a content chunk */
static void ts_send_text(serve_gen *g, serve_choice *c, size_t upto)
{
    chunk_head(g, c->index, &g->out);
    synor__buf_puts(&g->out, "\"delta\":{\"content\":");
    synor__serve_json_text(&g->out, c->shown.data + c->shown_sent, upto - c->shown_sent);
    synor__buf_puts(&g->out, "}");
    chunk_ids(g, c, &g->out);
    synor__buf_puts(&g->out, ",\"finish_reason\":null}]}\n\n");
    c->shown_sent = upto;
}

static void ts_text(void *u, const char *p, size_t n)
{
    serve_choice *c = u;
    synor__buf_append(&c->shown, p, n);
    if (!c->shown.data || c->shown.failed)
        return;
    size_t k = c->shown_sent + synor__serve_utf8_ready(c->shown.data + c->shown_sent,
                                                      c->shown.len - c->shown_sent);
    if (k > c->shown_sent)
        ts_send_text(c->g, c, k);
}

void synor__serve_tool_stream(serve_gen *g, serve_choice *c, const char *p, size_t n)
{
    tool_scan_cb cb = {ts_call, ts_args, ts_text, c};
    synor__tool_scan_feed(&c->scan, p, n, &cb);
}

/* The end of a streamed tool-call choice: the rest of its text (a
 * character the tokens cut short, as U+FFFD); 1 when it made calls, 2 a
 * text, 0 neither (its raw text goes as text: the beginning of a call the
 * tokens ran out on). */
static int tool_end(serve_gen *g, serve_choice *c)
{
    if (c->ts_calls)
        return 1;
    if (!c->scan.texts)
        return 0;
    if (c->shown.data && c->shown.len > c->shown_sent)
        ts_send_text(g, c, c->shown.len);
    return 2;
}

/* The streamed answer: events as the engine adds them; at the end, for
 * each choice, any bytes held back and a chunk with its finish reason (the
 * last with the usage), and [DONE]. MHD's thread per connection may block
 * here. */
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    serve_gen *g = cls;
    pthread_mutex_lock(&g->mu);
    while (g->out_off == g->out.len && !g->done)
        pthread_cond_wait(&g->cv, &g->mu);
    if (g->out_off == g->out.len && g->done && !g->ended) {
        g->ended = 1;
        for (int i = 0; i < g->n; i++) {
            serve_choice *c = &g->ch[i];
            int call = g->tools ? tool_end(g, c) : 0;
            if (!call && (c->text.len > c->sent || (g->has_lp && c->lp_sent < c->nlp)))
                synor__serve_emit(g, c, c->text.len, 1);
            chunk_head(g, i, &g->out);
            synor__buf_puts(&g->out, g->chat ? "\"delta\":{}" : "\"text\":\"\",\"logprobs\":null");
            chunk_ids(g, c, &g->out);
            synor__buf_printf(&g->out, ",\"finish_reason\":\"%s\"}]",
                              call == 1 && c->reason == SYNOR_LLM_DONE_EOS
                                  ? "tool_calls"
                                  : synor__serve_finish_reason(c->reason));
            if (i == g->n - 1)
                append_usage(g, &g->out);
            synor__buf_puts(&g->out, "}\n\n");
        }
        synor__buf_puts(&g->out, "data: [DONE]\n\n");
    }
    ssize_t n = MHD_CONTENT_READER_END_OF_STREAM;
    if (g->out.failed) {
        n = MHD_CONTENT_READER_END_WITH_ERROR;
    } else if (g->out_off < g->out.len) {
        size_t k = g->out.len - g->out_off;
        if (k > max)
            k = max;
        memcpy(buf, g->out.data + g->out_off, k);
        g->out_off += k;
        if (g->out_off == g->out.len)
            g->out_off = g->out.len = 0;
        n = (ssize_t)k;
    }
    pthread_mutex_unlock(&g->mu);
    return n;
}

/* The response is gone: the client may have left before the end, so the
 * generation stops too. */
static void sse_free(void *cls)
{
    serve_gen *g = cls;
    synor_server *s = g->s;
    pthread_mutex_lock(&g->mu);
    int done = g->done;
    pthread_mutex_unlock(&g->mu);
    if (!done) {
        pthread_mutex_lock(&s->mu);
        for (int i = 0; i < g->n; i++)
            synor_llm_sched_cancel(s->sched, g->ch[i].id);
        s->kicks++;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->mu);
    }
    synor__serve_gen_unref(g);
}

int synor__serve_answer_stream(serve_gen *g, struct MHD_Connection *c)
{
    struct MHD_Response *rsp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, sse_read, g, sse_free);
    if (!rsp) {
        sse_free(g);
        return MHD_NO;
    }
    MHD_add_response_header(rsp, "Content-Type", "text/event-stream");
    MHD_add_response_header(rsp, "Cache-Control", "no-cache");
    synor__serve_count_code(g->s, 200);
    int r = MHD_queue_response(c, 200, rsp);
    MHD_destroy_response(rsp);
    return r;
}

int synor__serve_answer_whole(serve_gen *g, struct MHD_Connection *c)
{
    synor_server *s = g->s;
    pthread_mutex_lock(&g->mu);
    while (!g->done)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    pthread_mutex_lock(&s->mu);
    int failed = 0;
    for (int i = 0; i < g->n; i++) /* only a failed batch cancels a request nobody can cancel */
        failed |= g->ch[i].reason == SYNOR_LLM_DONE_CANCELLED && !s->stopping;
    pthread_mutex_unlock(&s->mu);
    if (failed)
        return synor__serve_error(s, c, 500,
                                  "the generation failed: the engine's batch failed "
                                  "(the server's standard error says why)");
    for (int i = 0; i < g->n && g->prompt_ids; i++)
        if (g->ch[i].nids != g->ch[i].generated)
            return synor__serve_error(s, c, 500, "out of memory keeping the answer's token ids");
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":", g->name,
                      g->chat ? "chat.completion" : "text_completion", (long long)g->created);
    synor__serve_json_text(&b, s->model_name, strlen(s->model_name));
    synor__buf_puts(&b, ",\"choices\":[");
    /* best_of: the n_answer choices with the highest sums of their tokens'
     * log-probabilities, best first (ties: the earlier choice) */
    int order[SYNOR__SERVE_MAX_N];
    for (int i = 0; i < g->n; i++) {
        int j = i;
        for (; j > 0 && g->ch[order[j - 1]].sum_lp < g->ch[i].sum_lp && g->n_answer < g->n; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    for (int i = 0; i < g->n_answer; i++) {
        serve_choice *ch = &g->ch[order[i]];
        const char *text = ch->text.data ? ch->text.data : "";
        synor__buf_printf(&b, "%s{\"index\":%d,", i ? "," : "", i);
        synor__buf_puts(&b,
                        g->chat ? "\"message\":{\"role\":\"assistant\",\"content\":" : "\"text\":");
        /* calls: content null, the calls ("tool_calls" once closed; a call
         * the tokens ran out on has what was written of its arguments);
         * "auto"'s text: it */
        int call = 0;
        if (g->tools) {
            synor__buf t;
            synor__buf_init(&t);
            call = synor__serve_tool_answer(&t, text, ch->text.len, g->name, i, g->tool_form);
            call = call > 0 && !t.failed ? call : 0;
            if (call == 1)
                synor__buf_puts(&b, "null,");
            if (call)
                synor__buf_append(&b, t.data, t.len);
            synor__buf_free(&t);
        }
        if (!call)
            synor__serve_json_text(&b, text, ch->text.len);
        synor__buf_puts(&b, g->chat ? "}" : "");
        if (g->has_lp)
            synor__serve_lp_json(&b, g->chat, synor_llm_tokenizer(s->m), ch->lp, ch->nlp, text,
                                 ch->text.len);
        else if (!g->chat)
            synor__buf_puts(&b, ",\"logprobs\":null");
        synor__buf_printf(&b, ",\"finish_reason\":\"%s\"",
                          call == 1 && ch->reason == SYNOR_LLM_DONE_EOS
                              ? "tool_calls"
                              : synor__serve_finish_reason(ch->reason));
        if (g->prompt_ids && !g->chat)
            append_ids(&b, "prompt_token_ids", g->prompt_ids, g->n_prompt);
        if (g->prompt_ids)
            append_ids(&b, "token_ids", ch->ids, ch->nids);
        synor__buf_puts(&b, "}");
    }
    synor__buf_puts(&b, "]");
    if (g->prompt_ids && g->chat)
        append_ids(&b, "prompt_token_ids", g->prompt_ids, g->n_prompt);
    append_usage(g, &b);
    if (g->tier && !strcmp(g->tier, "predicted"))
        synor__buf_puts(&b, ",\"synor_cache\":{\"cache\":\"predicted\"}");
    else if (g->tier && !strcmp(g->tier, "semantic"))
        synor__buf_printf(&b, ",\"synor_cache\":{\"cache\":\"semantic\",\"similarity\":%.4f}",
                          (double)g->similarity);
    else if (g->tier)
        synor__buf_printf(&b, ",\"synor_cache\":{\"cache\":\"exact\",\"tier\":\"%s\"}", g->tier);
    synor__buf_puts(&b, "}\n");
    int r;
    if (b.failed)
        r = synor__serve_error(s, c, 500, "out of memory writing the answer");
    else
        r = synor__serve_text(s, c, 200, "application/json", b.data, b.len);
    synor__buf_free(&b);
    return r;
}
