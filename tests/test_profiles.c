/* test_profiles.c - the profile catalog: built-ins, user files that add and
 * replace, matching detected names, and rejection of bad input with a
 * message naming file:line:column and field, leaving the catalog unchanged. */
#include "profile/profile_internal.h"
#include "synor.h"
#include "test.h"

/* A valid profile file; the bad-input tests edit one spot of it. */
static const char *const BASE =
    "{\n"
    "  \"format\": \"synor-profiles/1\",\n"
    "  \"profiles\": [\n"
    "    {\n"
    "      \"id\": \"test-gpu\",\n"
    "      \"name\": \"Test GPU\",\n"
    "      \"vendor\": \"Acme\",\n"
    "      \"type\": {\"kind\": \"gpu\", \"api\": \"cuda\", \"compute_capability\": \"9.0\"},\n"
    "      \"match\": [\"Acme Test GPU\"],\n"
    "      \"compute\": {\"fp32\": 60, \"fp16\": {\"dense\": 1000, \"sparse\": 2000}, \"source\": \"s\"},\n"
    "      \"memory\": {\"capacity\": \"80 GiB\", \"bandwidth_gb_s\": 3000, \"type\": \"hbm3\", \"source\": \"s\"},\n"
    "      \"power\": {\"idle_w\": 50, \"peak_w\": 700, \"source\": \"s\"},\n"
    "      \"links\": {\"pcie_gen\": 5, \"pcie_lanes\": 16, \"nvlink_gb_s\": 900, \"source\": \"s\"},\n"
    "      \"latency\": {\"launch_us\": 5, \"source\": \"s\"},\n"
    "      \"operations\": [\"matmul\", \"softmax\"],\n"
    "      \"optimal_for\": [\"highly_parallel\"]\n"
    "    }\n"
    "  ]\n"
    "}\n";

/* BASE with the first occurrence of `from` replaced by `to`. */
static char *edit(const char *from, const char *to)
{
    const char *at = strstr(BASE, from);
    if (!at)
        return NULL;
    size_t n = strlen(BASE) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    size_t pre = (size_t)(at - BASE);
    memcpy(s, BASE, pre);
    strcpy(s + pre, to);
    strcat(s, at + strlen(from));
    return s;
}

static synor_catalog *builtin(void)
{
    synor_catalog *c;
    if (synor_catalog_create(&c) || synor_catalog_load_builtin(c))
        return NULL;
    return c;
}

TEST(builtin_catalog_loads_required_products)
{
    synor_catalog *c = builtin();
    ASSERT(c);
    static const char *const ids[] = {
        "nvidia-h100-sxm", "nvidia-h200-sxm", "nvidia-a100-80gb", "nvidia-rtx-4090",
        "amd-mi300x", "google-tpu-v4", "google-tpu-v5e", "google-tpu-v5p", "groq-lpu",
        "apple-m3-max-gpu", "apple-m3-max-ane", "qualcomm-hexagon-8gen3", "amd-epyc-9654",
        "intel-xeon-8480plus", "aws-graviton3", "xilinx-alveo-u250", "ti-c6678",
        "webgpu-iris-xe", "wasm-simd-browser"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        const synor_profile *p = synor_catalog_find(c, ids[i]);
        if (!p)
            TEST__FAIL("missing profile %s", ids[i]);
        /* every figure names its source */
        ASSERT(p->source_compute && p->source_compute[0]);
        ASSERT(p->source_memory && p->source_memory[0]);
        ASSERT(p->source_power && p->source_power[0]);
        ASSERT(p->caps.ops != 0);
    }
    /* every kind of processor is represented */
    int kinds[SYNOR_KIND_COUNT] = {0};
    for (size_t i = 0; i < synor_catalog_count(c); i++)
        kinds[synor_catalog_at(c, i)->type.kind]++;
    for (int k = 0; k < SYNOR_KIND_COUNT; k++)
        if (k != SYNOR_KIND_CUSTOM && !kinds[k])
            TEST__FAIL("no profile of kind %s", synor_kind_name((synor_kind)k));
    synor_catalog_destroy(c);
}

