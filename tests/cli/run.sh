#!/usr/bin/env bash
# synor run: real runs of a workload and of the tiled presets on this
# machine, their traces and reports, and bad input.
# usage: run.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
# the performance model file goes here, not into the user's home
export XDG_DATA_HOME=$tmp/xdg
W=$SRC/workloads/mlp-fp32.json

# a workload, for real, with its trace and exports
check mlp           [ "$(rc "$S" run "$W" --cpu-workers 2 --opencl off --trace "$tmp/t.json" --chrome "$tmp/c.json" --svg "$tmp/g.svg")" = 0 ]
check mlp-title     grep -q "REAL RUN: MLP block" "$tmp/out"
# --cuda off leaves the GPUs out: with the CUDA test double (CTest's CUDA_MOCK_DIR) the run
# has a cuda0 without it and none with it
if [ -n "${CUDA_MOCK_DIR:-}" ] && [ -e "$CUDA_MOCK_DIR/libcuda.so.1" ]; then
  M="$CUDA_MOCK_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  check cuda-on        [ "$(rc env LD_LIBRARY_PATH="$M" "$S" run "$W" --cpu-workers 2 --opencl off)" = 0 ]
  check cuda-on-devs   grep -qE "^  cuda0 " "$tmp/out"
  check cuda-off       [ "$(rc env LD_LIBRARY_PATH="$M" "$S" run "$W" --cpu-workers 2 --opencl off --cuda off)" = 0 ]
  check cuda-off-devs  sh -c '! grep -qE "^  cuda[0-9]" "$0"' "$tmp/out"
else
  echo "run: no CUDA test double (run through ctest): --cuda off not checked"
fi
check mlp-devices   grep -q "Devices of this run (real)" "$tmp/out"
check mlp-workers   grep -q "^  cpu/1 " "$tmp/out"
check mlp-16        grep -q "16 tasks in" "$tmp/out"
# what ran a row has its own column: no CPU name, however long, pushes it out
check mlp-real      grep -qE "^  cpu/0 +.* host, real +[0-9.]+ m?s " "$tmp/out"
check mlp-energy    grep -q "Energy: not measured   Cost: not measured" "$tmp/out"
check mlp-no-0j     sh -c '! grep -q "Energy: 0.0 J" "$0"' "$tmp/out"
sum_off=$(sed -n 's/.*checksum of the results \([^ ]*\).*/\1/p' "$tmp/out")
check mlp-sum       [ -n "$sum_off" ]
check trace-json    "$JC" format synor-trace/1 <"$tmp/t.json"
check chrome-json   "$JC" <"$tmp/c.json"
check svg           grep -q "^<svg" "$tmp/g.svg"
check report        [ "$(rc "$S" report "$tmp/t.json")" = 0 ]
check report-util   grep -q "PROCESSOR UTILIZATION" "$tmp/out"
# a real run compared with a simulation: no "energy -100%"
"$S" simulate --preset tiny --fabric gpu-only --trace "$tmp/sim.json" >/dev/null
check vs-sim        [ "$(rc "$S" report "$tmp/t.json" --baseline "$tmp/sim.json")" = 0 ]
check vs-sim-energy grep -q "energy n/a (not measured in the run)" "$tmp/out"
check vs-sim-no-100 sh -c '! grep -q "%" "$0" || ! grep -q -- "-100" "$0"' "$tmp/out"
# a transformer block: norms, grouped-KV attention, softmax, embedding gather
check attn          [ "$(rc "$S" run "$SRC/workloads/attention-block-fp32.json" --cpu-workers 2 --opencl off)" = 0 ]
check attn-sum      grep -q "15 tasks in .* checksum of the results 255.05" "$tmp/out"
check attn-ops      grep -qE "attention|embedding" "$tmp/out"
# the same inputs give the same results on one worker
check mlp-1         [ "$(rc "$S" run "$W" --cpu-workers 1 --opencl off)" = 0 ]
check mlp-1-sum     grep -q "checksum of the results $sum_off " "$tmp/out"
# ... and with an OpenCL device (PoCL) taking part, when there is one
if "$S" devices 2>/dev/null | grep -qi opencl; then
  check mlp-cl      [ "$(rc "$S" run "$W" --cpu-workers 1 --opencl all)" = 0 ]
  check mlp-cl-dev  grep -q "^  opencl0 " "$tmp/out"
  check mlp-cl-move grep -qE "^  host->opencl0 +(host|unified) +[0-9]+ +[0-9]+" "$tmp/out"
  check mlp-cl-sum  grep -q "checksum of the results $sum_off " "$tmp/out"
  # a fresh performance model: placement calibrates, and the run says so
  check cl-calib    [ "$(rc "$S" run "$W" --cpu-workers 1 --opencl all --perfmodel "$tmp/fresh.json")" = 0 ]
  check cl-calib-msg grep -q "Placement was still calibrating: [1-9][0-9]* of 16 tasks" "$tmp/out"
  # following a plan made on a fabric named like this run's devices
  cat >"$tmp/fab.json" <<'FAB'
{"format": "synor-fabric/1", "name": "this-machine", "currency": "USD", "nodes": [{"name": "host"}],
 "devices": [{"name": "cpu", "profile": "amd-epyc-9654", "node": "host", "price_per_hour": "1.00"},
             {"name": "opencl0", "profile": "nvidia-h100-sxm", "node": "host", "price_per_hour": "1.00"}]}
