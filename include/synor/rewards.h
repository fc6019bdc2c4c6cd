/* synor/rewards.h - contributor rewards (seed 003, §3.6): the reward of one
 * contribution from the protocol's policy, an append-only ledger of rewards
 * and payouts with a running balance per contributor, and an estimate of a
 * device's monthly earnings from the spot market's recent prices.
 *
 * Money. Every amount is int64 ticks: micro-USD (10^-6 USD), the unit of
 * the spot market (synor/market.h). No floating point touches money. Base
 * rates are finer than a tick (a GFLOP-s earns 10^-8 USD): they are held
 * in pico-USD (10^-12 USD). Quantities are thousandths of their unit
 * ("milli"). Products are formed in 128-bit integers; a result that does
 * not fit its int64 is SYNOR_ERANGE, never wrapped.
 *
 * The formula (docs/REWARDS.md, with a worked example):
 *   compute      = floor(rate_work_pUSD  x work_milli  / 10^9)   ticks
 *   transfer     = floor(rate_gb_pUSD    x gb_milli    / 10^9)
 *   availability = floor(rate_hour_pUSD  x hours_milli / 10^9)
 *   base         = compute + transfer + availability
 *   after_rep    = floor(base x rep_bp / 10^4)
 *   amount       = floor(base x rep_bp x (10^4 + uptime_bp) / 10^8)
 *   reputation_adj = after_rep - base, uptime_adj = amount - after_rep
 * Every rounding is down (the protocol never pays more than earned; the
 * loss is under one tick per step). rep_bp is the reputation multiplier in
 * basis points (5,000..20,000 = 0.5x..2x), uptime_bp the uptime bonus
 * (0..2,000 = up to +20%), both from the policy's curves.
 *
 * Limits (checked; beyond them SYNOR_ERANGE): work, GB and hours up to
 * SYNOR_REWARDS_MAX_QTY_MILLI thousandths; rates up to
 * SYNOR_REWARDS_MAX_RATE_PUSD; an amount and any balance up to
 * SYNOR_REWARDS_MAX_AMOUNT ticks (10^15 ticks = 10^9 USD), so a sum of two
 * never overflows int64 either.
 *
 * Thread safety: a policy is read-only once loaded (share it freely). A
 * ledger is used by one thread at a time; one process at a time may open a
 * ledger directory to write (an advisory lock; a second writer gets
 * SYNOR_EBUSY). */
#ifndef SYNOR_REWARDS_H
#define SYNOR_REWARDS_H

#include <stddef.h>
#include <stdint.h>

#include "synor/market.h"
#include "synor/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SYNOR_REWARDS_MAX_QTY_MILLI INT64_C(1000000000000000000) /* 10^15 units */
#define SYNOR_REWARDS_MAX_RATE_PUSD INT64_C(1000000000000000)    /* 1,000 USD per unit */
#define SYNOR_REWARDS_MAX_AMOUNT INT64_C(1000000000000000)       /* 10^9 USD in ticks */

/* ---------------------------------------------------------------- policy */

/* The reward policy: base rates, the reputation multiplier curve, the
 * uptime bonus, the protocol fee. These are the protocol's own choices,
 * not market data. Format: docs/REWARDS.md; the built-in one is
 * data/rewards/policy.json, embedded at build time. */
typedef struct synor_rewards_policy synor_rewards_policy;

int synor_rewards_policy_load_builtin(synor_rewards_policy **out);
/* Bad input: SYNOR_EPARSE/ESCHEMA/ERANGE with "FILE:LINE:COL: FIELD: ..."
 * in synor_errmsg() naming the value; *out untouched. */
int synor_rewards_policy_load_file(const char *path, synor_rewards_policy **out);
int synor_rewards_policy_load_string(const char *text, size_t len, const char *name,
                                     synor_rewards_policy **out);
void synor_rewards_policy_destroy(synor_rewards_policy *p);
/* "builtin:policy.json" or the path it was loaded from. */
const char *synor_rewards_policy_origin(const synor_rewards_policy *p);
/* The policy in force as JSON (the file format; rates as decimal strings);
 * free() it. NULL when out of memory. */
char *synor_rewards_policy_to_json(const synor_rewards_policy *p, int pretty);

/* The reputation multiplier (0..100 -> basis points, 10,000 = 1x),
 * piecewise linear between the policy's points, rounded down. Reputations
 * above 100 count as 100. */
uint32_t synor_rewards_reputation_bp(const synor_rewards_policy *p, uint32_t reputation);
/* The uptime bonus in basis points for an uptime in basis points
 * (10,000 = 100%): 0 below the policy's "from", its "max" at or above
 * "full", linear (rounded down) in between. */
