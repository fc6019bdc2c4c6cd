/* market.c - the market object: open and close, command submission (check,
 * journal, expire, match), commits and snapshots, the state hash. Names are
 * in names.c, the canonical state in snapshot.c, price discovery in
 * prices.c. */
#include <stdio.h>
#include <string.h>

#include "market/market_internal.h"

static const char *const reason_names[] = {
#define SYNOR__MR_NAME(n, v, d) [v] = #n,
    SYNOR_MARKET_REASON_MAP(SYNOR__MR_NAME)
#undef SYNOR__MR_NAME
};
static const char *const reason_texts[] = {
#define SYNOR__MR_TEXT(n, v, d) [v] = d,
    SYNOR_MARKET_REASON_MAP(SYNOR__MR_TEXT)
#undef SYNOR__MR_TEXT
};

const char *synor_market_reason_name(int r)
{
    return r >= 0 && (size_t)r < SYNOR__ARRAY_LEN(reason_names) && reason_names[r] ? reason_names[r]
                                                                                  : "UNKNOWN";
}

const char *synor_market_reason_text(int r)
{
    return r >= 0 && (size_t)r < SYNOR__ARRAY_LEN(reason_texts) && reason_texts[r] ? reason_texts[r]
                                                                                  : "unknown";
}

void synor_market_config_init(synor_market_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->fsync = SYNOR_FSYNC_BATCH;
    cfg->candle_ns = 60ull * 1000000000ull;
    cfg->preempt_warning_ns = 120ull * 1000000000ull;
    cfg->snapshot_every = 1000000;
}

void synor__emit(synor_market *m, const synor_market_event *ev)
{
    synor_market_event e = *ev;
    e.market = m;
    m->cfg.on_event(&e, m->cfg.user_data);
}

uint32_t synor__n_candles(const synor_market *m)
{
    uint64_t n = SYNOR__DAY_NS / m->cfg.candle_ns + 1;
    return (uint32_t)(n > 100000 ? 100000 : n);
}

static void market_free(synor_market *m)
{
    synor__names_free(m);
    synor__free(m->pool);
    synor__free(m->map_keys);
    synor__free(m->map_vals);
    synor__free(m->heap);
    synor__free(m->used_keys);
    synor__free(m->used_bits);
    synor__free(m->leases);
    synor__free(m->dir);
    synor__free(m);
}

int synor_market_open(const synor_market_config *cfg, synor_market **out)
{
    if (!cfg || !out)
        return synor__error(SYNOR_EINVAL, "synor_market_open: NULL argument");
    if (cfg->candle_ns < 1000000ull)
        return synor__error(SYNOR_EINVAL, "market: candle interval %llu ns is below 1 ms",
                            (unsigned long long)cfg->candle_ns);
    if (cfg->interruptible_discount_bp > 10000)
        return synor__error(SYNOR_EINVAL, "market: interruptible discount %u bp is above 10000",
                            cfg->interruptible_discount_bp);
    if ((unsigned)cfg->fsync > SYNOR_FSYNC_EVERY)
        return synor__error(SYNOR_EINVAL, "market: unknown fsync policy %d", (int)cfg->fsync);
    if (cfg->read_only && !cfg->dir)
        return synor__error(SYNOR_EINVAL, "market: read_only needs a directory");
    synor_market *m = synor__calloc(1, sizeof *m);
    if (!m)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    m->cfg = *cfg;
    m->read_only = cfg->read_only != 0;
    if (cfg->dir) {
        m->dir = synor__strdup(cfg->dir);
        if (!m->dir) {
            market_free(m);
            return synor__error(SYNOR_ENOMEM, "out of memory");
        }
        int rc = synor__journal_open(m); /* restores snapshot + journal */
        if (rc) {
            synor__journal_close(m);
            market_free(m);
            return rc;
        }
    }
    *out = m;
    return 0;
}

void synor_market_close(synor_market *m)
{
    if (!m)
        return;
    if (m->journal) {
        if (m->broken != 2)
            synor__journal_commit(m);
        synor__journal_close(m);
    }
    market_free(m);
}

const char *synor_market_recovery_note(const synor_market *m) { return m->note; }

/* Journals (when durable) and applies a command synor__cmd_check accepted.
 * Nothing in a command can fail once it is checked but memory: then its
 * record is taken back out of the journal's batch, so the journal holds
 * exactly the commands before it, and the market refuses further commands
 * (its memory may hold part of this one) until it is reopened. */
