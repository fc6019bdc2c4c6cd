/* cmd_profiles.c - `synor profiles [--json] [ID]`: the profile catalog as a
 * table, one profile in full (figures, sources, corrections), or JSON in the
 * profile file format (docs/PROFILES.md), which loads back with --profiles. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "json/json.h"
#include "profile/profile_internal.h"

static void help(void)
{
    printf("usage: synor [--profiles FILE]... profiles [--json] [ID]\n\n"
           "Without ID, lists every profile: peak dense throughput (TFLOPS/TOPS), memory,\n"
           "bandwidth and power. With ID, shows that profile in full, with the source of\n"
           "every figure and the corrections made to the seed document's figures.\n\n"
           "  --json   print JSON in the profile file format (docs/PROFILES.md)\n"
           "  -h, --help\n");
}

static void show_one(const synor_profile *p)
{
    char type[256], buf[64];
    const synor_caps *c = &p->caps;
    synor_processor_type_format(&p->type, type, sizeof type);
    printf("%s — %s (%s)\n", p->id, p->name, p->vendor);
    printf("  type        %s\n", type);
    if (p->type.cores)
        printf("  cores       %u cores, %u threads, %.2f GHz base\n", p->type.cores,
               p->type.threads, p->type.base_ghz);
    printf("  origin      %s\n", p->origin);
    printf("  compute     (TFLOPS or TOPS; dense / with 2:4 sparsity)\n");
    for (int t = 0; t < SYNOR_DTYPE_COUNT; t++) {
        const synor_throughput *tp = &c->peak[t];
        if (tp->dense <= 0)
            continue;
        char d[32], s[32];
        cli_fmt_tflops(tp->dense, d, sizeof d);
        cli_fmt_tflops(tp->sparse, s, sizeof s);
        if (tp->sparse > tp->dense)
            printf("    %-5s     %s / %s\n", synor_dtype_name((synor_dtype)t), d, s);
        else
            printf("    %-5s     %s\n", synor_dtype_name((synor_dtype)t), d);
    }
    printf("    source    %s\n", p->source_compute);
    cli_fmt_bytes((double)c->mem_bytes, buf, sizeof buf);
    printf("  memory      %s %s, %.0f GB/s\n", buf, synor_mem_type_name(c->mem_type),
           c->mem_bandwidth / 1e9);
    printf("    source    %s\n", p->source_memory);
    printf("  power       %.0f W idle, %.0f W peak\n", c->idle_watts, c->peak_watts);
    printf("    source    %s\n", p->source_power);
    if (p->source_links) {
        printf("  links       PCIe gen%d x%d (%.1f GB/s)", c->pcie_gen, c->pcie_lanes,
               synor_caps_pcie_bandwidth(c) / 1e9);
        if (c->nvlink_bandwidth > 0)
            printf(", device fabric %.0f GB/s", c->nvlink_bandwidth / 1e9);
        if (c->unified_memory)
            printf(", unified memory");
        if (c->network_bandwidth > 0)
            printf(", network %.0f Gbit/s", c->network_bandwidth * 8 / 1e9);
        printf("\n    source    %s\n", p->source_links);
    }
    if (p->source_latency)
        printf("  latency     %.1f us launch\n    source    %s\n", c->launch_latency * 1e6,
               p->source_latency);
    printf("  efficiency  %.2f of peak (cost-model parameter)\n", c->efficiency);
    printf("  operations  ");
    if (c->ops == SYNOR_OP_SET_ALL)
        printf("all");
    else
        for (int o = 0, first = 1; o < SYNOR_OP_TYPE_COUNT; o++)
            if (c->ops & SYNOR_OP_BIT(o)) {
                printf("%s%s", first ? "" : " ", synor_op_type_name((synor_op_type)o));
                first = 0;
            }
    printf("\n  data types  ");
    for (int t = 0; t < SYNOR_DTYPE_COUNT; t++)
        if (c->dtypes & SYNOR_DTYPE_BIT(t))
            printf("%s ", synor_dtype_name((synor_dtype)t));
    printf("\n  optimal for ");
    for (int t = 0; t < SYNOR_TRAIT_COUNT; t++)
        if (c->optimal_for & (1u << t))
            printf("%s ", synor_trait_name((synor_trait)t));
    printf("\n");
    if (p->n_match) {
        printf("  matches     ");
        for (size_t i = 0; i < p->n_match; i++)
            printf("%s\"%s\"", i ? ", " : "", p->match[i]);
        printf("\n");
    }
    for (size_t i = 0; i < p->n_corrections; i++) {
        const synor_correction *k = &p->corrections[i];
        printf("  correction  %s: seed %g -> %g. %s\n", k->field, k->seed_value, k->value,
               k->note);
    }
    if (p->notes)
        printf("  notes       %s\n", p->notes);
}

static void list(const synor_catalog *cat)
{
    printf("%-24s %-6s %-36s %8s %8s %8s %8s %10s %8s %6s\n", "ID", "KIND", "NAME", "FP64",
           "FP32", "BF16", "INT8", "MEMORY", "GB/s", "WATTS");
    for (size_t i = 0; i < synor_catalog_count(cat); i++) {
        const synor_profile *p = synor_catalog_at(cat, i);
        const synor_caps *c = &p->caps;
        char f64[32], f32[32], b16[32], i8[32], mem[32];
        cli_fmt_tflops(c->peak[SYNOR_DTYPE_FP64].dense, f64, sizeof f64);
        cli_fmt_tflops(c->peak[SYNOR_DTYPE_FP32].dense, f32, sizeof f32);
        cli_fmt_tflops(c->peak[SYNOR_DTYPE_BF16].dense > 0 ? c->peak[SYNOR_DTYPE_BF16].dense
                                                          : c->peak[SYNOR_DTYPE_FP16].dense,
                       b16, sizeof b16);
        cli_fmt_tflops(c->peak[SYNOR_DTYPE_INT8].dense, i8, sizeof i8);
        cli_fmt_bytes((double)c->mem_bytes, mem, sizeof mem);
        printf("%-24s %-6s %-36.36s %8s %8s %8s %8s %10s %8.0f %6.0f\n", p->id,
               synor_kind_name(p->type.kind), p->name, f64, f32, b16, i8, mem,
               c->mem_bandwidth / 1e9, c->peak_watts);
    }
    printf("\n%zu profiles. Throughput in dense TFLOPS (TOPS for INT8); BF16 shows FP16 where "
           "BF16 is absent.\n'synor profiles ID' shows sources and corrections.\n",
           synor_catalog_count(cat));
}

int cli_profiles(const cli_globals *g, int argc, char **argv)
{
    int json = 0;
    const char *id = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            help();
            return CLI_OK;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (argv[i][0] == '-') {
            return cli_usage_error("profiles", "unknown option '%s'", argv[i]);
        } else if (!id) {
            id = argv[i];
        } else {
            return cli_usage_error("profiles", "unexpected argument '%s'", argv[i]);
        }
    }
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    int rc = CLI_OK;
    const synor_profile *one = NULL;
    if (id && !(one = synor_catalog_find(cat, id))) {
        cli_error("%s (try 'synor profiles' for the list)", synor_errmsg());
        rc = CLI_FAIL;
    } else if (json) {
        synor__buf b;
        synor__jw w;
        synor__buf_init(&b);
        synor__jw_init(&w, &b, 1);
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "format");
        synor__jw_str(&w, "synor-profiles/1");
        synor__jw_key(&w, "profiles");
        synor__jw_arr_begin(&w);
        for (size_t i = 0; i < synor_catalog_count(cat); i++)
            if (!one || synor_catalog_at(cat, i) == one)
                synor__profile_write(&w, synor_catalog_at(cat, i));
        synor__jw_arr_end(&w);
        synor__jw_obj_end(&w);
        char *s = synor__buf_take(&b);
        if (!s) {
            cli_error("out of memory");
            rc = CLI_FAIL;
        } else {
            puts(s);
            synor__free(s);
        }
    } else if (one) {
        show_one(one);
    } else {
        list(cat);
    }
    synor_catalog_destroy(cat);
    return rc;
}