uint32_t synor_rewards_uptime_bonus_bp(const synor_rewards_policy *p, uint32_t uptime_bp);
/* The protocol fee, basis points of a trade's value. */
uint32_t synor_rewards_fee_bp(const synor_rewards_policy *p);

/* ------------------------------------------------------------- a reward */

typedef enum synor_work_unit {
    SYNOR_WORK_TFLOP_S = 0, /* accelerators: every kind but CPU */
    SYNOR_WORK_GFLOP_S = 1  /* CPUs */
} synor_work_unit;

/* One contribution. Strings: id and contributor 1..63 printable ASCII
 * characters without spaces; device a profile id of the catalog; period an
 * optional label (0..31 characters, e.g. "2026-11-26"), NULL for none. */
typedef struct synor_contribution {
    const char *id; /* idempotency key, unique in a ledger */
    const char *contributor;
    const char *device; /* profile id, e.g. "nvidia-h100-sxm" */
    const char *period;
    int64_t work_milli;  /* TFLOP-s (accelerator) or GFLOP-s (CPU), x1000 */
    int64_t gb_milli;    /* GB (10^9 bytes) transferred, x1000 */
    int64_t hours_milli; /* hours available, x1000 */
    uint32_t uptime_bp;  /* uptime over the period, 0..10000 */
    uint32_t reputation; /* 0..100 */
} synor_contribution;

/* A reward and the parts it was made of (ticks unless named _bp). */
typedef struct synor_reward {
    synor_work_unit unit;
    int64_t compute, transfer, availability; /* each rounded down */
    int64_t base;                            /* their sum */
    uint32_t reputation_bp;                  /* multiplier, 5000..20000 */
    uint32_t uptime_bonus_bp;                /* bonus, 0..2000 */
    int64_t reputation_adj;                  /* negative below 1x */
    int64_t uptime_adj;
    int64_t amount; /* base + both adjustments */
} synor_reward;

/* Computes c's reward under p; the device is looked up in cat (its kind
 * picks the work unit). Work beyond what the device's best peak could do
 * in the hours available is refused (when hours are given). Returns 0,
 * SYNOR_EINVAL (a bad field, named with its value), SYNOR_ENOENT (unknown
 * device) or SYNOR_ERANGE (beyond the stated limits); *out untouched on
 * failure. */
int synor_rewards_compute(const synor_rewards_policy *p, const synor_catalog *cat,
                          const synor_contribution *c, synor_reward *out);

/* Parses a non-negative decimal string ("2.49", "0.000001") exactly into
 * an integer of 10^-scale units (scale 0..18): "1.5" at scale 3 is 1500.
 * More decimals than scale, a sign, spaces or exponents are SYNOR_EINVAL;
 * a value above max is SYNOR_ERANGE. The message names what and s. */
int synor_rewards_parse_fixed(const char *s, unsigned scale, int64_t max, const char *what,
                              int64_t *out);
/* Writes v (10^-scale units) as a decimal with exactly `scale` decimals
 * ("-1.500000"); returns buf. */
char *synor_rewards_format_fixed(int64_t v, unsigned scale, char *buf, size_t n);

/* --------------------------------------------------------------- ledger */

typedef enum synor_ledger_kind {
    SYNOR_LEDGER_REWARD = 1, /* a credit */
    SYNOR_LEDGER_PAYOUT = 2  /* a debit */
} synor_ledger_kind;

typedef struct synor_ledger_entry {
    uint64_t seq; /* 1, 2, ... in file order */
    synor_ledger_kind kind;
    char id[64], contributor[64], device[64], period[32]; /* device, period: rewards */
    int64_t recorded_at; /* wall-clock seconds since 1970 (the entry's age) */
    int64_t work_milli, gb_milli, hours_milli;
    uint32_t uptime_bp, reputation;
    synor_reward reward; /* rewards: the breakdown; payouts: zero */
    int64_t amount;      /* > 0: credited (reward) or debited (payout) */
    int64_t balance;     /* the contributor's balance after this entry */
} synor_ledger_entry;

typedef struct synor_ledger synor_ledger;

/* Opens the ledger in dir (ledger.log), replaying it: balances are rebuilt
 * and every entry's stored running balance checked against them. To write,
 * dir is created if missing; a torn last record (a crash mid-write) is cut
 * and reported by synor_ledger_recovery_note. Read-only: nothing is
 * created or written (a missing directory or ledger is SYNOR_ENOENT; a
 * torn tail is ignored, not cut). A damaged record followed by intact ones,
 * a running balance that does not add up, or a repeated id is corruption:
 * SYNOR_EPARSE naming the file and the record's byte offset. A second
 * writer of the same directory: SYNOR_EBUSY. */
