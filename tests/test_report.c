/* test_report.c - reports from traces: utilization figures of a trace
 * written by hand, the text report with its baseline comparison and
 * timeline, the Chrome trace-event export (valid JSON, one event per task
 * and transfer) and the SVG Gantt chart (runs merged). */
#include "common/common.h"
#include "json/json.h"
#include "synor.h"
#include "test.h"

/* Two devices over 4 s: gpu busy 0-1 and 1-3 (two matmuls), cpu 3-4. */
static const char *const TRACE =
    "{\"format\": \"synor-trace/1\", \"workload\": \"w\", \"fabric\": \"f\", \"strategy\": \"heft\",\n"
    " \"currency\": \"USD\", \"makespan_s\": 4, \"energy_active_j\": 30, \"energy_idle_j\": 10,\n"
    " \"money_micro\": 1500000,\n"
    " \"devices\": [{\"name\": \"cpu\", \"product\": \"A CPU (simulated)\", \"kind\": \"cpu\", \"simulated\": true, \"idle_w\": 5, \"price_micro\": 1000000},\n"
    "             {\"name\": \"gpu\", \"product\": \"A GPU (simulated)\", \"kind\": \"gpu\", \"simulated\": true, \"idle_w\": 50, \"price_micro\": 3000000}],\n"
    " \"tasks\": [{\"id\": \"a\", \"op\": \"matmul\", \"device\": 1, \"start\": 0, \"end\": 1, \"energy_j\": 10},\n"
    "           {\"id\": \"b\", \"op\": \"matmul\", \"device\": 1, \"start\": 1, \"end\": 3, \"energy_j\": 15},\n"
    "           {\"id\": \"c\", \"op\": \"detokenization\", \"device\": 0, \"start\": 3, \"end\": 4, \"energy_j\": 5}],\n"
    " \"transfers\": [{\"data\": \"x\", \"link\": \"gpu<->host\", \"from\": 1, \"to\": 0, \"bytes\": 1000, \"start\": 3, \"end\": 3}]}";

static synor_trace *load(const char *text)
{
    synor_trace *t = NULL;
    if (synor_trace_load_string(text, strlen(text), "t.json", &t))
        fprintf(stderr, "  %s\n", synor_errmsg());
    return t;
}

TEST(usage_per_device)
{
    synor_trace *t = load(TRACE);
    ASSERT(t);
    synor_device_usage u;
    ASSERT_OK(synor_report_usage(t, 1, &u));
    ASSERT_NEAR(u.busy, 3, 1e-12);
    ASSERT_NEAR(u.utilization, 0.75, 1e-12);
    ASSERT_EQ(u.tasks, 2);
    ASSERT_STREQ(u.ops, "matmul x2");
    ASSERT_OK(synor_report_usage(t, 0, &u));
    ASSERT_STREQ(u.ops, "detokenization");
    ASSERT(synor_report_usage(t, 2, &u) == SYNOR_ERANGE);
    synor_trace_destroy(t);
}

TEST(text_report_with_baseline)
{
    synor_trace *t = load(TRACE);
    /* a baseline twice as slow and twice as expensive */
    char *slow = strdup(TRACE);
    char *ms = strstr(slow, "\"makespan_s\": 4"), *mo = strstr(slow, "1500000");
    ms[14] = '8';
    mo[0] = '3';
    mo[1] = '0';
    synor_trace *b = load(slow);
    ASSERT(t && b);
    const char *assume[] = {"a stated assumption"};
    synor_report_options o = {b, "TITLE", assume, 1, 20, 0};
    char *s = synor_report_text(t, &o);
    ASSERT(s);
    ASSERT_CONTAINS(s, "TITLE (simulated devices");
    ASSERT_CONTAINS(s, "PROCESSOR UTILIZATION");
    ASSERT_CONTAINS(s, "75.0%");
    ASSERT_CONTAINS(s, "Makespan: 4.000 s");
    ASSERT_CONTAINS(s, "Energy: 40.0 J (active 30.0, idle 10.0)");
    ASSERT_CONTAINS(s, "Cost: 1.50 USD");
    ASSERT_CONTAINS(s, "Speedup over the baseline: 2.00x");
    ASSERT_CONTAINS(s, "cost -50.0%");
    /* 20 columns of 0.2 s: the GPU busy for the first 15, the CPU the last 5 */
    ASSERT_CONTAINS(s, "gpu        |###############.....|");
    ASSERT_CONTAINS(s, "cpu        |...............#####|");
    ASSERT_CONTAINS(s, "- a stated assumption");
    ASSERT_CONTAINS(s, "Every processor ran at least one task.");
    free(s);
    free(slow);
    synor_trace_destroy(b);
    synor_trace_destroy(t);
}

