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
check deadline-met  grep -q "^  deadline 0.010000 s met, 0.00[0-9]* s to spare" "$tmp/out"
check money-line    grep -q "^cost      planned makespan 0.00[0-9]* s, energy [0-9.]* J, money 0.0000[0-9]* USD" "$tmp/out"

# a deadline no plan meets: the plan, the shortfall, exit status 3
check missed        [ "$(rc "$S" plan --preset tiny --strategy energy --deadline 0.0001)" = 3 ]
check missed-out    grep -q "^  deadline 0.000100 s missed by 0.00[0-9]* s" "$tmp/out"
check missed-err    grep -q "^synor plan: deadline 0.000100 s missed by 0.00[0-9]* s (the fastest plan found takes 0.00[0-9]* s)" "$tmp/err"
check missed-heft   [ "$(rc "$S" plan --preset tiny --deadline 0.0001)" = 3 ]
check missed-heft-e grep -q "(the heft plan takes 0.00[0-9]* s)" "$tmp/err"
check missed-json   [ "$(rc "$S" plan --preset tiny --strategy cost --deadline 0.0001 --json)" = 3 ]
check missed-valid  "$JC" format synor-plan/1 <"$tmp/out"
check missed-fields grep -q '"deadline_s": 0.0001,' "$tmp/out"
check missed-false  grep -q '"deadline_met": false,' "$tmp/out"
check missed-short  grep -qE '"shortfall_s": 0.00[0-9]+' "$tmp/out"
check met-json      [ "$(rc "$S" plan --preset tiny --strategy energy --deadline 1 --json)" = 0 ]
check met-true      grep -q '"deadline_met": true,' "$tmp/out"
check met-short     grep -q '"shortfall_s": 0,' "$tmp/out"
check no-deadline   [ "$(rc "$S" plan --preset tiny --json)" = 0 ]
check no-dl-fields  sh -c "! grep -q deadline '$tmp/out'"
check energy-field  grep -qE '"energy_j": [0-9.]+' "$tmp/out"

# looser deadlines never give more energy (attention block on gpu-only:
# HEFT 54 us, the least-energy plan 64 us)
A=$SRC/workloads/attention-block-fp32.json
prev=""
for d in 0.000055 0.00006 0.000063 0.000064 0.00007 0.0001 0.001; do
  check "ladder-$d" [ "$(rc "$S" plan --workload "$A" --fabric gpu-only --strategy energy --deadline $d --json)" = 0 ]
  e=$(sed -n 's/^  "energy_j": \([^,]*\),$/\1/p' "$tmp/out")
  echo "$d $e" >>"$tmp/ladder"
  [ -n "$prev" ] && check "ladder-$d-le" awk -v a="$e" -v b="$prev" 'BEGIN{exit !(a <= b)}'
  prev=$e
done
check ladder-gains  awk 'NR==1{f=$2} END{exit !($2 < f * 0.9)}' "$tmp/ladder"

# --compare --json: one document with every plan
check cmp-json      [ "$(rc "$S" plan --preset tiny --compare --json)" = 0 ]
check cmp-valid     "$JC" format synor-plan-compare/1 <"$tmp/out"
check cmp-plans     [ "$(grep -c '"format": "synor-plan/1"' "$tmp/out")" = 8 ]
check cmp-energy    [ "$(grep -c '"energy_j": ' "$tmp/out")" = 8 ]
check cmp-pipeline  [ "$(rc "$S" plan --workload "$SRC/workloads/pipeline.json" --compare --json --deadline 1)" = 0 ]
check cmp-pipe-ok   "$JC" format synor-plan-compare/1 <"$tmp/out"
check cmp-exact     grep -q '"strategy": "exact"' "$tmp/out"
check cmp-dl-top    grep -q '"deadline_s": 1,' "$tmp/out"
check cmp-missed    [ "$(rc "$S" plan --preset tiny --compare --json --deadline 0.0001)" = 3 ]
check cmp-miss-ok   "$JC" format synor-plan-compare/1 <"$tmp/out"
check cmp-miss-err  grep -q "deadline 0.000100 s missed by every strategy; the fastest plan (.*) takes" "$tmp/err"
check cmp-text-dl   [ "$(rc "$S" plan --preset tiny --compare --deadline 0.0001)" = 3 ]
check cmp-text-all  [ "$(grep -c "^  deadline 0.000100 s missed by" "$tmp/out")" = 8 ]
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
