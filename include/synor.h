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
 *   synor/router.h     the task router over the registry
 *   synor/detect.h     detection of this machine's processors
 *   synor/market.h     the spot market for compute capacity
 *   synor/runtime.h    the task runtime: workers, tasks, data handles
 *   synor/mpi.h        the runtime across MPI ranks: data owned by ranks, messages
 *   synor/leasejob.h   the job's side of preemptible capacity: checkpoint,
 *                      replacement at the current ask, or a graceful end
 *   synor/perfmodel.h  performance models calibrated from real runs
 *   synor/workload.h   workloads: task DAGs with operation shapes and work
 *   synor/decompose.h  LLM inference and training workloads from a model
 *   synor/fabric.h     fabrics: devices, links between memories, prices
 *   synor/cost.h       the cost model: tasks x devices, transfers
 *   synor/plan.h       planners: HEFT, PEFT, objectives, baselines, exact
 *   synor/sim.h        the discrete-event simulator and execution traces
 *   synor/report.h     reports from traces: text, Chrome trace, SVG Gantt
 *   synor/model.h      model files: GGUF, llama2.c checkpoints, quant blocks
 *   synor/tokenizer.h  SentencePiece-style BPE tokenizers
 *   synor/llm.h        the LLM inference engine
 *   synor/cache.h      response caches: exact (memory + SQLite), semantic
 *   synor/serve.h      synor serve: the OpenAI-compatible HTTP server */
#ifndef SYNOR_H
#define SYNOR_H

#include "synor/cache.h"
#include "synor/caps.h"
#include "synor/cost.h"
#include "synor/decompose.h"
#include "synor/detect.h"
#include "synor/device.h"
#include "synor/econ.h"
#include "synor/error.h"
#include "synor/fabric.h"
#include "synor/leasejob.h"
#include "synor/llm.h"
#include "synor/market.h"
#include "synor/model.h"
#include "synor/mpi.h"
#include "synor/op.h"
#include "synor/perfmodel.h"
#include "synor/plan.h"
#include "synor/processor.h"
#include "synor/profile.h"
#include "synor/registry.h"
#include "synor/report.h"
#include "synor/rewards.h"
#include "synor/router.h"
#include "synor/sim.h"
#include "synor/runtime.h"
#include "synor/serve.h"
#include "synor/tokenizer.h"
#include "synor/train.h"
#include "synor/exec.h"
#include "synor/whatif.h"
#include "synor/netclient.h"
#include "synor/agent.h"
#include "synor/workload.h"
#include "synor/netstore.h"
#include "synor/coord.h"

#endif
