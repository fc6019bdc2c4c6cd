/* test.h - the project's minimal test harness. A test file defines
 * TEST(name) functions and lists them in a TEST_LIST; main() runs them all,
 * prints one line per test and a closing "N passed, N failed" line, and
 * exits 1 if any failed, 77 (CTest: skipped) if a test called TEST_SKIP.
 *
 *   TEST(parses_numbers) { ASSERT_EQ(1, 1); }
 *   TEST_MAIN(parses_numbers, other_test)
 */
#ifndef SYNOR_TEST_H
#define SYNOR_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct test_state {
    int failed;
    int skipped;
} test_state;

extern test_state test__s;

#define TEST(name) static void test_##name(void)

#define TEST__FAIL(...)                                        \
    do {                                                       \
        fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);      \
        fprintf(stderr, __VA_ARGS__);                          \
        fputc('\n', stderr);                                   \
        test__s.failed = 1;                                    \
        return;                                                \
    } while (0)

#define ASSERT(c)                                 \
    do {                                          \
        if (!(c))                                 \
            TEST__FAIL("assertion failed: %s", #c); \
    } while (0)

#define ASSERT_EQ(a, b)                                                              \
    do {                                                                             \
        long long a_ = (long long)(a), b_ = (long long)(b);                          \
        if (a_ != b_)                                                                \
            TEST__FAIL("%s == %s: %lld != %lld", #a, #b, a_, b_);                    \
    } while (0)

#define ASSERT_OK(x)                                                                 \
    do {                                                                             \
        int r_ = (x);                                                                \
        if (r_ != 0)                                                                 \
            TEST__FAIL("%s returned %d (%s)", #x, r_, synor_errmsg());               \
    } while (0)

#define ASSERT_NEAR(a, b, rel)                                                       \
    do {                                                                             \
        double a_ = (a), b_ = (b);                                                   \
        if (!(fabs(a_ - b_) <= (rel) * fmax(fabs(a_), fabs(b_))))                    \
            TEST__FAIL("%s ~= %s: %.17g vs %.17g", #a, #b, a_, b_);                  \
    } while (0)

#define ASSERT_STREQ(a, b)                                                           \
    do {                                                                             \
        const char *a_ = (a), *b_ = (b);                                             \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                       \
            TEST__FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)",    \
                       b_ ? b_ : "(null)");                                          \
    } while (0)

#define ASSERT_CONTAINS(hay, needle)                                                 \
    do {                                                                             \
        const char *h_ = (hay), *n_ = (needle);                                      \
        if (!h_ || !strstr(h_, n_))                                                  \
            TEST__FAIL("\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", n_);    \
    } while (0)

#define TEST_SKIP(why)                                                               \
    do {                                                                             \
        fprintf(stderr, "  skipped: %s\n", why);                                     \
        test__s.skipped = 1;                                                         \
        return;                                                                      \
    } while (0)

typedef struct test_entry {
    const char *name;
    void (*fn)(void);
} test_entry;

int test__run(const test_entry *tests, size_t n);

#define TEST__ENTRY(n) {#n, test_##n},
#define TEST__MAP1(m, x) m(x)
/* TEST_MAIN(a, b, c): up to 40 tests. */
#define TEST__E(...) TEST__FOREACH(TEST__ENTRY, __VA_ARGS__)
#define TEST__FOREACH(m, ...) TEST__FE_N(__VA_ARGS__, TEST__FE40, TEST__FE39, TEST__FE38, TEST__FE37, TEST__FE36, TEST__FE35, TEST__FE34, TEST__FE33, TEST__FE32, TEST__FE31, TEST__FE30, TEST__FE29, TEST__FE28, TEST__FE27, TEST__FE26, TEST__FE25, TEST__FE24, TEST__FE23, TEST__FE22, TEST__FE21, TEST__FE20, TEST__FE19, TEST__FE18, TEST__FE17, TEST__FE16, TEST__FE15, TEST__FE14, TEST__FE13, TEST__FE12, TEST__FE11, TEST__FE10, TEST__FE9, TEST__FE8, TEST__FE7, TEST__FE6, TEST__FE5, TEST__FE4, TEST__FE3, TEST__FE2, TEST__FE1)(m, __VA_ARGS__)
#define TEST__FE_N(_1,_2,_3,_4,_5,_6,_7,_8,_9,_10,_11,_12,_13,_14,_15,_16,_17,_18,_19,_20,_21,_22,_23,_24,_25,_26,_27,_28,_29,_30,_31,_32,_33,_34,_35,_36,_37,_38,_39,_40,N,...) N
#define TEST__FE1(m, x) m(x)
#define TEST__FE2(m, x, ...) m(x) TEST__FE1(m, __VA_ARGS__)
#define TEST__FE3(m, x, ...) m(x) TEST__FE2(m, __VA_ARGS__)
#define TEST__FE4(m, x, ...) m(x) TEST__FE3(m, __VA_ARGS__)
#define TEST__FE5(m, x, ...) m(x) TEST__FE4(m, __VA_ARGS__)
#define TEST__FE6(m, x, ...) m(x) TEST__FE5(m, __VA_ARGS__)
#define TEST__FE7(m, x, ...) m(x) TEST__FE6(m, __VA_ARGS__)
#define TEST__FE8(m, x, ...) m(x) TEST__FE7(m, __VA_ARGS__)
#define TEST__FE9(m, x, ...) m(x) TEST__FE8(m, __VA_ARGS__)
#define TEST__FE10(m, x, ...) m(x) TEST__FE9(m, __VA_ARGS__)
#define TEST__FE11(m, x, ...) m(x) TEST__FE10(m, __VA_ARGS__)
#define TEST__FE12(m, x, ...) m(x) TEST__FE11(m, __VA_ARGS__)
#define TEST__FE13(m, x, ...) m(x) TEST__FE12(m, __VA_ARGS__)
#define TEST__FE14(m, x, ...) m(x) TEST__FE13(m, __VA_ARGS__)
#define TEST__FE15(m, x, ...) m(x) TEST__FE14(m, __VA_ARGS__)
#define TEST__FE16(m, x, ...) m(x) TEST__FE15(m, __VA_ARGS__)
#define TEST__FE17(m, x, ...) m(x) TEST__FE16(m, __VA_ARGS__)
#define TEST__FE18(m, x, ...) m(x) TEST__FE17(m, __VA_ARGS__)
#define TEST__FE19(m, x, ...) m(x) TEST__FE18(m, __VA_ARGS__)
#define TEST__FE20(m, x, ...) m(x) TEST__FE19(m, __VA_ARGS__)
#define TEST__FE21(m, x, ...) m(x) TEST__FE20(m, __VA_ARGS__)
#define TEST__FE22(m, x, ...) m(x) TEST__FE21(m, __VA_ARGS__)
#define TEST__FE23(m, x, ...) m(x) TEST__FE22(m, __VA_ARGS__)
#define TEST__FE24(m, x, ...) m(x) TEST__FE23(m, __VA_ARGS__)
#define TEST__FE25(m, x, ...) m(x) TEST__FE24(m, __VA_ARGS__)
#define TEST__FE26(m, x, ...) m(x) TEST__FE25(m, __VA_ARGS__)
#define TEST__FE27(m, x, ...) m(x) TEST__FE26(m, __VA_ARGS__)
#define TEST__FE28(m, x, ...) m(x) TEST__FE27(m, __VA_ARGS__)
#define TEST__FE29(m, x, ...) m(x) TEST__FE28(m, __VA_ARGS__)
#define TEST__FE30(m, x, ...) m(x) TEST__FE29(m, __VA_ARGS__)
#define TEST__FE31(m, x, ...) m(x) TEST__FE30(m, __VA_ARGS__)
#define TEST__FE32(m, x, ...) m(x) TEST__FE31(m, __VA_ARGS__)
#define TEST__FE33(m, x, ...) m(x) TEST__FE32(m, __VA_ARGS__)
#define TEST__FE34(m, x, ...) m(x) TEST__FE33(m, __VA_ARGS__)
#define TEST__FE35(m, x, ...) m(x) TEST__FE34(m, __VA_ARGS__)
#define TEST__FE36(m, x, ...) m(x) TEST__FE35(m, __VA_ARGS__)
#define TEST__FE37(m, x, ...) m(x) TEST__FE36(m, __VA_ARGS__)
#define TEST__FE38(m, x, ...) m(x) TEST__FE37(m, __VA_ARGS__)
#define TEST__FE39(m, x, ...) m(x) TEST__FE38(m, __VA_ARGS__)
#define TEST__FE40(m, x, ...) m(x) TEST__FE39(m, __VA_ARGS__)

#define TEST_MAIN(...)                                                      \
    test_state test__s;                                                      \
    int main(void)                                                           \
    {                                                                        \
        static const test_entry tests_[] = {TEST__E(__VA_ARGS__)};           \
        return test__run(tests_, sizeof tests_ / sizeof tests_[0]);          \
    }

#endif
