/* test_decompose.c - LLM decomposers: parameter counts of the presets
 * against the published models, FLOPs and bytes of a prefill and a decode
 * layer worked out by hand, the shape of the inference and training graphs
 * (prefill compute-bound, decode memory-bound, backward in reverse, the
 * checkpoint asynchronous). */
#include "synor.h"
#include "test.h"

static const synor_task *find(const synor_workload *w, const char *id)
{
    long i = synor_workload_find_task(w, id);
    return i < 0 ? NULL : synor_workload_task(w, (size_t)i);
}

TEST(preset_parameter_counts)
{
    synor_llm_config m;
    ASSERT_OK(synor_llm_preset("llama-2-7b", &m));
    ASSERT_NEAR(synor_llm_params(&m), 6738415616.0, 1e-15); /* the released model */
    ASSERT_OK(synor_llm_preset("Llama-2-70B", &m));
    ASSERT_NEAR(synor_llm_params(&m), 68976648192.0, 1e-15);
    ASSERT_EQ(m.kv_heads, 8);
    ASSERT_OK(synor_llm_preset("tiny", &m));
    ASSERT_EQ(m.hidden, 288);
    ASSERT_EQ(m.layers, 6);
    ASSERT_EQ(m.heads, 6);
    ASSERT_EQ(m.vocab, 32000);
    ASSERT_EQ(m.context, 256);
    ASSERT(synor_llm_preset("gpt-5", &m) == SYNOR_ENOENT);
    ASSERT_EQ(synor_llm_preset_count(), 3);
}

TEST(inference_graph_and_counts)
{
    synor_llm_config m;
    synor_workload *w;
    ASSERT_OK(synor_llm_preset("llama-2-7b", &m));
    ASSERT_OK(synor_decompose_llm_inference(&m, 1, 512, 4, &w));
    size_t L = 32;
    ASSERT_EQ(synor_workload_count(w), 5 + L + 3 * (L + 3));
    /* prefill layer, worked by hand: 2T(4H^2 + 3HF) + 4hT^2d + 5hT^2 + 16TH */
    const synor_task *pf = find(w, "prefill.0");
    ASSERT(pf);
    ASSERT_NEAR(pf->op.work.flops, 211602636800.0, 1e-15);
    ASSERT_EQ(pf->op.type, SYNOR_OP_TRANSFORMER_LAYER);
    ASSERT(pf->has_preferred && pf->preferred == SYNOR_KIND_TPU && pf->fallback == SYNOR_KIND_GPU);
    /* decode: reads every weight of the layer (bf16) plus the KV cache of 513 tokens */
    const synor_task *dc = find(w, "decode.1.0");
    ASSERT(dc);
    ASSERT_NEAR(dc->op.work.bytes_read, 202383360.0 * 2 + 4096 * 2 + 2.0 * 513 * 32 * 128 * 2,
                1e-15);
    ASSERT(dc->op.sequential);
    ASSERT(dc->has_preferred && dc->preferred == SYNOR_KIND_LPU);
    /* prefill compute-bound, decode memory-bound */
    double ai_pf = pf->op.work.flops / (pf->op.work.bytes_read + pf->op.work.bytes_written);
    double ai_dc = dc->op.work.flops / (dc->op.work.bytes_read + dc->op.work.bytes_written);
    ASSERT(ai_pf > 200);
    ASSERT(ai_dc < 2);
    /* weights are external data, one item per layer, consumed by prefill
     * and decode of that layer */
    long wl = synor_workload_find_data(w, "w.layer0");
    ASSERT(wl >= 0);
    ASSERT_EQ(synor_workload_data(w, (size_t)wl)->producer, -1);
    ASSERT_EQ(synor_workload_data(w, (size_t)wl)->bytes, 202383360ull * 2);
    /* the decode chain: decode.2.0 waits for the token sampled at step 1 */
    const synor_task *e2 = find(w, "embed.2");
    long s1 = synor_workload_find_task(w, "sample.1");
    ASSERT(e2 && s1 >= 0);
    ASSERT_EQ(e2->n_deps, 1);
    ASSERT_EQ(e2->deps[0], (size_t)s1);
    /* tokenization and detokenization on the CPU, detokenization after every sample */
    const synor_task *dt = find(w, "detokenize");
    ASSERT(dt && dt->preferred == SYNOR_KIND_CPU);
    ASSERT_EQ(dt->n_deps, 4);
    ASSERT(synor_decompose_llm_inference(&m, 1, 4000, 200, &w) == SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "exceed the context of 4096");
    synor_workload_destroy(w);
}

