/* policy.c - the reward policy file: base rates as decimal strings in USD,
 * the reputation multiplier curve, the uptime bonus and the protocol fee;
 * strict validation (every error names FILE:LINE:COL, the field and the
 * value), the built-in policy (data/rewards/policy.json, embedded at build
 * time) and its JSON form. The curves are evaluated here in integers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "rewards/rewards_internal.h"
#include "json/json.h"

struct synor__builtin_file {
    const char *name;
    const char *text;
    size_t len;
};
extern const struct synor__builtin_file synor__builtin_rewards[];
extern const size_t synor__builtin_rewards_count;

#define FORMAT "synor-rewards-policy/1"

/* A decimal string member of obj, exactly, at 10^-scale, in [min, max]. */
static int fixed_member(const synor__jdoc *d, const synor__jval *obj, const char *path,
                        const char *key, unsigned scale, int64_t min, int64_t max, int64_t *out)
{
    synor__jval *v;
    char p[128];
    snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
    int rc = synor__json_member(d, obj, path, key, SYNOR__J_STRING, 1, &v);
    if (rc)
        return rc;
    int64_t x;
    rc = synor_rewards_parse_fixed(v->u.str.s, scale, INT64_MAX, "value", &x);
    if (rc)
        return synor__json_fail(d, v, rc, p, "\"%s\": %s (a decimal string, e.g. \"0.25\")",
                                v->u.str.s,
                                rc == SYNOR_ERANGE ? "too large" : "not a plain decimal number");
    if (x < min || x > max) {
        char lo[48], hi[48];
        return synor__json_fail(d, v, SYNOR_ERANGE, p, "\"%s\" is outside [%s, %s]", v->u.str.s,
                                synor_rewards_format_fixed(min, scale, lo, sizeof lo),
                                synor_rewards_format_fixed(max, scale, hi, sizeof hi));
    }
    *out = x;
    return 0;
}

static int parse_curve(const synor__jdoc *d, const synor__jval *arr, synor_rewards_policy *p)
{
    const char *path = "reputation_multiplier";
    int rc = synor__json_expect(d, arr, path, SYNOR__J_ARRAY);
    if (rc)
        return rc;
    if (arr->u.arr.n < 2 || arr->u.arr.n > SYNOR__REWARDS_MAX_POINTS)
        return synor__json_fail(d, arr, SYNOR_ESCHEMA, path,
                                "%zu points; the curve needs 2 to %d (from reputation 0 to 100)",
                                arr->u.arr.n, SYNOR__REWARDS_MAX_POINTS);
    static const char *const keys[] = {"reputation", "multiplier", NULL};
    for (size_t i = 0; i < arr->u.arr.n; i++) {
        const synor__jval *o = arr->u.arr.items[i];
        char pp[64];
        snprintf(pp, sizeof pp, "%s[%zu]", path, i);
        synor__jval *rv;
        int64_t rep, bp;
        if ((rc = synor__json_expect(d, o, pp, SYNOR__J_OBJECT)) ||
            (rc = synor__json_check_keys(d, o, pp, keys)) ||
            (rc = synor__json_member(d, o, pp, "reputation", SYNOR__J_NUMBER, 1, &rv)) ||
            (rc = synor__json_int(d, rv, pp, 0, 100, &rep)) ||
            (rc = fixed_member(d, o, pp, "multiplier", 4, 5000, 20000, &bp)))
            return rc;
        if (i == 0 && rep != 0)
            return synor__json_fail(d, rv, SYNOR_ESCHEMA, pp,
                                    "reputation %lld: the first point must be at 0",
                                    (long long)rep);
        if (i > 0 && rep <= p->point_rep[i - 1])
            return synor__json_fail(d, rv, SYNOR_ESCHEMA, pp,
                                    "reputation %lld: points must increase (previous %u)",
                                    (long long)rep, p->point_rep[i - 1]);
        if (i > 0 && bp < p->point_bp[i - 1])
            return synor__json_fail(d, synor__json_get(o, "multiplier"), SYNOR_ESCHEMA, pp,
                                    "multiplier below the previous point's: a higher "
                                    "reputation must never earn less");
        if (i + 1 == arr->u.arr.n && rep != 100)
            return synor__json_fail(d, rv, SYNOR_ESCHEMA, pp,
                                    "reputation %lld: the last point must be at 100",
                                    (long long)rep);
        p->point_rep[i] = (uint32_t)rep;
        p->point_bp[i] = (uint32_t)bp;
    }
    p->n_points = arr->u.arr.n;
    return 0;
}

