/* model_internal.h - what the model files share: a read-only mapping of a
 * whole file, a file written in pieces and then renamed into place
 * atomically, little-endian loads from a mapping that may be unaligned,
 * and overflow-checked size arithmetic. Never installed. */
#ifndef SYNOR_MODEL_INTERNAL_H
#define SYNOR_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/common.h"

/* A whole file mapped read-only (MAP_PRIVATE). An empty file has data NULL
 * and size 0 (mmap refuses a length of 0). */
typedef struct synor__mapping {
    const uint8_t *data;
    size_t size;
} synor__mapping;

/* SYNOR_EIO naming path and the system's reason. */
int synor__map_file(const char *path, synor__mapping *m);
void synor__unmap_file(synor__mapping *m);
/* synor_gguf_populate's work on a mapping; path names the file in errors. */
int synor__map_populate(const synor__mapping *m, const char *path);
/* Drops this process's pages of [p, p + n) (the whole pages inside it)
 * from the mapping m: touched again, they are read back from the file.
 * SYNOR_EINVAL when the range is not inside m. */
int synor__map_drop(const synor__mapping *m, const char *path, const void *p, size_t n);

/* A file written sequentially into a temporary beside path, then fsynced
 * and renamed over path by commit (and the directory fsynced): a crash or
 * a failed write leaves the old file or none. abort removes the temporary;
 * it is a no-op after commit, so `abort` may always run on the way out. */
typedef struct synor__afile {
    char *path;
    char *tmp;
    int fd;
    int failed; /* a write failed: commit reports it */
    int err;    /* its errno */
    uint64_t written;
    unsigned char *buf; /* SYNOR__AFILE_BUF bytes */
    size_t len;
} synor__afile;

#define SYNOR__AFILE_BUF ((size_t)1 << 16)

int synor__afile_open(synor__afile *f, const char *path);
void synor__afile_write(synor__afile *f, const void *p, size_t n);
void synor__afile_zeros(synor__afile *f, size_t n);
int synor__afile_commit(synor__afile *f);
void synor__afile_abort(synor__afile *f);

/* Little-endian loads and stores through memcpy: the mapping holds fields
 * at any byte offset. (Every supported host is little-endian.) */
static inline uint32_t synor__ld_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t synor__ld_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static inline int32_t synor__ld_i32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* a * b and a + b into *out; 0, or -1 if the result does not fit. */
static inline int synor__mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}
static inline int synor__add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_add_overflow(a, b, out) ? -1 : 0;
}

/* Copies at most n - 1 bytes of s (len bytes, not NUL-terminated) into buf
 * for an error message: bytes outside printable ASCII become '?', a longer
 * name ends in "...". */
void synor__printable(const char *s, size_t len, char *buf, size_t n);

#endif
