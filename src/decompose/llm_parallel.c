/* llm_parallel.c - data-parallel training and tensor-parallel inference of
 * an LLM (synor/decompose.h; seed 003 §4.2).
 *
 * Data parallel: dp replicas, each a colocation group "dp.R" (its device
 * holds a copy of the weights) running the forward and backward of batch /
 * dp sequences, as in llm.c. The gradients are reduced per bucket (each
 * layer's weights; the embedding; the output projection), so reduction
 * overlaps the rest of the backward:
 *   ring  reduce-scatter in dp - 1 steps (rank r adds the chunk from rank
 *         r - 1 and passes it on: 1/dp of the bucket per step), AdamW on
 *         the rank's 1/dp of the bucket (its optimizer state: 12 bytes per
 *         parameter / dp, ZeRO stage 1), then all-gather of the updated
 *         chunks in dp - 1 steps. Every rank sends 2 (dp - 1) / dp of the
 *         bucket: bandwidth-optimal.
 *   tree  binary-tree reduction of whole buckets to a root (bucket b's
 *         root is rank b mod dp, so the optimizer state spreads), AdamW on
 *         the root, binary-tree broadcast back: 2 log2(dp) steps of the
 *         whole bucket: fewer, larger messages (latency-optimal).
 * Each step is a task on the receiving rank; its input edge from the
 * sending rank carries the message, so the fabric's links (latency +
 * bytes / bandwidth, shared in the simulator) cost it.
 *
 * Tensor parallel (Megatron-LM style): every layer's weights split tp ways
 * (attention by heads, the MLP by its inner dimension; each shard a
 * colocation group "tp.J"), every layer step (prefill, each decode token)
 * tp tasks, and the output projection split by vocabulary. The partial
 * sums of a layer are all-reduced by sending each shard's partial to every
 * other shard (one-shot all-reduce, as inference engines do for small
 * messages): the next layer's shard consumes all tp partials, tp - 1 of
 * them over the fabric. */
#include <stdio.h>
#include <string.h>

#include "decompose/llm_internal.h"

typedef synor__gen gen;
typedef synor__tspec tspec;

static const char *group_name(char *buf, size_t n, const char *kind, int64_t r)
{
    snprintf(buf, n, "%s.%lld", kind, (long long)r);
    return buf;
}

/* ------------------------------------------------------- data parallel */

/* One weight bucket of one replica: its gradients, and the task that
 * computes the last of them. */
typedef struct bucket {
    double params;
    size_t grads[4];
    size_t n_grads;
    size_t last;  /* task */
    size_t send;  /* datum the last task sends to the collective */
} bucket;

/* One replica's forward and backward; fills b[0..L+1] (embedding, layers,
 * output projection) for replica r. */
