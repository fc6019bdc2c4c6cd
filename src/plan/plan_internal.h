/* plan_internal.h - what the planner files share: the list scheduler
 * (heft.c), the exact solver (exact.c) and helpers on problems (plan.c).
 * Never installed. */
#ifndef SYNOR_PLAN_INTERNAL_H
#define SYNOR_PLAN_INTERNAL_H

#include <time.h>

#include "synor/plan.h"

struct synor__jw;

/* A topological order of the problem's tasks (ties: lowest index first);
 * SYNOR_EINVAL if the predecessor lists have a cycle. */
int synor__problem_topo(const synor_sched_problem *pb, size_t *order);

/* Seconds to move an edge of `bytes` from device p to q. */
static inline double synor__comm(const synor_sched_problem *pb, double bytes, size_t p, size_t q)
{
    if (p == q)
        return 0;
    size_t k = p * pb->n_devices + q;
    return (pb->lat ? pb->lat[k] : 0) + (pb->inv_bw ? bytes * pb->inv_bw[k] : 0);
}

/* Seconds to move edge e (an index into pred) from device p to q: its
 * explicit cost when the problem gives one, else its bytes. */
static inline double synor__edge_comm(const synor_sched_problem *pb, size_t e, size_t p, size_t q)
{
    if (p != q && pb->pred_comm && pb->pred_comm[e] >= 0)
        return pb->pred_comm[e];
    return synor__comm(pb, pb->pred_bytes ? pb->pred_bytes[e] : 0, p, q);
}

/* ------------------------------------------------ weights (weights.c) */

/* Where each weight is while a plan is built: which devices hold it and
 * from when, each device's held bytes and the time its copy engine is
 * free, and the log of the copies made (undone by truncating the log, as
 * the exact solver backtracks). */
typedef struct synor__wstate {
    const synor_sched_problem *pb;
    size_t d, k;          /* devices, items */
    int timed;            /* copies delay the tasks (load mode, or pricing) */
    int single;           /* at most one holder besides the home */
    double *ready;        /* [dev * k + item]: when it is there; INFINITY = not */
    double *held;         /* bytes per device */
    double *chan;         /* per device: when its copy engine is free */
    size_t *holders;      /* per item: devices holding it besides its home */
    double *maxtm;        /* per device: the largest working memory placed */
    synor_plan_load *log;
    double *log_chan;     /* the channel's time before each copy */
    size_t n_log, cap_log;
    struct synor__wcommit {
        size_t dev, log_mark;
        double maxtm;
    } *commits;           /* one per task placed, for undo */
    size_t n_commits, cap_commits;
} synor__wstate;

/* Why a task fits nowhere: the device that came closest. */
typedef struct synor__nofit {
    size_t task, dev, item; /* item SIZE_MAX: the working memory alone */
    double need, cap;
} synor__nofit;

int synor__ws_init(synor__wstate *ws, const synor_sched_problem *pb, int timed, int single);
void synor__ws_free(synor__wstate *ws);
/* Whether task i may run on p as things stand: 1 with *ready (when its
 * weights are there: 0 when untimed) or 0, with the shortfall in *nf when
 * it is memory (nf->need > nf->cap) and nf->need = 0 when the one-holder
 * rule forbids it. */
int synor__ws_probe(const synor__wstate *ws, size_t i, size_t p, double *ready,
                    synor__nofit *nf);
/* Puts task i's missing weights on p (the copies probe priced). */
int synor__ws_commit(synor__wstate *ws, size_t i, size_t p);
/* Undoes the placements after the first `mark` ones (ws->n_commits), with
 * their copies. */
void synor__ws_undo(synor__wstate *ws, size_t mark);
/* The setup time of the copies in the log when they are made before the
 * run: per device one after another, devices in parallel. */
double synor__ws_setup(const synor__wstate *ws);

/* ------------------------------------------------------------ planners */

/* The pipeline strategy's split (pipeline.c): fills dev_of (per task, the
 * device of its stage, SIZE_MAX for a task in no layer), mb_of (its
 * micro-batch), order (the tasks micro-batch by micro-batch, a
 * topological order), the stages (synor__free them), the estimated
 * makespan of the split and the micro-batches it assumed (micro_batches 0
 * = found from the graph). stages_wanted: exactly that many stages (0 =
 * the best number). */
int synor__pipeline_split(const synor_sched_problem *pb, size_t micro_batches, size_t stages_wanted,
                          size_t *dev_of, size_t *mb_of, size_t *order,
                          synor_plan_stage **stages, size_t *n_stages, double *estimate,
                          size_t *m_used);


/* The list-scheduling strategies (everything but exact). Fills dev, st, ft
 * (n_tasks each); with ws (NULL when the problem has no weights and no
 * memory), places the weights and records the copies in it, and on
 * failure for memory fills *nf. */
int synor__list_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                         synor__wstate *ws, size_t *dev, double *st, double *ft,
                         synor__nofit *nf);

/* HEFT's order and insertion with every task on assign[task]: the
 * schedule HEFT would make had it chosen those devices (its own choices
 * give its own schedule). No weights or groups. */
int synor__list_schedule_fixed(const synor_sched_problem *pb, const size_t *assign, size_t *dev,
                               double *st, double *ft);

/* improve.c: the best of HEFT and PEFT, then a local search that moves
 * tasks of the critical path to other devices while the makespan drops
 * (fills dev, st, ft; never worse than HEFT's or PEFT's schedule). */
