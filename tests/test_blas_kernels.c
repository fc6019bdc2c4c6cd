/* test_blas_kernels.c - which OpenBLAS kernels the library asks for
 * (common/blas_api.c): a value of OPENBLAS_CORETYPE the user set is kept;
 * unset, the library asks for SkylakeX exactly on an AMD processor with
 * AVX-512 F/DQ/BW/VL enabled by the OS, and for nothing elsewhere (each
 * case in a child process: OpenBLAS reads the variable once, when loaded). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "common/blas_api.h"
#include "test.h"

/* What the rule says for this CPU, computed here from CPUID. */
static int amd_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    char v[13];
    if (!__get_cpuid(0, &a, &b, &c, &d) || a < 7)
        return 0;
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    v[12] = 0;
    if (strcmp(v, "AuthenticAMD") || !__get_cpuid(1, &a, &b, &c, &d) || !(c >> 27 & 1))
        return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    __cpuid_count(7, 0, a, b, c, d);
    return (lo & 0xe6) == 0xe6 && (b >> 16 & 1) && (b >> 17 & 1) && (b >> 30 & 1) && (b >> 31 & 1);
#else
    return 0;
#endif
}

/* In a child: set (or unset) the variable, load OpenBLAS, exit 0 if the
 * variable then reads `expect` (NULL: unset), 2 without OpenBLAS. */
static int child(const char *set, const char *expect)
{
    pid_t p = fork();
    if (p == 0) {
        if (set)
            setenv("OPENBLAS_CORETYPE", set, 1);
        else
            unsetenv("OPENBLAS_CORETYPE");
        if (!synor__blas())
            _exit(2);
        const char *v = getenv("OPENBLAS_CORETYPE");
        _exit(expect ? !(v && !strcmp(v, expect)) : v != NULL);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
}

TEST(a_value_the_user_set_is_kept)
{
    int r = child("Haswell", "Haswell");
    if (r == 2)
        TEST_SKIP("OpenBLAS cannot be loaded (libopenblas0)");
    ASSERT_EQ(r, 0);
}

TEST(unset_it_is_chosen_only_for_amd_avx512)
{
    int r = child(NULL, amd_avx512() ? "SkylakeX" : NULL);
    if (r == 2)
        TEST_SKIP("OpenBLAS cannot be loaded (libopenblas0)");
    ASSERT_EQ(r, 0);
}

TEST_MAIN(a_value_the_user_set_is_kept, unset_it_is_chosen_only_for_amd_avx512)