static void replica(gen *G, int64_t r, int64_t nb, int64_t seq, int64_t dp, synor_collective coll,
                    int grouped, const size_t *w_emb_out, const size_t *w_layer, bucket *b)
{
    const synor_llm_config *m = G->m;
    const int64_t L = m->layers, H = m->hidden, T = nb * seq;
    const synor_dtype dt = m->dtype;
    const int64_t qkv_n = (m->heads + 2 * G->g) * G->d;
    char grp[32];
    const char *in_group = grouped ? group_name(grp, sizeof grp, "dp", r) : NULL;
    tspec t;
    size_t raw = synor__llm_data(G, (uint64_t)(4 * T), "batch.raw.%lld", (long long)r);
    size_t ids = synor__llm_data(G, (uint64_t)(4 * T), "batch.tokens.%lld", (long long)r);
    synor__llm_spec(&t, SYNOR_OP_DATA_LOAD, SYNOR_DTYPE_INT8, SYNOR_PRIORITY_HIGH,
                    SYNOR__KIND(CPU), 0);
    snprintf(t.id, sizeof t.id, "data_load.%lld", (long long)r);
    t.op.dims.elements = 4 * T;
    t.cons[t.n_cons++] = raw;
    t.prod[t.n_prod++] = ids;
    synor__llm_add(G, &t, NULL, 0);
    /* forward: embedding, 4 pieces per layer, output projection, loss */
    size_t f_task[4 * 512 + 2], f_in[4 * 512 + 2], f_w[4 * 512 + 2], n_f = 0;
    uint64_t hb = synor__llm_hidden_bytes(G, nb, seq);
    size_t h = synor__llm_data(G, hb, "act.embed.%lld", (long long)r);
    synor__llm_spec(&t, SYNOR_OP_EMBEDDING, dt, SYNOR_PRIORITY_HIGH, SYNOR__KIND(GPU), 0);
    snprintf(t.id, sizeof t.id, "embed.%lld", (long long)r);
    t.group = in_group;
    t.op.dims.batch = nb;
    t.op.dims.seq = seq;
    t.op.dims.hidden = H;
    t.cons[t.n_cons++] = ids;
    t.cons[t.n_cons++] = w_emb_out[0];
    t.prod[t.n_prod++] = h;
    f_in[n_f] = ids;
    f_w[n_f] = w_emb_out[0];
    f_task[n_f++] = synor__llm_add(G, &t, NULL, 0);
    for (int64_t l = 0; l < L && !G->rc; l++) {
        static const char *const what[4] = {"qkv", "attn", "wo", "ffn"};
        for (int p = 0; p < 4; p++) {
            uint64_t ob = p == 0   ? (uint64_t)((double)T * (double)qkv_n * G->s)
                          : p == 1 ? (uint64_t)((double)T * (double)(m->heads * G->d) * G->s)
                                   : hb;
            size_t o = synor__llm_data(G, ob, "act.%lld.%s.%lld", (long long)l, what[p],
                                       (long long)r);
            synor_op_type op = p == 1   ? SYNOR_OP_FLASH_ATTENTION
                               : p == 3 ? SYNOR_OP_FEED_FORWARD
                                        : SYNOR_OP_MATMUL;
            synor__llm_spec(&t, op, dt, SYNOR_PRIORITY_CRITICAL, SYNOR__KIND(GPU), 0);
            snprintf(t.id, sizeof t.id, "%s.%lld.%lld", what[p], (long long)l, (long long)r);
            t.group = in_group;
            if (p == 0 || p == 2) {
                t.op.dims.m = T;
                t.op.dims.n = p == 0 ? qkv_n : H;
                t.op.dims.k = p == 0 ? H : m->heads * G->d;
            } else {
                synor__llm_layer_dims(G, &t.op, nb, seq, seq);
            }
            size_t wt = p == 1 ? (size_t)-1 : w_layer[3 * l + (p == 0 ? 0 : p == 2 ? 1 : 2)];
            t.cons[t.n_cons++] = h;
            if (wt != (size_t)-1)
                t.cons[t.n_cons++] = wt;
            t.prod[t.n_prod++] = o;
            f_in[n_f] = h;
            f_w[n_f] = wt;
            f_task[n_f++] = synor__llm_add(G, &t, NULL, 0);
            h = o;
        }
    }
    size_t logits = synor__llm_data(G, (uint64_t)((double)T * (double)m->vocab * G->s),
                                    "act.logits.%lld", (long long)r);
    synor__llm_spec(&t, SYNOR_OP_OUTPUT_PROJECTION, dt, SYNOR_PRIORITY_HIGH, SYNOR__KIND(GPU),
                    0);
    snprintf(t.id, sizeof t.id, "lm_head.%lld", (long long)r);
    t.group = in_group;
    t.op.dims.batch = nb;
    t.op.dims.seq = seq;
    t.op.dims.hidden = H;
    t.op.dims.vocab = m->vocab;
    t.cons[t.n_cons++] = h;
    t.cons[t.n_cons++] = w_emb_out[1];
    t.prod[t.n_prod++] = logits;
    f_in[n_f] = h;
    f_w[n_f] = w_emb_out[1];
    f_task[n_f++] = synor__llm_add(G, &t, NULL, 0);
    size_t grad = synor__llm_data(G, (uint64_t)((double)T * (double)m->vocab * G->s),
                                  "grad.logits.%lld", (long long)r);
    synor__llm_spec(&t, SYNOR_OP_CROSS_ENTROPY_LOSS, dt, SYNOR_PRIORITY_HIGH, SYNOR__KIND(GPU),
                    0);
    snprintf(t.id, sizeof t.id, "loss.%lld", (long long)r);
    t.group = in_group;
    t.op.dims.batch = nb;
    t.op.dims.seq = seq;
    t.op.dims.vocab = m->vocab;
    t.cons[t.n_cons++] = logits;
    t.prod[t.n_prod++] = grad;
    synor__llm_add(G, &t, NULL, 0);
    /* backward in reverse; bucket 0 the embedding, 1..L the layers, L+1 the
     * output projection */
    for (size_t k = n_f; k-- > 0 && !G->rc;) {
        const synor_task *ft = synor_workload_task(G->w, f_task[k]);
        synor__llm_spec(&t, ft->op.type, ft->op.dtype, ft->priority, SYNOR__KIND(GPU), 0);
        t.op.dims = ft->op.dims;
        t.op.backward = 1;
        t.group = in_group;
        snprintf(t.id, sizeof t.id, "d.%s", ft->id);
        t.cons[t.n_cons++] = grad;
        t.cons[t.n_cons++] = f_in[k];
        size_t bi = k == 0 ? 0 : k == n_f - 1 ? (size_t)L + 1 : 1 + (k - 1) / 4;
        bucket *B = &b[bi];
        if (f_w[k] != (size_t)-1) {
            t.cons[t.n_cons++] = f_w[k];
            /* adding data may move the workload's data: copy what we need */
            const synor_data *wd = synor_workload_data(G->w, f_w[k]);
            uint64_t wbytes = wd->bytes;
            B->grads[B->n_grads] = synor__llm_data(G, wbytes, "grad.%s.%lld", wd->name,
                                                   (long long)r);
            t.prod[t.n_prod++] = B->grads[B->n_grads++];
            B->params += (double)wbytes / G->s;
        }
        /* the bucket's last gradient (in backward order) also sends */
        int last = k == 0 || k == n_f - 1 || (k - 1) % 4 == 0;
        if (last && dp > 1 && grouped) {
            double bytes = coll == SYNOR_COLLECTIVE_RING ? B->params * G->s / (double)dp
                                                         : B->params * G->s;
            B->send = synor__llm_data(G, (uint64_t)bytes, "send.%zu.%lld", bi, (long long)r);
            t.prod[t.n_prod++] = B->send;
        }
        if (k > 0) {
            grad = synor__llm_data(G, synor_workload_data(G->w, f_in[k])->bytes, "grad.%s",
                                   synor_workload_data(G->w, f_in[k])->name);
            t.prod[t.n_prod++] = grad;
        }
        size_t task = synor__llm_add(G, &t, NULL, 0);
        if (last)
            B->last = task;
    }
}

