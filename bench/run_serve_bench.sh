#!/usr/bin/env bash
# run_serve_bench.sh - issue 12's continuous-batching bar for synor serve:
# S concurrent streams (default 16) with Poisson arrivals against the same
# requests one at a time, through the HTTP server: aggregate output
# tokens/s of each and their ratio, the p99 time per output token of the
# concurrent run, and starvation (largest TPOT and end-to-end time against
# their medians, fewest tokens a request got).
#
#   bash bench/run_serve_bench.sh [--preset stories15m|stories110m]
#        [--type f32|f16|bf16|q8_0|q4_0] [--gpu-layers N|all|auto] [--gpu N]
#        [--threads N] [--streams S] [--runs N] [--requests N] [--rate R]
#        [--max-tokens T] [--kv-type f32|f16] [--bin DIR] [--quick]
#        [--step-log FILE]
#
# The model: the preset's shape with generated weights of --type (default
# stories15m, q8_0: synor model synth --preset P --type T --text README.md),
# in a temporary directory. One server (--max-seqs S --threads N
# --gpu-layers G) answers both sides; bench/bench_serve.c is the client
# (greedy, streamed, the same seeded requests on both sides). Each run
# measures the concurrent side (--concurrency S --rate R) then the
# sequential one (--concurrency 1, all at once); the table shows medians of
# --runs (default 3). The default rate (100/s) is above what the server
# answers, so the streams stay busy: the concurrent side measures capacity,
# not the arrival rate. --threads: the server's CPU workers (default: one
# per core). --bin DIR: the synor and bench_serve binaries in DIR, nothing
# built (default: a Release build in build-bench/). --kv-type: the server's
# KV cache type (default: serve's own default; older binaries lack it). --quick: 16 requests of
# 32 tokens, one run (a smoke test). The load average of the machine is
# printed before and after.
#
# After each side, where the engine's time went (from /metrics' counters,
# when the server has them): its steps, the mean rows (and prompt rows) a
# step, the seconds inside the batches, the rest of the steps (admission,
# sampling, token events), asleep with no work, and between steps (the
# side's wall time less those). --step-log FILE: the server's step log
# (synor serve --step-log, a line per step) into FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3 nreq=64 rate=100 maxt=128 threads=0 quick=0 streams=16
preset=stories15m type=q8_0 gpul=0 gpu=0 bin= kvtype= steplog=
usage="usage: $0 [--preset stories15m|stories110m] [--type T] [--gpu-layers N|all|auto] [--gpu N]
       [--threads N] [--streams S] [--runs N] [--requests N] [--rate R] [--max-tokens T]
       [--kv-type f32|f16] [--bin DIR] [--quick] [--step-log FILE]"
while (($#)); do
  case $1 in
    --preset) preset=$2; shift 2 ;;
    --type) type=$2; shift 2 ;;
    --gpu-layers) gpul=$2; shift 2 ;;
    --gpu) gpu=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --requests) nreq=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --max-tokens) maxt=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --kv-type) kvtype=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --step-log) steplog=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
((quick)) && { runs=1; nreq=16; maxt=32; }

if [ -z "$bin" ]; then
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSYNOR_BUILD_TESTS=OFF >/dev/null
  cmake --build build-bench -j"$(nproc)" --target synor bench_serve >/dev/null
  synor=./build-bench/synor client=./build-bench/bench/bench_serve
else
  synor=$bin/synor client=$bin/bench_serve
  [ -x "$client" ] || client=$bin/bench/bench_serve
fi
for b in "$synor" "$client"; do
  [ -x "$b" ] || { echo "$0: $b: no such executable" >&2; exit 1; }
