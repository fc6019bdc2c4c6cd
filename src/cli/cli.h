/* cli.h - what the synor subcommands share: global options, output helpers
 * and exit codes (0 success, 1 failure, 2 usage error, 3 deadline missed). */
#ifndef SYNOR_CLI_H
#define SYNOR_CLI_H

#include <stdio.h>

#include "synor.h"

/* CLI_DEADLINE: plan and simulate made a plan that misses --deadline. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2, CLI_DEADLINE = 3 };

typedef struct cli_globals {
    const char *profile_files[16];
    int n_profile_files;
} cli_globals;

/* The catalog: built-ins plus every --profiles file. On failure prints the
 * error and returns NULL. */
synor_catalog *cli_load_catalog(const cli_globals *g);

/* Prints "synor: " + message to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a usage error and a hint to stderr; returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Strict option values: the whole of v is an integer (no sign) in
 * [min, max], or a finite decimal number in [min, max] (digits, '.', an
 * exponent; a '-' only when min < 0; no spaces, hex, inf or nan); otherwise
 * a usage error naming cmd, the option and the value (returns CLI_USAGE). */
int cli_parse_uint(const char *cmd, const char *opt, const char *v, unsigned long long min,
                   unsigned long long max, unsigned long long *out);
int cli_parse_double(const char *cmd, const char *opt, const char *v, double min, double max,
                     double *out);
/* A GPU for the LLM's layers: "N" or "cudaN" (the runtime's CUDA device N;
 * *backend SYNOR_LLM_GPU_CUDA) or "openclN" (its OpenCL device N;
 * SYNOR_LLM_GPU_OPENCL); otherwise a usage error as above. */
int cli_parse_gpu(const char *cmd, const char *opt, const char *v, unsigned *device,
                  unsigned *backend);
/* A deadline or other duration: a decimal number of seconds above 0 and at
 * most 1e9; otherwise a usage error as above. */
int cli_parse_seconds(const char *cmd, const char *opt, const char *v, double *out);

/* Writes text (taken, freed) to path; NULL text: prints synor_errmsg().
 * CLI_OK or CLI_FAIL (message printed). */
int cli_write_text(const char *path, char *text);

/* Human formatting into buf: "989.4", "0.172" (TFLOPS), "80 GiB", "3350". */
void cli_fmt_tflops(double ops_per_s, char *buf, size_t n);
void cli_fmt_bytes(double bytes, char *buf, size_t n);

/* Workload options shared by plan, simulate, cost and workload. */
typedef struct scenario {
    const char *fabric, *workload, *preset, *dtype, *collective;
    int train;
    long long batch, prompt, new_tokens;
    long long dp, tp; /* data- and tensor-parallel degrees; 0 = not given */
    long long micro;  /* training micro-batches (from --micro-batches); 0 = not given */
    const char *tiled; /* --tiled gemm|cholesky: the runtime's tiled graph */
    long long n, nb;   /* its matrix and tile size (--n, --nb; 0 = default) */
} scenario;
/* The tiled graph's defaults, as synor run --tiled's. */
#define CLI_TILED_N 2048
#define CLI_TILED_NB 512
/* Largest --batch, and largest --prompt and --new (tokens). */
#define CLI_MAX_BATCH (1ull << 20)
#define CLI_MAX_TOKENS (1ull << 24)
/* Consumes argv[*i] (and its value) if it is a scenario option: returns 1
 * consumed, 0 not a scenario option, -1 usage error (printed, naming cmd,
 * the option and the value: numbers are integers in 1..CLI_MAX_*). */
int cli_scenario_opt(const char *cmd, scenario *sc, int argc, char **argv, int *i);
/* Usage errors common to the commands: both a workload file and a preset,
 * or preset options (--dtype, --batch, --prompt, --new, --train) with a
 * file, where they would be ignored. CLI_OK or CLI_USAGE (printed). */
int cli_scenario_check(const char *cmd, const scenario *sc);
/* Planning options of plan and simulate: --weights preload|load,
 * --storage-gbps X, and for the pipeline strategy --micro-batches N and
 * --buffers N, into o. 1 consumed, 0 not ours, CLI_USAGE printed. */
