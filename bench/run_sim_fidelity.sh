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
#   bash bench/run_sim_fidelity.sh [--procs P] [--runs R] [--workers N] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
procs=3 runs=11 workers=0 build=build-bench
while (($#)); do
  case $1 in
    --procs) procs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "usage: $0 [--procs P] [--runs R] [--workers N] [--build DIR]" >&2; exit 2 ;;
  esac
done
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target bench_sim_fidelity >/dev/null
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((p = 0; p < procs; p++)); do
  "$build/bench/bench_sim_fidelity" --runs "$runs" --workers "$workers" \
    workloads/mlp-fp32.json workloads/attention-block-fp32.json \
    --tiled gemm:1024:256 --tiled gemm:2048:256 --tiled gemm:3072:256 \
    --tiled cholesky:1024:256 --tiled cholesky:2048:256 --tiled cholesky:3072:256 |
    tee -a "$out"
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
print('| workload | workers | real ms | sim (dynamic) ms | ratio | sim (HEFT) ms | ratio | sim (runtime rules) ms | ratio | roofline ms | ratio | dispatch us | as run --tiled ms |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for w, l in rows.items():
    tail = f"{med(l,'after_openblas_ms'):.3f} |" if 'after_openblas_ms' in l[0] else " |"
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
