/* test_registry.c - the device registry: unique ids, updates that validate
 * before changing anything, queries by every criterion, availability
 * schedules, and a multi-threaded stress run (also under ThreadSanitizer). */
#include <pthread.h>
#include <stdio.h>

#include "common/common.h"
#include "synor.h"
#include "test.h"

static const char *const PROFILES =
    "{\"format\": \"synor-profiles/1\", \"profiles\": [\n"
    "{\"id\": \"g\", \"name\": \"G\", \"vendor\": \"A\", \"type\": {\"kind\": \"gpu\", \"api\": \"cuda\"},\n"
    " \"compute\": {\"fp32\": 60, \"bf16\": 1000, \"source\": \"s\"},\n"
    " \"memory\": {\"capacity\": \"80 GiB\", \"bandwidth_gb_s\": 3000, \"type\": \"hbm3\", \"source\": \"s\"},\n"
    " \"power\": {\"idle_w\": 50, \"peak_w\": 700, \"source\": \"s\"}, \"operations\": [\"matmul\"]},\n"
    "{\"id\": \"c\", \"name\": \"C\", \"vendor\": \"A\", \"type\": {\"kind\": \"cpu\", \"isa\": \"x86-64\"},\n"
    " \"compute\": {\"fp32\": 5, \"source\": \"s\"},\n"
    " \"memory\": {\"capacity\": \"512 GiB\", \"bandwidth_gb_s\": 400, \"type\": \"ddr5\", \"source\": \"s\"},\n"
    " \"power\": {\"idle_w\": 50, \"peak_w\": 300, \"source\": \"s\"}, \"operations\": \"all\"},\n"
    "{\"id\": \"n\", \"name\": \"N\", \"vendor\": \"A\", \"type\": {\"kind\": \"npu\", \"variant\": \"apple-ane\", \"cores\": 16},\n"
    " \"compute\": {\"int8\": 18, \"fp16\": 18, \"source\": \"s\"},\n"
    " \"memory\": {\"capacity\": \"16 GiB\", \"bandwidth_gb_s\": 100, \"type\": \"unified\", \"source\": \"s\"},\n"
    " \"power\": {\"idle_w\": 0, \"peak_w\": 8, \"source\": \"s\"}, \"operations\": [\"matmul\", \"softmax\"]}\n"
    "]}";

typedef struct fixture {
    synor_catalog *cat;
    synor_registry *reg;
} fixture;

static int add(fixture *f, const char *id, const char *profile, const char *region, int rep,
               const char *avail)
{
    synor_device *d;
    int rc = synor_device_create_simulated(synor_catalog_find(f->cat, profile), id, &d);
    if (rc)
        return rc;
    synor_registry_info info;
    synor_registry_info_init(&info);
    snprintf(info.region, sizeof info.region, "%s", region);
    snprintf(info.owner, sizeof info.owner, "owner-%s", profile);
    info.reputation = rep;
    if (avail && (rc = synor_availability_parse(avail, &info.availability))) {
        synor_device_unref(d);
        return rc;
    }
    rc = synor_registry_add(f->reg, id, d, &info);
    synor_device_unref(d);
    return rc;
}

static int setup(fixture *f)
{
    if (synor_catalog_create(&f->cat) ||
        synor_catalog_load_string(f->cat, PROFILES, strlen(PROFILES), "p.json") ||
        synor_registry_create(&f->reg))
        return -1;
    if (add(f, "gpu-eu-1", "g", "eu-west", 90, NULL) || add(f, "gpu-us-1", "g", "us-east", 40, NULL) ||
        add(f, "cpu-eu-1", "c", "eu-west", 70, "utc:22-6") ||
        add(f, "npu-phone", "n", "eu-west", 60, "charging:50"))
        return -1;
    return 0;
}

static void teardown(fixture *f)
{
    synor_registry_destroy(f->reg);
    synor_catalog_destroy(f->cat);
}

