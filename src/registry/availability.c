/* availability.c - availability schedules of contributed devices: always,
 * UTC hour windows, idle-only, charging-only with a minimum battery level. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "synor/registry.h"

const char *synor_avail_kind_name(synor_avail_kind k)
{
    static const char *const names[] = {"always", "utc", "idle", "charging"};
    return (unsigned)k < SYNOR__ARRAY_LEN(names) ? names[k] : "?";
}

int synor_availability_validate(const synor_availability *a)
{
    if (!a || (unsigned)a->kind >= SYNOR_AVAIL_COUNT)
        return synor__error(SYNOR_EINVAL, "availability: unknown schedule kind");
    if (a->kind == SYNOR_AVAIL_UTC_WINDOWS) {
        if (a->n_windows == 0 || a->n_windows > SYNOR_AVAIL_MAX_WINDOWS)
            return synor__error(SYNOR_EINVAL, "availability: %u UTC windows (need 1 to %d)",
                                a->n_windows, SYNOR_AVAIL_MAX_WINDOWS);
        for (unsigned i = 0; i < a->n_windows; i++) {
            const synor_hour_window *w = &a->windows[i];
            if (w->start_hour > 23 || w->end_hour < 1 || w->end_hour > 24 ||
                w->start_hour == w->end_hour)
                return synor__error(SYNOR_EINVAL,
                                    "availability: UTC window %u is %u-%u (start 0..23, end "
                                    "1..24, start != end)",
                                    i, w->start_hour, w->end_hour);
        }
    }
    if (a->kind == SYNOR_AVAIL_CHARGING_ONLY && a->min_battery_pct > 100)
        return synor__error(SYNOR_EINVAL, "availability: minimum battery %u%% is above 100%%",
                            a->min_battery_pct);
    return 0;
}

int synor_availability_allows(const synor_availability *a, const synor_host_state *s)
{
    switch (a->kind) {
    case SYNOR_AVAIL_ALWAYS:
        return 1;
    case SYNOR_AVAIL_UTC_WINDOWS:
        for (unsigned i = 0; i < a->n_windows && i < SYNOR_AVAIL_MAX_WINDOWS; i++) {
            unsigned st = a->windows[i].start_hour, en = a->windows[i].end_hour;
            unsigned h = s->utc_hour % 24;
            if (st < en ? (h >= st && h < en) : (h >= st || h < en))
                return 1;
        }
        return 0;
    case SYNOR_AVAIL_IDLE_ONLY:
        return s->host_idle != 0;
    case SYNOR_AVAIL_CHARGING_ONLY:
        return s->charging && s->battery_pct >= a->min_battery_pct;
    default:
        return 0;
    }
}

static int parse_uint(const char **p, unsigned max, unsigned *out)
{
    char *end;
    if (**p < '0' || **p > '9')
        return -1;
    unsigned long v = strtoul(*p, &end, 10);
    if (v > max)
        return -1;
    *p = end;
    *out = (unsigned)v;
    return 0;
}

int synor_availability_parse(const char *text, synor_availability *out)
{
    synor_availability a;
    memset(&a, 0, sizeof a);
    if (!text)
        return synor__error(SYNOR_EINVAL, "availability: NULL text");
    if (strcmp(text, "always") == 0) {
        a.kind = SYNOR_AVAIL_ALWAYS;
    } else if (strcmp(text, "idle") == 0) {
        a.kind = SYNOR_AVAIL_IDLE_ONLY;
    } else if (strncmp(text, "charging:", 9) == 0) {
        const char *p = text + 9;
        a.kind = SYNOR_AVAIL_CHARGING_ONLY;
        if (parse_uint(&p, 100, &a.min_battery_pct) || *p)
            return synor__error(SYNOR_EINVAL,
                                "availability \"%s\": expected charging:MIN with MIN 0..100",
                                text);
    } else if (strncmp(text, "utc:", 4) == 0) {
        const char *p = text + 4;
        a.kind = SYNOR_AVAIL_UTC_WINDOWS;
        for (;;) {
            unsigned s, e;
            if (a.n_windows == SYNOR_AVAIL_MAX_WINDOWS || parse_uint(&p, 23, &s) || *p++ != '-' ||
                parse_uint(&p, 24, &e))
                return synor__error(SYNOR_EINVAL,
                                    "availability \"%s\": expected utc:S-E[,S-E...] with at most "
                                    "%d windows, hours 0..24",
                                    text, SYNOR_AVAIL_MAX_WINDOWS);
            a.windows[a.n_windows].start_hour = (uint8_t)s;
            a.windows[a.n_windows].end_hour = (uint8_t)e;
            a.n_windows++;
            if (*p == '\0')
                break;
            if (*p++ != ',')
                return synor__error(SYNOR_EINVAL, "availability \"%s\": expected ',' between "
                                                  "windows", text);
        }
    } else {
        return synor__error(SYNOR_EINVAL,
                            "availability \"%s\": expected always, idle, charging:MIN or "
                            "utc:S-E[,S-E...]",
                            text);
    }
    int rc = synor_availability_validate(&a);
    if (rc)
        return rc;
    *out = a;
    return 0;
}

int synor_availability_format(const synor_availability *a, char *buf, size_t n)
{
    switch (a->kind) {
    case SYNOR_AVAIL_ALWAYS: return snprintf(buf, n, "always");
    case SYNOR_AVAIL_IDLE_ONLY: return snprintf(buf, n, "idle");
    case SYNOR_AVAIL_CHARGING_ONLY: return snprintf(buf, n, "charging:%u", a->min_battery_pct);
    case SYNOR_AVAIL_UTC_WINDOWS: {
        int used = snprintf(buf, n, "utc:");
        for (unsigned i = 0; i < a->n_windows && i < SYNOR_AVAIL_MAX_WINDOWS; i++)
            used += snprintf(buf + ((size_t)used < n ? (size_t)used : n),
                             (size_t)used < n ? n - (size_t)used : 0, "%s%u-%u", i ? "," : "",
                             a->windows[i].start_hour, a->windows[i].end_hour);
        return used;
    }
    default: return snprintf(buf, n, "?");
    }
}
