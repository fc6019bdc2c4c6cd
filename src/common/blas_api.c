/* blas_api.c - loading OpenBLAS on demand (blas_api.h). */
#include "common/blas_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "common/common.h"

static synor__blas_api api;
static int loaded; /* 1 ok, -1 failed; written once under `once` */
static char why[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static int threads_wanted; /* under threads_lock; 0 = OpenBLAS's default */


static void load(void)
{
    /* the soname of Debian's libopenblas0 (any of its variants), else the
     * development link */
    static const char *const names[] = {"libopenblas.so.0", "libopenblas.so"};
    void *lib = NULL;
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
