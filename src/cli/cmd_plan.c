/* cmd_plan.c - `synor plan`: which device runs each task of a workload on a
 * fabric, and when, for one strategy (or all of them side by side). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void help(void)
{
    printf("usage: synor plan [--fabric F] (--workload FILE | --preset MODEL [--train]\n"
           "                  [--batch N] [--prompt N] [--new N] [--dtype T])\n"
           "                  [--strategy S | --compare] [--deadline SEC] [--json]\n"
           "       synor plan --strategies | --fabrics\n\n"
           "Plans the workload on the fabric (default 'seed') and prints the planned\n"
           "makespan and how many tasks and seconds each device gets. --compare plans\n"
           "with every strategy; --json prints the plan (synor-plan/1). Devices are\n"
           "simulated from profiles. Strategies:\n");
    for (int s = 0; s < SYNOR_STRATEGY_COUNT; s++)
        printf("  %-9s %s\n", synor_strategy_name((synor_strategy)s),
               synor_strategy_describe((synor_strategy)s));
    printf("Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static void summary(const synor_plan *p, const synor_cost *c)
{
    const synor_fabric *f = synor_cost_fabric(c);
    printf("%-9s planned makespan %.6f s%s\n", synor_strategy_name(p->strategy), p->makespan,
           p->strategy == SYNOR_STRATEGY_EXACT ? (p->optimal ? " (optimal)" : " (not proven)") : "");
    for (size_t d = 0; d < p->n_devices; d++) {
        size_t n = 0;
        double busy = 0;
        for (size_t i = 0; i < p->n_tasks; i++)
            if (p->device[i] == d) {
                n++;
                busy += p->finish[i] - p->start[i];
            }
        printf("  %-12s %-44s %7zu tasks %12.6f s busy\n", synor_fabric_device_at(f, d)->name,
               synor_device_name(synor_fabric_device_at(f, d)->dev), n, busy);
    }
}

/* The built-in fabrics with their devices. */
static int list_fabrics(const cli_globals *g)
{
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    int ret = CLI_OK;
    for (size_t i = 0; i < synor_fabric_builtin_count(); i++) {
        char name[128];
        synor_fabric *f;
        snprintf(name, sizeof name, "%s", synor_fabric_builtin_name(i));
        if (synor_fabric_load_builtin(cat, name, &f)) {
            cli_error("%s", synor_errmsg());
            ret = CLI_FAIL;
            continue;
        }
        printf("%s:", name);
        for (size_t d = 0; d < synor_fabric_device_count(f); d++)
            printf(" %s", synor_fabric_device_at(f, d)->name);
        printf("\n");
        synor_fabric_destroy(f);
    }
    synor_catalog_destroy(cat);
    return ret;
}

int cli_plan(const cli_globals *g, int argc, char **argv)
{
    scenario sc = {0};
    const char *strategy = "heft";
    int json = 0, compare = 0, strategy_given = 0;
    double deadline = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_scenario_opt("plan", &sc, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (r)
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        } else if (!strcmp(a, "--strategies")) {
            for (int s = 0; s < SYNOR_STRATEGY_COUNT; s++)
                printf("%-9s %s\n", synor_strategy_name((synor_strategy)s),
                       synor_strategy_describe((synor_strategy)s));
            return CLI_OK;
        } else if (!strcmp(a, "--fabrics")) {
            return list_fabrics(g);
        } else if (!strcmp(a, "--strategy") && i + 1 < argc) {
            strategy = argv[++i];
            strategy_given = 1;
        } else if (!strcmp(a, "--deadline") && i + 1 < argc) {
            if (cli_parse_seconds("plan", a, argv[++i], &deadline))
                return CLI_USAGE;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--compare")) {
            compare = 1;
        } else {
            return cli_usage_error("plan", "unknown option or missing value '%s'", a);
        }
    }
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.deadline = deadline;
    if (synor_strategy_from_name(strategy, &o.strategy))
        return cli_usage_error("plan", "unknown strategy '%s' (see --strategies)", strategy);
    if (!sc.workload && !sc.preset)
        return cli_usage_error("plan", "give --workload FILE or --preset MODEL");
    if (cli_scenario_check("plan", &sc))
        return CLI_USAGE;
    if (compare && json)
        return cli_usage_error("plan", "--json prints one plan: not with --compare");
    if (compare && strategy_given)
        return cli_usage_error("plan", "--compare plans with every strategy: not with --strategy");
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    synor_fabric *f = NULL;
    synor_workload *w = NULL;
    synor_cost *c = NULL;
    int ret = CLI_FAIL;
    if (synor_fabric_open(cat, sc.fabric ? sc.fabric : "seed", &f) || cli_scenario_load(&sc, &w) ||
        synor_cost_create(w, f, &c)) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    ret = CLI_OK;
    for (int s = compare ? 0 : (int)o.strategy; s <= (compare ? SYNOR_STRATEGY_COUNT - 1 : (int)o.strategy); s++) {
        synor_plan *p;
        o.strategy = (synor_strategy)s;
        if (compare && s == SYNOR_STRATEGY_EXACT && synor_workload_count(w) > SYNOR_EXACT_MAX_TASKS)
            continue;
        if (synor_plan_create(c, &o, &p)) {
            if (!compare) {
                cli_error("%s", synor_errmsg());
                ret = CLI_FAIL;
                goto out;
            }
            printf("%-9s %s\n", synor_strategy_name(o.strategy), synor_errmsg());
            continue;
        }
        if (json) {
            char *j = synor_plan_to_json(p, c);
            if (j)
                fputs(j, stdout);
            free(j);
        } else {
            summary(p, c);
        }
        synor_plan_destroy(p);
    }
out:
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_catalog_destroy(cat);
    return ret;
}
