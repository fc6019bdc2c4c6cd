/* cmd_jobs.c - the consumer's and operator's commands of the compute
 * network besides submit: `synor status [JOB]`, `synor fetch JOB -o FILE`,
 * `synor cancel JOB`, `synor token create|list|revoke`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/net_cli.h"
#include "common/common.h"
#include "json/json.h"

static const char *jstr(const synor__jval *o, const char *k, const char *dflt)
{
    const synor__jval *v = o ? synor__json_get(o, k) : NULL;
    return v && v->type == SYNOR__J_STRING ? v->u.str.s : dflt;
}

static long long jint(const synor__jval *o, const char *k)
{
    const synor__jval *v = o ? synor__json_get(o, k) : NULL;
    return v && v->type == SYNOR__J_NUMBER ? (long long)v->u.n.num : -1;
}

/* "j-3: running, 120/1000 done, 0 failed, cost 1.200000" */
static void job_line(const synor__jval *j, char *buf, size_t n)
{
    snprintf(buf, n, "%s: %s, %lld/%lld done, %lld failed, cost %s", jstr(j, "id", "?"),
             jstr(j, "state", "?"), jint(j, "done"), jint(j, "tasks"), jint(j, "failed"),
             jstr(j, "cost", "?"));
}

/* GET path, parsed; CLI_OK with *d, else printed. raw: the body printed as is. */
static int get_json(const char *cmd, synor_netclient *c, const char *path, int raw,
                    synor__jdoc **d)
{
    synor_net_request rq = {.method = "GET", .path = path, .idempotent = 1};
    synor_net_response ans;
    int r = net_call(cmd, c, &rq, &ans);
    if (r != CLI_OK)
        return r;
    if (raw) {
        fwrite(ans.body, 1, ans.len, stdout);
        if (!ans.len || ans.body[ans.len - 1] != '\n')
            putchar('\n');
    }
    if (d && synor__json_parse(ans.body, ans.len, path, d)) {
        cli_error("%s: %s", cmd, synor_errmsg());
        r = CLI_FAIL;
    }
    synor_net_response_free(&ans);
    return r;
}

static int fetch_to(const char *cmd, synor_netclient *c, const char *id, const char *file)
{
    char path[300];
    snprintf(path, sizeof path, "/v1/jobs/%s/result", id);
    synor_net_request rq = {.method = "GET", .path = path, .idempotent = 1};
    synor_net_response ans;
    if (synor_netclient_request(c, &rq, &ans)) {
        cli_error("%s: %s", cmd, synor_errmsg());
        return CLI_FAIL;
    }
    if (ans.status == 409) {
        cli_error("%s: job %s is not done yet (synor status %s)", cmd, id, id);
        synor_net_response_free(&ans);
        return CLI_FAIL;
    }
    if (synor_net_response_check(&ans, path)) {
        cli_error("%s: %s", cmd, synor_errmsg());
        synor_net_response_free(&ans);
        return CLI_FAIL;
    }
    int r = CLI_OK;
    if (synor__write_file_atomic(file, ans.body, ans.len)) {
        cli_error("%s: %s", cmd, synor_errmsg());
        r = CLI_FAIL;
    } else {
        fprintf(stderr, "synor %s: %s: %zu bytes into %s\n", cmd, id, ans.len, file);
    }
    synor_net_response_free(&ans);
    return r;
}

