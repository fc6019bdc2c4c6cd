/* list_devices.c - the smallest use of libsynor: load the profile catalog,
 * detect this machine's processors, register them together with two
 * simulated accelerators, and ask the registry which devices can run a
 * bf16 matrix multiply with at least 16 GiB of memory, and how long a
 * 4096^3 GEMM would take on each.
 *
 *   cc list_devices.c $(pkg-config --cflags --libs synor) -o list_devices */
#include <stdio.h>

#include <synor.h>

int main(void)
{
    synor_catalog *cat = NULL;
    synor_detection *det = NULL;
    synor_registry *reg = NULL;
    synor_registry_entry *e = NULL;
    size_t n = 0;
    int rc = 1;

    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat) ||
        synor_detect_run(cat, SYNOR_DETECT_ALL & ~(unsigned)SYNOR_DETECT_MEASURE, &det) ||
        synor_registry_create(&reg) || synor_detection_register(det, reg, "local"))
        goto out;

    const char *sims[] = {"nvidia-h100-sxm", "google-tpu-v5p"};
    for (int i = 0; i < 2; i++) {
        synor_device *d;
        const synor_profile *p = synor_catalog_find(cat, sims[i]);
        if (!p || synor_device_create_simulated(p, NULL, &d))
            goto out;
        int r = synor_registry_add(reg, sims[i], d, NULL);
        synor_device_unref(d);
        if (r)
            goto out;
    }

    synor_registry_query q = {0};
    q.by_op = 1;
    q.op = SYNOR_OP_MATMUL;
    q.op_dtype = SYNOR_DTYPE_BF16;
    q.min_memory = 16ull << 30;
    if (synor_registry_query_run(reg, &q, &e, &n))
        goto out;

    const double N = 4096;
    synor_op_work gemm = {.type = SYNOR_OP_MATMUL, .dtype = SYNOR_DTYPE_BF16,
                          .flops = 2 * N * N * N, .bytes_read = 2 * N * N * 2,
                          .bytes_written = N * N * 2};
    printf("%zu device(s) can run a bf16 matmul with >= 16 GiB:\n", n);
    for (size_t i = 0; i < n; i++)
        printf("  %-18s %-40s %s  4096^3 GEMM ~ %.3f ms\n", e[i].id, synor_device_name(e[i].device),
               synor_device_is_simulated(e[i].device) ? "simulated" : "real     ",
               synor_device_estimate_time(e[i].device, &gemm) * 1e3);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "list_devices: %s\n", synor_errmsg());
    synor_registry_entries_free(e, n);
    synor_registry_destroy(reg);
    synor_detection_destroy(det);
    synor_catalog_destroy(cat);
    return rc;
}