int cli_weights_opt(const char *cmd, synor_plan_options *o, int argc, char **argv, int *i);
/* One line on where the plan puts the weights: mode, copies, setup. */
void cli_weights_line(const synor_plan *p, const synor_cost *c);
/* The workload: the file given, else the preset decomposed. Training
 * without --dp is data parallel over the fabric's GPUs and TPUs (one
 * replica per accelerator, one sequence each unless --batch says), when f
 * (may be NULL) has more than one. */
int cli_scenario_load(const scenario *sc, const synor_fabric *f, synor_workload **w);
/* With --tiled: the graph and its tasks' keys (synor_exec_tiled_workload;
 * free() the arrays). */
int cli_scenario_tiled(const scenario *sc, synor_workload **w, const char ***kernels,
                       uint64_t **footprints);

/* The local fabric (simulate --fabric local, whatif): its options
 * --perfmodel FILE, --no-perfmodel, --cpu-workers N, --measure-cache FILE,
 * --sharing-cache FILE, --opencl off|all. */
typedef struct cli_local {
    const char *perfmodel, *cache;
    const char *sharing_cache; /* --sharing-cache: PoCL beside the workers, shared */
    int no_perfmodel;
    int pocl;       /* set by the command: 1 PoCL in the fabric by default (simulate,
                     * whatif without changes), 2 not: whatif's changes (said in the note) */
    int opencl_off; /* --opencl off: the CPU workers alone */
    int opencl_set; /* --opencl given */
    unsigned long long cpu_workers; /* 0: one per core, as the runtime */
} cli_local;
/* 1 consumed, 0 not ours, -1 usage error (printed). */
int cli_local_opt(const char *cmd, cli_local *l, int argc, char **argv, int *i);
/* Usage errors: both --perfmodel and --no-perfmodel; local options without
 * the local fabric (local 0). */
int cli_local_check(const char *cmd, const cli_local *l, int local);
/* Detection with the measured CPU peak (cached). CLI_OK or CLI_FAIL. */
int cli_local_detect(synor_catalog *cat, const cli_local *l, synor_detection **det);
/* The local fabric with changes ch (n), and the scenario's workload
 * calibrated on it (synor_whatif_calibrate on the performance model file);
 * a workload that runs for real gets one CPU device per runtime worker.
 * note gets one sentence saying where the task times come from. CLI_OK or
 * CLI_FAIL (not printed: synor_errmsg() says why). */
int cli_local_load(synor_catalog *cat, const synor_detection *det, const cli_local *l,
                   const scenario *sc, const synor_whatif_change *ch, size_t n,
                   synor_fabric **f, synor_workload **w, char *note, size_t note_size);

/* `synor run W --strategy pipeline` (run_pipeline.c): the pipeline
 * strategy's plan on this run's devices (synor_whatif_run_fabric,
 * calibrated on pm, which may be NULL), its device per task into hints
 * (synor_exec_workload's, one per task), and the PIPELINE section of the
 * report from the run's trace. */
typedef struct cli_pipe_opts {
    size_t micro_batches, buffers, stages; /* 0: the planner's choice */
    const char *measure_cache;             /* NULL: the default */
} cli_pipe_opts;
typedef struct cli_pipe cli_pipe;
/* CLI_OK or CLI_FAIL (printed). */
int cli_pipe_plan(synor_runtime *rt, const synor_workload *w, const synor_perfmodel *pm,
                  const cli_pipe_opts *o, unsigned *hints, cli_pipe **out);
/* Prints the section; CLI_FAIL when the trace's tasks are not the
 * workload's (one each). */
int cli_pipe_report(const cli_pipe *p, const synor_trace *t);
void cli_pipe_free(cli_pipe *p);

/* `synor plan --market DIR` (plan_market.c): a plan priced by the order
 * book, and with --buy bought on it as one basket. */
