/* market_fixture.h - what the market test programs share: an event log, a
 * market with two resources and four owners, command builders, and the
 * seeded random command stream. Test code only. */
#ifndef SYNOR_MARKET_FIXTURE_H
#define SYNOR_MARKET_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "market/market_internal.h" /* synor__market_invariants */
#include "synor.h"
#include "test.h"

typedef struct evlog {
    synor_market_event *ev;
    size_t n, cap;
} evlog;

static inline void on_event(const synor_market_event *ev, void *ud)
{
    evlog *l = ud;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->ev = realloc(l->ev, l->cap * sizeof *l->ev);
    }
    l->ev[l->n++] = *ev;
}

typedef struct fx {
    synor_catalog *cat;
    synor_market *m;
    evlog log;
    uint32_t gpu, tpu;
    uint32_t alice, bob, carol, dave;
} fx;

static inline int fx_open(fx *f, const char *dir)
{
    memset(f, 0, sizeof *f);
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    cfg.dir = dir;
    cfg.on_event = on_event;
    cfg.user_data = &f->log;
    if (synor_catalog_create(&f->cat) || synor_catalog_load_builtin(f->cat) ||
        synor_market_open(&cfg, &f->m))
        return -1;
    if (synor_market_resource(f->m, f->cat, "gpu/nvidia-h100-sxm/eu-west", &f->gpu) ||
        synor_market_resource(f->m, f->cat, "tpu/google-tpu-v5p/us-east", &f->tpu) ||
        synor_market_owner(f->m, "alice", &f->alice) || synor_market_owner(f->m, "bob", &f->bob) ||
        synor_market_owner(f->m, "carol", &f->carol) || synor_market_owner(f->m, "dave", &f->dave))
        return -1;
    return 0;
}

static inline void fx_close(fx *f)
{
    synor_market_close(f->m);
    synor_catalog_destroy(f->cat);
    free(f->log.ev);
}

static uint64_t T = 1000; /* logical time of the next command */

static inline synor_market_cmd place(uint64_t id, uint32_t owner, uint32_t res, synor_side side,
                              int64_t price, int64_t qty, synor_tif tif)
{
    synor_market_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = SYNOR_CMD_PLACE;
    c.time = T += 10;
    c.order_id = id;
    c.owner = owner;
    c.resource = res;
    c.side = side;
    c.type = price ? SYNOR_LIMIT : SYNOR_MARKET;
    c.tif = tif;
    c.price = price;
    c.qty = qty;
    return c;
}

static inline synor_market_cmd simple(synor_market_cmd_kind k, uint64_t id, uint32_t owner, int64_t price,
                               int64_t qty)
{
    synor_market_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = k;
    c.time = T += 10;
    c.order_id = id;
    c.owner = owner;
    c.price = price;
    c.qty = qty;
    return c;
}

static inline int submit(fx *f, synor_market_cmd c) { return synor_market_submit(f->m, &c); }

/* Index of the first event of kind k at or after `from`, or -1. */
static inline long find_ev(const fx *f, size_t from, synor_market_event_kind k)
{
    for (size_t i = from; i < f->log.n; i++)
        if (f->log.ev[i].kind == k)
            return (long)i;
    return -1;
}


static uint64_t rng_state;
static inline uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static inline synor_market_cmd random_cmd(uint64_t *next_id, uint32_t n_res, uint32_t n_owners)
{
    synor_market_cmd c;
    memset(&c, 0, sizeof c);
    c.time = T += rnd() % 3 == 0 ? 0 : 1 + rnd() % 50;
    unsigned r = (unsigned)(rnd() % 100);
    c.owner = (uint32_t)(rnd() % (n_owners + (rnd() % 50 == 0)));
    if (r < 45) {
        c.kind = SYNOR_CMD_PLACE;
        c.order_id = rnd() % 40 == 0 && *next_id > 1 ? 1 + rnd() % (*next_id - 1) : (*next_id)++;
        c.resource = (uint32_t)(rnd() % (n_res + (rnd() % 60 == 0)));
        c.side = (synor_side)(rnd() % 2);
        c.type = rnd() % 12 == 0 ? SYNOR_MARKET : SYNOR_LIMIT;
        c.tif = (synor_tif)(rnd() % 6 == 0 ? 1 + rnd() % 2 : 0);
        c.price = c.type == SYNOR_LIMIT ? 90 + (int64_t)(rnd() % 21) : 0;
        c.qty = 1 + (int64_t)(rnd() % 20) - (rnd() % 50 == 0 ? 25 : 0);
        if (rnd() % 8 == 0)
            c.expires = c.time + rnd() % 300;
        if (rnd() % 6 == 0)
            c.min_reputation = (uint8_t)(rnd() % 101);
        if (rnd() % 6 == 0)
            c.duration = rnd() % 400;
        /* no interruptible asks: the reference book has no leases */
    } else if (r < 60) {
        c.kind = SYNOR_CMD_CANCEL;
        c.order_id = 1 + rnd() % (*next_id + 1);
    } else if (r < 97) {
        c.kind = SYNOR_CMD_AMEND;
        c.order_id = 1 + rnd() % (*next_id + 1);
        c.price = 90 + (int64_t)(rnd() % 21);
        c.qty = (int64_t)(rnd() % 20);
    } else {
        c.kind = SYNOR_CMD_REPUTATION;
        c.reputation = (uint8_t)(rnd() % 102);
    }
    /* a command's own id now and then: new, or one already used */
    if (c.kind != SYNOR_CMD_PLACE && rnd() % 4 == 0)
        c.ref = rnd() % 10 == 0 && *next_id > 1 ? 1 + rnd() % (*next_id - 1) : (*next_id)++;
    if (rnd() % 200 == 0)
        c.time = T - 100; /* time running backwards */
    return c;
}

static inline long find_ev_kind_reason(const fx *f, size_t from, synor_market_event_kind k, int reason)
{
    for (size_t i = from; i < f->log.n; i++)
        if (f->log.ev[i].kind == k && f->log.ev[i].reason == reason)
            return (long)i;
    return -1;
}

static inline void preemption_scenario(fx *f)
{
    /* alice offers 10 interruptible units; bob leases them at 100 */
    synor_market_cmd a = place(1, f->alice, f->gpu, SYNOR_ASK, 100, 10, SYNOR_GTC);
    a.interruptible = 1;
    submit(f, a);
    submit(f, place(2, f->bob, f->gpu, SYNOR_BID, 100, 10, SYNOR_GTC));
    /* carol bids higher for 4 units with nothing in the book: bob's lease
     * is preempted and carol gets the capacity at her price */
    submit(f, place(3, f->carol, f->gpu, SYNOR_BID, 150, 4, SYNOR_GTC));
}

#endif