static size_t query_count(fixture *f, const synor_registry_query *q, char *ids, size_t n)
{
    synor_registry_entry *e;
    size_t cnt;
    if (synor_registry_query_run(f->reg, q, &e, &cnt))
        return (size_t)-1;
    ids[0] = '\0';
    for (size_t i = 0; i < cnt; i++) {
        strncat(ids, e[i].id, n - strlen(ids) - 2);
        strcat(ids, " ");
    }
    synor_registry_entries_free(e, cnt);
    return cnt;
}

TEST(add_get_duplicate_remove)
{
    fixture f;
    ASSERT_OK(setup(&f));
    ASSERT_EQ(synor_registry_count(f.reg), 4);
    ASSERT_EQ(add(&f, "gpu-eu-1", "g", "eu-west", 50, NULL), SYNOR_EEXIST);
    ASSERT_STREQ(synor_errmsg(), "registry: a device with id \"gpu-eu-1\" is already registered");
    ASSERT_EQ(synor_registry_count(f.reg), 4);
    synor_registry_entry e;
    ASSERT_OK(synor_registry_get(f.reg, "cpu-eu-1", &e));
    ASSERT_STREQ(e.info.region, "eu-west");
    ASSERT_EQ(e.info.reputation, 70);
    ASSERT_EQ(synor_device_kind(e.device), SYNOR_KIND_CPU);
    /* the snapshot outlives removal */
    ASSERT_OK(synor_registry_remove(f.reg, "cpu-eu-1"));
    ASSERT_STREQ(synor_device_name(e.device), "cpu-eu-1");
    synor_registry_entry_release(&e);
    ASSERT_EQ(synor_registry_get(f.reg, "cpu-eu-1", &e), SYNOR_ENOENT);
    ASSERT_EQ(synor_registry_remove(f.reg, "cpu-eu-1"), SYNOR_ENOENT);
    ASSERT_EQ(synor_registry_count(f.reg), 3);
    /* the id can be registered again */
    ASSERT_OK(add(&f, "cpu-eu-1", "c", "eu-west", 70, NULL));
    /* bad ids */
    ASSERT_EQ(add(&f, "", "c", "x", 1, NULL), SYNOR_EINVAL);
    ASSERT_EQ(add(&f, "has space", "c", "x", 1, NULL), SYNOR_EINVAL);
    ASSERT_EQ(synor_registry_count(f.reg), 4);
    teardown(&f);
}

TEST(update_validates_first)
{
    fixture f;
    ASSERT_OK(setup(&f));
    synor_registry_info u;
    synor_registry_info_init(&u);
    u.status = SYNOR_STATUS_DRAINING;
    u.utilization = 0.75;
    u.reputation = 101; /* invalid: nothing may change */
    ASSERT_EQ(synor_registry_update(f.reg, "gpu-eu-1",
                                    SYNOR_UPDATE_STATUS | SYNOR_UPDATE_UTILIZATION |
                                        SYNOR_UPDATE_REPUTATION,
                                    &u),
              SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "reputation 101 is outside 0..100");
    synor_registry_entry e;
    ASSERT_OK(synor_registry_get(f.reg, "gpu-eu-1", &e));
    ASSERT_EQ(e.info.status, SYNOR_STATUS_ONLINE);
    ASSERT(e.info.utilization == 0);
    uint64_t v0 = e.version;
    synor_registry_entry_release(&e);
    u.reputation = 95;
    ASSERT_OK(synor_registry_update(f.reg, "gpu-eu-1",
                                    SYNOR_UPDATE_STATUS | SYNOR_UPDATE_UTILIZATION |
                                        SYNOR_UPDATE_REPUTATION,
                                    &u));
    ASSERT_OK(synor_registry_get(f.reg, "gpu-eu-1", &e));
    ASSERT_EQ(e.info.status, SYNOR_STATUS_DRAINING);
    ASSERT(e.info.utilization == 0.75);
    ASSERT_EQ(e.info.reputation, 95);
    ASSERT_STREQ(e.info.region, "eu-west"); /* untouched */
    ASSERT_EQ(e.version, v0 + 1);
    synor_registry_entry_release(&e);
    u.utilization = 1.5;
    ASSERT_EQ(synor_registry_update(f.reg, "gpu-eu-1", SYNOR_UPDATE_UTILIZATION, &u), SYNOR_EINVAL);
    ASSERT_EQ(synor_registry_update(f.reg, "nope", SYNOR_UPDATE_STATUS, &u), SYNOR_ENOENT);
    teardown(&f);
}

