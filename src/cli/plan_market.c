/* plan_market.c - `synor plan --market DIR`: a plan priced by the live
 * order book, and with --buy bought on it (docs/PLANNING.md, "Plans bought
 * on the market").
 *
 * Each device of the fabric is rented on the book `<kind>/<profile>/<region>`
 * of --region. The market trades whole device-hours, so a device leased for
 * the plan needs h units, h the plan's makespan (setup included) in hours
 * rounded up (at least 1). The asks of that book, cheapest first (the
 * buyer's own, and those that end before the lease would, left out), are
 * units: the fabric's k-th device of that resource takes units kh..kh+h-1
 * and is priced, per device-hour, at the dearest of them; a device past the
 * book's depth cannot be rented and no task may run on it. A device whose
 * book does not exist is not on the market and keeps the fabric's price
 * (an owned or fixed-price device). The workload is planned with those
 * prices; the quote is then taken again for the lease that plan needs and,
 * if that changes what is available, planned again. The quote: per
 * resource the devices the plan uses, the units a buy takes (the cheapest
 * that many), their dearest price and their money. --budget refuses a
 * quote above it (exit 3, nothing bought). --buy places one FOK bid per
 * resource (limit: the dearest unit needed; quantity: the units; duration:
 * the lease) as one basket (synor_market_submit_basket): every bid fills or
 * none does, and the journal holds all of them or none. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "plan/plan_internal.h"

#define MAX_UNITS 4096 /* asks read per book */
#define HOUR_NS 3600000000000ull

typedef struct unit_book {
    char key[200];
    uint32_t res;
    int exists;        /* the book exists and has usable asks */
    int64_t *prices;   /* units, cheapest first */
    size_t n;          /* units */
    size_t devices;    /* fabric devices on this book */
    size_t used;       /* of them, used by the plan */
} unit_book;

typedef struct quote {
    uint64_t hours;    /* units per device */
    unit_book *books;
    size_t n_books;
    size_t *book_of;   /* per fabric device: its book index */
    int *rentable;     /* per device: 1 market unit, 0 past the depth, -1 not on the market */
} quote;

typedef struct fills {
    int64_t money;     /* price x qty, per hour, summed */
    size_t trades;
    int64_t units;
} fills;

/* price x qty, saturating (both are at most 2^53 - 1) */
static int64_t per_hour(int64_t price, int64_t qty)
{
    return qty && price > INT64_MAX / qty ? INT64_MAX : price * qty;
}

static void on_event(const synor_market_event *ev, void *user)
{
    fills *f = user;
    if (ev->kind == SYNOR_EV_TRADE) {
        f->trades++;
        f->units += ev->qty;
        f->money = synor_money_add(f->money, per_hour(ev->price, ev->qty));
    }
}

static uint64_t now_ns(const synor_market *m)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return t > synor_market_time(m) ? t : synor_market_time(m) + 1;
}

static void quote_free(quote *q)
{
    for (size_t b = 0; b < q->n_books; b++)
        free(q->books[b].prices);
    free(q->books);
    free(q->book_of);
    free(q->rentable);
    memset(q, 0, sizeof *q);
}

/* The units of every book the fabric's devices name, for a lease of
 * lease_ns from now (0: any ask still open now). 0 or -1 (printed). */
