/* cmd_serve.c - `synor serve`: a model behind an OpenAI-compatible HTTP API
 * until SIGINT or SIGTERM. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"
#include "synor/cache.h"
#include "synor/llm.h"
#include "synor/serve.h"

/* The KV cache's type unless --kv-type says otherwise (docs/LLM.md). */
#define SERVE_KV_TYPE SYNOR_LLM_KV_F32
#define SERVE_KV_DEFAULT "f32"

static void help(void)
{
    printf("usage: synor serve -m MODEL [--host ADDR] [--port N] [--threads N] [--max-seqs N]\n"
           "                   [--max-queue N] [--ctx N] [--tokenizer FILE] [--model-name NAME]\n"
           "                   [--grace SECONDS] [--cache-mem SIZE] [--cache-file FILE]\n"
           "                   [--no-cache] [--semantic-threshold T] [--semantic-entries N]\n"
           "                   [--semantic-index auto|exact|hnsw] [--semantic-file FILE]\n"
           "                   [--predict N] [--gpu-layers N|all|auto] [--gpu N|openclN]\n"
           "                   [--kv-type f32|f16] [--no-prefix-cache] [--step-log FILE]\n"
           "                   [--draft MODEL [--speculate K] [--speculate-max N]]\n"
           "                   [--chat-template auto|plain|chatml|llama2|zephyr]\n\n"
           "Serves a Llama-architecture model (as synor generate runs) over HTTP with\n"
           "OpenAI's API: POST /v1/completions and /v1/chat/completions (whole answers or\n"
           "Server-Sent Events), GET /v1/models, /health and /metrics (Prometheus). Requests\n"
           "are batched continuously: each step of the engine runs one token of every\n"
           "request generating and chunks of new prompts (docs/LLM.md, \"Serving\").\n"
           "Prints \"synor serve: listening on http://HOST:PORT (model NAME)\" once ready;\n"
           "SIGINT or SIGTERM stop it: requests in flight finish, then it exits 0.\n\n"
           "  -m, --model MODEL   the model file (GGUF or llama2.c)\n"
           "  --host ADDR         address to listen on (default 127.0.0.1)\n"
           "  --port N            port (default 8080; 0: any free port)\n"
           "  --threads N         CPU workers of the engine (default: one per core)\n"
           "  --max-seqs N        requests generating at once (default 16)\n"
           "  --max-queue N       requests waiting beyond those; more are refused with\n"
           "                      503 \"overloaded\" (default 64)\n"
           "  --ctx N             positions per request, prompt and output (default and\n"
           "                      at most: the model's context length)\n"
           "  --tokenizer FILE    llama2.c: the tokenizer.bin (default: beside the model)\n"
           "  --model-name NAME   the model's id in the API (default: the file's name)\n"
           "  --grace SECONDS     on a stop signal, how long requests in flight may go on\n"
           "                      before they are cancelled (default 30)\n"
           "  --cache-mem SIZE    the exact-match cache's memory tier (default 64MiB): whole\n"
           "                      answers of greedy or seeded requests (not streamed) are\n"
           "                      kept and served again; /metrics counts the hits\n"
           "  --cache-file FILE   its disk tier, an SQLite file kept across restarts\n"
           "  --no-cache          no cache (and no --predict)\n"
           "  --semantic-threshold T  the semantic cache, on at a cosine similarity T in\n"
           "                      (0, 1] (e.g. 0.95): a whole (not streamed) answer is served\n"
           "                      again to a prompt whose embedding (the model's own hidden\n"
           "                      states) is that similar; the answer carries\n"
           "                      \"synor_cache\": {\"cache\": \"semantic\", \"similarity\": S}\n"
           "  --semantic-entries N  at most N answers in it (default 10000; oldest go)\n"
           "  --semantic-index auto|exact|hnsw  how it finds the most similar prompt: a scan\n"
           "                      of every entry (exact), hnswlib's HNSW graph (hnsw:\n"
           "                      approximate, faster past a few thousand entries), or the\n"
           "                      scan up to 4096 entries and the graph beyond (auto, default)\n"
           "  --semantic-file FILE  keep its answers in FILE (SQLite), reloaded at start\n");
    printf("  --predict N         request-level speculation: after a cacheable request of a\n"
           "                      \"user\", generate that user's N most likely next requests\n"
           "                      (probability >= 1/4) while idle, into the exact-match cache\n"
           "                      (at most 16; default 0: off)\n"
           "  --gpu-layers N|all|auto  the matrix products of the last N layers on a CUDA\n"
           "                      GPU (as synor generate; default 0: CPU only)\n"
           "  --gpu N|openclN     which GPU: CUDA device N (default 0) or OpenCL device N\n"
           "  --kv-type f32|f16   the KV cache's element type (default " SERVE_KV_DEFAULT "; as\n"
           "                      synor generate's: f16 halves its memory and attention's reads)\n"
           "  --no-prefix-cache   compute every prompt whole (by default a prompt that begins\n"
           "                      as an earlier one did reuses its KV blocks: n choices, a\n"
           "                      shared system prompt, a conversation's earlier turns)\n"
           "  --draft MODEL       speculative decoding: MODEL (same vocabulary; e.g. this one\n"
           "                      quantized to Q4_0) proposes tokens for the requests\n"
           "                      while few are generating, checked in one batch: the same\n"
           "                      answers (a sampled one: the draws its seed gives), fewer\n"
           "                      passes over the weights (metrics: synor_spec_*)\n"
           "  --speculate K       tokens proposed per request and round (default 4, 1..32)\n"
           "  --speculate-max N   rounds while at most N requests generate (default 2, 1..32;\n"
           "                      more: plain steps)\n"
           "  --chat-template T   how chat messages are written for the model: auto (the\n"
           "                      default) the family the model's own template shows\n"
           "                      (chatml, llama2 or zephyr), else plain (\"role: text\" lines);\n"
           "                      or one of them by name (docs/LLM.md, \"Chat templates\")\n"
           "  --step-log FILE     debugging: a line per engine step appended to FILE (when,\n"
           "                      gap since the last step, step and batch ms, rows, prompt\n"
           "                      rows, running, waiting; docs/LLM.md)\n"
           "Exit status: 0 stopped by a signal, 1 failure (a bad model file, the address\n"
           "in use, built without libmicrohttpd), 2 usage error.\n");
}

