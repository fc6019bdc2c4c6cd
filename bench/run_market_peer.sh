#!/usr/bin/env bash
# run_market_peer.sh - the spot market benchmark of issue 5 side by side with
# liquibook (C++, header-only order book), in one run on this machine.
#
#   bash bench/run_market_peer.sh --liquibook DIR [--runs N] [-n COMMANDS] [--seed S]
#
# DIR: a liquibook work tree (github.com/enewhuis/liquibook) or its src/
# directory; only its headers are used (Boost is needed only for its tests).
# It is never copied into this tree.
#
# Synor side: bench/bench_market.c in Release (build-bench-mkt/), run with
# --memory-only (in-memory throughput and per-command service time, no
# journal). Peer side: bench/peer/liquibook_bench.cpp, our driver, compiled
# here with g++ -O2 -std=c++17 -I DIR/src into a temporary directory (not
# built by CMake: no new build dependency). bench_market --dump-stream writes
# the seeded stream once; the driver replays exactly those commands (GTC and
# IOC -> add, cancel -> cancel, amend -> replace), and a checking pass
# compares, command by command, the units each taker order traded on both
# sides. Then --runs (default 5) processes of each, interleaved so that
# machine noise hits both alike; medians and the ratio synor/liquibook.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5 n=10000000 seed=42 lbdir=
while (($#)); do
  case $1 in
    --liquibook) lbdir=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) echo "usage: $0 --liquibook DIR [--runs N] [-n COMMANDS] [--seed S]" >&2; exit 2 ;;
  esac
done
if [[ -n $lbdir && -f $lbdir/src/book/order_book.h ]]; then
  lbinc=$lbdir/src
elif [[ -n $lbdir && -f $lbdir/book/order_book.h ]]; then
  lbinc=$lbdir
else
  echo "$0: --liquibook DIR must be a liquibook work tree or its src/ (book/order_book.h)" >&2
  exit 2
fi

cmake -S . -B build-bench-mkt -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench-mkt -j"$(nproc)" --target bench_market >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -O2 -std=c++17 -isystem "$lbinc" bench/peer/liquibook_bench.cpp -o "$tmp/liquibook_bench"
S=build-bench-mkt/bench/bench_market
L=$tmp/liquibook_bench
lbrev=$(git -C "$lbdir" rev-parse --short HEAD 2>/dev/null || echo "unknown revision")

echo "== stream and check (seed $seed, $n commands; liquibook $lbrev)"
$S -n "$n" -s "$seed" --dump-stream "$tmp/stream.bin" --memory-only | sed -n '1,2p'
$L "$tmp/stream.bin" --check | grep -v 'throughput\|service time'

num() { sed -n "s/.*$1 *\([0-9.]*\).*/\1/p"; } # the number after a label
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
declare -A res last
collect() { # side, output of one process
  last[$1]=$(grep 'throughput' <<<"$2" | num 'journal:')
  res[$1,tp]+="${last[$1]} "
  for p in p50 p99 p99.9; do res[$1,$p]+="$(grep 'service' <<<"$2" | num "$p ") "; done
}
run_synor() { collect s "$($S -n "$n" -s "$seed" --memory-only)"; }
run_liquibook() { collect l "$($L "$tmp/stream.bin")"; }
for ((r = 0; r < runs; r++)); do # alternate which side goes first
  if ((r % 2)); then run_liquibook; run_synor; else run_synor; run_liquibook; fi
  echo "run $((r + 1)): synor ${last[s]} M/s, liquibook ${last[l]} M/s"
done
med() { tr ' ' '\n' <<<"${res[$1]:-}" | grep . | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

echo
echo "Spot market, $n commands, one thread, in memory: $(nproc) CPUs," \
  "$(lscpu | sed -n 's/^Model name: *//p'), medians of $runs runs; load:$(uptime | sed 's/.*load average://')"
printf '%-34s %12s %12s %18s\n' "" synor liquibook "synor/liquibook"
sy=$(med s,tp) lq=$(med l,tp)
printf '%-34s %12s %12s %18s\n' "throughput (M commands/s)" "$sy" "$lq" "$(ratio "$sy" "$lq")"
for p in p50 p99 p99.9; do
  sy=$(med s,$p) lq=$(med l,$p)
  printf '%-34s %12s %12s %18s\n' "service time $p (ns)" "$sy" "$lq" "$(ratio "$sy" "$lq")"
done
echo "all runs, throughput (M commands/s): synor ${res[s,tp]}| liquibook ${res[l,tp]}"
echo "(throughput: higher is better; service time: lower is better, a ratio below 1 favours synor)"
