/* cmd_train.c - `synor train`: train a Llama-architecture model on a text
 * corpus (synor/train.h), with progress, a CSV log, checkpoints that
 * resume bit-exactly, the loss curve as SVG, and the model exported for
 * synor generate and llama.cpp; `synor train plot` draws a log. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/common.h"
#include "synor/llm.h"
#include "synor/train.h"

static void help(void)
{
    printf("usage: synor train --corpus FILE --out DIR [options]\n"
           "       synor train plot LOG [-o OUT.svg] [--baseline NATS]\n\n"
           "Trains a Llama-architecture model (RMSNorm, RoPE, grouped-query attention,\n"
           "SwiGLU) on the text of FILE with AdamW, data parallel over the CPU workers.\n"
           "DIR gets tokenizer.bin, log.csv (one row per step), ckpt-STEP.bin checkpoints,\n"
           "and at the end model.bin (llama2.c), model.gguf (F32) and loss.svg.\n"
           "  --vocab N         BPE vocabulary trained on the corpus (default 1024)\n"
           "  --tokenizer FILE  a tokenizer.bin of --vocab pieces instead\n"
           "  --dim N --hidden N --layers N --heads N --kv-heads N --seq-len N\n"
           "                    model (default 256, 768, 4, 8, 4, 128); --unshared: a\n"
           "                    classifier of its own instead of the token embedding\n"
           "  --steps N         training steps (default 1000); --batch N sequences (16)\n"
           "  --lr X --min-lr X --warmup N --weight-decay X --clip X\n"
           "                    AdamW (default 1e-3, 1e-4, steps/10 up to 100, 0.1, 1.0)\n"
           "  --eval-every N    validation loss every N steps (default 100)\n"
           "  --eval-rows N     validation windows per evaluation (default 32)\n"
           "  --val-fraction X  the corpus's tail kept for validation (default 0.1)\n"
           "  --ckpt-every N    checkpoint every N steps (default 100); --keep N newest (2)\n"
           "  --resume          continue from DIR's newest valid checkpoint\n"
           "  --workers N       CPU workers (default one per core); --replicas N data-\n"
           "                    parallel micro-batches (default one per worker, at most 6)\n"
           "  --seed S          initialisation and data order (default 1)\n"
           "  --device cpu|cuda cuda: the matrix products (forward and backward) on the first\n"
           "                    CUDA GPU with cuBLAS, the weights resident there; attention,\n"
           "                    norms, the loss, all-reduce and AdamW stay on the CPU workers\n"
           "                    (default cpu). --gpu N: another GPU; cpu,cuda: the last\n"
           "                    replica's there, the others on the CPU workers\n"
           "  --device opencl[:K]  the same on OpenCL device K (default 0; PoCL's CPU device\n"
           "                    counts); cpu,opencl[:K]: the last replica there, the others on\n"
           "                    the CPU workers, one batch over both (heterogeneous data\n"
           "                    parallel). --balance: split the batch by the replicas'\n"
           "                    measured speed (printed) instead of evenly; --rows A,B,..:\n"
           "                    the batch's rows per replica, as given\n"
           "  --quiet           no progress line\n"
           "  --report          after the run, the runtime's report of it: every task on its\n"
           "                    worker (batch loading, the replicas' forward/backward, the\n"
           "                    all-reduce, AdamW, checkpoints), utilization and timeline\n"
           "  --trace FILE --chrome FILE --svg FILE\n"
           "                    the run's trace (synor report), Chrome trace, SVG Gantt chart\n"
           "  --simulate        with --report: the run's training iteration simulated on this\n"
           "                    machine's fabric calibrated from the calibration cache (the\n"
           "                    performance model file), beside the real run, and the ratio\n"
           "                    simulated/real; the run's rates are recorded there (CPU only)\n"
           "  --perfmodel FILE  --simulate's cache (default: synor run's performance model)\n"
           "  --workload FILE   one iteration of this configuration as a workload (data\n"
           "                    parallel over the replicas, fp32) for synor simulate, e.g.\n"
           "                    --fabric local: the prediction beside the real step time\n"
           "plot draws LOG's training and validation loss as SVG (to OUT, else stdout).\n"
           "Ctrl-C stops after the current step; --resume continues from the last checkpoint.\n"
           "Exit status: 0 success, 1 failure (a NaN names the step and the operation),\n"
           "2 usage error.\n");
}

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct prog {
    FILE *log;
    int tty, quiet;
    long last_line;
    double val_loss; /* the last evaluation's */
} prog;

