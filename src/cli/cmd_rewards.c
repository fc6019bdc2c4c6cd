/* cmd_rewards.c - `synor rewards`: record contributions and payouts in a
 * reward ledger (a directory, --ledger DIR), show balances and entries,
 * and print the reward policy in force (docs/REWARDS.md).
 *
 * record and payout are safe to retry: the same --id answers "duplicate"
 * with the original entry and exit 0. balance and list open the ledger
 * read-only and create nothing (a missing directory is an error). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/rewards_cli.h"

/* ------------------------------------------------------------ shared */

int rcli_parse(const char *cmd, int argc, char **argv, int from, ropt *opts, size_t n,
               const char **pos, int max_pos, int *n_pos)
{
    int np = 0;
    for (int i = from; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            if (np >= max_pos)
                return cli_usage_error(cmd, "unexpected argument '%s'", a);
            pos[np++] = a;
            continue;
        }
        ropt *o = NULL;
        for (size_t k = 0; k < n; k++)
            if (strcmp(opts[k].name, a) == 0)
                o = &opts[k];
        if (!o && strncmp(cmd, "rewards ", 8) == 0 &&
            (strcmp(a, "--ledger") == 0 || strcmp(a, "--policy") == 0))
            return cli_usage_error(cmd, "%s goes before the command: synor rewards %s ... %s", a, a,
                                   cmd + 8);
        if (!o)
            return cli_usage_error(cmd, "unknown option '%s'", a);
        if (o->value)
            return cli_usage_error(cmd, "%s given twice", a);
        if (o->takes_value) {
            if (i + 1 >= argc)
                return cli_usage_error(cmd, "%s needs a value", a);
            o->value = argv[++i];
        } else {
            o->value = "";
        }
    }
    if (n_pos)
        *n_pos = np;
    return CLI_OK;
}

const char *rcli_get(const ropt *opts, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(opts[k].name, name) == 0)
            return opts[k].value;
    return NULL;
}

synor_rewards_policy *rcli_policy(const char *file)
{
    synor_rewards_policy *p = NULL;
    int rc =
        file ? synor_rewards_policy_load_file(file, &p) : synor_rewards_policy_load_builtin(&p);
    if (rc) {
        cli_error("%s", synor_errmsg());
        return NULL;
    }
    return p;
}

int rcli_fixed(const char *cmd, const char *opt, const char *v, unsigned scale, int64_t min,
               int64_t max, int64_t *out)
{
    int64_t x = 0;
    if (synor_rewards_parse_fixed(v, scale, max, opt, &x) != 0)
        return cli_usage_error(cmd, "%s", synor_errmsg());
    if (x < min) {
        char lo[48];
        return cli_usage_error(cmd, "%s: '%s' is below %s", opt, v,
                               synor_rewards_format_fixed(min, scale, lo, sizeof lo));
    }
    *out = x;
    return CLI_OK;
}

/* ------------------------------------------------------------ output */

static const char *usd(int64_t ticks, char *buf, size_t n)
{
    return synor_rewards_format_fixed(ticks, 6, buf, n);
}

static void print_entry(const synor_ledger_entry *e)
{
    char a[48], b[48], c[48];
    if (e->kind == SYNOR_LEDGER_PAYOUT) {
        printf("payout %s: seq %llu, %s, -%s USD, balance %s USD\n", e->id,
               (unsigned long long)e->seq, e->contributor, usd(e->amount, a, sizeof a),
               usd(e->balance, b, sizeof b));
        return;
    }
    const synor_reward *r = &e->reward;
    printf("reward %s: seq %llu, %s, %s%s%s\n", e->id, (unsigned long long)e->seq, e->contributor,
           e->device, e->period[0] ? ", period " : "", e->period);
    printf("  compute       %18s USD  (%s %s)\n", usd(r->compute, a, sizeof a),
           synor_rewards_format_fixed(e->work_milli, 3, b, sizeof b),
           r->unit == SYNOR_WORK_GFLOP_S ? "GFLOP-s" : "TFLOP-s");
    printf("  transfer      %18s USD  (%s GB)\n", usd(r->transfer, a, sizeof a),
           synor_rewards_format_fixed(e->gb_milli, 3, b, sizeof b));
    printf("  availability  %18s USD  (%s hours)\n", usd(r->availability, a, sizeof a),
           synor_rewards_format_fixed(e->hours_milli, 3, b, sizeof b));
    printf("  base          %18s USD\n", usd(r->base, a, sizeof a));
    printf("  reputation    %18s USD  (reputation %u: x%s)\n", usd(r->reputation_adj, a, sizeof a),
           e->reputation, synor_rewards_format_fixed(r->reputation_bp, 4, b, sizeof b));
    printf("  uptime bonus  %18s USD  (uptime %s%%: +%s%%)\n", usd(r->uptime_adj, a, sizeof a),
           synor_rewards_format_fixed(e->uptime_bp, 2, b, sizeof b),
           synor_rewards_format_fixed(r->uptime_bonus_bp, 2, c, sizeof c));
    printf("  amount        %18s USD\n", usd(e->amount, a, sizeof a));
    printf("  balance       %18s USD  (%s)\n", usd(e->balance, a, sizeof a), e->contributor);
}

