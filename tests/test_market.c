/* test_market.c - the spot market: matching rules, constraints, preemption,
 * bad commands, price discovery, and a differential test against the
 * reference book of market_ref.h. Durability: test_market_journal.c. */
#include "market_fixture.h"
#include "market_ref.h"

TEST(price_time_priority_and_partial_fills)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    /* three asks: 100 @ 2.0 (alice), 50 @ 1.9 (bob), 30 @ 2.0 (carol, later) */
    ASSERT_OK(submit(&f, place(1, f.alice, f.gpu, SYNOR_ASK, 2000000, 100, SYNOR_GTC)));
    ASSERT_OK(submit(&f, place(2, f.bob, f.gpu, SYNOR_ASK, 1900000, 50, SYNOR_GTC)));
    ASSERT_OK(submit(&f, place(3, f.carol, f.gpu, SYNOR_ASK, 2000000, 30, SYNOR_GTC)));
    size_t mark = f.log.n;
    /* dave buys 170 up to 2.0: bob's 50 @1.9 first, then alice 100, then carol 20 */
    ASSERT_OK(submit(&f, place(4, f.dave, f.gpu, SYNOR_BID, 2000000, 170, SYNOR_GTC)));
    long t1 = find_ev(&f, mark, SYNOR_EV_TRADE);
    ASSERT(t1 >= 0);
    ASSERT_EQ(f.log.ev[t1].maker_id, 2);
    ASSERT_EQ(f.log.ev[t1].price, 1900000); /* the resting order's price */
    ASSERT_EQ(f.log.ev[t1].qty, 50);
    ASSERT_EQ(f.log.ev[t1 + 1].maker_id, 1);
    ASSERT_EQ(f.log.ev[t1 + 1].qty, 100);
    ASSERT_EQ(f.log.ev[t1 + 2].maker_id, 3);
    ASSERT_EQ(f.log.ev[t1 + 2].qty, 20);
    ASSERT_EQ(f.log.ev[t1 + 2].remaining, 0);
    synor_market_order o;
    ASSERT_OK(synor_market_order_get(f.m, 3, &o));
    ASSERT_EQ(o.qty, 10);
    ASSERT(synor_market_order_get(f.m, 4, &o) != 0); /* filled, not resting */
    synor_market_prices p;
    ASSERT_OK(synor_market_prices_get(f.m, f.gpu, &p));
    ASSERT(p.has_ask && !p.has_bid);
    ASSERT_EQ(p.best_ask, 2000000);
    ASSERT_EQ(p.ask_qty, 10);
    ASSERT_EQ(p.last_price, 2000000);
    ASSERT_EQ(p.volume_total, 170);
    /* VWAP = (50*1.9 + 120*2.0) / 170 = 1.970588.. -> 1970588 ticks */
    ASSERT_EQ(p.vwap_24h, 1970588);
    fx_close(&f);
}

TEST(ioc_fok_market_orders)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    ASSERT_OK(submit(&f, place(1, f.alice, f.gpu, SYNOR_ASK, 1000, 10, SYNOR_GTC)));
    ASSERT_OK(submit(&f, place(2, f.alice, f.gpu, SYNOR_ASK, 1100, 10, SYNOR_GTC)));
    /* FOK for 25 cannot fill: nothing trades */
    size_t mark = f.log.n;
    ASSERT_OK(submit(&f, place(3, f.bob, f.gpu, SYNOR_BID, 1100, 25, SYNOR_FOK)));
    ASSERT(find_ev(&f, mark, SYNOR_EV_TRADE) < 0);
    long c = find_ev(&f, mark, SYNOR_EV_CANCELLED);
    ASSERT(c >= 0 && f.log.ev[c].reason == SYNOR_REASON_FOK_UNFILLABLE);
    ASSERT_EQ(synor_market_open_orders(f.m), 2);
    /* IOC for 15 @1000: 10 trade, 5 cancelled */
    mark = f.log.n;
    ASSERT_OK(submit(&f, place(4, f.bob, f.gpu, SYNOR_BID, 1000, 15, SYNOR_IOC)));
    long t = find_ev(&f, mark, SYNOR_EV_TRADE);
    ASSERT(t >= 0 && f.log.ev[t].qty == 10);
    c = find_ev(&f, mark, SYNOR_EV_CANCELLED);
    ASSERT(c >= 0 && f.log.ev[c].reason == SYNOR_REASON_IOC_REMAINDER);
    ASSERT_EQ(synor_market_open_orders(f.m), 1);
    /* a market order sweeps regardless of price, never rests */
    mark = f.log.n;
    ASSERT_OK(submit(&f, place(5, f.carol, f.gpu, SYNOR_BID, 0, 12, SYNOR_GTC)));
    t = find_ev(&f, mark, SYNOR_EV_TRADE);
    ASSERT(t >= 0 && f.log.ev[t].price == 1100 && f.log.ev[t].qty == 10);
    c = find_ev(&f, mark, SYNOR_EV_CANCELLED);
    ASSERT(c >= 0 && f.log.ev[c].remaining == 0 && f.log.ev[c].reason == SYNOR_REASON_IOC_REMAINDER);
    ASSERT_EQ(synor_market_open_orders(f.m), 0);
    fx_close(&f);
}

TEST(self_trade_prevention_cancels_the_resting_order)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    ASSERT_OK(submit(&f, place(1, f.alice, f.gpu, SYNOR_ASK, 1000, 10, SYNOR_GTC)));
    ASSERT_OK(submit(&f, place(2, f.bob, f.gpu, SYNOR_ASK, 1000, 10, SYNOR_GTC)));
    size_t mark = f.log.n;
    ASSERT_OK(submit(&f, place(3, f.alice, f.gpu, SYNOR_BID, 1000, 5, SYNOR_GTC)));
    long c = find_ev(&f, mark, SYNOR_EV_CANCELLED);
    ASSERT(c >= 0);
    ASSERT_EQ(f.log.ev[c].order_id, 1);
    ASSERT_EQ(f.log.ev[c].reason, SYNOR_REASON_SELF_TRADE);
    long t = find_ev(&f, mark, SYNOR_EV_TRADE);
    ASSERT(t > c && f.log.ev[t].maker_id == 2);
    fx_close(&f);
}

