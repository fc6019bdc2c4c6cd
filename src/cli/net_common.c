/* net_common.c - the coordinator options and client of the network
 * commands (net_cli.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/net_cli.h"
#include "common/common.h"

int net_opt(const char *cmd, net_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strcmp(a, "--coordinator") && strcmp(a, "--token-file") && strcmp(a, "--cacert") &&
        strcmp(a, "--timeout"))
        return 0;
    if (*i + 1 >= argc) {
        cli_usage_error(cmd, "%s needs a value", a);
        return -1;
    }
    const char *v = argv[++*i];
    if (!strcmp(a, "--coordinator"))
        o->url = v;
    else if (!strcmp(a, "--token-file"))
        o->token_file = v;
    else if (!strcmp(a, "--cacert"))
        o->cacert = v;
    else if (cli_parse_seconds(cmd, a, v, &o->timeout_s) != CLI_OK)
        return -1;
    return 1;
}

/* An environment variable's value, NULL when unset or empty. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

int net_config(const char *cmd, net_opts *o, int need_token, synor_netclient_config *cfg)
{
    /* The options win over the environment. */
    if (!o->url)
        o->url = env("SYNOR_COORDINATOR");
    if (!o->token_file)
        o->token_file = env("SYNOR_TOKEN_FILE");
    if (!o->url)
        return cli_usage_error(cmd, "no coordinator: give --coordinator URL (or set "
                                    "SYNOR_COORDINATOR)");
    if (need_token && !o->token_file)
        return cli_usage_error(cmd, "no token: give --token-file F (or set SYNOR_TOKEN_FILE)");
    synor_netclient_config_init(cfg);
    cfg->url = o->url;
    cfg->cacert = o->cacert;
    if (o->timeout_s > 0)
        cfg->timeout_s = o->timeout_s;
    if (o->token_file) {
        char *text = NULL;
        size_t len = 0;
        if (synor__read_file(o->token_file, &text, &len)) {
            cli_error("%s: %s", cmd, synor_errmsg());
            return CLI_FAIL;
        }
        size_t b = 0, e = len;
        while (b < e && isspace((unsigned char)text[b]))
            b++;
        while (e > b && isspace((unsigned char)text[e - 1]))
            e--;
        if (e == b || e - b >= sizeof o->token || memchr(text + b, '\n', e - b)) {
            synor__free(text);
            cli_error("%s: --token-file %s: expected one token (syn_...) on one line", cmd,
                      o->token_file);
            return CLI_FAIL;
        }
        memcpy(o->token, text + b, e - b);
        o->token[e - b] = 0;
        memset(text, 0, len);
        synor__free(text);
        cfg->token = o->token;
    }
    return CLI_OK;
}

int net_client(const char *cmd, net_opts *o, synor_netclient **c)
{
    synor_netclient_config cfg;
    int r = net_config(cmd, o, 1, &cfg);
    if (r != CLI_OK)
        return r;
    if (synor_netclient_create(&cfg, c)) {
        cli_error("%s: %s", cmd, synor_errmsg());
        return CLI_FAIL;
    }
    return CLI_OK;
}

int net_call(const char *cmd, synor_netclient *c, const synor_net_request *r,
             synor_net_response *ans)
{
    if (synor_netclient_request(c, r, ans)) {
        cli_error("%s: %s", cmd, synor_errmsg());
        return CLI_FAIL;
    }
    char what[300];
    snprintf(what, sizeof what, "%s %s", r->method, r->path);
    if (synor_net_response_check(ans, what)) {
        cli_error("%s: %s", cmd, synor_errmsg());
        synor_net_response_free(ans);
        return CLI_FAIL;
    }
    return CLI_OK;
}
