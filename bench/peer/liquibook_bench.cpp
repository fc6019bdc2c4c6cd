// liquibook_bench.cpp - replays bench_market's command stream into liquibook
// (github.com/enewhuis/liquibook, header-only C++ order book) for a
// side-by-side measurement with our market. Our code; liquibook itself is not
// part of this repository: its src/ directory is given with -I at compile time
// (bench/run_market_peer.sh does this).
//
//   bench_market -n 10000000 --dump-stream /tmp/stream.bin --memory-only
//   g++ -O2 -std=c++17 -I LIQUIBOOK/src bench/peer/liquibook_bench.cpp -o liquibook_bench
//   liquibook_bench /tmp/stream.bin [--check]
//
// The stream file is the one bench_market writes (format at the top of
// bench/bench_market.c). Mapping, one command to one liquibook call:
//   GTC limit  -> OrderBook::add(order)
//   IOC limit  -> OrderBook::add(order, oc_immediate_or_cancel)
//   cancel     -> OrderBook::cancel(order)
//   amend      -> OrderBook::replace(order, new open qty - open qty,
//                                    new price or PRICE_UNCHANGED)
// The caller keeps the order objects: order id -> object is a direct index
// into a preallocated array (our market does a hash lookup inside submit).
// Fills, cancels and replaces arrive through liquibook's virtual callbacks,
// which keep each order's open quantity and price current (as liquibook's own
// SimpleOrder does) and count them, as bench_market's event callback counts
// events.
//
// Phases, each on a fresh book, the commands already in memory:
//   1. throughput: all commands back to back;
//   2. service time: each command timed on its own (two clock reads);
//   --check: one more untimed pass comparing, command by command, the units
//   each order traded as taker with what our market traded (the record's
//   fill field), and reporting the first command where they differ.
#include <book/order_book.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace lb = liquibook::book;

namespace {

// The order interface liquibook's template needs (no virtual calls).
struct Order {
    lb::Price price_ = 0;
    lb::Quantity open_ = 0; // open quantity, kept current by the callbacks
    bool buy_ = false;
    uint16_t owner_ = 0; // for --check only
    bool is_buy() const { return buy_; }
    lb::Price price() const { return price_; }
    lb::Price stop_price() const { return 0; }
    lb::Quantity order_qty() const { return open_; }
    bool all_or_none() const { return false; }
    bool immediate_or_cancel() const { return false; }
};
typedef Order *OrderPtr;

struct Book final : lb::OrderBook<OrderPtr> {
    uint64_t events = 0, trades = 0, volume = 0, notional = 0;
    uint64_t cancel_rejects = 0, replace_rejects = 0, rejects = 0;
    uint64_t taker_units = 0; // units the inbound order traded (for --check)
    uint64_t self_trades = 0; // fills between orders of the same owner

    void on_accept(const OrderPtr &, lb::Quantity) override { events++; }
    void on_reject(const OrderPtr &, const char *) override
    {
        events++;
        rejects++;
    }
    void on_fill(const OrderPtr &order, const OrderPtr &matched, lb::Quantity qty,
                 lb::Price price, bool, bool) override
    {
        events++;
        trades++;
        volume += qty;
        notional += qty * price;
        taker_units += qty;
        self_trades += order->owner_ == matched->owner_;
        order->open_ -= qty;
        matched->open_ -= qty;
    }
    void on_cancel(const OrderPtr &, lb::Quantity) override { events++; }
    void on_cancel_reject(const OrderPtr &, const char *) override
    {
        events++;
        cancel_rejects++;
    }
    void on_replace(const OrderPtr &order, lb::Quantity, lb::Quantity new_qty,
                    lb::Price new_price) override
    {
        events++;
        order->open_ = new_qty;
        order->price_ = new_price;
    }
    void on_replace_reject(const OrderPtr &, const char *) override
    {
        events++;
        replace_rejects++;
    }
};

struct Cmd {
    uint8_t kind; // 0 GTC, 1 IOC, 2 cancel, 3 amend
    uint8_t side; // 0 bid, 1 ask
    uint16_t owner;
    uint32_t fill; // units our market traded for this command's order as taker
    uint64_t id;
    uint32_t price;
    uint32_t qty;
};

uint64_t now_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t get(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int k = bytes - 1; k >= 0; k--)
        v = v << 8 | p[k];
    return v;
}

