/* test_plan_exact_ilp.c - the exact planner's integer program for
 * P|prec|Cmax (src/plan/exact_ilp.c, GLPK): on a 9-task graph on 2
 * identical processors whose optimum (14) lies above both the critical
 * path and the load bound (13), a search stopped after one node proves the
 * optimum with the program and returns a valid schedule shorter than
 * improve's (16); without GLPK (the heuristic step alone) the same stopped
 * search proves only a bound below 14 (and the test says it is skipped). The random problems of
 * test_plan_exact.c (kind 1) check the program's schedules against a
 * reference search under node limits. */
#include "synor.h"
#include "test.h"

/* Tasks 1-7: lengths and predecessors found by a random search (seed 1374
 * of a 7-task generator); 0 is a zero-length entry, 8 a zero-length exit. */
static const double LEN[9] = {0, 5, 2, 1, 5, 4, 4, 5, 0};
static const size_t OFF[10] = {0, 0, 1, 2, 3, 4, 6, 7, 8, 15};
static const size_t PRED[15] = {0, 1, 0, 3, 2, 3, 2, 1, 1, 2, 3, 4, 5, 6, 7};

static synor_plan *plan(const synor_sched_problem *pb, synor_strategy s, uint64_t node_limit)
{
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = s;
    o.exact_time_limit = 600;
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

TEST(the_program_proves_what_a_stopped_search_cannot)
{
    double exec[9 * 2], bytes[15] = {0};
    for (size_t i = 0; i < 9; i++)
        exec[2 * i] = exec[2 * i + 1] = LEN[i];
    synor_sched_problem pb = {.n_tasks = 9, .n_devices = 2, .exec = exec, .pred_off = OFF,
                              .pred = PRED, .pred_bytes = bytes};
    synor_plan *i = plan(&pb, SYNOR_STRATEGY_IMPROVE, 0);
    synor_plan *x = plan(&pb, SYNOR_STRATEGY_EXACT, 1);
    ASSERT(i && x);
    ASSERT_NEAR(i->makespan, 16, 1e-12);
    ASSERT(x->nodes <= 1);
    if (!SYNOR_HAVE_GLPK) {
        /* the search alone: the root's bound, below the optimum */
        ASSERT(!x->optimal);
        ASSERT(x->bound < 14);
        synor_plan_destroy(i);
        synor_plan_destroy(x);
        TEST_SKIP("built without GLPK: the integer program is compiled out");
    }
    ASSERT(x->optimal);
    ASSERT_NEAR(x->makespan, 14, 1e-12);
    ASSERT_NEAR(x->bound, 14, 1e-12);
    ASSERT(x->gap == 0);
    synor_plan *f = plan(&pb, SYNOR_STRATEGY_EXACT, 0); /* the full search agrees */
    ASSERT(f && f->optimal);
    ASSERT_NEAR(f->makespan, 14, 1e-12);
    synor_plan_destroy(f);
    synor_plan_destroy(i);
    synor_plan_destroy(x);
}

/* The same graph made heterogeneous (processor 1 takes 1.5 times as
 * long), with communication (1 s on each edge between processors) or with
 * real-valued times (x 1.1): not P|prec|Cmax with integral times, so the
 * program does not apply and the search stopped after one node proves
 * nothing, whether or not GLPK is there. */
TEST(the_program_leaves_other_problems_alone)
{
    for (int k = 0; k < 3; k++) {
        double exec[9 * 2], bytes[15] = {0}, comm[15];
        for (size_t i = 0; i < 9; i++) {
            exec[2 * i] = LEN[i] * (k == 2 ? 1.1 : 1);
            exec[2 * i + 1] = LEN[i] * (k == 0 ? 1.5 : k == 2 ? 1.1 : 1);
        }
        for (size_t e = 0; e < 15; e++)
            comm[e] = k == 1 ? 1 : -1;
        synor_sched_problem pb = {.n_tasks = 9, .n_devices = 2, .exec = exec, .pred_off = OFF,
                                  .pred = PRED, .pred_bytes = bytes, .pred_comm = comm};
        synor_plan *x = plan(&pb, SYNOR_STRATEGY_EXACT, 1);
        ASSERT(x);
        fprintf(stderr, "  variant %d: makespan %g, bound %g\n", k, x->makespan, x->bound);
        ASSERT(!x->optimal);
        ASSERT(x->bound < x->makespan);
        synor_plan_destroy(x);
    }
}

TEST_MAIN(the_program_proves_what_a_stopped_search_cannot,
          the_program_leaves_other_problems_alone)
