/* test_sim_rebalance.c - when the simulated runtime rebalances on a
 * fabric with a device that shares the host's cores (src/sim/shplace.c,
 * synor_fabric_set_share_rebalance; docs/PLANNING.md "Placing as the
 * runtime does"): as the runtime's workers, at an event only once the
 * period has passed since the last rebalance, and at the period's end
 * while a worker that found nothing still polls (50 us). Explicit task
 * times and no contention, so every figure follows from the rule by hand;
 * period 0 is the event-only rebalancing of before, for comparison. */
#include <math.h>
#include <stdlib.h>

#include "common/common.h"
#include "synor.h"
#include "sim_fixture.h"
#include "test.h"

/* Two CPU workers and a shared device (no contention), one node. */
static const char *const FABRIC =
    "{\"format\": \"synor-fabric/1\", \"name\": \"shared\", \"currency\": \"USD\",\n"
    " \"nodes\": [{\"name\": \"host\"}],\n"
    " \"devices\": [\n"
    "  {\"name\": \"cpu\", \"profile\": \"amd-epyc-9654\", \"node\": \"host\", \"count\": 2},\n"
    "  {\"name\": \"ocl\", \"profile\": \"intel-xeon-8480plus\", \"node\": \"host\",\n"
    "   \"host_sharing\": {\"cpu_slowdown\": 1, \"slowdown\": 1}}]}";

/* Four low-priority tasks that run anywhere (1 s on a worker, 1.5 s on
 * the shared device), six that only the workers run (1 s, normal
 * priority: the workers take them first). */
static const char *const GATE =
    "{\"format\": \"synor-workload/1\", \"name\": \"gate\", \"tasks\": [\n"
    " {\"id\": \"y0\", \"priority\": \"low\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 1.5}},\n"
    " {\"id\": \"y1\", \"priority\": \"low\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 1.5}},\n"
    " {\"id\": \"y2\", \"priority\": \"low\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 1.5}},\n"
    " {\"id\": \"y3\", \"priority\": \"low\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 1.5}},\n"
    " {\"id\": \"x0\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x1\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x2\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x3\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x4\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x5\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}}]}";

/* Two tasks only the shared device runs (0.5 s), two long ones only the
 * workers run (3 s, first), seven more (1 s), then two low-priority ones
 * that run anywhere (1 s). */
static const char *const POLL =
    "{\"format\": \"synor-workload/1\", \"name\": \"poll\", \"tasks\": [\n"
    " {\"id\": \"o0\", \"exec_s\": {\"ocl\": 0.5}},\n"
    " {\"id\": \"o1\", \"exec_s\": {\"ocl\": 0.5}},\n"
    " {\"id\": \"z0\", \"exec_s\": {\"cpu.0\": 3, \"cpu.1\": 3}},\n"
    " {\"id\": \"z1\", \"exec_s\": {\"cpu.0\": 3, \"cpu.1\": 3}},\n"
    " {\"id\": \"x0\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x1\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x2\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x3\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x4\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x5\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"x6\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1}},\n"
    " {\"id\": \"y0\", \"priority\": \"low\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 1}},\n"
    " {\"id\": \"y1\", \"priority\": \"low\", \"exec_s\": {\"cpu.0\": 1, \"cpu.1\": 1, \"ocl\": 1}}]}";

static synor_catalog *cat;

/* Simulates work with the rebalance period (< 0: the fabric's default)
 * and the shared device's place scale (0: none). */
static int run_scaled(double period, double scale, const char *work, synor_trace **t)
{
    synor_fabric *f = NULL;
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        return -1;
    int rc = synor_fabric_load_string(cat, FABRIC, strlen(FABRIC), "shared.json", &f);
    if (!rc && period >= 0)
        rc = synor_fabric_set_share_rebalance(f, 2, period);
    if (!rc && scale > 0)
        rc = synor_fabric_set_share_place_scale(f, 2, scale);
    return simfx_run(rc, f, work, t);
}

static int run(double period, const char *work, synor_trace **t)
{
    return run_scaled(period, 0, work, t);
}


