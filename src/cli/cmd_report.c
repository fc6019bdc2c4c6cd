/* cmd_report.c - `synor report TRACE`: the report of a trace written by
 * `synor simulate --trace` (or by a real run): utilization, timeline,
 * totals, optionally the comparison with a baseline trace; Chrome trace-event
 * and SVG exports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void help(void)
{
    printf("usage: synor report TRACE [--baseline TRACE] [--chrome FILE] [--svg FILE]\n"
           "                    [--width N]\n\n"
           "Prints the report of an execution trace (synor-trace/1): utilization per\n"
           "processor, a timeline, makespan, energy and money, and with --baseline the\n"
           "speedup over another trace. --chrome writes a Chrome trace-event file (open\n"
           "it in ui.perfetto.dev), --svg a Gantt chart.\n"
           "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

int cli_report(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *path = NULL, *base = NULL, *chrome = NULL, *svg = NULL;
    int width = 60;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        } else if (!strcmp(a, "--baseline") && i + 1 < argc) {
            base = argv[++i];
        } else if (!strcmp(a, "--chrome") && i + 1 < argc) {
            chrome = argv[++i];
        } else if (!strcmp(a, "--svg") && i + 1 < argc) {
            svg = argv[++i];
        } else if (!strcmp(a, "--width") && i + 1 < argc) {
            unsigned long long v;
            if (cli_parse_uint("report", a, argv[++i], 10, 400, &v))
                return CLI_USAGE;
            width = (int)v;
        } else if (a[0] != '-' && !path) {
            path = a;
        } else {
            return cli_usage_error("report", "unexpected argument '%s'", a);
        }
    }
    if (!path)
        return cli_usage_error("report", "give a TRACE file");
    synor_trace *t = NULL, *b = NULL;
    int ret = CLI_FAIL;
    if (synor_trace_load_file(path, &t) || (base && synor_trace_load_file(base, &b))) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    synor_report_options o = {b, NULL, NULL, 0, width, 0};
    char *text = synor_report_text(t, &o);
    if (!text) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    fputs(text, stdout);
    free(text);
    ret = CLI_OK;
    if (chrome && cli_write_text(chrome, synor_report_chrome(t)))
        ret = CLI_FAIL;
    if (svg && cli_write_text(svg, synor_report_svg(t)))
        ret = CLI_FAIL;
out:
    synor_trace_destroy(t);
    synor_trace_destroy(b);
    return ret;
}
