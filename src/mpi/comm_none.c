/* comm_none.c - the message layer without MPI (comm.h): a world of one
 * process, so no message is ever posted. Started by mpirun with several
 * processes, init says the build has no MPI rather than running N copies
 * of the same graph side by side. */
#include <limits.h>
#include <stdlib.h>

#include "common/common.h"
#include "mpi/comm.h"

static int g_inited;

int synor__comm_built(void) { return 0; }
int synor__comm_initialized(void) { return g_inited; }
int synor__comm_rank(void) { return 0; }
int synor__comm_size(void) { return 1; }
/* no message is ever sent: tags bound nothing */
int synor__comm_tag_ub(void) { return INT_MAX; }

int synor__comm_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (g_inited)
        return synor__error(SYNOR_ESTATE, "mpi: already initialized");
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(vars); i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1)
            return synor__error(SYNOR_ENOTSUP,
                                "mpi: started as one of %s processes (%s), but this synor was "
                                "built without MPI (install libopenmpi-dev and rebuild)",
                                v, vars[i]);
    }
    g_inited = 1;
    return 0;
}

void synor__comm_finalize(void) { g_inited = 0; }
void synor__comm_abort(int code) { exit(code); }

int synor__comm_isend(const void *buf, size_t bytes, int dest, int tag, synor__comm_req **req)
{
    (void)buf, (void)bytes, (void)dest, (void)tag;
    *req = NULL;
    return synor__error(SYNOR_ENOTSUP, "mpi: built without MPI: no message to rank %d", dest);
}

int synor__comm_irecv(void *buf, size_t bytes, int src, int tag, synor__comm_req **req)
{
    (void)buf, (void)bytes, (void)tag;
    *req = NULL;
    return synor__error(SYNOR_ENOTSUP, "mpi: built without MPI: no message from rank %d", src);
}

int synor__comm_test(synor__comm_req *req, int *done)
{
    (void)req;
    *done = 1;
    return 0;
}

int synor__comm_barrier(void) { return 0; }
int synor__comm_sum(double *v)
{
    (void)v;
    return 0;
}
