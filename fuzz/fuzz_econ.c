/* fuzz_econ.c - economics data files (synor_econ_load_texts).
 *
 * Each input is loaded as one data file beside the fixtures' regions.json
 * (tests/data/econ), into a set that already holds all the fixtures. Contract
 * checked: a rejected file leaves the set exactly as it was (same records,
 * same pointers) and names the input with a position inside it; an accepted
 * one loads the same records twice; a failed allocation is SYNOR_ENOMEM with
 * the set unchanged, or the same records. On an accepted set, every device
 * with a hardware price is priced in every region with an electricity price,
 * and every region is ranked with a deadline: each call succeeds or fails
 * with a message, and every quote's total is the sum of its lines. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "synor.h"

static synor_catalog *cat;
static synor_econ *base;
static char *regions_text;
static size_t regions_len;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat) ||
        synor_econ_create(cat, &base) ||
        synor_econ_load_dir(base, SYNOR_SOURCE_DIR "/tests/data/econ") ||
        synor__read_file(SYNOR_SOURCE_DIR "/tests/data/econ/regions.json", &regions_text,
                         &regions_len))
        fuzz_fail("set-up: %s", synor_errmsg());
    return 0;
}

/* Every record of every dataset, as text. */
static char *dump(const synor_econ *e)
{
    fuzz_dump d;
    fuzz_dump_init(&d);
    for (int k = 0; k < SYNOR_ECON_DATASET_COUNT; k++) {
        const synor_econ_file *f = synor_econ_file_of(e, (synor_econ_dataset)k);
        if (!f)
            continue;
        fuzz_dump_printf(&d, "file %s %s %d %s %lld %lld %zu\n",
                         synor_econ_dataset_name(f->dataset), f->name, f->version, f->as_of,
                         (long long)f->as_of_day, (long long)f->max_age_days, f->n_sources);
    }
    for (size_t i = 0; i < synor_econ_region_count(e); i++) {
        const synor_econ_region *g = synor_econ_region_at(e, i);
        FUZZ_CHECK(synor_econ_region_find(e, g->id) == g, "region %s not found by id", g->id);
        fuzz_dump_printf(&d, "region %s %.17g %.17g %zu\n", g->id, g->lat, g->lon, g->n_cloud);
        for (size_t c = 0; c < g->n_cloud; c++)
            FUZZ_CHECK(synor_econ_region_find(e, g->cloud[c]) == g, "cloud region %s", g->cloud[c]);
        const synor_econ_elec *p = synor_econ_elec_find(e, g->id);
        if (p) {
            FUZZ_CHECK(p->industrial > 0 || p->commercial > 0, "region %s: no price", g->id);
            fuzz_dump_printf(&d, " elec %lld %lld %s\n", (long long)p->industrial,
                             (long long)p->commercial, p->source);
        }
        const synor_econ_carbon *c = synor_econ_carbon_find(e, g->id);
        if (c)
            fuzz_dump_printf(&d, " co2 %.17g\n", c->gco2_per_kwh);
        for (int carbon = 0; carbon < 2; carbon++) {
            const synor_econ_hourly *h = synor_econ_hourly_find(e, g->id, carbon);
            if (!h)
                continue;
            FUZZ_CHECK(h->n >= 1 && h->n <= 744, "hourly of %zu values", h->n);
            fuzz_dump_printf(&d, " hourly %d %lld %zu %lld\n", carbon, (long long)h->start_unix,
                             h->n, (long long)h->values[h->n - 1]);
        }
    }
    for (size_t i = 0; i < synor_econ_instance_count(e); i++) {
        const synor_econ_instance *x = synor_econ_instance_at(e, i);
        fuzz_dump_printf(&d, "instance %s %s %s %lld %lld %zu\n", x->provider, x->type, x->region,
                         (long long)x->on_demand, (long long)x->spot, x->n_devices);
    }
    return fuzz_dump_take(&d);
}

