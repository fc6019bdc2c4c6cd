/* test_market_basket.c - synor_market_submit_basket (synor/market.h): bids
 * on several books that fill all together or not at all, and a journal that
 * recovers all of a basket or, when a crash tore it, none of it. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "market_fixture.h"

static char *tmpdir(void)
{
    static char d[4][64];
    static int k;
    char *p = d[k++ % 4];
    snprintf(p, 64, "/tmp/synor-basket-XXXXXX");
    return mkdtemp(p);
}

static void rm_rf(const char *dir)
{
    char p[512];
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    if (system(p) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc(n > 0 ? (size_t)n : 1);
    *len = p && fread(p, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
    fclose(f);
    return p;
}

static int spit(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Asks on both books: 4 GPUs at 100 and 200 (carol, dave), 2 TPUs at 300. */
static void stock(fx *f)
{
    ASSERT_OK(submit(f, place(1, f->carol, f->gpu, SYNOR_ASK, 100, 2, SYNOR_GTC)));
    ASSERT_OK(submit(f, place(2, f->dave, f->gpu, SYNOR_ASK, 200, 2, SYNOR_GTC)));
    ASSERT_OK(submit(f, place(3, f->carol, f->tpu, SYNOR_ASK, 300, 2, SYNOR_GTC)));
}

static synor_market_cmd bid(fx *f, uint64_t id, uint32_t res, int64_t price, int64_t qty,
                            uint64_t time)
{
    synor_market_cmd c = place(id, f->bob, res, SYNOR_BID, price, qty, SYNOR_FOK);
    c.time = time;
    c.duration = 3600000000000ull;
    return c;
}

static size_t count(const fx *f, size_t from, synor_market_event_kind k)
{
    size_t n = 0;
    for (size_t i = from; i < f->log.n; i++)
        n += f->log.ev[i].kind == k;
    return n;
}

TEST(fills_all_together)
{
    char *dir = tmpdir();
    ASSERT(dir);
    fx f;
    T = 1000;
    ASSERT_OK(fx_open(&f, dir));
    stock(&f);
    uint64_t t = T += 10;
    synor_market_cmd b[2] = {bid(&f, 10, f.gpu, 200, 3, t), bid(&f, 11, f.tpu, 300, 2, t)};
    size_t from = f.log.n, at = 99;
    int why = -1;
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, 0);
    ASSERT_EQ(count(&f, from, SYNOR_EV_REJECTED), 0);
    ASSERT_EQ(count(&f, from, SYNOR_EV_TRADE), 3); /* 2 at 100, 1 at 200, 2 TPUs */
    synor_level bids[4], asks[4];
    size_t nb = 0, na = 0;
    ASSERT_OK(synor_market_depth(f.m, f.gpu, bids, &nb, asks, &na, 4));
    ASSERT_EQ(nb, 0);
    ASSERT_EQ(na, 1);
    ASSERT_EQ(asks[0].price, 200);
    ASSERT_EQ(asks[0].qty, 1);
    ASSERT_OK(synor_market_depth(f.m, f.tpu, bids, &nb, asks, &na, 4));
    ASSERT_EQ(na, 0);
    ASSERT_OK(synor__market_invariants(f.m));
    uint64_t h = synor_market_state_hash(f.m);
    fx_close(&f);
    fx r;
    ASSERT_OK(fx_open(&r, dir));
    ASSERT(synor_market_state_hash(r.m) == h);
    fx_close(&r);
    rm_rf(dir);
}

