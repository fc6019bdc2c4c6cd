/* test_fabric.c - fabric files (devices simulated from profiles, memory
 * spaces, links and paths, prices as integer money), bad input named by
 * file:line:column and field, and the cost model built on them. */
#include "common/common.h"
#include "synor.h"
#include "test.h"

static synor_catalog *cat;

static synor_catalog *catalog(void)
{
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        return NULL;
    return cat;
}

static long dev(const synor_fabric *f, const char *name)
{
    return synor_fabric_find_device(f, name);
}

TEST(seed_fabric_devices_and_paths)
{
    synor_fabric *f;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "seed", &f));
    ASSERT_STREQ(synor_fabric_name(f), "seed");
    ASSERT_EQ(synor_fabric_device_count(f), 4);
    for (size_t i = 0; i < 4; i++) {
        const synor_fabric_device *d = synor_fabric_device_at(f, i);
        ASSERT(synor_device_is_simulated(d->dev));
        ASSERT_CONTAINS(synor_device_name(d->dev), "(simulated)");
    }
    long cpu = dev(f, "cpu"), gpu = dev(f, "h100"), tpu = dev(f, "tpu-v5p"), lpu = dev(f, "lpu");
    ASSERT(cpu >= 0 && gpu >= 0 && tpu >= 0 && lpu >= 0);
    /* the CPU uses its node's host memory; accelerators have their own */
    ASSERT_EQ(synor_fabric_device_at(f, (size_t)cpu)->space, 0);
    ASSERT(synor_fabric_device_at(f, (size_t)gpu)->space != 0);
    synor_path p = synor_fabric_path(f, (size_t)gpu, (size_t)tpu);
    ASSERT_EQ(p.kind, SYNOR_LINK_CPU_MEDIATED);
    ASSERT_EQ(p.n_hops, 2);
    p = synor_fabric_path(f, (size_t)cpu, (size_t)gpu);
    ASSERT_EQ(p.kind, SYNOR_LINK_PCIE);
    ASSERT_EQ(p.n_hops, 1);
    ASSERT_EQ(synor_fabric_path(f, (size_t)gpu, (size_t)gpu).kind, SYNOR_LINK_SAME);
    ASSERT(synor_fabric_transfer_time(f, (size_t)gpu, (size_t)gpu, 1e9) == 0);
    /* H100 -> TPU: H100's PCIe gen5 x16 from its profile (5 us assumed), then
     * the TPU link of the file: 31.5 GB/s, 5 us */
    double h100_bw = synor_caps_pcie_bandwidth(
        &synor_fabric_device_at(f, (size_t)gpu)->profile->caps);
    double want = 5e-6 + 1e9 / h100_bw + 5e-6 + 1e9 / 31.5e9;
    ASSERT_NEAR(synor_fabric_transfer_time(f, (size_t)gpu, (size_t)tpu, 1e9), want, 1e-12);
    /* prices: integer micro-units */
    ASSERT_EQ(synor_fabric_device_at(f, (size_t)gpu)->price_micro, 3000000);
    ASSERT_STREQ(synor_fabric_currency(f), "USD");
    synor_fabric_destroy(f);
}

TEST(two_nodes_nvlink_and_network)
{
    synor_fabric *f;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "two-node-h100", &f));
    ASSERT_EQ(synor_fabric_device_count(f), 6);
    long a0 = dev(f, "gpu-a.0"), a1 = dev(f, "gpu-a.1"), b0 = dev(f, "gpu-b.0");
    ASSERT(a0 >= 0 && a1 >= 0 && b0 >= 0);
    ASSERT_EQ(synor_fabric_path(f, (size_t)a0, (size_t)a1).kind, SYNOR_LINK_NVLINK);
    synor_path p = synor_fabric_path(f, (size_t)a0, (size_t)b0);
    ASSERT_EQ(p.kind, SYNOR_LINK_NETWORK);
    ASSERT_EQ(p.n_hops, 4); /* gpu -> host a -> network -> host b -> gpu */
    /* the network hop pair: 50 GB/s each way, 5 us in all */
    double t = synor_fabric_transfer_time(f, (size_t)a0, (size_t)b0, 0);
    ASSERT_NEAR(t, 5e-6 + 5e-6 + 5e-6, 1e-9);
    synor_fabric_destroy(f);
}

