/* test_sim.c - the discrete-event simulator: a hand-computed chain, links
 * shared by concurrent transfers, out-of-memory naming task, device and
 * sizes, invariants on every trace (no task before its inputs arrive, no two
 * tasks at once on a device, only devices that can run the task),
 * determinism (byte-identical traces) and the trace file round trip. */
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

/* Two CPUs sharing host memory and an H100 behind a 10 GB/s, 10 us link. */
static const char *const FABRIC =
    "{\"format\": \"synor-fabric/1\", \"name\": \"lab\", \"nodes\": [{\"name\": \"host\"}],\n"
    " \"devices\": [{\"name\": \"c0\", \"profile\": \"amd-epyc-9654\", \"price_per_hour\": \"1.00\"},\n"
    "             {\"name\": \"c1\", \"profile\": \"amd-epyc-9654\", \"price_per_hour\": \"1.00\"},\n"
    "             {\"name\": \"gpu\", \"profile\": \"nvidia-h100-sxm\", \"price_per_hour\": \"3.60\"}],\n"
    " \"links\": [{\"between\": [\"gpu\", \"host\"], \"kind\": \"pcie\", \"bandwidth_gb_s\": 10, "
    "\"latency_us\": 10}]}";

/* a on c0 and b on c1 each produce 1 GB; c and d on the GPU consume them. */
static const char *const WL =
    "{\"format\": \"synor-workload/1\", \"name\": \"fan\", \"tasks\": [\n"
    " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"produces\": [{\"name\": \"x\", \"bytes\": 1000000000}]},\n"
    " {\"id\": \"b\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"produces\": [{\"name\": \"y\", \"bytes\": 1000000000}]},\n"
    " {\"id\": \"c\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"consumes\": [{\"name\": \"x\"}]},\n"
    " {\"id\": \"d\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"consumes\": [{\"name\": \"y\"}]}]}";

typedef struct fixture {
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
} fixture;

static int setup(fixture *x, const char *fabric, const char *wl)
{
    memset(x, 0, sizeof *x);
    int rc = fabric[0] == '{'
                 ? synor_fabric_load_string(catalog(), fabric, strlen(fabric), "lab.json", &x->f)
                 : synor_fabric_load_builtin(catalog(), fabric, &x->f);
    if (!rc)
        rc = synor_workload_load_string(wl, strlen(wl), "w.json", &x->w);
    if (!rc)
        rc = synor_cost_create(x->w, x->f, &x->c);
    return rc;
}

static void teardown(fixture *x)
{
    synor_cost_destroy(x->c);
    synor_workload_destroy(x->w);
    synor_fabric_destroy(x->f);
}

/* The invariants every trace must satisfy. Returns a message or NULL. */
static const char *check_trace(const synor_trace *t, const synor_cost *c)
{
    static char msg[256];
    const synor_workload *w = synor_cost_workload(c);
    const synor_fabric *f = synor_cost_fabric(c);
    size_t n = synor_workload_count(w);
    if (t->n_tasks != n)
        return "not every task ran";
    double *st = calloc(n, sizeof *st), *en = calloc(n, sizeof *en);
    size_t *dv = calloc(n, sizeof *dv);
    double *last_end = calloc(t->n_devices, sizeof *last_end);
    const char *err = NULL;
    for (size_t k = 0; k < t->n_tasks && !err; k++) {
        const synor_trace_task *x = &t->tasks[k];
        long i = synor_workload_find_task(w, x->id);
        if (i < 0) {
            err = "unknown task in trace";
            break;
        }
        st[i] = x->start;
        en[i] = x->end;
        dv[i] = x->device;
        double cost = synor_cost_time(c, (size_t)i, x->device);
        if (!isfinite(cost))
            err = "a task ran on a device that cannot run it";
        else if (fabs(x->end - x->start - cost) > 1e-9 * (1 + cost))
            err = "a task's duration is not its cost";
        else if (x->start < last_end[x->device] - 1e-12)
            err = "two tasks at once on a device";
        if (x->end > last_end[x->device])
            last_end[x->device] = x->end;
    }
    for (size_t i = 0; i < n && !err; i++) {
        const synor_task *tk = synor_workload_task(w, i);
        for (size_t k = 0; k < tk->n_deps; k++) {
            size_t j = tk->deps[k];
            double need = en[j];
            if (synor_workload_edge_bytes(w, i, j) &&
                synor_fabric_device_at(f, dv[j])->space != synor_fabric_device_at(f, dv[i])->space)
                need += synor_fabric_transfer_time(f, dv[j], dv[i], 0); /* latencies at least */
            if (st[i] < need - 1e-12) {
                snprintf(msg, sizeof msg, "task %s starts before its input from %s arrives",
                         tk->id, synor_workload_task(w, j)->id);
                err = msg;
            }
        }
    }
    for (size_t p = 0; p < t->n_devices && !err; p++)
        if (!t->devices[p].simulated)
            err = "a simulated device is not labelled simulated";
    free(st);
    free(en);
    free(dv);
    free(last_end);
    return err;
}