bool load(const char *path, std::vector<Cmd> &cmds, uint64_t &max_id)
{
    FILE *f = std::fopen(path, "rb");
    if (!f)
        return false;
    unsigned char hdr[16];
    if (std::fread(hdr, 1, 16, f) != 16 || std::memcmp(hdr, "SYNMKT01", 8) != 0) {
        std::fclose(f);
        return false;
    }
    uint64_t n = get(hdr + 8, 8);
    cmds.resize(n);
    max_id = 0;
    std::vector<unsigned char> buf(24 * 65536);
    for (uint64_t i = 0; i < n;) {
        size_t want = (size_t)std::min<uint64_t>(65536, n - i);
        if (std::fread(buf.data(), 24, want, f) != want) {
            std::fclose(f);
            return false;
        }
        for (size_t k = 0; k < want; k++, i++) {
            const unsigned char *r = &buf[24 * k];
            Cmd &c = cmds[i];
            c.kind = r[0];
            c.side = r[1];
            c.owner = (uint16_t)get(r + 2, 2);
            c.fill = (uint32_t)get(r + 4, 4);
            c.id = get(r + 8, 8);
            c.price = (uint32_t)get(r + 16, 4);
            c.qty = (uint32_t)get(r + 20, 4);
            if (c.kind > 3) {
                std::fclose(f);
                return false;
            }
            max_id = std::max(max_id, c.id);
        }
    }
    std::fclose(f);
    return true;
}

inline void apply(Book &book, std::vector<Order> &orders, const Cmd &c)
{
    Order &o = orders[c.id];
    switch (c.kind) {
    case 0:
    case 1:
        o.price_ = c.price;
        o.open_ = c.qty;
        o.buy_ = c.side == 0;
        o.owner_ = c.owner;
        book.add(&o, c.kind == 1 ? lb::oc_immediate_or_cancel : lb::oc_no_conditions);
        break;
    case 2:
        book.cancel(&o);
        break;
    default: {
        // amend: our market's qty is the new open quantity; liquibook takes
        // a delta on the open quantity
        int64_t delta = (int64_t)c.qty - (int64_t)o.open_;
        lb::Price np = c.price != o.price_ ? (lb::Price)c.price : lb::PRICE_UNCHANGED;
        book.replace(&o, delta, np);
        break;
    }
    }
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: liquibook_bench STREAM_FILE [--check]\n");
        return 2;
    }
    bool check = argc > 2 && std::strcmp(argv[2], "--check") == 0;
    std::vector<Cmd> cmds;
    uint64_t max_id = 0;
    if (!load(argv[1], cmds, max_id)) {
        std::fprintf(stderr, "liquibook_bench: cannot read the stream %s\n", argv[1]);
        return 1;
    }
    size_t n = cmds.size();
    if (n == 0)
        return 1;
    std::vector<Order> orders(max_id + 1);

    // 1. throughput
    {
        Book *book = new Book();
        uint64_t t0 = now_ns();
        for (size_t i = 0; i < n; i++)
            apply(*book, orders, cmds[i]);
        uint64_t t1 = now_ns();
        std::printf("liquibook throughput, no journal: %6.2f M commands/s (%.0f ns/command, "
                    "%" PRIu64 " events)\n",
                    n / ((t1 - t0) / 1e9) / 1e6, (double)(t1 - t0) / n, book->events);
        std::printf("liquibook: %" PRIu64 " trades, volume %" PRIu64 " units, notional %" PRIu64
                    " ticks; %" PRIu64 " cancels and %" PRIu64
                    " replaces of orders it no longer holds; %zu orders resting at the end\n",
                    book->trades, book->volume, book->notional, book->cancel_rejects,
                    book->replace_rejects, book->bids().size() + book->asks().size());
        delete book;
    }

    // 2. service time
    {
        std::fill(orders.begin(), orders.end(), Order());
        std::vector<uint64_t> lat(n, 0);
        Book *book = new Book();
        for (size_t i = 0; i < n; i++) {
            uint64_t a = now_ns();
            apply(*book, orders, cmds[i]);
            lat[i] = now_ns() - a;
        }
        delete book;
        std::sort(lat.begin(), lat.end());
        std::printf("liquibook service time per command:    p50 %" PRIu64 " ns, p99 %" PRIu64
                    " ns, p99.9 %" PRIu64 " ns, max %" PRIu64 " ns\n",
                    lat[n / 2], lat[n * 99 / 100], lat[n * 999 / 1000], lat[n - 1]);
    }

    // --check: taker fills command by command against our market's
    if (check) {
        std::fill(orders.begin(), orders.end(), Order());
        Book *book = new Book();
        size_t first = n, differ = 0, places = 0, ioc_traded = 0;
        for (size_t i = 0; i < n; i++) {
            book->taker_units = 0;
            apply(*book, orders, cmds[i]);
            if (cmds[i].kind <= 1) {
                places++;
                ioc_traded += book->taker_units > 0;
            }
            if (book->taker_units != cmds[i].fill) {
                differ++;
                if (first == n)
                    first = i;
            }
        }
        std::printf("check: taker fills differ from our market's on %zu of %zu commands "
                    "(%zu places, %zu of them traded); first difference at command %zu%s; "
                    "liquibook made %" PRIu64 " self-trades (our market cancels the resting "
                    "order instead)\n",
                    differ, n, places, ioc_traded, first, first == n ? " (none)" : "",
                    book->self_trades);
        delete book;
    }
    return 0;
}
