/* serve_api.h - the OpenAI-compatible request and response formats of
 * synor serve, apart from HTTP and threads (api.c), so they can be tested
 * and fuzzed alone. Never installed. */
#ifndef SYNOR_SERVE_API_H
#define SYNOR_SERVE_API_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "json/json.h"
#include "synor/llm.h"
#include "synor/tokenizer.h"

/* OpenAI's "stop": at most this many sequences, each 1 to
 * SYNOR__SERVE_STOP_BYTES bytes. */
#define SYNOR__SERVE_MAX_STOP 4
#define SYNOR__SERVE_STOP_BYTES 256
/* OpenAI's "n": at most this many choices per request. */
#define SYNOR__SERVE_MAX_N 16
/* OpenAI's "logit_bias": at most this many tokens. */
#define SYNOR__SERVE_MAX_BIAS 300

/* template.c: the chat templates (their formats in template.c). */
enum { SYNOR__TMPL_PLAIN, SYNOR__TMPL_CHATML, SYNOR__TMPL_LLAMA2, SYNOR__TMPL_ZEPHYR };
typedef struct synor__serve_tmpl {
    int kind;
    int sys, space, bos_turns, strip; /* llama2's variants */
    char eos[32];                     /* the end of a llama2 answer, of a zephyr turn */
} synor__serve_tmpl;
/* The template named name ("auto" or NULL: the family jinja - a model's
 * tokenizer.chat_template, or NULL - shows; plain when none); eos: the
 * vocabulary's EOS piece ("</s>"). SYNOR_EINVAL for an unknown name. */
int synor__serve_tmpl_pick(const char *name, const char *jinja, const char *eos,
                           synor__serve_tmpl *out);
const char *synor__serve_tmpl_name(const synor__serve_tmpl *t);
/* synor__serve_tmpl_pick for model m: its own template (GGUF
 * tokenizer.chat_template) and EOS piece. */
int synor__serve_tmpl_for_model(const synor_llm *m, const char *name, synor__serve_tmpl *out);
/* The tokens that end the assistant's turn besides EOS (at most 2, into
 * out; returns how many): the template's end marker where it is a piece
 * of its own, and the model's end-of-turn token. */
int synor__serve_tmpl_turn_ends(const synor__serve_tmpl *t, const synor_llm *m, int32_t out[2]);
/* One message appended to b; *turn: the template's state between messages
 * (0 before the first). Then the assistant's opening, where generation
 * starts. */
void synor__serve_tmpl_message(const synor__serve_tmpl *t, synor__buf *b, const char *role,
                               const char *content, size_t len, int *turn);
void synor__serve_tmpl_generation(const synor__serve_tmpl *t, synor__buf *b, int *turn);

/* A completion or chat completion request, checked. */
typedef struct synor__serve_req {
    int chat;        /* /v1/chat/completions */
    int stream;
    char *prompt;    /* the prompt (chat: the messages in the template) */
    /* a completion's prompt given as token ids (prompt: ""): the model
     * reads them as they are (no BOS added) */
    int32_t *prompt_ids;
    size_t n_prompt_ids;
    /* vLLM's "return_token_ids": the prompt's and each choice's token ids
     * in the answer (not with stream) */
    int return_ids;
    /* a completion's "suffix" (fill in the middle: the answer is what goes
     * between prompt and suffix), or NULL; needs the model's FIM tokens */
    char *suffix;
    char *model;     /* the "model" field, or NULL */
    long max_tokens; /* default 16 */
    double temperature, top_p;
    long top_k;
    uint64_t seed;
    int has_seed;
    char *user; /* OpenAI's "user" field (at most 256 bytes), or NULL */
    /* "stop": a string or an array of them (none: null, an empty array);
     * the answer ends before the first place any of them appears in it */
    char *stop[SYNOR__SERVE_MAX_STOP];
    int n_stop;
    double presence_penalty, frequency_penalty; /* -2..2, default 0 */
    /* has_logprobs: each token's log-probability in the answer, with its
     * top_logprobs most likely alternatives (completions: "logprobs": N,
     * 0..5; chat: "logprobs": true with "top_logprobs": N, 0..20); not
     * with stream */
    int has_logprobs, top_logprobs;
    /* "n": choices, each generated apart (1..SYNOR__SERVE_MAX_N; seeded:
     * choice i with the seed moved by i, choice 0 with the seed itself) */
    long n;
    /* "best_of" (completions, whole answers): that many choices generated,
     * the n with the highest sum of their tokens' log-probabilities
     * answered (n..SYNOR__SERVE_MAX_N; 0: n) */
    long best_of;
    /* "echo" (completions): each choice's text begins with the prompt as
     * the model reads it (with logprobs, its tokens' entries too) */
    int echo;
    /* "logit_bias": {"TOKEN_ID": BIAS (-100..100), ...}, at most
     * SYNOR__SERVE_MAX_BIAS pairs (the ids checked against the model's
     * vocabulary by the scheduler) */
    int32_t *bias_tok;
    float *bias_val;
    int n_bias;
    /* "response_format": {"type": "json_object"}: the answer is one JSON
     * object (constrained decoding); {"type": "text"}: no constraint;
     * {"type": "json_schema"}: json_object, and an object its schema
     * allows (schema: compiled; schema_text: compact, for cache keys) */
    int json_object;
    synor_llm_schema *schema;
    char *schema_text;
    /* chat "tools" with "tool_choice" "required" or a function (1), or
     * "auto" (2: a call or a text) (tools.c): json_object with the call's
     * schema; answered as "tool_calls" (or content) */
    int tool_call;
    int tool_list; /* parallel_tool_calls: several calls, {"tool_calls": [...]} */
    int special;   /* the prompt is a chat template's: its markers are special pieces */
} synor__serve_req;

