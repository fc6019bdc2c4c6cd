/* test_plan_weights.c - weights as data with a place (synor/plan.h): a
 * model too big for one device is planned one stage per GPU, replicas
 * count against memory, copies cost time in load mode and setup in preload
 * mode, the exact solver respects memory, and a plan that cannot fit names
 * the task, the device, the datum and the shortfall. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synor.h"
#include "test.h"

static synor_catalog *cat;

static synor_catalog *catalog(void)
{
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        return NULL;
    return cat;
}

/* S stages x M micro-batches: task (s, m) multiplies micro-batch m's
 * activations by stage s's weights (wbytes each). */
static int pipeline(size_t S, size_t M, uint64_t wbytes, synor_workload **out)
{
    synor_workload *w;
    int rc = synor_workload_create("pipeline", &w);
    if (rc)
        return rc;
    const uint64_t act = 4096ull * 16384 * 2;
    size_t prev[64];
    for (size_t s = 0; s < S && !rc; s++) {
        char name[32];
        size_t wi;
        snprintf(name, sizeof name, "w%zu", s);
        if ((rc = synor_workload_add_data(w, name, wbytes, &wi)))
            break;
        for (size_t m = 0; m < M && !rc; m++) {
            size_t in, outd;
            if (s == 0) {
                snprintf(name, sizeof name, "in.mb%zu", m);
                rc = synor_workload_add_data(w, name, act, &in);
            } else {
                in = prev[m];
            }
            snprintf(name, sizeof name, "act%zu.mb%zu", s, m);
            if (rc || (rc = synor_workload_add_data(w, name, act, &outd)))
                break;
            synor_task_desc t;
            memset(&t, 0, sizeof t);
            char id[32];
            snprintf(id, sizeof id, "s%zu.mb%zu", s, m);
            t.id = id;
            t.op.type = SYNOR_OP_MATMUL;
            t.op.dtype = SYNOR_DTYPE_BF16;
            t.op.dims.m = 4096;
            t.op.dims.n = 16384;
            t.op.dims.k = 16384;
            t.priority = SYNOR_PRIORITY_CRITICAL;
            size_t cons[2] = {in, wi};
            t.consumes = cons;
            t.n_consumes = 2;
            t.produces = &outd;
            t.n_produces = 1;
            if ((rc = synor_op_derive(&t.op)) || (rc = synor_workload_add_task(w, &t, NULL)))
                break;
            prev[m] = outd;
        }
    }
    if (!rc)
        rc = synor_workload_finish(w);
    if (rc) {
        synor_workload_destroy(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* The stage -> device map of a plan: every micro-batch of a stage on one
 * device, stages on distinct devices; 0 if not. */
static int one_stage_per_device(const synor_plan *p, size_t S, size_t M, size_t *dev_of)
{
    for (size_t s = 0; s < S; s++) {
        dev_of[s] = p->device[s * M];
        for (size_t m = 0; m < M; m++)
            if (p->device[s * M + m] != dev_of[s])
                return 0;
        for (size_t r = 0; r < s; r++)
            if (dev_of[r] == dev_of[s])
                return 0;
    }
    return 1;
}

/* The pipeline's makespan with stage s on dev_of[s], computed by hand from
 * the cost model: f(s, m) = max(f(s-1, m) + transfer, f(s, m-1)) + t(s, m). */
static double pipeline_bound(const synor_cost *c, size_t S, size_t M, const size_t *dev_of)
{
    double f[8][16] = {{0}};
    for (size_t s = 0; s < S; s++)
        for (size_t m = 0; m < M; m++) {
            size_t i = s * M + m;
            double r = m ? f[s][m - 1] : 0;
            if (s) {
                double a = f[s - 1][m] + synor_cost_edge(c, i, i - M, dev_of[s - 1], dev_of[s]);
                r = a > r ? a : r;
            }
            f[s][m] = r + synor_cost_time(c, i, dev_of[s]);
        }
    return f[S - 1][M - 1];
}

TEST(a_model_too_big_for_one_gpu_gets_one_stage_per_gpu)
{
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "four-h100", &f));
    ASSERT_OK(pipeline(4, 8, 60000000000ull, &w));
    ASSERT_OK(synor_cost_create(w, f, &c));
    synor_sched_problem *pb;
    ASSERT_OK(synor_sched_problem_from_cost(c, &pb));
    const synor_strategy st[] = {SYNOR_STRATEGY_HEFT, SYNOR_STRATEGY_PEFT, SYNOR_STRATEGY_ENERGY,
                                 SYNOR_STRATEGY_COST, SYNOR_STRATEGY_MIX,
                                 SYNOR_STRATEGY_GPU_ONLY};
    for (size_t k = 0; k < sizeof st / sizeof *st; k++) {
        synor_plan_options o;
        synor_plan_options_init(&o);
        o.strategy = st[k];
        synor_plan *p;
        ASSERT_OK(synor_plan_create(c, &o, &p));
        ASSERT_OK(synor_plan_validate(p, pb));
        size_t dev_of[4];
        ASSERT(one_stage_per_device(p, 4, 8, dev_of));
        for (size_t s = 0; s < 4; s++)
            ASSERT_EQ(synor_device_kind(synor_fabric_device_at(f, dev_of[s])->dev),
                      SYNOR_KIND_GPU);
        /* within 2% of the pipeline computed by hand for that split */
        double bound = pipeline_bound(c, 4, 8, dev_of);
        ASSERT(p->makespan <= bound * 1.02);
        ASSERT(p->makespan >= bound * 0.999);
        /* preload: the 60 GB copies are setup, at least one over PCIe */
        double one = synor_fabric_transfer_time(f, 0, dev_of[1], 60e9);
        ASSERT(p->setup >= one * 0.999);
        ASSERT(p->setup <= one * 1.1);
        ASSERT(p->makespan < p->setup / 10);
        /* the simulator follows it within a few percent */
        synor_trace *t;
        ASSERT_OK(synor_simulate(c, p, &t));
        ASSERT_NEAR(t->makespan, p->makespan, 0.05);
        synor_trace_destroy(t);
        synor_plan_destroy(p);
    }
    synor_sched_problem_free(pb);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
}

TEST(load_mode_puts_the_copies_on_the_clock)
{
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "four-h100", &f));
    ASSERT_OK(pipeline(4, 8, 60000000000ull, &w));
    ASSERT_OK(synor_cost_create(w, f, &c));
    synor_sched_problem *pb;
    ASSERT_OK(synor_sched_problem_from_cost(c, &pb));
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.weights = SYNOR_WEIGHTS_LOAD;
    synor_plan *p;
    ASSERT_OK(synor_plan_create(c, &o, &p));
    ASSERT_OK(synor_plan_validate(p, pb));
    ASSERT_EQ(p->setup, 0);
    ASSERT(p->n_loads >= 3);
    /* the last stage waits for its 60 GB, unless the host runs it */
    double one = synor_fabric_transfer_time(f, 0, 1, 60e9);
    ASSERT(p->makespan >= one * 0.999);
    synor_trace *t;
    ASSERT_OK(synor_simulate(c, p, &t));
    ASSERT(t->makespan >= one * 0.999);
    ASSERT_NEAR(t->makespan, p->makespan, 0.05);
    size_t weight_copies = 0;
    for (size_t i = 0; i < t->n_transfers; i++)
        weight_copies += t->transfers[i].data[0] == 'w';
    ASSERT(weight_copies >= 3);
    synor_trace_destroy(t);
    /* a plan that moves a task away from its weights breaks validation */
    size_t dev[32];
    memcpy(dev, p->device, sizeof dev);
    dev[31] = dev[0] == dev[31] ? dev[8] : dev[0];
    synor_plan moved = *p;
    moved.device = dev;
    ASSERT(synor_plan_validate(&moved, pb) != 0);
    synor_plan_destroy(p);
    synor_sched_problem_free(pb);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
}

