/* api.h - helpers the coordinator's handler files share (api.c,
 * api_jobs.c, market.c). Never installed. */
#ifndef SYNOR_COORD_API_H
#define SYNOR_COORD_API_H

#include "coord/coord_internal.h"
#include "json/json.h"

/* "j-3" with prefix "j-" -> 3; 0 or -1 (not of that form). */
int synor__coord_parse_id(const char *s, const char *prefix, int64_t *out);
/* The request's body parsed as a JSON object; -1 with *err set (400). */
int synor__coord_parse_body(coord_req *r, synor__jdoc **doc, coord_resp *err);
/* A string member of at most max bytes; absent and not required: NULL. */
int synor__coord_str(const synor__jval *o, const char *key, int required, size_t max,
                     const char **out, coord_resp *err);
/* Unknown members refused (400 naming the member). */
int synor__coord_check_keys(const synor__jdoc *d, const synor__jval *o, const char *const *allowed,
                            coord_resp *err);
/* POST /v1/results: several results in one request (api_batch.c). */
coord_resp synor__coord_results(coord_req *r);
/* /v1/jobs and /v1/jobs/... (api_jobs.c). */
coord_resp synor__coord_jobs(coord_req *r);

#endif