FAB
  "$S" plan --workload "$W" --fabric "$tmp/fab.json" --json >"$tmp/plan.json"
  planned=$(grep -c '"device": "opencl0"' "$tmp/plan.json")
  check plan-cl     [ "$planned" -gt 0 ]
  check plan-run    [ "$(rc "$S" run "$W" --plan "$tmp/plan.json" --opencl all --trace "$tmp/p.json")" = 0 ]
  check plan-sum    grep -q "checksum of the results $sum_off " "$tmp/out"
  check plan-follow grep -qE "^  opencl0 .* $planned  " "$tmp/out"
  check plan-nodev  [ "$(rc "$S" run "$W" --plan "$tmp/plan.json" --opencl off)" = 1 ]
  check plan-nodev-msg grep -q "plan.json:[0-9]*:[0-9]*: tasks\[0\]: device 'opencl0' is not a device of this run (cpu)" "$tmp/err"
fi
# a plan with its energy, money and deadline verdict (every task on "cpu")
"$S" plan --workload "$W" --fabric gpu-only --strategy cpu-only --deadline 1 --json >"$tmp/cpuplan.json"
check plan-deadline [ "$(rc "$S" run "$W" --plan "$tmp/cpuplan.json" --cpu-workers 2 --opencl off)" = 0 ]
check plan-dl-sum   grep -q "16 tasks in" "$tmp/out"
printf '{"format": "synor-plan/1", "tasks": [{"id": "nope", "device": "cpu"}]}' >"$tmp/badplan.json"
check plan-task     [ "$(rc "$S" run "$W" --plan "$tmp/badplan.json")" = 1 ]
check plan-task-msg grep -q "badplan.json:1:[0-9]*: tasks\[0\]: task 'nope' is not a task of workload" "$tmp/err"

# tiled presets, checked against OpenBLAS
for algo in gemm cholesky; do
  check tiled-$algo [ "$(rc "$S" run --tiled $algo --n 384 --nb 128 --cpu-workers 2)" = 0 ]
  err=$(sed -n 's/.*largest difference from OpenBLAS: \([^ ]*\).*/\1/p' "$tmp/out")
  check tiled-$algo-err awk -v e="$err" 'BEGIN { exit !(e != "" && e + 0 < 1e-2) }'
done
check tiled-fp64    [ "$(rc "$S" run --tiled cholesky --n 300 --nb 64 --dtype fp64)" = 0 ]
# the ratio to OpenBLAS: medians of warmed-up repetitions, not one cold call
check tiled-reps    [ "$(rc "$S" run --tiled gemm --n 256 --nb 128 --reps 3)" = 0 ]
check tiled-reps-msg grep -q "medians of 3 repetitions after a warm-up: runtime .* ratio [0-9.]*)" "$tmp/out"
check reps-no-tiled [ "$(rc "$S" run "$W" --reps 3)" = 2 ]
check reps-zero     [ "$(rc "$S" run --tiled gemm --reps 0)" = 2 ]
check reps-big      [ "$(rc "$S" run --tiled gemm --reps 101)" = 2 ]
# --cpu-workers: 1 to 1024, a usage error outside (never a runtime failure);
# more than the hardware threads runs, with a warning
check workers-0     [ "$(rc "$S" run "$W" --cpu-workers 0)" = 2 ]
check workers-2000  [ "$(rc "$S" run "$W" --cpu-workers 2000)" = 2 ]
check workers-2000-msg grep -q "cpu-workers: '2000' is not an integer in 1..1024" "$tmp/err"
threads=$(nproc --all)
check workers-over  [ "$(rc "$S" run "$W" --cpu-workers $((threads + 1)) --opencl off --no-perfmodel)" = 0 ]
check workers-warn  grep -q "warning: --cpu-workers $((threads + 1)) is more than this machine's $threads hardware threads" "$tmp/err"

