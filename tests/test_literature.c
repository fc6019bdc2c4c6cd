/* test_literature.c - problems from the scheduling literature stated in a
 * workload file (explicit cost rows and edge costs): the Topcuoglu, Hariri &
 * Wu 2002 example planned by HEFT (makespan 80, the paper's schedule) and
 * by the exact solver (73, optimal), simulated to the same makespans; a cost
 * row matched against the fabric when the cost matrix is built, with errors
 * naming the task, the field and the value; explicit edges in the
 * simulator (exactly comm_s between distinct devices, on no link). */
#include "common/common.h"
#include "synor.h"
#include "test.h"

static synor_catalog *cat;

static synor_catalog *catalog(void)
{
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        return NULL;
    return cat;
}

typedef struct fixture {
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
} fixture;

static void teardown(fixture *x)
{
    synor_cost_destroy(x->c);
    synor_workload_destroy(x->w);
    synor_fabric_destroy(x->f);
    memset(x, 0, sizeof *x);
}

/* Loads a workload (text, or the file under the source tree when text is
 * NULL) on the built-in three-processors fabric; returns the cost matrix's
 * result. */
static int setup(fixture *x, const char *text)
{
    memset(x, 0, sizeof *x);
    int rc = synor_fabric_load_builtin(catalog(), "three-processors", &x->f);
    if (!rc)
        rc = text ? synor_workload_load_string(text, strlen(text), "w.json", &x->w)
                  : synor_workload_load_file(SYNOR_SOURCE_DIR "/workloads/topcuoglu-2002.json",
                                             &x->w);
    if (!rc)
        rc = synor_cost_create(x->w, x->f, &x->c);
    return rc;
}

static synor_plan *plan(const synor_cost *c, synor_strategy s)
{
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = s;
    synor_plan *p = NULL;
    if (synor_plan_create(c, &o, &p))
        fprintf(stderr, "  plan: %s\n", synor_errmsg());
    return p;
}

static size_t task(const fixture *x, const char *id)
{
    return (size_t)synor_workload_find_task(x->w, id);
}

TEST(topcuoglu_heft_80_exact_73)
{
    fixture x;
    ASSERT_OK(setup(&x, NULL));
    ASSERT_EQ(synor_workload_count(x.w), 10);
    /* the matrix is the file's: no roofline, energy = time x peak power */
    ASSERT(synor_cost_time(x.c, task(&x, "n1"), 2) == 9);
    ASSERT(synor_cost_time(x.c, task(&x, "n10"), 1) == 7);
    const synor_fabric_device *p1 = synor_fabric_device_at(x.f, 0);
    ASSERT_NEAR(synor_cost_energy(x.c, 0, 0), 14 * synor_device_caps(p1->dev)->peak_watts, 1e-12);
    ASSERT(synor_cost_edge(x.c, task(&x, "n2"), task(&x, "n1"), 0, 1) == 18);
    ASSERT(synor_cost_edge(x.c, task(&x, "n2"), task(&x, "n1"), 2, 2) == 0);
    synor_sched_problem *pb;
    ASSERT_OK(synor_sched_problem_from_cost(x.c, &pb));
    /* HEFT: the paper's schedule, Fig. 4(a) */
    synor_plan *h = plan(x.c, SYNOR_STRATEGY_HEFT);
    ASSERT(h);
    ASSERT_OK(synor_plan_validate(h, pb));
    ASSERT(h->makespan == 80);
    static const struct {
        const char *id;
        size_t dev;
        double start;
    } want[] = {{"n1", 2, 0},   {"n3", 2, 9},   {"n4", 1, 18},  {"n2", 0, 27}, {"n5", 2, 28},
                {"n6", 1, 26},  {"n9", 1, 56},  {"n7", 2, 38},  {"n8", 0, 57}, {"n10", 1, 73}};
    for (size_t k = 0; k < 10; k++) {
        size_t i = task(&x, want[k].id);
        ASSERT_EQ(h->device[i], want[k].dev);
        ASSERT(h->start[i] == want[k].start);
    }
    /* the optimum */
    synor_plan *e = plan(x.c, SYNOR_STRATEGY_EXACT);
    ASSERT(e);
    ASSERT_OK(synor_plan_validate(e, pb));
    ASSERT(e->makespan == 73 && e->optimal);
    /* the simulator follows both plans to the same makespans */
    synor_trace *t;
    ASSERT_OK(synor_simulate(x.c, h, &t));
    ASSERT(t->makespan == 80);
    ASSERT_EQ(t->n_transfers, 0); /* explicit edges use no link */
    for (size_t k = 0; k < t->n_tasks; k++) {
        size_t i = task(&x, t->tasks[k].id);
        ASSERT(t->tasks[k].start == h->start[i] && t->tasks[k].end == h->finish[i]);
    }
    synor_trace_destroy(t);
    ASSERT_OK(synor_simulate(x.c, e, &t));
    ASSERT(t->makespan == 73);
    synor_trace_destroy(t);
    synor_plan_destroy(h);
    synor_plan_destroy(e);
    synor_sched_problem_free(pb);
    teardown(&x);
}