static int parse(const synor__jdoc *d, synor_rewards_policy *p)
{
    const synor__jval *root = synor__jdoc_root(d);
    static const char *const top[] = {
        "format",       "note",         "currency", "base_rates", "reputation_multiplier",
        "uptime_bonus", "protocol_fee", NULL};
    static const char *const rates[] = {"per_tflop_s", "per_gflop_s", "per_gb",
                                        "per_available_hour", NULL};
    static const char *const up[] = {"from", "full", "max", NULL};
    synor__jval *fmt, *note, *cur, *br, *curve, *ub;
    int64_t from, full, max, fee;
    int rc;
    if ((rc = synor__json_expect(d, root, "(root)", SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, root, "(root)", top)) ||
        (rc = synor__json_member(d, root, "policy", "format", SYNOR__J_STRING, 1, &fmt)))
        return rc;
    if (strcmp(fmt->u.str.s, FORMAT) != 0)
        return synor__json_fail(d, fmt, SYNOR_ESCHEMA, "format", "\"%s\": expected \"%s\"",
                                fmt->u.str.s, FORMAT);
    if ((rc = synor__json_member(d, root, "policy", "note", SYNOR__J_STRING, 0, &note)) ||
        (rc = synor__json_member(d, root, "policy", "currency", SYNOR__J_STRING, 1, &cur)))
        return rc;
    if (strcmp(cur->u.str.s, "USD") != 0)
        return synor__json_fail(d, cur, SYNOR_ESCHEMA, "currency",
                                "\"%s\": amounts are micro-USD, the market's unit; expected "
                                "\"USD\"",
                                cur->u.str.s);
    int64_t M = SYNOR_REWARDS_MAX_RATE_PUSD;
    if ((rc = synor__json_member(d, root, "policy", "base_rates", SYNOR__J_OBJECT, 1, &br)) ||
        (rc = synor__json_check_keys(d, br, "base_rates", rates)) ||
        (rc = fixed_member(d, br, "base_rates", "per_tflop_s", 12, 0, M, &p->rate_tflop_s)) ||
        (rc = fixed_member(d, br, "base_rates", "per_gflop_s", 12, 0, M, &p->rate_gflop_s)) ||
        (rc = fixed_member(d, br, "base_rates", "per_gb", 12, 0, M, &p->rate_gb)) ||
        (rc = fixed_member(d, br, "base_rates", "per_available_hour", 12, 0, M, &p->rate_hour)) ||
        (rc = synor__json_member(d, root, "policy", "reputation_multiplier", SYNOR__J_ARRAY, 1,
                                 &curve)) ||
        (rc = parse_curve(d, curve, p)) ||
        (rc = synor__json_member(d, root, "policy", "uptime_bonus", SYNOR__J_OBJECT, 1, &ub)) ||
        (rc = synor__json_check_keys(d, ub, "uptime_bonus", up)) ||
        (rc = fixed_member(d, ub, "uptime_bonus", "from", 4, 0, 10000, &from)) ||
        (rc = fixed_member(d, ub, "uptime_bonus", "full", 4, 0, 10000, &full)) ||
        (rc = fixed_member(d, ub, "uptime_bonus", "max", 4, 0, 2000, &max)) ||
        (rc = fixed_member(d, root, "policy", "protocol_fee", 4, 0, 5000, &fee)))
        return rc;
    if (full <= from)
        return synor__json_fail(d, synor__json_get(ub, "full"), SYNOR_ESCHEMA, "uptime_bonus.full",
                                "\"%s\" must be above \"from\" (\"%s\")",
                                synor__json_get(ub, "full")->u.str.s,
                                synor__json_get(ub, "from")->u.str.s);
    p->uptime_from_bp = (uint32_t)from;
    p->uptime_full_bp = (uint32_t)full;
    p->uptime_max_bp = (uint32_t)max;
    p->fee_bp = (uint32_t)fee;
    if (note && !(p->note = synor__strdup(note->u.str.s)))
        return synor__error(SYNOR_ENOMEM, "out of memory");
    return 0;
}

