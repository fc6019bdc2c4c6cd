#!/usr/bin/env bash
# run_serve_gpu.sh - issue 12's continuous-batching bar on a GPU machine:
# synor serve with every layer's products and the classifier on CUDA GPU 0
# (--gpu-layers all), stories110M's shape (dim 768, 12 layers, vocab 32000)
# with generated F32 weights, 16 streams with Poisson arrivals against the
# same requests one at a time (bench/run_serve_bench.sh, medians of 3);
# then the same comparison on the CPU only (Q8_0, every core, medians of 3)
# for context - on an unloaded 16-core machine, the CPU figure the 2-core
# development VM (shared with other builds) cannot give. Prints a summary table at the end. Builds nothing: the
# binaries come from BIN_DIR (synor and bench_serve, or bench/bench_serve
# beneath it; BIN_DIR/lib is put on LD_LIBRARY_PATH when present).
# Under 4 minutes: each part has a time limit (GPU 140 s, CPU 80 s).
#
#   bash bench/run_serve_gpu.sh BIN_DIR [--quick]
#
# --quick: one run of 16 requests of 16 tokens on the GPU only (a smoke
# test of the setup, ~30 s).
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 BIN_DIR [--quick]" >&2; exit 2; }
bin=$(cd "$1" && pwd) || exit 2
quick=0
[ "${2:-}" = --quick ] && quick=1
[ -d "$bin/lib" ] && export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cores=$(nproc)
echo "machine: $cores CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null ||
  echo "nvidia-smi: not found (the GPU part fails if synor finds no CUDA GPU)"
"$bin/synor" serve --help 2>&1 | grep -q -- --gpu-layers ||
  { echo "$bin/synor: no synor serve --gpu-layers" >&2; exit 1; }

run() { # NAME LIMIT ARGS...
  local name=$1 limit=$2
  shift 2
  echo
  echo "=== $name: bench/run_serve_bench.sh --bin $bin $*"
  local t0=$SECONDS
  timeout --signal=TERM "$limit" bash bench/run_serve_bench.sh --bin "$bin" "$@" 2>&1 |
    tee "$out/$name.log"
  echo "($name: $((SECONDS - t0)) s, exit ${PIPESTATUS[0]})"
}

if ((quick)); then
  run gpu 90 --preset stories110m --type f32 --gpu-layers all --threads "$cores" \
    --requests 16 --max-tokens 16 --runs 1
else
  run gpu 140 --preset stories110m --type f32 --gpu-layers all --threads "$cores" \
    --requests 48 --max-tokens 64 --runs 3
  run cpu 80 --preset stories110m --type q8_0 --threads "$cores" \
    --requests 48 --max-tokens 32 --runs 3
fi

row() { sed -n "s#^| $2 *| *\([^|]*\) | *\([^|]*\) |.*#\1|\2#p" "$out/$1.log" | sed 's/ *|/|/; s/ *$//'; }
echo
echo "summary (16 streams with Poisson arrivals vs one at a time, through synor serve)"
printf '| %-28s | %-12s | %-13s | %-6s | %-15s | %-8s | %-7s |\n' config "16 streams" "one at a time" ratio \
  "TPOT p50/p99 ms" "TPOT max" fewest
printf '|%s|%s|%s|%s|%s|%s|%s|\n' ------------------------------ -------------- --------------- -------- \
  ----------------- ---------- ---------
for name in gpu cpu; do
  [ -f "$out/$name.log" ] || continue
  agg=$(row "$name" "aggregate output tokens/s")
  [ -n "$agg" ] || { printf '| %-28s | %s\n' "$name" "no result (see its log above)"; continue; }
  c=${agg%%|*} s=${agg##*|}
  tpot=$(row "$name" "TPOT p50 / p99 ms"); tmax=$(row "$name" "TPOT max ms (starvation)")
  few=$(sed -n 's/^| fewest tokens a request got[^|]*| *\([0-9-]*\) .*/\1/p' "$out/$name.log")
  what=$([ "$name" = gpu ] && echo "110M F32, --gpu-layers all" || echo "110M Q8_0, CPU $cores workers")
  printf '| %-28s | %12s | %13s | %6s | %15s | %8s | %7s |\n' "$what" "$c" "$s" \
    "$(awk -v a="$c" -v b="$s" 'BEGIN { if (b > 0) printf "%.2f", a / b }')" "${tpot%%|*}" \
    "${tmax%%|*}" "$few"
done
