/* decimal.c - the fixed-point money of the economics data: decimal strings
 * to micro-units exactly, micro-units back to text, one rounded 128-bit
 * multiply-divide, and calendar dates (data ages only; intervals elsewhere
 * use the monotonic clock).
 *
 * Why not synor_money_parse (fabric.c): its limits are not stated, it
 * accepts no bound and its errors name no file position; the data files
 * need both, and a maximum that keeps every product of the pricing engine
 * inside 128 bits (docs/PRICING.md, "Limits"). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "econ/econ_internal.h"

__extension__ typedef __int128 i128;

static int money_parse(const char *s, int64_t *micro, const char **why)
{
    const char *p = s;
    int64_t whole = 0, frac = 0;
    int digits = 0, fd = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (whole > SYNOR_ECON_MAX_MONEY / 1000000) {
            *why = "is above the limit of 1000000000 (10^9)";
            return SYNOR_ERANGE;
        }
        whole = whole * 10 + (*p - '0');
    }
    if (*p == '.') {
        p++;
        for (; *p >= '0' && *p <= '9'; p++, fd++) {
            if (fd == 6) {
                *why = "has more than 6 decimals (the unit is 10^-6 USD)";
                return SYNOR_EINVAL;
            }
            frac = frac * 10 + (*p - '0');
        }
        if (fd == 0)
            digits = 0; /* "1." */
    }
    if (!digits || *p) {
        *why = "is not a decimal number like \"0.0812\" (digits, optionally '.' and up to 6 "
               "decimals; no sign or exponent)";
        return SYNOR_EINVAL;
    }
    for (; fd < 6; fd++)
        frac *= 10;
    int64_t v = whole * 1000000 + frac;
    if (v > SYNOR_ECON_MAX_MONEY) {
        *why = "is above the limit of 1000000000 (10^9)";
        return SYNOR_ERANGE;
    }
    *micro = v;
    return 0;
}

int synor_econ_money_parse(const char *s, int64_t *micro)
{
    const char *why = NULL;
    if (!s || !micro)
        return synor__error(SYNOR_EINVAL, "synor_econ_money_parse: NULL argument");
    int rc = money_parse(s, micro, &why);
    return rc ? synor__error(rc, "amount \"%s\" %s", s, why) : 0;
}

int synor__econ_money(const synor__jdoc *d, const synor__jval *v, const char *path, int64_t *out)
{
    if (v->type != SYNOR__J_STRING)
        return synor__json_fail(d, v, SYNOR_ESCHEMA, path,
                                "an amount must be a decimal string like \"0.0812\", found %s",
                                synor__jtype_name(v->type));
    const char *why = NULL;
    int rc = money_parse(v->u.str.s, out, &why);
    return rc ? synor__json_fail(d, v, rc, path, "\"%s\" %s", v->u.str.s, why) : 0;
}

void synor_econ_money_format(int64_t micro, int decimals, char *buf, size_t n)
{
    if (decimals < 0)
        decimals = 0;
    if (decimals > 6)
        decimals = 6;
    int neg = micro < 0;
    uint64_t m = neg ? (uint64_t)0 - (uint64_t)micro : (uint64_t)micro;
    uint64_t unit = 1;
    for (int i = decimals; i < 6; i++)
        unit *= 10;
    m = (m + unit / 2) / unit; /* half away from zero */
    uint64_t scale = 1;
    for (int i = 0; i < decimals; i++)
        scale *= 10;
    if (decimals)
        snprintf(buf, n, "%s%llu.%0*llu", neg && m ? "-" : "", (unsigned long long)(m / scale),
                 decimals, (unsigned long long)(m % scale));
    else
        snprintf(buf, n, "%s%llu", neg && m ? "-" : "", (unsigned long long)m);
}

int synor_econ_muldiv(int64_t a, int64_t b, int64_t d, int64_t *out)
{
    if (a < 0 || b < 0 || d <= 0)
        return synor__error(SYNOR_EINVAL,
                            "synor_econ_muldiv: %lld x %lld / %lld: negative "
                            "operand or divisor not above 0",
                            (long long)a, (long long)b, (long long)d);
    /* a, b < 2^63: the product < 2^126 fits; adding d/2 < 2^62 too */
    i128 q = ((i128)a * b + d / 2) / d;
    if (q > INT64_MAX)
        return synor__error(SYNOR_ERANGE, "%lld x %lld / %lld exceeds the 64-bit range",
                            (long long)a, (long long)b, (long long)d);
    *out = (int64_t)q;
    return 0;
}

/* ------------------------------------------------------------------ dates */

/* Days since 1970-01-01 of a proleptic Gregorian date: years counted from
 * March in 400-year eras of 146097 days, so leap days fall at the end. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int month_days(int y, int m)
{
    static const int md[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : md[m - 1];
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int date_part(const char *s, int64_t *day)
{
    int y, m, d;
    if (digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &m) || s[7] != '-' ||
        digits(s + 8, 2, &d) || y < 1900 || m < 1 || m > 12 || d < 1 || d > month_days(y, m))
        return -1;
    *day = days_from_civil(y, m, d);
    return 0;
}

int synor_econ_date_parse(const char *s, int64_t *day)
{
    int64_t v;
    if (!s || !day || strlen(s) != 10 || date_part(s, &v))
        return synor__error(SYNOR_EINVAL, "date \"%s\" is not a calendar date YYYY-MM-DD",
                            s ? s : "(null)");
    *day = v;
    return 0;
}

int synor__econ_time_parse(const char *s, int64_t *out)
{
    int64_t day;
    int h, mi, se;
    if (strlen(s) != 20 || date_part(s, &day) || s[10] != 'T' || digits(s + 11, 2, &h) ||
        s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' || digits(s + 17, 2, &se) ||
        s[19] != 'Z' || h > 23 || mi > 59 || se > 59)
        return SYNOR_EINVAL;
    *out = day * 86400 + h * 3600 + mi * 60 + se;
    return 0;
}

int64_t synor_econ_today(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* a calendar date, for data ages only */
    int64_t s = (int64_t)ts.tv_sec;
    return (s >= 0 ? s : s - 86399) / 86400;
}

int64_t synor_econ_file_age(const synor_econ_file *f, int64_t day)
{
    return day - f->as_of_day;
}

int synor_econ_file_is_stale(const synor_econ_file *f, int64_t day)
{
    return synor_econ_file_age(f, day) > f->max_age_days;
}