TEST(one_that_cannot_fill_changes_nothing)
{
    char *dir = tmpdir();
    ASSERT(dir);
    fx f;
    T = 1000;
    ASSERT_OK(fx_open(&f, dir));
    stock(&f);
    ASSERT_OK(synor_market_commit(f.m));
    char path[128];
    snprintf(path, sizeof path, "%s/journal.log", dir);
    struct stat st0, st1;
    ASSERT_EQ(stat(path, &st0), 0);
    uint64_t h = synor_market_state_hash(f.m), seq = synor_market_seq(f.m);
    uint64_t t = T += 10;
    /* the GPUs are there, 3 TPUs are not */
    synor_market_cmd b[2] = {bid(&f, 10, f.gpu, 200, 3, t), bid(&f, 11, f.tpu, 300, 3, t)};
    size_t from = f.log.n, at = 99;
    int why = 0;
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, SYNOR_REASON_FOK_UNFILLABLE);
    ASSERT_EQ(at, 1);
    ASSERT_EQ(f.log.n - from, 1); /* one REJECTED, for the TPU bid */
    ASSERT_EQ(f.log.ev[from].kind, SYNOR_EV_REJECTED);
    ASSERT_EQ(f.log.ev[from].order_id, 11);
    ASSERT(synor_market_state_hash(f.m) == h);
    ASSERT_EQ(synor_market_seq(f.m), seq);
    ASSERT_OK(synor_market_commit(f.m));
    ASSERT_EQ(stat(path, &st1), 0);
    ASSERT_EQ(st1.st_size, st0.st_size);
    /* the ids were not used: the same bids may come again */
    b[1].qty = 2;
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, 0);
    fx_close(&f);
    rm_rf(dir);
}

TEST(the_rules_of_a_basket)
{
    fx f;
    T = 1000;
    ASSERT_OK(fx_open(&f, NULL));
    stock(&f);
    uint64_t h = synor_market_state_hash(f.m);
    uint64_t t = T += 10;
    size_t at;
    int why;
    synor_market_cmd b[3] = {bid(&f, 10, f.gpu, 200, 1, t), bid(&f, 11, f.tpu, 300, 1, t),
                             bid(&f, 12, f.gpu, 200, 1, t)};
    /* the same book twice */
    ASSERT_OK(synor_market_submit_basket(f.m, b, 3, &at, &why));
    ASSERT_EQ(why, SYNOR_REASON_BAD_FIELD);
    ASSERT_EQ(at, 2);
    /* an id twice */
    b[1].order_id = 10;
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, SYNOR_REASON_DUPLICATE_ID);
    ASSERT_EQ(at, 1);
    b[1].order_id = 11;
    /* an id used before (an ask's) */
    b[0].order_id = 1;
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, SYNOR_REASON_DUPLICATE_ID);
    ASSERT_EQ(at, 0);
    b[0].order_id = 10;
    /* not FOK, an ask, another time, a region set */
    b[1].tif = SYNOR_IOC;
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, SYNOR_REASON_BAD_FIELD);
    b[1].tif = SYNOR_FOK;
    b[1].side = SYNOR_ASK;
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, SYNOR_REASON_BAD_FIELD);
    b[1].side = SYNOR_BID;
    b[1].time = t + 1;
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, SYNOR_REASON_BAD_FIELD);
    b[1].time = t;
    /* a bad price is the command's own check */
    b[1].price = -5;
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, SYNOR_REASON_BAD_PRICE);
    ASSERT_EQ(at, 1);
    b[1].price = 300;
    /* counts and arguments */
    ASSERT_EQ(synor_market_submit_basket(f.m, b, 0, &at, &why), SYNOR_EINVAL);
    ASSERT_EQ(synor_market_submit_basket(f.m, b, SYNOR_MARKET_BASKET_MAX + 1, &at, &why),
              SYNOR_EINVAL);
    ASSERT_EQ(synor_market_submit_basket(NULL, b, 1, &at, &why), SYNOR_EINVAL);
    ASSERT(synor_market_state_hash(f.m) == h);
    /* and then it fills */
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, 0);
    ASSERT(synor_market_state_hash(f.m) != h);
    fx_close(&f);
}

/* An ask that expires by the basket's time is gone when its first bid
 * arrives: it is not counted, so the basket does not half-fill. */
