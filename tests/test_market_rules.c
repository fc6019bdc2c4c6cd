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

TEST_MAIN(invariants_catch_a_broken_book, random_streams_with_leases_keep_the_invariants)
