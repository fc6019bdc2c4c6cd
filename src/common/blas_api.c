/* blas_api.c - loading OpenBLAS on demand (blas_api.h). */
#include "common/blas_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "common/common.h"

static synor__blas_api api;
static int loaded; /* 1 ok, -1 failed; written once under `once` */
static char why[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static int threads_wanted; /* under threads_lock; 0 = OpenBLAS's default */


/* OpenBLAS 0.3.21 (Debian 12) does not know AMD's AVX-512 processors
 * (Zen 4, Zen 5): its run-time dispatch gives them the Haswell (AVX2)
 * kernels, half the speed of its SkylakeX (AVX-512) kernels on them - SGEMM
 * at 95 against 193 GFLOP/s on one core of the development VM. On an AMD
 * CPU with AVX-512 F/DQ/BW/VL that the OS saves (XCR0), the SkylakeX
 * kernels are asked for, before OpenBLAS is loaded (it reads
 * OPENBLAS_CORETYPE once, when loaded); a value the user set is kept.
 * Intel processors are left to OpenBLAS, which knows them. */
static void choose_kernels(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    if (getenv("OPENBLAS_CORETYPE") || !__get_cpuid(0, &a, &b, &c, &d) || a < 7)
        return;
    if (!(b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163)) /* "AuthenticAMD" */
        return;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE */
        return;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0xe6) != 0xe6) /* SSE, AVX, opmask, ZMM state */
        return;
    __cpuid_count(7, 0, a, b, c, d);
    unsigned need = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31); /* F DQ BW VL */
    if ((b & need) == need)
        setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
#endif
}

static void load(void)
{
    /* the soname of Debian's libopenblas0 (any of its variants), else the
     * development link */
    static const char *const names[] = {"libopenblas.so.0", "libopenblas.so"};
    void *lib = NULL;
    choose_kernels();
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(names) && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        const char *e = dlerror();
        synor__strlcpy(why, e ? e : "not found", sizeof why);
        loaded = -1;
        return;
    }
    if (synor__dlsym_into(lib, "cblas_sgemm", &api.sgemm) ||
        synor__dlsym_into(lib, "cblas_dgemm", &api.dgemm) ||
        synor__dlsym_into(lib, "cblas_strsm", &api.strsm) ||
        synor__dlsym_into(lib, "cblas_dtrsm", &api.dtrsm) ||
        synor__dlsym_into(lib, "cblas_ssyrk", &api.ssyrk) ||
        synor__dlsym_into(lib, "cblas_dsyrk", &api.dsyrk) ||
        synor__dlsym_into(lib, "spotrf_", &api.spotrf) ||
        synor__dlsym_into(lib, "dpotrf_", &api.dpotrf) ||
        synor__dlsym_into(lib, "openblas_set_num_threads", &api.set_num_threads) ||
        synor__dlsym_into(lib, "openblas_get_num_procs", &api.get_num_procs)) {
        const char *e = dlerror();
        synor__strlcpy(why, e ? e : "a symbol is missing", sizeof why);
        loaded = -1;
        return; /* the library stays loaded: dlclose of OpenBLAS is not safe */
    }
    pthread_mutex_lock(&threads_lock);
    if (threads_wanted > 0)
        api.set_num_threads(threads_wanted);
    loaded = 1;
    pthread_mutex_unlock(&threads_lock);
}

void synor__blas_set_threads(int n)
{
    pthread_mutex_lock(&threads_lock);
    threads_wanted = n;
    if (loaded > 0 && n > 0)
        api.set_num_threads(n);
    pthread_mutex_unlock(&threads_lock);
}

const synor__blas_api *synor__blas(void)
{
    pthread_once(&once, load);
    if (loaded < 0) {
        synor__error(SYNOR_ENOTSUP, "OpenBLAS cannot be loaded (%s): install libopenblas0 "
                                    "(scripts/setup.sh)", why);
        return NULL;
    }
    return &api;
}
