#!/usr/bin/env bash
# synor registry: inventory files, every filter, bad input.
# usage: registry.sh SYNOR_BIN SOURCE_DIR JSON_CHECK_BIN
S=$1; SRC=$2; JC=$3
INV=$SRC/examples/inventory.json
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { local name=$1; shift; if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name"; fi; }
rc() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }
count() { grep -E "^[0-9]+ of [0-9]+ registered devices match" "$tmp/out" | cut -d' ' -f1; }

check all        [ "$(rc "$S" registry --inventory "$INV")" = 0 ]
check all-count  [ "$(count)" = 83 ]
check kind       [ "$(rc "$S" registry --inventory "$INV" --kind lpu)" = 0 ]
check kind-n     [ "$(count)" = 64 ]
check op-mem     [ "$(rc "$S" registry --inventory "$INV" --op matmul:bf16 --min-memory 40GiB --status online,busy)" = 0 ]
check op-mem-n   [ "$(count)" = 14 ]
check tflops     [ "$(rc "$S" registry --inventory "$INV" --min-tflops fp16:1000 --region eu-west)" = 0 ]
check tflops-n   [ "$(count)" = 1 ]
check tflops-id  grep -q "old-mi300x" "$tmp/out"
check owner      [ "$(rc "$S" registry --inventory "$INV" --owner alice)" = 0 ]
check owner-n    [ "$(count)" = 1 ]
check rep-util   [ "$(rc "$S" registry --inventory "$INV" --min-reputation 90 --max-utilization 0.5)" = 0 ]
check rep-util-n [ "$(count)" = 4 ]
# at 03:00 UTC on an idle host that is not charging: the 4090 (utc:22-7) and the
# FPGA (idle) are in; the charging-only phone and laptop are out
check avail      [ "$(rc "$S" registry --inventory "$INV" --available-at 3,idle)" = 0 ]
check avail-n    [ "$(count)" = 81 ]
check avail2     [ "$(rc "$S" registry --inventory "$INV" --available-at 12,charging:50)" = 0 ]
check avail2-n   [ "$(count)" = 80 ]
check sim-only   [ "$(rc "$S" registry --inventory "$INV" --real)" = 0 ]
check sim-only-n [ "$(count)" = 0 ]
check json       [ "$(rc "$S" registry --inventory "$INV" --json --kind tpu)" = 0 ]
check json-ok    "$JC" format synor-registry/1 <"$tmp/out"
check local      [ "$(rc "$S" registry --local --real)" = 0 ]
check local-cpu  grep -q "local-cpu0" "$tmp/out"

check no-source  [ "$(rc "$S" registry)" = 2 ]
check bad-kind   [ "$(rc "$S" registry --inventory "$INV" --kind qpu)" = 2 ]
check bad-op     [ "$(rc "$S" registry --inventory "$INV" --op matmul:fp7)" = 2 ]
check bad-avail  [ "$(rc "$S" registry --inventory "$INV" --available-at 25)" = 2 ]
printf '{"format": "synor-inventory/1",\n "devices": [{"id": "a", "profile": "groq-lpu", "count": -2}]}\n' >"$tmp/bad.json"
check bad-file   [ "$(rc "$S" registry --inventory "$tmp/bad.json")" = 1 ]
check bad-pos    grep -q "bad.json:2:58: devices\[0\].count: value -2 is outside \[1, 100000\]" "$tmp/err"
# two files that collide: the second is refused as a whole
check dup        [ "$(rc "$S" registry --inventory "$INV" --inventory "$INV")" = 1 ]
check dup-msg    grep -q 'already registered' "$tmp/err"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
