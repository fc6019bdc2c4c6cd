/* fuzz_fabric.c - fabric files (synor_fabric_load_string) against the
 * built-in profile catalog, and a small workload simulated on each fabric
 * that loads.
 *
 * Contract checked: a rejected file leaves *out untouched and names the
 * input with a position inside it; an accepted fabric is self-consistent
 * (every device's memory space, node and profile exist, every path's hops
 * are links of the fabric that join the two memories hop by hop, transfer
 * times are finite and non-negative) and the same bytes load into the same
 * fabric twice (fabrics have no JSON output: a dump of every field is
 * compared); a failed allocation is SYNOR_ENOMEM with *out untouched, or
 * the same fabric. On fabrics of up to MAX_SIMULATED devices, the workload
 * below is planned (HEFT, validated) and simulated, and the trace passes
 * fuzz_check_trace. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "synor.h"

#define MAX_SIMULATED 16

/* A fork and a join: a matmul feeding two element-wise tasks whose results
 * a third consumes, so that data crosses devices. */
static const char *const WORKLOAD =
    "{\"format\": \"synor-workload/1\", \"name\": \"fork-join\", \"tasks\": [\n"
    " {\"id\": \"mm\", \"op\": \"matmul\", \"dtype\": \"fp16\", \"dims\": {\"m\": 2048, \"n\": 2048, \"k\": 2048},\n"
    "  \"produces\": [{\"name\": \"x\", \"bytes\": 8388608}]},\n"
    " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 4194304}, \"consumes\": [{\"name\": \"x\"}],\n"
    "  \"produces\": [{\"name\": \"y\", \"bytes\": 8388608}]},\n"
    " {\"id\": \"b\", \"op\": \"gelu\", \"dims\": {\"elements\": 4194304}, \"consumes\": [{\"name\": \"x\"}],\n"
    "  \"produces\": [{\"name\": \"z\", \"bytes\": 8388608}]},\n"
    " {\"id\": \"c\", \"op\": \"softmax\", \"dims\": {\"elements\": 4194304},\n"
    "  \"consumes\": [{\"name\": \"y\"}, {\"name\": \"z\"}]}]}";

static synor_catalog *cat;
static synor_workload *wl;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat) ||
        synor_workload_load_string(WORKLOAD, strlen(WORKLOAD), "fork-join.json", &wl))
        fuzz_fail("set-up: %s", synor_errmsg());
    return 0;
}

/* Every field of the fabric, and checks of its consistency on the way. */
static char *dump(const synor_fabric *f)
{
    fuzz_dump d;
    fuzz_dump_init(&d);
    size_t nd = synor_fabric_device_count(f), ns = synor_fabric_space_count(f);
    size_t nn = synor_fabric_node_count(f), nl = synor_fabric_link_count(f);
    fuzz_dump_printf(&d, "name %s currency %s notes %s\n", synor_fabric_name(f),
                     synor_fabric_currency(f), synor_fabric_notes(f));
    for (size_t i = 0; i < nn; i++)
        fuzz_dump_printf(&d, "node %zu %s\n", i, synor_fabric_node_name(f, i));
    for (size_t i = 0; i < ns; i++)
        fuzz_dump_printf(&d, "space %zu %s\n", i, synor_fabric_space_name(f, i));
    FUZZ_CHECK(nd > 0 && nn > 0, "a fabric with %zu devices and %zu nodes", nd, nn);
    for (size_t i = 0; i < nd; i++) {
        const synor_fabric_device *v = synor_fabric_device_at(f, i);
        FUZZ_CHECK(v->node < nn && v->space < ns && v->profile && v->dev,
                   "device %zu: node %zu of %zu, space %zu of %zu", i, v->node, nn, v->space,
                   ns);
        FUZZ_CHECK(synor_fabric_find_device(f, v->name) == (long)i, "device %s not found by name",
                   v->name);
        fuzz_dump_printf(&d, "device %zu %s profile %s node %zu space %zu price %lld\n", i,
                         v->name, v->profile->id, v->node, v->space, (long long)v->price_micro);
    }
    for (size_t i = 0; i < nl; i++) {
        const synor_link *l = synor_fabric_link(f, i);
        FUZZ_CHECK(l->a < ns && l->b < ns && l->a != l->b, "link %zu joins %zu and %zu of %zu",
                   i, l->a, l->b, ns);
        FUZZ_CHECK(l->bandwidth > 0 && isfinite(l->bandwidth) && l->latency >= 0 &&
                       isfinite(l->latency),
                   "link %s: bandwidth %g, latency %g", l->name, l->bandwidth, l->latency);
        fuzz_dump_printf(&d, "link %zu %s %s %zu-%zu %.17g %.17g %d\n", i, l->name,
                         synor_link_kind_name(l->kind), l->a, l->b, l->bandwidth, l->latency,
                         l->from_profile);
    }
    for (size_t i = 0; i < nd; i++)
        for (size_t j = 0; j < nd; j++) {
            synor_path pv = synor_fabric_path(f, i, j);
            const synor_path *p = &pv;
            size_t at = synor_fabric_device_at(f, i)->space;
            size_t to = synor_fabric_device_at(f, j)->space;
            FUZZ_CHECK(p && p->n_hops <= SYNOR_PATH_MAX_HOPS, "path %zu->%zu", i, j);
            for (size_t h = 0; h < p->n_hops; h++) {
                FUZZ_CHECK(p->hops[h] < nl, "path %zu->%zu: hop %zu is link %zu of %zu", i, j, h,
                           p->hops[h], nl);
                const synor_link *l = synor_fabric_link(f, p->hops[h]);
                FUZZ_CHECK(l->a == at || l->b == at,
                           "path %zu->%zu: hop %zu (%s) does not start at space %zu", i, j, h,
                           l->name, at);
                at = l->a == at ? l->b : l->a;
            }
            FUZZ_CHECK(at == to, "path %zu->%zu ends at space %zu, not %zu", i, j, at, to);
            double t = synor_fabric_transfer_time(f, i, j, 1e6);
            FUZZ_CHECK(isfinite(t) && t >= 0, "transfer %zu->%zu: %g s", i, j, t);
            fuzz_dump_printf(&d, "path %zu-%zu %s %zu %.17g\n", i, j,
                             synor_link_kind_name(p->kind), p->n_hops, t);
        }
    return fuzz_dump_take(&d);
}