typedef struct cli_plan_market {
    const char *dir, *region, *owner;
    int buy, has_budget;
    int64_t budget; /* micro-USD */
} cli_plan_market;
/* 1 consumed, 0 not ours, -1 usage error (printed). */
int cli_plan_market_opt(const char *cmd, cli_plan_market *pm, int argc, char **argv, int *i);
int cli_plan_market_check(const char *cmd, const cli_plan_market *pm); /* CLI_OK or CLI_USAGE */
int cli_plan_market_run(const synor_catalog *cat, synor_fabric *f, const synor_workload *w,
                        const synor_plan_options *o, const cli_plan_market *pm);

/* cmd_price.c, shared with `synor cost compare`: the device-seconds of a
 * workload on one device (its tasks' times by the cost model, one after
 * another, rounded up to the second; with skip, tasks the device cannot
 * run are left out and counted, else they fail; *exact (when not NULL)
 * gets the unrounded seconds; CLI_OK or CLI_FAIL, printed), and a warning
 * on stderr for each stale file among the datasets used (today:
 * YYYY-MM-DD, or NULL for the real date). */
int cli_workload_seconds(const synor_catalog *cat, const char *device, const char *path,
                         int quiet, int skip, int64_t *seconds, double *exact);
void cli_econ_warn_stale(const synor_econ *e, const char *today, const synor_econ_dataset *used,
                         size_t n);
int cli_cost_compare(const cli_globals *g, int argc, char **argv);

int cli_devices(const cli_globals *g, int argc, char **argv);
int cli_mpi(const cli_globals *g, int argc, char **argv);
/* synor run --mpi (cmd_mpi.c) */
int cli_run_mpi(int argc, char **argv);
int cli_profiles(const cli_globals *g, int argc, char **argv);
int cli_registry(const cli_globals *g, int argc, char **argv);
int cli_route(const cli_globals *g, int argc, char **argv);
int cli_market(const cli_globals *g, int argc, char **argv);
int cli_price(const cli_globals *g, int argc, char **argv);
int cli_rewards(const cli_globals *g, int argc, char **argv);
int cli_earnings(const cli_globals *g, int argc, char **argv);
int cli_workload(const cli_globals *g, int argc, char **argv);
int cli_cost(const cli_globals *g, int argc, char **argv);
int cli_plan(const cli_globals *g, int argc, char **argv);
int cli_simulate(const cli_globals *g, int argc, char **argv);
int cli_whatif(const cli_globals *g, int argc, char **argv);
int cli_report(const cli_globals *g, int argc, char **argv);
int cli_run(const cli_globals *g, int argc, char **argv);
int cli_perfmodel(const cli_globals *g, int argc, char **argv);
int cli_generate(const cli_globals *g, int argc, char **argv);
/* generate_report.c: the split planner's decision; the utilization report
 * of a traced context (free() it; NULL when nothing was traced). */
void cli_llm_print_plan(FILE *f, const synor_llm_split_plan *p, const char *gpu);
char *cli_llm_report(const synor_llm_ctx *c, const synor_runtime *rt, const char *workload,
                     const char *strategy);
/* generate_sim.c: the traced run's tasks simulated on the local fabric
 * (generate --report --simulate), with one device per CPU worker the run
 * had (cpu_workers, or more if its events name more): its report and the
 * line comparing the makespans, on stderr. CLI_OK or CLI_FAIL (printed). */
int cli_llm_simulate(const cli_globals *g, const synor_llm_ctx *c, unsigned cpu_workers);
/* generate_sched.c: one request of model m through the scheduler (generate
 * --json, --json-schema, penalties, --logit-bias): the prompt and the text streamed to
 * standard output, a figures line on standard error unless quiet. CLI_OK
 * or CLI_FAIL (printed). */
typedef struct cli_gen_request {
    int n_new;
    synor_sampler sampler;
    float presence_penalty, frequency_penalty;
    const int32_t *bias_token; /* logit biases, as synor_llm_request's */
    const float *bias_value;
    int n_bias;
    int json;                 /* the answer is a JSON object ... */
    synor_llm_schema *schema; /* ... this schema allows (NULL: any) */
    int quiet;
} cli_gen_request;
int cli_generate_request(const synor_llm *m, synor_llm_ctx *c, const char *prompt,
                         const cli_gen_request *q);
