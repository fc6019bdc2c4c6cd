/* cmd_plan.c - `synor plan`: which device runs each task of a workload on a
 * fabric, and when, for one strategy (or all of them side by side). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "json/json.h"
#include "plan/plan_internal.h"

static void help(void)
{
    printf("usage: synor plan [--fabric F] (--workload FILE | --preset MODEL [--train]\n"
           "                  [--batch N] [--prompt N] [--new N] [--dtype T])\n"
           "                  [--strategy S | --compare] [--deadline SEC] [--json]\n"
           "                  [--time-limit SEC]\n"
           "                  [--weights preload|load] [--storage-gbps X]\n"
           "                  [--micro-batches N] [--buffers N] [--stages N]\n"
           "                  [--market DIR --region R [--budget USD] [--buy --owner NAME]]\n"
           "       synor plan --strategies | --fabrics\n\n"
           "Plans the workload on the fabric (default 'seed') and prints the planned\n"
           "makespan, energy and money and how many tasks and seconds each device gets.\n"
           "--compare plans with every strategy; --json prints the plan (synor-plan/1),\n"
           "with --compare one document holding every plan (synor-plan-compare/1).\n"
           "Devices are simulated from profiles. Weights (data no task produces) start in\n"
           "the host memory of the first CPU (or storage, read at --storage-gbps, default\n"
           "7, when they do not fit there) and take memory on every device the plan copies\n"
           "them to; --weights preload (default) copies them before the run and reports\n"
           "that as setup time, --weights load counts the copies in the makespan.\n"
           "--strategy pipeline splits the layers (the tasks that share a weight) into\n"
           "contiguous stages, one per device, and prints the stages and their bubbles;\n"
           "--micro-batches N overrides the micro-batches it finds in the graph, --buffers\n"
           "N lets a stage run at most N micro-batches ahead of the next (default: no\n"
           "bound), --stages N forces exactly N stages (default: the best number).\n\n"
           "--deadline SEC (seconds, above 0): energy and cost return the least-energy\n"
           "(least-money) plan that finishes by SEC among their candidates, which include\n"
           "the HEFT and PEFT plans, so a deadline HEFT meets is met, and a looser deadline\n"
           "never gives a worse plan; when none finishes by SEC, the fastest candidate.\n"
           "Every strategy's plan is checked against the deadline: the summary and the\n"
           "JSON (deadline_s, deadline_met, shortfall_s) say whether it is met and by how\n"
           "much it is missed.\n\n"
           "--time-limit SEC (seconds, above 0; default 60): how long --strategy exact\n"
           "searches before it returns its best plan and the lower bound it proved; the\n"
           "summary says \"(optimal)\" only when optimality is proven, else \"(not proven:\n"
           "bound X s, gap Y%%)\", the JSON carries optimal, bound_s and gap. --compare\n"
           "runs exact on workloads of up to 15 tasks, or any size with --time-limit.\n\n"
           "--market DIR prices the fabric's devices from the live order books of the\n"
           "market in DIR (<kind>/<profile>/R for --region R; the market trades whole\n"
           "device-hours): a device past a book's depth cannot be rented and gets no task,\n"
           "a device whose book does not exist keeps the fabric's price; it plans, then\n"
           "prints the quote. --budget USD: a quote above it exits 3. --buy --owner NAME\n"
           "buys the quote as one basket of fill-or-kill bids, all filled or none\n"
           "(docs/PLANNING.md, \"Plans bought on the market\"). Strategies:\n");
    for (int s = 0; s < SYNOR_STRATEGY_COUNT; s++)
        printf("  %-9s %s\n", synor_strategy_name((synor_strategy)s),
               synor_strategy_describe((synor_strategy)s));
    printf("Exit status: 0 success, 1 failure, 2 usage error, 3 the deadline is missed (the\n"
           "plan is still printed; with --compare: no strategy's plan meets it) or, with\n"
           "--market, the quote is over --budget (nothing is bought).\n");
}

/* The plan's makespan, energy and money (on its planned times, accounted as
 * the simulator accounts a run), its deadline verdict and each device's
 * share. */