TEST(queries)
{
    fixture f;
    ASSERT_OK(setup(&f));
    char ids[512];
    synor_registry_query q;

    memset(&q, 0, sizeof q);
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 4);
    ASSERT_STREQ(ids, "gpu-eu-1 gpu-us-1 cpu-eu-1 npu-phone ");

    memset(&q, 0, sizeof q);
    q.by_kind = 1;
    q.kind = SYNOR_KIND_GPU;
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 2);

    memset(&q, 0, sizeof q);
    q.by_op = 1;
    q.op = SYNOR_OP_SOFTMAX;
    q.op_dtype = SYNOR_DTYPE_FP16;
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 1);
    ASSERT_STREQ(ids, "npu-phone ");

    memset(&q, 0, sizeof q);
    q.min_memory = 100ull << 30;
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 1);
    ASSERT_STREQ(ids, "cpu-eu-1 ");

    memset(&q, 0, sizeof q);
    q.by_throughput = 1;
    q.throughput_dtype = SYNOR_DTYPE_BF16;
    q.min_throughput = 500e12;
    q.region = "eu-west";
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 1);
    ASSERT_STREQ(ids, "gpu-eu-1 ");

    memset(&q, 0, sizeof q);
    q.min_reputation = 65;
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 2);
    ASSERT_STREQ(ids, "gpu-eu-1 cpu-eu-1 ");

    memset(&q, 0, sizeof q);
    q.owner = "owner-g";
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 2);

    /* availability: at 03:00 UTC, not idle, on battery 80% not charging */
    synor_host_state s = {.utc_hour = 3, .host_idle = 0, .charging = 0, .battery_pct = 80};
    memset(&q, 0, sizeof q);
    q.available_in = &s;
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 3);
    ASSERT_STREQ(ids, "gpu-eu-1 gpu-us-1 cpu-eu-1 ");
    s.utc_hour = 12;
    s.charging = 1;
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 3);
    ASSERT_STREQ(ids, "gpu-eu-1 gpu-us-1 npu-phone ");

    /* status */
    synor_registry_info u;
    synor_registry_info_init(&u);
    u.status = SYNOR_STATUS_OFFLINE;
    ASSERT_OK(synor_registry_update(f.reg, "gpu-us-1", SYNOR_UPDATE_STATUS, &u));
    memset(&q, 0, sizeof q);
    q.status_mask = 1u << SYNOR_STATUS_ONLINE;
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 3);
    q.status_mask = 1u << SYNOR_STATUS_OFFLINE;
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 1);

    /* presence: all four are simulated */
    memset(&q, 0, sizeof q);
    q.presence = 1;
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 0);
    q.presence = 2;
    ASSERT_EQ(query_count(&f, &q, ids, sizeof ids), 4);
    teardown(&f);
}

TEST(availability_schedules)
{
    synor_availability a;
    char buf[64];
    ASSERT_OK(synor_availability_parse("utc:22-6,12-13", &a));
    ASSERT_EQ(a.kind, SYNOR_AVAIL_UTC_WINDOWS);
    ASSERT_EQ(a.n_windows, 2);
    synor_availability_format(&a, buf, sizeof buf);
    ASSERT_STREQ(buf, "utc:22-6,12-13");
    synor_host_state s = {0};
    unsigned yes[] = {22, 23, 0, 5, 12}, no[] = {6, 11, 13, 21};
    for (size_t i = 0; i < 5; i++) {
        s.utc_hour = yes[i];
        ASSERT(synor_availability_allows(&a, &s));
    }
    for (size_t i = 0; i < 4; i++) {
        s.utc_hour = no[i];
        ASSERT(!synor_availability_allows(&a, &s));
    }
    ASSERT_OK(synor_availability_parse("charging:30", &a));
    s.charging = 1;
    s.battery_pct = 29;
    ASSERT(!synor_availability_allows(&a, &s));
    s.battery_pct = 30;
    ASSERT(synor_availability_allows(&a, &s));
    ASSERT_OK(synor_availability_parse("idle", &a));
    ASSERT(!synor_availability_allows(&a, &s));
    s.host_idle = 1;
    ASSERT(synor_availability_allows(&a, &s));
    ASSERT_EQ(synor_availability_parse("utc:5-5", &a), SYNOR_EINVAL);
    ASSERT_EQ(synor_availability_parse("utc:25-3", &a), SYNOR_EINVAL);
    ASSERT_EQ(synor_availability_parse("charging:101", &a), SYNOR_EINVAL);
    ASSERT_EQ(synor_availability_parse("sometimes", &a), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "availability \"sometimes\"");
}