int synor_rewards_policy_load_string(const char *text, size_t len, const char *name,
                                     synor_rewards_policy **out)
{
    if (!text || !out)
        return synor__error(SYNOR_EINVAL, "synor_rewards_policy_load_string: NULL argument");
    if (!name)
        name = "(policy)";
    synor__jdoc *d;
    int rc = synor__json_parse(text, len, name, &d);
    if (rc)
        return rc;
    synor_rewards_policy *p = synor__calloc(1, sizeof *p);
    if (!p) {
        synor__jdoc_free(d);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    rc = parse(d, p);
    synor__jdoc_free(d);
    if (!rc && !(p->origin = synor__strdup(name)))
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
    if (rc) {
        synor_rewards_policy_destroy(p);
        return rc;
    }
    *out = p;
    return 0;
}

int synor_rewards_policy_load_file(const char *path, synor_rewards_policy **out)
{
    if (!path || !out)
        return synor__error(SYNOR_EINVAL, "synor_rewards_policy_load_file: NULL argument");
    char *data;
    size_t len;
    int rc = synor__read_file(path, &data, &len);
    if (rc)
        return rc;
    rc = synor_rewards_policy_load_string(data, len, path, out);
    synor__free(data);
    return rc;
}

int synor_rewards_policy_load_builtin(synor_rewards_policy **out)
{
    for (size_t i = 0; i < synor__builtin_rewards_count; i++)
        if (strcmp(synor__builtin_rewards[i].name, "policy.json") == 0)
            return synor_rewards_policy_load_string(synor__builtin_rewards[i].text,
                                                    synor__builtin_rewards[i].len,
                                                    "builtin:policy.json", out);
    return synor__error(SYNOR_ENOENT, "no built-in reward policy (data/rewards/policy.json)");
}

void synor_rewards_policy_destroy(synor_rewards_policy *p)
{
    if (!p)
        return;
    synor__free(p->note);
    synor__free(p->origin);
    synor__free(p);
}

const char *synor_rewards_policy_origin(const synor_rewards_policy *p)
{
    return p ? p->origin : "";
}

uint32_t synor_rewards_fee_bp(const synor_rewards_policy *p)
{
    return p->fee_bp;
}

uint32_t synor_rewards_reputation_bp(const synor_rewards_policy *p, uint32_t reputation)
{
    if (reputation > 100)
        reputation = 100;
    for (size_t i = 1; i < p->n_points; i++) {
        uint32_t r0 = p->point_rep[i - 1], r1 = p->point_rep[i];
        if (reputation > r1)
            continue;
        uint32_t m0 = p->point_bp[i - 1], m1 = p->point_bp[i];
        /* m1 >= m0 (validated): no negative numerator */
        return m0 + (m1 - m0) * (reputation - r0) / (r1 - r0);
    }
    return p->point_bp[p->n_points - 1];
}

uint32_t synor_rewards_uptime_bonus_bp(const synor_rewards_policy *p, uint32_t uptime_bp)
{
    if (uptime_bp < p->uptime_from_bp)
        return 0;
    if (uptime_bp >= p->uptime_full_bp)
        return p->uptime_max_bp;
    return (uint32_t)((uint64_t)p->uptime_max_bp * (uptime_bp - p->uptime_from_bp) /
                      (p->uptime_full_bp - p->uptime_from_bp));
}

static void jw_fixed(synor__jw *w, const char *key, int64_t v, unsigned scale)
{
    char buf[48];
    synor__jw_key(w, key);
    synor__jw_str(w, synor_rewards_format_fixed(v, scale, buf, sizeof buf));
}

char *synor_rewards_policy_to_json(const synor_rewards_policy *p, int pretty)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, pretty);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "format");
    synor__jw_str(&w, FORMAT);
    if (p->note) {
        synor__jw_key(&w, "note");
        synor__jw_str(&w, p->note);
    }
    synor__jw_key(&w, "currency");
    synor__jw_str(&w, "USD");
    synor__jw_key(&w, "base_rates");
    synor__jw_obj_begin(&w);
    jw_fixed(&w, "per_tflop_s", p->rate_tflop_s, 12);
    jw_fixed(&w, "per_gflop_s", p->rate_gflop_s, 12);
    jw_fixed(&w, "per_gb", p->rate_gb, 12);
    jw_fixed(&w, "per_available_hour", p->rate_hour, 12);
    synor__jw_obj_end(&w);
    synor__jw_key(&w, "reputation_multiplier");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < p->n_points; i++) {
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "reputation");
        synor__jw_uint(&w, p->point_rep[i]);
        jw_fixed(&w, "multiplier", p->point_bp[i], 4);
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_key(&w, "uptime_bonus");
    synor__jw_obj_begin(&w);
    jw_fixed(&w, "from", p->uptime_from_bp, 4);
    jw_fixed(&w, "full", p->uptime_full_bp, 4);
    jw_fixed(&w, "max", p->uptime_max_bp, 4);
    synor__jw_obj_end(&w);
    jw_fixed(&w, "protocol_fee", p->fee_bp, 4);
    synor__jw_obj_end(&w);
    if (pretty)
        synor__buf_append(&b, "\n", 1);
    return synor__buf_take(&b);
}