TEST(chrome_trace_is_valid_json)
{
    synor_trace *t = load(TRACE);
    char *s = synor_report_chrome(t);
    ASSERT(s);
    synor__jdoc *d;
    ASSERT_OK(synor__json_parse(s, strlen(s), "chrome", &d));
    synor__jval *ev = synor__json_get(synor__jdoc_root(d), "traceEvents");
    ASSERT(ev && ev->type == SYNOR__J_ARRAY);
    size_t complete = 0, meta = 0;
    for (size_t i = 0; i < ev->u.arr.n; i++) {
        synor__jval *ph = synor__json_get(ev->u.arr.items[i], "ph");
        ASSERT(ph && ph->type == SYNOR__J_STRING);
        complete += strcmp(ph->u.str.s, "X") == 0;
        meta += strcmp(ph->u.str.s, "M") == 0;
    }
    ASSERT_EQ(complete, 3 + 1);
    ASSERT_EQ(meta, 2 + 2 + 1); /* two processes, two devices, one link */
    ASSERT_CONTAINS(s, "\"ts\":1000000");
    synor__jdoc_free(d);
    free(s);
    synor_trace_destroy(t);
}

TEST(svg_gantt_merges_runs)
{
    synor_trace *t = load(TRACE);
    char *s = synor_report_svg(t);
    ASSERT(s);
    ASSERT(strncmp(s, "<svg", 4) == 0);
    ASSERT_CONTAINS(s, "</svg>\n");
    /* a and b are adjacent matmuls on the GPU: one bar "matmul x2" */
    ASSERT_CONTAINS(s, "<title>matmul x2 0-3 s</title>");
    ASSERT_CONTAINS(s, "<title>c 3-4 s</title>");
    free(s);
    synor_trace_destroy(t);
}

TEST(bad_traces)
{
    synor_trace *t;
    const char *bad = "{\"format\": \"synor-trace/2\"}";
    ASSERT(synor_trace_load_string(bad, strlen(bad), "x.json", &t) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "x.json:1:12: format: unsupported format");
    char *neg = strdup(TRACE);
    char *e = strstr(neg, "\"end\": 3, \"energy_j\": 15");
    e[7] = '0'; /* b ends at 0, before it starts */
    ASSERT(synor_trace_load_string(neg, strlen(neg), "y.json", &t) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "tasks[1]: end 0 is before start 1");
    free(neg);
}

/* A real run: a long product name is shortened, never the column saying
 * what ran the device; energy and money not measured are said to be, not
 * printed as 0, and a comparison with a simulation does not print
 * "energy -100%". */
static const char *const REAL =
    "{\"format\": \"synor-trace/1\", \"workload\": \"w\", \"fabric\": \"this machine\",\n"
    " \"strategy\": \"earliest-finish\", \"currency\": \"USD\", \"makespan_s\": 2,\n"
    " \"energy_active_j\": 0, \"energy_idle_j\": 0, \"money_micro\": 0,\n"
    " \"energy_basis\": \"none\", \"money_basis\": \"none\",\n"
    " \"devices\": [{\"name\": \"cpu/0\", \"product\": \"Oxide Virtual Turin-like Processor With A Very Long Name\",\n"
    "   \"kind\": \"cpu\", \"backend\": \"host\", \"simulated\": false, \"idle_w\": 0, \"price_micro\": 0}],\n"
    " \"tasks\": [{\"id\": \"a\", \"op\": \"matmul\", \"device\": 0, \"start\": 0, \"end\": 2, \"energy_j\": 0}],\n"
    " \"transfers\": []}";

TEST(real_run_report_is_honest)
{
    synor_trace *t = load(REAL), *sim = load(TRACE);
    ASSERT(t && sim);
    ASSERT_STREQ(t->devices[0].backend, "host");
    ASSERT_EQ(t->energy_basis, SYNOR_BASIS_NONE);
    ASSERT_EQ(sim->energy_basis, SYNOR_BASIS_MODEL); /* an older simulated trace */
    ASSERT_STREQ(sim->devices[0].backend, "simulated");
    synor_report_options o = {sim, NULL, NULL, 0, 20, 0};
    char *s = synor_report_text(t, &o);
    ASSERT(s);
    ASSERT_CONTAINS(s, "Runs on");
    ASSERT_CONTAINS(s, "cpu/0      Oxide Virtual Turin-like Proces... host, real ");
    ASSERT_CONTAINS(s, "Energy: not measured   Cost: not measured");
    ASSERT_CONTAINS(s, "energy n/a (not measured in the run)   cost n/a (not measured in the run)");
    ASSERT(!strstr(s, "-100"));
    ASSERT(!strstr(s, "Energy: 0.0 J"));
    ASSERT(!strstr(s, "Deadline"));
    free(s);
    /* a deadline: the verdict under the totals (the run takes 2 s) */
    o.deadline = 2.5;
    s = synor_report_text(t, &o);
    ASSERT_CONTAINS(s, "Cost: not measured\n  Deadline: 2.500 s, met with 500.00 ms to spare\n");
    free(s);
    o.deadline = 1.5;
    s = synor_report_text(t, &o);
    ASSERT_CONTAINS(s, "  Deadline: 1.500 s, MISSED by 500.00 ms\n");
    free(s);
    o.deadline = 0;
    /* the simulation compared with the real run */
    o.baseline = t;
    s = synor_report_text(sim, &o);
    ASSERT(s);
    ASSERT_CONTAINS(s, "energy n/a (not measured in the baseline)");
    ASSERT_CONTAINS(s, "simulated ");
    free(s);
    /* the backend and the bases survive a round trip */
    char *js = synor_trace_to_json(t);
    ASSERT(js);
    synor_trace *u = load(js);
    ASSERT(u);
    ASSERT_STREQ(u->devices[0].backend, "host");
    ASSERT_EQ(u->energy_basis, SYNOR_BASIS_NONE);
    ASSERT_EQ(u->money_basis, SYNOR_BASIS_NONE);
    char *js2 = synor_trace_to_json(u);
    ASSERT_STREQ(js, js2);
    free(js);
    free(js2);
    synor_trace_destroy(u);
    /* the Perfetto track names say what ran the device */
    s = synor_report_chrome(t);
    ASSERT_CONTAINS(s, "(host, real)");
    free(s);
    s = synor_report_svg(t);
    ASSERT_CONTAINS(s, "real run");
    free(s);
    /* an unknown basis is an error naming it */
    char *bad = strdup(REAL);
    memcpy(strstr(bad, "\"none\""), "\"nope\"", 6);
    synor_trace *x;
    ASSERT(synor_trace_load_string(bad, strlen(bad), "b.json", &x) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "b.json:4:");
    ASSERT_CONTAINS(synor_errmsg(), "unknown basis \"nope\"");
    free(bad);
    synor_trace_destroy(sim);
    synor_trace_destroy(t);
}

