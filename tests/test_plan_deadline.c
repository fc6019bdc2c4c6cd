/* test_plan_deadline.c - energy and cost plans under deadlines (deadline.c):
 * on seeded random heterogeneous problems and a ladder of deadlines
 * D1 < D2 < ..., the objective (energy in joules, money in micro-units, as
 * the simulator accounts them) never increases while the deadline is met,
 * the deadline is met whenever the HEFT or PEFT plan meets it, a missed
 * deadline's makespan never increases, and every plan is a valid schedule.
 * Also: the single greedy pass these replace breaks monotonicity on the
 * same problems (so the checks can fail), workloads with memory hooks, and
 * hooks a caller made. */
#include "synor.h"
#include "plan/plan_internal.h"
#include "test.h"

static unsigned long long rng_state;

static double rnd(void) /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

#define MAXN 48
#define MAXD 4
#define MAXE (MAXN * 4)

typedef struct rproblem {
    synor_sched_problem pb;
    double exec[MAXN * MAXD], energy[MAXN * MAXD], lat[MAXD * MAXD], inv_bw[MAXD * MAXD];
    double bytes[MAXE], idle[MAXD];
    size_t pred_off[MAXN + 1], pred[MAXE];
    int64_t price[MAXD];
} rproblem;

/* Heterogeneous devices: fast ones draw more power and cost more; each task
 * has its own affinity, some tasks cannot run on one device. */
static void random_problem(rproblem *r, size_t n, size_t d)
{
    memset(r, 0, sizeof *r);
    double speed[MAXD], watts[MAXD];
    for (size_t q = 0; q < d; q++) {
        speed[q] = 0.25 + 2 * rnd();
        watts[q] = 20 + 300 * speed[q] * (0.5 + rnd());
        r->idle[q] = watts[q] * (0.05 + 0.3 * rnd());
        r->price[q] = (int64_t)(1e6 * speed[q] * (0.5 + 4 * rnd())) * 3600;
    }
    size_t e = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i > 8 ? i - 8 : 0; j < i; j++)
            if (rnd() < 0.3 && e < MAXE) {
                r->pred[e] = j;
                r->bytes[e++] = 1 + 20 * rnd();
            }
        r->pred_off[i + 1] = e;
        double base = 1 + 9 * rnd();
        for (size_t q = 0; q < d; q++) {
            double w = base / speed[q] * (0.5 + rnd());
            r->exec[i * d + q] = w;
            r->energy[i * d + q] = w * watts[q] * (0.7 + 0.6 * rnd());
        }
        if (rnd() < 0.15)
            r->exec[i * d + (size_t)(rnd() * (double)d)] = INFINITY;
    }
    for (size_t q = 0; q < d * d; q++) {
        r->lat[q] = 0.2 * rnd();
        r->inv_bw[q] = 0.01 + 0.05 * rnd();
    }
    r->pb.n_tasks = n;
    r->pb.n_devices = d;
    r->pb.exec = r->exec;
    r->pb.energy = r->energy;
    r->pb.pred_off = r->pred_off;
    r->pb.pred = r->pred;
    r->pb.pred_bytes = r->bytes;
    r->pb.lat = r->lat;
    r->pb.inv_bw = r->inv_bw;
    r->pb.idle_watts = r->idle;
    r->pb.price_micro = r->price;
}

/* The simulator's accounting, written out again as the oracle: energy =
 * active + idle power of every device while not busy within the makespan;
 * money = price of every device that ran a task, for the makespan. */
static void account(const synor_sched_problem *pb, const size_t *dev, const double *st,
                    const double *ft, double *ms, double *energy, int64_t *money)
{
    size_t n = pb->n_tasks, d = pb->n_devices;
    double busy[MAXD] = {0}, m = 0, e = 0;
    int used[MAXD] = {0};
    for (size_t i = 0; i < n; i++) {
        m = fmax(m, ft[i]);
        busy[dev[i]] += ft[i] - st[i];
        used[dev[i]] = 1;
        e += pb->energy[i * d + dev[i]];
    }
    int64_t mo = 0;
    for (size_t q = 0; q < d; q++) {
        e += pb->idle_watts[q] * fmax(0, m - busy[q]);
        if (used[q])
            mo = synor_money_add(mo, synor_money_for_seconds(pb->price_micro[q], m));
    }
    *ms = m;
    *energy = e;
    *money = mo;
}

typedef struct outcome {
    double ms, energy;
    int64_t money;
    int met;
} outcome;

static int plan_at(const synor_sched_problem *pb, synor_strategy s, double deadline, outcome *out)
{
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = s;
    o.deadline = deadline;
    synor_plan *p;
    int rc = synor_plan_problem(pb, &o, &p);
    if (rc)
        return rc;
    if ((rc = synor_plan_validate(p, pb))) {
        synor_plan_destroy(p);
        return rc;
    }
    account(pb, p->device, p->start, p->finish, &out->ms, &out->energy, &out->money);
    out->met = p->deadline_met;
    double e2;
    int64_t m2;
    rc = synor__sched_account(pb, p->device, p->start, p->finish, NULL, &e2, &m2);
    if (!rc && (m2 != out->money || fabs(e2 - out->energy) > 1e-9 * (1 + out->energy) ||
                out->ms != p->makespan || p->deadline != deadline ||
                out->met != (deadline <= 0 || p->makespan <= deadline)))
        rc = -1;
    synor_plan_destroy(p);
    return rc;
}

