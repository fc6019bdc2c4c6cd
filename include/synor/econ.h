/* synor/econ.h - economics data (electricity prices, carbon intensity, PUE,
 * hardware prices, cloud instances, network latency and egress), the pricing
 * engine and electricity/carbon arbitrage (seed 003, §1.1 and §1.2; issue 14).
 *
 * Data: the JSON files of data/economics/ (format in docs/ECONOMICS.md),
 * embedded into the library at build time, or a directory of such files.
 * A load is strict and all-or-nothing: any bad value (unknown dataset or
 * field, missing field, source key not in the file's "sources", unknown
 * region or profile id, a malformed or negative amount) fails the whole load
 * with a message naming file:line:column, the field and the value, and the
 * set of data already loaded stays as it was.
 *
 * Money: every amount is int64 micro-USD (10^-6 USD, the market's tick);
 * decimal strings in the files are parsed exactly (at most 6 decimals),
 * never through floating point. Rates keep their unit: an electricity price
 * is micro-USD per kWh, an hourly market price micro-USD per MWh, egress
 * micro-USD per GB. Products are formed in 128-bit integers and rounded
 * once, half up, to the micro-dollar; the limits under which no result can
 * overflow are the SYNOR_ECON_MAX_* below (docs/PRICING.md).
 *
 * Staleness: each file states as_of (the newest period its figures describe)
 * and max_age_days; it is stale on a day when day - as_of > max_age_days.
 * Days are counted from 1970-01-01 (UTC calendar dates, only for data ages).
 *
 * Threads: an econ set may be read from several threads at once; loading
 * must not run concurrently with anything else on it. */
#ifndef SYNOR_ECON_H
#define SYNOR_ECON_H

#include <stddef.h>
#include <stdint.h>

#include "synor/market.h"
#include "synor/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits (inputs beyond them are SYNOR_ERANGE, never a wrong sum) ---- */
#define SYNOR_ECON_MAX_MONEY 1000000000000000LL   /* 10^9 USD, in micro-USD: any amount in a file */
#define SYNOR_ECON_MAX_SECONDS (3600LL * 1000000) /* a job of up to 10^6 hours */
#define SYNOR_ECON_MAX_MILLIWATTS 100000000LL     /* 100 kW per device */
#define SYNOR_ECON_MAX_PUE_MILLI 5000             /* PUE 5.000 */
#define SYNOR_ECON_MAX_MILLI_GB 1000000000000LL   /* 10^9 GB moved */
#define SYNOR_ECON_MAX_LIFE_YEARS 50

/* ---- data sets ---- */
typedef enum synor_econ_dataset {
    SYNOR_ECON_REGIONS,
    SYNOR_ECON_ELECTRICITY,
    SYNOR_ECON_CARBON,
    SYNOR_ECON_PUE,
    SYNOR_ECON_HARDWARE,
    SYNOR_ECON_CLOUD,
    SYNOR_ECON_NETWORK,
    SYNOR_ECON_DATASET_COUNT
} synor_econ_dataset;

/* "regions", "electricity", ...; NULL for a value out of range. */
const char *synor_econ_dataset_name(synor_econ_dataset d);

typedef struct synor_econ_source {
    const char *key, *title, *publisher, *url, *published, *retrieved, *licence;
} synor_econ_source;

/* One loaded file. Strings are owned by the econ set. */
typedef struct synor_econ_file {
    synor_econ_dataset dataset;
    const char *name; /* the file's name in messages: "builtin:carbon.json" or its path */
    int version;
    const char *as_of; /* YYYY-MM-DD */
    int64_t as_of_day; /* days since 1970-01-01 */
    int64_t max_age_days;
    const char *notes;
    const synor_econ_source *sources;
    size_t n_sources;
} synor_econ_file;

typedef struct synor_econ_region {
    const char *id; /* "US-VA", "DE" */
    const char *name, *country, *grid;
    double lat, lon;
    const char *const *cloud; /* "aws:us-east-1", ... */
    size_t n_cloud;
} synor_econ_region;

