/* fuzz_trace.c - trace files (synor_trace_load_string), as `synor report`
 * reads them, and every report made from a loaded trace.
 *
 * Contract checked: a rejected trace leaves *out untouched and names the
 * input with a position inside it; an accepted one writes JSON that reads
 * back to the same bytes, and its text report (narrow and default
 * timeline, against itself as baseline), Chrome events (valid JSON), SVG
 * (marks - preemptions - in start order, on a device of the trace)
 * and per-device usage are made without error or undefined behaviour
 * (UBSan: the out-of-range double-to-int conversion a task far beyond the
 * makespan caused in the timeline); the same bytes load the same way
 * twice; a failed allocation is SYNOR_ENOMEM with *out untouched, or the
 * same trace. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "synor/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    synor_trace *const untouched = FUZZ_UNTOUCHED(synor_trace);
    synor_trace *t = untouched;
    fuzz_alloc_count_start();
    int rc = synor_trace_load_string(text, size, FUZZ_NAME, &t);
    long allocs = fuzz_alloc_count_stop();
    if (rc) {
        fuzz_check_error(rc, 0, FUZZ_NAME, data, size);
        FUZZ_CHECK(t == untouched, "a rejected trace wrote *out");
        return 0;
    }
    for (size_t i = 1; i < t->n_tasks; i++)
        FUZZ_CHECK(t->tasks[i - 1].start <= t->tasks[i].start, "tasks not in start order");
    for (size_t i = 1; i < t->n_marks; i++)
        FUZZ_CHECK(t->marks[i - 1].start <= t->marks[i].start, "marks not in start order");
    for (size_t i = 0; i < t->n_marks; i++)
        FUZZ_CHECK(t->marks[i].device < t->n_devices && t->marks[i].start <= t->marks[i].end,
                   "a mark with a bad device or times");
    char *j1 = fuzz_check_trace(t);
    synor_trace_destroy(t);

    synor_trace *u;
    FUZZ_CHECK(synor_trace_load_string(text, size, FUZZ_NAME, &u) == 0,
               "the same bytes failed the second time: %s", synor_errmsg());
    char *j2 = synor_trace_to_json(u);
    fuzz_check_same(j1, j2, "two loads of the same bytes");
    free(j2);
    synor_trace_destroy(u);

    synor_trace *v = untouched;
    fuzz_alloc_fail_one(data, size, allocs);
    rc = synor_trace_load_string(text, size, FUZZ_NAME, &v);
    int hit = fuzz_alloc_disarm();
    if (rc) {
        FUZZ_CHECK(hit, "the load failed only the second time: %s", synor_errmsg());
        fuzz_check_error(rc, 1, FUZZ_NAME, data, size);
        FUZZ_CHECK(v == untouched, "a load that ran out of memory wrote *out");
    } else {
        char *j3 = synor_trace_to_json(v);
        fuzz_check_same(j1, j3, "a load with a failed allocation and one without");
        free(j3);
        synor_trace_destroy(v);
    }
    free(j1);
    return 0;
}
