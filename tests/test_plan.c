/* test_plan.c - planners: every schedule valid (inputs arrive before a task
 * starts, no overlap on a device, only devices that can run the task), the
 * exact solver never worse than a heuristic on random small DAGs and equal
 * to them on trivial graphs, determinism, objectives and baselines on real
 * fabrics, memory-aware placement. */
#include "synor.h"
#include "test.h"

static unsigned long long rng_state;

static double rnd(void) /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

typedef struct rproblem {
    synor_sched_problem pb;
    double exec[16 * 4], lat[16], inv_bw[16], bytes[64];
    size_t pred_off[17], pred[64];
} rproblem;

/* A random DAG of n tasks on d devices: edges from earlier to later tasks
 * with probability p, heterogeneous costs, some tasks barred from a device. */
static void random_problem(rproblem *r, size_t n, size_t d, double p)
{
    memset(r, 0, sizeof *r);
    size_t e = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            if (rnd() < p && e < 64) {
                r->pred[e] = j;
                r->bytes[e++] = 1 + 20 * rnd();
            }
        r->pred_off[i + 1] = e;
        double base = 1 + 9 * rnd();
        for (size_t q = 0; q < d; q++)
            r->exec[i * d + q] = base * (0.5 + rnd());
        if (rnd() < 0.2)
            r->exec[i * d + (size_t)(rnd() * (double)d)] = INFINITY;
    }
    for (size_t q = 0; q < d * d; q++) {
        r->lat[q] = rnd();
        r->inv_bw[q] = 0.05 + 0.2 * rnd();
    }
    r->pb.n_tasks = n;
    r->pb.n_devices = d;
    r->pb.exec = r->exec;
    r->pb.pred_off = r->pred_off;
    r->pb.pred = r->pred;
    r->pb.pred_bytes = r->bytes;
    r->pb.lat = r->lat;
    r->pb.inv_bw = r->inv_bw;
}

static double plan_with(const synor_sched_problem *pb, synor_strategy s, int *ok)
{
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = s;
    synor_plan *p;
    *ok = 0;
    if (synor_plan_problem(pb, &o, &p))
        return -1;
    *ok = synor_plan_validate(p, pb) == 0;
    if (!*ok)
        fprintf(stderr, "  invalid %s plan: %s\n", synor_strategy_name(s), synor_errmsg());
    if (s == SYNOR_STRATEGY_EXACT && !p->optimal)
        *ok = 0;
    double ms = p->makespan;
    synor_plan_destroy(p);
    return ms;
}

TEST(exact_never_worse_than_heuristics)
{
    rng_state = 42;
    int heft_opt = 0, peft_opt = 0;
    const int rounds = 40;
    double heft_gap = 0;
    for (int r = 0; r < rounds; r++) {
        rproblem rp;
        random_problem(&rp, 5 + (size_t)(rnd() * 4), 2 + (size_t)(rnd() * 2), 0.3);
        int ok1, ok2, ok3, ok4, ok5;
        double h = plan_with(&rp.pb, SYNOR_STRATEGY_HEFT, &ok1);
        double pf = plan_with(&rp.pb, SYNOR_STRATEGY_PEFT, &ok2);
        double x = plan_with(&rp.pb, SYNOR_STRATEGY_EXACT, &ok3);
        double mx = plan_with(&rp.pb, SYNOR_STRATEGY_MIX, &ok4);
        double en = plan_with(&rp.pb, SYNOR_STRATEGY_ENERGY, &ok5);
        ASSERT(ok1 && ok2 && ok3 && ok4 && ok5);
        ASSERT(x <= h * (1 + 1e-9));
        ASSERT(x <= pf * (1 + 1e-9));
        ASSERT(x <= mx * (1 + 1e-9));
        ASSERT(x <= en * (1 + 1e-9));
        heft_opt += h <= x * (1 + 1e-9);
        peft_opt += pf <= x * (1 + 1e-9);
        heft_gap += h / x - 1;
    }
    /* the heuristics are good but not always optimal on these graphs */
    ASSERT(heft_opt > 0 && heft_opt < rounds);
    ASSERT(peft_opt > 0);
    ASSERT(heft_gap / rounds < 0.5);
}

