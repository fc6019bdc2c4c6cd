/* fuzz_serve_request.c - the body of a generation request to synor serve
 * (POST /v1/completions, /v1/chat/completions): any bytes, as a completion
 * and as a chat request (synor__serve_req_parse), and any bytes as the text
 * of an answer (synor__serve_json_text, synor__serve_utf8_ready).
 *
 * Contract checked: a refused body is a known negative code with a message;
 * an accepted one has a prompt and sampling values inside their ranges
 * (max_tokens >= 1, temperature >= 0 and finite, 0 < top_p <= 1, top_k >=
 * 0, n in 1..16, echo only in a completion, at most 300 logit biases, each
 * of a token id >= 0 and within -100..100; a JSON schema compiled with its
 * text kept; a tool call only in a chat request, with its schema, without
 * stop sequences). A failed allocation is SYNOR_ENOMEM or the same result.
 * Any bytes written as a JSON string literal parse back with the project's
 * JSON reader (when they hold no NUL byte, which that reader refuses); the
 * ready prefix of any bytes is at most their length, and all of them when
 * they end on a complete character or an ill-formed byte. The chat
 * requests again in the chatml, llama2 (every variant) and zephyr
 * templates: the same contract, the special flag set. Any bytes as a
 * tool-call answer (serve/toolscan.h), in each of its four forms: read in
 * pieces (split where the input's first byte says) they give the events
 * they give read whole, and synor__serve_tool_answer's "tool_calls" or
 * text is valid JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "serve/serve_api.h"
#include "serve/toolscan.h"
#include "synor/error.h"
#include "json/json.h"

static void check_req(const synor__serve_req *q)
{
    FUZZ_CHECK(q->prompt != NULL, "accepted without a prompt");
    FUZZ_CHECK(q->max_tokens >= 1, "max_tokens %ld accepted", q->max_tokens);
    FUZZ_CHECK(q->temperature >= 0 && isfinite(q->temperature), "temperature %g accepted",
               q->temperature);
    FUZZ_CHECK(q->top_p > 0 && q->top_p <= 1, "top_p %g accepted", q->top_p);
    FUZZ_CHECK(q->top_k >= 0, "top_k %ld accepted", q->top_k);
    FUZZ_CHECK(q->n >= 1 && q->n <= SYNOR__SERVE_MAX_N, "n %ld accepted", q->n);
    FUZZ_CHECK(!q->best_of || (q->best_of >= q->n && q->best_of <= SYNOR__SERVE_MAX_N &&
                               !q->chat && (!q->stream || q->best_of == q->n)),
               "best_of %ld accepted (n %ld)", q->best_of, q->n);
    FUZZ_CHECK(!q->echo || !q->chat, "echo accepted in a chat request");
    FUZZ_CHECK((!q->schema) == (!q->schema_text) && (!q->schema || q->json_object),
               "a JSON schema without its text or its json_object flag");
    FUZZ_CHECK(!q->tool_call || (q->chat && q->schema && !q->n_stop),
               "a tool call without its schema, in a completion or with stop sequences");
    FUZZ_CHECK(q->n_bias >= 0 && q->n_bias <= SYNOR__SERVE_MAX_BIAS, "%d biases", q->n_bias);
    FUZZ_CHECK(!q->n_prompt_ids || (!q->chat && q->prompt_ids && !q->prompt[0]),
               "token ids in a chat request or beside a text");
    for (size_t i = 0; i < q->n_prompt_ids; i++)
        FUZZ_CHECK(q->prompt_ids[i] >= 0, "prompt token %d accepted", (int)q->prompt_ids[i]);
    FUZZ_CHECK(!q->suffix || (!q->chat && !q->echo && !q->n_prompt_ids),
               "a suffix in a chat request, with echo or with token ids");
    for (int i = 0; i < q->n_bias; i++)
        FUZZ_CHECK(q->bias_tok[i] >= 0 && q->bias_val[i] >= -100 && q->bias_val[i] <= 100,
                   "bias %d of token %d accepted", (int)q->bias_val[i], (int)q->bias_tok[i]);
}

static int same_req(const synor__serve_req *a, const synor__serve_req *b)
{
    return a->chat == b->chat && a->stream == b->stream && !strcmp(a->prompt, b->prompt) &&
           (!a->model) == (!b->model) && (!a->model || !strcmp(a->model, b->model)) &&
           a->max_tokens == b->max_tokens && a->temperature == b->temperature &&
           a->top_p == b->top_p && a->top_k == b->top_k && a->has_seed == b->has_seed &&
           a->seed == b->seed && a->n == b->n && a->echo == b->echo && a->n_bias == b->n_bias &&
           a->best_of == b->best_of && a->json_object == b->json_object &&
           (!a->schema_text) == (!b->schema_text) &&
           (!a->schema_text || !strcmp(a->schema_text, b->schema_text)) &&
           a->tool_call == b->tool_call && a->return_ids == b->return_ids &&
           a->n_prompt_ids == b->n_prompt_ids && (!a->suffix) == (!b->suffix) &&
           (!a->suffix || !strcmp(a->suffix, b->suffix)) &&
           (!a->n_prompt_ids ||
            !memcmp(a->prompt_ids, b->prompt_ids, sizeof(int32_t) * a->n_prompt_ids)) &&
           (!a->n_bias || (!memcmp(a->bias_tok, b->bias_tok, sizeof(int32_t) * a->n_bias) &&
                           !memcmp(a->bias_val, b->bias_val, sizeof(float) * a->n_bias)));
}

static void one(const uint8_t *data, size_t size, int chat)
{
    synor__serve_req q;
    int rc = synor__serve_req_parse((const char *)data, size, chat, &q);
    if (rc) {
        FUZZ_CHECK(rc < 0 && strcmp(synor_err_name(rc), "SYNOR_UNKNOWN") != 0,
                   "refused with code %d", rc);
        FUZZ_CHECK(synor_errmsg()[0] != 0, "refused without a message");
    } else {
        check_req(&q);
    }
    /* the same with one allocation failing */
    fuzz_alloc_count_start();
    synor__serve_req r2;
    int rc2 = synor__serve_req_parse((const char *)data, size, chat, &r2);
    long n = fuzz_alloc_count_stop();
    if (!rc2)
        synor__serve_req_free(&r2);
    FUZZ_CHECK(rc2 == rc, "a second parse gave %d, the first %d", rc2, rc);
    fuzz_alloc_fail_one(data, size, n);
    rc2 = synor__serve_req_parse((const char *)data, size, chat, &r2);
    int injected = fuzz_alloc_disarm();
    if (injected && rc2) {
        FUZZ_CHECK(rc2 == SYNOR_ENOMEM || rc2 == rc, "an allocation failure gave %d", rc2);
    } else {
        FUZZ_CHECK(rc2 == rc, "with an armed failure that %s: %d, without: %d",
                   injected ? "happened" : "did not happen", rc2, rc);
        if (!rc2 && !rc)
            FUZZ_CHECK(same_req(&q, &r2), "a parse under injection differs");
    }
    if (!rc2)
        synor__serve_req_free(&r2);
    if (!rc)
        synor__serve_req_free(&q);
}