static const char *load_err(const char *text)
{
    synor_fabric *f;
    if (synor_fabric_load_string(catalog(), text, strlen(text), "f.json", &f) == 0) {
        synor_fabric_destroy(f);
        return "(loaded)";
    }
    return synor_errmsg();
}

#define FHDR "{\"format\": \"synor-fabric/1\", \"nodes\": [{\"name\": \"n\"}],\n"

TEST(unified_memory_shares_the_host_space)
{
    const char *text = "{\"format\": \"synor-fabric/1\", \"nodes\": [{\"name\": \"mac\"}],\n"
                       " \"devices\": [{\"name\": \"gpu\", \"profile\": \"apple-m3-max-gpu\"},\n"
                       "             {\"name\": \"ane\", \"profile\": \"apple-m3-max-ane\"}]}";
    synor_fabric *f;
    ASSERT_OK(synor_fabric_load_string(catalog(), text, strlen(text), "mac.json", &f));
    const synor_fabric_device *g = synor_fabric_device_at(f, 0);
    ASSERT(g->profile->caps.unified_memory);
    ASSERT_EQ(g->space, 0);
    ASSERT_EQ(synor_fabric_path(f, 0, 1).kind, SYNOR_LINK_UNIFIED);
    ASSERT(synor_fabric_transfer_time(f, 0, 1, 1e9) == 0);
    ASSERT_EQ(synor_fabric_path(f, 0, 0).kind, SYNOR_LINK_SAME);
    synor_fabric_destroy(f);
}

TEST(bad_fabrics_name_the_field)
{
    ASSERT_CONTAINS(load_err(FHDR "\"devices\": [{\"profile\": \"nvidia-h999\"}]}"),
                    "f.json:2:25: devices[0].profile: no profile \"nvidia-h999\"");
    ASSERT_CONTAINS(load_err(FHDR "\"devices\": [{\"profile\": \"groq-lpu\", \"price_per_hour\": \"1.1234567\"}]}"),
                    "devices[0].price_per_hour: amount \"1.1234567\" has more than 6 decimals");
    ASSERT_CONTAINS(load_err(FHDR "\"devices\": [{\"profile\": \"groq-lpu\", \"price_per_hour\": \"-1\"}]}"),
                    "devices[0].price_per_hour: amount \"-1\" is not a decimal number");
    ASSERT_CONTAINS(load_err(FHDR "\"devices\": [{\"profile\": \"groq-lpu\"}, {\"profile\": \"groq-lpu\"}]}"),
                    "devices[1]: duplicate device or node name \"groq-lpu\"");
    ASSERT_CONTAINS(load_err(FHDR "\"devices\": [{\"profile\": \"groq-lpu\", \"count\": 0}]}"),
                    "devices[0].count: value 0 is outside [1, 4096]");
    ASSERT_CONTAINS(load_err(FHDR "\"devices\": [{\"profile\": \"groq-lpu\"}],\n"
                                  "\"links\": [{\"between\": [\"groq-lpu\", \"x\"], \"kind\": \"pcie\", "
                                  "\"bandwidth_gb_s\": 1, \"latency_us\": 1}]}"),
                    "f.json:3:36: links[0].between[1]: no device or node \"x\"");
    ASSERT_CONTAINS(load_err(FHDR "\"devices\": [{\"profile\": \"groq-lpu\"}],\n"
                                  "\"links\": [{\"between\": [\"groq-lpu\", \"n\"], \"kind\": \"warp\", "
                                  "\"bandwidth_gb_s\": 1, \"latency_us\": 1}]}"),
                    "links[0].kind: unknown link kind \"warp\"");
    ASSERT_CONTAINS(load_err(FHDR "\"devices\": [{\"profile\": \"groq-lpu\"}],\n"
                                  "\"links\": [{\"between\": [\"groq-lpu\", \"n\"], \"kind\": \"pcie\", "
                                  "\"bandwidth_gb_s\": -3, \"latency_us\": 1}]}"),
                    "links[0].bandwidth_gb_s: value -3 is below the minimum");
    ASSERT_CONTAINS(load_err("{\"format\": \"synor-fabric/1\", \"nodes\": [{\"name\": \"a\"}, {\"name\": \"b\"}],\n"
                             "\"devices\": [{\"profile\": \"groq-lpu\", \"node\": \"a\"}]}"),
                    "missing \"network\"");
    ASSERT_CONTAINS(load_err(FHDR "\"devices\": [], \"colour\": 1}"), "unknown field \"colour\"");
}

