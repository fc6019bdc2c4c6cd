/* comm.h - the message layer under src/mpi (internal): MPI point to point,
 * or, built without MPI, a world of one process. Exactly one of comm_mpi.c
 * and comm_none.c is compiled (CMakeLists.txt), libuv style. Between
 * synor_mpi_create and synor_mpi_destroy only the progress thread calls
 * these (init, finalize and the world queries excepted). */
#ifndef SYNOR_MPI_COMM_H
#define SYNOR_MPI_COMM_H

#include <stddef.h>

typedef struct synor__comm_req synor__comm_req;

int synor__comm_built(void);
int synor__comm_init(int *argc, char ***argv);
int synor__comm_initialized(void);
void synor__comm_finalize(void);
/* Ends every process of the job (MPI_Abort); without MPI, exit(code). */
void synor__comm_abort(int code);
int synor__comm_rank(void);
int synor__comm_size(void);
int synor__comm_tag_ub(void);
/* Non-blocking; *req is freed by the synor__comm_test that reports it done. */
int synor__comm_isend(const void *buf, size_t bytes, int dest, int tag, synor__comm_req **req);
int synor__comm_irecv(void *buf, size_t bytes, int src, int tag, synor__comm_req **req);
/* *done = 1 when the request completed (and was freed). */
int synor__comm_test(synor__comm_req *req, int *done);
int synor__comm_barrier(void);
/* Sum of a double over every rank, result on every rank. */
int synor__comm_sum(double *v);

#endif