TEST(exact_respects_memory)
{
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "four-h100", &f));
    ASSERT_OK(pipeline(2, 4, 60000000000ull, &w));
    ASSERT_OK(synor_cost_create(w, f, &c));
    synor_sched_problem *pb;
    ASSERT_OK(synor_sched_problem_from_cost(c, &pb));
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = SYNOR_STRATEGY_EXACT;
    synor_plan *p, *h;
    ASSERT_OK(synor_plan_create(c, &o, &p));
    ASSERT(p->optimal);
    ASSERT_OK(synor_plan_validate(p, pb)); /* within every device's memory */
    /* 2 x 60 GB exceed a GPU's 80 GB: no GPU runs both stages (with four
     * GPUs the optimum replicates each stage on two) */
    int stage_on[5][2] = {{0}};
    for (size_t i = 0; i < p->n_tasks; i++)
        stage_on[p->device[i]][i / 4] = 1;
    for (size_t d = 1; d < 5; d++)
        ASSERT(stage_on[d][0] + stage_on[d][1] <= 1);
    o.strategy = SYNOR_STRATEGY_HEFT;
    ASSERT_OK(synor_plan_create(c, &o, &h));
    ASSERT(p->makespan <= h->makespan * (1 + 1e-9));
    synor_plan_destroy(h);
    synor_plan_destroy(p);
    /* load mode: the optimum pays for its copies */
    o.strategy = SYNOR_STRATEGY_EXACT;
    o.weights = SYNOR_WEIGHTS_LOAD;
    ASSERT_OK(synor_plan_create(c, &o, &p));
    ASSERT_OK(synor_plan_validate(p, pb));
    ASSERT(p->optimal);
    synor_plan_destroy(p);
    synor_sched_problem_free(pb);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
}