TEST(money_is_exact)
{
    int64_t m;
    char buf[32];
    ASSERT_OK(synor_money_parse("2.99", &m));
    ASSERT_EQ(m, 2990000);
    ASSERT_OK(synor_money_parse("0.000001", &m));
    ASSERT_EQ(m, 1);
    ASSERT_OK(synor_money_parse("12", &m));
    ASSERT_EQ(m, 12000000);
    ASSERT(synor_money_parse("1e3", &m) != 0);
    ASSERT(synor_money_parse("", &m) != 0);
    synor_money_format(2990000, buf, sizeof buf);
    ASSERT_STREQ(buf, "2.99");
    synor_money_format(1, buf, sizeof buf);
    ASSERT_STREQ(buf, "0.000001");
    synor_money_format(5000000, buf, sizeof buf);
    ASSERT_STREQ(buf, "5.00");
    /* 3.00 per hour: one second is 833.33 micro-units, rounded to 833 */
    ASSERT_EQ(synor_money_for_seconds(3000000, 1), 833);
    ASSERT_EQ(synor_money_for_seconds(3000000, 3600), 3000000);
    /* a year at 2000/hour stays exact (no overflow) */
    ASSERT_EQ(synor_money_for_seconds(2000000000, 365.0 * 24 * 3600),
              2000000000LL * 365 * 24);
    ASSERT_EQ(synor_money_for_seconds(3000000, -1), 0);
}

TEST(cost_matrix_is_the_roofline)
{
    synor_fabric *f;
    synor_workload *w;
    ASSERT_OK(synor_fabric_load_builtin(catalog(), "seed", &f));
    const char *text =
        "{\"format\": \"synor-workload/1\", \"tasks\": [\n"
        " {\"id\": \"mm\", \"op\": \"matmul\", \"dtype\": \"bf16\", \"dims\": {\"m\": 4096, \"n\": 4096, \"k\": 4096}},\n"
        " {\"id\": \"tok\", \"op\": \"tokenization\", \"dims\": {\"elements\": 4096}},\n"
        " {\"id\": \"big\", \"op\": \"matmul\", \"dtype\": \"int8\", \"dims\": {\"m\": 1, \"n\": 1, \"k\": 1},\n"
        "  \"consumes\": [{\"name\": \"weights\", \"bytes\": 1000000000}]}]}";
    ASSERT_OK(synor_workload_load_string(text, strlen(text), "w.json", &w));
    synor_cost *c;
    ASSERT_OK(synor_cost_create(w, f, &c));
    size_t gpu = (size_t)dev(f, "h100"), lpu = (size_t)dev(f, "lpu"), cpu = (size_t)dev(f, "cpu");
    const synor_caps *caps = synor_device_caps(synor_fabric_device_at(f, gpu)->dev);
    double flops = 2.0 * 4096 * 4096 * 4096, bytes = 3.0 * 4096 * 4096 * 2;
    double comp = flops / (caps->peak[SYNOR_DTYPE_BF16].dense * caps->efficiency);
    double mem = bytes / caps->mem_bandwidth;
    ASSERT_NEAR(synor_cost_time(c, 0, gpu), caps->launch_latency + (comp > mem ? comp : mem),
                1e-12);
    ASSERT(synor_cost_energy(c, 0, gpu) > 0);
    /* tokenization runs on the CPU only */
    ASSERT(isfinite(synor_cost_time(c, 1, cpu)));
    ASSERT(isinf(synor_cost_time(c, 1, gpu)));
    ASSERT_EQ(synor_cost_feasible(c, 1), 1);
    /* 1 GB of weights do not fit in the LPU's 230 MB */
    ASSERT_EQ(synor_cost_footprint(c, 2), 1000000000);
    ASSERT(isinf(synor_cost_time(c, 2, lpu)));
    ASSERT(isfinite(synor_cost_time(c, 2, gpu)));
    char *s = synor_cost_format(c, 0);
    ASSERT_CONTAINS(s, "cpu-mediated");
    ASSERT_CONTAINS(s, "simulated");
    ASSERT_CONTAINS(s, "tokenization");
    free(s);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
}

