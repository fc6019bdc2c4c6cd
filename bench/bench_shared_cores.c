/* bench_shared_cores.c - how an OpenCL CPU device (PoCL) and the runtime's
 * CPU workers slow each other on the host's cores
 * (synor_whatif_measure_sharing: the factors of the simulator's shared-core
 * model, docs/PLANNING.md "Devices that share the host's cores").
 *
 *   bench_shared_cores [--rounds R] [--n N] [--nb NB] [--workers W] [--cache F]
 *
 * Prints a CPU worker's tile time alone and with the OpenCL device busy, the
 * device's tile time alone and with every worker busy, and the two
 * slowdowns. Exits 0 with "skip: ..." where no OpenCL CPU device exists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synor/error.h"
#include "synor/whatif.h"

int main(int argc, char **argv)
{
    unsigned rounds = 5, workers = 0;
    size_t n = 1024, nb = 256;
    const char *cache = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--rounds"))
            rounds = (unsigned)atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--n"))
            n = (size_t)atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--nb"))
            nb = (size_t)atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--workers"))
            workers = (unsigned)atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--cache"))
            cache = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--rounds R] [--n N] [--nb NB] [--workers W] [--cache F]\n",
                    argv[0]);
            return 2;
        }
    }
    synor_whatif_sharing s;
    int rc = synor_whatif_measure_sharing(workers, n, nb, rounds, cache, &s);
    if (rc == SYNOR_ENODEV) {
        printf("skip: %s\n", synor_errmsg());
        return 0;
    }
    if (rc) {
        fprintf(stderr, "bench_shared_cores: %s\n", synor_errmsg());
        return 1;
    }
    printf("workers=%u device=\"%s\" n=%zu nb=%zu rounds=%u cpu_alone_ms=%.3f "
           "cpu_with_device_ms=%.3f cpu_slowdown=%.3f device_alone_ms=%.3f "
           "device_with_cpu_ms=%.3f slowdown=%.3f%s\n",
           s.workers, s.device, s.n, s.nb, rounds, s.cpu_alone_s * 1e3,
           s.cpu_with_device_s * 1e3, s.cpu_slowdown, s.device_alone_s * 1e3,
           s.device_with_cpu_s * 1e3, s.slowdown, s.from_cache ? " (cached)" : "");
    return 0;
}
