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

# contradictions and options that would be ignored
check wl-both          [ "$(rc "$S" workload "$W" --preset tiny)" = 2 ]
check plan-both        [ "$(rc "$S" plan --workload "$W" --preset tiny)" = 2 ]
check cost-both        [ "$(rc "$S" cost --workload "$W" --preset tiny)" = 2 ]
check sim-both         [ "$(rc "$S" simulate --workload "$W" --preset tiny)" = 2 ]
check plan-file-batch  [ "$(rc "$S" plan --workload "$W" --batch 4)" = 2 ]
check plan-file-batch-msg grep -q "shape a --preset" "$tmp/err"
check wl-file-train    [ "$(rc "$S" workload "$W" --train)" = 2 ]
check plan-json-cmp    [ "$(rc "$S" plan --preset tiny --json --compare)" = 2 ]
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

echo "options.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
