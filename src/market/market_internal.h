/* market_internal.h - the market's data structures, shared by the files of
 * src/market/. Never installed.
 *
 * Layout, chosen for the hot path (place / cancel / amend at millions per
 * second on one core):
 *   - orders live in one pool of fixed-size records addressed by 32-bit
 *     handles (0 = none); freed records are reused, so steady-state trading
 *     allocates nothing;
 *   - an open-addressing hash (linear probing, backward-shift deletion) maps
 *     order id -> handle;
 *   - each book side is an array of price levels sorted so that the best
 *     level is the LAST element: most activity is at the top of the book, so
 *     inserting or removing a level moves few elements;
 *   - a level is a FIFO of orders (intrusive doubly-linked list): time
 *     priority within a price;
 *   - a level that empties stays in the array (count 0) until empty levels
 *     outnumber half the array: orders that move back and forth between
 *     nearby prices (82% of an exchange's commands are such amends) then
 *     find their level in place instead of shifting the array twice. */
#ifndef SYNOR_MARKET_INTERNAL_H
#define SYNOR_MARKET_INTERNAL_H

#include <stdint.h>

#include "common/common.h"
#include "synor/market.h"

__extension__ typedef __int128 synor__i128;
__extension__ typedef unsigned __int128 synor__u128;

/* a + b, or the largest value when that does not fit: sums of quantities
 * and notionals are 128-bit and cannot wrap (2^32 orders of 2^53 units is
 * 2^85; it takes 2^74 trades of the largest size to reach the top). */
static inline synor__u128 synor__add_sat(synor__u128 a, synor__u128 b)
{
    synor__u128 s = a + b;
    return s < a ? ~(synor__u128)0 : s;
}