/* At release (as test_sim_shplace's MIXED): y0, y1 to the workers, y2 to
 * the shared device, y3 to the workers, the x's to the workers: 4.5 s
 * queued per worker, 1.5 s on the shared device. The rebalance at 0 moves
 * y3 there (4.5 > 1.5 + 1.5), then none (4 > 3 + 1.5 fails). The workers
 * take the x's first (normal before low): x's 0-1, 1-2, 2-3; the shared
 * device runs y2 0-1.5 and starts y3 at 1.5 (its backlog then 0).
 *
 * Event-only (period 0): at 1 (3 s per worker queued, 1.5 on the shared
 * device: 3 > 3 fails) and 1.5 (2 > 3 fails) nothing moves; at 2 the
 * workers hold x4, x5, y0, y1 (2 s each) against the shared device's 0:
 * y1 moves (2 > 0 + 1.5) and runs there after y3, 3 to 4.5; the workers
 * run x4, x5 2-3 and y0 3-4. Makespan 4.5.
 *
 * Period 1.2 s: the rebalance at 0 sets the next at 1.2; the ends at 1 are
 * before it; at 1.5 the first end runs one (nothing moves, 2 > 3 fails)
 * and sets 2.7; the ends at 2 are before it (no worker idle: no poll); at
 * 3 the shared device's end of y3 runs one: the workers' queue holds y0
 * and y1, 1 s each, against 0 + 1.5: nothing moves. The workers run y0
 * and y1 3-4; the shared device runs y2 and y3 only. Makespan 4. */
TEST(periodic_rebalance_differs_from_event_only)
{
    synor_trace *t = NULL;
    ASSERT_OK(run(0, GATE, &t));
    ASSERT_EQ(simfx_task(t, "y2")->device, 2);
    ASSERT_EQ(simfx_task(t, "y3")->device, 2);
    ASSERT_NEAR(simfx_task(t, "y3")->start, 1.5, 1e-12);
    ASSERT_EQ(simfx_task(t, "y1")->device, 2);
    ASSERT_NEAR(simfx_task(t, "y1")->start, 3, 1e-12);
    ASSERT_NEAR(simfx_task(t, "y1")->end, 4.5, 1e-12);
    ASSERT(simfx_task(t, "y0")->device != 2);
    ASSERT_NEAR(simfx_task(t, "y0")->start, 3, 1e-12);
    ASSERT_NEAR(t->makespan, 4.5, 1e-12);
    synor_trace_destroy(t);

    ASSERT_OK(run(1.2, GATE, &t));
    ASSERT_EQ(simfx_task(t, "y2")->device, 2);
    ASSERT_EQ(simfx_task(t, "y3")->device, 2);
    ASSERT_NEAR(simfx_task(t, "y3")->end, 3, 1e-12);
    ASSERT(simfx_task(t, "y1")->device != 2);
    ASSERT(simfx_task(t, "y0")->device != 2);
    ASSERT_NEAR(simfx_task(t, "y0")->start, 3, 1e-12);
    ASSERT_NEAR(simfx_task(t, "y1")->start, 3, 1e-12);
    ASSERT_NEAR(t->makespan, 4, 1e-12);
    synor_trace_destroy(t);
}

/* The poll (50 us): POLL with the shared device's estimate 4x its time
 * (place scale 4: o0, o1 2 s each, a y 4 s). At release the o's go there
 * (4 s queued), z0, z1, the x's (13 s over two workers: 6.5 each), then y0
 * (6.5 + 1 <= 4 + 4) and y1 (7 + 1 <= 8, a tie kept by the workers) to the
 * workers: 7.5 each. The rebalance at 0: 7.5 > 4 + 4 fails. The workers
 * start z0, z1 (0-3), the shared device o0 (0-0.5): 4.5 s queued per
 * worker (x's first, then the y's), 2 on the shared device. At 0.5 (4.5 >
 * 2 + 4 fails) it starts o1; at 1 it ends o1 and has nothing queued, and
 * no worker ends before 3.
 *   At every event (period 0): at 1, 4.5 > 0 + 4: y1 moves, runs 1-2.
 *   Period 1.00002 s: the rebalance at 1 is not due, but falls due 20 us
 *   later while the idle shared device's worker still polls: at 1.00002
 *   y1 moves and runs 1.00002-2.00002.
 *   Period 1.0001 s: due 100 us later, after the poll: the next rebalance
 *   is at 3 (z0's end), where y1 moves and runs 3-4.
 * The workers run the x's and y0 3-7 in every case. */