TEST(amend_keeps_or_loses_priority)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    ASSERT_OK(submit(&f, place(1, f.alice, f.gpu, SYNOR_ASK, 1000, 10, SYNOR_GTC)));
    ASSERT_OK(submit(&f, place(2, f.bob, f.gpu, SYNOR_ASK, 1000, 10, SYNOR_GTC)));
    /* reducing keeps alice first */
    size_t mark = f.log.n;
    ASSERT_OK(submit(&f, simple(SYNOR_CMD_AMEND, 1, f.alice, 1000, 4)));
    long a = find_ev(&f, mark, SYNOR_EV_AMENDED);
    ASSERT(a >= 0 && f.log.ev[a].kept_priority == 1);
    synor_market_order ord[4];
    size_t n;
    ASSERT_OK(synor_market_orders(f.m, f.gpu, SYNOR_ASK, ord, 4, &n));
    ASSERT(n == 2 && ord[0].id == 1 && ord[0].qty == 4);
    /* increasing loses it */
    mark = f.log.n;
    ASSERT_OK(submit(&f, simple(SYNOR_CMD_AMEND, 1, f.alice, 1000, 6)));
    a = find_ev(&f, mark, SYNOR_EV_AMENDED);
    ASSERT(a >= 0 && f.log.ev[a].kept_priority == 0);
    ASSERT_OK(synor_market_orders(f.m, f.gpu, SYNOR_ASK, ord, 4, &n));
    ASSERT(n == 2 && ord[0].id == 2 && ord[1].id == 1);
    /* a price change that crosses trades */
    ASSERT_OK(submit(&f, place(3, f.carol, f.gpu, SYNOR_BID, 900, 3, SYNOR_GTC)));
    mark = f.log.n;
    ASSERT_OK(submit(&f, simple(SYNOR_CMD_AMEND, 3, f.carol, 1000, 3)));
    long t = find_ev(&f, mark, SYNOR_EV_TRADE);
    ASSERT(t >= 0 && f.log.ev[t].maker_id == 2 && f.log.ev[t].qty == 3);
    /* amend or cancel by another owner is refused */
    mark = f.log.n;
    ASSERT_OK(submit(&f, simple(SYNOR_CMD_CANCEL, 2, f.alice, 0, 0)));
    ASSERT_EQ(f.log.ev[mark].kind, SYNOR_EV_REJECTED);
    ASSERT_EQ(f.log.ev[mark].reason, SYNOR_REASON_NOT_OWNER);
    fx_close(&f);
}

TEST(expiry_and_reputation_constraints)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    synor_market_cmd low = simple(SYNOR_CMD_REPUTATION, 0, f.alice, 0, 0);
    low.reputation = 20;
    ASSERT_OK(submit(&f, low));
    ASSERT_OK(submit(&f, place(1, f.alice, f.gpu, SYNOR_ASK, 1000, 10, SYNOR_GTC)));
    synor_market_cmd b = place(2, f.bob, f.gpu, SYNOR_ASK, 1100, 10, SYNOR_GTC);
    b.expires = T + 100;
    ASSERT_OK(submit(&f, b));
    /* a bid requiring reputation 40 skips alice (20) and trades with bob (50) */
    synor_market_cmd bid = place(3, f.carol, f.gpu, SYNOR_BID, 1200, 5, SYNOR_IOC);
    bid.min_reputation = 40;
    size_t mark = f.log.n;
    ASSERT_OK(submit(&f, bid));
    long t = find_ev(&f, mark, SYNOR_EV_TRADE);
    ASSERT(t >= 0 && f.log.ev[t].maker_id == 2 && f.log.ev[t].price == 1100);
    /* bob's ask expires at its time */
    T += 200;
    mark = f.log.n;
    ASSERT_OK(submit(&f, place(4, f.dave, f.tpu, SYNOR_BID, 5, 1, SYNOR_GTC)));
    long e = find_ev(&f, mark, SYNOR_EV_EXPIRED);
    ASSERT(e >= 0 && f.log.ev[e].order_id == 2);
    synor_market_order o;
    ASSERT(synor_market_order_get(f.m, 2, &o) != 0);
    fx_close(&f);
}

