/* track.h - the bookkeeping of data across ranks (internal): who owns each
 * datum, its version, which ranks hold a valid copy, and for each inserted
 * task where it runs and which transfers it needs. Pure logic, no MPI:
 * every rank runs it on the same program and reaches the same answers,
 * which is what lets ranks agree on sends and receives without asking each
 * other. Tested without MPI (tests/test_mpi_track.c). */
#ifndef SYNOR_MPI_TRACK_H
#define SYNOR_MPI_TRACK_H

#include <stddef.h>
#include <stdint.h>

#include "synor/runtime.h"

typedef struct synor__mpi_track synor__mpi_track;

/* One message: the datum's version `version` from rank `from` to `to`,
 * under MPI tag `tag`. */
typedef struct synor__mpi_xfer {
    size_t datum;
    int from, to;
    uint32_t version;
    int tag;
} synor__mpi_xfer;

/* Version bits in a tag: a tag is id << SYNOR__MPI_VERSION_BITS | version
 * mod 2^bits. Two messages with one tag between the same two ranks are
 * matched in the order they were posted (MPI's non-overtaking rule), and
 * the sends of one datum are ordered by its data dependencies, so the wrap
 * is harmless. */
#define SYNOR__MPI_VERSION_BITS 10

/* size ranks; tag_ub: the largest tag MPI allows (MPI_TAG_UB). */
int synor__mpi_track_create(int size, int tag_ub, synor__mpi_track **out);
void synor__mpi_track_destroy(synor__mpi_track *t);
/* A new datum owned (and held) by owner, version 0; *id its index.
 * SYNOR_EINVAL for a bad owner; SYNOR_ERANGE when its tags would exceed
 * tag_ub. */
int synor__mpi_track_add(synor__mpi_track *t, int owner, size_t *id);
size_t synor__mpi_track_count(const synor__mpi_track *t);
int synor__mpi_track_owner(const synor__mpi_track *t, size_t id);
uint32_t synor__mpi_track_version(const synor__mpi_track *t, size_t id);
/* 1 if rank holds the current version of id. */
int synor__mpi_track_valid(const synor__mpi_track *t, size_t id, int rank);
int synor__mpi_track_tag(size_t id, uint32_t version);

/* Plans one task over data ids[0..n) with modes[]: its executing rank
 * (rank >= 0 as given; -1: the owner of the first datum written, else of
 * the first datum), returned; the transfers it needs, in operand order,
 * in xfers (room for n); *hits: the reads on the executing rank that a
 * valid cached copy serves. Then updates the state: the executing rank
 * holds what it read; what it writes gets a new version owned and held by
 * it alone. SYNOR_EINVAL for a bad id, mode or rank (state unchanged). */
int synor__mpi_track_task(synor__mpi_track *t, const size_t *ids, const synor_access *modes,
                          unsigned n, int rank, synor__mpi_xfer *xfers, unsigned *nx,
                          unsigned *hits);

#endif
