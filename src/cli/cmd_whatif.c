/* cmd_whatif.c - `synor whatif`: a workload planned and simulated on this
 * machine (the local fabric, from detection with the CPU's measured peak)
 * and on the machine with processors added or swapped, side by side. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define MAX_CHANGES 16

static void help(void)
{
    printf("usage: synor whatif (--workload FILE | --preset MODEL [--train] [--batch N]\n"
           "                    [--prompt N] [--new N] [--dtype T])\n"
           "                    [--add PROFILE[:N]]... [--replace DEVICE=PROFILE]...\n"
           "                    [--strategy S] [--weights preload|load] [--measure-cache FILE]\n"
           "                    [--perfmodel FILE | --no-perfmodel] [--cpu-workers N]\n"
           "                    [--sharing-cache FILE] [--opencl off|all]\n\n"
           "Plans and simulates the workload on this machine as detected (the 'local'\n"
           "fabric: the host CPU with its measured peak and bandwidth, CUDA GPUs), then on\n"
           "the machine with each change alone and with all of them: makespan, energy and\n"
           "money side by side, each with its assumptions. Added and swapped processors\n"
           "are simulated from their catalog profiles (synor profiles); their prices per\n"
           "hour are the built-in fabrics' assumptions (0 when none lists the profile).\n\n"
           "  --add PROFILE[:N]       N devices (default 1) of a catalog profile\n"
           "  --replace DEVICE=PROF   this machine's cpu0, gpu0, ... swapped for a profile\n"
           "  --strategy S            any planner (default heft; synor plan --strategies)\n"
           "  --perfmodel FILE        the performance model of real runs that calibrates\n"
           "                          this machine's task times (default: synor run's file);\n"
           "                          --no-perfmodel: the roofline on the measured peak\n"
           "  --cpu-workers N         CPU workers of a real run (default one per core)\n"
           "  --measure-cache FILE    where the measured CPU peak is cached\n"
           "  --sharing-cache FILE    where PoCL's and the CPU workers' measured sharing\n"
           "                          factors are cached (default\n"
           "                          $XDG_CACHE_HOME/synor/host-sharing.json)\n"
           "  --opencl off|all        without or with the OpenCL CPU device (PoCL)\n"
           "                          detection finds (default: with, unless there are\n"
           "                          changes, which the CPU workers alone are compared to)\n"
           "Exit status: 0 success, 1 failure (e.g. the workload fits no device), 2 usage.\n");
}

typedef struct outcome {
    double makespan, energy;
    int64_t money;
    char devices[256];
    int ok;
    char err[256];
} outcome;

static void evaluate(synor_catalog *cat, const synor_detection *det, const cli_local *lo,
                     const scenario *sc, const synor_plan_options *o,
                     const synor_whatif_change *ch, size_t n, outcome *r, char *note,
                     size_t note_size)
{
    synor_fabric *f = NULL;
    synor_workload *w = NULL;
    synor_cost *c = NULL;
    synor_plan *p = NULL;
    synor_trace *t = NULL;
    memset(r, 0, sizeof *r);
    if (cli_local_load(cat, det, lo, sc, ch, n, &f, &w, note, note_size) ||
        synor_cost_create(w, f, &c) || synor_plan_create(c, o, &p) ||
        synor_simulate(c, p, &t)) {
        snprintf(r->err, sizeof r->err, "%s", synor_errmsg());
    } else {
        r->ok = 1;
        r->makespan = t->makespan;
        r->energy = t->energy_active + t->energy_idle;
        r->money = t->money_micro;
        for (size_t d = 0; d < synor_fabric_device_count(f); d++)
            snprintf(r->devices + strlen(r->devices), sizeof r->devices - strlen(r->devices),
                     "%s%s", d ? ", " : "", synor_fabric_device_at(f, d)->name);
    }
    synor_trace_destroy(t);
    synor_plan_destroy(p);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
}

static void row(const char *label, const outcome *r, const outcome *base)
{
    if (!r->ok) {
        printf("  %-34s %s\n", label, r->err);
        return;
    }
    char money[64];
    synor_money_format(r->money, money, sizeof money);
    char energy[32] = "not modelled";
    if (r->energy > 0)
        snprintf(energy, sizeof energy, "%.3f J", r->energy);
    printf("  %-34s %12.6f s %14s %12s USD", label, r->makespan, energy, money);
    if (base && base->ok && r->makespan > 0)
        printf("   %.2fx", base->makespan / r->makespan);
    printf("\n    devices: %s\n", r->devices);
}

int cli_whatif(const cli_globals *g, int argc, char **argv)
{
    scenario sc = {0};
    synor_plan_options o;
    synor_plan_options_init(&o);
    synor_whatif_change ch[MAX_CHANGES];
    char spec[MAX_CHANGES][128];
    size_t n = 0;
    const char *strategy = "heft";
    cli_local lo = {0};
    lo.pocl = 1; /* the local fabric holds PoCL too (--opencl off: not) */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_scenario_opt("whatif", &sc, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (!r && (r = cli_weights_opt("whatif", &o, argc, argv, &i)) == CLI_USAGE)
            return CLI_USAGE;
        if (!r && (r = cli_local_opt("whatif", &lo, argc, argv, &i)) < 0)
            return CLI_USAGE;
        if (r)
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        } else if ((!strcmp(a, "--add") || !strcmp(a, "--replace")) && i + 1 < argc) {
            const char *v = argv[++i];
            if (n == MAX_CHANGES)
                return cli_usage_error("whatif", "at most %d changes", MAX_CHANGES);
            if (strlen(v) >= sizeof spec[n])
                return cli_usage_error("whatif", "%s: '%s' is too long", a, v);
            strcpy(spec[n], v);
            memset(&ch[n], 0, sizeof ch[n]);
            if (!strcmp(a, "--replace")) {
                char *eq = strchr(spec[n], '=');
                if (!eq || eq == spec[n] || !eq[1])
                    return cli_usage_error("whatif", "--replace: '%s' is not DEVICE=PROFILE", v);
                *eq = '\0';
                ch[n].replace = spec[n];
                ch[n].profile = eq + 1;
                ch[n].count = 1;
            } else {
                char *colon = strchr(spec[n], ':');
                unsigned long long count = 1;
                if (colon) {
                    *colon = '\0';
                    if (cli_parse_uint("whatif", "--add", colon + 1, 1, 1024, &count))
                        return CLI_USAGE;
                }
                if (!spec[n][0])
                    return cli_usage_error("whatif", "--add: '%s' names no profile", v);
                ch[n].profile = spec[n];
                ch[n].count = (unsigned)count;
            }
            n++;
        } else if (!strcmp(a, "--strategy") && i + 1 < argc) {
            strategy = argv[++i];
        } else {
            return cli_usage_error("whatif", "unknown option or missing value '%s'", a);
        }
    }
    if (synor_strategy_from_name(strategy, &o.strategy))
        return cli_usage_error("whatif", "unknown strategy '%s' (see synor plan --strategies)",
                               strategy);
    if (!sc.workload && !sc.preset && !sc.tiled)
        return cli_usage_error("whatif",
                               "give --workload FILE, --preset MODEL or --tiled gemm|cholesky");
    if (sc.fabric)
        return cli_usage_error("whatif", "--fabric: whatif plans on this machine (the local "
                                         "fabric) and its changes");
    sc.micro = (long long)o.micro_batches;
    if (n) /* this machine and its changes side by side: the same CPU workers */
        lo.pocl = 2;
    if (cli_scenario_check("whatif", &sc) || cli_local_check("whatif", &lo, 1))
        return CLI_USAGE;
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    synor_detection *det = NULL;
    int ret = CLI_FAIL;
    if (cli_local_detect(cat, &lo, &det))
        goto out;
    synor_fabric *check = NULL; /* the changes name profiles and devices that exist */
    if (synor_whatif_fabric(cat, det, ch, n, &check)) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    synor_fabric_destroy(check);
    outcome base, one, all;
    char note[1200], other[1200];
    evaluate(cat, det, &lo, &sc, &o, NULL, 0, &base, note, sizeof note);
    if (!base.ok) {
        cli_error("this machine: %s", base.err);
        goto out;
    }
    printf("WHAT-IF (simulated: this machine's figures as detected and measured, added\n"
           "processors from their profiles; every run is the cost model's, not hardware)\n"
           "  strategy %s, weights %s\n\n", synor_strategy_name(o.strategy),
           synor_weights_name(o.weights));
    printf("  %-34s %14s %14s %16s   speedup\n", "machine", "makespan", "energy", "money");
    row("this machine (local)", &base, NULL);
    for (size_t k = 0; k < n; k++) {
        char label[160];
        if (ch[k].replace)
            snprintf(label, sizeof label, "%s -> %s", ch[k].replace, ch[k].profile);
        else
            snprintf(label, sizeof label, "+ %u x %s", ch[k].count, ch[k].profile);
        evaluate(cat, det, &lo, &sc, &o, &ch[k], 1, &one, other, sizeof other);
        row(label, &one, &base);
    }
    if (n > 1) {
        evaluate(cat, det, &lo, &sc, &o, ch, n, &all, other, sizeof other);
        row("all of the changes", &all, &base);
    }
    printf("\nASSUMPTIONS\n  - %s\n", note);
    for (size_t i = 0; i < synor_detection_count(det); i++) {
        synor_device *dev = synor_detection_device(det, i);
        if (strcmp(synor_device_backend(dev), "host") && strcmp(synor_device_backend(dev), "CUDA"))
            continue;
        const char *peak = synor_device_detail_get(dev, "peak_source");
        printf("  - %s (%s): %s; power %s\n", synor_detection_device_id(det, i),
               synor_device_name(dev), peak ? peak : "figures from its profile or derived",
               synor_device_caps(dev)->peak_watts > 0 ? "from its profile"
                                                      : "not known: 0 W, energy not modelled");
    }
    for (size_t k = 0; k < n; k++) {
        char money[64];
        int64_t price = synor_whatif_price(cat, ch[k].profile);
        synor_money_format(price, money, sizeof money);
        printf("  - %s: simulated from its profile (synor profiles %s); %s USD per hour%s\n",
               ch[k].profile, ch[k].profile, money,
               price ? " as the built-in fabrics assume" : ": no built-in fabric prices it");
    }
    printf("  - This machine's devices cost 0 USD per hour (owned); money counts the added\n"
           "    and swapped processors only. Links: from the profiles (PCIe to the host).\n");
    ret = CLI_OK;
out:
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
    return ret;
}
