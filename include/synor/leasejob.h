/* synor/leasejob.h - the job's side of preemptible capacity (seed 003 §1.3,
 * issue 14 item 8): a job that holds leases of interruptible capacity on a
 * spot market (synor/market.h) and runs on devices (the runtime's,
 * synor/runtime.h, or a simulator's) hears of a preemption, checkpoints,
 * and either gets replacement capacity at the current market price or
 * lets the devices go at the deadline and ends gracefully when none is
 * left.
 *
 * How it is used. The job binds each unit of a lease it holds to a device
 * (synor_leasejob_hold), passes every market event to
 * synor_leasejob_on_event (it has the signature of synor_market_event_fn:
 * put it in synor_market_config.on_event with the job as user_data, or call
 * it from your own callback), and calls synor_leasejob_step after each
 * synor_market_submit (the market cannot take commands from inside its
 * event callback). Then, for a PREEMPTED event of a lease it holds:
 *   1. at once (inside the event callback) ops.preempt is called for the
 *      device of each warned unit, with the warning (deadline - event
 *      time, ns): the job checkpoints and the device will stop at the
 *      deadline (synor_runtime_preempt);
 *   2. if the market's own replacement (an immediate bid at the lease's
 *      price, MIGRATED event) covered the units, the devices stay
 *      (ops.cancel) - outcome MIGRATED;
 *   3. otherwise step looks up the best ask of the resource
 *      (synor_market_prices_get) and, while it is within the job's limit
 *      (cfg.max_price per unit, i.e. per device-hour), places an IOC bid at
 *      that price for the units still uncovered, with the rest of the
 *      lease's term as duration (a few rounds, one price level each). Each
 *      unit it fills keeps its device (ops.cancel) - outcome REPLACED at
 *      the price paid; the device is bound to the new lease (a later
 *      preemption of that lease reaches it again) or, bought from an
 *      ask that is not interruptible, to no lease;
 *   4. units left uncovered stop at the deadline - outcome STOPPED - and
 *      when no device the job holds is left, ops.end is called once (the
 *      job ends gracefully; its checkpoint is what it keeps).
 * The market's replacement pays the lease's price; the job's pays the
 * current ask, which may be higher, up to its limit. Nothing here changes
 * how the market applies commands: the job's bids are ordinary commands.
 *
 * Thread safety: one job per market thread, like the market itself; the
 * ops it calls may be thread-safe runtime calls. */
#ifndef SYNOR_LEASEJOB_H
#define SYNOR_LEASEJOB_H

#include <stddef.h>
#include <stdint.h>

#include "synor/market.h"
#include "synor/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_leasejob synor_leasejob;

/* What the job does. preempt: the device must checkpoint and will stop
 * warning_ns from now; cancel: replacement capacity was obtained, the
 * device stays; end: no device is left (called once). A failing preempt
 * or cancel (negative return) is recorded in the outcome's `error`. */
typedef struct synor_leasejob_ops {
    int (*preempt)(void *user, unsigned device, uint64_t warning_ns);
    int (*cancel)(void *user, unsigned device);
    void (*end)(void *user);
    void *user;
} synor_leasejob_ops;

typedef struct synor_leasejob_config {
    uint32_t holder; /* the job's owner id (synor_market_owner) */
    /* The most the job pays per unit (ticks per device-hour) for
     * replacement capacity; 0 = never buy any (devices stop). At most
     * 2^53 - 1, as market prices. */
    int64_t max_price;
    /* The ids of the job's replacement bids are first_order_id,
     * first_order_id + 1, ...: an id range no other client of the market
     * uses (the market rejects a reused id). Must be > 0. */
    uint64_t first_order_id;
    synor_leasejob_ops ops;
} synor_leasejob_config;

/* SYNOR_EINVAL naming the field for a bad config; SYNOR_ENOMEM. */
int synor_leasejob_create(const synor_leasejob_config *cfg, synor_leasejob **out);
void synor_leasejob_destroy(synor_leasejob *j); /* accepts NULL */

/* Binds `units` units of lease lease_id (from its LEASED event) to
 * devices[0..units): unit k runs on devices[k]. Units of one lease are
 * warned from the last bound. SYNOR_EINVAL for a zero id, no units, or a
 * device already bound; SYNOR_ENOMEM. */
#define SYNOR_LEASEJOB_MAX_UNITS 256
int synor_leasejob_hold(synor_leasejob *j, uint64_t lease_id, const unsigned *devices,
                        size_t units);

/* Feeds one market event (any event; others than the job's are ignored).
 * user_data is the job. */
void synor_leasejob_on_event(const synor_market_event *ev, void *job);

/* Acts on the preemptions heard since the last step: cancels the stops the
 * market's replacement covered, buys replacement within the limit at the
 * current ask, calls end when no device is left. Its own commands' events
 * come back through on_event (the market's callback), so on_event must be
 * wired to the same market. Returns 0, or a negative SYNOR_E* of
 * synor_market_submit (the market is then broken; see market.h). */
int synor_leasejob_step(synor_leasejob *j, synor_market *m);

typedef enum synor_leasejob_outcome_kind {
    SYNOR_LEASEJOB_WARNED = 0,   /* heard; step has not acted yet */
    SYNOR_LEASEJOB_MIGRATED = 1, /* the market's own replacement at the lease's price */
    SYNOR_LEASEJOB_REPLACED = 2, /* the job bought replacement at the current ask */
    SYNOR_LEASEJOB_STOPPED = 3,  /* no replacement within the limit: the devices stop */
    SYNOR_LEASEJOB_PARTIAL = 4   /* some units replaced (market or job), the rest stop */
} synor_leasejob_outcome_kind;

/* "warned", "migrated", "replaced", "stopped", "partial"; NULL otherwise. */
const char *synor_leasejob_outcome_name(int kind);

/* One preemption of a lease the job holds, as the job handled it. */
typedef struct synor_leasejob_outcome {
    uint64_t lease_id;
    uint32_t resource;
    uint64_t time, deadline; /* market time of the warning; when the units stop */
    int64_t units;           /* warned */
    int64_t replaced;        /* units covered (market or job) */
    int64_t lease_price;     /* ticks per unit of the preempted lease */
    int64_t paid_max;        /* highest price per unit the job's bids paid; 0: none */
    int64_t best_ask;        /* best ask seen by step; 0: none */
    synor_leasejob_outcome_kind kind;
    unsigned devices[4]; /* the first warned devices */
    int error;           /* first failure of an op for it, 0 = none */
} synor_leasejob_outcome;

/* The preemptions so far, oldest first, up to max; returns how many there
 * are (may exceed max). */
size_t synor_leasejob_outcomes(const synor_leasejob *j, synor_leasejob_outcome *out, size_t max);
/* Devices bound and neither stopping nor stopped. */
size_t synor_leasejob_devices_left(const synor_leasejob *j);
/* Whether ops.end has been called. */
int synor_leasejob_ended(const synor_leasejob *j);

/* Ops that drive a runtime: preempt = synor_runtime_preempt (the market's
 * warning in logical ns becomes the runtime's warning in monotonic ns),
 * cancel = synor_runtime_preempt_cancel; end is left NULL (set your own). */
void synor_leasejob_runtime_ops(synor_runtime *rt, synor_leasejob_ops *ops);

#ifdef __cplusplus
}
#endif
#endif