/* A reduction or gather step on rank r: consumes what rank `from` sends
 * (and the rank's own earlier step, ordered by dep), produces what it
 * passes on. */
static size_t step(gen *G, const char *id, int64_t r, double elements, size_t in, size_t dep,
                   const size_t *own, size_t n_own, uint64_t out_bytes, size_t *out)
{
    tspec t;
    char grp[32];
    synor__llm_spec(&t, SYNOR_OP_ALL_REDUCE, G->m->dtype, SYNOR_PRIORITY_CRITICAL,
                    SYNOR__KIND(GPU), 0);
    snprintf(t.id, sizeof t.id, "%s", id);
    t.group = group_name(grp, sizeof grp, "dp", r);
    t.op.dims.elements = (int64_t)(elements > 1 ? elements : 1);
    t.cons[t.n_cons++] = in;
    for (size_t k = 0; k < n_own && t.n_cons < SYNOR__LLM_MAX_REFS; k++)
        t.cons[t.n_cons++] = own[k];
    if (dep != (size_t)-1)
        t.deps[t.n_deps++] = dep;
    *out = synor__llm_data(G, out_bytes, "%s.out", id);
    t.prod[t.n_prod++] = *out;
    return synor__llm_add(G, &t, NULL, 0);
}

static size_t adamw(gen *G, const char *id, int64_t r, double params, const size_t *in,
                    size_t n_in, uint64_t out_bytes)
{
    tspec t;
    char grp[32];
    synor__llm_spec(&t, SYNOR_OP_OPTIMIZER_STEP, SYNOR_DTYPE_FP32, SYNOR_PRIORITY_HIGH,
                    SYNOR__KIND(GPU), 0);
    snprintf(t.id, sizeof t.id, "%s", id);
    t.group = group_name(grp, sizeof grp, "dp", r);
    t.op.dims.elements = (int64_t)(params > 1 ? params : 1);
    for (size_t k = 0; k < n_in && t.n_cons < SYNOR__LLM_MAX_REFS - 1; k++)
        t.cons[t.n_cons++] = in[k];
    /* fp32 master weights, first and second moments: 12 bytes a parameter */
    t.cons[t.n_cons++] = synor__llm_data(G, (uint64_t)(params * 12), "%s.state", id);
    t.prod[t.n_prod++] = synor__llm_data(G, out_bytes, "%s.out", id);
    return synor__llm_add(G, &t, NULL, 0);
}

