/* test_json.c - the strict JSON reader (positions, errors, numbers) and the
 * writer. */
#include <math.h>
#include <stdint.h>

#include "json/json.h"
#include "test.h"

static synor__jdoc *parse(const char *s)
{
    synor__jdoc *d = NULL;
    if (synor__json_parse(s, strlen(s), "t.json", &d))
        return NULL;
    return d;
}

/* Parses s expecting failure; returns the message. */
static const char *parse_err(const char *s)
{
    synor__jdoc *d = NULL;
    int rc = synor__json_parse(s, strlen(s), "t.json", &d);
    if (rc == 0) {
        synor__jdoc_free(d);
        return "(parsed)";
    }
    return synor_errmsg();
}

TEST(values_and_positions)
{
    synor__jdoc *d = parse("{\n  \"a\": [1, -2.5e3, true, null],\n  \"b\": \"x\\u00e9\\ud83d\\ude00\"\n}");
    ASSERT(d);
    synor__jval *r = synor__jdoc_root(d);
    ASSERT_EQ(r->type, SYNOR__J_OBJECT);
    synor__jval *a = synor__json_get(r, "a");
    ASSERT(a && a->type == SYNOR__J_ARRAY && a->u.arr.n == 4);
    ASSERT_EQ(a->line, 2);
    ASSERT_EQ(a->col, 8);
    ASSERT(a->u.arr.items[0]->u.n.is_int && a->u.arr.items[0]->u.n.inum == 1);
    ASSERT_NEAR(a->u.arr.items[1]->u.n.num, -2500.0, 1e-15);
    ASSERT(!a->u.arr.items[1]->u.n.is_int);
    ASSERT_EQ(a->u.arr.items[1]->col, 12);
    ASSERT_EQ(a->u.arr.items[2]->u.boolean, 1);
    ASSERT_EQ(a->u.arr.items[3]->type, SYNOR__J_NULL);
    synor__jval *b = synor__json_get(r, "b");
    ASSERT_STREQ(b->u.str.s, "x\xc3\xa9\xf0\x9f\x98\x80");
    ASSERT_EQ(b->line, 3);
    synor__jdoc_free(d);
}

TEST(syntax_errors_name_line_and_column)
{
    ASSERT_STREQ(parse_err("{\"a\": 1,}"), "t.json:1:9: trailing comma before '}'");
    ASSERT_STREQ(parse_err("[1, 2\n, 3"), "t.json:2:4: expected ',' or ']' in array, found end of input");
    ASSERT_STREQ(parse_err("{\"a\" 1}"), "t.json:1:6: expected ':' after object key, found '1'");
    ASSERT_STREQ(parse_err("\n\n  tru"), "t.json:3:3: expected a value, found 't'");
    ASSERT_STREQ(parse_err("{\"a\":1,\"a\":2}"), "t.json:1:8: duplicate key \"a\" (first at 1:2)");
    ASSERT_STREQ(parse_err("01"), "t.json:1:1: invalid number (leading zero)");
    ASSERT_STREQ(parse_err("\"\\x\""), "t.json:1:2: invalid escape '\\x'");
    ASSERT_STREQ(parse_err("\"abc"), "t.json:1:1: unterminated string");
    ASSERT_STREQ(parse_err("1e999"), "t.json:1:1: number out of range: 1e999");
    ASSERT_STREQ(parse_err("\"\\ud800\""), "t.json:1:2: unpaired surrogate in \\u escape");
    ASSERT_STREQ(parse_err("[1] 2"), "t.json:1:5: expected end of input after the top-level value, found '2'");
    ASSERT_STREQ(parse_err(""), "t.json:1:1: expected a value, found end of input");
    ASSERT_STREQ(parse_err("\"\xff\""), "t.json:1:2: invalid UTF-8 in string");
}

TEST(deep_nesting_is_rejected_not_crashing)
{
    char buf[2000];
    memset(buf, '[', 1000);
    buf[1000] = '\0';
    ASSERT_CONTAINS(parse_err(buf), "nesting deeper than 256 levels");
}

