/* profile_internal.h - shared between the profile parser, the catalog and
 * the JSON writer. Never installed. */
#ifndef SYNOR_PROFILE_INTERNAL_H
#define SYNOR_PROFILE_INTERNAL_H

#include "json/json.h"
#include "synor/profile.h"

/* Default fraction of peak reached by a tuned kernel (see caps.h). */
#define SYNOR__DEFAULT_EFFICIENCY 0.7

/* Parses profile object v (at field path `path`) into a newly allocated
 * profile owned by the caller (free with synor__profile_free). */
int synor__profile_parse(const synor__jdoc *d, const synor__jval *v, const char *path,
                         const char *origin, synor_profile **out);
void synor__profile_free(synor_profile *p);


/* Writes p as one element of a profile file's "profiles" array. */
void synor__profile_write(synor__jw *w, const synor_profile *p);

#endif
