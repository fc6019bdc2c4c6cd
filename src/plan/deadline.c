/* deadline.c - energy and cost plans under a deadline, and the planned
 * energy and money of any plan (synor/plan.h, plan_internal.h).
 *
 * The energy and cost strategies alone are one greedy pass: each task must
 * finish by its share of the deadline, so a looser deadline can give a
 * worse plan, and a deadline HEFT meets can be missed. Under a deadline D
 * they instead choose among candidate plans:
 *
 *   - the HEFT plan and the PEFT plan (the fastest the planner knows),
 *   - the objective's own plan without a deadline,
 *   - a ladder of greedy deadline passes (heft.c) for the targets
 *     g_k = M_H x r^k, k = 0, 1, ..., where M_H is the HEFT makespan and
 *     r = max(LADDER_MIN_RATIO, (M_O / M_H)^(1 / (LADDER_RUNGS - 1))), M_O
 *     the makespan of the objective's plan: at most LADDER_RUNGS rungs,
 *     from HEFT's makespan up to the objective plan's. Rungs are planned
 *     while g_k <= D, and one more (its plan may still finish by D).
 *
 * Each candidate is accounted as the simulator accounts a run (synor/sim.h)
 * on its planned times: energy = active energy of every task + idle power
 * of every device while it is not busy within the makespan; money = price
 * per hour of every device that runs a task, for the whole makespan. The
 * plan returned is the candidate with the least objective among those
 * whose makespan is <= D (ties: the shorter makespan, then the earlier
 * candidate); when none is, the fastest candidate (ties: the least
 * objective), and the plan says the deadline is missed.
 *
 * The grid depends on the problem only, never on D, and a looser deadline
 * plans a superset of the rungs, so by construction:
 *   - a met deadline: the objective never increases as D grows;
 *   - the deadline is met whenever HEFT's or PEFT's plan meets it;
 *   - a missed deadline: the makespan never increases as D grows.
 * Cost: at most LADDER_RUNGS + 3 list-scheduling passes (35 x a HEFT plan).
 *
 * Each pass is the caller's (plan.c: every weight placement of a list
 * strategy, keeping its best), so a candidate carries its weight copies. */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "json/json.h"
#include "plan/plan_internal.h"

#define LADDER_RUNGS 32
#define LADDER_MIN_RATIO 1.01

/* synor__sched_account on n tasks and d devices; a task's active energy
 * from energy[] (tasks x devices), else from the cost matrix c, else its
 * busy time. */
static int account(size_t n, size_t d, const double *energy_of, const synor_cost *c,
                   const double *idle_watts, const int64_t *price_micro, const size_t *dev,
                   const double *st, const double *ft, double *makespan, double *energy,
                   int64_t *money)
{
    unsigned char *used = synor__calloc(d ? d : 1, 1);
    if (!used)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    double ms = 0, active = 0, busy_idle = 0, idle_total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t p = dev[i];
        double w = ft[i] - st[i];
        ms = ft[i] > ms ? ft[i] : ms;
        active += energy_of ? energy_of[i * d + p] : c ? synor_cost_energy(c, i, p) : w;
        /* idle power is not drawn while the device is busy */
        busy_idle += (idle_watts ? idle_watts[p] : 0) * w;
        used[p] = 1;
    }
    int64_t m = 0;
    for (size_t p = 0; p < d; p++) {
        idle_total += idle_watts ? idle_watts[p] : 0;
        if (used[p] && price_micro)
            m = synor_money_add(m, synor_money_for_seconds(price_micro[p], ms));
    }
    synor__free(used);
    double idle = idle_total * ms - busy_idle;
    if (makespan)
        *makespan = ms;
    if (energy)
        *energy = active + (idle > 0 ? idle : 0);
    if (money)
        *money = m;
    return 0;
}

int synor__sched_account(const synor_sched_problem *pb, const size_t *dev, const double *st,
                         const double *ft, double *makespan, double *energy, int64_t *money)
{
    return account(pb->n_tasks, pb->n_devices, pb->energy, NULL, pb->idle_watts, pb->price_micro,
                   dev, st, ft, makespan, energy, money);
}

int synor__plan_cost_account(const synor_plan *p, const synor_cost *c, double *energy,
                             int64_t *money)
{
    const synor_fabric *f = synor_cost_fabric(c);
    size_t d = synor_fabric_device_count(f);
    if (synor_workload_count(synor_cost_workload(c)) != p->n_tasks || d != p->n_devices)
        return synor__error(SYNOR_EINVAL, "the plan is not of this workload and fabric");
    /* the figures synor_sched_problem_from_cost would give, without
     * building the problem (tasks x devices twice, for one entry a task) */
    double *idle = synor__malloc((d ? d : 1) * sizeof *idle);
    int64_t *price = synor__malloc((d ? d : 1) * sizeof *price);
    int rc = idle && price ? 0 : synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t q = 0; !rc && q < d; q++) {
        const synor_fabric_device *fd = synor_fabric_device_at(f, q);
        idle[q] = synor_device_caps(fd->dev)->idle_watts;
        price[q] = fd->price_micro;
    }
    if (!rc)
        rc = account(p->n_tasks, d, NULL, c, idle, price, p->device, p->start, p->finish, NULL,
                     energy, money);
    synor__free(idle);
    synor__free(price);
    return rc;
}

/* One candidate schedule and its figures. */
typedef struct cand {
    synor__sched s;
    double makespan, energy;
    int64_t money;
} cand;

