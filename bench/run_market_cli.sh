#!/usr/bin/env bash
# run_market_cli.sh - `synor market batch` against the library it drives, in
# one run on this machine (issue 10: "a market CLI as fast as its engine").
#
#   bash bench/run_market_cli.sh [--runs N] [-n COMMANDS] [--seed S] [--fsync batch|never]
#
# The stream: bench_market's seeded command stream (exchange-core's mix, one
# book of about 1,000 resting orders), written once as JSON-lines commands
# (bench_market --jsonl). Library: bench_market --journal-only, the same
# commands already in memory as structs, submitted to a journaled market
# with a commit every 4,096 commands; its own timer around that loop.
# Command line: `synor market batch FILE > EVENTS` on a fresh directory,
# the same journal and commit cadence (a file is committed every 4,096
# lines), reading and parsing every line and writing every event as JSON
# to a file; timed from outside, start-up included. --fsync never runs
# both with the journal written but not fdatasync'ed, which separates the
# work from the disk. The two alternate, --runs times each (default 5);
# the script prints every run, the medians and the ratio CLI / library,
# and checks that each CLI run answered every line without a rejection.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5 n=1000000 seed=42 fsync=batch
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --fsync) fsync=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [-n COMMANDS] [--seed S] [--fsync batch|never]" >&2; exit 2 ;;
  esac
done
case $fsync in batch | never) ;; *) echo "$0: --fsync batch or never" >&2; exit 2 ;; esac

cmake -S . -B build-bench-mkt -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench-mkt -j"$(nproc)" --target bench_market synor >/dev/null
B=build-bench-mkt/bench/bench_market
S=build-bench-mkt/synor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== stream: $n commands, seed $seed; fsync $fsync"
$B -n "$n" -s "$seed" --jsonl "$tmp/stream.jsonl" --journal-only -F "$fsync" -d "$tmp/lib" |
  sed -n '1p'
rm -rf "$tmp/lib"

lib_run() { # prints M commands/s and M commands per CPU second
  $B -n "$n" -s "$seed" --journal-only -F "$fsync" -d "$tmp/lib" |
    sed -n 's/^throughput, journal .*: *\([0-9.]*\) M commands.s (\([0-9.]*\) M.s of CPU).*/\1 \2/p'
  rm -rf "$tmp/lib"
}
cli_run() { # prints M commands/s and CPU seconds (user + system)
  rm -rf "$tmp/cli"
  local t0 t1 cpu
  t0=$(date +%s%N)
  /usr/bin/time -f '%U %S' -o "$tmp/time" "$S" market --dir "$tmp/cli" batch "$tmp/stream.jsonl" \
    --fsync "$fsync" >"$tmp/events.jsonl"
  t1=$(date +%s%N)
  if grep -q '"event":"rejected"' "$tmp/events.jsonl"; then
    echo "$0: the command line rejected a line" >&2
    exit 1
  fi
  cpu=$(awk '{print $1 + $2}' "$tmp/time")
  awk -v n="$n" -v ns=$((t1 - t0)) -v cpu="$cpu" \
    'BEGIN {printf "%.2f %.2f %.2f", n / (ns / 1e9) / 1e6, cpu, n / cpu / 1e6}'
}
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }

libs= lcpus= clis= cpus= ratios= cratios=
for ((r = 1; r <= runs; r++)); do # alternate which goes first
  if ((r % 2)); then l=$(lib_run); c=$(cli_run); else c=$(cli_run); l=$(lib_run); fi
  read -r lm lcps <<<"$l"
  read -r cm ccpu cps <<<"$c"
  ratio=$(awk -v a="$cm" -v b="$lm" 'BEGIN {printf "%.2f", a / b}')
  cratio=$(awk -v a="$cps" -v b="$lcps" 'BEGIN {printf "%.2f", a / b}')
  echo "run $r: library $lm M/s ($lcps M/s of CPU); command line $cm M/s ($ccpu s of CPU:" \
    "$cps M/s of CPU); CLI/library $ratio, of CPU $cratio"
  libs+="$lm "; lcpus+="$lcps "; clis+="$cm "; cpus+="$cps "; ratios+="$ratio "; cratios+="$cratio "
done
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
echo
echo "Medians of $runs runs, $n commands, fsync $fsync: $(nproc) CPUs," \
  "$(lscpu | sed -n 's/^Model name: *//p'); load average:$(uptime | sed 's/.*load average://')"
printf '  library, journaled:            %s M commands/s (%s M per CPU second)\n' \
  "$(med "$libs")" "$(med "$lcpus")"
printf '  synor market batch:            %s M commands/s (%s M per CPU second)\n' \
  "$(med "$clis")" "$(med "$cpus")"
printf '  command line / library:        %s; per CPU second %s (medians of the per-run ratios)\n' \
  "$(med "$ratios")" "$(med "$cratios")"
echo "(wall-clock figures include time spent waiting for a CPU on a busy machine and for the"
echo " disk; CPU seconds count only the work: user and system time of the process, or of the"
echo " library's timed loop)"
