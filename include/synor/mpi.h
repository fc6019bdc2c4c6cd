/* synor/mpi.h - the runtime across machines: one synor_runtime per MPI rank,
 * one task graph over all of them (issue 15 item 5; StarPU-MPI's design).
 *
 * Every rank builds the same graph, in the same order, as sequential code
 * would ("insert task" semantics): it registers the same data (each rank
 * registers its own local handle for every datum; the datum's owner holds
 * the valid copy, the others hold a cache) and inserts the same tasks. From
 * that shared program each rank works out, with no message exchanged for
 * it, where every task runs and which data must move:
 *   - a task runs on the rank named in synor_mpi_task.rank (the planner's
 *     placement), else on the owner of the first datum it writes (else of
 *     its first datum);
 *   - a datum it reads that the executing rank does not hold in its
 *     current version is sent by the owner (MPI_Isend/MPI_Irecv; the tag
 *     is derived from the datum's id and version) and kept there as a
 *     cached copy until the datum is written again, so a second reader on
 *     that rank moves nothing;
 *   - a task writing a datum makes its executing rank the datum's owner
 *     (ownership migrates with the writer; the other copies are invalid).
 * Only the executing rank runs a task (on its local runtime, with its local
 * dependencies); the ranks that own its inputs run a send task instead.
 *
 * Communication is done by one progress thread per rank, the only thread
 * calling MPI between synor_mpi_create and synor_mpi_destroy (so
 * MPI_THREAD_SERIALIZED is enough). It sleeps on a condition variable when
 * nothing is in flight and polls in-flight requests with an exponential
 * back-off (20 us to 1 ms), so no core is kept spinning. A task that needs
 * a datum being received is held back (with any later task sharing a datum
 * with it) until the message has arrived; nothing waits inside a kernel.
 *
 * Without MPI at build time (SYNOR_HAVE_MPI 0) the same API works on one
 * rank: synor_mpi_init succeeds with a world of 1, so every graph runs on
 * one node; started under mpirun with several ranks it fails, saying so.
 *
 * Lifecycle:
 *   synor_mpi_init(&argc, &argv);          MPI_Init_thread
 *   synor_runtime_create/start(...);       this rank's local runtime
 *   synor_mpi_create(rt, &m);
 *   synor_mpi_data_register(m, h, owner, &d);   every datum, on every rank
 *   synor_mpi_task_insert(m, &task);           every task, on every rank
 *   synor_mpi_wait_all(m);
 *   synor_mpi_destroy(m); synor_runtime_destroy(rt);
 *   synor_mpi_finalize();                  barrier, MPI_Finalize */
#ifndef SYNOR_MPI_H
#define SYNOR_MPI_H

#include <stddef.h>
#include <stdint.h>

#include "synor/exec.h"
#include "synor/plan.h"
#include "synor/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_mpi synor_mpi;
typedef struct synor_mpi_data synor_mpi_data;

/* 1 when the library was built with MPI, else 0. */
int synor_mpi_built(void);
/* Initializes MPI (thread level MPI_THREAD_SERIALIZED or better). Without
 * MPI: 0 for a world of one process, SYNOR_ENOTSUP when the environment
 * says mpirun started several (OMPI_COMM_WORLD_SIZE, PMI_SIZE). Calling it
 * twice is SYNOR_ESTATE. */
int synor_mpi_init(int *argc, char ***argv);
/* After every synor_mpi_destroy: a barrier, then MPI_Finalize. */
void synor_mpi_finalize(void);
/* After a failure on this rank: ends every process of the job (MPI_Abort
 * with code; without MPI, exit). The other ranks may be waiting for
 * messages this rank will never send, so finalize would not return. */
void synor_mpi_abort(int code);
/* This process's rank and the world's size (0 and 1 before init). */
int synor_mpi_world_rank(void);
int synor_mpi_world_size(void);

