#!/usr/bin/env bash
# run.sh - runs the libFuzzer harnesses of a SYNOR_FUZZ build: each first
# over its committed seeds (fuzz/corpus/NAME, read-only here), then
# mutating for SECONDS. New inputs go to BUILD/fuzz-work/NAME, a crash, leak,
# timeout or broken contract to BUILD/fuzz-artifacts/ and the exit status 1.
#   bash fuzz/run.sh BUILD SECONDS [--max-len N] [--keep] [NAME...]
#     BUILD      a build directory configured with -DSYNOR_FUZZ=ON
#     SECONDS    mutation time per harness (0: the seeds only)
#     --max-len  longest input tried (default 8192 bytes)
#     --keep     keep BUILD/fuzz-work from earlier runs (long runs resume)
#     NAME...    harnesses to run (default: all, e.g. json trace)
# docs/FUZZING.md has the long-run figures and how to reproduce a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n 2,13p "$0"; exit 2; }
build=$1 secs=$2
shift 2
max_len=8192 keep=0 names=()
while [ $# -gt 0 ]; do
  case $1 in
    --max-len) max_len=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) names+=("$1"); shift ;;
  esac
done
if [ ${#names[@]} = 0 ]; then
  for f in fuzz/fuzz_*.c; do
    n=$(basename "$f" .c)
    [ "$n" = fuzz_common ] || names+=("${n#fuzz_}")
  done
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
art=$build/fuzz-artifacts
mkdir -p "$art"
status=0
for n in "${names[@]}"; do
  exe=$build/fuzz/fuzz_$n
  [ -x "$exe" ] || { echo "run.sh: no harness $exe (build with -DSYNOR_FUZZ=ON)"; exit 2; }
  work=$build/fuzz-work/$n
  [ $keep = 1 ] || rm -rf "$work"
  mkdir -p "$work"
  args=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len"
        -print_final_stats=1 -artifact_prefix="$art/$n-")
  [ -f "fuzz/dict/$n.dict" ] && args+=(-dict="fuzz/dict/$n.dict")
  [ "$secs" = 0 ] && args+=(-runs=0)
  echo "== fuzz_$n: seeds in fuzz/corpus/$n, then ${secs}s =="
  if ! "$exe" "${args[@]}" "$work" "fuzz/corpus/$n" >"$build/fuzz-$n.log" 2>&1; then
    status=1
    tail -n 60 "$build/fuzz-$n.log"
    echo "run.sh: fuzz_$n found a problem; the input is in $art (reproduce: $exe FILE)"
  else
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|cov: .*ft: " "$build/fuzz-$n.log" |
      tail -n 3 | sed 's/^/  /'
  fi
done
exit $status