TEST(a_plan_that_cannot_fit_names_the_device_the_datum_and_the_shortfall)
{
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "four-h100", &f));
    /* 7 TB of weights per stage: more than the host's 6 TiB */
    ASSERT_OK(pipeline(2, 2, 7000000000000ull, &w));
    int rc = synor_cost_create(w, f, &c);
    if (rc == 0) {
        for (int k = 0; k < 2; k++) {
            synor_plan_options o;
            synor_plan_options_init(&o);
            o.strategy = k ? SYNOR_STRATEGY_EXACT : SYNOR_STRATEGY_HEFT;
            synor_plan *p = NULL;
            ASSERT_EQ(synor_plan_create(c, &o, &p), SYNOR_ENOMEM);
            ASSERT(p == NULL);
            ASSERT_CONTAINS(synor_errmsg(), "task \"s0.mb0\"");
            ASSERT_CONTAINS(synor_errmsg(), "\"cpu\"");
            ASSERT_CONTAINS(synor_errmsg(), "datum \"w0\"");
            ASSERT_CONTAINS(synor_errmsg(), "short");
        }
        /* each stage fits a device alone, but not with the other: 3.5 TB
         * each on the host's 6 TiB, GPUs far too small */
        synor_cost_destroy(c);
        synor_workload_destroy(w);
        ASSERT_OK(pipeline(2, 2, 3500000000000ull, &w));
        ASSERT_OK(synor_cost_create(w, f, &c));
        for (int k = 0; k < 2; k++) {
            synor_plan_options o;
            synor_plan_options_init(&o);
            o.strategy = k ? SYNOR_STRATEGY_EXACT : SYNOR_STRATEGY_HEFT;
            synor_plan *p = NULL;
            ASSERT_EQ(synor_plan_create(c, &o, &p), SYNOR_ENOMEM);
            ASSERT_CONTAINS(synor_errmsg(), "task \"s1.mb0\" fits in no device's memory");
            ASSERT_CONTAINS(synor_errmsg(), "the closest is \"cpu\"");
            ASSERT_CONTAINS(synor_errmsg(), "datum \"w1\"");
            ASSERT_CONTAINS(synor_errmsg(), "short");
        }
        synor_cost_destroy(c);
    } else { /* the cost model already refuses a task bigger than any device */
        ASSERT_CONTAINS(synor_errmsg(), "s0.mb0");
    }
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
}

