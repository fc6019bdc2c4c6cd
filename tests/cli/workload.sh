#!/usr/bin/env bash
# synor workload: checking files, generating presets, JSON round trip, errors
# with file:line:column and field.
# usage: workload.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

for f in "$SRC"/workloads/*.json; do
  check "file-$(basename "$f")" [ "$(rc "$S" workload "$f")" = 0 ]
done
check preset        [ "$(rc "$S" workload --preset llama-2-7b --prompt 128 --new 4)" = 0 ]
check preset-line   grep -q "^Llama-2-7B inference: 142 tasks" "$tmp/out"
check train         [ "$(rc "$S" workload --preset tiny --train --prompt 64)" = 0 ]
check train-bwd     grep -q "d/feed_forward" "$tmp/out"
check json          [ "$(rc "$S" workload --preset tiny --prompt 16 --new 2 --json)" = 0 ]
check json-ok       "$JC" format synor-workload/1 <"$tmp/out"
cp "$tmp/out" "$tmp/w.json"
check reload        [ "$(rc "$S" workload "$tmp/w.json" --json)" = 0 ]
check round-trip    cmp -s "$tmp/out" "$tmp/w.json"

printf '{"format": "synor-workload/1", "tasks": [\n {"id": "a", "op": "relu", "dims": {"elements": 4}, "deps": ["b"]},\n {"id": "b", "op": "relu", "dims": {"elements": 4}, "deps": ["a"]}]}\n' >"$tmp/cycle.json"
check cycle         [ "$(rc "$S" workload "$tmp/cycle.json")" = 1 ]
check cycle-msg     grep -q "cycle.json:2:61: tasks\[0\].deps: dependency cycle: a -> b -> a" "$tmp/err"
printf '{"format": "synor-workload/1", "tasks": [{"id": "a", "op": "matmul", "dims": {"m": 2, "n": 0, "k": 2}}]}' >"$tmp/shape.json"
check shape         [ "$(rc "$S" workload "$tmp/shape.json")" = 1 ]
check shape-msg     grep -q "shape.json:1:92: tasks\[0\].dims.n: value 0 is outside" "$tmp/err"
check usage         [ "$(rc "$S" workload)" = 2 ]
check usage2        [ "$(rc "$S" workload --fabric seed --preset tiny)" = 2 ]
check missing       [ "$(rc "$S" workload "$tmp/none.json")" = 1 ]

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