# bad input: exit 1 with the task, datum and sizes named; usage errors exit 2
check no-kernel     [ "$(rc "$S" run "$SRC/workloads/pipeline.json")" = 1 ]
check no-kernel-msg grep -q "task 'load': operation 'data_load' has no kernel for real runs" "$tmp/err"
sed 's/"m": 256, "n": 2048, "k": 1024/"m": 256, "n": 2048, "k": 1000/' "$W" >"$tmp/bad.json"
check sizes         [ "$(rc "$S" run "$tmp/bad.json")" = 1 ]
check sizes-msg     grep -q "task 'fc1.0' (matmul): data 'x.0' has 1048576 bytes; operand A (m x k) needs 1024000" "$tmp/err"
sed 's/"dtype": "fp32", "dims": {"elements": 524288}/"dtype": "bf16", "dims": {"elements": 524288}/' "$W" >"$tmp/bf16.json"
check dtype         [ "$(rc "$S" run "$tmp/bf16.json")" = 1 ]
check dtype-msg     grep -q "data type bf16" "$tmp/err"
check missing       [ "$(rc "$S" run "$tmp/nope.json")" = 1 ]
check missing-msg   grep -q "nope.json" "$tmp/err"
check no-args       [ "$(rc "$S" run)" = 2 ]
check both          [ "$(rc "$S" run "$W" --tiled gemm)" = 2 ]
check bad-strategy  [ "$(rc "$S" run "$W" --strategy fastest)" = 2 ]
check bad-opencl    [ "$(rc "$S" run "$W" --opencl maybe)" = 2 ]
check bad-n         [ "$(rc "$S" run --tiled gemm --n 100 --nb 200)" = 2 ]
check bad-int       [ "$(rc "$S" run --tiled gemm --n -5)" = 2 ]
check help          [ "$(rc "$S" run --help)" = 0 ]

# the performance model: kept across runs in the XDG data directory
PM=$XDG_DATA_HOME/synor/perfmodel.json
check pm-file       "$JC" format synor-perfmodel/1 <"$PM"
check pm-note       [ "$(rc "$S" run "$W" --cpu-workers 1 --opencl off)" = 0 ]
check pm-saved      grep -q "Performance model: [1-9][0-9]* entries before the run, [1-9][0-9]* after, saved to $PM" "$tmp/out"
check pm-show       [ "$(rc "$S" perfmodel)" = 0 ]
check pm-show-rows  grep -qE "^  matmul +cpu +[0-9a-f]{16} +[0-9]+ .* yes$" "$tmp/out"
check pm-show-json  sh -c '"$0" perfmodel --json | "$1" format synor-perfmodel/1' "$S" "$JC"
check pm-other      [ "$(rc "$S" run --tiled gemm --n 256 --nb 128 --opencl off --perfmodel "$tmp/pm2.json")" = 0 ]
check pm-other-file grep -q '"op": "gemm"' "$tmp/pm2.json"
check pm-none       [ "$(rc "$S" run "$W" --opencl off --no-perfmodel)" = 0 ]
check pm-none-note  grep -q "Performance model: none" "$tmp/out"
printf '{"format": "synor-perfmodel/1",\n "entries": [{"op": "gemm", "device": "cpu", "footprint": "12", "count": -1}]}\n' >"$tmp/badpm.json"
cp "$tmp/badpm.json" "$tmp/badpm.orig"
check pm-bad        [ "$(rc "$S" run "$W" --opencl off --perfmodel "$tmp/badpm.json")" = 1 ]
check pm-bad-msg    grep -q "badpm.json:2:" "$tmp/err"
check pm-bad-kept   cmp -s "$tmp/badpm.json" "$tmp/badpm.orig"
check pm-bad-show   [ "$(rc "$S" perfmodel --file "$tmp/badpm.json")" = 1 ]
check pm-both       [ "$(rc "$S" run "$W" --perfmodel x --no-perfmodel)" = 2 ]
check pm-usage      [ "$(rc "$S" perfmodel --bogus)" = 2 ]

echo "run.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