static int emit(const synor_ledger_entry *e, int json, int dup)
{
    if (json) {
        char *s = synor_ledger_entry_to_json(e);
        if (!s) {
            cli_error("out of memory");
            return CLI_FAIL;
        }
        printf("{\"duplicate\":%s,\"entry\":%s}\n", dup ? "true" : "false", s);
        free(s);
        return CLI_OK;
    }
    if (dup)
        printf("duplicate: id %s is in the ledger already (seq %llu); nothing "
               "recorded. The "
               "original entry:\n",
               e->id, (unsigned long long)e->seq);
    print_entry(e);
    return CLI_OK;
}

static void help(void)
{
    printf("usage: synor rewards [--ledger DIR] [--policy FILE] COMMAND [ARGS]\n\n"
           "Contributor rewards (docs/REWARDS.md): each contribution's reward from "
           "the\n"
           "protocol's base rates, reputation multiplier (0.5x..2x) and uptime "
           "bonus (up to\n"
           "+20%%), kept in an append-only ledger in DIR with a running balance "
           "per\n"
           "contributor. Amounts are USD with 6 decimals (micro-USD, the market's "
           "ticks).\n\n"
           "Commands:\n"
           "  record --id ID --contributor C --device PROFILE [--tflops-s X | "
           "--gflops-s X]\n"
           "         [--gb X] [--available-hours H] [--uptime PCT] [--reputation "
           "R]\n"
           "         [--period LABEL] [--json]\n"
           "      record one contribution and print its breakdown. Work is in "
           "TFLOP-s for\n"
           "      accelerators and GFLOP-s for CPUs (the profile's kind decides); "
           "quantities\n"
           "      take up to 3 decimals, --uptime up to 2 (percent, default 0), "
           "--reputation\n"
           "      0..100 (default 50). The same --id again prints 'duplicate' and "
           "the\n"
           "      original entry (exit 0): a retry after a crash never pays twice.\n"
           "  payout --id ID --contributor C --amount USD [--json]\n"
           "      pay out of a balance; refused (exit 1) beyond the balance. "
           "Retry-safe.\n"
           "  balance [CONTRIBUTOR] [--json]\n"
           "      the balance of one contributor, or of every contributor\n"
           "  list [--contributor C] [--json]\n"
           "      the entries in order (JSON lines with --json)\n"
           "  policy\n"
           "      print the reward policy in force (JSON; --policy FILE or the "
           "built-in)\n\n"
           "Options:\n"
           "  --ledger DIR   the ledger directory (needed by record, payout, "
           "balance, list;\n"
           "                 balance and list never create it)\n"
           "  --policy FILE  a reward policy file instead of the built-in one\n"
           "Exit status: 0 success (a duplicate too), 1 failure, 2 usage error.\n");
}

/* ------------------------------------------------------------ commands */