int synor__apply_checked(synor_market *m, const synor_market_cmd *c)
{
    int journaled = m->journal && !m->replaying;
    synor__jmark mark = {0, 0};
    if (journaled) {
        mark = synor__journal_mark(m);
        int rc = synor__journal_cmd(m, c);
        if (rc)
            return rc; /* nothing changed */
    }
    /* the command's id is used from now on (room made first: nothing has
     * changed yet if there is none) */
    uint64_t id = c->kind == SYNOR_CMD_PLACE ? c->order_id : c->ref;
    if (id) {
        int rc = synor__used_reserve(m);
        if (rc) {
            if (journaled)
                synor__journal_rewind(m, mark);
            return rc;
        }
        synor__used_add(m, id);
    }
    m->cur_seq = m->seq + 1;
    m->cur_time = c->time;
    m->seq++;
    m->last_time = c->time;
    synor__market_expire(m, c->time);
    int rc = synor__book_apply(m, c);
    if (rc) {
        if (journaled)
            synor__journal_rewind(m, mark);
        m->broken = 1;
        return rc;
    }
    if (journaled && m->cfg.fsync == SYNOR_FSYNC_EVERY && !m->in_group)
        return synor_market_commit(m);
    return 0;
}

int synor_market_submit(synor_market *m, const synor_market_cmd *c)
{
    if (!m || !c)
        return synor__error(SYNOR_EINVAL, "synor_market_submit: NULL argument");
    if (m->broken)
        return synor__error(SYNOR_ESTATE, "market: an earlier command or commit failed; close "
                                          "and reopen the market (recovery restores the state "
                                          "of the journal)");
    if (m->read_only)
        return synor__error(SYNOR_ESTATE, "market: opened read-only");
    m->cur_seq = 0;
    m->cur_time = c->time;
    int why = synor__cmd_check(m, c);
    if (why)
        return synor__reject(m, c, why); /* changes nothing, journals nothing */
    return synor__apply_checked(m, c);
}

/* Why command i of a basket cannot be in it, or 0: the basket's own rules
 * (synor/market.h), then the command's checks, then whether it fills. */
static int basket_check(const synor_market *m, const synor_market_cmd *cmds, size_t i)
{
    const synor_market_cmd *c = &cmds[i];
    if (c->kind != SYNOR_CMD_PLACE || c->side != SYNOR_BID || c->tif != SYNOR_FOK ||
        c->n_also || c->time != cmds[0].time)
        return SYNOR_REASON_BAD_FIELD;
    for (size_t k = 0; k < i; k++) {
        if (cmds[k].order_id == c->order_id)
            return SYNOR_REASON_DUPLICATE_ID;
        if (cmds[k].resource == c->resource)
            return SYNOR_REASON_BAD_FIELD;
    }
    int why = synor__cmd_check(m, c);
    if (why)
        return why;
    /* orders that expire by the basket's time are not counted: they are
     * gone when its first bid arrives */
    return synor__book_fillable(m, c, c->time) < c->qty ? SYNOR_REASON_FOK_UNFILLABLE : 0;
}

int synor_market_submit_basket(synor_market *m, const synor_market_cmd *cmds, size_t n,
                               size_t *failed, int *reason)
{
    if (!m || !cmds || !failed || !reason)
        return synor__error(SYNOR_EINVAL, "synor_market_submit_basket: NULL argument");
    if (n == 0 || n > SYNOR_MARKET_BASKET_MAX)
        return synor__error(SYNOR_EINVAL, "market: a basket holds 1 to %d bids, not %zu",
                            SYNOR_MARKET_BASKET_MAX, n);
    if (m->broken)
        return synor__error(SYNOR_ESTATE, "market: an earlier command or commit failed; close "
                                          "and reopen the market (recovery restores the state "
                                          "of the journal)");
    if (m->read_only)
        return synor__error(SYNOR_ESTATE, "market: opened read-only");
    *failed = 0;
    *reason = 0;
    m->cur_seq = 0;
    for (size_t i = 0; i < n; i++) {
        m->cur_time = cmds[i].time;
        int why = basket_check(m, cmds, i);
        if (why) {
            *failed = i;
            *reason = why;
            return synor__reject(m, &cmds[i], why); /* changes nothing */
        }
    }
    /* every bid fills: the books they take from are distinct and only
     * grow by the first bid's expiry of leases; a failure now is memory */
    int journaled = m->journal && !m->replaying;
    synor__jmark mark = synor__journal_mark(m);
    size_t at = 0;
    if (journaled) {
        int rc = synor__journal_group_begin(m, &at);
        if (rc)
            return rc; /* nothing changed */
    }
    m->in_group = 1;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = synor__apply_checked(m, &cmds[i]);
    m->in_group = 0;
    if (rc) {
        if (journaled)
            synor__journal_rewind(m, mark); /* none of the basket */
        m->broken = 1;
        return rc;
    }
    if (journaled) {
        synor__journal_group_end(m, at);
        if (m->cfg.fsync == SYNOR_FSYNC_EVERY)
            return synor_market_commit(m);
    }
    return 0;
}

