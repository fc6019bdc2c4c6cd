#!/usr/bin/env bash
# run_sim_fidelity.sh - the simulator's prediction of this machine against
# real runs (issue 11, "a simulator that predicts this machine";
# bench/bench_sim_fidelity.c): the shipped workloads that run for real and
# the runtime's tiled GEMM and Cholesky (fp32, n 1024, 2048, 3072, tiles of
# 256), each run R times by the runtime on the CPU workers after 3 warm-up
# runs, then simulated on the local fabric calibrated on the performance
# model those runs recorded (and on the plain roofline). P processes
# (default 3); the summary gives, per workload, the median over processes
# of each figure. About 2 minutes a process on the 2-vCPU VM.
#
# --opencl: the runtime also opens every OpenCL device (PoCL on a machine
# without a GPU) and places tasks between it and the CPU workers by its
# model; then, in addition, the two-stage pipeline of
# workloads/pipeline-mlp-fp32.json (CPU stage, OpenCL stage: `synor run
# --strategy pipeline --stages 2 --opencl all`), 3 calibrating runs then R
# runs, real makespan against the plan's on the calibrated run fabric.
# --fifo: every process under `chrt -f 10` (SCHED_FIFO: other tenants'
# ordinary processes cannot take the workers' cores mid-run; root only).
# --rows "ARGS": only these rows, as bench_sim_fidelity takes them (e.g.
# "--tiled gemm:1024:256 workloads/mlp-fp32.json"), to keep a locked run
# short. --measure-cache F: the detection's measured peak and bandwidth
# from F (measured once and written there when absent). With --opencl, an
# OpenCL CPU device (PoCL) shares the CPU workers' cores: the shared-core
# factors are measured first (bench_shared_cores' measurement) and the
# summary adds the simulation without them (the paired "before"):
# --sharing-cache F caches them (default: none, measured per process).
# There the dynamic simulation places as the runtime does (the shared
# device's place_scale, printed) and charges no contention (the recorded
# times hold it); the summary adds it with the measured cpu_slowdown
# charged (ratio_charged). --no-pipeline: skip the pipeline.
#
#   bash bench/run_sim_fidelity.sh [--procs P] [--runs R] [--workers N] [--build DIR]
#                                  [--opencl] [--fifo] [--rows "ARGS"] [--measure-cache F]
#                                  [--sharing-cache F] [--no-pipeline]
set -euo pipefail
cd "$(dirname "$0")/.."
procs=3 runs=11 workers=0 build=build-bench opencl= nopipe= fifo=() cache=() scache=()
rows=(workloads/mlp-fp32.json workloads/attention-block-fp32.json
      --tiled gemm:1024:256 --tiled gemm:2048:256 --tiled gemm:3072:256
      --tiled cholesky:1024:256 --tiled cholesky:2048:256 --tiled cholesky:3072:256)
while (($#)); do
  case $1 in
    --opencl) opencl=--opencl; shift ;;
    --no-pipeline) nopipe=1; shift ;;
    --fifo) fifo=(chrt -f 10); shift ;;
    --procs) procs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --rows) read -ra rows <<<"$2"; shift 2 ;;
    --measure-cache) cache=(--measure-cache "$2"); shift 2 ;;
    --sharing-cache) scache=(--sharing-cache "$2"); shift 2 ;;
    *) echo "usage: $0 [--procs P] [--runs R] [--workers N] [--build DIR] [--opencl] [--fifo] [--rows \"ARGS\"] [--measure-cache F] [--sharing-cache F] [--no-pipeline]" >&2; exit 2 ;;
  esac
done
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target bench_sim_fidelity synor >/dev/null
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((p = 0; p < procs; p++)); do
  "${fifo[@]}" "$build/bench/bench_sim_fidelity" --runs "$runs" --workers "$workers" $opencl \
    "${cache[@]}" ${opencl:+"${scache[@]}"} "${rows[@]}" | tee -a "$out"
done
echo
echo "== median over $procs processes =="
python3 - "$out" <<'PY'
import re, statistics, sys
rows, ops = {}, {}
cur = None
for line in open(sys.argv[1]):
    kv = dict(re.findall(r'(\w+)=(\S+)', line))
    if line.startswith('workload='):
        cur = line.split(' workers=')[0][len('workload='):]
        rows.setdefault(cur, []).append(kv)
    elif 'op' in kv:
        ops.setdefault((cur, kv['op']), []).append(kv)