static int quote_take(quote *q, const synor_market *m, const synor_fabric *f, const char *region,
                      int has_buyer, uint32_t buyer, uint64_t now, uint64_t lease_ns)
{
    q->hours = lease_ns ? lease_ns / HOUR_NS : 1;
    size_t nd = synor_fabric_device_count(f);
    q->books = calloc(nd ? nd : 1, sizeof *q->books);
    q->book_of = calloc(nd ? nd : 1, sizeof *q->book_of);
    q->rentable = calloc(nd ? nd : 1, sizeof *q->rentable);
    synor_market_order *orders = malloc(MAX_UNITS * sizeof *orders);
    if (!q->books || !q->book_of || !q->rentable || !orders) {
        free(orders);
        cli_error("out of memory");
        return -1;
    }
    for (size_t i = 0; i < nd; i++) {
        const synor_fabric_device *fd = synor_fabric_device_at(f, i);
        char key[200];
        snprintf(key, sizeof key, "%s/%s/%s", synor_kind_name(synor_device_kind(fd->dev)),
                 fd->profile->id, region);
        size_t b = 0;
        while (b < q->n_books && strcmp(q->books[b].key, key))
            b++;
        if (b == q->n_books) {
            unit_book *u = &q->books[q->n_books++];
            snprintf(u->key, sizeof u->key, "%s", key);
            size_t n = 0;
            u->exists = synor_market_find_resource(m, key, &u->res) == 0;
            if (u->exists && synor_market_orders(m, u->res, SYNOR_ASK, orders, MAX_UNITS, &n) == 0) {
                for (size_t k = 0; k < n; k++) {
                    const synor_market_order *o = &orders[k];
                    if ((has_buyer && o->owner == buyer) ||
                        (o->expires && (o->expires <= now || o->expires - now < lease_ns)))
                        continue;
                    /* the size is checked before realloc (which may move u->prices);
                     * o points into orders: its qty is read before they are freed */
                    long long qty = (long long)o->qty;
                    int64_t *p = o->qty > MAX_UNITS
                                     ? NULL
                                     : realloc(u->prices, (u->n + (size_t)o->qty) * sizeof *p);
                    if (!p) {
                        free(orders);
                        cli_error("%s: cannot read %lld units of one ask", key, qty);
                        return -1;
                    }
                    u->prices = p;
                    for (int64_t k2 = 0; k2 < o->qty; k2++)
                        u->prices[u->n++] = o->price;
                    if (u->n >= MAX_UNITS)
                        break;
                }
            }
        }
        q->book_of[i] = b;
        unit_book *u = &q->books[b];
        q->rentable[i] = !u->exists ? -1 : (u->devices + 1) * q->hours <= u->n ? 1 : 0;
        u->devices++;
    }
    free(orders);
    return 0;
}

/* The fabric's prices from the quote, the devices without a unit left out
 * of a new cost matrix, then the plan. 0 or -1 (printed). */
static int plan_quoted(const quote *q, synor_fabric *f, const synor_workload *w,
                       const synor_plan_options *o, synor_cost **c, synor_plan **p)
{
    size_t nd = synor_fabric_device_count(f);
    size_t *rank = calloc(q->n_books ? q->n_books : 1, sizeof *rank);
    if (!rank) {
        cli_error("out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < nd && !rc; i++) {
        const unit_book *u = &q->books[q->book_of[i]];
        size_t k = rank[q->book_of[i]]++;
        if (q->rentable[i] == 1) /* the dearest of its units */
            rc = synor_fabric_set_price(f, i, u->prices[(k + 1) * q->hours - 1]);
    }
    free(rank);
    synor_cost_destroy(*c);
    *c = NULL;
    synor_plan_destroy(*p);
    *p = NULL;
    if (!rc)
        rc = synor_cost_create(w, f, c);
    for (size_t i = 0; i < nd && !rc; i++)
        if (q->rentable[i] == 0)
            rc = synor_cost_exclude_device(*c, i);
    if (!rc)
        rc = synor_plan_create(*c, o, p);
    if (rc) {
        cli_error("%s", synor_errmsg());
        return -1;
    }
    return 0;
}

/* The plan's time in whole hours, at least 1, in ns. */
static uint64_t lease_of(const synor_plan *p)
{
    double h = ceil((p->makespan + p->setup) / 3600.0);
    return h < 1 ? HOUR_NS : h > 1e6 ? 1000000ull * HOUR_NS : (uint64_t)h * HOUR_NS;
}

/* The plan's energy and, when the economics data (data/economics) knows
 * the region's grid, its carbon at the annual intensity. */
static void carbon_line(const synor_catalog *cat, const synor_plan *p, const synor_cost *c,
                        const char *region)
{
    double joules = 0;
    int64_t money = 0;
    if (synor__plan_cost_account(p, c, &joules, &money))
        return;
    double kwh = joules / 3.6e6;
    synor_econ *e = NULL;
    const synor_econ_carbon *ci = NULL;
    if (synor_econ_create(cat, &e) == 0 && synor_econ_load_builtin(e) == 0)
        ci = synor_econ_carbon_find(e, region);
    if (ci)
        printf("  energy %.6g J (%.6g kWh); carbon %.6g gCO2 at %s's %.1f gCO2/kWh (%s, %s)\n",
               joules, kwh, kwh * ci->gco2_per_kwh, region, ci->gco2_per_kwh, ci->period,
               ci->source);
    else
        printf("  energy %.6g J (%.6g kWh); carbon: no grid intensity for region %s in the "
               "economics data (region ids such as US-VA, DE)\n",
               joules, kwh, region);
    synor_econ_destroy(e);
}

/* Prints the quote; returns the money of the market's part (INT64_MAX when
 * it does not fit). */
static int64_t quote_print(quote *q, const synor_fabric *f, const synor_plan *p,
                           uint64_t lease_ns, const char *dir)
{
    size_t nd = synor_fabric_device_count(f);
    char *usedv = calloc(nd ? nd : 1, 1);
    for (size_t t = 0; usedv && t < p->n_tasks; t++)
        usedv[p->device[t]] = 1;
    for (size_t b = 0; b < q->n_books; b++)
        q->books[b].used = 0;
    for (size_t i = 0; usedv && i < nd; i++)
        if (usedv[i])
            q->books[q->book_of[i]].used++;
    double hours = (double)lease_ns / 3.6e12;
    printf("quote from the order book in %s: a lease of %llu h per device (the plan's %.6f s%s "
           "in whole device-hours, the market's unit)\n",
           dir, (unsigned long long)q->hours, p->makespan, p->setup > 0 ? " + setup" : "");
    int64_t total = 0, owned = 0;
    for (size_t b = 0; b < q->n_books; b++) {
        unit_book *u = &q->books[b];
        char price[32], money[32];
        if (!u->exists) {
            printf("  %-34s not on the market: %zu device(s), %zu used, at the fabric's price\n",
                   u->key, u->devices, u->used);
            continue;
        }
        size_t units = u->used * (size_t)q->hours; /* the cheapest that many */
        int64_t m = 0;
        for (size_t k = 0; k < units; k++)
            m = synor_money_add(m, u->prices[k]);
        total = synor_money_add(total, m);
        synor_money_format(units ? u->prices[units - 1] : 0, price, sizeof price);
        synor_money_format(m, money, sizeof money);
        printf("  %-34s %zu device-hour(s) on offer, %zu device(s) in the fabric, %zu used: "
               "%zu device-hour(s) at up to %s, %s\n",
               u->key, u->n, u->devices, u->used, units, price, money);
    }
    for (size_t i = 0; usedv && i < nd; i++)
        if (usedv[i] && q->rentable[i] == -1) {
            const synor_fabric_device *fd = synor_fabric_device_at(f, i);
            owned = synor_money_add(owned, synor_money_for_seconds(fd->price_micro,
                                                                   hours * 3600.0));
        }
    char t[32], o[32];
    synor_money_format(total, t, sizeof t);
    synor_money_format(owned, o, sizeof o);
    printf("  market total %s USD; devices not on the market at their fabric prices: %s USD\n",
           t, o);
    free(usedv);
    return total;
}

int cli_plan_market_opt(const char *cmd, cli_plan_market *pm, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--buy")) {
        pm->buy = 1;
        return 1;
    }
    if (*i + 1 >= argc)
        return 0;
    if (!strcmp(a, "--market"))
        pm->dir = argv[++*i];
    else if (!strcmp(a, "--region"))
        pm->region = argv[++*i];
    else if (!strcmp(a, "--owner"))
        pm->owner = argv[++*i];
    else if (!strcmp(a, "--budget")) {
        const char *v = argv[++*i];
        if (synor_money_parse(v, &pm->budget))
            return cli_usage_error(cmd, "--budget takes an amount in USD with at most 6 "
                                        "decimals, not '%s'", v), -1;
        pm->has_budget = 1;
    } else
        return 0;
    return 1;
}