TEST(training_iteration)
{
    synor_llm_config m;
    synor_workload *w;
    ASSERT_OK(synor_llm_preset("llama-2-7b", &m));
    ASSERT_OK(synor_decompose_llm_training(&m, 1, 512, &w));
    size_t L = 32, fwd = 1 + 4 * L + 1; /* embed, 4 per layer, lm_head */
    /* data_load, preprocess, tokenize, forward, loss, backward, all_reduce, adamw, checkpoint */
    ASSERT_EQ(synor_workload_count(w), 3 + fwd + 1 + fwd + 3);
    double total = synor_workload_flops(w);
    /* every backward does twice its forward */
    const synor_task *f = find(w, "ffn.7"), *b = find(w, "d.ffn.7");
    ASSERT(f && b && b->op.backward && !f->op.backward);
    ASSERT_NEAR(b->op.work.flops, 2 * f->op.work.flops, 1e-15);
    /* about 6 x matmul parameters x tokens, plus attention (a few percent) */
    double n_mm = synor_llm_params(&m) - (double)m.vocab * m.hidden - m.hidden;
    double ratio = total / (6 * n_mm * 512);
    ASSERT(ratio > 1.0 && ratio < 1.08);
    /* backward in reverse: d.lm_head first, d.embed last */
    long dl = synor_workload_find_task(w, "d.lm_head"), de = synor_workload_find_task(w, "d.embed");
    long dq0 = synor_workload_find_task(w, "d.qkv.0"), dq31 = synor_workload_find_task(w, "d.qkv.31");
    ASSERT(dl < dq31 && dq31 < dq0 && dq0 < de);
    /* all-reduce waits for every weight gradient: embed, 3 per layer, lm_head */
    const synor_task *ar = find(w, "all_reduce");
    ASSERT(ar);
    ASSERT_EQ(ar->n_deps, 1 + 3 * L + 1);
    ASSERT_EQ(ar->preferred, SYNOR_KIND_CPU);
    /* the checkpoint is asynchronous: nothing waits for it */
    long ck = synor_workload_find_task(w, "checkpoint");
    ASSERT(ck >= 0);
    ASSERT_EQ(find(w, "checkpoint")->priority, SYNOR_PRIORITY_LOW);
    for (size_t i = 0; i < synor_workload_count(w); i++)
        for (size_t k = 0; k < synor_workload_task(w, i)->n_deps; k++)
            ASSERT(synor_workload_task(w, i)->deps[k] != (size_t)ck);
    /* the attention is flash attention preferring the TPU */
    const synor_task *at = find(w, "attn.3");
    ASSERT(at && at->op.type == SYNOR_OP_FLASH_ATTENTION && at->preferred == SYNOR_KIND_TPU);
    synor_workload_destroy(w);
}

TEST(tiny_model_round_trips_through_json)
{
    synor_llm_config m;
    synor_workload *w, *v;
    ASSERT_OK(synor_llm_preset("tiny", &m));
    ASSERT_OK(synor_decompose_llm_inference(&m, 2, 64, 8, &w));
    char *s = synor_workload_to_json(w);
    ASSERT(s);
    ASSERT_OK(synor_workload_load_string(s, strlen(s), "tiny.json", &v));
    ASSERT_EQ(synor_workload_count(v), synor_workload_count(w));
    ASSERT_EQ(synor_workload_data_count(v), synor_workload_data_count(w));
    ASSERT_NEAR(synor_workload_flops(v), synor_workload_flops(w), 1e-12);
    for (size_t i = 0; i < synor_workload_count(w); i++) {
        const synor_task *a = synor_workload_task(w, i), *b = synor_workload_task(v, i);
        ASSERT_EQ(a->n_deps, b->n_deps);
        for (size_t k = 0; k < a->n_deps; k++)
            ASSERT_EQ(synor_workload_edge_bytes(w, i, a->deps[k]),
                      synor_workload_edge_bytes(v, i, b->deps[k]));
    }
    char *s2 = synor_workload_to_json(v);
    ASSERT(s2 && strcmp(s, s2) == 0);
    free(s);
    free(s2);
    synor_workload_destroy(v);
    synor_workload_destroy(w);
}

TEST_MAIN(preset_parameter_counts, inference_graph_and_counts, training_iteration,
          tiny_model_round_trips_through_json)