static void summary(const synor_plan *p, const synor_cost *c)
{
    const synor_fabric *f = synor_cost_fabric(c);
    double energy = 0;
    int64_t money = 0;
    char mbuf[32] = "?";
    if (synor__plan_cost_account(p, c, &energy, &money) == 0)
        synor_money_format(money, mbuf, sizeof mbuf);
    char proof[96] = "";
    if (p->strategy == SYNOR_STRATEGY_EXACT && p->optimal)
        snprintf(proof, sizeof proof, " (optimal)");
    else if (p->strategy == SYNOR_STRATEGY_EXACT)
        snprintf(proof, sizeof proof, " (not proven: bound %.6f s, gap %.2f%%)", p->bound,
                 100 * p->gap);
    printf("%-9s planned makespan %.6f s%s, energy %.6g J, money %s %s\n",
           synor_strategy_name(p->strategy), p->makespan,
           proof, energy, mbuf, synor_fabric_currency(f));
    if (p->deadline > 0) {
        if (p->deadline_met)
            printf("  deadline %.6f s met, %.6f s to spare\n", p->deadline,
                   p->deadline - p->makespan);
        else
            printf("  deadline %.6f s missed by %.6f s\n", p->deadline, p->makespan - p->deadline);
    }
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
    if (!p->n_stages)
        return;
    const synor_workload *w = synor_cost_workload(c);
    char bound[48] = "no bound on a stage's lead";
    if (p->pipeline_buffers)
        snprintf(bound, sizeof bound, "buffers of %zu micro-batches", p->pipeline_buffers);
    printf("pipeline  %zu stages, %zu micro-batches, %s (bubble: time a stage's device waits "
           "within the makespan)\n",
           p->n_stages, p->micro_batches, bound);
    double idle = 0;
    for (size_t s = 0; s < p->n_stages; s++) {
        const synor_plan_stage *st = &p->stages[s];
        double busy = 0;
        for (size_t i = 0; i < p->n_tasks; i++)
            if (p->device[i] == st->dev)
                busy += p->finish[i] - p->start[i];
        char wb[32];
        cli_fmt_bytes(st->weight_bytes, wb, sizeof wb);
        printf("  stage %-3zu %-12s layers %zu-%zu (%s .. %s), weights %s, %.6f s per "
               "micro-batch, bubble %.6f s (%.1f%%)\n",
               s, synor_fabric_device_at(f, st->dev)->name, st->first_layer, st->end_layer - 1,
               synor_workload_task(w, st->first_task)->id,
               synor_workload_task(w, st->last_task)->id, wb, st->time_per_micro_batch,
               p->makespan - busy, p->makespan > 0 ? 100 * (p->makespan - busy) / p->makespan : 0);
        idle += p->makespan - busy;
    }
    printf("  bubble in all: %.1f%% of the stages' time (GPipe's (S-1)/(M+S-1) = %.1f%%)\n",
           p->makespan > 0 ? 100 * idle / (p->makespan * (double)p->n_stages) : 0,
           100.0 * (double)(p->n_stages - 1) /
               (double)(p->micro_batches + p->n_stages - 1));
}

/* The deadline verdict on stderr, for scripts that read stdout. */
static void deadline_note(const synor_plan *p)
{
    int objective = p->strategy == SYNOR_STRATEGY_ENERGY || p->strategy == SYNOR_STRATEGY_COST;
    fprintf(stderr, "synor plan: deadline %.6f s missed by %.6f s (the %s %s takes %.6f s)\n",
            p->deadline, p->makespan - p->deadline,
            objective ? "fastest" : synor_strategy_name(p->strategy),
            objective ? "plan found" : "plan", p->makespan);
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

/* The opening of a synor-plan-compare/1 document; the plans follow. */
static void compare_open(const synor_workload *w, const synor_fabric *f, double deadline)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "{\"format\": \"synor-plan-compare/1\", \"workload\": ");
    synor__json_escape(&b, synor_workload_name(w));
    synor__buf_puts(&b, ", \"fabric\": ");
    synor__json_escape(&b, synor_fabric_name(f));
    if (deadline > 0)
        synor__buf_printf(&b, ", \"deadline_s\": %.17g", deadline);
    synor__buf_puts(&b, ",\n\"plans\": [\n");
    char *t = synor__buf_take(&b);
    if (t)
        fputs(t, stdout);
    free(t);
}

/* A strategy that could not plan, in a compare document. */
static void compare_failed(synor_strategy s, int first, const char *msg)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b, "%s{\"strategy\": \"%s\", \"error\": ", first ? "" : ", ",
                      synor_strategy_name(s));
    synor__json_escape(&b, msg);
    synor__buf_puts(&b, "}");
    char *t = synor__buf_take(&b);
    if (t)
        fputs(t, stdout);
    free(t);
}

