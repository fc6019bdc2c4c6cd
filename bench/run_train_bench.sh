#!/usr/bin/env bash
# run_train_bench.sh - issue 13's training bars, side by side in one run:
#   1. the trainer (bench/bench_train.c) against PyTorch (bench/train_torch.py:
#      the same model, float32, eager, the same threads, batch and AdamW
#      iteration), tokens/s of full training steps, alternating run by run;
#   2. data-parallel scaling over CPU workers: 2 workers x 2 replicas against
#      1 worker x 1 replica, the same global batch.
#
#   bash bench/run_train_bench.sh [--runs N] [--steps N] [--quick] [-- MODEL OPTIONS]
#
# Model options are bench_train's and train_torch.py's (default: stories15M's
# shape with a 512-piece vocabulary: --dim 288 --hidden 768 --layers 6
# --heads 6 --kv-heads 6 --vocab 512 --seq 256 --batch 8). Each figure is
# the median of --runs (default 3) runs, each run the median step of
# --steps (default 10) after 2 warm-up steps. PyTorch needs Debian's
# python3-torch for /usr/bin/python3 (scripts/setup.sh --test-deps).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3 steps=10 quick=0
model=(--dim 288 --hidden 768 --layers 6 --heads 6 --kv-heads 6 --vocab 512 --seq 256 --batch 8)
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --) shift; model=("$@"); break ;;
    *) echo "usage: $0 [--runs N] [--steps N] [--quick] [-- MODEL OPTIONS]" >&2; exit 2 ;;
  esac
done
((quick)) && { runs=1; steps=2; model=(--dim 64 --hidden 128 --layers 2 --heads 4 --kv-heads 4 --vocab 256 --seq 64 --batch 4); }
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" --target bench_train >/dev/null
have_torch=1
/usr/bin/python3 -c 'import torch' 2>/dev/null || { have_torch=0; echo "PyTorch not installed for /usr/bin/python3: its side is skipped" >&2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
common=(--steps "$steps" --warmup 2 --shared 1 "${model[@]}")
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); model ${model[*]}"
for ((r = 1; r <= runs; r++)); do
  ./build-bench/bench/bench_train --threads 2 "${common[@]}" | sed 's/^/synor2 /' >>"$out"
  ((have_torch)) && /usr/bin/python3 bench/train_torch.py --threads 2 "${common[@]}" | sed 's/^/torch2 /' >>"$out"
  ./build-bench/bench/bench_train --threads 1 --replicas 1 "${common[@]}" | sed 's/^/synor1 /' >>"$out"
  ((have_torch)) && /usr/bin/python3 bench/train_torch.py --threads 1 "${common[@]}" | sed 's/^/torch1 /' >>"$out"
done
med() { grep "^$1 " "$out" | sed 's/.*"tokens_per_s": *\([0-9.]*\).*/\1/' | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print 0}'; }
s2=$(med synor2) s1=$(med synor1) t2=$(med torch2) t1=$(med torch1)
printf '%-34s %12s %12s\n' "" "2 threads" "1 thread"
printf '%-34s %12.1f %12.1f\n' "synor trainer, tokens/s" "$s2" "$s1"
((have_torch)) && printf '%-34s %12.1f %12.1f\n' "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), tokens/s" "$t2" "$t1"
((have_torch)) && awk -v a="$s2" -v b="$t2" -v c="$s1" -v d="$t1" 'BEGIN { printf "%-34s %11.2fx %11.2fx\n", "synor / PyTorch", a / b, c / d }'
awk -v a="$s2" -v b="$s1" 'BEGIN { printf "data parallel, 2 workers x 2 replicas against 1: %.2fx (scaling efficiency %.0f%%)\n", a / b, 50 * a / b }'
