/* whatif_internal.h - shared by whatif.c and run_fabric.c. */
#ifndef SYNOR_WHATIF_INTERNAL_H
#define SYNOR_WHATIF_INTERNAL_H
#include "synor/whatif.h"

/* The detected device as profile `id` in cat; share > 1: one of that many
 * equal parts of it (a CPU worker: its share of the peak and the power).
 * standin (NULL: none): the profile stands for that run device, which
 * detection did not describe: its name and memory (when known), dev's
 * figures otherwise, and the sources say so. */
int synor__whatif_add_profile(synor_catalog *cat, synor_device *dev, const char *id,
                              unsigned share, const synor_whatif_run_device *standin);

#endif
