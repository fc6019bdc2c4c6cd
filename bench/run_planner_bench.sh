#!/usr/bin/env bash
# run_planner_bench.sh - the planner and simulator benchmarks of issue 3,
# point 9 (bench/bench_planner.c), and their tables.
#
#   bash bench/run_planner_bench.sh [--runs N] [--reps R] [--build DIR] [--quick]
#                                   [--only SECTION] [--baseline DIR]
#
#   quality  mean SLR and speedup of every planner and baseline on random
#            Topcuoglu DAGs (n 100 and 1000, CCR, alpha, beta, 4/8/16
#            devices; R DAGs per cell, default 25); deterministic, one run;
#   exact    the gap of HEFT and PEFT to the proven optimum, n = 8, 10, 12
#            on 2-4 devices (R DAGs per (n, devices), default 5); one run;
#   speed    HEFT and PEFT on 25k, 50k and 100k tasks x 16 devices, one
#            process per measurement (time and peak memory growth of the
#            planning call), median of N processes (default 5);
#   sim      synor_simulate on a 1,000,000-task layered workload on the
#            two-node-h100 fabric, layers 100 and 1,000 wide, median of N
#            processes (the 1,000-wide one: min(N, 3));
#   cli      `synor plan` end to end, one process per run, wall clock,
#            median of N: the speed DAG at 100k tasks x 16 devices written
#            as a workload file and a fabric file (bench_planner files,
#            17 significant digits), planned with HEFT, the summary to
#            stdout and, separately, --json into a file; then the phases of
#            the same work in one process (bench_planner phases), medians
#            of N processes. The planned makespan must be the library's.
# Built in Release in DIR (default build-bench; created if missing).
# --quick: fewer DAGs and smaller graphs (a smoke test, not the figures).
# --only SECTION: that section alone (quality, exact, speed, sim or cli).
# --baseline DIR: in the cli section, also time DIR/synor (a Release build
# of another commit), alternating run for run with this build's.
# The full run takes a few minutes on the 2-vCPU VM.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5 reps= build=build-bench quick=0 only= baseline=
while (($#)); do
  case $1 in
    --only) only=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "usage: $0 [--runs N] [--reps R] [--build DIR] [--quick] [--only SECTION]" \
            "[--baseline DIR]" >&2; exit 2 ;;
  esac
done
qreps=${reps:-25} ereps=${reps:-5} sizes="25000 50000 100000" simn=1000000 clin=100000
((quick)) && { qreps=1; ereps=1; sizes="10000 20000"; simn=50000; clin=10000; runs=1; }
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target bench_planner synor >/dev/null
B=$build/bench/bench_planner

field() { sed -n "s/.*[ :]$1=\([-0-9.e+]*\).*/\1/p"; } # value of key=value
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
range() { tr ' ' '\n' <<<"$1" | grep . | sort -g | sed -n '1p;$p' | paste -sd- -; }
range3() { tr ' ' '\n' <<<"$1" | grep . | sort -g | sed -n '1p;$p' | xargs printf '%.3f\n' | paste -sd- -; }

echo "Planner and simulator benchmarks: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'),"
echo "$(date '+%Y-%m-%d %H:%M'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
if want quality; then
echo
echo "== quality: $B quality --reps $qreps"
"$B" quality --reps "$qreps"
fi
if want exact; then
echo
echo "== exact: $B exact --reps $ereps"
"$B" exact --reps "$ereps"
fi
if want speed; then
echo
echo "== speed: $B speed --tasks N --runs 1 (one process per run), medians of $runs"
echo
printf '| planner | tasks | edges | median s (range) | peak growth MiB | bytes per task | bytes per (task + edge) |\n'
printf '|---|---|---|---|---|---|---|\n'
for st in heft peft; do
  for n in $sizes; do
    t= mib= bpt= bpe= edges=
    for ((r = 0; r < runs; r++)); do
      line=$("$B" speed --tasks "$n" --runs 1 | grep "strategy=$st ")
      t+="$(field median_s <<<"$line") "
      mib+="$(field peak_mib <<<"$line") "
      bpt+="$(field bytes_per_task <<<"$line") "
      bpe+="$(field bytes_per_task_edge <<<"$line") "
      edges=$(field edges <<<"$line")
    done
    printf '| %s | %s | %s | %.3f (%s) | %.2f | %.0f | %.1f |\n' "$st" "$n" "$edges" \
      "$(med "$t")" "$(range "$t")" "$(med "$mib")" "$(med "$bpt")" "$(med "$bpe")"
  done
done
fi
if want sim; then
echo
echo "== sim: $B sim --tasks $simn --width W --runs 1 (one process per run)"
echo
printf '| width | runs | simulate s (range) | heap events | events/s | useful events | useful/s | tasks/s | transfer hops | superseded | peak RSS MiB |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
notes=
for w in 100 1000; do
  k=$runs
  ((w == 1000 && k > 3)) && k=3
  t= ev= us= hops= sup= rss= first=
  for ((r = 0; r < k; r++)); do
    out=$("$B" sim --tasks "$simn" --width "$w" --runs 1)
    line=$(grep '^sim run=' <<<"$out")
    [ -z "$first" ] && first="$(head -2 <<<"$out")"$'\n'"simulated makespan=$(field makespan <<<"$line")"
    t+="$(field simulate_s <<<"$line") "
    ev=$(field events <<<"$line") us=$(field useful_events <<<"$line")
    hops=$(field transfer_hops <<<"$line") sup=$(field superseded <<<"$line")
    rss+="$(grep median_simulate_s <<<"$out" | field peak_rss_mib) "
  done
  m=$(med "$t")
  printf '| %s | %s | %.2f (%s) | %s | %.3g | %s | %.3g | %.3g | %s | %s | %.0f |\n' "$w" "$k" "$m" \
    "$(range "$t")" "$ev" "$(bc -l <<<"$ev/$m")" "$us" "$(bc -l <<<"$us/$m")" \
    "$(bc -l <<<"$simn/$m")" "$hops" "$sup" "$(med "$rss")"
  notes+="width $w: $first"$'\n'
done
echo
echo "$notes"
fi
if want cli; then
  dir=$build/cli-$clin
  mkdir -p "$dir"
  echo "== cli: $B files --dir $dir --tasks $clin --devices 16"
  files=$("$B" files --dir "$dir" --tasks "$clin" --devices 16)
  echo "$files"
  expect=$(field heft_makespan <<<"$files")
  echo "workload $(du -h "$dir/workload.json" | cut -f1)B"
  echo
  bins=("$build/synor")
  [ -n "$baseline" ] && bins+=("$baseline/synor")
  declare -A tt
  for ((r = 0; r < runs; r++)); do
    for s in "${!bins[@]}"; do
      for out in summary json; do
        args=(plan --workload "$dir/workload.json" --fabric "$dir/fabric.json")
        [ "$out" = json ] && args+=(--json)
        a=$EPOCHREALTIME
        "${bins[$s]}" "${args[@]}" >"$dir/out-$s-$out"
        b=$EPOCHREALTIME
        tt[$s,$out]+="$(bc -l <<<"$b - $a") "
        if [ "$out" = summary ]; then
          got=$(sed -n 's/^heft *planned makespan \([0-9.]*\) s.*/\1/p' "$dir/out-$s-$out")
          [ "$got" = "$expect" ] || { echo "makespan $got, expected $expect" >&2; exit 1; }
        fi
      done
    done
  done
  printf '| build | command | runs | wall s, median (range) |\n|---|---|---|---|\n'
  for s in "${!bins[@]}"; do
    for out in summary json; do
      cmd="synor plan --workload W --fabric F"
      [ "$out" = json ] && cmd+=" --json > plan.json"
      printf '| %s | `%s` | %s | %.3f (%s) |\n' "${bins[$s]}" "$cmd" "$runs" \
        "$(med "${tt[$s,$out]}")" "$(range3 "${tt[$s,$out]}")"
    done
  done
  echo
  echo "== phases: BUILD/bench/bench_planner phases --dir $dir (one process per run), medians of $runs"
  echo
  keys="fabric_s load_s cost_s plan_s write_s free_s total_s read_s dom_parse_s peak_rss_mib"
  printf '| build |'; for k in $keys; do printf ' %s |' "$k"; done; printf '\n|---|'
  for k in $keys; do printf -- '---|'; done; printf '\n'
  for s in "${!bins[@]}"; do
    declare -A ph=()
    for ((r = 0; r < runs; r++)); do
      line=$("$(dirname "${bins[$s]}")/bench/bench_planner" phases --dir "$dir")
      for k in $keys; do ph[$k]+="$(field "$k" <<<"$line") "; done
    done
    printf '| %s |' "${bins[$s]}"
    for k in $keys; do printf ' %.3f (%s) |' "$(med "${ph[$k]}")" "$(range3 "${ph[$k]}")"; done
    printf '\n'
  done
fi