/* Parses and checks body (len bytes). On failure: a negative code, and
 * synor_errmsg() names the line and column (malformed JSON) or the field
 * and value. Fields the engine cannot honour (suffix, tools,
 * ...) are refused by name; other unknown fields are ignored, as
 * OpenAI clients send their own. Free with synor__serve_req_free. */
int synor__serve_req_parse(const char *body, size_t len, int chat, synor__serve_req *out);
/* The same with chat messages written in template t (NULL: plain); with a
 * template other than plain, out->special is set: the prompt holds the
 * template's markers, to be tokenized as special pieces. */
int synor__serve_req_parse_tmpl(const char *body, size_t len, int chat,
                                const synor__serve_tmpl *t, synor__serve_req *out);

/* tools.c: "tools", "tool_choice", "parallel_tool_calls" of request root:
 * the functions' line ("tools: [...]", no newline) appended to prompt, and for a call asked for,
 * out's schema, schema_text, json_object and tool_call set. A completion
 * with tools is refused. */
int synor__serve_tools_read(const synor__jdoc *d, const synor__jval *root, int chat,
                            synor__serve_req *out, synor__buf *prompt);
/* tools.c: an assistant message m's "tool_calls" (path names it) as
 * assistant messages in template t, as the model writes calls in this
 * request's form (TOOL_FORM_* bits, serve/toolscan.h): each bare, each
 * inside {"tool_call": ...} ("auto"), or all in one {"tool_calls": [...]}
 * (parallel_tool_calls). */
int synor__serve_tool_history(const synor__jdoc *d, const synor__jval *m, const char *path,
                              int form, const synor__serve_tmpl *t, int *turn, synor__buf *b);
/* tools.c: a tool-call request's answer text (its JSON; form: the
 * request's TOOL_FORM_* bits, serve/toolscan.h), read by the tool-call
 * scanner: its calls, as "tool_calls":[...] into b, each with its id
 * (synor__serve_tool_id) and its arguments as written, compact (a call the
 * tokens ran out on has what was written of them): 1; "auto"'s text
 * ({"response": ...}), decoded, as a JSON string into b: 2; neither (the
 * tokens ran out before a call's name or the text began): 0, nothing
 * written; -1 out of memory. */
int synor__serve_tool_answer(synor__buf *b, const char *text, size_t len, const char *request,
                             int choice, int form);
/* tools.c: call k's id: call_REQUEST_CHOICE, with several calls
 * (TOOL_FORM_LIST) call_REQUEST_CHOICE_K. */
void synor__serve_tool_id(char *out, size_t size, const char *request, int choice, int form,
                          int k);
void synor__serve_req_free(synor__serve_req *r);
/* Whether r has stop sequences, penalties, logit biases, logprobs, echo,
 * n > 1, best_of or a JSON response format: fields the
 * semantic cache and the predictor do not key their answers by, so such
 * a request takes no part in them. */
int synor__serve_req_extras(const synor__serve_req *r);



/* Appends s[0..n) as a JSON string literal: control characters and NUL
 * escaped, every ill-formed UTF-8 subsequence (Unicode's maximal subparts)
 * replaced by U+FFFD, so the output is always valid JSON. */
void synor__serve_json_text(synor__buf *b, const char *s, size_t n);
/* The length of the longest prefix of s[0..n) that does not end inside an
 * incomplete (but so far well-formed) UTF-8 character: what can be sent
 * now while the rest waits for the next token's bytes. */
size_t synor__serve_utf8_ready(const char *s, size_t n);

/* {"error":{"message":MSG,"type":TYPE,"code":STATUS}} (a fresh string, or
 * NULL when out of memory). */
char *synor__serve_error_json(int status, const char *msg);

/* Stop sequences in an answer's text: the first place one of stop[0..n)
 * ends at or after byte `from` of p[0..len) (the bytes before were
 * searched before), as where it starts; SIZE_MAX when none does. */
size_t synor__serve_stop_find(char *const *stop, int n, const char *p, size_t len, size_t from);
/* How many bytes at the end of p[0..len) begin one of them (the longest
 * such end): what a stream holds back. */
size_t synor__serve_stop_tail(char *const *stop, int n, const char *p, size_t len);

/* One token of an answer with logprobs: where its text starts in the
 * answer and how long it is, its log-probability under the model's
 * distribution (temperature 1, no penalties), its most likely
 * alternatives (best first), and the token before it (how the
 * alternatives' text decodes). */
#define SYNOR__SERVE_LP_TOP 20
typedef struct synor__serve_lp {
    int32_t id, prev;
    size_t offset, len;
    float lp;
    int ntop;
    int32_t top_id[SYNOR__SERVE_LP_TOP];
    float top[SYNOR__SERVE_LP_TOP];
} synor__serve_lp;

/* e's id, lp and top (at most `top`, up to SYNOR__SERVE_LP_TOP) from the
 * row l of V logits the token was drawn from (log-softmax). */
void synor__serve_lp_compute(const float *l, int V, int32_t token, int top, synor__serve_lp *e);
/* Appends ,"logprobs":{...} for lp[0..n) over the answer text[0..tl):
 * chat's "content" list, or completions' parallel arrays. Tokens at or
 * past tl (a stop cut) are left out; one that straddles it keeps the text
 * before the cut. */
void synor__serve_lp_json(synor__buf *b, int chat, const synor_tokenizer *tok,
                          const synor__serve_lp *lp, size_t n, const char *text, size_t tl);

/* The finish_reason of a SYNOR_LLM_DONE_* reason. */
const char *synor__serve_finish_reason(int reason);

#endif
