#!/usr/bin/env bash
# run_serve_bench.sh - issue 12 item 9's bar for synor serve: 16 concurrent
# streams with Poisson arrivals against the same requests one at a time,
# through the HTTP server: aggregate output tokens/s of each and their
# ratio, and the p99 time per output token of the concurrent run.
#
#   bash bench/run_serve_bench.sh [--runs N] [--requests N] [--rate R]
#                                 [--max-tokens T] [--threads N] [--quick]
#
# The model: stories15M's shape with generated weights, Q8_0 (synor model
# synth --preset stories15m --type q8_0 --text README.md), in a temporary
# directory. One server (Release build in build-bench/, --max-seqs 16)
# answers both sides; bench/bench_serve.c is the client (greedy, streamed,
# the same seeded requests on both sides). Each run measures the
# concurrent side (--concurrency 16 --rate R) then the sequential one
# (--concurrency 1, all at once); the table shows medians of --runs
# (default 3). The default rate (100/s) is above what the server answers,
# so 16 streams stay busy: the concurrent side measures capacity, not the
# arrival rate. --quick: 16 requests of 32 tokens, one run (a smoke test).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3 nreq=64 rate=100 maxt=128 threads=0 quick=0
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --requests) nreq=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --max-tokens) maxt=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "usage: $0 [--runs N] [--requests N] [--rate R] [--max-tokens T] [--threads N] [--quick]" >&2; exit 2 ;;
  esac
done
((quick)) && { runs=1; nreq=16; maxt=32; }

cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" --target synor bench_serve >/dev/null
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
./build-bench/synor model synth "$tmp/s15.gguf" --preset stories15m --type q8_0 --text README.md >/dev/null
targs=()
((threads)) && targs=(--threads "$threads")
./build-bench/synor serve -m "$tmp/s15.gguf" --port 0 --max-seqs 16 --max-queue 1024 "${targs[@]}" \
  >"$tmp/serve.out" 2>"$tmp/serve.err" &
pid=$!
port=
for _ in $(seq 300); do
  port=$(sed -n 's|^synor serve: listening on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$tmp/serve.out")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$tmp/serve.err"; exit 1; }
c=(./build-bench/bench/bench_serve --port "$port" --requests "$nreq" --max-tokens "$maxt" --prompts README.md)
"${c[@]}" --requests 4 --concurrency 4 >/dev/null # warm-up: pages of the model, OpenBLAS

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "model: stories15M shape, Q8_0, generated weights; server: --max-seqs 16 ${targs[*]}"
echo "client: ${c[*]} --seed RUN (greedy, streamed)"
for r in $(seq "$runs"); do
  "${c[@]}" --concurrency 16 --rate "$rate" --seed "$r" | tee -a "$tmp/conc"
  "${c[@]}" --concurrency 1 --rate 0 --seed "$r" | tee -a "$tmp/seq"
done
kill -TERM "$pid"; wait "$pid"; pid=

field() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p" "$2" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ca=$(field "aggregate" "$tmp/conc"); sa=$(field "aggregate" "$tmp/seq")
echo
printf '| %-44s | %-12s | %-12s |\n' "median of $runs runs, $nreq requests x $maxt tokens" "16 streams, Poisson $rate/s" "one at a time"
printf '|%s|%s|%s|\n' "----------------------------------------------" "--------------" "--------------"
printf '| %-44s | %12s | %12s |\n' "aggregate output tokens/s" "$ca" "$sa"
printf '| %-44s | %12s | %12s |\n' "TTFT p50 / p99 ms" "$(field 'TTFT p50' "$tmp/conc") / $(field 'TTFT p50 [0-9.]* ms p99' "$tmp/conc")" "$(field 'TTFT p50' "$tmp/seq") / $(field 'TTFT p50 [0-9.]* ms p99' "$tmp/seq")"
printf '| %-44s | %12s | %12s |\n' "TPOT p50 / p99 ms" "$(field 'TPOT p50' "$tmp/conc") / $(field 'TPOT p50 [0-9.]* ms p99' "$tmp/conc")" "$(field 'TPOT p50' "$tmp/seq") / $(field 'TPOT p50 [0-9.]* ms p99' "$tmp/seq")"
printf '| %-44s | %12s | %12s |\n' "ITL p50 / p99 ms" "$(field 'ITL p50' "$tmp/conc") / $(field 'ITL p50 [0-9.]* ms p99' "$tmp/conc")" "$(field 'ITL p50' "$tmp/seq") / $(field 'ITL p50 [0-9.]* ms p99' "$tmp/seq")"
echo "ratio (16 streams / one at a time): $(awk -v a="$ca" -v b="$sa" 'BEGIN { printf "%.2f", a / b }')"
