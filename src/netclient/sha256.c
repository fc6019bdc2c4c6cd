/* sha256.c - SHA-256 through nettle: the checksums of blobs and results. */
#include <nettle/sha2.h>
#include <string.h>

#include "synor/netclient.h"

void synor_netclient_sha256(const void *data, size_t n, char out[65])
{
    struct sha256_ctx ctx;
    uint8_t d[SHA256_DIGEST_SIZE];
    static const char hex[] = "0123456789abcdef";
    sha256_init(&ctx);
    sha256_update(&ctx, n, n ? data : (const void *)"");
    sha256_digest(&ctx, sizeof d, d);
    for (size_t i = 0; i < sizeof d; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[64] = 0;
}
