#!/usr/bin/env bash
# synor simulate and synor report: the seed scenario, traces, exports, errors.
# usage: simulate.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

# the seed scenario with no arguments
check seed          [ "$(rc "$S" simulate)" = 0 ]
check seed-title    grep -q "HETEROGENEOUS INFERENCE REPORT (simulated devices" "$tmp/out"
check seed-model    grep -q "Workload: Llama-2-70B inference" "$tmp/out"
check seed-devices  grep -qE "^  lpu +Groq LPU \(GroqChip 1\) +simulated " "$tmp/out"
check seed-baseline grep -q "BASELINE: gpu-only on seed" "$tmp/out"
check seed-speedup  grep -qE "Speedup over the baseline: [0-9]+\.[0-9]+x" "$tmp/out"
check seed-assume   grep -q "ASSUMPTIONS" "$tmp/out"
check seed-int8     grep -q "With int8 weights" "$tmp/out"
check seed-timeline grep -q "TIMELINE" "$tmp/out"
check seed-idle     grep -q "Processors with no task (1 of 4): lpu" "$tmp/out"
# same input, same output
cp "$tmp/out" "$tmp/first"
check seed-again    [ "$(rc "$S" simulate)" = 0 ]
check seed-determ   cmp -s "$tmp/out" "$tmp/first"

# a trace, its report, exports
check trace         [ "$(rc "$S" simulate --preset tiny --fabric gpu-only --strategy peft --trace "$tmp/t.json" --chrome "$tmp/c.json" --svg "$tmp/g.svg")" = 0 ]
check trace-json    "$JC" format synor-trace/1 <"$tmp/t.json"
check chrome-json   "$JC" <"$tmp/c.json"
check chrome-events grep -q '"traceEvents"' "$tmp/c.json"
check svg           grep -q "^<svg" "$tmp/g.svg"
check report        [ "$(rc "$S" report "$tmp/t.json" --width 30)" = 0 ]
check report-util   grep -q "PROCESSOR UTILIZATION" "$tmp/out"
check report-strat  grep -q "Strategy: peft" "$tmp/out"
check report-base   [ "$(rc "$S" report "$tmp/t.json" --baseline "$tmp/t.json")" = 0 ]
check report-1x     grep -q "Speedup over the baseline: 1.00x" "$tmp/out"
check dynamic       [ "$(rc "$S" simulate --preset tiny --strategy dynamic --baseline none)" = 0 ]
check dynamic-name  grep -q "Strategy: dynamic" "$tmp/out"
# the runtime's own placement rules (synor_simulate_runtime)
check runtime       [ "$(rc "$S" simulate --preset tiny --strategy runtime --baseline dynamic)" = 0 ]
check runtime-name  grep -q "Strategy: runtime" "$tmp/out"
check runtime-pre   [ "$(rc "$S" simulate --preset tiny --strategy runtime --preempt cpu0@0.001 --baseline none)" = 2 ]
check workload-file [ "$(rc "$S" simulate --workload "$SRC/workloads/pipeline.json" --fabric seed)" = 0 ]
check training      [ "$(rc "$S" simulate --preset tiny --train --prompt 64 --fabric two-node-h100 --strategy heft)" = 0 ]
# a literature problem (explicit costs): the simulation follows the plan to
# the same makespan, HEFT's 80 and the optimal 73
TOP=(--workload "$SRC/workloads/topcuoglu-2002.json" --fabric three-processors --baseline none)
check lit-heft      [ "$(rc "$S" simulate "${TOP[@]}" --strategy heft)" = 0 ]
check lit-heft-80   grep -q "Makespan: 80.000 s" "$tmp/out"
check lit-exact     [ "$(rc "$S" simulate "${TOP[@]}" --strategy exact)" = 0 ]
check lit-exact-73  grep -q "Makespan: 73.000 s" "$tmp/out"

