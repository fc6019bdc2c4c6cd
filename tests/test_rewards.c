/* test_rewards.c - contributor rewards: exact fixed-point parsing, the
 * reward formula at values computed by hand, the multiplier's 0.5x/2x
 * bounds and the uptime bonus cap, errors (not wrapping) at the stated
 * limits, policy files named by file:line:col, the ledger (append, reopen,
 * balances, duplicate ids, payouts, a torn tail cut at every byte of the
 * last record, corruption in the middle, a writer killed with SIGKILL),
 * and the earnings estimate from a market's trades. */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "rewards/ledger_internal.h"
#include "synor.h"
#include "test.h"

static synor_catalog *cat;
static synor_rewards_policy *pol;
static char root[64];
static int ndirs;
static char sentinel; /* an output pointer set to it must keep it on failure */

static void setup(void)
{
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        abort();
    if (!pol && synor_rewards_policy_load_builtin(&pol))
        abort();
    if (!root[0]) {
        snprintf(root, sizeof root, "/tmp/synor-rewards-XXXXXX");
        if (!mkdtemp(root))
            abort();
    }
}

/* A new, not yet existing directory under root. */
static const char *new_dir(char *buf, size_t n)
{
    setup();
    snprintf(buf, n, "%s/l%d", root, ndirs++);
    return buf;
}

static synor_contribution contrib(const char *id, const char *who)
{
    synor_contribution c;
    memset(&c, 0, sizeof c);
    c.id = id;
    c.contributor = who;
    c.device = "nvidia-h100-sxm";
    c.work_milli = 3600000; /* 3600 TFLOP-s */
    c.gb_milli = 12500;     /* 12.5 GB */
    c.hours_milli = 1000;   /* 1 hour */
    c.uptime_bp = 9950;
    c.reputation = 70;
    return c;
}

