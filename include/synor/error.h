/* synor/error.h - error codes and error messages.
 *
 * Convention (stated once, holds for every libsynor call):
 *   - a fallible call returns 0 on success or a negative SYNOR_E* code;
 *   - a call that returns a pointer returns NULL on failure;
 *   - on failure the call stores a human-readable message, naming the file,
 *     line:column, field and value where there is one, in a per-thread slot
 *     read with synor_errmsg(). A successful call leaves the slot alone.
 *   - a failed call leaves the objects it was given unchanged, and never
 *     fires a callback it was given.
 */
#ifndef SYNOR_ERROR_H
#define SYNOR_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* X-macro list: name, value, description. The enum, synor_err_name() and
 * synor_strerror() are all generated from it. */
#define SYNOR_ERRNO_MAP(X)                                                   \
    X(EINVAL, -1, "invalid argument")                                        \
    X(ENOMEM, -2, "out of memory")                                           \
    X(EIO, -3, "input/output error")                                         \
    X(EPARSE, -4, "malformed input")                                         \
    X(ESCHEMA, -5, "input does not match the expected schema")              \
    X(EEXIST, -6, "already exists")                                          \
    X(ENOENT, -7, "not found")                                               \
    X(ENOTSUP, -8, "operation not supported")                                \
    X(EBUSY, -9, "resource busy")                                            \
    X(ERANGE, -10, "value out of range")                                     \
    X(ENODEV, -11, "no such device")                                         \
    X(ESTATE, -12, "invalid state for this call")

typedef enum synor_errno {
    SYNOR_OK = 0,
#define SYNOR__ERR_ENUM(name, val, desc) SYNOR_##name = (val),
    SYNOR_ERRNO_MAP(SYNOR__ERR_ENUM)
#undef SYNOR__ERR_ENUM
} synor_errno;

/* The symbolic name of an error code ("SYNOR_EINVAL"); "SYNOR_OK" for 0 and
 * "SYNOR_UNKNOWN" for a value not in the list. Never NULL. */
const char *synor_err_name(int code);

/* A short description of an error code. Never NULL. */
const char *synor_strerror(int code);

/* The detailed message of the last failed libsynor call on this thread, or
 * "" if none failed yet. The string stays valid until the next failing call
 * on this thread. */
const char *synor_errmsg(void);

/* The library version as "MAJOR.MINOR.PATCH". */
const char *synor_version(void);

#ifdef __cplusplus
}
#endif
#endif
