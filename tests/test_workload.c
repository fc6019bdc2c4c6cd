/* test_workload.c - workload files: derived work of operations, the
 * dependency graph and its order, round trips, and every kind of bad input
 * reported with file:line:column and field. */
#include "common/common.h"
#include "synor.h"
#include "test.h"

static const char *const GOOD =
    "{\"format\": \"synor-workload/1\", \"name\": \"demo\", \"tasks\": [\n"
    " {\"id\": \"load\", \"op\": \"data_load\", \"work\": {\"flops\": 0, \"bytes_read\": 1e6, \"bytes_written\": 1e6}},\n"
    " {\"id\": \"mm\", \"op\": \"matmul\", \"dtype\": \"bf16\", \"dims\": {\"m\": 1024, \"n\": 2048, \"k\": 512},\n"
    "  \"deps\": [\"load\"], \"priority\": \"critical\", \"preferred\": \"tpu\", \"fallback\": \"gpu\",\n"
    "  \"consumes\": [{\"name\": \"x\", \"bytes\": 1048576}], \"produces\": [{\"name\": \"y\", \"bytes\": 4194304}]},\n"
    " {\"id\": \"attn\", \"op\": \"flash_attention\", \"dtype\": \"fp16\",\n"
    "  \"dims\": {\"batch\": 2, \"seq\": 128, \"heads\": 8, \"kv_heads\": 2, \"head_dim\": 64}, \"deps\": [\"load\"]},\n"
    " {\"id\": \"ffn\", \"op\": \"feed_forward\", \"backward\": true, \"dtype\": \"bf16\",\n"
    "  \"dims\": {\"batch\": 1, \"seq\": 16, \"hidden\": 288, \"ffn\": 768}, \"deps\": [\"mm\", \"attn\"]}\n"
    "]}\n";

TEST(derived_work_and_order)
{
    synor_workload *w;
    ASSERT_OK(synor_workload_load_string(GOOD, strlen(GOOD), "demo.json", &w));
    ASSERT_STREQ(synor_workload_name(w), "demo");
    ASSERT_EQ(synor_workload_count(w), 4);
    const synor_task *mm = synor_workload_task(w, 1);
    ASSERT_NEAR(mm->op.work.flops, 2.0 * 1024 * 2048 * 512, 1e-12);
    ASSERT_NEAR(mm->op.work.bytes_read, (1024.0 * 512 + 512.0 * 2048) * 2, 1e-12);
    ASSERT_NEAR(mm->op.work.bytes_written, 1024.0 * 2048 * 2, 1e-12);
    ASSERT_EQ(mm->priority, SYNOR_PRIORITY_CRITICAL);
    ASSERT(mm->has_preferred && mm->preferred == SYNOR_KIND_TPU && mm->fallback == SYNOR_KIND_GPU);
    ASSERT_EQ(mm->n_deps, 1);
    ASSERT_EQ(mm->deps[0], 0);
    ASSERT_EQ(synor_workload_data(w, mm->consumes[0])->bytes, 1048576);
    /* attention: 4*b*h*q*L*d + 5*b*h*q*L; GQA reads K,V with 2 kv heads */
    const synor_task *at = synor_workload_task(w, 2);
    double b = 2, h = 8, q = 128, d = 64, g = 2;
    ASSERT_NEAR(at->op.work.flops, 4 * b * h * q * q * d + 5 * b * h * q * q, 1e-12);
    ASSERT_NEAR(at->op.work.bytes_read, (b * q * h * d + 2 * b * q * g * d) * 2, 1e-12);
    /* feed_forward backward: twice 6*T*H*F */
    const synor_task *ff = synor_workload_task(w, 3);
    ASSERT_NEAR(ff->op.work.flops, 2 * 6.0 * 16 * 288 * 768, 1e-12);
    ASSERT(synor_workload_task(w, 0)->op.sequential); /* data_load defaults to sequential */
    ASSERT(!ff->op.sequential);
    /* dependencies come first in the order */
    const size_t *ord = synor_workload_order(w);
    size_t pos[4];
    for (size_t i = 0; i < 4; i++)
        pos[ord[i]] = i;
    ASSERT(pos[0] < pos[1] && pos[0] < pos[2] && pos[1] < pos[3] && pos[2] < pos[3]);
    ASSERT(synor_workload_flops(w) > 0 && synor_workload_bytes(w) > 2e6);
    synor_workload_destroy(w);
}