# deadlines: the report's Deadline line; a missed one exits 3
check dl-met        [ "$(rc "$S" simulate --preset tiny --strategy energy --deadline 1 --baseline none)" = 0 ]
check dl-met-line   grep -q "^  Deadline: 1.000 s, met with 99[0-9.]* ms to spare$" "$tmp/out"
check dl-missed     [ "$(rc "$S" simulate --preset tiny --strategy cost --deadline 0.0001 --baseline none)" = 3 ]
check dl-miss-line  grep -q "^  Deadline: 100.0 us, MISSED by [0-9.]* ms$" "$tmp/out"
check dl-miss-err   grep -q "^synor simulate: deadline 0.000100 s missed by 0.00[0-9]* s (cost: simulated makespan 0.00[0-9]* s; planned 0.00[0-9]* s)" "$tmp/err"
check dl-dynamic    [ "$(rc "$S" simulate --preset tiny --strategy dynamic --deadline 0.0001 --baseline none)" = 3 ]
check dl-dyn-err    grep -q "(dynamic: simulated makespan 0.00[0-9]* s)" "$tmp/err"
check dl-trace      [ "$(rc "$S" simulate --preset tiny --strategy energy --deadline 0.0001 --trace "$tmp/dl.json")" = 3 ]
check dl-trace-ok   "$JC" format synor-trace/1 <"$tmp/dl.json"
check no-dl-line    [ "$(rc "$S" simulate --preset tiny --baseline none)" = 0 ]
check no-dl-none    sh -c "! grep -q Deadline '$tmp/out'"

# errors
check bad-strategy  [ "$(rc "$S" simulate --strategy fastest)" = 2 ]
check bad-option    [ "$(rc "$S" simulate --colour)" = 2 ]
check bad-fabric    [ "$(rc "$S" simulate --preset tiny --fabric nope)" = 1 ]
check bad-fabric-m  grep -q 'no built-in fabric "nope"' "$tmp/err"
check no-trace      [ "$(rc "$S" report "$tmp/none.json")" = 1 ]
check no-arg        [ "$(rc "$S" report)" = 2 ]
echo '{"format": "synor-trace/1", "workload": 3}' >"$tmp/bad.json"
check bad-trace     [ "$(rc "$S" report "$tmp/bad.json")" = 1 ]
check bad-trace-pos grep -q "bad.json:1:" "$tmp/err"
# a task far beyond the makespan is refused on load (the timeline would
# convert the out-of-range column to int: undefined behaviour)
cat >"$tmp/far.json" <<'EOF'
{"format": "synor-trace/1", "workload": "w", "fabric": "f", "strategy": "s", "currency": "USD",
 "makespan_s": 1, "energy_active_j": 0, "energy_idle_j": 0, "money_micro": 0,
 "devices": [{"name": "a", "product": "A", "kind": "cpu", "simulated": true, "idle_w": 0, "price_micro": 0}],
 "tasks": [{"id": "x", "op": "relu", "device": 0, "start": 0, "end": 1e300, "energy_j": 0}],
 "transfers": []}
EOF
check far-trace     [ "$(rc "$S" report "$tmp/far.json")" = 1 ]
check far-trace-msg grep -q "far.json:4:.*tasks\\[0\\].end: 1e+300 is after the makespan 1" "$tmp/err"
check help          [ "$(rc "$S" simulate --help)" = 0 ]
check help-tiled    grep -qF -- "--tiled gemm|cholesky" "$tmp/out"

# 7B training on the two-node fabric: data parallel over all four GPUs
check dp-sim        [ "$(rc "$S" simulate --preset llama-2-7b --train --fabric two-node-h100 --baseline none)" = 0 ]
check dp-sim-work   grep -q "Llama-2-7B training iteration, 4 data-parallel replicas (ring)" "$tmp/out"
check dp-sim-gpus   [ "$(grep -cE "^  gpu-[ab]\.[01] .* simulated .* [1-9][0-9]* +all_reduce" "$tmp/out")" = 4 ]

# what-if on this machine (any machine: the rows, not the figures, are checked)
MC="$tmp/measure.json"
check whatif        [ "$(rc "$S" whatif --workload "$SRC/workloads/mlp-fp32.json" --measure-cache "$MC" --add nvidia-h100-sxm --add groq-lpu:2 --replace cpu0=amd-epyc-9654)" = 0 ]
check whatif-base   grep -qE "^  this machine \(local\) +[0-9.]+ s" "$tmp/out"
check whatif-add    grep -qE "^  \+ 1 x nvidia-h100-sxm +[0-9.]+ s .*x$" "$tmp/out"
check whatif-swap   grep -qE "^  cpu0 -> amd-epyc-9654 +[0-9.]+ s" "$tmp/out"
check whatif-all    grep -q "^  all of the changes" "$tmp/out"
check whatif-price  grep -q "nvidia-h100-sxm: simulated from its profile .*3.00 USD per hour" "$tmp/out"
check whatif-cache  [ -s "$MC" ]
check whatif-bad    [ "$(rc "$S" whatif --workload "$SRC/workloads/mlp-fp32.json" --measure-cache "$MC" --add no-such-chip)" = 1 ]
check whatif-bad-m  grep -q 'no profile "no-such-chip"' "$tmp/err"
check whatif-where  [ "$(rc "$S" whatif --workload "$SRC/workloads/mlp-fp32.json" --measure-cache "$MC" --replace gpu9=groq-lpu)" = 1 ]
check whatif-count  [ "$(rc "$S" whatif --workload "$SRC/workloads/mlp-fp32.json" --add groq-lpu:0)" = 2 ]
check whatif-fab    [ "$(rc "$S" whatif --workload "$SRC/workloads/mlp-fp32.json" --fabric seed)" = 2 ]
check whatif-none   [ "$(rc "$S" whatif)" = 2 ]

