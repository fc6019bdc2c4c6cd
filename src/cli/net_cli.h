/* net_cli.h - what the network commands share (synor agent, submit,
 * status, fetch, cancel, token): the coordinator options and the client. */
#ifndef SYNOR_NET_CLI_H
#define SYNOR_NET_CLI_H

#include "synor/netclient.h"

typedef struct net_opts {
    const char *url, *token_file, *cacert;
    double timeout_s; /* 0: the client's default */
    char token[256];
} net_opts;

/* Consumes --coordinator URL, --token-file F, --cacert F, --timeout S:
 * 1 consumed, 0 not ours, -1 usage error (printed). */
int net_opt(const char *cmd, net_opts *o, int argc, char **argv, int *i);
/* Checks the options (a usage error without --coordinator or, when
 * need_token, --token-file), reads the token and fills cfg. CLI_OK,
 * CLI_USAGE or CLI_FAIL (printed). */
int net_config(const char *cmd, net_opts *o, int need_token, synor_netclient_config *cfg);
/* The client for o; CLI_OK or CLI_FAIL (printed). */
int net_client(const char *cmd, net_opts *o, synor_netclient **c);
/* One request with its answer checked: CLI_OK with the answer in *ans (free
 * it), or CLI_FAIL printed ("synor CMD: WHAT: HTTP 404: ..."). */
int net_call(const char *cmd, synor_netclient *c, const synor_net_request *r,
             synor_net_response *ans);
/* Follows job id until it ends (progress lines on stderr), then fetches
 * its result into out_file (may be NULL). CLI_OK done, CLI_FAIL otherwise. */
int net_wait_job(synor_netclient *c, const char *id, double poll_s, const char *out_file,
                 const char *cmd);
/* The help lines of the options above. */
#define NET_OPTS_HELP                                                                       \
    "  --coordinator URL   the coordinator (http://HOST:PORT or https://...)\n"          \
    "  --token-file F      the file holding this user's token (syn_...)\n"               \
    "  --cacert F          TLS: the CA certificate that signed the coordinator's\n"      \
    "  --timeout S         seconds per request (default 60)\n"

#endif
