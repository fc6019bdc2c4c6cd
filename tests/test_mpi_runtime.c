/* test_mpi_runtime.c - the runtime across MPI ranks (synor/mpi.h) on one
 * rank: its contract (lifecycle, refused inserts, ownership as the
 * bookkeeping says), the two ready graphs against their serial reference,
 * and the progress thread with the runtime's workers (under TSan: label
 * "concurrency" through the word "runtime"). The runs across ranks are
 * tests/cli/mpi.sh (mpirun). */
#include <string.h>

#include "synor/error.h"
#include "synor/mpi.h"
#include "test.h"

static synor_runtime *rt;
static synor_mpi *m;

static int add1(const synor_task_ctx *c)
{
    float *a = c->buffers[0];
    for (size_t i = 0; i < synor_handle_dim(c->data[0], 0); i++)
        a[i] += 1.0f;
    return 0;
}
static const synor_kernel k_add1 = {.name = "add1", .op = SYNOR_OP_CUSTOM,
                                    .fn = {[SYNOR_KIND_CPU] = add1}};

TEST(inserts_run_in_program_order_and_ownership_follows_the_bookkeeping)
{
    float v[64] = {0};
    synor_handle_desc desc = {.ptr = v, .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {64}};
    synor_handle *h;
    synor_mpi_data *d;
    ASSERT_OK(synor_handle_register(rt, &desc, &h));
    ASSERT_OK(synor_mpi_data_register(m, h, 0, &d));
    ASSERT_EQ(synor_mpi_data_owner(d), 0);
    synor_mpi_stats s0, s1;
    synor_mpi_get_stats(m, &s0);
    synor_mpi_task t = {.kernel = &k_add1, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 1,
                        .data = {d}, .mode = {SYNOR_ACCESS_RW}, .rank = -1};
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(synor_mpi_task_insert(m, &t), 0);
    ASSERT_OK(synor_mpi_data_fetch(m, d, 0));
    ASSERT_OK(synor_mpi_wait_all(m));
    for (int i = 0; i < 64; i++)
        ASSERT_EQ((int)v[i], 100);
    synor_mpi_get_stats(m, &s1);
    ASSERT_EQ(s1.inserted - s0.inserted, 101);
    ASSERT_EQ(s1.executed_here - s0.executed_here, 101);
    ASSERT_EQ(s1.messages_sent - s0.messages_sent, 0);
    ASSERT_OK(synor_handle_unregister(h));
}

static int fail_kernel(const synor_task_ctx *c)
{
    (void)c;
    return SYNOR_EIO;
}
static const synor_kernel k_fail = {.name = "fails", .op = SYNOR_OP_CUSTOM,
                                    .fn = {[SYNOR_KIND_CPU] = fail_kernel},
                                    .flags = SYNOR_KERNEL_FAILS_BEFORE_WRITING};

/* Runs last: a failed task fails the context for good (this rank is out
 * of step with the others), promptly, naming the task. */
TEST(a_failed_task_fails_wait_all_and_later_inserts)
{
    float v[4] = {0};
    synor_handle_desc desc = {.ptr = v, .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {4}};
    synor_handle *h;
    synor_mpi_data *d;
    ASSERT_OK(synor_handle_register(rt, &desc, &h));
    ASSERT_OK(synor_mpi_data_register(m, h, 0, &d));
    synor_mpi_task t = {.kernel = &k_fail, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 1,
                        .data = {d}, .mode = {SYNOR_ACCESS_RW}, .rank = -1, .tag = 77};
    ASSERT_EQ(synor_mpi_task_insert(m, &t), 0);
    t.kernel = &k_add1;
    ASSERT_EQ(synor_mpi_task_insert(m, &t), 0); /* depends on it: cancelled */
    ASSERT_EQ(synor_mpi_wait_all(m), SYNOR_EIO);
    ASSERT_CONTAINS(synor_errmsg(), "fails");
    ASSERT_EQ(synor_mpi_wait_all(m), SYNOR_EIO);
    ASSERT_EQ(synor_mpi_task_insert(m, &t), SYNOR_EIO);
    ASSERT_EQ((int)v[0], 0);
    ASSERT_OK(synor_handle_unregister(h));
}

