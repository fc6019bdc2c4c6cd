/* synor/fabric.h - a fabric: the processors a plan may use and the links
 * between their memories (seed 001, Part 4), read from a fabric file
 * (format synor-fabric/1, docs/PLANNING.md).
 *
 * A fabric lists nodes (machines), devices (a profile x a count, on a node,
 * with a price per device-hour), and links between memory spaces. Each node
 * has a host memory space; CPUs and unified-memory devices use it, every
 * other device has its own. Devices in a fabric are simulated devices built
 * from profiles: they exist on paper, and everything that prints them says
 * so.
 *
 * A path between two memory spaces is one of: the same space (free), a
 * direct link (unified, nvlink, pcie-p2p, or the device's host link), two
 * hops through the host (cpu-mediated), or host links plus the network
 * between nodes. Host links not given in the file come from the profile's
 * PCIe generation and lanes. Moving b bytes over a path costs the sum over
 * its hops of latency + b / bandwidth.
 *
 * Money is never floating point: prices are integer micro-units of the
 * fabric's currency per device-hour. */
#ifndef SYNOR_FABRIC_H
#define SYNOR_FABRIC_H

#include <stddef.h>
#include <stdint.h>

#include "synor/device.h"
#include "synor/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum synor_link_kind {
    SYNOR_LINK_SAME,         /* same memory: no transfer */
    SYNOR_LINK_UNIFIED,      /* shared physical memory (cache coherence only) */
    SYNOR_LINK_NVLINK,       /* GPU-to-GPU fabric (NVLink, Infinity Fabric, ICI) */
    SYNOR_LINK_PCIE_P2P,     /* PCIe peer-to-peer between two devices */
    SYNOR_LINK_PCIE,         /* device <-> its host's memory */
    SYNOR_LINK_CPU_MEDIATED, /* a path: device -> host -> device */
    SYNOR_LINK_NETWORK,      /* between nodes */
    SYNOR_LINK_KIND_COUNT
} synor_link_kind;

const char *synor_link_kind_name(synor_link_kind k);
int synor_link_kind_from_name(const char *name, synor_link_kind *out);

/* One link between two memory spaces (full duplex; each direction has the
 * bandwidth). */
typedef struct synor_link {
    const char *name;     /* "h100<->host", ... */
    synor_link_kind kind;
    size_t a, b;          /* memory spaces */
    double bandwidth;     /* bytes/s per direction */
    double latency;       /* seconds */
    int from_profile;     /* 1: not in the file, derived from the profile */
} synor_link;

typedef struct synor_fabric_device {
    const char *name;     /* unique in the fabric, e.g. "h100" or "h100.1" */
    synor_device *dev;    /* simulated, built from the profile */
    const synor_profile *profile;
    size_t node;
    size_t space;         /* memory space index */
    int64_t price_micro;  /* per device-hour, micro-units of currency */
    /* > 0: the device runs on its node's host cores (an OpenCL CPU device
     * such as PoCL: synor_fabric_set_host_sharing); 0: a device of its own. */
    double share_cpu_slowdown;  /* the node's CPU devices' time factor while it runs */
    double share_slowdown;      /* its own time factor with every CPU device busy */
    /* A shared device's placement estimate over its cost-model time (0:
     * 1): what a runtime that places by the median kernel time, without
     * the dispatch, expects of it (synor_fabric_set_share_place_scale). */
    double share_place_scale;
    /* A shared device's fabric: how often the runtime's rebalancer may run
     * (seconds; SYNOR_FABRIC_SHARE_REBALANCE_S when sharing is declared,
     * 0: at every event; synor_fabric_set_share_rebalance). */
    double share_rebalance_s;
} synor_fabric_device;

/* The runtime's default rebalance period (synor_runtime_config.rebalance_us
 * 1000): what a shared device's simulation assumes unless told. */
#define SYNOR_FABRIC_SHARE_REBALANCE_S 1e-3

#define SYNOR_PATH_MAX_HOPS 4

/* The route between two memory spaces. */
typedef struct synor_path {
    synor_link_kind kind;              /* same, a link's kind, cpu-mediated, network */
    size_t n_hops;
    size_t hops[SYNOR_PATH_MAX_HOPS];  /* link indexes, in order */
} synor_path;

typedef struct synor_fabric synor_fabric;

/* Loads a fabric; profiles are looked up in cat, which must outlive the
 * fabric. Errors name file:line:column and the field. */
int synor_fabric_load_file(const synor_catalog *cat, const char *path, synor_fabric **out);
int synor_fabric_load_string(const synor_catalog *cat, const char *text, size_t len,
                             const char *name, synor_fabric **out);
