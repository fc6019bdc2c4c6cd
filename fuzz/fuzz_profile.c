/* fuzz_profile.c - profile files (synor_catalog_load_string).
 *
 * Each input is loaded into a catalog that already holds one profile (the
 * built-in nvidia-h100-sxm, so an input can also replace it). Contract
 * checked: a rejected file leaves the catalog exactly as it was (same count,
 * same profile pointer, same JSON) and names the input with a position
 * inside it; an accepted one gives profiles whose JSON (synor_profile_to_json),
 * loaded as a file again, gives the same JSON byte for byte; loading the
 * same bytes twice gives the same catalog; a failed allocation is
 * SYNOR_ENOMEM with the catalog unchanged, or the same result. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "synor/profile.h"

static char *base_file; /* {"format": ..., "profiles": [the H100]} */

static char *file_of(const synor_catalog *cat)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "{\"format\": \"synor-profiles/1\", \"profiles\": [\n");
    for (size_t i = 0; i < synor_catalog_count(cat); i++) {
        char *j = synor_profile_to_json(synor_catalog_at(cat, i), 1);
        FUZZ_CHECK(j, "synor_profile_to_json failed: %s", synor_errmsg());
        synor__buf_printf(&b, "%s%s", i ? ",\n" : "", j);
        free(j);
    }
    synor__buf_puts(&b, "]}\n");
    char *s = synor__buf_take(&b);
    FUZZ_CHECK(s, "out of memory");
    return s;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    synor_catalog *all, *one;
    if (synor_catalog_create(&all) || synor_catalog_load_builtin(all) ||
        synor_catalog_create(&one))
        fuzz_fail("set-up: %s", synor_errmsg());
    char *j = synor_profile_to_json(synor_catalog_find(all, "nvidia-h100-sxm"), 1);
    FUZZ_CHECK(j, "set-up: no H100 profile");
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b, "{\"format\": \"synor-profiles/1\", \"profiles\": [%s]}", j);
    base_file = synor__buf_take(&b);
    free(j);
    FUZZ_CHECK(base_file && !synor_catalog_load_string(one, base_file, strlen(base_file), "base"),
               "set-up: the base file does not load");
    synor_catalog_destroy(one);
    synor_catalog_destroy(all);
    return 0;
}

static synor_catalog *base_catalog(void)
{
    synor_catalog *c;
    FUZZ_CHECK(!synor_catalog_create(&c) &&
                   !synor_catalog_load_string(c, base_file, strlen(base_file), "base"),
               "set-up: %s", synor_errmsg());
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    synor_catalog *cat = base_catalog();
    const synor_profile *before = synor_catalog_at(cat, 0);
    char *before_json = file_of(cat);

    fuzz_alloc_count_start();
    int rc = synor_catalog_load_string(cat, text, size, FUZZ_NAME);
    long allocs = fuzz_alloc_count_stop();
    if (rc) {
        fuzz_check_error(rc, 0, FUZZ_NAME, data, size);
        FUZZ_CHECK(synor_catalog_count(cat) == 1 && synor_catalog_at(cat, 0) == before,
                   "a rejected file changed the catalog");
        char *after = file_of(cat);
        fuzz_check_same(before_json, after, "the catalog before and after a rejected file");
        free(after);
        free(before_json);
        synor_catalog_destroy(cat);
        return 0;
    }
    char *loaded = file_of(cat);
    /* the JSON of every profile, loaded again, is the same JSON */
    synor_catalog *again;
    FUZZ_CHECK(!synor_catalog_create(&again), "out of memory");
    rc = synor_catalog_load_string(again, loaded, strlen(loaded), "written.json");
    FUZZ_CHECK(rc == 0, "the profiles' own JSON does not load: %s\n%.400s", synor_errmsg(),
               loaded);
    char *reloaded = file_of(again);
    fuzz_check_same(loaded, reloaded, "profiles written, read and written again");
    free(reloaded);
    synor_catalog_destroy(again);
    /* the same bytes into the same starting catalog: the same catalog */
    synor_catalog *twice = base_catalog();
    FUZZ_CHECK(synor_catalog_load_string(twice, text, size, FUZZ_NAME) == 0,
               "the same bytes failed the second time: %s", synor_errmsg());
    char *t = file_of(twice);
    fuzz_check_same(loaded, t, "two loads of the same bytes");
    free(t);
    synor_catalog_destroy(twice);

    /* a failed allocation: clean failure or the same catalog */
    synor_catalog *inj = base_catalog();
    fuzz_alloc_fail_one(data, size, allocs);
    rc = synor_catalog_load_string(inj, text, size, FUZZ_NAME);
    int hit = fuzz_alloc_disarm();
    char *ij = file_of(inj);
    if (rc) {
        FUZZ_CHECK(hit, "the load failed only the second time: %s", synor_errmsg());
        fuzz_check_error(rc, 1, FUZZ_NAME, data, size);
        fuzz_check_same(before_json, ij, "the catalog before and after an allocation failure");
    } else {
        fuzz_check_same(loaded, ij, "a load with a failed allocation and one without");
    }
    free(ij);
    synor_catalog_destroy(inj);
    free(loaded);
    free(before_json);
    synor_catalog_destroy(cat);
    return 0;
}