TEST(bad_inserts_are_refused)
{
    float v[4] = {0};
    synor_handle_desc desc = {.ptr = v, .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {4}};
    synor_handle *h;
    synor_mpi_data *d;
    ASSERT_OK(synor_handle_register(rt, &desc, &h));
    ASSERT_EQ(synor_mpi_data_register(m, h, 1, &d), SYNOR_EINVAL); /* one rank: owner 0 only */
    ASSERT(strstr(synor_errmsg(), "owner rank 1"));
    ASSERT_OK(synor_mpi_data_register(m, h, 0, &d));
    synor_mpi_task t = {.kernel = &k_add1, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 1,
                        .data = {d}, .mode = {SYNOR_ACCESS_RW}, .rank = 1};
    ASSERT_EQ(synor_mpi_task_insert(m, &t), SYNOR_EINVAL);
    t.rank = -1;
    t.data[0] = NULL;
    ASSERT_EQ(synor_mpi_task_insert(m, &t), SYNOR_EINVAL);
    t.data[0] = d;
    t.kernel = NULL;
    ASSERT_EQ(synor_mpi_task_insert(m, &t), SYNOR_EINVAL);
    t.kernel = &k_add1;
    t.args_size = SYNOR_TASK_MAX_ARGS + 1;
    t.args = v;
    ASSERT_EQ(synor_mpi_task_insert(m, &t), SYNOR_EINVAL);
    ASSERT_EQ(synor_mpi_data_fetch(m, d, -1), SYNOR_EINVAL);
    ASSERT_OK(synor_mpi_wait_all(m));
    ASSERT_EQ((int)v[0], 0); /* nothing ran */
    ASSERT_OK(synor_handle_unregister(h));
}

TEST(both_graphs_match_their_serial_reference_bitwise)
{
    for (int g = 0; g < 2; g++)
        for (int p = 0; p < 2; p++) {
            synor_mpi_graph_options o;
            synor_mpi_graph_options_init(&o);
            o.graph = (synor_mpi_graph)g;
            o.placement = (synor_mpi_placement)p;
            o.dim = 32;
            o.rows = 16;
            o.parts = 3; /* an odd count: the tree's last level has one pair */
            synor_mpi_graph_result r;
            ASSERT_OK(synor_mpi_graph_run(m, &o, &r));
            ASSERT_EQ(r.max_abs_diff, 0);
            ASSERT(r.checksum != 0);
            ASSERT_EQ(r.ranks_used, 1);
            ASSERT_EQ(r.messages, 0);
            ASSERT_EQ(r.tasks, g == 0 ? 3 * (3 + 3 + 2 + 3) : 3 * 8);
            ASSERT_EQ(r.outputs, g == 0 ? 32 * 32 : 8 * 16 * 32);
        }
    synor_mpi_graph_options o;
    synor_mpi_graph_options_init(&o);
    o.dim = 0;
    synor_mpi_graph_result r;
    ASSERT_EQ(synor_mpi_graph_run(m, &o, &r), SYNOR_EINVAL);
}

TEST(names_round_trip)
{
    synor_mpi_graph g;
    synor_mpi_placement p;
    ASSERT_OK(synor_mpi_graph_from_name("pipeline", &g));
    ASSERT_EQ(g, SYNOR_MPI_GRAPH_PIPELINE);
    ASSERT(strcmp(synor_mpi_graph_name(SYNOR_MPI_GRAPH_DATA_PARALLEL), "data-parallel") == 0);
    ASSERT_OK(synor_mpi_placement_from_name("plan", &p));
    ASSERT_EQ(p, SYNOR_MPI_PLACE_PLAN);
    ASSERT_EQ(synor_mpi_graph_from_name("ring", &g), SYNOR_EINVAL);
    ASSERT_EQ(synor_mpi_placement_from_name(NULL, &p), SYNOR_EINVAL);
    ASSERT(synor_mpi_graph_name((synor_mpi_graph)7) == NULL);
}

static void setup(void)
{
    synor_runtime_config cfg;
    synor_runtime_config_init(&cfg);
    cfg.cpu_workers = 2;
    cfg.pin_workers = 0;
    cfg.opencl = SYNOR_OPENCL_OFF;
    cfg.cuda = 0;
    synor_mpi *none = NULL;
    if (synor_mpi_create(NULL, &none) != SYNOR_EINVAL || none) {
        fprintf(stderr, "synor_mpi_create(NULL) was accepted\n");
        exit(1);
    }
    if (synor_mpi_init(NULL, NULL) < 0 || synor_runtime_create(&cfg, &rt) < 0 ||
        synor_runtime_start(rt) < 0 || synor_mpi_create(rt, &m) < 0) {
        fprintf(stderr, "setup: %s\n", synor_errmsg());
        exit(1);
    }
    if (synor_mpi_size(m) != 1 || synor_mpi_rank(m) != 0 || synor_mpi_runtime(m) != rt) {
        fprintf(stderr, "setup: not one rank\n");
        exit(1);
    }
    if (synor_mpi_init(NULL, NULL) != SYNOR_ESTATE) {
        fprintf(stderr, "setup: a second init was accepted\n");
        exit(1);
    }
}

static void teardown(void)
{
    synor_mpi_destroy(m);
    synor_runtime_destroy(rt);
    synor_mpi_finalize();
}

test_state test__s;

int main(void)
{
    setup();
    static const test_entry tests[] = {
        TEST__E(inserts_run_in_program_order_and_ownership_follows_the_bookkeeping,
                bad_inserts_are_refused, both_graphs_match_their_serial_reference_bitwise,
                names_round_trip, a_failed_task_fails_wait_all_and_later_inserts)};
    int rc = test__run(tests, sizeof tests / sizeof tests[0]);
    teardown();
    return rc;
}
