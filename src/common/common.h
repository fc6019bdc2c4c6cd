/* common.h - internal helpers shared by every module: allocation with a
 * fault-injection hook, the per-thread error message, small string tools.
 * Never installed. */
#ifndef SYNOR_COMMON_H
#define SYNOR_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "synor/error.h"

#if defined(__GNUC__)
#define SYNOR__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SYNOR__PRINTF(a, b)
#endif

/* Defensive checks for "cannot happen" conditions (SQLite's ALWAYS/NEVER):
 * they are plain conditions in release builds, so the code stays safe, and
 * document that tests are not expected to reach the other branch. */
#define SYNOR_ALWAYS(x) (x)
#define SYNOR_NEVER(x) (x)

#define SYNOR__ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* All library allocation goes through these. They return NULL on failure
 * and, when a fault hook is armed, fail the Nth call (tests use this to prove
 * that failing allocations leave state unchanged). */
void *synor__malloc(size_t n);
void *synor__calloc(size_t count, size_t size);
void *synor__realloc(void *p, size_t n);
void synor__free(void *p);
/* synor__malloc on a 64-byte boundary (a cache line; an AVX-512 vector):
 * for buffers that vector kernels stream, where a load split over two
 * lines costs two. Freed with synor__free. */
#define SYNOR_CACHE_LINE 64
void *synor__malloc_aligned(size_t n);
/* Asks the kernel to back n bytes at p with memory now, in one call, for a
 * block the caller is about to write whole: on a virtual machine one page
 * fault can cost microseconds, and a 100,000-task plan touches 10^5 pages.
 * Blocks under 256 KiB, and systems without MADV_POPULATE_WRITE, are left
 * alone; a failure is ignored (the pages then come as faults, as before). */
void synor__prefault(void *p, size_t n);
/* Asks for transparent huge pages (2 MiB) under the whole 2 MiB pages of
 * n bytes at p, where the system leaves them to madvise: for large blocks
 * that are streamed (a KV cache, packed weights), one TLB entry and one
 * fault per 2 MiB instead of 512. A failure is ignored. */
void synor__huge_pages(void *p, size_t n);
/* synor__malloc and synor__calloc for a block the caller writes whole
 * right away (a planner's per-task arrays): faulted in at once. */
void *synor__malloc_whole(size_t n);
void *synor__calloc_whole(size_t count, size_t size);
/* Frees memory the library owns but exposes through a const pointer. */
void synor__free_const(const void *p);
char *synor__strdup(const char *s);
char *synor__strndup(const char *s, size_t n);

/* stats.c: the monotonic clock in seconds; the median of v[0 .. n), which
 * it sorts (NAN for n 0). */
double synor__now_s(void);
double synor__median(double *v, size_t n);

/* Stores a formatted message in this thread's error slot and returns code,
 * so a failure is written `return synor__error(SYNOR_EINVAL, "...", ...);`. */
int synor__error(int code, const char *fmt, ...) SYNOR__PRINTF(2, 3);

/* CRC-32C (Castagnoli) of data[0..n), continuing crc (0 to start): the
 * journal's and snapshots' record checks, training checkpoints. SSE4.2's
 * instruction where the CPU has it, else a table. Thread-safe. */
uint32_t synor__crc32c(uint32_t crc, const void *data, size_t n);

/* Case-insensitive ASCII comparisons. */
int synor__strcaseeq(const char *a, const char *b);
int synor__strcasestr(const char *hay, const char *needle);

/* gpu_errors.c: the name of an OpenCL error code ("CL_OUT_OF_RESOURCES"),
 * and whether it leaves the device unusable (it must stop taking work). */
const char *synor__cl_error_name(int e);
int synor__cl_error_is_fatal(int e);

/* Copies src into dst (size n, n > 0) always NUL-terminating. */
void synor__strlcpy(char *dst, const char *src, size_t n);

/* Growable byte buffer used to build output text. An allocation failure is
 * remembered (failed = 1) and later appends become no-ops, so callers check
 * once at the end. */
typedef struct synor__buf {
    char *data;
    size_t len;
    size_t cap;
    int failed;
} synor__buf;

void synor__buf_init(synor__buf *b);
void synor__buf_free(synor__buf *b);
void synor__buf_append(synor__buf *b, const char *s, size_t n);
void synor__buf_puts(synor__buf *b, const char *s);
void synor__buf_printf(synor__buf *b, const char *fmt, ...) SYNOR__PRINTF(2, 3);
/* Takes the contents as a NUL-terminated string owned by the caller; the
 * buffer is reset. Returns NULL if an append failed. */
char *synor__buf_take(synor__buf *b);

/* Formats a byte count with the unit it was most likely written in: an exact
 * multiple of a binary (GiB) or decimal (GB) unit prints as "80 GiB" or
 * "230 MB". Otherwise exact = 1 prints "N B" (lossless, for files) and
 * exact = 0 a rounded binary figure ("79.6 GiB", for people). */
void synor__format_size(uint64_t bytes, int exact, char *buf, size_t n);

/* Parses a size with a unit ("80 GiB", "230 MB", "512 B"): B, KB, MB, GB,
 * TB are powers of 1000; KiB, MiB, GiB, TiB powers of 1024. */
int synor__parse_size(const char *s, uint64_t *out);

/* Reads a whole file. Returns 0 or a negative code with the message set
 * (naming the path and the system error). */
int synor__read_file(const char *path, char **data, size_t *len);

/* Replaces path with data atomically: a temporary file beside it, fsync,
 * rename, fsync of the directory (created, mode 0700, if missing). A crash
 * leaves the old file or the new one. */
int synor__write_file_atomic(const char *path, const char *data, size_t len);

/* The path of leaf in the user's XDG data or cache directory for synor:
 * $XDG_DATA_HOME/synor/leaf (else ~/.local/share/synor/leaf), or
 * $XDG_CACHE_HOME/synor/leaf (else ~/.cache/synor/leaf). */
typedef enum synor__xdg_dir { SYNOR__XDG_DATA, SYNOR__XDG_CACHE } synor__xdg_dir;
int synor__xdg_path(synor__xdg_dir which, const char *leaf, char *buf, size_t size);

/* Looks symbol `name` up in a library opened with dlopen (lib may be NULL)
 * and stores it in the function pointer at slot; 0 or -1 (not found). */
int synor__dlsym_into(void *lib, const char *name, void *slot);

/* Test hook: make the nth allocation from now fail (1 = the next one);
 * 0 disarms. Declared in the internal header only. */
void synor__alloc_fail_after(long n);
/* The countdown left: armed with n, n - remaining allocations were made
 * since (fuzz/ counts a call's allocations this way, then fails one). */
long synor__alloc_fail_remaining(void);

#endif