typedef struct synor_econ_elec {
    const char *region;
    int64_t industrial, commercial; /* micro-USD per kWh; -1 when the source has none */
    const char *period, *source;
} synor_econ_elec;

/* An hourly profile: electricity (micro-USD per MWh in values) or carbon
 * (milli-gCO2 per kWh in values). */
typedef struct synor_econ_hourly {
    const char *market, *region;
    const char *week_start; /* as written */
    int64_t start_unix;     /* seconds since the epoch, UTC */
    const int64_t *values;
    size_t n;
    const char *source;
} synor_econ_hourly;

typedef struct synor_econ_carbon {
    const char *region;
    double gco2_per_kwh;
    double renewable_share_pct; /* -1 when not given */
    const char *period, *source;
} synor_econ_carbon;

typedef struct synor_econ_pue {
    const char *site, *climate;
    int pue_milli; /* PUE x 1000 (1.10 -> 1100) */
    const char *period, *source;
} synor_econ_pue;

typedef struct synor_econ_hardware {
    const char *profile;
    int64_t list_price; /* micro-USD */
    int service_life_years;
    const char *price_kind, *period, *source;
} synor_econ_hardware;

typedef struct synor_econ_device_count {
    const char *profile;
    int count;
} synor_econ_device_count;

typedef struct synor_econ_instance {
    const char *provider, *type, *region, *grid_region;
    const synor_econ_device_count *devices;
    size_t n_devices;
    int vcpus;
    double memory_gib;
    int64_t on_demand, spot; /* micro-USD per hour; spot -1 when none */
    const char *period, *source;
} synor_econ_instance;

typedef struct synor_econ_latency {
    const char *from, *to;
    double rtt_ms;
    const char *source;
} synor_econ_latency;

typedef struct synor_econ_egress {
    const char *provider, *scope; /* scope: internet, inter-region, intra-region */
    int64_t first_gb_tier;        /* micro-USD per GB */
    const char *period, *source;
} synor_econ_egress;

typedef struct synor_econ synor_econ;

/* An empty set; cat (kept, not copied: it must outlive the set) resolves the
 * profile ids of hardware.json and cloud.json and gives device power. */
int synor_econ_create(const synor_catalog *cat, synor_econ **out);
void synor_econ_destroy(synor_econ *e);

/* Replace everything loaded with the built-in files (the JSON files of
 * data/economics at build time; there may be none), with the *.json files of dir, or with
 * n texts given in memory (names used in messages). A set of files may hold
 * any subset of the datasets, each at most once; a file that refers to
 * regions needs regions.json in the same set. All-or-nothing. */
int synor_econ_load_builtin(synor_econ *e);
int synor_econ_load_dir(synor_econ *e, const char *dir);
int synor_econ_load_texts(synor_econ *e, size_t n, const char *const *names,
                          const char *const *texts, const size_t *lens);
/* Number of built-in files (0 when data/economics was empty at build time). */
size_t synor_econ_builtin_count(void);

/* The loaded file of dataset d; NULL (and SYNOR_ENOENT in synor_errmsg)
 * when none is loaded. */
const synor_econ_file *synor_econ_file_of(const synor_econ *e, synor_econ_dataset d);

/* ---- dates and staleness ---- */
/* "YYYY-MM-DD" (a real calendar date) to days since 1970-01-01. */
int synor_econ_date_parse(const char *s, int64_t *day);
/* Today's UTC date as days since 1970-01-01. */
int64_t synor_econ_today(void);
/* day - as_of in days. */
int64_t synor_econ_file_age(const synor_econ_file *f, int64_t day);
/* 1 when the file is stale on day (age > max_age_days), else 0. */
int synor_econ_file_is_stale(const synor_econ_file *f, int64_t day);

/* ---- fixed point ---- */
/* An amount as a decimal string ("0.0812", "30000.00") to micro-units:
 * digits, an optional '.' and at most 6 more digits, no sign, no exponent,
 * at most SYNOR_ECON_MAX_MONEY. SYNOR_EINVAL or SYNOR_ERANGE otherwise. */