static int open_ledger(const char *dir, int ro, synor_ledger **l)
{
    if (synor_ledger_open(dir, ro, l)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    if (synor_ledger_recovery_note(*l)[0])
        fprintf(stderr, "synor rewards: recovery: %s\n", synor_ledger_recovery_note(*l));
    return CLI_OK;
}

static int cmd_record(const cli_globals *g, const char *dir, const char *pfile, int argc,
                      char **argv, int from)
{
    ropt o[] = {{"--id", 1, NULL},
                {"--contributor", 1, NULL},
                {"--device", 1, NULL},
                {"--tflops-s", 1, NULL},
                {"--gflops-s", 1, NULL},
                {"--gb", 1, NULL},
                {"--available-hours", 1, NULL},
                {"--uptime", 1, NULL},
                {"--reputation", 1, NULL},
                {"--period", 1, NULL},
                {"--json", 0, NULL}};
    const size_t n = SYNOR__ARRAY_LEN(o);
    const char *cmd = "rewards record";
    int rc = rcli_parse(cmd, argc, argv, from, o, n, NULL, 0, NULL);
    if (rc)
        return rc;
    synor_contribution c;
    memset(&c, 0, sizeof c);
    c.id = rcli_get(o, n, "--id");
    c.contributor = rcli_get(o, n, "--contributor");
    c.device = rcli_get(o, n, "--device");
    c.period = rcli_get(o, n, "--period");
    if (!c.id || !c.contributor || !c.device)
        return cli_usage_error(cmd, "--id, --contributor and --device are required");
    const char *tf = rcli_get(o, n, "--tflops-s"), *gf = rcli_get(o, n, "--gflops-s");
    if (tf && gf)
        return cli_usage_error(cmd, "--tflops-s and --gflops-s: give one (the device's kind "
                                    "decides which)");
    const char *v;
    int64_t x = 0;
    unsigned long long rep = 50;
    const int64_t Q = SYNOR_REWARDS_MAX_QTY_MILLI;
    if ((tf || gf) && (rc = rcli_fixed(cmd, tf ? "--tflops-s" : "--gflops-s", tf ? tf : gf, 3, 0, Q,
                                       &c.work_milli)))
        return rc;
    if ((v = rcli_get(o, n, "--gb")) && (rc = rcli_fixed(cmd, "--gb", v, 3, 0, Q, &c.gb_milli)))
        return rc;
    if ((v = rcli_get(o, n, "--available-hours")) &&
        (rc = rcli_fixed(cmd, "--available-hours", v, 3, 0, Q, &c.hours_milli)))
        return rc;
    if ((v = rcli_get(o, n, "--uptime"))) {
        if ((rc = rcli_fixed(cmd, "--uptime", v, 2, 0, 10000, &x)))
            return rc;
        c.uptime_bp = (uint32_t)x;
    }
    if ((v = rcli_get(o, n, "--reputation")) &&
        (rc = cli_parse_uint(cmd, "--reputation", v, 0, 100, &rep)))
        return rc;
    c.reputation = (uint32_t)rep;
    if (!dir)
        return cli_usage_error(cmd, "--ledger DIR is required (before 'record')");
    synor_catalog *cat = cli_load_catalog(g);
    if (!cat)
        return CLI_FAIL;
    const synor_profile *prof = synor_catalog_find(cat, c.device);
    int is_cpu = prof && prof->type.kind == SYNOR_KIND_CPU;
    if (prof && ((tf && is_cpu) || (gf && !is_cpu))) {
        cli_error("%s is %s: give its work with %s", c.device, is_cpu ? "a CPU" : "an accelerator",
                  is_cpu ? "--gflops-s" : "--tflops-s");
        synor_catalog_destroy(cat);
        return CLI_FAIL;
    }
    synor_rewards_policy *p = rcli_policy(pfile);
    synor_ledger *l = NULL;
    rc = p ? open_ledger(dir, 0, &l) : CLI_FAIL;
    if (rc == CLI_OK) {
        synor_ledger_entry e;
        int dup = 0;
        if (synor_ledger_record(l, p, cat, &c, &e, &dup)) {
            cli_error("%s", synor_errmsg());
            rc = CLI_FAIL;
        } else {
            rc = emit(&e, rcli_get(o, n, "--json") != NULL, dup);
        }
    }
    synor_ledger_close(l);
    synor_rewards_policy_destroy(p);
    synor_catalog_destroy(cat);
    return rc;
}

static int cmd_payout(const char *dir, int argc, char **argv, int from)
{
    ropt o[] = {
        {"--id", 1, NULL}, {"--contributor", 1, NULL}, {"--amount", 1, NULL}, {"--json", 0, NULL}};
    const size_t n = SYNOR__ARRAY_LEN(o);
    const char *cmd = "rewards payout";
    int rc = rcli_parse(cmd, argc, argv, from, o, n, NULL, 0, NULL);
    if (rc)
        return rc;
    const char *id = rcli_get(o, n, "--id"), *who = rcli_get(o, n, "--contributor");
    const char *am = rcli_get(o, n, "--amount");
    if (!id || !who || !am)
        return cli_usage_error(cmd, "--id, --contributor and --amount are required");
    int64_t amount = 0;
    if ((rc = rcli_fixed(cmd, "--amount", am, 6, 1, SYNOR_REWARDS_MAX_AMOUNT, &amount)))
        return rc;
    if (!dir)
        return cli_usage_error(cmd, "--ledger DIR is required (before 'payout')");
    synor_ledger *l = NULL;
    if ((rc = open_ledger(dir, 0, &l)))
        return rc;
    synor_ledger_entry e;
    int dup = 0;
    if (synor_ledger_payout(l, id, who, amount, &e, &dup)) {
        cli_error("%s", synor_errmsg());
        rc = CLI_FAIL;
    } else {
        rc = emit(&e, rcli_get(o, n, "--json") != NULL, dup);
    }
    synor_ledger_close(l);
    return rc;
}

static void balance_line(const char *who, int64_t b, int json)
{
    char a[48];
    if (json)
        printf("{\"contributor\":\"%s\",\"balance_usd\":\"%s\",\"balance_ticks\":%"
               "lld}\n",
               who, usd(b, a, sizeof a), (long long)b);
    else
        printf("%-24s %18s USD\n", who, usd(b, a, sizeof a));
}

static int cmd_view(const char *dir, const char *what, int argc, char **argv, int from)
{
    int list = strcmp(what, "list") == 0;
    ropt o[] = {{"--json", 0, NULL}, {"--contributor", 1, NULL}};
    const size_t n = list ? 2 : 1;
    const char *pos[1];
    int np = 0;
    int rc = rcli_parse(list ? "rewards list" : "rewards balance", argc, argv, from, o, n, pos,
                        list ? 0 : 1, &np);
    if (rc)
        return rc;
    if (!dir)
        return cli_usage_error(list ? "rewards list" : "rewards balance",
                               "--ledger DIR is required");
    int json = rcli_get(o, n, "--json") != NULL;
    const char *who = list ? rcli_get(o, n, "--contributor") : np ? pos[0] : NULL;
    synor_ledger *l = NULL;
    if ((rc = open_ledger(dir, 1, &l)))
        return rc;
    if (!list && who) {
        int64_t b;
        if (synor_ledger_balance(l, who, &b)) {
            cli_error("%s", synor_errmsg());
            rc = CLI_FAIL;
        } else {
            balance_line(who, b, json);
        }
    } else if (!list) {
        for (size_t i = 0; i < synor_ledger_contributor_count(l); i++) {
            int64_t b;
            const char *name = synor_ledger_contributor_at(l, i, &b);
            balance_line(name, b, json);
        }
    } else {
        if (!json)
            printf("%5s  %-6s  %-20s  %-16s  %15s  %15s\n", "seq", "kind", "id", "contributor",
                   "amount USD", "balance USD");
        for (size_t i = 0; i < synor_ledger_count(l); i++) {
            const synor_ledger_entry *e = synor_ledger_at(l, i);
            if (who && strcmp(e->contributor, who) != 0)
                continue;
            if (json) {
                char *s = synor_ledger_entry_to_json(e);
                if (!s) {
                    cli_error("out of memory");
                    rc = CLI_FAIL;
                    break;
                }
                printf("%s\n", s);
                free(s);
            } else {
                char a[48], b[48];
                int64_t signed_amount = e->kind == SYNOR_LEDGER_PAYOUT ? -e->amount : e->amount;
                printf("%5llu  %-6s  %-20s  %-16s  %15s  %15s\n", (unsigned long long)e->seq,
                       e->kind == SYNOR_LEDGER_PAYOUT ? "payout" : "reward", e->id, e->contributor,
                       usd(signed_amount, a, sizeof a), usd(e->balance, b, sizeof b));
            }
        }
    }
    synor_ledger_close(l);
    return rc;
}

int cli_rewards(const cli_globals *g, int argc, char **argv)
{
    const char *dir = NULL, *pfile = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            help();
            return CLI_OK;
        }
        const char **slot = strcmp(argv[i], "--ledger") == 0   ? &dir
                            : strcmp(argv[i], "--policy") == 0 ? &pfile
                                                               : NULL;
        if (!slot)
            return cli_usage_error("rewards", "unknown option '%s'", argv[i]);
        if (*slot)
            return cli_usage_error("rewards", "%s given twice", argv[i]);
        if (i + 1 >= argc)
            return cli_usage_error("rewards", "%s needs a value", argv[i]);
        *slot = argv[++i];
    }
    if (i >= argc)
        return cli_usage_error("rewards", "missing command (record, payout, balance, list, "
                                          "policy)");
    const char *sub = argv[i];
    for (int k = i + 1; k < argc; k++)
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            help();
            return CLI_OK;
        }
    if (strcmp(sub, "record") == 0)
        return cmd_record(g, dir, pfile, argc, argv, i + 1);
    if (strcmp(sub, "payout") == 0)
        return cmd_payout(dir, argc, argv, i + 1);
    if (strcmp(sub, "balance") == 0 || strcmp(sub, "list") == 0)
        return cmd_view(dir, sub, argc, argv, i + 1);
    if (strcmp(sub, "policy") == 0) {
        if (i + 1 < argc)
            return cli_usage_error("rewards policy", "unexpected argument '%s'", argv[i + 1]);
        synor_rewards_policy *p = rcli_policy(pfile);
        if (!p)
            return CLI_FAIL;
        char *s = synor_rewards_policy_to_json(p, 1);
        printf("%s", s ? s : "");
        if (s)
            printf("origin: %s\n", synor_rewards_policy_origin(p));
        free(s);
        synor_rewards_policy_destroy(p);
        return s ? CLI_OK : CLI_FAIL;
    }
    return cli_usage_error("rewards", "unknown command '%s'", sub);
}