static int cand_alloc(cand *c, size_t n)
{
    memset(c, 0, sizeof *c);
    c->s.dev = synor__malloc((n ? n : 1) * sizeof *c->s.dev);
    c->s.st = synor__malloc((n ? n : 1) * sizeof *c->s.st);
    c->s.ft = synor__malloc((n ? n : 1) * sizeof *c->s.ft);
    return c->s.dev && c->s.st && c->s.ft ? 0 : synor__error(SYNOR_ENOMEM, "out of memory");
}

static void cand_free(cand *c)
{
    synor__free(c->s.dev);
    synor__free(c->s.st);
    synor__free(c->s.ft);
    synor__free(c->s.log);
}

static void cand_swap(cand *a, cand *b)
{
    cand t = *a;
    *a = *b;
    *b = t;
}

/* -1, 0, 1 as a's objective is below, equal to or above b's. */
static int obj_cmp(synor_strategy s, const cand *a, const cand *b)
{
    if (s == SYNOR_STRATEGY_COST)
        return a->money < b->money ? -1 : a->money > b->money;
    return a->energy < b->energy ? -1 : a->energy > b->energy;
}

typedef struct search {
    const synor_sched_problem *pb;
    const synor_plan_options *o;
    synor__pass_fn pass;
    void *ctx;
    double deadline;
    cand work, best, fast; /* best meets the deadline; fast is the fastest */
    int have_best, have_fast;
    unsigned passes;
} search;

/* Plans one candidate with strategy s and target g (0 = none) and keeps it
 * if it is the best so far; *makespan gets its makespan. */
static int try_candidate(search *se, synor_strategy s, double g, double *makespan)
{
    synor_plan_options o = *se->o;
    o.strategy = s;
    o.deadline = g;
    int rc;
    cand *w = &se->work;
    if ((rc = se->pass(se->ctx, &o, &w->s)) ||
        (rc = synor__sched_account(se->pb, w->s.dev, w->s.st, w->s.ft, &w->makespan,
                                   &w->energy, &w->money)))
        return rc;
    se->passes++;
    *makespan = w->makespan;
    synor_strategy obj = se->o->strategy;
    if (w->makespan <= se->deadline &&
        (!se->have_best || obj_cmp(obj, w, &se->best) < 0 ||
         (obj_cmp(obj, w, &se->best) == 0 && w->makespan < se->best.makespan))) {
        cand_swap(w, &se->best);
        se->have_best = 1;
        return 0;
    }
    /* the fastest matters only while no candidate meets the deadline */
    if (!se->have_best &&
        (!se->have_fast || w->makespan < se->fast.makespan ||
         (w->makespan == se->fast.makespan && obj_cmp(obj, w, &se->fast) < 0))) {
        cand_swap(w, &se->fast);
        se->have_fast = 1;
    }
    return 0;
}

int synor__deadline_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                             synor__pass_fn pass, void *ctx, synor__sched *out)
{
    size_t n = pb->n_tasks;
    search se;
    memset(&se, 0, sizeof se);
    se.pb = pb;
    se.o = o;
    se.pass = pass;
    se.ctx = ctx;
    se.deadline = o->deadline;
    int rc;
    double m_heft, m_peft, m_obj;
    if ((rc = cand_alloc(&se.work, n)) || (rc = cand_alloc(&se.best, n)) ||
        (rc = cand_alloc(&se.fast, n)) ||
        (rc = try_candidate(&se, SYNOR_STRATEGY_HEFT, 0, &m_heft)) ||
        (rc = try_candidate(&se, SYNOR_STRATEGY_PEFT, 0, &m_peft)) ||
        (rc = try_candidate(&se, o->strategy, 0, &m_obj)))
        goto out;
    if (m_heft > 0) {
        double r = LADDER_MIN_RATIO;
        if (m_obj > m_heft && pow(m_obj / m_heft, 1.0 / (LADDER_RUNGS - 1)) > r)
            r = pow(m_obj / m_heft, 1.0 / (LADDER_RUNGS - 1));
        double g = m_heft, ms;
        for (int k = 0; k < LADDER_RUNGS; k++, g *= r) {
            if ((rc = try_candidate(&se, o->strategy, g, &ms)))
                goto out;
            if (g > se.deadline) /* the one rung above the deadline */
                break;
        }
    }
    cand *win = se.have_best ? &se.best : &se.fast;
    memcpy(out->dev, win->s.dev, n * sizeof *out->dev);
    memcpy(out->st, win->s.st, n * sizeof *out->st);
    memcpy(out->ft, win->s.ft, n * sizeof *out->ft);
    synor__free(out->log);
    out->log = win->s.log; /* taken */
    out->n_log = win->s.n_log;
    win->s.log = NULL;
out:
    cand_free(&se.work);
    cand_free(&se.best);
    cand_free(&se.fast);
    return rc;
}

/* --------------------------------------------------------------- JSON */

int synor__plan_json_account(synor__jw *j, const synor_plan *p, const synor_cost *c)
{
    double energy = 0;
    int64_t money = 0;
    int rc = synor__plan_cost_account(p, c, &energy, &money);
    if (rc)
        return rc;
    synor__jw_key(j, "energy_j");
    synor__jw_num(j, energy);
    synor__jw_key(j, "money_micro");
    synor__jw_int(j, money);
    synor__jw_key(j, "currency");
    synor__jw_str(j, synor_fabric_currency(synor_cost_fabric(c)));
    if (p->deadline > 0) {
        synor__jw_key(j, "deadline_s");
        synor__jw_num(j, p->deadline);
        synor__jw_key(j, "deadline_met");
        synor__jw_bool(j, p->deadline_met);
        synor__jw_key(j, "shortfall_s");
        synor__jw_num(j, p->deadline_met ? 0 : p->makespan - p->deadline);
    }
    return 0;
}