/* The improve strategy is never worse than HEFT or PEFT, never better than
 * the optimum, and on these graphs closes part of HEFT's gap. */
TEST(improve_is_between_the_heuristics_and_the_optimum)
{
    rng_state = 4242;
    const int rounds = 40;
    int better = 0;
    double gap_h = 0, gap_i = 0;
    for (int r = 0; r < rounds; r++) {
        rproblem rp;
        random_problem(&rp, 6 + (size_t)(rnd() * 4), 2 + (size_t)(rnd() * 2), 0.3);
        int ok1, ok2, ok3, ok4;
        double h = plan_with(&rp.pb, SYNOR_STRATEGY_HEFT, &ok1);
        double pf = plan_with(&rp.pb, SYNOR_STRATEGY_PEFT, &ok2);
        double im = plan_with(&rp.pb, SYNOR_STRATEGY_IMPROVE, &ok3);
        double x = plan_with(&rp.pb, SYNOR_STRATEGY_EXACT, &ok4);
        ASSERT(ok1 && ok2 && ok3 && ok4);
        ASSERT(im <= h * (1 + 1e-12));
        ASSERT(im <= pf * (1 + 1e-12));
        ASSERT(im >= x * (1 - 1e-9));
        better += im < (h < pf ? h : pf) * (1 - 1e-9);
        gap_h += h / x - 1;
        gap_i += im / x - 1;
    }
    ASSERT(better > 0);
    ASSERT(gap_i < gap_h);
}

TEST(large_random_plans_are_valid)
{
    /* thousands of tasks per device: exercises the blocked timelines, gap
     * insertion between blocks and the bounded gap scan */
    rng_state = 7;
    size_t n = 6000, d = 3, cap = 3 * n;
    double *exec = malloc(n * d * sizeof *exec), *bytes = malloc(cap * sizeof *bytes);
    size_t *off = calloc(n + 1, sizeof *off), *pred = malloc(cap * sizeof *pred), e = 0;
    double lat[9], inv[9];
    for (size_t q = 0; q < 9; q++) {
        lat[q] = 0.5 * rnd();
        inv[q] = 0.1 * rnd();
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t q = 0; q < d; q++)
            exec[i * d + q] = 0.1 + 10 * rnd();
        int k = i ? 1 + (int)(rnd() * 3) : 0;
        for (int j = 0; j < k; j++) {
            size_t p = i - 1 - (size_t)(rnd() * (double)(i < 500 ? i : 500));
            int dup = 0;
            for (size_t q = off[i]; q < e; q++)
                dup |= pred[q] == p;
            if (!dup) {
                pred[e] = p;
                bytes[e++] = 20 * rnd();
            }
        }
        off[i + 1] = e;
    }
    synor_sched_problem pb = {.n_tasks = n, .n_devices = d, .exec = exec, .pred_off = off,
                              .pred = pred, .pred_bytes = bytes, .lat = lat, .inv_bw = inv};
    const synor_strategy ss[] = {SYNOR_STRATEGY_HEFT, SYNOR_STRATEGY_PEFT, SYNOR_STRATEGY_MIX,
                                 SYNOR_STRATEGY_ENERGY};
    for (size_t k = 0; k < 4; k++) {
        int ok;
        double ms = plan_with(&pb, ss[k], &ok);
        ASSERT(ok);
        /* better than running everything on the fastest single device */
        double serial = INFINITY;
        for (size_t q = 0; q < d; q++) {
            double sum = 0;
            for (size_t i = 0; i < n; i++)
                sum += exec[i * d + q];
            serial = fmin(serial, sum);
        }
        if (ss[k] != SYNOR_STRATEGY_ENERGY)
            ASSERT(ms < serial);
    }
    free(exec);
    free(bytes);
    free(off);
    free(pred);
}

