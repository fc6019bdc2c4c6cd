/* test_sim_preempt.c - simulated preemption (synor_simulate_preempt) on
 * Topcuoglu's 10-task example with exact costs on three processors (HEFT
 * 80 s, and the dynamic strategy 80 s too): a preemption without
 * replacement makes the run longer, with replacement the device stays and
 * the makespan comes back; the trace has the marks in order; a task cut at
 * the deadline re-runs elsewhere once; the money of a device held part of
 * the run and of replacement capacity; determinism; strict validation. */
#include <math.h>

#include "common/common.h"
#include "synor.h"
#include "test.h"

static synor_catalog *cat;

/* three-processors with prices (1, 2 and 3 USD per hour) */
static const char *const PRICED =
    "{\"format\": \"synor-fabric/1\", \"name\": \"priced3\", \"currency\": \"USD\",\n"
    " \"nodes\": [{\"name\": \"host\"}],\n"
    " \"devices\": [\n"
    "  {\"name\": \"P1\", \"profile\": \"amd-epyc-9654\", \"node\": \"host\", "
    "\"price_per_hour\": \"1.00\"},\n"
    "  {\"name\": \"P2\", \"profile\": \"intel-xeon-8480plus\", \"node\": \"host\", "
    "\"price_per_hour\": \"2.00\"},\n"
    "  {\"name\": \"P3\", \"profile\": \"aws-graviton3\", \"node\": \"host\", "
    "\"price_per_hour\": \"3.00\"}]}";

typedef struct fx {
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
} fx;

static int fx_open(fx *x, int priced)
{
    memset(x, 0, sizeof *x);
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        return -1;
    int rc = priced ? synor_fabric_load_string(cat, PRICED, strlen(PRICED), "priced3.json", &x->f)
                    : synor_fabric_load_builtin(cat, "three-processors", &x->f);
    if (!rc)
        rc = synor_workload_load_file(SYNOR_SOURCE_DIR "/workloads/topcuoglu-2002.json", &x->w);
    if (!rc)
        rc = synor_cost_create(x->w, x->f, &x->c);
    return rc;
}

static void fx_close(fx *x)
{
    synor_cost_destroy(x->c);
    synor_workload_destroy(x->w);
    synor_fabric_destroy(x->f);
}

static synor_sim_preemption pre(size_t dev, double at, double warning, double ckpt, int replaced)
{
    synor_sim_preemption p = {dev, at, warning, ckpt, 0, replaced, 0};
    return p;
}

static const synor_trace_mark *find_mark(const synor_trace *t, const char *name)
{
    for (size_t i = 0; i < t->n_marks; i++)
        if (!strcmp(t->marks[i].name, name))
            return &t->marks[i];
    return NULL;
}

/* Every task once, none on the device after it left. */
static int check_runs(const synor_trace *t, size_t dev, double left)
{
    if (t->n_tasks != 10)
        return 0;
    for (size_t i = 0; i < t->n_tasks; i++) {
        for (size_t k = i + 1; k < t->n_tasks; k++)
            if (!strcmp(t->tasks[i].id, t->tasks[k].id))
                return 0;
        if (t->tasks[i].device == dev && t->tasks[i].end > left + 1e-12)
            return 0;
    }
    return 1;
}

TEST(preemption_without_replacement_costs_makespan_and_the_trace_says_why)
{
    fx x;
    ASSERT_OK(fx_open(&x, 0));
    synor_trace *base = NULL, *t = NULL;
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, NULL, 0, &base));
    ASSERT_NEAR(base->makespan, 80, 1e-12);
    ASSERT_EQ(base->n_marks, 0);
    synor_sim_preemption p = pre(2, 20, 10, 2, 0); /* P3 at 20 s, deadline 30 s */
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, &p, 1, &t));
    ASSERT(t->makespan > base->makespan);
    ASSERT_NEAR(t->makespan, 89, 1e-12);
    ASSERT_EQ(t->n_marks, 3);
    ASSERT(!strcmp(t->marks[0].name, "preempted"));
    ASSERT(!strcmp(t->marks[1].name, "checkpoint"));
    ASSERT(!strcmp(t->marks[2].name, "device stopped"));
    for (size_t i = 0; i < 3; i++)
        ASSERT_EQ(t->marks[i].device, 2);
    ASSERT_NEAR(t->marks[0].start, 20, 1e-12);
    /* the checkpoint after the task P3 ran at the warning, 2 s as stated */
    ASSERT(t->marks[1].start >= 20 && t->marks[1].end <= 30);
    ASSERT_NEAR(t->marks[1].end - t->marks[1].start, 2, 1e-12);
    ASSERT_NEAR(t->marks[2].start, 30, 1e-12);
    ASSERT(check_runs(t, 2, 30));
    /* no task started on P3 after the warning (its queue moved at once) */
    for (size_t i = 0; i < t->n_tasks; i++)
        ASSERT(t->tasks[i].device != 2 || t->tasks[i].start < 20);
    /* deterministic, byte for byte; the marks survive the file */
    synor_trace *t2 = NULL;
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, &p, 1, &t2));
    char *j1 = synor_trace_to_json(t), *j2 = synor_trace_to_json(t2);
    ASSERT(j1 && j2 && !strcmp(j1, j2));
    synor_trace *back = NULL;
    ASSERT_OK(synor_trace_load_string(j1, strlen(j1), "t.json", &back));
    ASSERT_EQ(back->n_marks, 3);
    ASSERT(!strcmp(back->marks[1].detail, t->marks[1].detail));
    ASSERT_NEAR(back->marks[1].end, t->marks[1].end, 1e-12);
    /* a trace without marks is written as before: no "marks" key */
    char *j0 = synor_trace_to_json(base);
    ASSERT(j0 && !strstr(j0, "\"marks\""));
    free(j0);
    free(j1);
    free(j2);
    synor_trace_destroy(back);
    synor_trace_destroy(t2);
    synor_trace_destroy(t);
    synor_trace_destroy(base);
    fx_close(&x);
}