#define HDR "{\"format\": \"synor-workload/1\", \"tasks\": [\n"

TEST(the_simulator_waits_exactly_comm_s)
{
    /* a on P1 (only), b on P2 (only), c anywhere but cheapest on P3: b
     * starts 5 s after a ends, c 2.5 s after b ends; the data a produces
     * travels with its edge, not over the host memory */
    fixture x;
    ASSERT_OK(setup(&x, HDR
                    " {\"id\": \"a\", \"exec_s\": {\"P1\": 1}, \"produces\": [{\"name\": \"d\", \"bytes\": 1000000000}]},\n"
                    " {\"id\": \"b\", \"exec_s\": [null, 2, null], \"consumes\": [{\"name\": \"d\"}],\n"
                    "  \"deps\": [{\"task\": \"a\", \"comm_s\": 5}]},\n"
                    " {\"id\": \"c\", \"exec_s\": [9, 9, 1], \"deps\": [{\"task\": \"b\", \"comm_s\": 2.5}]}]}"));
    ASSERT(isinf(synor_cost_time(x.c, 0, 1)) && isinf(synor_cost_time(x.c, 1, 0)));
    for (int dyn = 0; dyn < 2; dyn++) {
        synor_plan *p = dyn ? NULL : plan(x.c, SYNOR_STRATEGY_HEFT);
        ASSERT(dyn || p);
        synor_trace *t;
        ASSERT_OK(synor_simulate(x.c, p, &t));
        ASSERT_EQ(t->n_transfers, 0);
        ASSERT(t->tasks[1].start == 6 && t->tasks[1].end == 8);
        ASSERT(t->tasks[2].start == 10.5 && t->tasks[2].device == 2);
        ASSERT(t->makespan == 11.5);
        if (p)
            ASSERT(p->makespan == 11.5);
        synor_trace_destroy(t);
        synor_plan_destroy(p);
    }
    teardown(&x);
}

TEST(cost_rows_are_matched_against_the_fabric)
{
    fixture x;
    ASSERT_EQ(setup(&x, HDR " {\"id\": \"a\", \"exec_s\": [1, 2]}]}"), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "task \"a\": exec_s has 2 values but fabric "
                                    "\"three-processors\" has 3 devices (P1, P2, P3): an array "
                                    "gives one time per device, in that order");
    teardown(&x);
    ASSERT_EQ(setup(&x, HDR " {\"id\": \"a\", \"exec_s\": [1, 2, 3, 4]}]}"), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "exec_s has 4 values");
    teardown(&x);
    ASSERT_EQ(setup(&x, HDR " {\"id\": \"a\", \"exec_s\": {\"P2\": 1, \"gpu\": 2.5}}]}"),
              SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "task \"a\": exec_s.gpu = 2.5: fabric \"three-processors\" "
                                    "has no device \"gpu\"");
    teardown(&x);
    /* by name: devices not named cannot run the task */
    ASSERT_OK(setup(&x, HDR " {\"id\": \"a\", \"exec_s\": {\"P2\": 4}}]}"));
    ASSERT(isinf(synor_cost_time(x.c, 0, 0)) && synor_cost_time(x.c, 0, 1) == 4);
    ASSERT_EQ(synor_cost_feasible(x.c, 0), 1);
    teardown(&x);
    /* a row that runs nowhere: the planner names the task */
    ASSERT_OK(setup(&x, HDR " {\"id\": \"nowhere\", \"exec_s\": [null, null, null]}]}"));
    synor_plan *p = NULL;
    ASSERT_EQ(synor_plan_create(x.c, NULL, &p), SYNOR_ENODEV);
    ASSERT_CONTAINS(synor_errmsg(), "task \"nowhere\" (custom, fp32) can run on no device");
    teardown(&x);
}

TEST(cleanup)
{
    synor_catalog_destroy(cat);
    cat = NULL;
}

TEST_MAIN(topcuoglu_heft_80_exact_73, the_simulator_waits_exactly_comm_s,
          cost_rows_are_matched_against_the_fabric, cleanup)