TEST(two_stages_that_fit_one_gpu_share_it)
{
    /* 30 GB per stage: both fit one 80 GB GPU, no copy between GPUs */
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "gpu-only", &f));
    ASSERT_OK(pipeline(2, 4, 30000000000ull, &w));
    ASSERT_OK(synor_cost_create(w, f, &c));
    synor_sched_problem *pb;
    ASSERT_OK(synor_sched_problem_from_cost(c, &pb));
    synor_plan *p;
    ASSERT_OK(synor_plan_create(c, NULL, &p));
    ASSERT_OK(synor_plan_validate(p, pb));
    for (size_t i = 0; i < p->n_tasks; i++)
        ASSERT_EQ(synor_device_kind(synor_fabric_device_at(f, p->device[i])->dev),
                  SYNOR_KIND_GPU);
    synor_plan_destroy(p);
    synor_sched_problem_free(pb);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
}

TEST(validate_checks_copies_and_memory)
{
    /* two devices, one item of 10 bytes homed on device 0; device 1 has
     * 15 bytes; task 0 on device 1 needs the item and 4 bytes of work */
    double exec[] = {1, 1}, bytes[] = {10}, mem[] = {100, 15}, tmem[] = {4};
    double lat[] = {0, 1, 1, 0}, inv[] = {0, 0.1, 0.1, 0};
    size_t off[] = {0, 0}, home[] = {0}, uoff[] = {0, 1}, use[] = {0};
    synor_sched_problem pb = {.n_tasks = 1, .n_devices = 2, .exec = exec, .pred_off = off,
                              .lat = lat, .inv_bw = inv, .n_items = 1, .item_bytes = bytes,
                              .item_home = home, .use_off = uoff, .use = use, .mem = mem,
                              .task_mem = tmem};
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.weights = SYNOR_WEIGHTS_LOAD;
    synor_plan *p;
    ASSERT_OK(synor_plan_problem(&pb, &o, &p));
    ASSERT_OK(synor_plan_validate(p, &pb));
    /* device 0 holds it from the start: no copy, it runs there at 0 */
    ASSERT_EQ(p->device[0], 0);
    ASSERT_EQ(p->n_loads, 0);
    synor_plan_destroy(p);
    /* by hand: on device 1, after a copy of 1 + 10 x 0.1 = 2 s */
    size_t dev[] = {1}, order[] = {0};
    double st[] = {2}, ft[] = {3};
    synor_plan_load ld = {0, 1, 0, 0, 2};
    synor_plan q = {.strategy = SYNOR_STRATEGY_HEFT, .n_tasks = 1, .n_devices = 2,
                    .device = dev, .start = st, .finish = ft, .order = order, .makespan = 3,
                    .weights = SYNOR_WEIGHTS_LOAD, .n_loads = 1, .loads = &ld};
    ASSERT_OK(synor_plan_validate(&q, &pb));
    st[0] = 1.5; /* before its weights are there */
    ft[0] = 2.5;
    ASSERT(synor_plan_validate(&q, &pb) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "before its item 0");
    st[0] = 2;
    ft[0] = 3;
    ld.finish = 1.5; /* a copy faster than its path */
    ASSERT(synor_plan_validate(&q, &pb) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "less than its cost");
    ld.finish = 2;
    q.n_loads = 0; /* no copy at all */
    ASSERT(synor_plan_validate(&q, &pb) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "never holds its item 0");
    q.n_loads = 1;
    tmem[0] = 6; /* 10 + 6 > 15 */
    ASSERT(synor_plan_validate(&q, &pb) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "more than its 15");
    /* and the planner then keeps the task on device 0 or fails: never 1 */
    mem[0] = 5; /* the home cannot run it either (10 + 6 > 5) */
    ASSERT_EQ(synor_plan_problem(&pb, &o, &p), SYNOR_ENOMEM);
}

/* Brute force, independent of the planner: every split of L layers into
 * contiguous stages on distinct devices in every order, timed by the
 * pipeline recurrence with the cost model (a stage's layers run one after
 * another per micro-batch; memory: the stage's weights and the largest
 * working memory fit the device). */
