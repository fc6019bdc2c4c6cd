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
check compare-all   [ "$(grep -c "planned makespan" "$tmp/out")" = 10 ]
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
check cmp-plans     [ "$(grep -c '"format": "synor-plan/1"' "$tmp/out")" = 10 ]
check cmp-energy    [ "$(grep -c '"energy_j": ' "$tmp/out")" = 10 ]
check cmp-pipeline  [ "$(rc "$S" plan --workload "$SRC/workloads/pipeline.json" --compare --json --deadline 1)" = 0 ]
check cmp-pipe-ok   "$JC" format synor-plan-compare/1 <"$tmp/out"
check cmp-exact     grep -q '"strategy": "exact"' "$tmp/out"
check cmp-dl-top    grep -q '"deadline_s": 1,' "$tmp/out"
check cmp-missed    [ "$(rc "$S" plan --preset tiny --compare --json --deadline 0.0001)" = 3 ]
check cmp-miss-ok   "$JC" format synor-plan-compare/1 <"$tmp/out"
check cmp-miss-err  grep -q "deadline 0.000100 s missed by every strategy; the fastest plan (.*) takes" "$tmp/err"
check cmp-text-dl   [ "$(rc "$S" plan --preset tiny --compare --deadline 0.0001)" = 3 ]
check cmp-text-all  [ "$(grep -c "^  deadline 0.000100 s missed by" "$tmp/out")" = 10 ]
check cost          [ "$(rc "$S" cost --preset tiny --rows 5)" = 0 ]
check cost-path     grep -q "cpu-mediated" "$tmp/out"
check cost-more     grep -q "more tasks" "$tmp/out"
check cost-dash     grep -q " -$" "$tmp/out"

# a literature problem: Topcuoglu, Hariri & Wu 2002 (explicit cost rows and
# edge costs): HEFT's makespan is the paper's 80, the optimum 73
TOP=(--workload "$SRC/workloads/topcuoglu-2002.json" --fabric three-processors)
check lit-heft      [ "$(rc "$S" plan "${TOP[@]}" --strategy heft)" = 0 ]
check lit-heft-80   grep -q "^heft      planned makespan 80.000000 s," "$tmp/out"
check lit-exact     [ "$(rc "$S" plan "${TOP[@]}" --strategy exact)" = 0 ]
check lit-exact-73  grep -q "^exact     planned makespan 73.000000 s (optimal)," "$tmp/out"
check lit-compare   [ "$(rc "$S" plan "${TOP[@]}" --compare)" = 0 ]
check lit-compare-n [ "$(grep -c "planned makespan" "$tmp/out")" = 11 ]
check lit-improve   [ "$(rc "$S" plan "${TOP[@]}" --strategy improve)" = 0 ]
check lit-improve-m grep -qE "^improve   planned makespan (7[3-9]|80)\.000000 s," "$tmp/out"
check lit-cost      [ "$(rc "$S" cost "${TOP[@]}")" = 0 ]
check lit-cost-row  grep -qE "^n10 +custom +21000.0000 +7000.0000 +16000.0000$" "$tmp/out"
check lit-cost-edge grep -q "replace these on 15 edges" "$tmp/out"
check lit-json      [ "$(rc "$S" plan "${TOP[@]}" --json)" = 0 ]
check lit-json-ok   "$JC" format synor-plan/1 <"$tmp/out"
# a cost row that does not fit the fabric: named at cost time
sed 's/"exec_s": \[14, 16,  9\]/"exec_s": [14, 16]/' "$SRC/workloads/topcuoglu-2002.json" >"$tmp/short.json"
check lit-short     [ "$(rc "$S" plan --workload "$tmp/short.json" --fabric three-processors)" = 1 ]
check lit-short-m   grep -q 'task "n1": exec_s has 2 values but fabric "three-processors" has 3 devices (P1, P2, P3)' "$tmp/err"
check lit-other-fab [ "$(rc "$S" plan --workload "$SRC/workloads/topcuoglu-2002.json" --fabric seed)" = 1 ]
check lit-other-m   grep -q 'exec_s has 3 values but fabric "seed" has 4 devices' "$tmp/err"