TEST(constraints_of_resting_bids_and_durations)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    synor_market_cmd low = simple(SYNOR_CMD_REPUTATION, 0, f.alice, 0, 0);
    low.reputation = 10;
    ASSERT_OK(submit(&f, low));
    /* a resting bid that demands reputation 40 does not trade with alice (10)
     * arriving later, but does with bob (50) */
    synor_market_cmd bid = place(1, f.carol, f.gpu, SYNOR_BID, 1000, 5, SYNOR_GTC);
    bid.min_reputation = 40;
    ASSERT_OK(submit(&f, bid));
    size_t mark = f.log.n;
    ASSERT_OK(submit(&f, place(2, f.alice, f.gpu, SYNOR_ASK, 900, 5, SYNOR_GTC)));
    ASSERT(find_ev(&f, mark, SYNOR_EV_TRADE) < 0);
    mark = f.log.n;
    ASSERT_OK(submit(&f, place(3, f.bob, f.gpu, SYNOR_ASK, 950, 5, SYNOR_GTC)));
    long t = find_ev(&f, mark, SYNOR_EV_TRADE);
    ASSERT(t >= 0 && f.log.ev[t].maker_id == 1 && f.log.ev[t].price == 1000);
    /* a bid needing 1000 ns of capacity skips an ask available for 500 */
    synor_market_cmd shortask = place(4, f.bob, f.tpu, SYNOR_ASK, 100, 5, SYNOR_GTC);
    shortask.expires = T + 500;
    ASSERT_OK(submit(&f, shortask));
    ASSERT_OK(submit(&f, place(5, f.dave, f.tpu, SYNOR_ASK, 120, 5, SYNOR_GTC)));
    synor_market_cmd longbid = place(6, f.carol, f.tpu, SYNOR_BID, 200, 5, SYNOR_IOC);
    longbid.duration = 1000;
    mark = f.log.n;
    ASSERT_OK(submit(&f, longbid));
    t = find_ev(&f, mark, SYNOR_EV_TRADE);
    ASSERT(t >= 0 && f.log.ev[t].maker_id == 5 && f.log.ev[t].price == 120);

    /* zones: the region-set constraint */
    uint32_t fra, ams;
    ASSERT_OK(synor_market_zone(f.m, "fra1", &fra));
    ASSERT_OK(synor_market_zone(f.m, "ams1", &ams));
    ASSERT(fra == 1 && ams == 2);
    ASSERT_STREQ(synor_market_zone_name(f.m, ams), "ams1");
    synor_market_cmd za = place(10, f.bob, f.gpu, SYNOR_ASK, 100, 5, SYNOR_GTC);
    za.zone = (uint8_t)ams;
    ASSERT_OK(submit(&f, za));
    synor_market_cmd zf = place(11, f.dave, f.gpu, SYNOR_ASK, 110, 5, SYNOR_GTC);
    zf.zone = (uint8_t)fra;
    ASSERT_OK(submit(&f, zf));
    synor_market_cmd zb = place(12, f.carol, f.gpu, SYNOR_BID, 200, 3, SYNOR_IOC);
    zb.zones = 1ull << fra;
    mark = f.log.n;
    ASSERT_OK(submit(&f, zb));
    t = find_ev(&f, mark, SYNOR_EV_TRADE);
    ASSERT(t >= 0 && f.log.ev[t].maker_id == 11 && f.log.ev[t].price == 110);
    zb.order_id = 13;
    zb.zones = 1ull << 9; /* no zone 9 */
    zb.time = T += 10;
    mark = f.log.n;
    ASSERT_OK(submit(&f, zb));
    ASSERT(f.log.ev[mark].kind == SYNOR_EV_REJECTED && f.log.ev[mark].reason == SYNOR_REASON_BAD_FIELD);
    fx_close(&f);
}

TEST(bad_commands_change_nothing)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    ASSERT_OK(submit(&f, place(1, f.alice, f.gpu, SYNOR_ASK, 1000, 10, SYNOR_GTC)));
    synor_market_cmd bad[12];
    int reasons[12];
    int k = 0;
    bad[k] = place(9, f.bob, f.gpu, SYNOR_BID, 1000, 0, SYNOR_GTC);
    reasons[k++] = SYNOR_REASON_BAD_QUANTITY;
    bad[k] = place(9, f.bob, f.gpu, SYNOR_BID, 1000, -5, SYNOR_GTC);
    reasons[k++] = SYNOR_REASON_BAD_QUANTITY;
    bad[k] = place(9, f.bob, f.gpu, SYNOR_BID, -1, 5, SYNOR_GTC);
    reasons[k++] = SYNOR_REASON_BAD_PRICE;
    bad[k] = place(9, f.bob, f.gpu, SYNOR_BID, INT64_MAX, 5, SYNOR_GTC);
    reasons[k++] = SYNOR_REASON_BAD_PRICE;
    bad[k] = place(9, f.bob, 77, SYNOR_BID, 1000, 5, SYNOR_GTC);
    reasons[k++] = SYNOR_REASON_UNKNOWN_RESOURCE;
    bad[k] = place(1, f.bob, f.gpu, SYNOR_BID, 900, 5, SYNOR_GTC);
    reasons[k++] = SYNOR_REASON_DUPLICATE_ID;
    bad[k] = simple(SYNOR_CMD_CANCEL, 12345, f.alice, 0, 0);
    reasons[k++] = SYNOR_REASON_UNKNOWN_ORDER;
    bad[k] = simple(SYNOR_CMD_CANCEL, 1, f.bob, 0, 0);
    reasons[k++] = SYNOR_REASON_NOT_OWNER;
    bad[k] = simple(SYNOR_CMD_AMEND, 1, f.bob, 1000, 5);
    reasons[k++] = SYNOR_REASON_NOT_OWNER;
    bad[k] = simple(SYNOR_CMD_AMEND, 1, f.alice, 1000, 0);
    reasons[k++] = SYNOR_REASON_BAD_QUANTITY;
    bad[k] = place(9, 99, f.gpu, SYNOR_BID, 1000, 5, SYNOR_GTC);
    reasons[k++] = SYNOR_REASON_UNKNOWN_OWNER;
    bad[k] = place(9, f.bob, f.gpu, SYNOR_BID, 1000, 5, SYNOR_GTC);
    bad[k].time = 1; /* before the previous command */
    reasons[k++] = SYNOR_REASON_TIME_BACKWARDS;
    for (int i = 0; i < k; i++) {
        uint64_t h0 = synor_market_state_hash(f.m);
        synor_market_order before[4], after[4];
        size_t nb, na;
        synor_market_orders(f.m, f.gpu, SYNOR_ASK, before, 4, &nb);
        size_t mark = f.log.n;
        ASSERT_OK(synor_market_submit(f.m, &bad[i]));
        ASSERT_EQ(f.log.n, mark + 1);
        ASSERT_EQ(f.log.ev[mark].kind, SYNOR_EV_REJECTED);
        if (f.log.ev[mark].reason != reasons[i])
            TEST__FAIL("case %d: reason %s, expected %s", i,
                       synor_market_reason_name(f.log.ev[mark].reason),
                       synor_market_reason_name(reasons[i]));
        synor_market_orders(f.m, f.gpu, SYNOR_ASK, after, 4, &na);
        ASSERT(na == nb);
        for (size_t q = 0; q < nb; q++)
            ASSERT(before[q].id == after[q].id && before[q].qty == after[q].qty &&
                   before[q].price == after[q].price);
        ASSERT_EQ(synor_market_open_orders(f.m), 1);
        ASSERT(synor_market_state_hash(f.m) == h0);
    }
    ASSERT_STREQ(synor_market_reason_text(SYNOR_REASON_NOT_OWNER), "order belongs to another owner");
    /* registration errors */
    uint32_t idx;
    ASSERT_EQ(synor_market_resource(f.m, f.cat, "gpu/no-such-gpu/eu", &idx), SYNOR_ENOENT);
    ASSERT_EQ(synor_market_resource(f.m, f.cat, "tpu/nvidia-h100-sxm/eu", &idx), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "profile nvidia-h100-sxm is a gpu, not a tpu");
    ASSERT_EQ(synor_market_resource(f.m, f.cat, "gpu-nvidia", &idx), SYNOR_EINVAL);
    ASSERT_EQ(synor_market_owner(f.m, "has space", &idx), SYNOR_EINVAL);
    fx_close(&f);
}