static void ring(gen *G, size_t bi, int64_t dp, bucket *const *B)
{
    double P = B[0][bi].params, chunk = P / (double)dp;
    uint64_t cb = (uint64_t)(chunk * G->s);
    size_t prev_out[64], prev_task[64], out[64], task[64];
    char id[64];
    for (int64_t r = 0; r < dp; r++) { /* step 0: the neighbour's chunk of its gradient */
        int64_t from = (r + dp - 1) % dp;
        snprintf(id, sizeof id, "rs.%zu.%lld.0", bi, (long long)r);
        task[r] = step(G, id, r, chunk, B[from][bi].send, (size_t)-1, B[r][bi].grads,
                       B[r][bi].n_grads, cb, &out[r]);
    }
    for (int64_t k = 1; k < dp - 1; k++) {
        memcpy(prev_out, out, (size_t)dp * sizeof *out);
        memcpy(prev_task, task, (size_t)dp * sizeof *task);
        for (int64_t r = 0; r < dp; r++) {
            snprintf(id, sizeof id, "rs.%zu.%lld.%lld", bi, (long long)r, (long long)k);
            task[r] = step(G, id, r, chunk, prev_out[(r + dp - 1) % dp], prev_task[r], NULL, 0,
                           cb, &out[r]);
        }
    }
    size_t upd[64];
    for (int64_t r = 0; r < dp; r++) { /* the rank's reduced chunk, updated */
        snprintf(id, sizeof id, "adamw.%zu.%lld", bi, (long long)r);
        adamw(G, id, r, chunk, &out[r], 1, cb);
        task[r] = synor_workload_count(G->w) - 1;
        upd[r] = synor_workload_data_count(G->w) - 1;
    }
    memcpy(out, upd, (size_t)dp * sizeof *out);
    for (int64_t k = 0; k < dp - 1; k++) {
        memcpy(prev_out, out, (size_t)dp * sizeof *out);
        memcpy(prev_task, task, (size_t)dp * sizeof *task);
        for (int64_t r = 0; r < dp; r++) {
            snprintf(id, sizeof id, "ag.%zu.%lld.%lld", bi, (long long)r, (long long)k);
            task[r] = step(G, id, r, chunk, prev_out[(r + dp - 1) % dp], prev_task[r], NULL, 0,
                           cb, &out[r]);
        }
    }
}