static synor_rewards_policy *policy_str(const char *text)
{
    synor_rewards_policy *p = NULL;
    if (synor_rewards_policy_load_string(text, strlen(text), "p.json", &p))
        return NULL;
    return p;
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

TEST(fixed_point_parsing_is_exact)
{
    int64_t v;
    char buf[48];
    ASSERT_OK(synor_rewards_parse_fixed("0.00000001", 12, INT64_MAX, "r", &v));
    ASSERT_EQ(v, 10000);
    ASSERT_OK(synor_rewards_parse_fixed("1.5", 3, INT64_MAX, "q", &v));
    ASSERT_EQ(v, 1500);
    ASSERT_OK(synor_rewards_parse_fixed("7", 0, 7, "q", &v));
    ASSERT_EQ(v, 7);
    /* the limit itself, and one unit above it */
    ASSERT_OK(
        synor_rewards_parse_fixed("1000000000000000.000", 3, SYNOR_REWARDS_MAX_QTY_MILLI, "q", &v));
    ASSERT_EQ(v, SYNOR_REWARDS_MAX_QTY_MILLI);
    ASSERT(synor_rewards_parse_fixed("1000000000000000.001", 3, SYNOR_REWARDS_MAX_QTY_MILLI, "q",
                                     &v) == SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "q: '1000000000000000.001' is above the limit");
    ASSERT(synor_rewards_parse_fixed("99999999999999999999999999999", 3, INT64_MAX, "q", &v) ==
           SYNOR_ERANGE);
    ASSERT(synor_rewards_parse_fixed("9223372036854775.808", 3, INT64_MAX, "q", &v) ==
           SYNOR_ERANGE);
    ASSERT_OK(synor_rewards_parse_fixed("9223372036854775.807", 3, INT64_MAX, "q", &v));
    ASSERT_EQ(v, INT64_MAX);
    const char *bad[] = {"", ".", "-1", "+1", "1e3", " 1", "1.2.3", "1.2345", "0x10", "inf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT(synor_rewards_parse_fixed(bad[i], 3, INT64_MAX, "q", &v) == SYNOR_EINVAL);
        ASSERT_CONTAINS(synor_errmsg(), "q: '");
    }
    ASSERT_STREQ(synor_rewards_format_fixed(26844, 6, buf, sizeof buf), "0.026844");
    ASSERT_STREQ(synor_rewards_format_fixed(-1500, 3, buf, sizeof buf), "-1.500");
    ASSERT_STREQ(synor_rewards_format_fixed(INT64_MIN, 6, buf, sizeof buf),
                 "-9223372036854.775808");
}

/* The worked example of docs/REWARDS.md, by hand:
 *   compute 3600 TFLOP-s x 0.000001 = 0.003600, transfer 12.5 GB x 0.001 =
 *   0.012500, availability 1 h x 0.0001 = 0.000100; base 16,200 ticks;
 *   reputation 70: 1.0 + (2.0 - 1.0) x 20/50 = 1.4 -> 14,000 bp, 22,680;
 *   uptime 99.50%: 0.20 x (9950 - 9500)/(9990 - 9500) = 1836.7 -> 1836 bp;
 *   amount floor(16200 x 14000 x 11836 / 10^8) = floor(26844.048) = 26,844 */
TEST(formula_at_hand_computed_values)
{
    setup();
    synor_contribution c = contrib("c1", "alice");
    synor_reward r;
    ASSERT_OK(synor_rewards_compute(pol, cat, &c, &r));
    ASSERT_EQ(r.unit, SYNOR_WORK_TFLOP_S);
    ASSERT_EQ(r.compute, 3600);
    ASSERT_EQ(r.transfer, 12500);
    ASSERT_EQ(r.availability, 100);
    ASSERT_EQ(r.base, 16200);
    ASSERT_EQ(r.reputation_bp, 14000);
    ASSERT_EQ(r.reputation_adj, 6480);
    ASSERT_EQ(r.uptime_bonus_bp, 1836);
    ASSERT_EQ(r.uptime_adj, 4164);
    ASSERT_EQ(r.amount, 26844);
    ASSERT_EQ(r.base + r.reputation_adj + r.uptime_adj, r.amount);
    /* a CPU earns per GFLOP-s: 100,000 x 10^-8 USD = 0.001 USD */
    c.device = "amd-epyc-9654";
    c.work_milli = 100000000;
    c.gb_milli = 0;
    c.hours_milli = 2000;
    c.reputation = 50;
    c.uptime_bp = 9000;
    ASSERT_OK(synor_rewards_compute(pol, cat, &c, &r));
    ASSERT_EQ(r.unit, SYNOR_WORK_GFLOP_S);
    ASSERT_EQ(r.compute, 1000);
    ASSERT_EQ(r.availability, 200);
    ASSERT_EQ(r.amount, 1200);
    /* rounding is down, per component: 1 GFLOP-s is 0.01 tick */
    c.work_milli = 1999;
    c.hours_milli = 0;
    ASSERT_OK(synor_rewards_compute(pol, cat, &c, &r));
    ASSERT_EQ(r.compute, 0);
    ASSERT_EQ(r.amount, 0);
}

TEST(multiplier_bounds_and_curve)
{
    setup();
    ASSERT_EQ(synor_rewards_reputation_bp(pol, 0), 5000);
    ASSERT_EQ(synor_rewards_reputation_bp(pol, 25), 7500);
    ASSERT_EQ(synor_rewards_reputation_bp(pol, 50), 10000);
    ASSERT_EQ(synor_rewards_reputation_bp(pol, 75), 15000);
    ASSERT_EQ(synor_rewards_reputation_bp(pol, 100), 20000);
    ASSERT_EQ(synor_rewards_reputation_bp(pol, 1000), 20000);
    uint32_t prev = 0;
    for (uint32_t r = 0; r <= 100; r++) {
        uint32_t m = synor_rewards_reputation_bp(pol, r);
        ASSERT(m >= 5000 && m <= 20000 && m >= prev);
        prev = m;
    }
    synor_contribution c = contrib("c", "a");
    synor_reward r;
    c.uptime_bp = 0;
    c.reputation = 0;
    ASSERT_OK(synor_rewards_compute(pol, cat, &c, &r));
    ASSERT_EQ(r.amount, 8100); /* 16,200 x 0.5 */
    c.reputation = 100;
    ASSERT_OK(synor_rewards_compute(pol, cat, &c, &r));
    ASSERT_EQ(r.amount, 32400); /* x 2 */
    c.reputation = 101;
    ASSERT(synor_rewards_compute(pol, cat, &c, &r) == SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "reputation: 101");
}

TEST(uptime_bonus_is_capped_at_20_percent)
{
    setup();
    ASSERT_EQ(synor_rewards_uptime_bonus_bp(pol, 0), 0);
    ASSERT_EQ(synor_rewards_uptime_bonus_bp(pol, 9499), 0);
    ASSERT_EQ(synor_rewards_uptime_bonus_bp(pol, 9500), 0);
    ASSERT_EQ(synor_rewards_uptime_bonus_bp(pol, 9745), 1000);
    ASSERT_EQ(synor_rewards_uptime_bonus_bp(pol, 9990), 2000);
    ASSERT_EQ(synor_rewards_uptime_bonus_bp(pol, 10000), 2000);
    uint32_t prev = 0;
    for (uint32_t u = 0; u <= 10000; u++) {
        uint32_t b = synor_rewards_uptime_bonus_bp(pol, u);
        ASSERT(b <= 2000 && b >= prev);
        prev = b;
    }
    synor_contribution c = contrib("c", "a");
    synor_reward r;
    c.uptime_bp = 10000;
    c.reputation = 50;
    ASSERT_OK(synor_rewards_compute(pol, cat, &c, &r));
    ASSERT_EQ(r.amount, 19440); /* 16,200 x 1.2 */
    c.uptime_bp = 10001;
    ASSERT(synor_rewards_compute(pol, cat, &c, &r) == SYNOR_EINVAL);
}

#define POLICY_FMT                                                                                 \
    "{\"format\": \"synor-rewards-policy/1\", \"currency\": \"USD\",\n"                            \
    " \"base_rates\": {\"per_tflop_s\": \"%s\", \"per_gflop_s\": \"0\", "                          \
    "\"per_gb\": \"%s\",\n"                                                                        \
    "                \"per_available_hour\": \"0\"},\n"                                            \
    " \"reputation_multiplier\": [{\"reputation\": 0, \"multiplier\": "                            \
    "\"0.5\"},\n"                                                                                  \
    "   {\"reputation\": 100, \"multiplier\": \"%s\"}],\n"                                         \
    " \"uptime_bonus\": {\"from\": \"0.9\", \"full\": \"1\", \"max\": "                            \
    "\"%s\"},\n"                                                                                   \
    " \"protocol_fee\": \"0.1\"}\n"

static synor_rewards_policy *policy_with(const char *tflop, const char *gb, const char *top,
                                         const char *max)
{
    char text[1024];
    snprintf(text, sizeof text, POLICY_FMT, tflop, gb, top, max);
    return policy_str(text);
}

TEST(overflow_at_the_limits_is_an_error)
{
    setup();
    synor_rewards_policy *p = policy_with("1000", "1", "2", "0.2");
    ASSERT(p != NULL);
    synor_contribution c = contrib("x", "a");
    synor_reward r;
    c.hours_milli = 0; /* no plausibility check: the arithmetic alone */
    c.uptime_bp = 0;
    c.reputation = 50; /* 0.75x on this curve */
    /* largest rate x largest quantity: 10^15 x 10^18 / 10^9, far beyond */
    c.work_milli = SYNOR_REWARDS_MAX_QTY_MILLI;
    c.gb_milli = SYNOR_REWARDS_MAX_QTY_MILLI;
    ASSERT(synor_rewards_compute(p, cat, &c, &r) == SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "above the limit");
    c.work_milli = SYNOR_REWARDS_MAX_QTY_MILLI + 1;
    ASSERT(synor_rewards_compute(p, cat, &c, &r) == SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "work:");
    c.work_milli = -1;
    ASSERT(synor_rewards_compute(p, cat, &c, &r) == SYNOR_EINVAL);
    /* exactly at the amount limit: 666,666,666.666667 USD x 1.5 = 10^15 ticks */
    synor_rewards_policy_destroy(p);
    p = policy_with("0", "0.001", "1.5", "0.2"); /* a milli-GB earns one tick */
    c.work_milli = 0;
    c.reputation = 100; /* 1.5x */
    c.gb_milli = 666666666666667;
    ASSERT_OK(synor_rewards_compute(p, cat, &c, &r));
    ASSERT_EQ(r.base, 666666666666667);
    ASSERT_EQ(r.amount, 1000000000000000); /* floor(x 1.5) = 10^15 */
    c.gb_milli++;
    ASSERT(synor_rewards_compute(p, cat, &c, &r) == SYNOR_ERANGE);
    /* the uptime bonus can push it over too */
    c.gb_milli--;
    c.uptime_bp = 10000;
    ASSERT(synor_rewards_compute(p, cat, &c, &r) == SYNOR_ERANGE);
    synor_rewards_policy_destroy(p);
    /* at the smallest rate the largest quantity is exact: 10^18 x 1 / 10^9 */
    p = policy_with("0.000000000001", "0", "2", "0");
    c.uptime_bp = 0;
    c.gb_milli = 0;
    c.reputation = 50;
    c.work_milli = SYNOR_REWARDS_MAX_QTY_MILLI;
    ASSERT_OK(synor_rewards_compute(p, cat, &c, &r));
    ASSERT_EQ(r.compute, 1000000000);
    ASSERT_EQ(r.amount, 1250000000);
    synor_rewards_policy_destroy(p);
    /* more work than the device can do in the hours given */
    c = contrib("y", "a");
    c.hours_milli = 1000;
    c.work_milli = INT64_C(1000) * 1000 * 3600 * 10; /* 10 PFLOP/s for an hour */
    ASSERT(synor_rewards_compute(pol, cat, &c, &r) == SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "is more than a nvidia-h100-sxm can do in 1.000 hours");
}

TEST(bad_policies_name_file_line_column_and_field)
{
    setup();
    synor_rewards_policy *p = (synor_rewards_policy *)(void *)&sentinel;
    ASSERT(policy_with("0.000001", "0.001", "2", "0.21") == NULL);
    ASSERT_CONTAINS(synor_errmsg(), "p.json:6:54: uptime_bonus.max: \"0.21\" is outside");
    ASSERT(policy_with("-1", "0.001", "2", "0.2") == NULL);
    ASSERT_CONTAINS(synor_errmsg(), "p.json:2:32: base_rates.per_tflop_s: \"-1\"");
    ASSERT(policy_with("0.0000000000001", "0.001", "2", "0.2") == NULL);
    ASSERT_CONTAINS(synor_errmsg(), "base_rates.per_tflop_s");
    ASSERT(policy_with("1", "0.001", "2.5", "0.2") == NULL);
    ASSERT_CONTAINS(synor_errmsg(), "p.json:5:38: reputation_multiplier[1].multiplier: \"2.5\"");
    ASSERT(policy_str("{\"format\": \"synor-rewards-policy/1\", \"bogus\": 1}") == NULL);
    ASSERT_CONTAINS(synor_errmsg(), "p.json:1:");
    ASSERT_CONTAINS(synor_errmsg(), "bogus");
    ASSERT(synor_rewards_policy_load_file("/nonexistent/policy.json", &p) < 0);
    ASSERT(p == (synor_rewards_policy *)(void *)&sentinel);
    /* the built-in policy round-trips through its JSON form */
    char *j = synor_rewards_policy_to_json(pol, 1);
    ASSERT(j != NULL);
    synor_rewards_policy *q = policy_str(j);
    ASSERT(q != NULL);
    char *j2 = synor_rewards_policy_to_json(q, 1);
    ASSERT_STREQ(j, j2);
    free(j);
    free(j2);
    synor_rewards_policy_destroy(q);
}

TEST(ledger_append_reopen_balances)
{
    char d[128], path[160];
    new_dir(d, sizeof d);
    synor_ledger *l;
    ASSERT_OK(synor_ledger_open(d, 0, &l));
    synor_contribution a = contrib("a1", "alice"), b = contrib("b1", "bob");
    b.reputation = 50;
    b.uptime_bp = 0;
    synor_ledger_entry e;
    int dup = -1;
    ASSERT_OK(synor_ledger_record(l, pol, cat, &a, &e, &dup));
    ASSERT_EQ(dup, 0);
    ASSERT_EQ(e.seq, 1);
    ASSERT_EQ(e.balance, 26844);
    ASSERT_OK(synor_ledger_record(l, pol, cat, &b, &e, &dup));
    ASSERT_EQ(e.balance, 16200);
    a.id = "a2";
    ASSERT_OK(synor_ledger_record(l, pol, cat, &a, &e, &dup));
    ASSERT_EQ(e.balance, 2 * 26844);
    ASSERT_OK(synor_ledger_payout(l, "pay1", "alice", 10000, &e, &dup));
    ASSERT_EQ(e.balance, 2 * 26844 - 10000);
    ASSERT_EQ(e.seq, 4);
    synor_ledger_close(l);
    ASSERT_OK(synor_ledger_open(d, 1, &l));
    ASSERT_EQ(synor_ledger_count(l), 4);
    ASSERT_STREQ(synor_ledger_recovery_note(l), "");
    int64_t bal;
    ASSERT_OK(synor_ledger_balance(l, "alice", &bal));
    ASSERT_EQ(bal, 43688);
    ASSERT_OK(synor_ledger_balance(l, "bob", &bal));
    ASSERT_EQ(bal, 16200);
    ASSERT(synor_ledger_balance(l, "carol", &bal) == SYNOR_ENOENT);
    ASSERT_EQ(synor_ledger_contributor_count(l), 2);
    ASSERT_STREQ(synor_ledger_contributor_at(l, 0, &bal), "alice");
    const synor_ledger_entry *f = synor_ledger_find(l, "a1");
    ASSERT(f && f->reward.uptime_bonus_bp == 1836 && f->reward.compute == 3600);
    ASSERT(synor_ledger_payout(l, "p", "alice", 1, NULL, NULL) == SYNOR_ESTATE);
    synor_ledger_close(l);
    /* read-only opens create nothing */
    snprintf(path, sizeof path, "%s/none", d);
    ASSERT(synor_ledger_open(path, 1, &l) == SYNOR_ENOENT);
    ASSERT(file_size(path) < 0);
    /* one writer at a time */
    synor_ledger *l2;
    ASSERT_OK(synor_ledger_open(d, 0, &l));
    ASSERT(synor_ledger_open(d, 0, &l2) == SYNOR_EBUSY);
    ASSERT_OK(synor_ledger_open(d, 1, &l2));
    synor_ledger_close(l2);
    synor_ledger_close(l);
}

TEST(duplicate_id_returns_the_original)
{
    char d[128], path[200];
    new_dir(d, sizeof d);
    snprintf(path, sizeof path, "%s/ledger.log", d);
    synor_ledger *l;
    ASSERT_OK(synor_ledger_open(d, 0, &l));
    synor_contribution a = contrib("job-7", "alice");
    synor_ledger_entry e1, e2;
    int dup;
    ASSERT_OK(synor_ledger_record(l, pol, cat, &a, &e1, &dup));
    long long size = file_size(path);
    ASSERT_OK(synor_ledger_record(l, pol, cat, &a, &e2, &dup));
    ASSERT_EQ(dup, 1);
    ASSERT(memcmp(&e1, &e2, sizeof e1) == 0);
    ASSERT_EQ(file_size(path), size);
    ASSERT_EQ(synor_ledger_count(l), 1);
    /* the same id with other fields is not a retry */
    a.gb_milli++;
    ASSERT(synor_ledger_record(l, pol, cat, &a, &e2, &dup) == SYNOR_EEXIST);
    ASSERT_CONTAINS(synor_errmsg(), "id job-7: already in the ledger (seq 1)");
    ASSERT(synor_ledger_payout(l, "job-7", "alice", 5, &e2, &dup) == SYNOR_EEXIST);
    ASSERT_OK(synor_ledger_payout(l, "pay-1", "alice", 5, &e1, &dup));
    ASSERT_OK(synor_ledger_payout(l, "pay-1", "alice", 5, &e2, &dup));
    ASSERT_EQ(dup, 1);
    ASSERT_EQ(e2.seq, 2);
    int64_t bal;
    ASSERT_OK(synor_ledger_balance(l, "alice", &bal));
    ASSERT_EQ(bal, 26844 - 5);
    synor_ledger_close(l);
}

TEST(payout_beyond_balance_changes_nothing)
{
    char d[128], path[200];
    new_dir(d, sizeof d);
    snprintf(path, sizeof path, "%s/ledger.log", d);
    synor_ledger *l;
    ASSERT_OK(synor_ledger_open(d, 0, &l));
    synor_contribution a = contrib("a", "alice");
    ASSERT_OK(synor_ledger_record(l, pol, cat, &a, NULL, NULL));
    long long size = file_size(path);
    synor_ledger_entry e;
    memset(&e, 0x5a, sizeof e);
    ASSERT(synor_ledger_payout(l, "p1", "alice", 26845, &e, NULL) == SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "0.026845 USD is more than alice's balance of 0.026844 USD");
    ASSERT_EQ(e.seq, 0x5a5a5a5a5a5a5a5aull);
    ASSERT(synor_ledger_payout(l, "p1", "bob", 1, &e, NULL) == SYNOR_ENOENT);
    ASSERT(synor_ledger_payout(l, "p1", "alice", 0, &e, NULL) == SYNOR_EINVAL);
    ASSERT_EQ(file_size(path), size);
    ASSERT_EQ(synor_ledger_count(l), 1);
    ASSERT(synor_ledger_find(l, "p1") == NULL);
    /* the whole balance may be paid: to zero, not below */
    ASSERT_OK(synor_ledger_payout(l, "p1", "alice", 26844, &e, NULL));
    ASSERT_EQ(e.balance, 0);
    ASSERT(synor_ledger_payout(l, "p2", "alice", 1, &e, NULL) == SYNOR_ERANGE);
    synor_ledger_close(l);
}

/* A ledger with n entries; the byte offset where the last one starts. */
static long long build(const char *d, int n)
{
    synor_ledger *l;
    if (synor_ledger_open(d, 0, &l))
        return -1;
    char path[200], id[32];
    snprintf(path, sizeof path, "%s/ledger.log", d);
    long long start = 0;
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "e%d", i);
        /* names of one length: the records are the same size */
        synor_contribution c = contrib(id, i % 2 ? "carol" : "alice");
        c.gb_milli += i;
        start = file_size(path);
        if (synor_ledger_record(l, pol, cat, &c, NULL, NULL))
            return -1;
    }
    synor_ledger_close(l);
    return start;
}

