/* synor.h - umbrella header of libsynor, the Synor Compute library.
 *
 * Data flows one way: profiles -> devices/registry -> workload -> plan ->
 * execute | simulate -> trace -> report. Each concept has one header:
 *   synor/error.h      error codes, messages, version
 *   synor/processor.h  processor kinds and variants
 *   synor/op.h         operation and data types, operation work
 *   synor/caps.h       capabilities
 *   synor/profile.h    the profile catalog
 *   synor/device.h     devices and their backends
 *   synor/registry.h   the device registry and availability schedules
 *   synor/detect.h     detection of this machine's processors
 *   synor/market.h     the spot market for compute capacity */
#ifndef SYNOR_H
#define SYNOR_H

#include "synor/caps.h"
#include "synor/detect.h"
#include "synor/device.h"
#include "synor/error.h"
#include "synor/market.h"
#include "synor/op.h"
#include "synor/processor.h"
#include "synor/profile.h"
#include "synor/registry.h"

#endif
