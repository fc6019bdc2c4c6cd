/* synor/registry.h - the device registry: every device the system knows,
 * local or remote, real or simulated, with its owner, location, status,
 * utilization, reputation and availability schedule (seed 001 commit;
 * Part 2 §3.2).
 *
 * A registry is safe to use from several threads: lookups share a read lock,
 * changes take a write lock. Lookups return snapshots (synor_registry_entry
 * values holding a reference on the device), so an entry stays usable after
 * the device is unregistered or updated; release entries when done.
 * Device ids are unique: registering an id that exists is SYNOR_EEXIST. A
 * failed call leaves the registry unchanged. */
#ifndef SYNOR_REGISTRY_H
#define SYNOR_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "synor/device.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum synor_device_status {
    SYNOR_STATUS_ONLINE,   /* accepting work */
    SYNOR_STATUS_BUSY,     /* online, fully loaded */
    SYNOR_STATUS_DRAINING, /* finishing its work, accepting none */
    SYNOR_STATUS_OFFLINE,
    SYNOR_STATUS_COUNT
} synor_device_status;

const char *synor_device_status_name(synor_device_status s);
int synor_device_status_from_name(const char *name, synor_device_status *out);

/* When a contributed device may be used. */
typedef enum synor_avail_kind {
    SYNOR_AVAIL_ALWAYS,
    SYNOR_AVAIL_UTC_WINDOWS,   /* only inside the listed UTC hour windows */
    SYNOR_AVAIL_IDLE_ONLY,     /* only while its host is idle */
    SYNOR_AVAIL_CHARGING_ONLY, /* only while charging, battery >= minimum */
    SYNOR_AVAIL_COUNT
} synor_avail_kind;

#define SYNOR_AVAIL_MAX_WINDOWS 8

typedef struct synor_hour_window {
    uint8_t start_hour; /* 0..23, inclusive */
    uint8_t end_hour;   /* 1..24, exclusive; start > end wraps past midnight */
} synor_hour_window;

typedef struct synor_availability {
    synor_avail_kind kind;
    unsigned n_windows; /* SYNOR_AVAIL_UTC_WINDOWS */
    synor_hour_window windows[SYNOR_AVAIL_MAX_WINDOWS];
    unsigned min_battery_pct; /* SYNOR_AVAIL_CHARGING_ONLY, 0..100 */
} synor_availability;

/* The state of a device's host that availability is judged against. */
typedef struct synor_host_state {
    unsigned utc_hour;    /* 0..23 */
    int host_idle;        /* no interactive use */
    int charging;         /* on external power */
    unsigned battery_pct; /* 0..100 */
} synor_host_state;

const char *synor_avail_kind_name(synor_avail_kind k);
/* Reads this machine's state: the UTC hour (wall clock: schedules are about
 * the time of day), idle = CPU busy below 10% over about 100 ms, and battery
 * level and charging from /sys/class/power_supply (a machine without a
 * battery counts as charging at 100%). */
int synor_host_state_read(synor_host_state *out);
/* Checks a schedule: windows well-formed, battery 0..100. */
int synor_availability_validate(const synor_availability *a);
/* 1 if the schedule allows use in that host state, else 0. */
int synor_availability_allows(const synor_availability *a, const synor_host_state *s);
/* Parses "always", "idle", "charging:MIN" or "utc:S-E[,S-E...]". */
int synor_availability_parse(const char *text, synor_availability *out);
/* Formats a schedule in the syntax above. */
int synor_availability_format(const synor_availability *a, char *buf, size_t n);

#define SYNOR_REGISTRY_ID_MAX 64
#define SYNOR_REGISTRY_TEXT_MAX 64

/* What the registry records about a device besides the device itself. */
typedef struct synor_registry_info {
    char owner[SYNOR_REGISTRY_TEXT_MAX];
    char region[SYNOR_REGISTRY_TEXT_MAX];   /* e.g. "eu-west" */
    char location[SYNOR_REGISTRY_TEXT_MAX]; /* free text: site, host, city */
    synor_device_status status;
    double utilization;  /* 0..1, as last reported */
    int reputation;      /* 0..100 */
    synor_availability availability;
} synor_registry_info;

