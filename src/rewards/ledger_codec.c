/* ledger_codec.c - one ledger entry as a record of bytes, and back, with
 * the checks a replayed record must pass on its own (its fields, and that
 * its amount is what its breakdown says). The running balance is checked
 * by the ledger (ledger.c), which knows the previous one.
 *
 * A record: u32 body length, u32 CRC-32C of the body, then the body (all
 * integers little endian): u8 kind, u64 seq, i64 recorded_at, four strings
 * each as u8 length + bytes (id, contributor, device, period), i64 work,
 * gb, hours (thousandths), u32 uptime_bp, u32 reputation, u8 unit, i64
 * compute, transfer, availability, base, u32 reputation_bp, u32
 * uptime_bonus_bp, i64 reputation_adj, uptime_adj, amount, balance. */
#include <string.h>

#include "common/common.h"
#include "rewards/ledger_internal.h"
#include "rewards/rewards_internal.h"
#include "json/json.h"

typedef struct wr {
    unsigned char *p;
    size_t n;
} wr;

static void put(wr *w, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        w->p[w->n++] = (unsigned char)(v >> (8 * i));
}

static void put_str(wr *w, const char *s)
{
    size_t n = strlen(s);
    w->p[w->n++] = (unsigned char)n;
    memcpy(w->p + w->n, s, n);
    w->n += n;
}

size_t synor__ledger_encode(const synor_ledger_entry *e, unsigned char *rec)
{
    wr w = {rec + 8, 0};
    put(&w, (uint64_t)e->kind, 1);
    put(&w, e->seq, 8);
    put(&w, (uint64_t)e->recorded_at, 8);
    put_str(&w, e->id);
    put_str(&w, e->contributor);
    put_str(&w, e->device);
    put_str(&w, e->period);
    put(&w, (uint64_t)e->work_milli, 8);
    put(&w, (uint64_t)e->gb_milli, 8);
    put(&w, (uint64_t)e->hours_milli, 8);
    put(&w, e->uptime_bp, 4);
    put(&w, e->reputation, 4);
    put(&w, (uint64_t)e->reward.unit, 1);
    put(&w, (uint64_t)e->reward.compute, 8);
    put(&w, (uint64_t)e->reward.transfer, 8);
    put(&w, (uint64_t)e->reward.availability, 8);
    put(&w, (uint64_t)e->reward.base, 8);
    put(&w, e->reward.reputation_bp, 4);
    put(&w, e->reward.uptime_bonus_bp, 4);
    put(&w, (uint64_t)e->reward.reputation_adj, 8);
    put(&w, (uint64_t)e->reward.uptime_adj, 8);
    put(&w, (uint64_t)e->amount, 8);
    put(&w, (uint64_t)e->balance, 8);
    wr h = {rec, 0};
    put(&h, w.n, 4);
    put(&h, synor__crc32c(0, rec + 8, w.n), 4);
    return 8 + w.n;
}

typedef struct rd {
    const unsigned char *p;
    size_t n, at;
    int bad;
} rd;

static uint64_t get(rd *r, int bytes)
{
    if (r->bad || r->n - r->at < (size_t)bytes) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | r->p[r->at + (size_t)i];
    r->at += (size_t)bytes;
    return v;
}

static void get_str(rd *r, char *out, size_t cap)
{
    size_t n = (size_t)get(r, 1);
    if (r->bad || n >= cap || r->n - r->at < n) {
        r->bad = 1;
        out[0] = '\0';
        return;
    }
    memcpy(out, r->p + r->at, n);
    out[n] = '\0';
    r->at += n;
    if (strlen(out) != n)
        r->bad = 1;
}

/* What is wrong with e on its own, or NULL. */
static const char *check(const synor_ledger_entry *e)
{
    const synor_reward *w = &e->reward;
    if (e->kind != SYNOR_LEDGER_REWARD && e->kind != SYNOR_LEDGER_PAYOUT)
        return "an unknown entry kind";
    if (!synor__rewards_valid_name(e->id, 64, 0) ||
        !synor__rewards_valid_name(e->contributor, 64, 0))
        return "an invalid id or contributor";
    if (e->amount < 0 || e->amount > SYNOR_REWARDS_MAX_AMOUNT || e->balance < 0 ||
        e->balance > SYNOR_REWARDS_MAX_AMOUNT)
        return "an amount or balance out of range";
    if (e->kind == SYNOR_LEDGER_PAYOUT) {
        static const synor_reward zero;
        if (e->amount == 0 || e->device[0] || e->period[0] || e->work_milli || e->gb_milli ||
            e->hours_milli || e->uptime_bp || e->reputation || memcmp(w, &zero, sizeof zero))
            return "a payout with reward fields";
        return NULL;
    }
    if (!synor__rewards_valid_name(e->device, 64, 0) ||
        !synor__rewards_valid_name(e->period, 32, 1))
        return "an invalid device or period";
    if (e->work_milli < 0 || e->work_milli > SYNOR_REWARDS_MAX_QTY_MILLI || e->gb_milli < 0 ||
        e->gb_milli > SYNOR_REWARDS_MAX_QTY_MILLI || e->hours_milli < 0 ||
        e->hours_milli > SYNOR_REWARDS_MAX_QTY_MILLI || e->uptime_bp > 10000 ||
        e->reputation > 100 || (w->unit != SYNOR_WORK_TFLOP_S && w->unit != SYNOR_WORK_GFLOP_S))
        return "a contribution field out of range";
    if (w->reputation_bp < 5000 || w->reputation_bp > 20000 || w->uptime_bonus_bp > 2000 ||
        w->compute < 0 || w->transfer < 0 || w->availability < 0 ||
        w->base > SYNOR_REWARDS_MAX_AMOUNT ||
        (synor__rw128)w->compute + w->transfer + w->availability != w->base)
        return "a breakdown whose components do not add up";
    synor__rw128 after = (synor__rw128)w->base * w->reputation_bp / 10000;
    synor__rw128 amount =
        (synor__rw128)w->base * w->reputation_bp * (10000 + w->uptime_bonus_bp) / 100000000;
    if (amount != e->amount || after - w->base != w->reputation_adj ||
        amount - after != w->uptime_adj)
        return "an amount that is not what its breakdown gives";
    return NULL;
}

