/* test_workload_stream.c - the workload reader streams its tasks (each
 * task's JSON is dropped once it is added): which error comes out when a
 * file has several, dependencies on tasks further down the file, the top
 * level read after the tasks, and a large generated workload that loads
 * to the workload the API builds and plans the same. */
#include <math.h>

#include "common/common.h"
#include "synor.h"
#include "test.h"

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
#define T(id) "{\"id\": \"" id "\", \"exec_s\": [1]"

TEST(the_first_error_of_the_earliest_kind)
{
    /* a syntax error anywhere beats a task's wrong field before it */
    ASSERT_STREQ(load_err(HDR " {\"id\": \"a\", \"op\": \"matmull\"},\n"
                              " {\"id\": \"b\", \"op\": \"relu\" \"dims\": {}}]}"),
                 "w.json:3:27: expected ',' or '}' in object, found '\"'");
    ASSERT_STREQ(load_err(HDR " {\"id\": \"a\", \"op\": \"matmull\"}], \"name\": }"),
                 "w.json:2:41: expected a value, found '}'");
    /* the top level, even written after the tasks, beats the tasks */
    ASSERT_STREQ(load_err(HDR " {\"id\": \"a\", \"op\": \"matmull\"}], \"colour\": 1}"),
                 "w.json:2:33: (top level): unknown field \"colour\" (allowed: format, name, "
                 "tasks)");
    ASSERT_STREQ(load_err("{\"tasks\": [{\"id\": \"a\", \"op\": \"matmull\"}],\n"
                          " \"format\": \"synor-workload/2\"}"),
                 "w.json:2:12: format: unsupported format \"synor-workload/2\" (expected "
                 "\"synor-workload/1\")");
    ASSERT_STREQ(load_err("{\"tasks\": [{\"id\": \"a\", \"op\": \"matmull\"}], \"name\": 7}"),
                 "w.json:1:1: (top level): missing required field \"format\"");
    ASSERT_STREQ(load_err("{\"tasks\": [{\"id\": \"a\", \"op\": \"matmull\"}], \"name\": 7, "
                          "\"format\": \"synor-workload/1\"}"),
                 "w.json:1:51: (top level).name: expected string, found number");
    /* a task's wrong field beats any dependency error, even an earlier one */
    ASSERT_STREQ(load_err(HDR " " T("a") ", \"deps\": [7]},\n"
                              " " T("b") ", \"deps\": [\"zz\"]},\n"
                              " {\"id\": \"c\", \"op\": \"matmull\"}]}"),
                 "w.json:4:20: tasks[2].op: unknown operation \"matmull\"");
    /* dependencies in file order: an unknown name before a malformed one */
    ASSERT_STREQ(load_err(HDR " " T("a") ", \"deps\": [\"zz\", {\"task\": \"a\"}]}]}"),
                 "w.json:2:38: tasks[0].deps[0]: no task with id \"zz\"");
    ASSERT_STREQ(load_err(HDR " " T("a") ", \"deps\": [{\"task\": \"b\"}, \"zz\"]},\n"
                              " " T("b") "}]}"),
                 "w.json:2:38: tasks[0].deps[0]: missing required field \"comm_s\"");
    ASSERT_STREQ(load_err(HDR " " T("a") ", \"deps\": [\"b\", \"c\", {\"task\": \"b\", \"comm_s\": -1}]},\n"
                              " " T("b") "}]}"),
                 "w.json:2:43: tasks[0].deps[1]: no task with id \"c\"");
    ASSERT_STREQ(load_err(HDR " " T("a") ", \"deps\": [\"b\", {\"task\": \"b\", \"comm_s\": -1}, \"c\"]},\n"
                              " " T("b") "}]}"),
                 "w.json:2:67: tasks[0].deps[1].comm_s: value -1 is below the minimum 0");
    ASSERT_STREQ(load_err(HDR " " T("a") ", \"deps\": [\"b\"]},\n"
                              " " T("b") ", \"deps\": [{\"task\": \"a\", \"comm_s\": 1, \"x\": 2}]},\n"
                              " " T("c") ", \"deps\": [\"d\"]}]}"),
                 "w.json:3:65: tasks[1].deps[0]: unknown field \"x\" (allowed: task, comm_s)");
    ASSERT_STREQ(load_err(HDR " " T("a") ", \"deps\": [true]}]}"),
                 "w.json:2:38: tasks[0].deps[0]: expected a task id or {\"task\": id, "
                 "\"comm_s\": seconds}, found boolean");
    /* the top level's own shape */
    ASSERT_STREQ(load_err("{\"format\": \"synor-workload/1\", \"tasks\": {\"id\": \"a\"}}"),
                 "w.json:1:41: (top level).tasks: expected array, found object");
    ASSERT_STREQ(load_err("[{\"format\": \"synor-workload/1\", \"tasks\": []}]"),
                 "w.json:1:1: (top level): expected object, found array");
    ASSERT_STREQ(load_err(HDR " " T("a") "}], \"tasks\": [" T("b") "}]}"),
                 "w.json:2:31: duplicate key \"tasks\" (first at 1:32)");
    /* a cycle through a dependency further down, reported at the deps of
     * its lowest task */
    ASSERT_STREQ(load_err(HDR " " T("a") "},\n " T("b") ", \"deps\": [\"c\"]},\n"
                              " " T("c") ", \"deps\": [\"b\"]}]}"),
                 "w.json:3:37: tasks[1].deps: dependency cycle: b -> c -> b");
}

