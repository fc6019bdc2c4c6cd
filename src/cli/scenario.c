/* scenario.c - the workload options that plan, simulate, cost and workload
 * share: a workload file, or an LLM preset decomposed for inference or
 * training (--preset, --dtype, --batch, --prompt, --new, --train). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Shared options of plan/simulate/cost/workload: 1 consumed, 0 not ours,
 * -1 usage error (printed). */
int cli_scenario_opt(const char *cmd, scenario *sc, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char **str = !strcmp(a, "--fabric")       ? &sc->fabric
                       : !strcmp(a, "--workload")   ? &sc->workload
                       : !strcmp(a, "--preset")     ? &sc->preset
                       : !strcmp(a, "--dtype")      ? &sc->dtype
                       : !strcmp(a, "--collective") ? &sc->collective
                       : !strcmp(a, "--tiled")      ? &sc->tiled
                                                    : NULL;
    long long *num = !strcmp(a, "--batch")    ? &sc->batch
                     : !strcmp(a, "--prompt") ? &sc->prompt
                     : !strcmp(a, "--new")    ? &sc->new_tokens
                     : !strcmp(a, "--dp")     ? &sc->dp
                     : !strcmp(a, "--tp")     ? &sc->tp
                     : !strcmp(a, "--n")      ? &sc->n
                     : !strcmp(a, "--nb")     ? &sc->nb
                                              : NULL;
    if (!strcmp(a, "--train")) {
        sc->train = 1;
        return 1;
    }
    if (!str && !num)
        return 0;
    if (*i + 1 >= argc) {
        cli_usage_error(cmd, "%s needs a value", a);
        return -1;
    }
    const char *v = argv[++*i];
    if (str) {
        if (str == &sc->collective && strcmp(v, "ring") && strcmp(v, "tree")) {
            cli_usage_error(cmd, "--collective: '%s' is not ring or tree", v);
            return -1;
        }
        if (str == &sc->tiled && strcmp(v, "gemm") && strcmp(v, "cholesky")) {
            cli_usage_error(cmd, "--tiled: '%s' is not gemm or cholesky", v);
            return -1;
        }
        synor_dtype dt;
        if (str == &sc->dtype && synor_dtype_from_name(v, &dt)) {
            cli_usage_error(cmd, "--dtype: '%s' is not a data type (%s)", v, synor_errmsg());
            return -1;
        }
        *str = v;
        return 1;
    }
    unsigned long long x;
    unsigned long long max = num == &sc->batch                     ? CLI_MAX_BATCH
                             : num == &sc->dp || num == &sc->tp ? 64
                             : num == &sc->n || num == &sc->nb  ? 65536
                                                                  : CLI_MAX_TOKENS;
    if (cli_parse_uint(cmd, a, v, 1, max, &x))
        return -1;
    *num = (long long)x;
    return 1;
}

int cli_weights_opt(const char *cmd, synor_plan_options *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strcmp(a, "--weights") && strcmp(a, "--storage-gbps") && strcmp(a, "--micro-batches") &&
        strcmp(a, "--buffers") && strcmp(a, "--stages"))
        return 0;
    if (*i + 1 >= argc)
        return cli_usage_error(cmd, "missing value for '%s'", a);
    const char *v = argv[++*i];
    if (!strcmp(a, "--micro-batches") || !strcmp(a, "--buffers") || !strcmp(a, "--stages")) {
        unsigned long long n;
        if (cli_parse_uint(cmd, a, v, 1, 1000000, &n))
            return CLI_USAGE;
        *(!strcmp(a, "--buffers")  ? &o->pipeline_buffers
          : !strcmp(a, "--stages") ? &o->pipeline_stages
                                   : &o->micro_batches) = (size_t)n;
        return 1;
    }
    if (!strcmp(a, "--weights")) {
        if (synor_weights_from_name(v, &o->weights))
            return cli_usage_error(cmd, "--weights: '%s' is not preload or load", v);
        return 1;
    }
    double gbps;
    if (cli_parse_double(cmd, a, v, 1e-6, 1e6, &gbps))
        return CLI_USAGE;
    o->storage_bw = gbps * 1e9;
    return 1;
}

void cli_weights_line(const synor_plan *p, const synor_cost *c)
{
    const synor_workload *w = synor_cost_workload(c);
    double bytes = 0, total = 0;
    size_t nd = synor_workload_data_count(w);
    size_t *item = malloc((nd ? nd : 1) * sizeof *item);
    if (!item)
        return;
    size_t n_items = synor_plan_weight_data(w, item);
    for (size_t k = 0; k < n_items; k++)
        total += (double)synor_workload_data(w, item[k])->bytes;
    for (size_t l = 0; l < p->n_loads; l++)
        if (p->loads[l].item < n_items)
            bytes += (double)synor_workload_data(w, item[p->loads[l].item])->bytes;
    free(item);
    if (total <= 0)
        return;
    char tb[32], cb[32];
    cli_fmt_bytes(total, tb, sizeof tb);
    cli_fmt_bytes(bytes, cb, sizeof cb);
    if (p->weights == SYNOR_WEIGHTS_PRELOAD)
        printf("weights   preloaded: %s of inputs and weights, %zu copies (%s) put in place "
               "in %.6f s before the run (setup, not in the makespan)\n",
               tb, p->n_loads, cb, p->setup);
    else
        printf("weights   loaded during the run: %s of inputs and weights, %zu copies (%s), "
               "counted in the makespan\n",
               tb, p->n_loads, cb);
}

