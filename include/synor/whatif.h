/* synor/whatif.h - this machine as a fabric, and what adding or swapping
 * processors would buy (issue 11, "what-if in one command").
 *
 * The local fabric is built from detection: the host CPU with its measured
 * peak and bandwidth (synor_detect_run_cached) and any CUDA GPU, each made
 * a profile of the catalog ("local-cpu0", "local-cuda0": their figures and
 * where each comes from: measured, detected or derived) and a device of a
 * fabric named "local" on one node. Detected devices without a power
 * figure get 0 W (energy not modelled for them, and said so). A what-if is
 * the local fabric with devices added (a catalog profile, a count) or a
 * local device replaced by a profile; added devices are simulated from
 * their profiles. Prices per hour come from the built-in fabrics that
 * list the profile (the seed fabric's assumptions), else 0. */
#ifndef SYNOR_WHATIF_H
#define SYNOR_WHATIF_H

#include <stddef.h>

#include "synor/detect.h"
#include "synor/fabric.h"
#include "synor/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A change to the local fabric: add `count` devices of `profile`, or (with
 * replace set) put one of `profile` in place of the local device named
 * `replace`. */
typedef struct synor_whatif_change {
    const char *profile;
    unsigned count;
    const char *replace; /* NULL: add */
} synor_whatif_change;

/* The local fabric (changes NULL / 0) or a what-if of it. Adds the local
 * devices' profiles to cat (which must outlive the fabric). Fails naming an
 * unknown profile or device. */
int synor_whatif_fabric(synor_catalog *cat, const synor_detection *d,
                        const synor_whatif_change *changes, size_t n_changes, synor_fabric **out);

/* The price per hour (micro-units) the built-in fabrics assume for a
 * profile; 0 if none lists it. */
int64_t synor_whatif_price(const synor_catalog *cat, const char *profile);

#ifdef __cplusplus
}
#endif
#endif
