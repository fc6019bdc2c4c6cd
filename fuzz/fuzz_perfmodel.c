/* fuzz_perfmodel.c - performance model files (synor_perfmodel_load_string).
 *
 * Contract checked: a rejected file leaves a model that already holds an
 * entry exactly as it was (same JSON) and names the input with a position
 * inside it; an accepted one, written (synor_perfmodel_to_json), loads
 * into an empty model and writes the same bytes, and so does the model it
 * was merged into; the same bytes load the
 * same way twice; estimates of every entry are finite and non-negative; a
 * failed allocation is SYNOR_ENOMEM with the model unchanged, or the same
 * model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "synor/perfmodel.h"

static synor_perfmodel *model(int with_entry)
{
    synor_perfmodel *pm;
    FUZZ_CHECK(synor_perfmodel_create(&pm) == 0, "set-up: %s", synor_errmsg());
    if (with_entry)
        for (int i = 1; i <= 3; i++)
            synor_perfmodel_record(pm, "gemm", 4096, "cpu", 0.001 * i);
    return pm;
}

static char *json_of(const synor_perfmodel *pm)
{
    char *s = synor_perfmodel_to_json(pm);
    FUZZ_CHECK(s, "synor_perfmodel_to_json failed: %s", synor_errmsg());
    return s;
}

static int check_entry(const synor_perfmodel_entry *e, void *user)
{
    (void)user;
    FUZZ_CHECK(e->count >= e->window && e->window >= 1, "entry %s/%s: count %llu, window %u",
               e->op, e->device, (unsigned long long)e->count, e->window);
    FUZZ_CHECK(isfinite(e->estimate) && e->estimate >= 0 && e->estimate >= e->min &&
                   e->estimate <= e->max,
               "entry %s/%s: estimate %g outside [%g, %g]", e->op, e->device, e->estimate, e->min,
               e->max);
    FUZZ_CHECK(e->mean >= 0 && e->stddev >= 0, "entry %s/%s: mean %g, stddev %g", e->op,
               e->device, e->mean, e->stddev);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    synor_perfmodel *held = model(1);
    char *before = json_of(held);
    int rc = synor_perfmodel_load_string(held, text, size, FUZZ_NAME);
    synor_perfmodel *pm = model(0);
    fuzz_alloc_count_start();
    int rc0 = synor_perfmodel_load_string(pm, text, size, FUZZ_NAME);
    long allocs = fuzz_alloc_count_stop();
    if (rc) {
        fuzz_check_error(rc, 0, FUZZ_NAME, data, size);
        char *after = json_of(held);
        fuzz_check_same(before, after, "the model before and after a rejected file");
        free(after);
        FUZZ_CHECK(rc0 == rc, "an empty model gave %s, a model with an entry %s",
                   synor_err_name(rc0), synor_err_name(rc));
        FUZZ_CHECK(synor_perfmodel_count(pm) == 0, "a rejected file added entries");
        goto out;
    }
    FUZZ_CHECK(rc0 == 0, "an empty model rejected what a model with an entry took: %s",
               synor_errmsg());
    synor_perfmodel_foreach(pm, check_entry, NULL);
    synor_perfmodel_foreach(held, check_entry, NULL);
    /* a merged model, saved, loads again too */
    char *jh = json_of(held);
    synor_perfmodel *hm = model(0);
    rc = synor_perfmodel_load_string(hm, jh, strlen(jh), "merged.json");
    FUZZ_CHECK(rc == 0, "a merged model's own JSON does not load: %s\n%.400s", synor_errmsg(),
               jh);
    char *jh2 = json_of(hm);
    fuzz_check_same(jh, jh2, "a merged model written, read and written again");
    free(jh2);
    free(jh);
    synor_perfmodel_destroy(hm);
    char *j1 = json_of(pm);
    synor_perfmodel *again = model(0);
    rc = synor_perfmodel_load_string(again, j1, strlen(j1), "written.json");
    FUZZ_CHECK(rc == 0, "the model's own JSON does not load: %s\n%.400s", synor_errmsg(), j1);
    char *j2 = json_of(again);
    fuzz_check_same(j1, j2, "a model written, read and written again");
    free(j2);
    synor_perfmodel_destroy(again);

    synor_perfmodel *twice = model(0);
    FUZZ_CHECK(synor_perfmodel_load_string(twice, text, size, FUZZ_NAME) == 0,
               "the same bytes failed the second time: %s", synor_errmsg());
    char *jt = json_of(twice);
    fuzz_check_same(j1, jt, "two loads of the same bytes");
    free(jt);
    synor_perfmodel_destroy(twice);

    synor_perfmodel *inj = model(0);
    char *empty = json_of(inj);
    fuzz_alloc_fail_one(data, size, allocs);
    rc = synor_perfmodel_load_string(inj, text, size, FUZZ_NAME);
    int hit = fuzz_alloc_disarm();
    char *ji = json_of(inj);
    if (rc) {
        FUZZ_CHECK(hit, "the load failed only the second time: %s", synor_errmsg());
        fuzz_check_error(rc, 1, FUZZ_NAME, data, size);
        fuzz_check_same(empty, ji, "the model before and after an allocation failure");
    } else {
        fuzz_check_same(j1, ji, "a load with a failed allocation and one without");
    }
    free(ji);
    free(empty);
    synor_perfmodel_destroy(inj);
    free(j1);
out:
    free(before);
    synor_perfmodel_destroy(pm);
    synor_perfmodel_destroy(held);
    return 0;
}