med = lambda l, k: statistics.median(float(x[k]) for x in l)
ocl = any('real_opencl_tasks' in l[0] for l in rows.values())
print('| workload | workers | real ms | sim (dynamic) ms | ratio | sim (HEFT) ms | ratio | sim (runtime rules) ms | ratio | roofline ms | ratio | dispatch us | as run --tiled ms |'
      + ' host before / per task / after us | ratio without the host |'
      + (' OpenCL tasks per run, real | simulated | sim without sharing ms | ratio | its OpenCL tasks |' if ocl else '')
      + (' place scale | ratio with the measured charge | its OpenCL tasks |' if any('ratio_charged' in l[0] for l in rows.values()) else ''))
print('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|' + ('---|---|---|---|---|' if ocl else '')
      + ('---|---|---|' if any('ratio_charged' in l[0] for l in rows.values()) else ''))
for w, l in rows.items():
    tail = f"{med(l,'after_openblas_ms'):.3f} |" if 'after_openblas_ms' in l[0] else " |"
    tail += (f" {med(l,'host_before_us'):.1f} / {med(l,'host_submit_us'):.2f} / {med(l,'host_after_us'):.1f} |"
             f" {med(l,'ratio_nohost'):.3f} |")
    if 'real_opencl_tasks' in l[0]:
        tail += f" {med(l,'real_opencl_tasks'):.1f} | {med(l,'sim_opencl_tasks'):.0f} |"
        if 'ratio_noshare' in l[0]:
            tail += (f" {med(l,'sim_noshare_ms'):.3f} | {med(l,'ratio_noshare'):.3f} |"
                     f" {med(l,'sim_noshare_opencl_tasks'):.0f} |")
        if 'ratio_charged' in l[0]:
            tail += (f" {med(l,'place_scale'):.3f} | {med(l,'ratio_charged'):.3f} |"
                     f" {med(l,'sim_charged_opencl_tasks'):.0f} |")
    print(f"| {w} | {l[0]['workers']} | {med(l,'real_ms'):.3f} | {med(l,'sim_dynamic_ms'):.3f} | "
          f"{med(l,'ratio_dynamic'):.3f} | {med(l,'sim_heft_ms'):.3f} | {med(l,'ratio_heft'):.3f} | "
          f"{med(l,'sim_runtime_ms'):.3f} | {med(l,'ratio_runtime'):.3f} | "
          f"{med(l,'roofline_ms'):.3f} | {med(l,'ratio_roofline'):.3f} | {med(l,'dispatch_us'):.1f} | " + tail)
print()
print('| workload | operation | real kernel busy ms per run | simulated (less dispatch) ms | ratio |')
print('|---|---|---|---|---|')
for (w, op), l in ops.items():
    print(f"| {w} | {op} | {med(l,'real_busy_ms'):.3f} | {med(l,'sim_busy_ms'):.3f} | {med(l,'ratio'):.3f} |")
PY

[[ -n $opencl && -z $nopipe ]] || exit 0
# The two-stage CPU + OpenCL pipeline: real against planned, per process.
echo
echo "== pipeline, 2 stages (cpu, opencl0), workloads/pipeline-mlp-fp32.json =="
pout=$(mktemp)
trap 'rm -f "$out" "$pout"' EXIT
for ((p = 0; p < procs; p++)); do
  pm=$(mktemp)
  rm -f "$pm"
  for ((k = 0; k < 3 + runs; k++)); do
    line=$("${fifo[@]}" "$build/synor" run workloads/pipeline-mlp-fp32.json --opencl all \
             --strategy pipeline --stages 2 --perfmodel "$pm" 2>&1 | grep 'makespan: real' || true)
    ((k < 3)) || echo "proc=$p $line" >>"$pout"
  done
  rm -f "$pm"
done
python3 - "$pout" <<'PY'
import re, statistics, sys
per = {}
for line in open(sys.argv[1]):
    m = re.search(r'proc=(\d+) .*real ([0-9.]+) s, planned ([0-9.]+) s', line)
    if m:
        per.setdefault(m.group(1), []).append((float(m.group(2)), float(m.group(3))))
print('| process | runs | real median s | planned median s | planned / real |')
print('|---|---|---|---|---|')
ratios = []
for p, l in sorted(per.items()):
    r = statistics.median(x for x, _ in l); q = statistics.median(y for _, y in l)
    ratios.append(q / r)
    print(f'| {p} | {len(l)} | {r:.4f} | {q:.4f} | {q / r:.3f} |')
if ratios:
    print(f'median planned / real over processes: {statistics.median(ratios):.3f}')
PY