/* The scanner's events, logged: a call as "\x01K NAME\x01", arguments as
 * "\x02K" then their bytes (a marker only where another event came
 * between), text as it comes. */
typedef struct ev_log {
    synor__buf b;
    int last;
} ev_log;

static void ev_call(void *u, int k, const char *name, size_t n)
{
    ev_log *l = u;
    synor__buf_printf(&l->b, "\x01%d %.*s\x01", k, (int)n, name);
    l->last = -2;
}

static void ev_args(void *u, int k, const char *p, size_t n)
{
    ev_log *l = u;
    if (l->last != k)
        synor__buf_printf(&l->b, "\x02%d", k);
    synor__buf_append(&l->b, p, n);
    l->last = k;
}

static void ev_text(void *u, const char *p, size_t n)
{
    ev_log *l = u;
    synor__buf_append(&l->b, p, n);
    l->last = -1;
}

static void scan(const uint8_t *data, size_t size, int form, size_t piece, ev_log *l)
{
    tool_scan t;
    tool_scan_cb cb = {ev_call, ev_args, ev_text, l};
    synor__tool_scan_init(&t, form);
    synor__buf_init(&l->b);
    l->last = -2;
    for (size_t i = 0; i < size; i += piece)
        synor__tool_scan_feed(&t, (const char *)data + i, size - i < piece ? size - i : piece,
                              &cb);
}