static double plain_makespan(const synor_sched_problem *pb, synor_strategy s)
{
    outcome o;
    return plan_at(pb, s, 0, &o) ? -1 : o.ms;
}

/* -1, 0, 1: a's objective below, equal, above b's. */
static int cmp(synor_strategy s, const outcome *a, const outcome *b)
{
    if (s == SYNOR_STRATEGY_COST)
        return a->money < b->money ? -1 : a->money > b->money;
    return a->energy < b->energy ? -1 : a->energy > b->energy;
}

#define LADDER 40

TEST(objective_monotone_and_deadline_met_on_random_problems)
{
    static const synor_strategy strat[] = {SYNOR_STRATEGY_ENERGY, SYNOR_STRATEGY_COST};
    rng_state = 2024;
    int improved = 0, missed = 0, met = 0;
    for (int round = 0; round < 24; round++) {
        rproblem rp;
        random_problem(&rp, 12 + (size_t)(rnd() * 36), 2 + (size_t)(rnd() * 3));
        double mh = plain_makespan(&rp.pb, SYNOR_STRATEGY_HEFT);
        double mp = plain_makespan(&rp.pb, SYNOR_STRATEGY_PEFT);
        ASSERT(mh > 0 && mp > 0);
        for (int k = 0; k < 2; k++) {
            synor_strategy s = strat[k];
            double mo = plain_makespan(&rp.pb, s), top = fmax(mo, mh) * 1.5;
            outcome prev = {0}, first = {0};
            int have_first = 0;
            for (int j = 0; j < LADDER; j++) {
                /* from 0.6 x HEFT's makespan to past the objective plan's,
                 * off any grid the planner uses */
                double D = 0.6 * mh + (top - 0.6 * mh) * (j + 0.37 * rnd()) / LADDER;
                outcome cur;
                ASSERT_OK(plan_at(&rp.pb, s, D, &cur));
                if (mh <= D || mp <= D)
                    ASSERT(cur.met);
                if (j > 0 && prev.met) {
                    if (!cur.met || cmp(s, &cur, &prev) > 0)
                        fprintf(stderr, "  round %d %s: D %.6g energy %.9g money %lld after "
                                        "%.9g %lld\n",
                                round, synor_strategy_name(s), D, cur.energy,
                                (long long)cur.money, prev.energy, (long long)prev.money);
                    ASSERT(cur.met);
                    ASSERT(cmp(s, &cur, &prev) <= 0);
                }
                if (j > 0 && !prev.met && !cur.met)
                    ASSERT(cur.ms <= prev.ms);
                if (cur.met && !have_first) {
                    first = cur;
                    have_first = 1;
                }
                missed += !cur.met;
                met += cur.met;
                prev = cur;
            }
            /* the loosest deadline: never worse than the objective's own
             * greedy plan or HEFT (both candidates) */
            outcome heft, own;
            ASSERT_OK(plan_at(&rp.pb, SYNOR_STRATEGY_HEFT, 0, &heft));
            synor_plan_options o;
            synor_plan_options_init(&o);
            o.strategy = s;
            synor_plan *p;
            ASSERT_OK(synor_plan_problem(&rp.pb, &o, &p));
            account(&rp.pb, p->device, p->start, p->finish, &own.ms, &own.energy, &own.money);
            synor_plan_destroy(p);
            ASSERT(cmp(s, &prev, &heft) <= 0);
            ASSERT(cmp(s, &prev, &own) <= 0);
            improved += have_first && cmp(s, &prev, &first) < 0;
        }
    }
    /* the ladder spans both regimes and looser deadlines do buy something */
    ASSERT(missed > 0 && met > 0);
    ASSERT(improved > 10);
}

/* The single greedy pass (each task finishes by its share of D) is what the
 * candidates replace: on the same problems it is not monotone. */
TEST(the_single_greedy_pass_is_not_monotone)
{
    rng_state = 2024;
    int violations = 0;
    for (int round = 0; round < 24; round++) {
        rproblem rp;
        random_problem(&rp, 12 + (size_t)(rnd() * 36), 2 + (size_t)(rnd() * 3));
        double mh = plain_makespan(&rp.pb, SYNOR_STRATEGY_HEFT);
        double prev_e = INFINITY;
        for (int j = 0; j < LADDER; j++) {
            double D = mh * (0.8 + 2.0 * j / LADDER);
            synor_plan_options o;
            synor_plan_options_init(&o);
            o.strategy = SYNOR_STRATEGY_ENERGY;
            o.deadline = D;
            size_t dev[MAXN];
            double st[MAXN], ft[MAXN], ms, e;
            int64_t m;
            ASSERT_OK(synor__list_schedule(&rp.pb, &o, NULL, dev, st, ft, NULL));
            account(&rp.pb, dev, st, ft, &ms, &e, &m);
            if (ms <= D) {
                violations += e > prev_e * (1 + 1e-12);
                prev_e = e;
            }
        }
    }
    ASSERT(violations > 0);
}

