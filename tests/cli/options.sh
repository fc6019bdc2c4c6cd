#!/usr/bin/env bash
# Strict options across every command: an unknown flag, --json where a
# command has no JSON output, a value that is not a number in range, or
# options that contradict or would be ignored are usage errors (exit 2)
# naming what is wrong; a file named on the command line must exist.
# (The market's own commands are checked in market.sh.)
# usage: options.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
export XDG_DATA_HOME=$tmp/xdg XDG_CACHE_HOME=$tmp/cache
W=$SRC/workloads/mlp-fp32.json

for c in devices profiles registry workload cost plan simulate report run perfmodel market; do
  check "$c-unknown"     [ "$(rc "$S" $c --frobnicate)" = 2 ]
  check "$c-unknown-msg" grep -q -- "--frobnicate" "$tmp/err"
done
# --json only where there is JSON output
for c in cost simulate report run; do
  check "$c-json"        [ "$(rc "$S" $c --json)" = 2 ]
done
check registry-unknown-is [ "$(rc "$S" registry --frobnicate x)" = 2 ]
check registry-unknown-text grep -q "unknown argument '--frobnicate'" "$tmp/err"

# numbers: the whole value, in range
check plan-deadline    [ "$(rc "$S" plan --preset tiny --deadline soon)" = 2 ]
check plan-deadline-msg grep -q "deadline: 'soon' is not a number" "$tmp/err"
check sim-deadline     [ "$(rc "$S" simulate --preset tiny --deadline -1)" = 2 ]
check sim-width        [ "$(rc "$S" simulate --preset tiny --width 12x)" = 2 ]
check report-width     [ "$(rc "$S" report x.json --width 5)" = 2 ]
check cost-rows        [ "$(rc "$S" cost --preset tiny --rows -1)" = 2 ]
check cost-rows-text   [ "$(rc "$S" cost --preset tiny --rows ten)" = 2 ]
check run-seed         [ "$(rc "$S" run "$W" --seed 1e3)" = 2 ]
check run-width        [ "$(rc "$S" run "$W" --width 0)" = 2 ]
check preset-batch     [ "$(rc "$S" plan --preset tiny --batch 0)" = 2 ]

# every numeric option of plan and simulate, and the preset options of cost
# and workload: garbage, signs, spaces, hex, nan, inf, zero and out of range
# are usage errors naming the option and the value
bad() { # NAME EXPECTED-MESSAGE COMMAND...
  local name=$1 msg=$2; shift 2
  check "$name"     [ "$(rc "$@")" = 2 ]
  check "$name-msg" grep -qF -- "$msg" "$tmp/err"
}
for c in plan simulate; do
  for v in soon -1 -0 nan NaN inf -inf infinity 1e 0x10 ' 1' '+1' '' 1e10 '1 s' 5ms; do
    bad "$c-deadline[$v]" "--deadline: '$v' is not a number" "$S" $c --preset tiny --deadline "$v"
  done
  bad "$c-deadline-0" "--deadline: '0' is not a number of seconds above 0" \
      "$S" $c --preset tiny --deadline 0
  bad "$c-deadline-0.0" "--deadline: '0.0' is not a number of seconds above 0" \
      "$S" $c --preset tiny --deadline 0.0
  check "$c-deadline-none" [ "$(rc "$S" $c --preset tiny --deadline)" = 2 ]
done
for c in plan simulate cost workload; do
  for o in --batch --prompt --new; do
    for v in 0 -1 4x +4 ' 4' '' 1.5 1e3 0x10 99999999999999999999 16777217; do
      bad "$c$o[$v]" "$o: '$v' is not an integer in 1.." "$S" $c --preset tiny $o "$v"
    done
    check "$c$o-none" [ "$(rc "$S" $c --preset tiny $o)" = 2 ]
    check "$c$o-none-msg" grep -qF -- "$o needs a value" "$tmp/err"
  done
  bad "$c-batch-max" "--batch: '1048577' is not an integer in 1..1048576" \
      "$S" $c --preset tiny --batch 1048577
