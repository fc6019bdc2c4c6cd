/* cmd_devices.c - `synor devices`: detect this machine's processors,
 * register them (and any simulated devices asked for) in a device registry,
 * and print the registry as a table or as JSON (docs/CLI.md). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "json/json.h"

static void help(void)
{
    printf("usage: synor [--profiles FILE]... devices [--json] [--simulate ID]...\n"
           "                                   [--no-cuda] [--no-opencl] [--no-measure]\n"
           "                                   [--remeasure] [--measure-cache FILE]\n\n"
           "Detects the processors of this machine (CPU through hwloc and cpuid, NVIDIA GPUs\n"
           "through NVML and the CUDA driver, OpenCL devices through the ICD loader) and\n"
           "shows their capabilities and where those came from: a matching profile, or\n"
           "derived from what was detected.\n\n"
           "  --json          print JSON (format synor-devices/1, docs/CLI.md)\n"
           "  --simulate ID   also add a simulated device from profile ID (repeatable);\n"
           "                  simulated devices are labelled as such\n"
           "  --no-cuda       skip NVIDIA detection\n"
           "  --no-opencl     skip OpenCL detection\n"
           "  --no-measure    do not measure the CPU's peak and memory bandwidth: derive the\n"
           "                  peak from cores x base clock x FLOPs per cycle instead\n"
           "  --remeasure     measure again even if the cache holds this machine's figures\n"
           "  --measure-cache FILE\n"
           "                  where measured figures are kept, under the machine's identity\n"
           "                  (default $XDG_CACHE_HOME/synor/host-measure.json, else\n"
           "                  ~/.cache/synor/host-measure.json)\n"
           "The PEAK FROM column says whether a device's peak was measured (an FMA loop per\n"
           "ISA level on every core, ~0.3 s, then cached), derived, or from a profile.\n"
           "  -h, --help\n");
}

static void write_json(synor_registry_entry *e, size_t n, const synor_detection *det)
{
    synor__buf b;
    synor__jw w;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, 1);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "format");
    synor__jw_str(&w, "synor-devices/1");
    synor__jw_key(&w, "devices");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < n; i++) {
        synor_device *d = e[i].device;
        const synor_caps *c = synor_device_caps(d);
        char type[256];
        synor_processor_type_format(synor_device_type(d), type, sizeof type);
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "id");
        synor__jw_str(&w, e[i].id);
        synor__jw_key(&w, "name");
        synor__jw_str(&w, synor_device_name(d));
        synor__jw_key(&w, "kind");
        synor__jw_str(&w, synor_kind_name(synor_device_kind(d)));
        synor__jw_key(&w, "type");
        synor__jw_str(&w, type);
        synor__jw_key(&w, "backend");
        synor__jw_str(&w, synor_device_backend(d));
        synor__jw_key(&w, "simulated");
        synor__jw_bool(&w, synor_device_is_simulated(d));
        synor__jw_key(&w, "caps_origin");
        synor__jw_str(&w, synor_caps_origin_name(synor_device_caps_origin(d)));
        synor__jw_key(&w, "profile");
        if (synor_device_profile_id(d))
            synor__jw_str(&w, synor_device_profile_id(d));
        else
            synor__jw_null(&w);
        synor__jw_key(&w, "location");
        synor__jw_str(&w, synor_device_location(d));
        synor__jw_key(&w, "status");
        synor__jw_str(&w, synor_device_status_name(e[i].info.status));
        synor__jw_key(&w, "peak_tflops");
        synor__jw_obj_begin(&w);
        for (int t = 0; t < SYNOR_DTYPE_COUNT; t++) {
            if (c->peak[t].dense <= 0)
                continue;
            synor__jw_key(&w, synor_dtype_name((synor_dtype)t));
            synor__jw_obj_begin(&w);
            synor__jw_key(&w, "dense");
            synor__jw_num(&w, c->peak[t].dense / 1e12);
            synor__jw_key(&w, "sparse");
            synor__jw_num(&w, c->peak[t].sparse / 1e12);
            synor__jw_obj_end(&w);
        }
        synor__jw_obj_end(&w);
        synor__jw_key(&w, "memory_bytes");
        synor__jw_uint(&w, c->mem_bytes);
        synor__jw_key(&w, "available_memory_bytes");
        synor__jw_uint(&w, synor_device_available_memory(d));
        synor__jw_key(&w, "memory_bandwidth_gb_s");
        synor__jw_num(&w, c->mem_bandwidth / 1e9);
        synor__jw_key(&w, "memory_type");
        synor__jw_str(&w, synor_mem_type_name(c->mem_type));
        synor__jw_key(&w, "idle_w");
        synor__jw_num(&w, c->idle_watts);
        synor__jw_key(&w, "peak_w");
        synor__jw_num(&w, c->peak_watts);
        synor__jw_key(&w, "launch_us");
        synor__jw_num(&w, c->launch_latency * 1e6);
        synor__jw_key(&w, "operations");
        synor__jw_arr_begin(&w);
        for (int o = 0; o < SYNOR_OP_TYPE_COUNT; o++)
            if (c->ops & SYNOR_OP_BIT(o))
                synor__jw_str(&w, synor_op_type_name((synor_op_type)o));
        synor__jw_arr_end(&w);
        synor__jw_key(&w, "details");
        synor__jw_obj_begin(&w);
        for (size_t k = 0; k < synor_device_detail_count(d); k++) {
            const char *key, *val;
            synor_device_detail(d, k, &key, &val);
            synor__jw_key(&w, key);
            synor__jw_str(&w, val);
        }
        synor__jw_obj_end(&w);
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_key(&w, "notes");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < synor_detection_note_count(det); i++)
        synor__jw_str(&w, synor_detection_note(det, i));
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    char *s = synor__buf_take(&b);
    if (s) {
        puts(s);
        synor__free(s);
    }
}

static void write_table(synor_registry_entry *e, size_t n, const synor_detection *det)
{
    printf("%-16s %-6s %-9s %-44s %8s %8s %10s %8s %-14s %-9s\n", "ID", "KIND", "BACKEND",
           "NAME", "FP64", "FP32", "MEMORY", "GB/s", "CAPS FROM", "PEAK FROM");
    for (size_t i = 0; i < n; i++) {
        synor_device *d = e[i].device;
        const synor_caps *c = synor_device_caps(d);
        char f64[32], f32[32], mem[32], from[64], name[128];
        cli_fmt_tflops(c->peak[SYNOR_DTYPE_FP64].dense, f64, sizeof f64);
        cli_fmt_tflops(c->peak[SYNOR_DTYPE_FP32].dense, f32, sizeof f32);
        cli_fmt_bytes((double)c->mem_bytes, mem, sizeof mem);
        snprintf(from, sizeof from, "%s", synor_caps_origin_name(synor_device_caps_origin(d)));
        snprintf(name, sizeof name, "%s%s", synor_device_is_simulated(d) ? "[simulated] " : "",
                 synor_device_name(d));
        /* the first word of the detail (measured, derived, profile), else
         * where the capabilities came from */
        const char *ps = synor_device_detail_get(d, "peak_source");
        char peak_from[16];
        snprintf(peak_from, sizeof peak_from, "%.*s", ps ? (int)strcspn(ps, ":, ") : 15,
                 ps ? ps : synor_device_is_simulated(d) ? "profile" : from);
        printf("%-16s %-6s %-9s %-44.44s %8s %8s %10s %8.1f %-14s %-9s\n", e[i].id,
               synor_kind_name(synor_device_kind(d)), synor_device_backend(d), name, f64, f32,
               mem, c->mem_bandwidth / 1e9, from, peak_from);
    }
    printf("\nThroughput in dense TFLOPS. Details:\n");
    for (size_t i = 0; i < n; i++) {
        synor_device *d = e[i].device;
        char type[256], avail[32];
        synor_processor_type_format(synor_device_type(d), type, sizeof type);
        cli_fmt_bytes((double)synor_device_available_memory(d), avail, sizeof avail);
        printf("  %s: %s%s\n", e[i].id, type,
               synor_device_is_simulated(d) ? " (simulated: not present on this machine)" : "");
        if (synor_device_profile_id(d))
            printf("    profile %s (%s)\n", synor_device_profile_id(d),
                   synor_caps_origin_name(synor_device_caps_origin(d)));
        printf("    available memory %s, location %s\n", avail, synor_device_location(d));
        for (size_t k = 0; k < synor_device_detail_count(d); k++) {
            const char *key, *val;
            synor_device_detail(d, k, &key, &val);
            printf("    %s: %s\n", key, val);
        }
    }
    printf("\nDetection:\n");
    for (size_t i = 0; i < synor_detection_note_count(det); i++)
        printf("  %s\n", synor_detection_note(det, i));
}

