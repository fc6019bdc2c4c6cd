/* fuzz_inventory.c - inventory files (synor_registry_load_inventory_string)
 * against the built-in profile catalog.
 *
 * Each input is loaded into a registry that already holds one device, id
 * "pre" (so an input can collide with it). Contract checked: a rejected
 * file leaves the registry exactly as it was (one entry, "pre", at the same
 * version) and names the input (with a position inside it, where the
 * message has one); an accepted file registers devices whose every field
 * is within its documented range, and the same bytes give the same
 * registry twice (the registry has no JSON output: a dump of every entry
 * is compared); a failed allocation is SYNOR_ENOMEM with the registry
 * unchanged, or the same registry. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "synor.h"

static synor_catalog *cat;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat))
        fuzz_fail("set-up: %s", synor_errmsg());
    return 0;
}

static synor_registry *registry(void)
{
    synor_registry *r;
    synor_device *dev;
    FUZZ_CHECK(!synor_registry_create(&r) &&
                   !synor_device_create_simulated(synor_catalog_find(cat, "groq-lpu"), NULL,
                                                  &dev) &&
                   !synor_registry_add(r, "pre", dev, NULL),
               "set-up: %s", synor_errmsg());
    synor_device_unref(dev);
    return r;
}

static char *dump(synor_registry *r)
{
    synor_registry_query q;
    memset(&q, 0, sizeof q);
    synor_registry_entry *e;
    size_t n;
    FUZZ_CHECK(synor_registry_query_run(r, &q, &e, &n) == 0, "query: %s", synor_errmsg());
    FUZZ_CHECK(n == synor_registry_count(r), "a query for everything found %zu of %zu", n,
               synor_registry_count(r));
    fuzz_dump d;
    fuzz_dump_init(&d);
    for (size_t i = 0; i < n; i++) {
        const synor_registry_info *in = &e[i].info;
        char avail[128];
        FUZZ_CHECK(synor_availability_format(&in->availability, avail, sizeof avail) >= 0,
                   "%s: availability does not format", e[i].id);
        FUZZ_CHECK(synor_availability_validate(&in->availability) == 0,
                   "%s: invalid availability %s", e[i].id, avail);
        synor_availability back;
        char again[128];
        FUZZ_CHECK(synor_availability_parse(avail, &back) == 0 &&
                       synor_availability_format(&back, again, sizeof again) >= 0 &&
                       strcmp(avail, again) == 0,
                   "%s: availability \"%s\" does not read back", e[i].id, avail);
        FUZZ_CHECK(in->utilization >= 0 && in->utilization <= 1 && in->reputation >= 0 &&
                       in->reputation <= 100,
                   "%s: utilization %g, reputation %d", e[i].id, in->utilization,
                   in->reputation);
        const char *prof = synor_device_profile_id(e[i].device);
        fuzz_dump_printf(&d, "%s v%llu %s owner=%s region=%s location=%s %s %.17g %d %s\n",
                         e[i].id, (unsigned long long)e[i].version, prof ? prof : "-", in->owner,
                         in->region, in->location, synor_device_status_name(in->status),
                         in->utilization, in->reputation, avail);
    }
    synor_registry_entries_free(e, n);
    return fuzz_dump_take(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    synor_registry *r = registry();
    char *before = dump(r);
    fuzz_alloc_count_start();
    int rc = synor_registry_load_inventory_string(r, cat, text, size, FUZZ_NAME);
    long allocs = fuzz_alloc_count_stop();
    char *d1 = dump(r);
    if (rc) {
        fuzz_check_error(rc, 0, FUZZ_NAME, data, size);
        fuzz_check_same(before, d1, "the registry before and after a rejected file");
        goto out;
    }
    synor_registry *r2 = registry();
    FUZZ_CHECK(synor_registry_load_inventory_string(r2, cat, text, size, FUZZ_NAME) == 0,
               "the same bytes failed the second time: %s", synor_errmsg());
    char *d2 = dump(r2);
    fuzz_check_same(d1, d2, "two loads of the same bytes");
    free(d2);
    synor_registry_destroy(r2);

    synor_registry *r3 = registry();
    fuzz_alloc_fail_one(data, size, allocs);
    rc = synor_registry_load_inventory_string(r3, cat, text, size, FUZZ_NAME);
    int hit = fuzz_alloc_disarm();
    char *d3 = dump(r3);
    if (rc) {
        FUZZ_CHECK(hit, "the load failed only the second time: %s", synor_errmsg());
        fuzz_check_error(rc, 1, FUZZ_NAME, data, size);
        fuzz_check_same(before, d3, "the registry before and after an allocation failure");
    } else {
        fuzz_check_same(d1, d3, "a load with a failed allocation and one without");
    }
    free(d3);
    synor_registry_destroy(r3);
out:
    free(d1);
    free(before);
    synor_registry_destroy(r);
    return 0;
}