# the local fabric calibrated on real runs: two runs of two CPU workers
# record each kernel's time (3 samples per entry after the second: the MLP
# has two tasks per entry), then every task time on the two worker devices
# comes from the model
PM="$tmp/pm.json"
check local-run1    [ "$(rc "$S" run "$SRC/workloads/mlp-fp32.json" --opencl off --cpu-workers 2 --perfmodel "$PM")" = 0 ]
check local-run2    [ "$(rc "$S" run "$SRC/workloads/mlp-fp32.json" --opencl off --cpu-workers 2 --perfmodel "$PM")" = 0 ]
check local-sim     [ "$(rc "$S" simulate --workload "$SRC/workloads/mlp-fp32.json" --fabric local --opencl off --perfmodel "$PM" --cpu-workers 2 --measure-cache "$MC" --strategy dynamic --baseline none)" = 0 ]
check local-devs    [ "$(grep -cE "^  cpu0\.[01] .* simulated " "$tmp/out")" = 2 ]
check local-model   grep -q "Task times on its devices: 32 of 32 from the performance model" "$tmp/out"
# a CPU whose power is not known (this VM's): energy "not modelled", never 0 J
check local-energy  sh -c '! grep -q "Energy: 0.0 J" "$0"' "$tmp/out"
check local-roof    [ "$(rc "$S" simulate --workload "$SRC/workloads/mlp-fp32.json" --fabric local --opencl off --no-perfmodel --measure-cache "$MC" --baseline none)" = 0 ]
check local-roof-m  grep -q "0 of [0-9]* from the performance model.* [1-9][0-9]* from the roofline alone" "$tmp/out"
check local-preset  [ "$(rc "$S" simulate --preset tiny --fabric local --perfmodel "$PM" --measure-cache "$MC" --baseline none)" = 0 ]
check local-pre-cpu grep -q "the CPU as one device\." "$tmp/out"
check local-only    [ "$(rc "$S" simulate --preset tiny --fabric seed --perfmodel "$PM")" = 2 ]
check local-only-m  grep -q "options of the local fabric" "$tmp/err"
check local-both    [ "$(rc "$S" simulate --fabric local --perfmodel "$PM" --no-perfmodel)" = 2 ]
check local-bad-pm  sh -c 'echo "{" >"$0"' "$tmp/bad.json"
check local-bad     [ "$(rc "$S" simulate --workload "$SRC/workloads/mlp-fp32.json" --fabric local --opencl off --perfmodel "$tmp/bad.json" --measure-cache "$MC")" = 1 ]
check local-bad-m   grep -q "bad.json" "$tmp/err"
# the runtime's tiled graphs as workloads of every planning command
check tiled-sim     [ "$(rc "$S" simulate --tiled cholesky --n 512 --nb 128 --fabric local --opencl off --no-perfmodel --cpu-workers 2 --measure-cache "$MC" --baseline none)" = 0 ]
check tiled-sim-w   grep -q "Workload: tiled Cholesky, n 512, tiles of 128, fp32" "$tmp/out"
check tiled-sim-t   grep -q "0 of 40 from the performance model" "$tmp/out"
check tiled-plan    [ "$(rc "$S" plan --tiled gemm --n 512 --nb 128 --fabric four-h100)" = 0 ]
check tiled-bad     [ "$(rc "$S" simulate --tiled lu)" = 2 ]
check tiled-bad-m   grep -q "'lu' is not gemm or cholesky" "$tmp/err"
check tiled-n-only  [ "$(rc "$S" simulate --n 100)" = 2 ]
check tiled-preset  [ "$(rc "$S" simulate --tiled gemm --preset tiny)" = 2 ]
check tiled-nb      [ "$(rc "$S" plan --tiled gemm --n 100 --nb 200 --fabric seed)" = 2 ]
check whatif-cal    [ "$(rc "$S" whatif --workload "$SRC/workloads/mlp-fp32.json" --perfmodel "$PM" --cpu-workers 2 --measure-cache "$MC" --add nvidia-h100-sxm)" = 0 ]
check whatif-cal-m  grep -q "32 of 32 from the performance model" "$tmp/out"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
