/* cmd_workload.c - `synor workload`: check a workload file (errors name
 * file:line:column and the field) or generate one from a model preset, and
 * print its summary or its JSON (docs/WORKLOADS.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void help(void)
{
    printf("usage: synor workload FILE [--json]\n"
           "       synor workload --preset MODEL [--train] [--batch N] [--prompt N] [--new N]\n"
           "                      [--dtype T] [--json]\n\n"
           "Loads and checks a workload file, or decomposes a model preset (llama-2-7b,\n"
           "llama-2-70b, tiny) into an inference or training workload, and prints its\n"
           "tasks by operation with FLOPs and bytes; --json prints it in the workload\n"
           "file format. Exit status: 0 success, 1 invalid input, 2 usage error.\n");
}

int cli_workload(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    scenario sc = {0};
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_scenario_opt("workload", &sc, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (r)
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (a[0] != '-' && !sc.workload) {
            sc.workload = a;
        } else {
            return cli_usage_error("workload", "unexpected argument '%s'", a);
        }
    }
    if (!sc.workload == !sc.preset)
        return cli_usage_error("workload", "give a FILE or --preset MODEL (one of them)");
    if (cli_scenario_check("workload", &sc))
        return CLI_USAGE;
    if (sc.fabric)
        return cli_usage_error("workload", "--fabric does not apply here");
    synor_workload *w;
    if (cli_scenario_load(&sc, NULL, &w)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    if (json) {
        char *s = synor_workload_to_json(w);
        if (s)
            fputs(s, stdout);
        free(s);
        synor_workload_destroy(w);
        return CLI_OK;
    }
    size_t n = synor_workload_count(w), cnt[SYNOR_OP_TYPE_COUNT][2] = {{0}}, seq = 0;
    double fl[SYNOR_OP_TYPE_COUNT][2] = {{0}}, by[SYNOR_OP_TYPE_COUNT][2] = {{0}};
    for (size_t i = 0; i < n; i++) {
        const synor_task *t = synor_workload_task(w, i);
        int b = t->op.backward != 0;
        cnt[t->op.type][b]++;
        fl[t->op.type][b] += t->op.work.flops;
        by[t->op.type][b] += t->op.work.bytes_read + t->op.work.bytes_written;
        seq += t->op.sequential != 0;
    }
    printf("%s: %zu tasks, %zu data items, %.4g FLOP, %.4g bytes moved, %zu sequential\n",
           synor_workload_name(w), n, synor_workload_data_count(w), synor_workload_flops(w),
           synor_workload_bytes(w), seq);
    printf("  %-24s %8s %14s %14s %10s\n", "operation", "tasks", "FLOP", "bytes", "FLOP/byte");
    for (int o = 0; o < SYNOR_OP_TYPE_COUNT; o++)
        for (int b = 0; b < 2; b++)
            if (cnt[o][b]) {
                char name[64];
                snprintf(name, sizeof name, "%s%s", b ? "d/" : "",
                         synor_op_type_name((synor_op_type)o));
                printf("  %-24s %8zu %14.4g %14.4g %10.2f\n", name, cnt[o][b], fl[o][b],
                       by[o][b], by[o][b] > 0 ? fl[o][b] / by[o][b] : 0);
            }
    synor_workload_destroy(w);
    return CLI_OK;
}
