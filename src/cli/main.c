/* main.c - the synor command line: global options, then a subcommand from
 * the table below. Each subcommand lives in its own cmd_*.c file. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"

typedef struct command {
    const char *name;
    int (*run)(const cli_globals *g, int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"devices", cli_devices, "detect this machine's processors and show their capabilities"},
    {"profiles", cli_profiles, "list the processor profile catalog, or show one profile"},
    {"registry", cli_registry, "register devices from inventory files and query them"},
    {"route", cli_route, "choose the device(s) a task should run on, and explain why"},
    {"market", cli_market, "the spot market: orders, books, prices, journal (docs/MARKET.md)"},
    {"price", cli_price, "what a device-hour costs in a region; rank regions (docs/PRICING.md)"},
    {"rewards", cli_rewards, "contributor rewards: record, pay out, balances (docs/REWARDS.md)"},
    {"earnings", cli_earnings, "a device's monthly earnings from the market's recent prices"},
    {"workload", cli_workload, "check a workload file or generate one from a model preset"},
    {"cost", cli_cost, "the cost matrix of a workload on a fabric (docs/PLANNING.md)"},
    {"plan", cli_plan, "plan a workload on a fabric: HEFT, PEFT, energy, cost, baselines"},
    {"simulate", cli_simulate, "simulate a plan and report; no arguments: the seed scenario"},
    {"whatif", cli_whatif, "what adding or swapping processors would buy this machine"},
    {"report", cli_report, "report of a trace: utilization, timeline, Perfetto, SVG"},
    {"run", cli_run, "run a workload for real on this machine's processors and report"},
    {"mpi", cli_mpi, "run a task graph across MPI ranks (mpirun; docs/MPI.md)"},
    {"perfmodel", cli_perfmodel, "show the performance model that real runs calibrate"},
    {"generate", cli_generate, "generate text from a GGUF or llama2.c model (docs/LLM.md)"},
    {"model", cli_model, "build a model with generated weights, or describe a model file"},
    {"quantize", cli_quantize, "convert a model's weights to F16, BF16, Q8_0 or Q4_0 (GGUF)"},
    {"train", cli_train, "train a Llama-architecture model on a text corpus (docs/TRAINING.md)"},
    {"serve", cli_serve, "serve a model over HTTP with OpenAI's API (docs/LLM.md)"},
    {"coordinator", cli_coordinator, "run the compute network's coordinator (docs/NETWORK.md)"},
    {"agent", cli_agent, "offer this machine's devices to a compute network (docs/AGENT.md)"},
    {"submit", cli_submit, "submit a job to a compute network; make sgemm jobs (docs/JOBS.md)"},
    {"status", cli_status, "a compute network job's progress, or this consumer's jobs"},
    {"fetch", cli_fetch, "fetch a compute network job's result"},
    {"cancel", cli_cancel, "cancel a compute network job"},
    {"token", cli_token, "the operator's tokens of a coordinator: create, list, revoke"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: synor [--profiles FILE]... COMMAND [ARGS]\n"
               "       synor --help | --version\n\n"
               "Synor Compute: places the pieces of a workload onto every available processor.\n\n"
               "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nGlobal options:\n"
               "  --profiles FILE  load extra profiles (docs/PROFILES.md); they add to and\n"
               "                   replace the built-in catalog. May be repeated.\n"
               "  -h, --help       show this help\n"
               "  --version        show the version\n\n"
               "Run 'synor COMMAND --help' for a command's options.\n"
               "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("synor: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_write_text(const char *path, char *text)
{
    if (!text) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    free(text);
    if (!ok) {
        cli_error("cannot write %s", path);
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "synor%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'synor%s%s --help'.\n", cmd ? " " : "", cmd ? cmd : "");
    return CLI_USAGE;
}

int cli_parse_uint(const char *cmd, const char *opt, const char *v, unsigned long long min,
                   unsigned long long max, unsigned long long *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long x = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
    if (!v || !end || *end || errno || x < min || x > max)
        return cli_usage_error(cmd, "%s: '%s' is not an integer in %llu..%llu", opt, v ? v : "",
                               min, max);
    *out = x;
    return CLI_OK;
}

int cli_parse_gpu(const char *cmd, const char *opt, const char *v, unsigned *device,
                  unsigned *backend)
{
    unsigned long long n = 0;
    const char *num = v;
    *backend = 0; /* SYNOR_LLM_GPU_CUDA */
    if (v && !strncmp(v, "opencl", 6)) {
        num = v + 6;
        *backend = 1; /* SYNOR_LLM_GPU_OPENCL */
    } else if (v && !strncmp(v, "cuda", 4)) {
        num = v + 4;
    }
    char *end = NULL;
    errno = 0;
    if (num && *num >= '0' && *num <= '9')
        n = strtoull(num, &end, 10);
    if (!num || !end || *end || errno || n > 64)
        return cli_usage_error(cmd, "%s: '%s' is not a GPU: N or cudaN (a CUDA device, as synor "
                                    "devices lists them) or openclN (an OpenCL device), N in "
                                    "0..64",
                               opt, v ? v : "");
    *device = (unsigned)n;
    return CLI_OK;
}

