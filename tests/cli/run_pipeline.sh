#!/usr/bin/env bash
# synor run --strategy pipeline: the pipeline strategy's stages run for real
# on this run's devices (CPU + PoCL; cuda0 on the CUDA test doubles), the
# PIPELINE section's figures consistent, the results those of a plain run.
# usage: run_pipeline.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
export XDG_DATA_HOME=$tmp/xdg   # never the user's performance model
PM=$tmp/pm.json; MC=$tmp/measure.json

# A small pipeline: 4 layers (a matmul with its own weight, then gelu) x 4
# micro-batches, 32 tasks.
W=$tmp/pipe.json
{
  echo '{"format": "synor-workload/1", "name": "pipeline test", "tasks": ['
  sep=""
  for m in 0 1 2 3; do
    for l in 0 1 2 3; do
      if [ "$l" = 0 ]; then in="{\"name\": \"x.$m\", \"bytes\": 32768}"; else in="{\"name\": \"a$((l-1)).$m\"}"; fi
      if [ "$m" = 0 ]; then wt="{\"name\": \"w$l\", \"bytes\": 262144}"; else wt="{\"name\": \"w$l\"}"; fi
      echo "$sep{\"id\": \"fc$l.$m\", \"op\": \"matmul\", \"dtype\": \"fp32\", \"dims\": {\"m\": 32, \"n\": 256, \"k\": 256}, \"consumes\": [$in, $wt], \"produces\": [{\"name\": \"h$l.$m\", \"bytes\": 32768}]},"
      echo "{\"id\": \"act$l.$m\", \"op\": \"gelu\", \"dtype\": \"fp32\", \"dims\": {\"elements\": 8192}, \"consumes\": [{\"name\": \"h$l.$m\"}], \"produces\": [{\"name\": \"a$l.$m\", \"bytes\": 32768}]}"
      sep=","
    done
  done
  echo ']}'
} >"$W"

# The PIPELINE section's rows: busy within the makespan, bubble = makespan -
# busy (to the printed rounding), every task counted once, none moved off
# its planned device; $1: the stage rows expected (0: any).
consistent() {
  awk -v want="$1" '
    /^PIPELINE / { on = 1; next }
    on && /^  makespan: real / { mk = $3; seen_mk = 1 }
    on && /^  tasks: / { line = $0 }
    on && $1 ~ /^([0-9]+|-)$/ && NF == 10 {
      rows++; if ($1 != "-") stages++
      tasks += $4; moved += $5; busy[rows] = $6; bub[rows] = $8
    }
    END {
      if (!seen_mk || !rows) { print "no PIPELINE section"; exit 1 }
      for (r = 1; r <= rows; r++) {
        if (busy[r] > mk + 1e-6) { print "busy " busy[r] " > makespan " mk; exit 1 }
        d = bub[r] - (mk - busy[r]); if (d < 0) d = -d
        if (d > 2e-6) { print "bubble " bub[r] " != " mk " - " busy[r]; exit 1 }
      }
      if (tasks != 32) { print tasks " tasks in the rows, not 32"; exit 1 }
      if (moved) { print moved " tasks ran off their planned device"; exit 1 }
      if (line !~ /= 32 of the run.s 32 \(0 unmatched\)/) { print "tasks line: " line; exit 1 }
      if (want && stages != want) { print stages " stages, not " want; exit 1 }
    }' "$tmp/out"
}
sum() { grep -o "checksum of the results [^ ]*" "$tmp/out"; }

# the results of a plain CPU run
check plain        [ "$(rc "$S" run "$W" --opencl off --perfmodel "$PM")" = 0 ]
ref=$(sum)
check plain-sum    [ -n "$ref" ]

# CPU only: one device, one stage, said so
check cpu          [ "$(rc "$S" run "$W" --opencl off --strategy pipeline --perfmodel "$PM" --measure-cache "$MC")" = 0 ]
check cpu-title    grep -q "placed by --strategy pipeline" "$tmp/out"
check cpu-one      grep -q "^PIPELINE  1 stage over 4 micro-batches" "$tmp/out"
check cpu-offer    grep -q "One stage: the planner puts every layer on cpu.*--stages N forces" "$tmp/out"
check cpu-numbers  consistent 1
check cpu-sum      [ "$(sum)" = "$ref" ]
check cpu-stages2  [ "$(rc "$S" run "$W" --opencl off --strategy pipeline --stages 2 --perfmodel "$PM" --measure-cache "$MC")" = 1 ]
check cpu-stages2m grep -q "2 pipeline stages: the workload has 4 layers and the fabric 1 devices" "$tmp/err"

