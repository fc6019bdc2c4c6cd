/* rewards_internal.h - what the files of src/rewards/ share: the policy's
 * representation and exact integer helpers. Never installed. */
#ifndef SYNOR_REWARDS_INTERNAL_H
#define SYNOR_REWARDS_INTERNAL_H

#include <stdint.h>

#include "synor/rewards.h"

/* 128-bit intermediates (GCC and Clang; __extension__ keeps -pedantic quiet) */
__extension__ typedef __int128 synor__rw128;

#define SYNOR__REWARDS_MAX_POINTS 16

struct synor_rewards_policy {
    int64_t rate_tflop_s, rate_gflop_s, rate_gb, rate_hour; /* pico-USD per unit */
    size_t n_points;
    uint32_t point_rep[SYNOR__REWARDS_MAX_POINTS]; /* 0 .. 100, increasing */
    uint32_t point_bp[SYNOR__REWARDS_MAX_POINTS];  /* 5000 .. 20000, not decreasing */
    uint32_t uptime_from_bp, uptime_full_bp, uptime_max_bp;
    uint32_t fee_bp;
    char *note;
    char *origin;
};

/* 1..max-1 printable ASCII characters without spaces (ids, contributors);
 * also empty (or NULL) when may_be_empty (a period label). */
int synor__rewards_valid_name(const char *s, size_t max, int may_be_empty);

#endif
