/* test_mpi_track.c - the bookkeeping of data across MPI ranks (src/mpi/
 * track.c): owners, versions, cached copies, the transfers a task needs and
 * their tags. Needs no MPI: ranks are simulated. */
#include <stdint.h>

#include "mpi/track.h"
#include "synor/error.h"
#include "test.h"

#define R SYNOR_ACCESS_R
#define W SYNOR_ACCESS_W
#define RW SYNOR_ACCESS_RW

static synor__mpi_track *make(int size, size_t n_data, const int *owners)
{
    synor__mpi_track *t = NULL;
    if (synor__mpi_track_create(size, 0x7fffffff, &t) < 0)
        return NULL;
    for (size_t i = 0; i < n_data; i++) {
        size_t id;
        if (synor__mpi_track_add(t, owners[i], &id) < 0 || id != i) {
            synor__mpi_track_destroy(t);
            return NULL;
        }
    }
    return t;
}

TEST(new_data_are_held_by_their_owner_only)
{
    int owners[] = {0, 2, 1};
    synor__mpi_track *t = make(3, 3, owners);
    ASSERT(t);
    for (size_t i = 0; i < 3; i++) {
        ASSERT_EQ(synor__mpi_track_owner(t, i), owners[i]);
        ASSERT_EQ(synor__mpi_track_version(t, i), 0);
        for (int r = 0; r < 3; r++)
            ASSERT_EQ(synor__mpi_track_valid(t, i, r), r == owners[i]);
    }
    size_t id;
    ASSERT_EQ(synor__mpi_track_add(t, 3, &id), SYNOR_EINVAL);
    ASSERT_EQ(synor__mpi_track_add(t, -1, &id), SYNOR_EINVAL);
    ASSERT_EQ(synor__mpi_track_count(t), 3);
    synor__mpi_track_destroy(t);
}

TEST(a_task_runs_on_the_owner_of_what_it_writes_and_local_reads_move_nothing)
{
    int owners[] = {1, 1, 1};
    synor__mpi_track *t = make(2, 3, owners);
    ASSERT(t);
    size_t ids[] = {0, 1, 2};
    synor_access modes[] = {R, R, W};
    synor__mpi_xfer x[3];
    unsigned nx = 9, hits = 9;
    ASSERT_EQ(synor__mpi_track_task(t, ids, modes, 3, -1, x, &nx, &hits), 1);
    ASSERT_EQ(nx, 0);
    ASSERT_EQ(hits, 0);
    ASSERT_EQ(synor__mpi_track_version(t, 2), 1);
    ASSERT_EQ(synor__mpi_track_version(t, 0), 0);
    synor__mpi_track_destroy(t);
}

TEST(a_remote_read_is_one_transfer_then_a_cached_copy_until_the_next_write)
{
    int owners[] = {0, 1, 1};
    synor__mpi_track *t = make(2, 3, owners);
    ASSERT(t);
    size_t ids[] = {0, 1};
    synor_access modes[] = {R, W};
    synor__mpi_xfer x[3];
    unsigned nx, hits;
    /* datum 0 (rank 0) read by a task writing datum 1 (rank 1) */
    ASSERT_EQ(synor__mpi_track_task(t, ids, modes, 2, -1, x, &nx, &hits), 1);
    ASSERT_EQ(nx, 1);
    ASSERT_EQ(x[0].datum, 0);
    ASSERT_EQ(x[0].from, 0);
    ASSERT_EQ(x[0].to, 1);
    ASSERT_EQ(x[0].version, 0);
    ASSERT_EQ(x[0].tag, synor__mpi_track_tag(0, 0));
    ASSERT_EQ(synor__mpi_track_valid(t, 0, 1), 1);
    ASSERT_EQ(synor__mpi_track_owner(t, 0), 0); /* a read moves no ownership */
    /* read again on rank 1: the cached copy serves it */
    size_t ids2[] = {0, 2};
    ASSERT_EQ(synor__mpi_track_task(t, ids2, modes, 2, -1, x, &nx, &hits), 1);
    ASSERT_EQ(nx, 0);
    ASSERT_EQ(hits, 1);
    /* the same datum twice among a task's inputs: one cached read */
    size_t twice[] = {0, 0, 2};
    synor_access rrw[] = {R, R, W};
    ASSERT_EQ(synor__mpi_track_task(t, twice, rrw, 3, -1, x, &nx, &hits), 1);
    ASSERT_EQ(nx, 0);
    ASSERT_EQ(hits, 1);
    /* rank 0 writes datum 0: rank 1's copy is stale, the next read moves v1 */
    size_t ids3[] = {0};
    synor_access w[] = {RW};
    ASSERT_EQ(synor__mpi_track_task(t, ids3, w, 1, -1, x, &nx, &hits), 0);
    ASSERT_EQ(nx, 0);
    ASSERT_EQ(synor__mpi_track_valid(t, 0, 1), 0);
    ASSERT_EQ(synor__mpi_track_task(t, ids, modes, 2, -1, x, &nx, &hits), 1);
    ASSERT_EQ(nx, 1);
    ASSERT_EQ(x[0].version, 1);
    ASSERT_EQ(x[0].tag, synor__mpi_track_tag(0, 1));
    ASSERT(synor__mpi_track_tag(0, 1) != synor__mpi_track_tag(0, 0));
    ASSERT(synor__mpi_track_tag(1, 0) != synor__mpi_track_tag(0, 1));
    synor__mpi_track_destroy(t);
}

