#!/usr/bin/env bash
# The simulated training iteration against the real one (issue 13, item 4):
# `synor train --report --simulate` on this machine for three configurations
# of the default model (A: batch 16 over 2 replicas, B: batch 16 on 1
# replica, C: batch 8 over 2), each predicted from a calibration cache that
# a run of A made just before (so A, B and C are predictions, not fits; the
# calibrating runs' own fits are printed as "fit"). Prints each run's ratio
# line and load, then the medians. WORKERS (default 2) CPU workers, so a
# bigger machine runs the same configurations.
# usage: bench/train_sim.sh SYNOR [RUNS (3)] [STEPS (20)] [CORPUS]
#   KEEP=DIR in the environment keeps every run's report there.
#   CORPUS: default the first MB of the King James Bible (`bible`, Debian's
#   bible-kjv; where it is absent, the project's docs), else any text file.
set -u
S=${1:?usage: train_sim.sh SYNOR [RUNS] [STEPS] [CORPUS]}
RUNS=${2:-3}; STEPS=${3:-20}; CORPUS=${4:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache}
if [ -z "$CORPUS" ]; then
  CORPUS=$tmp/corpus.txt
  if command -v bible >/dev/null; then
    bible gen1:1-rev22:21 | head -c 1000000 >"$CORPUS"
  else # the project's documentation (ASCII)
    cat "$(dirname "$0")"/../README.md "$(dirname "$0")"/../docs/*.md | LC_ALL=C tr -cd '\11\12\15\40-\176' >"$CORPUS"
  fi
fi
common=(--corpus "$CORPUS" --workers "${WORKERS:-2}" --steps "$STEPS" --eval-every 0 --ckpt-every 0 --quiet --report --simulate)
# the tokenizer once
"$S" train --corpus "$CORPUS" --out "$tmp/tok" --steps 1 --batch 2 --dim 32 --hidden 32 --layers 1 \
  --heads 2 --kv-heads 2 --quiet >/dev/null 2>&1 || { echo "tokenizer failed"; exit 1; }
common+=(--tokenizer "$tmp/tok/tokenizer.bin")

run() { # name cache args...
  local name=$1 cache=$2; shift 2
  local load; load=$(cut -d' ' -f1-3 /proc/loadavg)
  "$S" train "${common[@]}" --out "$tmp/run" --perfmodel "$cache" "$@" >"$tmp/out" 2>"$tmp/err" ||
    { echo "$name: failed"; cat "$tmp/err"; return 1; }
  local line; line=$(grep '^synor train: simulated iteration' "$tmp/out")
  echo "$name  load $load  $line"
  [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$tmp/out" "$KEEP/$name-$(date +%s).out"
  echo "$line" | sed -E 's/.*simulated iteration ([0-9.]+) ms vs real ([0-9.]+) ms \(ratio ([0-9.]+).*/\1 \2 \3/' >>"$tmp/$name.txt"
  rm -rf "$tmp/run"
}

# each prediction right after the run of A that calibrated its cache (a
# fresh one: only that run's samples), to keep the machine's state alike
for i in $(seq "$RUNS"); do
  for cfg in "A --batch 16 --replicas 2" "B --batch 16 --replicas 1" "C --batch 8 --replicas 2"; do
    set -- $cfg; name=$1; shift
    rm -f "$tmp/pm.json"
    run fit "$tmp/pm.json" --batch 16 --replicas 2 || exit 1
    run "$name" "$tmp/pm.json" "$@"
  done
done
echo "medians (simulated ms, real ms, ratio) over $RUNS runs:"
for name in fit A B C; do
  [ -s "$tmp/$name.txt" ] || continue
  med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  echo "$name  $(cut -d' ' -f1 "$tmp/$name.txt" | med)  $(cut -d' ' -f2 "$tmp/$name.txt" | med)  $(cut -d' ' -f3 "$tmp/$name.txt" | med)"
done
