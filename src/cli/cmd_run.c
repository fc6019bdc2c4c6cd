/* cmd_run.c - `synor run`: a workload (or a tiled preset) executed for real
 * by the runtime on this machine's processors, then the same report as a
 * simulation, from real timestamps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void help(void)
{
    printf("usage: synor run WORKLOAD.json [options]\n"
           "       synor run --tiled gemm|cholesky [--n N] [--nb NB] [--dtype fp32|fp64] [options]\n\n"
           "Runs the workload's tasks for real: every datum becomes memory of its size, every\n"
           "task a kernel computing its operation on its data (real runs execute matmul,\n"
           "relu, gelu, silu, softmax, layer_norm, rms_norm, sum, mean, max, transpose,\n"
           "embedding/gather and self/flash/cross attention in fp32, matmul also in fp64;\n"
           "operand rules in docs/RUNTIME.md), on the CPU cores\n"
           "and the OpenCL devices of this machine. Prints the devices used, the report of\n"
           "the run (utilization, timeline, makespan) and a checksum of the results.\n"
           "--tiled runs the runtime's tiled GEMM or Cholesky on a random n x n matrix and\n"
           "checks it against one OpenBLAS/LAPACK call on all cores: one untimed warm-up of\n"
           "each, then --reps timed repetitions, alternating; the medians are compared.\n"
           "Energy and money are shown only when measured or configured: this machine's\n"
           "power is not read, so a real run reports them as not measured.\n\n"
           "  --strategy S     placement: eft (earliest finish, default), load, energy, money,\n"
           "                   mix (finish + transfer time, as StarPU's dmda), pipeline\n"
           "                   (the pipeline strategy's stages on this run's devices, from\n"
           "                   the performance model; the report gets a PIPELINE section)\n"
           "  --micro-batches N, --buffers N, --stages N\n"
           "                   pipeline: micro-batches (default: found in the graph), buffers\n"
           "                   between stages (planned only), exactly N stages (default: the\n"
           "                   best number; N > 1 shows a pipeline where one device would do)\n"
           "  --measure-cache FILE  pipeline: the detection cache (synor devices)\n"
           "  --plan FILE      follow a plan (synor plan --json) made on a fabric whose\n"
           "                   device names are this run's (cpu, opencl0, ...)\n"
           "  --cpu-workers N  CPU worker threads, 1 to 1024 (default: one per core; more\n"
           "                   than the hardware threads is allowed, with a warning)\n"
           "  --opencl M       off, accelerators (default: GPUs and accelerators), all (CPU\n"
           "                   OpenCL devices too, such as PoCL: a separate memory space)\n"
           "  --cuda on|off    NVIDIA GPUs through the CUDA driver (default on; off: the run\n"
           "                   leaves them out, e.g. to measure the CPU alone on a GPU host)\n"
           "  --seed N         seed of the input data (default 1)\n"
           "  --perfmodel FILE performance model file: loaded before the run, its estimates\n"
           "                   placing tasks once calibrated, saved with this run's kernel\n"
           "                   times after it (default $XDG_DATA_HOME/synor/perfmodel.json,\n"
           "                   else ~/.local/share/synor/perfmodel.json; 'synor perfmodel')\n"
           "  --no-perfmodel   no history: place by calibration runs and load only\n"
           "  --n N, --nb NB   tiled: matrix size (default 2048) and tile size (default 512)\n"
           "  --reps N         tiled: timed repetitions (default 5, at most 100)\n"
           "  --trace FILE     write the trace (synor-trace/1) for 'synor report'\n"
           "  --chrome FILE    write a Chrome trace-event file (open in ui.perfetto.dev)\n"
           "  --svg FILE       write an SVG Gantt chart\n"
           "  --mpi            run across the MPI ranks (mpirun -n N synor run --mpi W.json;\n"
           "                   docs/MPI.md); with it only --mpi-placement owner|plan,\n"
           "                   --mpi-strategy S (plan), --cpu-workers (per rank) and --seed\n"
           "  --width N        timeline columns (default 60)\n"
           "Exit status: 0 success, 1 failure (bad workload, a task failed), 2 usage error.\n");
}

static void print_devices(synor_runtime *rt)
{
    printf("Devices of this run (real):\n");
    for (unsigned i = 0; i < synor_runtime_device_count(rt); i++) {
        synor_runtime_device_info d;
        if (synor_runtime_device_get(rt, i, &d) < 0)
            continue;
        char mem[32] = "host memory";
        if (d.memory_node)
            cli_fmt_bytes((double)d.memory_capacity, mem, sizeof mem);
        printf("  %-10s %-44s %-6s %u worker%s, %s%s\n", d.name, d.product, d.backend, d.workers,
               d.workers == 1 ? "" : "s", mem, d.stopped ? "  [stopped]" : "");
    }
    printf("\n");
}

int cli_run(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *path = NULL, *tiled = NULL, *strategy = "eft", *opencl = "accelerators", *cuda = "on",
               *dtype_s = "fp32", *trace_out = NULL, *chrome = NULL, *svg = NULL, *plan = NULL,
               *pm_path = NULL, *mcache = NULL;
    int no_pm = 0;
    unsigned long long cpu = 0, seed = 1, n = 2048, nb = 512, width = 60, reps = 5, micro = 0,
                       bufs = 0, stages = 0;
    int reps_given = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--mpi"))
            return cli_run_mpi(argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        }
        if (!strcmp(a, "--no-perfmodel")) {
            no_pm = 1;
            continue;
        }
        const char **sv = !strcmp(a, "--tiled")      ? &tiled
                          : !strcmp(a, "--strategy") ? &strategy
                          : !strcmp(a, "--opencl")   ? &opencl
                          : !strcmp(a, "--cuda")     ? &cuda
                          : !strcmp(a, "--dtype")    ? &dtype_s
                          : !strcmp(a, "--trace")    ? &trace_out
                          : !strcmp(a, "--chrome")   ? &chrome
                          : !strcmp(a, "--svg")      ? &svg
                          : !strcmp(a, "--plan")     ? &plan
                          : !strcmp(a, "--perfmodel") ? &pm_path
                          : !strcmp(a, "--measure-cache") ? &mcache
                                                     : NULL;
        unsigned long long *nv = !strcmp(a, "--cpu-workers") ? &cpu
                                 : !strcmp(a, "--seed")      ? &seed
                                 : !strcmp(a, "--n")         ? &n
                                 : !strcmp(a, "--nb")        ? &nb
                                 : !strcmp(a, "--width")     ? &width
                                 : !strcmp(a, "--reps")      ? &reps
                                 : !strcmp(a, "--micro-batches") ? &micro
                                 : !strcmp(a, "--buffers")   ? &bufs
                                 : !strcmp(a, "--stages")    ? &stages
                                                             : NULL;
        if (sv || nv) {
            if (i + 1 >= argc)
                return cli_usage_error("run", "%s needs a value", a);
            unsigned long long max = nv == &seed          ? ~0ull
                                     : nv == &cpu         ? 1024
                                     : nv == &reps        ? SYNOR_TILED_MAX_REPS
                                     : nv == &width       ? 400
                                                          : 1u << 20;
            unsigned long long min = nv == &seed ? 0 : nv == &width ? 10 : 1;
            reps_given |= nv == &reps;
            if (sv)
                *sv = argv[++i];
            else if (cli_parse_uint("run", a, argv[++i], min, max, nv))
                return CLI_USAGE;
        } else if (a[0] == '-') {
            return cli_usage_error("run", "unknown option '%s'", a);
        } else if (!path) {
            path = a;
        } else {
            return cli_usage_error("run", "one workload file only ('%s' and '%s')", path, a);
        }
    }
    if (!path == !tiled)
        return cli_usage_error("run", "give a workload file or --tiled gemm|cholesky");
    if (plan && !path)
        return cli_usage_error("run", "--plan follows a plan of a workload file");
    if (no_pm && pm_path)
        return cli_usage_error("run", "--perfmodel and --no-perfmodel exclude each other");
    if (reps_given && !tiled)
        return cli_usage_error("run", "--reps repeats a --tiled run");
    int pipeline = !strcmp(strategy, "pipeline");
    if ((micro || bufs || stages || mcache) && !pipeline)
        return cli_usage_error("run", "--micro-batches, --buffers, --stages and --measure-cache "
                                      "are options of --strategy pipeline");
    if (pipeline && (!path || plan))
        return cli_usage_error("run", "--strategy pipeline plans a workload file (not --tiled, "
                                      "not with --plan)");
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = (unsigned)cpu;
    cfg.trace = 1;
    if (!strcmp(strategy, "eft") || pipeline) /* pipeline: every task hinted */
        cfg.policy = SYNOR_PLACE_EARLIEST_FINISH;
    else if (!strcmp(strategy, "load"))
        cfg.policy = SYNOR_PLACE_LOAD;
    else if (!strcmp(strategy, "energy"))
        cfg.policy = SYNOR_PLACE_ENERGY;
    else if (!strcmp(strategy, "money"))
        cfg.policy = SYNOR_PLACE_MONEY;
    else if (!strcmp(strategy, "mix"))
        cfg.policy = SYNOR_PLACE_MIX;
    else
        return cli_usage_error("run", "--strategy '%s': eft, load, energy, money, mix or pipeline",
                               strategy);
    if (!strcmp(opencl, "off"))
        cfg.opencl = SYNOR_OPENCL_OFF;
    else if (!strcmp(opencl, "accelerators"))
        cfg.opencl = SYNOR_OPENCL_ACCELERATORS;
    else if (!strcmp(opencl, "all"))
        cfg.opencl = SYNOR_OPENCL_ALL;
    else
        return cli_usage_error("run", "--opencl '%s': off, accelerators or all", opencl);
    if (strcmp(cuda, "on") && strcmp(cuda, "off"))
        return cli_usage_error("run", "--cuda '%s': on or off", cuda);
    cfg.cuda = !strcmp(cuda, "on");
    synor_tiled_algo algo = SYNOR_TILED_GEMM;
    synor_dtype dt = SYNOR_DTYPE_FP32;
    if (tiled) {
        if (!strcmp(tiled, "gemm"))
            algo = SYNOR_TILED_GEMM;
        else if (!strcmp(tiled, "cholesky"))
            algo = SYNOR_TILED_CHOLESKY;
        else
            return cli_usage_error("run", "--tiled '%s': gemm or cholesky", tiled);
        if (synor_dtype_from_name(dtype_s, &dt) < 0 ||
            (dt != SYNOR_DTYPE_FP32 && dt != SYNOR_DTYPE_FP64))
            return cli_usage_error("run", "--dtype '%s': fp32 or fp64", dtype_s);
        if (n == 0 || nb == 0 || nb > n)
            return cli_usage_error("run", "--n %llu --nb %llu: need 1 <= nb <= n", n, nb);
    }

    synor_workload *w = NULL;
    if (path) {
        if (synor_workload_load_file(path, &w) < 0) {
            cli_error("%s", synor_errmsg());
            return CLI_FAIL;
        }
        if (synor_exec_check(w) < 0) {
            cli_error("%s: %s", path, synor_errmsg());
            synor_workload_destroy(w);
            return CLI_FAIL;
        }
    }
    synor_perfmodel *pm = NULL;
    char pm_default[4096];
    size_t pm_loaded = 0;
    if (!no_pm) {
        if (!pm_path && synor_perfmodel_default_path(pm_default, sizeof pm_default) == 0)
            pm_path = pm_default;
        if (synor_perfmodel_create(&pm) < 0 || (pm_path && synor_perfmodel_load(pm, pm_path) < 0)) {
            cli_error("%s", synor_errmsg());
            synor_perfmodel_destroy(pm);
            synor_workload_destroy(w);
            return CLI_FAIL;
        }
        pm_loaded = synor_perfmodel_count(pm);
        cfg.perfmodel = pm;
    }
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&cfg, &rt) < 0 || synor_runtime_start(rt) < 0) {
        cli_error("%s", synor_errmsg());
        synor_runtime_destroy(rt);
        synor_perfmodel_destroy(pm);
        synor_workload_destroy(w);
        return CLI_FAIL;
    }
    print_devices(rt);
    synor_runtime_device_info host;
    if (cpu && synor_runtime_device_get(rt, 0, &host) == 0 && host.hw_threads &&
        cpu > host.hw_threads)
        fprintf(stderr,
                "synor run: warning: --cpu-workers %llu is more than this machine's %u hardware "
                "threads: workers share them, so kernel times (and the performance model they "
                "calibrate) are slower than the hardware's\n",
                cpu, host.hw_threads);
    int ret = CLI_FAIL;
    char line[5][512];
    const char *notes[6];
    size_t nn = 0;
    char title[128];
    cli_pipe *pipel = NULL;
    if (w) {
        synor_exec_result r;
        unsigned *hints = NULL;
        if (pipeline) {
            cli_pipe_opts po = {(size_t)micro, (size_t)bufs, (size_t)stages, mcache};
            hints = calloc(synor_workload_count(w) + 1, sizeof *hints);
            if (!hints) {
                cli_error("out of memory");
                goto out;
            }
            if (cli_pipe_plan(rt, w, pm, &po, hints, &pipel) != CLI_OK) {
                free(hints);
                goto out;
            }
        }
        if (plan) {
            hints = calloc(synor_workload_count(w) + 1, sizeof *hints);
            if (!hints || synor_exec_plan_hints(plan, w, rt, hints) < 0) {
                cli_error("%s", hints ? synor_errmsg() : "out of memory");
                free(hints);
                goto out;
            }
        }
        int erc = synor_exec_workload(rt, w, seed, hints, &r);
        free(hints);
        if (erc < 0) {
            cli_error("%s: %s", path, synor_errmsg());
            goto out;
        }
        snprintf(title, sizeof title, "REAL RUN: %s%s", synor_workload_name(w),
                 pipeline ? " (placed by --strategy pipeline)" : "");
        snprintf(line[0], sizeof line[0],
                 "%zu tasks in %.3f s wall time; data %.1f MiB; checksum of the results %.6g "
                 "(inputs seeded with %llu)",
                 r.tasks, r.seconds, (double)r.bytes / 1048576.0, r.checksum, seed);
        notes[nn++] = line[0];
    } else {
        synor_tiled_result r;
        if (synor_exec_tiled(rt, algo, (size_t)n, (size_t)nb, dt, seed, (unsigned)reps, &r) < 0) {
            cli_error("%s", synor_errmsg());
            goto out;
        }
        snprintf(title, sizeof title, "REAL RUN: tiled %s, n = %llu, tiles of %llu, %s",
                 algo == SYNOR_TILED_GEMM ? "GEMM" : "Cholesky (potrf)", n, nb, dtype_s);
        snprintf(line[0], sizeof line[0],
                 "medians of %u repetitions after a warm-up: runtime %.4g s, %.1f GFLOP/s; one "
                 "OpenBLAS %s call on all cores %.4g s (runtime / OpenBLAS time ratio %.2f); the "
                 "report below is of the whole run, warm-up included",
                 r.reps, r.seconds, r.gflops, algo == SYNOR_TILED_GEMM ? "gemm" : "potrf",
                 r.ref_seconds, r.ref_seconds > 0 ? r.seconds / r.ref_seconds : 0);
        snprintf(line[1], sizeof line[1], "largest difference from OpenBLAS: %.3g", r.max_error);
        notes[nn++] = line[0];
        notes[nn++] = line[1];
    }
    synor_runtime_stats st;
    synor_runtime_get_stats(rt, &st);
    snprintf(line[2], sizeof line[2],
             "Times are real (monotonic clock); energy and money are not measured (no power "
             "counters are read, no device prices are configured).");
    notes[nn++] = line[2];
    if (st.calibrating) {
        snprintf(line[4], sizeof line[4],
                 "Placement was still calibrating: %llu of %llu tasks went to a device to time "
                 "them there, not to the one expected to finish first; runs with the same "
                 "performance model place by measured times once each (operation, size, device) "
                 "has %u samples.",
                 (unsigned long long)st.calibrating, (unsigned long long)st.submitted,
                 pm ? synor_perfmodel_min_samples(pm) : 0);
        notes[nn++] = line[4];
    }
    /* The run has been waited for: every kernel time is in the model. */
    if (pm && pm_path && synor_perfmodel_save(pm, pm_path) < 0) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    if (pm)
        snprintf(line[3], sizeof line[3],
                 "Performance model: %zu entries before the run, %zu after%s%s (placement uses "
                 "an entry's median once it has %u samples).",
                 pm_loaded, synor_perfmodel_count(pm), pm_path ? ", saved to " : ", not saved",
                 pm_path ? pm_path : " (no data directory)", synor_perfmodel_min_samples(pm));
    else
        snprintf(line[3], sizeof line[3], "Performance model: none (--no-perfmodel).");
    notes[nn++] = line[3];
    synor_trace *t = NULL;
    if (synor_runtime_trace(rt, w ? synor_workload_name(w) : tiled, &t) < 0) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    synor_report_options ro = {NULL, title, notes, nn, (int)width, 0};
    char *text = synor_report_text(t, &ro);
    if (text) {
        fputs(text, stdout);
        free(text);
        ret = pipel ? cli_pipe_report(pipel, t) : CLI_OK;
    } else {
        cli_error("%s", synor_errmsg());
    }
    if (trace_out && cli_write_text(trace_out, synor_trace_to_json(t)))
        ret = CLI_FAIL;
    if (chrome && cli_write_text(chrome, synor_report_chrome(t)))
        ret = CLI_FAIL;
    if (svg && cli_write_text(svg, synor_report_svg(t)))
        ret = CLI_FAIL;
    synor_trace_destroy(t);
out:
    cli_pipe_free(pipel);
    synor_runtime_destroy(rt);
    synor_perfmodel_destroy(pm);
    synor_workload_destroy(w);
    return ret;
}
