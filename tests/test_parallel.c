/* test_parallel.c - data- and tensor-parallel workloads (synor/decompose.h,
 * llm_parallel.c) and colocation groups in the planners: 7B training on
 * the two-node-h100 fabric uses all four GPUs with a ring or a tree, and
 * 70B inference with TP=8 on eight H100s decodes a token close to the
 * bandwidth bound, for reasons the test spells out. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "synor.h"
#include "test.h"

static synor_catalog *cat;

static synor_catalog *catalog(void)
{
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        return NULL;
    return cat;
}

static size_t gpus_used(const synor_plan *p, const synor_fabric *f)
{
    size_t n = 0;
    for (size_t d = 0; d < p->n_devices; d++) {
        if (synor_device_kind(synor_fabric_device_at(f, d)->dev) != SYNOR_KIND_GPU)
            continue;
        for (size_t i = 0; i < p->n_tasks; i++)
            if (p->device[i] == d) {
                n++;
                break;
            }
    }
    return n;
}

TEST(data_parallel_training_uses_every_gpu)
{
    synor_fabric *f;
    synor_llm_config m;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "two-node-h100", &f));
    ASSERT_OK(synor_llm_preset("llama-2-7b", &m));
    for (int c = 0; c < 2; c++) {
        synor_workload *w;
        synor_cost *k;
        ASSERT_OK(synor_decompose_llm_training_dp(&m, 4, 512, 4, (synor_collective)c, &w));
        ASSERT_EQ(synor_workload_group_count(w), 4);
        ASSERT_OK(synor_cost_create(w, f, &k));
        synor_sched_problem *pb;
        ASSERT_OK(synor_sched_problem_from_cost(k, &pb));
        synor_plan *p;
        ASSERT_OK(synor_plan_create(k, NULL, &p));
        ASSERT_OK(synor_plan_validate(p, pb)); /* groups, weights, memory */
        ASSERT_EQ(gpus_used(p, f), 4);
        /* each replica on its own GPU */
        size_t at[4];
        for (int r = 0; r < 4; r++) {
            char id[32];
            snprintf(id, sizeof id, "embed.%d", r);
            long t = synor_workload_find_task(w, id);
            ASSERT(t >= 0);
            at[r] = p->device[t];
            for (int q = 0; q < r; q++)
                ASSERT(at[q] != at[r]);
        }
        /* the collective's steps: 2 (dp - 1) per rank and bucket (ring:
         * reduce-scatter + all-gather), or 2 log2(dp) levels (tree) */
        size_t steps = 0;
        for (size_t i = 0; i < synor_workload_count(w); i++)
            steps += synor_workload_task(w, i)->op.type == SYNOR_OP_ALL_REDUCE;
        size_t buckets = (size_t)m.layers + 2;
        ASSERT_EQ(steps, c == 0 ? buckets * 4 * 6 : buckets * (3 + 3));
        synor_trace *t;
        ASSERT_OK(synor_simulate(k, p, &t));
        ASSERT(t->makespan >= p->makespan * 0.999);
        synor_trace_destroy(t);
        synor_plan_destroy(p);
        synor_sched_problem_free(pb);
        synor_cost_destroy(k);
        synor_workload_destroy(w);
    }
    synor_fabric_destroy(f);
}

TEST(bad_parallel_degrees_are_refused)
{
    synor_llm_config m;
    synor_workload *w = NULL;
    ASSERT_OK(synor_llm_preset("llama-2-7b", &m));
    ASSERT_EQ(synor_decompose_llm_training_dp(&m, 3, 64, 2, SYNOR_COLLECTIVE_RING, &w),
              SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "batch 3 does not split into 2 replicas");
    ASSERT_EQ(synor_decompose_llm_training_dp(&m, 65, 64, 65, SYNOR_COLLECTIVE_RING, &w),
              SYNOR_EINVAL);
    ASSERT_EQ(synor_decompose_llm_inference_tp(&m, 1, 16, 4, 3, &w), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "must be multiples of 3 shards");
    ASSERT(w == NULL);
}

/* Per-token decode of Llama-2-70B with TP=8 against the bound: every shard
 * reads its eighth of the weights once per token at the H100's memory
 * bandwidth. The simulated token is slower by what the bound leaves out:
 * a kernel launch per layer step (5 us, 80 layers), the all-reduce's
 * NVLink latency per layer (one-shot: one hop, 2 us), the KV cache reads,
 * and the embedding, output projection and sampling. */
