/* synor/market.h - a spot market for compute capacity (seed 003, §1.3):
 * order books per resource, price-time matching, price discovery, and a
 * durable journal.
 *
 * Units. A resource is a key "<kind>/<profile-id>/<region>", e.g.
 * "gpu/nvidia-h100-sxm/eu-west", validated against the profile catalog.
 * Quantities are integer units of capacity (device-hours). Prices are integer
 * ticks per unit; one tick is 10^-6 of the settlement currency (a price of
 * 2,490,000 ticks is 2.49 per device-hour). No floating point touches money:
 * notional values are 128-bit integers, VWAP is rounded integer division.
 *
 * Determinism. Every change of state is a command (synor_market_cmd) with a
 * logical timestamp that must not decrease; matching never reads a clock.
 * The same command stream gives the same events and the same state hash.
 *
 * Matching. Price-time priority; a trade executes at the resting order's
 * price; partial fills; self-trade prevention cancels the resting order of
 * the same owner (only one the two orders' constraints would let trade;
 * an ineligible one is skipped and stays); limit and market orders; GTC, IOC, FOK; amend keeps time
 * priority when it only reduces the quantity and loses it otherwise (a price
 * change re-enters the order, which may then trade); orders with an expiry
 * (an ask's "available until", a bid's deadline) expire when a command with a
 * later time arrives. A bid may require a minimum provider reputation, a
 * duration and a set of provider zones; asks of providers below that
 * reputation, available for less than the duration or outside the zones are
 * skipped (not cancelled) - whichever of the two orders arrived first. An
 * arriving bid may also name other regions of its resource (cmd.also): it
 * then takes the best asks across those books before resting in its own.
 *
 * Durability (synor_market_open with a directory): every accepted command is
 * appended to the journal before its events are released; events are
 * acknowledged by synor_market_commit, which writes and (by policy) fsyncs
 * the batch. On open the market restores the last snapshot and replays the
 * journal to the identical state; a torn or corrupt last record is dropped
 * (never half-applied) and reported through synor_market_recovery_note.
 * Damage followed by intact records is corruption: open fails unless
 * cfg->salvage. Snapshots are taken every cfg->snapshot_every records.
 *
 * Preemptible capacity: a trade on an interruptible ask makes a lease with
 * a term (the bid's duration, cut at the ask's "available until"); the
 * provider's RECLAIM or a higher-ranked bid preempts only the units needed,
 * after a warning (PREEMPTED = the checkpoint callback), with an immediate
 * replacement offer (MIGRATED) or a graceful end (LEASE_ENDED).
 *
 * Thread safety: a market is single-threaded (one matching thread, as in
 * LMAX-style exchanges); use one market per thread or serialize calls. */
#ifndef SYNOR_MARKET_H
#define SYNOR_MARKET_H

#include <stddef.h>
#include <stdint.h>

#include "synor/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_market synor_market;

typedef enum synor_side { SYNOR_BID = 0, SYNOR_ASK = 1 } synor_side;
typedef enum synor_order_type { SYNOR_LIMIT = 0, SYNOR_MARKET = 1 } synor_order_type;
typedef enum synor_tif { SYNOR_GTC = 0, SYNOR_IOC = 1, SYNOR_FOK = 2 } synor_tif;

typedef enum synor_market_cmd_kind {
    SYNOR_CMD_PLACE = 1,
    SYNOR_CMD_CANCEL = 2,
    SYNOR_CMD_AMEND = 3,
    SYNOR_CMD_REPUTATION = 4, /* set an owner's reputation (0..100) */
    SYNOR_CMD_RECLAIM = 5     /* provider `owner` takes back `qty` units of
                                 interruptible capacity leased on `resource` */
} synor_market_cmd_kind;