typedef struct stress_arg {
    fixture *f;
    int thread;
} stress_arg;

static void *stress(void *p)
{
    stress_arg *a = p;
    char id[32];
    for (int i = 0; i < 300; i++) {
        snprintf(id, sizeof id, "t%d-%d", a->thread, i % 16);
        synor_device *d;
        if (synor_device_create_simulated(synor_catalog_find(a->f->cat, "g"), id, &d))
            return (void *)1;
        int rc = synor_registry_add(a->f->reg, id, d, NULL);
        synor_device_unref(d);
        if (rc && rc != SYNOR_EEXIST)
            return (void *)1;
        synor_registry_info u;
        synor_registry_info_init(&u);
        u.utilization = (i % 10) / 10.0;
        synor_registry_update(a->f->reg, id, SYNOR_UPDATE_UTILIZATION, &u);
        synor_registry_query q;
        memset(&q, 0, sizeof q);
        q.by_kind = 1;
        q.kind = SYNOR_KIND_GPU;
        synor_registry_entry *e;
        size_t n;
        if (synor_registry_query_run(a->f->reg, &q, &e, &n))
            return (void *)1;
        for (size_t k = 0; k < n; k++)
            if (synor_device_kind(e[k].device) != SYNOR_KIND_GPU)
                return (void *)1;
        synor_registry_entries_free(e, n);
        if (i % 3 == 0)
            synor_registry_remove(a->f->reg, id);
    }
    return NULL;
}

TEST(concurrent_add_update_query_remove)
{
    fixture f;
    ASSERT_OK(setup(&f));
    pthread_t t[4];
    stress_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i].f = &f;
        args[i].thread = i;
        pthread_create(&t[i], NULL, stress, &args[i]);
    }
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad |= r != NULL;
    }
    ASSERT(!bad);
    /* every surviving id is unique and findable */
    synor_registry_entry *e;
    size_t n;
    ASSERT_OK(synor_registry_query_run(f.reg, NULL, &e, &n));
    ASSERT_EQ(n, synor_registry_count(f.reg));
    for (size_t i = 0; i < n; i++) {
        synor_registry_entry g;
        ASSERT_OK(synor_registry_get(f.reg, e[i].id, &g));
        ASSERT(g.device == e[i].device);
        synor_registry_entry_release(&g);
        for (size_t j = i + 1; j < n; j++)
            ASSERT(strcmp(e[i].id, e[j].id) != 0);
    }
    synor_registry_entries_free(e, n);
    teardown(&f);
}

TEST(many_devices_grow_the_index)
{
    fixture f;
    ASSERT_OK(setup(&f));
    char id[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(id, sizeof id, "bulk-%d", i);
        ASSERT_OK(add(&f, id, "c", "ap-south", 50, NULL));
    }
    for (int i = 0; i < 2000; i += 2) {
        snprintf(id, sizeof id, "bulk-%d", i);
        ASSERT_OK(synor_registry_remove(f.reg, id));
    }
    ASSERT_EQ(synor_registry_count(f.reg), 4 + 1000);
    synor_registry_entry e;
    ASSERT_OK(synor_registry_get(f.reg, "bulk-1999", &e));
    synor_registry_entry_release(&e);
    ASSERT_EQ(synor_registry_get(f.reg, "bulk-1998", &e), SYNOR_ENOENT);
    teardown(&f);
}