TEST(seed_figures_are_corrected)
{
    synor_catalog *c = builtin();
    ASSERT(c);
    const synor_profile *h100 = synor_catalog_find(c, "nvidia-h100-sxm");
    ASSERT(h100);
    /* 1979 TFLOPS is the with-sparsity figure; dense is 989.4 */
    ASSERT_NEAR(h100->caps.peak[SYNOR_DTYPE_FP16].dense, 989.4e12, 0.01);
    ASSERT_NEAR(h100->caps.peak[SYNOR_DTYPE_FP16].sparse, 1978.9e12, 0.01);
    ASSERT(h100->n_corrections > 0);
    const synor_profile *groq = synor_catalog_find(c, "groq-lpu");
    ASSERT(groq);
    /* 230 MB of SRAM, not 230 GB */
    ASSERT(groq->caps.mem_bytes >= 220000000ull && groq->caps.mem_bytes <= 250000000ull);
    ASSERT_EQ(groq->caps.mem_type, SYNOR_MEM_SRAM);
    ASSERT(groq->n_corrections > 0);
    const synor_profile *v5p = synor_catalog_find(c, "google-tpu-v5p");
    ASSERT(v5p);
    ASSERT_NEAR(v5p->caps.peak[SYNOR_DTYPE_BF16].dense, 459e12, 0.01);
    ASSERT_NEAR(v5p->caps.mem_bandwidth, 2765e9, 0.01);
    ASSERT(v5p->caps.mem_bytes >= 95000000000ull && v5p->caps.mem_bytes <= 102000000000ull);
    ASSERT(v5p->n_corrections > 0);
    synor_catalog_destroy(c);
}

TEST(match_picks_the_right_product)
{
    synor_catalog *c = builtin();
    ASSERT(c);
    const synor_profile *p = synor_catalog_match(c, SYNOR_KIND_GPU, "NVIDIA H100 80GB HBM3");
    ASSERT(p);
    ASSERT_STREQ(p->id, "nvidia-h100-sxm");
    p = synor_catalog_match(c, SYNOR_KIND_GPU, "NVIDIA H100 PCIe");
    ASSERT(p);
    ASSERT_STREQ(p->id, "nvidia-h100-pcie");
    p = synor_catalog_match(c, SYNOR_KIND_GPU, "NVIDIA H200");
    ASSERT(p);
    ASSERT_STREQ(p->id, "nvidia-h200-sxm");
    ASSERT(!synor_catalog_match(c, SYNOR_KIND_GPU, "Some Unknown GPU"));
    /* the kind must agree too */
    ASSERT(!synor_catalog_match(c, SYNOR_KIND_CPU, "NVIDIA H100 80GB HBM3"));
    synor_catalog_destroy(c);
}

TEST(user_file_adds_and_replaces)
{
    synor_catalog *c = builtin();
    ASSERT(c);
    size_t n = synor_catalog_count(c);
    ASSERT_OK(synor_catalog_load_string(c, BASE, strlen(BASE), "user.json"));
    ASSERT_EQ(synor_catalog_count(c), n + 1);
    const synor_profile *p = synor_catalog_find(c, "test-gpu");
    ASSERT(p);
    ASSERT_NEAR(p->caps.peak[SYNOR_DTYPE_FP16].sparse, 2000e12, 1e-12);
    ASSERT_EQ(p->caps.mem_bytes, 80ull << 30);
    ASSERT_NEAR(p->caps.mem_bandwidth, 3000e9, 1e-12);
    ASSERT_NEAR(p->caps.launch_latency, 5e-6, 1e-12);
    ASSERT_EQ(p->caps.dtypes, SYNOR_DTYPE_BIT(SYNOR_DTYPE_FP32) | SYNOR_DTYPE_BIT(SYNOR_DTYPE_FP16));
    ASSERT_STREQ(p->origin, "user.json");
    /* replace it: the old pointer stays valid, lookups see the new one */
    char *v2 = edit("\"fp32\": 60", "\"fp32\": 61");
    ASSERT_OK(synor_catalog_load_string(c, v2, strlen(v2), "user2.json"));
    free(v2);
    ASSERT_EQ(synor_catalog_count(c), n + 1);
    const synor_profile *q = synor_catalog_find(c, "test-gpu");
    ASSERT(q != p);
    ASSERT_NEAR(q->caps.peak[SYNOR_DTYPE_FP32].dense, 61e12, 1e-12);
    ASSERT_NEAR(p->caps.peak[SYNOR_DTYPE_FP32].dense, 60e12, 1e-12);
    /* replacing a built-in */
    char *h = edit("\"test-gpu\"", "\"nvidia-h100-sxm\"");
    ASSERT_OK(synor_catalog_load_string(c, h, strlen(h), "h.json"));
    free(h);
    ASSERT_STREQ(synor_catalog_find(c, "nvidia-h100-sxm")->name, "Test GPU");
    synor_catalog_destroy(c);
}