TEST(transfers_share_a_link)
{
    fixture x;
    ASSERT_OK(setup(&x, FABRIC, WL));
    size_t dev[] = {0, 1, 2, 2}, order[] = {0, 1, 2, 3};
    double st[] = {0, 0, 0, 0}, ft[] = {0, 0, 0, 0};
    synor_plan p = {.strategy = SYNOR_STRATEGY_HEFT, .n_tasks = 4, .n_devices = 3,
                    .device = dev, .start = st, .finish = ft, .order = order};
    synor_trace *t;
    ASSERT_OK(synor_simulate(x.c, &p, &t));
    const char *err = check_trace(t, x.c);
    ASSERT(err == NULL);
    double ta = synor_cost_time(x.c, 0, 0), tc = synor_cost_time(x.c, 2, 2);
    ASSERT_EQ(t->n_transfers, 2);
    /* both 1 GB transfers start when a and b end and share 10 GB/s: each
     * takes 10 us + 2 x 0.1 s instead of 0.1 s */
    for (size_t k = 0; k < 2; k++) {
        ASSERT_NEAR(t->transfers[k].start, ta, 1e-12);
        ASSERT_NEAR(t->transfers[k].end, ta + 10e-6 + 0.2, 1e-9);
        ASSERT_EQ(t->transfers[k].bytes, 1000000000);
        ASSERT_STREQ(t->transfers[k].link, "gpu<->host");
    }
    ASSERT_NEAR(t->makespan, ta + 10e-6 + 0.2 + 2 * tc, 1e-9);
    /* money: c0, c1 and the GPU all ran a task: each is paid for the
     * makespan, rounded to the micro-unit per device */
    ASSERT_EQ(t->money_micro, 2 * synor_money_for_seconds(1000000, t->makespan) +
                                  synor_money_for_seconds(3600000, t->makespan));
    synor_trace_destroy(t);
    teardown(&x);
}

/* Equal sharing of a link, checked against a fluid model computed here:
 * flows join at their hop's start + latency, all active flows get bw / n,
 * a flow ends when its bytes are through. 20 producers on the CPUs end at
 * different times and send 100-500 MB each over the 10 GB/s link, so up to
 * 20 flows of different sizes overlap, join and leave at different times. */
