/* cmd_agent.c - `synor agent`: this machine as a provider of the compute
 * network (docs/AGENT.md), until SIGINT or SIGTERM; `--earnings` prints
 * what the provider earned. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/net_cli.h"
#include "common/common.h"
#include "synor/agent.h"
#include "synor/detect.h"

static void help(void)
{
    printf("usage: synor agent --coordinator URL --token-file F [--state-dir D]\n"
           "                   [--availability always|utc:HH-HH|idle] [--idle-threshold P]\n"
           "                   [--cpu-share P] [--mem-share P] [--devices cpu|all]\n"
           "                   [--model NAME=PATH]...\n"
           "                   [--price CREDITS] [--wait S] [--claim-max N] [--max-tasks N]\n"
           "                   [--quiet]\n"
           "                   [--test-fault wrong-results|die-after N|reclaim-after N]\n"
           "       synor agent --coordinator URL --token-file F --earnings\n"
           "       synor agent --state-dir D --reclaim\n\n"
           "Offers this machine's devices to a coordinator of the compute network: registers\n"
           "them, heartbeats, takes tasks (sgemm, spotrf, sum-f32, llm-generate), runs them\n"
           "with the runtime and uploads the results with their SHA-256, within the owner's\n"
           "limits (docs/AGENT.md). SIGINT or SIGTERM: the task running is finished and\n"
           "uploaded, then it exits 0 with a summary line on stderr. SIGUSR1 (or --reclaim):\n"
           "the owner takes the machine back: the task running stops at a safe point and is\n"
           "released to the coordinator with a checkpoint another agent resumes from, then\n"
           "it exits 0.\n\n" NET_OPTS_HELP
           "  --state-dir D       keeps the devices' ids and results not yet acknowledged\n"
           "                      (uploaded again at the next start); one agent per D\n"
           "  --availability A    always (default), utc:S-E[,S-E] (UTC hours), idle (only\n"
           "                      while the machine is otherwise idle), charging:MIN\n"
           "  --idle-threshold P  with idle: the machine is in use while other processes\n"
           "                      take more than this share of its CPU time (default 10%%)\n"
           "  --cpu-share P       share of the cores the runtime may use: 0.5 or 50%%\n"
           "                      (default all; at least one worker)\n"
           "  --mem-share P       share of the memory offered and usable by one task\n"
           "  --devices cpu|all   register the host CPU (default), or every device\n"
           "                      detection finds (GPUs through CUDA/OpenCL too)\n"
           "  --model NAME=PATH   a model llm-generate tasks may name (GGUF or llama2.c)\n"
           "  --price CREDITS     asking price per device-hour, e.g. 0.010000\n"
           "  --wait S            long poll per claim (default 20)\n"
           "  --claim-max N       take up to N tasks per claim when the coordinator offers\n"
           "                      batches (default 1)\n"
           "  --max-tasks N       exit after N tasks (tests, batch contributions)\n"
           "  --quiet             no event lines, only errors and the summary\n"
           "  --earnings          print the provider's balance and ledger, and exit\n"
           "  --reclaim           send SIGUSR1 to the agent running with --state-dir D\n"
           "  --test-fault F      FOR TESTS ONLY: wrong-results corrupts every result (a\n"
           "                      cheating provider); die-after N exits with 137 in the\n"
           "                      task after the N-th, its result saved but not uploaded;\n"
           "                      reclaim-after N reclaims at a task's N-th safe point;\n"
           "                      reclaim-bad-checkpoint N too, with a wrong SHA-256;\n"
           "                      pause-at N stops the process (SIGSTOP) at the N-th\n"
           "                      safe point, which judges the limits once continued\n"
           "Exit status: 0 stopped, 1 failure (the token refused, built without libcurl),\n"
           "2 usage error.\n");
}

static synor_agent *volatile the_agent;

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        synor_agent_reclaim(the_agent); /* the owner takes the machine back */
    else
        synor_agent_stop(the_agent);
}

/* --reclaim: SIGUSR1 to the agent holding --state-dir D (its pid is in
 * D/lock, which it keeps locked while it runs). */
static int reclaim(const char *dir)
{
    if (!dir)
        return cli_usage_error("agent", "--reclaim needs --state-dir D (the agent's)");
    char path[4096], buf[32] = "";
    snprintf(path, sizeof path, "%s/lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_error("agent: --reclaim: %s: %s", path, strerror(errno));
        return CLI_FAIL;
    }
    int held = flock(fd, LOCK_SH | LOCK_NB) != 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
    if (!held || pid <= 0) {
        cli_error("agent: --reclaim: no agent is running with --state-dir %s", dir);
        return CLI_FAIL;
    }
    if (kill((pid_t)pid, SIGUSR1)) {
        cli_error("agent: --reclaim: pid %ld: %s", pid, strerror(errno));
        return CLI_FAIL;
    }
    printf("synor agent: reclaim sent to pid %ld\n", pid);
    return CLI_OK;
}