/* One command. Fields not used by a kind must be zero. */
typedef struct synor_market_cmd {
    synor_market_cmd_kind kind;
    uint64_t time;      /* logical time (ns); never below the previous command's */
    uint64_t order_id;  /* PLACE: an id never used before (see ref);
                           CANCEL/AMEND: the order */
    uint32_t owner;     /* from synor_market_owner */
    uint32_t resource;  /* from synor_market_resource (PLACE) */
    synor_side side;
    synor_order_type type;
    synor_tif tif;
    int64_t price;      /* ticks; LIMIT orders and AMEND (new price) */
    int64_t qty;        /* units; PLACE and AMEND (new quantity) */
    uint64_t expires;   /* ask: available until; bid: deadline; 0 = never */
    uint64_t duration;  /* bid: how long the capacity is needed (ns); it
                           only matches asks available at least that long */
    uint64_t zones;     /* bid: allowed provider zones, bit z for zone id z
                           (synor_market_zone); 0 = any */
    uint8_t zone;       /* ask: the provider's zone id, 0 = unspecified */
    uint8_t interruptible; /* ask: capacity may be preempted */
    uint8_t priority;      /* bid: 0 = normal, higher = more urgent; 255 =
                              on-demand (preempts any interruptible lease) */
    uint8_t min_reputation; /* bid: only match providers at least this */
    uint8_t reputation;     /* REPUTATION: the new value */
    /* bid (PLACE): the region set. Up to SYNOR_MARKET_MAX_ALSO more
     * resources of the same kind and profile in other regions whose asks
     * the bid may also take when it arrives: the best price across the
     * bid's own book and these wins; at one price its own book first, then
     * these in the order given, time priority within a book. What is left
     * rests in its own book only. n_also = 0: its own book only. */
    uint8_t n_also;
    uint32_t also[3];
    /* The command's own id, for safe retries (cancel, amend, reputation,
     * reclaim; a place's id is its order_id, and its ref must be 0 or the
     * same): 0 = none. Ids share one space with order ids: an id a command
     * was accepted under - a place's order id (whether the order is now
     * open, filled, cancelled, expired or killed) or a ref - is never
     * accepted again (DUPLICATE_ID, checked before anything else, the
     * command's time included). A client that did not see a command
     * acknowledged resends it unchanged: if the first one was applied the
     * answer is DUPLICATE_ID and nothing happens twice; otherwise it is
     * applied now. */
    uint64_t ref;
} synor_market_cmd;

#define SYNOR_MARKET_MAX_ALSO 3

/* Why an order was rejected or cancelled (event reason). */
#define SYNOR_MARKET_REASON_MAP(X)                                       \
    X(NONE, 0, "none")                                                   \
    X(BAD_QUANTITY, 1, "quantity must be 1 to 2^53 - 1 units")          \
    X(BAD_PRICE, 2, "price must be 1 to 2^53 - 1 ticks (0 for a market order)") \
    X(UNKNOWN_RESOURCE, 3, "unknown resource")                          \
    X(UNKNOWN_ORDER, 4, "unknown order id")                             \
    X(NOT_OWNER, 5, "order belongs to another owner")                   \
    X(DUPLICATE_ID, 6, "id already used by an accepted command")         \
    X(UNKNOWN_OWNER, 7, "unknown owner")                                \
    X(TIME_BACKWARDS, 8, "command time is before the previous command") \
    X(BAD_FIELD, 9, "invalid field value")                              \
    X(FOK_UNFILLABLE, 10, "fill-or-kill order cannot be filled at once")\
    X(IOC_REMAINDER, 11, "unfilled remainder of an immediate order")    \
    X(SELF_TRADE, 12, "cancelled to prevent a self-trade")              \
    X(USER, 13, "cancelled by its owner")                               \
    X(EXPIRED, 14, "expiry time reached")                               \
    X(BAD_EXPIRY, 15, "expiry is not after the command time")         \
    X(RECLAIMED, 16, "the provider reclaimed the capacity")            \
    X(OUTBID, 17, "preempted by a higher bid")                         \
    X(ON_DEMAND, 18, "preempted by on-demand demand")                  \
    X(PREEMPTION_DEADLINE, 19, "the preemption warning period ended")  \
    X(LEASE_TERM, 20, "the lease's term ended")                        \
    X(NOTHING_LEASED, 21, "the provider has no running lease of this resource") \
    X(MALFORMED, 22, "malformed command (syntax, field or type)")

