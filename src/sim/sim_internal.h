/* sim_internal.h - the simulator's state, shared by sim.c (events, tasks),
 * flows.c (transfers), copies.c (a plan's weight copies), preempt.c,
 * rtrule.c and share.c. Never installed. */
#ifndef SYNOR_SIM_INTERNAL_H
#define SYNOR_SIM_INTERNAL_H

#include "sim/trace_internal.h"
#include "synor/sim.h"

enum { EV_TASK_END, EV_HOP_READY, EV_FLOW_DONE, EV_EDGES_IN, EV_WAKE,
       EV_RELEASE, /* a = the task the host has just submitted (synor_workload_set_host) */
       EV_REBALANCE, /* shplace.c: a rebalance falls due while a worker polls */
       /* preempt.c; a = the preemption (EV_CKPT_END: the device) */
       EV_PREEMPT, EV_DEADLINE, EV_CKPT_END };

/* running[p] while device p runs a checkpoint (preempt.c) */
#define SIM_CHECKPOINT (-2)
enum { LOC_ABSENT, LOC_MOVING, LOC_PRESENT };

typedef struct event {
    double t;
    uint64_t seq, ver;
    int type;
    size_t a;
} event;

typedef struct flow {
    size_t data, dst_space, from_dev, to_dev;
    synor_path path;
    size_t hop, channel;
    double hop_start;
    double tag; /* the channel's virtual time at which this flow is done */
} flow;

typedef struct channel {
    size_t *f; /* active flows: a binary heap by (tag, flow index) */
    size_t n, cap;
    double bw;
    double v, vlast; /* virtual time: bytes served to each flow so far */
    uint64_t ver;
} channel;

typedef struct sim {
    const synor_cost *c;
    const synor_workload *w;
    const synor_fabric *fab;
    const synor_plan *plan;
    size_t n, d, S, nd;
    double now;
    event *heap;
    size_t hn, hcap;
    uint64_t seq, events;
    /* tasks */
    long *dev;           /* assigned device or -1 */
    size_t *left;        /* unfinished dependencies */
    size_t *succ_off, *succ;
    size_t *cons_off, *cons; /* datum -> consumer tasks */
    double *tstart, *tend;
    double *wready;      /* plan in load mode: when the task's weights are there */
    size_t *gdev, *gcount; /* dynamic: each colocation group's device; groups per device */
    double *gwork, *gbest;  /* [group * d + device]: the group's time there; its least */
    unsigned char *finished;
    unsigned char *edge_wait; /* waiting for explicit-cost edges (comm_s) */
    size_t n_finished;
    /* devices */
    size_t **queue;      /* plan mode: tasks in plan order; dynamic: heap */
    size_t *qn, *qhead, *qcap;
    long *running;
    double *busy, *avail_est;
    uint64_t *resident;
    unsigned char *loaded; /* [dev * nd + datum] external data resident */
    uint64_t *ready_seq;
    uint64_t ready_counter;
    /* data */
    unsigned char *loc;  /* [datum * S + space] */
    flow *flows;
    size_t n_flows, flow_cap;
    channel *ch;         /* 2 per link: a->b, b->a */
    synor__trace *tr;
    int rc;
    /* preemptions (preempt.c); n_pre = 0 and NULL arrays without any */
    const synor_sim_preemption *pre;
    size_t n_pre;
    uint64_t *tver;         /* per task: version of its end event (a cut run's is stale) */
    unsigned char *leaving; /* per device: warned without replacement, or gone */
    unsigned char *gone;    /* per device: left the fabric */
    size_t *ckpt_due;       /* per device: preemption + 1 whose checkpoint waits */
    double *ckpt_t0, *held, *since;
    int64_t *price_now, *money;
    /* the runtime's own placement rules (rtrule.c); NULL otherwise */
    struct sim_rt *rt;
    /* devices that share the host's cores (share.c); NULL without any */
    struct sim_share *share;
    /* the dynamic strategy placing as the runtime does (shplace.c): with a
     * shared device and neither a plan, the runtime's rules nor
     * preemptions; NULL otherwise */
    struct sim_shp *shp;
} sim;

typedef struct sim_rt sim_rt;
typedef struct sim_share sim_share;
typedef struct sim_shp sim_shp;

/* share.c: setup (s->share stays NULL when no device of the fabric shares
 * the host's cores; after the preemptions' setup), teardown (before
 * theirs); task i starts with `work` seconds at full speed on its device
 * (s->running set); a device's task ended or was cut (no-op without
 * sharing). */