TEST(heuristics_optimal_on_trivial_graphs)
{
    /* one task; two independent tasks on two devices; a chain with free
     * communication on identical devices */
    double exec1[] = {3, 2};
    size_t off1[] = {0, 0};
    synor_sched_problem a = {.n_tasks = 1, .n_devices = 2, .exec = exec1, .pred_off = off1};
    double exec2[] = {2, 3, 3, 2};
    size_t off2[] = {0, 0, 0};
    synor_sched_problem b = {.n_tasks = 2, .n_devices = 2, .exec = exec2, .pred_off = off2};
    double exec3[] = {1, 1, 2, 2, 3, 3};
    size_t off3[] = {0, 0, 1, 2}, pred3[] = {0, 1};
    double bytes3[] = {5, 5};
    synor_sched_problem c = {.n_tasks = 3, .n_devices = 2, .exec = exec3, .pred_off = off3,
                             .pred = pred3, .pred_bytes = bytes3};
    const synor_sched_problem *all[] = {&a, &b, &c};
    const double want[] = {2, 2, 6};
    for (int k = 0; k < 3; k++) {
        int ok;
        for (int s = 0; s < SYNOR_STRATEGY_COUNT; s++) {
            if (s == SYNOR_STRATEGY_ENERGY || s == SYNOR_STRATEGY_COST ||
                s == SYNOR_STRATEGY_CPU_ONLY || s == SYNOR_STRATEGY_GPU_ONLY ||
                s == SYNOR_STRATEGY_SEED)
                continue;
            double ms = plan_with(all[k], (synor_strategy)s, &ok);
            ASSERT(ok);
            ASSERT_NEAR(ms, want[k], 1e-12);
        }
    }
}

/* Six independent tasks; device 0 fast and hungry (1 s, 100 J), device 1
 * slow and frugal (3 s, 10 J). */
static double plan_energy(synor_strategy s, double deadline, double *makespan)
{
    double exec[12], energy[12];
    for (int i = 0; i < 6; i++) {
        exec[2 * i] = 1;
        energy[2 * i] = 100;
        exec[2 * i + 1] = 3;
        energy[2 * i + 1] = 10;
    }
    size_t off[7] = {0};
    synor_sched_problem pb = {.n_tasks = 6, .n_devices = 2, .exec = exec, .energy = energy,
                              .pred_off = off};
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = s;
    o.deadline = deadline;
    synor_plan *p;
    if (synor_plan_problem(&pb, &o, &p))
        return -1;
    double e = 0;
    for (size_t i = 0; i < 6; i++)
        e += energy[2 * i + p->device[i]];
    *makespan = p->makespan;
    synor_plan_destroy(p);
    return e;
}

TEST(energy_objective_and_deadline)
{
    double ms;
    /* HEFT: fast device 1, 2, 3, then the frugal one once it finishes first */
    ASSERT_NEAR(plan_energy(SYNOR_STRATEGY_HEFT, 0, &ms), 5 * 100 + 10, 1e-12);
    ASSERT_NEAR(ms, 5, 1e-12);
    /* minimum energy: everything on the frugal device */
    ASSERT_NEAR(plan_energy(SYNOR_STRATEGY_ENERGY, 0, &ms), 60, 1e-12);
    ASSERT_NEAR(ms, 18, 1e-12);
    /* under a 10 s deadline: frugal while it meets it (3, 6, 9 s), then fast */
    ASSERT_NEAR(plan_energy(SYNOR_STRATEGY_ENERGY, 10, &ms), 3 * 10 + 3 * 100, 1e-12);
    ASSERT(ms <= 10);
}