static int ev_equal(const synor_market_event *a, const synor_market_event *b)
{
    return a->kind == b->kind && a->seq == b->seq && a->time == b->time &&
           a->order_id == b->order_id && a->owner == b->owner && a->resource == b->resource &&
           a->side == b->side && a->reason == b->reason && a->price == b->price &&
           a->qty == b->qty && a->remaining == b->remaining && a->maker_id == b->maker_id &&
           a->maker_owner == b->maker_owner && a->kept_priority == b->kept_priority;
}

/* Do the fast book's first n_res books equal the reference's, order by
 * order in priority order? */
static int books_equal(const synor_market *m, const ref_market *r, uint32_t n_res)
{
    static synor_market_order got[8000];
    static ref_order want[8000];
    for (uint32_t res = 0; res < n_res; res++)
        for (int s = 0; s < 2; s++) {
            size_t n;
            if (synor_market_orders(m, res, (synor_side)s, got, 8000, &n) ||
                n != ref_side(r, res, s, want))
                return 0;
            for (size_t k = 0; k < n; k++)
                if (got[k].id != want[k].id || got[k].qty != want[k].qty ||
                    got[k].price != want[k].price || got[k].owner != want[k].owner)
                    return 0;
        }
    return 1;
}

TEST(differential_against_reference_book)
{
    for (uint64_t seed = 1; seed <= 12; seed++) {
        fx f;
        ASSERT_OK(fx_open(&f, NULL));
        ref_market r;
        memset(&r, 0, sizeof r);
        r.n_owners = 4;
        r.n_res = 2;
        memset(r.rep, 50, sizeof r.rep);
        /* the fixture's registrations consumed sequence numbers */
        r.seq = synor_market_seq(f.m);
        r.last_time = 0;
        rng_state = seed * 0x9e3779b97f4a7c15ull;
        uint64_t next_id = 1;
        for (int i = 0; i < 4000; i++) {
            synor_market_cmd c = random_cmd(&next_id, 2, 4);
            ASSERT_OK(synor_market_submit(f.m, &c));
            ASSERT_OK(synor__market_invariants(f.m));
            ref_submit(&r, &c);
        }
        if (f.log.n != r.n_ev)
            TEST__FAIL("seed %llu: %zu events vs %zu in the reference", (unsigned long long)seed,
                       f.log.n, r.n_ev);
        for (size_t i = 0; i < r.n_ev; i++)
            if (!ev_equal(&f.log.ev[i], &r.ev[i]))
                TEST__FAIL("seed %llu: event %zu differs (kind %d/%d, order %llu/%llu)",
                           (unsigned long long)seed, i, f.log.ev[i].kind, r.ev[i].kind,
                           (unsigned long long)f.log.ev[i].order_id,
                           (unsigned long long)r.ev[i].order_id);
        /* the books, order by order in priority order */
        ASSERT(books_equal(f.m, &r, 2));
        ASSERT(f.log.n > 4000);
        free(r.o);
        free(r.used);
        free(r.ev);
        fx_close(&f);
    }
}