/* A built-in fabric by name ("seed", "gpu-only", ...), from fabrics/. */
int synor_fabric_load_builtin(const synor_catalog *cat, const char *name, synor_fabric **out);
/* A file when spec contains '/' or ends in ".json", else a built-in name. */
int synor_fabric_open(const synor_catalog *cat, const char *spec, synor_fabric **out);
size_t synor_fabric_builtin_count(void);
const char *synor_fabric_builtin_name(size_t i);
void synor_fabric_destroy(synor_fabric *f);

const char *synor_fabric_name(const synor_fabric *f);
const char *synor_fabric_currency(const synor_fabric *f);
const char *synor_fabric_notes(const synor_fabric *f); /* "" if none */
size_t synor_fabric_node_count(const synor_fabric *f);
const char *synor_fabric_node_name(const synor_fabric *f, size_t i);
size_t synor_fabric_device_count(const synor_fabric *f);
const synor_fabric_device *synor_fabric_device_at(const synor_fabric *f, size_t i);
/* Sets device i's price per device-hour (micro-units, >= 0): a price
 * quoted from elsewhere, e.g. the market's order book (`synor plan
 * --market`). SYNOR_EINVAL for a bad index or a negative price. */
int synor_fabric_set_price(synor_fabric *f, size_t i, int64_t price_micro);
/* Declares that device i shares its node's host cores (an OpenCL CPU
 * device such as PoCL runs its kernels on the cores of the runtime's CPU
 * workers). The simulator then charges the contention (docs/PLANNING.md,
 * "Devices that share the host's cores"): while device i runs a task,
 * every CPU device of its node that is not itself shared runs at
 * 1 / cpu_slowdown of its speed; device i runs at
 * 1 / (1 + (slowdown - 1) x b / c) of its own, b of the node's c such CPU
 * devices being busy. Both factors >= 1 (1 and 1: no contention); 0 and 0
 * undo it. SYNOR_EINVAL for a bad index or a factor that is not finite
 * or below 1. */
int synor_fabric_set_host_sharing(synor_fabric *f, size_t i, double cpu_slowdown,
                                  double slowdown);
/* How the dynamic strategy places on a fabric with a shared device
 * (docs/PLANNING.md "Placing as the runtime does"): by the runtime's rule,
 * with device i's estimate its cost-model time x scale (a runtime places
 * by the median kernel time without the dispatch, which the calibrated
 * time has: synor_whatif_calibrate_sharing measures it). Device i must share
 * the host's cores; scale in (0, 1000], 0 undoes it (1).
 * SYNOR_EINVAL otherwise. */
int synor_fabric_set_share_place_scale(synor_fabric *f, size_t i, double scale);
/* How often the simulated runtime's rebalancer may run on a fabric with
 * shared device i (docs/PLANNING.md "Placing as the runtime does"): as
 * the runtime's workers do, a rebalance runs when a worker loops (a task's
 * end, a submission) at least period_s after the last one, or when the
 * period ends while a worker that found nothing is still polling (50 us).
 * Declaring the sharing sets SYNOR_FABRIC_SHARE_REBALANCE_S; 0: at every
 * event. Device i must share the host's cores; period_s in [0, 3600].
 * SYNOR_EINVAL otherwise. */
int synor_fabric_set_share_rebalance(synor_fabric *f, size_t i, double period_s);
/* Index of a device by name, or -1. */
long synor_fabric_find_device(const synor_fabric *f, const char *name);
size_t synor_fabric_space_count(const synor_fabric *f);
const char *synor_fabric_space_name(const synor_fabric *f, size_t space);
size_t synor_fabric_link_count(const synor_fabric *f);
const synor_link *synor_fabric_link(const synor_fabric *f, size_t i);

/* The path between the memories of two devices, computed from the link
 * index when asked (O(1); no table of all pairs is kept, so a fabric of
 * 10,000 devices costs memory linear in its devices and links). */
synor_path synor_fabric_path(const synor_fabric *f, size_t from_dev, size_t to_dev);
/* Seconds to move bytes from one device's memory to another's: 0 on the
 * same space, else the sum over hops of latency + bytes / bandwidth. */
double synor_fabric_transfer_time(const synor_fabric *f, size_t from_dev, size_t to_dev,
                                  double bytes);

/* Formats micro-units as a decimal amount ("2.990000" -> "2.99"); always
 * NUL-terminated. */
void synor_money_format(int64_t micro, char *buf, size_t n);
/* Parses "2.99" (at most 6 decimals, non-negative) into micro-units. */
int synor_money_parse(const char *s, int64_t *micro);
/* price per hour x seconds, rounded to the nearest micro-unit, in integers
 * (seconds are rounded to the microsecond first); INT64_MAX when the
 * amount does not fit (it saturates, never wraps). */
int64_t synor_money_for_seconds(int64_t price_micro_per_hour, double seconds);
/* a + b, saturating at INT64_MAX / INT64_MIN. */
int64_t synor_money_add(int64_t a, int64_t b);

#ifdef __cplusplus
}
#endif
#endif
