/* util.c - allocation (with the fault-injection hook), strings, buffers and
 * whole-file reads used across the library. */
#include <ctype.h>
#include <math.h>
#include <errno.h>
#include <stdarg.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

/* Countdown to an injected allocation failure; <= 0 means disarmed. */
static atomic_long alloc_fail_countdown;

void synor__alloc_fail_after(long n) { atomic_store(&alloc_fail_countdown, n); }

long synor__alloc_fail_remaining(void) { return atomic_load(&alloc_fail_countdown); }

static int alloc_should_fail(void)
{
    long c = atomic_load_explicit(&alloc_fail_countdown, memory_order_relaxed);
    if (c <= 0)
        return 0;
    return atomic_fetch_sub(&alloc_fail_countdown, 1) == 1;
}

void *synor__malloc(size_t n)
{
    if (alloc_should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

void *synor__calloc(size_t count, size_t size)
{
    if (alloc_should_fail())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *synor__realloc(void *p, size_t n)
{
    if (alloc_should_fail())
        return NULL;
    return realloc(p, n ? n : 1);
}

void *synor__malloc_aligned(size_t n)
{
    if (alloc_should_fail())
        return NULL;
    /* aligned_alloc wants a multiple of the alignment */
    size_t r = n ? (n + SYNOR_CACHE_LINE - 1) / SYNOR_CACHE_LINE * SYNOR_CACHE_LINE : SYNOR_CACHE_LINE;
    return r < n ? NULL : aligned_alloc(SYNOR_CACHE_LINE, r);
}

void synor__free(void *p) { free(p); }

void *synor__malloc_whole(size_t n)
{
    void *p = synor__malloc(n);
    synor__prefault(p, n);
    return p;
}

void *synor__calloc_whole(size_t count, size_t size)
{
    void *p = synor__calloc(count, size);
    synor__prefault(p, count * size);
    return p;
}

void synor__prefault(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
    if (!p || n < ((size_t)256 << 10))
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), e = ((uintptr_t)p + n) & ~(page - 1);
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)n;
#endif
}

void synor__huge_pages(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + n) & ~(huge - 1);
    if (p && e > a)
        (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

void synor__free_const(const void *p)
{
    void *q;
    memcpy(&q, &p, sizeof q);
    free(q);
}

char *synor__strndup(const char *s, size_t n)
{
    char *r = synor__malloc(n + 1);
    if (!r)
        return NULL;
    memcpy(r, s, n);
    r[n] = '\0';
    return r;
}

char *synor__strdup(const char *s) { return synor__strndup(s, strlen(s)); }

int synor__strcaseeq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

int synor__strcasestr(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return 1;
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

void synor__strlcpy(char *dst, const char *src, size_t n)
{
    size_t l = strlen(src);
    if (l >= n)
        l = n - 1;
    memcpy(dst, src, l);
    dst[l] = '\0';
}

void synor__buf_init(synor__buf *b) { memset(b, 0, sizeof *b); }

void synor__buf_free(synor__buf *b)
{
    synor__free(b->data);
    synor__buf_init(b);
}

static int buf_reserve(synor__buf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *d = synor__realloc(b->data, cap);
    if (!d) {
        b->failed = 1;
        return -1;
    }
    synor__prefault(d + b->cap, cap - b->cap); /* what is appended next */
    b->data = d;
    b->cap = cap;
    return 0;
}

void synor__buf_append(synor__buf *b, const char *s, size_t n)
{
    if (buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void synor__buf_puts(synor__buf *b, const char *s) { synor__buf_append(b, s, strlen(s)); }

void synor__buf_printf(synor__buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *synor__buf_take(synor__buf *b)
{
    if (b->failed) {
        synor__buf_free(b);
        return NULL;
    }
    if (!b->data)
        return synor__strdup("");
    char *d = b->data;
    synor__buf_init(b);
    return d;
}

/* A regular file read straight into a block of its size: no copies through
 * stdio and a growing buffer (a 50 MB workload took 0.2 s that way). 1 when
 * the file is no regular file or grew while read: read it as a stream. */
static int read_regular(FILE *f, const char *path, char **data, size_t *len)
{
    struct stat st;
    int fd = fileno(f);
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (uintmax_t)st.st_size >= SIZE_MAX)
        return 1;
    size_t n = (size_t)st.st_size, got = 0;
    char *d = synor__malloc(n + 1);
    if (!d)
        return synor__error(SYNOR_ENOMEM, "%s: out of memory reading file", path);
    synor__prefault(d, n + 1);
    for (;;) {
        ssize_t r = read(fd, d + got, n + 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            synor__free(d);
            return synor__error(SYNOR_EIO, "%s: read error", path);
        }
        if (r == 0)
            break;
        got += (size_t)r;
        if (got > n) { /* grew: start again as a stream */
            synor__free(d);
            if (fseek(f, 0, SEEK_SET))
                return synor__error(SYNOR_EIO, "%s: read error", path);
            return 1;
        }
    }
    d[got] = '\0';
    *data = d;
    *len = got;
    return 0;
}

int synor__read_file(const char *path, char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return synor__error(SYNOR_EIO, "%s: cannot open: %s", path, strerror(errno));
    int rc = read_regular(f, path, data, len);
    if (rc <= 0) {
        fclose(f);
        return rc;
    }
    synor__buf b;
    synor__buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        synor__buf_append(&b, chunk, n);
    int err = ferror(f);
    fclose(f);
    if (err) {
        synor__buf_free(&b);
        return synor__error(SYNOR_EIO, "%s: read error", path);
    }
    size_t l = b.len;
    char *d = synor__buf_take(&b);
    if (!d)
        return synor__error(SYNOR_ENOMEM, "%s: out of memory reading file", path);
    *data = d;
    *len = l;
    return 0;
}

void synor__format_size(uint64_t b, int exact, char *buf, size_t n)
{
    static const struct {
        const char *unit;
        uint64_t mul;
    } units[] = {{"TiB", 1ull << 40}, {"TB", 1000000000000ull}, {"GiB", 1ull << 30},
                 {"GB", 1000000000ull}, {"MiB", 1ull << 20},     {"MB", 1000000ull},
                 {"KiB", 1ull << 10},   {"KB", 1000ull}};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(units); i++) {
        /* for people, "24684092 KiB" is exact but unreadable */
        if (b >= units[i].mul && b % units[i].mul == 0 && (exact || b / units[i].mul < 10000)) {
            snprintf(buf, n, "%llu %s", (unsigned long long)(b / units[i].mul), units[i].unit);
            return;
        }
    }
    if (exact || b < 1024) {
        snprintf(buf, n, "%llu B", (unsigned long long)b);
        return;
    }
    static const char *const bin[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)b / 1024;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, n, v >= 100 ? "%.0f %s" : "%.1f %s", v, bin[u]);
}

int synor__parse_size(const char *s, uint64_t *out)
{
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return synor__error(SYNOR_EINVAL, "size \"%s\" must start with a number", s);
    double x = strtod(s, &end);
    while (isspace((unsigned char)*end))
        end++;
    static const struct {
        const char *unit;
        double mul;
    } units[] = {{"B", 1},      {"KB", 1e3},           {"MB", 1e6},
                 {"GB", 1e9},   {"TB", 1e12},          {"KiB", 1024.0},
                 {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(units); i++) {
        if (strcmp(end, units[i].unit) == 0) {
            double b = x * units[i].mul;
            if (!isfinite(b) || b < 0 || b >= 1.8e19)
                return synor__error(SYNOR_ERANGE, "size \"%s\" is out of range", s);
            *out = (uint64_t)llround(b);
            return 0;
        }
    }
    return synor__error(SYNOR_EINVAL,
                        "size \"%s\" needs a unit: B, KB, MB, GB, TB, KiB, MiB, GiB or TiB", s);
}

int synor__dlsym_into(void *lib, const char *name, void *slot)
{
    void *p = lib ? dlsym(lib, name) : NULL;
    if (!p)
        return -1;
    memcpy(slot, &p, sizeof p); /* a data pointer into a function pointer's bytes */
    return 0;
}
