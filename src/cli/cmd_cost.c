/* cmd_cost.c - `synor cost`: the cost matrix of a workload on a fabric
 * (milliseconds per task and device, '-' where a task cannot run) and the
 * transfer cost between every pair of devices with the path it takes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void help(void)
{
    printf("usage: synor cost [--fabric F] (--workload FILE | --preset MODEL [--train]\n"
           "                  [--batch N] [--prompt N] [--new N] [--dtype T]) [--rows N]\n\n"
           "Prints the time of each task on each device of the fabric (default 'seed'),\n"
           "from the roofline of the device's profile, and the cost of moving 1 MB\n"
           "between devices with the path kind (same, unified, nvlink, pcie-p2p, pcie,\n"
           "cpu-mediated, network). --rows limits the tasks shown (default 40, 0 = all).\n"
           "'synor cost compare --help': a job's cost on the network against the clouds.\n"
           "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

int cli_cost(const cli_globals *g, int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "compare"))
        return cli_cost_compare(g, argc - 1, argv + 1);
    scenario sc = {0};
    long rows = 40;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_scenario_opt("cost", &sc, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (r)
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        } else if (!strcmp(a, "--rows") && i + 1 < argc) {
            unsigned long long v;
            if (cli_parse_uint("cost", a, argv[++i], 0, 1000000, &v))
                return CLI_USAGE;
            rows = (long)v;
        } else {
            return cli_usage_error("cost", "unknown option or missing value '%s'", a);
        }
    }
    if (!sc.workload && !sc.preset && !sc.tiled)
        return cli_usage_error("cost",
                               "give --workload FILE, --preset MODEL or --tiled gemm|cholesky");
    if (cli_scenario_check("cost", &sc))
        return CLI_USAGE;
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    synor_fabric *f = NULL;
    synor_workload *w = NULL;
    synor_cost *c = NULL;
    int ret = CLI_FAIL;
    char *text = NULL;
    if (synor_fabric_open(cat, sc.fabric ? sc.fabric : "seed", &f) ||
        cli_scenario_load(&sc, f, &w) ||
        synor_cost_create(w, f, &c) || !(text = synor_cost_format(c, (size_t)rows))) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    fputs(text, stdout);
    ret = CLI_OK;
out:
    free(text);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_catalog_destroy(cat);
    return ret;
}