static void tree(gen *G, size_t bi, int64_t dp, bucket *const *B)
{
    double P = B[0][bi].params;
    uint64_t nb = (uint64_t)(P * G->s);
    int64_t root = (int64_t)bi % dp;
    size_t have[64], last[64];
    char id[64];
    for (int64_t r = 0; r < dp; r++) {
        have[r] = B[r][bi].send;
        last[r] = B[r][bi].last;
    }
    /* reduce: at distance 2^j, rank rel receives from rel + 2^j */
    int64_t span = 1;
    for (; span < dp; span *= 2)
        for (int64_t rel = 0; rel + span < dp; rel += 2 * span) {
            int64_t r = (root + rel) % dp, from = (root + rel + span) % dp;
            snprintf(id, sizeof id, "reduce.%zu.%lld.%lld", bi, (long long)r, (long long)span);
            last[r] = step(G, id, r, P, have[from], last[r],
                           span == 1 ? B[r][bi].grads : NULL, span == 1 ? B[r][bi].n_grads : 0,
                           nb, &have[r]);
        }
    snprintf(id, sizeof id, "adamw.%zu.%lld", bi, (long long)root);
    last[root] = adamw(G, id, root, P, &have[root], 1, nb);
    have[root] = synor_workload_data_count(G->w) - 1;
    /* broadcast down the same tree */
    for (span /= 2; span >= 1; span /= 2)
        for (int64_t rel = 0; rel + span < dp; rel += 2 * span) {
            int64_t r = (root + rel + span) % dp, from = (root + rel) % dp;
            snprintf(id, sizeof id, "bcast.%zu.%lld.%lld", bi, (long long)r, (long long)span);
            last[r] = step(G, id, r, 1, have[from], last[r], NULL, 0, nb, &have[r]);
        }
}

/* Micro-batches accumulated: one AdamW per bucket on every micro-batch's
 * gradients (no group: the planner places each layer). */
static void accumulate(gen *G, size_t bi, int64_t mb, bucket *const *B)
{
    size_t in[4 * 64], n = 0;
    for (int64_t r = 0; r < mb; r++)
        for (size_t k = 0; k < B[r][bi].n_grads; k++)
            in[n++] = B[r][bi].grads[k];
    tspec t;
    synor__llm_spec(&t, SYNOR_OP_OPTIMIZER_STEP, SYNOR_DTYPE_FP32, SYNOR_PRIORITY_HIGH,
                    SYNOR__KIND(GPU), 0);
    snprintf(t.id, sizeof t.id, "adamw.%zu", bi);
    double P = B[0][bi].params;
    t.op.dims.elements = (int64_t)(P > 1 ? P : 1);
    in[n++] = synor__llm_data(G, (uint64_t)(P * 12), "adamw.%zu.state", bi);
    t.prod[t.n_prod++] = synor__llm_data(G, (uint64_t)(P * G->s), "adamw.%zu.out", bi);
    synor__llm_add(G, &t, in, n);
}

static int training(const synor_llm_config *m, int64_t batch, int64_t seq, int64_t dp,
                    synor_collective coll, int grouped, synor_workload **out);

int synor_decompose_llm_training_dp(const synor_llm_config *m, int64_t batch, int64_t seq,
                                    int64_t dp, synor_collective coll, synor_workload **out)
{
    return training(m, batch, seq, dp, coll, 1, out);
}

int synor_decompose_llm_training_micro(const synor_llm_config *m, int64_t batch, int64_t seq,
                                       int64_t micro_batches, synor_workload **out)
{
    return training(m, batch, seq, micro_batches, SYNOR_COLLECTIVE_RING, 0, out);
}

