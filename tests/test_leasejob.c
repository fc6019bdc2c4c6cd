/* test_leasejob.c - the job's side of preemptible capacity
 * (synor/leasejob.h), end to end: a durable market in a temporary
 * directory, an interruptible ask leased by the job, the lease bound to the
 * runtime's test GPU while a real run goes on, and a higher-ranked bid that
 * preempts it. Then either the job buys replacement at the current ask
 * (a second provider's, within its limit) and the device keeps running, or
 * no ask is within the limit and the device stops at the deadline while
 * the run completes on the CPU and the job ends gracefully, or the market's
 * own replacement at the lease's price covers it. Plus the bookkeeping of
 * partial preemptions with recording ops. Runs under ThreadSanitizer too
 * (label concurrency). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "synor.h"
#include "test.h"

#define USD(x) ((int64_t)((x)*1000000 + 0.5)) /* test literals only */
#define HOUR_NS 3600000000000ull
#define WARNING_NS 60000000ull /* the market's warning: 60 ms */

/* ------------------------------------------------------------ the market */

typedef struct world {
    synor_catalog *cat;
    synor_market *m;
    synor_leasejob *job;
    uint32_t gpu, prov1, prov2, holder, rival;
    uint64_t t;     /* logical time of the next command */
    uint64_t lease; /* the job's lease, from its LEASED event */
    int n_preempted, n_lease_ended;
    char dir[64];
} world;

static void on_event(const synor_market_event *ev, void *ud)
{
    world *w = ud;
    if (ev->owner == w->holder && ev->kind == SYNOR_EV_LEASED && !w->lease)
        w->lease = ev->order_id;
    if (ev->owner == w->holder && ev->kind == SYNOR_EV_PREEMPTED)
        w->n_preempted++;
    if (ev->owner == w->holder && ev->kind == SYNOR_EV_LEASE_ENDED)
        w->n_lease_ended++;
    synor_leasejob_on_event(ev, w->job);
}

static int open_world(world *w)
{
    memset(w, 0, sizeof *w);
    strcpy(w->dir, "/tmp/synor-leasejob-XXXXXX");
    if (!mkdtemp(w->dir))
        return -1;
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    cfg.dir = w->dir;
    cfg.on_event = on_event;
    cfg.user_data = w;
    cfg.preempt_warning_ns = WARNING_NS;
    w->t = 1000;
    if (synor_catalog_create(&w->cat) || synor_catalog_load_builtin(w->cat) ||
        synor_market_open(&cfg, &w->m) ||
        synor_market_resource(w->m, w->cat, "gpu/nvidia-h100-sxm/eu-west", &w->gpu) ||
        synor_market_owner(w->m, "prov1", &w->prov1) ||
        synor_market_owner(w->m, "prov2", &w->prov2) ||
        synor_market_owner(w->m, "job", &w->holder) ||
        synor_market_owner(w->m, "rival", &w->rival) || w->gpu != 0)
        return -1; /* order() places on resource 0 */
    return 0;
}

static void close_world(world *w)
{
    synor_market_close(w->m);
    synor_catalog_destroy(w->cat);
    char p[128];
    const char *files[] = {"journal.log", "snapshot.bin", "snapshot.bin.tmp"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", w->dir, files[i]);
        unlink(p);
    }
    rmdir(w->dir);
}

/* Submits a command at the next logical time, then lets the job act. */
static int cmd(world *w, synor_market_cmd c)
{
    c.time = w->t += 1000;
    int rc = synor_market_submit(w->m, &c);
    if (!rc && w->job)
        rc = synor_leasejob_step(w->job, w->m);
    if (!rc)
        rc = synor_market_commit(w->m);
    return rc;
}

static synor_market_cmd order(uint64_t id, uint32_t owner, synor_side side, int64_t price,
                              int64_t qty)
{
    synor_market_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = SYNOR_CMD_PLACE;
    c.order_id = id;
    c.owner = owner;
    c.resource = 0;
    c.side = side;
    c.type = SYNOR_LIMIT;
    c.tif = SYNOR_GTC;
    c.price = price;
    c.qty = qty;
    return c;
}

static synor_market_cmd reputation(uint32_t owner, uint8_t r, uint64_t ref)
{
    synor_market_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = SYNOR_CMD_REPUTATION;
    c.owner = owner;
    c.reputation = r;
    c.ref = ref;
    return c;
}

/* ----------------------------------------------------------- the runtime */

enum { CHAINS = 4, STEPS = 60 };

