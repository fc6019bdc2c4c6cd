/* cmd_coordinator.c - `synor coordinator`: the compute network's
 * coordinator (docs/NETWORK.md) until SIGINT or SIGTERM. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/common.h"
#include "synor/coord.h"
#include "synor/netstore.h"
#include "synor/rewards.h"

static void help(void)
{
    printf("usage: synor coordinator --db PATH|URL [--host ADDR] [--port N]\n"
           "                         [--operator-token-file F] [--tls-cert F --tls-key F]\n"
           "                         [--lease-timeout S] [--task-price CREDITS] [--replicas N]\n"
           "                         [--spot-rate R] [--max-wait S] [--max-json SIZE]\n"
           "                         [--max-blob SIZE] [--market DIR] [--log FILE] [--quiet]\n"
           "                         [--metrics-open] [--db-pool N] [--db-calls N]\n\n"
           "Runs the compute network's coordinator: the HTTP/JSON API of docs/NETWORK.md\n"
           "for operators, consumers and providers, over a store in SQLite (a file path)\n"
           "or PostgreSQL (a postgresql:// URL; several coordinators may share one).\n"
           "Prints \"synor coordinator: listening on http://HOST:PORT (store KIND)\" once\n"
           "ready; SIGINT or SIGTERM stop it (exit 0). Everything acknowledged is in the\n"
           "store: a coordinator killed any way restarts with it.\n\n"
           "  --db PATH|URL            the store (required)\n"
           "  --host ADDR              address to listen on (default 127.0.0.1)\n"
           "  --port N                 port (default 8420; 0: any free port)\n"
           "  --operator-token-file F  when the store has no operator yet, create one and\n"
           "                           write its token to F (mode 0600)\n"
           "  --tls-cert F, --tls-key F  serve HTTPS with this PEM certificate and key\n"
           "  --lease-timeout S        a device silent this long loses its leases (15)\n"
           "  --task-price CREDITS     what a validated task costs its job (0.010000)\n"
           "  --replicas N             replicas every shard gets at least (1)\n"
           "  --spot-rate R            share of claims given a known-answer task (0)\n"
           "  --max-wait S             longest long-poll of /v1/tasks/next (30)\n"
           "  --max-json SIZE          largest JSON body (1MiB)\n"
           "  --max-blob SIZE          largest blob or result (16MiB)\n"
           "  --market DIR             run the spot market on this journal directory\n"
           "  --log FILE               JSON-lines log (default: stderr)\n"
           "  --quiet                  no line per request (events only)\n"
           "  --metrics-open           /metrics without a token from loopback\n"
           "  --db-pool N              PostgreSQL: connections for claims and results running\n"
           "                           in parallel (16)\n"
           "  --db-calls N             PostgreSQL: combined calls of claims (and of results) run\n"
           "                           at once, at most --db-pool (half the cores, at least 2)\n"
           "Exit status: 0 stopped by a signal, 1 failure, 2 usage error.\n");
}

#if SYNOR_HAVE_COORD
static int write_token(const char *path, const char *token)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        cli_error("coordinator: cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    fchmod(fd, 0600);
    size_t n = strlen(token);
    int ok = write(fd, token, n) == (ssize_t)n && write(fd, "\n", 1) == 1 && !fsync(fd);
    close(fd);
    if (!ok) {
        cli_error("coordinator: cannot write %s", path);
        return -1;
    }
    return 0;
}
#endif

int cli_coordinator(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *db = NULL, *host = "127.0.0.1", *tokfile = NULL, *cert = NULL, *key = NULL,
               *market = NULL, *log = NULL, *price = NULL;
    unsigned long long port = 8420, replicas = 1, pool = 0, calls = 0;
    double lease = 15, spot = 0, wait = 30;
    uint64_t max_json = 1u << 20, max_blob = 16u << 20;
    int quiet = 0, metrics_open = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = CLI_OK;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return CLI_OK;
        }
        if (!strcmp(a, "--quiet")) {
            quiet = 1;
            continue;
        }
        if (!strcmp(a, "--metrics-open")) {
            metrics_open = 1;
            continue;
        }
        if (!v)
            return cli_usage_error("coordinator", "%s needs a value", a);
        if (!strcmp(a, "--db"))
            db = v;
        else if (!strcmp(a, "--host"))
            host = v;
        else if (!strcmp(a, "--port"))
            r = cli_parse_uint("coordinator", a, v, 0, 65535, &port);
        else if (!strcmp(a, "--operator-token-file"))
            tokfile = v;
        else if (!strcmp(a, "--tls-cert"))
            cert = v;
        else if (!strcmp(a, "--tls-key"))
            key = v;
        else if (!strcmp(a, "--lease-timeout"))
            r = cli_parse_seconds("coordinator", a, v, &lease);
        else if (!strcmp(a, "--task-price"))
            price = v;
        else if (!strcmp(a, "--replicas"))
            r = cli_parse_uint("coordinator", a, v, 1, 5, &replicas);
        else if (!strcmp(a, "--db-pool"))
            r = cli_parse_uint("coordinator", a, v, 1, 1024, &pool);
        else if (!strcmp(a, "--db-calls"))
            r = cli_parse_uint("coordinator", a, v, 1, 1024, &calls);
        else if (!strcmp(a, "--spot-rate"))
            r = cli_parse_double("coordinator", a, v, 0, 1, &spot);
        else if (!strcmp(a, "--max-wait"))
            r = cli_parse_seconds("coordinator", a, v, &wait);
        else if (!strcmp(a, "--max-json") || !strcmp(a, "--max-blob")) {
            uint64_t *dst = a[6] == 'j' ? &max_json : &max_blob;
            if (synor__parse_size(v, dst) || !*dst || *dst > (1ull << 31))
                return cli_usage_error("coordinator", "%s '%s': a size such as 1MiB (at most 2GiB)",
                                       a, v);
        } else if (!strcmp(a, "--market"))
            market = v;
        else if (!strcmp(a, "--log"))
            log = v;
        else
            return cli_usage_error("coordinator", "unexpected argument '%s'", a);
        if (r != CLI_OK)
            return r;
        i++;
    }
    if (!db)
        return cli_usage_error("coordinator", "no store: give --db PATH or --db postgresql://...");
    if (!!cert != !!key)
        return cli_usage_error("coordinator", "TLS needs both --tls-cert and --tls-key");
    int64_t task_price = 0;
    if (price && (synor_rewards_parse_fixed(price, 6, SYNOR_REWARDS_MAX_AMOUNT, "--task-price",
                                            &task_price) ||
                  !task_price))
        return cli_usage_error("coordinator", "--task-price '%s': credits above 0, at most 6 "
                                              "decimals",
                               price);
#if !SYNOR_HAVE_COORD
    (void)host, (void)tokfile, (void)market, (void)log, (void)quiet, (void)metrics_open;
    cli_error("coordinator: this synor was built without the compute network (it needs nettle "
              "and libmicrohttpd: scripts/setup.sh installs them)");
    return CLI_FAIL;
#else
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    synor_netstore_opts so = {.url = db, .lease_timeout_s = lease, .task_price = task_price,
                              .min_replicas = (unsigned)replicas, .spot_rate = spot,
                              .pool = (unsigned)pool, .calls = (unsigned)calls};
    synor_netstore *store = NULL;
    synor_coord *c = NULL;
    int rc = CLI_FAIL;
    if (synor_netstore_open(&so, &store)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    if (tokfile) {
        int has = 0;
        if (synor_netstore_has_operator(store, &has)) {
            cli_error("%s", synor_errmsg());
            goto out;
        }
        if (!has) {
            char tok[SYNOR_NET_TOKEN_LEN + 1];
            int64_t id;
            if (synor_netstore_token_create(store, SYNOR_NET_OPERATOR, "operator", tok, &id)) {
                cli_error("%s", synor_errmsg());
                goto out;
            }
            if (write_token(tokfile, tok))
                goto out;
            fprintf(stderr, "synor coordinator: operator token %lld written to %s\n",
                    (long long)id, tokfile);
        }
    }
    synor_coord_opts co = {.host = host, .port = (unsigned)port, .tls_cert = cert, .tls_key = key,
                           .max_json = max_json, .max_blob = max_blob, .max_wait_s = wait,
                           .metrics_open = metrics_open, .log_path = log, .quiet = quiet,
                           .market_dir = market};
    if (synor_coord_create(store, &co, &c) || synor_coord_start(c)) {
        cli_error("%s", synor_errmsg());
        goto out;
    }
    printf("synor coordinator: listening on %s://%s%s%s:%u (store %s)\n", cert ? "https" : "http",
           strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", synor_coord_port(c),
           synor_netstore_backend(store));
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "synor coordinator: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    synor_coord_stop(c);
    rc = CLI_OK;
out:
    synor_coord_destroy(c);
    synor_netstore_close(store);
    return rc;
#endif
}
