/* test_whatif.c - the local fabric from detection and what-if fabrics
 * (synor/whatif.h). Independent of the machine: it checks the structure
 * (a CPU named cpu0 with the detected figures, changes added or swapped,
 * prices from the built-in fabrics, errors naming what is wrong), not the
 * figures of this CPU. */
#include <string.h>

#include "synor.h"
#include "test.h"

TEST(the_local_fabric_and_its_changes)
{
    synor_catalog *cat;
    synor_detection *det;
    ASSERT_OK(synor_catalog_create(&cat));
    ASSERT_OK(synor_catalog_load_builtin(cat));
    ASSERT_OK(synor_detect_run(cat, SYNOR_DETECT_HOST, &det));
    synor_fabric *f;
    ASSERT_OK(synor_whatif_fabric(cat, det, NULL, 0, &f));
    ASSERT_EQ(strcmp(synor_fabric_name(f), "local"), 0);
    ASSERT(synor_fabric_device_count(f) >= 1);
    const synor_fabric_device *cpu = synor_fabric_device_at(f, 0);
    ASSERT_EQ(strcmp(cpu->name, "cpu0"), 0);
    ASSERT_EQ(strcmp(cpu->profile->id, "local-cpu0"), 0);
    /* the detected figures, not a catalog product's */
    const synor_caps *det_caps = synor_device_caps(synor_detection_device(det, 0));
    ASSERT_NEAR(synor_device_caps(cpu->dev)->peak[SYNOR_DTYPE_FP32].dense,
                det_caps->peak[SYNOR_DTYPE_FP32].dense, 1e-12);
    ASSERT_EQ(cpu->price_micro, 0);
    size_t base = synor_fabric_device_count(f);
    synor_fabric_destroy(f);
    /* two H100s added, the CPU swapped for an EPYC 9654 */
    synor_whatif_change ch[2] = {{"nvidia-h100-sxm", 2, NULL}, {"amd-epyc-9654", 1, "cpu0"}};
    ASSERT_OK(synor_whatif_fabric(cat, det, ch, 2, &f));
    ASSERT_EQ(synor_fabric_device_count(f), base + 2);
    ASSERT_EQ(strcmp(synor_fabric_device_at(f, 0)->profile->id, "amd-epyc-9654"), 0);
    int h100 = 0;
    for (size_t i = 0; i < synor_fabric_device_count(f); i++)
        h100 += !strcmp(synor_fabric_device_at(f, i)->profile->id, "nvidia-h100-sxm");
    ASSERT_EQ(h100, 2);
    synor_fabric_destroy(f);
    ASSERT_EQ(synor_whatif_price(cat, "nvidia-h100-sxm"), 3000000); /* the seed fabric's */
    ASSERT_EQ(synor_whatif_price(cat, "ti-c6678"), 0);
    /* errors name the profile or the device */
    synor_whatif_change bad = {"no-such-chip", 1, NULL};
    ASSERT_EQ(synor_whatif_fabric(cat, det, &bad, 1, &f), SYNOR_ENOENT);
    ASSERT_CONTAINS(synor_errmsg(), "no profile \"no-such-chip\"");
    synor_whatif_change where = {"groq-lpu", 1, "gpu9"};
    ASSERT_EQ(synor_whatif_fabric(cat, det, &where, 1, &f), SYNOR_ENOENT);
    ASSERT_CONTAINS(synor_errmsg(), "no device \"gpu9\"");
    synor_whatif_change many = {"groq-lpu", 2000, NULL};
    ASSERT_EQ(synor_whatif_fabric(cat, det, &many, 1, &f), SYNOR_EINVAL);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
}

TEST(the_local_fabric_plans_a_workload)
{
    synor_catalog *cat;
    synor_detection *det;
    ASSERT_OK(synor_catalog_create(&cat));
    ASSERT_OK(synor_catalog_load_builtin(cat));
    ASSERT_OK(synor_detect_run(cat, SYNOR_DETECT_HOST, &det));
    synor_fabric *f;
    synor_workload *w;
    synor_cost *c;
    synor_plan *p;
    synor_trace *t;
    ASSERT_OK(synor_whatif_fabric(cat, det, NULL, 0, &f));
    ASSERT_OK(synor_workload_load_file(SYNOR_SOURCE_DIR "/workloads/mlp-fp32.json", &w));
    ASSERT_OK(synor_cost_create(w, f, &c));
    ASSERT_OK(synor_plan_create(c, NULL, &p));
    ASSERT_OK(synor_simulate(c, p, &t));
    ASSERT(t->makespan > 0);
    synor_trace_destroy(t);
    synor_plan_destroy(p);
    synor_cost_destroy(c);
    synor_workload_destroy(w);
    synor_fabric_destroy(f);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
}

TEST_MAIN(the_local_fabric_and_its_changes, the_local_fabric_plans_a_workload)
