/* bench_market.c - spot market throughput and latency on one core.
 *
 * A seeded stream with exchange-core's mix (about 9% GTC limit orders, 3%
 * IOC, 6% cancels, 82% amends that move or resize a resting order) on one
 * book kept at about 1,000 resting orders over about 750 price levels. The
 * stream is generated first (against a scratch market, so it only names
 * orders that are still open), then replayed into fresh markets:
 *   1. throughput, in memory (no journal);
 *   2. throughput with the journal, fsync per batch of B commands;
 *   3. latency at a fixed offered rate (default 1M commands/s): command i
 *      is due at start + i / rate; the latency is completion minus due
 *      time, so a stall delays every command behind it (no coordinated
 *      omission);
 *   4. service time: each command timed on its own, back to back;
 *   5. baseline: the schedule of 3 doing no work (the machine's own jitter).
 * Latencies (3, 4, 5) go into a fixed-size log-linear histogram (below):
 * exact below 1,024 ns, above within 1/256 (0.4%); a percentile is printed
 * as the upper edge of the bucket holding that rank (never below the true
 * value, and capped at the exact maximum), so 3 and 5 need no per-command
 * array and add nothing but a bucket increment to the timed loop.
 *
 *   bench_market [-n COMMANDS] [-r RATE] [-b BATCH] [-d DIR] [-s SEED] [-S SNAPSHOT_EVERY]
 *                [-w|--dump-stream FILE] [-j|--jsonl FILE] [-M|--memory-only]
 *                [-J|--journal-only] [-L|--latency-only] [-F batch|never] [-p|--pin CPU]
 *                [--fifo] [--lock]
 *
 * Machine stalls: while 3 and 5 spin until a command's due time, every
 * time two consecutive clock reads of that spin loop are more than 1 us
 * apart counts as a stall: the process was not running (the host froze the
 * VM, or the kernel ran an interrupt or another task; the market's own work
 * is never inside such a gap). Each run prints how many, their share of
 * the run's wall time and the longest: stalls while a command was being
 * processed are not seen, so this is a lower bound. If the baseline's p99
 * is above the goal, or the stalls cover more than 1% of the run, the
 * machine itself does not allow p99 <= 1 us to be judged.
 *
 * --jsonl FILE writes the stream as the JSON-lines commands of `synor market
 * batch` (owners trader0..trader63, one resource), so that the command line
 * can be measured on the very commands the library runs; --journal-only
 * runs only 2, the library's journaled throughput, for a side-by-side run
 * with the command line (bench/run_market_cli.sh).
 *
 * --latency-only runs only 3 (paced) and 5 (baseline): no throughput,
 * journal, recovery or service time (bench/run_market_latency.sh).
 * --pin CPU: sched_setaffinity of the process to CPU before any timed
 * section. --fifo: SCHED_FIFO priority 1 before the timed sections; the
 * busy loops then starve every normal task on that CPU (the kernel's RT
 * throttling or fair server leaves others about 5%), so use it with --pin
 * on a CPU other work can leave. --lock: mlockall(MCL_CURRENT|MCL_FUTURE)
 * once the stream is generated (no page faults or reclaim of our pages in
 * the timed loops). Any of them failing is an error (exit 2). Each latency
 * run starts with a "latency setup:" line saying which are in effect.
 *
 * -F never runs 2 with synor_market_config.fsync = NEVER (the journal is
 * written, the operating system decides when it reaches the disk), to
 * separate the work from the disk's fdatasync time; default batch.
 *
 * -S sets synor_market_config.snapshot_every for the journaled run (default
 * the library's, 1,000,000 records; 0 = never, so recovery replays the
 * whole journal).
 *
 * For side-by-side runs with another order book (docs/BENCHMARKS.md, "Peer"):
 * --dump-stream FILE writes the generated stream to FILE (format below) and
 * prints what the stream does to this market (trades, volume, self-trade
 * cancels, amends that kept priority) from an extra, untimed replay;
 * --memory-only runs only 1 (in-memory throughput) and 4 (service time).
 *
 * Stream file: the 8 bytes "SYNMKT01", the command count (uint64), then one
 * 24-byte record per command, host byte order (little-endian here):
 *   uint8 kind (0 GTC limit, 1 IOC limit, 2 cancel, 3 amend), uint8 side
 *   (0 bid, 1 ask; places only), uint16 owner, uint32 fill (units this
 *   command's order traded as taker here; for checking only), uint64
 *   order_id, uint32 price (ticks; places and amends), uint32 qty (places:
 *   the quantity; amends: the new open quantity).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#endif
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "synor.h"

static uint64_t rs;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static uint64_t cpu_ns(void) /* this process's CPU time, user and system */
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t events;
static uint64_t snap_every = 1000000;
static synor_fsync_policy fsync_policy = SYNOR_FSYNC_BATCH;
static void count_event(const synor_market_event *ev, void *ud)
{
    (void)ev;
    (void)ud;
    events++;
}