TEST(json_round_trip)
{
    synor_workload *w, *v;
    ASSERT_OK(synor_workload_load_string(GOOD, strlen(GOOD), "demo.json", &w));
    char *s = synor_workload_to_json(w);
    ASSERT(s);
    ASSERT_OK(synor_workload_load_string(s, strlen(s), "again.json", &v));
    ASSERT_EQ(synor_workload_count(v), synor_workload_count(w));
    for (size_t i = 0; i < synor_workload_count(w); i++) {
        const synor_task *a = synor_workload_task(w, i), *b2 = synor_workload_task(v, i);
        ASSERT_STREQ(a->id, b2->id);
        ASSERT_NEAR(a->op.work.flops + 1, b2->op.work.flops + 1, 1e-12);
        ASSERT_EQ(a->n_deps, b2->n_deps);
        ASSERT_EQ(a->priority, b2->priority);
        ASSERT(memcmp(&a->op.dims, &b2->op.dims, sizeof a->op.dims) == 0);
    }
    free(s);
    synor_workload_destroy(v);
    synor_workload_destroy(w);
}

static const char *load_err(const char *text)
{
    synor_workload *w;
    if (synor_workload_load_string(text, strlen(text), "w.json", &w) == 0) {
        synor_workload_destroy(w);
        return "(loaded)";
    }
    return synor_errmsg();
}

#define HDR "{\"format\": \"synor-workload/1\", \"tasks\": [\n"

TEST(bad_input_names_where_and_what)
{
    ASSERT_CONTAINS(load_err(HDR
                             " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"deps\": [\"c\"]},\n"
                             " {\"id\": \"b\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"deps\": [\"a\"]},\n"
                             " {\"id\": \"c\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"deps\": [\"b\"]},\n"
                             " {\"id\": \"d\", \"op\": \"relu\", \"dims\": {\"elements\": 8}}]}"),
                    "w.json:2:61: tasks[0].deps: dependency cycle: a -> c -> b -> a");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"matmull\"}]}"),
                    "w.json:2:20: tasks[0].op: unknown operation \"matmull\"");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"deps\": [\"zz\"]}]}"),
                    "w.json:2:62: tasks[0].deps[0]: no task with id \"zz\"");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}},\n"
                                 " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}}]}"),
                    "w.json:3:9: tasks[1].id: duplicate task id \"a\" (also tasks[0])");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"matmul\", \"dims\": {\"m\": 4, \"n\": -4, \"k\": 4}}]}"),
                    "tasks[0].dims.n: value -4 is outside [1, 1099511627776]");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"matmul\", \"dims\": {\"m\": 4, \"n\": 4}}]}"),
                    "tasks[0]: operation matmul needs a positive \"k\"");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"fft\"}]}"),
                    "w.json:2:2: tasks[0]: operation fft has no work formula");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"all_reduce\"}]}"),
                    "tasks[0]: operation all_reduce needs a positive \"elements\"");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"all_reduce\", \"work\": {\"flops\": 1, \"bytes_read\": 1e999, \"bytes_written\": 1}}]}"),
                    "number out of range: 1e999");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"all_reduce\", \"work\": {\"flops\": -1, \"bytes_read\": 1, \"bytes_written\": 1}}]}"),
                    "tasks[0].work.flops: value -1 is below the minimum 0");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"colour\": 1}]}"),
                    "tasks[0]: unknown field \"colour\"");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"priority\": \"urgent\"}]}"),
                    "tasks[0].priority: unknown priority \"urgent\"");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"preferred\": \"qpu\"}]}"),
                    "tasks[0].preferred: unknown processor kind \"qpu\"");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\" \"dims\": {}}]}"),
                    "w.json:2:27: expected ',' or '}' in object");
    /* an empty data name is reported where it is (found by fuzz/fuzz_workload:
     * the message was "data needs a name", with no file or field) */
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8},\n"
                                 "  \"consumes\": [{\"name\": \"\", \"bytes\": 6}]}]}"),
                    "w.json:3:25: tasks[0].consumes[0].name: empty data name");
    /* work derived from dims obeys the bound written work has: else the
     * workload's own JSON (work written explicitly) would not load back
     * (found by fuzz/fuzz_workload) */
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"matmul\", \"dims\": {\"m\": 1099511627776, "
                                 "\"n\": 1099511627776, \"k\": 1099511627776}}]}"),
                    "w.json:2:38: tasks[0].dims: the work derived from them, 2.65846e+36 FLOPs, "
                    "is above the maximum 1e+30");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 1099511627776}},\n"
                                 " {\"id\": \"b\", \"op\": \"embedding\", \"dims\": {\"vocab\": 1099511627776, "
                                 "\"hidden\": 1099511627776, \"seq\": 1099511627776, \"batch\": 1099511627776}}]}"),
                    "tasks[1].dims: the work derived from them, 5.31691e+36 bytes read, is above");
}