TEST(a_region_set_takes_the_best_asks_across_regions)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    uint32_t us, ap;
    ASSERT_OK(synor_market_resource(f.m, f.cat, "gpu/nvidia-h100-sxm/us-east", &us));
    ASSERT_OK(synor_market_resource(f.m, f.cat, "gpu/nvidia-h100-sxm/ap-south", &ap));
    submit(&f, place(1, f.alice, f.gpu, SYNOR_ASK, 105, 2, SYNOR_GTC)); /* eu-west */
    submit(&f, place(2, f.bob, us, SYNOR_ASK, 100, 2, SYNOR_GTC));
    submit(&f, place(3, f.carol, ap, SYNOR_ASK, 105, 2, SYNOR_GTC));
    submit(&f, place(4, f.carol, us, SYNOR_ASK, 110, 5, SYNOR_GTC));
    /* dave bids in eu-west, also us-east then ap-south, 7 units at 105:
     * 2 at 100 in us-east, then at 105 his own book before ap-south, and
     * 1 unit rests in eu-west (110 is above his price) */
    synor_market_cmd b = place(5, f.dave, f.gpu, SYNOR_BID, 105, 7, SYNOR_GTC);
    b.n_also = 2;
    b.also[0] = ap; /* at one price: eu-west, then ap-south, then us-east */
    b.also[1] = us;
    size_t from = f.log.n;
    submit(&f, b);
    uint32_t want_res[3] = {us, f.gpu, ap};
    uint64_t want_maker[3] = {2, 1, 3};
    size_t t = 0;
    for (size_t i = from; i < f.log.n; i++)
        if (f.log.ev[i].kind == SYNOR_EV_TRADE) {
            ASSERT(t < 3);
            ASSERT_EQ(f.log.ev[i].resource, want_res[t]);
            ASSERT_EQ(f.log.ev[i].maker_id, want_maker[t]);
            ASSERT_EQ(f.log.ev[i].qty, 2);
            t++;
        }
    ASSERT_EQ(t, 3);
    synor_market_order o;
    ASSERT_OK(synor_market_order_get(f.m, 5, &o));
    ASSERT_EQ(o.resource, f.gpu);
    ASSERT_EQ(o.qty, 1);
    /* FOK counts every book of the set: from ap-south, with us-east, 5
     * units are there at 110 (carol's, in us-east): 7 cannot fill, 5 can */
    synor_market_cmd k = place(6, f.alice, ap, SYNOR_BID, 110, 7, SYNOR_FOK);
    k.n_also = 1;
    k.also[0] = us;
    from = f.log.n;
    submit(&f, k);
    ASSERT(find_ev_kind_reason(&f, from, SYNOR_EV_CANCELLED, SYNOR_REASON_FOK_UNFILLABLE) >= 0);
    k.order_id = 7;
    k.qty = 5;
    from = f.log.n;
    submit(&f, k);
    ASSERT(find_ev_kind_reason(&f, from, SYNOR_EV_CANCELLED, SYNOR_REASON_FOK_UNFILLABLE) < 0);
    /* refused: an ask with a set, another profile, the bid's own book, a
     * repeat, an unknown resource, more than three */
    synor_market_cmd bad[6];
    for (int i = 0; i < 6; i++) {
        bad[i] = place(10 + (uint64_t)i, f.bob, f.gpu, SYNOR_BID, 100, 1, SYNOR_GTC);
        bad[i].n_also = 1;
        bad[i].also[0] = us;
    }
    bad[0].side = SYNOR_ASK;
    bad[1].also[0] = f.tpu;
    bad[2].also[0] = f.gpu;
    bad[3].n_also = 2;
    bad[3].also[1] = us;
    bad[4].also[0] = 99;
    bad[5].n_also = 4;
    for (int i = 0; i < 6; i++) {
        from = f.log.n;
        submit(&f, bad[i]);
        ASSERT_EQ(f.log.n, from + 1);
        ASSERT_EQ(f.log.ev[from].kind, SYNOR_EV_REJECTED);
        ASSERT_EQ(f.log.ev[from].reason, SYNOR_REASON_BAD_FIELD);
        ASSERT(synor_market_order_get(f.m, bad[i].order_id, &o) < 0); /* nothing rests */
    }
    size_t n;
    synor_market_order all[8];
    ASSERT_OK(synor_market_orders(f.m, us, SYNOR_ASK, all, 8, &n));
    ASSERT_EQ(n, 0); /* carol's 5 at 110 went to order 7 */
    fx_close(&f);
}

/* Bids with region sets (cmd.also), fast book against the reference, on
 * three regions of one GPU and a TPU book (also-lists naming the TPU, the
 * bid's own book, a repeat or an ask are refused); then the same stream
 * through the journal, replayed to the same state. */
static synor_market_cmd random_cmd_also(uint64_t *next_id)
{
    synor_market_cmd c = random_cmd(next_id, 4, 4);
    if (c.kind == SYNOR_CMD_PLACE && rnd() % 3 == 0) {
        /* mostly the other H100 regions; now and then the bid's own book,
         * the TPU, an unknown resource, a repeat, or a fourth entry */
        static const uint32_t h100[3] = {0, 2, 3};
        c.n_also = (uint8_t)(1 + rnd() % (rnd() % 40 == 0 ? 4 : 2));
        uint32_t start = (uint32_t)(rnd() % 3);
        for (unsigned k = 0; k < c.n_also && k < 3; k++)
            c.also[k] = rnd() % 10 == 0 ? (uint32_t)(rnd() % 5) : h100[(start + k) % 3];
        if (c.resource != 1 && rnd() % 2 == 0)
            c.resource = h100[rnd() % 3];
    }
    return c;
}

