/* sched_internal.h - the continuous-batching scheduler's state, shared by
 * sched.c (requests, admission, plain steps) and sched_spec.c (speculative
 * rounds). Never installed. */
#ifndef SYNOR_LLM_SCHED_INTERNAL_H
#define SYNOR_LLM_SCHED_INTERNAL_H

#include <pthread.h>

#include "llm/llm_ctx.h"

typedef struct sreq {
    uint64_t id;
    synor_llm_request r;
    int32_t *toks;
    size_t ntok, cap, fed;
    size_t scored; /* prompt positions given to on_prompt_logits */
    size_t published; /* positions published for prefix reuse */
    int32_t *bias_tok; /* the request's logit_bias (copies) */
    float *bias_val;
    int generated, seq, cancelled, done;
    struct sreq *next;
} sreq;

struct synor_llm_sched {
    synor_llm_ctx *c;
    synor_llm_sched_opts o;
    pthread_mutex_t mu;
    sreq *wait_head, *wait_tail; /* under mu */
    unsigned nwaiting;           /* under mu */
    sreq **run;                  /* by sequence; the step thread's */
    unsigned nrunning;
    sreq **admitted;             /* running, in admission order */
    uint64_t next_id;
    synor_llm_sched_stats st; /* counters under mu */
    int32_t *btok;
    unsigned *bseq;
    uint8_t *bwant;
    sreq **brow; /* the request whose last row is this row, or NULL */
    sreq **bprow; /* the request whose prompt row (on_prompt_logits) this is */
    size_t bprompt; /* prompt rows of the step */
    /* speculative rounds (opts.draft): */
    synor_llm_ctx *draft;
    unsigned dmax;  /* the draft's sequences: requests that speculate together at most */
    uint64_t *dreq; /* by draft sequence: the request whose tokens it holds (id + 1; 0: none) */
    size_t *dfed;   /* by draft sequence: how many of them */
    unsigned *slot; /* by running request: its draft sequence this round */
    unsigned *dseq; /* a draft batch's sequences */
    int32_t *dtok;  /* a draft batch's tokens */
    int32_t (*props)[32]; /* by running request: its proposals this round */
    int *kk;              /* by running request: how many */
    /* penalized(): a row's logits after a request's penalties, and a count
     * per token (all zero between calls) */
    float *pen;
    uint32_t *cnt;
};

/* sched.c: q gets token t drawn from row (EOS ends it); 1 when q is
 * finished (and freed). */
int synor__sched_emit(synor_llm_sched *s, sreq *q, int32_t t, const float *row);
/* sched.c: row l of q's next token after n_extra tokens more than it has
 * generated (a round's proposals so far), with q's penalties, logit
 * biases and JSON mask: in s->pen, or l itself without any. */
const float *synor__sched_penalized(synor_llm_sched *s, const sreq *q, const float *l,
                                    const int32_t *extra, int n_extra);
uint64_t synor__sched_now_ns(void);

/* sched_spec.c: whether this step can be a speculative round, and the
 * round (the rows it ran; 0: none, run a plain step). */
int synor__sched_spec_ready(synor_llm_sched *s);
size_t synor__sched_spec_round(synor_llm_sched *s);

#endif