TEST(dependencies_further_down_and_a_late_name)
{
    const char *text = "{\"format\": \"synor-workload/1\", \"tasks\": [\n"
                       " {\"id\": \"a\", \"exec_s\": [1, 2, 3], \"deps\": [\"c\", {\"task\": \"b\", "
                       "\"comm_s\": 4}]},\n"
                       " {\"id\": \"b\", \"exec_s\": [1, 2, 3]},\n"
                       " {\"id\": \"c\", \"exec_s\": [1, 2, 3], \"deps\": [\"b\", \"b\"]}],\n"
                       " \"name\": \"late\"}";
    synor_workload *w;
    ASSERT_OK(synor_workload_load_string(text, strlen(text), "w.json", &w));
    ASSERT_STREQ(synor_workload_name(w), "late");
    const synor_task *a = synor_workload_task(w, 0), *c = synor_workload_task(w, 2);
    ASSERT_EQ(a->n_deps, 2);
    ASSERT_EQ(a->deps[0], 1); /* sorted: b, c */
    ASSERT_EQ(a->deps[1], 2);
    ASSERT(a->dep_comm && a->dep_comm[0] == 4 && a->dep_comm[1] < 0);
    ASSERT_EQ(c->n_deps, 1);
    ASSERT_EQ(c->deps[0], 1);
    ASSERT(!c->dep_comm);
    ASSERT_EQ(synor_workload_order(w)[0], 1);
    synor_workload_destroy(w);
    /* every allocation failing in turn: out of memory, nothing returned */
    int failures = 0;
    for (long k = 1; k < 400; k++) {
        synor_workload *v = NULL;
        synor__alloc_fail_after(k);
        int rc = synor_workload_load_string(text, strlen(text), "w.json", &v);
        synor__alloc_fail_after(0);
        if (rc == 0) {
            synor_workload_destroy(v);
            break;
        }
        ASSERT_EQ(rc, SYNOR_ENOMEM);
        ASSERT(v == NULL);
        failures++;
    }
    ASSERT(failures > 10);
}

/* ---- a large generated workload: the file and the API agree ---- */

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unif(uint64_t *s) { return (double)(next(s) >> 11) * 0x1p-53; }

#define N 20000
#define D 3
#define MAXDEG 5