TEST(schema_helpers)
{
    synor__jdoc *d = parse("{\"n\": -1, \"i\": 2.5, \"s\": \"x\", \"zz\": 1}");
    ASSERT(d);
    synor__jval *r = synor__jdoc_root(d), *v;
    double x;
    int64_t i;
    ASSERT_EQ(synor__json_number(d, synor__json_get(r, "n"), "root.n", 0, 10, &x), SYNOR_ERANGE);
    ASSERT_STREQ(synor_errmsg(), "t.json:1:7: root.n: value -1 is below the minimum 0");
    ASSERT_EQ(synor__json_int(d, synor__json_get(r, "i"), "root.i", 0, 10, &i), SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "expected an integer");
    ASSERT_EQ(synor__json_member(d, r, "root", "s", SYNOR__J_NUMBER, 1, &v), SYNOR_ESCHEMA);
    ASSERT_STREQ(synor_errmsg(), "t.json:1:26: root.s: expected number, found string");
    ASSERT_EQ(synor__json_member(d, r, "root", "missing", SYNOR__J_NUMBER, 1, &v), SYNOR_ESCHEMA);
    ASSERT_CONTAINS(synor_errmsg(), "missing required field \"missing\"");
    static const char *const keys[] = {"n", "i", "s", NULL};
    ASSERT_EQ(synor__json_check_keys(d, r, "root", keys), SYNOR_ESCHEMA);
    ASSERT_STREQ(synor_errmsg(), "t.json:1:31: root: unknown field \"zz\" (allowed: n, i, s)");
    synor__jdoc_free(d);
}

TEST(writer_round_trips)
{
    synor__buf b;
    synor__jw w;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, 1);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "s");
    synor__jw_str(&w, "a\"b\\c\n\x01");
    synor__jw_key(&w, "n");
    synor__jw_num(&w, 989.4);
    synor__jw_key(&w, "e");
    synor__jw_arr_begin(&w);
    synor__jw_arr_end(&w);
    synor__jw_key(&w, "i");
    synor__jw_int(&w, -7);
    synor__jw_obj_end(&w);
    char *s = synor__buf_take(&b);
    ASSERT(s);
    synor__jdoc *d = parse(s);
    ASSERT(d);
    synor__jval *r = synor__jdoc_root(d);
    ASSERT_STREQ(synor__json_get(r, "s")->u.str.s, "a\"b\\c\n\x01");
    ASSERT(synor__json_get(r, "n")->u.n.num == 989.4);
    ASSERT_EQ(synor__json_get(r, "e")->u.arr.n, 0);
    ASSERT_EQ(synor__json_get(r, "i")->u.n.inum, -7);
    synor__jdoc_free(d);
    free(s);
}

/* Writes n nested arrays, each [inner, level], and compares with the text
 * built by hand; the reader must take it back. */
static int nested_ok(int n, int pretty)
{
    synor__buf b, want;
    synor__jw w;
    synor__buf_init(&b);
    synor__buf_init(&want);
    synor__jw_init(&w, &b, pretty);
    for (int i = 0; i < n; i++) {
        synor__jw_arr_begin(&w);
        synor__buf_puts(&want, "[");
    }
    for (int i = n - 1; i >= 0; i--) {
        synor__jw_int(&w, i);
        synor__jw_arr_end(&w);
        synor__buf_printf(&want, "%s%d]", i == n - 1 ? "" : ",", i);
    }
    char *got = synor__buf_take(&b), *exp = synor__buf_take(&want);
    int ok = got && exp;
    if (ok && !pretty && strcmp(got, exp) != 0) {
        fprintf(stderr, "  depth %d: wrote %.80s...\n", n, got);
        ok = 0;
    }
    synor__jdoc *d = NULL;
    if (ok && synor__json_parse(got, strlen(got), "w.json", &d) != 0) {
        fprintf(stderr, "  depth %d: %s\n", n, synor_errmsg());
        ok = 0;
    }
    synor__jdoc_free(d);
    free(got);
    free(exp);
    return ok;
}

TEST(writer_nests_as_deep_as_the_reader_reads)
{
    /* found by fuzz/fuzz_json: past 64 levels the writer lost its place
     * (and indexed its per-level state at -1) */
    ASSERT(nested_ok(64, 0));
    ASSERT(nested_ok(65, 0));
    ASSERT(nested_ok(256, 0));
    ASSERT(nested_ok(256, 1));
    /* deeper than the reader reads: the buffer fails, nothing is corrupted */
    synor__buf b;
    synor__jw w;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, 0);
    for (int i = 0; i < 300; i++)
        synor__jw_arr_begin(&w);
    for (int i = 0; i < 300; i++)
        synor__jw_arr_end(&w);
    ASSERT(synor__buf_take(&b) == NULL);
    synor__buf_free(&b);
}