static double best_split(const synor_cost *c, const synor_fabric *f, size_t L, size_t M,
                         size_t *n_splits)
{
    size_t d = synor_fabric_device_count(f), cut[8], dev[8];
    double best = INFINITY;
    *n_splits = 0;
    for (size_t S = 1; S <= L && S <= d; S++) {
        /* cuts: 0 = cut[0] < cut[1] < ... < cut[S] = L */
        for (unsigned mask = 0; mask < (1u << (L - 1)); mask++) {
            if ((size_t)__builtin_popcount(mask) != S - 1)
                continue;
            size_t k = 0;
            cut[k++] = 0;
            for (size_t b = 1; b < L; b++)
                if (mask & (1u << (b - 1)))
                    cut[k++] = b;
            cut[k] = L;
            /* every ordered choice of S distinct devices */
            size_t total = 1;
            for (size_t s = 0; s < S; s++)
                total *= d;
            for (size_t code = 0; code < total; code++) {
                size_t x = code, ok = 1;
                for (size_t s = 0; s < S; s++, x /= d) {
                    dev[s] = x % d;
                    for (size_t r = 0; r < s; r++)
                        ok &= dev[r] != dev[s];
                }
                for (size_t s = 0; s < S && ok; s++) {
                    double bytes = 0, tm = 0;
                    for (size_t l = cut[s]; l < cut[s + 1]; l++) {
                        const synor_task *t = synor_workload_task(synor_cost_workload(c), l * M);
                        double wbytes = (double)synor_workload_data(synor_cost_workload(c),
                                                                    t->consumes[1])
                                            ->bytes,
                               work = (double)synor_cost_footprint(c, l * M) - wbytes;
                        bytes += wbytes;
                        tm = work > tm ? work : tm;
                    }
                    ok = bytes + tm <=
                         (double)synor_device_caps(synor_fabric_device_at(f, dev[s])->dev)
                             ->mem_bytes;
                }
                if (!ok)
                    continue;
                ++*n_splits;
                double fin[8][16] = {{0}};
                for (size_t s = 0; s < S; s++)
                    for (size_t m = 0; m < M; m++) {
                        double r = m ? fin[s][m - 1] : 0;
                        if (s) {
                            size_t i = cut[s] * M + m;
                            double a = fin[s - 1][m] +
                                       synor_cost_edge(c, i, i - M, dev[s - 1], dev[s]);
                            r = a > r ? a : r;
                        }
                        for (size_t l = cut[s]; l < cut[s + 1]; l++)
                            r += synor_cost_time(c, l * M + m, dev[s]);
                        fin[s][m] = r;
                    }
                if (fin[S - 1][M - 1] < best && getenv("SYNOR_TEST_VERBOSE")) {
                    printf("  split:");
                    for (size_t s = 0; s < S; s++)
                        printf(" [%zu,%zu)@%zu", cut[s], cut[s + 1], dev[s]);
                    printf(" %.6f\n", fin[S - 1][M - 1]);
                }
                best = fin[S - 1][M - 1] < best ? fin[S - 1][M - 1] : best;
            }
        }
    }
    return best;
}

