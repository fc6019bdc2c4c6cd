/* cmd_simulate.c - `synor simulate`: plan a workload on a fabric, run it in
 * the discrete-event simulator, print the report with the comparison to the
 * GPU-only baseline; optionally write the trace, a Chrome trace and an SVG.
 * Without a workload it runs the seed's scenario (seed 001 §5): Llama-2-70B,
 * 512 tokens in, 256 out, on CPU + H100 + TPU v5p + Groq LPU, and says
 * which assumptions produced the figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void help(void)
{
    printf("usage: synor simulate [--fabric F] [--workload FILE | --preset MODEL [--train]\n"
           "                      [--batch N] [--prompt N] [--new N] [--dtype T]\n"
           "                      | --tiled gemm|cholesky [--n N] [--nb NB] [--dtype T]]\n"
           "                      [--strategy S] [--baseline S|none] [--deadline SEC]\n"
           "                      [--weights preload|load] [--storage-gbps X]\n"
           "                      [--micro-batches N] [--buffers N] [--stages N]\n"
           "                      [--trace FILE] [--chrome FILE] [--svg FILE] [--width N]\n"
           "                      [--perfmodel FILE | --no-perfmodel] [--cpu-workers N]\n"
           "                      [--measure-cache FILE] [--sharing-cache FILE] [--opencl off|all]\n"
           "                      [--preempt DEVICE@T[:WARNING]]... [--replacement PRICE]\n"
           "                      [--checkpoint SEC | --checkpoint-gbps X]\n\n"
           "Plans the workload with strategy S (default heft; 'dynamic' places tasks as\n"
           "they become ready), simulates it on the fabric's simulated devices and prints\n"
           "utilization, a timeline, makespan, energy, money and the comparison with the\n"
           "baseline strategy (default gpu-only). With no workload: the seed scenario,\n"
           "Llama-2-70B inference, 512 tokens in and 256 out, on the 'seed' fabric.\n\n"
           "  --tiled A        the task graph synor run --tiled runs (n x n in tiles of NB,\n"
           "                   defaults 2048 and 512; docs/CLI.md)\n"
           "  --fabric F       a built-in fabric (synor plan --fabrics), a file, or 'local':\n"
           "                   this machine from detection, its task times from the\n"
           "                   performance model of real runs (synor run; docs/PLANNING.md)\n"
           "  --perfmodel FILE, --no-perfmodel  local: the model file (default: synor run's)\n"
           "  --cpu-workers N  local: CPU workers of the run predicted (default one per core)\n"
           "  --measure-cache FILE  local: where the measured CPU peak is cached\n"
           "  --sharing-cache FILE  local: where the measured factors by which PoCL and the\n"
           "                   CPU workers share the cores are cached (default\n"
           "                   $XDG_CACHE_HOME/synor/host-sharing.json; docs/PLANNING.md)\n"
           "  --opencl off|all local: without or with (default) the OpenCL CPU device\n"
           "                   (PoCL) that detection finds, beside the CPU workers\n"
           "  --workload FILE  a workload file (docs/WORKLOADS.md)\n"
           "  --preset MODEL   llama-2-7b, llama-2-70b or tiny; inference unless --train\n"
           "  --batch, --prompt, --new  sequences, prompt tokens (training: sequence\n"
           "                   length), generated tokens\n"
           "  --dtype T        bf16, fp16, int8, fp32, ... (default: the model's)\n");
    printf("  --strategy S     heft peft energy cost mix gpu-only cpu-only seed exact\n"
           "                   pipeline, or dynamic (placed as tasks become ready), or\n"
           "                   runtime (as synor run's runtime places them: docs/PLANNING.md)\n"
           "  --weights M      preload (default: weights copied before the run, not timed)\n"
           "                   or load (copies from host memory or storage are timed)\n"
           "  --storage-gbps X storage read bandwidth for weights that do not fit in host\n"
           "                   memory (default 7)\n"
           "  --micro-batches N, --buffers N  the pipeline strategy's micro-batches (default:\n"
           "                   found in the graph) and bound on a stage's lead (default none)\n"
           "  --stages N       the pipeline strategy: exactly N stages (default: the best)\n"
           "  --baseline S     the strategy compared with (default gpu-only), or none\n"
           "  --deadline SEC   seconds, above 0: energy and cost plan the least energy\n"
           "                   (money) that meets it (synor plan --help); every strategy's\n"
           "                   simulated makespan is checked against it\n"
           "  --trace FILE     write the trace (synor-trace/1) for 'synor report'\n"
           "  --chrome FILE    write a Chrome trace-event file (open in ui.perfetto.dev)\n"
           "  --svg FILE       write an SVG Gantt chart\n"
           "  --width N        timeline columns, 10 to 400 (default 60)\n"
           "  --preempt DEVICE@T[:WARNING]  with --strategy dynamic: the fabric device\n"
           "                   DEVICE is preempted at T seconds with WARNING seconds to\n"
           "                   its deadline (default 120): it checkpoints, then leaves the\n"
           "                   fabric at the deadline and its tasks re-run on the others;\n"
           "                   repeatable (docs/PLANNING.md, \"Simulated preemption\")\n"
           "  --replacement PRICE  replacement capacity is obtained at PRICE per\n"
           "                   device-hour (the market's ask, or the job's limit): the\n"
           "                   device stays and costs PRICE from the deadline on\n"
           "  --checkpoint SEC the checkpoint takes SEC seconds (0 to 1e9); default: the\n"
           "                   task output held in the device's memory at --checkpoint-gbps\n"
           "  --checkpoint-gbps X  checkpoint write bandwidth, GB/s (default 1)\n"
           "                   The report ends with what the preemption cost: makespan and\n"
           "                   money against the same run without it.\n"
           "Exit status: 0 success, 1 failure (e.g. out of memory on a device), 2 usage,\n"
           "3 the simulated run misses --deadline (the report is still printed).\n");
}

/* Plans (or not, for "dynamic") and simulates. */
static synor_plan_options wopt; /* --weights, --storage-gbps */
static double plan_setup;       /* of the last plan run() made */
static const synor_sim_preemption *run_pre; /* --preempt, for the runs that use them */
static size_t run_npre;
static size_t plan_copies;

