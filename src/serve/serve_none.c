/* serve_none.c - synor serve in a build without libmicrohttpd: every
 * server call says what is missing (CMakeLists.txt compiles this file
 * instead of the server when pkg-config does not find the library). */
#include "common/common.h"
#include "synor/serve.h"

int synor_server_create(synor_llm *m, synor_runtime *rt, const synor_server_opts *opts,
                        synor_server **out)
{
    (void)m;
    (void)rt;
    (void)opts;
    if (out)
        *out = NULL;
    return synor__error(SYNOR_ENOTSUP, "serve: this synor was built without libmicrohttpd "
                                       "(install libmicrohttpd-dev, e.g. scripts/setup.sh "
                                       "--deps-only, and build again)");
}

int synor_server_start(synor_server *s)
{
    (void)s;
    return synor__error(SYNOR_ENOTSUP, "serve: built without libmicrohttpd");
}

unsigned synor_server_port(const synor_server *s)
{
    (void)s;
    return 0;
}

void synor_server_stop(synor_server *s)
{
    (void)s;
}

void synor_server_destroy(synor_server *s)
{
    (void)s;
}