done
for v in 9 401 12x -1 '' ' 60' 6e1; do
  bad "sim-width[$v]" "--width: '$v' is not an integer in 10..400" \
      "$S" simulate --preset tiny --width "$v"
done
for v in -1 ten 1e3; do
  bad "cost-rows[$v]" "--rows: '$v' is not an integer" "$S" cost --preset tiny --rows "$v"
done
# synor run: every numeric option (checked before anything runs)
bad run-workers-0    "--cpu-workers: '0' is not an integer in 1..1024" "$S" run "$W" --cpu-workers 0
bad run-workers-big  "--cpu-workers: '2000' is not" "$S" run "$W" --cpu-workers 2000
bad run-seed-neg     "--seed: '-1' is not an integer" "$S" run "$W" --seed -1
bad run-seed-big     "--seed: '18446744073709551616' is not" "$S" run "$W" --seed 18446744073709551616
bad run-n            "--n: '0' is not an integer in 1.." "$S" run --tiled gemm --n 0
bad run-nb           "--nb: '64k' is not an integer" "$S" run --tiled gemm --nb 64k
bad run-reps         "--reps: '101' is not an integer in 1..100" "$S" run --tiled gemm --reps 101
bad run-cuda         "--cuda 'no': on or off" "$S" run "$W" --cuda no
bad run-width-5      "--width: '5' is not an integer in 10..400" "$S" run "$W" --width 5
# what is accepted
check plan-deadline-ok  [ "$(rc "$S" plan --preset tiny --deadline .5)" = 0 ]
check plan-deadline-exp [ "$(rc "$S" plan --preset tiny --deadline 1e-1)" = 0 ]
check sim-batch-ok      [ "$(rc "$S" simulate --preset tiny --batch 2 --prompt 16 --new 4 --baseline none)" = 0 ]

# contradictions and options that would be ignored
check wl-both          [ "$(rc "$S" workload "$W" --preset tiny)" = 2 ]
check plan-both        [ "$(rc "$S" plan --workload "$W" --preset tiny)" = 2 ]
check cost-both        [ "$(rc "$S" cost --workload "$W" --preset tiny)" = 2 ]
check sim-both         [ "$(rc "$S" simulate --workload "$W" --preset tiny)" = 2 ]
check plan-file-batch  [ "$(rc "$S" plan --workload "$W" --batch 4)" = 2 ]
check plan-file-batch-msg grep -q "shape a --preset" "$tmp/err"
check wl-file-train    [ "$(rc "$S" workload "$W" --train)" = 2 ]
check plan-strat-cmp   [ "$(rc "$S" plan --preset tiny --strategy peft --compare)" = 2 ]
check plan-one-json    [ "$(rc "$S" plan --preset tiny --json)" = 0 ]
check devices-measure  [ "$(rc "$S" devices --no-measure --measure-cache x.json)" = 2 ]

# files named on the command line must exist; the default model may not yet
check pm-missing       [ "$(rc "$S" perfmodel --file "$tmp/nope.json")" = 1 ]
check pm-missing-msg   grep -q "nope.json: cannot open" "$tmp/err"
check pm-missing-none  [ ! -e "$tmp/nope.json" ]
check pm-file-arg      [ "$(rc "$S" perfmodel --file)" = 2 ]
check pm-default       [ "$(rc "$S" perfmodel)" = 0 ]
check pm-default-empty grep -q ": 0 entries" "$tmp/out"
check pm-default-none  [ ! -e "$XDG_DATA_HOME/synor/perfmodel.json" ]

check bad-dtype     [ "$(rc "$S" plan --preset tiny --dtype fp9)" = 2 ]
check bad-dtype-msg grep -q "'fp9' is not a data type" "$tmp/err"

echo "options.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