static void fmt_time(double s, char *buf, size_t n)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

static int on_progress(const synor_train_progress *p, void *ctx)
{
    prog *g = ctx;
    if (p->evaluated)
        g->val_loss = p->val_loss;
    fprintf(g->log, "%ld,%.6f,", p->step, p->loss);
    if (p->evaluated)
        fprintf(g->log, "%.6f", p->val_loss);
    fprintf(g->log, ",%.6g,%.4f,%.1f,%.3f\n", (double)p->lr, p->grad_norm, p->tokens_per_s,
            p->elapsed_s);
    fflush(g->log);
    if (!g->quiet) {
        char eta[32], val[32] = "";
        fmt_time(p->eta_s, eta, sizeof eta);
        if (!isnan(p->val_loss))
            snprintf(val, sizeof val, "  val %.4f", p->val_loss);
        if (g->tty) {
            fprintf(stderr, "\rstep %ld/%ld  loss %.4f%s  lr %.2e  %.0f tok/s  ETA %s   ", p->step,
                    p->steps, p->loss, val, (double)p->lr, p->tokens_per_s, eta);
            if (p->evaluated || p->step == p->steps)
                fputc('\n', stderr);
        } else if (p->evaluated || p->step == p->steps || p->step - g->last_line >= 50) {
            fprintf(stderr, "step %ld/%ld  loss %.4f%s  lr %.2e  %.0f tok/s  ETA %s\n", p->step,
                    p->steps, p->loss, val, (double)p->lr, p->tokens_per_s, eta);
            g->last_line = p->step;
        }
    }
    return interrupted ? 1 : 0;
}

static int plot(int argc, char **argv)
{
    const char *log = NULL, *out = NULL;
    double base = NAN;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--baseline") && i + 1 < argc) {
            int r = cli_parse_double("train", "--baseline", argv[++i], 0, 1e6, &base);
            if (r != CLI_OK)
                return r;
        } else if (argv[i][0] == '-' || log) {
            return cli_usage_error("train", "unexpected argument '%s'", argv[i]);
        } else {
            log = argv[i];
        }
    }
    if (!log)
        return cli_usage_error("train", "plot needs a LOG file");
    char *svg = synor_train_plot_svg(log, base);
    if (!svg) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    if (!out) {
        fputs(svg, stdout);
        free(svg);
        return CLI_OK;
    }
    return cli_write_text(out, svg);
}

/* The log keeps the rows of steps up to `upto` (a resumed run rewrites
 * those after its checkpoint), or starts with the header. */
static FILE *open_log(const char *path, long upto)
{
    static const char header[] = "step,loss,val_loss,lr,grad_norm,tokens_per_s,elapsed_s\n";
    synor__buf keep;
    synor__buf_init(&keep);
    synor__buf_puts(&keep, header);
    char *old;
    size_t len;
    if (upto > 0 && synor__read_file(path, &old, &len) == 0) {
        const char *p = memchr(old, '\n', len);
        for (p = p ? p + 1 : old + len; p < old + len;) {
            const char *e = memchr(p, '\n', (size_t)(old + len - p));
            if (!e)
                break; /* a row cut by the crash */
            long step = strtol(p, NULL, 10);
            if (step > 0 && step <= upto)
                synor__buf_append(&keep, p, (size_t)(e - p + 1));
            p = e + 1;
        }
        synor__free(old);
    }
    char *text = synor__buf_take(&keep);
    FILE *f = text ? fopen(path, "w") : NULL;
    if (f)
        fputs(text, f);
    synor__free(text);
    return f;
}

