/* cmd_registry.c - `synor registry`: load inventory files (and, with
 * --local, this machine's detected devices) into a device registry and query
 * it by kind, operation, capability, region, owner, status, reputation,
 * utilization and availability. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"

static void help(void)
{
    printf("usage: synor [--profiles FILE]... registry [--inventory FILE]... [--local] [--json]\n"
           "                                    [FILTER]...\n\n"
           "Builds a device registry from inventory files (docs/DEVICES.md) and, with --local,\n"
           "this machine's detected devices, then lists the devices matching every filter.\n\n"
           "  --inventory FILE      devices to register (repeatable)\n"
           "  --local               also register this machine's devices\n"
           "  --json                print JSON (format synor-registry/1)\n"
           "Filters:\n"
           "  --kind KIND           cpu gpu tpu npu lpu fpga dsp webgpu wasm custom\n"
           "  --op OP[:DTYPE]       supports operation OP in DTYPE (default fp32)\n"
           "  --min-memory SIZE     at least SIZE of memory, e.g. 40GiB\n"
           "  --min-tflops DTYPE:N  at least N dense TFLOPS (TOPS) in DTYPE\n"
           "  --region R            region R exactly\n"
           "  --owner O             owner O exactly\n"
           "  --status S[,S...]     online busy draining offline\n"
           "  --min-reputation N    reputation at least N (0..100)\n"
           "  --max-utilization F   reported utilization at most F (0..1)\n"
           "  --available-at H[,idle][,charging:PCT]\n"
           "                        allowed by the schedule at UTC hour H on a host in that state\n"
           "  --available-now       allowed by the schedule in this machine's current state\n"
           "  --real | --simulated  only real, or only simulated, devices\n"
           "  -h, --help\n");
}

static int parse_host_state(const char *s, synor_host_state *st)
{
    char buf[128];
    synor__strlcpy(buf, s, sizeof buf);
    memset(st, 0, sizeof *st);
    char *save, *tok = strtok_r(buf, ",", &save);
    if (!tok)
        return -1;
    char *end;
    long h = strtol(tok, &end, 10);
    if (*end || h < 0 || h > 23)
        return -1;
    st->utc_hour = (unsigned)h;
    while ((tok = strtok_r(NULL, ",", &save))) {
        if (strcmp(tok, "idle") == 0) {
            st->host_idle = 1;
        } else if (strncmp(tok, "charging:", 9) == 0) {
            long pct = strtol(tok + 9, &end, 10);
            if (*end || pct < 0 || pct > 100)
                return -1;
            st->charging = 1;
            st->battery_pct = (unsigned)pct;
        } else {
            return -1;
        }
    }
    return 0;
}

static void print_json(const synor_registry_entry *e, size_t n);

int cli_registry(const cli_globals *g, int argc, char **argv)
{
    const char *inv[32];
    int n_inv = 0, local = 0, json = 0;
    synor_registry_query q;
    memset(&q, 0, sizeof q);
    synor_host_state state;
    const char *cmd = "registry";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help();
            return CLI_OK;
        } else if (strcmp(a, "--local") == 0) {
            local = 1;
            takes = 0;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
            takes = 0;
        } else if (strcmp(a, "--real") == 0) {
            q.presence = 1;
            takes = 0;
        } else if (strcmp(a, "--simulated") == 0) {
            q.presence = 2;
            takes = 0;
        } else if (strcmp(a, "--available-now") == 0) {
            if (synor_host_state_read(&state)) {
                cli_error("%s", synor_errmsg());
                return CLI_FAIL;
            }
            q.available_in = &state;
            takes = 0;
        }
        if (!takes)
            continue;
        static const char *const with_value[] = {
            "--inventory", "--kind", "--op", "--min-memory", "--min-tflops", "--region",
            "--owner", "--status", "--min-reputation", "--max-utilization", "--available-at"};
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            known |= strcmp(a, with_value[k]) == 0;
        if (!known)
            return cli_usage_error(cmd, "unknown argument '%s'", a);
        if (!val)
            return cli_usage_error(cmd, "%s needs a value", a);
        if (strcmp(a, "--inventory") == 0) {
            if (n_inv == 32)
                return cli_usage_error(cmd, "at most 32 --inventory files");
            inv[n_inv++] = val;
        } else if (strcmp(a, "--kind") == 0) {
            q.by_kind = 1;
            if (synor_kind_from_name(val, &q.kind))
                return cli_usage_error(cmd, "%s", synor_errmsg());
        } else if (strcmp(a, "--op") == 0) {
            char buf[64];
            synor__strlcpy(buf, val, sizeof buf);
            char *colon = strchr(buf, ':');
            q.op_dtype = SYNOR_DTYPE_FP32;
            if (colon) {
                *colon = '\0';
                if (synor_dtype_from_name(colon + 1, &q.op_dtype))
                    return cli_usage_error(cmd, "%s", synor_errmsg());
            }
            if (synor_op_type_from_name(buf, &q.op))
                return cli_usage_error(cmd, "%s", synor_errmsg());
            q.by_op = 1;
        } else if (strcmp(a, "--min-memory") == 0) {
            char buf[64];
            const char *u = val;
            size_t k = 0;
            /* accept "40GiB" as well as "40 GiB" */
            while (*u && (*u == '.' || (*u >= '0' && *u <= '9')) && k < sizeof buf - 2)
                buf[k++] = *u++;
            buf[k++] = ' ';
            synor__strlcpy(buf + k, u, sizeof buf - k);
            if (synor__parse_size(buf, &q.min_memory))
                return cli_usage_error(cmd, "--min-memory: %s", synor_errmsg());
        } else if (strcmp(a, "--min-tflops") == 0) {
            char buf[64];
            synor__strlcpy(buf, val, sizeof buf);
            char *colon = strchr(buf, ':'), *end;
            if (!colon)
                return cli_usage_error(cmd, "--min-tflops expects DTYPE:N, got '%s'", val);
            *colon = '\0';
            if (synor_dtype_from_name(buf, &q.throughput_dtype))
                return cli_usage_error(cmd, "%s", synor_errmsg());
            q.min_throughput = strtod(colon + 1, &end) * 1e12;
            if (*end || !(q.min_throughput >= 0))
                return cli_usage_error(cmd, "--min-tflops: '%s' is not a number", colon + 1);
            q.by_throughput = 1;
        } else if (strcmp(a, "--region") == 0) {
            q.region = val;
        } else if (strcmp(a, "--owner") == 0) {
            q.owner = val;
        } else if (strcmp(a, "--status") == 0) {
            char buf[128];
            synor__strlcpy(buf, val, sizeof buf);
            char *save, *tok;
            for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                synor_device_status st;
                if (synor_device_status_from_name(tok, &st))
                    return cli_usage_error(cmd, "%s", synor_errmsg());
                q.status_mask |= 1u << st;
            }
        } else if (strcmp(a, "--min-reputation") == 0) {
            char *end;
            long r = strtol(val, &end, 10);
            if (*end || r < 0 || r > 100)
                return cli_usage_error(cmd, "--min-reputation: '%s' is not 0..100", val);
            q.min_reputation = (int)r;
        } else if (strcmp(a, "--max-utilization") == 0) {
            char *end;
            q.max_utilization = strtod(val, &end);
            if (*end || !(q.max_utilization > 0 && q.max_utilization <= 1))
                return cli_usage_error(cmd, "--max-utilization: '%s' is not in (0, 1]", val);
        } else if (strcmp(a, "--available-at") == 0) {
            if (parse_host_state(val, &state))
                return cli_usage_error(cmd, "--available-at expects H[,idle][,charging:PCT] with "
                                            "H 0..23, got '%s'", val);
            q.available_in = &state;
        } else {
            return cli_usage_error(cmd, "unknown argument '%s'", a);
        }
        i++;
    }
    if (!n_inv && !local)
        return cli_usage_error(cmd, "nothing to register: give --inventory FILE or --local");

    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    int rc = CLI_FAIL;
    synor_registry *reg = NULL;
    synor_detection *det = NULL;
    synor_registry_entry *e = NULL;
    size_t n = 0;
    if (synor_registry_create(&reg))
        goto fail;
    for (int i = 0; i < n_inv; i++)
        if (synor_registry_load_inventory(reg, cat, inv[i]))
            goto fail;
    if (local && (synor_detect_run(cat, SYNOR_DETECT_ALL & ~(unsigned)SYNOR_DETECT_MEASURE, &det) ||
                  synor_detection_register(det, reg, "local")))
        goto fail;
    if (synor_registry_query_run(reg, &q, &e, &n))
        goto fail;
    if (json) {
        print_json(e, n);
    } else {
        printf("%-22s %-6s %-34s %-10s %-10s %-9s %4s %5s %-12s %9s\n", "ID", "KIND", "NAME",
               "OWNER", "REGION", "STATUS", "REP", "UTIL", "AVAILABLE", "MEMORY");
        for (size_t i = 0; i < n; i++) {
            char avail[64], mem[32], name[128];
            synor_availability_format(&e[i].info.availability, avail, sizeof avail);
            cli_fmt_bytes((double)synor_device_caps(e[i].device)->mem_bytes, mem, sizeof mem);
            snprintf(name, sizeof name, "%s%s", synor_device_is_simulated(e[i].device) ? "[sim] " : "",
                     synor_device_name(e[i].device));
            printf("%-22s %-6s %-34.34s %-10.10s %-10.10s %-9s %4d %4.0f%% %-12.12s %9s\n", e[i].id,
                   synor_kind_name(synor_device_kind(e[i].device)), name, e[i].info.owner,
                   e[i].info.region, synor_device_status_name(e[i].info.status),
                   e[i].info.reputation, e[i].info.utilization * 100, avail, mem);
        }
        printf("\n%zu of %zu registered devices match.\n", n, synor_registry_count(reg));
    }
    rc = CLI_OK;
    goto out;