static void log_line(void *user, const char *line)
{
    (void)user;
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    fprintf(stderr, "synor agent: %02d:%02d:%02d %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec, line);
}

/* A share: "0.5" or "50%" into (0, 1]. */
static int parse_share(const char *opt, const char *v, double *out)
{
    size_t n = strlen(v);
    double x;
    if (n > 1 && v[n - 1] == '%') {
        char buf[32];
        if (n >= sizeof buf)
            return cli_usage_error("agent", "%s '%s': expected 0.5 or 50%%", opt, v);
        memcpy(buf, v, n - 1);
        buf[n - 1] = 0;
        if (cli_parse_double("agent", opt, buf, 0, 100, &x) != CLI_OK)
            return CLI_USAGE;
        x /= 100;
    } else if (cli_parse_double("agent", opt, v, 0, 1, &x) != CLI_OK) {
        return CLI_USAGE;
    }
    if (x <= 0)
        return cli_usage_error("agent", "%s '%s': must be above 0", opt, v);
    *out = x;
    return CLI_OK;
}

/* The devices to register: the host CPU, or all that detection finds. */
static int find_devices(const cli_globals *g, int all, synor_agent_config *cfg)
{
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    synor_detection *det = NULL;
    unsigned src = SYNOR_DETECT_HOST | (all ? SYNOR_DETECT_CUDA | SYNOR_DETECT_OPENCL : 0);
    if (synor_detect_run(cat, src, &det)) {
        cli_error("agent: detection: %s", synor_errmsg());
        synor_catalog_destroy(cat);
        return CLI_FAIL;
    }
    size_t n = synor_detection_count(det);
    for (size_t i = 0; i < n && cfg->n_devices < SYNOR_AGENT_MAX_DEVICES; i++) {
        const synor_device *d = synor_detection_device(det, i);
        synor_agent_device *a = &cfg->devices[cfg->n_devices++];
        synor__strlcpy(a->name, synor_detection_device_id(det, i), sizeof a->name);
        synor__strlcpy(a->kind, synor_kind_name(synor_device_kind(d)), sizeof a->kind);
        const char *prof = synor_device_profile_id(d);
        synor__strlcpy(a->profile, prof ? prof : "", sizeof a->profile);
        const synor_caps *c = synor_device_caps(d);
        a->gflops = synor_caps_peak(c, SYNOR_DTYPE_FP32, 0) / 1e9;
        a->mem_bytes = (uint64_t)((double)c->mem_bytes * cfg->mem_share);
    }
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
    if (!cfg->n_devices) {
        cli_error("agent: detection found no device");
        return CLI_FAIL;
    }
    return CLI_OK;
}

static int earnings(net_opts *no)
{
    synor_netclient *c = NULL;
    int r = net_client("agent", no, &c);
    if (r != CLI_OK)
        return r;
    synor_net_request rq = {.method = "GET", .path = "/v1/earnings", .idempotent = 1};
    synor_net_response ans;
    r = net_call("agent", c, &rq, &ans);
    if (r == CLI_OK) {
        fwrite(ans.body, 1, ans.len, stdout);
        if (!ans.len || ans.body[ans.len - 1] != '\n')
            putchar('\n');
        synor_net_response_free(&ans);
    }
    synor_netclient_destroy(c);
    return r;
}

int cli_agent(const cli_globals *g, int argc, char **argv)
{
    synor_agent_config cfg;
    synor_agent_config_init(&cfg);
    net_opts no;
    memset(&no, 0, sizeof no);
    int all = 0, quiet = 0, want_earnings = 0, want_reclaim = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = net_opt("agent", &no, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (r)
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        }
        if (!strcmp(a, "--quiet")) {
            quiet = 1;
            continue;
        }
        if (!strcmp(a, "--earnings")) {
            want_earnings = 1;
            continue;
        }
        if (!strcmp(a, "--reclaim")) {
            want_reclaim = 1;
            continue;
        }
        if (!v)
            return cli_usage_error("agent", "%s needs a value", a);
        unsigned long long u = 0;
        r = CLI_OK;
        if (!strcmp(a, "--state-dir")) {
            cfg.state_dir = v;
        } else if (!strcmp(a, "--availability")) {
            if (synor_availability_parse(v, &cfg.availability))
                return cli_usage_error("agent", "--availability '%s': %s", v, synor_errmsg());
        } else if (!strcmp(a, "--cpu-share")) {
            r = parse_share(a, v, &cfg.cpu_share);
        } else if (!strcmp(a, "--mem-share")) {
            r = parse_share(a, v, &cfg.mem_share);
        } else if (!strcmp(a, "--idle-threshold")) {
            r = parse_share(a, v, &cfg.idle_threshold);
        } else if (!strcmp(a, "--devices")) {
            if (strcmp(v, "cpu") && strcmp(v, "all"))
                return cli_usage_error("agent", "--devices '%s': expected cpu or all", v);
            all = !strcmp(v, "all");
        } else if (!strcmp(a, "--model")) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || !eq[1])
                return cli_usage_error("agent", "--model '%s': expected NAME=PATH", v);
            if (cfg.n_models == SYNOR_AGENT_MAX_MODELS)
                return cli_usage_error("agent", "--model: at most %d", SYNOR_AGENT_MAX_MODELS);
            /* argv is ours to cut */
            argv[i + 1][eq - v] = 0;
            cfg.models[cfg.n_models].name = argv[i + 1];
            cfg.models[cfg.n_models++].path = eq + 1;
        } else if (!strcmp(a, "--price")) {
            double p;
            if (cli_parse_double("agent", a, v, 0, 1e9, &p) != CLI_OK)
                return CLI_USAGE;
            cfg.price = v;
        } else if (!strcmp(a, "--wait")) {
            r = cli_parse_double("agent", a, v, 0, 300, &cfg.wait_s);
        } else if (!strcmp(a, "--claim-max")) {
            r = cli_parse_uint("agent", a, v, 1, 256, &u);
            cfg.claim_max = (unsigned)u;
        } else if (!strcmp(a, "--max-tasks")) {
            r = cli_parse_uint("agent", a, v, 1, 1u << 30, &u);
            cfg.max_tasks = (unsigned)u;
        } else if (!strcmp(a, "--test-fault")) {
            if (!strcmp(v, "wrong-results")) {
                cfg.fault = SYNOR_AGENT_FAULT_WRONG_RESULTS;
            } else if (!strcmp(v, "die-after")) {
                if (i + 2 >= argc)
                    return cli_usage_error("agent", "--test-fault die-after needs N");
                r = cli_parse_uint("agent", "--test-fault die-after", argv[i + 2], 0, 1u << 30,
                                   &u);
                cfg.fault = SYNOR_AGENT_FAULT_DIE_AFTER;
                cfg.fault_n = (unsigned)u;
                i++;
            } else if (!strcmp(v, "reclaim-after") || !strcmp(v, "reclaim-bad-checkpoint") ||
                       !strcmp(v, "pause-at")) {
                if (i + 2 >= argc)
                    return cli_usage_error("agent", "--test-fault %s needs N", v);
                r = cli_parse_uint("agent", "--test-fault reclaim-after", argv[i + 2], 1,
                                   1u << 30, &u);
                cfg.fault = v[0] == 'p'    ? SYNOR_AGENT_FAULT_PAUSE_AT
                            : v[8] == 'a' ? SYNOR_AGENT_FAULT_RECLAIM_AFTER
                                          : SYNOR_AGENT_FAULT_RECLAIM_BAD_CHECKPOINT;
                cfg.fault_n = (unsigned)u;
                i++;
            } else {
                return cli_usage_error("agent", "--test-fault '%s': expected wrong-results, "
                                                "die-after N, reclaim-after N, "
                                                "reclaim-bad-checkpoint N or pause-at N",
                                       v);
            }
        } else {
            return cli_usage_error("agent", "unexpected argument '%s'", a);
        }
        if (r != CLI_OK)
            return r;
        i++;
    }
    if (want_earnings)
        return earnings(&no);
    if (want_reclaim)
        return reclaim(cfg.state_dir);
    int r = net_config("agent", &no, 1, &cfg.net);
    if (r != CLI_OK)
        return r;
    if (!synor_netclient_available()) {
        cli_error("agent: synor was built without libcurl and nettle");
        return CLI_FAIL;
    }
    if ((r = find_devices(g, all, &cfg)) != CLI_OK)
        return r;
    if (!quiet) {
        cfg.log = log_line;
    }
    if (cfg.fault != SYNOR_AGENT_FAULT_NONE)
        fprintf(stderr, "synor agent: WARNING: --test-fault is for tests only\n");
    synor_agent *ag = NULL;
    if (synor_agent_create(&cfg, &ag)) {
        cli_error("agent: %s", synor_errmsg());
        return CLI_FAIL;
    }
    the_agent = ag;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    synor_agent_stats st;
    synor_agent_stats_get(ag, &st);
    if (!quiet)
        fprintf(stderr, "synor agent: %u device(s), %u runtime worker(s), coordinator %s\n",
                cfg.n_devices, st.workers, no.url);
    int rc = synor_agent_run(ag);
    if (rc)
        cli_error("agent: %s", synor_errmsg());
    synor_agent_stats_get(ag, &st);
    fprintf(stderr,
            "synor agent: stopped: %llu done, %llu failed, %llu refused, %llu uploaded again, "
            "%llu heartbeats (%llu failed), %llu rounds outside the owner's limits, "
            "%llu released, %llu resumed\n",
            (unsigned long long)st.tasks_done, (unsigned long long)st.tasks_failed,
            (unsigned long long)st.results_rejected, (unsigned long long)st.reuploaded,
            (unsigned long long)st.heartbeats, (unsigned long long)st.heartbeat_errors,
            (unsigned long long)st.not_accepting, (unsigned long long)st.released,
            (unsigned long long)st.resumed);
    the_agent = NULL;
    synor_agent_destroy(ag);
    return rc ? CLI_FAIL : CLI_OK;
}
