/* cmd_mpi.c - `synor mpi`: a ready task graph run across MPI ranks (one
 * local runtime per rank; synor/mpi.h, docs/MPI.md), checked on rank 0
 * against the same computation done serially. Start it with mpirun; alone,
 * it runs on one rank. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "synor/mpi.h"

static void help(void)
{
    printf("usage: mpirun -n N synor mpi GRAPH [GRAPH] [options]\n"
           "       synor mpi GRAPH [GRAPH] [options]      (one rank)\n"
           "GRAPH: data-parallel or pipeline; two graphs run one after the other in one job.\n\n"
           "Runs a task graph across the MPI ranks: every rank builds the same graph, data\n"
           "have owner ranks, a task runs on the rank the placement gives, and the data it\n"
           "needs from other ranks arrive as MPI messages. Rank 0 gathers the results,\n"
           "prints their checksum and their largest difference from the same computation\n"
           "done serially (0: bitwise equal; the kernels have a fixed order).\n"
           "  data-parallel  shards of a batch on their ranks: forward relu(x W), a\n"
           "                 gradient-like x^T h, a tree all-reduce sum of the shards'\n"
           "                 gradients, every replica of W updated; --steps steps\n"
           "  pipeline       stages relu(a W_p) on different ranks, --steps micro-batches\n"
           "                 flowing from stage 0 to the last\n\n"
           "  --mpi-placement owner|plan  owner (default): shard s / stage p on rank s mod N;\n"
           "                   plan: the graph planned on a fabric of N nodes (one CPU each,\n"
           "                   node i = rank i) and each task run where the plan puts it\n"
           "  --strategy S     plan: the planner (default heft; pipeline graph: pipeline)\n"
           "  --parts N        shards / stages (default 4)\n"
           "  --steps N        steps / micro-batches (default 3 / 8)\n"
           "  --dim N          features (default 128)\n"
           "  --rows N         rows per shard / micro-batch (default 64)\n"
           "  --cpu-workers N  worker threads per rank (default 1)\n"
           "  --seed N         seed of the input data (default 42)\n"
           "Exit status: 0 success and results equal to the serial ones, 1 failure or a\n"
           "difference, 2 usage error.\n");
}

int cli_mpi(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    synor_mpi_graph_options o;
    synor_mpi_graph_options_init(&o);
    const char *graphs[2] = {NULL, NULL}, *placement = "owner", *strategy = NULL;
    int n_graphs = 0;
    unsigned long long parts = 4, steps = 0, dim = 128, rows = 64, workers = 1, seed = 42;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        }
        const char **sv = !strcmp(a, "--mpi-placement") ? &placement
                          : !strcmp(a, "--strategy")    ? &strategy
                                                        : NULL;
        unsigned long long *nv = !strcmp(a, "--parts")         ? &parts
                                 : !strcmp(a, "--steps")       ? &steps
                                 : !strcmp(a, "--dim")         ? &dim
                                 : !strcmp(a, "--rows")        ? &rows
                                 : !strcmp(a, "--cpu-workers") ? &workers
                                 : !strcmp(a, "--seed")        ? &seed
                                                               : NULL;
        if (sv || nv) {
            if (i + 1 >= argc)
                return cli_usage_error("mpi", "%s needs a value", a);
            if (sv)
                *sv = argv[++i];
            else {
                unsigned long long lo = nv == &seed || nv == &steps ? 0 : 1;
                unsigned long long hi = nv == &seed      ? ~0ull
                                        : nv == &dim     ? 4096
                                        : nv == &rows    ? 65536
                                        : nv == &parts   ? 256
                                        : nv == &workers ? 64
                                                         : 4096;
                if (cli_parse_uint("mpi", a, argv[++i], lo, hi, nv) != CLI_OK)
                    return CLI_USAGE;
            }
            continue;
        }
        if (a[0] == '-' || n_graphs == 2)
            return cli_usage_error("mpi", "unexpected argument '%s'", a);
        graphs[n_graphs++] = a;
    }
    if (!n_graphs)
        return cli_usage_error("mpi", "which graph: data-parallel or pipeline");
    synor_mpi_graph kinds[2];
    synor_strategy st_given = SYNOR_STRATEGY_HEFT;
    for (int i = 0; i < n_graphs; i++)
        if (synor_mpi_graph_from_name(graphs[i], &kinds[i]) < 0)
            return cli_usage_error("mpi", "%s", synor_errmsg());
    if (n_graphs == 2 && kinds[0] == kinds[1])
        return cli_usage_error("mpi", "graph '%s' given twice", graphs[1]);
    if (synor_mpi_placement_from_name(placement, &o.placement) < 0 ||
        (strategy && synor_strategy_from_name(strategy, &st_given) < 0))
        return cli_usage_error("mpi", "%s", synor_errmsg());
    o.parts = parts, o.steps = steps, o.dim = dim, o.rows = rows, o.seed = seed;

    if (synor_mpi_init(NULL, NULL) < 0) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = (unsigned)workers;
    cfg.pin_workers = 0; /* the ranks of one machine would pin to the same cores */
    cfg.opencl = SYNOR_OPENCL_OFF;
    cfg.cuda = 0;
    synor_runtime *rt = NULL;
    synor_mpi *m = NULL;
    int rc = synor_runtime_create(&cfg, &rt);
    if (rc == 0)
        rc = synor_runtime_start(rt);
    if (rc == 0)
        rc = synor_mpi_create(rt, &m);
    int rank = synor_mpi_world_rank(), size = synor_mpi_world_size();
    int status = CLI_OK;
    for (int gi = 0; gi < n_graphs && rc == 0; gi++) {
        o.graph = kinds[gi];
        int pipe = o.graph == SYNOR_MPI_GRAPH_PIPELINE;
        o.strategy = strategy ? st_given : pipe ? SYNOR_STRATEGY_PIPELINE : SYNOR_STRATEGY_HEFT;
        synor_mpi_graph_result r;
        synor_mpi_stats s0, s1;
        synor_mpi_get_stats(m, &s0);
        if ((rc = synor_mpi_graph_run(m, &o, &r)) < 0)
            break;
        synor_mpi_get_stats(m, &s1);
        if (rank != 0)
            continue;
        size_t nsteps = o.steps ? o.steps : pipe ? 8 : 3;
        printf("MPI RUN (a correctness run: %d rank%s of one machine, not a scaling result)\n",
               size, size == 1 ? "" : "s");
        printf("  transport: %s\n",
               synor_mpi_built() ? "MPI" : "none (built without MPI: one rank)");
        printf("  graph %s, placement %s%s%s, %zu %s x %zu %s, dim %zu, rows %zu\n", graphs[gi],
               placement, o.placement == SYNOR_MPI_PLACE_PLAN ? " by " : "",
               o.placement == SYNOR_MPI_PLACE_PLAN ? synor_strategy_name(o.strategy) : "",
               o.parts, pipe ? "stages" : "shards", nsteps, pipe ? "micro-batches" : "steps",
               o.dim, o.rows);
        printf("  %zu tasks on %u of %d rank%s in %.6f s (%.3f ms per %s)\n", r.tasks,
               r.ranks_used, size, size == 1 ? "" : "s", r.seconds,
               1e3 * r.seconds / (double)nsteps, pipe ? "micro-batch" : "step");
        printf("  moved between ranks: %llu messages, %llu bytes\n",
               (unsigned long long)r.messages, (unsigned long long)r.bytes);
        printf("  rank 0: ran %llu tasks (gathers included), received %llu messages, %llu "
               "cached reads\n",
               (unsigned long long)(s1.executed_here - s0.executed_here),
               (unsigned long long)(s1.messages_received - s0.messages_received),
               (unsigned long long)(s1.cache_hits - s0.cache_hits));
        printf("  checksum %.17g over %zu outputs\n", r.checksum, r.outputs);
        printf("  max |difference| from the serial computation: %.17g\n", r.max_abs_diff);
        fflush(stdout);
        if (r.max_abs_diff != 0.0) {
            cli_error("%s: the results differ from the serial computation", graphs[gi]);
            status = CLI_FAIL;
        }
    }
    if (rc < 0) {
        cli_error("rank %d of %d: %s", rank, size, synor_errmsg());
        status = CLI_FAIL;
    }
    synor_mpi_destroy(m);
    synor_runtime_destroy(rt);
    /* a failed rank ends the job: the others may wait for its messages */
    if (rc < 0 && size > 1)
        synor_mpi_abort(CLI_FAIL);
    synor_mpi_finalize();
    return status;
}

