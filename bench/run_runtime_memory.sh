#!/usr/bin/env bash
# run_runtime_memory.sh - memory of task graphs of 125k to 1M tasks held by
# the runtime before it starts (bench_runtime_memory.c), one process each,
# median of --runs (default 3). Linear memory = constant bytes per task.
#   bash bench/run_runtime_memory.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
[ "${1:-}" = "--runs" ] && runs=$2
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" --target bench_runtime_memory >/dev/null
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
printf '%10s %14s %16s %12s %10s\n' tasks "RSS after MiB" "bytes per task" "submit s" "run s"
for n in 125000 250000 500000 1000000; do
  rss= bpt= sub= run=
  for ((r = 0; r < runs; r++)); do
    line=$(build-bench/bench/bench_runtime_memory $n)
    rss+="$(echo "$line" | field rss_after_submit_mib) "
    bpt+="$(echo "$line" | field bytes_per_task) "
    sub+="$(echo "$line" | field submit_s) "
    run+="$(echo "$line" | field run_s) "
  done
  printf '%10s %14s %16s %12s %10s\n' $n "$(echo $rss | tr ' ' '\n' | median)" \
    "$(echo $bpt | tr ' ' '\n' | median)" "$(echo $sub | tr ' ' '\n' | median)" \
    "$(echo $run | tr ' ' '\n' | median)"
done