done
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
"$synor" model synth "$tmp/m.gguf" --preset "$preset" --type "$type" --text README.md >/dev/null
sargs=(--max-seqs "$streams" --max-queue 1024)
((threads)) && sargs+=(--threads "$threads")
[ -n "$kvtype" ] && sargs+=(--kv-type "$kvtype")
[ "$gpul" != 0 ] && sargs+=(--gpu-layers "$gpul" --gpu "$gpu")
[ -n "$steplog" ] && sargs+=(--step-log "$steplog")
"$synor" serve -m "$tmp/m.gguf" --port 0 "${sargs[@]}" >"$tmp/serve.out" 2>"$tmp/serve.err" &
pid=$!
port=
for _ in $(seq 1200); do
  port=$(sed -n 's|^synor serve: listening on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$tmp/serve.out")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$port" ] || { cat "$tmp/serve.err" >&2; exit 1; }
c=("$client" --port "$port" --requests "$nreq" --max-tokens "$maxt" --prompts README.md)
# Warm-up: pages of the model, caches, GPU, and the KV blocks the runs will
# use - S streams of the measured length. A fresh block's first writes cost
# page faults (~10 us a page on a VM); without this the first side measured
# (the concurrent one) paid them for its first wave while the sequential
# side reused warm blocks.
"${c[@]}" --requests "$streams" --concurrency "$streams" >/dev/null

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
command -v nvidia-smi >/dev/null && [ "$gpul" != 0 ] &&
  echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "model: $preset shape, $type, generated weights; server: ${sargs[*]}"
grep -i "gpu\|layers" "$tmp/serve.err" | head -3 || true
echo "client: ${c[*]} --seed RUN (greedy, streamed)"
# The engine's counters from /metrics: steps rows prompt_rows batch_s step_s idle_s
metrics() { # GET /metrics over bash's /dev/tcp (HTTP/1.0: the server closes after the answer)
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 0
  printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  tr -d '\r' <&3
  exec 3<&-
}
engine() {
  { metrics || true; } | awk '
    $1 == "synor_engine_steps_total" { st = $2 } $1 == "synor_engine_rows_total" { r = $2 }
    $1 == "synor_engine_prompt_rows_total" { p = $2 }
    $1 == "synor_engine_seconds_total{part=\"batch\"}" { b = $2 }
    $1 == "synor_engine_seconds_total{part=\"step\"}" { s = $2 }
    $1 == "synor_engine_seconds_total{part=\"idle\"}" { i = $2 }
    END { print st + 0, r + 0, p + 0, b + 0, s + 0, i + 0 }'
}
side() { # NAME ARGS...: one side of a run, and where the engine's time went
  local name=$1 a b t0 t1
  shift
  t0=$(date +%s.%N); a=$(engine) # the wall time holds both readings
  "${c[@]}" "$@" | tee -a "$tmp/$name"
  b=$(engine); t1=$(date +%s.%N)
  echo "$a $b $t0 $t1" | awk -v n="$name" '$8 > 0 && $8 > $2 {
    steps = $7 - $1; w = $14 - $13; bt = $10 - $4; st = $11 - $5; id = $12 - $6
    printf "engine (%s): %d steps, %.1f rows a step (%.1f prompt rows), wall %.2f s: batches %.2f s (%.0f%%), rest of the steps %.2f s, asleep %.2f s, between steps %.2f s\n",
      n, steps, ($8 - $2) / steps, ($9 - $3) / steps, w, bt, 100 * bt / w, st - bt, id, w - st - id }'
}
for r in $(seq "$runs"); do
  side conc --concurrency "$streams" --rate "$rate" --seed "$r"
  side seq --concurrency 1 --rate 0 --seed "$r"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
kill -TERM "$pid"; wait "$pid"; pid=

field() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p" "$2" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ca=$(field "aggregate" "$tmp/conc"); sa=$(field "aggregate" "$tmp/seq")
echo
printf '| %-44s | %-14s | %-14s |\n' "$preset $type, median of $runs, $nreq x $maxt tok" "$streams streams" "one at a time"
printf '|%s|%s|%s|\n' "----------------------------------------------" "----------------" "----------------"
printf '| %-44s | %14s | %14s |\n' "aggregate output tokens/s" "$ca" "$sa"
pair() { echo "$(field "$1 p50" "$2") / $(field "$1 p50 [0-9.]* ms p99" "$2")"; }
printf '| %-44s | %14s | %14s |\n' "TTFT p50 / p99 ms" "$(pair TTFT "$tmp/conc")" "$(pair TTFT "$tmp/seq")"
printf '| %-44s | %14s | %14s |\n' "TPOT p50 / p99 ms" "$(pair TPOT "$tmp/conc")" "$(pair TPOT "$tmp/seq")"
printf '| %-44s | %14s | %14s |\n' "ITL p50 / p99 ms" "$(pair ITL "$tmp/conc")" "$(pair ITL "$tmp/seq")"
printf '| %-44s | %14s | %14s |\n' "TPOT max ms (starvation)" "$(field 'TPOT max' "$tmp/conc")" "$(field 'TPOT max' "$tmp/seq")"
printf '| %-44s | %14s | %14s |\n' "E2E p50 / max s" "$(field 'E2E p50' "$tmp/conc") / $(field 'E2E p50 [0-9.]* s max' "$tmp/conc")" "$(field 'E2E p50' "$tmp/seq") / $(field 'E2E p50 [0-9.]* s max' "$tmp/seq")"
printf '| %-44s | %14s | %14s |\n' "fewest tokens a request got (of $maxt)" "$(sed -n 's/.*fewest tokens \([0-9-]*\).*/\1/p' "$tmp/conc" | sort -g | head -1)" "$(sed -n 's/.*fewest tokens \([0-9-]*\).*/\1/p' "$tmp/seq" | sort -g | head -1)"
echo "ratio ($streams streams / one at a time): $(awk -v a="$ca" -v b="$sa" 'BEGIN { printf "%.2f", a / b }')"