static int k_step(const synor_task_ctx *c)
{
    struct timespec d = {0, 500000};
    nanosleep(&d, NULL);
    ((float *)c->buffers[0])[0] += 1.0f;
    return 0;
}
static const synor_kernel step_k = {.name = "step",
                                    .fn = {[SYNOR_KIND_CPU] = k_step, [SYNOR_KIND_GPU] = k_step}};

static int k_checkpoint(const synor_task_ctx *c)
{
    memcpy(c->buffers[1], c->buffers[0], synor_handle_bytes(c->data[0]));
    return 0;
}
static const synor_kernel checkpoint_k = {
    .name = "checkpoint", .fn = {[SYNOR_KIND_CPU] = k_checkpoint, [SYNOR_KIND_GPU] = k_checkpoint}};

typedef struct job_state {
    synor_handle *x[CHAINS], *snap[CHAINS];
    _Atomic int checkpoints;
    int rc;
} job_state;

static void on_preempt(synor_runtime *rt, unsigned device, uint64_t deadline, void *user)
{
    (void)deadline;
    job_state *js = user;
    atomic_fetch_add(&js->checkpoints, 1);
    for (int c = 0; c < CHAINS; c++) {
        synor_task_spec t = {.kernel = &checkpoint_k,
                             .priority = SYNOR_PRIORITY_HIGH,
                             .ndata = 2,
                             .data = {js->x[c], js->snap[c]},
                             .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_W},
                             .device = device + 1};
        int rc = synor_task_submit(rt, &t);
        if (rc && !js->rc)
            js->rc = rc;
    }
}

static _Atomic int g_ends;

static void on_end(void *user)
{
    (void)user; /* the runtime */
    atomic_fetch_add(&g_ends, 1);
}

static int submit_steps(synor_runtime *rt, job_state *js, int n)
{
    for (int s = 0; s < n; s++)
        for (int c = 0; c < CHAINS; c++) {
            synor_task_spec t = {.kernel = &step_k,
                                 .priority = SYNOR_PRIORITY_NORMAL,
                                 .ndata = 1,
                                 .data = {js->x[c]},
                                 .mode = {SYNOR_ACCESS_RW}};
            int rc = synor_task_submit(rt, &t);
            if (rc)
                return rc;
        }
    return 0;
}

typedef struct result {
    synor_leasejob_outcome o;
    int stopped, checkpoints, ends, preempted;
    float x[CHAINS], snap[CHAINS];
    int marks_preempted, marks_stopped, marks_replaced;
} result;

/* The scenario: prov1 (reputation 90) leases 1 unit of interruptible
 * capacity at 2.00 to the job (limit 3.50), bound to the test GPU while 4
 * chains of steps run; prov2 (reputation 60) asks at `ask2` (0 = none);
 * the rival bids 4.00 requiring reputation 80, so only prov1's capacity
 * is eligible to it: it preempts the job's lease. */
