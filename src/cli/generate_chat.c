/* generate_chat.c - `synor generate --chat`: a conversation in the terminal
 * (llama.cpp's `llama-cli -cnv`). Each line of standard input is a user
 * turn (a line ending in a backslash goes on to the next); the whole
 * conversation is written in the model's chat template (the one synor
 * serve uses: src/serve/template.c) and run through the scheduler of a
 * context with prefix caching, so a turn computes only what the earlier
 * turns did not: their positions come from the cache as far as the new
 * prompt's tokens agree with them. The answer streams to standard output
 * and ends at EOS, at the template's end of turn, or after -n tokens; a
 * line of figures per turn goes to standard error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "serve/serve_api.h"

typedef struct chat_turn {
    const synor_tokenizer *tok;
    int32_t prev;
    int32_t ends[2];
    int n_ends;
    size_t generated, reused;
    synor__buf answer; /* the answer's text, for the next turn's prompt */
} chat_turn;

static int on_token(uint64_t id, int32_t t, void *user)
{
    (void)id;
    chat_turn *o = user;
    /* as synor serve: BOS and the template's end of turn end the answer */
    if (t == synor_tokenizer_bos(o->tok))
        return 1;
    for (int i = 0; i < o->n_ends; i++)
        if (t == o->ends[i])
            return 1;
    char text[256];
    synor__buf_append(&o->answer, text, cli_print_piece(o->tok, o->prev, t, text, sizeof text));
    o->prev = t;
    o->generated++;
    return 0;
}

static void on_admit(uint64_t id, size_t reused, void *user)
{
    (void)id;
    ((chat_turn *)user)->reused = reused;
}

/* The next user turn from in into b (without its newline; a line ending in
 * a backslash continues on the next one). 0: a turn, 1: the end of input. */
static int read_turn(FILE *in, synor__buf *b)
{
    char *line = NULL;
    size_t cap = 0;
    int got = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) >= 0) {
        got = 1;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (n > 0 && line[n - 1] == '\\') {
            synor__buf_append(b, line, (size_t)n - 1);
            synor__buf_puts(b, "\n");
            continue;
        }
        synor__buf_append(b, line, (size_t)n);
        break;
    }
    free(line);
    return got ? 0 : 1;
}

/* One turn: the conversation so far (conv, turn) and text as the user's
 * message; the answer streamed and appended to conv. */
static int chat_once(const synor_llm *m, synor_llm_sched *s, const synor__serve_tmpl *t,
                     synor__buf *conv, int *turn, const char *text, size_t len,
                     const cli_chat_opts *q, int index)
{
    const synor_tokenizer *tok = synor_llm_tokenizer(m);
    synor__serve_tmpl_message(t, conv, "user", text, len, turn);
    synor__buf prompt;
    synor__buf_init(&prompt);
    synor__buf_append(&prompt, conv->data, conv->len);
    int gturn = *turn;
    synor__serve_tmpl_generation(t, &prompt, &gturn);
    if (conv->failed || prompt.failed) {
        synor__buf_free(&prompt);
        cli_error("out of memory");
        return CLI_FAIL;
    }
    /* a template's markers are special pieces; plain text is not */
    int special = t->kind != SYNOR__TMPL_PLAIN;
    long need = special ? synor_tokenizer_encode_special(tok, prompt.data, prompt.len, 1, NULL, 0)
                        : synor_tokenizer_encode(tok, prompt.data, prompt.len, 1, 0, NULL, 0);
    int32_t *ids = need > 0 ? malloc((size_t)need * sizeof *ids) : NULL;
    if (!ids) {
        synor__buf_free(&prompt);
        cli_error("out of memory");
        return CLI_FAIL;
    }
    if (special)
        synor_tokenizer_encode_special(tok, prompt.data, prompt.len, 1, ids, (size_t)need);
    else
        synor_tokenizer_encode(tok, prompt.data, prompt.len, 1, 0, ids, (size_t)need);
    synor__buf_free(&prompt);
    int ctx = synor_llm_hparams_get(m)->seq_len;
    if (need >= ctx) {
        free(ids);
        cli_error("turn %d: the conversation is %ld tokens, the model's context %d: no room "
                  "for an answer (start a new conversation)",
                  index, need, ctx);
        return CLI_FAIL;
    }
    chat_turn o = {.tok = tok, .prev = ids[need - 1]};
    o.n_ends = synor__serve_tmpl_turn_ends(t, m, o.ends);
    synor__buf_init(&o.answer);
    synor_llm_request rq = {.prompt = ids,
                            .n_prompt = (size_t)need,
                            .max_new = q->n_new,
                            .sampler = q->sampler,
                            .on_token = on_token,
                            .on_admit = on_admit,
                            .user = &o};
    double t0 = synor__now_s();
    int r = synor_llm_sched_submit(s, &rq, NULL);
    while (r == 0 && (r = synor_llm_sched_step(s)) > 0)
        r = 0;
    double sec = synor__now_s() - t0;
    putchar('\n');
    fflush(stdout);
    free(ids);
    if (r < 0 || o.answer.failed) {
        synor__buf_free(&o.answer);
        cli_error("turn %d: %s", index, r < 0 ? synor_errmsg() : "out of memory");
        return CLI_FAIL;
    }
    if (!q->quiet)
        fprintf(stderr,
                "synor: turn %d: prompt %ld tokens, %zu of them from the prefix cache; "
                "generated %zu tokens; the turn took %.3f s (%.1f tokens/s)\n",
                index, need, o.reused, o.generated, sec,
                sec > 0 ? (double)o.generated / sec : 0.0);
    synor__serve_tmpl_message(t, conv, "assistant", o.answer.data ? o.answer.data : "",
                              o.answer.len, turn);
    synor__buf_free(&o.answer);
    return CLI_OK;
}

int cli_generate_chat(const synor_llm *m, synor_llm_ctx *c, const cli_chat_opts *q)
{
    synor__serve_tmpl t;
    if (synor__serve_tmpl_for_model(m, q->chat_template, &t)) {
        cli_error("--chat-template: %s", synor_errmsg());
        return CLI_FAIL;
    }
    synor_llm_sched *s = NULL;
    if (synor_llm_sched_create(c, NULL, &s)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    if (!q->quiet)
        fprintf(stderr, "synor: chat with %s %s, template %s; a line is a turn (a line ending "
                        "in \\ goes on), end of input ends it\n",
                synor_llm_format(m), synor_llm_weight_type(m), synor__serve_tmpl_name(&t));
    synor__buf conv, line;
    synor__buf_init(&conv);
    int turn = 0, rc = CLI_OK, index = 0;
    if (q->system && *q->system)
        synor__serve_tmpl_message(&t, &conv, "system", q->system, strlen(q->system), &turn);
    if (q->first && *q->first)
        rc = chat_once(m, s, &t, &conv, &turn, q->first, strlen(q->first), q, ++index);
    int tty = isatty(fileno(stdin));
    while (rc == CLI_OK) {
        if (tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        synor__buf_init(&line);
        if (read_turn(stdin, &line)) {
            synor__buf_free(&line);
            break;
        }
        if (line.failed) {
            cli_error("out of memory");
            rc = CLI_FAIL;
        } else if (line.len > 0)
            rc = chat_once(m, s, &t, &conv, &turn, line.data, line.len, q, ++index);
        synor__buf_free(&line);
    }
    synor__buf_free(&conv);
    synor_llm_sched_destroy(s);
    return rc;
}
