/* econ_internal.h - the economics data set as loaded (load.c, records.c),
 * read by the lookups (lookup.c), the pricing engine (price.c) and the
 * arbitrage (arbitrage.c). Never installed. */
#ifndef SYNOR_ECON_INTERNAL_H
#define SYNOR_ECON_INTERNAL_H

#include "common/common.h"
#include "json/json.h"
#include "synor/econ.h"

/* Everything one load produced; replaced whole by the next load. Strings
 * point into the parsed documents, which are kept; the arrays are blocks of
 * the set's arena. */
typedef struct synor__econ_set {
    synor__jdoc *docs[SYNOR_ECON_DATASET_COUNT];
    synor_econ_file files[SYNOR_ECON_DATASET_COUNT];
    int has[SYNOR_ECON_DATASET_COUNT];
    void *arena; /* chain of blocks, each starting with the next pointer */

    synor_econ_region *regions;
    size_t n_regions;
    synor_econ_elec *elec;
    size_t n_elec;
    synor_econ_hourly *elec_hourly;
    size_t n_elec_hourly;
    synor_econ_carbon *carbon;
    size_t n_carbon;
    synor_econ_hourly *carbon_hourly;
    size_t n_carbon_hourly;
    synor_econ_pue *pue;
    size_t n_pue;
    synor_econ_hardware *hw;
    size_t n_hw;
    synor_econ_instance *inst;
    size_t n_inst;
    synor_econ_latency *lat;
    size_t n_lat;
    synor_econ_egress *egress;
    size_t n_egress;
} synor__econ_set;

struct synor_econ {
    const synor_catalog *cat;
    synor__econ_set *set; /* never NULL after create */
};

/* An arena block of n zeroed bytes owned by s (NULL when out of memory). */
void *synor__econ_alloc(synor__econ_set *s, size_t n);
void synor__econ_set_free(synor__econ_set *s);

/* The records of one dataset's document (root already checked for the
 * common header) into s; d's file is s->files[ds]. Regions must already be
 * in s for the datasets that refer to them. */
int synor__econ_records(synor__econ_set *s, const synor_catalog *cat, synor_econ_dataset ds,
                        const synor__jdoc *d, const synor__jval *root);
/* The keys a dataset's file may have at top level beyond the common header. */
const char *const *synor__econ_dataset_keys(synor_econ_dataset ds);

/* Exact decimal ("0.0812") in a JSON string value at path to micro-units;
 * the message names file:line:col, path and value. */
int synor__econ_money(const synor__jdoc *d, const synor__jval *v, const char *path, int64_t *out);
/* "YYYY-MM-DDTHH:MM:SSZ" to seconds since the epoch. */
int synor__econ_time_parse(const char *s, int64_t *out);
/* A region of the set by id (NULL if none). */
const synor_econ_region *synor__econ_region_id(const synor__econ_set *s, const char *id);

#endif