TEST(long_chains_and_wide_graphs)
{
    /* 20,000 tasks in a chain with a fan-out: linear-time graph building */
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, HDR);
    for (int i = 0; i < 20000; i++) {
        synor__buf_printf(&b, "%s{\"id\": \"t%d\", \"op\": \"relu\", \"dims\": {\"elements\": 1024}", i ? ",\n" : "", i);
        if (i)
            synor__buf_printf(&b, ", \"deps\": [\"t%d\"%s]", i - 1, i > 1 ? ", \"t0\"" : "");
        synor__buf_puts(&b, "}");
    }
    synor__buf_puts(&b, "]}");
    synor_workload *w;
    ASSERT_OK(synor_workload_load_string(b.data, b.len, "chain.json", &w));
    const size_t *ord = synor_workload_order(w);
    for (size_t i = 0; i < 20000; i++)
        ASSERT_EQ(ord[i], i);
    synor_workload_destroy(w);
    synor__buf_free(&b);
}

TEST(allocation_failures_are_clean)
{
    int failures = 0;
    for (long k = 1; k < 400; k++) {
        synor_workload *w = NULL;
        synor__alloc_fail_after(k);
        int rc = synor_workload_load_string(GOOD, strlen(GOOD), "demo.json", &w);
        synor__alloc_fail_after(0);
        if (rc == 0) {
            synor_workload_destroy(w);
            break;
        }
        ASSERT_EQ(rc, SYNOR_ENOMEM);
        failures++;
    }
    ASSERT(failures > 10);
}

TEST(data_edges_and_their_errors)
{
    /* consuming a produced datum adds the dependency and carries its bytes */
    const char *text = HDR " {\"id\": \"p\", \"op\": \"relu\", \"dims\": {\"elements\": 8},"
                           " \"produces\": [{\"name\": \"x\", \"bytes\": 64}, {\"name\": \"y\", \"bytes\": 32}]},\n"
                           " {\"id\": \"q\", \"op\": \"relu\", \"dims\": {\"elements\": 8},"
                           " \"consumes\": [{\"name\": \"x\"}, {\"name\": \"y\"}, {\"name\": \"w\", \"bytes\": 7}]}]}";
    synor_workload *w;
    ASSERT_OK(synor_workload_load_string(text, strlen(text), "d.json", &w));
    const synor_task *q = synor_workload_task(w, 1);
    ASSERT_EQ(q->n_deps, 1);
    ASSERT_EQ(q->deps[0], 0);
    ASSERT_EQ(synor_workload_edge_bytes(w, 1, 0), 96);
    long ext = synor_workload_find_data(w, "w");
    ASSERT(ext >= 0 && synor_workload_data(w, (size_t)ext)->producer == -1);
    synor_workload_destroy(w);
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"produces\": [{\"name\": \"x\", \"bytes\": 1}]},\n"
                                 " {\"id\": \"b\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"produces\": [{\"name\": \"x\"}]}]}"),
                    "tasks[1].produces[0]: data \"x\" is also produced by task \"a\"");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"consumes\": [{\"name\": \"x\"}]}]}"),
                    "tasks[0].consumes[0]: missing \"bytes\" for data \"x\"");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"produces\": [{\"name\": \"x\", \"bytes\": 1}]},\n"
                                 " {\"id\": \"b\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"consumes\": [{\"name\": \"x\", \"bytes\": 2}]}]}"),
                    "data \"x\" has 1 bytes elsewhere, 2 here");
    /* a cycle through data, not deps: named all the same */
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"consumes\": [{\"name\": \"y\", \"bytes\": 1}], \"produces\": [{\"name\": \"x\", \"bytes\": 1}]},\n"
                                 " {\"id\": \"b\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"consumes\": [{\"name\": \"x\"}], \"produces\": [{\"name\": \"y\"}]}]}"),
                    "dependency cycle: a -> b -> a");
    ASSERT_CONTAINS(load_err(HDR " {\"id\": \"a\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"deps\": [\"a\"]}]}"),
                    "tasks[0].deps: dependency cycle: a -> a");
}

