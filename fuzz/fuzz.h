/* fuzz.h - what every libFuzzer harness in fuzz/ shares: the contract
 * checks (an error is a known negative code with a message that names the
 * input and a position inside it; output round-trips byte for byte) and
 * allocation-failure injection (a call's allocations are counted, then one
 * of them, chosen by the input, fails: the call must fail cleanly with
 * SYNOR_ENOMEM or succeed with the same result).
 *
 * A harness is one file fuzz_NAME.c defining LLVMFuzzerTestOneInput (and,
 * if it needs set-up, LLVMFuzzerInitialize); its seeds live in
 * fuzz/corpus/NAME/ and an optional dictionary in fuzz/dict/NAME.dict.
 * fuzz/CMakeLists.txt and fuzz/run.sh pick all three up by name. A broken
 * contract calls fuzz_fail, which aborts: libFuzzer saves the input. */
#ifndef SYNOR_FUZZ_H
#define SYNOR_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* The name every harness gives its input; messages must start with it. */
#define FUZZ_NAME "fuzz-input.json"

/* A pointer no call returns: an output argument set to it before a call
 * must still hold it after a failure. */
extern char fuzz_untouched_byte;
#define FUZZ_UNTOUCHED(type) ((type *)(void *)&fuzz_untouched_byte)

_Noreturn void fuzz_fail(const char *fmt, ...) SYNOR__PRINTF(1, 2);
#define FUZZ_CHECK(cond, ...)      \
    do {                           \
        if (!(cond))               \
            fuzz_fail(__VA_ARGS__); \
    } while (0)

/* rc is a negative SYNOR_E* code with a non-empty message. Unless the
 * failure was injected (then SYNOR_ENOMEM is expected and the message may be
 * a plain "out of memory"), the message starts with "name:" and, when a
 * "LINE:COL:" follows, the position lies inside data. */
void fuzz_check_error(int rc, int injected, const char *name, const uint8_t *data, size_t size);

/* a and b (either may be NULL: a failure) are the same text. */
void fuzz_check_same(const char *a, const char *b, const char *what);

/* Counting: every library allocation between start and stop is counted. */
void fuzz_alloc_count_start(void);
long fuzz_alloc_count_stop(void);
/* Arms a failure of the k-th allocation from now, k in 1..n chosen from a
 * hash of the input (0, nothing armed, when n is 0). Returns k. */
long fuzz_alloc_fail_one(const uint8_t *data, size_t size, long n);
/* Disarms; returns 1 if the armed failure happened. */
int fuzz_alloc_disarm(void);

struct synor_trace;
/* A trace (loaded or simulated) written as JSON reads back and writes the
 * same bytes; every report of it (text, with narrow, default and wide
 * timelines, Chrome events that must be valid JSON, SVG, usage per device)
 * is made without error. Returns the trace's JSON (free() it). */
char *fuzz_check_trace(const struct synor_trace *t);

/* A growable text for dumps of a loaded object (fabric, registry), compared
 * between loads. fuzz_dump_take returns the text (free() it). */
typedef synor__buf fuzz_dump;
void fuzz_dump_init(fuzz_dump *d);
void fuzz_dump_printf(fuzz_dump *d, const char *fmt, ...) SYNOR__PRINTF(2, 3);
char *fuzz_dump_take(fuzz_dump *d);

#endif