static void exercise(const synor_econ *e)
{
    for (size_t i = 0; i < synor_catalog_count(cat); i++) {
        const synor_profile *p = synor_catalog_at(cat, i);
        if (!synor_econ_hardware_find(e, p->id))
            continue;
        for (size_t k = 0; k < synor_econ_region_count(e); k++) {
            synor_price_request r;
            synor_price_request_init(&r);
            r.profile = p->id;
            r.region = synor_econ_region_at(e, k)->id;
            r.network_milli_gb = 1500;
            r.seconds = 5400;
            synor_price_quote q;
            if (synor_econ_price(e, &r, &q)) {
                FUZZ_CHECK(synor_errmsg()[0], "price failed without a message");
                continue;
            }
            FUZZ_CHECK(q.total == q.base + q.demand_adjustment + q.fee &&
                           q.base == q.energy + q.depreciation + q.network && q.energy >= 0 &&
                           q.depreciation >= 0,
                       "quote %s in %s does not add up", p->id, r.region);
        }
        synor_rank_request rr;
        synor_rank_request_init(&rr);
        rr.price.profile = p->id;
        rr.price.seconds = 3 * 3600 + 60;
        rr.deadline_seconds = 48 * 3600;
        rr.now_unix = 1790000000;
        rr.has_latlon = 1;
        rr.lat = 48.1;
        rr.lon = 11.6;
        rr.max_latency_ms = 40;
        for (int by = 0; by < 2; by++) {
            synor_rank_entry *v;
            size_t n;
            rr.by = (synor_rank_by)by;
            if (synor_econ_rank(e, &rr, &v, &n)) {
                FUZZ_CHECK(synor_errmsg()[0], "rank failed without a message");
                continue;
            }
            for (size_t k = 1; k < n; k++)
                FUZZ_CHECK(v[k - 1].ok >= v[k].ok, "an excluded region ranked first");
            free(v);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *names[2] = {"regions.json", FUZZ_NAME};
    const char *texts[2] = {regions_text, (const char *)data};
    size_t lens[2] = {regions_len, size};
    char *before = dump(base);
    const synor_econ_region *r0 = synor_econ_region_at(base, 0);

    fuzz_alloc_count_start();
    int rc = synor_econ_load_texts(base, 2, names, texts, lens);
    long allocs = fuzz_alloc_count_stop();
    if (rc) {
        fuzz_check_error(rc, 0, FUZZ_NAME, data, size);
        char *after = dump(base);
        fuzz_check_same(before, after, "a rejected file changed the set");
        FUZZ_CHECK(synor_econ_region_at(base, 0) == r0, "a rejected file moved the regions");
        free(after);
        free(before);
        return 0;
    }
    char *d1 = dump(base);
    exercise(base);
    synor_econ *other;
    FUZZ_CHECK(synor_econ_create(cat, &other) == 0, "create: %s", synor_errmsg());
    FUZZ_CHECK(synor_econ_load_texts(other, 2, names, texts, lens) == 0,
               "the same bytes failed the second time: %s", synor_errmsg());
    char *d2 = dump(other);
    fuzz_check_same(d1, d2, "two loads of the same bytes");
    free(d2);
    fuzz_alloc_fail_one(data, size, allocs);
    rc = synor_econ_load_texts(other, 2, names, texts, lens);
    int hit = fuzz_alloc_disarm();
    char *d3 = dump(other);
    if (rc) {
        FUZZ_CHECK(hit, "the load failed only the third time: %s", synor_errmsg());
        fuzz_check_error(rc, 1, FUZZ_NAME, data, size);
    }
    fuzz_check_same(d1, d3, "a load with a failed allocation and one without");
    free(d3);
    synor_econ_destroy(other);
    free(d1);
    free(before);
    /* back to the fixtures for the next input */
    FUZZ_CHECK(synor_econ_load_dir(base, SYNOR_SOURCE_DIR "/tests/data/econ") == 0,
               "reloading the fixtures: %s", synor_errmsg());
    return 0;
}