/* --dump-stream: what the stream does, from an untimed replay */
static struct {
    uint64_t trades, volume, notional, self_trade, ioc_remainder, rejected, amend_kept,
        amend_requeued;
    uint32_t *fill; /* per command: units traded as taker */
    size_t cur;
} tally;
static void tally_event(const synor_market_event *ev, void *ud)
{
    (void)ud;
    events++;
    switch (ev->kind) {
    case SYNOR_EV_TRADE:
        tally.trades++;
        tally.volume += (uint64_t)ev->qty;
        tally.notional += (uint64_t)ev->qty * (uint64_t)ev->price;
        tally.fill[tally.cur] += (uint32_t)ev->qty;
        break;
    case SYNOR_EV_CANCELLED:
        if (ev->reason == SYNOR_REASON_SELF_TRADE)
            tally.self_trade++;
        if (ev->reason == SYNOR_REASON_IOC_REMAINDER)
            tally.ioc_remainder++;
        break;
    case SYNOR_EV_REJECTED:
        tally.rejected++;
        break;
    case SYNOR_EV_AMENDED:
        if (ev->kept_priority)
            tally.amend_kept++;
        else
            tally.amend_requeued++;
        break;
    default:
        break;
    }
}
static synor_market_event_fn on_event = count_event;

typedef struct setup {
    synor_catalog *cat;
    synor_market *m;
    uint32_t res;
    uint32_t owners[64];
} setup;

static int open_market(setup *s, const char *dir)
{
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    cfg.dir = dir;
    cfg.on_event = on_event;
    cfg.snapshot_every = snap_every;
    cfg.fsync = fsync_policy;
    if (synor_market_open(&cfg, &s->m) ||
        synor_market_resource(s->m, s->cat, "gpu/nvidia-h100-sxm/eu-west", &s->res))
        return -1;
    for (int i = 0; i < 64; i++) {
        char name[16];
        snprintf(name, sizeof name, "trader%d", i);
        if (synor_market_owner(s->m, name, &s->owners[i]))
            return -1;
    }
    return 0;
}

#define MID 1000000
#define HALF_BAND 520 /* about 750 occupied levels with ~1,000 orders */

/* Generates n commands against a scratch market. */
static synor_market_cmd *generate(setup *s, size_t n, uint64_t seed)
{
    synor_market_cmd *cmds = malloc(n * sizeof *cmds);
    uint64_t *live = malloc(4096 * sizeof *live);
    size_t n_live = 0;
    uint64_t next_id = 1, t = 1;
    rs = seed;
    if (!cmds || !live)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        synor_market_cmd c;
        memset(&c, 0, sizeof c);
        c.time = t++;
        c.owner = s->owners[rnd() % 64];
        unsigned r = (unsigned)(rnd() % 100);
        /* keep about 1,000 orders resting */
        if (n_live < 900 && r >= 9 && r < 18)
            r = 0;
        if (n_live > 1100 && r < 9)
            r = 12;
        synor_market_order o;
        uint64_t pick = 0;
        if (r >= 12) {
            while (n_live) {
                size_t k = (size_t)(rnd() % n_live);
                if (synor_market_order_get(s->m, live[k], &o) == 0) {
                    pick = live[k];
                    break;
                }
                live[k] = live[--n_live];
            }
            if (!pick)
                r = 0;
        }
        if (r < 12) { /* GTC (9) or IOC (3) limit order */
            int ioc = r >= 9;
            c.kind = SYNOR_CMD_PLACE;
            c.order_id = next_id++;
            c.resource = s->res;
            c.side = (synor_side)(rnd() % 2);
            c.type = SYNOR_LIMIT;
            c.tif = ioc ? SYNOR_IOC : SYNOR_GTC;
            int64_t off = ioc ? -(int64_t)(rnd() % 8) : 1 + (int64_t)(rnd() % HALF_BAND);
            c.price = c.side == SYNOR_BID ? MID - off : MID + off;
            c.qty = 1 + (int64_t)(rnd() % 50);
        } else if (r < 18) { /* cancel */
            c.kind = SYNOR_CMD_CANCEL;
            c.order_id = pick;
            c.owner = o.owner;
        } else { /* amend: move by a few ticks, or resize */
            c.kind = SYNOR_CMD_AMEND;
            c.order_id = pick;
            c.owner = o.owner;
            c.qty = o.qty;
            c.price = o.price;
            if (rnd() % 4 == 0) {
                c.qty = 1 + (int64_t)(rnd() % (uint64_t)o.qty);
            } else {
                int64_t np = o.price + (int64_t)(rnd() % 7) - 3;
                /* stay on the passive side of the middle */
                if (o.side == SYNOR_BID && np >= MID)
                    np = MID - 1;
                if (o.side == SYNOR_ASK && np <= MID)
                    np = MID + 1;
                c.price = np;
            }
        }
        cmds[i] = c;
        if (synor_market_submit(s->m, &c))
            return NULL;
        if (c.kind == SYNOR_CMD_PLACE && c.tif == SYNOR_GTC &&
            synor_market_order_get(s->m, c.order_id, &o) == 0) {
            if (n_live == 4096)
                n_live--;
            live[n_live++] = c.order_id;
        }
    }
    free(live);
    return cmds;
}