/* A timeline narrower than its axis labels (found by fuzzing: width 10 and
 * a makespan of 504626 s wrote the middle label before the axis). */
TEST(narrow_timeline)
{
    const char *text = "{\"format\": \"synor-trace/1\", \"workload\": \"\", \"fabric\": \"\", "
                       "\"strategy\": \"\", \"currency\": \"\", \"makespan_s\": 504626, "
                       "\"energy_active_j\": 9, \"energy_idle_j\": 1, \"money_micro\": 8, "
                       "\"devices\": [], \"tasks\": [], \"transfers\": []}";
    synor_trace *t = load(text);
    ASSERT(t);
    for (int w = 10; w <= 30; w++) {
        synor_report_options o = {NULL, NULL, NULL, 0, w, 0};
        char *s = synor_report_text(t, &o);
        ASSERT(s);
        const char *axis = strstr(s, "              0");
        ASSERT(axis);
        /* the axis line is exactly width columns after its indent */
        const char *eol = strchr(axis, '\n');
        ASSERT(eol && eol - axis == 14 + w);
        free(s);
    }
    synor_trace_destroy(t);
}

/* Long product names with characters of several bytes: the Chrome export
 * stays JSON (a fixed label buffer once cut a character in two) and the
 * text report shortens between characters. */
TEST(long_utf8_products)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "{\"format\": \"synor-trace/1\", \"workload\": \"w\", \"fabric\": \"f\", "
                        "\"strategy\": \"s\", \"currency\": \"USD\", \"makespan_s\": 1, "
                        "\"energy_active_j\": 0, \"energy_idle_j\": 0, \"money_micro\": 0, "
                        "\"devices\": [{\"name\": \"cpu\", \"product\": \"");
    for (int i = 0; i < 150; i++)
        synor__buf_puts(&b, "\xc3\xa9"); /* e acute, 2 bytes */
    synor__buf_puts(&b, "\", \"kind\": \"cpu\", \"simulated\": true, \"idle_w\": 0, "
                        "\"price_micro\": 0}], \"tasks\": [{\"id\": \"a\", \"op\": \"matmul\", "
                        "\"device\": 0, \"start\": 0, \"end\": 1, \"energy_j\": 0}], "
                        "\"transfers\": []}");
    char *text = synor__buf_take(&b);
    synor_trace *t = load(text);
    ASSERT(t);
    char *c = synor_report_chrome(t);
    ASSERT(c);
    synor__jdoc *d;
    ASSERT_OK(synor__json_parse(c, strlen(c), "chrome", &d));
    synor__jdoc_free(d);
    ASSERT_CONTAINS(c, "(simulated)");
    free(c);
    char *r = synor_report_text(t, NULL);
    ASSERT(r);
    const char *row = strstr(r, "  cpu ");
    ASSERT(row);
    const char *dots = strstr(row, "...");
    ASSERT(dots);
    /* every byte before the dots is part of a whole two-byte character */
    const char *p = row + 13;
    ASSERT((dots - p) % 2 == 0 && dots - p >= 30);
    ASSERT_CONTAINS(dots, " simulated ");
    for (; p < dots; p += 2)
        ASSERT((unsigned char)p[0] == 0xc3 && (unsigned char)p[1] == 0xa9);
    free(r);
    synor__free(text);
    synor_trace_destroy(t);
}

TEST_MAIN(usage_per_device, text_report_with_baseline, chrome_trace_is_valid_json,
          svg_gantt_merges_runs, bad_traces, real_run_report_is_honest, narrow_timeline,
          long_utf8_products)