TEST(cost_objective_prefers_cheap_devices)
{
    /* a chain of four equal tasks on two equally fast devices: HEFT breaks
     * the tie toward device 0 (10.00 per hour), cost takes device 1 (1.00) */
    double exec[] = {2, 2, 2, 2, 2, 2, 2, 2};
    size_t off[] = {0, 0, 1, 2, 3}, pred[] = {0, 1, 2};
    double bytes[] = {1, 1, 1};
    int64_t price[] = {10000000, 1000000};
    synor_sched_problem pb = {.n_tasks = 4, .n_devices = 2, .exec = exec, .pred_off = off,
                              .pred = pred, .pred_bytes = bytes, .price_micro = price};
    synor_plan_options o;
    synor_plan_options_init(&o);
    synor_plan *h, *c;
    ASSERT_OK(synor_plan_problem(&pb, &o, &h));
    o.strategy = SYNOR_STRATEGY_COST;
    ASSERT_OK(synor_plan_problem(&pb, &o, &c));
    for (size_t i = 0; i < 4; i++) {
        ASSERT_EQ(h->device[i], 0);
        ASSERT_EQ(c->device[i], 1);
    }
    ASSERT_NEAR(c->makespan, h->makespan, 1e-12);
    synor_plan_destroy(h);
    synor_plan_destroy(c);
}

TEST(insertion_uses_gaps)
{
    /* t0 -> t2 with a long transfer unless t2 stays on dev 0; t1 is
     * independent and short: HEFT with insertion slots it before t2. */
    double exec[] = {1, 100, 1, 100, 1, 100};
    size_t off[] = {0, 0, 0, 1}, pred[] = {0};
    double bytes[] = {1};
    double lat[] = {0, 50, 50, 0};
    synor_sched_problem pb = {.n_tasks = 3, .n_devices = 2, .exec = exec, .pred_off = off,
                              .pred = pred, .pred_bytes = bytes, .lat = lat};
    synor_plan *p;
    ASSERT_OK(synor_plan_problem(&pb, NULL, &p));
    ASSERT_OK(synor_plan_validate(p, &pb));
    ASSERT_NEAR(p->makespan, 3, 1e-12);
    synor_plan_destroy(p);
}

TEST(validate_catches_violations)
{
    double exec[] = {1, 1, 1, 1};
    size_t off[] = {0, 0, 1}, pred[] = {0};
    double bytes[] = {1};
    synor_sched_problem pb = {.n_tasks = 2, .n_devices = 2, .exec = exec, .pred_off = off,
                              .pred = pred, .pred_bytes = bytes};
    size_t dev[] = {0, 0}, order[] = {0, 1};
    double st[] = {0, 0.5}, ft[] = {1, 1.5};
    synor_plan p = {.strategy = SYNOR_STRATEGY_HEFT, .n_tasks = 2, .n_devices = 2,
                    .device = dev, .start = st, .finish = ft, .order = order, .makespan = 1.5};
    ASSERT(synor_plan_validate(&p, &pb) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "before the input from task 0");
    st[1] = 1;
    ft[1] = 2;
    ASSERT_OK(synor_plan_validate(&p, &pb));
}

static synor_catalog *cat;

static synor_catalog *catalog(void)
{
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        return NULL;
    return cat;
}