/* rt: this rank's runtime, started. Starts the progress thread.
 * SYNOR_ESTATE before synor_mpi_init; SYNOR_EIO if the thread cannot start. */
int synor_mpi_create(synor_runtime *rt, synor_mpi **out);
/* Waits for everything inserted (synor_mpi_wait_all), stops the progress
 * thread, frees the data records (not the local handles: they are the
 * caller's). Accepts NULL. */
void synor_mpi_destroy(synor_mpi *m);
/* The local runtime it was created on. */
synor_runtime *synor_mpi_runtime(const synor_mpi *m);
int synor_mpi_rank(const synor_mpi *m);
int synor_mpi_size(const synor_mpi *m);

/* Registers a datum: h is this rank's handle for it (its memory holds the
 * valid data on the owner, a cache elsewhere; every rank's handle has the
 * same type and shape). Ids are given in registration order, which must be
 * the same on every rank. SYNOR_EINVAL for a bad owner or NULL handle;
 * SYNOR_ERANGE past the ids the MPI tag space allows. */
int synor_mpi_data_register(synor_mpi *m, synor_handle *h, int owner, synor_mpi_data **out);
size_t synor_mpi_data_id(const synor_mpi_data *d);
/* The datum's owner after every task inserted so far. */
int synor_mpi_data_owner(const synor_mpi_data *d);

typedef struct synor_mpi_task {
    const synor_kernel *kernel;
    synor_priority priority;
    unsigned ndata;
    synor_mpi_data *data[SYNOR_TASK_MAX_DATA];
    synor_access mode[SYNOR_TASK_MAX_DATA];
    const void *args;  /* copied; <= SYNOR_TASK_MAX_ARGS bytes */
    size_t args_size;
    void *user;
    uint64_t tag;
    /* The rank that runs it; -1: the owner of the first datum it writes
     * (else of its first datum). */
    int rank;
} synor_mpi_task;

/* Inserts a task on every rank (same call, same order everywhere). The
 * executing rank submits it to its runtime; the owners of its inputs
 * submit their sends. Never blocks on other ranks. SYNOR_EINVAL for a bad
 * task (rank out of range, a datum of another synor_mpi); the runtime's
 * own errors. Returns the executing rank (>= 0) on success. */
int synor_mpi_task_insert(synor_mpi *m, const synor_mpi_task *t);

/* Brings the current version of d to `rank` (a read there: the owner sends
 * it unless rank already holds it); after synor_mpi_wait_all, rank's
 * handle memory holds the datum. Inserted like a task: call on every rank. */
int synor_mpi_data_fetch(synor_mpi *m, synor_mpi_data *d, int rank);

/* Waits until every task inserted on this rank has run and every message
 * this rank sends or receives has completed. Returns 0 or the first error
 * (a task's, or an MPI call's). */
int synor_mpi_wait_all(synor_mpi *m);

typedef struct synor_mpi_stats {
    uint64_t inserted;       /* tasks inserted (every rank counts all) */
    uint64_t executed_here;  /* of those, run on this rank */
    uint64_t messages_sent, bytes_sent;
    uint64_t messages_received, bytes_received;
    uint64_t cache_hits;     /* reads on this rank served by a cached copy */
} synor_mpi_stats;

void synor_mpi_get_stats(synor_mpi *m, synor_mpi_stats *out);

/* ------------------------------------------------------------ ready graphs
 * Two graphs that exchange data at every step, to run with mpirun and
 * compare with one node (`synor mpi`, docs/MPI.md). Both compute in fp32
 * with fixed-order kernels, so the results are bitwise the same whatever
 * the number of ranks and the placement.
 *   data-parallel  shards of a batch, each on its rank: forward
 *                  h = relu(x W_s), a gradient-like g = x^T h, a tree
 *                  all-reduce of the g's (sum in a fixed order), every
 *                  replica W_s updated by the sum; several steps.
 *   pipeline       stages of relu(a W_p) layers; micro-batches enter at
 *                  stage 0 and flow stage to stage (rank to rank). */