TEST(link_sharing_matches_a_fluid_model)
{
    enum { N = 20 };
    char wl[8192];
    size_t off = (size_t)snprintf(wl, sizeof wl,
                                  "{\"format\": \"synor-workload/1\", \"name\": \"fan\", \"tasks\": [\n");
    for (int k = 0; k < N; k++)
        off += (size_t)snprintf(wl + off, sizeof wl - off,
                                " {\"id\": \"p%d\", \"op\": \"relu\", \"dims\": {\"elements\": %d}, "
                                "\"produces\": [{\"name\": \"x%d\", \"bytes\": %d}]},\n",
                                k, 20000000 * (k / 2 + 1) + 7000000 * (k % 3), k,
                                100000000 * (1 + k % 5));
    for (int k = 0; k < N; k++)
        off += (size_t)snprintf(wl + off, sizeof wl - off,
                                " {\"id\": \"c%d\", \"op\": \"relu\", \"dims\": {\"elements\": 1000}, "
                                "\"consumes\": [{\"name\": \"x%d\"}]}%s\n",
                                k, k, k + 1 < N ? "," : "]}");
    fixture x;
    ASSERT_OK(setup(&x, FABRIC, wl));
    size_t dev[2 * N], order[2 * N];
    double st[2 * N] = {0}, ft[2 * N] = {0};
    for (size_t i = 0; i < 2 * N; i++) {
        dev[i] = i < N ? i % 2 : 2;
        order[i] = i;
    }
    synor_plan p = {.strategy = SYNOR_STRATEGY_HEFT, .n_tasks = 2 * N, .n_devices = 3,
                    .device = dev, .start = st, .finish = ft, .order = order};
    synor_trace *t;
    ASSERT_OK(synor_simulate(x.c, &p, &t));
    ASSERT(check_trace(t, x.c) == NULL);
    ASSERT_EQ(t->n_transfers, N);
    /* the fluid model */
    const double bw = 10e9, lat = 10e-6;
    double join[N], left[N], end[N];
    int active[N] = {0}, done[N] = {0};
    for (int k = 0; k < N; k++) {
        join[k] = t->transfers[k].start + lat;
        left[k] = (double)t->transfers[k].bytes;
        end[k] = -1;
    }
    double now = 0;
    for (int finished = 0; finished < N;) {
        int n = 0;
        for (int k = 0; k < N; k++)
            n += active[k];
        double next_join = INFINITY, next_end = INFINITY;
        for (int k = 0; k < N; k++) {
            if (!active[k] && !done[k] && join[k] < next_join)
                next_join = join[k];
            if (active[k] && now + left[k] * n / bw < next_end)
                next_end = now + left[k] * n / bw;
        }
        double to = next_join < next_end ? next_join : next_end;
        for (int k = 0; k < N; k++)
            if (active[k])
                left[k] -= (to - now) * bw / n;
        now = to;
        for (int k = 0; k < N; k++) {
            if (active[k] && left[k] <= 1e-3) {
                active[k] = 0;
                done[k] = 1;
                end[k] = now;
                finished++;
            } else if (!active[k] && !done[k] && join[k] <= now) {
                active[k] = 1;
            }
        }
    }
    int overlapped = 0;
    for (int k = 0; k < N; k++) {
        ASSERT_NEAR(t->transfers[k].end, end[k], 1e-9);
        if (end[k] - join[k] > left[k] + (double)t->transfers[k].bytes / bw + 1e-6)
            overlapped++;
    }
    ASSERT(overlapped >= N / 2); /* the case is a real test of sharing */
    synor_trace_destroy(t);
    teardown(&x);
}

TEST(a_chain_by_hand)
{
    fixture x;
    const char *wl = "{\"format\": \"synor-workload/1\", \"tasks\": [\n"
                     " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, "
                     "\"produces\": [{\"name\": \"x\", \"bytes\": 500000000}]},\n"
                     " {\"id\": \"b\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, "
                     "\"consumes\": [{\"name\": \"x\"}]}]}";
    ASSERT_OK(setup(&x, FABRIC, wl));
    size_t dev[] = {0, 2}, order[] = {0, 1};
    double st[] = {0, 0}, ft[] = {0, 0};
    synor_plan p = {.strategy = SYNOR_STRATEGY_HEFT, .n_tasks = 2, .n_devices = 3,
                    .device = dev, .start = st, .finish = ft, .order = order};
    synor_trace *t;
    ASSERT_OK(synor_simulate(x.c, &p, &t));
    double want = synor_cost_time(x.c, 0, 0) + 10e-6 + 0.05 + synor_cost_time(x.c, 1, 2);
    ASSERT_NEAR(t->makespan, want, 1e-12);
    /* energy: active per task + idle of all three devices over the makespan */
    const synor_caps *cpu = synor_device_caps(synor_fabric_device_at(x.f, 0)->dev);
    const synor_caps *gpu = synor_device_caps(synor_fabric_device_at(x.f, 2)->dev);
    double idle = cpu->idle_watts * (want - synor_cost_time(x.c, 0, 0)) + cpu->idle_watts * want +
                  gpu->idle_watts * (want - synor_cost_time(x.c, 1, 2));
    ASSERT_NEAR(t->energy_idle, idle, 1e-9);
    ASSERT_NEAR(t->energy_active, synor_cost_energy(x.c, 0, 0) + synor_cost_energy(x.c, 1, 2),
                1e-12);
    synor_trace_destroy(t);
    teardown(&x);
}

/* synor_simulate_runtime follows the runtime's own rules: a Normal task
 * released by a device's task stays on that device (newest first), ahead
 * of older ready tasks in the queue; a High one goes to the queue and is
 * taken first; an idle device of the same group steals the oldest. */
static const char *const RT_FABRIC1 =
    "{\"format\": \"synor-fabric/1\", \"name\": \"one\", \"nodes\": [{\"name\": \"host\"}],\n"
    " \"devices\": [{\"name\": \"c0\", \"profile\": \"amd-epyc-9654\"}]}";