TEST(a_rebalance_due_while_a_worker_polls)
{
    synor_trace *t = NULL;
    const double period[3] = {0, 1.00002, 1.0001}, start[3] = {1, 1.00002, 3};
    for (int k = 0; k < 3; k++) {
        ASSERT_OK(run_scaled(period[k], 4, POLL, &t));
        ASSERT_EQ(simfx_task(t, "o1")->device, 2);
        ASSERT_NEAR(simfx_task(t, "o1")->end, 1, 1e-12);
        ASSERT_EQ(simfx_task(t, "y1")->device, 2);
        ASSERT_NEAR(simfx_task(t, "y1")->start, start[k], 1e-9);
        ASSERT_NEAR(simfx_task(t, "y1")->end, start[k] + 1, 1e-9);
        ASSERT(simfx_task(t, "y0")->device != 2);
        ASSERT_NEAR(t->makespan, 7, 1e-12);
        synor_trace_destroy(t);
    }
}

TEST(default_period_is_the_runtimes)
{
    synor_fabric *f = NULL;
    if (!cat)
        ASSERT_OK(synor_catalog_create(&cat) || synor_catalog_load_builtin(cat));
    ASSERT_OK(synor_fabric_load_string(cat, FABRIC, strlen(FABRIC), "shared.json", &f));
    ASSERT(synor_fabric_device_at(f, 2)->share_rebalance_s == SYNOR_FABRIC_SHARE_REBALANCE_S);
    ASSERT(synor_fabric_device_at(f, 0)->share_rebalance_s == 0);
    /* the setter: a shared device, a period in [0, 3600] */
    ASSERT_EQ(synor_fabric_set_share_rebalance(f, 9, 1), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "no device 9"));
    ASSERT_EQ(synor_fabric_set_share_rebalance(f, 0, 1), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "\"cpu.0\" does not share"));
    ASSERT_EQ(synor_fabric_set_share_rebalance(f, 2, -1), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "period -1"));
    ASSERT_EQ(synor_fabric_set_share_rebalance(f, 2, NAN), SYNOR_EINVAL);
    ASSERT_EQ(synor_fabric_set_share_rebalance(f, 2, 4000), SYNOR_EINVAL);
    ASSERT_OK(synor_fabric_set_share_rebalance(f, 2, 0.5));
    ASSERT(synor_fabric_device_at(f, 2)->share_rebalance_s == 0.5);
    /* declared again: kept; undone: gone; declared anew: the default */
    ASSERT_OK(synor_fabric_set_host_sharing(f, 2, 1.5, 1.2));
    ASSERT(synor_fabric_device_at(f, 2)->share_rebalance_s == 0.5);
    ASSERT_OK(synor_fabric_set_host_sharing(f, 2, 0, 0));
    ASSERT(synor_fabric_device_at(f, 2)->share_rebalance_s == 0);
    ASSERT_OK(synor_fabric_set_host_sharing(f, 2, 1, 1));
    ASSERT(synor_fabric_device_at(f, 2)->share_rebalance_s == SYNOR_FABRIC_SHARE_REBALANCE_S);
    synor_fabric_destroy(f);
    /* on GATE the default (1 ms) acts as event-only: every two events with
     * a rebalance between are at least 0.5 s apart */
    synor_trace *a = NULL, *b = NULL;
    ASSERT_OK(run(-1, GATE, &a));
    ASSERT_OK(run(0, GATE, &b));
    ASSERT_NEAR(a->makespan, b->makespan, 1e-12);
    ASSERT_EQ(simfx_task(a, "y1")->device, simfx_task(b, "y1")->device);
    synor_trace_destroy(a);
    synor_trace_destroy(b);
    synor_catalog_destroy(cat);
    cat = NULL;
}

TEST_MAIN(periodic_rebalance_differs_from_event_only, a_rebalance_due_while_a_worker_polls,
          default_period_is_the_runtimes)