static int run(const synor_cost *c, const char *strategy, double deadline, synor_trace **t,
               double *planned)
{
    synor_plan *p = NULL;
    if (!strcmp(strategy, "runtime")) { /* the runtime's own rules, no plan */
        if (planned)
            *planned = 0;
        return synor_simulate_runtime(c, t);
    }
    if (strcmp(strategy, "dynamic") != 0) {
        synor_plan_options o;
        synor_plan_options_init(&o);
        o.weights = wopt.weights;
        o.micro_batches = wopt.micro_batches;
        o.pipeline_buffers = wopt.pipeline_buffers;
        o.pipeline_stages = wopt.pipeline_stages;
        o.storage_bw = wopt.storage_bw;
        int rc = synor_strategy_from_name(strategy, &o.strategy);
        o.deadline = deadline;
        if (rc || (rc = synor_plan_create(c, &o, &p)))
            return rc;
        plan_setup = p->setup;
        plan_copies = p->n_loads;
    }
    int rc = synor_simulate_preempt(c, p, run_pre, run_npre, t);
    if (planned)
        *planned = p ? p->makespan : 0;
    synor_plan_destroy(p);
    return rc;
}

/* The same workload with int8 weights on the same fabric, heterogeneous
 * plan vs GPU-only: the case where the model fits on the GPU. */
