/* netclient_common.c - the parts of the network client that do not depend
 * on libcurl: defaults, answers turned into errors, blobs with their
 * SHA-256 checked, the monotonic clock. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "json/json.h"
#include "netclient/netclient_int.h"
#include "synor/netclient.h"

void synor_netclient_config_init(synor_netclient_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->magic = SYNOR__NETCLIENT_MAGIC;
    cfg->connect_timeout_s = 5;
    cfg->timeout_s = 60;
    cfg->retries = 4;
    cfg->backoff_s = 0.2;
    cfg->backoff_max_s = 5;
    cfg->max_response = (size_t)1 << 30;
}

void synor_net_response_free(synor_net_response *r)
{
    if (!r)
        return;
    synor__free(r->body);
    memset(r, 0, sizeof(*r));
}

int synor_net_response_check(const synor_net_response *r, const char *what)
{
    if (r->status >= 200 && r->status < 300)
        return 0;
    char text[300] = "";
    synor__jdoc *d = NULL;
    if (r->body && r->len && synor__json_parse(r->body, r->len, "answer", &d) == 0) {
        synor__jval *e = synor__json_get(synor__jdoc_root(d), "error");
        if (e && e->type == SYNOR__J_STRING)
            synor__strlcpy(text, e->u.str.s, sizeof text);
        synor__jdoc_free(d);
    } else if (r->body && r->len) {
        snprintf(text, sizeof text, "%.200s", r->body);
    }
    int code = SYNOR_EIO;
    if (r->status == 400 || r->status == 401 || r->status == 403 || r->status == 413)
        code = SYNOR_EINVAL;
    else if (r->status == 404)
        code = SYNOR_ENOENT;
    else if (r->status == 409)
        code = SYNOR_ESTATE;
    return synor__error(code, "%s: HTTP %ld%s%s", what, r->status, *text ? ": " : "", text);
}

int synor_netclient_is_sha256(const char *s)
{
    if (!s)
        return 0;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[64] == 0;
}

double synor_netclient_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int synor_netclient_blob_put(synor_netclient *c, const void *data, size_t n, char sha_out[65])
{
    char sha[65];
    synor_netclient_sha256(data, n, sha);
    synor_net_request r = {.method = "PUT", .path = "/v1/blobs", .body = data, .body_len = n,
                           .content_type = "application/octet-stream", .idempotent = 1};
    synor_net_response a;
    int rc = synor_netclient_request(c, &r, &a);
    if (rc)
        return rc;
    rc = synor_net_response_check(&a, "PUT /v1/blobs");
    synor__jdoc *d = NULL;
    if (!rc && synor__json_parse(a.body, a.len, "PUT /v1/blobs", &d) == 0) {
        synor__jval *s = synor__json_get(synor__jdoc_root(d), "sha256");
        if (!s || s->type != SYNOR__J_STRING || strcmp(s->u.str.s, sha))
            rc = synor__error(SYNOR_EIO, "PUT /v1/blobs: checksum mismatch: sent %s, the "
                                         "server stored %s",
                              sha, s && s->type == SYNOR__J_STRING ? s->u.str.s : "(none)");
        synor__jdoc_free(d);
    } else if (!rc) {
        rc = SYNOR_EPARSE; /* the parser's message stands */
    }
    synor_net_response_free(&a);
    if (!rc)
        memcpy(sha_out, sha, 65);
    return rc;
}

int synor_netclient_blob_get(synor_netclient *c, const char *sha, size_t expect_len,
                             void **data, size_t *n)
{
    if (!synor_netclient_is_sha256(sha))
        return synor__error(SYNOR_EINVAL, "blob '%s': not a SHA-256 (64 lowercase hex digits)",
                            sha ? sha : "(null)");
    char path[96];
    snprintf(path, sizeof path, "/v1/blobs/%s", sha);
    synor_net_request r = {.method = "GET", .path = path, .idempotent = 1};
    synor_net_response a;
    int rc = synor_netclient_request(c, &r, &a);
    if (rc)
        return rc;
    rc = synor_net_response_check(&a, path);
    if (!rc) {
        char got[65];
        synor_netclient_sha256(a.body, a.len, got);
        if (strcmp(got, sha))
            rc = synor__error(SYNOR_EPARSE, "GET %s: checksum mismatch: the %zu bytes received "
                                         "hash to %s",
                              path, a.len, got);
        else if (expect_len != SIZE_MAX && a.len != expect_len)
            rc = synor__error(SYNOR_EPARSE, "GET %s: %zu bytes received, %zu expected", path, a.len,
                              expect_len);
    }
    if (rc) {
        synor_net_response_free(&a);
        return rc;
    }
    *data = a.body; /* synor__malloc'd: free() works on it (no fault hook here) */
    *n = a.len;
    return 0;
}