TEST(every_strategy_on_the_seed_fabric)
{
    synor_fabric *f;
    synor_llm_config m;
    synor_workload *w;
    synor_cost *c;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "seed", &f));
    ASSERT_OK(synor_llm_preset("tiny", &m));
    m.dtype = SYNOR_DTYPE_BF16; /* the TPU computes in bf16, not fp32 */
    ASSERT_OK(synor_decompose_llm_inference(&m, 1, 32, 8, &w));
    ASSERT_OK(synor_cost_create(w, f, &c));
    synor_sched_problem *pb;
    ASSERT_OK(synor_sched_problem_from_cost(c, &pb));
    for (int s = 0; s < SYNOR_STRATEGY_COUNT; s++) {
        if (s == SYNOR_STRATEGY_EXACT)
            continue;
        synor_plan_options o;
        synor_plan_options_init(&o);
        o.strategy = (synor_strategy)s;
        synor_plan *p, *q;
        ASSERT_OK(synor_plan_create(c, &o, &p));
        ASSERT_OK(synor_plan_validate(p, pb));
        ASSERT_OK(synor_plan_create(c, &o, &q)); /* deterministic */
        ASSERT(memcmp(p->device, q->device, p->n_tasks * sizeof *p->device) == 0);
        ASSERT(memcmp(p->start, q->start, p->n_tasks * sizeof *p->start) == 0);
        for (size_t i = 0; i < p->n_tasks; i++) {
            synor_kind k = synor_device_kind(synor_fabric_device_at(f, p->device[i])->dev);
            if (s == SYNOR_STRATEGY_CPU_ONLY)
                ASSERT_EQ(k, SYNOR_KIND_CPU);
            if (s == SYNOR_STRATEGY_GPU_ONLY)
                ASSERT(k == SYNOR_KIND_GPU || k == SYNOR_KIND_CPU);
            const synor_task *t = synor_workload_task(w, i);
            if (s == SYNOR_STRATEGY_SEED && t->has_preferred &&
                t->op.type == SYNOR_OP_TOKENIZATION)
                ASSERT_EQ(k, SYNOR_KIND_CPU);
            if (s == SYNOR_STRATEGY_SEED && t->op.type == SYNOR_OP_TRANSFORMER_LAYER)
                ASSERT_EQ(k, SYNOR_KIND_TPU);
        }
        synor_plan_destroy(p);
        synor_plan_destroy(q);
    }
    synor_sched_problem_free(pb);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
}

TEST(a_model_too_big_for_one_gpu_is_refused_or_split)
{
    synor_fabric *gpu, *seed;
    synor_llm_config m;
    synor_workload *w;
    synor_cost *c;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "gpu-only", &gpu));
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "seed", &seed));
    ASSERT_OK(synor_llm_preset("llama-2-70b", &m)); /* bf16: 138 GB of weights */
    ASSERT_OK(synor_decompose_llm_inference(&m, 1, 16, 2, &w));
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = SYNOR_STRATEGY_GPU_ONLY;
    synor_plan *p;
    ASSERT_OK(synor_cost_create(w, gpu, &c));
    /* the H100 fills up; what does not fit goes to the host CPU */
    ASSERT_OK(synor_plan_create(c, &o, &p));
    size_t on_cpu = 0;
    for (size_t i = 0; i < p->n_tasks; i++)
        on_cpu += synor_device_kind(synor_fabric_device_at(gpu, p->device[i])->dev) ==
                  SYNOR_KIND_CPU;
    ASSERT(on_cpu > 2);
    synor_plan_destroy(p);
    synor_cost_destroy(c);
    /* HEFT on the seed fabric splits the layers between devices */
    ASSERT_OK(synor_cost_create(w, seed, &c));
    o.strategy = SYNOR_STRATEGY_HEFT;
    ASSERT_OK(synor_plan_create(c, &o, &p));
    uint64_t used[8] = {0};
    for (size_t i = 0; i < p->n_tasks; i++)
        used[p->device[i]] = 1;
    ASSERT(used[1] && used[2]); /* the H100 and the TPU both hold layers */
    synor_plan_destroy(p);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(gpu);
    synor_fabric_destroy(seed);
}

TEST(strategy_names)
{
    synor_strategy s;
    for (int k = 0; k < SYNOR_STRATEGY_COUNT; k++) {
        ASSERT_OK(synor_strategy_from_name(synor_strategy_name((synor_strategy)k), &s));
        ASSERT_EQ(s, k);
        ASSERT(strlen(synor_strategy_describe(s)) > 10);
    }
    ASSERT(synor_strategy_from_name("fastest", &s) != 0);
}

TEST(cleanup)
{
    synor_catalog_destroy(cat);
    cat = NULL;
}

TEST_MAIN(exact_never_worse_than_heuristics, improve_is_between_the_heuristics_and_the_optimum,
          large_random_plans_are_valid,
          heuristics_optimal_on_trivial_graphs,
          energy_objective_and_deadline, cost_objective_prefers_cheap_devices, insertion_uses_gaps, validate_catches_violations, every_strategy_on_the_seed_fabric,
          a_model_too_big_for_one_gpu_is_refused_or_split, strategy_names, cleanup)