/* A 128-bit sum as the int64 of the public API: INT64_MAX above it. */
static inline int64_t synor__sat64(synor__u128 v)
{
    return v > (synor__u128)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* The largest price (ticks) and quantity (units) of a command, inclusive:
 * 2^53 - 1, the largest integer every JSON reader (IEEE doubles included)
 * holds exactly. */
#define SYNOR__MAX_PRICE (((int64_t)1 << 53) - 1)
#define SYNOR__MAX_QTY (((int64_t)1 << 53) - 1)
/* Sequence numbers stay below 2^62 (146 years at a billion commands a
 * second): a restored snapshot beyond it is refused, so that the numbers
 * of later commands cannot wrap. */
#define SYNOR__MAX_SEQ (UINT64_C(1) << 62)
#define SYNOR__DAY_NS (24ull * 3600 * 1000000000ull)

typedef struct morder {
    uint64_t id;
    int64_t price;
    int64_t qty;
    uint64_t expires;
    uint64_t duration;
    uint64_t zones;
    uint32_t owner;
    uint32_t resource;
    uint32_t prev, next; /* level FIFO; `next` also links the free list */
    uint32_t lvl;        /* hint: index of its level when it was linked;
                            checked before use (levels shift), so a stale
                            hint only costs a search */
    uint8_t side;
    uint8_t interruptible;
    uint8_t priority;
    uint8_t min_rep;
    uint8_t zone;
    uint32_t not_from;   /* a taker only: 1 + the provider whose asks it
                            must not take (a reclaim's replacement); 0 none */
} morder;

/* A price level. Its total quantity is not kept: the hot path would pay
 * for it on every change, and it could exceed any 64-bit integer; the views
 * that show it (depth, prices) add it up. */
typedef struct mlevel {
    int64_t price;
    uint32_t head, tail;
    uint32_t count;
} mlevel;

typedef struct mside {
    mlevel *v; /* sorted, best last; may hold empty levels (count 0) */
    uint32_t n, cap;
    uint32_t empty; /* levels with count 0, removed in bulk by compaction */
} mside;

typedef struct mcandle {
    uint64_t start;
    int64_t open, high, low, close;
    synor__u128 volume;   /* units, saturating */
    synor__u128 notional; /* ticks x units, saturating */
} mcandle;

typedef struct mbook {
    mside side[2];
    int has_last;
    int64_t last_price, last_qty;
    uint64_t last_time;
    synor__u128 volume_total; /* saturating */
    uint64_t trades_total;
    mcandle *candles; /* ring of n_candles, indexed by interval number */
    uint32_t n_candles;
} mbook;

typedef struct mlease {
    uint64_t id;       /* not unique: a partly preempted lease is split
                          into records that share the id */
    uint64_t deadline; /* 0 = active; else preempted, ends then */
    uint64_t start;    /* trade time */
    uint64_t end;      /* end of the term, 0 = open-ended */
    uint64_t avail;    /* the provider's "available until" (0 = none):
                          a bid taking the capacity over gets no more */
    int64_t price, qty;
    uint32_t provider, user, resource;
    uint8_t priority;
    uint8_t migrated;
    uint8_t zone;      /* the provider's zone, for zone-set bids */
} mlease;

typedef struct mexpiry {
    uint64_t t;
    uint64_t id;
} mexpiry;

typedef struct mjournal mjournal; /* book.c: the units a bid or ask could fill at once at time `now` (orders
 * expiring by then left out), without self-trades or ineligible makers,
 * up to its quantity. */
int64_t synor__book_fillable(const synor_market *m, const synor_market_cmd *c, uint64_t now);

/* journal.c */

struct synor_market {
    synor_market_config cfg;
    char *dir;
    /* order pool */
    morder *pool;
    uint32_t pool_n, pool_cap, free_head;
    uint32_t open_orders;
    /* id -> handle */
    uint64_t *map_keys;
    uint32_t *map_vals; /* 0 = empty slot */
    uint32_t map_cap, map_n;
    /* every id ever accepted (orders.c): block id/64 + 1 -> bitmap */
    uint64_t *used_keys, *used_bits;
    uint32_t used_cap, used_n;
    /* resources and books */
    char **res_keys;  /* each in NAME_ROOM bytes (names.c) */
    uint8_t *res_len; /* strlen of each key (names are at most 63 bytes) */
    mbook *books;
    uint32_t n_res, cap_res;
    /* name -> owner or resource index (names.c) */
    uint32_t *names;
    uint32_t names_cap, names_n;
    /* owners */
    char **owner_names;
    uint8_t *owner_len;
    uint8_t *owner_rep;
    uint32_t n_owners, cap_owners;
    /* provider zones, ids 1..63 (index 0 unused) */
    char *zone_names[64];
    uint32_t n_zones; /* highest id in use */
    /* expiry min-heap */
    mexpiry *heap;
    uint32_t heap_n, heap_cap;
    /* sequence and time */
    uint64_t seq;
    uint64_t last_time;
    /* the command being applied, for events */
    uint64_t cur_seq;
    uint64_t cur_time;
    int replaying; /* recovery: no events */
    int in_group;  /* applying a basket: its commit comes after the last */
    uint32_t touched; /* resource whose book the current command changed */
    mjournal *journal;
    /* leases of interruptible capacity */
    mlease *leases;
    uint32_t n_leases, cap_leases;
    uint64_t next_lease;
    int lease_error; /* out of memory while matching (reported after) */
    int read_only;   /* cfg.read_only: nothing is written */
    int legacy;      /* replaying a journal of version 1: its rules (self-
                        trade prevention of ineligible orders) */
    int broken;      /* 1: a command failed half-way (out of memory): no more
                        commands, but the journal batch holds only whole
                        commands and may be committed; 2: a commit failed
                        (a write may be partial): no commits either */
    uint64_t lease_next; /* derived: no lease ends before this time (0 =
                            unknown, scan); lets most commands skip the
                            lease list */
    char note[512];
};

/* True when events are not to be delivered now. */
static inline int synor__quiet(const synor_market *m)
{
    return !m->cfg.on_event || (m->replaying && !m->cfg.replay_events);
}

/* A zeroed event of kind k stamped with the current command's seq and time. */
static inline synor_market_event synor__event(const synor_market *m, synor_market_event_kind k)
{
    synor_market_event ev = {0};
    ev.kind = k;
    ev.seq = m->cur_seq;
    ev.time = m->cur_time;
    return ev;
}

/* validate.c: the reason command c would be rejected for (0: it is
 * acceptable), from the state as it stands, the command's time taken into
 * account (orders and leases it would expire count as gone). Pure. */
int synor__cmd_check(const synor_market *m, const synor_market_cmd *c);

/* book.c */
/* Emits REJECTED for command c (nothing changes; the event has seq 0).
 * Returns 0. */
int synor__reject(synor_market *m, const synor_market_cmd *c, int reason);
/* Applies a command synor__cmd_check accepted. */
int synor__book_apply(synor_market *m, const synor_market_cmd *c);
void synor__book_free(mbook *b);
int synor__book_init(mbook *b, uint32_t n_candles);
void synor__market_expire(synor_market *m, uint64_t now);
/* Inserts an order at the tail of its level (creating the level). */
int synor__book_rest(synor_market *m, uint32_t h);

/* orders.c: the order pool (handle 0 = none; alloc returns 0 when out of
 * memory), the id -> handle map and the expiry heap (by time, then id). */
uint32_t synor__pool_alloc(synor_market *m);
void synor__pool_free(synor_market *m, uint32_t h);
int synor__map_put(synor_market *m, uint64_t id, uint32_t h);
uint32_t synor__map_get(const synor_market *m, uint64_t id);
void synor__map_del(synor_market *m, uint64_t id);
int synor__heap_push(synor_market *m, uint64_t t, uint64_t id);
void synor__heap_pop(synor_market *m);
/* The ids commands were accepted under (order ids, refs), never forgotten.
 * _reserve makes room so that the next _add cannot fail. */
int synor__used_has(const synor_market *m, uint64_t id);
int synor__used_reserve(synor_market *m);
int synor__used_add(synor_market *m, uint64_t id);

void synor__record_trade(synor_market *m, mbook *b, int64_t price, int64_t qty);
/* Buys up to qty now (IOC at limit price) for user, only from asks
 * available at least `duration` ns (0 = any) and, when not_from is not 0,
 * from no ask of provider not_from - 1; reports units got. */
int synor__buy_now(synor_market *m, uint32_t user, uint32_t resource, int64_t price, int64_t qty,
                   uint8_t priority, uint64_t duration, uint32_t not_from, int64_t *got);
/* May bid constraints (min reputation, zone set, duration) take capacity of
 * this provider/zone available until `avail` (0 = open)? */
int synor__bid_accepts(const synor_market *m, uint8_t min_rep, uint64_t zones, uint64_t duration,
                       uint32_t provider, uint8_t zone, uint64_t avail);

/* lease.c */
/* A trade of qty on an interruptible ask of `ask` to bidder `bid` at price
 * made a lease (LEASED event). */
int synor__lease_add(synor_market *m, const morder *ask, const morder *bid, int64_t price,
                     int64_t qty);
int synor__lease_reclaim(synor_market *m, uint32_t provider, uint32_t resource, int64_t qty);
int synor__lease_outbid(synor_market *m, morder *bid);
void synor__lease_expire(synor_market *m, uint64_t now);

/* market.c */
void synor__emit(synor_market *m, const synor_market_event *ev);
/* Journals and applies a command synor__cmd_check accepted (see
 * synor_market_submit for what a failure leaves). */
int synor__apply_checked(synor_market *m, const synor_market_cmd *c);
/* Recovery: applies a journaled command (one that is rejected now, from a
 * journal of an older version, keeps its sequence number and time). */
int synor__replay_cmd(synor_market *m, const synor_market_cmd *c);
/* Do resources a and b offer the same kind and profile (in two regions)? */
int synor__same_offer(const synor_market *m, uint32_t a, uint32_t b);
/* Owner names and resource keys are stored in NAME_ROOM bytes each. */
#define NAME_ROOM 64

/* 1..63 bytes of valid UTF-8, no spaces, controls, quotes or backslashes:
 * a name needs no escaping in JSON. */
int synor__valid_name(const char *s);

/* names.c: registration without journaling (recovery, and a front end
 * that journals the names with the command needing them); _pop takes back
 * the last name of a type added (seq too); lookups by (s, n), 0 or -1. */
int synor__add_resource_raw(synor_market *m, const char *key, uint32_t *index);
int synor__add_owner_raw(synor_market *m, const char *name, uint32_t *id);
int synor__add_zone_raw(synor_market *m, const char *name, uint32_t *id);
void synor__name_pop(synor_market *m, int type);
void synor__names_free(synor_market *m);
int synor__name_find(const synor_market *m, int res, const char *s, size_t n, uint32_t *index);
int synor__zone_find(const synor_market *m, const char *s, size_t n, uint32_t *id);
/* 0 if key is "<kind>/<profile-id>/<region>" for a profile of that kind in
 * cat, else SYNOR_EINVAL or SYNOR_ENOENT with the reason. */
int synor__resource_key_check(const synor_catalog *cat, const char *key);
uint32_t synor__n_candles(const synor_market *m);

/* check.c: 0 if every invariant of the state holds (books sorted, level
 * FIFOs linked and counted, every open order in its level, the id map and,
 * with an expiry, the expiry heap; fields in range; leases, candles and
 * names consistent), else SYNOR_ESTATE naming the first broken one. Never
 * changes the market; for tests, fuzzers and restored snapshots. */
int synor__market_invariants(const synor_market *m);

/* journal.c */
int synor__journal_open(synor_market *m);
void synor__journal_close(synor_market *m);
/* Appends the record of an applied command to the batch (committed by
 * synor__journal_commit); mark/rewind take a record back out. */
int synor__journal_cmd(synor_market *m, const synor_market_cmd *c);
typedef struct synor__jmark {
    size_t len;
    uint64_t records;
} synor__jmark;
synor__jmark synor__journal_mark(const synor_market *m);
void synor__journal_rewind(synor_market *m, synor__jmark mark);
/* Appends the record of a registration, with the given seq. */
int synor__journal_name_at(synor_market *m, int type, const char *name, uint64_t seq);
int synor__journal_commit(synor_market *m); /* write, then sync */
int synor__journal_write(synor_market *m);      /* pending records to the file */
int synor__journal_sync(const synor_market *m); /* fdatasync by the policy */
int synor__journal_snapshot(synor_market *m);
/* Snapshots when the journal holds cfg.snapshot_every records. */
int synor__journal_maybe_snapshot(synor_market *m);
/* snapshot.c: the canonical state (the state hash's input and a snapshot's
 * body); a whole snapshot file's bytes; a snapshot restored and checked
 * into an empty market. */
int synor__market_serialize(const synor_market *m, synor__buf *b);
int synor__snapshot_build(const synor_market *m, synor__buf *out);
int synor__snapshot_load(synor_market *m, const char *path);

/* A group (synor_market_submit_basket): a header record whose payload is
 * the byte length of the records that follow and belong to it; replay
 * applies them only when all of them are in the file, intact. */
int synor__journal_group_begin(synor_market *m, size_t *at);
void synor__journal_group_end(synor_market *m, size_t at);

enum {
    SYNOR__REC_CMD = 1,
    SYNOR__REC_RESOURCE = 2,
    SYNOR__REC_OWNER = 3,
    SYNOR__REC_ZONE = 4,
    SYNOR__REC_GROUP = 5
};

#endif
