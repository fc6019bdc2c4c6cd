#!/usr/bin/env bash
# run_pg_dispatch.sh - the dispatch benchmark (bench_coord_dispatch) on a
# throwaway PostgreSQL cluster (scripts/pg_test_server.sh, fsync on) and on
# SQLite: each configuration REPS times, each PostgreSQL run on a fresh
# database, the given builds interleaved (A, B, A, B, ...) so that they
# share the machine's load; one line per run, then the median per build.
#
#   bench/run_pg_dispatch.sh [-r REPS] [-c "CONFIGS"] [-t] BENCH_BIN [BENCH_BIN...]
#
# CONFIGS: a space-separated list of STORE:COORDINATORS:BATCH:TASKS[:CALLS],
# STORE pg or sqlite, CALLS each coordinator's combined calls at once
# (bench_coord_dispatch --calls, like the coordinator's --db-calls; default
# 2). Default CONFIGS: "pg:1:1:3000 pg:2:1:3000 pg:1:32:10000 pg:2:32:10000
# sqlite:1:32:20000". 50 agents. PG_BIN names PostgreSQL's
# binaries (default /usr/lib/postgresql/15/bin); exit 77 without them.
# Each line: build, configuration, tasks/s, claim p50/p99, the 1-minute load
# average before and after, and the bench's own check (ok). With -t, each
# PostgreSQL line also gives the CPU time per task (user + system, from
# /proc) of the bench process (its coordinators and agents) and of the
# cluster's server processes (the live ones and, through the postmaster's
# children's times, those that exited): "dispatch" from the agents' start
# to their end (the bench measures it when SYNOR_BENCH_PG_PID names the
# postmaster), "run" for the whole process, the job's submission included.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
reps=3
cpu=0
configs="pg:1:1:3000 pg:2:1:3000 pg:1:32:10000 pg:2:32:10000 sqlite:1:32:20000"
while getopts r:c:t o; do
  case $o in
  t) cpu=1 ;;
  r) reps=$OPTARG ;;
  c) configs=$OPTARG ;;
  *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r REPS] [-c CONFIGS] [-t] BENCH_BIN..." >&2; exit 2; }
BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
dir=$(mktemp -d /tmp/synor-pgbench.XXXXXX)
case $configs in
*pg:*)
  url=$(PG_BIN=$BIN bash "$here/scripts/pg_test_server.sh" start "$dir") || exit $?
  trap 'PG_BIN=$BIN bash "$here/scripts/pg_test_server.sh" stop "$dir"' EXIT
  port=${url##*:}; port=${port%%/*} ;;
esac
fresh() { # a fresh database: its URL
  local run=()
  [ "$(id -u)" = 0 ] && run=(runuser -u postgres --)
  "${run[@]}" "$BIN/dropdb" --if-exists -h 127.0.0.1 -p "$port" -U postgres "$1" >/dev/null 2>&1
  "${run[@]}" "$BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres "$1" || return 1
  echo "postgresql://postgres@127.0.0.1:$port/$1"
}
hz=$(getconf CLK_TCK)
ticks() { # user + system ticks of a process (and with c, of its reaped children)
  awk -v c="${2:-}" '{sub(/^.*\) /, ""); t = $12 + $13; if (c) t += $14 + $15; print t}' \
    "/proc/$1/stat" 2>/dev/null || echo 0
}
pg_ticks() { # the cluster's CPU so far: the postmaster with its reaped children, live children
  local pm t kid
  pm=$(head -1 "$dir/data/postmaster.pid")
  t=$(ticks "$pm" c)
  for kid in $(cat /proc/"$pm"/task/*/children 2>/dev/null); do
    t=$((t + $(ticks "$kid")))
  done
  echo "$t"
}
results=$(mktemp)
for cfg in $configs; do
  IFS=: read -r store co batch tasks calls <<<"$cfg"
  for r in $(seq 1 "$reps"); do
    i=0
    for b in "$@"; do
      i=$((i + 1))
      args=(--batch="$batch" ${calls:+--calls="$calls"} 50 "$tasks")
      if [ "$store" = pg ]; then
        u=$(fresh "bench_${i}_$r") || exit 1
        args+=("$u")
        [ "$co" -gt 1 ] && args+=("+$co")
      fi
      l1=$(cut -d' ' -f1 /proc/loadavg)
      [ "$cpu" = 1 ] && [ "$store" = pg ] && p1=$(pg_ticks)
      [ "$cpu" = 1 ] && [ "$store" = pg ] && export SYNOR_BENCH_PG_PID=$(head -1 "$dir/data/postmaster.pid")
      out=$( (nice -n 19 "$b" "${args[@]}" 2>&1; times) )
      unset SYNOR_BENCH_PG_PID
      l2=$(cut -d' ' -f1 /proc/loadavg)
      bt=$(echo "$out" | tail -1)
      out=$(echo "$out" | sed '$d')
      extra=
      if [ "$cpu" = 1 ] && [ "$store" = pg ]; then
        sleep 1 # the server's backends exit after the bench and are reaped
        p2=$(pg_ticks)
        extra=$(echo "$bt" | awk -v p="$((p2 - p1))" -v hz="$hz" -v n="$tasks" '
          function s(x) { split(x, a, /[ms]/); return a[1] * 60 + a[2] }
          {printf " | cpu/task run: bench %.3f ms, postgres %.3f ms", (s($1) + s($2)) * 1000 / n,
             p * 1000 / hz / n}')
        d=$(echo "$out" | sed -n 's/dispatch cpu per task: bench \([0-9.]*\) ms, postgres \([0-9.]*\) ms/\1 \2/p')
        [ -n "$d" ] && extra=" | cpu/task dispatch: bench ${d% *} ms, postgres ${d#* } ms$extra"
      fi
      tps=$(echo "$out" | sed -n 's/.*: \([0-9]*\) tasks\/s.*/\1/p')
      lat=$(echo "$out" | sed -n 's/claim round trip: \(p50 [0-9.]* ms, p99 [0-9.]* ms\).*/\1/p')
      ok=$(echo "$out" | grep -o 'ok$' || echo FAILED)
      echo "build $i ($b) $cfg: ${tps:-?} tasks/s | ${lat:-?} | load $l1-$l2 | $ok$extra"
      echo "$cfg $i ${tps:-0}" >>"$results"
    done
  done
done
echo "medians (tasks/s):"
for cfg in $configs; do
  for i in $(seq 1 $#); do
    m=$(awk -v c="$cfg" -v i="$i" '$1 == c && $2 == i {print $3}' "$results" | sort -n |
      awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : "?"}')
    echo "  $cfg build $i: $m"
  done
done
rm -f "$results"
