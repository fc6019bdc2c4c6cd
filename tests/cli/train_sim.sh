#!/usr/bin/env bash
# synor train --report --simulate: the real run's report, the same training
# iteration simulated on the calibrated local fabric, the comparison and the
# ratio line; the rates recorded into the calibration cache and used, before
# the run, to predict another configuration; bad flag combinations. No
# timing is asserted: only that figures are printed and where they came from.
# usage: train_sim.sh SYNOR_BIN SOURCE_DIR
S=$1; SRC=$2
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export XDG_DATA_HOME=$tmp/xdg XDG_CACHE_HOME=$tmp/cache
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; cat "$tmp/err"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

cat "$SRC"/README.md "$SRC"/docs/*.md | LC_ALL=C tr -cd '\11\12\15\40-\176' >"$tmp/corpus.txt"
small=(--vocab 400 --dim 32 --hidden 64 --layers 2 --heads 4 --kv-heads 2 --seq-len 32 --quiet
       --workers 2 --eval-every 10 --ckpt-every 10 --steps 20)
pm=$tmp/pm.json

# first run: the cache has nothing for this shape, so the rates are this run's
check sim          [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/a" "${small[@]}" --batch 4 --replicas 2 --report --simulate --perfmodel "$pm")" = 0 ]
cp "$tmp/out" "$tmp/a.out"
check sim-real     grep -q "^TRAINING RUN" "$tmp/a.out"
check sim-head     grep -q "^TRAINING RUN, SIMULATED (the calibrated local fabric)" "$tmp/a.out"
check sim-workers  grep -qE "^  cpu0\.1 " "$tmp/a.out"
check sim-table    grep -qE "^  train_fwdbwd +[0-9.]+ ms +[0-9.]+ ms +[0-9.]+$" "$tmp/a.out"
check sim-period   grep -qE "^  iteration \(period\) +[0-9.]+ ms +[0-9.]+ ms +[0-9.]+$" "$tmp/a.out"
check sim-ratio    grep -qE "^synor train: simulated iteration [0-9.]+ ms vs real [0-9.]+ ms \(ratio [0-9.]+; real: mean of [0-9]+ steps; simulated: fitted to this run\)$" "$tmp/a.out"
# every rate in ASSUMPTIONS with its source
for op in "train_fwdbwd per GFLOP" "train_allreduce per MB" "train_adamw per Mparam" \
          "train_load_batch per Mtoken" "train (step barrier)" "train (dispatch)" \
          "train_fwdbwd spread per GFLOP" "train (CPUs obtained)"; do
  check "sim-assume-$op" grep -qF -- "$op: " "$tmp/a.out"
done
check sim-fit-src  grep -q "this run's own [0-9]* tasks (the cache had none for this shape" "$tmp/a.out"
check sim-cache    test -s "$pm"
check sim-cache-op grep -q '"train_fwdbwd per GFLOP"' "$pm"

# another configuration (one replica, another batch) predicted from the cache
check pred         [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/b" "${small[@]}" --batch 6 --replicas 1 --report --simulate --perfmodel "$pm")" = 0 ]
check pred-ratio   grep -qE "^synor train: simulated iteration [0-9.]+ ms vs real [0-9.]+ ms \(ratio [0-9.]+; real: mean of [0-9]+ steps; simulated: predicted from the calibration cache\)$" "$tmp/out"
check pred-src     grep -q "train_fwdbwd per GFLOP: .* from the calibration cache .*pm.json, recorded before this run" "$tmp/out"
check pred-spread  grep -q "train_fwdbwd spread per GFLOP: .* Not used: one replica\." "$tmp/out"
# one worker: the fabric is the CPU's own profile, the replicas take turns
check one-worker   [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/w" "${small[@]}" --batch 4 --replicas 2 --workers 1 --report --simulate --perfmodel "$pm")" = 0 ]
check one-worker-r grep -qE "^synor train: simulated iteration [0-9.]+ ms vs real [0-9.]+ ms" "$tmp/out"
check one-worker-d sh -c "! grep -qE '^  cpu0\.1 ' '$tmp/out'"
# the default cache is the performance model's file in the XDG data directory
check pm-default   [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/c" "${small[@]}" --batch 4 --steps 12 --report --simulate)" = 0 ]
check pm-default-f test -s "$XDG_DATA_HOME/synor/perfmodel.json"

# too few clean steps to compare: said so
check few          [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/f" "${small[@]}" --batch 4 --steps 1 --report --simulate --perfmodel "$pm")" = 1 ]
check few-msg      grep -q "no two consecutive training steps" "$tmp/err"

# bad combinations
check help         sh -c "'$S' train --help | grep -q -- '--simulate        with --report'"
check no-report    [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" --simulate)" = 2 ]
check no-report-msg grep -q "simulate needs --report" "$tmp/err"
check cuda         [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" --report --simulate --device cuda)" = 2 ]
check cuda-msg     grep -q "simulate: CPU workers only" "$tmp/err"
check pm-alone     [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" --perfmodel "$pm")" = 2 ]
check pm-alone-msg grep -q "perfmodel is an option of --simulate" "$tmp/err"
echo '{"format": "nope"}' >"$tmp/bad.json"
check pm-bad       [ "$(rc "$S" train --corpus "$tmp/corpus.txt" --out "$tmp/x" "${small[@]}" --batch 4 --report --simulate --perfmodel "$tmp/bad.json")" = 1 ]
check pm-bad-msg   grep -q "bad.json" "$tmp/err"

echo "train_sim: $pass passed, $fail failed"
[ "$fail" = 0 ]