int cli_scenario_check(const char *cmd, const scenario *sc)
{
    if (sc->workload && sc->preset)
        return cli_usage_error(cmd, "give a workload file or --preset, not both");
    if (sc->workload && (sc->dtype || sc->train || sc->batch || sc->prompt || sc->new_tokens ||
                         sc->dp || sc->tp || sc->collective))
        return cli_usage_error(cmd, "--dtype, --batch, --prompt, --new, --train, --dp, --tp and "
                                    "--collective shape a --preset; a workload file has its own");
    if (sc->tiled && (sc->workload || sc->preset || sc->train || sc->batch || sc->prompt ||
                      sc->new_tokens || sc->dp || sc->tp || sc->collective))
        return cli_usage_error(cmd, "--tiled is a workload of its own: no --workload, --preset or "
                                    "preset options with it (only --n, --nb, --dtype)");
    if ((sc->n || sc->nb) && !sc->tiled)
        return cli_usage_error(cmd, "--n and --nb size a --tiled graph");
    if (sc->tiled && (sc->nb ? sc->nb : CLI_TILED_NB) > (sc->n ? sc->n : CLI_TILED_N))
        return cli_usage_error(cmd, "--nb %lld is larger than --n %lld",
                               sc->nb ? sc->nb : CLI_TILED_NB, sc->n ? sc->n : CLI_TILED_N);
    if (sc->tp && sc->train)
        return cli_usage_error(cmd, "--tp splits inference; training is data parallel (--dp)");
    if ((sc->dp || sc->collective) && !sc->train)
        return cli_usage_error(cmd, "--dp and --collective shape training (--train)");
    if (sc->micro && sc->dp && sc->train)
        return cli_usage_error(cmd, "--micro-batches (a pipeline's) or --dp (replicas), not both");
    return CLI_OK;
}

/* Accelerators of the fabric that train: GPUs and TPUs. */
static long long accelerators(const synor_fabric *f)
{
    long long n = 0;
    for (size_t p = 0; f && p < synor_fabric_device_count(f); p++) {
        synor_kind k = synor_device_kind(synor_fabric_device_at(f, p)->dev);
        n += k == SYNOR_KIND_GPU || k == SYNOR_KIND_TPU;
    }
    return n;
}

int cli_scenario_tiled(const scenario *sc, synor_workload **w, const char ***kernels,
                       uint64_t **footprints)
{
    synor_dtype dt = SYNOR_DTYPE_FP32;
    int rc = sc->dtype ? synor_dtype_from_name(sc->dtype, &dt) : 0;
    if (rc)
        return rc;
    return synor_exec_tiled_workload(strcmp(sc->tiled, "gemm") ? SYNOR_TILED_CHOLESKY
                                                               : SYNOR_TILED_GEMM,
                                     (size_t)(sc->n ? sc->n : CLI_TILED_N),
                                     (size_t)(sc->nb ? sc->nb : CLI_TILED_NB), dt, w, kernels,
                                     footprints);
}

int cli_scenario_load(const scenario *sc, const synor_fabric *f, synor_workload **w)
{
    if (sc->workload)
        return synor_workload_load_file(sc->workload, w);
    if (sc->tiled) {
        const char **k = NULL;
        uint64_t *fp = NULL;
        int rc = cli_scenario_tiled(sc, w, &k, &fp);
        free(k);
        free(fp);
        return rc;
    }
    synor_llm_config m;
    int rc = synor_llm_preset(sc->preset ? sc->preset : "llama-2-70b", &m);
    if (rc)
        return rc;
    if (sc->dtype && (rc = synor_dtype_from_name(sc->dtype, &m.dtype)))
        return rc;
    /* defaults: the seed's 512 in and 256 out, or what the context allows */
    long long prompt = sc->prompt ? sc->prompt : (m.context / 2 < 512 ? m.context / 2 : 512);
    long long gen = m.context - prompt < 256 ? m.context - prompt : 256;
    long long new_tokens = sc->new_tokens ? sc->new_tokens : (gen > 0 ? gen : 1);
    if (sc->train && sc->micro > 1)
        return synor_decompose_llm_training_micro(&m, sc->batch ? sc->batch : sc->micro, prompt,
                                                  sc->micro, w);
    if (sc->train) {
        long long dp = sc->dp ? sc->dp : accelerators(f);
        if (!sc->dp && (dp > 64 || (sc->batch && sc->batch % dp)))
            dp = 1; /* automatic data parallel only where it splits evenly */
        if (dp <= 1)
            return synor_decompose_llm_training(&m, sc->batch ? sc->batch : 1, prompt, w);
        synor_collective c = sc->collective && !strcmp(sc->collective, "tree")
                                 ? SYNOR_COLLECTIVE_TREE
                                 : SYNOR_COLLECTIVE_RING;
        return synor_decompose_llm_training_dp(&m, sc->batch ? sc->batch : dp, prompt, dp, c, w);
    }
    if (sc->tp > 1)
        return synor_decompose_llm_inference_tp(&m, sc->batch ? sc->batch : 1, prompt, new_tokens,
                                                sc->tp, w);
    return synor_decompose_llm_inference(&m, sc->batch ? sc->batch : 1, prompt, new_tokens, w);
}
