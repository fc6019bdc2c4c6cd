/* test_plan_exact.c - the exact planner (src/plan/exact.c): its optimum
 * equals a plain reference search (every start-ordered append sequence,
 * no pruning rules but the incumbent) on random 7-10 task graphs, with
 * heterogeneous and with identical devices, a zero-length entry task, integral
 * costs and communication; a proven bound never exceeds the true optimum,
 * also when a node limit stops the search early; graphs of 22 and 24 tasks
 * proven optimal within fixed node budgets (deterministic, whatever the
 * machine's speed); a time limit returns a valid schedule with a bound
 * at most its makespan; the task limit. */
#include "synor.h"
#include "test.h"

#define MAXN 40
#define MAXD 4
#define MAXE 400
#include "plan_reference.h"

typedef struct rp {
    synor_sched_problem pb;
    double exec[MAXN * MAXD], lat[MAXD * MAXD], inv_bw[MAXD * MAXD], bytes[MAXE];
    size_t pred_off[MAXN + 1], pred[MAXE];
} rp;

/* Kinds of random problem: 0 heterogeneous with communication, 1 identical
 * devices with integral costs, a zero-length first task and no
 * communication (the STG model), 2 identical devices with communication. */
static void gen(rp *r, size_t n, size_t d, double p, int kind)
{
    memset(r, 0, sizeof *r);
    size_t e = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            if (rnd() < p && e < MAXE) {
                r->pred[e] = j;
                r->bytes[e++] = kind == 1 ? 0 : 1 + 20 * rnd();
            }
        r->pred_off[i + 1] = e;
        /* kind 1: integers 1..9 and a zero-length entry task, as in STG */
        double base = kind == 1 ? (i ? (double)(1 + (int)(9 * rnd())) : 0) : 1 + 9 * rnd();
        for (size_t q = 0; q < d; q++)
            r->exec[i * d + q] = kind ? base : base * (0.5 + rnd());
        if (kind == 0 && rnd() < 0.2)
            r->exec[i * d + (size_t)(rnd() * (double)d)] = INFINITY;
    }
    double l = rnd(), b = 0.05 + 0.2 * rnd();
    for (size_t q = 0; q < d * d; q++) {
        r->lat[q] = kind == 2 ? l : rnd();
        r->inv_bw[q] = kind == 2 ? b : 0.05 + 0.2 * rnd();
    }
    r->pb.n_tasks = n;
    r->pb.n_devices = d;
    r->pb.exec = r->exec;
    r->pb.pred_off = r->pred_off;
    r->pb.pred = r->pred;
    r->pb.pred_bytes = r->bytes;
    if (kind != 1) {
        r->pb.lat = r->lat;
        r->pb.inv_bw = r->inv_bw;
    }
}

static synor_plan *plan(const synor_sched_problem *pb, synor_strategy s, double time_limit,
                        uint64_t node_limit)
{
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = s;
    if (time_limit > 0)
        o.exact_time_limit = time_limit;
    o.exact_node_limit = node_limit;
    synor_plan *p = NULL;
    if (synor_plan_problem(pb, &o, &p))
        return NULL;
    if (synor_plan_validate(p, pb)) {
        fprintf(stderr, "  invalid %s plan: %s\n", synor_strategy_name(s), synor_errmsg());
        synor_plan_destroy(p);
        return NULL;
    }
    return p;
}

TEST(equals_the_reference_search)
{
    rng_state = 20261127;
    for (int k = 0; k < 36; k++) {
        int kind = k % 3;
        size_t n = 7 + (size_t)(rnd() * 4), d = 2 + (size_t)(rnd() * 2);
        rp r;
        gen(&r, n, d, 0.15 + 0.3 * rnd(), kind);
        synor_plan *h = plan(&r.pb, SYNOR_STRATEGY_HEFT, 0, 0);
        synor_plan *x = plan(&r.pb, SYNOR_STRATEGY_EXACT, 600, 0);
        ASSERT(h && x);
        double opt = reference(&r.pb, h->makespan);
        if (!x->optimal || fabs(x->makespan - opt) > 1e-9 * opt)
            fprintf(stderr, "  graph %d (kind %d, %zu tasks, %zu devices): exact %.17g%s, "
                            "reference %.17g\n",
                    k, kind, n, d, x->makespan, x->optimal ? "" : " (not proven)", opt);
        ASSERT(x->optimal);
        ASSERT_NEAR(x->makespan, opt, 1e-9);
        ASSERT_NEAR(x->bound, x->makespan, 1e-12);
        ASSERT(x->gap == 0);
        synor_plan_destroy(h);
        synor_plan_destroy(x);
    }
}

/* Stopped after a few nodes, what the search proved is still a bound of
 * the true optimum, and the schedule is valid and no worse than HEFT's. */
