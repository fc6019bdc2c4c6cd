/* track.c - ownership, versions and valid copies of data across ranks
 * (track.h). Each datum keeps a bit set of the ranks holding its current
 * version; the owner is always among them. */
#include <string.h>

#include "common/common.h"
#include "mpi/track.h"

typedef struct datum {
    int owner;
    uint32_t version;
} datum;

struct synor__mpi_track {
    int size, tag_ub;
    size_t words;   /* uint64_t words of each valid set */
    size_t n, cap;
    datum *d;
    uint64_t *valid; /* n x words */
};

int synor__mpi_track_create(int size, int tag_ub, synor__mpi_track **out)
{
    *out = NULL;
    if (size < 1 || tag_ub < (1 << SYNOR__MPI_VERSION_BITS) - 1)
        return synor__error(SYNOR_EINVAL, "mpi: %d ranks, tag bound %d", size, tag_ub);
    synor__mpi_track *t = synor__calloc(1, sizeof *t);
    if (!t)
        return synor__error(SYNOR_ENOMEM, "mpi: out of memory");
    t->size = size;
    t->tag_ub = tag_ub;
    t->words = ((size_t)size + 63) / 64;
    *out = t;
    return 0;
}

void synor__mpi_track_destroy(synor__mpi_track *t)
{
    if (!t)
        return;
    synor__free(t->d);
    synor__free(t->valid);
    synor__free(t);
}

static uint64_t *vset(const synor__mpi_track *t, size_t id) { return t->valid + id * t->words; }

static void vset_only(const synor__mpi_track *t, size_t id, int rank)
{
    memset(vset(t, id), 0, t->words * sizeof(uint64_t));
    vset(t, id)[rank / 64] |= 1ull << (rank % 64);
}

int synor__mpi_track_add(synor__mpi_track *t, int owner, size_t *id)
{
    if (owner < 0 || owner >= t->size)
        return synor__error(SYNOR_EINVAL, "mpi: owner rank %d of a datum is not in 0..%d", owner,
                            t->size - 1);
    if (((uint64_t)t->n << SYNOR__MPI_VERSION_BITS) > (uint64_t)t->tag_ub)
        return synor__error(SYNOR_ERANGE,
                            "mpi: datum %zu: more data than MPI tags allow (tag bound %d, "
                            "%d version bits)",
                            t->n, t->tag_ub, SYNOR__MPI_VERSION_BITS);
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        datum *d = synor__realloc(t->d, cap * sizeof *d);
        if (!d)
            return synor__error(SYNOR_ENOMEM, "mpi: out of memory");
        t->d = d;
        uint64_t *v = synor__realloc(t->valid, cap * t->words * sizeof *v);
        if (!v)
            return synor__error(SYNOR_ENOMEM, "mpi: out of memory");
        t->valid = v;
        t->cap = cap;
    }
    t->d[t->n] = (datum){.owner = owner, .version = 0};
    vset_only(t, t->n, owner);
    *id = t->n++;
    return 0;
}

size_t synor__mpi_track_count(const synor__mpi_track *t) { return t->n; }
int synor__mpi_track_owner(const synor__mpi_track *t, size_t id) { return t->d[id].owner; }
uint32_t synor__mpi_track_version(const synor__mpi_track *t, size_t id) { return t->d[id].version; }

int synor__mpi_track_valid(const synor__mpi_track *t, size_t id, int rank)
{
    if (id >= t->n || rank < 0 || rank >= t->size)
        return 0;
    return (int)((vset(t, id)[rank / 64] >> (rank % 64)) & 1);
}

int synor__mpi_track_tag(size_t id, uint32_t version)
{
    uint32_t mask = (1u << SYNOR__MPI_VERSION_BITS) - 1;
    return (int)(((uint64_t)id << SYNOR__MPI_VERSION_BITS) | (version & mask));
}

int synor__mpi_track_task(synor__mpi_track *t, const size_t *ids, const synor_access *modes,
                          unsigned n, int rank, synor__mpi_xfer *xfers, unsigned *nx,
                          unsigned *hits)
{
    *nx = 0;
    *hits = 0;
    if (n == 0 && rank < 0)
        return synor__error(SYNOR_EINVAL, "mpi: a task without data needs a rank");
    if (rank >= t->size)
        return synor__error(SYNOR_EINVAL, "mpi: task rank %d is not in 0..%d", rank,
                            t->size - 1);
    int first_w = -1;
    for (unsigned i = 0; i < n; i++) {
        if (ids[i] >= t->n)
            return synor__error(SYNOR_EINVAL, "mpi: task operand %u: no datum %zu", i, ids[i]);
        if (modes[i] != SYNOR_ACCESS_R && modes[i] != SYNOR_ACCESS_W &&
            modes[i] != SYNOR_ACCESS_RW)
            return synor__error(SYNOR_EINVAL, "mpi: task operand %u: access mode %d", i,
                                (int)modes[i]);
        if (first_w < 0 && (modes[i] & SYNOR_ACCESS_W))
            first_w = (int)i;
    }
    int exec = rank >= 0 ? rank : t->d[ids[first_w >= 0 ? first_w : 0]].owner;
    /* reads first: what the task reads must be there before it runs */
    for (unsigned i = 0; i < n; i++) {
        if (!(modes[i] & SYNOR_ACCESS_R))
            continue;
        size_t id = ids[i];
        int again = 0; /* the same datum read twice: counted once */
        for (unsigned j = 0; j < i; j++)
            again |= ids[j] == id && (modes[j] & SYNOR_ACCESS_R);
        if (again)
            continue;
        if (synor__mpi_track_valid(t, id, exec)) {
            if (t->d[id].owner != exec)
                (*hits)++;
            continue;
        }
        xfers[(*nx)++] = (synor__mpi_xfer){.datum = id, .from = t->d[id].owner, .to = exec,
                                           .version = t->d[id].version,
                                           .tag = synor__mpi_track_tag(id, t->d[id].version)};
        vset(t, id)[exec / 64] |= 1ull << (exec % 64);
    }
    for (unsigned i = 0; i < n; i++) {
        if (!(modes[i] & SYNOR_ACCESS_W))
            continue;
        size_t id = ids[i];
        /* the same datum twice among the operands: one new version */
        int seen = 0;
        for (unsigned j = 0; j < i; j++)
            seen |= ids[j] == id && (modes[j] & SYNOR_ACCESS_W);
        if (seen)
            continue;
        t->d[id].version++;
        t->d[id].owner = exec;
        vset_only(t, id, exec);
    }
    return exec;
}