TEST(the_pipeline_strategy_matches_the_best_contiguous_split)
{
    /* the 4-stage case, and 6 layers of 20 GB on the seed fabric (CPU,
     * H100, TPU v5p, LPU: no one device holds 120 GB but the CPU) */
    const char *fab[] = {"four-h100", "seed"};
    const size_t L[] = {4, 6}, M[] = {8, 8};
    const uint64_t wb[] = {60000000000ull, 20000000000ull};
    for (int k = 0; k < 2; k++) {
        synor_fabric *f;
        synor_workload *w;
        synor_cost *c;
        ASSERT_OK(synor_fabric_load_builtin(catalog(), fab[k], &f));
        ASSERT_OK(pipeline(L[k], M[k], wb[k], &w));
        ASSERT_OK(synor_cost_create(w, f, &c));
        synor_sched_problem *pb;
        ASSERT_OK(synor_sched_problem_from_cost(c, &pb));
        synor_plan_options o;
        synor_plan_options_init(&o);
        o.strategy = SYNOR_STRATEGY_PIPELINE;
        synor_plan *p;
        ASSERT_OK(synor_plan_create(c, &o, &p));
        ASSERT_OK(synor_plan_validate(p, pb));
        ASSERT_EQ(p->micro_batches, M[k]);
        ASSERT(p->n_stages >= 2);
        size_t splits;
        double best = best_split(c, f, L[k], M[k], &splits);
        ASSERT(splits > 0);
        printf("  %s: pipeline %.6f s in %zu stages, best of %zu splits %.6f s\n", fab[k],
               p->makespan, p->n_stages, splits, best);
        ASSERT(p->makespan <= best * 1.02);
        /* every stage's layers on its device */
        for (size_t s = 0; s < p->n_stages; s++)
            for (size_t l = p->stages[s].first_layer; l < p->stages[s].end_layer; l++)
                for (size_t m = 0; m < M[k]; m++)
                    ASSERT_EQ(p->device[l * M[k] + m], p->stages[s].dev);
        /* bounded buffers: a stage runs at most one micro-batch ahead */
        o.pipeline_buffers = 1;
        synor_plan *q;
        ASSERT_OK(synor_plan_create(c, &o, &q));
        ASSERT_OK(synor_plan_validate(q, pb));
        ASSERT_EQ(q->pipeline_buffers, 1);
        ASSERT(q->makespan >= p->makespan * (1 - 1e-12));
        for (size_t s = 0; s + 1 < q->n_stages; s++)
            for (size_t m = 1; m < M[k]; m++) {
                size_t here = q->stages[s].first_layer * M[k] + m,
                       next = q->stages[s + 1].first_layer * M[k] + m - 1;
                ASSERT(q->start[here] >= q->start[next] - 1e-12);
            }
        synor_plan_destroy(q);
        synor_plan_destroy(p);
        synor_sched_problem_free(pb);
        synor_cost_destroy(c);
        synor_workload_destroy(w);
        synor_fabric_destroy(f);
    }
}

TEST(a_forced_number_of_stages_is_what_the_plan_gets)
{
    /* 4 layers of 30 GB on four H100s: two fit one GPU; --stages 1..4 gives
     * exactly that many stages, each on its own device, layers in order */
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "four-h100", &f));
    ASSERT_OK(pipeline(4, 8, 30000000000ull, &w));
    ASSERT_OK(synor_cost_create(w, f, &c));
    synor_sched_problem *pb;
    ASSERT_OK(synor_sched_problem_from_cost(c, &pb));
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = SYNOR_STRATEGY_PIPELINE;
    for (size_t k = 1; k <= 4; k++) {
        o.pipeline_stages = k;
        synor_plan *p;
        ASSERT_OK(synor_plan_create(c, &o, &p));
        ASSERT_OK(synor_plan_validate(p, pb));
        ASSERT_EQ(p->n_stages, k);
        ASSERT_EQ(p->stages[0].first_layer, 0);
        ASSERT_EQ(p->stages[k - 1].end_layer, 4);
        for (size_t s = 0; s < k; s++) {
            ASSERT(p->stages[s].end_layer > p->stages[s].first_layer);
            if (s)
                ASSERT_EQ(p->stages[s].first_layer, p->stages[s - 1].end_layer);
            for (size_t r = 0; r < s; r++)
                ASSERT(p->stages[r].dev != p->stages[s].dev);
        }
        synor_plan_destroy(p);
    }
    o.pipeline_stages = 5; /* more than the devices and the layers */
    synor_plan *p = NULL;
    ASSERT_EQ(synor_plan_create(c, &o, &p), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "5 pipeline stages") != NULL);
    synor_sched_problem_free(pb);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
}

TEST_MAIN(a_model_too_big_for_one_gpu_gets_one_stage_per_gpu,
          a_forced_number_of_stages_is_what_the_plan_gets,
          the_pipeline_strategy_matches_the_best_contiguous_split,
          load_mode_puts_the_copies_on_the_clock, exact_respects_memory,
          a_plan_that_cannot_fit_names_the_device_the_datum_and_the_shortfall,
          two_stages_that_fit_one_gpu_share_it, validate_checks_copies_and_memory)