TEST(host_state_is_plausible)
{
    synor_host_state s;
    ASSERT_OK(synor_host_state_read(&s));
    ASSERT(s.utc_hour < 24);
    ASSERT(s.battery_pct <= 100);
    ASSERT(s.host_idle == 0 || s.host_idle == 1);
    /* "always" allows any state; a window covering every hour too */
    synor_availability a;
    ASSERT_OK(synor_availability_parse("utc:0-24", &a));
    ASSERT(synor_availability_allows(&a, &s));
}

static int load_inv(fixture *f, const char *text)
{
    return synor_registry_load_inventory_string(f->reg, f->cat, text, strlen(text), "inv.json");
}

TEST(inventory_files)
{
    fixture f;
    ASSERT_OK(setup(&f));
    ASSERT_OK(load_inv(&f, "{\"format\": \"synor-inventory/1\", \"devices\": [\n"
                           " {\"id\": \"rack\", \"profile\": \"g\", \"count\": 3, \"owner\": \"acme\",\n"
                           "  \"region\": \"eu-west\", \"status\": \"busy\", \"utilization\": 0.5,\n"
                           "  \"reputation\": 99, \"availability\": \"utc:1-5\"}]}"));
    ASSERT_EQ(synor_registry_count(f.reg), 7);
    synor_registry_entry e;
    ASSERT_OK(synor_registry_get(f.reg, "rack-2", &e));
    ASSERT_STREQ(e.info.owner, "acme");
    ASSERT_EQ(e.info.status, SYNOR_STATUS_BUSY);
    ASSERT_EQ(e.info.reputation, 99);
    ASSERT_EQ(e.info.availability.kind, SYNOR_AVAIL_UTC_WINDOWS);
    ASSERT(synor_device_is_simulated(e.device));
    ASSERT_STREQ(synor_device_profile_id(e.device), "g");
    synor_registry_entry_release(&e);

    /* bad input: message names file:line:column and field; nothing registered */
    static const struct {
        const char *text, *expect;
    } bad[] = {
        {"{\"format\": \"synor-inventory/1\", \"devices\": [{\"id\": \"x\", \"profile\": \"nope\"}]}",
         "inv.json:1:68: devices[0].profile: no profile with id \"nope\""},
        {"{\"format\": \"synor-inventory/1\", \"devices\": [{\"id\": \"x\", \"profile\": \"g\", \"count\": 0}]}",
         "devices[0].count: value 0 is outside [1, 100000]"},
        {"{\"format\": \"synor-inventory/1\", \"devices\": [{\"id\": \"x\", \"profile\": \"g\", \"reputation\": 140}]}",
         "devices[0].reputation: value 140 is outside [0, 100]"},
        {"{\"format\": \"synor-inventory/1\", \"devices\": [{\"id\": \"x\", \"profile\": \"g\", \"status\": \"asleep\"}]}",
         "devices[0].status: unknown device status \"asleep\""},
        {"{\"format\": \"synor-inventory/1\", \"devices\": [{\"id\": \"x\", \"profile\": \"g\", \"availability\": \"utc:9\"}]}",
         "devices[0].availability: availability \"utc:9\""},
        {"{\"format\": \"synor-inventory/1\", \"devices\": [{\"id\": \"x\", \"profile\": \"g\", \"colour\": 1}]}",
         "devices[0]: unknown field \"colour\""},
        {"{\"format\": \"synor-inventory/1\", \"devices\": [{\"id\": \"x\", \"profile\": \"g\", \"utilization\": -0.5}]}",
         "devices[0].utilization: value -0.5 is below the minimum 0"},
        {"{\"format\": \"synor-inventory/1\", \"devices\": [{\"profile\": \"g\"}]}",
         "devices[0]: missing required field \"id\""},
        /* the second entry collides with an existing id: the first is rolled back */
        {"{\"format\": \"synor-inventory/1\", \"devices\": [{\"id\": \"fresh\", \"profile\": \"g\"},\n"
         " {\"id\": \"gpu-eu-1\", \"profile\": \"g\"}]}",
         "inv.json:2:9: devices[1].id: registry: a device with id \"gpu-eu-1\" is already "
         "registered"},
        {"{\"format\": \"synor-inventory/1\", \"devices\": [}", "inv.json:1:45: expected a value, found '}'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (load_inv(&f, bad[i].text) == 0)
            TEST__FAIL("case %zu accepted", i);
        if (!strstr(synor_errmsg(), bad[i].expect))
            TEST__FAIL("case %zu: \"%s\" lacks \"%s\"", i, synor_errmsg(), bad[i].expect);
        ASSERT_EQ(synor_registry_count(f.reg), 7);
    }
    ASSERT_EQ(synor_registry_get(f.reg, "fresh", &e), SYNOR_ENOENT);
    teardown(&f);
}

TEST(inventory_is_all_or_nothing_when_memory_runs_out)
{
    /* the last entry collides with a registered id; every allocation of
     * the load fails in turn: the registry must end as it began. Undoing
     * the devices already added one by one needed memory itself (each
     * removal rebuilt the index), so a failure there left them in, and it
     * took O(n^2) (found by fuzz/fuzz_inventory: a timeout) */
    static const char *text = "{\"format\": \"synor-inventory/1\", \"devices\": [\n"
                              " {\"id\": \"r\", \"profile\": \"g\", \"count\": 40},\n"
                              " {\"id\": \"gpu-eu-1\", \"profile\": \"c\"}]}";
    fixture f;
    ASSERT_OK(setup(&f));
    size_t before = synor_registry_count(f.reg);
    int rejected = 0;
    for (long k = 1; k < 400; k++) {
        synor__alloc_fail_after(k);
        int rc = load_inv(&f, text);
        synor__alloc_fail_after(0);
        ASSERT(rc == SYNOR_ENOMEM || rc == SYNOR_EEXIST);
        if (synor_registry_count(f.reg) != before)
            TEST__FAIL("allocation %ld failing left %zu devices, not %zu", k,
                       synor_registry_count(f.reg), before);
        rejected += rc == SYNOR_EEXIST;
    }
    ASSERT(rejected > 0);
    synor_registry_entry e;
    ASSERT_EQ(synor_registry_get(f.reg, "r-0", &e), SYNOR_ENOENT);
    teardown(&f);
}

TEST(inventory_device_total_is_bounded)
{
    /* count is bounded per entry; without a bound on the file, a few
     * hundred bytes asked for millions of devices (gigabytes, minutes) */
    fixture f;
    ASSERT_OK(setup(&f));
    size_t before = synor_registry_count(f.reg);
    ASSERT_EQ(load_inv(&f, "{\"format\": \"synor-inventory/1\", \"devices\": [\n"
                           " {\"id\": \"a\", \"profile\": \"g\", \"count\": 60000},\n"
                           " {\"id\": \"b\", \"profile\": \"g\", \"count\": 60000}]}"),
              SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "inv.json:3:39: devices[1].count: 60000 more devices would "
                                    "make 120000 in this file; at most 100000");
    ASSERT_EQ(synor_registry_count(f.reg), before);
    /* exactly the bound loads */
    ASSERT_OK(load_inv(&f, "{\"format\": \"synor-inventory/1\", \"devices\": [\n"
                           " {\"id\": \"a\", \"profile\": \"g\", \"count\": 99999},\n"
                           " {\"id\": \"b\", \"profile\": \"g\"}]}"));
    ASSERT_EQ(synor_registry_count(f.reg), before + 100000);
    teardown(&f);
}

TEST_MAIN(inventory_files, inventory_device_total_is_bounded,
          inventory_is_all_or_nothing_when_memory_runs_out, host_state_is_plausible, add_get_duplicate_remove, update_validates_first, queries, availability_schedules,
          concurrent_add_update_query_remove, many_devices_grow_the_index)
