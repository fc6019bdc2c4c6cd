/* fuzz_rewards.c - the two inputs of src/rewards/: reward policy files
 * (synor_rewards_policy_load_string) and the bytes of a ledger.log as
 * recovery reads them (synor_ledger_open). The input's first byte chooses:
 * bit 0 clear, the rest is a policy; set, a ledger, whose complete records
 * get their right CRC-32C when bit 1 is set (so that mutated records reach
 * the replay's checks of their contents, not only the CRC).
 *
 * Contract, policies: a rejected file leaves *out untouched and names the
 * input with a position inside it; an accepted policy writes JSON that
 * loads into the same policy; its curves stay within 0.5x..2x and 0..20%,
 * never decreasing; a reward under it adds up (base + adjustments = amount,
 * within the limit); a failed allocation is SYNOR_ENOMEM or the same policy.
 * Ledgers: open fails with a known code and a message naming the file, or
 * succeeds with every running balance equal to the sum of the entries
 * before it; a read-only open changes no byte and agrees with a writable
 * one; the recovered ledger reopens to the same entries and takes a new
 * reward and a payout that survive a reopen. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "rewards/ledger_internal.h"
#include "synor.h"

static synor_catalog *cat;
static synor_rewards_policy *builtin;
static char dir[64], path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "/tmp/synor-fuzz-rewards-XXXXXX");
    FUZZ_CHECK(mkdtemp(dir), "set-up: mkdtemp");
    snprintf(path, sizeof path, "%s/ledger.log", dir);
    FUZZ_CHECK(!synor_catalog_create(&cat) && !synor_catalog_load_builtin(cat) &&
                   !synor_rewards_policy_load_builtin(&builtin),
               "set-up: %s", synor_errmsg());
    return 0;
}

static void check_policy(const synor_rewards_policy *p)
{
    uint32_t prev = 0;
    for (uint32_t r = 0; r <= 100; r++) {
        uint32_t m = synor_rewards_reputation_bp(p, r);
        FUZZ_CHECK(m >= 5000 && m <= 20000 && m >= prev, "multiplier %u at reputation %u", m, r);
        prev = m;
    }
    prev = 0;
    for (uint32_t u = 0; u <= 10000; u += 7) {
        uint32_t b = synor_rewards_uptime_bonus_bp(p, u);
        FUZZ_CHECK(b <= 2000 && b >= prev, "uptime bonus %u at %u", b, u);
        prev = b;
    }
    FUZZ_CHECK(synor_rewards_fee_bp(p) <= 5000, "fee %u", synor_rewards_fee_bp(p));
    synor_contribution c = {"f", "fuzzer", "nvidia-h100-sxm", NULL, 3600000, 12500, 1000, 9950, 70};
    synor_reward r;
    for (int k = 0; k < 2; k++) {
        int rc = synor_rewards_compute(p, cat, &c, &r);
        FUZZ_CHECK(rc == 0 || rc == SYNOR_ERANGE, "compute: %d %s", rc, synor_errmsg());
        if (!rc)
            FUZZ_CHECK(r.base == r.compute + r.transfer + r.availability &&
                           r.base + r.reputation_adj + r.uptime_adj == r.amount && r.amount >= 0 &&
                           r.amount <= SYNOR_REWARDS_MAX_AMOUNT,
                       "a reward that does not add up");
        c.work_milli = c.gb_milli = SYNOR_REWARDS_MAX_QTY_MILLI; /* the limits */
        c.hours_milli = 0;
    }
}