int synor__replay_cmd(synor_market *m, const synor_market_cmd *c)
{
    int why = synor__cmd_check(m, c);
    if (why == SYNOR_REASON_TIME_BACKWARDS)
        return synor__error(SYNOR_EPARSE, "market journal: a command of time %llu after one of "
                                          "time %llu", (unsigned long long)c->time,
                            (unsigned long long)m->last_time);
    if (!why)
        return synor__apply_checked(m, c);
    if (!m->legacy)
        return synor__error(SYNOR_EPARSE, "a journaled command (kind %d, seq %llu) is rejected "
                                          "now (%s): this journal was not written by these "
                                          "rules", (int)c->kind,
                            (unsigned long long)(m->seq + 1), synor_market_reason_name(why));
    /* journals of version 1 hold rejected commands: such a record keeps the
     * sequence number and the time it took then, so that the records after
     * it still follow */
    m->cur_seq = m->seq + 1;
    m->cur_time = c->time;
    m->seq++;
    m->last_time = c->time;
    synor__market_expire(m, c->time);
    return synor__reject(m, c, why);
}

/* write: the pending records to the file, then a periodic snapshot; sync:
 * fdatasync by the policy before it (commit) or not (commit_write). */
static int commit(synor_market *m, int sync)
{
    if (!m)
        return synor__error(SYNOR_EINVAL, "synor_market_commit: NULL market");
    if (!m->journal)
        return 0;
    if (m->broken == 2)
        return synor__error(SYNOR_ESTATE, "market: an earlier commit failed; close and reopen "
                                          "the market");
    int rc = synor__journal_write(m);
    if (!rc && sync)
        rc = synor__journal_sync(m);
    if (!rc && !m->broken) /* never a snapshot of a half-applied command */
        rc = synor__journal_maybe_snapshot(m);
    if (rc == SYNOR_EIO)
        m->broken = 2; /* a write may have been partial: never append after it */
    return rc;
}

int synor_market_commit(synor_market *m) { return commit(m, 1); }

int synor_market_commit_write(synor_market *m) { return commit(m, 0); }

int synor_market_commit_sync(const synor_market *m)
{
    if (!m)
        return synor__error(SYNOR_EINVAL, "synor_market_commit_sync: NULL market");
    return synor__journal_sync(m);
}

int synor_market_snapshot(synor_market *m)
{
    if (!m)
        return synor__error(SYNOR_EINVAL, "synor_market_snapshot: NULL market");
    if (!m->journal)
        return synor__error(SYNOR_ESTATE, "market: an in-memory market has no snapshots");
    if (m->read_only || m->broken)
        return synor__error(SYNOR_ESTATE, "market: %s", m->read_only ? "opened read-only"
                                                                     : "an earlier write failed");
    return synor__journal_snapshot(m);
}

uint64_t synor_market_seq(const synor_market *m) { return m->seq; }
uint64_t synor_market_time(const synor_market *m) { return m->last_time; }
size_t synor_market_open_orders(const synor_market *m) { return m->open_orders; }

/* ------------------------------------------------- canonical state */

uint64_t synor_market_state_hash(const synor_market *m)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__market_serialize(m, &b);
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64 */
    for (size_t i = 0; i < b.len; i++)
        h = (h ^ (unsigned char)b.data[i]) * 1099511628211ull;
    if (b.failed)
        h = 0;
    synor__buf_free(&b);
    return h;
}

