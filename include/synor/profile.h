/* synor/profile.h - the catalog of processor capability profiles (seed 001,
 * §1.3).
 *
 * A profile describes one real product (NVIDIA H100 SXM, Google TPU v5p,
 * Groq LPU, ...): its processor type, capabilities, the names a detected
 * device of that product reports, and the source of every figure. The
 * built-in profiles are JSON files under profiles/ in the source tree,
 * embedded in the library at build time; a user file adds profiles or
 * replaces built-in ones with the same id. The file format is documented in
 * docs/PROFILES.md.
 *
 * Lifecycle: synor_catalog_create, then any number of synor_catalog_load_*
 * calls, then lookups. A load is all-or-nothing: if any profile in a file is
 * invalid the catalog is left exactly as it was. Profile pointers returned by
 * lookups stay valid until the catalog is destroyed (a replaced profile is
 * kept alive, not freed). A catalog may be read from several threads at
 * once; loading must not run concurrently with anything else on it. */
#ifndef SYNOR_PROFILE_H
#define SYNOR_PROFILE_H

#include <stddef.h>

#include "synor/caps.h"
#include "synor/processor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A figure in the seed document that was wrong, and what we use instead. */
typedef struct synor_correction {
    const char *field; /* e.g. "compute.fp16.dense" */
    double seed_value; /* the seed's figure, in the profile file's units */
    double value;      /* the figure this profile uses */
    const char *note;  /* why, and the source */
} synor_correction;

/* Read-only once loaded. Strings are owned by the catalog. */
typedef struct synor_profile {
    const char *id;     /* unique key, e.g. "nvidia-h100-sxm" */
    const char *name;   /* product name */
    const char *vendor;
    synor_processor_type type;
    synor_caps caps;
    const char *const *match; /* substrings of detected device names */
    size_t n_match;
    /* Where the figures come from (datasheet, spec page, or "estimate: ..."). */
    const char *source_compute;
    const char *source_memory;
    const char *source_power;
    const char *source_links;   /* NULL when the file has no links section */
    const char *source_latency; /* NULL when the file has no latency section */
    const synor_correction *corrections;
    size_t n_corrections;
    const char *notes;  /* may be NULL */
    const char *origin; /* "builtin:FILE" or the path of the user file */
} synor_profile;

typedef struct synor_catalog synor_catalog;

/* Creates an empty catalog. */
int synor_catalog_create(synor_catalog **out);

/* Frees the catalog and every profile it ever held. NULL is a no-op. */
void synor_catalog_destroy(synor_catalog *cat);

/* Loads the profiles embedded in the library. */
int synor_catalog_load_builtin(synor_catalog *cat);

/* Loads a profile file; profiles with an id already present replace the old
 * ones, the others are added. Errors name the file, line:column and field.
 * Two profiles with the same id in one file are an error. */
int synor_catalog_load_file(synor_catalog *cat, const char *path);

/* As synor_catalog_load_file, from memory; name is used in messages. */
int synor_catalog_load_string(synor_catalog *cat, const char *text, size_t len,
                              const char *name);

size_t synor_catalog_count(const synor_catalog *cat);

/* Profiles in load order (built-ins sorted by id), i < count. */
const synor_profile *synor_catalog_at(const synor_catalog *cat, size_t i);

/* By exact id; NULL (and SYNOR_ENOENT in synor_errmsg) if absent. */
const synor_profile *synor_catalog_find(const synor_catalog *cat, const char *id);

/* The profile of the given kind one of whose match strings occurs in
 * device_name (case-insensitive); the longest matching string wins. NULL if
 * none matches (no error message is set: no match is a normal outcome). */
const synor_profile *synor_catalog_match(const synor_catalog *cat, synor_kind kind,
                                         const char *device_name);

/* Writes the profile as JSON in the profile file format (one element of
 * "profiles"). Returns a string the caller frees with free(), or NULL. */
char *synor_profile_to_json(const synor_profile *p, int pretty);

#ifdef __cplusplus
}
#endif
#endif