int synor__improve_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                            size_t *dev, double *st, double *ft);

/* What the exact solver proved: optimal (1 when the schedule returned is
 * proven optimal), the lower bound of every schedule's makespan it proved
 * (the makespan itself when optimal) and the search nodes visited. */
typedef struct synor__exact_result {
    int optimal;
    double bound;
    uint64_t nodes;
} synor__exact_result;

/* Branch and bound within o's time and node limits; dev/st/ft hold an
 * incumbent on entry (or ft[0] < 0 for none) and the best schedule found
 * on return; ws as for list scheduling: on entry it holds the incumbent's
 * copies (or none), on return the best schedule's. */
int synor__exact_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                          synor__wstate *ws, size_t *dev, double *st, double *ft,
                          synor__exact_result *res);

/* exact_ilp.c: whether the problem is P|prec|Cmax - identical devices, no
 * communication, integral times, no weights, memory or groups. */
int synor__exact_ilp_applies(const synor_sched_problem *pb);

/* For such a problem, until t_end (monotonic): a heuristic, then (with
 * GLPK) decides makespans ceil(*bound), ..., *best - 1 in turn with a
 * time-indexed integer program: each infeasible one raises *bound; the
 * first feasible one is the optimum. A shorter schedule found replaces
 * dev/st/ft and *best (optimal when *best reaches *bound). Does nothing for
 * other problems. 0 or SYNOR_ENOMEM. */
int synor__exact_ilp(const synor_sched_problem *pb, const struct timespec *t_end, size_t *dev,
                     double *st, double *ft, double *best, double *bound);

/* exact_comm.c: the allocation-first search (devices, then the order on
 * them) for problems without weights, memory or groups. in: the problem,
 * a topological order, exact.c's bottom levels [task * d + dev] and least
 * times per task, the first device interchangeable with each (or NULL),
 * whether all times are integers, the deadline and node budget, and the
 * incumbent's makespan (dev/st/ft hold it). On return dev/st/ft hold the
 * best schedule; out says whether the search was exhausted (then it is
 * optimal) and the bound proved. */
typedef struct synor__exact_comm_in {
    const synor_sched_problem *pb;
    const size_t *topo, *cls;
    const double *bl, *minw;
    int integral;
    struct timespec t_end;
    uint64_t node_limit;
    double best;
    uint64_t first_nodes, probe_nodes; /* the first order's node cap and the
                                          probes' first budget; 0: 500,000
                                          and 200,000 (tests set small ones) */
} synor__exact_comm_in;

typedef struct synor__exact_comm_out {
    double best, bound;
    uint64_t nodes;
    int exhausted;
} synor__exact_comm_out;

int synor__exact_comm(const synor__exact_comm_in *in, size_t *dev, double *st, double *ft,
                      synor__exact_comm_out *out);

/* exact_bound.c, for exact_comm.c. Jackson's rule: jobs (w, q) on one
 * machine from time 0, each followed by its tail q: the least makespan
 * (the jobs by tail, largest first). Sorts them. */
double synor__jackson(double *w, double *q, size_t k);
/* Jobs with heads r and times w one at a time: the earliest all are done
 * (by head). Sorts them. */
double synor__serial(double *r, double *w, size_t k);

/* plan.c: plans a problem (every strategy); on a memory miss fills nf. */
int synor__plan_problem(const synor_sched_problem *pb, const synor_plan_options *opt,
                        synor__nofit *nf, synor_plan **out);

/* One schedule with its weight copies, as a planning pass fills it. */
typedef struct synor__sched {
    size_t *dev;
    double *st, *ft;
    synor_plan_load *log; /* synor__malloc'd; NULL when there are none */
    size_t n_log;
} synor__sched;

/* A planning pass: plans with o into out (whose arrays hold n_tasks;
 * out->log is replaced, the old one freed). */
typedef int (*synor__pass_fn)(void *ctx, const synor_plan_options *o, synor__sched *out);

/* deadline.c: energy and cost under o->deadline > 0. Plans the candidates
 * (HEFT, PEFT, the objective without deadline, a ladder of deadline passes)
 * with pass and fills out with the best that meets the deadline, else the
 * fastest. */
int synor__deadline_schedule(const synor_sched_problem *pb, const synor_plan_options *o,
                             synor__pass_fn pass, void *ctx, synor__sched *out);

/* The planned makespan, energy (J) and money (micro-units) of a schedule,
 * accounted as the simulator accounts a run (synor/sim.h): active energy
 * of every task + idle power of every device while not busy within the
 * makespan; price per hour of every device that runs a task, for the
 * makespan. Any output may be NULL. 0 or SYNOR_ENOMEM. */
int synor__sched_account(const synor_sched_problem *pb, const size_t *dev, const double *st,
                         const double *ft, double *makespan, double *energy, int64_t *money);

/* synor__sched_account of a plan of the cost matrix c, as on the problem
 * synor_sched_problem_from_cost(c) gives, without building it. 0,
 * SYNOR_EINVAL (the plan is of another size) or SYNOR_ENOMEM. */
int synor__plan_cost_account(const synor_plan *p, const synor_cost *c, double *energy,
                             int64_t *money);

/* Writes the plan's "energy_j", "money_micro", "currency" and, with a
 * deadline, "deadline_s", "deadline_met", "shortfall_s" members into an
 * open JSON object (synor_plan_to_json). */
int synor__plan_json_account(struct synor__jw *j, const synor_plan *p, const synor_cost *c);

#endif
