/* fuzz_workload.c - workload files (synor_workload_load_string), and what
 * the project does next with one: cost it on the built-in "seed" fabric,
 * plan it, simulate it and report the trace.
 *
 * Contract checked: a rejected file leaves *out untouched and names the
 * input with a position inside it; an accepted workload written as JSON
 * (synor_workload_to_json) loads again and writes the same bytes; the same
 * bytes load the same way twice; a failed allocation is SYNOR_ENOMEM with
 * *out untouched, or the same workload. For small workloads (up to
 * MAX_PLANNED tasks): a HEFT plan passes synor_plan_validate, the plan's
 * JSON is valid, and the simulated traces (the plan's and the dynamic
 * strategy's) pass fuzz_check_trace; planning and simulating may refuse
 * (no device can run a task, memory), but only with a message. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "json/json.h"
#include "synor.h"

#define MAX_PLANNED 64

static synor_catalog *cat;
static synor_fabric *seed;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat) ||
        synor_fabric_load_builtin(cat, "seed", &seed))
        fuzz_fail("set-up: %s", synor_errmsg());
    return 0;
}

static char *json_of(const synor_workload *w)
{
    char *s = synor_workload_to_json(w);
    FUZZ_CHECK(s, "synor_workload_to_json failed: %s", synor_errmsg());
    return s;
}

static void refused(int rc, const char *what)
{
    FUZZ_CHECK(rc < 0 && synor_errmsg()[0], "%s failed (%d) without a message", what, rc);
}

static void plan_and_simulate(const synor_workload *w)
{
    synor_cost *c;
    int rc = synor_cost_create(w, seed, &c);
    if (rc) {
        refused(rc, "synor_cost_create");
        return;
    }
    synor_plan *p;
    rc = synor_plan_create(c, NULL, &p);
    if (rc) {
        refused(rc, "synor_plan_create");
    } else {
        synor_sched_problem *pb;
        FUZZ_CHECK(synor_sched_problem_from_cost(c, &pb) == 0, "problem: %s", synor_errmsg());
        FUZZ_CHECK(synor_plan_validate(p, pb) == 0, "a HEFT plan is not valid: %s",
                   synor_errmsg());
        synor_sched_problem_free(pb);
        char *pj = synor_plan_to_json(p, c);
        synor__jdoc *d;
        FUZZ_CHECK(pj && synor__json_parse(pj, strlen(pj), "plan.json", &d) == 0,
                   "the plan's JSON is not JSON: %s", synor_errmsg());
        synor__jdoc_free(d);
        free(pj);
    }
    for (int dynamic = 0; dynamic <= 1; dynamic++) {
        if (!dynamic && rc)
            continue;
        synor_trace *t;
        int src = synor_simulate(c, dynamic ? NULL : p, &t);
        if (src) {
            refused(src, "synor_simulate");
            continue;
        }
        free(fuzz_check_trace(t));
        synor_trace_destroy(t);
    }
    if (!rc)
        synor_plan_destroy(p);
    synor_cost_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    synor_workload *const untouched = FUZZ_UNTOUCHED(synor_workload);
    synor_workload *w = untouched;
    fuzz_alloc_count_start();
    int rc = synor_workload_load_string(text, size, FUZZ_NAME, &w);
    long allocs = fuzz_alloc_count_stop();
    if (rc) {
        fuzz_check_error(rc, 0, FUZZ_NAME, data, size);
        FUZZ_CHECK(w == untouched, "a rejected workload wrote *out");
        return 0;
    }
    char *j1 = json_of(w);
    synor_workload *again;
    rc = synor_workload_load_string(j1, strlen(j1), "written.json", &again);
    FUZZ_CHECK(rc == 0, "a workload's own JSON does not load: %s\n%.400s", synor_errmsg(), j1);
    char *j2 = json_of(again);
    fuzz_check_same(j1, j2, "a workload written, read and written again");
    free(j2);
    synor_workload_destroy(again);

    synor_workload *twice;
    FUZZ_CHECK(synor_workload_load_string(text, size, FUZZ_NAME, &twice) == 0,
               "the same bytes failed the second time: %s", synor_errmsg());
    char *jt = json_of(twice);
    fuzz_check_same(j1, jt, "two loads of the same bytes");
    free(jt);
    synor_workload_destroy(twice);

    synor_workload *v = untouched;
    fuzz_alloc_fail_one(data, size, allocs);
    rc = synor_workload_load_string(text, size, FUZZ_NAME, &v);
    int hit = fuzz_alloc_disarm();
    if (rc) {
        FUZZ_CHECK(hit, "the load failed only the second time: %s", synor_errmsg());
        fuzz_check_error(rc, 1, FUZZ_NAME, data, size);
        FUZZ_CHECK(v == untouched, "a load that ran out of memory wrote *out");
    } else {
        char *jv = json_of(v);
        fuzz_check_same(j1, jv, "a load with a failed allocation and one without");
        free(jv);
        synor_workload_destroy(v);
    }
    free(j1);

    if (synor_workload_count(w) <= MAX_PLANNED)
        plan_and_simulate(w);
    synor_workload_destroy(w);
    return 0;
}