int cli_plan_market_check(const char *cmd, const cli_plan_market *pm)
{
    if (!pm->dir && (pm->region || pm->owner || pm->buy || pm->has_budget))
        return cli_usage_error(cmd, "--region, --owner, --buy and --budget go with --market DIR");
    if (pm->dir && !pm->region)
        return cli_usage_error(cmd, "--market needs --region R: the books are "
                                    "<kind>/<profile>/R");
    if (pm->buy && !pm->owner)
        return cli_usage_error(cmd, "--buy needs --owner NAME: who holds the leases");
    if (!pm->buy && pm->owner)
        return cli_usage_error(cmd, "--owner names the buyer: it goes with --buy");
    return CLI_OK;
}

int cli_plan_market_run(const synor_catalog *cat, synor_fabric *f, const synor_workload *w,
                        const synor_plan_options *o, const cli_plan_market *pm)
{
    fills got = {0, 0, 0};
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    cfg.dir = pm->dir;
    cfg.read_only = !pm->buy;
    cfg.on_event = on_event;
    cfg.user_data = &got;
    synor_market *m;
    if (synor_market_open(&cfg, &m)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    if (synor_market_recovery_note(m)[0])
        fprintf(stderr, "synor plan: %s\n", synor_market_recovery_note(m));
    /* the buyer's own asks are not for it; a new buyer is registered only
     * when it buys */
    uint32_t buyer = 0;
    int has_buyer = pm->owner && synor_market_find_owner(m, pm->owner, &buyer) == 0;
    uint64_t now = now_ns(m);
    quote q = {0};
    synor_cost *c = NULL;
    synor_plan *p = NULL;
    int ret = CLI_FAIL;
    /* priced by what is open now; then again for the lease that plan needs */
    if (quote_take(&q, m, f, pm->region, has_buyer, buyer, now, 0) ||
        plan_quoted(&q, f, w, o, &c, &p))
        goto out;
    uint64_t lease = lease_of(p);
    quote_free(&q);
    if (quote_take(&q, m, f, pm->region, has_buyer, buyer, now, lease) ||
        plan_quoted(&q, f, w, o, &c, &p))
        goto out;
    if (lease_of(p) > lease) { /* a longer plan: its lease's quote, once more */
        lease = lease_of(p);
        quote_free(&q);
        if (quote_take(&q, m, f, pm->region, has_buyer, buyer, now, lease) ||
            plan_quoted(&q, f, w, o, &c, &p))
            goto out;
    }
    printf("plan (%s): makespan %.6f s on %s, priced by the market\n",
           synor_strategy_name(p->strategy), p->makespan, synor_fabric_name(f));
    int64_t total = quote_print(&q, f, p, lease, pm->dir);
    carbon_line(cat, p, c, pm->region);
    ret = CLI_OK;
    if (!p->deadline_met) {
        fprintf(stderr, "synor plan: the plan takes %.6f s, over the deadline of %.6f s%s\n",
                p->makespan, p->deadline, pm->buy ? ": nothing bought" : "");
        ret = CLI_DEADLINE;
        goto out;
    }
    if (pm->has_budget && total > pm->budget) {
        char t[32], b[32];
        synor_money_format(total, t, sizeof t);
        synor_money_format(pm->budget, b, sizeof b);
        fprintf(stderr, "synor plan: the quote, %s USD, is over the budget of %s USD%s\n", t, b,
                pm->buy ? ": nothing bought" : "");
        ret = CLI_DEADLINE;
        goto out;
    }
    if (!pm->buy)
        goto out;
    synor_market_cmd cmds[SYNOR_MARKET_BASKET_MAX];
    size_t n = 0;
    for (size_t b = 0; b < q.n_books; b++) {
        const unit_book *u = &q.books[b];
        if (!u->exists || !u->used)
            continue;
        if (n == SYNOR_MARKET_BASKET_MAX) {
            cli_error("the plan needs more than %d books; a basket holds %d",
                      SYNOR_MARKET_BASKET_MAX, SYNOR_MARKET_BASKET_MAX);
            ret = CLI_FAIL;
            goto out;
        }
        synor_market_cmd *cmd = &cmds[n];
        memset(cmd, 0, sizeof *cmd);
        cmd->kind = SYNOR_CMD_PLACE;
        cmd->time = now;
        cmd->order_id = now + n; /* ids from the time, as `synor market place` */
        cmd->owner = buyer;
        cmd->resource = u->res;
        cmd->side = SYNOR_BID;
        cmd->type = SYNOR_LIMIT;
        cmd->tif = SYNOR_FOK;
        cmd->price = u->prices[u->used * q.hours - 1];
        cmd->qty = (int64_t)(u->used * q.hours);
        cmd->duration = lease;
        n++;
    }
    if (n == 0) {
        printf("nothing to buy: the plan uses no device on the market\n");
        goto out;
    }
    if (!has_buyer && synor_market_owner(m, pm->owner, &buyer)) {
        cli_error("%s", synor_errmsg());
        ret = CLI_FAIL;
        goto out;
    }
    for (size_t k = 0; k < n; k++)
        cmds[k].owner = buyer;
    size_t at = 0;
    int why = 0;
    if (synor_market_submit_basket(m, cmds, n, &at, &why) || synor_market_commit(m)) {
        cli_error("%s", synor_errmsg());
        ret = CLI_FAIL;
        goto out;
    }
    if (why) {
        cli_error("not bought: the bid for %s was refused (%s: %s); nothing was bought",
                  synor_market_resource_key(m, cmds[at].resource), synor_market_reason_name(why),
                  synor_market_reason_text(why));
        ret = CLI_FAIL;
        goto out;
    }
    char money[32];
    synor_money_format(got.money, money, sizeof money);
    printf("bought: %zu bid(s) filled at once in %zu trade(s), %lld device-hour(s) for leases of "
           "%llu h, %s USD; order ids %llu..%llu (owner %s)\n",
           n, got.trades, (long long)got.units, (unsigned long long)q.hours, money,
           (unsigned long long)cmds[0].order_id, (unsigned long long)cmds[n - 1].order_id,
           pm->owner);
out:
    quote_free(&q);
    synor_plan_destroy(p);
    synor_cost_destroy(c);
    synor_market_close(m);
    return ret;
}