static int training(const synor_llm_config *m, int64_t batch, int64_t seq, int64_t dp,
                    synor_collective coll, int grouped, synor_workload **out)
{
    const char *unit = grouped ? "replicas" : "micro-batches";
    if (dp < 1 || dp > 64)
        return synor__error(SYNOR_EINVAL, "%s: %lld, not in [1, 64]",
                            grouped ? "data-parallel replicas" : "micro-batches", (long long)dp);
    if (batch <= 0 || batch % dp)
        return synor__error(SYNOR_EINVAL, "batch %lld does not split into %lld %s",
                            (long long)batch, (long long)dp, unit);
    if (seq <= 0 || seq > m->context)
        return synor__error(SYNOR_EINVAL, "seq must be in [1, context]");
    if (m->layers > 512)
        return synor__error(SYNOR_EINVAL, "at most 512 layers");
    gen G;
    synor_workload *w;
    char what[64];
    if (grouped)
        snprintf(what, sizeof what, "training iteration, %lld data-parallel replicas (%s)",
                 (long long)dp, coll == SYNOR_COLLECTIVE_TREE ? "tree" : "ring");
    else
        snprintf(what, sizeof what, "training iteration, %lld micro-batches", (long long)dp);
    int rc = synor__llm_start(&G, m, what, &w);
    if (rc)
        return rc;
    const int64_t L = m->layers, H = m->hidden, qkv_n = (m->heads + 2 * G.g) * G.d;
    size_t w_eo[2], *w_layer = synor__calloc((size_t)(3 * L), sizeof *w_layer);
    bucket **B = synor__calloc((size_t)dp, sizeof *B);
    for (int64_t r = 0; B && r < dp; r++)
        if (!(B[r] = synor__calloc((size_t)L + 2, sizeof **B)))
            G.rc = synor__error(SYNOR_ENOMEM, "out of memory");
    if (!w_layer || !B)
        G.rc = synor__error(SYNOR_ENOMEM, "out of memory");
    w_eo[0] = synor__llm_data(&G, (uint64_t)((double)m->vocab * H * G.s), "w.embed");
    w_eo[1] = synor__llm_data(&G, (uint64_t)((double)m->vocab * H * G.s), "w.output");
    for (int64_t l = 0; l < L && !G.rc; l++) {
        w_layer[3 * l] = synor__llm_data(&G, (uint64_t)((double)H * qkv_n * G.s), "w.%lld.qkv",
                                         (long long)l);
        w_layer[3 * l + 1] = synor__llm_data(&G, (uint64_t)((double)m->heads * G.d * H * G.s),
                                             "w.%lld.wo", (long long)l);
        w_layer[3 * l + 2] = synor__llm_data(&G, (uint64_t)(3.0 * H * m->ffn * G.s),
                                             "w.%lld.ffn", (long long)l);
    }
    for (int64_t r = 0; r < dp && !G.rc; r++)
        replica(&G, r, batch / dp, seq, dp, coll, grouped, w_eo, w_layer, B[r]);
    for (size_t bi = 0; bi < (size_t)L + 2 && !G.rc; bi++) {
        if (!grouped) {
            accumulate(&G, bi, dp, B);
        } else if (dp == 1) {
            char id[64];
            snprintf(id, sizeof id, "adamw.%zu.0", bi);
            adamw(&G, id, 0, B[0][bi].params, B[0][bi].grads, B[0][bi].n_grads,
                  (uint64_t)(B[0][bi].params * G.s));
        } else if (coll == SYNOR_COLLECTIVE_TREE) {
            tree(&G, bi, dp, B);
        } else {
            ring(&G, bi, dp, B);
        }
    }
    for (int64_t r = 0; B && r < dp; r++)
        synor__free(B[r]);
    synor__free(B);
    synor__free(w_layer);
    return synor__llm_finish(&G, out);
}

/* ----------------------------------------------------- tensor parallel */

