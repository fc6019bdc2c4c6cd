/* fuzz_common.c - the checks and the allocation-failure injection every
 * harness uses (see fuzz.h). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "json/json.h"
#include "synor/report.h"
#include "synor/sim.h"

char fuzz_untouched_byte;

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("\ncontract violated: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nlast library message: %s\n", synor_errmsg());
    abort();
}

/* Reads a decimal number at *p; -1 if none. */
static long read_num(const char **p)
{
    const char *s = *p;
    long v = 0;
    if (*s < '0' || *s > '9')
        return -1;
    while (*s >= '0' && *s <= '9' && v < LONG_MAX / 10)
        v = v * 10 + (*s++ - '0');
    *p = s;
    return v;
}

/* Checks that LINE:COL is a position inside data: line 1 + the newlines,
 * column 1 + the bytes of that line (one past its end included). A UTF-8
 * byte order mark at the start does not count as columns. */
static void check_position(const char *msg, long line, long col, const uint8_t *data,
                           size_t size)
{
    size_t i = 0;
    if (size >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    long l = 1;
    size_t line_start = i;
    for (; i < size && l < line; i++)
        if (data[i] == '\n') {
            l++;
            line_start = i + 1;
        }
    FUZZ_CHECK(l == line, "message names line %ld, the input has %ld lines: %s", line, l, msg);
    size_t end = line_start;
    while (end < size && data[end] != '\n')
        end++;
    FUZZ_CHECK(col >= 1 && (size_t)col <= end - line_start + 1,
               "message names column %ld, line %ld has %zu bytes: %s", col, line,
               end - line_start, msg);
}

void fuzz_check_error(int rc, int injected, const char *name, const uint8_t *data, size_t size)
{
    const char *msg = synor_errmsg();
    FUZZ_CHECK(rc < 0, "failure with a non-negative code %d", rc);
    FUZZ_CHECK(strcmp(synor_err_name(rc), "SYNOR_UNKNOWN") != 0, "unknown error code %d", rc);
    FUZZ_CHECK(msg[0] != '\0', "failure %s with an empty message", synor_err_name(rc));
    if (injected) {
        FUZZ_CHECK(rc == SYNOR_ENOMEM, "an injected allocation failure gave %s, not SYNOR_ENOMEM",
                   synor_err_name(rc));
        return;
    }
    size_t n = strlen(name);
    FUZZ_CHECK(strncmp(msg, name, n) == 0 && msg[n] == ':',
               "%s: the message does not start with \"%s:\": %s", synor_err_name(rc), name, msg);
    const char *p = msg + n + 1;
    long line = read_num(&p);
    if (line < 0 || *p != ':')
        return; /* no position: the message names a field or an id */
    p++;
    long col = read_num(&p);
    if (col < 0 || *p != ':')
        return;
    check_position(msg, line, col, data, size);
}

void fuzz_check_same(const char *a, const char *b, const char *what)
{
    FUZZ_CHECK(a && b, "%s: %s", what, !a && !b ? "both failed" : a ? "the second failed" : "the first failed");
    if (strcmp(a, b) == 0)
        return;
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    size_t from = i > 60 ? i - 60 : 0;
    fuzz_fail("%s differ at byte %zu:\n--- first ...%.120s\n--- second ...%.120s", what, i,
              a + from, b + from);
}

void fuzz_alloc_count_start(void) { synor__alloc_fail_after(LONG_MAX); }

long fuzz_alloc_count_stop(void)
{
    long n = LONG_MAX - synor__alloc_fail_remaining();
    synor__alloc_fail_after(0);
    return n;
}

long fuzz_alloc_fail_one(const uint8_t *data, size_t size, long n)
{
    if (n <= 0)
        return 0;
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ull;
    long k = 1 + (long)(h % (uint64_t)n);
    synor__alloc_fail_after(k);
    return k;
}

int fuzz_alloc_disarm(void)
{
    /* the countdown stops at 0 once the armed allocation has failed */
    int hit = synor__alloc_fail_remaining() == 0;
    synor__alloc_fail_after(0);
    return hit;
}

void fuzz_dump_init(fuzz_dump *d) { synor__buf_init(d); }

void fuzz_dump_printf(fuzz_dump *d, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    synor__buf_puts(d, tmp);
}

char *fuzz_dump_take(fuzz_dump *d)
{
    char *s = synor__buf_take(d);
    FUZZ_CHECK(s, "a dump ran out of memory");
    return s;
}

char *fuzz_check_trace(const synor_trace *t)
{
    char *j1 = synor_trace_to_json(t);
    FUZZ_CHECK(j1, "synor_trace_to_json failed: %s", synor_errmsg());
    synor_trace *u;
    int rc = synor_trace_load_string(j1, strlen(j1), "written.json", &u);
    FUZZ_CHECK(rc == 0, "a trace's own JSON does not load: %s\n%.400s", synor_errmsg(), j1);
    char *j2 = synor_trace_to_json(u);
    fuzz_check_same(j1, j2, "a trace written, read and written again");
    free(j2);
    synor_trace_destroy(u);

    /* the narrowest width `synor report --width` allows (where the axis
     * labels are wider than the timeline), the default (0: 60) and the
     * widest */
    static const int widths[] = {10, 0, 400};
    synor_report_options o = {0};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(widths); i++) {
        o.width = widths[i];
        o.baseline = t;
        char *r = synor_report_text(t, &o);
        FUZZ_CHECK(r, "synor_report_text failed: %s", synor_errmsg());
        free(r);
    }
    char *c = synor_report_chrome(t);
    FUZZ_CHECK(c, "synor_report_chrome failed: %s", synor_errmsg());
    synor__jdoc *d;
    FUZZ_CHECK(synor__json_parse(c, strlen(c), "chrome.json", &d) == 0,
               "the Chrome export is not JSON: %s", synor_errmsg());
    synor__jdoc_free(d);
    free(c);
    char *g = synor_report_svg(t);
    FUZZ_CHECK(g, "synor_report_svg failed: %s", synor_errmsg());
    free(g);
    for (size_t i = 0; i < t->n_devices; i++) {
        synor_device_usage u8;
        FUZZ_CHECK(synor_report_usage(t, i, &u8) == 0, "synor_report_usage failed: %s",
                   synor_errmsg());
        FUZZ_CHECK(u8.busy >= 0 && u8.utilization >= 0, "device %zu: busy %g, utilization %g",
                   i, u8.busy, u8.utilization);
    }
    return j1;
}