# usage
check use-stages   [ "$(rc "$S" run "$W" --stages 2)" = 2 ]
check use-stages-m grep -q "options of --strategy pipeline" "$tmp/err"
check use-tiled    [ "$(rc "$S" run --tiled gemm --strategy pipeline)" = 2 ]
check use-plan     [ "$(rc "$S" run "$W" --strategy pipeline --plan "$tmp/p.json")" = 2 ]
check use-bad      [ "$(rc "$S" run "$W" --strategy nope)" = 2 ]
check use-bad-m    grep -q "mix or pipeline" "$tmp/err"
# the planner's --stages on a simulated fabric
check plan-stages  [ "$(rc "$S" plan --workload "$SRC/workloads/pipeline-4x8-60gb.json" --fabric four-h100 --strategy pipeline --stages 2)" = 0 ]
check plan-stages2 grep -q "pipeline  2 stages" "$tmp/out"
check plan-stages5 [ "$(rc "$S" plan --workload "$SRC/workloads/pipeline-4x8-60gb.json" --fabric four-h100 --strategy pipeline --stages 5)" = 1 ]

# CPU + PoCL: the layers over both, data through the memory manager
if "$S" run "$W" --opencl all --no-perfmodel 2>/dev/null | grep -qE "^  opencl0 .* opencl "; then
  check pocl       [ "$(rc "$S" run "$W" --opencl all --strategy pipeline --stages 2 --perfmodel "$PM" --measure-cache "$MC")" = 0 ]
  check pocl-two   grep -q "^PIPELINE  2 stages over 4 micro-batches" "$tmp/out"
  check pocl-devs  sh -c 'grep -qE "^  [01] +cpu " "$0" && grep -qE "^  [01] +opencl0 " "$0"' "$tmp/out"
  check pocl-nums  consistent 2
  check pocl-xfer  grep -qE "data between memory spaces: [1-9][0-9]* transfers" "$tmp/out"
  check pocl-sum   [ "$(sum)" = "$ref" ]
  check pocl-mb    [ "$(rc "$S" run "$W" --opencl all --strategy pipeline --stages 2 --micro-batches 2 --buffers 1 --perfmodel "$PM" --measure-cache "$MC")" = 0 ]
  check pocl-mb-n  grep -q "^PIPELINE  2 stages over 2 micro-batches" "$tmp/out"
  check pocl-mb-b  grep -q "buffers 1 bounds the plan" "$tmp/out"
  check pocl-mb-c  consistent 2
else
  echo "run_pipeline: no PoCL (OpenCL CPU device); the CPU + PoCL pipeline is skipped"
fi

# cuda0 as a stage, on the CUDA test doubles (host memory behind the driver
# API and cuBLAS; tests/cuda_mock)
mock=$(dirname "$S")/tests/cuda-mock
if [[ -e $mock/libcuda.so.1 && -e $mock/libcublas.so.13 ]]; then
  # Under AddressSanitizer, LeakSanitizer's tracer (GCC 12's libasan)
  # crashes scanning thread-local storage at this run's exit on some hosts
  # ("Tracer caught signal 11" on a Zen 3 VM, kernel 6.18, with the tree of
  # before session 12 too); without that scan it reports glibc's own dlopen
  # scope array (add_to_global_resize, suppressed in tests/lsan.supp). The
  # rest of the leak check stays on; outside ASan the option is unread.
  lsan=${LSAN_OPTIONS:+$LSAN_OPTIONS:}use_tls=0
  check cuda       [ "$(LSAN_OPTIONS=$lsan LD_LIBRARY_PATH=$mock rc "$S" run "$W" --opencl off --strategy pipeline --stages 2 --perfmodel "$tmp/pm-cuda.json" --measure-cache "$MC")" = 0 ]
  check cuda-devs  sh -c 'grep -qE "^  [01] +cpu " "$0" && grep -qE "^  [01] +cuda0 " "$0"' "$tmp/out"
  check cuda-nums  consistent 2
  check cuda-sum   [ "$(sum)" = "$ref" ]
else
  echo "run_pipeline: no CUDA test doubles beside the binary; the cuda0 stage is skipped"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