static int copy_prefix(const char *from, const char *to_dir, long long n)
{
    char *data;
    size_t len;
    char path[200];
    if (synor__read_file(from, &data, &len))
        return -1;
    mkdir(to_dir, 0755);
    snprintf(path, sizeof path, "%s/ledger.log", to_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int ok = fd >= 0 && write(fd, data, (size_t)n) == n;
    if (fd >= 0)
        close(fd);
    synor__free(data);
    return ok ? 0 : -1;
}

TEST(torn_tail_recovers_at_every_byte)
{
    char d[128], path[200];
    new_dir(d, sizeof d);
    long long start = build(d, 3);
    ASSERT(start > 8);
    snprintf(path, sizeof path, "%s/ledger.log", d);
    long long end = file_size(path);
    for (long long cut = start; cut < end; cut++) {
        char t[128], tp[200];
        new_dir(t, sizeof t);
        ASSERT_OK(copy_prefix(path, t, cut));
        synor_ledger *l;
        ASSERT_OK(synor_ledger_open(t, 0, &l));
        ASSERT_EQ(synor_ledger_count(l), 2);
        if (cut > start)
            ASSERT_CONTAINS(synor_ledger_recovery_note(l), "a torn record at byte");
        snprintf(tp, sizeof tp, "%s/ledger.log", t);
        ASSERT_EQ(file_size(tp), start); /* the torn bytes are cut */
        int64_t bal;
        ASSERT_OK(synor_ledger_balance(l, "alice", &bal));
        ASSERT_EQ(bal, 26844);
        /* the retry of the unacknowledged entry is recorded once */
        synor_contribution c = contrib("e2", "alice");
        c.gb_milli += 2;
        synor_ledger_entry e;
        int dup = -1;
        ASSERT_OK(synor_ledger_record(l, pol, cat, &c, &e, &dup));
        ASSERT_EQ(dup, 0);
        ASSERT_EQ(e.seq, 3);
        ASSERT_OK(synor_ledger_record(l, pol, cat, &c, &e, &dup));
        ASSERT_EQ(dup, 1);
        synor_ledger_close(l);
        ASSERT_OK(synor_ledger_open(t, 1, &l));
        ASSERT_EQ(synor_ledger_count(l), 3);
        ASSERT_OK(synor_ledger_balance(l, "alice", &bal));
        /* e0, and e2: base 16,202 (2 milli-GB more) -> floor(26,847.36) */
        ASSERT_EQ(bal, 26844 + 26847);
        synor_ledger_close(l);
    }
}

TEST(corruption_in_the_middle_is_an_error)
{
    char d[128], path[200];
    new_dir(d, sizeof d);
    ASSERT(build(d, 3) > 0);
    snprintf(path, sizeof path, "%s/ledger.log", d);
    char *data;
    size_t len;
    ASSERT_OK(synor__read_file(path, &data, &len));
    size_t rec = (len - 8) / 3; /* the three records have the same size */
    /* a flipped byte inside the second record's body */
    char t[128], tp[200];
    new_dir(t, sizeof t);
    mkdir(t, 0755);
    snprintf(tp, sizeof tp, "%s/ledger.log", t);
    data[8 + rec + 40] ^= 1;
    ASSERT_OK(synor__write_file_atomic(tp, data, len));
    synor_ledger *l = (synor_ledger *)(void *)&sentinel;
    ASSERT(synor_ledger_open(t, 0, &l) == SYNOR_EPARSE);
    ASSERT(l == (synor_ledger *)(void *)&sentinel);
    char want[300];
    snprintf(want, sizeof want, "%s: a damaged record at byte %zu, but an intact record follows",
             tp, 8 + rec);
    ASSERT_CONTAINS(synor_errmsg(), want);
    ASSERT_EQ(file_size(tp), (long long)len); /* nothing cut */
    data[8 + rec + 40] ^= 1;
    /* an intact record whose running balance does not add up */
    synor_ledger_entry e;
    ASSERT(synor__ledger_decode((unsigned char *)data + 8 + rec + 8, rec - 8, &e) == NULL);
    e.balance += 1;
    unsigned char buf[SYNOR__LEDGER_MAX_RECORD];
    ASSERT_EQ(synor__ledger_encode(&e, buf), rec);
    char *bad = malloc(len);
    memcpy(bad, data, len);
    memcpy(bad + 8 + rec, buf, rec);
    ASSERT_OK(synor__write_file_atomic(tp, bad, len));
    ASSERT(synor_ledger_open(t, 1, &l) == SYNOR_EPARSE);
    ASSERT_CONTAINS(synor_errmsg(), "record at byte");
    ASSERT_CONTAINS(synor_errmsg(), "running balance");
    /* a record repeated (a replayed append) counts twice: refused */
    memcpy(bad, data, len);
    memcpy(bad + 8 + 2 * rec, data + 8 + rec, rec);
    ASSERT_OK(synor__write_file_atomic(tp, bad, len));
    ASSERT(synor_ledger_open(t, 1, &l) == SYNOR_EPARSE);
    ASSERT_CONTAINS(synor_errmsg(), "sequence number");
    /* not a ledger */
    ASSERT_OK(synor__write_file_atomic(tp, "hello, world", 12));
    ASSERT(synor_ledger_open(t, 1, &l) == SYNOR_EPARSE);
    ASSERT_CONTAINS(synor_errmsg(), "not a synor reward ledger");
    free(bad);
    synor__free(data);
}

TEST(balances_stay_within_the_limit)
{
    char d[128];
    new_dir(d, sizeof d);
    synor_rewards_policy *p = policy_with("0", "0.001", "1", "0");
    ASSERT(p != NULL);
    synor_ledger *l;
    ASSERT_OK(synor_ledger_open(d, 0, &l));
    synor_contribution c = contrib("big1", "whale");
    c.work_milli = c.hours_milli = 0;
    c.uptime_bp = 0;
    c.reputation = 100;
    c.gb_milli = 600000000000000; /* 6 x 10^14 ticks */
    ASSERT_OK(synor_ledger_record(l, p, cat, &c, NULL, NULL));
    c.id = "big2";
    ASSERT(synor_ledger_record(l, p, cat, &c, NULL, NULL) == SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "the balance would pass 1000000000.000000 USD");
    ASSERT_EQ(synor_ledger_count(l), 1);
    c.gb_milli = 400000000000000;
    ASSERT_OK(synor_ledger_record(l, p, cat, &c, NULL, NULL));
    int64_t b;
    ASSERT_OK(synor_ledger_balance(l, "whale", &b));
    ASSERT_EQ(b, SYNOR_REWARDS_MAX_AMOUNT);
    synor_ledger_close(l);
    synor_rewards_policy_destroy(p);
}

/* A writer killed with SIGKILL while recording in a loop: every entry it
 * acknowledged (through a pipe, after the call returned) is in the ledger
 * exactly once; retries of everything it tried are never counted twice. */
TEST(sigkill_while_recording_loses_no_acknowledged_entry)
{
    char d[128];
    new_dir(d, sizeof d);
    int fds[2];
    ASSERT(pipe(fds) == 0);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        synor_ledger *l;
        if (synor_ledger_open(d, 0, &l))
            _exit(3);
        for (int i = 0;; i++) {
            char id[32];
            snprintf(id, sizeof id, "k%d", i);
            synor_contribution c = contrib(id, i % 3 ? "alice" : "bob");
            if (synor_ledger_record(l, pol, cat, &c, NULL, NULL))
                _exit(4);
            if (write(fds[1], &i, sizeof i) != sizeof i)
                _exit(5);
        }
    }
    close(fds[1]);
    int acked = -1, v;
    while (acked < 40 && read(fds[0], &v, sizeof v) == sizeof v)
        acked = v;
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    while (read(fds[0], &v, sizeof v) == sizeof v)
        acked = v;
    close(fds[0]);
    ASSERT(acked >= 40);
    synor_ledger *l;
    ASSERT_OK(synor_ledger_open(d, 0, &l));
    size_t n = synor_ledger_count(l);
    ASSERT(n >= (size_t)acked + 1 && n <= (size_t)acked + 2);
    for (int i = 0; i <= acked; i++) {
        char id[32];
        snprintf(id, sizeof id, "k%d", i);
        const synor_ledger_entry *e = synor_ledger_find(l, id);
        ASSERT(e != NULL && e->seq == (uint64_t)i + 1);
    }
    /* the client retries from its last acknowledgement on: one entry each */
    for (int i = acked + 1; i <= acked + 3; i++) {
        char id[32];
        snprintf(id, sizeof id, "k%d", i);
        synor_contribution c = contrib(id, i % 3 ? "alice" : "bob");
        int dup;
        ASSERT_OK(synor_ledger_record(l, pol, cat, &c, NULL, &dup));
        ASSERT_OK(synor_ledger_record(l, pol, cat, &c, NULL, &dup));
        ASSERT_EQ(dup, 1);
    }
    ASSERT_EQ(synor_ledger_count(l), (size_t)acked + 4);
    int64_t a, b;
    ASSERT_OK(synor_ledger_balance(l, "alice", &a));
    ASSERT_OK(synor_ledger_balance(l, "bob", &b));
    ASSERT_EQ(a + b, 26844LL * (acked + 4));
    long nb = 0;
    for (int i = 0; i < acked + 4; i++)
        nb += i % 3 == 0;
    ASSERT_EQ(b, 26844LL * nb);
    synor_ledger_close(l);
}