typedef enum synor_market_reason {
#define SYNOR__MR_ENUM(n, v, d) SYNOR_REASON_##n = (v),
    SYNOR_MARKET_REASON_MAP(SYNOR__MR_ENUM)
#undef SYNOR__MR_ENUM
} synor_market_reason;

const char *synor_market_reason_name(int reason); /* "BAD_QUANTITY" */
const char *synor_market_reason_text(int reason); /* "quantity must be positive" */

typedef enum synor_market_event_kind {
    SYNOR_EV_ACCEPTED = 1,  /* PLACE validated; trades may follow */
    SYNOR_EV_REJECTED = 2,  /* nothing changed (seq 0); see reason */
    SYNOR_EV_TRADE = 3,     /* order_id = taker, maker_id = resting order */
    SYNOR_EV_CANCELLED = 4, /* see reason: USER, SELF_TRADE, IOC_REMAINDER, FOK_UNFILLABLE */
    SYNOR_EV_EXPIRED = 5,
    SYNOR_EV_AMENDED = 6,   /* qty/price now as given; priority kept or not */
    SYNOR_EV_REPUTATION = 7,
    /* preemptible capacity: order_id is the lease id, owner the holder,
     * maker_owner the provider, price the lease's, qty the units concerned
     * and remaining the units of that lease id still active after it */
    SYNOR_EV_LEASED = 8,     /* a trade on an interruptible ask made a lease;
                                deadline = the end of its term (0 = none) */
    SYNOR_EV_PREEMPTED = 9,  /* checkpoint callback: qty units of the lease
                                stop at `deadline` (only those units; the
                                rest of the lease runs on) */
    SYNOR_EV_MIGRATED = 10,  /* replacement capacity was bought (trades and a
                                LEASED event precede this) */
    SYNOR_EV_LEASE_ENDED = 11 /* reason PREEMPTION_DEADLINE: warned units
                                 without replacement stop; LEASE_TERM: the
                                 term (bid duration, or the ask's available-
                                 until) ended normally */
} synor_market_event_kind;

typedef struct synor_market_event {
    synor_market_event_kind kind;
    uint64_t seq;       /* sequence number of the command that caused it;
                           0 for REJECTED: a rejected command takes none */
    uint64_t time;
    uint64_t order_id;
    uint32_t owner;
    uint32_t resource;
    synor_side side;
    int reason;         /* synor_market_reason */
    int64_t price;      /* TRADE: execution price; AMENDED: new price */
    int64_t qty;        /* TRADE: executed units; AMENDED: new quantity */
    int64_t remaining;  /* units of order_id still open after this event */
    uint64_t maker_id;  /* TRADE: the resting order */
    uint32_t maker_owner;
    int kept_priority;  /* AMENDED */
    uint64_t deadline;  /* PREEMPTED, MIGRATED, LEASE_ENDED */
    const synor_market *market; /* the market (also during recovery) */
    const char *message; /* REJECTED by synor_market_submit_json before the
                            market saw the command (a malformed line, an
                            unknown name): what is wrong, naming the file,
                            line, column, field and value; only the reason
                            and this are set. NULL otherwise. Valid during
                            the callback. */
} synor_market_event;

typedef void (*synor_market_event_fn)(const synor_market_event *ev, void *user_data);

/* The event as one JSON object (the JSON-lines event format of
 * docs/MARKET.md, without the newline); line > 0 adds "line" (the batch
 * input line). Writes at most cap bytes including the terminating NUL, like
 * snprintf, and returns the length the whole object needs (0 if out of
 * memory). The names come from ev->market, which must still be open. */
