#!/usr/bin/env bash
# synor simulate --preempt: a device preempted mid-run (warning, checkpoint,
# leaving or replaced), the cost against the run without it, the marks in
# the trace and its reports, strict options.
# usage: preempt.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
W=(--workload "$SRC/workloads/topcuoglu-2002.json" --fabric three-processors --strategy dynamic --baseline none)

# P3 warned at 20 s, deadline 30 s, a 2 s checkpoint, no replacement
check gone          [ "$(rc "$S" simulate "${W[@]}" --preempt P3@20:10 --checkpoint 2 --trace "$tmp/t.json" --chrome "$tmp/c.json")" = 0 ]
check gone-cost     grep -q "makespan   80.000000 s without preemption, 89.000000 s with: +9.000000 s (+11.25%)" "$tmp/out"
check gone-count    grep -q "PREEMPTION: 1 warned before the run ended, 1 left the fabric, 0 replaced" "$tmp/out"
check gone-marks    grep -qE "^ +20.000 s preempted +P3 +deadline 30.000000 s; no replacement" "$tmp/out"
check gone-ckpt     grep -qE "checkpoint +P3 +until .*2.000000 s as stated" "$tmp/out"
check gone-stop     grep -qE "^ +30.000 s device stopped +P3" "$tmp/out"
cp "$tmp/out" "$tmp/first"
check determ        [ "$(rc "$S" simulate "${W[@]}" --preempt P3@20:10 --checkpoint 2)" = 0 ]
check determ-same   cmp -s "$tmp/out" "$tmp/first"
check trace-json    "$JC" format synor-trace/1 <"$tmp/t.json"
check trace-marks   grep -q '"name": "device stopped"' "$tmp/t.json"
check chrome-json   "$JC" <"$tmp/c.json"
check chrome-mark   grep -q '"ph":"i","s":"t","pid":1,"tid":2,"name":"preempted"' "$tmp/c.json"
check report        [ "$(rc "$S" report "$tmp/t.json")" = 0 ]
check report-marks  grep -qE "^ +30.000 s device stopped +P3" "$tmp/out"
check svg           [ "$(rc "$S" report "$tmp/t.json" --svg "$tmp/g.svg")" = 0 ]

# replacement capacity at 1.50 per device-hour: the device stays
check kept          [ "$(rc "$S" simulate "${W[@]}" --preempt P3@20:10 --checkpoint 2 --replacement 1.50)" = 0 ]
check kept-cost     grep -q "makespan   80.000000 s without preemption, 80.000000 s with: +0.000000 s" "$tmp/out"
check kept-count    grep -q "0 left the fabric, 1 replaced" "$tmp/out"
check kept-price    grep -q "replacement at 1500000 micro-units per hour" "$tmp/out"
check kept-money    grep -q "money      USD 0.00 without preemption, USD 0.020833 with: +0.020833" "$tmp/out"
# a task cut at the deadline re-runs elsewhere
check cut           [ "$(rc "$S" simulate "${W[@]}" --preempt P3@25:1)" = 0 ]
check cut-mark      grep -q 'aborted .*task "n2" cut at the deadline' "$tmp/out"
check cut-cost      grep -q "80.000000 s without preemption, 92.000000 s with" "$tmp/out"
# two devices, the checkpoint by size (default bandwidth)
check two           [ "$(rc "$S" simulate --preset tiny --fabric four-h100 --strategy dynamic --baseline none --preempt h100.0@0.0001:0.001 --preempt h100.1@0.0002:0.001 --checkpoint-gbps 2)" = 0 ]
check two-bytes     grep -q "bytes of task output at 2e+09 B/s" "$tmp/out"
check help          [ "$(rc "$S" simulate --help)" = 0 ]
check help-opt      grep -q -- "--preempt DEVICE@T\[:WARNING\]" "$tmp/out"

# strict options: usage errors (2) naming the value
usage() { local name=$1 want=$2; shift 2
  check "$name"      [ "$(rc "$S" simulate "$@")" = 2 ]
  check "$name-msg"  grep -qF -- "$want" "$tmp/err"; }
usage no-device      'fabric "three-processors" has no device "P9"' "${W[@]}" --preempt P9@1
usage no-at          "expected DEVICE@T[:WARNING]" "${W[@]}" --preempt P3
usage empty-time     "expected DEVICE@T[:WARNING]" "${W[@]}" --preempt P3@
usage bad-time       "'-1'" "${W[@]}" --preempt P3@-1
usage bad-time2      "'1x'" "${W[@]}" --preempt P3@1x
usage bad-warning    "'0'" "${W[@]}" --preempt P3@1:0
usage not-dynamic    "--preempt needs --strategy dynamic" --workload "$SRC/workloads/topcuoglu-2002.json" --fabric three-processors --preempt P3@1
usage repl-alone     "need --preempt" "${W[@]}" --replacement 2
usage ckpt-alone     "need --preempt" "${W[@]}" --checkpoint 2
usage bad-repl       "--replacement 'abc'" "${W[@]}" --preempt P3@1 --replacement abc
usage zero-repl      "--replacement '0'" "${W[@]}" --preempt P3@1 --replacement 0
usage both-ckpt      "one or the other" "${W[@]}" --preempt P3@1 --checkpoint 1 --checkpoint-gbps 1
usage bad-ckpt       "'-2'" "${W[@]}" --preempt P3@1 --checkpoint -2
usage bad-gbps       "'0'" "${W[@]}" --preempt P3@1 --checkpoint-gbps 0
usage missing        "missing value '--preempt'" "${W[@]}" --preempt

echo "preempt: $pass passed, $fail failed"
[ "$fail" = 0 ]