int cli_devices(const cli_globals *g, int argc, char **argv)
{
    int json = 0;
    unsigned sources = SYNOR_DETECT_ALL;
    const char *cache = NULL;
    char cache_default[4096];
    const char *sim[32];
    int n_sim = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help();
            return CLI_OK;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--no-cuda") == 0) {
            sources &= ~(unsigned)SYNOR_DETECT_CUDA;
        } else if (strcmp(a, "--no-opencl") == 0) {
            sources &= ~(unsigned)SYNOR_DETECT_OPENCL;
        } else if (strcmp(a, "--no-measure") == 0) {
            sources &= ~(unsigned)SYNOR_DETECT_MEASURE;
        } else if (strcmp(a, "--remeasure") == 0) {
            sources |= SYNOR_DETECT_REMEASURE;
        } else if (strcmp(a, "--measure-cache") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error("devices", "--measure-cache needs a file");
            cache = argv[++i];
        } else if (strcmp(a, "--simulate") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("devices", "--simulate needs a profile id");
            if (n_sim == 32)
                return cli_usage_error("devices", "at most 32 --simulate devices");
            sim[n_sim++] = argv[++i];
        } else {
            return cli_usage_error("devices", "unknown argument '%s'", a);
        }
    }
    if (!(sources & SYNOR_DETECT_MEASURE) && (cache || (sources & SYNOR_DETECT_REMEASURE)))
        return cli_usage_error("devices", "--no-measure excludes --remeasure and --measure-cache");
    /* no cache directory: measure without caching */
    if (!cache && synor_detect_default_cache_path(cache_default, sizeof cache_default) == 0)
        cache = cache_default;
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    int rc = CLI_FAIL;
    synor_detection *det = NULL;
    synor_registry *reg = NULL;
    synor_registry_entry *e = NULL;
    size_t n = 0;
    if (synor_detect_run_cached(cat, sources, cache, &det) || synor_registry_create(&reg) ||
        synor_detection_register(det, reg, NULL)) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    for (int i = 0; i < n_sim; i++) {
        const synor_profile *p = synor_catalog_find(cat, sim[i]);
        synor_device *d;
        char id[SYNOR_REGISTRY_ID_MAX];
        if (!p) {
            cli_error("--simulate: %s", synor_errmsg());
            goto out;
        }
        snprintf(id, sizeof id, "sim-%s-%d", p->id, i);
        if (synor_device_create_simulated(p, NULL, &d)) {
            cli_error("%s", synor_errmsg());
            goto out;
        }
        int r = synor_registry_add(reg, id, d, NULL);
        synor_device_unref(d);
        if (r) {
            cli_error("%s", synor_errmsg());
            goto out;
        }
    }
    if (synor_registry_query_run(reg, NULL, &e, &n)) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    if (json)
        write_json(e, n, det);
    else
        write_table(e, n, det);
    rc = CLI_OK;
out:
    synor_registry_entries_free(e, n);
    synor_registry_destroy(reg);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
    return rc;
}