size_t synor_market_event_json(const synor_market_event *ev, long line, char *buf, size_t cap);

/* Applies one command written as a JSON-lines command (docs/MARKET.md:
 * text of len bytes, without its newline; name and line number are for
 * messages, "name:line:column: ..."), all or nothing. The line is parsed
 * strictly; the names are resolved - an owner is registered by its first
 * place or reputation, a resource (checked against cat) by a place or a
 * reclaim, a zone wherever it is named - and the command submitted. A
 * command rejected for any reason (malformed, an unknown or invalid name,
 * or by the market) registers nothing and changes nothing; an applied one
 * journals its new names with it. Events go to cfg->on_event; a rejection
 * found before the market saw the command is one REJECTED event whose
 * `message` says what is wrong (reason MALFORMED, BAD_FIELD, BAD_PRICE,
 * BAD_QUANTITY, UNKNOWN_OWNER or UNKNOWN_RESOURCE; synor_errmsg() holds it
 * too). *reason (may be NULL) gets 0 when the command was applied, else
 * the reason it was rejected. Returns 0 (applied or rejected); or a
 * negative SYNOR_E* as synor_market_submit does (out of memory, I/O, a
 * market opened read-only or to be reopened): the line then left nothing
 * registered or journaled. A registered name of a rejected command exists
 * only while its REJECTED event is delivered. */
int synor_market_submit_json(synor_market *m, const synor_catalog *cat, const char *text,
                             size_t len, const char *name, long line, int *reason);

typedef enum synor_fsync_policy {
    SYNOR_FSYNC_BATCH = 0, /* fsync at every synor_market_commit (default) */
    SYNOR_FSYNC_NEVER = 1, /* write only; the OS decides (a crash of the
                              machine, not the process, may lose the tail) */
    SYNOR_FSYNC_EVERY = 2  /* fsync after every command */
} synor_fsync_policy;

typedef struct synor_market_config {
    const char *dir;              /* journal + snapshots; NULL = in memory only */
    synor_fsync_policy fsync;
    uint64_t candle_ns;           /* OHLC interval (default 60 s) */
    synor_market_event_fn on_event;
    void *user_data;              /* passed to on_event, never touched */
    uint64_t preempt_warning_ns;  /* warning before a preempted lease ends
                                     (default 120 s, as AWS Spot gives) */
    uint32_t interruptible_discount_bp; /* an interruptible ask rests at
                                     price x (1 - bp/10000); default 0 */
    int replay_events;            /* also deliver the events of commands
                                     replayed by recovery (audit, trade
                                     history since the last snapshot) */
    uint64_t snapshot_every;      /* durable markets: write a snapshot (and
                                     truncate the journal) at the first
                                     commit after this many journal records;
                                     0 = only on synor_market_snapshot.
                                     Default 1,000,000 */
    int read_only;                /* open an existing market (dir) to look:
                                     nothing is created or written (no
                                     directory, no journal, no torn tail
                                     cut, no upgrade); submit, commit,
                                     snapshot and registrations answer
                                     SYNOR_ESTATE; SYNOR_ENOENT when dir
                                     holds no market */
    int salvage;                  /* recovery: a damaged record followed by
                                     valid ones is corruption, not a torn
                                     tail, and open fails (SYNOR_EPARSE) so
                                     that no acknowledged command is dropped
                                     silently; with salvage = 1 the journal
                                     is cut at the damage instead (the note
                                     says how many records were lost) */
} synor_market_config;

void synor_market_config_init(synor_market_config *cfg);

/* Opens a market: in memory, or from cfg->dir (created if absent), restoring
 * snapshot + journal. Events of replayed commands are delivered only with
 * cfg->replay_events. */
int synor_market_open(const synor_market_config *cfg, synor_market **out);
/* Commits pending journal records, then frees the market. */
void synor_market_close(synor_market *m);

/* What recovery found ("" if nothing to say), e.g. a dropped torn record. */
const char *synor_market_recovery_note(const synor_market *m);

