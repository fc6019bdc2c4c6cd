/* gen.h - one generation request of synor serve, shared by gen.c (its
 * life: submitted to the scheduler, fed by the engine thread's callbacks)
 * and answer.c (its answer: one JSON object, or Server-Sent Events as the
 * tokens come). Never installed.
 *
 * A request has n choices (OpenAI's "n"), each a request of the
 * scheduler with its own text. It is shared by two threads with different
 * lifetimes (the engine until every choice's on_done, the connection until
 * its response is freed, which is earlier when the client goes away), so
 * it is counted: one reference per choice running and the connection's,
 * freed by the last. */
#ifndef SYNOR_SERVE_GEN_H
#define SYNOR_SERVE_GEN_H

#include <time.h>

#include "serve/server.h"
#include "serve/toolscan.h"

typedef struct serve_choice {
    serve_gen *g;
    int index;
    uint64_t id;          /* the scheduler's; set under s->mu */
    int32_t prev;         /* the engine thread's: the last token (leading-space rule) */
    uint64_t t_last;      /* the engine thread's: when its last token came */
    size_t poff;          /* the engine thread's: echoed prompt bytes given logprobs */
    synor__serve_lp pend; /* the engine thread's: on_logits' entry for on_token */
    double sum_lp;        /* best_of: the sum of its tokens' log-probabilities */
    synor_llm_json *json; /* response_format json_object: its constraint (owned) */
    /* a streamed tool call (the engine thread's, under g->mu): the answer
     * read as it comes; the calls announced; "auto"'s text decoded, and
     * how much of it was sent */
    tool_scan scan;
    int ts_calls;
    synor__buf shown;
    size_t shown_sent;
    /* under g->mu: */
    size_t cached;   /* prompt positions the prefix cache gave it (first admission) */
    int admitted;
    size_t generated;
    synor__buf text; /* the answer (with echo, the prompt's text first) */
    size_t sent;     /* streaming: bytes of text sent */
    int done, reason, stop_hit;
    int32_t *ids;        /* return_token_ids: the tokens generated (EOS not), nids of cap_ids */
    size_t nids, cap_ids;
    size_t ids_sent;     /* streaming: ids sent; and whether the prompt's were */
    int pids_sent;
    synor__serve_lp *lp; /* logprobs: an entry per token (echo: the prompt's first) */
    size_t nlp, cap_lp, lp_sent;
} serve_choice;

struct serve_gen {
    synor_server *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs; /* under mu */
    int chat, stream;
    char name[40]; /* "cmpl-N" or "chatcmpl-N" */
    time_t created;
    size_t n_prompt;
    size_t echo_len; /* bytes of each choice's text that echo the prompt */
    uint64_t t_submit;
    /* under mu: */
    synor__buf out; /* streaming: events not yet sent */
    size_t out_off;
    int done, ended, ndone;
    serve_gen *prev_live, *next_live; /* under s->mu */
    /* a generation nobody waits for (a prediction, under bg_key): its
     * answer goes into the exact-match cache under bg_ekey, or (a sample)
     * is kept by the prediction */
    int background;
    char *bg_key, *bg_ekey;
    size_t bg_klen, bg_elen;
    /* an answer from a cache: "memory", "disk" (exact) or "semantic" */
    const char *tier;
    float similarity;
    char *stop[SYNOR__SERVE_MAX_STOP]; /* the request's stop sequences (copies) */
    int n_stop;
    int has_lp, top_lp;
    int tools; /* a tool call: answered as "tool_calls", streamed by the scanner */
    int tool_form; /* its TOOL_FORM_* bits */
    int32_t *prompt_ids; /* return_token_ids: the prompt's n_prompt tokens (else NULL) */
    int n; /* choices running or done (under s->mu and mu while submitting) */
    int n_answer; /* the choices answered: the n best (best_of), or all n */
    serve_choice ch[];
};

void synor__serve_gen_unref(serve_gen *g);

/* answer.c: streaming a tool-call request (mu held): n more bytes of
 * choice c's answer read by its scanner, its calls' names and arguments
 * and its text sent as they come. */
void synor__serve_tool_stream(serve_gen *g, serve_choice *c, const char *p, size_t n);
/* answer.c: the whole answer of a finished g, queued on c. */
int synor__serve_answer_whole(serve_gen *g, struct MHD_Connection *c);
/* answer.c: the streamed answer's response (taking the connection's
 * reference to g: freed with the response), queued on c. */
int synor__serve_answer_stream(serve_gen *g, struct MHD_Connection *c);
/* answer.c: streaming (mu held): sends choice c's text from where it
 * was sent up to `upto` as one event, with the logprobs of the tokens
 * whose text it completes (final: the last event, with those of a token
 * cut by a stop sequence too). */
void synor__serve_emit(serve_gen *g, serve_choice *c, size_t upto, int final);

#endif