TEST(file_loading_names_the_path)
{
    synor_catalog *c = builtin();
    ASSERT(c);
    ASSERT_EQ(synor_catalog_load_file(c, "/nonexistent/p.json"), SYNOR_EIO);
    ASSERT_CONTAINS(synor_errmsg(), "/nonexistent/p.json: cannot open");
    char path[] = "/tmp/synor_test_profileXXXXXX";
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    FILE *f = fdopen(fd, "w");
    char *bad = edit("\"bandwidth_gb_s\": 3000", "\"bandwidth_gb_s\": -3000");
    fputs(bad, f);
    fclose(f);
    free(bad);
    size_t n = synor_catalog_count(c);
    ASSERT_EQ(synor_catalog_load_file(c, path), SYNOR_ERANGE);
    char want[256];
    snprintf(want, sizeof want,
             "%s:11:58: profiles[0].memory.bandwidth_gb_s: value -3000 is below the minimum 0",
             path);
    ASSERT_STREQ(synor_errmsg(), want);
    ASSERT_EQ(synor_catalog_count(c), n);
    remove(path);
    synor_catalog_destroy(c);
}

typedef struct bad_case {
    const char *from, *to;
    const char *expect; /* substring of the message */
} bad_case;

TEST(bad_input_is_rejected_and_changes_nothing)
{
    static const bad_case cases[] = {
        {"\"id\": \"test-gpu\",", "\"id\": \"test-gpu\"", "user.json:6:7: expected ',' or '}' in object, found '\"'"},
        {"\"vendor\": \"Acme\"", "\"vendor\": \"Acme\", \"colour\": \"red\"", "user.json:7:25: profiles[0]: unknown field \"colour\""},
        {"\"fp32\": 60", "\"fp32\": \"60\"", "user.json:10:27: profiles[0].compute.fp32: expected a number or {\"dense\", \"sparse\"}, found string"},
        {"\"fp32\": 60", "\"fp32\": -1", "user.json:10:27: profiles[0].compute.fp32: value -1 is below the minimum 0"},
        {"\"fp32\": 60", "\"fp32\": 1e400", "user.json:10:27: number out of range: 1e400"},
        {"\"fp32\": 60", "\"fp32\": NaN", "user.json:10:27: expected a value, found 'N'"},
        {"\"fp32\": 60", "\"fp32\": Infinity", "user.json:10:27: expected a value, found 'I'"},
        {"\"idle_w\": 50, ", "", "user.json:12:16: profiles[0].power: missing required field \"idle_w\""},
        {"\"name\": \"Test GPU\",", "", "profiles[0]: missing required field \"name\""},
        {"\"kind\": \"gpu\"", "\"kind\": \"qpu\"", "user.json:8:24: profiles[0].type.kind: unknown processor kind \"qpu\""},
        {"\"matmul\"", "\"matmull\"", "profiles[0].operations[0]: unknown operation \"matmull\""},
        {"\"capacity\": \"80 GiB\"", "\"capacity\": \"80\"", "profiles[0].memory.capacity: size \"80\" needs a unit"},
        {"\"sparse\": 2000", "\"sparse\": 500", "profiles[0].compute.fp16.sparse: sparse peak 500 is below the dense peak 1000"},
        {"\"idle_w\": 50", "\"idle_w\": 800", "idle power 800 W is above the peak power 700 W"},
        {"\"id\": \"test-gpu\"", "\"id\": \"Test GPU\"", "profiles[0].id: \"Test GPU\" is not a valid id"},
        {"\"api\": \"cuda\", ", "\"api\": \"metal\", ", "profiles[0].type.compute_capability: only applies to api \"cuda\""},
        {"\"synor-profiles/1\"", "\"synor-profiles/2\"", "unsupported format \"synor-profiles/2\""},
        {"\"pcie_gen\": 5", "\"pcie_gen\": 5.5", "profiles[0].links.pcie_gen: expected an integer"},
        {"\"launch_us\": 5", "\"launch_us\": null", "profiles[0].latency.launch_us: expected number, found null"},
    };
    synor_catalog *c = builtin();
    ASSERT(c);
    size_t n = synor_catalog_count(c);
    const synor_profile *h100 = synor_catalog_find(c, "nvidia-h100-sxm");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = edit(cases[i].from, cases[i].to);
        if (!s)
            TEST__FAIL("case %zu: pattern not in BASE", i);
        int rc = synor_catalog_load_string(c, s, strlen(s), "user.json");
        free(s);
        if (rc == 0)
            TEST__FAIL("case %zu accepted", i);
        if (!strstr(synor_errmsg(), cases[i].expect))
            TEST__FAIL("case %zu: message \"%s\" lacks \"%s\"", i, synor_errmsg(), cases[i].expect);
        ASSERT_EQ(synor_catalog_count(c), n);
        ASSERT(!synor_catalog_find(c, "test-gpu"));
        ASSERT(synor_catalog_find(c, "nvidia-h100-sxm") == h100);
    }
    synor_catalog_destroy(c);
}