fail:
    cli_error("%s", synor_errmsg());
out:
    synor_registry_entries_free(e, n);
    synor_registry_destroy(reg);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
    return rc;
}

#include "json/json.h"

static void print_json(const synor_registry_entry *e, size_t n)
{
    synor__buf b;
    synor__jw w;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, 1);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "format");
    synor__jw_str(&w, "synor-registry/1");
    synor__jw_key(&w, "devices");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < n; i++) {
        char avail[64];
        synor_availability_format(&e[i].info.availability, avail, sizeof avail);
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "id");
        synor__jw_str(&w, e[i].id);
        synor__jw_key(&w, "name");
        synor__jw_str(&w, synor_device_name(e[i].device));
        synor__jw_key(&w, "kind");
        synor__jw_str(&w, synor_kind_name(synor_device_kind(e[i].device)));
        synor__jw_key(&w, "profile");
        if (synor_device_profile_id(e[i].device))
            synor__jw_str(&w, synor_device_profile_id(e[i].device));
        else
            synor__jw_null(&w);
        synor__jw_key(&w, "simulated");
        synor__jw_bool(&w, synor_device_is_simulated(e[i].device));
        synor__jw_key(&w, "owner");
        synor__jw_str(&w, e[i].info.owner);
        synor__jw_key(&w, "region");
        synor__jw_str(&w, e[i].info.region);
        synor__jw_key(&w, "location");
        synor__jw_str(&w, e[i].info.location);
        synor__jw_key(&w, "status");
        synor__jw_str(&w, synor_device_status_name(e[i].info.status));
        synor__jw_key(&w, "utilization");
        synor__jw_num(&w, e[i].info.utilization);
        synor__jw_key(&w, "reputation");
        synor__jw_int(&w, e[i].info.reputation);
        synor__jw_key(&w, "availability");
        synor__jw_str(&w, avail);
        synor__jw_key(&w, "memory_bytes");
        synor__jw_uint(&w, synor_device_caps(e[i].device)->mem_bytes);
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    char *s = synor__buf_take(&b);
    if (s) {
        puts(s);
        synor__free(s);
    }
}