/* Explicit costs (literature problems): a cost row per device, in device
 * order or by name, null = cannot run there, and edge costs; op optional */
static const char *const LIT =
    HDR " {\"id\": \"a\", \"exec_s\": [14, 16, null]},\n"
    " {\"id\": \"b\", \"exec_s\": {\"P2\": 3.5, \"P1\": null}, \"deps\": [{\"task\": \"a\", \"comm_s\": 18}]},\n"
    " {\"id\": \"c\", \"op\": \"matmul\", \"dims\": {\"m\": 2, \"n\": 2, \"k\": 2}, \"exec_s\": [1, 2, 3],\n"
    "  \"deps\": [\"a\", {\"task\": \"b\", \"comm_s\": 0}]},\n"
    " {\"id\": \"d\", \"op\": \"relu\", \"dims\": {\"elements\": 8}, \"deps\": [\"c\"]}]}";

TEST(explicit_costs_load_and_round_trip)
{
    synor_workload *w, *v;
    ASSERT_OK(synor_workload_load_string(LIT, strlen(LIT), "lit.json", &w));
    const synor_task *a = synor_workload_task(w, 0), *b = synor_workload_task(w, 1);
    const synor_task *c = synor_workload_task(w, 2), *d = synor_workload_task(w, 3);
    ASSERT_EQ(a->op.type, SYNOR_OP_CUSTOM); /* op omitted with a cost row */
    ASSERT_EQ(a->op.work.flops, 0);
    ASSERT_EQ(a->n_exec, 3);
    ASSERT(!a->exec_dev && a->exec_s[0] == 14 && a->exec_s[1] == 16 && isinf(a->exec_s[2]));
    ASSERT_EQ(b->n_exec, 2);
    ASSERT_STREQ(b->exec_dev[0], "P2");
    ASSERT(b->exec_s[0] == 3.5 && isinf(b->exec_s[1]));
    ASSERT_NEAR(c->op.work.flops, 16, 1e-12); /* dims still give work */
    ASSERT(!a->dep_comm && !d->dep_comm && d->n_exec == 0);
    ASSERT(synor_workload_edge_comm(w, 1, 0) == 18);
    ASSERT(synor_workload_edge_comm(w, 2, 0) < 0); /* a plain dependency */
    ASSERT(synor_workload_edge_comm(w, 2, 1) == 0);
    ASSERT(synor_workload_edge_comm(w, 3, 2) < 0);
    ASSERT(synor_workload_edge_comm(w, 0, 1) < 0); /* no such edge */
    char *s = synor_workload_to_json(w);
    ASSERT(s);
    ASSERT_CONTAINS(s, "\"exec_s\": {");
    ASSERT_CONTAINS(s, "null");
    ASSERT_CONTAINS(s, "\"comm_s\": 18");
    ASSERT_OK(synor_workload_load_string(s, strlen(s), "again.json", &v));
    for (size_t i = 0; i < 4; i++) {
        const synor_task *x = synor_workload_task(w, i), *y = synor_workload_task(v, i);
        ASSERT_EQ(x->op.type, y->op.type);
        ASSERT_EQ(x->n_exec, y->n_exec);
        ASSERT_EQ(!x->exec_dev, !y->exec_dev);
        for (size_t k = 0; k < x->n_exec; k++) {
            ASSERT(x->exec_s[k] == y->exec_s[k] || (isinf(x->exec_s[k]) && isinf(y->exec_s[k])));
            if (x->exec_dev)
                ASSERT_STREQ(x->exec_dev[k], y->exec_dev[k]);
        }
        ASSERT_EQ(x->n_deps, y->n_deps);
        for (size_t k = 0; k < x->n_deps; k++)
            ASSERT(synor_workload_edge_comm(w, i, x->deps[k]) ==
                   synor_workload_edge_comm(v, i, y->deps[k]));
    }
    char *s2 = synor_workload_to_json(v);
    ASSERT(s2);
    ASSERT_STREQ(s, s2); /* a fixed point */
    free(s);
    free(s2);
    synor_workload_destroy(v);
    synor_workload_destroy(w);
}

