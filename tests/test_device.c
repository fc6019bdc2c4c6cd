/* test_device.c - devices: roofline estimates, energy, memory accounting,
 * reference counting, submit on the host backend and refusal on simulated
 * devices. Also run under ThreadSanitizer (label "concurrency"). */
#include <pthread.h>

#include "synor.h"
#include "test.h"

static const char *const GPU =
    "{\"format\": \"synor-profiles/1\", \"profiles\": [{\n"
    " \"id\": \"t-gpu\", \"name\": \"T GPU\", \"vendor\": \"Acme\",\n"
    " \"type\": {\"kind\": \"gpu\", \"api\": \"cuda\"},\n"
    " \"compute\": {\"fp32\": 50, \"fp16\": {\"dense\": 1000, \"sparse\": 2000}, \"source\": \"s\"},\n"
    " \"memory\": {\"capacity\": \"80 GB\", \"bandwidth_gb_s\": 2000, \"type\": \"hbm3\", \"source\": \"s\"},\n"
    " \"power\": {\"idle_w\": 100, \"peak_w\": 700, \"source\": \"s\"},\n"
    " \"latency\": {\"launch_us\": 10, \"source\": \"s\"},\n"
    " \"efficiency\": 0.5,\n"
    " \"operations\": [\"matmul\", \"softmax\"]}]}";

static synor_device *make_gpu(synor_catalog **cat)
{
    synor_device *d = NULL;
    if (synor_catalog_create(cat) || synor_catalog_load_string(*cat, GPU, strlen(GPU), "gpu.json"))
        return NULL;
    if (synor_device_create_simulated(synor_catalog_find(*cat, "t-gpu"), NULL, &d))
        return NULL;
    return d;
}

TEST(roofline_time_and_energy)
{
    synor_catalog *cat;
    synor_device *d = make_gpu(&cat);
    ASSERT(d);
    ASSERT(synor_device_is_simulated(d));
    ASSERT_STREQ(synor_device_backend(d), "simulated");
    ASSERT_STREQ(synor_device_profile_id(d), "t-gpu");
    /* compute-bound: 1e15 FLOP at 1000 TFLOPS x 0.5 = 2 s; bytes 2e9 -> 1 ms */
    synor_op_work mm = {.type = SYNOR_OP_MATMUL, .dtype = SYNOR_DTYPE_FP16, .flops = 1e15,
                        .bytes_read = 1e9, .bytes_written = 1e9};
    ASSERT(synor_device_can_execute(d, &mm));
    ASSERT_NEAR(synor_device_estimate_time(d, &mm), 2.0 + 10e-6, 1e-12);
    /* with sparsity the peak doubles */
    mm.sparse = 1;
    ASSERT_NEAR(synor_device_estimate_time(d, &mm), 1.0 + 10e-6, 1e-12);
    mm.sparse = 0;
    /* energy: 2 s busy at 700 W + 10 us launch at 100 W */
    ASSERT_NEAR(synor_device_estimate_energy(d, &mm), 700.0 * 2.0 + 100.0 * 10e-6, 1e-9);
    /* memory-bound: 1e9 FLOP (2 us) but 4e9 bytes at 2000 GB/s = 2 ms */
    synor_op_work sm = {.type = SYNOR_OP_SOFTMAX, .dtype = SYNOR_DTYPE_FP32, .flops = 1e9,
                        .bytes_read = 2e9, .bytes_written = 2e9};
    ASSERT_NEAR(synor_device_estimate_time(d, &sm), 2e-3 + 10e-6, 1e-12);
    /* unsupported operation, unsupported data type: infinity */
    synor_op_work tok = {.type = SYNOR_OP_TOKENIZATION, .dtype = SYNOR_DTYPE_FP32, .flops = 1};
    ASSERT(!synor_device_can_execute(d, &tok));
    ASSERT(isinf(synor_device_estimate_time(d, &tok)));
    ASSERT(isinf(synor_device_estimate_energy(d, &tok)));
    synor_op_work i8 = {.type = SYNOR_OP_MATMUL, .dtype = SYNOR_DTYPE_INT8, .flops = 1};
    ASSERT(!synor_device_can_execute(d, &i8));
    synor_device_unref(d);
    synor_catalog_destroy(cat);
}

TEST(memory_accounting)
{
    synor_catalog *cat;
    synor_device *d = make_gpu(&cat);
    ASSERT(d);
    ASSERT_EQ(synor_device_available_memory(d), 80000000000ull);
    ASSERT_OK(synor_device_reserve(d, 60000000000ull));
    ASSERT_EQ(synor_device_available_memory(d), 20000000000ull);
    ASSERT_EQ(synor_device_reserve(d, 30000000000ull), SYNOR_ENOMEM);
    ASSERT_CONTAINS(synor_errmsg(), "device \"T GPU\": cannot reserve 30000000000 bytes: 60000000000 of 80000000000 in use");
    ASSERT_EQ(synor_device_reserved(d), 60000000000ull);
    synor_device_release(d, 60000000000ull);
    ASSERT_EQ(synor_device_reserved(d), 0);
    synor_device_set_utilization(d, 1.7);
    ASSERT(synor_device_utilization(d) == 1.0);
    synor_device_set_utilization(d, NAN);
    ASSERT(synor_device_utilization(d) == 0.0);
    synor_device_unref(d);
    synor_catalog_destroy(cat);
}