static const char *const RT_FABRIC2 =
    "{\"format\": \"synor-fabric/1\", \"name\": \"two\", \"nodes\": [{\"name\": \"host\"}],\n"
    " \"devices\": [{\"name\": \"c\", \"profile\": \"amd-epyc-9654\", \"count\": 2}]}";

static const char *order_of(const synor_trace *t, char *buf, size_t n)
{
    buf[0] = 0;
    for (size_t k = 0; k < t->n_tasks; k++) {
        size_t len = strlen(buf);
        snprintf(buf + len, n - len, "%s%s@%zu", k ? " " : "", t->tasks[k].id, t->tasks[k].device);
    }
    return buf;
}

TEST(the_runtime_rules_keep_released_tasks_on_their_worker)
{
    fixture x;
    const char *wl =
        "{\"format\": \"synor-workload/1\", \"tasks\": [\n"
        " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, "
        "\"produces\": [{\"name\": \"x\", \"bytes\": 1000}]},\n"
        " {\"id\": \"b\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}},\n"
        " {\"id\": \"c\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, "
        "\"consumes\": [{\"name\": \"x\"}]}]}";
    ASSERT_OK(setup(&x, RT_FABRIC1, wl));
    char buf[256];
    synor_trace *t;
    ASSERT_OK(synor_simulate(x.c, NULL, &t)); /* the list scheduler: readiness order */
    ASSERT_STREQ(order_of(t, buf, sizeof buf), "a@0 b@0 c@0");
    synor_trace_destroy(t);
    ASSERT_OK(synor_simulate_runtime(x.c, &t)); /* c stays on a's worker, ahead of b */
    ASSERT_STREQ(order_of(t, buf, sizeof buf), "a@0 c@0 b@0");
    ASSERT_STREQ(t->strategy, "runtime");
    ASSERT(!check_trace(t, x.c));
    synor_trace_destroy(t);
    teardown(&x);
    /* a High task released by a goes to the queue and is taken first */
    const char *wl2 =
        "{\"format\": \"synor-workload/1\", \"tasks\": [\n"
        " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, "
        "\"produces\": [{\"name\": \"x\", \"bytes\": 1000}]},\n"
        " {\"id\": \"b\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}},\n"
        " {\"id\": \"n\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, "
        "\"consumes\": [{\"name\": \"x\"}]},\n"
        " {\"id\": \"h\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"priority\": \"high\", "
        "\"consumes\": [{\"name\": \"x\"}]}]}";
    ASSERT_OK(setup(&x, RT_FABRIC1, wl2));
    ASSERT_OK(synor_simulate_runtime(x.c, &t));
    ASSERT_STREQ(order_of(t, buf, sizeof buf), "a@0 h@0 n@0 b@0");
    synor_trace_destroy(t);
    teardown(&x);
    /* two workers: r releases four; its worker runs the newest first, the
     * other steals the oldest */
    const char *wl3 =
        "{\"format\": \"synor-workload/1\", \"tasks\": [\n"
        " {\"id\": \"r\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, "
        "\"produces\": [{\"name\": \"x\", \"bytes\": 1000}]},\n"
        " {\"id\": \"t1\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"consumes\": [{\"name\": \"x\"}]},\n"
        " {\"id\": \"t2\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"consumes\": [{\"name\": \"x\"}]},\n"
        " {\"id\": \"t3\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"consumes\": [{\"name\": \"x\"}]},\n"
        " {\"id\": \"t4\", \"op\": \"relu\", \"dims\": {\"elements\": 1000000}, \"consumes\": [{\"name\": \"x\"}]}]}";
    ASSERT_OK(setup(&x, RT_FABRIC2, wl3));
    ASSERT_OK(synor_simulate_runtime(x.c, &t));
    ASSERT_STREQ(order_of(t, buf, sizeof buf), "r@0 t4@0 t1@1 t3@0 t2@1");
    ASSERT(!check_trace(t, x.c));
    double one = synor_cost_time(x.c, 1, 0);
    ASSERT_NEAR(t->makespan, synor_cost_time(x.c, 0, 0) + 2 * one, 1e-12);
    synor_trace_destroy(t);
    teardown(&x);
}

/* The host's side (synor_workload_set_host): four independent tasks of 1 s
 * on two devices, submitted one every 0.5 s after 1 s of registering, and
 * 2 s after the last: released at 1.5, 2, 2.5, 3, so done at 4; the run at
 * 6 (2 without the host), under each strategy that places dynamically. */