/* The whole of v is a finite decimal number in [min, max]. */
static int decimal(const char *v, double min, double max, double *out)
{
    char *end = NULL;
    /* strtod alone would take leading spaces, "+", hex, "inf" and "nan" */
    int plain = v && ((*v >= '0' && *v <= '9') || *v == '.' || (*v == '-' && min < 0)) &&
                !strpbrk(v, "xX");
    double x = plain ? strtod(v, &end) : NAN;
    if (!plain || !end || *end || !isfinite(x) || x < min || x > max)
        return 0;
    *out = x;
    return 1;
}

int cli_parse_double(const char *cmd, const char *opt, const char *v, double min, double max,
                     double *out)
{
    if (!decimal(v, min, max, out))
        return cli_usage_error(cmd, "%s: '%s' is not a number in [%g, %g]", opt, v ? v : "", min,
                               max);
    return CLI_OK;
}

int cli_parse_seconds(const char *cmd, const char *opt, const char *v, double *out)
{
    double x;
    if (!decimal(v, 0, 1e9, &x) || !(x > 0))
        return cli_usage_error(cmd, "%s: '%s' is not a number of seconds above 0 (at most 1e9)",
                               opt, v ? v : "");
    *out = x;
    return CLI_OK;
}

synor_catalog *cli_load_catalog(const cli_globals *g)
{
    synor_catalog *cat;
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)) {
        cli_error("built-in profiles: %s", synor_errmsg());
        return NULL;
    }
    for (int i = 0; i < g->n_profile_files; i++) {
        if (synor_catalog_load_file(cat, g->profile_files[i])) {
            cli_error("%s", synor_errmsg());
            synor_catalog_destroy(cat);
            return NULL;
        }
    }
    return cat;
}

void cli_fmt_tflops(double v, char *buf, size_t n)
{
    double t = v / 1e12;
    if (v <= 0)
        snprintf(buf, n, "-");
    else if (t >= 100)
        snprintf(buf, n, "%.0f", t);
    else if (t >= 1)
        snprintf(buf, n, "%.1f", t);
    else
        snprintf(buf, n, "%.3g", t);
}

void cli_fmt_bytes(double b, char *buf, size_t n)
{
    if (b <= 0)
        snprintf(buf, n, "-");
    else
        synor__format_size((uint64_t)b, 0, buf, n);
}

int main(int argc, char **argv)
{
    cli_globals g;
    memset(&g, 0, sizeof g);
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return CLI_OK;
        }
        if (strcmp(a, "--version") == 0) {
            printf("synor %s\n", synor_version());
            return CLI_OK;
        }
        if (strcmp(a, "--profiles") == 0 || strncmp(a, "--profiles=", 11) == 0) {
            const char *f = a[10] == '=' ? a + 11 : (i + 1 < argc ? argv[++i] : NULL);
            if (!f || !*f)
                return cli_usage_error(NULL, "--profiles needs a file");
            if (g.n_profile_files == (int)(sizeof g.profile_files / sizeof g.profile_files[0]))
                return cli_usage_error(NULL, "too many --profiles files (at most 16)");
            g.profile_files[g.n_profile_files++] = f;
            continue;
        }
        if (a[0] == '-')
            return cli_usage_error(NULL, "unknown option '%s'", a);
        break;
    }
    if (i >= argc) {
        usage(stderr);
        return CLI_USAGE;
    }
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
        if (strcmp(argv[i], commands[c].name) == 0)
            return commands[c].run(&g, argc - i, argv + i);
    return cli_usage_error(NULL, "unknown command '%s'", argv[i]);
}