/* Defaults: status online, utilization 0, reputation 50, always available,
 * empty owner/region/location. */
void synor_registry_info_init(synor_registry_info *info);

/* A snapshot of one registered device. */
typedef struct synor_registry_entry {
    char id[SYNOR_REGISTRY_ID_MAX];
    synor_device *device; /* a reference owned by this entry */
    synor_registry_info info;
    uint64_t version;     /* increases with every update of this entry */
} synor_registry_entry;

/* Drops the entry's device reference. */
void synor_registry_entry_release(synor_registry_entry *e);
/* Releases n entries and frees the array from synor_registry_query. */
void synor_registry_entries_free(synor_registry_entry *e, size_t n);

typedef struct synor_registry synor_registry;

int synor_registry_create(synor_registry **out);
/* Drops the registry's references; entries held by callers stay valid. */
void synor_registry_destroy(synor_registry *reg);

/* Registers dev under id (1..63 printable characters, no spaces). The
 * registry takes its own reference. info may be NULL (defaults). */
int synor_registry_add(synor_registry *reg, const char *id, synor_device *dev,
                       const synor_registry_info *info);

/* Fields of an update; set the bits of what to change. */
enum {
    SYNOR_UPDATE_STATUS = 1 << 0,
    SYNOR_UPDATE_UTILIZATION = 1 << 1,
    SYNOR_UPDATE_REPUTATION = 1 << 2,
    SYNOR_UPDATE_AVAILABILITY = 1 << 3,
    SYNOR_UPDATE_OWNER = 1 << 4,
    SYNOR_UPDATE_REGION = 1 << 5,
    SYNOR_UPDATE_LOCATION = 1 << 6
};

/* Changes the fields named in `fields` to their values in info. Values are
 * validated first; nothing changes if any is invalid. */
int synor_registry_update(synor_registry *reg, const char *id, unsigned fields,
                          const synor_registry_info *info);

/* Unregisters a device; SYNOR_ENOENT if absent. */
int synor_registry_remove(synor_registry *reg, const char *id);

/* A snapshot of one entry; release it with synor_registry_entry_release. */
int synor_registry_get(synor_registry *reg, const char *id, synor_registry_entry *out);

size_t synor_registry_count(synor_registry *reg);

/* A query: every criterion left at its zero value matches everything. */
typedef struct synor_registry_query {
    int by_kind;                  /* match only `kind` */
    synor_kind kind;
    int by_op;                    /* must support `op` in `op_dtype` */
    synor_op_type op;
    synor_dtype op_dtype;
    uint64_t min_memory;          /* bytes of device memory */
    int by_throughput;            /* peak(dtype) >= min_throughput ops/s */
    synor_dtype throughput_dtype;
    double min_throughput;
    const char *region;           /* exact region, or NULL */
    const char *owner;            /* exact owner, or NULL */
    unsigned status_mask;         /* bit (1 << status); 0 = any */
    int min_reputation;
    double max_utilization;       /* 0 = no limit */
    const synor_host_state *available_in; /* schedule must allow; NULL = skip */
    int presence;                 /* 0: any; 1: real devices only;
                                     2: simulated devices only */
} synor_registry_query;

/* The matching entries, in registration order. *out is NULL when none
 * match; free with synor_registry_entries_free. */
int synor_registry_query_run(synor_registry *reg, const synor_registry_query *q,
                             synor_registry_entry **out, size_t *n);

/* Loads an inventory file (format synor-inventory/1, docs/DEVICES.md): a
 * list of devices, each a profile of the catalog with owner, region,
 * location, status, utilization, reputation, availability and a count. The
 * devices are simulated (they are not this machine's). All or nothing: any
 * error - in the file (named with file:line:column and field) or an id that
 * is already registered - leaves the registry unchanged. */
int synor_registry_load_inventory(synor_registry *reg, const synor_catalog *cat,
                                  const char *path);
/* As above, from memory; name is used in messages. */
int synor_registry_load_inventory_string(synor_registry *reg, const synor_catalog *cat,
                                         const char *text, size_t len, const char *name);

#ifdef __cplusplus
}
#endif
#endif