static void int8_note(const synor_fabric *f, const char *strategy, char *buf, size_t n)
{
    synor_llm_config m;
    synor_workload *w = NULL;
    synor_cost *c = NULL;
    synor_trace *a = NULL, *b = NULL;
    snprintf(buf, n, "int8 comparison unavailable");
    if (synor_llm_preset("llama-2-70b", &m) == 0) {
        m.dtype = SYNOR_DTYPE_INT8;
        if (synor_decompose_llm_inference(&m, 1, 512, 256, &w) == 0 &&
            synor_cost_create(w, f, &c) == 0 && run(c, strategy, 0, &a, NULL) == 0 &&
            run(c, "gpu-only", 0, &b, NULL) == 0)
            snprintf(buf, n,
                     "With int8 weights (69 GB, which fit on the H100 alone) the same scenario "
                     "takes %.3f s with %s vs %.3f s GPU-only: %.2fx. Decode is bound by reading "
                     "the weights once per token, and no processor here reads memory much faster "
                     "than the H100.",
                     a->makespan, strategy, b->makespan, a->makespan > 0 ? b->makespan / a->makespan : 0);
        else
            snprintf(buf, n, "int8 comparison failed: %s", synor_errmsg());
    }
    synor_trace_destroy(a);
    synor_trace_destroy(b);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
}

/* --preempt DEVICE@T[:WARNING]: the device's name (resolved once the
 * fabric is loaded), the times. */
typedef struct pre_opt {
    char device[64];
    double at, warning;
} pre_opt;

static int parse_preempt(const char *v, pre_opt *o)
{
    const char *at = strrchr(v, '@');
    if (!at || at == v || (size_t)(at - v) >= sizeof o->device)
        return cli_usage_error("simulate", "--preempt '%s': expected DEVICE@T[:WARNING]", v);
    memcpy(o->device, v, (size_t)(at - v));
    o->device[at - v] = '\0';
    char t[64];
    const char *colon = strchr(at + 1, ':');
    size_t tl = colon ? (size_t)(colon - at - 1) : strlen(at + 1);
    if (!tl || tl >= sizeof t)
        return cli_usage_error("simulate", "--preempt '%s': expected DEVICE@T[:WARNING]", v);
    memcpy(t, at + 1, tl);
    t[tl] = '\0';
    o->warning = 120; /* the market's default warning, as AWS Spot gives */
    if (cli_parse_double("simulate", "--preempt (time T)", t, 0, 1e9, &o->at) ||
        (colon && cli_parse_seconds("simulate", "--preempt (WARNING)", colon + 1, &o->warning)))
        return CLI_USAGE;
    return CLI_OK;
}

static void money_str(int64_t micro, char *buf, size_t n)
{
    synor_money_format(micro < 0 ? -micro : micro, buf + 1, n - 1);
    buf[0] = micro < 0 ? '-' : '+';
}

/* What the preemptions cost, against the same strategy without them (the
 * report's MARKS say what happened). */
static void preempt_report(const synor_trace *t, const synor_trace *none)
{
    size_t stopped = 0, replaced = 0, warned = 0;
    for (size_t i = 0; i < t->n_marks; i++) {
        warned += !strcmp(t->marks[i].name, "preempted");
        stopped += !strcmp(t->marks[i].name, "device stopped");
        replaced += !strcmp(t->marks[i].name, "replaced");
    }
    printf("\n  PREEMPTION: %zu warned before the run ended, %zu left the fabric, %zu "
           "replaced\n",
           warned, stopped, replaced);
    char a[48], b[48], d[48];
    double dm = t->makespan - none->makespan;
    printf("  makespan   %.6f s without preemption, %.6f s with: %+.6f s (%+.2f%%)\n",
           none->makespan, t->makespan, dm, none->makespan > 0 ? 100 * dm / none->makespan : 0);
    synor_money_format(none->money_micro, a, sizeof a);
    synor_money_format(t->money_micro, b, sizeof b);
    money_str(synor_money_add(t->money_micro, -none->money_micro), d, sizeof d);
    printf("  money      %s %s without preemption, %s %s with: %s\n", t->currency, a,
           t->currency, b, d);
}