static void put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void put_u32(unsigned char *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}
static void put_u64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

/* Writes the stream file described at the top (fill: per-command taker
 * units from the replay). */
static int dump_stream(const char *path, const synor_market_cmd *cmds, size_t n,
                       const uint32_t *fill)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    unsigned char hdr[16];
    memcpy(hdr, "SYNMKT01", 8);
    put_u64(hdr + 8, (uint64_t)n);
    int ok = fwrite(hdr, 1, sizeof hdr, f) == sizeof hdr;
    for (size_t i = 0; ok && i < n; i++) {
        const synor_market_cmd *c = &cmds[i];
        unsigned char r[24];
        memset(r, 0, sizeof r);
        if (c->kind == SYNOR_CMD_PLACE)
            r[0] = c->tif == SYNOR_IOC ? 1 : 0;
        else if (c->kind == SYNOR_CMD_CANCEL)
            r[0] = 2;
        else if (c->kind == SYNOR_CMD_AMEND)
            r[0] = 3;
        else
            ok = 0;
        if (c->price < 0 || c->price > (int64_t)UINT32_MAX || c->qty < 0 ||
            c->qty > (int64_t)UINT32_MAX || c->owner > UINT16_MAX)
            ok = 0; /* does not fit the record */
        r[1] = c->kind == SYNOR_CMD_PLACE ? (unsigned char)c->side : 0;
        put_u16(r + 2, (uint16_t)c->owner);
        put_u32(r + 4, fill[i]);
        put_u64(r + 8, c->order_id);
        put_u32(r + 16, (uint32_t)c->price);
        put_u32(r + 20, (uint32_t)c->qty);
        ok = ok && fwrite(r, 1, sizeof r, f) == sizeof r;
    }
    if (fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

/* Writes the stream as JSON-lines commands (docs/MARKET.md). */
static int write_jsonl(const char *path, const synor_market_cmd *cmds, size_t n,
                       const setup *s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = 1;
    for (size_t i = 0; ok && i < n; i++) {
        const synor_market_cmd *c = &cmds[i];
        const char *owner = synor_market_owner_name(s->m, c->owner);
        if (c->kind == SYNOR_CMD_PLACE)
            ok = fprintf(f, "{\"cmd\":\"place\",\"id\":%llu,\"owner\":\"%s\",\"resource\":"
                            "\"%s\",\"side\":\"%s\",\"price\":%lld,\"qty\":%lld,\"time\":%llu%s}\n",
                         (unsigned long long)c->order_id, owner,
                         synor_market_resource_key(s->m, c->resource),
                         c->side == SYNOR_BID ? "bid" : "ask", (long long)c->price,
                         (long long)c->qty, (unsigned long long)c->time,
                         c->tif == SYNOR_IOC ? ",\"tif\":\"ioc\"" : "") > 0;
        else if (c->kind == SYNOR_CMD_CANCEL)
            ok = fprintf(f, "{\"cmd\":\"cancel\",\"id\":%llu,\"owner\":\"%s\",\"time\":%llu}\n",
                         (unsigned long long)c->order_id, owner, (unsigned long long)c->time) > 0;
        else
            ok = fprintf(f, "{\"cmd\":\"amend\",\"id\":%llu,\"owner\":\"%s\",\"price\":%lld,"
                            "\"qty\":%lld,\"time\":%llu}\n",
                         (unsigned long long)c->order_id, owner, (long long)c->price,
                         (long long)c->qty, (unsigned long long)c->time) > 0;
    }
    if (fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

/* Latency histogram (ns). Values below 2^H_EXACT_BITS have a bucket each;
 * above, each range [2^k, 2^(k+1)) is split into 2^H_SUB_BITS buckets of
 * width 2^(k - H_SUB_BITS), at most 1/256 of any value in them. 14,848
 * buckets cover every uint64 value: 116 KiB. */
#define H_EXACT_BITS 10
#define H_SUB_BITS 8
#define H_EXACT (1u << H_EXACT_BITS)
#define H_SUB (1u << H_SUB_BITS)
#define H_BUCKETS (H_EXACT + (64 - H_EXACT_BITS) * H_SUB)

typedef struct hist {
    uint64_t count, max;
    uint64_t bucket[H_BUCKETS];
} hist;

static hist lat_hist;

static inline size_t hist_index(uint64_t v)
{
    if (v < H_EXACT)
        return (size_t)v;
    unsigned k = 63u - (unsigned)__builtin_clzll(v); /* H_EXACT_BITS..63 */
    return H_EXACT + (size_t)(k - H_EXACT_BITS) * H_SUB +
           (size_t)((v >> (k - H_SUB_BITS)) - H_SUB);
}

/* the largest value that falls into bucket i */
static uint64_t hist_upper(size_t i)
{
    if (i < H_EXACT)
        return (uint64_t)i;
    unsigned k = (unsigned)((i - H_EXACT) / H_SUB) + H_EXACT_BITS;
    uint64_t sub = (uint64_t)((i - H_EXACT) % H_SUB);
    return ((H_SUB + sub) << (k - H_SUB_BITS)) + ((1ull << (k - H_SUB_BITS)) - 1);
}

/* Clears the histogram; this also touches all of its pages, so that no
 * first-touch page fault lands in a timed loop. */
static void hist_reset(hist *h)
{
    memset(h, 0, sizeof *h);
}

static inline void hist_record(hist *h, uint64_t v)
{
    h->bucket[hist_index(v)]++;
    h->count++;
    if (v > h->max)
        h->max = v;
}

/* The value of 0-based rank r among the recorded values in ascending order
 * (the same ranks as the sorted array this replaces), as the upper edge of
 * its bucket, capped at the exact maximum: never below the true value. */
static uint64_t hist_at(const hist *h, uint64_t r)
{
    uint64_t seen = 0;
    for (size_t i = 0; i < H_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen > r) {
            uint64_t u = hist_upper(i);
            return u < h->max ? u : h->max;
        }
    }
    return h->max;
}

/* "p50 %llu ns, p99 %llu ns, p99.9 %llu ns, max %llu ns" after label */
static void print_percentiles(const char *label, const hist *h)
{
    uint64_t n = h->count;
    printf("%sp50 %llu ns, p99 %llu ns, p99.9 %llu ns, max %llu ns\n", label,
           (unsigned long long)hist_at(h, n / 2), (unsigned long long)hist_at(h, n * 99 / 100),
           (unsigned long long)hist_at(h, n * 999 / 1000), (unsigned long long)h->max);
}

/* Gaps of more than STALL_NS between two consecutive clock reads of a spin
 * loop: the machine did not run us. */
#define STALL_NS 1000
typedef struct stalls {
    uint64_t count, total_ns, longest_ns;
} stalls;

/* Spins until due; exits on the first clock read at or after it. One
 * subtraction and compare per iteration; the first read has no predecessor
 * (what ran before, such as the market's work, is not a wait). */
static inline void wait_until(uint64_t due, stalls *st)
{
    uint64_t t = now_ns();
    while (t < due) {
        uint64_t prev = t;
        t = now_ns();
        if (t - prev > STALL_NS) {
            uint64_t gap = t - prev;
            st->count++;
            st->total_ns += gap;
            if (gap > st->longest_ns)
                st->longest_ns = gap;
        }
    }
}

static void print_stalls(const char *label, const stalls *st, uint64_t run_ns)
{
    double secs = run_ns / 1e9;
    printf("machine stalls while waiting (%s): %llu gaps > 1 us (%.0f/s), %.2f%% of the run, "
           "longest %.1f us\n",
           label, (unsigned long long)st->count, secs > 0 ? st->count / secs : 0.0,
           run_ns ? 100.0 * st->total_ns / run_ns : 0.0, st->longest_ns / 1e3);
}

static void die_errno(const char *what, int err)
{
    fprintf(stderr, "bench_market: %s: %s\n", what, strerror(err));
    exit(2);
}

int main(int argc, char **argv)
{
    size_t n = 10000000;
    double rate = 1e6;
    size_t batch = 4096;
    const char *dir = "/tmp/synor-bench-market";
    const char *dump = NULL, *jsonl = NULL;
    int memory_only = 0, latency_only = 0, journal_only = 0, fifo = 0, lock = 0;
    int pin = -1; /* CPU, or -1: not pinned */
    uint64_t seed = 42;
    int opt;
    enum { OPT_FIFO = 256, OPT_LOCK };
    static const struct option longopts[] = {{"dump-stream", required_argument, NULL, 'w'},
                                             {"jsonl", required_argument, NULL, 'j'},
                                             {"journal-only", no_argument, NULL, 'J'},
                                             {"memory-only", no_argument, NULL, 'M'},
                                             {"latency-only", no_argument, NULL, 'L'},
                                             {"pin", required_argument, NULL, 'p'},
                                             {"fifo", no_argument, NULL, OPT_FIFO},
                                             {"lock", no_argument, NULL, OPT_LOCK},
                                             {NULL, 0, NULL, 0}};
    while ((opt = getopt_long(argc, argv, "n:r:b:d:s:S:w:j:MJLF:p:", longopts, NULL)) != -1) {
        char *end;
        long cpu;
        switch (opt) {
        case 'n': n = strtoull(optarg, NULL, 10); break;
        case 'r': rate = strtod(optarg, NULL); break;
        case 'b': batch = strtoull(optarg, NULL, 10); break;
        case 'd': dir = optarg; break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'S': snap_every = strtoull(optarg, NULL, 10); break;
        case 'w': dump = optarg; break;
        case 'M': memory_only = 1; break;
        case 'j': jsonl = optarg; break;
        case 'J': journal_only = 1; break;
        case 'F':
            if (strcmp(optarg, "never") && strcmp(optarg, "batch")) {
                fprintf(stderr, "bench_market: -F %s: batch or never\n", optarg);
                return 2;
            }
            fsync_policy = strcmp(optarg, "never") ? SYNOR_FSYNC_BATCH : SYNOR_FSYNC_NEVER;
            break;
        case 'L': latency_only = 1; break;
        case 'p':
            errno = 0;
            cpu = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || cpu < 0 || cpu >= CPU_SETSIZE) {
                fprintf(stderr, "bench_market: --pin %s: not a CPU number (0..%d)\n", optarg,
                        CPU_SETSIZE - 1);
                return 2;
            }
            pin = (int)cpu;
            break;
        case OPT_FIFO: fifo = 1; break;
        case OPT_LOCK: lock = 1; break;
        default:
            fprintf(stderr, "usage: bench_market [-n N] [-r RATE] [-b BATCH] [-d DIR] [-s SEED] "
                            "[-S SNAPSHOT_EVERY] [--dump-stream FILE] [--jsonl FILE] "
                            "[--memory-only | --journal-only | --latency-only] [--pin CPU] "
                            "[--fifo] [--lock]\n");
            return 2;
        }
    }
    if (memory_only + latency_only + journal_only > 1) {
        fprintf(stderr, "bench_market: --memory-only, --journal-only and --latency-only exclude "
                        "each other\n");
        return 2;
    }
    if (pin >= 0) { /* before any timed section */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(pin, &set);
        if (sched_setaffinity(0, sizeof set, &set)) {
            char what[64];
            snprintf(what, sizeof what, "--pin %d: sched_setaffinity to CPU %d", pin, pin);
            die_errno(what, errno);
        }
    }
    setup s;
    memset(&s, 0, sizeof s);
    if (synor_catalog_create(&s.cat) || synor_catalog_load_builtin(s.cat) || open_market(&s, NULL)) {
        fprintf(stderr, "bench_market: %s\n", synor_errmsg());
        return 1;
    }
    synor_market_cmd *cmds = generate(&s, n, seed);
    if (!cmds) {
        fprintf(stderr, "bench_market: generation failed: %s\n", synor_errmsg());
        return 1;
    }
    size_t counts[5] = {0};
    for (size_t i = 0; i < n; i++)
        counts[cmds[i].kind == SYNOR_CMD_PLACE ? (cmds[i].tif == SYNOR_IOC ? 1 : 0)
                                               : cmds[i].kind]++;
    if (jsonl && write_jsonl(jsonl, cmds, n, &s)) {
        fprintf(stderr, "bench_market: cannot write the stream to %s\n", jsonl);
        return 1;
    }
    size_t resting = synor_market_open_orders(s.m);
    synor_level bl[1000], al[1000];
    size_t nb, na;
    synor_market_depth(s.m, s.res, bl, &nb, al, &na, 1000);
    synor_market_close(s.m);
    printf("stream: %zu commands (seed %llu): GTC %.1f%%, IOC %.1f%%, cancel %.1f%%, amend "
           "%.1f%%; at the end %zu resting orders on %zu price levels\n",
           n, (unsigned long long)seed, 100.0 * counts[0] / n, 100.0 * counts[1] / n,
           100.0 * counts[2] / n, 100.0 * counts[3] / n, resting, nb + na);

    if (dump) { /* untimed replay that counts what the stream does */
        tally.fill = calloc(n ? n : 1, sizeof *tally.fill);
        on_event = tally_event;
        if (!tally.fill || open_market(&s, NULL))
            return 1;
        for (tally.cur = 0; tally.cur < n; tally.cur++)
            synor_market_submit(s.m, &cmds[tally.cur]);
        size_t rest_end = synor_market_open_orders(s.m);
        synor_market_close(s.m);
        on_event = count_event;
        if (dump_stream(dump, cmds, n, tally.fill)) {
            fprintf(stderr, "bench_market: cannot write the stream to %s\n", dump);
            return 1;
        }
        printf("stream written to %s: %llu trades, volume %llu units, notional %llu ticks; "
               "%llu self-trade cancels, %llu IOC remainders cancelled, %llu rejected; amends: "
               "%llu kept priority, %llu re-queued; %zu orders resting at the end\n",
               dump, (unsigned long long)tally.trades, (unsigned long long)tally.volume,
               (unsigned long long)tally.notional, (unsigned long long)tally.self_trade,
               (unsigned long long)tally.ioc_remainder, (unsigned long long)tally.rejected,
               (unsigned long long)tally.amend_kept, (unsigned long long)tally.amend_requeued,
               rest_end);
        free(tally.fill);
    }

    if (lock && mlockall(MCL_CURRENT | MCL_FUTURE))
        die_errno("--lock: mlockall(MCL_CURRENT|MCL_FUTURE)", errno);
    if (fifo) { /* a busy loop at SCHED_FIFO starves that CPU's other work: use --pin */
        struct sched_param sp;
        memset(&sp, 0, sizeof sp);
        sp.sched_priority = 1;
        if (sched_setscheduler(0, SCHED_FIFO, &sp))
            die_errno("--fifo", errno);
    }

    uint64_t t0, t1, h_mem = 0;
    if (!latency_only && !journal_only) {
        /* 1. in memory */
        if (open_market(&s, NULL))
            return 1;
        events = 0;
        t0 = now_ns();
        for (size_t i = 0; i < n; i++)
            synor_market_submit(s.m, &cmds[i]);
        t1 = now_ns();
        h_mem = synor_market_state_hash(s.m);
        synor_market_close(s.m);
        printf("throughput, no journal:      %6.2f M commands/s (%.0f ns/command, %llu events)\n",
               n / ((t1 - t0) / 1e9) / 1e6, (double)(t1 - t0) / n, (unsigned long long)events);
    }
    hist *h = &lat_hist;
    double period = 1e9 / rate;
    uint64_t start = 0;

    if (!memory_only && !latency_only) {
        /* 2. journaled, fsync per batch */
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            return 1;
        if (open_market(&s, dir))
            return 1;
        uint64_t c0 = cpu_ns();
        t0 = now_ns();
        for (size_t i = 0; i < n; i++) {
            synor_market_submit(s.m, &cmds[i]);
            if (i % batch == batch - 1 && synor_market_commit(s.m)) {
                fprintf(stderr, "bench_market: %s\n", synor_errmsg());
                return 1;
            }
        }
        synor_market_commit(s.m);
        t1 = now_ns();
        uint64_t c1 = cpu_ns();
        uint64_t h_j = synor_market_state_hash(s.m);
        synor_market_close(s.m);
        printf("throughput, journal (%s every %zu, snapshot every %llu records): %6.2f M "
               "commands/s (%.2f M/s of CPU)\n",
               fsync_policy == SYNOR_FSYNC_NEVER ? "commit, no fsync," : "fsync", batch,
               (unsigned long long)snap_every, n / ((t1 - t0) / 1e9) / 1e6,
               n / ((c1 - c0) / 1e9) / 1e6);
        /* recovery of the whole journal */
        t0 = now_ns();
        if (open_market(&s, dir))
            return 1;
        t1 = now_ns();
        printf("recovery: last snapshot + journal replay in %.2f s, state hash %s\n",
               (t1 - t0) / 1e9,
               synor_market_state_hash(s.m) == h_j && (journal_only || h_j == h_mem) ? "identical"
                                                                                     : "DIFFERENT");
        synor_market_close(s.m);
        if (system(cmd) != 0)
            return 1;
    }

    if (!memory_only && !journal_only) {
        /* 3. latency at a fixed offered rate */
        printf("latency setup: ");
        if (pin >= 0)
            printf("pinned to CPU %d, ", pin);
        else
            printf("not pinned, ");
        printf("%s, memory %s\n", fifo ? "SCHED_FIFO 1" : "normal scheduling",
               lock ? "locked" : "not locked");
        if (open_market(&s, NULL))
            return 1;
        /* touch the histogram now: a first-touch page fault inside the timed
         * loop would be counted as the market's latency */
        hist_reset(h);
        stalls st;
        memset(&st, 0, sizeof st);
        /* Runs of 1M commands: before each run its commands are read once, so
         * that the host's reclaim of cold pages (this VM runs kdamond) is not
         * charged to the market as page faults; within a run the schedule is
         * strict. */
        volatile uint64_t sink = 0;
        t0 = now_ns();
        for (size_t i = 0; i < n; i++) {
            if (i % 1000000 == 0) {
                size_t end = i + 1000000 < n ? i + 1000000 : n;
                for (size_t k = i; k < end; k++)
                    sink += cmds[k].order_id;
                start = now_ns() + 1000000 - (uint64_t)(i * period);
            }
            uint64_t due = start + (uint64_t)(i * period);
            wait_until(due, &st);
            synor_market_submit(s.m, &cmds[i]);
            hist_record(h, now_ns() - due);
        }
        t1 = now_ns();
        synor_market_close(s.m);
        (void)sink;
        char label[80];
        snprintf(label, sizeof label, "latency at %.2f M commands/s offered: ", rate / 1e6);
        print_percentiles(label, h);
        print_stalls("paced run", &st, t1 - t0);
    }

    if (!latency_only && !journal_only) {
        /* 4. service time: each command timed on its own, back to back (the
         * clock reads add about 40 ns) */
        if (open_market(&s, NULL))
            return 1;
        hist_reset(h);
        for (size_t i = 0; i < n; i++) {
            uint64_t a = now_ns();
            synor_market_submit(s.m, &cmds[i]);
            hist_record(h, now_ns() - a);
        }
        synor_market_close(s.m);
        print_percentiles("service time per command:              ", h);
    }

    if (!memory_only && !journal_only) {
        /* 5. the machine's own jitter: the same schedule doing no work. A
         * stall of the VM delays every command behind it here too. */
        hist_reset(h);
        stalls st;
        memset(&st, 0, sizeof st);
        start = now_ns() + 1000000;
        t0 = now_ns();
        for (size_t i = 0; i < n; i++) {
            uint64_t due = start + (uint64_t)(i * period);
            wait_until(due, &st);
            hist_record(h, now_ns() - due);
        }
        t1 = now_ns();
        print_percentiles("baseline (same schedule, no work):     ", h);
        print_stalls("baseline", &st, t1 - t0);
    }
    free(cmds);
    synor_catalog_destroy(s.cat);
    return 0;
}
