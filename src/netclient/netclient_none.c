/* netclient_none.c - the network client in a library built without libcurl
 * or nettle: every call that would need them fails, naming what is missing. */
#include <string.h>

#include "common/common.h"
#include "synor/netclient.h"

int synor_netclient_create(const synor_netclient_config *cfg, synor_netclient **out)
{
    (void)cfg, (void)out;
    return synor__error(SYNOR_ENOTSUP, "netclient: synor was built without libcurl and nettle "
                                       "(install libcurl4-openssl-dev and nettle-dev, rebuild)");
}

void synor_netclient_destroy(synor_netclient *c)
{
    (void)c;
}

int synor_netclient_request(synor_netclient *c, const synor_net_request *r,
                            synor_net_response *out)
{
    (void)c, (void)r;
    if (out)
        memset(out, 0, sizeof(*out));
    return synor__error(SYNOR_ENOTSUP, "netclient: synor was built without libcurl");
}

void synor_netclient_cancel(synor_netclient *c)
{
    (void)c;
}

void synor_netclient_uncancel(synor_netclient *c)
{
    (void)c;
}

/* No SHA-256 without nettle: all zeros (nothing can be sent anyway). */
void synor_netclient_sha256(const void *data, size_t n, char out[65])
{
    (void)data, (void)n;
    memset(out, '0', 64);
    out[64] = 0;
}

int synor_netclient_available(void)
{
    return 0;
}