check no-workload   [ "$(rc "$S" plan)" = 2 ]
check bad-strategy  [ "$(rc "$S" plan --preset tiny --strategy fastest)" = 2 ]
check bad-preset    [ "$(rc "$S" plan --preset gpt-5)" = 1 ]
check bad-preset-m  grep -q 'no model preset "gpt-5"' "$tmp/err"
check bad-number    [ "$(rc "$S" plan --preset tiny --prompt -3)" = 2 ]
check too-long      [ "$(rc "$S" plan --preset tiny --prompt 250 --new 10)" = 1 ]
check cpu-only-oom  [ "$(rc "$S" cost)" = 2 ]

# weights with a place: a 4-stage pipeline with 60 GB per stage on four H100s
P="$SRC/workloads/pipeline-4x8-60gb.json"
check pipe          [ "$(rc "$S" plan --workload "$P" --fabric four-h100)" = 0 ]
check pipe-gpus     [ "$(grep -cE "^  h100\.[0-3] .* 8 tasks" "$tmp/out")" = 4 ]
check pipe-cpu      grep -qE "^  cpu .* 0 tasks" "$tmp/out"
# 12 copies: each stage's weights onto its GPU, the 8 micro-batches' inputs onto the first
check pipe-setup    grep -qE "^weights   preloaded: .* 12 copies .* before the run" "$tmp/out"
# exact beyond 15 tasks, with weights: within its time limit, optimal or a proven bound
check pipe-exact    [ "$(rc "$S" plan --workload "$P" --fabric four-h100 --strategy exact --time-limit 0.5)" = 0 ]
check pipe-exact-m  grep -qE "^exact +planned makespan [0-9.]+ s \((optimal|not proven: bound [0-9.]+ s, gap [0-9.]+%)\)," "$tmp/out"
check pipe-exact-js [ "$(rc "$S" plan --workload "$P" --fabric four-h100 --strategy exact --time-limit 0.5 --json)" = 0 ]
check pipe-exact-b  grep -q '"bound_s": ' "$tmp/out"
# --time-limit: seconds above 0, for exact (or --compare) only
check tl-zero       [ "$(rc "$S" plan "${TOP[@]}" --strategy exact --time-limit 0)" = 2 ]
check tl-text       [ "$(rc "$S" plan "${TOP[@]}" --strategy exact --time-limit soon)" = 2 ]
check tl-neg        [ "$(rc "$S" plan "${TOP[@]}" --strategy exact --time-limit -1)" = 2 ]
check tl-missing    [ "$(rc "$S" plan "${TOP[@]}" --strategy exact --time-limit)" = 2 ]
check tl-heft       [ "$(rc "$S" plan "${TOP[@]}" --strategy heft --time-limit 5)" = 2 ]
check tl-heft-m     grep -q "time-limit limits --strategy exact" "$tmp/err"
check tl-ok         [ "$(rc "$S" plan "${TOP[@]}" --strategy exact --time-limit 5 --json)" = 0 ]
check tl-ok-js      grep -q '"optimal": true' "$tmp/out"
check tl-ok-bound   grep -q '"bound_s": 73' "$tmp/out"
check pipe-load     [ "$(rc "$S" plan --workload "$P" --fabric four-h100 --weights load --json)" = 0 ]
check pipe-load-js  "$JC" weights load <"$tmp/out"
check pipe-copies   grep -q '"from": "cpu"' "$tmp/out"
check pipe-sim      [ "$(rc "$S" simulate --workload "$P" --fabric four-h100 --baseline none)" = 0 ]
check pipe-sim-msg  grep -q "12 copies, 0.9[0-9]* s of setup, not in the makespan" "$tmp/out"
check pipe-strat    [ "$(rc "$S" plan --workload "$P" --fabric four-h100 --strategy pipeline)" = 0 ]
check pipe-stages   grep -q "^pipeline  4 stages, 8 micro-batches, no bound" "$tmp/out"
check pipe-stage3   grep -qE "^  stage 3 +h100.3 +layers 3-3 \(s3.mb0 .. s3.mb7\)" "$tmp/out"
check pipe-bubble   grep -q "bubble in all: 29.1% of the stages' time (GPipe's (S-1)/(M+S-1) = 27.3%)" "$tmp/out"
check pipe-buf      [ "$(rc "$S" plan --workload "$P" --fabric four-h100 --strategy pipeline --buffers 1 --micro-batches 8)" = 0 ]
check pipe-buf-msg  grep -q "buffers of 1 micro-batches" "$tmp/out"
check pipe-buf-bad  [ "$(rc "$S" plan --workload "$P" --strategy pipeline --buffers 0)" = 2 ]
check pipe-sim2     [ "$(rc "$S" simulate --workload "$P" --fabric four-h100 --strategy pipeline --baseline heft)" = 0 ]
# a preset split into a pipeline: training in micro-batches
check mb-pipe       [ "$(rc "$S" plan --preset llama-2-7b --train --micro-batches 8 --fabric four-h100 --strategy pipeline)" = 0 ]
check mb-pipe-4     grep -q "^pipeline  4 stages, 8 micro-batches" "$tmp/out"
check mb-workload   [ "$(rc "$S" workload --preset tiny --train --micro-batches 2)" = 2 ]
check mb-dp         [ "$(rc "$S" plan --preset tiny --train --micro-batches 2 --dp 2)" = 2 ]
check mb-dp-msg     grep -q "not both" "$tmp/err"
# data and tensor parallelism
check dp-auto       [ "$(rc "$S" plan --preset llama-2-7b --train --fabric two-node-h100)" = 0 ]
check dp-4gpus      [ "$(grep -cE "^  gpu-[ab]\.[01] .* [1-9][0-9]* tasks" "$tmp/out")" = 4 ]
check dp-tree       [ "$(rc "$S" plan --preset llama-2-7b --train --fabric two-node-h100 --dp 4 --collective tree)" = 0 ]
check dp-tree-4     [ "$(grep -cE "^  gpu-[ab]\.[01] .* [1-9][0-9]* tasks" "$tmp/out")" = 4 ]
check dp-one        [ "$(rc "$S" plan --preset llama-2-7b --train --fabric two-node-h100 --dp 1)" = 0 ]
check dp-one-gpu    [ "$(grep -cE "^  gpu-[ab]\.[01] .* [1-9][0-9]* tasks" "$tmp/out")" = 1 ]
check dp-batch      [ "$(rc "$S" plan --preset tiny --train --dp 2 --batch 3)" = 1 ]
check dp-batch-msg  grep -q "batch 3 does not split into 2 replicas" "$tmp/err"
check dp-no-train   [ "$(rc "$S" plan --preset tiny --dp 2)" = 2 ]
check dp-coll-bad   [ "$(rc "$S" plan --preset tiny --train --collective star)" = 2 ]
check dp-coll-msg   grep -q "'star' is not ring or tree" "$tmp/err"
check tp-8          [ "$(rc "$S" plan --preset llama-2-70b --tp 8 --fabric eight-h100 --new 4 --prompt 64)" = 0 ]
check tp-8-gpus     [ "$(grep -cE "^  h100\.[0-7] .* [1-9][0-9]* tasks" "$tmp/out")" = 8 ]
check tp-train      [ "$(rc "$S" plan --preset tiny --tp 2 --train)" = 2 ]
check tp-bad        [ "$(rc "$S" plan --preset llama-2-70b --tp 3)" = 1 ]
check tp-bad-msg    grep -q "must be multiples of 3 shards" "$tmp/err"
check tp-file       [ "$(rc "$S" plan --workload "$P" --tp 2)" = 2 ]
check tp-pipeline   [ "$(rc "$S" plan --preset llama-2-70b --tp 8 --fabric eight-h100 --new 2 --prompt 8 --strategy pipeline)" = 1 ]
check tp-pipe-msg   grep -q "colocation groups" "$tmp/err"
sed 's/"bytes": 60000000000/"bytes": 3500000000000/' "$P" >"$tmp/big.json"
check too-big       [ "$(rc "$S" plan --workload "$tmp/big.json" --fabric four-h100)" = 1 ]
check too-big-msg   grep -q 'task "s1.mb0" fits in no device.s memory: the closest is "cpu", where datum "w1" .* short' "$tmp/err"
check bad-weights   [ "$(rc "$S" plan --preset tiny --weights lazily)" = 2 ]
check bad-weights-m grep -q "'lazily' is not preload or load" "$tmp/err"
check bad-storage   [ "$(rc "$S" simulate --preset tiny --storage-gbps -1)" = 2 ]
check bad-storage-m grep -q -- "--storage-gbps: '-1'" "$tmp/err"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
