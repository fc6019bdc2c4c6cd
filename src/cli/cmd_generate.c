/* cmd_generate.c - `synor generate`: text from a model on this machine's
 * CPU workers (and, with --gpu-layers, a CUDA GPU), streamed to the
 * terminal as it is generated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"
#include "serve/serve_api.h"
#include "synor/llm.h"

static void help(void)
{
    printf("usage: synor generate -m MODEL [-p PROMPT] [-n N] [--temp T] [--top-k K]\n"
           "                      [--top-p P] [--seed S] [--threads N] [--tokenizer FILE]\n"
           "                      [--draft MODEL] [--lookup N] [--speculate K] [--draft-pmin P]\n"
           "                      [--same-draws] [--json | --json-schema FILE]\n"
           "                      [--presence-penalty X] [--frequency-penalty X]\n"
           "                      [--logit-bias ID=BIAS]...\n"
           "                      [--gpu-layers N|all|auto|plan]\n"
           "                      [--gpu N|openclN] [--split P,D] [--kv-type f32|f16]\n"
           "                      [--report [--simulate]] [--quiet]\n"
           "                      [--chat [--system TEXT] [--chat-template NAME]]\n\n"
           "Generates text from a Llama-architecture model: a GGUF file (F32, F16, BF16,\n"
           "Q8_0, Q4_0) or a llama2.c checkpoint (versions 0-2, with its tokenizer.bin).\n"
           "The prompt is run as one batch, then one token at a time, each on the runtime's\n"
           "CPU workers; the text streams to standard output, and a line of figures goes to\n"
           "standard error at the end (docs/LLM.md).\n\n"
           "  -m, --model MODEL  the model file\n"
           "  -p, --prompt TEXT  the prompt (default: empty, generation starts from BOS)\n"
           "  -n N               tokens to generate (default 256; stops early at EOS)\n"
           "  --temp T           temperature; 0 (default) is greedy\n"
           "  --top-k K          sample from the K most likely tokens (0: all, default)\n"
           "  --top-p P          nucleus sampling, 0 < P <= 1 (default 0.9 when sampling)\n"
           "  --seed S           random seed for sampling (default 1)\n"
           "  --threads N        CPU workers (default: one per core)\n"
           "  --tokenizer FILE   llama2.c: the tokenizer.bin (default: beside the model)\n"
           "  --draft MODEL      speculative decoding: MODEL (same vocabulary; a smaller model\n"
           "                     or this one quantized) proposes tokens the model checks in\n"
           "                     one batch; the output distribution stays the model's (greedy:\n"
           "                     the same tokens). The figures add the acceptance rate.\n"
           "  --lookup N         speculative decoding with the lookup draft: the context's\n"
           "                     last N tokens (N down to 2; N 2..16) found earlier in the\n"
           "                     context propose what followed them there, at no model's\n"
           "                     cost; with --draft, the model drafts the rounds it misses\n"
           "  --speculate K      tokens proposed per check (default 4, 1..32)\n"
           "  --draft-pmin P     the draft model stops proposing when its most likely next\n"
           "                     token's probability is below P (0 < P <= 1; default 0: always\n"
           "                     K): fewer wasted draft steps where it is unsure; the output\n"
           "                     is still the model's\n"
           "  --same-draws       sampled rounds take the sampler's own draws (a proposal is\n"
           "                     accepted when the model's draw gives the same token), so\n"
           "                     the text is the one this seed gives without a draft (as\n"
           "                     synor serve's rounds); default: the standard acceptance rule\n"
           "                     (the same distribution, another text, acceptance a little\n"
           "                     higher)\n"
           "  --json             the answer is one JSON object (constrained decoding, as synor\n"
           "                     serve's response_format json_object): tokens that cannot\n"
           "                     continue one are never drawn; EOS once it is closed\n"
           "  --json-schema FILE the answer is an object the JSON Schema in FILE allows\n"
           "                     (docs/LLM.md lists the keywords; others are refused)\n"
           "  --presence-penalty X, --frequency-penalty X\n"
           "                     OpenAI's penalties (-2..2): a token generated c times has\n"
           "                     its logit lowered by c * frequency + presence\n"
           "  --logit-bias ID=BIAS  add BIAS (-100..100) to token ID's logit before each\n"
           "                     draw (OpenAI's logit_bias; repeatable, at most 1024)\n"
           "                     (these run the request through the scheduler, as synor\n"
           "                     serve does; not with speculative decoding or --report)\n");
    printf("  --gpu-layers N|all|auto\n"
           "                     the matrix products of the last N transformer blocks run on\n"
           "                     a CUDA GPU with cuBLAS (as llama.cpp's -ngl), weights resident\n"
           "                     there in fp32; all (or N >= the layers): every block and the\n"
           "                     classifier; auto: as many as fit in the GPU's memory. Attention\n"
           "                     and the KV cache stay on the CPU. Default 0: CPU only (a draft\n"
           "                     model stays there)\n"
           "  --gpu-layers plan  the split planner: every layer that fits uploaded (as auto),\n"
           "                     then a short calibration times each layer on the CPU and on\n"
           "                     the GPU for a batch of the prompt's rows and for one row, and\n"
           "                     picks for prefill and for decode apart how many of the last\n"
           "                     layers the GPU runs; prints the decision and its estimate\n"
           "  --split P,D        of the layers uploaded, P on the GPU for batches of several\n"
           "                     rows (the prompt), D for one row (decode)\n"
           "  --report           the utilization report and timeline of the run (every task\n"
           "                     of the engine on each CPU worker, the GPU's products and\n"
           "                     copies) on standard error\n"
           "  --simulate         with --report: the same tasks simulated on this machine's\n"
           "                     fabric (one device per CPU worker, the GPU), each with the\n"
           "                     time it measured; that report, then a line comparing the\n"
           "                     simulated makespan with the real one\n"
           "  --gpu N|cudaN|openclN  which GPU: CUDA device N (default 0, as synor devices\n"
           "                     lists them), or OpenCL device N (the engine's own kernel;\n"
           "                     PoCL's CPU device counts)\n"
           "  --kv-type f32|f16  the KV cache's element type (default f32; f16: half its\n"
           "                     memory and attention's reads, keys and values rounded to\n"
           "                     F16, as llama.cpp's default)\n"
           "  --chat             a conversation: each line of standard input is a user turn\n"
           "                     (a line ending in \\ goes on to the next; -p: the first\n"
           "                     turn), answered in the model's chat template (as synor serve's\n"
           "                     /v1/chat/completions) up to -n tokens or the end of the turn;\n"
           "                     the earlier turns' positions come from the prefix cache\n"
           "  --system TEXT      with --chat: a system message first\n"
           "  --chat-template NAME  with --chat: auto (default: the model's own), plain,\n"
           "                     chatml, llama2 or zephyr\n"
           "  --quiet            no figures line\n"
           "Exit status: 0 success, 1 failure (a bad model file), 2 usage error.\n");
}

static int print_token(int32_t token, const char *text, size_t len, void *user)
{
    (void)token;
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

int cli_generate(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *model = NULL, *prompt = "", *tokenizer = NULL, *draft = NULL;
    const char *system = NULL, *chat_template = NULL;
    unsigned gpu = 0, gpu_backend = SYNOR_LLM_GPU_CUDA, kv_type = SYNOR_LLM_KV_F32;
    unsigned long long n = 256, topk = 0, seed = 1, threads = 0, spec = 4, lookup = 0,
                       gpu_layers = 0;
    double temp = 0, topp = 0.9, pmin = 0, pres = 0, freq = 0;
    int quiet = 0, plan = 0, report = 0, simulate = 0, same_draws = 0, split_p = -1, split_d = -1;
    int json = 0, n_bias = 0, chat = 0;
    const char *schema_file = NULL;
    static int32_t bias_tok[SYNOR_LLM_MAX_BIAS];
    static float bias_val[SYNOR_LLM_MAX_BIAS];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = CLI_OK;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
            continue;
        } else if (!strcmp(a, "--report")) {
            report = 1;
            continue;
        } else if (!strcmp(a, "--simulate")) {
            simulate = 1;
            continue;
        } else if (!strcmp(a, "--same-draws")) {
            same_draws = 1;
            continue;
        } else if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        } else if (!strcmp(a, "--chat")) {
            chat = 1;
            continue;
        }
        if (!v)
            return cli_usage_error("generate", "%s needs a value", a);
        if (!strcmp(a, "-m") || !strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt"))
            prompt = v;
        else if (!strcmp(a, "--tokenizer"))
            tokenizer = v;
        else if (!strcmp(a, "--system"))
            system = v;
        else if (!strcmp(a, "--chat-template"))
            chat_template = v;
        else if (!strcmp(a, "--draft"))
            draft = v;
        else if (!strcmp(a, "--lookup"))
            r = cli_parse_uint("generate", a, v, 2, 16, &lookup);
        else if (!strcmp(a, "--speculate"))
            r = cli_parse_uint("generate", a, v, 1, 32, &spec);
        else if (!strcmp(a, "--draft-pmin"))
            r = cli_parse_double("generate", a, v, 0, 1, &pmin);
        else if (!strcmp(a, "-n"))
            r = cli_parse_uint("generate", a, v, 0, 1u << 24, &n);
        else if (!strcmp(a, "--temp"))
            r = cli_parse_double("generate", a, v, 0, 100, &temp);
        else if (!strcmp(a, "--top-k"))
            r = cli_parse_uint("generate", a, v, 0, 1u << 24, &topk);
        else if (!strcmp(a, "--top-p"))
            r = cli_parse_double("generate", a, v, 1e-9, 1, &topp);
        else if (!strcmp(a, "--seed"))
            r = cli_parse_uint("generate", a, v, 0, UINT64_MAX, &seed);
        else if (!strcmp(a, "--gpu-layers")) {
            if (!strcmp(v, "all"))
                gpu_layers = SYNOR_LLM_GPU_ALL;
            else if (!strcmp(v, "auto") || !strcmp(v, "plan")) {
                gpu_layers = (unsigned long long)-1; /* SYNOR_LLM_GPU_AUTO */
                plan = !strcmp(v, "plan");
            } else {
                r = cli_parse_uint("generate", a, v, 0, SYNOR_LLM_GPU_ALL, &gpu_layers);
                plan = 0;
            }
        } else if (!strcmp(a, "--split")) {
            char tail;
            if (sscanf(v, "%d,%d%c", &split_p, &split_d, &tail) != 2 || split_p < 0 || split_d < 0)
                return cli_usage_error("generate", "--split '%s': expected P,D (two counts of "
                                       "layers, e.g. 6,0)", v);
        } else if (!strcmp(a, "--gpu"))
            r = cli_parse_gpu("generate", a, v, &gpu, &gpu_backend);
        else if (!strcmp(a, "--json-schema"))
            schema_file = v, json = 1;
        else if (!strcmp(a, "--presence-penalty"))
            r = cli_parse_double("generate", a, v, -2, 2, &pres);
        else if (!strcmp(a, "--frequency-penalty"))
            r = cli_parse_double("generate", a, v, -2, 2, &freq);
        else if (!strcmp(a, "--logit-bias")) {
            long id;
            double b;
            char tail;
            if (sscanf(v, "%ld=%lf%c", &id, &b, &tail) != 2 || id < 0 || id > INT32_MAX ||
                !(b >= -100 && b <= 100))
                return cli_usage_error("generate", "--logit-bias '%s': expected ID=BIAS (a "
                                       "token id, a bias in -100..100)", v);
            if (n_bias == SYNOR_LLM_MAX_BIAS)
                return cli_usage_error("generate", "more than %d --logit-bias",
                                       SYNOR_LLM_MAX_BIAS);
            bias_tok[n_bias] = (int32_t)id;
            bias_val[n_bias++] = (float)b;
        } else if (!strcmp(a, "--threads"))
            r = cli_parse_uint("generate", a, v, 1, 1024, &threads);
        else if (!strcmp(a, "--kv-type")) {
            if (synor_llm_kv_type_parse(v, &kv_type))
                return cli_usage_error("generate", "--kv-type: %s", synor_errmsg());
        } else
            return cli_usage_error("generate", "unexpected argument '%s'", a);
        if (r != CLI_OK)
            return r;
        i++;
    }
    if (!model)
        return cli_usage_error("generate", "no model: give -m MODEL");
    if (split_p >= 0 && (plan || gpu_layers == 0))
        return cli_usage_error("generate", "--split needs --gpu-layers N, all or auto (plan "
                               "chooses the split itself)");
    if (simulate && !report)
        return cli_usage_error("generate", "--simulate needs --report");
    if (pmin > 0 && !draft)
        return cli_usage_error("generate", "--draft-pmin needs --draft MODEL");
    if (same_draws && !draft && !lookup)
        return cli_usage_error("generate", "--same-draws needs --draft MODEL or --lookup N");
    if ((draft || lookup) && (plan || report))
        return cli_usage_error("generate", "--gpu-layers plan and --report are not for "
                               "speculative decoding (--draft, --lookup)");
    if ((system || chat_template) && !chat)
        return cli_usage_error("generate", "--system and --chat-template need --chat");
    synor__serve_tmpl tmpl;
    if (chat_template && synor__serve_tmpl_pick(chat_template, NULL, NULL, &tmpl))
        return cli_usage_error("generate", "--chat-template: %s", synor_errmsg());
    if (chat && (draft || lookup || report || plan || json || pres != 0 || freq != 0 || n_bias))
        return cli_usage_error("generate", "--chat does not take speculative decoding, "
                               "--report, --gpu-layers plan, JSON answers, penalties or "
                               "--logit-bias");
    int per_request = json || pres != 0 || freq != 0 || n_bias;
    if (per_request && (draft || lookup || report))
        return cli_usage_error("generate", "--json, --json-schema, the penalties and "
                               "--logit-bias are not for speculative decoding or --report");
    synor_llm_schema *schema = NULL;
    if (schema_file) { /* read before the model: a bad schema costs nothing */
        char *text = NULL;
        size_t len = 0;
        if (synor__read_file(schema_file, &text, &len) ||
            synor_llm_schema_parse(text, len, schema_file, &schema)) {
            synor__free(text);
            cli_error("--json-schema: %s", synor_errmsg());
            return CLI_FAIL;
        }
        synor__free(text);
    }
    synor_llm_load_opts lo = {.tokenizer = tokenizer};
    synor_llm *m = NULL, *dm = NULL;
    if (synor_llm_load(model, &lo, &m) || (draft && synor_llm_load(draft, NULL, &dm))) {
        cli_error("%s", synor_errmsg());
        synor_llm_destroy(m);
        return CLI_FAIL;
    }
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = (unsigned)threads;
    /* a GPU's backend only when layers are asked of it (PoCL's CPU device
     * counts as an OpenCL one: the user named it) */
    int want = gpu_layers > 0;
    cfg.opencl = want && gpu_backend == SYNOR_LLM_GPU_OPENCL ? SYNOR_OPENCL_ALL : SYNOR_OPENCL_OFF;
    cfg.cuda = want && gpu_backend == SYNOR_LLM_GPU_CUDA;
    int ngl = gpu_layers == (unsigned long long)-1 ? SYNOR_LLM_GPU_AUTO : (int)gpu_layers;
    synor_runtime *rt = NULL;
    synor_llm_ctx *c = NULL, *dc = NULL;
    synor_llm_ctx_opts co = {.gpu_layers = ngl,
                             .gpu_device = gpu,
                             .gpu_backend = gpu_backend,
                             .kv_type = kv_type,
                             .prefix_cache = chat};
    synor_llm_ctx_opts dco = {.kv_type = kv_type};
    int rc = CLI_FAIL;
    if (synor_runtime_create(&cfg, &rt) || synor_runtime_start(rt) ||
        synor_llm_ctx_create(m, rt, &co, &c) || (dm && synor_llm_ctx_create(dm, rt, &dco, &dc))) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    synor_llm_gpu_info gi;
    synor_llm_ctx_gpu(c, &gi);
    if (split_p >= 0 &&
        synor_llm_ctx_set_split(c, &(synor_llm_split){split_p, split_d})) {
        cli_error("--split: %s", synor_errmsg());
        goto out;
    }
    if (plan && !gi.layers) {
        if (!quiet)
            fprintf(stderr, "synor: split plan: no layer fits on the GPU: all on the CPU\n");
    } else if (plan) {
        long need = synor_tokenizer_encode(synor_llm_tokenizer(m), prompt, strlen(prompt), 1, 0,
                                           NULL, 0);
        /* the prompt's first batch: at most max_batch (default 512) rows
         * and the model's context */
        long cap = synor_llm_hparams_get(m)->seq_len < 512 ? synor_llm_hparams_get(m)->seq_len : 512;
        int rows = need < 1 ? 1 : need > cap ? (int)cap : (int)need;
        synor_llm_split_plan *pl = calloc(1, sizeof *pl);
        if (!pl || synor_llm_plan_split(c, rows, 3, pl)) {
            free(pl);
            cli_error("split plan: %s", pl ? synor_errmsg() : "out of memory");
            goto out;
        }
        char gname[200];
        snprintf(gname, sizeof gname, "%s (%s)", gi.device, gi.product);
        if (!quiet)
            cli_llm_print_plan(stderr, pl, gname);
        free(pl);
    }
    if (report && synor_llm_ctx_trace(c, 1)) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    synor_sampler s;
    synor_sampler_init(&s, (float)temp, (int)topk, temp > 0 ? (float)topp : 1.0f, seed);
    if (chat) {
        cli_chat_opts q = {.n_new = (int)n,
                           .sampler = s,
                           .system = system,
                           .first = prompt,
                           .chat_template = chat_template,
                           .quiet = quiet};
        rc = cli_generate_chat(m, c, &q);
        goto out;
    }
    fputs(prompt, stdout);
    if (dc || lookup) {
        synor_llm_spec_stats sp;
        synor_llm_spec_opts so = {.k = (int)spec,
                                  .lookup = (int)lookup,
                                  .p_min = (float)pmin,
                                  .same_draws = same_draws};
        if (synor_llm_generate_spec(c, dc, prompt, (int)n, &so, &s, print_token, NULL, &sp)) {
            putchar('\n');
            cli_error("%s", synor_errmsg());
            goto out;
        }
        putchar('\n');
        if (!quiet)
            fprintf(stderr,
                    "synor: speculative, draft %s %s%s, %llu proposed per check: %zu tokens in "
                    "%.3f s (%.1f tokens/s), %zu checks, acceptance %.2f (%zu of %zu); draft "
                    "%.2f ms a step, check %.2f ms\n",
                    dm ? synor_llm_format(dm) : "lookup", dm ? synor_llm_weight_type(dm) : "only",
                    dm && lookup ? " + lookup" : "", spec, sp.generated, sp.seconds,
                    sp.seconds > 0 ? (double)sp.generated / sp.seconds : 0.0, sp.steps,
                    sp.proposed ? (double)sp.accepted / (double)sp.proposed : 0.0, sp.accepted,
                    sp.proposed,
                    sp.draft_steps ? 1e3 * sp.draft_seconds / (double)sp.draft_steps : 0.0,
                    sp.steps ? 1e3 * sp.check_seconds / (double)sp.steps : 0.0);
        if (!quiet && pmin > 0)
            fprintf(stderr, "synor: draft p_min %g: %zu of %zu checks stopped short of %llu\n",
                    pmin, sp.draft_stops, sp.steps, spec);
        if (!quiet && lookup)
            fprintf(stderr,
                    "synor: lookup draft (n-gram %llu): %zu of %zu checks, acceptance %.2f (%zu "
                    "of %zu)\n",
                    lookup, sp.lookup_checks, sp.steps,
                    sp.lookup_proposed ? (double)sp.lookup_accepted / (double)sp.lookup_proposed
                                       : 0.0,
                    sp.lookup_accepted, sp.lookup_proposed);
        rc = CLI_OK;
        goto out;
    }
    if (per_request) {
        cli_gen_request q = {.n_new = (int)n,
                             .sampler = s,
                             .presence_penalty = (float)pres,
                             .frequency_penalty = (float)freq,
                             .json = json,
                             .schema = schema,
                             .bias_token = bias_tok,
                             .bias_value = bias_val,
                             .n_bias = n_bias,
                             .quiet = quiet};
        rc = cli_generate_request(m, c, prompt, &q);
        goto out;
    }
    synor_llm_gen_stats st;
    if (synor_llm_generate(c, prompt, (int)n, &s, print_token, NULL, &st)) {
        putchar('\n');
        cli_error("%s", synor_errmsg());
        goto out;
    }
    putchar('\n');
    synor_llm_ctx_gpu(c, &gi);
    if (!quiet && gi.layers)
        fprintf(stderr,
                "synor: %d of %d layers%s on %s (%s), %.1f MiB of fp32 weights there; %.1f MiB "
                "of activations up, %.1f MiB down, %llu %s calls\n",
                gi.layers, synor_llm_hparams_get(m)->n_layers, gi.classifier ? " and the classifier" : "",
                gi.device, gi.product, (double)gi.weight_bytes / 1048576,
                (double)gi.bytes_up / 1048576, (double)gi.bytes_down / 1048576,
                (unsigned long long)gi.products,
                gpu_backend == SYNOR_LLM_GPU_OPENCL ? "OpenCL kernel" : "cuBLAS");
    if (!quiet)
        fprintf(stderr,
                "synor: %s %s, %s kernels, %u workers: prompt %zu tokens in %.3f s (%.1f "
                "tokens/s), generated %zu tokens in %.3f s (%.1f tokens/s decoding)\n",
                synor_llm_format(m), synor_llm_weight_type(m), synor_llm_isa(),
                synor_runtime_worker_count(rt), st.prompt_tokens, st.prefill_s,
                st.prefill_s > 0 ? (double)st.prompt_tokens / st.prefill_s : 0.0, st.generated,
                st.decode_s, st.decode_s > 0 ? (double)st.decode_steps / st.decode_s : 0.0);
    if (report) {
        synor_llm_split sp;
        synor_llm_ctx_get_split(c, &sp);
        char strat[160];
        snprintf(strat, sizeof strat, "prefill %d, decode %d of %d layers on %s", sp.prefill,
                 sp.decode, synor_llm_hparams_get(m)->n_layers, gi.layers ? gi.device : "a GPU");
        char *text = cli_llm_report(c, rt, model, strat);
        if (text)
            fputs(text, stderr);
        free(text);
        synor_runtime_device_info host;
        unsigned cpus = synor_runtime_device_get(rt, 0, &host) == 0 ? host.workers : 1;
        if (simulate && cli_llm_simulate(g, c, cpus))
            goto out;
    }
    rc = CLI_OK;
out:
    synor_llm_schema_free(schema);
    synor_llm_ctx_destroy(dc);
    synor_llm_ctx_destroy(c);
    synor_runtime_destroy(rt);
    synor_llm_destroy(dm);
    synor_llm_destroy(m);
    return rc;
}