int synor__sim_share_setup(sim *s);
void synor__sim_share_teardown(sim *s);
void synor__sim_share_start(sim *s, size_t i, double work);
void synor__sim_share_changed(sim *s);
/* sim.c, for share.c: task i's end at t, with its current version. */
void synor__sim_push_end(sim *s, double t, size_t i);

/* shplace.c (docs/PLANNING.md "Placing as the runtime does"): setup
 * (after share's; s->shp stays NULL unless the dynamic strategy runs on a
 * fabric with a shared device), teardown; the placement estimate of task
 * i on device p (its cost-model time x the device's share_place_scale);
 * the score by which the runtime's rule ranks device p for task i, whose
 * inputs arrive `xfer` seconds from now (the backlog of p's group per
 * device + xfer + the estimate); a task queued on device p (est: its
 * estimate there) and one leaving p's queue to start; the rebalancer's
 * rounds (tasks move from the group with the most backlog per device to
 * the one with the least while the move ends earlier), then each device
 * that received one tries to start. */
int synor__sim_shp_setup(sim *s);
void synor__sim_shp_teardown(sim *s);
double synor__sim_shp_estimate(const sim *s, size_t i, size_t p);
double synor__sim_shp_score(const sim *s, size_t i, size_t p, double xfer);
int synor__sim_shp_same_group(const sim *s, size_t p, size_t q);
void synor__sim_shp_queued(sim *s, size_t i, size_t p);
void synor__sim_shp_started(sim *s, size_t i, size_t p);
void synor__sim_shp_rebalance(sim *s);
/* shplace.c: a rebalance the runtime's rules gate by time (the shared
 * device's share_rebalance_s): synor__sim_shp_rebalance at an event runs
 * it when due, else may push EV_REBALANCE, whose handler is
 * synor__sim_shp_tick. */
void synor__sim_shp_tick(sim *s);

/* A plan in load mode: when each task's weights are on its device
 * (s->wready), and the copies in the trace (copies.c). */
int synor__sim_weight_copies(sim *s);

/* The memory space device dev is in. */
static inline size_t synor__sim_space_of(const sim *s, size_t dev)
{
    return synor_fabric_device_at(s->fab, dev)->space;
}

/* flows.c: the datum (produced, finished) asked for on device to_dev's
 * space, unless it is there or on its way; events EV_HOP_READY (a = the
 * flow) and EV_FLOW_DONE (a = the channel, with its version). */
void synor__sim_request(sim *s, size_t data, size_t to_dev);
void synor__sim_hop_ready(sim *s, size_t fi);
void synor__sim_flow_done(sim *s, size_t ci, uint64_t ver);

/* sim.c, for preempt.c (and flows.c: with an event version) */
void synor__sim_push(sim *s, double t, int type, size_t a);
void synor__sim_push_ver(sim *s, double t, int type, size_t a, uint64_t ver);
void synor__sim_try_start(sim *s, size_t p);
/* Places ready task i anew (dynamic) and starts what it can. */
void synor__sim_replace(sim *s, size_t i);

/* rtrule.c: groups and queues; ready task i, released by the end of a
 * task of device `from` (SIZE_MAX: ready at the start); device p idle:
 * takes its next task by the runtime's rules (1 when it did). */
int synor__sim_rt_setup(sim *s);
void synor__sim_rt_teardown(sim *s);
void synor__sim_rt_ready(sim *s, size_t i, size_t from);
int synor__sim_rt_take(sim *s, size_t p);
/* sim.c, for rtrule.c: task i onto device p's queue, its inputs asked
 * for; 0. */
int synor__sim_rt_queue(sim *s, size_t p, size_t i);

/* sim.c: ready queues as binary heaps of task indexes h[0 .. n) on
 * (priority, readiness order), the order the runtime takes them in:
 * after h[k] was appended, restores the heap; after h[0] was replaced
 * by the last of n + 1, restores the n left. */
void synor__sim_heap_up(const sim *s, size_t *h, size_t k);
void synor__sim_heap_down(const sim *s, size_t *h, size_t n);
/* Whether task a comes before task b in those queues. */
int synor__sim_q_before(const sim *s, size_t a, size_t b);

/* preempt.c */
int synor__sim_preempt_setup(sim *s, const synor_sim_preemption *pre, size_t n);
void synor__sim_preempt_teardown(sim *s);
void synor__sim_preempt_event(sim *s, int type, size_t a);
/* Device p is idle and a checkpoint is due: starts it. */
void synor__sim_checkpoint_start(sim *s, size_t p);
/* Money per device and the times held, at the end (makespan). */
void synor__sim_preempt_finish(sim *s);

#endif
