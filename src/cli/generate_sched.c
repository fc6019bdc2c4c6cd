/* generate_sched.c - `synor generate` through the scheduler, for what only a
 * request carries (synor serve's per-request fields): a JSON answer
 * (--json, --json-schema FILE), OpenAI's presence and frequency
 * penalties and logit biases. One request, run step by step; its text streams as the plain
 * path's does (each token's piece after the prompt), and a greedy request
 * without those fields would write the same tokens (synor serve's tests
 * compare the two). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"
#include "synor/llm.h"

typedef struct one_req {
    const synor_tokenizer *tok;
    int32_t prev;
    int reason;
    size_t generated;
} one_req;

static int on_token(uint64_t id, int32_t t, void *user)
{
    (void)id;
    one_req *o = user;
    char text[256];
    cli_print_piece(o->tok, o->prev, t, text, sizeof text);
    o->prev = t;
    o->generated++;
    return 0;
}

static void on_done(uint64_t id, int reason, void *user)
{
    (void)id;
    ((one_req *)user)->reason = reason;
}

size_t cli_print_piece(const synor_tokenizer *tok, int32_t prev, int32_t t, char *text,
                       size_t cap)
{
    long len = synor_tokenizer_decode(tok, prev, t, text, cap);
    size_t n = len > 0 ? ((size_t)len < cap ? (size_t)len : cap) : 0;
    fwrite(text, 1, n, stdout);
    fflush(stdout);
    return n;
}

int cli_generate_request(const synor_llm *m, synor_llm_ctx *c, const char *prompt,
                         const cli_gen_request *q)
{
    const synor_tokenizer *tok = synor_llm_tokenizer(m);
    size_t plen = strlen(prompt);
    long need = synor_tokenizer_encode(tok, prompt, plen, 1, 0, NULL, 0);
    int32_t *ids = need > 0 ? malloc((size_t)need * sizeof *ids) : NULL;
    synor_llm_json *j = NULL;
    synor_llm_sched *s = NULL;
    one_req o = {.tok = tok, .reason = -1};
    int rc = CLI_FAIL;
    if (!ids) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    synor_tokenizer_encode(tok, prompt, plen, 1, 0, ids, (size_t)need);
    o.prev = ids[need - 1];
    if (q->n_new == 0) { /* (the caller wrote the prompt) */
        putchar('\n');
        free(ids);
        return CLI_OK;
    }
    synor_llm_request rq = {.prompt = ids,
                            .n_prompt = (size_t)need,
                            .max_new = q->n_new,
                            .sampler = q->sampler,
                            .presence_penalty = q->presence_penalty,
                            .frequency_penalty = q->frequency_penalty,
                            .bias_token = q->bias_token,
                            .bias_value = q->bias_value,
                            .n_bias = q->n_bias,
                            .on_token = on_token,
                            .on_done = on_done,
                            .user = &o};
    if ((q->json && synor_llm_json_create_schema(m, q->schema, &j)) ||
        synor_llm_sched_create(c, NULL, &s)) {
        putchar('\n');
        cli_error("%s", synor_errmsg());
        goto out;
    }
    rq.json = j;
    double t0 = synor__now_s();
    int r = synor_llm_sched_submit(s, &rq, NULL);
    while (r == 0 && (r = synor_llm_sched_step(s)) > 0)
        r = 0;
    double sec = synor__now_s() - t0;
    putchar('\n');
    if (r < 0) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    if (j && !synor_llm_json_done(j))
        fprintf(stderr, "synor: the JSON answer is not closed: the %s ran out\n",
                o.reason == SYNOR_LLM_DONE_CONTEXT ? "model's context" : "tokens asked for (-n)");
    if (!q->quiet) {
        synor_llm_sched_stats st;
        synor_llm_sched_stats_get(s, &st);
        fprintf(stderr,
                "synor: %s %s, %s kernels, one request through the scheduler (%s%s): prompt "
                "%llu tokens, generated %zu tokens in %.3f s (%.1f tokens/s)\n",
                synor_llm_format(m), synor_llm_weight_type(m), synor_llm_isa(),
                q->schema ? "a JSON Schema" : q->json ? "a JSON object" : "",
                (q->presence_penalty != 0 || q->frequency_penalty != 0 || q->n_bias)
                    ? (q->json ? ", penalties or biases" : "penalties or biases")
                    : "",
                (unsigned long long)st.prompt_tokens, o.generated, sec,
                sec > 0 ? (double)o.generated / sec : 0.0);
    }
    rc = CLI_OK;
out:
    synor_llm_sched_destroy(s);
    synor_llm_json_destroy(j);
    free(ids);
    return rc;
}
