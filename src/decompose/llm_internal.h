/* llm_internal.h - the workload builder the LLM decomposers share (llm.c:
 * one device's worth of work; llm_parallel.c: data- and tensor-parallel
 * copies). Never installed. */
#ifndef SYNOR_LLM_INTERNAL_H
#define SYNOR_LLM_INTERNAL_H

#include <stdint.h>

#include "common/common.h"
#include "synor/decompose.h"

#define SYNOR__LLM_MAX_REFS 16

typedef struct synor__gen {
    synor_workload *w;
    const synor_llm_config *m;
    double s;      /* bytes per element */
    int64_t d, g;  /* head_dim, kv heads */
    int rc;
} synor__gen;

typedef struct synor__tspec {
    char id[64];
    synor_op op;
    synor_priority prio;
    int pref, fb; /* kind + 1; 0 = none */
    size_t cons[SYNOR__LLM_MAX_REFS], prod[SYNOR__LLM_MAX_REFS], deps[SYNOR__LLM_MAX_REFS];
    size_t n_cons, n_prod, n_deps;
    uint64_t workspace;
    const char *group; /* colocation group, or NULL */
} synor__tspec;

#define SYNOR__KIND(k) (SYNOR_KIND_##k + 1)

/* A datum named by the format; its index (0 after an error, kept in G->rc). */
size_t synor__llm_data(synor__gen *G, uint64_t bytes, const char *fmt, ...) SYNOR__PRINTF(3, 4);
void synor__llm_spec(synor__tspec *t, synor_op_type type, synor_dtype dt, synor_priority prio,
                     int pref, int fb);
/* Adds the task (consuming extra_cons instead of t->cons when n_extra). */
size_t synor__llm_add(synor__gen *G, synor__tspec *t, const size_t *extra_cons, size_t n_extra);
uint64_t synor__llm_hidden_bytes(const synor__gen *G, int64_t batch, int64_t tokens);
uint64_t synor__llm_kv_bytes(const synor__gen *G, int64_t batch, int64_t tokens);
void synor__llm_layer_dims(const synor__gen *G, synor_op *op, int64_t batch, int64_t seq,
                           int64_t kv_len);
int synor__llm_start(synor__gen *G, const synor_llm_config *m, const char *what,
                     synor_workload **w);
int synor__llm_finish(synor__gen *G, synor_workload **out);
/* The CPU's ends of inference: tokenizing the prompt text (returns the
 * token ids) and detokenizing the generated tokens. */
size_t synor__llm_tokenize(synor__gen *G, int64_t batch, int64_t prompt, size_t text);
void synor__llm_detokenize(synor__gen *G, int64_t batch, int64_t new_tokens, const size_t *tok);
/* Parameters of one transformer layer. */
double synor__llm_layer_params(const synor_llm_config *m);

#endif