TEST(replacement_keeps_the_device_and_restores_the_makespan)
{
    fx x;
    ASSERT_OK(fx_open(&x, 0));
    synor_trace *gone = NULL, *kept = NULL;
    synor_sim_preemption p = pre(2, 20, 10, 2, 0);
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, &p, 1, &gone));
    p.replaced = 1;
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, &p, 1, &kept));
    ASSERT(kept->makespan < gone->makespan);
    ASSERT_NEAR(kept->makespan, 80, 1e-12); /* the checkpoint is off the critical path */
    ASSERT(find_mark(kept, "replaced") && !find_mark(kept, "device stopped"));
    ASSERT(find_mark(kept, "checkpoint"));
    ASSERT(check_runs(kept, 99, 0));
    /* the checkpoint occupies its device: P3 runs n1 from 0 s to 9 s, then
     * checkpoints for 7 s, and runs no task meanwhile */
    synor_trace *a = NULL;
    synor_sim_preemption q = pre(2, 0, 50, 7, 1);
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, &q, 1, &a));
    const synor_trace_mark *c = find_mark(a, "checkpoint");
    ASSERT(c);
    ASSERT_NEAR(c->start, 9, 1e-12);
    ASSERT_NEAR(c->end, 16, 1e-12);
    for (size_t i = 0; i < a->n_tasks; i++)
        if (a->tasks[i].device == 2)
            ASSERT(a->tasks[i].end <= c->start + 1e-12 || a->tasks[i].start >= c->end - 1e-12);
    ASSERT(check_runs(a, 99, 0));
    synor_trace_destroy(a);
    synor_trace_destroy(kept);
    synor_trace_destroy(gone);
    fx_close(&x);
}

TEST(a_task_running_at_the_deadline_is_cut_and_runs_again_elsewhere)
{
    fx x;
    ASSERT_OK(fx_open(&x, 0));
    synor_trace *t = NULL;
    /* P3 runs n2 from 9 s to 27 s; a 1 s warning at 25 s cuts it at 26 s,
     * before any checkpoint could start */
    synor_sim_preemption p = pre(2, 25, 1, 0, 0);
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, &p, 1, &t));
    const synor_trace_mark *ab = find_mark(t, "aborted");
    ASSERT(ab);
    ASSERT_CONTAINS(ab->detail, "\"n2\"");
    ASSERT_NEAR(ab->start, 9, 1e-12);
    ASSERT_NEAR(ab->end, 26, 1e-12);
    ASSERT(!find_mark(t, "checkpoint"));
    ASSERT(check_runs(t, 2, 26));
    for (size_t i = 0; i < t->n_tasks; i++)
        if (!strcmp(t->tasks[i].id, "n2"))
            ASSERT(t->tasks[i].device != 2 && t->tasks[i].start >= 26);
    ASSERT_NEAR(t->makespan, 92, 1e-12);
    synor_trace_destroy(t);
    fx_close(&x);
}

TEST(money_counts_a_device_until_it_left_and_replacement_at_its_price)
{
    fx x;
    ASSERT_OK(fx_open(&x, 1));
    synor_trace *base = NULL, *gone = NULL, *kept = NULL;
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, NULL, 0, &base));
    /* 80 s at 1 + 2 + 3 USD per hour: 6 x 80 / 3600 USD */
    ASSERT_EQ(base->money_micro, 133333);
    synor_sim_preemption p = pre(2, 20, 10, 2, 0);
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, &p, 1, &gone));
    /* P1 and P2 for 89 s, P3 until its deadline (30 s) */
    ASSERT_EQ(gone->money_micro, synor_money_for_seconds(1000000, 89) +
                                     synor_money_for_seconds(2000000, 89) +
                                     synor_money_for_seconds(3000000, 30));
    p.replaced = 1;
    p.replacement_price_micro = 9000000; /* the market's ask: 9 USD/h */
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, &p, 1, &kept));
    ASSERT_EQ(kept->money_micro,
              synor_money_for_seconds(1000000, 80) + synor_money_for_seconds(2000000, 80) +
                  synor_money_for_seconds(3000000, 30) + synor_money_for_seconds(9000000, 50));
    const synor_trace_mark *r = find_mark(kept, "replaced");
    ASSERT(r);
    ASSERT_CONTAINS(r->detail, "9000000");
    synor_trace_destroy(kept);
    synor_trace_destroy(gone);
    synor_trace_destroy(base);
    fx_close(&x);
}