TEST(region_sets_against_reference_book_and_journal)
{
    char dir[] = "/tmp/synor-also-XXXXXX";
    ASSERT(mkdtemp(dir));
    uint64_t hashes[2] = {0};
    for (uint64_t seed = 1; seed <= 8; seed++) {
        fx f, fj;
        ASSERT_OK(fx_open(&f, NULL));
        char sub[64];
        snprintf(sub, sizeof sub, "%s/%llu", dir, (unsigned long long)seed);
        ASSERT_OK(fx_open(&fj, sub));
        uint32_t us, ap;
        fx *both[2] = {&f, &fj};
        for (int k = 0; k < 2; k++) {
            ASSERT_OK(synor_market_resource(both[k]->m, both[k]->cat, "gpu/nvidia-h100-sxm/us-east", &us));
            ASSERT_OK(synor_market_resource(both[k]->m, both[k]->cat, "gpu/nvidia-h100-sxm/ap-south", &ap));
        }
        ASSERT_EQ(us, 2);
        ASSERT_EQ(ap, 3);
        ref_market r;
        memset(&r, 0, sizeof r);
        r.n_owners = 4;
        r.n_res = 4;
        r.offer[1] = 1; /* the TPU; 0, 2, 3 are the H100 in three regions */
        memset(r.rep, 50, sizeof r.rep);
        r.seq = synor_market_seq(f.m);
        rng_state = seed * 0x2545f4914f6cdd1dull;
        uint64_t next_id = 1;
        size_t swept = 0;
        for (int i = 0; i < 4000; i++) {
            synor_market_cmd c = random_cmd_also(&next_id);
            ASSERT_OK(synor_market_submit(f.m, &c));
            ASSERT_OK(synor_market_submit(fj.m, &c));
            ASSERT_OK(synor_market_commit(fj.m));
            ASSERT_OK(synor__market_invariants(f.m));
            ref_submit(&r, &c);
        }
        if (f.log.n != r.n_ev)
            TEST__FAIL("seed %llu: %zu events vs %zu in the reference", (unsigned long long)seed,
                       f.log.n, r.n_ev);
        for (size_t i = 0; i < r.n_ev; i++) {
            if (!ev_equal(&f.log.ev[i], &r.ev[i]))
                TEST__FAIL("seed %llu: event %zu differs (kind %d/%d, order %llu/%llu)",
                           (unsigned long long)seed, i, f.log.ev[i].kind, r.ev[i].kind,
                           (unsigned long long)f.log.ev[i].order_id,
                           (unsigned long long)r.ev[i].order_id);
            /* a trade in another book than the taker's own: a sweep */
            if (r.ev[i].kind == SYNOR_EV_TRADE && r.ev[i].side == SYNOR_BID) {
                long o = -1;
                for (size_t j = i; j-- > 0 && o < 0;)
                    if (r.ev[j].kind == SYNOR_EV_ACCEPTED && r.ev[j].order_id == r.ev[i].order_id)
                        o = (long)j;
                swept += o >= 0 && r.ev[o].resource != r.ev[i].resource;
            }
        }
        ASSERT(books_equal(f.m, &r, 4));
        if (swept < 10) /* the case really crosses books (20-40 per seed) */
            TEST__FAIL("seed %llu: only %zu trades in another region", (unsigned long long)seed,
                       swept);
        /* the journal: the same state, and again after a replay */
        hashes[0] = synor_market_state_hash(f.m);
        ASSERT_EQ(synor_market_state_hash(fj.m), hashes[0]);
        synor_market_close(fj.m);
        synor_market_config cfg;
        synor_market_config_init(&cfg);
        cfg.dir = sub;
        ASSERT_OK(synor_market_open(&cfg, &fj.m));
        hashes[1] = synor_market_state_hash(fj.m);
        ASSERT_EQ(hashes[1], hashes[0]);
        free(r.o);
        free(r.used);
        free(r.ev);
        fx_close(&f);
        fx_close(&fj);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
}

TEST(price_discovery)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    ASSERT_OK(submit(&f, place(1, f.alice, f.gpu, SYNOR_ASK, 2100, 5, SYNOR_GTC)));
    ASSERT_OK(submit(&f, place(2, f.alice, f.gpu, SYNOR_ASK, 2200, 7, SYNOR_GTC)));
    ASSERT_OK(submit(&f, place(3, f.bob, f.gpu, SYNOR_BID, 1900, 3, SYNOR_GTC)));
    ASSERT_OK(submit(&f, place(4, f.carol, f.gpu, SYNOR_BID, 1900, 4, SYNOR_GTC)));
    synor_level b[4], a[4];
    size_t nb, na;
    ASSERT_OK(synor_market_depth(f.m, f.gpu, b, &nb, a, &na, 4));
    ASSERT(nb == 1 && b[0].price == 1900 && b[0].qty == 7 && b[0].orders == 2);
    ASSERT(na == 2 && a[0].price == 2100 && a[1].price == 2200);
    synor_market_prices p;
    ASSERT_OK(synor_market_prices_get(f.m, f.gpu, &p));
    ASSERT_EQ(p.spread, 200);
    ASSERT(!p.has_last);
    /* trades in two candle intervals */
    T = 60ull * 1000000000ull * 10;
    ASSERT_OK(submit(&f, place(5, f.dave, f.gpu, SYNOR_BID, 2100, 2, SYNOR_IOC)));
    T += 60ull * 1000000000ull;
    ASSERT_OK(submit(&f, place(6, f.dave, f.gpu, SYNOR_BID, 2200, 6, SYNOR_IOC)));
    synor_candle k[8];
    size_t nk;
    ASSERT_OK(synor_market_candles(f.m, f.gpu, k, 8, &nk));
    ASSERT_EQ(nk, 2);
    ASSERT(k[0].open == 2100 && k[0].volume == 2);
    ASSERT(k[1].open == 2100 && k[1].high == 2200 && k[1].close == 2200 && k[1].volume == 6);
    ASSERT_OK(synor_market_prices_get(f.m, f.gpu, &p));
    ASSERT_EQ(p.volume_24h, 8);
    ASSERT_EQ(p.vwap_24h, (2100 * 5 + 2200 * 3 + 4) / 8);
    /* more than a day later the 24 h window is empty */
    T += 25ull * 3600 * 1000000000ull;
    ASSERT_OK(submit(&f, place(7, f.dave, f.tpu, SYNOR_BID, 1, 1, SYNOR_GTC)));
    ASSERT_OK(synor_market_prices_get(f.m, f.gpu, &p));
    ASSERT_EQ(p.volume_24h, 0);
    ASSERT_EQ(p.volume_total, 8);
    fx_close(&f);
}