/* A workload whose weights do not fit on one device: synor_plan_create's
 * memory hooks are rewound before each candidate, so every plan is still
 * memory-aware and the ladder is monotone. */
TEST(workload_with_memory_hooks)
{
    synor_catalog *cat;
    synor_fabric *f;
    synor_llm_config m;
    synor_workload *w;
    synor_cost *c;
    synor_sched_problem *pb;
    ASSERT_OK(synor_catalog_create(&cat));
    ASSERT_OK(synor_catalog_load_builtin(cat));
    ASSERT_OK(synor_fabric_load_builtin(cat, "seed", &f));
    ASSERT_OK(synor_llm_preset("llama-2-70b", &m));
    ASSERT_OK(synor_decompose_llm_inference(&m, 1, 16, 2, &w));
    ASSERT_OK(synor_cost_create(w, f, &c));
    ASSERT_OK(synor_sched_problem_from_cost(c, &pb));
    synor_plan_options o;
    synor_plan_options_init(&o);
    synor_plan *p;
    ASSERT_OK(synor_plan_create(c, &o, &p));
    double mh = p->makespan;
    synor_plan_destroy(p);
    for (int k = 0; k < 2; k++) {
        o.strategy = k ? SYNOR_STRATEGY_COST : SYNOR_STRATEGY_ENERGY;
        double prev_e = INFINITY;
        int64_t prev_m = INT64_MAX;
        for (int j = 0; j < 6; j++) {
            o.deadline = mh * (0.9 + 0.5 * j);
            ASSERT_OK(synor_plan_create(c, &o, &p));
            ASSERT_OK(synor_plan_validate(p, pb));
            ASSERT(p->deadline_met || j == 0);
            double e;
            int64_t mo;
            ASSERT_OK(synor__sched_account(pb, p->device, p->start, p->finish, NULL, &e, &mo));
            if (j > 1) {
                ASSERT(k || e <= prev_e);
                ASSERT(!k || mo <= prev_m);
            }
            prev_e = e;
            prev_m = mo;
            /* the H100 (80 GiB) cannot hold all 138 GB of weights */
            size_t used[8] = {0};
            for (size_t i = 0; i < p->n_tasks; i++)
                used[p->device[i]]++;
            ASSERT(used[1] < p->n_tasks);
            synor_plan_destroy(p);
        }
    }
    synor_sched_problem_free(pb);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_catalog_destroy(cat);
}

TEST(no_tasks_and_the_json_members)
{
    size_t off[1] = {0};
    double idle[1] = {5};
    synor_sched_problem pb = {.n_tasks = 0, .n_devices = 1, .pred_off = off, .idle_watts = idle};
    outcome out;
    ASSERT_OK(plan_at(&pb, SYNOR_STRATEGY_COST, 1, &out));
    ASSERT(out.met && out.ms == 0 && out.money == 0);

    synor_catalog *cat;
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
    ASSERT_OK(synor_catalog_create(&cat));
    ASSERT_OK(synor_catalog_load_builtin(cat));
    ASSERT_OK(synor_fabric_load_builtin(cat, "seed", &f));
    ASSERT_OK(synor_workload_load_file(SYNOR_SOURCE_DIR "/workloads/pipeline.json", &w));
    ASSERT_OK(synor_cost_create(w, f, &c));
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = SYNOR_STRATEGY_ENERGY;
    o.deadline = 1e-9;
    synor_plan *p;
    ASSERT_OK(synor_plan_create(c, &o, &p));
    ASSERT(!p->deadline_met);
    char *j = synor_plan_to_json(p, c);
    ASSERT_CONTAINS(j, "\"deadline_s\": 1e-09");
    ASSERT_CONTAINS(j, "\"deadline_met\": false");
    ASSERT_CONTAINS(j, "\"shortfall_s\": ");
    ASSERT_CONTAINS(j, "\"energy_j\": ");
    ASSERT_CONTAINS(j, "\"money_micro\": ");
    free(j);
    synor_plan_destroy(p);
    o.deadline = 0;
    ASSERT_OK(synor_plan_create(c, &o, &p));
    ASSERT(p->deadline == 0 && p->deadline_met);
    j = synor_plan_to_json(p, c);
    ASSERT(!strstr(j, "deadline"));
    free(j);
    synor_plan_destroy(p);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_catalog_destroy(cat);
}

TEST_MAIN(objective_monotone_and_deadline_met_on_random_problems,
          the_single_greedy_pass_is_not_monotone, workload_with_memory_hooks,
          no_tasks_and_the_json_members)