typedef struct opts {
    const char *corpus, *out, *tok_path, *trace, *chrome, *svg, *workload, *perfmodel;
    synor_train_config cfg;
    unsigned long long vocab, steps, batch, eval_every, eval_rows, ckpt_every, keep, workers,
        replicas, seed, warmup, gpu;
    double lr, min_lr, wd, clip, val_fraction;
    int resume, quiet, warmup_set, report, simulate;
    cli_train_device dev;
} opts;

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){.cfg = {.dim = 256,
                        .hidden_dim = 768,
                        .n_layers = 4,
                        .n_heads = 8,
                        .n_kv_heads = 4,
                        .seq_len = 128,
                        .shared_classifier = 1},
                .vocab = 1024,
                .steps = 1000,
                .batch = 16,
                .eval_every = 100,
                .eval_rows = 32,
                .ckpt_every = 100,
                .keep = 2,
                .seed = 1,
                .lr = 1e-3,
                .min_lr = 1e-4,
                .wd = 0.1,
                .clip = 1.0,
                .val_fraction = 0.1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--unshared")) {
            o->cfg.shared_classifier = 0;
            continue;
        }
        if (!strcmp(a, "--resume")) {
            o->resume = 1;
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
            continue;
        }
        if (!strcmp(a, "--report")) {
            o->report = 1;
            continue;
        }
        if (!strcmp(a, "--balance")) {
            o->dev.balance = 1;
            continue;
        }
        if (!strcmp(a, "--simulate")) {
            o->simulate = 1;
            continue;
        }
        if (a[0] != '-' || !a[1])
            return cli_usage_error("train", "unexpected argument '%s'", a);
        if (!v)
            return cli_usage_error("train", "%s needs a value", a);
        i++;
        int r = CLI_OK;
        unsigned long long x;
        int *field = !strcmp(a, "--dim")        ? &o->cfg.dim
                     : !strcmp(a, "--hidden")   ? &o->cfg.hidden_dim
                     : !strcmp(a, "--layers")   ? &o->cfg.n_layers
                     : !strcmp(a, "--heads")    ? &o->cfg.n_heads
                     : !strcmp(a, "--kv-heads") ? &o->cfg.n_kv_heads
                     : !strcmp(a, "--seq-len")  ? &o->cfg.seq_len
                                                : NULL;
        unsigned long long *u = !strcmp(a, "--vocab")        ? &o->vocab
                                : !strcmp(a, "--steps")      ? &o->steps
                                : !strcmp(a, "--batch")      ? &o->batch
                                : !strcmp(a, "--eval-every") ? &o->eval_every
                                : !strcmp(a, "--eval-rows")  ? &o->eval_rows
                                : !strcmp(a, "--ckpt-every") ? &o->ckpt_every
                                : !strcmp(a, "--keep")       ? &o->keep
                                : !strcmp(a, "--workers")    ? &o->workers
                                : !strcmp(a, "--replicas")   ? &o->replicas
                                : !strcmp(a, "--warmup")     ? &o->warmup
                                                             : NULL;
        double *d = !strcmp(a, "--lr")             ? &o->lr
                    : !strcmp(a, "--min-lr")       ? &o->min_lr
                    : !strcmp(a, "--weight-decay") ? &o->wd
                    : !strcmp(a, "--clip")         ? &o->clip
                                                   : NULL;
        if (field) {
            r = cli_parse_uint("train", a, v, 1, 1u << 16, &x);
            *field = (int)x;
        } else if (u) {
            unsigned long long min = u == &o->eval_every || u == &o->ckpt_every ||
                                             u == &o->warmup || u == &o->workers ||
                                             u == &o->replicas
                                         ? 0
                                         : 1;
            r = cli_parse_uint("train", a, v, min, u == &o->vocab ? 1u << 20 : 1u << 30, u);
            if (u == &o->warmup)
                o->warmup_set = 1;
        } else if (d) {
            r = cli_parse_double("train", a, v, 0, 10, d);
        } else if (!strcmp(a, "--val-fraction")) {
            r = cli_parse_double("train", a, v, 0.001, 0.5, &o->val_fraction);
        } else if (!strcmp(a, "--seed")) {
            r = cli_parse_uint("train", a, v, 0, UINT64_MAX, &o->seed);
        } else if (!strcmp(a, "--device")) {
            r = cli_train_device_parse(v, &o->dev);
        } else if (!strcmp(a, "--rows")) {
            r = cli_train_rows_parse(v, &o->dev);
        } else if (!strcmp(a, "--gpu")) {
            r = cli_parse_uint("train", a, v, 0, 64, &o->gpu);
        } else if (!strcmp(a, "--corpus")) {
            o->corpus = v;
        } else if (!strcmp(a, "--out")) {
            o->out = v;
        } else if (!strcmp(a, "--tokenizer")) {
            o->tok_path = v;
        } else if (!strcmp(a, "--trace")) {
            o->trace = v;
        } else if (!strcmp(a, "--chrome")) {
            o->chrome = v;
        } else if (!strcmp(a, "--svg")) {
            o->svg = v;
        } else if (!strcmp(a, "--workload")) {
            o->workload = v;
        } else if (!strcmp(a, "--perfmodel")) {
            o->perfmodel = v;
        } else {
            return cli_usage_error("train", "unknown option '%s'", a);
        }
        if (r != CLI_OK)
            return r;
    }
    if (!o->corpus || !o->out)
        return cli_usage_error("train", "--corpus FILE and --out DIR are required");
    if (o->replicas > 6)
        return cli_usage_error("train", "--replicas %llu: at most 6", o->replicas);
    if (o->simulate && !o->report)
        return cli_usage_error("train", "--simulate needs --report (it prints beside it)");
    if (o->simulate && (o->dev.cuda || o->dev.opencl))
        return cli_usage_error("train", "--simulate: CPU workers only (not --device cuda or "
                                        "opencl)");
    if (o->perfmodel && !o->simulate)
        return cli_usage_error("train", "--perfmodel is an option of --simulate");
    return CLI_OK;
}