typedef enum synor_mpi_graph {
    SYNOR_MPI_GRAPH_DATA_PARALLEL = 0,
    SYNOR_MPI_GRAPH_PIPELINE = 1
} synor_mpi_graph;

typedef enum synor_mpi_placement {
    /* data-parallel: shard s's work on rank s mod size, the all-reduce on
     * the owners of the partial sums; pipeline: stage p on rank p mod size */
    SYNOR_MPI_PLACE_OWNER = 0,
    /* each task where the planner puts it: the graph planned on a fabric of
     * `size` nodes (one CPU each, the network of synor_mpi_graph_options),
     * node i = rank i */
    SYNOR_MPI_PLACE_PLAN = 1
} synor_mpi_placement;

const char *synor_mpi_graph_name(synor_mpi_graph g);
int synor_mpi_graph_from_name(const char *name, synor_mpi_graph *out);
const char *synor_mpi_placement_name(synor_mpi_placement p);
int synor_mpi_placement_from_name(const char *name, synor_mpi_placement *out);

typedef struct synor_mpi_graph_options {
    synor_mpi_graph graph;
    synor_mpi_placement placement;
    synor_strategy strategy;   /* plan: default HEFT (pipeline graph: pipeline) */
    const char *cpu_profile;   /* plan: each node's CPU (default amd-epyc-9654) */
    double network_gb_s;       /* plan: between nodes, GB/s (default 12.5) */
    double network_latency_us; /* plan: default 5 */
    size_t dim;                /* features (default 128) */
    size_t rows;               /* rows per shard / per micro-batch (default 64) */
    size_t parts;              /* shards / stages (default 4) */
    size_t steps;              /* data-parallel steps / micro-batches (default 3 / 8) */
    uint64_t seed;
} synor_mpi_graph_options;

void synor_mpi_graph_options_init(synor_mpi_graph_options *o);

typedef struct synor_mpi_graph_result {
    size_t tasks;
    double seconds;          /* rank 0: from a barrier to the last result */
    double checksum;         /* rank 0: sum of every output element */
    double max_abs_diff;     /* rank 0: against the serial reference (and,
                                data-parallel, between the replicas) */
    size_t outputs;          /* elements summed */
    unsigned ranks_used;     /* distinct ranks that ran tasks */
    uint64_t messages;       /* sent by all ranks during the run */
    uint64_t bytes;          /* their payload bytes */
} synor_mpi_graph_result;

/* Builds and runs the graph on every rank (call on all), gathers the
 * outputs to rank 0 and checks them there against the same computation
 * done serially (plain loops, no runtime). */
int synor_mpi_graph_run(synor_mpi *m, const synor_mpi_graph_options *o,
                        synor_mpi_graph_result *out);

/* ------------------------------------------------------------- workloads
 * A workload file run for real (synor/exec.h: its kernels, operands and
 * seeded data) across the ranks: every rank loads the same workload; with
 * SYNOR_MPI_PLACE_OWNER, external data are owned round robin over the ranks
 * in data order and a task runs on the owner of its first input; with
 * SYNOR_MPI_PLACE_PLAN, each task runs on the rank of the node the planner
 * (o->strategy) puts it on, in the fabric of o (one node per rank). The
 * results (the data no task consumes) are gathered to rank 0, whose
 * out->run.checksum is their sum (other ranks' is partial). Only o's
 * placement, strategy, fabric fields and seed are used. */
typedef struct synor_mpi_workload_result {
    synor_exec_result run;
    unsigned ranks_used;
    uint64_t messages, bytes; /* all ranks */
} synor_mpi_workload_result;

int synor_mpi_workload_run(synor_mpi *m, const synor_workload *w,
                           const synor_mpi_graph_options *o, synor_mpi_workload_result *out);

#ifdef __cplusplus
}
#endif
#endif