/* A missed deadline (the report's Deadline line says it too): the note on
 * stderr, for scripts that read stdout, and CLI_DEADLINE; else CLI_OK. */
static int deadline_verdict(const synor_trace *t, const char *strategy, double deadline,
                            double planned)
{
    if (t->makespan <= deadline)
        return CLI_OK;
    char plan[64] = "";
    if (planned > 0)
        snprintf(plan, sizeof plan, "; planned %.6f s", planned);
    fprintf(stderr,
            "synor simulate: deadline %.6f s missed by %.6f s (%s: simulated makespan %.6f s%s)\n",
            deadline, t->makespan - deadline, strategy, t->makespan, plan);
    return CLI_DEADLINE;
}

int cli_simulate(const cli_globals *g, int argc, char **argv)
{
    synor_plan_options_init(&wopt);
    scenario sc = {0};
    cli_local lo = {0};
    lo.pocl = 1; /* the local fabric holds PoCL too (--opencl off: not) */
    const char *strategy = "heft", *baseline = "gpu-only", *trace_out = NULL, *chrome = NULL,
               *svg = NULL;
    double deadline = 0, planned = 0, ckpt_s = -1, ckpt_gbps = 1;
    int width = 60, have_repl = 0, have_ckpt = 0;
    int64_t repl_price = 0;
    pre_opt popt[SYNOR_SIM_MAX_PREEMPTIONS];
    size_t npre = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_scenario_opt("simulate", &sc, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (!r && (r = cli_weights_opt("simulate", &wopt, argc, argv, &i)) == CLI_USAGE)
            return CLI_USAGE;
        if (!r && (r = cli_local_opt("simulate", &lo, argc, argv, &i)) < 0)
            return CLI_USAGE;
        if (r)
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        }
        const char **str = !strcmp(a, "--strategy")   ? &strategy
                           : !strcmp(a, "--baseline") ? &baseline
                           : !strcmp(a, "--trace")    ? &trace_out
                           : !strcmp(a, "--chrome")   ? &chrome
                           : !strcmp(a, "--svg")      ? &svg
                                                      : NULL;
        if (str && i + 1 < argc) {
            *str = argv[++i];
        } else if (!strcmp(a, "--deadline") && i + 1 < argc) {
            if (cli_parse_seconds("simulate", a, argv[++i], &deadline))
                return CLI_USAGE;
        } else if (!strcmp(a, "--preempt") && i + 1 < argc) {
            if (npre == SYNOR_SIM_MAX_PREEMPTIONS)
                return cli_usage_error("simulate", "more than %d --preempt options",
                                       SYNOR_SIM_MAX_PREEMPTIONS);
            if (parse_preempt(argv[++i], &popt[npre++]))
                return CLI_USAGE;
        } else if (!strcmp(a, "--replacement") && i + 1 < argc) {
            if (synor_money_parse(argv[++i], &repl_price) || repl_price <= 0)
                return cli_usage_error("simulate",
                                       "--replacement '%s': a price per device-hour above 0 "
                                       "with at most 6 decimals, e.g. 2.49",
                                       argv[i]);
            have_repl = 1;
        } else if (!strcmp(a, "--checkpoint") && i + 1 < argc) {
            if (cli_parse_double("simulate", a, argv[++i], 0, 1e9, &ckpt_s))
                return CLI_USAGE;
            have_ckpt |= 1;
        } else if (!strcmp(a, "--checkpoint-gbps") && i + 1 < argc) {
            if (cli_parse_double("simulate", a, argv[++i], 1e-9, 1e9, &ckpt_gbps))
                return CLI_USAGE;
            have_ckpt |= 2;
        } else if (!strcmp(a, "--width") && i + 1 < argc) {
            unsigned long long v;
            if (cli_parse_uint("simulate", a, argv[++i], 10, 400, &v))
                return CLI_USAGE;
            width = (int)v;
        } else {
            return cli_usage_error("simulate", "unknown option or missing value '%s'", a);
        }
    }
    synor_strategy st;
    if (strcmp(strategy, "dynamic") && strcmp(strategy, "runtime") &&
        synor_strategy_from_name(strategy, &st))
        return cli_usage_error("simulate", "unknown strategy '%s'", strategy);
    if (strcmp(baseline, "none") && strcmp(baseline, "dynamic") && strcmp(baseline, "runtime") &&
        synor_strategy_from_name(baseline, &st))
        return cli_usage_error("simulate", "unknown baseline strategy '%s'", baseline);
    if (npre && strcmp(strategy, "dynamic"))
        return cli_usage_error("simulate", "--preempt needs --strategy dynamic (a plan fixed in "
                                           "advance cannot move a leaving device's tasks), not "
                                           "'%s'",
                               strategy);
    if (!npre && (have_repl || have_ckpt))
        return cli_usage_error("simulate", "--replacement, --checkpoint and --checkpoint-gbps "
                                           "need --preempt");
    if (have_ckpt == 3)
        return cli_usage_error("simulate", "--checkpoint and --checkpoint-gbps: one or the other");
    sc.micro = (long long)wopt.micro_batches;
    int local = sc.fabric && !strcmp(sc.fabric, "local");
    if (cli_scenario_check("simulate", &sc) || cli_local_check("simulate", &lo, local))
        return CLI_USAGE;
    int seed_scenario = !sc.workload && !sc.preset && !sc.fabric;
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    synor_fabric *f = NULL;
    synor_workload *w = NULL;
    synor_cost *c = NULL;
    synor_trace *t = NULL, *b = NULL, *none = NULL;
    synor_detection *det = NULL;
    synor_sim_preemption pre[SYNOR_SIM_MAX_PREEMPTIONS];
    char local_note[1200] = "";
    int ret = CLI_FAIL;
    if (local && cli_local_detect(cat, &lo, &det))
        goto out;
    if (local && cli_local_load(cat, det, &lo, &sc, NULL, 0, &f, &w, local_note,
                                sizeof local_note)) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    if ((!local && (synor_fabric_open(cat, sc.fabric ? sc.fabric : "seed", &f) ||
                    cli_scenario_load(&sc, f, &w))) ||
        synor_cost_create(w, f, &c)) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    for (size_t k = 0; k < npre; k++) {
        long d = synor_fabric_find_device(f, popt[k].device);
        if (d < 0) {
            ret = cli_usage_error("simulate", "--preempt: fabric \"%s\" has no device \"%s\"",
                                  synor_fabric_name(f), popt[k].device);
            goto out;
        }
        pre[k] = (synor_sim_preemption){(size_t)d, popt[k].at, popt[k].warning, ckpt_s,
                                        ckpt_gbps * 1e9, have_repl, repl_price};
    }
    if (npre && run(c, strategy, deadline, &none, NULL)) { /* the cost of preemption: vs this */
        cli_error("%s", synor_errmsg());
        goto out;
    }
    run_pre = pre;
    run_npre = npre;
    int rrc = run(c, strategy, deadline, &t, &planned);
    run_pre = NULL;
    run_npre = 0;
    if (rrc) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    if (strcmp(baseline, "none") && run(c, baseline, 0, &b, NULL)) {
        fprintf(stderr, "synor: note: baseline %s failed: %s\n", baseline, synor_errmsg());
        b = NULL;
    }
    double setup = plan_setup;
    size_t copies = plan_copies;
    const char *assume[12];
    size_t na = 0;
    char note[600], fabric_note[1024], weights[600];
    if (local)
        assume[na++] = local_note;
    else
        assume[na++] = "Every device is simulated from its profile (synor profiles ID shows the "
                       "figures and their sources); time per task is a roofline: launch latency + "
                       "max(FLOPs / (peak x efficiency), bytes / memory bandwidth).";
    if (!strcmp(strategy, "dynamic") || !strcmp(strategy, "runtime"))
        snprintf(weights, sizeof weights,
                 "Weights are resident before the run on each device that uses them (loading "
                 "is not timed) and count against its memory; activations and KV-cache entries "
                 "move over the fabric's links, which are shared by concurrent transfers.");
    else if (wopt.weights == SYNOR_WEIGHTS_PRELOAD)
        snprintf(weights, sizeof weights,
                 "Weights (data no task produces) start in host memory (or storage when they "
                 "do not fit) and were put where the plan needs them before the run: %zu "
                 "copies, %.6f s of setup, not in the makespan; every copy counts against its "
                 "device's memory. Activations move over the fabric's links, shared by "
                 "concurrent transfers.",
                 copies, setup);
    else
        snprintf(weights, sizeof weights,
                 "Weights (data no task produces) start in host memory (or storage when they "
                 "do not fit) and are copied during the run (%zu copies, in the makespan, each "
                 "device one copy at a time, as planned: they do not share links with the "
                 "activations, which do share them with each other).",
                 copies);
    assume[na++] = weights;
    assume[na++] = "Energy = active energy of each task + idle power of every device while it "
                   "waits; money = price per hour of each device that ran a task, for the "
                   "whole makespan.";
    if (seed_scenario) {
        assume[na++] = "Scenario: Llama-2-70B (80 layers, 64 heads, 8 KV heads, hidden 8192, FFN "
                       "28672) in bf16, batch 1, 512 prompt tokens, 256 generated; prefill is one "
                       "task per layer, decode one task per layer per token.";
        assume[na++] = "bf16 weights are 138 GB: they fit on no single processor here (H100 80 "
                       "GiB, TPU v5p 95 GB), so GPU-only spills layers onto the host CPU while the "
                       "heterogeneous plan splits them between H100 and TPU; that, not the "
                       "processors' specialities, is most of the difference.";
        assume[na++] = "The Groq LPU has 230 MB of SRAM per chip: no layer of Llama-2-70B fits, "
                       "so it gets no decode work (Groq serves such models on hundreds of chips).";
        int8_note(f, strategy, note, sizeof note);
        assume[na++] = note;
    }
    if (npre)
        assume[na++] = "Preemption (the PREEMPTION lines, the MARKS): at the warning the device "
                       "finishes its task, then checkpoints the task output in its memory; "
                       "without replacement its queued tasks move to the other devices at once "
                       "and it leaves at the deadline (a task still running there re-runs "
                       "elsewhere), paid only until then; what it produced stays readable (the "
                       "checkpoint). With --replacement it stays and costs that price from the "
                       "deadline on.";
    snprintf(fabric_note, sizeof fabric_note, "Fabric: %s", synor_fabric_notes(f));
    if (*synor_fabric_notes(f))
        assume[na++] = fabric_note;
    synor_report_options ro = {b, seed_scenario ? "HETEROGENEOUS INFERENCE REPORT" : NULL,
                               assume, na, width, deadline};
    char *text = synor_report_text(t, &ro);
    if (!text) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    fputs(text, stdout);
    free(text);
    if (npre)
        preempt_report(t, none);
    ret = CLI_OK;
    if (deadline > 0)
        ret = deadline_verdict(t, strategy, deadline, planned);
    if (trace_out && cli_write_text(trace_out, synor_trace_to_json(t)))
        ret = CLI_FAIL;
    if (chrome && cli_write_text(chrome, synor_report_chrome(t)))
        ret = CLI_FAIL;
    if (svg && cli_write_text(svg, synor_report_svg(t)))
        ret = CLI_FAIL;
out:
    synor_detection_destroy(det);
    synor_trace_destroy(t);
    synor_trace_destroy(b);
    synor_trace_destroy(none);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_catalog_destroy(cat);
    return ret;
}