TEST(builtins_listed_and_open)
{
    int seed = 0, gpu = 0;
    for (size_t i = 0; i < synor_fabric_builtin_count(); i++) {
        seed |= strcmp(synor_fabric_builtin_name(i), "seed") == 0;
        gpu |= strcmp(synor_fabric_builtin_name(i), "gpu-only") == 0;
    }
    ASSERT(seed && gpu);
    synor_fabric *f;
    ASSERT_OK(synor_fabric_open(catalog(), SYNOR_SOURCE_DIR "/fabrics/gpu-only.json", &f));
    ASSERT_EQ(synor_fabric_device_count(f), 2);
    synor_fabric_destroy(f);
    ASSERT(synor_fabric_open(catalog(), "no-such-fabric", &f) == SYNOR_ENOENT);
}

TEST(cleanup)
{
    synor_catalog_destroy(cat);
    cat = NULL;
}

/* Fabrics of the compute network's size: 10,000 devices on 1,250 nodes
 * load (linear in devices and links; before the link and name indexes a
 * load was quadratic to quartic in devices: 600 GPUs took 38 s, 10,000
 * would not finish), every path is right, and a duplicate name among
 * thousands is still found. */
TEST(ten_thousand_devices)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "{\"format\": \"synor-fabric/1\", \"nodes\": [");
    for (int i = 0; i < 1250; i++)
        synor__buf_printf(&b, "%s{\"name\": \"n%d\"}", i ? ", " : "", i);
    synor__buf_puts(&b, "],\n \"network\": {\"bandwidth_gb_s\": 50, \"latency_us\": 10},\n"
                        " \"devices\": [");
    for (int i = 0; i < 1250; i++)
        synor__buf_printf(&b, "%s\n {\"name\": \"g%d\", \"profile\": \"nvidia-h100-sxm\", "
                              "\"node\": \"n%d\", \"count\": 8}",
                          i ? "," : "", i, i);
    synor__buf_puts(&b, "]}\n");
    char *text = synor__buf_take(&b);
    ASSERT(text);
    synor_fabric *f;
    ASSERT_OK(synor_fabric_load_string(catalog(), text, strlen(text), "big.json", &f));
    ASSERT_EQ(synor_fabric_device_count(f), 10000);
    /* per node: 8 host links + 28 NVLink pairs; one network link per node */
    ASSERT_EQ(synor_fabric_link_count(f), 1250 * (8 + 28) + 1250);
    long a = dev(f, "g17.3"), c = dev(f, "g17.6"), far = dev(f, "g1249.0");
    ASSERT(a >= 0 && c >= 0 && far >= 0);
    ASSERT_EQ(dev(f, "n17"), -1); /* a node is not a device */
    ASSERT_EQ(synor_fabric_path(f, (size_t)a, (size_t)c).kind, SYNOR_LINK_NVLINK);
    synor_path p = synor_fabric_path(f, (size_t)a, (size_t)far);
    ASSERT_EQ(p.kind, SYNOR_LINK_NETWORK);
    ASSERT_EQ(p.n_hops, 4);
    ASSERT_STREQ(synor_fabric_link(f, p.hops[0])->name, "g17.3<->n17");
    ASSERT_STREQ(synor_fabric_link(f, p.hops[3])->name, "g1249.0<->n1249"); /* links are undirected */
    synor_fabric_destroy(f);
    /* the last node's devices named like an earlier device */
    char *dup = strstr(text, "\"name\": \"g1249\"");
    ASSERT(dup);
    memcpy(dup, "\"name\": \"g1248\"", 15);
    ASSERT(synor_fabric_load_string(catalog(), text, strlen(text), "big.json", &f) != 0);
    ASSERT_CONTAINS(synor_errmsg(), "duplicate device or node name \"g1248.0\"");
    synor__free(text);
}

