/* event_keep.h - an event kept to be written as JSON later (cmdio.c), so
 * that a front end can format a batch's events on another thread than the
 * one applying the next batch (the CLI's group commit). Never installed. */
#ifndef SYNOR_MARKET_EVENT_KEEP_H
#define SYNOR_MARKET_EVENT_KEEP_H

#include <stdint.h>

#include "synor/market.h"

/* What the JSON form of an event needs, its names included: pointers to
 * the market's own copies, which do not change and live until the market
 * is closed - except the new names of a rejected command, taken back once
 * its REJECTED event is delivered, which is why such an event is not kept.
 * Reading a kept event touches nothing of the market's. */
typedef struct synor__kept_event {
    uint64_t seq, time, order_id, maker_id, deadline;
    int64_t price, qty, remaining;
    long line;
    const char *owner, *resource, *maker; /* NAME_ROOM bytes each */
    int reason;
    uint8_t owner_n, resource_n, maker_n;
    uint8_t kind, side, kept_priority;
} synor__kept_event;

/* Room the JSON form of a kept event can need, with its newline. */
#define SYNOR__KEPT_EVENT_MAX 1024

/* Keeps e, of batch input line `line` (0 = none): 0, or -1 when it cannot
 * be kept (a REJECTED event: write it at once, synor_market_event_json). */
int synor__event_keep(const synor_market_event *e, long line, synor__kept_event *out);

/* Writes the JSON object of k and a newline at o (room:
 * SYNOR__KEPT_EVENT_MAX); returns the end. The same bytes as
 * synor_market_event_json gives for the event when it happens. */
char *synor__kept_event_json(const synor__kept_event *k, char *o);

#endif