TEST(allocation_failure_is_reported)
{
    const char *text = "{\"a\": [1, 2, 3], \"b\": {\"c\": \"d\"}}";
    /* Fail each allocation in turn: every run either parses or fails with
     * SYNOR_ENOMEM, never crashes or leaks (ASan checks the latter). */
    for (long n = 1; n < 20; n++) {
        synor__jdoc *d = NULL;
        synor__alloc_fail_after(n);
        int rc = synor__json_parse(text, strlen(text), "t.json", &d);
        synor__alloc_fail_after(0);
        ASSERT(rc == 0 || rc == SYNOR_ENOMEM);
        synor__jdoc_free(d);
    }
}

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One random number as text: digits around a point, exponents, signs, and
 * numbers next to a midpoint between two doubles (where rounding the
 * reader's extended-precision value to double could differ from strtod). */
static void random_number(uint64_t *s, char *buf, size_t n)
{
    uint64_t r = rnd(s);
    double x;
    switch (r % 6) {
    case 0: { /* a random double as %.17g, %.16g or %.15g writes it */
        do {
            uint64_t bits = rnd(s);
            memcpy(&x, &bits, sizeof x);
        } while (!isfinite(x) || fabs(x) < 1e-30 || fabs(x) > 1e30);
        snprintf(buf, n, "%.*g", 15 + (int)(rnd(s) % 3), x);
        break;
    }
    case 1: { /* 19 digits next to the midpoint above a double */
        x = (double)(rnd(s) >> 11) * 0x1p-53 * pow(10, (double)(int)(rnd(s) % 40) - 20);
        long double mid = (long double)x + (long double)(nextafter(x, INFINITY) - x) / 2;
        snprintf(buf, n, "%.*Le", 17 + (int)(rnd(s) % 3), mid);
        break;
    }
    default: { /* up to 21 random digits, a point somewhere, maybe an exponent */
        int nd = 1 + (int)(rnd(s) % 21), point = (int)(rnd(s) % (uint64_t)(nd + 1)), o = 0;
        if (r & 64)
            buf[o++] = '-';
        for (int k = 0; k < nd; k++) {
            if (k == point && k > 0)
                buf[o++] = '.';
            char c = (char)('0' + rnd(s) % 10);
            if (k == 0 && c == '0' && nd > 1 && point != 1)
                c = '1';
            buf[o++] = c;
            if (k == 0 && point == 0 && nd > 1) /* "0.xxx" */
                buf[o++] = '.';
        }
        if (r & 128)
            o += snprintf(buf + o, n - (size_t)o, "e%d", (int)(rnd(s) % 70) - 35);
        buf[o] = '\0';
    }
    }
}

TEST(numbers_read_as_strtod_reads_them)
{
    /* 1,000,000 numbers in arrays of 1,000: every value bit for bit */
    uint64_t seed = 11;
    char num[1000][64];
    size_t fast_cases = 0;
    for (int rep = 0; rep < 1000; rep++) {
        synor__buf b;
        synor__buf_init(&b);
        synor__buf_puts(&b, "[");
        for (int k = 0; k < 1000; k++) {
            random_number(&seed, num[k], sizeof num[k]);
            synor__buf_printf(&b, "%s%s", k ? "," : "", num[k]);
        }
        synor__buf_puts(&b, "]");
        synor__jdoc *d = parse(b.data);
        if (!d) { /* only a number out of range may fail; find it */
            ASSERT_CONTAINS(synor_errmsg(), "number out of range");
            synor__buf_free(&b);
            continue;
        }
        const synor__jval *a = synor__jdoc_root(d);
        ASSERT_EQ(a->u.arr.n, 1000);
        for (int k = 0; k < 1000; k++) {
            double want = strtod(num[k], NULL), got = a->u.arr.items[k]->u.n.num;
            if (memcmp(&want, &got, sizeof want) != 0) {
                fprintf(stderr, "  %s: read %.17g, strtod %.17g\n", num[k], got, want);
                ASSERT(0);
            }
            fast_cases += strlen(num[k]) < 22;
        }
        synor__jdoc_free(d);
        synor__buf_free(&b);
    }
    ASSERT(fast_cases > 500000);
    /* integers: exact, and their doubles */
    synor__jdoc *d = parse("[0, -0, 7, -123456789012345678, 999999999999999999, "
                           "1234567890123456789, -9223372036854775808, 9223372036854775808, "
                           "9007199254740993]");
    ASSERT(d);
    const synor__jval *a = synor__jdoc_root(d);
    ASSERT(a->u.arr.items[0]->u.n.is_int && a->u.arr.items[0]->u.n.inum == 0);
    ASSERT(a->u.arr.items[1]->u.n.is_int && signbit(a->u.arr.items[1]->u.n.num));
    ASSERT(a->u.arr.items[3]->u.n.inum == -123456789012345678LL);
    ASSERT(a->u.arr.items[4]->u.n.inum == 999999999999999999LL);
    ASSERT(a->u.arr.items[5]->u.n.inum == 1234567890123456789LL);
    ASSERT(a->u.arr.items[6]->u.n.is_int && a->u.arr.items[6]->u.n.inum == INT64_MIN);
    ASSERT(!a->u.arr.items[7]->u.n.is_int); /* above int64 */
    ASSERT(a->u.arr.items[7]->u.n.num == 9223372036854775808.0);
    ASSERT(a->u.arr.items[8]->u.n.inum == 9007199254740993LL);
    ASSERT(a->u.arr.items[8]->u.n.num == 9007199254740992.0); /* rounded to even */
    synor__jdoc_free(d);
    ASSERT(signbit(synor__jdoc_root(d = parse("[-0.0]"))->u.arr.items[0]->u.n.num));
    synor__jdoc_free(d);
}

static void check_g15(double v)
{
    char want[64], got[64];
    snprintf(want, sizeof want, "%.15g", v);
    size_t n = synor__json_num_g15(v, got);
    got[n] = '\0';
    if (strcmp(want, got) != 0) {
        fprintf(stderr, "  %.17g: wrote %s, printf %s\n", v, got, want);
        ASSERT(0);
    }
}

TEST(numbers_written_as_printf_writes_them)
{
    uint64_t seed = 5;
    for (int k = 0; k < 1000000; k++) {
        double v;
        uint64_t r = rnd(&seed);
        switch (r % 5) {
        case 0: { /* any double */
            uint64_t bits = rnd(&seed);
            memcpy(&v, &bits, sizeof v);
            if (!isfinite(v))
                continue;
            break;
        }
        case 1: /* seconds of a schedule */
            v = (double)(rnd(&seed) >> 11) * 0x1p-53 * pow(10, (double)(int)(rnd(&seed) % 24) - 6);
            break;
        case 2: /* few digits: 1.5, 0.25, 123.456 */
            v = (double)(int64_t)(rnd(&seed) % 2000001 - 1000000) /
                pow(10, (double)(int)(rnd(&seed) % 9));
            break;
        case 3: /* a half at the 16th digit, and its neighbours */
            v = ((double)(rnd(&seed) % 900000000000000ull + 100000000000000ull) + 0.5) *
                pow(10, (double)(int)(rnd(&seed) % 12) - 14);
            v = r & 64 ? nextafter(v, r & 128 ? INFINITY : -INFINITY) : v;
            break;
        default: /* next to a power of ten */
            v = pow(10, (double)(int)(rnd(&seed) % 24) - 6);
            for (int s = (int)(rnd(&seed) % 5); s > 0; s--)
                v = nextafter(v, r & 64 ? INFINITY : 0);
            v *= 1 - (double)(r & 1) * 5e-16;
        }
        check_g15(r & 32 ? -v : v);
    }
    static const double edge[] = {0, -0.0, 1, 0.1, 1e-4, 9.99999999999999e-5, 1e15, 1e14,
                                  999999999999999.4, 999999999999999.5, 99999999999999.95,
                                  100000000000000.5, 530898.977544886, 0.30000000000000004,
                                  1e-5, 123456789012345678.0, 5e-324, 1.7976931348623157e308};
    for (size_t k = 0; k < sizeof edge / sizeof edge[0]; k++)
        check_g15(edge[k]);
}

TEST_MAIN(numbers_read_as_strtod_reads_them, numbers_written_as_printf_writes_them, values_and_positions, syntax_errors_name_line_and_column,
          deep_nesting_is_rejected_not_crashing, schema_helpers, writer_round_trips,
          writer_nests_as_deep_as_the_reader_reads,
          allocation_failure_is_reported)