const char *synor__ledger_decode(const unsigned char *body, size_t n, synor_ledger_entry *e)
{
    rd r = {body, n, 0, 0};
    memset(e, 0, sizeof *e);
    e->kind = (synor_ledger_kind)get(&r, 1);
    e->seq = get(&r, 8);
    e->recorded_at = (int64_t)get(&r, 8);
    get_str(&r, e->id, sizeof e->id);
    get_str(&r, e->contributor, sizeof e->contributor);
    get_str(&r, e->device, sizeof e->device);
    get_str(&r, e->period, sizeof e->period);
    e->work_milli = (int64_t)get(&r, 8);
    e->gb_milli = (int64_t)get(&r, 8);
    e->hours_milli = (int64_t)get(&r, 8);
    e->uptime_bp = (uint32_t)get(&r, 4);
    e->reputation = (uint32_t)get(&r, 4);
    e->reward.unit = (synor_work_unit)get(&r, 1);
    e->reward.compute = (int64_t)get(&r, 8);
    e->reward.transfer = (int64_t)get(&r, 8);
    e->reward.availability = (int64_t)get(&r, 8);
    e->reward.base = (int64_t)get(&r, 8);
    e->reward.reputation_bp = (uint32_t)get(&r, 4);
    e->reward.uptime_bonus_bp = (uint32_t)get(&r, 4);
    e->reward.reputation_adj = (int64_t)get(&r, 8);
    e->reward.uptime_adj = (int64_t)get(&r, 8);
    e->amount = (int64_t)get(&r, 8);
    e->balance = (int64_t)get(&r, 8);
    if (r.bad || r.at != n)
        return "a record whose fields do not fill its length";
    return check(e);
}

/* ------------------------------------------------------- JSON output */

static void jw_money(synor__jw *w, const char *key, int64_t ticks)
{
    char buf[48];
    synor__jw_key(w, key);
    synor__jw_str(w, synor_rewards_format_fixed(ticks, 6, buf, sizeof buf));
}

static void jw_milli(synor__jw *w, const char *key, int64_t v)
{
    char buf[48];
    synor__jw_key(w, key);
    synor__jw_str(w, synor_rewards_format_fixed(v, 3, buf, sizeof buf));
}

char *synor_ledger_entry_to_json(const synor_ledger_entry *e)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "seq");
    synor__jw_uint(&w, e->seq);
    synor__jw_key(&w, "kind");
    synor__jw_str(&w, e->kind == SYNOR_LEDGER_PAYOUT ? "payout" : "reward");
    synor__jw_key(&w, "id");
    synor__jw_str(&w, e->id);
    synor__jw_key(&w, "contributor");
    synor__jw_str(&w, e->contributor);
    synor__jw_key(&w, "recorded_at");
    synor__jw_int(&w, e->recorded_at);
    if (e->kind == SYNOR_LEDGER_REWARD) {
        const synor_reward *r = &e->reward;
        synor__jw_key(&w, "device");
        synor__jw_str(&w, e->device);
        synor__jw_key(&w, "period");
        synor__jw_str(&w, e->period);
        jw_milli(&w, r->unit == SYNOR_WORK_GFLOP_S ? "gflop_s" : "tflop_s", e->work_milli);
        jw_milli(&w, "gb", e->gb_milli);
        jw_milli(&w, "available_hours", e->hours_milli);
        synor__jw_key(&w, "uptime_bp");
        synor__jw_uint(&w, e->uptime_bp);
        synor__jw_key(&w, "reputation");
        synor__jw_uint(&w, e->reputation);
        jw_money(&w, "compute_usd", r->compute);
        jw_money(&w, "transfer_usd", r->transfer);
        jw_money(&w, "availability_usd", r->availability);
        jw_money(&w, "base_usd", r->base);
        synor__jw_key(&w, "reputation_multiplier_bp");
        synor__jw_uint(&w, r->reputation_bp);
        jw_money(&w, "reputation_adj_usd", r->reputation_adj);
        synor__jw_key(&w, "uptime_bonus_bp");
        synor__jw_uint(&w, r->uptime_bonus_bp);
        jw_money(&w, "uptime_adj_usd", r->uptime_adj);
    }
    jw_money(&w, "amount_usd", e->amount);
    synor__jw_key(&w, "amount_ticks");
    synor__jw_int(&w, e->amount);
    jw_money(&w, "balance_usd", e->balance);
    synor__jw_key(&w, "balance_ticks");
    synor__jw_int(&w, e->balance);
    synor__jw_obj_end(&w);
    return synor__buf_take(&b);
}