/* The runtime's report of the run (every task of every step), and the
 * trace files asked for. */
static int report(const cli_globals *g, const opts *o, synor_runtime *rt, synor_trainer *t,
                  cli_train_sim *sim)
{
    synor_trace *tr = NULL;
    if (synor_runtime_trace(rt, "synor train", &tr) < 0) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    int rc = CLI_OK;
    if (o->report) {
        const char *notes[] = {
            "Times are real (monotonic clock), every task of every step of this run: "
            "train_load_batch prepares the next step's batch, train_fwdbwd is one replica's "
            "forward and backward pass over its micro-batch, train_allreduce sums the replicas' "
            "gradients (a chunk each), train_adamw clips and updates a chunk of the parameters, "
            "train_snapshot and train_write_checkpoint make a checkpoint while the next step "
            "runs; evaluation passes are train_fwdbwd tasks too."};
        synor_report_options ro = {NULL, "TRAINING RUN", notes, 1, 0, 0};
        char *text = synor_report_text(tr, &ro);
        if (text) {
            fputs(text, stdout);
            free(text);
        } else {
            cli_error("%s", synor_errmsg());
            rc = CLI_FAIL;
        }
        if (sim && cli_train_sim_finish(sim, g, tr, synor_trainer_batch(t),
                                        synor_trainer_replicas(t),
                                        (unsigned)synor_runtime_worker_count(rt)))
            rc = CLI_FAIL;
    }
    if (o->trace && cli_write_text(o->trace, synor_trace_to_json(tr)))
        rc = CLI_FAIL;
    if (o->chrome && cli_write_text(o->chrome, synor_report_chrome(tr)))
        rc = CLI_FAIL;
    if (o->svg && cli_write_text(o->svg, synor_report_svg(tr)))
        rc = CLI_FAIL;
    synor_trace_destroy(tr);
    return rc;
}

/* One iteration as the planner's decomposition of data-parallel training
 * (synor/decompose.h) with this run's shape, batch and replicas. */
static int write_workload(const opts *o, int replicas)
{
    synor_llm_config m = {.name = "synor train",
                          .layers = o->cfg.n_layers,
                          .heads = o->cfg.n_heads,
                          .kv_heads = o->cfg.n_kv_heads,
                          .hidden = o->cfg.dim,
                          .ffn = o->cfg.hidden_dim,
                          .vocab = o->cfg.vocab_size,
                          .context = o->cfg.seq_len,
                          .dtype = SYNOR_DTYPE_FP32};
    int64_t batch = (int64_t)o->batch;
    /* the decomposition wants equal replicas */
    while (replicas > 1 && batch % replicas)
        replicas--;
    synor_workload *w = NULL;
    int e = replicas > 1 ? synor_decompose_llm_training_dp(&m, batch, o->cfg.seq_len, replicas,
                                                           SYNOR_COLLECTIVE_RING, &w)
                         : synor_decompose_llm_training(&m, batch, o->cfg.seq_len, &w);
    if (e)
        return e;
    e = cli_write_text(o->workload, synor_workload_to_json(w)) == CLI_OK ? 0 : SYNOR_EIO;
    synor_workload_destroy(w);
    return e;
}