static void place(synor_market *m, uint32_t res, const char *owner, synor_side side, int64_t price,
                  int64_t qty, uint64_t id, uint64_t t)
{
    synor_market_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = SYNOR_CMD_PLACE;
    c.time = t;
    c.order_id = id;
    if (synor_market_owner(m, owner, &c.owner))
        abort();
    c.resource = res;
    c.side = side;
    c.type = SYNOR_LIMIT;
    c.tif = SYNOR_GTC;
    c.price = price;
    c.qty = qty;
    if (synor_market_submit(m, &c))
        abort();
}

TEST(earnings_from_the_market_vwap)
{
    setup();
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    synor_market *m;
    ASSERT_OK(synor_market_open(&cfg, &m));
    uint32_t eu, us;
    ASSERT_OK(synor_market_resource(m, cat, "gpu/nvidia-h100-sxm/eu-west", &eu));
    ASSERT_OK(synor_market_resource(m, cat, "gpu/nvidia-h100-sxm/us-east", &us));
    const uint64_t H = 3600000000000ull;
    place(m, eu, "alice", SYNOR_ASK, 2490000, 8, 1, 1 * H);
    place(m, eu, "bob", SYNOR_BID, 2600000, 3, 2, 1 * H + 1); /* 3 at 2.49 */
    place(m, us, "carol", SYNOR_ASK, 2000000, 5, 3, 2 * H);
    place(m, us, "dave", SYNOR_BID, 2000000, 1, 4, 2 * H + 1); /* 1 at 2.00 */
    synor_earnings_options o;
    synor_earnings_options_init(&o);
    o.hours_per_day_milli = 8000;
    o.market_name = "M";
    synor_earnings r;
    ASSERT_OK(synor_earnings_estimate(m, cat, pol, "nvidia-h100-sxm", &o, &r));
    /* (3 x 2.49 + 1 x 2.00) / 4 = 2.3675 */
    ASSERT_EQ(r.price, 2367500);
    ASSERT_EQ(r.volume_24h, 4);
    ASSERT_EQ(r.n_resources, 2);
    ASSERT_STREQ(r.resource, "gpu/nvidia-h100-sxm/*");
    /* 2.3675 x 8 x 30.44 x 0.5 = 288.2668; fee 5% = 14.41334 */
    ASSERT_EQ(r.level[0].utilisation_bp, 5000);
    ASSERT_EQ(r.level[0].gross, 288266800);
    ASSERT_EQ(r.level[0].fee, 14413340);
    ASSERT_EQ(r.level[0].net, 288266800 - 14413340);
    ASSERT_EQ(r.level[1].gross, 403573520);
    ASSERT_EQ(r.level[2].gross, 576533600);
    ASSERT_EQ(r.level[2].electricity, 0);
    /* one region, with electricity: 700 W x 8 h x 30.44 x 1.2 x 0.15 USD =
     * 30.68352 USD at 100%; at 50%: (70 + 630 x 0.5) W = 385 W -> 16.875936 */
    o.region = "eu-west";
    o.electricity_pusd_kwh = 150000000000;
    o.pue_milli = 1200;
    ASSERT_OK(synor_earnings_estimate(m, cat, pol, "nvidia-h100-sxm", &o, &r));
    ASSERT_EQ(r.price, 2490000);
    ASSERT_EQ(r.idle_mw, 70000);
    ASSERT_EQ(r.peak_mw, 700000);
    ASSERT_EQ(r.level[2].electricity, 30683520);
    ASSERT_EQ(r.level[0].electricity, 16875936);
    ASSERT_EQ(r.level[2].net, r.level[2].gross - r.level[2].fee - 30683520);
    /* no trades of the device: an error, never a constant */
    memset(&r, 0x5a, sizeof r);
    ASSERT(synor_earnings_estimate(m, cat, pol, "nvidia-a100-80gb", &o, &r) == SYNOR_ENOENT);
    ASSERT_CONTAINS(synor_errmsg(), "no recent trades of gpu/nvidia-a100-80gb/eu-west in M");
    ASSERT_EQ(r.price, 0x5a5a5a5a5a5a5a5all);
    o.region = NULL;
    /* trades older than 24 h before the market's last command are not recent */
    place(m, eu, "erin", SYNOR_ASK, 9000000, 1, 5, 30 * H);
    ASSERT(synor_earnings_estimate(m, cat, pol, "nvidia-h100-sxm", &o, &r) == SYNOR_ENOENT);
    ASSERT_CONTAINS(synor_errmsg(), "no recent trades of gpu/nvidia-h100-sxm/* in M");
    synor_market_close(m);
}

TEST(cleanup)
{
    synor_rewards_policy_destroy(pol);
    synor_catalog_destroy(cat);
    pol = NULL;
    cat = NULL;
    if (root[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        ASSERT(system(cmd) == 0);
    }
}

TEST_MAIN(fixed_point_parsing_is_exact, formula_at_hand_computed_values,
          multiplier_bounds_and_curve, uptime_bonus_is_capped_at_20_percent,
          overflow_at_the_limits_is_an_error, bad_policies_name_file_line_column_and_field,
          ledger_append_reopen_balances, duplicate_id_returns_the_original,
          payout_beyond_balance_changes_nothing, torn_tail_recovers_at_every_byte,
          corruption_in_the_middle_is_an_error, balances_stay_within_the_limit,
          sigkill_while_recording_loses_no_acknowledged_entry, earnings_from_the_market_vwap,
          cleanup)