int net_wait_job(synor_netclient *c, const char *id, double poll_s, const char *out_file,
                 const char *cmd)
{
    char path[300], last[400] = "";
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    for (;;) {
        synor__jdoc *d = NULL;
        int r = get_json(cmd, c, path, 0, &d);
        if (r != CLI_OK)
            return r;
        const synor__jval *j = synor__jdoc_root(d);
        char line[400], state[32];
        job_line(j, line, sizeof line);
        synor__strlcpy(state, jstr(j, "state", "?"), sizeof state);
        synor__jdoc_free(d);
        if (strcmp(line, last)) {
            fprintf(stderr, "synor %s: %s\n", cmd, line);
            memcpy(last, line, sizeof last);
        }
        if (!strcmp(state, "done"))
            return out_file ? fetch_to(cmd, c, id, out_file) : CLI_OK;
        if (!strcmp(state, "failed") || !strcmp(state, "cancelled"))
            return CLI_FAIL;
        struct timespec ts = {(time_t)poll_s, (long)((poll_s - (double)(time_t)poll_s) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* Parses the common options and up to max_pos positional arguments. */
static int parse(const char *cmd, int argc, char **argv, net_opts *no, const char **pos,
                 int max_pos, int *n_pos, int *json, const char **out, void (*help)(void))
{
    *n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = net_opt(cmd, no, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (r)
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return -1;
        }
        if (json && !strcmp(a, "--json")) {
            *json = 1;
        } else if (out && !strcmp(a, "-o")) {
            if (i + 1 >= argc)
                return cli_usage_error(cmd, "-o needs a file");
            *out = argv[++i];
        } else if (a[0] != '-' && *n_pos < max_pos) {
            pos[(*n_pos)++] = a;
        } else {
            return cli_usage_error(cmd, "unexpected argument '%s'", a);
        }
    }
    return CLI_OK;
}

static void status_help(void)
{
    printf("usage: synor status --coordinator URL --token-file F [JOB] [--json]\n"
           "       synor status --coordinator URL --token-file F JOB --wait [-o FILE]\n\n"
           "Without JOB: this consumer's jobs, one line each; with JOB: its state, tasks done\n"
           "and failed, cost, and each shard's state. --json prints the coordinator's answer.\n"
           "--wait follows JOB until it ends (progress on stderr, exit 0 when done, 1 when\n"
           "failed or cancelled); -o then fetches its result into FILE.\n\n" NET_OPTS_HELP);
}

int cli_status(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    net_opts no;
    memset(&no, 0, sizeof no);
    const char *pos[1] = {NULL}, *out = NULL;
    int np = 0, json = 0, wait = 0;
    /* --wait first, the rest through parse */
    char *rest[64];
    int nr = 0;
    for (int i = 0; i < argc && nr < 64; i++) {
        if (!strcmp(argv[i], "--wait"))
            wait = 1;
        else
            rest[nr++] = argv[i];
    }
    int r = parse("status", nr, rest, &no, pos, 1, &np, &json, &out, status_help);
    if (r)
        return r < 0 ? CLI_OK : r;
    if ((wait || out) && !np)
        return cli_usage_error("status", "--wait and -o need a JOB");
    if (out && !wait)
        return cli_usage_error("status", "-o needs --wait (or use synor fetch)");
    synor_netclient *c = NULL;
    if ((r = net_client("status", &no, &c)) != CLI_OK)
        return r;
    if (wait) {
        r = net_wait_job(c, pos[0], 1, out, "status");
        synor_netclient_destroy(c);
        return r;
    }
    char path[300];
    if (np)
        snprintf(path, sizeof path, "/v1/jobs/%s", pos[0]);
    else
        snprintf(path, sizeof path, "/v1/jobs");
    synor__jdoc *d = NULL;
    r = get_json("status", c, path, json, &d);
    if (r == CLI_OK && !json) {
        const synor__jval *root = synor__jdoc_root(d);
        char line[400];
        if (np) {
            job_line(root, line, sizeof line);
            printf("%s\n", line);
            const synor__jval *sh = synor__json_get(root, "shards");
            for (size_t i = 0; sh && sh->type == SYNOR__J_ARRAY && i < sh->u.arr.n; i++) {
                const synor__jval *s = sh->u.arr.items[i];
                printf("  shard %lld: %s %s\n", jint(s, "index"), jstr(s, "state", "?"),
                       jstr(s, "result", "-"));
            }
        } else {
            const synor__jval *js = synor__json_get(root, "jobs");
            for (size_t i = 0; js && js->type == SYNOR__J_ARRAY && i < js->u.arr.n; i++) {
                job_line(js->u.arr.items[i], line, sizeof line);
                printf("%s\n", line);
            }
        }
    }
    synor__jdoc_free(d);
    synor_netclient_destroy(c);
    return r;
}

static void fetch_help(void)
{
    printf("usage: synor fetch --coordinator URL --token-file F JOB -o FILE\n\n"
           "Writes the job's result (its shards' results in shard order) into FILE once the\n"
           "job is done; fails, naming the state, before.\n\n" NET_OPTS_HELP);
}

int cli_fetch(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    net_opts no;
    memset(&no, 0, sizeof no);
    const char *pos[1] = {NULL}, *out = NULL;
    int np = 0;
    int r = parse("fetch", argc, argv, &no, pos, 1, &np, NULL, &out, fetch_help);
    if (r)
        return r < 0 ? CLI_OK : r;
    if (!np || !out)
        return cli_usage_error("fetch", "give JOB and -o FILE");
    synor_netclient *c = NULL;
    if ((r = net_client("fetch", &no, &c)) != CLI_OK)
        return r;
    r = fetch_to("fetch", c, pos[0], out);
    synor_netclient_destroy(c);
    return r;
}

static void cancel_help(void)
{
    printf("usage: synor cancel --coordinator URL --token-file F JOB\n\n"
           "Cancels one of this consumer's jobs: tasks not yet done are not run.\n\n"
           NET_OPTS_HELP);
}

int cli_cancel(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    net_opts no;
    memset(&no, 0, sizeof no);
    const char *pos[1] = {NULL};
    int np = 0;
    int r = parse("cancel", argc, argv, &no, pos, 1, &np, NULL, NULL, cancel_help);
    if (r)
        return r < 0 ? CLI_OK : r;
    if (!np)
        return cli_usage_error("cancel", "give JOB");
    synor_netclient *c = NULL;
    if ((r = net_client("cancel", &no, &c)) != CLI_OK)
        return r;
    char path[300];
    snprintf(path, sizeof path, "/v1/jobs/%s", pos[0]);
    synor_net_request rq = {.method = "DELETE", .path = path, .idempotent = 1};
    synor_net_response ans;
    if ((r = net_call("cancel", c, &rq, &ans)) == CLI_OK) {
        printf("%s: cancelled\n", pos[0]);
        synor_net_response_free(&ans);
    }
    synor_netclient_destroy(c);
    return r;
}

static void token_help(void)
{
    printf("usage: synor token create --role consumer|provider|operator --owner NAME [-o FILE]\n"
           "       synor token list\n"
           "       synor token revoke ID\n"
           "       (each with --coordinator URL --token-file OPERATOR_TOKEN_FILE)\n\n"
           "The operator's tokens: create prints the new token (or writes it to FILE, mode\n"
           "0600, and prints its id); the coordinator keeps only its SHA-256.\n\n"
           NET_OPTS_HELP);
}

int cli_token(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    net_opts no;
    memset(&no, 0, sizeof no);
    const char *pos[2] = {NULL, NULL}, *role = NULL, *owner = NULL, *out = NULL;
    int np = 0;
    /* --role and --owner first, the rest through parse */
    char *rest[64];
    int nr = 0;
    for (int i = 0; i < argc && nr < 64; i++) {
        if ((!strcmp(argv[i], "--role") || !strcmp(argv[i], "--owner")) && i + 1 < argc) {
            *(argv[i][2] == 'r' ? &role : &owner) = argv[i + 1];
            i++;
        } else {
            rest[nr++] = argv[i];
        }
    }
    int r = parse("token", nr, rest, &no, pos, 2, &np, NULL, &out, token_help);
    if (r)
        return r < 0 ? CLI_OK : r;
    if (!np)
        return cli_usage_error("token", "give create, list or revoke");
    const char *verb = pos[0];
    if (strcmp(verb, "create") && strcmp(verb, "list") && strcmp(verb, "revoke"))
        return cli_usage_error("token", "'%s': expected create, list or revoke", verb);
    if (!strcmp(verb, "create") && (!role || !owner || np != 1))
        return cli_usage_error("token", "create needs --role and --owner");
    if (!strcmp(verb, "revoke") && np != 2)
        return cli_usage_error("token", "revoke needs the token's ID");
    if (!strcmp(verb, "list") && np != 1)
        return cli_usage_error("token", "list takes no argument");
    synor_netclient *c = NULL;
    if ((r = net_client("token", &no, &c)) != CLI_OK)
        return r;
    synor_net_response ans;
    if (!strcmp(verb, "list")) {
        r = get_json("token", c, "/v1/tokens", 1, NULL);
    } else if (!strcmp(verb, "revoke")) {
        char path[128];
        unsigned long long id;
        if ((r = cli_parse_uint("token", "ID", pos[1], 0, INT64_MAX, &id)) == CLI_OK) {
            snprintf(path, sizeof path, "/v1/tokens/%llu", id);
            synor_net_request rq = {.method = "DELETE", .path = path, .idempotent = 1};
            if ((r = net_call("token", c, &rq, &ans)) == CLI_OK) {
                printf("token %llu revoked\n", id);
                synor_net_response_free(&ans);
            }
        }
    } else {
        synor__buf b;
        synor__buf_init(&b);
        synor__jw w;
        synor__jw_init(&w, &b, 0);
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "role");
        synor__jw_str(&w, role);
        synor__jw_key(&w, "owner");
        synor__jw_str(&w, owner);
        synor__jw_obj_end(&w);
        char *body = synor__buf_take(&b);
        synor_net_request rq = {.method = "POST", .path = "/v1/tokens", .body = body,
                                .body_len = body ? strlen(body) : 0};
        r = body ? net_call("token", c, &rq, &ans) : CLI_FAIL;
        synor__free(body);
        if (r == CLI_OK) {
            synor__jdoc *d = NULL;
            const char *tok = NULL;
            if (synor__json_parse(ans.body, ans.len, "POST /v1/tokens", &d) == 0)
                tok = jstr(synor__jdoc_root(d), "token", NULL);
            if (!tok) {
                cli_error("token: the answer has no token");
                r = CLI_FAIL;
            } else if (out) {
                char line[300];
                snprintf(line, sizeof line, "%s\n", tok);
                mode_t old = umask(077);
                if (synor__write_file_atomic(out, line, strlen(line))) {
                    cli_error("token: %s", synor_errmsg());
                    r = CLI_FAIL;
                } else {
                    printf("token %lld (%s, %s) written to %s\n", jint(synor__jdoc_root(d), "id"),
                           role, owner, out);
                }
                umask(old);
            } else {
                printf("%s\n", tok);
            }
            synor__jdoc_free(d);
            synor_net_response_free(&ans);
        }
    }
    synor_netclient_destroy(c);
    return r;
}