TEST(orders_expiring_by_then_are_not_counted)
{
    fx f;
    T = 1000;
    ASSERT_OK(fx_open(&f, NULL));
    synor_market_cmd a = place(1, f.carol, f.gpu, SYNOR_ASK, 100, 2, SYNOR_GTC);
    a.expires = T + 50;
    ASSERT_OK(synor_market_submit(f.m, &a));
    ASSERT_OK(submit(&f, place(2, f.carol, f.tpu, SYNOR_ASK, 100, 2, SYNOR_GTC)));
    uint64_t h = synor_market_state_hash(f.m);
    size_t at;
    int why;
    synor_market_cmd b[2] = {bid(&f, 10, f.tpu, 100, 2, a.expires),
                             bid(&f, 11, f.gpu, 100, 2, a.expires)};
    b[0].duration = b[1].duration = 0; /* no lease term to outlast */
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, SYNOR_REASON_FOK_UNFILLABLE);
    ASSERT_EQ(at, 1);
    ASSERT(synor_market_state_hash(f.m) == h);
    b[0].time = b[1].time = a.expires - 1; /* still there */
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, 0);
    fx_close(&f);
}

/* A crash tears the journal anywhere in the basket's records: recovery
 * gives the state before the basket, never part of it; whole, the state
 * after it. Damage inside it with records after it is corruption. */
TEST(a_torn_basket_recovers_none_of_it)
{
    char *dir = tmpdir(), *copy = tmpdir();
    ASSERT(dir && copy);
    fx f;
    T = 1000;
    ASSERT_OK(fx_open(&f, dir));
    stock(&f);
    ASSERT_OK(synor_market_commit(f.m));
    uint64_t before = synor_market_state_hash(f.m);
    char path[128], cpath[128];
    snprintf(path, sizeof path, "%s/journal.log", dir);
    snprintf(cpath, sizeof cpath, "%s/journal.log", copy);
    size_t len0;
    free(slurp(path, &len0));
    uint64_t t = T += 10;
    synor_market_cmd b[2] = {bid(&f, 10, f.gpu, 200, 3, t), bid(&f, 11, f.tpu, 300, 2, t)};
    size_t at;
    int why;
    ASSERT_OK(synor_market_submit_basket(f.m, b, 2, &at, &why));
    ASSERT_EQ(why, 0);
    ASSERT_OK(synor_market_commit(f.m));
    uint64_t after = synor_market_state_hash(f.m);
    size_t len1;
    unsigned char *j = slurp(path, &len1);
    ASSERT(j && len1 > len0);
    for (size_t cut = len0; cut <= len1; cut++) {
        ASSERT_OK(spit(cpath, j, cut));
        fx r;
        ASSERT_OK(fx_open(&r, copy));
        uint64_t h = synor_market_state_hash(r.m);
        if (h != (cut == len1 ? after : before))
            TEST__FAIL("journal cut at byte %zu of %zu: a state that is neither before nor "
                       "after the basket", cut, len1);
        fx_close(&r);
    }
    /* one more command after the basket: a bad byte inside the basket now
     * has intact records after it */
    ASSERT_OK(submit(&f, place(20, f.alice, f.gpu, SYNOR_ASK, 500, 1, SYNOR_GTC)));
    ASSERT_OK(synor_market_commit(f.m));
    size_t len2;
    unsigned char *j2 = slurp(path, &len2);
    ASSERT(j2 && len2 > len1);
    j2[len0 + 40] ^= 0x5a; /* inside the first bid's record */
    ASSERT_OK(spit(cpath, j2, len2));
    fx r;
    int rc = fx_open(&r, copy);
    ASSERT(rc != 0);
    ASSERT(strstr(synor_errmsg(), "corruption") != NULL);
    synor_market_close(r.m);
    synor_catalog_destroy(r.cat);
    free(j);
    free(j2);
    fx_close(&f);
    rm_rf(dir);
    rm_rf(copy);
}

TEST_MAIN(fills_all_together, one_that_cannot_fill_changes_nothing, the_rules_of_a_basket,
          orders_expiring_by_then_are_not_counted, a_torn_basket_recovers_none_of_it)