static void scenario(double ask2, int ask2_interruptible, result *r)
{
    memset(r, 0, sizeof *r);
    r->o.kind = -1;
    world w;
    if (open_world(&w))
        return;
    synor_runtime_config rc;
    synor_runtime_config_init(&rc);
    rc.cpu_workers = 1;
    rc.test_gpu_workers = 1;
    rc.pin_workers = 0;
    rc.opencl = SYNOR_OPENCL_OFF;
    rc.cuda = 0;
    rc.trace = 1;
    rc.policy = SYNOR_PLACE_LOAD;
    synor_runtime *rt = NULL;
    static float x[CHAINS], snap[CHAINS];
    job_state js;
    memset(&js, 0, sizeof js);
    if (synor_runtime_create(&rc, &rt))
        goto out;
    for (int c = 0; c < CHAINS; c++) {
        x[c] = 0;
        snap[c] = -1;
        synor_handle_desc d = {.ptr = &x[c], .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {1}};
        synor_handle_desc s = {.ptr = &snap[c], .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {1}};
        if (synor_handle_register(rt, &d, &js.x[c]) || synor_handle_register(rt, &s, &js.snap[c]))
            goto out;
    }
    synor_runtime_set_preempt_fn(rt, on_preempt, &js);

    /* the runtime's ops (their user is the runtime); end counts in g_ends */
    synor_leasejob_config jc = {
        .holder = w.holder, .max_price = USD(3.50), .first_order_id = 1000000};
    synor_leasejob_runtime_ops(rt, &jc.ops);
    jc.ops.end = on_end;
    atomic_store(&g_ends, 0);
    if (synor_leasejob_create(&jc, &w.job))
        goto out;

    synor_market_cmd a1 = order(1, w.prov1, SYNOR_ASK, USD(2.00), 1);
    a1.interruptible = 1;
    synor_market_cmd b1 = order(2, w.holder, SYNOR_BID, USD(2.00), 1);
    b1.duration = HOUR_NS;
    if (cmd(&w, reputation(w.prov1, 90, 50)) || cmd(&w, reputation(w.prov2, 60, 51)) ||
        cmd(&w, a1) || cmd(&w, b1) || !w.lease)
        goto out;
    unsigned dev = 1;
    if (synor_leasejob_hold(w.job, w.lease, &dev, 1))
        goto out;
    if (ask2 > 0) {
        synor_market_cmd a2 = order(3, w.prov2, SYNOR_ASK, USD(ask2), 1);
        a2.interruptible = (uint8_t)ask2_interruptible;
        if (cmd(&w, a2))
            goto out;
    }
    if (submit_steps(rt, &js, STEPS / 2) || synor_runtime_start(rt))
        goto out;
    nanosleep(&(struct timespec){0, 5000000}, NULL); /* the run is under way */
    synor_market_cmd rb = order(4, w.rival, SYNOR_BID, USD(4.00), 1);
    rb.min_reputation = 80;
    rb.duration = HOUR_NS;
    if (cmd(&w, rb))
        goto out;
    r->preempted = w.n_preempted;
    if (submit_steps(rt, &js, STEPS / 2) || synor_runtime_wait_all(rt))
        goto out;
    /* past the deadline on both clocks: the market's (a command after
     * it) and the runtime's (wall time) */
    nanosleep(&(struct timespec){0, (long)(WARNING_NS + 30000000)}, NULL);
    w.t += WARNING_NS;
    if (cmd(&w, reputation(w.prov1, 91, 52)))
        goto out;
    synor_leasejob_outcomes(w.job, &r->o, 1);
    synor_runtime_device_info di;
    for (int k = 0; k < 10000; k++) { /* a loaded machine may run the deadline thread late */
        if (synor_runtime_device_get(rt, 1, &di) || !di.preempt_deadline_ns)
            break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    r->stopped = di.stopped;
    r->checkpoints = atomic_load(&js.checkpoints);
    r->ends = atomic_load(&g_ends);
    if (r->ends != synor_leasejob_ended(w.job))
        r->ends = -1;
    if (js.rc)
        r->checkpoints = -1;
    memcpy(r->x, x, sizeof x);
    memcpy(r->snap, snap, sizeof snap);
    synor_trace *t = NULL;
    if (synor_runtime_trace(rt, "leasejob", &t) == 0) {
        for (size_t i = 0; i < t->n_marks; i++) {
            r->marks_preempted += !strcmp(t->marks[i].name, "preempted");
            r->marks_stopped += !strcmp(t->marks[i].name, "device stopped");
            r->marks_replaced += !strcmp(t->marks[i].name, "replaced");
        }
        synor_trace_destroy(t);
    }
out:
    synor_runtime_destroy(rt);
    synor_leasejob_destroy(w.job);
    close_world(&w);
}

static int chains_done(const result *r)
{
    for (int c = 0; c < CHAINS; c++)
        if (r->x[c] != STEPS || r->snap[c] != STEPS / 2)
            return 0;
    return 1;
}

TEST(replacement_at_the_current_ask_keeps_the_device)
{
    result r;
    scenario(3.00, 1, &r);
    ASSERT_EQ(r.preempted, 1);
    ASSERT_EQ(r.o.kind, SYNOR_LEASEJOB_REPLACED);
    ASSERT_EQ(r.o.units, 1);
    ASSERT_EQ(r.o.replaced, 1);
    ASSERT_EQ(r.o.lease_price, USD(2.00));
    ASSERT_EQ(r.o.best_ask, USD(3.00));
    ASSERT_EQ(r.o.paid_max, USD(3.00)); /* the current ask, not the lease's price */
    ASSERT_EQ(r.o.deadline - r.o.time, WARNING_NS);
    ASSERT_EQ(r.o.error, 0);
    ASSERT_EQ(r.checkpoints, 1);
    ASSERT(!r.stopped);
    ASSERT_EQ(r.ends, 0);
    ASSERT(chains_done(&r));
    ASSERT_EQ(r.marks_preempted, 1);
    ASSERT_EQ(r.marks_replaced, 1);
    ASSERT_EQ(r.marks_stopped, 0);
}

TEST(no_ask_within_the_limit_stops_the_device_and_the_job_ends_gracefully)
{
    result r;
    scenario(5.00, 0, &r);
    ASSERT_EQ(r.preempted, 1);
    ASSERT_EQ(r.o.kind, SYNOR_LEASEJOB_STOPPED);
    ASSERT_EQ(r.o.replaced, 0);
    ASSERT_EQ(r.o.best_ask, USD(5.00));
    ASSERT_EQ(r.o.paid_max, 0);
    ASSERT_EQ(r.checkpoints, 1);
    ASSERT(r.stopped);
    ASSERT_EQ(r.ends, 1);    /* no leased device left */
    ASSERT(chains_done(&r)); /* the CPU finished the run; the checkpoint was kept */
    ASSERT_EQ(r.marks_preempted, 1);
    ASSERT_EQ(r.marks_stopped, 1);
    ASSERT_EQ(r.marks_replaced, 0);
}

TEST(the_markets_own_replacement_is_recorded_and_keeps_the_device)
{
    result r;
    scenario(1.50, 1, &r); /* at or below the lease's price: the market migrates */
    ASSERT_EQ(r.o.kind, SYNOR_LEASEJOB_MIGRATED);
    ASSERT_EQ(r.o.replaced, 1);
    ASSERT_EQ(r.o.paid_max, 0); /* the job bought nothing */
    ASSERT_EQ(r.checkpoints, 1);
    ASSERT(!r.stopped);
    ASSERT_EQ(r.ends, 0);
    ASSERT(chains_done(&r));
    ASSERT_EQ(r.marks_replaced, 1);
}

/* ------------------------------------------- bookkeeping, recording ops */

typedef struct rec {
    unsigned warned[8], kept[8];
    uint64_t warning[8];
    int nw, nk, ends;
} rec;

static int rec_preempt(void *u, unsigned device, uint64_t warning_ns)
{
    rec *r = u;
    r->warning[r->nw] = warning_ns;
    r->warned[r->nw++] = device;
    return 0;
}
static int rec_cancel(void *u, unsigned device)
{
    rec *r = u;
    r->kept[r->nk++] = device;
    return 0;
}
static void rec_end(void *u) { ((rec *)u)->ends++; }

TEST(partial_preemption_warns_the_last_units_and_replaces_what_the_limit_allows)
{
    world w;
    ASSERT_OK(open_world(&w));
    rec rr;
    memset(&rr, 0, sizeof rr);
    synor_leasejob_config jc = {.holder = w.holder,
                                .max_price = USD(3.50),
                                .first_order_id = 500,
                                .ops = {rec_preempt, rec_cancel, rec_end, &rr}};
    ASSERT_OK(synor_leasejob_create(&jc, &w.job));
    synor_market_cmd a1 = order(1, w.prov1, SYNOR_ASK, USD(2.00), 3);
    a1.interruptible = 1;
    ASSERT_OK(cmd(&w, a1));
    ASSERT_OK(cmd(&w, order(2, w.holder, SYNOR_BID, USD(2.00), 3)));
    ASSERT(w.lease);
    unsigned devs[3] = {1, 2, 3};
    ASSERT_OK(synor_leasejob_hold(w.job, w.lease, devs, 3));
    ASSERT_EQ(synor_leasejob_hold(w.job, 99, devs, 1), SYNOR_EINVAL); /* bound already */
    ASSERT_EQ(synor_leasejob_devices_left(w.job), 3);
    /* one unit for sale within the limit, one above it */
    ASSERT_OK(cmd(&w, order(3, w.prov2, SYNOR_ASK, USD(3.00), 1)));
    ASSERT_OK(cmd(&w, order(4, w.prov2, SYNOR_ASK, USD(9.00), 1)));
    /* the provider reclaims 2 units: devices 3 and 2 are warned */
    synor_market_cmd rc;
    memset(&rc, 0, sizeof rc);
    rc.kind = SYNOR_CMD_RECLAIM;
    rc.owner = w.prov1;
    rc.resource = w.gpu;
    rc.qty = 2;
    rc.ref = 60;
    ASSERT_OK(cmd(&w, rc));
    ASSERT_EQ(rr.nw, 2);
    ASSERT_EQ(rr.warned[0], 3);
    ASSERT_EQ(rr.warned[1], 2);
    ASSERT_EQ(rr.warning[0], WARNING_NS);
    ASSERT_EQ(rr.nk, 1); /* one replaced at 3.00, the 9.00 ask is above the limit */
    ASSERT_EQ(rr.kept[0], 3);
    synor_leasejob_outcome o[4];
    ASSERT_EQ(synor_leasejob_outcomes(w.job, o, 4), 1);
    ASSERT_EQ(o[0].kind, SYNOR_LEASEJOB_PARTIAL);
    ASSERT_EQ(o[0].units, 2);
    ASSERT_EQ(o[0].replaced, 1);
    ASSERT_EQ(o[0].paid_max, USD(3.00));
    ASSERT(!strcmp(synor_leasejob_outcome_name(o[0].kind), "partial"));
    ASSERT_EQ(synor_leasejob_devices_left(w.job), 2);
    ASSERT_EQ(rr.ends, 0);
    /* the last unit of the original lease goes too, with nothing to buy
     * within the limit: device 1 stops; device 3 runs on the replacement
     * (not interruptible), so the job still has a device */
    rc.ref = 61;
    rc.qty = 1;
    ASSERT_OK(cmd(&w, rc));
    ASSERT_EQ(rr.nw, 3);
    ASSERT_EQ(rr.warned[2], 1);
    ASSERT_EQ(rr.nk, 1);
    ASSERT_EQ(synor_leasejob_outcomes(w.job, o, 4), 2);
    ASSERT_EQ(o[1].kind, SYNOR_LEASEJOB_STOPPED);
    ASSERT_EQ(o[1].best_ask, USD(9.00));
    ASSERT_EQ(synor_leasejob_devices_left(w.job), 1);
    ASSERT_EQ(rr.ends, 0);
    /* a limit of 0 never buys, and a job whose last device goes ends once */
    synor_leasejob_destroy(w.job);
    memset(&rr, 0, sizeof rr);
    jc.max_price = 0;
    ASSERT_OK(synor_leasejob_create(&jc, &w.job));
    synor_market_cmd a3 = order(10, w.prov1, SYNOR_ASK, USD(2.00), 1);
    a3.interruptible = 1;
    ASSERT_OK(cmd(&w, a3));
    w.lease = 0;
    ASSERT_OK(cmd(&w, order(11, w.holder, SYNOR_BID, USD(2.00), 1)));
    ASSERT(w.lease);
    unsigned d7 = 7;
    ASSERT_OK(synor_leasejob_hold(w.job, w.lease, &d7, 1));
    rc.ref = 62;
    ASSERT_OK(cmd(&w, rc));
    ASSERT_EQ(rr.nw, 1);
    ASSERT_EQ(rr.nk, 0);
    ASSERT_EQ(rr.ends, 1);
    ASSERT_OK(cmd(&w, reputation(w.prov1, 70, 63)));
    ASSERT_EQ(rr.ends, 1);
    ASSERT(synor_leasejob_ended(w.job));
    synor_leasejob_destroy(w.job);
    w.job = NULL;
    close_world(&w);
}

TEST(bad_configs_are_refused)
{
    synor_leasejob *j = NULL;
    synor_leasejob_config c = {.holder = 1, .max_price = -1, .first_order_id = 1};
    ASSERT_EQ(synor_leasejob_create(&c, &j), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "max_price -1");
    c.max_price = (int64_t)1 << 53;
    ASSERT_EQ(synor_leasejob_create(&c, &j), SYNOR_EINVAL);
    c.max_price = 0;
    c.first_order_id = 0;
    ASSERT_EQ(synor_leasejob_create(&c, &j), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "first_order_id");
    c.first_order_id = 1;
    ASSERT_OK(synor_leasejob_create(&c, &j));
    unsigned d = 1;
    ASSERT_EQ(synor_leasejob_hold(j, 0, &d, 1), SYNOR_EINVAL);
    ASSERT_EQ(synor_leasejob_hold(j, 5, &d, 0), SYNOR_EINVAL);
    ASSERT_EQ(synor_leasejob_step(j, NULL), SYNOR_EINVAL);
    ASSERT(synor_leasejob_outcome_name(9) == NULL);
    synor_leasejob_destroy(j);
    synor_leasejob_destroy(NULL);
}

TEST_MAIN(replacement_at_the_current_ask_keeps_the_device,
          no_ask_within_the_limit_stops_the_device_and_the_job_ends_gracefully,
          the_markets_own_replacement_is_recorded_and_keeps_the_device,
          partial_preemption_warns_the_last_units_and_replaces_what_the_limit_allows,
          bad_configs_are_refused)