TEST(explicit_costs_bad_input)
{
#define T0 HDR " {\"id\": \"a\", "
    ASSERT_CONTAINS(load_err(T0 "\"exec_s\": [1, -2]}]}"),
                    "w.json:2:28: tasks[0].exec_s[1]: value -2 is below the minimum 0");
    ASSERT_CONTAINS(load_err(T0 "\"exec_s\": [1, \"inf\"]}]}"),
                    "w.json:2:28: tasks[0].exec_s[1]: expected seconds (a number) or null (cannot "
                    "run there), found string");
    ASSERT_CONTAINS(load_err(T0 "\"exec_s\": [1, NaN]}]}"), "w.json:2:28:");
    ASSERT_CONTAINS(load_err(T0 "\"exec_s\": [1e999]}]}"), "number out of range: 1e999");
    ASSERT_CONTAINS(load_err(T0 "\"exec_s\": 5}]}"),
                    "w.json:2:24: tasks[0].exec_s: expected an array of seconds (one per device "
                    "of the fabric) or an object {\"device\": seconds}, found number");
    ASSERT_CONTAINS(load_err(T0 "\"exec_s\": []}]}"), "tasks[0].exec_s: empty");
    ASSERT_CONTAINS(load_err(T0 "\"exec_s\": {\"P1\": -1}}]}"),
                    "tasks[0].exec_s.P1: value -1 is below the minimum 0");
    ASSERT_CONTAINS(load_err(T0 "\"exec_s\": {\"P1\": true}}]}"),
                    "tasks[0].exec_s.P1: expected seconds (a number) or null");
    ASSERT_CONTAINS(load_err(T0 "\"exec_s\": {\"\": 1}}]}"), "tasks[0].exec_s: empty device name");
    /* without a cost row the operation is required, and custom has no work */
    ASSERT_CONTAINS(load_err(T0 "\"dims\": {\"elements\": 8}}]}"),
                    "w.json:2:2: tasks[0]: missing required field \"op\" (only a task with a cost "
                    "row, \"exec_s\", may omit it)");
    ASSERT_CONTAINS(load_err(T0 "\"op\": \"custom\"}]}"),
                    "tasks[0]: operation custom has no work formula");
    /* edge costs */
#define T1 HDR " {\"id\": \"a\", \"exec_s\": [1]},\n {\"id\": \"b\", \"exec_s\": [1], \"deps\": "
    ASSERT_CONTAINS(load_err(T1 "[{\"task\": \"a\", \"comm_s\": -1}]}]}"),
                    "w.json:3:62: tasks[1].deps[0].comm_s: value -1 is below the minimum 0");
    ASSERT_CONTAINS(load_err(T1 "[{\"task\": \"a\", \"comm_s\": \"18\"}]}]}"),
                    "tasks[1].deps[0].comm_s: expected number, found string");
    ASSERT_CONTAINS(load_err(T1 "[{\"task\": \"a\"}]}]}"),
                    "tasks[1].deps[0]: missing required field \"comm_s\"");
    ASSERT_CONTAINS(load_err(T1 "[{\"task\": \"zz\", \"comm_s\": 1}]}]}"),
                    "w.json:3:47: tasks[1].deps[0]: no task with id \"zz\"");
    ASSERT_CONTAINS(load_err(T1 "[{\"task\": \"a\", \"comm_s\": 1, \"bytes\": 2}]}]}"),
                    "tasks[1].deps[0]: unknown field \"bytes\"");
    ASSERT_CONTAINS(load_err(T1 "[7]}]}"),
                    "tasks[1].deps[0]: expected a task id or {\"task\": id, \"comm_s\": seconds}, "
                    "found number");
    ASSERT_CONTAINS(load_err(T1 "[{\"task\": \"a\", \"comm_s\": 1}, {\"task\": \"a\", \"comm_s\": 2}]}]}"),
                    "w.json:3:37: tasks[1].deps: task \"b\": the edge from \"a\" has two different "
                    "comm_s, 1 and 2");
    /* the same edge twice with one cost, or once plain: fine */
    ASSERT_STREQ(load_err(T1 "[\"a\", {\"task\": \"a\", \"comm_s\": 2}, {\"task\": \"a\", \"comm_s\": 2}]}]}"),
                 "(loaded)");
#undef T0
#undef T1
    /* the API checks what the file format cannot express */
    synor_workload *w;
    ASSERT_OK(synor_workload_create("api", &w));
    double row[2] = {1, NAN}, comm[1] = {INFINITY};
    size_t dep = 0;
    synor_task_desc t;
    memset(&t, 0, sizeof t);
    t.id = "a";
    t.op.type = SYNOR_OP_CUSTOM;
    t.exec_s = row;
    t.n_exec = 2;
    ASSERT_EQ(synor_workload_add_task(w, &t, NULL), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "task \"a\": exec_s[1] is nan: seconds must be >= 0");
    row[1] = INFINITY;
    const char *names[2] = {"P1", "P1"};
    t.exec_dev = names;
    ASSERT_EQ(synor_workload_add_task(w, &t, NULL), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "task \"a\": exec_s names device \"P1\" twice");
    t.exec_dev = NULL;
    ASSERT_OK(synor_workload_add_task(w, &t, NULL));
    t.id = "b";
    t.deps = &dep;
    t.n_deps = 1;
    t.dep_comm = comm;
    ASSERT_EQ(synor_workload_add_task(w, &t, NULL), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "task \"b\": comm_s of dependency 0 is inf: seconds must be "
                                    "finite");
    comm[0] = -1; /* none */
    ASSERT_OK(synor_workload_add_task(w, &t, NULL));
    ASSERT_OK(synor_workload_finish(w));
    ASSERT(synor_workload_edge_comm(w, 1, 0) < 0);
    ASSERT(!synor_workload_task(w, 1)->dep_comm);
    synor_workload_destroy(w);
}

TEST(mutated_inputs_never_crash)
{
    /* every truncation and a byte changed at every position: the loader
     * returns an error or a workload, never crashes (run under ASan) */
    size_t n = strlen(GOOD);
    char *buf = malloc(n + 1);
    int loaded = 0;
    for (size_t k = 0; k < n; k++) {
        for (int mode = 0; mode < 3; mode++) {
            memcpy(buf, GOOD, n + 1);
            size_t len = n;
            if (mode == 0)
                len = k;
            else
                buf[k] = mode == 1 ? '"' : (char)('0' + (int)(k % 10));
            synor_workload *w;
            if (synor_workload_load_string(buf, len, "m.json", &w) == 0) {
                loaded++;
                synor_workload_destroy(w);
            } else {
                ASSERT(strlen(synor_errmsg()) > 0);
            }
        }
    }
    free(buf);
    ASSERT(loaded > 0); /* some digit changes still make a valid file */
}

TEST_MAIN(allocation_failures_are_clean, derived_work_and_order, json_round_trip, bad_input_names_where_and_what,
          long_chains_and_wide_graphs, data_edges_and_their_errors, explicit_costs_load_and_round_trip,
          explicit_costs_bad_input, mutated_inputs_never_crash)
