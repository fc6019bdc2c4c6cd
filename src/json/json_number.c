/* json_number.c - numbers read without strtod and written without printf,
 * bit for bit as they would give them (json.h): a workload of 100,000 cost
 * rows has two million numbers to read, its plan 200,000 to write. Both use
 * the x87 extended format (64-bit significand) to hold an exact decimal
 * scaling with one rounding, and hand the few cases where that rounding
 * could decide differently to strtod or printf. Elsewhere than x86-64 with
 * that format, strtod and printf do it all. */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "json/json.h"

/* The value of a number of at most 19 significant digits and a decimal
 * exponent within +-27, exactly as strtod gives it, without strtod (a
 * workload of 100,000 cost rows has two million numbers). dig: the digits
 * as an integer, e10: the power of ten to scale it by. The digits and the
 * power are exact in x87 extended precision (64-bit significand; 10^27 =
 * 5^27 2^27 and 5^27 < 2^63), so one multiplication or division rounds
 * once, to within half a unit of the 64th bit; rounding that to double
 * gives strtod's correctly rounded result unless the extended value lies
 * next to a midpoint between two doubles (its 11 extra bits 0x3ff-0x401),
 * the one case where rounding twice can differ: 0 = done, 1 = use strtod.
 * Only with round-to-nearest and extended precision in force
 * (synor__json_fast_numbers_ok). */
int synor__json_fast_number(uint64_t dig, int e10, int neg, double *out)
{
#if defined(__x86_64__) && LDBL_MANT_DIG == 64
    static const long double P10[] = {
        1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
        1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
        1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
    if (e10 < -27 || e10 > 27)
        return 1;
    if (dig == 0) {
        *out = neg ? -0.0 : 0.0;
        return 0;
    }
    long double q = e10 < 0 ? (long double)dig / P10[-e10] : (long double)dig * P10[e10];
    uint64_t m;
    memcpy(&m, &q, sizeof m); /* the explicit 64-bit significand */
    unsigned low = (unsigned)(m & 0x7ff);
    if (low >= 0x3ff && low <= 0x401)
        return 1;
    double r = (double)q;
    *out = neg ? -r : r;
    return 0;
#else
    (void)dig;
    (void)e10;
    (void)neg;
    (void)out;
    return 1;
#endif
}

int synor__json_fast_numbers_ok(void)
{
#if defined(__x86_64__) && LDBL_MANT_DIG == 64
    volatile long double one = 1, tiny = 0x1p-63L;
    return fegetround() == FE_TONEAREST && one + tiny != one;
#else
    return 0;
#endif
}

/* v as printf's "%.15g" writes it, for |v| in [1e-4, 1e15) in fixed
 * notation, without printf (a 100,000-task plan writes 200,000 times):
 * |v| x 10^k (k = 14 - its decimal exponent, 0 to 18; 10^k and the product
 * exact to 64 bits in x87 extended precision) rounded to 15 digits. The
 * product is within 2^-63 of |v| 10^k relatively, so the rounding can only
 * go wrong next to a half: there, and everywhere else out of range (or
 * without round-to-nearest and extended precision), the answer is 0 and
 * printf writes it. Else the length written into out. */
static size_t fast_g15(double v, char *out)
{
#if defined(__x86_64__) && LDBL_MANT_DIG == 64
    static const long double P10[] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,
                                      1e7L,  1e8L,  1e9L,  1e10L, 1e11L, 1e12L, 1e13L,
                                      1e14L, 1e15L, 1e16L, 1e17L, 1e18L};
    double a = fabs(v);
    volatile long double one = 1, tiny = 0x1p-63L; /* extended precision in force? */
    if (!(a >= 1e-4 && a < 1e15) || one + tiny == one || fegetround() != FE_TONEAREST)
        return 0;
    int x = 0; /* decimal exponent: 10^x <= a < 10^(x+1), give or take one */
    while (x < 14 && a >= (double)P10[x + 1])
        x++;
    while (x <= 0 && x > -4 && a < 1 / (double)P10[-x])
        x--;
    long double scaled = (long double)a * P10[14 - x];
    if (scaled < 1e14L || scaled >= 1e15L)
        return 0;
    uint64_t n = (uint64_t)scaled; /* truncates */
    long double frac = scaled - (long double)n;
    if (frac > 0.5L - 1e-3L && frac < 0.5L + 1e-3L)
        return 0; /* a half, or too near one to tell */
    if (frac > 0.5L)
        n++;
    if (n == 1000000000000000ull) { /* rounded up to the next power of ten */
        n = 100000000000000ull;
        if (++x > 14)
            return 0;
    }
    char dig[15];
    for (int i = 14; i >= 0; i--, n /= 10)
        dig[i] = (char)('0' + n % 10);
    int last = 14; /* %g drops trailing zeros */
    while (last > 0 && dig[last] == '0')
        last--;
    size_t o = 0;
    if (v < 0)
        out[o++] = '-';
    if (x >= 0) {
        for (int i = 0; i <= x; i++)
            out[o++] = dig[i];
        if (last > x) {
            out[o++] = '.';
            for (int i = x + 1; i <= last; i++)
                out[o++] = dig[i];
        }
    } else {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -x - 1; i++)
            out[o++] = '0';
        for (int i = 0; i <= last; i++)
            out[o++] = dig[i];
    }
    return o;
#else
    (void)v;
    (void)out;
    return 0;
#endif
}

size_t synor__json_num_g15(double v, char *out)
{
    size_t n = fast_g15(v, out);
    if (!n)
        n = (size_t)snprintf(out, 32, "%.15g", v);
    return n;
}