TEST(tensor_parallel_decode_is_near_the_bandwidth_bound)
{
    synor_fabric *f;
    synor_llm_config m;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "eight-h100", &f));
    ASSERT_OK(synor_llm_preset("llama-2-70b", &m));
    double ms[2];
    const int64_t n_new[2] = {8, 24};
    for (int k = 0; k < 2; k++) {
        synor_workload *w;
        synor_cost *c;
        ASSERT_OK(synor_decompose_llm_inference_tp(&m, 1, 128, n_new[k], 8, &w));
        ASSERT_EQ(synor_workload_group_count(w), 8);
        ASSERT_OK(synor_cost_create(w, f, &c));
        synor_plan *p;
        ASSERT_OK(synor_plan_create(c, NULL, &p));
        ASSERT_EQ(gpus_used(p, f), 8);
        synor_trace *t;
        ASSERT_OK(synor_simulate(c, p, &t));
        ms[k] = t->makespan;
        synor_trace_destroy(t);
        synor_plan_destroy(p);
        synor_cost_destroy(c);
        synor_workload_destroy(w);
    }
    double per_token = (ms[1] - ms[0]) / 16;
    const synor_caps *h100 = synor_device_caps(synor_fabric_device_at(f, 1)->dev);
    double bound = synor_llm_params(&m) * 2 / 8 / h100->mem_bandwidth;
    double launches = (double)m.layers * h100->launch_latency;
    printf("  70B TP=8 decode: %.3f ms a token, bound %.3f ms, launches %.3f ms\n",
           per_token * 1e3, bound * 1e3, launches * 1e3);
    ASSERT(per_token > bound);
    ASSERT(per_token < bound + launches + 0.5e-3); /* + collectives, KV, head */
    synor_fabric_destroy(f);
}

TEST(groups_in_a_workload_file_hold_together)
{
    const char *text =
        "{\"format\": \"synor-workload/1\", \"name\": \"g\", \"tasks\": [\n"
        " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"group\": \"x\"},\n"
        " {\"id\": \"b\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"group\": \"y\"},\n"
        " {\"id\": \"c\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"group\": \"x\",\n"
        "  \"deps\": [\"b\"]}]}";
    synor_workload *w;
    ASSERT_OK(synor_workload_load_string(text, strlen(text), "g.json", &w));
    ASSERT_EQ(synor_workload_group_count(w), 2);
    char *json = synor_workload_to_json(w);
    ASSERT(json && strstr(json, "\"group\": \"x\""));
    free(json);
    synor_fabric *f;
    synor_cost *c;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "four-h100", &f));
    ASSERT_OK(synor_cost_create(w, f, &c));
    synor_sched_problem *pb;
    ASSERT_OK(synor_sched_problem_from_cost(c, &pb));
    for (int s = 0; s < SYNOR_STRATEGY_COUNT; s++) {
        if (s == SYNOR_STRATEGY_PIPELINE)
            continue;
        synor_plan_options o;
        synor_plan_options_init(&o);
        o.strategy = (synor_strategy)s;
        synor_plan *p;
        ASSERT_OK(synor_plan_create(c, &o, &p));
        ASSERT_OK(synor_plan_validate(p, pb));
        ASSERT_EQ(p->device[0], p->device[2]); /* a and c: group x */
        if (s == SYNOR_STRATEGY_HEFT)
            ASSERT(p->device[0] != p->device[1]); /* x and y spread */
        synor_plan_destroy(p);
    }
    /* a plan that splits a group does not validate */
    synor_plan_options o;
    synor_plan_options_init(&o);
    synor_plan *p;
    ASSERT_OK(synor_plan_create(c, &o, &p));
    size_t dev[3];
    memcpy(dev, p->device, sizeof dev);
    dev[2] = dev[0] == 1 ? 2 : 1;
    synor_plan split = *p;
    split.device = dev;
    ASSERT(synor_plan_validate(&split, pb) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "of group");
    synor_plan_destroy(p);
    synor_sched_problem_free(pb);
    synor_cost_destroy(c);
    synor_fabric_destroy(f);
    synor_workload_destroy(w);
    /* an empty group name */
    const char *bad = "{\"format\": \"synor-workload/1\", \"name\": \"g\", \"tasks\": [\n"
                      " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 1}, "
                      "\"group\": \"\"}]}";
    ASSERT(synor_workload_load_string(bad, strlen(bad), "bad.json", &w) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "bad.json:2:");
    ASSERT_CONTAINS(synor_errmsg(), "group: an empty name");
}

TEST_MAIN(data_parallel_training_uses_every_gpu, bad_parallel_degrees_are_refused,
          tensor_parallel_decode_is_near_the_bandwidth_bound,
          groups_in_a_workload_file_hold_together)
