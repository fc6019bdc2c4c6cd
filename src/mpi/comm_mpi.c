/* comm_mpi.c - the message layer over MPI (comm.h). Messages over INT_MAX
 * bytes are refused: the counts of MPI-3 calls are ints. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <mpi.h>

#include "common/common.h"
#include "mpi/comm.h"

struct synor__comm_req {
    MPI_Request r;
};

static int g_inited, g_rank, g_size = 1, g_tag_ub = 32767;

int synor__comm_built(void) { return 1; }
int synor__comm_initialized(void) { return g_inited; }
int synor__comm_rank(void) { return g_rank; }
int synor__comm_size(void) { return g_size; }
int synor__comm_tag_ub(void) { return g_tag_ub; }

static int mpi_error(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        len = 0;
    msg[len] = '\0';
    return synor__error(SYNOR_EIO, "mpi: %s failed: %s", what, msg);
}

int synor__comm_init(int *argc, char ***argv)
{
    if (g_inited)
        return synor__error(SYNOR_ESTATE, "mpi: already initialized");
    int provided = 0;
    /* MULTIPLE where the library has it (Debian's Open MPI does): the main
     * thread's barriers and sums then need no care; SERIALIZED suffices,
     * as those come only when nothing is in flight. */
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
        (void)MPI_Finalize();
        return synor__error(SYNOR_ENOTSUP,
                            "mpi: the MPI library gives thread level %d, MPI_THREAD_SERIALIZED "
                            "(%d) is needed (one progress thread calls MPI)",
                            provided, MPI_THREAD_SERIALIZED);
    }
    /* errors come back as codes, not as an abort inside the library */
    (void)MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    (void)MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    (void)MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    void *ub = NULL;
    int flag = 0;
    if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS && flag && ub)
        g_tag_ub = *(int *)ub;
    g_inited = 1;
    return 0;
}

void synor__comm_finalize(void)
{
    if (!g_inited)
        return;
    (void)MPI_Barrier(MPI_COMM_WORLD);
    (void)MPI_Finalize();
    g_inited = 0;
}

void synor__comm_abort(int code)
{
    if (g_inited)
        (void)MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

static int post(int send, void *buf, size_t bytes, int peer, int tag, synor__comm_req **req)
{
    *req = NULL;
    if (bytes > INT_MAX)
        return synor__error(SYNOR_ERANGE, "mpi: a message of %zu bytes (at most %d)", bytes,
                            INT_MAX);
    synor__comm_req *r = synor__malloc(sizeof *r);
    if (!r)
        return synor__error(SYNOR_ENOMEM, "mpi: out of memory");
    int rc = send ? MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r->r)
                  : MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r->r);
    if (rc != MPI_SUCCESS) {
        synor__free(r);
        return mpi_error(rc, send ? "MPI_Isend" : "MPI_Irecv");
    }
    *req = r;
    return 0;
}

int synor__comm_isend(const void *buf, size_t bytes, int dest, int tag, synor__comm_req **req)
{
    return post(1, (void *)(uintptr_t)buf, bytes, dest, tag, req);
}

int synor__comm_irecv(void *buf, size_t bytes, int src, int tag, synor__comm_req **req)
{
    return post(0, buf, bytes, src, tag, req);
}

int synor__comm_test(synor__comm_req *req, int *done)
{
    MPI_Status st;
    int flag = 0;
    int rc = MPI_Test(&req->r, &flag, &st);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, "MPI_Test");
    *done = flag;
    if (flag)
        synor__free(req);
    return 0;
}

int synor__comm_barrier(void)
{
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_error(rc, "MPI_Barrier");
}

int synor__comm_sum(double *v)
{
    double in = *v;
    int rc = MPI_Allreduce(&in, v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_error(rc, "MPI_Allreduce");
}
