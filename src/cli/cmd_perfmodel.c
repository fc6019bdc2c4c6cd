/* cmd_perfmodel.c - `synor perfmodel`: what the performance model file
 * that `synor run` keeps says, entry by entry. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static void help(void)
{
    printf("usage: synor perfmodel [--file FILE] [--json]\n\n"
           "Shows the performance model that 'synor run' calibrates: per operation, device\n"
           "and data footprint, the samples recorded, the estimate the runtime places by\n"
           "(the median of the last %d samples) and the mean, deviation, min and max of\n"
           "all samples, in milliseconds. Default file: $XDG_DATA_HOME/synor/perfmodel.json,\n"
           "else ~/.local/share/synor/perfmodel.json. Remove the file to start afresh.\n\n"
           "  --file FILE  another model file (it must exist; the default file may not yet)\n"
           "  --json       print the file's JSON (format %s)\n"
           "Exit status: 0 success, 1 failure (a malformed file), 2 usage error.\n",
           SYNOR_PERFMODEL_WINDOW, SYNOR_PERFMODEL_FORMAT);
}

static int print_entry(const synor_perfmodel_entry *e, void *user)
{
    (void)user;
    printf("  %-12s %-10s %016" PRIx64 " %7" PRIu64 " %10.4f %10.4f %9.4f %10.4f %10.4f  %s\n",
           e->op, e->device, e->footprint, e->count, e->estimate * 1e3, e->mean * 1e3,
           e->stddev * 1e3, e->min * 1e3, e->max * 1e3, e->calibrated ? "yes" : "no");
    return 0;
}

int cli_perfmodel(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *path = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        } else if (!strcmp(a, "--file")) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error("perfmodel", "--file needs a file");
            path = argv[++i];
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else {
            return cli_usage_error("perfmodel", "unexpected argument '%s'", a);
        }
    }
    char def[4096];
    int given = path != NULL;
    if (!path) {
        if (synor_perfmodel_default_path(def, sizeof def) < 0) {
            cli_error("no model file: set XDG_DATA_HOME or HOME, or give --file");
            return CLI_FAIL;
        }
        path = def;
    }
    /* The default file appears with the first real run, so its absence is
     * an empty model; a file named on the command line must exist. */
    if (given && access(path, F_OK) != 0) {
        cli_error("%s: cannot open: %s", path, strerror(errno));
        return CLI_FAIL;
    }
    synor_perfmodel *pm = NULL;
    if (synor_perfmodel_create(&pm) < 0 || synor_perfmodel_load(pm, path) < 0) {
        cli_error("%s", synor_errmsg());
        synor_perfmodel_destroy(pm);
        return CLI_FAIL;
    }
    int ret = CLI_OK;
    if (json) {
        char *text = synor_perfmodel_to_json(pm);
        if (text) {
            fputs(text, stdout);
            free(text);
        } else {
            cli_error("%s", synor_errmsg());
            ret = CLI_FAIL;
        }
    } else {
        printf("Performance model %s: %zu entries (calibrated after %u samples)\n\n", path,
               synor_perfmodel_count(pm), synor_perfmodel_min_samples(pm));
        if (synor_perfmodel_count(pm)) {
            printf("  %-12s %-10s %-16s %7s %10s %10s %9s %10s %10s  %s\n", "operation", "device",
                   "footprint", "samples", "median ms", "mean ms", "stddev", "min ms", "max ms",
                   "calibrated");
            if (synor_perfmodel_foreach(pm, print_entry, NULL) < 0) {
                cli_error("%s", synor_errmsg());
                ret = CLI_FAIL;
            }
        }
    }
    synor_perfmodel_destroy(pm);
    return ret;
}