TEST(a_write_elsewhere_migrates_ownership_and_write_only_moves_nothing)
{
    int owners[] = {0, 0};
    synor__mpi_track *t = make(3, 2, owners);
    ASSERT(t);
    size_t ids[] = {0, 1};
    synor_access modes[] = {R, W};
    synor__mpi_xfer x[2];
    unsigned nx, hits;
    /* placed on rank 2 by the planner: datum 0 moves there, datum 1 (write
     * only) does not; rank 2 then owns datum 1 */
    ASSERT_EQ(synor__mpi_track_task(t, ids, modes, 2, 2, x, &nx, &hits), 2);
    ASSERT_EQ(nx, 1);
    ASSERT_EQ(x[0].datum, 0);
    ASSERT_EQ(x[0].to, 2);
    ASSERT_EQ(synor__mpi_track_owner(t, 1), 2);
    ASSERT_EQ(synor__mpi_track_valid(t, 1, 0), 0);
    ASSERT_EQ(synor__mpi_track_valid(t, 1, 2), 1);
    /* read-write on rank 1: read from the new owner, then rank 1 owns it */
    size_t one[] = {1};
    synor_access rw[] = {RW};
    ASSERT_EQ(synor__mpi_track_task(t, one, rw, 1, 1, x, &nx, &hits), 1);
    ASSERT_EQ(nx, 1);
    ASSERT_EQ(x[0].from, 2);
    ASSERT_EQ(x[0].to, 1);
    ASSERT_EQ(x[0].version, 1);
    ASSERT_EQ(synor__mpi_track_owner(t, 1), 1);
    ASSERT_EQ(synor__mpi_track_version(t, 1), 2);
    ASSERT_EQ(synor__mpi_track_valid(t, 1, 2), 0);
    /* a read-only task with no rank runs on its first datum's owner */
    synor_access r[] = {R};
    ASSERT_EQ(synor__mpi_track_task(t, one, r, 1, -1, x, &nx, &hits), 1);
    ASSERT_EQ(nx, 0);
    synor__mpi_track_destroy(t);
}

TEST(bad_tasks_are_refused_and_change_nothing)
{
    int owners[] = {0, 1};
    synor__mpi_track *t = make(2, 2, owners);
    ASSERT(t);
    synor__mpi_xfer x[2];
    unsigned nx, hits;
    size_t ids[] = {0, 1}, bad[] = {0, 7};
    synor_access modes[] = {R, W}, badm[] = {R, (synor_access)0};
    ASSERT_EQ(synor__mpi_track_task(t, ids, modes, 2, 2, x, &nx, &hits), SYNOR_EINVAL);
    ASSERT_EQ(synor__mpi_track_task(t, bad, modes, 2, -1, x, &nx, &hits), SYNOR_EINVAL);
    ASSERT_EQ(synor__mpi_track_task(t, ids, badm, 2, -1, x, &nx, &hits), SYNOR_EINVAL);
    ASSERT_EQ(synor__mpi_track_task(t, ids, modes, 0, -1, x, &nx, &hits), SYNOR_EINVAL);
    for (size_t i = 0; i < 2; i++) {
        ASSERT_EQ(synor__mpi_track_owner(t, i), owners[i]);
        ASSERT_EQ(synor__mpi_track_version(t, i), 0);
        ASSERT_EQ(synor__mpi_track_valid(t, i, 1 - owners[i]), 0);
    }
    synor__mpi_track_destroy(t);
}