TEST(preemptible_capacity)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    size_t mark = f.log.n;
    preemption_scenario(&f);
    long l = find_ev(&f, mark, SYNOR_EV_LEASED);
    ASSERT(l >= 0);
    ASSERT_EQ(f.log.ev[l].owner, f.bob);
    ASSERT_EQ(f.log.ev[l].maker_owner, f.alice);
    ASSERT_EQ(f.log.ev[l].qty, 10);
    uint64_t bob_lease = f.log.ev[l].order_id;
    long p = find_ev_kind_reason(&f, mark, SYNOR_EV_PREEMPTED, SYNOR_REASON_OUTBID);
    ASSERT(p > l);
    ASSERT_EQ(f.log.ev[p].order_id, bob_lease);
    uint64_t deadline = f.log.ev[p].deadline;
    ASSERT_EQ(deadline, f.log.ev[p].time + 120ull * 1000000000ull);
    /* nothing to migrate to: no MIGRATED; carol's trade is at her price */
    ASSERT(find_ev(&f, mark, SYNOR_EV_MIGRATED) < 0);
    long t = find_ev_kind_reason(&f, (size_t)p, SYNOR_EV_TRADE, SYNOR_REASON_OUTBID);
    ASSERT(t > p && f.log.ev[t].owner == f.carol && f.log.ev[t].price == 150 &&
           f.log.ev[t].qty == 4 && f.log.ev[t].maker_owner == f.alice && f.log.ev[t].maker_id == 0);
    long cl = find_ev(&f, (size_t)t, SYNOR_EV_LEASED);
    ASSERT(cl > t && f.log.ev[cl].owner == f.carol);
    uint64_t carol_lease = f.log.ev[cl].order_id;
    ASSERT_EQ(synor_market_open_orders(f.m), 0); /* carol filled, nothing rests */

    /* only the 4 units carol needed were preempted: bob's other 6 run on */
    ASSERT_EQ(f.log.ev[p].qty, 4);
    ASSERT_EQ(f.log.ev[p].remaining, 6);
    synor_market_lease ls[16];
    size_t nl;
    ASSERT_OK(synor_market_leases(f.m, ls, 16, &nl));
    ASSERT_EQ(nl, 3); /* bob 6 running, bob 4 warned, carol 4 */
    ASSERT(ls[0].id == bob_lease && ls[0].qty == 6 && ls[0].deadline == 0);
    ASSERT(ls[1].id == bob_lease && ls[1].qty == 4 && ls[1].deadline == deadline);
    ASSERT(ls[2].id == carol_lease && ls[2].holder == f.carol && ls[2].end == 0);

    /* on-demand (priority 255) beats any price: it takes the lowest-ranked
     * lease first - bob's running units at 100, not carol's at 150 */
    mark = f.log.n;
    synor_market_cmd od = place(4, f.dave, f.gpu, SYNOR_BID, 50, 4, SYNOR_IOC);
    od.priority = 255;
    ASSERT_OK(submit(&f, od));
    p = find_ev_kind_reason(&f, mark, SYNOR_EV_PREEMPTED, SYNOR_REASON_ON_DEMAND);
    ASSERT(p >= 0 && f.log.ev[p].order_id == bob_lease && f.log.ev[p].qty == 4 &&
           f.log.ev[p].remaining == 2);
    /* a second on-demand bid now passes bob's last 2 units and reaches carol */
    mark = f.log.n;
    synor_market_cmd od2 = place(9, f.dave, f.gpu, SYNOR_BID, 50, 3, SYNOR_IOC);
    od2.priority = 255;
    ASSERT_OK(submit(&f, od2));
    p = find_ev_kind_reason(&f, mark, SYNOR_EV_PREEMPTED, SYNOR_REASON_ON_DEMAND);
    ASSERT(p >= 0 && f.log.ev[p].order_id == bob_lease && f.log.ev[p].qty == 2);
    long p2 = find_ev_kind_reason(&f, (size_t)p + 1, SYNOR_EV_PREEMPTED, SYNOR_REASON_ON_DEMAND);
    ASSERT(p2 > p && f.log.ev[p2].order_id == carol_lease && f.log.ev[p2].qty == 1 &&
           f.log.ev[p2].remaining == 3);

    /* the deadlines pass: the warned units of bob (three parts) and carol end */
    T = deadline + 1000000000ull * 200;
    mark = f.log.n;
    ASSERT_OK(submit(&f, place(5, f.bob, f.tpu, SYNOR_BID, 1, 1, SYNOR_GTC)));
    size_t ended = 0;
    for (size_t i = mark; i < f.log.n; i++)
        ended += f.log.ev[i].kind == SYNOR_EV_LEASE_ENDED &&
                 f.log.ev[i].reason == SYNOR_REASON_PREEMPTION_DEADLINE;
    ASSERT_EQ(ended, 4);

    /* reclaim with replacement capacity available: the holder migrates */
    synor_market_cmd a2 = place(6, f.alice, f.gpu, SYNOR_ASK, 100, 3, SYNOR_GTC);
    a2.interruptible = 1;
    ASSERT_OK(submit(&f, a2));
    ASSERT_OK(submit(&f, place(7, f.bob, f.gpu, SYNOR_BID, 100, 3, SYNOR_GTC)));
    ASSERT_OK(submit(&f, place(8, f.carol, f.gpu, SYNOR_ASK, 90, 5, SYNOR_GTC)));
    mark = f.log.n;
    synor_market_cmd rc = simple(SYNOR_CMD_RECLAIM, 0, f.alice, 0, 3);
    rc.resource = f.gpu;
    ASSERT_OK(submit(&f, rc));
    p = find_ev_kind_reason(&f, mark, SYNOR_EV_PREEMPTED, SYNOR_REASON_RECLAIMED);
    ASSERT(p >= 0 && f.log.ev[p].owner == f.bob && f.log.ev[p].qty == 3);
    t = find_ev(&f, (size_t)p, SYNOR_EV_TRADE);
    ASSERT(t > p && f.log.ev[t].maker_id == 8 && f.log.ev[t].price == 90 && f.log.ev[t].qty == 3);
    ASSERT(find_ev(&f, (size_t)t, SYNOR_EV_MIGRATED) > t);
    /* a reclaim by someone with no leases is rejected, changing nothing */
    mark = f.log.n;
    uint64_t h = synor_market_state_hash(f.m);
    synor_market_cmd none = simple(SYNOR_CMD_RECLAIM, 0, f.dave, 0, 3);
    none.resource = f.gpu;
    ASSERT_OK(submit(&f, none));
    ASSERT_EQ(f.log.n, mark + 1);
    ASSERT_EQ(f.log.ev[mark].reason, SYNOR_REASON_NOTHING_LEASED);
    ASSERT(synor_market_state_hash(f.m) == h);
    fx_close(&f);
}