TEST(duplicate_ids_in_one_file_are_rejected)
{
    /* two copies of the profile in one array */
    const char *start = strstr(BASE, "    {\n      \"id\"");
    const char *end = strstr(BASE, "    }\n  ]");
    ASSERT(start && end);
    size_t plen = (size_t)(end + 5 - start);
    char buf[8192];
    size_t pre = (size_t)(start - BASE);
    memcpy(buf, BASE, pre);
    memcpy(buf + pre, start, plen);
    memcpy(buf + pre + plen, ",\n", 2);
    strcpy(buf + pre + plen + 2, start);
    synor_catalog *c = builtin();
    ASSERT(c);
    size_t n = synor_catalog_count(c);
    ASSERT_EQ(synor_catalog_load_string(c, buf, strlen(buf), "dup.json"), SYNOR_EEXIST);
    ASSERT_CONTAINS(synor_errmsg(), "dup.json:19:13: profiles[1]: duplicate profile id \"test-gpu\" (also in profiles[0] of this file)");
    ASSERT_EQ(synor_catalog_count(c), n);
    synor_catalog_destroy(c);
}

TEST(json_output_loads_back_identically)
{
    synor_catalog *c = builtin();
    ASSERT(c);
    for (size_t i = 0; i < synor_catalog_count(c); i++) {
        const synor_profile *p = synor_catalog_at(c, i);
        char *one = synor_profile_to_json(p, 1);
        ASSERT(one);
        size_t len = strlen(one) + 64;
        char *file = malloc(len);
        snprintf(file, len, "{\"format\": \"synor-profiles/1\", \"profiles\": [%s]}", one);
        free(one);
        synor_catalog *d;
        ASSERT_OK(synor_catalog_create(&d));
        int rc = synor_catalog_load_string(d, file, strlen(file), p->id);
        free(file);
        if (rc) {
            synor_catalog_destroy(d);
            TEST__FAIL("%s does not load back: %s", p->id, synor_errmsg());
        }
        const synor_profile *q = synor_catalog_find(d, p->id);
        ASSERT(q);
        ASSERT(memcmp(&p->type, &q->type, sizeof p->type) == 0);
        for (int t = 0; t < SYNOR_DTYPE_COUNT; t++) {
            ASSERT_NEAR(p->caps.peak[t].dense, q->caps.peak[t].dense, 1e-12);
            ASSERT_NEAR(p->caps.peak[t].sparse, q->caps.peak[t].sparse, 1e-12);
        }
        ASSERT_EQ(p->caps.mem_bytes, q->caps.mem_bytes);
        ASSERT_EQ(p->caps.ops, q->caps.ops);
        ASSERT_EQ(p->caps.dtypes, q->caps.dtypes);
        ASSERT_EQ(p->caps.optimal_for, q->caps.optimal_for);
        ASSERT_EQ(p->n_corrections, q->n_corrections);
        ASSERT_NEAR(p->caps.mem_bandwidth, q->caps.mem_bandwidth, 1e-12);
        synor_catalog_destroy(d);
    }
    synor_catalog_destroy(c);
}

TEST(allocation_failures_leave_the_catalog_unchanged)
{
    synor_catalog *c = builtin();
    ASSERT(c);
    size_t n = synor_catalog_count(c);
    int failures = 0;
    for (long k = 1; k < 200; k++) {
        synor__alloc_fail_after(k);
        int rc = synor_catalog_load_string(c, BASE, strlen(BASE), "user.json");
        synor__alloc_fail_after(0);
        if (rc == 0)
            break; /* k exceeded the number of allocations: success */
        ASSERT_EQ(rc, SYNOR_ENOMEM);
        ASSERT_EQ(synor_catalog_count(c), n);
        failures++;
    }
    ASSERT(failures > 5);
    ASSERT(synor_catalog_find(c, "test-gpu"));
    synor_catalog_destroy(c);
}

TEST(sizes_parse_with_units)
{
    uint64_t b;
    ASSERT_OK(synor__parse_size("80 GiB", &b));
    ASSERT_EQ(b, 80ull << 30);
    ASSERT_OK(synor__parse_size("230 MB", &b));
    ASSERT_EQ(b, 230000000ull);
    ASSERT_OK(synor__parse_size("1.5KiB", &b));
    ASSERT_EQ(b, 1536);
    ASSERT_EQ(synor__parse_size("12 parsecs", &b), SYNOR_EINVAL);
    ASSERT_EQ(synor__parse_size("-1 GB", &b), SYNOR_EINVAL);
}

TEST_MAIN(builtin_catalog_loads_required_products, seed_figures_are_corrected,
          match_picks_the_right_product, user_file_adds_and_replaces, file_loading_names_the_path,
          bad_input_is_rejected_and_changes_nothing, duplicate_ids_in_one_file_are_rejected,
          json_output_loads_back_identically, allocation_failures_leave_the_catalog_unchanged,
          sizes_parse_with_units)
