/* error.c - error names, descriptions, and the per-thread error message.
 * The message lives in thread-local storage so that the device registry and
 * other thread-safe objects can report detail without a shared slot. */
#include <stdarg.h>
#include <stdio.h>

#include "common.h"

#ifndef SYNOR_VERSION_STRING
#define SYNOR_VERSION_STRING "0.0.0"
#endif

static _Thread_local char errmsg_slot[1024];

const char *synor_err_name(int code)
{
    switch (code) {
    case 0:
        return "SYNOR_OK";
#define SYNOR__ERR_NAME(name, val, desc) \
    case (val):                          \
        return "SYNOR_" #name;
        SYNOR_ERRNO_MAP(SYNOR__ERR_NAME)
#undef SYNOR__ERR_NAME
    default:
        return "SYNOR_UNKNOWN";
    }
}

const char *synor_strerror(int code)
{
    switch (code) {
    case 0:
        return "success";
#define SYNOR__ERR_DESC(name, val, desc) \
    case (val):                          \
        return desc;
        SYNOR_ERRNO_MAP(SYNOR__ERR_DESC)
#undef SYNOR__ERR_DESC
    default:
        return "unknown error";
    }
}

const char *synor_errmsg(void) { return errmsg_slot; }

const char *synor_version(void) { return SYNOR_VERSION_STRING; }

int synor__error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errmsg_slot, sizeof errmsg_slot, fmt, ap);
    va_end(ap);
    return code;
}
