#!/usr/bin/env bash
# synor plan and synor cost: strategies, JSON, the cost matrix, errors.
# usage: plan.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

check strategies    [ "$(rc "$S" plan --strategies)" = 0 ]
check strat-peft    grep -q "^peft" "$tmp/out"
check fabrics       [ "$(rc "$S" plan --fabrics)" = 0 ]
check fabrics-seed  grep -q "^seed: cpu h100 tpu-v5p lpu" "$tmp/out"
check heft          [ "$(rc "$S" plan --preset tiny --fabric seed)" = 0 ]
check heft-line     grep -q "^heft      planned makespan" "$tmp/out"
check compare       [ "$(rc "$S" plan --preset tiny --compare)" = 0 ]
check compare-all   [ "$(grep -c "planned makespan" "$tmp/out")" = 8 ]
check json          [ "$(rc "$S" plan --workload "$SRC/workloads/pipeline.json" --strategy energy --json)" = 0 ]
check json-ok       "$JC" format synor-plan/1 <"$tmp/out"
check deadline      [ "$(rc "$S" plan --preset tiny --strategy cost --deadline 0.01)" = 0 ]
check cost          [ "$(rc "$S" cost --preset tiny --rows 5)" = 0 ]
check cost-path     grep -q "cpu-mediated" "$tmp/out"
check cost-more     grep -q "more tasks" "$tmp/out"
check cost-dash     grep -q " -$" "$tmp/out"

check no-workload   [ "$(rc "$S" plan)" = 2 ]
check bad-strategy  [ "$(rc "$S" plan --preset tiny --strategy fastest)" = 2 ]
check bad-preset    [ "$(rc "$S" plan --preset gpt-5)" = 1 ]
check bad-preset-m  grep -q 'no model preset "gpt-5"' "$tmp/err"
check bad-number    [ "$(rc "$S" plan --preset tiny --prompt -3)" = 2 ]
check too-long      [ "$(rc "$S" plan --preset tiny --prompt 250 --new 10)" = 1 ]
check cpu-only-oom  [ "$(rc "$S" cost)" = 2 ]

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