static synor_workload *host_workload(double before, double per_task, double after)
{
    synor_workload *w;
    if (synor_workload_create("host", &w))
        return NULL;
    static const double row[2] = {1, 1};
    for (int i = 0; i < 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "t%d", i);
        synor_task_desc d = {.id = id, .exec_s = row, .n_exec = 2};
        size_t idx;
        if (synor_workload_add_task(w, &d, &idx)) {
            synor_workload_destroy(w);
            return NULL;
        }
    }
    if (synor_workload_set_host(w, before, per_task, after) || synor_workload_finish(w)) {
        synor_workload_destroy(w);
        return NULL;
    }
    return w;
}

TEST(the_host_submits_one_task_after_another)
{
    synor_fabric *f;
    ASSERT_OK(synor_fabric_load_string(catalog(), RT_FABRIC2, strlen(RT_FABRIC2), "two.json", &f));
    for (int host = 0; host < 2; host++) {
        synor_workload *w = host ? host_workload(1, 0.5, 2) : host_workload(0, 0, 0);
        ASSERT(w);
        double b, p, a;
        synor_workload_host(w, &b, &p, &a);
        ASSERT(host ? b == 1 && p == 0.5 && a == 2 : b == 0 && p == 0 && a == 0);
        synor_cost *c;
        ASSERT_OK(synor_cost_create(w, f, &c));
        for (int rt = 0; rt < 2; rt++) {
            synor_trace *t;
            ASSERT_OK(rt ? synor_simulate_runtime(c, &t) : synor_simulate(c, NULL, &t));
            ASSERT_NEAR(t->makespan, host ? 6 : 2, 1e-12);
            for (size_t k = 0; k < t->n_tasks; k++) {
                long i = synor_workload_find_task(w, t->tasks[k].id);
                ASSERT_NEAR(t->tasks[k].start, host ? 1.5 + 0.5 * (double)i : (double)(i / 2),
                            1e-12);
            }
            synor_trace_destroy(t);
        }
        /* a plan: no task before its submission either */
        synor_plan *pl;
        synor_trace *t;
        ASSERT_OK(synor_plan_create(c, NULL, &pl));
        ASSERT_OK(synor_simulate(c, pl, &t));
        for (size_t k = 0; host && k < t->n_tasks; k++) {
            long i = synor_workload_find_task(w, t->tasks[k].id);
            ASSERT(t->tasks[k].start >= 1.5 + 0.5 * (double)i - 1e-12);
        }
        ASSERT(t->makespan >= (host ? 6 : 2) - 1e-12);
        synor_trace_destroy(t);
        synor_plan_destroy(pl);
        synor_cost_destroy(c);
        synor_workload_destroy(w);
    }
    /* bad figures, and after finish */
    synor_workload *w;
    ASSERT_OK(synor_workload_create("bad", &w));
    ASSERT_EQ(synor_workload_set_host(w, -1, 0, 0), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "before_s");
    ASSERT_EQ(synor_workload_set_host(w, 0, NAN, 0), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "per_task_s");
    ASSERT_EQ(synor_workload_set_host(w, 0, 0, INFINITY), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "after_s");
    synor_workload_destroy(w);
    /* after finish too: the simulator reads them when it runs */
    w = host_workload(0, 0, 0);
    ASSERT(w);
    ASSERT_OK(synor_workload_set_host(w, 0, 0, 3));
    synor_cost *c;
    synor_trace *t;
    ASSERT_OK(synor_cost_create(w, f, &c));
    ASSERT_OK(synor_simulate(c, NULL, &t));
    ASSERT_NEAR(t->makespan, 2 + 3, 1e-12);
    synor_trace_destroy(t);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
}