int synor_econ_money_parse(const char *s, int64_t *micro);
/* micro-units as "-1.234567" with exactly `decimals` (0..6) decimals,
 * rounded half away from zero. */
void synor_econ_money_format(int64_t micro, int decimals, char *buf, size_t n);
/* round_half_up(a * b / d) for a, b >= 0 and d > 0 in 128-bit arithmetic;
 * SYNOR_ERANGE when the result exceeds INT64_MAX. */
int synor_econ_muldiv(int64_t a, int64_t b, int64_t d, int64_t *out);

/* ---- lookups (NULL when absent; no error message is set) ---- */
size_t synor_econ_region_count(const synor_econ *e);
const synor_econ_region *synor_econ_region_at(const synor_econ *e, size_t i);
/* By id ("US-VA"), or by cloud region "provider:name" ("aws:us-east-1"). */
const synor_econ_region *synor_econ_region_find(const synor_econ *e, const char *name);
const synor_econ_elec *synor_econ_elec_find(const synor_econ *e, const char *region);
const synor_econ_carbon *synor_econ_carbon_find(const synor_econ *e, const char *region);
/* The PUE of a site type ("hyperscale", ...) in a climate: the exact climate
 * if listed, else "any". */
const synor_econ_pue *synor_econ_pue_find(const synor_econ *e, const char *site,
                                          const char *climate);
const synor_econ_hardware *synor_econ_hardware_find(const synor_econ *e, const char *profile);
/* The hourly profile of a region: carbon = 0 electricity, 1 carbon. */
const synor_econ_hourly *synor_econ_hourly_find(const synor_econ *e, const char *region,
                                                int carbon);
const synor_econ_egress *synor_econ_egress_find(const synor_econ *e, const char *provider,
                                                const char *scope);
/* The smallest measured RTT between any names of two regions (their ids or
 * their cloud regions); NULL when no pair is listed. */
const synor_econ_latency *synor_econ_latency_find(const synor_econ *e, const char *region_a,
                                                  const char *region_b);
size_t synor_econ_instance_count(const synor_econ *e);
const synor_econ_instance *synor_econ_instance_at(const synor_econ *e, size_t i);
/* A record's source in its file (NULL if the key is not there). */
const synor_econ_source *synor_econ_source_find(const synor_econ_file *f, const char *key);

/* ---- the demand multiplier from a live order book ---- */
typedef struct synor_econ_demand {
    uint32_t multiplier_bp;   /* 5000..20000 (0.5x to 2x) */
    int64_t bid_qty, ask_qty; /* device-hours counted near the mid */
    int64_t mid;              /* ticks; 0 when the book has not both sides */
    int has_book;             /* 0: resource not in the market (multiplier 1x) */
} synor_econ_demand;
/* The book of resource key in m: bid and ask quantity at prices within
 * SYNOR_ECON_DEMAND_BAND_BP of the mid (all levels of a one-sided book);
 * multiplier = clamp(10000 x bid / ask, 5000, 20000) bp; an empty book or
 * an unknown resource gives 10000 (docs/PRICING.md). */
#define SYNOR_ECON_DEMAND_BAND_BP 1000
int synor_econ_demand_get(const synor_market *m, const char *resource, synor_econ_demand *out);

/* ---- the pricing engine ---- */
typedef enum synor_econ_tariff {
    SYNOR_TARIFF_INDUSTRIAL,
    SYNOR_TARIFF_COMMERCIAL
} synor_econ_tariff;

typedef struct synor_price_request {
    const char *profile;      /* catalog id */
    const char *region;       /* region id or cloud region */
    int64_t seconds;          /* 1..SYNOR_ECON_MAX_SECONDS */
    const char *site;         /* default "hyperscale" */
    const char *climate;      /* default "any" */
    synor_econ_tariff tariff; /* default industrial */
    uint32_t
        utilisation_bp; /* expected utilisation over the service life, 1..10000; default 10000 */
    int64_t network_milli_gb;    /* data moved, 10^-3 GB; 0 = no network line */
    const char *egress_provider; /* default "aws" */
    const char *egress_scope;    /* default "internet" */
    uint32_t demand_bp;          /* the demand multiplier (synor_econ_demand_get); default 10000 */
    uint32_t fee_bp; /* protocol fee on the base cost; default SYNOR_ECON_DEFAULT_FEE_BP */
} synor_price_request;
#define SYNOR_ECON_DEFAULT_FEE_BP 500 /* 5%, the low end of the seed's 5-10% */
void synor_price_request_init(synor_price_request *r);