/* Registers (journaled) or looks up a resource key; validated against cat:
 * "<kind>/<profile-id>/<region>" with the profile's kind. */
int synor_market_resource(synor_market *m, const synor_catalog *cat, const char *key,
                          uint32_t *index);
/* Registers (journaled) or looks up an owner by name (1..63 printable
 * characters); new owners start at reputation 50. */
int synor_market_owner(synor_market *m, const char *name, uint32_t *id);
/* Registers (journaled) or looks up a provider zone - a site or city inside
 * a resource's region, e.g. "fra1" - giving its id, 1..63. A bid's zone
 * set is the region-set constraint: it only matches asks from those zones. */
int synor_market_zone(synor_market *m, const char *name, uint32_t *id);
const char *synor_market_zone_name(const synor_market *m, uint32_t id); /* NULL if none */
const char *synor_market_resource_key(const synor_market *m, uint32_t index); /* NULL if none */
const char *synor_market_owner_name(const synor_market *m, uint32_t id);       /* NULL if none */
int synor_market_find_resource(const synor_market *m, const char *key, uint32_t *index);
int synor_market_find_owner(const synor_market *m, const char *name, uint32_t *id);

/* Applies one command: checks it in full, journals it (when durable), then
 * matches; events go to cfg->on_event. A bad command is not an error of the
 * call: it produces one REJECTED event and changes nothing - no sequence
 * number, no journal record, and not the market's time (nothing expires
 * because of it). Returns 0; or a negative SYNOR_E*: out of memory before
 * any change (nothing changed), or out of memory half-way through a
 * command (its journal record is withdrawn, so the journal holds exactly
 * the commands before it, and the market answers SYNOR_ESTATE until it is
 * closed and reopened); SYNOR_ESTATE after such a failure or a failed
 * commit. */
int synor_market_submit(synor_market *m, const synor_market_cmd *cmd);

/* Writes pending journal records and applies the fsync policy. Events
 * delivered before this call returns 0 are acknowledged (durable). A failed
 * write may have been partial: the market then refuses further commands and
 * commits (SYNOR_ESTATE) until it is reopened, and recovery cuts the torn
 * tail. */
int synor_market_commit(synor_market *m);

/* A basket: bids that fill all together or not at all (what a plan
 * bought on the market needs - `synor plan --market DIR --buy`). Every
 * command is a PLACE of a BID with tif FOK, without `also`, all of one
 * time, each on a different resource, ids distinct; 1 to
 * SYNOR_MARKET_BASKET_MAX of them. Each is checked as synor_market_submit
 * checks it, and must fill at once in full (FOK) against its book as it
 * is - orders that expire by the basket's time not counted. When one
 * fails, nothing changes and nothing is journaled: *failed is its index,
 * *reason its reason, and one REJECTED event is delivered for it (return
 * 0). Otherwise every bid is applied, in order, with its events, and the
 * journal holds them as one group: recovery replays all of them or, when
 * a crash tore the group, none (return 0, *reason 0). A negative return is
 * an error (NULL argument, a bad count, read-only or broken market, out of
 * memory: the market then refuses commands until reopened, and the
 * journal holds none of the basket). */
#define SYNOR_MARKET_BASKET_MAX 64
int synor_market_submit_basket(synor_market *m, const synor_market_cmd *cmds, size_t n,
                               size_t *failed, int *reason);

/* A commit in two halves, so that the disk's flush of one batch overlaps
 * the work on the next (group commit, as databases pipeline their log):
 * synor_market_commit_write writes the pending records to the journal (and
 * takes a periodic snapshot) without the flush; synor_market_commit_sync
 * applies the fsync policy to everything written so far. Events delivered
 * before a commit_write are acknowledged once a commit_sync after it
 * returns 0 - not before. synor_market_commit is write then sync.
 * Threads: commit_sync touches only the journal's file, so it may run on
 * another thread while this one submits commands and calls commit_write,
 * commit or snapshot (flushes and a snapshot's rewrite of the files take
 * turns on a lock) - but never at the same time as close. A sync covers
 * every commit_write that returned before it began; one that runs beside
 * it may or may not be covered, so one sync can make several batches
 * durable at once (group commit). A failed sync is remembered: the next
 * write fails too (SYNOR_EIO). */