/* A lease's term: the bid's duration, cut at the provider's availability;
 * and the bid constraints apply to leased capacity as to asks. */
TEST(lease_terms_and_constraints)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    synor_market_cmd a = place(1, f.alice, f.gpu, SYNOR_ASK, 100, 5, SYNOR_GTC);
    a.interruptible = 1;
    a.expires = a.time + 10000; /* available until */
    uint64_t avail = a.expires;
    ASSERT_OK(submit(&f, a));
    size_t mark = f.log.n;
    synor_market_cmd b = place(2, f.bob, f.gpu, SYNOR_BID, 100, 2, SYNOR_GTC);
    b.duration = 500;
    ASSERT_OK(submit(&f, b));
    long l = find_ev(&f, mark, SYNOR_EV_LEASED);
    ASSERT(l >= 0 && f.log.ev[l].owner == f.bob && f.log.ev[l].deadline == b.time + 500);
    uint64_t bob_lease = f.log.ev[l].order_id;
    mark = f.log.n;
    ASSERT_OK(submit(&f, place(3, f.carol, f.gpu, SYNOR_BID, 100, 3, SYNOR_GTC)));
    l = find_ev(&f, mark, SYNOR_EV_LEASED);
    ASSERT(l >= 0 && f.log.ev[l].owner == f.carol && f.log.ev[l].deadline == avail);
    ASSERT_EQ(synor_market_lease_count(f.m), 2);

    /* bob's term runs out: his lease ends normally */
    T = b.time + 600;
    mark = f.log.n;
    ASSERT_OK(submit(&f, place(4, f.dave, f.tpu, SYNOR_BID, 1, 1, SYNOR_GTC)));
    long e = find_ev_kind_reason(&f, mark, SYNOR_EV_LEASE_ENDED, SYNOR_REASON_LEASE_TERM);
    ASSERT(e >= 0 && f.log.ev[e].order_id == bob_lease && f.log.ev[e].qty == 2 &&
           f.log.ev[e].remaining == 0 && f.log.ev[e].deadline == b.time + 500);
    ASSERT_EQ(synor_market_lease_count(f.m), 1);

    /* higher bids whose constraints carol's capacity fails preempt nothing */
    synor_market_cmd hi = place(5, f.dave, f.gpu, SYNOR_BID, 200, 1, SYNOR_IOC);
    hi.min_reputation = 80; /* alice is at 50 */
    mark = f.log.n;
    ASSERT_OK(submit(&f, hi));
    hi = place(6, f.dave, f.gpu, SYNOR_BID, 200, 1, SYNOR_IOC);
    hi.duration = 20000; /* longer than alice's capacity lasts */
    ASSERT_OK(submit(&f, hi));
    uint32_t fra;
    ASSERT_OK(synor_market_zone(f.m, "fra1", &fra));
    hi = place(7, f.dave, f.gpu, SYNOR_BID, 200, 1, SYNOR_IOC);
    hi.zones = 1ull << fra; /* alice's ask named no zone */
    ASSERT_OK(submit(&f, hi));
    ASSERT(find_ev(&f, mark, SYNOR_EV_PREEMPTED) < 0);
    ASSERT(find_ev(&f, mark, SYNOR_EV_TRADE) < 0);
    /* without them it does, and dave's lease keeps alice's availability */
    mark = f.log.n;
    hi = place(8, f.dave, f.gpu, SYNOR_BID, 200, 1, SYNOR_IOC);
    ASSERT_OK(submit(&f, hi));
    long p = find_ev_kind_reason(&f, mark, SYNOR_EV_PREEMPTED, SYNOR_REASON_OUTBID);
    ASSERT(p >= 0 && f.log.ev[p].owner == f.carol && f.log.ev[p].qty == 1 &&
           f.log.ev[p].remaining == 2);
    l = find_ev(&f, (size_t)p, SYNOR_EV_LEASED);
    ASSERT(l > p && f.log.ev[l].owner == f.dave && f.log.ev[l].deadline == avail);

    /* alice's availability ends: the running leases end with their term */
    T = avail + 1;
    mark = f.log.n;
    ASSERT_OK(submit(&f, simple(SYNOR_CMD_CANCEL, 4, f.dave, 0, 0)));
    size_t term = 0;
    for (size_t i = mark; i < f.log.n; i++)
        term += f.log.ev[i].kind == SYNOR_EV_LEASE_ENDED &&
                f.log.ev[i].reason == SYNOR_REASON_LEASE_TERM;
    /* carol's 2 running units, dave's 1, and carol's warned unit: its term
     * ends before the warning period would */
    ASSERT_EQ(term, 3);
    ASSERT_EQ(synor_market_lease_count(f.m), 0);
    fx_close(&f);
}

TEST_MAIN(a_region_set_takes_the_best_asks_across_regions,
          region_sets_against_reference_book_and_journal, preemptible_capacity, lease_terms_and_constraints, price_time_priority_and_partial_fills, ioc_fok_market_orders,
          self_trade_prevention_cancels_the_resting_order, amend_keeps_or_loses_priority,
          expiry_and_reputation_constraints, constraints_of_resting_bids_and_durations,
          bad_commands_change_nothing,
          differential_against_reference_book, price_discovery)