TEST(a_stopped_search_proves_only_true_bounds)
{
    rng_state = 77;
    for (int k = 0; k < 24; k++) {
        int kind = k % 3;
        size_t n = 8 + (size_t)(rnd() * 3), d = 2 + (size_t)(rnd() * 2);
        rp r;
        gen(&r, n, d, 0.3, kind);
        synor_plan *h = plan(&r.pb, SYNOR_STRATEGY_HEFT, 0, 0);
        ASSERT(h);
        double opt = reference(&r.pb, h->makespan);
        for (uint64_t limit = 5; limit <= 5000; limit *= 10) {
            synor_plan *x = plan(&r.pb, SYNOR_STRATEGY_EXACT, 600, limit);
            ASSERT(x);
            ASSERT(x->bound > 0);
            ASSERT(x->bound <= opt * (1 + 1e-9));
            ASSERT(x->bound <= x->makespan);
            ASSERT(x->makespan <= h->makespan * (1 + 1e-12));
            ASSERT(x->nodes <= limit);
            if (x->optimal)
                ASSERT_NEAR(x->makespan, opt, 1e-9);
            else
                ASSERT_NEAR(x->gap, (x->makespan - x->bound) / x->bound, 1e-12);
            synor_plan_destroy(x);
        }
        synor_plan_destroy(h);
    }
}

/* Proofs that need a search, within node budgets (nodes do not depend on
 * the machine's speed; about 900 and 185 000 nodes here): 24 tasks on 3
 * identical processors with integral times and no communication, and 22
 * heterogeneous tasks with communication on 3 devices. */
TEST(proves_graphs_of_over_20_tasks)
{
    static const struct {
        unsigned long long seed;
        size_t n;
        int kind;
        uint64_t budget;
    } C[] = {{12, 24, 1, 20000}, {16, 22, 0, 1000000}};
    for (size_t k = 0; k < sizeof C / sizeof *C; k++) {
        rng_state = C[k].seed;
        rp r;
        gen(&r, C[k].n, 3, 0.12, C[k].kind);
        synor_plan *x = plan(&r.pb, SYNOR_STRATEGY_EXACT, 600, C[k].budget);
        synor_plan *i = plan(&r.pb, SYNOR_STRATEGY_IMPROVE, 0, 0);
        ASSERT(x && i);
        fprintf(stderr, "  %zu tasks: makespan %g (improve %g), %llu nodes\n", C[k].n,
                x->makespan, i->makespan, (unsigned long long)x->nodes);
        ASSERT(x->optimal);
        ASSERT(x->nodes > 100); /* a search, not the root bound alone */
        ASSERT(x->bound == x->makespan);
        ASSERT(x->makespan <= i->makespan);
        synor_plan_destroy(i);
        synor_plan_destroy(x);
    }
}

/* A 30-task heterogeneous graph with communication under a short time
 * limit: a valid schedule no worse than improve's, a positive bound at most
 * its makespan (whether or not it is proven: the machine's speed decides). */
TEST(a_time_limit_returns_a_schedule_and_a_bound)
{
    rng_state = 11;
    rp r;
    gen(&r, 30, 4, 0.15, 0);
    synor_plan *i = plan(&r.pb, SYNOR_STRATEGY_IMPROVE, 0, 0);
    synor_plan *x = plan(&r.pb, SYNOR_STRATEGY_EXACT, 0.05, 0);
    ASSERT(i && x);
    ASSERT(x->makespan <= i->makespan * (1 + 1e-12));
    ASSERT(x->bound > 0);
    ASSERT(x->bound <= x->makespan);
    ASSERT(x->optimal ? x->gap == 0 : x->gap >= 0);
    synor_plan_destroy(i);
    synor_plan_destroy(x);
}

TEST(the_task_limit)
{
    static double exec[SYNOR_EXACT_MAX_TASKS + 1];
    static size_t off[SYNOR_EXACT_MAX_TASKS + 2];
    synor_sched_problem pb = {.n_tasks = SYNOR_EXACT_MAX_TASKS + 1, .n_devices = 1,
                              .exec = exec, .pred_off = off};
    for (size_t i = 0; i <= SYNOR_EXACT_MAX_TASKS; i++)
        exec[i] = 1;
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = SYNOR_STRATEGY_EXACT;
    synor_plan *p = NULL;
    ASSERT_EQ(synor_plan_problem(&pb, &o, &p), SYNOR_ERANGE);
    ASSERT(strstr(synor_errmsg(), "at most 1024 tasks, not 1025"));
    ASSERT(!p);
    ASSERT(o.exact_time_limit == SYNOR_EXACT_TIME_LIMIT_DEFAULT);
}

TEST_MAIN(equals_the_reference_search, a_stopped_search_proves_only_true_bounds,
          proves_graphs_of_over_20_tasks, a_time_limit_returns_a_schedule_and_a_bound,
          the_task_limit)