static void fuzz_policy(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    synor_rewards_policy *p = FUZZ_UNTOUCHED(synor_rewards_policy);
    fuzz_alloc_count_start();
    int rc = synor_rewards_policy_load_string(text, size, FUZZ_NAME, &p);
    long allocs = fuzz_alloc_count_stop();
    if (rc) {
        fuzz_check_error(rc, 0, FUZZ_NAME, data, size);
        FUZZ_CHECK(p == FUZZ_UNTOUCHED(synor_rewards_policy), "a rejected policy set *out");
        return;
    }
    check_policy(p);
    char *j = synor_rewards_policy_to_json(p, 1);
    FUZZ_CHECK(j, "to_json failed");
    synor_rewards_policy *q;
    FUZZ_CHECK(!synor_rewards_policy_load_string(j, strlen(j), "written.json", &q),
               "the policy's own JSON does not load: %s\n%.400s", synor_errmsg(), j);
    char *j2 = synor_rewards_policy_to_json(q, 1);
    fuzz_check_same(j, j2, "a policy written, read and written again");
    free(j2);
    synor_rewards_policy_destroy(q);
    synor_rewards_policy *inj = FUZZ_UNTOUCHED(synor_rewards_policy);
    fuzz_alloc_fail_one(data, size, allocs);
    rc = synor_rewards_policy_load_string(text, size, FUZZ_NAME, &inj);
    int hit = fuzz_alloc_disarm();
    if (rc) {
        FUZZ_CHECK(hit, "the load failed only the second time: %s", synor_errmsg());
        fuzz_check_error(rc, 1, FUZZ_NAME, data, size);
        FUZZ_CHECK(inj == FUZZ_UNTOUCHED(synor_rewards_policy), "a failed load set *out");
    } else {
        char *j3 = synor_rewards_policy_to_json(inj, 1);
        fuzz_check_same(j, j3, "a load with a failed allocation and one without");
        free(j3);
        synor_rewards_policy_destroy(inj);
    }
    free(j);
    synor_rewards_policy_destroy(p);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void fix_crcs(uint8_t *p, size_t len)
{
    for (size_t pos = 8; pos + 8 <= len;) {
        uint32_t n = get32(p + pos);
        if (n < SYNOR__LEDGER_MIN_BODY || n > SYNOR__LEDGER_MAX_BODY || len - pos - 8 < n)
            return;
        uint32_t c = synor__crc32c(0, p + pos + 8, n);
        for (int i = 0; i < 4; i++)
            p[pos + 4 + (size_t)i] = (uint8_t)(c >> (8 * i));
        pos += 8 + n;
    }
}

static void put_file(const uint8_t *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    FUZZ_CHECK(fd >= 0 && (n == 0 || write(fd, p, n) == (ssize_t)n), "cannot write %s", path);
    close(fd);
}

/* What a ledger holds, for comparison; checks the running balances. */
static char *dump(const synor_ledger *l)
{
    fuzz_dump d;
    fuzz_dump_init(&d);
    size_t n = synor_ledger_count(l);
    for (size_t i = 0; i < n; i++) {
        const synor_ledger_entry *e = synor_ledger_at(l, i);
        FUZZ_CHECK(e->seq == i + 1, "entry %zu has seq %llu", i, (unsigned long long)e->seq);
        int64_t before = 0;
        for (size_t k = i; k-- > 0;)
            if (strcmp(synor_ledger_at(l, k)->contributor, e->contributor) == 0) {
                before = synor_ledger_at(l, k)->balance;
                break;
            }
        int64_t want = before + (e->kind == SYNOR_LEDGER_PAYOUT ? -e->amount : e->amount);
        FUZZ_CHECK(want == e->balance && e->balance >= 0, "entry %zu: running balance", i);
        FUZZ_CHECK(synor_ledger_find(l, e->id) == e, "entry %zu: id not found", i);
        char *j = synor_ledger_entry_to_json(e);
        FUZZ_CHECK(j, "entry_to_json failed");
        fuzz_dump_printf(&d, "%s\n", j);
        free(j);
    }
    for (size_t i = 0; i < synor_ledger_contributor_count(l); i++) {
        int64_t b, b2;
        const char *who = synor_ledger_contributor_at(l, i, &b);
        FUZZ_CHECK(!synor_ledger_balance(l, who, &b2) && b == b2, "balance of %s", who);
        fuzz_dump_printf(&d, "%s %lld\n", who, (long long)b);
    }
    return fuzz_dump_take(&d);
}

static void fuzz_ledger(const uint8_t *data, size_t size)
{
    put_file(data, size);
    synor_ledger *l = FUZZ_UNTOUCHED(synor_ledger);
    int rc = synor_ledger_open(dir, 1, &l);
    struct stat st;
    FUZZ_CHECK(stat(path, &st) == 0 && (size_t)st.st_size == size, "read-only open changed %s",
               path);
    if (rc) {
        FUZZ_CHECK(rc == SYNOR_EPARSE || rc == SYNOR_ENOMEM, "read-only open: %d %s", rc,
                   synor_errmsg());
        FUZZ_CHECK(strstr(synor_errmsg(), "ledger.log"), "message names no file: %s",
                   synor_errmsg());
        FUZZ_CHECK(l == FUZZ_UNTOUCHED(synor_ledger), "a failed open set *out");
        synor_ledger *w = FUZZ_UNTOUCHED(synor_ledger);
        FUZZ_CHECK(synor_ledger_open(dir, 0, &w) == rc, "writable open disagrees");
        return;
    }
    char *ro = dump(l);
    synor_ledger_close(l);
    FUZZ_CHECK(!synor_ledger_open(dir, 0, &l), "writable open failed: %s", synor_errmsg());
    char *rw = dump(l);
    fuzz_check_same(ro, rw, "read-only and writable recovery");
    size_t n = synor_ledger_count(l);
    synor_contribution c = {
        "fuzz-new-entry", "fuzzer", "nvidia-h100-sxm", "p", 1000, 1000, 1000, 10000, 100};
    int dup = -1;
    rc = synor_ledger_record(l, builtin, cat, &c, NULL, &dup);
    FUZZ_CHECK(rc == 0 || rc == SYNOR_EEXIST || rc == SYNOR_ERANGE, "record: %s", synor_errmsg());
    size_t added = rc == 0 && !dup;
    int64_t bal;
    if (!synor_ledger_balance(l, "fuzzer", &bal) && bal > 0 &&
        synor_ledger_find(l, "fuzz-new-payout") == NULL) {
        FUZZ_CHECK(!synor_ledger_payout(l, "fuzz-new-payout", "fuzzer", 1, NULL, NULL),
                   "payout: %s", synor_errmsg());
        added++;
    }
    FUZZ_CHECK(synor_ledger_count(l) == n + added, "count after writes");
    char *after = dump(l);
    synor_ledger_close(l);
    FUZZ_CHECK(!synor_ledger_open(dir, 1, &l), "reopen failed: %s", synor_errmsg());
    char *again = dump(l);
    fuzz_check_same(after, again, "the ledger before and after a reopen");
    FUZZ_CHECK(!synor_ledger_recovery_note(l)[0], "a clean ledger has a note");
    synor_ledger_close(l);
    free(ro);
    free(rw);
    free(after);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!(data[0] & 1)) {
        fuzz_policy(data + 1, size - 1);
        return 0;
    }
    uint8_t *b = malloc(size);
    FUZZ_CHECK(b, "out of memory");
    memcpy(b, data + 1, size - 1);
    if (data[0] & 2)
        fix_crcs(b, size - 1);
    fuzz_ledger(b, size - 1);
    free(b);
    return 0;
}