/* The breakdown; every line rounded half up to the micro-dollar, the total
 * the sum of the lines (so each can be checked by hand). */
typedef struct synor_price_quote {
    const synor_econ_region *region;
    const synor_econ_elec *elec; /* the record used */
    const synor_econ_pue *pue;
    const synor_econ_hardware *hw;
    const synor_econ_egress *egress; /* NULL without network */
    int64_t milliwatts;              /* device power (profile peak_watts) */
    int64_t price_per_kwh;           /* micro-USD/kWh, the chosen tariff */
    int64_t energy_mwh;              /* milli-kWh (Wh) drawn from the grid, rounded */
    int64_t energy, depreciation, network, base;
    uint32_t demand_bp;
    int64_t demand_adjustment; /* base x (demand - 1), rounded */
    uint32_t fee_bp;
    int64_t fee;   /* base x fee, rounded */
    int64_t total; /* base + demand_adjustment + fee */
} synor_price_quote;

/* Prices a request on e's data (electricity, pue, hardware; network with
 * network_milli_gb > 0). SYNOR_ENOENT naming what is missing, SYNOR_EINVAL
 * for a bad request, SYNOR_ERANGE beyond the limits. */
int synor_econ_price(const synor_econ *e, const synor_price_request *r, synor_price_quote *out);

/* ---- arbitrage in space and time ---- */
typedef enum synor_rank_by { SYNOR_RANK_COST, SYNOR_RANK_CARBON } synor_rank_by;

typedef struct synor_rank_request {
    synor_price_request price; /* profile, seconds, site, tariff, utilisation, fee,
                                  network GB and egress provider; region ignored */
    const char *from;          /* the user's region (id or cloud region), or NULL */
    int has_latlon;            /* the user's position instead of from */
    double lat, lon;
    double max_latency_ms;    /* 0 = no limit */
    int64_t deadline_seconds; /* 0 = none; else pick a start window */
    int64_t now_unix;         /* "now" for the window (mapped onto the profile's week) */
    synor_rank_by by;
    const char *const *regions; /* candidates (ids); NULL = every region with a price */
    size_t n_regions;
} synor_rank_request;
void synor_rank_request_init(synor_rank_request *r);

/* Fibre: 200 km per ms (light in glass, c / 1.5), routes 1.5x the great
 * circle; used when no measured RTT is listed. */
#define SYNOR_ECON_FIBRE_KM_PER_MS 200.0
#define SYNOR_ECON_ROUTE_FACTOR 1.5

typedef struct synor_rank_entry {
    const synor_econ_region *region;
    int ok; /* 0: excluded (reason says why) */
    char reason[160];
    synor_price_quote quote; /* cost at the annual tariff, demand 1x */
    double gco2;             /* the job's emissions at the annual intensity; -1 unknown */
    double latency_ms;       /* -1 when the user's position is not given */
    int latency_estimated;   /* from distance, not measured */
    /* with a deadline and an hourly profile of the ranked kind: */
    int has_window;
    int64_t window_offset_s; /* best start, seconds after now (whole hours) */
    int64_t window_start_unix;
    int64_t now_cost, best_cost; /* by COST: the job's energy at the hourly wholesale
                                    prices (micro-USD), started now and in the best window */
    double now_gco2, best_gco2;  /* by CARBON: the job's gCO2 at the hourly intensities */
} synor_rank_entry;

/* Ranks the candidate regions: those that pass the latency limit first,
 * best first by total cost (by = COST) or by the job's gCO2 (CARBON), ties
 * by region id; excluded regions last with their reason. *out is freed with
 * free(). */