TEST(ids_stop_where_mpi_tags_end)
{
    synor__mpi_track *t = NULL;
    /* MPI's smallest allowed MPI_TAG_UB: 32767 = 32 ids of 10 version bits */
    ASSERT_OK(synor__mpi_track_create(2, 32767, &t));
    size_t id;
    for (int i = 0; i < 32; i++)
        ASSERT_OK(synor__mpi_track_add(t, 0, &id));
    ASSERT_EQ(synor__mpi_track_tag(id, 1023), 32767);
    ASSERT_EQ(synor__mpi_track_add(t, 0, &id), SYNOR_ERANGE);
    ASSERT_EQ(synor__mpi_track_count(t), 32);
    synor__mpi_track_destroy(t);
    ASSERT_EQ(synor__mpi_track_create(0, 32767, &t), SYNOR_EINVAL);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A random program on 5 simulated ranks: each rank's copy of each datum
 * holds the version it last got. Transfers are applied as messages; every
 * read must then find the current version on the executing rank, every
 * sender must hold the version it sends, and no two messages in flight on
 * one (from, to) pair share a tag. */
TEST(random_programs_keep_every_read_current)
{
    enum { RANKS = 5, DATA = 12, TASKS = 4000 };
    int owners[DATA];
    for (int i = 0; i < DATA; i++)
        owners[i] = i % RANKS;
    synor__mpi_track *t = make(RANKS, DATA, owners);
    ASSERT(t);
    long copy[RANKS][DATA]; /* version held, -1: none */
    long cur[DATA];
    for (int r = 0; r < RANKS; r++)
        for (int i = 0; i < DATA; i++)
            copy[r][i] = r == owners[i] ? 0 : -1;
    for (int i = 0; i < DATA; i++)
        cur[i] = 0;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    unsigned moved = 0, cached = 0;
    for (int k = 0; k < TASKS; k++) {
        unsigned n = 1 + (unsigned)(rnd(&s) % 4);
        size_t ids[4];
        synor_access modes[4];
        for (unsigned i = 0; i < n; i++) {
            ids[i] = rnd(&s) % DATA;
            modes[i] = (synor_access)(1 + rnd(&s) % 3);
        }
        int rank = rnd(&s) % 3 == 0 ? (int)(rnd(&s) % RANKS) : -1;
        synor__mpi_xfer x[4];
        unsigned nx, hits;
        int exec = synor__mpi_track_task(t, ids, modes, n, rank, x, &nx, &hits);
        ASSERT(exec >= 0 && exec < RANKS);
        if (rank >= 0)
            ASSERT_EQ(exec, rank);
        for (unsigned i = 0; i < nx; i++) {
            ASSERT(x[i].from != x[i].to);
            ASSERT_EQ(copy[x[i].from][x[i].datum], cur[x[i].datum]);
            ASSERT_EQ(x[i].version, cur[x[i].datum]);
            ASSERT_EQ(x[i].tag, synor__mpi_track_tag(x[i].datum, x[i].version));
            for (unsigned j = 0; j < i; j++)
                ASSERT(x[j].tag != x[i].tag || x[j].to != x[i].to);
            copy[x[i].to][x[i].datum] = cur[x[i].datum];
            moved++;
        }
        cached += hits;
        for (unsigned i = 0; i < n; i++)
            if (modes[i] & SYNOR_ACCESS_R)
                ASSERT_EQ(copy[exec][ids[i]], cur[ids[i]]);
        for (unsigned i = 0; i < n; i++)
            if (modes[i] & SYNOR_ACCESS_W) {
                int again = 0;
                for (unsigned j = 0; j < i; j++)
                    again |= ids[j] == ids[i] && (modes[j] & SYNOR_ACCESS_W);
                if (!again)
                    copy[exec][ids[i]] = ++cur[ids[i]];
            }
        for (int i = 0; i < DATA; i++) {
            ASSERT_EQ(synor__mpi_track_version(t, (size_t)i), cur[i]);
            int o = synor__mpi_track_owner(t, (size_t)i);
            ASSERT_EQ(copy[o][i], cur[i]);
            for (int r = 0; r < RANKS; r++)
                ASSERT_EQ(synor__mpi_track_valid(t, (size_t)i, r), copy[r][i] == cur[i]);
        }
    }
    /* the program exercised both paths */
    ASSERT(moved > 100);
    ASSERT(cached > 10);
    synor__mpi_track_destroy(t);
}

TEST_MAIN(new_data_are_held_by_their_owner_only,
          a_task_runs_on_the_owner_of_what_it_writes_and_local_reads_move_nothing,
          a_remote_read_is_one_transfer_then_a_cached_copy_until_the_next_write,
          a_write_elsewhere_migrates_ownership_and_write_only_moves_nothing,
          bad_tasks_are_refused_and_change_nothing, ids_stop_where_mpi_tags_end,
          random_programs_keep_every_read_current)