TEST(simulated_devices_cannot_run_work)
{
    synor_catalog *cat;
    synor_device *d = make_gpu(&cat);
    ASSERT(d);
    synor_work w = {.op = {.type = SYNOR_OP_MATMUL, .dtype = SYNOR_DTYPE_FP16}};
    ASSERT_EQ(synor_device_submit(d, &w), SYNOR_ENOTSUP);
    ASSERT_CONTAINS(synor_errmsg(), "is simulated");
    synor_device_unref(d);
    synor_catalog_destroy(cat);
}

static int add_one(void *arg)
{
    (*(int *)arg)++;
    return 0;
}

static int fail_kernel(void *arg)
{
    (void)arg;
    return SYNOR_EIO;
}

TEST(host_device_runs_work)
{
    synor_detection *det;
    ASSERT_OK(synor_detect_run(NULL, SYNOR_DETECT_HOST, &det));
    ASSERT_EQ(synor_detection_count(det), 1);
    synor_device *cpu = synor_detection_device(det, 0);
    ASSERT(!synor_device_is_simulated(cpu));
    ASSERT_STREQ(synor_device_backend(cpu), "host");
    int counter = 0;
    synor_work w = {.op = {.type = SYNOR_OP_SUM, .dtype = SYNOR_DTYPE_FP32}, .fn = add_one,
                    .arg = &counter};
    ASSERT_OK(synor_device_submit(cpu, &w));
    ASSERT_OK(synor_device_submit(cpu, &w));
    ASSERT_EQ(counter, 2);
    w.fn = fail_kernel;
    ASSERT_EQ(synor_device_submit(cpu, &w), SYNOR_EIO);
    double u = synor_device_utilization(cpu);
    ASSERT(u >= 0 && u <= 1);
    ASSERT(synor_device_available_memory(cpu) > 0);
    synor_detection_destroy(det);
}

static void *reserve_loop(void *arg)
{
    synor_device *d = arg;
    for (int i = 0; i < 20000; i++) {
        if (synor_device_reserve(d, 1000) == 0)
            synor_device_release(d, 1000);
        synor_device_set_utilization(d, (i % 100) / 100.0);
        synor_device_ref(d);
        synor_device_unref(d);
    }
    return NULL;
}

TEST(concurrent_accounting_and_refcount)
{
    synor_catalog *cat;
    synor_device *d = make_gpu(&cat);
    ASSERT(d);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, reserve_loop, d);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    ASSERT_EQ(synor_device_reserved(d), 0);
    synor_device_unref(d);
    synor_catalog_destroy(cat);
}

TEST(details)
{
    synor_catalog *cat;
    synor_device *d = make_gpu(&cat);
    ASSERT(d);
    ASSERT_OK(synor_device_add_detail(d, "sms", "132"));
    ASSERT_STREQ(synor_device_detail_get(d, "sms"), "132");
    ASSERT(!synor_device_detail_get(d, "nope"));
    const char *k, *v;
    ASSERT_EQ(synor_device_detail(d, 5, &k, &v), SYNOR_ERANGE);
    synor_device_unref(d);
    synor_catalog_destroy(cat);
}

TEST(caps_helpers)
{
    synor_caps c;
    memset(&c, 0, sizeof c);
    ASSERT(synor_caps_pcie_bandwidth(&c) == 0);
    c.pcie_gen = 3;
    c.pcie_lanes = 16;
    ASSERT_NEAR(synor_caps_pcie_bandwidth(&c), 15.76e9, 1e-9);
    c.pcie_gen = 5;
    ASSERT_NEAR(synor_caps_pcie_bandwidth(&c), 63.04e9, 1e-9);
    c.pcie_gen = 2;
    c.pcie_lanes = 8;
    ASSERT_NEAR(synor_caps_pcie_bandwidth(&c), 4e9, 1e-9);
    c.peak[SYNOR_DTYPE_FP8].dense = 1e15;
    c.peak[SYNOR_DTYPE_FP8].sparse = 2e15;
    ASSERT(synor_caps_peak(&c, SYNOR_DTYPE_FP8, 0) == 1e15);
    ASSERT(synor_caps_peak(&c, SYNOR_DTYPE_FP8, 1) == 2e15);
    ASSERT(synor_caps_peak(&c, SYNOR_DTYPE_INT4, 1) == 0);
    ASSERT(synor_caps_peak(&c, (synor_dtype)99, 0) == 0);
}

TEST_MAIN(caps_helpers, roofline_time_and_energy, memory_accounting, simulated_devices_cannot_run_work,
          host_device_runs_work, concurrent_accounting_and_refcount, details)
