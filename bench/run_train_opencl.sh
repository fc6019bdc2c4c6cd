#!/usr/bin/env bash
# run_train_opencl.sh - the trainer's replicas on the CPU workers, on an
# OpenCL device, and on both at once (heterogeneous data parallel), tokens/s
# of full training steps (bench/bench_train.c), alternating run by run:
#   cpu          --threads T, one replica per worker, products through OpenBLAS
#   opencl       every replica's products on OpenCL device K
#   cpu+opencl   the last replica's products on device K, the others' on the CPU
#   cpu+opencl, balanced   the same, the batch split by measured speed
#
#   bash bench/run_train_opencl.sh [--runs N] [--steps N] [--threads T]
#        [--cl-device K] [--build DIR] [-- MODEL OPTIONS]
#
# Model options are bench_train's (default: synor train's default model,
# --dim 256 --hidden 768 --layers 4 --heads 8 --kv-heads 4 --vocab 1024
# --seq 128 --batch 16). Each figure is the median of --runs (default 3)
# runs, each the median step of --steps (default 3) after 1 warm-up step.
# --build DIR: use DIR/bench/bench_train as built (e.g. carried to another
# machine); otherwise build-bench is configured and built here.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3 steps=3 threads=2 cldev=0 build=""
model=(--dim 256 --hidden 768 --layers 4 --heads 8 --kv-heads 4 --vocab 1024 --seq 128 --batch 16)
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --cl-device) cldev=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --) shift; model=("$@"); break ;;
    *) echo "usage: $0 [--runs N] [--steps N] [--threads T] [--cl-device K] [--build DIR] [-- MODEL OPTIONS]" >&2; exit 2 ;;
  esac
done
if [[ -z $build ]]; then
  build=build-bench
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target bench_train >/dev/null
fi
B=$build/bench/bench_train
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
common=(--threads "$threads" --steps "$steps" --warmup 1 --shared 1 --cl-device "$cldev" "${model[@]}")
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); model ${model[*]}"
for ((r = 1; r <= runs; r++)); do
  "$B" "${common[@]}" | sed 's/^/cpu /' >>"$out"
  "$B" "${common[@]}" --opencl 1 2>>"$err" | sed 's/^/opencl /' >>"$out"
  "$B" "${common[@]}" --opencl 2 2>>"$err" | sed 's/^/mixed /' >>"$out"
  "$B" "${common[@]}" --opencl 2 --balance 1 2>>"$err" | sed 's/^/balanced /' >>"$out"
  echo "run $r done, load $(cut -d' ' -f1-3 /proc/loadavg)"
done
grep -h "device\|split" "$err" | sort | uniq -c | head -20
med() { grep "^$1 " "$out" | sed 's/.*"tokens_per_s": *\([0-9.]*\).*/\1/' | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print 0}'; }
all() { grep "^$1 " "$out" | sed 's/.*"tokens_per_s": *\([0-9.]*\).*/\1/' | tr '\n' ' '; }
c=$(med cpu)
for k in cpu opencl mixed balanced; do
  m=$(med $k)
  awk -v k="$k" -v m="$m" -v c="$c" -v a="$(all $k)" 'BEGIN { printf "%-10s %10.1f tokens/s  (%.2fx cpu)  runs: %s\n", k, m, m / c, a }'
done