/* The vocabulary: DIR/tokenizer.bin when resuming, --tokenizer, or one
 * trained on the corpus and saved to DIR/tokenizer.bin. */
static int tokenizer(const opts *o, const char *text, size_t len, const char *tok_out,
                     long resume_vocab, synor_tokenizer **tok)
{
    if (resume_vocab > 0)
        return synor_tokenizer_load_llama2c(tok_out, (size_t)resume_vocab, tok);
    if (o->tok_path) {
        int e = synor_tokenizer_load_llama2c(o->tok_path, (size_t)o->vocab, tok);
        return e ? e : synor_tokenizer_save_llama2c(*tok, tok_out);
    }
    fprintf(stderr, "synor train: training a BPE vocabulary of %llu pieces on %s (%zu bytes)\n",
            o->vocab, o->corpus, len);
    int e = synor_tokenizer_train(text, len, (size_t)o->vocab, tok);
    return e ? e : synor_tokenizer_save_llama2c(*tok, tok_out);
}

int cli_train(const cli_globals *g, int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        help();
        return CLI_OK;
    }
    if (argc >= 2 && !strcmp(argv[1], "plot"))
        return plot(argc, argv);
    opts o;
    int r = parse(argc, argv, &o);
    if (r != CLI_OK)
        return r;
    if (mkdir(o.out, 0755) != 0 && errno != EEXIST) {
        cli_error("%s: cannot create the folder: %s", o.out, strerror(errno));
        return CLI_FAIL;
    }
    char tok_out[4096], log_path[4096], path[4096];
    snprintf(tok_out, sizeof tok_out, "%s/tokenizer.bin", o.out);
    snprintf(log_path, sizeof log_path, "%s/log.csv", o.out);

    /* resuming: the model's shape and the vocabulary are the checkpoint's */
    synor_train_state st = {0};
    long resume_vocab = 0;
    if (o.resume) {
        synor_train_config cc;
        if (synor_train_ckpt_latest(o.out, path, sizeof path, &cc, &st) == 0) {
            o.cfg = cc;
            resume_vocab = cc.vocab_size;
            o.batch = (unsigned long long)st.batch;
            o.seed = st.seed;
        } else {
            fprintf(stderr, "synor train: no valid checkpoint in %s: starting from step 0\n",
                    o.out);
            o.resume = 0;
        }
    }
    char *text;
    size_t len;
    if (synor__read_file(o.corpus, &text, &len)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    synor_tokenizer *tok = NULL;
    synor_runtime *rt = NULL;
    synor_trainer *t = NULL;
    synor_train_data data = {0};
    cli_train_sim *sim = NULL;
    FILE *log = NULL;
    int rc = CLI_FAIL, e;
    if ((e = tokenizer(&o, text, len, tok_out, resume_vocab, &tok)))
        goto fail;
    o.cfg.vocab_size = (int)synor_tokenizer_size(tok);
    if ((e = synor_train_data_from_text(tok, text, len, o.val_fraction, o.cfg.seq_len, &data)))
        goto fail;
    synor_runtime_config rc_cfg;
    synor_runtime_config_init(&rc_cfg);
    rc_cfg.cpu_workers = (unsigned)o.workers;
    rc_cfg.opencl = o.dev.opencl ? SYNOR_OPENCL_ALL : SYNOR_OPENCL_OFF;
    rc_cfg.cuda = o.dev.cuda;
    rc_cfg.trace = o.report || o.trace || o.chrome || o.svg;
    if (o.simulate && cli_train_sim_begin(o.perfmodel, &o.cfg, &sim))
        goto out;
    if ((e = synor_runtime_create(&rc_cfg, &rt)) || (e = synor_runtime_start(rt)) ||
        (e = synor_trainer_create(rt, &o.cfg, (int)o.batch, (int)o.replicas, &t)) ||
        (e = cli_train_device_setup(&o.dev, (unsigned)o.gpu, t, &data, o.seed)))
        goto fail;
    if (o.workload && (e = write_workload(&o, synor_trainer_replicas(t))))
        goto fail;
    double unigram = synor_train_data_unigram(&data, o.cfg.vocab_size);
    if (o.cfg.dim % 32 || o.cfg.hidden_dim % 32)
        fprintf(stderr,
                "synor train: note: dim %d and hidden %d are not both multiples of 32: "
                "the model will not quantize to Q8_0 or Q4_0 (synor quantize)\n",
                o.cfg.dim, o.cfg.hidden_dim);
    fprintf(stderr,
            "synor train: %zu parameters (dim %d, hidden %d, %d layers, %d heads / %d KV, "
            "vocabulary %d, context %d); %zu training and %zu validation tokens; batch %llu x "
            "%d over %d replicas; unigram baseline %.4f nats/token\n",
            synor_train_param_count(&o.cfg), o.cfg.dim, o.cfg.hidden_dim, o.cfg.n_layers,
            o.cfg.n_heads, o.cfg.n_kv_heads, o.cfg.vocab_size, o.cfg.seq_len, data.n_train,
            data.n - data.n_train, o.batch, o.cfg.seq_len, synor_trainer_replicas(t), unigram);
    synor_train_run_opts ro = {.steps = (int)o.steps,
                               .seed = o.seed,
                               .eval_every = (int)o.eval_every,
                               .eval_rows = (int)o.eval_rows,
                               .ckpt_every = (int)o.ckpt_every,
                               .ckpt_dir = o.out,
                               .ckpt_keep = (int)o.keep,
                               .resume = o.resume};
    synor_train_adamw_init(&ro.opt, (int)o.steps);
    ro.opt.lr = (float)o.lr;
    ro.opt.min_lr = (float)o.min_lr;
    ro.opt.weight_decay = (float)o.wd;
    ro.opt.grad_clip = (float)o.clip;
    if (o.warmup_set)
        ro.opt.warmup = (int)o.warmup;
    if (!(log = open_log(log_path, o.resume ? st.step : 0))) {
        e = synor__error(SYNOR_EIO, "%s: cannot write: %s", log_path, strerror(errno));
        goto fail;
    }
    prog pg = {.log = log, .tty = isatty(2), .quiet = o.quiet, .val_loss = NAN};
    ro.progress = on_progress;
    ro.progress_ctx = &pg;
    signal(SIGINT, on_sigint);
    cli_train_sim_mark(sim, 0);
    e = synor_train_run(t, &data, &ro);
    cli_train_sim_mark(sim, 1);
    signal(SIGINT, SIG_DFL);
    if (e < 0)
        goto fail;
    if (e == 1) {
        fprintf(stderr,
                "synor train: interrupted at step %ld; `--resume` continues from the "
                "last checkpoint\n",
                synor_trainer_step_count(t));
        rc = CLI_FAIL;
        goto out;
    }
    snprintf(path, sizeof path, "%s/model.bin", o.out);
    if ((e = synor_trainer_export_l2c(t, path)))
        goto fail;
    char gguf[4096];
    snprintf(gguf, sizeof gguf, "%s/model.gguf", o.out);
    synor_llm_load_opts lo = {.tokenizer = tok_out};
    if ((e = synor_llm_quantize(path, &lo, SYNOR_TTYPE_F32, gguf)))
        goto fail;
    fclose(log);
    log = NULL;
    char svg_path[4096];
    snprintf(svg_path, sizeof svg_path, "%s/loss.svg", o.out);
    char *svg = synor_train_plot_svg(log_path, unigram);
    if (!svg || cli_write_text(svg_path, svg) != CLI_OK) {
        e = SYNOR_EIO;
        goto fail;
    }
    printf("trained %ld steps: validation loss %.4f nats/token (perplexity %.1f), unigram "
           "baseline %.4f (%.1f); model: %s and %s; loss curve: %s\n",
           synor_trainer_step_count(t), pg.val_loss, exp(pg.val_loss), unigram, exp(unigram), path,
           gguf, svg_path);
    rc = rc_cfg.trace ? report(g, &o, rt, t, sim) : CLI_OK;
    goto out;
fail:
    cli_error("%s", synor_errmsg());
out:
    if (log)
        fclose(log);
    synor_trainer_destroy(t);
    synor_runtime_destroy(rt);
    cli_train_sim_destroy(sim);
    synor_train_data_free(&data);
    synor_tokenizer_destroy(tok);
    synor__free(text);
    return rc;
}