TEST(out_of_memory_names_task_device_and_sizes)
{
    fixture x;
    const char *wl = "{\"format\": \"synor-workload/1\", \"tasks\": [\n"
                     " {\"id\": \"layer\", \"op\": \"matmul\", \"dtype\": \"int8\", \"dims\": {\"m\": 1, \"n\": 1, \"k\": 1},\n"
                     "  \"consumes\": [{\"name\": \"weights\", \"bytes\": 1000000000}]}]}";
    ASSERT_OK(setup(&x, "seed", wl));
    long lpu = synor_fabric_find_device(x.f, "lpu");
    ASSERT(lpu >= 0);
    size_t dev[] = {(size_t)lpu}, order[] = {0};
    double st[] = {0}, ft[] = {0};
    synor_plan p = {.strategy = SYNOR_STRATEGY_HEFT, .n_tasks = 1, .n_devices = 4,
                    .device = dev, .start = st, .finish = ft, .order = order};
    synor_trace *t = NULL;
    ASSERT_EQ(synor_simulate(x.c, &p, &t), SYNOR_ENOMEM);
    ASSERT_CONTAINS(synor_errmsg(), "task \"layer\" does not fit on device \"lpu\"");
    ASSERT_CONTAINS(synor_errmsg(), "it needs 1 GB (resident weights 1 GB + its data 0 B)");
    ASSERT_CONTAINS(synor_errmsg(), "the device has 230 MB");
    /* a plan putting tokenization on a GPU is refused as such */
    fixture y;
    const char *tok = "{\"format\": \"synor-workload/1\", \"tasks\": [\n"
                      " {\"id\": \"tok\", \"op\": \"tokenization\", \"dims\": {\"elements\": 100}}]}";
    ASSERT_OK(setup(&y, "seed", tok));
    size_t gdev[] = {(size_t)synor_fabric_find_device(y.f, "h100")};
    synor_plan g = {.strategy = SYNOR_STRATEGY_HEFT, .n_tasks = 1, .n_devices = 4,
                    .device = gdev, .start = st, .finish = ft, .order = order};
    ASSERT_EQ(synor_simulate(y.c, &g, &t), SYNOR_ENOTSUP);
    ASSERT_CONTAINS(synor_errmsg(), "task \"tok\" (tokenization in fp32) cannot run on device \"h100\"");
    teardown(&y);
    /* the planners do not make that mistake */
    synor_plan *q;
    ASSERT_OK(synor_plan_create(x.c, NULL, &q));
    ASSERT(q->device[0] != (size_t)lpu);
    ASSERT_OK(synor_simulate(x.c, q, &t));
    synor_trace_destroy(t);
    synor_plan_destroy(q);
    teardown(&x);
}

/* tol > 0: the simulated makespan must be within tol of the planned one
 * (true where links are not contended). */
static char *simulate_json(const synor_cost *c, synor_strategy st, int dynamic, double tol,
                           const char **err)
{
    synor_plan_options o;
    synor_plan_options_init(&o);
    o.strategy = st;
    synor_plan *p = NULL;
    synor_trace *t;
    *err = NULL;
    if ((!dynamic && synor_plan_create(c, &o, &p)) || synor_simulate(c, p, &t)) {
        synor_plan_destroy(p);
        *err = synor_errmsg();
        return NULL;
    }
    *err = check_trace(t, c);
    if (p && tol > 0 && fabs(t->makespan - p->makespan) > tol * p->makespan)
        *err = "simulated makespan far from the planned one";
    char *json = synor_trace_to_json(t);
    synor_trace_destroy(t);
    synor_plan_destroy(p);
    return json;
}

TEST(every_strategy_valid_and_deterministic)
{
    fixture x;
    synor_llm_config m;
    ASSERT_OK(synor_llm_preset("tiny", &m));
    m.dtype = SYNOR_DTYPE_BF16;
    memset(&x, 0, sizeof x);
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "seed", &x.f));
    ASSERT_OK(synor_decompose_llm_inference(&m, 1, 64, 16, &x.w));
    ASSERT_OK(synor_cost_create(x.w, x.f, &x.c));
    for (int s = 0; s <= SYNOR_STRATEGY_COUNT; s++) {
        if (s == SYNOR_STRATEGY_EXACT)
            continue;
        int dyn = s == SYNOR_STRATEGY_COUNT;
        const char *err;
        char *a = simulate_json(x.c, dyn ? SYNOR_STRATEGY_HEFT : (synor_strategy)s, dyn, 0.05, &err);
        if (err)
            fprintf(stderr, "  strategy %d: %s\n", s, err);
        ASSERT(a && !err);
        char *b = simulate_json(x.c, dyn ? SYNOR_STRATEGY_HEFT : (synor_strategy)s, dyn, 0.05, &err);
        ASSERT(b && strcmp(a, b) == 0);
        free(a);
        free(b);
    }
    teardown(&x);
}