/* `synor run --mpi WORKLOAD.json`: the workload's real run across ranks
 * (synor_mpi_workload_run). Called by cli_run when --mpi is among its
 * arguments; only these options apply. */
int cli_run_mpi(int argc, char **argv)
{
    const char *path = NULL, *placement = "owner", *strategy = "heft";
    unsigned long long workers = 1, seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--mpi"))
            continue;
        const char **sv = !strcmp(a, "--mpi-placement")  ? &placement
                          : !strcmp(a, "--mpi-strategy") ? &strategy
                                                         : NULL;
        unsigned long long *nv = !strcmp(a, "--cpu-workers") ? &workers
                                 : !strcmp(a, "--seed")      ? &seed
                                                             : NULL;
        if (sv || nv) {
            if (i + 1 >= argc)
                return cli_usage_error("run", "%s needs a value", a);
            if (sv)
                *sv = argv[++i];
            else if (cli_parse_uint("run", a, argv[++i], nv == &seed ? 0 : 1,
                                    nv == &seed ? ~0ull : 64, nv) != CLI_OK)
                return CLI_USAGE;
            continue;
        }
        if (a[0] == '-')
            return cli_usage_error("run", "%s does not apply to --mpi (its options: "
                                   "--mpi-placement, --mpi-strategy, --cpu-workers, --seed)", a);
        if (path)
            return cli_usage_error("run", "one workload file only ('%s' and '%s')", path, a);
        path = a;
    }
    if (!path)
        return cli_usage_error("run", "--mpi runs a workload file");
    synor_mpi_graph_options o;
    synor_mpi_graph_options_init(&o);
    o.seed = seed;
    if (synor_mpi_placement_from_name(placement, &o.placement) < 0 ||
        synor_strategy_from_name(strategy, &o.strategy) < 0)
        return cli_usage_error("run", "%s", synor_errmsg());
    synor_workload *w = NULL;
    if (synor_workload_load_file(path, &w) < 0) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    if (synor_mpi_init(NULL, NULL) < 0) {
        cli_error("%s", synor_errmsg());
        synor_workload_destroy(w);
        return CLI_FAIL;
    }
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = (unsigned)workers;
    cfg.pin_workers = 0;
    cfg.opencl = SYNOR_OPENCL_OFF;
    cfg.cuda = 0;
    synor_runtime *rt = NULL;
    synor_mpi *m = NULL;
    synor_mpi_workload_result r;
    int rc = synor_runtime_create(&cfg, &rt);
    if (rc == 0)
        rc = synor_runtime_start(rt);
    if (rc == 0)
        rc = synor_mpi_create(rt, &m);
    if (rc == 0)
        rc = synor_mpi_workload_run(m, w, &o, &r);
    int rank = synor_mpi_world_rank(), size = synor_mpi_world_size();
    if (rc < 0)
        cli_error("rank %d of %d: %s: %s", rank, size, path, synor_errmsg());
    synor_mpi_destroy(m);
    synor_runtime_destroy(rt);
    if (rc == 0 && rank == 0) {
        printf("MPI RUN of %s (a correctness run: %d rank%s of one machine, not a scaling "
               "result)\n",
               synor_workload_name(w), size, size == 1 ? "" : "s");
        printf("  placement %s%s%s\n", placement,
               o.placement == SYNOR_MPI_PLACE_PLAN ? " by " : "",
               o.placement == SYNOR_MPI_PLACE_PLAN ? synor_strategy_name(o.strategy) : "");
        printf("  %zu tasks on %u of %d rank%s in %.6f s\n", r.run.tasks, r.ranks_used, size,
               size == 1 ? "" : "s", r.run.seconds);
        printf("  moved between ranks: %llu messages, %llu bytes\n",
               (unsigned long long)r.messages, (unsigned long long)r.bytes);
        printf("  checksum of the results %.17g\n", r.run.checksum);
    }
    synor_workload_destroy(w);
    if (rc < 0 && size > 1)
        synor_mpi_abort(CLI_FAIL);
    synor_mpi_finalize();
    return rc < 0 ? CLI_FAIL : CLI_OK;
}
