/* test_market_rules.c - the market's promises at their edges: the invariant
 * checker, random streams with leases, rejected commands that change
 * nothing, self-trade prevention and eligibility, ids never reused, limits
 * of prices, quantities and sums. Matching rules: test_market.c. */
#include <sys/stat.h>
#include <unistd.h>

#include "market_fixture.h"

static char *tmpdir(void)
{
    static char d[64];
    strcpy(d, "/tmp/synor-rules-XXXXXX");
    return mkdtemp(d);
}

static void rm_rf(const char *dir)
{
    char p[512];
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    if (system(p) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* The checker really checks: a level whose count is off, an order whose
 * quantity is out of range, an expiring order missing from the heap. */
TEST(invariants_catch_a_broken_book)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    synor_market_cmd a = place(1, f.alice, f.gpu, SYNOR_ASK, 1000, 10, SYNOR_GTC);
    a.expires = T + 1000;
    ASSERT_OK(submit(&f, a));
    ASSERT_OK(submit(&f, place(2, f.bob, f.gpu, SYNOR_BID, 900, 5, SYNOR_GTC)));
    ASSERT_OK(synor__market_invariants(f.m));
    mlevel *L = &f.m->books[f.gpu].side[SYNOR_ASK].v[0];
    L->count++;
    ASSERT_EQ(synor__market_invariants(f.m), SYNOR_ESTATE);
    ASSERT_CONTAINS(synor_errmsg(), "counts 2 orders, links 1");
    L->count--;
    morder *o = &f.m->pool[L->head];
    o->qty = -o->qty;
    ASSERT_EQ(synor__market_invariants(f.m), SYNOR_ESTATE);
    o->qty = -o->qty;
    uint32_t heap_n = f.m->heap_n;
    f.m->heap_n = 0;
    ASSERT_EQ(synor__market_invariants(f.m), SYNOR_ESTATE);
    ASSERT_CONTAINS(synor_errmsg(), "not in the expiry heap");
    f.m->heap_n = heap_n;
    ASSERT_OK(synor__market_invariants(f.m));
    fx_close(&f);
}

/* Random commands with interruptible asks, on-demand bids and reclaims:
 * the invariants hold after every command, and the journal replays to the
 * same state. */
static synor_market_cmd random_lease_cmd(uint64_t *next_id)
{
    synor_market_cmd c = random_cmd(next_id, 2, 4);
    if (c.kind == SYNOR_CMD_PLACE && c.side == SYNOR_ASK && rnd() % 3 == 0)
        c.interruptible = 1;
    if (c.kind == SYNOR_CMD_PLACE && c.side == SYNOR_BID && rnd() % 10 == 0)
        c.priority = rnd() % 4 == 0 ? 255 : (uint8_t)(rnd() % 5);
    if (c.kind == SYNOR_CMD_REPUTATION && rnd() % 2 == 0) {
        memset(&c, 0, sizeof c);
        c.kind = SYNOR_CMD_RECLAIM;
        c.time = T += 1 + rnd() % 20;
        c.owner = (uint32_t)(rnd() % 4);
        c.resource = (uint32_t)(rnd() % 2);
        c.qty = 1 + (int64_t)(rnd() % 10);
    }
    return c;
}

TEST(random_streams_with_leases_keep_the_invariants)
{
    char *dir = tmpdir();
    ASSERT(dir);
    for (uint64_t seed = 1; seed <= 4; seed++) {
        char sub[128];
        snprintf(sub, sizeof sub, "%s/%llu", dir, (unsigned long long)seed);
        fx f;
        T = 1000;
        ASSERT_OK(fx_open(&f, sub));
        rng_state = seed * 0x9e3779b97f4a7c15ull;
        uint64_t next_id = 1;
        size_t leases = 0;
        for (int i = 0; i < 3000; i++) {
            synor_market_cmd c = random_lease_cmd(&next_id);
            ASSERT_OK(synor_market_submit(f.m, &c));
            if (synor__market_invariants(f.m))
                TEST__FAIL("seed %llu, command %d: %s", (unsigned long long)seed, i,
                           synor_errmsg());
            leases += synor_market_lease_count(f.m) > 0;
            if (i % 50 == 49)
                ASSERT_OK(synor_market_commit(f.m));
        }
        ASSERT(leases > 100); /* the stream really leases */
        ASSERT_OK(synor_market_commit(f.m));
        uint64_t h = synor_market_state_hash(f.m);
        fx_close(&f);
        ASSERT_OK(fx_open(&f, sub));
        ASSERT(synor_market_state_hash(f.m) == h);
        ASSERT_OK(synor__market_invariants(f.m));
        fx_close(&f);
    }
    rm_rf(dir);
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Issue 10, item 2: every rejected command - a bad price or quantity, an
 * unknown order, a reputation above 100, a reclaim with nothing leased, a
 * time running backwards - produces one REJECTED event (with no sequence
 * number) and changes nothing: not the state hash, not the sequence, not
 * the market's time (so nothing expires), not the journal. */
TEST(a_rejected_command_changes_nothing)
{
    char *dir = tmpdir();
    ASSERT(dir);
    char journal[256];
    snprintf(journal, sizeof journal, "%s/journal.log", dir);
    fx f;
    T = 1000;
    ASSERT_OK(fx_open(&f, dir));
    synor_market_cmd a = place(1, f.alice, f.gpu, SYNOR_ASK, 1000, 10, SYNOR_GTC);
    a.expires = a.time + 50; /* before the time of the rejected commands */
    ASSERT_OK(submit(&f, a));
    ASSERT_OK(submit(&f, place(2, f.bob, f.gpu, SYNOR_BID, 900, 5, SYNOR_GTC)));
    synor_market_cmd i = place(3, f.carol, f.tpu, SYNOR_ASK, 100, 5, SYNOR_GTC);
    i.interruptible = 1;
    ASSERT_OK(submit(&f, i));
    ASSERT_OK(submit(&f, place(4, f.dave, f.tpu, SYNOR_BID, 100, 2, SYNOR_GTC))); /* a lease */
    ASSERT_OK(synor_market_commit(f.m));
    ASSERT_EQ(synor_market_lease_count(f.m), 1);
    uint64_t t0 = T;
    synor_market_cmd bad[16];
    int reasons[16], k = 0;
    bad[k] = place(9, f.bob, f.gpu, SYNOR_BID, 0, 5, SYNOR_GTC); /* --price 0 */
    bad[k].type = SYNOR_LIMIT;
    reasons[k++] = SYNOR_REASON_BAD_PRICE;
    bad[k] = place(9, f.bob, f.gpu, SYNOR_BID, 1000, 0, SYNOR_GTC);
    reasons[k++] = SYNOR_REASON_BAD_QUANTITY;
    bad[k] = simple(SYNOR_CMD_CANCEL, 12345, f.alice, 0, 0);
    reasons[k++] = SYNOR_REASON_UNKNOWN_ORDER;
    bad[k] = simple(SYNOR_CMD_REPUTATION, 0, f.alice, 0, 0);
    bad[k].reputation = 101;
    reasons[k++] = SYNOR_REASON_BAD_FIELD;
    bad[k] = simple(SYNOR_CMD_RECLAIM, 0, f.alice, 0, 3); /* alice leases nothing */
    bad[k].resource = f.gpu;
    reasons[k++] = SYNOR_REASON_NOTHING_LEASED;
    bad[k] = simple(SYNOR_CMD_RECLAIM, 0, f.carol, 0, 3); /* carol leases on the TPU only */
    bad[k].resource = f.gpu;
    reasons[k++] = SYNOR_REASON_NOTHING_LEASED;
    bad[k] = place(9, f.bob, f.gpu, SYNOR_BID, 1000, 5, SYNOR_GTC);
    bad[k].time = 1;
    reasons[k++] = SYNOR_REASON_TIME_BACKWARDS;
    bad[k] = simple(SYNOR_CMD_AMEND, 2, f.bob, 900, SYNOR__MAX_QTY + 1);
    reasons[k++] = SYNOR_REASON_BAD_QUANTITY;
    bad[k] = simple(SYNOR_CMD_CANCEL, 2, f.alice, 0, 0);
    reasons[k++] = SYNOR_REASON_NOT_OWNER;
    bad[k] = place(9, f.bob, f.gpu, SYNOR_BID, 1000, 5, SYNOR_GTC);
    bad[k].expires = bad[k].time;
    reasons[k++] = SYNOR_REASON_BAD_EXPIRY;
    for (int n = 0; n < k; n++) {
        if (bad[n].time != 1)
            bad[n].time = t0 + 100; /* after alice's expiry: a rejection must not expire it */
        uint64_t h = synor_market_state_hash(f.m), seq = synor_market_seq(f.m);
        uint64_t now = synor_market_time(f.m);
        off_t size = file_size(journal);
        size_t mark = f.log.n;
        ASSERT_OK(synor_market_submit(f.m, &bad[n]));
        ASSERT_OK(synor_market_commit(f.m));
        if (f.log.n != mark + 1 || f.log.ev[mark].kind != SYNOR_EV_REJECTED)
            TEST__FAIL("case %d: %zu events, the first of kind %d", n, f.log.n - mark,
                       f.log.n > mark ? (int)f.log.ev[mark].kind : -1);
        if (f.log.ev[mark].reason != reasons[n])
            TEST__FAIL("case %d: reason %s, expected %s", n,
                       synor_market_reason_name(f.log.ev[mark].reason),
                       synor_market_reason_name(reasons[n]));
        ASSERT_EQ(f.log.ev[mark].seq, 0);
        if (synor_market_state_hash(f.m) != h || synor_market_seq(f.m) != seq ||
            synor_market_time(f.m) != now || file_size(journal) != size)
            TEST__FAIL("case %d (%s) changed the market: seq %llu -> %llu, time %llu -> %llu, "
                       "journal %lld -> %lld bytes",
                       n, synor_market_reason_name(reasons[n]), (unsigned long long)seq,
                       (unsigned long long)synor_market_seq(f.m), (unsigned long long)now,
                       (unsigned long long)synor_market_time(f.m), (long long)size,
                       (long long)file_size(journal));
    }
    synor_market_order o;
    ASSERT_OK(synor_market_order_get(f.m, 1, &o)); /* not expired by a rejection */
    /* an accepted command at the same time does expire it */
    ASSERT_OK(submit(&f, simple(SYNOR_CMD_CANCEL, 2, f.bob, 0, 0)));
    ASSERT(synor_market_order_get(f.m, 1, &o) < 0);
    ASSERT_OK(synor_market_commit(f.m));
    uint64_t h = synor_market_state_hash(f.m);
    fx_close(&f);
    ASSERT_OK(fx_open(&f, dir));
    ASSERT(synor_market_state_hash(f.m) == h);
    fx_close(&f);
    rm_rf(dir);
}

/* Issue 10, item 3: self-trade prevention cancels only a resting order the
 * incoming one could have traded with. An order that a bid's constraints
 * (minimum reputation, zone set, duration) make ineligible is skipped and
 * stays, whichever of the two rests. */
TEST(self_trade_prevention_respects_eligibility)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    synor_market_cmd rep = simple(SYNOR_CMD_REPUTATION, 0, f.alice, 0, 0);
    rep.reputation = 20;
    ASSERT_OK(submit(&f, rep));
    uint32_t fra, ams;
    ASSERT_OK(synor_market_zone(f.m, "fra1", &fra));
    ASSERT_OK(synor_market_zone(f.m, "ams1", &ams));
    ASSERT_OK(submit(&f, place(1, f.alice, f.gpu, SYNOR_ASK, 100, 5, SYNOR_GTC)));
    synor_market_cmd za = place(2, f.alice, f.gpu, SYNOR_ASK, 101, 5, SYNOR_GTC);
    za.zone = (uint8_t)ams;
    ASSERT_OK(submit(&f, za));
    synor_market_cmd zb = place(3, f.bob, f.gpu, SYNOR_ASK, 105, 20, SYNOR_GTC);
    zb.zone = (uint8_t)fra;
    ASSERT_OK(submit(&f, zb));
    /* alice's bids that may not take her own asks: reputation 40 (she has
     * 20), then zone fra1 only (her ask 2 is in ams1, ask 1 names none);
     * each trades with bob, and alice's asks stay */
    synor_market_cmd b = place(10, f.alice, f.gpu, SYNOR_BID, 110, 3, SYNOR_IOC);
    b.min_reputation = 40;
    synor_market_cmd z = place(11, f.alice, f.gpu, SYNOR_BID, 110, 3, SYNOR_IOC);
    z.zones = 1ull << fra;
    synor_market_cmd both[2] = {b, z};
    for (int i = 0; i < 2; i++) {
        size_t mark = f.log.n;
        ASSERT_OK(submit(&f, both[i]));
        if (find_ev_kind_reason(&f, mark, SYNOR_EV_CANCELLED, SYNOR_REASON_SELF_TRADE) >= 0)
            TEST__FAIL("bid %d cancelled alice's ask it could not trade with", i);
        long t = find_ev(&f, mark, SYNOR_EV_TRADE);
        ASSERT(t >= 0 && f.log.ev[t].maker_id == 3 && f.log.ev[t].qty == 3);
    }
    synor_market_order o;
    ASSERT_OK(synor_market_order_get(f.m, 1, &o));
    ASSERT_OK(synor_market_order_get(f.m, 2, &o));
    /* a duration longer than alice's availability: her short ask stays */
    synor_market_cmd sa = place(4, f.alice, f.tpu, SYNOR_ASK, 100, 5, SYNOR_GTC);
    sa.expires = sa.time + 100;
    ASSERT_OK(submit(&f, sa));
    synor_market_cmd db = place(12, f.alice, f.tpu, SYNOR_BID, 110, 2, SYNOR_GTC);
    db.duration = 1000;
    size_t mark = f.log.n;
    ASSERT_OK(submit(&f, db));
    ASSERT(find_ev(&f, mark, SYNOR_EV_CANCELLED) < 0);
    ASSERT_OK(synor_market_order_get(f.m, 4, &o));
    ASSERT_OK(synor_market_order_get(f.m, 12, &o)); /* rests, crossed but ineligible */
    /* the resting side: alice's bid 12 needs 1000 ns; her new ask lasting
     * 50 ns may not fill it, so bid 12 is not cancelled either */
    synor_market_cmd a2 = place(5, f.alice, f.tpu, SYNOR_ASK, 90, 1, SYNOR_GTC);
    a2.expires = a2.time + 50;
    mark = f.log.n;
    ASSERT_OK(submit(&f, a2));
    ASSERT(find_ev(&f, mark, SYNOR_EV_CANCELLED) < 0);
    ASSERT_OK(synor_market_order_get(f.m, 12, &o));
    /* an eligible own order is still cancelled: a plain bid of alice's */
    mark = f.log.n;
    ASSERT_OK(submit(&f, place(13, f.alice, f.gpu, SYNOR_BID, 100, 1, SYNOR_IOC)));
    long c = find_ev_kind_reason(&f, mark, SYNOR_EV_CANCELLED, SYNOR_REASON_SELF_TRADE);
    ASSERT(c >= 0 && f.log.ev[c].order_id == 1);
    ASSERT_OK(synor__market_invariants(f.m));
    fx_close(&f);
}

TEST_MAIN(invariants_catch_a_broken_book, random_streams_with_leases_keep_the_invariants,
          a_rejected_command_changes_nothing, self_trade_prevention_respects_eligibility)