TEST(training_on_two_nodes)
{
    fixture x;
    synor_llm_config m;
    ASSERT_OK(synor_llm_preset("tiny", &m));
    memset(&x, 0, sizeof x);
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "two-node-h100", &x.f));
    ASSERT_OK(synor_decompose_llm_training(&m, 4, 128, &x.w));
    ASSERT_OK(synor_cost_create(x.w, x.f, &x.c));
    const char *err;
    char *a = simulate_json(x.c, SYNOR_STRATEGY_PEFT, 0, 0, &err);
    if (err)
        fprintf(stderr, "  %s\n", err);
    ASSERT(a && !err);
    free(a);
    a = simulate_json(x.c, SYNOR_STRATEGY_HEFT, 1, 0, &err);
    ASSERT(a && !err);
    free(a);
    teardown(&x);
}

TEST(trace_round_trip_and_bad_traces)
{
    fixture x;
    ASSERT_OK(setup(&x, FABRIC, WL));
    synor_plan *p;
    synor_trace *t, *u;
    ASSERT_OK(synor_plan_create(x.c, NULL, &p));
    ASSERT_OK(synor_simulate(x.c, p, &t));
    char *s = synor_trace_to_json(t);
    ASSERT(s);
    ASSERT_OK(synor_trace_load_string(s, strlen(s), "t.json", &u));
    ASSERT_EQ(u->n_tasks, t->n_tasks);
    ASSERT_EQ(u->money_micro, t->money_micro);
    char *s2 = synor_trace_to_json(u);
    ASSERT(s2 && strcmp(s, s2) == 0);
    free(s2);
    synor_trace_destroy(u);
    const char *bad = "{\"format\": \"synor-trace/1\", \"workload\": \"w\", \"fabric\": \"f\", "
                      "\"strategy\": \"s\", \"currency\": \"USD\", \"makespan_s\": 1, "
                      "\"energy_active_j\": 1, \"energy_idle_j\": 0, \"money_micro\": 0,\n"
                      "\"devices\": [], \"tasks\": [{\"id\": \"a\", \"op\": \"relu\", "
                      "\"device\": 0, \"start\": 0, \"end\": 1, \"energy_j\": 0}], \"transfers\": []}";
    ASSERT(synor_trace_load_string(bad, strlen(bad), "bad.json", &u) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "bad.json:2:");
    ASSERT_CONTAINS(synor_errmsg(), "tasks[0].device");
    free(s);
    synor_trace_destroy(t);
    synor_plan_destroy(p);
    teardown(&x);
}

/* A trace with every field in range: two devices, a task each, a transfer. */
static const char *const GOOD_TRACE =
    "{\"format\": \"synor-trace/1\", \"workload\": \"w\", \"fabric\": \"f\", \"strategy\": \"s\",\n"
    " \"currency\": \"USD\", \"makespan_s\": 4, \"energy_active_j\": 1, \"energy_idle_j\": 0,\n"
    " \"money_micro\": 0,\n"
    " \"devices\": [{\"name\": \"a\", \"product\": \"A\", \"kind\": \"cpu\", \"simulated\": true, \"idle_w\": 0, \"price_micro\": 0},\n"
    "             {\"name\": \"b\", \"product\": \"B\", \"kind\": \"gpu\", \"simulated\": true, \"idle_w\": 0, \"price_micro\": 0}],\n"
    " \"tasks\": [{\"id\": \"y\", \"op\": \"relu\", \"device\": 1, \"start\": 2, \"end\": 4, \"energy_j\": 0},\n"
    "           {\"id\": \"x\", \"op\": \"relu\", \"device\": 0, \"start\": 0, \"end\": 1, \"energy_j\": 0}],\n"
    " \"transfers\": [{\"data\": \"d\", \"link\": \"l\", \"from\": 0, \"to\": 1, \"bytes\": 8, \"start\": 1, \"end\": 2}]}";

/* GOOD_TRACE with the first occurrence of `from` replaced by `to`; loads it
 * and returns the load's result (the trace is freed). */
static int load_edited(const char *from, const char *to)
{
    char text[2048];
    const char *at = strstr(GOOD_TRACE, from);
    if (!at)
        return 99;
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - GOOD_TRACE), GOOD_TRACE, to,
             at + strlen(from));
    synor_trace *t = (synor_trace *)&t; /* untouched on failure */
    int rc = synor_trace_load_string(text, strlen(text), "e.json", &t);
    if (rc == 0)
        synor_trace_destroy(t);
    else if (t != (synor_trace *)&t)
        return 98;
    return rc;
}

