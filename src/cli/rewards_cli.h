/* rewards_cli.h - what `synor rewards` and `synor earnings` share: strict
 * option parsing (unknown, repeated or valueless options are usage errors)
 * and loading the reward policy. */
#ifndef SYNOR_REWARDS_CLI_H
#define SYNOR_REWARDS_CLI_H

#include "cli/cli.h"
#include "common/common.h"

typedef struct ropt {
    const char *name; /* "--id" */
    int takes_value;
    const char *value; /* set when seen ("" for a switch) */
} ropt;

/* Parses argv[from..argc) against opts (n). At most max_pos positional
 * arguments go to pos (NULL: none allowed). CLI_OK or CLI_USAGE (printed,
 * naming cmd). */
int rcli_parse(const char *cmd, int argc, char **argv, int from, ropt *opts, size_t n,
               const char **pos, int max_pos, int *n_pos);
const char *rcli_get(const ropt *opts, size_t n, const char *name);
/* The policy: FILE if given, else the built-in one; prints the error. */
synor_rewards_policy *rcli_policy(const char *file);
/* A decimal option into 10^-scale units in [min, max]; a usage error
 * naming the option and value otherwise. */
int rcli_fixed(const char *cmd, const char *opt, const char *v, unsigned scale, int64_t min,
               int64_t max, int64_t *out);

#endif