/* Token t's piece after prev, decoded into text (cap bytes) and written
 * to standard output at once; returns its length. */
size_t cli_print_piece(const synor_tokenizer *tok, int32_t prev, int32_t t, char *text,
                       size_t cap);
/* `synor generate --chat` (generate_chat.c): a conversation, one user turn
 * per line of standard input, in the model's chat template, through the
 * scheduler of c (a context with prefix caching, so that a turn reuses
 * the earlier turns' positions). CLI_OK at the end of input, or CLI_FAIL
 * (printed). */
typedef struct cli_chat_opts {
    int n_new; /* tokens an answer at most */
    synor_sampler sampler;
    const char *system;        /* a system message first, or NULL */
    const char *first;         /* the first user turn (-p), or NULL */
    const char *chat_template; /* NULL or "auto": the model's; else a family's name */
    int quiet;
} cli_chat_opts;
int cli_generate_chat(const synor_llm *m, synor_llm_ctx *c, const cli_chat_opts *q);
int cli_model(const cli_globals *g, int argc, char **argv);
int cli_quantize(const cli_globals *g, int argc, char **argv);
int cli_serve(const cli_globals *g, int argc, char **argv);
int cli_coordinator(const cli_globals *g, int argc, char **argv);
int cli_train(const cli_globals *g, int argc, char **argv);
/* `synor train --report --simulate` (train_sim.c): the run's training
 * iteration simulated on the local fabric calibrated from the calibration
 * cache (the performance model file at path; NULL: the default), beside the
 * real run. begin reads the cache's rates for cfg's shape before the run;
 * mark brackets the run; finish measures the
 * real trace, records its rates, saves the cache, and prints the simulated
 * report and the comparison (CLI_OK or CLI_FAIL, printed). */
typedef struct cli_train_sim cli_train_sim;
int cli_train_sim_begin(const char *path, const synor_train_config *cfg, cli_train_sim **out);
/* The process's CPU time when the run starts (end 0) and ends (1): the CPU
 * share its tasks got. s may be NULL (a no-op). */
void cli_train_sim_mark(cli_train_sim *s, int end);
int cli_train_sim_finish(cli_train_sim *s, const cli_globals *g, const synor_trace *real,
                         int batch, int replicas, unsigned workers);
void cli_train_sim_destroy(cli_train_sim *s);
int cli_agent(const cli_globals *g, int argc, char **argv);
int cli_submit(const cli_globals *g, int argc, char **argv);
int cli_status(const cli_globals *g, int argc, char **argv);
int cli_fetch(const cli_globals *g, int argc, char **argv);
int cli_cancel(const cli_globals *g, int argc, char **argv);
int cli_token(const cli_globals *g, int argc, char **argv);

/* synor train's devices (train_device.c): --device cpu | cuda |
 * opencl[:K] | cpu,opencl[:K], and --balance. */
typedef struct cli_train_device {
    int cuda;          /* 1: every replica's products on the CUDA GPU (--gpu N); 2: the last one's */
    int opencl;        /* 1: every replica's on OpenCL device K; 2: the last one's */
    unsigned cl_index; /* K */
    int balance;       /* split the batch by measured speed */
    int rows[8], nrows; /* --rows: the split given (at most 6) */
} cli_train_device;
/* CLI_OK, or a usage error naming v. */
int cli_train_device_parse(const char *v, cli_train_device *d);
/* --rows A,B,...: the batch's rows per replica. CLI_OK or a usage error. */
int cli_train_rows_parse(const char *v, cli_train_device *d);
/* After synor_trainer_create: moves the replicas' products where d says,
 * prints where on stderr, and with balance measures and sets the split on
 * the first batch of data (seed). 0 or the error (synor_errmsg set). */
int cli_train_device_setup(const cli_train_device *d, unsigned gpu, synor_trainer *t,
                           const synor_train_data *data, uint64_t seed);

#endif
