/* test_main.c - the runner behind TEST_MAIN (tests/test.h). */
#include "test.h"

/* OpenBLAS is not built with ThreadSanitizer: its threads hand work over
 * with their own spin locks, which TSan cannot see, so a test's reference
 * cblas call (or the runtime's, once OpenBLAS is loaded) would be reported
 * as racing with its own worker threads. Every test gets this; nothing
 * else is suppressed. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void) { return "race:libopenblas.so\n"; }

int test__run(const test_entry *tests, size_t n)
{
    int passed = 0, failed = 0, skipped = 0;
    for (size_t i = 0; i < n; i++) {
        test__s.failed = 0;
        test__s.skipped = 0;
        tests[i].fn();
        const char *verdict = test__s.failed ? "FAIL" : test__s.skipped ? "skip" : "ok";
        printf("%-4s %s\n", verdict, tests[i].name);
        fflush(stdout);
        if (test__s.failed)
            failed++;
        else if (test__s.skipped)
            skipped++;
        else
            passed++;
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    if (failed)
        return 1;
    return passed == 0 && skipped > 0 ? 77 : 0;
}