TEST(a_large_file_is_the_workload_the_api_builds)
{
    /* tasks in random order of a layered DAG (a dependency may come later
     * in the file), costs with every bit significant */
    static size_t perm[N], deg[N], dep[N][MAXDEG];
    static double exec[N][D], comm[N][MAXDEG];
    uint64_t s = 2026;
    for (size_t i = 0; i < N; i++)
        perm[i] = i;
    for (size_t i = N - 1; i > 0; i--) {
        size_t j = (size_t)(unif(&s) * (double)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    /* file position of the task of rank r is pos[r]; rank order is acyclic */
    static size_t pos[N];
    for (size_t i = 0; i < N; i++)
        pos[perm[i]] = i;
    for (size_t i = 0; i < N; i++) {
        size_t r = perm[i];
        for (size_t p = 0; p < D; p++)
            exec[i][p] = 100 * unif(&s);
        deg[i] = r ? 1 + (size_t)(unif(&s) * MAXDEG) : 0;
        for (size_t k = 0; k < deg[i]; k++) {
            size_t back = 1 + (size_t)(unif(&s) * (r < 50 ? (double)r : 50.0));
            size_t dup = 0, j = pos[r - back];
            for (size_t q = 0; q < k; q++)
                dup |= dep[i][q] == j;
            if (dup) {
                deg[i] = k;
                break;
            }
            dep[i][k] = j;
            comm[i][k] = unif(&s) < 0.5 ? 10 * unif(&s) : -1; /* some edges without */
        }
    }
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "{\"format\": \"synor-workload/1\", \"name\": \"big\", \"tasks\": [\n");
    synor_workload *api;
    ASSERT_OK(synor_workload_create("big", &api));
    for (size_t i = 0; i < N; i++) {
        synor__buf_printf(&b, "%s{\"id\": \"t%zu\", \"exec_s\": [", i ? ",\n" : "", i);
        for (size_t p = 0; p < D; p++)
            synor__buf_printf(&b, "%s%.17g", p ? ", " : "", exec[i][p]);
        synor__buf_puts(&b, "]");
        if (deg[i]) {
            synor__buf_puts(&b, ", \"deps\": [");
            for (size_t k = 0; k < deg[i]; k++)
                if (comm[i][k] < 0)
                    synor__buf_printf(&b, "%s\"t%zu\"", k ? ", " : "", dep[i][k]);
                else
                    synor__buf_printf(&b, "%s{\"task\": \"t%zu\", \"comm_s\": %.17g}", k ? ", " : "",
                                      dep[i][k], comm[i][k]);
            synor__buf_puts(&b, "]");
        }
        synor__buf_puts(&b, "}");
    }
    synor__buf_puts(&b, "]}\n");
    for (size_t i = 0; i < N; i++) {
        char id[32];
        synor_task_desc t;
        memset(&t, 0, sizeof t);
        snprintf(id, sizeof id, "t%zu", i);
        t.id = id;
        t.priority = SYNOR_PRIORITY_NORMAL;
        t.op.type = SYNOR_OP_CUSTOM;
        t.op.dtype = SYNOR_DTYPE_FP32;
        t.op.work.type = SYNOR_OP_CUSTOM;
        t.op.work.dtype = SYNOR_DTYPE_FP32;
        t.exec_s = exec[i];
        t.n_exec = D;
        t.deps = dep[i];
        t.n_deps = deg[i];
        t.dep_comm = comm[i];
        ASSERT_OK(synor_workload_add_task(api, &t, NULL));
    }
    ASSERT_OK(synor_workload_finish(api));
    ASSERT(b.data && !b.failed);
    synor_workload *file;
    ASSERT_OK(synor_workload_load_string(b.data, b.len, "big.json", &file));
    synor__buf_free(&b);
    ASSERT_EQ(synor_workload_count(file), N);
    /* the file's dependencies, edge by edge, against the generator */
    size_t edges = 0;
    for (size_t i = 0; i < N; i++) {
        const synor_task *t = synor_workload_task(file, i);
        ASSERT_EQ(t->n_deps, deg[i]);
        edges += t->n_deps;
        for (size_t k = 0; k < deg[i]; k++) {
            size_t at = 0;
            while (at < t->n_deps && t->deps[at] != dep[i][k])
                at++;
            ASSERT(at < t->n_deps);
            double want = comm[i][k], got = t->dep_comm ? t->dep_comm[at] : -1;
            ASSERT(want < 0 ? got < 0 : got == want);
        }
        for (size_t p = 0; p < D; p++)
            ASSERT(t->exec_s[p] == exec[i][p]);
    }
    ASSERT(edges > 2 * N);
    /* the same graph through the API: its JSON and its plan are the file's */
    char *jf = synor_workload_to_json(file), *ja = synor_workload_to_json(api);
    ASSERT(jf && ja);
    ASSERT(strcmp(jf, ja) == 0);
    synor_catalog *cat;
    synor_fabric *f;
    ASSERT_OK(synor_catalog_create(&cat));
    ASSERT_OK(synor_catalog_load_builtin(cat));
    ASSERT_OK(synor_fabric_load_builtin(cat, "three-processors", &f));
    char *plans[2];
    synor_workload *ws[2] = {file, api};
    for (int k = 0; k < 2; k++) {
        synor_cost *c;
        synor_plan *p;
        ASSERT_OK(synor_cost_create(ws[k], f, &c));
        ASSERT_OK(synor_plan_create(c, NULL, &p));
        ASSERT(p->makespan > 0 && isfinite(p->makespan));
        plans[k] = synor_plan_to_json(p, c);
        ASSERT(plans[k]);
        synor_plan_destroy(p);
        synor_cost_destroy(c);
    }
    ASSERT(strcmp(plans[0], plans[1]) == 0);
    free(plans[0]);
    free(plans[1]);
    free(jf);
    free(ja);
    synor_workload_destroy(api);
    synor_workload_destroy(file);
    synor_fabric_destroy(f);
    synor_catalog_destroy(cat);
}

TEST_MAIN(the_first_error_of_the_earliest_kind, dependencies_further_down_and_a_late_name,
          a_large_file_is_the_workload_the_api_builds)