static void simulate(const synor_fabric *f)
{
    synor_cost *c;
    synor_plan *p = NULL;
    synor_trace *t;
    int rc = synor_cost_create(wl, f, &c);
    if (rc) {
        FUZZ_CHECK(synor_errmsg()[0], "synor_cost_create failed without a message");
        return;
    }
    if ((rc = synor_plan_create(c, NULL, &p)) == 0) {
        synor_sched_problem *pb;
        FUZZ_CHECK(synor_sched_problem_from_cost(c, &pb) == 0, "problem: %s", synor_errmsg());
        FUZZ_CHECK(synor_plan_validate(p, pb) == 0, "a HEFT plan is not valid: %s",
                   synor_errmsg());
        synor_sched_problem_free(pb);
        if ((rc = synor_simulate(c, p, &t)) == 0) {
            free(fuzz_check_trace(t));
            synor_trace_destroy(t);
        }
    }
    FUZZ_CHECK(rc == 0 || synor_errmsg()[0], "planning or simulating failed without a message");
    synor_plan_destroy(p);
    synor_cost_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    synor_fabric *const untouched = FUZZ_UNTOUCHED(synor_fabric);
    synor_fabric *f = untouched;
    fuzz_alloc_count_start();
    int rc = synor_fabric_load_string(cat, text, size, FUZZ_NAME, &f);
    long allocs = fuzz_alloc_count_stop();
    if (rc) {
        fuzz_check_error(rc, 0, FUZZ_NAME, data, size);
        FUZZ_CHECK(f == untouched, "a rejected fabric wrote *out");
        return 0;
    }
    char *d1 = dump(f);
    synor_fabric *g;
    FUZZ_CHECK(synor_fabric_load_string(cat, text, size, FUZZ_NAME, &g) == 0,
               "the same bytes failed the second time: %s", synor_errmsg());
    char *d2 = dump(g);
    fuzz_check_same(d1, d2, "two loads of the same bytes");
    free(d2);
    synor_fabric_destroy(g);

    synor_fabric *h = untouched;
    fuzz_alloc_fail_one(data, size, allocs);
    rc = synor_fabric_load_string(cat, text, size, FUZZ_NAME, &h);
    int hit = fuzz_alloc_disarm();
    if (rc) {
        FUZZ_CHECK(hit, "the load failed only the second time: %s", synor_errmsg());
        fuzz_check_error(rc, 1, FUZZ_NAME, data, size);
        FUZZ_CHECK(h == untouched, "a load that ran out of memory wrote *out");
    } else {
        char *d3 = dump(h);
        fuzz_check_same(d1, d3, "a load with a failed allocation and one without");
        free(d3);
        synor_fabric_destroy(h);
    }
    free(d1);
    if (synor_fabric_device_count(f) <= MAX_SIMULATED)
        simulate(f);
    synor_fabric_destroy(f);
    return 0;
}