int synor_decompose_llm_inference_tp(const synor_llm_config *m, int64_t batch, int64_t prompt,
                                     int64_t new_tokens, int64_t tp, synor_workload **out)
{
    if (tp < 1 || tp > 64)
        return synor__error(SYNOR_EINVAL, "tensor-parallel shards: %lld, not in [1, 64]",
                            (long long)tp);
    if (m->heads % tp || (m->kv_heads ? m->kv_heads : m->heads) % tp || m->ffn % tp ||
        m->vocab % tp)
        return synor__error(SYNOR_EINVAL,
                            "model \"%s\": heads %lld, kv heads %lld, ffn %lld and vocab %lld "
                            "must be multiples of %lld shards",
                            m->name ? m->name : "?", (long long)m->heads,
                            (long long)(m->kv_heads ? m->kv_heads : m->heads), (long long)m->ffn,
                            (long long)m->vocab, (long long)tp);
    if (batch <= 0 || prompt <= 0 || new_tokens <= 0 || prompt + new_tokens > m->context)
        return synor__error(SYNOR_EINVAL, "batch, prompt and new tokens must be positive and "
                                          "prompt + new tokens within the context");
    gen G;
    synor_workload *w;
    char what[64];
    snprintf(what, sizeof what, "inference, %lld tensor-parallel shards", (long long)tp);
    int rc = synor__llm_start(&G, m, what, &w);
    if (rc)
        return rc;
    const int64_t L = m->layers, H = m->hidden;
    const synor_dtype dt = m->dtype;
    /* each shard's slice of the model: heads / tp, kv heads / tp, ffn / tp */
    synor_llm_config part = *m;
    part.heads = m->heads / tp;
    part.kv_heads = (m->kv_heads ? m->kv_heads : m->heads) / tp;
    part.ffn = m->ffn / tp;
    uint64_t wl = (uint64_t)((synor__llm_layer_params(m) - 2.0 * H) / (double)tp * G.s);
    size_t n = (size_t)tp;
    size_t *wsh = synor__calloc((size_t)L * n, sizeof *wsh), *kv = synor__calloc((size_t)L * n,
                                                                                  sizeof *kv);
    size_t *h = synor__calloc(n, sizeof *h), *hn = synor__calloc(n, sizeof *hn);
    size_t *w_out = synor__calloc(n, sizeof *w_out), *lg = synor__calloc(n, sizeof *lg);
    size_t *tok = synor__calloc((size_t)new_tokens, sizeof *tok);
    if (!wsh || !kv || !h || !hn || !w_out || !lg || !tok)
        G.rc = synor__error(SYNOR_ENOMEM, "out of memory");
    char grp[32];
    tspec t;
    size_t w_emb = synor__llm_data(&G, (uint64_t)((double)m->vocab * H * G.s), "w.embed");
    for (int64_t l = 0; l < L && !G.rc; l++)
        for (size_t j = 0; j < n; j++)
            wsh[l * tp + (int64_t)j] = synor__llm_data(&G, wl, "w.layer%lld.%zu", (long long)l,
                                                       j);
    for (size_t j = 0; j < n; j++)
        w_out[j] = synor__llm_data(&G, (uint64_t)((double)m->vocab / (double)tp * H * G.s),
                                   "w.output.%zu", j);
    size_t text = synor__llm_data(&G, (uint64_t)(4 * batch * prompt), "text");
    size_t ids = synor__llm_tokenize(&G, batch, prompt, text);
    G.m = &part; /* shard shapes from here on (hidden stays whole) */
    G.g = part.kv_heads;
    for (int64_t k = 0; k < new_tokens && !G.rc; k++) {
        int64_t seq = k == 0 ? prompt : 1;
        /* embedding on shard 0, sent to every shard */
        size_t e = synor__llm_data(&G, synor__llm_hidden_bytes(&G, batch, seq), "h.%lld.embed",
                                   (long long)k);
        synor__llm_spec(&t, SYNOR_OP_EMBEDDING, dt, SYNOR_PRIORITY_HIGH, SYNOR__KIND(GPU), 0);
        snprintf(t.id, sizeof t.id, "embed.%lld", (long long)k);
        t.group = group_name(grp, sizeof grp, "tp", 0);
        t.op.dims.batch = batch;
        t.op.dims.seq = seq;
        t.op.dims.hidden = H;
        t.cons[t.n_cons++] = k == 0 ? ids : tok[k - 1];
        t.cons[t.n_cons++] = w_emb;
        t.prod[t.n_prod++] = e;
        synor__llm_add(&G, &t, NULL, 0);
        for (size_t j = 0; j < n; j++)
            h[j] = e;
        size_t n_in = 1; /* the layer's input: the embedding, then tp partials */
        for (int64_t l = 0; l < L && !G.rc; l++) {
            for (size_t j = 0; j < n; j++) {
                size_t in[SYNOR__LLM_MAX_REFS + 64];
                size_t c = 0;
                if (n_in == 1)
                    in[c++] = h[0];
                else
                    for (size_t x = 0; x < n; x++)
                        in[c++] = h[x];
                in[c++] = wsh[l * tp + (int64_t)j];
                if (k == 0)
                    kv[l * tp + (int64_t)j] = synor__llm_data(
                        &G, synor__llm_kv_bytes(&G, batch, prompt), "kv.%lld.%zu", (long long)l,
                        j);
                else
                    in[c++] = kv[l * tp + (int64_t)j];
                hn[j] = synor__llm_data(&G, synor__llm_hidden_bytes(&G, batch, seq),
                                        "h.%lld.%lld.%zu", (long long)k, (long long)l + 1, j);
                synor__llm_spec(&t, k == 0 ? SYNOR_OP_TRANSFORMER_LAYER : SYNOR_OP_DECODE_STEP,
                                dt, SYNOR_PRIORITY_CRITICAL, SYNOR__KIND(GPU), 0);
                snprintf(t.id, sizeof t.id, "%s.%lld.%lld.%zu", k == 0 ? "prefill" : "decode",
                         (long long)k, (long long)l, j);
                t.group = group_name(grp, sizeof grp, "tp", (int64_t)j);
                synor__llm_layer_dims(&G, &t.op, batch, seq, prompt + k);
                if (k)
                    t.op.dims.layers = 1;
                t.prod[t.n_prod++] = hn[j];
                if (k == 0)
                    t.prod[t.n_prod++] = kv[l * tp + (int64_t)j];
                else
                    t.workspace = synor__llm_kv_bytes(&G, batch, new_tokens);
                synor__llm_add(&G, &t, in, c);
            }
            memcpy(h, hn, n * sizeof *h);
            n_in = n;
        }
        /* output projection by vocabulary, then sampling over every slice */
        for (size_t j = 0; j < n && !G.rc; j++) {
            size_t in[64 + 1];
            for (size_t x = 0; x < n; x++)
                in[x] = h[x];
            in[n] = w_out[j];
            lg[j] = synor__llm_data(&G, (uint64_t)((double)batch * (double)m->vocab /
                                                    (double)tp * G.s),
                                    "logits.%lld.%zu", (long long)k, j);
            synor__llm_spec(&t, SYNOR_OP_OUTPUT_PROJECTION, dt, SYNOR_PRIORITY_CRITICAL,
                            SYNOR__KIND(GPU), 0);
            snprintf(t.id, sizeof t.id, "lm_head.%lld.%zu", (long long)k, j);
            t.group = group_name(grp, sizeof grp, "tp", (int64_t)j);
            t.op.dims.batch = batch;
            t.op.dims.seq = 1;
            t.op.dims.hidden = H;
            t.op.dims.vocab = m->vocab / tp;
            t.prod[t.n_prod++] = lg[j];
            synor__llm_add(&G, &t, in, n + 1);
        }
        tok[k] = synor__llm_data(&G, (uint64_t)(4 * batch), "token.%lld", (long long)k);
        synor__llm_spec(&t, SYNOR_OP_SAMPLING, dt, SYNOR_PRIORITY_CRITICAL, SYNOR__KIND(GPU), 0);
        snprintf(t.id, sizeof t.id, "sample.%lld", (long long)k);
        t.group = group_name(grp, sizeof grp, "tp", 0);
        t.op.dims.elements = batch * m->vocab;
        t.prod[t.n_prod++] = tok[k];
        synor__llm_add(&G, &t, lg, n);
    }
    G.m = m;
    if (!G.rc)
        synor__llm_detokenize(&G, batch, new_tokens, tok);
    synor__free(wsh);
    synor__free(kv);
    synor__free(h);
    synor__free(hn);
    synor__free(w_out);
    synor__free(lg);
    synor__free(tok);
    return synor__llm_finish(&G, out);
}