int synor_market_commit_write(synor_market *m);
int synor_market_commit_sync(const synor_market *m);

/* Writes a snapshot (atomically: temporary file, fsync, rename) so that
 * recovery need not replay the journal from the start. */
int synor_market_snapshot(synor_market *m);

/* 64-bit hash of the complete state (books in priority order, owners,
 * reputations, price statistics, sequence). Equal states, equal hashes. */
uint64_t synor_market_state_hash(const synor_market *m);
uint64_t synor_market_seq(const synor_market *m); /* commands applied */
uint64_t synor_market_time(const synor_market *m); /* time of the last command */

/* ---- price discovery ---- */

typedef struct synor_level {
    int64_t price;
    int64_t qty;
    uint32_t orders;
} synor_level;

typedef struct synor_candle {
    uint64_t start;  /* interval start (logical ns) */
    int64_t open, high, low, close;
    int64_t volume;
} synor_candle;

typedef struct synor_market_prices {
    int has_bid, has_ask;
    int64_t best_bid, best_ask;
    int64_t bid_qty, ask_qty;  /* at the best levels */
    int64_t spread;            /* ask - bid when both exist */
    int has_last;
    int64_t last_price, last_qty;
    uint64_t last_time;
    int64_t vwap_24h;          /* ticks, rounded; 0 without trades */
    int64_t volume_24h;        /* units traded in the 24 h before the last command */
    int64_t volume_total;
    uint64_t trades_total;
} synor_market_prices;

int synor_market_prices_get(const synor_market *m, uint32_t resource, synor_market_prices *out);
/* L2 depth: up to max levels per side, best first. */
int synor_market_depth(const synor_market *m, uint32_t resource, synor_level *bids, size_t *n_bids,
                       synor_level *asks, size_t *n_asks, size_t max);
/* OHLC candles (oldest first) of the last 24 h of logical time; up to max. */
int synor_market_candles(const synor_market *m, uint32_t resource, synor_candle *out, size_t max,
                         size_t *n);

/* An open order, for display. */
typedef struct synor_market_order {
    uint64_t id;
    uint32_t owner, resource;
    synor_side side;
    int64_t price, qty;
    uint64_t expires;
    int interruptible;
} synor_market_order;
int synor_market_order_get(const synor_market *m, uint64_t id, synor_market_order *out);
/* The open orders of one side of a book in priority order (best price
 * first, then time), up to max; *n gets how many were written. */
int synor_market_orders(const synor_market *m, uint32_t resource, synor_side side,
                        synor_market_order *out, size_t max, size_t *n);
size_t synor_market_open_orders(const synor_market *m);

/* A lease of interruptible capacity, for display. Preempting part of a
 * lease splits it: the warned units and the units that run on are listed
 * as two entries with the same id. */
typedef struct synor_market_lease {
    uint64_t id;
    uint32_t provider, holder, resource;
    int64_t price, qty;
    uint64_t start;    /* time of the trade */
    uint64_t end;      /* end of the term; 0 = until preempted */
    uint64_t deadline; /* 0 = active; else preempted, the units stop then */
    int priority;      /* the holder's bid priority (255 = on-demand) */
    int migrated;      /* preempted and replacement capacity was bought */
} synor_market_lease;
/* The leases not yet ended, oldest first, up to max; *n gets how many were
 * written. Returns 0 or SYNOR_EINVAL. */
int synor_market_leases(const synor_market *m, synor_market_lease *out, size_t max, size_t *n);
size_t synor_market_lease_count(const synor_market *m);

#ifdef __cplusplus
}
#endif
#endif