int synor_econ_rank(const synor_econ *e, const synor_rank_request *r, synor_rank_entry **out,
                    size_t *n);

/* The Carbon Aware SDK's best window on an hourly profile (values[n], a
 * typical week repeated: hour 0 at start_unix, "now" mapped onto it by
 * (now - start) mod n hours): the start, in whole hours after now and at
 * most deadline - job, minimising the sum over the job's hours of value x
 * seconds in that hour (the last, partial hour counts its seconds); ties go
 * to the earliest. *now_sum is that sum starting now, *best_sum at the best
 * start. SYNOR_EINVAL when the job does not fit before the deadline or the
 * profile is empty, SYNOR_ERANGE when the deadline is longer than the
 * profile or a sum exceeds int64. */
int synor_econ_best_window(const synor_econ_hourly *h, int64_t now_unix, int64_t job_seconds,
                           int64_t deadline_seconds, int64_t *best_offset_s, int64_t *now_sum,
                           int64_t *best_sum);

/* ---- the cost comparison (seed 003 §1.4; docs/ECONOMICS.md) ---- */
#define SYNOR_COMPARE_PROVIDERS 3 /* aws, gcp, azure */
/* "aws", "gcp", "azure" for 0..2; NULL beyond. */
const char *synor_compare_provider_name(size_t i);

typedef struct synor_compare_request {
    /* the device (profile), the seconds each device runs (price.seconds),
     * the network's site (default "colocation"), tariff, utilisation,
     * fee; price.region is ignored (the network's cheapest region is found) */
    synor_price_request price;
    int count;                    /* devices, 1..10^6 */
    const char *user_region;      /* NULL: no region part */
    const char *consumer_profile; /* NULL: no consumer part */
    synor_dtype dtype;            /* scales the work onto the consumer device; default fp16 */
    int64_t market_ask;           /* micro-USD per device-hour from a live book; 0 = none */
} synor_compare_request;
void synor_compare_request_init(synor_compare_request *r);

typedef struct synor_compare_cloud {
    const synor_econ_instance *on_demand, *spot; /* the cheapest for the job; NULL if none */
    int64_t on_demand_cost, spot_cost;           /* micro-USD for the job */
    int64_t on_demand_instances, spot_instances;
    /* the job's share of those instances: their price x seconds x the
     * devices needed / the devices an instance holds (what the job would
     * cost if the cloud rented single devices at that rate) */
    int64_t on_demand_share, spot_share;
} synor_compare_cloud;

typedef struct synor_compare_result {
    synor_compare_cloud cloud[SYNOR_COMPARE_PROVIDERS];
    int best_cloud, best_spot_cloud; /* indexes; best_spot_cloud -1 when no spot price */
    const synor_econ_region *network_region; /* the cheapest region for the device */
    synor_price_quote network;               /* there, at the request's site, with the fee */
    const char *cloud_region;                /* the best on-demand instance's grid region */
    int64_t own_cost_hyperscale, own_cost_site; /* there, no fee */
    synor_price_quote network_user_region;      /* with has_user_region */
    synor_price_quote consumer_quote;           /* with has_consumer */
    int64_t consumer_seconds;                   /* per device */
    int has_user_region, has_consumer, has_spot, has_market;
    int64_t market_cost; /* the job's device-hours at market_ask */
    /* the breakdown (micro-USD for the job, on the best cloud's on-demand
     * share; they overlap, see compare.c) */
    int64_t margin, pue, spot, region, consumer;
    int64_t pay;       /* the network's cost: its cheapest region, or the consumer device */
    int64_t saving_bp; /* (C - pay) / C in basis points, C the best on-demand cost */
    int64_t saving_share_bp; /* the same against the best cloud's on-demand share */
} synor_compare_result;

/* Compares the job with the clouds of cloud.json (instances holding the
 * profile, whole instances, per-second billing). SYNOR_ENOENT when no
 * instance or region can price the device, SYNOR_ERANGE beyond the
 * limits. */
int synor_econ_compare(const synor_econ *e, const synor_compare_request *r,
                       synor_compare_result *out);

#ifdef __cplusplus
}
#endif
#endif