int cli_serve(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *model = NULL, *tokenizer = NULL, *host = "127.0.0.1", *name = NULL;
    unsigned long long port = 8080, threads = 0, seqs = 16, queue = 64, ctx = 0;
    unsigned gpu = 0, gpu_backend = SYNOR_LLM_GPU_CUDA, kv_type = SERVE_KV_TYPE;
    int gpu_layers = 0;
    double grace = 30, sem_threshold = 0;
    unsigned long long sem_entries = 0, predict = 0;
    unsigned sem_index = SYNOR_SEMCACHE_AUTO;
    int sem_index_set = 0;
    const char *sem_file = NULL;
    const char *cache_file = NULL, *step_log = NULL, *draft = NULL, *tmpl = NULL;
    unsigned long long spec = 0, spec_max = 0;
    uint64_t cache_mem = 0;
    int no_cache = 0, no_prefix = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = CLI_OK;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        }
        if (!strcmp(a, "--no-cache")) {
            no_cache = 1;
            continue;
        }
        if (!strcmp(a, "--no-prefix-cache")) {
            no_prefix = 1;
            continue;
        }
        if (!v)
            return cli_usage_error("serve", "%s needs a value", a);
        if (!strcmp(a, "-m") || !strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "--tokenizer"))
            tokenizer = v;
        else if (!strcmp(a, "--host"))
            host = v;
        else if (!strcmp(a, "--model-name"))
            name = v;
        else if (!strcmp(a, "--port"))
            r = cli_parse_uint("serve", a, v, 0, 65535, &port);
        else if (!strcmp(a, "--threads"))
            r = cli_parse_uint("serve", a, v, 1, 1024, &threads);
        else if (!strcmp(a, "--max-seqs"))
            r = cli_parse_uint("serve", a, v, 1, 4096, &seqs);
        else if (!strcmp(a, "--max-queue"))
            r = cli_parse_uint("serve", a, v, 1, 1u << 20, &queue);
        else if (!strcmp(a, "--ctx"))
            r = cli_parse_uint("serve", a, v, 2, 1u << 24, &ctx);
        else if (!strcmp(a, "--grace"))
            r = cli_parse_seconds("serve", a, v, &grace);
        else if (!strcmp(a, "--cache-file"))
            cache_file = v;
        else if (!strcmp(a, "--step-log"))
            step_log = v;
        else if (!strcmp(a, "--chat-template")) {
            static const char *const names[] = {"auto", "plain", "chatml", "llama2", "zephyr"};
            int ok = 0;
            for (size_t k = 0; k < sizeof names / sizeof *names; k++)
                ok |= !strcmp(v, names[k]);
            if (!ok)
                return cli_usage_error("serve", "--chat-template '%s': one of auto, plain, "
                                                "chatml, llama2, zephyr", v);
            tmpl = v;
        }
        else if (!strcmp(a, "--semantic-threshold")) {
            r = cli_parse_double("serve", a, v, 0, 1, &sem_threshold);
            if (r == CLI_OK && !(sem_threshold > 0))
                return cli_usage_error("serve", "--semantic-threshold '%s': a cosine similarity "
                                                "above 0 and at most 1", v);
        } else if (!strcmp(a, "--semantic-index")) {
            if (synor_semcache_index_parse(v, &sem_index))
                return cli_usage_error("serve", "--semantic-index: %s", synor_errmsg());
            sem_index_set = 1;
        } else if (!strcmp(a, "--semantic-file"))
            sem_file = v;
        else if (!strcmp(a, "--semantic-entries"))
            r = cli_parse_uint("serve", a, v, 1, 1u << 24, &sem_entries);
        else if (!strcmp(a, "--predict"))
            r = cli_parse_uint("serve", a, v, 1, 16, &predict);
        else if (!strcmp(a, "--gpu-layers")) {
            if (!strcmp(v, "all"))
                gpu_layers = SYNOR_LLM_GPU_ALL;
            else if (!strcmp(v, "auto"))
                gpu_layers = SYNOR_LLM_GPU_AUTO;
            else {
                unsigned long long x;
                r = cli_parse_uint("serve", a, v, 0, SYNOR_LLM_GPU_ALL, &x);
                gpu_layers = (int)x;
            }
        } else if (!strcmp(a, "--gpu"))
            r = cli_parse_gpu("serve", a, v, &gpu, &gpu_backend);
        else if (!strcmp(a, "--cache-mem")) {
            if (synor__parse_size(v, &cache_mem) || cache_mem == 0)
                return cli_usage_error("serve",
                                       "--cache-mem '%s': a size above 0 such as 64MiB "
                                       "(or --no-cache)",
                                       v);
        } else if (!strcmp(a, "--kv-type")) {
            if (synor_llm_kv_type_parse(v, &kv_type))
                return cli_usage_error("serve", "--kv-type: %s", synor_errmsg());
        } else if (!strcmp(a, "--draft"))
            draft = v;
        else if (!strcmp(a, "--speculate"))
            r = cli_parse_uint("serve", a, v, 1, 32, &spec);
        else if (!strcmp(a, "--speculate-max"))
            r = cli_parse_uint("serve", a, v, 1, 32, &spec_max);
        else
            return cli_usage_error("serve", "unexpected argument '%s'", a);
        if (r != CLI_OK)
            return r;
        i++;
    }
    if (!model)
        return cli_usage_error("serve", "no model: give -m MODEL");
    if (predict && no_cache)
        return cli_usage_error("serve", "--predict keeps its answers in the exact-match cache: "
                                        "it cannot go with --no-cache");
    if (sem_entries && !(sem_threshold > 0))
        return cli_usage_error("serve", "--semantic-entries needs --semantic-threshold");
    if (sem_index_set && !(sem_threshold > 0))
        return cli_usage_error("serve", "--semantic-index needs --semantic-threshold");
    if (sem_file && !(sem_threshold > 0))
        return cli_usage_error("serve", "--semantic-file needs --semantic-threshold");
    if (name && !*name)
        return cli_usage_error("serve", "--model-name is empty");
    if ((spec || spec_max) && !draft)
        return cli_usage_error("serve", "--speculate%s needs --draft MODEL", spec ? "" : "-max");
    if (!name) {
        const char *slash = strrchr(model, '/');
        name = slash ? slash + 1 : model;
    }
    /* The signals are taken by sigwait below, so every thread started from
     * here on (the runtime's, MHD's, the engine) has them blocked. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    synor_llm_load_opts lo = {.tokenizer = tokenizer};
    synor_llm *m = NULL, *dm = NULL;
    synor_runtime *rt = NULL;
    synor_server *srv = NULL;
    int rc = CLI_FAIL;
    if (synor_llm_load(model, &lo, &m) || (draft && synor_llm_load(draft, NULL, &dm))) {
        cli_error("%s", synor_errmsg());
        synor_llm_destroy(m);
        return CLI_FAIL;
    }
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = (unsigned)threads;
    cfg.opencl = gpu_layers && gpu_backend == SYNOR_LLM_GPU_OPENCL ? SYNOR_OPENCL_ALL
                                                                   : SYNOR_OPENCL_OFF;
    cfg.cuda = gpu_layers != 0 && gpu_backend == SYNOR_LLM_GPU_CUDA;
    synor_server_opts so = {.host = host,
                            .port = (unsigned)port,
                            .model_name = name,
                            .max_seqs = (unsigned)seqs,
                            .max_queue = (unsigned)queue,
                            .ctx = (unsigned)ctx,
                            .grace_s = grace,
                            .cache_bytes = cache_mem,
                            .cache_file = cache_file,
                            .no_cache = no_cache,
                            .semantic_threshold = (float)sem_threshold,
                            .semantic_entries = (unsigned)sem_entries,
                            .semantic_index = sem_index,
                            .semantic_file = sem_file,
                            .predict = (unsigned)predict,
                            .gpu_layers = gpu_layers,
                            .gpu_device = gpu,
                            .gpu_backend = gpu_backend,
                            .kv_type = kv_type,
                            .no_prefix_cache = no_prefix,
                            .chat_template = tmpl,
                            .step_log = step_log,
                            .draft = dm,
                            .spec_k = (unsigned)spec,
                            .spec_max = (unsigned)spec_max};
    if (synor_runtime_create(&cfg, &rt) || synor_runtime_start(rt) ||
        synor_server_create(m, rt, &so, &srv) || synor_server_start(srv)) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    printf("synor serve: listening on http://%s%s%s:%u (model %s)\n", strchr(host, ':') ? "[" : "",
           host, strchr(host, ':') ? "]" : "", synor_server_port(srv), name);
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "synor serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    synor_server_stop(srv);
    rc = CLI_OK;
out:
    synor_server_destroy(srv);
    synor_runtime_destroy(rt);
    synor_llm_destroy(dm);
    synor_llm_destroy(m);
    return rc;
}