TEST(trace_loading_validates_every_field)
{
    synor_trace *t;
    ASSERT_OK(synor_trace_load_string(GOOD_TRACE, strlen(GOOD_TRACE), "g.json", &t));
    /* tasks and transfers come back in start order, as sim.h promises */
    ASSERT_STREQ(t->tasks[0].id, "x");
    ASSERT_STREQ(t->tasks[1].id, "y");
    synor_trace_destroy(t);
    /* a task that ends far beyond the makespan: the report's timeline would
     * convert 1e20 / column width to int (undefined behaviour) */
    ASSERT_EQ(load_edited("\"end\": 4", "\"end\": 1e20"), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "e.json:6:");
    ASSERT_CONTAINS(synor_errmsg(), "tasks[0].end: 1e+20 is after the makespan 4");
    ASSERT_EQ(load_edited("\"start\": 2, \"end\": 4", "\"start\": 5, \"end\": 5"), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "tasks[0].start: 5 is after the makespan 4");
    /* transfers likewise */
    ASSERT_EQ(load_edited("\"start\": 1, \"end\": 2}]}", "\"start\": 1, \"end\": 9}]}"),
              SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "e.json:8:");
    ASSERT_CONTAINS(synor_errmsg(), "transfers[0].end: 9 is after the makespan 4");
    ASSERT_EQ(load_edited("\"start\": 1, \"end\": 2}]}", "\"start\": 2, \"end\": 1}]}"),
              SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "transfers[0]: end 1 is before start 2");
    /* device indices in range */
    ASSERT_EQ(load_edited("\"to\": 1", "\"to\": 2"), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "transfers[0].to");
    ASSERT_EQ(load_edited("\"device\": 1", "\"device\": 2"), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "tasks[0].device");
    /* no task may end when the makespan is 0 */
    ASSERT_EQ(load_edited("\"makespan_s\": 4", "\"makespan_s\": 0"), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "is after the makespan 0");
    /* rounding in a written trace is tolerated: an end a hair past the
     * makespan loads */
    ASSERT_OK(load_edited("\"end\": 4", "\"end\": 4.000000000000001"));
    /* negative and non-integer figures */
    ASSERT_EQ(load_edited("\"energy_j\": 0", "\"energy_j\": -1"), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "tasks[0].energy_j");
    ASSERT_EQ(load_edited("\"bytes\": 8", "\"bytes\": 8.5"), SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "transfers[0].bytes");
}

TEST(allocation_failures_are_clean)
{
    /* every allocation of loading, costing, planning and simulating fails
     * in turn: each call returns SYNOR_ENOMEM or succeeds, nothing leaks
     * (ASan) or crashes */
    catalog();
    int failures = 0;
    for (long k = 1; k < 3000; k++) {
        fixture x;
        synor_plan *p = NULL;
        synor_trace *t = NULL;
        char *json = NULL, *rep = NULL;
        synor__alloc_fail_after(k);
        int rc = setup(&x, FABRIC, WL);
        if (!rc)
            rc = synor_plan_create(x.c, NULL, &p);
        if (!rc)
            rc = synor_simulate(x.c, p, &t);
        if (!rc && !(json = synor_trace_to_json(t)))
            rc = SYNOR_ENOMEM;
        if (!rc && !(rep = synor_report_text(t, NULL)))
            rc = SYNOR_ENOMEM;
        synor__alloc_fail_after(0);
        free(json);
        free(rep);
        synor_trace_destroy(t);
        synor_plan_destroy(p);
        teardown(&x);
        if (rc == 0)
            break;
        if (rc != SYNOR_ENOMEM)
            fprintf(stderr, "  allocation %ld: %s\n", k, synor_errmsg());
        ASSERT_EQ(rc, SYNOR_ENOMEM);
        failures++;
    }
    ASSERT(failures > 50);
}

TEST(cleanup)
{
    synor_catalog_destroy(cat);
    cat = NULL;
}

TEST_MAIN(transfers_share_a_link, link_sharing_matches_a_fluid_model, a_chain_by_hand,
          the_runtime_rules_keep_released_tasks_on_their_worker,
          the_host_submits_one_task_after_another, out_of_memory_names_task_device_and_sizes,
          every_strategy_valid_and_deterministic, training_on_two_nodes,
          trace_round_trip_and_bad_traces, trace_loading_validates_every_field,
          allocation_failures_are_clean, cleanup)