/* NVLink links are made in the order of a loop over every pair of devices,
 * whatever order the groups come in: devices of two profiles interleaved
 * on one node. */
TEST(nvlink_pairs_in_device_order)
{
    const char *text =
        "{\"format\": \"synor-fabric/1\", \"nodes\": [{\"name\": \"n\"}],\n"
        " \"devices\": [{\"name\": \"a0\", \"profile\": \"nvidia-h100-sxm\", \"node\": \"n\"},\n"
        "  {\"name\": \"b0\", \"profile\": \"nvidia-a100-80gb\", \"node\": \"n\"},\n"
        "  {\"name\": \"a1\", \"profile\": \"nvidia-h100-sxm\", \"node\": \"n\"},\n"
        "  {\"name\": \"b1\", \"profile\": \"nvidia-a100-80gb\", \"node\": \"n\"},\n"
        "  {\"name\": \"a2\", \"profile\": \"nvidia-h100-sxm\", \"node\": \"n\"}]}";
    synor_fabric *f;
    ASSERT_OK(synor_fabric_load_string(catalog(), text, strlen(text), "mix.json", &f));
    const char *want[] = {"a0<->a1", "a0<->a2", "b0<->b1", "a1<->a2"};
    size_t k = 0;
    for (size_t i = 0; i < synor_fabric_link_count(f); i++) {
        const synor_link *l = synor_fabric_link(f, i);
        if (l->kind != SYNOR_LINK_NVLINK)
            continue;
        ASSERT(k < 4);
        ASSERT_STREQ(l->name, want[k]);
        k++;
    }
    ASSERT_EQ(k, 4);
    synor_fabric_destroy(f);
}

/* More GPUs of one profile on one node than an NVLink domain holds are
 * refused (found by fuzzing: 4,096 made 8.4 million links and took 31 s). */
TEST(nvlink_domain_limit)
{
    const char *ok = "{\"format\": \"synor-fabric/1\", \"nodes\": [{\"name\": \"h\"}],\n"
                     " \"devices\": [{\"name\": \"g\", \"profile\": \"nvidia-h100-sxm\", \"node\": \"h\", "
                     "\"count\": 576}]}";
    synor_fabric *f = NULL;
    ASSERT_OK(synor_fabric_load_string(catalog(), ok, strlen(ok), "ok.json", &f));
    ASSERT_EQ(synor_fabric_link_count(f), 576 + 576 * 575 / 2);
    synor_fabric_destroy(f);
    char *big = strdup(ok);
    memcpy(strstr(big, "576"), "577", 3);
    f = NULL;
    ASSERT(synor_fabric_load_string(catalog(), big, strlen(big), "big.json", &f) == SYNOR_ERANGE);
    ASSERT(f == NULL);
    ASSERT_CONTAINS(synor_errmsg(), "big.json: node \"h\": 577 nvidia-h100-sxm devices would all be "
                                    "joined by NVLink; an NVLink domain holds at most 576");
    free(big);
}

/* Money saturates instead of wrapping: a simulated run of 1e15 s. */
TEST(money_saturates)
{
    ASSERT_EQ(synor_money_for_seconds(3000000, 3600), 3000000);
    ASSERT_EQ(synor_money_for_seconds(1, 1800), 1); /* half a micro-unit rounds up */
    ASSERT_EQ(synor_money_for_seconds(2147483647, 1e15), INT64_MAX);
    ASSERT_EQ(synor_money_for_seconds(INT64_MAX / 2, 3 * 3600), INT64_MAX);
    ASSERT_EQ(synor_money_add(INT64_MAX, 5), INT64_MAX);
    ASSERT_EQ(synor_money_add(INT64_MIN, -5), INT64_MIN);
    ASSERT_EQ(synor_money_add(40, 2), 42);
}

TEST_MAIN(nvlink_domain_limit, money_saturates, ten_thousand_devices, nvlink_pairs_in_device_order, seed_fabric_devices_and_paths, two_nodes_nvlink_and_network,
          unified_memory_shares_the_host_space, bad_fabrics_name_the_field,
          money_is_exact, cost_matrix_is_the_roofline, builtins_listed_and_open, cleanup)
