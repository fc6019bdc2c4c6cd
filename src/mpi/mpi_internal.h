/* mpi_internal.h - what src/mpi's files share (internal). */
#ifndef SYNOR_MPI_INTERNAL_H
#define SYNOR_MPI_INTERNAL_H

#include "synor/fabric.h"
#include "synor/profile.h"

/* The fabric placement plans on: `size` nodes "rank0".., one CPU of
 * profile `profile` each ("cpu0".., device i on node i), joined by a network
 * of gb_s GB/s and latency_us. *cat (the built-in catalog) must outlive
 * *f; both are the caller's to destroy. */
int synor__mpi_fabric_create(int size, const char *profile, double gb_s, double latency_us,
                             synor_catalog **cat, synor_fabric **f);

#endif