int cli_plan(const cli_globals *g, int argc, char **argv)
{
    scenario sc = {0};
    const char *strategy = "heft";
    int json = 0, compare = 0, strategy_given = 0;
    double deadline = 0, time_limit = 0;
    cli_plan_market pm = {0};
    synor_plan_options o;
    synor_plan_options_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_scenario_opt("plan", &sc, argc, argv, &i);
        if (!r)
            r = cli_plan_market_opt("plan", &pm, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (!r && (r = cli_weights_opt("plan", &o, argc, argv, &i)) == CLI_USAGE)
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
        } else if (!strcmp(a, "--time-limit") && i + 1 < argc) {
            if (cli_parse_seconds("plan", a, argv[++i], &time_limit))
                return CLI_USAGE;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--compare")) {
            compare = 1;
        } else {
            return cli_usage_error("plan", "unknown option or missing value '%s'", a);
        }
    }
    o.deadline = deadline;
    if (synor_strategy_from_name(strategy, &o.strategy))
        return cli_usage_error("plan", "unknown strategy '%s' (see --strategies)", strategy);
    if (!sc.workload && !sc.preset && !sc.tiled)
        return cli_usage_error("plan",
                               "give --workload FILE, --preset MODEL or --tiled gemm|cholesky");
    sc.micro = (long long)o.micro_batches;
    if (cli_scenario_check("plan", &sc))
        return CLI_USAGE;
    if (compare && strategy_given)
        return cli_usage_error("plan", "--compare plans with every strategy: not with --strategy");
    if (time_limit > 0 && !compare && o.strategy != SYNOR_STRATEGY_EXACT)
        return cli_usage_error("plan", "--time-limit limits --strategy exact (or --compare), "
                                       "not --strategy %s", strategy);
    if (time_limit > 0)
        o.exact_time_limit = time_limit;
    if (cli_plan_market_check("plan", &pm))
        return CLI_USAGE;
    if (pm.dir && (compare || json))
        return cli_usage_error("plan", "--market plans with one strategy and prints a quote: "
                                       "not with %s", compare ? "--compare" : "--json");
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    synor_fabric *f = NULL;
    synor_workload *w = NULL;
    synor_cost *c = NULL;
    int ret = CLI_FAIL, printed = 0, met = 0, planned = 0;
    double fastest = 0;
    synor_strategy fastest_s = SYNOR_STRATEGY_HEFT;
    if (synor_fabric_open(cat, sc.fabric ? sc.fabric : "seed", &f) ||
        cli_scenario_load(&sc, f, &w) ||
        synor_cost_create(w, f, &c)) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    if (pm.dir) {
        ret = cli_plan_market_run(cat, f, w, &o, &pm);
        goto out;
    }
    ret = CLI_OK;
    if (compare && json)
        compare_open(w, f, deadline);
    int first = compare ? 0 : (int)o.strategy, last = compare ? SYNOR_STRATEGY_COUNT - 1 : first;
    for (int s = first; s <= last; s++) {
        synor_plan *p;
        o.strategy = (synor_strategy)s;
        if (compare && s == SYNOR_STRATEGY_EXACT &&
            synor_workload_count(w) > (time_limit > 0 ? SYNOR_EXACT_MAX_TASKS : 15))
            continue;
        if (synor_plan_create(c, &o, &p)) {
            if (!compare) {
                cli_error("%s", synor_errmsg());
                ret = CLI_FAIL;
                goto out;
            }
            if (json)
                compare_failed(o.strategy, !printed, synor_errmsg());
            else
                printf("%-9s %s\n", synor_strategy_name(o.strategy), synor_errmsg());
            printed++;
            continue;
        }
        met |= p->deadline_met;
        if (!planned++ || p->makespan < fastest) {
            fastest = p->makespan;
            fastest_s = p->strategy;
        }
        if (json) {
            char *j = synor_plan_to_json(p, c);
            if (j) {
                if (compare && printed)
                    fputs(", ", stdout);
                fputs(j, stdout);
            } else {
                cli_error("%s", synor_errmsg());
                ret = CLI_FAIL;
            }
            free(j);
        } else {
            summary(p, c);
            if (!compare)
                cli_weights_line(p, c);
        }
        if (!compare && !p->deadline_met) {
            deadline_note(p);
            ret = ret ? ret : CLI_DEADLINE;
        }
        printed++;
        synor_plan_destroy(p);
    }
    if (compare && json)
        fputs("]}\n", stdout);
    if (compare && deadline > 0 && planned && !met) {
        fprintf(stderr,
                "synor plan: deadline %.6f s missed by every strategy; the fastest plan (%s) "
                "takes %.6f s, %.6f s over\n",
                deadline, synor_strategy_name(fastest_s), fastest, fastest - deadline);
        ret = ret ? ret : CLI_DEADLINE;
    }
out:
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_catalog_destroy(cat);
    return ret;
}
