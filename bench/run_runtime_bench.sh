#!/usr/bin/env bash
# run_runtime_bench.sh - the runtime benchmarks of issue 4, side by side with
# the peers, in one run on this machine, and a table of medians and ratios.
#
#   bash bench/run_runtime_bench.sh [--runs N] [--quick] [--anchors DIR]
#
# Synor side: bench/bench_task_overhead.c and bench/bench_runtime_blas.c,
# built here in Release (build-bench/). Peer side: the anchor programs of
# --anchors (default /work/shared/anchors/starpu), compiled from that path
# into a temporary directory (never copied into the tree):
#   task_overhead_bench.c  StarPU 1.3 (Debian: apt-get install libstarpu-dev;
#                          only for this benchmark, not a build dependency),
#                          schedulers eager, lws and dmda in the same run;
#   blas_gemm_bench.c      one OpenBLAS call on the whole matrix, 2 threads.
# Also bench_runtime_blas's static mode: the same one-thread OpenBLAS calls on
# the same tiles from 2 pinned threads with a fixed split and no runtime, the
# ceiling of any runtime that calls BLAS per tile.
# Each measurement is one process; the table shows the median of --runs
# (default 5) processes, runs interleaved so that machine noise hits both
# sides alike. --quick: smaller sizes (a smoke test, not the figures).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5 quick=0 anchors=/work/shared/anchors/starpu
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --anchors) anchors=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--quick] [--anchors DIR]" >&2; exit 2 ;;
  esac
done
ntask=100000 ngemm=3840 nchol=19200 nb=960
((quick)) && { ntask=20000; ngemm=1920; nchol=3840; }

cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" --target bench_task_overhead bench_runtime_blas >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/blas_gemm_bench" "$anchors/blas_gemm_bench.c" $(pkg-config --cflags --libs openblas)
have_starpu=0
if pkg-config --exists starpu-1.3; then
  cc -O2 -o "$tmp/task_overhead_bench" "$anchors/task_overhead_bench.c" \
    $(pkg-config --cflags --libs starpu-1.3)
  have_starpu=1
else
  echo "note: StarPU 1.3 not found (apt-get install -y libstarpu-dev): its columns are skipped" >&2
fi
S=build-bench/bench

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; } # key: value of key=value
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
starpu() { # sched mode
  STARPU_HOME=$tmp/starpu-home STARPU_NCPU=2 STARPU_SILENT=1 OPENBLAS_NUM_THREADS=1 \
    STARPU_SCHED=$1 "$tmp/task_overhead_bench" "$2" "$ntask" | field total_ns_per_task
}

declare -A res
for mode in indep chain indepd; do
  for ((r = 0; r < runs; r++)); do
    res[synor,$mode]+="$($S/bench_task_overhead $mode $ntask 2 | field total_ns_per_task) "
    if ((have_starpu)); then
      for s in eager lws dmda; do res[$s,$mode]+="$(starpu $s $mode) "; done
    fi
  done
done
for ((r = 0; r < runs; r++)); do
  res[blas,gemm]+="$(OPENBLAS_NUM_THREADS=2 "$tmp/blas_gemm_bench" d $ngemm 3 | field avg_GFLOPs) "
  res[synor,gemm]+="$($S/bench_runtime_blas d $ngemm $nb 3 2 | field avg_GFLOPs) "
  res[static,gemm]+="$($S/bench_runtime_blas s $ngemm $nb 3 2 | field avg_GFLOPs) "
done
for ((r = 0; r < runs; r++)); do
  res[blas,chol]+="$(OPENBLAS_NUM_THREADS=2 "$tmp/blas_gemm_bench" c $nchol 1 | field avg_GFLOPs) "
  res[synor,chol]+="$($S/bench_runtime_blas c $nchol $nb 1 2 | field avg_GFLOPs) "
done
med() { tr ' ' '\n' <<<"${res[$1]:-}" | grep . | median; }

echo
echo "Runtime benchmarks: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), medians of $runs runs"
echo
printf '%-28s %10s %10s %10s %10s   %s\n' "per-task overhead (ns/task)" synor eager lws dmda \
  "StarPU/synor (eager lws dmda)"
for mode in indep chain indepd; do
  sy=$(med synor,$mode)
  if ((have_starpu)); then
    e=$(med eager,$mode) l=$(med lws,$mode) d=$(med dmda,$mode)
    printf '%-28s %10.0f %10.0f %10.0f %10.0f   %.1fx %.1fx %.1fx\n' "$mode, N=$ntask" "$sy" "$e" "$l" "$d" \
      "$(bc -l <<<"$e/$sy")" "$(bc -l <<<"$l/$sy")" "$(bc -l <<<"$d/$sy")"
  else
    printf '%-28s %10.0f\n' "$mode, N=$ntask" "$sy"
  fi
done
echo
printf '%-36s %12s %12s %8s\n' "dense kernels, 2 workers (GFLOP/s)" synor OpenBLAS ratio
g=$(med synor,gemm) gb=$(med blas,gemm) c=$(med synor,chol) cb=$(med blas,chol)
gs=$(med static,gemm)
printf '%-36s %12.1f %12.1f %8.3f\n' "tiled DGEMM N=$ngemm nb=$nb" "$g" "$gb" "$(bc -l <<<"$g/$gb")"
printf '%-36s %12.1f %12.1f %8.3f   (runtime / static: %.3f)\n' "  same tiles, static, no runtime" "$gs" "$gb" \
  "$(bc -l <<<"$gs/$gb")" "$(bc -l <<<"$g/$gs")"
printf '%-36s %12.1f %12.1f %8.3f\n' "tiled SPOTRF N=$nchol nb=$nb" "$c" "$cb" "$(bc -l <<<"$c/$cb")"
echo
echo "raw values (one per run):"
for k in "${!res[@]}"; do echo "  $k: ${res[$k]}"; done | sort