TEST(a_checkpoint_by_size_and_preemptions_after_the_run_do_nothing)
{
    fx x;
    ASSERT_OK(fx_open(&x, 0));
    synor_trace *t = NULL;
    synor_sim_preemption p[2] = {pre(1, 500, 10, 0, 0), pre(2, 20, 10, -1, 1)};
    p[1].checkpoint_bw = 1e9; /* the example's data have no bytes: 0 s */
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, p, 2, &t));
    ASSERT_NEAR(t->makespan, 80, 1e-12);
    const synor_trace_mark *c = find_mark(t, "checkpoint");
    ASSERT(c);
    ASSERT_CONTAINS(c->detail, "0 bytes");
    for (size_t i = 0; i < t->n_marks; i++)
        ASSERT(t->marks[i].device == 2); /* nothing for P2: the run was over at 500 s */
    synor_trace_destroy(t);
    fx_close(&x);
}

TEST(bad_preemptions_are_refused_naming_the_field)
{
    fx x;
    ASSERT_OK(fx_open(&x, 0));
    synor_trace *t = NULL;
    synor_sim_preemption p = pre(3, 1, 1, 0, 0);
    ASSERT_EQ(synor_simulate_preempt(x.c, NULL, &p, 1, &t), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "device 3");
    p = pre(0, -1, 1, 0, 0);
    ASSERT_EQ(synor_simulate_preempt(x.c, NULL, &p, 1, &t), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "at -1");
    p = pre(0, 1, 0, 0, 0);
    ASSERT_EQ(synor_simulate_preempt(x.c, NULL, &p, 1, &t), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "warning 0");
    p = pre(0, 1, NAN, 0, 0);
    ASSERT_EQ(synor_simulate_preempt(x.c, NULL, &p, 1, &t), SYNOR_EINVAL);
    p = pre(0, 1, 1, -1, 0);
    ASSERT_EQ(synor_simulate_preempt(x.c, NULL, &p, 1, &t), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "checkpoint_bw");
    p = pre(0, 1, 1, 0, 1);
    p.replacement_price_micro = -5;
    ASSERT_EQ(synor_simulate_preempt(x.c, NULL, &p, 1, &t), SYNOR_EINVAL);
    synor_sim_preemption two[2] = {pre(0, 10, 5, 0, 1), pre(0, 12, 5, 0, 1)};
    ASSERT_EQ(synor_simulate_preempt(x.c, NULL, two, 2, &t), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "deadline");
    two[1].at = 20;
    two[0].replaced = 0;
    ASSERT_EQ(synor_simulate_preempt(x.c, NULL, two, 2, &t), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "has left");
    two[0].replaced = 1; /* two in turn on a device kept by replacement: fine */
    ASSERT_OK(synor_simulate_preempt(x.c, NULL, two, 2, &t));
    synor_trace_destroy(t);
    t = NULL;
    ASSERT_EQ(synor_simulate_preempt(x.c, NULL, NULL, 1, &t), SYNOR_EINVAL);
    /* a plan fixed in advance cannot follow a device that leaves */
    synor_plan_options o;
    synor_plan_options_init(&o);
    synor_plan *plan = NULL;
    ASSERT_OK(synor_plan_create(x.c, &o, &plan));
    p = pre(0, 1, 1, 0, 0);
    ASSERT_EQ(synor_simulate_preempt(x.c, plan, &p, 1, &t), SYNOR_ENOTSUP);
    ASSERT_CONTAINS(synor_errmsg(), "dynamic");
    ASSERT(t == NULL);
    synor_plan_destroy(plan);
    /* marks in a trace file are checked like tasks */
    const char *bad = "{\"format\": \"synor-trace/1\", \"workload\": \"w\", \"fabric\": \"f\", "
                      "\"strategy\": \"s\", \"currency\": \"USD\", \"makespan_s\": 1, "
                      "\"energy_active_j\": 0, \"energy_idle_j\": 0, \"money_micro\": 0, "
                      "\"devices\": [{\"name\": \"d\", \"product\": \"p\", \"kind\": \"cpu\", "
                      "\"simulated\": true, \"idle_w\": 0, \"price_micro\": 0}], \"tasks\": [], "
                      "\"transfers\": [], \"marks\": [{\"name\": \"preempted\", \"device\": 1, "
                      "\"start\": 0, \"end\": 0, \"detail\": \"\"}]}";
    ASSERT_EQ(synor_trace_load_string(bad, strlen(bad), "m.json", &t), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "marks[0].device");
    fx_close(&x);
}

TEST_MAIN(preemption_without_replacement_costs_makespan_and_the_trace_says_why,
          replacement_keeps_the_device_and_restores_the_makespan,
          a_task_running_at_the_deadline_is_cut_and_runs_again_elsewhere,
          money_counts_a_device_until_it_left_and_replacement_at_its_price,
          a_checkpoint_by_size_and_preemptions_after_the_run_do_nothing,
          bad_preemptions_are_refused_naming_the_field)