static void tool_answers(const uint8_t *data, size_t size)
{
    size_t piece = size ? 1 + data[0] % 7 : 1;
    for (int form = 0; form < 4; form++) {
        ev_log whole, parts;
        scan(data, size, form, size ? size : 1, &whole);
        scan(data, size, form, piece, &parts);
        FUZZ_CHECK(whole.b.failed || parts.b.failed ||
                       (whole.b.len == parts.b.len &&
                        (!whole.b.len || !memcmp(whole.b.data, parts.b.data, whole.b.len))),
                   "form %d: read in pieces of %zu the events differ", form, piece);
        synor__buf_free(&whole.b);
        synor__buf_free(&parts.b);
        synor__buf b;
        synor__buf_init(&b);
        synor__buf_puts(&b, "{");
        int r = synor__serve_tool_answer(&b, (const char *)data, size, "r", 0, form);
        synor__buf_puts(&b, r == 2 ? ":1}" : "}");
        if (r == 1 && !b.failed && !memchr(data, 0, size)) { /* {"tool_calls":[...]} (NUL: above) */
            synor__jdoc *d = NULL;
            FUZZ_CHECK(synor__json_parse(b.data, b.len, FUZZ_NAME, &d) == 0,
                       "form %d: the calls' JSON does not parse: %s", form, synor_errmsg());
            synor__jdoc_free(d);
        }
        synor__buf_free(&b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size, 0);
    one(data, size, 1);
    /* chat requests in each template (llama2 with every variant) */
    static const char *const jinja[] = {
        "<|im_start|>", "[INST] <<SYS>> ' ' + eos_token bos_token + '[INST] strip()",
        "<|user|> eos_token"};
    for (int k = 0; k < 3; k++) {
        synor__serve_tmpl t;
        synor__serve_req q;
        FUZZ_CHECK(synor__serve_tmpl_pick(NULL, jinja[k], "</s>", &t) == 0 &&
                       t.kind == SYNOR__TMPL_CHATML + k,
                   "template %d not recognised", k);
        if (synor__serve_req_parse_tmpl((const char *)data, size, 1, &t, &q) == 0) {
            check_req(&q);
            FUZZ_CHECK(q.special, "a chat request in a template without its special flag");
            synor__serve_req_free(&q);
        }
    }
    /* any bytes as answer text: a JSON string literal that parses */
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "[");
    synor__serve_json_text(&b, (const char *)data, size);
    synor__buf_puts(&b, "]");
    /* (the project's reader refuses \u0000 in strings, which is valid JSON
     * and what the writer sends for a NUL byte: bytes with a NUL are not
     * read back) */
    if (!b.failed && !memchr(data, 0, size)) {
        synor__jdoc *d = NULL;
        int rc = synor__json_parse(b.data, b.len, FUZZ_NAME, &d);
        FUZZ_CHECK(rc == 0, "the JSON text of the bytes does not parse: %s", synor_errmsg());
        synor__jdoc_free(d);
    }
    synor__buf_free(&b);
    size_t ready = synor__serve_utf8_ready((const char *)data, size);
    FUZZ_CHECK(ready <= size, "ready %zu of %zu bytes", ready, size);
    tool_answers(data, size);
    return 0;
}