int synor_ledger_open(const char *dir, int read_only, synor_ledger **out);
void synor_ledger_close(synor_ledger *l);
const char *synor_ledger_recovery_note(const synor_ledger *l); /* "" if none */

/* Records the reward of c. The entry is written and fdatasync'ed before
 * the call returns 0: a 0 return is the acknowledgement. If c->id is in
 * the ledger already with the same fields, nothing is written, *duplicate
 * is set to 1 and *out is the original entry (how a client that crashed
 * before seeing the answer retries safely); the same id with other fields
 * is SYNOR_EEXIST. A failure changes nothing in memory; a failed write
 * leaves the ledger refusing further writes (SYNOR_ESTATE) until reopened,
 * whose recovery cuts any torn bytes. duplicate may be NULL. */
int synor_ledger_record(synor_ledger *l, const synor_rewards_policy *p, const synor_catalog *cat,
                        const synor_contribution *c, synor_ledger_entry *out, int *duplicate);
/* Pays amount ticks (> 0) out of contributor's balance, under the same
 * idempotency and durability rules. A payout that would make the balance
 * negative, or of an unknown contributor, is SYNOR_ERANGE / SYNOR_ENOENT
 * and writes nothing. */
int synor_ledger_payout(synor_ledger *l, const char *id, const char *contributor, int64_t amount,
                        synor_ledger_entry *out, int *duplicate);

/* Views. An entry pointer (and a contributor's name) stays valid until the
 * next record or payout on the ledger, or its close. */
size_t synor_ledger_count(const synor_ledger *l);
const synor_ledger_entry *synor_ledger_at(const synor_ledger *l, size_t i); /* NULL if none */
const synor_ledger_entry *synor_ledger_find(const synor_ledger *l, const char *id);
/* SYNOR_ENOENT when the contributor has no entry. */
int synor_ledger_balance(const synor_ledger *l, const char *contributor, int64_t *out);
/* Contributors in order of their first entry. */
size_t synor_ledger_contributor_count(const synor_ledger *l);
const char *synor_ledger_contributor_at(const synor_ledger *l, size_t i, int64_t *balance);
/* An entry as one JSON object (no newline); free() it. */
char *synor_ledger_entry_to_json(const synor_ledger_entry *e);

/* ------------------------------------------------------------- earnings */

typedef struct synor_earnings_options {
    const char *region;           /* NULL: every region the market trades */
    int64_t hours_per_day_milli;  /* 1..24000 */
    int64_t electricity_pusd_kwh; /* pico-USD per kWh; < 0: not counted */
    uint32_t pue_milli;           /* power usage effectiveness x1000, 1000..3000 */
    const char *market_name;      /* named in messages (the directory) */
} synor_earnings_options;

void synor_earnings_options_init(synor_earnings_options *o);

#define SYNOR_EARNINGS_LEVELS 3 /* 50%, 70%, 100% utilisation */

typedef struct synor_earnings_level {
    uint32_t utilisation_bp;
    int64_t gross, fee, electricity, net; /* ticks per month */
} synor_earnings_level;

typedef struct synor_earnings {
    char resource[96];  /* "gpu/nvidia-h100-sxm/REGION", or ending in "/" + "*" for
                           all */
    size_t n_resources; /* books with trades in the window */
    int64_t price;      /* ticks per device-hour: 24 h VWAP */
    int64_t volume_24h; /* device-hours traded in the window */
    uint64_t last_time; /* the market's time of the newest trade used */
    uint32_t fee_bp;
    int64_t idle_mw, peak_mw; /* the profile's power, milliwatts */
    synor_earnings_level level[SYNOR_EARNINGS_LEVELS];
} synor_earnings;

/* Estimates a month (30.44 days) of renting out one device of profile
 * `profile`: the price is the volume-weighted mean price of the 24 h
 * before the market's last command over the matching books (region, or
 * all), from synor_market_prices_get; then per utilisation u
 *   gross = price x hours/day x 30.44 x u,  fee = gross x fee_bp / 10^4,
 *   electricity = kWh price x PUE x (idle + (peak - idle) x u) x hours/day
 * x 30.44, net = gross - fee - electricity   (may be negative). No trades in
 * the window: SYNOR_ENOENT, "no recent trades of R in NAME". Never a constant
 * price. */
int synor_earnings_estimate(const synor_market *m, const synor_catalog *cat,
                            const synor_rewards_policy *p, const char *profile,
                            const synor_earnings_options *o, synor_earnings *out);

#ifdef __cplusplus
}
#endif
#endif
